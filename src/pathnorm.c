/* pathnorm.c - the lexical rules of workspace paths; see include/agentchat/pathnorm.h. */
#include "agentchat/pathnorm.h"

#include <string.h>

#include "agentchat/utf8.h"

const char *ac_relpath_problem(const char *path)
{
    const char *slash, *p;
    if (!path[0])
        return "path must be a non-empty string";
    if (ac_has_control(path))
        return "path contains a forbidden control character";
    if (strchr(path, '\\'))
        return "backslashes are not valid portable separators";
    slash = strchr(path, '/');
    if (path[0] == '/' || memchr(path, ':', slash ? (size_t)(slash - path) : strlen(path)))
        return "absolute paths are not allowed";
    if (strchr(path, ':'))
        return "path names may not contain ':'";
    for (p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return "parent traversal is not allowed";
        p += n;
        while (*p == '/')
            p++;
    }
    return NULL;
}

