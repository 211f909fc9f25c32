/*
 * pathlock.h - path locks on workspace files and directories (docs/format.md 2.2,
 * 3.7, 3.9): the lock, check, unlock, recover and recover-pending
 * operations. The records themselves are lockrec.h's.
 *
 * An agent reserves files and directories of the channel's workspace for a
 * lease. A lock is one record `locks/<lock_id>.json` holding one or more
 * paths; a directory path covers everything below it; an expired lock still
 * conflicts until someone recovers it explicitly with a reason. The folder
 * format and every error line are the Python tool's, so both tools can
 * lock in one channel at the same time:
 *
 *   <channel>/.path-locks.lock               flock mutex of every command here
 *   <channel>/locks/<lock_id>.json           one active lock (uuid4 hex id)
 *   <channel>/locks/.path-lock-transaction.json   the journal of a mutation
 *
 * Every mutation is one batch of the store (store.h, AC_BATCH_PATHLOCK):
 * the record change and its audit message, all or nothing. On the folder
 * the batch is the path-lock journal of src/fs/journal.c:
 *
 * Journal (the record's layout): version 1, transaction_id, phase
 * prepared|applied|published, operation lock|unlock|recover, event
 * path.locked|path.lock.unlocked|path.lock.recovered, target "<id>.json"
 * (or "locks/<id>.json"), before and after (base64 of the record file's
 * bytes, null for "no file"), actor. Read as the Python tool reads it:
 * version 1 or 2, a safe transaction id and actor, any event, optional
 * previous_bytes/next_bytes (docs/path-locks.md has the messages).
 *
 * Lifecycle of one mutation (lock, unlock, recover), under the mutex:
 *   1. write the journal, phase prepared (published with link(): never
 *      over an existing journal);
 *   2. apply: link() the new record (lock), rename() the rewritten record
 *      over the old one (recover), or unlink() it (unlock);
 *   3. phase applied;
 *   4. post the audit message (its body holds the transaction_id);
 *   5. phase published;
 *   6. remove the journal.
 * A crash anywhere leaves the old state, the new state, or the journal,
 * which makes lock/check/unlock/recover fail with
 * PATH_LOCK_TRANSACTION_PENDING until recover-pending resolves it:
 *   prepared                       -> restore `before`
 *   applied, audit message found   -> verify `after`, remove the journal
 *   applied, no audit message      -> restore `before`
 *   published                      -> verify `after`, remove the journal
 *                                     (a mismatch is TRANSACTION_INVALID)
 *   --resolve-publication rollback -> restore `before` (applied/published)
 *   --resolve-publication published-> verify `after` (applied/published)
 * A failed audit post is resolved the same way at once, in process: the
 * change stands when its message went out after all, else it is rolled
 * back and the command fails with PATH_LOCK_AUDIT_FAILED
 * (PATH_LOCK_AUDIT_ROLLBACK_FAILED when the rollback fails too, the
 * journal left for recover-pending).
 *
 * Calling sequence (every operation takes and releases the mutex itself):
 *     struct ac_err err = AC_ERR_INIT;
 *     struct ac_lockrec rec;
 *     if (ac_pathlock_lock(ch, paths, n, "alice", 300.0, &rec, &err) == -1)
 *         report(err.code, err.msg);          // PATH_LOCK_*, exit 1
 *     ... rec.lock_id ...
 *     ac_lockrec_free(&rec);
 *
 * Error handling: -1 with *err filled (codes PATH_LOCK_*, exit 1, the
 * Python tool's messages), or an I/O error (IO_ERROR). Nothing prints.
 */
#ifndef AGENTCHAT_PATHLOCK_H
#define AGENTCHAT_PATHLOCK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agentchat/err.h"
#include "agentchat/lockrec.h"
#include "agentchat/store.h"

#define AC_PATHLOCK_MUTEX AC_MUTEX_PATHLOCKS
#define AC_PATHLOCK_DIR "locks"
#define AC_PATHLOCK_DEFAULT_LEASE 300.0

/* ---- validation (no I/O) ---- */

/* "[A-Za-z0-9][A-Za-z0-9._-]*": PATH_LOCK_INVALID_OWNER
 * "<what> must be a safe identity" (what is "owner" or "actor"). */
int ac_pathlock_check_owner(const char *owner, const char *what, struct ac_err *err);

/* A finite, positive number of seconds ("lock duration must be positive")
 * that keeps the expiry within the years 1..9999 ("lock duration is outside
 * the supported timestamp range"): PATH_LOCK_INVALID_DURATION. *us gets the
 * duration in microseconds (rounded half to even, as timedelta does). */
int ac_pathlock_check_duration(double seconds, int64_t *us, struct ac_err *err);

/* Non-empty (after stripping whitespace) and free of control characters:
 * PATH_LOCK_INVALID_REASON. */
int ac_pathlock_check_reason(const char *reason, struct ac_err *err);

/* Normalize `path` in the channel's workspace (format.md 3.7,
 * ac_chan_path_resolve): fills *out (display = path) or fails with
 * PATH_LOCK_INVALID_PATH. */
int ac_pathlock_normalize(struct ac_chan *ch, const char *path, struct ac_lockpath *out,
                          struct ac_err *err);

/* ---- operations (each takes the mutex) ---- */

/* Lock `paths` (n >= 1) for `owner` for `lease` seconds. *out receives
 * the new record. */
int ac_pathlock_lock(struct ac_chan *ch, const char *const *paths, size_t n,
                     const char *owner, double lease, struct ac_lockrec *out,
                     struct ac_err *err);

/* The locks overlapping any of `paths`, expired ones included, sorted by
 * lock id (an empty list means "available"). `owner` may be NULL; when
 * given it is only validated. */
int ac_pathlock_check(struct ac_chan *ch, const char *const *paths, size_t n,
                      const char *owner, struct ac_locklist *out, struct ac_err *err);

/* Remove the lock named by `target` (a lock id, or a path whose normalized
 * form equals one of the lock's normalized paths). *out receives the
 * removed record (may be NULL). */
int ac_pathlock_unlock(struct ac_chan *ch, const char *target, const char *owner,
                       struct ac_lockrec *out, struct ac_err *err);
/* The same, refused with PATH_LOCK_FENCED unless the lock still has
 * generation `fence` (the holder's token, lockrec.h; 0: no check). */
int ac_pathlock_unlock_fenced(struct ac_chan *ch, const char *target, const char *owner,
                              uint64_t fence, struct ac_lockrec *out, struct ac_err *err);

/* Take over the expired lock named by `target` for `owner` with `reason`
 * for `lease` seconds; the lock id is kept. *out receives the new record
 * (previous_owner and friends set). */
int ac_pathlock_recover(struct ac_chan *ch, const char *target, const char *owner,
                        const char *reason, double lease, struct ac_lockrec *out,
                        struct ac_err *err);

enum ac_pathlock_resolve {
    AC_RESOLVE_AUTO = 0,        /* decide from the phase (see above) */
    AC_RESOLVE_ROLLBACK,        /* --resolve-publication rollback */
    AC_RESOLVE_PUBLISHED        /* --resolve-publication published */
};

/* What recover-pending did. */
enum ac_pathlock_outcome {
    AC_PENDING_NONE = 0,        /* there was no journal */
    AC_PENDING_ROLLED_BACK,     /* `before` restored */
    AC_PENDING_COMPLETED        /* `after` verified, journal removed */
};

struct ac_pending_info {
    enum ac_pathlock_outcome outcome;
    char transaction_id[128];
    char operation[16];
    char lock_id[256];          /* the target's id ("" when none) */
};

/* Resolve a pending journal (no audit message is posted). Nothing pending
 * is a success with outcome AC_PENDING_NONE. Temp files a crash left in
 * locks/ are removed too. `info` may be NULL. */
int ac_pathlock_recover_pending(struct ac_chan *ch, const char *actor,
                                enum ac_pathlock_resolve resolve,
                                struct ac_pending_info *info, struct ac_err *err);

enum {
    AC_LIST_IGNORE_JOURNAL = 1, /* do not fail on a pending journal */
    AC_LIST_LENIENT = 2         /* leave out records that cannot be read or
                                   are invalid (the `state` summary) */
};

/* Every lock record, validated, sorted by id. Fails on a pending journal
 * (TRANSACTION_PENDING / _INVALID) unless AC_LIST_IGNORE_JOURNAL; then
 * *pending (may be NULL) is set to 1 when a usable journal exists and
 * pending_id (at least 256 bytes, may be NULL) to the lock id it concerns. */
int ac_pathlock_list(struct ac_chan *ch, int flags, struct ac_locklist *out,
                     int *pending, char *pending_id, struct ac_err *err);

#endif
