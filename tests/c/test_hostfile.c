/*
 * test_hostfile.c - another program's files (include/agentchat/hostfile.h):
 * proper-lockfile's lock directory as Claude Code takes it (mkdir, the
 * stale time, a takeover noticed by its old holder, the mark of a killed
 * run), the atomic write of an inbox (mode kept, symlinks refused), the
 * folder watch, and the one wait for a channel and a host folder
 * (wait.h: ac_wait_nap_fd) under dnotify and inotify.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentchat/channel.h"
#include "agentchat/clock.h"
#include "agentchat/hostfile.h"
#include "agentchat/store.h"
#include "agentchat/wait.h"
#include "tap.h"
#include "tutil.h"

static char *dir;

/* Set the times of path: mtime `ago` seconds in the past, atime `plus_ns`
 * after it. */
static void set_times(const char *path, int ago, long plus_ns)
{
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[1]);
    t[1].tv_sec -= ago;
    t[0] = t[1];
    t[0].tv_nsec += plus_ns;
    if (t[0].tv_nsec >= 1000000000) {
        t[0].tv_nsec -= 1000000000;
        t[0].tv_sec++;
    }
    if (utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW) == -1)
        t_bail("utimensat %s: %s", path, strerror(errno));
}

static void test_lock(void)
{
    struct ac_host_lock *l = NULL, *l2 = NULL;
    int64_t age = -1;
    const char *lockdir = t_path("%s/inboxes/lead.json.lock", dir);
    struct stat st;

    TAP_INT_EQ(ac_host_lock_try(dir, "inboxes/lead.json.lock", 10000, 0, &l, &age), 0, "a free lock is taken");
    TAP_OK(l && stat(lockdir, &st) == 0 && S_ISDIR(st.st_mode), "the lock is a directory");
    TAP_INT_EQ(ac_host_lock_try(dir, "inboxes/lead.json.lock", 10000, 0, &l2, &age), 1, "a held lock is busy");
    TAP_OK(!l2 && age >= 0 && age < 5000, "with its age (%lld ms)", (long long)age);
    TAP_INT_EQ(ac_host_lock_check(l), 0, "the holder's check passes");
    TAP_INT_EQ(ac_host_lock_touch(l), 0, "and its touch (proper-lockfile's update)");
    ac_host_lock_release(l);
    TAP_OK(stat(lockdir, &st) == -1 && errno == ENOENT, "release removes the directory");

    /* Someone else's lock, stale: removed and taken. */
    t_mkdir(lockdir);
    set_times(lockdir, 11, 0);
    TAP_INT_EQ(ac_host_lock_try(dir, "inboxes/lead.json.lock", 10000, 0, &l, &age), 0,
               "a lock older than the stale time is taken over");
    ac_host_lock_release(l);

    /* A fresh one of someone else: busy, whatever our mark. */
    t_mkdir(lockdir);
    TAP_INT_EQ(ac_host_lock_try(dir, "inboxes/lead.json.lock", 10000, 4242, &l, &age), 1,
               "a fresh lock of someone else stays (atime == mtime: no mark)");

    /* Our own mark: a lock a killed run of ours left is taken at once. */
    set_times(lockdir, 0, 4242);
    TAP_INT_EQ(ac_host_lock_try(dir, "inboxes/lead.json.lock", 10000, 4243, &l, &age), 1,
               "another mark is not ours");
    TAP_INT_EQ(ac_host_lock_try(dir, "inboxes/lead.json.lock", 10000, 4242, &l, &age), 0,
               "our mark is taken at once");
    TAP_OK(stat(lockdir, &st) == 0 &&
           (st.st_atim.tv_sec - st.st_mtim.tv_sec) * 1000000000LL + st.st_atim.tv_nsec - st.st_mtim.tv_nsec == 4242,
           "and the new lock carries the mark (atime = mtime + 4242 ns)");

    /* Taken over while held: the old holder notices and does not remove
     * the new holder's lock. */
    TAP_INT_EQ(ac_host_lock_try(dir, "inboxes/lead.json.lock", 10000, 4242, &l2, &age), 0,
               "a second run takes our marked lock");
    errno = 0;
    TAP_OK(ac_host_lock_check(l) == -1 && errno == ECANCELED, "the first holder's check says ECANCELED");
    TAP_OK(ac_host_lock_touch(l) == -1 && errno == ECANCELED, "and so does its touch");
    ac_host_lock_release(l);
    TAP_OK(stat(lockdir, &st) == 0, "its release leaves the new holder's lock");
    TAP_INT_EQ(ac_host_lock_check(l2), 0, "which is still the new holder's");
    ac_host_lock_release(l2);

    /* A lock path that is no directory. */
    t_write(lockdir, "x");
    errno = 0;
    TAP_OK(ac_host_lock_try(dir, "inboxes/lead.json.lock", 10000, 0, &l, &age) == -1 && errno == ENOTDIR,
           "a file where the lock directory goes: ENOTDIR");
    unlink(lockdir);
    TAP_OK(ac_host_lock_try(dir, "../lead.json.lock", 10000, 0, &l, &age) == -1 && errno == EINVAL,
           "a path that leaves the folder: EINVAL");
}

static void test_write(void)
{
    const char *inbox = t_path("%s/inboxes/bob.json", dir);
    struct stat st;
    size_t len;
    char *got;

    TAP_INT_EQ(ac_host_dir_write(dir, "inboxes/bob.json", "[]", 2), 0, "a new inbox is written");
    TAP_OK(stat(inbox, &st) == 0 && (st.st_mode & 0777) == 0644, "0644 (umask 022)");
    chmod(inbox, 0600);
    TAP_INT_EQ(ac_host_dir_write(dir, "inboxes/bob.json", "[1]", 3), 0, "and replaced");
    got = t_read(inbox, &len);
    TAP_STR_EQ(got, "[1]", "with the new bytes");
    free(got);
    TAP_OK(stat(inbox, &st) == 0 && (st.st_mode & 0777) == 0600, "keeping its mode");
    TAP_INT_EQ(t_count(t_path("%s/inboxes", dir), ".bob.json.", ".tmp"), 0, "no temp is left");
    if (symlink("/etc/passwd", t_path("%s/inboxes/eve.json", dir)) == -1)
        t_bail("symlink");
    errno = 0;
    TAP_OK(ac_host_dir_write(dir, "inboxes/eve.json", "[]", 2) == -1 && errno == ELOOP,
           "a symlinked inbox is not written through (ELOOP)");
    t_mkdir(t_path("%s/inboxes/dir.json", dir));
    TAP_OK(ac_host_dir_write(dir, "inboxes/dir.json", "[]", 2) == -1 && errno == EISDIR, "nor a directory");
    if (symlink("/tmp", t_path("%s/linked", dir)) == -1)
        t_bail("symlink");
    TAP_OK(ac_host_dir_write(dir, "linked/x.json", "[]", 2) == -1 && (errno == ENOTDIR || errno == ELOOP),
           "nor through a symlinked folder");
    TAP_INT_EQ(ac_host_dir_mkdir(dir, "inboxes"), 0, "mkdir of an existing folder succeeds");
    TAP_OK(ac_host_dir_mkdir(dir, "inboxes/bob.json") == -1 && errno == EEXIST, "mkdir over a file: EEXIST");
}

static void test_watch_and_wait(const char *how)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_store *st;
    struct ac_chan *ch = NULL;
    struct ac_host_watch *hw;
    struct ac_watch *w;
    struct ac_post_req req;
    struct ac_post_result res;
    const char *root = t_path("%s/root-%s", dir, how);
    char *meta;
    size_t len;
    int which = -1;
    static const char *const members[] = { "alice" };

    setenv("AGENT_CHAT_WATCH", how, 1);
    st = ac_store_open_fs(root, &err);
    meta = ac_meta_compose("dev", members, 1, "", "2026-11-30T05:01:22+00:00", &len);
    if (!st || !meta || ac_store_chan_create(st, "dev", meta, len, &err) == -1 ||
        ac_store_chan_open(st, "dev", &ch, &err) == -1)
        t_bail("channel: %s", err.msg);
    free(meta);
    hw = ac_host_watch_open(dir, "inboxes");
    TAP_OK(hw && ac_host_watch_fd(hw) >= 0, "%s: a host folder watch has a descriptor", how);
    w = ac_chan_watch_open(ch, AC_WATCH_MESSAGES, 0);
    TAP_OK(w != NULL, "%s: the channel notifies", how);

    TAP_INT_EQ(ac_wait_nap_fd(ch, &w, ac_host_watch_fd(hw), 50 * 1000000LL, &which, &err), 0,
               "%s: a quiet nap", how);
    TAP_INT_EQ(which, 0, "%s: ends at its timeout", how);

    t_write(t_path("%s/inboxes/lead.json", dir), "[]");
    TAP_INT_EQ(ac_wait_nap_fd(ch, &w, ac_host_watch_fd(hw), 5000 * 1000000LL, &which, &err), 0,
               "%s: a change of the folder", how);
    TAP_OK(which & 2, "%s: wakes the wait as the folder's (which %d)", how, which);
    while (ac_host_watch_wait(hw, 0) == 1) {
    }

    memset(&req, 0, sizeof req);
    req.from = "alice";
    req.to = "lead";
    req.title = "t";
    req.status = "discussion";
    req.body = "b";
    req.body_len = 1;
    if (ac_chan_msg_post(ch, &req, &res, &err) == -1)
        t_bail("post: %s", err.msg);
    which = 0;
    TAP_INT_EQ(ac_wait_nap_fd(ch, &w, ac_host_watch_fd(hw), 5000 * 1000000LL, &which, &err), 0,
               "%s: a post", how);
    TAP_OK(which & 1, "%s: wakes the same wait as the channel's (which %d)", how, which);
    TAP_OK(w != NULL, "%s: the watch is kept", how);

    ac_chan_watch_close(ch, w);
    ac_host_watch_close(hw);
    ac_chan_close(ch);
    ac_store_close(st);
    unsetenv("AGENT_CHAT_WATCH");
}

int main(void)
{
    ac_clock_install_signals();
    umask(022);
    dir = t_mkdtemp("hostfile");
    t_mkdir(t_path("%s/inboxes", dir));
    test_lock();
    test_write();
    test_watch_and_wait("dnotify");
    test_watch_and_wait("inotify");
    return tap_done();
}
