/*
 * fsutil.h - every system call that touches a channel goes through here.
 *
 * Paths below the root are always resolved one component at a time relative
 * to an open directory descriptor (openat and friends) with O_NOFOLLOW, so a
 * symlink or a `..` placed inside a channel can never lead a command out of
 * the root. Only the root directory itself is opened by path (it is the
 * user's choice and may legitimately be a symlink).
 *
 * Atomic publication follows git's tempfile.c and SQLite's unixSync:
 *   1. create `.<target>.<random>.tmp` in the same directory with O_EXCL;
 *   2. write everything, fsync the file (ac_fsync), close and check close;
 *   3. rename over the target (replace) or link to it (never overwrite);
 *   4. fsync the directory (ignoring EINVAL where that is unsupported);
 *   5. on any failure unlink the temp and return -1 with the original errno.
 * Temp names start with '.' and do not end in ".md", so no reader ever
 * mistakes them for messages or records.
 *
 * Error handling: functions return -1 with errno set ("errno is meaningful on
 * failure") unless they take a struct ac_err, in which case they fill it.
 * EINTR is retried for open, read, write and flock-style calls, never for
 * close.
 */
#ifndef AGENTCHAT_FSUTIL_H
#define AGENTCHAT_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "agentchat/err.h"

/* ---- mutating system calls ----
 * Every call that changes a channel on disk goes through one of these, so
 * that the fault point "sys.<call>" of fault.h comes right before it (tests
 * fail or kill "the Nth write"). Same arguments, returns and errno as the
 * system call they wrap. ac_write_all and ac_fsync below are wrappers too
 * (sys.write, sys.fsync). */

/* openat(dirfd, name, flags | O_CREAT | O_CLOEXEC, mode), retrying EINTR
 * (sys.create). */
int ac_sys_create(int dirfd, const char *name, int flags, mode_t mode);
/* mkdirat (sys.mkdir). */
int ac_sys_mkdirat(int dirfd, const char *name, mode_t mode);
/* unlinkat (sys.unlink; sys.rmdir with AT_REMOVEDIR). */
int ac_sys_unlinkat(int dirfd, const char *name, int flags);
/* renameat (sys.rename). */
int ac_sys_renameat(int fromdir, const char *from, int todir, const char *to);
/* linkat without flags (sys.link). */
int ac_sys_linkat(int fromdir, const char *from, int todir, const char *to);
/* utimensat (sys.utime). */
struct timespec;
int ac_sys_utimensat(int dirfd, const char *name, const struct timespec times[2], int flags);

/* fsync(fd) unless AGENT_CHAT_TEST_FSYNC=0 (test speed switch, git's
 * maybe_fsync); sys.fsync either way. errno is meaningful on failure. */
int ac_fsync(int fd);

/* fsync a directory; EINVAL (filesystems that cannot) counts as success. */
int ac_fsync_dir(int dirfd);

/* Open the directory `name` inside `dirfd` without following a symlink.
 * Returns a descriptor or -1 (errno: ENOENT; ENOTDIR for a non-directory
 * and for a symlink, which Linux reports so with O_DIRECTORY|O_NOFOLLOW). */
int ac_open_dir_at(int dirfd, const char *name);

/* Open a directory by path (following symlinks; used for the root only). */
int ac_open_dir_path(const char *path);

/* Create every missing directory of `path` (like mkdir -p), durably: the
 * parent of each directory it makes is fsynced. 0, or -1 with errno. */
int ac_mkdirs(const char *path, mode_t mode);

/* Close fd keeping errno (of a failure just before); returns rc, so that
 * `return ac_close_keep(fd, step(fd));` ends a function that owns fd. */
int ac_close_keep(int fd, int rc);

/* Read the regular file `name` inside `dirfd` into a malloc'ed buffer that
 * is NUL-terminated (the NUL is not counted in *len). Refuses symlinks
 * (ELOOP), non-regular files (EISDIR for directories, EINVAL otherwise) and
 * files larger than `cap` bytes (EFBIG). */
int ac_read_file_at(int dirfd, const char *name, size_t cap,
                    char **out, size_t *len);

/* Same as ac_read_file_at on an already open descriptor. When `st` is not
 * NULL it receives the file's fstat (one call serves both). */
int ac_read_fd(int fd, size_t cap, char **out, size_t *len, struct stat *st);

/* write() until done, retrying EINTR and short writes (sys.write: an
 * injected failure writes the first half, then fails). */
int ac_write_all(int fd, const void *buf, size_t len);

enum {
    AC_ATOMIC_REPLACE = 0,      /* rename over an existing target */
    AC_ATOMIC_NOREPLACE = 1,    /* link(): fail with EEXIST if target exists */
    AC_ATOMIC_NO_DIRSYNC = 2    /* caller fsyncs the directory itself */
};

/* Publish `len` bytes as `dirfd/name` atomically (see the recipe above).
 * `fault_tag` names the fault points "<tag>.write", "<tag>.fsync",
 * "<tag>.publish" and "<tag>.dirsync" (may be NULL for none).
 * errno is meaningful on failure; EEXIST with AC_ATOMIC_NOREPLACE means the
 * target already existed and nothing was changed. */
int ac_write_atomic(int dirfd, const char *name, const void *data, size_t len,
                    mode_t mode, int flags, const char *fault_tag);

/* The second half of ac_write_atomic for a temp file the caller created
 * itself (O_EXCL, name starting with '.'), e.g. because the temp's name
 * carries a meaning: write `len` bytes to `fd`, fsync, close it, publish
 * `tmpname` as `name` (flags as above) and remove `tmpname`. On failure the
 * temp is removed too. Always closes fd. errno is meaningful on failure. */
int ac_publish_temp(int dirfd, const char *tmpname, int fd, const void *data, size_t len,
                    const char *name, int flags, const char *fault_tag);

/* ac_write_atomic and ac_publish_temp with a gate: `gate(gate_ctx)` runs
 * after the temp is written and synced, right before the rename or link
 * (after the "<tag>.publish" fault point), and when it returns -1 nothing
 * is published: the temp is removed and the call fails with errno ENOLCK.
 * For writers that may publish only while they still hold a lock that can
 * be taken from them (seq.h: a stolen stale _seq.lock). */
typedef int (*ac_gate_fn)(void *gate_ctx);
int ac_write_atomic_gated(int dirfd, const char *name, const void *data, size_t len,
                          mode_t mode, int flags, const char *fault_tag,
                          ac_gate_fn gate, void *gate_ctx);
int ac_publish_temp_gated(int dirfd, const char *tmpname, int fd, const void *data, size_t len,
                          const char *name, int flags, const char *fault_tag,
                          ac_gate_fn gate, void *gate_ctx);

/* Rename `from` to `to` inside dirfd without ever replacing `to`
 * (renameat2 RENAME_NOREPLACE, or link+unlink where unsupported).
 * errno EEXIST when `to` exists. */
int ac_rename_noreplace(int dirfd, const char *from, const char *to);

/* What a directory's inode says about its entries: the modification time
 * (ns) and the size. Every entry change moves at least one of them on the
 * file systems we rely on (see scan.h for the exceptions and why). */
struct ac_dirstate {
    int64_t sec, nsec;
    uint64_t size;
};

/* statx the directory. errno is meaningful on failure. */
int ac_dir_state(int dirfd, struct ac_dirstate *out);

/* True when the file system of dirfd stamps changes with fine-grained
 * times once the inode was queried (Linux multigrain timestamps: ext4, xfs,
 * btrfs and tmpfs since 6.13), so a change after a statx always shows. */
int ac_fs_fine_timestamps(int dirfd);

/* True when two states are identical. */
int ac_dirstate_eq(const struct ac_dirstate *a, const struct ac_dirstate *b);

/* True when a regular file `name` exists in dirfd (not following symlinks). */
int ac_is_regular_at(int dirfd, const char *name);

/* Is `name` a temp file of ac_write_atomic (".<target>.<8 letters or
 * digits>.tmp", the target's own leading dot dropped)? With `targets` (a
 * NULL-terminated list), only for one of those targets: a directory that is
 * also the agents' workspace (the channel directory) may hold an editor's
 * ".notes.abcd1234.tmp", which is not ours. */
int ac_is_temp_name(const char *name, const char *const *targets);

/* Remove the temp files of ac_write_atomic (".<name>.<random>.tmp") from
 * dirfd that are at least min_age_sec old (0: all). Only for a directory
 * whose writers the caller excludes (it holds their lock), or with an age
 * no live write can reach. Returns the number removed. The _of variant
 * removes only temps of `targets` (ac_is_temp_name). */
int ac_sweep_temps(int dirfd, int64_t min_age_sec);
int ac_sweep_temps_of(int dirfd, int64_t min_age_sec, const char *const *targets);

/* Directory iteration. The callback gets each entry name (never "." or "..")
 * and a d_type (DT_UNKNOWN is resolved with fstatat, without following
 * symlinks). A callback returning non-zero stops the walk and that value is
 * returned. Returns -1 with errno on a read error. */
typedef int (*ac_dir_cb)(void *ctx, const char *name, unsigned char type);
int ac_dir_walk(int dirfd, ac_dir_cb cb, void *ctx);

#endif
