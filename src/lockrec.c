/*
 * lockrec.c - path-lock records: parse and validate, encode, overlap; see
 * include/agentchat/lockrec.h. Pure functions (no store): the path-lock
 * operations (pathlock.c) and the folder's fsck use them.
 */
#include "agentchat/lockrec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/isotime.h"
#include "agentchat/json.h"
#include "agentchat/pathnorm.h"
#include "agentchat/pyjson.h"
#include "agentchat/pystr.h"
#include "agentchat/taskrec.h"
#include "agentchat/utf8.h"

/* PATH_LOCK_* errors: the one setter of err.h (exit 1). */
#define ac_pl_err ac_err_code

/* json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) */
static const struct ac_json_style record_style = { 2, 0, 1, ",", ": " };

/* ---------------------------------------------------------------- records */

void ac_lockpath_free(struct ac_lockpath *p)
{
    free(p->display);
    free(p->normalized);
    p->display = p->normalized = NULL;
}

void ac_lockrec_free(struct ac_lockrec *r)
{
    size_t i;
    if (!r)
        return;
    if (r->borrowed) {              /* the strings live in r->json */
        free(r->paths);
        json_decref(r->json);
        memset(r, 0, sizeof *r);
        return;
    }
    free(r->lock_id);
    free(r->channel);
    free(r->owner);
    free(r->expires_at);
    free(r->locked_at);
    free(r->updated_at);
    free(r->previous_owner);
    free(r->previous_expires_at);
    free(r->recovery_reason);
    for (i = 0; i < r->npaths; i++)
        ac_lockpath_free(&r->paths[i]);
    free(r->paths);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

void ac_locklist_free(struct ac_locklist *l)
{
    size_t i;
    for (i = 0; i < l->n; i++)
        ac_lockrec_free(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

int ac_lockrec_expired(const struct ac_lockrec *r, int64_t now_us)
{
    return r->expires_us <= now_us;
}

int ac_pathlock_path_canonical(const char *p)
{
    const char *s;
    if (strcmp(p, ".") == 0)
        return 1;
    if (ac_relpath_problem(p))
        return 0;
    /* No empty or "." segment, no trailing '/': what Path.as_posix() of a
     * resolved, relative path looks like. */
    for (s = p;;) {
        size_t n = strcspn(s, "/");
        if (n == 0 || (n == 1 && s[0] == '.'))
            return 0;
        s += n;
        if (*s == '\0')
            return 1;
        s++;
    }
}

static int bad_record(struct ac_err *err, const char *msg)
{
    return ac_pl_err(err, "PATH_LOCK_INVALID_RECORD", "%s", msg);
}

/* The Python tool's _is_forbidden_text_character over a whole string:
 * C0, DEL, C1 (and a NUL inside the JSON string). */
static int forbidden_text(const json_t *v)
{
    const unsigned char *p = (const unsigned char *)json_string_value(v);
    size_t len = json_string_length(v), i = 0;
    while (i < len) {
        uint32_t cp = p[i];
        size_t n = 1;
        if (p[i] >= 0x80 && (n = ac_utf8_decode(p + i, len - i, &cp)) == 0)
            return 1;
        if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
            return 1;
        i += n;
    }
    return 0;
}

/* A safe identity ([A-Za-z0-9][A-Za-z0-9._-]*) as a JSON string. */
static int identity_value(const json_t *v)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) != json_string_length(v) || !*s)
        return 0;
    return ac_safe_name(s);
}

/* A timestamp field (_timestamp): a string datetime.fromisoformat()
 * reads with an offset; *us its instant. */
static int record_time(const json_t *v, const char *field, int64_t *us, struct ac_err *err)
{
    const char *s = json_string_value(v);
    int flags = 0;
    if (!s || ac_isotime_parse(s, json_string_length(v), us, &flags) == -1 ||
        !(flags & AC_ISOTIME_HAS_OFFSET))
        return ac_pl_err(err, "PATH_LOCK_INVALID_TIMESTAMP", "%s must be an ISO-8601 string", field);
    return 0;
}

/* The value of `key`, else of its alias (data.get(key, data.get(alias))). */
static const json_t *with_alias(const json_t *o, const char *key, const char *alias)
{
    const json_t *v = json_object_get(o, key);
    return v ? v : json_object_get(o, alias);
}

/* LockedPath.from_dict() of one entry of "paths". */
static int check_path_entry(const json_t *item, struct ac_err *err)
{
    static const char *const fields[] = { "normalized_path", "display_path", "kind" };
    const json_t *np, *dp, *kind;
    const char *key;
    json_t *v;
    size_t i;

    if (!json_is_object(item) || ac_pyjson_is_nonfinite(item))
        return bad_record(err, "lock path must be an object");
    json_object_foreach((json_t *)item, key, v) {
        for (i = 0; i < 3 && strcmp(key, fields[i]) != 0; i++)
            ;
        if (i == 3)
            return bad_record(err, "lock path contains unknown fields");
    }
    for (i = 0; i < 3; i++)
        if (!json_object_get(item, fields[i]))
            return bad_record(err, "lock path is missing required fields");
    np = json_object_get(item, "normalized_path");
    dp = json_object_get(item, "display_path");
    kind = json_object_get(item, "kind");
    if (!json_is_string(np) || json_string_length(np) == 0)
        return bad_record(err, "normalized_path must be non-empty text");
    if (forbidden_text(np))
        return bad_record(err, "normalized_path contains a forbidden control character");
    if (!ac_pathlock_path_canonical(json_string_value(np)))
        return bad_record(err, "normalized_path is not workspace-relative");
    if (!json_is_string(dp) || json_string_length(dp) == 0 || forbidden_text(dp))
        return bad_record(err, "display_path must be safe non-empty text");
    if (!json_is_string(kind) || (strcmp(json_string_value(kind), "file") != 0 &&
                                  strcmp(json_string_value(kind), "directory") != 0))
        return bad_record(err, "path kind must be file or directory");
    return 0;
}

/* PathLockRecord.from_dict() and the checks of _read_record, in the
 * Python tool's order (the first problem is the error). */
static int parse_record(const char *data, size_t len, const char *filename,
                        const char *channel, struct ac_lockrec *out, struct ac_err *err)
{
    static const char *const fields[] = { "lock_id", "channel", "owner", "paths", "expires_at",
                                           "locked_at", "updated_at", "previous_owner",
                                           "previous_expires_at", "recovery_reason",
                                           "lease_expires_at", "previous_lease_expires_at", NULL };
    char msg[AC_PYJSON_MSG_MAX], shown_a[600], shown_b[600];
    const json_t *expires, *prev_owner, *prev_expires, *reason, *v;
    json_t *root, *paths, *item;
    const char *key;
    size_t flen = strlen(filename), i, k;
    int64_t us;

    memset(out, 0, sizeof *out);
    root = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    if (!root)
        return ac_pl_err(err, "PATH_LOCK_INVALID_RECORD", "could not read lock record %s: %s",
                         filename, msg);
    out->json = root;
    if (!json_is_object(root) || ac_pyjson_is_nonfinite(root))
        return bad_record(err, "lock record must be an object");
    for (i = 0; i < 7; i++)
        if (!json_object_get(root, fields[i]) &&
            !(i == 4 && json_object_get(root, "lease_expires_at")))
            return bad_record(err, "lock record is missing required fields");
    json_object_foreach(root, key, v) {
        for (k = 0; fields[k] && strcmp(key, fields[k]) != 0; k++)
            ;
        if (!fields[k])
            return bad_record(err, "lock record contains unknown fields");
    }
    if (json_object_get(root, "expires_at") && json_object_get(root, "lease_expires_at") &&
        !json_equal(json_object_get(root, "expires_at"), json_object_get(root, "lease_expires_at")))
        return bad_record(err, "expires_at and lease_expires_at aliases disagree");
    if (json_object_get(root, "previous_expires_at") && json_object_get(root, "previous_lease_expires_at") &&
        !json_equal(json_object_get(root, "previous_expires_at"),
                    json_object_get(root, "previous_lease_expires_at")))
        return bad_record(err, "previous expiry aliases disagree");
    paths = json_object_get(root, "paths");
    if (!json_is_array(paths))
        return bad_record(err, "lock paths must be an array");
    json_array_foreach(paths, i, item)
        if (check_path_entry(item, err) == -1)
            return -1;
    if (!identity_value(json_object_get(root, "lock_id")))
        return ac_pl_err(err, "PATH_LOCK_INVALID_LOCK_ID", "lock_id must be a safe identity");
    if (!identity_value(json_object_get(root, "channel")))
        return ac_pl_err(err, "PATH_LOCK_INVALID_CHANNEL", "channel must be a safe identity");
    if (!identity_value(json_object_get(root, "owner")))
        return ac_pl_err(err, "PATH_LOCK_INVALID_OWNER", "owner must be a safe identity");
    if (json_array_size(paths) == 0)
        return bad_record(err, "lock must contain at least one path");
    expires = with_alias(root, "expires_at", "lease_expires_at");
    if (record_time(expires, "expires_at", &out->expires_us, err) == -1 ||
        record_time(json_object_get(root, "locked_at"), "locked_at", &us, err) == -1 ||
        record_time(json_object_get(root, "updated_at"), "updated_at", &us, err) == -1)
        return -1;
    prev_owner = json_object_get(root, "previous_owner");
    if (prev_owner && !json_is_null(prev_owner) && !identity_value(prev_owner))
        return ac_pl_err(err, "PATH_LOCK_INVALID_OWNER", "previous_owner must be a safe identity");
    prev_expires = with_alias(root, "previous_expires_at", "previous_lease_expires_at");
    if (prev_expires && !json_is_null(prev_expires) &&
        record_time(prev_expires, "previous_expires_at", &us, err) == -1)
        return -1;
    reason = json_object_get(root, "recovery_reason");
    if (reason && !json_is_null(reason)) {
        size_t start, end;
        const char *r = json_string_value(reason);
        if (r)
            ac_py_strip(r, json_string_length(reason), &start, &end);
        if (!r || start >= end)
            return ac_pl_err(err, "PATH_LOCK_INVALID_REASON", "recovery reason must not be empty");
        if (forbidden_text(reason))
            return ac_pl_err(err, "PATH_LOCK_INVALID_REASON",
                             "recovery reason contains a forbidden control character");
    }
    {
        int a = prev_owner && !json_is_null(prev_owner), b = prev_expires && !json_is_null(prev_expires),
            c = reason && !json_is_null(reason);
        if ((a || b || c) && !(a && b && c))
            return bad_record(err, "previous owner, expiry, and recovery reason must be recorded together");
    }
    if (strcmp(json_string_value(json_object_get(root, "channel")), channel) != 0) {
        ac_py_repr(json_string_value(json_object_get(root, "channel")), shown_a, sizeof shown_a);
        ac_py_repr(channel, shown_b, sizeof shown_b);
        return ac_pl_err(err, "PATH_LOCK_INVALID_RECORD", "lock channel %s does not match %s",
                         shown_a, shown_b);
    }
    if (flen <= 5 || strlen(json_string_value(json_object_get(root, "lock_id"))) != flen - 5 ||
        strncmp(json_string_value(json_object_get(root, "lock_id")), filename, flen - 5) != 0) {
        ac_py_repr(filename, shown_a, sizeof shown_a);
        return ac_pl_err(err, "PATH_LOCK_INVALID_RECORD", "lock id does not match filename %s", shown_a);
    }

    /* Valid: the fields point into out->json, which the record keeps
     * (50 records are read by every command: no copies). */
    out->paths = calloc(json_array_size(paths), sizeof *out->paths);
    if (!out->paths)
        return ac_err_sys(err, ENOMEM, NULL, "could not read lock record %s", filename);
    out->borrowed = 1;
    out->lock_id = (char *)json_string_value(json_object_get(root, "lock_id"));
    out->channel = (char *)json_string_value(json_object_get(root, "channel"));
    out->owner = (char *)json_string_value(json_object_get(root, "owner"));
    out->expires_at = (char *)json_string_value(expires);
    out->locked_at = (char *)json_string_value(json_object_get(root, "locked_at"));
    out->updated_at = (char *)json_string_value(json_object_get(root, "updated_at"));
    out->previous_owner = (char *)json_string_value(prev_owner);
    out->previous_expires_at = (char *)json_string_value(prev_expires);
    out->recovery_reason = (char *)json_string_value(reason);
    json_array_foreach(paths, i, item) {
        struct ac_lockpath *p = &out->paths[out->npaths++];
        p->display = (char *)json_string_value(json_object_get(item, "display_path"));
        p->normalized = (char *)json_string_value(json_object_get(item, "normalized_path"));
        p->is_dir = strcmp(json_string_value(json_object_get(item, "kind")), "directory") == 0;
    }
    return 0;
}

int ac_lockrec_parse(const char *data, size_t len, const char *filename,
                     const char *channel, struct ac_lockrec *out, struct ac_err *err)
{
    if (parse_record(data, len, filename, channel, out, err) == 0)
        return 0;
    ac_lockrec_free(out);
    return -1;
}

/* The record's paths as the JSON array of records and audit bodies. */
json_t *ac_lockrec_paths_json(const struct ac_lockrec *r)
{
    json_t *arr, *kept = r->json ? json_object_get(r->json, "paths") : NULL;
    size_t i;
    if (kept)
        return json_deep_copy(kept);    /* hand-made records keep their bytes */
    arr = json_array();
    for (i = 0; arr && i < r->npaths; i++) {
        json_t *o = json_object();
        if (!o || json_array_append_new(arr, o) == -1 ||
            json_object_set_new(o, "display_path", json_string(r->paths[i].display)) == -1 ||
            json_object_set_new(o, "kind",
                                json_string(r->paths[i].is_dir ? "directory" : "file")) == -1 ||
            json_object_set_new(o, "normalized_path", json_string(r->paths[i].normalized)) == -1) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

char *ac_lockrec_encode(const struct ac_lockrec *r, size_t *len)
{
    json_t *o = json_object(), *paths = ac_lockrec_paths_json(r);
    char *text = NULL;
    if (!o || !paths ||
        json_object_set_new(o, "channel", json_string(r->channel)) == -1 ||
        json_object_set_new(o, "expires_at", json_string(r->expires_at)) == -1 ||
        json_object_set_new(o, "lock_id", json_string(r->lock_id)) == -1 ||
        json_object_set_new(o, "locked_at", json_string(r->locked_at)) == -1 ||
        json_object_set_new(o, "owner", json_string(r->owner)) == -1 ||
        json_object_set(o, "paths", paths) == -1 ||
        json_object_set_new(o, "previous_expires_at", str_or_null(r->previous_expires_at)) == -1 ||
        json_object_set_new(o, "previous_owner", str_or_null(r->previous_owner)) == -1 ||
        json_object_set_new(o, "recovery_reason", str_or_null(r->recovery_reason)) == -1 ||
        json_object_set_new(o, "updated_at", json_string(r->updated_at)) == -1)
        goto out;
    text = ac_json_dump_line(o, &record_style, len);
out:
    json_decref(paths);
    json_decref(o);
    if (!text)
        errno = ENOMEM;
    return text;
}

int ac_pathlock_overlaps(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (strcmp(a, ".") == 0 || strcmp(b, ".") == 0)
        return 1;
    if (la == lb)
        return strcmp(a, b) == 0;
    if (la < lb)
        return strncmp(a, b, la) == 0 && b[la] == '/';
    return strncmp(a, b, lb) == 0 && a[lb] == '/';
}
