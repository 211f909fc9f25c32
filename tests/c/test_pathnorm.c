/*
 * test_pathnorm.c - workspace-relative paths (docs/format.md 3.7 "Path
 * normalization"): the lexical rules with the Python tool's messages, and
 * the symlink resolution, whose expected results were printed by python3
 * (3.11) as (channel / raw).resolve().relative_to(channel.resolve()) on
 * the same tree (RuntimeError "Symlink loop" shown as LOOP, ValueError of
 * relative_to as OUTSIDE).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/err.h"
#include "agentchat/pathnorm.h"
#include "tap.h"
#include "tutil.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char ABS[] = "absolute paths are not allowed";
static const char PARENT[] = "parent traversal is not allowed";
static const char CTRL[] = "path contains a forbidden control character";
static const char BACK[] = "backslashes are not valid portable separators";
static const char COLON[] = "path names may not contain ':'";
static const char EMPTY[] = "path must be a non-empty string";

/* ---- lexical rules, in the order the Python tool applies them ---- */

static const struct { const char *path; const char *why; } lexical[] = {
    { "src/main.c", NULL },
    { "a", NULL },
    { ".", NULL },
    { "./.", NULL },
    { "./a//b/", NULL },
    { "~/x", NULL },                        /* ~ has no meaning */
    { "with space/f.txt", NULL },
    { "\303\274n\303\257code/\321\204.txt", NULL },
    { "...", NULL },                        /* not "..": a plain name */
    { "..a/b", NULL },
    { "a/..b", NULL },
    { ".hidden", NULL },
    { "", EMPTY },
    { "/etc/passwd", ABS },
    { "//server/share", ABS },
    { "/", ABS },
    { "C:/x", ABS },
    { "C:", ABS },
    { "a:b", ABS },
    { "a:b/c", ABS },
    { "src/a:b", COLON },
    { "src/x/y:", COLON },
    { "..", PARENT },
    { "../outside", PARENT },
    { "src/..", PARENT },
    { "src/../x", PARENT },
    { "src/../../x", PARENT },
    { "a/b/../c", PARENT },
    { "a//..//b", PARENT },
    { "a/../", PARENT },
    { "a\001b", CTRL },
    { "tab\there", CTRL },
    { "del\177", CTRL },
    { "nl\nx", CTRL },
    { "esc\033[0m", CTRL },
    { "c1\302\205x", CTRL },                /* U+0085 NEL (Cc) */
    { "bad\377utf8", CTRL },                /* a surrogate escape in Python */
    { "back\\slash", BACK },
    { "C:\\x", BACK },                      /* backslash is checked first */
    { "\\\\server\\share", BACK },
    { "/a\tb", CTRL },                      /* control before absolute */
    { "/a\\b", BACK },                      /* backslash before absolute */
    { "/../x", ABS },                       /* absolute before parent */
    { "a:b/../c", ABS },
    { "src/a:b/..", COLON },                /* colon before parent */
};

static void test_lexical(void)
{
    size_t i;
    for (i = 0; i < COUNT(lexical); i++) {
        const char *got = ac_relpath_problem(lexical[i].path);
        char shown[200];
        ac_err_quote(shown, sizeof shown, lexical[i].path, 60);
        if (lexical[i].why)
            TAP_STR_EQ(got, lexical[i].why, "lexical: '%s' refused", shown);
        else
            TAP_OK(got == NULL, "lexical: '%s' accepted (%s)", shown, got ? got : "ok");
    }
}

/* ---- resolution ---- */

static char *tmp, *chan;
static int chfd = -1;

static void link_at(const char *target, const char *name)
{
    if (symlink(target, t_path("%s/%s", chan, name)) == -1)
        t_bail("symlink %s", name);
}

static void build_tree(void)
{
    tmp = t_mkdtemp("pathnorm");
    t_mkdir(t_path("%s/outside", tmp));
    t_mkdir(t_path("%s/outside/od", tmp));
    t_mkdir(t_path("%s/rt", tmp));
    chan = strdup(t_path("%s/rt/ch", tmp));
    t_mkdir(chan);
    t_mkdir(t_path("%s/src", chan));
    t_mkdir(t_path("%s/src/lib", chan));
    t_mkdir(t_path("%s/docs", chan));
    t_mkdir(t_path("%s/deep", chan));
    t_mkdir(t_path("%s/deep/x", chan));
    t_write(t_path("%s/src/a.c", chan), "");
    t_write(t_path("%s/file.txt", chan), "");
    link_at("src", "lsrc");
    link_at(t_path("%s/docs", chan), "labs_in");
    link_at("../../outside", "lout");
    link_at(t_path("%s/outside", tmp), "labs_out");
    link_at("../ch/src/lib", "lback");
    link_at("loop2", "loop1");
    link_at("loop1", "loop2");
    link_at("self", "self");
    link_at("missing/../src", "ldang");
    link_at("nowhere", "ldead");
    link_at(".", "ldot");
    link_at("..", "lup");
    link_at("../ch", "lchan");
    link_at("src/a.c", "lfile");
    link_at("lsrc/lib", "lchain");
    link_at("../../src", "deep/x/up2");
    link_at("/", "lroot");
    chfd = open(chan, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (chfd == -1)
        t_bail("open %s", chan);
}

#define OUT "OUTSIDE"
#define LOOP "LOOP"

/* raw, normalized (or OUTSIDE / LOOP), is_dir: python3's answers. */
static const struct { const char *raw; const char *norm; int is_dir; } resolved[] = {
    { "src", "src", 1 },
    { "src/a.c", "src/a.c", 0 },
    { "lsrc", "src", 1 },
    { "lsrc/a.c", "src/a.c", 0 },
    { "lsrc/lib/new.c", "src/lib/new.c", 0 },
    { "labs_in", "docs", 1 },
    { "labs_in/x.md", "docs/x.md", 0 },
    { "lout", OUT, 0 },
    { "lout/od", OUT, 0 },
    { "labs_out/x", OUT, 0 },
    { "lback", "src/lib", 1 },              /* leaves the channel and comes back */
    { "lback/z.c", "src/lib/z.c", 0 },
    { "loop1", LOOP, 0 },
    { "loop1/x", LOOP, 0 },
    { "self", LOOP, 0 },
    { "ldang", "src", 1 },                  /* "missing/.." is lexical */
    { "ldang/a.c", "src/a.c", 0 },
    { "ldead", "nowhere", 0 },
    { "ldead/x", "nowhere/x", 0 },
    { "ldot", ".", 1 },
    { "ldot/src", "src", 1 },
    { "lup", OUT, 0 },
    { "lup/ch/src", "src", 1 },
    { "lchan/src/a.c", "src/a.c", 0 },
    { "lfile", "src/a.c", 0 },
    { "lfile/x", "src/a.c/x", 0 },
    { "lchain/y", "src/lib/y", 0 },
    { "deep/x/up2/a.c", "src/a.c", 0 },
    { "lroot", OUT, 0 },
    { "lroot/tmp", OUT, 0 },
    { "file.txt/child", "file.txt/child", 0 },
    { ".", ".", 1 },
    { "./.", ".", 1 },
    { "./a//b/", "a/b", 0 },
    { "nonexist/deeper/x", "nonexist/deeper/x", 0 },
    { "src//lib/./", "src/lib", 1 },
};

static void test_resolve(void)
{
    size_t i;
    for (i = 0; i < COUNT(resolved); i++) {
        char out[AC_RELPATH_MAX];
        const char *why = NULL;
        int is_dir = -1;
        int rc = ac_relpath_resolve(chfd, resolved[i].raw, out, sizeof out, &is_dir, &why);
        if (strcmp(resolved[i].norm, OUT) == 0) {
            TAP_OK(rc == -1 && why && strcmp(why, "path resolves outside the channel workspace") == 0,
                   "resolve %s: outside (%s)", resolved[i].raw, rc == 0 ? out : why);
        } else if (strcmp(resolved[i].norm, LOOP) == 0) {
            TAP_OK(rc == -1 && why && strcmp(why, "path contains a symlink loop") == 0,
                   "resolve %s: loop (%s)", resolved[i].raw, rc == 0 ? out : why);
        } else {
            TAP_OK(rc == 0 && strcmp(out, resolved[i].norm) == 0 && is_dir == resolved[i].is_dir,
                   "resolve %s = %s (%s)", resolved[i].raw, resolved[i].norm,
                   resolved[i].is_dir ? "directory" : "file");
            if (rc != 0)
                printf("#   failed: %s\n", why);
            else if (strcmp(out, resolved[i].norm) != 0 || is_dir != resolved[i].is_dir)
                printf("#   got %s (%d)\n", out, is_dir);
        }
    }
}

/* A file later replaced by a directory: the kind follows the disk. */
static void test_kind_changes(void)
{
    char out[AC_RELPATH_MAX];
    const char *why;
    int is_dir = -1;
    t_write(t_path("%s/morph", chan), "x");
    TAP_OK(ac_relpath_resolve(chfd, "morph", out, sizeof out, &is_dir, &why) == 0 && !is_dir,
           "kind: a regular file is a file");
    unlink(t_path("%s/morph", chan));
    t_mkdir(t_path("%s/morph", chan));
    TAP_OK(ac_relpath_resolve(chfd, "morph", out, sizeof out, &is_dir, &why) == 0 && is_dir,
           "kind: the same name replaced by a directory is a directory");
    TAP_OK(ac_relpath_resolve(chfd, "morph/", out, sizeof out, &is_dir, &why) == 0 && is_dir &&
           strcmp(out, "morph") == 0, "kind: a trailing slash is dropped");
}

/* Lexical errors win over resolution; long paths; a small buffer. */
static void test_limits(void)
{
    char out[AC_RELPATH_MAX], small[8], *big, *got;
    const char *why = NULL;
    int is_dir;
    size_t n = 4096, i;

    TAP_OK(ac_relpath_resolve(chfd, "lout/../x", out, sizeof out, &is_dir, &why) == -1 &&
           strcmp(why, PARENT) == 0, "resolve: lexical rules come first");

    /* 4 KB and 20 KB paths of short components: accepted lexically (the
     * Python tool accepts them; lstat's ENAMETOOLONG means "not a link"). */
    big = malloc(5 * n + 1);
    got = malloc(5 * n + 64);
    if (!big || !got)
        t_bail("malloc");
    for (i = 0; i < n; i += 2)
        memcpy(big + i, "d/", 2);
    big[n - 1] = 'f';
    big[n] = '\0';
    TAP_OK(ac_relpath_resolve(chfd, big, got, 5 * n + 64, &is_dir, &why) == 0 &&
           strcmp(got, big) == 0 && !is_dir, "resolve: a 4096-byte path is kept as is");
    TAP_OK(ac_relpath_resolve(chfd, big, out, sizeof out, &is_dir, &why) == -1 &&
           strcmp(why, "path is too long") == 0, "resolve: a result longer than the buffer fails");
    for (i = 0; i < 5 * n; i += 2)
        memcpy(big + i, "e/", 2);
    big[5 * n - 1] = 'g';
    big[5 * n] = '\0';
    TAP_OK(ac_relpath_resolve(chfd, big, got, 5 * n + 64, &is_dir, &why) == 0 &&
           strcmp(got, big) == 0, "resolve: a 20 KB path is kept as is");
    /* A 300-byte component (over NAME_MAX): lstat fails, still a name. */
    memset(big, 'n', 300);
    big[300] = '\0';
    TAP_OK(ac_relpath_resolve(chfd, big, got, 5 * n + 64, &is_dir, &why) == 0 &&
           strcmp(got, big) == 0, "resolve: a component over NAME_MAX is a plain name");
    free(big);
    free(got);

    TAP_OK(ac_relpath_resolve(chfd, "src/lib", small, sizeof small, &is_dir, &why) == 0 &&
           strcmp(small, "src/lib") == 0, "resolve: a buffer of exactly the size fits");
    TAP_OK(ac_relpath_resolve(chfd, "src/lib/x", small, sizeof small, &is_dir, &why) == -1 &&
           strcmp(why, "path is too long") == 0, "resolve: one byte more does not");
}

/* The channel reached through a symlinked root resolves the same. */
static void test_symlinked_channel(void)
{
    char out[AC_RELPATH_MAX];
    const char *why;
    int is_dir, fd;
    if (symlink(t_path("%s/rt", tmp), t_path("%s/rtlink", tmp)) == -1)
        t_bail("symlink rtlink");
    fd = open(t_path("%s/rtlink/ch", tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd == -1)
        t_bail("open rtlink/ch");
    TAP_OK(ac_relpath_resolve(fd, "labs_in/x", out, sizeof out, &is_dir, &why) == 0 &&
           strcmp(out, "docs/x") == 0, "symlinked root: an absolute link into the channel");
    TAP_OK(ac_relpath_resolve(fd, "lback", out, sizeof out, &is_dir, &why) == 0 &&
           strcmp(out, "src/lib") == 0, "symlinked root: a link out and back in");
    TAP_OK(ac_relpath_resolve(fd, "lout", out, sizeof out, &is_dir, &why) == -1,
           "symlinked root: a link outside");
    close(fd);
}

int main(void)
{
    test_lexical();
    build_tree();
    test_resolve();
    test_kind_changes();
    test_limits();
    test_symlinked_channel();
    close(chfd);
    t_rm_rf(tmp);
    free(tmp);
    free(chan);
    return tap_done();
}
