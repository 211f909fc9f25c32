/*
 * test_receipts.c - the ack store and the receipts wait of receipts.h, and
 * ac_dirwatch_add of dirwatch.h (one watch over several directories).
 *
 * The waits that must be woken by another process fork a child that
 * publishes the ack (or moves the cursor) after a short pause; the parent
 * only asserts the outcome (reached or not), never a duration. Crashes at
 * the fault points are covered by tests/functional/receipts_spec.lua,
 * through the binary.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/dirwatch.h"
#include "agentchat/receipts.h"
#include "agentchat/store.h"
#include "tap.h"
#include "tutil.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *root;
static struct ac_store *store;

static int open_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd == -1)
        t_bail("open %s", path);
    return fd;
}

static void nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* A fresh channel (receipts need only its directory and _meta.json). */
static struct ac_chan *new_channel(const char *name)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_chan *ch;
    t_mkdir(t_path("%s/%s", root, name));
    t_write(t_path("%s/%s/_meta.json", root, name), "{}");
    if (ac_store_chan_open(store, name, &ch, &err) == -1)
        t_bail("open channel %s: %s", name, err.msg);
    return ch;
}

/* Fork a child that, after `ms`, acks `seq` as `agent` (or, with a
 * cursor value > 0, sets the agent's cursor to it). Returns its pid. */
static pid_t later(struct ac_chan *ch, long ms, uint64_t seq, const char *agent, int64_t cursor)
{
    pid_t pid;
    pid = t_fork();
    if (pid == 0) {
        struct ac_err err = AC_ERR_INIT;
        nap_ms(ms);
        if (cursor > 0)
            _exit(ac_chan_cursor_set(ch, agent, cursor, &err) == 0 ? 0 : 1);
        _exit(ac_ack_write(ch, seq, agent, "{}\n", 3, &err) == 1 ? 0 : 1);
    }
    return pid;
}

static int reap(pid_t pid)
{
    int status;
    if (waitpid(pid, &status, 0) == -1)
        t_bail("waitpid");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_agent_names(void)
{
    static const char *const good[] = { "bob", "Zo\xc3\xab", "a b", "x.json", "a-b_c", "\xe6\x9d\x8e" };
    static const char *const bad[] = { "", ".", "..", "a/b", "a\\b", "a:b", ".hidden", "_sys",
                                       "a\nb", "tab\there", "del\x7f", "\xff\xfe" };
    char long_ok[AC_ACK_AGENT_MAX + 1], too_long[AC_ACK_AGENT_MAX + 2];
    size_t i;

    for (i = 0; i < COUNT(good); i++) {
        struct ac_err err = AC_ERR_INIT;
        TAP_INT_EQ(ac_ack_agent_check(good[i], &err), 0, "agent name %zu is valid", i);
    }
    for (i = 0; i < COUNT(bad); i++) {
        struct ac_err err = AC_ERR_INIT;
        TAP_INT_EQ(ac_ack_agent_check(bad[i], &err), -1, "agent name %zu is refused", i);
        TAP_STR_EQ(err.code, "RECEIPT_INVALID_AGENT", "  with RECEIPT_INVALID_AGENT");
        TAP_INT_EQ(err.exit_code, 1, "  exit 1");
        TAP_OK(strchr(err.msg, '\n') == NULL && strncmp(err.msg, "invalid agent name (", 20) == 0,
               "  one line naming the rule: %s", err.msg);
    }
    memset(long_ok, 'a', AC_ACK_AGENT_MAX);
    long_ok[AC_ACK_AGENT_MAX] = '\0';
    memset(too_long, 'a', AC_ACK_AGENT_MAX + 1);
    too_long[AC_ACK_AGENT_MAX + 1] = '\0';
    {
        struct ac_err err = AC_ERR_INIT;
        TAP_INT_EQ(ac_ack_agent_check(long_ok, &err), 0, "%d bytes is the longest name", AC_ACK_AGENT_MAX);
        TAP_INT_EQ(ac_ack_agent_check(too_long, &err), -1, "one byte more is refused");
    }
}

static void test_write_read_list(void)
{
    struct ac_chan *ch = new_channel("store");
    struct ac_err err = AC_ERR_INIT;
    char *data = NULL, **names = NULL;
    size_t len = 0, n = 0;
    int64_t mtime = 0;
    struct stat st;

    TAP_INT_EQ(ac_ack_read(ch, 7, "bob", &data, &len, &mtime, &err), 0, "no ack before one is written");
    TAP_INT_EQ(ac_ack_list(ch, 7, &names, &n, &err), 0, "listing a message without acks works");
    TAP_INT_EQ(n, 0, "  and finds none");
    TAP_OK(stat(t_path("%s/store/.acks", root), &st) == -1, "reading creates no directory");

    TAP_INT_EQ(ac_ack_write(ch, 7, "bob", "first\n", 6, &err), 1, "first ack is written");
    TAP_INT_EQ(ac_ack_write(ch, 7, "bob", "second\n", 7, &err), 0, "second ack reports 'acked before'");
    TAP_INT_EQ(ac_ack_read(ch, 7, "bob", &data, &len, &mtime, &err), 1, "the ack reads back");
    TAP_STR_EQ(data, "first\n", "  and the first record stayed");
    TAP_INT_EQ(len, 6, "  with its length");
    TAP_OK(mtime > 0, "  and a modification time");
    free(data);
    TAP_OK(stat(t_path("%s/store/.acks/7/bob.json", root), &st) == 0 && S_ISREG(st.st_mode),
           "the record is .acks/<seq>/<agent>.json");
    TAP_INT_EQ(ac_ack_write(ch, 7, "Bob", "x\n", 2, &err), 1, "names differing in case are different acks");

    /* Temps of crashed acks, hand-made and reserved names are not acks. */
    t_write(t_path("%s/store/.acks/7/.carol.json.abcd1234.tmp", root), "partial");
    t_write(t_path("%s/store/.acks/7/notes.txt", root), "x");
    t_write(t_path("%s/store/.acks/7/_sys.json", root), "{}");
    t_mkdir(t_path("%s/store/.acks/7/dir.json", root));
    TAP_INT_EQ(ac_ack_list(ch, 7, &names, &n, &err), 0, "list");
    TAP_INT_EQ(n, 2, "  finds only the two acks");
    if (n == 2) {
        TAP_STR_EQ(names[0], "Bob", "  sorted bytewise (Bob)");
        TAP_STR_EQ(names[1], "bob", "  sorted bytewise (bob)");
    }
    ac_names_free(names, n);

    TAP_INT_EQ(ac_ack_write(ch, 7, "dir", "x\n", 2, &err), -1, "an ack path that is a directory fails");
    TAP_STR_EQ(err.code, "IO_ERROR", "  with IO_ERROR");
    err = (struct ac_err)AC_ERR_INIT;
    TAP_INT_EQ(ac_ack_write(ch, 7, "../escape", "x\n", 2, &err), -1, "a path-escaping agent is refused");
    TAP_STR_EQ(err.code, "RECEIPT_INVALID_AGENT", "  with RECEIPT_INVALID_AGENT");
    TAP_OK(stat(t_path("%s/store/.acks/escape.json", root), &st) == -1 &&
           stat(t_path("%s/store/escape.json", root), &st) == -1, "  and nothing is written");

    /* A symlinked .acks is never followed out of the channel. */
    {
        struct ac_chan *ch2 = new_channel("linked");
        t_mkdir(t_path("%s/outside", root));
        if (symlink(t_path("%s/outside", root), t_path("%s/linked/.acks", root)) == -1)
            t_bail("symlink");
        err = (struct ac_err)AC_ERR_INIT;
        TAP_INT_EQ(ac_ack_write(ch2, 1, "bob", "x\n", 2, &err), -1, "a symlinked .acks is refused");
        TAP_OK(stat(t_path("%s/outside/1", root), &st) == -1, "  and nothing lands outside");
        ac_chan_close(ch2);
    }
    ac_chan_close(ch);
}

static void test_cursor(void)
{
    struct ac_chan *ch = new_channel("cur");
    struct ac_err err = AC_ERR_INIT;
    int64_t mtime = -1;
    TAP_INT_EQ(ac_chan_cursor_get(ch, "bob", &mtime), 0, "a missing cursor is 0");
    TAP_INT_EQ(mtime, 0, "  with no time");
    ac_chan_cursor_set(ch, "Bob", 4, &err);
    TAP_INT_EQ(ac_chan_cursor_get(ch, "bob", &mtime), 0, "Bob's cursor is not bob's");
    TAP_INT_EQ(ac_chan_cursor_get(ch, "Bob", &mtime), 4, "Bob's cursor");
    TAP_OK(mtime > 0, "  with the file's time");
    ac_chan_close(ch);
}

static void test_wait(void)
{
    struct ac_chan *ch = new_channel("wait");
    const char *trio[] = { "bob", "carol", "dave" };
    unsigned char reached[3];
    struct ac_err err = AC_ERR_INIT;
    pid_t pid;

    ac_ack_write(ch, 3, "bob", "{}\n", 3, &err);
    TAP_INT_EQ(ac_receipts_wait(ch, 3, trio, 3, AC_RECEIPT_ACKED, 0.05, 0.01, reached, &err), 1,
               "waiting for three acks with one present times out");
    TAP_OK(reached[0] == 1 && reached[1] == 0 && reached[2] == 0, "  and says who acked (bob only)");

    ac_chan_cursor_set(ch, "carol", 3, &err);
    TAP_INT_EQ(ac_receipts_wait(ch, 3, trio, 3, AC_RECEIPT_READ, 0, 0.01, reached, &err), 1,
               "read: dave has neither read nor acked");
    TAP_OK(reached[0] == 1 && reached[1] == 1 && reached[2] == 0,
           "  bob counts by his ack, carol by her cursor");
    TAP_INT_EQ(ac_receipts_wait(ch, 3, trio, 2, AC_RECEIPT_READ, 0, 0.01, reached, &err), 0,
               "bob and carol alone have read it: returns at once");

    /* Woken by another process: dave's ack, then his cursor. */
    pid = later(ch, 100, 3, "dave", 0);
    ac_ack_write(ch, 3, "carol", "{}\n", 3, &err);
    TAP_INT_EQ(ac_receipts_wait(ch, 3, trio, 3, AC_RECEIPT_ACKED, 30, 30, reached, &err), 0,
               "an ack from another process ends the wait (interval 30 s: woken, not polled)");
    TAP_INT_EQ(reap(pid), 0, "  the child acked");
    pid = later(ch, 100, 0, "erin", 9);
    {
        const char *one[] = { "erin" };
        TAP_INT_EQ(ac_receipts_wait(ch, 9, one, 1, AC_RECEIPT_READ, 30, 30, reached, &err), 0,
                   "a cursor moved by another process ends a read wait");
    }
    TAP_INT_EQ(reap(pid), 0, "  the child moved the cursor");

    /* Without change notification the wait polls at the interval. */
    setenv("AGENT_CHAT_WATCH", "none", 1);
    pid = later(ch, 50, 4, "bob", 0);
    {
        const char *one[] = { "bob" };
        TAP_INT_EQ(ac_receipts_wait(ch, 4, one, 1, AC_RECEIPT_ACKED, 30, 0.02, reached, &err), 0,
                   "polling (AGENT_CHAT_WATCH=none) sees the ack too");
    }
    reap(pid);
    setenv("AGENT_CHAT_WATCH", "inotify", 1);
    pid = later(ch, 50, 5, "bob", 0);
    {
        const char *one[] = { "bob" };
        TAP_INT_EQ(ac_receipts_wait(ch, 5, one, 1, AC_RECEIPT_ACKED, 30, 30, reached, &err), 0,
                   "inotify (AGENT_CHAT_WATCH=inotify) is woken by the ack");
    }
    reap(pid);
    unsetenv("AGENT_CHAT_WATCH");

    {
        const char *bad[] = { "bob", "../x" };
        err = (struct ac_err)AC_ERR_INIT;
        TAP_INT_EQ(ac_receipts_wait(ch, 3, bad, 2, AC_RECEIPT_ACKED, 1, 1, reached, &err), -1,
                   "a name that can never ack fails before waiting");
        TAP_STR_EQ(err.code, "RECEIPT_INVALID_AGENT", "  with RECEIPT_INVALID_AGENT");
    }
    ac_chan_close(ch);
}

/* One watch over several directories: a change in any of them wakes it. */
static void test_dirwatch_add(const char *mode)
{
    int a, fds[17], i, added = 0;
    struct ac_dirwatch *w;

    setenv("AGENT_CHAT_WATCH", mode, 1);
    t_mkdir(t_path("%s/dw-%s", root, mode));
    for (i = 0; i < 17; i++)
        t_mkdir(t_path("%s/dw-%s/d%d", root, mode, i));
    a = open_dir(t_path("%s/dw-%s/d0", root, mode));
    w = ac_dirwatch_open(a);
    TAP_OK(w != NULL, "%s: watch opened", mode);
    if (!w) {
        close(a);
        unsetenv("AGENT_CHAT_WATCH");
        return;
    }
    TAP_STR_EQ(ac_dirwatch_kind(w), mode, "  of the kind asked for");
    for (i = 1; i < 17; i++) {
        fds[i] = open_dir(t_path("%s/dw-%s/d%d", root, mode, i));
        if (ac_dirwatch_add(w, fds[i]) == 0)
            added++;
    }
    if (strcmp(mode, "dnotify") == 0)
        TAP_INT_EQ(added, 15, "  dnotify takes 15 more directories (wait --for: one watch), then EMFILE");
    else
        TAP_INT_EQ(added, 16, "  inotify takes any number of directories");
    TAP_INT_EQ(ac_dirwatch_wait(w, 20 * 1000000LL), 0, "  nothing changed: times out");
    t_write(t_path("%s/dw-%s/d2/new", root, mode), "x");
    TAP_INT_EQ(ac_dirwatch_wait(w, 30 * 1000000000LL), 1, "  a file created in an added directory wakes it");
    t_write(t_path("%s/dw-%s/d0/new", root, mode), "x");
    TAP_INT_EQ(ac_dirwatch_wait(w, 30 * 1000000000LL), 1, "  and so does one in the first directory");
    ac_dirwatch_close(w);
    for (i = 1; i < 17; i++)
        close(fds[i]);
    close(a);
    unsetenv("AGENT_CHAT_WATCH");
}

/* One wait on several watches (wait --for beyond one watch): a change in
 * any wakes it, and the next wait times out (the changes were consumed). */
static void test_dirwatch_wait_many(void)
{
    struct ac_dirwatch *ws[3];
    int fds[2], i;

    t_mkdir(t_path("%s/many", root));
    for (i = 0; i < 2; i++) {
        t_mkdir(t_path("%s/many/d%d", root, i));
        fds[i] = open_dir(t_path("%s/many/d%d", root, i));
    }
    ws[0] = ac_dirwatch_open(fds[0]);             /* dnotify where it works */
    ws[1] = NULL;                                 /* skipped: its caller polls */
    ws[2] = ac_dirwatch_open_inotify(fds[1]);
    TAP_OK(ws[0] && ws[2], "wait_many: two watches opened (%s, %s)", ac_dirwatch_kind(ws[0]),
           ac_dirwatch_kind(ws[2]));
    TAP_INT_EQ(ac_dirwatch_wait_many(ws, 3, 20 * 1000000LL), 0, "  nothing changed: times out");
    t_write(t_path("%s/many/d1/new", root), "x");
    TAP_INT_EQ(ac_dirwatch_wait_many(ws, 3, 30 * 1000000000LL), 1, "  a change of the second wakes it");
    TAP_INT_EQ(ac_dirwatch_wait_many(ws, 3, 20 * 1000000LL), 0, "  and was consumed");
    t_write(t_path("%s/many/d0/new", root), "x");
    TAP_INT_EQ(ac_dirwatch_wait_many(ws, 3, 30 * 1000000000LL), 1, "  a change of the first wakes it");
    TAP_INT_EQ(ac_dirwatch_wait_many(ws, 3, 20 * 1000000LL), 0, "  and was consumed");
    ac_dirwatch_close(ws[0]);
    ac_dirwatch_close(ws[2]);
    for (i = 0; i < 2; i++)
        close(fds[i]);
}

int main(void)
{
    setenv("AGENT_CHAT_TEST_FSYNC", "0", 1);
    root = t_mkdtemp("receipts");
    {
        struct ac_err err = AC_ERR_INIT;
        store = ac_store_open_fs(root, &err);
        if (!store)
            t_bail("open store: %s", err.msg);
    }
    errno = 0;
    TAP_INT_EQ(ac_dirwatch_add(NULL, 0), -1, "adding to no watch fails");
    TAP_INT_EQ(errno, EINVAL, "  with EINVAL");
    test_agent_names();
    test_write_read_list();
    test_cursor();
    test_wait();
    test_dirwatch_add("dnotify");
    test_dirwatch_add("inotify");
    test_dirwatch_wait_many();
    ac_store_close(store);
    t_rm_rf(root);
    free(root);
    return tap_done();
}
