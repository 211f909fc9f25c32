/* claimrec.c - lease records; see include/agentchat/claimrec.h. */
#include "agentchat/claimrec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/isotime.h"
#include "agentchat/json.h"
#include "agentchat/pyjson.h"
#include "agentchat/taskrec.h"

static const char *const fields[] = {
    "task_id", "channel", "owner", "lease_expires_at", "claimed_at", "updated_at",
    "previous_owner", "previous_lease_expires_at", "recovery_reason",
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static json_t *nullable(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *ac_claim_new(const char *id, const char *channel, const char *owner, const char *expires,
                     const char *now, const char *prev_owner, const char *prev_expires,
                     const char *reason)
{
    json_t *c = json_object();
    if (!c || json_object_set_new(c, "task_id", json_string(id)) == -1 ||
        json_object_set_new(c, "channel", json_string(channel)) == -1 ||
        json_object_set_new(c, "owner", json_string(owner)) == -1 ||
        json_object_set_new(c, "lease_expires_at", json_string(expires)) == -1 ||
        json_object_set_new(c, "claimed_at", json_string(now)) == -1 ||
        json_object_set_new(c, "updated_at", json_string(now)) == -1 ||
        json_object_set_new(c, "previous_owner", nullable(prev_owner)) == -1 ||
        json_object_set_new(c, "previous_lease_expires_at", nullable(prev_expires)) == -1 ||
        json_object_set_new(c, "recovery_reason", nullable(reason)) == -1) {
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

int ac_claim_check(const json_t *c, const char *file, const char *id, const char *channel,
                   struct ac_err *err)
{
    static const char *const times[] = { "lease_expires_at", "claimed_at", "updated_at" };
    const char *key;
    json_t *v;
    size_t i;
    int64_t us;
    int flags;

    if (!json_is_object(c))
        return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s must be a JSON object", file);
    json_object_foreach((json_t *)c, key, v) {
        for (i = 0; i < NFIELDS; i++)
            if (strcmp(key, fields[i]) == 0)
                break;
        if (i == NFIELDS)
            return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s contains unknown fields", file);
    }
    for (i = 0; i < NFIELDS; i++)
        if (!json_object_get(c, fields[i]))
            return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s is missing required fields", file);
    if (!json_is_string(json_object_get(c, "task_id")) ||
        strcmp(ac_task_str(c, "task_id"), id) != 0 ||
        !json_is_string(json_object_get(c, "channel")) ||
        strcmp(ac_task_str(c, "channel"), channel) != 0 ||
        !ac_safe_name(ac_task_str(c, "owner")))
        return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s does not describe task %s", file, id);
    for (i = 0; i < 3; i++) {
        const char *s = ac_task_str(c, times[i]);
        if (!s || ac_isotime_parse(s, strlen(s), &us, &flags) == -1 ||
            !(flags & AC_ISOTIME_HAS_OFFSET))
            return ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s has an invalid %s", file, times[i]);
    }
    return 0;
}

int ac_claim_find(const struct ac_recset *claims, const char *id, const char *channel,
                  const json_t *task, json_t **claim, char **name, struct ac_err *err)
{
    json_t *found = NULL;
    char *found_name = NULL, file[300];
    size_t i, idlen = strlen(id);
    int rc = 0;

    *claim = NULL;
    *name = NULL;
    for (i = 0; i < claims->n && rc == 0; i++) {
        const struct ac_record *r = &claims->v[i];
        char msg[AC_PYJSON_MSG_MAX];
        const char *owner;
        json_t *v;
        snprintf(file, sizeof file, "%s.json", r->name);
        if (!r->data) {
            rc = ac_task_err(err, "LEASE_INVALID_RECORD", "could not read lease record %s: [Errno %d] %s",
                             file, r->sys_errno, strerror(r->sys_errno));
            break;
        }
        v = ac_pyjson_loads(r->data, r->len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
        if (!v) {
            rc = ac_task_err(err, "LEASE_INVALID_RECORD", "could not read lease record %s: %s", file, msg);
            break;
        }
        /* A dotted task id can prefix another task's claim file name
         * ("a.b.c.json" may be task "a.b" of owner "c"): skip claims of
         * other tasks. */
        if (json_is_object(v) && json_is_string(json_object_get(v, "task_id")) &&
            strcmp(ac_task_str(v, "task_id"), id) != 0) {
            json_decref(v);
            continue;
        }
        rc = ac_claim_check(v, file, id, channel, err);
        /* the file name must be <task>.<owner>.json */
        owner = rc == 0 ? ac_task_str(v, "owner") : NULL;
        if (rc == 0 && (strlen(file) != idlen + 1 + strlen(owner) + 5 ||
                        strncmp(file + idlen + 1, owner, strlen(owner)) != 0))
            rc = ac_task_err(err, "LEASE_INVALID_RECORD", "lease record %s does not match its owner", file);
        if (rc == 0 && found)
            rc = ac_task_err(err, "LEASE_INCONSISTENT", "task %s has more than one lease record", id);
        if (rc == 0 && !(found_name = strdup(r->name)))
            rc = ac_err_sys(err, ENOMEM, "TASK_IO_ERROR", "could not read lease records");
        if (rc == -1) {
            json_decref(v);
            break;
        }
        found = v;
    }
    if (rc == 0 && found && task &&
        (!json_equal(json_object_get(found, "owner"), json_object_get(task, "owner")) ||
         !json_equal(json_object_get(found, "lease_expires_at"), json_object_get(task, "lease_expires_at")))) {
        snprintf(file, sizeof file, "%s.json", found_name);
        rc = ac_task_err(err, "LEASE_INCONSISTENT", "lease record %s does not match task %s", file, id);
    }
    if (rc == 0 && !found && task && !json_is_null(json_object_get(task, "lease_expires_at")))
        rc = ac_task_err(err, "LEASE_INCONSISTENT", "task %s has a lease but no lease record", id);
    if (rc == -1) {
        json_decref(found);
        free(found_name);
        return -1;
    }
    *claim = found;
    *name = found_name;
    return 0;
}
