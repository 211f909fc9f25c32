/* fault.c - named fault points; see include/agentchat/fault.h. */
#include "agentchat/fault.h"

#ifndef AC_NO_FAULTS
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RULES 16

struct rule {
    char point[96];
    int prefix;         /* point ended in '*' */
    long nth;           /* fire on this hit */
    long hits;
    int action;         /* 0 fail, 1 enospc, 2 crash */
};

static struct rule rules[MAX_RULES];
static int nrules = -1;   /* -1: environment not parsed yet */
static int log_fd = -2;   /* -2: not opened yet, -1: no log */

static void parse_rules(void)
{
    const char *env = getenv("AGENT_CHAT_FAULT");
    nrules = 0;
    while (env && *env && nrules < MAX_RULES) {
        const char *end = strchr(env, ',');
        size_t len = end ? (size_t)(end - env) : strlen(env);
        struct rule *r = &rules[nrules];
        char item[160], *colon, *hash;

        if (len >= sizeof item)
            len = sizeof item - 1;
        memcpy(item, env, len);
        item[len] = '\0';
        env = end ? end + 1 : env + len;

        memset(r, 0, sizeof *r);
        r->nth = 1;
        colon = strchr(item, ':');
        if (colon) {
            *colon++ = '\0';
            if (strcmp(colon, "enospc") == 0)
                r->action = 1;
            else if (strcmp(colon, "crash") == 0)
                r->action = 2;
        }
        hash = strchr(item, '#');
        if (hash) {
            *hash++ = '\0';
            r->nth = strtol(hash, NULL, 10);
            if (r->nth < 1)
                r->nth = 1;
        }
        len = strlen(item);
        if (len && item[len - 1] == '*') {
            r->prefix = 1;
            item[--len] = '\0';
        }
        if (len == 0 || len >= sizeof r->point)
            continue;
        memcpy(r->point, item, len + 1);
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

int ac_fault(const char *point)
{
    int i;
    if (nrules == -1)
        parse_rules();
    log_point(point);
    for (i = 0; i < nrules; i++) {
        struct rule *r = &rules[i];
        int match = r->prefix ? strncmp(point, r->point, strlen(r->point)) == 0
                              : strcmp(point, r->point) == 0;
        if (!match || ++r->hits != r->nth)
            continue;
        if (r->action == 2) {
            kill(getpid(), SIGKILL);
            _exit(137);   /* not reached */
        }
        errno = r->action == 1 ? ENOSPC : EIO;
        return -1;
    }
    return 0;
}
#endif
