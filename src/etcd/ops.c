/* ops.c - the unary operations of the etcd client (KV, txn, leases,
 * maintenance) and the compare-and-swap retry loop; see src/etcd/client.h.
 * Each builds its request with wire.c, sends it with ac_etcd_call and
 * checks the reply with wire.c. */
#include "etcd/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/clock.h"
#include "etcd/wire.h"

/* Run `path` with req (consumed) and hand the reply to the caller. */
static int call_consume(struct ac_etcd *e, const char *path, json_t *req, unsigned flags,
                        int64_t deadline, json_t **reply, struct ac_err *err)
{
    int rc;
    if (!req)
        return -1;      /* the encoder filled err */
    rc = ac_etcd_call(e, path, req, flags, ac_etcd_resolve_deadline(e, deadline), reply, err);
    json_decref(req);
    return rc;
}

/* A decoder failed on a reply: name the endpoint that sent it. */
static int decode_failed(struct ac_etcd *e, struct ac_err *err)
{
    char msg[AC_ERR_MSG_MAX];
    if (!err)
        return -1;
    snprintf(msg, sizeof msg, "%s", err->msg);
    snprintf(err->msg, sizeof err->msg, "etcd %.200s: %.700s", e->endpoints[e->cur], msg);
    ac_etcd_scrub(e, err);
    return -1;
}

static json_t *new_object(struct ac_err *err)
{
    json_t *o = json_object();
    if (!o)
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NOMEM", "out of memory");
    return o;
}

int ac_etcd_range(struct ac_etcd *e, const struct ac_etcd_range_req *req,
                  struct ac_etcd_range_res *res, int64_t deadline, struct ac_err *err)
{
    json_t *reply;
    int rc;
    memset(res, 0, sizeof *res);
    if (call_consume(e, "/v3/kv/range", ac_etcdw_range_req(req, err), AC_ETCD_F_READ, deadline,
                     &reply, err) == -1)
        return -1;
    rc = ac_etcdw_range(reply, res, err);
    json_decref(reply);
    return rc == -1 ? decode_failed(e, err) : 0;
}

int ac_etcd_put(struct ac_etcd *e, const char *key, size_t key_len, const char *value,
                size_t value_len, int64_t lease, int64_t *revision, int64_t deadline,
                struct ac_err *err)
{
    /* A put is a one-operation txn on the wire: the same reply checks and
     * the same failover rules as every other write. */
    struct ac_etcd_op op = { AC_ETCD_OP_PUT, { key, key_len, NULL, 0, 0 }, value, value_len,
                             lease, 0, 0, 0, 0, 0 };
    struct ac_etcd_txn_req t = { NULL, 0, &op, 1, NULL, 0 };
    struct ac_etcd_txn_res r;
    if (ac_etcd_txn(e, &t, &r, deadline, err) == -1)
        return -1;
    if (revision)
        *revision = r.revision;
    ac_etcd_txn_res_free(&r);
    return 0;
}

int ac_etcd_delete(struct ac_etcd *e, const struct ac_etcd_keys *keys, int64_t *deleted,
                   int64_t *revision, int64_t deadline, struct ac_err *err)
{
    struct ac_etcd_op op = { AC_ETCD_OP_DELETE, *keys, NULL, 0, 0, 0, 0, 0, 0, 0 };
    struct ac_etcd_txn_req t = { NULL, 0, &op, 1, NULL, 0 };
    struct ac_etcd_txn_res r;
    if (ac_etcd_txn(e, &t, &r, deadline, err) == -1)
        return -1;
    if (deleted)
        *deleted = r.ops[0].deleted;
    if (revision)
        *revision = r.revision;
    ac_etcd_txn_res_free(&r);
    return 0;
}

/* A transaction whose branches only read: a read for the failover rules
 * (retried when its outcome is unknown; nothing to have been applied). */
static int txn_reads_only(const struct ac_etcd_txn_req *req)
{
    size_t i;
    for (i = 0; i < req->nsuccess; i++)
        if (req->success[i].kind != AC_ETCD_OP_RANGE)
            return 0;
    for (i = 0; i < req->nfailure; i++)
        if (req->failure[i].kind != AC_ETCD_OP_RANGE)
            return 0;
    return 1;
}

int ac_etcd_txn(struct ac_etcd *e, const struct ac_etcd_txn_req *req, struct ac_etcd_txn_res *res,
                int64_t deadline, struct ac_err *err)
{
    json_t *reply;
    int rc;
    memset(res, 0, sizeof *res);
    if (call_consume(e, "/v3/kv/txn", ac_etcdw_txn_req(req, err),
                     txn_reads_only(req) ? AC_ETCD_F_READ : 0, deadline, &reply, err) == -1)
        return -1;
    rc = ac_etcdw_txn(reply, req, res, err);
    json_decref(reply);
    return rc == -1 ? decode_failed(e, err) : 0;
}

/* ---- leases ---- */

/* {"ID": id} */
static json_t *id_req(int64_t id, struct ac_err *err)
{
    json_t *o = new_object(err);
    if (o && ac_etcdw_set_int64(o, "ID", id, err) == -1) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int ac_etcd_lease_grant(struct ac_etcd *e, int64_t ttl, int64_t *id, int64_t *granted,
                        int64_t deadline, struct ac_err *err)
{
    json_t *req, *reply;
    int64_t got_id, got_ttl;
    int rc;
    if (ttl <= 0)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID", "etcd lease TTL must be positive");
    req = new_object(err);
    if (req && ac_etcdw_set_int64(req, "TTL", ttl, err) == -1) {
        json_decref(req);
        req = NULL;
    }
    if (call_consume(e, "/v3/lease/grant", req, 0, deadline, &reply, err) == -1)
        return -1;
    rc = ac_etcdw_int64(reply, "ID", &got_id, err) == -1 ||
                 ac_etcdw_int64(reply, "TTL", &got_ttl, err) == -1
             ? -1
             : 0;
    json_decref(reply);
    if (rc == 0 && (got_id == 0 || got_ttl <= 0))
        rc = ac_etcdw_bad(err, "ETCD_BAD_REPLY", "lease grant without an id or a TTL");
    if (rc == -1)
        return decode_failed(e, err);
    *id = got_id;
    if (granted)
        *granted = got_ttl;
    return 0;
}

static int lease_gone(struct ac_etcd *e, int64_t id, struct ac_err *err)
{
    ac_err_set(err, AC_EXIT_GENERAL, "ETCD_LEASE_NOT_FOUND", "etcd lease %lld expired or revoked",
               (long long)id);
    ac_etcd_scrub(e, err);
    return -1;
}

/* POST {"ID": id} to a lease query (keepalive, timetolive): both answer
 * with TTL, and both are idempotent, so retried like reads. A TTL <= 0 is
 * a lease that is gone: keepalive of an expired lease answers 200 without
 * a TTL, timetolive answers -1 for an unknown one and 0 in the second it
 * expires. */
static int lease_query(struct ac_etcd *e, const char *path, int64_t id, int64_t *ttl,
                       int64_t *granted, int64_t deadline, struct ac_err *err)
{
    json_t *reply;
    int64_t left, g;
    if (call_consume(e, path, id_req(id, err), AC_ETCD_F_READ, deadline, &reply, err) == -1)
        return -1;
    if (ac_etcdw_int64(reply, "TTL", &left, err) == -1 ||
        ac_etcdw_int64(reply, "grantedTTL", &g, err) == -1) {
        json_decref(reply);
        return decode_failed(e, err);
    }
    json_decref(reply);
    if (left <= 0)
        return lease_gone(e, id, err);
    if (ttl)
        *ttl = left;
    if (granted)
        *granted = g;
    return 0;
}

int ac_etcd_lease_keepalive(struct ac_etcd *e, int64_t id, int64_t *ttl, int64_t deadline,
                            struct ac_err *err)
{
    return lease_query(e, "/v3/lease/keepalive", id, ttl, NULL, deadline, err);
}

int ac_etcd_lease_revoke(struct ac_etcd *e, int64_t id, int64_t deadline, struct ac_err *err)
{
    json_t *reply;
    if (call_consume(e, "/v3/lease/revoke", id_req(id, err), 0, deadline, &reply, err) == -1)
        return -1;
    json_decref(reply);
    return 0;
}

int ac_etcd_lease_ttl(struct ac_etcd *e, int64_t id, int64_t *ttl, int64_t *granted,
                      int64_t deadline, struct ac_err *err)
{
    return lease_query(e, "/v3/lease/timetolive", id, ttl, granted, deadline, err);
}

/* ---- maintenance ---- */

int ac_etcd_status(struct ac_etcd *e, size_t i, struct ac_etcd_status *st, int64_t deadline,
                   struct ac_err *err)
{
    json_t *req = new_object(err), *reply;
    int rc;
    memset(st, 0, sizeof *st);
    if (!req)
        return -1;
    rc = ac_etcd_call_at(e, i, "/v3/maintenance/status", req, ac_etcd_resolve_deadline(e, deadline),
                         &reply, err);
    json_decref(req);
    if (rc == -1)
        return -1;
    rc = ac_etcdw_status(reply, st, err);
    json_decref(reply);
    return rc == -1 ? decode_failed(e, err) : 0;
}

int ac_etcd_members(struct ac_etcd *e, struct ac_etcd_member **members, size_t *n,
                    int64_t deadline, struct ac_err *err)
{
    json_t *reply;
    int rc;
    *members = NULL;
    *n = 0;
    if (call_consume(e, "/v3/cluster/member/list", new_object(err), AC_ETCD_F_READ, deadline,
                     &reply, err) == -1)
        return -1;
    rc = ac_etcdw_members(reply, members, n, err);
    json_decref(reply);
    return rc == -1 ? decode_failed(e, err) : 0;
}

int ac_etcd_compact(struct ac_etcd *e, int64_t revision, int64_t deadline, struct ac_err *err)
{
    json_t *req = new_object(err), *reply;
    if (req && ac_etcdw_set_int64(req, "revision", revision, err) == -1) {
        json_decref(req);
        req = NULL;
    }
    /* Compacting twice to one revision is an error the second time
     * ("required revision has been compacted"), so it is not retried. */
    if (call_consume(e, "/v3/kv/compaction", req, 0, deadline, &reply, err) == -1)
        return -1;
    json_decref(reply);
    return 0;
}

/* ---- compare-and-swap retries ---- */

int ac_etcd_transient(const struct ac_err *err)
{
    static const char *const codes[] = { "ETCD_OUTCOME_UNKNOWN", "ETCD_UNAVAILABLE",
                                         "ETCD_NO_LEADER", "ETCD_TIMEOUT" };
    size_t i;
    if (!err || !err->code)
        return 0;
    for (i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(err->code, codes[i]) == 0)
            return 1;
    return 0;
}

#define BACKOFF_BASE_NS 1000000LL       /* 1 ms */
#define BACKOFF_CAP_NS 64000000LL       /* 64 ms */

int ac_etcd_retry(struct ac_etcd *e, ac_etcd_attempt_fn fn, void *ctx, int64_t deadline,
                  unsigned *attempts, struct ac_err *err)
{
    int64_t start = ac_clock_mono_ns();
    unsigned k = 0;
    deadline = ac_etcd_resolve_deadline(e, deadline);
    if (attempts)
        *attempts = 0;
    for (;;) {
        int r, lost;
        int64_t cap, pause;
        struct ac_err last = AC_ERR_INIT;
        k++;
        if (attempts)
            *attempts = k;
        r = fn(e, ctx, deadline, &last);
        if (r == 1)
            return 0;
        lost = r == 0;
        if (!lost && !ac_etcd_transient(&last)) {
            if (err)
                *err = last;
            return -1;
        }
        if (ac_clock_interrupted())
            return ac_etcd_interrupted(err);
        /* Full jitter (AWS architecture blog, "Exponential Backoff and
         * Jitter"): contending writers spread out instead of colliding
         * again in step, and a lucky one is not held back. */
        cap = k < 7 ? BACKOFF_BASE_NS << k : BACKOFF_CAP_NS;
        if (cap > BACKOFF_CAP_NS)
            cap = BACKOFF_CAP_NS;
        pause = (int64_t)ac_etcd_random(e, (uint64_t)cap + 1);
        if (ac_clock_mono_ns() + pause >= deadline) {
            long ms = (long)((ac_clock_mono_ns() - start) / 1000000);
            if (lost)
                ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONTENDED",
                           "etcd: lost %u compare-and-swap races in %ld ms", k, ms);
            else
                ac_err_set(err, AC_EXIT_GENERAL, last.code, "gave up after %ld ms: %s", ms,
                           last.msg);
            ac_etcd_scrub(e, err);
            return -1;
        }
        if (ac_etcd_sleep(pause, err) == -1)
            return -1;
    }
}
