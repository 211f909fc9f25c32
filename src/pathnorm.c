/* pathnorm.c - the lexical rules of workspace paths; see include/agentchat/pathnorm.h. */
#include "agentchat/pathnorm.h"

#include <stdint.h>
#include <string.h>

#include "agentchat/utf8.h"

/* Unicode category Cc: C0, DEL and C1. Bytes that are not UTF-8 count too:
 * Python sees them as lone surrogates (surrogateescape), which it refuses
 * with the same message. */
static int has_control(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s), i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n;
        if (p[i] < 0x80) {
            if (p[i] < 0x20 || p[i] == 0x7f)
                return 1;
            i++;
            continue;
        }
        n = ac_utf8_decode(p + i, len - i, &cp);
        if (n == 0)
            return 1;
        if (cp >= 0x80 && cp <= 0x9f)
            return 1;
        i += n;
    }
    return 0;
}

const char *ac_relpath_problem(const char *path)
{
    const char *slash, *p;
    if (!path[0])
        return "path must be a non-empty string";
    if (has_control(path))
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

