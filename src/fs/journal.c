/*
 * journal.c - the journal engine of the file-system backend and its two
 * format descriptions; see journal.h.
 *
 * The engine knows nothing of tasks or locks: a transaction is a change
 * list of records ({family, name, before, after}, NULL meaning "absent")
 * plus what its journal records about it (subject, event, actor,
 * details, operation). A format description says which file the journal
 * is, how it is encoded and decoded, the fault points of every step and
 * the policies and messages of its failures. Each field below is there
 * because the Python tool behaves so and both tools must recover each
 * other's crashes (SPEC.md 3.6, 3.7).
 */
#include "journal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentchat/audit.h"
#include "agentchat/codec.h"
#include "agentchat/fault.h"
#include "agentchat/json.h"
#include "agentchat/pyjson.h"
#include "agentchat/taskrec.h"
#include "fsutil.h"
#include "store_fs.h"

#define NAME_MAX_BYTES 300

struct jchange {
    int family;
    char name[NAME_MAX_BYTES];  /* the record's name (file name without ".json") */
    const char *before, *after; /* NULL: absent */
    size_t before_len, after_len;
};

/* One transaction: the batch being committed, or a journal read back. */
struct txn {
    const struct format *fmt;
    char txid[128];             /* "" for a legacy journal without one */
    const char *phase;
    const char *subject;        /* task or lock id */
    const char *event;
    const char *actor;
    const char *operation;
    json_t *details;
    struct jchange *c;
    size_t n;
    json_t *raw;                /* a journal read: owns the strings above */
    char **bytes;               /* a journal read: the decoded change bytes */
    size_t nbytes;
};

struct format {
    int kind;
    int dir_family;             /* its directory is this family's */
    const char *file;
    size_t cap;                 /* largest journal (and record) it reads */
    struct ac_json_style style;
    const char *tag;            /* "<tag>.<phase>" names the atomic write's points */
    int prepared_noreplace;     /* link(): never over an existing journal */
    int published_nodirsync;    /* the published phase needs no directory sync */
    int mkdir_always;           /* every commit and settle makes the directory */
    const char *apply_tag[AC_NFAMILIES];
    const char *restore_tag[AC_NFAMILIES];  /* NULL: the apply tag */
    int apply_nodirsync;        /* the next journal write syncs the directory */
    int sync_after_changes;     /* one directory sync after all record changes */
    int restore_unlink_syncs;   /* "<tag>.dirsync" + sync after a restoring unlink */
    const char *audit_point;    /* before the audit post, or NULL */
    int keep_on_apply_failure;  /* a failed apply leaves the journal (else undone) */
    int undo_on_audit_failure;  /* a failed audit post is undone in process (else
                                   resolved as recover-pending would) */
    int undo_remove_quiet;      /* that undo unlinks the journal without its points */
    int published_must_succeed; /* a failed published phase fails the command */
    const char *remove_point;
    const char *remove_sync_point;  /* NULL: the sync after the removal is part of it */
    int verify_unreadable_mismatch; /* an unreadable record does not match `after` */
    /* codes and messages */
    const char *io_code;        /* NULL: IO_ERROR */
    const char *msg_prepare;    /* the directory could not be made or opened, or NULL */
    const char *msg_encode;     /* the journal could not be encoded, or NULL */
    const char *msg_journal;    /* the prepared phase could not be written */
    const char *msg_applied;    /* the applied phase could not be written */
    const char *msg_apply[2];   /* around the subject: "could not apply ... to ", "" */
    const char *pending_code;   /* a journal exists (prepared_noreplace) */
    const char *pending_msg;
    const char *audit_failed_code, *undo_failed_code;
    const char *unsettled_code; /* announced, journal not finished */
    const char *msg_published;  /* followed by ": <strerror>" */
    const char *msg_removed[2]; /* around the strerror */
    json_t *(*encode)(const struct txn *t, const char *phase);
    int (*decode)(json_t *root, struct txn *t, struct ac_err *err);
    int (*read_error)(int e, const char *parse_msg, struct ac_err *err);
};

static const char *const PHASES[] = { "prepared", "applied", "published", NULL };

static int one_of(const char *s, const char *const *set)
{
    for (; s && *set; set++)
        if (strcmp(s, *set) == 0)
            return 1;
    return 0;
}

/* A base64 member value (or null for "absent"). NULL on ENOMEM. */
static json_t *b64_value(const char *bytes, size_t len)
{
    char *s;
    json_t *v;
    if (!bytes)
        return json_null();
    s = ac_b64_encode(bytes, len);
    v = s ? json_string(s) : NULL;
    free(s);
    return v;
}

/* Decode a base64 member (string or null) into t->bytes. 0, or -1 when
 * it is neither or not base64. */
static int b64_member(struct txn *t, const json_t *v, const char **out, size_t *len)
{
    char *d;
    *out = NULL;
    *len = 0;
    if (json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return -1;
    d = ac_b64_decode(json_string_value(v), json_string_length(v), len);
    if (!d)
        return -1;
    t->bytes[t->nbytes++] = d;
    *out = d;
    return 0;
}

static void txn_free(struct txn *t)
{
    size_t i;
    for (i = 0; i < t->nbytes; i++)
        free(t->bytes[i]);
    free(t->bytes);
    free(t->c);
    json_decref(t->raw);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------- the lease format */

/* claims/.lease-transaction.json, version 2 (SPEC.md 3.6):
 *   version, phase, transaction_id, task_id, task_file "tasks/<id>.json",
 *   task_before, task_after (base64; before null = no record),
 *   claim_changes [{file "<task>.<owner>.json", previous, next}],
 *   event, details
 * json.dumps(indent=2, sort_keys=True) + "\n", ASCII. Version 1 (the
 * Python tool's first) has no transaction_id. */
static json_t *lease_encode(const struct txn *t, const char *phase)
{
    json_t *j = json_object(), *list = json_array();
    char file[NAME_MAX_BYTES + 8], task_file[NAME_MAX_BYTES + 16];
    size_t i;
    int ok = j && list;

    for (i = 1; ok && i < t->n; i++) {
        json_t *item = json_object();
        snprintf(file, sizeof file, "%s.json", t->c[i].name);
        ok = item && json_array_append_new(list, item) == 0 &&
             json_object_set_new(item, "file", json_string(file)) == 0 &&
             json_object_set_new(item, "previous", b64_value(t->c[i].before, t->c[i].before_len)) == 0 &&
             json_object_set_new(item, "next", b64_value(t->c[i].after, t->c[i].after_len)) == 0;
    }
    snprintf(task_file, sizeof task_file, "%s/%s.json", ac_fs_families[AC_TASKS].dir, t->subject);
    if (!ok || json_object_set_new(j, "claim_changes", list) == -1) {
        if (!ok)
            json_decref(list);
        json_decref(j);
        return NULL;
    }
    if (json_object_set_new(j, "version", json_integer(2)) == -1 ||
        json_object_set_new(j, "phase", json_string(phase)) == -1 ||
        json_object_set_new(j, "transaction_id", json_string(t->txid)) == -1 ||
        json_object_set_new(j, "task_id", json_string(t->subject)) == -1 ||
        json_object_set_new(j, "task_file", json_string(task_file)) == -1 ||
        json_object_set_new(j, "task_before", b64_value(t->c[0].before, t->c[0].before_len)) == -1 ||
        json_object_set_new(j, "task_after", b64_value(t->c[0].after, t->c[0].after_len)) == -1 ||
        json_object_set_new(j, "event", json_string(t->event)) == -1 ||
        json_object_set(j, "details", t->details) == -1) {
        json_decref(j);
        return NULL;
    }
    return j;
}

#define LEASE_SHAPE "transaction journal has an unsupported shape"

static int lease_invalid(struct ac_err *err, const char *msg)
{
    return ac_err_set(err, AC_EXIT_USAGE, "LEASE_TRANSACTION_INVALID", "%s", msg);
}

static int lease_read_error(int e, const char *parse_msg, struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_USAGE, "LEASE_TRANSACTION_INVALID", "could not read transaction journal: %s",
                      parse_msg ? parse_msg : strerror(e));
}

static int lease_decode(json_t *v, struct txn *t, struct ac_err *err)
{
    json_t *changes, *item, *ver = json_object_get(v, "version");
    const char *txid, *task_file;
    char want[NAME_MAX_BYTES + 16];
    size_t i, idlen;
    int version;

    if (!json_is_object(v) || !json_is_integer(ver))
        return lease_invalid(err, LEASE_SHAPE);
    version = (int)json_integer_value(ver);
    t->phase = json_string_value(json_object_get(v, "phase"));
    if ((version != 1 && version != 2) || !one_of(t->phase, PHASES))
        return lease_invalid(err, LEASE_SHAPE);
    txid = json_string_value(json_object_get(v, "transaction_id"));
    if (version == 2 && !txid)
        return lease_invalid(err, "transaction journal is missing transaction_id");
    snprintf(t->txid, sizeof t->txid, "%s", txid ? txid : "");
    t->subject = json_string_value(json_object_get(v, "task_id"));
    task_file = json_string_value(json_object_get(v, "task_file"));
    t->event = json_string_value(json_object_get(v, "event"));
    t->details = json_object_get(v, "details");
    changes = json_object_get(v, "claim_changes");
    if (!t->subject || !ac_safe_name(t->subject) || !task_file || !t->event || !json_is_array(changes))
        return lease_invalid(err, LEASE_SHAPE);
    snprintf(want, sizeof want, "%s/%s.json", ac_fs_families[AC_TASKS].dir, t->subject);
    if (strcmp(task_file, want) != 0)
        return lease_invalid(err, LEASE_SHAPE);
    t->c = calloc(json_array_size(changes) + 1, sizeof *t->c);
    t->bytes = calloc(2 * json_array_size(changes) + 2, sizeof *t->bytes);
    if (!t->c || !t->bytes)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not read the lease journal");
    /* the task record */
    t->c[0].family = AC_TASKS;
    snprintf(t->c[0].name, sizeof t->c[0].name, "%s", t->subject);
    if (!json_is_string(json_object_get(v, "task_after")) ||
        b64_member(t, json_object_get(v, "task_before"), &t->c[0].before, &t->c[0].before_len) == -1 ||
        b64_member(t, json_object_get(v, "task_after"), &t->c[0].after, &t->c[0].after_len) == -1)
        return lease_invalid(err, LEASE_SHAPE);
    t->n = 1;
    /* its claim files: only this task's, <task_id>.<safe owner>.json */
    idlen = strlen(t->subject);
    json_array_foreach(changes, i, item) {
        const char *file = json_string_value(json_object_get(item, "file"));
        struct jchange *c = &t->c[t->n];
        size_t flen = file ? strlen(file) : 0;
        char owner[NAME_MAX_BYTES];
        if (!file || flen >= NAME_MAX_BYTES || flen <= idlen + 6 || strncmp(file, t->subject, idlen) != 0 ||
            file[idlen] != '.' || strcmp(file + flen - 5, ".json") != 0)
            return lease_invalid(err, LEASE_SHAPE);
        memcpy(owner, file + idlen + 1, flen - idlen - 6);
        owner[flen - idlen - 6] = '\0';
        if (!ac_safe_name(owner))
            return lease_invalid(err, LEASE_SHAPE);
        c->family = AC_CLAIMS;
        memcpy(c->name, file, flen - 5);
        c->name[flen - 5] = '\0';
        if (b64_member(t, json_object_get(item, "previous"), &c->before, &c->before_len) == -1 ||
            b64_member(t, json_object_get(item, "next"), &c->after, &c->after_len) == -1)
            return lease_invalid(err, LEASE_SHAPE);
        t->n++;
    }
    return 0;
}

/* ------------------------------------------------------- the path-lock format */

/* locks/.path-lock-transaction.json, version 1 (SPEC.md 3.7):
 *   version, transaction_id, phase, operation lock|unlock|recover, event,
 *   target "<id>.json" (or "locks/<id>.json" from the Python tool), actor,
 *   before, after (base64 of the record file; null = no file)
 * json.dumps(indent=2, sort_keys=True, ensure_ascii=False) + "\n". */
static const char *const OPERATIONS[] = { "lock", "unlock", "recover", NULL };
static const char *const EVENTS[] = { "path.locked", "path.lock.unlocked", "path.lock.recovered", NULL };

static json_t *pathlock_encode(const struct txn *t, const char *phase)
{
    json_t *j = json_object();
    char target[NAME_MAX_BYTES + 8];
    snprintf(target, sizeof target, "%s.json", t->c[0].name);
    if (!j || json_object_set_new(j, "version", json_integer(1)) == -1 ||
        json_object_set_new(j, "transaction_id", json_string(t->txid)) == -1 ||
        json_object_set_new(j, "phase", json_string(phase)) == -1 ||
        json_object_set_new(j, "operation", json_string(t->operation)) == -1 ||
        json_object_set_new(j, "event", json_string(t->event)) == -1 ||
        json_object_set_new(j, "target", json_string(target)) == -1 ||
        json_object_set_new(j, "actor", json_string(t->actor)) == -1 ||
        json_object_set_new(j, "before", b64_value(t->c[0].before, t->c[0].before_len)) == -1 ||
        json_object_set_new(j, "after", b64_value(t->c[0].after, t->c[0].after_len)) == -1) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int pathlock_invalid(struct ac_err *err, const char *msg)
{
    return ac_err_set(err, AC_EXIT_GENERAL, "PATH_LOCK_TRANSACTION_INVALID", "%s", msg);
}

static int pathlock_read_error(int e, const char *parse_msg, struct ac_err *err)
{
    if (parse_msg)
        return ac_err_set(err, AC_EXIT_GENERAL, "PATH_LOCK_TRANSACTION_INVALID",
                          "could not read transaction marker: %s", parse_msg);
    return ac_err_set(err, AC_EXIT_GENERAL, "PATH_LOCK_TRANSACTION_INVALID",
                      "could not read transaction marker: [Errno %d] %s", e, strerror(e));
}

/* A string member without NUL bytes, shorter than `max`, or NULL. */
static const char *short_str(const json_t *obj, const char *key, size_t max)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_string(v) || json_string_length(v) >= max ||
        strlen(json_string_value(v)) != json_string_length(v))
        return NULL;
    return json_string_value(v);
}

/* "<name>.json" with a safe stem ([A-Za-z0-9][A-Za-z0-9._-]*): the only
 * targets a journal may name, so recovery never writes outside locks/. */
static int lock_file_name(const char *s)
{
    size_t len = strlen(s), i;
    if (len < 6 || len > 255 || strcmp(s + len - 5, ".json") != 0)
        return 0;
    for (i = 0; i < len - 5; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
            return 0;
    }
    return 1;
}

static int pathlock_decode(json_t *v, struct txn *t, struct ac_err *err)
{
    static const char shape[] = "transaction marker has an unsupported shape";
    const json_t *ver = json_object_get(v, "version");
    const char *txid, *target;
    size_t tl;

    t->phase = short_str(v, "phase", 16);
    t->operation = short_str(v, "operation", 16);
    t->event = short_str(v, "event", 32);
    txid = short_str(v, "transaction_id", 128);
    target = short_str(v, "target", NAME_MAX_BYTES);
    if (!json_is_object(v) || !json_is_integer(ver) || json_integer_value(ver) != 1 ||
        !one_of(t->phase, PHASES) || !one_of(t->operation, OPERATIONS) || !one_of(t->event, EVENTS) ||
        !txid || !target || !json_is_string(json_object_get(v, "actor")))
        return pathlock_invalid(err, shape);
    if ((!json_is_null(json_object_get(v, "before")) && !json_is_string(json_object_get(v, "before"))) ||
        (!json_is_null(json_object_get(v, "after")) && !json_is_string(json_object_get(v, "after"))))
        return pathlock_invalid(err, shape);
    if (strncmp(target, "locks/", 6) == 0)
        target += 6;
    if (!lock_file_name(target))
        return pathlock_invalid(err, "transaction target is not a lock record filename");
    snprintf(t->txid, sizeof t->txid, "%s", txid);
    t->actor = json_string_value(json_object_get(v, "actor"));
    t->c = calloc(1, sizeof *t->c);
    t->bytes = calloc(2, sizeof *t->bytes);
    if (!t->c || !t->bytes)
        return ac_err_sys(err, ENOMEM, NULL, "could not read transaction marker");
    t->n = 1;
    t->c[0].family = AC_LOCKS;
    tl = strlen(target) - 5;
    memcpy(t->c[0].name, target, tl);
    t->c[0].name[tl] = '\0';
    t->subject = t->c[0].name;
    if (b64_member(t, json_object_get(v, "before"), &t->c[0].before, &t->c[0].before_len) == -1 ||
        b64_member(t, json_object_get(v, "after"), &t->c[0].after, &t->c[0].after_len) == -1)
        return pathlock_invalid(err, "transaction bytes are not valid base64");
    return 0;
}

/* -------------------------------------------------------------- the formats */

static const struct format LEASE = {
    .kind = AC_BATCH_LEASE,
    .dir_family = AC_CLAIMS,
    .file = ".lease-transaction.json",
    .cap = 64u << 20,
    .style = { 2, 1, 1, ",", ": " },
    .tag = "lease.journal",
    .mkdir_always = 1,
    .apply_tag = { [AC_TASKS] = "lease.task", [AC_CLAIMS] = "lease.claim" },
    .sync_after_changes = 1,
    .audit_point = "lease.audit",
    .keep_on_apply_failure = 1,
    .undo_on_audit_failure = 1,
    .undo_remove_quiet = 1,
    .published_must_succeed = 1,
    .remove_point = "lease.journal.delete",
    .verify_unreadable_mismatch = 1,
    .io_code = "TASK_IO_ERROR",
    .msg_prepare = "could not prepare the lease journal",
    .msg_encode = "could not encode the lease journal",
    .msg_journal = "could not write the lease journal",
    .msg_applied = "could not write the lease journal",
    .msg_apply = { "could not apply the lease change to ", "" },
    .audit_failed_code = "LEASE_AUDIT_FAILED",
    .undo_failed_code = "LEASE_AUDIT_ROLLBACK_FAILED",
    .unsettled_code = "LEASE_TRANSACTION_CLEANUP_FAILED",
    .msg_published = "the lease change was published but its journal could not be updated",
    .msg_removed = { "the lease change was published but its journal could not be removed: ", "" },
    .encode = lease_encode,
    .decode = lease_decode,
    .read_error = lease_read_error,
};

static const struct format PATHLOCK = {
    .kind = AC_BATCH_PATHLOCK,
    .dir_family = AC_LOCKS,
    .file = ".path-lock-transaction.json",
    .cap = 16u << 20,
    .style = { 2, 0, 1, ",", ": " },
    .tag = "pathlock.journal",
    .prepared_noreplace = 1,
    .published_nodirsync = 1,
    .apply_tag = { [AC_LOCKS] = "pathlock.record" },
    .restore_tag = { [AC_LOCKS] = "pathlock.restore" },
    .apply_nodirsync = 1,
    .restore_unlink_syncs = 1,
    .remove_point = "pathlock.journal.remove",
    .remove_sync_point = "pathlock.journal.dirsync",
    .msg_journal = "could not write the path-lock journal",
    .msg_applied = "could not update the path-lock journal",
    .msg_apply = { "could not write lock record ", ".json" },
    .pending_code = "PATH_LOCK_TRANSACTION_PENDING",
    .pending_msg = "a previous path-lock mutation needs explicit recovery",
    .unsettled_code = "PATH_LOCK_TRANSACTION_PENDING",
    .msg_removed = { "the path-lock change was applied and announced, but its journal could not be "
                     "removed (", "); run recover-pending" },
    .encode = pathlock_encode,
    .decode = pathlock_decode,
    .read_error = pathlock_read_error,
};

static const struct format *format_of(int kind)
{
    return kind == AC_BATCH_LEASE ? &LEASE : kind == AC_BATCH_PATHLOCK ? &PATHLOCK : NULL;
}

const char *ac_fs_journal_path(int kind)
{
    static char paths[AC_NBATCH_KINDS][80];
    const struct format *f = format_of(kind);
    if (!f)
        return "";
    if (!paths[kind][0])
        snprintf(paths[kind], sizeof paths[kind], "%s/%s", ac_fs_families[f->dir_family].dir, f->file);
    return paths[kind];
}

/* ------------------------------------------------------------- the engine */

/* The journal's directory: made first when `make` (always, or only when
 * missing, as the format says). -1 with errno (*made_failed when mkdir
 * itself failed). */
static int journal_dir(int chfd, const struct format *f, int make, int *mkdir_failed)
{
    const char *dir = ac_fs_families[f->dir_family].dir;
    int fd;
    *mkdir_failed = 0;
    if (make && f->mkdir_always && ac_sys_mkdirat(chfd, dir, 0755) == -1 && errno != EEXIST) {
        *mkdir_failed = 1;
        return -1;
    }
    fd = ac_open_dir_at(chfd, dir);
    if (fd == -1 && errno == ENOENT && make && !f->mkdir_always) {
        if (ac_sys_mkdirat(chfd, dir, 0755) == -1 && errno != EEXIST) {
            *mkdir_failed = 1;
            return -1;
        }
        fd = ac_open_dir_at(chfd, dir);
    }
    return fd;
}

/* Write the journal with `phase`. errno is meaningful on -1 (ENOMEM when
 * it could not be encoded). */
static int journal_write(int dfd, const struct txn *t, const char *phase)
{
    const struct format *f = t->fmt;
    char point[64];
    size_t len;
    json_t *j = f->encode(t, phase);
    char *bytes = j ? ac_json_dump_line(j, &f->style, &len) : NULL;
    int flags, rc, e;

    json_decref(j);
    if (!bytes) {
        errno = ENOMEM;
        return -1;
    }
    if (strcmp(phase, "prepared") == 0)
        flags = f->prepared_noreplace ? AC_ATOMIC_NOREPLACE : AC_ATOMIC_REPLACE;
    else
        flags = AC_ATOMIC_REPLACE |
                (strcmp(phase, "published") == 0 && f->published_nodirsync ? AC_ATOMIC_NO_DIRSYNC : 0);
    snprintf(point, sizeof point, "%s.%s", f->tag, phase);
    rc = ac_write_atomic(dfd, f->file, bytes, len, 0644, flags, point);
    e = errno;
    free(bytes);
    errno = e;
    return rc;
}

/* Remove the journal (with its fault points, and the directory sync the
 * format asks for). errno is meaningful on -1. */
static int journal_remove(int dfd, const struct format *f)
{
    if (AC_FAULT(f->remove_point) == -1)
        return -1;
    if (ac_sys_unlinkat(dfd, f->file, 0) == -1 && errno != ENOENT)
        return -1;
    if (!f->remove_sync_point)
        return ac_fsync_dir(dfd);
    /* Best effort: if the removal is lost in a power cut, the journal
     * comes back and recover-pending resolves it again (every resolution
     * is idempotent: `after` still matches, or `before` is restored). */
    if (AC_FAULT(f->remove_sync_point) == 0)
        ac_fsync_dir(dfd);
    return 0;
}

/* Put the records of t in their `after` state (restore == 0) or back in
 * their `before` state. errno is meaningful on -1. */
static int put_records(int chfd, int dfd, const struct txn *t, int restore)
{
    const struct format *f = t->fmt;
    size_t i;

    for (i = 0; i < t->n; i++) {
        const struct jchange *c = &t->c[i];
        const char *bytes = restore ? c->before : c->after, *tag;
        size_t len = restore ? c->before_len : c->after_len;
        char file[NAME_MAX_BYTES + 8], point[64];
        int fd = dfd, rc, e;

        tag = restore && f->restore_tag[c->family] ? f->restore_tag[c->family] : f->apply_tag[c->family];
        snprintf(file, sizeof file, "%s.json", c->name);
        if (c->family != f->dir_family) {
            /* another family's record (the lease's task): its directory
             * is made on the way, as every writer of it does */
            const char *dir = ac_fs_families[c->family].dir;
            if (ac_sys_mkdirat(chfd, dir, 0755) == -1 && errno != EEXIST)
                return -1;
            if ((fd = ac_open_dir_at(chfd, dir)) == -1)
                return -1;
        }
        if (!bytes) {
            snprintf(point, sizeof point, "%s.unlink", tag);
            /* ENAMETOOLONG: a name that cannot exist is absent too. */
            rc = AC_FAULT(point) == -1 ||
                 (ac_sys_unlinkat(fd, file, 0) == -1 && errno != ENOENT && errno != ENAMETOOLONG) ? -1 : 0;
            if (rc == 0 && restore && f->restore_unlink_syncs) {
                snprintf(point, sizeof point, "%s.dirsync", tag);
                rc = AC_FAULT(point) == -1 || ac_fsync_dir(fd) == -1 ? -1 : 0;
            }
        } else {
            /* A created record never replaces one that appeared meanwhile. */
            int flags = !restore && !c->before ? AC_ATOMIC_NOREPLACE : AC_ATOMIC_REPLACE;
            if (!restore && f->apply_nodirsync)
                flags |= AC_ATOMIC_NO_DIRSYNC;
            rc = ac_write_atomic(fd, file, bytes, len, 0644, flags, tag);
        }
        e = errno;
        if (fd != dfd)
            close(fd);
        errno = e;
        if (rc == -1)
            return -1;
    }
    return f->sync_after_changes ? ac_fsync_dir(dfd) : 0;
}

/* Do the records hold `after`? 1 yes, 0 no, -1 could not read (errno). */
static int records_match(int chfd, const struct txn *t)
{
    size_t i;
    for (i = 0; i < t->n; i++) {
        const struct jchange *c = &t->c[i];
        char file[NAME_MAX_BYTES + 8], *data = NULL;
        size_t len = 0;
        int fd = ac_open_dir_at(chfd, ac_fs_families[c->family].dir), rc, e, same;
        snprintf(file, sizeof file, "%s.json", c->name);
        rc = fd == -1 ? -1 : ac_read_file_at(fd, file, t->fmt->cap, &data, &len);
        e = errno;
        if (fd != -1)
            close(fd);
        if (rc == -1) {
            if (e == ENOENT && !c->after)
                continue;
            if (e == ENOENT || e == EFBIG || t->fmt->verify_unreadable_mismatch)
                return 0;
            errno = e;
            return -1;
        }
        same = c->after && len == c->after_len && memcmp(data, c->after, len) == 0;
        free(data);
        if (!same)
            return 0;
    }
    return 1;
}

/* Undo an applied-or-not transaction in process and drop its journal. */
static int undo(int chfd, int dfd, const struct txn *t)
{
    if (put_records(chfd, dfd, t, 1) == -1)
        return -1;
    if (t->fmt->undo_remove_quiet)
        return ac_sys_unlinkat(dfd, t->fmt->file, 0) == -1 && errno != ENOENT ? -1 : 0;
    return journal_remove(dfd, t->fmt);
}

/* After a failed audit post of a format that resolves it: decide as
 * recover-pending would (was the message published after all?). 1 the
 * change stands (journal removed), 0 it was rolled back, -1 undecided
 * (the journal stays for recover-pending). */
static int resolve_after_audit(struct ac_chan *ch, int dfd, const struct txn *t)
{
    struct ac_err ignored = AC_ERR_INIT;
    int chfd = fs_chan_fd(ch), found = 0;
    if (t->txid[0] && strlen(t->txid) <= 64)
        found = ac_audit_find_transaction(ch, t->txid, &ignored);
    if (found == -1)
        return -1;
    if (found) {
        if (records_match(chfd, t) != 1)
            return -1;
    } else if (put_records(chfd, dfd, t, 1) == -1) {
        return -1;
    }
    if (journal_remove(dfd, t->fmt) == -1)
        return -1;
    return found;
}

static int journaled_commit(struct ac_chan *ch, const struct format *f, const struct ac_batch *b,
                            struct ac_err *err)
{
    struct txn t;
    struct ac_err aerr = AC_ERR_INIT;
    int chfd = fs_chan_fd(ch), dfd = -1, rc = -1, mkdir_failed, e;
    size_t i;

    t = (struct txn){ .fmt = f, .phase = "prepared", .subject = b->subject, .event = b->event,
                      .actor = b->actor, .operation = b->operation, .details = b->details,
                      .n = b->nchanges };
    if (!(t.c = calloc(t.n ? t.n : 1, sizeof *t.c)))
        return ac_err_sys(err, ENOMEM, f->io_code, "%s", f->msg_journal);
    for (i = 0; i < t.n; i++) {
        const struct ac_change *c = &b->changes[i];
        t.c[i].family = c->family;
        snprintf(t.c[i].name, sizeof t.c[i].name, "%s", c->name);
        t.c[i].before = c->before;
        t.c[i].before_len = c->before_len;
        t.c[i].after = c->after;
        t.c[i].after_len = c->after_len;
    }
    if (ac_uuid4_hex(t.txid) == -1) {
        ac_err_sys(err, errno, f->io_code, "could not make a transaction id");
        goto out;
    }
    dfd = journal_dir(chfd, f, 1, &mkdir_failed);
    if (dfd == -1) {
        if (f->msg_prepare)
            ac_err_sys(err, errno, f->io_code, "%s", f->msg_prepare);
        else
            ac_err_sys(err, errno, f->io_code, "could not %s %s/", mkdir_failed ? "create" : "open",
                       ac_fs_families[f->dir_family].dir);
        goto out;
    }

    /* 1. prepared */
    if (journal_write(dfd, &t, "prepared") == -1) {
        e = errno;
        if (e == EEXIST && f->prepared_noreplace) {
            ac_err_set(err, AC_EXIT_GENERAL, f->pending_code, "%s", f->pending_msg);
            goto out;
        }
        if (f->prepared_noreplace)
            journal_remove(dfd, f);     /* published, then its sync failed: nothing applied */
        ac_err_sys(err, e, f->io_code, "%s", e == ENOMEM && f->msg_encode ? f->msg_encode : f->msg_journal);
        goto out;
    }
    /* 2. apply */
    if (put_records(chfd, dfd, &t, 0) == -1) {
        e = errno;
        if (!f->keep_on_apply_failure) {
            if (e == EEXIST)            /* link() refused: nothing of ours to undo */
                journal_remove(dfd, f);
            else
                undo(chfd, dfd, &t);
        }
        ac_err_sys(err, e, f->io_code, "%s%s%s", f->msg_apply[0], t.subject, f->msg_apply[1]);
        goto out;
    }
    /* 3. applied */
    if (journal_write(dfd, &t, "applied") == -1) {
        e = errno;
        if (!f->keep_on_apply_failure)
            undo(chfd, dfd, &t);
        ac_err_sys(err, e, f->io_code, "%s", f->msg_applied);
        goto out;
    }
    t.phase = "applied";
    /* 4. the audit message, which carries the transaction id */
    if (json_object_set_new(b->audit, "transaction_id", json_string(t.txid)) == -1)
        ac_err_sys(&aerr, ENOMEM, f->io_code, "could not compose the audit message");
    else if (f->audit_point && AC_FAULT(f->audit_point) == -1)
        ac_err_sys(&aerr, errno, f->io_code, "could not post the audit message");
    else if (ac_audit_post(ch, b->actor, b->event, b->subject, b->audit, NULL, &aerr) == 0)
        aerr.code = NULL;
    if (aerr.code) {
        if (f->undo_on_audit_failure) {
            if (undo(chfd, dfd, &t) == -1)
                ac_err_set(err, AC_EXIT_USAGE, f->undo_failed_code,
                           "could not post the audit message (%s) nor roll back", aerr.msg);
            else
                ac_err_set(err, AC_EXIT_USAGE, f->audit_failed_code, "could not post the audit message: %s",
                           aerr.msg);
            goto out;
        }
        /* The post may have failed after its message was published (a
         * failed directory sync): decide as recover-pending would. */
        if (resolve_after_audit(ch, dfd, &t) == 1) {
            rc = 0;
            goto out;
        }
        if (err)
            *err = aerr;
        goto out;
    }
    /* From here on the change is published (its audit message is in the
     * channel): a failure leaves the journal for recover-pending to finish
     * (SPEC 3.6, 3.7). */
    /* 5. published */
    if (journal_write(dfd, &t, "published") == -1 && f->published_must_succeed) {
        ac_err_set(err, AC_EXIT_USAGE, f->unsettled_code, "%s: %s", f->msg_published, strerror(errno));
        goto out;
    }
    /* 6. done */
    if (journal_remove(dfd, f) == -1) {
        ac_err_set(err, f->kind == AC_BATCH_LEASE ? AC_EXIT_USAGE : AC_EXIT_GENERAL, f->unsettled_code,
                   "%s%s%s", f->msg_removed[0], strerror(errno), f->msg_removed[1]);
        goto out;
    }
    rc = 0;
out:
    if (dfd != -1)
        close(dfd);
    free(t.c);
    return rc;
}

/* ------------------------------------------------- the plain task commit */

/* A task record changed without a lease (SPEC 3.5, as in the Python tool):
 * no journal; the record is written, then its audit message posted, and a
 * failure once the record is in place (its directory sync, the post)
 * restores the previous bytes or removes a created record. A crash in
 * between still leaves the record without its message. */
static int undo_task(int chfd, const struct ac_change *c, struct ac_err *err)
{
    char name[NAME_MAX_BYTES + 8], why[AC_ERR_MSG_MAX];
    int tfd = ac_open_dir_at(chfd, ac_fs_families[AC_TASKS].dir), rc = -1, e;

    snprintf(why, sizeof why, "%s", err && err->msg[0] ? err->msg : "unknown error");
    snprintf(name, sizeof name, "%s.json", c->name);
    if (tfd != -1 && AC_FAULT("task.rollback") == 0) {
        if (c->before)
            rc = ac_write_atomic(tfd, name, c->before, c->before_len, 0644, AC_ATOMIC_REPLACE, "task.restore");
        else if ((rc = ac_sys_unlinkat(tfd, name, 0)) == 0)
            rc = ac_fsync_dir(tfd);
    }
    e = errno;
    if (tfd != -1)
        close(tfd);
    if (rc == -1)
        return ac_err_set(err, AC_EXIT_USAGE, "TASK_AUDIT_ROLLBACK_FAILED",
                          "%s, and could not roll back task %s: %s", why, c->name, strerror(e));
    return ac_err_set(err, AC_EXIT_USAGE, "TASK_IO_ERROR", "%s; task %s %s", why, c->name,
                      c->before ? "is unchanged" : "was not created");
}

static int task_commit(struct ac_chan *ch, const struct ac_batch *b, struct ac_err *err)
{
    const struct ac_change *c = &b->changes[0];
    const char *dir = ac_fs_families[AC_TASKS].dir;
    char name[NAME_MAX_BYTES + 8];
    int chfd = fs_chan_fd(ch), tfd, rc, e;

    if (b->nchanges != 1 || c->family != AC_TASKS || !c->after)
        return ac_err_sys(err, EINVAL, "TASK_IO_ERROR", "could not change the task board");
    snprintf(name, sizeof name, "%s.json", c->name);
    if (ac_sys_mkdirat(chfd, dir, 0755) == -1 && errno != EEXIST)
        return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not create %s/", dir);
    if ((tfd = ac_open_dir_at(chfd, dir)) == -1)
        return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not open %s/", dir);
    rc = ac_write_atomic(tfd, name, c->after, c->after_len, 0644,
                         (c->before ? AC_ATOMIC_REPLACE : AC_ATOMIC_NOREPLACE) | AC_ATOMIC_NO_DIRSYNC,
                         "task.record");
    if (rc == -1) {
        e = errno;
        close(tfd);
        if (e == EEXIST)
            return ac_err_set(err, AC_EXIT_USAGE, "TASK_ALREADY_EXISTS", "task record already exists: %s",
                              c->name);
        return ac_err_sys(err, e, "TASK_IO_ERROR", "could not write task record %s", name);
    }
    /* The record is in place: from here a failure undoes it. */
    if (AC_FAULT("task.record.dirsync") == -1 || ac_fsync_dir(tfd) == -1) {
        e = errno;
        close(tfd);
        ac_err_sys(err, e, "TASK_IO_ERROR", "could not sync %s/ after writing %s", dir, name);
        return undo_task(chfd, c, err);
    }
    close(tfd);
    if (ac_audit_post(ch, b->actor, b->event, b->subject, b->audit, NULL, err) == -1) {
        static const char prefix[] = "could not post the audit message: ";
        char why[AC_ERR_MSG_MAX];
        snprintf(why, sizeof why, "%s%.*s", prefix, (int)(sizeof why - sizeof prefix), err ? err->msg : "");
        if (err)
            memcpy(err->msg, why, sizeof why);
        return undo_task(chfd, c, err);
    }
    return 0;
}

/* ------------------------------------------------- the store operations */

int ac_fs_batch_commit(struct ac_chan *ch, const struct ac_batch *b, struct ac_err *err)
{
    const struct format *f = format_of(b->kind);
    if (b->kind == AC_BATCH_TASK)
        return task_commit(ch, b, err);
    if (!f || b->nchanges == 0 || !b->audit)
        return ac_err_sys(err, EINVAL, NULL, "could not change records");
    return journaled_commit(ch, f, b, err);
}

/* Decode journal bytes of format f into *t: 0, or -1 (err). */
static int decode_bytes(const struct format *f, const char *data, size_t len, struct txn *t,
                        struct ac_err *err)
{
    char msg[AC_PYJSON_MSG_MAX];
    json_t *v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    memset(t, 0, sizeof *t);
    t->fmt = f;
    if (!v)
        return f->read_error(0, msg, err);
    t->raw = v;
    if (f->decode(v, t, err) == -1) {
        txn_free(t);
        return -1;
    }
    return 0;
}

/* Read and decode the journal of f into *t: 1, 0 (none), -1 (err). */
static int journal_read(struct ac_chan *ch, const struct format *f, struct txn *t, struct ac_err *err)
{
    char *data;
    size_t len;
    int mkdir_failed, dfd, rc, e;

    memset(t, 0, sizeof *t);
    t->fmt = f;
    dfd = journal_dir(fs_chan_fd(ch), f, 0, &mkdir_failed);
    if (dfd == -1) {
        if (errno == ENOENT)
            return 0;
        return ac_err_sys(err, errno, f->io_code, "could not open %s/", ac_fs_families[f->dir_family].dir);
    }
    rc = ac_read_file_at(dfd, f->file, f->cap, &data, &len);
    e = errno;
    close(dfd);
    if (rc == -1)
        return e == ENOENT ? 0 : f->read_error(e, NULL, err);
    rc = decode_bytes(f, data, len, t, err);
    free(data);
    return rc == -1 ? -1 : 1;
}

static void pending_of(const struct txn *t, struct ac_pending *out)
{
    snprintf(out->phase, sizeof out->phase, "%s", t->phase);
    snprintf(out->txid, sizeof out->txid, "%s", t->txid);
    snprintf(out->subject, sizeof out->subject, "%s", t->subject);
    snprintf(out->event, sizeof out->event, "%s", t->event);
    snprintf(out->operation, sizeof out->operation, "%s", t->operation ? t->operation : "");
}

int ac_fs_journal_recode(int kind, const char *data, size_t len, struct ac_pending *p, char **out,
                         size_t *outlen, struct ac_err *err)
{
    const struct format *f = format_of(kind);
    struct txn t;
    json_t *j;

    *out = NULL;
    if (!f)
        return ac_err_sys(err, EINVAL, NULL, "no journal for this kind");
    if (decode_bytes(f, data, len, &t, err) == -1)
        return -1;
    pending_of(&t, p);
    j = f->encode(&t, t.phase);
    *out = j ? ac_json_dump_line(j, &f->style, outlen) : NULL;
    json_decref(j);
    txn_free(&t);
    return *out ? 0 : ac_err_sys(err, ENOMEM, f->io_code, "could not encode the journal");
}

int ac_fs_pending_read(struct ac_chan *ch, int kind, struct ac_pending *out, struct ac_err *err)
{
    const struct format *f = format_of(kind);
    struct txn t;
    int rc;

    memset(out, 0, sizeof *out);
    if (!f)
        return 0;               /* task batches are never pending */
    rc = journal_read(ch, f, &t, err);
    if (rc != 1)
        return rc;
    pending_of(&t, out);
    txn_free(&t);
    return 1;
}

int ac_fs_pending_settle(struct ac_chan *ch, int kind, int how, struct ac_err *err)
{
    const struct format *f = format_of(kind);
    struct txn t;
    int rc, dfd, mkdir_failed, e;

    if (!f)
        return ac_err_sys(err, EINVAL, NULL, "nothing to settle");
    rc = journal_read(ch, f, &t, err);
    if (rc == 0)
        return ac_err_sys(err, ENOENT, f->io_code, "no pending change");
    if (rc == -1)
        return -1;
    if (how == AC_SETTLE_VERIFY) {
        rc = records_match(fs_chan_fd(ch), &t);
        e = errno;
        txn_free(&t);
        if (rc == -1)
            return ac_err_sys(err, e, f->io_code, "could not read the records of the pending change");
        return rc == 1 ? 0 : 1;
    }
    dfd = journal_dir(fs_chan_fd(ch), f, 1, &mkdir_failed);
    rc = dfd == -1 ? -1 : put_records(fs_chan_fd(ch), dfd, &t, 1);
    e = errno;
    if (dfd != -1)
        close(dfd);
    txn_free(&t);
    if (rc == -1)
        return ac_err_sys(err, e, f->io_code, "could not roll the pending change back");
    return 0;
}

int ac_fs_pending_clear(struct ac_chan *ch, int kind, struct ac_err *err)
{
    const struct format *f = format_of(kind);
    int mkdir_failed, dfd, rc, e;
    if (!f)
        return 0;
    dfd = journal_dir(fs_chan_fd(ch), f, 0, &mkdir_failed);
    if (dfd == -1)
        return errno == ENOENT ? 0 : ac_err_sys(err, errno, f->io_code, "could not remove the journal");
    rc = journal_remove(dfd, f);
    e = errno;
    close(dfd);
    if (rc == -1)
        return ac_err_sys(err, e, f->io_code, "could not remove the journal");
    return 0;
}
