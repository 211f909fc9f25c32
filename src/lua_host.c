/*
 * lua_host.c - the embedded Lua 5.4 state: creation under a protected call,
 * the traceback message handler, module registration, interruption.
 * Modelled on lua.c (pmain, msghandler, laction/lstop, docall).
 */
#include "agentchat/lua_host.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "agentchat/clock.h"
#include "agentchat/err.h"

static lua_State *globalL;

/* Hook installed by the signal handler: stop the running chunk at the next
 * instruction with a structured error (lua.c's lstop). The error is an
 * agentchat.errors object (the metatable agentchat.errors registers under
 * ERROR_MT), so tostring() gives "INTERRUPTED: cancelled by user" and
 * errors.is_error() knows it. */
#define ERROR_MT "agentchat.error"
static void lstop(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    lua_createtable(L, 0, 3);
    lua_pushliteral(L, "INTERRUPTED");
    lua_setfield(L, -2, "code");
    lua_pushliteral(L, "cancelled by user");
    lua_setfield(L, -2, "message");
    lua_pushinteger(L, 130);
    lua_setfield(L, -2, "exit");
    if (luaL_getmetatable(L, ERROR_MT) == LUA_TTABLE)
        lua_setmetatable(L, -2);
    else
        lua_pop(L, 1);
    lua_error(L);
}

/* Called from the signal handler after the flag is set. lua_sethook is
 * documented as safe to call asynchronously (lua.c laction). */
static void interrupt_hook(int sig)
{
    (void)sig;
    if (globalL)
        lua_sethook(globalL, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* Message handler: turn any error value into a string plus traceback.
 * Error tables with code/message (the API's raised domain errors) read
 * "CODE: message". */
static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
            msg = lua_tostring(L, -1);
        } else if (lua_type(L, 1) == LUA_TTABLE) {
            lua_getfield(L, 1, "code");
            lua_getfield(L, 1, "message");
            msg = lua_pushfstring(L, "%s: %s", luaL_optstring(L, -2, "ERROR"),
                                  luaL_optstring(L, -1, "(no message)"));
        } else {
            msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
        }
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int ac_lua_pcall(lua_State *L, int nargs, int nres)
{
    int status, base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    status = lua_pcall(L, nargs, nres, base);
    lua_remove(L, base);
    return status;
}

int ac_lua_fail(lua_State *L, const char *code, int exit_code, const char *message)
{
    /* A blocking call that noticed the signal reports it by this return
     * (documented: nil, "cancelled by user", "INTERRUPTED"); the hook the
     * signal handler set would raise over it as soon as the call returns,
     * so it is taken off. The script decides; Lua code that ignores it and
     * loops runs on until the next signal sets the hook again. */
    if (strcmp(code, "INTERRUPTED") == 0) {
        if (lua_gethook(L) == lstop)
            lua_sethook(L, NULL, 0, 0);
        if (globalL && globalL != L && lua_gethook(globalL) == lstop)
            lua_sethook(globalL, NULL, 0, 0);
    }
    lua_pushnil(L);
    lua_pushstring(L, message);
    lua_pushstring(L, code);
    lua_pushinteger(L, exit_code);
    return 4;
}

/* Declared in lua_host.h: shared by the bindings. */
const char *ac_lua_opt_string(lua_State *L, int idx, const char *key, const char *def)
{
    const char *s;
    lua_getfield(L, idx, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return def;
    }
    if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "field '%s' must be a string", key);
    s = lua_tostring(L, -1);
    if (strlen(s) != lua_rawlen(L, -1))
        luaL_error(L, "field '%s' must not contain NUL bytes", key);
    lua_pop(L, 1);   /* the table keeps the string alive */
    return s;
}

int ac_lua_push_errno(lua_State *L, int e)
{
    lua_pushnil(L);
    lua_pushfstring(L, "[Errno %d] %s", e, strerror(e));
    lua_pushinteger(L, e);
    return 3;
}

int ac_lua_fail_err(lua_State *L, const struct ac_err *err)
{
    return ac_lua_fail(L, err->code ? err->code : "IO_ERROR",
                       err->exit_code ? err->exit_code : 1, err->msg);
}

const char *ac_lua_checkcstring(lua_State *L, int idx)
{
    size_t len;
    const char *s = luaL_checklstring(L, idx, &len);
    if (strlen(s) != len)
        luaL_argerror(L, idx, "string contains a NUL byte");
    return s;
}

const char *ac_lua_optcstring(lua_State *L, int idx, const char *def)
{
    return lua_isnoneornil(L, idx) ? def : ac_lua_checkcstring(L, idx);
}

/* package.preload loader for an embedded module (upvalue: its index). */
static int load_embedded(lua_State *L)
{
    const struct ac_embedded_module *m =
        &ac_embedded_modules[lua_tointeger(L, lua_upvalueindex(1))];
    if (luaL_loadbufferx(L, (const char *)m->data, m->len, m->chunkname, "bt") != LUA_OK)
        return lua_error(L);
    lua_pushstring(L, m->name);
    lua_pushliteral(L, ":embedded:");
    lua_call(L, 2, 1);
    return 1;
}

/* The standard libraries plus every agentchat module in package.preload
 * (declared in lua_host.h; also used by the fuzz harnesses in tests/fuzz/,
 * which need the CLI's modules without running the CLI). */
void ac_lua_openlibs(lua_State *L)
{
    const char *dev = getenv("AGENT_CHAT_LUA_PATH");
    int i;

    luaL_openlibs(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_agentchat_store);
    lua_setfield(L, -2, "agentchat.store");
    lua_pushcfunction(L, luaopen_agentchat_sys);
    lua_setfield(L, -2, "agentchat.sys");
    /* Raw bindings under the Channel methods: private (a leading '_'),
     * the CLI and scripts use the methods (docs/lua-api.md). */
    lua_pushcfunction(L, luaopen_agentchat_tasks);
    lua_setfield(L, -2, "agentchat._tasks");
    lua_pushcfunction(L, luaopen_agentchat_receipts);
    lua_setfield(L, -2, "agentchat._receipts");
    lua_pushcfunction(L, luaopen_agentchat_json);
    lua_setfield(L, -2, "agentchat.json");
    lua_pushcfunction(L, luaopen_agentchat_pathlocks);
    lua_setfield(L, -2, "agentchat._pathlocks");
    lua_pushcfunction(L, luaopen_agentchat_readline);
    lua_setfield(L, -2, "agentchat.readline");
    lua_pushcfunction(L, luaopen_agentchat_yaml);
    lua_setfield(L, -2, "agentchat.yaml");
    lua_pushcfunction(L, luaopen_agentchat_fsck);
    lua_setfield(L, -2, "agentchat._fsck");
    lua_pushcfunction(L, luaopen_agentchat_folder);
    lua_setfield(L, -2, "agentchat.folder");
    lua_pushcfunction(L, luaopen_agentchat_sandboxlib);
    lua_setfield(L, -2, "agentchat.sandboxlib");
    lua_pushcfunction(L, ac_lua_yaml_alias);
    lua_setfield(L, -2, "yaml");
    if (dev && *dev) {
        /* Development: load the Lua modules from disk instead. */
        lua_getglobal(L, "package");
        lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", dev, dev);
        lua_getfield(L, -2, "path");
        lua_concat(L, 2);
        lua_setfield(L, -2, "path");
        lua_pop(L, 1);
    } else {
        for (i = 0; ac_embedded_modules[i].name; i++) {
            lua_pushinteger(L, i);
            lua_pushcclosure(L, load_embedded, 1);
            lua_setfield(L, -2, ac_embedded_modules[i].name);
        }
    }
    lua_pop(L, 1);
}

static int pmain(lua_State *L)
{
    int argc = (int)lua_tointeger(L, 1);
    char **argv = (char **)lua_touserdata(L, 2);
    int i;

    luaL_checkversion(L);
    ac_lua_openlibs(L);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "agentchat.cli");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "main");
    lua_createtable(L, argc, 1);
    for (i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i);
    }
    lua_call(L, 1, 1);
    return 1;
}

int ac_lua_main(int argc, char **argv)
{
    lua_State *L = luaL_newstate();
    int status, code;

    if (L == NULL) {
        fputs("agent-chat: cannot create Lua state: not enough memory\n", stderr);
        return 1;
    }
    globalL = L;
    ac_clock_set_interrupt_hook(interrupt_hook);
    lua_pushcfunction(L, pmain);
    lua_pushinteger(L, argc);
    lua_pushlightuserdata(L, argv);
    status = ac_lua_pcall(L, 2, 1);
    if (status != LUA_OK) {
        /* Only a bug in our Lua code gets here; keep it to one line unless
         * asked for the traceback. */
        const char *msg = lua_tostring(L, -1);
        const char *debug = getenv("AGENT_CHAT_DEBUG");
        if (!msg)
            msg = "(no error message)";
        if (debug && *debug && strcmp(debug, "0") != 0)
            fprintf(stderr, "agent-chat: internal error: %s\n", msg);
        else
            fprintf(stderr, "agent-chat: INTERNAL_ERROR: %.*s (set AGENT_CHAT_DEBUG=1 for a traceback)\n",
                    (int)strcspn(msg, "\n"), msg);
        code = 1;
    } else {
        code = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0;
    }
    fflush(stdout);
    globalL = NULL;
    lua_close(L);
    return code;
}
