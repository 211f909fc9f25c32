/* wait.c - the wait loop; see include/agentchat/wait.h. */
#include "agentchat/wait.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "agentchat/clock.h"

#define MIN_INTERVAL_NS (10 * 1000000LL)

static int interrupted(struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
}

void ac_wait_limits(int64_t start, double timeout_s, double interval_s,
                    int64_t *deadline, int64_t *interval_ns)
{
    *deadline = INT64_MAX;
    if (isnan(timeout_s) || timeout_s < 0)
        timeout_s = 0;
    if (!isinf(timeout_s) && timeout_s < 9.0e9)
        *deadline = start + (int64_t)(timeout_s * 1e9);
    *interval_ns = (isnan(interval_s) || interval_s * 1e9 < (double)MIN_INTERVAL_NS)
                   ? MIN_INTERVAL_NS
                   : interval_s > 86400.0 ? 86400LL * 1000000000 : (int64_t)(interval_s * 1e9);
}

int ac_wait_inbox(struct ac_chan *ch, const char *agent, int64_t after,
                  double timeout_s, double interval_s, struct ac_inbox *out,
                  struct ac_err *err)
{
    struct ac_watch *w;
    int64_t start = ac_clock_mono_ns(), deadline, interval_ns;
    int rc = -1;

    ac_wait_limits(start, timeout_s, interval_s, &deadline, &interval_ns);

    /* Open the watch before the first scan, so nothing published between
     * the scan and the wait can be missed. */
    w = ac_chan_watch_open(ch, AC_WATCH_MESSAGES, 0);
    for (;;) {
        int64_t now, nap;

        if (ac_clock_interrupted()) {
            rc = interrupted(err);
            break;
        }
        /* A file still being written is held back there (store.h). */
        if (ac_inbox_fetch(ch, agent, after, 0, out, err) == -1)
            break;
        now = ac_clock_mono_ns();
        if (out->n > 0) {
            rc = 0;
            break;
        }
        ac_inbox_free(out);
        if (now >= deadline) {
            rc = 1;
            break;
        }
        nap = interval_ns;
        if (deadline - now < nap)
            nap = deadline - now;
        if (ac_wait_nap(ch, &w, nap, err) == -1) {
            rc = -1;
            break;
        }
    }
    ac_chan_watch_close(ch, w);
    return rc;
}

int ac_wait_nap(struct ac_chan *ch, struct ac_watch **w, int64_t nap_ns, struct ac_err *err)
{
    return ac_wait_nap_fd(ch, w, -1, nap_ns, NULL, err);
}

int ac_wait_nap_fd(struct ac_chan *ch, struct ac_watch **w, int fd, int64_t nap_ns, int *which,
                   struct ac_err *err)
{
    int rc;
    if (which)
        *which = 0;
    if (*w) {
        rc = fd < 0 ? ac_chan_watch_wait(ch, *w, nap_ns) : ac_chan_watch_wait_fd(ch, *w, nap_ns, fd);
        if (rc != -1) {
            if (which)
                *which = fd < 0 ? rc : rc & 3;
            return 0;
        }
        if (errno == EINTR)
            return interrupted(err);
        /* Notification broke down, or the backend cannot wait for fd
         * too: poll the channel from now on. */
        ac_chan_watch_close(ch, *w);
        *w = NULL;
        return 0;
    }
    if (fd < 0)
        return ac_clock_sleep_ns(nap_ns) == -1 ? interrupted(err) : 0;
    {
        struct pollfd pfd = { fd, POLLIN, 0 };
        rc = ac_clock_poll_until(&pfd, 1, ac_clock_mono_ns() + (nap_ns > 0 ? nap_ns : 0));
        if (rc == -1 && errno == EINTR)
            return interrupted(err);
        if (which && rc == 1)
            *which = 2;
        return 0;
    }
}

int ac_wait_nap_many(struct ac_store *st, struct ac_chan *const *chs, struct ac_watch **ws,
                     size_t n, int64_t nap_ns, struct ac_err *err)
{
    size_t i, live = 0, first = 0;
    int rc;

    for (i = n; i-- > 0;) {
        if (ws[i]) {
            live++;
            first = i;
        }
    }
    if (live == 0)
        return ac_clock_sleep_ns(nap_ns) == -1 ? interrupted(err) : 0;
    if (live == 1)
        return ac_wait_nap(chs[first], &ws[first], nap_ns, err);
    rc = ac_store_watch_wait_many(st, ws, n, nap_ns);
    if (rc != -1)
        return 0;
    if (errno == EINTR)
        return interrupted(err);
    if (errno == ENOSYS) {
        /* One watch at a time, in short slices: a change of another is
         * seen at the next slice's rescan. */
        if (nap_ns > AC_WAIT_MANY_SLICE_NS)
            nap_ns = AC_WAIT_MANY_SLICE_NS;
        return ac_wait_nap(chs[first], &ws[first], nap_ns, err);
    }
    /* Notification broke down: poll every channel from now on. */
    for (i = 0; i < n; i++) {
        ac_chan_watch_close(chs[i], ws[i]);
        ws[i] = NULL;
    }
    return ac_clock_sleep_ns(nap_ns) == -1 ? interrupted(err) : 0;
}
