/* utf8.c - strict UTF-8 decoding; see include/agentchat/utf8.h. */
#include "agentchat/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ac_utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
    unsigned char c = s[0];
    uint32_t v;
    size_t n, i;

    *cp = c;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        v = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        v = c & 0x07;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    /* Overlong, surrogate and out-of-range forms are invalid. */
    if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

/* The length of the run of ASCII bytes that starts p[0..len), eight bytes
 * at a time: messages are mostly ASCII, and read checks and copies every
 * byte of each one it prints. */
static size_t ascii_run(const unsigned char *p, size_t len)
{
    size_t i = 0;
    uint64_t w;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, p + i, 8);
        if (w & UINT64_C(0x8080808080808080))
            break;
    }
    while (i < len && p[i] < 0x80)
        i++;
    return i;
}

int ac_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n;
        if (p[i] < 0x80) {
            i += ascii_run(p + i, len - i);
            continue;
        }
        n = ac_utf8_decode(p + i, len - i, &cp);
        if (n == 0)
            return 0;
        i += n;
    }
    return 1;
}

size_t ac_utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the "maximal subpart" of an ill-formed sequence at s (Unicode
 * 3.9 D93b; what Python's errors="replace" turns into one U+FFFD): the lead
 * byte plus the continuation bytes that could still have completed it. */
static size_t maximal_subpart(const unsigned char *s, size_t len)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need, i = 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 1;
    }
    if (i < len && s[i] >= lo && s[i] <= hi) {
        i++;
        while (i < need && i < len && (s[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

char *ac_text_from_file(const char *s, size_t len, size_t *outlen)
{
    const unsigned char *p = (const unsigned char *)s;
    /* Worst case every byte becomes U+FFFD (3 bytes). */
    char *out = malloc(len * 3 + 1);
    size_t i = 0, o = 0;

    if (!out)
        return NULL;
    while (i < len) {
        unsigned char c = p[i];
        if (c == '\r') {
            out[o++] = '\n';
            i += (i + 1 < len && p[i + 1] == '\n') ? 2 : 1;
        } else if (c < 0x80) {
            /* Copy the ASCII run up to the next '\r' in one go. */
            size_t run = ascii_run(p + i, len - i);
            const unsigned char *cr = memchr(p + i, '\r', run);
            if (cr)
                run = (size_t)(cr - (p + i));
            memcpy(out + o, p + i, run);
            o += run;
            i += run;
        } else {
            uint32_t cp;
            size_t n = ac_utf8_decode(p + i, len - i, &cp);
            if (n == 0) {
                memcpy(out + o, "\xEF\xBF\xBD", 3);
                o += 3;
                i += maximal_subpart(p + i, len - i);
            } else {
                memcpy(out + o, p + i, n);
                o += n;
                i += n;
            }
        }
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

int ac_utf8_py_error(const char *s, size_t len, int more, size_t *pos,
                     char *buf, size_t bufsize)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, span;
    const char *why;

    while (i < len) {
        uint32_t cp;
        size_t n = p[i] < 0x80 ? ascii_run(p + i, len - i) : ac_utf8_decode(p + i, len - i, &cp);
        if (n == 0)
            break;
        i += n;
    }
    if (i == len)
        return 0;
    /* The ill-formed part is the maximal subpart (what one U+FFFD would
     * replace): a bad lead byte alone, else the lead byte and the
     * continuation bytes that fitted, either cut by the end of the data
     * or followed by a byte that cannot continue it. */
    span = maximal_subpart(p + i, len - i);
    if (!(p[i] >= 0xC2 && p[i] <= 0xF4)) {
        why = "invalid start byte";
    } else if (i + span == len) {
        if (more)
            return 0;
        why = "unexpected end of data";
    } else {
        why = "invalid continuation byte";
    }
    if (pos)
        *pos = i;
    if (buf && bufsize) {
        if (span == 1)
            snprintf(buf, bufsize, "'utf-8' codec can't decode byte 0x%02x in position %zu: %s",
                     p[i], i, why);
        else
            snprintf(buf, bufsize, "'utf-8' codec can't decode bytes in position %zu-%zu: %s",
                     i, i + span - 1, why);
    }
    return 1;
}

int ac_utf8_py_escape_error(const char *s, size_t len, char *buf, size_t bufsize)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, chars = 0, start, run = 0;

    while (i < len) {
        uint32_t cp;
        size_t n = p[i] < 0x80 ? 1 : ac_utf8_decode(p + i, len - i, &cp);
        if (n == 0)
            break;
        i += n;
        chars++;
    }
    if (i == len)
        return 0;
    /* Every byte of each adjacent ill-formed subpart is one surrogate. */
    start = i;
    while (i < len) {
        uint32_t cp;
        size_t n;
        if (p[i] < 0x80 || ac_utf8_decode(p + i, len - i, &cp) != 0)
            break;
        n = maximal_subpart(p + i, len - i);
        i += n;
        run += n;
    }
    if (buf && bufsize) {
        if (run == 1)
            snprintf(buf, bufsize, "'utf-8' codec can't encode character '\\u%04x' in position %zu: "
                     "surrogates not allowed", 0xDC00u + p[start], chars);
        else
            snprintf(buf, bufsize, "'utf-8' codec can't encode characters in position %zu-%zu: "
                     "surrogates not allowed", chars, chars + run - 1);
    }
    return 1;
}

/* Unicode category Cc: C0, DEL and C1. Bytes that are not UTF-8 count too:
 * Python sees them as lone surrogates (surrogateescape), which it refuses
 * with the same messages. */
int ac_has_control(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s), i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n;
        if (p[i] < 0x80) {
            if (p[i] < 0x20 || p[i] == 0x7f)
                return 1;
            i++;
            continue;
        }
        n = ac_utf8_decode(p + i, len - i, &cp);
        if (n == 0 || (cp >= 0x80 && cp <= 0x9f))
            return 1;
        i += n;
    }
    return 0;
}

size_t ac_utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    return ac_utf8_decode(s, len, cp);
}
