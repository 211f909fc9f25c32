/*
 * test_fsutil.c - the file system primitives of fsutil.h: atomic
 * publication (with injected faults), safe reads, directory helpers.
 *
 * This is the durability test: it runs with real fsync (it unsets
 * AGENT_CHAT_TEST_FSYNC, which `make test` sets for the other tests).
 *
 * Fault injection: the rules of AGENT_CHAT_FAULT are parsed once per
 * process, so every faulted write runs in a child that re-executes this
 * binary (`--fault-child DIR FLAGS TEXT`) with the variable set; the parent
 * then inspects the directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/fsutil.h"
#include "tap.h"
#include "tutil.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *root;

/* ---- the fault child ---- */

/* Exit 0 on success, else the errno of the failed ac_write_atomic. */
static int fault_child(char **argv)
{
    int dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int flags = atoi(argv[3]);
    if (dfd == -1)
        return 200;
    if (ac_write_atomic(dfd, "target", argv[4], strlen(argv[4]), 0644, flags, "t") == 0)
        return 0;
    return errno > 0 && errno < 200 ? errno : 201;
}

/* Run one faulted ac_write_atomic of `text` to dir/target; returns the wait
 * status. `log` (may be NULL) becomes AGENT_CHAT_FAULT_LOG. */
static int run_faulted(const char *dir, const char *fault, int flags, const char *text,
                       const char *log)
{
    char fl[16];
    int status = -1;
    pid_t pid;

    snprintf(fl, sizeof fl, "%d", flags);
    pid = t_fork();
    if (pid == 0) {
        setenv("AGENT_CHAT_FAULT", fault, 1);
        if (log)
            setenv("AGENT_CHAT_FAULT_LOG", log, 1);
        execl("/proc/self/exe", "test_fsutil", "--fault-child", dir, fl, text, (char *)NULL);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) == -1)
        t_bail("waitpid");
    return status;
}

struct fault_case {
    const char *fault;       /* AGENT_CHAT_FAULT */
    int flags;
    const char *old;         /* initial target content, NULL: no target */
    int want_exit;           /* child exit code (errno), -1: killed by SIGKILL */
    const char *want;        /* target content afterwards, NULL: absent */
    int want_temps;          /* temp files left behind */
};

static const struct fault_case fault_cases[] = {
    /* No rule for our points: a plain successful write. */
    { "other.point", AC_ATOMIC_REPLACE, "old", 0, "new", 0 },
    { "other.point", AC_ATOMIC_NOREPLACE, NULL, 0, "new", 0 },
    /* Each step fails: the old state stays and the temp is removed. */
    { "t.write", AC_ATOMIC_REPLACE, "old", EIO, "old", 0 },
    { "t.fsync", AC_ATOMIC_REPLACE, "old", EIO, "old", 0 },
    { "t.publish", AC_ATOMIC_REPLACE, "old", EIO, "old", 0 },
    { "t.write", AC_ATOMIC_NOREPLACE, NULL, EIO, NULL, 0 },
    { "t.fsync", AC_ATOMIC_NOREPLACE, NULL, EIO, NULL, 0 },
    { "t.publish", AC_ATOMIC_NOREPLACE, NULL, EIO, NULL, 0 },
    { "t.write:enospc", AC_ATOMIC_REPLACE, "old", ENOSPC, "old", 0 },
    { "t.fsync:enospc", AC_ATOMIC_NOREPLACE, NULL, ENOSPC, NULL, 0 },
    { "t.*", AC_ATOMIC_REPLACE, "old", EIO, "old", 0 },
    /* After publication only durability is unknown: the new content is in
     * place, the temp is gone, the call reports the error. */
    { "t.dirsync", AC_ATOMIC_REPLACE, "old", EIO, "new", 0 },
    /* NO_DIRSYNC never reaches the dirsync point. */
    { "t.dirsync", AC_ATOMIC_REPLACE | AC_ATOMIC_NO_DIRSYNC, "old", 0, "new", 0 },
    /* A crash (SIGKILL, no cleanup) before publication: the target is
     * untouched and only a dot-named temp is left for fsck. */
    { "t.publish:crash", AC_ATOMIC_REPLACE, "old", -1, "old", 1 },
    { "t.fsync:crash", AC_ATOMIC_NOREPLACE, NULL, -1, NULL, 1 },
};

static void test_write_atomic_faults(void)
{
    size_t i;
    for (i = 0; i < COUNT(fault_cases); i++) {
        const struct fault_case *c = &fault_cases[i];
        char *dir = t_mkdtemp("fault");
        char target[1024];
        snprintf(target, sizeof target, "%s/target", dir);
        char *got;
        int status, exit_ok;

        if (c->old)
            t_write(target, c->old);
        status = run_faulted(dir, c->fault, c->flags, "new", NULL);
        if (c->want_exit == -1)
            exit_ok = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        else
            exit_ok = WIFEXITED(status) && WEXITSTATUS(status) == c->want_exit;
        TAP_OK(exit_ok, "fault %s (flags %d): child %s (status 0x%x)", c->fault, c->flags,
               c->want_exit == -1 ? "killed" : "exit code is the errno", (unsigned)status);
        got = t_read(target, NULL);
        if (c->want)
            TAP_STR_EQ(got, c->want, "fault %s (flags %d): target content", c->fault, c->flags);
        else
            TAP_OK(!t_exists(target), "fault %s (flags %d): no target, no partial file",
                   c->fault, c->flags);
        free(got);
        TAP_INT_EQ(t_count_temps(dir), c->want_temps, "fault %s (flags %d): temp files left",
                   c->fault, c->flags);
        TAP_INT_EQ(t_count(dir, "", ""), (c->want ? 1 : 0) + c->want_temps,
                   "fault %s (flags %d): nothing else in the directory", c->fault, c->flags);
        t_rm_rf(dir);
        free(dir);
    }
}

/* AGENT_CHAT_FAULT_LOG lists the points of one write, in order. */
static void test_fault_points_log(void)
{
    char *dir = t_mkdtemp("faultlog");
    char log[1024];
    snprintf(log, sizeof log, "%s/log.txt", root);
    char *text;
    int status;

    status = run_faulted(dir, "", AC_ATOMIC_REPLACE, "x", log);
    text = t_read(log, NULL);
    TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "logged write succeeds");
    TAP_STR_EQ(text, "t.write\nt.fsync\nt.publish\nt.dirsync\n",
               "fault points of a replace, in order");
    free(text);
    unlink(log);
    status = run_faulted(dir, "", AC_ATOMIC_NOREPLACE | AC_ATOMIC_NO_DIRSYNC, "x", log);
    text = t_read(log, NULL);
    TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == EEXIST,
           "NOREPLACE over the first write fails with EEXIST");
    TAP_STR_EQ(text, "t.write\nt.fsync\nt.publish\n",
               "fault points of a NOREPLACE | NO_DIRSYNC write");
    free(text);
    unlink(log);
    t_rm_rf(dir);
    free(dir);
}

/* ---- ac_write_atomic in process (no fault tag) ---- */

static void test_write_atomic(void)
{
    char *dir = t_mkdtemp("atomic");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st1, st2;
    char *got, longname[256], *big;
    size_t len, i;
    int rc, e;

    if (dfd == -1)
        t_bail("open %s", dir);

    rc = ac_write_atomic(dfd, "a.json", "one", 3, 0644, AC_ATOMIC_REPLACE, NULL);
    got = t_read(t_path("%s/a.json", dir), NULL);
    TAP_OK(rc == 0, "replace-write of a new file succeeds");
    TAP_STR_EQ(got, "one", "new file content");
    free(got);
    stat(t_path("%s/a.json", dir), &st1);
    TAP_INT_EQ(st1.st_mode & 07777, 0644, "mode 0644 (umask 022)");

    rc = ac_write_atomic(dfd, "a.json", "second", 6, 0644, AC_ATOMIC_REPLACE, NULL);
    got = t_read(t_path("%s/a.json", dir), NULL);
    stat(t_path("%s/a.json", dir), &st2);
    TAP_OK(rc == 0, "replace of an existing file succeeds");
    TAP_STR_EQ(got, "second", "replaced content");
    TAP_OK(st1.st_ino != st2.st_ino, "replace publishes a new inode (rename, not in place)");
    free(got);

    errno = 0;
    rc = ac_write_atomic(dfd, "a.json", "third", 5, 0644, AC_ATOMIC_NOREPLACE, NULL);
    e = errno;
    got = t_read(t_path("%s/a.json", dir), NULL);
    TAP_OK(rc == -1 && e == EEXIST, "NOREPLACE over an existing file fails with EEXIST");
    TAP_STR_EQ(got, "second", "NOREPLACE left the old content");
    free(got);

    rc = ac_write_atomic(dfd, "0001-a-b.md", "msg\n", 4, 0644, AC_ATOMIC_NOREPLACE, NULL);
    stat(t_path("%s/0001-a-b.md", dir), &st1);
    TAP_OK(rc == 0 && st1.st_nlink == 1, "NOREPLACE of a new file: one link (temp unlinked)");

    rc = ac_write_atomic(dfd, ".seqhigh", "7", 1, 0644, AC_ATOMIC_REPLACE, NULL);
    got = t_read(t_path("%s/.seqhigh", dir), NULL);
    TAP_OK(rc == 0 && got && strcmp(got, "7") == 0, "dot-named target");
    free(got);

    rc = ac_write_atomic(dfd, "empty", "", 0, 0644, AC_ATOMIC_REPLACE, NULL);
    got = t_read(t_path("%s/empty", dir), &len);
    TAP_OK(rc == 0 && got && len == 0, "zero-length write gives an empty file");
    free(got);

    memset(longname, 'n', 250);
    memcpy(longname + 247, ".md", 4);
    rc = ac_write_atomic(dfd, longname, "L", 1, 0644, AC_ATOMIC_NOREPLACE, NULL);
    TAP_OK(rc == 0 && t_exists(t_path("%s/%s", dir, longname)),
           "250-byte name (temp name stays within NAME_MAX)");

    big = malloc(1 << 20);
    if (!big)
        t_bail("malloc");
    for (i = 0; i < (1u << 20); i++)
        big[i] = (char)('a' + i % 26);
    rc = ac_write_atomic(dfd, "big", big, 1 << 20, 0644, AC_ATOMIC_REPLACE, NULL);
    got = t_read(t_path("%s/big", dir), &len);
    TAP_OK(rc == 0 && got && len == (1u << 20) && memcmp(got, big, len) == 0, "1 MiB write");
    free(got);
    free(big);

    /* A symlink target is replaced, never written through. */
    t_write(t_path("%s/outside", root), "precious");
    if (symlink(t_path("%s/outside", root), t_path("%s/link", dir)) == -1)
        t_bail("symlink");
    rc = ac_write_atomic(dfd, "link", "x", 1, 0644, AC_ATOMIC_REPLACE, NULL);
    got = t_read(t_path("%s/outside", root), NULL);
    TAP_STR_EQ(got, "precious", "replace over a symlink leaves its target alone");
    free(got);
    lstat(t_path("%s/link", dir), &st1);
    TAP_OK(rc == 0 && S_ISREG(st1.st_mode), "the symlink itself became the regular file");

    /* A directory in the way: the error is reported and the temp removed. */
    t_mkdir(t_path("%s/adir", dir));
    errno = 0;
    rc = ac_write_atomic(dfd, "adir", "x", 1, 0644, AC_ATOMIC_REPLACE, NULL);
    e = errno;
    TAP_OK(rc == -1 && (e == EISDIR || e == ENOTEMPTY || e == EEXIST),
           "replace over a directory fails (errno %d)", e);

    TAP_INT_EQ(t_count_temps(dir), 0, "no temp file left by any in-process write");
    close(dfd);
    t_rm_rf(dir);
    free(dir);
}

/* ---- reading ---- */

static void test_read_file_at(void)
{
    char *dir = t_mkdtemp("read");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct {
        const char *name;
        size_t cap;
        int want_errno;          /* 0: success */
        const char *want;
    } cases[] = {
        { "ten", 100, 0, "0123456789" },
        { "ten", 10, 0, "0123456789" },          /* exactly the cap */
        { "ten", 9, EFBIG, NULL },
        { "ten", 0, EFBIG, NULL },
        { "empty", 0, 0, "" },
        { "link-to-ten", 100, ELOOP, NULL },
        { "dangling", 100, ELOOP, NULL },
        { "sub", 100, EISDIR, NULL },
        { "link-to-sub", 100, ELOOP, NULL },
        { "fifo", 100, EINVAL, NULL },
        { "missing", 100, ENOENT, NULL },
    };
    size_t i;

    if (dfd == -1)
        t_bail("open %s", dir);
    t_write(t_path("%s/ten", dir), "0123456789");
    t_write(t_path("%s/empty", dir), "");
    t_mkdir(t_path("%s/sub", dir));
    if (symlink("ten", t_path("%s/link-to-ten", dir)) == -1 ||
        symlink("nowhere", t_path("%s/dangling", dir)) == -1 ||
        symlink("sub", t_path("%s/link-to-sub", dir)) == -1 ||
        mkfifo(t_path("%s/fifo", dir), 0644) == -1)
        t_bail("set-up in %s", dir);

    for (i = 0; i < COUNT(cases); i++) {
        char *out = NULL;
        size_t len = 999;
        int rc, e;
        errno = 0;
        rc = ac_read_file_at(dfd, cases[i].name, cases[i].cap, &out, &len);
        e = errno;
        if (cases[i].want_errno == 0) {
            TAP_OK(rc == 0 && out && len == strlen(cases[i].want) &&
                   memcmp(out, cases[i].want, len + 1) == 0,
                   "read %s (cap %zu): content, length and NUL", cases[i].name, cases[i].cap);
            free(out);
        } else {
            TAP_OK(rc == -1 && e == cases[i].want_errno, "read %s (cap %zu): errno %d (got %d)",
                   cases[i].name, cases[i].cap, cases[i].want_errno, e);
        }
    }

    {
        int fd = openat(dfd, "ten", O_RDONLY | O_CLOEXEC);
        struct stat st;
        char *out = NULL;
        size_t len = 0;
        memset(&st, 0, sizeof st);
        TAP_OK(fd != -1 && ac_read_fd(fd, 64, &out, &len, &st) == 0 && len == 10 &&
               st.st_size == 10 && S_ISREG(st.st_mode), "ac_read_fd fills the stat");
        free(out);
        close(fd);
    }
    close(dfd);
    t_rm_rf(dir);
    free(dir);
}

/* ---- directories ---- */

static void test_open_dir_at(void)
{
    char *dir = t_mkdtemp("opendir");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd, e;
    static const struct { const char *name; int want_errno; } cases[] = {
        { "chan", 0 },
        /* openat() with O_DIRECTORY | O_NOFOLLOW on a symlink fails with
         * ENOTDIR on Linux (the link itself is not a directory). */
        { "link-to-chan", ENOTDIR },
        { "file", ENOTDIR }, { "missing", ENOENT },
    };
    size_t i;

    if (dfd == -1)
        t_bail("open %s", dir);
    t_mkdir(t_path("%s/chan", dir));
    t_write(t_path("%s/file", dir), "x");
    if (symlink("chan", t_path("%s/link-to-chan", dir)) == -1)
        t_bail("symlink");
    for (i = 0; i < COUNT(cases); i++) {
        errno = 0;
        fd = ac_open_dir_at(dfd, cases[i].name);
        e = errno;
        if (cases[i].want_errno == 0)
            TAP_OK(fd >= 0, "ac_open_dir_at %s opens", cases[i].name);
        else
            TAP_OK(fd == -1 && e == cases[i].want_errno, "ac_open_dir_at %s: errno %d (got %d)",
                   cases[i].name, cases[i].want_errno, e);
        if (fd >= 0)
            close(fd);
    }
    /* Whatever the errno, the symlink is refused. */
    fd = ac_open_dir_at(dfd, "link-to-chan");
    TAP_OK(fd == -1, "ac_open_dir_at refuses a symlinked directory");
    if (fd >= 0)
        close(fd);
    fd = ac_open_dir_path(t_path("%s/link-to-chan", dir));
    TAP_OK(fd >= 0, "ac_open_dir_path follows a symlink (the root may be one)");
    if (fd >= 0)
        close(fd);

    TAP_INT_EQ(ac_is_regular_at(dfd, "file"), 1, "ac_is_regular_at: file");
    TAP_INT_EQ(ac_is_regular_at(dfd, "chan"), 0, "ac_is_regular_at: directory");
    if (symlink("file", t_path("%s/link-to-file", dir)) == -1)
        t_bail("symlink");
    TAP_INT_EQ(ac_is_regular_at(dfd, "link-to-file"), 0, "ac_is_regular_at: symlink to a file");
    TAP_INT_EQ(ac_is_regular_at(dfd, "missing"), 0, "ac_is_regular_at: missing");
    close(dfd);
    t_rm_rf(dir);
    free(dir);
}

static void test_mkdirs(void)
{
    char *dir = t_mkdtemp("mkdirs");
    struct stat st;
    int e;

    TAP_INT_EQ(ac_mkdirs(t_path("%s/a/b/c", dir), 0755), 0, "mkdirs creates nested directories");
    TAP_OK(stat(t_path("%s/a/b/c", dir), &st) == 0 && S_ISDIR(st.st_mode), "a/b/c is a directory");
    TAP_INT_EQ(ac_mkdirs(t_path("%s/a/b/c", dir), 0755), 0, "mkdirs of an existing path");
    TAP_INT_EQ(ac_mkdirs(t_path("%s/a/b/d/", dir), 0755), 0, "mkdirs with a trailing slash");
    t_write(t_path("%s/file", dir), "x");
    errno = 0;
    TAP_OK(ac_mkdirs(t_path("%s/file/sub", dir), 0755) == -1 && (e = errno, e == ENOTDIR),
           "mkdirs through a regular file fails with ENOTDIR");
    errno = 0;
    TAP_OK(ac_mkdirs(t_path("%s/file", dir), 0755) == -1 && errno == ENOTDIR,
           "mkdirs of an existing regular file fails with ENOTDIR");
    t_rm_rf(dir);
    free(dir);
}

static void test_rename_noreplace(void)
{
    char *dir = t_mkdtemp("rename");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc, e;
    char *a, *b;

    if (dfd == -1)
        t_bail("open %s", dir);
    t_write(t_path("%s/task-7.md", dir), "marker");
    rc = ac_rename_noreplace(dfd, "task-7.md", "task-7.CLAIMED-carol.md");
    b = t_read(t_path("%s/task-7.CLAIMED-carol.md", dir), NULL);
    TAP_OK(rc == 0 && !t_exists(t_path("%s/task-7.md", dir)), "rename moves the file");
    TAP_STR_EQ(b, "marker", "renamed content");
    free(b);

    t_write(t_path("%s/task-7.md", dir), "second");
    errno = 0;
    rc = ac_rename_noreplace(dfd, "task-7.md", "task-7.CLAIMED-carol.md");
    e = errno;
    a = t_read(t_path("%s/task-7.md", dir), NULL);
    b = t_read(t_path("%s/task-7.CLAIMED-carol.md", dir), NULL);
    TAP_OK(rc == -1 && e == EEXIST, "rename onto an existing name fails with EEXIST");
    TAP_OK(a && b && strcmp(a, "second") == 0 && strcmp(b, "marker") == 0,
           "both files unchanged after the refused rename");
    free(a);
    free(b);

    errno = 0;
    rc = ac_rename_noreplace(dfd, "missing.md", "x.md");
    TAP_OK(rc == -1 && errno == ENOENT, "rename of a missing file fails with ENOENT");
    close(dfd);
    t_rm_rf(dir);
    free(dir);
}

struct walk_ctx {
    char names[16][64];
    unsigned char types[16];
    int n;
    int stop_at;            /* return 7 on this call (1-based), 0: never */
};

static int walk_cb(void *ctx, const char *name, unsigned char type)
{
    struct walk_ctx *w = ctx;
    if (w->n < 16) {
        snprintf(w->names[w->n], sizeof w->names[0], "%s", name);
        w->types[w->n] = type;
    }
    w->n++;
    return w->stop_at && w->n == w->stop_at ? 7 : 0;
}

static int walk_type(const struct walk_ctx *w, const char *name)
{
    int i;
    for (i = 0; i < w->n && i < 16; i++)
        if (strcmp(w->names[i], name) == 0)
            return w->types[i];
    return -1;
}

static void test_dir_walk(void)
{
    char *dir = t_mkdtemp("walk");
    int dfd, rc, i, dots = 0;
    struct walk_ctx w;

    t_write(t_path("%s/0001-a-b.md", dir), "x");
    t_write(t_path("%s/.hidden", dir), "x");
    t_mkdir(t_path("%s/sub", dir));
    if (symlink("0001-a-b.md", t_path("%s/ln.md", dir)) == -1 ||
        mkfifo(t_path("%s/fifo", dir), 0644) == -1)
        t_bail("set-up");
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    memset(&w, 0, sizeof w);
    rc = ac_dir_walk(dfd, walk_cb, &w);
    TAP_OK(rc == 0 && w.n == 5, "walk sees 5 entries (got %d, rc %d)", w.n, rc);
    for (i = 0; i < w.n && i < 16; i++)
        if (strcmp(w.names[i], ".") == 0 || strcmp(w.names[i], "..") == 0)
            dots++;
    TAP_INT_EQ(dots, 0, "walk never reports . or ..");
    TAP_INT_EQ(walk_type(&w, "0001-a-b.md"), DT_REG, "walk type of a file");
    TAP_INT_EQ(walk_type(&w, ".hidden"), DT_REG, "walk reports dot files");
    TAP_INT_EQ(walk_type(&w, "sub"), DT_DIR, "walk type of a directory");
    TAP_INT_EQ(walk_type(&w, "ln.md"), DT_LNK, "walk type of a symlink (not followed)");
    TAP_INT_EQ(walk_type(&w, "fifo"), DT_FIFO, "walk type of a FIFO");

    memset(&w, 0, sizeof w);
    rc = ac_dir_walk(dfd, walk_cb, &w);
    TAP_INT_EQ(w.n, 5, "a second walk on the same descriptor sees everything again");

    memset(&w, 0, sizeof w);
    w.stop_at = 2;
    rc = ac_dir_walk(dfd, walk_cb, &w);
    TAP_OK(rc == 7 && w.n == 2, "a non-zero callback result stops the walk and is returned");
    close(dfd);

    dfd = open(t_path("%s/sub", dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    memset(&w, 0, sizeof w);
    rc = ac_dir_walk(dfd, walk_cb, &w);
    TAP_OK(rc == 0 && w.n == 0, "walk of an empty directory");
    close(dfd);

    dfd = open(t_path("%s/0001-a-b.md", dir), O_RDONLY | O_CLOEXEC);
    errno = 0;
    rc = ac_dir_walk(dfd, walk_cb, &w);
    TAP_OK(rc == -1 && errno == ENOTDIR, "walk of a regular file fails with ENOTDIR");
    close(dfd);
    t_rm_rf(dir);
    free(dir);
}

/* Real fsync on a file and a directory. */
static void test_fsync(void)
{
    char *dir = t_mkdtemp("fsync");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = openat(dfd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    TAP_INT_EQ(ac_fsync(fd), 0, "ac_fsync of a file");
    TAP_INT_EQ(ac_fsync_dir(dfd), 0, "ac_fsync_dir of a directory");
    close(fd);
    close(dfd);
    t_rm_rf(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--fault-child") == 0)
        return fault_child(argv);

    /* The durability test: real fsync whatever the caller's environment. */
    unsetenv("AGENT_CHAT_TEST_FSYNC");
    unsetenv("AGENT_CHAT_FAULT");
    unsetenv("AGENT_CHAT_FAULT_LOG");
    umask(022);
    root = t_mkdtemp("fsutil");

    test_fsync();
    test_write_atomic();
    test_write_atomic_faults();
    test_fault_points_log();
    test_read_file_at();
    test_open_dir_at();
    test_mkdirs();
    test_rename_noreplace();
    test_dir_walk();

    t_rm_rf(root);
    TAP_OK(!t_exists(root), "temporary directory removed");
    free(root);
    return tap_done();
}
