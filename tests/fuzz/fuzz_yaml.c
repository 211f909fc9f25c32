/*
 * fuzz_yaml.c - the YAML decoder (src/l_yaml.c on libyaml, with the scalar
 * resolution of src/yamlscalar.c) as config files and scripts use it, and
 * the pure-C scalar functions directly.
 *
 * Properties:
 *   - decode and decode_all never raise: a value, or nil with a message
 *     and YAML_INVALID; they agree (no document: decode gives yaml.null;
 *     one: the same value; more: decode refuses);
 *   - what decodes re-encodes (yaml.encode), the encoding decodes to an
 *     equal value (NaN equal to NaN, -0.0 distinct from 0.0, integers
 *     distinct from floats), and encoding that value again gives the same
 *     text (the promise decode(encode(v)) == v of l_yaml.c), for every
 *     document of decode_all too;
 *   - a plain scalar resolved as a float formats (ac_yaml_format_float) to
 *     a text that resolves back to the same float; a string that
 *     ac_yaml_plain_is_ambiguous calls unambiguous resolves as a string.
 */
#include "fuzz.h"

#include <math.h>

#include "agentchat/yamlscalar.h"
#include "fuzzlua.h"

static const char DRIVER[] =
    "local yaml = require 'agentchat.yaml'\n"
    "local function same(a, b)\n"
    "  if type(a) ~= type(b) then return false end\n"
    "  if type(a) == 'number' then\n"
    "    if a ~= a then return b ~= b end\n"
    "    return math.type(a) == math.type(b) and a == b and (a ~= 0 or 1 / a == 1 / b)\n"
    "  end\n"
    "  if type(a) ~= 'table' then return a == b end\n"
    "  for k, v in pairs(a) do if not same(v, b[k]) then return false end end\n"
    "  for k in pairs(b) do if a[k] == nil then return false end end\n"
    "  return true\n"
    "end\n"
    "local function roundtrip(v)\n"
    "  local ok, text = pcall(yaml.encode, v)\n"
    "  if not ok then error('a decoded value does not encode: ' .. tostring(text), 0) end\n"
    "  local v2, msg = yaml.decode(text)\n"
    "  if v2 == nil then error('the encoding does not decode: ' .. msg .. '\\n' .. text, 0) end\n"
    "  if not same(v, v2) then error('the round trip changed the value:\\n' .. text, 0) end\n"
    "  local text2 = yaml.encode(v2)\n"
    "  if text2 ~= text then error('encoding not stable:\\n' .. text .. '--- then ---\\n' .. text2, 0) end\n"
    "end\n"
    "return function(s)\n"
    "  local v, msg, code = yaml.decode(s)\n"
    "  if v == nil then\n"
    "    if type(msg) ~= 'string' or code ~= 'YAML_INVALID' then\n"
    "      error('decode failed without YAML_INVALID: ' .. tostring(msg) .. ' ' .. tostring(code), 0)\n"
    "    end\n"
    "  else\n"
    "    roundtrip(v)\n"
    "  end\n"
    "  local docs, msg2, code2 = yaml.decode_all(s)\n"
    "  if docs == nil then\n"
    "    if type(msg2) ~= 'string' or code2 ~= 'YAML_INVALID' then\n"
    "      error('decode_all failed without YAML_INVALID', 0)\n"
    "    end\n"
    "    if v ~= nil then error('decode accepts what decode_all refuses: ' .. msg2, 0) end\n"
    "    return\n"
    "  end\n"
    "  for _, d in ipairs(docs) do roundtrip(d) end\n"
    "  -- No document at all decodes to yaml.null; one to that document; more\n"
    "  -- are an error for decode.\n"
    "  if #docs == 0 then\n"
    "    if v ~= yaml.null then error('a text without documents decodes to ' .. tostring(v), 0) end\n"
    "  elseif #docs == 1 then\n"
    "    if v == nil then error('decode refuses the one document decode_all reads: ' .. msg, 0) end\n"
    "    if not same(docs[1], v) then error('decode and decode_all disagree', 0) end\n"
    "  elseif v ~= nil then\n"
    "    error('decode accepts ' .. #docs .. ' documents', 0)\n"
    "  end\n"
    "end\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_lua_init(DRIVER, 0);
    return 0;
}

static void check_scalar(const char *s, size_t len)
{
    struct ac_yaml_scalar v, back;
    char buf[32];
    size_t n;

    if (ac_yaml_resolve(s, len, &v) == AC_YAML_FLOAT) {
        n = ac_yaml_format_float(v.number, buf, sizeof buf);
        FUZZ_CHECK(n < sizeof buf && strlen(buf) == n, "float text too long");
        FUZZ_CHECK(ac_yaml_resolve(buf, n, &back) == AC_YAML_FLOAT, "'%s' is no float", buf);
        FUZZ_CHECK((isnan(v.number) && isnan(back.number)) ||
                       (v.number == back.number && signbit(v.number) == signbit(back.number)),
                   "'%.*s' -> %s -> another float", (int)len, s, buf);
        FUZZ_CHECK(ac_yaml_plain_is_ambiguous(buf, n), "float text '%s' not ambiguous", buf);
    } else if (v.kind != AC_YAML_STRING) {
        FUZZ_CHECK(ac_yaml_plain_is_ambiguous(s, len), "'%.*s' resolves to a non-string but "
                   "is not ambiguous", (int)len, s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_scalar((const char *)data, size);
    fuzz_lua_run(data, size);
    return 0;
}
