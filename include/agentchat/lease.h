/*
 * lease.h - task leases (SPEC.md 2.4 "Leases", 3.6).
 *
 * A lease is the claim record claims/<task>.<owner>.json (claimrec.h) plus
 * the task record's owner and lease_expires_at, which must agree. Every
 * lease mutation (claim, renew, release, done, recover, and the release and
 * done fallbacks on a task without a lease) changes the task record and
 * the claim records in one batch of the store (store.h, AC_BATCH_LEASE):
 * the records and the audit message, whose body carries the transaction
 * id, all or nothing. On the folder the batch is the lease journal
 * claims/.lease-transaction.json (src/fs/journal.c):
 *
 *   1. the journal, phase "prepared" (task_before / task_after and each
 *      claim file's previous / next bytes, base64; null = absent);
 *   2. the task record, then the claim files;
 *   3. phase "applied";
 *   4. the audit message (fault point lease.audit before it);
 *   5. phase "published";
 *   6. the journal removed.
 *
 * A crash anywhere leaves the old state, the new state, or a pending
 * batch. While one is pending every lease operation and task update fails
 * with LEASE_TRANSACTION_PENDING until `recover-pending` rolls it back
 * (prepared; applied whose audit message is not found) or verifies and
 * removes it (published; applied whose audit message exists, found by
 * scanning every message for "transaction_id": "<id>"), and posts its own
 * audit message (lease.transaction.recovered / .cleaned). If the audit post
 * itself fails, the mutation is rolled back in-process (LEASE_AUDIT_FAILED,
 * or LEASE_AUDIT_ROLLBACK_FAILED).
 *
 * Calling sequence: inside an open board (board.h), usually through the
 * tasks module (tasks.h), which also sweeps the debris afterwards:
 *     rc = ac_lease_apply(&b, AC_LEASE_CLAIM, "t1", "alice", 300, NULL, &rec, &err);
 *
 * Error handling: -1 with err (LEASE_* and TASK_*, exit 2).
 */
#ifndef AGENTCHAT_LEASE_H
#define AGENTCHAT_LEASE_H

#include <jansson.h>

#include "agentchat/board.h"

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

/* recover-pending; resolve is NULL, "rollback" or "published". */
int ac_lease_recover_pending(struct ac_board *b, const char *actor, const char *resolve,
                             struct ac_err *err);

/* LEASE_TRANSACTION_PENDING (or _INVALID) when a lease batch is pending,
 * else 0. */
int ac_lease_journal_guard(struct ac_board *b, struct ac_err *err);

/* The record of task `id` (borrowed) for a change: NULL with
 * LEASE_TRANSACTION_PENDING while a lease batch is pending, or with the
 * errors of ac_board_get. */
json_t *ac_lease_target(struct ac_board *b, const char *id, struct ac_err *err);

/* The claim of task `id`: *claim (new reference) and *claim_name (its
 * record name, malloc'ed) or both NULL; *expired when its lease_expires_at
 * has passed. */
int ac_lease_state(struct ac_board *b, const char *id, json_t **claim, char **claim_name,
                   int *expired, struct ac_err *err);

#endif
