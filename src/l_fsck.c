/*
 * l_fsck.c - Lua binding of the channel checker: module "agentchat.fsck".
 *
 *   local fsck = require "agentchat.fsck"
 *   fsck.channel(h [, {repair = false}])   -- list of findings
 *   fsck.hidden(root)                      -- names of the directories of
 *                                             the root whose _meta.json is
 *                                             not a regular file, sorted
 *   fsck.directory(root, name [, {repair = false}])
 *                                          -- findings of such a directory
 *   fsck.CLASSES                           -- { FSCK_BAD_MESSAGE = "corrupt", ... }
 *
 * A channel whose _meta.json is a symbolic link or a FIFO cannot be opened
 * (every command says it does not exist, while init says it exists), so the
 * store does not list it; fsck finds it with fsck.hidden and checks its
 * directory with fsck.directory, which reports the _meta.json as
 * FSCK_BAD_ENTRY.
 *
 * `h` is the "agentchat.channel" handle (Channel:handle()). A finding is
 * {code, class ("corrupt"|"pending"|"repairable"|"busy"), path (relative
 * to the channel), message (one line, starting with the path), repaired
 * (nil, or what --repair did)}. The check itself fails only when it cannot
 * run: nil, message, code (IO_ERROR, FSCK_UNSUPPORTED), exit 1.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/channel.h"
#include "agentchat/fsck.h"
#include "agentchat/fsutil.h"
#include "agentchat/lua_host.h"
#include "agentchat/store.h"

static void set_str(lua_State *L, const char *key, const char *value)
{
    if (value) {
        lua_pushstring(L, value);
        lua_setfield(L, -2, key);
    }
}

/* The flags of an options table at idx (raises for a bad one). */
static int check_flags(lua_State *L, int idx)
{
    int flags = 0;
    if (!lua_isnoneornil(L, idx)) {
        luaL_checktype(L, idx, LUA_TTABLE);
        lua_getfield(L, idx, "repair");
        if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
            return luaL_error(L, "field 'repair' must be a boolean");
        if (lua_toboolean(L, -1))
            flags |= AC_FSCK_REPAIR;
        lua_pop(L, 1);
    }
    return flags;
}

/* Check the channel directory chfd; push its findings or the failure. */
static int check_dir(lua_State *L, int chfd, const char *name, int flags)
{
    struct ac_fsck_report r = { NULL, 0, 0 };
    struct ac_err err = AC_ERR_INIT;
    size_t i;
    int rc = ac_fsck_channel(chfd, name, flags, &r, &err);

    if (rc == -1) {
        ac_fsck_report_free(&r);
        return ac_lua_fail(L, err.code ? err.code : "IO_ERROR", 1, err.msg);
    }
    /* No raise below until the report is freed: only table pushes, which
     * fail only when memory is exhausted. */
    lua_createtable(L, (int)r.n, 0);
    for (i = 0; i < r.n; i++) {
        lua_createtable(L, 0, 5);
        set_str(L, "code", r.v[i].code);
        set_str(L, "class", ac_fsck_class_name(r.v[i].klass));
        set_str(L, "path", r.v[i].path);
        set_str(L, "message", r.v[i].message);
        set_str(L, "repaired", r.v[i].repaired);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    ac_fsck_report_free(&r);
    return 1;
}

/* fsck.channel(h [, {repair=}]) -> findings */
static int l_channel(lua_State *L)
{
    struct ac_chan *ch = ac_lua_checkchan(L, 1);
    int flags = check_flags(L, 2);
    int chfd = ac_chan_dirfd(ch);
    if (chfd == -1)
        return ac_lua_fail(L, "FSCK_UNSUPPORTED", 1, "fsck needs a file-system channel");
    return check_dir(L, chfd, ch->name, flags);
}

/* 1 when dirfd/name is a directory whose _meta.json exists but is not a
 * regular file (name a valid channel name). */
static int is_hidden(int rootfd, const char *name)
{
    struct ac_err ignored = AC_ERR_INIT;
    struct stat st;
    int fd, hidden;
    if (ac_channel_name_check(name, &ignored) == -1 || (fd = ac_open_dir_at(rootfd, name)) == -1)
        return 0;
    hidden = fstatat(fd, AC_META_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode);
    close(fd);
    return hidden;
}

struct hidden {
    lua_State *L;
    int rootfd;
    lua_Integer n;
};

static int hidden_cb(void *ctx, const char *name, unsigned char type)
{
    struct hidden *h = ctx;
    if (type == DT_DIR && is_hidden(h->rootfd, name)) {
        lua_pushstring(h->L, name);
        lua_rawseti(h->L, -2, ++h->n);
    }
    return 0;
}

/* fsck.hidden(root) -> {names} (none when the root does not exist) */
static int l_hidden(lua_State *L)
{
    const char *root = ac_lua_checkcstring(L, 1);
    struct hidden h = { L, -1, 0 };
    lua_newtable(L);
    h.rootfd = ac_open_dir_path(root);
    if (h.rootfd == -1)
        return 1;
    ac_dir_walk(h.rootfd, hidden_cb, &h);
    close(h.rootfd);
    lua_getglobal(L, "table");
    lua_getfield(L, -1, "sort");
    lua_pushvalue(L, -3);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
    return 1;
}

/* fsck.directory(root, name [, {repair=}]) -> findings, for a directory
 * fsck.hidden named; nil, message, code for any other name. */
static int l_directory(lua_State *L)
{
    const char *root = ac_lua_checkcstring(L, 1);
    const char *name = ac_lua_checkcstring(L, 2);
    int flags = check_flags(L, 3), rootfd = ac_open_dir_path(root), fd = -1, n;

    if (rootfd != -1 && is_hidden(rootfd, name))
        fd = ac_open_dir_at(rootfd, name);
    if (rootfd != -1)
        close(rootfd);
    if (fd == -1)
        return ac_lua_fail(L, "IO_ERROR", 1, "not a channel directory with a bad _meta.json");
    n = check_dir(L, fd, name, flags);
    close(fd);
    return n;
}

static const luaL_Reg funcs[] = {
    { "channel", l_channel },
    { "hidden", l_hidden },
    { "directory", l_directory },
    { NULL, NULL }
};

int luaopen_agentchat_fsck(lua_State *L)
{
    size_t i;
    const char *code;
    int klass;
    luaL_newlib(L, funcs);
    lua_newtable(L);
    for (i = 0; (code = ac_fsck_code(i, &klass)) != NULL; i++) {
        lua_pushstring(L, ac_fsck_class_name(klass));
        lua_setfield(L, -2, code);
    }
    lua_setfield(L, -2, "CLASSES");
    return 1;
}
