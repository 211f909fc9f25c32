/*
 * test_seq.c - the _seq.lock directory mutex, the high-water mark and seq
 * reservations (seq.h).
 *
 * Waiting for the full 10 s acquisition deadline is slow, so it only runs
 * with AC_TEST_SLOW=1; the retry loop is shown instead by a waiter that gets
 * the lock once the holder lets go, by a waiter interrupted with SIGINT, and
 * by stale-lock removal (a lock directory aged 60 s with utimensat).
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
#include <time.h>
#include <unistd.h>

#include "agentchat/clock.h"
#include "agentchat/err.h"
#include "fs/seq.h"
#include "tap.h"
#include "tutil.h"

static int64_t now_ms(void)
{
    return ac_clock_mono_ns() / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static int open_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd == -1)
        t_bail("open %s", path);
    return fd;
}

static ino_t inode_of(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_ino : 0;
}

/* Age the lock directory by `sec` seconds. */
static void age(const char *path, long sec)
{
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= sec;
    ts[1] = ts[0];
    if (utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) == -1)
        t_bail("utimensat %s", path);
}

/* Child: acquire the lock of `dir`. Writes "<rc> <ms> <code> <exit>\n" to
 * the pipe and exits. With `signals`, installs the SIGINT flag handler. */
static pid_t spawn_acquirer(const char *dir, int wfd, int signals)
{
    pid_t pid;
    pid = t_fork();
    if (pid == 0) {
        struct ac_seqlock lk;
        struct ac_err err = AC_ERR_INIT;
        int dfd = open_dir(dir), rc;
        int64_t t0;
        char line[160];
        if (signals)
            ac_clock_install_signals();
        t0 = now_ms();
        rc = ac_seqlock_acquire(dfd, &lk, &err);
        snprintf(line, sizeof line, "%d %lld %s %d\n", rc, (long long)(now_ms() - t0),
                 err.code ? err.code : "-", err.exit_code);
        if (write(wfd, line, strlen(line)) == -1)
            _exit(3);
        if (rc == 0)
            ac_seqlock_release(&lk);
        _exit(0);
    }
    return pid;
}

struct acq_result {
    int rc;
    long long ms;
    char code[64];
    int exit_code;
};

static void collect(pid_t pid, int rfd, struct acq_result *r)
{
    char buf[160];
    ssize_t n = read(rfd, buf, sizeof buf - 1);
    int status;
    memset(r, 0, sizeof *r);
    r->rc = 99;
    if (n > 0) {
        buf[n] = '\0';
        if (sscanf(buf, "%d %lld %63s %d", &r->rc, &r->ms, r->code, &r->exit_code) != 4)
            r->rc = 98;
    }
    waitpid(pid, &status, 0);
}

static void test_acquire_release(const char *dir)
{
    int dfd = open_dir(dir);
    char lock[1024];
    snprintf(lock, sizeof lock, "%s/_seq.lock", dir);
    struct ac_seqlock lk;
    struct ac_err err = AC_ERR_INIT;
    struct stat st;

    TAP_INT_EQ(ac_seqlock_acquire(dfd, &lk, &err), 0, "acquire on a fresh channel");
    TAP_OK(lk.held && lstat(lock, &st) == 0 && S_ISDIR(st.st_mode),
           "the lock is the directory _seq.lock");
    {
        struct stat held;
        TAP_OK(lk.fd >= 0 && fstat(lk.fd, &held) == 0 && held.st_ino == st.st_ino,
               "the lock keeps its directory open");
    }
    TAP_INT_EQ(ac_seqlock_check(&lk), 0, "and checks as held");
    TAP_INT_EQ(ac_seqlock_release(&lk), 0, "release of a lock held throughout: 0");
    TAP_OK(!lk.held && !t_exists(lock) && lk.fd == -1, "release removes _seq.lock");
    TAP_INT_EQ(ac_seqlock_release(&lk), -1, "a second release is harmless");
    TAP_OK(!t_exists(lock), "and changes nothing");
    close(dfd);
}

/* A waiter keeps retrying while the lock is held and gets it once the
 * holder releases (here after 300 ms, far below the 10 s deadline). */
static void test_waiter_gets_lock(const char *dir)
{
    int dfd = open_dir(dir), p[2];
    struct ac_seqlock lk;
    struct ac_err err = AC_ERR_INIT;
    struct acq_result r;
    pid_t pid;
    int status;

    if (ac_seqlock_acquire(dfd, &lk, &err) == -1 || pipe(p) == -1)
        t_bail("set-up");
    pid = spawn_acquirer(dir, p[1], 0);
    sleep_ms(300);
    TAP_INT_EQ(waitpid(pid, &status, WNOHANG), 0, "the second acquirer is still waiting");
    ac_seqlock_release(&lk);
    collect(pid, p[0], &r);
    TAP_INT_EQ(r.rc, 0, "the waiter acquires once the lock is released");
    TAP_OK(r.ms >= 250 && r.ms < 5000, "it waited for the holder (%lld ms)", r.ms);
    TAP_OK(!t_exists(t_path("%s/_seq.lock", dir)), "the waiter released it");
    close(p[0]);
    close(p[1]);
    close(dfd);
}

/* SIGINT ends the wait with INTERRUPTED (exit 130), leaving the holder's
 * lock in place. */
static void test_waiter_interrupted(const char *dir)
{
    int dfd = open_dir(dir), p[2];
    char lock[1024];
    snprintf(lock, sizeof lock, "%s/_seq.lock", dir);
    struct ac_seqlock lk;
    struct ac_err err = AC_ERR_INIT;
    struct acq_result r;
    ino_t ino;
    pid_t pid;

    if (ac_seqlock_acquire(dfd, &lk, &err) == -1 || pipe(p) == -1)
        t_bail("set-up");
    ino = inode_of(lock);
    pid = spawn_acquirer(dir, p[1], 1);
    sleep_ms(200);
    kill(pid, SIGINT);
    collect(pid, p[0], &r);
    TAP_OK(r.rc == -1 && strcmp(r.code, "INTERRUPTED") == 0 && r.exit_code == AC_EXIT_INTERRUPTED,
           "SIGINT: rc %d, code %s, exit %d", r.rc, r.code, r.exit_code);
    TAP_OK(r.ms >= 150 && r.ms < 2000, "interrupted after about 200 ms (%lld ms)", r.ms);
    TAP_OK(inode_of(lock) == ino && ino != 0, "the holder's lock is untouched");
    ac_seqlock_release(&lk);
    close(p[0]);
    close(p[1]);
    close(dfd);
}

/* A lock directory older than 30 s is stale: removed, then taken at once. */
static void test_stale_lock(const char *dir)
{
    int dfd = open_dir(dir);
    char lock[1024];
    snprintf(lock, sizeof lock, "%s/_seq.lock", dir);
    struct ac_seqlock lk;
    struct ac_err err = AC_ERR_INIT;
    struct stat st;
    struct timespec now;
    int64_t t0;
    int rc;

    t_mkdir(lock);
    age(lock, 60);
    t0 = now_ms();
    rc = ac_seqlock_acquire(dfd, &lk, &err);
    TAP_INT_EQ(rc, 0, "a 60 s old lock is stale and replaced");
    TAP_OK(now_ms() - t0 < 1000, "without waiting (%lld ms)", (long long)(now_ms() - t0));
    clock_gettime(CLOCK_REALTIME, &now);
    TAP_OK(lstat(lock, &st) == 0 && now.tv_sec - st.st_mtim.tv_sec < 10,
           "the lock directory is a fresh one");
    ac_seqlock_release(&lk);
    TAP_OK(!t_exists(lock), "and released normally");
    close(dfd);
}

/* A lock 20 s old is not stale: the waiter neither removes it nor takes it. */
static void test_young_lock_waits(const char *dir)
{
    char lock[1024];
    snprintf(lock, sizeof lock, "%s/_seq.lock", dir);
    struct acq_result r;
    ino_t ino;
    pid_t pid;
    int p[2], status;

    t_mkdir(lock);
    age(lock, 20);
    ino = inode_of(lock);
    if (pipe(p) == -1)
        t_bail("pipe");
    pid = spawn_acquirer(dir, p[1], 0);
    sleep_ms(400);
    TAP_INT_EQ(waitpid(pid, &status, WNOHANG), 0, "a 20 s old lock makes the acquirer wait");
    TAP_OK(inode_of(lock) == ino, "the 20 s old lock was not removed");
    rmdir(lock);
    collect(pid, p[0], &r);
    TAP_INT_EQ(r.rc, 0, "the waiter acquires after the lock goes away");
    close(p[0]);
    close(p[1]);
}

/* Release never removes a lock directory that is not the one we made. */
static void test_release_foreign_lock(const char *dir)
{
    int dfd = open_dir(dir);
    char lock[1024];
    snprintf(lock, sizeof lock, "%s/_seq.lock", dir);
    char other[1024];
    snprintf(other, sizeof other, "%s/_seq.lock.other", dir);
    struct ac_seqlock lk;
    struct ac_err err = AC_ERR_INIT;
    ino_t mine, theirs;

    if (ac_seqlock_acquire(dfd, &lk, &err) == -1)
        t_bail("acquire");
    mine = inode_of(lock);
    /* Another poster judged ours stale and replaced it. Make the new
     * directory before removing ours so the inode cannot be reused. */
    t_mkdir(other);
    theirs = inode_of(other);
    if (rmdir(lock) == -1 || rename(other, lock) == -1)
        t_bail("replace lock");
    TAP_OK(mine != theirs && inode_of(lock) == theirs, "the lock was replaced by another one");
    TAP_INT_EQ(ac_seqlock_check(&lk), -1, "the holder finds out its lock is gone");
    TAP_INT_EQ(ac_seqlock_release(&lk), -1, "release says the lock had been lost");
    TAP_OK(t_exists(lock) && inode_of(lock) == theirs, "release leaves the foreign lock alone");
    rmdir(lock);

    /* Ours vanished entirely: release is a no-op. */
    if (ac_seqlock_acquire(dfd, &lk, &err) == -1)
        t_bail("acquire");
    rmdir(lock);
    TAP_INT_EQ(ac_seqlock_check(&lk), -1, "a removed lock checks as lost");
    ac_seqlock_release(&lk);
    TAP_OK(!t_exists(lock) && !lk.held, "release after the lock vanished");

    /* Removed and made again at once: the new directory can never get the
     * inode of ours, which the holder keeps open. */
    if (ac_seqlock_acquire(dfd, &lk, &err) == -1)
        t_bail("acquire");
    mine = inode_of(lock);
    if (rmdir(lock) == -1)
        t_bail("rmdir");
    t_mkdir(lock);
    TAP_OK(inode_of(lock) != mine, "a lock made right after ours went has another inode");
    TAP_INT_EQ(ac_seqlock_check(&lk), -1, "so the holder finds out");
    ac_seqlock_release(&lk);
    TAP_OK(t_exists(lock), "and leaves the new lock alone");
    rmdir(lock);
    close(dfd);
}

/* A held lock that grew older than AC_SEQ_FENCE_SEC (its holder stopped,
 * or someone aged it) is not safe to act on: any waiter may steal it. */
static void test_fence_age(const char *dir)
{
    int dfd = open_dir(dir);
    char lock[1024];
    snprintf(lock, sizeof lock, "%s/_seq.lock", dir);
    struct ac_seqlock lk;
    struct ac_err err = AC_ERR_INIT;

    if (ac_seqlock_acquire(dfd, &lk, &err) == -1)
        t_bail("acquire");
    age(lock, AC_SEQ_FENCE_SEC - 5);
    TAP_INT_EQ(ac_seqlock_check(&lk), 0, "a lock younger than the fence age is held");
    TAP_INT_EQ(ac_seqlock_gate(&lk), 0, "and the gate lets the publish through");
    age(lock, AC_SEQ_FENCE_SEC + 5);
    TAP_INT_EQ(ac_seqlock_check(&lk), -1, "an older one is lost");
    TAP_INT_EQ(ac_seq_high_raise(dfd, 9, &lk), -1, "a gated .seqhigh raise refuses");
    TAP_INT_EQ(errno, ENOLCK, "with ENOLCK");
    TAP_OK(!t_exists(t_path("%s/.seqhigh", dir)) && t_count_temps(dir) == 0,
           "and writes nothing");
    TAP_INT_EQ(ac_seqlock_release(&lk), -1, "release says it was lost");
    TAP_OK(!t_exists(lock), "but removes it: it was still ours");
    close(dfd);
}

/* A _seq.lock that is not a directory is refused at once, not waited on. */
static void test_planted_lock(const char *dir)
{
    int dfd = open_dir(dir);
    char lock[1024];
    snprintf(lock, sizeof lock, "%s/_seq.lock", dir);
    struct ac_seqlock lk;
    struct ac_err err = AC_ERR_INIT;
    int64_t t0;

    if (symlink("/tmp", lock) == -1)
        t_bail("symlink");
    t0 = now_ms();
    TAP_INT_EQ(ac_seqlock_acquire(dfd, &lk, &err), -1, "a symlink _seq.lock is refused");
    TAP_STR_EQ(err.code, "SEQ_LOCK_INVALID", "with SEQ_LOCK_INVALID");
    TAP_OK(now_ms() - t0 < 1000, "at once (%lld ms)", (long long)(now_ms() - t0));
    unlink(lock);
    close(dfd);
}

/* Optional: the full 10 s deadline. */
static void test_timeout(const char *dir)
{
    char lock[1024];
    snprintf(lock, sizeof lock, "%s/_seq.lock", dir);
    const char *slow = getenv("AC_TEST_SLOW");
    struct acq_result r;
    pid_t pid;
    int p[2];

    if (!slow || strcmp(slow, "1") != 0) {
        TAP_OK(1, "SEQ_LOCK_TIMEOUT after 10 s # SKIP set AC_TEST_SLOW=1 to wait 10 s");
        return;
    }
    t_mkdir(lock);
    if (pipe(p) == -1)
        t_bail("pipe");
    pid = spawn_acquirer(dir, p[1], 0);
    collect(pid, p[0], &r);
    TAP_OK(r.rc == -1 && strcmp(r.code, "SEQ_LOCK_TIMEOUT") == 0 && r.exit_code == 1 &&
           r.ms >= 9900 && r.ms < 12000, "SEQ_LOCK_TIMEOUT after 10 s (%lld ms, %s)", r.ms, r.code);
    TAP_OK(t_exists(lock), "the timed-out waiter left the lock alone");
    rmdir(lock);
    close(p[0]);
    close(p[1]);
}

static void test_high_water(const char *dir)
{
    int dfd = open_dir(dir);
    char high[1024], shown[32];
    snprintf(high, sizeof high, "%s/.seqhigh", dir);
    static const struct { const char *text; int ok; uint64_t want; int err; } cases[] = {
        { "12", 1, 12, 0 }, { "12\n", 1, 12, 0 }, { " 12 \n", 1, 12, 0 }, { "0", 1, 0, 0 },
        { "9223372036854775807", 1, UINT64_C(9223372036854775807), 0 },
        { "", 0, 0, EINVAL }, { "abc", 0, 0, EINVAL }, { "7x", 0, 0, EINVAL }, { "-1", 0, 0, EINVAL },
        { "-5", 0, 0, EINVAL }, { "+5", 0, 0, EINVAL }, { "1 2", 0, 0, EINVAL },
        { "9223372036854775808", 0, 0, ERANGE }, { "18446744073709551615", 0, 0, ERANGE },
        { "99999999999999999999999", 0, 0, ERANGE }, { "99999999999999999999x", 0, 0, EINVAL },
    };
    size_t i;
    uint64_t v;
    char *got;

    TAP_OK(ac_seq_high_get(dfd, &v, NULL) == 0 && v == 0, "missing .seqhigh reads as 0");
    TAP_INT_EQ(ac_seq_high_raise(dfd, 7, NULL), 0, "raise the high-water mark");
    got = t_read(high, NULL);
    TAP_STR_EQ(got, "7", ".seqhigh holds the decimal, no newline");
    free(got);
    TAP_OK(ac_seq_high_get(dfd, &v, NULL) == 0 && v == 7, "read it back");
    TAP_INT_EQ(ac_seq_high_raise(dfd, 5, NULL), 0, "raising to a lower value succeeds");
    got = t_read(high, NULL);
    TAP_STR_EQ(got, "7", "but never lowers it");
    free(got);
    TAP_INT_EQ(t_count_temps(dir), 0, "no temp left by the writes");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc;
        t_write(high, cases[i].text);
        errno = 0;
        rc = ac_seq_high_get(dfd, &v, shown);
        if (cases[i].ok)
            TAP_OK(rc == 0 && v == cases[i].want, ".seqhigh '%.*s' reads as %llu",
                   (int)strcspn(cases[i].text, "\n"), cases[i].text, (unsigned long long)cases[i].want);
        else
            TAP_OK(rc == -1 && errno == cases[i].err && strncmp(shown, cases[i].text, 24) == 0,
                   ".seqhigh '%s' is refused (%s), never wrapped", cases[i].text,
                   cases[i].err == ERANGE ? "ERANGE" : "EINVAL");
    }
    t_write(high, "7x");
    TAP_INT_EQ(ac_seq_high_raise(dfd, 3, NULL), 0, "an invalid .seqhigh is replaced by a raise");
    got = t_read(high, NULL);
    TAP_STR_EQ(got, "3", "with the new value");
    free(got);
    unlink(high);
    close(dfd);
}

/* The reservation is an O_EXCL file that the caller later publishes as the
 * message; the descriptor it returns is that file. */
static void test_reserve(const char *dir)
{
    char n5[AC_SEQ_RESERVATION_MAX], n6[AC_SEQ_RESERVATION_MAX], other[AC_SEQ_RESERVATION_MAX];
    int dfd = open_dir(dir), status, fd5, fd6, fd;
    pid_t pid;

    fd5 = ac_seq_reserve(dfd, 5, n5);
    TAP_OK(fd5 >= 0, "reserve a free seq: a descriptor");
    TAP_STR_EQ(n5, ".seqres-5", "the reservation is named .seqres-5");
    TAP_OK(t_exists(t_path("%s/.seqres-5", dir)), "the reservation file .seqres-5 exists");
    TAP_INT_EQ(ac_seq_reserve(dfd, 5, other), AC_SEQ_TAKEN, "reserving a taken seq: AC_SEQ_TAKEN");
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(ac_seq_reserve(dfd, 5, other) == AC_SEQ_TAKEN ? 0 : 1);
    waitpid(pid, &status, 0);
    TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "another process also finds the seq taken");
    fd6 = ac_seq_reserve(dfd, 6, n6);
    TAP_OK(fd6 >= 0, "another seq is independent");
    close(fd5);
    ac_seq_unreserve(dfd, n5);
    TAP_OK(!t_exists(t_path("%s/.seqres-5", dir)), "unreserve removes the file");
    fd = ac_seq_reserve(dfd, 5, n5);
    TAP_OK(fd >= 0, "the seq can be reserved again");
    close(fd);
    close(fd6);
    ac_seq_unreserve(dfd, n5);
    ac_seq_unreserve(dfd, n6);
    ac_seq_unreserve(dfd, n6);
    TAP_INT_EQ(t_count(dir, ".seqres-", ""), 0, "no reservation left");
    errno = 0;
    TAP_OK(ac_seq_reserve(-1, 1, other) == -1 && errno == EBADF, "reserve on a bad descriptor is -1");
    close(dfd);
}

int main(void)
{
    char *dir;

    setenv("AGENT_CHAT_TEST_FSYNC", "0", 1);
    unsetenv("AGENT_CHAT_FAULT");
    dir = t_mkdtemp("seq");

    test_acquire_release(dir);
    test_waiter_gets_lock(dir);
    test_waiter_interrupted(dir);
    test_stale_lock(dir);
    test_young_lock_waits(dir);
    test_release_foreign_lock(dir);
    test_fence_age(dir);
    test_planted_lock(dir);
    test_timeout(dir);
    test_high_water(dir);
    test_reserve(dir);

    TAP_INT_EQ(t_count(dir, "", ""), 0, "the channel directory is empty again");
    t_rm_rf(dir);
    free(dir);
    return tap_done();
}
