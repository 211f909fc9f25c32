/* pathnorm.c - workspace-relative paths; see include/agentchat/pathnorm.h. */
#include "agentchat/pathnorm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/utf8.h"

#define MAX_LINKS 40

static const char *OUTSIDE = "path resolves outside the channel workspace";

/* Unicode category Cc: C0, DEL and C1. */
static int has_control(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s), i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n;
        if (p[i] < 0x80) {
            if (p[i] < 0x20 || p[i] == 0x7f)
                return 1;
            i++;
            continue;
        }
        n = ac_utf8_decode(p + i, len - i, &cp);
        if (n == 0)
            return 1;       /* not text at all: refuse like a control */
        if (cp >= 0x80 && cp <= 0x9f)
            return 1;
        i += n;
    }
    return 0;
}

const char *ac_relpath_problem(const char *path)
{
    const char *slash, *p;
    if (!path[0])
        return "path must be a non-empty string";
    if (has_control(path))
        return "path contains a forbidden control character";
    if (strchr(path, '\\'))
        return "backslashes are not valid portable separators";
    slash = strchr(path, '/');
    if (path[0] == '/' || memchr(path, ':', slash ? (size_t)(slash - path) : strlen(path)))
        return "absolute paths are not allowed";
    if (strchr(path, ':'))
        return "path names may not contain ':'";
    for (p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return "parent traversal is not allowed";
        p += n;
        while (*p == '/')
            p++;
    }
    return NULL;
}

/* Append component `c` to the resolved path `res` (length *rlen). */
static int push(char *res, size_t *rlen, size_t cap, const char *c)
{
    size_t n = strlen(c);
    if (*rlen + n + 2 > cap)
        return -1;
    if (*rlen)
        res[(*rlen)++] = '/';
    memcpy(res + *rlen, c, n + 1);
    *rlen += n;
    return 0;
}

static int pop(char *res, size_t *rlen)
{
    char *s;
    if (*rlen == 0)
        return -1;              /* above the channel */
    s = strrchr(res, '/');
    *rlen = s ? (size_t)(s - res) : 0;
    res[*rlen] = '\0';
    return 0;
}

/* Resolve a symlink target found while walking: splice it in front of the
 * components still to do. `todo` is a malloc'ed string of the remaining
 * path; returns the new remaining string or NULL. */
static char *splice(const char *target, const char *rest)
{
    size_t a = strlen(target), b = rest ? strlen(rest) : 0;
    char *s = malloc(a + b + 2);
    if (!s)
        return NULL;
    memcpy(s, target, a);
    s[a] = '\0';
    if (b) {
        s[a] = '/';
        memcpy(s + a + 1, rest, b + 1);
    }
    return s;
}

int ac_relpath_resolve(int chfd, const char *path, char *out, size_t outsz,
                       int *is_dir, const char **why)
{
    char res[AC_RELPATH_MAX], chroot_path[PATH_MAX], proc[64];
    size_t rlen = 0, links = 0, chlen;
    char *todo = NULL;
    ssize_t cl;
    struct stat st;

    *why = ac_relpath_problem(path);
    if (*why)
        return -1;
    if (strlen(path) >= AC_RELPATH_MAX) {
        *why = OUTSIDE;
        return -1;
    }
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", chfd);
    cl = readlink(proc, chroot_path, sizeof chroot_path - 1);
    chlen = cl > 0 ? (size_t)cl : 0;
    chroot_path[chlen] = '\0';

    res[0] = '\0';
    todo = strdup(path);
    if (!todo) {
        *why = OUTSIDE;
        return -1;
    }
    while (todo && *todo) {
        char *comp = todo, *next;
        while (*comp == '/')
            comp++;
        next = strchr(comp, '/');
        if (next)
            *next++ = '\0';
        if (*comp == '\0' || strcmp(comp, ".") == 0) {
            memmove(todo, next ? next : "", strlen(next ? next : "") + 1);
            continue;
        }
        if (strcmp(comp, "..") == 0) {
            if (pop(res, &rlen) == -1)
                goto outside;
            memmove(todo, next ? next : "", strlen(next ? next : "") + 1);
            continue;
        }
        if (push(res, &rlen, sizeof res, comp) == -1)
            goto outside;
        if (fstatat(chfd, res, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
            char target[PATH_MAX], *n2;
            ssize_t tl = readlinkat(chfd, res, target, sizeof target - 1);
            if (tl <= 0 || ++links > MAX_LINKS)
                goto outside;
            target[tl] = '\0';
            pop(res, &rlen);
            if (target[0] == '/') {
                /* Absolute: acceptable only when it points into the channel. */
                if (!chlen || strncmp(target, chroot_path, chlen) != 0 ||
                    (target[chlen] != '/' && target[chlen] != '\0'))
                    goto outside;
                rlen = 0;
                res[0] = '\0';
                memmove(target, target + chlen, strlen(target + chlen) + 1);
            }
            n2 = splice(target[0] == '/' ? target + 1 : target, next);
            free(todo);
            todo = n2;
            if (!todo)
                goto outside;
            continue;
        }
        memmove(todo, next ? next : "", strlen(next ? next : "") + 1);
    }
    free(todo);
    if (rlen + 2 > outsz)
        goto outside_nofree;
    if (rlen == 0)
        strcpy(out, ".");
    else
        memcpy(out, res, rlen + 1);
    *is_dir = fstatat(chfd, rlen ? res : ".", &st, 0) == 0 && S_ISDIR(st.st_mode);
    return 0;

outside:
    free(todo);
outside_nofree:
    *why = OUTSIDE;
    return -1;
}
