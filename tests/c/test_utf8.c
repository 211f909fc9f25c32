/*
 * test_utf8.c - strict UTF-8 decoding (utf8.h) and ac_text_from_file.
 *
 * Expected values come from Python 3.11: bytes.decode("utf-8") for
 * validity and io.TextIOWrapper(..., errors="replace", newline=None) for
 * the read_text() view. The exhaustive checks count the valid sequences of
 * each length, which is independent of how the decoder is written.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/utf8.h"
#include "tap.h"

struct decode_case {
    const char *name;
    const char *bytes;
    size_t len;
    size_t want_n;          /* 0: invalid */
    uint32_t want_cp;       /* code point, or the first byte when invalid */
};

#define S(lit) lit, sizeof(lit) - 1

static const struct decode_case decode_cases[] = {
    /* every length, both ends of each range */
    { "NUL", S("\x00"), 1, 0x00 },
    { "ASCII A", S("A"), 1, 0x41 },
    { "DEL", S("\x7f"), 1, 0x7f },
    { "2-byte min U+0080", S("\xc2\x80"), 2, 0x80 },
    { "2-byte e-acute", S("\xc3\xa9"), 2, 0xe9 },
    { "2-byte max U+07FF", S("\xdf\xbf"), 2, 0x7ff },
    { "3-byte min U+0800", S("\xe0\xa0\x80"), 3, 0x800 },
    { "3-byte euro", S("\xe2\x82\xac"), 3, 0x20ac },
    { "3-byte U+D7FF (before surrogates)", S("\xed\x9f\xbf"), 3, 0xd7ff },
    { "3-byte U+E000 (after surrogates)", S("\xee\x80\x80"), 3, 0xe000 },
    { "3-byte U+FFFD", S("\xef\xbf\xbd"), 3, 0xfffd },
    { "3-byte max U+FFFF", S("\xef\xbf\xbf"), 3, 0xffff },
    { "4-byte min U+10000", S("\xf0\x90\x80\x80"), 4, 0x10000 },
    { "4-byte emoji U+1F600", S("\xf0\x9f\x98\x80"), 4, 0x1f600 },
    { "4-byte max U+10FFFF", S("\xf4\x8f\xbf\xbf"), 4, 0x10ffff },
    { "decodes only the first of two", S("\xc3\xa9\xc3\xa9"), 2, 0xe9 },
    /* overlong forms */
    { "overlong C0 80", S("\xc0\x80"), 0, 0xc0 },
    { "overlong C1 BF", S("\xc1\xbf"), 0, 0xc1 },
    { "overlong E0 80 80", S("\xe0\x80\x80"), 0, 0xe0 },
    { "overlong E0 9F BF (U+07FF)", S("\xe0\x9f\xbf"), 0, 0xe0 },
    { "overlong F0 80 80 80", S("\xf0\x80\x80\x80"), 0, 0xf0 },
    { "overlong F0 8F BF BF (U+FFFF)", S("\xf0\x8f\xbf\xbf"), 0, 0xf0 },
    /* surrogates */
    { "surrogate U+D800", S("\xed\xa0\x80"), 0, 0xed },
    { "surrogate U+DBFF", S("\xed\xaf\xbf"), 0, 0xed },
    { "surrogate U+DC00", S("\xed\xb0\x80"), 0, 0xed },
    { "surrogate U+DFFF", S("\xed\xbf\xbf"), 0, 0xed },
    /* above U+10FFFF and impossible lead bytes */
    { "U+110000 (F4 90 80 80)", S("\xf4\x90\x80\x80"), 0, 0xf4 },
    { "F5 lead", S("\xf5\x80\x80\x80"), 0, 0xf5 },
    { "F7 BF BF BF", S("\xf7\xbf\xbf\xbf"), 0, 0xf7 },
    { "5-byte form F8", S("\xf8\x88\x80\x80\x80"), 0, 0xf8 },
    { "6-byte form FC", S("\xfc\x84\x80\x80\x80\x80"), 0, 0xfc },
    { "FE", S("\xfe"), 0, 0xfe },
    { "FF", S("\xff"), 0, 0xff },
    /* lone continuation bytes */
    { "continuation 80", S("\x80"), 0, 0x80 },
    { "continuation BF", S("\xbf"), 0, 0xbf },
    /* truncated sequences (every length) */
    { "truncated 2-byte", S("\xc3"), 0, 0xc3 },
    { "truncated 3-byte after 1", S("\xe2"), 0, 0xe2 },
    { "truncated 3-byte after 2", S("\xe2\x82"), 0, 0xe2 },
    { "truncated 4-byte after 1", S("\xf0"), 0, 0xf0 },
    { "truncated 4-byte after 2", S("\xf0\x9f"), 0, 0xf0 },
    { "truncated 4-byte after 3", S("\xf0\x9f\x98"), 0, 0xf0 },
    /* a non-continuation byte inside a sequence */
    { "2-byte then ASCII", S("\xc3\x41"), 0, 0xc3 },
    { "3-byte broken at 2", S("\xe2\x28\xa1"), 0, 0xe2 },
    { "3-byte broken at 3", S("\xe2\x82\x28"), 0, 0xe2 },
    { "4-byte broken at 4", S("\xf0\x9f\x98\x41"), 0, 0xf0 },
    { "2-byte then another lead", S("\xc3\xc3\xa9"), 0, 0xc3 },
};

static void test_decode_table(void)
{
    size_t i;
    for (i = 0; i < sizeof decode_cases / sizeof decode_cases[0]; i++) {
        const struct decode_case *c = &decode_cases[i];
        uint32_t cp = 0xdeadbeef;
        size_t n = ac_utf8_decode((const unsigned char *)c->bytes, c->len, &cp);
        TAP_INT_EQ(n, c->want_n, "decode %s: length", c->name);
        TAP_INT_EQ(cp, c->want_cp, "decode %s: code point", c->name);
        /* A one-code-point buffer is valid exactly when it decodes whole. */
        if (c->want_n == c->len || c->want_n == 0)
            TAP_INT_EQ(ac_utf8_valid(c->bytes, c->len), c->want_n != 0,
                       "valid %s", c->name);
    }
}

/* The length limit is respected: a valid sequence cut by `len` is invalid. */
static void test_decode_len_limit(void)
{
    static const struct { const char *b; size_t full; } seqs[] = {
        { "\xc3\xa9", 2 }, { "\xe2\x82\xac", 3 }, { "\xf0\x9f\x98\x80", 4 },
    };
    size_t i, len;
    for (i = 0; i < 3; i++) {
        for (len = 1; len < seqs[i].full; len++) {
            uint32_t cp;
            TAP_INT_EQ(ac_utf8_decode((const unsigned char *)seqs[i].b, len, &cp), 0,
                       "%zu-byte sequence given only %zu bytes is truncated", seqs[i].full, len);
        }
    }
}

/* Count the valid sequences of each length over every lead byte and every
 * continuation byte combination: 128 one-byte, 0x800-0x80 two-byte,
 * 0x10000-0x800-0x800 (surrogates) three-byte and 0x100000 four-byte. */
static void test_decode_exhaustive(void)
{
    unsigned char b[4];
    unsigned a, c1, c2, c3;
    long n1 = 0, n2 = 0, n3 = 0, n4 = 0, wrong = 0;
    uint32_t cp;

    for (a = 0; a < 256; a++) {
        b[0] = (unsigned char)a;
        if (ac_utf8_decode(b, 1, &cp) == 1)
            n1++;
        for (c1 = 0x80; c1 < 0xc0; c1++) {
            b[1] = (unsigned char)c1;
            if (ac_utf8_decode(b, 2, &cp) == 2)
                n2++;
            if (a < 0xe0)
                continue;
            for (c2 = 0x80; c2 < 0xc0; c2++) {
                b[2] = (unsigned char)c2;
                if (ac_utf8_decode(b, 3, &cp) == 3)
                    n3++;
                if (a < 0xf0)
                    continue;
                for (c3 = 0x80; c3 < 0xc0; c3++) {
                    size_t n;
                    b[3] = (unsigned char)c3;
                    n = ac_utf8_decode(b, 4, &cp);
                    if (n == 4)
                        n4++;
                    else if (n != 0)
                        wrong++;
                }
            }
        }
    }
    TAP_INT_EQ(n1, 128, "exactly 128 valid 1-byte sequences");
    TAP_INT_EQ(n2, 0x800 - 0x80, "exactly 1920 valid 2-byte sequences");
    TAP_INT_EQ(n3, 0x10000 - 0x800 - 0x800, "exactly 61440 valid 3-byte sequences");
    TAP_INT_EQ(n4, 0x100000, "exactly 1048576 valid 4-byte sequences");
    TAP_INT_EQ(wrong, 0, "4-byte buffers never decode to another length");
}

/* Every scalar value survives encode then decode; surrogates do not. */
static void test_roundtrip_all(void)
{
    uint32_t c, cp;
    long bad = 0, surrogate_ok = 0;
    char buf[4];
    for (c = 0; c <= 0x10ffff; c++) {
        size_t n = ac_utf8_encode(c, buf);
        size_t m = ac_utf8_decode((const unsigned char *)buf, n, &cp);
        if (c >= 0xd800 && c <= 0xdfff) {
            if (m != 0)
                surrogate_ok++;
            continue;
        }
        if (m != n || cp != c || n != (c < 0x80 ? 1u : c < 0x800 ? 2u : c < 0x10000 ? 3u : 4u))
            bad++;
    }
    TAP_INT_EQ(bad, 0, "encode/decode round trip of every scalar value");
    TAP_INT_EQ(surrogate_ok, 0, "no encoded surrogate decodes");
}

static void test_valid_buffers(void)
{
    static const struct { const char *name; const char *b; size_t len; int want; } cases[] = {
        { "empty", S(""), 1 },
        { "ASCII with NUL", S("a\0b"), 1 },
        { "mixed lengths", S("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z"), 1 },
        { "valid then truncated", S("abc\xe2\x82"), 0 },
        { "valid then lone continuation", S("abc\x80"), 0 },
        { "surrogate inside text", S("a\xed\xa0\x80z"), 0 },
        { "CESU-8 pair (two surrogates)", S("\xed\xa0\xbd\xed\xb8\x80"), 0 },
        { "overlong slash", S("\xc0\xaf"), 0 },
        { "Latin-1 text", S("caf\xe9"), 0 },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        TAP_INT_EQ(ac_utf8_valid(cases[i].b, cases[i].len), cases[i].want,
                   "ac_utf8_valid: %s", cases[i].name);
}

/* ac_text_from_file against Python's read_text() view (errors="replace"
 * where Python agrees byte for byte). */
static void test_text_from_file(void)
{
    static const struct { const char *name; const char *in; size_t inlen;
                          const char *want; size_t wantlen; } cases[] = {
        { "empty", S(""), S("") },
        { "plain", S("plain"), S("plain") },
        { "CRLF", S("a\r\nb"), S("a\nb") },
        { "lone CR", S("a\rb"), S("a\nb") },
        { "CR CRLF", S("a\r\r\nb"), S("a\n\nb") },
        { "CR alone", S("\r"), S("\n") },
        { "CRLF alone", S("\r\n"), S("\n") },
        { "LF CR is two newlines", S("\n\r"), S("\n\n") },
        { "two CRLF at the end", S("x\r\n\r\n"), S("x\n\n") },
        { "two CR", S("\r\r"), S("\n\n") },
        { "UTF-8 kept", S("caf\xc3\xa9\r\n"), S("caf\xc3\xa9\n") },
        { "emoji then CR", S("\xf0\x9f\x98\x80\r"), S("\xf0\x9f\x98\x80\n") },
        { "NUL kept", S("a\0b"), S("a\0b") },
        { "lone continuation", S("a\x80" "b"), S("a\xef\xbf\xbd" "b") },
        { "FF", S("\xff"), S("\xef\xbf\xbd") },
        { "FE FE", S("\xfe\xfe"), S("\xef\xbf\xbd\xef\xbf\xbd") },
        { "overlong C0 80", S("\xc0\x80"), S("\xef\xbf\xbd\xef\xbf\xbd") },
        { "surrogate", S("\xed\xa0\x80x"), S("\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx") },
        { "above U+10FFFF", S("\xf4\x90\x80\x80"),
          S("\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd") },
        { "truncated at the end", S("\xc3"), S("\xef\xbf\xbd") },
        { "Latin-1 e-acute then CRLF", S("caf\xe9\r\n"), S("caf\xef\xbf\xbd\n") },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t outlen = 12345;
        char *out = ac_text_from_file(cases[i].in, cases[i].inlen, &outlen);
        TAP_OK(out && outlen == cases[i].wantlen && memcmp(out, cases[i].want, outlen) == 0 &&
               out[outlen] == '\0', "ac_text_from_file: %s", cases[i].name);
        free(out);
    }
}

/* Truncated multi-byte sequences: Python's read_text() raises, so only the
 * properties are fixed here: the result is valid UTF-8, holds U+FFFD and
 * keeps every byte that follows (newline translation included). */
static void test_text_truncated(void)
{
    static const struct { const char *name; const char *in; size_t inlen;
                          const char *tail; } cases[] = {
        { "E2 82 then CRLF", S("\xe2\x82\r\n"), "\n" },
        { "F0 9F 98 then x", S("\xf0\x9f\x98x"), "x" },
        { "E2 82 then euro", S("\xe2\x82\xe2\x82\xac"), "\xe2\x82\xac" },
        { "C3 then C3 A9", S("\xc3\xc3\xa9"), "\xc3\xa9" },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t outlen = 0, tl = strlen(cases[i].tail);
        char *out = ac_text_from_file(cases[i].in, cases[i].inlen, &outlen);
        TAP_OK(out && ac_utf8_valid(out, outlen) && strstr(out, "\xef\xbf\xbd") == out &&
               outlen >= tl + 3 && memcmp(out + outlen - tl, cases[i].tail, tl) == 0,
               "ac_text_from_file: %s gives U+FFFD and keeps the rest", cases[i].name);
        free(out);
    }
}

/* ac_utf8_py_error against str(UnicodeDecodeError) of Python 3.11's
 * bytes.decode("utf-8"): the first ill-formed sequence, its reason, and
 * "byte 0xNN in position P" for one byte or "bytes in position P-Q". */
static void test_py_error(void)
{
    static const struct { const char *name; const char *in; size_t inlen; size_t pos;
                          const char *want; } cases[] = {
        { "FF after ASCII", S("ab\xff"), 2,
          "'utf-8' codec can't decode byte 0xff in position 2: invalid start byte" },
        { "lone continuation", S("\x80"), 0,
          "'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte" },
        { "overlong lead C0", S("\xc0\x80"), 0,
          "'utf-8' codec can't decode byte 0xc0 in position 0: invalid start byte" },
        { "2-byte, bad second", S("x\xc3("), 1,
          "'utf-8' codec can't decode byte 0xc3 in position 1: invalid continuation byte" },
        { "3-byte, bad third", S("\xe2\x82("), 0,
          "'utf-8' codec can't decode bytes in position 0-1: invalid continuation byte" },
        { "3-byte, bad second", S("\xe2(\xa1"), 0,
          "'utf-8' codec can't decode byte 0xe2 in position 0: invalid continuation byte" },
        { "overlong E0 80 80", S("\xe0\x80\x80"), 0,
          "'utf-8' codec can't decode byte 0xe0 in position 0: invalid continuation byte" },
        { "surrogate ED A0 80", S("\xed\xa0\x80"), 0,
          "'utf-8' codec can't decode byte 0xed in position 0: invalid continuation byte" },
        { "4-byte, bad fourth", S("\xf0\x9f\x98("), 0,
          "'utf-8' codec can't decode bytes in position 0-2: invalid continuation byte" },
        { "above U+10FFFF", S("\xf4\x90\x80\x80"), 0,
          "'utf-8' codec can't decode byte 0xf4 in position 0: invalid continuation byte" },
        { "cut 2-byte at the end", S("abc\xc3"), 3,
          "'utf-8' codec can't decode byte 0xc3 in position 3: unexpected end of data" },
        { "cut 3-byte at the end", S("abc\xe2\x82"), 3,
          "'utf-8' codec can't decode bytes in position 3-4: unexpected end of data" },
        { "cut 4-byte at the end", S("\xf0\x9f\x98"), 0,
          "'utf-8' codec can't decode bytes in position 0-2: unexpected end of data" },
        { "Latin-1 e-acute", S("caf\xe9 ok"), 3,
          "'utf-8' codec can't decode byte 0xe9 in position 3: invalid continuation byte" },
        { "FE after a good 2-byte", S("ok\xc3\xa9\xfe"), 4,
          "'utf-8' codec can't decode byte 0xfe in position 4: invalid start byte" },
    };
    size_t i, pos;
    char buf[160];
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pos = 999;
        strcpy(buf, "?");
        TAP_INT_EQ(ac_utf8_py_error(cases[i].in, cases[i].inlen, 0, &pos, buf, sizeof buf), 1,
                   "ac_utf8_py_error: %s is an error", cases[i].name);
        TAP_INT_EQ((int)pos, (int)cases[i].pos, "ac_utf8_py_error: %s position", cases[i].name);
        TAP_STR_EQ(buf, cases[i].want, "ac_utf8_py_error: %s text", cases[i].name);
    }
    TAP_INT_EQ(ac_utf8_py_error(S("caf\xc3\xa9 \xf0\x9f\x98\x80"), 0, NULL, buf, sizeof buf), 0,
               "ac_utf8_py_error: valid text is no error");
    TAP_INT_EQ(ac_utf8_py_error(S("abc\xe2\x82"), 1, NULL, NULL, 0), 0,
               "ac_utf8_py_error: a prefix cut inside a sequence is no error");
    TAP_INT_EQ(ac_utf8_py_error(S("ab\xff\xe2\x82"), 1, &pos, NULL, 0), 1,
               "ac_utf8_py_error: a prefix with a bad byte before its cut end is one");
    TAP_INT_EQ((int)pos, 2, "ac_utf8_py_error: ... at that byte");
    TAP_INT_EQ(ac_utf8_py_error(S("\xe0\x80"), 1, NULL, NULL, 0), 1,
               "ac_utf8_py_error: a cut sequence that cannot continue is an error in a prefix too");
    ac_utf8_py_error(S("x\xff"), 0, NULL, buf, 20);
    TAP_INT_EQ((int)strlen(buf), 19, "ac_utf8_py_error: the text is cut to the buffer");
}

/* ac_utf8_py_escape_error against Python 3.11:
 * b.decode("utf-8", "surrogateescape").encode("utf-8") and its
 * UnicodeEncodeError (positions in characters, a run reported whole). */
static void test_py_escape_error(void)
{
    static const struct { const char *name; const char *in; size_t inlen; const char *want; } cases[] = {
        { "one bad byte", S("bad \xff utf8\n"),
          "'utf-8' codec can't encode character '\\udcff' in position 4: surrogates not allowed" },
        { "two adjacent bad bytes", S("bad \xff\xfe x"),
          "'utf-8' codec can't encode characters in position 4-5: surrogates not allowed" },
        { "after a 2-byte character", S("\xc3\xa9t\xe9"),
          "'utf-8' codec can't encode character '\\udce9' in position 2: surrogates not allowed" },
        { "cut sequence at the end", S("a\xe2\x82"),
          "'utf-8' codec can't encode characters in position 1-2: surrogates not allowed" },
        { "cut sequence then ASCII", S("\xe2\x82("),
          "'utf-8' codec can't encode characters in position 0-1: surrogates not allowed" },
        { "after a 4-byte character, a surrogate's bytes", S("\xf0\x9f\x98\x80 \xed\xa0\x80"),
          "'utf-8' codec can't encode characters in position 2-4: surrogates not allowed" },
        { "bad lead byte before a good character", S("x\xc3\xc3\xa9"),
          "'utf-8' codec can't encode character '\\udcc3' in position 1: surrogates not allowed" },
    };
    size_t i;
    char buf[160];
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        strcpy(buf, "?");
        TAP_INT_EQ(ac_utf8_py_escape_error(cases[i].in, cases[i].inlen, buf, sizeof buf), 1,
                   "ac_utf8_py_escape_error: %s is an error", cases[i].name);
        TAP_STR_EQ(buf, cases[i].want, "ac_utf8_py_escape_error: %s text", cases[i].name);
    }
    TAP_INT_EQ(ac_utf8_py_escape_error(S("ok \xc3\xa9\0nul"), buf, sizeof buf), 0,
               "ac_utf8_py_escape_error: valid text (NUL included) is no error");
}

int main(void)
{
    test_decode_table();
    test_decode_len_limit();
    test_decode_exhaustive();
    test_roundtrip_all();
    test_valid_buffers();
    test_text_from_file();
    test_text_truncated();
    test_py_error();
    test_py_escape_error();
    return tap_done();
}
