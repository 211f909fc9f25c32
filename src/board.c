/* board.c - load, check and change the task board; see include/agentchat/board.h. */
#include "agentchat/board.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/audit.h"
#include "agentchat/fault.h"
#include "agentchat/fsutil.h"
#include "agentchat/isotime.h"
#include "agentchat/lease.h"
#include "agentchat/pystr.h"
#include "agentchat/pyjson.h"
#include "agentchat/taskrec.h"

void ac_board_now(char out[48], int micro)
{
    ac_isotime_format(ac_isotime_now_us(), micro ? 6 : 0, out);
}

/* ---- loading ---- */

struct names {
    char **v;
    size_t n, cap;
    int oom;
};

static int record_name_cb(void *ctx, const char *name, unsigned char type)
{
    struct names *c = ctx;
    size_t len = strlen(name);
    (void)type;
    if (name[0] == '.' || name[0] == '_' || len < 6 || strcmp(name + len - 5, ".json") != 0)
        return 0;
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 16;
        char **nv = realloc(c->v, ncap * sizeof *nv);
        if (!nv) {
            c->oom = 1;
            return 1;
        }
        c->v = nv;
        c->cap = ncap;
    }
    if (!(c->v[c->n] = strdup(name))) {
        c->oom = 1;
        return 1;
    }
    c->n++;
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ac_board_read_record(int dirfd, const char *name, json_t **out, struct ac_err *err)
{
    char *data, msg[AC_PYJSON_MSG_MAX];
    size_t len;
    json_t *v;
    if (ac_read_file_at(dirfd, name, AC_TASK_RECORD_CAP, &data, &len) == -1)
        return ac_task_err(err, "TASK_INVALID_RECORD", "could not read task record %s: [Errno %d] %s",
                           name, errno, strerror(errno));
    v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    free(data);
    if (!v)
        return ac_task_err(err, "TASK_INVALID_RECORD", "could not read task record %s: %s", name, msg);
    *out = v;
    return 0;
}

/* Python's _read_all(): every record of tasks/ in file-name order, read
 * and validated (a lenient board skips the bad ones). */
static int load_records(struct ac_board *b, struct ac_err *err)
{
    struct names c;
    size_t i;
    int tfd, rc = 0;

    memset(&c, 0, sizeof c);
    json_decref(b->tasks);
    json_decref(b->ids);
    b->tasks = json_object();
    b->ids = json_array();
    if (!b->tasks || !b->ids)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not load tasks");
    tfd = ac_open_dir_at(b->chfd, AC_TASKS_DIR);
    if (tfd == -1) {
        if (errno == ENOENT || b->lenient)
            return 0;
        return ac_task_err(err, "TASK_STORAGE_INVALID", "tasks is not a directory");
    }
    if (ac_dir_walk(tfd, record_name_cb, &c) == -1 || c.oom) {
        close(tfd);
        ac_names_free(c.v, c.n);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not list task records");
    }
    if (c.n > 1)
        qsort(c.v, c.n, sizeof *c.v, cmp_name);
    for (i = 0; i < c.n && rc == 0; i++) {
        json_t *rec = NULL;
        rc = ac_board_read_record(tfd, c.v[i], &rec, err);
        if (rc == 0) {
            rc = ac_task_validate(rec, c.v[i], b->channel, b->chfd, err);
            if (rc == 0) {
                const char *id = json_string_value(json_object_get(rec, "id"));
                json_object_set(b->tasks, id, rec);
                json_array_append_new(b->ids, json_string(id));
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
    close(tfd);
    ac_names_free(c.v, c.n);
    return rc;
}

int ac_board_load(struct ac_board *b, int graph, struct ac_err *err)
{
    if (load_records(b, err) == -1)
        return -1;
    if (graph && !b->lenient)
        return ac_board_graph_check(b->tasks, b->ids, err);
    return 0;
}

int ac_board_read_one(struct ac_board *b, const char *id, json_t **out, struct ac_err *err)
{
    char name[300];
    json_t *rec = NULL;
    int tfd = ac_open_dir_at(b->chfd, AC_TASKS_DIR);

    *out = NULL;
    snprintf(name, sizeof name, "%s.json", id);
    if (tfd == -1 || faccessat(tfd, name, F_OK, 0) == -1) {
        if (tfd != -1)
            close(tfd);
        return ac_task_err(err, "TASK_NOT_FOUND", "task record does not exist: %s", id);
    }
    if (ac_board_read_record(tfd, name, &rec, err) == -1 ||
        ac_task_validate(rec, name, b->channel, b->chfd, err) == -1) {
        json_decref(rec);
        close(tfd);
        return -1;
    }
    close(tfd);
    *out = rec;
    return 0;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Python's _validate_graph(): unknown dependencies first (records in
 * `ids` order), then cycles by depth-first search from each id in sorted
 * order; the task reported is the one met again while still on the path
 * (a self-dependency reports itself). Iterative, so a hostile chain
 * cannot exhaust the stack. */
int ac_board_graph_check(json_t *tasks, json_t *ids, struct ac_err *err)
{
    size_t i, j, n = json_array_size(ids);
    json_t *id, *state, *dep;
    struct frame {
        const char *id;
        size_t next;
    } *stack;
    const char **order;
    size_t top;

    json_array_foreach(ids, i, id) {
        json_t *rec = json_object_get(tasks, json_string_value(id));
        json_array_foreach(json_object_get(rec, "depends_on"), j, dep)
            if (!json_object_get(tasks, json_string_value(dep)))
                return ac_task_err(err, "TASK_UNKNOWN_DEPENDENCY",
                                   "task %s references unknown dependency %s",
                                   json_string_value(id), json_string_value(dep));
    }
    state = json_object();                  /* id -> 1 visiting, 2 done */
    stack = malloc((n + 1) * sizeof *stack);
    order = malloc((n + 1) * sizeof *order);
    if (!state || !stack || !order) {
        json_decref(state);
        free(stack);
        free(order);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not check the task graph");
    }
    json_array_foreach(ids, i, id)
        order[i] = json_string_value(id);
    if (n > 1)
        qsort(order, n, sizeof *order, cmp_cstr);
    for (i = 0; i < n; i++) {
        if (json_object_get(state, order[i]))
            continue;
        top = 0;
        stack[top].id = order[i];
        stack[top].next = 0;
        json_object_set_new(state, stack[top].id, json_integer(1));
        while (1) {
            struct frame *f = &stack[top];
            json_t *deps = json_object_get(json_object_get(tasks, f->id), "depends_on");
            if (f->next < json_array_size(deps)) {
                const char *d = json_string_value(json_array_get(deps, f->next++));
                json_int_t st = json_integer_value(json_object_get(state, d));
                if (st == 1) {
                    json_decref(state);
                    free(stack);
                    free(order);
                    return ac_task_err(err, "TASK_DEPENDENCY_CYCLE",
                                       "dependency cycle includes task %s", d);
                }
                if (st == 0) {
                    top++;
                    stack[top].id = d;
                    stack[top].next = 0;
                    json_object_set_new(state, d, json_integer(1));
                }
                continue;
            }
            json_object_set_new(state, f->id, json_integer(2));
            if (top == 0)
                break;
            top--;
        }
    }
    json_decref(state);
    free(stack);
    free(order);
    return 0;
}

/* With the task mutex held, a temp file in tasks/ or claims/ belongs to a
 * writer that died (every writer of those directories holds the mutex):
 * remove it, so a crash leaves no debris behind once the board is used.
 * Called after a successful mutation (a refused command changes nothing). */
void ac_board_sweep(struct ac_board *b)
{
    static const char *const dirs[] = { AC_TASKS_DIR, AC_CLAIMS_DIR };
    size_t i;
    for (i = 0; i < 2; i++) {
        int fd = ac_open_dir_at(b->chfd, dirs[i]);
        if (fd != -1) {
            ac_sweep_temps(fd, 0);
            close(fd);
        }
    }
}

int ac_board_open(struct ac_chan *ch, int mode, struct ac_board *b, struct ac_err *err)
{
    int rc;
    memset(b, 0, sizeof *b);
    b->mutex.fd = -1;
    b->ch = ch;
    b->channel = ch->name;
    b->lenient = (mode & AC_BOARD_LENIENT) != 0;
    b->chfd = ac_chan_dirfd(ch);
    if (b->chfd == -1)
        return ac_task_err(err, "TASK_STORAGE_INVALID", "this store has no task board");
    /* A reader (AC_BOARD_DEFER is for writers) creates the lock file only
     * once it succeeded (ac_board_keep): a failing read leaves the folder
     * as it was. */
    rc = (mode & AC_BOARD_DEFER) ? ac_mutex_acquire(b->chfd, AC_TASKS_LOCK, &b->mutex)
                                 : ac_mutex_acquire_reader(b->chfd, AC_TASKS_LOCK, &b->mutex);
    if (rc == AC_MUTEX_TIMEOUT)
        return ac_task_err(err, "TASK_LOCK_TIMEOUT", "could not acquire task mutation lock");
    if (rc == -1) {
        if (errno == EINTR)
            return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
        return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not open %s", AC_TASKS_LOCK);
    }
    if (!(mode & AC_BOARD_DEFER) && ac_board_load(b, 1, err) == -1) {
        ac_board_close(b);
        return -1;
    }
    return 0;
}

int ac_board_reload(struct ac_board *b, struct ac_err *err)
{
    return ac_board_load(b, 1, err);
}

void ac_board_keep(struct ac_board *b)
{
    ac_mutex_keep(b->chfd, AC_TASKS_LOCK, &b->mutex);
}

void ac_board_close(struct ac_board *b)
{
    json_decref(b->tasks);
    json_decref(b->ids);
    b->tasks = b->ids = NULL;
    ac_mutex_release(&b->mutex);
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

/* Write `rec` as tasks/<id>.json (link() when creating: never over an
 * existing record) and fsync tasks/. *published is set once the new record
 * is in place, so a caller knows whether a failure (the directory sync)
 * left it there. */
static int write_task(struct ac_board *b, const json_t *rec, int noreplace, int *published,
                      struct ac_err *err)
{
    char name[300];
    size_t len;
    char *bytes = ac_task_encode(rec, &len);
    int tfd, rc, e;
    *published = 0;
    if (!bytes)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode the task record");
    if (ac_sys_mkdirat(b->chfd, AC_TASKS_DIR, 0755) == -1 && errno != EEXIST) {
        free(bytes);
        return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not create tasks/");
    }
    tfd = ac_open_dir_at(b->chfd, AC_TASKS_DIR);
    if (tfd == -1) {
        free(bytes);
        return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not open tasks/");
    }
    snprintf(name, sizeof name, "%s.json", ac_task_str(rec, "id"));
    rc = ac_write_atomic(tfd, name, bytes, len, 0644,
                         (noreplace ? AC_ATOMIC_NOREPLACE : AC_ATOMIC_REPLACE) | AC_ATOMIC_NO_DIRSYNC,
                         "task.record");
    free(bytes);
    if (rc == -1) {
        e = errno;
        close(tfd);
        if (e == EEXIST)
            return ac_task_err(err, "TASK_ALREADY_EXISTS", "task record already exists: %s",
                               ac_task_str(rec, "id"));
        return ac_err_sys(err, e, "TASK_IO_ERROR", "could not write task record %s", name);
    }
    *published = 1;
    if (AC_FAULT("task.record.dirsync") == -1 || ac_fsync_dir(tfd) == -1) {
        e = errno;
        close(tfd);
        return ac_err_sys(err, e, "TASK_IO_ERROR", "could not sync tasks/ after writing %s", name);
    }
    close(tfd);
    return 0;
}

/* The bytes of tasks/<id>.json as they are on disk (for a rollback that
 * restores them exactly). 0, or -1 with errno. */
static int read_task_bytes(struct ac_board *b, const char *id, char **out, size_t *len)
{
    char name[300];
    int tfd = ac_open_dir_at(b->chfd, AC_TASKS_DIR), rc, e;
    if (tfd == -1)
        return -1;
    snprintf(name, sizeof name, "%s.json", id);
    rc = ac_read_file_at(tfd, name, AC_TASK_RECORD_CAP, out, len);
    e = errno;
    close(tfd);
    errno = e;
    return rc;
}

/* Undo the record write of a create (before == NULL: remove the record) or
 * an update (write the previous bytes back) that failed after the record
 * was in place. Returns 0, or -1 with errno. */
static int undo_write(struct ac_board *b, const char *id, const char *before, size_t before_len)
{
    char name[300];
    int tfd = ac_open_dir_at(b->chfd, AC_TASKS_DIR), rc = -1, e;
    snprintf(name, sizeof name, "%s.json", id);
    if (tfd != -1 && AC_FAULT("task.rollback") == 0) {
        if (before)
            rc = ac_write_atomic(tfd, name, before, before_len, 0644, AC_ATOMIC_REPLACE, "task.restore");
        else if ((rc = ac_sys_unlinkat(tfd, name, 0)) == 0)
            rc = ac_fsync_dir(tfd);
    }
    e = errno;
    if (tfd != -1)
        close(tfd);
    errno = e;
    return rc;
}

int ac_board_commit_plain(struct ac_board *b, json_t *cur, json_t *rec, const char *actor,
                          const char *event, struct ac_err *err)
{
    const char *id = ac_task_str(rec, "id");
    char *before = NULL, why[AC_ERR_MSG_MAX];
    size_t before_len = 0;
    json_t *body;
    int published, rc, audit_failed = 0;

    if (cur && read_task_bytes(b, id, &before, &before_len) == -1)
        return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not read task record %s.json", id);
    rc = write_task(b, rec, cur == NULL, &published, err);
    if (rc == 0) {
        body = ac_board_audit_body(b, event, cur, rec);
        rc = body ? ac_audit_post(b->ch, actor, event, id, body, NULL, err)
                  : ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode the audit message");
        json_decref(body);
        audit_failed = rc == -1;
    }
    if (rc == -1 && published) {
        /* The Python tool's create/update: the record is changed back, and
         * the audit failure is reported as TASK_AUDIT_FAILED. */
        snprintf(why, sizeof why, "%s", err && err->msg[0] ? err->msg : "unknown error");
        if (undo_write(b, id, before, before_len) == -1)
            ac_task_err(err, "TASK_AUDIT_ROLLBACK_FAILED", "could not roll back task %s: [Errno %d] %s",
                        cur ? "update" : "create", errno, strerror(errno));
        else if (audit_failed)
            ac_task_err(err, "TASK_AUDIT_FAILED",
                        "task record changed but audit event could not be written: %s", why);
        else
            ac_task_err(err, "TASK_IO_ERROR", "%s; task %s %s", why, id,
                        cur ? "is unchanged" : "was not created");
    }
    if (rc == 0)
        json_object_set(b->tasks, id, rec);
    free(before);
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

/* The graph with `rec` in place of the record of its id, or added last
 * (Python: records + [candidate]); the board's records must be loaded. */
static int graph_with(struct ac_board *b, json_t *rec, struct ac_err *err)
{
    const char *id = ac_task_str(rec, "id");
    json_t *tasks = json_copy(b->tasks), *ids = json_copy(b->ids);
    int rc;
    if (!tasks || !ids) {
        json_decref(tasks);
        json_decref(ids);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not check the task graph");
    }
    if (!json_object_get(tasks, id))
        json_array_append_new(ids, json_string(id));
    json_object_set(tasks, id, rec);
    rc = ac_board_graph_check(tasks, ids, err);
    json_decref(tasks);
    json_decref(ids);
    return rc;
}

int ac_board_candidate(struct ac_board *b, const json_t *cur, json_t *rec, int load,
                       struct ac_err *err)
{
    const char *from = ac_task_str(cur, "status"), *to;
    if (ac_task_validate(rec, NULL, b->channel, b->chfd, err) == -1)
        return -1;
    to = ac_task_str(rec, "status");
    if (!ac_task_transition_ok(from, to))
        return ac_task_transition_error(from, to, err);
    if ((load && ac_board_load(b, 0, err) == -1) || graph_with(b, rec, err) == -1)
        return -1;
    if (!strcmp(to, "in_progress") || !strcmp(to, "done"))
        return ac_board_deps_ready(b, rec, err);
    return 0;
}

/* ---- create ---- */

static json_t *string_or_null(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

int ac_board_create(struct ac_board *b, const struct ac_task_spec *spec, json_t **out,
                    struct ac_err *err)
{
    json_t *rec;
    char now[48], name[300];
    int tfd, exists;

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
    /* The Python tool's order: the new record, then whether one exists,
     * then every record and the graph with the new one added. */
    if (ac_task_validate(rec, NULL, b->channel, b->chfd, err) == -1)
        goto fail;
    if (strlen(spec->id) > AC_TASK_ID_MAX) {
        ac_task_err(err, "TASK_INVALID_ID", "id must be at most %d characters", AC_TASK_ID_MAX);
        goto fail;
    }
    snprintf(name, sizeof name, "%s.json", spec->id);
    tfd = ac_open_dir_at(b->chfd, AC_TASKS_DIR);
    exists = tfd != -1 && faccessat(tfd, name, F_OK, 0) == 0;
    if (tfd != -1)
        close(tfd);
    if (exists) {
        ac_task_err(err, "TASK_ALREADY_EXISTS", "task record already exists: %s", spec->id);
        goto fail;
    }
    if (ac_board_load(b, 0, err) == -1 || graph_with(b, rec, err) == -1 ||
        ac_board_commit_plain(b, NULL, rec, spec->created_by, "task.created", err) == -1)
        goto fail;
    *out = rec;
    return 0;
fail:
    json_decref(rec);
    return -1;
}

/* ---- update ---- */

int ac_board_update(struct ac_board *b, const char *id, const char *actor,
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
