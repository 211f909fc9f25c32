/*
 * lease.h - task leases and the lease journal (docs/format.md 2.4 "Leases", 3.6).
 *
 * A lease is the claim file claims/<task>.<owner>.json plus the task
 * record's owner and lease_expires_at, which must agree. Every lease
 * mutation (claim, renew, release, done, recover, and the release/done
 * fallbacks on a task without a lease) changes the task record and the
 * claim files through one journal, claims/.lease-transaction.json
 * (version 2, pretty JSON with sorted keys):
 *
 *   1. write the journal, phase "prepared" (task_before / task_after and
 *      each claim file's previous / next bytes, base64; null = absent);
 *   2. write the task record, then create (O_EXCL, via link()), replace or
 *      unlink the claim files;
 *   3. set the phase to "applied";
 *   4. post the audit message, whose body carries the transaction_id;
 *   5. set the phase to "published";
 *   6. delete the journal.
 *
 * A crash anywhere leaves the old state (before 2), the new state (after
 * 6), or a journal. While a journal exists every lease operation and task
 * update fails with LEASE_TRANSACTION_PENDING until `recover-pending`
 * rolls it back (prepared; applied whose audit message is not found) or
 * verifies and removes it (published; applied whose audit message exists,
 * found by scanning every message file for "transaction_id": "<id>").
 * If the audit post itself fails, the mutation is rolled back in-process
 * (TASK_AUDIT_FAILED, the Python tool's code; LEASE_AUDIT_FAILED when a
 * file of the change could not be written; LEASE_AUDIT_ROLLBACK_FAILED
 * when the rollback fails too). The order of every check, and the journal
 * variants recover-pending resolves (legacy version-1 markers without a
 * transaction id or task_after included), are the Python tool's:
 * docs/tasks.md.
 *
 * Every durable step is a fault point (lease.journal.*, lease.task.*,
 * lease.claim.*, lease.audit, ...) for the crash tests.
 */
#ifndef AGENTCHAT_LEASE_H
#define AGENTCHAT_LEASE_H

#include <jansson.h>

#include "agentchat/board.h"

#define AC_LEASE_JOURNAL ".lease-transaction.json"

enum ac_lease_op {
    AC_LEASE_CLAIM,
    AC_LEASE_RENEW,
    AC_LEASE_RELEASE,
    AC_LEASE_DONE,
    AC_LEASE_BLOCK,
    AC_LEASE_RECOVER
};

/* Run one lease operation by `actor`. `seconds` is the lease duration
 * (claim, renew, recover), `reason` the recovery reason. The new task
 * record (new reference) in *out. */
int ac_lease_apply(struct ac_board *b, enum ac_lease_op op, const char *id, const char *actor,
                   double seconds, const char *reason, json_t **out, struct ac_err *err);

/* The lease rules of a task update (the Python tool's
 * _assert_lease_update_allowed) for record `cur` changed by `actor`: the
 * journal gate, every claim record, then, when the task is leased, an
 * expired lease (LEASE_RECOVERY_REQUIRED), another holder
 * (LEASE_OWNER_MISMATCH), and any owner flag or status change
 * (LEASE_MUTATION_REQUIRED). */
int ac_lease_update_gate(struct ac_board *b, const json_t *cur, const char *actor, int owner_given,
                         const char *status, struct ac_err *err);

/* A recovery reason: LEASE_INVALID_REASON "recovery reason must not be
 * empty" (blank after str.strip()) or "... contains a forbidden control
 * character" (CR or LF; tab and DEL are text). */
int ac_lease_reason_check(const char *reason, struct ac_err *err);

/* recover-pending; resolve is NULL, "rollback" or "published". */
int ac_lease_recover_pending(struct ac_board *b, const char *actor, const char *resolve,
                             struct ac_err *err);

/* LEASE_TRANSACTION_PENDING (or _INVALID) when a journal exists, else 0. */
int ac_lease_journal_guard(struct ac_board *b, struct ac_err *err);

/* What a pending journal is about (for fsck, which only reports it). */
struct ac_lease_pending {
    char phase[16];
    char task_id[256];
    char event[64];
};

/* Read the journal without acting on it: 1 and *out filled when a usable
 * journal exists, 0 when there is none, -1 with LEASE_TRANSACTION_INVALID
 * (the message recover-pending would give) for one it cannot use. */
int ac_lease_journal_peek(struct ac_board *b, struct ac_lease_pending *out, struct ac_err *err);

/* The claim of task `id`: *claim (new reference) and *claim_file (malloc'ed)
 * or both NULL; *expired when its lease_expires_at has passed. */
int ac_lease_state(struct ac_board *b, const char *id, json_t **claim, char **claim_file,
                   int *expired, struct ac_err *err);

#endif
