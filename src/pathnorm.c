/* pathnorm.c - the lexical rules of workspace paths; see include/agentchat/pathnorm.h. */
#include "agentchat/pathnorm.h"

#include <string.h>

#include "agentchat/utf8.h"

const char *ac_relpath_problem(const char *path)
{
    const char *second, *p;
    uint32_t cp;
    if (!path[0])
        return "path must be a non-empty string";
    if (ac_has_control(path))
        return "path contains a forbidden control character";
    if (strchr(path, '\\'))
        return "backslashes are not valid portable separators";
    /* posixpath.isabs, or a drive as ntpath.splitdrive() sees one: the
     * second character is ':' ("a:b", "é:x"; not "ab:c"). */
    second = path + 1;
    if ((unsigned char)path[0] >= 0x80)
        second = path + ac_utf8_decode((const unsigned char *)path, strlen(path), &cp);
    if (path[0] == '/' || *second == ':')
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

