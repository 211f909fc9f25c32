/*
 * test_json.c - JSON written byte for byte as Python's json.dumps (json.h),
 * Python float repr(), and the _meta.json record of docs/format.md 3.2.
 *
 * Every expected string is python3 output on this machine:
 *   json.dumps(v, indent=2)                                   ac_json_py_indent2
 *   json.dumps(v)                                             style_default
 *   json.dumps(v, separators=(",", ":"))                      style_compact
 *   json.dumps(v, separators=(",", ":"), ensure_ascii=False,
 *              sort_keys=True)                                style_event (format.md 3.10)
 *   json.dumps(v, indent=2, ensure_ascii=False)               style_task (format.md 3.5)
 *   json.dumps(v, indent=2, ensure_ascii=False, sort_keys=True) style_lock (format.md 3.7)
 * The input of each case is json.dumps(v), loaded with jansson.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agentchat/channel.h"
#include "agentchat/json.h"
#include "tap.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct ac_json_style style_default = { -1, 1, 0, ", ", ": " };
static const struct ac_json_style style_compact = { -1, 1, 0, ",", ":" };
static const struct ac_json_style style_event = { -1, 0, 1, ",", ":" };
static const struct ac_json_style style_task = { 2, 0, 0, ",", ": " };
static const struct ac_json_style style_lock = { 2, 0, 1, ",", ": " };

struct dump_case {
    const char *name;
    const struct ac_json_style *style;
    const char *input;
    const char *want;
};

static const struct dump_case dump_cases[] = {
    { "object / indent2", &ac_json_py_indent2, "{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": {}, \"e\": [], \"f\": true, \"g\": false, \"h\": \"x\"}",
      "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2,\n    {\n      \"c\": null\n    }\n  ],\n  \"d\": {},\n  \"e\": [],\n  \"f\": true,\n  \"g\": false,\n  \"h\": \"x\"\n}" },
    { "object / default", &style_default, "{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": {}, \"e\": [], \"f\": true, \"g\": false, \"h\": \"x\"}",
      "{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": {}, \"e\": [], \"f\": true, \"g\": false, \"h\": \"x\"}" },
    { "object / compact ascii", &style_compact, "{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": {}, \"e\": [], \"f\": true, \"g\": false, \"h\": \"x\"}",
      "{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":{},\"e\":[],\"f\":true,\"g\":false,\"h\":\"x\"}" },
    { "object / compact utf8 sorted", &style_event, "{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": {}, \"e\": [], \"f\": true, \"g\": false, \"h\": \"x\"}",
      "{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":{},\"e\":[],\"f\":true,\"g\":false,\"h\":\"x\"}" },
    { "object / indent2 utf8", &style_task, "{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": {}, \"e\": [], \"f\": true, \"g\": false, \"h\": \"x\"}",
      "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2,\n    {\n      \"c\": null\n    }\n  ],\n  \"d\": {},\n  \"e\": [],\n  \"f\": true,\n  \"g\": false,\n  \"h\": \"x\"\n}" },
    { "object / indent2 utf8 sorted", &style_lock, "{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": {}, \"e\": [], \"f\": true, \"g\": false, \"h\": \"x\"}",
      "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2,\n    {\n      \"c\": null\n    }\n  ],\n  \"d\": {},\n  \"e\": [],\n  \"f\": true,\n  \"g\": false,\n  \"h\": \"x\"\n}" },
    { "strings / indent2", &ac_json_py_indent2, "[\"\\u00e9\", \"\\u65e5\\u672c\", \"\\ud83d\\ude00\", \"\\u0000\\u0001\\u001f\", \"\\u007f\", \"\\\"\\\\/\", \"\\b\\f\\n\\r\\t\", \"\\u2028\\u2029\", \"\\uffff\", \"\\udbff\\udfff\", \"a\\u00fcb\", \"\\u000b\\u001b ~\"]",
      "[\n  \"\\u00e9\",\n  \"\\u65e5\\u672c\",\n  \"\\ud83d\\ude00\",\n  \"\\u0000\\u0001\\u001f\",\n  \"\\u007f\",\n  \"\\\"\\\\/\",\n  \"\\b\\f\\n\\r\\t\",\n  \"\\u2028\\u2029\",\n  \"\\uffff\",\n  \"\\udbff\\udfff\",\n  \"a\\u00fcb\",\n  \"\\u000b\\u001b ~\"\n]" },
    { "strings / default", &style_default, "[\"\\u00e9\", \"\\u65e5\\u672c\", \"\\ud83d\\ude00\", \"\\u0000\\u0001\\u001f\", \"\\u007f\", \"\\\"\\\\/\", \"\\b\\f\\n\\r\\t\", \"\\u2028\\u2029\", \"\\uffff\", \"\\udbff\\udfff\", \"a\\u00fcb\", \"\\u000b\\u001b ~\"]",
      "[\"\\u00e9\", \"\\u65e5\\u672c\", \"\\ud83d\\ude00\", \"\\u0000\\u0001\\u001f\", \"\\u007f\", \"\\\"\\\\/\", \"\\b\\f\\n\\r\\t\", \"\\u2028\\u2029\", \"\\uffff\", \"\\udbff\\udfff\", \"a\\u00fcb\", \"\\u000b\\u001b ~\"]" },
    { "strings / compact ascii", &style_compact, "[\"\\u00e9\", \"\\u65e5\\u672c\", \"\\ud83d\\ude00\", \"\\u0000\\u0001\\u001f\", \"\\u007f\", \"\\\"\\\\/\", \"\\b\\f\\n\\r\\t\", \"\\u2028\\u2029\", \"\\uffff\", \"\\udbff\\udfff\", \"a\\u00fcb\", \"\\u000b\\u001b ~\"]",
      "[\"\\u00e9\",\"\\u65e5\\u672c\",\"\\ud83d\\ude00\",\"\\u0000\\u0001\\u001f\",\"\\u007f\",\"\\\"\\\\/\",\"\\b\\f\\n\\r\\t\",\"\\u2028\\u2029\",\"\\uffff\",\"\\udbff\\udfff\",\"a\\u00fcb\",\"\\u000b\\u001b ~\"]" },
    { "strings / compact utf8 sorted", &style_event, "[\"\\u00e9\", \"\\u65e5\\u672c\", \"\\ud83d\\ude00\", \"\\u0000\\u0001\\u001f\", \"\\u007f\", \"\\\"\\\\/\", \"\\b\\f\\n\\r\\t\", \"\\u2028\\u2029\", \"\\uffff\", \"\\udbff\\udfff\", \"a\\u00fcb\", \"\\u000b\\u001b ~\"]",
      "[\"\xc3\xa9\",\"\xe6\x97\xa5\xe6\x9c\xac\",\"\xf0\x9f\x98\x80\",\"\\u0000\\u0001\\u001f\",\"\x7f\",\"\\\"\\\\/\",\"\\b\\f\\n\\r\\t\",\"\xe2\x80\xa8\xe2\x80\xa9\",\"\xef\xbf\xbf\",\"\xf4\x8f\xbf\xbf\",\"a\xc3\xbc" "b\",\"\\u000b\\u001b ~\"]" },
    { "strings / indent2 utf8", &style_task, "[\"\\u00e9\", \"\\u65e5\\u672c\", \"\\ud83d\\ude00\", \"\\u0000\\u0001\\u001f\", \"\\u007f\", \"\\\"\\\\/\", \"\\b\\f\\n\\r\\t\", \"\\u2028\\u2029\", \"\\uffff\", \"\\udbff\\udfff\", \"a\\u00fcb\", \"\\u000b\\u001b ~\"]",
      "[\n  \"\xc3\xa9\",\n  \"\xe6\x97\xa5\xe6\x9c\xac\",\n  \"\xf0\x9f\x98\x80\",\n  \"\\u0000\\u0001\\u001f\",\n  \"\x7f\",\n  \"\\\"\\\\/\",\n  \"\\b\\f\\n\\r\\t\",\n  \"\xe2\x80\xa8\xe2\x80\xa9\",\n  \"\xef\xbf\xbf\",\n  \"\xf4\x8f\xbf\xbf\",\n  \"a\xc3\xbc" "b\",\n  \"\\u000b\\u001b ~\"\n]" },
    { "strings / indent2 utf8 sorted", &style_lock, "[\"\\u00e9\", \"\\u65e5\\u672c\", \"\\ud83d\\ude00\", \"\\u0000\\u0001\\u001f\", \"\\u007f\", \"\\\"\\\\/\", \"\\b\\f\\n\\r\\t\", \"\\u2028\\u2029\", \"\\uffff\", \"\\udbff\\udfff\", \"a\\u00fcb\", \"\\u000b\\u001b ~\"]",
      "[\n  \"\xc3\xa9\",\n  \"\xe6\x97\xa5\xe6\x9c\xac\",\n  \"\xf0\x9f\x98\x80\",\n  \"\\u0000\\u0001\\u001f\",\n  \"\x7f\",\n  \"\\\"\\\\/\",\n  \"\\b\\f\\n\\r\\t\",\n  \"\xe2\x80\xa8\xe2\x80\xa9\",\n  \"\xef\xbf\xbf\",\n  \"\xf4\x8f\xbf\xbf\",\n  \"a\xc3\xbc" "b\",\n  \"\\u000b\\u001b ~\"\n]" },
    { "numbers / indent2", &ac_json_py_indent2, "[0, -1, 9223372036854775807, -9223372036854775808, 1.0, 0.1, 1e-05, 1e+16, -0.0, 3.14, 1e+300, 0.0001, 123456789.125, 1e+22, 5e-324]",
      "[\n  0,\n  -1,\n  9223372036854775807,\n  -9223372036854775808,\n  1.0,\n  0.1,\n  1e-05,\n  1e+16,\n  -0.0,\n  3.14,\n  1e+300,\n  0.0001,\n  123456789.125,\n  1e+22,\n  5e-324\n]" },
    { "numbers / default", &style_default, "[0, -1, 9223372036854775807, -9223372036854775808, 1.0, 0.1, 1e-05, 1e+16, -0.0, 3.14, 1e+300, 0.0001, 123456789.125, 1e+22, 5e-324]",
      "[0, -1, 9223372036854775807, -9223372036854775808, 1.0, 0.1, 1e-05, 1e+16, -0.0, 3.14, 1e+300, 0.0001, 123456789.125, 1e+22, 5e-324]" },
    { "numbers / compact ascii", &style_compact, "[0, -1, 9223372036854775807, -9223372036854775808, 1.0, 0.1, 1e-05, 1e+16, -0.0, 3.14, 1e+300, 0.0001, 123456789.125, 1e+22, 5e-324]",
      "[0,-1,9223372036854775807,-9223372036854775808,1.0,0.1,1e-05,1e+16,-0.0,3.14,1e+300,0.0001,123456789.125,1e+22,5e-324]" },
    { "numbers / compact utf8 sorted", &style_event, "[0, -1, 9223372036854775807, -9223372036854775808, 1.0, 0.1, 1e-05, 1e+16, -0.0, 3.14, 1e+300, 0.0001, 123456789.125, 1e+22, 5e-324]",
      "[0,-1,9223372036854775807,-9223372036854775808,1.0,0.1,1e-05,1e+16,-0.0,3.14,1e+300,0.0001,123456789.125,1e+22,5e-324]" },
    { "numbers / indent2 utf8", &style_task, "[0, -1, 9223372036854775807, -9223372036854775808, 1.0, 0.1, 1e-05, 1e+16, -0.0, 3.14, 1e+300, 0.0001, 123456789.125, 1e+22, 5e-324]",
      "[\n  0,\n  -1,\n  9223372036854775807,\n  -9223372036854775808,\n  1.0,\n  0.1,\n  1e-05,\n  1e+16,\n  -0.0,\n  3.14,\n  1e+300,\n  0.0001,\n  123456789.125,\n  1e+22,\n  5e-324\n]" },
    { "numbers / indent2 utf8 sorted", &style_lock, "[0, -1, 9223372036854775807, -9223372036854775808, 1.0, 0.1, 1e-05, 1e+16, -0.0, 3.14, 1e+300, 0.0001, 123456789.125, 1e+22, 5e-324]",
      "[\n  0,\n  -1,\n  9223372036854775807,\n  -9223372036854775808,\n  1.0,\n  0.1,\n  1e-05,\n  1e+16,\n  -0.0,\n  3.14,\n  1e+300,\n  0.0001,\n  123456789.125,\n  1e+22,\n  5e-324\n]" },
    { "nested empty / indent2", &ac_json_py_indent2, "[[], {}, [[]], {\"a\": {}}, [{}], {\"k\": [[], [{}]]}]",
      "[\n  [],\n  {},\n  [\n    []\n  ],\n  {\n    \"a\": {}\n  },\n  [\n    {}\n  ],\n  {\n    \"k\": [\n      [],\n      [\n        {}\n      ]\n    ]\n  }\n]" },
    { "nested empty / default", &style_default, "[[], {}, [[]], {\"a\": {}}, [{}], {\"k\": [[], [{}]]}]",
      "[[], {}, [[]], {\"a\": {}}, [{}], {\"k\": [[], [{}]]}]" },
    { "nested empty / compact ascii", &style_compact, "[[], {}, [[]], {\"a\": {}}, [{}], {\"k\": [[], [{}]]}]",
      "[[],{},[[]],{\"a\":{}},[{}],{\"k\":[[],[{}]]}]" },
    { "nested empty / compact utf8 sorted", &style_event, "[[], {}, [[]], {\"a\": {}}, [{}], {\"k\": [[], [{}]]}]",
      "[[],{},[[]],{\"a\":{}},[{}],{\"k\":[[],[{}]]}]" },
    { "nested empty / indent2 utf8", &style_task, "[[], {}, [[]], {\"a\": {}}, [{}], {\"k\": [[], [{}]]}]",
      "[\n  [],\n  {},\n  [\n    []\n  ],\n  {\n    \"a\": {}\n  },\n  [\n    {}\n  ],\n  {\n    \"k\": [\n      [],\n      [\n        {}\n      ]\n    ]\n  }\n]" },
    { "nested empty / indent2 utf8 sorted", &style_lock, "[[], {}, [[]], {\"a\": {}}, [{}], {\"k\": [[], [{}]]}]",
      "[\n  [],\n  {},\n  [\n    []\n  ],\n  {\n    \"a\": {}\n  },\n  [\n    {}\n  ],\n  {\n    \"k\": [\n      [],\n      [\n        {}\n      ]\n    ]\n  }\n]" },
    { "scalar string / indent2", &ac_json_py_indent2, "\"top\"",
      "\"top\"" },
    { "scalar string / default", &style_default, "\"top\"",
      "\"top\"" },
    { "scalar string / compact ascii", &style_compact, "\"top\"",
      "\"top\"" },
    { "scalar string / compact utf8 sorted", &style_event, "\"top\"",
      "\"top\"" },
    { "scalar string / indent2 utf8", &style_task, "\"top\"",
      "\"top\"" },
    { "scalar string / indent2 utf8 sorted", &style_lock, "\"top\"",
      "\"top\"" },
    { "scalar int / indent2", &ac_json_py_indent2, "42",
      "42" },
    { "scalar int / default", &style_default, "42",
      "42" },
    { "scalar int / compact ascii", &style_compact, "42",
      "42" },
    { "scalar int / compact utf8 sorted", &style_event, "42",
      "42" },
    { "scalar int / indent2 utf8", &style_task, "42",
      "42" },
    { "scalar int / indent2 utf8 sorted", &style_lock, "42",
      "42" },
    { "null / indent2", &ac_json_py_indent2, "null",
      "null" },
    { "null / default", &style_default, "null",
      "null" },
    { "null / compact ascii", &style_compact, "null",
      "null" },
    { "null / compact utf8 sorted", &style_event, "null",
      "null" },
    { "null / indent2 utf8", &style_task, "null",
      "null" },
    { "null / indent2 utf8 sorted", &style_lock, "null",
      "null" },
    { "empty list / indent2", &ac_json_py_indent2, "[]",
      "[]" },
    { "empty list / default", &style_default, "[]",
      "[]" },
    { "empty list / compact ascii", &style_compact, "[]",
      "[]" },
    { "empty list / compact utf8 sorted", &style_event, "[]",
      "[]" },
    { "empty list / indent2 utf8", &style_task, "[]",
      "[]" },
    { "empty list / indent2 utf8 sorted", &style_lock, "[]",
      "[]" },
    { "empty object / indent2", &ac_json_py_indent2, "{}",
      "{}" },
    { "empty object / default", &style_default, "{}",
      "{}" },
    { "empty object / compact ascii", &style_compact, "{}",
      "{}" },
    { "empty object / compact utf8 sorted", &style_event, "{}",
      "{}" },
    { "empty object / indent2 utf8", &style_task, "{}",
      "{}" },
    { "empty object / indent2 utf8 sorted", &style_lock, "{}",
      "{}" },
    { "unicode keys / indent2", &ac_json_py_indent2, "{\"\\u00fc\": \"\\u674e\", \"b\": {\"\\ud83d\\ude00\": 1}, \"a\": \"z\"}",
      "{\n  \"\\u00fc\": \"\\u674e\",\n  \"b\": {\n    \"\\ud83d\\ude00\": 1\n  },\n  \"a\": \"z\"\n}" },
    { "unicode keys / default", &style_default, "{\"\\u00fc\": \"\\u674e\", \"b\": {\"\\ud83d\\ude00\": 1}, \"a\": \"z\"}",
      "{\"\\u00fc\": \"\\u674e\", \"b\": {\"\\ud83d\\ude00\": 1}, \"a\": \"z\"}" },
    { "unicode keys / compact ascii", &style_compact, "{\"\\u00fc\": \"\\u674e\", \"b\": {\"\\ud83d\\ude00\": 1}, \"a\": \"z\"}",
      "{\"\\u00fc\":\"\\u674e\",\"b\":{\"\\ud83d\\ude00\":1},\"a\":\"z\"}" },
    { "unicode keys / compact utf8 sorted", &style_event, "{\"\\u00fc\": \"\\u674e\", \"b\": {\"\\ud83d\\ude00\": 1}, \"a\": \"z\"}",
      "{\"a\":\"z\",\"b\":{\"\xf0\x9f\x98\x80\":1},\"\xc3\xbc\":\"\xe6\x9d\x8e\"}" },
    { "unicode keys / indent2 utf8", &style_task, "{\"\\u00fc\": \"\\u674e\", \"b\": {\"\\ud83d\\ude00\": 1}, \"a\": \"z\"}",
      "{\n  \"\xc3\xbc\": \"\xe6\x9d\x8e\",\n  \"b\": {\n    \"\xf0\x9f\x98\x80\": 1\n  },\n  \"a\": \"z\"\n}" },
    { "unicode keys / indent2 utf8 sorted", &style_lock, "{\"\\u00fc\": \"\\u674e\", \"b\": {\"\\ud83d\\ude00\": 1}, \"a\": \"z\"}",
      "{\n  \"a\": \"z\",\n  \"b\": {\n    \"\xf0\x9f\x98\x80\": 1\n  },\n  \"\xc3\xbc\": \"\xe6\x9d\x8e\"\n}" },
    { "insertion order / indent2", &ac_json_py_indent2, "{\"zeta\": 1, \"alpha\": 2, \"mid\": {\"y\": 1, \"b\": 2}}",
      "{\n  \"zeta\": 1,\n  \"alpha\": 2,\n  \"mid\": {\n    \"y\": 1,\n    \"b\": 2\n  }\n}" },
    { "insertion order / default", &style_default, "{\"zeta\": 1, \"alpha\": 2, \"mid\": {\"y\": 1, \"b\": 2}}",
      "{\"zeta\": 1, \"alpha\": 2, \"mid\": {\"y\": 1, \"b\": 2}}" },
    { "insertion order / compact ascii", &style_compact, "{\"zeta\": 1, \"alpha\": 2, \"mid\": {\"y\": 1, \"b\": 2}}",
      "{\"zeta\":1,\"alpha\":2,\"mid\":{\"y\":1,\"b\":2}}" },
    { "insertion order / compact utf8 sorted", &style_event, "{\"zeta\": 1, \"alpha\": 2, \"mid\": {\"y\": 1, \"b\": 2}}",
      "{\"alpha\":2,\"mid\":{\"b\":2,\"y\":1},\"zeta\":1}" },
    { "insertion order / indent2 utf8", &style_task, "{\"zeta\": 1, \"alpha\": 2, \"mid\": {\"y\": 1, \"b\": 2}}",
      "{\n  \"zeta\": 1,\n  \"alpha\": 2,\n  \"mid\": {\n    \"y\": 1,\n    \"b\": 2\n  }\n}" },
    { "insertion order / indent2 utf8 sorted", &style_lock, "{\"zeta\": 1, \"alpha\": 2, \"mid\": {\"y\": 1, \"b\": 2}}",
      "{\n  \"alpha\": 2,\n  \"mid\": {\n    \"b\": 2,\n    \"y\": 1\n  },\n  \"zeta\": 1\n}" },
    { "task-like / indent2", &ac_json_py_indent2, "{\"id\": \"a\", \"channel\": \"c\", \"title\": \"zo\\u00eb \\ud83d\\ude00\", \"status\": \"open\", \"owner\": null, \"depends_on\": [], \"files_hint\": [\"src/x.c\"], \"lease_expires_at\": null}",
      "{\n  \"id\": \"a\",\n  \"channel\": \"c\",\n  \"title\": \"zo\\u00eb \\ud83d\\ude00\",\n  \"status\": \"open\",\n  \"owner\": null,\n  \"depends_on\": [],\n  \"files_hint\": [\n    \"src/x.c\"\n  ],\n  \"lease_expires_at\": null\n}" },
    { "task-like / default", &style_default, "{\"id\": \"a\", \"channel\": \"c\", \"title\": \"zo\\u00eb \\ud83d\\ude00\", \"status\": \"open\", \"owner\": null, \"depends_on\": [], \"files_hint\": [\"src/x.c\"], \"lease_expires_at\": null}",
      "{\"id\": \"a\", \"channel\": \"c\", \"title\": \"zo\\u00eb \\ud83d\\ude00\", \"status\": \"open\", \"owner\": null, \"depends_on\": [], \"files_hint\": [\"src/x.c\"], \"lease_expires_at\": null}" },
    { "task-like / compact ascii", &style_compact, "{\"id\": \"a\", \"channel\": \"c\", \"title\": \"zo\\u00eb \\ud83d\\ude00\", \"status\": \"open\", \"owner\": null, \"depends_on\": [], \"files_hint\": [\"src/x.c\"], \"lease_expires_at\": null}",
      "{\"id\":\"a\",\"channel\":\"c\",\"title\":\"zo\\u00eb \\ud83d\\ude00\",\"status\":\"open\",\"owner\":null,\"depends_on\":[],\"files_hint\":[\"src/x.c\"],\"lease_expires_at\":null}" },
    { "task-like / compact utf8 sorted", &style_event, "{\"id\": \"a\", \"channel\": \"c\", \"title\": \"zo\\u00eb \\ud83d\\ude00\", \"status\": \"open\", \"owner\": null, \"depends_on\": [], \"files_hint\": [\"src/x.c\"], \"lease_expires_at\": null}",
      "{\"channel\":\"c\",\"depends_on\":[],\"files_hint\":[\"src/x.c\"],\"id\":\"a\",\"lease_expires_at\":null,\"owner\":null,\"status\":\"open\",\"title\":\"zo\xc3\xab \xf0\x9f\x98\x80\"}" },
    { "task-like / indent2 utf8", &style_task, "{\"id\": \"a\", \"channel\": \"c\", \"title\": \"zo\\u00eb \\ud83d\\ude00\", \"status\": \"open\", \"owner\": null, \"depends_on\": [], \"files_hint\": [\"src/x.c\"], \"lease_expires_at\": null}",
      "{\n  \"id\": \"a\",\n  \"channel\": \"c\",\n  \"title\": \"zo\xc3\xab \xf0\x9f\x98\x80\",\n  \"status\": \"open\",\n  \"owner\": null,\n  \"depends_on\": [],\n  \"files_hint\": [\n    \"src/x.c\"\n  ],\n  \"lease_expires_at\": null\n}" },
    { "task-like / indent2 utf8 sorted", &style_lock, "{\"id\": \"a\", \"channel\": \"c\", \"title\": \"zo\\u00eb \\ud83d\\ude00\", \"status\": \"open\", \"owner\": null, \"depends_on\": [], \"files_hint\": [\"src/x.c\"], \"lease_expires_at\": null}",
      "{\n  \"channel\": \"c\",\n  \"depends_on\": [],\n  \"files_hint\": [\n    \"src/x.c\"\n  ],\n  \"id\": \"a\",\n  \"lease_expires_at\": null,\n  \"owner\": null,\n  \"status\": \"open\",\n  \"title\": \"zo\xc3\xab \xf0\x9f\x98\x80\"\n}" },
};

/* The output shown in a diagnostic: escapes made visible. */
static void show(const char *label, const char *s)
{
    printf("#   %s ", label);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n')
            printf("\\n");
        else if (c < 0x20 || c >= 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    printf("\n");
}

static void test_dump(void)
{
    size_t i;
    for (i = 0; i < COUNT(dump_cases); i++) {
        const struct dump_case *c = &dump_cases[i];
        json_error_t jerr;
        json_t *v = json_loads(c->input, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        char *out;
        size_t len = 0;
        int ok;

        if (!v) {
            TAP_OK(0, "dump %s: jansson could not load the input: %s", c->name, jerr.text);
            continue;
        }
        out = ac_json_dump(v, c->style, &len);
        ok = out && len == strlen(c->want) && strcmp(out, c->want) == 0;
        TAP_OK(ok, "dump %s", c->name);
        if (!ok && out) {
            show("got ", out);
            show("want", c->want);
        }
        free(out);
        json_decref(v);
    }
}

/* Strings with a NUL and raw bytes need an explicit length. */
static void test_dump_nul(void)
{
    json_t *v = json_stringn("a\0b\x7f\xc3\xbc", 6);
    char *out;
    size_t len = 0;

    out = ac_json_dump(v, &style_compact, &len);
    TAP_STR_EQ(out, "\"a\\u0000b\\u007f\\u00fc\"", "dump NUL, DEL, U+00FC with ensure_ascii");
    free(out);
    out = ac_json_dump(v, &style_event, &len);
    TAP_OK(out && len == 13 && memcmp(out, "\"a\\u0000b\x7f\xc3\xbc\"", 13) == 0,
           "dump NUL, DEL, U+00FC without ensure_ascii (DEL and UTF-8 raw)");
    free(out);
    json_decref(v);
}

/* Python repr(float); the bit patterns are float.hex() of each value. */
static const struct { double x; const char *want; } repr_cases[] = {
    { 0x0.0p+0, "0.0" },
    { -0x0p+0, "-0.0" },
    { 0x1.0000000000000p+0, "1.0" },
    { -0x1.0000000000000p+0, "-1.0" },
    { 0x1.999999999999ap-4, "0.1" },
    { 0x1.3333333333334p-2, "0.30000000000000004" },
    { 0x1.5555555555555p-2, "0.3333333333333333" },
    { 0x1.5555555555555p-1, "0.6666666666666666" },
    { 0x1.4f8b588e368f1p-17, "1e-05" },
    { 0x1.a36e2eb1c432dp-14, "0.0001" },
    { 0x1.0624dd2f1a9fcp-10, "0.001" },
    { 0x1.ad7f29abcaf48p-24, "1e-07" },
    { 0x1.49da7e361ce4cp-33, "1.5e-10" },
    { 0x1.c6bf526340000p+49, "1000000000000000.0" },
    { 0x1.1c37937e08000p+53, "1e+16" },
    { 0x1.1c37937e07fffp+53, "9999999999999998.0" },
    { 0x1.0f0cf064dd592p+73, "1e+22" },
    { 0x1.52d02c7e14af6p+76, "1e+23" },
    { 0x1.fffffffffffffp+1023, "1.7976931348623157e+308" },
    { 0x0.0000000000001p-1022, "5e-324" },
    { 0x1.0000000000000p-1022, "2.2250738585072014e-308" },
    { 0x1.d6f3454800000p+26, "123456789.125" },
    { 0x1.91eb851eb851fp+1, "3.14" },
    { -0x1.4000000000000p+1, "-2.5" },
    { 0x1.9000000000000p+6, "100.0" },
    { 0x1.249ad2594c37dp+332, "1e+100" },
    { 0x1.0000000000000p-1, "0.5" },
    { 0x1.0000000000000p-2, "0.25" },
    { 0x1.56a95319d63e1p+63, "1.2345678901234567e+19" },
    { 0x1.1666666666666p+2, "4.35" },
    { 0x1.0000000000000p+53, "9007199254740992.0" },
    { 0x1.0000000000001p+53, "9007199254740994.0" },
    { 0x1.921fb54442d18p+1, "3.141592653589793" },
    { 0x1.5bf0a8b145769p+1, "2.718281828459045" },
    { 0x1.9999999999999p-1, "0.7999999999999999" },
    { 0x1.34a456d5cfaadp+10, "1234.5678" },
    { -0x1.56e1fc2f8f359p-997, "-1e-300" },
    { 0x1.0000000000000p-1022, "2.2250738585072014e-308" },
    { 0x0.0000000000003p-1022, "1.5e-323" },
    { 0x1.0000000000000p+16, "65536.0" },
    { 0x1.3333333333333p-2, "0.3" },
};

/* At a power of two the rounding interval of a double is lopsided (the gap
 * below is half the gap above): Python's repr (David Gay's shortest mode)
 * finds a 16-digit string one unit in the last place away from the
 * correctly rounded one, e.g. 2**-24 is "5.960464477539063e-08". */
static const struct { double x; const char *want; } repr_pow2_cases[] = {
    { 0x1.0000000000000p-24, "5.960464477539063e-08" },  /* 2**-24 */
    { 0x1.0000000000000p-44, "5.684341886080802e-14" },  /* 2**-44 */
    { 0x1.0000000000000p+89, "6.189700196426902e+26" },  /* 2**89 */
    { 0x1.0000000000000p+122, "5.316911983139664e+36" },  /* 2**122 */
    { 0x1.0000000000000p-1017, "7.120236347223045e-307" },  /* 2**-1017 */
};

static void test_float_repr(void)
{
    size_t i;
    char out[32];
    for (i = 0; i < COUNT(repr_cases); i++) {
        const char *want = repr_cases[i].want;
        ac_py_float_repr(repr_cases[i].x, out);
        TAP_STR_EQ(out, want, "repr(%s)", want ? want : "?");
    }
    ac_py_float_repr(INFINITY, out);
    TAP_STR_EQ(out, "inf", "repr(inf)");
    ac_py_float_repr(-INFINITY, out);
    TAP_STR_EQ(out, "-inf", "repr(-inf)");
    ac_py_float_repr(NAN, out);
    TAP_STR_EQ(out, "nan", "repr(nan)");
    for (i = 0; i < COUNT(repr_pow2_cases); i++) {
        const char *want = repr_pow2_cases[i].want;
        ac_py_float_repr(repr_pow2_cases[i].x, out);
        TAP_STR_EQ(out, want, "repr(%s) (power of two)", want ? want : "?");
    }
}

/* JSON numbers use the same repr, except the non-finite names. */
static void test_dump_reals(void)
{
    json_t *v = json_pack("[f,f,f,f]", 1.0, 1e-05, 1e16, -0.0);
    char *out = ac_json_dump(v, &style_compact, NULL);
    TAP_STR_EQ(out, "[1.0,1e-05,1e+16,-0.0]", "dump reals as Python floats");
    free(out);
    json_decref(v);
}

/* docs/format.md 3.2: exactly these bytes, no trailing newline. */
static void test_meta(void)
{
    static const char *const members[] = { "zo\xc3\xab", "\xe6\x9d\x8e" };
    static const char want[] =
        "{\n"
        "  \"channel\": \"\\u00fcn\\u00ef\",\n"
        "  \"members\": [\n"
        "    \"zo\\u00eb\",\n"
        "    \"\\u674e\"\n"
        "  ],\n"
        "  \"topic\": \"unicode ok\",\n"
        "  \"created\": \"2026-11-30T05:01:22+00:00\"\n"
        "}";
    static const char want_open[] =
        "{\n"
        "  \"channel\": \"demo\",\n"
        "  \"members\": [],\n"
        "  \"topic\": \"\",\n"
        "  \"created\": \"2026-11-30T05:01:22+00:00\"\n"
        "}";
    size_t len = 0;
    char *out = ac_meta_compose("\xc3\xbcn\xc3\xaf", members, 2, "unicode ok",
                                "2026-11-30T05:01:22+00:00", &len);
    json_t *parsed;

    TAP_STR_EQ(out, want, "_meta.json of the format.md 3.2 example");
    TAP_INT_EQ(len, sizeof want - 1, "_meta.json length (no trailing newline)");
    parsed = out ? ac_meta_parse(out, len) : NULL;
    TAP_OK(parsed && json_is_object(parsed) &&
           strcmp(json_string_value(json_object_get(parsed, "channel")), "\xc3\xbcn\xc3\xaf") == 0 &&
           json_array_size(json_object_get(parsed, "members")) == 2,
           "ac_meta_parse reads it back");
    json_decref(parsed);
    free(out);

    out = ac_meta_compose("demo", NULL, 0, "", "2026-11-30T05:01:22+00:00", &len);
    TAP_STR_EQ(out, want_open, "_meta.json of an open channel (members [], topic \"\")");
    free(out);

    out = ac_meta_compose("demo", NULL, 0, "  spaced topic\t", "t", &len);
    TAP_OK(out && strstr(out, "\"topic\": \"  spaced topic\\t\",\n"), "topic is stored untrimmed");
    free(out);

    parsed = ac_meta_parse("not json", 8);
    TAP_OK(parsed == NULL, "ac_meta_parse of garbage is NULL");
    parsed = ac_meta_parse("[1]", 3);
    TAP_OK(parsed && json_is_array(parsed), "ac_meta_parse of a non-object returns it");
    json_decref(parsed);
}

int main(void)
{
    test_dump();
    test_dump_nul();
    test_dump_reals();
    test_float_repr();
    test_meta();
    return tap_done();
}
