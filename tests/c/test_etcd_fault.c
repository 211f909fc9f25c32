/*
 * test_etcd_fault.c - the etcd client's failover rules against a live
 * 3-member cluster whose members are killed and paused:
 *
 *   - a dead member (connection refused: nothing sent): reads and writes
 *     go to the next endpoint at once and succeed;
 *   - a hung member (SIGSTOP: the TCP connection is accepted, nothing
 *     answers): a write times out as ETCD_OUTCOME_UNKNOWN (never resent
 *     by the client), and the compare-and-swap retry finishes it on the
 *     next member; a read is retried there by the client itself;
 *   - quorum loss (2 of 3 killed): put, txn retry, range, watch open and a
 *     running watch each end with one clear one-line error, within their
 *     deadline (the test only bounds a hang: no timing assertion), and the
 *     same client works again once the members are back.
 */
#include <inttypes.h>
#include <signal.h>

#include "etcdpost.h"
#include "etcdutil.h"
#include "tap.h"

#define OP_MS 3000

static const char *eps;

static void on_alarm(int sig)
{
    (void)sig;
    /* write(2) is async-signal-safe, printf is not */
    static const char msg[] = "Bail out! an etcd call hung (watchdog alarm)\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(98);
    _exit(99);
}

/* A client with a short deadline (OP_MS) starting at endpoint i. */
static struct ac_etcd *client_at(size_t i)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    struct ac_etcd *c;
    cfg.op_timeout_ms = OP_MS;
    cfg.request_timeout_ms = 1000;
    cfg.watch_probe_ms = 500;
    c = t_etcd_open(eps, &cfg);
    ac_etcd_set_current(c, i);
    return c;
}

static int one_line(const struct ac_err *err)
{
    return err->code && err->msg[0] && !strchr(err->msg, '\n') && !strchr(err->msg, '\r');
}

static void test_dead_member(void)
{
    struct ac_etcd *c;
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY(t_key("dead")) };
    struct ac_etcd_range_res rs;
    char out[128], leader[16], victim[16];
    size_t vi;
    int rc;

    /* a follower: the cluster keeps its leader, so what is measured is the
     * client's failover alone */
    t_etcd_ctl(leader, sizeof leader, "leader");
    snprintf(victim, sizeof victim, "%s", strcmp(leader, "m1") == 0 ? "m2" : "m1");
    vi = t_etcd_index(victim);
    c = client_at(vi);
    TAP_OK(t_etcd_ctl(out, sizeof out, "kill %s", victim) == 0,
           "kill %s (the client's endpoint)", victim);
    rc = ac_etcd_put(c, t_key("dead"), 0, "v", 1, 0, NULL, 0, &err);
    TAP_OK(rc == 0, "a write through a dead member is sent to the next one at once%s%s",
           rc ? ": " : "", rc ? err.msg : "");
    TAP_OK(ac_etcd_current(c) == (vi + 1) % 3 && ac_etcd_failovers(c) == 1,
           "the client moved to the next endpoint (one failover)");
    ac_etcd_set_current(c, vi);
    rc = ac_etcd_range(c, &rq, &rs, 0, &err);
    TAP_OK(rc == 0 && rs.nkvs == 1, "a read through it too");
    if (rc == 0)
        ac_etcd_range_res_free(&rs);
    TAP_OK(t_etcd_ctl(out, sizeof out, "restart %s", victim) == 0, "%s restarts", victim);
    ac_etcd_close(c);
}

static void test_hung_member(void)
{
    struct ac_etcd *c;
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY(t_key("hung")) };
    struct ac_etcd_range_res rs;
    char out[128], leader[16], victim[16];
    int64_t last_seq = 0, last_mod = 0, seq, t0;
    int rc, replayed = 0;
    size_t vi;

    /* pause a follower: the cluster keeps its quorum */
    t_etcd_ctl(leader, sizeof leader, "leader");
    snprintf(victim, sizeof victim, "%s", strcmp(leader, "m3") == 0 ? "m2" : "m3");
    vi = t_etcd_index(victim);
    c = client_at(vi);
    ac_etcd_put(c, t_key("hung"), 0, "v", 1, 0, NULL, 0, &err);   /* connect while alive */
    TAP_OK(t_etcd_ctl(out, sizeof out, "pause %s", victim) == 0, "SIGSTOP %s", victim);
    t0 = ac_clock_mono_ns();
    rc = ac_etcd_put(c, t_key("hung"), 0, "w", 1, 0, NULL, 0, &err);
    printf("# write through the hung member: %ld ms: %s\n", t_ms_since(t0), err.msg);
    TAP_OK(rc == -1 && strcmp(err.code, "ETCD_OUTCOME_UNKNOWN") == 0,
           "a write through a hung member: ETCD_OUTCOME_UNKNOWN, not resent");
    TAP_OK(one_line(&err) && strstr(err.msg, "may or may not") != NULL,
           "... saying so on one line");
    TAP_OK(ac_etcd_current(c) != vi, "the next call starts on another member");
    ac_etcd_set_current(c, vi);
    seq = t_post(c, t_key("hung-chan"), "k1", "body", &last_seq, &last_mod, 0, &replayed, &err);
    TAP_OK(seq == 1, "a CAS post through the hung member completes on another (seq %lld)",
           (long long)seq);
    ac_etcd_set_current(c, vi);
    rc = ac_etcd_range(c, &rq, &rs, 0, &err);
    TAP_OK(rc == 0 && rs.nkvs == 1, "a read through it is retried on another by the client");
    if (rc == 0)
        ac_etcd_range_res_free(&rs);
    TAP_OK(t_etcd_ctl(out, sizeof out, "resume %s", victim) == 0 &&
               t_etcd_ctl(out, sizeof out, "wait-healthy 30") == 0,
           "%s resumes", victim);
    ac_etcd_close(c);
}

/* Run one call under quorum loss; check it failed with a clear line. */
#define LOST(what, call)                                                                       \
    do {                                                                                       \
        int64_t t0_ = ac_clock_mono_ns();                                                      \
        int rc_;                                                                               \
        err = (struct ac_err)AC_ERR_INIT;                                                      \
        rc_ = (call);                                                                          \
        printf("# %s: %ld ms: agent-chat: %s: %s\n", what, t_ms_since(t0_),                   \
               err.code ? err.code : "-", err.msg);                                            \
        TAP_OK(rc_ == -1 && one_line(&err), "quorum lost: %s fails with one line", what);      \
        TAP_OK(err.code && (strcmp(err.code, "ETCD_NO_LEADER") == 0 ||                         \
                            strcmp(err.code, "ETCD_UNAVAILABLE") == 0 ||                       \
                            strcmp(err.code, "ETCD_OUTCOME_UNKNOWN") == 0 ||                   \
                            strcmp(err.code, "ETCD_TIMEOUT") == 0),                            \
               "... with an availability code (%s)", err.code ? err.code : "none");            \
        TAP_OK(t_ms_since(t0_) < 8 * OP_MS, "... and returns (no hang)");                      \
    } while (0)

static void test_quorum_loss(void)
{
    struct ac_etcd *c = client_at(0);
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY(t_key("q")) };
    struct ac_etcd_range_res rs;
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_PREFIX(t_key("qw/")) };
    struct ac_etcd_watch *w = NULL, *w2 = NULL;
    struct ac_etcd_events ev;
    char out[128];
    int64_t last_seq = 0, last_mod = 0;
    int rc;

    ac_etcd_put(c, t_key("q"), 0, "v", 1, 0, NULL, 0, &err);
    /* a watch running on the member that survives */
    ac_etcd_set_current(c, 2);
    rc = ac_etcd_watch_open(c, &wr, &w, 0, &err);
    TAP_OK(rc == 0, "a watch runs on m3");
    ac_etcd_set_current(c, 0);
    TAP_OK(t_etcd_ctl(out, sizeof out, "kill m1") == 0 && t_etcd_ctl(out, sizeof out, "kill m2") == 0,
           "kill m1 and m2: no quorum");

    LOST("put", ac_etcd_put(c, t_key("q"), 0, "w", 1, 0, NULL, 0, &err));
    LOST("CAS post (retried until its deadline)",
         t_post(c, t_key("q-chan"), "k", "b", &last_seq, &last_mod, 0, NULL, &err) == -1 ? -1 : 0);
    LOST("range", ac_etcd_range(c, &rq, &rs, 0, &err));
    LOST("lease grant", ac_etcd_lease_grant(c, 10, &last_seq, NULL, 0, &err));
    LOST("watch open", ac_etcd_watch_open(c, &wr, &w2, 0, &err));
    if (w)
        LOST("running watch", ac_etcd_watch_next(w, ac_etcd_deadline_in(60000), &ev, &err));
    ac_etcd_watch_close(w);
    ac_etcd_watch_close(w2);

    TAP_OK(t_etcd_ctl(out, sizeof out, "restart m1") == 0 &&
               t_etcd_ctl(out, sizeof out, "restart m2") == 0 &&
               t_etcd_ctl(out, sizeof out, "wait-healthy 30") == 0,
           "m1 and m2 restart");
    rc = ac_etcd_put(c, t_key("q"), 0, "back", 4, 0, NULL, ac_etcd_deadline_in(30000), &err);
    TAP_OK(rc == 0, "the same client writes again once the quorum is back%s%s", rc ? ": " : "",
           rc ? err.msg : "");
    ac_etcd_close(c);
}

int main(int argc, char **argv)
{
    eps = t_etcd_cluster(argc, argv, 0);
    signal(SIGALRM, on_alarm);
    alarm(600);
    test_dead_member();
    test_hung_member();
    test_quorum_loss();
    return tap_done();
}
