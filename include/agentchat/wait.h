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

#endif
