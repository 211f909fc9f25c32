/* buf.c - growable byte buffer; see include/agentchat/buf.h. */
#include "agentchat/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(struct ac_buf *b, size_t extra)
{
    size_t need, ncap;
    char *nd;
    if (b->oom)
        return -1;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    ncap = b->cap ? b->cap : 64;
    while (ncap < need)
        ncap *= 2;
    nd = realloc(b->data, ncap);
    if (!nd) {
        b->oom = 1;
        return -1;
    }
    b->data = nd;
    b->cap = ncap;
    return 0;
}

void ac_buf_add(struct ac_buf *b, const void *data, size_t len)
{
    if (grow(b, len) == -1)
        return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void ac_buf_puts(struct ac_buf *b, const char *s)
{
    ac_buf_add(b, s, strlen(s));
}

void ac_buf_putc(struct ac_buf *b, char c)
{
    ac_buf_add(b, &c, 1);
}

void ac_buf_printf(struct ac_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    char small[128];

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        ac_buf_add(b, small, (size_t)n);
        return;
    }
    if (grow(b, (size_t)n) == -1)
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *ac_buf_detach(struct ac_buf *b, size_t *len)
{
    char *d;
    if (b->oom) {
        ac_buf_free(b);
        return NULL;
    }
    if (!b->data)
        ac_buf_add(b, "", 0);
    if (b->oom) {
        ac_buf_free(b);
        return NULL;
    }
    d = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

void ac_buf_free(struct ac_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

int ac_grow(void *array, size_t *cap, size_t need, size_t elem)
{
    void **v = array;
    size_t ncap = *cap ? *cap : 16;
    void *nv;
    if (need <= *cap)
        return 0;
    while (ncap < need)
        ncap *= 2;
    if (ncap > (size_t)-1 / elem || !(nv = realloc(*v, ncap * elem)))
        return -1;
    *v = nv;
    *cap = ncap;
    return 0;
}
