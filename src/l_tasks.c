/*
 * l_tasks.c - Lua binding of the task board: module "agentchat._tasks"
 * (private: the Channel task methods are the API).
 *
 * Every function takes an open channel userdata (store:channel()) and runs
 * one board operation under the channel's _tasks.lock (board.h, lease.h):
 *
 *   tasks.list(ch)                          -- { record, ... } sorted by id
 *   tasks.show(ch, id)                      -- record, blocking
 *       (blocking: "" when every dependency is done, else "a=open, b=blocked")
 *   tasks.create(ch, {id=, created_by=, title=, owner=, depends_on={},
 *                     files_hint={}, acceptance={}, branch=})   -- record
 *   tasks.update(ch, id, actor, {title=, owner=, clear_owner=, depends_on=,
 *                files_hint=, acceptance=, branch=, clear_branch=, status=})
 *   tasks.lease(ch, op, id, actor, seconds, reason, generation)   -- record
 *       (op: "claim", "renew", "release", "done", "block", "recover";
 *       generation: nil, or the lease generation renew, release and done
 *       must find: LEASE_FENCED otherwise)
 *   tasks.recover_pending(ch, actor, resolve)         -- true
 *   tasks.snapshot(ch, strict)   -- { record, ... }, skipped   (for `state`)
 *       (records keep their null fields as json.null; without `strict`,
 *       unreadable or invalid records are left out and counted)
 *
 * A record is a table with the twelve fields; JSON null fields are absent
 * (nil). show and the lease operations add `generation`, the fencing
 * generation of the task's lease (lease.h), when the store keeps one (etcd). Expected failures return nil, message, code, exit (docs/format.md 2.4:
 * TASK_* and LEASE_* exit 2); wrong argument types raise.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/board.h"
#include "agentchat/lease.h"
#include "agentchat/lua_host.h"
#include "agentchat/taskrec.h"
#include "agentchat/tasks.h"

/* Every TASK_* and LEASE_* failure exits 2 (docs/format.md 2.5, err.h's table),
 * TASK_IO_ERROR included; other codes (INTERRUPTED) keep theirs. */
static int fail(lua_State *L, const struct ac_err *err)
{
    const char *code = err->code ? err->code : "TASK_IO_ERROR";
    int exit_code = ac_err_exit_for(code);
    if (exit_code == AC_EXIT_GENERAL && err->exit_code)
        exit_code = err->exit_code;
    return ac_lua_fail(L, code, exit_code, err->msg);
}

/* A record as a Lua table: null fields left out. */
static void push_record(lua_State *L, const json_t *rec)
{
    size_t i;
    lua_createtable(L, 0, AC_TASK_NFIELDS);
    for (i = 0; i < AC_TASK_NFIELDS; i++) {
        json_t *v = json_object_get(rec, ac_task_fields[i]);
        if (!v || json_is_null(v))
            continue;
        ac_lua_push_json(L, v);
        lua_setfield(L, -2, ac_task_fields[i]);
    }
}

/* Optional list of strings as a JSON array (new reference, or NULL). */
static json_t *opt_list(lua_State *L, int idx, const char *key, int *bad_text)
{
    json_t *arr;
    lua_Integer i, n;
    lua_getfield(L, idx, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return NULL;
    }
    luaL_checktype(L, -1, LUA_TTABLE);
    arr = json_array();
    n = luaL_len(L, -1);
    for (i = 1; i <= n; i++) {
        size_t len;
        const char *s;
        json_t *item;
        lua_geti(L, -1, i);
        if (lua_type(L, -1) != LUA_TSTRING) {
            json_decref(arr);
            luaL_error(L, "field '%s' must be a list of strings", key);
        }
        s = lua_tolstring(L, -1, &len);
        item = json_stringn(s, len);
        if (!item)
            *bad_text = 1;
        else
            json_array_append_new(arr, item);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return arr;
}

static int bad_utf8(lua_State *L)
{
    return ac_lua_fail(L, "TASK_INVALID_RECORD", 2, "task fields must be valid UTF-8 text");
}

static int open_board(lua_State *L, int mode, struct ac_board *b)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    struct ac_err err = AC_ERR_INIT;
    if (ac_board_open(ch, mode, b, &err) == -1)
        return fail(L, &err);
    return 0;
}

/* Push the board's records, in id order, as a list: as task tables
 * (push_record) or with their JSON nulls kept (the `state` snapshot). */
static void push_records(lua_State *L, struct ac_board *b, int raw)
{
    size_t i;
    json_t *id;
    lua_createtable(L, (int)json_array_size(b->ids), 0);
    json_array_foreach(b->ids, i, id) {
        json_t *rec = json_object_get(b->tasks, json_string_value(id));
        if (raw)
            ac_lua_push_json(L, rec);
        else
            push_record(L, rec);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static int l_list(lua_State *L)
{
    struct ac_board b;
    int n = open_board(L, AC_BOARD_READ, &b);
    if (n)
        return n;
    push_records(L, &b, 0);
    ac_board_keep(&b);
    ac_board_close(&b);
    return 1;
}

static int l_snapshot(lua_State *L)
{
    struct ac_board b;
    int n = open_board(L, lua_toboolean(L, 2) ? AC_BOARD_READ : AC_BOARD_READ | AC_BOARD_LENIENT, &b);
    if (n)
        return n;
    push_records(L, &b, 1);
    lua_pushinteger(L, (lua_Integer)b.skipped);
    ac_board_keep(&b);
    ac_board_close(&b);
    return 2;
}

/* record.generation: the lease's fencing generation, when the store keeps
 * one. Best effort: a claim that cannot be read is the lease commands' to
 * report, never show's. */
static void push_generation(lua_State *L, struct ac_chan *ch, const char *id)
{
    uint64_t gen = 0;
    if (id && ac_lease_generation(ch, id, &gen, NULL) == 0 && gen > 0) {
        lua_pushinteger(L, (lua_Integer)gen);
        lua_setfield(L, -2, "generation");
    }
}

static int l_show(lua_State *L)
{
    struct ac_board b;
    struct ac_err err = AC_ERR_INIT;
    const char *id = ac_lua_checkcstring(L, 2);
    json_t *rec;
    char *blocking;
    int n;
    if (!ac_task_id_findable(id)) {
        ac_task_unsafe_id(id, &err);
        return fail(L, &err);
    }
    n = open_board(L, AC_BOARD_READ, &b);
    if (n)
        return n;
    rec = ac_board_get(&b, id, &err);
    if (!rec) {
        ac_board_close(&b);
        return fail(L, &err);
    }
    blocking = ac_board_blocking(&b, rec, 1);
    push_record(L, rec);
    push_generation(L, b.ch, id);
    lua_pushstring(L, blocking ? blocking : "");
    free(blocking);
    ac_board_keep(&b);
    ac_board_close(&b);
    return 2;
}

/* The three list fields of create and update (NULL when absent); returns
 * whether one held text that is not UTF-8. */
static int read_lists(lua_State *L, int idx, json_t *lists[3])
{
    static const char *const names[3] = { "depends_on", "files_hint", "acceptance" };
    int bad = 0, i;
    for (i = 0; i < 3; i++)
        lists[i] = opt_list(L, idx, names[i], &bad);
    return bad;
}

static void free_lists(json_t *lists[3])
{
    int i;
    for (i = 0; lists && i < 3; i++)
        json_decref(lists[i]);
}

/* The end of every mutating call: the new record, or the failure; the
 * lists of read_lists (or NULL) are released. */
static int finish(lua_State *L, int rc, json_t *out, const struct ac_err *err, json_t *lists[3])
{
    int n = 1;
    if (rc == -1) {
        n = fail(L, err);
    } else {
        push_record(L, out);
        json_decref(out);
    }
    free_lists(lists);
    return n;
}

/* The optional string fields keys[i] of the table at idx into *fields[i]. */
static void opt_strings(lua_State *L, int idx, const char *const *keys, const char **fields[])
{
    size_t i;
    for (i = 0; keys[i]; i++)
        *fields[i] = ac_lua_opt_string(L, idx, keys[i], NULL);
}

static int l_create(lua_State *L)
{
    struct ac_task_spec spec;
    struct ac_err err = AC_ERR_INIT;
    json_t *out = NULL, *lists[3];
    int i, rc;

    static const char *const keys[] = { "id", "created_by", "title", "owner", "branch", NULL };
    const char **fields[] = { &spec.id, &spec.created_by, &spec.title, &spec.owner, &spec.branch };

    ac_lua_checkchan(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    memset(&spec, 0, sizeof spec);
    opt_strings(L, 2, keys, fields);
    if (!spec.id || !spec.created_by || !spec.title)
        return luaL_error(L, "tasks.create needs id, created_by and title");
    if (read_lists(L, 2, lists)) {
        free_lists(lists);
        return bad_utf8(L);
    }
    for (i = 0; i < 3; i++)
        if (!lists[i])
            lists[i] = json_array();
    spec.depends_on = lists[0];
    spec.files_hint = lists[1];
    spec.acceptance = lists[2];
    rc = ac_tasks_create(ac_lua_checkchan(L, 1), &spec, &out, &err);
    return finish(L, rc, out, &err, lists);
}

static int l_update(lua_State *L)
{
    struct ac_task_change chg;
    struct ac_err err = AC_ERR_INIT;
    const char *id = ac_lua_checkcstring(L, 2), *actor = ac_lua_checkcstring(L, 3);
    json_t *out = NULL, *lists[3];
    int rc;

    static const char *const keys[] = { "title", "owner", "branch", "status", NULL };
    const char **fields[] = { &chg.title, &chg.owner, &chg.branch, &chg.status };

    ac_lua_checkchan(L, 1);
    luaL_checktype(L, 4, LUA_TTABLE);
    memset(&chg, 0, sizeof chg);
    opt_strings(L, 4, keys, fields);
    lua_getfield(L, 4, "clear_owner");
    chg.clear_owner = lua_toboolean(L, -1);
    lua_getfield(L, 4, "clear_branch");
    chg.clear_branch = lua_toboolean(L, -1);
    lua_pop(L, 2);
    if (read_lists(L, 4, lists)) {
        free_lists(lists);
        return bad_utf8(L);
    }
    chg.depends_on = lists[0];
    chg.files_hint = lists[1];
    chg.acceptance = lists[2];
    rc = ac_tasks_update(ac_lua_checkchan(L, 1), id, actor, &chg, &out, &err);
    return finish(L, rc, out, &err, lists);
}

static int l_lease(lua_State *L)
{
    static const char *const ops[] = { "claim", "renew", "release", "done", "block", "recover", NULL };
    static const enum ac_lease_op codes[] = { AC_LEASE_CLAIM, AC_LEASE_RENEW, AC_LEASE_RELEASE,
                                              AC_LEASE_DONE, AC_LEASE_BLOCK, AC_LEASE_RECOVER };
    int op = luaL_checkoption(L, 2, NULL, ops);
    const char *id = ac_lua_checkcstring(L, 3), *actor = ac_lua_checkcstring(L, 4);
    double seconds = (double)luaL_optnumber(L, 5, 300.0);
    const char *reason = ac_lua_optcstring(L, 6, NULL);
    lua_Integer fence = luaL_optinteger(L, 7, 0);
    struct ac_err err = AC_ERR_INIT;
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    json_t *out = NULL;
    int rc, n;
    if (fence < 0)
        return luaL_argerror(L, 7, "a lease generation is a positive integer");
    rc = ac_tasks_lease(ch, codes[op], id, actor, seconds, reason, (uint64_t)fence, &out, &err);
    n = finish(L, rc, out, &err, NULL);
    if (rc == 0)
        push_generation(L, ch, id);
    return n;
}

static int l_recover_pending(lua_State *L)
{
    const char *actor = ac_lua_checkcstring(L, 2), *resolve = ac_lua_optcstring(L, 3, NULL);
    struct ac_err err = AC_ERR_INIT;
    if (ac_tasks_recover_pending(ac_lua_checkchan(L, 1), actor, resolve, &err) == -1)
        return fail(L, &err);
    lua_pushboolean(L, 1);
    return 1;
}

static const luaL_Reg funcs[] = {
    { "list", l_list }, { "snapshot", l_snapshot }, { "show", l_show }, { "create", l_create },
    { "update", l_update }, { "lease", l_lease }, { "recover_pending", l_recover_pending },
    { NULL, NULL }
};

int luaopen_agentchat_tasks(lua_State *L)
{
    luaL_newlib(L, funcs);
    return 1;
}
