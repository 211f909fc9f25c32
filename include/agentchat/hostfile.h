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

#endif
