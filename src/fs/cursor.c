/* cursor.c - read cursors; see cursor.h. */
#include "cursor.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "agentchat/pystr.h"
#include "agentchat/slug.h"

#define CURSOR_CAP 4096

static void cursor_name(const char *agent, char out[AC_SLUG_MAX + 8])
{
    char slug[AC_SLUG_MAX + 1];
    ac_slugify(agent, strlen(agent), slug);
    snprintf(out, AC_SLUG_MAX + 8, "%s.txt", slug);
}

static int read_cursor(int dirfd, const char *name, char **buf, size_t *len)
{
    int cdir = ac_open_dir_at(dirfd, AC_CURSOR_DIR), rc;
    if (cdir == -1)
        return -1;
    rc = ac_read_file_at(cdir, name, CURSOR_CAP, buf, len);
    close(cdir);
    return rc;
}

int64_t ac_cursor_get(int dirfd, const char *agent)
{
    char name[AC_SLUG_MAX + 8], *buf;
    size_t len;
    int64_t v = 0;

    cursor_name(agent, name);
    if (read_cursor(dirfd, name, &buf, &len) == -1)
        return 0;
    /* Python: int(text.strip()); strip() also removes U+001C..U+001F. */
    {
        size_t a, b;
        ac_py_strip(buf, len, &a, &b);
        if (ac_py_int_parse(buf + a, b - a, &v) == -1)
            v = 0;
    }
    free(buf);
    return v;
}

int ac_cursor_set(int dirfd, const char *agent, int64_t value, struct ac_err *err)
{
    char name[AC_SLUG_MAX + 8], text[32], *old;
    size_t len, n;
    int cdir;

    cursor_name(agent, name);
    n = (size_t)snprintf(text, sizeof text, "%" PRId64, value);
    if (read_cursor(dirfd, name, &old, &len) == 0) {
        int same = len == n && memcmp(old, text, n) == 0;
        free(old);
        if (same)
            return 0;
    }
    if (ac_sys_mkdirat(dirfd, AC_CURSOR_DIR, 0755) == -1 && errno != EEXIST)
        return ac_err_sys(err, errno, NULL, "could not write cursor %s/%s", AC_CURSOR_DIR, name);
    cdir = ac_open_dir_at(dirfd, AC_CURSOR_DIR);
    if (cdir == -1)
        return ac_err_sys(err, errno, NULL, "could not write cursor %s/%s", AC_CURSOR_DIR, name);
    if (ac_write_atomic(cdir, name, text, n, 0644, AC_ATOMIC_REPLACE, "cursor") == -1) {
        int e = errno;
        close(cdir);
        return ac_err_sys(err, e, NULL, "could not write cursor %s/%s", AC_CURSOR_DIR, name);
    }
    close(cdir);
    return 0;
}
