/* trim_etcd.c - retention on the etcd backend: the store op msg_trim
 * (store.h; ac_chan_msg_trim checked the arguments).
 *
 *   1. while the channel record exists, the messages
 *      P/c/<chan>/m/<seq:020>/... with seq <= through and their idempotency
 *      tokens P/c/<chan>/i/<seq:020>, MSG_CHUNK messages a transaction
 *      (two range deletes each, the oldest first; the counter
 *      P/ch/<chan>\x01seq is not touched, so no seq is reused);
 *   2. the acks P/c/<chan>/r/.acks/<seq>/... of those seqs, listed a page
 *      at a time (their seq is decimal, not padded: no single range holds
 *      exactly them) and deleted by prefix, ACK_TXN_OPS seqs a transaction.
 * Every step is a delete, which repeats without harm: a step whose outcome
 * is unknown is sent again (ac_etcd_transient), and a trim that stopped
 * after step 1 is finished by running it again. The deleted revisions stay
 * in etcd's history until the cluster compacts it (docs/etcd.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/store_etcd.h"

#define KEY(k) ((struct ac_etcd_keys){ (k), 0, NULL, 0, 0 })
#define RANGE(k, e) ((struct ac_etcd_keys){ (k), 0, (e), 0, 0 })

/* etcd refuses a transaction of more than --max-txn-ops (128 by default). */
#define ACK_TXN_OPS 100
/* Keys listed a request. */
#define ACK_PAGE 1000
/* Messages removed a transaction. */
#define MSG_CHUNK 1000

/* A transaction of deletes: sent again once when its outcome is unknown
 * (a delete repeats without harm). */
static int delete_txn(struct ac_etcd *e, const struct ac_etcd_txn_req *t, struct ac_etcd_txn_res *r,
                      struct ac_err *err)
{
    int rc = ac_etcd_txn(e, t, r, 0, err);
    if (rc == -1 && ac_etcd_transient(err)) {
        *err = (struct ac_err)AC_ERR_INIT;
        rc = ac_etcd_txn(e, t, r, 0, err);
    }
    return rc;
}

/* Step 1: the messages and tokens of seqs 1..through, MSG_CHUNK
 * messages a transaction, the oldest first (a long channel's trim does not
 * hold the cluster in one huge write). */
static int trim_messages(struct et_chan *ch, uint64_t through, struct ac_err *err)
{
    char *m = et_key(ch, "m/", (char *)NULL), *i = et_key(ch, "i/", (char *)NULL);
    char *end = NULL;
    int rc = -1, more = 1;

    if (m && i) {
        char end20[24];
        snprintf(end20, sizeof end20, "%020" PRIu64, through + 1);
        end = et_key(ch, "m/", end20, (char *)NULL);
    }
    if (!end) {
        et_nomem(err);
        more = 0;
    }
    while (more) {
        struct ac_etcd_range_req rq;
        struct ac_etcd_range_res rs;
        uint64_t upto = through;
        char up20[24], *mend, *iend;
        memset(&rq, 0, sizeof rq);
        rq.keys = RANGE(m, end);
        rq.keys_only = 1;
        rq.limit = MSG_CHUNK;
        if (ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, err) == -1)
            break;
        more = rs.more && rs.nkvs > 0;
        if (more)       /* this chunk ends at the seq of its last message */
            upto = strtoull(rs.kvs[rs.nkvs - 1].key + strlen(m), NULL, 10);
        ac_etcd_range_res_free(&rs);
        snprintf(up20, sizeof up20, "%020" PRIu64, upto + 1);
        mend = et_key(ch, "m/", up20, (char *)NULL);
        iend = et_key(ch, "i/", up20, (char *)NULL);
        if (!mend || !iend) {
            et_nomem(err);
        } else {
            struct ac_etcd_cmp cmp = { KEY(ch->meta_key), AC_ETCD_VERSION, AC_ETCD_GREATER, 0, NULL, 0 };
            struct ac_etcd_op ops[2] = { et_op_delete(RANGE(m, mend)), et_op_delete(RANGE(i, iend)) };
            struct ac_etcd_txn_req t = { &cmp, 1, ops, 2, NULL, 0 };
            struct ac_etcd_txn_res r;
            if (delete_txn(ch->st->conn->e, &t, &r, err) == 0) {
                rc = r.succeeded ? 0 : et_not_found(ch->base.store, ch->base.name, err);
                ac_etcd_txn_res_free(&r);
            }
        }
        free(mend);
        free(iend);
        if (rc == -1)
            break;
        if (more)
            rc = -1;    /* the next chunk decides */
    }
    free(m);
    free(i);
    free(end);
    return rc;
}

/* Delete the ack prefixes P/c/<chan>/r/.acks/<seq>/ of seqs[0..n). */
static int delete_acks(struct et_chan *ch, const char *acks, const uint64_t *seqs, size_t n,
                       struct ac_err *err)
{
    struct ac_etcd_op ops[ACK_TXN_OPS];
    char *keys[ACK_TXN_OPS];
    size_t k;
    int rc = 0;

    for (k = 0; k < n; k++) {
        size_t len = strlen(acks) + 24;
        keys[k] = malloc(len);
        if (!keys[k]) {
            n = k;
            rc = et_nomem(err);
            break;
        }
        snprintf(keys[k], len, "%s%" PRIu64 "/", acks, seqs[k]);
        ops[k] = et_op_delete((struct ac_etcd_keys){ keys[k], 0, NULL, 0, 1 });
    }
    if (rc == 0 && n > 0) {
        struct ac_etcd_txn_req t = { NULL, 0, ops, n, NULL, 0 };
        struct ac_etcd_txn_res r;
        rc = delete_txn(ch->st->conn->e, &t, &r, err);
        if (rc == 0)
            ac_etcd_txn_res_free(&r);
    }
    for (k = 0; k < n; k++)
        free(keys[k]);
    return rc;
}

/* Step 2: list the ack keys a page at a time; the seqs <= through go by
 * prefix, ACK_TXN_OPS at a time. A seq whose acks span two pages is
 * deleted twice: harmless. */
static int trim_acks(struct et_chan *ch, uint64_t through, size_t *removed, struct ac_err *err)
{
    char *acks = et_key(ch, "r/", et_family_dir(AC_ACKS), "/", (char *)NULL);
    char *end = acks ? et_prefix_end(acks) : NULL;
    char *from = acks ? strdup(acks) : NULL;
    uint64_t seqs[ACK_TXN_OPS];
    size_t nseqs = 0, from_len = acks ? strlen(acks) : 0;
    int rc = 0, more = 1;

    if (!acks || !end || !from) {
        free(acks);
        free(end);
        free(from);
        return et_nomem(err);
    }
    while (rc == 0 && more) {
        struct ac_etcd_range_req rq;
        struct ac_etcd_range_res rs;
        size_t i, skip = strlen(acks);
        memset(&rq, 0, sizeof rq);
        rq.keys = (struct ac_etcd_keys){ from, from_len, end, 0, 0 };
        rq.keys_only = 1;
        rq.limit = ACK_PAGE;
        if (ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, err) == -1) {
            rc = -1;
            break;
        }
        more = rs.more && rs.nkvs > 0;
        for (i = 0; rc == 0 && i < rs.nkvs; i++) {
            const char *name = rs.kvs[i].key + skip;
            char *after;
            uint64_t seq;
            if (rs.kvs[i].key_len <= skip || name[0] < '1' || name[0] > '9')
                continue;
            errno = 0;
            seq = strtoull(name, &after, 10);
            if (errno || *after != '/' || seq > through)
                continue;
            (*removed)++;
            if (nseqs > 0 && seqs[nseqs - 1] == seq)
                continue;
            if (nseqs == ACK_TXN_OPS) {
                rc = delete_acks(ch, acks, seqs, nseqs, err);
                nseqs = 0;
            }
            seqs[nseqs++] = seq;
        }
        if (more) {
            /* The next page starts at the last key + "\0", the smallest
             * key above it. */
            const struct ac_etcd_kv *last = &rs.kvs[rs.nkvs - 1];
            char *next = malloc(last->key_len + 2);
            if (!next) {
                rc = et_nomem(err);
            } else {
                memcpy(next, last->key, last->key_len);
                next[last->key_len] = '\0';
                next[last->key_len + 1] = '\0';
                free(from);
                from = next;
                from_len = last->key_len + 1;
            }
        }
        ac_etcd_range_res_free(&rs);
    }
    if (rc == 0)
        rc = delete_acks(ch, acks, seqs, nseqs, err);
    free(acks);
    free(end);
    free(from);
    return rc;
}

int et_msg_trim(struct ac_chan *base, uint64_t through, size_t *acks, struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    *acks = 0;
    if (trim_messages(ch, through, err) == -1)
        return -1;
    return trim_acks(ch, through, acks, err);
}
