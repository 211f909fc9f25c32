-- agentchat.sandbox: user templates for the state summary run with a
-- budget, a heap cap and an allow-listed environment. Every outcome code,
-- the escapes a hostile template tries, and that the host is left as it was.
local sandbox = require "agentchat.sandbox"
local json = require "agentchat.json"

local MiB = 1024 * 1024

local function render(src, state, opts)
  return sandbox.render(src, "t.lua", state or {}, opts)
end

-- A failure: nil, a one-line message without the code, and `code`.
local function fails(code, ...)
  local text, msg, c = ...
  assert.is_nil(text)
  assert.equal(code, c, msg)
  assert.equal("string", type(msg))
  assert.is_nil(msg:find("\n", 1, true), msg)
  assert.is_nil(msg:find("traceback", 1, true), msg)
  assert.is_nil(msg:find(code, 1, true), msg)
  return msg
end

-- The host's string library and string metatable, to check nothing changed.
local host_string, host_smt = {}, getmetatable("")
for k, v in pairs(string) do
  host_string[k] = v
end
local host_index = host_smt.__index

local function host_untouched()
  assert.is_nil(debug.gethook())
  assert.equal(host_index, getmetatable("").__index)
  assert.equal(string, getmetatable("").__index)
  for k, v in pairs(host_string) do
    assert.equal(v, string[k], "string." .. k)
  end
  for k in pairs(string) do
    assert.is_not_nil(host_string[k], "string." .. k .. " was added")
  end
  assert.equal("abab", ("ab"):rep(2))
  assert.is_function(string.dump)
end

-- A channel the size the budget is meant for: 100 tasks, 1,000 messages
-- classified into decisions, blockers and verification evidence.
local function big_state()
  local agents = { "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi" }
  local body = ("Line one of the details, with `code` and *stars*.\n"):rep(6)
  local s = {
    channel = "demo", topic = "Ship the state summary", members = json.array(agents),
    created_at = "2025-01-01T00:00:00+00:00", last_seq = 1000,
    generated_at = "2025-01-02T00:00:00.000000+00:00",
    decisions = json.array(), open_tasks = json.array(), blockers = json.array(), owners = {},
    path_locks = json.array(), verification = json.array(),
  }
  for seq = 1, 1000 do
    local who, time = agents[seq % #agents + 1], string.format("2025-01-01T%02d:%02d:00+00:00", seq // 60 % 24,
      seq % 60)
    if seq % 5 == 0 then
      s.blockers[#s.blockers + 1] = { source_id = tostring(seq), source_type = "message", title = "Blocked " .. seq,
                                      author = who, details = body }
    elseif seq % 2 == 0 then
      s.decisions[#s.decisions + 1] = { seq = seq, title = "Decision " .. seq, author = who, time = time,
                                        details = seq % 3 == 0 and "" or body }
    else
      s.verification[#s.verification + 1] = { source_id = tostring(seq), source_type = "message",
                                              title = "Verified " .. seq, author = who, time = time,
                                              acceptance = json.array { "tests pass", "docs" }, evidence = body }
    end
  end
  for i = 1, 100 do
    local owner = i % 3 == 0 and json.null or agents[i % #agents + 1]
    local t = { id = string.format("T-%03d", i), title = "Task number " .. i, status = "in_progress",
                owner = owner, lease_expires_at = owner == json.null and json.null or "2025-01-03T00:00:00+00:00",
                depends_on = json.array(i > 1 and { string.format("T-%03d", i - 1) } or {}),
                files_hint = json.array { "src/z" .. i .. ".c", "src/a" .. i .. ".h" },
                acceptance = json.array { "builds", "reviewed" } }
    s.open_tasks[i] = t
    if owner ~= json.null then
      s.owners[owner] = s.owners[owner] or { tasks = json.array(), path_locks = json.array() }
      local o = s.owners[owner].tasks
      o[#o + 1] = t
    end
  end
  for i = 1, 20 do
    s.path_locks[i] = { lock_id = string.format("%032x", i), owner = agents[i % #agents + 1],
                        expires_at = "2025-01-03T00:00:00+00:00",
                        paths = json.array { { normalized_path = "src/f" .. i .. ".c" } } }
  end
  return s
end

-- A template a user would write: the built-in layout plus a table of
-- counts, Markdown escaping and a formatted date.
local REALISTIC = [==[
local state = ...
local function value(v, empty)
  if v == nil or v == null or v == "" then return empty end
  return v
end
local function joined(list, empty)
  if list == nil or #list == 0 then return empty end
  return table.concat(list, ", ")
end
local function sorted(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = v end
  table.sort(out)
  return out
end
local function esc(s)
  return (s:gsub("[%*_`]", "\\%0"))
end
local function lines(text, prefix, out)
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = prefix .. line end
end

local out = { "# State: " .. state.channel, "", "_generated " .. state.generated_at:sub(1, 10) .. "_", "",
              "| section | count |", "|---|---|" }
for _, k in ipairs { "decisions", "open_tasks", "blockers", "path_locks", "verification" } do
  out[#out + 1] = string.format("| %s | %d |", k, #state[k])
end
out[#out + 1] = "\n## Decisions"
for _, d in ipairs(state.decisions) do
  out[#out + 1] = string.format("- `[#%04d]` **%s** (by `%s` at `%s`):", d.seq, esc(d.title), d.author, d.time)
  if d.details == "" then out[#out + 1] = "  *(no additional details)*" else lines(esc(d.details), "  ", out) end
end
out[#out + 1] = "\n## Open Tasks"
for _, t in ipairs(state.open_tasks) do
  out[#out + 1] = "- `[" .. t.id .. "]` **" .. esc(t.title) .. "** (`" .. t.status .. "`)"
  out[#out + 1] = "  - **Owner**: `" .. value(t.owner, "unassigned") .. "`"
  out[#out + 1] = "  - **Depends on**: `" .. joined(t.depends_on, "none") .. "`"
  out[#out + 1] = "  - **Files hint**: `" .. joined(sorted(t.files_hint), "none") .. "`"
end
out[#out + 1] = "\n## Blockers"
for _, b in ipairs(state.blockers) do
  out[#out + 1] = "- `[" .. b.source_id .. "]` **" .. b.title .. "**: " .. b.details:gsub("\n", " "):upper()
end
out[#out + 1] = "\n## Owners"
local names = {}
for name in pairs(state.owners) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do
  out[#out + 1] = "- **" .. name .. "**: " .. #state.owners[name].tasks .. " task(s)"
end
out[#out + 1] = "\n## Verification Evidence"
for _, v in ipairs(state.verification) do
  out[#out + 1] = ("- `[%s]` **%s** (by `%s`): %s"):format(v.source_id, v.title, v.author,
    table.concat(v.acceptance, ", "))
  lines(v.evidence, "  > ", out)
end
return table.concat(out, "\n") .. "\n"
]==]

describe("sandbox.render", function()
  after_each(host_untouched)

  it("renders a template with its state", function()
    local text = assert(render("local s = ... return s.name .. ': ' .. table.concat(s.list, ',')",
      { name = "demo", list = { "a", "b" } }))
    assert.equal("demo: a,b", text)
  end)

  it("passes JSON nulls through and gives the template a copy of the state", function()
    local state = { a = json.null, b = json.null, list = json.array { 1, 2 }, nested = { x = 1 } }
    state.self = state
    local text = assert(render([[
      local s = ...
      local r = tostring(s.a == null) .. type(s.b) .. tostring(s.self == s)
      s.nested.x = 99; s.added = true; s.list[1] = "changed"
      return r
    ]], state))
    assert.equal("trueuserdatatrue", text)
    assert.equal(json.null, state.a)
    assert.equal(1, state.nested.x)
    assert.is_nil(state.added)
    assert.equal(1, state.list[1])
    assert.is_true(json.is_array(state.list))
  end)

  it("leaves functions and handles out of the copy", function()
    local obj = setmetatable({ x = 1 }, { __index = { post = print } })
    local text = assert(render([[
      local s = ...
      return table.concat({ tostring(s.f), tostring(s.fh), tostring(s.obj.x), tostring(s.obj.post),
                            tostring(s.co), tostring(s.list[2]) }, " ")
    ]], { f = print, fh = io.stdout, obj = obj, co = coroutine.create(print), list = { 1, print, 3 } }))
    assert.equal("nil nil 1 nil nil nil", text)
  end)

  it("renders a realistic template over 100 tasks and 1,000 messages deterministically, far under budget",
    function()
      local state = big_state()
      local stats1, stats2 = {}, {}
      local t0 = os.clock()
      local a = assert(render(REALISTIC, state, { stats = stats1 }))
      local seconds = os.clock() - t0
      local b = assert(render(REALISTIC, state, { stats = stats2 }))
      assert.equal(a, b)
      assert.truthy(a:find("| open_tasks | 100 |", 1, true))
      assert.truthy(a:find("_generated 2025-01-02_", 1, true))
      assert.truthy(a:find("- **alice**: 8 task(s)", 1, true))
      assert.truthy(a:find("  - **Owner**: `unassigned`", 1, true))
      -- Measured: about 1 million of the 50 million instructions (the count
      -- is approximate: it moves by up to 1,000 between runs).
      assert.is_true(math.abs(stats1.instructions - stats2.instructions) <= 10000)
      assert.is_true(stats1.instructions < sandbox.DEFAULT_BUDGET / 20, tostring(stats1.instructions))
      assert.is_true(stats1.memory < 64 * MiB, tostring(stats1.memory))
      io.stderr:write(string.format("# realistic template: %d bytes, ~%d instructions, %.1f ms, heap +%d KiB\n",
        #a, stats1.instructions, seconds * 1000, stats1.memory // 1024))
    end)

  it("gives the template the allow-listed environment", function()
    local text = assert(render([[
      local names = {}
      for k in pairs(_G) do names[#names + 1] = k end
      table.sort(names)
      return table.concat(names, " ") .. "|" .. tostring(undefined_global) .. "|" .. math.floor(2.5)
        .. utf8.char(233) .. select("#", table.unpack({ 1, 2 })) .. type(null)
    ]]))
    assert.equal("_G _VERSION assert error ipairs math next null pairs pcall rawequal rawget rawlen rawset select "
      .. "setmetatable string table tonumber tostring type utf8 xpcall|nil|2\u{e9}2userdata", text)
  end)
end)

describe("sandbox.render failures", function()
  after_each(host_untouched)

  it("reports a syntax error as TEMPLATE_LOAD_ERROR", function()
    local msg = fails("TEMPLATE_LOAD_ERROR", render("return (("))
    assert.truthy(msg:find("^t%.lua:1:"), msg)
  end)

  it("refuses a binary chunk as source", function()
    local msg = fails("TEMPLATE_LOAD_ERROR", render(string.dump(function() return "x" end)))
    assert.truthy(msg:find("binary", 1, true), msg)
  end)

  it("reports a raise as TEMPLATE_RUNTIME_ERROR on one line", function()
    assert.equal("t.lua:2: boom second line",
      fails("TEMPLATE_RUNTIME_ERROR", render("local x = 1\nerror('boom\\nsecond line')")))
    assert.equal("t.lua:1: attempt to index a nil value (local 's')",
      fails("TEMPLATE_RUNTIME_ERROR", render("local s return s.x")))
    assert.equal("(error object is a table value)", fails("TEMPLATE_RUNTIME_ERROR", render("error({})")))
    assert.equal("42", fails("TEMPLATE_RUNTIME_ERROR", render("error(42)")))
    local long = fails("TEMPLATE_RUNTIME_ERROR", render("error(('x'):rep(5000), 0)"))
    assert.is_true(#long <= 500)
    -- A library function raising inside a wrapper: no sandbox.lua position.
    assert.equal("bad argument #2 to 'concat' (string expected, got table)",
      fails("TEMPLATE_RUNTIME_ERROR", render("return table.concat({ 'a', 'b' }, {})")))
    -- Runaway recursion through a metamethod: 200 C levels. (Filling Lua's
    -- own 1M-slot stack instead allocates ~80 MB; in this process, whose
    -- heap earlier tests grew, the collections that costs took minutes
    -- under ASan.)
    assert.equal("t.lua:1: C stack overflow",
      fails("TEMPLATE_RUNTIME_ERROR",
        render("local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x")))
  end)

  it("names the type of a non-string result", function()
    assert.equal("template returned a number, not a string", fails("TEMPLATE_BAD_RESULT", render("return 1")))
    assert.equal("template returned nil, not a string", fails("TEMPLATE_BAD_RESULT", render("return nil")))
    assert.equal("template returned nil, not a string", fails("TEMPLATE_BAD_RESULT", render("local x = 1")))
    assert.equal("template returned a table, not a string", fails("TEMPLATE_BAD_RESULT", render("return {}")))
    assert.equal("template returned a boolean, not a string", fails("TEMPLATE_BAD_RESULT", render("return true")))
  end)

  it("refuses output over max_output", function()
    assert.equal("template returned 11 bytes, more than the 10-byte limit",
      fails("TEMPLATE_BAD_RESULT", render("return ('x'):rep(5) .. ('y'):rep(5) .. 'z'", nil, { max_output = 10 })))
    assert.equal("0123456789", render("return '0123456789'", nil, { max_output = 10 }))
  end)
end)

describe("sandbox budget", function()
  after_each(host_untouched)

  -- A tenth of the default budget unless opts say otherwise, to keep the
  -- suite fast; the charges below are far over either.
  local function exceeded(src, opts)
    local t0 = os.clock()
    local msg = fails("TEMPLATE_BUDGET_EXCEEDED", render(src, nil, opts or { budget = 5000000 }))
    local seconds = os.clock() - t0
    assert.is_true(seconds < 2, string.format("took %.2f s", seconds))
    return msg, seconds
  end

  it("stops an infinite loop quickly", function()
    local msg, seconds = exceeded("while true do end", {})
    assert.equal("template exceeded its instruction budget (50000000 instructions)", msg)
    io.stderr:write(string.format("# while true do end: stopped after %.0f ms\n", seconds * 1000))
    assert.equal("template exceeded its instruction budget (1000 instructions)",
      exceeded("local n = 0 for i = 1, 1e6 do n = n + i end return tostring(n)", { budget = 1000 }))
  end)

  it("cannot be swallowed by pcall or xpcall", function()
    exceeded("while true do pcall(function() while true do end end) end")
    exceeded("while true do pcall(pcall, pcall, function() while true do end end) end")
    exceeded("local ok = pcall(function() while true do end end) return 'caught'")
    exceeded("while true do xpcall(function() while true do end end, function() while true do end end) end")
    exceeded("local function f() return xpcall(f, f) end while true do f() end")
    exceeded([[while true do pcall(string.gsub, ("x"):rep(100), ".", function() while true do end end) end]])
    exceeded([[while true do pcall(table.sort, {3, 2, 1}, function() while true do end end) end]])
    exceeded([[local t = setmetatable({}, { __index = function() while true do end end })
      while true do pcall(table.concat, t, "", 1, 2) end]])
    exceeded([[do local x <close> = setmetatable({}, { __close = function() while true do end end }) end]])
  end)

  it("charges library calls by the work they do", function()
    exceeded("table.move({}, 1, math.maxinteger - 1, 2)")
    exceeded("table.move({}, '1', '1e15', 2)")
    exceeded("local t = {} for i = 1, 100 do table.unpack(t, 1, 900000) end")
    exceeded("local s = ('a'):rep(1 << 23) while true do s:find('b') end")
    exceeded("local s = ('a'):rep(1 << 23) while true do local _ = s:upper() end")
  end)

  it("stops instructions whose cost grows with the data at the CPU limit", function()
    -- 4 instructions a call, but each copies a vararg list one longer.
    local msg, seconds = exceeded("local function f(...) return f(1, ...) end return f()", { max_seconds = 0.3 })
    assert.equal("template exceeded its time limit (0.3 s)", msg)
    assert.is_true(seconds < 1, tostring(seconds))
    msg = exceeded("local a, b = ('x'):rep(1 << 24), ('x'):rep(1 << 24) a, b = a .. a, b .. b "
      .. "while a == b do end", { max_seconds = 0.3 })
    assert.equal("template exceeded its time limit (0.3 s)", msg)
  end)
end)

describe("sandbox memory", function()
  after_each(host_untouched)

  -- A budget too large to end these first: each repetition of string.rep
  -- is charged, and the heap, not the budget, must stop them.
  local function memory(src, max_memory)
    return fails("TEMPLATE_MEMORY_EXCEEDED", render(src, nil, { max_memory = max_memory or 32 * MiB,
                                                                budget = 1e9 }))
  end

  it("stops a table that grows without end", function()
    assert.equal("template exceeded its memory limit (33554432 bytes)",
      memory("local t = {} while true do t[#t + 1] = ('x'):rep(100) .. #t end"))
  end)

  it("stops a string that doubles faster than the hook runs", function()
    memory("local s = 'x' for i = 1, 40 do s = s .. s end return s")
  end)

  it("bounds string.rep and the other string builders before they run", function()
    assert.equal("string.rep would build 1000000000000 bytes, more than the 16777216-byte limit",
      memory("return string.rep('x', 1e12)"))
    memory("return ('x'):rep(1e12)")
    memory("return ('x'):rep(2^62, ',')")
    memory("return ('x'):rep('1e10')")
    memory("local t = setmetatable({}, { __name = ('n'):rep(1e6) }) local a = {} for i = 1, 100 do a[i] = t end "
      .. "return string.format(('%s'):rep(100), table.unpack(a))")
    memory("local t, s = {}, ('x'):rep(1e6) for i = 1, 1e4 do t[i] = s end return table.concat(t)")
    memory("local t, s = {}, ('x'):rep(1e6) for i = 1, 200 do t[i] = s end "
      .. "return string.format(('%s'):rep(200), table.unpack(t))")
    memory("return (('x'):rep(1e4):gsub('.', ('y'):rep(1e4)))")
    memory("return (('x'):rep(1e4):gsub('.', function() return ('y'):rep(1e4) end))")
    memory("return (('x'):rep(1e4):gsub('.', { x = ('y'):rep(1e4) }))")
    assert.equal("xyxyxy", render("return (('xy'):rep(3))"))
    assert.equal("<a> <bc>", render("return (('a bc'):gsub('(%w+)', '<%1>'))"))
    assert.equal("AbC", render("return (('abc'):gsub('[ac]', { a = 'A', c = 'C' }))"))
    assert.equal("%5d", render("return ('%%%dd'):format(5)"))
    assert.equal("T|nil|  2.0|true", render("local t = setmetatable({}, { __tostring = function() return 'T' end }) "
      .. "return string.format('%s|%s|%5.1f|%s', t, nil, 2, true)"))
  end)

end)

describe("sandbox capabilities", function()
  after_each(host_untouched)

  local function forbidden(src, name)
    local msg = fails("TEMPLATE_FORBIDDEN", render(src))
    assert.equal(name .. " is not available to templates", msg)
  end

  it("refuses the dangerous globals with TEMPLATE_FORBIDDEN", function()
    forbidden("os.execute('touch /tmp/sandbox-escaped')", "os")
    forbidden("return io.popen('id'):read('a')", "io")
    forbidden("return io.open('/etc/passwd'):read('a')", "io")
    forbidden("return require('os')", "require")
    forbidden("return loadfile('/etc/passwd')", "loadfile")
    forbidden("return dofile('/etc/passwd')", "dofile")
    forbidden("return package.loaded", "package")
    forbidden("debug.sethook()", "debug")
    forbidden("collectgarbage('stop')", "collectgarbage")
    forbidden("return coroutine.wrap(function() end)", "coroutine")
    forbidden("print('hi')", "print")
    forbidden("return os.getenv('HOME')", "os")
    forbidden("return load('return 1')()", "load")
    forbidden("math.randomseed(1)", "math.randomseed")
    assert.is_nil(io.open("/tmp/sandbox-escaped"))
  end)

  it("keeps a forbidden use final even when the template catches it", function()
    forbidden("pcall(function() os.execute('true') end) return 'ok'", "os")
    forbidden("local ok = pcall(function() return io end) while true do end", "io")
  end)

  it("has no string.dump, no string.pack and no way to the string metatable", function()
    forbidden("return string.dump(function() end)", "string.dump")
    forbidden("return (''):dump()", "string.dump")
    forbidden("return string.pack('c1000000000', '')", "string.pack")
    forbidden("getmetatable('').__index.rep = nil", "getmetatable")
  end)

  it("allows metatables but no finalizers, and protects its own tables", function()
    assert.equal("3 cls", render([[
      local Point = {}
      Point.__index = Point
      Point.__tostring = function() return "cls" end
      function Point.new(x, y) return setmetatable({ x = x, y = y }, Point) end
      function Point:sum() return self.x + self.y end
      local p = Point.new(1, 2)
      return p:sum() .. " " .. tostring(p)
    ]]))
    forbidden("setmetatable({}, { __gc = function() while true do end end })", "__gc")
    forbidden("local mt = {} setmetatable({}, mt) mt.__gc = function() end setmetatable({}, mt)", "__gc")
    -- Added after setmetatable, __gc never runs (Lua's rule): allowed.
    assert.equal("ok", render("local mt = {} setmetatable({}, mt) mt.__gc = function() while true do end end "
      .. "return 'ok'"))
    collectgarbage()
    assert.equal("cannot change a protected metatable",
      fails("TEMPLATE_RUNTIME_ERROR", render("setmetatable(string, nil)")))
    assert.equal("cannot change a protected metatable",
      fails("TEMPLATE_RUNTIME_ERROR", render("setmetatable(_G, {})")))
  end)

  it("keeps the template's changes to its libraries to itself", function()
    assert.equal("ok", render([[
      string.rep = function() return "hijacked" end
      string.format = nil
      table.concat = nil
      rawset(string, "upper", nil)
      return "ok"
    ]]))
    assert.equal("xx,ABC", render("return ('x'):rep(2) .. ',' .. ('abc'):upper()"))
  end)

  it("has no clock and no load", function()
    forbidden("return os.date()", "os")
    forbidden("return tostring(os.time())", "os")
    forbidden("return tostring(os.clock())", "os")
    forbidden("local f, err = load('\\27Lua\\84\\0', 'x', 'b') return err", "load")
    forbidden("return loadstring('return 1')", "loadstring")
  end)
end)

describe("sandbox hook", function()
  after_each(host_untouched)

  it("is gone after every outcome and leaves the caller's hook alone", function()
    local calls = 0
    local function mine()
      calls = calls + 1
    end
    for _, src in ipairs { "return 'ok'", "return ((", "error('x')", "while true do end", "return 1",
                           "io.open('x')", "return ('x'):rep(1e12)" } do
      render(src, nil, { budget = 100000 })
      assert.is_nil(debug.gethook())
      debug.sethook(mine, "", 1000000)
      render(src, nil, { budget = 100000 })
      local h, mask, count = debug.gethook()
      debug.sethook()
      assert.equal(mine, h, src)
      assert.equal("", mask)
      assert.equal(1000000, count)
    end
  end)
end)
