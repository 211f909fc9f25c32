/* pystr.c - Python str predicates on UTF-8; see include/agentchat/pystr.h.
 * The two tables were generated with Python 3.11 (Unicode 14.0):
 *   zeros:  every code point z with chr(z).isdecimal() and decimal value 0
 *           (each such digit run is exactly z..z+9);
 *   spaces: every code point with chr(c).isspace(). */
#include "agentchat/pystr.h"

#include <errno.h>

#include <stdio.h>
#include <string.h>

#include "agentchat/utf8.h"

static const uint32_t decimal_zeros[] = {
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6,
    0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50, 0xED0,
    0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80,
    0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900,
    0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10, 0x104A0, 0x10D30, 0x11066,
    0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0,
    0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0,
    0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0,
    0x1E950, 0x1FBF0,
};

static const uint32_t space_points[] = {
    0x9, 0xA, 0xB, 0xC, 0xD, 0x1C, 0x1D, 0x1E,
    0x1F, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002,
    0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
    0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

int ac_py_isspace(uint32_t cp)
{
    size_t i;
    if (cp < 0x80)
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
    for (i = 0; i < COUNT(space_points); i++)
        if (space_points[i] == cp)
            return 1;
    return 0;
}

int ac_py_decimal(uint32_t cp)
{
    size_t lo = 0, hi = COUNT(decimal_zeros);
    if (cp < 0x80)
        return cp >= '0' && cp <= '9' ? (int)(cp - '0') : -1;
    /* Binary search for the last zero <= cp. */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (decimal_zeros[mid] <= cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    return cp - decimal_zeros[lo - 1] < 10 ? (int)(cp - decimal_zeros[lo - 1]) : -1;
}

/* Length of the whitespace code point that ends at s[end) (0 if none). */
static size_t trailing_space(const char *s, size_t end)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t back;
    if (end == 0)
        return 0;
    if (p[end - 1] < 0x80)
        return ac_py_isspace(p[end - 1]) ? 1 : 0;
    /* Walk back over continuation bytes to the lead byte (at most 4). */
    for (back = 2; back <= 4 && back <= end; back++) {
        uint32_t cp;
        size_t n;
        if ((p[end - back] & 0xC0) == 0x80)
            continue;
        n = ac_utf8_decode(p + end - back, back, &cp);
        return n == back && ac_py_isspace(cp) ? back : 0;
    }
    return 0;
}

size_t ac_py_rstrip_len(const char *s, size_t len)
{
    size_t n;
    while ((n = trailing_space(s, len)) > 0)
        len -= n;
    return len;
}

void ac_py_strip(const char *s, size_t len, size_t *start, size_t *end)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, e = ac_py_rstrip_len(s, len);
    while (i < e) {
        uint32_t cp;
        size_t n = p[i] < 0x80 ? 1 : ac_utf8_decode(p + i, e - i, &cp);
        if (p[i] < 0x80)
            cp = p[i];
        if (n == 0 || !ac_py_isspace(cp))
            break;
        i += n;
    }
    *start = i;
    *end = e;
}

int ac_py_decimal_value(const char *s, size_t len, uint64_t *value)
{
    const unsigned char *p = (const unsigned char *)s;
    uint64_t v = 0;
    size_t i = 0;
    int over = 0;
    if (len == 0) {
        errno = EINVAL;
        return -1;
    }
    while (i < len) {
        uint32_t cp;
        size_t n;
        int d;
        if (p[i] < 0x80) {
            cp = p[i];
            n = 1;
        } else {
            n = ac_utf8_decode(p + i, len - i, &cp);
            if (n == 0) {
                errno = EINVAL;
                return -1;
            }
        }
        d = ac_py_decimal(cp);
        if (d < 0) {
            errno = EINVAL;
            return -1;
        }
        if (v > (UINT64_C(0x7FFFFFFFFFFFFFFF) - (uint64_t)d) / 10)
            over = 1;       /* keep going: a later non-digit makes it EINVAL */
        else
            v = v * 10 + (uint64_t)d;
        i += n;
    }
    if (over) {
        errno = ERANGE;
        return -1;
    }
    *value = v;
    return 0;
}

/* int() whitespace: Python turns non-ASCII spaces into ' ' and then strips
 * ASCII " \t\n\v\f\r" only, so U+001C..U+001F (str.isspace() though they
 * are) make int() fail. */
static int int_space_at(const unsigned char *p, size_t len, size_t *n)
{
    uint32_t cp;
    if (p[0] < 0x80) {
        *n = 1;
        return p[0] == ' ' || (p[0] >= '\t' && p[0] <= '\r');
    }
    *n = ac_utf8_decode(p, len, &cp);
    return *n > 0 && ac_py_isspace(cp);
}

int ac_py_int_parse(const char *s, size_t len, int64_t *value)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t a = 0, b = len, i, n;
    int neg = 0, prev_digit = 0, any = 0;
    uint64_t v = 0;

    while (a < b && int_space_at(p + a, b - a, &n))
        a += n;
    /* Trailing: step back to each code point's lead byte. */
    while (b > a) {
        size_t lead = b - 1;
        while (lead > a && (p[lead] & 0xC0) == 0x80 && b - lead < 4)
            lead--;
        if (!int_space_at(p + lead, b - lead, &n) || lead + n != b)
            break;
        b = lead;
    }
    i = a;
    if (i < b && (p[i] == '+' || p[i] == '-')) {
        neg = p[i] == '-';
        i++;
    }
    while (i < b) {
        uint32_t cp;
        size_t cn;
        int d;
        if (p[i] == '_') {
            /* '_' only between two digits */
            if (!prev_digit || i + 1 >= b)
                return -1;
            prev_digit = 0;
            i++;
            continue;
        }
        if (p[i] < 0x80) {
            cp = p[i];
            cn = 1;
        } else {
            cn = ac_utf8_decode(p + i, b - i, &cp);
            if (cn == 0)
                return -1;
        }
        d = ac_py_decimal(cp);
        if (d < 0)
            return -1;
        if (v > (UINT64_C(0x7FFFFFFFFFFFFFFF) - (uint64_t)d) / 10)
            return -1;
        v = v * 10 + (uint64_t)d;
        prev_digit = any = 1;
        i += cn;
    }
    if (!any || !prev_digit)
        return -1;
    *value = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

int ac_py_isprintable(uint32_t cp)
{
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad)
        return 0;
    if (cp < 0x7f)
        return 1;
    if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f) ||
        (cp >= 0x205f && cp <= 0x206f) || cp == 0x3000 || cp == 0xfeff ||
        (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0x600 && cp <= 0x605) || cp == 0x61c ||
        cp == 0x6dd || cp == 0x70f || cp == 0x180e || (cp >= 0xd800 && cp <= 0xf8ff) ||
        cp >= 0xf0000 || (cp >= 0xe0000 && cp <= 0xe0fff))
        return 0;
    return 1;
}

char *ac_py_repr(const char *s, char *out, size_t outsz)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s), i = 0, o = 0;
    char quote = '\'';
    char esc[16];

    if (outsz < 3) {
        if (outsz)
            out[0] = '\0';
        return out;
    }
    if (strchr(s, '\'') && !strchr(s, '"'))
        quote = '"';
    out[o++] = quote;
    while (i < len) {
        uint32_t cp;
        size_t n, el;
        if (p[i] < 0x80) {
            cp = p[i];
            n = 1;
        } else {
            n = ac_utf8_decode(p + i, len - i, &cp);
            if (n == 0) {
                cp = 0xdc00 + p[i];
                n = 1;
            }
        }
        if (cp == '\\' || cp == (uint32_t)quote)
            el = (size_t)snprintf(esc, sizeof esc, "\\%c", (char)cp);
        else if (cp == '\t')
            el = (size_t)snprintf(esc, sizeof esc, "\\t");
        else if (cp == '\n')
            el = (size_t)snprintf(esc, sizeof esc, "\\n");
        else if (cp == '\r')
            el = (size_t)snprintf(esc, sizeof esc, "\\r");
        else if (cp >= 0xdc80 && cp <= 0xdcff && n == 1 && p[i] >= 0x80)
            el = (size_t)snprintf(esc, sizeof esc, "\\udc%02x", (unsigned)p[i]);
        else if (!ac_py_isprintable(cp))
            el = (size_t)(cp < 0x100 ? snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp)
                          : cp < 0x10000 ? snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp)
                          : snprintf(esc, sizeof esc, "\\U%08x", (unsigned)cp));
        else {
            memcpy(esc, p + i, n);
            el = n;
        }
        if (o + el + 2 > outsz)
            break;
        memcpy(out + o, esc, el);
        o += el;
        i += n;
    }
    out[o++] = quote;
    out[o] = '\0';
    return out;
}
