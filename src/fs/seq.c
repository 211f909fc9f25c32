/* seq.c - the _seq.lock protocol, high-water mark, reservations; see seq.h. */
#define _GNU_SOURCE
#include "seq.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentchat/channel.h"
#include "agentchat/clock.h"
#include "dirwatch.h"
#include "agentchat/fault.h"
#include "fsutil.h"
#include "store_fs.h"

#define RETRY_NS (50 * 1000000LL)
#define DEADLINE_NS (10 * 1000000000LL)
#define STALE_SEC 30

/* 1 when the lock directory is stale, 0 when not (or gone), -1 when
 * `_seq.lock` is not a directory at all. */
static int lock_is_stale(int dirfd)
{
    struct stat st;
    struct timespec now;
    if (fstatat(dirfd, AC_SEQ_LOCK_DIR, &st, AT_SYMLINK_NOFOLLOW) == -1)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return -1;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec - st.st_mtim.tv_sec > STALE_SEC;
}

static int acquire_loop(int dirfd, struct ac_seqlock *lk, int64_t deadline,
                        struct ac_dirwatch **w, struct ac_err *err);

int ac_seqlock_acquire(int dirfd, struct ac_seqlock *lk, struct ac_err *err)
{
    int64_t deadline = ac_clock_mono_ns() + DEADLINE_NS;
    struct ac_dirwatch *w = NULL;
    int rc;

    memset(lk, 0, sizeof *lk);
    lk->dirfd = dirfd;
    lk->fd = -1;
    rc = acquire_loop(dirfd, lk, deadline, &w, err);
    ac_dirwatch_close(w);
    return rc;
}

/* The retry loop of ac_seqlock_acquire. Between attempts it sleeps until
 * the directory changes (the holder's rmdir) or 50 ms pass, whichever is
 * first: the Python tool's protocol is "retry every 50 ms", and retrying
 * sooner when the lock is gone is only faster. The watch is opened lazily,
 * at the first contention. */
static int acquire_loop(int dirfd, struct ac_seqlock *lk, int64_t deadline,
                        struct ac_dirwatch **w, struct ac_err *err)
{
    int watching = 0;
    for (;;) {
        int64_t t0 = ac_clock_mono_ns();
        long switches = ac_clock_preemptions();
        int have_pre = ac_dir_state(dirfd, &lk->pre) == 0;
        if (AC_FAULT("seq.lock") == -1)
            return ac_err_sys(err, errno, NULL, "could not acquire channel seq lock");
        if (ac_sys_mkdirat(dirfd, AC_SEQ_LOCK_DIR, 0755) == 0) {
            lk->have_states = have_pre && ac_dir_state(dirfd, &lk->post) == 0;
            lk->window_ns = ac_clock_mono_ns() - t0;
            lk->preempted = switches == -1 || ac_clock_preemptions() != switches;
            /* Hold the directory open: its inode is our fencing token. A
             * lock stolen before we could open it is not ours: start over. */
            lk->fd = ac_open_dir_at(dirfd, AC_SEQ_LOCK_DIR);
            if (lk->fd == -1 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
                continue;
            if (lk->fd == -1) {
                int e = errno;
                ac_sys_unlinkat(dirfd, AC_SEQ_LOCK_DIR, AT_REMOVEDIR);
                return ac_err_sys(err, e, NULL, "could not acquire channel seq lock");
            }
            lk->held = 1;
            if (AC_FAULT("seq.locked") == -1) {
                int e = errno;
                ac_seqlock_release(lk);
                return ac_err_sys(err, e, NULL, "could not acquire channel seq lock");
            }
            return 0;
        }
        if (errno != EEXIST)
            return ac_err_sys(err, errno, NULL, "could not acquire channel seq lock");
        switch (lock_is_stale(dirfd)) {
        case -1:
            return ac_err_set(err, AC_EXIT_GENERAL, "SEQ_LOCK_INVALID",
                              "%s is not a directory but a file or symbolic link no poster made; "
                              "remove it (fsck --repair does)", AC_SEQ_LOCK_DIR);
        case 1:
            /* Another waiter may remove it first; that is fine. */
            if (ac_sys_unlinkat(dirfd, AC_SEQ_LOCK_DIR, AT_REMOVEDIR) == 0 || errno == ENOENT)
                continue;
            break;
        }
        if (ac_clock_mono_ns() >= deadline)
            return ac_err_set(err, AC_EXIT_GENERAL, "SEQ_LOCK_TIMEOUT",
                              "could not acquire channel seq lock (another poster is stuck?)");
        if (!watching) {
            watching = 1;
            *w = ac_dirwatch_open(dirfd);   /* NULL: plain 50 ms sleeps */
            continue;       /* the lock may have gone before the watch began */
        }
        if (ac_dirwatch_wait(*w, RETRY_NS) == -1)
            return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
    }
}

/* 1 when `_seq.lock` is the directory open as lk->fd. */
static int lock_is_ours(const struct ac_seqlock *lk, struct stat *mine)
{
    struct stat at;
    return fstat(lk->fd, mine) == 0 && mine->st_nlink > 0 &&
           fstatat(lk->dirfd, AC_SEQ_LOCK_DIR, &at, AT_SYMLINK_NOFOLLOW) == 0 &&
           at.st_dev == mine->st_dev && at.st_ino == mine->st_ino;
}

int ac_seqlock_check(const struct ac_seqlock *lk)
{
    struct stat mine;
    struct timespec now;
    if (!lk->held || lk->fd == -1 || !lock_is_ours(lk, &mine))
        return -1;
    /* Old enough that a waiter may judge it stale any moment (a holder
     * stopped for a while, or its lock aged by hand): not safe to act on. */
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec - mine.st_mtim.tv_sec > AC_SEQ_FENCE_SEC ? -1 : 0;
}

int ac_seqlock_gate(void *lk)
{
    return ac_seqlock_check(lk);
}

int ac_seqlock_release(struct ac_seqlock *lk)
{
    struct stat mine;
    int rc, ours;
    if (!lk->held)
        return -1;
    rc = ac_seqlock_check(lk);
    lk->held = 0;
    /* Ours (even if too old to act on): remove it. Another one: it belongs
     * to whoever judged ours stale and replaced it. The descriptor is closed
     * first: the rmdir must be the post's last act before the statx of its
     * scan stamp (scan.h), and the last close of a removed directory can
     * take long enough (ext4 evicts the inode) for another post to slip in;
     * while it is still linked its inode cannot be reused anyway. */
    ours = lock_is_ours(lk, &mine);
    close(lk->fd);
    lk->fd = -1;
    if (ours)
        ac_sys_unlinkat(lk->dirfd, AC_SEQ_LOCK_DIR, AT_REMOVEDIR);
    return rc;
}

int ac_seq_parse(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    if (i == len) {
        errno = EINVAL;
        return -1;
    }
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            errno = EINVAL;
            return -1;
        }
        if (v > (AC_SEQ_MAX - (uint64_t)(s[i] - '0')) / 10) {
            /* Say ERANGE only for what is a decimal through and through. */
            while (++i < len)
                if (s[i] < '0' || s[i] > '9') {
                    errno = EINVAL;
                    return -1;
                }
            errno = ERANGE;
            return -1;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int ac_seq_high_get(int dirfd, uint64_t *out, char shown[32])
{
    char *buf;
    size_t len;
    int rc, e;
    *out = 0;
    if (shown)
        shown[0] = '\0';
    if (ac_read_file_at(dirfd, AC_SEQ_HIGH_FILE, 64, &buf, &len) == -1) {
        if (errno == ENOENT)
            return 0;
        if (errno == EFBIG)
            errno = EINVAL;     /* no seq takes 64 bytes */
        return -1;
    }
    rc = ac_seq_parse(buf, len, out);
    e = errno;
    if (rc == -1 && shown)
        snprintf(shown, 32, "%.24s", buf);
    free(buf);
    errno = e;
    return rc;
}

int ac_seq_high_raise(int dirfd, uint64_t seq, const struct ac_seqlock *lk)
{
    char buf[32];
    uint64_t cur;
    int n;
    if (ac_seq_high_get(dirfd, &cur, NULL) == 0 && cur >= seq)
        return 0;
    n = snprintf(buf, sizeof buf, "%" PRIu64, seq);
    return ac_write_atomic_gated(dirfd, AC_SEQ_HIGH_FILE, buf, (size_t)n, 0644,
                                 AC_ATOMIC_REPLACE | AC_ATOMIC_NO_DIRSYNC, "post.seqhigh",
                                 lk ? ac_seqlock_gate : NULL, (void *)lk);
}

int ac_seq_reserve(int dirfd, uint64_t seq, char *name)
{
    int fd;
    snprintf(name, AC_SEQ_RESERVATION_MAX, ".seqres-%" PRIu64, seq);
    fd = ac_sys_create(dirfd, name, O_WRONLY | O_EXCL | O_NOFOLLOW, 0644);
    if (fd == -1)
        return errno == EEXIST ? AC_SEQ_TAKEN : -1;
    return fd;
}

void ac_seq_unreserve(int dirfd, const char *name)
{
    ac_sys_unlinkat(dirfd, name, 0);
}

struct seq_sweep {
    int dirfd;
    int removed;
};

static int seq_sweep_cb(void *ctx, const char *name, unsigned char type)
{
    static const char *const seqhigh[] = { AC_SEQ_HIGH_FILE, NULL };
    struct seq_sweep *s = ctx;
    if (type != DT_REG)
        return 0;
    if (strncmp(name, ".seqres-", 8) == 0 || ac_is_temp_name(name, seqhigh)) {
        if (ac_sys_unlinkat(s->dirfd, name, 0) == 0)
            s->removed++;
    }
    return 0;
}

int ac_seq_sweep(int dirfd, struct ac_err *err)
{
    struct ac_seqlock lk;
    struct seq_sweep s = { dirfd, 0 };
    if (ac_seqlock_acquire(dirfd, &lk, err) == -1)
        return -1;
    ac_dir_walk(dirfd, seq_sweep_cb, &s);
    s.removed += ac_sweep_temps_of(dirfd, 60, ac_channel_temp_targets);
    ac_seqlock_release(&lk);
    return s.removed;
}
