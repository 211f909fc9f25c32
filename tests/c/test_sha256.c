/*
 * test_sha256.c - ac_sha256_hex against Python's hashlib.sha256 (values
 * generated with python3 on this machine): the empty input, "abc" (FIPS
 * 180-2 example), and the lengths around the padding boundaries (55, 56,
 * 64, 119 bytes: one or two final blocks), a multi-block input and UTF-8.
 */
#include <stdlib.h>
#include <string.h>

#include "agentchat/sha256.h"
#include "tap.h"

static void check(const char *data, size_t len, const char *want)
{
    char hex[AC_SHA256_HEX + 1];
    ac_sha256_hex(data, len, hex);
    TAP_STR_EQ(hex, want, "sha256 of %zu bytes", len);
}

static void check_a(size_t n, const char *want)
{
    char *buf = malloc(n);
    memset(buf, 'a', n);
    check(buf, n, want);
    free(buf);
}

int main(void)
{
    check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_a(55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    check_a(56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    check_a(64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    check_a(119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
    check_a(1000, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
    check("zo\xc3\xab \xe6\x97\xa5\xe6\x9c\xac", 11,
          "f284720878b1cbc6608dec242c393d6d2b5011ec64e9d1798541a4a51ad82d43");
    return tap_done();
}
