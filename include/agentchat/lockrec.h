/*
 * lockrec.h - one path-lock record, locks/<lock_id>.json (docs/format.md 3.7):
 * parsing and validation, the exact bytes, expiry and path overlap. Pure
 * functions (no store): the path-lock operations (pathlock.h) and the
 * folder's fsck use them.
 *
 * Record (indent 2, sorted keys, UTF-8, trailing newline):
 *   channel, expires_at, lock_id, locked_at, owner,
 *   paths: [{display_path, kind: file|directory, normalized_path}],
 *   previous_expires_at, previous_owner, recovery_reason, updated_at
 * The reader also takes the aliases lease_expires_at and
 * previous_lease_expires_at (equal to the main fields when both exist).
 *
 * Validation is the Python tool's (PathLockRecord.from_dict and
 * _read_record of path_locks.py), in its order: the shape (an object, the
 * required fields, no unknown one, the aliases agreeing, the paths and
 * each entry) with PATH_LOCK_INVALID_RECORD, then lock_id, channel and
 * owner (PATH_LOCK_INVALID_LOCK_ID, _CHANNEL, _OWNER: "<field> must be a
 * safe identity"), the times (PATH_LOCK_INVALID_TIMESTAMP), the previous
 * holder and the reason (PATH_LOCK_INVALID_OWNER, _REASON), then the
 * channel and the file name (PATH_LOCK_INVALID_RECORD). Exit 1.
 */
#ifndef AGENTCHAT_LOCKREC_H
#define AGENTCHAT_LOCKREC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agentchat/err.h"

/* Largest lock record or journal we read (a record lists paths; 16 MB is
 * far beyond any real one and bounds a hostile file). */
#define AC_PATHLOCK_FILE_CAP (16u << 20)

struct ac_lockpath {
    char *display;          /* display_path: the argument as given */
    char *normalized;       /* normalized_path: workspace-relative */
    int is_dir;             /* kind: 1 "directory", 0 "file" */
};

/* One lock record as read (or about to be written). Strings are
 * NUL-terminated, owned by the record (malloc'ed, or inside `json` for a
 * parsed one); the optional ones are NULL for JSON null. Treat as read-only
 * and release with ac_lockrec_free(). */
struct ac_lockrec {
    char *lock_id;
    char *channel;
    char *owner;
    char *expires_at;       /* expires_at, or its alias lease_expires_at */
    char *locked_at;
    char *updated_at;
    char *previous_owner;
    char *previous_expires_at;
    char *recovery_reason;
    struct ac_lockpath *paths;
    size_t npaths;
    int64_t expires_us;     /* expires_at as microseconds since 1970 */
    json_t *json;           /* the parsed record (NULL for a new one) */
    uint64_t generation;    /* the store's version of the record (store.h;
                               etcd: the revision of its last write, which
                               for a lock is always a grant: lock or
                               recover): the holder's fencing token; 0 when
                               the store keeps none (the folder) */
    int borrowed;           /* the strings point into json (parsed records) */
};

struct ac_locklist {
    struct ac_lockrec *v;   /* sorted by lock id (file name) */
    size_t n;
};

void ac_lockrec_free(struct ac_lockrec *r);
void ac_locklist_free(struct ac_locklist *l);

/* True when the record has expired at `now_us` (expiry <= now). */
int ac_lockrec_expired(const struct ac_lockrec *r, int64_t now_us);

void ac_lockpath_free(struct ac_lockpath *p);

/* Do two normalized paths overlap? Equal, one a '/'-prefix of the other,
 * or either is ".". */
int ac_pathlock_overlaps(const char *a, const char *b);

/* Is a stored normalized_path canonical and workspace-relative? */
int ac_pathlock_path_canonical(const char *p);

/* The exact bytes of a record file (sorted keys, indent 2, UTF-8, "\n").
 * malloc'ed, or NULL (ENOMEM). */
char *ac_lockrec_encode(const struct ac_lockrec *r, size_t *len);

/* The record's paths as their JSON array ({display_path, kind,
 * normalized_path}, a parsed record's exactly as read); new reference, or
 * NULL (ENOMEM). */
json_t *ac_lockrec_paths_json(const struct ac_lockrec *r);

/* Parse and validate record bytes read from `filename` of channel
 * `channel` (PATH_LOCK_INVALID_RECORD with the Python tool's messages). */
int ac_lockrec_parse(const char *data, size_t len, const char *filename,
                     const char *channel, struct ac_lockrec *out, struct ac_err *err);

#endif
