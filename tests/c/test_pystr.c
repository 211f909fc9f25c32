/*
 * test_pystr.c - the Python str semantics of pystr.h.
 *
 * Oracle: Python 3.11 (Unicode 14.0) on this machine, e.g.
 *   python3 -c 'print([hex(c) for c in range(0x110000) if chr(c).isspace()])'
 *   python3 -c 'print(int("\x1c3"))'          # ValueError
 * The tables below are that output pasted in.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/pystr.h"
#include "tap.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define S(lit) lit, sizeof(lit) - 1

/* [c for c in range(0x110000) if chr(c).isspace()] */
static const uint32_t py_spaces[] = {
    0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0,
    0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
    0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
};

/* Neighbours and look-alikes that are NOT str.isspace(). */
static const uint32_t py_not_spaces[] = {
    0x0, 0x8, 0xe, 0x1b, 0x21, 0x7f, 0x84, 0x86, 0x9f, 0xa1, 0x167f, 0x1681,
    0x180e, 0x1fff, 0x200b, 0x200c, 0x2027, 0x202a, 0x202e, 0x2030, 0x205e,
    0x2060, 0x2fff, 0x3001, 0xfeff, 0x10ffff,
};

/* Code points z with chr(z).isdecimal() and int(chr(z)) == 0; Python
 * confirms each run z..z+9 is decimal 0..9 and that these 660 code points
 * are all of str.isdecimal(). */
static const uint32_t py_zeros[] = {
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6,
    0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0,
    0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50,
    0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10, 0x104A0,
    0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0,
    0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0,
    0x16A60, 0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6,
    0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
};

static void test_isspace(void)
{
    size_t i;
    uint32_t c;
    long mismatches = 0, count = 0;

    for (i = 0; i < COUNT(py_spaces); i++)
        TAP_OK(ac_py_isspace(py_spaces[i]), "isspace(U+%04X) is true", (unsigned)py_spaces[i]);
    for (i = 0; i < COUNT(py_not_spaces); i++)
        TAP_OK(!ac_py_isspace(py_not_spaces[i]), "isspace(U+%04X) is false",
               (unsigned)py_not_spaces[i]);
    /* Every code point: exactly the 29 of Python's set. */
    for (c = 0; c <= 0x10ffff; c++) {
        int want = 0;
        for (i = 0; i < COUNT(py_spaces); i++)
            if (py_spaces[i] == c)
                want = 1;
        if (!!ac_py_isspace(c) != want)
            mismatches++;
        count += want;
    }
    TAP_INT_EQ(mismatches, 0, "isspace agrees with Python on all of U+0000..U+10FFFF");
    TAP_INT_EQ(count, 29, "Python has 29 whitespace code points");
}

static void test_decimal(void)
{
    static const struct { uint32_t cp; int want; const char *what; } cases[] = {
        { '0', 0, "ASCII 0" }, { '5', 5, "ASCII 5" }, { '9', 9, "ASCII 9" },
        { '/', -1, "'/' before 0" }, { ':', -1, "':' after 9" }, { 'a', -1, "a" },
        { 0x660, 0, "ARABIC-INDIC ZERO" }, { 0x663, 3, "ARABIC-INDIC THREE" },
        { 0x669, 9, "ARABIC-INDIC NINE" }, { 0x66a, -1, "ARABIC PERCENT SIGN" },
        { 0x65f, -1, "before Arabic-Indic zero" },
        { 0x6f4, 4, "EXTENDED ARABIC-INDIC FOUR" }, { 0x96b, 5, "DEVANAGARI FIVE" },
        { 0xff10, 0, "FULLWIDTH ZERO" }, { 0xff19, 9, "FULLWIDTH NINE" },
        { 0xff1a, -1, "FULLWIDTH COLON" }, { 0xff0f, -1, "FULLWIDTH SOLIDUS" },
        { 0xb2, -1, "SUPERSCRIPT TWO (isdigit, not isdecimal)" },
        { 0xb3, -1, "SUPERSCRIPT THREE" }, { 0xb9, -1, "SUPERSCRIPT ONE" },
        { 0x2070, -1, "SUPERSCRIPT ZERO" }, { 0x2460, -1, "CIRCLED DIGIT ONE" },
        { 0xbc, -1, "VULGAR FRACTION ONE QUARTER (numeric)" },
        { 0x4e00, -1, "CJK one (numeric, not decimal)" },
        { 0x1d7ce, 0, "MATHEMATICAL BOLD DIGIT ZERO" },
        { 0x1d7ff, 9, "MATHEMATICAL MONOSPACE DIGIT NINE" },
        { 0x1fbf9, 9, "SEGMENTED DIGIT NINE" }, { 0x1fbfa, -1, "after segmented digits" },
        { 0x10ffff, -1, "U+10FFFF" }, { 0x110000, -1, "beyond Unicode" },
    };
    size_t i;
    uint32_t c;
    long mismatches = 0, count = 0;

    for (i = 0; i < COUNT(cases); i++)
        TAP_INT_EQ(ac_py_decimal(cases[i].cp), cases[i].want, "ac_py_decimal(U+%04X) %s",
                   (unsigned)cases[i].cp, cases[i].what);
    for (c = 0; c <= 0x10ffff; c++) {
        int want = -1;
        for (i = 0; i < COUNT(py_zeros); i++)
            if (c >= py_zeros[i] && c < py_zeros[i] + 10)
                want = (int)(c - py_zeros[i]);
        if (ac_py_decimal(c) != want)
            mismatches++;
        if (want >= 0)
            count++;
    }
    TAP_INT_EQ(mismatches, 0, "ac_py_decimal agrees with Python on every code point");
    TAP_INT_EQ(count, 660, "660 decimal code points");
}

/* Python: s.strip() and s.rstrip() on the UTF-8 text. start/end are byte
 * offsets of the stripped part. */
static void test_strip(void)
{
    static const struct { const char *name; const char *s; size_t len;
                          size_t start, end, rlen; } cases[] = {
        { "empty", S(""), 0, 0, 0 },
        { "ASCII", S("  a b  "), 2, 5, 5 },
        { "only ASCII spaces", S(" \t\n\x0b\x0c\r"), 6, 6, 0 },
        { "IDEOGRAPHIC SPACE both sides", S("\xe3\x80\x80x\xe3\x80\x80"), 3, 4, 4 },
        { "NBSP, EM SPACE, LS, PS", S("\xc2\xa0\xe2\x80\x83x\xe2\x80\xa8\xe2\x80\xa9"), 5, 6, 6 },
        { "0x1C..0x1F", S("\x1c\x1fx\x1c"), 2, 3, 3 },
        { "NEL U+0085", S("\xc2\x85x\xc2\x85"), 2, 3, 3 },
        { "NNBSP and MMSP", S("x\xe2\x80\xaf\xe2\x81\x9f"), 0, 1, 1 },
        { "OGHAM SPACE MARK", S("\xe1\x9a\x80x\xe1\x9a\x80"), 3, 4, 4 },
        { "ZERO WIDTH SPACE is not whitespace", S("x\xe2\x80\x8b"), 0, 4, 4 },
        { "MONGOLIAN VOWEL SEPARATOR is not", S("\xe1\xa0\x8ex"), 0, 4, 4 },
        { "BOM is not", S("\xef\xbb\xbfx"), 0, 4, 4 },
        { "only NBSP", S("\xc2\xa0"), 2, 2, 0 },
        /* Invalid UTF-8 is never whitespace. */
        { "lone A0 byte (Latin-1 NBSP)", S("\xa0x\xa0"), 0, 3, 3 },
        { "lone 85 byte", S(" \x85 "), 1, 2, 2 },
        { "truncated IDEOGRAPHIC SPACE", S("x\xe3\x80"), 0, 3, 3 },
        { "IDEOGRAPHIC SPACE with an extra continuation", S("x\xe3\x80\x80\x80 "), 0, 5, 5 },
        { "continuation then NBSP", S("\x80\xc2\xa0"), 0, 1, 1 },
        { "overlong space C0 A0", S("\xc0\xa0x\xc0\xa0"), 0, 5, 5 },
        { "stray continuations before a space", S("x\x80\x80\x80\x80\xc2\xa0"), 0, 5, 5 },
        { "space, invalid, space", S(" \xff "), 1, 2, 2 },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++) {
        size_t a = 999, b = 999;
        ac_py_strip(cases[i].s, cases[i].len, &a, &b);
        /* Compare the stripped text; an empty result may sit anywhere. */
        TAP_OK(a <= b && b <= cases[i].len && b - a == cases[i].end - cases[i].start &&
               memcmp(cases[i].s + a, cases[i].s + cases[i].start, b - a) == 0,
               "strip %s: [%zu, %zu) want [%zu, %zu)",
               cases[i].name, a, b, cases[i].start, cases[i].end);
        TAP_INT_EQ(ac_py_rstrip_len(cases[i].s, cases[i].len), cases[i].rlen,
                   "rstrip_len %s", cases[i].name);
    }
}

static void test_decimal_value(void)
{
    static const struct { const char *name; const char *s; size_t len; int rc;
                          uint64_t v; } cases[] = {
        { "0001", S("0001"), 0, 1 },
        { "12", S("12"), 0, 12 },
        { "0", S("0"), 0, 0 },
        { "Arabic-Indic 0123", S("\xd9\xa0\xd9\xa1\xd9\xa2\xd9\xa3"), 0, 123 },
        { "fullwidth 42", S("\xef\xbc\x94\xef\xbc\x92"), 0, 42 },
        { "mixed scripts 1 + Arabic-Indic 2", S("1\xd9\xa2"), 0, 12 },
        { "math bold 01", S("\xf0\x9d\x9f\x8e\xf0\x9d\x9f\x8f"), 0, 1 },
        { "max 63-bit", S("9223372036854775807"), 0, UINT64_C(9223372036854775807) },
        { "2^63 overflows", S("9223372036854775808"), -1, 0 },
        { "20 digits overflow", S("99999999999999999999"), -1, 0 },
        { "empty", S(""), -1, 0 },
        { "superscript two", S("\xc2\xb2"), -1, 0 },
        { "digit then superscript", S("1\xc2\xb2"), -1, 0 },
        { "sign", S("+1"), -1, 0 },
        { "space", S(" 1"), -1, 0 },
        { "underscore", S("1_0"), -1, 0 },
        { "hex", S("0x1"), -1, 0 },
        { "invalid byte", S("1\xff"), -1, 0 },
        { "truncated Arabic-Indic", S("1\xd9"), -1, 0 },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++) {
        uint64_t v = 777;
        int rc = ac_py_decimal_value(cases[i].s, cases[i].len, &v);
        TAP_INT_EQ(rc, cases[i].rc, "decimal_value %s: rc", cases[i].name);
        if (cases[i].rc == 0)
            TAP_OK(v == cases[i].v, "decimal_value %s: %llu", cases[i].name,
                   (unsigned long long)v);
    }
}

/* Python int(s): ok = 0 and the value, or -1 for ValueError. */
static void test_int_parse(void)
{
    static const struct { const char *name; const char *s; size_t len; int rc;
                          int64_t v; } cases[] = {
        { "' 2 \\n'", S(" 2 \n"), 0, 2 },
        { "+5", S("+5"), 0, 5 },
        { "-5", S("-5"), 0, -5 },
        { "0", S("0"), 0, 0 },
        { "-0", S("-0"), 0, 0 },
        { "007", S("007"), 0, 7 },
        { "1_0", S("1_0"), 0, 10 },
        { "1_000_000", S("1_000_000"), 0, 1000000 },
        { "0_0", S("0_0"), 0, 0 },
        { "00_1", S("00_1"), 0, 1 },
        { "1__0", S("1__0"), -1, 0 },
        { "_1", S("_1"), -1, 0 },
        { "1_", S("1_"), -1, 0 },
        { "+_1", S("+_1"), -1, 0 },
        { "empty", S(""), -1, 0 },
        { "only spaces", S("   "), -1, 0 },
        { "x", S("x"), -1, 0 },
        { "+", S("+"), -1, 0 },
        { "-", S("-"), -1, 0 },
        { "+ 5", S("+ 5"), -1, 0 },
        { "- 5", S("- 5"), -1, 0 },
        { "1 2", S("1 2"), -1, 0 },
        { "1.0", S("1.0"), -1, 0 },
        { "ASCII whitespace around", S("\t\n\x0b\x0c\r42\r\n"), 0, 42 },
        { "Unicode whitespace around", S("\xe2\x80\x83 7\xe3\x80\x80"), 0, 7 },
        { "NEL and NBSP around", S("\xc2\x85" "3\xc2\xa0"), 0, 3 },
        { "LINE SEPARATOR before", S("\xe2\x80\xa8" "5"), 0, 5 },
        { "OGHAM SPACE MARK before", S("\xe1\x9a\x80" "5"), 0, 5 },
        { "ZERO WIDTH SPACE before", S("\xe2\x80\x8b" "1"), -1, 0 },
        { "LINE SEPARATOR inside", S("1\xe2\x80\xa8" "2"), -1, 0 },
        { "Arabic-Indic 12", S("\xd9\xa1\xd9\xa2"), 0, 12 },
        { "Arabic-Indic 5_6", S("\xd9\xa5_\xd9\xa6"), 0, 56 },
        { "minus Arabic-Indic 5", S("-\xd9\xa5"), 0, -5 },
        { "fullwidth 1_2", S("\xef\xbc\x91_\xef\xbc\x92"), 0, 12 },
        { "1_ fullwidth 2", S("1_\xef\xbc\x92"), 0, 12 },
        { "math bold 01", S("\xf0\x9d\x9f\x8e\xf0\x9d\x9f\x8f"), 0, 1 },
        { "FULLWIDTH HYPHEN-MINUS sign", S("\xef\xbc\x8d" "5"), -1, 0 },
        { "superscript two", S("\xc2\xb2"), -1, 0 },
        { "superscript one", S("\xc2\xb9"), -1, 0 },
        { "circled one", S("\xe2\x91\xa0"), -1, 0 },
        { "invalid byte", S("1\xff"), -1, 0 },
        { "NUL inside", S("1\0" "2"), -1, 0 },
        { "max int64", S("9223372036854775807"), 0, INT64_MAX },
        { "-max int64", S("-9223372036854775807"), 0, -INT64_MAX },
        { "2^63 overflows", S("9223372036854775808"), -1, 0 },
        /* Python accepts -2^63, but pystr.h documents the 63-bit limit. */
        { "-2^63 (63-bit limit)", S("-9223372036854775808"), -1, 0 },
        { "20 digits overflow", S("99999999999999999999"), -1, 0 },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++) {
        int64_t v = 777;
        int rc = ac_py_int_parse(cases[i].s, cases[i].len, &v);
        TAP_INT_EQ(rc, cases[i].rc, "int(%s): rc", cases[i].name);
        if (cases[i].rc == 0)
            TAP_INT_EQ(v, cases[i].v, "int(%s): value", cases[i].name);
    }
}

/* Python's int() strips only ASCII " \t\n\v\f\r" from ASCII input and
 * turns non-ASCII whitespace into spaces first (_PyUnicode_Transform-
 * DecimalAndSpaceToASCII passes code points < 127 through unchanged), so
 * the str.isspace() characters U+001C..U+001F are NOT stripped:
 * int("\x1c3") raises ValueError. */
static void test_int_parse_info_separators(void)
{
    static const struct { const char *name; const char *s; size_t len; } cases[] = {
        { "FS before", S("\x1c" "5") },
        { "GS before", S("\x1d" "5") },
        { "RS before", S("\x1e" "5") },
        { "US before", S("\x1f" "5") },
        { "FS after", S("5\x1c") },
        { "FS and US around", S("\x1c" "3\x1f") },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++) {
        int64_t v = 777;
        TAP_INT_EQ(ac_py_int_parse(cases[i].s, cases[i].len, &v), -1,
                   "int(%s) raises ValueError in Python", cases[i].name);
    }
}

/* str.isalnum(), the rule of task ids a lookup accepts; expected values
 * from python3 (chr(c).isalnum()). */
static void test_isalnum(void)
{
    static const struct { uint32_t cp; int want; } cases[] = {
        { 'a', 1 }, { 'Z', 1 }, { '9', 1 }, { 0xFC, 1 }, { 0xDF, 1 }, { 0x663, 1 },
        { 0xB2, 1 }, { 0xBD, 1 }, { 0x4E00, 1 }, { 0x2160, 1 }, { 0x1D7D8, 1 },
        { '_', 0 }, { '.', 0 }, { '-', 0 }, { ' ', 0 }, { 0xAD, 0 }, { 0x7F, 0 },
        { 0x2028, 0 }, { 0xD800, 0 }, { 0x10FFFF, 0 },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++)
        TAP_INT_EQ(ac_py_isalnum(cases[i].cp), cases[i].want, "isalnum(U+%04X)", (unsigned)cases[i].cp);
}

int main(void)
{
    test_isspace();
    test_isalnum();
    test_decimal();
    test_strip();
    test_decimal_value();
    test_int_parse();
    test_int_parse_info_separators();
    return tap_done();
}
