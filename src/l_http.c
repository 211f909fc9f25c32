/*
 * l_http.c - Lua binding of the HTTP server of `agent-chat serve`
 * (src/http/server.h): module "agentchat.http", used by
 * lua/agentchat/serve.lua only.
 *
 *   local http = require "agentchat.http"
 *   local srv = http.start{host=, port=, token=, check_host=, max_streams=,
 *                          max_connections=}   -- userdata | nil, msg, code, exit
 *   srv:port()
 *   srv:next([seconds])     -- {kind="request", id=, head=, path=, args={k=v},
 *                           --  last_event_id=} | {kind="change", hub=} |
 *                           -- false (timed out) | nil, msg, "INTERRUPTED", 130
 *   srv:respond(id, status, content_type, body)      -- true | false (no such job)
 *   srv:stream(id, hub, catch_up_text)    -- "ok" | "busy" (503 sent) | false
 *   srv:hub(name, channel_handle)         -- hub number | nil, msg, code, exit;
 *                                         the handle (an agentchat.channel of
 *                                         its own) is the watcher thread's
 *                                         from then on: the caller never uses it
 *   srv:publish(hub, text)
 *   srv:close()                           -- also __close and __gc
 *   http.is_loopback(host)                -- 127.0.0.0/8 or ::1
 *
 * All of it runs on the thread that owns the Lua state; the server's own
 * threads never call Lua (server.h says how the work is split).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/lua_host.h"
#include "http/server.h"

#define SERVER_MT "agentchat.httpd"

struct l_server {
    struct ac_httpd *h;
};

static struct l_server *check_server(lua_State *L)
{
    struct l_server *s = luaL_checkudata(L, 1, SERVER_MT);
    if (!s->h)
        luaL_error(L, "attempt to use a closed server");
    return s;
}

static unsigned opt_unsigned(lua_State *L, int idx, const char *key, unsigned def)
{
    lua_Integer v;
    int isnum;
    lua_getfield(L, idx, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return def;
    }
    v = lua_tointegerx(L, -1, &isnum);
    if (!isnum || v < 0 || v > 65535 * 16)
        luaL_error(L, "field '%s' must be a small non-negative integer", key);
    lua_pop(L, 1);
    return (unsigned)v;
}

static int l_start(lua_State *L)
{
    struct ac_httpd_opts o;
    struct ac_err err = AC_ERR_INIT;
    struct l_server *s;

    luaL_checktype(L, 1, LUA_TTABLE);
    memset(&o, 0, sizeof o);
    o.host = ac_lua_opt_string(L, 1, "host", "127.0.0.1");
    o.port = opt_unsigned(L, 1, "port", 8765);
    if (o.port > 65535)
        luaL_error(L, "field 'port' must be at most 65535");
    o.token = ac_lua_opt_string(L, 1, "token", NULL);
    lua_getfield(L, 1, "check_host");
    o.check_host = lua_toboolean(L, -1);
    lua_pop(L, 1);
    o.max_streams = opt_unsigned(L, 1, "max_streams", 16);
    o.max_connections = opt_unsigned(L, 1, "max_connections", 64);
    o.header_limit = opt_unsigned(L, 1, "header_limit", 16384);
    s = lua_newuserdatauv(L, sizeof *s, 1);
    s->h = NULL;
    luaL_setmetatable(L, SERVER_MT);
    lua_newtable(L);                 /* the hubs' channel handles, kept alive */
    lua_setiuservalue(L, -2, 1);
    s->h = ac_httpd_start(&o, &err);
    if (!s->h)
        return ac_lua_fail_err(L, &err);
    return 1;
}

static int srv_port(lua_State *L)
{
    lua_pushinteger(L, ac_httpd_port(check_server(L)->h));
    return 1;
}

static int srv_next(lua_State *L)
{
    struct l_server *s = check_server(L);
    lua_Number secs = luaL_optnumber(L, 2, -1);
    int64_t ns = secs < 0 ? INT64_MAX : secs > 86400 ? 86400LL * 1000000000 : (int64_t)(secs * 1e9);
    struct ac_httpd_item it;
    struct ac_err err = AC_ERR_INIT;
    size_t i;
    int rc = ac_httpd_next(s->h, ns, &it, &err);
    if (rc == -1)
        return ac_lua_fail_err(L, &err);
    if (rc == 0) {
        lua_pushboolean(L, 0);
        return 1;
    }
    lua_createtable(L, 0, 6);
    if (it.kind == AC_HTTPD_CHANGE) {
        lua_pushliteral(L, "change");
        lua_setfield(L, -2, "kind");
        lua_pushinteger(L, it.hub);
        lua_setfield(L, -2, "hub");
    } else {
        lua_pushliteral(L, "request");
        lua_setfield(L, -2, "kind");
        lua_pushinteger(L, (lua_Integer)it.id);
        lua_setfield(L, -2, "id");
        lua_pushboolean(L, it.head);
        lua_setfield(L, -2, "head");
        lua_pushstring(L, it.path);
        lua_setfield(L, -2, "path");
        lua_createtable(L, 0, (int)it.nargs);
        for (i = 0; i < it.nargs; i++) {
            lua_pushstring(L, it.args[2 * i + 1]);
            lua_setfield(L, -2, it.args[2 * i]);
        }
        lua_setfield(L, -2, "args");
        if (it.last_event_id) {
            lua_pushstring(L, it.last_event_id);
            lua_setfield(L, -2, "last_event_id");
        }
    }
    ac_httpd_item_free(&it);
    return 1;
}

static int srv_respond(lua_State *L)
{
    struct l_server *s = check_server(L);
    lua_Integer id = luaL_checkinteger(L, 2);
    lua_Integer status = luaL_checkinteger(L, 3);
    const char *ctype = ac_lua_checkcstring(L, 4);
    size_t len;
    const char *body = luaL_checklstring(L, 5, &len);
    luaL_argcheck(L, status >= 100 && status <= 599, 3, "not an HTTP status");
    lua_pushboolean(L, ac_httpd_respond(s->h, (uint64_t)id, (unsigned)status, ctype, body, len) == 0);
    return 1;
}

static int srv_stream(lua_State *L)
{
    struct l_server *s = check_server(L);
    lua_Integer id = luaL_checkinteger(L, 2);
    lua_Integer hub = luaL_checkinteger(L, 3);
    size_t len = 0;
    const char *pre = luaL_optlstring(L, 4, "", &len);
    int rc = ac_httpd_stream(s->h, (uint64_t)id, (int)hub, pre, len);
    if (rc == -1)
        lua_pushboolean(L, 0);
    else
        lua_pushstring(L, rc == 0 ? "ok" : "busy");
    return 1;
}

static int srv_hub(lua_State *L)
{
    struct l_server *s = check_server(L);
    const char *name = ac_lua_checkcstring(L, 2);
    struct ac_chan *ch = ac_lua_checkchan(L, 3);
    struct ac_err err = AC_ERR_INIT;
    int taken;
    int hub = ac_httpd_hub(s->h, name, ch, &taken, &err);
    if (hub == -1)
        return ac_lua_fail_err(L, &err);
    if (taken) {
        lua_getiuservalue(L, 1, 1);
        lua_pushvalue(L, 3);
        lua_rawseti(L, -2, hub + 1);
        lua_pop(L, 1);
    }
    lua_pushinteger(L, hub);
    return 1;
}

static int srv_publish(lua_State *L)
{
    struct l_server *s = check_server(L);
    lua_Integer hub = luaL_checkinteger(L, 2);
    size_t len;
    const char *text = luaL_checklstring(L, 3, &len);
    lua_pushboolean(L, ac_httpd_publish(s->h, (int)hub, text, len) == 0);
    return 1;
}

static int srv_close(lua_State *L)
{
    struct l_server *s = luaL_checkudata(L, 1, SERVER_MT);
    if (s->h) {
        ac_httpd_stop(s->h);
        s->h = NULL;
    }
    return 0;
}

static int srv_tostring(lua_State *L)
{
    struct l_server *s = luaL_checkudata(L, 1, SERVER_MT);
    if (s->h)
        lua_pushfstring(L, "agentchat.httpd (port %d)", (int)ac_httpd_port(s->h));
    else
        lua_pushliteral(L, "agentchat.httpd (closed)");
    return 1;
}

static int l_is_loopback(lua_State *L)
{
    const char *host = ac_lua_checkcstring(L, 1);
    struct in_addr a4;
    struct in6_addr a6;
    int yes = 0;
    if (inet_pton(AF_INET, host, &a4) == 1)
        yes = (ntohl(a4.s_addr) >> 24) == 127;
    else if (inet_pton(AF_INET6, host, &a6) == 1)
        yes = IN6_IS_ADDR_LOOPBACK(&a6);
    lua_pushboolean(L, yes);
    return 1;
}

static const luaL_Reg server_methods[] = {
    { "port", srv_port }, { "next", srv_next }, { "respond", srv_respond },
    { "stream", srv_stream }, { "hub", srv_hub },
    { "publish", srv_publish }, { "close", srv_close }, { NULL, NULL }
};

static const luaL_Reg funcs[] = {
    { "start", l_start }, { "is_loopback", l_is_loopback }, { NULL, NULL }
};

int luaopen_agentchat_http(lua_State *L)
{
    ac_lua_new_class(L, SERVER_MT, server_methods, srv_close, srv_tostring);
    luaL_newlib(L, funcs);
    return 1;
}
