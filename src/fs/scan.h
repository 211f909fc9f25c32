/*
 * scan.h - finding the message files of a channel directory.
 *
 * A message file is an entry named "<decimal>-<anything>.md", where
 * <decimal> passes Python's str.isdecimal() (any script) and is its seq
 * (docs/format.md 3.3). Like Python's glob, the name is what counts: a symlink or a
 * directory with such a name takes its seq and counts as a message, though
 * readers skip it (they never follow symlinks). Listing a directory costs about 0.3 us per entry, which is
 * 30 ms for a 100,000-message channel: too slow for every post and for the
 * "nothing new" path of read and wait. So the directory carries a *scan
 * stamp*, a cache of (directory state, highest seq, message count, name of
 * the last message) kept in the extended attribute "user.agent-chat.scan"
 * (invisible to the folder format, to the Python tool and to Git; file
 * systems without user xattrs simply always list). The directory state is
 * its mtime *and* size (struct ac_dirstate): tmpfs stamps link() and
 * unlink() with the child's time, which can leave the mtime unchanged, but
 * it moves the directory size by one entry; ext4 moves the mtime.
 *
 * Why the stamp is safe (the racy-git problem):
 * A stamp says "when the directory state was S, the files were these".
 * It is used only when the state is still exactly S, and it is written
 * only when every later change is certain to produce a different state:
 *   - after a full listing, if the coarse wall clock read *before* the
 *     first statx was already past S's mtime (any later change is stamped
 *     at least that late), and the state did not move during the listing;
 *   - after a post, if the file system hands out fine-grained timestamps to
 *     queried inodes (Linux multigrain timestamps: ext4, xfs, btrfs and
 *     tmpfs since 6.13; elsewhere the post proves it by seeing two distinct
 *     mtimes around its own mkdir of _seq.lock done within 50 us, which
 *     tick-based timestamps almost never show). The stamp is then written
 *     from a statx that follows the post's last change (its rmdir of
 *     _seq.lock) without the process being preempted in between, so no
 *     other poster (the Python tool needs far longer for a post) can slip a
 *     file in.
 * A post trusts the stamp when the state it read right before its mkdir of
 * _seq.lock matches, again with no preemption in between: another poster
 * would need the lock for a whole post inside that gap, and a post that
 * creates files while holding the lock makes our mkdir fail and retry.
 * Anything else (a hand-made file, the Python tool posting, a deletion)
 * changes the state, invalidates the stamp and costs one full listing.
 */
#ifndef AGENTCHAT_SCAN_H
#define AGENTCHAT_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "agentchat/err.h"
#include "agentchat/store.h"
#include "fsutil.h"

struct ac_stamp {
    struct ac_dirstate key;  /* directory state the stamp describes */
    uint64_t max_seq;
    uint64_t count;
    char last_name[256];
};

/* If `name` is a message file name, store its seq and return 1. Return -1
 * for a message file name whose seq is above 2^63 - 1, the highest seq we
 * handle (AC_SEQ_MAX): readers skip it, posts refuse to go on (they could
 * not allocate above it), fsck reports it. 0 for any other name. */
int ac_scan_parse_name(const char *name, uint64_t *seq);

/* List the message files of dirfd with seq > after (after < 0: all). When `use_stamp` is set
 * and a valid stamp shows that nothing is above `after`, no listing is made.
 * A full listing refreshes the stamp when that is provably safe.
 * Returns 0 or -1 with err (IO_ERROR). */
int ac_scan_list(int dirfd, int64_t after, int use_stamp,
                 struct ac_listing *out, struct ac_err *err);

/* Read the stamp; returns 1 when present, parsed and matching `key`. */
int ac_stamp_valid(int dirfd, const struct ac_dirstate *key, struct ac_stamp *out);

/* Store a stamp (best effort; errors are ignored, the stamp is a cache). */
void ac_stamp_write(int dirfd, const struct ac_stamp *st);

/* Remove the stamp (best effort), e.g. after a change it cannot describe. */
void ac_stamp_clear(int dirfd);

#endif
