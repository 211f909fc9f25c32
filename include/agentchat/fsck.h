/*
 * fsck.h - check (and safely repair) the on-disk state of one channel.
 *
 * `agent-chat fsck` reads every file of docs/format.md section 3 plus our own
 * additions (.seqhigh, .seqres-N reservations, the atomic writer's temp
 * files) and reports what breaks an invariant, one finding per problem:
 *
 *   messages     every message file is a readable regular file of valid
 *                UTF-8 with a closed frontmatter whose `seq:` equals the seq
 *                of its name; no seq is used by two files
 *   .seqhigh     at least the highest seq on disk (posts never reuse a seq)
 *   cursors      a decimal seq, not beyond the highest seq ever allocated
 *   tasks        every record valid (taskrec.c), the dependency graph too
 *   claims       agree with their tasks (docs/format.md 3.6: one claim per leased
 *                task, same owner and expiry, the task in_progress, no
 *                claim without its task)
 *   locks        every record valid (pathlock.c), no two locks overlap
 *   journals     no lease or path-lock journal is pending
 *   debris       no temp file or seq reservation older than a minute, no
 *                stale _seq.lock (older than 30 s)
 *
 * Every finding has a class, which tells a caller (an operator, or a crash
 * test) what resolves it:
 *   AC_FSCK_PENDING     an interrupted mutation: `recover-pending` resolves it
 *   AC_FSCK_REPAIRABLE  debris: `fsck --repair` resolves it safely
 *   AC_FSCK_CORRUPT     needs a human (the message says what is wrong)
 *   AC_FSCK_BUSY        a mutation lock stayed held for 10 s: part of the
 *                       channel was not checked; run fsck again
 * While a lease journal is pending, the task it names is not compared with
 * its claims: the journal explains any difference, and recovery settles it.
 *
 * Without AC_FSCK_REPAIR nothing is written: no lock file is created (the
 * flock of an existing one is taken, so a live mutation is never seen half
 * done) and no cache is refreshed. With it, and only for the repairable
 * class: old temps and reservations are removed, .seqhigh is raised to the
 * highest seq on disk (under _seq.lock, atomically) and a stale _seq.lock is
 * removed as any poster would. Each repaired finding says what was done.
 *
 * Calling sequence:
 *     struct ac_fsck_report r = {0};
 *     if (ac_fsck_channel(chfd, "dev", AC_FSCK_REPAIR, &r, &err) == -1) fail;
 *     for (i = 0; i < r.n; i++) ... r.v[i].code, r.v[i].message ...
 *     ac_fsck_report_free(&r);
 *
 * Error handling: -1 with *err only when the check itself cannot run (out
 * of memory); everything wrong with the folder is a finding.
 */
#ifndef AGENTCHAT_FSCK_H
#define AGENTCHAT_FSCK_H

#include <stddef.h>

#include "agentchat/err.h"

enum ac_fsck_class {
    AC_FSCK_CORRUPT = 0,
    AC_FSCK_PENDING,
    AC_FSCK_REPAIRABLE,
    AC_FSCK_BUSY
};

/* Temps and reservations younger than this may belong to a live writer. */
#define AC_FSCK_DEBRIS_AGE 60

enum {
    AC_FSCK_REPAIR = 1
};

struct ac_finding {
    const char *code;       /* FSCK_* (static) */
    int klass;              /* enum ac_fsck_class */
    char *path;             /* relative to the channel ("" for the channel) */
    char *message;          /* one line: "<path>: what is wrong[; run: ...]" */
    char *repaired;         /* NULL, or what --repair did ("removed") */
};

struct ac_fsck_report {
    struct ac_finding *v;
    size_t n, cap;
};

/* Check the channel directory chfd, named `channel` (for the messages and
 * the commands they suggest); append the findings to *r. */
int ac_fsck_channel(int chfd, const char *channel, int flags, struct ac_fsck_report *r,
                    struct ac_err *err);

void ac_fsck_report_free(struct ac_fsck_report *r);

/* The i-th code of the table (NULL past the end) and its class. */
const char *ac_fsck_code(size_t i, int *klass);

/* "corrupt", "pending", "repairable" or "busy". */
const char *ac_fsck_class_name(int klass);

#endif
