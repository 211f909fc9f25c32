/*
 * tasks.h - the task commands (docs/format.md 2.4): one call each, the top of the
 * task layers (taskrec.h -> board.h -> lease.h -> here).
 *
 * Each call opens the channel's board (its mutex held; the command reads
 * one record, every record or none, in the Python tool's order: board.h),
 * runs the command, sweeps the debris a crash of an earlier writer left
 * (only after a success: a refused command changes nothing) and closes the
 * board. The bindings and any other caller
 * use these; nothing else has to remember the sweep.
 *
 * Calling sequence:
 *     json_t *rec;
 *     if (ac_tasks_lease(ch, AC_LEASE_CLAIM, "t1", "alice", 300, NULL, &rec, &err) == -1)
 *         report(err.code, err.msg);                   // TASK_*, LEASE_*: exit 2
 *     ... rec ...
 *     json_decref(rec);
 *
 * Error handling: -1 with err (TASK_* and LEASE_*, exit 2; INTERRUPTED).
 */
#ifndef AGENTCHAT_TASKS_H
#define AGENTCHAT_TASKS_H

#include <jansson.h>

#include "agentchat/err.h"
#include "agentchat/lease.h"
#include "agentchat/store.h"

struct ac_task_spec {
    const char *id;
    const char *created_by;
    const char *title;
    const char *owner;           /* NULL or "" for none */
    json_t *depends_on;          /* arrays of strings (borrowed) */
    json_t *files_hint;
    json_t *acceptance;
    const char *branch;          /* NULL for none ("" is an error) */
};

/* task create: the new record, validated first, then TASK_ALREADY_EXISTS
 * when a record of the id exists, then every record and the graph with it
 * added. The new record (new reference) in *out. */
int ac_tasks_create(struct ac_chan *ch, const struct ac_task_spec *spec, json_t **out,
                    struct ac_err *err);

struct ac_task_change {
    const char *title;           /* NULL: unchanged */
    const char *owner;           /* NULL: unchanged ("" is an error) */
    int clear_owner;
    json_t *depends_on;          /* NULL: unchanged */
    json_t *files_hint;
    json_t *acceptance;
    const char *branch;
    int clear_branch;
    const char *status;
};

/* task update by `actor`, in the Python tool's order: TASK_INVALID_UPDATE
 * without a change, the id, that record alone, the lease rules
 * (ac_lease_update_gate: any owner flag counts as an owner change), then
 * the candidate (ac_board_candidate). The new record (new reference) in
 * *out. */
int ac_tasks_update(struct ac_chan *ch, const char *id, const char *actor,
                    const struct ac_task_change *chg, json_t **out, struct ac_err *err);

/* claim, renew, release, done, recover (lease.h), and block (a task update
 * to status blocked, as the Python tool's): the new record. `fence` (0:
 * none) is the generation the actor's lease must have (renew, release,
 * done: ac_lease_fence, checked first under the board's lock). */
int ac_tasks_lease(struct ac_chan *ch, enum ac_lease_op op, const char *id, const char *actor,
                   double seconds, const char *reason, uint64_t fence, json_t **out,
                   struct ac_err *err);

/* recover-pending (lease.h); resolve is NULL, "rollback" or "published". */
int ac_tasks_recover_pending(struct ac_chan *ch, const char *actor, const char *resolve,
                             struct ac_err *err);

#endif
