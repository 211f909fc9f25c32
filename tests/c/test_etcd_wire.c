/*
 * test_etcd_wire.c - the etcd client without a cluster: the gateway JSON
 * (src/etcd/wire.c) as etcd 3.4 writes it and as a hostile server could
 * write it, the requests it builds, the classification of server errors,
 * the configuration (endpoint list, options) and the scrubbing of
 * secrets from messages.
 */
#include <inttypes.h>

#include "etcd/internal.h"
#include "etcd/wire.h"
#include "tap.h"

/* ---- decoders ---- */

/* Decode body with the range decoder; returns the error code or "ok". */
static const char *range_of(const char *body, struct ac_etcd_range_res *res)
{
    static char code[64];
    struct ac_err err = AC_ERR_INIT;
    json_t *o = ac_etcdw_parse(body, strlen(body), &err);
    int rc = o ? ac_etcdw_range(o, res, &err) : -1;
    json_decref(o);
    snprintf(code, sizeof code, "%s", rc == 0 ? "ok" : err.code);
    if (rc == -1 && (res->nkvs != 0 || res->kvs != NULL))
        return "partial result left behind";
    if (rc == -1 && (strchr(err.msg, '\n') || !err.msg[0]))
        return "bad message";
    return code;
}

static void test_range_replies(void)
{
    struct ac_etcd_range_res r;
    static const struct {
        const char *body, *want;
    } bad[] = {
        { "", "ETCD_BAD_REPLY" },
        { "{", "ETCD_BAD_REPLY" },
        { "null", "ETCD_BAD_REPLY" },
        { "[]", "ETCD_BAD_REPLY" },
        { "\"x\"", "ETCD_BAD_REPLY" },
        { "{}", "ETCD_BAD_REPLY" },                                   /* no header */
        { "{\"header\":[]}", "ETCD_BAD_REPLY" },
        { "{\"header\":{\"revision\":\"x\"}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{\"revision\":\" 1\"}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{\"revision\":\"+1\"}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{\"revision\":\"\"}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{\"revision\":\"9223372036854775808\"}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{\"revision\":\"99999999999999999999999\"}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{\"revision\":1.5}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{\"revision\":true}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{\"revision\":\"-3\"}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"kvs\":{}}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"kvs\":[1]}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"kvs\":[{}]}", "ETCD_BAD_REPLY" },         /* no key */
        { "{\"header\":{},\"kvs\":[{\"key\":\"***\"}]}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"kvs\":[{\"key\":\"YQ\"}]}", "ETCD_BAD_REPLY" }, /* no padding */
        { "{\"header\":{},\"kvs\":[{\"key\":5}]}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"kvs\":[{\"key\":\"YQ==\",\"value\":[]}]}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"kvs\":[{\"key\":\"YQ==\",\"version\":\"-1\"}]}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"kvs\":[{\"key\":\"YQ==\"},{\"key\":\"!\"}]}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"count\":\"-1\"}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"more\":\"yes\"}", "ETCD_BAD_REPLY" },
        { "{\"header\":{},\"header\":{}}", "ETCD_BAD_REPLY" },        /* duplicate */
        { "{\"header\":{},\"kvs\":[{\"key\":\"YQ==\",\"value\":\"\\u0000\"}]}", "ETCD_BAD_REPLY" },
        { "{\"header\":{}} trailing", "ETCD_BAD_REPLY" },
    };
    size_t i;
    char deep[5000];

    TAP_STR_EQ(range_of("{\"header\":{\"cluster_id\":\"5984852725050221438\",\"member_id\":"
                        "\"3602178782784392396\",\"revision\":\"2\",\"raft_term\":\"2\"},\"kvs\":"
                        "[{\"key\":\"Zm9v\",\"create_revision\":\"2\",\"mod_revision\":\"2\","
                        "\"version\":\"1\",\"value\":\"YmFy\"}],\"count\":\"1\"}",
                        &r),
               "ok", "an etcd 3.4 range reply decodes");
    TAP_OK(r.revision == 2 && r.count == 1 && r.nkvs == 1 && r.kvs[0].key_len == 3 &&
               strcmp(r.kvs[0].key, "foo") == 0 && strcmp(r.kvs[0].value, "bar") == 0 &&
               r.kvs[0].create_revision == 2 && r.kvs[0].version == 1 && !r.more,
           "... with every field");
    ac_etcd_range_res_free(&r);
    TAP_STR_EQ(range_of("{\"header\":{\"revision\":\"7\"}}", &r), "ok",
               "no kvs, no count: an empty range (zero values are left out)");
    TAP_OK(r.nkvs == 0 && r.count == 0 && r.revision == 7, "... read as empty");
    TAP_STR_EQ(range_of("{\"header\":{\"revision\":7},\"kvs\":[{\"key\":\"YQ==\",\"value\":"
                        "\"AP8A\",\"lease\":12}],\"count\":1,\"more\":true}",
                        &r),
               "ok", "JSON integers are accepted where strings are usual");
    TAP_OK(r.nkvs == 1 && r.kvs[0].value_len == 3 && r.kvs[0].value[0] == 0 &&
               (unsigned char)r.kvs[0].value[1] == 0xff && r.kvs[0].value[3] == 0 &&
               r.kvs[0].lease == 12 && r.more,
           "a value with NUL and 0xff bytes keeps its length (and a NUL after it)");
    ac_etcd_range_res_free(&r);
    TAP_STR_EQ(range_of("{\"header\":{\"revision\":\"-0\"}}", &r), "ok", "\"-0\" is 0");
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        TAP_STR_EQ(range_of(bad[i].body, &r), bad[i].want, "hostile range reply %zu: %.60s", i,
                   bad[i].body);
    /* deeper than jansson's parser allows: an error, not a stack overflow */
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    TAP_STR_EQ(range_of(deep, &r), "ETCD_BAD_REPLY", "4999 nested lists: ETCD_BAD_REPLY");
}

static const char *txn_of(const char *body, const struct ac_etcd_txn_req *req,
                          struct ac_etcd_txn_res *res)
{
    static char code[64];
    struct ac_err err = AC_ERR_INIT;
    json_t *o = ac_etcdw_parse(body, strlen(body), &err);
    int rc = o ? ac_etcdw_txn(o, req, res, &err) : -1;
    json_decref(o);
    if (rc == -1 && (res->nops || res->ops))
        return "partial result left behind";
    snprintf(code, sizeof code, "%s", rc == 0 ? "ok" : err.code);
    return code;
}

static void test_txn_replies(void)
{
    struct ac_etcd_op ok_ops[2] = {
        { AC_ETCD_OP_PUT, AC_ETCD_KEY("a"), "1", 1, 0, 0, 0, 0, 0, 1 },
        { AC_ETCD_OP_DELETE, AC_ETCD_KEY("b"), NULL, 0, 0, 0, 0, 0, 0, 1 },
    };
    struct ac_etcd_op no_op = { AC_ETCD_OP_RANGE, AC_ETCD_KEY("a"), NULL, 0, 0, 0, 0, 0, 0, 0 };
    struct ac_etcd_txn_req req = { NULL, 0, ok_ops, 2, &no_op, 1 };
    struct ac_etcd_txn_res r;

    TAP_STR_EQ(txn_of("{\"header\":{\"revision\":\"9\"},\"succeeded\":true,\"responses\":["
                      "{\"response_put\":{\"header\":{\"revision\":\"9\"},\"prev_kv\":{\"key\":"
                      "\"YQ==\",\"value\":\"MA==\",\"mod_revision\":\"3\"}}},"
                      "{\"response_delete_range\":{\"header\":{},\"deleted\":\"1\",\"prev_kvs\":"
                      "[{\"key\":\"Yg==\",\"value\":\"eA==\",\"mod_revision\":\"4\"}]}}]}",
                      &req, &r),
               "ok", "a succeeded txn with a put and a delete");
    TAP_OK(r.succeeded && r.revision == 9 && r.nops == 2 && r.ops[0].range.nkvs == 1 &&
               strcmp(r.ops[0].range.kvs[0].value, "0") == 0 && r.ops[1].deleted == 1 &&
               r.ops[1].range.nkvs == 1 && strcmp(r.ops[1].range.kvs[0].key, "b") == 0,
           "... prev_kv of the put, deleted count and pairs of the delete");
    ac_etcd_txn_res_free(&r);
    TAP_STR_EQ(txn_of("{\"header\":{\"revision\":\"9\"},\"responses\":[{\"response_range\":"
                      "{\"header\":{\"revision\":\"9\"},\"kvs\":[{\"key\":\"YQ==\"}],\"count\":"
                      "\"1\"}}]}",
                      &req, &r),
               "ok", "a failed compare: the failure branch's range");
    TAP_OK(!r.succeeded && r.nops == 1 && r.ops[0].kind == AC_ETCD_OP_RANGE &&
               r.ops[0].range.nkvs == 1,
           "... decoded");
    ac_etcd_txn_res_free(&r);
    TAP_STR_EQ(txn_of("{\"header\":{\"revision\":\"9\"},\"succeeded\":true,\"responses\":[]}", &req,
                      &r),
               "ETCD_BAD_REPLY", "fewer responses than operations");
    TAP_STR_EQ(txn_of("{\"header\":{\"revision\":\"9\"},\"responses\":[{\"response_put\":{}}]}",
                      &req, &r),
               "ETCD_BAD_REPLY", "a response of another kind than the operation");
    TAP_STR_EQ(txn_of("{\"header\":{\"revision\":\"9\"},\"responses\":[{\"response_range\":{},"
                      "\"response_put\":{}}]}",
                      &req, &r),
               "ETCD_BAD_REPLY", "a response that is two operations");
    TAP_STR_EQ(txn_of("{\"header\":{\"revision\":\"9\"},\"responses\":[{\"response_txn\":{}}]}",
                      &req, &r),
               "ETCD_BAD_REPLY", "a response of an unknown kind");
    TAP_STR_EQ(txn_of("{\"header\":{\"revision\":\"9\"},\"succeeded\":1}", &req, &r),
               "ETCD_BAD_REPLY", "succeeded not a boolean");
    TAP_STR_EQ(txn_of("{\"header\":{\"revision\":\"9\"},\"succeeded\":true,\"responses\":["
                      "{\"response_put\":{}},{\"response_delete_range\":{\"deleted\":\"-1\"}}]}",
                      &req, &r),
               "ETCD_BAD_REPLY", "a negative deleted count");
}

static const char *watch_of(const char *line, struct ac_etcdw_watch_msg *m)
{
    static char code[64];
    struct ac_err err = AC_ERR_INIT;
    int rc = ac_etcdw_watch_msg(line, strlen(line), m, &err);
    if (rc == -1 && (m->ev.nevents || m->ev.events))
        return "partial result left behind";
    snprintf(code, sizeof code, "%s", rc == 0 ? "ok" : err.code);
    return code;
}

static void test_watch_messages(void)
{
    struct ac_etcdw_watch_msg m;
    static const char *const bad[] = {
        "{\"result\":{}}",                                              /* no header */
        "{\"header\":{}}",                                              /* no result */
        "{\"result\":{\"header\":{},\"events\":{}}}",
        "{\"result\":{\"header\":{},\"events\":[{\"type\":\"EXPLODE\",\"kv\":{\"key\":\"YQ==\","
        "\"mod_revision\":\"1\"}}]}}",
        "{\"result\":{\"header\":{},\"events\":[{\"type\":\"PUT\"}]}}",
        "{\"result\":{\"header\":{},\"events\":[{\"kv\":{\"key\":\"YQ==\"}}]}}",   /* rev 0 */
        "{\"result\":{\"header\":{},\"events\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"5\"}},"
        "{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"4\"}}]}}",                   /* order */
        "{\"result\":{\"header\":{},\"created\":\"true\"}}",
        "{\"result\":{\"header\":{},\"compact_revision\":\"-5\",\"canceled\":true}}",
        "{\"result\":{\"header\":{},\"cancel_reason\":7}}",
        "{\"result\":{\"header\":{},\"events\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"5\"},"
        "\"prev_kv\":[]}]}}",
    };
    size_t i;

    TAP_STR_EQ(watch_of("{\"result\":{\"header\":{\"revision\":\"2\"},\"created\":true}}", &m),
               "ok", "a created message");
    TAP_OK(m.created && m.header_revision == 2 && m.ev.nevents == 0, "... decoded");
    TAP_STR_EQ(watch_of("{\"result\":{\"header\":{\"revision\":\"6\"},\"events\":[{\"kv\":{\"key\":"
                        "\"YQ==\",\"mod_revision\":\"5\",\"value\":\"eA==\"}},{\"type\":\"DELETE\","
                        "\"kv\":{\"key\":\"Yg==\",\"mod_revision\":\"6\"},\"prev_kv\":{\"key\":"
                        "\"Yg==\",\"value\":\"eQ==\"}}]}}",
                        &m),
               "ok", "two events");
    TAP_OK(m.ev.nevents == 2 && m.ev.events[0].type == AC_ETCD_EVENT_PUT &&
               m.ev.events[1].type == AC_ETCD_EVENT_DELETE && m.ev.events[1].has_prev &&
               strcmp(m.ev.events[1].prev_kv.value, "y") == 0 && m.ev.revision == 6,
           "... PUT (type left out), DELETE with its previous pair, revision 6");
    ac_etcd_events_free(&m.ev);
    TAP_STR_EQ(watch_of("{\"result\":{\"header\":{},\"canceled\":true,\"compact_revision\":\"3\"}}",
                        &m),
               "ok", "a compaction cancel");
    TAP_OK(m.canceled && m.compact_revision == 3, "... with its revision");
    TAP_STR_EQ(watch_of("{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":"
                        "\"etcdserver: no leader\",\"http_status\":\"Service Unavailable\"}}",
                        &m),
               "ok", "a stream error");
    TAP_OK(m.is_error && m.grpc_code == 14 && strcmp(m.message, "etcdserver: no leader") == 0,
           "... with its code and message");
    TAP_STR_EQ(watch_of("{\"error\":{\"grpc_code\":2,\"message\":\"line\\none\"}}", &m), "ok",
               "an error message with a newline");
    TAP_OK(strchr(m.message, '\n') == NULL, "... is kept on one line (%s)", m.message);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        TAP_STR_EQ(watch_of(bad[i], &m), "ETCD_BAD_REPLY", "hostile watch message %zu", i);
}

static void test_other_replies(void)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_status st;
    struct ac_etcd_member *m;
    size_t n;
    json_t *o;

    o = json_loads("{\"header\":{\"cluster_id\":\"18446744073709551615\",\"member_id\":\"7\","
                   "\"revision\":\"2\"},\"version\":\"3.4.23\",\"leader\":\"7\",\"raftTerm\":\"2\"}",
                   0, NULL);
    TAP_OK(ac_etcdw_status(o, &st, &err) == 0 && st.cluster_id == UINT64_MAX && st.leader == 7 &&
               st.member_id == 7 && strcmp(st.version, "3.4.23") == 0,
           "status: uint64 ids up to 2^64-1");
    json_decref(o);
    o = json_loads("{\"header\":{},\"leader\":\"-1\"}", 0, NULL);
    TAP_OK(ac_etcdw_status(o, &st, &err) == -1 && strcmp(err.code, "ETCD_BAD_REPLY") == 0,
           "status: a negative id is refused");
    json_decref(o);
    o = json_loads("{\"header\":{},\"version\":{}}", 0, NULL);
    TAP_OK(ac_etcdw_status(o, &st, &err) == -1, "status: a version that is no string");
    json_decref(o);
    o = json_loads("{\"header\":{},\"members\":[{\"ID\":\"1\",\"name\":\"m1\",\"clientURLs\":"
                   "[\"http://a:1\"]},{\"ID\":\"2\",\"peerURLs\":[\"http://b:2\"]}]}",
                   0, NULL);
    TAP_OK(ac_etcdw_members(o, &m, &n, &err) == 0 && n == 2 && strcmp(m[0].name, "m1") == 0 &&
               m[0].nclient_urls == 1 && strcmp(m[1].name, "") == 0 && m[1].npeer_urls == 1,
           "members: a started and an unstarted member");
    ac_etcd_members_free(m, n);
    json_decref(o);
    o = json_loads("{\"header\":{},\"members\":[{\"ID\":\"1\",\"clientURLs\":[1]}]}", 0, NULL);
    TAP_OK(ac_etcdw_members(o, &m, &n, &err) == -1 && m == NULL && n == 0,
           "members: a URL that is no string");
    json_decref(o);
    o = json_loads("{\"header\":{}}", 0, NULL);
    TAP_OK(ac_etcdw_members(o, &m, &n, &err) == -1, "members: none at all");
    json_decref(o);
}

/* ---- errors ---- */

static void test_classify(void)
{
    static const struct {
        int grpc;
        const char *message, *code;
        int transient;
    } cases[] = {
        { 11, "etcdserver: mvcc: required revision has been compacted", "ETCD_COMPACTED", 0 },
        { 11, "etcdserver: mvcc: required revision is a future revision", "ETCD_FUTURE_REVISION",
          0 },
        { 5, "etcdserver: requested lease not found", "ETCD_LEASE_NOT_FOUND", 0 },
        { 3, "etcdserver: authentication failed, invalid user ID or password", "ETCD_AUTH_FAILED",
          0 },
        { 3, "etcdserver: user name is empty", "ETCD_AUTH_REQUIRED", 0 },
        { 16, "etcdserver: invalid auth token", "ETCD_AUTH_FAILED", 0 },
        { 7, "etcdserver: permission denied", "ETCD_PERMISSION_DENIED", 0 },
        { 8, "etcdserver: mvcc: database space exceeded", "ETCD_NO_SPACE", 0 },
        { 14, "etcdserver: no leader", "ETCD_NO_LEADER", 1 },
        { 14, "etcdserver: request timed out", "ETCD_OUTCOME_UNKNOWN", 1 },
        { 14, "etcdserver: leader changed", "ETCD_OUTCOME_UNKNOWN", 1 },
        { 8, "etcdserver: too many requests", "ETCD_OUTCOME_UNKNOWN", 1 },
        { 4, "context deadline exceeded", "ETCD_OUTCOME_UNKNOWN", 1 },
        { 3, "etcdserver: too many operations in txn request", "ETCD_INVALID", 0 },
        { 3, "etcdserver: duplicate key given in txn request", "ETCD_INVALID", 0 },
        { 9, "etcdserver: authentication is not enabled", "ETCD_INVALID", 0 },
        { 2, "something else", "ETCD_SERVER_ERROR", 0 },
        { 0, NULL, "ETCD_SERVER_ERROR", 0 },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int t = -1;
        const char *code = ac_etcdw_classify(cases[i].grpc, cases[i].message, &t);
        TAP_OK(strcmp(code, cases[i].code) == 0 && t == cases[i].transient,
               "gRPC %d '%s' -> %s%s (got %s%s)", cases[i].grpc,
               cases[i].message ? cases[i].message : "", cases[i].code,
               cases[i].transient ? ", transient" : "", code, t ? ", transient" : "");
    }
}

/* ---- encoders ---- */

static char *dump(json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return s;
}

static void test_encoders(void)
{
    struct ac_err err = AC_ERR_INIT;
    char end[16], *s;
    size_t n;
    struct ac_etcd_range_req rr = { .keys = AC_ETCD_PREFIX("ab"), .limit = 5, .revision = 9,
                                    .keys_only = 1 };
    struct ac_etcd_cmp cmp[2] = {
        { AC_ETCD_KEY("s"), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 },
        { AC_ETCD_KEY("v"), AC_ETCD_VALUE, AC_ETCD_NOT_EQUAL, 0, "x", 1 },
    };
    struct ac_etcd_op ops[2] = {
        { AC_ETCD_OP_PUT, AC_ETCD_KEY("s"), "1", 1, 7, 0, 0, 0, 0, 0 },
        { AC_ETCD_OP_DELETE, AC_ETCD_PREFIX("d/"), NULL, 0, 0, 0, 0, 0, 0, 1 },
    };
    struct ac_etcd_txn_req t = { cmp, 2, ops, 2, NULL, 0 };
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_KEY("w"), .no_delete = 1, .prev_kv = 1 };

    n = ac_etcdw_prefix_end("abc", 3, end);
    TAP_OK(n == 3 && memcmp(end, "abd", 3) == 0, "prefix end of abc: abd");
    n = ac_etcdw_prefix_end("a\xff\xff", 3, end);
    TAP_OK(n == 1 && end[0] == 'b', "prefix end of a\\xff\\xff: b");
    n = ac_etcdw_prefix_end("\xff", 1, end);
    TAP_OK(n == 1 && end[0] == '\0', "prefix end of \\xff: \\0 (every key after)");

    s = dump(ac_etcdw_range_req(&rr, &err));
    TAP_STR_EQ(s, "{\"key\":\"YWI=\",\"keys_only\":true,\"limit\":\"5\",\"range_end\":\"YWM=\","
                  "\"revision\":\"9\"}",
               "range request: base64 keys, prefix end, int64 as strings");
    free(s);
    rr.keys = AC_ETCD_PREFIX("");
    rr.limit = rr.revision = rr.keys_only = 0;
    s = dump(ac_etcdw_range_req(&rr, &err));
    TAP_STR_EQ(s, "{\"key\":\"AA==\",\"range_end\":\"AA==\"}", "the empty prefix: every key");
    free(s);
    s = dump(ac_etcdw_txn_req(&t, &err));
    TAP_STR_EQ(s, "{\"compare\":[{\"key\":\"cw==\",\"result\":\"EQUAL\",\"target\":\"VERSION\","
                  "\"version\":\"0\"},{\"key\":\"dg==\",\"result\":\"NOT_EQUAL\",\"target\":"
                  "\"VALUE\",\"value\":\"eA==\"}],\"success\":[{\"request_put\":{\"key\":\"cw==\","
                  "\"lease\":\"7\",\"value\":\"MQ==\"}},{\"request_delete_range\":{\"key\":"
                  "\"ZC8=\",\"prev_kv\":true,\"range_end\":\"ZDA=\"}}]}",
               "txn request: compares (version 0 sent explicitly), put with lease, delete prefix");
    free(s);
    s = dump(ac_etcdw_watch_req(&wr, 42, &err));
    TAP_STR_EQ(s, "{\"create_request\":{\"filters\":[\"NODELETE\"],\"key\":\"dw==\",\"prev_kv\":"
                  "true,\"start_revision\":\"42\"}}",
               "watch request: filters, previous pairs, start revision");
    free(s);

    rr.keys = AC_ETCD_KEY("");
    TAP_OK(ac_etcdw_range_req(&rr, &err) == NULL && strcmp(err.code, "ETCD_INVALID") == 0,
           "an empty key: ETCD_INVALID");
    rr.keys = AC_ETCD_KEY(NULL);
    TAP_OK(ac_etcdw_range_req(&rr, &err) == NULL && strcmp(err.code, "ETCD_INVALID") == 0,
           "no key: ETCD_INVALID");
    ops[0].keys = AC_ETCD_PREFIX("p");
    TAP_OK(ac_etcdw_txn_req(&t, &err) == NULL && strcmp(err.code, "ETCD_INVALID") == 0,
           "a put of a prefix: ETCD_INVALID");
    ops[0].keys = AC_ETCD_KEY("s");
    ops[0].kind = (enum ac_etcd_op_kind)9;
    TAP_OK(ac_etcdw_txn_req(&t, &err) == NULL && strcmp(err.code, "ETCD_INVALID") == 0,
           "an unknown operation: ETCD_INVALID");
}

/* ---- configuration ---- */

static const char *open_code(const char *eps, const char *user, const char *pw, char *msg,
                             size_t msgsz)
{
    static char code[64];
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd *e;
    cfg.endpoints = eps;
    cfg.username = user;
    cfg.password = pw;
    e = ac_etcd_open(&cfg, &err);
    snprintf(code, sizeof code, "%s", e ? "ok" : err.code);
    if (msg)
        snprintf(msg, msgsz, "%s", e ? "" : err.msg);
    ac_etcd_close(e);
    return code;
}

static void test_config(void)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd *e;
    char msg[AC_ERR_MSG_MAX], many[1024] = "";
    static const char *const bad[] = {
        "", ",", "a,,b", "h:", "h:0", "h:65536", "h:12a", "h:-1", "h:1:2", "h/path",
        "http://h:1/v3", "h:1?x", "[::1", "[zz]:1", "ftp://h:1", "h :1", "\n",
    };
    size_t i;

    cfg.endpoints = " 127.0.0.1:23791 ,http://h-2.example:2 , https://[::1]:3/,localhost";
    e = ac_etcd_open(&cfg, &err);
    TAP_OK(e != NULL && ac_etcd_endpoint_count(e) == 4, "four endpoints");
    if (e) {
        TAP_STR_EQ(ac_etcd_endpoint(e, 0), "http://127.0.0.1:23791", "HOST:PORT is http");
        TAP_STR_EQ(ac_etcd_endpoint(e, 1), "http://h-2.example:2", "a host name");
        TAP_STR_EQ(ac_etcd_endpoint(e, 2), "https://[::1]:3", "IPv6 with https, slash dropped");
        TAP_STR_EQ(ac_etcd_endpoint(e, 3), "http://localhost:2379", "no port: etcd's 2379");
        TAP_OK(ac_etcd_endpoint(e, 4) == NULL, "no fifth endpoint");
    }
    ac_etcd_close(e);
    cfg.endpoints = "127.0.0.1:1";
    cfg.ca_file = "/nonexistent/ca.pem";
    e = ac_etcd_open(&cfg, &err);
    TAP_STR_EQ(e ? ac_etcd_endpoint(e, 0) : "", "https://127.0.0.1:1",
               "with a TLS option HOST:PORT is https");
    ac_etcd_close(e);

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char q[64];
        TAP_STR_EQ(open_code(bad[i], NULL, NULL, msg, sizeof msg), "ETCD_CONFIG",
                   "endpoint list '%s' refused: %s", ac_err_quote(q, sizeof q, bad[i], 40), msg);
    }
    for (i = 0; i < AC_ETCD_MAX_ENDPOINTS + 1; i++)
        strcat(many, i ? ",h:1" : "h:1");
    TAP_STR_EQ(open_code(many, NULL, NULL, NULL, 0), "ETCD_CONFIG", "17 endpoints: too many");
    TAP_STR_EQ(open_code("http://bob:hunter2@h:1", NULL, NULL, msg, sizeof msg), "ETCD_CONFIG",
               "credentials in an endpoint URL are refused");
    TAP_OK(strstr(msg, "hunter2") == NULL && strstr(msg, "bob") == NULL,
           "... without repeating them: %s", msg);
    TAP_STR_EQ(open_code("h:1", "bob", NULL, NULL, 0), "ETCD_CONFIG", "a user without password");
    TAP_STR_EQ(open_code("h:1", NULL, "pw", NULL, 0), "ETCD_CONFIG", "a password without user");
    TAP_STR_EQ(open_code(NULL, NULL, NULL, NULL, 0), "ETCD_CONFIG", "no endpoints at all");
    cfg = (struct ac_etcd_config)AC_ETCD_CONFIG_INIT;
    cfg.endpoints = "h:1";
    cfg.op_timeout_ms = -1;
    TAP_OK(ac_etcd_open(&cfg, &err) == NULL && strcmp(err.code, "ETCD_CONFIG") == 0,
           "a negative timeout");
}

/* ---- secrets ---- */

static void test_scrub(void)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd *e;
    cfg.endpoints = "h:1";
    cfg.username = "carol";
    cfg.password = "pa55-carol";
    e = ac_etcd_open(&cfg, &err);
    if (!e) {
        TAP_OK(0, "open: %s", err.msg);
        return;
    }
    e->token = strdup("TOKEN.42");
    ac_err_set(&err, AC_EXIT_GENERAL, "ETCD_SERVER_ERROR",
               "user carol sent pa55-carol and TOKEN.42, then TOKEN.42 again");
    ac_etcd_scrub(e, &err);
    TAP_STR_EQ(err.msg, "user *** sent *** and ***, then *** again",
               "scrub replaces the user name, the password (holding the user name) and the token");
    memset(err.msg, 'x', sizeof err.msg - 1);
    memcpy(err.msg + sizeof err.msg - 11, "pa55-carol", 10);
    err.msg[sizeof err.msg - 1] = '\0';
    ac_etcd_scrub(e, &err);
    TAP_OK(strstr(err.msg, "pa55") == NULL && strlen(err.msg) < sizeof err.msg,
           "scrub at the very end of a full message");
    ac_etcd_close(e);
}

/* Whether a libcurl is mapped into this process. */
static int curl_mapped(void)
{
    char line[1024];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "/libcurl"))
            found = 1;
    fclose(f);
    return found;
}

/* libcurl is loaded by the first client that needs it (TLS, a watch, or
 * AGENT_CHAT_ETCD_TRANSPORT=curl), not by the program that links the
 * client, nor by a plain-http client's unary requests (http.c). */
static void test_lazy_curl(void)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY("k") };
    struct ac_etcd_range_res rs;
    struct ac_etcd *e;
    TAP_INT_EQ(curl_mapped(), 0, "libcurl is not loaded before a client opens");
    cfg.endpoints = "127.0.0.1:1";
    cfg.op_timeout_ms = 50;
    e = ac_etcd_open(&cfg, &err);
    TAP_OK(e != NULL, "a client opens");
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == -1 && strcmp(err.code, "ETCD_UNAVAILABLE") == 0,
           "... tries a plain-http request (refused)");
    TAP_INT_EQ(curl_mapped(), 0, "... without loading libcurl (its own HTTP/1.1 transport)");
    ac_etcd_close(e);
    setenv("AGENT_CHAT_ETCD_TRANSPORT", "curl", 1);
    e = ac_etcd_open(&cfg, &err);
    unsetenv("AGENT_CHAT_ETCD_TRANSPORT");
    TAP_OK(e != NULL, "a client for libcurl's transport opens");
    TAP_INT_EQ(curl_mapped(), 1, "... and loads libcurl");
    ac_etcd_close(e);
}

int main(void)
{
    test_lazy_curl();
    test_range_replies();
    test_txn_replies();
    test_watch_messages();
    test_other_replies();
    test_classify();
    test_encoders();
    test_config();
    test_scrub();
    return tap_done();
}
