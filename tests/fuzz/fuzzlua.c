/* fuzzlua.c - the Lua state of the Lua-driving fuzz targets; see fuzzlua.h. */
#include "fuzzlua.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "agentchat/lua_host.h"
#include "fuzz.h"

#ifndef FUZZ_LUA_DIR
#error "FUZZ_LUA_DIR (the lua/ directory of the source tree) must be defined"
#endif

#define EDGES (1u << 16)

/* The modules come from FUZZ_LUA_DIR (AGENT_CHAT_LUA_PATH), never from the
 * embedded bytecode, so the harnesses link no build/embedded_lua.o. */
const struct ac_embedded_module ac_embedded_modules[] = { { NULL, NULL, NULL, 0 } };

/* libFuzzer reads this section as extra coverage counters (one byte per
 * feature, like its own inline 8-bit counters). */
__attribute__((used, section("__libfuzzer_extra_counters")))
static uint8_t lua_edges[EDGES];

static lua_State *state;
static int driver_ref = LUA_NOREF;
static uintptr_t prev_line;

/* Not instrumented itself: its own branches would only add noise to the
 * coverage of the Lua code. */
__attribute__((no_sanitize("coverage")))
static void line_hook(lua_State *L, lua_Debug *ar)
{
    uintptr_t cur;
    uint8_t *c;
    if (!lua_getinfo(L, "S", ar))
        return;
    /* The source string of a chunk is one interned string for the life of
     * the state, so its address names the chunk. */
    cur = ((uintptr_t)ar->source >> 3) * 2654435761u ^ (uintptr_t)ar->currentline * 40503u;
    c = &lua_edges[(cur ^ prev_line) & (EDGES - 1)];
    if (*c != 255)              /* saturate: a wrap to 0 would lose the edge */
        (*c)++;
    prev_line = cur >> 1;
}

static int setup(lua_State *L)
{
    const char *driver = lua_touserdata(L, 1);
    ac_lua_openlibs(L);
    if (luaL_loadbufferx(L, driver, strlen(driver), "=fuzz-driver", "t") != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, 1);
    luaL_checktype(L, -1, LUA_TFUNCTION);
    return 1;
}

void fuzz_lua_init(const char *driver, int coverage)
{
    /* Modules from the source tree; no user config or terminal width of the
     * machine running the fuzzer may change what the code does. */
    setenv("AGENT_CHAT_LUA_PATH", FUZZ_LUA_DIR, 1);
    setenv("XDG_CONFIG_HOME", "/nonexistent/agent-chat-fuzz", 1);
    setenv("HOME", "/nonexistent/agent-chat-fuzz", 1);
    unsetenv("COLUMNS");
    unsetenv("AGENT_CHAT_ROOT");
    state = luaL_newstate();
    FUZZ_CHECK(state != NULL, "cannot create a Lua state");
    lua_pushcfunction(state, setup);
    lua_pushlightuserdata(state, (void *)driver);
    if (ac_lua_pcall(state, 1, 1) != LUA_OK)
        FUZZ_CHECK(0, "driver setup failed: %s", lua_tostring(state, -1));
    driver_ref = luaL_ref(state, LUA_REGISTRYINDEX);
    if (coverage)
        lua_sethook(state, line_hook, LUA_MASKLINE, 0);
}

void fuzz_lua_run(const uint8_t *data, size_t size)
{
    lua_rawgeti(state, LUA_REGISTRYINDEX, driver_ref);
    lua_pushlstring(state, (const char *)data, size);
    prev_line = 0;
    if (ac_lua_pcall(state, 1, 0) != LUA_OK)
        FUZZ_CHECK(0, "%s", lua_tostring(state, -1) ? lua_tostring(state, -1) : "(no message)");
    /* Garbage from one input must not pile up into a memory limit. */
    lua_gc(state, LUA_GCSTEP, 0);
}
