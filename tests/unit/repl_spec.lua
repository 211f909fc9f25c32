-- The REPL's building blocks inside the binary: agentchat.pretty (result
-- printing) and agentchat.repl.complete (Tab completion), and the
-- non-readline parts of agentchat.readline. The loop itself is driven from
-- outside in tests/functional/repl_spec.lua (pipe) and repl_tmux_spec.lua.
local H = require "spec_helper"
local ac = require "agentchat"
local json = require "agentchat.json"
local pretty = require "agentchat.pretty"
local repl = require "agentchat.repl"
local rl = require "agentchat.readline"

describe("agentchat.pretty", function()
  local fmt = pretty.format

  it("prints scalars as Lua literals", function()
    assert.equal("1", fmt(1))
    assert.equal("1.5", fmt(1.5))
    assert.equal("1.0", fmt(1.0))
    assert.equal("math.huge", fmt(math.huge))
    assert.equal("-math.huge", fmt(-math.huge))
    assert.equal("0/0", fmt(0 / 0))
    assert.equal("true", fmt(true))
    assert.equal("nil", fmt(nil))
    assert.equal('"a\\nb\\t\\"c\\"\\\\"', fmt('a\nb\t"c"\\'))
    assert.equal('"\\000\\027x"', fmt("\0\27x"))
    assert.equal('"h\195\169"', fmt("h\195\169"))          -- valid UTF-8 kept
    assert.equal('"\\255x"', fmt("\255x"))                  -- invalid bytes escaped
  end)

  it("prints JSON null as null", function()
    assert.equal("null", fmt(json.null))
    assert.equal("{ null, a = null }", fmt({ json.null, a = json.null }))
  end)

  it("prints the array part first, then sorted keys", function()
    assert.equal("{}", fmt({}))
    assert.equal('{ "x", "y", [5] = 5, [10] = 10, a = 1, b = 2, ["end"] = 3, ["two words"] = 4, [true] = 0 }',
      fmt({ "x", "y", b = 2, a = 1, ["end"] = 3, ["two words"] = 4, [10] = 10, [5] = 5, [true] = 0 },
        { width = 200 }))
  end)

  it("breaks tables that do not fit into indented lines", function()
    local s = fmt({ name = "dev", members = { "alice", "bob" }, text = string.rep("x", 80) })
    assert.equal('{\n  members = { "alice", "bob" },\n  name = "dev",\n  text = "'
      .. string.rep("x", 80) .. '"\n}', s)
    assert.equal('{\n  a = {\n    b = "' .. string.rep("y", 70) .. '"\n  }\n}',
      fmt({ a = { b = string.rep("y", 70) } }))
  end)

  it("is safe with cycles and shows shared tables twice", function()
    local t = { name = "t" }
    t.self = t
    t.list = { t, { t } }
    assert.equal('{ list = { <cycle>, { <cycle> } }, name = "t", self = <cycle> }', fmt(t))
    local shared = { 1 }
    assert.equal("{ a = { 1 }, b = { 1 } }", fmt({ a = shared, b = shared }))
  end)

  it("limits depth, entries per table, string length and the total", function()
    assert.equal("{ { { {...} } } }", fmt({ { { { { 1 } } } } }, { depth = 3 }))
    local big = {}
    for i = 1, 10 do
      big[i] = i
    end
    assert.equal("{ 1, 2, 3, ... (7 more) }", fmt(big, { items = 3 }))
    assert.equal('"abc"...(+3 bytes)', fmt("abcdef", { string = 3 }))
    -- A cut never splits a UTF-8 character.
    assert.equal('"a"...(+2 bytes)', fmt("a\195\169", { string = 2 }))
    local wide = {}
    for i = 1, 100 do
      wide[i] = { i, { i } }
    end
    local s = fmt(wide, { budget = 10 })
    assert.truthy(s:find("...", 1, true))
    assert.truthy(#s < 400, s)
  end)

  it("quotes strings alone, and exposes its defaults and keywords", function()
    assert.equal('"a\\"b\\n"', pretty.quote('a"b\n'))
    assert.equal('"ab"...(+1 bytes)', pretty.quote("abc", 2))
    assert.same({ depth = 6, items = 100, string = 400, width = 80, budget = 5000 }, pretty.defaults)
    assert.is_true(pretty.keywords["end"])
    assert.is_nil(pretty.keywords["root"])
    assert.equal('{ ["end"] = 1 }', fmt({ ["end"] = 1 }))
  end)

  it("uses __tostring for API objects and error objects", function()
    local root = assert(ac.open(H.tmpdir() .. "/r"))
    assert.equal("agentchat.root (" .. root.path .. ")", fmt(root))
    assert.equal("{ E: m }", fmt({ ac.errors.new("E", "m") }))
  end)
end)

describe("agentchat.repl.complete", function()
  local env

  setup(function()
    local root = assert(ac.open(H.tmpdir() .. "/root"))
    assert(root:init("dev"))
    assert(root:init("design"))
    assert(root:init("ops-night"))
    env = setmetatable({}, { __index = _G })
    repl.install_globals(env, root)
    env.cfg = { alpha = 1, beta = { gamma = 2 }, _private = 3 }
  end)

  -- Complete `line` with the cursor at its end, splitting the word as
  -- readline does (the word-break characters of l_readline.c).
  local function complete(line)
    local start = #line
    while start > 0 and not line:sub(start, start):find("[%s\"'`@$><=;|&{(,.:%[%]+%-*/%%^#~}]") do
      start = start - 1
    end
    return repl.complete(env, line:sub(start + 1), line, start)
  end

  it("completes methods of the root after ':'", function()
    local list, append = complete("root:chan")
    assert.same({ "channel", "channel_names", "channels" }, list)
    assert.equal("", append)
    list, append = complete("root:ini")
    assert.same({ "init" }, list)
    assert.equal("(", append)
  end)

  it("completes fields after '.', hiding _names unless asked", function()
    assert.same({ "alpha", "beta" }, (complete("cfg.")))
    assert.same({ "_private" }, (complete("cfg._")))
    assert.same({ "gamma" }, (complete("x = cfg.beta.g")))
    assert.same({}, (complete("cfg.alpha.")))
    assert.same({}, (complete("nosuch.")))
  end)

  it("completes channel methods after a call that returns a channel", function()
    local list = complete('root:channel("dev"):pe')
    assert.same({ "peek" }, list)
    assert.same({ "peek" }, (complete('ch("dev"):pe')))
    local all = complete("ch('dev'):")
    for _, m in ipairs({ "post", "read", "wait", "tasks", "lock", "events", "state" }) do
      local found = false
      for _, x in ipairs(all) do
        found = found or x == m
      end
      assert.is_true(found, m)
    end
  end)

  it("completes globals and keywords", function()
    local list, append = complete("ro")
    assert.same({ "root" }, list)
    assert.equal("", append)
    list, append = complete("x = pai")
    assert.same({ "pairs" }, list)
    assert.equal("(", append)
    list, append = complete("if x then ret")
    assert.same({ "return" }, list)
    assert.equal(" ", append)
  end)

  it("completes channel names inside the string argument of channel(, ch(", function()
    local list, append = complete('root:channel("de')
    assert.same({ "design", "dev" }, list)
    assert.equal('"', append)
    list, append = complete("ch('op")
    assert.same({ "ops-night" }, list)
    assert.equal("'", append)
    -- readline's word starts after "-": the candidates replace only that.
    assert.same({ "night" }, (complete('ch("ops-')))
    assert.same({}, (complete('print("de')))
    assert.same({}, (complete('x = 1 -- root:chan')))
  end)
end)

describe("agentchat.repl.history_path", function()
  it("takes the flag, then $XDG_STATE_HOME, then ~/.local/state", function()
    assert.equal("/x/h", repl.history_path("/x/h"))
    assert.is_nil(repl.history_path(false))
    local p = repl.history_path(nil)
    local xdg = os.getenv("XDG_STATE_HOME")
    if xdg and xdg:sub(1, 1) == "/" then
      assert.equal(xdg .. "/agent-chat/repl_history", p)
    else
      assert.truthy(p:find("/%.local/state/agent%-chat/repl_history$"), p)
    end
  end)
end)

describe("agentchat.readline", function()
  it("reports whether the build has readline and exposes the API", function()
    assert.is_boolean(rl.available)
    for _, f in ipairs({ "readline", "add_history", "read_history", "append_history",
                         "truncate_history", "set_completer", "clear_interrupt" }) do
      assert.is_function(rl[f], f)
    end
    assert.is_false(rl.clear_interrupt())
  end)

  it("writes and reads a history file, creating its directory", function()
    if not rl.available then
      pending("built without readline")
      return
    end
    local path = H.tmpdir() .. "/a/b/history"
    rl.add_history("first line")
    assert.is_true(rl.append_history(path))
    rl.add_history("second line")
    assert.is_true(rl.append_history(path))
    assert.equal("first line\nsecond line\n", H.read(path))
    assert.is_true(rl.truncate_history(path, 1))
    assert.equal("second line\n", H.read(path))
    assert.is_true(rl.read_history(path))
    assert.is_true(rl.read_history(H.tmpdir() .. "/missing"))
  end)
end)
