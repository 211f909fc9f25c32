/*
 * lease.c - task leases: the lease operations, the lease rules of a task
 * update, and the recovery of a crashed lease mutation; see
 * include/agentchat/lease.h.
 *
 * A lease mutation is one batch of the store (store.h, AC_BATCH_LEASE):
 * the task record and its claim records change together with the audit
 * message, all or nothing. This file decides what changes (the records
 * before and after); the store makes it durable (on the folder: the lease
 * journal of src/fs/journal.c) and keeps it pending after a crash until
 * recover-pending settles it.
 *
 * The order of the checks and their messages are the Python tool's
 * (lease_store.py of agent-chat-plugin 0.7): a command meets the errors of
 * its input first, then those of the board, the journal and the claim
 * records in the order that tool reads them, so that the same broken
 * channel gives the same first error with either tool.
 */
#include "agentchat/lease.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentchat/audit.h"
#include "agentchat/claimrec.h"
#include "agentchat/isotime.h"
#include "agentchat/json.h"
#include "agentchat/pyjson.h"
#include "agentchat/taskrec.h"

/* ---- the claims of a task ---- */

/* The claim of task `id` among the claim records: every record when `all`
 * (the Python tool reads them all, so a broken claim of another task fails
 * a lease command too), else only the records named after the task. */
static int find_claim(struct ac_board *b, const char *id, int all, json_t **claim, char **name,
                      struct ac_err *err)
{
    struct ac_recset set;
    struct ac_err serr = AC_ERR_INIT;
    char prefix[300];
    int rc;

    *claim = NULL;
    *name = NULL;
    snprintf(prefix, sizeof prefix, "%s.", id);
    if (ac_chan_rec_scan(b->ch, AC_CLAIMS, all ? NULL : prefix, 0, &set, &serr) == -1)
        return ac_err_sys(err, serr.sys_errno ? serr.sys_errno : EIO, "TASK_IO_ERROR",
                          serr.sys_errno == ENOMEM ? "could not list claims/" : "could not open claims/");
    rc = ac_claim_find(&set, b->ch, id, b->channel, claim, name, err);
    ac_recset_free(&set);
    return rc;
}

static int claim_expired(const json_t *claim)
{
    return ac_task_time(claim, "lease_expires_at") <= ac_isotime_now_us();
}

/* A new lease record claims/<name>.json must not exist yet: a dotted task
 * id and a dotted owner can name another task's record ("t1" of "bob.evil"
 * and "t1.bob" of "evil" are both t1.bob.evil). Refuse before anything is
 * written (the batch's create would fail halfway, and undoing it must not
 * touch the other task's record). */
static int check_claim_name_free(struct ac_board *b, const char *name, const char *id,
                                 const char *owner, struct ac_err *err)
{
    struct ac_record r;
    int e = 0;
    if (ac_chan_rec_read(b->ch, AC_CLAIMS, name, &r, NULL) == -1)
        e = r.sys_errno ? r.sys_errno : EIO;
    ac_record_free(&r);
    if (e == ENOENT || e == ENAMETOOLONG)
        return 0;
    return ac_task_err(err, "LEASE_NAME_COLLISION",
                       "lease record %s.json of task %s for %s already exists and is not that task's "
                       "(another task id and owner give the same file name); use another owner name",
                       name, id, owner);
}

static int owner_mismatch(const char *id, const json_t *claim, const char *actor, struct ac_err *err)
{
    const char *holder = ac_task_str(claim, "owner");
    if (strcmp(holder, actor) == 0)
        return 0;
    return ac_task_err(err, "LEASE_OWNER_MISMATCH", "lease for task %s belongs to %s", id, holder);
}

static int recovery_required(const char *id, const json_t *claim, struct ac_err *err)
{
    if (!claim_expired(claim))
        return 0;
    return ac_task_err(err, "LEASE_RECOVERY_REQUIRED",
                       "expired lease for task %s requires explicit recovery", id);
}

/* _expiry(): now + seconds as a lease expiry, or LEASE_INVALID_DURATION. */
static int lease_expiry(int64_t now_us, double seconds, char out[48], struct ac_err *err)
{
    int64_t at;
    if (ac_isotime_expiry_check(now_us, seconds, "LEASE_INVALID_DURATION", "lease", &at, err) == -1)
        return -1;
    ac_isotime_format(at, 6, out);
    return 0;
}

/* claims/<id>.<owner>.json must be a possible file name: refuse before
 * anything is written rather than fail halfway through a journal (the
 * Python tool stops with an OSError there). */
static int claim_name_fits(const char *id, const char *owner, struct ac_err *err)
{
    if (strlen(id) + strlen(owner) + 6 <= 255)
        return 0;
    return ac_task_err(err, "LEASE_INVALID_OWNER",
                       "lease record name %s.%s.json would be longer than 255 bytes", id, owner);
}

int ac_lease_generation(struct ac_chan *ch, const char *id, uint64_t *gen, struct ac_err *err)
{
    struct ac_recset set;
    json_t *claim = NULL;
    char *name = NULL, prefix[300];
    size_t i;
    int rc;

    *gen = 0;
    snprintf(prefix, sizeof prefix, "%s.", id);
    if (ac_chan_rec_scan(ch, AC_CLAIMS, prefix, 0, &set, err) == -1)
        return -1;
    rc = ac_claim_find(&set, ch, id, ch->name, &claim, &name, err);
    for (i = 0; rc == 0 && name && i < set.n; i++)
        if (strcmp(set.v[i].name, name) == 0)
            *gen = set.v[i].created;
    json_decref(claim);
    free(name);
    ac_recset_free(&set);
    return rc;
}

int ac_lease_fence(struct ac_chan *ch, const char *id, uint64_t fence, struct ac_err *err)
{
    uint64_t gen;
    if (ac_lease_generation(ch, id, &gen, err) == -1)
        return -1;
    if (gen == fence)
        return 0;
    if (gen == 0)
        return ac_err_code(err, "LEASE_FENCED", "task %s holds no lease of generation %llu%s", id,
                           (unsigned long long)fence,
                           strcmp(ch->store->ops->name, "fs") == 0
                               ? " (the folder store keeps no lease generations)"
                               : ": it ended or was taken over");
    return ac_err_code(err, "LEASE_FENCED",
                       "the lease of task %s is generation %llu, not %llu: a newer holder took it over",
                       id, (unsigned long long)gen, (unsigned long long)fence);
}

int ac_lease_journal_guard(struct ac_board *b, struct ac_err *err)
{
    struct ac_pending p;
    int rc = ac_chan_pending_read(b->ch, AC_BATCH_LEASE, NULL, &p, err);
    ac_pending_free(&p);
    if (rc <= 0)
        return rc;
    return ac_task_err(err, "LEASE_TRANSACTION_PENDING", "a previous lease mutation needs explicit recovery");
}

int ac_lease_update_gate(struct ac_board *b, const json_t *cur, const char *actor, int owner_given,
                         const char *status, struct ac_err *err)
{
    const char *id = ac_task_str(cur, "id");
    json_t *claim = NULL;
    char *name = NULL;
    int rc = -1;

    if (ac_lease_journal_guard(b, err) == -1 || find_claim(b, id, 1, &claim, &name, err) == -1)
        return -1;
    if (ac_claim_consistent(cur, claim, err) == -1)
        goto out;
    if (claim && (recovery_required(id, claim, err) == -1 || owner_mismatch(id, claim, actor, err) == -1))
        goto out;
    if (claim && (owner_given || (status && strcmp(status, ac_task_str(cur, "status")) != 0))) {
        ac_task_err(err, "LEASE_MUTATION_REQUIRED", "task %s must be changed through its lease operation",
                    id);
        goto out;
    }
    rc = 0;
out:
    json_decref(claim);
    free(name);
    return rc;
}

/* ---- one lease mutation ---- */

struct change {
    char name[300];             /* the claim record's name */
    char *prev, *next;          /* its bytes; NULL = absent */
    size_t prev_len, next_len;
    uint64_t generation;        /* the store's version of prev (0: none) */
    int grant;                  /* next is a new holder's (store.h ac_change.grant) */
};

static void changes_free(struct change *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        free(c[i].prev);
        free(c[i].next);
    }
}

/* The batch before -> after of the task with claim changes c[0..n): the
 * task record's bytes as stored, the new ones, the claims, and the audit
 * body (the task board's base plus `details`; the store adds the
 * transaction id). */
static int commit(struct ac_board *b, const char *actor, const char *event, json_t *before,
                  json_t *after, struct change *c, size_t n, json_t *details, struct ac_err *err)
{
    const char *id = ac_task_str(after, "id");
    struct ac_change changes[3];
    struct ac_batch batch;
    struct ac_record r;
    char *after_bytes;
    size_t after_len, i;
    json_t *body;
    int rc;

    if (ac_chan_rec_read(b->ch, AC_TASKS, id, &r, NULL) == -1) {
        int e = r.sys_errno ? r.sys_errno : EIO;
        ac_record_free(&r);
        return ac_err_sys(err, e, "TASK_IO_ERROR", "could not read task record %s.json", id);
    }
    after_bytes = ac_task_encode(after, &after_len);
    body = after_bytes ? ac_board_audit_body(b, event, before, after) : NULL;
    if (!body || json_object_update(body, details) == -1) {
        ac_record_free(&r);
        free(after_bytes);
        json_decref(body);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not prepare the lease journal");
    }
    changes[0] = (struct ac_change){ AC_TASKS, id, r.data, r.len, after_bytes, after_len, r.generation, 0 };
    for (i = 0; i < n; i++)
        changes[i + 1] = (struct ac_change){ AC_CLAIMS, c[i].name, c[i].prev, c[i].prev_len,
                                             c[i].next, c[i].next_len, c[i].generation, c[i].grant };
    batch = (struct ac_batch){ AC_BATCH_LEASE, changes, n + 1, actor, event, id, body, details, NULL };
    rc = ac_chan_batch_commit(b->ch, &batch, err);
    if (rc == -1 && err && err->code && strncmp(err->code, "TASK_", 5) != 0 &&
        strncmp(err->code, "LEASE_", 6) != 0 && strcmp(err->code, "INTERRUPTED") != 0)
        err->code = "TASK_IO_ERROR";     /* a store failure is a task board I/O error */
    json_decref(body);
    ac_record_free(&r);
    free(after_bytes);
    return rc;
}

/* The change of claim record `name`: from its stored bytes (when `had`;
 * none when it does not exist) to nclaim's (NULL: removed). */
static int claim_change(struct ac_board *b, struct change *c, const char *name, int had,
                        const json_t *nclaim, struct ac_err *err)
{
    snprintf(c->name, sizeof c->name, "%s", name);
    if (had) {
        struct ac_record r;
        if (ac_chan_rec_read(b->ch, AC_CLAIMS, name, &r, NULL) == -1 && r.sys_errno != ENOENT &&
            r.sys_errno != ENAMETOOLONG) {
            int e = r.sys_errno ? r.sys_errno : EIO;
            ac_record_free(&r);
            return ac_err_sys(err, e, "TASK_IO_ERROR", "could not read lease record %s.json", name);
        }
        c->prev = r.data;
        c->prev_len = r.len;
        c->generation = r.generation;
        r.data = NULL;
        ac_record_free(&r);
    }
    if (nclaim && !(c->next = ac_claim_encode(nclaim, &c->next_len)))
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode a lease record");
    return 0;
}

/* `after` becomes actor's lease of the task (claim, recover): the expiry,
 * the fields, then the candidate's checks and the claim record's name. */
static int take_lease(struct ac_board *b, const json_t *cur, json_t *after, const char *actor,
                      int64_t now_us, double seconds, char expires[48], struct ac_err *err)
{
    if (lease_expiry(now_us, seconds, expires, err) == -1)
        return -1;
    if (json_object_set_new(after, "status", json_string("in_progress")) == -1 ||
        json_object_set_new(after, "owner", json_string(actor)) == -1 ||
        json_object_set_new(after, "lease_expires_at", json_string(expires)) == -1)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
    if (ac_board_candidate(b, cur, after, 0, err) == -1)
        return -1;
    return claim_name_fits(ac_task_str(cur, "id"), actor, err);
}

/* claim_change to a new claim record (NULL: it could not be made). */
static int set_claim(struct ac_board *b, struct change *c, const char *name, int had, const json_t *nclaim,
                     struct ac_err *err)
{
    if (!nclaim)
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
    return claim_change(b, c, name, had, nclaim, err);
}

/* The details every new lease's audit message and journal carry. */
static int new_lease_details(json_t *details, const char *expires, const char *actor)
{
    return json_object_set_new(details, "lease_expires_at", json_string(expires)) == 0 &&
                   json_object_set_new(details, "lease_owner", json_string(actor)) == 0
               ? 0 : -1;
}

int ac_lease_apply(struct ac_board *b, enum ac_lease_op op, const char *id, const char *actor,
                   double seconds, const char *reason, json_t **out, struct ac_err *err)
{
    json_t *cur, *claim = NULL, *after = NULL, *details = NULL, *nclaim = NULL;
    char *claim_name = NULL, now[48], expires[48], new_name[300];
    const char *event = NULL, *target;
    struct change ch[2];
    size_t nch = 0;
    int64_t now_us;
    int rc = -1;

    memset(ch, 0, sizeof ch);
    if (op == AC_LEASE_BLOCK)
        return ac_err_sys(err, EINVAL, "TASK_IO_ERROR", "task block is a task update");
    if (!ac_safe_name(actor))
        return ac_task_err(err, "LEASE_INVALID_OWNER", "owner must be a safe identity");
    if (op == AC_LEASE_RECOVER && ac_claim_reason_check(reason, err) == -1)
        return -1;
    if (!ac_task_id_findable(id))
        return ac_task_unsafe_id(id, err);
    if (ac_board_load(b, 1, err) == -1 || !(cur = ac_board_get(b, id, err)))
        return -1;
    if (ac_lease_journal_guard(b, err) == -1 || find_claim(b, id, 1, &claim, &claim_name, err) == -1)
        return -1;
    snprintf(new_name, sizeof new_name, "%s.%s", id, actor);     /* the actor's claim record */
    now_us = ac_isotime_now_us();
    ac_isotime_format(now_us, 6, now);
    after = json_deep_copy(cur);
    details = json_object();
    if (!after || !details || json_object_set_new(after, "updated_at", json_string(now)) == -1) {
        ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
        goto done;
    }

    switch (op) {
    case AC_LEASE_CLAIM:
        if (claim) {
            if (ac_claim_consistent(cur, claim, err) == -1 || recovery_required(id, claim, err) == -1)
                goto done;
            ac_task_err(err, "LEASE_CONFLICT", "task %s is leased by %s", id, ac_task_str(claim, "owner"));
            goto done;
        }
        if (!json_is_null(json_object_get(cur, "lease_expires_at"))) {
            ac_task_err(err, "LEASE_INCONSISTENT", "task %s has a lease expiry without a claim record", id);
            goto done;
        }
        if (ac_task_str(cur, "owner") && strcmp(ac_task_str(cur, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_CONFLICT", "task %s is assigned to %s", id, ac_task_str(cur, "owner"));
            goto done;
        }
        if (take_lease(b, cur, after, actor, now_us, seconds, expires, err) == -1)
            goto done;
        if (check_claim_name_free(b, new_name, id, actor, err) == -1)
            goto done;
        nclaim = ac_claim_new(id, b->channel, actor, expires, now, now, NULL, NULL, NULL);
        ch[nch].grant = 1;
        if (set_claim(b, &ch[nch++], new_name, 0, nclaim, err) == -1)
            goto done;
        event = "lease.claimed";
        break;

    case AC_LEASE_RENEW:
        if (ac_claim_consistent(cur, claim, err) == -1)
            goto done;
        if (!claim) {
            ac_task_err(err, "LEASE_NOT_FOUND", "no active lease for task %s", id);
            goto done;
        }
        if (owner_mismatch(id, claim, actor, err) == -1 || recovery_required(id, claim, err) == -1 ||
            lease_expiry(now_us, seconds, expires, err) == -1)
            goto done;
        if (json_object_set_new(after, "owner", json_string(actor)) == -1 ||
            json_object_set_new(after, "lease_expires_at", json_string(expires)) == -1)
            goto oom;
        if (ac_board_candidate(b, cur, after, 0, err) == -1)
            goto done;
        nclaim = ac_claim_new(id, b->channel, actor, expires, ac_task_str(claim, "claimed_at"), now,
                              json_object_get(claim, "previous_owner"),
                              json_object_get(claim, "previous_lease_expires_at"),
                              json_object_get(claim, "recovery_reason"));
        if (set_claim(b, &ch[nch++], claim_name, 1, nclaim, err) == -1)
            goto done;
        event = "lease.renewed";
        break;

    case AC_LEASE_RELEASE:
    case AC_LEASE_DONE:
        target = op == AC_LEASE_DONE ? "done" : "open";
        if (ac_claim_consistent(cur, claim, err) == -1)
            goto done;
        if (json_object_set_new(after, "status", json_string(target)) == -1)
            goto oom;
        if (!claim) {
            /* No lease: the plain transition, still through the journal. */
            if (ac_board_candidate(b, cur, after, 0, err) == -1)
                goto done;
            event = "task.updated";
            if (json_object_set_new(details, "lease_fallback",
                                    json_string(op == AC_LEASE_DONE ? "complete" : "release")) == -1)
                goto oom;
            break;
        }
        if (owner_mismatch(id, claim, actor, err) == -1 || recovery_required(id, claim, err) == -1)
            goto done;
        if (json_object_set_new(after, "owner", json_null()) == -1 ||
            json_object_set_new(after, "lease_expires_at", json_null()) == -1)
            goto oom;
        if (ac_board_candidate(b, cur, after, 0, err) == -1)
            goto done;
        if (claim_change(b, &ch[nch++], claim_name, 1, NULL, err) == -1)
            goto done;
        event = op == AC_LEASE_DONE ? "lease.completed" : "lease.released";
        if (json_object_set_new(details, "lease_owner", json_string(actor)) == -1 ||
            json_object_set(details, "previous_lease_expires_at",
                            json_object_get(claim, "lease_expires_at")) == -1)
            goto oom;
        break;

    case AC_LEASE_RECOVER:
        if (!claim) {
            ac_task_err(err, "LEASE_NOT_FOUND", "no active lease for task %s", id);
            goto done;
        }
        if (ac_claim_consistent(cur, claim, err) == -1)
            goto done;
        if (!claim_expired(claim)) {
            ac_task_err(err, "LEASE_NOT_EXPIRED", "lease for task %s is still active", id);
            goto done;
        }
        if (take_lease(b, cur, after, actor, now_us, seconds, expires, err) == -1)
            goto done;
        {
            json_t *why = json_string(reason);
            nclaim = why ? ac_claim_new(id, b->channel, actor, expires, now, now, json_object_get(claim, "owner"),
                                        json_object_get(claim, "lease_expires_at"), why)
                         : NULL;
            json_decref(why);
            if (!nclaim)
                goto oom;
        }
        if (strcasecmp(new_name, claim_name) == 0 && strcmp(new_name, claim_name) != 0) {
            ac_task_err(err, "LEASE_INVALID_OWNER", "case-only owner changes are not supported for lease recovery");
            goto done;
        }
        /* the new holder's claim replaces the old one, or is a new record:
         * a grant either way (a new fencing generation, store.h) */
        if (strcmp(new_name, claim_name) == 0 ? (ch[nch].grant = 1,
                                                 claim_change(b, &ch[nch++], claim_name, 1, nclaim, err) == -1)
                : check_claim_name_free(b, new_name, id, actor, err) == -1 ||
                  claim_change(b, &ch[nch++], claim_name, 1, NULL, err) == -1 ||
                  (ch[nch].grant = 1, claim_change(b, &ch[nch++], new_name, 1, nclaim, err) == -1))
            goto done;
        event = "lease.recovered";
        if (json_object_set(details, "previous_owner", json_object_get(claim, "owner")) == -1 ||
            json_object_set(details, "previous_lease_expires_at", json_object_get(claim, "lease_expires_at")) == -1 ||
            json_object_set_new(details, "recovery_reason", json_string(reason)) == -1)
            goto oom;
        break;

    case AC_LEASE_BLOCK:
        break;                      /* refused above */
    }

    if ((op == AC_LEASE_CLAIM || op == AC_LEASE_RENEW || op == AC_LEASE_RECOVER) &&
        new_lease_details(details, expires, actor) == -1)
        goto oom;
    if (commit(b, actor, event, cur, after, ch, nch, details, err) == 0) {
        if (json_object_set(b->tasks, id, after) == -1)
            goto oom;
        *out = after;
        after = NULL;
        rc = 0;
    }
    goto done;
oom:
    ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
done:
    changes_free(ch, 2);
    json_decref(after);
    json_decref(details);
    json_decref(nclaim);
    json_decref(claim);
    free(claim_name);
    return rc;
}

/* ---- recover-pending ---- */

/* What the record checks of a pending lease batch need (its task id is the
 * first record's name, met first). */
struct recovery {
    struct ac_board *b;
    char id[300];
};

/* task_before / task_after: JSON of a task record of `id` of this channel. */
static int journal_task(struct ac_board *b, const char *field, const char *bytes, size_t len,
                        const char *id, json_t **out, struct ac_err *err)
{
    char msg[AC_PYJSON_MSG_MAX];
    json_t *v = ac_pyjson_loads(bytes, len, 0, msg, sizeof msg);
    const json_t *vid;
    *out = NULL;
    if (!v)
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "transaction journal %s is not valid JSON: %s",
                           field, msg);
    vid = json_is_object(v) ? json_object_get(v, "id") : NULL;
    if (!json_is_string(vid) || strcmp(json_string_value(vid), id) != 0 ||
        strlen(id) != json_string_length(vid)) {
        json_decref(v);
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                           "transaction journal %s id does not match task record", field);
    }
    if (ac_task_validate(v, NULL, b->channel, b->ch, err) == -1) {
        json_decref(v);
        return -1;
    }
    *out = v;
    return 0;
}

/* A claim payload of the journal (_decode_claim_rollback): the bytes of a
 * lease record of task `id` named `name`. */
static int journal_claim(struct ac_board *b, const char *bytes, size_t len, const char *field,
                         const char *name, const char *id, json_t **out, struct ac_err *err)
{
    char msg[AC_PYJSON_MSG_MAX], want[600];
    json_t *c = ac_pyjson_loads(bytes, len, 0, msg, sizeof msg);
    *out = NULL;
    if (!c)
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "claim %s payload is not valid JSON: %s",
                           field, msg);
    if (ac_claim_check(c, err) == -1) {
        json_decref(c);
        return -1;
    }
    snprintf(want, sizeof want, "%s.%s", ac_task_str(c, "task_id"), ac_task_str(c, "owner"));
    if (strcmp(ac_task_str(c, "task_id"), id) != 0 || strcmp(ac_task_str(c, "channel"), b->channel) != 0 ||
        strcmp(want, name) != 0) {
        json_decref(c);
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                           "claim %s payload does not match its journal filename", field);
    }
    *out = c;
    return 0;
}

static int check_recorded(void *ctx, const struct ac_change *c, int after, struct ac_err *err)
{
    struct recovery *r = ctx;
    const char *bytes = after ? c->after : c->before;
    size_t len = after ? c->after_len : c->before_len;
    json_t *v;
    int rc;
    if (c->family == AC_TASKS) {
        snprintf(r->id, sizeof r->id, "%s", c->name);
        rc = journal_task(r->b, after ? "task_after" : "task_before", bytes, len, r->id, &v, err);
    } else {
        rc = journal_claim(r->b, bytes, len, after ? "next" : "previous", c->name, r->id, &v, err);
    }
    json_decref(v);
    return rc;
}

/* A recorded state, already checked, decoded again. */
static json_t *recorded(const char *bytes, size_t len)
{
    return bytes ? ac_pyjson_loads(bytes, len, 0, NULL, 0) : NULL;
}

/* The claim owner and expiry equal the task's. */
static int lease_matches(const json_t *claim, const json_t *task)
{
    return json_equal(json_object_get(claim, "owner"), json_object_get(task, "owner")) &&
           json_equal(json_object_get(claim, "lease_expires_at"), json_object_get(task, "lease_expires_at"));
}

/* The claims of the batch against the task's lease fields, before and after. */
static int check_changes(void *ctx, const struct ac_pending *p, struct ac_err *err)
{
    json_t *before = recorded(p->changes[0].before, p->changes[0].before_len);
    json_t *after = recorded(p->changes[0].after, p->changes[0].after_len);
    json_t *prev_rec = NULL, *next_rec = NULL;
    size_t k, nprev = 0, nnext = 0;
    const char *why = NULL;

    (void)ctx;
    for (k = 1; k < p->nchanges; k++) {
        if (p->changes[k].before) {
            nprev++;
            json_decref(prev_rec);
            prev_rec = recorded(p->changes[k].before, p->changes[k].before_len);
        }
        if (p->changes[k].after) {
            nnext++;
            json_decref(next_rec);
            next_rec = recorded(p->changes[k].after, p->changes[k].after_len);
        }
    }
    if (!before || !after)
        why = "transaction journal task records could not be decoded";
    else if (nprev > 1)
        why = "transaction has multiple distinct previous claims";
    else if (!json_is_null(json_object_get(before, "owner")) &&
             !json_is_null(json_object_get(before, "lease_expires_at"))) {
        if (!prev_rec)
            why = "task_before lease metadata has no previous claim";
        else if (!lease_matches(prev_rec, before))
            why = "task_before lease metadata does not match previous claim";
    } else if (prev_rec) {
        why = "previous claim exists without task_before lease metadata";
    }
    if (!why && !p->no_after) {
        if (nnext > 1)
            why = "transaction has multiple active next claims";
        else if (next_rec && !lease_matches(next_rec, after))
            why = "task_after lease metadata does not match next claim";
        else if (!next_rec && !json_is_null(json_object_get(after, "lease_expires_at")))
            why = "task_after retains lease metadata without a next claim";
    }
    json_decref(before);
    json_decref(after);
    json_decref(prev_rec);
    json_decref(next_rec);
    return why ? ac_task_err(err, "LEASE_TRANSACTION_INVALID", "%s", why) : 0;
}

static int journal_invalid(struct ac_err *err, const char *msg)
{
    return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "%s", msg);
}

/* TaskRecord.to_dict() equality of two valid records. */
static int tasks_equal(const json_t *a, const json_t *b)
{
    size_t i;
    for (i = 0; i < AC_TASK_NFIELDS; i++)
        if (!json_equal(json_object_get(a, ac_task_fields[i]), json_object_get(b, ac_task_fields[i])))
            return 0;
    return 1;
}

/* The published state is in place: the task equals its recorded after
 * state and every claim its next payload (absent when there is none). */
static int verify_published(struct ac_board *b, const struct ac_pending *p, json_t **task,
                            struct ac_err *err)
{
    json_t *want = recorded(p->changes[0].after, p->changes[0].after_len);
    size_t i;
    int rc = -1;

    if (ac_board_read_one(b, p->subject, task, err) == -1)
        goto out;
    if (!want || !tasks_equal(*task, want)) {
        journal_invalid(err, "published transaction task does not match task_after");
        goto out;
    }
    for (i = 1; i < p->nchanges; i++) {
        const struct ac_change *c = &p->changes[i];
        struct ac_record r;
        json_t *actual = NULL, *next;
        int exists = ac_chan_rec_read(b->ch, AC_CLAIMS, c->name, &r, NULL) == 0 ||
                     (r.sys_errno != ENOENT && r.sys_errno != ENAMETOOLONG);
        if (!c->after) {
            ac_record_free(&r);
            if (exists) {
                journal_invalid(err, "published transaction retains a removed claim");
                goto out;
            }
            continue;
        }
        if (!exists) {
            ac_record_free(&r);
            journal_invalid(err, "published transaction is missing its claim");
            goto out;
        }
        if (!r.data) {
            ac_claim_read_error(b->ch, c->name, r.sys_errno, err);
            ac_record_free(&r);
            goto out;
        }
        if (ac_claim_decode(c->name, r.data, r.len, b->channel, &actual, err) == -1) {
            ac_record_free(&r);
            goto out;
        }
        ac_record_free(&r);
        next = recorded(c->after, c->after_len);
        if (!next || !ac_claims_equal(actual, next)) {
            json_decref(actual);
            json_decref(next);
            journal_invalid(err, "published transaction claim does not match next payload");
            goto out;
        }
        json_decref(actual);
        json_decref(next);
    }
    rc = 0;
out:
    json_decref(want);
    return rc;
}

static int recovery_audit(struct ac_board *b, const char *actor, const struct ac_pending *p,
                          const json_t *rec, const char *event, const char *how, struct ac_err *err)
{
    json_t *body = ac_board_audit_body(b, event, rec, rec);
    struct ac_err perr = AC_ERR_INIT;
    int rc;
    if (!body || json_object_set(body, "transaction_event", p->event_value ? p->event_value : json_null()) == -1 ||
        json_object_set_new(body, "transaction_recovery", json_string(how)) == -1 ||
        json_object_set_new(body, "transaction_task_id", json_string(p->subject)) == -1) {
        json_decref(body);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode the audit message");
    }
    rc = ac_audit_post(b->ch, actor, event, ac_task_str(rec, "id"), body, NULL, &perr);
    json_decref(body);
    if (rc == -1)
        return ac_task_err(err, "TASK_AUDIT_FAILED",
                           "task record changed but audit event could not be written: %s", perr.msg);
    return 0;
}

/* A crashed mutation may have left debris behind: under the task mutex
 * every temp of the task board's records is dead; the messages' leftovers
 * are swept under the seq lock. Best effort. */
static void sweep_debris(struct ac_board *b)
{
    ac_board_sweep(b);
    ac_chan_sweep(b->ch, AC_NFAMILIES);
}

static int recovery_failed(struct ac_err *err, const char *what, int e)
{
    return ac_task_err(err, "LEASE_TRANSACTION_RECOVERY_FAILED",
                       "could not recover pending lease transaction: %s: %s", what, strerror(e));
}

int ac_lease_recover_pending(struct ac_board *b, const char *actor, const char *resolve,
                             struct ac_err *err)
{
    struct recovery ctx = { b, "" };
    const struct ac_pending_check check = { check_recorded, check_changes, &ctx };
    struct ac_pending p;
    struct ac_err serr = AC_ERR_INIT;
    json_t *task = NULL;
    int rc, roll;

    if (resolve && strcmp(resolve, "rollback") != 0 && strcmp(resolve, "published") != 0)
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                           "publication_resolution must be rollback or published");
    if (!ac_safe_name(actor))
        return ac_task_err(err, "LEASE_INVALID_OWNER", "actor must be a safe identity");
    rc = ac_chan_pending_read(b->ch, AC_BATCH_LEASE, &check, &p, err);
    if (rc <= 0) {
        ac_pending_free(&p);
        if (rc == -1)
            return -1;
        sweep_debris(b);
        return ac_task_err(err, "LEASE_TRANSACTION_NOT_FOUND", "no pending lease transaction exists");
    }
    rc = -1;
    if (resolve) {
        if (strcmp(p.phase, "applied") != 0) {
            journal_invalid(err, "publication resolution applies only to applied transactions");
            goto out;
        }
        roll = strcmp(resolve, "rollback") == 0;
    } else if (strcmp(p.phase, "applied") == 0 && p.anonymous) {
        ac_task_err(err, "LEASE_TRANSACTION_PUBLICATION_UNKNOWN",
                    "legacy applied transaction publication state is unknown; rerun with explicit "
                    "publication resolution");
        goto out;
    } else if (strcmp(p.phase, "applied") == 0) {
        int found = 0;
        if (p.txid[0] && (found = ac_audit_find_transaction(b->ch, p.txid, err)) == -1)
            goto out;
        roll = !found;
    } else {
        roll = strcmp(p.phase, "published") != 0;
    }
    if (roll) {
        if (ac_chan_pending_settle(b->ch, &p, AC_SETTLE_ROLLBACK, &serr) == -1) {
            recovery_failed(err, "could not roll back", serr.sys_errno ? serr.sys_errno : EIO);
            goto out;
        }
        if (ac_board_read_one(b, p.subject, &task, err) == -1)
            goto out;
    } else if (verify_published(b, &p, &task, err) == -1) {
        goto out;
    }
    if (recovery_audit(b, actor, &p, task, roll ? "lease.transaction.recovered" : "lease.transaction.cleaned",
                       roll ? "rollback" : "cleanup", err) == -1)
        goto out;
    if (ac_chan_pending_clear(b->ch, AC_BATCH_LEASE, &serr) == -1) {
        recovery_failed(err, "could not remove the lease journal", serr.sys_errno ? serr.sys_errno : EIO);
        goto out;
    }
    sweep_debris(b);
    rc = 0;
out:
    json_decref(task);
    ac_pending_free(&p);
    return rc;
}
