-- Functional specs for `agent-chat run SCRIPT ARGS...` (docs/format.md 6): the
-- script's arg table and varargs, the embedded modules, errors with a
-- traceback, os.exit codes, --root, and a script read from stdin.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

describe("agent-chat run", function()
  local dir

  before_each(function()
    dir = F.tmpdir()
  end)

  local function script(name, text)
    local path = dir .. "/" .. name
    F.write(path, text)
    return path
  end

  it("passes the script as arg[0] and the arguments as arg[1..]", function()
    local s = script("args.lua", [[
print(arg[0])
print(#arg)
for i = 1, #arg do print(i, arg[i]) end
]])
    local r = F.run({ "run", s, "a", "b c", "" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    assert.equal(s .. "\n3\n1\ta\n2\tb c\n3\t\n", r.stdout)
  end)

  it("runs the script's finalizers when it ends (its state is closed)", function()
    -- The CLI's own commands leave their state to the end of the process
    -- (src/lua_host.c); a script's __gc must still run, as under lua5.4.
    local s = script("gc.lua", [[
_G.keep = setmetatable({}, { __gc = function() io.stdout:write("finalized\n") end })
print("ran")
]])
    local r = F.run({ "run", s })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("ran\nfinalized\n", r.stdout)
  end)

  it("gives the script Lua's warnings: off until warn('@on'), then on stderr", function()
    local s = script("warn.lua", [[
warn("hidden")
warn("@on")
warn("shown ", "in parts")
warn("@off")
warn("hidden again")
]])
    local r = F.run({ "run", s })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("Lua warning: shown in parts\n", r.stderr)
  end)

  it("passes the arguments as ... too", function()
    local s = script("dots.lua", [[
print(select("#", ...))
print(...)
]])
    local r = F.run({ "run", s, "a", "b" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("2\na\tb\n", r.stdout)
  end)

  it("passes option-like arguments through untouched", function()
    local s = script("opts.lua", "print(table.concat(arg, ' '))\n")
    local r = F.run({ "run", s, "-h", "--root", "x", "--help", "--", "-n" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("-h --root x --help -- -n\n", r.stdout)
  end)

  it("gives the script no arguments when there are none", function()
    local s = script("none.lua", "print(#arg, select('#', ...), arg[0] ~= nil)\n")
    local r = F.run({ "run", s })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("0\t0\ttrue\n", r.stdout)
  end)

  it("lets the script require cjson", function()
    local s = script("json.lua", [[
local cjson = require "cjson"
local t = cjson.decode('{"a": [1, 2, {"b": "c"}]}')
print(t.a[3].b, #t.a)
print(cjson.encode({ x = "y" }))
]])
    local r = F.run({ "run", s })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("c\t3\n{\"x\":\"y\"}\n", r.stdout)
  end)

  it("lets the script require agentchat and use a channel", function()
    local root = F.new_root()
    local s = script("api.lua", [[
local ac = require "agentchat"
local root = ac.open()
local ch = assert(root:init("api", { members = { "alice", "bob" }, topic = "T" }))
local res = assert(ch:post{ from = "alice", to = "bob", title = "hi", body = "hello" })
print("posted", res.seq, res.file)
local batch = assert(ch:read{ as = "bob" })
for _, m in ipairs(batch.messages) do print(m.seq, m.from, m.title) end
ch:close()
]])
    local r = F.run({ "run", s }, { root = root })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("posted\t1\t0001-alice-hi.md\n1\talice\thi\n", r.stdout)
    -- The CLI sees what the script wrote.
    local roster = F.run({ "--root", root, "roster", "api" })
    assert.equal("channel : api\ntopic   : T\nmembers : alice, bob\nmessages: 1\n", roster.stdout)
    assert.equal("1", F.read(root .. "/api/.cursors/bob.txt"))
  end)

  it("has the full standard library", function()
    local s = script("std.lua", [[
print(type(io.open), type(os.execute), type(string.pack), type(utf8.char), type(coroutine.wrap),
  type(debug.traceback), type(package.loaded))
]])
    local r = F.run({ "run", s })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("function\tfunction\tfunction\tfunction\tfunction\tfunction\ttable\n", r.stdout)
  end)

  it("exits 1 with the error and a stack traceback when the script raises", function()
    local s = script("boom.lua", [[
local function inner() error("boom here") end
inner()
]])
    local r = F.run({ "run", s })
    assert.equal(1, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.truthy(r.stderr:find("boom here", 1, true), F.describe(r))
    assert.truthy(r.stderr:find("stack traceback", 1, true), F.describe(r))
    assert.truthy(r.stderr:find("boom.lua:1", 1, true), F.describe(r))
  end)

  it("reports an error object that is not a string", function()
    local s = script("table.lua", "error({ code = 'X' })\n")
    local r = F.run({ "run", s })
    assert.equal(1, r.code, F.describe(r))
    assert.not_equal("", r.stderr)
  end)

  it("flushes what the script printed before it raised", function()
    local s = script("partial.lua", "io.write('before\\n')\nerror('after')\n")
    local r = F.run({ "run", s })
    assert.equal(1, r.code, F.describe(r))
    assert.equal("before\n", r.stdout)
  end)

  it("exits with the code given to os.exit", function()
    for _, case in ipairs({ { "os.exit(3)", 3 }, { "os.exit(0)", 0 }, { "os.exit(true)", 0 },
                            { "os.exit(false)", 1 }, { "os.exit(42)", 42 } }) do
      local s = script("exit.lua", "io.write('out')\n" .. case[1] .. "\nprint('not reached')\n")
      local r = F.run({ "run", s })
      assert.equal(case[2], r.code, case[1] .. ": " .. F.describe(r))
      assert.equal("out", r.stdout, case[1])
    end
  end)

  it("exits 2 without a script", function()
    local r = F.run({ "run" })
    assert.equal(2, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.not_equal("", r.stderr)
    assert.is_nil(F.crashed(r.stderr), F.describe(r))
  end)

  it("exits 1 with one error line for a script that does not exist", function()
    local r = F.run({ "run", dir .. "/missing.lua" })
    assert.equal(1, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
    assert.truthy(r.stderr:find("missing.lua", 1, true), F.describe(r))
  end)

  it("exits 1 with one error line for a script with a syntax error", function()
    local s = script("syntax.lua", "local = 1\n")
    local r = F.run({ "run", s })
    assert.equal(1, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
    assert.truthy(r.stderr:find("syntax.lua:1", 1, true), F.describe(r))
  end)

  it("makes agentchat.open() use --root given before run", function()
    local root = F.new_root()
    local other = F.new_root()
    local s = script("root.lua", [[
local ac = require "agentchat"
local root = ac.open()
print(root.path)
assert(root:init("via-flag"))
]])
    local r = F.run({ "--root", root, "run", s }, { root = other })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(root .. "\n", r.stdout)
    assert.truthy(F.read(root .. "/via-flag/_meta.json"))
    assert.same({}, F.snapshot(other))
  end)

  it("accepts --root=R before run", function()
    local root = F.new_root()
    local s = script("root2.lua", "print(require('agentchat').open().path)\n")
    local r = F.run({ "--root=" .. root, "run", s })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(root .. "\n", r.stdout)
  end)

  it("uses AGENT_CHAT_ROOT, then ~/agent-chat, without --root", function()
    local root = F.new_root()
    local home = F.tmpdir()
    local s = script("root3.lua", "print(require('agentchat').open().path)\n")
    local r = F.run({ "run", s }, { root = root, env = { HOME = home } })
    assert.equal(root .. "\n", r.stdout)
    r = F.run({ "run", s }, { env = { HOME = home } })
    assert.equal(home .. "/agent-chat\n", r.stdout)
  end)

  it("reads the script from stdin with run -", function()
    local r = F.run({ "run", "-", "x", "y" }, { stdin = "print(arg[0], ...)\nos.exit(4)\n" })
    assert.equal(4, r.code, F.describe(r))
    assert.equal("-\tx\ty\n", r.stdout)
  end)

  it("lets a script read its own stdin", function()
    local s = script("cat.lua", "local data = io.read('a')\nio.write(#data, ':', data:upper())\n")
    local r = F.run({ "run", s }, { stdin = "hello\nworld\n" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("12:HELLO\nWORLD\n", r.stdout)
  end)

  it("prints run's own help with run -h", function()
    local r = F.run({ "run", "-h" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("^usage: agent%-chat run"), F.describe(r))
  end)
end)
