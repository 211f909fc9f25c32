/*
 * mutex.h - the advisory mutation locks of the task board and path locks
 * (docs/format.md 4 "Advisory locks").
 *
 * `<channel>/_tasks.lock` and `<channel>/.path-locks.lock` are empty
 * regular files; the lock is flock(LOCK_EX|LOCK_NB) on them, retried every
 * 10 ms until the caller's deadline (10 s for every command, exactly as the
 * Python tool takes them), so both tools exclude each other. Readers take
 * the same lock. These are the named mutexes of the store interface
 * (store.h, ac_chan_mutex_acquire); the wrapper reaches the fault point
 * "mutex.acquire" before any of them.
 *
 * Why flock: classic fcntl locks are per process and vanish when any
 * descriptor of the file is closed (SQLite's essay in os_unix.c); flock
 * belongs to the open file description. The lock file is opened with
 * O_NOFOLLOW (a symlink there is refused), must be a regular file, and
 * after locking we check that the name still refers to the inode we locked
 * (SQLite's fileHasMoved): someone may have replaced the file meanwhile.
 * Where the lock file cannot be opened for writing (EROFS, EACCES) an
 * existing one is opened read-only (flock does not need write access), so
 * reading commands work on a read-only mount or another user's channel.
 *
 * Calling sequence:
 *     struct ac_flock m;
 *     int rc = ac_flock_acquire(chfd, "_tasks.lock", deadline, &m);
 *     ... mutate ...                        // rc: 0, AC_MUTEX_TIMEOUT, -1
 *     ac_flock_release(&m);
 */
#ifndef AGENTCHAT_MUTEX_H
#define AGENTCHAT_MUTEX_H

#include <stdint.h>

#include "agentchat/store.h"   /* AC_MUTEX_TIMEOUT, AC_MUTEX_BUSY */

/* One held flock: the file-system backend's struct ac_mutex. */
struct ac_flock {
    struct ac_mutex base;
    int fd;
    int missing;            /* ac_flock_acquire_reader found no lock file */
};

/* 0 acquired; AC_MUTEX_TIMEOUT when the CLOCK_MONOTONIC deadline passed
 * while another held it; -1 with errno on an error (EINTR when
 * interrupted, ELOOP/EINVAL for a lock path that is not a regular file). */
int ac_flock_acquire(int dirfd, const char *name, int64_t deadline_ns, struct ac_flock *m);

/* The same for a checker that must not change the folder (fsck): the lock
 * file is never created; -1 with ENOENT when it does not exist (then no
 * writer has ever used it... or one is creating it right now, which a
 * read-only check may ignore: every write it guards is atomic). */
int ac_flock_acquire_existing(int dirfd, const char *name, int64_t deadline_ns,
                              struct ac_flock *m);

/* For a reading command (AC_MUTEX_READER): as ac_flock_acquire_existing,
 * but a missing lock file is no error: 0 with m->missing set and nothing
 * held (no writer has ever used it). A read that then fails leaves the
 * folder as it was; one that succeeds calls ac_flock_keep, which creates
 * the file, as a read of the Python tool leaves it (the recorded
 * transcripts show it). */
int ac_flock_acquire_reader(int dirfd, const char *name, int64_t deadline_ns,
                            struct ac_flock *m);
void ac_flock_keep(int dirfd, const char *name, const struct ac_flock *m);

/* flock the directory dirfd itself (no lock file, so the folder format is
 * unchanged): the exclusion of one long-running writer per channel that
 * the Python tool has no counterpart for (`import`). With deadline 0,
 * AC_MUTEX_BUSY when another holds it; else retry until acquired or the
 * deadline passed (AC_MUTEX_TIMEOUT; INT64_MAX: forever).
 * -1 with errno on an error (EINTR when interrupted). */
int ac_flock_dir(int dirfd, int64_t deadline_ns, struct ac_flock *m);

/* Release (idempotent). */
void ac_flock_release(struct ac_flock *m);

#endif
