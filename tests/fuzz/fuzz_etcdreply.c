/*
 * fuzz_etcdreply.c - the etcd client's reply decoders (src/etcd/wire.c)
 * on hostile bytes, as a server (or anything listening where a member
 * should be) could send them. The first byte picks the decoder, the rest
 * is the reply body:
 *
 *   0 range   1 txn (answering a put + delete request)   2 txn (no request)
 *   3 status  4 member list   5 a watch stream (split at newlines, each
 *   line one message, as watch.c reads it)   6 error classification
 *
 * Properties:
 *   - a decoder returns 0 or -1; on -1 the code is ETCD_BAD_REPLY or
 *     ETCD_NOMEM, the message is one non-empty line, and nothing is left
 *     allocated in its output (ASan's leak check sees the rest);
 *   - on 0 every key and value is NUL-terminated at its length, every
 *     revision, version and count is >= 0; a txn answering a request has
 *     one result per operation of the branch that ran, of its kind; watch
 *     events of one message are in revision order and none has revision 0;
 *   - classification always yields one of the stable codes.
 */
#include "fuzz.h"

#include "etcd/wire.h"

static void check_err(int rc, const struct ac_err *err)
{
    if (rc == 0)
        return;
    FUZZ_CHECK(err->code && (strcmp(err->code, "ETCD_BAD_REPLY") == 0 ||
                             strcmp(err->code, "ETCD_NOMEM") == 0),
               "unexpected code %s", err->code ? err->code : "(none)");
    FUZZ_CHECK(err->msg[0] && !strchr(err->msg, '\n'), "bad message '%s'", err->msg);
}

static void check_kv(const struct ac_etcd_kv *kv)
{
    FUZZ_CHECK(kv->key && kv->value, "kv without key or value buffer");
    FUZZ_CHECK(kv->key[kv->key_len] == '\0' && kv->value[kv->value_len] == '\0',
               "kv not NUL-terminated at its length");
    FUZZ_CHECK(kv->create_revision >= 0 && kv->mod_revision >= 0 && kv->version >= 0,
               "negative revision or version");
}

static void check_range(const struct ac_etcd_range_res *r)
{
    size_t i;
    FUZZ_CHECK(r->count >= 0 && r->revision >= 0, "negative count or revision");
    FUZZ_CHECK((r->nkvs == 0) == (r->kvs == NULL), "kvs and nkvs disagree");
    for (i = 0; i < r->nkvs; i++)
        check_kv(&r->kvs[i]);
}

static void one_range(const json_t *o)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_res r;
    int rc = ac_etcdw_range(o, &r, &err);
    check_err(rc, &err);
    if (rc == -1) {
        FUZZ_CHECK(r.kvs == NULL && r.nkvs == 0, "range result left after an error");
        return;
    }
    check_range(&r);
    ac_etcd_range_res_free(&r);
}

static void one_txn(const json_t *o, int with_req)
{
    static const struct ac_etcd_op ok[2] = {
        { AC_ETCD_OP_PUT, { "a", 1, NULL, 0, 0 }, "1", 1, 0, 0, 0, 0, 0, 1 },
        { AC_ETCD_OP_DELETE, { "b", 1, NULL, 0, 0 }, NULL, 0, 0, 0, 0, 0, 0, 1 },
    };
    static const struct ac_etcd_op no[1] = {
        { AC_ETCD_OP_RANGE, { "a", 1, NULL, 0, 0 }, NULL, 0, 0, 0, 0, 0, 0, 0 },
    };
    static const struct ac_etcd_txn_req req = { NULL, 0, ok, 2, no, 1 };
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_txn_res r;
    size_t i;
    int rc = ac_etcdw_txn(o, with_req ? &req : NULL, &r, &err);
    check_err(rc, &err);
    if (rc == -1) {
        FUZZ_CHECK(r.ops == NULL && r.nops == 0, "txn result left after an error");
        return;
    }
    if (with_req) {
        FUZZ_CHECK(r.nops == (r.succeeded ? 2u : 1u), "txn: %zu results", r.nops);
        for (i = 0; i < r.nops; i++)
            FUZZ_CHECK(r.ops[i].kind == (r.succeeded ? ok : no)[i].kind, "txn: result %zu kind", i);
    }
    for (i = 0; i < r.nops; i++) {
        check_range(&r.ops[i].range);
        FUZZ_CHECK(r.ops[i].deleted >= 0, "negative deleted count");
    }
    ac_etcd_txn_res_free(&r);
}

static void one_status(const json_t *o)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_status st;
    int rc = ac_etcdw_status(o, &st, &err);
    check_err(rc, &err);
    FUZZ_CHECK(memchr(st.version, '\0', sizeof st.version) != NULL, "version not terminated");
}

static void one_members(const json_t *o)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_member *m;
    size_t n, i, j;
    int rc = ac_etcdw_members(o, &m, &n, &err);
    check_err(rc, &err);
    if (rc == -1) {
        FUZZ_CHECK(m == NULL && n == 0, "members left after an error");
        return;
    }
    for (i = 0; i < n; i++) {
        FUZZ_CHECK(m[i].name != NULL, "member without a name buffer");
        for (j = 0; j < m[i].nclient_urls; j++)
            FUZZ_CHECK(m[i].client_urls[j] != NULL, "NULL client URL");
    }
    ac_etcd_members_free(m, n);
}

static void one_watch_line(const char *line, size_t len)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcdw_watch_msg m;
    size_t i;
    int rc = ac_etcdw_watch_msg(line, len, &m, &err);
    check_err(rc, &err);
    if (rc == -1) {
        FUZZ_CHECK(m.ev.events == NULL && m.ev.nevents == 0, "events left after an error");
        return;
    }
    FUZZ_CHECK(!strchr(m.message, '\n'), "watch message text on two lines");
    for (i = 0; i < m.ev.nevents; i++) {
        check_kv(&m.ev.events[i].kv);
        FUZZ_CHECK(m.ev.events[i].kv.mod_revision > 0, "event without a revision");
        FUZZ_CHECK(i == 0 || m.ev.events[i].kv.mod_revision >= m.ev.events[i - 1].kv.mod_revision,
                   "events out of order");
        if (m.ev.events[i].has_prev)
            check_kv(&m.ev.events[i].prev_kv);
    }
    if (m.ev.nevents)
        FUZZ_CHECK(m.ev.revision == m.ev.events[m.ev.nevents - 1].kv.mod_revision,
                   "batch revision is not the last event's");
    ac_etcd_events_free(&m.ev);
}

static void one_classify(const json_t *o)
{
    static const char *const codes[] = {
        "ETCD_COMPACTED", "ETCD_FUTURE_REVISION", "ETCD_LEASE_NOT_FOUND", "ETCD_AUTH_FAILED",
        "ETCD_AUTH_REQUIRED", "ETCD_PERMISSION_DENIED", "ETCD_NO_SPACE", "ETCD_NO_LEADER",
        "ETCD_INVALID", "ETCD_SERVER_ERROR", "ETCD_OUTCOME_UNKNOWN",
    };
    int grpc, transient;
    const char *msg, *code;
    size_t i;
    if (!ac_etcdw_error_of(o, &grpc, &msg))
        return;
    code = ac_etcdw_classify(grpc, msg, &transient);
    for (i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(code, codes[i]) == 0)
            return;
    FUZZ_CHECK(0, "classify gave %s", code);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ac_err err = AC_ERR_INIT;
    const char *body = (const char *)data + 1;
    size_t len = size ? size - 1 : 0;
    json_t *o;
    if (size == 0)
        return 0;
    if (data[0] % 7 == 5) {
        size_t off = 0;
        while (off < len) {
            const char *nl = memchr(body + off, '\n', len - off);
            size_t n = nl ? (size_t)(nl - (body + off)) : len - off;
            if (n > 0)
                one_watch_line(body + off, n);
            off += n + 1;
        }
        return 0;
    }
    o = ac_etcdw_parse(body, len, &err);
    check_err(o ? 0 : -1, &err);
    if (!o)
        return 0;
    switch (data[0] % 7) {
    case 0: one_range(o); break;
    case 1: one_txn(o, 1); break;
    case 2: one_txn(o, 0); break;
    case 3: one_status(o); break;
    case 4: one_members(o); break;
    default: one_classify(o); break;
    }
    json_decref(o);
    return 0;
}
