/* server.c - the HTTP server of `agent-chat serve`; see src/http/server.h. */
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agentchat/clock.h"
#include "agentchat/sha256.h"
#include "agentchat/store.h"
#include "http/mhdapi.h"

#define RING 512                 /* events a hub keeps for slow streams */
#define KEEPALIVE_S 15           /* a comment line this often on a quiet stream */
#define WATCH_SLICE_NS (60LL * 1000000000)

/* The security headers of every answer: nothing is framed, sniffed,
 * cached or sent as a referrer, and the page runs only its own script
 * (an injected inline script would not run even if escaping failed). */
static const char *const CSP =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

struct job {
    struct job *next;
    uint64_t id;
    int head;
    char *path;
    char **args;
    size_t nargs;
    char *last_event_id;
    int taken;                   /* handed to the loop */
    int answered;
    unsigned status;
    char *ctype;
    char *body;
    size_t len;
    int stream_hub;              /* -1: a plain answer */
    uint64_t stream_pos;         /* the hub's first event for the stream */
    char *pre;
    size_t prelen;
};

struct event {
    char *text;
    size_t len;
};

struct hub {
    char *name;
    struct ac_chan *ch;
    struct ac_watch *w;          /* owned by the watcher thread while it runs */
    int stopfd;
    pthread_t thread;
    int running;
    int changed;                 /* under mu: the loop has not looked yet */
    struct event ring[RING];
    uint64_t next;               /* events published so far */
    struct ac_httpd *h;
};

struct ac_httpd {
    struct ac_httpd_opts o;
    char *token;
    struct MHD_Daemon *d;
    int listen_fd;
    unsigned port;
    int wakefd;                  /* eventfd: the loop's wake-up */
    pthread_mutex_t mu;
    pthread_cond_t answered;     /* a job was answered, or stopping */
    pthread_cond_t events;       /* a hub got events, or stopping */
    struct job *queue, *queue_tail;   /* not taken yet */
    struct job *taken;           /* taken, not answered */
    uint64_t next_id;
    int stopping;
    unsigned streams;
    struct hub *hubs[AC_HTTPD_MAX_HUBS];
    int nhubs;
};

struct stream {
    struct ac_httpd *h;
    struct hub *hub;
    uint64_t pos;                /* the next event of the hub to send */
    size_t off;                  /* bytes of it sent */
    char *pre;                   /* the catch-up text, then control lines */
    size_t prelen, preoff;
    char ctl[96];
    size_t ctllen, ctloff;
};

static void wake(int fd)
{
    /* eventfd_write, not write(2): a counter, never a file of the store. */
    (void)eventfd_write(fd, 1);
}

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* ---- answers ---- */

static enum MHD_Result send_answer(struct MHD_Connection *c, unsigned status, const char *ctype,
                                   char *body, size_t len, enum MHD_ResponseMemoryMode mode,
                                   const char *hname, const char *hvalue)
{
    struct MHD_Response *r = ac_mhd.create_response_from_buffer(len, body, mode);
    enum MHD_Result ret;
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    ac_mhd.add_response_header(r, "Content-Type", ctype);
    ac_mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
    ac_mhd.add_response_header(r, "Cache-Control", "no-store");
    ac_mhd.add_response_header(r, "Referrer-Policy", "no-referrer");
    ac_mhd.add_response_header(r, "X-Frame-Options", "DENY");
    ac_mhd.add_response_header(r, "Content-Security-Policy", CSP);
    if (hname)
        ac_mhd.add_response_header(r, hname, hvalue);
    ret = ac_mhd.queue_response(c, status, r);
    ac_mhd.destroy_response(r);
    return ret;
}

static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *text,
                              const char *hname, const char *hvalue)
{
    return send_answer(c, status, "text/plain; charset=utf-8", (char *)text, strlen(text),
                       MHD_RESPMEM_PERSISTENT, hname, hvalue);
}

/* ---- event streams ---- */

static size_t take(char *dst, size_t room, const char *src, size_t len, size_t *off)
{
    size_t k = len - *off < room ? len - *off : room;
    memcpy(dst, src + *off, k);
    *off += k;
    return k;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *s = cls;
    struct ac_httpd *h = s->h;
    struct hub *hb = s->hub;
    size_t n = 0;
    (void)pos;

    if (s->preoff < s->prelen)
        return (ssize_t)take(buf, max, s->pre, s->prelen, &s->preoff);
    if (s->ctloff < s->ctllen)
        return (ssize_t)take(buf, max, s->ctl, s->ctllen, &s->ctloff);
    pthread_mutex_lock(&h->mu);
    for (;;) {
        struct timespec ts;
        if (h->stopping) {
            pthread_mutex_unlock(&h->mu);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (hb->next > RING && s->pos < hb->next - RING) {
            /* Too slow: the events it missed are gone. The page reloads
             * its data on "reset"; a half-sent event is ended first. */
            s->ctllen = (size_t)snprintf(s->ctl, sizeof s->ctl, "%sevent: reset\ndata: {}\n\n",
                                         s->off ? "\n\n" : "");
            s->ctloff = 0;
            s->pos = hb->next;
            s->off = 0;
            n = take(buf, max, s->ctl, s->ctllen, &s->ctloff);
            break;
        }
        if (s->pos < hb->next) {
            while (s->pos < hb->next && n < max) {
                const struct event *e = &hb->ring[s->pos % RING];
                n += take(buf + n, max - n, e->text, e->len, &s->off);
                if (s->off == e->len) {
                    s->pos++;
                    s->off = 0;
                }
            }
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += KEEPALIVE_S;
        if (pthread_cond_timedwait(&h->events, &h->mu, &ts) == ETIMEDOUT && !h->stopping &&
            s->pos == hb->next) {
            s->ctllen = (size_t)snprintf(s->ctl, sizeof s->ctl, ": keepalive\n\n");
            s->ctloff = 0;
            n = take(buf, max, s->ctl, s->ctllen, &s->ctloff);
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct stream *s = cls;
    pthread_mutex_lock(&s->h->mu);
    s->h->streams--;
    pthread_mutex_unlock(&s->h->mu);
    free(s->pre);
    free(s);
}

static enum MHD_Result send_stream(struct ac_httpd *h, struct MHD_Connection *c, struct job *j)
{
    struct stream *s = calloc(1, sizeof *s);
    struct MHD_Response *r;
    enum MHD_Result ret;
    if (!s) {
        pthread_mutex_lock(&h->mu);
        h->streams--;
        pthread_mutex_unlock(&h->mu);
        return MHD_NO;
    }
    s->h = h;
    s->hub = h->hubs[j->stream_hub];
    s->pos = j->stream_pos;
    s->pre = j->pre;
    s->prelen = j->prelen;
    j->pre = NULL;
    r = ac_mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, s, stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    ac_mhd.add_response_header(r, "Content-Type", "text/event-stream; charset=utf-8");
    ac_mhd.add_response_header(r, "Cache-Control", "no-store");
    ac_mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
    ac_mhd.add_response_header(r, "X-Accel-Buffering", "no");
    ret = ac_mhd.queue_response(c, 200, r);
    ac_mhd.destroy_response(r);
    return ret;
}

/* ---- requests (in the connection threads) ---- */

struct args_acc {
    char **v;
    size_t n, cap;
    int failed;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct args_acc *a = cls;
    (void)kind;
    if (!key || strcmp(key, "token") == 0)
        return MHD_YES;
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        char **v;
        if (cap > 256) {                 /* a bound on what one URL can ask */
            a->failed = 1;
            return MHD_NO;
        }
        v = realloc(a->v, cap * sizeof *v);
        if (!v) {
            a->failed = 1;
            return MHD_NO;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n] = strdup(key);
    a->v[a->n + 1] = strdup(value ? value : "");
    a->n += 2;
    if (!a->v[a->n - 2] || !a->v[a->n - 1])
        a->failed = 1;
    return MHD_YES;
}

static void free_strv(char **v, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void job_free(struct job *j)
{
    if (!j)
        return;
    free(j->path);
    free_strv(j->args, j->nargs * 2);
    free(j->last_event_id);
    free(j->ctype);
    free(j->body);
    free(j->pre);
    free(j);
}

/* Constant time in the token's bytes: both sides are hashed first, so the
 * time of the comparison depends on neither length nor contents. */
static int token_ok(const struct ac_httpd *h, const char *given)
{
    unsigned char a[AC_SHA256_LEN], b[AC_SHA256_LEN];
    unsigned diff = 0;
    size_t i;
    if (!given)
        return 0;
    ac_sha256(h->token, strlen(h->token), a);
    ac_sha256(given, strlen(given), b);
    for (i = 0; i < AC_SHA256_LEN; i++)
        diff |= (unsigned)(a[i] ^ b[i]);
    return diff == 0;
}

static const char *bearer(const char *auth)
{
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return NULL;
    auth += 7;
    while (*auth == ' ')
        auth++;
    return auth;
}

/* A Host header naming the loopback: localhost, 127.0.0.1 or [::1], with
 * any port. */
static int host_ok(const char *host)
{
    char name[64];
    size_t n;
    if (!host)
        return 0;
    if (host[0] == '[') {
        const char *end = strchr(host, ']');
        if (!end)
            return 0;
        n = (size_t)(end - host) + 1;
    } else {
        n = strcspn(host, ":");
    }
    if (n == 0 || n >= sizeof name)
        return 0;
    memcpy(name, host, n);
    name[n] = 0;
    return strcasecmp(name, "localhost") == 0 || strcmp(name, "127.0.0.1") == 0 ||
           strcmp(name, "[::1]") == 0;
}

static int seen_marker, body_marker;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    struct ac_httpd *h = cls;
    struct args_acc acc = { NULL, 0, 0, 0 };
    struct job *j;
    enum MHD_Result ret;
    int head = strcmp(method, "HEAD") == 0;
    (void)version;
    (void)upload_data;

    if (*req_cls == NULL) {
        *req_cls = &seen_marker;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *req_cls = &body_marker;         /* read and dropped: refused below */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!head && strcmp(method, "GET") != 0)
        return refuse(c, 405, "read-only: only GET and HEAD\n", "Allow", "GET, HEAD");
    if (*req_cls == &body_marker)
        return refuse(c, 413, "a request has no body here\n", NULL, NULL);
    if (h->o.check_host &&
        !host_ok(ac_mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Host")))
        return refuse(c, 403, "Host is not a loopback name\n", NULL, NULL);
    if (h->token) {
        const char *given = bearer(ac_mhd.lookup_connection_value(c, MHD_HEADER_KIND,
                                                                  "Authorization"));
        if (!given)
            given = ac_mhd.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
        if (!token_ok(h, given))
            return refuse(c, 401, "a token is required\n", "WWW-Authenticate",
                          "Bearer realm=\"agent-chat\"");
    }
    if (strlen(url) > AC_HTTPD_MAX_URL)
        return refuse(c, 414, "URL too long\n", NULL, NULL);

    j = calloc(1, sizeof *j);
    if (!j)
        return refuse(c, 503, "out of memory\n", NULL, NULL);
    j->stream_hub = -1;
    j->head = head;
    j->path = strdup(url);
    j->last_event_id = xstrdup(ac_mhd.lookup_connection_value(c, MHD_HEADER_KIND,
                                                              "Last-Event-ID"));
    ac_mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &acc);
    j->args = acc.v;
    j->nargs = acc.n / 2;
    if (!j->path || acc.failed) {
        job_free(j);
        return refuse(c, acc.failed ? 414 : 503, "request not taken\n", NULL, NULL);
    }

    pthread_mutex_lock(&h->mu);
    if (h->stopping) {
        pthread_mutex_unlock(&h->mu);
        job_free(j);
        return refuse(c, 503, "shutting down\n", NULL, NULL);
    }
    j->id = ++h->next_id;
    if (h->queue_tail)
        h->queue_tail->next = j;
    else
        h->queue = j;
    h->queue_tail = j;
    pthread_mutex_unlock(&h->mu);
    wake(h->wakefd);

    pthread_mutex_lock(&h->mu);
    while (!j->answered && !h->stopping)
        pthread_cond_wait(&h->answered, &h->mu);
    /* Off every list: queued or taken. */
    {
        struct job **pp, *prev = NULL;
        for (pp = &h->queue; *pp; prev = *pp, pp = &(*pp)->next) {
            if (*pp == j) {
                *pp = j->next;
                if (h->queue_tail == j)
                    h->queue_tail = prev;
                break;
            }
        }
        for (pp = &h->taken; *pp; pp = &(*pp)->next) {
            if (*pp == j) {
                *pp = j->next;
                break;
            }
        }
    }
    pthread_mutex_unlock(&h->mu);

    if (!j->answered) {
        ret = refuse(c, 503, "shutting down\n", NULL, NULL);
    } else if (j->stream_hub >= 0) {
        ret = send_stream(h, c, j);
    } else {
        char *body = j->body;
        j->body = NULL;
        ret = send_answer(c, j->status, j->ctype ? j->ctype : "text/plain", body, j->len,
                          MHD_RESPMEM_MUST_FREE, NULL, NULL);
    }
    job_free(j);
    return ret;
}

/* ---- the watchers ---- */

static void *watcher(void *arg)
{
    struct hub *hb = arg;
    struct ac_httpd *h = hb->h;
    for (;;) {
        int rc;
        if (hb->w) {
            rc = ac_chan_watch_wait_fd(hb->ch, hb->w, WATCH_SLICE_NS, hb->stopfd);
            if (rc == -1 && errno != EINTR) {
                /* Notification broke down (or the backend cannot wait for
                 * a descriptor too): rescan from now on, as wait.c does. */
                ac_chan_watch_close(hb->ch, hb->w);
                hb->w = NULL;
                rc = 1;
            }
        } else {
            struct pollfd pfd = { hb->stopfd, POLLIN, 0 };
            rc = ac_clock_poll_until(&pfd, 1, ac_clock_mono_ns() + AC_HTTPD_RESCAN_MS * 1000000LL);
            rc = rc == 1 ? 2 : rc == 0 ? 1 : rc;
        }
        if (rc == -1) {
            /* SIGINT or SIGTERM landed in this thread: the loop must hear
             * of it (its own wait may not have been interrupted); then
             * wait for the stop. */
            struct pollfd pfd = { hb->stopfd, POLLIN, 0 };
            wake(h->wakefd);
            while (poll(&pfd, 1, -1) == -1 && errno == EINTR) {
            }
            break;
        }
        if (rc & 2)
            break;
        if (rc & 1) {
            pthread_mutex_lock(&h->mu);
            hb->changed = 1;
            pthread_mutex_unlock(&h->mu);
            wake(h->wakefd);
        }
    }
    return NULL;
}

int ac_httpd_hub(struct ac_httpd *h, const char *name, struct ac_chan *ch, int *taken,
                 struct ac_err *err)
{
    struct hub *hb;
    int i;
    *taken = 0;
    for (i = 0; i < h->nhubs; i++)
        if (strcmp(h->hubs[i]->name, name) == 0)
            return i;
    if (h->nhubs == AC_HTTPD_MAX_HUBS)
        return ac_err_set(err, AC_EXIT_GENERAL, "SERVE_LIMIT",
                          "at most %d channels can be streamed at once", AC_HTTPD_MAX_HUBS);
    hb = calloc(1, sizeof *hb);
    if (!hb || !(hb->name = strdup(name))) {
        free(hb);
        return ac_err_set(err, AC_EXIT_GENERAL, "IO_ERROR", "out of memory");
    }
    hb->h = h;
    hb->ch = ch;
    hb->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (hb->stopfd == -1) {
        int e = errno;
        free(hb->name);
        free(hb);
        return ac_err_sys(err, e, "IO_ERROR", "could not make an eventfd");
    }
    /* Opened here, before the caller's next scan: a change from now on
     * wakes the watcher. */
    hb->w = ac_chan_watch_open(ch, AC_WATCH_MESSAGES, 0);
    if (pthread_create(&hb->thread, NULL, watcher, hb) != 0) {
        if (hb->w)
            ac_chan_watch_close(ch, hb->w);
        close(hb->stopfd);
        free(hb->name);
        free(hb);
        return ac_err_set(err, AC_EXIT_GENERAL, "IO_ERROR", "could not start a watcher thread");
    }
    hb->running = 1;
    h->hubs[h->nhubs] = hb;
    *taken = 1;
    return h->nhubs++;
}

/* ---- the loop's side ---- */

static int open_listener(struct ac_httpd *h, struct ac_err *err)
{
    struct addrinfo hints, *ai = NULL;
    char port[16];
    int fd, one = 1, rc, e;
    union {
        struct sockaddr sa;
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
    } got;
    socklen_t len = sizeof got;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    snprintf(port, sizeof port, "%u", h->o.port);
    rc = getaddrinfo(h->o.host, port, &hints, &ai);
    if (rc != 0 || !ai)
        return ac_err_set(err, AC_EXIT_USAGE, "SERVE_LISTEN",
                          "--listen: '%s' is not a numeric IPv4 or IPv6 address", h->o.host);
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        e = errno;
        freeaddrinfo(ai);
        return ac_err_sys(err, e, "SERVE_LISTEN", "could not make a socket");
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == -1 || listen(fd, 64) == -1) {
        e = errno;
        freeaddrinfo(ai);
        close(fd);
        return ac_err_sys(err, e, "SERVE_LISTEN", "could not listen on %s port %u", h->o.host,
                          h->o.port);
    }
    freeaddrinfo(ai);
    if (getsockname(fd, &got.sa, &len) == 0)
        h->port = ntohs(got.sa.sa_family == AF_INET6 ? got.in6.sin6_port : got.in.sin_port);
    h->listen_fd = fd;
    return 0;
}

struct ac_httpd *ac_httpd_start(const struct ac_httpd_opts *o, struct ac_err *err)
{
    struct ac_httpd *h;
    pthread_condattr_t ca;
    sigset_t all, old;

    if (ac_mhd_load(err) == -1)
        return NULL;
    h = calloc(1, sizeof *h);
    if (!h) {
        ac_err_set(err, AC_EXIT_GENERAL, "IO_ERROR", "out of memory");
        return NULL;
    }
    h->o = *o;
    h->listen_fd = -1;
    h->token = o->token && *o->token ? strdup(o->token) : NULL;
    h->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (h->wakefd == -1) {
        ac_err_sys(err, errno, "IO_ERROR", "could not make an eventfd");
        free(h->token);
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->answered, &ca);
    pthread_cond_init(&h->events, &ca);
    pthread_condattr_destroy(&ca);
    if (open_listener(h, err) == -1) {
        ac_httpd_stop(h);
        return NULL;
    }
    /* The connection threads inherit this mask: no signal for them, so
     * SIGINT and SIGTERM reach the loop. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    h->d = ac_mhd.start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
        0, NULL, NULL, on_request, h,
        MHD_OPTION_LISTEN_SOCKET, h->listen_fd,
        MHD_OPTION_CONNECTION_LIMIT, o->max_connections ? o->max_connections : 64u,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->max_connections ? o->max_connections : 64u,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(o->header_limit ? o->header_limit : 16384u),
        MHD_OPTION_CONNECTION_TIMEOUT, 60u,
        MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!h->d) {
        ac_err_set(err, AC_EXIT_GENERAL, "SERVE_LISTEN", "could not start the HTTP server on %s port %u",
                   o->host, h->port);
        ac_httpd_stop(h);
        return NULL;
    }
    h->listen_fd = -1;               /* the daemon's now */
    return h;
}

unsigned ac_httpd_port(const struct ac_httpd *h)
{
    return h->port;
}

void ac_httpd_item_free(struct ac_httpd_item *it)
{
    free(it->path);
    free_strv(it->args, it->nargs * 2);
    free(it->last_event_id);
    memset(it, 0, sizeof *it);
}

/* Under mu: the next thing for the loop, 1 when *out was filled. */
static int pick(struct ac_httpd *h, struct ac_httpd_item *out)
{
    struct job *j = h->queue;
    int i;
    size_t k;
    if (j) {
        h->queue = j->next;
        if (!h->queue)
            h->queue_tail = NULL;
        j->next = h->taken;
        h->taken = j;
        j->taken = 1;
        out->kind = AC_HTTPD_REQUEST;
        out->id = j->id;
        out->head = j->head;
        out->path = strdup(j->path);
        out->last_event_id = xstrdup(j->last_event_id);
        out->nargs = j->nargs;
        out->args = j->nargs ? calloc(j->nargs * 2, sizeof *out->args) : NULL;
        for (k = 0; out->args && k < j->nargs * 2; k++)
            out->args[k] = strdup(j->args[k]);
        return 1;
    }
    for (i = 0; i < h->nhubs; i++) {
        if (h->hubs[i]->changed) {
            h->hubs[i]->changed = 0;
            out->kind = AC_HTTPD_CHANGE;
            out->hub = i;
            return 1;
        }
    }
    return 0;
}

int ac_httpd_next(struct ac_httpd *h, int64_t timeout_ns, struct ac_httpd_item *out,
                  struct ac_err *err)
{
    int64_t deadline = timeout_ns == INT64_MAX ? INT64_MAX : ac_clock_mono_ns() + timeout_ns;
    memset(out, 0, sizeof *out);
    for (;;) {
        struct pollfd pfd = { h->wakefd, POLLIN, 0 };
        eventfd_t v;
        int got, rc;
        (void)eventfd_read(h->wakefd, &v);    /* drain first: a wake after this is kept */
        pthread_mutex_lock(&h->mu);
        got = pick(h, out);
        pthread_mutex_unlock(&h->mu);
        if (got) {
            if (out->kind == AC_HTTPD_REQUEST && (!out->path || (out->nargs && !out->args))) {
                /* Out of memory copying it: answer it here. */
                uint64_t id = out->id;
                ac_httpd_item_free(out);
                ac_httpd_respond(h, id, 503, "text/plain", "out of memory\n", 14);
                continue;
            }
            return 1;
        }
        if (ac_clock_interrupted())
            return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
        rc = ac_clock_poll_until(&pfd, 1, deadline);
        if (rc == -1 && errno == EINTR)
            return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
        if (rc == -1)
            return ac_err_sys(err, errno, "IO_ERROR", "could not wait for requests");
        if (rc == 0)
            return 0;
    }
}

static struct job *find_taken(struct ac_httpd *h, uint64_t id)
{
    struct job *j;
    for (j = h->taken; j; j = j->next)
        if (j->id == id && !j->answered)
            return j;
    return NULL;
}

int ac_httpd_respond(struct ac_httpd *h, uint64_t id, unsigned status, const char *ctype,
                     const char *body, size_t len)
{
    struct job *j;
    char *copy = malloc(len ? len : 1);
    char *ct = strdup(ctype);
    if (!copy || !ct) {
        free(copy);
        free(ct);
        copy = NULL;
        ct = NULL;
        status = 503;
        len = 0;
    } else {
        memcpy(copy, body, len);
    }
    pthread_mutex_lock(&h->mu);
    j = find_taken(h, id);
    if (j) {
        j->status = status;
        j->ctype = ct;
        j->body = copy;
        j->len = len;
        j->answered = 1;
        pthread_cond_broadcast(&h->answered);
    }
    pthread_mutex_unlock(&h->mu);
    if (!j) {
        free(copy);
        free(ct);
        return -1;
    }
    return 0;
}

int ac_httpd_stream(struct ac_httpd *h, uint64_t id, int hub, const char *pre, size_t prelen)
{
    struct job *j;
    char *copy = prelen ? malloc(prelen) : NULL;
    int rc = 0;
    if (hub < 0 || hub >= h->nhubs || (prelen && !copy)) {
        free(copy);
        return ac_httpd_respond(h, id, 503, "text/plain", "no stream\n", 10) == 0 ? 1 : -1;
    }
    if (prelen)
        memcpy(copy, pre, prelen);
    pthread_mutex_lock(&h->mu);
    j = find_taken(h, id);
    if (j && h->streams >= h->o.max_streams) {
        rc = 1;
    } else if (j) {
        h->streams++;
        j->stream_hub = hub;
        /* The stream starts at the events published after this call: the
         * caller's catch-up text covers everything before, and the loop
         * publishes only after it returns (one thread). */
        j->stream_pos = h->hubs[hub]->next;
        j->pre = copy;
        j->prelen = prelen;
        copy = NULL;
        j->answered = 1;
        pthread_cond_broadcast(&h->answered);
    }
    pthread_mutex_unlock(&h->mu);
    free(copy);
    if (!j)
        return -1;
    if (rc == 1) {
        static const char busy[] = "too many event streams\n";
        ac_httpd_respond(h, id, 503, "text/plain; charset=utf-8", busy, sizeof busy - 1);
    }
    return rc;
}

int ac_httpd_publish(struct ac_httpd *h, int hub, const char *text, size_t len)
{
    struct hub *hb;
    struct event *e;
    char *copy;
    if (hub < 0 || hub >= h->nhubs)
        return -1;
    copy = malloc(len ? len : 1);
    if (!copy)
        return -1;
    memcpy(copy, text, len);
    hb = h->hubs[hub];
    pthread_mutex_lock(&h->mu);
    e = &hb->ring[hb->next % RING];
    free(e->text);
    e->text = copy;
    e->len = len;
    hb->next++;
    pthread_cond_broadcast(&h->events);
    pthread_mutex_unlock(&h->mu);
    return 0;
}

void ac_httpd_stop(struct ac_httpd *h)
{
    int i, k;
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_broadcast(&h->answered);
    pthread_cond_broadcast(&h->events);
    pthread_mutex_unlock(&h->mu);
    for (i = 0; i < h->nhubs; i++) {
        struct hub *hb = h->hubs[i];
        if (hb->running) {
            wake(hb->stopfd);
            pthread_join(hb->thread, NULL);
        }
        if (hb->w)
            ac_chan_watch_close(hb->ch, hb->w);
    }
    if (h->d)
        ac_mhd.stop_daemon(h->d);         /* joins the connection threads */
    if (h->listen_fd != -1)
        close(h->listen_fd);
    for (i = 0; i < h->nhubs; i++) {
        struct hub *hb = h->hubs[i];
        for (k = 0; k < RING; k++)
            free(hb->ring[k].text);
        close(hb->stopfd);
        free(hb->name);
        free(hb);
    }
    /* Jobs still listed belong to connection threads, which are gone. */
    pthread_cond_destroy(&h->answered);
    pthread_cond_destroy(&h->events);
    pthread_mutex_destroy(&h->mu);
    close(h->wakefd);
    free(h->token);
    free(h);
}
