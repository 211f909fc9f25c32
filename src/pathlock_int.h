/*
 * pathlock_int.h - internals shared by pathlock.c (records, operations) and
 * pathlock_journal.c (the journal and its recovery). Not a public header.
 */
#ifndef AGENTCHAT_PATHLOCK_INT_H
#define AGENTCHAT_PATHLOCK_INT_H

#include <stddef.h>

#include "agentchat/err.h"
#include "agentchat/pathlock.h"
#include "agentchat/store.h"

#define PL_EXIT AC_EXIT_GENERAL

/* Fill err with a PATH_LOCK_<code> error (exit 1); returns -1. */
int ac_pl_err(struct ac_err *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A parsed, usable journal. `before`/`after` are the decoded bytes (NULL
 * for JSON null, which means "no file"). */
struct ac_pl_journal {
    char txid[128];
    char phase[16];         /* prepared | applied | published */
    char operation[16];     /* lock | unlock | recover */
    char event[32];
    char target[256];       /* "<id>.json", without a "locks/" prefix */
    char *actor;
    char *before, *after;
    size_t before_len, after_len;
};

void ac_pl_journal_free(struct ac_pl_journal *j);

/* Read the journal of the locks directory ldfd (-1: no directory).
 * Returns 1 (usable, *j filled), 0 (none), or -1 with
 * PATH_LOCK_TRANSACTION_INVALID (or an I/O error). */
int ac_pl_journal_read(int ldfd, struct ac_pl_journal *j, struct ac_err *err);

/* Write the journal with `phase`. `create`: publish with link() (fails if
 * a journal exists); otherwise rename over it. `fault_tag` names the fault
 * points ("pathlock.journal.prepared" ...). errno is meaningful on -1. */
int ac_pl_journal_write(int ldfd, const struct ac_pl_journal *j, const char *phase,
                        int create, const char *fault_tag);

/* Remove the journal and sync the directory. errno is meaningful on -1. */
int ac_pl_journal_remove(int ldfd);

/* Restore `before` (delete the target when it is NULL). errno on -1. */
int ac_pl_restore_before(int ldfd, const struct ac_pl_journal *j);

/* Does the target file hold exactly `after` (absent when NULL)?
 * Returns 1, 0, or -1 with errno. */
int ac_pl_matches_after(int ldfd, const struct ac_pl_journal *j);

/* Resolve a journal (recover-pending and the in-process recovery after a
 * failed audit post): see pathlock.h for the decision table. The journal
 * is removed on success. */
int ac_pl_journal_resolve(struct ac_chan *ch, int ldfd, const struct ac_pl_journal *j,
                          enum ac_pathlock_resolve resolve,
                          enum ac_pathlock_outcome *outcome, struct ac_err *err);

#endif
