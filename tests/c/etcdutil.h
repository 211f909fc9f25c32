/*
 * etcdutil.h - live etcd clusters for the C tests of the etcd client
 * (tests/c/test_etcd_*.c). Everything is static, like tutil.h.
 *
 *     int main(int argc, char **argv) {
 *         const char *eps = t_etcd_cluster(argc, argv, 0);   // may re-exec
 *         struct ac_etcd *e = t_etcd_open(eps, NULL);
 *         ...
 *         t_etcd_ctl(out, sizeof out, "kill-leader");       // cluster.sh
 *         return tap_done();
 *     }
 *
 * t_etcd_cluster returns the endpoints of the cluster the test runs
 * against. When the test was started without one, it runs itself again
 * under tests/etcd/with-cluster, which starts a cluster of its own,
 * prints a SKIP plan instead when etcd is not installed, and stops the
 * cluster when the test ends however it ends. So `build/tests/test_etcd_x`
 * works alone, and `make test` needs nothing more.
 */
#ifndef AGENTCHAT_ETCDUTIL_H
#define AGENTCHAT_ETCDUTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentchat/clock.h"
#include "etcd/client.h"
#include "tutil.h"

/* The flags of t_etcd_cluster. */
enum { T_ETCD_TLS = 1 };

static const char *t_etcd_cluster(int argc, char **argv, int flags) T_UNUSED;
static const char *t_etcd_cluster(int argc, char **argv, int flags)
{
    const char *eps = getenv("AGENT_CHAT_TEST_ETCD_ENDPOINTS");
    char exe[4096], wrapper[4200];
    char *args[64];
    ssize_t n;
    int i, k = 0;
    if (eps && *eps)
        return eps;
    if (getenv("AGENT_CHAT_TEST_ETCD_WRAPPED")) {
        printf("Bail out! with-cluster gave no endpoints\n");
        exit(99);
    }
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        t_bail("readlink /proc/self/exe");
    exe[n] = '\0';
    /* <repo>/build/tests/test_etcd_x -> <repo>/tests/etcd/with-cluster */
    snprintf(wrapper, sizeof wrapper, "%s", exe);
    for (i = 0; i < 3; i++) {
        char *slash = strrchr(wrapper, '/');
        if (!slash)
            t_bail("cannot find the repository from %s", exe);
        *slash = '\0';
    }
    strncat(wrapper, "/tests/etcd/with-cluster", sizeof wrapper - strlen(wrapper) - 1);
    setenv("AGENT_CHAT_TEST_ETCD_WRAPPED", "1", 1);
    args[k++] = wrapper;
    if (flags & T_ETCD_TLS)
        args[k++] = (char *)"--tls";
    args[k++] = (char *)"--";
    args[k++] = exe;
    for (i = 1; i < argc && k < 62; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    fflush(stdout);
    execv(wrapper, args);
    t_bail("exec %s", wrapper);
}

/* Run `cluster.sh ARGS` (printf syntax; words split by the shell) and put
 * its first output line in out. Returns its exit status. */
static int t_etcd_ctl(char *out, size_t outsz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), unused));
static int t_etcd_ctl(char *out, size_t outsz, const char *fmt, ...)
{
    const char *ctl = getenv("AGENT_CHAT_TEST_ETCD_CTL");
    char args[1024], cmd[2048], line[1024];
    FILE *p;
    va_list ap;
    int st;
    if (!ctl)
        t_bail("no AGENT_CHAT_TEST_ETCD_CTL");
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", ctl, args);
    fflush(stdout);
    p = popen(cmd, "r");
    if (!p)
        t_bail("popen %s", cmd);
    if (out && outsz)
        out[0] = '\0';
    while (fgets(line, sizeof line, p)) {
        if (out && outsz && !out[0]) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, outsz, "%.*s", (int)(outsz - 1), line);
        }
    }
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A client of the test cluster with test timeouts (connect 500 ms,
 * request 1000 ms, op 15 s: a leader election on a loaded machine fits in
 * it), tweaked by cfg fields that are set. Bails out on failure. */
static struct ac_etcd *t_etcd_open(const char *eps, const struct ac_etcd_config *tweak) T_UNUSED;
static struct ac_etcd *t_etcd_open(const char *eps, const struct ac_etcd_config *tweak)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd *e;
    const char *tls = getenv("AGENT_CHAT_TEST_ETCD_TLS_DIR");
    static char ca[4200], cert[4200], key[4200];
    if (tweak)
        cfg = *tweak;
    cfg.endpoints = eps;
    if (!cfg.connect_timeout_ms)
        cfg.connect_timeout_ms = 500;
    if (!cfg.request_timeout_ms)
        cfg.request_timeout_ms = 1000;
    if (!cfg.op_timeout_ms)
        cfg.op_timeout_ms = 15000;
    if (tls && *tls && !tweak) {
        snprintf(ca, sizeof ca, "%s/ca.crt", tls);
        snprintf(cert, sizeof cert, "%s/client.crt", tls);
        snprintf(key, sizeof key, "%s/client.key", tls);
        cfg.ca_file = ca;
        cfg.cert_file = cert;
        cfg.key_file = key;
    }
    e = ac_etcd_open(&cfg, &err);
    if (!e) {
        printf("Bail out! ac_etcd_open: %s: %s\n", err.code, err.msg);
        exit(99);
    }
    return e;
}

/* The member name ("m2") of endpoint i (with-cluster lists them in order). */
static const char *t_etcd_member(size_t i) T_UNUSED;
static const char *t_etcd_member(size_t i)
{
    static char name[8][8];
    static int next;
    char *b = name[next++ & 7];
    snprintf(b, sizeof name[0], "m%zu", i + 1);
    return b;
}

/* The index of member "mN" among the endpoints. */
static size_t t_etcd_index(const char *member) T_UNUSED;
static size_t t_etcd_index(const char *member)
{
    return (size_t)strtoul(member + 1, NULL, 10) - 1;
}

/* Milliseconds since `start` (a CLOCK_MONOTONIC ns), for diagnostics. */
static long t_ms_since(int64_t start) T_UNUSED;
static long t_ms_since(int64_t start)
{
    return (long)((ac_clock_mono_ns() - start) / 1000000);
}

/* A key unique to this run ("t/<pid>/<name>"), in a rotating buffer. */
static const char *t_key(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static const char *t_key(const char *fmt, ...)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ & 7];
    va_list ap;
    int n = snprintf(b, sizeof bufs[0], "t/%ld/", (long)getpid());
    va_start(ap, fmt);
    vsnprintf(b + n, sizeof bufs[0] - (size_t)n, fmt, ap);
    va_end(ap);
    return b;
}

#endif
