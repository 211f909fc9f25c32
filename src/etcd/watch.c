/* watch.c - etcd watches over the gateway's streaming /v3/watch; see the
 * watch section of src/etcd/client.h.
 *
 * The gateway turns the bidirectional gRPC stream into one long POST: the
 * body is the create request, the response a chunked stream of JSON
 * messages, one per line. A watch owns a CURL easy handle in a multi
 * handle of its own, so that ac_etcd_watch_next can wait on the socket
 * with a deadline (curl_multi_poll) instead of blocking in
 * curl_easy_perform.
 *
 * Resuming without loss or duplicates rests on two facts of etcd's watch
 * protocol: events arrive in revision order, and all events of one
 * revision arrive in one message (we never ask for fragments). So "every
 * event below next_rev has been delivered" holds after each delivered
 * message, and a new stream started at next_rev on any member replays
 * exactly what is missing. Events below next_rev in a replay are dropped.
 *
 * Progress notifications are not used to move next_rev forward: some etcd
 * versions sent them ahead of pending events (etcd issue 15220), and a
 * lost event is worse than a resume that finds its revision compacted
 * (ETCD_COMPACTED: the caller re-reads).
 */
#include "etcd/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/clock.h"
#include "etcd/wire.h"

/* Longest single wait on the socket, so that an interrupt flag set by a
 * signal handler is seen soon even when libcurl's poll restarts. */
#define POLL_SLICE_MS 200
#define ROUND_BACKOFF_MS 100

struct ac_etcd_watch {
    struct ac_etcd *e;
    struct ac_etcd_watch_req req;     /* keys point at key/end below */
    char *key;
    char *end;
    int64_t next_rev;                 /* 0: "from now" (not known yet) */
    size_t ep;
    CURLM *multi;
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    struct ac_buf buf;                /* stream bytes not consumed yet */
    int attached;                     /* easy is in multi */
    int ended;                        /* the transfer finished */
    CURLcode result;
    long status;                      /* HTTP status of the ended transfer */
    int too_large;
    int created;                      /* the current stream is confirmed */
    int64_t last_data;                /* mono ns of the last bytes or probe */
    int64_t down_since;               /* mono ns of the first failure, 0: up */
    unsigned failed_tries;            /* streams that failed since then */
    int64_t compacted;
    unsigned reconnects;
    struct ac_err last;               /* why the last stream failed */
    int extra_fd;                     /* the caller's descriptor, -1: none */
    int extra_ready;                  /* it became readable */
    char errbuf[CURL_ERROR_SIZE];
};

static int nomem(struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NOMEM", "out of memory");
}

static size_t on_stream_data(char *data, size_t size, size_t n, void *arg)
{
    struct ac_etcd_watch *w = arg;
    size_t len = size * n;
    /* Everything not consumed yet is at most one partial message plus
     * what one libcurl read brings; the cap bounds a message that never
     * ends. */
    if (w->buf.len + len > w->e->max_reply + 65536) {
        w->too_large = 1;
        return 0;
    }
    ac_buf_add(&w->buf, data, len);
    w->last_data = ac_clock_mono_ns();
    return w->buf.oom ? 0 : len;
}

static void detach(struct ac_etcd_watch *w)
{
    if (w->attached) {
        ac_curl.multi_remove_handle(w->multi, w->easy);
        w->attached = 0;
    }
}

/* Start a stream on endpoint w->ep from next_rev. */
static int start_stream(struct ac_etcd_watch *w, int64_t deadline, struct ac_err *err)
{
    struct ac_etcd *e = w->e;
    char url[512];
    json_t *req;
    struct curl_slist *h;

    detach(w);
    if (ac_etcd_ensure_auth(e, deadline, err) == -1)
        return -1;
    h = ac_etcd_header_list(e);       /* the token may be new */
    if (!h)
        return nomem(err);
    ac_curl.slist_free_all(w->headers);
    w->headers = h;
    req = ac_etcdw_watch_req(&w->req, w->next_rev, err);
    if (!req)
        return -1;
    free(w->body);
    w->body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!w->body)
        return nomem(err);
    snprintf(url, sizeof url, "%s/v3/watch", e->endpoints[w->ep]);
    w->buf.len = 0;
    w->ended = w->created = w->too_large = 0;
    w->result = CURLE_OK;
    w->errbuf[0] = '\0';
    w->last_data = ac_clock_mono_ns();
    if (ac_curl.easy_setopt(w->easy, CURLOPT_URL, url) != CURLE_OK ||
        ac_curl.easy_setopt(w->easy, CURLOPT_POSTFIELDS, w->body) != CURLE_OK ||
        ac_curl.easy_setopt(w->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(w->body)) !=
            CURLE_OK ||
        ac_curl.easy_setopt(w->easy, CURLOPT_HTTPHEADER, w->headers) != CURLE_OK ||
        ac_curl.easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, on_stream_data) != CURLE_OK ||
        ac_curl.easy_setopt(w->easy, CURLOPT_WRITEDATA, w) != CURLE_OK ||
        ac_curl.easy_setopt(w->easy, CURLOPT_ERRORBUFFER, w->errbuf) != CURLE_OK ||
        ac_curl.easy_setopt(w->easy, CURLOPT_TIMEOUT_MS, 0L) != CURLE_OK ||
        ac_curl.multi_add_handle(w->multi, w->easy) != CURLM_OK)
        return nomem(err);
    w->attached = 1;
    return 0;
}

/* Wait up to ms for the stream, then let libcurl move data; notes the end
 * of the transfer. */
static int pump(struct ac_etcd_watch *w, long ms, struct ac_err *err)
{
    int running = 0, left;
    CURLMsg *m;
    struct curl_waitfd extra;
    extra.fd = w->extra_fd;
    extra.events = CURL_WAIT_POLLIN;
    extra.revents = 0;
    if (ms > 0 && ac_curl.multi_poll(w->multi, w->extra_fd >= 0 ? &extra : NULL,
                                     w->extra_fd >= 0 ? 1u : 0u, (int)ms, NULL) != CURLM_OK)
        return nomem(err);
    if (extra.revents & CURL_WAIT_POLLIN)
        w->extra_ready = 1;
    if (ac_curl.multi_perform(w->multi, &running) != CURLM_OK)
        return nomem(err);
    while ((m = ac_curl.multi_info_read(w->multi, &left)) != NULL) {
        if (m->msg == CURLMSG_DONE && m->easy_handle == w->easy) {
            long connects = 0;
            w->ended = 1;
            w->result = m->data.result;
            w->status = 0;
            ac_curl.easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->status);
            ac_curl.easy_getinfo(w->easy, CURLINFO_NUM_CONNECTS, &connects);
            w->e->connections += (unsigned long)connects;
        }
    }
    return 0;
}

/* The error after failing streams since w->down_since (always -1). */
static int give_up(struct ac_etcd_watch *w, int64_t now, struct ac_err *err)
{
    long ms = (long)((now - w->down_since) / 1000000);
    if (strcmp(w->last.code, "ETCD_NO_LEADER") == 0)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NO_LEADER",
                          "etcd has no leader (quorum lost?) for %ld ms; last: %s", ms,
                          w->last.msg);
    return ac_err_set(err, AC_EXIT_GENERAL,
                      strcmp(w->last.code, "ETCD_TLS") == 0 ? "ETCD_TLS" : "ETCD_UNAVAILABLE",
                      "no etcd member kept a watch for %ld ms; last: %s", ms, w->last.msg);
}

/* The stream failed for a reason that may pass: remember it and pick the
 * next endpoint. -1 when the cluster has been unusable for op_timeout, or
 * on interrupt. */
static int stream_failed(struct ac_etcd_watch *w, const char *code, const char *why,
                         int64_t deadline, struct ac_err *err)
{
    struct ac_etcd *e = w->e;
    int64_t now = ac_clock_mono_ns();
    char q[300];
    ac_err_quote(q, sizeof q, why, 240);
    ac_err_set(&w->last, AC_EXIT_GENERAL, code, "etcd %s: watch: %s", e->endpoints[w->ep], q);
    detach(w);
    if (!w->down_since)
        w->down_since = now;
    w->failed_tries++;
    if (now - w->down_since >= (int64_t)e->op_ms * 1000000)
        return give_up(w, now, err);
    w->ep = (w->ep + 1) % e->n;
    w->reconnects++;
    if (w->failed_tries % e->n == 0) {
        /* A whole round failed: pause, jittered, but not past the
         * caller's deadline (the next call goes on from here). */
        int64_t pause = (int64_t)ac_etcd_random(e, (uint64_t)ROUND_BACKOFF_MS * 1000000) + 1000000;
        if (now + pause > deadline)
            pause = deadline - now;
        if (ac_etcd_sleep(pause, err) == -1)
            return -1;
    }
    return 0;
}

/* Apply one stream message. Returns 1 with ev filled, 0 to go on, 2 when
 * the stream must be replaced (w->last says why), -1 on a definitive
 * error. */
static int apply_msg(struct ac_etcd_watch *w, const char *line, size_t len,
                     struct ac_etcd_events *ev, int64_t deadline, struct ac_err *err)
{
    struct ac_etcdw_watch_msg m;
    struct ac_err perr = AC_ERR_INIT;
    size_t i, keep = 0;

    if (ac_etcdw_watch_msg(line, len, &m, &perr) == -1) {
        ac_err_set(err, AC_EXIT_GENERAL, perr.code, "etcd %s: watch: %s", w->e->endpoints[w->ep],
                   perr.msg);
        return -1;
    }
    if (m.is_error || (m.canceled && m.compact_revision == 0)) {
        int transient;
        const char *code = ac_etcdw_classify(m.grpc_code, m.message, &transient);
        if (w->e->token && strstr(m.message, "invalid auth token")) {
            /* The token expired: a new one on the next stream. */
            ac_etcd_drop_token(w->e);
            transient = 1;
        }
        ac_etcd_events_free(&m.ev);
        if (transient || (m.is_error && !m.message[0])) {
            if (stream_failed(w, code, m.message[0] ? m.message : "stream ended", deadline,
                              err) == -1)
                return -1;
            return 2;
        }
        return ac_err_set(err, AC_EXIT_GENERAL, m.canceled ? "ETCD_WATCH_CANCELED" : code,
                          "etcd %s: watch %s: %s", w->e->endpoints[w->ep],
                          m.canceled ? "canceled" : "failed", m.message);
    }
    if (m.canceled) {
        ac_etcd_events_free(&m.ev);
        w->compacted = m.compact_revision;
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_COMPACTED",
                          "etcd: watch from revision %lld: history compacted up to revision %lld",
                          (long long)w->next_rev, (long long)m.compact_revision);
    }
    if (!ev && m.ev.nevents > 0) {
        ac_etcd_events_free(&m.ev);
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_BAD_REPLY",
                          "etcd %s: watch: events before the watch was created",
                          w->e->endpoints[w->ep]);
    }
    if (m.created) {
        w->created = 1;
        w->down_since = 0;
        w->failed_tries = 0;
        /* From now on: the watch covers revisions after the store's
         * revision at creation, or (a write racing the creation) from that
         * revision itself; starting at it can only repeat, never miss. */
        if (w->next_rev == 0)
            w->next_rev = m.header_revision > 0 ? m.header_revision : 1;
    }
    /* Drop what an earlier stream delivered already. */
    for (i = 0; i < m.ev.nevents; i++) {
        if (m.ev.events[i].kv.mod_revision < w->next_rev) {
            ac_etcd_kv_free(&m.ev.events[i].kv);
            ac_etcd_kv_free(&m.ev.events[i].prev_kv);
            continue;
        }
        if (keep != i)
            m.ev.events[keep] = m.ev.events[i];
        keep++;
    }
    m.ev.nevents = keep;
    if (keep == 0) {
        ac_etcd_events_free(&m.ev);
        return 0;
    }
    w->next_rev = m.ev.events[keep - 1].kv.mod_revision + 1;
    *ev = m.ev;
    return 1;
}

/* Apply the complete lines in the buffer until one yields events (or,
 * with ev NULL, until the watch is created: ac_etcd_watch_open leaves the
 * events after it for ac_etcd_watch_next). */
static int drain(struct ac_etcd_watch *w, struct ac_etcd_events *ev, int64_t deadline,
                 struct ac_err *err)
{
    size_t off = 0;
    int r = 0;
    while (r == 0 && off < w->buf.len && (ev || !w->created)) {
        char *nl = memchr(w->buf.data + off, '\n', w->buf.len - off);
        size_t len;
        if (!nl)
            break;
        len = (size_t)(nl - (w->buf.data + off));
        if (len > 0)
            r = apply_msg(w, w->buf.data + off, len, ev, deadline, err);
        off += len + 1;
    }
    if (r == 2) {
        w->buf.len = 0;   /* the old stream's leftovers are replayed */
        return 2;
    }
    if (off > 0) {
        memmove(w->buf.data, w->buf.data + off, w->buf.len - off);
        w->buf.len -= off;
    }
    return r;
}

/* The transfer ended: say why (w->last) and whether to go on. Returns 0
 * (reconnect), -1 (definitive, err filled). */
static int stream_ended(struct ac_etcd_watch *w, int64_t deadline, struct ac_err *err)
{
    struct ac_etcd *e = w->e;
    long status = w->status;
    if (w->result == CURLE_ABORTED_BY_CALLBACK)
        return ac_etcd_interrupted(err);
    if (w->too_large)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_REPLY_TOO_LARGE",
                          "etcd %s: watch message larger than %zu bytes", e->endpoints[w->ep],
                          e->max_reply);
    if (w->result == CURLE_OUT_OF_MEMORY || w->buf.oom)
        return nomem(err);
    if (w->result == CURLE_OK && status != 200 && status != 0) {
        /* Refused before streaming: a unary-style error body. */
        json_t *o = w->buf.len ? json_loadb(w->buf.data, w->buf.len, 0, NULL) : NULL;
        int grpc = 0, transient = 1;
        const char *message = NULL, *code = "ETCD_UNAVAILABLE";
        char why[300];
        if (o && json_is_object(o) && ac_etcdw_error_of(o, &grpc, &message)) {
            code = ac_etcdw_classify(grpc, message, &transient);
        } else if (status < 500) {
            json_decref(o);
            return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_BAD_REPLY",
                              "etcd %s: watch: HTTP %ld without an etcd error (not an etcd v3 "
                              "gateway?)",
                              e->endpoints[w->ep], status);
        }
        if (e->token && message && strstr(message, "invalid auth token")) {
            ac_etcd_drop_token(e);    /* expired: a new one for the next stream */
            transient = 1;
        }
        snprintf(why, sizeof why, "HTTP %ld%s%s", status, message ? ": " : "",
                 message ? message : "");
        json_decref(o);
        if (!transient && status < 500) {
            char q[300];
            return ac_err_set(err, AC_EXIT_GENERAL, code, "etcd %s: watch: %s",
                              e->endpoints[w->ep], ac_err_quote(q, sizeof q, why, 240));
        }
        return stream_failed(w, code, why, deadline, err);
    }
    if (ac_etcd_tls_refused(w->result, w->errbuf))
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_TLS", "etcd %s: watch: TLS: %s",
                          e->endpoints[w->ep], w->errbuf);
    if (w->result != CURLE_OK)
        return stream_failed(w, w->result == CURLE_SSL_CONNECT_ERROR ? "ETCD_TLS"
                                                                       : "ETCD_UNAVAILABLE",
                             w->errbuf[0] ? w->errbuf : ac_curl.easy_strerror(w->result), deadline,
                             err);
    return stream_failed(w, "ETCD_UNAVAILABLE", "the member closed the stream", deadline, err);
}

/* A silent stream: is its member still there and does it have a leader? */
static int probe(struct ac_etcd_watch *w, int64_t deadline, struct ac_err *err)
{
    struct ac_etcd *e = w->e;
    struct ac_etcd_status st;
    struct ac_err perr = AC_ERR_INIT;
    int64_t now = ac_clock_mono_ns(), left = deadline - now, t;
    /* A short probe that fails only costs a needless reconnect; a probe
     * that ran past the caller's deadline by a whole request timeout would
     * make every short wait long. */
    t = left < (int64_t)e->request_ms * 1000000 ? left : (int64_t)e->request_ms * 1000000;
    if (t < 100000000)
        t = 100000000;
    if (ac_etcd_status(e, w->ep, &st, now + t, &perr) == 0 && st.leader != 0) {
        w->last_data = ac_clock_mono_ns();
        return 0;
    }
    return stream_failed(w, perr.code ? perr.code : "ETCD_NO_LEADER",
                         perr.code ? perr.msg : "the member knows no leader", deadline, err);
}

/* Run the stream until events, the deadline, or a definitive error. */
static int run(struct ac_etcd_watch *w, int64_t deadline, struct ac_etcd_events *ev,
               int want_created, struct ac_err *err)
{
    struct ac_etcd *e = w->e;
    for (;;) {
        int64_t now, wait;
        int r;
        if (!w->attached && start_stream(w, deadline, err) == -1)
            return -1;
        r = drain(w, ev, deadline, err);
        if (r == -1 || r == 1)
            return r;
        if (r == 2)
            continue;         /* a new stream, on the next member */
        if (want_created && w->created)
            return 0;
        if (w->extra_ready)
            return 2;
        if (w->ended && w->result == CURLE_OK && w->status == 200 && w->buf.len > 0 &&
            w->buf.data[w->buf.len - 1] != '\n') {
            /* The stream ended cleanly in the middle of a line: the server
             * sent that line whole but without its newline. Read it like
             * the others (a truncated message would not end cleanly). */
            ac_buf_putc(&w->buf, '\n');
            if (w->buf.oom)
                return nomem(err);
            continue;
        }
        if (w->ended) {
            if (stream_ended(w, deadline, err) == -1)
                return -1;
            continue;
        }
        if (ac_clock_interrupted())
            return ac_etcd_interrupted(err);
        now = ac_clock_mono_ns();
        if (now >= deadline) {
            if (want_created && w->down_since)
                return give_up(w, now, err);
            if (want_created)
                return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_TIMEOUT",
                                  "etcd %s: watch not confirmed before the deadline",
                                  e->endpoints[w->ep]);
            return 0;
        }
        if (w->created && now - w->last_data >= (int64_t)e->probe_ms * 1000000) {
            if (probe(w, deadline, err) == -1)
                return -1;
            continue;
        }
        wait = (deadline - now) / 1000000 + 1;
        if (wait > POLL_SLICE_MS)
            wait = POLL_SLICE_MS;
        if (w->created) {
            int64_t to_probe = (w->last_data + (int64_t)e->probe_ms * 1000000 - now) / 1000000 + 1;
            if (to_probe < wait)
                wait = to_probe;
        }
        if (pump(w, (long)wait, err) == -1)
            return -1;
    }
}

int ac_etcd_watch_open(struct ac_etcd *e, const struct ac_etcd_watch_req *req,
                       struct ac_etcd_watch **out, int64_t deadline, struct ac_err *err)
{
    struct ac_etcd_watch *w;
    size_t klen, elen = 0;
    *out = NULL;
    if (!req->keys.key)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID", "etcd watch without a key");
    if (req->start_revision < 0)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID",
                          "etcd watch from a negative revision");
    deadline = ac_etcd_resolve_deadline(e, deadline);
    if (ac_etcd_need_curl(e, err) == -1)      /* watches stream through libcurl */
        return -1;
    w = calloc(1, sizeof *w);
    if (!w)
        return nomem(err);
    w->e = e;
    w->extra_fd = -1;
    e->nwatches++;
    klen = req->keys.key_len ? req->keys.key_len : strlen(req->keys.key);
    if (req->keys.end)
        elen = req->keys.end_len ? req->keys.end_len : strlen(req->keys.end);
    w->key = malloc(klen + 1);
    w->end = req->keys.end ? malloc(elen + 1) : NULL;
    w->multi = ac_curl.multi_init();
    w->easy = ac_etcd_easy_new(e);
    if (!w->key || (req->keys.end && !w->end) || !w->multi || !w->easy) {
        nomem(err);
        goto fail;
    }
    memcpy(w->key, req->keys.key, klen);
    w->key[klen] = '\0';
    if (w->end) {
        memcpy(w->end, req->keys.end, elen);
        w->end[elen] = '\0';
    }
    w->req = *req;
    w->req.keys.key = w->key;
    w->req.keys.key_len = klen;
    w->req.keys.end = w->end;
    w->req.keys.end_len = elen;
    if (klen == 0 && !req->keys.prefix) {
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_INVALID", "etcd watch of an empty key");
        goto fail;
    }
    w->next_rev = req->start_revision;
    w->ep = e->cur;
    if (run(w, deadline, NULL, 1, err) == -1)
        goto fail;
    *out = w;
    return 0;
fail:
    ac_etcd_scrub(e, err);
    ac_etcd_watch_close(w);
    return -1;
}

int ac_etcd_watch_next_fd(struct ac_etcd_watch *w, int64_t deadline, int fd,
                          struct ac_etcd_events *ev, struct ac_err *err)
{
    int r;
    memset(ev, 0, sizeof *ev);
    w->extra_fd = fd;
    w->extra_ready = 0;
    r = run(w, ac_etcd_resolve_deadline(w->e, deadline), ev, 0, err);
    w->extra_fd = -1;
    w->extra_ready = 0;
    if (r == -1)
        ac_etcd_scrub(w->e, err);
    return r;
}

int ac_etcd_watch_next(struct ac_etcd_watch *w, int64_t deadline, struct ac_etcd_events *ev,
                       struct ac_err *err)
{
    return ac_etcd_watch_next_fd(w, deadline, -1, ev, err);
}

int64_t ac_etcd_watch_revision(const struct ac_etcd_watch *w)
{
    return w->next_rev;
}

size_t ac_etcd_watch_endpoint(const struct ac_etcd_watch *w)
{
    return w->ep;
}

unsigned ac_etcd_watch_reconnects(const struct ac_etcd_watch *w)
{
    return w->reconnects;
}

int64_t ac_etcd_watch_compacted(const struct ac_etcd_watch *w)
{
    return w->compacted;
}

void ac_etcd_watch_close(struct ac_etcd_watch *w)
{
    if (!w)
        return;
    detach(w);
    if (w->easy)
        ac_curl.easy_cleanup(w->easy);
    if (w->multi)
        ac_curl.multi_cleanup(w->multi);
    ac_curl.slist_free_all(w->headers);
    free(w->body);
    free(w->key);
    free(w->end);
    ac_buf_free(&w->buf);
    w->e->nwatches--;
    free(w);
}
