/*
 * dump-lua SRC OUT - precompile one Lua source file to bytecode with the
 * very liblua the binary links (so the bytecode format always matches).
 * Debug information (line numbers, local names) is stripped: undumping it
 * was a quarter of every command's start-up. Tracebacks of internal errors
 * still name the functions; run with AGENT_CHAT_LUA_PATH=./lua to load the
 * sources, with line numbers. Build-time tool, not installed.
 */
#include <stdio.h>

#include <lauxlib.h>
#include <lua.h>

static int writer(lua_State *L, const void *p, size_t sz, void *ud)
{
    (void)L;
    return fwrite(p, 1, sz, (FILE *)ud) != sz;
}

int main(int argc, char **argv)
{
    lua_State *L;
    FILE *out;
    int rc;

    if (argc != 3) {
        fprintf(stderr, "usage: dump-lua SRC OUT\n");
        return 2;
    }
    L = luaL_newstate();
    if (!L || luaL_loadfile(L, argv[1]) != LUA_OK) {
        fprintf(stderr, "dump-lua: %s\n", L ? lua_tostring(L, -1) : "out of memory");
        return 1;
    }
    out = fopen(argv[2], "wb");
    if (!out) {
        perror(argv[2]);
        return 1;
    }
    rc = lua_dump(L, writer, out, 1);
    if (fclose(out) != 0 || rc != 0) {
        fprintf(stderr, "dump-lua: could not write %s\n", argv[2]);
        return 1;
    }
    lua_close(L);
    return 0;
}
