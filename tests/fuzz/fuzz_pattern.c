/*
 * fuzz_pattern.c - the metered pattern functions of the template sandbox
 * (src/l_sandbox.c: find, match, gmatch, gsub, rep), differentially against
 * Lua 5.4's string library, which they must equal.
 *
 * Input: a first byte choosing init, plain, the replacement's kind and the
 * gsub count, then subject, pattern and replacement string separated by
 * NUL bytes (so neither the subject nor the pattern holds a NUL; the
 * string library treats NUL in both like any byte, which the unit spec
 * covers).
 *
 * Properties:
 *   - with a meter that stops a call after 100,000 steps, each function
 *     either stops there (the budget error, and then the string library is
 *     not run: it might backtrack for hours) or returns exactly what the
 *     string library returns: the same values, or an error with the same
 *     message;
 *   - the meter is only ever called with a positive integer count.
 */
#include "fuzz.h"

#include "fuzzlua.h"

static const char DRIVER[] =
    "local lib = require 'agentchat.sandboxlib'\n"
    "local LIMIT = 100000\n"
    "local steps = 0\n"
    "local STOP = setmetatable({}, { __tostring = function() return 'budget' end })\n"
    "lib.set_meter(function(n)\n"
    "  if math.type(n) ~= 'integer' or n <= 0 then error('meter called with ' .. tostring(n), 0) end\n"
    "  steps = steps + n\n"
    "  if steps > LIMIT then error(STOP, 0) end\n"
    "end, 97)\n"
    "local function pack(ok, ...) return { ok = ok, n = select('#', ...), ... } end\n"
    "local function strip(e) return type(e) == 'string' and (e:gsub('^[^:]*:%d+: ', '')) or e end\n"
    "local function same(a, b)\n"
    "  if a.ok ~= b.ok then return false end\n"
    "  if not a.ok then return strip(a[1]) == strip(b[1]) end\n"
    "  if a.n ~= b.n then return false end\n"
    "  for i = 1, a.n do if a[i] ~= b[i] then return false end end\n"
    "  return true\n"
    "end\n"
    "local function show(r)\n"
    "  local t = {}\n"
    "  for i = 1, r.n do t[i] = ('%q'):format(tostring(r[i])) end\n"
    "  return tostring(r.ok) .. ' ' .. table.concat(t, ' ')\n"
    "end\n"
    "local function compare(what, native, ours)\n"
    "  steps = 0\n"
    "  local b = pack(pcall(ours))\n"
    "  if not b.ok and b[1] == STOP then return end\n"
    "  local a = pack(pcall(native))\n"
    "  if not same(a, b) then\n"
    "    error(what .. ': string library ' .. show(a) .. ', sandbox ' .. show(b), 0)\n"
    "  end\n"
    "end\n"
    "local function iterate(gmatch, s, p, init)\n"
    "  return function()\n"
    "    local out = {}\n"
    "    for a, b, c in gmatch(s, p, init) do\n"
    "      out[#out + 1] = tostring(a) .. '|' .. tostring(b) .. '|' .. tostring(c)\n"
    "      if #out > 200 then break end\n"
    "    end\n"
    "    return table.concat(out, ',')\n"
    "  end\n"
    "end\n"
    "return function(input)\n"
    "  if #input == 0 then return end\n"
    "  local flags = input:byte(1)\n"
    "  local parts = {}\n"
    "  for piece in (input:sub(2) .. '\\0'):gmatch('([^%z]*)%z') do parts[#parts + 1] = piece end\n"
    "  local s, p, r = parts[1] or '', parts[2] or '', parts[3] or ''\n"
    "  local init = ({ nil, 1, 2, 0, -1, -3, 5, #s + 1, #s + 2, -#s - 5 })[flags % 10 + 1]\n"
    "  local plain = flags & 16 ~= 0\n"
    "  local repl = ({ r, { a = 'A', b = false, [''] = 'E' }, function(x, y) return y or x end, 7 })\n"
    "    [(flags >> 5) % 4 + 1]\n"
    "  local n = flags & 128 ~= 0 and (flags % 4) - 1 or nil\n"
    "  local what = ('s=%q p=%q init=%s'):format(s, p, tostring(init))\n"
    "  compare('find ' .. what, function() return string.find(s, p, init, plain) end,\n"
    "    function() return lib.find(s, p, init, plain) end)\n"
    "  compare('match ' .. what, function() return string.match(s, p, init) end,\n"
    "    function() return lib.match(s, p, init) end)\n"
    "  compare('gsub ' .. what, function() return string.gsub(s, p, repl, n) end,\n"
    "    function() return lib.gsub(s, p, repl, n) end)\n"
    "  compare('gmatch ' .. what, iterate(string.gmatch, s, p, init), iterate(lib.gmatch, s, p, init))\n"
    "  local k = flags % 7 - 1\n"
    "  compare('rep ' .. what, function() return string.rep(s, k, r) end, function() return lib.rep(s, k, r) end)\n"
    "end\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_lua_init(DRIVER, 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 512)
        return 0;       /* long subjects only slow the native side down */
    fuzz_lua_run(data, size);
    return 0;
}
