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
 * other's crashes (docs/format.md 3.6, 3.7).
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
#include "agentchat/pystr.h"
#include "agentchat/taskrec.h"
#include "fsutil.h"
#include "store_fs.h"

#define NAME_MAX_BYTES 300

/* One transaction being committed: the batch and its id. */
struct txn {
    const struct format *fmt;
    char txid[128];
    const char *subject;        /* task or lock id */
    const char *event;
    const char *actor;
    const char *operation;
    const json_t *details;      /* NULL: none recorded */
    const struct ac_change *c;
    size_t n;
};

/* A journal being read: its decoded JSON, the pending batch it becomes,
 * and what the domain checks on the way. */
struct reader {
    struct ac_chan *ch;         /* NULL when decoding bytes alone */
    const struct ac_pending_check *check;   /* NULL: the header only */
    struct ac_pending *p;
    json_t *root;
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
    int eexist_untouched;       /* a created record refused because one exists
                                   left nothing of ours: only the journal goes */
    int undo_on_audit_failure;  /* a failed audit post is undone in process (else
                                   resolved as recover-pending would) */
    int undo_remove_quiet;      /* that undo unlinks the journal without its points */
    int published_must_succeed; /* a failed published phase fails the command */
    const char *remove_point;
    const char *remove_sync_point;  /* NULL: the sync after the removal is part of it */
    int verify_unreadable_mismatch; /* an unreadable record does not match `after` */
    int undo_create_own_only;   /* restoring a created record removes it only while
                                   it holds the bytes the batch wrote: a record
                                   there with other bytes is another's (two
                                   tasks' claims can share a name) */
    /* codes and messages */
    const char *io_code;        /* NULL: IO_ERROR */
    const char *msg_prepare;    /* the directory could not be made or opened, or NULL */
    const char *msg_encode;     /* the journal could not be encoded, or NULL */
    const char *msg_journal;    /* the prepared phase could not be written */
    const char *msg_applied;    /* the applied phase could not be written */
    const char *msg_apply[2];   /* around the subject: "could not apply ... to ", "" */
    const char *pending_code;   /* a journal exists (prepared_noreplace) */
    const char *pending_msg;
    /* A failed apply or applied phase, once undone: reported with this code
     * and prefix (NULL: the I/O error as it is). */
    const char *apply_failed_code, *apply_failed_prefix;
    /* A failed audit post, once undone (undo_on_audit_failure). */
    const char *audit_failed_code, *audit_failed_prefix;
    /* An undo that failed too ("<prefix>[Errno N] <strerror>"); NULL code:
     * the first failure is reported. */
    const char *undo_failed_code, *undo_failed_prefix;
    /* A failed audit post that could not be resolved either (without
     * undo_on_audit_failure): "<prefix><why>". */
    const char *resolve_failed_code, *resolve_failed_prefix;
    const char *unsettled_code; /* announced, journal not finished */
    const char *msg_published;  /* followed by ": <strerror>" */
    const char *msg_removed[2]; /* around the strerror */
    const char *msg_remove;     /* the journal could not be removed */
    json_t *(*encode)(const struct txn *t, const char *phase);
    int (*decode)(struct reader *r, struct ac_err *err);
    int (*read_error)(struct ac_chan *ch, const struct format *f, int e, const char *parse_msg,
                      struct ac_err *err);
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

/* A JSON value Python compares equal to the int n (1, 1.0, and True for
 * 1): the journals' `version == n` and `version in {1, 2}` tests. */
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

/* A string member as C text: NULL when it is not a string or holds NUL. */
static const char *text_of(const json_t *v)
{
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return NULL;
    return json_string_value(v);
}

/* [A-Za-z0-9][A-Za-z0-9._-]* over s[0..len) (NUL refused). */
static int safe_id(const char *s, size_t len)
{
    size_t i;
    if (!s || len == 0 || memchr(s, '\0', len))
        return 0;
    for (i = 0; i < len; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
            return 0;
    }
    return 1;
}

/* str(OSError) as Python prints it for the journal of f:
 * "[Errno 21] Is a directory: '<root>/<channel>/claims/x.json'". */
static const char *os_error(struct ac_chan *ch, const struct format *f, int e, char *out,
                            size_t outsz)
{
    char path[1024], shown[1200];
    if (!ch) {
        snprintf(out, outsz, "[Errno %d] %s", e, strerror(e));
        return out;
    }
    snprintf(path, sizeof path, "%s/%s/%s/%s", ch->store->root, ch->name,
             ac_fs_families[f->dir_family].dir, f->file);
    snprintf(out, outsz, "[Errno %d] %s: %s", e, strerror(e), ac_py_repr(path, shown, sizeof shown));
    return out;
}

/* Append a change to the pending batch (names and bytes copied). */
static int pending_add(struct ac_pending *p, int family, const char *name, size_t name_len,
                       const char *before, size_t blen, const char *after, size_t alen)
{
    struct ac_change *nv = realloc(p->changes, (p->nchanges + 1) * sizeof *nv), *c;
    char *n = NULL, *b = NULL, *a = NULL;
    if (!nv)
        return -1;
    p->changes = nv;
    if (!(n = malloc(name_len + 1)) || (before && !(b = malloc(blen + 1))) ||
        (after && !(a = malloc(alen + 1)))) {
        free(n);
        free(b);
        return -1;
    }
    memcpy(n, name, name_len);
    n[name_len] = '\0';
    if (b) {
        memcpy(b, before, blen);
        b[blen] = '\0';
    }
    if (a) {
        memcpy(a, after, alen);
        a[alen] = '\0';
    }
    c = &p->changes[p->nchanges++];
    *c = (struct ac_change){ family, n, b, b ? blen : 0, a, a ? alen : 0, 0, 0 };
    return 0;
}

/* Decode a base64 member: absent or null is NULL (0); -1 with the format's
 * message for anything else that is not base64 text. *out is malloc'ed. */
static int b64_member(const json_t *v, char **out, size_t *len, const char *code,
                      const char *not_text, const char *not_b64, struct ac_err *err)
{
    *out = NULL;
    *len = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return ac_err_code(err, code, "%s", not_text);
    *out = ac_b64_decode(json_string_value(v), json_string_length(v), len);
    if (!*out)
        return ac_err_code(err, code, "%s", not_b64);
    return 0;
}

static int check_record(struct reader *r, const struct ac_change *c, int after, struct ac_err *err)
{
    if (!r->check || !r->check->record)
        return 0;
    return r->check->record(r->check->ctx, c, after, err);
}

/* ---------------------------------------------------------- the lease format */

/* claims/.lease-transaction.json, version 2 (docs/format.md 3.6):
 *   version, phase, transaction_id, task_id, task_file "tasks/<id>.json",
 *   task_before, task_after (base64; before null = no record),
 *   claim_changes [{file "<task>.<owner>.json", previous, next}],
 *   event, details
 * json.dumps(indent=2, sort_keys=True) + "\n", ASCII. It is read as the
 * Python tool's lease_store.py reads it: version 1 too (1.0 and true
 * count; no transaction id needed, the phase optional, task_after
 * optional: the legacy markers), and a journal that only names what every
 * reader needs is pending; the rest is checked when it is resolved. */
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
        json_object_set(j, "details", t->details ? (json_t *)t->details : json_null()) == -1) {
        json_decref(j);
        return NULL;
    }
    return j;
}

#define LEASE_INVALID "LEASE_TRANSACTION_INVALID"

static int lease_invalid(struct ac_err *err, const char *msg)
{
    return ac_err_code(err, LEASE_INVALID, "%s", msg);
}

static int lease_bytes(const json_t *v, char **out, size_t *len, struct ac_err *err)
{
    return b64_member(v, out, len, LEASE_INVALID, "transaction journal bytes must be base64 text",
                      "transaction journal bytes are not valid base64", err);
}

/* _read_transaction(): what every reader needs. */
static int lease_header(struct reader *r, struct ac_err *err)
{
    static const char *const needed[] = { "task_file", "task_before", "claim_changes", "event" };
    const json_t *v = r->root, *version = json_object_get(v, "version"), *phase, *txid, *tid;
    struct ac_pending *p = r->p;
    size_t i;

    if (!json_is_object(v) || ac_pyjson_is_nonfinite(v) ||
        !(py_equals_int(version, 1) || py_equals_int(version, 2)))
        return lease_invalid(err, "transaction journal has an unsupported shape");
    phase = json_object_get(v, "phase");
    txid = json_object_get(v, "transaction_id");
    if (py_equals_int(version, 2)) {
        if (!json_is_string(txid) || json_string_length(txid) == 0)
            return lease_invalid(err, "transaction journal is missing transaction_id");
        if (!one_of(text_of(phase), PHASES))
            return lease_invalid(err, "version 2 transaction journal requires an explicit valid phase");
    }
    for (i = 0; i < 4; i++)
        if (!json_object_get(v, needed[i]))
            return ac_err_code(err, LEASE_INVALID, "transaction journal is missing %s", needed[i]);
    if (!json_is_array(json_object_get(v, "claim_changes")))
        return lease_invalid(err, "transaction journal claim_changes must be an array");
    /* what the journal says about itself, as far as it can be named */
    snprintf(p->phase, sizeof p->phase, "%s",
             json_is_string(phase) ? json_string_value(phase) : phase ? "?" : "prepared");
    if (text_of(txid) && json_string_length(txid) < sizeof p->txid)
        snprintf(p->txid, sizeof p->txid, "%s", json_string_value(txid));
    p->anonymous = py_equals_int(version, 1) && !py_truthy(txid);
    tid = json_object_get(v, "task_id");
    snprintf(p->subject, sizeof p->subject, "%s", json_is_string(tid) ? json_string_value(tid) : "?");
    if (json_is_string(json_object_get(v, "event")))
        snprintf(p->event, sizeof p->event, "%s", json_string_value(json_object_get(v, "event")));
    p->event_value = json_incref(json_object_get(v, "event"));
    return 0;
}

/* One claim payload: decoded, then the domain's record check. */
static int lease_claim_payload(struct reader *r, const json_t *v, const char *name, size_t nlen,
                               int after, char **bytes, size_t *len, struct ac_err *err)
{
    struct ac_change c;
    char cname[NAME_MAX_BYTES];
    if (lease_bytes(v, bytes, len, err) == -1)
        return -1;
    if (!*bytes)
        return 0;
    memcpy(cname, name, nlen);
    cname[nlen] = '\0';
    c = (struct ac_change){ AC_CLAIMS, cname, after ? NULL : *bytes, after ? 0 : *len,
                            after ? *bytes : NULL, after ? *len : 0, 0, 0 };
    return check_record(r, &c, after, err);
}

/* The claim changes: one entry per file (its first previous, its last next). */
static int lease_claims(struct reader *r, const char *id, struct ac_err *err)
{
    const json_t *item;
    struct ac_pending *p = r->p;
    char shown[600];
    size_t i, k, idlen = strlen(id);

    json_array_foreach(json_object_get(r->root, "claim_changes"), i, item) {
        const json_t *file = json_object_get(item, "file");
        const char *f;
        char *prev = NULL, *next = NULL;
        size_t flen, plen = 0, nlen = 0;
        int rc;

        if (!json_is_object(item) || ac_pyjson_is_nonfinite(item) || !file)
            return lease_invalid(err, "transaction journal claim change is malformed");
        if (!json_object_get(item, "previous") || !json_object_get(item, "next"))
            return lease_invalid(err, "transaction journal claim change requires previous and next payloads");
        f = text_of(file);
        flen = f ? strlen(f) : 0;
        if (!f || strpbrk(f, "/\\") || flen < 5 || strcmp(f + flen - 5, ".json") != 0 || f[0] == '.' ||
            f[0] == '_')
            return ac_err_code(err, LEASE_INVALID, "claim change filename outside claims layout: %s",
                               ac_pyjson_repr(file, shown, sizeof shown));
        if (strncmp(f, id, idlen) != 0 || f[idlen] != '.')
            return ac_err_code(err, LEASE_INVALID, "claim change filename does not belong to task: %s",
                               ac_pyjson_repr(file, shown, sizeof shown));
        if (flen < idlen + 6 || !safe_id(f + idlen + 1, flen - idlen - 6) || flen >= NAME_MAX_BYTES)
            return ac_err_code(err, "LEASE_INVALID_OWNER", "owner must be a safe identity");
        rc = lease_claim_payload(r, json_object_get(item, "previous"), f, flen - 5, 0, &prev, &plen, err);
        if (rc == 0)
            rc = lease_claim_payload(r, json_object_get(item, "next"), f, flen - 5, 1, &next, &nlen, err);
        if (rc == 0 && !prev && !next)
            rc = lease_invalid(err, "claim change must include previous or next payload");
        for (k = 1; rc == 0 && k < p->nchanges; k++)
            if (strlen(p->changes[k].name) == flen - 5 && strncmp(p->changes[k].name, f, flen - 5) == 0)
                break;
        if (rc == 0 && k < p->nchanges) {
            struct ac_change *c = &p->changes[k];
            if (!((!c->before && !prev) ||
                  (c->before && prev && c->before_len == plen && memcmp(c->before, prev, plen) == 0)))
                rc = lease_invalid(err, "duplicate claim path has conflicting previous payloads");
            if (rc == 0) {
                free((char *)c->after);
                c->after = next;
                c->after_len = nlen;
                next = NULL;
            }
        } else if (rc == 0 && pending_add(p, AC_CLAIMS, f, flen - 5, prev, plen, next, nlen) == -1) {
            rc = ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not read the lease journal");
        }
        free(prev);
        free(next);
        if (rc == -1)
            return -1;
    }
    return 0;
}

/* The whole journal, in the order the Python tool checks it before it
 * touches a file (recover-pending). */
static int lease_decode(struct reader *r, struct ac_err *err)
{
    const json_t *v = r->root, *tf = json_object_get(v, "task_file"), *tid, *phase;
    struct ac_pending *p = r->p;
    char portable[600], shown[600], id[NAME_MAX_BYTES], *before = NULL, *after = NULL, *slash;
    size_t len, i, blen = 0, alen = 0;
    int legacy, rc;

    if (lease_header(r, err) == -1)
        return -1;
    if (!r->check)
        return 0;
    /* task_file: "tasks/<id>.json" ('\' also separates) */
    if (!json_is_string(tf) || !json_string_length(tf))
        return lease_invalid(err, "transaction journal has an invalid task_file");
    len = json_string_length(tf);
    snprintf(portable, sizeof portable, "%.*s", (int)(len < sizeof portable - 1 ? len : 0),
             json_string_value(tf));
    for (i = 0; portable[i]; i++)
        if (portable[i] == '\\')
            portable[i] = '/';
    slash = strchr(portable, '/');
    len = strlen(portable);
    if (!len || !slash || strchr(slash + 1, '/') || (size_t)(slash - portable) != 5 ||
        strncmp(portable, "tasks", 5) != 0 || len - (size_t)(slash + 1 - portable) < 5 ||
        strcmp(portable + len - 5, ".json") != 0) {
        ac_err_quote(shown, sizeof shown, json_string_value(tf), 400);
        return ac_err_code(err, LEASE_INVALID, "transaction journal task path outside tasks layout: %s",
                           shown);
    }
    snprintf(id, sizeof id, "%.*s", (int)(len - (size_t)(slash + 1 - portable) - 5), slash + 1);
    if (!ac_safe_name(id))
        return ac_err_code(err, "LEASE_INVALID_TASK_ID", "task_id must be a safe identity");
    tid = json_object_get(v, "task_id");
    if (!json_is_string(tid) || strcmp(json_string_value(tid), id) != 0)
        return lease_invalid(err, "transaction task_id does not match task_file stem");
    snprintf(p->subject, sizeof p->subject, "%.*s", (int)sizeof p->subject - 1, id);

    /* the task record: before, then after (a legacy marker may have none) */
    if (lease_bytes(json_object_get(v, "task_before"), &before, &blen, err) == -1)
        return -1;
    if (!before)
        return lease_invalid(err, "transaction journal has no task rollback bytes");
    rc = pending_add(p, AC_TASKS, id, strlen(id), before, blen, NULL, 0);
    free(before);
    if (rc == -1)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not read the lease journal");
    if (check_record(r, &p->changes[0], 0, err) == -1)
        return -1;
    legacy = py_equals_int(json_object_get(v, "version"), 1) && !json_object_get(v, "task_after");
    if (lease_bytes(json_object_get(v, "task_after"), &after, &alen, err) == -1)
        return -1;
    if (!after) {
        if (!legacy)
            return lease_invalid(err, "transaction journal has no task_after rollback bytes");
        p->no_after = 1;
        after = malloc(p->changes[0].before_len + 1);
        if (!after)
            return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not read the lease journal");
        memcpy(after, p->changes[0].before, p->changes[0].before_len + 1);
        alen = p->changes[0].before_len;
        p->changes[0].after = after;
        p->changes[0].after_len = alen;
    } else {
        p->changes[0].after = after;
        p->changes[0].after_len = alen;
        if (check_record(r, &p->changes[0], 1, err) == -1)
            return -1;
    }
    if (lease_claims(r, id, err) == -1)
        return -1;
    if (r->check->changes && r->check->changes(r->check->ctx, p, err) == -1)
        return -1;
    phase = json_object_get(v, "phase");
    if (phase && !one_of(text_of(phase), PHASES))
        return ac_err_code(err, LEASE_INVALID, "unsupported transaction phase: %s",
                           ac_pyjson_repr(phase, shown, sizeof shown));
    snprintf(p->phase, sizeof p->phase, "%s", phase ? json_string_value(phase) : "prepared");
    return 0;
}

static int lease_read_error(struct ac_chan *ch, const struct format *f, int e, const char *parse_msg,
                            struct ac_err *err)
{
    char msg[1400];
    return ac_err_code(err, LEASE_INVALID, "could not read transaction journal: %s",
                       parse_msg ? parse_msg : os_error(ch, f, e, msg, sizeof msg));
}

/* ------------------------------------------------------- the path-lock format */

/* locks/.path-lock-transaction.json, version 1 (docs/format.md 3.7):
 *   version, transaction_id, phase, operation lock|unlock|recover, event,
 *   target "<id>.json" (or "locks/<id>.json" from the Python tool), actor,
 *   before, after (base64 of the record file; null = no file)
 * json.dumps(indent=2, sort_keys=True, ensure_ascii=False) + "\n". It is
 * read as the Python tool's path_locks.py reads it: version 1 or 2 (1.0,
 * 2.0 and true count), every member present, a safe transaction id and
 * actor, any event, '\' as a separator in the target, and the optional
 * previous_bytes/next_bytes decoded (then ignored). */
static const char *const OPERATIONS[] = { "lock", "unlock", "recover", NULL };
/* Every member a journal must have (the Python tool's _read_transaction). */
static const char *const REQUIRED[] = { "version", "transaction_id", "phase", "operation", "event",
                                        "target", "before", "after", "actor", NULL };

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

static int pathlock_read_error(struct ac_chan *ch, const struct format *f, int e, const char *parse_msg,
                               struct ac_err *err)
{
    (void)ch;
    (void)f;
    if (parse_msg)
        return ac_err_set(err, AC_EXIT_GENERAL, "PATH_LOCK_TRANSACTION_INVALID",
                          "could not read transaction marker: %s", parse_msg);
    return ac_err_set(err, AC_EXIT_GENERAL, "PATH_LOCK_TRANSACTION_INVALID",
                      "could not read transaction marker: [Errno %d] %s", e, strerror(e));
}

/* A string member without NUL bytes, shorter than `max`, or NULL. */
static const char *short_str(const json_t *obj, const char *key, size_t max)
{
    const char *s = text_of(json_object_get(obj, key));
    return s && strlen(s) < max ? s : NULL;
}

/* "<name>.json" with a safe stem ([A-Za-z0-9][A-Za-z0-9._-]*): the only
 * targets a journal may name, so recovery never writes outside locks/. */
static int lock_file_name(const char *s)
{
    size_t len = strlen(s);
    return len >= 6 && len <= 255 && strcmp(s + len - 5, ".json") == 0 && safe_id(s, len - 5);
}

static int pathlock_bytes(const json_t *v, char **out, size_t *len, struct ac_err *err)
{
    return b64_member(v, out, len, "PATH_LOCK_TRANSACTION_INVALID", "transaction bytes must be base64 text",
                      "transaction bytes are not valid base64", err);
}

static int pathlock_decode(struct reader *r, struct ac_err *err)
{
    static const char shape[] = "transaction marker has an unsupported shape";
    const json_t *v = r->root, *ver = json_object_get(v, "version"), *txid, *actor;
    struct ac_pending *p = r->p;
    const char *phase, *operation, *event, *name;
    char target[NAME_MAX_BYTES], *before = NULL, *after = NULL, *extra = NULL;
    size_t blen = 0, alen = 0, xlen, i;
    int ok, rc;

    /* The shape, in the Python tool's terms: an object with every member,
     * a known version, phase and operation, a safe transaction id, and a
     * target and an actor that are strings. The event is not looked at. */
    phase = short_str(v, "phase", sizeof p->phase);
    ok = json_is_object(v) && !ac_pyjson_is_nonfinite(v) &&
         (py_equals_int(ver, 1) || py_equals_int(ver, 2)) && one_of(phase, PHASES);
    for (i = 0; ok && REQUIRED[i]; i++)
        ok = json_object_get(v, REQUIRED[i]) != NULL;
    txid = json_object_get(v, "transaction_id");
    operation = short_str(v, "operation", sizeof p->operation);
    ok = ok && json_is_string(txid) && safe_id(json_string_value(txid), json_string_length(txid)) &&
         json_string_length(txid) < sizeof p->txid && one_of(operation, OPERATIONS) &&
         json_is_string(json_object_get(v, "target")) && json_is_string(json_object_get(v, "actor"));
    if (!ok)
        return pathlock_invalid(err, shape);
    event = short_str(v, "event", 32);
    /* "<id>.json" or "locks/<id>.json" ('\' also separates) */
    snprintf(target, sizeof target, "%s",
             short_str(v, "target", sizeof target) ? json_string_value(json_object_get(v, "target")) : "");
    for (i = 0; target[i]; i++)
        if (target[i] == '\\')
            target[i] = '/';
    name = strncmp(target, "locks/", 6) == 0 ? target + 6 : target;
    if (strchr(name, '/') || !lock_file_name(name))
        return pathlock_invalid(err, "transaction target is not a lock record filename");
    actor = json_object_get(v, "actor");
    if (!safe_id(json_string_value(actor), json_string_length(actor)))
        return ac_err_code(err, "PATH_LOCK_INVALID_OWNER", "actor must be a safe identity");
    snprintf(p->phase, sizeof p->phase, "%s", phase);
    snprintf(p->operation, sizeof p->operation, "%s", operation);
    snprintf(p->event, sizeof p->event, "%s", event ? event : "");
    snprintf(p->txid, sizeof p->txid, "%s", json_string_value(txid));
    snprintf(p->actor, sizeof p->actor, "%.*s", (int)sizeof p->actor - 1, json_string_value(actor));
    snprintf(p->subject, sizeof p->subject, "%.*s", (int)(strlen(name) - 5), name);
    p->event_value = json_incref(json_object_get(v, "event"));
    if (pathlock_bytes(json_object_get(v, "before"), &before, &blen, err) == -1)
        return -1;
    if (pathlock_bytes(json_object_get(v, "after"), &after, &alen, err) == -1) {
        free(before);
        return -1;
    }
    /* Optional members the Python tool also decodes (and then ignores). */
    rc = pathlock_bytes(json_object_get(v, "previous_bytes"), &extra, &xlen, err);
    free(extra);
    extra = NULL;
    if (rc == 0)
        rc = pathlock_bytes(json_object_get(v, "next_bytes"), &extra, &xlen, err);
    free(extra);
    if (rc == 0 && pending_add(p, AC_LOCKS, p->subject, strlen(p->subject), before, blen, after, alen) == -1)
        rc = ac_err_sys(err, ENOMEM, NULL, "could not read transaction marker");
    free(before);
    free(after);
    return rc;
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
    .undo_on_audit_failure = 1,
    .undo_remove_quiet = 1,
    .published_must_succeed = 1,
    .remove_point = "lease.journal.delete",
    .verify_unreadable_mismatch = 1,
    .undo_create_own_only = 1,
    .io_code = "TASK_IO_ERROR",
    .msg_prepare = "could not prepare the lease journal",
    .msg_encode = "could not encode the lease journal",
    .msg_journal = "could not write the lease journal",
    .msg_applied = "could not write the lease journal",
    .msg_apply = { "could not apply the lease change to ", "" },
    .apply_failed_code = "LEASE_AUDIT_FAILED",
    .apply_failed_prefix = "lease mutation audit failed: ",
    .audit_failed_code = "TASK_AUDIT_FAILED",
    .audit_failed_prefix = "task record changed but audit event could not be written: ",
    .undo_failed_code = "LEASE_AUDIT_ROLLBACK_FAILED",
    .undo_failed_prefix = "could not roll back lease mutation: ",
    .unsettled_code = "LEASE_TRANSACTION_CLEANUP_FAILED",
    .msg_published = "lease mutation audit is durable but journal cleanup failed",
    .msg_removed = { "lease mutation committed but journal cleanup failed: ", "" },
    .msg_remove = "could not remove the lease journal",
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
    .eexist_untouched = 1,
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
    .audit_failed_code = "PATH_LOCK_AUDIT_FAILED",
    .audit_failed_prefix = "path lock audit event could not be written: ",
    .resolve_failed_code = "PATH_LOCK_AUDIT_ROLLBACK_FAILED",
    .resolve_failed_prefix = "path lock mutation failed and rollback failed: ",
    .unsettled_code = "PATH_LOCK_TRANSACTION_PENDING",
    .msg_removed = { "the path-lock change was applied and announced, but its journal could not be "
                     "removed (", "); run recover-pending" },
    .msg_remove = "could not remove the path-lock journal",
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

/* Does `file` of fd hold exactly bytes[0..len)? (0 when it cannot be read.) */
static int file_holds(int fd, const char *file, size_t cap, const char *bytes, size_t len)
{
    char *data;
    size_t n;
    int same;
    if (ac_read_file_at(fd, file, cap, &data, &n) == -1)
        return 0;
    same = n == len && memcmp(data, bytes, n) == 0;
    free(data);
    return same;
}

/* Put the records c[0..n) of format f in their `after` state (restore ==
 * 0), or back in their `before` state: the first change first, then the
 * others from the last to the first (as the Python tool restores them).
 * errno is meaningful on -1. */
static int put_records(int chfd, int dfd, const struct format *f, const struct ac_change *cs, size_t n,
                       int restore)
{
    size_t k;

    for (k = 0; k < n; k++) {
        const struct ac_change *c = &cs[!restore || k == 0 ? k : n - k];
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
            if (AC_FAULT(point) == -1)
                rc = -1;
            else if (restore && c->after && f->undo_create_own_only &&
                     !file_holds(fd, file, f->cap, c->after, c->after_len))
                rc = 0;
            else
                rc = ac_sys_unlinkat(fd, file, 0) == -1 && errno != ENOENT && errno != ENAMETOOLONG
                         ? -1 : 0;
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
static int records_match(int chfd, const struct format *f, const struct ac_change *cs, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const struct ac_change *c = &cs[i];
        char file[NAME_MAX_BYTES + 8], *data = NULL;
        size_t len = 0;
        int fd = ac_open_dir_at(chfd, ac_fs_families[c->family].dir), rc, e, same;
        snprintf(file, sizeof file, "%s.json", c->name);
        rc = fd == -1 ? -1 : ac_read_file_at(fd, file, f->cap, &data, &len);
        e = errno;
        if (fd != -1)
            close(fd);
        if (rc == -1) {
            if (e == ENOENT && !c->after)
                continue;
            if (e == ENOENT || e == EFBIG || f->verify_unreadable_mismatch)
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
    if (put_records(chfd, dfd, t->fmt, t->c, t->n, 1) == -1)
        return -1;
    if (t->fmt->undo_remove_quiet)
        return ac_sys_unlinkat(dfd, t->fmt->file, 0) == -1 && errno != ENOENT ? -1 : 0;
    return journal_remove(dfd, t->fmt);
}

/* A failure once the records may have changed: undo them, and report
 * `first` (wrapped in the format's code when it has one) or the undo's
 * own failure. Returns -1. */
static int undo_and_report(int chfd, int dfd, const struct txn *t, const struct ac_err *first,
                           const char *code, const char *prefix, struct ac_err *err)
{
    const struct format *f = t->fmt;
    if (undo(chfd, dfd, t) == -1 && f->undo_failed_code) {
        int e = errno;
        return ac_err_code(err, f->undo_failed_code, "%s[Errno %d] %s", f->undo_failed_prefix, e,
                           strerror(e));
    }
    if (code)
        return ac_err_code(err, code, "%s%s", prefix, first->msg);
    if (err)
        *err = *first;
    return -1;
}

/* After a failed audit post of a format that resolves it: decide as
 * recover-pending would (was the message published after all?). 1 the
 * change stands (journal removed), 0 it was rolled back, -1 undecided
 * (the journal stays for recover-pending; err says why). */
static int resolve_after_audit(struct ac_chan *ch, int dfd, const struct txn *t, struct ac_err *err)
{
    int chfd = fs_chan_fd(ch), found = 0, m;
    if (t->txid[0] && strlen(t->txid) <= 64)
        found = ac_audit_find_transaction(ch, t->txid, err);
    if (found == -1)
        return -1;
    if (found) {
        m = records_match(chfd, t->fmt, t->c, t->n);
        if (m == -1)
            return ac_err_sys(err, errno, NULL, "could not read %s %s.json",
                              ac_fs_families[t->c[0].family].noun, t->c[0].name);
        if (m == 0)
            return ac_err_code(err, "PATH_LOCK_TRANSACTION_INVALID",
                               "published transaction does not match lock state");
    } else if (put_records(chfd, dfd, t->fmt, t->c, t->n, 1) == -1) {
        return ac_err_sys(err, errno, NULL, "could not restore %s %s.json",
                          ac_fs_families[t->c[0].family].noun, t->c[0].name);
    }
    if (journal_remove(dfd, t->fmt) == -1)
        return ac_err_sys(err, errno, NULL, "%s", t->fmt->msg_remove);
    return found;
}

static int journaled_commit(struct ac_chan *ch, const struct format *f, const struct ac_batch *b,
                            struct ac_err *err)
{
    struct txn t;
    struct ac_err aerr = AC_ERR_INIT;
    int chfd = fs_chan_fd(ch), dfd = -1, mkdir_failed, e;

    t = (struct txn){ .fmt = f, .subject = b->subject, .event = b->event, .actor = b->actor,
                      .operation = b->operation, .details = b->details, .c = b->changes,
                      .n = b->nchanges };
    if (ac_uuid4_hex(t.txid) == -1)
        return ac_err_sys(err, errno, f->io_code, "could not make a transaction id");
    dfd = journal_dir(chfd, f, 1, &mkdir_failed);
    if (dfd == -1) {
        if (f->msg_prepare)
            return ac_err_sys(err, errno, f->io_code, "%s", f->msg_prepare);
        return ac_err_sys(err, errno, f->io_code, "could not %s %s/", mkdir_failed ? "create" : "open",
                          ac_fs_families[f->dir_family].dir);
    }

    /* 1. prepared */
    if (journal_write(dfd, &t, "prepared") == -1) {
        e = errno;
        if (e == EEXIST && f->prepared_noreplace) {
            ac_err_code(err, f->pending_code, "%s", f->pending_msg);
            goto fail;
        }
        if (f->prepared_noreplace)
            journal_remove(dfd, f);     /* published, then its sync failed: nothing applied */
        ac_err_sys(err, e, f->io_code, "%s", e == ENOMEM && f->msg_encode ? f->msg_encode : f->msg_journal);
        goto fail;
    }
    /* 2. apply */
    if (put_records(chfd, dfd, f, t.c, t.n, 0) == -1) {
        e = errno;
        ac_err_sys(&aerr, e, f->io_code, "%s%s%s", f->msg_apply[0], t.subject, f->msg_apply[1]);
        if (e == EEXIST && f->eexist_untouched) {
            journal_remove(dfd, f);     /* link() refused: nothing of ours to undo */
            if (err)
                *err = aerr;
        } else {
            undo_and_report(chfd, dfd, &t, &aerr, f->apply_failed_code, f->apply_failed_prefix, err);
        }
        goto fail;
    }
    /* 3. applied */
    if (journal_write(dfd, &t, "applied") == -1) {
        ac_err_sys(&aerr, errno, f->io_code, "%s", f->msg_applied);
        undo_and_report(chfd, dfd, &t, &aerr, f->apply_failed_code, f->apply_failed_prefix, err);
        goto fail;
    }
    /* 4. the audit message, which carries the transaction id */
    if (json_object_set_new(b->audit, "transaction_id", json_string(t.txid)) == -1)
        ac_err_sys(&aerr, ENOMEM, f->io_code, "could not compose the audit message");
    else if (f->audit_point && AC_FAULT(f->audit_point) == -1)
        ac_err_sys(&aerr, errno, f->io_code, "could not post the audit message");
    else if (ac_audit_post(ch, b->actor, b->event, b->subject, b->audit, NULL, &aerr) == 0)
        aerr.code = NULL;
    if (aerr.code) {
        if (f->undo_on_audit_failure) {
            undo_and_report(chfd, dfd, &t, &aerr, f->audit_failed_code, f->audit_failed_prefix, err);
            goto fail;
        }
        /* The post may have failed after its message was published (a
         * failed directory sync): decide as recover-pending would. */
        {
            struct ac_err rerr = AC_ERR_INIT;
            int resolved = resolve_after_audit(ch, dfd, &t, &rerr);
            if (resolved == 1) {
                close(dfd);
                return 0;
            }
            if (resolved == 0)
                ac_err_code(err, f->audit_failed_code, "%s%s", f->audit_failed_prefix, aerr.msg);
            else
                ac_err_code(err, f->resolve_failed_code, "%s%s", f->resolve_failed_prefix, rerr.msg);
        }
        goto fail;
    }
    /* From here on the change is published (its audit message is in the
     * channel): a failure leaves the journal for recover-pending to finish
     * (format.md 3.6, 3.7). */
    /* 5. published */
    if (journal_write(dfd, &t, "published") == -1 && f->published_must_succeed) {
        ac_err_code(err, f->unsettled_code, "%s: %s", f->msg_published, strerror(errno));
        goto fail;
    }
    /* 6. done */
    if (journal_remove(dfd, f) == -1) {
        ac_err_code(err, f->unsettled_code, "%s%s%s", f->msg_removed[0], strerror(errno), f->msg_removed[1]);
        goto fail;
    }
    close(dfd);
    return 0;
fail:
    close(dfd);
    return -1;
}

/* ------------------------------------------------- the plain task commit */

/* A task record changed without a lease (format.md 3.5, as in the Python tool):
 * no journal; the record is written, then its audit message posted, and a
 * failure once the record is in place (its directory sync, the post)
 * restores the previous bytes or removes a created record:
 * TASK_AUDIT_FAILED when the post failed, TASK_IO_ERROR when the sync did,
 * TASK_AUDIT_ROLLBACK_FAILED when the restore fails too. A crash in
 * between still leaves the record without its message. */
static int undo_task(int chfd, const struct ac_change *c, int audit_failed, struct ac_err *err)
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
        return ac_err_code(err, "TASK_AUDIT_ROLLBACK_FAILED", "could not roll back task %s: [Errno %d] %s",
                           c->before ? "update" : "create", e, strerror(e));
    if (audit_failed)
        return ac_err_code(err, "TASK_AUDIT_FAILED",
                           "task record changed but audit event could not be written: %s", why);
    return ac_err_code(err, "TASK_IO_ERROR", "%s; task %s %s", why, c->name,
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
            return ac_err_code(err, "TASK_ALREADY_EXISTS", "task record already exists: %s", c->name);
        return ac_err_sys(err, e, "TASK_IO_ERROR", "could not write task record %s", name);
    }
    /* The record is in place: from here a failure undoes it. */
    if (AC_FAULT("task.record.dirsync") == -1 || ac_fsync_dir(tfd) == -1) {
        e = errno;
        close(tfd);
        ac_err_sys(err, e, "TASK_IO_ERROR", "could not sync %s/ after writing %s", dir, name);
        return undo_task(chfd, c, 0, err);
    }
    close(tfd);
    if (ac_audit_post(ch, b->actor, b->event, b->subject, b->audit, NULL, err) == -1)
        return undo_task(chfd, c, 1, err);
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

/* Decode journal bytes of format f into *out (the header only without a
 * check); *root (may be NULL) gets the JSON read. 0, or -1 (err). */
static int decode_bytes(struct ac_chan *ch, const struct format *f, const char *data, size_t len,
                        const struct ac_pending_check *check, struct ac_pending *out, json_t **root,
                        struct ac_err *err)
{
    char msg[AC_PYJSON_MSG_MAX];
    struct reader r;
    int kind = out->kind;

    memset(out, 0, sizeof *out);
    out->kind = kind;
    r = (struct reader){ ch, check, out, ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg) };
    if (!r.root)
        return f->read_error(ch, f, 0, msg, err);
    if (f->decode(&r, err) == -1) {
        json_decref(r.root);
        ac_pending_free(out);
        out->kind = kind;
        return -1;
    }
    if (root)
        *root = r.root;
    else
        json_decref(r.root);
    return 0;
}

int ac_fs_journal_recode(int kind, const char *data, size_t len, struct ac_pending *p, char **out,
                         size_t *outlen, struct ac_err *err)
{
    static const struct ac_pending_check all = { NULL, NULL, NULL };
    const struct format *f = format_of(kind);
    struct txn t;
    json_t *root, *j;

    *out = NULL;
    memset(p, 0, sizeof *p);
    p->kind = kind;
    if (!f)
        return ac_err_sys(err, EINVAL, NULL, "no journal for this kind");
    if (decode_bytes(NULL, f, data, len, &all, p, &root, err) == -1)
        return -1;
    t = (struct txn){ .fmt = f, .subject = p->subject, .event = p->event, .actor = p->actor,
                      .operation = p->operation, .details = json_object_get(root, "details"),
                      .c = p->changes, .n = p->nchanges };
    snprintf(t.txid, sizeof t.txid, "%s", p->txid);
    j = f->encode(&t, p->phase);
    *out = j ? ac_json_dump_line(j, &f->style, outlen) : NULL;
    json_decref(j);
    json_decref(root);
    if (!*out) {
        ac_pending_free(p);
        return ac_err_sys(err, ENOMEM, f->io_code, "could not encode the journal");
    }
    return 0;
}

int ac_fs_pending_read(struct ac_chan *ch, int kind, const struct ac_pending_check *check,
                       struct ac_pending *out, struct ac_err *err)
{
    const struct format *f = format_of(kind);
    char *data;
    size_t len;
    int mkdir_failed, dfd, rc, e;

    memset(out, 0, sizeof *out);
    out->kind = kind;
    if (!f)
        return 0;               /* task batches are never pending */
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
        return e == ENOENT ? 0 : f->read_error(ch, f, e, NULL, err);
    rc = decode_bytes(ch, f, data, len, check, out, NULL, err);
    free(data);
    return rc == -1 ? -1 : 1;
}

int ac_fs_pending_settle(struct ac_chan *ch, const struct ac_pending *p, int how, struct ac_err *err)
{
    const struct format *f = format_of(p->kind);
    int rc, dfd, mkdir_failed, e;

    if (!f || !p->nchanges)
        return ac_err_sys(err, EINVAL, NULL, "nothing to settle");
    if (how == AC_SETTLE_VERIFY) {
        rc = records_match(fs_chan_fd(ch), f, p->changes, p->nchanges);
        if (rc == -1)
            return ac_err_sys(err, errno, f->io_code, "could not read the records of the pending change");
        return rc == 1 ? 0 : 1;
    }
    dfd = journal_dir(fs_chan_fd(ch), f, 1, &mkdir_failed);
    rc = dfd == -1 ? -1 : put_records(fs_chan_fd(ch), dfd, f, p->changes, p->nchanges, 1);
    e = errno;
    if (dfd != -1)
        close(dfd);
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
        return errno == ENOENT ? 0 : ac_err_sys(err, errno, f->io_code, "%s", f->msg_remove);
    rc = journal_remove(dfd, f);
    e = errno;
    close(dfd);
    if (rc == -1)
        return ac_err_sys(err, e, f->io_code, "%s", f->msg_remove);
    return 0;
}
