/*
 * wire.h - the JSON of etcd's gateway: requests built and replies checked,
 * with no transport (client.c sends them; tests/fuzz/fuzz_etcdreply.c feeds
 * the decoders hostile bytes).
 *
 * The gateway is grpc-gateway's mapping of etcd's protobuf messages:
 *   - bytes (keys, values) are standard base64 with padding;
 *   - int64/uint64 are decimal strings ("revision":"42"); a JSON integer is
 *     accepted too;
 *   - fields holding their zero value (0, false, "", empty list) are left
 *     out, so an absent number is 0 and an absent list is empty;
 *   - a unary error is {"error":"m","message":"m","code":GRPC_CODE} with an
 *     HTTP status of 4xx/5xx; a stream (watch, lease keepalive) wraps each
 *     message in {"result":{...}} and ends with
 *     {"error":{"grpc_code":N,"http_code":N,"message":"m",...}} on error.
 *
 * Calling sequence (decoding):
 *     json_t *o = ac_etcdw_parse(body, len, &err);      // an object, or NULL
 *     if (o && ac_etcdw_error_of(o, &code, &msg)) ...   // the server said no
 *     else if (o && ac_etcdw_range(o, &res, &err) == 0) ... use res ...
 *     json_decref(o);
 *
 * Error handling: decoders return 0, or -1 with err = ETCD_BAD_REPLY (the
 * reply is not what etcd sends: a wrong type, bad base64, an out-of-range
 * number, a missing field, an answer that does not match the request) or
 * ETCD_NOMEM, and leave their output empty (nothing to free). Messages
 * name the field, never its value. Encoders return a new reference or NULL
 * with err = ETCD_INVALID (bad request: e.g. no key) or ETCD_NOMEM.
 */
#ifndef AGENTCHAT_ETCD_WIRE_H
#define AGENTCHAT_ETCD_WIRE_H

#include <jansson.h>

#include "etcd/client.h"

/* gRPC status codes etcd uses. */
enum {
    AC_GRPC_INVALID_ARGUMENT = 3,
    AC_GRPC_DEADLINE_EXCEEDED = 4,
    AC_GRPC_NOT_FOUND = 5,
    AC_GRPC_PERMISSION_DENIED = 7,
    AC_GRPC_RESOURCE_EXHAUSTED = 8,
    AC_GRPC_FAILED_PRECONDITION = 9,
    AC_GRPC_OUT_OF_RANGE = 11,
    AC_GRPC_UNAVAILABLE = 14,
    AC_GRPC_UNAUTHENTICATED = 16
};

/* Fill err with `code` and "etcd reply: <what>" (always -1). */
int ac_etcdw_bad(struct ac_err *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The body as a JSON object (a new reference), or NULL with
 * ETCD_BAD_REPLY (not JSON, not an object, a NUL inside a string, nested
 * deeper than jansson allows). */
json_t *ac_etcdw_parse(const char *body, size_t len, struct ac_err *err);

/* 1 when o is an error reply (either form above): *grpc_code gets its code
 * (0 when absent or not a number) and *message its message (NULL when
 * absent; points into o). 0 otherwise. */
int ac_etcdw_error_of(const json_t *o, int *grpc_code, const char **message);

/* The stable code (client.h) for a server error, from its gRPC code and
 * message. *transient is set to 1 for errors whose outcome is unknown and
 * that may pass (unavailable, no leader, timeouts), else 0. */
const char *ac_etcdw_classify(int grpc_code, const char *message, int *transient);

/* Strict numbers: a decimal string ("-12", no sign for uint64, no spaces,
 * no leading '+') or a JSON integer, in range. Absent: 0. */
int ac_etcdw_int64(const json_t *o, const char *name, int64_t *out, struct ac_err *err);
int ac_etcdw_uint64(const json_t *o, const char *name, uint64_t *out, struct ac_err *err);
/* Absent: 0; else must be a JSON boolean. */
int ac_etcdw_bool(const json_t *o, const char *name, int *out, struct ac_err *err);

/* ---- decoders (o is the reply object, or the "result" of a stream
 * message) ---- */
int ac_etcdw_header_revision(const json_t *o, int64_t *rev, struct ac_err *err);
int ac_etcdw_kv(const json_t *o, struct ac_etcd_kv *kv, struct ac_err *err);
int ac_etcdw_range(const json_t *o, struct ac_etcd_range_res *res, struct ac_err *err);
/* req: the request the reply answers (the number and kinds of the
 * operations of the branch that ran must match), or NULL to skip that
 * check. */
int ac_etcdw_txn(const json_t *o, const struct ac_etcd_txn_req *req, struct ac_etcd_txn_res *res,
                 struct ac_err *err);
int ac_etcdw_status(const json_t *o, struct ac_etcd_status *st, struct ac_err *err);
int ac_etcdw_members(const json_t *o, struct ac_etcd_member **members, size_t *n,
                     struct ac_err *err);

/* One message of a watch stream (one line of the body, no newline). */
struct ac_etcdw_watch_msg {
    int is_error;               /* the stream ended with an error */
    int grpc_code;              /* with is_error */
    char message[256];          /* with is_error, or the cancel reason */
    int created;
    int canceled;
    int64_t header_revision;
    int64_t compact_revision;
    struct ac_etcd_events ev;   /* events (possibly none: a progress note) */
};
/* Decode a line. Returns 0 (free m->ev with ac_etcd_events_free) or -1. */
int ac_etcdw_watch_msg(const char *line, size_t len, struct ac_etcdw_watch_msg *m,
                       struct ac_err *err);

/* ---- encoders ---- */

/* Set o[keyname] (and o[endname] when the keys are a range or a prefix)
 * to the base64 of the keys. Returns 0 or -1. */
int ac_etcdw_put_keys(json_t *o, const struct ac_etcd_keys *k, const char *keyname,
                      const char *endname, struct ac_err *err);
/* The range end of every key with `prefix` (etcd's GetPrefixRangeEnd): the
 * prefix without its trailing 0xff bytes, last byte + 1; "\0" when that
 * leaves nothing. out needs len + 1 bytes; returns the end's length. */
size_t ac_etcdw_prefix_end(const char *prefix, size_t len, char *out);

json_t *ac_etcdw_range_req(const struct ac_etcd_range_req *r, struct ac_err *err);
json_t *ac_etcdw_txn_req(const struct ac_etcd_txn_req *t, struct ac_err *err);
json_t *ac_etcdw_watch_req(const struct ac_etcd_watch_req *w, int64_t start_revision,
                           struct ac_err *err);

/* Set o[name] = the decimal string of v. */
int ac_etcdw_set_int64(json_t *o, const char *name, int64_t v, struct ac_err *err);

#endif
