/*
 * test_etcd_watch.c - etcd watches against a live 3-member cluster:
 * wake-up by a write of another process, replay from a revision, delete
 * events with the previous pair, a quiet deadline, the caller's own
 * descriptor polled beside the stream, compaction, and the
 * resume rules: when the member a watch is connected to is SIGKILLed, or
 * SIGSTOPped (it keeps the TCP connection and never answers), the watch
 * goes on from another member and delivers every event exactly once, in
 * order.
 */
#include <inttypes.h>
#include <signal.h>

#include "etcdutil.h"
#include "tap.h"

static const char *eps;
static struct ac_etcd *e;

static void put(struct ac_etcd *c, const char *key, const char *value, int64_t *rev)
{
    struct ac_err err = AC_ERR_INIT;
    if (ac_etcd_put(c, key, 0, value, strlen(value), 0, rev, 0, &err) == -1)
        printf("# put %s: %s: %s\n", key, err.code, err.msg);
}

/* A watch client: probes a silent stream after 500 ms. */
static struct ac_etcd *watch_client(void)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    cfg.watch_probe_ms = 500;
    return t_etcd_open(eps, &cfg);
}

static void test_wakeup(void)
{
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_PREFIX(t_key("w/")) };
    struct ac_etcd_watch *w;
    struct ac_etcd_events ev;
    struct ac_err err = AC_ERR_INIT;
    char key[128];
    pid_t pid;
    int r, status;

    TAP_OK(ac_etcd_watch_open(e, &wr, &w, 0, &err) == 0, "open a watch on a prefix from now");
    if (!w) {
        printf("# %s: %s\n", err.code, err.msg);
        return;
    }
    r = ac_etcd_watch_next(w, ac_etcd_deadline_in(300), &ev, &err);
    TAP_INT_EQ(r, 0, "nothing written: next returns 0 at the deadline");

    snprintf(key, sizeof key, "%s", t_key("w/x"));
    pid = t_fork();
    if (pid == 0) {
        struct ac_etcd *c = t_etcd_open(eps, NULL);
        ac_clock_sleep_ns(200000000);
        put(c, t_key("other/x"), "not watched", NULL);
        put(c, key, "hello", NULL);
        ac_etcd_close(c);
        _exit(0);
    }
    r = ac_etcd_watch_next(w, ac_etcd_deadline_in(30000), &ev, &err);
    TAP_OK(r == 1 && ev.nevents == 1 && ev.events[0].type == AC_ETCD_EVENT_PUT &&
               strcmp(ev.events[0].kv.key, key) == 0 &&
               strcmp(ev.events[0].kv.value, "hello") == 0,
           "another process's put wakes the watch with its event (only the watched key)");
    if (r == 1)
        ac_etcd_events_free(&ev);
    else
        printf("# r=%d %s %s\n", r, err.code ? err.code : "", err.msg);
    waitpid(pid, &status, 0);
    ac_etcd_watch_close(w);
}

/* The caller's descriptor beside the stream (the store's watch_wait_fd):
 * a readable pipe ends the wait with 2 and no events, and is never read;
 * a put still comes back as 1 with its event. */
static void test_extra_fd(void)
{
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_PREFIX(t_key("fd/")) };
    struct ac_etcd_watch *w;
    struct ac_etcd_events ev;
    struct ac_err err = AC_ERR_INIT;
    int p[2], r;
    char c;

    if (pipe(p) == -1) {
        TAP_OK(0, "pipe for the extra descriptor");
        return;
    }
    TAP_OK(ac_etcd_watch_open(e, &wr, &w, 0, &err) == 0, "open a watch for the extra descriptor");
    if (!w) {
        close(p[0]);
        close(p[1]);
        return;
    }
    r = ac_etcd_watch_next_fd(w, ac_etcd_deadline_in(300), p[0], &ev, &err);
    TAP_INT_EQ(r, 0, "a quiet descriptor and no put: 0 at the deadline");
    TAP_OK(write(p[1], "x", 1) == 1, "make the descriptor readable");
    r = ac_etcd_watch_next_fd(w, ac_etcd_deadline_in(30000), p[0], &ev, &err);
    TAP_OK(r == 2 && ev.nevents == 0, "a readable descriptor ends the wait with 2 and no events");
    TAP_OK(read(p[0], &c, 1) == 1 && c == 'x', "the byte is still there: the watch never read it");
    put(e, t_key("fd/k"), "v", NULL);
    r = ac_etcd_watch_next_fd(w, ac_etcd_deadline_in(30000), p[0], &ev, &err);
    TAP_OK(r == 1 && ev.nevents == 1 && strcmp(ev.events[0].kv.value, "v") == 0,
           "a put with the descriptor quiet: 1 and its event");
    if (r == 1)
        ac_etcd_events_free(&ev);
    ac_etcd_watch_close(w);
    close(p[0]);
    close(p[1]);
}

static void test_history(void)
{
    int64_t r1 = 0, r2 = 0, r3 = 0, rdel = 0;
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_PREFIX(t_key("h/")), .prev_kv = 1 };
    struct ac_etcd_watch *w = NULL;
    struct ac_etcd_events ev;
    struct ac_err err = AC_ERR_INIT;
    size_t got = 0;
    int order = 1, r;
    char seen[4][16];

    put(e, t_key("h/a"), "1", &r1);
    put(e, t_key("h/b"), "2", &r2);
    put(e, t_key("h/a"), "3", &r3);
    ac_etcd_delete(e, &AC_ETCD_KEY(t_key("h/b")), NULL, &rdel, 0, &err);
    wr.start_revision = r1;
    TAP_OK(ac_etcd_watch_open(e, &wr, &w, 0, &err) == 0, "watch from an old revision");
    while (w && got < 4) {
        size_t i;
        r = ac_etcd_watch_next(w, ac_etcd_deadline_in(10000), &ev, &err);
        if (r != 1)
            break;
        for (i = 0; i < ev.nevents && got < 4; i++, got++) {
            struct ac_etcd_event *x = &ev.events[i];
            int64_t want[] = { r1, r2, r3, rdel };
            if (x->kv.mod_revision != want[got])
                order = 0;
            snprintf(seen[got], sizeof seen[got], "%c%s=%s%s%s",
                     x->type == AC_ETCD_EVENT_PUT ? '+' : '-', x->kv.key + x->kv.key_len - 1,
                     x->kv.value, x->has_prev ? "/" : "", x->has_prev ? x->prev_kv.value : "");
        }
        ac_etcd_events_free(&ev);
    }
    TAP_INT_EQ(got, 4, "the 4 past changes are replayed");
    TAP_OK(order, "in revision order");
    if (got == 4) {
        TAP_STR_EQ(seen[0], "+a=1", "put a=1 (no previous pair)");
        TAP_STR_EQ(seen[2], "+a=3/1", "put a=3 with the previous pair a=1");
        TAP_STR_EQ(seen[3], "-b=/2", "delete b with the deleted pair b=2");
    }
    TAP_INT_EQ(w ? ac_etcd_watch_revision(w) : 0, rdel + 1,
               "the resume revision is the last event's + 1");
    ac_etcd_watch_close(w);
}

static void test_compacted(void)
{
    int64_t r1 = 0, r2 = 0;
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_KEY(t_key("cmp")) };
    struct ac_etcd_watch *w = NULL;
    struct ac_etcd_events ev;
    struct ac_err err = AC_ERR_INIT;
    int r;
    put(e, t_key("cmp"), "1", &r1);
    put(e, t_key("cmp"), "2", &r2);
    ac_etcd_compact(e, r2, 0, &err);
    wr.start_revision = r1;
    r = ac_etcd_watch_open(e, &wr, &w, 0, &err);
    if (r == 0)
        r = ac_etcd_watch_next(w, ac_etcd_deadline_in(10000), &ev, &err);
    TAP_OK(r == -1 && strcmp(err.code, "ETCD_COMPACTED") == 0,
           "a watch from a compacted revision fails with ETCD_COMPACTED");
    TAP_OK(w == NULL || ac_etcd_watch_compacted(w) == r2,
           "... naming the compaction revision: %s", err.msg);
    ac_etcd_watch_close(w);
}

/*
 * The resume test: a writer process puts N keys (k/0001..) one after the
 * other through a member other than the watch's; after some have arrived,
 * `fault` (kill or pause) hits the member the watch is connected to. The
 * watch must deliver every key exactly once, in order.
 */
#define N_KEYS 300

/* An attempt of ac_etcd_retry: create key (ctx) unless it exists. */
static int put_once(struct ac_etcd *c, void *ctx, int64_t deadline, struct ac_err *err)
{
    const char *key = ctx;
    struct ac_etcd_cmp absent = { AC_ETCD_KEY(key), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 };
    struct ac_etcd_op op = { AC_ETCD_OP_PUT, AC_ETCD_KEY(key), "v", 1, 0, 0, 0, 0, 0, 0 };
    struct ac_etcd_txn_req t = { &absent, 1, &op, 1, NULL, 0 };
    struct ac_etcd_txn_res r;
    if (ac_etcd_txn(c, &t, &r, deadline, err) == -1)
        return -1;
    ac_etcd_txn_res_free(&r);
    return 1;      /* put now, or by an attempt whose answer was lost */
}

static void test_resume(const char *fault)
{
    struct ac_etcd *wc = watch_client();
    char prefix[128], member[16], out[128];
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_PREFIX(prefix) };
    struct ac_etcd_watch *w = NULL;
    struct ac_err err = AC_ERR_INIT;
    int64_t start_rev = 0, t0;
    static int count[N_KEYS + 1];
    int i, dup = 0, missing = 0, in_order = 1, faulted = 0, status, last = 0, delivered = 0;
    size_t wep, n = ac_etcd_endpoint_count(e);
    pid_t pid;

    snprintf(prefix, sizeof prefix, "%s/", t_key("resume-%s", fault));
    memset(count, 0, sizeof count);
    put(e, t_key("resume-start-%s", fault), "x", &start_rev);
    /* the watch on the member after the leader-agnostic default */
    ac_etcd_set_current(wc, 1);
    wr.start_revision = start_rev + 1;
    if (ac_etcd_watch_open(wc, &wr, &w, 0, &err) == -1) {
        TAP_OK(0, "%s: open the watch: %s", fault, err.msg);
        ac_etcd_close(wc);
        return;
    }
    wep = ac_etcd_watch_endpoint(w);
    snprintf(member, sizeof member, "%s", t_etcd_member(wep));
    pid = t_fork();
    if (pid == 0) {
        struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
        struct ac_etcd *c;
        cfg.op_timeout_ms = 30000;
        c = t_etcd_open(eps, &cfg);
        ac_etcd_set_current(c, (wep + 1) % n);
        for (i = 1; i <= N_KEYS; i++) {
            char key[192];
            struct ac_err werr = AC_ERR_INIT;
            snprintf(key, sizeof key, "%s%04d", prefix, i);
            /* create-if-absent, retried: a put whose answer was lost
             * is not repeated (that would be a second event) */
            if (ac_etcd_retry(c, put_once, key, 0, NULL, &werr) == -1) {
                printf("# writer: %s: %s: %s\n", key, werr.code, werr.msg);
                fflush(stdout);
                _exit(1);
            }
            ac_clock_sleep_ns(3000000);
        }
        ac_etcd_close(c);
        _exit(0);
    }
    t0 = ac_clock_mono_ns();
    while (delivered < N_KEYS && t_ms_since(t0) < 90000) {
        struct ac_etcd_events ev;
        size_t j;
        int r = ac_etcd_watch_next(w, ac_etcd_deadline_in(5000), &ev, &err);
        if (r == -1) {
            printf("# watch: %s: %s\n", err.code, err.msg);
            break;
        }
        for (j = 0; r == 1 && j < ev.nevents; j++) {
            const char *k = ev.events[j].kv.key + strlen(prefix);
            int num = atoi(k);
            if (num < 1 || num > N_KEYS)
                continue;
            if (count[num]++)
                dup++;
            if (num <= last)
                in_order = 0;
            last = num;
            delivered++;
        }
        if (r == 1)
            ac_etcd_events_free(&ev);
        if (!faulted && delivered >= N_KEYS / 3) {
            t_etcd_ctl(out, sizeof out, "%s %s", fault, member);
            faulted = 1;
            printf("# %s %s (the watch's member) after %d events\n", fault, member, delivered);
        }
    }
    waitpid(pid, &status, 0);
    for (i = 1; i <= N_KEYS; i++)
        if (count[i] == 0)
            missing++;
    printf("# %s: %d events in %ld ms, %u reconnects, now on %s\n", fault, delivered,
           t_ms_since(t0), ac_etcd_watch_reconnects(w), t_etcd_member(ac_etcd_watch_endpoint(w)));
    TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the writer put all %d keys", fault,
           N_KEYS);
    TAP_OK(faulted, "%s: the watch's member %s was hit mid-stream", fault, member);
    TAP_OK(ac_etcd_watch_reconnects(w) >= 1 && ac_etcd_watch_endpoint(w) != wep,
           "%s: the watch moved to another member", fault);
    TAP_INT_EQ(missing, 0, "%s: no event missed", fault);
    TAP_INT_EQ(dup, 0, "%s: no event delivered twice", fault);
    TAP_OK(in_order, "%s: events in order", fault);
    ac_etcd_watch_close(w);
    ac_etcd_close(wc);
    if (strcmp(fault, "kill") == 0)
        TAP_OK(t_etcd_ctl(out, sizeof out, "restart %s", member) == 0, "%s: %s restarts", fault,
               member);
    else
        TAP_OK(t_etcd_ctl(out, sizeof out, "resume %s", member) == 0 &&
                   t_etcd_ctl(out, sizeof out, "wait-healthy 30") == 0,
               "%s: %s resumes", fault, member);
}

int main(int argc, char **argv)
{
    eps = t_etcd_cluster(argc, argv, 0);
    e = t_etcd_open(eps, NULL);
    test_wakeup();
    test_extra_fd();
    test_history();
    test_compacted();
    test_resume("kill");
    test_resume("pause");
    ac_etcd_close(e);
    return tap_done();
}
