/*
 * test_yamlscalar.c - YAML plain-scalar resolution (YAML 1.2 core schema),
 * the quoting rule of the encoder (YAML 1.1 and 1.2 readers) and float
 * formatting. Table-driven; the expected kinds follow YAML 1.2.2 section
 * 10.3.2, and the YAML 1.1 cases follow the 1.1 type repository
 * (yaml.org/type: bool, int, float, null, merge, value, timestamp).
 */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/yamlscalar.h"
#include "tap.h"

static const char *kind_name(enum ac_yaml_kind k)
{
    static const char *const names[] = { "string", "null", "bool", "int", "float" };
    return names[k];
}

struct kind_case {
    const char *in;
    enum ac_yaml_kind kind;
};

static const struct kind_case kinds[] = {
    /* null */
    { "", AC_YAML_NULL }, { "~", AC_YAML_NULL }, { "null", AC_YAML_NULL },
    { "Null", AC_YAML_NULL }, { "NULL", AC_YAML_NULL },
    { "nULL", AC_YAML_STRING }, { "nil", AC_YAML_STRING }, { "None", AC_YAML_STRING },
    /* bool: 1.2 core only */
    { "true", AC_YAML_BOOL }, { "True", AC_YAML_BOOL }, { "TRUE", AC_YAML_BOOL },
    { "false", AC_YAML_BOOL }, { "False", AC_YAML_BOOL }, { "FALSE", AC_YAML_BOOL },
    { "tRUE", AC_YAML_STRING }, { "yes", AC_YAML_STRING }, { "no", AC_YAML_STRING },
    { "on", AC_YAML_STRING }, { "off", AC_YAML_STRING }, { "y", AC_YAML_STRING },
    { "n", AC_YAML_STRING },
    /* int */
    { "0", AC_YAML_INT }, { "-0", AC_YAML_INT }, { "+12", AC_YAML_INT }, { "012", AC_YAML_INT },
    { "0o17", AC_YAML_INT }, { "0x1F", AC_YAML_INT }, { "0xff", AC_YAML_INT },
    { "0o", AC_YAML_STRING }, { "0x", AC_YAML_STRING }, { "0o8", AC_YAML_STRING },
    { "0xg", AC_YAML_STRING }, { "-0x1", AC_YAML_STRING }, { "0b101", AC_YAML_STRING },
    { "1_000", AC_YAML_STRING }, { "1:30", AC_YAML_STRING }, { "+", AC_YAML_STRING },
    { "-", AC_YAML_STRING }, { "1 2", AC_YAML_STRING },
    /* float */
    { "1.5", AC_YAML_FLOAT }, { "1.", AC_YAML_FLOAT }, { ".5", AC_YAML_FLOAT },
    { "-.5", AC_YAML_FLOAT }, { "1e3", AC_YAML_FLOAT }, { "1E+3", AC_YAML_FLOAT },
    { "2.5e-3", AC_YAML_FLOAT }, { ".inf", AC_YAML_FLOAT }, { "-.Inf", AC_YAML_FLOAT },
    { "+.INF", AC_YAML_FLOAT }, { ".nan", AC_YAML_FLOAT }, { ".NaN", AC_YAML_FLOAT },
    { ".", AC_YAML_STRING }, { "1e", AC_YAML_STRING }, { "e3", AC_YAML_STRING },
    { ".e3", AC_YAML_STRING }, { "-.nan", AC_YAML_STRING }, { "inf", AC_YAML_STRING },
    { "nan", AC_YAML_STRING }, { ".iNf", AC_YAML_STRING }, { "1.2.3", AC_YAML_STRING },
    { "2001-12-14", AC_YAML_STRING },
    /* strings */
    { "hello", AC_YAML_STRING }, { "<<", AC_YAML_STRING }, { "=", AC_YAML_STRING },
};

struct int_case {
    const char *in;
    long long want;
};

static const struct int_case ints[] = {
    { "0", 0 }, { "-0", 0 }, { "+12", 12 }, { "012", 12 }, { "0o17", 15 }, { "0x1F", 31 },
    { "9223372036854775807", 9223372036854775807LL },
    { "-9223372036854775808", -9223372036854775807LL - 1 },
    { "0x7fffffffffffffff", 9223372036854775807LL },
};

struct float_case {
    const char *in;
    double want;
};

static const struct float_case floats[] = {
    { "1.5", 1.5 }, { "1.", 1.0 }, { ".5", 0.5 }, { "-.5", -0.5 }, { "1e3", 1000.0 },
    { "2.5e-3", 0.0025 }, { "0.1", 0.1 }, { "123.456e2", 12345.6 },
    { "0.000000000000000000000000000001", 1e-30 },
    /* beyond 64 bits: the nearest double */
    { "9223372036854775808", 9223372036854775808.0 },
    { "-9223372036854775809", -9223372036854775808.0 },
    { "0x10000000000000000", 18446744073709551616.0 },
    { "123456789012345678901234567890123456789012345678901234567890", 1.2345678901234568e59 },
    { "1e400", HUGE_VAL }, { "1e-400", 0.0 },
};

struct quote_case {
    const char *in;
    int ambiguous;
};

static const struct quote_case quotes[] = {
    /* what the 1.2 core schema resolves */
    { "", 1 }, { "~", 1 }, { "null", 1 }, { "true", 1 }, { "FALSE", 1 }, { "12", 1 },
    { "0x1f", 1 }, { "1.5", 1 }, { ".inf", 1 }, { ".NaN", 1 },
    /* what only YAML 1.1 resolves */
    { "yes", 1 }, { "No", 1 }, { "ON", 1 }, { "off", 1 }, { "y", 1 }, { "N", 1 },
    { "0b101", 1 }, { "1_000", 1 }, { "0777", 1 }, { "1:30", 1 }, { "190:20:30.15", 1 },
    { "2001-12-14", 1 }, { "2001-12-14t21:59:43.10-05:00", 1 }, { "<<", 1 }, { "=", 1 },
    { "+.inf", 1 }, { "-1", 1 }, { "+1", 1 }, { ".5", 1 }, { "-.5", 1 },
    /* case-insensitive on the word list: harmless extra quoting */
    { "TrUe", 1 }, { "nULL", 1 },
    /* plain strings */
    { "hello", 0 }, { "alice", 0 }, { "yesterday", 0 }, { "nothing", 0 }, { "-", 0 },
    { "-x", 0 }, { ".hidden", 0 }, { "a1", 0 }, { "x.5", 0 }, { "Null pointer", 0 },
    { "infinity", 0 }, { "o", 0 },
};

struct format_case {
    double in;
    const char *want;
};

static int check_roundtrip(double x)
{
    char buf[40];
    struct ac_yaml_scalar v;
    size_t n = ac_yaml_format_float(x, buf, sizeof buf);
    if (n != strlen(buf) || ac_yaml_resolve(buf, n, &v) != AC_YAML_FLOAT)
        return 0;
    if (isnan(x))
        return isnan(v.number);
    return v.number == x && signbit(v.number) == signbit(x);
}

int main(void)
{
    size_t i;
    struct ac_yaml_scalar v;
    char buf[40];
    static const struct format_case formats[] = {
        { 1.0, "1.0" }, { 0.5, "0.5" }, { -2.0, "-2.0" }, { 1e20, "1.0e+20" },
        { 1.5e20, "1.5e+20" }, { 1e-5, "1.0e-05" }, { 0.1, "0.1" }, { 1e16, "1.0e+16" },
        { 123456789.0, "123456789.0" }, { -0.0, "-0.0" }, { 1.0 / 3.0, "0.3333333333333333" },
    };

    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        enum ac_yaml_kind k = ac_yaml_resolve(kinds[i].in, strlen(kinds[i].in), &v);
        TAP_OK(k == kinds[i].kind && v.kind == k, "resolve '%s' -> %s (got %s)", kinds[i].in,
               kind_name(kinds[i].kind), kind_name(k));
    }
    TAP_OK(ac_yaml_resolve("true", 4, &v) == AC_YAML_BOOL && v.boolean == 1, "true is true");
    TAP_OK(ac_yaml_resolve("FALSE", 5, &v) == AC_YAML_BOOL && v.boolean == 0, "FALSE is false");
    for (i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        ac_yaml_resolve(ints[i].in, strlen(ints[i].in), &v);
        TAP_OK(v.kind == AC_YAML_INT, "'%s' is an int", ints[i].in);
        TAP_INT_EQ(v.integer, ints[i].want, "'%s' value", ints[i].in);
    }
    for (i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        ac_yaml_resolve(floats[i].in, strlen(floats[i].in), &v);
        TAP_OK(v.kind == AC_YAML_FLOAT && v.number == floats[i].want, "'%s' is the float %.17g (got %.17g)",
               floats[i].in, floats[i].want, v.number);
    }
    ac_yaml_resolve(".nan", 4, &v);
    TAP_OK(isnan(v.number), ".nan is NaN");
    ac_yaml_resolve("-.inf", 5, &v);
    TAP_OK(v.number == -HUGE_VAL, "-.inf is -inf");
    ac_yaml_resolve("-0.0", 4, &v);
    TAP_OK(v.kind == AC_YAML_FLOAT && v.number == 0 && signbit(v.number), "-0.0 keeps its sign");

    /* A Lua script may switch LC_NUMERIC to a "," locale. */
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
        ac_yaml_resolve("1.5", 3, &v);
        TAP_OK(v.number == 1.5, "1.5 reads as 1.5 in a ',' locale");
        setlocale(LC_NUMERIC, "C");
    } else {
        TAP_OK(1, "# SKIP no ',' locale installed");
    }

    for (i = 0; i < sizeof quotes / sizeof quotes[0]; i++)
        TAP_INT_EQ(ac_yaml_plain_is_ambiguous(quotes[i].in, strlen(quotes[i].in)) != 0,
                   quotes[i].ambiguous, "'%s' %s quoting", quotes[i].in,
                   quotes[i].ambiguous ? "needs" : "needs no");

    for (i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        ac_yaml_format_float(formats[i].in, buf, sizeof buf);
        TAP_STR_EQ(buf, formats[i].want, "format %.17g", formats[i].in);
    }
    ac_yaml_format_float(HUGE_VAL, buf, sizeof buf);
    TAP_STR_EQ(buf, ".inf", "format inf");
    ac_yaml_format_float(-HUGE_VAL, buf, sizeof buf);
    TAP_STR_EQ(buf, "-.inf", "format -inf");
    ac_yaml_format_float(NAN, buf, sizeof buf);
    TAP_STR_EQ(buf, ".nan", "format nan");

    /* Every formatted double reads back as itself: edge values plus a
     * deterministic pseudo-random sweep over bit patterns. */
    {
        static const double edge[] = { 0.0, -0.0, 1e-320, 2.2250738585072014e-308, 1.7976931348623157e308,
                                       5e-324, 0.1, 0.2, 0.30000000000000004, 9007199254740993.0,
                                       HUGE_VAL, -HUGE_VAL };
        int bad = 0;
        unsigned long long state = 0x9E3779B97F4A7C15ULL;
        for (i = 0; i < sizeof edge / sizeof edge[0]; i++)
            bad += !check_roundtrip(edge[i]);
        for (i = 0; i < 20000; i++) {
            double x;
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            memcpy(&x, &state, sizeof x);
            if (isnan(x))
                continue;
            bad += !check_roundtrip(x);
        }
        TAP_INT_EQ(bad, 0, "format/resolve round-trips 20012 doubles");
    }
    return tap_done();
}
