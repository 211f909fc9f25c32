/* cursor.c - read cursors; see include/agentchat/cursor.h. */
#include "agentchat/cursor.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/fsutil.h"
#include "agentchat/pystr.h"
#include "agentchat/sha256.h"

#define CURSOR_CAP 4096

void ac_cursor_file(const char *agent, char out[AC_CURSOR_NAME_MAX])
{
    char slug[AC_SLUG_MAX + 1];
    size_t len = strlen(agent);
    ac_slugify(agent, len, slug);
    if (strcmp(slug, agent) == 0) {
        snprintf(out, AC_CURSOR_NAME_MAX, "%s.txt", slug);
    } else {
        /* Any other name gets a file of its own: the slug keeps it
         * recognisable in a listing, the hash of the exact bytes keeps
         * `Bob` apart from `bob` and `中文` apart from `日本`. */
        char hex[AC_SHA256_HEX + 1];
        ac_sha256_hex(agent, len, hex);
        snprintf(out, AC_CURSOR_NAME_MAX, "%s.%.*s.txt", slug, AC_CURSOR_HASH_HEX, hex);
    }
}

/* The value of cursor file `name` in the open .cursors directory cdir:
 * Python's int(text.strip()), 0 for a missing or unparsable file. */
static int64_t value_at(int cdir, const char *name)
{
    char *buf;
    size_t len, a, b;
    int64_t v = 0;
    if (ac_read_file_at(cdir, name, CURSOR_CAP, &buf, &len) == -1)
        return 0;
    /* strip() also removes U+001C..U+001F, as Python's does. */
    ac_py_strip(buf, len, &a, &b);
    if (ac_py_int_parse(buf + a, b - a, &v) == -1)
        v = 0;
    free(buf);
    return v;
}

int64_t ac_cursor_get(int dirfd, const char *agent)
{
    char name[AC_CURSOR_NAME_MAX];
    int64_t v;
    int cdir = ac_open_dir_at(dirfd, AC_CURSOR_DIR);
    if (cdir == -1)
        return 0;
    ac_cursor_file(agent, name);
    v = value_at(cdir, name);
    close(cdir);
    return v;
}

/* The .cursors directory of dirfd, made if missing; -1 with errno. */
static int open_cursor_dir(int dirfd)
{
    if (ac_sys_mkdirat(dirfd, AC_CURSOR_DIR, 0755) == -1 && errno != EEXIST)
        return -1;
    return ac_open_dir_at(dirfd, AC_CURSOR_DIR);
}

/* Write `value` into cursor file `name` of cdir unless it already holds
 * exactly that text. 0 or -1 with errno. */
static int write_at(int cdir, const char *name, int64_t value)
{
    char text[32], *old;
    size_t len, n = (size_t)snprintf(text, sizeof text, "%" PRId64, value);
    if (ac_read_file_at(cdir, name, CURSOR_CAP, &old, &len) == 0) {
        int same = len == n && memcmp(old, text, n) == 0;
        free(old);
        if (same)
            return 0;
    }
    return ac_write_atomic(cdir, name, text, n, 0644, AC_ATOMIC_REPLACE, "cursor");
}

/* ac_cursor_set and ac_cursor_advance: write `value`, or, to advance,
 * what the rule of ac_cursor_advance makes of it. */
static int store(int dirfd, const char *agent, int64_t value, int advance, const int64_t *expected,
                 struct ac_err *err)
{
    char name[AC_CURSOR_NAME_MAX];
    int cdir, rc = 0, e;

    ac_cursor_file(agent, name);
    cdir = open_cursor_dir(dirfd);
    if (cdir == -1)
        return ac_err_sys(err, errno, NULL, "could not write cursor %s/%s", AC_CURSOR_DIR, name);
    if (advance) {
        int64_t now = value_at(cdir, name);
        /* Someone moved it since the scan (or nobody scanned): never back. */
        if ((!expected || now != *expected) && now > value)
            value = now;
    }
    if (write_at(cdir, name, value) == -1) {
        e = errno;
        rc = ac_err_sys(err, e, NULL, "could not write cursor %s/%s", AC_CURSOR_DIR, name);
    }
    close(cdir);
    return rc;
}

int ac_cursor_set(int dirfd, const char *agent, int64_t value, struct ac_err *err)
{
    return store(dirfd, agent, value, 0, NULL, err);
}

int ac_cursor_advance(int dirfd, const char *agent, const int64_t *expected, int64_t value,
                      struct ac_err *err)
{
    return store(dirfd, agent, value, 1, expected, err);
}

int ac_cursor_lock(int dirfd, const char *agent, struct ac_mutex *m, struct ac_err *err)
{
    char name[AC_CURSOR_NAME_MAX];
    struct stat st;
    int cdir, rc, missing, statted;

    m->fd = -1;
    ac_cursor_file(agent, name);
    cdir = open_cursor_dir(dirfd);
    if (cdir == -1)
        return ac_err_sys(err, errno, NULL, "could not lock cursor %s/%s", AC_CURSOR_DIR, name);
    /* The lock is a flock of the cursor file itself. A missing one is
     * published as "0" first (atomically, never replacing one a concurrent
     * reader made): the same value a missing cursor has, so a reader that
     * dies holding the lock leaves nothing wrong behind. So is one that is
     * not a regular file (a planted symlink is never followed: it reads as
     * 0, and the read's write would replace the link itself anyway). */
    statted = fstatat(cdir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    missing = !statted && errno == ENOENT;
    if (missing || (statted && !S_ISREG(st.st_mode))) {
        int how = missing ? AC_ATOMIC_NOREPLACE : AC_ATOMIC_REPLACE;
        if (ac_write_atomic(cdir, name, "0", 1, 0644, how, "cursor") == -1 && errno != EEXIST) {
            int e = errno;
            close(cdir);
            return ac_err_sys(err, e, NULL, "could not lock cursor %s/%s", AC_CURSOR_DIR, name);
        }
    }
    rc = ac_mutex_acquire(cdir, name, m);
    if (rc == -1) {
        int e = errno;
        close(cdir);
        if (e == EINTR)
            return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
        return ac_err_sys(err, e, NULL, "could not lock cursor %s/%s", AC_CURSOR_DIR, name);
    }
    close(cdir);
    if (rc == AC_MUTEX_TIMEOUT)
        return ac_err_set(err, AC_EXIT_GENERAL, "CURSOR_BUSY",
                          "another process reading as this agent has held cursor %s/%s for 10 s",
                          AC_CURSOR_DIR, name);
    return 0;
}
