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
 * Reading validates everything, in the Python tool's order (task_model.py
 * and task_store.py of agent-chat-plugin 0.7), with its codes and messages
 * (every TASK_* code exits 2):
 *   not an object      TASK_INVALID_RECORD  task record must be a JSON object
 *   a missing key      TASK_REQUIRED_FIELD_MISSING  required task field is missing
 *   an extra key       TASK_UNKNOWN_FIELD   task record contains unknown fields
 *   then the fields in record order. Text fields ("must be a string",
 *   "must not be empty" after str.strip(), "contains a forbidden control
 *   character" for NUL, CR and LF only: tab and DEL are text):
 *   id                 TASK_INVALID_ID (and [A-Za-z0-9][A-Za-z0-9._-]*)
 *   channel            TASK_INVALID_CHANNEL (and "channel is not a safe channel name")
 *   title              TASK_INVALID_TITLE (may be empty)
 *   status             TASK_INVALID_STATUS  unknown task status: <repr>
 *   owner (or null), created_by   TASK_INVALID_OWNER, TASK_INVALID_CREATED_BY
 *   depends_on         TASK_INVALID_DEPENDS_ON (array), TASK_INVALID_DEPENDENCY_ID
 *                      ("dependency ..."), TASK_DUPLICATE_DEPENDENCY
 *   files_hint         TASK_INVALID_FILES_HINT (array), TASK_PATH_OUTSIDE_WORKSPACE
 *   acceptance         TASK_INVALID_ACCEPTANCE (array; "acceptance item ...")
 *   lease_expires_at (or null), branch (or null), updated_at
 *                      TASK_INVALID_TIMESTAMP, TASK_INVALID_BRANCH
 *   and last, for a record read from a file, TASK_RECORD_ID_MISMATCH and
 *   TASK_CHANNEL_MISMATCH.
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

/* A task id as lookups accept it (the Python tool's _task_path): the
 * first character alphanumeric and the others alphanumeric or '.', '_',
 * '-', where alphanumeric is Python's str.isalnum() (any script: "ünï" is
 * a possible id to look up, which then does not exist). */
int ac_task_id_findable(const char *id);

/* TASK_INVALID_ID: unsafe task id: <repr(id)>. Returns -1. */
int ac_task_unsafe_id(const char *id, struct ac_err *err);

/* The Python tool's _require_text(): a string, not blank unless
 * allow_empty, no NUL, CR or LF. Errors "<field> must be a string",
 * "<field> must not be empty", "<field> contains a forbidden control
 * character" with `code`. */
int ac_task_text_check(const json_t *v, const char *field, int allow_empty, const char *code,
                       struct ac_err *err);

/* parse_timestamp(): a string that, stripped, datetime.fromisoformat()
 * reads with a UTC offset. Errors "<field> must be an ISO-8601 string",
 * "<field> is not valid ISO-8601", "<field> must include an explicit UTC
 * offset" with `code`. */
int ac_task_time_check(const json_t *v, const char *field, const char *code, struct ac_err *err);

/* The twelve fields of a record, without the file checks (a candidate
 * before it is written). */
int ac_task_fields_check(const json_t *rec, int chfd, struct ac_err *err);

int ac_task_status_valid(const char *s);

/* Allowed status change (same-state writes always are):
 * open -> in_progress|blocked|cancelled; in_progress -> open|blocked|done|
 * cancelled; blocked -> open|in_progress|cancelled; done, cancelled final. */
int ac_task_transition_ok(const char *from, const char *to);

/* Fill err with TASK_INVALID_TRANSITION for from -> to; returns -1. */
int ac_task_transition_error(const char *from, const char *to, struct ac_err *err);

/* Validate a record of `channel` read from `filename` ("<stem>.json"; NULL
 * for a record that has no file yet); chfd (the channel directory, or -1)
 * resolves files_hint symlinks. */
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
