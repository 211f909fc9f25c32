/* test_isotime.c - ISO-8601 parsing against Python 3.11's
 * datetime.fromisoformat() (expected values printed by python3), base64
 * and uuid4. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/codec.h"
#include "agentchat/isotime.h"
#include "tap.h"

static const struct { const char *s; int ok; int64_t us; int has_offset; } cases[] = {
    { "2030-01-01T00:00:00+00:00", 1, INT64_C(1893456000000000), 1 },
    { "2030-01-01T00:00:00", 1, INT64_C(1893456000000000), 0 },
    { "2030-01-01", 1, INT64_C(1893456000000000), 0 },
    { "20300101", 1, INT64_C(1893456000000000), 0 },
    { "2030-01-01 10:00Z", 1, INT64_C(1893492000000000), 1 },
    { "2030-01-01T10:00:00.123456+05:30", 1, INT64_C(1893472200123456), 1 },
    { "2030-01-01T10:00:00,5-01:00", 1, INT64_C(1893495600500000), 1 },
    { "2030-W01", 1, INT64_C(1893369600000000), 0 },
    { "2030-W01-3", 1, INT64_C(1893542400000000), 0 },
    { "2030W013", 1, INT64_C(1893542400000000), 0 },
    { "2030-01-01T10", 1, INT64_C(1893492000000000), 0 },
    { "2030-01-01T1000", 1, INT64_C(1893492000000000), 0 },
    { "2030-01-01T100000.1Z", 1, INT64_C(1893492000100000), 1 },
    { "2030-02-29", 0, INT64_C(0), 0 },
    { "2028-02-29T00:00:00Z", 1, INT64_C(1835395200000000), 1 },
    { "2030-01-01T24:00:00", 0, INT64_C(0), 0 },
    { "x", 0, INT64_C(0), 0 },
    { "", 0, INT64_C(0), 0 },
    { "2030-01-01T00:00:00+0530", 1, INT64_C(1893436200000000), 1 },
    { "2030-01-01T00:00:00+05", 1, INT64_C(1893438000000000), 1 },
    { "2030-01-01T00:00:00.1234567+00:00", 1, INT64_C(1893456000123456), 1 },
    { "2030-01-01\342\234\22312:00:00Z", 1, INT64_C(1893499200000000), 1 },
    { "2030-1-01", 0, INT64_C(0), 0 },
    { "2030-01-01T12:00:00 +00:00", 1, INT64_C(1893499200000000), 1 },
    { "2026-11-30T05:01:22Z", 1, INT64_C(1796014882000000), 1 },
    { "2099-01-01T00:05:00.000000+00:00", 1, INT64_C(4070909100000000), 1 },
    { "2030-W53-1", 0, INT64_C(0), 0 },
    { "2026-W53-1", 1, INT64_C(1798416000000000), 0 },
    { "2030-01-01T12:60", 0, INT64_C(0), 0 },
    { "2030-01-01T12:00:00+24:00", 0, INT64_C(0), 0 },
    { "2030-01-01T12:00:00+23:59:59.999999", 1, INT64_C(1893412800000001), 1 },
    { "0001-01-01T00:00:00+00:00", 1, INT64_C(-62135596800000000), 1 },
};

static void test_parse(void)
{
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t us = 0;
        int flags = 0;
        int rc = ac_isotime_parse(cases[i].s, strlen(cases[i].s), &us, &flags);
        if (!cases[i].ok) {
            TAP_INT_EQ(rc, -1, "fromisoformat(%s) raises", cases[i].s);
            continue;
        }
        TAP_OK(rc == 0 && us == cases[i].us && (flags != 0) == cases[i].has_offset,
               "fromisoformat(%s) = %lld (offset %d)", cases[i].s, (long long)cases[i].us,
               cases[i].has_offset);
    }
}

static void test_b64(void)
{
    static const struct { const char *raw, *enc; } b[] = {
        { "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
        { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
    };
    static const char *bad[] = { "Zg=", "Z===", "Zm9v!A==", "Zg==Zg==", "====", "Zm=v" };
    size_t i, n;
    for (i = 0; i < sizeof b / sizeof b[0]; i++) {
        char *e = ac_b64_encode(b[i].raw, strlen(b[i].raw));
        char *d = ac_b64_decode(b[i].enc, strlen(b[i].enc), &n);
        TAP_STR_EQ(e, b[i].enc, "base64(%s)", b[i].raw);
        TAP_OK(d && n == strlen(b[i].raw) && memcmp(d, b[i].raw, n) == 0, "unbase64(%s)", b[i].enc);
        free(e);
        free(d);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *d = ac_b64_decode(bad[i], strlen(bad[i]), &n);
        TAP_OK(d == NULL, "invalid base64 %s is refused", bad[i]);
        free(d);
    }
}

static void test_uuid(void)
{
    char a[33], b[33];
    size_t i;
    int hex = 1;
    TAP_OK(ac_uuid4_hex(a) == 0 && ac_uuid4_hex(b) == 0 && strcmp(a, b) != 0, "two uuid4s differ");
    for (i = 0; i < 32; i++)
        hex &= (a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f');
    TAP_OK(strlen(a) == 32 && hex && a[12] == '4' && strchr("89ab", a[16]) != NULL,
           "uuid4 hex: 32 lower-case digits, version 4, RFC 4122 variant (%s)", a);
}

int main(void)
{
    test_parse();
    test_b64();
    test_uuid();
    return tap_done();
}
