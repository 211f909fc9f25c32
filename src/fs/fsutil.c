/* fsutil.c - safe, atomic file system primitives; see fsutil.h. */
#define _GNU_SOURCE   /* renameat2, statx, O_* extras */
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "agentchat/fault.h"

static int fsync_enabled = -1;

int ac_fsync(int fd)
{
    if (AC_FAULT_SYS("fsync") == -1)
        return -1;
    if (fsync_enabled == -1) {
        const char *v = getenv("AGENT_CHAT_TEST_FSYNC");
        fsync_enabled = !(v && strcmp(v, "0") == 0);
    }
    if (!fsync_enabled)
        return 0;
    return fsync(fd);
}

int ac_fsync_dir(int dirfd)
{
    if (ac_fsync(dirfd) == -1 && errno != EINVAL)
        return -1;
    return 0;
}

static int open_retry(int dirfd, const char *name, int flags, mode_t mode)
{
    int fd;
    do
        fd = openat(dirfd, name, flags | O_CLOEXEC, mode);
    while (fd == -1 && errno == EINTR);
    return fd;
}

/* ---- the system call wrappers (fault points sys.*) ---- */

int ac_sys_create(int dirfd, const char *name, int flags, mode_t mode)
{
    if (AC_FAULT_SYS("create") == -1)
        return -1;
    return open_retry(dirfd, name, flags | O_CREAT, mode);
}

int ac_sys_mkdirat(int dirfd, const char *name, mode_t mode)
{
    if (AC_FAULT_SYS("mkdir") == -1)
        return -1;
    return mkdirat(dirfd, name, mode);
}

int ac_sys_unlinkat(int dirfd, const char *name, int flags)
{
    if (AC_FAULT_SYS(flags & AT_REMOVEDIR ? "rmdir" : "unlink") == -1)
        return -1;
    return unlinkat(dirfd, name, flags);
}

int ac_sys_renameat(int fromdir, const char *from, int todir, const char *to)
{
    if (AC_FAULT_SYS("rename") == -1)
        return -1;
    return renameat(fromdir, from, todir, to);
}

int ac_sys_linkat(int fromdir, const char *from, int todir, const char *to)
{
    if (AC_FAULT_SYS("link") == -1)
        return -1;
    return linkat(fromdir, from, todir, to, 0);
}

int ac_sys_utimensat(int dirfd, const char *name, const struct timespec times[2], int flags)
{
    if (AC_FAULT_SYS("utime") == -1)
        return -1;
    return utimensat(dirfd, name, times, flags);
}

int ac_open_dir_at(int dirfd, const char *name)
{
    return open_retry(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
}

int ac_open_dir_path(const char *path)
{
    return open_retry(AT_FDCWD, path, O_RDONLY | O_DIRECTORY, 0);
}

/* fsync the directory holding buf's last component ("/" or "." at the
 * top): a directory just made is durable once its parent is. */
static int sync_parent(char *buf)
{
    char *slash = strrchr(buf, '/'), keep = 0;
    const char *dir = ".";
    int fd, rc;
    if (slash == buf) {
        dir = "/";
    } else if (slash) {
        keep = *slash;
        *slash = '\0';
        dir = buf;
    }
    fd = ac_open_dir_path(dir);
    if (slash && slash != buf)
        *slash = keep;
    if (fd == -1)
        return -1;
    rc = ac_fsync_dir(fd);
    return ac_close_keep(fd, rc);
}

int ac_mkdirs(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    size_t len = strlen(path), i;

    if (len == 0 || len >= sizeof buf) {
        errno = len ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(buf, path, len + 1);
    for (i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        buf[i] = '\0';
        /* Only a missing component costs a mkdir and the sync of its
         * parent (a sys.mkdir and a sys.fsync point), so the points of
         * `init` do not depend on the depth of the root. */
        if (access(buf, F_OK) == -1) {
            if (ac_sys_mkdirat(AT_FDCWD, buf, mode) == 0) {
                if (sync_parent(buf) == -1)
                    return -1;
            } else if (errno != EEXIST) {
                return -1;
            }
        }
        buf[i] = path[i];
    }
    {
        struct stat st;
        if (stat(path, &st) == -1)
            return -1;
        if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
    }
    return 0;
}

int ac_read_fd(int fd, size_t cap, char **out, size_t *len, struct stat *stp)
{
    struct stat st;
    char *buf = NULL;
    size_t size, used = 0;

    if (fstat(fd, &st) == -1)
        return -1;
    if (stp)
        *stp = st;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        return -1;
    }
    if ((uint64_t)st.st_size > cap) {
        errno = EFBIG;
        return -1;
    }
    /* The size may change under us (a writer appending); read until EOF but
     * never past the cap. */
    size = (size_t)st.st_size + 1;
    buf = malloc(size + 1);
    if (!buf)
        return -1;
    for (;;) {
        ssize_t n;
        if (used == size) {
            char *nb;
            if (size > cap) {
                free(buf);
                errno = EFBIG;
                return -1;
            }
            size = size * 2 > cap + 1 ? cap + 1 : size * 2;
            nb = realloc(buf, size + 1);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
        }
        n = read(fd, buf + used, size - used);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            free(buf);
            return -1;
        }
        if (n == 0)
            break;
        used += (size_t)n;
        /* A short read of a regular file means end of file: saves the
         * extra read() that would return 0 (one per message on a scan). */
        if (used < size)
            break;
    }
    if (used > cap) {
        free(buf);
        errno = EFBIG;
        return -1;
    }
    buf[used] = '\0';
    *out = buf;
    *len = used;
    return 0;
}

int ac_close_keep(int fd, int rc)
{
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int ac_read_file_at(int dirfd, const char *name, size_t cap,
                    char **out, size_t *len)
{
    int fd = open_retry(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd == -1)
        return -1;
    return ac_close_keep(fd, ac_read_fd(fd, cap, out, len, NULL));
}

int ac_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    if (AC_FAULT_SYS("write") == -1) {
        /* A disk filling up mid-write: half of it lands, then the error. */
        int e = errno;
        if (len > 1 && write(fd, p, len / 2) == -1) {
            /* the injected error is the one to report */
        }
        errno = e;
        return -1;
    }
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Random suffix for temp names; uniqueness is enforced by O_EXCL, the
 * randomness only avoids retries. */
static void random_suffix(char *out, size_t n)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    static unsigned long long state;
    size_t i;
    if (state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        state = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)ts.tv_sec
                ^ ((unsigned long long)getpid() << 40) ^ 0x9e3779b97f4a7c15ULL;
    }
    for (i = 0; i < n; i++) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out[i] = chars[state % (sizeof chars - 1)];
    }
    out[n] = '\0';
}

static int fault_at(const char *tag, const char *step)
{
    char point[96];
    if (!tag)
        return 0;
    snprintf(point, sizeof point, "%s.%s", tag, step);
    return AC_FAULT(point);
}

int ac_publish_temp(int dirfd, const char *tmp, int fd, const void *data, size_t len,
                    const char *name, int flags, const char *fault_tag)
{
    return ac_publish_temp_gated(dirfd, tmp, fd, data, len, name, flags, fault_tag, NULL, NULL);
}

int ac_publish_temp_gated(int dirfd, const char *tmp, int fd, const void *data, size_t len,
                          const char *name, int flags, const char *fault_tag,
                          ac_gate_fn gate, void *gate_ctx)
{
    int saved;
    if (fault_at(fault_tag, "write") == -1 || ac_write_all(fd, data, len) == -1)
        goto fail;
    if (fault_at(fault_tag, "fsync") == -1 || ac_fsync(fd) == -1)
        goto fail;
    if (close(fd) == -1) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (fault_at(fault_tag, "publish") == -1)
        goto fail;
    if (gate && gate(gate_ctx) == -1) {
        errno = ENOLCK;
        goto fail;
    }
    if (flags & AC_ATOMIC_NOREPLACE) {
        if (ac_sys_linkat(dirfd, tmp, dirfd, name) == -1)
            goto fail;
        /* The target now exists; the temp name is just an extra link. */
        ac_sys_unlinkat(dirfd, tmp, 0);
    } else if (ac_sys_renameat(dirfd, tmp, dirfd, name) == -1) {
        goto fail;
    }
    if (!(flags & AC_ATOMIC_NO_DIRSYNC)) {
        if (fault_at(fault_tag, "dirsync") == -1 || ac_fsync_dir(dirfd) == -1)
            return -1;   /* published, but durability unknown */
    }
    return 0;

fail:
    saved = errno;
    if (fd != -1)
        close(fd);
    ac_sys_unlinkat(dirfd, tmp, 0);
    errno = saved;
    return -1;
}

int ac_write_atomic(int dirfd, const char *name, const void *data, size_t len,
                    mode_t mode, int flags, const char *fault_tag)
{
    return ac_write_atomic_gated(dirfd, name, data, len, mode, flags, fault_tag, NULL, NULL);
}

int ac_write_atomic_gated(int dirfd, const char *name, const void *data, size_t len,
                          mode_t mode, int flags, const char *fault_tag,
                          ac_gate_fn gate, void *gate_ctx)
{
    char tmp[NAME_MAX + 1], rnd[9];
    size_t nlen = strlen(name);
    int fd = -1, tries;
    const char *base = name;

    /* Keep the temp name within NAME_MAX whatever the target's length. */
    if (nlen > NAME_MAX - 16)
        base = name + (nlen - (NAME_MAX - 16));
    for (tries = 0; tries < 100; tries++) {
        random_suffix(rnd, 8);
        snprintf(tmp, sizeof tmp, ".%s.%s.tmp", base[0] == '.' ? base + 1 : base, rnd);
        fd = ac_sys_create(dirfd, tmp, O_WRONLY | O_EXCL | O_NOFOLLOW, mode);
        if (fd != -1 || errno != EEXIST)
            break;
    }
    if (fd == -1)
        return -1;
    return ac_publish_temp_gated(dirfd, tmp, fd, data, len, name, flags, fault_tag, gate, gate_ctx);
}

int ac_rename_noreplace(int dirfd, const char *from, const char *to)
{
#ifdef RENAME_NOREPLACE
    if (AC_FAULT_SYS("rename") == -1)
        return -1;
    if (renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    /* Fallback: link refuses an existing target; then drop the old name. */
    if (ac_sys_linkat(dirfd, from, dirfd, to) == -1)
        return -1;
    if (ac_sys_unlinkat(dirfd, from, 0) == -1) {
        int saved = errno;
        ac_sys_unlinkat(dirfd, to, 0);
        errno = saved;
        return -1;
    }
    return 0;
}

int ac_dir_state(int dirfd, struct ac_dirstate *out)
{
    struct statx stx;
    /* Asking for the ctime too marks the inode as queried, so file systems
     * with multigrain timestamps (Linux 6.13+) give the next change a
     * fine-grained, distinct time. */
    if (statx(dirfd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
              STATX_MTIME | STATX_CTIME | STATX_SIZE, &stx) == -1) {
        struct stat st;
        if (fstat(dirfd, &st) == -1)
            return -1;
        out->sec = st.st_mtim.tv_sec;
        out->nsec = st.st_mtim.tv_nsec;
        out->size = (uint64_t)st.st_size;
        return 0;
    }
    out->sec = stx.stx_mtime.tv_sec;
    out->nsec = stx.stx_mtime.tv_nsec;
    out->size = stx.stx_size;
    return 0;
}

int ac_fs_fine_timestamps(int dirfd)
{
    static int kernel_ok = -1;
    struct statfs sf;
    if (kernel_ok == -1) {
        struct utsname u;
        int major = 0, minor = 0;
        kernel_ok = uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
                    (major > 6 || (major == 6 && minor >= 13));
    }
    if (!kernel_ok || fstatfs(dirfd, &sf) == -1)
        return 0;
    switch ((unsigned long)sf.f_type) {
    case 0xEF53UL:        /* ext2/3/4 */
    case 0x58465342UL:    /* xfs */
    case 0x9123683EUL:    /* btrfs */
    case 0x01021994UL:    /* tmpfs */
        return 1;
    default:
        return 0;
    }
}

int ac_dirstate_eq(const struct ac_dirstate *a, const struct ac_dirstate *b)
{
    return a->sec == b->sec && a->nsec == b->nsec && a->size == b->size;
}

int ac_is_regular_at(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

int ac_is_temp_name(const char *name, const char *const *targets)
{
    size_t len = strlen(name), i;
    if (name[0] != '.' || len < 15 || strcmp(name + len - 4, ".tmp") != 0 || name[len - 13] != '.')
        return 0;
    for (i = len - 12; i < len - 4; i++)     /* random_suffix's alphabet */
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9')))
            return 0;
    if (!targets)
        return 1;
    for (; *targets; targets++) {
        const char *t = (*targets)[0] == '.' ? *targets + 1 : *targets;
        if (strlen(t) == len - 14 && strncmp(name + 1, t, len - 14) == 0)
            return 1;
    }
    return 0;
}

struct sweep {
    int dirfd;
    int64_t min_age, now;
    int removed;
    const char *const *targets;
};

static int sweep_cb(void *ctx, const char *name, unsigned char type)
{
    struct sweep *s = ctx;
    struct stat st;
    if (type != DT_REG || !ac_is_temp_name(name, s->targets))
        return 0;
    if (s->min_age > 0 && (fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
                           s->now - st.st_mtim.tv_sec < s->min_age))
        return 0;
    if (ac_sys_unlinkat(s->dirfd, name, 0) == 0)
        s->removed++;
    return 0;
}

int ac_sweep_temps_of(int dirfd, int64_t min_age_sec, const char *const *targets)
{
    struct sweep s = { dirfd, min_age_sec, (int64_t)time(NULL), 0, targets };
    ac_dir_walk(dirfd, sweep_cb, &s);
    return s.removed;
}

int ac_sweep_temps(int dirfd, int64_t min_age_sec)
{
    return ac_sweep_temps_of(dirfd, min_age_sec, NULL);
}

int ac_dir_walk(int dirfd, ac_dir_cb cb, void *ctx)
{
    int fd = open_retry(dirfd, ".", O_RDONLY | O_DIRECTORY, 0);
    DIR *d;
    struct dirent *de;
    int rc = 0;

    if (fd == -1)
        return -1;
    d = fdopendir(fd);
    if (!d) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    for (;;) {
        unsigned char type;
        errno = 0;
        de = readdir(d);
        if (!de) {
            if (errno) {
                int saved = errno;
                closedir(d);
                errno = saved;
                return -1;
            }
            break;
        }
        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
            (de->d_name[1] == '.' && de->d_name[2] == '\0')))
            continue;
        type = de->d_type;
        if (type == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                type = S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR
                     : S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
        }
        rc = cb(ctx, de->d_name, type);
        if (rc)
            break;
    }
    closedir(d);
    return rc;
}
