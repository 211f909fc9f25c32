/* fault.c - fault injection points; see include/agentchat/fault.h. */
#include "agentchat/fault.h"

#ifndef AC_NO_FAULTS
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RULES 16
#define MAX_ITEM 160

enum { ACT_FAIL, ACT_CRASH, ACT_STOP };

struct rule {
    char point[96];
    int prefix;         /* point ended in '*' */
    long nth;           /* fire on this hit */
    int onward;         /* "#N+": and on every later hit */
    long hits;
    int action;
    int err;            /* errno of a fail */
};

static struct rule rules[MAX_RULES];
static int nrules = -1;   /* -1: environment not read yet */
static int log_fd = -2;   /* -2: not opened yet, -1: no log */
static int log_sys;       /* AGENT_CHAT_FAULT_LOG_SYS set (and a log) */

/* errno names a rule may give after "fail:" (the ones a file system call
 * can plausibly return). Spelled through the macro so that the name and
 * the value cannot disagree. */
#define ERRNO_NAME(e) { #e, e }
static const struct {
    const char *name;
    int value;
} errnos[] = {
    ERRNO_NAME(EIO), ERRNO_NAME(ENOSPC), ERRNO_NAME(EDQUOT), ERRNO_NAME(EROFS),
    ERRNO_NAME(EACCES), ERRNO_NAME(EPERM), ERRNO_NAME(ENOMEM), ERRNO_NAME(EEXIST),
    ERRNO_NAME(ENOENT), ERRNO_NAME(ENOTDIR), ERRNO_NAME(EISDIR), ERRNO_NAME(ELOOP),
    ERRNO_NAME(EMFILE), ERRNO_NAME(ENFILE), ERRNO_NAME(EFBIG), ERRNO_NAME(EBUSY),
    ERRNO_NAME(EXDEV), ERRNO_NAME(EINVAL), ERRNO_NAME(ENAMETOOLONG),
    ERRNO_NAME(EAGAIN), ERRNO_NAME(EINTR), ERRNO_NAME(ESTALE),
};

/* A rule we cannot parse is a broken test: say so and stop. */
static void bad_rule(const char *item, const char *why) __attribute__((noreturn));
static void bad_rule(const char *item, const char *why)
{
    char msg[320];
    int n = snprintf(msg, sizeof msg, "agent-chat: invalid AGENT_CHAT_FAULT rule '%s': %s\n", item, why);
    if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) == -1) {
        /* nothing more we can do */
    }
    _exit(125);
}

static int parse_errno(const char *s, const char *item)
{
    size_t i;
    char *end;
    long v;
    for (i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
        if (strcmp(s, errnos[i].name) == 0)
            return errnos[i].value;
    v = strtol(s, &end, 10);
    if (isdigit((unsigned char)*s) && !*end && v > 0 && v < 4096)
        return (int)v;
    bad_rule(item, "unknown errno");
}

/* Parse one "point[#N[+]][:action[:ERRNO]]" into r (stops the process on
 * an invalid rule). */
static void parse_rule(char *item, struct rule *r)
{
    char copy[MAX_ITEM], *colon, *hash, *act = NULL, *eno = NULL;
    size_t len;

    snprintf(copy, sizeof copy, "%s", item);
    memset(r, 0, sizeof *r);
    r->nth = 1;
    r->action = ACT_FAIL;
    r->err = EIO;
    colon = strchr(item, ':');
    if (colon) {
        *colon++ = '\0';
        act = colon;
        colon = strchr(act, ':');
        if (colon) {
            *colon++ = '\0';
            eno = colon;
        }
    }
    if (act) {
        if (strcmp(act, "crash") == 0 && !eno)
            r->action = ACT_CRASH;
        else if (strcmp(act, "stop") == 0 && !eno)
            r->action = ACT_STOP;
        else if (strcmp(act, "enospc") == 0 && !eno)
            r->err = ENOSPC;
        else if (strcmp(act, "fail") == 0)
            r->err = eno ? parse_errno(eno, copy) : EIO;
        else
            bad_rule(copy, "unknown action");
    }
    hash = strchr(item, '#');
    if (hash) {
        char *end;
        *hash++ = '\0';
        if (!isdigit((unsigned char)*hash))
            bad_rule(copy, "#N needs a number");
        errno = 0;
        r->nth = strtol(hash, &end, 10);
        if (*end == '+') {
            r->onward = 1;
            end++;
        }
        if (*end || r->nth < 1 || errno)
            bad_rule(copy, "#N needs a number from 1");
    }
    len = strlen(item);
    if (len && item[len - 1] == '*') {
        r->prefix = 1;
        item[--len] = '\0';
    }
    if (len == 0 && !r->prefix)
        bad_rule(copy, "no point name");
    if (len >= sizeof r->point)
        bad_rule(copy, "point name too long");
    memcpy(r->point, item, len + 1);
}

/* Read the environment once (again after ac_fault_reset). */
static void setup(void)
{
    const char *env = getenv("AGENT_CHAT_FAULT");
    const char *v = getenv("AGENT_CHAT_FAULT_LOG");
    const char *vs = getenv("AGENT_CHAT_FAULT_LOG_SYS");

    nrules = 0;
    while (env && *env) {
        const char *end = strchr(env, ',');
        size_t len = end ? (size_t)(end - env) : strlen(env);
        char item[MAX_ITEM];

        if (len >= sizeof item) {
            snprintf(item, sizeof item, "%.40s...", env);
            bad_rule(item, "rule too long");
        }
        memcpy(item, env, len);
        item[len] = '\0';
        env = end ? end + 1 : env + len;
        if (!item[0])
            continue;           /* "a,,b" or a trailing comma */
        if (nrules == MAX_RULES)
            bad_rule(item, "more than 16 rules");
        parse_rule(item, &rules[nrules++]);
    }
    log_sys = v && *v && vs && *vs && strcmp(vs, "0") != 0;
}

static void log_point(const char *point)
{
    if (log_fd == -2) {
        const char *path = getenv("AGENT_CHAT_FAULT_LOG");
        log_fd = path && *path
            ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
            : -1;
    }
    if (log_fd >= 0) {
        size_t n = strlen(point);
        char line[128];
        if (n > sizeof line - 2)
            n = sizeof line - 2;
        memcpy(line, point, n);
        line[n] = '\n';
        /* One write per line so concurrent processes do not interleave. */
        if (write(log_fd, line, n + 1) == -1) {
            /* best effort: the log is a test aid */
        }
    }
}

static int check(const char *point, int logged)
{
    int i, fire = -1;
    if (logged)
        log_point(point);
    /* Every matching rule counts the hit, whichever fires: "sys.write#1,
     * sys.*#5" counts the first write as the first call of sys.* too. */
    for (i = 0; i < nrules; i++) {
        struct rule *r = &rules[i];
        int match = r->prefix ? strncmp(point, r->point, strlen(r->point)) == 0
                              : strcmp(point, r->point) == 0;
        if (!match)
            continue;
        r->hits++;
        if (fire == -1 && (r->hits == r->nth || (r->onward && r->hits > r->nth)))
            fire = i;
    }
    if (fire == -1)
        return 0;
    if (rules[fire].action == ACT_CRASH) {
        kill(getpid(), SIGKILL);
        _exit(137);   /* not reached */
    }
    if (rules[fire].action == ACT_STOP) {
        kill(getpid(), SIGSTOP);    /* returns once someone sends SIGCONT */
        return 0;
    }
    errno = rules[fire].err;
    return -1;
}

int ac_fault(const char *point)
{
    if (nrules == -1)
        setup();
    return check(point, 1);
}

int ac_fault_sys(const char *call)
{
    char point[64];
    if (nrules == -1)
        setup();
    if (nrules == 0 && !log_sys)
        return 0;           /* the common case: nothing to do */
    snprintf(point, sizeof point, "sys.%s", call);
    return check(point, log_sys);
}

void ac_fault_reset(void)
{
    if (log_fd >= 0)
        close(log_fd);
    log_fd = -2;
    log_sys = 0;
    nrules = -1;
}
#endif
