-- agentchat.sandbox: run an untrusted Lua template that renders a channel's
-- state summary (`state --template FILE.lua`, ch:render_state{template=}).
--
--   local text, err, code = sandbox.render(source, chunkname, state, opts)
--
-- `source` is the template's Lua source text: a chunk that does
-- `local state = ...` and returns the rendered string. It gets a deep copy
-- of `state`'s data (json.null and json.array marks kept; functions and
-- handles dropped), so it can neither change the caller's table nor call
-- back into the host. opts:
--   budget      VM instructions the template may execute (default 50e6)
--   max_output  largest string it may build or return, in bytes (16 MiB)
--   max_memory  heap growth it may cause, in bytes (256 MiB): the
--               allocator refuses anything past it, so no allocation
--               overshoots it
--   max_seconds wall-clock time it may run (5): a backstop for instructions
--               whose cost grows with the data; the budget normally ends
--               first
--   stats       a table; filled with instructions (approximate, includes
--               the charges below) and memory (peak growth seen, bytes)
-- Failures return nil, a one-line message (no code prefix), and one of
--   TEMPLATE_LOAD_ERROR       the source does not compile (text only: a
--                             binary chunk is refused)
--   TEMPLATE_RUNTIME_ERROR    the template raised
--   TEMPLATE_BUDGET_EXCEEDED  it ran out of instructions (or time)
--   TEMPLATE_MEMORY_EXCEEDED  it grew the heap (or one string) too far
--   TEMPLATE_BAD_RESULT       it returned a non-string or too long a string
--   TEMPLATE_FORBIDDEN        it touched a capability templates do not get
--   INTERRUPTED               SIGINT or SIGTERM arrived while it ran
--                             ("cancelled by user")
-- The three limit codes and TEMPLATE_FORBIDDEN are final: once raised, the
-- template's own pcall cannot swallow them (every later instruction raises
-- again), and render reports them even if the template then returns.
--
-- What a template gets (docs/state-templates.md): assert error ipairs next
-- pairs pcall xpcall select tonumber tostring type rawequal rawget rawlen
-- rawset setmetatable (no __gc), null (json.null), _VERSION, _G, and copies
-- of string (no dump or pack; rep, format, gsub and friends bounded),
-- table, math (no randomseed) and utf8. There is no os: without a clock the
-- output depends on the state alone (math.random, pairs order and
-- tostring of a table aside). Touching io, os, require, load, loadfile,
-- dofile, debug, package, collectgarbage, getmetatable, coroutine, print,
-- string.dump ... raises TEMPLATE_FORBIDDEN; other unknown globals are nil.
--
-- Every library function a template can reach is charged for its work or
-- bounded before it runs: the pattern functions (find, match, gmatch, gsub)
-- are agentchat.sandboxlib's, which behave exactly like the string
-- library's but count their steps and report them every 1000 (a
-- backtracking pattern is stopped like a loop); string.rep pays for each
-- repetition, even of ""; the builders check the size of what they would
-- build. So the count hook (every 1000 instructions) and the meter see
-- time pass everywhere: the time limit, the budget and SIGINT/SIGTERM stop
-- a template within about a millisecond of work. The heap cap is enforced
-- by the allocator (sandboxlib.heap_limit): an allocation past it fails
-- before a byte is copied.
local M = {}

M.DEFAULT_BUDGET = 50 * 1000 * 1000
M.DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024
M.DEFAULT_MAX_MEMORY = 256 * 1024 * 1024
M.DEFAULT_MAX_SECONDS = 5

-- Instructions between two checks of the count hook: small enough to stop a
-- loop promptly, large enough that the hook (an os.clock call included)
-- adds under a fifth to a tight loop and a few percent to real templates.
local STEP = 1000
-- An interval between two hooks that takes longer (CPU seconds) than this
-- ran instructions that are not cheap.
local SLOW = 0.005
-- Library calls run in C, unseen by the count hook, so they are charged
-- instructions for their work, priced from measurements (one instruction
-- is about 2 ns here): copying or converting costs 1 per 8 bytes, each
-- repetition of string.rep 1; the pattern functions meter themselves (one
-- per matcher step).
local COPY, MOVE = 1 / 8, 15
-- A charge this large is first checked against the time left, at a lower
-- bound of the real price (1 ns an instruction, about 2.5 ns measured):
-- with a budget too large to stop it, a single call that cannot end in
-- time is refused at once rather than run past the time limit.
local BIG_CHARGE, NS_PER_INSTRUCTION = 1e6, 1
local BUDGET, MEMORY, FORBIDDEN = "TEMPLATE_BUDGET_EXCEEDED", "TEMPLATE_MEMORY_EXCEEDED", "TEMPLATE_FORBIDDEN"

-- The host's functions, captured once: templates only ever see copies.
local string, table, math, utf8 = string, table, math, utf8
local sethook, getmetatable_raw = debug.sethook, debug.getmetatable
local cocreate, coresume = coroutine.create, coroutine.resume
local format, gsub, find, sub = string.format, string.gsub, string.find, string.sub
local floor, log, clock = math.floor, math.log, os.clock
local lib = require "agentchat.sandboxlib"
local sys = require "agentchat.sys"
local monotonic, interrupted = sys.monotonic, sys.interrupted
local load, type, next, select, error, tostring, setmetatable, collectgarbage =
  load, type, next, select, error, tostring, setmetatable, collectgarbage

local SAFE = {
  _G = { "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget", "rawlen", "rawset",
         "select", "setmetatable", "tonumber", "tostring", "type", "xpcall", "_VERSION" },
  string = { "byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match", "packsize", "rep",
             "reverse", "sub", "unpack", "upper" },
  table = { "concat", "insert", "move", "pack", "remove", "sort", "unpack" },
  math = { "abs", "acos", "asin", "atan", "ceil", "cos", "deg", "exp", "floor", "fmod", "huge", "log", "max",
           "maxinteger", "min", "mininteger", "modf", "pi", "rad", "random", "sin", "sqrt", "tan", "tointeger",
           "type", "ult" },
  utf8 = { "char", "charpattern", "codepoint", "codes", "len", "offset" },
}
local G = {}
for _, k in ipairs(SAFE._G) do
  G[k] = _G[k]
end
local LIBS = { _G = G, string = string, table = table, math = math, utf8 = utf8 }
-- JSON null, as the state carries it (absent outside the agent-chat binary).
local ok_json, json = pcall(require, "agentchat.json")
local NULL = ok_json and json.null or nil

-- Names whose use is reported as TEMPLATE_FORBIDDEN rather than being nil.
-- Coroutines run on their own thread, which has no hook;
-- getmetatable("").__index is the host's string table; string.pack("c1e9")
-- would allocate a gigabyte in one call; math.randomseed is the host's.
local FORBIDDEN_NAMES = {
  _G = { "collectgarbage", "coroutine", "debug", "dofile", "getfenv", "getmetatable", "io", "load",
         "loadfile", "loadstring", "module", "os", "package", "print", "require", "setfenv", "warn" },
  string = { "dump", "pack" },
  math = { "randomseed" },
}

-- Rough length of a value once made text (numbers print in at most 24 bytes).
local function len(x)
  local t = type(x)
  return t == "string" and #x or t == "number" and 24 or t == "table" and #x or 0
end

-- A count or index as the library will read it ("1e10" included).
local function num(x)
  return type(x) == "string" and G.tonumber(x) or x
end

local function one_line(s)
  s = gsub(gsub(s, "[\r\n]+%s*", " "), "%s+$", "")
  if #s > 500 then
    s = sub(s, 1, 497) .. "..."
  end
  return s
end

-- A metatable with no functions in it is a marker (json.array_mt) and is
-- kept; one with metamethods or methods would run host code.
local function inert(mt)
  for _, v in next, mt do
    if type(v) == "function" or type(v) == "table" then
      return false
    end
  end
  return true
end

-- Deep copy of the state, data only: a function, a thread or a userdata
-- with a metatable (a handle with methods) would hand the template a
-- capability, so it becomes nil. json.null (a light userdata) stays.
-- Shared and cyclic tables stay shared.
local function copy(v, seen)
  local t = type(v)
  if t == "function" or t == "thread" or (t == "userdata" and getmetatable_raw(v)) then
    return nil
  elseif t ~= "table" then
    return v
  elseif seen[v] then
    return seen[v]
  end
  local c = {}
  seen[v] = c
  for k, x in next, v do
    k = copy(k, seen)
    if k ~= nil then
      c[k] = copy(x, seen)
    end
  end
  local mt = getmetatable_raw(v)
  return setmetatable(c, mt and inert(mt) and mt or nil)
end

-- The template's globals, fresh for each render. ctl: charge(n), abort(code,
-- message), limit (max_output).
local function environment(ctl)
  local charge, abort, limit = ctl.charge, ctl.abort, ctl.limit
  local function cost(per_byte, x)
    charge(floor(len(x) * per_byte))
  end
  -- `metered`: the call charges its own work (sandboxlib).
  local function size_check(what, n, metered)
    if n > limit then
      abort(MEMORY, format("%s would build %.0f bytes, more than the %d-byte limit", what, n, limit))
    end
    if not metered then
      charge(floor(n * COPY))
    end
  end

  local env = {}
  for lib, names in pairs(SAFE) do
    local t = lib == "_G" and env or {}
    for _, k in ipairs(names) do
      t[k] = LIBS[lib][k]
    end
    local forbidden = {}
    for _, k in ipairs(FORBIDDEN_NAMES[lib] or {}) do
      forbidden[k] = lib == "_G" and k or lib .. "." .. k
    end
    setmetatable(t, { __metatable = false, __index = function(_, k)
      if forbidden[k] then
        abort(FORBIDDEN, forbidden[k] .. " is not available to templates")
      end
    end })
    env[lib] = t
  end
  env._G = env
  env.null = NULL
  local S, T = env.string, env.table

  -- Each C call that builds a string is bounded before it runs: the heap
  -- check between instructions cannot see one call allocate gigabytes.
  -- The wrappers call string.rep and not a local `rep`: a field name
  -- survives stripped bytecode, so argument errors still name 'rep'.
  -- sandboxlib.rep meters each repetition: string.rep("", 2^53) copies
  -- nothing and never ended.
  function S.rep(s, n, sep)
    n = num(n)
    if type(n) == "number" and n > 0 then
      size_check("string.rep", n * len(s) + (n - 1) * len(sep), true)
    end
    local r = lib.rep(s, n, sep)
    return r
  end
  function S.format(fmt, ...)
    -- %q at most quadruples a string; anything else prints in 512 bytes,
    -- but for a table with a metatable (__tostring, __name), so that one
    -- is made a string first, and measured.
    local n, args = len(fmt), table.pack(...)
    for i = 1, args.n do
      local a = args[i]
      if type(a) == "table" and getmetatable_raw(a) then
        a = tostring(a)
        args[i] = a
      end
      n = n + (type(a) == "string" and 4 * #a + 100 or 512)
    end
    size_check("string.format", n)
    return string.format(fmt, table.unpack(args, 1, args.n))
  end
  function S.gsub(s, pattern, repl, n)
    local ls, tr = len(s), type(repl)
    if tr == "string" or tr == "number" then
      -- Matches do not overlap, so all captures together are at most
      -- (captures per match) * #s bytes, plus 24 per position capture.
      repl = tostring(repl)
      local k = select(2, gsub(repl, "%%%d", ""))
      local pos = type(pattern) == "string" and find(pattern, "()", 1, true) and 24 * k or 0
      size_check("string.gsub", ls + k * ls + (ls + 1) * (#repl + pos))
    elseif tr == "table" or tr == "function" then
      local total, f, t = ls, repl, repl
      if tr == "table" then
        f = function(key) return t[key] end
      end
      repl = function(...)
        local v = f(...)
        total = total + len(v)
        if total > limit then
          size_check("string.gsub", total)
        end
        return v
      end
    end
    -- Not a tail call: an argument error then names 'gsub'.
    local r, count = lib.gsub(s, pattern, repl, n)
    return r, count
  end
  -- The pattern functions meter their own work (see the top of the file).
  S.find, S.match, S.gmatch = lib.find, lib.match, lib.gmatch
  function S.lower(s)
    cost(COPY, s)
    return string.lower(s)
  end
  function S.upper(s)
    cost(COPY, s)
    return string.upper(s)
  end
  function S.reverse(s)
    cost(COPY, s)
    return string.reverse(s)
  end
  function S.sub(s, i, j)
    local r = string.sub(s, i, j)
    cost(COPY, r)
    return r
  end
  local function counted(...)
    charge(select("#", ...))
    return ...
  end
  function S.byte(s, i, j)
    return counted(string.byte(s, i, j))
  end
  function T.concat(t, sep, i, j)
    i, j = num(i), num(j)
    if type(t) == "table" then
      local n = 0
      for k = i or 1, j or #t do
        n = n + len(t[k]) + len(sep)
      end
      size_check("table.concat", n)
    end
    return table.concat(t, sep, i, j)
  end
  -- These loop in C over as many elements as asked: charge per element
  -- (a move gets and sets each, about 40 ns: 15 instructions).
  function T.move(a1, f, e, t, a2)
    f, e = num(f), num(e)
    if type(f) == "number" and type(e) == "number" and e >= f then
      charge((e - f + 1) * MOVE)
    end
    return table.move(a1, f, e, t, a2)
  end
  function T.unpack(t, i, j)
    i, j = num(i) or 1, num(j) or len(t)
    if type(i) == "number" and type(j) == "number" and j >= i then
      charge(j - i + 1)
    end
    return table.unpack(t, i, j)
  end
  function T.sort(t, comp)
    local n = len(t)
    charge(n > 1 and floor(n * log(n, 2)) or 0)
    return table.sort(t, comp)
  end
  function T.insert(t, ...)
    charge(select("#", ...) > 1 and len(t) or 0)
    return table.insert(t, ...)
  end
  function T.remove(t, ...)
    charge(select("#", ...) > 0 and len(t) or 0)
    return table.remove(t, ...)
  end
  function env.tonumber(v, base)
    cost(COPY, v)
    return G.tonumber(v, base)
  end
  function env.utf8.len(s, ...)
    cost(COPY, s)
    return utf8.len(s, ...)
  end
  function env.utf8.codepoint(s, ...)
    cost(COPY, s)
    return utf8.codepoint(s, ...)
  end

  -- A finalizer runs whenever the GC gets to it, with hooks off, possibly
  -- after the render: no budget would bound it. Lua marks an object for
  -- finalization only if its metatable has __gc when it is set, so this
  -- check is enough; __close and the other metamethods run in the template,
  -- under the hook.
  function env.setmetatable(t, mt)
    if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
      abort(FORBIDDEN, "__gc is not available to templates")
    end
    return G.setmetatable(t, mt)
  end

  -- An error raised by the count hook reaches the message handler while
  -- hooks are still off, so a handler that loops would never be stopped:
  -- after a final failure the template's handler is not called at all.
  local xpcall = G.xpcall
  function env.xpcall(f, handler, ...)
    return xpcall(f, function(e)
      if ctl.failed() then
        return e
      end
      return handler(e)
    end, ...)
  end

  -- String methods ("x"):rep(...) use the string metatable, which points
  -- at `methods` during the render. The template's `string` is a copy of
  -- it: redefining string.find must not change what host code running
  -- meanwhile (a finalizer) gets from s:find.
  local methods = S
  env.string = setmetatable({}, getmetatable_raw(S))
  for k, v in pairs(S) do
    env.string[k] = v
  end
  return env, methods
end

-- Where a library function raises through one of the wrappers above, the
-- position is this file's (with debug info): the template's user cares
-- only about the message.
local SELF = debug.getinfo(1, "S").short_src .. ":"

local function describe(e)
  local t = type(e)
  if t == "string" and sub(e, 1, #SELF) == SELF then
    e = gsub(e, "^[^:]*:%d+: ", "", 1)
  end
  if t == "string" or t == "number" then
    return one_line(tostring(e))
  end
  return "(error object is a " .. t .. " value)"
end

--- Render `state` with the template `source`; see the top of the file.
function M.render(source, chunkname, state, opts)
  if type(source) ~= "string" then
    error("bad argument #1 to 'render' (string expected, got " .. type(source) .. ")", 2)
  end
  chunkname = chunkname or "template"
  opts = opts or {}
  local budget = opts.budget or M.DEFAULT_BUDGET
  local max_output = opts.max_output or M.DEFAULT_MAX_OUTPUT
  local max_memory = opts.max_memory or M.DEFAULT_MAX_MEMORY
  local max_seconds = opts.max_seconds or M.DEFAULT_MAX_SECONDS

  local used, failure, co, done = 0, nil, nil, false
  local function fail_hook()
    error(failure.message, 0)
  end
  -- The first failure wins and sticks: the hook then fires on every
  -- instruction, so no pcall in the template can outlast it. The error
  -- value is a fresh string; the template never holds `failure` itself.
  -- `code` may be one of the failures made below, before the heap is
  -- capped: at the cap there may be no room for a new table.
  local function stop(code, message)
    failure = failure or (type(code) == "table" and code) or { code = code, message = message }
    sethook(co, fail_hook, "", 1)
  end
  local function abort(code, message)
    stop(code, message)
    error(failure.message, 0)
  end
  local over_budget = { code = BUDGET,
                        message = format("template exceeded its instruction budget (%.0f instructions)", budget) }
  local over_time = { code = BUDGET, message = format("template exceeded its time limit (%g s)", max_seconds) }
  local over_memory = { code = MEMORY,
                        message = format("template exceeded its memory limit (%.0f bytes)", max_memory) }
  local cancelled = { code = "INTERRUPTED", message = "cancelled by user" }
  local deadline = monotonic() + max_seconds
  local function charge(n)
    used = used + n
    if used > budget then
      abort(over_budget)
    end
    if n > BIG_CHARGE and n * NS_PER_INSTRUCTION * 1e-9 > deadline - monotonic() then
      abort(over_time)
    end
  end
  -- Wall clock, signals and the heap cap, checked by the count hook and by
  -- the pattern functions' meter.
  local function check()
    if lib.heap_refused() then
      abort(over_memory)
    end
    if monotonic() > deadline then
      abort(over_time)
    end
    if interrupted() then
      abort(cancelled)
    end
  end
  local function meter(n)
    check()
    charge(n)
  end

  local env, methods = environment({ charge = charge, abort = abort, limit = max_output,
                            failed = function() return failure ~= nil end })
  local fn, err = load(source, "=" .. chunkname, "t", env)
  if not fn then
    return nil, one_line(err), "TEMPLATE_LOAD_ERROR"
  end
  state = copy(state, {})

  -- The cap is on growth over the live heap: garbage left by the caller
  -- would otherwise be collected during the render and widen the cap.
  collectgarbage()
  local base = collectgarbage("count")
  local limit_kb, peak_kb = base + max_memory / 1024, base
  local function over()
    local kb = collectgarbage("count")
    peak_kb = kb > peak_kb and kb or peak_kb
    return kb > limit_kb
  end
  -- Instructions cost about 2 ns, except a few whose cost grows with the
  -- data (copying a long vararg list, comparing long strings): after an
  -- interval that used much CPU the hook runs after every instruction, so
  -- the deadline holds to within one of them; fast intervals double it
  -- back to STEP.
  local count, last = STEP, clock()
  local function hook()
    check()
    charge(count)
    local now = clock()
    local n = now - last > SLOW and 1 or count < STEP and count * 2 or STEP
    if n ~= count then
      count = n
      sethook(co, hook, "", n)
    end
    last = now
    if over() then
      abort(over_memory)
    end
  end
  -- A finalizer that re-arms itself runs once per GC cycle: it catches a
  -- heap that doubles in fewer than STEP instructions (s = s .. s). It can
  -- neither raise (that becomes a warning) nor read the heap size (Lua 5.4
  -- refuses collectgarbage in finalizers), so it has the hook run after
  -- the next instruction.
  local canary = {}
  canary.__gc = function()
    if not done and not failure then
      count = 1
      sethook(co, hook, "", 1)
      setmetatable({}, canary)
    end
  end

  -- The template runs on its own thread: the count hook is set there only,
  -- so the caller's hook (and thread) is never touched.
  co = cocreate(fn)
  sethook(co, hook, "", STEP)
  setmetatable({}, canary)
  local smt = getmetatable_raw("")
  local saved = smt.__index
  -- Undone however the resume ends: a SIGINT also raises in the caller's
  -- thread as soon as the resume returns (lua_host.c's interrupt hook), and
  -- the host must not go on with the template's string methods, meter or
  -- heap cap.
  local refused, ok, res = false, false, nil
  do
    local _ <close> = setmetatable({}, { __close = function()
      refused = lib.heap_refused()
      lib.heap_limit(nil)
      lib.set_meter(nil)
      smt.__index = saved
      done = true
      sethook(co)
    end })
    smt.__index = methods
    lib.set_meter(meter)
    lib.heap_limit(max_memory)
    ok, res = coresume(co, state)
  end

  if type(opts.stats) == "table" then
    opts.stats.instructions = floor(used)
    opts.stats.memory = floor((peak_kb - base) * 1024)
  end
  if not failure and (refused or (not ok and res == "not enough memory")) then
    failure = over_memory
  end
  if failure then
    if failure.code == MEMORY then
      collectgarbage()
    end
    return nil, failure.message, failure.code
  elseif not ok then
    return nil, describe(res), "TEMPLATE_RUNTIME_ERROR"
  elseif type(res) ~= "string" then
    return nil, "template returned " .. (res == nil and "nil" or "a " .. type(res)) .. ", not a string",
      "TEMPLATE_BAD_RESULT"
  elseif #res > max_output then
    return nil, format("template returned %d bytes, more than the %d-byte limit", #res, max_output),
      "TEMPLATE_BAD_RESULT"
  elseif find(res, "\0", 1, true) then
    -- state.md is text: what readers and the Python tool read back
    return nil, "template returned text with a NUL byte", "TEMPLATE_BAD_RESULT"
  elseif not sys.utf8_valid(res) then
    return nil, "template returned text that is not valid UTF-8", "TEMPLATE_BAD_RESULT"
  end
  return res
end

return M
