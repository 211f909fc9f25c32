/*
 * pathlock.c - path locks: validation and the lock, check, unlock, recover
 * and recover-pending operations; see pathlock.h. The records are
 * lockrec.c's; the journal is the store's (a batch, src/fs/journal.c on
 * the folder).
 *
 * Every operation runs as one session: validate the arguments that need
 * no record (no change, so a refused request writes nothing, not even the
 * mutex), take the store's mutex (.path-locks.lock), refuse while a change
 * is pending, read and validate the records the operation reads, decide,
 * and (for a mutation) commit one batch. Records are read again on every
 * command: the store is the only state, and the Python tool may have
 * changed it in between.
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
#include "agentchat/pathlock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/audit.h"
#include "agentchat/clock.h"
#include "agentchat/codec.h"
#include "agentchat/isotime.h"
#include "agentchat/json.h"
#include "agentchat/pathnorm.h"
#include "agentchat/pystr.h"
#include "agentchat/utf8.h"

/* PATH_LOCK_* errors: the one setter of err.h (exit 1). */
#define ac_pl_err ac_err_code

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
    if (ac_isotime_expiry_check(now, seconds, "PATH_LOCK_INVALID_DURATION", "lock", &at, err) == -1)
        return -1;
    *us = at - now;
    return 0;
}

int ac_pathlock_check_reason(const char *reason, struct ac_err *err)
{
    size_t start, end;

    ac_py_strip(reason, strlen(reason), &start, &end);
    if (start >= end)
        return ac_pl_err(err, "PATH_LOCK_INVALID_REASON", "recovery reason must not be empty");
    if (ac_has_control(reason))         /* not text refuses like a control */
        return ac_pl_err(err, "PATH_LOCK_INVALID_REASON",
                         "recovery reason contains a forbidden control character");
    return 0;
}

int ac_pathlock_normalize(struct ac_chan *ch, const char *path, struct ac_lockpath *out,
                          struct ac_err *err)
{
    size_t cap = strlen(path) + 4096;   /* links may lengthen it */
    const char *why;
    char *norm = malloc(cap);
    int is_dir = 0;

    memset(out, 0, sizeof *out);
    if (!norm)
        return ac_err_sys(err, ENOMEM, NULL, "could not normalize a path");
    if ((why = ac_relpath_problem(path)) != NULL ||
        ac_chan_path_resolve(ch, path, norm, cap, &is_dir, &why) == -1) {
        free(norm);
        return ac_pl_err(err, "PATH_LOCK_INVALID_PATH", "%s", why);
    }
    out->display = strdup(path);
    out->normalized = norm;
    out->is_dir = is_dir;
    if (!out->display) {
        ac_lockpath_free(out);
        return ac_err_sys(err, ENOMEM, NULL, "could not normalize a path");
    }
    return 0;
}

/* Normalize a request's paths in order (normalize_paths): each path is
 * checked, then compared with the ones before it, so an overlap is found
 * before a later path's own problem. */
static int normalize_all(struct ac_chan *ch, const char *const *paths, size_t n,
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
        if (ac_pathlock_normalize(ch, paths[i], &v[i], err) == -1)
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
        ac_lockpath_free(&v[i]);
    free(v);
    return -1;
}

static void paths_free(struct ac_lockpath *v, size_t n)
{
    size_t i;
    if (!v)
        return;
    for (i = 0; i < n; i++)
        ac_lockpath_free(&v[i]);
    free(v);
}

/* ------------------------------------------------------------- sessions */

struct session {
    struct ac_chan *ch;
    struct ac_mutex *mx;
    int lenient;            /* session_load skips unreadable or bad records */
};

/* Take the mutex. A reader (`create` 0) creates no mutex, only once it
 * succeeded (session_keep): a failing read leaves the channel as it was. */
static int session_open_mode(struct session *s, struct ac_chan *ch, int create, struct ac_err *err)
{
    s->ch = ch;
    s->lenient = 0;
    s->mx = NULL;
    return ac_chan_mutex_enter(ch, AC_PATHLOCK_MUTEX, create ? 0 : AC_MUTEX_READER, &s->mx,
                               "PATH_LOCK_TIMEOUT", "could not acquire path-lock mutation lock",
                               NULL, "could not lock " AC_MUTEX_PATHLOCKS, err);
}

static int session_open(struct session *s, struct ac_chan *ch, struct ac_err *err)
{
    return session_open_mode(s, ch, 1, err);
}

static void session_keep(struct session *s)
{
    ac_mutex_keep(s->mx);
}

static void session_close(struct session *s)
{
    ac_mutex_release(s->mx);
    s->mx = NULL;
}

/* Refuse while a change is pending (its journal usable or not). */
static int session_gate(struct session *s, struct ac_err *err)
{
    struct ac_pending p;
    int rc = ac_chan_pending_read(s->ch, AC_BATCH_PATHLOCK, NULL, &p, err);
    ac_pending_free(&p);
    if (rc == -1)
        return -1;
    if (rc == 1)
        return ac_pl_err(err, "PATH_LOCK_TRANSACTION_PENDING",
                         "a previous path-lock mutation needs explicit recovery");
    return 0;
}

/* Python's str(OSError) for a record: "[Errno 21] Is a directory: '<path>'". */
static int record_os_error(struct session *s, const char *id, int e, struct ac_err *err)
{
    char path[1024], shown[1200];
    ac_chan_rec_where(s->ch, AC_LOCKS, id, path, sizeof path);
    ac_py_repr(path, shown, sizeof shown);
    return ac_pl_err(err, "PATH_LOCK_INVALID_RECORD", "could not read lock record %s.json: [Errno %d] %s: %s",
                     id, e, strerror(e), shown);
}

/* Read and validate record `r` (as scanned or read) into *out. */
static int load_one(struct session *s, const struct ac_record *r, struct ac_lockrec *out,
                    struct ac_err *err)
{
    char file[300];
    memset(out, 0, sizeof *out);
    if (!r->data)
        return record_os_error(s, r->name, r->sys_errno ? r->sys_errno : EIO, err);
    snprintf(file, sizeof file, "%s.json", r->name);
    if (ac_lockrec_parse(r->data, r->len, file, s->ch->name, out, err) == -1)
        return -1;
    out->generation = r->generation;
    return 0;
}

/* The records of locks/ (with AC_SCAN_HIDDEN every "*.json"), sorted. */
static int scan_locks(struct session *s, int flags, struct ac_recset *set, struct ac_err *err)
{
    struct ac_err serr = AC_ERR_INIT;
    if (ac_chan_rec_scan(s->ch, AC_LOCKS, NULL, flags, set, &serr) == -1)
        return ac_err_sys(err, serr.sys_errno ? serr.sys_errno : EIO, NULL, "could not %s %s/",
                          serr.sys_errno == ENOMEM ? "list" : "open", AC_PATHLOCK_DIR);
    return 0;
}

/* Read and validate every record (_read_all), in file name order. */
static int session_load(struct session *s, struct ac_locklist *out, struct ac_err *err)
{
    struct ac_recset set;
    size_t i;

    out->v = NULL;
    out->n = 0;
    if (scan_locks(s, 0, &set, err) == -1)
        return -1;
    out->v = calloc(set.n ? set.n : 1, sizeof *out->v);
    if (!out->v) {
        ac_recset_free(&set);
        return ac_err_sys(err, ENOMEM, NULL, "could not read lock records");
    }
    for (i = 0; i < set.n; i++) {
        if (load_one(s, &set.v[i], &out->v[out->n], err) == 0) {
            out->n++;
        } else if (!s->lenient) {
            ac_recset_free(&set);
            ac_locklist_free(out);
            return -1;
        } else if (err) {
            *err = (struct ac_err)AC_ERR_INIT;
        }
    }
    ac_recset_free(&set);
    return 0;
}

/* The record named by `target` (_find_target): a lock id whose record
 * exists is read alone; anything else is taken as a path (one that cannot
 * be normalized matches nothing) and every "*.json" of locks/ is read and
 * compared, a bad one failing the command. *out is owned by the caller. */
static int find_target(struct session *s, const char *target, struct ac_lockrec *out,
                       struct ac_err *err)
{
    struct ac_lockpath lp;
    struct ac_err ignored = AC_ERR_INIT;
    struct ac_lockrec rec;
    struct ac_recset set = { NULL, 0 };
    struct ac_record r;
    char shown[AC_ERR_MSG_MAX];
    size_t i, j, hits = 0;
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (strlen(target) < 250 && ac_pathlock_check_owner(target, "x", NULL) == 0) {
        if (ac_chan_rec_read(s->ch, AC_LOCKS, target, &r, NULL) == 0 ||
            (r.sys_errno != ENOENT && r.sys_errno != ENAMETOOLONG)) {
            rc = load_one(s, &r, out, err);
            ac_record_free(&r);
            return rc;
        }
        ac_record_free(&r);
    }
    ac_err_quote(shown, sizeof shown, target, 900);
    if (ac_pathlock_normalize(s->ch, target, &lp, &ignored) == -1)
        return ac_pl_err(err, "PATH_LOCK_NOT_FOUND", "lock record does not exist: %s", shown);
    if (scan_locks(s, AC_SCAN_HIDDEN, &set, err) == -1)
        goto out;
    for (i = 0; i < set.n; i++) {
        if (load_one(s, &set.v[i], &rec, err) == -1) {
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
    ac_lockpath_free(&lp);
    ac_recset_free(&set);
    return rc;
}

/* The records of `l` (but `skip`) whose paths overlap lp[0..n), raised as
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
    *out = l->v[i];
    memset(&l->v[i], 0, sizeof l->v[i]);
}

/* The session of unlock and recover: the mutex taken, nothing pending, and
 * the record `target` names in *rec. 0, or -1 with err (the session is
 * closed again). */
static int target_session(struct session *s, struct ac_chan *ch, const char *target,
                          struct ac_lockrec *rec, struct ac_err *err)
{
    if (session_open(s, ch, err) == -1)
        return -1;
    if (session_gate(s, err) == -1 || find_target(s, target, rec, err) == -1) {
        session_close(s);
        return -1;
    }
    return 0;
}

/* Hand the new record to the caller (if it wants it). */
static void give(struct ac_lockrec *rec, struct ac_lockrec *out)
{
    if (out) {
        *out = *rec;
        memset(rec, 0, sizeof *rec);
    }
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
    uint64_t before_generation; /* the store's version of `before` (0: none) */
};

/* One batch of the store (AC_BATCH_PATHLOCK): the record change and its
 * audit message, all or nothing (on the folder: the path-lock journal).
 * On success the new record `rec` goes to the caller's `out`. */
static int run_mutation(struct session *s, const struct mutation *m, struct ac_lockrec *rec,
                        struct ac_lockrec *out, struct ac_err *err)
{
    struct ac_change c = { AC_LOCKS, m->lock_id, m->before, m->before_len, m->after, m->after_len,
                           m->before_generation, m->after != NULL /* lock, recover: a grant */ };
    struct ac_batch b = { AC_BATCH_PATHLOCK, &c, 1, m->actor, m->event, m->lock_id, m->audit, NULL,
                          m->operation };
    if (ac_chan_batch_commit(s->ch, &b, err) == -1)
        return -1;
    if (m->after) {
        /* The new record's generation (the holder's token) is the store's
         * version of what was just written (none on the folder). */
        struct ac_record r;
        if (ac_chan_rec_read(s->ch, AC_LOCKS, m->lock_id, &r, NULL) == 0)
            rec->generation = r.generation;
        ac_record_free(&r);
    }
    give(rec, out);
    return 0;
}

/* The audit body fields common to the three events. */
static json_t *audit_body(const char *channel, const char *event, const struct ac_lockrec *r,
                          const char *updated_at)
{
    json_t *o = json_object(), *paths = ac_lockrec_paths_json(r);
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

/* Read a record's raw bytes (the journal's `before`). */
static char *record_bytes(struct session *s, const char *lock_id, size_t *len, uint64_t *gen,
                          struct ac_err *err)
{
    struct ac_record r;
    char *data;
    if (ac_chan_rec_read(s->ch, AC_LOCKS, lock_id, &r, NULL) == -1) {
        record_os_error(s, lock_id, r.sys_errno ? r.sys_errno : EIO, err);
        return NULL;
    }
    data = r.data;
    *len = r.len;
    *gen = r.generation;
    r.data = NULL;
    ac_record_free(&r);
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
    int rc = -1, opened = 0;

    memset(&rec, 0, sizeof rec);
    memset(&m, 0, sizeof m);
    if (out)
        memset(out, 0, sizeof *out);
    /* The Python tool's order: owner, paths (each, then its overlap with
     * the ones before), the journal, the records, conflicts, duration. */
    if (ac_pathlock_check_owner(owner, "owner", err) == -1)
        return -1;
    if (normalize_all(ch, paths, n, &lp, err) == -1)
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
    m = (struct mutation){ "lock", "path.locked", id, owner, NULL, 0, bytes, blen, m.audit, 0 };
    rc = run_mutation(&s, &m, &rec, out, err);
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
    int rc = -1;

    out->v = NULL;
    out->n = 0;
    /* The Python tool checks the paths before the owner here. */
    if (normalize_all(ch, paths, n, &lp, err) == -1)
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
    return ac_pathlock_unlock_fenced(ch, target, owner, 0, out, err);
}

int ac_pathlock_unlock_fenced(struct ac_chan *ch, const char *target, const char *owner,
                              uint64_t fence, struct ac_lockrec *out, struct ac_err *err)
{
    struct session s;
    struct ac_lockrec rec;
    struct mutation m;
    char now_s[48], *before = NULL;
    size_t blen = 0;
    uint64_t gen = 0;
    int rc = -1;

    memset(&rec, 0, sizeof rec);
    memset(&m, 0, sizeof m);
    if (out)
        memset(out, 0, sizeof *out);
    if (ac_pathlock_check_owner(owner, "owner", err) == -1 ||
        target_session(&s, ch, target, &rec, err) == -1)
        return -1;
    if (fence && rec.generation != fence) {
        /* a stale holder's token: the lock went to someone else since */
        if (rec.generation == 0)
            ac_pl_err(err, "PATH_LOCK_FENCED", "lock %s has no generation %llu (the folder store "
                      "keeps no lock generations)", rec.lock_id, (unsigned long long)fence);
        else
            ac_pl_err(err, "PATH_LOCK_FENCED",
                      "lock %s is generation %llu, not %llu: a newer holder took it over",
                      rec.lock_id, (unsigned long long)rec.generation, (unsigned long long)fence);
        goto out;
    }
    if (strcmp(rec.owner, owner) != 0) {
        char shown[600];
        ac_err_quote(shown, sizeof shown, rec.owner, 200);
        ac_pl_err(err, "PATH_LOCK_OWNER_MISMATCH", "lock %s belongs to %s", rec.lock_id, shown);
        goto out;
    }
    if (!(before = record_bytes(&s, rec.lock_id, &blen, &gen, err)))
        goto out;
    ac_isotime_format(ac_isotime_now_us(), 6, now_s);
    m.audit = audit_body(ch->name, "path.lock.unlocked", &rec, now_s);
    if (!m.audit) {
        ac_err_sys(err, ENOMEM, NULL, "could not compose the audit message");
        goto out;
    }
    m = (struct mutation){ "unlock", "path.lock.unlocked", rec.lock_id, owner, before, blen, NULL, 0, m.audit,
                           gen };
    rc = run_mutation(&s, &m, &rec, out, err);
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
    uint64_t gen = 0;
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
    if (target_session(&s, ch, target, &old, err) == -1)
        return -1;
    now = ac_isotime_now_us();
    if (!ac_lockrec_expired(&old, now)) {
        ac_pl_err(err, "PATH_LOCK_NOT_STALE", "lock %s is still active", old.lock_id);
        goto out;
    }
    if (session_load(&s, &l, err) == -1 ||
        conflicts(&l, old.paths, old.npaths, old.lock_id, "recovery request", err) == -1 ||
        ac_pathlock_check_duration(lease, &dur, err) == -1)
        goto out;
    if (!(before = record_bytes(&s, old.lock_id, &blen, &gen, err)))
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
    m = (struct mutation){ "recover", "path.lock.recovered", rec.lock_id, owner, before, blen, after, alen,
                           m.audit, gen };
    rc = run_mutation(&s, &m, &rec, out, err);
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

/* Resolve the pending change `p` (see pathlock.h for the decision table):
 * its records settled, its journal removed. */
static int resolve_pending(struct ac_chan *ch, const struct ac_pending *p,
                           enum ac_pathlock_resolve resolve, enum ac_pathlock_outcome *outcome,
                           struct ac_err *err)
{
    struct ac_err serr = AC_ERR_INIT;
    int complete, rc;

    if (strcmp(p->phase, "prepared") == 0) {
        if (resolve != AC_RESOLVE_AUTO)
            return ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID",
                             "publication resolution applies only to applied or published "
                             "transactions");
        complete = 0;
    } else if (resolve == AC_RESOLVE_ROLLBACK) {
        complete = 0;
    } else if (resolve == AC_RESOLVE_PUBLISHED || strcmp(p->phase, "published") == 0) {
        complete = 1;
    } else {
        /* applied: was the audit message posted before the crash? */
        complete = 0;
        if (p->txid[0] && strlen(p->txid) <= 64) {
            complete = ac_audit_find_transaction(ch, p->txid, err);
            if (complete == -1)
                return -1;
        }
    }
    rc = ac_chan_pending_settle(ch, p, complete ? AC_SETTLE_VERIFY : AC_SETTLE_ROLLBACK, &serr);
    if (rc == -1)
        return ac_err_sys(err, serr.sys_errno ? serr.sys_errno : EIO, NULL, "could not %s lock record %s.json",
                          complete ? "read" : "restore", p->subject);
    if (rc == 1)
        return ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID", "published transaction does not match lock state");
    if (ac_chan_pending_clear(ch, AC_BATCH_PATHLOCK, &serr) == -1)
        return ac_err_sys(err, serr.sys_errno ? serr.sys_errno : EIO, NULL,
                          "could not remove the path-lock journal");
    *outcome = complete ? AC_PENDING_COMPLETED : AC_PENDING_ROLLED_BACK;
    return 0;
}

int ac_pathlock_recover_pending(struct ac_chan *ch, const char *actor,
                                enum ac_pathlock_resolve resolve,
                                struct ac_pending_info *info, struct ac_err *err)
{
    struct session s;
    struct ac_pending p;
    static const struct ac_pending_check whole = { NULL, NULL, NULL };
    enum ac_pathlock_outcome oc = AC_PENDING_NONE;
    int rc;

    if (info)
        memset(info, 0, sizeof *info);
    if (ac_pathlock_check_owner(actor, "actor", err) == -1)
        return -1;
    if (session_open(&s, ch, err) == -1)
        return -1;
    rc = ac_chan_pending_read(ch, AC_BATCH_PATHLOCK, &whole, &p, err);
    if (rc == 1) {
        if (info) {
            snprintf(info->transaction_id, sizeof info->transaction_id, "%s", p.txid);
            snprintf(info->operation, sizeof info->operation, "%s", p.operation);
            snprintf(info->lock_id, sizeof info->lock_id, "%s", p.subject);
        }
        rc = resolve_pending(ch, &p, resolve, &oc, err);
    }
    ac_pending_free(&p);
    /* Temp files a crash left in locks/: only ever created under the
     * mutex, so any that exists while we hold it is dead. */
    if (rc != -1)
        ac_chan_sweep(ch, AC_LOCKS);
    session_close(&s);
    if (info)
        info->outcome = oc;
    return rc == -1 ? -1 : 0;
}

int ac_pathlock_list(struct ac_chan *ch, int flags, struct ac_locklist *out,
                     int *pending, char *pending_id, struct ac_err *err)
{
    struct session s;
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
        struct ac_pending p;
        if (ac_chan_pending_read(ch, AC_BATCH_PATHLOCK, NULL, &p, &jerr) == 1) {
            if (pending)
                *pending = 1;
            if (pending_id)
                snprintf(pending_id, 256, "%s", p.subject);
        }
        ac_pending_free(&p);
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
