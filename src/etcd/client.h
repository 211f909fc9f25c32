/*
 * client.h - a C client for etcd v3 through its JSON gateway (/v3/...).
 *
 * The etcd backend (src/etcd/) talks to the cluster only through this
 * client; nothing above the store interface includes it. It speaks HTTP/1.1
 * with libcurl and JSON with jansson: etcd ships no C client, and the
 * gateway (built into every etcd member since 3.3) serves the same API as
 * gRPC with keys and values in base64 and 64-bit integers as decimal
 * strings. It makes no file-system or other system-state assumption of its
 * own: the only files it names are the TLS files of the configuration,
 * which libcurl reads. libcurl itself is loaded (dlopen) by the first
 * ac_etcd_open, not linked (src/etcd/curlapi.h says why); without it
 * ac_etcd_open fails with ETCD_CONFIG.
 *
 * Calling sequence:
 *
 *     struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
 *     struct ac_err err = AC_ERR_INIT;
 *     cfg.endpoints = "127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793";
 *     struct ac_etcd *e = ac_etcd_open(&cfg, &err);
 *     if (!e) report(&err);
 *
 *     struct ac_etcd_range_req rq = { .keys = AC_ETCD_PREFIX("chan/c/") };
 *     struct ac_etcd_range_res rs;
 *     if (ac_etcd_range(e, &rq, &rs, 0, &err) == -1) report(&err);
 *     ... rs.kvs[0 .. rs.nkvs) ...
 *     ac_etcd_range_res_free(&rs);
 *
 *     ac_etcd_close(e);
 *
 * Every call that talks to the cluster takes `deadline`: an absolute
 * CLOCK_MONOTONIC time in nanoseconds (ac_clock_mono_ns() + budget), or 0
 * for "now + cfg.op_timeout_ms". Compute it once per user-level operation
 * and pass it down; no call blocks past it (plus one connect timeout at
 * most, never a hang).
 *
 * Endpoints and failover. The configuration lists the members' client URLs
 * ("host:port" or "http[s]://host:port", comma-separated, at most
 * AC_ETCD_MAX_ENDPOINTS). The client talks to one "current" endpoint over a
 * kept-alive connection and moves to the next one, in list order and
 * round-robin, when a request fails:
 *   - connection refused / host unreachable / connect timeout: nothing was
 *     sent, so the request is retried at once on the next endpoint; when
 *     every endpoint refused, it waits a short jittered backoff and tries
 *     the round again, until the deadline;
 *   - timeout after sending, a connection that breaks before the reply, or
 *     an HTTP 5xx: the outcome is unknown (the member may have proposed the
 *     request before it died). Reads (range, status, member list, lease
 *     time-to-live) are retried on the next endpoint; writes fail with
 *     ETCD_OUTCOME_UNKNOWN and the next call starts on the next endpoint.
 *     The caller re-reads and retries the write with the same idempotency
 *     key (ac_etcd_retry does that loop).
 * Each attempt is bounded by cfg.request_timeout_ms (a request through a
 * follower whose leader died hangs until then: the main tuning knob) and by
 * the deadline.
 *
 * Error handling: calls return 0 (or a documented count) on success and -1
 * with *err filled on failure, never print and never exit. err->code is one
 * of the stable codes below; err->exit_code is AC_EXIT_GENERAL except for
 * ETCD_INTERRUPTED (AC_EXIT_INTERRUPTED). Messages are one line. They never
 * contain the password, the user name or the auth token (the client scrubs
 * every message it builds from a server reply or a libcurl error), and the
 * client never logs anything.
 *
 *   ETCD_CONFIG            bad configuration (endpoint list, options), or
 *                          no libcurl 4 to load
 *   ETCD_NOMEM             out of memory
 *   ETCD_INTERRUPTED       SIGINT/SIGTERM arrived (ac_clock_interrupted)
 *   ETCD_UNAVAILABLE       no endpoint could be reached before the deadline
 *                          (nothing was sent)
 *   ETCD_NO_LEADER         the members answered "no leader" until the
 *                          deadline (quorum lost)
 *   ETCD_OUTCOME_UNKNOWN   a write timed out or broke after it was sent, or
 *                          got a 5xx: it may or may not have been applied
 *   ETCD_TIMEOUT           the deadline passed during a read or a retry loop
 *   ETCD_TLS               TLS handshake or certificate failure
 *   ETCD_AUTH_FAILED       the cluster refused the user name or password
 *   ETCD_AUTH_REQUIRED     the cluster has auth enabled and no user was given
 *   ETCD_PERMISSION_DENIED the user lacks the permission for a key
 *   ETCD_INVALID           the server rejected the request as malformed
 *                          (too many operations, request too large, ...)
 *   ETCD_COMPACTED         the revision asked for was compacted
 *   ETCD_FUTURE_REVISION   the revision asked for does not exist yet
 *   ETCD_LEASE_NOT_FOUND   the lease expired or was revoked
 *   ETCD_NO_SPACE          the cluster's space quota is exhausted (alarm)
 *   ETCD_BAD_REPLY         the reply is not what etcd sends (malformed JSON,
 *                          wrong types, bad base64, missing fields); for a
 *                          write its outcome is unknown
 *   ETCD_REPLY_TOO_LARGE   the reply exceeded cfg.max_reply_bytes
 *   ETCD_SERVER_ERROR      any other error the server reported
 *   ETCD_CONTENDED         ac_etcd_retry lost every compare until the deadline
 *   ETCD_WATCH_CANCELED    the server canceled a watch for another reason
 *
 * Threads: a client handle (and a watch) is used by one thread at a time.
 * libcurl's global initialisation happens in the first ac_etcd_open.
 */
#ifndef AGENTCHAT_ETCD_CLIENT_H
#define AGENTCHAT_ETCD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "agentchat/err.h"

#define AC_ETCD_MAX_ENDPOINTS 16

struct ac_etcd_config {
    const char *endpoints;      /* required: "h:p,h:p" or "http[s]://h:p,..." */
    /* etcd's own authentication (the gateway's /v3/auth/authenticate token);
     * both NULL: none. Copied by ac_etcd_open, wiped at ac_etcd_close. */
    const char *username;
    const char *password;
    /* TLS: a CA bundle to verify the members (NULL: the system store) and a
     * client certificate and key (both or neither). Any of them makes
     * endpoints without a scheme https://. */
    const char *ca_file;
    const char *cert_file;
    const char *key_file;
    long connect_timeout_ms;    /* 0: 1000 */
    long request_timeout_ms;    /* one attempt on one endpoint; 0: 1000.
                                 * After a leader dies, a request that a
                                 * follower accepted hangs until this runs
                                 * out: it bounds the failover time (a
                                 * post ~1.0-1.4 s after a leader SIGKILL
                                 * with 1000, ~2 s with 2000) */
    long op_timeout_ms;         /* the default deadline of a call; 0: 10000 */
    long watch_probe_ms;        /* a silent watch checks its member after
                                 * this long; 0: 2000 */
    size_t max_reply_bytes;     /* one reply or one watch message; 0: 32 MiB */
};

#define AC_ETCD_CONFIG_INIT { NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0 }

struct ac_etcd;

/* Parse cfg, copy what it needs (cfg may be freed afterwards), and make a
 * client. Connects lazily: a cluster that is down is no error here.
 * Returns NULL with err (ETCD_CONFIG, ETCD_NOMEM) on failure. */
struct ac_etcd *ac_etcd_open(const struct ac_etcd_config *cfg, struct ac_err *err);

/* Close the connections, wipe the secrets and free the client (NULL: no-op).
 * Every watch of the client must be closed first. */
void ac_etcd_close(struct ac_etcd *e);

/* The endpoints as parsed (normalised URLs "http://127.0.0.1:23791"), the
 * index of the current one, and the number of endpoint switches so far. */
size_t ac_etcd_endpoint_count(const struct ac_etcd *e);
const char *ac_etcd_endpoint(const struct ac_etcd *e, size_t i);
size_t ac_etcd_current(const struct ac_etcd *e);
/* Make endpoint i the current one (tests, and a backend that prefers the
 * leader). i out of range is ignored. */
void ac_etcd_set_current(struct ac_etcd *e, size_t i);
unsigned long ac_etcd_failovers(const struct ac_etcd *e);
/* New TCP connections opened so far (keep-alive shows as few). */
unsigned long ac_etcd_connections(const struct ac_etcd *e);

/* ac_clock_mono_ns() + ms milliseconds (the deadline of the calls below). */
int64_t ac_etcd_deadline_in(long ms);

/* ---- keys ----------------------------------------------------------- */

/* Which keys a request is about: one key, [key, end), or every key with
 * the prefix `key` (prefix != 0; an empty prefix is every key). A length
 * of 0 with a non-NULL pointer means strlen. end "\0" (end_len 1) is every
 * key >= key. Keys are bytes; etcd limits a request to ~1.5 MiB. */
struct ac_etcd_keys {
    const char *key;
    size_t key_len;
    const char *end;
    size_t end_len;
    int prefix;
};

#define AC_ETCD_KEY(k) ((struct ac_etcd_keys){ (k), 0, NULL, 0, 0 })
#define AC_ETCD_PREFIX(k) ((struct ac_etcd_keys){ (k), 0, NULL, 0, 1 })

/* A key-value pair as etcd stores it. key and value are malloc'ed and
 * NUL-terminated (the lengths do not count the NUL; both may hold NULs). */
struct ac_etcd_kv {
    char *key;
    size_t key_len;
    char *value;
    size_t value_len;
    int64_t create_revision;
    int64_t mod_revision;
    int64_t version;            /* 0: the key does not exist (deleted) */
    int64_t lease;
};

/* ---- range ---------------------------------------------------------- */

struct ac_etcd_range_req {
    struct ac_etcd_keys keys;
    int64_t limit;              /* 0: no limit */
    int64_t revision;           /* 0: the newest; else read as of then */
    int keys_only;              /* no values */
    int count_only;             /* no kvs, only count */
    int serializable;           /* answer from the member's own copy, no
                                 * quorum round (may be stale) */
};

struct ac_etcd_range_res {
    int64_t revision;           /* the store's revision when read */
    int64_t count;              /* keys in the range (not only returned) */
    int more;                   /* limit cut the result */
    struct ac_etcd_kv *kvs;
    size_t nkvs;
};

/* Read. A read is retried on the next endpoint when its outcome is
 * unknown. res is filled on success (free with ac_etcd_range_res_free) and
 * left empty on failure. */
int ac_etcd_range(struct ac_etcd *e, const struct ac_etcd_range_req *req,
                  struct ac_etcd_range_res *res, int64_t deadline, struct ac_err *err);
void ac_etcd_range_res_free(struct ac_etcd_range_res *res);

/* ---- put, delete ---------------------------------------------------- */

/* Store key = value (value may be NULL for empty), attached to `lease`
 * (0: none). *revision (may be NULL) gets the store's revision after it. */
int ac_etcd_put(struct ac_etcd *e, const char *key, size_t key_len, const char *value,
                size_t value_len, int64_t lease, int64_t *revision, int64_t deadline,
                struct ac_err *err);

/* Delete the keys; *deleted and *revision may be NULL. */
int ac_etcd_delete(struct ac_etcd *e, const struct ac_etcd_keys *keys, int64_t *deleted,
                   int64_t *revision, int64_t deadline, struct ac_err *err);

/* ---- transactions --------------------------------------------------- */

enum ac_etcd_target {
    AC_ETCD_VERSION,            /* number: the key's version (0: absent) */
    AC_ETCD_CREATE,             /* number: its create revision */
    AC_ETCD_MOD,                /* number: its last modification revision */
    AC_ETCD_VALUE,              /* value/value_len */
    AC_ETCD_LEASE               /* number: its lease id */
};

enum ac_etcd_result { AC_ETCD_EQUAL, AC_ETCD_GREATER, AC_ETCD_LESS, AC_ETCD_NOT_EQUAL };

/* One compare: target(keys) result number-or-value. Over a range, every
 * key in it must satisfy it (an empty range satisfies everything). */
struct ac_etcd_cmp {
    struct ac_etcd_keys keys;
    enum ac_etcd_target target;
    enum ac_etcd_result result;
    int64_t number;
    const char *value;
    size_t value_len;
};

enum ac_etcd_op_kind { AC_ETCD_OP_RANGE, AC_ETCD_OP_PUT, AC_ETCD_OP_DELETE };

/* One operation of a branch. RANGE uses keys, limit, revision, keys_only,
 * count_only; PUT uses keys.key, value, lease, prev_kv; DELETE uses keys,
 * prev_kv. etcd refuses a txn that puts or deletes one key twice. */
struct ac_etcd_op {
    enum ac_etcd_op_kind kind;
    struct ac_etcd_keys keys;
    const char *value;
    size_t value_len;
    int64_t lease;
    int64_t limit;
    int64_t revision;
    int keys_only;
    int count_only;
    int prev_kv;
};

struct ac_etcd_txn_req {
    const struct ac_etcd_cmp *cmp;
    size_t ncmp;
    const struct ac_etcd_op *success;   /* run when every compare holds */
    size_t nsuccess;
    const struct ac_etcd_op *failure;   /* run otherwise */
    size_t nfailure;
};

/* The result of one operation of the branch that ran: RANGE fills range;
 * DELETE sets deleted and, with prev_kv, range.kvs (the deleted pairs);
 * PUT with prev_kv puts the previous pair (if any) in range.kvs. */
struct ac_etcd_op_res {
    enum ac_etcd_op_kind kind;
    struct ac_etcd_range_res range;
    int64_t deleted;
};

struct ac_etcd_txn_res {
    int succeeded;              /* 1: the success branch ran */
    int64_t revision;           /* the store's revision after the txn */
    struct ac_etcd_op_res *ops; /* one per operation of the branch that ran */
    size_t nops;
};

/* Run a transaction (all or nothing, one revision). A txn is a write: on an
 * unknown outcome it fails with ETCD_OUTCOME_UNKNOWN (see above); one whose
 * branches only read (RANGE operations) is a read, retried like one. res
 * is filled on success (free with ac_etcd_txn_res_free). */
int ac_etcd_txn(struct ac_etcd *e, const struct ac_etcd_txn_req *req, struct ac_etcd_txn_res *res,
                int64_t deadline, struct ac_err *err);
void ac_etcd_txn_res_free(struct ac_etcd_txn_res *res);

/* ---- retrying compare-and-swap -------------------------------------- */

/* One attempt of a compare-and-swap: read what it needs, run its txn.
 * Returns 1 when done, 0 when a compare failed (someone else won the race:
 * try again), -1 with *err on failure. After an unknown outcome the next
 * attempt must find out from the store whether the previous one was
 * applied (an idempotency key written in the same txn). */
typedef int (*ac_etcd_attempt_fn)(struct ac_etcd *e, void *ctx, int64_t deadline,
                                  struct ac_err *err);

/* Call fn until it returns 1, or until the deadline. Between attempts it
 * sleeps a jittered exponential backoff (full jitter: uniform in
 * [0, min(64 ms, 1 ms * 2^k)] after the k-th lost race; the same after a
 * transient error). Transient errors (ac_etcd_transient) are retried;
 * others are returned as they are. At the deadline: ETCD_CONTENDED when the
 * last attempt lost a race, else the last error with "gave up after N ms"
 * in front of its message. Returns 0 or -1; *attempts (may be NULL) gets
 * the number of attempts made. */
int ac_etcd_retry(struct ac_etcd *e, ac_etcd_attempt_fn fn, void *ctx, int64_t deadline,
                  unsigned *attempts, struct ac_err *err);

/* 1 when err is worth retrying after a backoff: ETCD_OUTCOME_UNKNOWN,
 * ETCD_UNAVAILABLE, ETCD_NO_LEADER, ETCD_TIMEOUT. */
int ac_etcd_transient(const struct ac_err *err);

/* ---- leases --------------------------------------------------------- */

/* Grant a lease of ttl seconds; *id gets its id, *granted (may be NULL) the
 * TTL the server granted. */
int ac_etcd_lease_grant(struct ac_etcd *e, int64_t ttl, int64_t *id, int64_t *granted,
                        int64_t deadline, struct ac_err *err);
/* Renew once; *ttl (may be NULL) gets the new TTL. An expired or revoked
 * lease fails with ETCD_LEASE_NOT_FOUND. */
int ac_etcd_lease_keepalive(struct ac_etcd *e, int64_t id, int64_t *ttl, int64_t deadline,
                            struct ac_err *err);
/* Revoke (its keys are deleted); an unknown lease: ETCD_LEASE_NOT_FOUND. */
int ac_etcd_lease_revoke(struct ac_etcd *e, int64_t id, int64_t deadline, struct ac_err *err);
/* Seconds left (*ttl) and the granted TTL (*granted; either may be NULL);
 * an expired or unknown lease: ETCD_LEASE_NOT_FOUND. A read. */
int ac_etcd_lease_ttl(struct ac_etcd *e, int64_t id, int64_t *ttl, int64_t *granted,
                      int64_t deadline, struct ac_err *err);

/* ---- maintenance ---------------------------------------------------- */

struct ac_etcd_status {
    uint64_t cluster_id;
    uint64_t member_id;
    uint64_t leader;            /* 0: the member knows no leader */
    int64_t revision;
    int64_t raft_term;
    int64_t raft_index;
    int64_t db_size;
    char version[32];
};

/* The status of endpoint i alone (no failover: it is about that member). */
int ac_etcd_status(struct ac_etcd *e, size_t i, struct ac_etcd_status *st, int64_t deadline,
                   struct ac_err *err);

struct ac_etcd_member {
    uint64_t id;
    char *name;                 /* "" for a member that has not started */
    char **client_urls;
    size_t nclient_urls;
    char **peer_urls;
    size_t npeer_urls;
};

/* The cluster's members (a read). Free with ac_etcd_members_free. */
int ac_etcd_members(struct ac_etcd *e, struct ac_etcd_member **members, size_t *n,
                    int64_t deadline, struct ac_err *err);
void ac_etcd_members_free(struct ac_etcd_member *members, size_t n);

/* Compact the key history up to `revision` (reads and watches below it then
 * fail with ETCD_COMPACTED). */
int ac_etcd_compact(struct ac_etcd *e, int64_t revision, int64_t deadline, struct ac_err *err);

/* ---- watches -------------------------------------------------------- */

/*
 * A watch streams the changes of its keys from a revision on. It has its
 * own connection, and carries `Grpc-Metadata-hasleader: true`, so that a
 * member that loses its leader ends the stream instead of going silent.
 * When the stream ends, breaks, or stays silent longer than
 * cfg.watch_probe_ms while its member fails a status probe, the watch
 * reconnects to the next endpoint from the revision after the last event
 * it delivered: no event is lost or delivered twice across reconnects.
 *
 *     struct ac_etcd_watch_req wr = { .keys = AC_ETCD_PREFIX("c/"), .start_revision = rev + 1 };
 *     struct ac_etcd_watch *w;
 *     if (ac_etcd_watch_open(e, &wr, &w, 0, &err) == -1) ...;
 *     for (;;) {
 *         struct ac_etcd_events ev;
 *         int r = ac_etcd_watch_next(w, deadline, &ev, &err);
 *         if (r <= 0) break;             // 0: deadline, -1: err
 *         ... ev.events[0 .. ev.nevents) ...
 *         ac_etcd_events_free(&ev);
 *     }
 *     ac_etcd_watch_close(w);
 *
 * A start revision below the cluster's compaction fails with
 * ETCD_COMPACTED (the message names the compacted revision, also
 * available from ac_etcd_watch_compacted): re-read the state and watch
 * from its revision + 1.
 */
struct ac_etcd_watch_req {
    struct ac_etcd_keys keys;
    int64_t start_revision;     /* 0: from now on */
    int prev_kv;                /* events carry the previous pair */
    int no_put;                 /* leave out PUT events */
    int no_delete;              /* leave out DELETE events */
};

enum ac_etcd_event_type { AC_ETCD_EVENT_PUT, AC_ETCD_EVENT_DELETE };

struct ac_etcd_event {
    enum ac_etcd_event_type type;
    struct ac_etcd_kv kv;       /* a DELETE has key and mod_revision */
    struct ac_etcd_kv prev_kv;  /* with prev_kv, when there was one */
    int has_prev;
};

struct ac_etcd_events {
    int64_t revision;           /* the newest event's mod_revision */
    struct ac_etcd_event *events;
    size_t nevents;
};

struct ac_etcd_watch;

/* Start a watch and wait (until the deadline) for the server to confirm
 * it. Uses the client's current endpoint. */
int ac_etcd_watch_open(struct ac_etcd *e, const struct ac_etcd_watch_req *req,
                       struct ac_etcd_watch **w, int64_t deadline, struct ac_err *err);

/* Wait until the deadline for events. Returns 1 with ev filled (at least
 * one event, in revision order; free with ac_etcd_events_free), 0 when
 * the deadline passed first, -1 with *err. Reconnection is transparent;
 * when no member accepts the watch for cfg.op_timeout_ms it fails with
 * ETCD_UNAVAILABLE or ETCD_NO_LEADER. */
int ac_etcd_watch_next(struct ac_etcd_watch *w, int64_t deadline, struct ac_etcd_events *ev,
                       struct ac_err *err);
void ac_etcd_events_free(struct ac_etcd_events *ev);

/* ac_etcd_watch_next that also returns 2 (ev empty) when the caller's
 * descriptor fd becomes readable first (polled beside the stream, never
 * read; -1: none). While the watch reconnects, fd is not looked at: the
 * reconnection's back-off is short and the next call sees it. */
int ac_etcd_watch_next_fd(struct ac_etcd_watch *w, int64_t deadline, int fd,
                          struct ac_etcd_events *ev, struct ac_err *err);

/* The revision the watch resumes from (every event below it was delivered
 * or is in the buffer), the endpoint it is connected to (or was last),
 * how often it reconnected, and the compacted revision after
 * ETCD_COMPACTED (else 0). */
int64_t ac_etcd_watch_revision(const struct ac_etcd_watch *w);
size_t ac_etcd_watch_endpoint(const struct ac_etcd_watch *w);
unsigned ac_etcd_watch_reconnects(const struct ac_etcd_watch *w);
int64_t ac_etcd_watch_compacted(const struct ac_etcd_watch *w);

/* Cancel and free (NULL: no-op). */
void ac_etcd_watch_close(struct ac_etcd_watch *w);

void ac_etcd_kv_free(struct ac_etcd_kv *kv);

#endif
