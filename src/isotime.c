/* isotime.c - Python-compatible ISO-8601 parsing; see include/agentchat/isotime.h. */
#include "agentchat/isotime.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agentchat/utf8.h"

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* Read exactly n ASCII digits at s[*i]. */
static int digits(const char *s, size_t len, size_t *i, int n, int *out)
{
    int v = 0, k;
    if (*i + (size_t)n > len)
        return -1;
    for (k = 0; k < n; k++) {
        char c = s[*i + (size_t)k];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *i += (size_t)n;
    *out = v;
    return 0;
}

/* Date part: returns the number of bytes used or -1. */
static int parse_date(const char *s, size_t len, int64_t *days)
{
    size_t i = 0;
    int y, m, d;
    if (digits(s, len, &i, 4, &y) == -1 || y < 1)
        return -1;
    if (i < len && (s[i] == 'W' || (s[i] == '-' && i + 1 < len && s[i + 1] == 'W'))) {
        /* ISO week date: YYYY-Www[-D] or YYYYWww[D]. */
        int dash = s[i] == '-', w, wd = 1;
        int64_t jan4, week1;
        i += dash ? 2 : 1;
        if (digits(s, len, &i, 2, &w) == -1 || w < 1 || w > 53)
            return -1;
        if (dash ? (i < len && s[i] == '-') : (i < len && s[i] >= '0' && s[i] <= '9')) {
            i += dash;
            if (digits(s, len, &i, 1, &wd) == -1 || wd < 1 || wd > 7)
                return -1;
        }
        jan4 = days_from_civil(y, 1, 4);
        /* Monday of week 1: 1970-01-01 was a Thursday (weekday 3, Mon=0). */
        week1 = jan4 - ((jan4 % 7 + 7 + 3) % 7);
        if (w == 53) {
            int64_t next1 = days_from_civil(y + 1, 1, 4);
            next1 -= ((next1 % 7 + 7 + 3) % 7);
            if (week1 + 52 * 7 >= next1)
                return -1;      /* the year has no week 53 */
        }
        *days = week1 + (int64_t)(w - 1) * 7 + (wd - 1);
        return (int)i;
    }
    if (i < len && s[i] == '-') {
        i++;
        if (digits(s, len, &i, 2, &m) == -1 || i >= len || s[i] != '-')
            return -1;
        i++;
        if (digits(s, len, &i, 2, &d) == -1)
            return -1;
    } else {
        if (digits(s, len, &i, 2, &m) == -1 || digits(s, len, &i, 2, &d) == -1)
            return -1;
    }
    if (m < 1 || m > 12 || d < 1 || d > days_in_month(y, m))
        return -1;
    *days = days_from_civil(y, (unsigned)m, (unsigned)d);
    return (int)i;
}

/* HH[:MM[:SS[.f+]]] or HH[MM[SS[.f+]]]; microseconds in *us; *has_frac
 * tells whether a fraction was given (may be NULL). */
static int parse_time(const char *s, size_t len, size_t *pi, int64_t *us, int *has_frac)
{
    size_t i = *pi;
    int h, mi = 0, se = 0, colon;
    int64_t frac = 0;
    if (digits(s, len, &i, 2, &h) == -1)
        return -1;
    colon = i < len && s[i] == ':';
    if (i < len && (colon || (s[i] >= '0' && s[i] <= '9'))) {
        i += colon;
        if (digits(s, len, &i, 2, &mi) == -1)
            return -1;
        if (i < len && (colon ? s[i] == ':' : (s[i] >= '0' && s[i] <= '9'))) {
            i += colon;
            if (digits(s, len, &i, 2, &se) == -1)
                return -1;
            if (i < len && (s[i] == '.' || s[i] == ',')) {
                int n = 0;
                if (has_frac)
                    *has_frac = 1;
                i++;
                if (i >= len || s[i] < '0' || s[i] > '9')
                    return -1;
                while (i < len && s[i] >= '0' && s[i] <= '9') {
                    if (n < 6) {
                        frac = frac * 10 + (s[i] - '0');
                        n++;
                    }
                    i++;
                }
                while (n++ < 6)
                    frac *= 10;
            }
        }
    }
    if (h > 23 || mi > 59 || se > 59)
        return -1;
    *us = ((int64_t)h * 3600 + mi * 60 + se) * 1000000 + frac;
    *pi = i;
    return 0;
}

int ac_isotime_parse(const char *s, size_t len, int64_t *epoch_us, int *flags)
{
    int64_t days, tod = 0, off = 0;
    size_t i;
    int n = parse_date(s, len, &days);

    *flags = 0;
    if (n < 0)
        return -1;
    i = (size_t)n;
    if (i < len) {
        /* Any single (Unicode) character separates date and time. */
        uint32_t cp;
        size_t sep = ac_utf8_decode((const unsigned char *)s + i, len - i, &cp);
        if (sep == 0)
            return -1;
        int frac = 0;
        i += sep;
        if (parse_time(s, len, &i, &tod, &frac) == -1)
            return -1;
        /* CPython 3.11 quirk: one stray character may stand between a time
         * without fraction and its offset ("12:00:00 +00:00"). */
        if (!frac && i + 1 < len && s[i] != 'Z' && s[i] != '+' && s[i] != '-' &&
            (s[i + 1] == 'Z' || s[i + 1] == '+' || s[i + 1] == '-'))
            i++;
        if (i < len) {
            if (s[i] == 'Z' && i + 1 == len) {
                i++;
                *flags = AC_ISOTIME_HAS_OFFSET;
            } else if (s[i] == '+' || s[i] == '-') {
                int neg = s[i] == '-';
                int64_t ous;
                i++;
                if (parse_time(s, len, &i, &ous, NULL) == -1)
                    return -1;
                off = neg ? -ous : ous;
                *flags = AC_ISOTIME_HAS_OFFSET;
            } else {
                return -1;
            }
        }
    }
    if (i != len)
        return -1;
    *epoch_us = days * 86400LL * 1000000 + tod - off;
    return 0;
}

int64_t ac_isotime_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void ac_isotime_format(int64_t epoch_us, int digits, char out[48])
{
    time_t sec = (time_t)(epoch_us >= 0 ? epoch_us / 1000000 : (epoch_us - 999999) / 1000000);
    long us = (long)(epoch_us - (int64_t)sec * 1000000);
    struct tm tm;
    long off;
    size_t n;
    char sign = '+';

    localtime_r(&sec, &tm);
    n = strftime(out, 48, "%Y-%m-%dT%H:%M:%S", &tm);
    if (digits > 0)
        n += (size_t)snprintf(out + n, 48 - n, ".%06ld", us);
    off = tm.tm_gmtoff;
    if (off < 0) {
        sign = '-';
        off = -off;
    }
    n += (size_t)snprintf(out + n, 48 - n, "%c%02ld:%02ld", sign, off / 3600, (off / 60) % 60);
    if (off % 60)
        snprintf(out + n, 48 - n, ":%02ld", off % 60);
}

/* The last instant whose local isoformat() still has a 4-digit year (a
 * day of margin for any UTC offset): Python's datetime stops at 9999. */
#define MAX_EXPIRY_US INT64_C(253402214400000000)

int ac_isotime_expiry(int64_t now_us, double seconds, int64_t *out)
{
    double d;
    if (!(seconds > 0) || isinf(seconds))   /* 0, negative, nan, inf */
        return -1;
    d = nearbyint(seconds * 1e6);           /* timedelta rounds half to even */
    if (d > (double)(MAX_EXPIRY_US - now_us))
        return -2;
    *out = now_us + (int64_t)d;
    return 0;
}
