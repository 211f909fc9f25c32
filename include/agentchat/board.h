/*
 * board.h - the task board of one channel (docs/format.md 2.4, 3.5, 3.6, 3.9).
 *
 * Every task command runs against a *board*: the channel's `_tasks.lock`
 * held (flock; readers too, as the Python tool does) and the records of
 * tasks/ read and validated when the command's rules say so, so that a bad
 * record fails exactly the commands the Python tool's would, with the same
 * error first. A plain board (AC_BOARD_READ) loads every record and checks
 * the dependency graph at once (list, show, lease operations); a deferred
 * one (AC_BOARD_DEFER) only takes the lock, and the operation reads one
 * record, the whole board or nothing in its own order (create, update,
 * recover-pending). Mutations then write records atomically and post their
 * audit message; lease mutations go through the lease journal (lease.h).
 *
 * Calling sequence:
 *     struct ac_board b;
 *     if (ac_board_open(ch, AC_BOARD_DEFER, &b, &err) == -1) fail;
 *     json_t *task;
 *     rc = ac_board_create(&b, &spec, &task, &err);   // or update, lease ops
 *     ...
 *     ac_board_close(&b);
 *
 * Error handling: -1 with err filled (TASK_* and LEASE_* codes exit 2).
 * Records returned are borrowed from the board unless said otherwise.
 */
#ifndef AGENTCHAT_BOARD_H
#define AGENTCHAT_BOARD_H

#include <jansson.h>
#include <stdint.h>

#include "agentchat/err.h"
#include "agentchat/mutex.h"
#include "agentchat/store.h"

#define AC_TASKS_LOCK "_tasks.lock"
#define AC_TASKS_DIR "tasks"
#define AC_CLAIMS_DIR "claims"
#define AC_TASK_RECORD_CAP (4u << 20)
/* Longest id `task create` accepts: tasks/<id>.json must fit a file name
 * (255 bytes). A lease whose file name claims/<id>.<owner>.json would not
 * fit is refused before anything is written (LEASE_INVALID_OWNER). */
#define AC_TASK_ID_MAX 250

enum {
    AC_BOARD_READ = 0,
    AC_BOARD_LENIENT = 2,    /* with READ: skip bad records, no graph check
                                (the `state` summary without --strict) */
    AC_BOARD_DEFER = 4       /* lock only: the operation loads (ac_board_load) */
};

struct ac_board {
    struct ac_chan *ch;
    int chfd;
    const char *channel;
    struct ac_mutex mutex;
    json_t *tasks;           /* object: id -> record */
    json_t *ids;             /* array of ids, sorted */
    int lenient;
    size_t skipped;          /* records left out by a lenient load */
};

/* Remove dead temp files from tasks/ and claims/ (mutex held; call after a
 * successful mutation). */
void ac_board_sweep(struct ac_board *b);

/* Lock and load. AC_BOARD_READ never creates _tasks.lock; a reader that
 * succeeded calls ac_board_keep (creates it where it was missing, as the
 * Python tool's reads leave it) before ac_board_close. */
int ac_board_open(struct ac_chan *ch, int mode, struct ac_board *b, struct ac_err *err);
void ac_board_keep(struct ac_board *b);
void ac_board_close(struct ac_board *b);

/* Read and validate every record (Python's _read_all), then, with `graph`,
 * check the dependency graph (_read_snapshot). Replaces what was loaded. */
int ac_board_load(struct ac_board *b, int graph, struct ac_err *err);

/* The record of a loaded board (borrowed), or NULL with TASK_NOT_FOUND
 * "task record does not exist: <id>". Check the id with
 * ac_task_id_findable() first (TASK_INVALID_ID comes before any read). */
json_t *ac_board_get(struct ac_board *b, const char *id, struct ac_err *err);

/* tasks/<id>.json alone, read and validated (Python's _read_path): a new
 * reference in *out, or -1 with TASK_NOT_FOUND or the record's error. */
int ac_board_read_one(struct ac_board *b, const char *id, json_t **out, struct ac_err *err);

/* A changed record `rec` of `cur` as the Python tool checks a candidate:
 * its fields (and channel), the status transition, then (after loading
 * every record when `load`) the graph with it in place, then, entering or
 * staying in in_progress or done, its dependencies. */
int ac_board_candidate(struct ac_board *b, const json_t *cur, json_t *rec, int load,
                       struct ac_err *err);

/* Dependencies of `rec` that are not done, in depends_on order, joined with
 * ", ": "a, c", or with their status "a=open, c=blocked" (with_status).
 * Empty when ready. malloc'ed, or NULL on ENOMEM. */
char *ac_board_blocking(struct ac_board *b, const json_t *rec, int with_status);

struct ac_task_spec {
    const char *id;
    const char *created_by;
    const char *title;
    const char *owner;           /* NULL or "" for none */
    json_t *depends_on;          /* arrays of strings (borrowed) */
    json_t *files_hint;
    json_t *acceptance;
    const char *branch;          /* NULL for none ("" is an error) */
};

/* task create (deferred board): the new record, validated first, then
 * TASK_ALREADY_EXISTS when tasks/<id>.json exists, then every record and
 * the graph with it added. The new record (new reference) in *out. */
int ac_board_create(struct ac_board *b, const struct ac_task_spec *spec, json_t **out,
                    struct ac_err *err);

struct ac_task_change {
    const char *title;           /* NULL: unchanged */
    const char *owner;           /* NULL: unchanged ("" is an error) */
    int clear_owner;
    json_t *depends_on;          /* NULL: unchanged */
    json_t *files_hint;
    json_t *acceptance;
    const char *branch;
    int clear_branch;
    const char *status;
};

/* task update (and block) by `actor` on a deferred board, in the Python
 * tool's order: TASK_INVALID_UPDATE without a change, the id, that record
 * alone, the lease rules (ac_lease_update_gate: any owner flag counts as an
 * owner change), then the candidate (ac_board_candidate). The new record
 * (new reference) in *out. */
int ac_board_update(struct ac_board *b, const char *id, const char *actor,
                    const struct ac_task_change *chg, json_t **out, struct ac_err *err);

/* Read tasks/<name> (dirfd: the tasks directory) as JSON, not yet
 * validated: TASK_INVALID_RECORD "could not read task record <name>: ..."
 * with the Python tool's wording. *out is a new reference. */
int ac_board_read_record(int dirfd, const char *name, json_t **out, struct ac_err *err);

/* Helpers shared with lease.c. */
/* The change of a task without a lease journal (create: cur NULL; update;
 * block without a lease): write `rec` as its record, post the `event` audit
 * message from `actor`, and put rec in b->tasks. A failure once the record
 * is in place restores the previous bytes (or removes a created record):
 * TASK_AUDIT_FAILED "task record changed but audit event could not be
 * written: <why>" when the audit post failed, TASK_IO_ERROR when the
 * directory sync did, TASK_AUDIT_ROLLBACK_FAILED "could not roll back task
 * create|update: ..." if the restore fails too. A crash in between still
 * leaves the record without its message (no journal, format.md 3.5). */
int ac_board_commit_plain(struct ac_board *b, json_t *cur, json_t *rec, const char *actor,
                          const char *event, struct ac_err *err);
int ac_board_graph_check(json_t *tasks, json_t *ids, struct ac_err *err);
int ac_board_deps_ready(struct ac_board *b, const json_t *rec, struct ac_err *err);
json_t *ac_board_audit_body(struct ac_board *b, const char *event, const json_t *before,
                            const json_t *after);
int ac_board_reload(struct ac_board *b, struct ac_err *err);

/* Wall-clock timestamp strings: seconds (records from create/update) or
 * microseconds (lease operations). */
void ac_board_now(char out[48], int micro);

#endif
