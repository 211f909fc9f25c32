/*
 * pathlock.c - path locks: validation, records, overlap and the lock,
 * check, unlock, recover and recover-pending operations; see pathlock.h.
 * The journal lives in pathlock_journal.c.
 *
 * Every operation runs as one session: validate the arguments that need
 * no file (no I/O, so a refused request writes nothing, not even the mutex
 * file), take the flock mutex .path-locks.lock, refuse while a journal is
 * pending, read and validate the records the operation reads, decide, and
 * (for a mutation) run the journaled change. Records are read again on
 * every command: the folder is the only state, and the Python tool may
 * have changed it in between.
 *
 * The order of the checks is the Python tool's (path_locks.py), so that a
 * request with several problems gets the same first error from both:
 *   lock     owner, paths (each, then its overlap with the ones before),
 *            journal, records, conflicts, duration
 *   check    paths, owner, journal, records
 *   unlock   owner, journal, target (a lock id alone, or every *.json for
 *            a path), holder
 *   recover  owner, reason, journal, target, expiry, records (conflicts
 *            with the other locks), duration
 */
#include "pathlock_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/audit.h"
#include "agentchat/codec.h"
#include "agentchat/fault.h"
#include "agentchat/fsutil.h"
#include "agentchat/isotime.h"
#include "agentchat/json.h"
#include "agentchat/mutex.h"
#include "agentchat/pathnorm.h"
#include "agentchat/pyjson.h"
#include "agentchat/pystr.h"
#include "agentchat/utf8.h"

/* json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) */
static const struct ac_json_style record_style = { 2, 0, 1, ",", ": " };

/* ---------------------------------------------------------------- records */

static void path_free(struct ac_lockpath *p)
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
        path_free(&r->paths[i]);
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
    return ac_pathlock_check_owner(s, "x", NULL) == 0;
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
static json_t *paths_json(const struct ac_lockrec *r)
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
    json_t *o = json_object(), *paths = paths_json(r);
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
    text = ac_json_dump(o, &record_style, len);
    if (text)
        text[(*len)++] = '\n';      /* over the NUL: the length is what counts */
out:
    json_decref(paths);
    json_decref(o);
    if (!text)
        errno = ENOMEM;
    return text;
}

/* ---------------------------------------------------------- validation */

int ac_pathlock_check_owner(const char *owner, const char *what, struct ac_err *err)
{
    size_t i;
    for (i = 0; owner[i]; i++) {
        char c = owner[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
            break;
    }
    if (i == 0 || owner[i])
        return ac_pl_err(err, "PATH_LOCK_INVALID_OWNER", "%s must be a safe identity", what);
    return 0;
}

int ac_pathlock_check_duration(double seconds, int64_t *us, struct ac_err *err)
{
    int64_t now = ac_isotime_now_us(), at;
    int rc = ac_isotime_expiry(now, seconds, &at);
    if (rc == -1)
        return ac_pl_err(err, "PATH_LOCK_INVALID_DURATION", "lock duration must be positive");
    if (rc == -2)
        return ac_pl_err(err, "PATH_LOCK_INVALID_DURATION",
                         "lock duration is outside the supported timestamp range");
    *us = at - now;
    return 0;
}

int ac_pathlock_check_reason(const char *reason, struct ac_err *err)
{
    const unsigned char *p = (const unsigned char *)reason;
    size_t len = strlen(reason), start, end, i = 0;

    ac_py_strip(reason, len, &start, &end);
    if (start >= end)
        return ac_pl_err(err, "PATH_LOCK_INVALID_REASON", "recovery reason must not be empty");
    while (i < len) {
        uint32_t cp = p[i];
        size_t n = 1;
        if (p[i] >= 0x80 && (n = ac_utf8_decode(p + i, len - i, &cp)) == 0)
            break;                          /* not text: refuse like a control */
        if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
            break;
        i += n;
    }
    if (i < len)
        return ac_pl_err(err, "PATH_LOCK_INVALID_REASON",
                         "recovery reason contains a forbidden control character");
    return 0;
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

int ac_pathlock_normalize(int chfd, const char *path, struct ac_lockpath *out,
                          struct ac_err *err)
{
    size_t cap = strlen(path) + 4096;   /* links may lengthen it */
    const char *why;
    char *norm = malloc(cap);
    int is_dir = 0;

    memset(out, 0, sizeof *out);
    if (!norm)
        return ac_err_sys(err, ENOMEM, NULL, "could not normalize a path");
    if (ac_relpath_resolve(chfd, path, norm, cap, &is_dir, &why) == -1) {
        free(norm);
        return ac_pl_err(err, "PATH_LOCK_INVALID_PATH", "%s", why);
    }
    out->display = strdup(path);
    out->normalized = norm;
    out->is_dir = is_dir;
    if (!out->display) {
        path_free(out);
        return ac_err_sys(err, ENOMEM, NULL, "could not normalize a path");
    }
    return 0;
}

/* Normalize a request's paths in order (normalize_paths): each path is
 * checked, then compared with the ones before it, so an overlap is found
 * before a later path's own problem. */
static int normalize_all(int chfd, const char *const *paths, size_t n,
                         struct ac_lockpath **out, struct ac_err *err)
{
    struct ac_lockpath *v;
    size_t i, j;
    if (n == 0)
        return ac_pl_err(err, "PATH_LOCK_INVALID_PATH", "at least one path is required");
    v = calloc(n, sizeof *v);
    if (!v)
        return ac_err_sys(err, ENOMEM, NULL, "could not normalize paths");
    for (i = 0; i < n; i++) {
        if (ac_pathlock_normalize(chfd, paths[i], &v[i], err) == -1)
            goto fail;
        for (j = 0; j < i; j++)
            if (ac_pathlock_overlaps(v[i].normalized, v[j].normalized)) {
                ac_pl_err(err, "PATH_LOCK_CONFLICT",
                          "requested paths overlap within one lock request");
                goto fail;
            }
    }
    *out = v;
    return 0;
fail:
    for (i = 0; i < n; i++)
        path_free(&v[i]);
    free(v);
    return -1;
}

static void paths_free(struct ac_lockpath *v, size_t n)
{
    size_t i;
    if (!v)
        return;
    for (i = 0; i < n; i++)
        path_free(&v[i]);
    free(v);
}

/* ------------------------------------------------------------- sessions */

struct session {
    struct ac_chan *ch;
    int chfd;               /* borrowed from the channel */
    int ldfd;               /* locks/ or -1 when it does not exist */
    struct ac_mutex mx;
    int lenient;            /* session_load skips unreadable or bad records */
};

static int channel_fd(struct ac_chan *ch, struct ac_err *err)
{
    int fd = ac_chan_dirfd(ch);
    if (fd == -1)
        ac_pl_err(err, "PATH_LOCK_UNSUPPORTED",
                  "path locks need a file-system channel (store '%s')", ch->store->ops->name);
    return fd;
}

/* Take the mutex and open locks/ if it exists. A reader (`create` 0)
 * creates the mutex file only once it succeeded (session_keep): a failing
 * read leaves the folder as it was. */
static int session_open_mode(struct session *s, struct ac_chan *ch, int create, struct ac_err *err)
{
    int rc;
    s->ch = ch;
    s->ldfd = -1;
    s->lenient = 0;
    s->mx.fd = -1;
    s->chfd = channel_fd(ch, err);
    if (s->chfd == -1)
        return -1;
    rc = create ? ac_mutex_acquire(s->chfd, AC_PATHLOCK_MUTEX, &s->mx)
                : ac_mutex_acquire_reader(s->chfd, AC_PATHLOCK_MUTEX, &s->mx);
    if (rc == AC_MUTEX_TIMEOUT)
        return ac_pl_err(err, "PATH_LOCK_TIMEOUT", "could not acquire path-lock mutation lock");
    if (rc == -1) {
        if (errno == EINTR)
            return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
        return ac_err_sys(err, errno, NULL, "could not lock %s", AC_PATHLOCK_MUTEX);
    }
    s->ldfd = ac_open_dir_at(s->chfd, AC_PATHLOCK_DIR);
    if (s->ldfd == -1 && errno != ENOENT) {
        ac_err_sys(err, errno, NULL, "could not open %s/", AC_PATHLOCK_DIR);
        ac_mutex_release(&s->mx);
        return -1;
    }
    return 0;
}

static int session_open(struct session *s, struct ac_chan *ch, struct ac_err *err)
{
    return session_open_mode(s, ch, 1, err);
}

static void session_keep(struct session *s)
{
    ac_mutex_keep(s->chfd, AC_PATHLOCK_MUTEX, &s->mx);
}

/* Create locks/ when the first lock is about to be written (a refused
 * request leaves no directory behind). */
static int session_make_dir(struct session *s, struct ac_err *err)
{
    if (s->ldfd != -1)
        return 0;
    if (ac_sys_mkdirat(s->chfd, AC_PATHLOCK_DIR, 0755) == -1 && errno != EEXIST)
        return ac_err_sys(err, errno, NULL, "could not create %s/", AC_PATHLOCK_DIR);
    s->ldfd = ac_open_dir_at(s->chfd, AC_PATHLOCK_DIR);
    if (s->ldfd == -1)
        return ac_err_sys(err, errno, NULL, "could not open %s/", AC_PATHLOCK_DIR);
    return 0;
}

static void session_close(struct session *s)
{
    if (s->ldfd != -1)
        close(s->ldfd);
    s->ldfd = -1;
    ac_mutex_release(&s->mx);
}

/* Refuse while a journal exists (usable or not). */
static int session_gate(struct session *s, struct ac_err *err)
{
    struct ac_pl_journal j;
    int rc = ac_pl_journal_read(s->ldfd, &j, err);
    if (rc == -1)
        return -1;
    if (rc == 1) {
        ac_pl_journal_free(&j);
        return ac_pl_err(err, "PATH_LOCK_TRANSACTION_PENDING",
                         "a previous path-lock mutation needs explicit recovery");
    }
    return 0;
}

struct names {
    char **v;
    size_t n, cap;
    int oom;
    int any;            /* every "*.json" (a path target's scan), not only records */
};

/* Record names: "*.json" not starting with '.' or '_' (the journal, temps
 * and hidden files are not records). The first byte of each stored name is
 * 'r' for a regular file (as readdir saw it), '?' otherwise. */
static int name_cb(void *ctx, const char *name, unsigned char type)
{
    struct names *c = ctx;
    size_t len = strlen(name);
    if ((!c->any && (name[0] == '.' || name[0] == '_')) || len < 5 ||
        strcmp(name + len - 5, ".json") != 0)
        return 0;
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 32;
        char **nv = realloc(c->v, ncap * sizeof *nv);
        if (!nv) {
            c->oom = 1;
            return 1;
        }
        c->v = nv;
        c->cap = ncap;
    }
    if (!(c->v[c->n] = malloc(len + 2))) {
        c->oom = 1;
        return 1;
    }
    c->v[c->n][0] = type == DT_REG ? 'r' : '?';
    memcpy(c->v[c->n] + 1, name, len + 1);
    c->n++;
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a + 1, *(char *const *)b + 1);
}

/* Read a regular file that readdir reported as one: open, read, close
 * (no fstat: a short read of a regular file is its end). `buf` is reused
 * across records and grows as needed up to the cap. O_NOFOLLOW and
 * O_NONBLOCK keep a file swapped for a link or a FIFO meanwhile harmless.
 * errno is meaningful on -1. */
static int read_record(int ldfd, const char *name, char **buf, size_t *cap, size_t *len)
{
    size_t used = 0;
    int fd, saved;
    do
        fd = openat(ldfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    while (fd == -1 && errno == EINTR);
    if (fd == -1)
        return -1;
    for (;;) {
        ssize_t n;
        if (used == *cap) {
            size_t ncap = *cap ? *cap * 2 : 65536;
            char *nb;
            if (*cap > AC_PATHLOCK_FILE_CAP) {
                errno = EFBIG;
                goto fail;
            }
            if (!(nb = realloc(*buf, ncap + 1)))
                goto fail;
            *buf = nb;
            *cap = ncap;
        }
        n = read(fd, *buf + used, *cap - used);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            goto fail;
        }
        used += (size_t)n;
        if (n == 0 || used < *cap)
            break;
    }
    close(fd);
    (*buf)[used] = '\0';
    *len = used;
    return 0;
fail:
    saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

/* Python's str(OSError) for a record: "[Errno 21] Is a directory: '<path>'". */
static int record_os_error(struct session *s, const char *name, int e, struct ac_err *err)
{
    char path[1024], shown[1200];
    snprintf(path, sizeof path, "%s/%s/%s/%s", s->ch->store->root, s->ch->name,
             AC_PATHLOCK_DIR, name);
    ac_py_repr(path, shown, sizeof shown);
    return ac_pl_err(err, "PATH_LOCK_INVALID_RECORD", "could not read lock record %s: [Errno %d] %s: %s",
                     name, e, strerror(e), shown);
}

/* Read and validate the record file `name` (`reg`: readdir said it is a
 * regular file) into *out; `buf`/`cap` is a buffer reused across reads. */
static int load_one(struct session *s, const char *name, int reg, char **buf, size_t *cap,
                    struct ac_lockrec *out, struct ac_err *err)
{
    size_t len;
    int r;
    if (reg) {
        r = read_record(s->ldfd, name, buf, cap, &len);
    } else {                    /* not regular: let the careful reader say why */
        char *data = NULL;
        r = ac_read_file_at(s->ldfd, name, AC_PATHLOCK_FILE_CAP, &data, &len);
        if (r == 0) {
            free(*buf);
            *buf = data;
            *cap = len;
        }
    }
    if (r == -1)
        return record_os_error(s, name, errno, err);
    return ac_lockrec_parse(*buf, len, name, s->ch->name, out, err);
}

/* The names of locks/ (records, or with `any` every "*.json"), sorted. */
static int list_names(struct session *s, int any, struct names *c, struct ac_err *err)
{
    memset(c, 0, sizeof *c);
    c->any = any;
    if (s->ldfd == -1)
        return 0;
    if (ac_dir_walk(s->ldfd, name_cb, c) == -1 || c->oom)
        return ac_err_sys(err, c->oom ? ENOMEM : errno, NULL, "could not list %s/", AC_PATHLOCK_DIR);
    if (c->n > 1)
        qsort(c->v, c->n, sizeof *c->v, cmp_name);
    return 0;
}

static void names_free(struct names *c)
{
    size_t i;
    for (i = 0; i < c->n; i++)
        free(c->v[i]);
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* Read and validate every record (_read_all), in name order. */
static int session_load(struct session *s, struct ac_locklist *out, struct ac_err *err)
{
    struct names c;
    char *buf = NULL;
    size_t i, cap = 0;
    int rc = -1;

    out->v = NULL;
    out->n = 0;
    if (list_names(s, 0, &c, err) == -1)
        goto out;
    out->v = calloc(c.n ? c.n : 1, sizeof *out->v);
    if (!out->v) {
        ac_err_sys(err, ENOMEM, NULL, "could not read lock records");
        goto out;
    }
    for (i = 0; i < c.n; i++) {
        if (load_one(s, c.v[i] + 1, c.v[i][0] == 'r', &buf, &cap, &out->v[out->n], err) == 0) {
            out->n++;
        } else {
            ac_lockrec_free(&out->v[out->n]);
            if (!s->lenient)
                goto out;
            *err = (struct ac_err)AC_ERR_INIT;
        }
    }
    rc = 0;
out:
    names_free(&c);
    free(buf);
    if (rc == -1)
        ac_locklist_free(out);
    return rc;
}

/* The record named by `target` (_find_target): a lock id whose record
 * file exists is read alone; anything else is taken as a path (one that
 * cannot be normalized matches nothing) and every "*.json" of locks/ is
 * read and compared, a bad one failing the command. *out is owned by the
 * caller. */
static int find_target(struct session *s, const char *target, struct ac_lockrec *out,
                       struct ac_err *err)
{
    struct ac_lockpath lp;
    struct ac_err ignored = AC_ERR_INIT;
    struct ac_lockrec rec;
    struct names c;
    struct stat st;
    char shown[AC_ERR_MSG_MAX], name[300], *buf = NULL;
    size_t i, j, hits = 0, cap = 0;
    int rc = -1;

    memset(out, 0, sizeof *out);
    memset(&c, 0, sizeof c);
    if (s->ldfd != -1 && strlen(target) < 250 && ac_pathlock_check_owner(target, "x", NULL) == 0) {
        snprintf(name, sizeof name, "%s.json", target);
        if (fstatat(s->ldfd, name, &st, 0) == 0) {
            rc = load_one(s, name, S_ISREG(st.st_mode), &buf, &cap, out, err);
            free(buf);
            return rc;
        }
    }
    ac_err_quote(shown, sizeof shown, target, 900);
    if (ac_pathlock_normalize(s->chfd, target, &lp, &ignored) == -1)
        return ac_pl_err(err, "PATH_LOCK_NOT_FOUND", "lock record does not exist: %s", shown);
    if (list_names(s, 1, &c, err) == -1)
        goto out;
    for (i = 0; i < c.n; i++) {
        memset(&rec, 0, sizeof rec);
        if (load_one(s, c.v[i] + 1, c.v[i][0] == 'r', &buf, &cap, &rec, err) == -1) {
            ac_lockrec_free(&rec);
            goto out;
        }
        for (j = 0; j < rec.npaths && strcmp(rec.paths[j].normalized, lp.normalized) != 0; j++)
            ;
        if (j < rec.npaths && hits++ == 0) {
            *out = rec;
            continue;
        }
        ac_lockrec_free(&rec);
    }
    if (hits == 0)
        ac_pl_err(err, "PATH_LOCK_NOT_FOUND", "lock record does not exist: %s", shown);
    else if (hits > 1)
        ac_pl_err(err, "PATH_LOCK_CONFLICT", "path target matches multiple lock records: %s", shown);
    else
        rc = 0;
out:
    if (rc == -1)
        ac_lockrec_free(out);
    path_free(&lp);
    names_free(&c);
    free(buf);
    return rc;
}

/* The first record of `l` (but `skip`) whose paths overlap `lp`, raised as
 * the Python tool's _raise_conflict: RECOVERY_REQUIRED when any of the
 * overlapping records has expired, else CONFLICT. */
static int conflicts(const struct ac_locklist *l, const struct ac_lockpath *lp, size_t n,
                     const char *skip, const char *what, struct ac_err *err)
{
    int64_t now = ac_isotime_now_us();
    size_t i, j, k;
    int hit = 0, expired = 0;
    for (i = 0; i < l->n; i++) {
        int over = 0;
        if (skip && strcmp(l->v[i].lock_id, skip) == 0)
            continue;
        for (j = 0; j < l->v[i].npaths && !over; j++)
            for (k = 0; k < n && !over; k++)
                over = ac_pathlock_overlaps(l->v[i].paths[j].normalized, lp[k].normalized);
        if (over) {
            hit = 1;
            expired |= ac_lockrec_expired(&l->v[i], now);
        }
    }
    if (expired)
        return ac_pl_err(err, "PATH_LOCK_RECOVERY_REQUIRED",
                         "%s overlaps an expired lock; recover it explicitly", what);
    if (hit)
        return ac_pl_err(err, "PATH_LOCK_CONFLICT", "%s overlaps an active lock", what);
    return 0;
}

/* Move record i out of the list. */
static void take(struct ac_locklist *l, size_t i, struct ac_lockrec *out)
{
    if (out)
        *out = l->v[i];
    else
        ac_lockrec_free(&l->v[i]);
    memset(&l->v[i], 0, sizeof l->v[i]);
}

/* ------------------------------------------------------------ mutations */

struct mutation {
    const char *operation;      /* lock | unlock | recover */
    const char *event;
    const char *lock_id;
    const char *actor;
    const char *before;         /* record bytes before (NULL: no file) */
    size_t before_len;
    const char *after;          /* record bytes after (NULL: no file) */
    size_t after_len;
    json_t *audit;              /* the audit body, transaction_id added here */
};

/* Undo an applied-or-not change in process and drop the journal; a failure
 * leaves the journal for recover-pending. */
static void roll_back(struct session *s, const struct ac_pl_journal *j)
{
    if (ac_pl_restore_before(s->ldfd, j) == 0)
        ac_pl_journal_remove(s->ldfd);
}

/* Apply the change to the record file. errno is meaningful on -1.
 * The record's directory entry is made durable by the directory sync of
 * the next journal write (same directory), which must happen before the
 * audit message anyway; if a power cut loses the entry first, the journal
 * still says "prepared" or "applied" without an audit message, and the
 * rollback finds nothing to undo. */
static int apply(struct session *s, const struct ac_pl_journal *j)
{
    if (j->after)
        return ac_write_atomic(s->ldfd, j->target, j->after, j->after_len, 0644,
                               (strcmp(j->operation, "lock") == 0 ? AC_ATOMIC_NOREPLACE
                                                                  : AC_ATOMIC_REPLACE) |
                                   AC_ATOMIC_NO_DIRSYNC,
                               "pathlock.record");
    if (AC_FAULT("pathlock.record.unlink") == -1 || ac_sys_unlinkat(s->ldfd, j->target, 0) == -1)
        return -1;
    return 0;
}

static int run_mutation(struct session *s, const struct mutation *m, struct ac_err *err)
{
    struct ac_pl_journal j;
    int e;

    memset(&j, 0, sizeof j);
    if (ac_uuid4_hex(j.txid) == -1)
        return ac_err_sys(err, errno, NULL, "could not make a transaction id");
    snprintf(j.operation, sizeof j.operation, "%s", m->operation);
    snprintf(j.event, sizeof j.event, "%s", m->event);
    snprintf(j.target, sizeof j.target, "%s.json", m->lock_id);
    snprintf(j.phase, sizeof j.phase, "prepared");
    /* The journal borrows the caller's buffers (never freed here). */
    j.actor = (char *)m->actor;
    j.before = (char *)m->before;
    j.before_len = m->before_len;
    j.after = (char *)m->after;
    j.after_len = m->after_len;

    /* 1. prepared */
    if (ac_pl_journal_write(s->ldfd, &j, "prepared", 1, "pathlock.journal.prepared") == -1) {
        e = errno;
        if (e == EEXIST)
            return ac_pl_err(err, "PATH_LOCK_TRANSACTION_PENDING",
                             "a previous path-lock mutation needs explicit recovery");
        /* It may have been published before the failure (a failed
         * directory sync): nothing was applied, so it can go. */
        ac_pl_journal_remove(s->ldfd);
        return ac_err_sys(err, e, NULL, "could not write the path-lock journal");
    }
    /* 2. apply */
    if (apply(s, &j) == -1) {
        e = errno;
        if (e == EEXIST)            /* link() refused: nothing of ours to undo */
            ac_pl_journal_remove(s->ldfd);
        else
            roll_back(s, &j);
        return ac_err_sys(err, e, NULL, "could not write lock record %s", j.target);
    }
    /* 3. applied */
    if (ac_pl_journal_write(s->ldfd, &j, "applied", 0, "pathlock.journal.applied") == -1) {
        e = errno;
        roll_back(s, &j);
        return ac_err_sys(err, e, NULL, "could not update the path-lock journal");
    }
    snprintf(j.phase, sizeof j.phase, "applied");
    /* 4. the audit message */
    if (json_object_set_new(m->audit, "transaction_id", json_string(j.txid)) == -1)
        return ac_err_sys(err, ENOMEM, NULL, "could not compose the audit message");
    if (ac_audit_post(s->ch, m->actor, m->event, m->lock_id, m->audit, NULL, err) == -1) {
        /* The post may have failed after its message was published (a
         * failed directory sync): decide as recover-pending would. */
        struct ac_err rerr = AC_ERR_INIT;
        enum ac_pathlock_outcome oc = AC_PENDING_NONE;
        char why[AC_ERR_MSG_MAX];
        if (ac_pl_journal_resolve(s->ch, s->ldfd, &j, AC_RESOLVE_AUTO, &oc, &rerr) == 0) {
            if (oc == AC_PENDING_COMPLETED) {
                memset(err, 0, sizeof *err);
                return 0;
            }
            snprintf(why, sizeof why, "%s", err->msg);
            return ac_pl_err(err, "PATH_LOCK_AUDIT_FAILED", "path lock audit event could not be written: %s",
                             why);
        }
        return ac_pl_err(err, "PATH_LOCK_AUDIT_ROLLBACK_FAILED",
                         "path lock mutation failed and rollback failed: %s", rerr.msg);
    }
    /* 5. published, 6. done. Both are only bookkeeping: an applied journal
     * whose audit message exists resolves exactly like a published one,
     * so neither needs its own directory sync nor can fail the command. */
    ac_pl_journal_write(s->ldfd, &j, "published", 0, "pathlock.journal.published");
    if (ac_pl_journal_remove(s->ldfd) == -1)
        return ac_pl_err(err, "PATH_LOCK_TRANSACTION_PENDING",
                         "the path-lock change was applied and announced, but its journal "
                         "could not be removed (%s); run recover-pending", strerror(errno));
    return 0;
}

/* The audit body fields common to the three events. */
static json_t *audit_body(const char *channel, const char *event, const struct ac_lockrec *r,
                          const char *updated_at)
{
    json_t *o = json_object(), *paths = paths_json(r);
    if (!o || !paths ||
        json_object_set_new(o, "channel", json_string(channel)) == -1 ||
        json_object_set_new(o, "event", json_string(event)) == -1 ||
        json_object_set_new(o, "expires_at", json_string(r->expires_at)) == -1 ||
        json_object_set_new(o, "lease_expires_at", json_string(r->expires_at)) == -1 ||
        json_object_set_new(o, "lock_id", json_string(r->lock_id)) == -1 ||
        json_object_set_new(o, "owner", json_string(r->owner)) == -1 ||
        json_object_set(o, "paths", paths) == -1 ||
        json_object_set_new(o, "updated_at", json_string(updated_at)) == -1) {
        json_decref(paths);
        json_decref(o);
        return NULL;
    }
    json_decref(paths);
    return o;
}

/* Read a record file's raw bytes (the journal's `before`). */
static char *record_bytes(struct session *s, const char *lock_id, size_t *len, struct ac_err *err)
{
    char name[300], *data;
    snprintf(name, sizeof name, "%s.json", lock_id);
    if (ac_read_file_at(s->ldfd, name, AC_PATHLOCK_FILE_CAP, &data, len) == -1) {
        record_os_error(s, name, errno, err);
        return NULL;
    }
    return data;
}

/* ------------------------------------------------------------ operations */

int ac_pathlock_lock(struct ac_chan *ch, const char *const *paths, size_t n,
                     const char *owner, double lease, struct ac_lockrec *out,
                     struct ac_err *err)
{
    struct session s;
    struct ac_locklist l = { NULL, 0 };
    struct ac_lockpath *lp = NULL;
    struct ac_lockrec rec;
    struct mutation m;
    char id[33], now_s[48], exp_s[48], *bytes = NULL;
    size_t blen = 0;
    int64_t dur, now;
    int chfd, rc = -1, opened = 0;

    memset(&rec, 0, sizeof rec);
    memset(&m, 0, sizeof m);
    if (out)
        memset(out, 0, sizeof *out);
    /* The Python tool's order: owner, paths (each, then its overlap with
     * the ones before), the journal, the records, conflicts, duration. */
    if (ac_pathlock_check_owner(owner, "owner", err) == -1)
        return -1;
    if ((chfd = channel_fd(ch, err)) == -1 || normalize_all(chfd, paths, n, &lp, err) == -1)
        return -1;
    if (session_open(&s, ch, err) == -1)
        goto out;
    opened = 1;
    if (session_gate(&s, err) == -1 || session_load(&s, &l, err) == -1 ||
        conflicts(&l, lp, n, NULL, "lock request", err) == -1 ||
        ac_pathlock_check_duration(lease, &dur, err) == -1)
        goto out;
    now = ac_isotime_now_us();

    if (ac_uuid4_hex(id) == -1) {
        ac_err_sys(err, errno, NULL, "could not make a lock id");
        goto out;
    }
    ac_isotime_format(now, 6, now_s);
    ac_isotime_format(now + dur, 6, exp_s);
    if (!(rec.lock_id = strdup(id)) || !(rec.channel = strdup(ch->name)) ||
        !(rec.owner = strdup(owner)) || !(rec.expires_at = strdup(exp_s)) ||
        !(rec.locked_at = strdup(now_s)) || !(rec.updated_at = strdup(now_s))) {
        ac_err_sys(err, ENOMEM, NULL, "could not compose the lock record");
        goto out;
    }
    rec.expires_us = now + dur;
    rec.paths = lp;
    rec.npaths = n;
    lp = NULL;
    bytes = ac_lockrec_encode(&rec, &blen);
    m.audit = bytes ? audit_body(ch->name, "path.locked", &rec, now_s) : NULL;
    if (!m.audit) {
        ac_err_sys(err, ENOMEM, NULL, "could not compose the lock record");
        goto out;
    }
    if (session_make_dir(&s, err) == -1)
        goto out;
    m.operation = "lock";
    m.event = "path.locked";
    m.lock_id = id;
    m.actor = owner;
    m.after = bytes;
    m.after_len = blen;
    if (run_mutation(&s, &m, err) == -1)
        goto out;
    if (out) {
        *out = rec;
        memset(&rec, 0, sizeof rec);
    }
    rc = 0;
out:
    if (opened)
        session_close(&s);
    json_decref(m.audit);
    free(bytes);
    ac_lockrec_free(&rec);
    ac_locklist_free(&l);
    paths_free(lp, n);
    return rc;
}

int ac_pathlock_check(struct ac_chan *ch, const char *const *paths, size_t n,
                      const char *owner, struct ac_locklist *out, struct ac_err *err)
{
    struct session s;
    struct ac_locklist l = { NULL, 0 };
    struct ac_lockpath *lp = NULL;
    size_t i, j, k;
    int chfd, rc = -1;

    out->v = NULL;
    out->n = 0;
    /* The Python tool checks the paths before the owner here. */
    if ((chfd = channel_fd(ch, err)) == -1 || normalize_all(chfd, paths, n, &lp, err) == -1)
        return -1;
    if (owner && ac_pathlock_check_owner(owner, "owner", err) == -1) {
        paths_free(lp, n);
        return -1;
    }
    if (session_open_mode(&s, ch, 0, err) == -1) {
        paths_free(lp, n);
        return -1;
    }
    if (session_gate(&s, err) == -1 || session_load(&s, &l, err) == -1)
        goto out;
    out->v = calloc(l.n ? l.n : 1, sizeof *out->v);
    if (!out->v) {
        ac_err_sys(err, ENOMEM, NULL, "could not check paths");
        goto out;
    }
    for (i = 0; i < l.n; i++) {
        int hit = 0;
        for (j = 0; j < l.v[i].npaths && !hit; j++)
            for (k = 0; k < n && !hit; k++)
                hit = ac_pathlock_overlaps(l.v[i].paths[j].normalized, lp[k].normalized);
        if (hit)
            take(&l, i, &out->v[out->n++]);
    }
    rc = 0;
    session_keep(&s);
out:
    session_close(&s);
    ac_locklist_free(&l);
    paths_free(lp, n);
    if (rc == -1)
        ac_locklist_free(out);
    return rc;
}

int ac_pathlock_unlock(struct ac_chan *ch, const char *target, const char *owner,
                       struct ac_lockrec *out, struct ac_err *err)
{
    struct session s;
    struct ac_lockrec rec;
    struct mutation m;
    char now_s[48], *before = NULL;
    size_t blen = 0;
    int rc = -1;

    memset(&rec, 0, sizeof rec);
    memset(&m, 0, sizeof m);
    if (out)
        memset(out, 0, sizeof *out);
    if (ac_pathlock_check_owner(owner, "owner", err) == -1)
        return -1;
    if (session_open(&s, ch, err) == -1)
        return -1;
    if (session_gate(&s, err) == -1 || find_target(&s, target, &rec, err) == -1)
        goto out;
    if (strcmp(rec.owner, owner) != 0) {
        char shown[600];
        ac_err_quote(shown, sizeof shown, rec.owner, 200);
        ac_pl_err(err, "PATH_LOCK_OWNER_MISMATCH", "lock %s belongs to %s", rec.lock_id, shown);
        goto out;
    }
    if (!(before = record_bytes(&s, rec.lock_id, &blen, err)))
        goto out;
    ac_isotime_format(ac_isotime_now_us(), 6, now_s);
    m.audit = audit_body(ch->name, "path.lock.unlocked", &rec, now_s);
    if (!m.audit) {
        ac_err_sys(err, ENOMEM, NULL, "could not compose the audit message");
        goto out;
    }
    m.operation = "unlock";
    m.event = "path.lock.unlocked";
    m.lock_id = rec.lock_id;
    m.actor = owner;
    m.before = before;
    m.before_len = blen;
    if (run_mutation(&s, &m, err) == -1)
        goto out;
    if (out) {
        *out = rec;
        memset(&rec, 0, sizeof rec);
    }
    rc = 0;
out:
    session_close(&s);
    json_decref(m.audit);
    free(before);
    ac_lockrec_free(&rec);
    return rc;
}

int ac_pathlock_recover(struct ac_chan *ch, const char *target, const char *owner,
                        const char *reason, double lease, struct ac_lockrec *out,
                        struct ac_err *err)
{
    struct session s;
    struct ac_locklist l = { NULL, 0 };
    struct ac_lockrec old, rec;
    struct mutation m;
    char now_s[48], exp_s[48], *before = NULL, *after = NULL;
    size_t blen = 0, alen = 0;
    int64_t dur, now;
    int rc = -1;

    memset(&old, 0, sizeof old);
    memset(&rec, 0, sizeof rec);
    memset(&m, 0, sizeof m);
    if (out)
        memset(out, 0, sizeof *out);
    /* The Python tool's order: owner, reason, the journal, the target, its
     * expiry, then every record (conflicts with the others), duration. */
    if (ac_pathlock_check_owner(owner, "owner", err) == -1 ||
        ac_pathlock_check_reason(reason, err) == -1)
        return -1;
    if (session_open(&s, ch, err) == -1)
        return -1;
    if (session_gate(&s, err) == -1 || find_target(&s, target, &old, err) == -1)
        goto out;
    now = ac_isotime_now_us();
    if (!ac_lockrec_expired(&old, now)) {
        ac_pl_err(err, "PATH_LOCK_NOT_STALE", "lock %s is still active", old.lock_id);
        goto out;
    }
    if (session_load(&s, &l, err) == -1 ||
        conflicts(&l, old.paths, old.npaths, old.lock_id, "recovery request", err) == -1 ||
        ac_pathlock_check_duration(lease, &dur, err) == -1)
        goto out;
    if (!(before = record_bytes(&s, old.lock_id, &blen, err)))
        goto out;

    /* The lock id and its paths (bytes kept) stay; the owner, the lease
     * and locked_at change (the Python tool's recover stamps them now);
     * the previous holder and the reason are recorded. */
    ac_isotime_format(now, 6, now_s);
    ac_isotime_format(now + dur, 6, exp_s);
    rec.json = old.json ? json_incref(old.json) : NULL;
    if (!(rec.lock_id = strdup(old.lock_id)) || !(rec.channel = strdup(old.channel)) ||
        !(rec.owner = strdup(owner)) || !(rec.expires_at = strdup(exp_s)) ||
        !(rec.locked_at = strdup(now_s)) || !(rec.updated_at = strdup(now_s)) ||
        !(rec.previous_owner = strdup(old.owner)) ||
        !(rec.previous_expires_at = strdup(old.expires_at)) ||
        !(rec.recovery_reason = strdup(reason)) ||
        !(rec.paths = calloc(old.npaths, sizeof *rec.paths))) {
        ac_err_sys(err, ENOMEM, NULL, "could not compose the lock record");
        goto out;
    }
    for (rec.npaths = 0; rec.npaths < old.npaths; rec.npaths++) {
        struct ac_lockpath *p = &rec.paths[rec.npaths];
        p->is_dir = old.paths[rec.npaths].is_dir;
        if (!(p->display = strdup(old.paths[rec.npaths].display)) ||
            !(p->normalized = strdup(old.paths[rec.npaths].normalized))) {
            rec.npaths++;
            ac_err_sys(err, ENOMEM, NULL, "could not compose the lock record");
            goto out;
        }
    }
    rec.expires_us = now + dur;
    after = ac_lockrec_encode(&rec, &alen);
    m.audit = after ? audit_body(ch->name, "path.lock.recovered", &rec, now_s) : NULL;
    if (!m.audit ||
        json_object_set_new(m.audit, "previous_expires_at", json_string(old.expires_at)) == -1 ||
        json_object_set_new(m.audit, "previous_lease_expires_at",
                            json_string(old.expires_at)) == -1 ||
        json_object_set_new(m.audit, "previous_owner", json_string(old.owner)) == -1 ||
        json_object_set_new(m.audit, "recovery_reason", json_string(reason)) == -1) {
        ac_err_sys(err, ENOMEM, NULL, "could not compose the lock record");
        goto out;
    }
    m.operation = "recover";
    m.event = "path.lock.recovered";
    m.lock_id = rec.lock_id;
    m.actor = owner;
    m.before = before;
    m.before_len = blen;
    m.after = after;
    m.after_len = alen;
    if (run_mutation(&s, &m, err) == -1)
        goto out;
    if (out) {
        *out = rec;
        memset(&rec, 0, sizeof rec);
    }
    rc = 0;
out:
    session_close(&s);
    json_decref(m.audit);
    free(before);
    free(after);
    ac_lockrec_free(&old);
    ac_lockrec_free(&rec);
    ac_locklist_free(&l);
    return rc;
}

/* Temp files of ours (".<name>.<random>.tmp") left in locks/ by a crash.
 * They are only ever created under the mutex, so any that exists while we
 * hold it is dead. Best effort. */
static int sweep_cb(void *ctx, const char *name, unsigned char type)
{
    int ldfd = *(int *)ctx;
    size_t len = strlen(name);
    if (type == DT_REG && name[0] == '.' && len > 5 && strcmp(name + len - 4, ".tmp") == 0)
        ac_sys_unlinkat(ldfd, name, 0);
    return 0;
}

int ac_pathlock_recover_pending(struct ac_chan *ch, const char *actor,
                                enum ac_pathlock_resolve resolve,
                                struct ac_pending_info *info, struct ac_err *err)
{
    struct session s;
    struct ac_pl_journal j;
    enum ac_pathlock_outcome oc = AC_PENDING_NONE;
    int rc;

    if (info)
        memset(info, 0, sizeof *info);
    if (ac_pathlock_check_owner(actor, "actor", err) == -1)
        return -1;
    if (session_open(&s, ch, err) == -1)
        return -1;
    rc = ac_pl_journal_read(s.ldfd, &j, err);
    if (rc == 1) {
        if (info) {
            size_t tl = strlen(j.target);
            snprintf(info->transaction_id, sizeof info->transaction_id, "%s", j.txid);
            snprintf(info->operation, sizeof info->operation, "%s", j.operation);
            snprintf(info->lock_id, sizeof info->lock_id, "%.*s", (int)(tl - 5), j.target);
        }
        rc = ac_pl_journal_resolve(ch, s.ldfd, &j, resolve, &oc, err);
        ac_pl_journal_free(&j);
    }
    if (rc != -1 && s.ldfd != -1)
        ac_dir_walk(s.ldfd, sweep_cb, &s.ldfd);
    session_close(&s);
    if (info)
        info->outcome = oc;
    return rc == -1 ? -1 : 0;
}

int ac_pathlock_list(struct ac_chan *ch, int flags, struct ac_locklist *out,
                     int *pending, char *pending_id, struct ac_err *err)
{
    struct session s;
    struct ac_pl_journal j;
    int rc;

    out->v = NULL;
    out->n = 0;
    if (pending)
        *pending = 0;
    if (pending_id)
        pending_id[0] = '\0';
    if (session_open_mode(&s, ch, 0, err) == -1)
        return -1;
    s.lenient = (flags & AC_LIST_LENIENT) != 0;
    if (flags & AC_LIST_IGNORE_JOURNAL) {
        struct ac_err jerr = AC_ERR_INIT;
        if (ac_pl_journal_read(s.ldfd, &j, &jerr) == 1) {
            size_t tl = strlen(j.target);
            if (pending)
                *pending = 1;
            if (pending_id)
                snprintf(pending_id, 256, "%.*s", (int)(tl - 5), j.target);
            ac_pl_journal_free(&j);
        }
        rc = 0;
    } else {
        rc = session_gate(&s, err);
    }
    if (rc == 0)
        rc = session_load(&s, out, err);
    if (rc == 0)
        session_keep(&s);
    session_close(&s);
    return rc;
}
