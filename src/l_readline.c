/*
 * l_readline.c - line input for the REPL: module "agentchat.readline".
 *
 *   rl.available                    -- true when built with GNU readline
 *   rl.readline(prompt [, plain])   -- line (without "\n") | nil at end of
 *                                      input (or SIGTERM) | false when
 *                                      Ctrl-C cancelled the line
 *   rl.add_history(line)            -- remember a line (Up-arrow recalls it)
 *   rl.read_history(path)           -- true | nil, message, code
 *   rl.append_history(path)         -- append the newest entry to the file,
 *                                      creating it and its directories (0700)
 *   rl.truncate_history(path, n)    -- keep the last n lines of the file
 *   rl.set_completer(fn | nil)      -- Tab calls fn(text, line, start):
 *                                      text is the word before the cursor,
 *                                      line the input up to the cursor,
 *                                      start the 0-based offset of text; fn
 *                                      returns a list of full replacements
 *                                      for text and optionally the string
 *                                      appended after a unique match
 *                                      (default "")
 *   rl.clear_interrupt()            -- forget a pending Ctrl-C (the flag
 *                                      and the Lua stop hook): true if one
 *                                      was pending (SIGTERM stays pending)
 *
 * With `plain` (or without readline in the build) the prompt, if any, is
 * written to stdout and one line is read from stdin with stdio: no escape
 * codes, which is what the REPL does when stdin is not a terminal.
 *
 * Ctrl-C must cancel the line, not the program. readline's own signal
 * handlers are off (rl_catch_signals = 0): SIGINT keeps going to the
 * process handler of clock.c, which sets a flag and arms the Lua stop hook.
 * So that no signal is lost between checking the flag and sleeping, the
 * line is read with readline's callback interface: SIGINT and SIGTERM are
 * blocked except inside pselect(), which atomically unblocks them while it
 * waits for input (the classic pselect idiom). When pselect() returns EINTR
 * with the flag set, the partial line is thrown away and the flag and the
 * hook are cleared before returning to Lua (otherwise the hook would stop
 * the REPL's own code at its next call).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/clock.h"
#include "agentchat/hostfile.h"
#include "agentchat/lua_host.h"

#ifdef AC_HAVE_READLINE
#include <readline/history.h>
#include <readline/readline.h>
#endif

/* Longest line accepted from a pipe: a cap on user-controlled input. */
#define AC_REPL_MAX_LINE (16u << 20)

/* Disarm the stop hook that lua_host.c set on the main thread when the
 * signal arrived (input was waiting, not Lua code: nothing to stop). */
static void disarm_hook(lua_State *L)
{
    lua_State *main;
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    main = lua_tothread(L, -1);
    lua_pop(L, 1);
    lua_sethook(main, NULL, 0, 0);
    if (main != L)
        lua_sethook(L, NULL, 0, 0);
}

/* Forget a pending Ctrl-C: the flag of clock.c and the stop hook. Returns
 * 1 if one was pending. A SIGTERM stays pending (flag only): the REPL
 * ends on it and main.c re-raises it. */
static int clear_interrupt(lua_State *L)
{
    int sig = ac_clock_interrupted();
    if (sig == 0)
        return 0;
    disarm_hook(L);
    if (sig != SIGINT)
        return 0;
    ac_clock_clear_interrupt();
    return 1;
}

static int l_clear_interrupt(lua_State *L)
{
    lua_pushboolean(L, clear_interrupt(L));
    return 1;
}

/* Plain mode: prompt to stdout, one line from stdin. Returns like
 * rl.readline. A SIGINT while blocked in read cancels the line (partial
 * input is dropped); any other EINTR retries. */
static int plain_readline(lua_State *L, const char *prompt)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;

    if (prompt) {
        fputs(prompt, stdout);
    }
    fflush(stdout);
    for (;;) {
        errno = 0;
        n = getline(&line, &cap, stdin);
        if (n != -1)
            break;
        if (errno == EINTR) {
            clearerr(stdin);
            if (ac_clock_interrupted() == SIGINT) {
                free(line);
                clear_interrupt(L);
                lua_pushboolean(L, 0);
                return 1;
            }
            if (!ac_clock_interrupted())
                continue;
        }
        /* End of input, a read error or SIGTERM: the REPL ends. */
        free(line);
        clear_interrupt(L);
        lua_pushnil(L);
        return 1;
    }
    if ((size_t)n > AC_REPL_MAX_LINE) {
        free(line);
        return luaL_error(L, "input line longer than %d bytes", (int)AC_REPL_MAX_LINE);
    }
    if (n > 0 && line[n - 1] == '\n')
        n--;
    lua_pushlstring(L, line, (size_t)n);    /* may raise: leaks `line` then */
    free(line);
    return 1;
}

#ifdef AC_HAVE_READLINE

/* State of one rl.readline call (readline itself is not reentrant). */
static lua_State *active_L;     /* set while readline runs: completion */
static int completer_ref = LUA_NOREF;
static char *line_result;
static int line_done;

static void on_line(char *line)
{
    line_result = line;
    line_done = 1;
    /* Removing the handler here stops readline from printing the next
     * prompt at once (Python's readline.c does the same). */
    rl_callback_handler_remove();
}

/* Protected part of a completion: call the Lua completer and leave its
 * list (or nil) and append string on the stack. Arguments: the completer,
 * text, line, start (pushed by attempt()). */
static int complete_p(lua_State *L)
{
    const char *text = (const char *)lua_touserdata(L, 1);
    int start = (int)lua_tointeger(L, 2);
    int end = (int)lua_tointeger(L, 3);
    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, completer_ref);
    lua_pushstring(L, text);
    lua_pushlstring(L, rl_line_buffer, (size_t)end);
    lua_pushinteger(L, start);
    lua_call(L, 3, 2);
    if (!lua_istable(L, 1)) {
        lua_settop(L, 0);
        lua_pushnil(L);
        lua_pushnil(L);
    }
    return 2;
}

/* The completion list lives on the Lua stack at gen_idx while readline
 * pulls matches from generate() (called synchronously by
 * rl_completion_matches). Only string entries count; lua_tolstring on a
 * string does not allocate, so nothing here can raise. */
static int gen_idx;
static lua_Integer gen_next;

static char *generate(const char *text, int state)
{
    (void)text;
    if (state == 0)
        gen_next = 1;
    for (;;) {
        const char *s;
        int t = lua_rawgeti(active_L, gen_idx, gen_next++);
        if (t == LUA_TNIL) {
            lua_pop(active_L, 1);
            return NULL;
        }
        s = t == LUA_TSTRING ? lua_tostring(active_L, -1) : NULL;
        lua_pop(active_L, 1);
        if (s)
            return strdup(s);
    }
}

static char **attempt(const char *text, int start, int end)
{
    lua_State *L = active_L;
    char **matches = NULL;
    int top;

    rl_attempted_completion_over = 1;   /* never fall back to file names */
    rl_completion_append_character = '\0';
    if (!L || completer_ref == LUA_NOREF || !lua_checkstack(L, 8))
        return NULL;
    top = lua_gettop(L);
    lua_pushcfunction(L, complete_p);
    lua_pushlightuserdata(L, (void *)text);
    lua_pushinteger(L, start);
    lua_pushinteger(L, end);
    if (lua_pcall(L, 3, 2, 0) == LUA_OK && lua_istable(L, -2)) {
        if (lua_type(L, -1) == LUA_TSTRING)
            rl_completion_append_character = lua_tostring(L, -1)[0];
        gen_idx = lua_gettop(L) - 1;
        matches = rl_completion_matches(text, generate);
    }
    lua_settop(L, top);
    return matches;
}

/* Throw away the line being edited after Ctrl-C (or SIGTERM) and put the
 * terminal back (Python's readline.c, readline_until_enter_or_signal). */
static void cancel_line(void)
{
    rl_free_line_state();
    rl_callback_sigcleanup();
    rl_cleanup_after_signal();
    rl_callback_handler_remove();
}

static int editing_readline(lua_State *L, const char *prompt)
{
    sigset_t block, old;
    int fd = fileno(rl_instream ? rl_instream : stdin);
    int interrupted = 0, failed = 0;

    fflush(stdout);
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old);
    line_result = NULL;
    line_done = 0;
    active_L = L;
    rl_callback_handler_install(prompt, on_line);
    while (!line_done) {
        fd_set fds;
        int n;
        if (ac_clock_interrupted()) {
            interrupted = ac_clock_interrupted();
            break;
        }
        FD_ZERO(&fds);
        FD_SET(fd, &fds);
        n = pselect(fd + 1, &fds, NULL, NULL, NULL, &old);
        if (n == -1) {
            if (errno == EINTR) {
                if (!ac_clock_interrupted())
                    rl_resize_terminal();   /* most likely SIGWINCH */
                continue;
            }
            failed = 1;
            break;
        }
        if (n > 0)
            rl_callback_read_char();
    }
    if (interrupted == SIGINT) {
        /* Show where the line was cut, like a shell: "^C" after the text. */
        FILE *out = rl_outstream ? rl_outstream : stdout;
        rl_point = rl_end;
        rl_redisplay();
        fputs("^C\n", out);
        fflush(out);
    }
    if (interrupted || failed)
        cancel_line();
    active_L = NULL;
    sigprocmask(SIG_SETMASK, &old, NULL);

    if (interrupted == SIGINT) {
        clear_interrupt(L);
        lua_pushboolean(L, 0);
        return 1;
    }
    if (interrupted || failed || line_result == NULL) {
        /* SIGTERM (its flag stays set for main.c) or end of input. */
        clear_interrupt(L);
        lua_pushnil(L);
        return 1;
    }
    lua_pushstring(L, line_result);  /* may raise: leaks one line then */
    free(line_result);
    line_result = NULL;
    return 1;
}

/* One-time set-up: our signal handling, Lua-friendly word breaks. */
static void setup(void)
{
    static char breaks[] = " \t\n\"'`@$><=;|&{(,.:[]+-*/%^#~}";
    rl_readline_name = "agent-chat";
    rl_catch_signals = 0;
    rl_catch_sigwinch = 1;
    rl_attempted_completion_function = attempt;
    rl_basic_word_break_characters = breaks;
    rl_completer_word_break_characters = breaks;
    using_history();
}

static int l_readline(lua_State *L)
{
    const char *prompt = luaL_optstring(L, 1, NULL);
    if (lua_toboolean(L, 2))
        return plain_readline(L, prompt);
    return editing_readline(L, prompt ? prompt : "");
}

static int l_add_history(lua_State *L)
{
    add_history(luaL_checkstring(L, 1));
    return 0;
}

static int history_fail(lua_State *L, int e, const char *what, const char *path)
{
    char msg[512];
    snprintf(msg, sizeof msg, "could not %s history file %s: %s", what, path, strerror(e));
    return ac_lua_fail(L, "IO_ERROR", 1, msg);
}

static int l_read_history(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int e = read_history(path);
    if (e != 0 && e != ENOENT)
        return history_fail(L, e, "read", path);
    lua_pushboolean(L, 1);
    return 1;
}

/* The parent directory of the history file is created on first write
 * (private: it is the user's typing). */
static int ensure_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    size_t n;
    if (!slash || slash == path)
        return 0;
    n = (size_t)(slash - path);
    if (n >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(dir, path, n);
    dir[n] = '\0';
    return ac_host_mkdirs(dir, 0700);
}

static int l_append_history(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int e;
    if (ensure_parent(path) == -1)
        return history_fail(L, errno, "create the directory of", path);
    if (access(path, F_OK) == -1)
        e = write_history(path);    /* creates the file with one entry... */
    else
        e = append_history(1, path);
    /* ...write_history writes the whole list, which after read_history of
     * a missing file is exactly the new entry. */
    if (e != 0)
        return history_fail(L, e, "write", path);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_truncate_history(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int n = (int)luaL_checkinteger(L, 2);
    int e = history_truncate_file(path, n);
    if (e != 0 && e != ENOENT)
        return history_fail(L, e, "truncate", path);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_set_completer(lua_State *L)
{
    if (!lua_isnoneornil(L, 1))
        luaL_checktype(L, 1, LUA_TFUNCTION);
    luaL_unref(L, LUA_REGISTRYINDEX, completer_ref);
    completer_ref = LUA_NOREF;
    if (!lua_isnoneornil(L, 1)) {
        lua_settop(L, 1);
        completer_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    return 0;
}

#else /* !AC_HAVE_READLINE: plain input only; history and completion off */

static void setup(void)
{
}

static int l_readline(lua_State *L)
{
    return plain_readline(L, luaL_optstring(L, 1, NULL));
}

static int unsupported(lua_State *L)
{
    return ac_lua_fail(L, "ENOTSUP", 1, "built without readline");
}

#define l_add_history unsupported
#define l_read_history unsupported
#define l_append_history unsupported
#define l_truncate_history unsupported

static int l_set_completer(lua_State *L)
{
    (void)L;
    return 0;
}

#endif

static const luaL_Reg funcs[] = {
    { "readline", l_readline }, { "add_history", l_add_history },
    { "read_history", l_read_history }, { "append_history", l_append_history },
    { "truncate_history", l_truncate_history }, { "set_completer", l_set_completer },
    { "clear_interrupt", l_clear_interrupt }, { NULL, NULL }
};

int luaopen_agentchat_readline(lua_State *L)
{
    static int done;
    if (!done) {
        setup();
        done = 1;
    }
    luaL_newlib(L, funcs);
#ifdef AC_HAVE_READLINE
    lua_pushboolean(L, 1);
#else
    lua_pushboolean(L, 0);
#endif
    lua_setfield(L, -2, "available");
    return 1;
}
