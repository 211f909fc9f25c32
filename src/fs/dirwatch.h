/*
 * dirwatch.h - sleep until a directory changes, without using CPU.
 *
 * Used by `wait` (a new message) and by the seq lock (the holder removed
 * _seq.lock). Three mechanisms, in order of preference:
 *
 *   1. dnotify (fcntl F_NOTIFY with a queued real-time signal, consumed with
 *      sigtimedwait). Preferred because tearing it down is free. Tearing
 *      down an inotify instance waits for an SRCU grace period in the kernel
 *      (12-16 ms measured here, at close() or at process exit), which alone
 *      would blow the 5 ms wake-up budget of `wait`.
 *   2. inotify, where dnotify is unavailable (CONFIG_DNOTIFY off,
 *      fs.dir-notify-enable=0) or already used by another watch of this
 *      process.
 *   3. none: ac_dirwatch_open returns NULL and callers poll.
 *
 * A wake-up only means "something in the directory changed"; callers
 * rescan. Network and FUSE file systems may deliver nothing, so callers
 * always pass a finite timeout and rescan when it expires.
 *
 * Calling sequence:
 *     struct ac_dirwatch *w = ac_dirwatch_open(dirfd);   // before the first scan
 *     while (!found) { scan(); if (ac_dirwatch_wait(w, ns) == -1) break; }
 *     ac_dirwatch_close(w);
 * ac_dirwatch_wait on a NULL watch just sleeps. A caller that must see
 * changes in several directories (receipts: the cursors and the acks of a
 * message) adds them to one watch with ac_dirwatch_add, so all of them
 * share the one dnotify signal instead of falling back to inotify.
 */
#ifndef AGENTCHAT_DIRWATCH_H
#define AGENTCHAT_DIRWATCH_H

#include <stddef.h>
#include <stdint.h>

struct ac_dirwatch;

/* Start watching the directory open as dirfd (entries created, removed,
 * renamed, modified, attributes). NULL when no mechanism works. */
struct ac_dirwatch *ac_dirwatch_open(int dirfd);

/* Watch one more directory with the same watch (a wake-up then means that
 * any of them changed): up to 15 more with dnotify, any number with
 * inotify. dirfd may be closed afterwards. Returns 0, or -1 with errno (EINVAL for a NULL watch); the watch
 * keeps working on its earlier directories either way. */
int ac_dirwatch_add(struct ac_dirwatch *w, int dirfd);

/* 1: something changed (or may have); 0: timeout; -1 with errno EINTR when
 * an interrupt signal arrived (see clock.h). */
int ac_dirwatch_wait(struct ac_dirwatch *w, int64_t timeout_ns);

/* As ac_dirwatch_wait, and also wake when the descriptor `fd` (a watch of
 * something else: a host folder's, hostfile.h) becomes readable; draining
 * fd is left to its owner. Returns a bit set, 1: the watched directories
 * changed (or may have), 2: fd is readable; 0 at the timeout; -1 with
 * errno (EINTR when an interrupt signal arrived). w may be NULL (fd
 * alone); fd -1 is ac_dirwatch_wait. */
int ac_dirwatch_wait_fd(struct ac_dirwatch *w, int64_t timeout_ns, int fd);

/* One wait on several watches at once (a composite wait: the channels and
 * acks of `wait --for`): 1 when any of ws[0..n) changed (or may have), 0
 * at the timeout, -1 with errno (EINTR when an interrupt signal arrived).
 * NULL entries are skipped (their caller polls them); at most one entry
 * can be a dnotify watch (one per process), the others are inotify
 * instances, so one ppoll covers them all with no CPU while it waits. The
 * notifications of every watch that changed are consumed. */
int ac_dirwatch_wait_many(struct ac_dirwatch *const *ws, size_t n, int64_t timeout_ns);

/* An inotify watch of the directory open as dirfd, whatever
 * AGENT_CHAT_WATCH says (a host folder's watch, whose descriptor another
 * watch's wait includes: ac_dirwatch_fd). NULL with errno. */
struct ac_dirwatch *ac_dirwatch_open_inotify(int dirfd);

/* The descriptor that becomes readable on a change: the inotify instance;
 * -1 for a dnotify watch (signals) and for NULL. */
int ac_dirwatch_fd(const struct ac_dirwatch *w);

void ac_dirwatch_close(struct ac_dirwatch *w);

/* "dnotify", "inotify" or "none" (for tests and diagnostics). */
const char *ac_dirwatch_kind(const struct ac_dirwatch *w);

#endif
