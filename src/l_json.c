/*
 * l_json.c - JSON for Lua, byte-compatible with Python: module "agentchat.json".
 *
 *   local json = require "agentchat.json"
 *   json.loads(text)                 -- value | nil, python_error_text, "JSON_INVALID"
 *   json.dumps(value, {indent=2, sort_keys=true, ensure_ascii=false,
 *                      separators={", ", ": "}})   -- Python json.dumps
 *   json.null                        -- JSON null (the same light userdata as cjson.null)
 *   json.array(t)                    -- mark a table as a JSON array (empty ones too)
 *   json.is_array(t)
 *
 * Decoding uses the Python-compatible parser (pyjson.h), encoding the
 * Python-compatible writer (json.h), so records round-trip byte for byte.
 * Tables decoded from arrays carry json.array_mt; a table without it is an
 * object when it has non-integer keys or is empty and unmarked.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/json.h"
#include "agentchat/lua_host.h"
#include "agentchat/pyjson.h"

#define ARRAY_MT "agentchat.json.array"
#define MAX_DEPTH 1000

void ac_lua_push_json(lua_State *L, const json_t *v)
{
    luaL_checkstack(L, 4, "JSON nesting too deep");
    switch (json_typeof(v)) {
    case JSON_NULL:
        lua_pushlightuserdata(L, NULL);
        break;
    case JSON_TRUE:
        lua_pushboolean(L, 1);
        break;
    case JSON_FALSE:
        lua_pushboolean(L, 0);
        break;
    case JSON_INTEGER:
        lua_pushinteger(L, (lua_Integer)json_integer_value(v));
        break;
    case JSON_REAL:
        lua_pushnumber(L, json_real_value(v));
        break;
    case JSON_STRING:
        lua_pushlstring(L, json_string_value(v), json_string_length(v));
        break;
    case JSON_ARRAY: {
        size_t i;
        json_t *item;
        lua_createtable(L, (int)json_array_size(v), 0);
        json_array_foreach(v, i, item) {
            ac_lua_push_json(L, item);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        luaL_setmetatable(L, ARRAY_MT);
        break;
    }
    case JSON_OBJECT: {
        const char *key;
        json_t *item;
        if (ac_pyjson_is_nonfinite(v)) {
            lua_pushnumber(L, ac_pyjson_nonfinite_value(v));
            break;
        }
        lua_createtable(L, 0, (int)json_object_size(v));
        json_object_foreach((json_t *)v, key, item) {
            ac_lua_push_json(L, item);
            lua_setfield(L, -2, key);
        }
        break;
    }
    }
}

/* Convert the Lua value at idx to a new jansson value, or NULL with *why
 * set. It never raises: a longjmp out of here would leak the part built. */
static json_t *to_json(lua_State *L, int idx, int depth, const char **why)
{
    int t = lua_type(L, idx);
    if (depth > MAX_DEPTH) {
        *why = "nesting deeper than 1000";      /* MAX_DEPTH */
        return NULL;
    }
    /* Each level keeps a key and a value on the Lua stack. */
    if (!lua_checkstack(L, 4)) {
        *why = "out of memory";
        return NULL;
    }
    idx = lua_absindex(L, idx);
    switch (t) {
    case LUA_TNIL:
        return json_null();
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == NULL)
            return json_null();
        break;
    case LUA_TBOOLEAN:
        return json_boolean(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return json_integer((json_int_t)lua_tointeger(L, idx));
        if (!isfinite(lua_tonumber(L, idx))) {
            /* JSON has no such numbers (jansson refuses them too) */
            *why = "cannot encode inf or nan (JSON numbers are finite)";
            return NULL;
        }
        return json_real((double)lua_tonumber(L, idx));
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        json_t *j = json_stringn(s, len);
        if (!j)
            *why = "string is not valid UTF-8";
        return j;
    }
    case LUA_TTABLE: {
        int is_array = 0;
        lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
        json_t *out, *item;
        if (lua_getmetatable(L, idx)) {
            luaL_getmetatable(L, ARRAY_MT);
            is_array = lua_rawequal(L, -1, -2);
            lua_pop(L, 2);
        }
        if (!is_array && n > 0) {
            /* A plain sequence with no other keys is an array too. */
            lua_Integer count = 0;
            lua_pushnil(L);
            while (lua_next(L, idx)) {
                count++;
                lua_pop(L, 1);
            }
            is_array = count == n;
        }
        if (is_array) {
            lua_Integer i;
            out = json_array();
            for (i = 1; out && i <= n; i++) {
                lua_rawgeti(L, idx, i);
                item = to_json(L, -1, depth + 1, why);
                lua_pop(L, 1);
                if (!item || json_array_append_new(out, item) == -1) {
                    json_decref(out);
                    return NULL;
                }
            }
            return out;
        }
        out = json_object();
        lua_pushnil(L);
        while (out && lua_next(L, idx)) {
            if (lua_type(L, -2) != LUA_TSTRING) {
                *why = "object keys must be strings";
                item = NULL;
            } else if (strlen(lua_tostring(L, -2)) != lua_rawlen(L, -2)) {
                *why = "object keys must not contain NUL bytes";
                item = NULL;
            } else {
                item = to_json(L, -1, depth + 1, why);
            }
            if (!item || json_object_set_new(out, lua_tostring(L, -2), item) == -1) {
                lua_pop(L, 2);
                json_decref(out);
                return NULL;
            }
            lua_pop(L, 1);
        }
        return out;
    }
    case LUA_TFUNCTION:
        *why = "cannot encode a function";
        return NULL;
    case LUA_TTHREAD:
        *why = "cannot encode a thread";
        return NULL;
    default:
        break;
    }
    *why = "cannot encode a userdata";
    return NULL;
}

static int l_loads(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    char err[256];
    json_t *v = ac_pyjson_loads(s, len, 0, err, sizeof err);   /* json.loads(str) */
    if (!v)
        return ac_lua_fail(L, "JSON_INVALID", 1, err);
    ac_lua_push_json(L, v);
    json_decref(v);
    return 1;
}

static int l_dumps(lua_State *L)
{
    struct ac_json_style st = { -1, 1, 0, ", ", ": " };
    const char *why;
    json_t *v;
    char *out;
    size_t len;

    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "indent");
        if (!lua_isnil(L, -1))
            st.indent = (int)luaL_checkinteger(L, -1);
        lua_getfield(L, 2, "sort_keys");
        st.sort_keys = lua_toboolean(L, -1);
        lua_getfield(L, 2, "ensure_ascii");
        if (!lua_isnil(L, -1))
            st.ensure_ascii = lua_toboolean(L, -1);
        lua_getfield(L, 2, "separators");
        if (lua_istable(L, -1)) {
            lua_rawgeti(L, -1, 1);
            lua_rawgeti(L, -2, 2);
            st.item_sep = luaL_checkstring(L, -2);   /* kept alive by the options table */
            st.key_sep = luaL_checkstring(L, -1);
        } else if (st.indent >= 0) {
            st.item_sep = ",";
        }
        lua_settop(L, 2);
    }
    lua_pushvalue(L, 1);
    why = NULL;
    v = to_json(L, -1, 0, &why);
    if (!v)
        return luaL_error(L, "json.dumps: %s", why ? why : "out of memory");
    out = ac_json_dump(v, &st, &len);
    json_decref(v);
    if (!out)
        return luaL_error(L, "json.dumps: out of memory");
    lua_pushlstring(L, out, len);
    free(out);
    return 1;
}

static int l_array(lua_State *L)
{
    if (lua_isnoneornil(L, 1))
        lua_newtable(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    luaL_setmetatable(L, ARRAY_MT);
    return 1;
}

static int l_is_array(lua_State *L)
{
    int r = 0;
    if (lua_istable(L, 1) && lua_getmetatable(L, 1)) {
        luaL_getmetatable(L, ARRAY_MT);
        r = lua_rawequal(L, -1, -2);
    }
    lua_pushboolean(L, r);
    return 1;
}

static const luaL_Reg funcs[] = {
    { "loads", l_loads }, { "dumps", l_dumps }, { "array", l_array },
    { "is_array", l_is_array }, { NULL, NULL }
};

int luaopen_agentchat_json(lua_State *L)
{
    luaL_newmetatable(L, ARRAY_MT);
    lua_pop(L, 1);
    luaL_newlib(L, funcs);
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
    luaL_getmetatable(L, ARRAY_MT);
    lua_setfield(L, -2, "array_mt");
    return 1;
}
