/*
 * records_etcd.c - the record families and batches of the etcd backend
 * (store_etcd.h has the key layout).
 *
 * A record is the key P/c/<chan>/r/<dir>/<name>.json (the folder's
 * directory and file name: "tasks/t1.json", ".acks/7/bob.json"), its
 * value the record's bytes. Keys so named list in the folder's order
 * (bytewise by file name: "a-b.json" before "a.json"), and a record's
 * generation is its key's mod revision. Its creation version (store.h
 * ac_record.created: a lease's fencing generation) is its key's create
 * revision, or, when a batch handed the existing record to a new holder
 * (ac_change.grant: a holder recovering its own expired lease rewrites the
 * same claim), the mod revision of the marker key "<key>#g" that batch put:
 * the marker sorts right after its record, and is no record (".json" ends
 * every record key).
 *
 * A batch is one transaction (store.h, docs/architecture.md): a compare
 * per change (absent: version 0; else the mod revision it was read at, or
 * its bytes), a compare per fencing mutex held through the channel (its
 * key still has our create revision), the puts and deletes, and the audit
 * message with its seq and idempotency token (et_post). All of it or none
 * of it happens; nothing is ever pending.
 */
#include "etcd/store_etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/audit.h"
#include "agentchat/codec.h"

#define SUFFIX ".json"
#define SUFFIX_LEN 5
#define GRANT "#g"              /* after a record's key: its grant marker */
#define KEY(k) ((struct ac_etcd_keys){ (k), 0, NULL, 0, 0 })
#define PREFIX(k) ((struct ac_etcd_keys){ (k), 0, NULL, 0, 1 })

/* The folder's families, as they name themselves (records.c). */
static const struct {
    const char *dir;
    const char *noun;
    const char *skip;           /* first bytes that are not a record name */
    size_t cap;
} families[AC_NFAMILIES] = {
    [AC_TASKS] = { "tasks", "task record", "._", 4u << 20 },
    [AC_CLAIMS] = { "claims", "lease record", "._", 1u << 20 },
    [AC_LOCKS] = { "locks", "lock record", "._", 16u << 20 },
    [AC_ACKS] = { ".acks", "ack", ".", 64u << 10 },
};

const char *et_family_dir(int family)
{
    return families[family].dir;
}

static int stem_ok(int family, const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 255 - SUFFIX_LEN && !strchr(families[family].skip, s[0]) &&
           !strchr(s, '/');
}

/* An ack's "<seq>/" part: decimal without leading zeros; its length or 0. */
static size_t seq_part(const char *name)
{
    size_t n = strspn(name, "0123456789");
    if (n == 0 || n > 20 || name[n] != '/' || name[0] == '0')
        return 0;
    return n;
}

/* 0 when `name` is a record name of the family, else the errno a folder
 * gives for it (EINVAL; ENAMETOOLONG for one no file name holds). */
static int name_problem(int family, const char *name)
{
    size_t n;
    if (family != AC_ACKS) {
        if (stem_ok(family, name))
            return 0;
        return strlen(name) > 255 - SUFFIX_LEN ? ENAMETOOLONG : EINVAL;
    }
    n = seq_part(name);
    return n && stem_ok(family, name + n + 1) ? 0 : EINVAL;
}

/* The key of record `name`, or NULL (ENOMEM). */
static char *rec_key(const struct et_chan *ch, int family, const char *name)
{
    return et_key(ch, "r/", families[family].dir, "/", name, SUFFIX, (char *)NULL);
}

void et_rec_where(struct ac_chan *ch, int family, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s/%s/%s" SUFFIX, ch->store->root, ch->name, families[family].dir,
             name);
}

/* The record of a key-value pair whose key starts with `kp` (the family
 * part "<kp>r/<dir>/"). The value is taken from kv. */
static int take_record(struct ac_etcd_kv *kv, size_t skip, int names_only, struct ac_record *r)
{
    size_t nlen = kv->key_len - skip - SUFFIX_LEN;
    memset(r, 0, sizeof *r);
    r->name = malloc(nlen + 1);
    if (!r->name)
        return -1;
    memcpy(r->name, kv->key + skip, nlen);
    r->name[nlen] = '\0';
    r->plain = 1;
    r->generation = (uint64_t)kv->mod_revision;
    r->created = (uint64_t)kv->create_revision;
    if (!names_only) {
        r->data = kv->value;
        r->len = kv->value_len;
        kv->value = NULL;
    }
    return 0;
}

/* Is kv the grant marker of the record `prev` (the pair before it)? */
static int grant_of(const struct ac_etcd_kv *kv, const struct ac_etcd_kv *prev)
{
    size_t g = strlen(GRANT);
    return prev && kv->key_len == prev->key_len + g &&
           memcmp(kv->key, prev->key, prev->key_len) == 0 &&
           memcmp(kv->key + prev->key_len, GRANT, g) == 0;
}

int et_rec_scan(struct ac_chan *base, int family, const char *prefix, int flags,
                struct ac_recset *out, struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    char *fp, *kp;
    size_t i, skip;

    out->v = NULL;
    out->n = 0;
    if (family == AC_ACKS && (!prefix || seq_part(prefix) == 0 ||
                              prefix[seq_part(prefix) + 1] != '\0'))
        return ac_err_sys(err, EINVAL, NULL, "could not list %ss", families[family].noun);
    fp = et_key(ch, "r/", families[family].dir, "/", (char *)NULL);
    kp = fp ? et_key(ch, "r/", families[family].dir, "/", prefix ? prefix : "", (char *)NULL)
            : NULL;
    if (!kp) {
        free(fp);
        return et_nomem(err);
    }
    skip = strlen(fp);
    if (family == AC_ACKS)
        skip += strlen(prefix);     /* names are "<seq>/<agent>": put back below */
    memset(&rq, 0, sizeof rq);
    rq.keys = PREFIX(kp);
    rq.keys_only = (flags & AC_SCAN_NAMES) != 0;
    rq.revision = ch->snapshot;
    if (ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, err) == -1) {
        free(fp);
        free(kp);
        return -1;
    }
    free(kp);
    if (rs.nkvs && !(out->v = calloc(rs.nkvs, sizeof *out->v)))
        goto nomem;
    for (i = 0; i < rs.nkvs; i++) {
        struct ac_etcd_kv *kv = &rs.kvs[i];
        struct ac_record *r = &out->v[out->n];
        if (grant_of(kv, i > 0 ? &rs.kvs[i - 1] : NULL) && out->n > 0 &&
            (uint64_t)kv->mod_revision > out->v[out->n - 1].created) {
            out->v[out->n - 1].created = (uint64_t)kv->mod_revision;
            continue;
        }
        if (kv->key_len <= skip + SUFFIX_LEN ||
            memcmp(kv->key + kv->key_len - SUFFIX_LEN, SUFFIX, SUFFIX_LEN) != 0)
            continue;
        if (take_record(kv, strlen(fp), (flags & AC_SCAN_NAMES) != 0, r) == -1)
            goto nomem;
        out->n++;
        /* Names a family keeps out of its records (as the folder's glob
         * sees them) are listed only when asked for. */
        if (!(flags & AC_SCAN_HIDDEN) && family != AC_ACKS &&
            strchr(families[family].skip, r->name[0])) {
            ac_record_free(r);
            out->n--;
        }
    }
    free(fp);
    ac_etcd_range_res_free(&rs);
    return 0;
nomem:
    free(fp);
    ac_etcd_range_res_free(&rs);
    ac_recset_free(out);
    return et_nomem(err);
}

int et_rec_read(struct ac_chan *base, int family, const char *name, struct ac_record *out,
                struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    struct ac_etcd_range_req rq;
    struct ac_etcd_range_res rs;
    char *key, *end;
    int e = name_problem(family, name), rc;

    memset(out, 0, sizeof *out);
    if (e) {
        out->sys_errno = e;
        return ac_err_sys(err, e, NULL, "could not read %s %s", families[family].noun, name);
    }
    if (!(key = rec_key(ch, family, name)) || !(end = malloc(strlen(key) + 2))) {
        free(key);
        return et_nomem(err);
    }
    /* the record and its grant marker: [key, key + "#h") */
    sprintf(end, "%s%c", key, GRANT[0] + 1);
    memset(&rq, 0, sizeof rq);
    rq.keys = (struct ac_etcd_keys){ key, 0, end, 0, 0 };
    rc = ac_etcd_range(ch->st->conn->e, &rq, &rs, 0, err);
    free(end);
    if (rc == -1) {
        free(key);
        return -1;
    }
    if (rs.nkvs > 0 && strcmp(rs.kvs[0].key, key) != 0) {
        /* a marker without its record: no record */
        free(key);
        ac_etcd_range_res_free(&rs);
        out->sys_errno = ENOENT;
        return ac_err_sys(err, ENOENT, NULL, "could not read %s %s", families[family].noun, name);
    }
    free(key);
    if (rs.nkvs == 0) {
        ac_etcd_range_res_free(&rs);
        out->sys_errno = ENOENT;
        return ac_err_sys(err, ENOENT, NULL, "could not read %s %s", families[family].noun, name);
    }
    memset(out, 0, sizeof *out);
    out->name = strdup(name);
    out->data = rs.kvs[0].value;
    out->len = rs.kvs[0].value_len;
    out->plain = 1;
    out->generation = (uint64_t)rs.kvs[0].mod_revision;
    out->created = (uint64_t)rs.kvs[0].create_revision;
    if (rs.nkvs > 1 && grant_of(&rs.kvs[1], &rs.kvs[0]) &&
        (uint64_t)rs.kvs[1].mod_revision > out->created)
        out->created = (uint64_t)rs.kvs[1].mod_revision;
    rs.kvs[0].value = NULL;
    ac_etcd_range_res_free(&rs);
    if (!out->name) {
        ac_record_free(out);
        return et_nomem(err);
    }
    return 0;
}

int et_rec_create(struct ac_chan *base, int family, const char *name, const char *data,
                  size_t len, struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    struct ac_etcd_cmp cmp;
    struct ac_etcd_op op;
    struct ac_etcd_txn_req t;
    struct ac_etcd_txn_res r;
    char *key;
    int e = name_problem(family, name), rc, tries;

    if (e)
        return ac_err_sys(err, e, NULL, "could not write %s %s/%s" SUFFIX, families[family].noun,
                          families[family].dir, name);
    if (!(key = rec_key(ch, family, name)))
        return et_nomem(err);
    cmp = (struct ac_etcd_cmp){ KEY(key), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 };
    memset(&op, 0, sizeof op);
    op.kind = AC_ETCD_OP_PUT;
    op.keys = KEY(key);
    op.value = data;
    op.value_len = len;
    t = (struct ac_etcd_txn_req){ &cmp, 1, &op, 1, NULL, 0 };
    /* Create-if-absent is idempotent: after an unknown outcome the next
     * try finds ours (0: it existed), which is what the caller needs. */
    for (tries = 0;; tries++) {
        rc = ac_etcd_txn(ch->st->conn->e, &t, &r, 0, err);
        if (rc == 0 || tries == 2 || !ac_etcd_transient(err))
            break;
    }
    free(key);
    if (rc == -1)
        return -1;
    rc = r.succeeded ? 1 : 0;
    ac_etcd_txn_res_free(&r);
    return rc;
}

/* ---- batches ---- */

struct batch {
    struct et_chan *ch;
    const struct ac_batch *b;
    char **keys;                /* per change */
    size_t nfence;
    int changed;                /* out: a record differs from its before */
    int fenced;                 /* out: a held mutex was lost */
    int created;                /* out: a record created meanwhile (TASK) */
};

/* Does the record read in the failure branch still hold its `before`? */
static int holds(const struct ac_change *c, const struct ac_etcd_range_res *r)
{
    if (!c->before)
        return r->nkvs == 0;
    if (r->nkvs != 1)
        return 0;
    if (c->before_generation)
        return (uint64_t)r->kvs[0].mod_revision == c->before_generation;
    return r->kvs[0].value_len == c->before_len &&
           memcmp(r->kvs[0].value, c->before, c->before_len) == 0;
}

static int batch_still_holds(void *ctx, const struct ac_etcd_op_res *res)
{
    struct batch *bt = ctx;
    size_t i, n = bt->b->nchanges;
    struct ac_etcd_txn_res fake;
    for (i = 0; i < n; i++) {
        if (!holds(&bt->b->changes[i], &res[i].range)) {
            bt->changed = 1;
            if (!bt->b->changes[i].before)
                bt->created = 1;
        }
    }
    /* et_fence_lost reads a result array: hand it the fence part. */
    fake.ops = (struct ac_etcd_op_res *)res;
    fake.nops = n + bt->nfence;
    if (et_fence_lost(bt->ch, &fake, n))
        bt->fenced = 1;
    return !bt->changed && !bt->fenced;
}

/* The refusal of a batch whose records or mutex moved under it. */
static int refused(const struct batch *bt, struct ac_err *err)
{
    const struct ac_batch *b = bt->b;
    const char *what = bt->fenced ? "the lock this command held expired and was taken over"
                                  : "its records changed after this command read them";
    if (b->kind == AC_BATCH_TASK && bt->created && !bt->fenced)
        return ac_err_code(err, "TASK_ALREADY_EXISTS", "task record already exists: %s",
                           b->subject ? b->subject : "");
    if (b->kind == AC_BATCH_PATHLOCK)
        return ac_err_code(err, "PATH_LOCK_FENCED",
                           "lock %s was not changed: %s (a stale holder); run the command again",
                           b->subject ? b->subject : "", what);
    return ac_err_code(err, b->kind == AC_BATCH_LEASE ? "LEASE_FENCED" : "TASK_FENCED",
                       "task %s was not changed: %s (a stale holder); run the command again",
                       b->subject ? b->subject : "", what);
}

int et_batch_commit(struct ac_chan *base, const struct ac_batch *b, struct ac_err *err)
{
    struct et_chan *ch = et_chan(base);
    size_t n = b->nchanges, nf = et_fence_count(ch), i;
    struct ac_etcd_cmp *cmp = calloc(n + nf + 1, sizeof *cmp);
    struct ac_etcd_op *ops = calloc(2 * n + 1, sizeof *ops), *fail = calloc(n + nf + 1, sizeof *fail);
    char **keys = calloc(2 * n + 1, sizeof *keys), *title = NULL, *text = NULL;
    size_t nops = n;
    struct batch bt;
    struct et_post_extra x;
    struct ac_post_req req;
    struct ac_post_result res;
    int rc = -1;

    memset(&bt, 0, sizeof bt);
    if (!cmp || !ops || !fail || !keys) {
        et_nomem(err);
        goto out;
    }
    if (n == 0 || !b->audit || (b->kind == AC_BATCH_TASK && (n != 1 || !b->changes[0].after))) {
        ac_err_sys(err, EINVAL, b->kind == AC_BATCH_PATHLOCK ? NULL : "TASK_IO_ERROR",
                   "could not change records");
        goto out;
    }
    for (i = 0; i < n; i++) {
        const struct ac_change *c = &b->changes[i];
        int e = name_problem(c->family, c->name);
        if (e) {
            ac_err_sys(err, e, b->kind == AC_BATCH_PATHLOCK ? NULL : "TASK_IO_ERROR",
                       "could not write %s %s", families[c->family].noun, c->name);
            goto out;
        }
        if (!(keys[i] = rec_key(ch, c->family, c->name))) {
            et_nomem(err);
            goto out;
        }
        if (!c->before)
            cmp[i] = (struct ac_etcd_cmp){ KEY(keys[i]), AC_ETCD_VERSION, AC_ETCD_EQUAL, 0, NULL, 0 };
        else if (c->before_generation)
            cmp[i] = (struct ac_etcd_cmp){ KEY(keys[i]), AC_ETCD_MOD, AC_ETCD_EQUAL,
                                           (int64_t)c->before_generation, NULL, 0 };
        else
            cmp[i] = (struct ac_etcd_cmp){ KEY(keys[i]), AC_ETCD_VALUE, AC_ETCD_EQUAL, 0,
                                           c->before, c->before_len };
        memset(&ops[i], 0, sizeof ops[i]);
        ops[i].keys = KEY(keys[i]);
        if (c->after) {
            ops[i].kind = AC_ETCD_OP_PUT;
            ops[i].value = c->after;
            ops[i].value_len = c->after_len;
        } else {
            ops[i].kind = AC_ETCD_OP_DELETE;
        }
        memset(&fail[i], 0, sizeof fail[i]);
        fail[i].kind = AC_ETCD_OP_RANGE;
        fail[i].keys = KEY(keys[i]);
        /* A grant of an existing record marks it (its created version is
         * this batch's); a removed record takes its marker along. */
        if ((c->grant && c->after && c->before) || !c->after) {
            if (!(keys[n + i] = malloc(strlen(keys[i]) + strlen(GRANT) + 1))) {
                et_nomem(err);
                goto out;
            }
            sprintf(keys[n + i], "%s%s", keys[i], GRANT);
            memset(&ops[nops], 0, sizeof ops[nops]);
            ops[nops].keys = KEY(keys[n + i]);
            ops[nops].kind = c->after ? AC_ETCD_OP_PUT : AC_ETCD_OP_DELETE;
            ops[nops].value = c->after ? "grant" : NULL;
            ops[nops].value_len = c->after ? 5 : 0;
            nops++;
        }
    }
    et_fence_add(ch, cmp + n);
    et_fence_ranges(ch, fail + n);
    /* The audit message, as ac_audit_post composes it; the journaled kinds
     * carry a transaction id as the folder's do. */
    if (b->kind != AC_BATCH_TASK) {
        char txid[33];
        if (ac_uuid4_hex(txid) == -1 ||
            json_object_set_new(b->audit, "transaction_id", json_string(txid)) == -1) {
            ac_err_sys(err, ENOMEM, b->kind == AC_BATCH_PATHLOCK ? NULL : "TASK_IO_ERROR",
                       "could not compose the audit message");
            goto out;
        }
    }
    if (ac_audit_request(b->actor, b->event, b->subject, b->audit, &req, &title, &text, err) == -1)
        goto out;
    bt.ch = ch;
    bt.b = b;
    bt.keys = keys;
    bt.nfence = nf;
    x = (struct et_post_extra){ cmp, n + nf, ops, nops, fail, n + nf, batch_still_holds, &bt };
    rc = et_post(ch, &req, &x, &res, err);
    if (rc == 1)
        rc = refused(&bt, err);
    else if (rc == -1 && err && err->code && strncmp(err->code, "ETCD_", 5) == 0 &&
             b->kind != AC_BATCH_PATHLOCK) {
        /* the family's code, the cluster's reason */
        char msg[AC_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        ac_err_code(err, "TASK_IO_ERROR", "could not change the task board: %s: %s", err->code,
                    msg);
    }
out:
    for (i = 0; keys && i < 2 * n; i++)
        free(keys[i]);
    free(keys);
    free(cmp);
    free(ops);
    free(fail);
    free(title);
    free(text);
    return rc;
}
