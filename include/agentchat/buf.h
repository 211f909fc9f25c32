/*
 * buf.h - a growable byte buffer (git's strbuf, reduced).
 *
 *     struct ac_buf b = AC_BUF_INIT;
 *     ac_buf_puts(&b, "x"); ac_buf_printf(&b, "%d", 3);
 *     if (b.oom) ...;               // any allocation failure is sticky
 *     use(b.data, b.len);           // always NUL-terminated when !oom
 *     ac_buf_free(&b);
 */
#ifndef AGENTCHAT_BUF_H
#define AGENTCHAT_BUF_H

#include <stddef.h>

struct ac_buf {
    char *data;
    size_t len;
    size_t cap;
    int oom;
};

#define AC_BUF_INIT { NULL, 0, 0, 0 }

void ac_buf_add(struct ac_buf *b, const void *data, size_t len);
void ac_buf_puts(struct ac_buf *b, const char *s);
void ac_buf_putc(struct ac_buf *b, char c);
void ac_buf_printf(struct ac_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Hand the data to the caller (malloc'ed, NUL-terminated) and reset b.
 * Returns NULL if an allocation failed. */
char *ac_buf_detach(struct ac_buf *b, size_t *len);
void ac_buf_free(struct ac_buf *b);

/* Growable arrays: make room for `need` elements of `elem` bytes in the
 * malloc'ed array *array (a `T **`), whose capacity is *cap (doubled from
 * 16). 0, or -1 when out of memory (the array is unchanged).
 *     if (ac_grow(&v, &cap, n + 1, sizeof *v) == -1) oom; v[n++] = x; */
int ac_grow(void *array, size_t *cap, size_t need, size_t elem);

#endif
