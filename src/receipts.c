/* receipts.c - acks and read receipts; see include/agentchat/receipts.h. */
#include "agentchat/receipts.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/channel.h"
#include "agentchat/clock.h"
#include "agentchat/store.h"
#include "agentchat/utf8.h"
#include "agentchat/wait.h"

#define ACK_SUFFIX ".json"

/* Why `agent` cannot name an ack file, or NULL when it can. The rules are
 * the channel-name rules of channel.c (so an ack can never leave its
 * directory), with a smaller length limit. */
static const char *agent_problem(const char *agent)
{
    return agent[0] ? ac_name_problem(agent, AC_ACK_AGENT_MAX) : "empty name blocked";
}

int ac_ack_agent_check(const char *agent, struct ac_err *err)
{
    return ac_name_refuse(agent, agent_problem(agent), "RECEIPT_INVALID_AGENT", "agent", err);
}

/* "<seq>/<agent>": the ack's record name (store.h, AC_ACKS). */
static void ack_record(uint64_t seq, const char *agent, char out[AC_ACK_AGENT_MAX + 32])
{
    snprintf(out, AC_ACK_AGENT_MAX + 32, "%" PRIu64 "/%s", seq, agent);
}

int ac_ack_write(struct ac_chan *ch, uint64_t seq, const char *agent, const char *data,
                 size_t len, struct ac_err *err)
{
    char name[AC_ACK_AGENT_MAX + 32];
    if (ac_ack_agent_check(agent, err) == -1)
        return -1;
    ack_record(seq, agent, name);
    return ac_chan_rec_create(ch, AC_ACKS, name, data, len, err);
}

int ac_ack_read(struct ac_chan *ch, uint64_t seq, const char *agent, char **data, size_t *len,
                int64_t *mtime_us, struct ac_err *err)
{
    char name[AC_ACK_AGENT_MAX + 32];
    struct ac_record r;

    *data = NULL;
    *len = 0;
    *mtime_us = 0;
    if (ac_ack_agent_check(agent, err) == -1)
        return -1;
    ack_record(seq, agent, name);
    if (ac_chan_rec_read(ch, AC_ACKS, name, &r, NULL) == -1) {
        if (r.sys_errno == ENOENT)
            return 0;
        return ac_err_sys(err, r.sys_errno ? r.sys_errno : EIO, NULL,
                          "could not read ack %s/%" PRIu64 "/%s" ACK_SUFFIX, AC_ACK_DIR, seq, agent);
    }
    *data = r.data;
    *len = r.len;
    *mtime_us = r.mtime_us;
    r.data = NULL;
    ac_record_free(&r);
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ac_ack_list(struct ac_chan *ch, uint64_t seq, char ***names, size_t *n, struct ac_err *err)
{
    struct ac_recset set;
    struct ac_err serr = AC_ERR_INIT;
    char prefix[32];
    size_t i;

    *names = NULL;
    *n = 0;
    snprintf(prefix, sizeof prefix, "%" PRIu64 "/", seq);
    if (ac_chan_rec_scan(ch, AC_ACKS, prefix, AC_SCAN_NAMES, &set, &serr) == -1)
        return ac_err_sys(err, serr.sys_errno ? serr.sys_errno : EIO, NULL,
                          "could not list acks %s/%" PRIu64, AC_ACK_DIR, seq);
    if (set.n == 0) {
        ac_recset_free(&set);
        return 0;               /* none: *names stays NULL */
    }
    *names = calloc(set.n, sizeof **names);
    if (!*names) {
        ac_recset_free(&set);
        return ac_err_sys(err, ENOMEM, NULL, "could not list acks %s/%" PRIu64, AC_ACK_DIR, seq);
    }
    for (i = 0; i < set.n; i++) {
        const char *agent = set.v[i].name + strlen(prefix);
        /* only plain records named after a valid agent: not temps, not
         * hand-made files */
        if (!set.v[i].plain || agent_problem(agent))
            continue;
        (*names)[(*n)++] = set.v[i].name;
        memmove(set.v[i].name, agent, strlen(agent) + 1);
        set.v[i].name = NULL;
    }
    ac_recset_free(&set);
    if (*n == 0) {
        free(*names);
        *names = NULL;
    } else if (*n > 1) {
        qsort(*names, *n, sizeof **names, cmp_str);
    }
    return 0;
}

/* ---- waiting ---- */

/* Mark the agents that reached the state; returns how many have not. */
static size_t check_all(struct ac_chan *ch, uint64_t seq, const char *const *agents, size_t n,
                        int state, unsigned char *reached)
{
    char **acked = NULL;
    size_t nacked = 0, i, k, missing = 0;
    struct ac_err ignored = AC_ERR_INIT;

    ac_ack_list(ch, seq, &acked, &nacked, &ignored);      /* none on an error */
    for (i = 0; i < n; i++) {
        if (reached[i])
            continue;
        for (k = 0; k < nacked && strcmp(acked[k], agents[i]) != 0; k++)
            ;
        if (k < nacked)
            reached[i] = 1;
        else if (state == AC_RECEIPT_READ && ac_chan_cursor_get(ch, agents[i], NULL) >= (int64_t)seq)
            reached[i] = 1;
        else
            missing++;
    }
    ac_names_free(acked, nacked);
    return missing;
}

static int interrupted(struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
}

int ac_receipts_wait(struct ac_chan *ch, uint64_t seq, const char *const *agents, size_t n,
                     int state, double timeout_s, double interval_s,
                     unsigned char *reached, struct ac_err *err)
{
    struct ac_watch *w;
    int64_t start = ac_clock_mono_ns(), deadline, interval_ns;
    size_t i;
    int rc = -1;

    for (i = 0; i < n; i++) {
        reached[i] = 0;
        if (ac_ack_agent_check(agents[i], err) == -1)
            return -1;
    }
    ac_wait_limits(start, timeout_s, interval_s, &deadline, &interval_ns);

    /* Watch before the first check, so that nothing published between the
     * check and the wait is missed. */
    w = ac_chan_watch_open(ch, AC_WATCH_ACKS | (state == AC_RECEIPT_READ ? AC_WATCH_CURSORS : 0), seq);
    for (;;) {
        int64_t now, nap;
        if (ac_clock_interrupted()) {
            rc = interrupted(err);
            break;
        }
        if (check_all(ch, seq, agents, n, state, reached) == 0) {
            rc = 0;
            break;
        }
        now = ac_clock_mono_ns();
        if (now >= deadline) {
            rc = 1;
            break;
        }
        nap = deadline - now < interval_ns ? deadline - now : interval_ns;
        if (ac_wait_nap(ch, &w, nap, err) == -1)
            break;
    }
    ac_chan_watch_close(ch, w);
    return rc;
}
