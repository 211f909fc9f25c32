/* wire.c - etcd gateway JSON: requests and replies; see src/etcd/wire.h.
 *
 * Every reply is treated as hostile: each field is type-checked before
 * use, numbers are parsed strictly with overflow checks, base64 strictly,
 * and a decoder either fills its whole result or nothing. Messages name
 * the field that was wrong, never its contents (which could be anything). */
#include "etcd/wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/codec.h"

int ac_etcdw_bad(struct ac_err *err, const char *code, const char *fmt, ...)
{
    char what[AC_ERR_MSG_MAX - 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (strcmp(code, "ETCD_NOMEM") == 0)
        return ac_err_set(err, AC_EXIT_GENERAL, code, "out of memory reading an etcd reply");
    return ac_err_set(err, AC_EXIT_GENERAL, code, "etcd reply: %s", what);
}

static int nomem(struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NOMEM", "out of memory");
}

json_t *ac_etcdw_parse(const char *body, size_t len, struct ac_err *err)
{
    json_error_t je;
    json_t *o;
    if (len == 0) {
        ac_etcdw_bad(err, "ETCD_BAD_REPLY", "empty body");
        return NULL;
    }
    /* JSON_REJECT_DUPLICATES: a reply that says two things about one field
     * is not one we can trust either way. */
    o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        ac_etcdw_bad(err, "ETCD_BAD_REPLY", "not JSON (at byte %d)", je.position);
        return NULL;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        ac_etcdw_bad(err, "ETCD_BAD_REPLY", "not a JSON object");
        return NULL;
    }
    return o;
}

int ac_etcdw_error_of(const json_t *o, int *grpc_code, const char **message)
{
    const json_t *e = json_object_get(o, "error");
    const json_t *c, *m;
    *grpc_code = 0;
    *message = NULL;
    if (!e)
        return 0;
    if (json_is_object(e)) {              /* stream form */
        c = json_object_get(e, "grpc_code");
        m = json_object_get(e, "message");
    } else {                              /* unary form */
        c = json_object_get(o, "code");
        m = json_object_get(o, "message");
        if (!json_is_string(m) && json_is_string(e))
            m = e;
    }
    if (json_is_integer(c) && json_integer_value(c) > 0 && json_integer_value(c) < 100)
        *grpc_code = (int)json_integer_value(c);
    if (json_is_string(m))
        *message = json_string_value(m);
    return 1;
}

const char *ac_etcdw_classify(int grpc_code, const char *message, int *transient)
{
    const char *m = message ? message : "";
    *transient = 0;
    /* The message is more precise than the code (etcd maps several errors
     * to one code), so it is looked at first. */
    if (strstr(m, "required revision has been compacted"))
        return "ETCD_COMPACTED";
    if (strstr(m, "future revision"))
        return "ETCD_FUTURE_REVISION";
    if (strstr(m, "requested lease not found") || strstr(m, "lease not found"))
        return "ETCD_LEASE_NOT_FOUND";
    if (strstr(m, "authentication failed"))
        return "ETCD_AUTH_FAILED";
    if (strstr(m, "user name is empty"))
        return "ETCD_AUTH_REQUIRED";
    if (strstr(m, "invalid auth token"))
        return "ETCD_AUTH_FAILED";
    if (strstr(m, "permission denied") || grpc_code == AC_GRPC_PERMISSION_DENIED)
        return "ETCD_PERMISSION_DENIED";
    if (strstr(m, "database space exceeded"))
        return "ETCD_NO_SPACE";
    if (strstr(m, "no leader")) {
        *transient = 1;
        return "ETCD_NO_LEADER";
    }
    switch (grpc_code) {
    case AC_GRPC_INVALID_ARGUMENT:
    case AC_GRPC_FAILED_PRECONDITION:
        return "ETCD_INVALID";
    case AC_GRPC_NOT_FOUND:
        return "ETCD_SERVER_ERROR";
    case AC_GRPC_UNAUTHENTICATED:
        return "ETCD_AUTH_FAILED";
    case AC_GRPC_UNAVAILABLE:
    case AC_GRPC_DEADLINE_EXCEEDED:
    case AC_GRPC_RESOURCE_EXHAUSTED:   /* "too many requests": a busy leader */
        *transient = 1;
        return "ETCD_OUTCOME_UNKNOWN";
    default:
        return "ETCD_SERVER_ERROR";
    }
}

/* ---- numbers ---- */

/* Parse s[0..len) as a decimal; neg allowed when sign. Returns 0 or -1. */
static int parse_dec(const char *s, size_t len, int sign, uint64_t *mag, int *neg)
{
    size_t i = 0;
    uint64_t v = 0;
    *neg = 0;
    if (sign && len > 0 && s[0] == '-') {
        *neg = 1;
        i = 1;
    }
    if (i == len || len - i > 20)
        return -1;
    for (; i < len; i++) {
        unsigned d;
        if (s[i] < '0' || s[i] > '9')
            return -1;
        d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *mag = v;
    return 0;
}

int ac_etcdw_int64(const json_t *o, const char *name, int64_t *out, struct ac_err *err)
{
    const json_t *v = json_object_get(o, name);
    *out = 0;
    if (!v)
        return 0;
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        uint64_t mag;
        int neg;
        if (parse_dec(json_string_value(v), json_string_length(v), 1, &mag, &neg) == 0 &&
            mag <= (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX)) {
            *out = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag)
                       : (int64_t)mag;
            return 0;
        }
    }
    return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field '%s' is not a 64-bit integer", name);
}

int ac_etcdw_uint64(const json_t *o, const char *name, uint64_t *out, struct ac_err *err)
{
    const json_t *v = json_object_get(o, name);
    *out = 0;
    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        int neg;
        if (parse_dec(json_string_value(v), json_string_length(v), 0, out, &neg) == 0)
            return 0;
    }
    *out = 0;
    return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field '%s' is not an unsigned 64-bit integer",
                        name);
}

int ac_etcdw_bool(const json_t *o, const char *name, int *out, struct ac_err *err)
{
    const json_t *v = json_object_get(o, name);
    *out = 0;
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field '%s' is not a boolean", name);
    *out = json_is_true(v);
    return 0;
}

/* o[name] when it is of JSON type `type` (absent: *out NULL), else
 * BAD_REPLY saying it is not `what`. */
static int get_typed(const json_t *o, const char *name, json_type type, const char *what,
                     const json_t **out, struct ac_err *err)
{
    const json_t *v = json_object_get(o, name);
    *out = NULL;
    if (!v)
        return 0;
    if (json_typeof(v) != type)
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field '%s' is not %s", name, what);
    *out = v;
    return 0;
}

#define get_object(o, name, out, err) get_typed(o, name, JSON_OBJECT, "an object", out, err)
#define get_array(o, name, out, err) get_typed(o, name, JSON_ARRAY, "a list", out, err)

/* o[name] as a list: *a the array, *items a zeroed buffer of its length in
 * elements of `size` bytes, *n that length (absent or empty: NULL, NULL,
 * 0). */
static int get_list(const json_t *o, const char *name, size_t size, const json_t **a,
                    void **items, size_t *n, struct ac_err *err)
{
    *items = NULL;
    *n = 0;
    if (get_array(o, name, a, err) == -1)
        return -1;
    if (!*a || json_array_size(*a) == 0)
        return 0;
    *items = calloc(json_array_size(*a), size);
    if (!*items)
        return nomem(err);
    *n = json_array_size(*a);
    return 0;
}

/* Decode the base64 bytes of o[name] into a malloc'ed, NUL-terminated
 * buffer (absent: "", when required is 0). */
static int get_bytes(const json_t *o, const char *name, int required, char **out, size_t *len,
                     struct ac_err *err)
{
    const json_t *v = json_object_get(o, name);
    *out = NULL;
    *len = 0;
    if (!v) {
        if (required)
            return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field '%s' is missing", name);
        *out = calloc(1, 1);
        return *out ? 0 : nomem(err);
    }
    if (!json_is_string(v))
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field '%s' is not a string", name);
    errno = 0;
    *out = ac_b64_decode(json_string_value(v), json_string_length(v), len);
    if (!*out) {
        if (errno == ENOMEM)
            return nomem(err);
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field '%s' is not base64", name);
    }
    return 0;
}

int ac_etcdw_header_revision(const json_t *o, int64_t *rev, struct ac_err *err)
{
    const json_t *h;
    *rev = 0;
    if (get_object(o, "header", &h, err) == -1)
        return -1;
    if (!h)
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "no header");
    if (ac_etcdw_int64(h, "revision", rev, err) == -1)
        return -1;
    if (*rev < 0) {
        *rev = 0;
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "negative revision");
    }
    return 0;
}

void ac_etcd_kv_free(struct ac_etcd_kv *kv)
{
    if (!kv)
        return;
    free(kv->key);
    free(kv->value);
    memset(kv, 0, sizeof *kv);
}

int ac_etcdw_kv(const json_t *o, struct ac_etcd_kv *kv, struct ac_err *err)
{
    memset(kv, 0, sizeof *kv);
    if (!json_is_object(o))
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "a key-value pair is not an object");
    if (get_bytes(o, "key", 1, &kv->key, &kv->key_len, err) == -1 ||
        get_bytes(o, "value", 0, &kv->value, &kv->value_len, err) == -1 ||
        ac_etcdw_int64(o, "create_revision", &kv->create_revision, err) == -1 ||
        ac_etcdw_int64(o, "mod_revision", &kv->mod_revision, err) == -1 ||
        ac_etcdw_int64(o, "version", &kv->version, err) == -1 ||
        ac_etcdw_int64(o, "lease", &kv->lease, err) == -1)
        goto fail;
    if (kv->create_revision < 0 || kv->mod_revision < 0 || kv->version < 0) {
        ac_etcdw_bad(err, "ETCD_BAD_REPLY", "negative revision or version in a key-value pair");
        goto fail;
    }
    return 0;
fail:
    ac_etcd_kv_free(kv);
    return -1;
}

void ac_etcd_range_res_free(struct ac_etcd_range_res *res)
{
    size_t i;
    if (!res)
        return;
    for (i = 0; i < res->nkvs; i++)
        ac_etcd_kv_free(&res->kvs[i]);
    free(res->kvs);
    memset(res, 0, sizeof *res);
}

/* Decode the list o[name] of key-value pairs into res->kvs. */
static int get_kvs(const json_t *o, const char *name, struct ac_etcd_range_res *res,
                   struct ac_err *err)
{
    const json_t *a;
    void *items;
    size_t i, n;
    if (get_list(o, name, sizeof *res->kvs, &a, &items, &n, err) == -1)
        return -1;
    res->kvs = items;
    for (i = 0; i < n; i++) {
        if (ac_etcdw_kv(json_array_get(a, i), &res->kvs[i], err) == -1)
            return -1;
        res->nkvs++;
    }
    return 0;
}

/* The body of a range reply, with or without a header (a txn's
 * response_range has one with only the revision). */
static int range_body(const json_t *o, struct ac_etcd_range_res *res, struct ac_err *err)
{
    memset(res, 0, sizeof *res);
    if (ac_etcdw_int64(o, "count", &res->count, err) == -1 ||
        ac_etcdw_bool(o, "more", &res->more, err) == -1 || get_kvs(o, "kvs", res, err) == -1)
        goto fail;
    if (res->count < 0) {
        ac_etcdw_bad(err, "ETCD_BAD_REPLY", "negative count");
        goto fail;
    }
    return 0;
fail:
    ac_etcd_range_res_free(res);
    return -1;
}

int ac_etcdw_range(const json_t *o, struct ac_etcd_range_res *res, struct ac_err *err)
{
    int64_t rev;
    memset(res, 0, sizeof *res);
    if (ac_etcdw_header_revision(o, &rev, err) == -1 || range_body(o, res, err) == -1)
        return -1;
    res->revision = rev;
    return 0;
}

void ac_etcd_txn_res_free(struct ac_etcd_txn_res *res)
{
    size_t i;
    if (!res)
        return;
    for (i = 0; i < res->nops; i++)
        ac_etcd_range_res_free(&res->ops[i].range);
    free(res->ops);
    memset(res, 0, sizeof *res);
}

/* One element of a txn's "responses". */
static int op_result(const json_t *r, struct ac_etcd_op_res *op, struct ac_err *err)
{
    const json_t *v;
    memset(op, 0, sizeof *op);
    if (!json_is_object(r) || json_object_size(r) != 1)
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "a txn response is not one operation");
    if ((v = json_object_get(r, "response_range"))) {
        op->kind = AC_ETCD_OP_RANGE;
        if (!json_is_object(v))
            return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field 'response_range' is not an object");
        return range_body(v, &op->range, err);
    }
    if ((v = json_object_get(r, "response_put"))) {
        const json_t *prev;
        op->kind = AC_ETCD_OP_PUT;
        if (!json_is_object(v))
            return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field 'response_put' is not an object");
        if (get_object(v, "prev_kv", &prev, err) == -1)
            return -1;
        if (prev) {
            op->range.kvs = calloc(1, sizeof *op->range.kvs);
            if (!op->range.kvs)
                return nomem(err);
            if (ac_etcdw_kv(prev, op->range.kvs, err) == -1) {
                ac_etcd_range_res_free(&op->range);
                return -1;
            }
            op->range.nkvs = op->range.count = 1;
        }
        return 0;
    }
    if ((v = json_object_get(r, "response_delete_range"))) {
        op->kind = AC_ETCD_OP_DELETE;
        if (!json_is_object(v))
            return ac_etcdw_bad(err, "ETCD_BAD_REPLY",
                                "field 'response_delete_range' is not an object");
        if (ac_etcdw_int64(v, "deleted", &op->deleted, err) == -1)
            return -1;
        if (op->deleted < 0)
            return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "negative deleted count");
        if (get_kvs(v, "prev_kvs", &op->range, err) == -1) {
            ac_etcd_range_res_free(&op->range);
            return -1;
        }
        op->range.count = (int64_t)op->range.nkvs;
        return 0;
    }
    return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "a txn response of an unknown kind");
}

int ac_etcdw_txn(const json_t *o, const struct ac_etcd_txn_req *req, struct ac_etcd_txn_res *res,
                 struct ac_err *err)
{
    const json_t *a;
    size_t i, n;
    memset(res, 0, sizeof *res);
    if (ac_etcdw_header_revision(o, &res->revision, err) == -1 ||
        ac_etcdw_bool(o, "succeeded", &res->succeeded, err) == -1 ||
        get_array(o, "responses", &a, err) == -1)
        goto fail;
    n = a ? json_array_size(a) : 0;
    if (req) {
        size_t want = res->succeeded ? req->nsuccess : req->nfailure;
        if (n != want) {
            ac_etcdw_bad(err, "ETCD_BAD_REPLY", "%zu txn responses for %zu operations", n, want);
            goto fail;
        }
    }
    if (n > 0) {
        res->ops = calloc(n, sizeof *res->ops);
        if (!res->ops) {
            nomem(err);
            goto fail;
        }
    }
    for (i = 0; i < n; i++) {
        if (op_result(json_array_get(a, i), &res->ops[i], err) == -1)
            goto fail;
        res->nops++;
        if (req) {
            const struct ac_etcd_op *ops = res->succeeded ? req->success : req->failure;
            if (ops[i].kind != res->ops[i].kind) {
                ac_etcdw_bad(err, "ETCD_BAD_REPLY", "txn response %zu is not the operation asked",
                             i);
                goto fail;
            }
        }
    }
    return 0;
fail:
    ac_etcd_txn_res_free(res);
    return -1;
}

int ac_etcdw_status(const json_t *o, struct ac_etcd_status *st, struct ac_err *err)
{
    const json_t *h, *v;
    memset(st, 0, sizeof *st);
    if (get_object(o, "header", &h, err) == -1)
        return -1;
    if (!h)
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "no header");
    if (ac_etcdw_uint64(h, "cluster_id", &st->cluster_id, err) == -1 ||
        ac_etcdw_uint64(h, "member_id", &st->member_id, err) == -1 ||
        ac_etcdw_int64(h, "revision", &st->revision, err) == -1 ||
        ac_etcdw_uint64(o, "leader", &st->leader, err) == -1 ||
        ac_etcdw_int64(o, "raftTerm", &st->raft_term, err) == -1 ||
        ac_etcdw_int64(o, "raftIndex", &st->raft_index, err) == -1 ||
        ac_etcdw_int64(o, "dbSize", &st->db_size, err) == -1)
        goto fail;
    v = json_object_get(o, "version");
    if (v && !json_is_string(v)) {
        ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field 'version' is not a string");
        goto fail;
    }
    if (v)
        snprintf(st->version, sizeof st->version, "%s", json_string_value(v));
    return 0;
fail:
    memset(st, 0, sizeof *st);
    return -1;
}

static void free_strings(char **s, size_t n)
{
    size_t i;
    for (i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

void ac_etcd_members_free(struct ac_etcd_member *m, size_t n)
{
    size_t i;
    for (i = 0; m && i < n; i++) {
        free(m[i].name);
        free_strings(m[i].client_urls, m[i].nclient_urls);
        free_strings(m[i].peer_urls, m[i].npeer_urls);
    }
    free(m);
}

static int get_strings(const json_t *o, const char *name, char ***out, size_t *n,
                       struct ac_err *err)
{
    const json_t *a;
    void *items;
    size_t i, cnt;
    *n = 0;
    if (get_list(o, name, sizeof **out, &a, &items, &cnt, err) == -1)
        return -1;
    *out = items;
    for (i = 0; i < cnt; i++) {
        const json_t *s = json_array_get(a, i);
        if (!json_is_string(s))
            return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "an element of '%s' is not a string", name);
        (*out)[i] = strdup(json_string_value(s));
        if (!(*out)[i])
            return nomem(err);
        (*n)++;
    }
    return 0;
}

int ac_etcdw_members(const json_t *o, struct ac_etcd_member **members, size_t *n,
                     struct ac_err *err)
{
    const json_t *a;
    struct ac_etcd_member *m;
    void *items;
    size_t i, cnt, done = 0;
    *members = NULL;
    *n = 0;
    if (get_list(o, "members", sizeof *m, &a, &items, &cnt, err) == -1)
        return -1;
    if (cnt == 0)
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "no members");
    m = items;
    for (i = 0; i < cnt; i++, done++) {
        const json_t *mo = json_array_get(a, i), *name;
        if (!json_is_object(mo)) {
            ac_etcdw_bad(err, "ETCD_BAD_REPLY", "a member is not an object");
            goto fail;
        }
        name = json_object_get(mo, "name");
        if (name && !json_is_string(name)) {
            ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field 'name' is not a string");
            goto fail;
        }
        m[i].name = strdup(name ? json_string_value(name) : "");
        if (!m[i].name) {
            nomem(err);
            goto fail;
        }
        if (ac_etcdw_uint64(mo, "ID", &m[i].id, err) == -1 ||
            get_strings(mo, "clientURLs", &m[i].client_urls, &m[i].nclient_urls, err) == -1 ||
            get_strings(mo, "peerURLs", &m[i].peer_urls, &m[i].npeer_urls, err) == -1)
            goto fail;
    }
    *members = m;
    *n = cnt;
    return 0;
fail:
    ac_etcd_members_free(m, done + 1);
    return -1;
}

void ac_etcd_events_free(struct ac_etcd_events *ev)
{
    size_t i;
    if (!ev)
        return;
    for (i = 0; i < ev->nevents; i++) {
        ac_etcd_kv_free(&ev->events[i].kv);
        ac_etcd_kv_free(&ev->events[i].prev_kv);
    }
    free(ev->events);
    memset(ev, 0, sizeof *ev);
}

static int event_of(const json_t *o, struct ac_etcd_event *e, struct ac_err *err)
{
    const json_t *t, *kv, *prev;
    memset(e, 0, sizeof *e);
    if (!json_is_object(o))
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "an event is not an object");
    t = json_object_get(o, "type");
    if (!t || (json_is_string(t) && strcmp(json_string_value(t), "PUT") == 0))
        e->type = AC_ETCD_EVENT_PUT;
    else if (json_is_string(t) && strcmp(json_string_value(t), "DELETE") == 0)
        e->type = AC_ETCD_EVENT_DELETE;
    else
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "an event of an unknown type");
    if (get_object(o, "kv", &kv, err) == -1 || get_object(o, "prev_kv", &prev, err) == -1)
        return -1;
    if (!kv)
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "an event without 'kv'");
    if (ac_etcdw_kv(kv, &e->kv, err) == -1)
        return -1;
    if (e->kv.mod_revision <= 0) {
        ac_etcd_kv_free(&e->kv);
        return ac_etcdw_bad(err, "ETCD_BAD_REPLY", "an event without a revision");
    }
    if (prev) {
        if (ac_etcdw_kv(prev, &e->prev_kv, err) == -1) {
            ac_etcd_kv_free(&e->kv);
            return -1;
        }
        e->has_prev = 1;
    }
    return 0;
}

int ac_etcdw_watch_msg(const char *line, size_t len, struct ac_etcdw_watch_msg *m,
                       struct ac_err *err)
{
    json_t *o;
    const json_t *r, *a, *reason;
    const char *msg;
    void *items = NULL;
    size_t i, n = 0;
    int rc = -1;

    memset(m, 0, sizeof *m);
    o = ac_etcdw_parse(line, len, err);
    if (!o)
        return -1;
    if (ac_etcdw_error_of(o, &m->grpc_code, &msg)) {
        m->is_error = 1;
        ac_err_quote(m->message, sizeof m->message, msg ? msg : "(no message)", 200);
        rc = 0;
        goto out;
    }
    if (get_object(o, "result", &r, err) == -1)
        goto out;
    if (!r) {
        ac_etcdw_bad(err, "ETCD_BAD_REPLY", "a watch message without 'result'");
        goto out;
    }
    if (ac_etcdw_header_revision(r, &m->header_revision, err) == -1 ||
        ac_etcdw_bool(r, "created", &m->created, err) == -1 ||
        ac_etcdw_bool(r, "canceled", &m->canceled, err) == -1 ||
        ac_etcdw_int64(r, "compact_revision", &m->compact_revision, err) == -1 ||
        get_list(r, "events", sizeof *m->ev.events, &a, &items, &n, err) == -1)
        goto out;
    m->ev.events = items;
    reason = json_object_get(r, "cancel_reason");
    if (reason && !json_is_string(reason)) {
        ac_etcdw_bad(err, "ETCD_BAD_REPLY", "field 'cancel_reason' is not a string");
        goto out;
    }
    if (reason)
        ac_err_quote(m->message, sizeof m->message, json_string_value(reason), 200);
    if (m->compact_revision < 0) {
        ac_etcdw_bad(err, "ETCD_BAD_REPLY", "negative compact revision");
        goto out;
    }
    for (i = 0; i < n; i++) {
        struct ac_etcd_event *e = &m->ev.events[i];
        if (event_of(json_array_get(a, i), e, err) == -1)
            goto out;
        m->ev.nevents++;
        /* One response holds whole revisions in order; out of order is a
         * server we cannot resume against correctly. */
        if (i > 0 && e->kv.mod_revision < m->ev.events[i - 1].kv.mod_revision) {
            ac_etcdw_bad(err, "ETCD_BAD_REPLY", "watch events out of revision order");
            goto out;
        }
        m->ev.revision = e->kv.mod_revision;
    }
    rc = 0;
out:
    if (rc == -1)
        ac_etcd_events_free(&m->ev);
    json_decref(o);
    return rc;
}

/* ---- encoders ---- */

size_t ac_etcdw_prefix_end(const char *prefix, size_t len, char *out)
{
    while (len > 0 && (unsigned char)prefix[len - 1] == 0xff)
        len--;
    if (len == 0) {
        out[0] = '\0';
        return 1;
    }
    memcpy(out, prefix, len);
    out[len - 1] = (char)((unsigned char)out[len - 1] + 1);
    return len;
}

static int set_bytes(json_t *o, const char *name, const char *p, size_t len, struct ac_err *err)
{
    char *b = ac_b64_encode(p ? p : "", p ? len : 0);
    if (!b || json_object_set_new(o, name, json_string_nocheck(b)) == -1) {
        free(b);
        return nomem(err);
    }
    free(b);
    return 0;
}

int ac_etcdw_set_int64(json_t *o, const char *name, int64_t v, struct ac_err *err)
{
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)v);
    if (json_object_set_new(o, name, json_string_nocheck(num)) == -1)
        return nomem(err);
    return 0;
}

int ac_etcdw_put_keys(json_t *o, const struct ac_etcd_keys *k, const char *keyname,
                      const char *endname, struct ac_err *err)
{
    size_t klen;
    if (!k->key)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID", "etcd request without a key");
    klen = k->key_len ? k->key_len : strlen(k->key);
    if (k->prefix) {
        char *end;
        size_t elen;
        int rc;
        if (klen == 0)     /* every key: from "\0" to "\0" */
            return set_bytes(o, keyname, "", 1, err) == -1 ? -1
                   : set_bytes(o, endname, "", 1, err);
        end = malloc(klen + 1);
        if (!end)
            return nomem(err);
        elen = ac_etcdw_prefix_end(k->key, klen, end);
        rc = set_bytes(o, keyname, k->key, klen, err) == -1 ? -1
             : set_bytes(o, endname, end, elen, err);
        free(end);
        return rc;
    }
    if (klen == 0)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID", "etcd request with an empty key");
    if (set_bytes(o, keyname, k->key, klen, err) == -1)
        return -1;
    if (k->end)
        return set_bytes(o, endname, k->end, k->end_len ? k->end_len : strlen(k->end), err);
    return 0;
}

static int set_true(json_t *o, const char *name, int flag, struct ac_err *err)
{
    if (flag && json_object_set_new(o, name, json_true()) == -1)
        return nomem(err);
    return 0;
}

/* The fields of a RangeRequest into o. */
static int range_fields(json_t *o, const struct ac_etcd_keys *keys, int64_t limit,
                        int64_t revision, int keys_only, int count_only, int serializable,
                        struct ac_err *err)
{
    if (limit < 0 || revision < 0)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID",
                          "etcd range with a negative limit or revision");
    if (ac_etcdw_put_keys(o, keys, "key", "range_end", err) == -1 ||
        (limit && ac_etcdw_set_int64(o, "limit", limit, err) == -1) ||
        (revision && ac_etcdw_set_int64(o, "revision", revision, err) == -1) ||
        set_true(o, "keys_only", keys_only, err) == -1 ||
        set_true(o, "count_only", count_only, err) == -1 ||
        set_true(o, "serializable", serializable, err) == -1)
        return -1;
    return 0;
}

json_t *ac_etcdw_range_req(const struct ac_etcd_range_req *r, struct ac_err *err)
{
    json_t *o = json_object();
    if (!o) {
        nomem(err);
        return NULL;
    }
    if (range_fields(o, &r->keys, r->limit, r->revision, r->keys_only, r->count_only,
                     r->serializable, err) == -1) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static const char *const TARGETS[] = { "VERSION", "CREATE", "MOD", "VALUE", "LEASE" };
static const char *const TARGET_FIELD[] = { "version", "create_revision", "mod_revision",
                                            "value", "lease" };
static const char *const RESULTS[] = { "EQUAL", "GREATER", "LESS", "NOT_EQUAL" };

static json_t *cmp_json(const struct ac_etcd_cmp *c, struct ac_err *err)
{
    json_t *o = json_object();
    if (!o) {
        nomem(err);
        return NULL;
    }
    if ((unsigned)c->target > AC_ETCD_LEASE || (unsigned)c->result > AC_ETCD_NOT_EQUAL) {
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID", "etcd compare of an unknown kind");
        goto fail;
    }
    if (ac_etcdw_put_keys(o, &c->keys, "key", "range_end", err) == -1)
        goto fail;
    if (json_object_set_new(o, "target", json_string(TARGETS[c->target])) == -1 ||
        json_object_set_new(o, "result", json_string(RESULTS[c->result])) == -1) {
        nomem(err);
        goto fail;
    }
    /* Zero values must be sent explicitly here: "version":"0" is how a
     * compare says "the key does not exist" (grpc-gateway reads an absent
     * field as 0 too, but being explicit costs nothing). */
    if (c->target == AC_ETCD_VALUE) {
        if (set_bytes(o, "value", c->value, c->value_len, err) == -1)
            goto fail;
    } else if (ac_etcdw_set_int64(o, TARGET_FIELD[c->target], c->number, err) == -1) {
        goto fail;
    }
    return o;
fail:
    json_decref(o);
    return NULL;
}

static json_t *op_json(const struct ac_etcd_op *op, struct ac_err *err)
{
    json_t *outer = json_object(), *o = json_object();
    const char *name;
    if (!outer || !o) {
        nomem(err);
        goto fail;
    }
    switch (op->kind) {
    case AC_ETCD_OP_RANGE:
        name = "request_range";
        if (range_fields(o, &op->keys, op->limit, op->revision, op->keys_only, op->count_only, 0,
                         err) == -1)
            goto fail;
        break;
    case AC_ETCD_OP_PUT:
        name = "request_put";
        if (op->keys.prefix || op->keys.end) {
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID", "etcd put of a range");
            goto fail;
        }
        if (ac_etcdw_put_keys(o, &op->keys, "key", "range_end", err) == -1 ||
            set_bytes(o, "value", op->value, op->value_len, err) == -1 ||
            (op->lease && ac_etcdw_set_int64(o, "lease", op->lease, err) == -1) ||
            set_true(o, "prev_kv", op->prev_kv, err) == -1)
            goto fail;
        break;
    case AC_ETCD_OP_DELETE:
        name = "request_delete_range";
        if (ac_etcdw_put_keys(o, &op->keys, "key", "range_end", err) == -1 ||
            set_true(o, "prev_kv", op->prev_kv, err) == -1)
            goto fail;
        break;
    default:
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID", "etcd operation of an unknown kind");
        goto fail;
    }
    if (json_object_set_new(outer, name, o) == -1) {
        o = NULL;
        nomem(err);
        goto fail;
    }
    return outer;
fail:
    json_decref(o);
    json_decref(outer);
    return NULL;
}

/* o[name] = [ops...] */
static int ops_json(json_t *o, const char *name, const struct ac_etcd_op *ops, size_t n,
                    struct ac_err *err)
{
    json_t *a;
    size_t i;
    if (n == 0)
        return 0;
    a = json_array();
    if (!a || json_object_set_new(o, name, a) == -1)
        return nomem(err);
    for (i = 0; i < n; i++) {
        json_t *x = op_json(&ops[i], err);
        if (!x)
            return -1;
        if (json_array_append_new(a, x) == -1)
            return nomem(err);
    }
    return 0;
}

json_t *ac_etcdw_txn_req(const struct ac_etcd_txn_req *t, struct ac_err *err)
{
    json_t *o = json_object(), *a = NULL;
    size_t i;
    if (!o) {
        nomem(err);
        return NULL;
    }
    if (t->ncmp > 0) {
        a = json_array();
        if (!a || json_object_set_new(o, "compare", a) == -1) {
            nomem(err);
            goto fail;
        }
        for (i = 0; i < t->ncmp; i++) {
            json_t *c = cmp_json(&t->cmp[i], err);
            if (!c)
                goto fail;
            if (json_array_append_new(a, c) == -1) {
                nomem(err);
                goto fail;
            }
        }
    }
    if (ops_json(o, "success", t->success, t->nsuccess, err) == -1 ||
        ops_json(o, "failure", t->failure, t->nfailure, err) == -1)
        goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}

json_t *ac_etcdw_watch_req(const struct ac_etcd_watch_req *w, int64_t start_revision,
                           struct ac_err *err)
{
    json_t *outer = json_object(), *o = json_object(), *filters;
    if (!outer || !o) {
        nomem(err);
        goto fail;
    }
    if (start_revision < 0) {
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID", "etcd watch from a negative revision");
        goto fail;
    }
    if (ac_etcdw_put_keys(o, &w->keys, "key", "range_end", err) == -1 ||
        (start_revision && ac_etcdw_set_int64(o, "start_revision", start_revision, err) == -1) ||
        set_true(o, "prev_kv", w->prev_kv, err) == -1)
        goto fail;
    if (w->no_put || w->no_delete) {
        filters = json_array();
        if (!filters || json_object_set_new(o, "filters", filters) == -1 ||
            (w->no_put && json_array_append_new(filters, json_string("NOPUT")) == -1) ||
            (w->no_delete && json_array_append_new(filters, json_string("NODELETE")) == -1)) {
            nomem(err);
            goto fail;
        }
    }
    if (json_object_set_new(outer, "create_request", o) == -1) {
        o = NULL;
        nomem(err);
        goto fail;
    }
    return outer;
fail:
    json_decref(o);
    json_decref(outer);
    return NULL;
}
