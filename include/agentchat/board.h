/*
 * board.h - the task board of one channel (docs/format.md 2.4, 3.5, 3.6, 3.9).
 *
 * Every task command runs against a *board*: the channel's `_tasks.lock`
 * held (flock; readers too, as the Python tool does) and the records of
 * tasks/ read and validated when the command's rules say so, so that a bad
 * record fails exactly the commands the Python tool's would, with the same
 * error first. A plain board (AC_BOARD_READ) loads every record and checks
 * the dependency graph at once (list, show); a deferred one
 * (AC_BOARD_DEFER) only takes the lock, and the operation reads one
 * record, the whole board or nothing in its own order (create, update,
 * the lease operations, recover-pending). The layers: task records (taskrec.h) -> the board (this
 * file: the locked snapshot, the graph, a plain record change) -> leases
 * (lease.h) -> the tasks module (tasks.h: every task command).
 *
 * Calling sequence (the tasks module does this for each command):
 *     struct ac_board b;
 *     if (ac_board_open(ch, AC_BOARD_DEFER, &b, &err) == -1) fail;
 *     json_t *task;
 *     if (ac_board_read_one(&b, "t1", &task, &err) == -1) fail;
 *     ... ac_board_candidate / ac_board_commit_plain ...
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
#include "agentchat/store.h"

#define AC_TASKS_LOCK AC_MUTEX_TASKS
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
    const char *channel;
    struct ac_mutex *mutex;  /* AC_MUTEX_TASKS, held while open */
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

/* The dependency graph of the loaded records with `rec` in place of the
 * record of its id, or added last (Python: records + [candidate]). */
int ac_board_graph_with(struct ac_board *b, json_t *rec, struct ac_err *err);

/* Dependencies of `rec` that are not done, in depends_on order, joined with
 * ", ": "a, c", or with their status "a=open, c=blocked" (with_status).
 * Empty when ready. malloc'ed, or NULL on ENOMEM. */
char *ac_board_blocking(struct ac_board *b, const json_t *rec, int with_status);

/* The change of a task without a lease (create: cur NULL; update; block
 * without a lease): one batch of the store (AC_BATCH_TASK) that writes
 * `rec` as its record and posts the `event` audit message from `actor`;
 * then rec is put in b->tasks. A failure once the record is in place
 * restores the previous bytes (or removes a created record):
 * TASK_AUDIT_FAILED "task record changed but audit event could not be
 * written: <why>" when the audit post failed, TASK_IO_ERROR when the
 * directory sync did, TASK_AUDIT_ROLLBACK_FAILED "could not roll back task
 * create|update: ..." if the restore fails too. A crash in between still
 * leaves the record without its message (not journaled, format.md 3.5). */
int ac_board_commit_plain(struct ac_board *b, json_t *cur, json_t *rec, const char *actor,
                          const char *event, struct ac_err *err);

/* TASK_DEPENDENCY_NOT_READY when a dependency of rec is not done. */
int ac_board_deps_ready(struct ac_board *b, const json_t *rec, struct ac_err *err);
json_t *ac_board_audit_body(struct ac_board *b, const char *event, const json_t *before,
                            const json_t *after);

/* Wall-clock timestamp strings: seconds (records from create/update) or
 * microseconds (lease operations). */
void ac_board_now(char out[48], int micro);

#endif
