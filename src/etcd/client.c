/* client.c - the etcd client's transport: configuration, endpoints and
 * failover, libcurl, authentication, secrets; see src/etcd/client.h.
 *
 * One CURL easy handle serves every unary request of a client, so its
 * connection cache keeps one TCP connection per member alive between
 * requests (a cold request costs a handshake: ~1.3 ms on loopback, more
 * with TLS). Watches get handles of their own (watch.c), because a watch
 * holds its connection for as long as it runs. */
#include "etcd/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentchat/clock.h"
#include "etcd/wire.h"

#define DEFAULT_CONNECT_MS 1000
#define DEFAULT_REQUEST_MS 1000
#define DEFAULT_OP_MS 10000
#define DEFAULT_PROBE_MS 2000
#define DEFAULT_MAX_REPLY (32u << 20)
/* Pause after a whole round of endpoints refused (full jitter up to it). */
#define ROUND_BACKOFF_MS 100

static int nomem(struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NOMEM", "out of memory");
}

int ac_etcd_interrupted(struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_INTERRUPTED, "ETCD_INTERRUPTED",
                      "interrupted while talking to etcd");
}

int64_t ac_etcd_deadline_in(long ms)
{
    return ac_clock_mono_ns() + (int64_t)ms * 1000000;
}

int64_t ac_etcd_resolve_deadline(const struct ac_etcd *e, int64_t deadline)
{
    return deadline ? deadline : ac_etcd_deadline_in(e->op_ms);
}

/* ---- secrets ---- */

/* Zero a secret before freeing it (explicit_bzero cannot be optimised
 * away). */
static void free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

/* Replace each occurrence of needle in msg with "***". */
static void scrub_one(char *msg, size_t cap, const char *needle)
{
    size_t nlen;
    char *p;
    if (!needle || !*needle)
        return;
    nlen = strlen(needle);
    while ((p = strstr(msg, needle)) != NULL) {
        size_t tail = strlen(p + nlen);
        if ((size_t)(p - msg) + 3 + tail + 1 > cap)
            tail = cap - (size_t)(p - msg) - 4;
        memmove(p + 3, p + nlen, tail);
        p[3 + tail] = '\0';
        memcpy(p, "***", 3);
    }
}

void ac_etcd_scrub(const struct ac_etcd *e, struct ac_err *err)
{
    if (!e || !err)
        return;
    /* The longest first, so that a password containing the user name is
     * not half replaced. */
    scrub_one(err->msg, sizeof err->msg, e->token);
    if (e->password && e->username && strlen(e->username) > strlen(e->password)) {
        scrub_one(err->msg, sizeof err->msg, e->username);
        scrub_one(err->msg, sizeof err->msg, e->password);
    } else {
        scrub_one(err->msg, sizeof err->msg, e->password);
        scrub_one(err->msg, sizeof err->msg, e->username);
    }
}

/* ---- randomness and sleeping ---- */

uint64_t ac_etcd_random(struct ac_etcd *e, uint64_t n)
{
    /* xorshift64*: jitter only needs to differ between processes. */
    uint64_t x = e->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    e->rng = x;
    return (x * 0x2545F4914F6CDD1DULL) % n;
}

int ac_etcd_sleep(int64_t ns, struct ac_err *err)
{
    if (ns <= 0)
        return ac_clock_interrupted() ? ac_etcd_interrupted(err) : 0;
    if (ac_clock_sleep_ns(ns) == -1 || ac_clock_interrupted())
        return ac_etcd_interrupted(err);
    return 0;
}

/* ---- configuration ---- */

/* Parse one endpoint s[0..len) into a normalised URL. Returns it
 * (malloc'ed) or NULL with err. */
static char *parse_endpoint(const char *s, size_t len, int tls, size_t index, struct ac_err *err)
{
    const char *scheme = tls ? "https" : "http";
    const char *host, *end = s + len, *p;
    size_t hlen;
    unsigned long port = 2379;
    char *url;

    while (len > 0 && isspace((unsigned char)*s)) {
        s++;
        len--;
    }
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    if (memchr(s, '@', (size_t)(end - s))) {
        /* Never echo it: it holds credentials. */
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                   "etcd endpoint %zu carries credentials; give the user and password as "
                   "options instead", index + 1);
        return NULL;
    }
    if ((size_t)(end - s) > 7 && strncasecmp(s, "http://", 7) == 0) {
        scheme = "http";
        s += 7;
    } else if ((size_t)(end - s) > 8 && strncasecmp(s, "https://", 8) == 0) {
        scheme = "https";
        s += 8;
    }
    if (end > s && end[-1] == '/')
        end--;
    host = s;
    if (s < end && *s == '[') {                       /* [v6 address] */
        p = memchr(s, ']', (size_t)(end - s));
        if (!p)
            goto bad;
        for (const char *q = s + 1; q < p; q++)
            if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
                goto bad;
        p++;
    } else {
        for (p = s; p < end && (isalnum((unsigned char)*p) || *p == '.' || *p == '-' ||
                                *p == '_'); p++)
            ;
    }
    hlen = (size_t)(p - host);
    if (hlen == 0 || hlen > 253)
        goto bad;
    if (p < end) {
        char *num_end;
        char digits[8];
        if (*p != ':' || end - p < 2 || end - p > 6)
            goto bad;
        memcpy(digits, p + 1, (size_t)(end - p - 1));
        digits[end - p - 1] = '\0';
        if (!isdigit((unsigned char)digits[0]))
            goto bad;
        errno = 0;
        port = strtoul(digits, &num_end, 10);
        if (*num_end || errno || port == 0 || port > 65535)
            goto bad;
    }
    url = malloc(strlen(scheme) + 3 + hlen + 7);
    if (!url) {
        nomem(err);
        return NULL;
    }
    sprintf(url, "%s://%.*s:%lu", scheme, (int)hlen, host, port);
    return url;
bad: {
        char q[80], raw[256];
        snprintf(raw, sizeof raw, "%.*s", (int)(end - host), host);
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                   "etcd endpoint %zu '%s' is not HOST:PORT or http[s]://HOST:PORT", index + 1,
                   ac_err_quote(q, sizeof q, raw, 60));
        return NULL;
    }
}

static int parse_endpoints(struct ac_etcd *e, const char *list, int tls, struct ac_err *err)
{
    const char *s = list;
    if (!list || !*list)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG", "no etcd endpoint given");
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (e->n == AC_ETCD_MAX_ENDPOINTS)
            return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                              "more than %d etcd endpoints", AC_ETCD_MAX_ENDPOINTS);
        e->endpoints[e->n] = parse_endpoint(s, len, tls, e->n, err);
        if (!e->endpoints[e->n])
            return -1;
        e->n++;
        if (!comma)
            return 0;
        s = comma + 1;
    }
}

static int dup_opt(char **dst, const char *src, struct ac_err *err)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : nomem(err);
}

static size_t write_reply(char *data, size_t size, size_t n, void *arg)
{
    struct ac_etcd *e = arg;
    size_t len = size * n;
    if (e->reply.len + len > e->max_reply) {
        e->too_large = 1;
        return 0;     /* libcurl stops with CURLE_WRITE_ERROR */
    }
    ac_buf_add(&e->reply, data, len);
    return e->reply.oom ? 0 : len;
}

/* libcurl calls this about once a second and whenever data moves: a
 * SIGINT (which only sets a flag) ends the transfer there. */
static int check_interrupt(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                           curl_off_t ulnow)
{
    (void)arg;
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return ac_clock_interrupted() ? 1 : 0;
}

CURL *ac_etcd_easy_new(struct ac_etcd *e)
{
    CURL *c = ac_curl.easy_init();
    if (!c)
        return NULL;
    /* No signals (libcurl's resolver timeout uses SIGALRM otherwise), no
     * redirects, only HTTP(S), HTTP/1.1 (the gateway's JSON streams are
     * plain chunked responses), and keep-alive probes so that a member
     * that vanished without a FIN is noticed on idle connections. */
    if (ac_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
#if LIBCURL_VERSION_NUM >= 0x075500
        ac_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
#else
        ac_curl.easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) !=
            CURLE_OK ||
#endif
        ac_curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_TCP_NODELAY, 1L) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 10L) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 5L) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_MAXCONNECTS, (long)e->n + 1) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, e->connect_ms) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_NOPROGRESS, 0L) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, check_interrupt) != CURLE_OK ||
        ac_curl.easy_setopt(c, CURLOPT_POST, 1L) != CURLE_OK ||
        (e->ca_file && ac_curl.easy_setopt(c, CURLOPT_CAINFO, e->ca_file) != CURLE_OK) ||
        (e->cert_file && ac_curl.easy_setopt(c, CURLOPT_SSLCERT, e->cert_file) != CURLE_OK) ||
        (e->key_file && ac_curl.easy_setopt(c, CURLOPT_SSLKEY, e->key_file) != CURLE_OK)) {
        ac_curl.easy_cleanup(c);
        return NULL;
    }
    return c;
}

struct curl_slist *ac_etcd_header_list(const struct ac_etcd *e)
{
    struct curl_slist *h = NULL, *t;
    /* hasleader: a member that lost its leader answers "no leader" at
     * once (unary) or ends the stream (watch) instead of hanging until
     * the timeout; see etcd's grpc interceptors. */
    static const char *const fixed[] = { "Content-Type: application/json",
                                         "Accept: application/json", "Expect:",
                                         "Grpc-Metadata-hasleader: true" };
    size_t i;
    for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        t = ac_curl.slist_append(h, fixed[i]);
        if (!t)
            goto fail;
        h = t;
    }
    if (e->token) {
        char *line = malloc(strlen(e->token) + 32);
        if (!line)
            goto fail;
        sprintf(line, "Authorization: %s", e->token);
        t = ac_curl.slist_append(h, line);
        free_secret(line);
        if (!t)
            goto fail;
        h = t;
    }
    return h;
fail:
    ac_curl.slist_free_all(h);
    return NULL;
}

int ac_etcd_need_curl(struct ac_etcd *e, struct ac_err *err)
{
    if (e->easy)
        return 0;
    if (ac_curl_load(err) == -1)
        return -1;
    e->easy = ac_etcd_easy_new(e);
    e->headers = ac_etcd_header_list(e);
    if (!e->easy || !e->headers ||
        ac_curl.easy_setopt(e->easy, CURLOPT_WRITEFUNCTION, write_reply) != CURLE_OK ||
        ac_curl.easy_setopt(e->easy, CURLOPT_WRITEDATA, e) != CURLE_OK ||
        ac_curl.easy_setopt(e->easy, CURLOPT_ERRORBUFFER, e->errbuf) != CURLE_OK ||
        ac_curl.easy_setopt(e->easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)e->max_reply) !=
            CURLE_OK) {
        if (e->easy)
            ac_curl.easy_cleanup(e->easy);
        ac_curl.slist_free_all(e->headers);
        e->easy = NULL;
        e->headers = NULL;
        return nomem(err);
    }
    return 0;
}

struct ac_etcd *ac_etcd_open(const struct ac_etcd_config *cfg, struct ac_err *err)
{
    struct ac_etcd *e;
    int tls = cfg->ca_file || cfg->cert_file || cfg->key_file;
    const char *transport = getenv("AGENT_CHAT_ETCD_TRANSPORT");
    size_t i;

    if ((cfg->username == NULL) != (cfg->password == NULL)) {
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                   "etcd authentication needs both a user name and a password");
        return NULL;
    }
    if ((cfg->cert_file == NULL) != (cfg->key_file == NULL)) {
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                   "an etcd client certificate needs both the certificate and its key");
        return NULL;
    }
    if (cfg->connect_timeout_ms < 0 || cfg->request_timeout_ms < 0 || cfg->op_timeout_ms < 0 ||
        cfg->watch_probe_ms < 0) {
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG", "negative etcd timeout");
        return NULL;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        nomem(err);
        return NULL;
    }
    for (i = 0; i < AC_ETCD_MAX_ENDPOINTS; i++)
        e->raw_fd[i] = -1;
    e->connect_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : DEFAULT_CONNECT_MS;
    e->request_ms = cfg->request_timeout_ms ? cfg->request_timeout_ms : DEFAULT_REQUEST_MS;
    e->op_ms = cfg->op_timeout_ms ? cfg->op_timeout_ms : DEFAULT_OP_MS;
    e->probe_ms = cfg->watch_probe_ms ? cfg->watch_probe_ms : DEFAULT_PROBE_MS;
    e->max_reply = cfg->max_reply_bytes ? cfg->max_reply_bytes : DEFAULT_MAX_REPLY;
    e->rng = (uint64_t)ac_clock_mono_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)e;
    if (e->rng == 0)
        e->rng = 0x9e3779b97f4a7c15ULL;
    if (parse_endpoints(e, cfg->endpoints, tls, err) == -1 ||
        dup_opt(&e->username, cfg->username, err) == -1 ||
        dup_opt(&e->password, cfg->password, err) == -1 ||
        dup_opt(&e->ca_file, cfg->ca_file, err) == -1 ||
        dup_opt(&e->cert_file, cfg->cert_file, err) == -1 ||
        dup_opt(&e->key_file, cfg->key_file, err) == -1)
        goto fail;
    /* Plain http goes through http.c; TLS needs libcurl, loaded now so
     * that a missing one is a configuration error at once. */
    e->use_curl = tls || (transport && strcmp(transport, "curl") == 0);
    for (i = 0; i < e->n; i++)
        if (strncmp(e->endpoints[i], "https://", 8) == 0)
            e->use_curl = 1;
    if (e->use_curl && ac_etcd_need_curl(e, err) == -1)
        goto fail;
    return e;
fail:
    ac_etcd_scrub(e, err);
    ac_etcd_close(e);
    return NULL;
}

void ac_etcd_close(struct ac_etcd *e)
{
    size_t i;
    if (!e)
        return;
    if (e->easy)
        ac_curl.easy_cleanup(e->easy);
    if (e->headers)
        ac_curl.slist_free_all(e->headers);
    for (i = 0; i < e->n; i++) {
        ac_etcd_raw_close(e, i);
        free(e->endpoints[i]);
    }
    free_secret(e->username);
    free_secret(e->password);
    free_secret(e->token);
    free(e->ca_file);
    free(e->cert_file);
    free(e->key_file);
    ac_buf_free(&e->reply);
    free(e);
}

size_t ac_etcd_endpoint_count(const struct ac_etcd *e)
{
    return e->n;
}

const char *ac_etcd_endpoint(const struct ac_etcd *e, size_t i)
{
    return i < e->n ? e->endpoints[i] : NULL;
}

size_t ac_etcd_current(const struct ac_etcd *e)
{
    return e->cur;
}

void ac_etcd_set_current(struct ac_etcd *e, size_t i)
{
    if (i < e->n)
        e->cur = i;
}

unsigned long ac_etcd_failovers(const struct ac_etcd *e)
{
    return e->failovers;
}

unsigned long ac_etcd_connections(const struct ac_etcd *e)
{
    return e->connections;
}

void ac_etcd_next_endpoint(struct ac_etcd *e)
{
    e->cur = (e->cur + 1) % e->n;
    e->failovers++;
}

/* ---- one attempt ---- */

/* What one attempt on one endpoint came to. */
enum outcome {
    OUT_OK,             /* *reply holds the answer */
    OUT_NOT_SENT,       /* nothing reached the member: try the next one */
    OUT_UNKNOWN,        /* sent, no usable answer: it may have been applied */
    OUT_FAIL,           /* a definitive answer (or a local problem): stop */
    OUT_BAD_TOKEN       /* the token expired: authenticate again, retry */
};

static int is_tls_error(CURLcode rc)
{
    switch (rc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        return 1;
    default:
        return 0;
    }
}

int ac_etcd_tls_refused(CURLcode rc, const char *errbuf)
{
    /* With TLS 1.3 the client's side of the handshake ends before the
     * server has checked the client certificate; the server's refusal
     * then arrives as an alert on the first read ("... alert bad
     * certificate", "... alert certificate required"). A member that dies
     * mid-connection gives an EOF or a reset instead, never an alert. */
    return (rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR) && errbuf &&
           strstr(errbuf, " alert ") != NULL;
}

/* The curl error as text: the error buffer when it says something. */
static const char *curl_text(const struct ac_etcd *e, CURLcode rc)
{
    return e->errbuf[0] ? e->errbuf : ac_curl.easy_strerror(rc);
}

/* An error answer (4xx/5xx, or an error object in a 200) -> outcome. */
static enum outcome server_error(struct ac_etcd *e, size_t i, long status, int grpc,
                                 const char *message, struct ac_err *err)
{
    int transient;
    const char *code = ac_etcdw_classify(grpc, message, &transient);
    char q[300];
    ac_err_quote(q, sizeof q, message ? message : "(no message)", 240);
    if (e->token && (grpc == AC_GRPC_UNAUTHENTICATED || strstr(q, "invalid auth token")))
        return OUT_BAD_TOKEN;
    ac_err_set(err, AC_EXIT_GENERAL, code, "etcd %s: %s", e->endpoints[i], q);
    if (transient || status >= 500)
        return OUT_UNKNOWN;
    return OUT_FAIL;
}

/* One request through libcurl: OUT_OK with *status and the body in
 * e->reply, or the outcome of its failure (err). */
static enum outcome curl_transfer(struct ac_etcd *e, size_t i, const char *path, const char *body,
                                  size_t len, long timeout, long *statusp, struct ac_err *err)
{
    char url[512];
    long status = 0, connects = 0, sent = 0;
    CURLcode rc;

    *statusp = 0;
    snprintf(url, sizeof url, "%s%s", e->endpoints[i], path);
    e->reply.len = 0;
    e->too_large = 0;
    e->errbuf[0] = '\0';
    if (ac_curl.easy_setopt(e->easy, CURLOPT_URL, url) != CURLE_OK ||
        ac_curl.easy_setopt(e->easy, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
        ac_curl.easy_setopt(e->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) != CURLE_OK ||
        ac_curl.easy_setopt(e->easy, CURLOPT_HTTPHEADER, e->headers) != CURLE_OK ||
        ac_curl.easy_setopt(e->easy, CURLOPT_TIMEOUT_MS, timeout) != CURLE_OK ||
        ac_curl.easy_setopt(e->easy, CURLOPT_CONNECTTIMEOUT_MS,
                         e->connect_ms < timeout ? e->connect_ms : timeout) != CURLE_OK) {
        nomem(err);
        return OUT_FAIL;
    }
    rc = ac_curl.easy_perform(e->easy);
    ac_curl.easy_getinfo(e->easy, CURLINFO_NUM_CONNECTS, &connects);
    ac_curl.easy_getinfo(e->easy, CURLINFO_REQUEST_SIZE, &sent);
    ac_curl.easy_getinfo(e->easy, CURLINFO_RESPONSE_CODE, &status);
    e->connections += (unsigned long)connects;
    if (rc != CURLE_OK) {
        const char *what = curl_text(e, rc);
        if (rc == CURLE_ABORTED_BY_CALLBACK) {
            ac_etcd_interrupted(err);
            return OUT_FAIL;
        }
        if (rc == CURLE_OUT_OF_MEMORY || (rc == CURLE_WRITE_ERROR && e->reply.oom)) {
            nomem(err);
            return OUT_FAIL;
        }
        if (e->too_large || rc == CURLE_FILESIZE_EXCEEDED) {
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_REPLY_TOO_LARGE",
                       "etcd %s: reply larger than %zu bytes", e->endpoints[i], e->max_reply);
            return OUT_FAIL;
        }
        if (is_tls_error(rc) || ac_etcd_tls_refused(rc, e->errbuf)) {
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_TLS", "etcd %s: TLS: %s", e->endpoints[i],
                       what);
            return OUT_FAIL;
        }
        if (rc == CURLE_SSL_CONNECT_ERROR) {
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_TLS", "etcd %s: TLS: %s", e->endpoints[i],
                       what);
            return OUT_NOT_SENT;
        }
        if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || sent == 0) {
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_UNAVAILABLE", "etcd %s: %s", e->endpoints[i],
                       what);
            return OUT_NOT_SENT;
        }
        if (rc == CURLE_OPERATION_TIMEDOUT)
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_OUTCOME_UNKNOWN",
                       "etcd %s: no answer within %ld ms", e->endpoints[i], timeout);
        else
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_OUTCOME_UNKNOWN", "etcd %s: %s",
                       e->endpoints[i], what);
        return OUT_UNKNOWN;
    }
    *statusp = status;
    return OUT_OK;
}

/* One request to endpoint i, through http.c or libcurl: its outcome, and
 * on OUT_OK the reply object in *reply. */
static enum outcome attempt(struct ac_etcd *e, size_t i, const char *path, const char *body,
                            size_t len, int64_t deadline, json_t **reply, struct ac_err *err)
{
    int64_t left_ms = (deadline - ac_clock_mono_ns()) / 1000000;
    long timeout = e->request_ms < left_ms ? e->request_ms : (long)left_ms;
    long status = 0;
    json_t *o;
    int grpc;
    const char *message;

    *reply = NULL;
    if (timeout < 1)
        timeout = 1;
    if (e->use_curl) {
        enum outcome out = curl_transfer(e, i, path, body, len, timeout, &status, err);
        if (out != OUT_OK)
            return out;
    } else {
        switch (ac_etcd_raw_post(e, i, path, body, len, timeout, &status, err)) {
        case AC_ETCD_TR_OK:
            break;
        case AC_ETCD_TR_NOT_SENT:
            return OUT_NOT_SENT;
        case AC_ETCD_TR_UNKNOWN:
            return OUT_UNKNOWN;
        case AC_ETCD_TR_INTERRUPTED:
            ac_etcd_interrupted(err);
            return OUT_FAIL;
        default:
            return OUT_FAIL;
        }
    }
    if (status >= 200 && status < 300) {
        struct ac_err perr = AC_ERR_INIT;
        o = ac_etcdw_parse(e->reply.data, e->reply.len, &perr);
        if (!o) {
            ac_err_set(err, AC_EXIT_GENERAL, perr.code, "etcd %s: %s", e->endpoints[i], perr.msg);
            return OUT_FAIL;
        }
        if (ac_etcdw_error_of(o, &grpc, &message)) {
            enum outcome out = server_error(e, i, status, grpc, message, err);
            json_decref(o);
            return out;
        }
        /* A stream endpoint (lease keepalive) answers {"result": {...}}. */
        if (json_object_size(o) == 1 && json_is_object(json_object_get(o, "result"))) {
            json_t *r = json_incref(json_object_get(o, "result"));
            json_decref(o);
            o = r;
        }
        *reply = o;
        return OUT_OK;
    }
    if (status >= 400 && status < 600) {
        enum outcome out;
        o = e->reply.len ? json_loadb(e->reply.data, e->reply.len, 0, NULL) : NULL;
        if (!o || !json_is_object(o) || !ac_etcdw_error_of(o, &grpc, &message)) {
            json_decref(o);
            if (status >= 500) {
                ac_err_set(err, AC_EXIT_GENERAL, "ETCD_OUTCOME_UNKNOWN",
                           "etcd %s: HTTP %ld", e->endpoints[i], status);
                return OUT_UNKNOWN;
            }
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_BAD_REPLY",
                       "etcd %s: HTTP %ld without an etcd error (not an etcd v3 gateway?)",
                       e->endpoints[i], status);
            return OUT_FAIL;
        }
        out = server_error(e, i, status, grpc, message, err);
        json_decref(o);
        return out;
    }
    ac_err_set(err, AC_EXIT_GENERAL, "ETCD_BAD_REPLY", "etcd %s: unexpected HTTP status %ld",
               e->endpoints[i], status);
    return OUT_FAIL;
}

/* ---- authentication ---- */

/* libcurl's request headers follow the token (http.c writes its own). */
static int refresh_headers(struct ac_etcd *e, struct ac_err *err)
{
    struct curl_slist *h;
    if (!e->easy)
        return 0;
    h = ac_etcd_header_list(e);
    if (!h)
        return nomem(err);
    ac_curl.slist_free_all(e->headers);
    e->headers = h;
    return 0;
}

static int authenticate(struct ac_etcd *e, int64_t deadline, struct ac_err *err)
{
    json_t *req = NULL, *reply = NULL;
    const json_t *tok;
    int rc = -1;

    /* No Authorization header on the authenticate request itself: etcd
     * refuses any request that carries a token it does not know. */
    free_secret(e->token);
    e->token = NULL;
    if (refresh_headers(e, err) == -1)
        goto out;
    req = json_pack("{s:s, s:s}", "name", e->username, "password", e->password);
    if (!req) {
        nomem(err);
        goto out;
    }
    if (ac_etcd_call(e, "/v3/auth/authenticate", req, AC_ETCD_F_READ | AC_ETCD_F_NOAUTH,
                     deadline, &reply, err) == -1) {
        if (err && err->code && strcmp(err->code, "ETCD_INVALID") == 0)
            err->code = "ETCD_AUTH_FAILED";
        goto out;
    }
    tok = json_object_get(reply, "token");
    if (!json_is_string(tok) || json_string_length(tok) == 0 ||
        json_string_length(tok) > 4096 || strlen(json_string_value(tok)) != json_string_length(tok) ||
        strpbrk(json_string_value(tok), "\r\n")) {
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_BAD_REPLY",
                   "etcd reply: authentication without a usable token");
        goto out;
    }
    e->token = strdup(json_string_value(tok));
    if (!e->token) {
        nomem(err);
        goto out;
    }
    if (refresh_headers(e, err) == -1)
        goto out;
    rc = 0;
out:
    if (req) {
        /* the password is in there: wipe jansson's copy */
        json_t *pw = json_object_get(req, "password");
        if (json_is_string(pw))
            explicit_bzero((char *)json_string_value(pw), json_string_length(pw));
    }
    json_decref(req);
    json_decref(reply);
    return rc;
}

void ac_etcd_drop_token(struct ac_etcd *e)
{
    free_secret(e->token);
    e->token = NULL;
}

int ac_etcd_ensure_auth(struct ac_etcd *e, int64_t deadline, struct ac_err *err)
{
    if (!e->username || e->token)
        return 0;
    return authenticate(e, deadline, err);
}

/* ---- calls ---- */

static int finish(struct ac_etcd *e, int rc, struct ac_err *err)
{
    if (rc == -1)
        ac_etcd_scrub(e, err);
    return rc;
}

int ac_etcd_call(struct ac_etcd *e, const char *path, const json_t *req, unsigned flags,
                 int64_t deadline, json_t **reply, struct ac_err *err)
{
    char *body;
    size_t len, refused = 0, unknown = 0;
    int reauthed = 0, rc = -1, k = 0;
    /* Once a member has said "no leader", that is the call's story: a later
     * attempt cut short by the deadline times out, which says less. */
    int no_leader = 0;
    int64_t start = ac_clock_mono_ns();
    struct ac_err last = AC_ERR_INIT;

    *reply = NULL;
    if (!(flags & AC_ETCD_F_NOAUTH) && ac_etcd_ensure_auth(e, deadline, err) == -1)
        return finish(e, -1, err);
    body = json_dumps(req, JSON_COMPACT);
    if (!body)
        return finish(e, nomem(err), err);
    len = strlen(body);
    for (;;) {
        enum outcome out;
        size_t i = e->cur;
        if (ac_clock_interrupted()) {
            ac_etcd_interrupted(err);
            break;
        }
        if (ac_clock_mono_ns() >= deadline) {
            long ms = (long)((ac_clock_mono_ns() - start) / 1000000);
            if (!last.code)
                ac_err_set(err, AC_EXIT_GENERAL, "ETCD_TIMEOUT",
                           "etcd: deadline passed before the request was sent");
            else if (no_leader)
                ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NO_LEADER",
                           "etcd has no leader (quorum lost?) for %ld ms; last: %s", ms,
                           last.msg);
            else if (unknown == 0)
                ac_err_set(err, AC_EXIT_GENERAL,
                           strcmp(last.code, "ETCD_TLS") == 0 ? "ETCD_TLS" : "ETCD_UNAVAILABLE",
                           "no etcd endpoint reachable for %ld ms (%zu tried); last: %s", ms,
                           e->n, last.msg);
            else
                ac_err_set(err, AC_EXIT_GENERAL, "ETCD_TIMEOUT",
                           "etcd did not answer within %ld ms; last: %s", ms, last.msg);
            break;
        }
        out = attempt(e, i, path, body, len, deadline, reply, &last);
        if (last.code && strcmp(last.code, "ETCD_NO_LEADER") == 0)
            no_leader = 1;
        if (out == OUT_OK) {
            rc = 0;
            break;
        }
        if (out == OUT_BAD_TOKEN && !reauthed && e->username) {
            /* Simple tokens expire (--auth-token-ttl, 5 min idle): get a
             * new one and send the request again, once. */
            reauthed = 1;
            if (authenticate(e, deadline, err) == -1)
                break;
            continue;
        }
        if (out == OUT_BAD_TOKEN) {
            ac_err_set(err, AC_EXIT_GENERAL, "ETCD_AUTH_FAILED",
                       "etcd %s: the auth token was refused", e->endpoints[i]);
            break;
        }
        if (out == OUT_FAIL) {
            *err = last;
            break;
        }
        ac_etcd_next_endpoint(e);
        if (out == OUT_UNKNOWN) {
            refused = 0;
            if (!(flags & AC_ETCD_F_READ)) {
                if (strcmp(last.code, "ETCD_NO_LEADER") != 0)
                    last.code = "ETCD_OUTCOME_UNKNOWN";
                ac_err_set(err, AC_EXIT_GENERAL, last.code, "%s; the write may or may not have "
                           "been applied", last.msg);
                break;
            }
            /* A read: try the next member, pausing after a whole round. */
            if (++unknown % e->n == 0 &&
                ac_etcd_sleep((int64_t)ac_etcd_random(e, (uint64_t)ROUND_BACKOFF_MS * 1000000 + 1),
                              err) == -1)
                break;
            continue;
        }
        /* Nothing was sent: next endpoint at once; after a whole round of
         * refusals, a short jittered pause (the members may be
         * restarting). */
        if (++refused % e->n == 0) {
            int64_t pause = (int64_t)ac_etcd_random(e, (uint64_t)ROUND_BACKOFF_MS * 1000000) +
                            1000000 * (k < 5 ? (1 << k) : 32);
            int64_t left = deadline - ac_clock_mono_ns();
            k++;
            if (ac_etcd_sleep(pause < left ? pause : left, err) == -1)
                break;
        }
    }
    free(body);
    return finish(e, rc, err);
}

int ac_etcd_call_at(struct ac_etcd *e, size_t i, const char *path, const json_t *req,
                    int64_t deadline, json_t **reply, struct ac_err *err)
{
    char *body;
    enum outcome out;
    *reply = NULL;
    if (i >= e->n)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG", "no etcd endpoint %zu", i + 1);
    if (ac_etcd_ensure_auth(e, deadline, err) == -1)
        return finish(e, -1, err);
    body = json_dumps(req, JSON_COMPACT);
    if (!body)
        return nomem(err);
    out = attempt(e, i, path, body, strlen(body), deadline, reply, err);
    if (out == OUT_BAD_TOKEN && e->username && authenticate(e, deadline, err) == 0)
        out = attempt(e, i, path, body, strlen(body), deadline, reply, err);
    if (out == OUT_BAD_TOKEN)
        ac_err_set(err, AC_EXIT_GENERAL, "ETCD_AUTH_FAILED", "etcd %s: the auth token was refused",
                   e->endpoints[i]);
    free(body);
    return finish(e, out == OUT_OK ? 0 : -1, err);
}
