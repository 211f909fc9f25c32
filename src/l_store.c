/*
 * l_store.c - Lua binding of the store interface: module "agentchat.store".
 *
 *   local store = require "agentchat.store"
 *   local st = store.open(root)           -- userdata "agentchat.store" (a folder)
 *   local st = store.open("etcd://h:p/pfx", {username=, password=, ca_file=,
 *                         cert_file=, key_file=})   -- an etcd store
 *   store.is_etcd(spec)                   -- does spec name an etcd store?
 *   store.copy(src, dst, name)            -- copy a channel between stores (copy.h):
 *                                         {messages=, records=, acks=, cursors=, skipped=}
 *   st:kind()                             -- "fs" | "etcd"
 *   st:end_session()                      -- what the process holds on the
 *                                         server ends (etcd: its lease)
 *   st:channels()                         -- { "a", "b" }
 *   st:create(name, meta_json)            -- true
 *   local ch = st:channel(name[, bare])    -- userdata "agentchat.channel"; bare:
 *                                         -- even without its metadata (store.h)
 *   ch:post{from=, to=, title=, status=, body=, reply_to=,
 *           extra = {{key, value}, ...}, ts=}  -- seq, file name (and a warning
 *                                         when the message is visible but
 *                                         its fsync failed); extra: more
 *                                         frontmatter after title, in order;
 *                                         ts: the time to write instead of
 *                                         now (checked by the caller)
 *   ch:fetch{as=, after=, all=, stamp=, shown=, printed=}
 *                                         -- inbox table (see push_inbox); shown:
 *                                         each message only as read prints it;
 *                                         printed = {before=, after=, unreadable=}:
 *                                         no messages, their text as read
 *                                         prints them (see push_printed)
 *   ch:last(n [, {shown=, printed=}])     -- inbox table of the last n
 *   ch:message(seq)                       -- inbox table of message #seq
 *   ch:summary()                          -- { count=, max_seq=, last_name= }
 *   ch:meta()                             -- raw _meta.json bytes
 *   ch:bare()                             -- opened bare, its metadata missing
 *   ch:trim(through [, check])            -- messages, acks, newest: the
 *                                         messages 1..through and their acks
 *                                         removed, the newest kept (check:
 *                                         nothing removed, acks 0)
 *   ch:cursor(agent) / ch:set_cursor(agent, n)
 *   ch:advance_cursor(agent, n, expected)  -- true; the write of a read
 *                                         (ac_cursor_advance; expected may be nil)
 *   ch:cursor_lock(agent)                 -- userdata "agentchat.dirlock" (the agent's
 *                                         cursor lock, released like ch:exclusive's)
 *                                         | nil, msg, "CURSOR_BUSY"|"INTERRUPTED"|"IO_ERROR", exit
 *   ch:wait{as=, after=, timeout=, interval=, shown=, printed=}
 *   ch:watch()                            -- userdata "agentchat.chanwatch": the
 *                                         channel's change notification, opened now
 *       w:wait(seconds [, hostwatch])     -- changed, host_changed (booleans) |
 *                                         nil, msg, "INTERRUPTED", 130: one wait for
 *                                         the channel and an agentchat.folder watch
 *       w:notifying()                     -- false when the store cannot notify
 *                                         (the caller then rescans every so often)
 *       w:close()                         -- also __close and __gc
 *   ch:watch{acks=seq, cursors=true}      -- the same, of message #seq's acks
 *                                         (and the cursors) instead
 *       w:add(h [, {acks=, cursors=}])    -- true, or false (open another watch):
 *                                         w also wakes on these changes of h
 *   store.wait_watches({w, ...}, seconds) -- true (rescan) | nil, msg,
 *                                         "INTERRUPTED", 130: one wait
 *                                         on several watches of one store
 *   ch:claim_marker(marker, agent)        -- destination name
 *   ch:exclusive(wait)                    -- userdata "agentchat.dirlock" (:release(),
 *                                         __close, __gc) | nil, msg, "CHANNEL_BUSY", 1 when
 *                                         another process holds it and not `wait`
 *   ch:close()                            -- also __close and __gc
 *   store.check_name(name), store.check_marker(name)
 *   store.meta_compose(name, members, topic, created)
 *   store.parse_meta(bytes)               -- {members, topic, channel, created} | nil
 *
 * Expected failures return nil, message, code, exit_code (the exit code of
 * docs/format.md 2.5 for the CLI). Misuse (wrong argument types, a closed handle)
 * raises.
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/channel.h"
#include "agentchat/hostfile.h"
#include "agentchat/copy.h"
#include "agentchat/lua_host.h"
#include "agentchat/pystr.h"
#include "agentchat/store.h"
#include "agentchat/wait.h"

#define STORE_MT "agentchat.store"
#define CHAN_MT "agentchat.channel"
#define DIRLOCK_MT "agentchat.dirlock"
#define CHANWATCH_MT "agentchat.chanwatch"

/* A store handle. The C store must outlive every channel opened from it
 * (store.h), yet a script may close the store first (`root:close()` with a
 * channel still open): close only marks the handle closed, and the store
 * is freed when the last of its channels is closed too. */
struct l_store {
    struct ac_store *st;
    int nchan;              /* open channel handles made from it */
    int closed;             /* :close() or __gc ran: unusable from Lua */
};

struct l_chan {
    struct ac_chan *ch;
    struct l_store *owner;  /* kept alive by the channel's user value */
};

static struct l_store *check_store(lua_State *L, int idx)
{
    struct l_store *s = luaL_checkudata(L, idx, STORE_MT);
    if (s->closed || !s->st)
        luaL_error(L, "attempt to use a closed store");
    return s;
}

static struct l_chan *check_chan(lua_State *L, int idx)
{
    struct l_chan *c = luaL_checkudata(L, idx, CHAN_MT);
    if (!c->ch)
        luaL_error(L, "attempt to use a closed channel");
    return c;
}

struct ac_chan *ac_lua_checkchan(lua_State *L, int idx)
{
    return check_chan(L, idx)->ch;
}

struct ac_store *ac_lua_checkstore(lua_State *L, int idx)
{
    return check_store(L, idx)->st;
}

/* Declared in lua_host.h; shared with l_receipts.c (ack names). */
int ac_lua_names_result(lua_State *L, int rc, char **names, size_t n, const struct ac_err *err)
{
    size_t i;
    if (rc == -1)
        return ac_lua_fail_err(L, err);
    lua_createtable(L, (int)n, 0);
    for (i = 0; i < n; i++) {
        lua_pushstring(L, names[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    ac_names_free(names, n);
    return 1;
}

static const char *field_string_len(lua_State *L, int idx, const char *key, size_t *len)
{
    const char *s;
    lua_getfield(L, idx, key);
    if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "field '%s' must be a string", key);
    s = lua_tolstring(L, -1, len);
    lua_pop(L, 1);
    return s;
}

static const char *field_string(lua_State *L, int idx, const char *key)
{
    size_t len;
    const char *s = field_string_len(L, idx, key, &len);
    if (strlen(s) != len)
        luaL_error(L, "field '%s' must not contain NUL bytes", key);
    return s;
}

static int opt_field_bool(lua_State *L, int idx, const char *key)
{
    int b;
    lua_getfield(L, idx, key);
    b = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return b;
}

static lua_Integer opt_field_int(lua_State *L, int idx, const char *key, lua_Integer def, int *given)
{
    lua_Integer v = def;
    int isnum;
    lua_getfield(L, idx, key);
    if (given)
        *given = !lua_isnil(L, -1);
    if (!lua_isnil(L, -1)) {
        v = lua_tointegerx(L, -1, &isnum);
        if (!isnum)
            luaL_error(L, "field '%s' must be an integer", key);
    }
    lua_pop(L, 1);
    return v;
}

static lua_Number opt_field_number(lua_State *L, int idx, const char *key, lua_Number def)
{
    lua_Number v = def;
    lua_getfield(L, idx, key);
    if (!lua_isnil(L, -1)) {
        int isnum;
        v = lua_tonumberx(L, -1, &isnum);
        if (!isnum)
            luaL_error(L, "field '%s' must be a number", key);
    }
    lua_pop(L, 1);
    return v;
}

/* ---- module functions ---- */

/* An optional string field of the options table at idx (NULL: absent). */
static const char *opt_field_string(lua_State *L, int idx, const char *key)
{
    const char *v = NULL;
    if (lua_isnoneornil(L, idx))
        return NULL;
    lua_getfield(L, idx, key);
    if (!lua_isnil(L, -1)) {
        if (lua_type(L, -1) != LUA_TSTRING)
            luaL_error(L, "field '%s' must be a string", key);
        v = lua_tostring(L, -1);     /* kept alive by the table */
    }
    lua_pop(L, 1);
    return v;
}

/* store.open(root) for a folder, store.open("etcd://...", {username=,
 * password=, ca_file=, cert_file=, key_file=}) for an etcd store. */
static int l_open(lua_State *L)
{
    const char *root = ac_lua_checkcstring(L, 1);
    struct l_store *s;
    struct ac_err err = AC_ERR_INIT;
    struct ac_store_etcd_opts eo;
    if (!lua_isnoneornil(L, 2))
        luaL_checktype(L, 2, LUA_TTABLE);
    memset(&eo, 0, sizeof eo);
    eo.username = opt_field_string(L, 2, "username");
    eo.password = opt_field_string(L, 2, "password");
    eo.ca_file = opt_field_string(L, 2, "ca_file");
    eo.cert_file = opt_field_string(L, 2, "cert_file");
    eo.key_file = opt_field_string(L, 2, "key_file");
    s = lua_newuserdatauv(L, sizeof *s, 0);
    s->st = NULL;   /* released state first: __gc is safe if we fail */
    s->nchan = 0;
    s->closed = 0;
    luaL_setmetatable(L, STORE_MT);
    s->st = ac_store_is_etcd(root) ? ac_store_open_etcd(root, &eo, &err)
                                   : ac_store_open_fs(root, &err);
    if (!s->st)
        return ac_lua_fail_err(L, &err);
    return 1;
}

/* store.copy(src, dst, name): copy channel `name` of store src into store
 * dst (copy.h) -> {messages=, records=, acks=, cursors=, skipped=}. */
static int l_copy(lua_State *L)
{
    struct l_store *src = check_store(L, 1), *dst = check_store(L, 2);
    const char *name = ac_lua_checkcstring(L, 3);
    struct ac_copy_report rep;
    struct ac_err err = AC_ERR_INIT;
    if (ac_store_copy_channel(src->st, dst->st, name, &rep, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, (lua_Integer)rep.messages);
    lua_setfield(L, -2, "messages");
    lua_pushinteger(L, (lua_Integer)rep.records);
    lua_setfield(L, -2, "records");
    lua_pushinteger(L, (lua_Integer)rep.acks);
    lua_setfield(L, -2, "acks");
    lua_pushinteger(L, (lua_Integer)rep.cursors);
    lua_setfield(L, -2, "cursors");
    lua_pushinteger(L, (lua_Integer)rep.skipped);
    lua_setfield(L, -2, "skipped");
    return 1;
}

/* store.is_etcd(spec): does it name an etcd store? */
static int l_is_etcd(lua_State *L)
{
    lua_pushboolean(L, ac_store_is_etcd(luaL_checkstring(L, 1)));
    return 1;
}

/* st:kind(): "fs" or "etcd". */
static int store_kind(lua_State *L)
{
    lua_pushstring(L, check_store(L, 1)->st->ops->name);
    return 1;
}

/* A channel name argument, or NULL after pushing CHANNEL_INVALID_NAME's
 * failure for one with a NUL byte inside (C would cut the name there:
 * "new\0chan" created the channel new). */
static const char *channel_name_arg(lua_State *L, int idx, int *nret)
{
    size_t len;
    const char *name = luaL_checklstring(L, idx, &len);
    char shown[300];
    if (strlen(name) == len)
        return name;
    ac_err_quote(shown, sizeof shown, name, 200);
    lua_pushfstring(L, "invalid channel name (control character blocked): '%s\\x00...'", shown);
    *nret = ac_lua_fail(L, "CHANNEL_INVALID_NAME", 1, lua_tostring(L, -1));
    return NULL;
}

static int l_check_name(lua_State *L)
{
    struct ac_err err = AC_ERR_INIT;
    int nret;
    const char *name = channel_name_arg(L, 1, &nret);
    if (!name)
        return nret;
    if (ac_channel_name_check(name, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_check_marker(lua_State *L)
{
    struct ac_err err = AC_ERR_INIT;
    if (ac_marker_name_check(ac_lua_checkcstring(L, 1), &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_meta_compose(lua_State *L)
{
    const char *name = ac_lua_checkcstring(L, 1);
    const char *topic, *created;
    const char **members;
    lua_Integer n, i;
    size_t len;
    char *json;

    luaL_checktype(L, 2, LUA_TTABLE);
    topic = ac_lua_checkcstring(L, 3);
    created = ac_lua_checkcstring(L, 4);
    n = luaL_len(L, 2);
    /* Keep the array in a userdata so a raise below cannot leak it. */
    members = lua_newuserdatauv(L, sizeof *members * (size_t)(n > 0 ? n : 1), 0);
    for (i = 1; i <= n; i++) {
        lua_geti(L, 2, i);
        members[i - 1] = ac_lua_checkcstring(L, -1);   /* may raise */
        lua_pop(L, 1);
    }
    json = ac_meta_compose(name, members, (size_t)n, topic, created, &len);
    if (!json)
        return ac_lua_fail(L, "INVALID_TEXT", 1, "could not encode _meta.json (invalid UTF-8?)");
    lua_pushlstring(L, json, len);
    free(json);
    return 1;
}

/* store.parse_meta(bytes): the _meta.json fields the CLI uses, with the
 * Python tool's defaults, or nil when the file is not a JSON object, when
 * members is not a list of strings or topic not a string (docs/format.md 5: an
 * error, never a crash). Parsed with jansson, which tells objects from
 * arrays (cjson 2.1.0 cannot for empty ones). */
static int l_parse_meta(lua_State *L)
{
    size_t len, i;
    const char *bytes = luaL_checklstring(L, 1, &len);
    json_t *root = ac_meta_parse(bytes, len), *members, *topic, *v;
    int ok = 0;

    if (!root || !json_is_object(root))
        goto done;
    members = json_object_get(root, "members");
    topic = json_object_get(root, "topic");
    if ((members && !json_is_null(members) && !json_is_array(members)) ||
        (topic && !json_is_null(topic) && !json_is_string(topic)))
        goto done;
    json_array_foreach(members, i, v)
        if (!json_is_string(v))
            goto done;
    lua_createtable(L, 0, 4);
    lua_createtable(L, (int)json_array_size(members), 0);
    json_array_foreach(members, i, v) {
        lua_pushlstring(L, json_string_value(v), json_string_length(v));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "members");
    if (topic && json_is_string(topic))
        lua_pushlstring(L, json_string_value(topic), json_string_length(topic));
    else
        lua_pushliteral(L, "");
    lua_setfield(L, -2, "topic");
    v = json_object_get(root, "channel");
    if (json_is_string(v)) {
        lua_pushlstring(L, json_string_value(v), json_string_length(v));
        lua_setfield(L, -2, "channel");
    }
    for (i = 0; i < 2; i++) {
        /* "created" is what init writes; `state` reports "created_at" */
        static const char *const stamps[] = { "created", "created_at" };
        v = json_object_get(root, stamps[i]);
        if (json_is_string(v)) {
            lua_pushlstring(L, json_string_value(v), json_string_length(v));
            lua_setfield(L, -2, stamps[i]);
        }
    }
    ok = 1;
done:
    json_decref(root);
    if (!ok)
        lua_pushnil(L);
    return 1;
}

/* ---- store methods ---- */

static int store_channels(lua_State *L)
{
    struct l_store *s = check_store(L, 1);
    struct ac_err err = AC_ERR_INIT;
    char **names = NULL;
    size_t n = 0;
    int rc = ac_store_channels(s->st, &names, &n, &err);
    return ac_lua_names_result(L, rc, names, n, &err);
}

static int store_create(lua_State *L)
{
    struct l_store *s = check_store(L, 1);
    int nret;
    const char *name = channel_name_arg(L, 2, &nret);
    size_t len;
    const char *meta = luaL_checklstring(L, 3, &len);
    struct ac_err err = AC_ERR_INIT;
    if (!name)
        return nret;
    if (ac_store_chan_create(s->st, name, meta, len, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushboolean(L, 1);
    return 1;
}

static int store_channel(lua_State *L)
{
    struct l_store *s = check_store(L, 1);
    int nret;
    const char *name = channel_name_arg(L, 2, &nret);
    int bare = lua_toboolean(L, 3);
    struct ac_err err = AC_ERR_INIT;
    struct l_chan *c;
    if (!name)
        return nret;
    c = lua_newuserdatauv(L, sizeof *c, 1);
    c->ch = NULL;
    c->owner = NULL;
    luaL_setmetatable(L, CHAN_MT);
    lua_pushvalue(L, 1);                /* keep the store alive */
    lua_setiuservalue(L, -2, 1);
    if ((bare ? ac_store_chan_open_bare(s->st, name, &c->ch, &err)
              : ac_store_chan_open(s->st, name, &c->ch, &err)) == -1)
        return ac_lua_fail_err(L, &err);
    c->owner = s;
    s->nchan++;
    return 1;
}

static int store_root(lua_State *L)
{
    lua_pushstring(L, check_store(L, 1)->st->root);
    return 1;
}

/* Free the C store once the handle is closed and no channel of it is
 * open any more. */
static void store_release(struct l_store *s)
{
    if (s->closed && s->nchan == 0 && s->st) {
        ac_store_close(s->st);
        s->st = NULL;
    }
}

/* st:close(), __close and __gc: idempotent. Channels still open keep the
 * C store until they close (the finalizers of a store and its channels may
 * run in either order; both userdata stay valid until all have run). */
static int store_gc(lua_State *L)
{
    struct l_store *s = luaL_checkudata(L, 1, STORE_MT);
    s->closed = 1;
    store_release(s);
    return 0;
}

/* st:end_session(): what the process holds on the server ends now
 * (etcd: its session lease and the locks on it); the store stays usable.
 * The CLI calls it before exiting without lua_close. */
static int store_end_session(lua_State *L)
{
    struct l_store *s = luaL_checkudata(L, 1, STORE_MT);
    if (s->st)
        ac_store_session_end(s->st);
    return 0;
}

/* ---- channel methods ---- */

static int chan_name(lua_State *L)
{
    lua_pushstring(L, check_chan(L, 1)->ch->name);
    return 1;
}

/* ch:bare(): opened with st:channel(name, true) and its metadata missing. */
static int chan_bare(lua_State *L)
{
    lua_pushboolean(L, check_chan(L, 1)->ch->bare);
    return 1;
}

static int chan_meta(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    struct ac_err err = AC_ERR_INIT;
    struct ac_file f;
    if (ac_chan_meta_read(c->ch, &f, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushlstring(L, f.data, f.len);
    ac_file_free(&f);
    return 1;
}

/* reply_to: an integer or the decimal text of one (Python ints are
 * unbounded); 0 or absent means none. Raises on anything else. */
static const char *reply_text(lua_State *L, int idx, char *buf)
{
    const char *s, *p;
    lua_getfield(L, idx, "reply_to");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return NULL;
    }
    if (lua_isinteger(L, -1)) {
        lua_Integer v = lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (v == 0)
            return NULL;
        snprintf(buf, 32, "%lld", (long long)v);
        return buf;
    }
    if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "field 'reply_to' must be an integer or decimal text");
    s = lua_tostring(L, -1);
    lua_pop(L, 1);   /* the table keeps the string alive */
    p = s + (*s == '-');
    if (!*p || p[strspn(p, "0123456789")] != '\0')
        luaL_error(L, "field 'reply_to' must be an integer or decimal text");
    return strcmp(s, "0") == 0 || strcmp(s, "-0") == 0 ? NULL : s;
}

/* The optional `extra` field of post: a list of {key, value} string pairs,
 * in the order they are written. The array lives in a userdata left on the
 * stack (a raise below cannot leak it); the strings stay alive in the
 * argument table. Returns the count, or -1 after pushing a failure for a
 * NUL byte (the check of keys and values is the backend's,
 * ac_fm_extra_check). Raises for anything that is not such a list. */
static int extra_fields(lua_State *L, int idx, struct ac_fm_field **out)
{
    lua_Integer n, i;
    struct ac_fm_field *v;

    *out = NULL;
    lua_getfield(L, idx, "extra");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return 0;
    }
    if (!lua_istable(L, -1))
        luaL_error(L, "field 'extra' must be a list of {key, value} pairs");
    n = luaL_len(L, -1);
    if (n > AC_FM_EXTRA_MAX) {
        lua_pop(L, 1);
        ac_lua_fail(L, "MESSAGE_INVALID_FIELD", 1, "too many extra frontmatter fields");
        return -1;
    }
    v = lua_newuserdatauv(L, sizeof *v * (size_t)(n > 0 ? n : 1), 0);
    lua_insert(L, -2);                          /* userdata below the list */
    for (i = 1; i <= n; i++) {
        size_t klen, vlen;
        lua_geti(L, -1, i);
        if (!lua_istable(L, -1))
            luaL_error(L, "field 'extra' must be a list of {key, value} pairs");
        lua_geti(L, -1, 1);
        lua_geti(L, -2, 2);
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
            luaL_error(L, "field 'extra': key and value must be strings");
        v[i - 1].key = lua_tolstring(L, -2, &klen);
        v[i - 1].value = lua_tolstring(L, -1, &vlen);
        if (strlen(v[i - 1].key) != klen || strlen(v[i - 1].value) != vlen) {
            lua_pop(L, 4);
            ac_lua_fail(L, "MESSAGE_INVALID_FIELD", 1, "frontmatter keys and values must not contain NUL bytes");
            return -1;
        }
        lua_pop(L, 3);                          /* the pair keeps them alive */
    }
    lua_pop(L, 1);                              /* the list; userdata stays */
    *out = v;
    return (int)n;
}

static int chan_post(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    char reply[32];
    struct ac_post_req req;
    struct ac_post_result res;
    struct ac_err err = AC_ERR_INIT;
    struct ac_fm_field *extra;
    int nextra;

    luaL_checktype(L, 2, LUA_TTABLE);
    memset(&req, 0, sizeof req);
    req.from = field_string(L, 2, "from");
    req.to = ac_lua_opt_string(L, 2, "to", "all");
    req.title = field_string(L, 2, "title");
    req.status = ac_lua_opt_string(L, 2, "status", "discussion");
    req.body = field_string_len(L, 2, "body", &req.body_len);
    req.reply_to = reply_text(L, 2, reply);
    req.ts = ac_lua_opt_string(L, 2, "ts", NULL);
    nextra = extra_fields(L, 2, &extra);       /* may raise */
    if (nextra == -1)
        return 4;                               /* nil, message, code, exit */
    req.extra = extra;
    req.nextra = (size_t)nextra;
    res.published = 0;
    if (ac_chan_msg_post(c->ch, &req, &res, &err) == -1) {
        if (!res.published)
            return ac_lua_fail_err(L, &err);
        /* Visible but not known durable: success, with the warning. */
        lua_pushinteger(L, (lua_Integer)res.seq);
        lua_pushstring(L, res.name);
        lua_pushstring(L, err.msg);
        return 3;
    }
    lua_pushinteger(L, (lua_Integer)res.seq);
    lua_pushstring(L, res.name);
    return 2;
}

static void set_str(lua_State *L, const char *key, const char *s, size_t len)
{
    lua_pushlstring(L, s, len);
    lua_setfield(L, -2, key);
}

/* Push the inbox as
 *   { max_seq=, count=, messages = { {seq=, name=, text=, body=, mtime=,
 *     incomplete=, has_frontmatter=, truncated=, decode_error=,
 *     fields = {key=value...}}, ... },
 *     skipped = { {name=, errno=, reason=}, ... } } */
/* A message as read prints it: {seq, status, shown} with shown its text
 * right-stripped, or {seq, status, name, decode_error} for a file that is
 * not UTF-8 (the notice that stands for it is Lua's, kinds.shown_text).
 * A fraction of a whole record's cost: no fields table, no body, no name
 * (a new string per message). */
static void push_shown(lua_State *L, const struct ac_inmsg *m)
{
    const char *v;
    size_t vlen;
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, (lua_Integer)m->seq);
    lua_setfield(L, -2, "seq");
    if (ac_fm_get(&m->fm, "status", &v, &vlen)) {    /* the last one, as in `fields` */
        lua_pushlstring(L, v, vlen);
        lua_setfield(L, -2, "status");
    }
    if (m->decode_error) {
        lua_pushstring(L, m->name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, m->decode_error);
        lua_setfield(L, -2, "decode_error");
    } else {
        lua_pushlstring(L, m->text, ac_py_rstrip_len(m->text, m->text_len));
        lua_setfield(L, -2, "shown");
    }
}

/* How the messages of an inbox are given to Lua: whole records, as read
 * shows them (push_shown), or printed (push_printed). */
enum how { WHOLE, SHOWN, PRINTED };

/* The `shown` and `printed` options of the table at idx: SHOWN, PRINTED
 * (the printed table is pushed: the caller pops it after push_inbox), or
 * WHOLE. */
static enum how how_of(lua_State *L, int idx)
{
    if (lua_getfield(L, idx, "printed") != LUA_TNIL) {
        luaL_checktype(L, -1, LUA_TTABLE);
        return PRINTED;
    }
    lua_pop(L, 1);
    return opt_field_bool(L, idx, "shown") ? SHOWN : WHOLE;
}

/* inbox.printed: for each message, printed.before, its text right-stripped
 * (or, for a file that is not UTF-8, what printed.unreadable(name, why)
 * returns), printed.after; and inbox.n, how many. What read prints, in
 * one string, without a Lua value per message: the caller decides the
 * frame (kinds.PRINTED), C only repeats it. printed and inbox are stack
 * indices (absolute). */
static void push_printed(lua_State *L, const struct ac_inbox *in, int printed, int inbox)
{
    size_t i, blen, alen;
    const char *before, *after;
    luaL_Buffer b;

    lua_getfield(L, printed, "before");
    lua_getfield(L, printed, "after");
    before = luaL_checklstring(L, -2, &blen);     /* both stay on the stack */
    after = luaL_checklstring(L, -1, &alen);
    luaL_buffinit(L, &b);
    for (i = 0; i < in->n; i++) {
        const struct ac_inmsg *m = &in->v[i];
        luaL_addlstring(&b, before, blen);
        if (m->decode_error) {
            lua_getfield(L, printed, "unreadable");
            lua_pushstring(L, m->name);
            lua_pushstring(L, m->decode_error);
            lua_call(L, 2, 1);
            luaL_checkstring(L, -1);
            luaL_addvalue(&b);
        } else {
            luaL_addlstring(&b, m->text, ac_py_rstrip_len(m->text, m->text_len));
        }
        luaL_addlstring(&b, after, alen);
    }
    luaL_pushresult(&b);
    lua_setfield(L, inbox, "printed");
    lua_pop(L, 2);
    lua_pushinteger(L, (lua_Integer)in->n);
    lua_setfield(L, inbox, "n");
}

/* The inbox table {max_seq, count, messages, skipped}, the messages made
 * as `how` says (PRINTED: `printed` and `n`, and no messages; the printed
 * table is then the top of the stack, where it stays below the inbox). */
static void push_inbox(lua_State *L, const struct ac_inbox *in, enum how how)
{
    size_t i, j;
    int printed = lua_gettop(L);
    lua_createtable(L, 0, 5);
    if (how == PRINTED)
        push_printed(L, in, printed, lua_gettop(L));
    lua_pushinteger(L, (lua_Integer)in->max_seq);
    lua_setfield(L, -2, "max_seq");
    lua_pushinteger(L, (lua_Integer)in->count);
    lua_setfield(L, -2, "count");
    lua_createtable(L, how == PRINTED ? 0 : (int)in->n, 0);
    for (i = 0; i < in->n && how != PRINTED; i++) {
        const struct ac_inmsg *m = &in->v[i];
        if (how == SHOWN) {
            push_shown(L, m);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
            continue;
        }
        lua_createtable(L, 0, 8);
        lua_pushinteger(L, (lua_Integer)m->seq);
        lua_setfield(L, -2, "seq");
        lua_pushstring(L, m->name);
        lua_setfield(L, -2, "name");
        set_str(L, "text", m->text, m->text_len);
        set_str(L, "body", m->text + m->fm.body_off, m->text_len - m->fm.body_off);
        lua_pushinteger(L, (lua_Integer)m->mtime_sec);
        lua_setfield(L, -2, "mtime");
        lua_pushboolean(L, m->incomplete);
        lua_setfield(L, -2, "incomplete");
        lua_pushboolean(L, m->fm.present);
        lua_setfield(L, -2, "has_frontmatter");
        if (m->truncated) {
            lua_pushinteger(L, (lua_Integer)m->truncated);
            lua_setfield(L, -2, "truncated");
        }
        if (m->decode_error) {
            lua_pushstring(L, m->decode_error);
            lua_setfield(L, -2, "decode_error");
        }
        lua_createtable(L, 0, (int)m->fm.npairs);
        for (j = 0; j < m->fm.npairs; j++) {
            lua_pushlstring(L, m->fm.pairs[j].key, m->fm.pairs[j].key_len);
            lua_pushlstring(L, m->fm.pairs[j].value, m->fm.pairs[j].value_len);
            lua_rawset(L, -3);          /* later duplicates win, like a dict */
        }
        lua_setfield(L, -2, "fields");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "messages");
    lua_createtable(L, (int)in->nskipped, 0);
    for (i = 0; i < in->nskipped; i++) {
        lua_createtable(L, 0, 3);
        lua_pushstring(L, in->skipped[i].name);
        lua_setfield(L, -2, "name");
        lua_pushinteger(L, in->skipped[i].sys_errno);
        lua_setfield(L, -2, "errno");
        lua_pushstring(L, in->skipped[i].sys_errno == EFBIG ? "file too large"
                          : strerror(in->skipped[i].sys_errno));
        lua_setfield(L, -2, "reason");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "skipped");
}

static int chan_fetch(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    struct ac_inbox in;
    struct ac_err err = AC_ERR_INIT;
    const char *agent;
    lua_Integer after;
    int flags = 0;
    enum how how;

    luaL_checktype(L, 2, LUA_TTABLE);
    if (opt_field_bool(L, 2, "all"))
        flags |= AC_INBOX_ALL;
    agent = (flags & AC_INBOX_ALL) ? ac_lua_opt_string(L, 2, "as", "") : field_string(L, 2, "as");
    after = opt_field_int(L, 2, "after", 0, NULL);
    lua_getfield(L, 2, "stamp");
    if (lua_isboolean(L, -1) && !lua_toboolean(L, -1))
        flags |= AC_INBOX_NO_STAMP;
    lua_pop(L, 1);
    how = how_of(L, 2);
    if (ac_inbox_fetch(c->ch, agent, after, flags, &in, &err) == -1)
        return ac_lua_fail_err(L, &err);
    push_inbox(L, &in, how);
    ac_inbox_free(&in);
    return 1;
}

static int chan_last(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    struct ac_inbox in;
    struct ac_err err = AC_ERR_INIT;
    enum how how = WHOLE;
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        how = how_of(L, 3);
    }
    if (ac_inbox_last(c->ch, n > 0 ? (size_t)n : 0, &in, &err) == -1)
        return ac_lua_fail_err(L, &err);
    if (n <= 0) {
        size_t i;
        for (i = 0; i < in.n; i++) {
            ac_fm_free(&in.v[i].fm);
            free(in.v[i].text);
            free(in.v[i].name);
        }
        in.n = 0;
    }
    push_inbox(L, &in, how);
    ac_inbox_free(&in);
    return 1;
}

/* ch:message(seq): inbox table of the message file(s) with that seq, any
 * recipient (none: an empty messages list). */
static int chan_message(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    lua_Integer seq = luaL_checkinteger(L, 2);
    struct ac_inbox in;
    struct ac_err err = AC_ERR_INIT;
    if (ac_inbox_seq(c->ch, seq > 0 ? (uint64_t)seq : 0, &in, &err) == -1)
        return ac_lua_fail_err(L, &err);
    push_inbox(L, &in, WHOLE);
    ac_inbox_free(&in);
    return 1;
}

static int chan_summary(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    struct ac_listing l;
    struct ac_err err = AC_ERR_INIT;
    if (ac_chan_msg_list(c->ch, INT64_MAX, 1, &l, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, (lua_Integer)l.count);
    lua_setfield(L, -2, "count");
    lua_pushinteger(L, (lua_Integer)l.max_seq);
    lua_setfield(L, -2, "max_seq");
    if (l.last_name) {
        lua_pushstring(L, l.last_name);
        lua_setfield(L, -2, "last_name");
    }
    ac_listing_free(&l);
    return 1;
}

static int chan_cursor(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    const char *agent = ac_lua_checkcstring(L, 2);
    lua_pushinteger(L, (lua_Integer)ac_chan_cursor_get(c->ch, agent, NULL));
    return 1;
}

static int chan_set_cursor(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    const char *agent = ac_lua_checkcstring(L, 2);
    lua_Integer v = luaL_checkinteger(L, 3);
    struct ac_err err = AC_ERR_INIT;
    if (ac_chan_cursor_set(c->ch, agent, v, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushboolean(L, 1);
    return 1;
}

/* ch:trim(through [, check]): the messages 1..through and their acks
 * removed, the newest kept (ac_chan_msg_trim; check: only its checks,
 * ac_chan_msg_trim_check): messages, acks, newest. */
static int chan_trim(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    lua_Integer through = luaL_checkinteger(L, 2);
    int check = lua_toboolean(L, 3);
    struct ac_trim_result res;
    struct ac_err err = AC_ERR_INIT;
    luaL_argcheck(L, through >= 1, 2, "seq must be >= 1");
    if ((check ? ac_chan_msg_trim_check : ac_chan_msg_trim)(c->ch, (uint64_t)through, &res,
                                                            &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushinteger(L, (lua_Integer)res.messages);
    lua_pushinteger(L, (lua_Integer)res.acks);
    lua_pushinteger(L, (lua_Integer)res.newest);
    return 3;
}

/* ch:advance_cursor(agent, value, expected): the write of a read
 * (ac_chan_cursor_advance; expected may be nil). */
static int chan_advance_cursor(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    const char *agent = luaL_checkstring(L, 2);
    int64_t value = (int64_t)luaL_checkinteger(L, 3), expected = 0;
    int given = !lua_isnoneornil(L, 4);
    struct ac_err err = AC_ERR_INIT;
    if (given)
        expected = (int64_t)luaL_checkinteger(L, 4);
    if (ac_chan_cursor_advance(c->ch, agent, given ? &expected : NULL, value, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushboolean(L, 1);
    return 1;
}

/* ch:cursor_lock(agent): the agent's cursor lock (ac_chan_cursor_lock),
 * held until :release(), __close or __gc. */
static int chan_cursor_lock(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    const char *agent = luaL_checkstring(L, 2);
    struct ac_err err = AC_ERR_INIT;
    struct ac_mutex **m = lua_newuserdatauv(L, sizeof *m, 0);
    *m = NULL;
    luaL_setmetatable(L, DIRLOCK_MT);
    if (ac_chan_cursor_lock(c->ch, agent, m, &err) == -1)
        return ac_lua_fail_err(L, &err);
    return 1;
}

static int chan_wait(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    const char *agent;
    lua_Integer after;
    lua_Number timeout, interval;
    struct ac_inbox in;
    struct ac_err err = AC_ERR_INIT;
    int given, rc;
    enum how how;

    luaL_checktype(L, 2, LUA_TTABLE);
    agent = field_string(L, 2, "as");
    after = opt_field_int(L, 2, "after", 0, &given);
    if (!given)
        after = ac_chan_cursor_get(c->ch, agent, NULL);
    timeout = opt_field_number(L, 2, "timeout", 900.0);
    interval = opt_field_number(L, 2, "interval", 5.0);
    how = how_of(L, 2);
    rc = ac_wait_inbox(c->ch, agent, after, timeout, interval, &in, &err);
    if (rc == -1)
        return ac_lua_fail_err(L, &err);
    if (rc == 1)
        return ac_lua_fail(L, "ETIMEDOUT", 2, "timed out");
    push_inbox(L, &in, how);
    ac_inbox_free(&in);
    return 1;
}

/* A change notification of a channel (ch:watch()), kept open between
 * waits so that nothing published between a scan and the next wait is
 * missed. Its user value is the channel handle, so the channel lives as
 * long as the watch. */
struct l_chanwatch {
    struct l_chan *c;
    struct ac_watch *w;         /* NULL: the store cannot notify (poll) */
    int closed;
};

static struct l_chanwatch *check_chanwatch(lua_State *L)
{
    struct l_chanwatch *cw = luaL_checkudata(L, 1, CHANWATCH_MT);
    if (cw->closed)
        luaL_error(L, "attempt to use a closed watch");
    if (!cw->c->ch)
        luaL_error(L, "attempt to use a watch of a closed channel");
    return cw;
}

/* What a watch of the options at idx covers ({acks = seq, cursors = bool};
 * none: the messages). */
static int watch_what(lua_State *L, int idx, uint64_t *seq)
{
    int given = 0, what = AC_WATCH_MESSAGES;
    lua_Integer s = 0;
    *seq = 0;
    if (lua_isnoneornil(L, idx))
        return what;
    luaL_checktype(L, idx, LUA_TTABLE);
    s = opt_field_int(L, idx, "acks", 0, &given);
    if (given && s < 1)
        luaL_error(L, "field 'acks' must be a message seq (1 or more)");
    if (given || opt_field_bool(L, idx, "cursors"))
        what = (given ? AC_WATCH_ACKS : 0) | (opt_field_bool(L, idx, "cursors") ? AC_WATCH_CURSORS : 0);
    *seq = (uint64_t)s;
    return what;
}

/* ch:watch([{acks = seq, cursors = bool}]): the channel's messages, or the
 * acks of message #seq (and the cursors, whose moves make it read). */
static int chan_watch(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    struct l_chanwatch *cw;
    uint64_t seq;
    int what = watch_what(L, 2, &seq);
    lua_settop(L, 1);
    cw = lua_newuserdatauv(L, sizeof *cw, 1);
    cw->c = c;
    cw->closed = 0;
    cw->w = ac_chan_watch_open(c->ch, what, seq);
    luaL_setmetatable(L, CHANWATCH_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    return 1;
}

/* w:wait(seconds [, hostwatch]): one wait for a change of the channel or
 * of the host folder (wait.h: ac_wait_nap_fd); the host watch's
 * notifications are consumed. */
static int chanwatch_wait(lua_State *L)
{
    struct l_chanwatch *cw = check_chanwatch(L);
    lua_Number secs = luaL_checknumber(L, 2);
    struct ac_host_watch *hw = lua_isnoneornil(L, 3) ? NULL : ac_lua_checkhostwatch(L, 3);
    struct ac_err err = AC_ERR_INIT;
    int which;
    int64_t ns = secs > 0 ? (secs > 86400.0 ? 86400LL * 1000000000 : (int64_t)(secs * 1e9)) : 0;
    if (ac_wait_nap_fd(cw->c->ch, &cw->w, hw ? ac_host_watch_fd(hw) : -1, ns, &which, &err) == -1)
        return ac_lua_fail_err(L, &err);
    if (which & 2)
        ac_host_watch_wait(hw, 0);
    lua_pushboolean(L, which & 1);
    lua_pushboolean(L, (which & 2) != 0);
    return 2;
}

/* store.wait_watches({w, ...}, seconds): one wait on every watch (of one
 * store) until one changes or the time passes (wait.h: ac_wait_nap_many):
 * true (then rescan: a change or the time is up) | nil, msg,
 * "INTERRUPTED", 130. A closed watch
 * in the list raises. */
static int l_wait_watches(lua_State *L)
{
    struct l_chanwatch *cws[AC_WATCH_MANY_MAX];
    struct ac_chan *chs[AC_WATCH_MANY_MAX];
    struct ac_watch *ws[AC_WATCH_MANY_MAX];
    struct ac_store *st = NULL;
    struct ac_err err = AC_ERR_INIT;
    lua_Number secs;
    lua_Integer i, n;
    int64_t ns;
    int rc;

    luaL_checktype(L, 1, LUA_TTABLE);
    secs = luaL_checknumber(L, 2);
    n = (lua_Integer)lua_rawlen(L, 1);
    if (n < 1 || n > AC_WATCH_MANY_MAX)
        luaL_error(L, "wait_watches expects 1 to %d watches", AC_WATCH_MANY_MAX);
    for (i = 0; i < n; i++) {
        struct l_chanwatch *cw;
        lua_rawgeti(L, 1, i + 1);
        cw = luaL_checkudata(L, -1, CHANWATCH_MT);
        if (cw->closed || !cw->c->ch)
            luaL_error(L, "attempt to use a closed watch");
        if (st && cw->c->ch->store != st)
            luaL_error(L, "wait_watches: every watch must be of the same store");
        st = cw->c->ch->store;
        lua_pop(L, 1);          /* the list keeps it alive */
        cws[i] = cw;
        chs[i] = cw->c->ch;
        ws[i] = cw->w;
    }
    ns = secs > 0 ? (secs > 86400.0 ? 86400LL * 1000000000 : (int64_t)(secs * 1e9)) : 0;
    rc = ac_wait_nap_many(st, chs, ws, (size_t)n, ns, &err);
    for (i = 0; i < n; i++)
        cws[i]->w = ws[i];      /* closed where notification broke down */
    if (rc == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushboolean(L, 1);
    return 1;
}

/* w:add(h [, {acks = seq, cursors = bool}]): the watch also wakes on these
 * changes of channel handle h (of the same store; keep h open while the
 * watch is): true, or false when it cannot (a watch that does not notify,
 * a backend without watch_add, a full watch: open another watch). */
static int chanwatch_add(lua_State *L)
{
    struct l_chanwatch *cw = check_chanwatch(L);
    struct l_chan *c = check_chan(L, 2);
    uint64_t seq;
    int what = watch_what(L, 3, &seq);
    if (c->ch->store != cw->c->ch->store)
        luaL_error(L, "w:add: the channel is of another store");
    lua_pushboolean(L, cw->w && ac_chan_watch_add(c->ch, cw->w, what, seq) == 0);
    return 1;
}

static int chanwatch_notifying(lua_State *L)
{
    lua_pushboolean(L, check_chanwatch(L)->w != NULL);
    return 1;
}

static int chanwatch_close(lua_State *L)
{
    struct l_chanwatch *cw = luaL_checkudata(L, 1, CHANWATCH_MT);
    if (!cw->closed) {
        /* A channel closed first took its store's table with it: the
         * watch's descriptors then go with the process. */
        if (cw->w && cw->c->ch)
            ac_chan_watch_close(cw->c->ch, cw->w);
        cw->w = NULL;
        cw->closed = 1;
    }
    return 0;
}

static int chanwatch_tostring(lua_State *L)
{
    struct l_chanwatch *cw = luaL_checkudata(L, 1, CHANWATCH_MT);
    lua_pushstring(L, cw->closed ? "agentchat.chanwatch (closed)" : "agentchat.chanwatch");
    return 1;
}

static int chan_claim_marker(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    const char *marker = ac_lua_checkcstring(L, 2);
    const char *agent = ac_lua_checkcstring(L, 3);
    struct ac_err err = AC_ERR_INIT;
    char dest[600];
    if (ac_marker_name_check(marker, &err) == -1 ||
        ac_chan_marker_claim(c->ch, marker, agent, dest, sizeof dest, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushstring(L, dest);
    return 1;
}

/* ch:write_state(bytes): publish the channel's state.md (the derived
 * summary of `compact` and `state --write`) as a whole. */
static int chan_write_state(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    size_t len;
    const char *data = luaL_checklstring(L, 2, &len);
    struct ac_err err = AC_ERR_INIT;
    if (ac_chan_blob_write(c->ch, "state.md", data, len, &err) == -1)
        return ac_lua_fail_err(L, &err);
    lua_pushboolean(L, 1);
    return 1;
}

static int chan_close(lua_State *L)
{
    struct l_chan *c = luaL_checkudata(L, 1, CHAN_MT);
    if (c->ch) {
        ac_chan_close(c->ch);
        c->ch = NULL;
        if (c->owner) {
            c->owner->nchan--;
            store_release(c->owner);
            c->owner = NULL;
        }
    }
    return 0;
}

static int chan_tostring(lua_State *L)
{
    struct l_chan *c = luaL_checkudata(L, 1, CHAN_MT);
    if (c->ch)
        lua_pushfstring(L, "agentchat.channel (%s)", c->ch->name);
    else
        lua_pushliteral(L, "agentchat.channel (closed)");
    return 1;
}

static int store_tostring(lua_State *L)
{
    struct l_store *s = luaL_checkudata(L, 1, STORE_MT);
    if (s->st && !s->closed)
        lua_pushfstring(L, "agentchat.store (%s)", s->st->root);
    else
        lua_pushliteral(L, "agentchat.store (closed)");
    return 1;
}

/* ch:exclusive(wait): the channel's one-writer lock (the store's
 * AC_MUTEX_CHANNEL), held until :release(), __close or __gc. */
static int chan_exclusive(lua_State *L)
{
    struct l_chan *c = check_chan(L, 1);
    int wait = lua_toboolean(L, 2), rc;
    struct ac_err err = AC_ERR_INIT;
    struct ac_mutex **m = lua_newuserdatauv(L, sizeof *m, 0);
    *m = NULL;
    luaL_setmetatable(L, DIRLOCK_MT);
    rc = ac_chan_mutex_acquire(c->ch, AC_MUTEX_CHANNEL, wait ? INT64_MAX : 0, 0, m, &err);
    if (rc == AC_MUTEX_BUSY)
        return ac_lua_fail(L, "CHANNEL_BUSY", 1, "another process holds the channel");
    if (rc == -1 && err.sys_errno == EINTR)
        return ac_lua_fail(L, "INTERRUPTED", AC_EXIT_INTERRUPTED, "cancelled by user");
    if (rc == -1) {
        char msg[128];
        if (!err.sys_errno)
            return ac_lua_fail_err(L, &err);
        snprintf(msg, sizeof msg, "could not lock the channel: %s", strerror(err.sys_errno));
        return ac_lua_fail(L, "IO_ERROR", 1, msg);
    }
    return 1;
}

/* lock:release(), __close and __gc: idempotent. */
static int dirlock_release(lua_State *L)
{
    struct ac_mutex **m = luaL_checkudata(L, 1, DIRLOCK_MT);
    ac_mutex_release(*m);
    *m = NULL;
    return 0;
}

static int dirlock_tostring(lua_State *L)
{
    struct ac_mutex **m = luaL_checkudata(L, 1, DIRLOCK_MT);
    lua_pushstring(L, *m ? "agentchat.dirlock (held)" : "agentchat.dirlock (released)");
    return 1;
}

static const luaL_Reg dirlock_methods[] = {
    { "release", dirlock_release }, { NULL, NULL }
};

static const luaL_Reg chanwatch_methods[] = {
    { "wait", chanwatch_wait }, { "notifying", chanwatch_notifying }, { "add", chanwatch_add },
    { "close", chanwatch_close },
    { NULL, NULL }
};

static const luaL_Reg store_methods[] = {
    { "channels", store_channels }, { "create", store_create }, { "channel", store_channel },
    { "root", store_root }, { "kind", store_kind }, { "close", store_gc },
    { "end_session", store_end_session }, { NULL, NULL }
};

static const luaL_Reg chan_methods[] = {
    { "name", chan_name }, { "meta", chan_meta }, { "bare", chan_bare },
    { "post", chan_post },
    { "fetch", chan_fetch }, { "last", chan_last }, { "message", chan_message },
    { "summary", chan_summary }, { "cursor", chan_cursor }, { "set_cursor", chan_set_cursor },
    { "advance_cursor", chan_advance_cursor }, { "cursor_lock", chan_cursor_lock },
    { "wait", chan_wait }, { "watch", chan_watch }, { "claim_marker", chan_claim_marker },
    { "write_state", chan_write_state }, { "exclusive", chan_exclusive }, { "trim", chan_trim },
    { "close", chan_close }, { NULL, NULL }
};

static const luaL_Reg funcs[] = {
    { "open", l_open }, { "is_etcd", l_is_etcd }, { "copy", l_copy }, { "check_name", l_check_name },
    { "check_marker", l_check_marker },
    { "meta_compose", l_meta_compose }, { "parse_meta", l_parse_meta },
    { "wait_watches", l_wait_watches }, { NULL, NULL }
};

int luaopen_agentchat_store(lua_State *L)
{
    ac_lua_new_class(L, STORE_MT, store_methods, store_gc, store_tostring);
    ac_lua_new_class(L, CHAN_MT, chan_methods, chan_close, chan_tostring);
    ac_lua_new_class(L, DIRLOCK_MT, dirlock_methods, dirlock_release, dirlock_tostring);
    ac_lua_new_class(L, CHANWATCH_MT, chanwatch_methods, chanwatch_close, chanwatch_tostring);
    luaL_newlib(L, funcs);
    return 1;
}
