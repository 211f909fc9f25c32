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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/hostfile.h"
#include "agentchat/lua_host.h"

static int l_check(lua_State *L)
{
    if (ac_host_dir_check(ac_lua_checkcstring(L, 1)) == -1)
        return ac_lua_push_errno(L, errno);
    lua_pushboolean(L, 1);
    return 1;
}

struct listing {
    lua_State *L;
    lua_Integer n;
};

static int list_cb(void *ctx, const char *name, const char *kind, int64_t size)
{
    struct listing *l = ctx;
    lua_State *L = l->L;
    lua_createtable(L, 0, 3);
    if (size >= 0) {
        lua_pushinteger(L, (lua_Integer)size);
        lua_setfield(L, -2, "size");
    }
    lua_pushstring(L, name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, kind);
    lua_setfield(L, -2, "kind");
    lua_rawseti(L, -2, ++l->n);
    return 0;
}

static int l_list(lua_State *L)
{
    const char *dir = ac_lua_checkcstring(L, 1);
    const char *sub = ac_lua_optcstring(L, 2, NULL);
    struct listing l;

    lua_newtable(L);
    l.L = L;
    l.n = 0;
    /* May raise on memory exhaustion mid-listing: the directory would stay
     * open, as it did when this walked the directory itself. */
    if (ac_host_dir_list(dir, sub, list_cb, &l) == -1)
        return ac_lua_push_errno(L, errno);
    return 1;
}

static int l_read(lua_State *L)
{
    const char *dir = ac_lua_checkcstring(L, 1), *rel = ac_lua_checkcstring(L, 2);
    lua_Integer cap = luaL_checkinteger(L, 3);
    char *buf;
    size_t len;

    if (cap < 0)
        return luaL_argerror(L, 3, "negative cap");
    if (ac_host_dir_read(dir, rel, (size_t)cap, &buf, &len) == -1)
        return ac_lua_push_errno(L, errno);
    lua_pushlstring(L, buf, len);
    free(buf);
    return 1;
}

static const luaL_Reg funcs[] = {
    { "check", l_check }, { "list", l_list }, { "read", l_read }, { NULL, NULL }
};

int luaopen_agentchat_folder(lua_State *L)
{
    luaL_newlib(L, funcs);
    return 1;
}
