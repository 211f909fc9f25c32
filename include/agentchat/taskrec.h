/*
 * taskrec.h - one task record, tasks/<id>.json (docs/format.md 3.5).
 *
 * Records are held as jansson objects. Writing is byte-exact: the twelve
 * fields in this order, indent 2, non-ASCII as UTF-8, a trailing newline
 * (Python's json.dumps(record, indent=2, ensure_ascii=False) + "\n"):
 *
 *   id, channel, title, status, owner, created_by, depends_on[], files_hint[],
 *   acceptance[], lease_expires_at, branch, updated_at
 *
 * Reading validates everything, field by field in that order, with the
 * Python tool's codes and messages (every TASK_* code exits 2):
 *   not an object            TASK_INVALID_RECORD  task record must be a JSON object
 *   an extra key             TASK_UNKNOWN_FIELD   task record contains unknown fields
 *   a missing key            TASK_REQUIRED_FIELD_MISSING  required task field is missing
 *   id                       TASK_INVALID_ID, TASK_RECORD_ID_MISMATCH
 *   channel                  TASK_CHANNEL_MISMATCH
 *   title                    TASK_INVALID_TITLE (control characters)
 *   status                   TASK_INVALID_STATUS  unknown task status: 'paused'
 *   owner                    TASK_INVALID_OWNER   owner must not be empty
 *   created_by               TASK_INVALID_CREATED_BY
 *   depends_on               TASK_INVALID_DEPENDENCY_ID, TASK_DUPLICATE_DEPENDENCY
 *   files_hint               TASK_INVALID_FILES_HINT, TASK_PATH_OUTSIDE_WORKSPACE
 *   acceptance               TASK_INVALID_ACCEPTANCE
 *   lease_expires_at, updated_at  TASK_INVALID_TIMESTAMP (an explicit UTC offset)
 *   branch                   TASK_INVALID_BRANCH  branch must not be empty
 */
#ifndef AGENTCHAT_TASKREC_H
#define AGENTCHAT_TASKREC_H

#include <jansson.h>
#include <stdint.h>

#include "agentchat/err.h"

#define AC_TASK_NFIELDS 12
extern const char *const ac_task_fields[AC_TASK_NFIELDS];

/* [A-Za-z0-9][A-Za-z0-9._-]* : task ids, dependency ids, safe channel
 * names, and the safe identities of lease owners and actors. */
int ac_safe_name(const char *s);

/* Any character of Unicode category Cc (C0, DEL, C1) or invalid UTF-8. */
int ac_has_control(const char *s);

int ac_task_status_valid(const char *s);

/* Allowed status change (same-state writes always are):
 * open -> in_progress|blocked|cancelled; in_progress -> open|blocked|done|
 * cancelled; blocked -> open|in_progress|cancelled; done, cancelled final. */
int ac_task_transition_ok(const char *from, const char *to);

/* Fill err with TASK_INVALID_TRANSITION for from -> to; returns -1. */
int ac_task_transition_error(const char *from, const char *to, struct ac_err *err);

/* Validate a record read from `filename` ("<stem>.json") of `channel`;
 * chfd (the channel directory, or -1) resolves files_hint symlinks. */
int ac_task_validate(const json_t *rec, const char *filename, const char *channel, int chfd,
                     struct ac_err *err);

/* The exact file bytes of a (valid) record. malloc'ed, or NULL (ENOMEM). */
char *ac_task_encode(const json_t *rec, size_t *len);

/* Field accessors for valid records: NULL for JSON null. */
const char *ac_task_str(const json_t *rec, const char *field);

/* Instant of a timestamp field (valid record), in microseconds. */
int64_t ac_task_time(const json_t *rec, const char *field);

/* Sorted names of the fields whose values differ between two records. */
json_t *ac_task_changed_fields(const json_t *before, const json_t *after);

/* Error helper for the TASK_/LEASE_ families (exit code 2). */
int ac_task_err(struct ac_err *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
