/*
 * hostfile.h - files the user names on the command line, outside any store
 * (a --body-file, an import folder, the REPL's history): the few file
 * operations the host and the bindings need, so that nothing above src/fs/
 * opens a directory or makes a system call that changes a file
 * (make check-layers). Never used for a channel's state: that is store.h.
 *
 * Every function returns 0 (or a count) or -1 with errno ("errno is
 * meaningful on failure"); none prints.
 */
#ifndef AGENTCHAT_HOSTFILE_H
#define AGENTCHAT_HOSTFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read all of the open descriptor fd (a regular file: refused beyond cap
 * bytes with EFBIG) into a malloc'ed NUL-terminated buffer. */
int ac_host_read_fd(int fd, size_t cap, char **out, size_t *len);

/* mkdir -p. */
int ac_host_mkdirs(const char *path, mode_t mode);

/* A folder someone hands over (`import`), read without leaving it: `dir`
 * is followed like any path given on the command line; below it nothing
 * is: every component of `sub` and `rel` ("inbox/bob.jsonl") is opened
 * without following symlinks (ELOOP / ENOTDIR), only plain names (EINVAL
 * for "", "." or ".."), and only regular files are read (EISDIR, EINVAL
 * otherwise), at most `cap` bytes (EFBIG). */
int ac_host_dir_check(const char *dir);

/* The entries of dir/sub (sub may be NULL) in directory order: cb gets
 * each name, its kind ("file", "dir", "symlink" or "other") and, for a
 * file, its size in bytes (else -1); a non-zero return stops the listing. */
typedef int (*ac_host_entry_cb)(void *ctx, const char *name, const char *kind, int64_t size);
int ac_host_dir_list(const char *dir, const char *sub, ac_host_entry_cb cb, void *ctx);

int ac_host_dir_read(const char *dir, const char *rel, size_t cap, char **out, size_t *len);

/* What ac_host_dir_stat says of dir/rel (not following it): its kind
 * ("file", "dir", "symlink", "other"), size, inode and modification time;
 * -1 with errno (ENOENT: there is none). */
struct ac_host_stat {
    const char *kind;
    uint64_t size, ino;
    int64_t mtime_ns;
};
int ac_host_dir_stat(const char *dir, const char *rel, struct ac_host_stat *out);

/* ---- another program's files, written the way it expects ----
 * Claude Code's agent teams (docs/claude-teams.md): the bridge writes
 * their inbox files under their own lock. Paths are below `dir` as for
 * ac_host_dir_read: nothing below it is followed through a symlink. */

/* Replace the regular file dir/rel with `len` bytes atomically: a temp
 * ".<name>.<random>.tmp" in the same folder, written, synced and renamed
 * over it (created when missing), with the file's mode (0644 for a new
 * one; both less the umask). ELOOP when dir/rel is a symlink, EISDIR or
 * EINVAL when it is not a regular file. Fault points "hostfile.write",
 * ".fsync", ".publish", ".dirsync" and the sys.* ones. */
int ac_host_dir_write(const char *dir, const char *rel, const char *data, size_t len);

/* mkdir dir/rel (its parents must exist; 0755 less the umask); 0 also
 * when it exists as a directory, EEXIST when it is something else. */
int ac_host_dir_mkdir(const char *dir, const char *rel);

/* Remove the temps of ac_host_dir_write (".<name>.<random>.tmp") in
 * dir/sub that are at least min_age_sec old: what a writer killed in the
 * middle left. Returns how many, or -1 with errno. */
int ac_host_dir_sweep(const char *dir, const char *sub, int64_t min_age_sec);

/* A lock directory of proper-lockfile, the Node.js library Claude Code
 * locks its inboxes with: the directory dir/rel ("inboxes/lead.json.lock")
 * made with mkdir is the lock, its mtime is refreshed while it is held
 * (ac_host_lock_touch), one whose mtime is older than the stale time is
 * abandoned (its holder died) and may be removed and taken; release
 * removes it.
 *
 * Calling sequence:
 *     struct ac_host_lock *l;
 *     int64_t age;
 *     rc = ac_host_lock_try(dir, "inboxes/x.json.lock", 10000, sig, &l, &age);
 *     if (rc == 1) wait for a change of the folder (or age to pass the stale time), try again
 *     ... read, decide, ac_host_lock_check(l) == 0, write ...
 *     ac_host_lock_release(l);
 *
 * `sig` (1000 to 999999) marks the locks this program takes: their atime
 * is their mtime plus sig nanoseconds (proper-lockfile sets both times
 * equal), so that a later run finds a lock an earlier run of it left
 * when it was killed, and removes it at once instead of waiting for it
 * to go stale. 0: no mark. Where the file system keeps no nanoseconds the
 * mark is lost and only the stale time frees such a lock. */
struct ac_host_lock;

/* Try to take the lock once: 0 taken (*out), 1 another holds it (*age_ms:
 * how old its mtime is), -1 with errno (ENOTDIR when dir/rel is not a
 * directory: a lock of another kind). A lock older than stale_ms, or one
 * with the mark `sig`, is removed and taken. */
int ac_host_lock_try(const char *dir, const char *rel, int64_t stale_ms, unsigned sig,
                     struct ac_host_lock **out, int64_t *age_ms);

/* Whether the lock is still ours: 0, or -1 with errno ECANCELED when it
 * was removed or its mtime is not the one we set (someone took it as
 * stale: proper-lockfile's "compromised"), another errno on failure. */
int ac_host_lock_check(struct ac_host_lock *l);

/* ac_host_lock_check, then set its mtime to now (proper-lockfile's
 * update, which keeps a held lock from going stale). */
int ac_host_lock_touch(struct ac_host_lock *l);

/* Remove the lock directory when it is still ours, and free l (NULL:
 * nothing). */
void ac_host_lock_release(struct ac_host_lock *l);

/* A change notification of the folder dir/sub (inotify: files created,
 * written, renamed, removed, and lock directories made and removed), to
 * wait for it together with a channel (wait.h: ac_wait_nap_fd). NULL with
 * errno. */
struct ac_host_watch;
struct ac_host_watch *ac_host_watch_open(const char *dir, const char *sub);

/* The descriptor that becomes readable on a change. */
int ac_host_watch_fd(const struct ac_host_watch *w);

/* Wait up to timeout_ns for a change, consuming the notifications (0
 * consumes what is there): 1 something changed, 0 nothing did, -1 with
 * errno EINTR on an interrupt signal. */
int ac_host_watch_wait(struct ac_host_watch *w, int64_t timeout_ns);

void ac_host_watch_close(struct ac_host_watch *w);

#endif
