/* mutex.c - flock mutation locks; see mutex.h. */
#include "mutex.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/clock.h"
#include "fsutil.h"

#define RETRY_NS (10 * 1000000LL)
#define DIR_RETRY_NS (50 * 1000000LL)   /* a whole import may hold it */

/* Open the lock file as a regular file, creating it if `create`. Where it
 * cannot be created or opened for writing (a read-only file system, a
 * channel of another user) an existing one is opened read-only: flock
 * needs no write access, so readers still work there, and writers fail at
 * their first write with the real reason. */
static int open_lock(int dirfd, const char *name, int create)
{
    struct stat st;
    int fd;
    if (create) {
        fd = ac_sys_create(dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK, 0644);
    } else {
        do
            fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        while (fd == -1 && errno == EINTR);
    }
    if (fd == -1 && (errno == EROFS || errno == EACCES)) {
        int e = errno;
        do
            fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        while (fd == -1 && errno == EINTR);
        if (fd == -1 && errno == ENOENT)
            errno = e;          /* no lock file, and none can be made */
    }
    if (fd == -1)
        return -1;
    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

/* After locking: does `name` still refer to the inode we hold? */
static int still_ours(int dirfd, const char *name, int fd)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int acquire(int dirfd, const char *name, int create, int64_t deadline, struct ac_flock *m)
{
    m->fd = -1;
    m->missing = 0;
    for (;;) {
        int fd = open_lock(dirfd, name, create);
        if (fd == -1)
            return -1;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            if (still_ours(dirfd, name, fd)) {
                m->fd = fd;
                return 0;
            }
            close(fd);          /* replaced under us: lock the new one */
            continue;
        }
        close(fd);
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        if (ac_clock_mono_ns() >= deadline)
            return AC_MUTEX_TIMEOUT;
        if (ac_clock_sleep_ns(RETRY_NS) == -1)
            return -1;          /* EINTR: interrupted */
    }
}

int ac_flock_acquire(int dirfd, const char *name, int64_t deadline_ns, struct ac_flock *m)
{
    return acquire(dirfd, name, 1, deadline_ns, m);
}

int ac_flock_acquire_existing(int dirfd, const char *name, int64_t deadline_ns,
                              struct ac_flock *m)
{
    return acquire(dirfd, name, 0, deadline_ns, m);
}

int ac_flock_acquire_reader(int dirfd, const char *name, int64_t deadline_ns,
                            struct ac_flock *m)
{
    int rc = acquire(dirfd, name, 0, deadline_ns, m);
    if (rc == -1 && errno == ENOENT) {
        m->missing = 1;
        return 0;
    }
    return rc;
}

void ac_flock_keep(int dirfd, const char *name, const struct ac_flock *m)
{
    int fd;
    if (!m->missing)
        return;
    fd = ac_sys_create(dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd != -1)
        close(fd);              /* best effort: it only mirrors the Python tool */
}

int ac_flock_dir(int dirfd, int64_t deadline_ns, struct ac_flock *m)
{
    int fd;
    m->fd = -1;
    m->missing = 0;
    do
        fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (fd == -1 && errno == EINTR);
    if (fd == -1)
        return -1;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            m->fd = fd;
            return 0;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (deadline_ns == 0) {
            close(fd);
            return AC_MUTEX_BUSY;
        }
        if (ac_clock_mono_ns() >= deadline_ns) {
            close(fd);
            return AC_MUTEX_TIMEOUT;
        }
        if (ac_clock_sleep_ns(DIR_RETRY_NS) == -1) {
            close(fd);
            errno = EINTR;
            return -1;
        }
    }
}

void ac_flock_release(struct ac_flock *m)
{
    if (m->fd != -1) {
        close(m->fd);           /* closing the only descriptor drops the flock */
        m->fd = -1;
    }
}
