/*
 * l_sandbox.c - the C side of the template sandbox (lua/agentchat/sandbox.lua):
 * module "agentchat.sandboxlib".
 *
 *   lib.find(s, p [, init [, plain]])    -- string.find, metered
 *   lib.match(s, p [, init])             -- string.match, metered
 *   lib.gmatch(s, p [, init])            -- string.gmatch, metered
 *   lib.gsub(s, p, repl [, n])           -- string.gsub, metered
 *   lib.rep(s, n [, sep])                -- string.rep, metered
 *   lib.set_meter(fn | nil [, quantum])  -- call fn(steps) after every
 *                                           `quantum` steps of work (1000)
 *   lib.heap_limit(bytes | nil)          -- cap the state's heap at its
 *                                           current size plus `bytes`
 *   lib.heap_refused()                   -- true once the cap refused an
 *                                           allocation (since heap_limit)
 *
 * Why. A template runs under a count hook that charges VM instructions, but
 * a library function runs in C, unseen by the hook: Lua's pattern matcher
 * backtracks, so string.find(("a"):rep(1e5), ("a*"):rep(30) .. "b") ran for
 * 985 s and could not be interrupted. These four functions behave exactly
 * like Lua 5.4's (same results, same errors: the matcher below is our own
 * implementation of the documented pattern language), but count their work
 * in steps priced like VM instructions (STEP_MATCH per call of the matcher,
 * one per subject byte a loop examines, one per 8 bytes copied or
 * compared) and call the meter function every
 * `quantum` steps, and once with the rest when they return. The meter is
 * the sandbox's charge: it raises when the budget, the time limit or a
 * SIGINT ends the template, which unwinds the C call like any Lua error
 * (the matcher holds no resources; gsub's buffer is on the Lua stack).
 *
 * The heap cap: the instruction hook checks the heap between instructions,
 * so one allocation could overshoot it by gigabytes (one 190-operand
 * concatenation of 16 MiB strings peaked at 3.13 GB). heap_limit installs an
 * allocator that refuses any growth past the cap; Lua then collects garbage
 * and, if that is not enough, raises "not enough memory" before a byte is
 * copied. heap_limit(nil) restores the previous allocator.
 *
 * Errors: the string library's messages ("malformed pattern (ends with
 * '%')", "pattern too complex", "invalid capture index %2 in replacement
 * string", "bad argument #1 to 'find' (string expected, got nil)", ...).
 */
#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "agentchat/lua_host.h"

#define MAX_CAPTURES 32         /* LUA_MAXCAPTURES */
#define MAX_DEPTH 200           /* MAXCCALLS: "pattern too complex" */
#define CAP_UNFINISHED (-1)
#define CAP_POSITION (-2)
#define ESC '%'
#define SPECIALS "^$*+?.([%-"
#define DEFAULT_QUANTUM 1000
/* Step prices, in VM instructions (about 4 ns each): one call of the
 * matcher costs about 20 ns, testing one subject byte against a class
 * (the loops of *, +, %b) about 2 ns, copying or comparing 8 bytes one. */
#define STEP_MATCH 5
#define BYTES(n) (((lua_Integer)(n) + 7) / 8)

static const char meter_key = 'm';     /* registry: the meter function */

/* ---- metering ---- */

struct meter {
    lua_State *L;
    lua_Integer steps;         /* not yet reported */
    lua_Integer quantum;
};

static void meter_init(lua_State *L, struct meter *m)
{
    m->L = L;
    m->steps = 0;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &meter_key);
    m->quantum = lua_istable(L, -1) ? 0 : DEFAULT_QUANTUM;
    if (lua_istable(L, -1)) {
        lua_rawgeti(L, -1, 2);
        m->quantum = lua_tointeger(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* Report the steps counted so far to the meter function (which may raise). */
static void meter_flush(struct meter *m)
{
    lua_State *L = m->L;
    if (m->steps == 0)
        return;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &meter_key);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        m->steps = 0;
        return;
    }
    lua_rawgeti(L, -1, 1);
    lua_remove(L, -2);
    lua_pushinteger(L, m->steps);
    m->steps = 0;
    lua_call(L, 1, 0);
}

static void meter_add(struct meter *m, lua_Integer n)
{
    m->steps += n;
    if (m->steps >= m->quantum)
        meter_flush(m);
}

static int l_set_meter(lua_State *L)
{
    lua_Integer q = luaL_optinteger(L, 2, DEFAULT_QUANTUM);
    if (lua_isnoneornil(L, 1)) {
        lua_pushnil(L);
    } else {
        luaL_checktype(L, 1, LUA_TFUNCTION);
        luaL_argcheck(L, q > 0, 2, "quantum must be positive");
        lua_createtable(L, 2, 0);
        lua_pushvalue(L, 1);
        lua_rawseti(L, -2, 1);
        lua_pushinteger(L, q);
        lua_rawseti(L, -2, 2);
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &meter_key);
    return 0;
}

/* ---- the matcher ---- */

struct state {
    const char *src, *src_end;  /* the subject */
    const char *p_end;          /* end of the pattern */
    lua_State *L;
    struct meter *meter;
    int depth;                  /* recursion left before "too complex" */
    int level;                  /* captures open or closed so far */
    struct {
        const char *init;
        ptrdiff_t len;          /* or CAP_UNFINISHED / CAP_POSITION */
    } cap[MAX_CAPTURES];
};

static void state_reset(struct state *ms)
{
    ms->level = 0;
    ms->depth = MAX_DEPTH;
}

static void state_init(struct state *ms, lua_State *L, struct meter *m, const char *s, size_t ls,
                       const char *p, size_t lp)
{
    ms->L = L;
    ms->meter = m;
    ms->src = s;
    ms->src_end = s + ls;
    ms->p_end = p + lp;
    state_reset(ms);
}

/* The end of the single-character class starting at p. */
static const char *class_end(struct state *ms, const char *p)
{
    switch (*p++) {
    case ESC:
        if (p == ms->p_end)
            luaL_error(ms->L, "malformed pattern (ends with '%%')");
        return p + 1;
    case '[':
        if (*p == '^')
            p++;
        do {            /* the first character is never the closing ']' */
            if (p == ms->p_end)
                luaL_error(ms->L, "malformed pattern (missing ']')");
            if (*(p++) == ESC && p < ms->p_end)
                p++;
        } while (*p != ']');
        return p + 1;
    default:
        return p;
    }
}

/* c against a class letter (%a, %D, ...; any other letter stands for itself). */
static int class_match(int c, int cl)
{
    int res;
    switch (tolower(cl)) {
    case 'a': res = isalpha(c); break;
    case 'c': res = iscntrl(c); break;
    case 'd': res = isdigit(c); break;
    case 'g': res = isgraph(c); break;
    case 'l': res = islower(c); break;
    case 'p': res = ispunct(c); break;
    case 's': res = isspace(c); break;
    case 'u': res = isupper(c); break;
    case 'w': res = isalnum(c); break;
    case 'x': res = isxdigit(c); break;
    case 'z': res = c == 0; break;      /* Lua 5.1's %z, still accepted */
    default: return cl == c;
    }
    if (isupper(cl))
        res = !res;
    return res != 0;
}

/* c against the set [ ... ] from p (at '[') to ec (at ']'). */
static int set_match(int c, const char *p, const char *ec)
{
    int sig = 1;
    if (*(p + 1) == '^') {
        sig = 0;
        p++;
    }
    while (++p < ec) {
        if (*p == ESC) {
            p++;
            if (class_match(c, (unsigned char)*p))
                return sig;
        } else if (*(p + 1) == '-' && p + 2 < ec) {
            p += 2;
            if ((unsigned char)*(p - 2) <= c && c <= (unsigned char)*p)
                return sig;
        } else if ((unsigned char)*p == c) {
            return sig;
        }
    }
    return !sig;
}

/* Does the subject byte at s match the class p..ep? */
static int single_match(struct state *ms, const char *s, const char *p, const char *ep)
{
    int c;
    if (s >= ms->src_end)
        return 0;
    c = (unsigned char)*s;
    switch (*p) {
    case '.': return 1;
    case ESC: return class_match(c, (unsigned char)*(p + 1));
    case '[': return set_match(c, p, ep - 1);
    default: return (unsigned char)*p == c;
    }
}

static const char *do_match(struct state *ms, const char *s, const char *p);

static const char *match_balance(struct state *ms, const char *s, const char *p)
{
    int open, close, depth = 1;
    if (p >= ms->p_end - 1)
        luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= ms->src_end || *s != *p)
        return NULL;
    open = *p;
    close = *(p + 1);
    while (++s < ms->src_end) {
        meter_add(ms->meter, 1);
        if (*s == close) {
            if (--depth == 0)
                return s + 1;
        } else if (*s == open) {
            depth++;
        }
    }
    return NULL;
}

/* Greedy: take as many as match, then give back one at a time. */
static const char *max_expand(struct state *ms, const char *s, const char *p, const char *ep)
{
    ptrdiff_t i = 0;
    while (single_match(ms, s + i, p, ep))
        i++;
    meter_add(ms->meter, i);
    for (; i >= 0; i--) {
        const char *res = do_match(ms, s + i, ep + 1);
        if (res)
            return res;
    }
    return NULL;
}

/* Lazy: take one more only when the rest does not match. */
static const char *min_expand(struct state *ms, const char *s, const char *p, const char *ep)
{
    for (;;) {
        const char *res = do_match(ms, s, ep + 1);
        if (res)
            return res;
        if (!single_match(ms, s, p, ep))
            return NULL;
        s++;
    }
}

static const char *start_capture(struct state *ms, const char *s, const char *p, ptrdiff_t what)
{
    const char *res;
    if (ms->level >= MAX_CAPTURES)
        luaL_error(ms->L, "too many captures");
    ms->cap[ms->level].init = s;
    ms->cap[ms->level].len = what;
    ms->level++;
    res = do_match(ms, s, p);
    if (!res)
        ms->level--;
    return res;
}

static const char *end_capture(struct state *ms, const char *s, const char *p)
{
    const char *res;
    int l = ms->level - 1;
    while (l >= 0 && ms->cap[l].len != CAP_UNFINISHED)
        l--;
    if (l < 0)
        luaL_error(ms->L, "invalid pattern capture");
    ms->cap[l].len = s - ms->cap[l].init;
    res = do_match(ms, s, p);
    if (!res)
        ms->cap[l].len = CAP_UNFINISHED;
    return res;
}

/* The index of the closed capture a back reference %1..%9 names. */
static int capture_index(struct state *ms, int l)
{
    l -= '1';
    if (l < 0 || l >= ms->level || ms->cap[l].len == CAP_UNFINISHED)
        return luaL_error(ms->L, "invalid capture index %%%d", l + 1);
    return l;
}

static const char *match_capture(struct state *ms, const char *s, int l)
{
    size_t len;
    l = capture_index(ms, l);
    len = (size_t)ms->cap[l].len;       /* a position capture: huge, never matches */
    if (ms->cap[l].len > 0)
        meter_add(ms->meter, BYTES(ms->cap[l].len));
    if ((size_t)(ms->src_end - s) >= len && memcmp(ms->cap[l].init, s, len) == 0)
        return s + len;
    return NULL;
}

/* Match pattern p at s: the end of the match, or NULL. */
static const char *do_match(struct state *ms, const char *s, const char *p)
{
    if (ms->depth-- == 0)
        luaL_error(ms->L, "pattern too complex");
    meter_add(ms->meter, STEP_MATCH);
    while (p != ms->p_end) {
        const char *ep;
        switch (*p) {
        case '(':
            if (*(p + 1) == ')')
                s = start_capture(ms, s, p + 2, CAP_POSITION);
            else
                s = start_capture(ms, s, p + 1, CAP_UNFINISHED);
            goto done;
        case ')':
            s = end_capture(ms, s, p + 1);
            goto done;
        case '$':
            if (p + 1 != ms->p_end)
                goto single;        /* '$' is special only at the end */
            s = s == ms->src_end ? s : NULL;
            goto done;
        case ESC:
            switch (*(p + 1)) {
            case 'b':
                s = match_balance(ms, s, p + 2);
                if (!s)
                    goto done;
                p += 4;
                continue;
            case 'f': {
                int prev, cur;
                p += 2;
                if (*p != '[')
                    luaL_error(ms->L, "missing '[' after '%%f' in pattern");
                ep = class_end(ms, p);
                prev = s == ms->src ? '\0' : (unsigned char)*(s - 1);
                cur = s < ms->src_end ? (unsigned char)*s : '\0';
                if (!set_match(prev, p, ep - 1) && set_match(cur, p, ep - 1)) {
                    p = ep;
                    continue;
                }
                s = NULL;
                goto done;
            }
            case '0': case '1': case '2': case '3': case '4':
            case '5': case '6': case '7': case '8': case '9':
                s = match_capture(ms, s, (unsigned char)*(p + 1));
                if (!s)
                    goto done;
                p += 2;
                continue;
            default:
                goto single;
            }
        default:
        single:
            ep = class_end(ms, p);
            if (!single_match(ms, s, p, ep)) {
                if (*ep == '*' || *ep == '?' || *ep == '-') {
                    p = ep + 1;     /* zero repetitions are fine */
                    continue;
                }
                s = NULL;
                goto done;
            }
            switch (*ep) {
            case '?': {
                const char *res = do_match(ms, s + 1, ep + 1);
                if (res) {
                    s = res;
                    goto done;
                }
                p = ep + 1;
                continue;
            }
            case '+':
                s = max_expand(ms, s + 1, p, ep);
                goto done;
            case '*':
                s = max_expand(ms, s, p, ep);
                goto done;
            case '-':
                s = min_expand(ms, s, p, ep);
                goto done;
            default:
                s++;
                p = ep;
                continue;
            }
        }
    }
done:
    ms->depth++;
    return s;
}

/* ---- captures ---- */

/* Push capture i of the match s..e (i == 0 without captures: the whole
 * match). Returns the length of a string capture, else 0. */
static size_t push_capture(struct state *ms, int i, const char *s, const char *e)
{
    if (i >= ms->level) {
        if (i != 0)
            luaL_error(ms->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(ms->L, s, (size_t)(e - s));
        return (size_t)(e - s);
    }
    if (ms->cap[i].len == CAP_UNFINISHED)
        luaL_error(ms->L, "unfinished capture");
    if (ms->cap[i].len == CAP_POSITION) {
        lua_pushinteger(ms->L, (ms->cap[i].init - ms->src) + 1);
        return 0;
    }
    lua_pushlstring(ms->L, ms->cap[i].init, (size_t)ms->cap[i].len);
    return (size_t)ms->cap[i].len;
}

/* Push every capture (or the whole match when there is none and s is not
 * NULL). Returns how many. */
static int push_captures(struct state *ms, const char *s, const char *e)
{
    int i, n = ms->level == 0 && s ? 1 : ms->level;
    luaL_checkstack(ms->L, n, "too many captures");
    for (i = 0; i < n; i++)
        meter_add(ms->meter, BYTES(push_capture(ms, i, s, e)));
    return n;
}

/* ---- find, match, gmatch, gsub ---- */

/* A 1-based position: negative counts from the end, clamped at 1. */
static size_t start_pos(lua_Integer pos, size_t len)
{
    if (pos > 0)
        return (size_t)pos;
    if (pos == 0)
        return 1;
    if (pos < -(lua_Integer)len)
        return 1;
    return len + (size_t)pos + 1;
}

static int no_specials(const char *p, size_t lp)
{
    size_t i;
    for (i = 0; i < lp; i++)
        if (p[i] && strchr(SPECIALS, p[i]))
            return 0;
    return 1;
}

/* Plain substring search, charged by the bytes scanned and compared. */
static const char *plain_find(struct meter *m, const char *s, size_t ls, const char *p, size_t lp)
{
    size_t i;
    if (lp == 0)
        return s;
    if (lp > ls)
        return NULL;
    for (i = 0; i + lp <= ls; i++) {
        const char *hit = memchr(s + i, *p, ls - lp - i + 1);
        if (!hit) {
            meter_add(m, BYTES(ls - i));
            return NULL;
        }
        meter_add(m, BYTES(hit - (s + i) + (ptrdiff_t)lp));
        i = (size_t)(hit - s);
        if (memcmp(hit + 1, p + 1, lp - 1) == 0)
            return hit;
    }
    return NULL;
}

static int find_aux(lua_State *L, int find)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = start_pos(luaL_optinteger(L, 3, 1), ls) - 1;
    struct meter m;
    struct state ms;
    const char *s1;
    int anchor, n;

    meter_init(L, &m);
    if (init > ls) {
        luaL_pushfail(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || no_specials(p, lp))) {
        const char *hit = plain_find(&m, s + init, ls - init, p, lp);
        meter_flush(&m);
        if (hit) {
            lua_pushinteger(L, (hit - s) + 1);
            lua_pushinteger(L, (lua_Integer)((size_t)(hit - s) + lp));
            return 2;
        }
        luaL_pushfail(L);
        return 1;
    }
    anchor = *p == '^';
    if (anchor) {
        p++;
        lp--;
    }
    state_init(&ms, L, &m, s, ls, p, lp);
    s1 = s + init;
    do {
        const char *res;
        state_reset(&ms);
        if ((res = do_match(&ms, s1, p)) != NULL) {
            if (find) {
                lua_pushinteger(L, (s1 - s) + 1);
                lua_pushinteger(L, res - s);
                n = push_captures(&ms, NULL, NULL) + 2;
            } else {
                n = push_captures(&ms, s1, res);
            }
            meter_flush(&m);
            return n;
        }
    } while (s1++ < ms.src_end && !anchor);
    meter_flush(&m);
    luaL_pushfail(L);
    return 1;
}

static int l_find(lua_State *L)
{
    return find_aux(L, 1);
}

static int l_match(lua_State *L)
{
    return find_aux(L, 0);
}

/* gmatch's iterator; upvalues: subject, pattern, next position (0-based),
 * end of the last match (-1: none). */
static int gmatch_next(lua_State *L)
{
    size_t ls, lp;
    const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls);
    const char *p = lua_tolstring(L, lua_upvalueindex(2), &lp);
    size_t pos = (size_t)lua_tointeger(L, lua_upvalueindex(3));
    lua_Integer last = lua_tointeger(L, lua_upvalueindex(4));
    struct meter m;
    struct state ms;
    const char *src;

    meter_init(L, &m);
    state_init(&ms, L, &m, s, ls, p, lp);
    for (src = s + pos; src <= ms.src_end; src++) {
        const char *e;
        state_reset(&ms);
        if ((e = do_match(&ms, src, p)) != NULL && e - s != last) {
            int n;
            lua_pushinteger(L, e - s);
            lua_replace(L, lua_upvalueindex(3));
            lua_pushinteger(L, e - s);
            lua_replace(L, lua_upvalueindex(4));
            n = push_captures(&ms, src, e);
            meter_flush(&m);
            return n;
        }
    }
    meter_flush(&m);
    return 0;
}

static int l_gmatch(lua_State *L)
{
    size_t ls;
    size_t init;
    luaL_checklstring(L, 1, &ls);
    luaL_checkstring(L, 2);
    init = start_pos(luaL_optinteger(L, 3, 1), ls) - 1;
    if (init > ls)
        init = ls + 1;          /* nothing left to match */
    lua_settop(L, 2);
    lua_pushinteger(L, (lua_Integer)init);
    lua_pushinteger(L, -1);
    lua_pushcclosure(L, gmatch_next, 4);
    return 1;
}

/* Append the replacement string `news` for the match s..e. */
static void add_string(struct state *ms, luaL_Buffer *b, const char *s, const char *e)
{
    lua_State *L = ms->L;
    size_t l, i;
    const char *news = lua_tolstring(L, 3, &l);
    for (i = 0; i < l; i++) {
        const char *esc = memchr(news + i, ESC, l - i);
        if (!esc) {
            luaL_addlstring(b, news + i, l - i);
            meter_add(ms->meter, BYTES(l - i));
            return;
        }
        luaL_addlstring(b, news + i, (size_t)(esc - (news + i)));
        meter_add(ms->meter, BYTES(esc - (news + i)) + 1);
        i = (size_t)(esc - news) + 1;
        if (i == l || news[i] == ESC) {
            if (i == l)
                luaL_error(L, "invalid use of '%c' in replacement string", ESC);
            luaL_addchar(b, ESC);
        } else if (isdigit((unsigned char)news[i])) {
            if (news[i] == '0') {
                luaL_addlstring(b, s, (size_t)(e - s));
                meter_add(ms->meter, BYTES(e - s));
            } else {
                size_t n;
                push_capture(ms, news[i] - '1', s, e);
                luaL_tolstring(L, -1, &n);      /* a position becomes its digits */
                lua_remove(L, -2);
                luaL_addvalue(b);
                meter_add(ms->meter, BYTES(n));
            }
        } else {
            luaL_error(L, "invalid use of '%c' in replacement string", ESC);
        }
    }
}

/* Append the replacement for the match s..e; false when the match is kept
 * as it is (a function or table giving false or nil). */
static int add_value(struct state *ms, luaL_Buffer *b, const char *s, const char *e, int tr)
{
    lua_State *L = ms->L;
    switch (tr) {
    case LUA_TFUNCTION: {
        int n;
        lua_pushvalue(L, 3);
        n = push_captures(ms, s, e);
        lua_call(L, n, 1);
        break;
    }
    case LUA_TTABLE:
        push_capture(ms, 0, s, e);
        lua_gettable(L, 3);
        break;
    default:
        add_string(ms, b, s, e);
        return 1;
    }
    if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s));
        meter_add(ms->meter, BYTES(e - s));
        return 0;
    }
    if (!lua_isstring(L, -1))
        return luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    meter_add(ms->meter, BYTES(lua_rawlen(L, -1)));
    luaL_addvalue(b);
    return 1;
}

static int l_gsub(lua_State *L)
{
    size_t srcl, lp;
    const char *src = luaL_checklstring(L, 1, &srcl);
    const char *p = luaL_checklstring(L, 2, &lp);
    const char *lastmatch = NULL;
    int tr = lua_type(L, 3);
    lua_Integer max_s = luaL_optinteger(L, 4, (lua_Integer)srcl + 1), n = 0;
    int anchor = *p == '^', changed = 0;
    struct meter m;
    struct state ms;
    luaL_Buffer b;

    luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION || tr == LUA_TTABLE,
                     3, "string/function/table");
    meter_init(L, &m);
    luaL_buffinit(L, &b);
    if (anchor) {
        p++;
        lp--;
    }
    state_init(&ms, L, &m, src, srcl, p, lp);
    while (n < max_s) {
        const char *e;
        state_reset(&ms);
        if ((e = do_match(&ms, src, p)) != NULL && e != lastmatch) {
            n++;
            changed = add_value(&ms, &b, src, e, tr) | changed;
            src = lastmatch = e;
        } else if (src < ms.src_end) {
            luaL_addchar(&b, *src++);
            meter_add(&m, 1);
        } else {
            break;
        }
        if (anchor)
            break;
    }
    if (!changed) {
        lua_pushvalue(L, 1);
    } else {
        luaL_addlstring(&b, src, (size_t)(ms.src_end - src));
        meter_add(&m, BYTES(ms.src_end - src));
        luaL_pushresult(&b);
    }
    meter_flush(&m);
    lua_pushinteger(L, n);
    return 2;
}

/* string.rep, metered by the bytes copied, and at least one step per
 * repetition: Lua's own loops 2^53 times for string.rep("", 2^53). */
static int l_rep(lua_State *L)
{
    size_t l, lsep, total;
    const char *s = luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    const char *sep = luaL_optlstring(L, 3, "", &lsep);
    struct meter m;
    luaL_Buffer b;
    char *out;
    lua_Integer price;

    if (n <= 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    if (l + lsep < l || l + lsep > (size_t)INT_MAX / (size_t)n)    /* as Lua's */
        return luaL_error(L, "resulting string too large");
    meter_init(L, &m);
    price = BYTES(l + lsep) > 0 ? BYTES(l + lsep) : 1;
    total = (size_t)n * l + (size_t)(n - 1) * lsep;
    out = luaL_buffinitsize(L, &b, total);
    while (n-- > 1) {
        memcpy(out, s, l);
        out += l;
        if (lsep > 0) {
            memcpy(out, sep, lsep);
            out += lsep;
        }
        meter_add(&m, price);
    }
    memcpy(out, s, l);
    luaL_pushresultsize(&b, total);
    meter_flush(&m);
    return 1;
}

/* ---- the heap cap ---- */

struct heap {
    lua_Alloc prev;
    void *prev_ud;
    size_t total;               /* bytes the state holds */
    size_t cap;
    int refused;
};

static const char heap_key = 'h';      /* registry: the struct heap userdata */

static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct heap *h = ud;
    size_t old = ptr ? osize : 0;      /* osize is a type tag for new blocks */
    void *res;
    if (nsize > old && h->total - old + nsize > h->cap) {
        h->refused = 1;
        return NULL;
    }
    res = h->prev(h->prev_ud, ptr, osize, nsize);
    if (res || nsize == 0)
        h->total = h->total - old + nsize;
    return res;
}

static int l_heap_limit(lua_State *L)
{
    struct heap *h;
    void *ud;
    lua_Alloc cur = lua_getallocf(L, &ud);
    int limited = cur == capped_alloc;

    if (lua_isnoneornil(L, 1)) {
        if (limited) {
            h = ud;
            lua_setallocf(L, h->prev, h->prev_ud);
            lua_pushnil(L);
            lua_rawsetp(L, LUA_REGISTRYINDEX, &heap_key);
        }
        return 0;
    }
    luaL_argcheck(L, !limited, 1, "the heap is capped already");
    h = lua_newuserdatauv(L, sizeof *h, 0);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &heap_key);   /* keeps it alive */
    h->prev = cur;
    h->prev_ud = ud;
    h->total = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
    luaL_argcheck(L, luaL_checknumber(L, 1) >= 0, 1, "a number of bytes >= 0 expected");
    h->cap = h->total + (size_t)lua_tonumber(L, 1);
    h->refused = 0;
    lua_setallocf(L, capped_alloc, h);
    return 0;
}

static int l_heap_refused(lua_State *L)
{
    void *ud;
    lua_pushboolean(L, lua_getallocf(L, &ud) == capped_alloc && ((struct heap *)ud)->refused);
    return 1;
}

int luaopen_agentchat_sandboxlib(lua_State *L)
{
    static const luaL_Reg fns[] = {
        { "find", l_find },
        { "match", l_match },
        { "gmatch", l_gmatch },
        { "gsub", l_gsub },
        { "rep", l_rep },
        { "set_meter", l_set_meter },
        { "heap_limit", l_heap_limit },
        { "heap_refused", l_heap_refused },
        { NULL, NULL },
    };
    luaL_newlib(L, fns);
    return 1;
}
