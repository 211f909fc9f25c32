/* codec.c - base64 and uuid4; see include/agentchat/codec.h. */
#include "agentchat/codec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *ac_b64_encode(const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t i, o = 0;
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    for (i = 0; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = B64[v >> 18];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = B64[(v >> 6) & 63];
        out[o++] = B64[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        out[o++] = B64[v >> 18];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = i + 1 < len ? B64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return out;
}

static int b64_value(char c)
{
    const char *p = c ? strchr(B64, c) : NULL;
    return p ? (int)(p - B64) : -1;
}

char *ac_b64_decode(const char *text, size_t len, size_t *outlen)
{
    size_t i, o = 0, pad = 0;
    char *out;
    /* Python's b64decode(validate=True) also takes one or two '=' after a
     * complete last group ("QUJD=" is b"ABC"): decode without them. */
    while (pad < 2 && len > pad && text[len - 1 - pad] == '=')
        pad++;
    if (pad && len > pad && (len - pad) % 4 == 0)
        len -= pad;
    pad = 0;
    if (len % 4 != 0) {
        errno = EINVAL;
        return NULL;
    }
    if (len >= 1 && text[len - 1] == '=')
        pad++;
    if (len >= 2 && text[len - 2] == '=')
        pad++;
    out = malloc(len / 4 * 3 + 1);
    if (!out)
        return NULL;
    for (i = 0; i < len; i += 4) {
        int v[4], k;
        uint32_t w;
        for (k = 0; k < 4; k++) {
            int last_group = i + 4 == len;
            if (last_group && text[i + k] == '=' && k >= 4 - (int)pad) {
                v[k] = 0;
                continue;
            }
            v[k] = b64_value(text[i + k]);
            if (v[k] < 0) {
                free(out);
                errno = EINVAL;
                return NULL;
            }
        }
        w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (char)(w >> 16);
        if (!(i + 4 == len && pad >= 2))
            out[o++] = (char)(w >> 8);
        if (!(i + 4 == len && pad >= 1))
            out[o++] = (char)w;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

int ac_uuid4_hex(char out[33])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    size_t got = 0;
    int i;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)n;
    }
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);   /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);   /* RFC 4122 variant */
    for (i = 0; i < 16; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[32] = '\0';
    return 0;
}
