/*
 * pystr.h - the few Python str semantics the folder format depends on.
 *
 * The Python tool strips frontmatter keys and values with str.strip(),
 * right-strips bodies with str.rstrip() and recognises message files by
 * str.isdecimal() on the part of the name before the first '-'. Those use
 * Unicode definitions (Unicode 14.0 in Python 3.11), reproduced here on
 * UTF-8 bytes so that both tools agree on every file.
 */
#ifndef AGENTCHAT_PYSTR_H
#define AGENTCHAT_PYSTR_H

#include <stddef.h>
#include <stdint.h>

/* Python str.isspace() for one code point. */
int ac_py_isspace(uint32_t cp);

/* Python str.isalnum() for one code point (letters and numbers of any
 * script: categories L* and N*, plus the few numeric characters Python adds). */
int ac_py_isalnum(uint32_t cp);

/* Decimal value (0..9) of a code point for which str.isdecimal() is true,
 * or -1. */
int ac_py_decimal(uint32_t cp);

/* Byte range [*start, *end) of s[0..len) without leading and/or trailing
 * Python whitespace. Invalid UTF-8 bytes are never whitespace. */
void ac_py_strip(const char *s, size_t len, size_t *start, size_t *end);
size_t ac_py_rstrip_len(const char *s, size_t len);

/* Parse s[0..len) as Python int() would after an isdecimal() check: every
 * code point must be a decimal digit (any script) and there must be at least
 * one. Returns 0 and *value on success, -1 when not decimal (errno EINVAL)
 * or when the value does not fit in 63 bits (errno ERANGE). */
int ac_py_decimal_value(const char *s, size_t len, uint64_t *value);

/* Python int(str) for base 10: surrounding whitespace, an optional sign,
 * digits of any script with single '_' between digits. Returns 0 and
 * *value, or -1 when Python would raise ValueError (or the value does not
 * fit in 63 bits). */
int ac_py_int_parse(const char *s, size_t len, int64_t *value);

/* Python repr() of a str given as UTF-8: single quotes unless the text
 * holds ' and no "; backslash, the quote, \t \n \r escaped; other
 * non-printable characters as \xNN, \uNNNN or \UNNNNNNNN (controls, the
 * Unicode separators and format characters, private use); invalid UTF-8
 * bytes as \udcNN (surrogateescape). Cut (still quoted) when `out` is full.
 * Returns out. */
char *ac_py_repr(const char *s, char *out, size_t outsz);

/* True for Python str.isprintable() on one code point (the exceptions that
 * matter in practice: Cc, Zs but ' ', Zl, Zp, common Cf, Co, surrogates). */
int ac_py_isprintable(uint32_t cp);

#endif
