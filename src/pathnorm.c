/* pathnorm.c - workspace-relative paths; see include/agentchat/pathnorm.h.
 *
 * The resolution is a transcription of what the Python tool computes,
 * (channel_dir / raw).resolve().relative_to(channel_dir.resolve()), that is
 * CPython 3.11's posixpath.realpath(strict=False) (_joinrealpath) followed
 * by Path.resolve()'s loop check and PurePath.relative_to():
 *
 *   - components are taken one by one; "" and "." are skipped; ".." drops
 *     the last component of the path resolved so far (lexically: the
 *     resolved path holds no symlinks, so that is its real parent);
 *   - each new prefix is lstat()ed; an error (ENOENT, ENOTDIR,
 *     ENAMETOOLONG, EACCES) means "not a symlink", so paths that do not
 *     exist yet, and paths longer than PATH_MAX, resolve lexically;
 *   - a symlink is replaced by its target (an absolute target restarts
 *     from "/"), resolved recursively with a cache of the links already
 *     resolved; meeting a link again while resolving it is a loop, which
 *     Path.resolve() reports (RuntimeError) and we refuse;
 *   - the result is inside the channel when the channel's real path is a
 *     prefix of it on a component boundary; a link may leave the channel
 *     and come back ("l -> ../ch/src" is "src").
 *
 * Why absolute paths and not openat() relative to the channel descriptor:
 * nothing is opened or written here, only lstat/readlink/stat, so following
 * a name outside the channel reveals nothing and changes nothing; and only
 * the textual algorithm gives the Python tool's answer in every case (a
 * link that climbs out and back in, a missing component followed by "..").
 * The channel's real path comes from the descriptor (/proc/self/fd, or
 * fchdir + getcwd where /proc is missing), so a root given through a
 * symlink or as a relative path resolves exactly like Path.resolve().
 */
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

/* Nested symlink resolutions before we call it a loop (Linux MAXSYMLINKS;
 * the kernel's stat() in Path.resolve() fails with ELOOP beyond it). */
#define MAX_DEPTH 40
/* Distinct links resolved in one path (the cache Python keeps in `seen`). */
#define MAX_SEEN 256

static const char OUTSIDE[] = "path resolves outside the channel workspace";
static const char LOOP[] = "path contains a symlink loop";
static const char TOO_LONG[] = "path is too long";
static const char UNRESOLVED[] = "could not resolve the channel directory";

/* Unicode category Cc: C0, DEL and C1. Bytes that are not UTF-8 count too:
 * Python sees them as lone surrogates (surrogateescape), which it refuses
 * with the same message. */
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
            return 1;
        if (cp >= 0x80 && cp <= 0x9f)
            return 1;
        i += n;
    }
    return 0;
}

const char *ac_relpath_problem(const char *path)
{
    const char *second, *p;
    uint32_t cp;
    if (!path[0])
        return "path must be a non-empty string";
    if (has_control(path))
        return "path contains a forbidden control character";
    if (strchr(path, '\\'))
        return "backslashes are not valid portable separators";
    /* posixpath.isabs, or a drive as ntpath.splitdrive() sees one: the
     * second character is ':' ("a:b", "é:x"; not "ab:c"). */
    second = path + 1;
    if ((unsigned char)path[0] >= 0x80)
        second = path + ac_utf8_decode((const unsigned char *)path, strlen(path), &cp);
    if (path[0] == '/' || *second == ':')
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

/* ---- a growable path string ---- */

struct pstr {
    char *s;
    size_t len, cap;
};

static int ps_reserve(struct pstr *p, size_t extra)
{
    size_t need = p->len + extra + 1;
    if (need > p->cap) {
        size_t ncap = p->cap ? p->cap : 256;
        char *ns;
        while (ncap < need)
            ncap *= 2;
        ns = realloc(p->s, ncap);
        if (!ns)
            return -1;
        p->s = ns;
        p->cap = ncap;
    }
    return 0;
}

static int ps_set(struct pstr *p, const char *s, size_t n)
{
    p->len = 0;
    if (ps_reserve(p, n) == -1)
        return -1;
    memcpy(p->s, s, n);
    p->len = n;
    p->s[n] = '\0';
    return 0;
}

/* posixpath.join(path, name) for a non-empty name. */
static int ps_join(struct pstr *p, const char *name, size_t n)
{
    if (ps_reserve(p, n + 1) == -1)
        return -1;
    if (p->len && p->s[p->len - 1] != '/')
        p->s[p->len++] = '/';
    memcpy(p->s + p->len, name, n);
    p->len += n;
    p->s[p->len] = '\0';
    return 0;
}

/* path = posixpath.split(path)[0]: drop the last component and the
 * slashes before it, but keep a root made only of slashes. */
static void ps_parent(struct pstr *p)
{
    size_t i = p->len, k;
    while (i > 0 && p->s[i - 1] != '/')
        i--;
    /* s[0..i) is the head, ending in '/' (or empty). */
    for (k = 0; k < i && p->s[k] == '/'; k++)
        ;
    if (k < i)
        while (i > 0 && p->s[i - 1] == '/')
            i--;
    p->len = i;
    if (p->s)
        p->s[i] = '\0';
}

/* ---- _joinrealpath ---- */

struct seen {
    char *link[MAX_SEEN];
    char *resolved[MAX_SEEN];   /* NULL while that link is being resolved */
    size_t n;
    /* Length of the shortest resolved prefix known not to exist (lstat
     * said ENOENT or ENOTDIR), 0 for none: nothing below it exists either,
     * so its descendants are not looked up (fewer system calls for the
     * usual files_hint and lock path that is not created yet). */
    size_t missing;
};

static void seen_free(struct seen *sn)
{
    size_t i;
    for (i = 0; i < sn->n; i++) {
        free(sn->link[i]);
        free(sn->resolved[i]);
    }
    sn->n = 0;
}

/* readlink of any length; malloc'ed, NUL-terminated, or NULL with errno. */
static char *read_link(const char *path)
{
    size_t cap = 256;
    for (;;) {
        char *buf = malloc(cap);
        ssize_t n;
        if (!buf)
            return NULL;
        n = readlink(path, buf, cap);
        if (n == -1) {
            free(buf);
            return NULL;
        }
        if ((size_t)n < cap) {
            buf[n] = '\0';
            return buf;
        }
        free(buf);
        if (cap > (size_t)1 << 20) {
            errno = ENAMETOOLONG;
            return NULL;
        }
        cap *= 2;
    }
}

enum { JR_OK = 0, JR_LOOP = 1, JR_ERR = -1 };

/* Resolve `rest` on top of the resolved path `p` (posixpath._joinrealpath,
 * strict=False). Returns JR_OK, JR_LOOP, or JR_ERR (out of memory, an
 * unreadable link: errno set). */
static int join_real(struct pstr *p, const char *rest, struct seen *sn, int depth)
{
    if (rest[0] == '/') {
        if (ps_set(p, "/", 1) == -1)
            return JR_ERR;
        while (*rest == '/')
            rest++;
    }
    while (*rest) {
        const char *name = rest;
        size_t n = strcspn(rest, "/"), oldlen = p->len, i;
        struct stat st;
        char *target;
        int rc;

        rest += n;
        if (*rest == '/')
            rest++;
        if (n == 0 || (n == 1 && name[0] == '.'))
            continue;
        if (n == 2 && name[0] == '.' && name[1] == '.') {
            /* Our paths are absolute, so the head never ends in "..". */
            if (p->len)
                ps_parent(p);
            if (p->len < sn->missing)
                sn->missing = 0;
            continue;
        }
        if (ps_join(p, name, n) == -1)
            return JR_ERR;
        if (sn->missing)
            continue;                       /* below a missing prefix */
        if (lstat(p->s, &st) == -1) {
            if (errno == ENOENT || errno == ENOTDIR)
                sn->missing = p->len;
            continue;                       /* not there: not a link */
        }
        if (!S_ISLNK(st.st_mode))
            continue;
        for (i = 0; i < sn->n; i++)
            if (strcmp(sn->link[i], p->s) == 0)
                break;
        if (i < sn->n) {
            if (!sn->resolved[i])
                return JR_LOOP;
            if (ps_set(p, sn->resolved[i], strlen(sn->resolved[i])) == -1)
                return JR_ERR;
            continue;
        }
        if (depth >= MAX_DEPTH || sn->n == MAX_SEEN)
            return JR_LOOP;
        target = read_link(p->s);
        if (!target)
            return JR_ERR;
        if (!(sn->link[sn->n] = strdup(p->s))) {
            free(target);
            return JR_ERR;
        }
        sn->resolved[sn->n] = NULL;
        i = sn->n++;
        p->len = oldlen;                    /* the link's directory */
        p->s[oldlen] = '\0';
        rc = join_real(p, target, sn, depth + 1);
        free(target);
        if (rc != JR_OK)
            return rc;
        if (!(sn->resolved[i] = strdup(p->s)))
            return JR_ERR;
    }
    return JR_OK;
}

/* The channel directory's real path (what Path.resolve() gives for it):
 * the kernel's name for the descriptor, or fchdir + getcwd. */
static int channel_real_path(int chfd, struct pstr *out)
{
    char proc[64], buf[PATH_MAX];
    ssize_t n;
    int here, ok = -1;

    snprintf(proc, sizeof proc, "/proc/self/fd/%d", chfd);
    n = readlink(proc, buf, sizeof buf - 1);
    if (n > 0 && buf[0] == '/') {
        buf[n] = '\0';
        return ps_set(out, buf, (size_t)n);
    }
    here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (here == -1)
        return -1;
    if (fchdir(chfd) == 0) {
        if (getcwd(buf, sizeof buf))
            ok = ps_set(out, buf, strlen(buf));
        if (fchdir(here) == -1)
            ok = -1;
    }
    close(here);
    return ok;
}

int ac_relpath_resolve(int chfd, const char *path, char *out, size_t outsz,
                       int *is_dir, const char **why)
{
    *why = ac_relpath_problem(path);
    if (*why)
        return -1;
    return ac_relpath_realize(chfd, path, out, outsz, is_dir, why);
}

int ac_relpath_realize(int chfd, const char *path, char *out, size_t outsz,
                       int *is_dir, const char **why)
{
    struct pstr base = { NULL, 0, 0 }, res = { NULL, 0, 0 };
    struct seen *sn = NULL;
    const char *rel;
    struct stat st;
    size_t rlen;
    int rc = -1, jr;

    *why = NULL;
    if (channel_real_path(chfd, &base) == -1) {
        *why = UNRESOLVED;
        goto done;
    }
    sn = calloc(1, sizeof *sn);
    if (!sn || ps_set(&res, base.s, base.len) == -1) {
        *why = UNRESOLVED;
        goto done;
    }
    jr = join_real(&res, path, sn, 0);
    if (jr != JR_OK) {
        *why = jr == JR_LOOP ? LOOP : OUTSIDE;
        goto done;
    }
    /* relative_to(): the channel's components must start the result. */
    if (base.len == 1) {                    /* the channel is "/" itself */
        rel = res.s + 1;
    } else if (strncmp(res.s, base.s, base.len) == 0 &&
               (res.s[base.len] == '\0' || res.s[base.len] == '/')) {
        rel = res.s + base.len + (res.s[base.len] == '/');
    } else {
        *why = OUTSIDE;
        goto done;
    }
    if (!*rel)
        rel = ".";
    rlen = strlen(rel);
    if (rlen + 1 > outsz) {
        *why = TOO_LONG;
        goto done;
    }
    memcpy(out, rel, rlen + 1);
    /* Path.is_dir(): stat() following links; any error means "no". */
    *is_dir = !sn->missing && stat(res.s, &st) == 0 && S_ISDIR(st.st_mode);
    rc = 0;
done:
    if (sn) {
        seen_free(sn);
        free(sn);
    }
    free(base.s);
    free(res.s);
    return rc;
}
