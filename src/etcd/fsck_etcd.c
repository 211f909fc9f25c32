/*
 * fsck_etcd.c - the etcd backend's consistency check (store.h's fsck op,
 * fsck.h's report; docs/fsck.md).
 *
 * A channel in etcd has no temps, reservations, journals or lock files, so
 * the check is about the records and their invariants, read at one store
 * revision (a consistent snapshot: no lock is needed, and a mutation in
 * flight is either wholly in it or not at all):
 *
 *   _meta.json   the channel record is an object with a list of string
 *                members and a string topic                  FSCK_BAD_META
 *   messages     UTF-8, a closed frontmatter whose seq is the key's, and a
 *                name that starts with it   FSCK_BAD_MESSAGE, FSCK_SEQ_MISMATCH
 *   the counter  at least the highest message's seq: --repair raises it
 *                (by compare-and-swap)                  FSCK_SEQHIGH_BEHIND
 *   cursors      a seq, not beyond the counter                FSCK_BAD_CURSOR
 *   tasks        every record valid and the graph too           FSCK_BAD_TASK
 *   claims       one per leased task, agreeing with it (claimrec.h), none
 *                without its task          FSCK_BAD_CLAIM, FSCK_CLAIM_MISMATCH
 *   locks        every record valid, no two overlapping
 *                                                FSCK_BAD_LOCK, FSCK_LOCK_CONFLICT
 *   acks         a JSON object under "<seq>/<agent>"              FSCK_BAD_ACK
 * Findings name the folder's paths ("tasks/t1.json"), which the records'
 * keys mirror (docs/etcd.md).
 */
#include "etcd/store_etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/buf.h"
#include "agentchat/channel.h"
#include "agentchat/claimrec.h"
#include "agentchat/fsck.h"
#include "agentchat/lockrec.h"
#include "agentchat/pystr.h"
#include "agentchat/taskrec.h"
#include "agentchat/utf8.h"

#define PAGE 256
#define PREFIX(k) ((struct ac_etcd_keys){ (k), 0, NULL, 0, 1 })

struct check {
    struct et_chan *ch;
    struct ac_fsck_report *r;
    int repair;
    int64_t rev;                /* the snapshot */
    int oom;
    struct ac_err err;          /* why the check itself could not run */
};

static int klass_of(const char *code)
{
    const char *c;
    int klass;
    size_t i;
    for (i = 0; (c = ac_fsck_code(i, &klass)) != NULL; i++)
        if (strcmp(c, code) == 0)
            return klass;
    return AC_FSCK_CORRUPT;
}

static struct ac_finding *add(struct check *c, const char *code, const char *path,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct ac_finding *add(struct check *c, const char *code, const char *path,
                              const char *fmt, ...)
{
    struct ac_fsck_report *r = c->r;
    struct ac_finding *fd;
    char shown[256], text[AC_ERR_MSG_MAX];
    va_list ap;
    if (ac_grow(&r->v, &r->cap, r->n + 1, sizeof *r->v) == -1) {
        c->oom = 1;
        return NULL;
    }
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    ac_err_quote(shown, sizeof shown, path, 200);
    fd = &r->v[r->n];
    memset(fd, 0, sizeof *fd);
    fd->code = code;
    fd->klass = klass_of(code);
    fd->path = strdup(path);
    fd->message = malloc(strlen(shown) + strlen(text) + 4);
    if (!fd->path || !fd->message) {
        free(fd->path);
        free(fd->message);
        c->oom = 1;
        return NULL;
    }
    sprintf(fd->message, "%s: %s", shown[0] ? shown : ".", text);
    r->n++;
    return fd;
}

/* Every key-value pair under `part` of the channel ("m/", "cur/", ...),
 * page by page at the snapshot's revision; fn sees each (its key without
 * the prefix's `skip` bytes). fn returns 0 to go on, -1 to stop with
 * c->err. */
typedef int (*each_fn)(struct check *c, struct ac_etcd_kv *kv, size_t skip, void *ctx);

static int each(struct check *c, const char *part, each_fn fn, void *ctx)
{
    char *pfx = et_key(c->ch, part, (char *)NULL), *end = pfx ? et_prefix_end(pfx) : NULL;
    char *from = pfx ? strdup(pfx) : NULL;
    size_t from_len = pfx ? strlen(pfx) : 0;
    int rc = 0, more = 1;

    if (!end || !from) {
        c->oom = 1;
        rc = -1;
        more = 0;
    }
    while (more && rc == 0) {
        struct ac_etcd_range_req rq;
        struct ac_etcd_range_res rs;
        size_t i;
        memset(&rq, 0, sizeof rq);
        rq.keys = (struct ac_etcd_keys){ from, from_len, end, 0, 0 };
        rq.limit = PAGE;
        rq.revision = c->rev;
        if (ac_etcd_range(c->ch->st->conn->e, &rq, &rs, 0, &c->err) == -1) {
            rc = -1;
            break;
        }
        for (i = 0; i < rs.nkvs && rc == 0; i++)
            rc = fn(c, &rs.kvs[i], strlen(pfx), ctx);
        more = rs.more && rs.nkvs > 0;
        if (more && rc == 0) {
            /* the next page: the smallest key after the last, itself + NUL */
            const struct ac_etcd_kv *last = &rs.kvs[rs.nkvs - 1];
            char *next = malloc(last->key_len + 1);
            if (!next) {
                c->oom = 1;
                rc = -1;
            } else {
                memcpy(next, last->key, last->key_len);
                next[last->key_len] = '\0';
                free(from);
                from = next;
                from_len = last->key_len + 1;
            }
        }
        ac_etcd_range_res_free(&rs);
    }
    free(pfx);
    free(end);
    free(from);
    return rc;
}

/* ---- the channel record ---- */

static void check_meta(struct check *c)
{
    struct ac_file f;
    struct ac_err ignored = AC_ERR_INIT;
    const char *problem;
    if (ac_chan_meta_read(&c->ch->base, &f, &ignored) == -1)
        return;                 /* gone since the channel was opened */
    problem = ac_meta_problem(f.data, f.len);
    ac_file_free(&f);
    if (problem)
        add(c, "FSCK_BAD_META", AC_META_FILE, "%s", problem);
}

/* ---- messages and the counter ---- */

struct msgs {
    uint64_t max_seq;
};

static int check_message(struct check *c, struct ac_etcd_kv *kv, size_t skip, void *ctx)
{
    struct msgs *m = ctx;
    const char *key = kv->key + skip, *name, *v;
    char *end, *text;
    size_t tlen, vlen;
    uint64_t seq = strtoull(key, &end, 10), fseq;
    struct ac_fm fm;

    name = end + 1;
    if (end != key + 20 || *end != '/') {
        add(c, "FSCK_BAD_MESSAGE", key, "is not a message key (m/<seq>/<name>)");
        return 0;
    }
    if (seq > m->max_seq)
        m->max_seq = seq;
    if (strtoull(name, &end, 10) != seq || *end != '-')
        add(c, "FSCK_BAD_MESSAGE", name, "its name does not start with its seq %" PRIu64, seq);
    text = ac_text_from_file(kv->value, kv->value_len, &tlen);
    if (!text || ac_fm_parse(text, tlen, &fm) == -1) {
        free(text);
        c->oom = 1;
        return -1;
    }
    if (!ac_utf8_valid(kv->value, kv->value_len))
        add(c, "FSCK_BAD_MESSAGE", name, "is not valid UTF-8");
    if (!fm.present) {
        add(c, "FSCK_BAD_MESSAGE", name, "has no closed frontmatter (a '---' block first)");
    } else if (!ac_fm_get(&fm, "seq", &v, &vlen)) {
        add(c, "FSCK_BAD_MESSAGE", name, "frontmatter has no seq field");
    } else {
        char raw[64];
        int64_t parsed;
        snprintf(raw, sizeof raw, "%.*s", (int)(vlen < 40 ? vlen : 40), v);
        if (ac_py_int_parse(raw, strlen(raw), &parsed) == -1 || parsed < 0 ||
            (fseq = (uint64_t)parsed) != seq) {
            char shown[64];
            ac_err_quote(shown, sizeof shown, raw, 40);
            add(c, "FSCK_SEQ_MISMATCH", name, "frontmatter says seq: %s, the key says %" PRIu64, shown,
                seq);
        }
    }
    ac_fm_free(&fm);
    free(text);
    return 0;
}

/* The counter against the highest message; --repair raises it. */
static void check_counter(struct check *c, uint64_t max_seq)
{
    char *key = strdup(c->ch->seq_key), hint[300] = "";
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    uint64_t seq = 0;
    int64_t mod = 0;
    struct ac_finding *fd;
    if (!key) {
        c->oom = 1;
        return;
    }
    memset(&rq, 0, sizeof rq);
    rq.keys = (struct ac_etcd_keys){ key, 0, NULL, 0, 0 };
    rq.revision = c->rev;
    if (ac_etcd_range(c->ch->st->conn->e, &rq, &rs, 0, &c->err) == -1) {
        free(key);
        return;
    }
    if (rs.nkvs == 1) {
        seq = strtoull(rs.kvs[0].value, NULL, 10);
        mod = rs.kvs[0].mod_revision;
    }
    ac_etcd_range_res_free(&rs);
    if (seq < max_seq) {
        if (!c->repair)
            snprintf(hint, sizeof hint, "; run: agent-chat fsck %s --repair", c->ch->base.name);
        fd = add(c, "FSCK_SEQHIGH_BEHIND", "seq",
                 "the counter is %" PRIu64 ", below the highest message %" PRIu64 "%s", seq, max_seq,
                 hint);
        if (fd && c->repair) {
            /* raised only if nobody posted since the snapshot */
            char v[24];
            struct ac_etcd_cmp cmp = { { key, 0, NULL, 0, 0 }, mod ? AC_ETCD_MOD : AC_ETCD_VERSION,
                                       AC_ETCD_EQUAL, mod, NULL, 0 };
            struct ac_etcd_op op;
            struct ac_etcd_txn_req t = { &cmp, 1, &op, 1, NULL, 0 };
            struct ac_etcd_txn_res tr;
            struct ac_err terr = AC_ERR_INIT;
            snprintf(v, sizeof v, "%" PRIu64, max_seq);
            memset(&op, 0, sizeof op);
            op.kind = AC_ETCD_OP_PUT;
            op.keys = cmp.keys;
            op.value = v;
            op.value_len = strlen(v);
            if (ac_etcd_txn(c->ch->st->conn->e, &t, &tr, 0, &terr) == 0) {
                if (tr.succeeded && !(fd->repaired = strdup("raised the counter")))
                    c->oom = 1;
                ac_etcd_txn_res_free(&tr);
            }
        }
    }
    c->ch->seq = (int64_t)(seq > max_seq ? seq : max_seq);
    free(key);
}

static int check_cursor(struct check *c, struct ac_etcd_kv *kv, size_t skip, void *ctx)
{
    const uint64_t *high = ctx;
    size_t sp = strcspn(kv->value, " "), a, b;
    int64_t v;
    char path[300];
    snprintf(path, sizeof path, ".cursors/%s", kv->key + skip);
    ac_py_strip(kv->value, sp, &a, &b);
    if (ac_py_int_parse(kv->value + a, b - a, &v) == -1 || v < 0)
        add(c, "FSCK_BAD_CURSOR", path, "is not a seq");
    else if ((uint64_t)v > *high)
        add(c, "FSCK_BAD_CURSOR", path, "is %" PRId64 ", beyond the highest seq %" PRIu64, v, *high);
    return 0;
}

/* ---- records ---- */

/* The records of a family at the snapshot (et_fsck sets ch->snapshot). */
static int family(struct check *c, int fam, struct ac_recset *set)
{
    memset(set, 0, sizeof *set);
    if (ac_chan_rec_scan(&c->ch->base, fam, NULL, 0, set, &c->err) == -1)
        return -1;
    return 0;
}

static void check_board(struct check *c)
{
    struct ac_recset tasks, claims;
    json_t *byid = json_object(), *ids = json_array(), *known = json_object();
    size_t i, bad = 0;
    char path[300];

    if (!byid || !ids || !known || family(c, AC_TASKS, &tasks) == -1) {
        c->oom |= !byid || !ids || !known;
        goto out0;
    }
    for (i = 0; i < tasks.n; i++) {
        const struct ac_record *r = &tasks.v[i];
        struct ac_err err = AC_ERR_INIT;
        json_t *rec = NULL;
        snprintf(path, sizeof path, "tasks/%s.json", r->name);
        json_object_set_new(known, r->name, json_true());
        if (ac_task_parse(path + 6, r->data, r->len, r->sys_errno, &rec, &err) == -1 ||
            ac_task_validate(rec, path + 6, c->ch->base.name, &c->ch->base, &err) == -1) {
            add(c, "FSCK_BAD_TASK", path, "%s: %s", err.code, err.msg);
            bad++;
        } else if (json_object_set(byid, r->name, rec) == -1 ||
                   json_array_append_new(ids, json_string(r->name)) == -1) {
            c->oom = 1;
        }
        json_decref(rec);
    }
    if (bad == 0) {
        struct ac_err err = AC_ERR_INIT;
        if (ac_task_graph_check(byid, ids, &err) == -1)
            add(c, "FSCK_BAD_TASK", "tasks", "%s: %s", err.code, err.msg);
    }
    /* every task's lease against its claim */
    for (i = 0; i < json_array_size(ids); i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        const json_t *task = json_object_get(byid, id);
        struct ac_err err = AC_ERR_INIT;
        struct ac_recset set;
        json_t *claim = NULL;
        char *name = NULL, prefix[300];
        const char *status;
        int rc;
        snprintf(prefix, sizeof prefix, "%s.", id);
        rc = ac_chan_rec_scan(&c->ch->base, AC_CLAIMS, prefix, 0, &set, &err);
        if (rc == 0) {
            rc = ac_claim_find(&set, &c->ch->base, id, c->ch->base.name, &claim, &name, &err);
            ac_recset_free(&set);
        }
        if (rc == 0 && ac_claim_consistent(task, claim, &err) == -1)
            rc = -1;
        if (rc == -1) {
            const char *code = err.code ? err.code : "IO_ERROR";
            add(c, strcmp(code, "LEASE_INCONSISTENT") == 0 ? "FSCK_CLAIM_MISMATCH" : "FSCK_BAD_CLAIM",
                "claims", "%s: %s", code, err.msg);
        } else if (claim && (status = ac_task_str(task, "status")) && strcmp(status, "in_progress") != 0) {
            snprintf(path, sizeof path, "claims/%s.json", name);
            add(c, "FSCK_CLAIM_MISMATCH", path, "task %s holds a lease but its status is %s, not in_progress",
                id, status);
        }
        json_decref(claim);
        free(name);
    }
    /* claims without their task */
    if (family(c, AC_CLAIMS, &claims) == 0) {
        for (i = 0; i < claims.n; i++) {
            json_t *v = claims.v[i].data ? json_loadb(claims.v[i].data, claims.v[i].len, 0, NULL) : NULL;
            const char *tid = json_string_value(json_object_get(v, "task_id"));
            snprintf(path, sizeof path, "claims/%s.json", claims.v[i].name);
            if (!tid)
                add(c, "FSCK_BAD_CLAIM", path, "is not a lease record");
            else if (!json_object_get(known, tid) || strncmp(claims.v[i].name, tid, strlen(tid)) != 0 ||
                     claims.v[i].name[strlen(tid)] != '.')
                add(c, "FSCK_CLAIM_MISMATCH", path,
                    "lease record of task %s, which has no task record under this name", tid);
            json_decref(v);
        }
        ac_recset_free(&claims);
    }
    ac_recset_free(&tasks);
out0:
    json_decref(byid);
    json_decref(ids);
    json_decref(known);
}

static void check_locks(struct check *c)
{
    struct ac_recset set;
    struct ac_lockrec *recs;
    size_t i, k, a, b, n = 0;
    char path[300];
    if (family(c, AC_LOCKS, &set) == -1)
        return;
    recs = calloc(set.n + 1, sizeof *recs);
    if (!recs) {
        c->oom = 1;
        ac_recset_free(&set);
        return;
    }
    for (i = 0; i < set.n; i++) {
        struct ac_err err = AC_ERR_INIT;
        snprintf(path, sizeof path, "locks/%s.json", set.v[i].name);
        if (ac_lockrec_parse(set.v[i].data, set.v[i].len, path + 6, c->ch->base.name, &recs[n], &err) == 0)
            n++;
        else
            add(c, "FSCK_BAD_LOCK", path, "%s: %s", err.code, err.msg);
    }
    /* two records covering one path: two holders */
    for (a = 0; a < n; a++)
        for (b = a + 1; b < n; b++)
            for (i = 0; i < recs[a].npaths; i++)
                for (k = 0; k < recs[b].npaths; k++)
                    if (ac_pathlock_overlaps(recs[a].paths[i].normalized, recs[b].paths[k].normalized)) {
                        snprintf(path, sizeof path, "locks/%s.json", recs[a].lock_id);
                        add(c, "FSCK_LOCK_CONFLICT", path, "%s overlaps %s of lock %s (owners %s and %s)",
                            recs[a].paths[i].normalized, recs[b].paths[k].normalized, recs[b].lock_id,
                            recs[a].owner, recs[b].owner);
                        i = recs[a].npaths;
                        break;
                    }
    for (i = 0; i < n; i++)
        ac_lockrec_free(&recs[i]);
    free(recs);
    ac_recset_free(&set);
}

static int check_ack(struct check *c, struct ac_etcd_kv *kv, size_t skip, void *ctx)
{
    json_t *v = json_loadb(kv->value, kv->value_len, 0, NULL);
    char path[400];
    (void)ctx;
    snprintf(path, sizeof path, ".acks/%s", kv->key + skip);
    if (!json_is_object(v))
        add(c, "FSCK_BAD_ACK", path, "is not a JSON object");
    json_decref(v);
    return 0;
}

int et_fsck(struct ac_chan *base, int flags, struct ac_fsck_report *r, struct ac_err *err)
{
    struct check c;
    struct msgs m = { 0 };
    struct ac_listing l;
    uint64_t high;
    char acks[64];

    memset(&c, 0, sizeof c);
    c.ch = et_chan(base);
    c.r = r;
    c.repair = (flags & AC_FSCK_REPAIR) != 0;
    /* the snapshot: the revision of a listing */
    if (ac_chan_msg_list(base, INT64_MAX - 1, 0, &l, err) == -1)
        return -1;
    ac_listing_free(&l);
    c.rev = c.ch->rev;
    c.ch->snapshot = c.rev;     /* the record scans too */
    check_meta(&c);
    if (each(&c, "m/", check_message, &m) == 0) {
        check_counter(&c, m.max_seq);
        high = (uint64_t)c.ch->seq;
        each(&c, "cur/", check_cursor, &high);
    }
    check_board(&c);
    check_locks(&c);
    snprintf(acks, sizeof acks, "r/%s/", et_family_dir(AC_ACKS));
    each(&c, acks, check_ack, NULL);
    c.ch->snapshot = 0;
    if (c.oom)
        return ac_err_sys(err, ENOMEM, NULL, "could not check channel %s", base->name);
    if (c.err.code) {
        if (err)
            *err = c.err;
        return -1;
    }
    return 0;
}
