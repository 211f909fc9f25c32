/* json.c - Python-compatible JSON serialisation; see include/agentchat/json.h. */
#include "agentchat/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/buf.h"
#include "agentchat/utf8.h"

const struct ac_json_style ac_json_py_indent2 = { 2, 1, 0, ",", ": " };

/* Split "%.*e" output into its digits and decimal exponent. */
static int split_e(const char *s, char digits[20], int *exp)
{
    int nd = 0;
    if (*s == '-')
        s++;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && nd < 19)
            digits[nd++] = *s;
    digits[nd] = '\0';
    *exp = atoi(s + 1);
    return nd;
}

/* Add delta (+1 or -1) to the last digit of the p-digit mantissa
 * d[0].d[1..] x 10^exp, keeping p digits (a carry or borrow that changes the
 * length moves the exponent). Returns 0, or -1 when the result is zero. */
static int nudge(char digits[20], int *exp, int delta)
{
    int n = (int)strlen(digits), i = n - 1;
    if (delta > 0) {
        while (i >= 0 && digits[i] == '9')
            digits[i--] = '0';
        if (i < 0) {            /* 99..9 + 1 = 100..0: one more power of ten */
            digits[0] = '1';
            (*exp)++;
            return 0;
        }
        digits[i]++;
        return 0;
    }
    while (i >= 0 && digits[i] == '0')
        digits[i--] = '9';
    if (i < 0)
        return -1;
    digits[i]--;
    if (digits[0] == '0') {     /* 10..0 - 1 = 09..9: one less power of ten */
        if (n == 1)
            return -1;
        memmove(digits, digits + 1, (size_t)n - 1);
        digits[n - 1] = '9';
        (*exp)--;
    }
    return 0;
}

static int reads_back(const char *digits, int exp, int neg, double x)
{
    char s[48];
    snprintf(s, sizeof s, "%s%c.%se%d", neg ? "-" : "", digits[0], digits + 1, exp);
    return strtod(s, NULL) == x;
}

/* Shortest digit string that reads back as x (Python's repr, David Gay's
 * shortest mode). The correctly rounded p-digit string is tried first; where
 * the rounding interval is lopsided (powers of two) a neighbour one unit in
 * the last place away can read back while it does not. */
static int shortest_digits(double x, char digits[20], int *exp)
{
    char tmp[40];
    int prec, neg = signbit(x) != 0;
    for (prec = 1; prec <= 17; prec++) {
        int k;
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
        split_e(tmp, digits, exp);
        if (strtod(tmp, NULL) == x)
            return (int)strlen(digits);
        for (k = -1; k <= 1; k += 2) {
            char alt[20];
            int aexp = *exp;
            memcpy(alt, digits, sizeof alt);
            if (nudge(alt, &aexp, k) == 0 && reads_back(alt, aexp, neg, x)) {
                memcpy(digits, alt, sizeof alt);
                *exp = aexp;
                return (int)strlen(digits);
            }
        }
    }
    snprintf(tmp, sizeof tmp, "%.16e", x);
    return split_e(tmp, digits, exp);
}

void ac_py_float_repr(double x, char out[32])
{
    char digits[20];
    int exp, nd, i;

    if (isnan(x)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(x)) {
        strcpy(out, x < 0 ? "-inf" : "inf");
        return;
    }
    nd = shortest_digits(x, digits, &exp);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    i = 0;
    if (signbit(x))
        out[i++] = '-';
    if (exp >= -4 && exp < 16) {
        if (exp >= 0) {
            int k;
            for (k = 0; k <= exp; k++)
                out[i++] = k < nd ? digits[k] : '0';
            out[i++] = '.';
            if (nd > exp + 1)
                for (k = exp + 1; k < nd; k++)
                    out[i++] = digits[k];
            else
                out[i++] = '0';
        } else {
            int k;
            out[i++] = '0';
            out[i++] = '.';
            for (k = 0; k < -exp - 1; k++)
                out[i++] = '0';
            for (k = 0; k < nd; k++)
                out[i++] = digits[k];
        }
        out[i] = '\0';
    } else {
        out[i++] = digits[0];
        if (nd > 1) {
            out[i++] = '.';
            memcpy(out + i, digits + 1, (size_t)nd - 1);
            i += nd - 1;
        }
        snprintf(out + i, 32 - (size_t)i, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
}

static void put_string(struct ac_buf *b, const char *s, size_t len, int ascii)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    ac_buf_putc(b, '"');
    while (i < len) {
        unsigned char c = p[i];
        char esc[16];
        uint32_t cp;
        size_t n;

        switch (c) {
        case '"': ac_buf_add(b, "\\\"", 2); i++; continue;
        case '\\': ac_buf_add(b, "\\\\", 2); i++; continue;
        case '\n': ac_buf_add(b, "\\n", 2); i++; continue;
        case '\r': ac_buf_add(b, "\\r", 2); i++; continue;
        case '\t': ac_buf_add(b, "\\t", 2); i++; continue;
        case '\b': ac_buf_add(b, "\\b", 2); i++; continue;
        case '\f': ac_buf_add(b, "\\f", 2); i++; continue;
        default: break;
        }
        if (c < 0x20 || (ascii && c == 0x7f)) {
            snprintf(esc, sizeof esc, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
            ac_buf_add(b, esc, 6);
            i++;
            continue;
        }
        if (c < 0x80 || !ascii) {
            ac_buf_putc(b, (char)c);
            i++;
            continue;
        }
        n = ac_utf8_decode(p + i, len - i, &cp);
        if (n == 0) {           /* jansson strings are valid UTF-8 */
            n = 1;
            cp = 0xFFFD;
        }
        i += n;
        if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            ac_buf_add(b, esc, 12);
        } else {
            snprintf(esc, sizeof esc, "\\u%04x", cp);
            ac_buf_add(b, esc, 6);
        }
    }
    ac_buf_putc(b, '"');
}

static void newline(struct ac_buf *b, const struct ac_json_style *st, int depth)
{
    int k;
    if (st->indent < 0)
        return;
    ac_buf_putc(b, '\n');
    for (k = 0; k < depth * st->indent; k++)
        ac_buf_putc(b, ' ');
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void put_value(struct ac_buf *b, const json_t *v, const struct ac_json_style *st, int depth)
{
    char num[40];
    switch (json_typeof(v)) {
    case JSON_NULL: ac_buf_puts(b, "null"); break;
    case JSON_TRUE: ac_buf_puts(b, "true"); break;
    case JSON_FALSE: ac_buf_puts(b, "false"); break;
    case JSON_INTEGER:
        ac_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL: {
        double x = json_real_value(v);
        if (isnan(x))
            ac_buf_puts(b, "NaN");
        else if (isinf(x))
            ac_buf_puts(b, x < 0 ? "-Infinity" : "Infinity");
        else {
            ac_py_float_repr(x, num);
            ac_buf_puts(b, num);
        }
        break;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v), st->ensure_ascii);
        break;
    case JSON_ARRAY: {
        size_t i, n = json_array_size(v);
        if (n == 0) {
            ac_buf_puts(b, "[]");
            break;
        }
        ac_buf_putc(b, '[');
        for (i = 0; i < n; i++) {
            if (i)
                ac_buf_puts(b, st->item_sep);
            newline(b, st, depth + 1);
            put_value(b, json_array_get(v, i), st, depth + 1);
        }
        newline(b, st, depth);
        ac_buf_putc(b, ']');
        break;
    }
    case JSON_OBJECT: {
        size_t n = json_object_size(v), i = 0;
        const char **keys;
        const char *key;
        json_t *val;
        if (n == 0) {
            ac_buf_puts(b, "{}");
            break;
        }
        keys = malloc(n * sizeof *keys);
        if (!keys) {
            b->oom = 1;
            break;
        }
        json_object_foreach((json_t *)v, key, val)
            keys[i++] = key;
        if (st->sort_keys)
            qsort(keys, n, sizeof *keys, cmp_keys);
        ac_buf_putc(b, '{');
        for (i = 0; i < n; i++) {
            if (i)
                ac_buf_puts(b, st->item_sep);
            newline(b, st, depth + 1);
            put_string(b, keys[i], strlen(keys[i]), st->ensure_ascii);
            ac_buf_puts(b, st->key_sep);
            put_value(b, json_object_get(v, keys[i]), st, depth + 1);
        }
        free(keys);
        newline(b, st, depth);
        ac_buf_putc(b, '}');
        break;
    }
    }
}

char *ac_json_dump(const json_t *v, const struct ac_json_style *st, size_t *len)
{
    struct ac_buf b = AC_BUF_INIT;
    put_value(&b, v, st, 0);
    return ac_buf_detach(&b, len);
}

char *ac_json_dump_line(const json_t *v, const struct ac_json_style *st, size_t *len)
{
    struct ac_buf b = AC_BUF_INIT;
    put_value(&b, v, st, 0);
    ac_buf_putc(&b, '\n');
    return ac_buf_detach(&b, len);
}
