/*
 * etcd_bench.c - micro-benchmark of the etcd client (src/etcd/) against a
 * live cluster: `make bench-etcd` runs it under tests/etcd/with-cluster (3
 * members, data on tmpfs, heartbeat 100 ms / election 1000 ms). Prints a
 * Markdown table of medians with the 10th-90th percentile spread, in
 * milliseconds. A report, not a test: it exits 0 unless an operation
 * fails.
 *
 *   post            one CAS txn: seq compare + message + idempotency key
 *                   (tests/c/etcdpost.h), client on the leader / a follower
 *   cold post       the same on a new client (connect included)
 *   range           one key, linearizable / serializable
 *   read 1k         a prefix of 1000 messages of 100 bytes
 *   lock + unlock   a path-lock txn (no key under the path's subtree, none
 *                   of its 3 ancestors locked) and its delete
 *   watch wake-up   put in another process -> event delivered here
 *   4x200           4 writer processes x 200 posts on one channel: posts/s
 *                   and the median latency of a post
 *   failover        leader SIGKILL -> next committed post of a writer
 *
 * Usage: bench_etcd [-n N]   (N samples per row, default 300)
 */
#include <inttypes.h>
#include <signal.h>

#include "etcdpost.h"
#include "etcdutil.h"

static const char *eps;
static int samples = 300;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One table row from n durations in ns. */
static void row(const char *what, int64_t *ns, size_t n, const char *extra)
{
    if (n == 0) {
        printf("| %s | n/a | | %s |\n", what, extra ? extra : "");
        return;
    }
    qsort(ns, n, sizeof *ns, cmp_i64);
    printf("| %s | %.2f | %.2f-%.2f | %zu%s%s |\n", what, ns[n / 2] / 1e6, ns[n / 10] / 1e6,
           ns[n * 9 / 10] / 1e6, n, extra ? ", " : "", extra ? extra : "");
    fflush(stdout);
}

static void die(const char *what, const struct ac_err *err)
{
    fprintf(stderr, "bench_etcd: %s: %s: %s\n", what, err->code ? err->code : "-", err->msg);
    exit(1);
}

static size_t leader_index(struct ac_etcd *e)
{
    size_t i;
    struct ac_etcd_status st;
    struct ac_err err = AC_ERR_INIT;
    for (i = 0; i < ac_etcd_endpoint_count(e); i++)
        if (ac_etcd_status(e, i, &st, 0, &err) == 0 && st.leader == st.member_id)
            return i;
    die("no leader", &err);
    return 0;
}

static void bench_post(struct ac_etcd *e, size_t ep, const char *what)
{
    int64_t *ns = calloc((size_t)samples, sizeof *ns), last_seq = 0, last_mod = 0;
    struct ac_err err = AC_ERR_INIT;
    char chan[128], idem[32];
    int i;
    ac_etcd_set_current(e, ep);
    snprintf(chan, sizeof chan, "%s", t_key("post-%zu", ep));
    for (i = -10; i < samples; i++) {      /* 10 warm-up posts */
        int64_t t0 = ac_clock_mono_ns();
        snprintf(idem, sizeof idem, "p%d", i + 10);
        if (t_post(e, chan, idem, "a message body of some forty bytes....", &last_seq, &last_mod,
                   0, NULL, &err) == -1)
            die("post", &err);
        if (i >= 0)
            ns[i] = ac_clock_mono_ns() - t0;
    }
    row(what, ns, (size_t)samples, NULL);
    free(ns);
}

static void bench_cold_post(size_t ep)
{
    int n = samples / 3, i;
    int64_t *ns = calloc((size_t)n, sizeof *ns), last_seq = 0, last_mod = 0;
    struct ac_err err = AC_ERR_INIT;
    char chan[128], idem[32];
    snprintf(chan, sizeof chan, "%s", t_key("cold"));
    for (i = 0; i < n; i++) {
        int64_t t0 = ac_clock_mono_ns();
        struct ac_etcd *c = t_etcd_open(eps, NULL);
        ac_etcd_set_current(c, ep);
        snprintf(idem, sizeof idem, "c%d", i);
        last_seq = last_mod = 0;
        if (t_post(c, chan, idem, "body", &last_seq, &last_mod, 0, NULL, &err) == -1)
            die("cold post", &err);
        ac_etcd_close(c);
        ns[i] = ac_clock_mono_ns() - t0;
    }
    row("cold post (new client: connect + read counter + txn)", ns, (size_t)n, NULL);
    free(ns);
}

static void bench_range(struct ac_etcd *e, int serializable, const char *what)
{
    int64_t *ns = calloc((size_t)samples, sizeof *ns);
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY(t_key("r")), .serializable = serializable };
    struct ac_etcd_range_res rs;
    struct ac_err err = AC_ERR_INIT;
    int i;
    ac_etcd_put(e, t_key("r"), 0, "value", 5, 0, NULL, 0, &err);
    for (i = 0; i < samples; i++) {
        int64_t t0 = ac_clock_mono_ns();
        if (ac_etcd_range(e, &rq, &rs, 0, &err) == -1)
            die("range", &err);
        ns[i] = ac_clock_mono_ns() - t0;
        ac_etcd_range_res_free(&rs);
    }
    row(what, ns, (size_t)samples, NULL);
    free(ns);
}

static void bench_read_1k(struct ac_etcd *e)
{
    int n = samples / 5, i;
    int64_t *ns = calloc((size_t)n, sizeof *ns);
    char prefix[128], key[160], body[101];
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    struct ac_err err = AC_ERR_INIT;
    snprintf(prefix, sizeof prefix, "%s", t_key("1k/"));
    memset(body, 'm', 100);
    body[100] = '\0';
    for (i = 1; i <= 1000; i++) {
        snprintf(key, sizeof key, "%s%08d", prefix, i);
        if (ac_etcd_put(e, key, 0, body, 100, 0, NULL, 0, &err) == -1)
            die("put", &err);
    }
    rq = (struct ac_etcd_range_req){ .keys = AC_ETCD_PREFIX(prefix) };
    for (i = 0; i < n; i++) {
        int64_t t0 = ac_clock_mono_ns();
        if (ac_etcd_range(e, &rq, &rs, 0, &err) == -1 || rs.nkvs != 1000)
            die("read 1k", &err);
        ns[i] = ac_clock_mono_ns() - t0;
        ac_etcd_range_res_free(&rs);
    }
    row("read 1k (prefix range, 1000 x 100 B, decoded)", ns, (size_t)n, NULL);
    free(ns);
}

static void bench_lock(struct ac_etcd *e)
{
    int64_t *lock = calloc((size_t)samples, sizeof *lock);
    int64_t *unlock = calloc((size_t)samples, sizeof *unlock);
    char base[128], sub[160], k3[160], k2[160], k1[160];
    struct ac_err err = AC_ERR_INIT;
    int i;
    snprintf(base, sizeof base, "%s", t_key("L"));
    snprintf(k1, sizeof k1, "%s/a", base);
    snprintf(k2, sizeof k2, "%s/a/b", base);
    snprintf(k3, sizeof k3, "%s/a/b/c", base);
    snprintf(sub, sizeof sub, "%s/a/b/c/", base);
    for (i = 0; i < samples; i++) {
        struct ac_etcd_cmp cmp[4] = {
            { AC_ETCD_PREFIX(sub), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 },
            { AC_ETCD_KEY(k3), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 },
            { AC_ETCD_KEY(k2), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 },
            { AC_ETCD_KEY(k1), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 },
        };
        struct ac_etcd_op put = { AC_ETCD_OP_PUT, AC_ETCD_KEY(k3),
                                  "{\"owner\":\"agent-1\",\"lock_id\":\"0123456789abcdef\"}", 49,
                                  0, 0, 0, 0, 0, 0 };
        struct ac_etcd_op del = { AC_ETCD_OP_DELETE, AC_ETCD_KEY(k3), NULL, 0, 0, 0, 0, 0, 0, 0 };
        struct ac_etcd_cmp held = { AC_ETCD_KEY(k3), AC_ETCD_VERSION, AC_ETCD_GREATER, 0, NULL, 0 };
        struct ac_etcd_txn_req tl = { cmp, 4, &put, 1, NULL, 0 }, tu = { &held, 1, &del, 1, NULL, 0 };
        struct ac_etcd_txn_res r;
        int64_t t0 = ac_clock_mono_ns();
        if (ac_etcd_txn(e, &tl, &r, 0, &err) == -1 || !r.succeeded)
            die("lock", &err);
        lock[i] = ac_clock_mono_ns() - t0;
        ac_etcd_txn_res_free(&r);
        t0 = ac_clock_mono_ns();
        if (ac_etcd_txn(e, &tu, &r, 0, &err) == -1 || !r.succeeded)
            die("unlock", &err);
        unlock[i] = ac_clock_mono_ns() - t0;
        ac_etcd_txn_res_free(&r);
    }
    row("lock txn (subtree range + 3 ancestors absent)", lock, (size_t)samples, NULL);
    row("unlock txn", unlock, (size_t)samples, NULL);
    free(lock);
    free(unlock);
}

static void bench_wakeup(struct ac_etcd *e)
{
    int n = samples / 3, got = 0, status;
    int64_t *ns = calloc((size_t)n, sizeof *ns);
    char prefix[128];
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_PREFIX(prefix) };
    struct ac_etcd_watch *w;
    struct ac_err err = AC_ERR_INIT;
    pid_t pid;
    snprintf(prefix, sizeof prefix, "%s", t_key("wake/"));
    if (ac_etcd_watch_open(e, &wr, &w, 0, &err) == -1)
        die("watch", &err);
    pid = fork();
    if (pid == 0) {
        struct ac_etcd *c = t_etcd_open(eps, NULL);
        int i;
        ac_etcd_set_current(c, ac_etcd_current(e));
        for (i = 0; i < n; i++) {
            char key[160], t0[32];
            snprintf(key, sizeof key, "%s%d", prefix, i);
            /* the event carries the time it was sent (CLOCK_MONOTONIC is
             * one clock for every process of the machine) */
            snprintf(t0, sizeof t0, "%lld", (long long)ac_clock_mono_ns());
            if (ac_etcd_put(c, key, 0, t0, strlen(t0), 0, NULL, 0, &err) == -1)
                _exit(1);
            ac_clock_sleep_ns(10000000);
        }
        ac_etcd_close(c);
        _exit(0);
    }
    while (got < n) {
        struct ac_etcd_events ev;
        size_t j;
        if (ac_etcd_watch_next(w, ac_etcd_deadline_in(10000), &ev, &err) != 1)
            die("watch next", &err);
        for (j = 0; j < ev.nevents && got < n; j++)
            ns[got++] = ac_clock_mono_ns() - strtoll(ev.events[j].kv.value, NULL, 10);
        ac_etcd_events_free(&ev);
    }
    waitpid(pid, &status, 0);
    ac_etcd_watch_close(w);
    row("watch wake-up (put in another process -> event here)", ns, (size_t)n, NULL);
    free(ns);
}

#define WRITERS 4
#define POSTS 200

static void bench_concurrent(void)
{
    int fds[2], k, status, i, total = 0;
    int64_t *ns = calloc(WRITERS * POSTS, sizeof *ns), t0 = ac_clock_mono_ns(), wall;
    char chan[128], extra[128];
    snprintf(chan, sizeof chan, "%s", t_key("conc"));
    if (pipe(fds) == -1)
        exit(1);
    for (k = 0; k < WRITERS; k++) {
        if (fork() == 0) {
            struct ac_etcd *c = t_etcd_open(eps, NULL);
            int64_t last_seq = 0, last_mod = 0;
            struct ac_err err = AC_ERR_INIT;
            close(fds[0]);
            ac_etcd_set_current(c, (size_t)k % ac_etcd_endpoint_count(c));
            for (i = 0; i < POSTS; i++) {
                char idem[32];
                int64_t s = ac_clock_mono_ns(), d;
                snprintf(idem, sizeof idem, "w%d-%d", k, i);
                if (t_post(c, chan, idem, "concurrent body", &last_seq, &last_mod, 0, NULL, &err) ==
                    -1)
                    _exit(1);
                d = ac_clock_mono_ns() - s;
                if (write(fds[1], &d, sizeof d) != sizeof d)
                    _exit(2);
            }
            _exit(0);
        }
    }
    close(fds[1]);
    while (total < WRITERS * POSTS && read(fds[0], &ns[total], sizeof *ns) == sizeof *ns)
        total++;
    close(fds[0]);
    for (k = 0; k < WRITERS; k++)
        wait(&status);
    wall = ac_clock_mono_ns() - t0;
    snprintf(extra, sizeof extra, "**%.0f posts/s**, %.2f s wall", total / (wall / 1e9), wall / 1e9);
    row("4 writers x 200 posts, one channel (latency of a post)", ns, (size_t)total, extra);
    free(ns);
}

/* Three times: kill the leader while a writer on it posts; time to its
 * next committed post. The writer's request timeout bounds how long a
 * request that a follower accepted (still believing in the dead leader)
 * hangs: up to two such attempts happen before the election ends. */
static void bench_failover(long request_ms)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    struct ac_etcd *e;
    int64_t next[3];
    int run;
    char what[128];
    cfg.request_timeout_ms = request_ms;
    e = t_etcd_open(eps, &cfg);
    for (run = 0; run < 3; run++) {
        char leader[16], out[128], chan[128], idem[32];
        struct ac_err err = AC_ERR_INIT;
        int64_t last_seq = 0, last_mod = 0, t_kill;
        int i;
        /* the writer is on the leader: the worst case, its member goes */
        ac_etcd_set_current(e, leader_index(e));
        snprintf(chan, sizeof chan, "%s", t_key("failover-%d", run));
        for (i = 0; i < 20; i++) {
            snprintf(idem, sizeof idem, "f%d", i);
            if (t_post(e, chan, idem, "x", &last_seq, &last_mod, 0, NULL, &err) == -1)
                die("post", &err);
        }
        t_etcd_ctl(leader, sizeof leader, "kill-leader");
        t_kill = ac_clock_mono_ns();
        if (t_post(e, chan, "after", "x", &last_seq, &last_mod, ac_etcd_deadline_in(30000), NULL,
                   &err) == -1)
            die("post after the kill", &err);
        next[run] = ac_clock_mono_ns() - t_kill;
        if (t_etcd_ctl(out, sizeof out, "restart %s", leader) != 0 ||
            t_etcd_ctl(out, sizeof out, "wait-healthy 30") != 0)
            die("restart", &err);
    }
    snprintf(what, sizeof what,
             "failover: leader SIGKILL -> next committed post (client on the leader, "
             "request timeout %ld ms)", request_ms);
    row(what, next, 3, NULL);
    ac_etcd_close(e);
}

int main(int argc, char **argv)
{
    struct ac_etcd *e;
    size_t li, fi;
    int i;
    for (i = 1; i < argc; i++)
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            samples = atoi(argv[++i]);
    if (samples < 10)
        samples = 10;
    eps = t_etcd_cluster(argc, argv, 0);
    e = t_etcd_open(eps, NULL);
    li = leader_index(e);
    fi = (li + 1) % ac_etcd_endpoint_count(e);
    printf("\netcd client benchmark: 3 members on loopback, data on tmpfs, heartbeat 100 ms /"
           " election 1000 ms; %d samples per row; milliseconds\n\n",
           samples);
    printf("| operation | median | p10-p90 | samples |\n|---|---|---|---|\n");
    bench_post(e, li, "post = one txn (seq CAS + message + idempotency key), client on the leader");
    bench_post(e, fi, "post, client on a follower");
    bench_cold_post(li);
    ac_etcd_set_current(e, li);
    bench_range(e, 0, "range, one key, linearizable");
    bench_range(e, 1, "range, one key, serializable");
    bench_read_1k(e);
    bench_lock(e);
    bench_wakeup(e);
    bench_concurrent();
    ac_etcd_close(e);
    bench_failover(1000);
    bench_failover(500);
    return 0;
}
