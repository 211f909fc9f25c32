/*
 * lease.c - task leases: the lease state of a task, the lease operations
 * and the recovery of a crashed one; see include/agentchat/lease.h.
 *
 * A lease mutation is one batch of the store (store.h, AC_BATCH_LEASE):
 * the task record and its claim records change together with the audit
 * message, all or nothing. This file decides what changes (the records
 * before and after); the store makes it durable (on the folder: the lease
 * journal of src/fs/journal.c) and keeps it pending after a crash until
 * recover-pending settles it.
 */
#include "agentchat/lease.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/audit.h"
#include "agentchat/claimrec.h"
#include "agentchat/isotime.h"
#include "agentchat/json.h"
#include "agentchat/taskrec.h"

/* ---- the lease of a task ---- */

int ac_lease_state(struct ac_board *b, const char *id, json_t **claim, char **claim_name,
                   int *expired, struct ac_err *err)
{
    struct ac_recset set;
    struct ac_err serr = AC_ERR_INIT;
    char prefix[300];
    int rc;

    *claim = NULL;
    *claim_name = NULL;
    *expired = 0;
    /* claims/<id>.<owner>.json: the records named "<id>.<something>" */
    snprintf(prefix, sizeof prefix, "%s.", id);
    if (ac_chan_rec_scan(b->ch, AC_CLAIMS, prefix, 0, &set, &serr) == -1) {
        if (serr.sys_errno == ENOMEM)
            return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not list claims/");
        return ac_err_sys(err, serr.sys_errno ? serr.sys_errno : EIO, "TASK_IO_ERROR",
                          "could not open claims/");
    }
    rc = ac_claim_find(&set, id, b->channel, json_object_get(b->tasks, id), claim, claim_name, err);
    ac_recset_free(&set);
    if (rc == 0 && *claim)
        *expired = ac_task_time(*claim, "lease_expires_at") <= ac_isotime_now_us();
    return rc;
}

int ac_lease_journal_guard(struct ac_board *b, struct ac_err *err)
{
    struct ac_pending p;
    int rc = ac_chan_pending_read(b->ch, AC_BATCH_LEASE, &p, err);
    if (rc <= 0)
        return rc;
    return ac_task_err(err, "LEASE_TRANSACTION_PENDING", "a previous lease mutation needs explicit recovery");
}

json_t *ac_lease_target(struct ac_board *b, const char *id, struct ac_err *err)
{
    if (ac_lease_journal_guard(b, err) == -1)
        return NULL;
    return ac_board_get(b, id, err);
}

/* ---- one lease mutation ---- */

/* The details every new lease's audit message and journal carry. */
static void new_lease_details(json_t *details, const char *expires, const char *actor)
{
    json_object_set_new(details, "lease_expires_at", json_string(expires));
    json_object_set_new(details, "lease_owner", json_string(actor));
}

struct change {
    char name[300];             /* the claim record's name */
    char *prev, *next;          /* its bytes; NULL = absent */
    size_t prev_len, next_len;
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

    if (ac_chan_rec_read(b->ch, AC_TASKS, id, &r, NULL) == -1)
        return ac_err_sys(err, r.sys_errno ? r.sys_errno : EIO, "TASK_IO_ERROR",
                          "could not read task record %s.json", id);
    after_bytes = ac_task_encode(after, &after_len);
    body = after_bytes ? ac_board_audit_body(b, event, before, after) : NULL;
    if (!body || json_object_update(body, details) == -1) {
        ac_record_free(&r);
        free(after_bytes);
        json_decref(body);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not prepare the lease journal");
    }
    changes[0] = (struct ac_change){ AC_TASKS, id, r.data, r.len, after_bytes, after_len };
    for (i = 0; i < n; i++)
        changes[i + 1] = (struct ac_change){ AC_CLAIMS, c[i].name, c[i].prev, c[i].prev_len,
                                             c[i].next, c[i].next_len };
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

static int claim_bytes(const json_t *claim, char **out, size_t *len, struct ac_err *err)
{
    *out = claim ? ac_claim_encode(claim, len) : NULL;
    return *out ? 0 : ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not encode a lease record");
}

static int read_claim_bytes(struct ac_board *b, const char *name, char **out, size_t *len,
                            struct ac_err *err)
{
    struct ac_record r;
    if (ac_chan_rec_read(b->ch, AC_CLAIMS, name, &r, NULL) == -1)
        return ac_err_sys(err, r.sys_errno ? r.sys_errno : EIO, "TASK_IO_ERROR",
                          "could not read lease record %s.json", name);
    *out = r.data;
    *len = r.len;
    r.data = NULL;
    ac_record_free(&r);
    return 0;
}

/* The change of claim record `name`: from its stored bytes (when `had`)
 * to nclaim's (NULL: removed). */
static int claim_change(struct ac_board *b, struct change *c, const char *name, int had,
                        const json_t *nclaim, struct ac_err *err)
{
    snprintf(c->name, sizeof c->name, "%s", name);
    if (had && read_claim_bytes(b, name, &c->prev, &c->prev_len, err) == -1)
        return -1;
    return nclaim ? claim_bytes(nclaim, &c->next, &c->next_len, err) : 0;
}

static int has_reason_problem(const char *reason, struct ac_err *err)
{
    if (!reason || !reason[0])
        return ac_task_err(err, "LEASE_INVALID_REASON", "recovery reason must not be empty");
    if (ac_has_control(reason))
        return ac_task_err(err, "LEASE_INVALID_REASON",
                           "recovery reason contains a forbidden control character");
    return 0;
}

int ac_lease_apply(struct ac_board *b, enum ac_lease_op op, const char *id, const char *actor,
                   double seconds, const char *reason, json_t **out, struct ac_err *err)
{
    json_t *cur, *claim = NULL, *after = NULL, *details = NULL, *nclaim = NULL;
    char *claim_name = NULL, now[48], expires[48], new_name[300];
    const char *status, *event = NULL;
    struct change ch[2];
    size_t nch = 0;
    int expired = 0, rc = -1;

    memset(ch, 0, sizeof ch);
    if (!ac_safe_name(actor))
        return ac_task_err(err, "LEASE_INVALID_OWNER", "owner must be a safe identity");
    if (op == AC_LEASE_RECOVER && has_reason_problem(reason, err) == -1)
        return -1;
    if ((op == AC_LEASE_CLAIM || op == AC_LEASE_RENEW || op == AC_LEASE_RECOVER) &&
        !(isfinite(seconds) && seconds > 0))
        return ac_task_err(err, "LEASE_INVALID_DURATION", "lease duration must be positive");
    if (!(cur = ac_lease_target(b, id, err)))
        return -1;
    /* claims/<id>.<owner>.json must be a possible file name: refuse before
     * anything is written rather than fail halfway through a journal. */
    if (strlen(id) + strlen(actor) + 6 > 255)
        return ac_task_err(err, "LEASE_INVALID_OWNER",
                           "lease record name %s.%s.json would be longer than 255 bytes", id, actor);
    if (ac_lease_state(b, id, &claim, &claim_name, &expired, err) == -1)
        return -1;
    status = ac_task_str(cur, "status");
    snprintf(new_name, sizeof new_name, "%s.%s", id, actor);     /* the actor's claim record */
    ac_board_now(now, 1);
    ac_isotime_format(ac_isotime_now_us() + (int64_t)llround(seconds * 1e6), 6, expires);
    after = json_deep_copy(cur);
    details = json_object();
    if (!after || !details) {
        ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
        goto done;
    }
    json_object_set_new(after, "updated_at", json_string(now));

    if (claim && expired && op != AC_LEASE_RECOVER) {
        ac_task_err(err, "LEASE_RECOVERY_REQUIRED", "expired lease for task %s requires explicit recovery",
                    id);
        goto done;
    }
    switch (op) {
    case AC_LEASE_CLAIM:
        if (claim) {
            ac_task_err(err, "LEASE_CONFLICT", "task %s is leased by %s", id, ac_task_str(claim, "owner"));
            goto done;
        }
        if (ac_task_str(cur, "owner") && strcmp(ac_task_str(cur, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_CONFLICT", "task %s is assigned to %s", id, ac_task_str(cur, "owner"));
            goto done;
        }
        if (!ac_task_transition_ok(status, "in_progress")) {
            ac_task_transition_error(status, "in_progress", err);
            goto done;
        }
        if (ac_board_deps_ready(b, cur, err) == -1)
            goto done;
        json_object_set_new(after, "status", json_string("in_progress"));
        json_object_set_new(after, "owner", json_string(actor));
        json_object_set_new(after, "lease_expires_at", json_string(expires));
        nclaim = ac_claim_new(id, b->channel, actor, expires, now, NULL, NULL, NULL);
        if (claim_change(b, &ch[nch++], new_name, 0, nclaim, err) == -1)
            goto done;
        event = "lease.claimed";
        break;

    case AC_LEASE_RENEW:
        if (!claim) {
            ac_task_err(err, "LEASE_NOT_FOUND", "no active lease for task %s", id);
            goto done;
        }
        if (strcmp(ac_task_str(claim, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_OWNER_MISMATCH", "lease for task %s belongs to %s", id,
                        ac_task_str(claim, "owner"));
            goto done;
        }
        json_object_set_new(after, "lease_expires_at", json_string(expires));
        nclaim = json_deep_copy(claim);
        json_object_set_new(nclaim, "lease_expires_at", json_string(expires));
        json_object_set_new(nclaim, "updated_at", json_string(now));
        if (claim_change(b, &ch[nch++], claim_name, 1, nclaim, err) == -1)
            goto done;
        event = "lease.renewed";
        break;

    case AC_LEASE_RELEASE:
    case AC_LEASE_DONE: {
        const char *target = op == AC_LEASE_DONE ? "done" : "open";
        if (claim && strcmp(ac_task_str(claim, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_OWNER_MISMATCH", "lease for task %s belongs to %s", id,
                        ac_task_str(claim, "owner"));
            goto done;
        }
        if (!claim && ac_task_str(cur, "owner") && strcmp(ac_task_str(cur, "owner"), actor) != 0) {
            ac_task_err(err, "LEASE_CONFLICT", "task %s is assigned to %s", id, ac_task_str(cur, "owner"));
            goto done;
        }
        if (!ac_task_transition_ok(status, target)) {
            ac_task_transition_error(status, target, err);
            goto done;
        }
        if (op == AC_LEASE_DONE && strcmp(status, "done") != 0 && ac_board_deps_ready(b, cur, err) == -1)
            goto done;
        json_object_set_new(after, "status", json_string(target));
        if (claim) {
            json_object_set_new(after, "owner", json_null());
            json_object_set_new(after, "lease_expires_at", json_null());
            if (claim_change(b, &ch[0], claim_name, 1, NULL, err) == -1)
                goto done;
            nch = 1;
            event = op == AC_LEASE_DONE ? "lease.completed" : "lease.released";
            json_object_set_new(details, "lease_owner", json_string(actor));
            json_object_set(details, "previous_lease_expires_at", json_object_get(claim, "lease_expires_at"));
        } else {
            event = "task.updated";
            json_object_set_new(details, "lease_fallback",
                                json_string(op == AC_LEASE_DONE ? "complete" : "release"));
        }
        break;
    }

    case AC_LEASE_BLOCK:
        if (claim) {
            ac_task_err(err, "LEASE_MUTATION_REQUIRED", "task %s must be changed through its lease operation",
                        id);
            goto done;
        }
        if (!ac_task_transition_ok(status, "blocked")) {
            ac_task_transition_error(status, "blocked", err);
            goto done;
        }
        /* No lease: a plain update, not a lease transaction. */
        ac_board_now(now, 0);
        json_object_set_new(after, "updated_at", json_string(now));
        json_object_set_new(after, "status", json_string("blocked"));
        rc = ac_board_commit_plain(b, cur, after, actor, "task.updated", err);
        if (rc == 0) {
            *out = after;
            after = NULL;
        }
        goto done;

    case AC_LEASE_RECOVER:
        if (!claim) {
            ac_task_err(err, "LEASE_NOT_FOUND", "no active lease for task %s", id);
            goto done;
        }
        if (!expired) {
            ac_task_err(err, "LEASE_NOT_EXPIRED", "lease for task %s is still active", id);
            goto done;
        }
        json_object_set_new(after, "owner", json_string(actor));
        json_object_set_new(after, "lease_expires_at", json_string(expires));
        nclaim = ac_claim_new(id, b->channel, actor, expires, now, ac_task_str(claim, "owner"),
                           ac_task_str(claim, "lease_expires_at"), reason);
        /* the new holder's claim replaces the old one, or is a new file */
        if (strcmp(new_name, claim_name) == 0 ? claim_change(b, &ch[nch++], claim_name, 1, nclaim, err) == -1
                : claim_change(b, &ch[nch++], claim_name, 1, NULL, err) == -1 ||
                  claim_change(b, &ch[nch++], new_name, 0, nclaim, err) == -1)
            goto done;
        event = "lease.recovered";
        json_object_set(details, "previous_owner", json_object_get(claim, "owner"));
        json_object_set(details, "previous_lease_expires_at", json_object_get(claim, "lease_expires_at"));
        json_object_set_new(details, "recovery_reason", json_string(reason));
        break;
    }

    if (op == AC_LEASE_CLAIM || op == AC_LEASE_RENEW || op == AC_LEASE_RECOVER)
        new_lease_details(details, expires, actor);
    if (commit(b, actor, event, cur, after, ch, nch, details, err) == 0) {
        json_object_set(b->tasks, id, after);
        *out = after;
        after = NULL;
        rc = 0;
    }
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

static int recovery_audit(struct ac_board *b, const char *actor, const struct ac_pending *p,
                          const char *event, const char *how, struct ac_err *err)
{
    json_t *rec = json_object_get(b->tasks, p->subject), *body;
    int rc;
    if (!rec)
        return 0;   /* the task vanished: nothing to describe */
    body = ac_board_audit_body(b, event, NULL, rec);
    if (!body || json_object_set(body, "previous_status", json_object_get(rec, "status")) == -1 ||
        json_object_set_new(body, "changed_fields", json_array()) == -1 ||
        json_object_set_new(body, "transaction_event", json_string(p->event)) == -1 ||
        json_object_set_new(body, "transaction_recovery", json_string(how)) == -1 ||
        json_object_set_new(body, "transaction_task_id", json_string(p->subject)) == -1) {
        json_decref(body);
        return ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not compose the audit message");
    }
    rc = ac_audit_post(b->ch, actor, event, p->subject, body, NULL, err);
    json_decref(body);
    return rc;
}

/* A crashed mutation may have left debris behind: under the task mutex
 * every temp of the task board's records is dead; the messages' leftovers
 * are swept under the seq lock. Best effort. */
static void sweep_debris(struct ac_board *b)
{
    ac_board_sweep(b);
    ac_chan_sweep(b->ch, AC_NFAMILIES);
}

int ac_lease_recover_pending(struct ac_board *b, const char *actor, const char *resolve,
                             struct ac_err *err)
{
    struct ac_pending p;
    struct ac_err serr = AC_ERR_INIT;
    int rc, roll;

    if (!ac_safe_name(actor))
        return ac_task_err(err, "LEASE_INVALID_OWNER", "actor must be a safe identity");
    if (resolve && strcmp(resolve, "rollback") != 0 && strcmp(resolve, "published") != 0)
        return ac_task_err(err, "TASK_INVALID_COMMAND",
                           "resolve-publication must be rollback or published");
    rc = ac_chan_pending_read(b->ch, AC_BATCH_LEASE, &p, err);
    if (rc == -1)
        return -1;
    if (rc == 0) {
        sweep_debris(b);
        return ac_task_err(err, "LEASE_TRANSACTION_NOT_FOUND", "no pending lease transaction exists");
    }
    if (resolve && strcmp(p.phase, "applied") != 0)
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID",
                           "publication resolution applies only to applied transactions");
    if (strcmp(p.phase, "prepared") == 0) {
        roll = 1;
    } else if (strcmp(p.phase, "published") == 0) {
        roll = 0;
    } else if (resolve) {
        roll = strcmp(resolve, "rollback") == 0;
    } else if (!p.txid[0]) {
        return ac_task_err(err, "LEASE_TRANSACTION_PUBLICATION_UNKNOWN",
                           "cannot tell whether the legacy transaction was published; "
                           "pass --resolve-publication rollback|published");
    } else {
        int found = ac_audit_find_transaction(b->ch, p.txid, err);
        if (found == -1)
            return -1;
        roll = !found;
    }
    rc = ac_chan_pending_settle(b->ch, AC_BATCH_LEASE, roll ? AC_SETTLE_ROLLBACK : AC_SETTLE_VERIFY, &serr);
    if (rc == -1)
        return ac_err_sys(err, serr.sys_errno ? serr.sys_errno : EIO, "TASK_IO_ERROR",
                          roll ? "could not roll the lease transaction back" : "could not verify the lease transaction");
    if (rc == 1)
        return ac_task_err(err, "LEASE_TRANSACTION_INVALID", "published transaction does not match lease state");
    rc = ac_board_reload(b, err);
    if (rc == 0)
        rc = recovery_audit(b, actor, &p, roll ? "lease.transaction.recovered" : "lease.transaction.cleaned",
                            roll ? "rollback" : "cleanup", err);
    if (rc == 0 && ac_chan_pending_clear(b->ch, AC_BATCH_LEASE, &serr) == -1)
        rc = ac_task_err(err, "LEASE_TRANSACTION_CLEANUP_FAILED", "could not remove the lease journal: %s",
                         strerror(serr.sys_errno ? serr.sys_errno : EIO));
    if (rc == 0)
        sweep_debris(b);
    return rc;
}
