/* yamlscalar.c - YAML plain-scalar resolution and float formatting; see
 * include/agentchat/yamlscalar.h. */
#include "agentchat/yamlscalar.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/json.h"

#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define IS_HEX(c) (IS_DIGIT(c) || ((c) >= 'a' && (c) <= 'f') || ((c) >= 'A' && (c) <= 'F'))

/* Significant digits kept when a number is too long to convert directly.
 * A double needs 17 to round-trip; 40 leaves the rounding correct for any
 * text a person or a program would write. */
#define MAX_SIG 40

static int is_one_of(const char *s, size_t len, const char *const *words)
{
    for (; *words; words++)
        if (strlen(*words) == len && memcmp(*words, s, len) == 0)
            return 1;
    return 0;
}

static const char *const null_words[] = { "~", "null", "Null", "NULL", NULL };
static const char *const true_words[] = { "true", "True", "TRUE", NULL };
static const char *const false_words[] = { "false", "False", "FALSE", NULL };
static const char *const inf_words[] = { ".inf", ".Inf", ".INF", NULL };
static const char *const nan_words[] = { ".nan", ".NaN", ".NAN", NULL };

/* Convert a decimal number already matched by the core-schema float (or
 * int) pattern to a double, whatever the locale: the text is rewritten as
 * "<digits>e<exponent>" with no decimal point at all, which strtod reads
 * the same in every locale (a Lua script may call os.setlocale()). glibc's
 * strtod rounds correctly. */
static double decimal_to_double(const char *s, size_t len)
{
    char buf[MAX_SIG + 32];
    size_t i = 0, n = 0;
    long exp10 = 0, e = 0;
    int neg = 0, seen_point = 0, esign = 1;

    if (i < len && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (neg)
        buf[n++] = '-';
    for (; i < len && (IS_DIGIT(s[i]) || s[i] == '.'); i++) {
        if (s[i] == '.') {
            seen_point = 1;
            continue;
        }
        if (n == (size_t)neg && s[i] == '0') {   /* leading zero: no weight */
            if (seen_point)
                exp10--;
            continue;
        }
        if (n - (size_t)neg < MAX_SIG) {
            buf[n++] = s[i];
            if (seen_point)
                exp10--;
        } else if (!seen_point) {
            exp10++;                            /* dropped integer digit */
        }
    }
    if (n == (size_t)neg)
        return neg ? -0.0 : 0.0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            esign = s[i++] == '-' ? -1 : 1;
        for (; i < len && IS_DIGIT(s[i]); i++)
            if (e < 100000)                     /* beyond this it is 0 or inf anyway */
                e = e * 10 + (s[i] - '0');
    }
    exp10 += esign * e;
    snprintf(buf + n, sizeof buf - n, "e%ld", exp10);
    return strtod(buf, NULL);
}

/* [-+]?[0-9]+ */
static int match_decimal_int(const char *s, size_t len)
{
    size_t i = (len > 0 && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (i == len)
        return 0;
    for (; i < len; i++)
        if (!IS_DIGIT(s[i]))
            return 0;
    return 1;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int match_float(const char *s, size_t len)
{
    size_t i = (len > 0 && (s[0] == '+' || s[0] == '-')) ? 1 : 0, d = 0;
    while (i < len && IS_DIGIT(s[i]))
        i++, d++;
    if (i < len && s[i] == '.') {
        size_t f = 0;
        i++;
        while (i < len && IS_DIGIT(s[i]))
            i++, f++;
        if (d == 0 && f == 0)
            return 0;
    } else if (d == 0) {
        return 0;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        size_t x = 0;
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        while (i < len && IS_DIGIT(s[i]))
            i++, x++;
        if (x == 0)
            return 0;
    }
    return i == len;
}

/* 0o[0-7]+ or 0x[0-9a-fA-F]+: the value, or a double when it overflows. */
static int match_radix(const char *s, size_t len, struct ac_yaml_scalar *out)
{
    unsigned base;
    uint64_t v = 0;
    double d = 0;
    int overflow = 0;
    size_t i;

    if (len < 3 || s[0] != '0' || (s[1] != 'o' && s[1] != 'x'))
        return 0;
    base = s[1] == 'o' ? 8 : 16;
    for (i = 2; i < len; i++) {
        unsigned digit;
        if (base == 8 && s[i] >= '0' && s[i] <= '7')
            digit = (unsigned)(s[i] - '0');
        else if (base == 16 && IS_HEX(s[i]))
            digit = IS_DIGIT(s[i]) ? (unsigned)(s[i] - '0') : (unsigned)((s[i] | 0x20) - 'a' + 10);
        else
            return 0;
        if (v > ((uint64_t)INT64_MAX - digit) / base)
            overflow = 1;
        v = v * base + digit;
        d = d * base + digit;
    }
    if (overflow) {
        out->kind = AC_YAML_FLOAT;
        out->number = d;
    } else {
        out->kind = AC_YAML_INT;
        out->integer = (int64_t)v;
    }
    return 1;
}

enum ac_yaml_kind ac_yaml_resolve(const char *s, size_t len, struct ac_yaml_scalar *out)
{
    memset(out, 0, sizeof *out);
    out->kind = AC_YAML_STRING;
    if (len == 0 || is_one_of(s, len, null_words)) {
        out->kind = AC_YAML_NULL;
    } else if (is_one_of(s, len, true_words) || is_one_of(s, len, false_words)) {
        out->kind = AC_YAML_BOOL;
        out->boolean = s[0] == 't' || s[0] == 'T';
    } else if (match_decimal_int(s, len)) {
        /* Accumulate as a negative number so INT64_MIN fits. */
        size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
        int neg = s[0] == '-', overflow = 0;
        int64_t v = 0;
        for (; i < len; i++) {
            int digit = s[i] - '0';
            if (v < (INT64_MIN + digit) / 10) {
                overflow = 1;
                break;
            }
            v = v * 10 - digit;
        }
        if (!overflow && !neg && v == INT64_MIN)
            overflow = 1;
        if (overflow) {
            out->kind = AC_YAML_FLOAT;
            out->number = decimal_to_double(s, len);
        } else {
            out->kind = AC_YAML_INT;
            out->integer = neg ? v : -v;
        }
    } else if (match_radix(s, len, out)) {
        /* kind set by match_radix */
    } else if (match_float(s, len)) {
        out->kind = AC_YAML_FLOAT;
        out->number = decimal_to_double(s, len);
    } else if (is_one_of(s, len, inf_words)
               || ((s[0] == '+' || s[0] == '-') && is_one_of(s + 1, len - 1, inf_words))) {
        out->kind = AC_YAML_FLOAT;
        out->number = s[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    } else if (is_one_of(s, len, nan_words)) {
        out->kind = AC_YAML_FLOAT;
        out->number = NAN;
    }
    return out->kind;
}

/* Case-insensitive membership, for the YAML 1.1 word lists: quoting "TRue"
 * as well costs nothing and covers readers that are lax about case. */
static int is_word_ci(const char *s, size_t len, const char *const *words)
{
    for (; *words; words++) {
        size_t i, n = strlen(*words);
        if (n != len)
            continue;
        for (i = 0; i < n; i++)
            if ((s[i] | 0x20) != (*words)[i])
                break;
        if (i == n)
            return 1;
    }
    return 0;
}

static const char *const yaml11_words[] = {
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "<<", "=",
    ".inf", "+.inf", "-.inf", ".nan", NULL
};

int ac_yaml_plain_is_ambiguous(const char *s, size_t len)
{
    struct ac_yaml_scalar v;
    if (ac_yaml_resolve(s, len, &v) != AC_YAML_STRING)
        return 1;
    if (is_word_ci(s, len, yaml11_words))
        return 1;
    /* YAML 1.1 numbers (0b101, 1_000, 0777, 1:30 sexagesimal, 1.5e3) and
     * timestamps (2001-12-14) all start with a digit, or with a sign or a
     * dot before a digit. Quote every such string: a few harmless quotes
     * ("1st") buy not having to replicate every 1.1 regular expression. */
    if (IS_DIGIT(s[0]))
        return 1;
    if ((s[0] == '+' || s[0] == '-' || s[0] == '.') && len > 1
        && (IS_DIGIT(s[1]) || (s[1] == '.' && len > 2 && IS_DIGIT(s[2]))))
        return 1;
    return 0;
}

size_t ac_yaml_format_float(double x, char *buf, size_t size)
{
    char repr[32], tmp[40];
    char *e;

    if (isnan(x)) {
        snprintf(buf, size, ".nan");
    } else if (isinf(x)) {
        snprintf(buf, size, "%s", x < 0 ? "-.inf" : ".inf");
    } else {
        /* Python's repr is the shortest text that reads back as x. */
        ac_py_float_repr(x, repr);
        e = strchr(repr, 'e');
        if (e && !memchr(repr, '.', (size_t)(e - repr)))
            snprintf(tmp, sizeof tmp, "%.*s.0%s", (int)(e - repr), repr, e);
        else if (!e && !strchr(repr, '.'))
            snprintf(tmp, sizeof tmp, "%s.0", repr);
        else
            snprintf(tmp, sizeof tmp, "%s", repr);
        snprintf(buf, size, "%s", tmp);
    }
    return strlen(buf);
}
