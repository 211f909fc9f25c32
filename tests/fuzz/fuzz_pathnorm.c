/*
 * fuzz_pathnorm.c - workspace-relative paths (docs/format.md 3.7 "Path
 * normalization"): ac_relpath_problem (the lexical checks),
 * ac_relpath_resolve (symlinks resolved like Python's realpath) inside a
 * scratch channel directory that holds files, directories and symlinks of
 * every kind (into the channel, out of it and back, absolute, dangling,
 * loops), and the overlap test of path locks.
 *
 * Nothing is created or changed while fuzzing: resolution only lstat()s and
 * readlink()s. The input is one path, or two separated by a NUL byte (the
 * second is used for the overlap properties).
 *
 * Properties:
 *   - a lexical problem makes resolution fail with that same message;
 *   - a resolved path is canonical, has no lexical problem, and resolves to
 *     itself (it holds no symlinks any more), with the same kind;
 *   - it never escapes: no "..", "." or empty segment, and no existing
 *     prefix is a symlink (lstat'ed here, not trusted from the resolver),
 *     and is_dir matches what is on disk;
 *   - ac_pathlock_normalize agrees with ac_relpath_resolve;
 *   - overlap is symmetric, reflexive on canonical paths, and "." overlaps
 *     everything.
 */
#include "fuzz.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/pathlock.h"
#include "agentchat/pathnorm.h"

static int chfd = -1;

static void mk(const char *base, const char *rel, int dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    if (dir) {
        FUZZ_CHECK(mkdir(p, 0700) == 0, "mkdir %s", p);
    } else {
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        FUZZ_CHECK(fd >= 0, "create %s", p);
        close(fd);
    }
}

static void ln(const char *base, const char *rel, const char *target)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    FUZZ_CHECK(symlink(target, p) == 0, "symlink %s", p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *base = fuzz_tmpdir();
    char ch[512], abs[1024];
    (void)argc;
    (void)argv;
    snprintf(ch, sizeof ch, "%s/root/ch", base);
    mk(base, "root", 1);
    mk(base, "root/ch", 1);
    mk(base, "root/outside", 1);
    mk(base, "root/outside/x", 0);
    mk(ch, "src", 1);
    mk(ch, "src/sub", 1);
    mk(ch, "src/a.c", 0);
    mk(ch, "docs", 1);
    mk(ch, "f", 0);
    ln(ch, "in", "src");                 /* into the channel */
    ln(ch, "deep", "in/sub");            /* a link through a link */
    ln(ch, "out", "../outside");         /* out of it */
    ln(ch, "back", "../ch/src");         /* out and back in */
    ln(ch, "up", "..");
    ln(ch, "dot", ".");
    ln(ch, "loop1", "loop2");            /* a loop */
    ln(ch, "loop2", "loop1");
    ln(ch, "self", "self");
    ln(ch, "dangling", "nothere/x");
    ln(ch, "src/sib", "../docs");
    ln(ch, "src/sub/top", "../../f");
    snprintf(abs, sizeof abs, "%s/docs", ch);
    ln(ch, "abs", abs);                  /* absolute, inside */
    ln(ch, "abs_out", "/");              /* absolute, outside */
    chfd = open(ch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FUZZ_CHECK(chfd >= 0, "open %s", ch);
    return 0;
}

static void check_overlap(const char *a, const char *b)
{
    int ab = ac_pathlock_overlaps(a, b);
    FUZZ_CHECK(ab == ac_pathlock_overlaps(b, a), "overlap not symmetric: '%s' '%s'", a, b);
    if (strcmp(a, ".") == 0 || strcmp(b, ".") == 0 || strcmp(a, b) == 0)
        FUZZ_CHECK(ab, "'%s' and '%s' must overlap", a, b);
}

/* A resolved path cannot leave the channel: no segment is "..", "." or
 * empty, and no existing prefix of it is a symlink (checked here with
 * lstat, independently of the resolver). *is_dir says what it is now. */
static void check_contained(const char *in, const char *out, int is_dir)
{
    char *p = fuzz_strndup((const uint8_t *)out, strlen(out)), *s = p;
    struct stat st;
    int exists = 1;

    if (strcmp(out, ".") == 0) {
        FUZZ_CHECK(is_dir == 1, "'.' is not a directory");
        free(p);
        return;
    }
    for (;;) {
        size_t n = strcspn(s, "/");
        char save = s[n];
        FUZZ_CHECK(n > 0 && !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.'),
                   "'%s' resolves to '%s', which has an empty, '.' or '..' segment", in, out);
        s[n] = '\0';
        if (exists) {
            if (fstatat(chfd, p, &st, AT_SYMLINK_NOFOLLOW) == -1) {
                exists = 0;
            } else {
                FUZZ_CHECK(!S_ISLNK(st.st_mode), "'%s' resolves to '%s', whose prefix '%s' is a "
                           "symlink (it may leave the channel)", in, out, p);
                if (save == '\0')
                    FUZZ_CHECK(is_dir == !!S_ISDIR(st.st_mode), "'%s' -> '%s': is_dir %d wrong",
                               in, out, is_dir);
            }
        }
        if (save == '\0')
            break;
        s[n] = save;
        s += n + 1;
    }
    if (!exists)
        FUZZ_CHECK(is_dir == 0, "'%s' -> '%s' does not exist but is a directory", in, out);
    free(p);
}

/* Check one path; returns its resolution (malloc'ed) or NULL. The buffers
 * are as large as ac_pathlock_normalize's, so both see the same limits. */
static char *check_path(const char *path)
{
    const char *problem = ac_relpath_problem(path), *why = NULL, *why2 = NULL;
    size_t outsz = strlen(path) + 4096;
    char *out = malloc(outsz), *again = malloc(outsz);
    int is_dir = -1, is_dir2 = -1, rc;
    struct ac_lockpath lp;
    struct ac_err err = AC_ERR_INIT;

    FUZZ_CHECK(out && again, "out of memory");
    out[0] = '\0';
    rc = ac_relpath_resolve(chfd, path, out, outsz, &is_dir, &why);
    if (problem)
        FUZZ_CHECK(rc == -1 && why == problem, "'%s': lexical problem '%s' but resolve says %s",
                   path, problem, rc == 0 ? "ok" : why);
    if (rc == -1) {
        FUZZ_CHECK(why && why[0], "failure without a message");
        out[0] = '\0';
    } else {
        FUZZ_CHECK(ac_pathlock_path_canonical(out), "'%s' resolves to non-canonical '%s'", path,
                   out);
        FUZZ_CHECK(ac_relpath_problem(out) == NULL, "'%s' resolves to '%s' with a problem", path,
                   out);
        check_contained(path, out, is_dir);
        FUZZ_CHECK(ac_relpath_resolve(chfd, out, again, outsz, &is_dir2, &why2) == 0 &&
                       strcmp(out, again) == 0 && is_dir == is_dir2,
                   "'%s' -> '%s' -> '%s' (%s)", path, out, why2 ? "(failed)" : again,
                   why2 ? why2 : "");
    }
    if (ac_pathlock_normalize(chfd, path, &lp, &err) == 0) {
        FUZZ_CHECK(rc == 0 && strcmp(lp.normalized, out) == 0 && lp.is_dir == is_dir,
                   "normalize and resolve disagree on '%s'", path);
        free(lp.display);
        free(lp.normalized);
    } else {
        FUZZ_CHECK(rc == -1 && err.code, "normalize fails where resolve succeeds on '%s'", path);
    }
    free(again);
    if (rc == -1) {
        free(out);
        return NULL;
    }
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *parts[2] = { 0 }, *a, *b = NULL;
    size_t n = fuzz_split(data, size, parts, 2);

    a = check_path(parts[0]);
    check_overlap(parts[0], n > 1 ? parts[1] : ".");
    if (n > 1) {
        b = check_path(parts[1]);
        if (a && b)
            check_overlap(a, b);
    }
    free(a);
    free(b);
    fuzz_free_parts(parts, n);
    return 0;
}
