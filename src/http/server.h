/*
 * server.h - the HTTP server of `agent-chat serve` (docs/web.md): a
 * read-only view of a store, answered by one Lua-owning loop.
 *
 * Threads. The Lua API, like the store handles under it, belongs to one
 * thread. libmicrohttpd runs a thread per connection (MHD's
 * MHD_USE_THREAD_PER_CONNECTION): it parses requests, refuses what is
 * never allowed (a method other than GET and HEAD: 405; a body: 413; a
 * Host that is not a loopback name when no token is set: 403; a missing or
 * wrong token: 401), queues the rest as jobs and blocks until they are
 * answered. The caller's loop (the thread that owns Lua) takes jobs with
 * ac_httpd_next and answers each with ac_httpd_respond or turns it into an
 * event stream with ac_httpd_stream: every store call happens there. An
 * event stream is a connection thread that sleeps on a condition variable
 * until the loop publishes to its hub (ac_httpd_publish), with a comment
 * line every 15 s so that a closed client is noticed.
 *
 * Change notification. A store notifies per channel (store.h:
 * watch_wait_fd waits for one channel and one descriptor), so a hub has a
 * watcher thread that waits on its own channel handle, opened for it alone
 * (ac_httpd_hub takes it over: no other thread touches that handle or its
 * store while the server runs), and tells the loop "this channel may have
 * changed" through the loop's eventfd. Nothing polls: with nothing
 * happening every thread sleeps (0 CPU); a store that cannot notify has
 * its watcher rescan every AC_HTTPD_RESCAN_MS.
 *
 * Calling sequence (one thread, the Lua one):
 *     struct ac_httpd *h = ac_httpd_start(&opts, &err);
 *     for (;;) {
 *         rc = ac_httpd_next(h, INT64_MAX, &item, &err);   // -1: INTERRUPTED
 *         if (item.kind == AC_HTTPD_REQUEST)
 *             ac_httpd_respond(h, item.id, 200, "text/html", body, len);
 *         else                                             // AC_HTTPD_CHANGE
 *             ac_httpd_publish(h, item.hub, text, len);
 *         ac_httpd_item_free(&item);
 *     }
 *     ac_httpd_stop(h);        // ends the streams, joins every thread
 *
 * Errors: 0 or -1 with err (SERVE_LISTEN when the address cannot be bound,
 * SERVE_UNAVAILABLE without libmicrohttpd, SERVE_LIMIT for too many hubs,
 * IO_ERROR, INTERRUPTED exit 130 from ac_httpd_next on SIGINT/SIGTERM).
 * Signals: SIGINT and SIGTERM are blocked in the connection threads, so
 * they reach the loop (or a watcher, which wakes the loop).
 */
#ifndef AGENTCHAT_HTTP_SERVER_H
#define AGENTCHAT_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "agentchat/err.h"

struct ac_chan;
struct ac_httpd;

#define AC_HTTPD_MAX_HUBS 64
#define AC_HTTPD_RESCAN_MS 2000
#define AC_HTTPD_MAX_URL 2048       /* longer: 414 */

struct ac_httpd_opts {
    const char *host;            /* a numeric address: 127.0.0.1, ::1, 0.0.0.0 */
    unsigned port;               /* 0: any free port (ac_httpd_port says which) */
    const char *token;           /* required on every request (NULL: none) */
    int check_host;              /* refuse a Host header other than a loopback
                                    name (DNS rebinding of a loopback server) */
    unsigned max_streams;        /* concurrent event streams; 503 beyond */
    unsigned max_connections;    /* concurrent connections */
    unsigned header_limit;       /* bytes of request line and headers */
};

enum { AC_HTTPD_NONE = 0, AC_HTTPD_REQUEST = 1, AC_HTTPD_CHANGE = 2 };

struct ac_httpd_item {
    int kind;
    uint64_t id;                 /* REQUEST: what respond/stream answer */
    int head;                    /* REQUEST: a HEAD request */
    char *path;                  /* REQUEST: the path, percent-decoded */
    char **args;                 /* REQUEST: query arguments, key and value
                                    alternating (the token left out) */
    size_t nargs;                /* REQUEST: pairs in args */
    char *last_event_id;         /* REQUEST: the Last-Event-ID header or NULL */
    int hub;                     /* CHANGE: the hub whose channel may have changed */
};

struct ac_httpd *ac_httpd_start(const struct ac_httpd_opts *o, struct ac_err *err);

/* The port it listens on. */
unsigned ac_httpd_port(const struct ac_httpd *h);

/* Wait up to timeout_ns (INT64_MAX: no limit) for the next job or change:
 * 1 with *out filled, 0 on timeout (out->kind NONE), -1 INTERRUPTED. */
int ac_httpd_next(struct ac_httpd *h, int64_t timeout_ns, struct ac_httpd_item *out,
                  struct ac_err *err);
void ac_httpd_item_free(struct ac_httpd_item *it);

/* Answer job `id` (the body is copied). -1 when there is no such job
 * waiting (answered already, or the server stops). */
int ac_httpd_respond(struct ac_httpd *h, uint64_t id, unsigned status, const char *ctype,
                     const char *body, size_t len);

/* Answer job `id` with an event stream of hub `hub`: `pre` first (the
 * events a reconnecting client missed), then every event published from
 * now on. 0; 1 when max_streams are open (the job got 503); -1 no job. */
int ac_httpd_stream(struct ac_httpd *h, uint64_t id, int hub, const char *pre, size_t prelen);

/* The hub of channel `name`, made on first use: takes over `ch` (a handle
 * of its own, see above), opens its watch now (a change from here on is
 * reported) and starts its watcher. Returns the hub index, or -1 with err.
 * A later call with the same name returns the same hub and leaves `ch`
 * to the caller (*taken 0; 1 when the hub took it). */
int ac_httpd_hub(struct ac_httpd *h, const char *name, struct ac_chan *ch, int *taken,
                 struct ac_err *err);

/* Send `text` (whole SSE events) to every stream of hub `hub`. */
int ac_httpd_publish(struct ac_httpd *h, int hub, const char *text, size_t len);

/* Stop: pending jobs get 503, streams end, every thread is joined, the
 * hubs' channel handles are given back unwatched (the caller closes them). */
void ac_httpd_stop(struct ac_httpd *h);

#endif
