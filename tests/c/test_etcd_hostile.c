/*
 * test_etcd_hostile.c - the etcd client against a fake server on loopback
 * (a child process of this test) that answers what etcd never would:
 * malformed JSON, wrong types, endless or huge bodies, silence, a closed
 * connection, 5xx, HTML, redirects, broken watch streams, and error
 * messages that repeat the credentials. Each gives a clear error with a
 * stable code, no crash, no hang, and the failover rules hold: a write
 * whose outcome is unknown is never sent twice, a read is retried, a
 * refused connection moves on at once. Needs no etcd.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "etcdutil.h"
#include "tap.h"

#define SECRET_PW "pa55-carol-secret"
#define SECRET_TOKEN "TOK-abc-123"
#define USER "carol-user"

static volatile int *requests;   /* shared with the fake server: requests seen */

struct fake {
    pid_t pid;
    int port;
};

static void send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            _exit(0);          /* the client went away: done */
        s += w;
        n -= (size_t)w;
    }
}

static void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

/* Read one request; returns its path in path[] and the Authorization
 * header in auth[]; 0 on EOF. */
static int read_request(int fd, char *path, size_t pathsz, char *auth, size_t authsz)
{
    char buf[65536];
    size_t have = 0;
    char *end = NULL, *p;
    long clen = 0;
    while (!end) {
        ssize_t n = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (n <= 0)
            return 0;
        have += (size_t)n;
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    sscanf(buf, "%*s %255s", path);
    path[pathsz - 1] = '\0';
    auth[0] = '\0';
    for (p = buf; p && p < end; p = strstr(p, "\r\n") ? strstr(p, "\r\n") + 2 : NULL) {
        if (strncasecmp(p, "Content-Length:", 15) == 0)
            clen = strtol(p + 15, NULL, 10);
        if (strncasecmp(p, "Authorization:", 14) == 0)
            sscanf(p + 14, " %255[^\r]", auth);
    }
    auth[authsz - 1] = '\0';
    clen -= (long)(have - (size_t)(end + 4 - buf));
    while (clen > 0) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            return 0;
        clen -= n;
    }
    return 1;
}

static void reply(int fd, const char *status, const char *body)
{
    char head[256];
    snprintf(head, sizeof head,
             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n",
             status, strlen(body));
    send_str(fd, head);
    send_str(fd, body);
}

static void stream_head(int fd)
{
    send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n");
}

static void chunk(int fd, const char *data, size_t n)
{
    char head[32];
    snprintf(head, sizeof head, "%zx\r\n", n);
    send_str(fd, head);
    send_all(fd, data, n);
    send_str(fd, "\r\n");
}

static void chunk_str(int fd, const char *s)
{
    chunk(fd, s, strlen(s));
}

#define CREATED "{\"result\":{\"header\":{\"revision\":\"5\"},\"created\":true}}\n"

static void serve(int fd, const char *mode)
{
    char path[256], auth[256], big[65536];
    if (!read_request(fd, path, sizeof path, auth, sizeof auth))
        return;
    if (strcmp(path, "/v3/auth/authenticate") != 0)
        (*requests)++;
    memset(big, 'a', sizeof big);
    if (strcmp(mode, "ok") == 0) {
        reply(fd, "200 OK", "{\"header\":{\"revision\":\"5\"},\"succeeded\":true,\"responses\":"
                            "[{\"response_put\":{\"header\":{\"revision\":\"5\"}}}]}");
    } else if (strcmp(mode, "garbage") == 0) {
        reply(fd, "200 OK", "this is not json{");
    } else if (strcmp(mode, "wrongtypes") == 0) {
        reply(fd, "200 OK", "{\"header\":{\"revision\":[\"5\"]},\"kvs\":\"many\"}");
    } else if (strcmp(mode, "huge-chunked") == 0) {
        stream_head(fd);
        for (;;)
            chunk(fd, big, sizeof big);
    } else if (strcmp(mode, "huge-length") == 0) {
        send_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n");
        for (;;)
            send_all(fd, big, sizeof big);
    } else if (strcmp(mode, "silent") == 0) {
        sleep(60);
    } else if (strcmp(mode, "close") == 0) {
        /* nothing: the connection closes */
    } else if (strcmp(mode, "500") == 0) {
        send_str(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n"
                     "Connection: close\r\n\r\noops!");
    } else if (strcmp(mode, "noleader") == 0) {
        reply(fd, "503 Service Unavailable", "{\"error\":\"etcdserver: no leader\",\"message\":"
                                             "\"etcdserver: no leader\",\"code\":14}");
    } else if (strcmp(mode, "404html") == 0) {
        send_str(fd, "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 17\r\n"
                     "Connection: close\r\n\r\n<html>nope</html>");
    } else if (strcmp(mode, "redirect") == 0) {
        send_str(fd, "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/v3/kv/range\r\n"
                     "Content-Length: 0\r\nConnection: close\r\n\r\n");
    } else if (strcmp(mode, "echo") == 0) {
        if (strcmp(path, "/v3/auth/authenticate") == 0) {
            reply(fd, "200 OK", "{\"header\":{},\"token\":\"" SECRET_TOKEN "\"}");
        } else {
            char body[1024];
            snprintf(body, sizeof body,
                     "{\"error\":\"x\",\"message\":\"you sent '%s' as " USER " with password "
                     SECRET_PW "\\nsecond line\",\"code\":2}",
                     auth);
            reply(fd, "400 Bad Request", body);
        }
    } else if (strcmp(mode, "watch-garbage") == 0) {
        stream_head(fd);
        chunk_str(fd, CREATED);
        chunk_str(fd, "garbage\n");
        sleep(60);
    } else if (strcmp(mode, "watch-longline") == 0) {
        stream_head(fd);
        chunk_str(fd, CREATED);
        for (;;)
            chunk(fd, big, sizeof big);
    } else if (strcmp(mode, "watch-events-first") == 0) {
        stream_head(fd);
        chunk_str(fd, "{\"result\":{\"header\":{},\"events\":[{\"kv\":{\"key\":\"YQ==\","
                      "\"mod_revision\":\"3\"}}]}}\n" CREATED);
        sleep(60);
    } else if (strcmp(mode, "watch-split") == 0) {
        /* messages cut at odd places across chunks, two in one chunk */
        /* rev 5 is below the start revision (6): a replay to drop */
        static const char s[] = CREATED "{\"result\":{\"header\":{},\"events\":[{\"kv\":{\"key\":"
                                        "\"YQ==\",\"mod_revision\":\"5\",\"value\":\"MA==\"}}]}}\n"
                                        "{\"result\":{\"header\":{},\"events\":[{\"kv\":{\"key\":"
                                        "\"YQ==\",\"mod_revision\":\"6\",\"value\":\"MQ==\"}}]}}\n"
                                        "{\"result\":{\"header\":{},\"events\":[{\"kv\":{\"key\":"
                                        "\"YQ==\",\"mod_revision\":\"7\",\"value\":\"Mg==\"}}]}}\n";
        size_t i;
        stream_head(fd);
        for (i = 0; i < sizeof s - 1; i += 7)
            chunk(fd, s + i, sizeof s - 1 - i < 7 ? sizeof s - 1 - i : 7);
        sleep(60);
    }
}

static struct fake fake_start(const char *mode)
{
    struct fake f = { -1, 0 };
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (ls == -1)
        t_bail("socket");
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) == -1 || listen(ls, 16) == -1 ||
        getsockname(ls, (struct sockaddr *)&a, &len) == -1)
        t_bail("bind/listen");
    f.port = ntohs(a.sin_port);
    *requests = 0;
    f.pid = t_fork();
    if (f.pid == 0) {
        setpgid(0, 0);
        signal(SIGPIPE, SIG_IGN);
        for (;;) {
            int c = accept(ls, NULL, NULL);
            if (c == -1)
                continue;
            if (fork() == 0) {     /* one process per connection: silence blocks none */
                serve(c, mode);
                close(c);
                _exit(0);
            }
            close(c);
            while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        }
    }
    setpgid(f.pid, f.pid);     /* whichever of the two runs first */
    close(ls);
    return f;
}

static void fake_stop(struct fake *f)
{
    /* the server and its per-connection children: one process group */
    kill(-f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
}

/* A port nothing listens on. */
static int closed_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int s = socket(AF_INET, SOCK_STREAM, 0), port;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s == -1 || bind(s, (struct sockaddr *)&a, sizeof a) == -1 ||
        getsockname(s, (struct sockaddr *)&a, &len) == -1)
        t_bail("closed_port");
    port = ntohs(a.sin_port);
    close(s);
    return port;
}

static struct ac_etcd *client(const char *eps, long request_ms, long op_ms, const char *user,
                              const char *pw)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    cfg.request_timeout_ms = request_ms;
    cfg.op_timeout_ms = op_ms;
    cfg.max_reply_bytes = 1 << 20;
    cfg.username = user;
    cfg.password = pw;
    cfg.watch_probe_ms = 60000;
    return t_etcd_open(eps, &cfg);
}

static const char *eps_of(int port)
{
    static char b[4][64];
    static int next;
    char *s = b[next++ & 3];
    snprintf(s, sizeof b[0], "127.0.0.1:%d", port);
    return s;
}

static int good_msg(const struct ac_err *err)
{
    return err->msg[0] && !strchr(err->msg, '\n') && !strchr(err->msg, '\r');
}

/* One unary call against mode; checks code and the request count. */
static void unary(const char *mode, int write_call, const char *want, int want_requests)
{
    struct fake f = fake_start(mode);
    struct ac_etcd *e = client(eps_of(f.port), 300, 1200, NULL, NULL);
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY("k") };
    struct ac_etcd_range_res rs;
    int64_t t0 = ac_clock_mono_ns();
    int rc;
    if (write_call)
        rc = ac_etcd_put(e, "k", 0, "v", 1, 0, NULL, 0, &err);
    else
        rc = ac_etcd_range(e, &rq, &rs, 0, &err);
    printf("# %s %s: %ld ms, %d requests: %s: %s\n", write_call ? "put" : "range", mode,
           t_ms_since(t0), *requests, err.code ? err.code : "-", err.msg);
    TAP_OK(rc == -1 && err.code && strcmp(err.code, want) == 0 && good_msg(&err),
           "%s, server '%s': %s on one line", write_call ? "put" : "range", mode, want);
    if (want_requests > 0)
        TAP_INT_EQ(*requests, want_requests, "... after %d request(s)", want_requests);
    else
        TAP_OK(*requests >= 2, "... after retrying the read (%d requests)", *requests);
    ac_etcd_close(e);
    fake_stop(&f);
}

static void test_unary(void)
{
    unary("garbage", 0, "ETCD_BAD_REPLY", 1);
    unary("wrongtypes", 0, "ETCD_BAD_REPLY", 1);
    unary("huge-chunked", 0, "ETCD_REPLY_TOO_LARGE", 1);
    unary("huge-length", 0, "ETCD_REPLY_TOO_LARGE", 1);
    unary("404html", 0, "ETCD_BAD_REPLY", 1);
    unary("redirect", 0, "ETCD_BAD_REPLY", 1);
    /* outcome unknown: a write is never sent twice, a read is retried */
    unary("silent", 1, "ETCD_OUTCOME_UNKNOWN", 1);
    unary("close", 1, "ETCD_OUTCOME_UNKNOWN", 1);
    unary("500", 1, "ETCD_OUTCOME_UNKNOWN", 1);
    unary("noleader", 1, "ETCD_NO_LEADER", 1);
    unary("silent", 0, "ETCD_TIMEOUT", 0);
    unary("close", 0, "ETCD_TIMEOUT", 0);
    unary("noleader", 0, "ETCD_NO_LEADER", 0);
}

static void test_failover(void)
{
    struct fake f = fake_start("ok");
    char eps[128];
    struct ac_etcd *e;
    struct ac_err err = AC_ERR_INIT;
    int rc;
    int64_t t0;

    snprintf(eps, sizeof eps, "127.0.0.1:%d,127.0.0.1:%d", closed_port(), f.port);
    e = client(eps, 300, 2000, NULL, NULL);
    rc = ac_etcd_put(e, "k", 0, "v", 1, 0, NULL, 0, &err);
    TAP_OK(rc == 0 && ac_etcd_failovers(e) == 1 && ac_etcd_current(e) == 1 && *requests == 1,
           "a refused endpoint: the write goes to the next one at once, once");
    ac_etcd_close(e);
    fake_stop(&f);

    snprintf(eps, sizeof eps, "127.0.0.1:%d,127.0.0.1:%d", closed_port(), closed_port());
    e = client(eps, 300, 500, NULL, NULL);
    t0 = ac_clock_mono_ns();
    rc = ac_etcd_put(e, "k", 0, "v", 1, 0, NULL, 0, &err);
    printf("# all refused: %ld ms, %lu failovers: %s\n", t_ms_since(t0), ac_etcd_failovers(e),
           err.msg);
    TAP_OK(rc == -1 && strcmp(err.code, "ETCD_UNAVAILABLE") == 0 && good_msg(&err),
           "every endpoint refused: ETCD_UNAVAILABLE on one line at the deadline");
    TAP_OK(ac_etcd_failovers(e) >= 2, "... after trying each more than once");
    ac_etcd_close(e);
}

static void test_secrets(void)
{
    struct fake f = fake_start("echo");
    struct ac_etcd *e = client(eps_of(f.port), 300, 1000, USER, SECRET_PW);
    struct ac_err err = AC_ERR_INIT;
    int rc = ac_etcd_put(e, "k", 0, "v", 1, 0, NULL, 0, &err);
    printf("# echo: %s: %s\n", err.code ? err.code : "-", err.msg);
    TAP_OK(rc == -1 && good_msg(&err) && strstr(err.msg, "you sent") != NULL,
           "a server error that repeats the credentials is reported");
    TAP_OK(strstr(err.msg, SECRET_TOKEN) == NULL, "... without the token");
    TAP_OK(strstr(err.msg, SECRET_PW) == NULL, "... without the password");
    TAP_OK(strstr(err.msg, USER) == NULL, "... without the user name");
    ac_etcd_close(e);
    fake_stop(&f);
}

static void watch_case(const char *mode, int open_fails, const char *want)
{
    struct fake f = fake_start(mode);
    struct ac_etcd *e = client(eps_of(f.port), 300, 1500, NULL, NULL);
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_KEY("a") };
    struct ac_etcd_watch *w = NULL;
    struct ac_etcd_events ev;
    struct ac_err err = AC_ERR_INIT;
    int rc = ac_etcd_watch_open(e, &wr, &w, 0, &err);
    if (!open_fails && rc == 0)
        rc = ac_etcd_watch_next(w, ac_etcd_deadline_in(5000), &ev, &err);
    printf("# watch %s: %s: %s\n", mode, err.code ? err.code : "-", err.msg);
    TAP_OK(rc == -1 && err.code && strcmp(err.code, want) == 0 && good_msg(&err),
           "watch, server '%s': %s%s", mode, want, open_fails ? " at open" : "");
    ac_etcd_watch_close(w);
    ac_etcd_close(e);
    fake_stop(&f);
}

static void test_watch(void)
{
    struct fake f = fake_start("watch-split");
    struct ac_etcd *e = client(eps_of(f.port), 300, 1500, NULL, NULL);
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_KEY("a"), .start_revision = 6 };
    struct ac_etcd_watch *w = NULL;
    struct ac_etcd_events ev;
    struct ac_err err = AC_ERR_INIT;
    char got[8] = "";
    if (ac_etcd_watch_open(e, &wr, &w, 0, &err) == 0) {
        while (strlen(got) < 2 && ac_etcd_watch_next(w, ac_etcd_deadline_in(5000), &ev, &err) == 1) {
            size_t i;
            for (i = 0; i < ev.nevents && strlen(got) < sizeof got - 1; i++)
                strncat(got, ev.events[i].kv.value, 1);
            ac_etcd_events_free(&ev);
        }
    }
    TAP_STR_EQ(got, "12", "watch messages cut across 7-byte chunks arrive whole and in order, "
                          "an event below the start revision dropped");
    ac_etcd_watch_close(w);
    ac_etcd_close(e);
    fake_stop(&f);

    watch_case("watch-garbage", 0, "ETCD_BAD_REPLY");
    watch_case("watch-longline", 0, "ETCD_REPLY_TOO_LARGE");
    watch_case("watch-events-first", 1, "ETCD_BAD_REPLY");
    watch_case("garbage", 1, "ETCD_BAD_REPLY");
    watch_case("404html", 1, "ETCD_BAD_REPLY");
}

/* SIGINT during a request that hangs: ETCD_INTERRUPTED (exit 130), soon. */
static void test_interrupt(void)
{
    struct fake f = fake_start("silent");
    struct ac_etcd *e = client(eps_of(f.port), 20000, 30000, NULL, NULL);
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY("k") };
    struct ac_etcd_range_res rs;
    pid_t me = getpid(), pid;
    int64_t t0 = ac_clock_mono_ns();
    int rc;
    ac_clock_install_signals();
    pid = t_fork();
    if (pid == 0) {
        usleep(300000);
        kill(me, SIGINT);
        _exit(0);
    }
    rc = ac_etcd_range(e, &rq, &rs, 0, &err);
    waitpid(pid, NULL, 0);
    printf("# interrupted after %ld ms: %s\n", t_ms_since(t0), err.msg);
    TAP_OK(rc == -1 && strcmp(err.code, "ETCD_INTERRUPTED") == 0 &&
               err.exit_code == AC_EXIT_INTERRUPTED,
           "SIGINT during a hanging request: ETCD_INTERRUPTED, exit code 130");
    TAP_OK(t_ms_since(t0) < 15000, "... long before the 20 s request timeout");
    ac_clock_clear_interrupt();
    ac_etcd_close(e);
    fake_stop(&f);
}

int main(void)
{
    requests = mmap(NULL, sizeof *requests, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
    if (requests == MAP_FAILED)
        t_bail("mmap");
    signal(SIGPIPE, SIG_IGN);
    test_unary();
    test_failover();
    test_secrets();
    test_watch();
    test_interrupt();
    return tap_done();
}
