/*
 * test_etcd_auth.c - etcd's own user/password authentication through the
 * client, against a live cluster with auth enabled (users and roles made
 * with etcdctl): the token is fetched and sent, renewed when the server
 * no longer accepts it, a missing or wrong login and a key outside the
 * user's permission give stable codes, and no error message and nothing
 * the process writes ever contains the password, the user name or the
 * token.
 */
#include <inttypes.h>

#include "etcd/internal.h"
#include "etcdutil.h"
#include "tap.h"

#define ROOT_PW "R00t-pw-9c41e7"
#define USER "alice-7d3f"
#define USER_PW "S3cr3t-pw-7f2a"
#define WRONG_PW "Wr0ng-pw-52bd"

static const char *eps;
static char seen[65536];   /* every error message, for the leak check */

static void note(const struct ac_err *err)
{
    size_t n = strlen(seen);
    snprintf(seen + n, sizeof seen - n, "%s: %s\n", err->code ? err->code : "-", err->msg);
}

static struct ac_etcd *login(const char *user, const char *pw)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    cfg.username = user;
    cfg.password = pw;
    cfg.op_timeout_ms = 5000;
    return t_etcd_open(eps, &cfg);
}

static int setup(void)
{
    char out[256];
    static const char *const steps[] = {
        "etcdctl user add root:" ROOT_PW,
        "etcdctl role add allowed-rw",
        "etcdctl role grant-permission allowed-rw --prefix=true readwrite /allowed/",
        "etcdctl user add " USER ":" USER_PW,
        "etcdctl user grant-role " USER " allowed-rw",
        "etcdctl auth enable",
    };
    size_t i;
    for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (t_etcd_ctl(out, sizeof out, "%s", steps[i]) != 0) {
            printf("# %s: %s\n", steps[i], out);
            return -1;
        }
    }
    return 0;
}

static void test_auth(void)
{
    struct ac_etcd *anon = t_etcd_open(eps, NULL), *bad = login(USER, WRONG_PW),
                   *ok = login(USER, USER_PW);
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_PREFIX("/allowed/") };
    struct ac_etcd_range_res rs;
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_PREFIX("/allowed/") };
    struct ac_etcd_watch *w = NULL;
    struct ac_etcd_events ev;
    char *old_token;
    int rc;

    rc = ac_etcd_put(anon, "/allowed/a", 0, "x", 1, 0, NULL, 0, &err);
    note(&err);
    TAP_OK(rc == -1 && strcmp(err.code, "ETCD_AUTH_REQUIRED") == 0,
           "no user on a cluster with auth: ETCD_AUTH_REQUIRED (%s)", err.msg);
    rc = ac_etcd_put(bad, "/allowed/a", 0, "x", 1, 0, NULL, 0, &err);
    note(&err);
    TAP_OK(rc == -1 && strcmp(err.code, "ETCD_AUTH_FAILED") == 0,
           "a wrong password: ETCD_AUTH_FAILED (%s)", err.msg);

    rc = ac_etcd_put(ok, "/allowed/a", 0, "x", 1, 0, NULL, 0, &err);
    if (rc)
        note(&err);
    TAP_OK(rc == 0, "the right password: the put goes through");
    TAP_OK(((struct ac_etcd *)ok)->token != NULL, "the client holds a token");
    rc = ac_etcd_range(ok, &rq, &rs, 0, &err);
    TAP_OK(rc == 0 && rs.nkvs == 1, "and reads under its permission");
    if (rc == 0)
        ac_etcd_range_res_free(&rs);
    rc = ac_etcd_put(ok, "/elsewhere/a", 0, "x", 1, 0, NULL, 0, &err);
    note(&err);
    TAP_OK(rc == -1 && strcmp(err.code, "ETCD_PERMISSION_DENIED") == 0,
           "a key outside its permission: ETCD_PERMISSION_DENIED");

    rc = ac_etcd_watch_open(ok, &wr, &w, 0, &err);
    if (rc == 0) {
        ac_etcd_put(ok, "/allowed/b", 0, "y", 1, 0, NULL, 0, &err);
        rc = ac_etcd_watch_next(w, ac_etcd_deadline_in(10000), &ev, &err) == 1 ? 0 : -1;
        if (rc == 0)
            ac_etcd_events_free(&ev);
    }
    if (rc)
        note(&err);
    TAP_OK(rc == 0, "a watch with the token sees the write");
    ac_etcd_watch_close(w);

    /* The token expires on the server (--auth-token-ttl): replace it with
     * one the server does not know; the client must log in again. */
    old_token = ok->token;
    ok->token = strdup("bogus.token.4711");
    ac_curl.slist_free_all(ok->headers);
    ok->headers = ac_etcd_header_list(ok);
    rc = ac_etcd_put(ok, "/allowed/c", 0, "z", 1, 0, NULL, 0, &err);
    if (rc)
        note(&err);
    TAP_OK(rc == 0, "a refused token: the client authenticates again and the put goes through");
    TAP_OK(ok->token && strcmp(ok->token, "bogus.token.4711") != 0, "... with a new token");
    free(old_token);

    /* the token the client holds must not be in any message either */
    TAP_OK(strstr(seen, USER_PW) == NULL && strstr(seen, WRONG_PW) == NULL &&
               strstr(seen, ROOT_PW) == NULL,
           "no error message holds a password");
    TAP_OK(strstr(seen, USER) == NULL, "no error message holds the user name");
    TAP_OK(ok->token && strstr(seen, ok->token) == NULL, "no error message holds the token");
    ac_etcd_close(anon);
    ac_etcd_close(bad);
    ac_etcd_close(ok);
}

/* Everything a process using the client writes (stdout, stderr), across
 * failures of each kind, is free of the secrets. The child prints its
 * errors the way the CLI does. */
static void test_output(void)
{
    int fds[2], tok[2], status;
    pid_t pid;
    char out[65536];
    size_t have = 0;
    ssize_t n;
    char token[512] = "";

    if (pipe(fds) == -1 || pipe(tok) == -1)
        t_bail("pipe");
    pid = t_fork();
    if (pid == 0) {
        struct ac_etcd *c;
        struct ac_err err = AC_ERR_INIT;
        struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
        char eps_bad[512];
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(tok[0]);
        c = login(USER, USER_PW);
        ac_etcd_put(c, "/allowed/t", 0, "x", 1, 0, NULL, 0, &err);
        /* the token to look for goes to the parent on a pipe of its own */
        if (c->token && write(tok[1], c->token, strlen(c->token)) < 0)
            _exit(3);
        close(tok[1]);
        if (ac_etcd_put(c, "/denied", 0, "x", 1, 0, NULL, 0, &err) == -1)
            fprintf(stderr, "agent-chat: %s: %s\n", err.code, err.msg);
        if (ac_etcd_lease_revoke(c, 42, 0, &err) == -1)
            fprintf(stderr, "agent-chat: %s: %s\n", err.code, err.msg);
        ac_etcd_close(c);
        c = login(USER, WRONG_PW);
        if (ac_etcd_put(c, "/allowed/t", 0, "x", 1, 0, NULL, 0, &err) == -1)
            fprintf(stderr, "agent-chat: %s: %s\n", err.code, err.msg);
        ac_etcd_close(c);
        /* a dead endpoint first, then a bad one in the list */
        cfg.username = USER;
        cfg.password = USER_PW;
        cfg.op_timeout_ms = 1000;
        snprintf(eps_bad, sizeof eps_bad, "127.0.0.1:1,%s", eps);
        c = t_etcd_open(eps_bad, &cfg);
        if (ac_etcd_put(c, "/denied", 0, "x", 1, 0, NULL, 0, &err) == -1)
            fprintf(stderr, "agent-chat: %s: %s\n", err.code, err.msg);
        ac_etcd_close(c);
        cfg.endpoints = "http://" USER ":" USER_PW "@127.0.0.1:1";
        if (!ac_etcd_open(&cfg, &err))
            fprintf(stderr, "agent-chat: %s: %s\n", err.code, err.msg);
        fflush(stderr);
        _exit(0);
    }
    close(fds[1]);
    close(tok[1]);
    while (have < sizeof out - 1 && (n = read(fds[0], out + have, sizeof out - 1 - have)) > 0)
        have += (size_t)n;
    out[have] = '\0';
    close(fds[0]);
    n = read(tok[0], token, sizeof token - 1);
    token[n > 0 ? n : 0] = '\0';
    close(tok[0]);
    waitpid(pid, &status, 0);
    printf("# the child wrote:\n");
    {
        char *line = out, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = '\0';
            printf("#   %s\n", line);
            line = nl + 1;
        }
        /* restore the newlines for the searches below */
        for (nl = out; nl < out + have; nl++)
            if (!*nl)
                *nl = '\n';
    }
    TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ran");
    TAP_OK(strstr(out, "agent-chat: ETCD_PERMISSION_DENIED") != NULL &&
               strstr(out, "agent-chat: ETCD_AUTH_FAILED") != NULL &&
               strstr(out, "agent-chat: ETCD_CONFIG") != NULL,
           "it printed its errors");
    TAP_OK(strstr(out, USER_PW) == NULL && strstr(out, WRONG_PW) == NULL,
           "no password in its output");
    TAP_OK(strstr(out, USER) == NULL, "no user name in its output");
    TAP_OK(token[0] && strstr(out, token) == NULL, "no token in its output (the child's token "
           "came on a pipe of its own)");
}

int main(int argc, char **argv)
{
    eps = t_etcd_cluster(argc, argv, 0);
    if (setup() == -1) {
        printf("Bail out! could not enable auth with etcdctl\n");
        return 99;
    }
    test_auth();
    test_output();
    return tap_done();
}
