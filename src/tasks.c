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
#include "agentchat/lease.h"
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
    struct ac_record r;
    int exists;

    ac_board_now(now, 0);
    rec = json_object();
    if (!rec || json_object_set_new(rec, "id", json_string(spec->id)) == -1 ||
        json_object_set_new(rec, "channel", json_string(b->channel)) == -1 ||
        json_object_set_new(rec, "title", json_string(spec->title)) == -1 ||
        json_object_set_new(rec, "status", json_string("open")) == -1 ||
        json_object_set_new(rec, "owner", string_or_null(spec->owner)) == -1 ||
        json_object_set_new(rec, "created_by", json_string(spec->created_by)) == -1 ||
        json_object_set(rec, "depends_on", spec->depends_on) == -1 ||
        json_object_set(rec, "files_hint", spec->files_hint) == -1 ||
        json_object_set(rec, "acceptance", spec->acceptance) == -1 ||
        json_object_set_new(rec, "lease_expires_at", json_null()) == -1 ||
        json_object_set_new(rec, "branch", spec->branch ? json_string(spec->branch) : json_null()) == -1 ||
        json_object_set_new(rec, "updated_at", json_string(now)) == -1) {
        json_decref(rec);
        return ac_task_err(err, "TASK_INVALID_RECORD", "task fields must be valid UTF-8 text");
    }
    /* The Python tool's order: the new record, then whether one exists,
     * then every record and the graph with the new one added. */
    if (ac_task_validate(rec, NULL, b->channel, b->ch, err) == -1)
        goto fail;
    if (strlen(spec->id) > AC_TASK_ID_MAX) {
        ac_task_err(err, "TASK_INVALID_ID", "id must be at most %d characters", AC_TASK_ID_MAX);
        goto fail;
    }
    exists = ac_chan_rec_read(b->ch, AC_TASKS, spec->id, &r, NULL) == 0 ||
             (r.sys_errno != ENOENT && r.sys_errno != ENAMETOOLONG);
    ac_record_free(&r);
    if (exists) {
        ac_task_err(err, "TASK_ALREADY_EXISTS", "task record already exists: %s", spec->id);
        goto fail;
    }
    if (ac_board_load(b, 0, err) == -1 || ac_board_graph_with(b, rec, err) == -1 ||
        ac_board_commit_plain(b, NULL, rec, spec->created_by, "task.created", err) == -1)
        goto fail;
    *out = rec;
    return 0;
fail:
    json_decref(rec);
    return -1;
}

/* ---- update ---- */

static int update(struct ac_board *b, const char *id, const char *actor,
                  const struct ac_task_change *chg, json_t **out, struct ac_err *err)
{
    json_t *cur = NULL, *rec = NULL;
    char now[48];
    int owner_given, rc = -1;

    if (!chg->title && !chg->owner && !chg->clear_owner && !chg->depends_on && !chg->files_hint &&
        !chg->acceptance && !chg->branch && !chg->clear_branch && !chg->status)
        return ac_task_err(err, "TASK_INVALID_UPDATE", "task update requires at least one field");
    /* The Python tool's TaskStore.update(): this record alone, the lease
     * rules, the changed record, then every record and the graph. */
    if (!ac_task_id_findable(id))
        return ac_task_unsafe_id(id, err);
    if (ac_board_read_one(b, id, &cur, err) == -1)
        return -1;
    owner_given = chg->owner || chg->clear_owner;
    if (ac_lease_update_gate(b, cur, actor, owner_given, chg->status, err) == -1)
        goto out;
    if (!(rec = json_deep_copy(cur))) {
        ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not update the task");
        goto out;
    }
    ac_board_now(now, 0);
    if ((chg->title && json_object_set_new(rec, "title", json_string(chg->title)) == -1) ||
        (chg->clear_owner ? json_object_set_new(rec, "owner", json_null())
                          : chg->owner && json_object_set_new(rec, "owner", json_string(chg->owner))) ||
        (chg->depends_on && json_object_set(rec, "depends_on", chg->depends_on) == -1) ||
        (chg->files_hint && json_object_set(rec, "files_hint", chg->files_hint) == -1) ||
        (chg->acceptance && json_object_set(rec, "acceptance", chg->acceptance) == -1) ||
        (chg->clear_branch ? json_object_set_new(rec, "branch", json_null())
                           : chg->branch && json_object_set_new(rec, "branch", json_string(chg->branch))) ||
        (chg->status && json_object_set_new(rec, "status", json_string(chg->status)) == -1) ||
        json_object_set_new(rec, "updated_at", json_string(now)) == -1) {
        ac_task_err(err, "TASK_INVALID_RECORD", "task fields must be valid UTF-8 text");
        goto out;
    }
    if (ac_board_candidate(b, cur, rec, 1, err) == -1 ||
        ac_board_commit_plain(b, cur, rec, actor, "task.updated", err) == -1)
        goto out;
    *out = rec;
    rec = NULL;
    rc = 0;
out:
    json_decref(cur);
    json_decref(rec);
    return rc;
}

/* ---- the commands ---- */

int ac_tasks_create(struct ac_chan *ch, const struct ac_task_spec *spec, json_t **out,
                    struct ac_err *err)
{
    struct ac_board b;
    int rc;
    if (ac_board_open(ch, AC_BOARD_DEFER, &b, err) == -1)
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
    if (ac_board_open(ch, AC_BOARD_DEFER, &b, err) == -1)
        return -1;
    rc = update(&b, id, actor, chg, out, err);
    if (rc == 0)
        ac_board_sweep(&b);
    ac_board_close(&b);
    return rc;
}

int ac_tasks_lease(struct ac_chan *ch, enum ac_lease_op op, const char *id, const char *actor,
                   double seconds, const char *reason, uint64_t fence, json_t **out,
                   struct ac_err *err)
{
    struct ac_board b;
    int rc;
    if (fence && op != AC_LEASE_RENEW && op != AC_LEASE_RELEASE && op != AC_LEASE_DONE)
        return ac_err_code(err, "TASK_INVALID_ARGUMENT",
                           "a lease generation applies to renew, release and done only");
    if (op == AC_LEASE_BLOCK) {
        /* The Python tool's `task block` is a task update (status blocked). */
        struct ac_task_change chg;
        memset(&chg, 0, sizeof chg);
        chg.status = "blocked";
        return ac_tasks_update(ch, id, actor, &chg, out, err);
    }
    if (ac_board_open(ch, AC_BOARD_DEFER, &b, err) == -1)
        return -1;
    rc = fence ? ac_lease_fence(ch, id, fence, err) : 0;
    if (rc == 0)
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
    if (ac_board_open(ch, AC_BOARD_DEFER, &b, err) == -1)
        return -1;
    rc = ac_lease_recover_pending(&b, actor, resolve, err);     /* sweeps itself */
    ac_board_close(&b);
    return rc;
}
