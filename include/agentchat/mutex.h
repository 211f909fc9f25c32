/*
 * mutex.h - the advisory mutation locks of the task board and path locks
 * (docs/format.md 4 "Advisory locks").
 *
 * `<channel>/_tasks.lock` and `<channel>/.path-locks.lock` are empty
 * regular files; the lock is flock(LOCK_EX|LOCK_NB) on them, retried every
 * 10 ms for up to 10 s, exactly as the Python tool takes them, so both tools
 * exclude each other. Readers take the same lock.
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
 *     struct ac_mutex m;
 *     int rc = ac_mutex_acquire(chfd, "_tasks.lock", &m);  // 0, AC_MUTEX_TIMEOUT, -1
 *     ... mutate ...
 *     ac_mutex_release(&m);
 */
#ifndef AGENTCHAT_MUTEX_H
#define AGENTCHAT_MUTEX_H

#define AC_MUTEX_TIMEOUT 1

struct ac_mutex {
    int fd;
    int missing;            /* ac_mutex_acquire_reader found no lock file */
};

/* 0 acquired; AC_MUTEX_TIMEOUT after 10 s of trying; -1 with errno on an
 * error (EINTR when interrupted, ELOOP/EINVAL for a lock path that is not a
 * regular file). */
int ac_mutex_acquire(int dirfd, const char *name, struct ac_mutex *m);

/* The same for a checker that must not change the folder (fsck): the lock
 * file is never created; -1 with ENOENT when it does not exist (then no
 * writer has ever used it... or one is creating it right now, which a
 * read-only check may ignore: every write it guards is atomic). */
int ac_mutex_acquire_existing(int dirfd, const char *name, struct ac_mutex *m);

/* For a reading command: as ac_mutex_acquire_existing, but a missing lock
 * file is no error: 0 with m->missing set and nothing held (no writer has
 * ever used it). A read that then fails leaves the folder as it was; one
 * that succeeds calls ac_mutex_keep, which creates the file, as a read of
 * the Python tool leaves it (the recorded transcripts show it). */
int ac_mutex_acquire_reader(int dirfd, const char *name, struct ac_mutex *m);
void ac_mutex_keep(int dirfd, const char *name, const struct ac_mutex *m);

/* flock the directory dirfd itself (no lock file, so the folder format is
 * unchanged): the exclusion of one long-running writer per channel that
 * the Python tool has no counterpart for (`import`). Without `wait`,
 * AC_MUTEX_BUSY when another holds it; with it, retry until acquired.
 * -1 with errno on an error (EINTR when interrupted). */
#define AC_MUTEX_BUSY 2
int ac_mutex_lock_dir(int dirfd, int wait, struct ac_mutex *m);

/* Release (idempotent). */
void ac_mutex_release(struct ac_mutex *m);

#endif
