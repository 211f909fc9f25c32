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

/* A string member, or NULL when absent/null; *bad when present but not a
 * string without NUL bytes. */
static const char *member_str(const json_t *obj, const char *key, int *bad)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
        *bad = 1;
        return NULL;
    }
    return json_string_value(v);
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
    return ac_err_code(err, "PATH_LOCK_INVALID_RECORD", "%s", msg);
}

/* Two timestamps stored under an alias must agree. Returns the value to
 * use (NULL if neither), *bad on disagreement or a wrong type. */
static const char *aliased(const json_t *obj, const char *key, const char *alias, int *bad,
                           int *disagree)
{
    int b1 = 0, b2 = 0;
    const char *a = member_str(obj, key, &b1), *b = member_str(obj, alias, &b2);
    if (b1 || b2) {
        *bad = 1;
        return NULL;
    }
    if (a && b && strcmp(a, b) != 0)
        *disagree = 1;
    return a ? a : b;
}

static int parse_record(const char *data, size_t len, const char *filename,
                        const char *channel, struct ac_lockrec *out, struct ac_err *err)
{
    static const char *const required[] = { "lock_id", "channel", "owner", "locked_at",
                                            "updated_at", "paths", NULL };
    char msg[AC_PYJSON_MSG_MAX], stem[256], shown_a[600], shown_b[600];
    const char *lock_id, *chan, *owner, *expires, *prev_owner, *prev_expires, *reason,
               *locked_at, *updated_at;
    json_t *root, *paths, *item;
    size_t flen = strlen(filename), i;
    int bad = 0, disagree = 0, flags = 0;
    int64_t us;

    memset(out, 0, sizeof *out);
    root = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    if (!root)
        return ac_err_code(err, "PATH_LOCK_INVALID_RECORD", "could not read lock record %s: %s",
                         filename, msg);
    if (!json_is_object(root)) {
        json_decref(root);
        return bad_record(err, "lock record must be a JSON object");
    }
    out->json = root;
    for (i = 0; required[i]; i++)
        if (!json_object_get(root, required[i]))
            goto missing;
    if (!json_object_get(root, "expires_at") && !json_object_get(root, "lease_expires_at"))
        goto missing;

    lock_id = member_str(root, "lock_id", &bad);
    snprintf(stem, sizeof stem, "%.*s", (int)(flen > 5 ? flen - 5 : 0), filename);
    if (bad || !lock_id || strcmp(lock_id, stem) != 0)
        return ac_err_code(err, "PATH_LOCK_INVALID_RECORD", "lock id does not match filename '%s'",
                         filename);

    chan = member_str(root, "channel", &bad);
    if (bad || !chan || strcmp(chan, channel) != 0) {
        if (bad || !chan)
            return bad_record(err, "lock channel must be a string");
        ac_py_repr(chan, shown_a, sizeof shown_a);
        ac_py_repr(channel, shown_b, sizeof shown_b);
        return ac_err_code(err, "PATH_LOCK_INVALID_RECORD", "lock channel %s does not match %s",
                         shown_a, shown_b);
    }
    owner = member_str(root, "owner", &bad);
    if (bad || !owner || !*owner)
        return bad_record(err, "lock owner must be a non-empty string");
    locked_at = member_str(root, "locked_at", &bad);
    updated_at = member_str(root, "updated_at", &bad);
    if (bad || !locked_at || !updated_at)
        return bad_record(err, "lock timestamps must be strings");

    expires = aliased(root, "expires_at", "lease_expires_at", &bad, &disagree);
    if (bad || !expires)
        return bad_record(err, "lock expiry must be a string");
    if (disagree)
        return bad_record(err, "expires_at and lease_expires_at disagree");
    if (ac_isotime_parse(expires, strlen(expires), &us, &flags) == -1 ||
        !(flags & AC_ISOTIME_HAS_OFFSET))
        return bad_record(err, "expires_at must include an explicit UTC offset");
    out->expires_us = us;

    prev_owner = member_str(root, "previous_owner", &bad);
    reason = member_str(root, "recovery_reason", &bad);
    prev_expires = aliased(root, "previous_expires_at", "previous_lease_expires_at", &bad,
                           &disagree);
    if (bad || !((prev_owner && prev_expires && reason) || (!prev_owner && !prev_expires && !reason)))
        return bad_record(err,
                          "previous owner, expiry, and recovery reason must be recorded together");
    if (disagree)
        return bad_record(err,
                          "previous_expires_at and previous_lease_expires_at disagree");

    paths = json_object_get(root, "paths");
    if (!json_is_array(paths) || json_array_size(paths) == 0)
        return bad_record(err, "lock paths must be a non-empty list");
    json_array_foreach(paths, i, item) {
        const char *disp, *norm, *kind;
        int pbad = 0;
        if (!json_is_object(item) || !json_object_get(item, "display_path") ||
            !json_object_get(item, "normalized_path") || !json_object_get(item, "kind"))
            goto missing;
        disp = member_str(item, "display_path", &pbad);
        norm = member_str(item, "normalized_path", &pbad);
        kind = member_str(item, "kind", &pbad);
        if (pbad || !disp || !norm || !kind)
            return bad_record(err, "lock path entries must hold strings");
        if (!ac_pathlock_path_canonical(norm))
            return bad_record(err, "normalized_path is not workspace-relative");
        if (strcmp(kind, "file") != 0 && strcmp(kind, "directory") != 0)
            return bad_record(err, "path kind must be file or directory");
    }

    /* Valid: the fields point into out->json, which the record keeps
     * (50 records are read by every command: no copies). */
    out->paths = calloc(json_array_size(paths), sizeof *out->paths);
    if (!out->paths)
        goto oom;
    out->borrowed = 1;
    out->lock_id = (char *)lock_id;
    out->channel = (char *)chan;
    out->owner = (char *)owner;
    out->expires_at = (char *)expires;
    out->locked_at = (char *)locked_at;
    out->updated_at = (char *)updated_at;
    out->previous_owner = (char *)prev_owner;
    out->previous_expires_at = (char *)prev_expires;
    out->recovery_reason = (char *)reason;
    json_array_foreach(paths, i, item) {
        struct ac_lockpath *p = &out->paths[out->npaths++];
        p->display = (char *)json_string_value(json_object_get(item, "display_path"));
        p->normalized = (char *)json_string_value(json_object_get(item, "normalized_path"));
        p->is_dir = strcmp(json_string_value(json_object_get(item, "kind")), "directory") == 0;
    }
    return 0;

missing:
    return bad_record(err, "lock record is missing required fields");
oom:
    return ac_err_sys(err, ENOMEM, NULL, "could not read lock record %s", filename);
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
