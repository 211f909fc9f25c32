/*
 * test_pyjson.c - Python 3.11 json.loads reproduced by pyjson.h: every
 * error message, every accepted document, the representation choices and
 * a fuzz loop.
 *
 * Every expected string is python3 (3.11) output on this machine:
 *   err_cases  str(e) and type(e).__name__ of the exception raised by
 *                  t = data.decode("utf-8")
 *                  if read_text: t = t.replace("\r\n", "\n").replace("\r", "\n")
 *                  json.loads(t)
 *              (the same text Path(p).read_text(encoding="utf-8") gives;
 *              read_text is the AC_PYJSON_READ_TEXT column);
 *   ok_cases   json.dumps(json.loads(t), indent=2, ensure_ascii=False),
 *              compared with ac_json_dump of our tree in the same style.
 * Each input is copied into a buffer of exactly its length, so a read past
 * `len` is caught when built with SANITIZE=address.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agentchat/json.h"
#include "agentchat/pyjson.h"
#include "tap.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct err_case {
    const char *name;
    const char *input;
    size_t len;
    int flags;
    const char *exc;
    const char *want;
};

struct ok_case {
    const char *name;
    const char *input;
    size_t len;
    int flags;
    const char *want;
};

/* json.dumps(v, indent=2, ensure_ascii=False) */
static const struct ac_json_style style_task = { 2, 0, 0, ",", ": " };

/* Generated with python3 (see the top of the file). */
static const struct err_case err_cases[] = {
    { "empty", "", 0, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "spaces only", "   ", 3, 0, "JSONDecodeError", "Expecting value: line 1 column 4 (char 3)" },
    { "newlines only", "\n\n", 2, 0, "JSONDecodeError", "Expecting value: line 3 column 1 (char 2)" },
    { "form feed is not whitespace", "\x0c" "1", 2, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "bare word", "hello", 5, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "nul byte", "\x00", 1, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "nul after value", "1 \x00", 3, 0, "JSONDecodeError", "Extra data: line 1 column 3 (char 2)" },
    { "truncated null", "nul", 3, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "wrong case True", "True", 4, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "truncated false", "fals", 4, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "nulll", "nulll", 5, 0, "JSONDecodeError", "Extra data: line 1 column 5 (char 4)" },
    { "nan lower case", "nan", 3, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "-Inf", "-Inf", 4, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "Infinityx", "Infinityx", 9, 0, "JSONDecodeError", "Extra data: line 1 column 9 (char 8)" },
    { "lone minus", "-", 1, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "minus space", "- 1", 3, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "plus sign", "+1", 2, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "leading dot", ".5", 2, 0, "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)" },
    { "leading zero", "01", 2, 0, "JSONDecodeError", "Extra data: line 1 column 2 (char 1)" },
    { "-01", "-01", 3, 0, "JSONDecodeError", "Extra data: line 1 column 3 (char 2)" },
    { "trailing dot", "1.", 2, 0, "JSONDecodeError", "Extra data: line 1 column 2 (char 1)" },
    { "dot exponent", "1.e5", 4, 0, "JSONDecodeError", "Extra data: line 1 column 2 (char 1)" },
    { "bare exponent", "1e", 2, 0, "JSONDecodeError", "Extra data: line 1 column 2 (char 1)" },
    { "exponent sign only", "1e+", 3, 0, "JSONDecodeError", "Extra data: line 1 column 2 (char 1)" },
    { "hex number", "0x10", 4, 0, "JSONDecodeError", "Extra data: line 1 column 2 (char 1)" },
    { "array trailing dot", "[1.]", 4, 0, "JSONDecodeError", "Expecting ',' delimiter: line 1 column 3 (char 2)" },
    { "array bare exponent", "[1e]", 4, 0, "JSONDecodeError", "Expecting ',' delimiter: line 1 column 3 (char 2)" },
    { "two values", "1 2", 3, 0, "JSONDecodeError", "Extra data: line 1 column 3 (char 2)" },
    { "two objects", "{} {}", 5, 0, "JSONDecodeError", "Extra data: line 1 column 4 (char 3)" },
    { "extra bracket", "[]]", 3, 0, "JSONDecodeError", "Extra data: line 1 column 3 (char 2)" },
    { "extra data after newline", "{\"a\": 1}\nx", 10, 0, "JSONDecodeError", "Extra data: line 2 column 1 (char 9)" },
    { "array unclosed", "[", 1, 0, "JSONDecodeError", "Expecting value: line 1 column 2 (char 1)" },
    { "array unclosed space", "[  ", 3, 0, "JSONDecodeError", "Expecting value: line 1 column 4 (char 3)" },
    { "array missing comma", "[1 2]", 5, 0, "JSONDecodeError", "Expecting ',' delimiter: line 1 column 4 (char 3)" },
    { "array unclosed after value", "[1", 2, 0, "JSONDecodeError", "Expecting ',' delimiter: line 1 column 3 (char 2)" },
    { "array trailing comma", "[1,]", 4, 0, "JSONDecodeError", "Expecting value: line 1 column 4 (char 3)" },
    { "array leading comma", "[,1]", 4, 0, "JSONDecodeError", "Expecting value: line 1 column 2 (char 1)" },
    { "array double comma", "[1,,2]", 6, 0, "JSONDecodeError", "Expecting value: line 1 column 4 (char 3)" },
    { "array colon", "[1:2]", 5, 0, "JSONDecodeError", "Expecting ',' delimiter: line 1 column 3 (char 2)" },
    { "array closed by brace", "[1}", 3, 0, "JSONDecodeError", "Expecting ',' delimiter: line 1 column 3 (char 2)" },
    { "object unclosed", "{", 1, 0, "JSONDecodeError", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)" },
    { "object number key", "{1: 2}", 6, 0, "JSONDecodeError", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)" },
    { "object single quotes", "{'a': 1}", 8, 0, "JSONDecodeError", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)" },
    { "object bare key", "{a: 1}", 6, 0, "JSONDecodeError", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)" },
    { "object trailing comma", "{\"a\": 1,}", 9, 0, "JSONDecodeError", "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)" },
    { "object missing colon", "{\"a\" 1}", 7, 0, "JSONDecodeError", "Expecting ':' delimiter: line 1 column 6 (char 5)" },
    { "object key only", "{\"a\"", 4, 0, "JSONDecodeError", "Expecting ':' delimiter: line 1 column 5 (char 4)" },
    { "object colon end", "{\"a\":", 5, 0, "JSONDecodeError", "Expecting value: line 1 column 6 (char 5)" },
    { "object missing value", "{\"a\":}", 6, 0, "JSONDecodeError", "Expecting value: line 1 column 6 (char 5)" },
    { "object missing comma", "{\"a\": 1 \"b\": 2}", 15, 0, "JSONDecodeError", "Expecting ',' delimiter: line 1 column 9 (char 8)" },
    { "object unclosed after value", "{\"a\": 1", 7, 0, "JSONDecodeError", "Expecting ',' delimiter: line 1 column 8 (char 7)" },
    { "object closed by bracket", "{\"a\": 1]", 8, 0, "JSONDecodeError", "Expecting ',' delimiter: line 1 column 8 (char 7)" },
    { "object comma then end", "{\"a\": 1,", 8, 0, "JSONDecodeError", "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)" },
    { "string unterminated", "\"abc", 4, 0, "JSONDecodeError", "Unterminated string starting at: line 1 column 1 (char 0)" },
    { "string just quote", "\"", 1, 0, "JSONDecodeError", "Unterminated string starting at: line 1 column 1 (char 0)" },
    { "string backslash at end", "\"\\", 2, 0, "JSONDecodeError", "Unterminated string starting at: line 1 column 1 (char 0)" },
    { "string unterminated in array", "[\"a\", \"b", 8, 0, "JSONDecodeError", "Unterminated string starting at: line 1 column 7 (char 6)" },
    { "key unterminated", "{\"ab", 4, 0, "JSONDecodeError", "Unterminated string starting at: line 1 column 2 (char 1)" },
    { "control char tab", "\"a\tb\"", 5, 0, "JSONDecodeError", "Invalid control character at: line 1 column 3 (char 2)" },
    { "control char newline", "\"a\nb\"", 5, 0, "JSONDecodeError", "Invalid control character at: line 1 column 3 (char 2)" },
    { "control char nul", "\"\x00\"", 3, 0, "JSONDecodeError", "Invalid control character at: line 1 column 2 (char 1)" },
    { "control char 0x1f", "[\"ok\", \"\x1f\"]", 11, 0, "JSONDecodeError", "Invalid control character at: line 1 column 9 (char 8)" },
    { "control char in key", "{\"a\x01\": 1}", 9, 0, "JSONDecodeError", "Invalid control character at: line 1 column 4 (char 3)" },
    { "control char before unterminated", "\"ab\x02", 4, 0, "JSONDecodeError", "Invalid control character at: line 1 column 4 (char 3)" },
    { "invalid escape x", "\"\\x41\"", 6, 0, "JSONDecodeError", "Invalid \\escape: line 1 column 2 (char 1)" },
    { "invalid escape single quote", "\"\\'\"", 4, 0, "JSONDecodeError", "Invalid \\escape: line 1 column 2 (char 1)" },
    { "invalid escape U", "\"\\U0041\"", 8, 0, "JSONDecodeError", "Invalid \\escape: line 1 column 2 (char 1)" },
    { "invalid escape at end", "\"\\a", 3, 0, "JSONDecodeError", "Invalid \\escape: line 1 column 2 (char 1)" },
    { "invalid escape in key", "{\"\\z\": 1}", 9, 0, "JSONDecodeError", "Invalid \\escape: line 1 column 3 (char 2)" },
    { "\\u short", "\"\\u12\"", 6, 0, "JSONDecodeError", "Invalid \\uXXXX escape: line 1 column 3 (char 2)" },
    { "\\u bad digit", "\"\\u12G4\"", 8, 0, "JSONDecodeError", "Invalid \\uXXXX escape: line 1 column 3 (char 2)" },
    { "\\u at end", "\"\\u1234", 7, 0, "JSONDecodeError", "Invalid \\uXXXX escape: line 1 column 3 (char 2)" },
    { "\\u three digits at end", "\"\\u123", 6, 0, "JSONDecodeError", "Invalid \\uXXXX escape: line 1 column 3 (char 2)" },
    { "\\u no digits", "\"\\u\"", 4, 0, "JSONDecodeError", "Invalid \\uXXXX escape: line 1 column 3 (char 2)" },
    { "\\u second half bad", "\"\\ud800\\u12x\"", 13, 0, "JSONDecodeError", "Invalid \\uXXXX escape: line 1 column 9 (char 8)" },
    { "\\u second half unterminated", "\"\\ud800\\udc00", 13, 0, "JSONDecodeError", "Invalid \\uXXXX escape: line 1 column 9 (char 8)" },
    { "\\u after multibyte", "\"\xc3\xa9\\u12\"", 8, 0, "JSONDecodeError", "Invalid \\uXXXX escape: line 1 column 4 (char 3)" },
    { "position after 2-byte chars", "[\"\xc3\xa9\", \"\xc3\xbc\", x]", 15, 0, "JSONDecodeError", "Expecting value: line 1 column 12 (char 11)" },
    { "position after 3-byte chars", "{\"\xe6\x97\xa5\xe6\x9c\xac\": 1, \"\xe8\xaa\x9e\": }", 22, 0, "JSONDecodeError", "Expecting value: line 1 column 16 (char 15)" },
    { "position after 4-byte chars", "[\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\", tru]", 17, 0, "JSONDecodeError", "Expecting value: line 1 column 8 (char 7)" },
    { "position after escapes", "[\"\\u00e9\\ud83d\\ude00\", x]", 25, 0, "JSONDecodeError", "Expecting value: line 1 column 24 (char 23)" },
    { "multi-line position", "{\n  \"a\": 1,\n  \"b\": [1, 2,\n    3 4]\n}", 36, 0, "JSONDecodeError", "Expecting ',' delimiter: line 4 column 7 (char 32)" },
    { "multi-line unicode column", "{\n  \"cl\xc3\xa9\": \"v\xc3\xa0lue\",\n  \"x\": nope\n}", 35, 0, "JSONDecodeError", "Expecting value: line 3 column 8 (char 27)" },
    { "multi-line unterminated string", "[\n\"a\",\n\"b\n]", 11, 0, "JSONDecodeError", "Invalid control character at: line 3 column 3 (char 9)" },
    { "CRLF read_text", "{\r\n  \"a\": 1,\r\n  \"b\": x\r\n}", 25, AC_PYJSON_READ_TEXT, "JSONDecodeError", "Expecting value: line 3 column 8 (char 19)" },
    { "CRLF raw", "{\r\n  \"a\": 1,\r\n  \"b\": x\r\n}", 25, 0, "JSONDecodeError", "Expecting value: line 3 column 8 (char 21)" },
    { "CR read_text", "[1,\r2,\rx]", 9, AC_PYJSON_READ_TEXT, "JSONDecodeError", "Expecting value: line 3 column 1 (char 7)" },
    { "CR raw", "[1,\r2,\rx]", 9, 0, "JSONDecodeError", "Expecting value: line 1 column 8 (char 7)" },
    { "CR in string read_text", "\"a\rb\"", 5, AC_PYJSON_READ_TEXT, "JSONDecodeError", "Invalid control character at: line 1 column 3 (char 2)" },
    { "CR in string raw", "\"a\rb\"", 5, 0, "JSONDecodeError", "Invalid control character at: line 1 column 3 (char 2)" },
    { "CRLF only read_text", "\r\n\r\n", 4, AC_PYJSON_READ_TEXT, "JSONDecodeError", "Expecting value: line 3 column 1 (char 2)" },
    { "CRLF only raw", "\r\n\r\n", 4, 0, "JSONDecodeError", "Expecting value: line 3 column 1 (char 4)" },
    { "CRLF extra data read_text", "{\"\xc3\xa9\": 1}\r\n\r\n2", 14, AC_PYJSON_READ_TEXT, "JSONDecodeError", "Extra data: line 3 column 1 (char 10)" },
    { "BOM", "\xef\xbb\xbf{}", 5, 0, "JSONDecodeError", "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)" },
    { "BOM read_text", "\xef\xbb\xbf{}", 5, AC_PYJSON_READ_TEXT, "JSONDecodeError", "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)" },
    { "BOM after whitespace", " \xef\xbb\xbf{}", 6, 0, "JSONDecodeError", "Expecting value: line 1 column 2 (char 1)" },
    { "utf8 invalid start 0xff", "\xff", 1, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte" },
    { "utf8 invalid start in string", "\"abc\xff\"", 6, AC_PYJSON_READ_TEXT, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xff in position 4: invalid start byte" },
    { "utf8 lone continuation", "[\"\x80\"]", 5, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0x80 in position 2: invalid start byte" },
    { "utf8 overlong c0", "\"\xc0\xaf\"", 4, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xc0 in position 1: invalid start byte" },
    { "utf8 overlong e0", "\"\xe0\x80\xaf\"", 5, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xe0 in position 1: invalid continuation byte" },
    { "utf8 surrogate ed a0", "\"\xed\xa0\x80\"", 5, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xed in position 1: invalid continuation byte" },
    { "utf8 above U+10FFFF", "\"\xf4\x90\x80\x80\"", 6, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xf4 in position 1: invalid continuation byte" },
    { "utf8 f5 lead", "\"\xf5\x80\x80\x80\"", 6, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xf5 in position 1: invalid start byte" },
    { "utf8 truncated 2-byte at end", "\"\xc3", 2, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xc3 in position 1: unexpected end of data" },
    { "utf8 truncated 3-byte at end", "\"\xe2\x82", 3, 0, "UnicodeDecodeError", "'utf-8' codec can't decode bytes in position 1-2: unexpected end of data" },
    { "utf8 truncated 4-byte at end", "\"\xf0\x9f\x98", 4, 0, "UnicodeDecodeError", "'utf-8' codec can't decode bytes in position 1-3: unexpected end of data" },
    { "utf8 lead only at end", "\"\xf0", 2, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xf0 in position 1: unexpected end of data" },
    { "utf8 bad second byte", "\"\xe2(\xa1\"", 5, 0, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xe2 in position 1: invalid continuation byte" },
    { "utf8 bad third byte", "\"\xe2\x82(\"", 5, 0, "UnicodeDecodeError", "'utf-8' codec can't decode bytes in position 1-2: invalid continuation byte" },
    { "utf8 bad fourth byte", "\"\xf0\x9f\x98(\"", 6, 0, "UnicodeDecodeError", "'utf-8' codec can't decode bytes in position 1-3: invalid continuation byte" },
    { "utf8 position counts bytes", "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80\xff", 10, AC_PYJSON_READ_TEXT, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xff in position 9: invalid start byte" },
    { "utf8 error beats json error", "x\r\n\xff", 4, AC_PYJSON_READ_TEXT, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xff in position 3: invalid start byte" },
    { "utf8 error position is raw bytes", "\r\n\r\n\xfe", 5, AC_PYJSON_READ_TEXT, "UnicodeDecodeError", "'utf-8' codec can't decode byte 0xfe in position 4: invalid start byte" },
    { "key not string after comma", "{\"a\": 1, 2: 3}", 14, 0, "JSONDecodeError", "Expecting property name enclosed in double quotes: line 1 column 10 (char 9)" },
};
static const struct ok_case ok_cases[] = {
    { "null", "null", 4, 0, "null" },
    { "true", "true", 4, 0, "true" },
    { "false", "false", 5, 0, "false" },
    { "zero", "0", 1, 0, "0" },
    { "minus zero", "-0", 2, 0, "0" },
    { "string top level", "\"hello\"", 7, 0, "\"hello\"" },
    { "empty string", "\"\"", 2, 0, "\"\"" },
    { "empty array", "[]", 2, 0, "[]" },
    { "empty object", "{}", 2, 0, "{}" },
    { "spaced empties", " [ ] ", 5, 0, "[]" },
    { "whitespace around", " \t\n\r 42 \r\n\t ", 12, 0, "42" },
    { "int64 max", "9223372036854775807", 19, 0, "9223372036854775807" },
    { "int64 min", "-9223372036854775808", 20, 0, "-9223372036854775808" },
    { "int list", "[1, -1, 10, 123456789012345678, -42]", 36, 0, "[\n  1,\n  -1,\n  10,\n  123456789012345678,\n  -42\n]" },
    { "floats", "[0.0, -0.0, 0.1, 1.5, -2.25, 3.141592653589793, 100.0]", 54, 0, "[\n  0.0,\n  -0.0,\n  0.1,\n  1.5,\n  -2.25,\n  3.141592653589793,\n  100.0\n]" },
    { "exponents", "[1e5, 1E5, 1e+5, 1e-5, 1E-7, 2.5e10, 1e22, 1e16, 1e15]", 54, 0, "[\n  100000.0,\n  100000.0,\n  100000.0,\n  1e-05,\n  1e-07,\n  25000000000.0,\n  1e+22,\n  1e+16,\n  1000000000000000.0\n]" },
    { "float extremes", "[5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 1e-400]", 65, 0, "[\n  5e-324,\n  1.7976931348623157e+308,\n  2.2250738585072014e-308,\n  0.0\n]" },
    { "float rounding", "[0.30000000000000004, 123456789.125, 1.0000000000000002, 9007199254740993.0]", 76, 0, "[\n  0.30000000000000004,\n  123456789.125,\n  1.0000000000000002,\n  9007199254740992.0\n]" },
    { "long mantissa", "3.14159265358979323846264338327950288419716939937510", 52, 0, "3.141592653589793" },
    { "nested", "{\"a\": [1, {\"b\": [true, false, null]}, []], \"c\": {}}", 51, 0, "{\n  \"a\": [\n    1,\n    {\n      \"b\": [\n        true,\n        false,\n        null\n      ]\n    },\n    []\n  ],\n  \"c\": {}\n}" },
    { "deep 12", "[[[[[[[[[[[[1]]]]]]]]]]]]", 25, 0, "[\n  [\n    [\n      [\n        [\n          [\n            [\n              [\n                [\n                  [\n                    [\n                      [\n                        1\n                      ]\n                    ]\n                  ]\n                ]\n              ]\n            ]\n          ]\n        ]\n      ]\n    ]\n  ]\n]" },
    { "deep objects", "{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":\"x\"}}}}}}", 39, 0, "{\n  \"a\": {\n    \"a\": {\n      \"a\": {\n        \"a\": {\n          \"a\": {\n            \"a\": \"x\"\n          }\n        }\n      }\n    }\n  }\n}" },
    { "duplicate keys", "{\"a\": 1, \"b\": 2, \"a\": 3}", 24, 0, "{\n  \"a\": 3,\n  \"b\": 2\n}" },
    { "duplicate keys nested", "{\"x\": {\"k\": 1}, \"y\": 0, \"x\": [2]}", 33, 0, "{\n  \"x\": [\n    2\n  ],\n  \"y\": 0\n}" },
    { "escapes", "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", 25, 0, "\"\\\" \\\\ / \\b \\f \\n \\r \\t\"" },
    { "unicode escapes", "[\"\\u00e9\", \"\\u65E5\\u672c\", \"\\u0041\", \"\\uffff\", \"\\u2028\"]", 56, 0, "[\n  \"\xc3\xa9\",\n  \"\xe6\x97\xa5\xe6\x9c\xac\",\n  \"A\",\n  \"\xef\xbf\xbf\",\n  \"\xe2\x80\xa8\"\n]" },
    { "surrogate pair", "\"\\ud83d\\ude00 \\uD834\\uDD1E \\udbff\\udfff\"", 40, 0, "\"\xf0\x9f\x98\x80 \xf0\x9d\x84\x9e \xf4\x8f\xbf\xbf\"" },
    { "raw utf-8", "[\"\xc3\xa9\", \"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\", \"\xf0\x9f\x98\x80\", \"\xe2\x80\xa8\", \"\x7f\", \"\xc3\xbf\"]", 45, 0, "[\n  \"\xc3\xa9\",\n  \"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\",\n  \"\xf0\x9f\x98\x80\",\n  \"\xe2\x80\xa8\",\n  \"\x7f\",\n  \"\xc3\xbf\"\n]" },
    { "utf-8 keys", "{\"cl\xc3\xa9\": \"v\xc3\xa0lue\", \"\xe6\x97\xa5\": 1}", 28, 0, "{\n  \"cl\xc3\xa9\": \"v\xc3\xa0lue\",\n  \"\xe6\x97\xa5\": 1\n}" },
    { "nul escape in value", "\"a\\u0000b\"", 10, 0, "\"a\\u0000b\"" },
    { "control escapes", "\"\\u0001\\u001f\\u000b\"", 20, 0, "\"\\u0001\\u001f\\u000b\"" },
    { "slash", "\"a/b\\/c\"", 8, 0, "\"a/b/c\"" },
    { "quotes in key", "{\"say \\\"hi\\\"\": \"\\\\\"}", 20, 0, "{\n  \"say \\\"hi\\\"\": \"\\\\\"\n}" },
    { "key order kept", "{\"z\": 1, \"a\": 2, \"m\": 3}", 24, 0, "{\n  \"z\": 1,\n  \"a\": 2,\n  \"m\": 3\n}" },
    { "mixed array", "[1, \"two\", 3.0, null, true, [], {}, [[]], {\"k\": {}}]", 52, 0, "[\n  1,\n  \"two\",\n  3.0,\n  null,\n  true,\n  [],\n  {},\n  [\n    []\n  ],\n  {\n    \"k\": {}\n  }\n]" },
    { "crlf read_text", "{\r\n  \"a\": [\r\n    1,\r\n    2\r\n  ]\r\n}\r\n", 36, AC_PYJSON_READ_TEXT, "{\n  \"a\": [\n    1,\n    2\n  ]\n}" },
    { "cr whitespace raw", "[1,\r2]", 6, 0, "[\n  1,\n  2\n]" },
    { "crlf in string escape", "\"line1\\r\\nline2\"", 16, AC_PYJSON_READ_TEXT, "\"line1\\r\\nline2\"" },
    { "tabs as whitespace", "{\t\"a\"\t:\t1\t}", 11, 0, "{\n  \"a\": 1\n}" },
    { "task-like record", "{\"id\": \"t-1\", \"title\": \"Fix \\u00e9\", \"status\": \"open\", \"priority\": 2, \"tags\": [\"a\", \"b\"], \"lease\": null, \"created\": \"2024-01-01T00:00:00Z\", \"score\": 0.75}", 154, 0, "{\n  \"id\": \"t-1\",\n  \"title\": \"Fix \xc3\xa9\",\n  \"status\": \"open\",\n  \"priority\": 2,\n  \"tags\": [\n    \"a\",\n    \"b\"\n  ],\n  \"lease\": null,\n  \"created\": \"2024-01-01T00:00:00Z\",\n  \"score\": 0.75\n}" },
    { "event-like record", "{\"seq\": 17, \"ts\": 1700000000.123, \"from\": \"alice\", \"to\": [\"bob\"], \"body\": \"multi\\nline\"}", 88, 0, "{\n  \"seq\": 17,\n  \"ts\": 1700000000.123,\n  \"from\": \"alice\",\n  \"to\": [\n    \"bob\"\n  ],\n  \"body\": \"multi\\nline\"\n}" },
    { "number then ws", "12 ", 3, 0, "12" },
    { "array of strings with spaces", "[ \"a\" , \"b\" ]", 13, 0, "[\n  \"a\",\n  \"b\"\n]" },
    { "zero exponent", "[0e0, 0E+0, -0e-0, 0.0e1]", 25, 0, "[\n  0.0,\n  0.0,\n  -0.0,\n  0.0\n]" },
    { "big exponent int-valued", "[1e15, 1.5e300, 12345678901234567890.0]", 39, 0, "[\n  1000000000000000.0,\n  1.5e+300,\n  1.2345678901234567e+19\n]" },
    { "DEL and high chars", "\"\x7f\xc2\x80\xc2\xa0\xef\xbb\xbf\"", 10, 0, "\"\x7f\xc2\x80\xc2\xa0\xef\xbb\xbf\"" },
    { "bom inside string", "\"\xef\xbb\xbf\"", 5, 0, "\"\xef\xbb\xbf\"" },
    { "line separators raw", "\"\xe2\x80\xa8\xe2\x80\xa9\"", 8, 0, "\"\xe2\x80\xa8\xe2\x80\xa9\"" },
};

/* A private copy of exactly len bytes (malloc(0) avoided). */
static char *dup_exact(const char *s, size_t len)
{
    char *p = malloc(len ? len : 1);
    if (!p) {
        printf("Bail out! out of memory\n");
        exit(99);
    }
    if (len)
        memcpy(p, s, len);
    return p;
}

/* Decode and return "ExcName: message", or "OK" (static buffer). */
static const char *outcome(const char *s, size_t len, int flags)
{
    static char out[AC_PYJSON_MSG_MAX + 64];
    struct ac_pyjson_error e;
    char *p = dup_exact(s, len);
    json_t *v = ac_pyjson_loadx(p, len, flags, &e);
    free(p);
    if (v) {
        json_decref(v);
        return "OK";
    }
    snprintf(out, sizeof out, "%s: %s", e.exc_name, e.msg);
    return out;
}

/* Decode s and dump it as json.dumps(indent=2, ensure_ascii=False);
 * returns a malloc'ed string or NULL with msg filled. */
static char *roundtrip(const char *s, size_t len, int flags, char *msg, size_t msgsize)
{
    char *p = dup_exact(s, len), *d;
    json_t *v = ac_pyjson_loads(p, len, flags, msg, msgsize);
    free(p);
    if (!v)
        return NULL;
    d = ac_json_dump(v, &style_task, NULL);
    json_decref(v);
    return d;
}

static void test_error_table(void)
{
    size_t i, agree = 0;
    for (i = 0; i < COUNT(err_cases); i++) {
        const struct err_case *c = &err_cases[i];
        char want[AC_PYJSON_MSG_MAX + 64], buf[AC_PYJSON_MSG_MAX];
        char *p;
        json_t *v;

        snprintf(want, sizeof want, "%s: %s", c->exc, c->want);
        TAP_STR_EQ(outcome(c->input, c->len, c->flags), want, "error: %s", c->name);
        /* The short form gives the message alone. */
        p = dup_exact(c->input, c->len);
        v = ac_pyjson_loads(p, c->len, c->flags, buf, sizeof buf);
        free(p);
        if (!v && strcmp(buf, c->want) == 0)
            agree++;
        json_decref(v);
    }
    TAP_INT_EQ(agree, COUNT(err_cases), "ac_pyjson_loads gives the same messages");
}

static void test_ok_table(void)
{
    size_t i;
    for (i = 0; i < COUNT(ok_cases); i++) {
        const struct ok_case *c = &ok_cases[i];
        char msg[AC_PYJSON_MSG_MAX];
        char *got = roundtrip(c->input, c->len, c->flags, msg, sizeof msg);
        TAP_STR_EQ(got ? got : msg, c->want, "valid: %s", c->name);
        free(got);
    }
}

/* Inputs too long for the table, built here; messages from python3. */
static void test_long_inputs(void)
{
    size_t n = 6000;
    char *s = malloc(n);
    char *got;
    char msg[AC_PYJSON_MSG_MAX];

    if (!s)
        return;
    memset(s, '1', 4301);
    TAP_STR_EQ(outcome(s, 4301, 0),
               "ValueError: Exceeds the limit (4300 digits) for integer string conversion: "
               "value has 4301 digits; use sys.set_int_max_str_digits() to increase the limit",
               "int of 4301 digits: ValueError");
    s[0] = '-';
    memset(s + 1, '9', 4301);
    TAP_STR_EQ(outcome(s, 4302, 0),
               "ValueError: Exceeds the limit (4300 digits) for integer string conversion: "
               "value has 4301 digits; use sys.set_int_max_str_digits() to increase the limit",
               "negative int of 4301 digits: the sign is not a digit");
    memcpy(s, "[0, ", 4);
    memset(s + 4, '7', 5000);
    s[5004] = ']';
    TAP_STR_EQ(outcome(s, 5005, 0),
               "ValueError: Exceeds the limit (4300 digits) for integer string conversion: "
               "value has 5000 digits; use sys.set_int_max_str_digits() to increase the limit",
               "digit limit inside an array");
    /* An error after the long int still reports the int first, as
     * Python converts each number when it scans it. */
    memcpy(s, "[", 1);
    memset(s + 1, '7', 5000);
    memcpy(s + 5001, ", x", 3);
    TAP_OK(strncmp(outcome(s, 5004, 0), "ValueError:", 11) == 0,
           "the digit limit is raised where the number is scanned");
    /* 4300 digits is fine: past DBL_MAX, so the Infinity sentinel. */
    memset(s, '1', 4300);
    got = roundtrip(s, 4300, 0, msg, sizeof msg);
    TAP_STR_EQ(got ? got : msg, "{\n  \"$nonfinite\": \"Infinity\"\n}",
               "int of 4300 digits is held as +Infinity");
    free(got);
    /* Floats have no digit limit. */
    memcpy(s, "0.", 2);
    memset(s + 2, '3', 5000);
    got = roundtrip(s, 5002, 0, msg, sizeof msg);
    TAP_STR_EQ(got ? got : msg, "0.3333333333333333", "float with 5000 digits");
    free(got);
    free(s);
}

static void test_nonfinite(void)
{
    json_t *v = ac_pyjson_loads("[NaN, Infinity, -Infinity, 1e400, -1E+400, 1.5]", 47, 0, NULL, 0);
    json_t *lit;
    char *d;

    TAP_OK(v && json_array_size(v) == 6, "non-finite literals are accepted");
    if (!v)
        return;
    TAP_OK(ac_pyjson_is_nonfinite(json_array_get(v, 0)) &&
           isnan(ac_pyjson_nonfinite_value(json_array_get(v, 0))), "NaN is the NaN sentinel");
    TAP_OK(ac_pyjson_nonfinite_value(json_array_get(v, 1)) == INFINITY, "Infinity");
    TAP_OK(ac_pyjson_nonfinite_value(json_array_get(v, 2)) == -INFINITY, "-Infinity");
    TAP_OK(ac_pyjson_nonfinite_value(json_array_get(v, 3)) == INFINITY, "1e400 overflows to Infinity");
    TAP_OK(ac_pyjson_nonfinite_value(json_array_get(v, 4)) == -INFINITY, "-1E+400 to -Infinity");
    TAP_OK(!ac_pyjson_is_nonfinite(json_array_get(v, 5)) && json_is_real(json_array_get(v, 5)),
           "1.5 is a plain real");
    TAP_OK(json_is_object(json_array_get(v, 0)) && !json_is_number(json_array_get(v, 0)) &&
           !json_is_string(json_array_get(v, 0)), "the sentinel is neither a number nor a string");
    TAP_OK(json_array_get(v, 1) == json_array_get(v, 3), "sentinels are shared");
    d = ac_json_dump(json_array_get(v, 0), &style_task, NULL);
    TAP_STR_EQ(d, "{\n  \"$nonfinite\": \"NaN\"\n}", "the sentinel's shape");
    free(d);
    json_decref(v);

    /* A document spelling the sentinel out is an ordinary object. */
    lit = ac_pyjson_loads("{\"$nonfinite\": \"NaN\"}", 21, 0, NULL, 0);
    TAP_OK(lit && json_is_object(lit) && !ac_pyjson_is_nonfinite(lit),
           "a literal {\"$nonfinite\": \"NaN\"} is not a sentinel");
    TAP_OK(ac_pyjson_nonfinite_value(lit) == 0.0 && !ac_pyjson_is_nonfinite(NULL),
           "nonfinite_value of an ordinary value is 0.0");
    json_decref(lit);
    v = ac_pyjson_loads("-Infinity", 9, 0, NULL, 0);
    TAP_OK(ac_pyjson_nonfinite_value(v) == -INFINITY, "-Infinity at top level");
    json_decref(v);
}

static void test_big_ints(void)
{
    json_t *v = ac_pyjson_loads("[9223372036854775807, -9223372036854775808, "
                                "9223372036854775808, -9223372036854775809, "
                                "18446744073709551616, 100000000000000000000000]",
                                134, 0, NULL, 0);
    TAP_OK(v && json_array_size(v) == 6, "big integers are accepted");
    if (!v)
        return;
    TAP_OK(json_is_integer(json_array_get(v, 0)) &&
           json_integer_value(json_array_get(v, 0)) == INT64_MAX, "2**63-1 is an integer");
    TAP_OK(json_is_integer(json_array_get(v, 1)) &&
           json_integer_value(json_array_get(v, 1)) == INT64_MIN, "-2**63 is an integer");
    TAP_OK(json_is_real(json_array_get(v, 2)) &&
           json_real_value(json_array_get(v, 2)) == 9223372036854775808.0, "2**63 becomes a real");
    TAP_OK(json_is_real(json_array_get(v, 3)) &&
           json_real_value(json_array_get(v, 3)) == -9223372036854775808.0,
           "-2**63-1 rounds to the real -2**63");
    TAP_OK(json_real_value(json_array_get(v, 4)) == 18446744073709551616.0, "2**64");
    TAP_OK(json_real_value(json_array_get(v, 5)) == 1e23, "10**23 is the double nearest");
    json_decref(v);
}

static void test_strings(void)
{
    json_t *v;
    const char *k;
    size_t klen;
    json_t *val;
    int seen = 0;

    /* Lone surrogates: one U+FFFD per escape; pairs joined. */
    v = ac_pyjson_loads("[\"\\ud800\", \"\\udc00\\ud800\", \"\\ud800\\u0041\", "
                        "\"\\ud83d\\ude00\", \"\\ud800\\ud800\\udc00\"]", 80, 0, NULL, 0);
    TAP_OK(v && json_array_size(v) == 5, "lone surrogates are accepted");
    if (v) {
        TAP_STR_EQ(json_string_value(json_array_get(v, 0)), "\xef\xbf\xbd", "\\ud800 is U+FFFD");
        TAP_STR_EQ(json_string_value(json_array_get(v, 1)), "\xef\xbf\xbd\xef\xbf\xbd",
                   "low then high: two U+FFFD");
        TAP_STR_EQ(json_string_value(json_array_get(v, 2)), "\xef\xbf\xbd" "A",
                   "high then non-surrogate");
        TAP_STR_EQ(json_string_value(json_array_get(v, 3)), "\xf0\x9f\x98\x80", "pair joined");
        TAP_STR_EQ(json_string_value(json_array_get(v, 4)), "\xef\xbf\xbd\xf0\x90\x80\x80",
                   "a high surrogate before a pair");
    }
    json_decref(v);

    /* U+0000 inside values and keys. */
    v = ac_pyjson_loads("{\"a\\u0000b\": \"x\\u0000y\", \"a\": 2}", 32, 0, NULL, 0);
    TAP_OK(v && json_object_size(v) == 2, "keys differing after a NUL are distinct");
    if (v) {
        json_object_keylen_foreach(v, k, klen, val) {
            if (klen == 3 && memcmp(k, "a\0b", 3) == 0 && json_string_length(val) == 3 &&
                memcmp(json_string_value(val), "x\0y", 3) == 0)
                seen |= 1;
            if (klen == 1 && json_integer_value(val) == 2)
                seen |= 2;
        }
        TAP_INT_EQ(seen, 3, "NULs are kept in keys and values");
        TAP_OK(json_integer_value(json_object_get(v, "a")) == 2, "json_object_get(\"a\")");
    }
    json_decref(v);

    /* Whole input with NULs after the value is still checked. */
    TAP_STR_EQ(outcome("\"ok\"\0\0", 6, 0),
               "JSONDecodeError: Extra data: line 1 column 5 (char 4)", "NULs after the value");
    /* Bytes past len are never looked at. */
    TAP_STR_EQ(outcome("[1]garbage", 3, 0), "OK", "only len bytes are read");
    TAP_STR_EQ(outcome("\"abc\"", 4, 0),
               "JSONDecodeError: Unterminated string starting at: line 1 column 1 (char 0)",
               "a quote past len does not terminate");
}

static void test_error_fields(void)
{
    struct ac_pyjson_error e;
    const char *doc = "{\r\n  \"cl\xc3\xa9\": [1,\r\n   \xe6\x97\xa5]\r\n}";
    json_t *v = ac_pyjson_loadx(doc, strlen(doc), AC_PYJSON_READ_TEXT, &e);

    TAP_OK(!v && e.exc == AC_PYJSON_EXC_DECODE, "JSONDecodeError kind");
    TAP_STR_EQ(e.exc_name, "JSONDecodeError", "exc_name");
    TAP_INT_EQ(e.pos, 18, "pos counts code points after newline translation");
    TAP_INT_EQ(e.lineno, 3, "lineno");
    TAP_INT_EQ(e.colno, 4, "colno");
    TAP_STR_EQ(e.msg, "Expecting value: line 3 column 4 (char 18)", "message");
    v = ac_pyjson_loadx(doc, strlen(doc), 0, &e);
    TAP_STR_EQ(e.msg, "Expecting value: line 3 column 4 (char 20)", "without read_text, \\r counts");

    v = ac_pyjson_loadx("\"\xe2\x82\xac\xe2\x82\"", 7, 0, &e);
    TAP_OK(!v && e.exc == AC_PYJSON_EXC_UNICODE && e.pos == 4, "UnicodeDecodeError kind, byte pos");
    TAP_STR_EQ(e.msg, "'utf-8' codec can't decode bytes in position 4-5: invalid continuation byte",
               "UnicodeDecodeError message");
    v = ac_pyjson_loadx("[[]", 3, 0, &e);
    TAP_OK(!v && e.exc == AC_PYJSON_EXC_DECODE && e.pos == 3 && e.lineno == 1 && e.colno == 4,
           "error at end of input");
    v = ac_pyjson_loadx("[]", 2, 0, &e);
    TAP_OK(v && e.exc == AC_PYJSON_EXC_NONE && e.msg[0] == '\0' && e.exc_name[0] == '\0',
           "success clears the error");
    json_decref(v);
    v = ac_pyjson_loadx("x", 1, 0, NULL);
    TAP_OK(!v, "a NULL error pointer is allowed");
}

static void test_loads_buffer(void)
{
    char buf[16], big[AC_PYJSON_MSG_MAX];
    json_t *v;

    memset(buf, 'z', sizeof buf);
    v = ac_pyjson_loads("", 0, 0, buf, 10);
    TAP_OK(!v && strcmp(buf, "Expecting") == 0 && buf[10] == 'z', "errbuf is truncated to errsize");
    TAP_OK(!ac_pyjson_loads("x", 1, 0, NULL, 0), "errbuf may be NULL");
    memset(buf, 'z', sizeof buf);
    TAP_OK(!ac_pyjson_loads("x", 1, 0, buf, 0) && buf[0] == 'z', "errsize 0 writes nothing");
    v = ac_pyjson_loads("1", 1, 0, buf, sizeof buf);
    TAP_OK(v && buf[0] == '\0', "errbuf is emptied on success");
    json_decref(v);
    v = ac_pyjson_loads(NULL, 0, 0, big, sizeof big);
    TAP_STR_EQ(v ? "value" : big, "Expecting value: line 1 column 1 (char 0)", "NULL data, length 0");
}

/* Nesting: AC_PYJSON_MAX_DEPTH levels decode; one more is Python's
 * RecursionError text; 200000 levels neither crash nor recurse. */
static void test_depth(void)
{
    size_t n = 200000, d = AC_PYJSON_MAX_DEPTH, i;
    char *s = malloc(2 * n + 1);
    struct ac_pyjson_error e;
    json_t *v, *p;
    size_t depth = 0;

    if (!s)
        return;
    memset(s, '[', d);
    memset(s + d, ']', d);
    v = ac_pyjson_loadx(s, 2 * d, 0, &e);
    for (p = v; p && json_is_array(p); p = json_array_get(p, 0))
        depth++;
    TAP_INT_EQ(depth, d, "%zu nested arrays decode", d);
    json_decref(v);

    memset(s, '[', d + 1);
    memset(s + d + 1, ']', d + 1);
    v = ac_pyjson_loadx(s, 2 * d + 2, 0, &e);
    TAP_OK(!v && e.exc == AC_PYJSON_EXC_RECURSION, "%zu nested arrays: RecursionError", d + 1);
    TAP_STR_EQ(e.msg, "maximum recursion depth exceeded while decoding a JSON array from a unicode string",
               "array message");
    for (i = 0; i < d + 1; i++)
        memcpy(s + 5 * i, "{\"a\":", 5);
    v = ac_pyjson_loadx(s, 5 * (d + 1), 0, &e);
    TAP_STR_EQ(v ? "value" : e.msg,
               "maximum recursion depth exceeded while decoding a JSON object from a unicode string",
               "object message");
    memset(s, '[', n);
    v = ac_pyjson_loadx(s, n, 0, &e);
    TAP_OK(!v && e.exc == AC_PYJSON_EXC_RECURSION, "%zu open brackets", n);
    /* Python scans left to right: an error before the limit wins. */
    memcpy(s, "[x", 2);
    v = ac_pyjson_loadx(s, n, 0, &e);
    TAP_STR_EQ(v ? "value" : e.msg, "Expecting value: line 1 column 2 (char 1)",
               "an earlier syntax error wins over depth");
    free(s);
}

/* Mutated documents: every result is a value or a message, never a
 * crash (run under SANITIZE=address,undefined for the real check). */
static uint32_t rng_state = 20240601u;

static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static void test_fuzz(void)
{
    static const char *const tokens[] = {
        ",", ":", "[", "]", "{", "}", "\"", "\\", "\\u", "\\ud800", "\\udc00", " ", "\n",
        "\r", "\r\n", "\t", "\f", "NaN", "Infinity", "-", "e", "E+", ".", "0", "9", "n",
        "null", "true", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80", "\xff", "\xc3",
        "\xe2\x82", "\xed\xa0\x80", "\xef\xbb\xbf", "\x01", "\x1f", "99999999999999999999",
    };
    size_t iter, nbase = COUNT(ok_cases) + COUNT(err_cases);
    int bad = 0, values = 0, errors = 0, dumped = 0;

    for (iter = 0; iter < 6000; iter++) {
        size_t b = rng() % nbase, len, cap, m, nmut;
        const char *src;
        char *s, msg[AC_PYJSON_MSG_MAX];
        struct ac_pyjson_error e;
        json_t *v;
        int flags = (int)(rng() % 2);

        if (b < COUNT(ok_cases)) {
            src = ok_cases[b].input;
            len = ok_cases[b].len;
        } else {
            src = err_cases[b - COUNT(ok_cases)].input;
            len = err_cases[b - COUNT(ok_cases)].len;
        }
        cap = len + 256;
        s = malloc(cap);
        if (!s)
            break;
        memcpy(s, src, len);
        nmut = 1 + rng() % 4;
        for (m = 0; m < nmut; m++) {
            size_t pos = len ? rng() % (len + 1) : 0, op = rng() % 5;
            if (op == 0 && len > 0) {                           /* delete a byte */
                if (pos == len)
                    pos--;
                memmove(s + pos, s + pos + 1, len - pos - 1);
                len--;
            } else if (op == 1) {                               /* insert a token */
                const char *t = tokens[rng() % COUNT(tokens)];
                size_t tl = strlen(t);
                if (len + tl > cap)
                    continue;
                memmove(s + pos + tl, s + pos, len - pos);
                memcpy(s + pos, t, tl);
                len += tl;
            } else if (op == 2 && len > 0) {                    /* overwrite a byte */
                s[pos == len ? pos - 1 : pos] = (char)(rng() & 0xFF);
            } else if (op == 3) {                               /* truncate */
                len = pos;
            } else if (len > 0 && len < cap / 2) {              /* repeat a slice */
                size_t from = rng() % len, sl = 1 + rng() % 16;
                if (sl > len - from)
                    sl = len - from;
                memmove(s + pos + sl, s + pos, len - pos);
                memmove(s + pos, s + (from >= pos ? from + sl : from), sl);
                len += sl;
            }
        }
        /* Exactly len bytes, so ASan sees any over-read. */
        {
            char *exact = dup_exact(s, len);
            free(s);
            s = exact;
        }
        v = ac_pyjson_loadx(s, len, flags, &e);
        if (v) {
            char *d = ac_json_dump(v, &style_task, NULL);
            values++;
            if (d)
                dumped++;
            if (!d || e.exc != AC_PYJSON_EXC_NONE)
                bad++;
            free(d);
            json_decref(v);
        } else {
            errors++;
            if (e.exc == AC_PYJSON_EXC_NONE || e.msg[0] == '\0' || e.exc_name[0] == '\0')
                bad++;
            /* Deterministic, and loads() says the same. */
            v = ac_pyjson_loads(s, len, flags, msg, sizeof msg);
            if (v || strcmp(msg, e.msg) != 0)
                bad++;
            json_decref(v);
        }
        free(s);
    }
    TAP_INT_EQ(bad, 0, "fuzz: %d values, %d errors, each a value or a message", values, errors);
    TAP_INT_EQ(dumped, values, "fuzz: every decoded value can be dumped");
    TAP_OK(values > 100 && errors > 1000, "fuzz: both outcomes are exercised");
}

/* repr() of decoded values, as the task store prints them in messages
 * ("unknown task status: None"); expected texts from python3. */
static void test_repr(void)
{
    static const struct { const char *json, *want; } cases[] = {
        { "null", "None" }, { "true", "True" }, { "false", "False" }, { "5", "5" },
        { "1.5", "1.5" }, { "1e400", "inf" }, { "-Infinity", "-inf" }, { "NaN", "nan" },
        { "2e-05", "2e-05" }, { "\"a'b\"", "\"a'b\"" }, { "\"x\"", "'x'" },
        { "[1, \"x\", null]", "[1, 'x', None]" }, { "{\"k\": [true, -0.0]}", "{'k': [True, -0.0]}" },
        { "[]", "[]" }, { "{}", "{}" },
    };
    char out[128], small[8];
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = ac_pyjson_loads(cases[i].json, strlen(cases[i].json), 0, NULL, 0);
        TAP_STR_EQ(ac_pyjson_repr(v, out, sizeof out), cases[i].want, "repr of %s", cases[i].json);
        json_decref(v);
    }
    {
        json_t *v = ac_pyjson_loads("[\"abcdefgh\"]", 12, 0, NULL, 0);
        ac_pyjson_repr(v, small, sizeof small);
        TAP_INT_EQ((long long)strlen(small), 7, "a full buffer cuts the repr and stays terminated");
        json_decref(v);
    }
}

int main(void)
{
    test_repr();
    test_error_table();
    test_ok_table();
    test_long_inputs();
    test_nonfinite();
    test_big_ints();
    test_strings();
    test_error_fields();
    test_loads_buffer();
    test_depth();
    test_fuzz();
    return tap_done();
}
