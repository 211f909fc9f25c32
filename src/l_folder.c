/*
 * l_folder.c - read a folder someone hands over, without leaving it:
 * module "agentchat.folder" (used by the importers, docs/import.md).
 *
 *   folder.check(dir)             -- true | nil, message, errno
 *   folder.list(dir [, sub])      -- { {name=, kind=, size=}, ... } in
 *                                    directory order (kind: "file", "dir",
 *                                    "symlink", "other"; size: of a file, in
 *                                    bytes) | nil, message, errno
 *   folder.read(dir, rel, cap)    -- bytes | nil, message, errno
 *
 * `dir` is the user's own path and is followed like any path given on the
 * command line; below it nothing is followed: every component of `sub`
 * and `rel` ("inbox/bob.jsonl") is opened with O_NOFOLLOW, so a symlink in
 * the folder can never make us read a file outside it (ELOOP / ENOTDIR),
 * and only regular files are read (EISDIR, EINVAL otherwise), at most
 * `cap` bytes (EFBIG). Messages are Python's OSError text without the
 * path: "[Errno 2] No such file or directory".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/fsutil.h"
#include "agentchat/lua_host.h"

static int push_errno(lua_State *L, int e)
{
    lua_pushnil(L);
    lua_pushfstring(L, "[Errno %d] %s", e, strerror(e));
    lua_pushinteger(L, e);
    return 3;
}

/* Open `rel`'s directories below dir without following symlinks; returns
 * the descriptor of the last directory and points *last at the final
 * component (NULL when rel names a directory: want_dir). -1 with errno. */
static int open_below(const char *dir, const char *rel, int want_dir, const char **last)
{
    int fd = ac_open_dir_path(dir);
    const char *p = rel;

    *last = NULL;
    while (fd != -1 && p && *p) {
        const char *slash = strchr(p, '/');
        char part[256];
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        int next;

        if (n == 0 || n >= sizeof part || (n == 1 && p[0] == '.') ||
            (n == 2 && p[0] == '.' && p[1] == '.')) {
            close(fd);
            errno = EINVAL;     /* only plain names below dir */
            return -1;
        }
        if (!slash && !want_dir) {
            *last = p;
            return fd;
        }
        memcpy(part, p, n);
        part[n] = '\0';
        next = ac_open_dir_at(fd, part);
        close(fd);
        fd = next;
        p = slash ? slash + 1 : NULL;
    }
    return fd;
}

static int l_check(lua_State *L)
{
    int fd = ac_open_dir_path(ac_lua_checkcstring(L, 1));
    if (fd == -1)
        return push_errno(L, errno);
    close(fd);
    lua_pushboolean(L, 1);
    return 1;
}

struct listing {
    lua_State *L;
    lua_Integer n;
    int fd;
};

static int list_cb(void *ctx, const char *name, unsigned char type)
{
    struct listing *l = ctx;
    lua_State *L = l->L;
    struct stat st;
    lua_createtable(L, 0, 3);
    if (type == DT_REG && fstatat(l->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        lua_pushinteger(L, (lua_Integer)st.st_size);
        lua_setfield(L, -2, "size");
    }
    lua_pushstring(L, name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, type == DT_REG ? "file" : type == DT_DIR ? "dir"
                    : type == DT_LNK ? "symlink" : "other");
    lua_setfield(L, -2, "kind");
    lua_rawseti(L, -2, ++l->n);
    return 0;
}

static int l_list(lua_State *L)
{
    const char *dir = ac_lua_checkcstring(L, 1), *last;
    const char *sub = ac_lua_optcstring(L, 2, NULL);
    struct listing l;
    int fd = open_below(dir, sub, 1, &last), rc, e;

    if (fd == -1)
        return push_errno(L, errno);
    lua_newtable(L);
    l.L = L;
    l.n = 0;
    l.fd = fd;
    rc = ac_dir_walk(fd, list_cb, &l);
    e = errno;
    close(fd);
    if (rc == -1)
        return push_errno(L, e);
    return 1;
}

static int l_read(lua_State *L)
{
    const char *dir = ac_lua_checkcstring(L, 1), *rel = ac_lua_checkcstring(L, 2), *last;
    lua_Integer cap = luaL_checkinteger(L, 3);
    char *buf;
    size_t len;
    int fd, rc, e;

    if (cap < 0)
        return luaL_argerror(L, 3, "negative cap");
    fd = open_below(dir, rel, 0, &last);
    if (fd == -1)
        return push_errno(L, errno);
    rc = ac_read_file_at(fd, last, (size_t)cap, &buf, &len);
    e = errno;
    close(fd);
    if (rc == -1)
        return push_errno(L, e);
    lua_pushlstring(L, buf, len);
    free(buf);
    return 1;
}

static const luaL_Reg funcs[] = {
    { "check", l_check },
    { "list", l_list },
    { "read", l_read },
    { NULL, NULL }
};

int luaopen_agentchat_folder(lua_State *L)
{
    luaL_newlib(L, funcs);
    return 1;
}
