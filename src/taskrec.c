/* taskrec.c - task records; see include/agentchat/taskrec.h. */
#include "agentchat/taskrec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/isotime.h"
#include "agentchat/json.h"
#include "agentchat/pathnorm.h"
#include "agentchat/pyjson.h"
#include "agentchat/store.h"
#include "agentchat/pystr.h"
#include "agentchat/utf8.h"

const char *const ac_task_fields[AC_TASK_NFIELDS] = {
    "id", "channel", "title", "status", "owner", "created_by", "depends_on",
    "files_hint", "acceptance", "lease_expires_at", "branch", "updated_at",
};

static const char *const statuses[] = { "open", "in_progress", "blocked", "done", "cancelled" };

int ac_safe_name(const char *s)
{
    size_t i;
    if (!s || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') ||
                (s[0] >= '0' && s[0] <= '9')))
        return 0;
    for (i = 1; s[i]; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int ac_task_status_valid(const char *s)
{
    size_t i;
    for (i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if (strcmp(s, statuses[i]) == 0)
            return 1;
    return 0;
}

int ac_task_transition_ok(const char *from, const char *to)
{
    if (strcmp(from, to) == 0)
        return 1;
    if (strcmp(from, "open") == 0)
        return !strcmp(to, "in_progress") || !strcmp(to, "blocked") || !strcmp(to, "cancelled");
    if (strcmp(from, "in_progress") == 0)
        return !strcmp(to, "open") || !strcmp(to, "blocked") || !strcmp(to, "done") ||
               !strcmp(to, "cancelled");
    if (strcmp(from, "blocked") == 0)
        return !strcmp(to, "open") || !strcmp(to, "in_progress") || !strcmp(to, "cancelled");
    return 0;
}

int ac_task_transition_error(const char *from, const char *to, struct ac_err *err)
{
    char a[128], b[128];
    return ac_task_err(err, "TASK_INVALID_TRANSITION", "transition %s -> %s is not allowed",
                       ac_py_repr(from, a, sizeof a), ac_py_repr(to, b, sizeof b));
}

static int is_field(const char *key)
{
    size_t i;
    for (i = 0; i < AC_TASK_NFIELDS; i++)
        if (strcmp(key, ac_task_fields[i]) == 0)
            return 1;
    return 0;
}

/* A timestamp field: ISO-8601 with an explicit offset. */
static int check_time(const json_t *v, const char *field, struct ac_err *err)
{
    const char *s = json_string_value(v);
    int64_t us;
    int flags;
    if (!s || ac_isotime_parse(s, json_string_length(v), &us, &flags) == -1)
        return ac_task_err(err, "TASK_INVALID_TIMESTAMP", "%s must be an ISO-8601 timestamp", field);
    if (!(flags & AC_ISOTIME_HAS_OFFSET))
        return ac_task_err(err, "TASK_INVALID_TIMESTAMP", "%s must include an explicit UTC offset",
                           field);
    return 0;
}

static int check_string_list(const json_t *v, const char *field, const char *code,
                             struct ac_err *err)
{
    size_t i;
    json_t *item;
    if (!json_is_array(v))
        return ac_task_err(err, code, "%s must be a JSON array", field);
    json_array_foreach(v, i, item)
        if (!json_is_string(item))
            return ac_task_err(err, code, "%s must contain only strings", field);
    return 0;
}

static int check_files_hint(const json_t *v, struct ac_chan *ch, struct ac_err *err)
{
    size_t i;
    json_t *item;
    if (check_string_list(v, "files_hint", "TASK_INVALID_FILES_HINT", err) == -1)
        return -1;
    json_array_foreach(v, i, item) {
        const char *path = json_string_value(item), *why;
        char shown[600], norm[AC_RELPATH_MAX];
        int is_dir;
        why = ch ? (ac_chan_path_resolve(ch, path, norm, sizeof norm, &is_dir, &why) == 0 ? NULL : why)
                 : ac_relpath_problem(path);
        if (why)
            return ac_task_err(err, "TASK_PATH_OUTSIDE_WORKSPACE",
                               "files_hint path is outside the channel workspace: %s (%s)",
                               ac_py_repr(path, shown, sizeof shown), why);
    }
    return 0;
}

static int check_dependencies(const json_t *v, struct ac_err *err)
{
    size_t i, j;
    json_t *item;
    if (!json_is_array(v))
        return ac_task_err(err, "TASK_INVALID_DEPENDS_ON", "depends_on must be a JSON array");
    json_array_foreach(v, i, item) {
        const char *dep = json_string_value(item);
        if (!dep || !ac_safe_name(dep))
            return ac_task_err(err, "TASK_INVALID_DEPENDENCY_ID",
                               "dependency must contain only letters, digits, '.', '_' or '-'");
        for (j = 0; j < i; j++)
            if (strcmp(json_string_value(json_array_get(v, j)), dep) == 0)
                return ac_task_err(err, "TASK_DUPLICATE_DEPENDENCY",
                                   "dependency is listed more than once: %s", dep);
    }
    return 0;
}

int ac_task_validate(const json_t *rec, const char *filename, const char *channel, struct ac_chan *ch,
                     struct ac_err *err)
{
    const char *key, *s;
    json_t *v;
    char a[300], b[300];
    size_t i, stem = strlen(filename);

    if (!json_is_object(rec))
        return ac_task_err(err, "TASK_INVALID_RECORD", "task record must be a JSON object");
    json_object_foreach((json_t *)rec, key, v)
        if (!is_field(key))
            return ac_task_err(err, "TASK_UNKNOWN_FIELD", "task record contains unknown fields");
    for (i = 0; i < AC_TASK_NFIELDS; i++)
        if (!json_object_get(rec, ac_task_fields[i]))
            return ac_task_err(err, "TASK_REQUIRED_FIELD_MISSING", "required task field is missing");

    s = json_string_value(json_object_get(rec, "id"));
    if (!s || !ac_safe_name(s))
        return ac_task_err(err, "TASK_INVALID_ID",
                           "id must contain only letters, digits, '.', '_' or '-'");
    if (stem > 5 && strcmp(filename + stem - 5, ".json") == 0)
        stem -= 5;
    if (strlen(s) != stem || strncmp(s, filename, stem) != 0)
        return ac_task_err(err, "TASK_RECORD_ID_MISMATCH", "task id %s does not match filename %s",
                           ac_py_repr(s, a, sizeof a), ac_py_repr(filename, b, sizeof b));

    s = json_string_value(json_object_get(rec, "channel"));
    if (!s || strcmp(s, channel) != 0) {
        if (!s)
            return ac_task_err(err, "TASK_INVALID_CHANNEL", "channel must be a string");
        return ac_task_err(err, "TASK_CHANNEL_MISMATCH", "task channel %s does not match %s",
                           ac_py_repr(s, a, sizeof a), ac_py_repr(channel, b, sizeof b));
    }

    s = json_string_value(json_object_get(rec, "title"));
    if (!s)
        return ac_task_err(err, "TASK_INVALID_TITLE", "title must be a string");
    if (ac_has_control(s))
        return ac_task_err(err, "TASK_INVALID_TITLE", "title contains a forbidden control character");

    v = json_object_get(rec, "status");
    s = json_string_value(v);
    if (!s || !ac_task_status_valid(s)) {
        if (!s)
            return ac_task_err(err, "TASK_INVALID_STATUS", "status must be a string");
        return ac_task_err(err, "TASK_INVALID_STATUS", "unknown task status: %s",
                           ac_py_repr(s, a, sizeof a));
    }

    v = json_object_get(rec, "owner");
    if (!json_is_null(v)) {
        s = json_string_value(v);
        if (!s)
            return ac_task_err(err, "TASK_INVALID_OWNER", "owner must be a string or null");
        if (!s[0])
            return ac_task_err(err, "TASK_INVALID_OWNER", "owner must not be empty");
        if (ac_has_control(s))
            return ac_task_err(err, "TASK_INVALID_OWNER", "owner contains a forbidden control character");
    }

    s = json_string_value(json_object_get(rec, "created_by"));
    if (!s)
        return ac_task_err(err, "TASK_INVALID_CREATED_BY", "created_by must be a string");
    if (!s[0])
        return ac_task_err(err, "TASK_INVALID_CREATED_BY", "created_by must not be empty");
    if (ac_has_control(s))
        return ac_task_err(err, "TASK_INVALID_CREATED_BY",
                           "created_by contains a forbidden control character");

    if (check_dependencies(json_object_get(rec, "depends_on"), err) == -1 ||
        check_files_hint(json_object_get(rec, "files_hint"), ch, err) == -1 ||
        check_string_list(json_object_get(rec, "acceptance"), "acceptance",
                          "TASK_INVALID_ACCEPTANCE", err) == -1)
        return -1;

    v = json_object_get(rec, "lease_expires_at");
    if (!json_is_null(v) && check_time(v, "lease_expires_at", err) == -1)
        return -1;

    v = json_object_get(rec, "branch");
    if (!json_is_null(v)) {
        s = json_string_value(v);
        if (!s)
            return ac_task_err(err, "TASK_INVALID_BRANCH", "branch must be a string or null");
        if (!s[0])
            return ac_task_err(err, "TASK_INVALID_BRANCH", "branch must not be empty");
        if (ac_has_control(s))
            return ac_task_err(err, "TASK_INVALID_BRANCH", "branch contains a forbidden control character");
    }
    return check_time(json_object_get(rec, "updated_at"), "updated_at", err);
}

char *ac_task_encode(const json_t *rec, size_t *len)
{
    static const struct ac_json_style style = { 2, 0, 0, ",", ": " };
    json_t *ordered = json_object();
    char *body, *out;
    size_t i, n;

    if (!ordered)
        return NULL;
    for (i = 0; i < AC_TASK_NFIELDS; i++) {
        json_t *v = json_object_get(rec, ac_task_fields[i]);
        json_object_set(ordered, ac_task_fields[i], v ? v : json_null());
    }
    body = ac_json_dump(ordered, &style, &n);
    json_decref(ordered);
    if (!body)
        return NULL;
    out = realloc(body, n + 2);
    if (!out) {
        free(body);
        return NULL;
    }
    out[n] = '\n';
    out[n + 1] = '\0';
    *len = n + 1;
    return out;
}

const char *ac_task_str(const json_t *rec, const char *field)
{
    return json_string_value(json_object_get(rec, field));
}

int64_t ac_task_time(const json_t *rec, const char *field)
{
    const char *s = ac_task_str(rec, field);
    int64_t us = 0;
    int flags;
    if (s)
        ac_isotime_parse(s, strlen(s), &us, &flags);
    return us;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *ac_task_changed_fields(const json_t *before, const json_t *after)
{
    const char *names[AC_TASK_NFIELDS];
    json_t *out = json_array();
    size_t i, n = 0;
    if (!out)
        return NULL;
    for (i = 0; i < AC_TASK_NFIELDS; i++) {
        json_t *a = json_object_get(before, ac_task_fields[i]);
        json_t *b = json_object_get(after, ac_task_fields[i]);
        if (!json_equal(a, b))
            names[n++] = ac_task_fields[i];
    }
    qsort(names, n, sizeof names[0], cmp_str);
    for (i = 0; i < n; i++)
        json_array_append_new(out, json_string(names[i]));
    return out;
}

int ac_task_parse(const char *file, const char *data, size_t len, int sys_errno, json_t **out,
                  struct ac_err *err)
{
    char msg[AC_PYJSON_MSG_MAX];
    json_t *v;
    if (!data)
        return ac_task_err(err, "TASK_INVALID_RECORD", "could not read task record %s: [Errno %d] %s",
                           file, sys_errno, strerror(sys_errno));
    v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    if (!v)
        return ac_task_err(err, "TASK_INVALID_RECORD", "could not read task record %s: %s", file, msg);
    *out = v;
    return 0;
}

/* Unknown dependencies first (in id order), then cycles by depth-first
 * search from each id in order; the task reported is the one met again
 * while still on the path (a self-dependency reports itself). Iterative,
 * so a hostile chain cannot exhaust the stack. */
int ac_task_graph_check(json_t *tasks, json_t *ids, struct ac_err *err)
{
    size_t i, j, n = json_array_size(ids);
    json_t *id, *state, *dep;
    struct frame {
        const char *id;
        size_t next;
    } *stack;
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
    if (!state || !stack) {
        json_decref(state);
        free(stack);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not check the task graph");
    }
    json_array_foreach(ids, i, id) {
        if (json_object_get(state, json_string_value(id)))
            continue;
        top = 0;
        stack[top].id = json_string_value(id);
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
    return 0;
}
