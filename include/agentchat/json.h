/*
 * json.h - JSON written byte for byte as Python's json.dumps writes it.
 *
 * Records shared with the Python tool must be byte-identical, so values are
 * held in jansson trees (a maintained JSON library; objects keep insertion
 * order) and serialised here with Python's rules, which jansson's own dumper
 * does not follow exactly (it escapes control characters with upper-case
 * hex, Python with lower-case, and it cannot write Python's separators):
 *   - ensure_ascii: every character outside ' '..'~' as \uXXXX (lower-case
 *     hex, surrogate pairs above U+FFFF), else only controls, '"' and '\\';
 *   - \n \r \t \b \f keep their short escapes;
 *   - indent N: newline plus N spaces per level, "," item separator, ": "
 *     key separator, and empty containers as [] and {};
 *   - floats as Python repr() (1.0, 1e-05, Infinity, NaN).
 */
#ifndef AGENTCHAT_JSON_H
#define AGENTCHAT_JSON_H

#include <jansson.h>
#include <stddef.h>

struct ac_json_style {
    int indent;             /* -1: single line */
    int ensure_ascii;
    int sort_keys;
    const char *item_sep;   /* "," with indent, ", " or "," without */
    const char *key_sep;    /* ": " or ":" */
};

/* json.dumps(v, indent=2) (ensure_ascii, insertion order). */
extern const struct ac_json_style ac_json_py_indent2;

/* Serialise v. Returns a malloc'ed NUL-terminated string or NULL (ENOMEM). */
char *ac_json_dump(const json_t *v, const struct ac_json_style *st, size_t *len);

/* The same plus a final "\n": the bytes of a record or journal file
 * (json.dumps(...) + "\n"). */
char *ac_json_dump_line(const json_t *v, const struct ac_json_style *st, size_t *len);

/* Python repr() of a float ("1.0", "0.25", "1e-05", "inf", "nan"). */
void ac_py_float_repr(double x, char out[32]);

#endif
