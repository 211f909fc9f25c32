/* lease.c - task leases and the lease journal; see include/agentchat/lease.h.
 *
 * The order of the checks and their messages are the Python tool's
 * (lease_store.py of agent-chat-plugin 0.7): a command meets the errors of
 * its input first, then those of the board, the journal and the claim
 * records in the order that tool reads them, so that the same broken
 * channel gives the same first error with either tool. */
#include "agentchat/lease.h"

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
#include "agentchat/pyjson.h"
#include "agentchat/pystr.h"
#include "agentchat/seq.h"
#include "agentchat/taskrec.h"

#define CLAIM_CAP (1u << 20)
#define JOURNAL_CAP (64u << 20)

static const char *const claim_fields[] = {
    "task_id", "channel", "owner", "lease_expires_at", "claimed_at", "updated_at",
    "previous_owner", "previous_lease_expires_at", "recovery_reason",
};
#define NCLAIM (sizeof claim_fields / sizeof claim_fields[0])
#define NCLAIM_REQUIRED 6       /* the first six must be present */

static const char *const phases[] = { "prepared", "applied", "published" };

/* ---- small helpers ---- */

static int open_claims(struct ac_board *b, int create)
{
    if (create && ac_sys_mkdirat(b->chfd, AC_CLAIMS_DIR, 0755) == -1 && errno != EEXIST)
        return -1;
    return ac_open_dir_at(b->chfd, AC_CLAIMS_DIR);
}

/* str(OSError) as Python prints it for a file of the channel:
 * "[Errno 21] Is a directory: '<root>/<channel>/claims/x.json'". */
static const char *os_error(struct ac_board *b, const char *dir, const char *name, int e,
                            char *out, size_t outsz)
{
    char path[1024], shown[1200];
    if (!b->ch) {               /* fsck's board: no root to name */
        snprintf(out, outsz, "[Errno %d] %s", e, strerror(e));
        return out;
    }
    snprintf(path, sizeof path, "%s/%s/%s/%s", b->ch->store->root, b->channel, dir, name);
    snprintf(out, outsz, "[Errno %d] %s: %s", e, strerror(e), ac_py_repr(path, shown, sizeof shown));
    return out;
}

/* Python's `value in {"prepared", "applied", "published"}`. */
static int is_phase(const json_t *v)
{
    size_t i;
    for (i = 0; v && json_is_string(v) && i < 3; i++)
        if (strcmp(json_string_value(v), phases[i]) == 0 &&
            strlen(phases[i]) == json_string_length(v))
            return 1;
    return 0;
}

/* A JSON value that Python compares equal to the int n (1, 1.0, and True
 * for 1): the journal's `version == 1` test. */
static int py_equals_int(const json_t *v, int n)
{
    if (json_is_integer(v))
        return json_integer_value(v) == n;
    if (json_is_real(v))
        return json_real_value(v) == (double)n;
    if (json_is_boolean(v))
        return (json_is_true(v) ? 1 : 0) == n;
    return 0;
}

/* Python's truth value of a JSON value (a missing key is None). */
static int py_truthy(const json_t *v)
{
    if (!v || json_is_null(v) || json_is_false(v))
        return 0;
    if (json_is_string(v))
        return json_string_length(v) > 0;
    if (json_is_integer(v))
        return json_integer_value(v) != 0;
    if (json_is_real(v))
        return json_real_value(v) != 0.0;
    if (json_is_array(v))
        return json_array_size(v) > 0;
    if (json_is_object(v))
        return ac_pyjson_is_nonfinite(v) || json_object_size(v) > 0;
    return 1;
}

/* The lease store's _validate_identity: a string matching
 * [A-Za-z0-9][A-Za-z0-9._-]*, else "<field> must be a safe identity". */
static int identity(const json_t *v, const char *field, const char *code, struct ac_err *err)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) != json_string_length(v) || !ac_safe_name(s))
        return ac_task_err(err, code, "%s must be a safe identity", field);
    return 0;
}

int ac_lease_reason_check(const char *reason, struct ac_err *err)
{
    size_t start = 0, end = 0;
    if (reason)
        ac_py_strip(reason, strlen(reason), &start, &end);
    if (start >= end)
        return ac_task_err(err, "LEASE_INVALID_REASON", "recovery reason must not be empty");
    if (strpbrk(reason, "\r\n"))
        return ac_task_err(err, "LEASE_INVALID_REASON",
                           "recovery reason contains a forbidden control character");
    return 0;
}

/* Bytes of a claim record: fields in order, indent 2, UTF-8, newline. */
static char *claim_encode(const json_t *claim, size_t *len)
{
    static const struct ac_json_style style = { 2, 0, 0, ",", ": " };
    json_t *ordered = json_object();
    char *body, *out;
    size_t i, n;
    if (!ordered)
        return NULL;
    for (i = 0; i < NCLAIM; i++) {
        json_t *v = json_object_get(claim, claim_fields[i]);
        json_object_set(ordered, claim_fields[i], v ? v : json_null());
    }
    body = ac_json_dump(ordered, &style, &n);
    json_decref(ordered);
    if (!body || !(out = realloc(body, n + 2))) {
        free(body);
        return NULL;
    }
    out[n] = '\n';
    out[n + 1] = '\0';
    *len = n + 1;
    return out;
}

/* The journal's own format: json.dumps(indent=2, sort_keys=True) + "\n". */
static char *journal_encode(const json_t *j, size_t *len)
{
    static const struct ac_json_style style = { 2, 1, 1, ",", ": " };
    size_t n;
    char *body = ac_json_dump(j, &style, &n), *out;
    if (!body || !(out = realloc(body, n + 2))) {
        free(body);
        return NULL;
    }
    out[n] = '\n';
    out[n + 1] = '\0';
    *len = n + 1;
    return out;
}

/* ---- claim records ---- */

/* LeaseRecord.from_dict(): the record's own checks, in the Python order. */
static int claim_check(const json_t *c, struct ac_err *err)
{
    static const char *const times[] = { "lease_expires_at", "claimed_at", "updated_at" };
    const char *key;
    json_t *v;
    size_t i;

    if (!json_is_object(c) || ac_pyjson_is_nonfinite(c))
        return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record must be a JSON object");
    for (i = 0; i < NCLAIM_REQUIRED; i++)
        if (!json_object_get(c, claim_fields[i]))
            return ac_task_err(err, "LEASE_REQUIRED_FIELD_MISSING", "required lease field is missing");
    json_object_foreach((json_t *)c, key, v) {
        for (i = 0; i < NCLAIM; i++)
            if (strcmp(key, claim_fields[i]) == 0)
                break;
        if (i == NCLAIM)
            return ac_task_err(err, "LEASE_UNKNOWN_FIELD", "lease record contains unknown fields");
    }
    if (identity(json_object_get(c, "task_id"), "task_id", "LEASE_INVALID_TASK_ID", err) == -1 ||
        identity(json_object_get(c, "channel"), "channel", "LEASE_INVALID_CHANNEL", err) == -1 ||
        identity(json_object_get(c, "owner"), "owner", "LEASE_INVALID_OWNER", err) == -1)
        return -1;
    for (i = 0; i < 3; i++)
        if (ac_task_time_check(json_object_get(c, times[i]), times[i], "LEASE_INVALID_TIMESTAMP",
                               err) == -1)
            return -1;
    v = json_object_get(c, "previous_owner");
    if (v && !json_is_null(v) &&
        identity(v, "previous_owner", "LEASE_INVALID_OWNER", err) == -1)
        return -1;
    v = json_object_get(c, "previous_lease_expires_at");
    if (v && !json_is_null(v) &&
        ac_task_time_check(v, "previous_lease_expires_at", "LEASE_INVALID_TIMESTAMP", err) == -1)
        return -1;
    v = json_object_get(c, "recovery_reason");
    if (v && !json_is_null(v)) {
        const char *s = json_string_value(v);
        if (!s)
            return ac_task_err(err, "LEASE_INVALID_REASON", "recovery reason must not be empty");
        if (strlen(s) != json_string_length(v))     /* a NUL */
            return ac_task_err(err, "LEASE_INVALID_REASON",
                               "recovery reason contains a forbidden control character");
        if (ac_lease_reason_check(s, err) == -1)
            return -1;
    }
    return 0;
}

/* LeaseRecord.to_dict() equality: the nine fields, absent ones as null. */
static int claims_equal(const json_t *a, const json_t *b)
{
    size_t i;
    for (i = 0; i < NCLAIM; i++) {
        json_t *x = json_object_get(a, claim_fields[i]), *y = json_object_get(b, claim_fields[i]);
        if (!json_equal(x ? x : json_null(), y ? y : json_null()))
            return 0;
    }
    return 1;
}

/* _read_claim(): claims/<name> read and checked, then its channel and its
 * file name. *out is a new reference. */
static int read_claim(struct ac_board *b, int cfd, const char *name, json_t **out,
                      struct ac_err *err)
{
    char *data, msg[AC_PYJSON_MSG_MAX], a[300], c[300];
    size_t len;
    json_t *v;
    const char *task, *owner;

    *out = NULL;
    if (ac_read_file_at(cfd, name, CLAIM_CAP, &data, &len) == -1) {
        if (errno == ENOENT)
            return ac_task_err(err, "LEASE_NOT_FOUND", "lease record does not exist: %s", name);
        return ac_task_err(err, "LEASE_INVALID_RECORD", "could not read lease record %s: %s", name,
                           os_error(b, AC_CLAIMS_DIR, name, errno, msg, sizeof msg));
    }
    v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    free(data);
    if (!v)
        return ac_task_err(err, "LEASE_INVALID_RECORD", "could not read lease record %s: %s", name, msg);
    if (claim_check(v, err) == -1)
        goto fail;
    if (strcmp(json_string_value(json_object_get(v, "channel")), b->channel) != 0) {
        ac_task_err(err, "LEASE_INCONSISTENT", "lease channel %s does not match %s",
                    ac_py_repr(json_string_value(json_object_get(v, "channel")), a, sizeof a),
                    ac_py_repr(b->channel, c, sizeof c));
        goto fail;
    }
    task = json_string_value(json_object_get(v, "task_id"));
    owner = json_string_value(json_object_get(v, "owner"));
    if (strlen(name) != strlen(task) + 1 + strlen(owner) + 5 ||
        strncmp(name, task, strlen(task)) != 0 || name[strlen(task)] != '.' ||
        strncmp(name + strlen(task) + 1, owner, strlen(owner)) != 0 ||
        strcmp(name + strlen(task) + 1 + strlen(owner), ".json") != 0) {
        ac_task_err(err, "LEASE_RECORD_ID_MISMATCH", "lease identity does not match filename %s",
                    ac_py_repr(name, a, sizeof a));
        goto fail;
    }
    *out = v;
    return 0;
fail:
    json_decref(v);
    return -1;
}

struct claim_names {
    const char *id;             /* NULL: every record; else "<id>.*.json" only */
    char **v;
    size_t n;
    int oom;
};

/* Record names: "*.json" not starting with '.' or '_'. */
static int claim_name_cb(void *ctx, const char *name, unsigned char type)
{
    struct claim_names *c = ctx;
    size_t len = strlen(name), idlen = c->id ? strlen(c->id) : 0;
    char **nv;
    (void)type;
    if (name[0] == '.' || name[0] == '_' || len < 5 || strcmp(name + len - 5, ".json") != 0)
        return 0;
    if (c->id && (len <= idlen + 6 || strncmp(name, c->id, idlen) != 0 || name[idlen] != '.'))
        return 0;
    nv = realloc(c->v, (c->n + 1) * sizeof *nv);
    if (!nv || !(nv[c->n] = strdup(name))) {
        c->v = nv ? nv : c->v;
        c->oom = 1;
        return 1;
    }
    c->v = nv;
    c->n++;
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The claim of task `id` among the claim records: every record when `all`
 * (the Python tool reads them all, so a broken claim of another task fails
 * a lease command too), else only the files named after the task. Two or
 * more claims of the task are LEASE_INCONSISTENT. */
static int find_claim(struct ac_board *b, const char *id, int all, json_t **claim, char **file,
                      struct ac_err *err)
{
    struct claim_names c;
    json_t *found = NULL;
    char *found_name = NULL;
    size_t i, hits = 0;
    int cfd, rc = 0;

    *claim = NULL;
    *file = NULL;
    cfd = open_claims(b, 0);
    if (cfd == -1)
        return errno == ENOENT ? 0 : ac_err_sys(err, errno, "TASK_IO_ERROR", "could not open claims/");
    memset(&c, 0, sizeof c);
    c.id = all ? NULL : id;
    if (ac_dir_walk(cfd, claim_name_cb, &c) == -1 || c.oom) {
        close(cfd);
        ac_names_free(c.v, c.n);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not list claims/");
    }
    if (c.n > 1)
        qsort(c.v, c.n, sizeof *c.v, cmp_name);
    for (i = 0; i < c.n && rc == 0; i++) {
        json_t *v;
        rc = read_claim(b, cfd, c.v[i], &v, err);
        if (rc == -1)
            break;
        if (strcmp(json_string_value(json_object_get(v, "task_id")), id) != 0) {
            json_decref(v);
            continue;
        }
        if (hits++ == 0) {
            found = v;
            if (!(found_name = strdup(c.v[i])))
                rc = ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
        } else {
            json_decref(v);
        }
    }
    close(cfd);
    ac_names_free(c.v, c.n);
    if (rc == 0 && hits > 1)
        rc = ac_task_err(err, "LEASE_INCONSISTENT", "multiple active leases exist for task %s", id);
    if (rc == -1) {
        json_decref(found);
        free(found_name);
        return -1;
    }
    *claim = found;
    *file = found_name;
    return 0;
}

/* _assert_consistent(): the task and its claim (or its absence) agree. */
static int consistent(const json_t *task, const json_t *claim, struct ac_err *err)
{
    const char *id = ac_task_str(task, "id");
    if (!claim) {
        if (!json_is_null(json_object_get(task, "lease_expires_at")))
            return ac_task_err(err, "LEASE_INCONSISTENT",
                               "task %s has a lease expiry without an active claim record", id);
        return 0;
    }
    if (!json_equal(json_object_get(claim, "owner"), json_object_get(task, "owner")) ||
        !json_equal(json_object_get(claim, "lease_expires_at"),
                    json_object_get(task, "lease_expires_at")))
        return ac_task_err(err, "LEASE_INCONSISTENT", "task %s and claim record disagree", id);
    return 0;
}

static int claim_expired(const json_t *claim)
{
    return ac_task_time(claim, "lease_expires_at") <= ac_isotime_now_us();
}

int ac_lease_state(struct ac_board *b, const char *id, json_t **claim, char **claim_file,
                   int *expired, struct ac_err *err)
{
    const json_t *task = json_object_get(b->tasks, id);
    *expired = 0;
    if (find_claim(b, id, 0, claim, claim_file, err) == -1)
        return -1;
    if (task && consistent(task, *claim, err) == -1) {
        json_decref(*claim);
        free(*claim_file);
        *claim = NULL;
        *claim_file = NULL;
        return -1;
    }
    if (*claim)
        *expired = claim_expired(*claim);
    return 0;
}

/* ---- the journal ---- */

struct change {
    char file[300];
    char *prev, *next;          /* file bytes; NULL = absent */
    size_t prev_len, next_len;
    json_t *prev_rec, *next_rec;  /* the claims, decoded (recovery only) */
};

static void changes_free(struct change *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        free(c[i].prev);
        free(c[i].next);
        json_decref(c[i].prev_rec);
        json_decref(c[i].next_rec);
    }
}

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

static int journal_invalid(struct ac_err *err, const char *msg)
{
    return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "%s", msg);
}

/* _read_transaction(): 0 = none, 1 = *out (new reference), -1 = error.
 * Only what every reader needs is checked here; recover-pending checks
 * the rest (lease.h). */
static int read_journal(struct ac_board *b, json_t **out, struct ac_err *err)
{
    static const char *const needed[] = { "task_file", "task_before", "claim_changes", "event" };
    char *data, msg[AC_PYJSON_MSG_MAX];
    size_t len, i;
    json_t *v, *version;
    int cfd = open_claims(b, 0), e;

    *out = NULL;
    if (cfd == -1)
        return errno == ENOENT ? 0 : ac_err_sys(err, errno, "TASK_IO_ERROR", "could not open claims/");
    if (ac_read_file_at(cfd, AC_LEASE_JOURNAL, JOURNAL_CAP, &data, &len) == -1) {
        e = errno;
        close(cfd);
        if (e == ENOENT)
            return 0;
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "could not read transaction journal: %s",
                           os_error(b, AC_CLAIMS_DIR, AC_LEASE_JOURNAL, e, msg, sizeof msg));
    }
    close(cfd);
    v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    free(data);
    if (!v)
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "could not read transaction journal: %s", msg);
    version = json_object_get(v, "version");
    if (!json_is_object(v) || ac_pyjson_is_nonfinite(v) ||
        !(py_equals_int(version, 1) || py_equals_int(version, 2))) {
        json_decref(v);
        return journal_invalid(err, "transaction journal has an unsupported shape");
    }
    if (py_equals_int(version, 2)) {
        json_t *txid = json_object_get(v, "transaction_id");
        if (!json_is_string(txid) || json_string_length(txid) == 0) {
            json_decref(v);
            return journal_invalid(err, "transaction journal is missing transaction_id");
        }
        if (!is_phase(json_object_get(v, "phase"))) {
            json_decref(v);
            return journal_invalid(err, "version 2 transaction journal requires an explicit valid phase");
        }
    }
    for (i = 0; i < 4; i++)
        if (!json_object_get(v, needed[i])) {
            json_decref(v);
            return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "transaction journal is missing %s",
                               needed[i]);
        }
    if (!json_is_array(json_object_get(v, "claim_changes"))) {
        json_decref(v);
        return journal_invalid(err, "transaction journal claim_changes must be an array");
    }
    *out = v;
    return 1;
}

int ac_lease_journal_guard(struct ac_board *b, struct ac_err *err)
{
    json_t *j;
    int rc = read_journal(b, &j, err);
    if (rc <= 0)
        return rc;
    json_decref(j);
    return ac_task_err(err, "LEASE_TRANSACTION_PENDING",
                       "a previous lease mutation needs explicit recovery");
}

int ac_lease_journal_peek(struct ac_board *b, struct ac_lease_pending *out, struct ac_err *err)
{
    json_t *j, *phase;
    int rc = read_journal(b, &j, err);
    if (rc <= 0)
        return rc;
    phase = json_object_get(j, "phase");
    snprintf(out->phase, sizeof out->phase, "%s",
             json_is_string(phase) ? json_string_value(phase) : phase ? "?" : "prepared");
    snprintf(out->task_id, sizeof out->task_id, "%s",
             json_is_string(json_object_get(j, "task_id")) ? ac_task_str(j, "task_id") : "?");
    snprintf(out->event, sizeof out->event, "%s",
             json_is_string(json_object_get(j, "event")) ? ac_task_str(j, "event") : "?");
    json_decref(j);
    return 1;
}

static int write_journal(int cfd, const json_t *j, int tag_phase, struct ac_err *err)
{
    static const char *const tags[] = { "lease.journal.prepared", "lease.journal.applied",
                                        "lease.journal.published" };
    size_t len;
    char *bytes = journal_encode(j, &len);
    int rc;
    if (!bytes)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode the lease journal");
    rc = ac_write_atomic(cfd, AC_LEASE_JOURNAL, bytes, len, 0644, AC_ATOMIC_REPLACE, tags[tag_phase]);
    free(bytes);
    if (rc == -1)
        return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not write the lease journal");
    return 0;
}

static int set_phase(int cfd, json_t *j, const char *phase, int tag, struct ac_err *err)
{
    json_object_set_new(j, "phase", json_string(phase));
    return write_journal(cfd, j, tag, err);
}

/* Does claims/<name> hold exactly these bytes? */
static int file_holds(int cfd, const char *name, const char *bytes, size_t len)
{
    char *data;
    size_t n;
    int same;
    if (ac_read_file_at(cfd, name, CLAIM_CAP, &data, &n) == -1)
        return 0;
    same = n == len && memcmp(data, bytes, n) == 0;
    free(data);
    return same;
}

/* Put the claim files in the state given by `use_next` (the previous
 * states are restored in reverse order, as the Python tool does). */
static int apply_claims(int cfd, const struct change *c, size_t n, int use_next)
{
    size_t k;
    for (k = 0; k < n; k++) {
        size_t i = use_next ? k : n - 1 - k;
        const char *bytes = use_next ? c[i].next : c[i].prev;
        size_t len = use_next ? c[i].next_len : c[i].prev_len;
        const char *other = use_next ? c[i].prev : c[i].next;
        if (!bytes) {
            if (AC_FAULT("lease.claim.unlink") == -1)
                return -1;
            /* Undoing a create removes only the record the journal wrote:
             * a file there with other bytes is another task's (issue 14.4). */
            if (!use_next && other && !file_holds(cfd, c[i].file, other, c[i].next_len))
                continue;
            /* ENAMETOOLONG: a name that cannot exist is absent too. */
            if (ac_sys_unlinkat(cfd, c[i].file, 0) == -1 && errno != ENOENT && errno != ENAMETOOLONG)
                return -1;
            continue;
        }
        /* A new claim never replaces one that appeared meanwhile. */
        if (ac_write_atomic(cfd, c[i].file, bytes, len, 0644,
                            other || !use_next ? AC_ATOMIC_REPLACE : AC_ATOMIC_NOREPLACE,
                            "lease.claim") == -1)
            return -1;
    }
    return ac_fsync_dir(cfd);
}

static int write_task_bytes(struct ac_board *b, const char *id, const char *bytes, size_t len)
{
    char name[300];
    int tfd, rc;
    if (ac_sys_mkdirat(b->chfd, AC_TASKS_DIR, 0755) == -1 && errno != EEXIST)
        return -1;
    tfd = ac_open_dir_at(b->chfd, AC_TASKS_DIR);
    if (tfd == -1)
        return -1;
    snprintf(name, sizeof name, "%s.json", id);
    rc = ac_write_atomic(tfd, name, bytes, len, 0644, AC_ATOMIC_REPLACE, "lease.task");
    close(tfd);
    return rc;
}

/* Undo an applied mutation in-process (after a failed audit post). */
static int rollback(struct ac_board *b, int cfd, const char *id, const char *before, size_t blen,
                    const struct change *c, size_t n)
{
    if (write_task_bytes(b, id, before, blen) == -1 || apply_claims(cfd, c, n, 0) == -1)
        return -1;
    return ac_sys_unlinkat(cfd, AC_LEASE_JOURNAL, 0) == -1 && errno != ENOENT ? -1 : 0;
}

/* _run_transaction(): the journaled mutation before -> after with claim
 * changes c[0..n). Failures before the audit message is out roll back and
 * report TASK_AUDIT_FAILED (the audit post), LEASE_AUDIT_FAILED (a file
 * operation) or LEASE_AUDIT_ROLLBACK_FAILED; after it,
 * LEASE_TRANSACTION_CLEANUP_FAILED with the journal left for
 * recover-pending. */
static int commit(struct ac_board *b, const char *actor, const char *event, json_t *before,
                  json_t *after, struct change *c, size_t n, json_t *details, struct ac_err *err)
{
    const char *id = ac_task_str(after, "id");
    char txid[33], name[300];
    char *before_bytes = NULL, *after_bytes;
    size_t before_len = 0, after_len, i;
    json_t *j, *list, *body;
    int cfd, tfd, rc, posted = 0;
    struct ac_err aerr = AC_ERR_INIT, perr = AC_ERR_INIT;

    if (ac_uuid4_hex(txid) == -1)
        return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not make a transaction id");
    /* task_before: the record's bytes exactly as they are on disk. */
    snprintf(name, sizeof name, "%s.json", id);
    tfd = ac_open_dir_at(b->chfd, AC_TASKS_DIR);
    if (tfd == -1 || ac_read_file_at(tfd, name, AC_TASK_RECORD_CAP, &before_bytes, &before_len) == -1) {
        int e = errno;
        if (tfd != -1)
            close(tfd);
        return ac_err_sys(err, e, "TASK_IO_ERROR", "could not read task record %s", name);
    }
    close(tfd);
    after_bytes = ac_task_encode(after, &after_len);
    cfd = open_claims(b, 1);
    if (!after_bytes || cfd == -1) {
        int e = after_bytes ? errno : ENOMEM;
        free(before_bytes);
        free(after_bytes);
        if (cfd != -1)
            close(cfd);
        return ac_err_sys(err, e, "TASK_IO_ERROR", "could not prepare the lease journal");
    }
    j = json_object();
    list = json_array();
    for (i = 0; i < n; i++) {
        json_t *item = json_object();
        json_object_set_new(item, "file", json_string(c[i].file));
        json_object_set_new(item, "previous", b64_value(c[i].prev, c[i].prev_len));
        json_object_set_new(item, "next", b64_value(c[i].next, c[i].next_len));
        json_array_append_new(list, item);
    }
    json_object_set_new(j, "version", json_integer(2));
    json_object_set_new(j, "phase", json_string("prepared"));
    json_object_set_new(j, "transaction_id", json_string(txid));
    json_object_set_new(j, "task_id", json_string(id));
    {
        char tf[320];
        snprintf(tf, sizeof tf, "%s/%s", AC_TASKS_DIR, name);
        json_object_set_new(j, "task_file", json_string(tf));
    }
    json_object_set_new(j, "task_before", b64_value(before_bytes, before_len));
    json_object_set_new(j, "task_after", b64_value(after_bytes, after_len));
    json_object_set_new(j, "claim_changes", list);
    json_object_set_new(j, "event", json_string(event));
    json_object_set(j, "details", details);

    rc = write_journal(cfd, j, 0, err);
    if (rc == 0 && (write_task_bytes(b, id, after_bytes, after_len) == -1 ||
                    apply_claims(cfd, c, n, 1) == -1))
        rc = ac_err_sys(&aerr, errno, "TASK_IO_ERROR", "could not apply the lease change to %s", id);
    if (rc == 0 && set_phase(cfd, j, "applied", 1, &aerr) == -1)
        rc = -1;
    if (rc == 0) {
        body = ac_board_audit_body(b, event, before, after);
        json_object_update(body, details);
        json_object_set_new(body, "transaction_id", json_string(txid));
        if (AC_FAULT("lease.audit") == -1)
            rc = ac_err_sys(&perr, errno, "TASK_IO_ERROR", "could not post the audit message");
        else
            rc = ac_audit_post(b->ch, actor, event, id, body, NULL, &perr);
        json_decref(body);
        posted = rc == 0;
    }
    if (rc == -1 && !posted && (aerr.code != NULL || perr.code != NULL)) {
        if (rollback(b, cfd, id, before_bytes, before_len, c, n) == -1)
            rc = ac_task_err(err, "LEASE_AUDIT_ROLLBACK_FAILED",
                             "could not roll back lease mutation: [Errno %d] %s", errno, strerror(errno));
        else if (perr.code != NULL)
            rc = ac_task_err(err, "TASK_AUDIT_FAILED",
                             "task record changed but audit event could not be written: %s", perr.msg);
        else
            rc = ac_task_err(err, "LEASE_AUDIT_FAILED", "lease mutation audit failed: %s", aerr.msg);
    }
    /* From here on the change is published (its audit message is in the
     * channel): a failure is LEASE_TRANSACTION_CLEANUP_FAILED (format.md 3.6),
     * and the journal left behind makes recover-pending finish it. */
    if (rc == 0 && set_phase(cfd, j, "published", 2, &perr) == -1)
        rc = ac_task_err(err, "LEASE_TRANSACTION_CLEANUP_FAILED",
                         "lease mutation audit is durable but journal cleanup failed: %s",
                         strerror(perr.sys_errno));
    if (rc == 0 && (AC_FAULT("lease.journal.delete") == -1 ||
                    ac_sys_unlinkat(cfd, AC_LEASE_JOURNAL, 0) == -1 || ac_fsync_dir(cfd) == -1))
        rc = ac_task_err(err, "LEASE_TRANSACTION_CLEANUP_FAILED",
                         "lease mutation committed but journal cleanup failed: %s", strerror(errno));
    json_decref(j);
    close(cfd);
    free(before_bytes);
    free(after_bytes);
    return rc;
}

/* ---- operations ---- */

static json_t *new_claim(const char *id, const char *channel, const char *owner,
                         const char *expires, const char *claimed, const char *now,
                         const json_t *prev_owner, const json_t *prev_expires, const json_t *reason)
{
    json_t *c = json_object();
    json_object_set_new(c, "task_id", json_string(id));
    json_object_set_new(c, "channel", json_string(channel));
    json_object_set_new(c, "owner", json_string(owner));
    json_object_set_new(c, "lease_expires_at", json_string(expires));
    json_object_set_new(c, "claimed_at", json_string(claimed));
    json_object_set_new(c, "updated_at", json_string(now));
    json_object_set(c, "previous_owner", prev_owner ? (json_t *)prev_owner : json_null());
    json_object_set(c, "previous_lease_expires_at", prev_expires ? (json_t *)prev_expires : json_null());
    json_object_set(c, "recovery_reason", reason ? (json_t *)reason : json_null());
    return c;
}

static int claim_bytes(const json_t *claim, char **out, size_t *len, struct ac_err *err)
{
    *out = claim_encode(claim, len);
    return *out ? 0 : ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode a lease record");
}

/* The bytes of claims/<file> now (NULL when there is none). */
static int read_claim_bytes(struct ac_board *b, const char *file, char **out, size_t *len,
                            struct ac_err *err)
{
    int cfd = open_claims(b, 0);
    int rc = cfd == -1 ? -1 : ac_read_file_at(cfd, file, CLAIM_CAP, out, len);
    int e = errno;
    if (cfd != -1)
        close(cfd);
    if (rc == -1 && e == ENOENT) {
        *out = NULL;
        return 0;
    }
    return rc == -1 ? ac_err_sys(err, e, "TASK_IO_ERROR", "could not read lease record %s", file) : 0;
}

/* A new lease record claims/<file> must not exist yet: a dotted task id
 * and a dotted owner can name another task's record ("t1" of "bob.evil" and
 * "t1.bob" of "evil" are both t1.bob.evil.json). Refuse before anything is
 * written (the journal's create would fail halfway, and its rollback would
 * delete the other task's record). */
static int check_claim_name_free(struct ac_board *b, const char *file, const char *id,
                                 const char *owner, struct ac_err *err)
{
    struct stat st;
    int cfd = open_claims(b, 0), taken;
    if (cfd == -1)
        return errno == ENOENT ? 0 : ac_err_sys(err, errno, "TASK_IO_ERROR", "could not open claims/");
    taken = fstatat(cfd, file, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
    close(cfd);
    if (taken)
        return ac_task_err(err, "LEASE_NAME_COLLISION",
                           "lease record %s of task %s for %s already exists and is not that task's "
                           "(another task id and owner give the same file name); use another owner name",
                           file, id, owner);
    return 0;
}

/* _expiry(): now + seconds as a lease expiry, or LEASE_INVALID_DURATION. */
static int lease_expiry(int64_t now_us, double seconds, char out[48], struct ac_err *err)
{
    int64_t at;
    int rc = ac_isotime_expiry(now_us, seconds, &at);
    if (rc == -1)
        return ac_task_err(err, "LEASE_INVALID_DURATION", "lease duration must be positive");
    if (rc == -2)
        return ac_task_err(err, "LEASE_INVALID_DURATION",
                           "lease duration is outside the supported timestamp range");
    ac_isotime_format(at, 6, out);
    return 0;
}

static int owner_mismatch(const char *id, const json_t *claim, const char *actor, struct ac_err *err)
{
    const char *holder = ac_task_str(claim, "owner");
    if (strcmp(holder, actor) == 0)
        return 0;
    return ac_task_err(err, "LEASE_OWNER_MISMATCH", "lease for task %s belongs to %s", id, holder);
}

static int recovery_required(const char *id, const json_t *claim, struct ac_err *err)
{
    if (!claim_expired(claim))
        return 0;
    return ac_task_err(err, "LEASE_RECOVERY_REQUIRED",
                       "expired lease for task %s requires explicit recovery", id);
}

int ac_lease_update_gate(struct ac_board *b, const json_t *cur, const char *actor, int owner_given,
                         const char *status, struct ac_err *err)
{
    const char *id = ac_task_str(cur, "id");
    json_t *claim = NULL;
    char *file = NULL;
    int rc = -1;

    if (ac_lease_journal_guard(b, err) == -1 || find_claim(b, id, 1, &claim, &file, err) == -1)
        return -1;
    if (consistent(cur, claim, err) == -1)
        goto out;
    if (claim && (recovery_required(id, claim, err) == -1 || owner_mismatch(id, claim, actor, err) == -1))
        goto out;
    if (claim && (owner_given || (status && strcmp(status, ac_task_str(cur, "status")) != 0))) {
        ac_task_err(err, "LEASE_MUTATION_REQUIRED", "task %s must be changed through its lease operation",
                    id);
        goto out;
    }
    rc = 0;
out:
    json_decref(claim);
    free(file);
    return rc;
}

/* claims/<id>.<owner>.json must be a possible file name: refuse before
 * anything is written rather than fail halfway through a journal (the
 * Python tool stops with an OSError there). */
static int claim_name_fits(const char *id, const char *owner, struct ac_err *err)
{
    if (strlen(id) + strlen(owner) + 6 <= 255)
        return 0;
    return ac_task_err(err, "LEASE_INVALID_OWNER",
                       "lease record name %s.%s.json would be longer than 255 bytes", id, owner);
}

int ac_lease_apply(struct ac_board *b, enum ac_lease_op op, const char *id, const char *actor,
                   double seconds, const char *reason, json_t **out, struct ac_err *err)
{
    json_t *cur, *claim = NULL, *after = NULL, *details = NULL, *nclaim = NULL;
    char *claim_file = NULL, now[48], expires[48];
    const char *event = NULL, *target;
    struct change ch[2];
    size_t nch = 0;
    int64_t now_us;
    int rc = -1;

    memset(ch, 0, sizeof ch);
    if (op == AC_LEASE_BLOCK) {
        /* The Python tool's `task block` is a task update (status blocked). */
        struct ac_task_change chg;
        memset(&chg, 0, sizeof chg);
        chg.status = "blocked";
        return ac_board_update(b, id, actor, &chg, out, err);
    }
    if (!ac_safe_name(actor))
        return ac_task_err(err, "LEASE_INVALID_OWNER", "owner must be a safe identity");
    if (op == AC_LEASE_RECOVER && ac_lease_reason_check(reason, err) == -1)
        return -1;
    if (!ac_task_id_findable(id))
        return ac_task_unsafe_id(id, err);
    if (ac_board_load(b, 1, err) == -1 || !(cur = ac_board_get(b, id, err)))
        return -1;
    if (ac_lease_journal_guard(b, err) == -1 || find_claim(b, id, 1, &claim, &claim_file, err) == -1)
        return -1;
    now_us = ac_isotime_now_us();
    ac_isotime_format(now_us, 6, now);
    after = json_deep_copy(cur);
    details = json_object();
    if (!after || !details) {
        ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
        goto done;
    }
    json_object_set_new(after, "updated_at", json_string(now));

    switch (op) {
    case AC_LEASE_CLAIM:
        if (claim) {
            if (consistent(cur, claim, err) == -1 || recovery_required(id, claim, err) == -1)
                goto done;
            ac_task_err(err, "LEASE_CONFLICT", "task %s is leased by %s", id, ac_task_str(claim, "owner"));
            goto done;
        }
        if (!json_is_null(json_object_get(cur, "lease_expires_at"))) {
            ac_task_err(err, "LEASE_INCONSISTENT", "task %s has a lease expiry without a claim record", id);
            goto done;
        }
        if (ac_task_str(cur, "owner") && strcmp(ac_task_str(cur, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_CONFLICT", "task %s is assigned to %s", id, ac_task_str(cur, "owner"));
            goto done;
        }
        if (lease_expiry(now_us, seconds, expires, err) == -1)
            goto done;
        json_object_set_new(after, "status", json_string("in_progress"));
        json_object_set_new(after, "owner", json_string(actor));
        json_object_set_new(after, "lease_expires_at", json_string(expires));
        if (ac_board_candidate(b, cur, after, 0, err) == -1 || claim_name_fits(id, actor, err) == -1)
            goto done;
        nclaim = new_claim(id, b->channel, actor, expires, now, now, NULL, NULL, NULL);
        snprintf(ch[0].file, sizeof ch[0].file, "%s.%s.json", id, actor);
        if (check_claim_name_free(b, ch[0].file, id, actor, err) == -1 ||
            claim_bytes(nclaim, &ch[0].next, &ch[0].next_len, err) == -1)
            goto done;
        nch = 1;
        event = "lease.claimed";
        json_object_set_new(details, "lease_expires_at", json_string(expires));
        json_object_set_new(details, "lease_owner", json_string(actor));
        break;

    case AC_LEASE_RENEW:
        if (consistent(cur, claim, err) == -1)
            goto done;
        if (!claim) {
            ac_task_err(err, "LEASE_NOT_FOUND", "no active lease for task %s", id);
            goto done;
        }
        if (owner_mismatch(id, claim, actor, err) == -1 || recovery_required(id, claim, err) == -1 ||
            lease_expiry(now_us, seconds, expires, err) == -1)
            goto done;
        json_object_set_new(after, "owner", json_string(actor));
        json_object_set_new(after, "lease_expires_at", json_string(expires));
        if (ac_board_candidate(b, cur, after, 0, err) == -1)
            goto done;
        nclaim = new_claim(id, b->channel, actor, expires, ac_task_str(claim, "claimed_at"), now,
                           json_object_get(claim, "previous_owner"),
                           json_object_get(claim, "previous_lease_expires_at"),
                           json_object_get(claim, "recovery_reason"));
        snprintf(ch[0].file, sizeof ch[0].file, "%s", claim_file);
        if (read_claim_bytes(b, claim_file, &ch[0].prev, &ch[0].prev_len, err) == -1 ||
            claim_bytes(nclaim, &ch[0].next, &ch[0].next_len, err) == -1)
            goto done;
        nch = 1;
        event = "lease.renewed";
        json_object_set_new(details, "lease_expires_at", json_string(expires));
        json_object_set_new(details, "lease_owner", json_string(actor));
        break;

    case AC_LEASE_RELEASE:
    case AC_LEASE_DONE:
        target = op == AC_LEASE_DONE ? "done" : "open";
        if (consistent(cur, claim, err) == -1)
            goto done;
        json_object_set_new(after, "status", json_string(target));
        if (!claim) {
            /* No lease: the plain transition, still through the journal. */
            if (ac_board_candidate(b, cur, after, 0, err) == -1)
                goto done;
            event = "task.updated";
            json_object_set_new(details, "lease_fallback",
                                json_string(op == AC_LEASE_DONE ? "complete" : "release"));
            break;
        }
        if (owner_mismatch(id, claim, actor, err) == -1 || recovery_required(id, claim, err) == -1)
            goto done;
        json_object_set_new(after, "owner", json_null());
        json_object_set_new(after, "lease_expires_at", json_null());
        if (ac_board_candidate(b, cur, after, 0, err) == -1)
            goto done;
        snprintf(ch[0].file, sizeof ch[0].file, "%s", claim_file);
        if (read_claim_bytes(b, claim_file, &ch[0].prev, &ch[0].prev_len, err) == -1)
            goto done;
        nch = 1;
        event = op == AC_LEASE_DONE ? "lease.completed" : "lease.released";
        json_object_set_new(details, "lease_owner", json_string(actor));
        json_object_set(details, "previous_lease_expires_at", json_object_get(claim, "lease_expires_at"));
        break;

    case AC_LEASE_RECOVER:
        if (!claim) {
            ac_task_err(err, "LEASE_NOT_FOUND", "no active lease for task %s", id);
            goto done;
        }
        if (consistent(cur, claim, err) == -1)
            goto done;
        if (!claim_expired(claim)) {
            ac_task_err(err, "LEASE_NOT_EXPIRED", "lease for task %s is still active", id);
            goto done;
        }
        if (lease_expiry(now_us, seconds, expires, err) == -1)
            goto done;
        json_object_set_new(after, "status", json_string("in_progress"));
        json_object_set_new(after, "owner", json_string(actor));
        json_object_set_new(after, "lease_expires_at", json_string(expires));
        if (ac_board_candidate(b, cur, after, 0, err) == -1 || claim_name_fits(id, actor, err) == -1)
            goto done;
        {
            json_t *why = json_string(reason);
            nclaim = new_claim(id, b->channel, actor, expires, now, now, json_object_get(claim, "owner"),
                               json_object_get(claim, "lease_expires_at"), why);
            json_decref(why);
        }
        snprintf(ch[0].file, sizeof ch[0].file, "%s", claim_file);
        if (read_claim_bytes(b, claim_file, &ch[0].prev, &ch[0].prev_len, err) == -1)
            goto done;
        nch = 1;
        {
            char newfile[300];
            snprintf(newfile, sizeof newfile, "%s.%s.json", id, actor);
            if (strcasecmp(newfile, claim_file) == 0 && strcmp(newfile, claim_file) != 0) {
                ac_task_err(err, "LEASE_INVALID_OWNER",
                            "case-only owner changes are not supported for lease recovery");
                goto done;
            }
            if (strcmp(newfile, claim_file) == 0) {
                if (claim_bytes(nclaim, &ch[0].next, &ch[0].next_len, err) == -1)
                    goto done;
            } else {
                snprintf(ch[1].file, sizeof ch[1].file, "%s", newfile);
                if (check_claim_name_free(b, newfile, id, actor, err) == -1 ||
                    read_claim_bytes(b, newfile, &ch[1].prev, &ch[1].prev_len, err) == -1 ||
                    claim_bytes(nclaim, &ch[1].next, &ch[1].next_len, err) == -1)
                    goto done;
                nch = 2;
            }
        }
        event = "lease.recovered";
        json_object_set_new(details, "lease_expires_at", json_string(expires));
        json_object_set_new(details, "lease_owner", json_string(actor));
        json_object_set(details, "previous_owner", json_object_get(claim, "owner"));
        json_object_set(details, "previous_lease_expires_at", json_object_get(claim, "lease_expires_at"));
        json_object_set_new(details, "recovery_reason", json_string(reason));
        break;

    case AC_LEASE_BLOCK:
        break;                      /* handled above */
    }

    if (commit(b, actor, event, cur, after, ch, nch, details, err) == 0) {
        json_object_set(b->tasks, id, after);
        *out = after;
        after = NULL;
        rc = 0;
    }
done:
    changes_free(ch, 2);
    json_decref(after);
    json_decref(details);
    json_decref(nclaim);
    json_decref(claim);
    free(claim_file);
    return rc;
}

/* ---- recover-pending ---- */

/* A journal member as bytes (_decode_bytes): 0 with *out (NULL for null or
 * absent), or -1 with LEASE_TRANSACTION_INVALID. */
static int journal_bytes(const json_t *v, char **out, size_t *len, struct ac_err *err)
{
    *out = NULL;
    *len = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return journal_invalid(err, "transaction journal bytes must be base64 text");
    *out = ac_b64_decode(json_string_value(v), json_string_length(v), len);
    if (!*out)
        return journal_invalid(err, "transaction journal bytes are not valid base64");
    return 0;
}

/* task_before / task_after: JSON of a task record of `id` of this channel. */
static int journal_task(struct ac_board *b, const char *field, const char *bytes, size_t len,
                        const char *id, json_t **out, struct ac_err *err)
{
    char msg[AC_PYJSON_MSG_MAX];
    json_t *v = ac_pyjson_loads(bytes, len, 0, msg, sizeof msg);
    const json_t *vid;
    *out = NULL;
    if (!v)
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                           "transaction journal %s is not valid JSON: %s", field, msg);
    vid = json_is_object(v) ? json_object_get(v, "id") : NULL;
    if (!json_is_string(vid) || strcmp(json_string_value(vid), id) != 0 ||
        strlen(id) != json_string_length(vid)) {
        json_decref(v);
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                           "transaction journal %s id does not match task record", field);
    }
    if (ac_task_validate(v, NULL, b->channel, b->chfd, err) == -1) {
        json_decref(v);
        return -1;
    }
    *out = v;
    return 0;
}

/* A claim payload of the journal (_decode_claim_rollback): NULL, or the
 * bytes of a lease record of task `id` named `file`. */
static int journal_claim(struct ac_board *b, const json_t *v, const char *field, const char *file,
                         const char *id, char **bytes, size_t *len, json_t **rec,
                         struct ac_err *err)
{
    char msg[AC_PYJSON_MSG_MAX], want[600];
    json_t *c;
    *rec = NULL;
    if (journal_bytes(v, bytes, len, err) == -1)
        return -1;
    if (!*bytes)
        return 0;
    if (!(c = ac_pyjson_loads(*bytes, *len, 0, msg, sizeof msg)))
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "claim %s payload is not valid JSON: %s",
                           field, msg);
    if (claim_check(c, err) == -1) {
        json_decref(c);
        return -1;
    }
    snprintf(want, sizeof want, "%s.%s.json", ac_task_str(c, "task_id"), ac_task_str(c, "owner"));
    if (strcmp(ac_task_str(c, "task_id"), id) != 0 || strcmp(ac_task_str(c, "channel"), b->channel) != 0 ||
        strcmp(want, file) != 0) {
        json_decref(c);
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                           "claim %s payload does not match its journal filename", field);
    }
    *rec = c;
    return 0;
}

/* Everything recover-pending needs, checked as the Python tool checks it
 * before it touches a file. */
struct plan {
    char id[256];
    char *before;               /* task_before bytes */
    size_t before_len;
    json_t *before_rec, *after_rec;   /* after_rec: task_after, or task_before (legacy) */
    struct change *changes;     /* merged by file, in first-seen order */
    size_t n;
};

static void plan_free(struct plan *p)
{
    free(p->before);
    json_decref(p->before_rec);
    json_decref(p->after_rec);
    if (p->changes) {
        changes_free(p->changes, p->n);
        free(p->changes);
    }
    memset(p, 0, sizeof *p);
}

static int same_bytes(const char *a, size_t al, const char *b, size_t bl)
{
    return (!a && !b) || (a && b && al == bl && memcmp(a, b, al) == 0);
}

/* The claim owner and expiry equal the task's. */
static int lease_matches(const json_t *claim, const json_t *task)
{
    return json_equal(json_object_get(claim, "owner"), json_object_get(task, "owner")) &&
           json_equal(json_object_get(claim, "lease_expires_at"), json_object_get(task, "lease_expires_at"));
}

static int make_plan(struct ac_board *b, const json_t *j, struct plan *p, struct ac_err *err)
{
    const json_t *tf = json_object_get(j, "task_file"), *tid = json_object_get(j, "task_id"), *item;
    const json_t *prev_rec = NULL, *next_rec = NULL;
    const char *s;
    char shown[600], *after = NULL, *slash;
    size_t after_len = 0, i, k, nprev = 0, nnext = 0;
    int legacy;

    memset(p, 0, sizeof *p);
    s = json_string_value(tf);
    if (!s || !json_string_length(tf))
        return journal_invalid(err, "transaction journal has an invalid task_file");
    {
        /* "tasks/<id>.json" ('\' also separates) */
        char portable[600];
        size_t len = json_string_length(tf);
        snprintf(portable, sizeof portable, "%.*s", (int)(len < sizeof portable - 1 ? len : 0), s);
        for (i = 0; portable[i]; i++)
            if (portable[i] == '\\')
                portable[i] = '/';
        slash = strchr(portable, '/');
        len = strlen(portable);
        if (!len || !slash || strchr(slash + 1, '/') || (size_t)(slash - portable) != 5 ||
            strncmp(portable, "tasks", 5) != 0 || len - (size_t)(slash + 1 - portable) < 5 ||
            strcmp(portable + len - 5, ".json") != 0) {
            ac_err_quote(shown, sizeof shown, s, 400);
            return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                               "transaction journal task path outside tasks layout: %s", shown);
        }
        snprintf(p->id, sizeof p->id, "%.*s", (int)(len - (size_t)(slash + 1 - portable) - 5), slash + 1);
    }
    if (!ac_safe_name(p->id))
        return ac_task_err(err, "LEASE_INVALID_TASK_ID", "task_id must be a safe identity");
    if (!json_is_string(tid) || strcmp(json_string_value(tid), p->id) != 0)
        return journal_invalid(err, "transaction task_id does not match task_file stem");
    if (journal_bytes(json_object_get(j, "task_before"), &p->before, &p->before_len, err) == -1)
        return -1;
    if (!p->before)
        return journal_invalid(err, "transaction journal has no task rollback bytes");
    if (journal_task(b, "task_before", p->before, p->before_len, p->id, &p->before_rec, err) == -1)
        return -1;
    legacy = py_equals_int(json_object_get(j, "version"), 1) && !json_object_get(j, "task_after");
    if (journal_bytes(json_object_get(j, "task_after"), &after, &after_len, err) == -1)
        return -1;
    if (!after) {
        if (!legacy)
            return journal_invalid(err, "transaction journal has no task_after rollback bytes");
        p->after_rec = json_incref(p->before_rec);
    } else {
        int rc = journal_task(b, "task_after", after, after_len, p->id, &p->after_rec, err);
        free(after);
        if (rc == -1)
            return -1;
    }

    p->changes = calloc(json_array_size(json_object_get(j, "claim_changes")) + 1, sizeof *p->changes);
    if (!p->changes)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
    json_array_foreach(json_object_get(j, "claim_changes"), i, item) {
        const json_t *file = json_object_get(item, "file");
        struct change c;
        const char *f;
        size_t flen;

        memset(&c, 0, sizeof c);
        if (!json_is_object(item) || ac_pyjson_is_nonfinite(item) || !file)
            return journal_invalid(err, "transaction journal claim change is malformed");
        if (!json_object_get(item, "previous") || !json_object_get(item, "next"))
            return journal_invalid(err, "transaction journal claim change requires previous and next payloads");
        f = json_string_value(file);
        flen = f ? json_string_length(file) : 0;
        if (!f || strlen(f) != flen || strpbrk(f, "/\\") || flen < 5 ||
            strcmp(f + flen - 5, ".json") != 0 || f[0] == '.' || f[0] == '_')
            return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                               "claim change filename outside claims layout: %s",
                               ac_pyjson_repr(file, shown, sizeof shown));
        k = strlen(p->id);
        if (strncmp(f, p->id, k) != 0 || f[k] != '.')
            return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                               "claim change filename does not belong to task: %s",
                               ac_pyjson_repr(file, shown, sizeof shown));
        {
            char owner[300];
            snprintf(owner, sizeof owner, "%.*s", (int)(flen - k - 1 >= 5 ? flen - k - 6 : 0), f + k + 1);
            if (flen < k + 6 || !ac_safe_name(owner))
                return ac_task_err(err, "LEASE_INVALID_OWNER", "owner must be a safe identity");
        }
        if (flen >= sizeof c.file)
            return ac_task_err(err, "LEASE_INVALID_OWNER", "owner must be a safe identity");
        strcpy(c.file, f);
        if (journal_claim(b, json_object_get(item, "previous"), "previous", f, p->id, &c.prev,
                          &c.prev_len, &c.prev_rec, err) == -1 ||
            journal_claim(b, json_object_get(item, "next"), "next", f, p->id, &c.next,
                          &c.next_len, &c.next_rec, err) == -1) {
            changes_free(&c, 1);
            return -1;
        }
        if (!c.prev && !c.next) {
            changes_free(&c, 1);
            return journal_invalid(err, "claim change must include previous or next payload");
        }
        /* One entry per file: the first previous, the last next. */
        for (k = 0; k < p->n; k++)
            if (strcmp(p->changes[k].file, c.file) == 0)
                break;
        if (k < p->n) {
            if (!same_bytes(p->changes[k].prev, p->changes[k].prev_len, c.prev, c.prev_len)) {
                changes_free(&c, 1);
                return journal_invalid(err, "duplicate claim path has conflicting previous payloads");
            }
            free(p->changes[k].next);
            json_decref(p->changes[k].next_rec);
            p->changes[k].next = c.next;
            p->changes[k].next_len = c.next_len;
            p->changes[k].next_rec = c.next_rec;
            free(c.prev);
            json_decref(c.prev_rec);
        } else {
            p->changes[p->n++] = c;
        }
    }
    for (k = 0; k < p->n; k++) {
        if (p->changes[k].prev_rec) {
            nprev++;
            prev_rec = p->changes[k].prev_rec;
        }
        if (p->changes[k].next_rec) {
            nnext++;
            next_rec = p->changes[k].next_rec;
        }
    }
    if (nprev > 1)
        return journal_invalid(err, "transaction has multiple distinct previous claims");
    if (!json_is_null(json_object_get(p->before_rec, "owner")) &&
        !json_is_null(json_object_get(p->before_rec, "lease_expires_at"))) {
        if (!prev_rec)
            return journal_invalid(err, "task_before lease metadata has no previous claim");
        if (!lease_matches(prev_rec, p->before_rec))
            return journal_invalid(err, "task_before lease metadata does not match previous claim");
    } else if (prev_rec) {
        return journal_invalid(err, "previous claim exists without task_before lease metadata");
    }
    if (!legacy) {
        if (nnext > 1)
            return journal_invalid(err, "transaction has multiple active next claims");
        if (next_rec && !lease_matches(next_rec, p->after_rec))
            return journal_invalid(err, "task_after lease metadata does not match next claim");
        if (!next_rec && !json_is_null(json_object_get(p->after_rec, "lease_expires_at")))
            return journal_invalid(err, "task_after retains lease metadata without a next claim");
    }
    return 0;
}

/* TaskRecord.to_dict() equality of two valid records. */
static int tasks_equal(const json_t *a, const json_t *b)
{
    size_t i;
    for (i = 0; i < AC_TASK_NFIELDS; i++)
        if (!json_equal(json_object_get(a, ac_task_fields[i]), json_object_get(b, ac_task_fields[i])))
            return 0;
    return 1;
}

/* The published state is on disk: the task equals task_after and every
 * claim its next payload (absent when null). */
static int verify_published(struct ac_board *b, int cfd, const struct plan *p, json_t **task,
                            struct ac_err *err)
{
    size_t i;
    if (ac_board_read_one(b, p->id, task, err) == -1)
        return -1;
    if (!tasks_equal(*task, p->after_rec))
        return journal_invalid(err, "published transaction task does not match task_after");
    for (i = 0; i < p->n; i++) {
        const struct change *c = &p->changes[i];
        json_t *actual;
        int exists = faccessat(cfd, c->file, F_OK, 0) == 0;
        if (!c->next_rec) {
            if (exists)
                return journal_invalid(err, "published transaction retains a removed claim");
            continue;
        }
        if (!exists)
            return journal_invalid(err, "published transaction is missing its claim");
        if (read_claim(b, cfd, c->file, &actual, err) == -1)
            return -1;
        if (!claims_equal(actual, c->next_rec)) {
            json_decref(actual);
            return journal_invalid(err, "published transaction claim does not match next payload");
        }
        json_decref(actual);
    }
    return 0;
}

static int recovery_audit(struct ac_board *b, const char *actor, const json_t *j, const json_t *rec,
                          const char *event, const char *how, struct ac_err *err)
{
    json_t *body = ac_board_audit_body(b, event, rec, rec), *tid = json_object_get(j, "task_id");
    struct ac_err perr = AC_ERR_INIT;
    int rc;
    if (!body)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode the audit message");
    json_object_set(body, "transaction_event", json_object_get(j, "event"));
    json_object_set_new(body, "transaction_recovery", json_string(how));
    json_object_set(body, "transaction_task_id", tid ? tid : json_null());
    rc = ac_audit_post(b->ch, actor, event, ac_task_str(rec, "id"), body, NULL, &perr);
    json_decref(body);
    if (rc == -1)
        return ac_task_err(err, "TASK_AUDIT_FAILED",
                           "task record changed but audit event could not be written: %s", perr.msg);
    return 0;
}

/* A crashed mutation may have left temp files behind: under the task
 * mutex every temp in tasks/ and claims/ is dead; the channel's post debris
 * is swept under the seq lock. Best effort. */
static void sweep_debris(struct ac_board *b)
{
    struct ac_err ignored = AC_ERR_INIT;
    ac_board_sweep(b);
    ac_seq_sweep(b->chfd, &ignored);
}

static int recovery_failed(struct ac_err *err, const char *what)
{
    return ac_task_err(err, "LEASE_TRANSACTION_RECOVERY_FAILED",
                       "could not recover pending lease transaction: %s: %s", what, strerror(errno));
}

int ac_lease_recover_pending(struct ac_board *b, const char *actor, const char *resolve,
                             struct ac_err *err)
{
    struct plan p;
    json_t *j = NULL, *task = NULL, *phase_v;
    const char *phase;
    char shown[300];
    int rc, cfd = -1, roll;

    if (resolve && strcmp(resolve, "rollback") != 0 && strcmp(resolve, "published") != 0)
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                           "publication_resolution must be rollback or published");
    if (!ac_safe_name(actor))
        return ac_task_err(err, "LEASE_INVALID_OWNER", "actor must be a safe identity");
    memset(&p, 0, sizeof p);
    rc = read_journal(b, &j, err);
    if (rc == -1)
        return -1;
    if (rc == 0) {
        sweep_debris(b);
        return ac_task_err(err, "LEASE_TRANSACTION_NOT_FOUND", "no pending lease transaction exists");
    }
    rc = -1;
    if (make_plan(b, j, &p, err) == -1)
        goto out;
    phase_v = json_object_get(j, "phase");
    if (phase_v && !is_phase(phase_v)) {
        ac_task_err(err, "LEASE_TRANSACTION_INVALID", "unsupported transaction phase: %s",
                    ac_pyjson_repr(phase_v, shown, sizeof shown));
        goto out;
    }
    phase = phase_v ? json_string_value(phase_v) : "prepared";
    if (resolve) {
        if (strcmp(phase, "applied") != 0) {
            ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                        "publication resolution applies only to applied transactions");
            goto out;
        }
        roll = strcmp(resolve, "rollback") == 0;
    } else if (strcmp(phase, "applied") == 0 && py_equals_int(json_object_get(j, "version"), 1) &&
               !py_truthy(json_object_get(j, "transaction_id"))) {
        ac_task_err(err, "LEASE_TRANSACTION_PUBLICATION_UNKNOWN",
                    "legacy applied transaction publication state is unknown; rerun with explicit "
                    "publication resolution");
        goto out;
    } else if (strcmp(phase, "applied") == 0) {
        const json_t *txid = json_object_get(j, "transaction_id");
        int found = 0;
        if (json_is_string(txid) && json_string_length(txid) &&
            strlen(json_string_value(txid)) == json_string_length(txid)) {
            found = ac_audit_find_transaction(b->ch, json_string_value(txid), err);
            if (found == -1)
                goto out;
        }
        roll = !found;
    } else {
        roll = strcmp(phase, "published") != 0;
    }
    cfd = open_claims(b, 1);
    if (cfd == -1) {
        recovery_failed(err, "claims/");
        goto out;
    }
    if (roll) {
        if (write_task_bytes(b, p.id, p.before, p.before_len) == -1 ||
            apply_claims(cfd, p.changes, p.n, 0) == -1) {
            recovery_failed(err, "could not roll back");
            goto out;
        }
        if (ac_board_read_one(b, p.id, &task, err) == -1)
            goto out;
    } else if (verify_published(b, cfd, &p, &task, err) == -1) {
        goto out;
    }
    if (recovery_audit(b, actor, j, task, roll ? "lease.transaction.recovered" : "lease.transaction.cleaned",
                       roll ? "rollback" : "cleanup", err) == -1)
        goto out;
    if ((ac_sys_unlinkat(cfd, AC_LEASE_JOURNAL, 0) == -1 && errno != ENOENT) ||
        ac_fsync_dir(cfd) == -1) {
        recovery_failed(err, "could not remove the lease journal");
        goto out;
    }
    sweep_debris(b);
    rc = 0;
out:
    if (cfd != -1)
        close(cfd);
    json_decref(task);
    json_decref(j);
    plan_free(&p);
    return rc;
}
