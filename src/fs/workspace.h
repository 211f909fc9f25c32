/*
 * workspace.h - resolving a workspace path inside a channel directory: the
 * file-system backend's path_resolve (store.h), with the rules of
 * include/agentchat/pathnorm.h. Private to src/fs/.
 */
#ifndef AGENTCHAT_FS_WORKSPACE_H
#define AGENTCHAT_FS_WORKSPACE_H

#include <stddef.h>

#include "agentchat/pathnorm.h"

/* Check and resolve `path` inside the channel directory chfd. On success
 * returns 0, `out` holds the normalized workspace-relative path and
 * *is_dir tells whether it exists as a directory now. On failure returns -1
 * and *why is the message (a static string). */
int ac_relpath_resolve(int chfd, const char *path, char *out, size_t outsz,
                       int *is_dir, const char **why);

/* The resolution step alone (the backend's path_resolve), for a path
 * already checked by the caller's own lexical rules ('/' separated;
 * control characters are just names). */
int ac_relpath_realize(int chfd, const char *path, char *out, size_t outsz,
                       int *is_dir, const char **why);

#endif
