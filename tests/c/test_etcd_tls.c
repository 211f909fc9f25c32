/*
 * test_etcd_tls.c - the etcd client's TLS options against a live cluster
 * that serves https and requires client certificates (tests/etcd/
 * with-cluster --tls: a throw-away CA): with the CA and a client
 * certificate every kind of request works over kept-alive connections;
 * a server the CA does not vouch for, or a missing client certificate,
 * is a clear ETCD_TLS error (never a hang, never a retry loop that hides
 * it); half a certificate configuration is ETCD_CONFIG.
 */
#include "etcdutil.h"
#include "tap.h"

static const char *eps;

static struct ac_etcd *client(const char *ca, const char *cert, const char *key)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    cfg.ca_file = ca;
    cfg.cert_file = cert;
    cfg.key_file = key;
    cfg.op_timeout_ms = 3000;
    return t_etcd_open(eps, &cfg);
}

int main(int argc, char **argv)
{
    const char *dir;
    char ca[4200], cert[4200], key[4200];
    struct ac_etcd *e;
    struct ac_err err = AC_ERR_INIT;
    struct ac_etcd_range_req rq = { .keys = AC_ETCD_KEY("tls-key") };
    struct ac_etcd_range_res rs;
    struct ac_etcd_watch_req wr = { .keys = AC_ETCD_KEY("tls-key") };
    struct ac_etcd_watch *w = NULL;
    struct ac_etcd_events ev;
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    int64_t t0;
    int rc, i, ok = 1;
    unsigned long before;

    eps = t_etcd_cluster(argc, argv, T_ETCD_TLS);
    dir = getenv("AGENT_CHAT_TEST_ETCD_TLS_DIR");
    if (!dir || !*dir) {
        printf("Bail out! no TLS directory from with-cluster --tls\n");
        return 99;
    }
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    snprintf(cert, sizeof cert, "%s/client.crt", dir);
    snprintf(key, sizeof key, "%s/client.key", dir);
    TAP_OK(strncmp(eps, "https://", 8) == 0, "the cluster serves https");

    e = client(ca, cert, key);
    rc = ac_etcd_put(e, "tls-key", 0, "v", 1, 0, NULL, 0, &err);
    TAP_OK(rc == 0, "CA + client certificate: put%s%s", rc ? ": " : "", rc ? err.msg : "");
    rc = ac_etcd_range(e, &rq, &rs, 0, &err);
    TAP_OK(rc == 0 && rs.nkvs == 1 && strcmp(rs.kvs[0].value, "v") == 0, "... range");
    if (rc == 0)
        ac_etcd_range_res_free(&rs);
    rc = ac_etcd_watch_open(e, &wr, &w, 0, &err);
    if (rc == 0) {
        ac_etcd_put(e, "tls-key", 0, "w", 1, 0, NULL, 0, &err);
        rc = ac_etcd_watch_next(w, ac_etcd_deadline_in(10000), &ev, &err) == 1 ? 0 : -1;
        if (rc == 0) {
            rc = strcmp(ev.events[0].kv.value, "w") == 0 ? 0 : -1;
            ac_etcd_events_free(&ev);
        }
    }
    TAP_OK(rc == 0, "... and a watch%s%s", rc ? ": " : "", rc ? err.msg : "");
    ac_etcd_watch_close(w);
    before = ac_etcd_connections(e);
    for (i = 0; i < 50; i++)
        if (ac_etcd_put(e, "tls-key", 0, "x", 1, 0, NULL, 0, &err) == -1)
            ok = 0;
    TAP_OK(ok && ac_etcd_connections(e) == before,
           "50 more puts reuse the TLS connection (%lu new)", ac_etcd_connections(e) - before);
    ac_etcd_close(e);

    /* the system CA store does not know the test CA */
    e = client(NULL, cert, key);
    t0 = ac_clock_mono_ns();
    rc = ac_etcd_put(e, "tls-key", 0, "v", 1, 0, NULL, 0, &err);
    printf("# no CA: %ld ms: %s: %s\n", t_ms_since(t0), err.code, err.msg);
    TAP_OK(rc == -1 && strcmp(err.code, "ETCD_TLS") == 0 && !strchr(err.msg, '\n'),
           "a server the CA store does not vouch for: ETCD_TLS on one line");
    ac_etcd_close(e);

    /* the members require a client certificate */
    e = client(ca, NULL, NULL);
    t0 = ac_clock_mono_ns();
    rc = ac_etcd_range(e, &rq, &rs, 0, &err);
    printf("# no client certificate: %ld ms: %s: %s\n", t_ms_since(t0), err.code, err.msg);
    TAP_OK(rc == -1 && strcmp(err.code, "ETCD_TLS") == 0 && !strchr(err.msg, '\n'),
           "no client certificate: ETCD_TLS on one line");
    ac_etcd_close(e);

    cfg.endpoints = eps;
    cfg.cert_file = cert;
    TAP_OK(ac_etcd_open(&cfg, &err) == NULL && strcmp(err.code, "ETCD_CONFIG") == 0,
           "a certificate without its key: ETCD_CONFIG");
    return tap_done();
}
