/*
 * tasks.c - the task commands; see include/agentchat/tasks.h.
 *
 * create and update are here (the board has no lease knowledge; an update
 * must respect a lease), the lease operations are lease.c's. Every command
 * runs in its own open board and sweeps after a success.
 */
#include "agentchat/tasks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/board.h"
#include "agentchat/pystr.h"
#include "agentchat/taskrec.h"

/* ---- create ---- */

static json_t *string_or_null(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

static int create(struct ac_board *b, const struct ac_task_spec *spec, json_t **out,
                  struct ac_err *err)
{
    json_t *rec;
    char now[48];

    if (!ac_safe_name(spec->id))
        return ac_task_err(err, "TASK_INVALID_ID",
                           "id must contain only letters, digits, '.', '_' or '-'");
    if (strlen(spec->id) > AC_TASK_ID_MAX)
        return ac_task_err(err, "TASK_INVALID_ID", "id must be at most %d characters", AC_TASK_ID_MAX);
    if (json_object_get(b->tasks, spec->id))
        return ac_task_err(err, "TASK_ALREADY_EXISTS", "task record already exists: %s", spec->id);
    ac_board_now(now, 0);
    rec = json_object();
    json_object_set_new(rec, "id", json_string(spec->id));
    json_object_set_new(rec, "channel", json_string(b->channel));
    json_object_set_new(rec, "title", json_string(spec->title));
    json_object_set_new(rec, "status", json_string("open"));
    json_object_set_new(rec, "owner", string_or_null(spec->owner));
    json_object_set_new(rec, "created_by", json_string(spec->created_by));
    json_object_set(rec, "depends_on", spec->depends_on);
    json_object_set(rec, "files_hint", spec->files_hint);
    json_object_set(rec, "acceptance", spec->acceptance);
    json_object_set_new(rec, "lease_expires_at", json_null());
    json_object_set_new(rec, "branch", spec->branch ? json_string(spec->branch) : json_null());
    json_object_set_new(rec, "updated_at", json_string(now));
    if (json_object_size(rec) != 12 || !json_object_get(rec, "title") ||
        !json_object_get(rec, "created_by")) {
        json_decref(rec);
        return ac_task_err(err, "TASK_INVALID_RECORD", "task fields must be valid UTF-8 text");
    }
    if (ac_board_check_candidate(b, rec, err) == -1 ||
        ac_board_commit_plain(b, NULL, rec, spec->created_by, "task.created", err) == -1) {
        json_decref(rec);
        return -1;
    }
    *out = rec;
    return 0;
}

/* ---- update ---- */

static int update(struct ac_board *b, const char *id, const char *actor,
                  const struct ac_task_change *chg, json_t **out, struct ac_err *err)
{
    json_t *cur, *rec, *claim = NULL;
    char *claim_name = NULL, now[48];
    const char *status;
    int expired = 0, rc;

    if (!chg->title && !chg->owner && !chg->clear_owner && !chg->depends_on && !chg->files_hint &&
        !chg->acceptance && !chg->branch && !chg->clear_branch && !chg->status)
        return ac_task_err(err, "TASK_INVALID_UPDATE", "task update requires at least one field");
    if (!(cur = ac_lease_target(b, id, err)))
        return -1;
    if (chg->status && !ac_task_status_valid(chg->status)) {
        char shown[300];
        return ac_task_err(err, "TASK_INVALID_STATUS", "unknown task status: %s",
                           ac_py_repr(chg->status, shown, sizeof shown));
    }
    if (ac_lease_state(b, id, &claim, &claim_name, &expired, err) == -1)
        return -1;
    if (claim) {
        const char *holder = ac_task_str(claim, "owner");
        int owner_change = chg->clear_owner ||
                           (chg->owner && strcmp(chg->owner[0] ? chg->owner : "", holder) != 0);
        rc = 0;
        if (expired)
            rc = ac_task_err(err, "LEASE_RECOVERY_REQUIRED",
                             "expired lease for task %s requires explicit recovery", id);
        else if (strcmp(actor, holder) != 0)
            rc = ac_task_err(err, "LEASE_OWNER_MISMATCH", "lease for task %s belongs to %s", id, holder);
        else if ((chg->status && strcmp(chg->status, ac_task_str(cur, "status")) != 0) || owner_change)
            rc = ac_task_err(err, "LEASE_MUTATION_REQUIRED",
                             "task %s must be changed through its lease operation", id);
        json_decref(claim);
        free(claim_name);
        if (rc == -1)
            return -1;
    }
    rec = json_deep_copy(cur);
    if (!rec)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not update the task");
    if (chg->title)
        json_object_set_new(rec, "title", json_string(chg->title));
    if (chg->clear_owner)
        json_object_set_new(rec, "owner", json_null());
    else if (chg->owner)
        json_object_set_new(rec, "owner", string_or_null(chg->owner));
    if (chg->depends_on)
        json_object_set(rec, "depends_on", chg->depends_on);
    if (chg->files_hint)
        json_object_set(rec, "files_hint", chg->files_hint);
    if (chg->acceptance)
        json_object_set(rec, "acceptance", chg->acceptance);
    if (chg->clear_branch)
        json_object_set_new(rec, "branch", json_null());
    else if (chg->branch)
        json_object_set_new(rec, "branch", json_string(chg->branch));
    status = ac_task_str(cur, "status");
    if (chg->status) {
        if (!ac_task_transition_ok(status, chg->status)) {
            json_decref(rec);
            return ac_task_transition_error(status, chg->status, err);
        }
        json_object_set_new(rec, "status", json_string(chg->status));
        if (strcmp(status, chg->status) != 0 &&
            (!strcmp(chg->status, "in_progress") || !strcmp(chg->status, "done")) &&
            ac_board_deps_ready(b, rec, err) == -1) {
            json_decref(rec);
            return -1;
        }
    }
    ac_board_now(now, 0);
    json_object_set_new(rec, "updated_at", json_string(now));
    if (ac_board_check_candidate(b, rec, err) == -1 ||
        ac_board_commit_plain(b, cur, rec, actor, "task.updated", err) == -1) {
        json_decref(rec);
        return -1;
    }
    *out = rec;
    return 0;
}

/* ---- the commands ---- */

int ac_tasks_create(struct ac_chan *ch, const struct ac_task_spec *spec, json_t **out,
                    struct ac_err *err)
{
    struct ac_board b;
    int rc;
    if (ac_board_open(ch, AC_BOARD_WRITE, &b, err) == -1)
        return -1;
    rc = create(&b, spec, out, err);
    if (rc == 0)
        ac_board_sweep(&b);
    ac_board_close(&b);
    return rc;
}

int ac_tasks_update(struct ac_chan *ch, const char *id, const char *actor,
                    const struct ac_task_change *chg, json_t **out, struct ac_err *err)
{
    struct ac_board b;
    int rc;
    if (ac_board_open(ch, AC_BOARD_WRITE, &b, err) == -1)
        return -1;
    rc = update(&b, id, actor, chg, out, err);
    if (rc == 0)
        ac_board_sweep(&b);
    ac_board_close(&b);
    return rc;
}

int ac_tasks_lease(struct ac_chan *ch, enum ac_lease_op op, const char *id, const char *actor,
                   double seconds, const char *reason, json_t **out, struct ac_err *err)
{
    struct ac_board b;
    int rc;
    if (ac_board_open(ch, AC_BOARD_WRITE, &b, err) == -1)
        return -1;
    rc = ac_lease_apply(&b, op, id, actor, seconds, reason, out, err);
    if (rc == 0)
        ac_board_sweep(&b);
    ac_board_close(&b);
    return rc;
}

int ac_tasks_recover_pending(struct ac_chan *ch, const char *actor, const char *resolve,
                             struct ac_err *err)
{
    struct ac_board b;
    int rc;
    if (ac_board_open(ch, AC_BOARD_WRITE, &b, err) == -1)
        return -1;
    rc = ac_lease_recover_pending(&b, actor, resolve, err);     /* sweeps itself */
    ac_board_close(&b);
    return rc;
}
