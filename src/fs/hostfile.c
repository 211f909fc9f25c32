/*
 * hostfile.c - the user's own files (include/agentchat/hostfile.h): the
 * file-system code the host and the bindings need, kept here with the rest
 * of it (fsutil.h) so that nothing above src/fs/ touches a file directly.
 */
#include "agentchat/hostfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirwatch.h"
#include "fsutil.h"

int ac_host_read_fd(int fd, size_t cap, char **out, size_t *len)
{
    return ac_read_fd(fd, cap, out, len, NULL);
}

int ac_host_mkdirs(const char *path, mode_t mode)
{
    return ac_mkdirs(path, mode);
}

/* Open `rel`'s directories below dir without following symlinks; returns
 * the descriptor of the last directory and points *last at the final
 * component (NULL when rel names a directory: want_dir). -1 with errno. */
static int open_below(const char *dir, const char *rel, int want_dir, const char **last)
{
    int fd = ac_open_dir_path(dir);
    const char *p = rel;

    *last = NULL;
    while (fd != -1 && p && *p) {
        const char *slash = strchr(p, '/');
        char part[256];
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        int next;

        if (n == 0 || n >= sizeof part || (n == 1 && p[0] == '.') ||
            (n == 2 && p[0] == '.' && p[1] == '.')) {
            close(fd);
            errno = EINVAL;     /* only plain names below dir */
            return -1;
        }
        if (!slash && !want_dir) {
            *last = p;
            return fd;
        }
        memcpy(part, p, n);
        part[n] = '\0';
        next = ac_open_dir_at(fd, part);
        close(fd);
        fd = next;
        p = slash ? slash + 1 : NULL;
    }
    return fd;
}

int ac_host_dir_check(const char *dir)
{
    int fd = ac_open_dir_path(dir);
    if (fd == -1)
        return -1;
    close(fd);
    return 0;
}

struct listing {
    ac_host_entry_cb cb;
    void *ctx;
    int fd;
};

static int list_cb(void *ctx, const char *name, unsigned char type)
{
    struct listing *l = ctx;
    struct stat st;
    int64_t size = -1;
    if (type == DT_REG && fstatat(l->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        size = (int64_t)st.st_size;
    return l->cb(l->ctx, name, type == DT_REG ? "file" : type == DT_DIR ? "dir"
                              : type == DT_LNK ? "symlink" : "other", size);
}

int ac_host_dir_list(const char *dir, const char *sub, ac_host_entry_cb cb, void *ctx)
{
    struct listing l = { cb, ctx, -1 };
    const char *last;
    int fd = open_below(dir, sub, 1, &last);
    if (fd == -1)
        return -1;
    l.fd = fd;
    return ac_close_keep(fd, ac_dir_walk(fd, list_cb, &l) == -1 ? -1 : 0);
}

int ac_host_dir_read(const char *dir, const char *rel, size_t cap, char **out, size_t *len)
{
    const char *last;
    int fd = open_below(dir, rel, 0, &last);
    if (fd == -1)
        return -1;
    return ac_close_keep(fd, ac_read_file_at(fd, last, cap, out, len));
}

static const char *kind_of(mode_t m)
{
    return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

static int64_t ns_of(const struct timespec *t)
{
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

int ac_host_dir_stat(const char *dir, const char *rel, struct ac_host_stat *out)
{
    const char *last;
    struct stat st;
    int fd = open_below(dir, rel, 0, &last);
    if (fd == -1)
        return -1;
    if (fstatat(fd, last, &st, AT_SYMLINK_NOFOLLOW) == -1)
        return ac_close_keep(fd, -1);
    out->kind = kind_of(st.st_mode);
    out->size = (uint64_t)st.st_size;
    out->ino = (uint64_t)st.st_ino;
    out->mtime_ns = ns_of(&st.st_mtim);
    return ac_close_keep(fd, 0);
}

int ac_host_dir_write(const char *dir, const char *rel, const char *data, size_t len)
{
    const char *last;
    struct stat st;
    mode_t mode = 0644;
    int fd = open_below(dir, rel, 0, &last);
    if (fd == -1)
        return -1;
    if (fstatat(fd, last, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISREG(st.st_mode)) {
            errno = S_ISLNK(st.st_mode) ? ELOOP : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
            return ac_close_keep(fd, -1);
        }
        mode = st.st_mode & 07777;
    } else if (errno != ENOENT) {
        return ac_close_keep(fd, -1);
    }
    return ac_close_keep(fd, ac_write_atomic(fd, last, data, len, mode, AC_ATOMIC_REPLACE, "hostfile"));
}

int ac_host_dir_mkdir(const char *dir, const char *rel)
{
    const char *last;
    struct stat st;
    int fd = open_below(dir, rel, 0, &last);
    if (fd == -1)
        return -1;
    if (ac_sys_mkdirat(fd, last, 0755) == 0)
        return ac_close_keep(fd, 0);
    if (errno == EEXIST && fstatat(fd, last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
        return ac_close_keep(fd, 0);
    return ac_close_keep(fd, -1);
}

int ac_host_dir_sweep(const char *dir, const char *sub, int64_t min_age_sec)
{
    const char *last;
    int fd = open_below(dir, sub, 1, &last);
    if (fd == -1)
        return -1;
    return ac_close_keep(fd, ac_sweep_temps(fd, min_age_sec));
}

/* ---- proper-lockfile's lock directory ---- */

struct ac_host_lock {
    int dirfd;                  /* the folder the lock directory is in */
    char name[NAME_MAX + 1];
    struct timespec mtime;      /* the mtime we set last */
    unsigned sig;
};

static int64_t realtime_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return ns_of(&now);
}

/* Set the lock's times to now (its atime `sig` ns later: the mark) and
 * remember the mtime the file system kept. */
static int mark(struct ac_host_lock *l)
{
    struct timespec t[2];
    struct stat st;
    int64_t now = realtime_ns(), at = now + (int64_t)l->sig;
    t[0].tv_sec = (time_t)(at / 1000000000);
    t[0].tv_nsec = (long)(at % 1000000000);
    t[1].tv_sec = (time_t)(now / 1000000000);
    t[1].tv_nsec = (long)(now % 1000000000);
    if (ac_sys_utimensat(l->dirfd, l->name, t, AT_SYMLINK_NOFOLLOW) == -1 ||
        fstatat(l->dirfd, l->name, &st, AT_SYMLINK_NOFOLLOW) == -1)
        return -1;
    l->mtime = st.st_mtim;
    return 0;
}

/* A lock directory an earlier run of this program left (see hostfile.h). */
static int marked(const struct stat *st, unsigned sig)
{
    return sig != 0 && ns_of(&st->st_atim) - ns_of(&st->st_mtim) == (int64_t)sig;
}

int ac_host_lock_try(const char *dir, const char *rel, int64_t stale_ms, unsigned sig,
                     struct ac_host_lock **out, int64_t *age_ms)
{
    const char *last;
    struct ac_host_lock *l;
    int attempt, fd = open_below(dir, rel, 0, &last);

    *out = NULL;
    *age_ms = 0;
    if (fd == -1)
        return -1;
    if (strlen(last) > NAME_MAX) {
        errno = ENAMETOOLONG;
        return ac_close_keep(fd, -1);
    }
    for (attempt = 0; attempt < 3; attempt++) {
        struct stat st;
        if (ac_sys_mkdirat(fd, last, 0777) == 0)
            break;
        if (errno != EEXIST)
            return ac_close_keep(fd, -1);
        if (fstatat(fd, last, &st, AT_SYMLINK_NOFOLLOW) == -1) {
            if (errno == ENOENT)
                continue;       /* released meanwhile */
            return ac_close_keep(fd, -1);
        }
        if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return ac_close_keep(fd, -1);
        }
        *age_ms = (realtime_ns() - ns_of(&st.st_mtim)) / 1000000;
        if (attempt > 0 || !(*age_ms > stale_ms || marked(&st, sig)))
            return ac_close_keep(fd, 1);
        /* Stale, or ours from a run that was killed: remove it (another
         * remover may win; then the mkdir decides). */
        if (ac_sys_unlinkat(fd, last, AT_REMOVEDIR) == -1 && errno != ENOENT) {
            if (errno == ENOTEMPTY || errno == EEXIST)
                return ac_close_keep(fd, 1);
            return ac_close_keep(fd, -1);
        }
    }
    if (attempt == 3)
        return ac_close_keep(fd, 1);
    l = calloc(1, sizeof *l);
    if (!l) {
        ac_sys_unlinkat(fd, last, AT_REMOVEDIR);
        errno = ENOMEM;
        return ac_close_keep(fd, -1);
    }
    l->dirfd = fd;
    l->sig = sig;
    strcpy(l->name, last);
    if (mark(l) == -1) {
        /* Held all the same; go by the mtime mkdir gave it. */
        struct stat st;
        if (fstatat(fd, last, &st, AT_SYMLINK_NOFOLLOW) == 0)
            l->mtime = st.st_mtim;
    }
    *out = l;
    return 0;
}

int ac_host_lock_check(struct ac_host_lock *l)
{
    struct stat st;
    if (fstatat(l->dirfd, l->name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
        if (errno == ENOENT)
            errno = ECANCELED;
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || ns_of(&st.st_mtim) != ns_of(&l->mtime)) {
        errno = ECANCELED;
        return -1;
    }
    return 0;
}

int ac_host_lock_touch(struct ac_host_lock *l)
{
    if (ac_host_lock_check(l) == -1)
        return -1;
    return mark(l);
}

void ac_host_lock_release(struct ac_host_lock *l)
{
    int saved = errno;
    if (!l)
        return;
    if (ac_host_lock_check(l) == 0)
        ac_sys_unlinkat(l->dirfd, l->name, AT_REMOVEDIR);
    close(l->dirfd);
    free(l);
    errno = saved;
}

/* ---- a host folder's change notification ---- */

struct ac_host_watch {
    struct ac_dirwatch *dw;
};

struct ac_host_watch *ac_host_watch_open(const char *dir, const char *sub)
{
    const char *last;
    struct ac_host_watch *w = malloc(sizeof *w);
    int fd;
    if (!w)
        return NULL;
    fd = open_below(dir, sub, 1, &last);
    if (fd == -1) {
        free(w);
        return NULL;
    }
    /* The watch is of the directory itself (its inode), not of the path. */
    w->dw = ac_dirwatch_open_inotify(fd);
    ac_close_keep(fd, 0);
    if (!w->dw) {
        int saved = errno;
        free(w);
        errno = saved;
        return NULL;
    }
    return w;
}

int ac_host_watch_fd(const struct ac_host_watch *w)
{
    return ac_dirwatch_fd(w->dw);
}

int ac_host_watch_wait(struct ac_host_watch *w, int64_t timeout_ns)
{
    return ac_dirwatch_wait(w->dw, timeout_ns);
}

void ac_host_watch_close(struct ac_host_watch *w)
{
    if (!w)
        return;
    ac_dirwatch_close(w->dw);
    free(w);
}
