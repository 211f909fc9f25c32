/*
 * claimrec.h - lease records, claims/<task>.<owner>.json (docs/format.md 3.6):
 * encoding, validation, and finding the one claim of a task among the
 * records of the family. Pure functions over JSON and bytes (no store):
 * the lease layer (lease.h) and the folder's fsck both use them.
 *
 * Record (these nine fields in this order, indent 2, UTF-8, a trailing
 * newline): task_id, channel, owner, lease_expires_at, claimed_at,
 * updated_at, previous_owner, previous_lease_expires_at, recovery_reason.
 *
 * Validation is the Python tool's (LeaseRecord.from_dict and _read_claim
 * of lease_store.py), in its order, with its codes (all exit 2):
 *   not an object        LEASE_INVALID_RECORD  lease record must be a JSON object
 *   one of the first six missing  LEASE_REQUIRED_FIELD_MISSING
 *   an extra key         LEASE_UNKNOWN_FIELD
 *   task_id, channel, owner  LEASE_INVALID_TASK_ID, LEASE_INVALID_CHANNEL,
 *                        LEASE_INVALID_OWNER ("<field> must be a safe identity")
 *   the three times      LEASE_INVALID_TIMESTAMP (as taskrec.h's)
 *   previous_owner, previous_lease_expires_at (or null)
 *   recovery_reason (or null)  LEASE_INVALID_REASON
 * and for a record read from a file: its channel (LEASE_INCONSISTENT
 * "lease channel 'x' does not match 'c'") and its file name
 * (LEASE_RECORD_ID_MISMATCH). A file that cannot be read is
 * LEASE_NOT_FOUND (absent) or LEASE_INVALID_RECORD "could not read lease
 * record <file>: <str(OSError)>".
 */
#ifndef AGENTCHAT_CLAIMREC_H
#define AGENTCHAT_CLAIMREC_H

#include <jansson.h>
#include <stddef.h>

#include "agentchat/err.h"
#include "agentchat/store.h"

/* A new claim record (new reference), or NULL (ENOMEM). The prev_* and
 * reason values may be NULL (JSON null). */
json_t *ac_claim_new(const char *id, const char *channel, const char *owner, const char *expires,
                     const char *claimed, const char *now, const json_t *prev_owner,
                     const json_t *prev_expires, const json_t *reason);

/* The exact bytes of a claim record; malloc'ed, or NULL (ENOMEM). */
char *ac_claim_encode(const json_t *claim, size_t *len);

/* A recovery reason: LEASE_INVALID_REASON "recovery reason must not be
 * empty" (blank after str.strip()) or "... contains a forbidden control
 * character" (CR or LF; tab and DEL are text). */
int ac_claim_reason_check(const char *reason, struct ac_err *err);

/* The record's own checks (LeaseRecord.from_dict). */
int ac_claim_check(const json_t *c, struct ac_err *err);

/* Record `name` ("<task>.<owner>") of `channel` from its bytes: parsed,
 * checked, then its channel and its name. *out is a new reference. */
int ac_claim_decode(const char *name, const char *data, size_t len, const char *channel,
                    json_t **out, struct ac_err *err);

/* The error of record `name` of ch that could not be read (errno e):
 * LEASE_NOT_FOUND for ENOENT, else LEASE_INVALID_RECORD with Python's
 * str(OSError), which names the record's path (ac_chan_rec_where; ch NULL:
 * no path). Returns -1. */
int ac_claim_read_error(struct ac_chan *ch, const char *name, int e, struct ac_err *err);

/* The claim of task `id` among `claims` (sorted): every record is read and
 * checked in order (a broken claim of another task fails too, as the
 * Python tool reads them all), then the ones of the task are kept; two or
 * more are LEASE_INCONSISTENT "multiple active leases exist for task <id>".
 * 0 with *claim (new reference) and *name (malloc'ed record name), or both
 * NULL when the task holds no lease; -1 with err. ch (may be NULL) as for
 * ac_claim_read_error. */
int ac_claim_find(const struct ac_recset *claims, struct ac_chan *ch, const char *id,
                  const char *channel, json_t **claim, char **name, struct ac_err *err);

/* _assert_consistent(): task record and claim (NULL: none) agree:
 * LEASE_INCONSISTENT "task <id> has a lease expiry without an active claim
 * record" or "task <id> and claim record disagree". */
int ac_claim_consistent(const json_t *task, const json_t *claim, struct ac_err *err);

/* LeaseRecord.to_dict() equality: the nine fields, absent ones as null. */
int ac_claims_equal(const json_t *a, const json_t *b);

#endif
