/*
 * yamlscalar.h - what a YAML plain scalar means, and how to write one so
 * that it means the same thing when read back. Pure C (no libyaml, no Lua):
 * the tree building lives in src/l_yaml.c, which calls these for every
 * scalar it reads or writes.
 *
 * Reading follows the YAML 1.2 core schema (YAML 1.2.2, section 10.3.2),
 * which is what a plain (unquoted, untagged) scalar resolves to:
 *
 *     null    ~  null  Null  NULL  and the empty scalar
 *     bool    true True TRUE false False FALSE
 *     int     [-+]?[0-9]+   0o[0-7]+   0x[0-9a-fA-F]+
 *     float   [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
 *             [-+]?\.(inf|Inf|INF)   \.(nan|NaN|NAN)
 *     string  everything else
 *
 * So YAML 1.1's yes/no/on/off/y/n are strings, 012 is the integer 12 (not
 * octal 10), 0b101 and 1_000 are strings. An integer that does not fit in
 * 64 bits is read as the nearest double.
 *
 * Writing is stricter than reading: ac_yaml_plain_is_ambiguous() says a
 * string must be quoted whenever a YAML 1.2 *or* YAML 1.1 reader (PyYAML,
 * libyaml-based tools, older Ruby/Go parsers) could take it for something
 * other than a string, so files we write mean the same thing to all of
 * them. It errs on the side of quoting.
 *
 * Calling sequence:
 *
 *     struct ac_yaml_scalar v;
 *     ac_yaml_resolve(text, len, &v);            // decoder: plain scalars
 *     if (ac_yaml_plain_is_ambiguous(s, n)) ...  // encoder: quote strings
 *     ac_yaml_format_float(x, buf, sizeof buf);  // encoder: numbers
 *
 * None of these functions allocate or fail.
 */
#ifndef AGENTCHAT_YAMLSCALAR_H
#define AGENTCHAT_YAMLSCALAR_H

#include <stddef.h>
#include <stdint.h>

enum ac_yaml_kind {
    AC_YAML_STRING,
    AC_YAML_NULL,
    AC_YAML_BOOL,
    AC_YAML_INT,
    AC_YAML_FLOAT
};

struct ac_yaml_scalar {
    enum ac_yaml_kind kind;
    int boolean;        /* AC_YAML_BOOL */
    int64_t integer;    /* AC_YAML_INT */
    double number;      /* AC_YAML_FLOAT */
};

/* Resolve the plain scalar s[0..len) under the YAML 1.2 core schema and
 * return its kind (also stored in out->kind). */
enum ac_yaml_kind ac_yaml_resolve(const char *s, size_t len, struct ac_yaml_scalar *out);

/* Nonzero when the string s[0..len), written as a plain scalar, could be
 * read as anything but that string by a YAML 1.2 core or YAML 1.1 reader
 * (null, bool, int, float, timestamp, merge key "<<", value key "="). It
 * does not judge syntax (a leading "- " or an embedded ": "); libyaml's
 * emitter does that and quotes on its own. */
int ac_yaml_plain_is_ambiguous(const char *s, size_t len);

/* The shortest text that reads back as exactly x, always recognisable as a
 * float by YAML 1.1 and 1.2 readers: "1.0" (never "1"), "1.0e+20" (1.1
 * needs the dot), ".inf", "-.inf", ".nan", "-0.0". Writes at most size
 * bytes including the NUL (32 is always enough); returns the length. */
size_t ac_yaml_format_float(double x, char *buf, size_t size);

#endif
