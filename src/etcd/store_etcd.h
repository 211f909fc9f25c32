/*
 * store_etcd.h - internals of the etcd backend of the store interface,
 * shared by its files (store_etcd.c: the store, channels, messages,
 * cursors, notification, mutexes; records_etcd.c: the record families,
 * batches and the check). Private to src/etcd/.
 *
 * Everything of a store lives under one key prefix P (the PREFIX of
 * etcd://HOST:PORT,.../PREFIX), so several teams share a cluster:
 *
 *   P/ch/<chan>                    the channel record (_meta.json bytes):
 *                                  the channel exists when this key does
 *   P/ch/<chan>\x01seq             the highest seq ever given ("17"), right
 *                                  after the channel record: one range
 *                                  reads both when a channel opens
 *   P/c/<chan>/m/<seq:020>/<name>  a message, its bytes as the folder's
 *                                  file holds them (<name> is the file
 *                                  name, "0017-alice-hello.md")
 *   P/c/<chan>/i/<seq:020>         the idempotency token of the post that
 *                                  got that seq (the last IDEM_WINDOW)
 *   P/c/<chan>/cur/<agent>         a cursor: "<seq> <mtime µs>"
 *   P/c/<chan>/r/<family>/<name>   a record (tasks, claims, locks, acks),
 *                                  its bytes as the folder's file holds them
 *   P/c/<chan>/b/<name>            a derived blob (state.md)
 *   P/c/<chan>/k/<marker>          a legacy task marker (task-<id>.md)
 *   P/c/<chan>/x/<mutex>           a held mutex, on the holder's session
 *                                  lease; its create revision is the
 *                                  holder's fencing generation
 *
 * No key is ever written outside P, and no file, directory or other
 * system state is touched: the client talks to the cluster, nothing else.
 */
#ifndef AGENTCHAT_ETCD_STORE_ETCD_H
#define AGENTCHAT_ETCD_STORE_ETCD_H

#include "agentchat/store.h"
#include "etcd/client.h"

/* The connection of a store, shared with the mutexes made from it (a
 * script may release a lock after closing its store): freed with the last
 * reference. */
struct et_conn {
    struct ac_etcd *e;
    int refs;
    int nheld;                  /* mutexes held on the session lease */
    int64_t lease;              /* the session lease of the mutexes (0: none yet) */
    int64_t lease_ttl;          /* seconds */
    int64_t lease_renewed;      /* mono ns of its grant or last keepalive */
};

struct et_store {
    struct ac_store base;
    struct et_conn *conn;
    char *prefix;               /* "P/" */
};

struct et_mutex;

struct et_chan {
    struct ac_chan base;
    struct et_store *st;
    char *kp;                   /* "P/c/<chan>/" */
    char *meta_key;             /* "P/ch/<chan>" */
    char *seq_key;              /* "P/ch/<chan>\x01seq" (no channel name holds
                                   a control character) */
    int64_t seq;                /* the counter as last read or written */
    int64_t seq_mod;            /* its mod revision (0: absent) */
    int64_t rev;                /* the store revision of the last listing */
    int64_t snapshot;           /* fsck: records are read as of this
                                   revision (0: the newest) */
    struct ac_etcd_kv *cache;   /* messages read ahead (msg_read), by key */
    size_t ncache;
    struct et_mutex *held;      /* mutexes held through this channel */
    char *meta;                 /* the channel record as chan_open read it */
    size_t meta_len;
    /* The cursor its lock's transaction read (a read holds the agent's
     * cursor lock from its cursor_get to its cursor_advance, so nobody
     * else moves it meanwhile): saves a round trip each. */
    char *cur_agent;            /* NULL: none cached */
    int64_t cur_value, cur_mod, cur_mtime;
};

static inline struct et_chan *et_chan(struct ac_chan *ch)
{
    return (struct et_chan *)ch;
}

/* A key: the channel's prefix, then the parts (NULL-terminated list).
 * malloc'ed, or NULL (ENOMEM). */
char *et_key(const struct et_chan *ch, ...);

/* The end of the range of every key that starts with `prefix` (etcd's
 * prefix end: the last byte incremented). malloc'ed, or NULL. */
char *et_prefix_end(const char *prefix);

/* A DELETE operation of a transaction over `keys`. */
struct ac_etcd_op et_op_delete(struct ac_etcd_keys keys);

/* CHANNEL_NOT_FOUND for channel `name` of the store (always -1). */
int et_not_found(struct ac_store *base, const char *name, struct ac_err *err);

/* Retention, the op msg_trim (trim_etcd.c). */
int et_msg_trim(struct ac_chan *ch, uint64_t through, size_t *acks, struct ac_err *err);

/* An error of the client, passed through; ETCD_NOMEM for a NULL key. */
int et_nomem(struct ac_err *err);

/* Renew the session lease when a third of its TTL has passed (best
 * effort: a lost lease shows as a fenced batch). */
void et_lease_tend(struct et_conn *c);

/* The fencing compares of the mutexes held through ch (their keys still
 * exist with the create revision of our grant): appended to cmp (room for
 * et_fence_count(ch)). Returns how many. */
size_t et_fence_count(const struct et_chan *ch);
size_t et_fence_add(const struct et_chan *ch, struct ac_etcd_cmp *cmp);
/* 1 when a fencing compare of ch failed in a transaction whose failure
 * branch ranged the held mutex keys (et_fence_ranges) at ops[first..]. */
int et_fence_lost(const struct et_chan *ch, const struct ac_etcd_txn_res *r, size_t first);
size_t et_fence_ranges(const struct et_chan *ch, struct ac_etcd_op *ops);

/* The folder's message file name of a post (as store_fs.c names it). */
void et_msg_name(uint64_t seq, const char *from, const char *title, char *out, size_t size);

/* Records (records_etcd.c). */
int et_rec_scan(struct ac_chan *ch, int family, const char *prefix, int flags,
                struct ac_recset *out, struct ac_err *err);
int et_rec_read(struct ac_chan *ch, int family, const char *name, struct ac_record *out,
                struct ac_err *err);
int et_rec_create(struct ac_chan *ch, int family, const char *name, const char *data, size_t len,
                  struct ac_err *err);
void et_rec_where(struct ac_chan *ch, int family, const char *name, char *out, size_t size);
int et_batch_commit(struct ac_chan *ch, const struct ac_batch *b, struct ac_err *err);
/* The check (fsck_etcd.c). */
int et_fsck(struct ac_chan *ch, int flags, struct ac_fsck_report *r, struct ac_err *err);

/* The family's directory name on the folder ("tasks", "claims", "locks",
 * ".acks"), which is also its key part. */
const char *et_family_dir(int family);

/* A post: compose the message of req with the next seq and publish it in
 * one transaction with `extra` (n) more operations and `ncmp` compares (a
 * batch's records), retried with one idempotency token until the
 * deadline. On a lost compare of the extra compares (not the counter's),
 * returns 1 with nothing written and *fenced set; 0 posted (out filled);
 * -1 err. */
struct et_post_extra {
    const struct ac_etcd_cmp *cmp;
    size_t ncmp;
    const struct ac_etcd_op *ops;
    size_t nops;
    const struct ac_etcd_op *fail_ops;   /* ranges that tell why a compare failed */
    size_t nfail;
    /* Called with the failure branch's results at fail_ops' offset when a
     * compare failed: 1 the extra compares hold (only the counter moved:
     * try again), 0 they do not (stop: refused). */
    int (*still_holds)(void *ctx, const struct ac_etcd_op_res *res);
    void *ctx;
};
int et_post(struct et_chan *ch, const struct ac_post_req *req, const struct et_post_extra *x,
            struct ac_post_result *out, struct ac_err *err);

#endif
