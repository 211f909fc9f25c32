/*
 * l_fsck.c - Lua binding of the channel checker: module "agentchat._fsck" (private:
 * root:fsck is the API).
 *
 *   local fsck = require "agentchat._fsck"
 *   fsck.channel(h [, {repair = false}])   -- list of findings
 *   fsck.hidden(st)                        -- names of the channels the store
 *                                             holds but cannot open, sorted
 *   fsck.directory(st, name [, {repair = false}])
 *                                          -- findings of such a channel
 *   fsck.CLASSES                           -- { FSCK_BAD_MESSAGE = "corrupt", ... }
 *
 * A channel whose _meta.json is a symbolic link or a FIFO cannot be opened
 * (every command says it does not exist, while init says it exists), so the
 * store does not list it; fsck finds it with fsck.hidden (the store's
 * hidden channels, store.h) and checks it with fsck.directory, which
 * reports the _meta.json as FSCK_BAD_ENTRY.
 *
 * `h` is the "agentchat.channel" handle (Channel:handle()), `st` the
 * "agentchat.store" one (root._store). A finding is
 * {code, class ("corrupt"|"pending"|"repairable"|"busy"), path (relative
 * to the channel), message (one line, starting with the path), repaired
 * (nil, or what --repair did)}. The check itself fails only when it cannot
 * run: nil, message, code (IO_ERROR, FSCK_UNSUPPORTED), exit 1.
 */
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/channel.h"
#include "agentchat/fsck.h"
#include "agentchat/lua_host.h"
#include "agentchat/store.h"

static void set_str(lua_State *L, const char *key, const char *value)
{
    if (value) {
        lua_pushstring(L, value);
        lua_setfield(L, -2, key);
    }
}

/* The flags of an options table at idx (raises for a bad one). */
static int check_flags(lua_State *L, int idx)
{
    int flags = 0;
    if (!lua_isnoneornil(L, idx)) {
        luaL_checktype(L, idx, LUA_TTABLE);
        lua_getfield(L, idx, "repair");
        if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
            return luaL_error(L, "field 'repair' must be a boolean");
        if (lua_toboolean(L, -1))
            flags |= AC_FSCK_REPAIR;
        lua_pop(L, 1);
    }
    return flags;
}

/* Check channel ch; push its findings or the failure. */
static int check_chan(lua_State *L, struct ac_chan *ch, int flags)
{
    struct ac_fsck_report r = { NULL, 0, 0 };
    struct ac_err err = AC_ERR_INIT;
    size_t i;
    int rc = ac_chan_fsck(ch, flags, &r, &err);

    if (rc == -1) {
        ac_fsck_report_free(&r);
        return ac_lua_fail(L, err.code ? err.code : "IO_ERROR", 1, err.msg);
    }
    /* No raise below until the report is freed: only table pushes, which
     * fail only when memory is exhausted. */
    lua_createtable(L, (int)r.n, 0);
    for (i = 0; i < r.n; i++) {
        lua_createtable(L, 0, 5);
        set_str(L, "code", r.v[i].code);
        set_str(L, "class", ac_fsck_class_name(r.v[i].klass));
        set_str(L, "path", r.v[i].path);
        set_str(L, "message", r.v[i].message);
        set_str(L, "repaired", r.v[i].repaired);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    ac_fsck_report_free(&r);
    return 1;
}

/* fsck.channel(h [, {repair=}]) -> findings */
static int l_channel(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    return check_chan(L, ch, check_flags(L, 2));
}

/* fsck.hidden(st) -> {names} */
static int l_hidden(lua_State *L)
{
    struct ac_store *st = ac_lua_checkstore(L, 1);
    struct ac_err err = AC_ERR_INIT;
    char **names;
    size_t n;
    int rc = ac_store_hidden_channels(st, &names, &n, &err);
    return ac_lua_names_result(L, rc, names, n, &err);
}

/* fsck.directory(st, name [, {repair=}]) -> findings, for a channel
 * fsck.hidden names; nil, message, code (CHANNEL_NOT_FOUND) for another. */
static int l_directory(lua_State *L)
{
    struct ac_store *st = ac_lua_checkstore(L, 1);
    const char *name = ac_lua_checkcstring(L, 2);
    int flags = check_flags(L, 3), n;
    struct ac_err err = AC_ERR_INIT;
    struct ac_chan *ch;

    if (ac_store_chan_open_hidden(st, name, &ch, &err) == -1)
        return ac_lua_fail_err(L, &err);
    n = check_chan(L, ch, flags);
    ac_chan_close(ch);
    return n;
}

static const luaL_Reg funcs[] = {
    { "channel", l_channel }, { "hidden", l_hidden }, { "directory", l_directory },
    { NULL, NULL }
};

int luaopen_agentchat_fsck(lua_State *L)
{
    size_t i;
    const char *code;
    int klass;
    luaL_newlib(L, funcs);
    lua_newtable(L);
    for (i = 0; (code = ac_fsck_code(i, &klass)) != NULL; i++) {
        lua_pushstring(L, ac_fsck_class_name(klass));
        lua_setfield(L, -2, code);
    }
    lua_setfield(L, -2, "CLASSES");
    return 1;
}
