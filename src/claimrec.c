/* claimrec.c - lease records; see include/agentchat/claimrec.h. */
#include "agentchat/claimrec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/json.h"
#include "agentchat/pyjson.h"
#include "agentchat/pystr.h"
#include "agentchat/taskrec.h"

static const char *const fields[] = {
    "task_id", "channel", "owner", "lease_expires_at", "claimed_at", "updated_at",
    "previous_owner", "previous_lease_expires_at", "recovery_reason",
};
#define NFIELDS (sizeof fields / sizeof fields[0])
#define NREQUIRED 6             /* the first six must be present */

json_t *ac_claim_new(const char *id, const char *channel, const char *owner, const char *expires,
                     const char *claimed, const char *now, const json_t *prev_owner,
                     const json_t *prev_expires, const json_t *reason)
{
    json_t *c = json_object();
    if (!c || json_object_set_new(c, "task_id", json_string(id)) == -1 ||
        json_object_set_new(c, "channel", json_string(channel)) == -1 ||
        json_object_set_new(c, "owner", json_string(owner)) == -1 ||
        json_object_set_new(c, "lease_expires_at", json_string(expires)) == -1 ||
        json_object_set_new(c, "claimed_at", json_string(claimed)) == -1 ||
        json_object_set_new(c, "updated_at", json_string(now)) == -1 ||
        json_object_set(c, "previous_owner", prev_owner ? (json_t *)prev_owner : json_null()) == -1 ||
        json_object_set(c, "previous_lease_expires_at",
                        prev_expires ? (json_t *)prev_expires : json_null()) == -1 ||
        json_object_set(c, "recovery_reason", reason ? (json_t *)reason : json_null()) == -1) {
        json_decref(c);
        return NULL;
    }
    return c;
}

char *ac_claim_encode(const json_t *claim, size_t *len)
{
    static const struct ac_json_style style = { 2, 0, 0, ",", ": " };
    json_t *ordered = json_object();
    char *out;
    size_t i;
    if (!ordered)
        return NULL;
    for (i = 0; i < NFIELDS; i++) {
        json_t *v = json_object_get(claim, fields[i]);
        if (json_object_set(ordered, fields[i], v ? v : json_null()) == -1) {
            json_decref(ordered);
            return NULL;
        }
    }
    out = ac_json_dump_line(ordered, &style, len);
    json_decref(ordered);
    return out;
}

int ac_claim_reason_check(const char *reason, struct ac_err *err)
{
    size_t start = 0, end = 0;
    if (reason)
        ac_py_strip(reason, strlen(reason), &start, &end);
    if (start >= end)
        return ac_task_err(err, "LEASE_INVALID_REASON", "recovery reason must not be empty");
    if (strpbrk(reason, "\r\n"))
        return ac_task_err(err, "LEASE_INVALID_REASON",
                           "recovery reason contains a forbidden control character");
    return 0;
}

/* The lease store's _validate_identity: a string matching
 * [A-Za-z0-9][A-Za-z0-9._-]*, else "<field> must be a safe identity". */
static int identity(const json_t *v, const char *field, const char *code, struct ac_err *err)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) != json_string_length(v) || !ac_safe_name(s))
        return ac_task_err(err, code, "%s must be a safe identity", field);
    return 0;
}

int ac_claim_check(const json_t *c, struct ac_err *err)
{
    static const char *const times[] = { "lease_expires_at", "claimed_at", "updated_at" };
    const char *key;
    json_t *v;
    size_t i;

    if (!json_is_object(c) || ac_pyjson_is_nonfinite(c))
        return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record must be a JSON object");
    for (i = 0; i < NREQUIRED; i++)
        if (!json_object_get(c, fields[i]))
            return ac_task_err(err, "LEASE_REQUIRED_FIELD_MISSING", "required lease field is missing");
    json_object_foreach((json_t *)c, key, v) {
        for (i = 0; i < NFIELDS; i++)
            if (strcmp(key, fields[i]) == 0)
                break;
        if (i == NFIELDS)
            return ac_task_err(err, "LEASE_UNKNOWN_FIELD", "lease record contains unknown fields");
    }
    if (identity(json_object_get(c, "task_id"), "task_id", "LEASE_INVALID_TASK_ID", err) == -1 ||
        identity(json_object_get(c, "channel"), "channel", "LEASE_INVALID_CHANNEL", err) == -1 ||
        identity(json_object_get(c, "owner"), "owner", "LEASE_INVALID_OWNER", err) == -1)
        return -1;
    for (i = 0; i < 3; i++)
        if (ac_task_time_check(json_object_get(c, times[i]), times[i], "LEASE_INVALID_TIMESTAMP",
                               err) == -1)
            return -1;
    v = json_object_get(c, "previous_owner");
    if (v && !json_is_null(v) && identity(v, "previous_owner", "LEASE_INVALID_OWNER", err) == -1)
        return -1;
    v = json_object_get(c, "previous_lease_expires_at");
    if (v && !json_is_null(v) &&
        ac_task_time_check(v, "previous_lease_expires_at", "LEASE_INVALID_TIMESTAMP", err) == -1)
        return -1;
    v = json_object_get(c, "recovery_reason");
    if (v && !json_is_null(v)) {
        const char *s = json_string_value(v);
        if (!s)
            return ac_task_err(err, "LEASE_INVALID_REASON", "recovery reason must not be empty");
        if (strlen(s) != json_string_length(v))     /* a NUL */
            return ac_task_err(err, "LEASE_INVALID_REASON",
                               "recovery reason contains a forbidden control character");
        if (ac_claim_reason_check(s, err) == -1)
            return -1;
    }
    return 0;
}

int ac_claims_equal(const json_t *a, const json_t *b)
{
    size_t i;
    for (i = 0; i < NFIELDS; i++) {
        json_t *x = json_object_get(a, fields[i]), *y = json_object_get(b, fields[i]);
        if (!json_equal(x ? x : json_null(), y ? y : json_null()))
            return 0;
    }
    return 1;
}

int ac_claim_read_error(struct ac_chan *ch, const char *name, int e, struct ac_err *err)
{
    char path[1024], shown[1200];
    if (e == ENOENT)
        return ac_task_err(err, "LEASE_NOT_FOUND", "lease record does not exist: %s.json", name);
    if (!ch)
        return ac_task_err(err, "LEASE_INVALID_RECORD", "could not read lease record %s.json: [Errno %d] %s",
                           name, e, strerror(e));
    ac_chan_rec_where(ch, AC_CLAIMS, name, path, sizeof path);
    return ac_task_err(err, "LEASE_INVALID_RECORD", "could not read lease record %s.json: [Errno %d] %s: %s",
                       name, e, strerror(e), ac_py_repr(path, shown, sizeof shown));
}

int ac_claim_decode(const char *name, const char *data, size_t len, const char *channel,
                    json_t **out, struct ac_err *err)
{
    char msg[AC_PYJSON_MSG_MAX], a[300], c[300];
    const char *task, *owner;
    size_t tl, ol;
    json_t *v;

    *out = NULL;
    v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    if (!v)
        return ac_task_err(err, "LEASE_INVALID_RECORD", "could not read lease record %s.json: %s", name,
                           msg);
    if (ac_claim_check(v, err) == -1)
        goto fail;
    if (strcmp(json_string_value(json_object_get(v, "channel")), channel) != 0) {
        ac_task_err(err, "LEASE_INCONSISTENT", "lease channel %s does not match %s",
                    ac_py_repr(json_string_value(json_object_get(v, "channel")), a, sizeof a),
                    ac_py_repr(channel, c, sizeof c));
        goto fail;
    }
    task = json_string_value(json_object_get(v, "task_id"));
    owner = json_string_value(json_object_get(v, "owner"));
    tl = strlen(task);
    ol = strlen(owner);
    if (strlen(name) != tl + 1 + ol || strncmp(name, task, tl) != 0 || name[tl] != '.' ||
        strcmp(name + tl + 1, owner) != 0) {
        snprintf(c, sizeof c, "%s.json", name);
        ac_task_err(err, "LEASE_RECORD_ID_MISMATCH", "lease identity does not match filename %s",
                    ac_py_repr(c, a, sizeof a));
        goto fail;
    }
    *out = v;
    return 0;
fail:
    json_decref(v);
    return -1;
}

int ac_claim_find(const struct ac_recset *claims, struct ac_chan *ch, const char *id,
                  const char *channel, json_t **claim, char **name, struct ac_err *err)
{
    json_t *found = NULL;
    char *found_name = NULL;
    size_t i, hits = 0;
    int rc = 0;

    *claim = NULL;
    *name = NULL;
    for (i = 0; i < claims->n && rc == 0; i++) {
        const struct ac_record *r = &claims->v[i];
        json_t *v;
        if (!r->data) {
            rc = ac_claim_read_error(ch, r->name, r->sys_errno, err);
            break;
        }
        if (ac_claim_decode(r->name, r->data, r->len, channel, &v, err) == -1) {
            rc = -1;
            break;
        }
        if (strcmp(json_string_value(json_object_get(v, "task_id")), id) != 0) {
            json_decref(v);
            continue;
        }
        if (hits++ == 0) {
            found = v;
            if (!(found_name = strdup(r->name)))
                rc = ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "out of memory");
        } else {
            json_decref(v);
        }
    }
    if (rc == 0 && hits > 1)
        rc = ac_task_err(err, "LEASE_INCONSISTENT", "multiple active leases exist for task %s", id);
    if (rc == -1) {
        json_decref(found);
        free(found_name);
        return -1;
    }
    *claim = found;
    *name = found_name;
    return 0;
}

int ac_claim_consistent(const json_t *task, const json_t *claim, struct ac_err *err)
{
    const char *id = ac_task_str(task, "id");
    if (!claim) {
        if (!json_is_null(json_object_get(task, "lease_expires_at")))
            return ac_task_err(err, "LEASE_INCONSISTENT",
                               "task %s has a lease expiry without an active claim record", id);
        return 0;
    }
    if (!json_equal(json_object_get(claim, "owner"), json_object_get(task, "owner")) ||
        !json_equal(json_object_get(claim, "lease_expires_at"), json_object_get(task, "lease_expires_at")))
        return ac_task_err(err, "LEASE_INCONSISTENT", "task %s and claim record disagree", id);
    return 0;
}
