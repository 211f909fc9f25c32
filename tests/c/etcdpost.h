/*
 * etcdpost.h - a post as the etcd store will make one, for the client's
 * tests and benchmark: allocate the next dense seq of a channel and
 * publish the message in one compare-and-swap transaction, guarded by an
 * idempotency key so that a retry after an unknown outcome never posts
 * twice.
 *
 *     <chan>/seq           the last seq ("17"); absent before the first post
 *     <chan>/msg/00000018  the message
 *     <chan>/idem/<key>    the seq the post with that key got
 *
 * One attempt (t_post_attempt, run by ac_etcd_retry):
 *     compare  seq.mod_revision == M (version == 0 when absent)
 *              idem.version == 0
 *     success  put seq = N+1, msg/N+1 = body, idem = N+1
 *     failure  range idem, range seq   (the answer, or the next N and M)
 * N and M are cached between attempts: a stale cache only loses the
 * compare, and the failure branch brings the fresh values. Everything is
 * static (one translation unit per test).
 */
#ifndef AGENTCHAT_ETCDPOST_H
#define AGENTCHAT_ETCDPOST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/client.h"

struct t_post {
    const char *chan;       /* key prefix of the channel */
    const char *idem;       /* the post's idempotency key */
    const char *body;
    int64_t seq;            /* out: the seq the post got */
    int replayed;           /* out: an earlier attempt had committed it */
    /* cache of the channel's counter, kept across posts */
    int64_t *last_seq;
    int64_t *last_mod;
    unsigned lost;          /* out: compares lost */
};

static int t_post_attempt(struct ac_etcd *e, void *ctx, int64_t deadline, struct ac_err *err)
    __attribute__((unused));
static int t_post_attempt(struct ac_etcd *e, void *ctx, int64_t deadline, struct ac_err *err)
{
    struct t_post *p = ctx;
    char seq_key[256], msg_key[300], idem_key[512], next[24];
    struct ac_etcd_cmp cmp[2];
    struct ac_etcd_op ok[3], no[2];
    struct ac_etcd_txn_req t;
    struct ac_etcd_txn_res r;
    int64_t n = *p->last_seq;

    snprintf(seq_key, sizeof seq_key, "%s/seq", p->chan);
    snprintf(msg_key, sizeof msg_key, "%s/msg/%08lld", p->chan, (long long)(n + 1));
    snprintf(idem_key, sizeof idem_key, "%s/idem/%s", p->chan, p->idem);
    snprintf(next, sizeof next, "%lld", (long long)(n + 1));
    cmp[0] = (struct ac_etcd_cmp){ AC_ETCD_KEY(seq_key), *p->last_mod ? AC_ETCD_MOD : AC_ETCD_VERSION,
                                   AC_ETCD_EQUAL, *p->last_mod, NULL, 0 };
    cmp[1] = (struct ac_etcd_cmp){ AC_ETCD_KEY(idem_key), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 };
    ok[0] = (struct ac_etcd_op){ AC_ETCD_OP_PUT, AC_ETCD_KEY(seq_key), next, strlen(next),
                                 0, 0, 0, 0, 0, 0 };
    ok[1] = (struct ac_etcd_op){ AC_ETCD_OP_PUT, AC_ETCD_KEY(msg_key), p->body, strlen(p->body),
                                 0, 0, 0, 0, 0, 0 };
    ok[2] = (struct ac_etcd_op){ AC_ETCD_OP_PUT, AC_ETCD_KEY(idem_key), next, strlen(next),
                                 0, 0, 0, 0, 0, 0 };
    no[0] = (struct ac_etcd_op){ AC_ETCD_OP_RANGE, AC_ETCD_KEY(idem_key), NULL, 0, 0, 0, 0, 0, 0, 0 };
    no[1] = (struct ac_etcd_op){ AC_ETCD_OP_RANGE, AC_ETCD_KEY(seq_key), NULL, 0, 0, 0, 0, 0, 0, 0 };
    t = (struct ac_etcd_txn_req){ cmp, 2, ok, 3, no, 2 };
    if (ac_etcd_txn(e, &t, &r, deadline, err) == -1)
        return -1;
    if (r.succeeded) {
        p->seq = n + 1;
        *p->last_seq = n + 1;
        *p->last_mod = r.revision;
        ac_etcd_txn_res_free(&r);
        return 1;
    }
    if (r.ops[0].range.nkvs == 1) {
        /* Our key is there: an attempt whose answer we lost committed. */
        p->seq = strtoll(r.ops[0].range.kvs[0].value, NULL, 10);
        p->replayed = 1;
        ac_etcd_txn_res_free(&r);
        return 1;
    }
    p->lost++;
    if (r.ops[1].range.nkvs == 1) {
        *p->last_seq = strtoll(r.ops[1].range.kvs[0].value, NULL, 10);
        *p->last_mod = r.ops[1].range.kvs[0].mod_revision;
    } else {
        *p->last_seq = 0;
        *p->last_mod = 0;
    }
    ac_etcd_txn_res_free(&r);
    return 0;
}

/* Post body under idem to chan (retrying until the deadline). Returns the
 * seq, or -1 with *err. */
static int64_t t_post(struct ac_etcd *e, const char *chan, const char *idem, const char *body,
                      int64_t *last_seq, int64_t *last_mod, int64_t deadline, int *replayed,
                      struct ac_err *err) __attribute__((unused));
static int64_t t_post(struct ac_etcd *e, const char *chan, const char *idem, const char *body,
                      int64_t *last_seq, int64_t *last_mod, int64_t deadline, int *replayed,
                      struct ac_err *err)
{
    struct t_post p = { chan, idem, body, 0, 0, last_seq, last_mod, 0 };
    if (ac_etcd_retry(e, t_post_attempt, &p, deadline, NULL, err) == -1)
        return -1;
    if (replayed)
        *replayed = p.replayed;
    return p.seq;
}

#endif
