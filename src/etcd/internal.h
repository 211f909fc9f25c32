/*
 * internal.h - what the files of the etcd client share (client.c: the
 * transport; ops.c: the unary operations; watch.c: watches). Nothing
 * outside src/etcd/ includes it, except the client's own tests, which read
 * the counters and the token to prove that it never leaks.
 */
#ifndef AGENTCHAT_ETCD_INTERNAL_H
#define AGENTCHAT_ETCD_INTERNAL_H

#include <jansson.h>

#include "agentchat/buf.h"
#include "etcd/client.h"
#include "etcd/curlapi.h"

struct ac_etcd {
    char *endpoints[AC_ETCD_MAX_ENDPOINTS];
    size_t n;
    size_t cur;
    char *username;
    char *password;
    char *token;                /* from /v3/auth/authenticate; NULL: none yet */
    char *ca_file;
    char *cert_file;
    char *key_file;
    long connect_ms;
    long request_ms;
    long op_ms;
    long probe_ms;
    size_t max_reply;
    int use_curl;               /* unary requests through libcurl (TLS, or
                                 * AGENT_CHAT_ETCD_TRANSPORT=curl); else http.c */
    int raw_fd[AC_ETCD_MAX_ENDPOINTS];  /* http.c: a kept-alive socket per endpoint */
    CURL *easy;                 /* unary requests: one kept-alive handle (NULL
                                 * until libcurl is needed) */
    struct curl_slist *headers; /* rebuilt when the token changes */
    struct ac_buf reply;
    int too_large;
    unsigned long failovers;
    unsigned long connections;
    uint64_t rng;
    int nwatches;
    char errbuf[CURL_ERROR_SIZE];
};

/* What one transfer came to (http.c). */
enum ac_etcd_tr {
    AC_ETCD_TR_OK,              /* *status and the body in e->reply */
    AC_ETCD_TR_NOT_SENT,        /* nothing reached the member (err says why) */
    AC_ETCD_TR_UNKNOWN,         /* sent, no usable answer */
    AC_ETCD_TR_FAIL,            /* a local problem or a reply too large (err) */
    AC_ETCD_TR_INTERRUPTED
};

/* POST body to `path` of endpoint i over the client's own HTTP/1.1
 * transport (plain http only), within timeout_ms; the reply's body in
 * e->reply. */
enum ac_etcd_tr ac_etcd_raw_post(struct ac_etcd *e, size_t i, const char *path, const char *body,
                                 size_t len, long timeout_ms, long *status, struct ac_err *err);
/* Close the kept-alive socket of endpoint i (if any). */
void ac_etcd_raw_close(struct ac_etcd *e, size_t i);

/* Load libcurl and make the unary handle, once (TLS, watches). */
int ac_etcd_need_curl(struct ac_etcd *e, struct ac_err *err);

/* Flags of ac_etcd_call. */
enum {
    AC_ETCD_F_READ = 1,         /* idempotent: retried when the outcome is unknown */
    AC_ETCD_F_NOAUTH = 2        /* the authenticate request itself */
};

/* POST req (a JSON object) to `path` ("/v3/kv/range") with failover (see
 * client.h) and return the reply object in *reply (a new reference; a
 * stream reply's {"result":...} is unwrapped). Returns 0 or -1 with *err
 * (scrubbed of secrets). deadline is absolute (0 is not accepted here:
 * the public functions resolve it). */
int ac_etcd_call(struct ac_etcd *e, const char *path, const json_t *req, unsigned flags,
                 int64_t deadline, json_t **reply, struct ac_err *err);

/* The same against endpoint i only: no failover, no retry (status
 * probes). */
int ac_etcd_call_at(struct ac_etcd *e, size_t i, const char *path, const json_t *req,
                    int64_t deadline, json_t **reply, struct ac_err *err);

/* deadline, or now + op_timeout when it is 0. */
int64_t ac_etcd_resolve_deadline(const struct ac_etcd *e, int64_t deadline);

/* A new easy handle with the client's common options (TLS, protocols,
 * keep-alive, connect timeout, interrupt check); NULL when out of memory. */
CURL *ac_etcd_easy_new(struct ac_etcd *e);

/* The request headers: JSON, no "Expect: 100-continue", the leader
 * requirement, and the auth token when there is one. NULL when out of
 * memory. */
struct curl_slist *ac_etcd_header_list(const struct ac_etcd *e);

/* 1 when a failed transfer (rc, libcurl's error text) was the server
 * refusing our TLS handshake (a definitive ETCD_TLS, not a lost reply). */
int ac_etcd_tls_refused(CURLcode rc, const char *errbuf);

/* Replace every occurrence of the password, user name and token in
 * err->msg with "***". Applied to every error the client returns. */
void ac_etcd_scrub(const struct ac_etcd *e, struct ac_err *err);

/* Forget the auth token (wiped): the next request authenticates again. */
void ac_etcd_drop_token(struct ac_etcd *e);

/* Make sure the client holds a token when it has credentials (a no-op
 * otherwise). */
int ac_etcd_ensure_auth(struct ac_etcd *e, int64_t deadline, struct ac_err *err);

/* Uniform random in [0, n) (n > 0) from the client's generator. */
uint64_t ac_etcd_random(struct ac_etcd *e, uint64_t n);

/* Sleep ns (interruptible): -1 with ETCD_INTERRUPTED when interrupted. */
int ac_etcd_sleep(int64_t ns, struct ac_err *err);

/* Move to the next endpoint (counted as a failover). */
void ac_etcd_next_endpoint(struct ac_etcd *e);

/* The ETCD_INTERRUPTED error (always -1). */
int ac_etcd_interrupted(struct ac_err *err);

#endif
