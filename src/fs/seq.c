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

#include "agentchat/clock.h"
#include "dirwatch.h"
#include "agentchat/fault.h"
#include "fsutil.h"

#define RETRY_NS (50 * 1000000LL)
#define DEADLINE_NS (10 * 1000000000LL)
#define STALE_SEC 30

static int lock_is_stale(int dirfd)
{
    struct stat st;
    struct timespec now;
    if (fstatat(dirfd, AC_SEQ_LOCK_DIR, &st, AT_SYMLINK_NOFOLLOW) == -1)
        return 0;
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
            struct stat st;
            lk->have_states = have_pre && ac_dir_state(dirfd, &lk->post) == 0;
            lk->window_ns = ac_clock_mono_ns() - t0;
            lk->preempted = switches == -1 || ac_clock_preemptions() != switches;
            lk->held = 1;
            if (fstatat(dirfd, AC_SEQ_LOCK_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0)
                lk->lock_ino = (uint64_t)st.st_ino;
            return 0;
        }
        if (errno != EEXIST)
            return ac_err_sys(err, errno, NULL, "could not acquire channel seq lock");
        if (lock_is_stale(dirfd)) {
            /* Another waiter may remove it first; that is fine. */
            if (ac_sys_unlinkat(dirfd, AC_SEQ_LOCK_DIR, AT_REMOVEDIR) == 0 || errno == ENOENT)
                continue;
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

void ac_seqlock_release(struct ac_seqlock *lk)
{
    struct stat st;
    if (!lk->held)
        return;
    lk->held = 0;
    if (lk->lock_ino && (fstatat(lk->dirfd, AC_SEQ_LOCK_DIR, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
                         (uint64_t)st.st_ino != lk->lock_ino))
        return;     /* ours was stolen as stale; the current one is not ours */
    ac_sys_unlinkat(lk->dirfd, AC_SEQ_LOCK_DIR, AT_REMOVEDIR);
}

uint64_t ac_seq_high_read(int dirfd)
{
    char *buf;
    size_t len;
    uint64_t v = 0;
    if (ac_read_file_at(dirfd, AC_SEQ_HIGH_FILE, 64, &buf, &len) == -1)
        return 0;
    if (sscanf(buf, "%" SCNu64, &v) != 1)
        v = 0;
    free(buf);
    return v;
}

int ac_seq_high_write(int dirfd, uint64_t seq)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%" PRIu64, seq);
    return ac_write_atomic(dirfd, AC_SEQ_HIGH_FILE, buf, (size_t)n, 0644,
                           AC_ATOMIC_REPLACE | AC_ATOMIC_NO_DIRSYNC, "post.seqhigh");
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
    struct seq_sweep *s = ctx;
    size_t len = strlen(name);
    if (type != DT_REG)
        return 0;
    if (strncmp(name, ".seqres-", 8) == 0 ||
        (strncmp(name, ".seqhigh.", 9) == 0 && len > 4 && strcmp(name + len - 4, ".tmp") == 0)) {
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
    s.removed += ac_sweep_temps(dirfd, 60);
    ac_seqlock_release(&lk);
    return s.removed;
}
