/*
 * l_pathlock.c - Lua binding of the path locks: module "agentchat._pathlocks"
 * (private: the Channel lock methods are the API).
 *
 *   local pl = require "agentchat._pathlocks"
 *   pl.lock(ch, {"src/a.c", "docs"}, owner, lease)   -- record
 *   pl.check(ch, {"src"}, owner_or_nil)              -- list of records
 *   pl.unlock(ch, target, owner [, generation])      -- the removed record
 *       (generation: the lock must still have it, else PATH_LOCK_FENCED)
 *   pl.recover(ch, target, owner, reason, lease)     -- the new record
 *   pl.recover_pending(ch, actor, resolve_or_nil)    -- {outcome=, ...}
 *   pl.list(ch [, {ignore_journal=true, lenient=true}])  -- list of records
 *       (and the lock id of a pending journal with ignore_journal)
 *   pl.normalize(ch, path)                           -- normalized, kind
 *   pl.overlaps(a, b)                                -- boolean
 *
 * `ch` is the "agentchat.channel" handle (Channel:handle() in Lua). A
 * record is a table {lock_id, channel, owner, expires_at, locked_at,
 * updated_at, previous_owner, previous_expires_at, recovery_reason (nil
 * when null), paths = {{display_path, kind, normalized_path}, ...},
 * expired = boolean, generation = the holder's fencing token, on a store
 * that keeps one (etcd)}. Expected failures return nil, message, code,
 * exit_code (PATH_LOCK_*, exit 1); misuse (wrong argument types) raises.
 *
 * Strings with NUL bytes cannot reach the C runtime (it works on C
 * strings), so they are replaced by a stand-in that the runtime refuses
 * with the error the same text would get, at the point of its own order of
 * checks: a path or reason holding NUL has a forbidden control character
 * ("\x01" stands for it), an owner is not a safe identity (" "); a target
 * holding NUL matches nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/isotime.h"
#include "agentchat/lua_host.h"
#include "agentchat/pathlock.h"
#include "agentchat/store.h"

/* Stand-ins for strings holding NUL (see the top of the file). */
static const char NUL_PATH[] = "\x01";
static const char NUL_OWNER[] = " ";

static void set_str(lua_State *L, const char *key, const char *value)
{
    if (value) {
        lua_pushstring(L, value);
        lua_setfield(L, -2, key);
    }
}

static void push_record(lua_State *L, const struct ac_lockrec *r, int64_t now)
{
    size_t i;
    lua_createtable(L, 0, 12);
    set_str(L, "lock_id", r->lock_id);
    set_str(L, "channel", r->channel);
    set_str(L, "owner", r->owner);
    set_str(L, "expires_at", r->expires_at);
    set_str(L, "locked_at", r->locked_at);
    set_str(L, "updated_at", r->updated_at);
    set_str(L, "previous_owner", r->previous_owner);
    set_str(L, "previous_expires_at", r->previous_expires_at);
    set_str(L, "recovery_reason", r->recovery_reason);
    lua_pushboolean(L, ac_lockrec_expired(r, now));
    lua_setfield(L, -2, "expired");
    if (r->generation > 0) {
        lua_pushinteger(L, (lua_Integer)r->generation);
        lua_setfield(L, -2, "generation");
    }
    lua_createtable(L, (int)r->npaths, 0);
    for (i = 0; i < r->npaths; i++) {
        lua_createtable(L, 0, 3);
        set_str(L, "display_path", r->paths[i].display);
        set_str(L, "normalized_path", r->paths[i].normalized);
        set_str(L, "kind", r->paths[i].is_dir ? "directory" : "file");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "paths");
}

static void push_list(lua_State *L, const struct ac_locklist *l)
{
    int64_t now = ac_isotime_now_us();
    size_t i;
    lua_createtable(L, (int)l->n, 0);
    for (i = 0; i < l->n; i++) {
        push_record(L, &l->v[i], now);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

/* A string argument; *has_nul when it holds a NUL byte. */
static const char *check_text(lua_State *L, int idx, int *has_nul)
{
    size_t len;
    const char *s = luaL_checklstring(L, idx, &len);
    *has_nul = strlen(s) != len;
    return s;
}

/* An owner argument, its stand-in when it holds NUL. */
static const char *check_owner(lua_State *L, int idx)
{
    int nul;
    const char *s = check_text(L, idx, &nul);
    return nul ? NUL_OWNER : s;
}

/* The list of paths at idx (a string or a table of strings), as a
 * C array kept in a userdata (no leak if a later check raises).
 * Returns the count. */
static lua_Integer check_paths(lua_State *L, int idx, const char ***out)
{
    lua_Integer n, i;
    const char **v;
    if (lua_type(L, idx) == LUA_TSTRING) {
        lua_createtable(L, 1, 0);
        lua_pushvalue(L, idx);
        lua_rawseti(L, -2, 1);
        lua_replace(L, idx);
    }
    luaL_checktype(L, idx, LUA_TTABLE);
    n = luaL_len(L, idx);
    v = lua_newuserdatauv(L, sizeof *v * (size_t)(n > 0 ? n : 1), 1);
    lua_pushvalue(L, idx);
    lua_setiuservalue(L, -2, 1);    /* the table keeps the strings alive */
    for (i = 1; i <= n; i++) {
        size_t len;
        const char *s;
        lua_rawgeti(L, idx, i);
        if (lua_type(L, -1) != LUA_TSTRING)
            luaL_error(L, "paths[%d] must be a string", (int)i);
        s = lua_tolstring(L, -1, &len);
        lua_pop(L, 1);
        v[i - 1] = strlen(s) == len ? s : NUL_PATH;
    }
    *out = v;
    return n;
}

static double check_lease(lua_State *L, int idx)
{
    return luaL_optnumber(L, idx, AC_PATHLOCK_DEFAULT_LEASE);
}

static int owner_nul(lua_State *L, const char *what)
{
    char msg[64];
    snprintf(msg, sizeof msg, "%s must be a safe identity", what);
    return ac_lua_fail(L, "PATH_LOCK_INVALID_OWNER", 1, msg);
}

/* pl.lock(ch, paths, owner [, lease]) */
static int l_lock(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    struct ac_err err = AC_ERR_INIT;
    struct ac_lockrec rec;
    const char **paths = NULL;
    const char *owner = check_owner(L, 3);
    double lease = check_lease(L, 4);
    lua_Integer n = check_paths(L, 2, &paths);

    if (ac_pathlock_lock(ch, paths, (size_t)n, owner, lease, &rec, &err) == -1)
        return ac_lua_fail_err(L, &err);
    push_record(L, &rec, ac_isotime_now_us());
    ac_lockrec_free(&rec);
    return 1;
}

/* pl.check(ch, paths [, owner]) */
static int l_check(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    struct ac_err err = AC_ERR_INIT;
    struct ac_locklist hits;
    const char **paths = NULL, *owner = NULL;
    lua_Integer n;

    if (!lua_isnoneornil(L, 3))
        owner = check_owner(L, 3);
    n = check_paths(L, 2, &paths);
    if (ac_pathlock_check(ch, paths, (size_t)n, owner, &hits, &err) == -1)
        return ac_lua_fail_err(L, &err);
    push_list(L, &hits);
    ac_locklist_free(&hits);
    return 1;
}

/* A target holding NUL matches nothing; show it on one line, NUL as \x00. */
static int target_nul(lua_State *L, int idx)
{
    char msg[AC_ERR_MSG_MAX], flat[600], shown[900];
    size_t len, i, o = 0;
    const char *target = lua_tolstring(L, idx, &len);
    for (i = 0; i < len && o + 5 < sizeof flat; i++) {
        if (target[i] == '\0') {
            memcpy(flat + o, "\\x00", 4);
            o += 4;
        } else {
            flat[o++] = target[i];
        }
    }
    flat[o] = '\0';
    ac_err_quote(shown, sizeof shown, flat, 800);
    snprintf(msg, sizeof msg, "lock record does not exist: %s", shown);
    return ac_lua_fail(L, "PATH_LOCK_NOT_FOUND", 1, msg);
}

/* pl.unlock(ch, target, owner [, generation]) */
static int l_unlock(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    struct ac_err err = AC_ERR_INIT;
    struct ac_lockrec rec;
    int tnul;
    const char *target = check_text(L, 2, &tnul);
    const char *owner = check_owner(L, 3);
    lua_Integer fence = luaL_optinteger(L, 4, 0);

    if (fence < 0)
        return luaL_argerror(L, 4, "a lock generation is a positive integer");
    if (owner == NUL_OWNER)
        return owner_nul(L, "owner");
    if (tnul)
        return target_nul(L, 2);
    if (ac_pathlock_unlock_fenced(ch, target, owner, (uint64_t)fence, &rec, &err) == -1)
        return ac_lua_fail_err(L, &err);
    push_record(L, &rec, ac_isotime_now_us());
    ac_lockrec_free(&rec);
    return 1;
}

/* pl.recover(ch, target, owner, reason [, lease]) */
static int l_recover(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    struct ac_err err = AC_ERR_INIT;
    struct ac_lockrec rec;
    int tnul, rnul;
    const char *target = check_text(L, 2, &tnul);
    const char *owner = check_owner(L, 3);
    const char *reason = check_text(L, 4, &rnul);
    double lease = check_lease(L, 5);

    if (rnul)       /* NUL is a control character, and not whitespace */
        reason = NUL_PATH;
    if (tnul && owner != NUL_OWNER && ac_pathlock_check_reason(reason, &err) == 0)
        return target_nul(L, 2);
    if (ac_pathlock_recover(ch, target, owner, reason, lease, &rec, &err) == -1)
        return ac_lua_fail_err(L, &err);
    push_record(L, &rec, ac_isotime_now_us());
    ac_lockrec_free(&rec);
    return 1;
}

/* pl.recover_pending(ch, actor [, "rollback" | "published"]) */
static int l_recover_pending(lua_State *L)
{
    static const char *const modes[] = { "auto", "rollback", "published", NULL };
    static const char *const outcomes[] = { "none", "rolled_back", "completed" };
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    struct ac_err err = AC_ERR_INIT;
    struct ac_pending_info info;
    int anul;
    const char *actor = check_text(L, 2, &anul);
    int mode = luaL_checkoption(L, 3, "auto", modes);

    if (anul)
        return owner_nul(L, "actor");
    if (ac_pathlock_recover_pending(ch, actor, (enum ac_pathlock_resolve)mode, &info, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, outcomes[info.outcome]);
    lua_setfield(L, -2, "outcome");
    if (info.outcome != AC_PENDING_NONE) {
        set_str(L, "transaction_id", info.transaction_id);
        set_str(L, "operation", info.operation);
        set_str(L, "lock_id", info.lock_id);
    }
    return 1;
}

/* pl.list(ch [, {ignore_journal = true}]) -> records [, pending_lock_id] */
static int l_list(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    struct ac_err err = AC_ERR_INIT;
    struct ac_locklist l;
    char pending_id[256];
    int flags = 0, pending = 0;

    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "ignore_journal");
        if (lua_toboolean(L, -1))
            flags |= AC_LIST_IGNORE_JOURNAL;
        lua_pop(L, 1);
        lua_getfield(L, 2, "lenient");
        if (lua_toboolean(L, -1))
            flags |= AC_LIST_LENIENT;
        lua_pop(L, 1);
    }
    if (ac_pathlock_list(ch, flags, &l, &pending, pending_id, &err) == -1)
        return ac_lua_fail_err(L, &err);
    push_list(L, &l);
    ac_locklist_free(&l);
    if (pending) {
        lua_pushstring(L, pending_id);
        return 2;
    }
    return 1;
}

/* pl.normalize(ch, path) -> normalized, kind */
static int l_normalize(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    struct ac_err err = AC_ERR_INIT;
    struct ac_lockpath lp;
    int nul;
    const char *path = check_text(L, 2, &nul);

    if (nul)
        return ac_lua_fail(L, "PATH_LOCK_INVALID_PATH", 1,
                           "path contains a forbidden control character");
    if (ac_pathlock_normalize(ch, path, &lp, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushstring(L, lp.normalized);
    lua_pushstring(L, lp.is_dir ? "directory" : "file");
    free(lp.display);
    free(lp.normalized);
    return 2;
}

/* pl.overlaps(a, b) -> boolean (on normalized paths) */
static int l_overlaps(lua_State *L)
{
    lua_pushboolean(L, ac_pathlock_overlaps(ac_lua_checkcstring(L, 1), ac_lua_checkcstring(L, 2)));
    return 1;
}

static const luaL_Reg funcs[] = {
    { "lock", l_lock }, { "check", l_check }, { "unlock", l_unlock }, { "recover", l_recover },
    { "recover_pending", l_recover_pending }, { "list", l_list }, { "normalize", l_normalize },
    { "overlaps", l_overlaps }, { NULL, NULL }
};

int luaopen_agentchat_pathlocks(lua_State *L)
{
    luaL_newlib(L, funcs);
    lua_pushnumber(L, AC_PATHLOCK_DEFAULT_LEASE);
    lua_setfield(L, -2, "DEFAULT_LEASE");
    return 1;
}
