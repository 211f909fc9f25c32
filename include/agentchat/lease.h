/*
 * lease.h - task leases (docs/format.md 2.4 "Leases", 3.6).
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
 * audit message (lease.transaction.recovered / .cleaned). If a step fails
 * before the audit message is out, the mutation is rolled back in-process
 * (TASK_AUDIT_FAILED when the audit post failed, the Python tool's code;
 * LEASE_AUDIT_FAILED when a file of the change could not be written;
 * LEASE_AUDIT_ROLLBACK_FAILED when the rollback fails too). The order of
 * every check, and the journal variants recover-pending resolves (legacy
 * version-1 markers without a transaction id or task_after included), are
 * the Python tool's: docs/tasks.md.
 *
 * Calling sequence: inside a deferred board (board.h), through the tasks
 * module (tasks.h), which also sweeps the debris afterwards:
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
    AC_LEASE_BLOCK,          /* a task update (tasks.h), not a lease operation */
    AC_LEASE_RECOVER
};

/* Run one lease operation by `actor` (not AC_LEASE_BLOCK). `seconds` is
 * the lease duration (claim, renew, recover), `reason` the recovery
 * reason. The new task record (new reference) in *out. */
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

/* recover-pending; resolve is NULL, "rollback" or "published". */
int ac_lease_recover_pending(struct ac_board *b, const char *actor, const char *resolve,
                             struct ac_err *err);

/* The fencing generation of task `id`'s lease: the store's version of its
 * claim record when it was created (store.h, ac_record.created; etcd: the
 * revision that granted the lease), which a renewal keeps and a new holder
 * changes. 0 with *gen 0 when the task holds no lease or the store keeps no
 * versions (the folder); -1 with err when the claims cannot be read. */
int ac_lease_generation(struct ac_chan *ch, const char *id, uint64_t *gen, struct ac_err *err);

/* LEASE_FENCED unless the lease of task `id` has generation `fence` (the
 * holder's token: docs/etcd.md). Call with the board's mutex held. */
int ac_lease_fence(struct ac_chan *ch, const char *id, uint64_t fence, struct ac_err *err);

/* LEASE_TRANSACTION_PENDING (or _INVALID, the message recover-pending
 * would give for a journal it cannot read) when a lease batch is pending,
 * else 0. */
int ac_lease_journal_guard(struct ac_board *b, struct ac_err *err);

#endif
