/*
 * claimrec.h - lease records, claims/<task>.<owner>.json (SPEC.md 3.6):
 * encoding, validation, and finding the one claim of a task among the
 * records of the family. Pure functions over JSON and bytes (no store):
 * the lease layer (lease.h) and the folder's fsck both use them.
 *
 * Record (these nine fields in this order, indent 2, UTF-8, a trailing
 * newline): task_id, channel, owner, lease_expires_at, claimed_at,
 * updated_at, previous_owner, previous_lease_expires_at, recovery_reason.
 *
 * Errors: -1 with LEASE_INVALID_RECORD (a record that is malformed, names
 * another channel or owner than its file, has a bad time) or
 * LEASE_INCONSISTENT (two claims of one task, or a claim and its task
 * record that disagree), exit 2.
 */
#ifndef AGENTCHAT_CLAIMREC_H
#define AGENTCHAT_CLAIMREC_H

#include <jansson.h>
#include <stddef.h>

#include "agentchat/err.h"
#include "agentchat/store.h"

/* A new claim record (new reference), or NULL (ENOMEM). The prev_* and
 * reason fields may be NULL (JSON null). */
json_t *ac_claim_new(const char *id, const char *channel, const char *owner, const char *expires,
                     const char *now, const char *prev_owner, const char *prev_expires,
                     const char *reason);

/* The exact bytes of a claim record; malloc'ed, or NULL (ENOMEM). */
char *ac_claim_encode(const json_t *claim, size_t *len);

/* Validate claim `c` read from `file` as a claim of task `id` of `channel`. */
int ac_claim_check(const json_t *c, const char *file, const char *id, const char *channel,
                   struct ac_err *err);

/* The claim of task `id` of `channel` among `claims` (records named
 * "<id>.<something>": a dotted id may prefix another task's claims, which
 * are skipped), checked against the task's record `task` (NULL: none).
 * 0 with *claim (new reference) and *name (malloc'ed record name), or both
 * NULL when the task holds no lease; -1 with err. */
int ac_claim_find(const struct ac_recset *claims, const char *id, const char *channel,
                  const json_t *task, json_t **claim, char **name, struct ac_err *err);

#endif
