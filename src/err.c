/* err.c - filling struct ac_err; see include/agentchat/err.h. */
#include "agentchat/err.h"

#include "agentchat/utf8.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Fill *err from a va_list (the one place that does). */
static void vset(struct ac_err *err, int exit_code, const char *code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static void vset(struct ac_err *err, int exit_code, const char *code, const char *fmt, va_list ap)
{
    err->code = code;
    err->exit_code = exit_code;
    err->sys_errno = 0;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int ac_err_set(struct ac_err *err, int exit_code, const char *code,
               const char *fmt, ...)
{
    int saved = errno;
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vset(err, exit_code, code, fmt, ap);
        va_end(ap);
    }
    errno = saved;
    return -1;
}

int ac_err_exit_for(const char *code)
{
    /* docs/format.md 2.5: the code families of the task board, leases and
     * events, and usage-like outcomes, exit 2; so do the bad conditions of
     * `wait --for` (WAIT_*) and of status keys (STATUS_*, events too). */
    static const char *const prefix2[] = { "TASK_", "LEASE_", "EVENT_", "WAIT_", "STATUS_" };
    static const struct {
        const char *code;
        int exit_code;
    } exact[] = {
        { "USAGE", AC_EXIT_USAGE },
        { "ETIMEDOUT", AC_EXIT_USAGE },
        { "RECEIPT_TIMEOUT", AC_EXIT_USAGE },
        { "CLAIM_LOST", AC_EXIT_CLAIM_LOST },
        { "INTERRUPTED", AC_EXIT_INTERRUPTED },
    };
    size_t i;
    if (!code)
        return AC_EXIT_GENERAL;
    for (i = 0; i < sizeof prefix2 / sizeof prefix2[0]; i++)
        if (strncmp(code, prefix2[i], strlen(prefix2[i])) == 0)
            return AC_EXIT_USAGE;
    for (i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(code, exact[i].code) == 0)
            return exact[i].exit_code;
    return AC_EXIT_GENERAL;
}

int ac_err_code(struct ac_err *err, const char *code, const char *fmt, ...)
{
    int saved = errno;
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vset(err, ac_err_exit_for(code), code, fmt, ap);
        va_end(ap);
    }
    errno = saved;
    return -1;
}

int ac_err_sys(struct ac_err *err, int errnum, const char *code,
               const char *fmt, ...)
{
    int saved = errno;
    if (err) {
        va_list ap;
        size_t n;
        va_start(ap, fmt);
        vset(err, AC_EXIT_GENERAL, code ? code : "IO_ERROR", fmt, ap);
        va_end(ap);
        err->sys_errno = errnum;
        n = strlen(err->msg);
        if (n < sizeof err->msg)
            snprintf(err->msg + n, sizeof err->msg - n, ": %s", strerror(errnum));
    }
    errno = saved;
    return -1;
}

char *ac_err_quote(char *out, size_t outsz, const char *in, size_t maxchars)
{
    size_t o = 0, i;
    static const char hex[] = "0123456789abcdef";

    if (outsz == 0)
        return out;
    for (i = 0; in[i] && o + 5 < outsz; i++) {
        unsigned char c = (unsigned char)in[i];
        if (i >= maxchars) {
            if (o + 4 < outsz) {
                memcpy(out + o, "...", 3);
                o += 3;
            }
            break;
        }
        if (c == '\n' || c == '\t' || c == '\r') {
            out[o++] = '\\';
            out[o++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        } else if (c < 0x20 || c == 0x7f) {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        } else if (c >= 0x80) {
            /* Keep valid UTF-8 as is; show stray bytes as \xNN so the
             * message itself stays valid UTF-8. */
            uint32_t cp;
            size_t n = ac_utf8_decode((const unsigned char *)in + i, strlen(in + i), &cp);
            if (n == 0) {
                out[o++] = '\\';
                out[o++] = 'x';
                out[o++] = hex[c >> 4];
                out[o++] = hex[c & 15];
            } else if (o + n + 1 < outsz) {
                memcpy(out + o, in + i, n);
                o += n;
                i += n - 1;
            } else {
                break;
            }
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
    return out;
}
