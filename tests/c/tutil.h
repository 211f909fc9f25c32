/*
 * tutil.h - small file system helpers shared by the C unit tests (git's
 * t/helper in spirit). Everything is static so each test binary stays one
 * translation unit; unused helpers are marked so -Wunused stays quiet.
 *
 *     char *root = t_mkdtemp("fsutil");      // $TMPDIR or /tmp
 *     t_write(t_path("%s/a.md", root), "text");
 *     ...
 *     t_rm_rf(root); free(root);
 *
 * Helpers abort the test (exit 99, "Bail out!") when the set-up itself
 * fails, so a broken environment is never reported as a runtime bug.
 */
#ifndef AGENTCHAT_TUTIL_H
#define AGENTCHAT_TUTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define T_UNUSED __attribute__((unused))

static void t_bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn, unused));
static void t_bail(const char *fmt, ...)
{
    va_list ap;
    int e = errno;
    printf("Bail out! ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" (%s)\n", strerror(e));
    fflush(stdout);
    exit(99);
}

/* fork() with stdout flushed first, so that the child cannot print the
 * parent's buffered TAP lines again; bails out when fork fails. */
static pid_t t_fork(void) T_UNUSED;
static pid_t t_fork(void)
{
    pid_t pid;
    fflush(stdout);
    pid = fork();
    if (pid == -1)
        t_bail("fork");
    return pid;
}

/* A path built with printf syntax, in one of 8 rotating static buffers. */
static const char *t_path(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static const char *t_path(const char *fmt, ...)
{
    static char bufs[8][4096];
    static int next;
    char *b = bufs[next++ & 7];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof bufs[0], fmt, ap);
    va_end(ap);
    return b;
}

static void t_rm_rf(const char *path);

/* Directories made by t_mkdtemp, removed at exit if the test could not
 * (a bail-out); only by the process that made them, never by a child. */
static char t_dirs[16][4096];
static int t_ndirs;
static pid_t t_owner;

static void t_cleanup(void)
{
    int i;
    if (getpid() != t_owner)
        return;
    for (i = 0; i < t_ndirs; i++) {
        char path[4096];
        if (!t_dirs[i][0])
            continue;
        memcpy(path, t_dirs[i], sizeof path);   /* t_rm_rf clears the slot */
        t_rm_rf(path);
    }
}

/* A fresh directory under $TMPDIR (or /tmp); malloc'ed path. */
static char *t_mkdtemp(const char *tag) T_UNUSED;
static char *t_mkdtemp(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char buf[4096], *p;
    if (!base || !*base)
        base = "/tmp";
    snprintf(buf, sizeof buf, "%s/ac-test-%s-XXXXXX", base, tag);
    if (!mkdtemp(buf))
        t_bail("mkdtemp %s", buf);
    p = strdup(buf);
    if (!p)
        t_bail("strdup");
    if (t_ndirs == 0) {
        t_owner = getpid();
        atexit(t_cleanup);
    }
    {
        int i = 0;
        while (i < t_ndirs && t_dirs[i][0])
            i++;                    /* reuse the slot of a removed directory */
        if (i < 16) {
            snprintf(t_dirs[i], sizeof t_dirs[0], "%s", buf);
            if (i == t_ndirs)
                t_ndirs++;
        }
    }
    return p;
}

static int t_rm_rf_at(int dirfd, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
        return errno == ENOENT ? 0 : -1;
    if (S_ISDIR(st.st_mode)) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d;
        struct dirent *de;
        if (fd == -1)
            return -1;
        d = fdopendir(fd);
        if (!d) {
            close(fd);
            return -1;
        }
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            t_rm_rf_at(fd, de->d_name);
        }
        closedir(d);
        return unlinkat(dirfd, name, AT_REMOVEDIR);
    }
    return unlinkat(dirfd, name, 0);
}

/* rm -rf path (never follows symlinks). */
static void t_rm_rf(const char *path) T_UNUSED;
static void t_rm_rf(const char *path)
{
    int i;
    for (i = 0; i < t_ndirs; i++)
        if (strcmp(t_dirs[i], path) == 0)
            t_dirs[i][0] = '\0';     /* removed: never touch that name again */
    if (t_rm_rf_at(AT_FDCWD, path) == -1)
        printf("# could not remove %s: %s\n", path, strerror(errno));
}

/* Write len bytes to path (created or truncated). */
static void t_write_n(const char *path, const void *data, size_t len) T_UNUSED;
static void t_write_n(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd == -1 || write(fd, data, len) != (ssize_t)len || close(fd) == -1)
        t_bail("write %s", path);
}

static void t_write(const char *path, const char *text) T_UNUSED;
static void t_write(const char *path, const char *text)
{
    t_write_n(path, text, strlen(text));
}

static void t_mkdir(const char *path) T_UNUSED;
static void t_mkdir(const char *path)
{
    if (mkdir(path, 0755) == -1)
        t_bail("mkdir %s", path);
}

/* The whole file, malloc'ed and NUL-terminated, or NULL when unreadable. */
static char *t_read(const char *path, size_t *lenp) T_UNUSED;
static char *t_read(const char *path, size_t *lenp)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0, cap = 256;
    char *buf;
    if (fd == -1)
        return NULL;
    buf = malloc(cap);
    if (!buf)
        t_bail("malloc");
    for (;;) {
        ssize_t n;
        if (len + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                t_bail("realloc");
            buf = nb;
            cap *= 2;
            continue;
        }
        n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    if (lenp)
        *lenp = len;
    return buf;
}

/* 1 when path exists (lstat), else 0. */
static int t_exists(const char *path) T_UNUSED;
static int t_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Number of entries of dir whose name starts with `prefix` and ends with
 * `suffix` (either may be ""). */
static int t_count(const char *dir, const char *prefix, const char *suffix) T_UNUSED;
static int t_count(const char *dir, const char *prefix, const char *suffix)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t pl = strlen(prefix), sl = strlen(suffix);
    int n = 0;
    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (l >= pl && l >= sl && strncmp(de->d_name, prefix, pl) == 0 &&
            strcmp(de->d_name + l - sl, suffix) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* Temp files left by ac_write_atomic: ".<name>.<random>.tmp". */
static int t_count_temps(const char *dir) T_UNUSED;
static int t_count_temps(const char *dir)
{
    return t_count(dir, ".", ".tmp");
}

#endif
