/*
 * test_etcd_seq.c - dense per-channel seqs by compare-and-swap with an
 * idempotency key (tests/c/etcdpost.h), against a live 3-member cluster:
 *
 *   1. a retry after an unknown outcome finds its key and does not post
 *      twice;
 *   2. 4 writer processes x 200 posts on one channel: seqs 1..800, each
 *      once, every message present with the body of its post;
 *   3. the same while the leader is SIGKILLed after ~200 posts (the
 *      writers talk to different members, so some lose theirs): still
 *      1..800, nothing lost, nothing twice.
 */
#include <inttypes.h>
#include <signal.h>

#include "etcdpost.h"
#include "etcdutil.h"
#include "tap.h"

#define WRITERS 4
#define POSTS 200

static const char *eps;

/* Writer k: POSTS posts to chan, each seq reported on fd as "k i seq\n". */
static void writer(int k, const char *chan, int fd)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    struct ac_etcd *e;
    struct ac_err err = AC_ERR_INIT;
    int64_t last_seq = 0, last_mod = 0;
    unsigned replays = 0;
    int i;
    cfg.op_timeout_ms = 30000;
    e = t_etcd_open(eps, &cfg);
    /* spread the writers over the members */
    ac_etcd_set_current(e, (size_t)k % ac_etcd_endpoint_count(e));
    for (i = 0; i < POSTS; i++) {
        char idem[32], body[64], line[64];
        int replayed = 0;
        int64_t seq;
        snprintf(idem, sizeof idem, "w%d-%d", k, i);
        snprintf(body, sizeof body, "writer %d post %d", k, i);
        seq = t_post(e, chan, idem, body, &last_seq, &last_mod, 0, &replayed, &err);
        if (seq == -1) {
            printf("# writer %d post %d: %s: %s\n", k, i, err.code, err.msg);
            fflush(stdout);
            _exit(1);
        }
        replays += (unsigned)replayed;
        snprintf(line, sizeof line, "%d %d %lld\n", k, i, (long long)seq);
        if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
            _exit(2);
    }
    printf("# writer %d: %lu endpoint switches, %u posts found committed on retry\n", k,
           ac_etcd_failovers(e), replays);
    fflush(stdout);
    ac_etcd_close(e);
    _exit(0);
}

static int64_t read_seq(struct ac_etcd *e, const char *chan)
{
    char key[256];
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY(key) };
    struct ac_etcd_range_res rs;
    struct ac_err err = AC_ERR_INIT;
    int64_t n = -1;
    snprintf(key, sizeof key, "%s/seq", chan);
    if (ac_etcd_range(e, &rq, &rs, ac_etcd_deadline_in(3000), &err) == 0) {
        n = rs.nkvs ? strtoll(rs.kvs[0].value, NULL, 10) : 0;
        ac_etcd_range_res_free(&rs);
    }
    return n;
}

/* Run the writers on chan; with kill_at > 0 SIGKILL the leader once the
 * channel has that many posts. Checks the outcome. */
static void run(struct ac_etcd *e, const char *chan, int64_t kill_at, const char *what)
{
    int fds[2], k, status, ok_children = 1;
    pid_t pids[WRITERS];
    static unsigned char seen[WRITERS * POSTS + 1];
    static int64_t got[WRITERS][POSTS];
    char buf[65536], leader[64] = "";
    size_t have = 0;
    ssize_t n;
    int dup = 0, out_of_range = 0, lines = 0;
    int64_t start = ac_clock_mono_ns(), kill_time = 0;
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    struct ac_err err = AC_ERR_INIT;
    char prefix[256];
    size_t i;
    int bodies_ok = 1, dense = 1;

    memset(seen, 0, sizeof seen);
    memset(got, 0, sizeof got);
    if (pipe(fds) == -1)
        t_bail("pipe");
    for (k = 0; k < WRITERS; k++) {
        pids[k] = t_fork();
        if (pids[k] == 0) {
            close(fds[0]);
            writer(k, chan, fds[1]);
        }
    }
    close(fds[1]);
    if (kill_at > 0) {
        /* Wait until the channel has kill_at posts (or the writers are
         * done), then kill the leader. */
        for (;;) {
            int64_t s = read_seq(e, chan);
            if (s >= kill_at || t_ms_since(start) > 120000)
                break;
            ac_clock_sleep_ns(5000000);
        }
        int64_t at = read_seq(e, chan), s;
        t_etcd_ctl(leader, sizeof leader, "kill-leader");
        kill_time = ac_clock_mono_ns();
        /* the time to the next committed post, for the record */
        while ((s = read_seq(e, chan)) <= at && t_ms_since(kill_time) < 60000)
            ac_clock_sleep_ns(2000000);
        printf("# killed leader %s at seq %lld; seq %lld committed %ld ms after the kill\n", leader,
               (long long)at, (long long)s, t_ms_since(kill_time));
    }
    while ((n = read(fds[0], buf + have, sizeof buf - have - 1)) > 0) {
        char *line = buf, *nl;
        have += (size_t)n;
        buf[have] = '\0';
        while ((nl = strchr(line, '\n')) != NULL) {
            int w, i2;
            long long seq;
            *nl = '\0';
            if (sscanf(line, "%d %d %lld", &w, &i2, &seq) == 3 && w >= 0 && w < WRITERS &&
                i2 >= 0 && i2 < POSTS) {
                lines++;
                got[w][i2] = seq;
                if (seq < 1 || seq > WRITERS * POSTS)
                    out_of_range++;
                else if (seen[seq]++)
                    dup++;
            }
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
    }
    close(fds[0]);
    for (k = 0; k < WRITERS; k++) {
        if (waitpid(pids[k], &status, 0) == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            ok_children = 0;
    }
    printf("# %s: %d posts in %ld ms\n", what, lines, t_ms_since(start));
    TAP_OK(ok_children, "%s: every writer posted all its messages", what);
    TAP_INT_EQ(lines, WRITERS * POSTS, "%s: %d seqs reported", what, WRITERS * POSTS);
    TAP_INT_EQ(dup, 0, "%s: no seq given twice", what);
    TAP_INT_EQ(out_of_range, 0, "%s: no seq outside 1..%d", what, WRITERS * POSTS);

    /* The store: seq = 800, messages 1..800 dense, each with the body of
     * the post that reported its seq. */
    TAP_INT_EQ(read_seq(e, chan), WRITERS * POSTS, "%s: the counter ends at %d", what,
               WRITERS * POSTS);
    snprintf(prefix, sizeof prefix, "%s/msg/", chan);
    rq = (struct ac_etcd_range_req){ .keys = AC_ETCD_PREFIX(prefix) };
    if (ac_etcd_range(e, &rq, &rs, 0, &err) == -1) {
        printf("# range: %s: %s\n", err.code, err.msg);
        memset(&rs, 0, sizeof rs);
    }
    TAP_INT_EQ(rs.nkvs, WRITERS * POSTS, "%s: %d messages stored", what, WRITERS * POSTS);
    for (i = 0; i < rs.nkvs; i++) {
        char want[300];
        snprintf(want, sizeof want, "%s%08zu", prefix, i + 1);
        if (strcmp(rs.kvs[i].key, want) != 0)
            dense = 0;
    }
    for (k = 0; k < WRITERS; k++) {
        int i2;
        for (i2 = 0; i2 < POSTS; i2++) {
            char body[64];
            int64_t s = got[k][i2];
            snprintf(body, sizeof body, "writer %d post %d", k, i2);
            if (s < 1 || (size_t)s > rs.nkvs || strcmp(rs.kvs[s - 1].value, body) != 0)
                bodies_ok = 0;
        }
    }
    TAP_OK(dense, "%s: message keys are 1..%d with no gap", what, WRITERS * POSTS);
    TAP_OK(bodies_ok, "%s: every reported '#N' holds that post's body", what);
    ac_etcd_range_res_free(&rs);
    if (kill_at > 0) {
        char out[128];
        int rc = t_etcd_ctl(out, sizeof out, "restart %s", leader);
        TAP_OK(rc == 0, "%s: the killed member %s restarts and rejoins (%s)", what, leader, out);
    }
}

/* A retry whose first attempt committed (the reply was lost) finds its
 * idempotency key: same seq, no second message. */
static void test_replay(struct ac_etcd *e)
{
    const char *chan = t_key("replay");
    int64_t last_seq = 0, last_mod = 0, s1, s2, s3;
    int replayed = -1;
    struct ac_err err = AC_ERR_INIT;
    s1 = t_post(e, chan, "same-key", "hello", &last_seq, &last_mod, 0, &replayed, &err);
    TAP_OK(s1 == 1 && replayed == 0, "first post gets seq 1");
    /* as if the answer had been lost: the caller retries with the key */
    s2 = t_post(e, chan, "same-key", "hello", &last_seq, &last_mod, 0, &replayed, &err);
    TAP_OK(s2 == 1 && replayed == 1, "the retry finds seq 1 committed and posts nothing");
    s3 = t_post(e, chan, "other-key", "world", &last_seq, &last_mod, 0, &replayed, &err);
    TAP_OK(s3 == 2, "the next post gets seq 2 (no hole, no duplicate)");
    TAP_INT_EQ(read_seq(e, chan), 2, "counter is 2");
    /* a stale cache only loses the compare */
    last_seq = 0;
    last_mod = 0;
    s3 = t_post(e, chan, "third", "x", &last_seq, &last_mod, 0, &replayed, &err);
    TAP_OK(s3 == 3, "a post with a stale counter cache still gets seq 3");
}

int main(int argc, char **argv)
{
    struct ac_etcd *e;
    char chan[128];
    eps = t_etcd_cluster(argc, argv, 0);
    e = t_etcd_open(eps, NULL);
    test_replay(e);
    snprintf(chan, sizeof chan, "%s", t_key("ch-quiet"));
    run(e, chan, 0, "4x200");
    snprintf(chan, sizeof chan, "%s", t_key("ch-killed"));
    run(e, chan, WRITERS * POSTS / 4, "4x200 with the leader SIGKILLed");
    ac_etcd_close(e);
    return tap_done();
}
