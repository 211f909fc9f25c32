/*
 * test_etcd_kv.c - the etcd client's unary operations against a live
 * 3-member cluster (tests/etcd/with-cluster starts it): put, range and its
 * options, delete, compare-and-swap transactions, compaction, leases,
 * status and member list, keep-alive connections.
 */
#include <inttypes.h>

#include "etcdutil.h"
#include "tap.h"

static struct ac_etcd *e;

static int put(const char *key, const char *value, int64_t lease, int64_t *rev)
{
    struct ac_err err = AC_ERR_INIT;
    int rc = ac_etcd_put(e, key, 0, value, strlen(value), lease, rev, 0, &err);
    if (rc == -1)
        printf("# put %s: %s: %s\n", key, err.code, err.msg);
    return rc;
}

/* The value of key ("" when absent), and its kv in *kv when given. */
static const char *get(const char *key, struct ac_etcd_kv *kv)
{
    static char value[256];
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY(key) };
    struct ac_etcd_range_res rs;
    struct ac_err err = AC_ERR_INIT;
    value[0] = '\0';
    if (kv)
        memset(kv, 0, sizeof *kv);
    if (ac_etcd_range(e, &rq, &rs, 0, &err) == -1) {
        printf("# get %s: %s: %s\n", key, err.code, err.msg);
        return "(error)";
    }
    if (rs.nkvs == 1) {
        snprintf(value, sizeof value, "%s", rs.kvs[0].value);
        if (kv) {
            *kv = rs.kvs[0];
            kv->key = kv->value = NULL;
        }
    }
    ac_etcd_range_res_free(&rs);
    return value;
}

static void test_put_range(void)
{
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_kv kv;
    int64_t rev1 = 0, rev2 = 0, rev3 = 0, deleted = -1;
    static const char bin[] = { 'a', '\0', 'b', '\xff', '\n' };
    char key[64];
    int i;

    TAP_OK(put(t_key("a"), "one", 0, &rev1) == 0 && rev1 > 0, "put returns the new revision");
    TAP_STR_EQ(get(t_key("a"), &kv), "one", "range reads the value back");
    TAP_OK(kv.create_revision == rev1 && kv.mod_revision == rev1 && kv.version == 1,
           "a new key: create = mod = the put's revision, version 1");
    TAP_OK(put(t_key("a"), "two", 0, &rev2) == 0 && rev2 > rev1, "a second put, a later revision");
    TAP_STR_EQ(get(t_key("a"), &kv), "two", "the second value wins");
    TAP_OK(kv.create_revision == rev1 && kv.mod_revision == rev2 && kv.version == 2,
           "version 2, create revision kept");

    /* bytes: NUL, 0xff and newline in the value survive base64 */
    TAP_OK(ac_etcd_put(e, t_key("bin"), 0, bin, sizeof bin, 0, NULL, 0, &err) == 0, "binary put");
    rq = (struct ac_etcd_range_req){ .keys = AC_ETCD_KEY(t_key("bin")) };
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == 0 && rs.nkvs == 1 &&
               rs.kvs[0].value_len == sizeof bin && memcmp(rs.kvs[0].value, bin, sizeof bin) == 0,
           "binary value read back byte for byte");
    ac_etcd_range_res_free(&rs);

    /* history: read as of an old revision */
    rq = (struct ac_etcd_range_req){ .keys = AC_ETCD_KEY(t_key("a")), .revision = rev1 };
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == 0 && rs.nkvs == 1 &&
               strcmp(rs.kvs[0].value, "one") == 0,
           "range at an old revision sees the old value");
    ac_etcd_range_res_free(&rs);
    rq.revision = INT64_C(1) << 50;
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == -1, "range at a future revision fails");
    TAP_STR_EQ(err.code, "ETCD_FUTURE_REVISION", "... with ETCD_FUTURE_REVISION");

    /* prefix, limit, keys-only, count-only */
    for (i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "%s%d", t_key("p/"), i);
        put(key, "v", 0, NULL);
    }
    put(t_key("p"), "not in the prefix p/", 0, NULL);
    put(t_key("p0"), "nor this", 0, NULL);
    rq = (struct ac_etcd_range_req){ .keys = AC_ETCD_PREFIX(t_key("p/")) };
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == 0 && rs.nkvs == 5 && rs.count == 5 && !rs.more,
           "prefix range: exactly the 5 keys under it");
    TAP_OK(rs.nkvs == 5 && rs.kvs[0].key[rs.kvs[0].key_len - 1] == '0' &&
               rs.kvs[4].key[rs.kvs[4].key_len - 1] == '4',
           "in key order");
    ac_etcd_range_res_free(&rs);
    rq.limit = 2;
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == 0 && rs.nkvs == 2 && rs.count == 5 && rs.more,
           "limit 2: two kvs, count 5, more");
    ac_etcd_range_res_free(&rs);
    rq.limit = 0;
    rq.keys_only = 1;
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == 0 && rs.nkvs == 5 && rs.kvs[0].value_len == 0,
           "keys only: no values");
    ac_etcd_range_res_free(&rs);
    rq.keys_only = 0;
    rq.count_only = 1;
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == 0 && rs.nkvs == 0 && rs.count == 5,
           "count only: count 5, no kvs");
    ac_etcd_range_res_free(&rs);
    rq.count_only = 0;
    rq.serializable = 1;
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == 0 && rs.count == 5, "serializable range");
    ac_etcd_range_res_free(&rs);
    rq = (struct ac_etcd_range_req){ .keys = { t_key("p/1"), 0, t_key("p/3"), 0, 0 } };
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == 0 && rs.nkvs == 2, "[key, end) range: 2 keys");
    ac_etcd_range_res_free(&rs);

    /* delete */
    TAP_OK(ac_etcd_delete(e, &AC_ETCD_PREFIX(t_key("p/")), &deleted, &rev3, 0, &err) == 0 &&
               deleted == 5 && rev3 > rev2,
           "delete a prefix: 5 deleted");
    TAP_OK(ac_etcd_delete(e, &AC_ETCD_KEY(t_key("p/0")), &deleted, NULL, 0, &err) == 0 &&
               deleted == 0,
           "delete of a missing key: 0 deleted");
    TAP_STR_EQ(get(t_key("p"), NULL), "not in the prefix p/", "keys beside the prefix remain");

    /* requests the server refuses */
    TAP_OK(ac_etcd_put(e, "", 0, "x", 1, 0, NULL, 0, &err) == -1 &&
               strcmp(err.code, "ETCD_INVALID") == 0,
           "an empty key is refused before sending (ETCD_INVALID)");
    TAP_OK(put(t_key("leased"), "x", 12345, NULL) == -1, "a put with an unknown lease fails");
}

/* compare-and-swap: the counter pattern of a seq allocation */
static void test_txn(void)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_txn_res r;
    struct ac_etcd_kv kv;
    const char *k = t_key("cas");
    struct ac_etcd_cmp absent = { AC_ETCD_KEY(k), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 };
    struct ac_etcd_op put1 = { AC_ETCD_OP_PUT, AC_ETCD_KEY(k), "1", 1, 0, 0, 0, 0, 0, 1 };
    struct ac_etcd_op read = { AC_ETCD_OP_RANGE, AC_ETCD_KEY(k), NULL, 0, 0, 0, 0, 0, 0, 0 };
    struct ac_etcd_txn_req t = { &absent, 1, &put1, 1, &read, 1 };
    struct ac_etcd_cmp at_mod;
    struct ac_etcd_op put2[2];
    struct ac_etcd_op del;

    TAP_OK(ac_etcd_txn(e, &t, &r, 0, &err) == 0 && r.succeeded && r.nops == 1 &&
               r.ops[0].kind == AC_ETCD_OP_PUT && r.ops[0].range.nkvs == 0,
           "create-if-absent txn succeeds (no previous pair)");
    ac_etcd_txn_res_free(&r);
    TAP_OK(ac_etcd_txn(e, &t, &r, 0, &err) == 0 && !r.succeeded && r.nops == 1 &&
               r.ops[0].kind == AC_ETCD_OP_RANGE && r.ops[0].range.nkvs == 1 &&
               strcmp(r.ops[0].range.kvs[0].value, "1") == 0,
           "the same txn again: compare fails, failure branch reads the key");
    ac_etcd_txn_res_free(&r);

    get(k, &kv);
    at_mod = (struct ac_etcd_cmp){ AC_ETCD_KEY(k), AC_ETCD_MOD, AC_ETCD_EQUAL, kv.mod_revision,
                                   NULL, 0 };
    put2[0] = (struct ac_etcd_op){ AC_ETCD_OP_PUT, AC_ETCD_KEY(k), "2", 1, 0, 0, 0, 0, 0, 1 };
    put2[1] = (struct ac_etcd_op){ AC_ETCD_OP_PUT, AC_ETCD_KEY(t_key("cas-msg/2")), "body", 4, 0,
                                   0, 0, 0, 0, 0 };
    t = (struct ac_etcd_txn_req){ &at_mod, 1, put2, 2, &read, 1 };
    TAP_OK(ac_etcd_txn(e, &t, &r, 0, &err) == 0 && r.succeeded && r.nops == 2 &&
               r.ops[0].range.nkvs == 1 && strcmp(r.ops[0].range.kvs[0].value, "1") == 0,
           "CAS on mod revision: both puts, prev_kv is the old counter");
    ac_etcd_txn_res_free(&r);
    TAP_OK(ac_etcd_txn(e, &t, &r, 0, &err) == 0 && !r.succeeded,
           "the same CAS with the stale mod revision loses");
    ac_etcd_txn_res_free(&r);
    TAP_STR_EQ(get(k, NULL), "2", "counter is 2");
    TAP_STR_EQ(get(t_key("cas-msg/2"), NULL), "body", "message 2 written in the same txn");

    /* value compare, and delete with prev_kv */
    at_mod = (struct ac_etcd_cmp){ AC_ETCD_KEY(k), AC_ETCD_VALUE, AC_ETCD_EQUAL, 0, "2", 1 };
    del = (struct ac_etcd_op){ AC_ETCD_OP_DELETE, AC_ETCD_KEY(k), NULL, 0, 0, 0, 0, 0, 0, 1 };
    t = (struct ac_etcd_txn_req){ &at_mod, 1, &del, 1, NULL, 0 };
    TAP_OK(ac_etcd_txn(e, &t, &r, 0, &err) == 0 && r.succeeded && r.ops[0].deleted == 1 &&
               r.ops[0].range.nkvs == 1 && strcmp(r.ops[0].range.kvs[0].value, "2") == 0,
           "value compare holds; delete returns the deleted pair");
    ac_etcd_txn_res_free(&r);

    /* a compare over a range: no key under the prefix exists */
    absent.keys = AC_ETCD_PREFIX(t_key("empty-subtree/"));
    put1.keys = AC_ETCD_KEY(t_key("empty-subtree-lock"));
    t = (struct ac_etcd_txn_req){ &absent, 1, &put1, 1, NULL, 0 };
    TAP_OK(ac_etcd_txn(e, &t, &r, 0, &err) == 0 && r.succeeded,
           "compare over an empty prefix range holds");
    ac_etcd_txn_res_free(&r);
    put("t-dummy", "x", 0, NULL);
    put(t_key("empty-subtree/x"), "x", 0, NULL);
    TAP_OK(ac_etcd_txn(e, &t, &r, 0, &err) == 0 && !r.succeeded,
           "... and fails once a key exists under it");
    ac_etcd_txn_res_free(&r);

    /* the server refuses a txn that writes one key twice */
    put2[1].keys = put2[0].keys;
    t = (struct ac_etcd_txn_req){ NULL, 0, put2, 2, NULL, 0 };
    TAP_OK(ac_etcd_txn(e, &t, &r, 0, &err) == -1, "a txn putting one key twice fails");
    TAP_STR_EQ(err.code, "ETCD_INVALID", "... with ETCD_INVALID");
    TAP_OK(strchr(err.msg, '\n') == NULL && strstr(err.msg, "duplicate key") != NULL,
           "... and the server's reason on one line: %s", err.msg);
}

static void test_compaction(void)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY(t_key("c")) };
    struct ac_etcd_range_res rs;
    int64_t r1 = 0, r2 = 0;
    put(t_key("c"), "1", 0, &r1);
    put(t_key("c"), "2", 0, &r2);
    TAP_OK(ac_etcd_compact(e, r2, 0, &err) == 0, "compact up to a revision");
    rq.revision = r1;
    TAP_OK(ac_etcd_range(e, &rq, &rs, 0, &err) == -1, "reading below it fails");
    TAP_STR_EQ(err.code, "ETCD_COMPACTED", "... with ETCD_COMPACTED");
}

static void test_leases(void)
{
    struct ac_err err = AC_ERR_INIT;
    int64_t id = 0, granted = 0, ttl = 0, id2 = 0;
    int64_t start;
    int gone = 0;

    TAP_OK(ac_etcd_lease_grant(e, 2, &id, &granted, 0, &err) == 0 && id != 0 && granted == 2,
           "grant a 2 s lease");
    TAP_OK(put(t_key("leased"), "alive", id, NULL) == 0, "put a key on it");
    TAP_OK(ac_etcd_lease_ttl(e, id, &ttl, &granted, 0, &err) == 0 && ttl > 0 && ttl <= 2 &&
               granted == 2,
           "time to live: 0 < ttl <= 2");
    TAP_OK(ac_etcd_lease_keepalive(e, id, &ttl, 0, &err) == 0 && ttl == 2,
           "keepalive renews to the full TTL");
    /* Let it expire: poll until the key is gone (no timing assertion: the
     * loop only bounds a hang). */
    start = ac_clock_mono_ns();
    while (t_ms_since(start) < 60000) {
        if (strcmp(get(t_key("leased"), NULL), "") == 0) {
            gone = 1;
            break;
        }
        ac_clock_sleep_ns(100000000);
    }
    printf("# lease expired after %ld ms\n", t_ms_since(start));
    TAP_OK(gone, "the key goes with the expired lease");
    TAP_OK(ac_etcd_lease_keepalive(e, id, &ttl, 0, &err) == -1 &&
               strcmp(err.code, "ETCD_LEASE_NOT_FOUND") == 0,
           "keepalive of the expired lease: ETCD_LEASE_NOT_FOUND");
    TAP_OK(ac_etcd_lease_ttl(e, id, &ttl, NULL, 0, &err) == -1 &&
               strcmp(err.code, "ETCD_LEASE_NOT_FOUND") == 0,
           "time to live of it: ETCD_LEASE_NOT_FOUND");

    TAP_OK(ac_etcd_lease_grant(e, 60, &id2, NULL, 0, &err) == 0, "grant a 60 s lease");
    put(t_key("leased2"), "x", id2, NULL);
    TAP_OK(ac_etcd_lease_revoke(e, id2, 0, &err) == 0, "revoke it");
    TAP_STR_EQ(get(t_key("leased2"), NULL), "", "its key is gone at once");
    TAP_OK(ac_etcd_lease_revoke(e, id2, 0, &err) == -1 &&
               strcmp(err.code, "ETCD_LEASE_NOT_FOUND") == 0,
           "revoking it again: ETCD_LEASE_NOT_FOUND");
    TAP_OK(ac_etcd_lease_grant(e, 0, &id2, NULL, 0, &err) == -1 &&
               strcmp(err.code, "ETCD_INVALID") == 0,
           "a TTL of 0 is refused before sending");
}

static void test_maintenance(void)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_status st;
    struct ac_etcd_member *m = NULL;
    size_t n = 0, i, found = 0;
    uint64_t leader = 0;
    int same_leader = 1;

    for (i = 0; i < ac_etcd_endpoint_count(e); i++) {
        int ok = ac_etcd_status(e, i, &st, 0, &err) == 0;
        TAP_OK(ok && st.member_id != 0 && st.leader != 0 && st.revision > 0 && st.version[0],
               "status of endpoint %zu: member id, leader, revision, version %s", i + 1,
               ok ? st.version : "?");
        if (i == 0)
            leader = st.leader;
        else if (st.leader != leader)
            same_leader = 0;
    }
    TAP_OK(same_leader, "every member names the same leader");
    TAP_OK(ac_etcd_members(e, &m, &n, 0, &err) == 0 && n == ac_etcd_endpoint_count(e),
           "member list: one per endpoint");
    for (i = 0; i < n; i++) {
        size_t j;
        for (j = 0; j < ac_etcd_endpoint_count(e); j++)
            if (m[i].nclient_urls == 1 && strcmp(m[i].client_urls[0], ac_etcd_endpoint(e, j)) == 0)
                found++;
    }
    TAP_INT_EQ(found, n, "each member's client URL is one of the endpoints");
    ac_etcd_members_free(m, n);
}

/* One connection per member, kept alive across requests. */
static void test_keepalive(void)
{
    unsigned long before = ac_etcd_connections(e);
    int i, ok = 1;
    for (i = 0; i < 200; i++)
        if (put(t_key("ka"), "x", 0, NULL) == -1)
            ok = 0;
    TAP_OK(ok, "200 puts");
    TAP_OK(ac_etcd_connections(e) - before <= 1,
           "... over at most one new connection (%lu)", ac_etcd_connections(e) - before);
}

int main(int argc, char **argv)
{
    const char *eps = t_etcd_cluster(argc, argv, 0);
    e = t_etcd_open(eps, NULL);
    test_put_range();
    test_txn();
    test_compaction();
    test_leases();
    test_maintenance();
    test_keepalive();
    ac_etcd_close(e);
    return tap_done();
}
