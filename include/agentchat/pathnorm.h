/*
 * pathnorm.h - workspace-relative paths (docs/format.md 3.7 "Path normalization",
 * also used for task files_hint, docs/format.md 3.5).
 *
 * A path given by an agent is taken relative to the channel directory and
 * must stay inside it. Checks, in this order, each with the Python tool's
 * message:
 *   ""                              path must be a non-empty string
 *   a control character (Cc)        path contains a forbidden control character
 *   '\\'                             backslashes are not valid portable separators
 *   a leading '/' ("//x" too), or ':' as the second character ("C:/x",
 *   "a:b": a drive to ntpath.splitdrive)
 *                                   absolute paths are not allowed
 *   any other ':' ("ab:c", "src/a:b")  path names may not contain ':'
 *   a ".." segment                  parent traversal is not allowed
 * Then "." and empty segments collapse, a trailing '/' goes ("./a//b/" is
 * "a/b", "./." is "."), and symlinks are resolved component by component
 * exactly as Python's posixpath.realpath() does (lstat + readlink, nothing
 * is opened): a result outside the channel gives "path resolves outside
 * the channel workspace", a symlink loop "path contains a symlink loop",
 * and a result longer than the caller's buffer "path is too long". The
 * result is what the Python tool's Path.resolve().relative_to(channel)
 * gives; a link may leave the channel and come back in.
 */
#ifndef AGENTCHAT_PATHNORM_H
#define AGENTCHAT_PATHNORM_H

#include <stddef.h>

#define AC_RELPATH_MAX 4096

/* The lexical checks only. Returns NULL when fine, else the message. */
const char *ac_relpath_problem(const char *path);

/* Check and resolve `path` inside the channel directory chfd. On success
 * returns 0, `out` holds the normalized workspace-relative path and
 * *is_dir tells whether it exists as a directory now. On failure returns -1
 * and *why is the message (a static string). */
int ac_relpath_resolve(int chfd, const char *path, char *out, size_t outsz,
                       int *is_dir, const char **why);

/* The resolution step alone, for a path already checked by the caller's
 * own lexical rules ('/' separated; control characters are just names). */
int ac_relpath_realize(int chfd, const char *path, char *out, size_t outsz,
                       int *is_dir, const char **why);

#endif
