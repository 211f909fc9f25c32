/*
 * tap.h - minimal TAP output for the C unit tests (mpv test/test_utils.h,
 * git's clar in spirit). Each check prints "ok N - name" or "not ok N -
 * name" plus a "# file:line: detail" diagnostic; tap_done() prints the plan
 * and returns the exit status.
 *
 *     int main(void) {
 *         TAP_OK(1 + 1 == 2, "arithmetic");
 *         TAP_STR_EQ(got, "want", "slug of %s", input);
 *         return tap_done();
 *     }
 */
#ifndef AGENTCHAT_TAP_H
#define AGENTCHAT_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count, tap_failed;

static void tap_result(int ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), unused));
static void tap_result(int ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    tap_count++;
    if (!ok)
        tap_failed++;
    printf("%s %d - ", ok ? "ok" : "not ok", tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!ok)
        printf("# failed at %s:%d\n", file, line);
    fflush(stdout);
}

#define TAP_OK(cond, ...) tap_result((cond) != 0, __FILE__, __LINE__, __VA_ARGS__)

#define TAP_INT_EQ(got, want, ...) do { \
        long long tap_g_ = (long long)(got), tap_w_ = (long long)(want); \
        tap_result(tap_g_ == tap_w_, __FILE__, __LINE__, __VA_ARGS__); \
        if (tap_g_ != tap_w_) \
            printf("#   got %lld, want %lld\n", tap_g_, tap_w_); \
    } while (0)

#define TAP_STR_EQ(got, want, ...) do { \
        const char *tap_g_ = (got), *tap_w_ = (want); \
        int tap_ok_ = tap_g_ && tap_w_ && strcmp(tap_g_, tap_w_) == 0; \
        tap_result(tap_ok_, __FILE__, __LINE__, __VA_ARGS__); \
        if (!tap_ok_) \
            printf("#   got  \"%s\"\n#   want \"%s\"\n", tap_g_ ? tap_g_ : "(null)", \
                   tap_w_ ? tap_w_ : "(null)"); \
    } while (0)

static int tap_done(void) __attribute__((unused));
static int tap_done(void)
{
    printf("1..%d\n", tap_count);
    return tap_failed ? 1 : 0;
}

#endif
