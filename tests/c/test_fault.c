/*
 * test_fault.c - the fault injection mechanism of fault.h: the rule
 * grammar of AGENT_CHAT_FAULT (point[#N[+]][:action[:ERRNO]]), which hit
 * fires, the errno a fail gives, the crash and stop actions, invalid rules (exit
 * 125), AGENT_CHAT_FAULT_LOG / AGENT_CHAT_FAULT_LOG_SYS, and the sys.*
 * points of the system call wrappers of fsutil.h (each fails before doing
 * anything, except a write, which lands half its buffer first).
 *
 * The rules are read once per process; ac_fault_reset() makes the next
 * point read the environment again, so most cases run in process. The
 * ones that end the process (crash, an invalid rule) run in a fork.
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
#include <unistd.h>

#include "agentchat/fault.h"
#include "fs/fsutil.h"
#include "tap.h"
#include "tutil.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *dir;

/* Set the rules (NULL: none) and forget the previous ones. */
static void rules(const char *fault)
{
    if (fault)
        setenv("AGENT_CHAT_FAULT", fault, 1);
    else
        unsetenv("AGENT_CHAT_FAULT");
    ac_fault_reset();
}

/* One point: 0 when it did not fire, else the errno it gave. */
static int hit(const char *point)
{
    errno = 0;
    if (ac_fault(point) == 0)
        return 0;
    return errno ? errno : -1;
}

static int hit_sys(const char *call)
{
    errno = 0;
    if (ac_fault_sys(call) == 0)
        return 0;
    return errno ? errno : -1;
}

/* ---- which hit fires, and with which errno ---- */

struct seq_case {
    const char *fault;
    const char *points[8];   /* "sys.x" goes through ac_fault_sys("x") */
    int want[8];             /* errno of each hit, 0: does not fire */
};

static const struct seq_case seq_cases[] = {
    /* no rule: nothing ever fires */
    { NULL, { "a.b", "sys.write", "a.b" }, { 0, 0, 0 } },
    { "", { "a.b", "sys.write" }, { 0, 0 } },
    /* a bare point fails its first hit with EIO, and only that one */
    { "a.b", { "a.b", "a.b", "a.b" }, { EIO, 0, 0 } },
    { "a.b:fail", { "a.b", "a.b" }, { EIO, 0 } },
    /* the name must match exactly: no prefix, no suffix */
    { "a.b", { "a.bc", "a", "x.a.b", "a.b" }, { 0, 0, 0, EIO } },
    /* #N: the Nth hit only */
    { "a.b#3", { "a.b", "a.b", "a.b", "a.b" }, { 0, 0, EIO, 0 } },
    { "a.b#1", { "a.b", "a.b" }, { EIO, 0 } },
    /* #N+: the Nth and every later one (a disk that stays full) */
    { "a.b#2+:fail:ENOSPC", { "a.b", "a.b", "a.b", "a.b" }, { 0, ENOSPC, ENOSPC, ENOSPC } },
    { "a.b#1+", { "a.b", "a.b" }, { EIO, EIO } },
    /* other points do not count */
    { "a.b#2", { "a.b", "x", "x", "a.b", "a.b" }, { 0, 0, 0, EIO, 0 } },
    /* a prefix counts its points together */
    { "a.*#2", { "a.x", "b.x", "a.y", "a.x" }, { 0, 0, EIO, 0 } },
    { "lease.journal.*", { "lease.task.write", "lease.journal.prepared.write" }, { 0, EIO } },
    /* errno by name, by number, and the legacy "enospc" action */
    { "a:fail:ENOSPC", { "a" }, { ENOSPC } },
    { "a:fail:EROFS", { "a" }, { EROFS } },
    { "a:fail:EACCES", { "a" }, { EACCES } },
    { "a:fail:EDQUOT", { "a" }, { EDQUOT } },
    { "a:fail:28", { "a" }, { 28 } },
    { "a:enospc", { "a" }, { ENOSPC } },
    { "a#2:enospc", { "a", "a" }, { 0, ENOSPC } },
    /* several rules, each with its own count and errno */
    { "a:fail:EACCES,b#2:fail:EPERM", { "b", "a", "b", "a" }, { 0, EACCES, EPERM, 0 } },
    /* empty items (a trailing comma, ",,") are ignored */
    { "a,", { "a" }, { EIO } },
    { ",,a#2,", { "a", "a" }, { 0, EIO } },
    /* sys.<call>: the points of the wrappers */
    { "sys.write", { "sys.fsync", "sys.write", "sys.write" }, { 0, EIO, 0 } },
    { "sys.fsync#2:fail:ENOSPC", { "sys.fsync", "sys.write", "sys.fsync" }, { 0, 0, ENOSPC } },
    /* sys.* is the Nth mutating call of any kind */
    { "sys.*#4:fail:ENOSPC",
      { "sys.mkdir", "sys.create", "sys.write", "sys.fsync", "sys.rename" }, { 0, 0, 0, ENOSPC, 0 } },
    { "sys.*#3+:fail:EIO",
      { "sys.create", "sys.write", "sys.fsync", "sys.link", "sys.unlink" }, { 0, 0, EIO, EIO, EIO } },
    /* named points are not sys points, whatever "sys.*" says */
    { "sys.*#2", { "post.message.write", "sys.write", "post.message.fsync", "sys.fsync" },
      { 0, 0, 0, EIO } },
    /* a lone * is every point of both kinds, counted together */
    { "*#3", { "a", "sys.write", "b", "sys.fsync" }, { 0, 0, EIO, 0 } },
    /* Every matching rule counts the hit even when an earlier rule fires
     * there: the first write below is also the first call of sys.*. */
    { "sys.write#1:fail:EACCES,sys.*#2:fail:ENOSPC", { "sys.write", "sys.fsync", "sys.write" },
      { EACCES, ENOSPC, 0 } },
    /* when two rules are due at one hit, the first in order fires */
    { "sys.*#1:fail:EPERM,sys.write:fail:EACCES", { "sys.write", "sys.write" }, { EPERM, 0 } },
};

static void test_sequences(void)
{
    size_t i, k;
    for (i = 0; i < COUNT(seq_cases); i++) {
        const struct seq_case *c = &seq_cases[i];
        char got[256] = "", want[256] = "";
        rules(c->fault);
        for (k = 0; k < COUNT(c->points) && c->points[k]; k++) {
            const char *p = c->points[k];
            int e = strncmp(p, "sys.", 4) == 0 ? hit_sys(p + 4) : hit(p);
            size_t gl = strlen(got), wl = strlen(want);
            snprintf(got + gl, sizeof got - gl, "%s%s=%d", k ? " " : "", p, e);
            snprintf(want + wl, sizeof want - wl, "%s%s=%d", k ? " " : "", p, c->want[k]);
        }
        TAP_STR_EQ(got, want, "AGENT_CHAT_FAULT=%s: which hits fire, with which errno",
                   c->fault ? c->fault : "(unset)");
    }
    rules(NULL);
}

/* ac_fault_reset: the counts start again, and a changed variable is read. */
static void test_reset(void)
{
    rules("a#2");
    TAP_INT_EQ(hit("a"), 0, "reset: first hit of a#2 does not fire");
    ac_fault_reset();
    TAP_INT_EQ(hit("a"), 0, "reset: the count starts again after ac_fault_reset");
    TAP_INT_EQ(hit("a"), EIO, "reset: ... and the second hit fires");
    setenv("AGENT_CHAT_FAULT", "b:fail:ENOSPC", 1);
    TAP_INT_EQ(hit("b"), 0, "reset: the variable is read once, a change needs a reset");
    ac_fault_reset();
    TAP_INT_EQ(hit("b"), ENOSPC, "reset: after a reset the new rules apply");
    rules(NULL);
}

/* ---- actions that end the process ---- */

/* Fork, set the rules, reach `point` `times` times, and return the wait
 * status (exit 0: nothing fired, 3: a fail fired). The child's stderr goes
 * to `errpath` (may be NULL). */
static int in_child(const char *fault, const char *point, int times, const char *errpath)
{
    int status = -1;
    pid_t pid;
    pid = t_fork();
    if (pid == 0) {
        if (errpath) {
            int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd != -1)
                dup2(fd, 2);
        }
        rules(fault);
        while (times-- > 0)
            if ((strncmp(point, "sys.", 4) == 0 ? ac_fault_sys(point + 4) : ac_fault(point)) == -1)
                _exit(3);
        _exit(0);
    }
    if (waitpid(pid, &status, 0) == -1)
        t_bail("waitpid");
    return status;
}

static void test_crash(void)
{
    int st = in_child("a#2:crash", "a", 2, NULL);
    TAP_OK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "crash: the 2nd hit of a#2:crash SIGKILLs (0x%x)",
           (unsigned)st);
    st = in_child("a#3:crash", "a", 2, NULL);
    TAP_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "crash: a#3:crash does not fire on 2 hits (0x%x)",
           (unsigned)st);
    st = in_child("sys.*#1:crash", "sys.unlink", 1, NULL);
    TAP_OK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "crash: sys.*#1:crash kills at a sys point");
    st = in_child("b:crash", "a", 3, NULL);
    TAP_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "crash: another point does not fire");
}

/* stop: the 2nd hit stops the process (SIGSTOP); after SIGCONT the point
 * returns 0, so the step carries on (exit 0 after both hits). */
static void test_stop(void)
{
    int status;
    pid_t pid = t_fork();
    if (pid == 0) {
        rules("a#2:stop");
        if (ac_fault("a") != 0 || ac_fault("a") != 0)
            _exit(3);
        _exit(0);
    }
    if (waitpid(pid, &status, WUNTRACED) == -1)
        t_bail("waitpid");
    TAP_OK(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP, "stop: a#2:stop stops the process (0x%x)",
           (unsigned)status);
    kill(pid, SIGCONT);
    if (waitpid(pid, &status, 0) == -1)
        t_bail("waitpid");
    TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "stop: after SIGCONT the point does not fail and the process goes on (0x%x)", (unsigned)status);
}

/* A rule that cannot be parsed stops the process with 125 and says why,
 * so a typo never makes a test pass vacuously. */
static void test_invalid(void)
{
    static const char *const bad[] = {
        "a:explode",           /* unknown action */
        "a:fail:ENOPE",        /* unknown errno name */
        "a:fail:",             /* empty errno */
        "a:fail:-5",           /* negative errno */
        "a:fail:0",
        "a:fail:99999",
        "a:crash:EIO",         /* crash takes no errno */
        "a:stop:EIO",          /* nor does stop */
        "a:enospc:EIO",
        "a:",                  /* empty action */
        "a#0",                 /* N counts from 1 */
        "a#",
        "a#x",
        "a#3x",
        "a#-1",
        "a# 3",
        "a#+",
        "a#99999999999999999999",
        "#3:crash",            /* no point name */
        ":crash",
        "a,#2",                /* a bad item after a good one */
        /* more than 16 rules */
        "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q",
    };
    char errpath[4096], longrule[400];
    size_t i;
    snprintf(errpath, sizeof errpath, "%s/stderr", dir);
    for (i = 0; i < COUNT(bad); i++) {
        int st = in_child(bad[i], "zzz", 1, errpath);
        char *msg = t_read(errpath, NULL);
        TAP_OK(WIFEXITED(st) && WEXITSTATUS(st) == 125, "invalid rule '%s': exit 125 (0x%x)", bad[i],
               (unsigned)st);
        TAP_OK(msg && strncmp(msg, "agent-chat: invalid AGENT_CHAT_FAULT rule '", 43) == 0 &&
                   strchr(msg, '\n') == msg + strlen(msg) - 1,
               "invalid rule '%s': one line on stderr: %.*s", bad[i],
               msg ? (int)strcspn(msg, "\n") : 6, msg ? msg : "(none)");
        free(msg);
    }
    memset(longrule, 'x', sizeof longrule - 1);
    longrule[sizeof longrule - 1] = '\0';
    {
        int st = in_child(longrule, "zzz", 1, errpath);
        TAP_OK(WIFEXITED(st) && WEXITSTATUS(st) == 125, "invalid rule: a rule over 159 bytes, exit 125");
    }
    /* 16 rules are fine */
    {
        int st = in_child("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", "zzz", 1, errpath);
        TAP_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "16 rules are accepted (0x%x)", (unsigned)st);
    }
}

/* ---- the log ---- */

static void test_log(void)
{
    char log[4096];
    char *text;
    snprintf(log, sizeof log, "%s/faults.log", dir);

    setenv("AGENT_CHAT_FAULT_LOG", log, 1);
    unsetenv("AGENT_CHAT_FAULT_LOG_SYS");
    rules(NULL);
    hit("a.one");
    hit_sys("write");
    hit("b.two");
    ac_fault_reset();   /* closes the log */
    text = t_read(log, NULL);
    TAP_STR_EQ(text, "a.one\nb.two\n", "log: named points only without AGENT_CHAT_FAULT_LOG_SYS");
    free(text);

    unlink(log);
    setenv("AGENT_CHAT_FAULT_LOG_SYS", "1", 1);
    rules("sys.fsync:fail:ENOSPC");
    hit("a.one");
    hit_sys("write");
    TAP_INT_EQ(hit_sys("fsync"), ENOSPC, "log: a logged point still fires");
    hit_sys("fsync");
    ac_fault_reset();
    text = t_read(log, NULL);
    TAP_STR_EQ(text, "a.one\nsys.write\nsys.fsync\nsys.fsync\n",
               "log: AGENT_CHAT_FAULT_LOG_SYS=1 adds the sys points, in order");
    free(text);

    unlink(log);
    setenv("AGENT_CHAT_FAULT_LOG_SYS", "0", 1);
    rules(NULL);
    hit_sys("write");
    hit("c");
    ac_fault_reset();
    text = t_read(log, NULL);
    TAP_STR_EQ(text, "c\n", "log: AGENT_CHAT_FAULT_LOG_SYS=0 is off");
    free(text);

    unsetenv("AGENT_CHAT_FAULT_LOG");
    unsetenv("AGENT_CHAT_FAULT_LOG_SYS");
    rules(NULL);
}

/* ---- the wrappers ---- */

static int dfd;

static void test_wrappers(void)
{
    char *text;
    int fd;
    struct stat st;

    /* sys.create: fails before creating anything */
    rules("sys.create:fail:EACCES");
    errno = 0;
    fd = ac_sys_create(dfd, "new", O_WRONLY | O_EXCL, 0644);
    TAP_OK(fd == -1 && errno == EACCES, "ac_sys_create: the injected EACCES");
    TAP_OK(!t_exists(t_path("%s/new", dir)), "ac_sys_create: no file created");
    fd = ac_sys_create(dfd, "new", O_WRONLY | O_EXCL, 0644);
    TAP_OK(fd >= 0, "ac_sys_create: the next call creates the file");

    /* sys.write: the first half lands, then the error */
    rules("sys.write:fail:ENOSPC");
    errno = 0;
    TAP_OK(ac_write_all(fd, "0123456789", 10) == -1 && errno == ENOSPC, "ac_write_all: the injected ENOSPC");
    close(fd);
    text = t_read(t_path("%s/new", dir), NULL);
    TAP_STR_EQ(text, "01234", "ac_write_all: half of the buffer was written, as a filling disk does");
    free(text);

    /* sys.fsync: reached with AGENT_CHAT_TEST_FSYNC=0 too (counts do not
     * depend on the switch) */
    setenv("AGENT_CHAT_TEST_FSYNC", "0", 1);
    rules("sys.fsync:fail:EIO");
    fd = openat(dfd, "new", O_RDONLY);
    errno = 0;
    TAP_OK(ac_fsync(fd) == -1 && errno == EIO, "ac_fsync: the point is reached with fsync off");
    TAP_OK(ac_fsync(fd) == 0, "ac_fsync: the next call succeeds");
    close(fd);
    /* ... and ac_fsync_dir counts as sys.fsync (EINVAL would be ignored) */
    rules("sys.fsync:fail:EROFS");
    errno = 0;
    TAP_OK(ac_fsync_dir(dfd) == -1 && errno == EROFS, "ac_fsync_dir: sys.fsync");

    /* sys.mkdir / sys.rmdir / sys.unlink / sys.rename / sys.link */
    rules("sys.mkdir:fail:ENOSPC");
    errno = 0;
    TAP_OK(ac_sys_mkdirat(dfd, "d", 0755) == -1 && errno == ENOSPC, "ac_sys_mkdirat: the injected errno");
    TAP_OK(!t_exists(t_path("%s/d", dir)), "ac_sys_mkdirat: no directory made");
    TAP_OK(ac_sys_mkdirat(dfd, "d", 0755) == 0, "ac_sys_mkdirat: the next call makes it");

    rules("sys.rmdir:fail:EBUSY");
    errno = 0;
    TAP_OK(ac_sys_unlinkat(dfd, "d", AT_REMOVEDIR) == -1 && errno == EBUSY,
           "ac_sys_unlinkat(AT_REMOVEDIR) is sys.rmdir");
    TAP_OK(t_exists(t_path("%s/d", dir)), "sys.rmdir: the directory stays");
    rules("sys.unlink");
    TAP_OK(ac_sys_unlinkat(dfd, "d", AT_REMOVEDIR) == 0, "sys.rmdir is not sys.unlink");

    rules("sys.link:fail:31");     /* EMLINK has no name in the table; its number works */
    errno = 0;
    TAP_OK(ac_sys_linkat(dfd, "new", dfd, "new2") == -1 && errno == 31, "sys.link: an errno by number");
    TAP_OK(!t_exists(t_path("%s/new2", dir)), "sys.link: no link made");

    rules("sys.rename:fail:EXDEV");
    errno = 0;
    TAP_OK(ac_sys_renameat(dfd, "new", dfd, "moved") == -1 && errno == EXDEV, "sys.rename: the injected errno");
    TAP_OK(t_exists(t_path("%s/new", dir)) && !t_exists(t_path("%s/moved", dir)),
           "sys.rename: nothing moved");
    errno = 0;
    rules("sys.rename:fail:EIO");
    TAP_OK(ac_rename_noreplace(dfd, "new", "moved") == -1 && errno == EIO,
           "ac_rename_noreplace is sys.rename");
    TAP_OK(t_exists(t_path("%s/new", dir)) && !t_exists(t_path("%s/moved", dir)),
           "ac_rename_noreplace: nothing moved");

    rules("sys.unlink:fail:EPERM");
    errno = 0;
    TAP_OK(ac_sys_unlinkat(dfd, "new", 0) == -1 && errno == EPERM, "sys.unlink: the injected errno");
    TAP_OK(t_exists(t_path("%s/new", dir)), "sys.unlink: the file stays");
    TAP_OK(lstat(t_path("%s/new", dir), &st) == 0 && st.st_size == 5, "sys.unlink: untouched");
    rules(NULL);
    unsetenv("AGENT_CHAT_TEST_FSYNC");
}

/* ac_mkdirs makes (and reaches sys.mkdir for) only the missing components,
 * and syncs the parent of each (sys.fsync), so the points of `init` do not
 * depend on where the root is. */
static void test_mkdirs(void)
{
    char log[4096], *text;
    snprintf(log, sizeof log, "%s/mk.log", dir);
    setenv("AGENT_CHAT_FAULT_LOG", log, 1);
    setenv("AGENT_CHAT_FAULT_LOG_SYS", "1", 1);
    rules(NULL);
    TAP_OK(ac_mkdirs(t_path("%s/m1/m2", dir), 0755) == 0, "ac_mkdirs: two new levels");
    TAP_OK(ac_mkdirs(t_path("%s/m1/m2", dir), 0755) == 0, "ac_mkdirs: again, nothing to make");
    ac_fault_reset();
    text = t_read(log, NULL);
    TAP_STR_EQ(text, "sys.mkdir\nsys.fsync\nsys.mkdir\nsys.fsync\n",
               "ac_mkdirs: one sys.mkdir and one sys.fsync of its parent per missing component only");
    free(text);
    unsetenv("AGENT_CHAT_FAULT_LOG");
    unsetenv("AGENT_CHAT_FAULT_LOG_SYS");
    rules("sys.mkdir#2:fail:ENOSPC");
    errno = 0;
    TAP_OK(ac_mkdirs(t_path("%s/n1/n2/n3", dir), 0755) == -1 && errno == ENOSPC,
           "ac_mkdirs: the 2nd mkdir fails");
    TAP_OK(t_exists(t_path("%s/n1", dir)) && !t_exists(t_path("%s/n1/n2", dir)),
           "ac_mkdirs: the first level was made, the second not");
    rules(NULL);
}

int main(void)
{
    unsetenv("AGENT_CHAT_FAULT_LOG");
    unsetenv("AGENT_CHAT_FAULT_LOG_SYS");
    dir = t_mkdtemp("fault");
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd == -1)
        t_bail("open %s", dir);
    test_sequences();
    test_reset();
    test_crash();
    test_stop();
    test_invalid();
    test_log();
    test_wrappers();
    test_mkdirs();
    close(dfd);
    return tap_done();
}
