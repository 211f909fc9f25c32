/*
 * wait.h - the blocking wait of `agent-chat wait` (docs/format.md 4 "wait").
 *
 * Blocks, without using CPU, until messages relevant to the agent exist
 * above its cursor, and returns them exactly as one read would (the cursor
 * must later move to the highest seq of *that* scan, never of a later one,
 * so nothing that arrives in between is skipped).
 *
 * Wake-up is immediate through the store's change notification (inotify);
 * the directory is rescanned every `interval` anyway, which is also the
 * whole mechanism where notification is unavailable (network and FUSE file
 * systems, WSL drvfs). One monotonic deadline is computed on entry.
 *
 * Files written in place by the Python tool can be seen half written:
 * ac_inbox_fetch holds such a file back, as for every reader (store.h), so
 * the wait returns only what comes before it, or waits on.
 */
#ifndef AGENTCHAT_WAIT_H
#define AGENTCHAT_WAIT_H

#include "agentchat/store.h"

/* Returns 0 with *out filled (out->n > 0), 1 on timeout (out empty), or -1
 * with err (INTERRUPTED, exit 130, when SIGINT/SIGTERM arrived).
 * timeout_s: NaN or negative = 0; +inf = no deadline. interval_s: the
 * rescan period, at least 10 ms. */
int ac_wait_inbox(struct ac_chan *ch, const char *agent, int64_t after,
                  double timeout_s, double interval_s, struct ac_inbox *out,
                  struct ac_err *err);

/* The limits of a wait that starts at `start` (CLOCK_MONOTONIC ns):
 * *deadline from timeout_s as above (INT64_MAX for none; +inf and 9e9 s or
 * more mean none) and *interval_ns from interval_s (NaN or under 10 ms:
 * 10 ms; at most a day). Shared by ac_wait_inbox and ac_receipt_wait. */
void ac_wait_limits(int64_t start, double timeout_s, double interval_s,
                    int64_t *deadline, int64_t *interval_ns);

/* Sleep up to nap_ns between two checks of a wait: on the watch *w when
 * there is one (a change wakes it early; when notification breaks down the
 * watch is closed and *w set to NULL, so the caller polls from then on),
 * else plainly. 0, or -1 with INTERRUPTED (exit 130) on SIGINT/SIGTERM. */
int ac_wait_nap(struct ac_chan *ch, struct ac_watch **w, int64_t nap_ns, struct ac_err *err);

/* ac_wait_nap that also wakes when the descriptor fd (a host folder's
 * watch, hostfile.h; -1: none) becomes readable, in one wait on both (no
 * polling): *which (may be NULL) gets 1 when the channel may have
 * changed, 2 when fd is readable (3 both; 0 after nap_ns; a wake-up by a
 * change the caller rescans). A backend that cannot wait for both (its
 * table has no watch_wait_fd) or whose notification breaks down has its
 * watch closed (*w NULL): the nap then waits on fd alone, and the caller
 * rescans the channel after each nap. 0, or -1 with INTERRUPTED (exit
 * 130). */
int ac_wait_nap_fd(struct ac_chan *ch, struct ac_watch **w, int fd, int64_t nap_ns, int *which,
                   struct ac_err *err);

/* A backend without watch_wait_many (store.h) is waited on one watch at a
 * time, this long each, so a change of another wakes the wait this late at
 * most. */
#define AC_WAIT_MANY_SLICE_NS (50 * 1000000LL)

/* ac_wait_nap for several watches of one store (chs[i] the channel of
 * ws[i]; n <= AC_WATCH_MANY_MAX): one wait on all of them (the store's
 * watch_wait_many), no CPU until one changes or nap_ns passes. NULL
 * watches are polled (the caller rescans after each nap, as after
 * ac_wait_nap's). A watch whose notification breaks down is closed and
 * set to NULL. 0, or -1 with INTERRUPTED (exit 130). */
int ac_wait_nap_many(struct ac_store *st, struct ac_chan *const *chs, struct ac_watch **ws,
                     size_t n, int64_t nap_ns, struct ac_err *err);

#endif
