/*
 * store_etcd.c - the etcd backend of the store interface: the store,
 * channels, messages, cursors, notification and mutexes (records and
 * batches are records_etcd.c's). The key layout is store_etcd.h's.
 *
 * Each operation is one transaction or one read where it can be, since a
 * round trip (~1 ms) is what an operation costs:
 *   chan_open     one read-only txn: the channel record and the counter
 *   msg_post      one txn: compare the counter's mod revision, put the
 *                 counter, the message and its idempotency token
 *                 (et_post); a lost race re-reads in the same round trip
 *   msg_list      one read-only txn: the names after a seq, the count, the
 *                 counter and the last message's name
 *   msg_read      served from a read-ahead of up to READ_AHEAD messages
 *   cursor_lock   one txn that takes the lock and reads the cursor
 *   cursor_advance one txn comparing the cursor read under the lock
 *   watch         a watch of the channel's messages from the revision of
 *                 the last listing, so nothing published after it is missed
 */
#include "etcd/store_etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/channel.h"
#include "agentchat/clock.h"
#include "agentchat/codec.h"
#include "agentchat/frontmatter.h"
#include "agentchat/isotime.h"
#include "agentchat/pathnorm.h"
#include "agentchat/pystr.h"
#include "agentchat/slug.h"
#include "etcd/internal.h"     /* ac_etcd_random: the jitter of mutex waits */

/* Idempotency tokens kept per channel: a post deletes the token of the
 * seq this far behind its own. A retry looks for its token among the
 * seqs it tried, which are never this far behind. */
#define IDEM_WINDOW 4096
/* Messages read ahead by msg_read. */
#define READ_AHEAD 256
/* The session lease of the mutexes: a holder that dies (or stops) loses
 * its mutexes after this long; a live one renews it on its calls. */
#define DEFAULT_LEASE_TTL 10
/* Longest pause between two tries of a held mutex. */
#define MUTEX_POLL_CAP_NS (50 * 1000000LL)

static const struct ac_store_ops et_ops;

#define KEY(k) ((struct ac_etcd_keys){ (k), 0, NULL, 0, 0 })
#define PREFIX(k) ((struct ac_etcd_keys){ (k), 0, NULL, 0, 1 })
#define RANGE(k, e) ((struct ac_etcd_keys){ (k), 0, (e), 0, 0 })

int et_nomem(struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NOMEM", "out of memory");
}

/* ---- keys ---- */

static char *cat_va(const char *first, va_list ap)
{
    va_list aq;
    size_t len = strlen(first);
    const char *s;
    char *out, *p;
    va_copy(aq, ap);
    while ((s = va_arg(aq, const char *)) != NULL)
        len += strlen(s);
    va_end(aq);
    out = malloc(len + 1);
    if (!out)
        return NULL;
    p = out;
    s = first;
    do {
        size_t n = strlen(s);
        memcpy(p, s, n);
        p += n;
    } while ((s = va_arg(ap, const char *)) != NULL);
    *p = '\0';
    return out;
}

char *et_key(const struct et_chan *ch, ...)
{
    va_list ap;
    char *k;
    va_start(ap, ch);
    k = cat_va(ch->kp, ap);
    va_end(ap);
    return k;
}

static char *cat(const char *first, ...)
{
    va_list ap;
    char *k;
    va_start(ap, first);
    k = cat_va(first, ap);
    va_end(ap);
    return k;
}

char *et_prefix_end(const char *prefix)
{
    size_t n = strlen(prefix);
    char *end = strdup(prefix);
    while (end && n > 0) {
        if ((unsigned char)end[n - 1] < 0xff) {
            end[n - 1]++;
            end[n] = '\0';
            return end;
        }
        n--;
    }
    free(end);
    return NULL;        /* (never for our prefixes, which end in '/') */
}

static void seq20(uint64_t seq, char out[24])
{
    snprintf(out, 24, "%020" PRIu64, seq);
}

void et_msg_name(uint64_t seq, const char *from, const char *title, char *out, size_t size)
{
    char fs[AC_SLUG_MAX + 1], ts[AC_SLUG_MAX + 1];
    ac_slugify(from, strlen(from), fs);
    ac_slugify(title, strlen(title), ts);
    snprintf(out, size, "%04" PRIu64 "-%s-%s.md", seq, fs, ts);
}

/* ---- the connection and its session lease ---- */

/* Revoke the session lease, if one was granted: the keys on it (locks)
 * go with it. Best effort: one that cannot be revoked expires. */
static void lease_end(struct et_conn *c)
{
    if (c->lease) {
        struct ac_err ignored = AC_ERR_INIT;
        ac_etcd_lease_revoke(c->e, c->lease, ac_etcd_deadline_in(1000), &ignored);
        c->lease = 0;
    }
}

static void conn_unref(struct et_conn *c)
{
    if (!c || --c->refs > 0)
        return;
    lease_end(c);
    ac_etcd_close(c->e);
    free(c);
}

void et_lease_tend(struct et_conn *c)
{
    struct ac_err err = AC_ERR_INIT;
    if (!c->lease || ac_clock_mono_ns() - c->lease_renewed < c->lease_ttl * 1000000000LL / 3)
        return;
    if (ac_etcd_lease_keepalive(c->e, c->lease, NULL, 0, &err) == 0)
        c->lease_renewed = ac_clock_mono_ns();
    else if (err.code && strcmp(err.code, "ETCD_LEASE_NOT_FOUND") == 0)
        c->lease = 0;           /* gone: what it held is gone too (fenced) */
}

static int lease_ensure(struct et_conn *c, struct ac_err *err)
{
    et_lease_tend(c);
    if (c->lease)
        return 0;
    if (ac_etcd_lease_grant(c->e, c->lease_ttl, &c->lease, NULL, 0, err) == -1)
        return -1;
    c->lease_renewed = ac_clock_mono_ns();
    return 0;
}

/* ---- the store ---- */

static void et_destroy(struct ac_store *base)
{
    struct et_store *st = (struct et_store *)base;
    conn_unref(st->conn);
    free(st->prefix);
    free(st->base.root);
    free(st);
}

static void et_session_end(struct ac_store *base)
{
    lease_end(((struct et_store *)base)->conn);
}

static int bad_url(struct ac_err *err, const char *why)
{
    return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                      "store URL must be etcd://HOST:PORT[,HOST:PORT...]/PREFIX: %s", why);
}

/* A positive number of seconds from a query value; -1 when it is not. */
static double seconds_of(const char *s, size_t len)
{
    char buf[32], *end;
    double v;
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    v = strtod(buf, &end);
    if (*end || !(v > 0) || v > 86400)
        return -1;
    return v;
}

#define STORE_REQUEST_MS 500

/* Parse the query of a store URL ("timeout=5&lease_ttl=10"). */
static int parse_query(const char *q, struct ac_etcd_config *cfg, int64_t *lease_ttl,
                       struct ac_err *err)
{
    while (*q) {
        size_t n = strcspn(q, "&"), klen = strcspn(q, "=");
        const char *v = q + klen + 1;
        double secs;
        if (klen >= n)
            return bad_url(err, "an option without a value");
        secs = seconds_of(v, n - klen - 1);
        if (secs < 0)
            return bad_url(err, "an option value is not a positive number of seconds");
        if (klen == 7 && strncmp(q, "timeout", 7) == 0)
            cfg->op_timeout_ms = (long)(secs * 1000);
        else if (klen == 15 && strncmp(q, "request_timeout", 15) == 0)
            cfg->request_timeout_ms = (long)(secs * 1000);
        else if (klen == 9 && strncmp(q, "lease_ttl", 9) == 0)
            *lease_ttl = secs < 2 ? 2 : (int64_t)secs;
        else
            return bad_url(err, "unknown option (known: timeout, request_timeout, lease_ttl)");
        q += n;
        if (*q == '&')
            q++;
    }
    return 0;
}

/* One request waits 0.5 s for one member unless the URL says: a write
 * that reached a follower just before the leader died is lost with it and
 * answered by nobody, so this bounds a failover (the retry after the
 * election lands; measured: 1.0-1.5 s after a leader SIGKILL with a 1 s
 * election timeout, 1.0-2.0 s with 1 s here), far above a request's few
 * ms. Never more than the whole command's timeout. */
static void request_timeout_default(struct ac_etcd_config *cfg)
{
    if (!cfg->request_timeout_ms)
        cfg->request_timeout_ms = STORE_REQUEST_MS;
    if (cfg->op_timeout_ms && cfg->op_timeout_ms < cfg->request_timeout_ms)
        cfg->request_timeout_ms = cfg->op_timeout_ms;
}

int ac_store_is_etcd(const char *spec)
{
    return spec && strncmp(spec, "etcd://", 7) == 0;
}

struct ac_store *ac_store_open_etcd(const char *url, const struct ac_store_etcd_opts *opts,
                                    struct ac_err *err)
{
    struct ac_etcd_config cfg = AC_ETCD_CONFIG_INIT;
    const char *hosts, *slash, *q, *p;
    char *hostlist = NULL, *prefix = NULL;
    struct et_store *st = NULL;
    struct et_conn *c = NULL;
    int64_t lease_ttl = DEFAULT_LEASE_TTL;
    size_t plen;

    if (!ac_store_is_etcd(url)) {
        bad_url(err, "it does not start with etcd://");
        return NULL;
    }
    hosts = url + 7;
    q = strchr(hosts, '?');
    slash = strchr(hosts, '/');
    if (slash && q && q < slash)
        slash = NULL;
    if (memchr(hosts, '@', (size_t)((slash ? slash : q ? q : hosts + strlen(hosts)) - hosts))) {
        /* never echo it: it holds credentials */
        bad_url(err, "credentials do not belong in the URL (use the etcd settings of the config)");
        return NULL;
    }
    hostlist = strndup(hosts, (size_t)((slash ? slash : q ? q : hosts + strlen(hosts)) - hosts));
    /* The prefix: the path without its slashes at either end. */
    p = slash ? slash : "";
    while (*p == '/')
        p++;
    plen = q ? (size_t)(q - p) : strlen(p);
    if (q && q < p)
        plen = 0;
    while (plen > 0 && p[plen - 1] == '/')
        plen--;
    if (!hostlist) {
        et_nomem(err);
        goto fail;
    }
    if (!*hostlist) {
        bad_url(err, "no HOST:PORT");
        goto fail;
    }
    if (plen == 0) {
        bad_url(err, "no PREFIX (the key prefix of this store in the cluster)");
        goto fail;
    }
    for (size_t i = 0; i < plen; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch <= 0x20 || ch == 0x7f || (ch == '/' && p[i + 1] == '/'))
            break;
        if (i + 1 == plen)
            goto prefix_ok;
    }
    bad_url(err, "the PREFIX has a space, a control character or an empty segment");
    goto fail;
prefix_ok:
    if (q && parse_query(q + 1, &cfg, &lease_ttl, err) == -1)
        goto fail;
    request_timeout_default(&cfg);
    prefix = malloc(plen + 2);
    st = calloc(1, sizeof *st);
    c = calloc(1, sizeof *c);
    if (!prefix || !st || !c) {
        et_nomem(err);
        goto fail;
    }
    memcpy(prefix, p, plen);
    prefix[plen] = '/';
    prefix[plen + 1] = '\0';
    cfg.endpoints = hostlist;
    if (opts) {
        cfg.username = opts->username;
        cfg.password = opts->password;
        cfg.ca_file = opts->ca_file;
        cfg.cert_file = opts->cert_file;
        cfg.key_file = opts->key_file;
    }
    c->e = ac_etcd_open(&cfg, err);
    if (!c->e)
        goto fail;
    c->refs = 1;
    c->lease_ttl = lease_ttl;
    st->conn = c;
    st->prefix = prefix;
    st->base.ops = &et_ops;
    st->base.root = q ? strndup(url, (size_t)(q - url)) : strdup(url);
    if (!st->base.root) {
        et_nomem(err);
        st->prefix = NULL;
        st->conn = NULL;
        goto fail;
    }
    free(hostlist);
    return &st->base;
fail:
    if (c && c->e)
        ac_etcd_close(c->e);
    free(c);
    if (st)
        free(st->base.root);
    free(st);
    free(prefix);
    free(hostlist);
    return NULL;
}

/* A read-only transaction, retried (a txn is a write to the client, whose
 * unknown outcome it never retries; a read may always be). */
struct read_txn {
    const struct ac_etcd_txn_req *req;
    struct ac_etcd_txn_res *res;
};

static int read_attempt(struct ac_etcd *e, void *ctx, int64_t deadline, struct ac_err *err)
{
    struct read_txn *t = ctx;
    return ac_etcd_txn(e, t->req, t->res, deadline, err) == -1 ? -1 : 1;
}

static int read_txn(struct et_conn *c, const struct ac_etcd_op *ops, size_t n,
                    struct ac_etcd_txn_res *res, struct ac_err *err)
{
    struct ac_etcd_txn_req req = { NULL, 0, ops, n, NULL, 0 };
    struct read_txn t = { &req, res };
    memset(res, 0, sizeof *res);
    return ac_etcd_retry(c->e, read_attempt, &t, 0, NULL, err);
}

static struct ac_etcd_op op_range(struct ac_etcd_keys keys, int keys_only, int count_only,
                                  int64_t limit)
{
    struct ac_etcd_op o;
    memset(&o, 0, sizeof o);
    o.kind = AC_ETCD_OP_RANGE;
    o.keys = keys;
    o.keys_only = keys_only;
    o.count_only = count_only;
    o.limit = limit;
    return o;
}

static struct ac_etcd_op op_put(const char *key, const char *value, size_t len, int64_t lease)
{
    struct ac_etcd_op o;
    memset(&o, 0, sizeof o);
    o.kind = AC_ETCD_OP_PUT;
    o.keys = KEY(key);
    o.value = value;
    o.value_len = len;
    o.lease = lease;
    return o;
}

struct ac_etcd_op et_op_delete(struct ac_etcd_keys keys)
{
    struct ac_etcd_op o;
    memset(&o, 0, sizeof o);
    o.kind = AC_ETCD_OP_DELETE;
    o.keys = keys;
    return o;
}

/* ---- channels ---- */

static int et_chan_names(struct ac_store *base, char ***out, size_t *n, struct ac_err *err)
{
    struct et_store *st = (struct et_store *)base;
    char *pfx = cat(st->prefix, "ch/", (char *)NULL);
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    size_t i, skip;
    *out = NULL;
    *n = 0;
    if (!pfx)
        return et_nomem(err);
    memset(&rq, 0, sizeof rq);
    rq.keys = PREFIX(pfx);
    rq.keys_only = 1;
    if (ac_etcd_range(st->conn->e, &rq, &rs, 0, err) == -1) {
        free(pfx);
        return -1;
    }
    skip = strlen(pfx);
    free(pfx);
    if (rs.nkvs && !(*out = calloc(rs.nkvs, sizeof **out))) {
        ac_etcd_range_res_free(&rs);
        return et_nomem(err);
    }
    /* etcd sorts keys bytewise: the names come sorted; a channel's
     * counter ("<name>\x01seq") is no channel. */
    for (i = 0; i < rs.nkvs; i++) {
        if (strchr(rs.kvs[i].key + skip, '\x01'))
            continue;
        if (!((*out)[*n] = strdup(rs.kvs[i].key + skip))) {
            ac_names_free(*out, *n);
            *out = NULL;
            *n = 0;
            ac_etcd_range_res_free(&rs);
            return et_nomem(err);
        }
        (*n)++;
    }
    ac_etcd_range_res_free(&rs);
    return 0;
}

int et_not_found(struct ac_store *base, const char *name, struct ac_err *err)
{
    char shown[300];
    ac_err_quote(shown, sizeof shown, name, 200);
    return ac_err_set(err, AC_EXIT_GENERAL, "CHANNEL_NOT_FOUND",
                      "channel '%s' not found under %s (run: init %s)", shown, base->root, shown);
}

static void cache_drop(struct et_chan *ch)
{
    size_t i;
    for (i = 0; i < ch->ncache; i++)
        ac_etcd_kv_free(&ch->cache[i]);
    free(ch->cache);
    ch->cache = NULL;
    ch->ncache = 0;
}

struct et_mutex {
    struct ac_mutex base;       /* first (store.h) */
    struct et_conn *conn;
    struct et_chan *ch;         /* NULL once the channel closed */
    struct et_mutex *next;      /* in ch->held */
    char *key;
    int fence;                  /* batches through ch compare it */
};

static void et_chan_close(struct ac_chan *base)
{
    struct et_chan *ch = et_chan(base);
    struct et_mutex *m;
    if (!ch)
        return;
    for (m = ch->held; m; m = m->next)
        m->ch = NULL;
    cache_drop(ch);
    free(ch->meta);
    free(ch->cur_agent);
    free(ch->kp);
    free(ch->meta_key);
    free(ch->seq_key);
    free(ch->base.name);
    free(ch);
}

static int et_chan_open(struct ac_store *base, const char *name, struct ac_chan **out,
                        struct ac_err *err)
{
    struct et_store *st = (struct et_store *)base;
    struct et_chan *ch;
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    char *end;
    size_t i;
    int rc;

    *out = NULL;
    if (ac_channel_name_check(name, err) == -1)
        return -1;
    ch = calloc(1, sizeof *ch);
    if (!ch)
        return et_nomem(err);
    ch->base.store = base;
    ch->st = st;
    ch->base.name = strdup(name);
    ch->kp = cat(st->prefix, "c/", name, "/", (char *)NULL);
    ch->meta_key = cat(st->prefix, "ch/", name, (char *)NULL);
    ch->seq_key = cat(st->prefix, "ch/", name, "\x01seq", (char *)NULL);
    end = cat(st->prefix, "ch/", name, "\x02", (char *)NULL);
    if (!ch->base.name || !ch->kp || !ch->meta_key || !ch->seq_key || !end) {
        free(end);
        et_chan_close(&ch->base);
        return et_nomem(err);
    }
    /* The channel record and its counter, adjacent keys: one range, from
     * the member's own copy (no quorum round). A record it does not have
     * yet (a channel created a moment ago through another member) is
     * asked of the quorum; a counter it has behind only loses the post's
     * first compare. */
    memset(&rq, 0, sizeof rq);
    rq.keys = RANGE(ch->meta_key, end);
    rq.serializable = 1;
    rc = ac_etcd_range(st->conn->e, &rq, &rs, 0, err);
    if (rc == 0 && (rs.nkvs == 0 || strcmp(rs.kvs[0].key, ch->meta_key) != 0)) {
        ac_etcd_range_res_free(&rs);
        rq.serializable = 0;
        rc = ac_etcd_range(st->conn->e, &rq, &rs, 0, err);
    }
    free(end);
    if (rc == -1) {
        et_chan_close(&ch->base);
        return -1;
    }
    for (i = 0; i < rs.nkvs; i++) {
        if (strcmp(rs.kvs[i].key, ch->meta_key) == 0 && !ch->meta) {
            /* the channel record, kept: nothing rewrites it */
            ch->meta = rs.kvs[i].value;
            ch->meta_len = rs.kvs[i].value_len;
            rs.kvs[i].value = NULL;
        } else if (strcmp(rs.kvs[i].key, ch->seq_key) == 0) {
            ch->seq = strtoll(rs.kvs[i].value, NULL, 10);
            ch->seq_mod = rs.kvs[i].mod_revision;
        }
    }
    ch->rev = rs.revision;
    ac_etcd_range_res_free(&rs);
    if (!ch->meta) {
        et_chan_close(&ch->base);
        return et_not_found(base, name, err);
    }
    *out = &ch->base;
    return 0;
}

static int et_chan_create(struct ac_store *base, const char *name, const char *meta,
                          size_t meta_len, struct ac_err *err)
{
    struct et_store *st = (struct et_store *)base;
    char *key;
    struct ac_etcd_cmp cmp;
    struct ac_etcd_op op;
    struct ac_etcd_txn_req t;
    struct ac_etcd_txn_res r;
    int rc;

    if (ac_channel_name_check(name, err) == -1)
        return -1;
    key = cat(st->prefix, "ch/", name, (char *)NULL);
    if (!key)
        return et_nomem(err);
    cmp = (struct ac_etcd_cmp){ KEY(key), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 };
    op = op_put(key, meta, meta_len, 0);
    t = (struct ac_etcd_txn_req){ &cmp, 1, &op, 1, NULL, 0 };
    /* A retry after an unknown outcome may find the channel it made
     * itself: CHANNEL_EXISTS then, as a second init would say. */
    rc = ac_etcd_txn(st->conn->e, &t, &r, 0, err);
    free(key);
    if (rc == -1)
        return -1;
    rc = r.succeeded;
    ac_etcd_txn_res_free(&r);
    if (!rc) {
        char shown[300];
        ac_err_quote(shown, sizeof shown, name, 200);
        return ac_err_set(err, AC_EXIT_GENERAL, "CHANNEL_EXISTS", "channel '%s' already exists",
                          shown);
    }
    return 0;
}

static int et_meta_read(struct ac_chan *base, struct ac_file *out, struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    memset(out, 0, sizeof *out);
    if (ch->meta) {
        /* as chan_open read it: the record is written once, by init */
        if (!(out->data = malloc(ch->meta_len + 1)))
            return et_nomem(err);
        memcpy(out->data, ch->meta, ch->meta_len);
        out->data[ch->meta_len] = '\0';
        out->len = ch->meta_len;
        return 0;
    }
    memset(&rq, 0, sizeof rq);
    rq.keys = KEY(ch->meta_key);
    if (ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, err) == -1)
        return -1;
    if (rs.nkvs == 0) {
        ac_etcd_range_res_free(&rs);
        return ac_err_sys(err, ENOENT, NULL, "could not read %s", AC_META_FILE);
    }
    out->data = rs.kvs[0].value;
    out->len = rs.kvs[0].value_len;
    rs.kvs[0].value = NULL;
    ac_etcd_range_res_free(&rs);
    return 0;
}

/* ---- messages ---- */

/* The seq and name of a message key ("<kp>m/<seq20>/<name>"); -1 when it
 * is not one. */
static int parse_msg_key(const struct et_chan *ch, const char *key, uint64_t *seq,
                         const char **name)
{
    size_t kl = strlen(ch->kp);
    const char *p = key + kl + 2;
    char *end;
    if (strncmp(key, ch->kp, kl) != 0 || strncmp(key + kl, "m/", 2) != 0)
        return -1;
    *seq = strtoull(p, &end, 10);
    if (end != p + 20 || *end != '/')
        return -1;
    *name = end + 1;
    return 0;
}

/* The seq a message name starts with ("0017-..." -> 17); 0 when none. */
static uint64_t seq_of_name(const char *name)
{
    uint64_t v = 0;
    size_t i;
    for (i = 0; name[i] >= '0' && name[i] <= '9' && i < 19; i++)
        v = v * 10 + (uint64_t)(name[i] - '0');
    return i > 0 && name[i] == '-' ? v : 0;
}

static int et_msg_list(struct ac_chan *base, int64_t after, int use_stamp,
                       struct ac_listing *out, struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    char from[24], last[24];
    char *mp = et_key(ch, "m/", (char *)NULL), *mend = NULL, *fromk = NULL, *lastk = NULL;
    char *seqk = strdup(ch->seq_key);
    struct ac_etcd_op ops[4];
    struct ac_etcd_txn_res r;
    size_t i;
    int rc = -1;

    (void)use_stamp;
    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    if (after < -1)
        after = -1;
    seq20(after >= INT64_MAX - 1 ? (uint64_t)INT64_MAX : (uint64_t)(after + 1), from);
    seq20(ch->seq > 0 ? (uint64_t)ch->seq : 0, last);
    if (mp) {
        mend = et_prefix_end(mp);
        fromk = cat(mp, from, (char *)NULL);
        lastk = cat(mp, last, "/", (char *)NULL);
    }
    if (!mp || !mend || !fromk || !lastk || !seqk) {
        et_nomem(err);
        goto out;
    }
    ops[0] = op_range(RANGE(fromk, mend), 1, 0, 0);
    ops[1] = op_range(PREFIX(mp), 0, 1, 0);
    ops[2] = op_range(KEY(seqk), 0, 0, 0);
    ops[3] = op_range(PREFIX(lastk), 1, 0, 0);
    if (read_txn(ch->st->conn, ops, 4, &r, err) == -1)
        goto out;
    ch->rev = r.revision;
    if (r.ops[2].range.nkvs == 1) {
        ch->seq = strtoll(r.ops[2].range.kvs[0].value, NULL, 10);
        ch->seq_mod = r.ops[2].range.kvs[0].mod_revision;
    }
    out->count = (size_t)r.ops[1].range.count;
    if (r.ops[0].range.nkvs && !(out->v = calloc(r.ops[0].range.nkvs, sizeof *out->v))) {
        et_nomem(err);
        goto out;
    }
    for (i = 0; i < r.ops[0].range.nkvs; i++) {
        uint64_t s;
        const char *name;
        if (parse_msg_key(ch, r.ops[0].range.kvs[i].key, &s, &name) == -1)
            continue;
        if (!(out->v[out->n].name = strdup(name))) {
            et_nomem(err);
            goto out;
        }
        out->v[out->n++].seq = s;
    }
    /* The highest message: the last listed, else the one the counter names
     * (read in the same transaction when the counter had not moved). */
    if (out->count > 0) {
        uint64_t s = 0;
        const char *name = NULL;
        if (out->n > 0) {
            s = out->v[out->n - 1].seq;
            name = out->v[out->n - 1].name;
        } else if (r.ops[3].range.nkvs > 0 && strncmp(r.ops[3].range.kvs[0].key, lastk,
                                                     strlen(lastk)) == 0 &&
                   (uint64_t)ch->seq == strtoull(last, NULL, 10)) {
            parse_msg_key(ch, r.ops[3].range.kvs[r.ops[3].range.nkvs - 1].key, &s, &name);
        } else {
            /* The counter moved since: one more read for the last name. */
            struct ac_etcd_range_req rq;
            struct ac_etcd_range_res rs;
            char *k;
            seq20((uint64_t)ch->seq, last);
            k = cat(mp, last, "/", (char *)NULL);
            if (!k) {
                et_nomem(err);
                goto out;
            }
            memset(&rq, 0, sizeof rq);
            rq.keys = PREFIX(k);
            rq.keys_only = 1;
            rc = ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, err);
            free(k);
            if (rc == -1)
                goto out;
            rc = -1;
            if (rs.nkvs > 0 && parse_msg_key(ch, rs.kvs[rs.nkvs - 1].key, &s, &name) == 0 &&
                !(out->last_name = strdup(name))) {
                ac_etcd_range_res_free(&rs);
                et_nomem(err);
                goto out;
            }
            ac_etcd_range_res_free(&rs);
            name = NULL;
        }
        out->max_seq = s;
        if (name && !(out->last_name = strdup(name))) {
            et_nomem(err);
            goto out;
        }
        if (!out->last_name)
            out->max_seq = (uint64_t)ch->seq;
    }
    rc = 0;
out:
    if (rc == -1)
        ac_listing_free(out);
    ac_etcd_txn_res_free(&r);
    free(mp);
    free(mend);
    free(fromk);
    free(lastk);
    free(seqk);
    return rc;
}

/* When a message was posted: its ts line, in seconds (0: none). The
 * folder gives a file's mtime; the store keeps no times of its own. */
static int64_t msg_time(const char *text, size_t len)
{
    const char *p = text, *end = text + (len < 8192 ? len : 8192);
    int64_t us;
    int flags;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n > 4 && strncmp(p, "ts: ", 4) == 0)
            return ac_isotime_parse(p + 4, n - 4, &us, &flags) == 0 ? us / 1000000 : 0;
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}

static int take_msg(struct ac_etcd_kv *kv, struct ac_file *out)
{
    out->data = malloc(kv->value_len + 1);
    if (!out->data)
        return -1;
    memcpy(out->data, kv->value, kv->value_len);
    out->data[kv->value_len] = '\0';
    out->len = kv->value_len;
    out->mtime_sec = msg_time(out->data, out->len);
    return 0;
}

static int et_msg_read(struct ac_chan *base, const char *name, struct ac_file *out,
                       struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    uint64_t seq = seq_of_name(name);
    char s20[24], *key, *mp, *mend;
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    size_t i;

    memset(out, 0, sizeof *out);
    if (seq == 0 || strchr(name, '/'))
        return ac_err_sys(err, ENOENT, NULL, "could not read %s", name);
    seq20(seq, s20);
    key = et_key(ch, "m/", s20, "/", name, (char *)NULL);
    if (!key)
        return et_nomem(err);
    for (i = 0; i < ch->ncache; i++) {
        if (strcmp(ch->cache[i].key, key) == 0) {
            free(key);
            return take_msg(&ch->cache[i], out) == -1 ? et_nomem(err) : 0;
        }
    }
    /* Read ahead: a read of the inbox reads the messages in seq order. */
    mp = et_key(ch, "m/", (char *)NULL);
    mend = mp ? et_prefix_end(mp) : NULL;
    if (!mend) {
        free(key);
        free(mp);
        return et_nomem(err);
    }
    memset(&rq, 0, sizeof rq);
    rq.keys = RANGE(key, mend);
    rq.limit = READ_AHEAD;
    if (ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, err) == -1) {
        if (!err || !err->code || strcmp(err->code, "ETCD_REPLY_TOO_LARGE") != 0) {
            free(key);
            free(mp);
            free(mend);
            return -1;
        }
        rq.keys = KEY(key);     /* too much ahead: this one alone */
        rq.limit = 0;
        if (ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, err) == -1) {
            free(key);
            free(mp);
            free(mend);
            return -1;
        }
    }
    free(mp);
    free(mend);
    if (rs.nkvs == 0 || strcmp(rs.kvs[0].key, key) != 0) {
        free(key);
        ac_etcd_range_res_free(&rs);
        return ac_err_sys(err, ENOENT, NULL, "could not read %s", name);
    }
    free(key);
    if (take_msg(&rs.kvs[0], out) == -1) {
        ac_etcd_range_res_free(&rs);
        return et_nomem(err);
    }
    cache_drop(ch);
    ch->cache = rs.kvs;         /* the rest is read ahead */
    ch->ncache = rs.nkvs;
    return 0;
}

/* One post attempt (ac_etcd_retry): see et_post. */
struct post_try {
    struct et_chan *ch;
    const struct et_post_extra *x;
    struct ac_msg_fields f;
    char token[33];
    uint64_t first;             /* the lowest seq tried: where a retry looks */
    uint64_t seq;               /* out */
    char name[256];             /* out */
    int refused;                /* out: an extra compare failed */
};

static int post_attempt(struct ac_etcd *e, void *ctx, int64_t deadline, struct ac_err *err)
{
    struct post_try *p = ctx;
    struct et_chan *ch = p->ch;
    const struct et_post_extra *x = p->x;
    size_t ncmp = 2 + (x ? x->ncmp : 0), nok = 4 + (x ? x->nops : 0);
    size_t nfail = 3 + (x ? x->nfail : 0), i;
    struct ac_etcd_cmp *cmp = calloc(ncmp, sizeof *cmp);
    struct ac_etcd_op *ok = calloc(nok, sizeof *ok), *no = calloc(nfail, sizeof *no);
    char s20[24], old20[24], first20[24], *text = NULL, *seqk, *msgk = NULL, *idk = NULL;
    char *oldk = NULL, *ip, *iend, *ifrom;
    char next[24];
    uint64_t seq = (uint64_t)ch->seq + 1;
    struct ac_etcd_txn_req t;
    struct ac_etcd_txn_res r;
    size_t len;
    int rc = -1;

    memset(&r, 0, sizeof r);
    if (p->first == 0 || seq < p->first)
        p->first = seq;
    p->f.seq = seq;
    et_msg_name(seq, p->f.from, p->f.title, p->name, sizeof p->name);
    seq20(seq, s20);
    seq20(seq > IDEM_WINDOW ? seq - IDEM_WINDOW : 0, old20);
    seq20(p->first, first20);
    snprintf(next, sizeof next, "%" PRIu64, seq);
    text = ac_msg_compose(&p->f, &len);
    seqk = strdup(ch->seq_key);
    ip = et_key(ch, "i/", (char *)NULL);
    iend = ip ? et_prefix_end(ip) : NULL;
    ifrom = ip ? cat(ip, first20, (char *)NULL) : NULL;
    if (seqk && ip) {
        msgk = et_key(ch, "m/", s20, "/", p->name, (char *)NULL);
        idk = cat(ip, s20, (char *)NULL);
        oldk = cat(ip, old20, (char *)NULL);
    }
    if (!cmp || !ok || !no || !text || !seqk || !ip || !iend || !ifrom || !msgk || !idk || !oldk) {
        et_nomem(err);
        goto out;
    }
    cmp[0] = (struct ac_etcd_cmp){ KEY(ch->meta_key), AC_ETCD_VERSION, AC_ETCD_GREATER, 0, NULL, 0 };
    if (ch->seq_mod)
        cmp[1] = (struct ac_etcd_cmp){ KEY(seqk), AC_ETCD_MOD, AC_ETCD_EQUAL, ch->seq_mod, NULL, 0 };
    else
        cmp[1] = (struct ac_etcd_cmp){ KEY(seqk), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 };
    ok[0] = op_put(seqk, next, strlen(next), 0);
    ok[1] = op_put(msgk, text, len, 0);
    ok[2] = op_put(idk, p->token, strlen(p->token), 0);
    ok[3] = et_op_delete(KEY(oldk));
    no[0] = op_range(KEY(ch->meta_key), 0, 1, 0);
    no[1] = op_range(KEY(seqk), 0, 0, 0);
    no[2] = op_range(RANGE(ifrom, iend), 0, 0, 64);
    if (x) {
        memcpy(cmp + 2, x->cmp, x->ncmp * sizeof *cmp);
        memcpy(ok + 4, x->ops, x->nops * sizeof *ok);
        memcpy(no + 3, x->fail_ops, x->nfail * sizeof *no);
    }
    if (seq <= IDEM_WINDOW)
        nok--;                      /* nothing that old to forget */
    if (seq <= IDEM_WINDOW && x && x->nops)
        memmove(ok + 3, ok + 4, x->nops * sizeof *ok);
    t = (struct ac_etcd_txn_req){ cmp, ncmp, ok, nok, no, nfail };
    if (ac_etcd_txn(e, &t, &r, deadline, err) == -1)
        goto out;
    if (r.succeeded) {
        ch->seq = (int64_t)seq;
        ch->seq_mod = r.revision;
        p->seq = seq;
        rc = 1;
        goto out;
    }
    if (r.ops[0].range.count == 0) {
        rc = et_not_found(ch->base.store, ch->base.name, err);
        goto out;
    }
    /* An earlier attempt whose answer was lost may have committed. */
    for (i = 0; i < r.ops[2].range.nkvs; i++) {
        const struct ac_etcd_kv *kv = &r.ops[2].range.kvs[i];
        if (kv->value_len == strlen(p->token) && memcmp(kv->value, p->token, kv->value_len) == 0) {
            p->seq = strtoull(kv->key + strlen(ip), NULL, 10);
            et_msg_name(p->seq, p->f.from, p->f.title, p->name, sizeof p->name);
            rc = 1;
            goto out;
        }
    }
    if (r.ops[1].range.nkvs == 1) {
        ch->seq = strtoll(r.ops[1].range.kvs[0].value, NULL, 10);
        ch->seq_mod = r.ops[1].range.kvs[0].mod_revision;
    } else {
        ch->seq = 0;
        ch->seq_mod = 0;
    }
    if (x && x->still_holds && !x->still_holds(x->ctx, r.ops + 3)) {
        p->refused = 1;
        rc = 1;
        goto out;
    }
    rc = 0;                         /* only the counter moved: again */
out:
    ac_etcd_txn_res_free(&r);
    free(cmp);
    free(ok);
    free(no);
    free(text);
    free(seqk);
    free(msgk);
    free(idk);
    free(oldk);
    free(ip);
    free(iend);
    free(ifrom);
    return rc;
}

int et_post(struct et_chan *ch, const struct ac_post_req *req, const struct et_post_extra *x,
            struct ac_post_result *out, struct ac_err *err)
{
    struct post_try p;
    char ts[AC_ISO_MAX];

    memset(&p, 0, sizeof p);
    out->published = 0;
    if (req->nextra > 0) {
        char why[512];
        if (ac_fm_extra_check(req->extra, req->nextra, why, sizeof why) == -1)
            return ac_err_set(err, AC_EXIT_GENERAL, "MESSAGE_INVALID_FIELD", "%s", why);
    }
    if (ac_uuid4_hex(p.token) == -1)
        return ac_err_sys(err, errno, NULL, "could not make an idempotency token");
    ac_clock_iso_now(ts, 0);
    p.ch = ch;
    p.x = x;
    p.f.from = req->from;
    p.f.to = req->to;
    p.f.reply_to = req->reply_to;
    p.f.channel = ch->base.name;
    p.f.ts = req->ts ? req->ts : ts;
    p.f.status = req->status;
    p.f.title = req->title;
    p.f.body = req->body;
    p.f.body_len = req->body_len;
    p.f.extra = req->extra;
    p.f.nextra = req->nextra;
    et_lease_tend(ch->st->conn);
    if (ac_etcd_retry(ch->st->conn->e, post_attempt, &p, 0, NULL, err) == -1)
        return -1;
    if (p.refused)
        return 1;
    out->seq = p.seq;
    snprintf(out->name, sizeof out->name, "%s", p.name);
    out->published = 1;
    return 0;
}

static int et_msg_post(struct ac_chan *base, const struct ac_post_req *req,
                       struct ac_post_result *out, struct ac_err *err)
{
    return et_post(et_chan(base), req, NULL, out, err) == -1 ? -1 : 0;
}

/* ---- cursors: "<seq> <mtime µs>" ---- */

static int64_t parse_cursor(const char *v, size_t len, int64_t *mtime_us)
{
    size_t a, b, sp;
    int64_t n = 0;
    for (sp = 0; sp < len && v[sp] != ' '; sp++)
        ;
    ac_py_strip(v, sp, &a, &b);
    if (ac_py_int_parse(v + a, b - a, &n) == -1)
        n = 0;
    if (mtime_us)
        *mtime_us = sp < len ? strtoll(v + sp + 1, NULL, 10) : 0;
    return n;
}

/* The cursor the agent's lock read, when it is still held. */
static int cursor_cached(const struct et_chan *ch, const char *agent)
{
    return ch->cur_agent && strcmp(ch->cur_agent, agent) == 0;
}

static int64_t et_cursor_get(struct ac_chan *base, const char *agent, int64_t *mtime_us)
{
    struct et_chan *ch = et_chan(base);
    char *key;
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    struct ac_err err = AC_ERR_INIT;
    int64_t v = 0;
    if (cursor_cached(ch, agent)) {
        if (mtime_us)
            *mtime_us = ch->cur_mtime;
        return ch->cur_value;
    }
    key = et_key(ch, "cur/", agent, (char *)NULL);
    if (!key)
        return 0;
    memset(&rq, 0, sizeof rq);
    rq.keys = KEY(key);
    if (ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, &err) == 0) {
        if (rs.nkvs == 1)
            v = parse_cursor(rs.kvs[0].value, rs.kvs[0].value_len, mtime_us);
        ac_etcd_range_res_free(&rs);
    }
    free(key);
    return v;
}

static int cursor_text(int64_t value, char out[64])
{
    return snprintf(out, 64, "%" PRId64 " %" PRId64, value, ac_isotime_now_us());
}

static int et_cursor_set(struct ac_chan *base, const char *agent, int64_t value,
                         struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    char *key = et_key(ch, "cur/", agent, (char *)NULL), text[64];
    int rc;
    if (!key)
        return et_nomem(err);
    cursor_text(value, text);
    /* A put with the same value is harmless: retried on an unknown outcome. */
    rc = ac_etcd_put(ch->st->conn->e, key, 0, text, strlen(text), 0, NULL, 0, err);
    if (rc == -1 && ac_etcd_transient(err))
        rc = ac_etcd_put(ch->st->conn->e, key, 0, text, strlen(text), 0, NULL, 0, err);
    free(key);
    if (cursor_cached(ch, agent)) {     /* its mod revision is unknown now */
        free(ch->cur_agent);
        ch->cur_agent = NULL;
    }
    return rc;
}

struct advance_try {
    struct et_chan *ch;
    const char *agent;
    const char *key;
    const int64_t *expected;
    int64_t value;
};

static int advance_attempt(struct ac_etcd *e, void *ctx, int64_t deadline, struct ac_err *err)
{
    struct advance_try *a = ctx;
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    struct ac_etcd_cmp cmp;
    struct ac_etcd_op op;
    struct ac_etcd_txn_req t;
    struct ac_etcd_txn_res r;
    int64_t now = 0, mod = 0, value = a->value;
    char text[64];
    int rc;

    if (cursor_cached(a->ch, a->agent)) {
        /* read by the lock's transaction: compared below all the same */
        now = a->ch->cur_value;
        mod = a->ch->cur_mod;
        free(a->ch->cur_agent);
        a->ch->cur_agent = NULL;
    } else {
        memset(&rq, 0, sizeof rq);
        rq.keys = KEY(a->key);
        if (ac_etcd_range(e, &rq, &rs, deadline, err) == -1)
            return -1;
        if (rs.nkvs == 1) {
            now = parse_cursor(rs.kvs[0].value, rs.kvs[0].value_len, NULL);
            mod = rs.kvs[0].mod_revision;
        }
        ac_etcd_range_res_free(&rs);
    }
    /* Someone moved it since the scan (or nobody scanned): never back. */
    if ((!a->expected || now != *a->expected) && now > value)
        value = now;
    cursor_text(value, text);
    cmp = (struct ac_etcd_cmp){ KEY(a->key), mod ? AC_ETCD_MOD : AC_ETCD_VERSION, AC_ETCD_EQUAL,
                                mod, NULL, 0 };
    op = op_put(a->key, text, strlen(text), 0);
    t = (struct ac_etcd_txn_req){ &cmp, 1, &op, 1, NULL, 0 };
    if (ac_etcd_txn(e, &t, &r, deadline, err) == -1)
        return -1;
    rc = r.succeeded;
    ac_etcd_txn_res_free(&r);
    return rc;
}

static int et_cursor_advance(struct ac_chan *base, const char *agent, const int64_t *expected,
                             int64_t value, struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    struct advance_try a = { ch, agent, et_key(ch, "cur/", agent, (char *)NULL), expected, value };
    int rc;
    if (!a.key)
        return et_nomem(err);
    rc = ac_etcd_retry(ch->st->conn->e, advance_attempt, &a, 0, NULL, err);
    free((char *)a.key);
    return rc;
}

/* ---- mutexes ---- */

/* Take mutex x/<part><name>; `read` (may be NULL) is a key the lock's
 * transaction reads too (*got, freed by the caller with
 * ac_etcd_txn_res_free, its ops[1]). */
static int et_mutex_take(struct et_chan *ch, const char *part, const char *name,
                         int64_t deadline_ns, int fence, const char *read,
                         struct ac_etcd_txn_res *got, struct ac_mutex **out, struct ac_err *err)
{
    struct et_conn *c = ch->st->conn;
    struct et_mutex *m = calloc(1, sizeof *m);
    unsigned k = 0;

    *out = NULL;
    if (!m || !(m->key = et_key(ch, "x/", part, name, (char *)NULL))) {
        free(m);
        return et_nomem(err);
    }
    for (;;) {
        struct ac_etcd_cmp cmp = { KEY(m->key), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 };
        struct ac_etcd_op op[2];
        struct ac_etcd_txn_req t;
        struct ac_etcd_txn_res r;
        struct ac_err terr = AC_ERR_INIT;
        int64_t now, pause;
        int gotit;

        if (lease_ensure(c, err) == -1)
            goto fail;
        op[0] = op_put(m->key, ch->st->base.root, 0, c->lease);
        op[0].value_len = strlen(op[0].value);
        op[1] = op_range(KEY(read ? read : m->key), 0, 0, 0);
        t = (struct ac_etcd_txn_req){ &cmp, 1, op, read ? 2 : 1, NULL, 0 };
        if (ac_etcd_txn(c->e, &t, &r, 0, &terr) == -1) {
            if (terr.code && strcmp(terr.code, "ETCD_LEASE_NOT_FOUND") == 0) {
                c->lease = 0;   /* expired while idle: a new one */
                continue;
            }
            if (!ac_etcd_transient(&terr)) {
                if (err)
                    *err = terr;
                goto fail;
            }
            /* Unknown: it may be ours now; the next try sees the key and
             * waits, and the lease ends a lock we never knew we had. */
            gotit = 0;
        } else {
            gotit = r.succeeded;
            if (gotit)
                m->base.generation = (uint64_t)r.revision;
            if (gotit && read && got)
                *got = r;               /* the caller's */
            else
                ac_etcd_txn_res_free(&r);
        }
        if (gotit)
            break;
        now = ac_clock_mono_ns();
        if (deadline_ns == 0) {
            free(m->key);
            free(m);
            return AC_MUTEX_BUSY;
        }
        if (now >= deadline_ns) {
            free(m->key);
            free(m);
            return AC_MUTEX_TIMEOUT;
        }
        if (ac_clock_interrupted()) {
            ac_err_sys(err, EINTR, NULL, "could not lock %s", m->key);
            goto fail;
        }
        pause = (int64_t)1000000 << (k < 6 ? k : 6);
        if (pause > MUTEX_POLL_CAP_NS)
            pause = MUTEX_POLL_CAP_NS;
        pause = pause / 2 + (int64_t)ac_etcd_random(c->e, (uint64_t)pause / 2 + 1);
        if (deadline_ns - now < pause)
            pause = deadline_ns - now;
        k++;
        if (ac_clock_sleep_ns(pause) == -1 || ac_clock_interrupted()) {
            ac_err_sys(err, EINTR, NULL, "could not lock %s", m->key);
            goto fail;
        }
    }
    m->conn = c;
    c->refs++;
    c->nheld++;
    m->ch = ch;
    m->fence = fence;
    m->next = ch->held;
    ch->held = m;
    *out = &m->base;
    return 0;
fail:
    free(m->key);
    free(m);
    return -1;
}

static int et_mutex_acquire(struct ac_chan *base, const char *name, int64_t deadline_ns, int flags,
                            struct ac_mutex **out, struct ac_err *err)
{
    (void)flags;        /* nothing is left behind to find: EXISTING is plain */
    return et_mutex_take(et_chan(base), "", name ? name : "_channel", deadline_ns, 1, NULL, NULL, out,
                         err);
}

static void et_mutex_release(struct ac_mutex *base)
{
    struct et_mutex *m = (struct et_mutex *)base;
    struct et_conn *c = m->conn;
    struct ac_etcd_cmp cmp = { KEY(m->key), AC_ETCD_CREATE, AC_ETCD_EQUAL,
                               (int64_t)m->base.generation, NULL, 0 };
    struct ac_etcd_op op = et_op_delete(KEY(m->key));
    struct ac_etcd_txn_req t = { &cmp, 1, &op, 1, NULL, 0 };
    struct ac_etcd_txn_res r;
    struct ac_err ignored = AC_ERR_INIT;

    if (m->ch) {
        struct et_mutex **pp;
        for (pp = &m->ch->held; *pp; pp = &(*pp)->next) {
            if (*pp == m) {
                *pp = m->next;
                break;
            }
        }
        if (!m->fence && m->ch->cur_agent) {     /* a cursor lock: its read is over */
            free(m->ch->cur_agent);
            m->ch->cur_agent = NULL;
        }
    }
    if (--c->nheld == 0 && c->lease &&
        ac_etcd_lease_revoke(c->e, c->lease, ac_etcd_deadline_in(2000), &ignored) == 0) {
        /* The last lock held: ending the session lease removes its key in
         * the same round trip (a later lock grants a new lease). */
        c->lease = 0;
    } else if (ac_etcd_txn(c->e, &t, &r, ac_etcd_deadline_in(2000), &ignored) == 0) {
        /* Only ours (its create revision): a lock that expired and went to
         * someone else stays theirs. Best effort: the lease ends it anyway. */
        ac_etcd_txn_res_free(&r);
    }
    free(m->key);
    free(m);
    conn_unref(c);
}

size_t et_fence_count(const struct et_chan *ch)
{
    const struct et_mutex *m;
    size_t n = 0;
    for (m = ch->held; m; m = m->next)
        n += m->fence != 0;
    return n;
}

size_t et_fence_add(const struct et_chan *ch, struct ac_etcd_cmp *cmp)
{
    const struct et_mutex *m;
    size_t n = 0;
    for (m = ch->held; m; m = m->next)
        if (m->fence)
            cmp[n++] = (struct ac_etcd_cmp){ KEY(m->key), AC_ETCD_CREATE, AC_ETCD_EQUAL,
                                             (int64_t)m->base.generation, NULL, 0 };
    return n;
}

size_t et_fence_ranges(const struct et_chan *ch, struct ac_etcd_op *ops)
{
    const struct et_mutex *m;
    size_t n = 0;
    for (m = ch->held; m; m = m->next)
        if (m->fence)
            ops[n++] = op_range(KEY(m->key), 1, 0, 0);
    return n;
}

int et_fence_lost(const struct et_chan *ch, const struct ac_etcd_txn_res *r, size_t first)
{
    const struct et_mutex *m;
    size_t i = first;
    for (m = ch->held; m; m = m->next) {
        if (!m->fence)
            continue;
        if (i >= r->nops || r->ops[i].range.nkvs != 1 ||
            r->ops[i].range.kvs[0].create_revision != (int64_t)m->base.generation)
            return 1;
        i++;
    }
    return 0;
}

static int et_cursor_lock(struct ac_chan *base, const char *agent, struct ac_mutex **out,
                          struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    struct ac_err merr = AC_ERR_INIT;
    struct ac_etcd_txn_res got;
    char *key = et_key(ch, "cur/", agent, (char *)NULL);
    int rc;
    if (!key)
        return et_nomem(err);
    memset(&got, 0, sizeof got);
    rc = et_mutex_take(ch, "cur/", agent, ac_clock_mono_ns() + AC_MUTEX_WAIT_NS, 0, key, &got, out,
                       &merr);
    free(key);
    if (rc == 0) {
        /* the cursor as of the lock: cursor_get and cursor_advance use it */
        free(ch->cur_agent);
        ch->cur_agent = got.nops == 2 ? strdup(agent) : NULL;
        ch->cur_value = ch->cur_mod = ch->cur_mtime = 0;
        if (ch->cur_agent && got.ops[1].range.nkvs == 1) {
            ch->cur_value = parse_cursor(got.ops[1].range.kvs[0].value,
                                         got.ops[1].range.kvs[0].value_len, &ch->cur_mtime);
            ch->cur_mod = got.ops[1].range.kvs[0].mod_revision;
        }
        ac_etcd_txn_res_free(&got);
        return 0;
    }
    if (rc == AC_MUTEX_TIMEOUT)
        return ac_err_set(err, AC_EXIT_GENERAL, "CURSOR_BUSY",
                          "another read of this agent's cursor held it for 10 s");
    if (merr.sys_errno == EINTR)
        return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
    if (err)
        *err = merr;
    return -1;
}

/* ---- change notification ---- */

struct ac_watch {
    struct ac_etcd_watch *w;
    struct et_chan *ch;         /* the channel, which outlives its watches */
    int messages;               /* a watch of the messages: events feed msg_read */
    char *key;
    char *end;
};

static struct ac_watch *et_watch_open(struct ac_chan *base, int what, uint64_t seq)
{
    struct et_chan *ch = et_chan(base);
    struct ac_watch *w = calloc(1, sizeof *w);
    struct ac_etcd_watch_req rq;
    struct ac_err err = AC_ERR_INIT;
    char s[32];

    if (!w)
        return NULL;
    memset(&rq, 0, sizeof rq);
    if (what & (AC_WATCH_ACKS | AC_WATCH_CURSORS)) {
        /* acks of seq and cursors: every key from ".acks/<seq>/" to the
         * cursors is one range; watch the channel and let the caller look. */
        w->key = strdup(ch->kp);
        w->end = et_prefix_end(ch->kp);
        (void)seq;
        (void)s;
    } else {
        w->key = et_key(ch, "m/", (char *)NULL);
        w->end = w->key ? et_prefix_end(w->key) : NULL;
    }
    if (!w->key || !w->end) {
        free(w->key);
        free(w->end);
        free(w);
        return NULL;
    }
    w->ch = ch;
    w->messages = !(what & (AC_WATCH_ACKS | AC_WATCH_CURSORS));
    /* A wait that wakes up takes the reader's cursor lock at once: have
     * its session lease ready (kept alive while waiting), which takes that
     * round trip off the wake-up. Best effort. */
    if (w->messages) {
        struct ac_err ignored = AC_ERR_INIT;
        lease_ensure(ch->st->conn, &ignored);
    }
    rq.keys = RANGE(w->key, w->end);
    /* From just after the last listing: what was published since is not
     * missed, even when the watch starts later. */
    rq.start_revision = ch->rev > 0 ? ch->rev + 1 : 0;
    rq.no_delete = 1;
    if (ac_etcd_watch_open(ch->st->conn->e, &rq, &w->w, 0, &err) == -1) {
        free(w->key);
        free(w->end);
        free(w);
        return NULL;            /* the caller polls */
    }
    return w;
}

/* watch_wait, and watch_wait_fd with fd >= 0: 2 when fd became readable
 * before any change (store.h). */
static int et_watch_wait_fd(struct ac_watch *w, int64_t timeout_ns, int fd)
{
    struct ac_etcd_events ev;
    struct ac_err err = AC_ERR_INIT;
    int r;
    if (timeout_ns < 0)
        timeout_ns = 0;
    /* Wake at least every third of the lease's TTL to keep it alive (a
     * pause of the caller's loop, not a change: 1 would rescan; the
     * caller's nap comes back as 0 "timed out", and it naps again). */
    if (w->ch->st->conn->lease) {
        int64_t slice = w->ch->st->conn->lease_ttl * 1000000000LL / 3;
        et_lease_tend(w->ch->st->conn);
        if (timeout_ns > slice)
            timeout_ns = slice;
    }
    r = ac_etcd_watch_next_fd(w->w, ac_clock_mono_ns() + (timeout_ns > 0 ? timeout_ns : 1), fd, &ev,
                              &err);
    if (r == 2)
        return 2;
    if (r == 1) {
        /* The new messages came with the events: msg_read finds them
         * without a round trip (the caller lists, then reads them). */
        size_t i, n = 0;
        struct ac_etcd_kv *kvs = w->messages ? calloc(ev.nevents, sizeof *kvs) : NULL;
        for (i = 0; kvs && i < ev.nevents; i++) {
            if (ev.events[i].type == AC_ETCD_EVENT_PUT && ev.events[i].kv.value) {
                kvs[n++] = ev.events[i].kv;
                memset(&ev.events[i].kv, 0, sizeof ev.events[i].kv);
            }
        }
        if (n > 0) {
            cache_drop(w->ch);
            w->ch->cache = kvs;
            w->ch->ncache = n;
        } else {
            free(kvs);
        }
        ac_etcd_events_free(&ev);
        return 1;
    }
    if (r == 0)
        return 0;
    if (err.code && strcmp(err.code, "ETCD_INTERRUPTED") == 0) {
        errno = EINTR;
        return -1;
    }
    /* The watch broke (compaction, no member): the caller polls. */
    errno = EIO;
    return -1;
}

static int et_watch_wait(struct ac_watch *w, int64_t timeout_ns)
{
    return et_watch_wait_fd(w, timeout_ns, -1);
}

static void et_watch_close(struct ac_watch *w)
{
    ac_etcd_watch_close(w->w);
    free(w->key);
    free(w->end);
    free(w);
}

/* ---- legacy markers ---- */

static int et_marker_claim(struct ac_chan *base, const char *marker, const char *agent,
                           char *dest, size_t dest_size, struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    char slug[AC_SLUG_MAX + 1], shown[300];
    size_t stem = strlen(marker) - 3;
    char *mk = NULL, *dk = NULL;
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    int done = 0;

    ac_slugify(agent, strlen(agent), slug);
    if (stem + strlen(slug) + 13 > dest_size)
        return ac_err_set(err, AC_EXIT_GENERAL, "CLAIM_INVALID_NAME", "task name too long");
    snprintf(dest, dest_size, "%.*s.CLAIMED-%s.md", (int)stem, marker, slug);
    mk = et_key(ch, "k/", marker, (char *)NULL);
    dk = et_key(ch, "k/", dest, (char *)NULL);
    if (!mk || !dk) {
        free(mk);
        free(dk);
        return et_nomem(err);
    }
    memset(&rq, 0, sizeof rq);
    rq.keys = KEY(mk);
    if (ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, err) == -1) {
        free(mk);
        free(dk);
        return -1;
    }
    if (rs.nkvs == 1) {
        /* The rename: the marker goes and its bytes come back under the
         * claimed name, if nobody renamed it first. */
        struct ac_etcd_cmp cmp[2] = {
            { KEY(mk), AC_ETCD_MOD, AC_ETCD_EQUAL, rs.kvs[0].mod_revision, NULL, 0 },
            { KEY(dk), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 } };
        struct ac_etcd_op ops[2] = { et_op_delete(KEY(mk)),
                                     op_put(dk, rs.kvs[0].value, rs.kvs[0].value_len, 0) };
        struct ac_etcd_txn_req t = { cmp, 2, ops, 2, NULL, 0 };
        struct ac_etcd_txn_res r;
        if (ac_etcd_txn(ch->st->conn->e, &t, &r, 0, err) == -1) {
            ac_etcd_range_res_free(&rs);
            free(mk);
            free(dk);
            return -1;
        }
        done = r.succeeded;
        ac_etcd_txn_res_free(&r);
    }
    ac_etcd_range_res_free(&rs);
    free(mk);
    free(dk);
    if (!done) {
        ac_err_quote(shown, sizeof shown, marker, 200);
        return ac_err_set(err, AC_EXIT_CLAIM_LOST, "CLAIM_LOST",
                          "task '%s' already claimed or missing (lost the race)", shown);
    }
    return 0;
}

/* ---- blobs, workspace paths, debris ---- */

static int et_blob_write(struct ac_chan *base, const char *name, const char *data, size_t len,
                         struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    char *key;
    int rc;
    if (!name[0] || name[0] == '.' || strchr(name, '/'))
        return ac_err_sys(err, EINVAL, NULL, "could not write %s", name);
    key = et_key(ch, "b/", name, (char *)NULL);
    if (!key)
        return et_nomem(err);
    rc = ac_etcd_put(ch->st->conn->e, key, 0, data, len, 0, NULL, 0, err);
    if (rc == -1 && ac_etcd_transient(err))     /* a whole replacement: idempotent */
        rc = ac_etcd_put(ch->st->conn->e, key, 0, data, len, 0, NULL, 0, err);
    free(key);
    return rc;
}

/* The workspace of a channel in etcd holds no files: a path is taken
 * lexically ("." and empty segments collapse, a trailing '/' goes), as the
 * folder resolves a path none of whose components exist. */
static int et_path_resolve(struct ac_chan *base, const char *path, char *out, size_t outsz,
                           int *is_dir, const char **why)
{
    const char *p = path;
    size_t n = 0;
    (void)base;
    *is_dir = 0;
    while (*p) {
        size_t seg = strcspn(p, "/");
        if (seg > 0 && !(seg == 1 && p[0] == '.')) {
            if (n + (n > 0) + seg + 1 > outsz) {
                *why = "path is too long";
                return -1;
            }
            if (n > 0)
                out[n++] = '/';
            memcpy(out + n, p, seg);
            n += seg;
        }
        p += seg;
        while (*p == '/')
            p++;
    }
    if (n == 0) {
        if (outsz < 2) {
            *why = "path is too long";
            return -1;
        }
        out[n++] = '.';
    }
    out[n] = '\0';
    return 0;
}

/* ---- copying a channel (store.h msg_put) ---- */

struct put_try {
    struct et_chan *ch;
    uint64_t seq;
    const char *key, *range, *data;
    size_t len;
    int taken;                  /* out */
};

/* One attempt: the seq free (no key under m/<seq>/), the counter as read:
 * the message and the counter raised to its seq, in one transaction. */
static int put_attempt(struct ac_etcd *e, void *ctx, int64_t deadline, struct ac_err *err)
{
    struct put_try *p = ctx;
    struct et_chan *ch = p->ch;
    char *seqk = strdup(ch->seq_key), next[24];
    struct ac_etcd_cmp cmp[3];
    struct ac_etcd_op ok[2], no[3];
    struct ac_etcd_txn_req t;
    struct ac_etcd_txn_res r;
    uint64_t high = (uint64_t)ch->seq > p->seq ? (uint64_t)ch->seq : p->seq;
    int rc;

    if (!seqk)
        return et_nomem(err);
    snprintf(next, sizeof next, "%" PRIu64, high);
    cmp[0] = (struct ac_etcd_cmp){ KEY(ch->meta_key), AC_ETCD_VERSION, AC_ETCD_GREATER, 0, NULL, 0 };
    cmp[1] = (struct ac_etcd_cmp){ PREFIX(p->range), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 };
    cmp[2] = (struct ac_etcd_cmp){ KEY(seqk), ch->seq_mod ? AC_ETCD_MOD : AC_ETCD_VERSION,
                                   AC_ETCD_EQUAL, ch->seq_mod, NULL, 0 };
    ok[0] = op_put(seqk, next, strlen(next), 0);
    ok[1] = op_put(p->key, p->data, p->len, 0);
    no[0] = op_range(KEY(ch->meta_key), 0, 1, 0);
    no[1] = op_range(PREFIX(p->range), 0, 0, 2);
    no[2] = op_range(KEY(seqk), 0, 0, 0);
    t = (struct ac_etcd_txn_req){ cmp, 3, ok, 2, no, 3 };
    rc = ac_etcd_txn(e, &t, &r, deadline, err);
    free(seqk);
    if (rc == -1)
        return -1;
    if (r.succeeded) {
        ch->seq = (int64_t)high;
        ch->seq_mod = r.revision;
        rc = 1;
    } else if (r.ops[0].range.count == 0) {
        rc = et_not_found(ch->base.store, ch->base.name, err);
    } else if (r.ops[1].range.count > 0) {
        /* taken; by this very copy when an earlier attempt's answer was lost */
        const struct ac_etcd_kv *kv = &r.ops[1].range.kvs[0];
        p->taken = !(r.ops[1].range.count == 1 && strcmp(kv->key, p->key) == 0 &&
                     kv->value_len == p->len && memcmp(kv->value, p->data, p->len) == 0);
        rc = 1;
    } else {
        ch->seq = r.ops[2].range.nkvs ? strtoll(r.ops[2].range.kvs[0].value, NULL, 10) : 0;
        ch->seq_mod = r.ops[2].range.nkvs ? r.ops[2].range.kvs[0].mod_revision : 0;
        rc = 0;
    }
    ac_etcd_txn_res_free(&r);
    return rc;
}

static int et_msg_put(struct ac_chan *base, const char *name, const char *data, size_t len,
                      struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    struct put_try p;
    char s20[24];
    uint64_t seq = seq_of_name(name);
    size_t nl = strlen(name);
    int rc;

    if (seq == 0 || strchr(name, '/') || nl < 4 || strcmp(name + nl - 3, ".md") != 0)
        return ac_err_sys(err, EINVAL, NULL, "could not copy message %s", name);
    seq20(seq, s20);
    memset(&p, 0, sizeof p);
    p.ch = ch;
    p.seq = seq;
    p.data = data;
    p.len = len;
    p.key = et_key(ch, "m/", s20, "/", name, (char *)NULL);
    p.range = et_key(ch, "m/", s20, "/", (char *)NULL);
    if (!p.key || !p.range) {
        rc = et_nomem(err);
    } else {
        rc = ac_etcd_retry(ch->st->conn->e, put_attempt, &p, 0, NULL, err);
        if (rc == 0 && p.taken)
            rc = ac_err_sys(err, EEXIST, NULL, "could not copy message %s: seq %" PRIu64 " is taken",
                            name, seq);
    }
    free((char *)p.key);
    free((char *)p.range);
    return rc;
}

static const struct ac_store_ops et_ops = {
    AC_STORE_VERSION,
    "etcd",
    et_destroy,
    /* version 1 */
    et_chan_names,
    et_chan_open,
    et_chan_create,
    et_chan_close,
    et_meta_read,
    et_msg_post,
    et_msg_list,
    et_msg_read,
    et_cursor_get,
    et_cursor_set,
    et_watch_open,
    et_watch_wait,
    et_watch_close,
    et_marker_claim,
    /* version 2 */
    et_rec_scan,
    et_rec_read,
    et_rec_create,
    et_rec_where,
    et_mutex_acquire,
    et_mutex_release,
    et_blob_write,
    et_path_resolve,
    NULL,                       /* sweep: nothing is left behind */
    et_fsck,
    et_batch_commit,
    NULL,                       /* pending_read: a batch is one transaction */
    NULL,
    NULL,
    et_cursor_advance,
    et_cursor_lock,
    NULL,                       /* mutex_keep: a reader leaves nothing behind */
    NULL,                       /* chan_hidden: every channel record opens */
    NULL,
    et_watch_wait_fd,
    et_msg_put,
    NULL,                       /* chan_open_bare: a channel without its record is none */
    NULL,                       /* watch_wait_many: wait --for waits on one
                                   watch at a time (wait.h) */
    NULL,                       /* watch_add: a watch of each channel */
    et_session_end,
    et_msg_trim,
};
