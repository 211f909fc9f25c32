/*
 * pyjson.h - JSON read exactly as the Python tool reads it:
 * json.loads(path.read_text(encoding="utf-8")) on Python 3.11.
 *
 * jansson's parser (json_loadb) accepts a different language (no NaN or
 * Infinity, other limits) and words its errors differently, while a record
 * that one tool rejects must be rejected by the other with the same text,
 * so that "could not read task record x.json: Expecting value: line 1
 * column 1 (char 0)" reads the same from both. This decoder is a
 * transcription of CPython 3.11's C scanner (Modules/_json.c: scan_once,
 * _parse_object, _parse_array, scanstring, _match_number) and of its
 * strict UTF-8 codec, producing jansson values. python3 on the development
 * machine is the oracle of every expected string in tests/c/test_pyjson.c.
 *
 * What is accepted, as Python does:
 *   - any top-level value, surrounded by whitespace ' ' '\t' '\n' '\r' only
 *     (no form feed, no BOM: a leading U+FEFF is its own error);
 *   - NaN, Infinity and -Infinity; numbers matching
 *     -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? and integers of any size
 *     up to Python's int_max_str_digits (4300 digits; beyond is ValueError);
 *   - strings with the escapes \" \\ \/ \b \f \n \r \t \uXXXX (either case
 *     of hex), escaped surrogate pairs joined, *lone* surrogates accepted;
 *     raw characters below U+0020 are errors, U+007F and above are fine;
 *   - duplicate object keys: the last value wins, at the position of the
 *     first occurrence (a Python dict).
 *
 * Representation choices (jansson cannot hold every Python value):
 *   - lone surrogate escapes ("\ud800", or a high one not followed by a low
 *     one) become U+FFFD, one per escape: jansson strings must be valid
 *     UTF-8 and Python itself could not write such a str back to a UTF-8
 *     file. Surrogate pairs are joined as Python joins them.
 *   - strings and keys may contain U+0000 ("\u0000"): values are stored
 *     with json_stringn, keys with json_object_setn (use
 *     json_string_length and length-aware key APIs to see past a NUL; note
 *     that ac_json_dump writes keys up to the first NUL).
 *   - integers in [-2^63, 2^63-1] are JSON_INTEGER; larger ones become the
 *     nearest double as JSON_REAL (precision loss: 2**64 reads back as
 *     1.8446744073709552e+19, and is no longer json_is_integer), or the
 *     +-Infinity sentinel below when strtod() overflows (about 1.8e308).
 *   - NaN, Infinity, -Infinity, and floats that overflow (1e400) become a
 *     *non-finite sentinel*: an object {"$nonfinite": "NaN"} (or
 *     "Infinity", "-Infinity"), which no validator takes for a number,
 *     string, bool or list. The sentinels are three process-wide shared
 *     objects recognised by identity, so a document that really contains
 *     {"$nonfinite": "NaN"} stays an ordinary object: use
 *     ac_pyjson_is_nonfinite(), never a structural test, and do not modify
 *     them or deep-copy them (json_deep_copy makes an ordinary object).
 *
 * Limits: nesting deeper than AC_PYJSON_MAX_DEPTH containers fails with
 * Python's RecursionError text. Python's own limit is its recursion limit
 * minus the frames already on its stack (json.loads at the top of a script
 * accepts 995 levels, fewer when called deeper), so documents nested
 * between ~990 and 1000 levels may be accepted here where Python fails.
 * The parser is iterative: hostile nesting cannot exhaust the C stack.
 * Memory use is about 4 bytes per input byte plus the tree.
 *
 * Calling sequence:
 *     char msg[256];
 *     json_t *v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT,
 *                                 msg, sizeof msg);
 *     if (!v)
 *         return ac_err_set(err, AC_EXIT_USAGE, "TASK_INVALID_RECORD",
 *                           "could not read task record %s: %s", name, msg);
 *     ... use v; json_decref(v);
 *
 *     struct ac_pyjson_error e;            // when the exception class matters
 *     json_t *v = ac_pyjson_loadx(data, len, AC_PYJSON_READ_TEXT, &e);
 *     if (!v && e.exc == AC_PYJSON_EXC_RECURSION) ...
 *
 * Error handling: on failure the functions return NULL and give str(exc)
 * of the exception Python would raise, verbatim (no class name prefix):
 *   JSONDecodeError     "Expecting value: line 1 column 1 (char 0)"; the
 *                       char index counts code points of the decoded text,
 *                       after read_text's newline translation;
 *   UnicodeDecodeError  "'utf-8' codec can't decode byte 0xff in position
 *                       0: invalid start byte"; positions count bytes;
 *   ValueError          "Exceeds the limit (4300 digits) for integer
 *                       string conversion: value has 4301 digits; use
 *                       sys.set_int_max_str_digits() to increase the limit";
 *   RecursionError      "maximum recursion depth exceeded while decoding a
 *                       JSON array from a unicode string" (or "object");
 *   MemoryError         "out of memory" (Python would print nothing).
 * The first three are ValueError subclasses in Python (what `except
 * ValueError` catches); RecursionError and MemoryError are not. Nothing is
 * printed, errno is not meaningful, and a message longer than the caller's
 * buffer is truncated (every message fits in 256 bytes).
 */
#ifndef AGENTCHAT_PYJSON_H
#define AGENTCHAT_PYJSON_H

#include <jansson.h>
#include <stddef.h>

/* Flags. Without AC_PYJSON_READ_TEXT the bytes are decoded as
 * json.loads(data.decode("utf-8")) sees them: "\r" stays "\r" (JSON
 * whitespace), which changes line numbers and char positions. */
#define AC_PYJSON_READ_TEXT 0x1     /* Path.read_text(): "\r\n", "\r" -> "\n" */

#define AC_PYJSON_MAX_DEPTH 1000    /* containers nested; the 1001st fails */
#define AC_PYJSON_MSG_MAX 256

/* The Python exception class a failure corresponds to. */
enum ac_pyjson_exc {
    AC_PYJSON_EXC_NONE = 0,
    AC_PYJSON_EXC_DECODE,       /* json.JSONDecodeError (ValueError) */
    AC_PYJSON_EXC_UNICODE,      /* UnicodeDecodeError (ValueError) */
    AC_PYJSON_EXC_VALUE,        /* ValueError: integer digit limit */
    AC_PYJSON_EXC_RECURSION,    /* RecursionError */
    AC_PYJSON_EXC_MEMORY        /* MemoryError */
};

struct ac_pyjson_error {
    enum ac_pyjson_exc exc;
    const char *exc_name;       /* "JSONDecodeError", ...; "" when none */
    /* JSONDecodeError: pos (code points), lineno and colno (1-based), as
     * the exception's attributes. UnicodeDecodeError: pos is the start
     * byte, lineno and colno 0. Otherwise all 0. */
    size_t pos, lineno, colno;
    char msg[AC_PYJSON_MSG_MAX];  /* str(exc) */
};

/* Decode data[0..len) (any bytes, NUL included; data may be NULL when len
 * is 0). Returns a new reference, or NULL with *err filled. */
json_t *ac_pyjson_loadx(const char *data, size_t len, int flags,
                        struct ac_pyjson_error *err);

/* Same, with only the message: copied NUL-terminated into errbuf (if
 * errbuf is not NULL and errsize > 0), truncated to errsize - 1 bytes. */
json_t *ac_pyjson_loads(const char *data, size_t len, int flags,
                        char *errbuf, size_t errsize);

/* True when v is one of the non-finite sentinels (see above). */
int ac_pyjson_is_nonfinite(const json_t *v);

/* NAN, INFINITY or -INFINITY for a sentinel, 0.0 for anything else. */
double ac_pyjson_nonfinite_value(const json_t *v);

/* Python repr() of a decoded value, as the Python tool prints one in a
 * message ("unknown task status: None", "[1, 'a']", "{'k': True}"; a
 * sentinel as nan, inf or -inf; a str as ac_py_repr does). Cut when `out`
 * (size outsz > 0) is full. Returns out. */
char *ac_pyjson_repr(const json_t *v, char *out, size_t outsz);

#endif
