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

/* The state of a run that ended without lua_close (see ac_lua_main): kept
 * in a global so that leak checkers see its memory as still reachable. */
static lua_State *unclosed;

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

void ac_lua_new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc,
                      lua_CFunction tostr)
{
    luaL_newmetatable(L, name);
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__close");
    if (tostr) {
        lua_pushcfunction(L, tostr);
        lua_setfield(L, -2, "__tostring");
    }
    lua_pop(L, 1);
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

/* The loader of an embedded module (upvalue: its index). */
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

/* package.searchers entry, right after package.preload: the loader of the
 * embedded module `name` (and ":embedded:", the extra value Lua passes
 * it), or nothing when there is none (require's message stays as it was).
 * One searcher instead of a package.preload entry per module: a command
 * requires a dozen of the sixty. */
static int search_embedded(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    int i;
    for (i = 0; ac_embedded_modules[i].name; i++) {
        if (strcmp(ac_embedded_modules[i].name, name) == 0) {
            lua_pushinteger(L, i);
            lua_pushcclosure(L, load_embedded, 1);
            lua_pushliteral(L, ":embedded:");
            return 2;
        }
    }
    return 0;
}

/* The standard libraries, the C modules in package.preload and the
 * embedded Lua modules through search_embedded (declared in lua_host.h;
 * also used by the fuzz harnesses in tests/fuzz/, which need the CLI's
 * modules without running the CLI). */
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
    lua_pushcfunction(L, luaopen_agentchat_http);
    lua_setfield(L, -2, "agentchat.http");
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
        lua_getglobal(L, "package");
        lua_getfield(L, -1, "searchers");
        for (i = (int)lua_rawlen(L, -1); i >= 2; i--) {
            lua_rawgeti(L, -1, i);
            lua_rawseti(L, -2, i + 1);
        }
        lua_pushcfunction(L, search_embedded);
        lua_rawseti(L, -2, 2);
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
}

/* The allocator of the program's Lua state. What Lua allocates is mostly
 * small (strings, tables, closures, upvalues) and Lua passes the size of
 * every block it frees or resizes, so blocks of up to SMALL_MAX bytes come
 * from size classes of 16 bytes, cut from CHUNK-sized pieces of malloc'd
 * memory and recycled through one free list per class: no header and no
 * malloc bookkeeping per block, which were a fifth of a short command's
 * instructions. Bigger blocks are malloc's. The pieces are given back only
 * when the state is closed (arena_release); until then the free lists keep
 * the memory at the most ever live per class. A sanitizer build uses
 * malloc's blocks, so that ASan sees each one. */
#if defined(__SANITIZE_ADDRESS__)
#define AC_ARENA 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AC_ARENA 0
#endif
#endif
#ifndef AC_ARENA
#define AC_ARENA 1
#endif

#if AC_ARENA
#define SMALL_MAX 256
#define CHUNK (64 * 1024)

struct arena {
    void *free[SMALL_MAX / 16 + 1];   /* by class, (size + 15) / 16 */
    char *next, *end;                 /* the unused rest of the current piece */
    void *pieces;                     /* the last piece; each starts with the one before */
};

static struct arena arena;

static size_t class_of(size_t size)
{
    return (size + 15) / 16;
}

static void *small_take(size_t cls)
{
    void *p = arena.free[cls];
    size_t size = cls * 16;
    if (p) {
        arena.free[cls] = *(void **)p;
        return p;
    }
    if ((size_t)(arena.end - arena.next) < size) {
        char *piece = malloc(CHUNK);   /* the old piece's rest (< 256 bytes) is left */
        if (!piece)
            return NULL;
        *(void **)piece = arena.pieces;
        arena.pieces = piece;
        arena.next = piece + 16;
        arena.end = piece + CHUNK;
    }
    p = arena.next;
    arena.next += size;
    return p;
}

static void small_give(void *p, size_t size)
{
    size_t cls = class_of(size);
    *(void **)p = arena.free[cls];
    arena.free[cls] = p;
}

static void *arena_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    void *p;
    (void)ud;
    if (ptr == NULL)
        osize = 0;                     /* then osize is the kind of object */
    if (nsize == 0) {
        if (ptr && osize <= SMALL_MAX)
            small_give(ptr, osize);
        else
            free(ptr);
        return NULL;
    }
    if (ptr && nsize <= osize && osize <= SMALL_MAX)
        return ptr;                    /* it fits; freed later as nsize */
    if (ptr && osize > SMALL_MAX && nsize > SMALL_MAX)
        return realloc(ptr, nsize);
    p = nsize <= SMALL_MAX ? small_take(class_of(nsize)) : malloc(nsize);
    if (!p)
        /* Lua counts on a shrink not failing: keep the big block. */
        return nsize <= osize ? ptr : NULL;
    if (ptr) {
        memcpy(p, ptr, osize < nsize ? osize : nsize);
        if (osize <= SMALL_MAX)
            small_give(ptr, osize);
        else
            free(ptr);
    }
    return p;
}

/* After lua_close: the pieces go back to malloc. */
static void arena_release(void)
{
    while (arena.pieces) {
        void *piece = arena.pieces;
        arena.pieces = *(void **)piece;
        free(piece);
    }
    memset(&arena, 0, sizeof arena);
}
#else
static void *arena_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

static void arena_release(void)
{
}
#endif

/* What luaL_newstate installs besides its allocator: a panic function
 * (an error outside any protected call: the message, then abort) and
 * warnings, off until a script's warn("@on") ("Lua warning: ..." lines on
 * stderr, as the lua5.4 interpreter prints them). */
static int panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "agent-chat: PANIC: unprotected error in call to Lua API (%s)\n",
            msg ? msg : "error object is not a string");
    fflush(stderr);
    return 0;
}

static struct {
    int on;          /* warn("@on") was called */
    int continuing;  /* the last piece had tocont set */
} warnings;

static void warnf(void *ud, const char *msg, int tocont)
{
    (void)ud;
    if (!warnings.continuing && msg[0] == '@') {    /* a control message */
        if (!tocont && strcmp(msg, "@on") == 0)
            warnings.on = 1;
        else if (!tocont && strcmp(msg, "@off") == 0)
            warnings.on = 0;
        return;
    }
    if (warnings.on) {
        if (!warnings.continuing)
            fputs("Lua warning: ", stderr);
        fputs(msg, stderr);
        if (!tocont) {
            fputc('\n', stderr);
            fflush(stderr);
        }
    }
    warnings.continuing = tocont;
}

/* pmain(argc, argv) -> exit code, closable: cli.main's two results. */
static int pmain(lua_State *L)
{
    int argc = (int)lua_tointeger(L, 1);
    char **argv = (char **)lua_touserdata(L, 2);
    int i;

    luaL_checkversion(L);
    /* A collection cycle when the heap has grown to 4 times what the last
     * one left (Lua's default is 2): start-up only adds what stays live
     * (modules, the parser), and each cycle marks all of it again (a
     * tenth of a short command at 2). */
    lua_gc(L, LUA_GCINC, 400, 0, 0);
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
    lua_call(L, 1, 2);
    return 2;
}

int ac_lua_main(int argc, char **argv)
{
    lua_State *L = lua_newstate(arena_alloc, NULL);
    int status, code;

    if (L == NULL) {
        fputs("agent-chat: cannot create Lua state: not enough memory\n", stderr);
        return 1;
    }
    lua_atpanic(L, panic);
    lua_setwarnf(L, warnf, NULL);
    globalL = L;
    ac_clock_set_interrupt_hook(interrupt_hook);
    lua_pushcfunction(L, pmain);
    lua_pushinteger(L, argc);
    lua_pushlightuserdata(L, argv);
    status = ac_lua_pcall(L, 2, 2);
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
        code = lua_isinteger(L, -2) ? (int)lua_tointeger(L, -2) : 0;
        /* Only the CLI's own code ran (no script): nothing is left for a
         * finalizer to do that the end of the process does not (its
         * handles hold descriptors and flocks; every lock and channel a
         * command takes is closed by then), so the state is not freed
         * object by object: that was a tenth of a short command. A
         * script's __gc (run, watch, repl) still runs in lua_close. */
        if (lua_toboolean(L, -1))
            unclosed = L;
    }
    fflush(stdout);
    globalL = NULL;
    if (unclosed != L) {
        lua_close(L);
        arena_release();
    }
    return code;
}
