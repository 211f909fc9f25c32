/* l_tasks.c - Lua binding of the task board: module "agentchat.tasks".
 * (Placeholder until the task-board issue lands.) */
#include <lauxlib.h>
#include <lua.h>

#include "agentchat/lua_host.h"

int luaopen_agentchat_tasks(lua_State *L)
{
    lua_newtable(L);
    return 1;
}
