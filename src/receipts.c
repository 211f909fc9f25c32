/* receipts.c - acks and read receipts; see include/agentchat/receipts.h. */
#include "agentchat/receipts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/clock.h"
#include "agentchat/cursor.h"
#include "agentchat/dirwatch.h"
#include "agentchat/fault.h"
#include "agentchat/fsutil.h"
#include "agentchat/store.h"
#include "agentchat/utf8.h"
#include "agentchat/wait.h"

#define ACK_SUFFIX ".json"
#define STALE_TEMP_SEC 60     /* a live ack never keeps its temp this long */

/* Why `agent` cannot name an ack file, or NULL when it can. The rules are
 * the channel-name rules of channel.c (so an ack can never leave its
 * directory), with a smaller length limit. */
static const char *agent_problem(const char *agent)
{
    size_t len = strlen(agent), i;
    if (len == 0)
        return "empty name blocked";
    if (strcmp(agent, ".") == 0 || strcmp(agent, "..") == 0 || strpbrk(agent, "/\\:"))
        return "path traversal blocked";
    if (agent[0] == '.' || agent[0] == '_')
        return "reserved prefix blocked";
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)agent[i];
        if (c < 0x20 || c == 0x7f)
            return "control character blocked";
    }
    if (!ac_utf8_valid(agent, len))
        return "invalid UTF-8 blocked";
    if (len > AC_ACK_AGENT_MAX)
        return "name too long";
    return NULL;
}

int ac_ack_agent_check(const char *agent, struct ac_err *err)
{
    const char *why = agent_problem(agent);
    char shown[300];
    if (!why)
        return 0;
    ac_err_quote(shown, sizeof shown, agent, 200);
    return ac_err_set(err, AC_EXIT_GENERAL, "RECEIPT_INVALID_AGENT",
                      "invalid agent name (%s): '%s'", why, shown);
}

static void ack_name(const char *agent, char out[AC_ACK_AGENT_MAX + sizeof ACK_SUFFIX])
{
    snprintf(out, AC_ACK_AGENT_MAX + sizeof ACK_SUFFIX, "%s" ACK_SUFFIX, agent);
}

static void seq_name(uint64_t seq, char out[24])
{
    snprintf(out, 24, "%" PRIu64, seq);
}

/* Open the directory `name` in dirfd, creating it first when `make` is
 * set; *made tells whether this call created it. Returns the descriptor or
 * -1 with errno (ENOENT when it does not exist and make is 0). */
static int dir_at(int dirfd, const char *name, int make, int *made)
{
    *made = 0;
    if (make) {
        if (ac_sys_mkdirat(dirfd, name, 0755) == 0)
            *made = 1;
        else if (errno != EEXIST)
            return -1;
    }
    return ac_open_dir_at(dirfd, name);
}

/* .acks/<seq>/ of the channel, created (durably) when `make` is set.
 * Returns the descriptor, or -1 with errno. */
static int seq_dir(int chfd, uint64_t seq, int make)
{
    char sname[24];
    int acks, fd, made, e;

    acks = dir_at(chfd, AC_ACK_DIR, make, &made);
    if (acks == -1)
        return -1;
    /* A new directory entry is durable once its parent is synced. */
    if (made && ac_fsync_dir(chfd) == -1)
        goto fail;
    seq_name(seq, sname);
    fd = dir_at(acks, sname, make, &made);
    if (fd == -1)
        goto fail;
    if (made && ac_fsync_dir(acks) == -1) {
        e = errno;
        close(fd);
        errno = e;
        goto fail;
    }
    close(acks);
    return fd;
fail:
    e = errno;
    close(acks);
    errno = e;
    return -1;
}

int ac_ack_write(int chfd, uint64_t seq, const char *agent, const char *data,
                 size_t len, struct ac_err *err)
{
    char name[AC_ACK_AGENT_MAX + sizeof ACK_SUFFIX];
    int fd, rc;

    if (ac_ack_agent_check(agent, err) == -1)
        return -1;
    ack_name(agent, name);
    if (AC_FAULT("ack.mkdir") == -1 || (fd = seq_dir(chfd, seq, 1)) == -1)
        return ac_err_sys(err, errno, NULL, "could not write ack %s/%" PRIu64 "/%s",
                          AC_ACK_DIR, seq, name);
    /* Temps of acks that crashed before publishing: no live writer keeps
     * one for a minute (best effort). */
    ac_sweep_temps(fd, STALE_TEMP_SEC);
    rc = ac_write_atomic(fd, name, data, len, 0644, AC_ATOMIC_NOREPLACE, "ack");
    if (rc == -1) {
        int e = errno;
        if (e == EEXIST && ac_is_regular_at(fd, name)) {
            close(fd);
            return 0;           /* acked before: the first record stays */
        }
        /* The link may have happened and only the directory fsync failed:
         * then the ack is there (whole, it was linked from a synced temp)
         * and the caller reports a warning, not a failure. */
        rc = ac_is_regular_at(fd, name) ? 2 : -1;
        close(fd);
        ac_err_sys(err, e, NULL, "could not write ack %s/%" PRIu64 "/%s",
                   AC_ACK_DIR, seq, name);
        return rc;
    }
    close(fd);
    return 1;
}

int ac_ack_read(int chfd, uint64_t seq, const char *agent, char **data, size_t *len,
                int64_t *mtime_us, struct ac_err *err)
{
    char name[AC_ACK_AGENT_MAX + sizeof ACK_SUFFIX];
    struct stat st;
    int dfd, fd, rc;

    *data = NULL;
    *len = 0;
    *mtime_us = 0;
    if (ac_ack_agent_check(agent, err) == -1)
        return -1;
    ack_name(agent, name);
    dfd = seq_dir(chfd, seq, 0);
    if (dfd == -1) {
        if (errno == ENOENT)
            return 0;
        return ac_err_sys(err, errno, NULL, "could not read ack %s/%" PRIu64 "/%s",
                          AC_ACK_DIR, seq, name);
    }
    do
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    while (fd == -1 && errno == EINTR);
    if (fd == -1) {
        int e = errno;
        close(dfd);
        if (e == ENOENT)
            return 0;
        return ac_err_sys(err, e, NULL, "could not read ack %s/%" PRIu64 "/%s",
                          AC_ACK_DIR, seq, name);
    }
    rc = ac_read_fd(fd, AC_ACK_RECORD_CAP, data, len, &st);
    if (rc == -1) {
        int e = errno;
        close(fd);
        close(dfd);
        return ac_err_sys(err, e, NULL, "could not read ack %s/%" PRIu64 "/%s",
                          AC_ACK_DIR, seq, name);
    }
    *mtime_us = (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
    close(fd);
    close(dfd);
    return 1;
}

struct names {
    int dirfd;
    char **v;
    size_t n, cap;
    int oom;
};

static int list_cb(void *ctx, const char *name, unsigned char type)
{
    struct names *c = ctx;
    size_t len = strlen(name), slen = sizeof ACK_SUFFIX - 1;
    char *agent;
    if (type != DT_REG || len <= slen || strcmp(name + len - slen, ACK_SUFFIX) != 0)
        return 0;
    agent = strndup(name, len - slen);
    if (!agent) {
        c->oom = 1;
        return 1;
    }
    if (agent_problem(agent)) {         /* temps, hand-made files */
        free(agent);
        return 0;
    }
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 8;
        char **nv = realloc(c->v, ncap * sizeof *nv);
        if (!nv) {
            free(agent);
            c->oom = 1;
            return 1;
        }
        c->v = nv;
        c->cap = ncap;
    }
    c->v[c->n++] = agent;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ac_ack_list(int chfd, uint64_t seq, char ***names, size_t *n, struct ac_err *err)
{
    struct names c;
    int dfd;

    *names = NULL;
    *n = 0;
    dfd = seq_dir(chfd, seq, 0);
    if (dfd == -1) {
        if (errno == ENOENT)
            return 0;
        return ac_err_sys(err, errno, NULL, "could not list acks %s/%" PRIu64, AC_ACK_DIR, seq);
    }
    memset(&c, 0, sizeof c);
    c.dirfd = dfd;
    if (ac_dir_walk(dfd, list_cb, &c) == -1 || c.oom) {
        int e = c.oom ? ENOMEM : errno;
        close(dfd);
        ac_names_free(c.v, c.n);
        return ac_err_sys(err, e, NULL, "could not list acks %s/%" PRIu64, AC_ACK_DIR, seq);
    }
    close(dfd);
    if (c.n > 1)
        qsort(c.v, c.n, sizeof *c.v, cmp_str);
    *names = c.v;
    *n = c.n;
    return 0;
}

int64_t ac_receipt_cursor(int chfd, const char *agent, int64_t *mtime_us)
{
    char name[AC_CURSOR_NAME_MAX];
    struct stat st;
    int cdir;

    *mtime_us = 0;
    ac_cursor_file(agent, name);
    cdir = ac_open_dir_at(chfd, AC_CURSOR_DIR);
    if (cdir != -1) {
        if (fstatat(cdir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            *mtime_us = (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
        close(cdir);
    }
    return ac_cursor_get(chfd, agent);
}

/* ---- waiting ---- */

struct waitdirs {
    int seqfd;      /* .acks/<seq>/, or -1 while it cannot be opened */
    int curfd;      /* .cursors/ (AC_RECEIPT_READ only), or -1 */
};

/* Open (creating) the directories the waiter watches; a failure leaves
 * the descriptor at -1 and the wait polls. */
static void open_dirs(int chfd, uint64_t seq, int state, struct waitdirs *d)
{
    int made;
    if (d->seqfd == -1)
        d->seqfd = seq_dir(chfd, seq, 1);
    if (state == AC_RECEIPT_READ && d->curfd == -1)
        d->curfd = dir_at(chfd, AC_CURSOR_DIR, 1, &made);
}

/* Mark the agents that reached the state; returns how many have not. */
static size_t check_all(int chfd, uint64_t seq, const char *const *agents, size_t n,
                        int state, const struct waitdirs *d, unsigned char *reached)
{
    char name[AC_ACK_AGENT_MAX + sizeof ACK_SUFFIX];
    size_t i, missing = 0;
    for (i = 0; i < n; i++) {
        if (reached[i])
            continue;
        ack_name(agents[i], name);
        if (d->seqfd != -1 && ac_is_regular_at(d->seqfd, name))
            reached[i] = 1;
        else if (state == AC_RECEIPT_READ && ac_cursor_get(chfd, agents[i]) >= (int64_t)seq)
            reached[i] = 1;
        else
            missing++;
    }
    return missing;
}

static int interrupted(struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
}

int ac_receipts_wait(int chfd, uint64_t seq, const char *const *agents, size_t n,
                     int state, double timeout_s, double interval_s,
                     unsigned char *reached, struct ac_err *err)
{
    struct waitdirs d = { -1, -1 };
    struct ac_dirwatch *w = NULL;
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
     * check and the wait is missed. One watch for both directories: they
     * share the one dnotify signal (dirwatch.h). */
    open_dirs(chfd, seq, state, &d);
    if (d.seqfd != -1) {
        w = ac_dirwatch_open(d.seqfd);
        if (w && d.curfd != -1 && ac_dirwatch_add(w, d.curfd) == -1) {
            ac_dirwatch_close(w);       /* half a watch would miss cursors */
            w = NULL;
        }
    }
    for (;;) {
        int64_t now, nap;
        if (ac_clock_interrupted()) {
            rc = interrupted(err);
            break;
        }
        if (check_all(chfd, seq, agents, n, state, &d, reached) == 0) {
            rc = 0;
            break;
        }
        now = ac_clock_mono_ns();
        if (now >= deadline) {
            rc = 1;
            break;
        }
        nap = deadline - now < interval_ns ? deadline - now : interval_ns;
        if (w) {
            if (ac_dirwatch_wait(w, nap) == -1) {
                if (errno == EINTR) {
                    rc = interrupted(err);
                    break;
                }
                ac_dirwatch_close(w);   /* notification broke: poll */
                w = NULL;
            }
        } else {
            if (ac_clock_sleep_ns(nap) == -1) {
                rc = interrupted(err);
                break;
            }
            open_dirs(chfd, seq, state, &d);    /* they may exist by now */
        }
    }
    ac_dirwatch_close(w);
    if (d.seqfd != -1)
        close(d.seqfd);
    if (d.curfd != -1)
        close(d.curfd);
    return rc;
}
