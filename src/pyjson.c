/* pyjson.c - Python 3.11 json.loads, producing jansson values; see
 * include/agentchat/pyjson.h.
 *
 * The bytes are first decoded into an array of code points, because every
 * position Python reports is a str index and every length test of its
 * scanner ("idx + 3 < length" before "null") counts code points: working on
 * the array lets the scanner below be a line-by-line transcription of
 * Modules/_json.c, index arithmetic included, which is what makes the error
 * positions exact. Its recursion (scan_once -> _parse_array -> scan_once)
 * becomes an explicit stack of open containers.
 */
#include "agentchat/pyjson.h"

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/json.h"
#include "agentchat/pystr.h"
#include "agentchat/utf8.h"

/* Python's sys.get_int_max_str_digits() default (PEP 651-era CVE fix,
 * 3.11.0+): int() of a longer decimal string is a ValueError. */
#define PY_INT_MAX_STR_DIGITS 4300

/* ---- errors ------------------------------------------------------------ */

static void set_msg(struct ac_pyjson_error *e, enum ac_pyjson_exc exc,
                    const char *name, const char *msg)
{
    e->exc = exc;
    e->exc_name = name;
    snprintf(e->msg, sizeof e->msg, "%s", msg);
}

static void set_nomem(struct ac_pyjson_error *e)
{
    set_msg(e, AC_PYJSON_EXC_MEMORY, "MemoryError", "out of memory");
}

/* JSONDecodeError(msg, doc, pos): lineno = doc.count('\n', 0, pos) + 1,
 * colno = pos - doc.rfind('\n', 0, pos) (so pos + 1 on the first line). */
static void set_decode(struct ac_pyjson_error *e, const char *msg,
                       const uint32_t *s, size_t pos)
{
    size_t i, line = 1, col = pos + 1;
    for (i = 0; i < pos; i++)
        if (s[i] == '\n') {
            line++;
            col = pos - i;
        }
    e->exc = AC_PYJSON_EXC_DECODE;
    e->exc_name = "JSONDecodeError";
    e->pos = pos;
    e->lineno = line;
    e->colno = col;
    snprintf(e->msg, sizeof e->msg, "%s: line %zu column %zu (char %zu)",
             msg, line, col, pos);
}

/* ---- UTF-8, as Python's strict 'utf-8' codec ----------------------------
 *
 * CPython's decoder (Objects/stringlib/codecs.h utf8_decode) stops at the
 * first ill-formed sequence and reports one of three reasons. The extent
 * [start, end) it blames, which decides between "byte 0xXX in position N"
 * and "bytes in position N-M", is:
 *   invalid start byte        the lead byte alone (0x80..0xC1, 0xF5..0xFF);
 *   invalid continuation byte the lead byte plus the continuation bytes
 *                             that were valid before the bad one (an
 *                             overlong E0/F0 form, a surrogate ED A0.. or
 *                             an F4 90.. overflow blames the lead alone);
 *   unexpected end of data    from the lead byte to the end of the input,
 *                             when the input ends inside a sequence whose
 *                             bytes so far were all valid.
 * Returns the length of the valid sequence at s[i], or 0 with *reason and
 * *end set. */
static size_t utf8_step(const unsigned char *s, size_t len, size_t i,
                        uint32_t *cp, const char **reason, size_t *end)
{
    unsigned char c = s[i];
    size_t avail = len - i, need;
    unsigned char lo = 0x80, hi = 0xBF;   /* range of the second byte */
    size_t k;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c < 0xC2 || c > 0xF4) {
        *reason = "invalid start byte";
        *end = i + 1;
        return 0;
    }
    if (c < 0xE0) {
        need = 2;
    } else if (c < 0xF0) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    }
    for (k = 1; k < need; k++) {
        unsigned char lim_lo = k == 1 ? lo : 0x80, lim_hi = k == 1 ? hi : 0xBF;
        if (k >= avail) {
            *reason = "unexpected end of data";
            *end = len;
            return 0;
        }
        if (s[i + k] < lim_lo || s[i + k] > lim_hi) {
            *reason = "invalid continuation byte";
            *end = i + k;
            return 0;
        }
    }
    return ac_utf8_decode(s + i, avail, cp);
}

/* Decode data into code points (universal newlines when read_text).
 * Returns 0, or -1 with *e set. *out is malloc'ed (at least one slot). */
static int decode_text(const unsigned char *data, size_t len, int read_text,
                       uint32_t **out, size_t *outlen, struct ac_pyjson_error *e)
{
    uint32_t *cps;
    size_t i = 0, n = 0;

    if (len > (SIZE_MAX - 1) / sizeof *cps) {
        set_nomem(e);
        return -1;
    }
    /* One slot per byte is enough: a code point takes at least one byte,
     * and newline translation only shrinks. */
    cps = malloc((len + 1) * sizeof *cps);
    if (!cps) {
        set_nomem(e);
        return -1;
    }
    /* The whole input is decoded before newlines are translated (the
     * TextIOWrapper decodes everything, then translates), so a codec error
     * anywhere wins and its position counts raw bytes. */
    while (i < len) {
        const char *reason = NULL;
        size_t end = 0, k;
        uint32_t cp;

        k = utf8_step(data, len, i, &cp, &reason, &end);
        if (k == 0) {
            if (end == i + 1)
                snprintf(e->msg, sizeof e->msg,
                         "'utf-8' codec can't decode byte 0x%02x in position %zu: %s",
                         data[i], i, reason);
            else
                snprintf(e->msg, sizeof e->msg,
                         "'utf-8' codec can't decode bytes in position %zu-%zu: %s",
                         i, end - 1, reason);
            e->exc = AC_PYJSON_EXC_UNICODE;
            e->exc_name = "UnicodeDecodeError";
            e->pos = i;
            free(cps);
            return -1;
        }
        i += k;
        if (read_text && cp == '\r') {
            if (i < len && data[i] == '\n')
                i++;
            cp = '\n';
        }
        cps[n++] = cp;
    }
    *out = cps;
    *outlen = n;
    return 0;
}

/* ---- non-finite sentinels ----------------------------------------------
 *
 * Three immortal objects, created on first use and shared by every decoded
 * tree (each use holds a reference; the slot holds one more, never given
 * up). Publication is a compare-and-swap, so two threads racing here
 * create at most one extra object, which the loser frees; jansson's
 * reference counts are atomic (JSON_HAVE_ATOMIC_BUILTINS). */
static json_t *sentinels[3];
static const char *const sentinel_names[3] = { "NaN", "Infinity", "-Infinity" };

static json_t *sentinel(int which)
{
    json_t *v = __atomic_load_n(&sentinels[which], __ATOMIC_ACQUIRE), *expected = NULL;
    if (v)
        return v;
    v = json_object();
    if (!v || json_object_set_new(v, "$nonfinite", json_string(sentinel_names[which])) == -1) {
        json_decref(v);
        return NULL;
    }
    if (!__atomic_compare_exchange_n(&sentinels[which], &expected, v, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        json_decref(v);
        return expected;
    }
    return v;
}

/* New reference to the sentinel for x (NaN or infinite), or NULL (ENOMEM). */
static json_t *nonfinite(double x)
{
    json_t *v = sentinel(isnan(x) ? 0 : x > 0 ? 1 : 2);
    return json_incref(v);
}

int ac_pyjson_is_nonfinite(const json_t *v)
{
    int k;
    if (!v)
        return 0;
    for (k = 0; k < 3; k++)
        if (v == __atomic_load_n(&sentinels[k], __ATOMIC_ACQUIRE))
            return 1;
    return 0;
}

double ac_pyjson_nonfinite_value(const json_t *v)
{
    if (!v)
        return 0.0;
    if (v == __atomic_load_n(&sentinels[0], __ATOMIC_ACQUIRE))
        return NAN;
    if (v == __atomic_load_n(&sentinels[1], __ATOMIC_ACQUIRE))
        return INFINITY;
    if (v == __atomic_load_n(&sentinels[2], __ATOMIC_ACQUIRE))
        return -INFINITY;
    return 0.0;
}

/* ---- scanner ----------------------------------------------------------- */

/* A growable byte buffer that reports failure at the call that failed
 * (strings, keys, numbers). ac_buf's sticky oom flag would let the scanner
 * run on after a failed allocation and report a later syntax error instead
 * of MemoryError. Doubling keeps appends amortised O(1). */
struct sbuf {
    char *p;
    size_t len, cap;
};

static int sbuf_reserve(struct sbuf *b, size_t extra)
{
    size_t cap;
    char *p;
    if (b->cap - b->len >= extra)
        return 0;
    if (extra > SIZE_MAX / 2 - b->len)
        return -1;
    cap = b->cap ? b->cap : 64;
    while (cap - b->len < extra)
        cap *= 2;
    p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

struct frame {
    json_t *c;              /* the open array or object (borrowed: owned
                             * by its parent, or by scanner.root) */
    int is_object;
};

struct scanner {
    const uint32_t *s;
    size_t n;
    struct ac_pyjson_error *e;
    json_t *root;           /* owns the whole tree built so far */
    struct frame *stack;    /* open containers, innermost last */
    size_t depth, cap;
    struct sbuf key, str, num;
};

#define IS_WS(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')

static size_t skip_ws(const struct scanner *sc, size_t idx)
{
    while (idx < sc->n && IS_WS(sc->s[idx]))
        idx++;
    return idx;
}

static int hexval(uint32_t c)
{
    if (c >= '0' && c <= '9')
        return (int)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
        return (int)(c - 'A' + 10);
    return -1;
}

/* Four hex digits at s[i..i+4) (the caller checked the bounds), or -1. */
static long hex4(const uint32_t *s, size_t i)
{
    long v = 0;
    size_t k;
    for (k = 0; k < 4; k++) {
        int h = hexval(s[i + k]);
        if (h < 0)
            return -1;
        v = (v << 4) | h;
    }
    return v;
}

static int put_cp(struct sbuf *b, uint32_t cp)
{
    if (sbuf_reserve(b, 4) == -1)
        return -1;
    b->len += ac_utf8_encode(cp, b->p + b->len);
    return 0;
}

/* scanstring_unicode(pystr, end, strict=True): the string whose opening
 * quote is at end - 1, decoded as UTF-8 into *b. Returns 0 and the index
 * after the closing quote in *next_end, or -1 with the error set.
 * Surrogates Python would keep unpaired become U+FFFD (see pyjson.h). */
static int scanstring(struct scanner *sc, size_t end, struct sbuf *b, size_t *next_end)
{
    const uint32_t *s = sc->s;
    size_t n = sc->n, begin = end - 1, next;

    b->len = 0;
    for (;;) {
        uint32_t c = 0;

        /* Find the end of the string or the next escape. */
        for (next = end; next < n; next++) {
            c = s[next];
            if (c == '"' || c == '\\')
                break;
            if (c <= 0x1f) {
                set_decode(sc->e, "Invalid control character at", s, next);
                return -1;
            }
        }
        if (next == n) {
            set_decode(sc->e, "Unterminated string starting at", s, begin);
            return -1;
        }
        /* Pick up this chunk. */
        for (; end < next; end++)
            if (put_cp(b, s[end]) == -1)
                goto nomem;
        next++;
        if (c == '"') {
            *next_end = next;
            return 0;
        }
        if (next == n) {
            set_decode(sc->e, "Unterminated string starting at", s, begin);
            return -1;
        }
        c = s[next];
        if (c != 'u') {
            /* Non-unicode backslash escapes. */
            end = next + 1;
            switch (c) {
            case '"': break;
            case '\\': break;
            case '/': break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            default: c = 0;
            }
            if (c == 0) {
                set_decode(sc->e, "Invalid \\escape", s, end - 2);
                return -1;
            }
        } else {
            long v;
            next++;
            end = next + 4;
            /* ">=": four digits *and* one more character are required, so
             * an unterminated "\u1234 at the very end is this error, not
             * "Unterminated string". Both errors point at the 'u'. */
            if (end >= n) {
                set_decode(sc->e, "Invalid \\uXXXX escape", s, next - 1);
                return -1;
            }
            v = hex4(s, next);
            if (v < 0) {
                set_decode(sc->e, "Invalid \\uXXXX escape", s, end - 5);
                return -1;
            }
            c = (uint32_t)v;
            /* Surrogate pair: needs the second escape plus one more
             * character after it (end + 6 < len). */
            if (c >= 0xD800 && c <= 0xDBFF && end + 6 < n &&
                s[end] == '\\' && s[end + 1] == 'u') {
                long c2 = hex4(s, end + 2);
                if (c2 < 0) {
                    set_decode(sc->e, "Invalid \\uXXXX escape", s, end + 1);
                    return -1;
                }
                if (c2 >= 0xDC00 && c2 <= 0xDFFF) {
                    c = 0x10000 + (((c - 0xD800) << 10) | ((uint32_t)c2 - 0xDC00));
                    end += 6;
                }
            }
            if (c >= 0xD800 && c <= 0xDFFF)
                c = 0xFFFD;
        }
        if (put_cp(b, c) == -1)
            goto nomem;
    }
nomem:
    set_nomem(sc->e);
    return -1;
}

/* Read s[start..end) (ASCII number characters) as a C double, whatever
 * LC_NUMERIC says the decimal point is. strtod follows the locale, and a
 * Lua script may call os.setlocale(); with a "," locale "1.5" would read
 * as 1. glibc's strtod is correctly rounded, as Python's float() is. */
static int number_double(struct scanner *sc, size_t start, size_t end, double *x)
{
    const char *dp = localeconv()->decimal_point;
    size_t dplen = dp && *dp ? strlen(dp) : 1, i;

    sc->num.len = 0;
    for (i = start; i < end; i++) {
        if (sbuf_reserve(&sc->num, dplen + 1) == -1)
            return -1;
        if (sc->s[i] == '.' && dp && *dp) {
            memcpy(sc->num.p + sc->num.len, dp, dplen);
            sc->num.len += dplen;
        } else {
            sc->num.p[sc->num.len++] = (char)sc->s[i];
        }
    }
    if (sbuf_reserve(&sc->num, 1) == -1)
        return -1;
    sc->num.p[sc->num.len] = '\0';
    *x = strtod(sc->num.p, NULL);
    return 0;
}

/* A float, or an integer beyond 64 bits, as a JSON_REAL or a sentinel. */
static json_t *make_real(struct scanner *sc, size_t start, size_t end)
{
    double x;
    if (number_double(sc, start, end, &x) == -1)
        return NULL;
    return isfinite(x) ? json_real(x) : nonfinite(x);
}

/* _match_number_unicode: the number at start. Returns a new value with
 * *next set; NULL with *stop = 1 when there is no number (Python's
 * StopIteration, reported as "Expecting value"); NULL with the error set
 * otherwise. */
static json_t *match_number(struct scanner *sc, size_t start, size_t *next, int *stop)
{
    const uint32_t *s = sc->s;
    size_t n = sc->n, idx = start, ndigits;
    int is_float = 0, neg = 0;
    json_t *v;

    /* Read a sign if it's there, make sure it's not the end of the string. */
    if (s[idx] == '-') {
        neg = 1;
        idx++;
        if (idx >= n) {
            *stop = 1;
            return NULL;
        }
    }
    /* Integer digits: as many as there are unless the first is 0. */
    if (s[idx] >= '1' && s[idx] <= '9') {
        idx++;
        while (idx < n && IS_DIGIT(s[idx]))
            idx++;
    } else if (s[idx] == '0') {
        idx++;
    } else {
        *stop = 1;
        return NULL;
    }
    /* What int() counts against the digit limit: the sign is not a digit. */
    ndigits = idx - start - (size_t)neg;
    /* '.' followed by a digit: read all the fraction digits. */
    if (idx + 1 < n && s[idx] == '.' && IS_DIGIT(s[idx + 1])) {
        is_float = 1;
        idx += 2;
        while (idx < n && IS_DIGIT(s[idx]))
            idx++;
    }
    /* 'e' or 'E': maybe an exponent, or backtrack. Backtracking (and the
     * '.' rule above) leaves "1." and "1e" as the number 1 followed by
     * something else, so Python reports "Extra data" or "Expecting ','
     * delimiter" after the 1, never a malformed number. */
    if (idx + 1 < n && (s[idx] == 'e' || s[idx] == 'E')) {
        size_t e_start = idx;
        idx++;
        if (idx + 1 < n && (s[idx] == '-' || s[idx] == '+'))
            idx++;
        while (idx < n && IS_DIGIT(s[idx]))
            idx++;
        if (IS_DIGIT(s[idx - 1]))
            is_float = 1;
        else
            idx = e_start;
    }
    *next = idx;
    if (is_float) {
        v = make_real(sc, start, idx);
    } else if (ndigits > PY_INT_MAX_STR_DIGITS) {
        /* int(str) refuses before converting anything. */
        sc->e->exc = AC_PYJSON_EXC_VALUE;
        sc->e->exc_name = "ValueError";
        snprintf(sc->e->msg, sizeof sc->e->msg,
                 "Exceeds the limit (%d digits) for integer string conversion: "
                 "value has %zu digits; use sys.set_int_max_str_digits() to "
                 "increase the limit", PY_INT_MAX_STR_DIGITS, ndigits);
        return NULL;
    } else {
        /* Accumulate the magnitude; 2^63 itself fits when negative. */
        uint64_t mag = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        size_t i;
        int big = 0;
        for (i = start + (size_t)neg; i < idx; i++) {
            uint64_t d = s[i] - '0';
            if (mag > (lim - d) / 10) {
                big = 1;
                break;
            }
            mag = mag * 10 + d;
        }
        if (big)
            v = make_real(sc, start, idx);
        else if (neg)
            v = json_integer(mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(json_int_t)mag);
        else
            v = json_integer((json_int_t)mag);
    }
    if (!v)
        set_nomem(sc->e);
    return v;
}

/* The fixed-length constants of scan_once_unicode. Each needs all of its
 * characters present (Python tests idx + len - 1 < length first). A near
 * miss ("nul", "-Inf", "True") is not an error of its own: Python falls
 * through to _match_number, which finds no digit and raises StopIteration,
 * i.e. "Expecting value" at the first character. */
static int match_word(const struct scanner *sc, size_t idx, const char *w)
{
    size_t k, wl = strlen(w);
    if (sc->n - idx < wl)
        return 0;
    for (k = 0; k < wl; k++)
        if (sc->s[idx + k] != (unsigned char)w[k])
            return 0;
    return 1;
}

/* Hand v (a new reference) to the innermost open container, under the key
 * in sc->key for an object, or make it the root. Returns 0 or -1 (ENOMEM;
 * v is released either way).
 *
 * Containers are attached *before* they are filled, so at every moment the
 * whole partial tree hangs off sc->root and an error anywhere is cleaned up
 * by one json_decref. Python inserts a member only after its value is
 * parsed; the result is the same because jansson, like a dict, replaces
 * the value of a duplicate key in place, keeping the first key's position,
 * and the order of distinct keys is the order their values start. */
static int attach(struct scanner *sc, json_t *v)
{
    struct frame *f;
    if (sc->depth == 0) {
        sc->root = v;
        return 0;
    }
    f = &sc->stack[sc->depth - 1];
    if (f->is_object)
        return json_object_setn_new_nocheck(f->c, sc->key.p ? sc->key.p : "",
                                            sc->key.len, v);
    return json_array_append_new(f->c, v);
}

/* Where the iterative scanner is, in terms of the recursive original:
 *   ST_VALUE  entering scan_once_unicode (a value must start at idx);
 *   ST_KEY    top of the member loop of _parse_object_unicode;
 *   ST_AFTER  a value just ended: back in the caller's loop, looking for
 *             ',' or the closing bracket (or, at depth 0, in decode()). */
enum state { ST_VALUE, ST_KEY, ST_AFTER };

/* decode() of json.decoder.JSONDecoder with the C scan_once: the value at
 * the first non-whitespace character, then only whitespace. */
static json_t *scan_document(struct scanner *sc)
{
    const uint32_t *s = sc->s;
    size_t n = sc->n, idx = skip_ws(sc, 0);
    enum state st = ST_VALUE;

    for (;;) {
        if (st == ST_VALUE) {
            /* scan_once_unicode at idx. */
            json_t *v = NULL;
            size_t next = idx;
            int stop = 0;
            uint32_t c;

            if (idx >= n) {
                set_decode(sc->e, "Expecting value", s, idx);
                return NULL;
            }
            c = s[idx];
            if (c == '{' || c == '[') {
                struct frame *f;
                int is_object = c == '{';
                if (sc->depth >= AC_PYJSON_MAX_DEPTH) {
                    set_msg(sc->e, AC_PYJSON_EXC_RECURSION, "RecursionError",
                            is_object ? "maximum recursion depth exceeded while decoding "
                                        "a JSON object from a unicode string"
                                      : "maximum recursion depth exceeded while decoding "
                                        "a JSON array from a unicode string");
                    return NULL;
                }
                if (sc->depth == sc->cap) {
                    size_t cap = sc->cap ? sc->cap * 2 : 16;
                    f = realloc(sc->stack, cap * sizeof *f);
                    if (!f)
                        goto nomem;
                    sc->stack = f;
                    sc->cap = cap;
                }
                v = is_object ? json_object() : json_array();
                if (!v || attach(sc, v) == -1)
                    goto nomem;
                f = &sc->stack[sc->depth++];
                f->c = v;
                f->is_object = is_object;
                /* Skip whitespace after the bracket; an immediate close
                 * makes an empty container. */
                idx = skip_ws(sc, idx + 1);
                if (idx < n && s[idx] == (is_object ? '}' : ']')) {
                    sc->depth--;
                    idx++;
                    st = ST_AFTER;
                } else {
                    st = is_object ? ST_KEY : ST_VALUE;
                }
                continue;
            }
            if (c == '"') {
                if (scanstring(sc, idx + 1, &sc->str, &next) == -1)
                    return NULL;
                v = json_stringn_nocheck(sc->str.p ? sc->str.p : "", sc->str.len);
            } else if (c == 'n' && match_word(sc, idx, "null")) {
                v = json_null();
                next = idx + 4;
            } else if (c == 't' && match_word(sc, idx, "true")) {
                v = json_true();
                next = idx + 4;
            } else if (c == 'f' && match_word(sc, idx, "false")) {
                v = json_false();
                next = idx + 5;
            } else if (c == 'N' && match_word(sc, idx, "NaN")) {
                v = nonfinite(NAN);
                next = idx + 3;
            } else if (c == 'I' && match_word(sc, idx, "Infinity")) {
                v = nonfinite(INFINITY);
                next = idx + 8;
            } else if (c == '-' && match_word(sc, idx, "-Infinity")) {
                v = nonfinite(-INFINITY);
                next = idx + 9;
            } else {
                /* Not a string, container or named constant: a number. */
                v = match_number(sc, idx, &next, &stop);
                if (!v) {
                    if (stop)
                        set_decode(sc->e, "Expecting value", s, idx);
                    return NULL;
                }
            }
            if (!v || attach(sc, v) == -1)
                goto nomem;
            idx = next;
            st = ST_AFTER;
        } else if (st == ST_KEY) {
            /* Read a key, the ':' delimiter and the whitespace around it. */
            if (idx >= n || s[idx] != '"') {
                set_decode(sc->e, "Expecting property name enclosed in double quotes", s, idx);
                return NULL;
            }
            if (scanstring(sc, idx + 1, &sc->key, &idx) == -1)
                return NULL;
            idx = skip_ws(sc, idx);
            if (idx >= n || s[idx] != ':') {
                set_decode(sc->e, "Expecting ':' delimiter", s, idx);
                return NULL;
            }
            idx = skip_ws(sc, idx + 1);
            st = ST_VALUE;
        } else {
            /* After a value: the document is complete, or the innermost
             * container closes, or a ',' announces the next item. */
            struct frame *f;
            if (sc->depth == 0) {
                idx = skip_ws(sc, idx);
                if (idx != n) {
                    set_decode(sc->e, "Extra data", s, idx);
                    return NULL;
                }
                return sc->root;
            }
            f = &sc->stack[sc->depth - 1];
            idx = skip_ws(sc, idx);
            if (idx < n && s[idx] == (f->is_object ? '}' : ']')) {
                sc->depth--;
                idx++;
                continue;
            }
            if (idx >= n || s[idx] != ',') {
                set_decode(sc->e, "Expecting ',' delimiter", s, idx);
                return NULL;
            }
            idx = skip_ws(sc, idx + 1);
            st = f->is_object ? ST_KEY : ST_VALUE;
        }
    }
nomem:
    set_nomem(sc->e);
    return NULL;
}

json_t *ac_pyjson_loadx(const char *data, size_t len, int flags,
                        struct ac_pyjson_error *err)
{
    struct ac_pyjson_error local;
    struct scanner sc;
    uint32_t *cps = NULL;
    size_t n = 0;
    json_t *v = NULL;

    if (!err)
        err = &local;
    memset(err, 0, sizeof *err);
    err->exc_name = "";
    if (!data) {                /* (NULL, 0) is the empty document */
        data = "";
        len = 0;
    }
    if (decode_text((const unsigned char *)data, len, flags & AC_PYJSON_READ_TEXT,
                    &cps, &n, err) == -1)
        return NULL;
    /* json.loads() refuses a str that starts with a BOM before scanning. */
    if (n > 0 && cps[0] == 0xFEFF) {
        set_decode(err, "Unexpected UTF-8 BOM (decode using utf-8-sig)", cps, 0);
        free(cps);
        return NULL;
    }
    memset(&sc, 0, sizeof sc);
    sc.s = cps;
    sc.n = n;
    sc.e = err;
    v = scan_document(&sc);
    if (!v)
        json_decref(sc.root);
    free(sc.stack);
    free(sc.key.p);
    free(sc.str.p);
    free(sc.num.p);
    free(cps);
    return v;
}

json_t *ac_pyjson_loads(const char *data, size_t len, int flags,
                        char *errbuf, size_t errsize)
{
    struct ac_pyjson_error e;
    json_t *v = ac_pyjson_loadx(data, len, flags, &e);
    if (errbuf && errsize > 0)
        snprintf(errbuf, errsize, "%s", v ? "" : e.msg);
    return v;
}

/* ---- repr() of a decoded value ---- */

struct repr_out {
    char *p;
    size_t size, used;
};

static void repr_put(struct repr_out *o, const char *s)
{
    size_t n = strlen(s);
    if (o->used + 1 >= o->size)
        return;
    if (n > o->size - 1 - o->used)
        n = o->size - 1 - o->used;
    memcpy(o->p + o->used, s, n);
    o->used += n;
    o->p[o->used] = '\0';
}

static void repr_value(struct repr_out *o, const json_t *v, int depth)
{
    char small[40];
    size_t i;
    if (o->used + 1 >= o->size)
        return;
    if (depth > 64) {               /* Python would go on; nobody reads that deep */
        repr_put(o, "...");
        return;
    }
    if (ac_pyjson_is_nonfinite(v)) {
        double x = ac_pyjson_nonfinite_value(v);
        repr_put(o, isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
    } else if (json_is_null(v)) {
        repr_put(o, "None");
    } else if (json_is_true(v)) {
        repr_put(o, "True");
    } else if (json_is_false(v)) {
        repr_put(o, "False");
    } else if (json_is_integer(v)) {
        snprintf(small, sizeof small, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        repr_put(o, small);
    } else if (json_is_real(v)) {
        ac_py_float_repr(json_real_value(v), small);
        repr_put(o, small);
    } else if (json_is_string(v)) {
        size_t room = o->size - o->used;
        ac_py_repr(json_string_value(v), o->p + o->used, room);
        o->used += strlen(o->p + o->used);
    } else if (json_is_array(v)) {
        repr_put(o, "[");
        for (i = 0; i < json_array_size(v); i++) {
            if (i)
                repr_put(o, ", ");
            repr_value(o, json_array_get(v, i), depth + 1);
        }
        repr_put(o, "]");
    } else if (json_is_object(v)) {
        const char *key;
        json_t *item;
        int first = 1;
        repr_put(o, "{");
        json_object_foreach((json_t *)v, key, item) {
            size_t room;
            if (!first)
                repr_put(o, ", ");
            first = 0;
            room = o->size - o->used;
            if (room > 1) {
                ac_py_repr(key, o->p + o->used, room);
                o->used += strlen(o->p + o->used);
            }
            repr_put(o, ": ");
            repr_value(o, item, depth + 1);
        }
        repr_put(o, "}");
    }
}

char *ac_pyjson_repr(const json_t *v, char *out, size_t outsz)
{
    struct repr_out o = { out, outsz, 0 };
    if (outsz == 0)
        return out;
    out[0] = '\0';
    repr_value(&o, v, 0);
    return out;
}
