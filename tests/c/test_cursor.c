/*
 * test_cursor.c - cursor files (include/agentchat/cursor.h): which file a
 * name gets, the rule of ac_cursor_advance, and the cursor lock (it makes a
 * missing cursor "0", excludes a second holder, never follows a symlink).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentchat/cursor.h"
#include "agentchat/sha256.h"
#include "tap.h"
#include "tutil.h"

/* TAP_STR_EQ of a file's content (freed). */
static void file_is(const char *path, const char *want, const char *what)
{
    char *got = t_read(path, NULL);
    TAP_STR_EQ(got, want, "%s", what);
    free(got);
}

static void file_names(void)
{
    char name[AC_CURSOR_NAME_MAX], want[AC_CURSOR_NAME_MAX], hex[AC_SHA256_HEX + 1];
    static const char *const own[] = { "alice", "claude-1", "a", "r2-d2", "9lives" };
    static const char *const other[][2] = {
        { "Bob", "bob" }, { "Claude_1", "claude-1" }, { "", "msg" }, { "\xe4\xb8\xad", "msg" },
        { "msg ", "msg" }, { "a.b", "a-b" }, { "-x", "x" },
        /* 41 characters: the slug is cut to 40, so it is not its own slug */
        { "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" },
    };
    size_t i;

    for (i = 0; i < sizeof own / sizeof *own; i++) {
        ac_cursor_file(own[i], name);
        snprintf(want, sizeof want, "%s.txt", own[i]);
        TAP_STR_EQ(name, want, "'%s' is its own slug: the Python tool's file", own[i]);
    }
    for (i = 0; i < sizeof other / sizeof *other; i++) {
        ac_sha256_hex(other[i][0], strlen(other[i][0]), hex);
        snprintf(want, sizeof want, "%s.%.32s.txt", other[i][1], hex);
        ac_cursor_file(other[i][0], name);
        TAP_STR_EQ(name, want, "'%s': slug plus 32 hex digits of its SHA-256", other[i][0]);
    }
}

static void advance_rule(const char *root)
{
    struct ac_err err = AC_ERR_INIT;
    int64_t expected;
    int fd = open(root, O_RDONLY | O_DIRECTORY);

    TAP_INT_EQ(ac_cursor_get(fd, "bob"), 0, "a missing cursor reads as 0");
    TAP_INT_EQ(ac_cursor_advance(fd, "bob", NULL, 5, &err), 0, "advance to 5");
    file_is(t_path("%s/.cursors/bob.txt", root), "5", "written as the bare number");
    TAP_INT_EQ(ac_cursor_advance(fd, "bob", NULL, 3, &err), 0, "advance to 3 without expected");
    TAP_INT_EQ(ac_cursor_get(fd, "bob"), 5, "... leaves 5: it never goes down");
    expected = 2;
    TAP_INT_EQ(ac_cursor_advance(fd, "bob", &expected, 4, &err), 0, "advance 2 -> 4 when it is 5");
    TAP_INT_EQ(ac_cursor_get(fd, "bob"), 5, "... leaves 5: another reader moved it past 4");
    expected = 2;
    TAP_INT_EQ(ac_cursor_advance(fd, "bob", &expected, 9, &err), 0, "advance 2 -> 9 when it is 5");
    TAP_INT_EQ(ac_cursor_get(fd, "bob"), 9, "... moves it up to 9");
    expected = 9;
    TAP_INT_EQ(ac_cursor_advance(fd, "bob", &expected, 4, &err), 0, "advance 9 -> 4 when it is 9");
    TAP_INT_EQ(ac_cursor_get(fd, "bob"), 4, "... rewrites it (a cursor past every message)");
    TAP_INT_EQ(ac_cursor_set(fd, "Bob", 7, &err), 0, "set Bob's cursor");
    TAP_INT_EQ(ac_cursor_get(fd, "bob"), 4, "... bob's stays");
    TAP_INT_EQ(ac_cursor_get(fd, "Bob"), 7, "... Bob's is 7");
    close(fd);
}

static void the_lock(const char *root)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_mutex m;
    int fd = open(root, O_RDONLY | O_DIRECTORY), other, status;
    pid_t pid;

    TAP_INT_EQ(ac_cursor_lock(fd, "carol", &m, &err), 0, "lock carol's cursor");
    file_is(t_path("%s/.cursors/carol.txt", root), "0",
               "a missing cursor is made \"0\", never left empty");
    other = open(t_path("%s/.cursors/carol.txt", root), O_RDONLY);
    TAP_OK(flock(other, LOCK_EX | LOCK_NB) == -1 && errno == EWOULDBLOCK, "another holder is excluded");
    close(other);
    pid = t_fork();
    if (pid == 0) {
        struct ac_mutex m2;
        struct ac_err e2 = AC_ERR_INIT;
        /* a different agent's lock is independent */
        _exit(ac_cursor_lock(fd, "dave", &m2, &e2) == 0 ? 0 : 1);
    }
    TAP_OK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "another agent's cursor lock is free meanwhile");
    ac_mutex_release(&m);
    other = open(t_path("%s/.cursors/carol.txt", root), O_RDONLY);
    TAP_OK(flock(other, LOCK_EX | LOCK_NB) == 0, "released");
    close(other);

    t_write(t_path("%s/outside", root), "5");
    TAP_OK(symlink(t_path("%s/outside", root), t_path("%s/.cursors/erin.txt", root)) == 0, "plant a symlink");
    TAP_INT_EQ(ac_cursor_get(fd, "erin"), 0, "a symlinked cursor reads as 0");
    TAP_INT_EQ(ac_cursor_lock(fd, "erin", &m, &err), 0, "lock it");
    ac_mutex_release(&m);
    file_is(t_path("%s/outside", root), "5", "the target is untouched");
    file_is(t_path("%s/.cursors/erin.txt", root), "0", "the link became a \"0\" file");
    close(fd);
}

int main(void)
{
    char *root = t_mkdtemp("cursor");
    file_names();
    advance_rule(root);
    the_lock(root);
    t_rm_rf(root);
    free(root);
    return tap_done();
}
