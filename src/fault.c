/* fault.c - fault injection points; see include/agentchat/fault.h. */
#include "agentchat/fault.h"

#ifndef AC_NO_FAULTS
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RULES 16

enum { ACT_FAIL, ACT_CRASH };

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
static int nrules = -1;   /* -1: environment not parsed yet */
static int log_fd = -2;   /* -2: not opened yet, -1: no log */
static int log_sys = -1;  /* -1: not read yet */

/* errno names a rule may give after "fail:" (the ones a file system call
 * can plausibly return). */
static const struct {
    const char *name;
    int value;
} errnos[] = {
    { "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EDQUOT", EDQUOT }, { "EROFS", EROFS },
    { "EACCES", EACCES }, { "EPERM", EPERM }, { "ENOMEM", ENOMEM }, { "EEXIST", EEXIST },
    { "ENOENT", ENOENT }, { "ENOTDIR", ENOTDIR }, { "EISDIR", EISDIR }, { "ELOOP", ELOOP },
    { "EMFILE", EMFILE }, { "ENFILE", ENFILE }, { "EFBIG", EFBIG }, { "EBUSY", EBUSY },
    { "EXDEV", EXDEV }, { "EINVAL", EINVAL }, { "ENAMETOOLONG", ENAMETOOLONG },
    { "EAGAIN", EAGAIN }, { "EINTR", EINTR }, { "ESTALE", ESTALE },
};

/* A rule we cannot parse is a broken test: say so and stop. */
static void bad_rule(const char *item)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "agent-chat: invalid AGENT_CHAT_FAULT rule '%s'\n", item);
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
    if (*s && !*end && v > 0 && v < 4096)
        return (int)v;
    bad_rule(item);
    return EIO;
}

/* Parse one "point[#N[+]][:action[:ERRNO]]" into r; 0 ok, -1 skip. */
static int parse_rule(char *item, struct rule *r)
{
    char copy[160], *colon, *hash, *act = NULL, *eno = NULL;
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
        else if (strcmp(act, "enospc") == 0 && !eno)
            r->err = ENOSPC;
        else if (strcmp(act, "fail") == 0)
            r->err = eno ? parse_errno(eno, copy) : EIO;
        else
            bad_rule(copy);
    }
    hash = strchr(item, '#');
    if (hash) {
        char *end;
        *hash++ = '\0';
        r->nth = strtol(hash, &end, 10);
        if (*end == '+') {
            r->onward = 1;
            end++;
        }
        if (end == hash || *end || r->nth < 1)
            bad_rule(copy);
    }
    len = strlen(item);
    if (len && item[len - 1] == '*') {
        r->prefix = 1;
        item[--len] = '\0';
    }
    if (len >= sizeof r->point || (len == 0 && !r->prefix))
        return -1;
    memcpy(r->point, item, len + 1);
    return 0;
}

static void parse_rules(void)
{
    const char *env = getenv("AGENT_CHAT_FAULT");
    nrules = 0;
    while (env && *env && nrules < MAX_RULES) {
        const char *end = strchr(env, ',');
        size_t len = end ? (size_t)(end - env) : strlen(env);
        char item[160];

        if (len >= sizeof item)
            len = sizeof item - 1;
        memcpy(item, env, len);
        item[len] = '\0';
        env = end ? end + 1 : env + len;
        if (item[0] && parse_rule(item, &rules[nrules]) == 0)
            nrules++;
    }
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
    int i;
    if (nrules == -1)
        parse_rules();
    if (logged)
        log_point(point);
    for (i = 0; i < nrules; i++) {
        struct rule *r = &rules[i];
        int match = r->prefix ? strncmp(point, r->point, strlen(r->point)) == 0
                              : strcmp(point, r->point) == 0;
        if (!match)
            continue;
        r->hits++;
        if (r->hits != r->nth && !(r->onward && r->hits > r->nth))
            continue;
        if (r->action == ACT_CRASH) {
            kill(getpid(), SIGKILL);
            _exit(137);   /* not reached */
        }
        errno = r->err;
        return -1;
    }
    return 0;
}

int ac_fault(const char *point)
{
    return check(point, 1);
}

int ac_fault_sys(const char *call)
{
    char point[64];
    if (nrules == 0 && log_fd == -1)
        return 0;           /* the common case: nothing to do */
    if (log_sys == -1) {
        const char *v = getenv("AGENT_CHAT_FAULT_LOG_SYS");
        log_sys = v && *v && strcmp(v, "0") != 0;
    }
    snprintf(point, sizeof point, "sys.%s", call);
    return check(point, log_sys);
}

void ac_fault_reset(void)
{
    if (log_fd >= 0)
        close(log_fd);
    log_fd = -2;
    log_sys = -1;
    nrules = -1;
}
#endif
