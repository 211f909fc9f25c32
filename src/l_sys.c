/*
 * l_sys.c - small system services for the Lua side: module "agentchat.sys".
 *
 *   sys.isatty(fd)                  -- true when fd (0, 1, 2) is a terminal
 *   sys.read_file(path, cap)        -- bytes | nil, message, errno
 *                                      (message as Python's OSError str:
 *                                      "[Errno 2] No such file or directory: 'x'"
 *                                      without the quoted path, which the
 *                                      caller formats)
 *   sys.read_stdin(cap)             -- bytes | nil, message, errno
 *   sys.now_iso(digits)             -- local ISO-8601 time with offset
 *   sys.monotonic()                 -- seconds (float), CLOCK_MONOTONIC
 *   sys.sleep(seconds)              -- true | nil, "interrupted", "INTERRUPTED"
 *   sys.utf8_valid(s)               -- strict UTF-8 check (Python's codec)
 *   sys.utf8_error(s [, how])       -- nil | Python's decode (how "strict") or
 *                                      surrogateescape re-encode error text
 *   sys.slugify(s)                  -- docs/format.md 3.3 slug
 *   sys.rstrip(s), sys.strip(s)     -- Python str.rstrip()/strip() (Unicode)
 *   sys.float_repr(x)               -- Python repr(float)
 *   sys.interrupted()               -- signal number that asked us to stop, or nil
 *   sys.getpid()
 *   sys.home()                      -- $HOME, else the password database
 *   sys.iso_has_offset(s)           -- ISO-8601 with an offset? (nil: not ISO)
 *   sys.iso_epoch(s)                -- seconds since 1970 (float) | nil: not ISO
 *   sys.time()                      -- wall clock, seconds since 1970 (float)
 *   sys.uuid4()                     -- 32 lower-case hex digits | nil, message, "IO_ERROR"
 *   sys.sha256(s)                   -- 64 lower-case hex digits (import keys)
 *   sys.b64encode(s) / sys.b64decode(s)  -- base64 (the resume token of
 *                                   `wait --for`); decode: nil when not base64
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/clock.h"
#include "agentchat/codec.h"
#include "agentchat/err.h"
#include "agentchat/hostfile.h"
#include "agentchat/isotime.h"
#include "agentchat/json.h"
#include "agentchat/lua_host.h"
#include "agentchat/pystr.h"
#include "agentchat/sha256.h"
#include "agentchat/slug.h"
#include "agentchat/utf8.h"

static int l_isatty(lua_State *L)
{
    lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
    return 1;
}

/* Read a stream (pipe, terminal, character device) until EOF, capped. */
static int read_stream(lua_State *L, int fd, lua_Integer cap)
{
    luaL_Buffer b;
    size_t total = 0;
    luaL_buffinit(L, &b);
    for (;;) {
        char *p = luaL_prepbuffer(&b);
        ssize_t n = read(fd, p, LUAL_BUFFERSIZE);
        if (n == -1) {
            if (errno == EINTR && !ac_clock_interrupted())
                continue;
            if (errno == EBADF && fd == 0)
                break;          /* no stdin at all reads as empty */
            return ac_lua_push_errno(L, errno);
        }
        if (n == 0)
            break;
        total += (size_t)n;
        if ((lua_Integer)total > cap)
            return ac_lua_push_errno(L, EFBIG);
        luaL_addsize(&b, (size_t)n);
    }
    luaL_pushresult(&b);
    return 1;
}

static int l_read_file(lua_State *L)
{
    const char *path = ac_lua_checkcstring(L, 1);
    lua_Integer cap = luaL_optinteger(L, 2, 16 << 20);
    struct stat st;
    char *buf;
    size_t len;
    int fd, rc, e;

    /* A body file is the user's own path: it may be anywhere, may be a
     * symlink and may be a pipe (--body-file /dev/stdin), unlike files
     * inside the root. */
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd == -1 && errno == EINTR && !ac_clock_interrupted());
    if (fd == -1)
        return ac_lua_push_errno(L, errno);
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        rc = read_stream(L, fd, cap);
        close(fd);
        return rc;
    }
    rc = ac_host_read_fd(fd, (size_t)cap, &buf, &len);
    e = errno;
    close(fd);
    if (rc == -1)
        return ac_lua_push_errno(L, e);
    lua_pushlstring(L, buf, len);
    free(buf);
    return 1;
}

static int l_read_stdin(lua_State *L)
{
    return read_stream(L, 0, luaL_optinteger(L, 1, 16 << 20));
}

static int l_now_iso(lua_State *L)
{
    char out[AC_ISO_MAX];
    ac_clock_iso_now(out, (int)luaL_optinteger(L, 1, 0));
    lua_pushstring(L, out);
    return 1;
}

static int l_monotonic(lua_State *L)
{
    lua_pushnumber(L, (lua_Number)ac_clock_mono_ns() / 1e9);
    return 1;
}

static int l_sleep(lua_State *L)
{
    lua_Number s = luaL_checknumber(L, 1);
    if (ac_clock_sleep_ns((int64_t)(s * 1e9)) == -1)
        return ac_lua_fail(L, "INTERRUPTED", 130, "cancelled by user");
    lua_pushboolean(L, 1);
    return 1;
}

static int l_utf8_valid(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_pushboolean(L, ac_utf8_valid(s, len));
    return 1;
}

/* sys.utf8_error(s [, how]): nil when s is strict UTF-8, else the text of
 * the error Python gives for it: how "strict" (default) is decoding the
 * bytes (a file read as UTF-8 text), "surrogateescape" is encoding what
 * Python read from stdin or argv (see utf8.h). */
static int l_utf8_error(lua_State *L)
{
    static const char *const hows[] = { "strict", "surrogateescape", NULL };
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    int how = luaL_checkoption(L, 2, "strict", hows);
    char buf[200];
    int bad = how == 0 ? ac_utf8_py_error(s, len, 0, NULL, buf, sizeof buf)
                       : ac_utf8_py_escape_error(s, len, buf, sizeof buf);
    if (!bad)
        return 0;
    lua_pushstring(L, buf);
    return 1;
}

/* Python str.rstrip()/str.strip() with Unicode whitespace, in C because
 * read prints every message through it. */
static int l_rstrip(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_pushlstring(L, s, ac_py_rstrip_len(s, len));
    return 1;
}

static int l_strip(lua_State *L)
{
    size_t len, a, b;
    const char *s = luaL_checklstring(L, 1, &len);
    ac_py_strip(s, len, &a, &b);
    lua_pushlstring(L, s + a, b - a);
    return 1;
}

/* sys.comma_list(s): Python's [m.strip() for m in s.split(",") if
 * m.strip()] (nil: an empty list), the comma lists of flags and of the
 * environment (order and duplicates kept). In C because the hooks read one
 * on every prompt, and pycompat is a module to load. */
static int l_comma_list(lua_State *L)
{
    size_t len, a, b, start = 0, i;
    const char *s = luaL_optlstring(L, 1, "", &len);
    lua_Integer n = 0;
    lua_newtable(L);
    for (i = 0; i <= len; i++) {
        if (i < len && s[i] != ',')
            continue;
        ac_py_strip(s + start, i - start, &a, &b);
        if (b > a) {
            lua_pushlstring(L, s + start + a, b - a);
            lua_rawseti(L, -2, ++n);
        }
        start = i + 1;
    }
    return 1;
}

/* Python's \w at p[i] as the state summary approximates it: ASCII letters,
 * digits and '_', and every non-ASCII letter or digit; Latin-1 and general
 * punctuation, symbols, arrows and emoji are not word characters (nor is
 * an invalid byte, or the end). */
static int word_at(const unsigned char *p, size_t len, size_t i)
{
    uint32_t cp;
    if (i >= len)
        return 0;
    if (p[i] < 0x80)
        return (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'A' && p[i] <= 'Z') ||
               (p[i] >= 'a' && p[i] <= 'z') || p[i] == '_';
    if (ac_utf8_decode(p + i, len - i, &cp) == 0)
        return 0;
    if (cp < 0xC0)
        return cp == 0xAA || cp == 0xB5 || cp == 0xBA || cp == 0xB2 || cp == 0xB3 || cp == 0xB9;
    if (cp == 0xD7 || cp == 0xF7 || ac_py_isspace(cp))
        return 0;
    return !((cp >= 0x2000 && cp <= 0x2BFF) || (cp >= 0x3000 && cp <= 0x303F) ||
             (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0x1F000 && cp <= 0x1FAFF));
}

/* sys.heading_has(text, words): Python's re.search(r"^#+\s*(w1|w2|...)\b",
 * text, IGNORECASE | MULTILINE) for lower-case ASCII words, as the state
 * summary finds decisions, blockers and evidence in message bodies: at the
 * start of a line one or more '#', any whitespace (Python's, newlines
 * too), one of the words in any case, then no word character (word_at).
 * In C because state looks at every message three times. */
static int l_heading_has(lua_State *L)
{
    size_t len, pos = 0;
    const char *s = luaL_checklstring(L, 1, &len);
    const unsigned char *p = (const unsigned char *)s;
    lua_Integer k, nwords;

    luaL_checktype(L, 2, LUA_TTABLE);
    nwords = (lua_Integer)lua_rawlen(L, 2);
    while (pos < len) {
        const char *nl;
        if (p[pos] == '#') {
            size_t i = pos;
            while (i < len && p[i] == '#')
                i++;
            while (i < len) {
                uint32_t cp;
                size_t n = p[i] < 0x80 ? 1 : ac_utf8_decode(p + i, len - i, &cp);
                if (p[i] < 0x80)
                    cp = p[i];
                if (n == 0 || !ac_py_isspace(cp))
                    break;
                i += n;
            }
            for (k = 1; k <= nwords; k++) {
                size_t wl, j;
                const char *w;
                lua_rawgeti(L, 2, k);
                w = luaL_checklstring(L, -1, &wl);
                for (j = 0; j < wl && i + j < len; j++) {
                    unsigned char c = p[i + j];
                    if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (unsigned char)w[j])
                        break;
                }
                lua_pop(L, 1);
                if (j == wl && i + wl <= len && !word_at(p, len, i + wl)) {
                    lua_pushboolean(L, 1);
                    return 1;
                }
            }
        }
        nl = memchr(s + pos, '\n', len - pos);
        if (!nl)
            break;
        pos = (size_t)(nl - s) + 1;
    }
    lua_pushboolean(L, 0);
    return 1;
}

static int l_slugify(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    char out[AC_SLUG_MAX + 1];
    ac_slugify(s, len, out);
    lua_pushstring(L, out);
    return 1;
}

static int l_float_repr(lua_State *L)
{
    char out[32];
    ac_py_float_repr((double)luaL_checknumber(L, 1), out);
    lua_pushstring(L, out);
    return 1;
}

static int l_interrupted(lua_State *L)
{
    int sig = ac_clock_interrupted();
    if (!sig)
        return 0;
    lua_pushinteger(L, sig);
    return 1;
}

/* Python's Path.home(): $HOME, else the password database. */
static int l_home(lua_State *L)
{
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw && pw->pw_dir ? pw->pw_dir : NULL;
    }
    if (!home)
        return ac_lua_fail(L, "NO_HOME", 1, "could not determine the home directory");
    lua_pushstring(L, home);
    return 1;
}

/* Argument 1 parsed as an ISO-8601 timestamp (ac_isotime_parse): 0 and
 * *us, *flags set, or -1 when it is not one. May raise (not a string). */
static int check_iso(lua_State *L, int64_t *us, int *flags)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    return ac_isotime_parse(s, len, us, flags);
}

/* True when s is an ISO-8601 timestamp (Python's fromisoformat) with an
 * explicit UTC offset; nil when it is not a timestamp at all. */
static int l_iso_has_offset(lua_State *L)
{
    int64_t us;
    int flags;
    if (check_iso(L, &us, &flags) == -1)
        return 0;
    lua_pushboolean(L, (flags & AC_ISOTIME_HAS_OFFSET) != 0);
    return 1;
}

/* sys.iso_epoch(s): the instant of an ISO-8601 timestamp as Python 3.11's
 * fromisoformat() reads it (a naive one is taken as UTC), in seconds since
 * 1970 with microseconds; nil when it is not one. */
static int l_iso_epoch(lua_State *L)
{
    int64_t us;
    int flags;
    if (check_iso(L, &us, &flags) == -1)
        return 0;
    lua_pushnumber(L, (lua_Number)us / 1e6);
    return 1;
}

/* sys.time(): the wall clock (CLOCK_REALTIME) in seconds since 1970, the
 * clock timestamps in files are compared with. */
static int l_time(lua_State *L)
{
    lua_pushnumber(L, (lua_Number)ac_isotime_now_us() / 1e6);
    return 1;
}

/* sys.uuid4(): a random id as Python's uuid.uuid4().hex (request ids). */
static int l_uuid4(lua_State *L)
{
    char id[33];
    if (ac_uuid4_hex(id) == -1)
        return ac_lua_fail(L, "IO_ERROR", 1, "no randomness available for a uuid4");
    lua_pushstring(L, id);
    return 1;
}

/* sys.sha256(s): the hex digest of s (stable content keys: the import
 * keys of docs/import.md). */
static int l_sha256(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    char hex[AC_SHA256_HEX + 1];
    ac_sha256_hex(s, len, hex);
    lua_pushstring(L, hex);
    return 1;
}

/* sys.b64encode(s) / sys.b64decode(s): base64 (codec.h); decode gives nil
 * for text that is not strict base64. */
static int l_b64encode(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    char *out = ac_b64_encode(s, len);
    if (!out)
        return luaL_error(L, "out of memory");
    lua_pushstring(L, out);
    free(out);
    return 1;
}

static int l_b64decode(lua_State *L)
{
    size_t len, outlen;
    const char *s = luaL_checklstring(L, 1, &len);
    char *out = ac_b64_decode(s, len, &outlen);
    if (!out) {
        if (errno == ENOMEM)
            return luaL_error(L, "out of memory");
        lua_pushnil(L);
        return 1;
    }
    lua_pushlstring(L, out, outlen);
    free(out);
    return 1;
}

/* sys.exit_code(code): the CLI exit code of an error code (err.h's one
 * table, ac_err_exit_for). */
static int l_exit_code(lua_State *L)
{
    lua_pushinteger(L, ac_err_exit_for(luaL_checkstring(L, 1)));
    return 1;
}

static int l_getpid(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)getpid());
    return 1;
}

static const luaL_Reg funcs[] = {
    { "isatty", l_isatty }, { "read_file", l_read_file }, { "read_stdin", l_read_stdin },
    { "now_iso", l_now_iso }, { "monotonic", l_monotonic }, { "sleep", l_sleep },
    { "utf8_valid", l_utf8_valid }, { "utf8_error", l_utf8_error }, { "slugify", l_slugify },
    { "rstrip", l_rstrip }, { "strip", l_strip }, { "comma_list", l_comma_list },
    { "heading_has", l_heading_has },
    { "float_repr", l_float_repr },
    { "interrupted", l_interrupted }, { "getpid", l_getpid }, { "iso_has_offset", l_iso_has_offset },
    { "iso_epoch", l_iso_epoch }, { "time", l_time }, { "uuid4", l_uuid4 },
    { "sha256", l_sha256 }, { "b64encode", l_b64encode }, { "b64decode", l_b64decode }, { "home", l_home }, { "exit_code", l_exit_code }, { NULL, NULL }
};

int luaopen_agentchat_sys(lua_State *L)
{
    luaL_newlib(L, funcs);
    return 1;
}
