/*
 * l_yaml.c - YAML for Lua scripts, with libyaml: module "agentchat.yaml",
 * also reachable as plain "yaml".
 *
 *   local yaml = require "yaml"
 *   yaml.decode(text [, opts])       -- value | nil, "line L, column C: problem", "YAML_INVALID"
 *   yaml.decode_all(text [, opts])   -- array of documents | nil, message, "YAML_INVALID"
 *   yaml.encode(value)               -- block-style YAML text; raises on values YAML cannot hold
 *   yaml.null, yaml.array(t), yaml.is_array(t), yaml.array_mt   -- agentchat.json's
 *
 *   opts.max_depth        nesting limit (default 1000)
 *   opts.max_alias_nodes  nodes that alias expansion may create (default 100000)
 *   opts.marks            also return a table of source positions (below)
 *
 * What a document means (the decisions; docs/lua-api.md says the same):
 *
 *  - Plain scalars resolve by the YAML 1.2 core schema (yamlscalar.h): yes,
 *    no, on, off stay strings; quoted scalars are always strings. Null is
 *    yaml.null (the light userdata NULL that agentchat.json and cjson use),
 *    never nil, so null entries keep their place in sequences and their key
 *    in mappings. An empty document, or a text with no document at all,
 *    decodes to yaml.null: decode returns nil only on error.
 *  - Sequences carry agentchat.json's array metatable, so json.dumps and
 *    yaml.encode write them back as sequences, empty ones included.
 *  - Mapping keys must be scalars (string, number, boolean). Null keys,
 *    NaN keys, complex (sequence or mapping) keys and duplicate keys are
 *    errors: a config file that says `name:` twice is a mistake, not a
 *    "last one wins". Keys keep their type: `1: a` gives t[1].
 *  - Tags: !!str, !!int, !!float, !!bool, !!null, !!seq, !!map and the
 *    non-specific "!" are understood; any other tag is an error.
 *  - More than one document is an error for decode ("use yaml.decode_all").
 *  - Anchors and aliases work; an alias is a deep copy of its anchor's
 *    value (not a shared table), and the copies of one decode may create at
 *    most max_alias_nodes nodes, so an alias bomb ("billion laughs") stops
 *    with an error after a few milliseconds instead of eating the memory.
 *    An alias inside its own anchor (a recursive structure) is an error.
 *  - libyaml itself refuses invalid UTF-8, control characters and tabs in
 *    indentation; its messages are passed on with their position.
 *
 * opts.marks: the second result maps every decoded table to
 * {line=, column=, keys={[key]={line=, column=}}}: where the table starts
 * and where each of its keys (mappings) or items (sequences) starts, 1-based.
 * The config loader uses it to point at the offending line.
 *
 * encode writes block style (empty tables as [] and {}), mapping keys
 * sorted (numbers, then booleans, then strings bytewise), floats as their
 * shortest round-trip text, multi-line strings as literal blocks, and
 * quotes every string that a YAML 1.1 or 1.2 reader could take for a
 * non-string (yamlscalar.h), so decode(encode(v)) equals v. A table is a
 * sequence when it has the array metatable, or when its keys are exactly
 * 1..n (n > 0), as in agentchat.json.
 *
 * Memory: the libyaml parser and emitter live inside userdata closed by a
 * to-be-closed slot (lua_toclose), so a Lua error in the middle (out of
 * memory, a bad value in encode) frees them.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <yaml.h>

#include "agentchat/lua_host.h"
#include "agentchat/utf8.h"
#include "agentchat/yamlscalar.h"

#define ARRAY_MT "agentchat.json.array"
#define DECODER_MT "agentchat.yaml.decoder"
#define ENCODER_MT "agentchat.yaml.encoder"
#define DEFAULT_MAX_DEPTH 1000
#define DEFAULT_MAX_ALIAS_NODES 100000
#define ENCODE_MAX_DEPTH 1000

#define TAG_PREFIX "tag:yaml.org,2002:"

/* Marks an anchor whose node is still being built (an alias to it would be
 * a cycle). Its address is the value. */
static const char in_progress;

/* ---------------------------------------------------------------- decode */

struct decoder {
    yaml_parser_t parser;
    yaml_event_t event;
    int parser_ok;          /* parser initialised: delete it */
    int have_event;         /* event holds data: delete it */
    const char *text;       /* the input, owned by the caller's string */
    size_t len;
    int max_depth;
    lua_Integer max_alias;  /* opts.max_alias_nodes */
    lua_Integer alias_left; /* nodes alias copies may still create */
    int anchors;            /* stack index of the anchor table */
    int marks;              /* stack index of the marks table, 0 if unwanted */
    char err[512];
};

/* __close and __gc: idempotent. */
static int decoder_close(lua_State *L)
{
    struct decoder *d = luaL_checkudata(L, 1, DECODER_MT);
    if (d->have_event) {
        yaml_event_delete(&d->event);
        d->have_event = 0;
    }
    if (d->parser_ok) {
        yaml_parser_delete(&d->parser);
        d->parser_ok = 0;
    }
    return 0;
}

/* Record "line L, column C: <message>" as the error; returns -1. The
 * message is the caller's own text, always one line. */
static int fail_at(struct decoder *d, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(struct decoder *d, yaml_mark_t m, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(d->err, sizeof d->err, "line %lu, column %lu: ",
                     (unsigned long)m.line + 1, (unsigned long)m.column + 1);
    if (n < 0 || (size_t)n >= sizeof d->err)
        return -1;
    va_start(ap, fmt);
    vsnprintf(d->err + n, sizeof d->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* A short printable rendering of s for messages: control characters
 * escaped, cut at about 50 bytes, so a message stays one line; quoted
 * unless `bare`. */
static void show_text(const char *s, size_t len, char out[64], int bare)
{
    size_t i, o = 0;
    if (!bare)
        out[o++] = '\'';
    for (i = 0; i < len && o < 52; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\')
            o += (size_t)snprintf(out + o, 64 - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    if (i < len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    if (!bare)
        out[o++] = '\'';
    out[o] = '\0';
}

static void show(const char *s, size_t len, char out[64])
{
    show_text(s, len, out, 0);
}

/* Line and column (1-based, in characters) of byte offset `off`. */
static void offset_position(const struct decoder *d, size_t off, unsigned long *line,
                            unsigned long *col)
{
    size_t i;
    *line = 1;
    *col = 1;
    for (i = 0; i < off && i < d->len; i++) {
        unsigned char c = (unsigned char)d->text[i];
        if (c == '\n') {
            ++*line;
            *col = 1;
        } else if ((c & 0xc0) != 0x80) {
            ++*col;
        }
    }
}

/* Turn the parser's error into d->err; returns -1. */
static int parser_error(struct decoder *d)
{
    const yaml_parser_t *p = &d->parser;
    const char *problem = p->problem ? p->problem : "unknown error";

    switch (p->error) {
    case YAML_MEMORY_ERROR:
        snprintf(d->err, sizeof d->err, "out of memory");
        break;
    case YAML_READER_ERROR: {
        unsigned long line, col;
        offset_position(d, p->problem_offset, &line, &col);
        if (p->problem_value == -1)
            snprintf(d->err, sizeof d->err, "line %lu, column %lu: %s", line, col, problem);
        else if (strstr(problem, "octet"))
            snprintf(d->err, sizeof d->err, "line %lu, column %lu: %s (byte 0x%02x)",
                     line, col, problem, (unsigned)p->problem_value & 0xff);
        else
            snprintf(d->err, sizeof d->err, "line %lu, column %lu: %s (U+%04X)",
                     line, col, problem, (unsigned)p->problem_value);
        break;
    }
    default:
        if (p->context)
            snprintf(d->err, sizeof d->err, "line %lu, column %lu: %s (%s at line %lu, column %lu)",
                     (unsigned long)p->problem_mark.line + 1, (unsigned long)p->problem_mark.column + 1,
                     problem, p->context, (unsigned long)p->context_mark.line + 1,
                     (unsigned long)p->context_mark.column + 1);
        else
            snprintf(d->err, sizeof d->err, "line %lu, column %lu: %s",
                     (unsigned long)p->problem_mark.line + 1, (unsigned long)p->problem_mark.column + 1,
                     problem);
        break;
    }
    return -1;
}

/* Advance to the next event (the previous one is freed). */
static int next_event(struct decoder *d)
{
    if (d->have_event) {
        yaml_event_delete(&d->event);
        d->have_event = 0;
    }
    if (!yaml_parser_parse(&d->parser, &d->event))
        return parser_error(d);
    d->have_event = 1;
    return 0;
}

/* The short name of a standard tag ("str" for tag:yaml.org,2002:str), the
 * whole tag otherwise, NULL for no tag. */
static const char *tag_name(const yaml_char_t *tag)
{
    const char *t = (const char *)tag;
    if (t && strncmp(t, TAG_PREFIX, sizeof TAG_PREFIX - 1) == 0)
        return t + sizeof TAG_PREFIX - 1;
    return t;
}

static int unsupported_tag(struct decoder *d, const char *tag)
{
    char shown[64];
    show(tag, strlen(tag), shown);
    return fail_at(d, d->event.start_mark, "unsupported tag %s", shown);
}

/* Does s look like an integer (an out-of-range one resolves as a float)? */
static int is_int_text(const char *s, size_t len)
{
    size_t i = (len > 0 && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
    if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o'))
        return 1;
    if (i == len)
        return 0;
    for (; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* Push the value of the scalar event. */
static int push_scalar(lua_State *L, struct decoder *d)
{
    const yaml_event_t *ev = &d->event;
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = tag_name(ev->data.scalar.tag);
    struct ac_yaml_scalar v;
    char shown[64];

    if (tag == NULL && ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        tag = "str";            /* quoted and block scalars are strings */
    if (tag && (strcmp(tag, "str") == 0 || strcmp(tag, "!") == 0)) {
        lua_pushlstring(L, s, len);
        return 0;
    }
    if (tag && strcmp(tag, "null") != 0 && strcmp(tag, "bool") != 0 && strcmp(tag, "int") != 0
        && strcmp(tag, "float") != 0)
        return unsupported_tag(d, tag);
    ac_yaml_resolve(s, len, &v);
    if (tag) {
        int ok = (strcmp(tag, "null") == 0 && v.kind == AC_YAML_NULL)
                 || (strcmp(tag, "bool") == 0 && v.kind == AC_YAML_BOOL)
                 || (strcmp(tag, "int") == 0 && v.kind == AC_YAML_INT)
                 || (strcmp(tag, "float") == 0 && (v.kind == AC_YAML_FLOAT || v.kind == AC_YAML_INT));
        if (!ok) {
            show(s, len, shown);
            return fail_at(d, ev->start_mark, "%s is not a valid !!%s value%s", shown, tag,
                           strcmp(tag, "int") == 0 && v.kind == AC_YAML_FLOAT && is_int_text(s, len)
                               ? " (integers are limited to 64 bits)" : "");
        }
        if (strcmp(tag, "float") == 0 && v.kind == AC_YAML_INT) {
            v.kind = AC_YAML_FLOAT;
            v.number = (double)v.integer;
        }
    }
    switch (v.kind) {
    case AC_YAML_NULL:
        lua_pushlightuserdata(L, NULL);
        break;
    case AC_YAML_BOOL:
        lua_pushboolean(L, v.boolean);
        break;
    case AC_YAML_INT:
        lua_pushinteger(L, (lua_Integer)v.integer);
        break;
    case AC_YAML_FLOAT:
        lua_pushnumber(L, (lua_Number)v.number);
        break;
    case AC_YAML_STRING:
        lua_pushlstring(L, s, len);
        break;
    }
    return 0;
}

/* marks[t] for the table at idx, created with its start position. Leaves
 * the entry's `keys` table on the stack (call only when d->marks). */
static void new_marks(lua_State *L, struct decoder *d, int idx, yaml_mark_t m)
{
    idx = lua_absindex(L, idx);
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, (lua_Integer)m.line + 1);
    lua_setfield(L, -2, "line");
    lua_pushinteger(L, (lua_Integer)m.column + 1);
    lua_setfield(L, -2, "column");
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "keys");
    lua_insert(L, -2);                  /* keys, entry */
    lua_pushvalue(L, idx);
    lua_insert(L, -2);                  /* keys, t, entry */
    lua_rawset(L, d->marks);            /* keys */
}

/* keys[key at kidx] = {line=, column=} (keys table at `keys`). */
static void set_mark(lua_State *L, int keys, int kidx, yaml_mark_t m)
{
    kidx = lua_absindex(L, kidx);
    lua_pushvalue(L, kidx);
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, (lua_Integer)m.line + 1);
    lua_setfield(L, -2, "line");
    lua_pushinteger(L, (lua_Integer)m.column + 1);
    lua_setfield(L, -2, "column");
    lua_rawset(L, keys);
}

/* Push a deep copy of the value at idx (an anchor's value) for an alias.
 * Every node copied is charged to the alias budget. */
static int copy_value(lua_State *L, struct decoder *d, int idx, int depth, yaml_mark_t at)
{
    int dst;
    idx = lua_absindex(L, idx);
    if (--d->alias_left < 0)
        return fail_at(d, at, "aliases expand to more than %lld nodes (an alias bomb?)",
                       (long long)d->max_alias);
    if (lua_type(L, idx) != LUA_TTABLE) {
        lua_pushvalue(L, idx);
        return 0;
    }
    if (depth > d->max_depth)
        return fail_at(d, at, "nesting deeper than %d levels", d->max_depth);
    luaL_checkstack(L, 8, "YAML nesting too deep");     /* may raise */
    lua_createtable(L, (int)lua_rawlen(L, idx), 0);
    dst = lua_gettop(L);
    if (lua_getmetatable(L, idx))
        lua_setmetatable(L, dst);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (copy_value(L, d, -1, depth + 1, at) == -1)
            return -1;
        lua_pushvalue(L, -3);           /* key, value, copy, key */
        lua_insert(L, -2);              /* key, value, key, copy */
        lua_rawset(L, dst);
        lua_pop(L, 1);
    }
    if (d->marks) {
        lua_pushvalue(L, idx);
        if (lua_rawget(L, d->marks) != LUA_TNIL) {
            lua_pushvalue(L, dst);
            lua_insert(L, -2);
            lua_rawset(L, d->marks);
        } else {
            lua_pop(L, 1);
        }
    }
    return 0;
}

static int parse_node(lua_State *L, struct decoder *d, int depth);

/* anchors[name] = value at idx (or the in-progress marker when idx is 0). */
static void set_anchor(lua_State *L, struct decoder *d, const yaml_char_t *anchor, int idx)
{
    if (!anchor)
        return;
    if (idx)
        idx = lua_absindex(L, idx);
    lua_pushstring(L, (const char *)anchor);
    if (idx)
        lua_pushvalue(L, idx);
    else
        lua_pushlightuserdata(L, (void *)&in_progress);
    lua_rawset(L, d->anchors);
}

static int check_collection_tag(struct decoder *d, const yaml_char_t *raw, const char *want)
{
    const char *tag = tag_name(raw);
    if (tag && strcmp(tag, want) != 0 && strcmp(tag, "!") != 0)
        return unsupported_tag(d, tag);
    return 0;
}

static int parse_sequence(lua_State *L, struct decoder *d, int depth)
{
    yaml_char_t *anchor = d->event.data.sequence_start.anchor;
    int t, keys = 0;
    lua_Integer n = 0;

    if (check_collection_tag(d, d->event.data.sequence_start.tag, "seq") == -1)
        return -1;
    set_anchor(L, d, anchor, 0);
    lua_newtable(L);
    t = lua_gettop(L);
    luaL_setmetatable(L, ARRAY_MT);
    if (d->marks) {
        new_marks(L, d, t, d->event.start_mark);
        keys = lua_gettop(L);
    }
    /* The anchor name lives in the start event, which next_event frees:
     * keep a copy on the stack. */
    if (anchor)
        lua_pushstring(L, (const char *)anchor);
    for (;;) {
        if (next_event(d) == -1)
            return -1;
        if (d->event.type == YAML_SEQUENCE_END_EVENT)
            break;
        if (keys) {
            lua_pushinteger(L, n + 1);
            set_mark(L, keys, -1, d->event.start_mark);
            lua_pop(L, 1);
        }
        if (parse_node(L, d, depth + 1) == -1)
            return -1;
        lua_rawseti(L, t, ++n);
    }
    if (anchor) {
        lua_pushvalue(L, t);
        lua_rawset(L, d->anchors);      /* anchors[name] = t */
    }
    lua_settop(L, t);
    return 0;
}

static int parse_mapping(lua_State *L, struct decoder *d, int depth)
{
    yaml_char_t *anchor = d->event.data.mapping_start.anchor;
    int t, keys = 0;
    char shown[64];

    if (check_collection_tag(d, d->event.data.mapping_start.tag, "map") == -1)
        return -1;
    set_anchor(L, d, anchor, 0);
    lua_newtable(L);
    t = lua_gettop(L);
    if (d->marks) {
        new_marks(L, d, t, d->event.start_mark);
        keys = lua_gettop(L);
    }
    if (anchor)
        lua_pushstring(L, (const char *)anchor);
    for (;;) {
        yaml_mark_t at;
        int kt;
        if (next_event(d) == -1)
            return -1;
        if (d->event.type == YAML_MAPPING_END_EVENT)
            break;
        at = d->event.start_mark;
        if (d->event.type == YAML_SEQUENCE_START_EVENT || d->event.type == YAML_MAPPING_START_EVENT)
            return fail_at(d, at, "complex mapping keys (sequences or mappings) are not supported");
        if (parse_node(L, d, depth + 1) == -1)
            return -1;
        kt = lua_type(L, -1);
        if (kt == LUA_TTABLE)
            return fail_at(d, at, "complex mapping keys (sequences or mappings) are not supported");
        if (kt == LUA_TLIGHTUSERDATA)
            return fail_at(d, at, "null is not supported as a mapping key");
        if (kt == LUA_TNUMBER && isnan(lua_tonumber(L, -1)))
            return fail_at(d, at, "NaN is not supported as a mapping key");
        lua_pushvalue(L, -1);
        if (lua_rawget(L, t) != LUA_TNIL) {
            size_t klen;
            const char *k;
            lua_pop(L, 1);
            k = luaL_tolstring(L, -1, &klen);
            show(k, klen, shown);
            return fail_at(d, at, "duplicate key %s", shown);
        }
        lua_pop(L, 1);
        if (keys)
            set_mark(L, keys, -1, at);
        if (next_event(d) == -1)
            return -1;
        if (parse_node(L, d, depth + 1) == -1)
            return -1;
        lua_rawset(L, t);
    }
    if (anchor) {
        lua_pushvalue(L, t);
        lua_rawset(L, d->anchors);
    }
    lua_settop(L, t);
    return 0;
}

/* Push the value of the node whose first event is the current one. On
 * error returns -1 with d->err set (the stack may hold partial work). */
static int parse_node(lua_State *L, struct decoder *d, int depth)
{
    char shown[64];

    if (depth > d->max_depth)
        return fail_at(d, d->event.start_mark, "nesting deeper than %d levels", d->max_depth);
    luaL_checkstack(L, 10, "YAML nesting too deep");    /* may raise */
    switch (d->event.type) {
    case YAML_SCALAR_EVENT:
        if (push_scalar(L, d) == -1)
            return -1;
        set_anchor(L, d, d->event.data.scalar.anchor, -1);
        return 0;
    case YAML_SEQUENCE_START_EVENT:
        return parse_sequence(L, d, depth);
    case YAML_MAPPING_START_EVENT:
        return parse_mapping(L, d, depth);
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)d->event.data.alias.anchor;
        lua_pushstring(L, name);
        lua_rawget(L, d->anchors);
        if (lua_isnil(L, -1)) {
            show_text(name, strlen(name), shown, 1);
            return fail_at(d, d->event.start_mark, "alias *%s refers to no anchor", shown);
        }
        if (lua_touserdata(L, -1) == (void *)&in_progress) {
            show_text(name, strlen(name), shown, 1);
            return fail_at(d, d->event.start_mark,
                           "alias *%s is inside its own anchor (recursive structures are not supported)",
                           shown);
        }
        if (copy_value(L, d, -1, depth, d->event.start_mark) == -1)
            return -1;
        lua_remove(L, -2);
        return 0;
    }
    default:
        return fail_at(d, d->event.start_mark, "unexpected YAML event %d", (int)d->event.type);
    }
}

/* Decode the stream: with `all`, push an array of every document; else
 * push the single document (yaml.null when there is none). */
static int decode_stream(lua_State *L, struct decoder *d, int all)
{
    lua_Integer n = 0;
    int result = 0;

    if (next_event(d) == -1)
        return -1;
    if (all) {
        lua_newtable(L);
        luaL_setmetatable(L, ARRAY_MT);
        result = lua_gettop(L);
    }
    for (;;) {
        if (next_event(d) == -1)
            return -1;
        if (d->event.type == YAML_STREAM_END_EVENT)
            break;
        if (d->event.type != YAML_DOCUMENT_START_EVENT)
            return fail_at(d, d->event.start_mark, "unexpected YAML event %d", (int)d->event.type);
        if (!all && n == 1)
            return fail_at(d, d->event.start_mark,
                           "the text holds more than one document (use yaml.decode_all)");
        /* Anchors are per document. */
        lua_newtable(L);
        lua_replace(L, d->anchors);
        if (next_event(d) == -1 || parse_node(L, d, 0) == -1)
            return -1;
        if (next_event(d) == -1)
            return -1;
        if (d->event.type != YAML_DOCUMENT_END_EVENT)
            return fail_at(d, d->event.start_mark, "unexpected YAML event %d", (int)d->event.type);
        n++;
        if (all)
            lua_rawseti(L, result, n);
    }
    if (!all && n == 0)
        lua_pushlightuserdata(L, NULL);
    return 0;
}

static int decode(lua_State *L, int all)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    lua_Integer max_depth = DEFAULT_MAX_DEPTH, max_alias = DEFAULT_MAX_ALIAS_NODES;
    int want_marks = 0, value;
    struct decoder *d;

    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        if (lua_getfield(L, 2, "max_depth") != LUA_TNIL)
            max_depth = luaL_checkinteger(L, -1);
        if (lua_getfield(L, 2, "max_alias_nodes") != LUA_TNIL)
            max_alias = luaL_checkinteger(L, -1);
        lua_getfield(L, 2, "marks");
        want_marks = lua_toboolean(L, -1);
        luaL_argcheck(L, max_depth >= 0 && max_depth <= 100000, 2, "max_depth out of range");
        luaL_argcheck(L, max_alias >= 0, 2, "max_alias_nodes must not be negative");
    }
    lua_settop(L, 1);

    d = lua_newuserdatauv(L, sizeof *d, 0);           /* 2 */
    memset(d, 0, sizeof *d);
    luaL_setmetatable(L, DECODER_MT);
    lua_toclose(L, 2);
    d->text = text;
    d->len = len;
    d->max_depth = (int)max_depth;
    d->max_alias = max_alias;
    d->alias_left = max_alias;
    lua_newtable(L);                                    /* 3: anchors */
    d->anchors = 3;
    if (want_marks)
        lua_newtable(L);                                /* 4: marks */
    else
        lua_pushnil(L);
    d->marks = want_marks ? 4 : 0;
    value = 5;

    if (!yaml_parser_initialize(&d->parser))
        return luaL_error(L, "yaml.decode: out of memory");
    d->parser_ok = 1;
    yaml_parser_set_input_string(&d->parser, (const unsigned char *)text, len);

    if (decode_stream(L, d, all) == -1) {
        lua_settop(L, 4);
        lua_pushnil(L);
        lua_pushstring(L, d->err);
        lua_pushliteral(L, "YAML_INVALID");
        lua_pushinteger(L, 1);
        lua_closeslot(L, 2);
        return 4;
    }
    lua_settop(L, value);
    lua_closeslot(L, 2);
    if (want_marks) {
        lua_pushvalue(L, 4);
        return 2;
    }
    return 1;
}

static int l_decode(lua_State *L)
{
    return decode(L, 0);
}

static int l_decode_all(lua_State *L)
{
    return decode(L, 1);
}

/* ---------------------------------------------------------------- encode */

struct encoder {
    yaml_emitter_t emitter;
    int emitter_ok;
    char *buf;
    size_t len, cap;
};

static int encoder_close(lua_State *L)
{
    struct encoder *e = luaL_checkudata(L, 1, ENCODER_MT);
    if (e->emitter_ok) {
        yaml_emitter_delete(&e->emitter);
        e->emitter_ok = 0;
    }
    free(e->buf);
    e->buf = NULL;
    return 0;
}

/* libyaml's output handler: append to e->buf. */
static int write_out(void *data, unsigned char *bytes, size_t size)
{
    struct encoder *e = data;
    if (e->len + size > e->cap) {
        size_t cap = e->cap ? e->cap : 256;
        char *p;
        while (cap < e->len + size)
            cap *= 2;
        p = realloc(e->buf, cap);
        if (!p)
            return 0;
        e->buf = p;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, bytes, size);
    e->len += size;
    return 1;
}

/* Emit an initialised event (libyaml takes it over, even on failure). */
static void emit(lua_State *L, struct encoder *e, yaml_event_t *ev, int initialised)
{
    if (!initialised)
        luaL_error(L, "yaml.encode: out of memory");
    if (!yaml_emitter_emit(&e->emitter, ev))
        luaL_error(L, "yaml.encode: %s", e->emitter.problem ? e->emitter.problem : "out of memory");
}

static void emit_scalar(lua_State *L, struct encoder *e, const char *s, size_t len,
                        int plain_ok, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (len > INT_MAX)
        luaL_error(L, "yaml.encode: string too long");
    emit(L, e, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (const yaml_char_t *)s, (int)len,
                                                 plain_ok, 1, style));
}

static void emit_plain(lua_State *L, struct encoder *e, const char *s)
{
    emit_scalar(L, e, s, strlen(s), 1, YAML_PLAIN_SCALAR_STYLE);
}

static void emit_string(lua_State *L, struct encoder *e, const char *s, size_t len)
{
    if (!ac_utf8_valid(s, len))
        luaL_error(L, "yaml.encode: string is not valid UTF-8");
    if (ac_yaml_plain_is_ambiguous(s, len))
        emit_scalar(L, e, s, len, 0, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    else if (memchr(s, '\n', len))
        emit_scalar(L, e, s, len, 1, YAML_LITERAL_SCALAR_STYLE);    /* libyaml may quote instead */
    else
        emit_scalar(L, e, s, len, 1, YAML_PLAIN_SCALAR_STYLE);     /* libyaml quotes if it must */
}

static void emit_number(lua_State *L, struct encoder *e, int idx)
{
    char buf[40];
    if (lua_isinteger(L, idx))
        snprintf(buf, sizeof buf, "%lld", (long long)lua_tointeger(L, idx));
    else
        ac_yaml_format_float((double)lua_tonumber(L, idx), buf, sizeof buf);
    emit_plain(L, e, buf);
}

/* One mapping key, for sorting. Strings point into the table's own keys,
 * which stay alive while the table is not modified. */
struct key {
    int type;               /* LUA_TNUMBER, LUA_TBOOLEAN, LUA_TSTRING */
    int is_int;
    lua_Integer i;
    lua_Number n;
    const char *s;
    size_t len;
};

static int key_rank(const struct key *k)
{
    return k->type == LUA_TNUMBER ? 0 : k->type == LUA_TBOOLEAN ? 1 : 2;
}

static int key_cmp(const void *pa, const void *pb)
{
    const struct key *a = pa, *b = pb;
    int ra = key_rank(a), rb = key_rank(b);
    if (ra != rb)
        return ra - rb;
    if (a->type == LUA_TNUMBER) {
        if (a->is_int && b->is_int)
            return a->i < b->i ? -1 : a->i > b->i;
        {
            lua_Number x = a->is_int ? (lua_Number)a->i : a->n;
            lua_Number y = b->is_int ? (lua_Number)b->i : b->n;
            return x < y ? -1 : x > y;
        }
    }
    if (a->type == LUA_TBOOLEAN)
        return (int)a->i - (int)b->i;
    {
        size_t n = a->len < b->len ? a->len : b->len;
        int c = memcmp(a->s, b->s, n);
        if (c)
            return c;
        return a->len < b->len ? -1 : a->len > b->len;
    }
}

static void encode_value(lua_State *L, struct encoder *e, int idx, int depth);

static void encode_sequence(lua_State *L, struct encoder *e, int idx, lua_Integer n, int depth)
{
    yaml_event_t ev;
    lua_Integer i;
    emit(L, e, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
        n == 0 ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
    for (i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        encode_value(L, e, -1, depth + 1);
        lua_pop(L, 1);
    }
    emit(L, e, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void encode_mapping(lua_State *L, struct encoder *e, int idx, int depth)
{
    yaml_event_t ev;
    struct key *keys;
    size_t n = 0, i;

    lua_pushnil(L);
    while (lua_next(L, idx)) {
        n++;
        lua_pop(L, 1);
    }
    keys = lua_newuserdatauv(L, (n ? n : 1) * sizeof *keys, 0);   /* may raise; GC-owned */
    i = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        struct key *k = &keys[i++];
        memset(k, 0, sizeof *k);
        k->type = lua_type(L, -2);
        switch (k->type) {
        case LUA_TSTRING:
            k->s = lua_tolstring(L, -2, &k->len);   /* a string already: lua_next stays valid */
            break;
        case LUA_TNUMBER:
            k->is_int = lua_isinteger(L, -2);
            k->i = lua_tointeger(L, -2);
            k->n = lua_tonumber(L, -2);
            break;
        case LUA_TBOOLEAN:
            k->i = lua_toboolean(L, -2);
            break;
        default:
            luaL_error(L, "yaml.encode: cannot encode a %s as a mapping key", luaL_typename(L, -2));
        }
        lua_pop(L, 1);
    }
    qsort(keys, n, sizeof *keys, key_cmp);
    emit(L, e, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
        n == 0 ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
    for (i = 0; i < n; i++) {
        const struct key *k = &keys[i];
        switch (k->type) {
        case LUA_TSTRING:
            lua_pushlstring(L, k->s, k->len);
            emit_string(L, e, k->s, k->len);
            break;
        case LUA_TNUMBER:
            if (k->is_int)
                lua_pushinteger(L, k->i);
            else
                lua_pushnumber(L, k->n);
            emit_number(L, e, -1);
            break;
        default:
            lua_pushboolean(L, (int)k->i);
            emit_plain(L, e, k->i ? "true" : "false");
            break;
        }
        lua_rawget(L, idx);
        encode_value(L, e, -1, depth + 1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);          /* keys */
    emit(L, e, &ev, yaml_mapping_end_event_initialize(&ev));
}

/* Is the table at idx a sequence? Sets *n to its length. */
static int is_sequence(lua_State *L, int idx, lua_Integer *n)
{
    int marked = 0;
    lua_Integer count = 0;
    *n = (lua_Integer)lua_rawlen(L, idx);
    if (lua_getmetatable(L, idx)) {
        luaL_getmetatable(L, ARRAY_MT);
        marked = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
    }
    if (marked)
        return 1;
    if (*n == 0)
        return 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        count++;
        lua_pop(L, 1);
    }
    return count == *n;
}

static void encode_value(lua_State *L, struct encoder *e, int idx, int depth)
{
    idx = lua_absindex(L, idx);
    if (depth > ENCODE_MAX_DEPTH)
        luaL_error(L, "yaml.encode: nesting deeper than %d levels (a cycle?)", ENCODE_MAX_DEPTH);
    luaL_checkstack(L, 8, "yaml.encode: nesting too deep");
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        emit_plain(L, e, "null");
        return;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == NULL) {
            emit_plain(L, e, "null");
            return;
        }
        break;
    case LUA_TBOOLEAN:
        emit_plain(L, e, lua_toboolean(L, idx) ? "true" : "false");
        return;
    case LUA_TNUMBER:
        emit_number(L, e, idx);
        return;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        emit_string(L, e, s, len);
        return;
    }
    case LUA_TTABLE: {
        lua_Integer n;
        if (is_sequence(L, idx, &n))
            encode_sequence(L, e, idx, n, depth);
        else
            encode_mapping(L, e, idx, depth);
        return;
    }
    default:
        break;
    }
    luaL_error(L, "yaml.encode: cannot encode a %s", luaL_typename(L, idx));
}

static int l_encode(lua_State *L)
{
    struct encoder *e;
    yaml_event_t ev;

    lua_settop(L, 1);
    e = lua_newuserdatauv(L, sizeof *e, 0);           /* 2 */
    memset(e, 0, sizeof *e);
    luaL_setmetatable(L, ENCODER_MT);
    lua_toclose(L, 2);
    if (!yaml_emitter_initialize(&e->emitter))
        return luaL_error(L, "yaml.encode: out of memory");
    e->emitter_ok = 1;
    yaml_emitter_set_output(&e->emitter, write_out, e);
    yaml_emitter_set_unicode(&e->emitter, 1);
    yaml_emitter_set_indent(&e->emitter, 2);
    yaml_emitter_set_width(&e->emitter, -1);            /* never fold long lines */
    yaml_emitter_set_break(&e->emitter, YAML_LN_BREAK);

    emit(L, e, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
    emit(L, e, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
    encode_value(L, e, 1, 0);
    emit(L, e, &ev, yaml_document_end_event_initialize(&ev, 1));
    emit(L, e, &ev, yaml_stream_end_event_initialize(&ev));
    if (!yaml_emitter_flush(&e->emitter))
        return luaL_error(L, "yaml.encode: out of memory");
    lua_pushlstring(L, e->buf ? e->buf : "", e->len);
    lua_closeslot(L, 2);
    return 1;
}

/* ---------------------------------------------------------------- module */

static const luaL_Reg funcs[] = {
    { "decode", l_decode }, { "decode_all", l_decode_all }, { "encode", l_encode },
    { NULL, NULL }
};

static void handle_mt(lua_State *L, const char *name, lua_CFunction close)
{
    if (luaL_newmetatable(L, name)) {
        lua_pushcfunction(L, close);
        lua_setfield(L, -2, "__close");
        lua_pushcfunction(L, close);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
}

int luaopen_agentchat_yaml(lua_State *L)
{
    static const char *const shared[] = { "null", "array", "is_array", "array_mt", NULL };
    int i;

    handle_mt(L, DECODER_MT, decoder_close);
    handle_mt(L, ENCODER_MT, encoder_close);
    luaL_requiref(L, "agentchat.json", luaopen_agentchat_json, 0);
    luaL_newlib(L, funcs);
    for (i = 0; shared[i]; i++) {
        lua_getfield(L, -2, shared[i]);
        lua_setfield(L, -2, shared[i]);
    }
    lua_remove(L, -2);
    return 1;
}

/* package.preload["yaml"]: the same table as require "agentchat.yaml". */
int ac_lua_yaml_alias(lua_State *L)
{
    lua_getglobal(L, "require");
    lua_pushliteral(L, "agentchat.yaml");
    lua_call(L, 1, 1);
    return 1;
}
