/*
 * seq.h - sequence allocation (docs/format.md 4 "Sequence allocation").
 *
 * The channel's post mutex is the *directory* `_seq.lock`, created with
 * mkdir, because that is what the Python tool uses and both tools must
 * exclude each other. On EEXIST we retry every 50 ms for up to 10 s; a lock
 * directory whose mtime is more than 30 s old is stale and removed.
 *
 * Stale locks make two holders possible (two waiters can both decide the
 * lock is stale; one removes the fresh lock of the other). So mutual
 * exclusion is not what keeps seqs unique; three further rules are:
 *   1. the high-water mark `.seqhigh` (decimal, written atomically) records
 *      the highest seq ever allocated, so deleted seqs are never reused;
 *   2. before using seq N a poster creates the reservation file
 *      `.seqres-N` with O_EXCL, then re-reads the high-water mark; a second
 *      holder trying N fails the O_EXCL or sees N in `.seqhigh` and moves on;
 *   3. the message is written into that very reservation file and published
 *      with link(), which never overwrites; then the reservation name goes.
 * A crash may leave a reservation behind, which only burns that seq (fsck
 * removes the file).
 *
 * Calling sequence:
 *     struct ac_seqlock lk;
 *     if (ac_seqlock_acquire(dirfd, &lk, &err) == -1) fail;
 *     ... ac_seq_reserve(...), publish, ac_seq_unreserve(...) ...
 *     ac_seqlock_release(&lk);
 */
#ifndef AGENTCHAT_SEQ_H
#define AGENTCHAT_SEQ_H

#include <stdint.h>

#include "agentchat/err.h"
#include "agentchat/fsutil.h"

#define AC_SEQ_LOCK_DIR "_seq.lock"
#define AC_SEQ_HIGH_FILE ".seqhigh"

struct ac_seqlock {
    int dirfd;
    int held;
    /* Evidence for the scan stamp (see scan.h): the directory state right
     * before and after our mkdir (have_states: both were read), and how
     * long that took. */
    struct ac_dirstate pre, post;
    int have_states;
    int64_t window_ns;
    int preempted;          /* an involuntary context switch in that span */
    /* Inode of the lock directory we created: release never removes a lock
     * that a staleness check of another poster replaced meanwhile. */
    uint64_t lock_ino;
};

/* Take the lock (retry 50 ms, 10 s deadline, 30 s staleness). On timeout:
 * SEQ_LOCK_TIMEOUT "could not acquire channel seq lock (another poster is
 * stuck?)"; on a signal: INTERRUPTED. */
int ac_seqlock_acquire(int dirfd, struct ac_seqlock *lk, struct ac_err *err);
void ac_seqlock_release(struct ac_seqlock *lk);

/* The high-water mark (0 when missing or unreadable). */
uint64_t ac_seq_high_read(int dirfd);
/* Raise the high-water mark to `seq` (atomic replace). errno on failure. */
int ac_seq_high_write(int dirfd, uint64_t seq);

/* Reserve seq N by creating `.seqres-N` with O_EXCL. Returns the open
 * descriptor of that file (the caller writes the message into it and
 * publishes it with ac_publish_temp, which removes the reservation name),
 * AC_SEQ_TAKEN when another poster holds N, or -1 with errno. The name is
 * stored in `name` (at least AC_SEQ_RESERVATION_MAX bytes). */
#define AC_SEQ_TAKEN (-2)
#define AC_SEQ_RESERVATION_MAX 48
int ac_seq_reserve(int dirfd, uint64_t seq, char *name);
void ac_seq_unreserve(int dirfd, const char *name);

/* Under the seq lock, remove what crashed posters left: every .seqres-N
 * and .seqhigh temp (only posters holding the lock create them), and other
 * temp files older than a minute. Returns the number removed, or -1 with
 * err when the lock cannot be taken. */
int ac_seq_sweep(int dirfd, struct ac_err *err);

#endif
