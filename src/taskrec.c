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
#include "agentchat/pystr.h"
#include "agentchat/utf8.h"

const char *const ac_task_fields[AC_TASK_NFIELDS] = {
    "id", "channel", "title", "status", "owner", "created_by", "depends_on",
    "files_hint", "acceptance", "lease_expires_at", "branch", "updated_at",
};

static const char *const statuses[] = { "open", "in_progress", "blocked", "done", "cancelled" };

int ac_task_err(struct ac_err *err, const char *code, const char *fmt, ...)
{
    int saved = errno;
    if (err) {
        va_list ap;
        err->code = code;
        err->exit_code = AC_EXIT_USAGE;
        err->sys_errno = 0;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    errno = saved;
    return -1;
}

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

int ac_task_id_findable(const char *id)
{
    const unsigned char *p = (const unsigned char *)id;
    size_t len = strlen(id), i = 0;
    int first = 1;
    if (!len)
        return 0;
    while (i < len) {
        uint32_t cp = p[i];
        size_t n = 1;
        if (p[i] >= 0x80 && (n = ac_utf8_decode(p + i, len - i, &cp)) == 0)
            return 0;                   /* a lone surrogate to Python: not alnum */
        if (!ac_py_isalnum(cp) && (first || (cp != '.' && cp != '_' && cp != '-')))
            return 0;
        first = 0;
        i += n;
    }
    return 1;
}

int ac_task_unsafe_id(const char *id, struct ac_err *err)
{
    char shown[600];
    return ac_task_err(err, "TASK_INVALID_ID", "unsafe task id: %s",
                       ac_py_repr(id, shown, sizeof shown));
}

int ac_task_text_check(const json_t *v, const char *field, int allow_empty, const char *code,
                       struct ac_err *err)
{
    const char *s = json_string_value(v);
    size_t len, start, end;
    if (!s)
        return ac_task_err(err, code, "%s must be a string", field);
    len = json_string_length(v);
    if (!allow_empty) {
        ac_py_strip(s, len, &start, &end);
        if (start >= end)
            return ac_task_err(err, code, "%s must not be empty", field);
    }
    if (memchr(s, '\0', len) || memchr(s, '\r', len) || memchr(s, '\n', len))
        return ac_task_err(err, code, "%s contains a forbidden control character", field);
    return 0;
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

int ac_task_time_check(const json_t *v, const char *field, const char *code, struct ac_err *err)
{
    const char *s = json_string_value(v);
    size_t start, end;
    int64_t us;
    int flags;
    if (s)
        ac_py_strip(s, json_string_length(v), &start, &end);
    if (!s || start >= end)
        return ac_task_err(err, code, "%s must be an ISO-8601 string", field);
    if (ac_isotime_parse(s + start, end - start, &us, &flags) == -1)
        return ac_task_err(err, code, "%s is not valid ISO-8601", field);
    if (!(flags & AC_ISOTIME_HAS_OFFSET))
        return ac_task_err(err, code, "%s must include an explicit UTC offset", field);
    return 0;
}

/* [A-Za-z0-9][A-Za-z0-9._-]* over the whole JSON string (NUL included). */
static int safe_value(const json_t *v)
{
    const char *s = json_string_value(v);
    return s && strlen(s) == json_string_length(v) && ac_safe_name(s);
}

/* An id (task or dependency): text first, then the character rule. */
static int check_id(const json_t *v, const char *field, const char *code, struct ac_err *err)
{
    if (ac_task_text_check(v, field, 0, code, err) == -1)
        return -1;
    if (!safe_value(v))
        return ac_task_err(err, code, "%s must contain only letters, digits, '.', '_' or '-'",
                           field);
    return 0;
}

/* The second code point of s (0 when there is none). */
static uint32_t second_cp(const char *s, size_t len)
{
    uint32_t cp = 0;
    size_t n = 1;
    if (len && (unsigned char)s[0] >= 0x80)
        n = ac_utf8_decode((const unsigned char *)s, len, &cp);
    if (n == 0 || n >= len)
        return 0;
    if ((unsigned char)s[n] < 0x80)
        return (unsigned char)s[n];
    return ac_utf8_decode((const unsigned char *)s + n, len - n, &cp) ? cp : 0;
}

/* One files_hint entry, as the Python tool's validate_workspace_path():
 * backslashes are separators, control characters other than NUL are
 * text, and with a channel the resolved path must stay inside it. */
static int check_hint(const json_t *item, int chfd, struct ac_err *err)
{
    const char *path = json_string_value(item), *why = NULL, *rwhy;
    char shown[600], *portable = NULL, *norm = NULL;
    size_t len = path ? json_string_length(item) : 0, i;
    int is_dir, rc = 0;

    if (!path || !len || memchr(path, '\0', len)) {
        why = "invalid path text";
        goto out;
    }
    if (!(portable = strdup(path)))
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not check files_hint");
    for (i = 0; i < len; i++)
        if (portable[i] == '\\')
            portable[i] = '/';
    if (portable[0] == '/' || second_cp(portable, len) == ':')
        why = "absolute paths are not allowed";
    else if (strchr(portable, ':'))
        why = "path names may not contain ':'";
    else {
        const char *p = portable;
        while (*p && !why) {
            size_t n = strcspn(p, "/");
            if (n == 2 && p[0] == '.' && p[1] == '.')
                why = "parent traversal is not allowed";
            p += n;
            while (*p == '/')
                p++;
        }
    }
    if (!why && chfd >= 0) {
        if (!(norm = malloc(AC_RELPATH_MAX))) {
            free(portable);
            return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not check files_hint");
        }
        if (ac_relpath_realize(chfd, portable, norm, AC_RELPATH_MAX, &is_dir, &rwhy) == -1)
            why = "resolved path escapes the workspace";
    }
out:
    if (why)
        rc = ac_task_err(err, "TASK_PATH_OUTSIDE_WORKSPACE",
                         "files_hint path is outside the channel workspace: %s (%s)",
                         ac_pyjson_repr(item, shown, sizeof shown), why);
    free(portable);
    free(norm);
    return rc;
}

int ac_task_fields_check(const json_t *rec, int chfd, struct ac_err *err)
{
    const char *key;
    json_t *v, *item;
    char shown[300];
    size_t i, j;

    if (!json_is_object(rec))
        return ac_task_err(err, "TASK_INVALID_RECORD", "task record must be a JSON object");
    for (i = 0; i < AC_TASK_NFIELDS; i++)
        if (!json_object_get(rec, ac_task_fields[i]))
            return ac_task_err(err, "TASK_REQUIRED_FIELD_MISSING", "required task field is missing");
    json_object_foreach((json_t *)rec, key, v)
        if (!is_field(key))
            return ac_task_err(err, "TASK_UNKNOWN_FIELD", "task record contains unknown fields");

    if (check_id(json_object_get(rec, "id"), "id", "TASK_INVALID_ID", err) == -1)
        return -1;
    v = json_object_get(rec, "channel");
    if (ac_task_text_check(v, "channel", 0, "TASK_INVALID_CHANNEL", err) == -1)
        return -1;
    if (!safe_value(v))
        return ac_task_err(err, "TASK_INVALID_CHANNEL", "channel is not a safe channel name");
    if (ac_task_text_check(json_object_get(rec, "title"), "title", 1, "TASK_INVALID_TITLE", err) == -1)
        return -1;
    v = json_object_get(rec, "status");
    if (!json_is_string(v) || !ac_task_status_valid(json_string_value(v)) ||
        strlen(json_string_value(v)) != json_string_length(v))
        return ac_task_err(err, "TASK_INVALID_STATUS", "unknown task status: %s",
                           ac_pyjson_repr(v, shown, sizeof shown));
    v = json_object_get(rec, "owner");
    if (!json_is_null(v) && ac_task_text_check(v, "owner", 0, "TASK_INVALID_OWNER", err) == -1)
        return -1;
    if (ac_task_text_check(json_object_get(rec, "created_by"), "created_by", 0,
                           "TASK_INVALID_CREATED_BY", err) == -1)
        return -1;

    v = json_object_get(rec, "depends_on");
    if (!json_is_array(v))
        return ac_task_err(err, "TASK_INVALID_DEPENDS_ON", "depends_on must be a JSON array");
    json_array_foreach(v, i, item) {
        if (check_id(item, "dependency", "TASK_INVALID_DEPENDENCY_ID", err) == -1)
            return -1;
        for (j = 0; j < i; j++)
            if (json_equal(json_array_get(v, j), item))
                return ac_task_err(err, "TASK_DUPLICATE_DEPENDENCY",
                                   "dependency is listed more than once: %s", json_string_value(item));
    }
    v = json_object_get(rec, "files_hint");
    if (!json_is_array(v))
        return ac_task_err(err, "TASK_INVALID_FILES_HINT", "files_hint must be a JSON array");
    json_array_foreach(v, i, item)
        if (check_hint(item, chfd, err) == -1)
            return -1;
    v = json_object_get(rec, "acceptance");
    if (!json_is_array(v))
        return ac_task_err(err, "TASK_INVALID_ACCEPTANCE", "acceptance must be a JSON array");
    json_array_foreach(v, i, item)
        if (ac_task_text_check(item, "acceptance item", 0, "TASK_INVALID_ACCEPTANCE", err) == -1)
            return -1;

    v = json_object_get(rec, "lease_expires_at");
    if (!json_is_null(v) &&
        ac_task_time_check(v, "lease_expires_at", "TASK_INVALID_TIMESTAMP", err) == -1)
        return -1;
    v = json_object_get(rec, "branch");
    if (!json_is_null(v) && ac_task_text_check(v, "branch", 0, "TASK_INVALID_BRANCH", err) == -1)
        return -1;
    return ac_task_time_check(json_object_get(rec, "updated_at"), "updated_at",
                              "TASK_INVALID_TIMESTAMP", err);
}

int ac_task_validate(const json_t *rec, const char *filename, const char *channel, int chfd,
                     struct ac_err *err)
{
    const char *s;
    char a[300], b[300];
    size_t stem;

    if (ac_task_fields_check(rec, chfd, err) == -1)
        return -1;
    s = json_string_value(json_object_get(rec, "id"));
    if (filename) {
        stem = strlen(filename);
        if (stem > 5 && strcmp(filename + stem - 5, ".json") == 0)
            stem -= 5;
        if (strlen(s) != stem || strncmp(s, filename, stem) != 0)
            return ac_task_err(err, "TASK_RECORD_ID_MISMATCH", "task id %s does not match filename %s",
                               ac_py_repr(s, a, sizeof a), ac_py_repr(filename, b, sizeof b));
    }
    s = json_string_value(json_object_get(rec, "channel"));
    if (strcmp(s, channel) != 0)
        return ac_task_err(err, "TASK_CHANNEL_MISMATCH", "task channel %s does not match %s",
                           ac_py_repr(s, a, sizeof a), ac_py_repr(channel, b, sizeof b));
    return 0;
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
