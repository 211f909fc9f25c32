/* l_pathlock.c - Lua binding of the path locks: module "agentchat.pathlocks".
 * (Placeholder until the path-lock issue lands.) */
#include <lauxlib.h>
#include <lua.h>

#include "agentchat/lua_host.h"

int luaopen_agentchat_pathlocks(lua_State *L)
{
    lua_newtable(L);
    return 1;
}
