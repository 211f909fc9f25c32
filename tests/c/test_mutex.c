/*
 * test_mutex.c - the channel-directory lock (mutex.h, ac_mutex_lock_dir):
 * one holder at a time, a second try reports busy without blocking, a
 * waiter gets it once the holder lets go (another process, which ends its
 * hold by exiting), an interrupt ends the wait, nothing is added to the
 * directory, and release is idempotent.
 *
 * flock conflicts between open file descriptions, so two locks taken in
 * this one process exclude each other as two processes would.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentchat/clock.h"
#include "fs/mutex.h"
#include "tap.h"
#include "tutil.h"

static int open_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd == -1)
        t_bail("open %s", path);
    return fd;
}

static int entries(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;
    if (!d)
        t_bail("opendir %s", path);
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static void test_exclusion(const char *dir)
{
    int fd = open_dir(dir);
    struct ac_flock a, b;
    TAP_INT_EQ(ac_flock_dir(fd, 0, &a), 0, "the first lock is taken");
    TAP_INT_EQ(ac_flock_dir(fd, 0, &b), AC_MUTEX_BUSY, "a second try is told busy");
    TAP_INT_EQ(b.fd, -1, "  and holds nothing");
    TAP_INT_EQ(entries(dir), 0, "no lock file is added to the directory");
    ac_flock_release(&a);
    ac_flock_release(&a);
    TAP_INT_EQ(a.fd, -1, "release is idempotent");
    TAP_INT_EQ(ac_flock_dir(fd, 0, &b), 0, "after the release the lock is free again");
    ac_flock_release(&b);
    close(fd);
}

/* A child holds the lock for a moment; the parent waits for it. */
static void test_wait(const char *dir)
{
    int fd = open_dir(dir);
    int ready[2];
    char c;
    struct ac_flock m;
    pid_t pid;
    int status;

    if (pipe(ready) == -1)
        t_bail("pipe");
    pid = fork();
    if (pid == -1)
        t_bail("fork");
    if (pid == 0) {
        struct ac_flock held;
        if (ac_flock_dir(fd, 0, &held) != 0)
            _exit(1);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        usleep(200 * 1000);
        _exit(0);               /* exiting drops the flock */
    }
    close(ready[1]);
    if (read(ready[0], &c, 1) != 1)
        t_bail("child did not take the lock");
    close(ready[0]);
    TAP_INT_EQ(ac_flock_dir(fd, 0, &m), AC_MUTEX_BUSY, "busy while another process holds it");
    TAP_INT_EQ(ac_flock_dir(fd, INT64_MAX, &m), 0, "a waiter gets it once the holder exits");
    waitpid(pid, &status, 0);
    TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the holder had the lock until it exited (exit 0)");
    ac_flock_release(&m);
    close(fd);
}

/* An interrupt pending when the wait starts ends it with EINTR. */
static void test_interrupted(const char *dir)
{
    int fd = open_dir(dir);
    struct ac_flock held, m;
    if (ac_flock_dir(fd, 0, &held) != 0)
        t_bail("lock");
    ac_clock_clear_interrupt();
    raise(SIGINT);
    errno = 0;
    TAP_INT_EQ(ac_flock_dir(fd, INT64_MAX, &m), -1, "an interrupt ends the wait");
    TAP_INT_EQ(errno, EINTR, "  with EINTR");
    TAP_INT_EQ(m.fd, -1, "  holding nothing");
    ac_clock_clear_interrupt();
    ac_flock_release(&held);
    close(fd);
}

static void test_not_a_directory(const char *dir)
{
    int fd = open_dir(dir);
    struct ac_flock m;
    t_write(t_path("%s/file", dir), "x");
    {
        int ffd = openat(fd, "file", O_RDONLY | O_CLOEXEC);
        errno = 0;
        TAP_INT_EQ(ac_flock_dir(ffd, 0, &m), -1, "a descriptor of a file is refused");
        TAP_INT_EQ(errno, ENOTDIR, "  with ENOTDIR");
        close(ffd);
    }
    close(fd);
}

int main(void)
{
    char *dir = t_mkdtemp("mutex");
    ac_clock_install_signals();
    test_exclusion(dir);
    test_wait(dir);
    test_interrupted(dir);
    test_not_a_directory(dir);
    t_rm_rf(dir);
    free(dir);
    return tap_done();
}
