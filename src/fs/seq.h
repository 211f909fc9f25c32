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
 * Fencing. A holder that stops for a while (SIGSTOP, a debugger, a VM
 * pause) can find its lock stolen as stale when it resumes; it must not
 * then publish a seq that others have already passed (a reader beyond it
 * would never see the message) nor write `.seqhigh` (it would lower it).
 * So the holder keeps its lock directory open (the inode stays allocated,
 * so no other directory can ever get its number) and ac_seqlock_check()
 * tells whether `_seq.lock` is still that very directory and younger than
 * AC_SEQ_FENCE_SEC (10 s before anyone may judge it stale). Posts check
 * right before they raise `.seqhigh` and right before they link the
 * message (the gates of fsutil.h), again after the link, and start over
 * with a fresh lock when the check fails. The protocol on disk is
 * unchanged: mkdir, rmdir, the 30 s rule.
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
#include "fsutil.h"

#define AC_SEQ_LOCK_DIR "_seq.lock"
#define AC_SEQ_HIGH_FILE ".seqhigh"
/* The highest seq a message can have: cursors, the Lua API and JSON
 * carry seqs as signed 64-bit integers. */
#define AC_SEQ_MAX UINT64_C(9223372036854775807)
/* A held lock older than this fails ac_seqlock_check (stale is 30 s). */
#define AC_SEQ_FENCE_SEC 20

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
    /* The lock directory we created, kept open: release never removes a
     * lock that a staleness check of another poster replaced meanwhile,
     * and ac_seqlock_check compares inodes that cannot be reused. */
    int fd;
};

/* Take the lock (retry 50 ms, 10 s deadline, 30 s staleness). On timeout:
 * SEQ_LOCK_TIMEOUT "could not acquire channel seq lock (another poster is
 * stuck?)"; when `_seq.lock` is not a directory (a planted file or
 * symlink, which no poster would ever remove): SEQ_LOCK_INVALID at once;
 * on a signal: INTERRUPTED. Fault point "seq.locked" right after the
 * mkdir succeeded. */
int ac_seqlock_acquire(int dirfd, struct ac_seqlock *lk, struct ac_err *err);
/* 0 while `_seq.lock` is still the directory this holder made and it is
 * younger than AC_SEQ_FENCE_SEC; -1 when the lock was lost (stolen,
 * removed, or too old to be safe). */
int ac_seqlock_check(const struct ac_seqlock *lk);
/* The same as an ac_gate_fn (fsutil.h); gate_ctx is the struct ac_seqlock. */
int ac_seqlock_gate(void *lk);
/* Remove the lock if it is still ours. Returns 0 when it was held and
 * fresh up to the release (ac_seqlock_check), -1 when it had been lost.
 * A second release is harmless. */
int ac_seqlock_release(struct ac_seqlock *lk);

/* Parse a seq: ASCII digits with optional blanks around them, at most
 * AC_SEQ_MAX. Returns 0, or -1 with errno EINVAL (not a decimal) or ERANGE
 * (above AC_SEQ_MAX). */
int ac_seq_parse(const char *s, size_t len, uint64_t *out);
/* Read the high-water mark: 0 with *out (0 when the file is missing), or
 * -1 with errno: EINVAL or ERANGE as ac_seq_parse says (`shown`, if not
 * NULL, gets the first bytes of the content for a message, at most 24),
 * or the error of the read. */
int ac_seq_high_get(int dirfd, uint64_t *out, char shown[32]);
/* Raise the high-water mark to `seq` (atomic replace), never lowering a
 * valid one. With a lock, only while ac_seqlock_check says it is held
 * (ENOLCK otherwise). errno on failure. */
int ac_seq_high_raise(int dirfd, uint64_t seq, const struct ac_seqlock *lk);

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
