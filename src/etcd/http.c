/* http.c - the etcd client's own HTTP/1.1 transport for unary requests
 * over plain http; see src/etcd/internal.h (ac_etcd_raw_post).
 *
 * Why not libcurl for these: loading it (and OpenSSL, GnuTLS, Kerberos,
 * LDAP, ... with it) costs a process 4-20 ms on this machine kind, more
 * than the rest of a CLI post against a cluster (~2-3 ms). A unary call
 * is one POST with a Content-Length body and one reply, which is all this
 * file speaks: a kept-alive socket per endpoint, a request, a reply with
 * a Content-Length or a chunked body (or one that ends with the
 * connection), under the client's timeouts, its reply cap and its
 * interrupt check. TLS, and the watch streams, stay with libcurl (loaded
 * on their first use only).
 *
 * The outcome rules are client.c's: nothing sent (refused, unreachable,
 * a connect timeout, or a send that failed before the whole request left:
 * a server never acts on a request it has not received whole) moves on to
 * the next endpoint; a timeout or a broken connection after the request
 * left is an unknown outcome. A kept-alive connection that the server
 * closed while idle is noticed before the request is sent (it polls
 * readable), so a request is never sent twice.
 */
#define _GNU_SOURCE     /* memmem */
#include "etcd/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agentchat/clock.h"

/* Longest single poll, so that a SIGINT flag is seen soon. */
#define SLICE_MS 200
#define HEAD_MAX (64u << 10)

/* Host and port of endpoint i ("http://host:port", "http://[v6]:port"). */
static int split_url(const char *url, char *host, size_t hostsz, char *port, size_t portsz)
{
    const char *h = strstr(url, "://"), *colon;
    size_t hl;
    if (!h)
        return -1;
    h += 3;
    colon = strrchr(h, ':');
    if (!colon)
        return -1;
    hl = (size_t)(colon - h);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= hostsz || strlen(colon + 1) >= portsz)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    snprintf(port, portsz, "%s", colon + 1);
    return 0;
}

void ac_etcd_raw_close(struct ac_etcd *e, size_t i)
{
    if (e->raw_fd[i] != -1) {
        close(e->raw_fd[i]);
        e->raw_fd[i] = -1;
    }
}

/* Milliseconds left until `until` (>= 0). */
static int left_ms(int64_t until)
{
    int64_t ms = (until - ac_clock_mono_ns()) / 1000000;
    return ms < 0 ? 0 : ms > SLICE_MS ? SLICE_MS : (int)ms;
}

/* Wait for `events` on fd until `until`: 1 ready, 0 timed out, -1
 * interrupted (ac_clock_interrupted). */
static int wait_fd(int fd, short events, int64_t until, short *revents)
{
    for (;;) {
        struct pollfd p = { fd, events, 0 };
        int r;
        if (ac_clock_interrupted())
            return -1;
        r = poll(&p, 1, left_ms(until));
        if (r > 0) {
            *revents = p.revents;
            return 1;
        }
        if (r == -1 && errno != EINTR)
            return 1;           /* let the next call report it */
        if (r == 0 && ac_clock_mono_ns() >= until)
            return 0;
    }
}

/* A connected socket to endpoint i, or -1 with err (ETCD_UNAVAILABLE) or
 * -2 when interrupted. */
static int connect_to(struct ac_etcd *e, size_t i, int64_t until, struct ac_err *err)
{
    char host[300], port[16];
    struct addrinfo hints, *res = NULL, *ai;
    int fd = -1, rc, last = ECONNREFUSED;

    if (split_url(e->endpoints[i], host, sizeof host, port, sizeof port) == -1) {
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG", "etcd %s: not a host and port",
                   e->endpoints[i]);
        return -1;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_UNAVAILABLE", "etcd %s: could not resolve host: %s",
                   e->endpoints[i], gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        short rev = 0;
        int one = 1, soerr = 0, w;
        socklen_t sl = sizeof soerr;
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd == -1) {
            last = errno;
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno != EINPROGRESS) {
            last = errno;
            close(fd);
            fd = -1;
            continue;
        }
        w = wait_fd(fd, POLLOUT, until, &rev);
        if (w == -1) {
            close(fd);
            freeaddrinfo(res);
            return -2;
        }
        if (w == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
            break;
        last = w == 0 ? ETIMEDOUT : soerr ? soerr : ECONNREFUSED;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd == -1) {
        if (last == ETIMEDOUT)
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_UNAVAILABLE", "etcd %s: connection timed out",
                       e->endpoints[i]);
        else
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_UNAVAILABLE", "etcd %s: could not connect: %s",
                       e->endpoints[i], strerror(last));
        return -1;
    }
    e->connections++;
    return fd;
}

/* A kept-alive connection the server closed (or wrote to) while idle. */
static int gone_stale(int fd)
{
    struct pollfd p = { fd, POLLIN, 0 };
    return poll(&p, 1, 0) != 0;
}

/* The request head. */
static int build_head(const struct ac_etcd *e, size_t i, const char *path, size_t len,
                      struct ac_buf *b)
{
    char host[300], port[16], line[64];
    if (split_url(e->endpoints[i], host, sizeof host, port, sizeof port) == -1)
        return -1;
    ac_buf_puts(b, "POST ");
    ac_buf_puts(b, path);
    ac_buf_puts(b, " HTTP/1.1\r\nHost: ");
    ac_buf_puts(b, e->endpoints[i] + strlen("http://"));
    ac_buf_puts(b, "\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
                   "Grpc-Metadata-hasleader: true\r\n");
    if (e->token) {
        ac_buf_puts(b, "Authorization: ");
        ac_buf_puts(b, e->token);
        ac_buf_puts(b, "\r\n");
    }
    snprintf(line, sizeof line, "Content-Length: %zu\r\n\r\n", len);
    ac_buf_puts(b, line);
    return b->oom ? -1 : 0;
}

/* Send all of buf: 0, or -1 (errno-like reason in *why) / -2 interrupted. */
static int send_all(int fd, const char *buf, size_t n, int64_t until, const char **why)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w > 0) {
            buf += w;
            n -= (size_t)w;
            continue;
        }
        if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            short rev = 0;
            int r = wait_fd(fd, POLLOUT, until, &rev);
            if (r == -1)
                return -2;
            if (r == 0) {
                *why = "timed out sending the request";
                return -1;
            }
            continue;
        }
        *why = strerror(errno);
        return -1;
    }
    return 0;
}

/* Parse the reply head in data[0..hlen): status, content length (-1:
 * none), chunked, close. -1 when it is not HTTP. */
static int parse_head(const char *data, size_t hlen, long *status, long long *clen, int *chunked,
                      int *close_after)
{
    const char *p = data, *end = data + hlen, *nl;
    int minor;
    char code[4];
    if (hlen < 12 || strncmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ')
        return -1;
    minor = p[7] - '0';
    memcpy(code, p + 9, 3);
    code[3] = '\0';
    if (code[0] < '1' || code[0] > '5' || code[1] < '0' || code[1] > '9' || code[2] < '0' ||
        code[2] > '9')
        return -1;
    *status = strtol(code, NULL, 10);
    *clen = -1;
    *chunked = 0;
    *close_after = minor == 0;
    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        const char *v;
        size_t n = (size_t)(nl - p);
        p = nl + 1;
        if (p >= end)
            break;
        nl = memchr(p, '\n', (size_t)(end - p));
        n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        v = memchr(p, ':', n);
        if (!v)
            continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        if (strncasecmp(p, "Content-Length:", 15) == 0) {
            char *e2;
            *clen = strtoll(v, &e2, 10);
            if (e2 == v || *clen < 0)
                return -1;
        } else if (strncasecmp(p, "Transfer-Encoding:", 18) == 0 &&
                   strncasecmp(v, "chunked", 7) == 0) {
            *chunked = 1;
        } else if (strncasecmp(p, "Connection:", 11) == 0 && strncasecmp(v, "close", 5) == 0) {
            *close_after = 1;
        }
    }
    return 0;
}

/* Decode a chunked body in place: *have bytes at data; returns 1 when the
 * last chunk ended (the body in data[0..*out)), 0 when more is needed, -1
 * malformed. Decoded bytes are moved to the front as they come. */
static int dechunk(char *data, size_t have, size_t *consumed, size_t *out)
{
    size_t pos = *consumed;
    for (;;) {
        char *nl = memchr(data + pos, '\n', have - pos), *endp;
        unsigned long long sz;
        if (!nl)
            return 0;
        sz = strtoull(data + pos, &endp, 16);
        if (endp == data + pos)
            return -1;
        if (sz == 0) {
            /* the last chunk; (no) trailers end with an empty line */
            size_t at = (size_t)(nl + 1 - data);
            if (!memmem(data + at - 2, have - at + 2, "\r\n\r\n", 4) &&
                !(have - at >= 2 && data[at] == '\r' && data[at + 1] == '\n'))
                return 0;
            *consumed = have;
            return 1;
        }
        if ((size_t)(nl + 1 - data) + sz + 2 > have)
            return 0;
        memmove(data + *out, nl + 1, sz);
        *out += sz;
        pos = (size_t)(nl + 1 - data) + sz + 2;
        *consumed = pos;
    }
}

enum ac_etcd_tr ac_etcd_raw_post(struct ac_etcd *e, size_t i, const char *path, const char *body,
                                 size_t len, long timeout_ms, long *status, struct ac_err *err)
{
    int64_t until = ac_clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    int64_t cuntil = ac_clock_mono_ns() + (int64_t)(e->connect_ms < timeout_ms ? e->connect_ms
                                                                               : timeout_ms) * 1000000;
    struct ac_buf head = AC_BUF_INIT;
    const char *why = NULL;
    size_t hlen = 0, consumed = 0, out = 0;
    long long clen = -1;
    int chunked = 0, close_after = 0, fd, r;

    int reused, again = 0;

    *status = 0;
retry:
    e->reply.len = 0;
    hlen = consumed = out = 0;
    clen = -1;
    chunked = close_after = 0;
    if (e->raw_fd[i] != -1 && gone_stale(e->raw_fd[i]))
        ac_etcd_raw_close(e, i);
    reused = e->raw_fd[i] != -1;
    if (e->raw_fd[i] == -1) {
        fd = connect_to(e, i, cuntil, err);
        if (fd == -2)
            return AC_ETCD_TR_INTERRUPTED;
        if (fd == -1)
            return AC_ETCD_TR_NOT_SENT;
        e->raw_fd[i] = fd;
    }
    fd = e->raw_fd[i];
    if (build_head(e, i, path, len, &head) == -1) {
        ac_buf_free(&head);
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NOMEM", "out of memory");
        return AC_ETCD_TR_FAIL;
    }
    /* one send: the head and the body in one segment */
    ac_buf_add(&head, body, len);
    if (head.oom) {
        ac_buf_free(&head);
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NOMEM", "out of memory");
        return AC_ETCD_TR_FAIL;
    }
    r = send_all(fd, head.data, head.len, until, &why);
    ac_buf_free(&head);
    if (r != 0) {
        ac_etcd_raw_close(e, i);
        if (r == -2)
            return AC_ETCD_TR_INTERRUPTED;
        /* a request the server did not receive whole: nothing done */
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_UNAVAILABLE", "etcd %s: %s", e->endpoints[i], why);
        return AC_ETCD_TR_NOT_SENT;
    }
    /* The reply: the head, then the body. */
    for (;;) {
        char buf[16384];
        ssize_t n;
        short rev = 0;
        int w;
        if (hlen > 0) {
            if (chunked) {
                int d = dechunk(e->reply.data + hlen, e->reply.len - hlen, &consumed, &out);
                if (d == -1) {
                    why = "malformed chunked reply";
                    goto bad;
                }
                if (d == 1)
                    break;
            } else if (clen >= 0 && e->reply.len - hlen >= (size_t)clen) {
                out = (size_t)clen;
                break;
            }
        }
        w = wait_fd(fd, POLLIN, until, &rev);
        if (w == -1) {
            ac_etcd_raw_close(e, i);
            return AC_ETCD_TR_INTERRUPTED;
        }
        if (w == 0) {
            ac_etcd_raw_close(e, i);
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_OUTCOME_UNKNOWN", "etcd %s: no answer within %ld ms",
                       e->endpoints[i], timeout_ms);
            return AC_ETCD_TR_UNKNOWN;
        }
        n = recv(fd, buf, sizeof buf, 0);
        if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (n <= 0 && reused && !again && e->reply.len == 0 &&
            (n == 0 || errno == ECONNRESET || errno == EPIPE)) {
            /* A kept-alive connection that died as the request went out
             * (the member was killed, or closed it idle just then): once
             * more on a fresh one, as libcurl does; a dead member refuses
             * it, which moves on to the next endpoint. */
            ac_etcd_raw_close(e, i);
            again = 1;
            goto retry;
        }
        if (n <= 0) {
            if (n == 0 && hlen > 0 && !chunked && clen < 0) {
                out = e->reply.len - hlen;     /* a body that ends with the connection */
                close_after = 1;
                break;
            }
            ac_etcd_raw_close(e, i);
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_OUTCOME_UNKNOWN", "etcd %s: %s",
                       e->endpoints[i], n == 0 ? "the connection closed before the reply ended"
                                               : strerror(errno));
            return AC_ETCD_TR_UNKNOWN;
        }
        if (e->reply.len + (size_t)n > e->max_reply + (hlen ? hlen : HEAD_MAX)) {
            ac_etcd_raw_close(e, i);
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_REPLY_TOO_LARGE",
                       "etcd %s: reply larger than %zu bytes", e->endpoints[i], e->max_reply);
            return AC_ETCD_TR_FAIL;
        }
        ac_buf_add(&e->reply, buf, (size_t)n);
        if (e->reply.oom) {
            ac_etcd_raw_close(e, i);
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NOMEM", "out of memory");
            return AC_ETCD_TR_FAIL;
        }
        if (hlen == 0) {
            char *end = e->reply.len >= 4 ? memmem(e->reply.data, e->reply.len, "\r\n\r\n", 4) : NULL;
            if (!end) {
                if (e->reply.len > HEAD_MAX) {
                    why = "reply head too long";
                    goto bad;
                }
                continue;
            }
            hlen = (size_t)(end - e->reply.data) + 4;
            if (parse_head(e->reply.data, hlen, status, &clen, &chunked, &close_after) == -1) {
                why = "not an HTTP reply";
                goto bad;
            }
            if (clen > (long long)e->max_reply) {
                ac_etcd_raw_close(e, i);
                ac_err_set(err, AC_EXIT_GENERAL, "ETCD_REPLY_TOO_LARGE",
                           "etcd %s: reply larger than %zu bytes", e->endpoints[i], e->max_reply);
                return AC_ETCD_TR_FAIL;
            }
        }
    }
    /* The body to the front of e->reply, as libcurl would hand it over. */
    memmove(e->reply.data, e->reply.data + hlen, out);
    e->reply.len = out;
    if (e->reply.data)
        e->reply.data[out] = '\0';
    if (close_after)
        ac_etcd_raw_close(e, i);
    return AC_ETCD_TR_OK;
bad:
    ac_etcd_raw_close(e, i);
    ac_err_set(err, AC_EXIT_GENERAL, "ETCD_OUTCOME_UNKNOWN", "etcd %s: %s", e->endpoints[i], why);
    return AC_ETCD_TR_UNKNOWN;
}
