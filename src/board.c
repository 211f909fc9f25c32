/*
 * board.c - the task board of one channel: its records loaded and checked
 * under the board's mutex, the dependency graph, and the plain change of a
 * record; see include/agentchat/board.h. The layers above it: lease.c (the
 * lease operations), tasks.c (every task command, one call each).
 */
#include "agentchat/board.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/clock.h"
#include "agentchat/isotime.h"
#include "agentchat/pystr.h"
#include "agentchat/taskrec.h"

void ac_board_now(char out[48], int micro)
{
    ac_isotime_format(ac_isotime_now_us(), micro ? 6 : 0, out);
}

/* ---- loading ---- */

/* Python's _read_all(): every record of tasks/ in file-name order, read
 * and validated (a lenient board skips the bad ones). */
static int load_records(struct ac_board *b, struct ac_err *err)
{
    struct ac_recset set;
    struct ac_err serr = AC_ERR_INIT;
    size_t i;
    int rc = 0;

    json_decref(b->tasks);
    json_decref(b->ids);
    b->tasks = json_object();
    b->ids = json_array();
    if (!b->tasks || !b->ids)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not load tasks");
    if (ac_chan_rec_scan(b->ch, AC_TASKS, NULL, 0, &set, &serr) == -1) {
        if (b->lenient)
            return 0;
        if (serr.sys_errno == ENOMEM)
            return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not list task records");
        if (!serr.sys_errno) {
            if (err)
                *err = serr;
            return -1;
        }
        return ac_task_err(err, "TASK_STORAGE_INVALID", "tasks is not a directory");
    }
    for (i = 0; i < set.n && rc == 0; i++) {
        const struct ac_record *r = &set.v[i];
        char file[300];
        json_t *rec = NULL;
        snprintf(file, sizeof file, "%s.json", r->name);
        rc = ac_task_parse(file, r->data, r->len, r->sys_errno, &rec, err);
        if (rc == 0) {
            rc = ac_task_validate(rec, file, b->channel, b->ch, err);
            if (rc == 0) {
                const char *id = json_string_value(json_object_get(rec, "id"));
                if (json_object_set(b->tasks, id, rec) == -1 ||
                    json_array_append_new(b->ids, json_string(id)) == -1)
                    rc = ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not load tasks");
            }
            json_decref(rec);
        }
        if (rc == -1 && b->lenient) {
            b->skipped++;
            if (err)
                *err = (struct ac_err)AC_ERR_INIT;
            rc = 0;
        }
    }
    ac_recset_free(&set);
    return rc;
}

int ac_board_load(struct ac_board *b, int graph, struct ac_err *err)
{
    if (load_records(b, err) == -1)
        return -1;
    if (graph && !b->lenient)
        return ac_task_graph_check(b->tasks, b->ids, err);
    return 0;
}

int ac_board_read_one(struct ac_board *b, const char *id, json_t **out, struct ac_err *err)
{
    struct ac_record r;
    char file[300];
    json_t *rec = NULL;

    *out = NULL;
    snprintf(file, sizeof file, "%s.json", id);
    if (ac_chan_rec_read(b->ch, AC_TASKS, id, &r, NULL) == -1) {
        int e = r.sys_errno;
        ac_record_free(&r);
        if (e == ENOENT || e == ENAMETOOLONG || e == 0)
            return ac_task_err(err, "TASK_NOT_FOUND", "task record does not exist: %s", id);
        return ac_task_parse(file, NULL, 0, e, &rec, err);
    }
    if (ac_task_parse(file, r.data, r.len, 0, &rec, err) == -1 ||
        ac_task_validate(rec, file, b->channel, b->ch, err) == -1) {
        json_decref(rec);
        ac_record_free(&r);
        return -1;
    }
    ac_record_free(&r);
    *out = rec;
    return 0;
}

/* With the task mutex held, a temp file in tasks/ or claims/ belongs to a
 * writer that died (every writer of those records holds the mutex):
 * remove it, so a crash leaves no debris behind once the board is used.
 * Called after a successful mutation (a refused command changes nothing). */
void ac_board_sweep(struct ac_board *b)
{
    ac_chan_sweep(b->ch, AC_TASKS);
    ac_chan_sweep(b->ch, AC_CLAIMS);
}

int ac_board_open(struct ac_chan *ch, int mode, struct ac_board *b, struct ac_err *err)
{
    memset(b, 0, sizeof *b);
    b->ch = ch;
    b->channel = ch->name;
    b->lenient = (mode & AC_BOARD_LENIENT) != 0;
    /* A reader (AC_BOARD_DEFER is for writers) creates no mutex: only
     * once it succeeded (ac_board_keep), so a failing read leaves the
     * channel as it was. */
    if (ac_chan_mutex_enter(ch, AC_MUTEX_TASKS, (mode & AC_BOARD_DEFER) ? 0 : AC_MUTEX_READER,
                            &b->mutex, "TASK_LOCK_TIMEOUT", "could not acquire task mutation lock",
                            "TASK_IO_ERROR", "could not open " AC_MUTEX_TASKS, err) == -1)
        return -1;
    if (!(mode & AC_BOARD_DEFER) && ac_board_load(b, 1, err) == -1) {
        ac_board_close(b);
        return -1;
    }
    return 0;
}

void ac_board_keep(struct ac_board *b)
{
    ac_mutex_keep(b->mutex);
}

void ac_board_close(struct ac_board *b)
{
    json_decref(b->tasks);
    json_decref(b->ids);
    b->tasks = b->ids = NULL;
    ac_mutex_release(b->mutex);
    b->mutex = NULL;
}

json_t *ac_board_get(struct ac_board *b, const char *id, struct ac_err *err)
{
    json_t *rec = json_object_get(b->tasks, id);
    if (!rec)
        ac_task_err(err, "TASK_NOT_FOUND", "task record does not exist: %s", id);
    return rec;
}

char *ac_board_blocking(struct ac_board *b, const json_t *rec, int with_status)
{
    size_t i, cap = 1, len = 0;
    json_t *dep;
    char *out;
    json_array_foreach(json_object_get(rec, "depends_on"), i, dep)
        cap += json_string_length(dep) + 16;
    out = malloc(cap + 1);
    if (!out)
        return NULL;
    out[0] = '\0';
    json_array_foreach(json_object_get(rec, "depends_on"), i, dep) {
        const char *d = json_string_value(dep);
        const char *st = ac_task_str(json_object_get(b->tasks, d), "status");
        if (st && strcmp(st, "done") == 0)
            continue;
        if (with_status)
            len += (size_t)snprintf(out + len, cap + 1 - len, "%s%s=%s", len ? ", " : "", d,
                                    st ? st : "missing");
        else
            len += (size_t)snprintf(out + len, cap + 1 - len, "%s%s", len ? ", " : "", d);
    }
    return out;
}

int ac_board_deps_ready(struct ac_board *b, const json_t *rec, struct ac_err *err)
{
    char *blocking = ac_board_blocking(b, rec, 0);
    int rc = 0;
    if (!blocking)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not check dependencies");
    if (blocking[0])
        rc = ac_task_err(err, "TASK_DEPENDENCY_NOT_READY", "task %s depends on unfinished tasks: %s",
                         ac_task_str(rec, "id"), blocking);
    free(blocking);
    return rc;
}

int ac_board_commit_plain(struct ac_board *b, json_t *cur, json_t *rec, const char *actor,
                          const char *event, struct ac_err *err)
{
    const char *id = ac_task_str(rec, "id");
    struct ac_record before;
    struct ac_change change;
    struct ac_batch batch;
    char *bytes;
    size_t len;
    json_t *body;
    int rc;

    memset(&before, 0, sizeof before);
    if (cur && ac_chan_rec_read(b->ch, AC_TASKS, id, &before, NULL) == -1)
        return ac_err_sys(err, before.sys_errno ? before.sys_errno : EIO, "TASK_IO_ERROR",
                          "could not read task record %s.json", id);
    bytes = ac_task_encode(rec, &len);
    body = bytes ? ac_board_audit_body(b, event, cur, rec) : NULL;
    if (!body) {
        ac_record_free(&before);
        free(bytes);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode the task record");
    }
    change = (struct ac_change){ AC_TASKS, id, before.data, before.len, bytes, len, before.generation, 0 };
    batch = (struct ac_batch){ AC_BATCH_TASK, &change, 1, actor, event, id, body, NULL, NULL };
    rc = ac_chan_batch_commit(b->ch, &batch, err);
    if (rc == -1 && err && err->code && strncmp(err->code, "TASK_", 5) != 0 &&
        strcmp(err->code, "INTERRUPTED") != 0)
        err->code = "TASK_IO_ERROR";     /* a store failure is a task board I/O error */
    if (rc == 0 && json_object_set(b->tasks, id, rec) == -1)
        rc = ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not update the task board");
    json_decref(body);
    ac_record_free(&before);
    free(bytes);
    return rc;
}

/* The base of every task/lease audit body (docs/format.md 3.9). */
json_t *ac_board_audit_body(struct ac_board *b, const char *event, const json_t *before,
                            const json_t *after)
{
    json_t *body = json_object();
    if (!body)
        return NULL;
    json_object_set_new(body, "event", json_string(event));
    json_object_set(body, "task_id", json_object_get(after, "id"));
    json_object_set_new(body, "channel", json_string(b->channel));
    json_object_set(body, "status", json_object_get(after, "status"));
    json_object_set(body, "owner", json_object_get(after, "owner"));
    json_object_set(body, "lease_expires_at", json_object_get(after, "lease_expires_at"));
    json_object_set(body, "updated_at", json_object_get(after, "updated_at"));
    if (before) {
        json_object_set(body, "previous_status", json_object_get(before, "status"));
        json_object_set_new(body, "changed_fields", ac_task_changed_fields(before, after));
    }
    return body;
}

int ac_board_graph_with(struct ac_board *b, json_t *rec, struct ac_err *err)
{
    const char *id = ac_task_str(rec, "id");
    json_t *tasks = json_copy(b->tasks), *ids = json_copy(b->ids);
    int rc;
    if (!tasks || !ids || (!json_object_get(tasks, id) && json_array_append_new(ids, json_string(id)) == -1) ||
        json_object_set(tasks, id, rec) == -1) {
        json_decref(tasks);
        json_decref(ids);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not check the task graph");
    }
    rc = ac_task_graph_check(tasks, ids, err);
    json_decref(tasks);
    json_decref(ids);
    return rc;
}

int ac_board_candidate(struct ac_board *b, const json_t *cur, json_t *rec, int load,
                       struct ac_err *err)
{
    const char *from = ac_task_str(cur, "status"), *to;
    if (ac_task_validate(rec, NULL, b->channel, b->ch, err) == -1)
        return -1;
    to = ac_task_str(rec, "status");
    if (!ac_task_transition_ok(from, to))
        return ac_task_transition_error(from, to, err);
    if ((load && ac_board_load(b, 0, err) == -1) || ac_board_graph_with(b, rec, err) == -1)
        return -1;
    if (!strcmp(to, "in_progress") || !strcmp(to, "done"))
        return ac_board_deps_ready(b, rec, err);
    return 0;
}
