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
 *   folder.stat(dir, rel)         -- {kind=, size=, ino=, mtime_ns=} | nil, message, errno
 *
 * And for another program's folder the bridge writes into
 * (docs/claude-teams.md; hostfile.h says how):
 *
 *   folder.write(dir, rel, bytes) -- true | nil, message, errno: replaced
 *                                    atomically (temp + rename)
 *   folder.mkdir(dir, rel)        -- true (made, or there) | nil, message, errno
 *   folder.sweep(dir, sub, secs)  -- how many temps of write() older than secs
 *                                    were removed | nil, message, errno
 *   folder.lock(dir, rel, stale_ms, sig)
 *                                 -- lock userdata "agentchat.hostlock" |
 *                                    false, age_ms (another holds it) |
 *                                    nil, message, errno
 *       lock:check()              -- true | nil, message, errno (ECANCELED:
 *                                    no longer ours)
 *       lock:touch()              -- the same, and its mtime is now
 *       lock:release()            -- also __close and __gc
 *   folder.watch(dir [, sub])     -- watch userdata "agentchat.hostwatch"
 *                                    (inotify) | nil, message, errno
 *       watch:wait(seconds)       -- true (changed) | false | nil,
 *                                    "cancelled by user", "INTERRUPTED", 130
 *       watch:close()             -- also __close and __gc
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

#include "agentchat/err.h"
#include "agentchat/hostfile.h"
#include "agentchat/lua_host.h"

#define LOCK_MT "agentchat.hostlock"
#define WATCH_MT "agentchat.hostwatch"

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

static int l_stat(lua_State *L)
{
    struct ac_host_stat st;
    if (ac_host_dir_stat(luaL_checkstring(L, 1), luaL_checkstring(L, 2), &st) == -1)
        return ac_lua_push_errno(L, errno);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, st.kind);
    lua_setfield(L, -2, "kind");
    lua_pushinteger(L, (lua_Integer)st.size);
    lua_setfield(L, -2, "size");
    lua_pushinteger(L, (lua_Integer)st.ino);
    lua_setfield(L, -2, "ino");
    lua_pushinteger(L, (lua_Integer)st.mtime_ns);
    lua_setfield(L, -2, "mtime_ns");
    return 1;
}

static int l_write(lua_State *L)
{
    size_t len;
    const char *dir = luaL_checkstring(L, 1), *rel = luaL_checkstring(L, 2);
    const char *data = luaL_checklstring(L, 3, &len);
    if (ac_host_dir_write(dir, rel, data, len) == -1)
        return ac_lua_push_errno(L, errno);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_mkdir(lua_State *L)
{
    if (ac_host_dir_mkdir(luaL_checkstring(L, 1), luaL_checkstring(L, 2)) == -1)
        return ac_lua_push_errno(L, errno);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_sweep(lua_State *L)
{
    int n = ac_host_dir_sweep(luaL_checkstring(L, 1), luaL_checkstring(L, 2),
                              (int64_t)luaL_checkinteger(L, 3));
    if (n == -1)
        return ac_lua_push_errno(L, errno);
    lua_pushinteger(L, n);
    return 1;
}

/* ---- locks ---- */

static struct ac_host_lock **check_lock(lua_State *L)
{
    struct ac_host_lock **l = luaL_checkudata(L, 1, LOCK_MT);
    if (!*l)
        luaL_error(L, "attempt to use a released lock");
    return l;
}

static int l_lock(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1), *rel = luaL_checkstring(L, 2);
    lua_Integer stale = luaL_checkinteger(L, 3), sig = luaL_optinteger(L, 4, 0);
    struct ac_host_lock **l;
    int64_t age;
    int rc;
    luaL_argcheck(L, sig >= 0 && sig <= 999999, 4, "a mark from 0 to 999999");
    l = lua_newuserdatauv(L, sizeof *l, 0);
    *l = NULL;
    luaL_setmetatable(L, LOCK_MT);
    rc = ac_host_lock_try(dir, rel, (int64_t)stale, (unsigned)sig, l, &age);
    if (rc == -1)
        return ac_lua_push_errno(L, errno);
    if (rc == 1) {
        lua_pushboolean(L, 0);
        lua_pushinteger(L, (lua_Integer)age);
        return 2;
    }
    return 1;
}

/* lock:check() and lock:touch(): true, or nil, message, errno. */
static int lock_op(lua_State *L, int (*op)(struct ac_host_lock *))
{
    struct ac_host_lock **l = check_lock(L);
    if (op(*l) == -1)
        return ac_lua_push_errno(L, errno);
    lua_pushboolean(L, 1);
    return 1;
}

static int lock_check(lua_State *L)
{
    return lock_op(L, ac_host_lock_check);
}

static int lock_touch(lua_State *L)
{
    return lock_op(L, ac_host_lock_touch);
}

static int lock_release(lua_State *L)
{
    struct ac_host_lock **l = luaL_checkudata(L, 1, LOCK_MT);
    ac_host_lock_release(*l);
    *l = NULL;
    return 0;
}

/* ---- watches ---- */

struct ac_host_watch *ac_lua_checkhostwatch(lua_State *L, int idx)
{
    struct ac_host_watch **w = luaL_checkudata(L, idx, WATCH_MT);
    if (!*w)
        luaL_error(L, "attempt to use a closed watch");
    return *w;
}

static int l_watch(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1), *sub = luaL_optstring(L, 2, NULL);
    struct ac_host_watch **w = lua_newuserdatauv(L, sizeof *w, 0);
    *w = NULL;
    luaL_setmetatable(L, WATCH_MT);
    *w = ac_host_watch_open(dir, sub);
    if (!*w)
        return ac_lua_push_errno(L, errno);
    return 1;
}

static int watch_wait(lua_State *L)
{
    struct ac_host_watch *w = ac_lua_checkhostwatch(L, 1);
    lua_Number secs = luaL_checknumber(L, 2);
    int rc = ac_host_watch_wait(w, secs > 0 ? (int64_t)(secs * 1e9) : 0);
    if (rc == -1) {
        if (errno == EINTR)
            return ac_lua_fail(L, "INTERRUPTED", AC_EXIT_INTERRUPTED, "cancelled by user");
        return ac_lua_push_errno(L, errno);
    }
    lua_pushboolean(L, rc == 1);
    return 1;
}

static int watch_close(lua_State *L)
{
    struct ac_host_watch **w = luaL_checkudata(L, 1, WATCH_MT);
    ac_host_watch_close(*w);
    *w = NULL;
    return 0;
}

static const luaL_Reg lock_methods[] = {
    { "check", lock_check }, { "touch", lock_touch }, { "release", lock_release }, { NULL, NULL }
};

static const luaL_Reg watch_methods[] = {
    { "wait", watch_wait }, { "close", watch_close }, { NULL, NULL }
};

static const luaL_Reg funcs[] = {
    { "check", l_check }, { "list", l_list }, { "read", l_read }, { "stat", l_stat },
    { "write", l_write }, { "mkdir", l_mkdir }, { "sweep", l_sweep }, { "lock", l_lock },
    { "watch", l_watch }, { NULL, NULL }
};

int luaopen_agentchat_folder(lua_State *L)
{
    ac_lua_new_class(L, LOCK_MT, lock_methods, lock_release, NULL);
    ac_lua_new_class(L, WATCH_MT, watch_methods, watch_close, NULL);
    luaL_newlib(L, funcs);
    return 1;
}
