/*
 * l_fsck.c - Lua binding of the channel checker: module "agentchat._fsck" (private:
 * root:fsck is the API).
 *
 *   local fsck = require "agentchat._fsck"
 *   fsck.channel(h [, {repair = false}])   -- list of findings
 *   fsck.CLASSES                           -- { FSCK_BAD_MESSAGE = "corrupt", ... }
 *
 * `h` is the "agentchat.channel" handle (Channel:handle()). A finding is
 * {code, class ("corrupt"|"pending"|"repairable"|"busy"), path (relative
 * to the channel), message (one line, starting with the path), repaired
 * (nil, or what --repair did)}. The check itself fails only when it cannot
 * run: nil, message, code (IO_ERROR, FSCK_UNSUPPORTED), exit 1.
 */
#include <lauxlib.h>
#include <lua.h>

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

/* fsck.channel(h [, {repair=}]) -> findings */
static int l_channel(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    struct ac_fsck_report r = { NULL, 0, 0 };
    struct ac_err err = AC_ERR_INIT;
    int flags = 0, rc;
    size_t i;

    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        lua_getfield(L, 2, "repair");
        if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
            return luaL_error(L, "field 'repair' must be a boolean");
        if (lua_toboolean(L, -1))
            flags |= AC_FSCK_REPAIR;
        lua_pop(L, 1);
    }
    rc = ac_chan_fsck(ch, flags, &r, &err);
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

static const luaL_Reg funcs[] = {
    { "channel", l_channel }, { NULL, NULL }
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
