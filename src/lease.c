/* lease.c - task leases and the lease journal; see include/agentchat/lease.h. */
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
#include "agentchat/seq.h"
#include "agentchat/taskrec.h"

#define CLAIM_CAP (1u << 20)
#define JOURNAL_CAP (64u << 20)

static const char *const claim_fields[] = {
    "task_id", "channel", "owner", "lease_expires_at", "claimed_at", "updated_at",
    "previous_owner", "previous_lease_expires_at", "recovery_reason",
};
#define NCLAIM (sizeof claim_fields / sizeof claim_fields[0])

/* ---- small helpers ---- */

static int open_claims(struct ac_board *b, int create)
{
    if (create && ac_sys_mkdirat(b->chfd, AC_CLAIMS_DIR, 0755) == -1 && errno != EEXIST)
        return -1;
    return ac_open_dir_at(b->chfd, AC_CLAIMS_DIR);
}

static json_t *nullable(const char *s)
{
    return s ? json_string(s) : json_null();
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

/* ---- claims ---- */

static int check_claim(const json_t *c, const char *file, const char *id, const char *channel,
                       struct ac_err *err)
{
    const char *key;
    json_t *v;
    size_t i;
    int64_t us;
    int flags;
    static const char *const times[] = { "lease_expires_at", "claimed_at", "updated_at" };

    if (!json_is_object(c))
        return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s must be a JSON object", file);
    json_object_foreach((json_t *)c, key, v) {
        for (i = 0; i < NCLAIM; i++)
            if (strcmp(key, claim_fields[i]) == 0)
                break;
        if (i == NCLAIM)
            return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s contains unknown fields", file);
    }
    for (i = 0; i < NCLAIM; i++)
        if (!json_object_get(c, claim_fields[i]))
            return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s is missing required fields", file);
    if (!json_is_string(json_object_get(c, "task_id")) ||
        strcmp(ac_task_str(c, "task_id"), id) != 0 ||
        !json_is_string(json_object_get(c, "channel")) ||
        strcmp(ac_task_str(c, "channel"), channel) != 0 ||
        !ac_safe_name(ac_task_str(c, "owner")))
        return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s does not describe task %s", file, id);
    for (i = 0; i < 3; i++) {
        const char *s = ac_task_str(c, times[i]);
        if (!s || ac_isotime_parse(s, strlen(s), &us, &flags) == -1 ||
            !(flags & AC_ISOTIME_HAS_OFFSET))
            return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s has an invalid %s", file, times[i]);
    }
    return 0;
}

struct claim_names {
    const char *id;
    size_t idlen;
    char **v;
    size_t n;
    int oom;
};

static int claim_name_cb(void *ctx, const char *name, unsigned char type)
{
    struct claim_names *c = ctx;
    size_t len = strlen(name);
    char **nv;
    (void)type;
    if (name[0] == '.' || len <= c->idlen + 6 || strncmp(name, c->id, c->idlen) != 0 ||
        name[c->idlen] != '.' || strcmp(name + len - 5, ".json") != 0)
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

int ac_lease_state(struct ac_board *b, const char *id, json_t **claim, char **claim_file,
                   int *expired, struct ac_err *err)
{
    struct claim_names c;
    json_t *found = NULL;
    char *found_name = NULL;
    const json_t *task = json_object_get(b->tasks, id);
    size_t i;
    int cfd, rc = 0;

    *claim = NULL;
    *claim_file = NULL;
    *expired = 0;
    cfd = open_claims(b, 0);
    if (cfd == -1)
        return errno == ENOENT ? 0 : ac_err_sys(err, errno, "TASK_IO_ERROR", "could not open claims/");
    memset(&c, 0, sizeof c);
    c.id = id;
    c.idlen = strlen(id);
    if (ac_dir_walk(cfd, claim_name_cb, &c) == -1 || c.oom) {
        close(cfd);
        ac_names_free(c.v, c.n);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not list claims/");
    }
    for (i = 0; i < c.n && rc == 0; i++) {
        char *data, msg[AC_PYJSON_MSG_MAX];
        size_t len;
        json_t *v;
        if (ac_read_file_at(cfd, c.v[i], CLAIM_CAP, &data, &len) == -1) {
            rc = ac_task_err(err, "LEASE_INVALID_RECORD", "could not read lease record %s: [Errno %d] %s",
                             c.v[i], errno, strerror(errno));
            break;
        }
        v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
        free(data);
        if (!v) {
            rc = ac_task_err(err, "LEASE_INVALID_RECORD", "could not read lease record %s: %s",
                             c.v[i], msg);
            break;
        }
        /* A dotted task id can prefix another task's claim file name
         * ("a.b.c.json" may be task "a.b" of owner "c"): skip claims of
         * other tasks. */
        if (json_is_object(v) && json_is_string(json_object_get(v, "task_id")) &&
            strcmp(ac_task_str(v, "task_id"), id) != 0) {
            json_decref(v);
            continue;
        }
        if (check_claim(v, c.v[i], id, b->channel, err) == -1) {
            json_decref(v);
            rc = -1;
            break;
        }
        {
            /* the file name must be <task>.<owner>.json */
            const char *owner = ac_task_str(v, "owner");
            size_t want = c.idlen + 1 + strlen(owner) + 5;
            if (strlen(c.v[i]) != want || strncmp(c.v[i] + c.idlen + 1, owner, strlen(owner)) != 0) {
                json_decref(v);
                rc = ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s does not match its owner",
                                 c.v[i]);
                break;
            }
        }
        if (found) {
            json_decref(v);
            rc = ac_task_err(err, "LEASE_INCONSISTENT", "task %s has more than one lease record", id);
            break;
        }
        found = v;
        found_name = strdup(c.v[i]);
    }
    close(cfd);
    ac_names_free(c.v, c.n);
    if (rc == 0 && found && task &&
        (!json_equal(json_object_get(found, "owner"), json_object_get(task, "owner")) ||
         !json_equal(json_object_get(found, "lease_expires_at"),
                     json_object_get(task, "lease_expires_at"))))
        rc = ac_task_err(err, "LEASE_INCONSISTENT", "lease record %s does not match task %s",
                         found_name ? found_name : "?", id);
    if (rc == 0 && !found && task && !json_is_null(json_object_get(task, "lease_expires_at")))
        rc = ac_task_err(err, "LEASE_INCONSISTENT", "task %s has a lease but no lease record", id);
    if (rc == -1) {
        json_decref(found);
        free(found_name);
        return -1;
    }
    if (found) {
        *claim = found;
        *claim_file = found_name;
        *expired = ac_task_time(found, "lease_expires_at") <= ac_isotime_now_us();
    }
    return 0;
}

/* ---- the journal ---- */

struct change {
    char file[300];
    char *prev, *next;          /* file bytes; NULL = absent */
    size_t prev_len, next_len;
};

static void changes_free(struct change *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        free(c[i].prev);
        free(c[i].next);
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

struct journal {
    json_t *j;                  /* parsed or built */
    int version;
    const char *phase, *txid, *task_id, *task_file, *event;
    char *before, *after;       /* decoded task bytes (before may be NULL) */
    size_t before_len, after_len;
    struct change *changes;
    size_t nchanges;
};

static void journal_free(struct journal *jr)
{
    json_decref(jr->j);
    free(jr->before);
    free(jr->after);
    if (jr->changes) {
        changes_free(jr->changes, jr->nchanges);
        free(jr->changes);
    }
    memset(jr, 0, sizeof *jr);
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

static int file_matches(int dirfd, const char *name, const char *bytes, size_t len);

/* Put the claim files in the state given by `use_next`. */
static int apply_claims(int cfd, const struct change *c, size_t n, int use_next)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const char *bytes = use_next ? c[i].next : c[i].prev;
        size_t len = use_next ? c[i].next_len : c[i].prev_len;
        const char *other = use_next ? c[i].prev : c[i].next;
        if (!bytes) {
            if (AC_FAULT("lease.claim.unlink") == -1)
                return -1;
            /* Undoing a create removes only the record the journal wrote:
             * a file there with other bytes is someone else's. */
            if (!use_next && other && !file_matches(cfd, c[i].file, other, c[i].next_len))
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

/* Run the journaled mutation before -> after with claim changes c[0..n). */
static int commit(struct ac_board *b, const char *actor, const char *event, json_t *before,
                  json_t *after, struct change *c, size_t n, json_t *details, struct ac_err *err)
{
    const char *id = ac_task_str(after, "id");
    char txid[33], name[300];
    char *before_bytes = NULL, *after_bytes;
    size_t before_len = 0, after_len, i;
    json_t *j, *list, *body;
    int cfd, tfd, rc;
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
        rc = ac_err_sys(err, errno, "TASK_IO_ERROR", "could not apply the lease change to %s", id);
    if (rc == 0)
        rc = set_phase(cfd, j, "applied", 1, err);
    if (rc == 0) {
        body = ac_board_audit_body(b, event, before, after);
        json_object_update(body, details);
        json_object_set_new(body, "transaction_id", json_string(txid));
        int posted;
        if (AC_FAULT("lease.audit") == -1)
            posted = ac_err_sys(&aerr, errno, "TASK_IO_ERROR", "could not post the audit message");
        else
            posted = ac_audit_post(b->ch, actor, event, id, body, NULL, &aerr);
        json_decref(body);
        if (posted == -1) {
            if (rollback(b, cfd, id, before_bytes, before_len, c, n) == -1)
                rc = ac_task_err(err, "LEASE_AUDIT_ROLLBACK_FAILED",
                                 "could not post the audit message (%s) nor roll back", aerr.msg);
            else
                rc = ac_task_err(err, "LEASE_AUDIT_FAILED", "could not post the audit message: %s",
                                 aerr.msg);
        }
    }
    /* From here on the change is published (its audit message is in the
     * channel): a failure is LEASE_TRANSACTION_CLEANUP_FAILED (SPEC 3.6),
     * and the journal left behind makes recover-pending finish it. */
    if (rc == 0 && set_phase(cfd, j, "published", 2, &perr) == -1)
        rc = ac_task_err(err, "LEASE_TRANSACTION_CLEANUP_FAILED",
                         "the lease change was published but its journal could not be updated: %s",
                         strerror(perr.sys_errno));
    if (rc == 0 && (AC_FAULT("lease.journal.delete") == -1 ||
                    ac_sys_unlinkat(cfd, AC_LEASE_JOURNAL, 0) == -1 || ac_fsync_dir(cfd) == -1))
        rc = ac_task_err(err, "LEASE_TRANSACTION_CLEANUP_FAILED",
                         "the lease change was published but its journal could not be removed: %s",
                         strerror(errno));
    json_decref(j);
    close(cfd);
    free(before_bytes);
    free(after_bytes);
    return rc;
}

/* Read and check the journal. 0 = none, 1 = read into *jr, -1 = error. */
static int read_journal(struct ac_board *b, struct journal *jr, struct ac_err *err)
{
    char *data, msg[AC_PYJSON_MSG_MAX];
    size_t len, i;
    json_t *v, *changes, *item;
    int cfd = open_claims(b, 0);

    memset(jr, 0, sizeof *jr);
    if (cfd == -1)
        return errno == ENOENT ? 0 : ac_err_sys(err, errno, "TASK_IO_ERROR", "could not open claims/");
    if (ac_read_file_at(cfd, AC_LEASE_JOURNAL, JOURNAL_CAP, &data, &len) == -1) {
        int e = errno;
        close(cfd);
        if (e == ENOENT)
            return 0;
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "could not read transaction journal: %s",
                           strerror(e));
    }
    close(cfd);
    v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    free(data);
    if (!v)
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "could not read transaction journal: %s", msg);
    jr->j = v;
#define SHAPE() do { journal_free(jr); \
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "transaction journal has an unsupported shape"); \
    } while (0)
    if (!json_is_object(v) || !json_is_integer(json_object_get(v, "version")))
        SHAPE();
    jr->version = (int)json_integer_value(json_object_get(v, "version"));
    jr->phase = json_string_value(json_object_get(v, "phase"));
    if ((jr->version != 1 && jr->version != 2) || !jr->phase ||
        (strcmp(jr->phase, "prepared") && strcmp(jr->phase, "applied") && strcmp(jr->phase, "published")))
        SHAPE();
    jr->txid = json_string_value(json_object_get(v, "transaction_id"));
    if (jr->version == 2 && !jr->txid) {
        journal_free(jr);
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "transaction journal is missing transaction_id");
    }
    jr->task_id = json_string_value(json_object_get(v, "task_id"));
    jr->task_file = json_string_value(json_object_get(v, "task_file"));
    jr->event = json_string_value(json_object_get(v, "event"));
    changes = json_object_get(v, "claim_changes");
    if (!jr->task_id || !ac_safe_name(jr->task_id) || !jr->task_file || !jr->event ||
        !json_is_array(changes))
        SHAPE();
    {
        char want[320];
        snprintf(want, sizeof want, "%s/%s.json", AC_TASKS_DIR, jr->task_id);
        if (strcmp(jr->task_file, want) != 0)
            SHAPE();
    }
    {
        json_t *tb = json_object_get(v, "task_before"), *ta = json_object_get(v, "task_after");
        if (!json_is_string(ta) || !(json_is_string(tb) || json_is_null(tb)))
            SHAPE();
        jr->after = ac_b64_decode(json_string_value(ta), json_string_length(ta), &jr->after_len);
        if (json_is_string(tb))
            jr->before = ac_b64_decode(json_string_value(tb), json_string_length(tb), &jr->before_len);
        if (!jr->after || (json_is_string(tb) && !jr->before))
            SHAPE();
    }
    jr->changes = calloc(json_array_size(changes) + 1, sizeof *jr->changes);
    if (!jr->changes)
        SHAPE();
    json_array_foreach(changes, i, item) {
        const char *file = json_string_value(json_object_get(item, "file"));
        json_t *p = json_object_get(item, "previous"), *nx = json_object_get(item, "next");
        struct change *c = &jr->changes[jr->nchanges];
        size_t idlen = strlen(jr->task_id), flen = file ? strlen(file) : 0;
        /* Only this task's lease files: <task_id>.<safe owner>.json */
        if (!file || flen >= sizeof c->file || flen <= idlen + 6 ||
            strncmp(file, jr->task_id, idlen) != 0 || file[idlen] != '.' ||
            strcmp(file + flen - 5, ".json") != 0 ||
            !(json_is_string(p) || json_is_null(p)) || !(json_is_string(nx) || json_is_null(nx)))
            SHAPE();
        {
            char owner[300];
            size_t olen = flen - idlen - 6;
            memcpy(owner, file + idlen + 1, olen);
            owner[olen] = '\0';
            if (!ac_safe_name(owner))
                SHAPE();
        }
        strcpy(c->file, file);
        jr->nchanges++;
        if (json_is_string(p) &&
            !(c->prev = ac_b64_decode(json_string_value(p), json_string_length(p), &c->prev_len)))
            SHAPE();
        if (json_is_string(nx) &&
            !(c->next = ac_b64_decode(json_string_value(nx), json_string_length(nx), &c->next_len)))
            SHAPE();
    }
#undef SHAPE
    return 1;
}

int ac_lease_journal_guard(struct ac_board *b, struct ac_err *err)
{
    struct journal jr;
    int rc = read_journal(b, &jr, err);
    if (rc <= 0)
        return rc;
    journal_free(&jr);
    return ac_task_err(err, "LEASE_TRANSACTION_PENDING",
                       "a previous lease mutation needs explicit recovery");
}

int ac_lease_journal_peek(struct ac_board *b, struct ac_lease_pending *out, struct ac_err *err)
{
    struct journal jr;
    int rc = read_journal(b, &jr, err);
    if (rc <= 0)
        return rc;
    snprintf(out->phase, sizeof out->phase, "%s", jr.phase);
    snprintf(out->task_id, sizeof out->task_id, "%s", jr.task_id);
    snprintf(out->event, sizeof out->event, "%s", jr.event);
    journal_free(&jr);
    return 1;
}

/* ---- operations ---- */

static json_t *new_claim(const char *id, const char *channel, const char *owner,
                         const char *expires, const char *now, const char *prev_owner,
                         const char *prev_expires, const char *reason)
{
    json_t *c = json_object();
    json_object_set_new(c, "task_id", json_string(id));
    json_object_set_new(c, "channel", json_string(channel));
    json_object_set_new(c, "owner", json_string(owner));
    json_object_set_new(c, "lease_expires_at", json_string(expires));
    json_object_set_new(c, "claimed_at", json_string(now));
    json_object_set_new(c, "updated_at", json_string(now));
    json_object_set_new(c, "previous_owner", nullable(prev_owner));
    json_object_set_new(c, "previous_lease_expires_at", nullable(prev_expires));
    json_object_set_new(c, "recovery_reason", nullable(reason));
    return c;
}

static int claim_bytes(const json_t *claim, char **out, size_t *len, struct ac_err *err)
{
    *out = claim_encode(claim, len);
    return *out ? 0 : ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode a lease record");
}

static int read_claim_bytes(struct ac_board *b, const char *file, char **out, size_t *len,
                            struct ac_err *err)
{
    int cfd = open_claims(b, 0);
    int rc = cfd == -1 ? -1 : ac_read_file_at(cfd, file, CLAIM_CAP, out, len);
    int e = errno;
    if (cfd != -1)
        close(cfd);
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

static int has_reason_problem(const char *reason, struct ac_err *err)
{
    if (!reason || !reason[0])
        return ac_task_err(err, "LEASE_INVALID_REASON", "recovery reason must not be empty");
    if (ac_has_control(reason))
        return ac_task_err(err, "LEASE_INVALID_REASON",
                           "recovery reason contains a forbidden control character");
    return 0;
}

int ac_lease_apply(struct ac_board *b, enum ac_lease_op op, const char *id, const char *actor,
                   double seconds, const char *reason, json_t **out, struct ac_err *err)
{
    json_t *cur, *claim = NULL, *after = NULL, *details = NULL, *nclaim = NULL;
    char *claim_file = NULL, now[48], expires[48];
    const char *status, *event = NULL;
    struct change ch[2];
    size_t nch = 0;
    int expired = 0, rc = -1;
    int64_t now_us;

    memset(ch, 0, sizeof ch);
    if (!ac_safe_name(actor))
        return ac_task_err(err, "LEASE_INVALID_OWNER", "owner must be a safe identity");
    if (op == AC_LEASE_RECOVER && has_reason_problem(reason, err) == -1)
        return -1;
    if ((op == AC_LEASE_CLAIM || op == AC_LEASE_RENEW || op == AC_LEASE_RECOVER) &&
        !(isfinite(seconds) && seconds > 0))
        return ac_task_err(err, "LEASE_INVALID_DURATION", "lease duration must be positive");
    /* An expiry past year 9999 cannot be written as a record time (it came
     * out as year -290251, and every later command failed to read it). */
    now_us = ac_isotime_now_us();
    if (seconds * 1e6 > (double)(AC_ISOTIME_MAX_US - now_us))
        return ac_task_err(err, "LEASE_INVALID_DURATION", "lease duration is out of range");
    if (ac_lease_journal_guard(b, err) == -1)
        return -1;
    cur = ac_board_get(b, id, err);
    if (!cur)
        return -1;
    /* claims/<id>.<owner>.json must be a possible file name: refuse before
     * anything is written rather than fail halfway through a journal. */
    if (strlen(id) + strlen(actor) + 6 > 255)
        return ac_task_err(err, "LEASE_INVALID_OWNER",
                           "lease record name %s.%s.json would be longer than 255 bytes", id, actor);
    if (ac_lease_state(b, id, &claim, &claim_file, &expired, err) == -1)
        return -1;
    status = ac_task_str(cur, "status");
    ac_board_now(now, 1);
    ac_isotime_format(now_us + (int64_t)llround(seconds * 1e6), 6, expires);
    after = json_deep_copy(cur);
    details = json_object();
    if (!after || !details) {
        ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
        goto done;
    }
    json_object_set_new(after, "updated_at", json_string(now));

    if (claim && expired && op != AC_LEASE_RECOVER) {
        ac_task_err(err, "LEASE_RECOVERY_REQUIRED", "expired lease for task %s requires explicit recovery",
                    id);
        goto done;
    }
    switch (op) {
    case AC_LEASE_CLAIM:
        if (claim) {
            ac_task_err(err, "LEASE_CONFLICT", "task %s is leased by %s", id, ac_task_str(claim, "owner"));
            goto done;
        }
        if (ac_task_str(cur, "owner") && strcmp(ac_task_str(cur, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_CONFLICT", "task %s is assigned to %s", id, ac_task_str(cur, "owner"));
            goto done;
        }
        if (!ac_task_transition_ok(status, "in_progress")) {
            ac_task_transition_error(status, "in_progress", err);
            goto done;
        }
        if (ac_board_deps_ready(b, cur, err) == -1)
            goto done;
        json_object_set_new(after, "status", json_string("in_progress"));
        json_object_set_new(after, "owner", json_string(actor));
        json_object_set_new(after, "lease_expires_at", json_string(expires));
        nclaim = new_claim(id, b->channel, actor, expires, now, NULL, NULL, NULL);
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
        if (!claim) {
            ac_task_err(err, "LEASE_NOT_FOUND", "no active lease for task %s", id);
            goto done;
        }
        if (strcmp(ac_task_str(claim, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_OWNER_MISMATCH", "lease for task %s belongs to %s", id,
                        ac_task_str(claim, "owner"));
            goto done;
        }
        json_object_set_new(after, "lease_expires_at", json_string(expires));
        nclaim = json_deep_copy(claim);
        json_object_set_new(nclaim, "lease_expires_at", json_string(expires));
        json_object_set_new(nclaim, "updated_at", json_string(now));
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
    case AC_LEASE_DONE: {
        const char *target = op == AC_LEASE_DONE ? "done" : "open";
        if (claim && strcmp(ac_task_str(claim, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_OWNER_MISMATCH", "lease for task %s belongs to %s", id,
                        ac_task_str(claim, "owner"));
            goto done;
        }
        if (!claim && ac_task_str(cur, "owner") && strcmp(ac_task_str(cur, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_CONFLICT", "task %s is assigned to %s", id, ac_task_str(cur, "owner"));
            goto done;
        }
        if (!ac_task_transition_ok(status, target)) {
            ac_task_transition_error(status, target, err);
            goto done;
        }
        if (op == AC_LEASE_DONE && strcmp(status, "done") != 0 && ac_board_deps_ready(b, cur, err) == -1)
            goto done;
        json_object_set_new(after, "status", json_string(target));
        if (claim) {
            json_object_set_new(after, "owner", json_null());
            json_object_set_new(after, "lease_expires_at", json_null());
            snprintf(ch[0].file, sizeof ch[0].file, "%s", claim_file);
            if (read_claim_bytes(b, claim_file, &ch[0].prev, &ch[0].prev_len, err) == -1)
                goto done;
            nch = 1;
            event = op == AC_LEASE_DONE ? "lease.completed" : "lease.released";
            json_object_set_new(details, "lease_owner", json_string(actor));
            json_object_set(details, "previous_lease_expires_at", json_object_get(claim, "lease_expires_at"));
        } else {
            event = "task.updated";
            json_object_set_new(details, "lease_fallback",
                                json_string(op == AC_LEASE_DONE ? "complete" : "release"));
        }
        break;
    }

    case AC_LEASE_BLOCK:
        if (claim) {
            ac_task_err(err, "LEASE_MUTATION_REQUIRED", "task %s must be changed through its lease operation",
                        id);
            goto done;
        }
        if (!ac_task_transition_ok(status, "blocked")) {
            ac_task_transition_error(status, "blocked", err);
            goto done;
        }
        /* No lease: a plain update, not a lease transaction. */
        ac_board_now(now, 0);
        json_object_set_new(after, "updated_at", json_string(now));
        json_object_set_new(after, "status", json_string("blocked"));
        rc = ac_board_commit_plain(b, cur, after, actor, "task.updated", err);
        if (rc == 0) {
            *out = after;
            after = NULL;
        }
        goto done;

    case AC_LEASE_RECOVER:
        if (!claim) {
            ac_task_err(err, "LEASE_NOT_FOUND", "no active lease for task %s", id);
            goto done;
        }
        if (!expired) {
            ac_task_err(err, "LEASE_NOT_EXPIRED", "lease for task %s is still active", id);
            goto done;
        }
        json_object_set_new(after, "owner", json_string(actor));
        json_object_set_new(after, "lease_expires_at", json_string(expires));
        nclaim = new_claim(id, b->channel, actor, expires, now, ac_task_str(claim, "owner"),
                           ac_task_str(claim, "lease_expires_at"), reason);
        snprintf(ch[0].file, sizeof ch[0].file, "%s", claim_file);
        if (read_claim_bytes(b, claim_file, &ch[0].prev, &ch[0].prev_len, err) == -1)
            goto done;
        nch = 1;
        {
            char newfile[300];
            snprintf(newfile, sizeof newfile, "%s.%s.json", id, actor);
            if (strcmp(newfile, claim_file) == 0) {
                if (claim_bytes(nclaim, &ch[0].next, &ch[0].next_len, err) == -1)
                    goto done;
            } else {
                snprintf(ch[1].file, sizeof ch[1].file, "%s", newfile);
                if (check_claim_name_free(b, newfile, id, actor, err) == -1 ||
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

static int file_matches(int dirfd, const char *name, const char *bytes, size_t len)
{
    char *data;
    size_t n;
    int same;
    if (ac_read_file_at(dirfd, name, JOURNAL_CAP, &data, &n) == -1)
        return !bytes && errno == ENOENT;
    same = bytes && n == len && memcmp(data, bytes, n) == 0;
    free(data);
    return same;
}

static int recovery_audit(struct ac_board *b, const char *actor, const struct journal *jr,
                          const char *event, const char *how, struct ac_err *err)
{
    json_t *rec = json_object_get(b->tasks, jr->task_id), *body;
    int rc;
    if (!rec)
        return 0;   /* the task vanished: nothing to describe */
    body = ac_board_audit_body(b, event, NULL, rec);
    json_object_set(body, "previous_status", json_object_get(rec, "status"));
    json_object_set_new(body, "changed_fields", json_array());
    json_object_set_new(body, "transaction_event", json_string(jr->event));
    json_object_set_new(body, "transaction_recovery", json_string(how));
    json_object_set_new(body, "transaction_task_id", json_string(jr->task_id));
    rc = ac_audit_post(b->ch, actor, event, jr->task_id, body, NULL, err);
    json_decref(body);
    return rc;
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

int ac_lease_recover_pending(struct ac_board *b, const char *actor, const char *resolve,
                             struct ac_err *err)
{
    struct journal jr;
    int rc, cfd, roll;

    if (!ac_safe_name(actor))
        return ac_task_err(err, "LEASE_INVALID_OWNER", "actor must be a safe identity");
    if (resolve && strcmp(resolve, "rollback") != 0 && strcmp(resolve, "published") != 0)
        return ac_task_err(err, "TASK_INVALID_COMMAND",
                           "resolve-publication must be rollback or published");
    rc = read_journal(b, &jr, err);
    if (rc == -1)
        return -1;
    if (rc == 0) {
        sweep_debris(b);
        return ac_task_err(err, "LEASE_TRANSACTION_NOT_FOUND", "no pending lease transaction exists");
    }
    if (resolve && strcmp(jr.phase, "applied") != 0) {
        journal_free(&jr);
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                           "publication resolution applies only to applied transactions");
    }
    if (strcmp(jr.phase, "prepared") == 0) {
        roll = 1;
    } else if (strcmp(jr.phase, "published") == 0) {
        roll = 0;
    } else if (resolve) {
        roll = strcmp(resolve, "rollback") == 0;
    } else if (!jr.txid) {
        journal_free(&jr);
        return ac_task_err(err, "LEASE_TRANSACTION_PUBLICATION_UNKNOWN",
                           "cannot tell whether the legacy transaction was published; "
                           "pass --resolve-publication rollback|published");
    } else {
        int found = ac_audit_find_transaction(b->ch, jr.txid, err);
        if (found == -1) {
            journal_free(&jr);
            return -1;
        }
        roll = !found;
    }
    cfd = open_claims(b, 1);
    if (cfd == -1) {
        journal_free(&jr);
        return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not open claims/");
    }
    if (roll) {
        if ((jr.before ? write_task_bytes(b, jr.task_id, jr.before, jr.before_len) == -1
                       : (ac_sys_unlinkat(b->chfd, jr.task_file, 0) == -1 && errno != ENOENT)) ||
            apply_claims(cfd, jr.changes, jr.nchanges, 0) == -1) {
            rc = ac_err_sys(err, errno, "TASK_IO_ERROR", "could not roll the lease transaction back");
            goto out;
        }
    } else {
        size_t i;
        int tfd = ac_open_dir_at(b->chfd, AC_TASKS_DIR), ok;
        char name[300];
        snprintf(name, sizeof name, "%s.json", jr.task_id);
        ok = tfd != -1 && file_matches(tfd, name, jr.after, jr.after_len);
        if (tfd != -1)
            close(tfd);
        for (i = 0; ok && i < jr.nchanges; i++)
            ok = file_matches(cfd, jr.changes[i].file, jr.changes[i].next, jr.changes[i].next_len);
        if (!ok) {
            rc = ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                             "published transaction does not match lease state");
            goto out;
        }
    }
    rc = ac_board_reload(b, err);
    if (rc == 0)
        rc = recovery_audit(b, actor, &jr, roll ? "lease.transaction.recovered" : "lease.transaction.cleaned",
                            roll ? "rollback" : "cleanup", err);
    if (rc == 0 && (ac_sys_unlinkat(cfd, AC_LEASE_JOURNAL, 0) == -1 || ac_fsync_dir(cfd) == -1))
        rc = ac_task_err(err, "LEASE_TRANSACTION_CLEANUP_FAILED", "could not remove the lease journal: %s",
                         strerror(errno));
    if (rc == 0)
        sweep_debris(b);
out:
    close(cfd);
    journal_free(&jr);
    return rc;
}
