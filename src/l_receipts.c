/*
 * l_receipts.c - Lua binding of acks and receipts: module "agentchat._receipts"
 * (private: the Channel receipt methods are the API).
 *
 *   local rc = require "agentchat._receipts"
 *   rc.check_agent(name)                 -- true
 *   rc.write_ack(h, seq, agent, bytes)   -- true (written) | false (acked before)
 *                                           (true, warning: written, but the
 *                                           directory fsync failed)
 *   rc.read_ack(h, seq, agent)           -- bytes, mtime | false (no ack)
 *   rc.acks(h, seq)                      -- { agent, ... } sorted
 *   rc.cursor(h, agent)                  -- value, mtime | value, nil (no file)
 *   rc.wait(h, seq, {agent, ...}, "read"|"acked", timeout, interval)
 *                                        -- true | nil, "timed out",
 *                                           "RECEIPT_TIMEOUT", 2, {missing...}
 *
 * `h` is the "agentchat.channel" handle (Channel:handle()). Times are ISO-8601 strings in the local zone with
 * microseconds, from the file's modification time. The record bytes are
 * composed and parsed in Lua (agentchat.api.receipts); this module only
 * publishes and reads them (receipts.h). Expected failures return nil,
 * message, code, exit_code; misuse (wrong types, seq < 1) raises.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/isotime.h"
#include "agentchat/lua_host.h"
#include "agentchat/receipts.h"
#include "agentchat/store.h"

static uint64_t check_seq(lua_State *L, int idx)
{
    lua_Integer seq = luaL_checkinteger(L, idx);
    luaL_argcheck(L, seq >= 1, idx, "seq must be a positive integer");
    return (uint64_t)seq;
}

/* A string argument without NUL bytes (C strings cannot carry them). */
static const char *check_cstring(lua_State *L, int idx)
{
    size_t len;
    const char *s = luaL_checklstring(L, idx, &len);
    luaL_argcheck(L, strlen(s) == len, idx, "must not contain NUL bytes");
    return s;
}

static void push_time(lua_State *L, int64_t us)
{
    char iso[48];
    ac_isotime_format(us, 6, iso);
    lua_pushstring(L, iso);
}

static int l_check_agent(lua_State *L)
{
    struct ac_err err = AC_ERR_INIT;
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    if (strlen(s) != len)
        return ac_lua_fail(L, "RECEIPT_INVALID_AGENT", 1,
                           "invalid agent name (control character blocked): NUL byte");
    if (ac_ack_agent_check(s, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_write_ack(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    uint64_t seq = check_seq(L, 2);
    const char *agent = check_cstring(L, 3);
    size_t len;
    const char *data = luaL_checklstring(L, 4, &len);
    struct ac_err err = AC_ERR_INIT;
    int rc;

    rc = ac_ack_write(ch, seq, agent, data, len, &err);
    if (rc == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushboolean(L, rc != 0);
    if (rc == 2) {
        lua_pushstring(L, err.msg);
        return 2;
    }
    return 1;
}

static int l_read_ack(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    uint64_t seq = check_seq(L, 2);
    const char *agent = check_cstring(L, 3);
    struct ac_err err = AC_ERR_INIT;
    char *data;
    size_t len;
    int64_t mtime;
    int rc;

    rc = ac_ack_read(ch, seq, agent, &data, &len, &mtime, &err);
    if (rc == -1)
        return ac_lua_fail_err(L, &err);
    if (rc == 0) {
        lua_pushboolean(L, 0);
        return 1;
    }
    lua_pushlstring(L, data, len);  /* may raise (memory): `data` would leak */
    free(data);
    push_time(L, mtime);
    return 2;
}

static int l_acks(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    uint64_t seq = check_seq(L, 2);
    struct ac_err err = AC_ERR_INIT;
    char **names = NULL;
    size_t n = 0;
    int rc = ac_ack_list(ch, seq, &names, &n, &err);
    return ac_lua_names_result(L, rc, names, n, &err);
}

static int l_cursor(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    const char *agent = check_cstring(L, 2);
    int64_t mtime, value;

    value = ac_chan_cursor_get(ch, agent, &mtime);
    lua_pushinteger(L, (lua_Integer)value);
    if (mtime == 0)
        lua_pushnil(L);
    else
        push_time(L, mtime);
    return 2;
}

static int l_wait(lua_State *L)
{
    static const char *const states[] = { "read", "acked", NULL };
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    uint64_t seq = check_seq(L, 2);
    int state, rc;
    lua_Number timeout, interval;
    lua_Integer n, i, missing;
    const char **agents;
    unsigned char *reached;
    struct ac_err err = AC_ERR_INIT;

    luaL_checktype(L, 3, LUA_TTABLE);
    state = luaL_checkoption(L, 4, NULL, states) == 0 ? AC_RECEIPT_READ : AC_RECEIPT_ACKED;
    timeout = luaL_optnumber(L, 5, 900.0);
    interval = luaL_optnumber(L, 6, 5.0);
    n = luaL_len(L, 3);
    /* Both arrays live in userdata, so a raise below cannot leak them. */
    agents = lua_newuserdatauv(L, sizeof *agents * (size_t)(n > 0 ? n : 1), 0);
    reached = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1), 0);
    for (i = 1; i <= n; i++) {
        size_t len;
        lua_geti(L, 3, i);
        agents[i - 1] = luaL_checklstring(L, -1, &len);   /* may raise */
        if (strlen(agents[i - 1]) != len)
            return ac_lua_fail(L, "RECEIPT_INVALID_AGENT", 1,
                               "invalid agent name (control character blocked): NUL byte");
        lua_pop(L, 1);      /* the table keeps the string alive */
    }
    rc = ac_receipts_wait(ch, seq, agents, (size_t)n, state, timeout, interval, reached, &err);
    if (rc == -1)
        return ac_lua_fail_err(L, &err);
    if (rc == 0) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushnil(L);
    lua_pushliteral(L, "timed out");
    lua_pushliteral(L, "RECEIPT_TIMEOUT");
    lua_pushinteger(L, 2);
    lua_createtable(L, 0, 0);
    for (i = 0, missing = 0; i < n; i++) {
        if (!reached[i]) {
            lua_pushstring(L, agents[i]);
            lua_rawseti(L, -2, ++missing);
        }
    }
    return 5;
}

static const luaL_Reg funcs[] = {
    { "check_agent", l_check_agent }, { "write_ack", l_write_ack }, { "read_ack", l_read_ack },
    { "acks", l_acks }, { "cursor", l_cursor }, { "wait", l_wait }, { NULL, NULL }
};

int luaopen_agentchat_receipts(lua_State *L)
{
    luaL_newlib(L, funcs);
    return 1;
}
