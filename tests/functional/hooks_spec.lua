-- Functional specs for the host hooks (docs/format.md 4, Hooks) beyond the
-- conformance scenarios: the summary bound at its edges (characters, not
-- bytes), hooks that never fail and never write (hostile roots, channels
-- and environment), and the Claude Code plugin in claude-plugin/: its JSON
-- parses, its hooks run, and every command and flag its skill and slash
-- command mention exists in the binary.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local json = require "agentchat.json"
local hooks = require "agentchat.commands.hooks"

local PLUGIN = H.repo .. "/claude-plugin"

local function hook(root, kind, env)
  env = env or {}
  env.AGENT_CHAT_ROOT = root
  return F.run({ "hook", kind }, { env = env })
end

local function quiet_ok(r)
  assert(r.code == 0, F.describe(r))
  assert(r.stderr == "", F.describe(r))
  assert(not F.crashed(r.stderr), F.crashed(r.stderr))
  return r
end

describe("the summary bound", function()
  local function item(n)        -- "#<name> (1)" of exactly n characters
    return "#" .. string.rep("é", n - 5) .. " (1)"
  end
  local function ucut(s, n)     -- the first n characters
    return s:sub(1, utf8.offset(s, n + 1) - 1)
  end

  it("keeps an item of exactly the bound whole, and cuts one character more", function()
    assert.are.equal(item(190), hooks.bounded({ item(190) }, 190))
    local cut = hooks.bounded({ item(191) }, 190)
    assert.are.equal(190, utf8.len(cut))
    assert.are.equal("\u{2026}", cut:sub(-3))
    assert.are.equal(174 + 1, utf8.len(hooks.bounded({ item(190) }, 175)))
  end)

  it("takes whole items while they fit and then appends ', …'", function()
    local items = { item(60), item(60), item(60), item(60) }
    -- three items and two separators: 184 characters
    assert.are.equal(table.concat({ item(60), item(60), item(60) }, ", ") .. ", \u{2026}",
      hooks.bounded(items, 190))
    assert.are.equal(table.concat({ item(60), item(60) }, ", ") .. ", \u{2026}", hooks.bounded(items, 175))
    assert.are.equal(table.concat({ item(60), item(60) }, ", "), hooks.bounded({ item(60), item(60) }, 122))
  end)

  it("shows only a first item it had to cut, however many follow", function()
    for _, n in ipairs({ 1, 2, 5 }) do
      local items = { item(200) }
      for i = 2, n do
        items[i] = item(10)
      end
      local text = hooks.bounded(items, 175)
      assert.are.equal(ucut(item(200), 174) .. "\u{2026}", text)
      assert.are.equal(175, utf8.len(text))
    end
  end)

  it("cuts a long first channel in the printed line of each hook", function()
    local root = F.new_root()
    local long = string.rep("h", 190)
    for _, name in ipairs({ long, "zz" }) do
      F.init(root, name)
      F.post(root, name, "alice", "hi", "x")
    end
    local function hook_line(kind)
      return F.run({ "hook", kind }, { env = { AGENT_CHAT_ROOT = root, AGENT_CHAT_NAME = "bob" } }).stdout
    end
    local first = "#" .. long .. " (1)"           -- 195 characters
    assert.are.equal("[agent-chat] bob has unread peer messages: " .. first:sub(1, 189) .. "\u{2026}. "
      .. "Run /agent-chat to read/reply.\n", hook_line("prompt"))
    local stop = json.loads(hook_line("stop")).systemMessage
    assert.are.equal("[agent-chat] Your turn is ending with unread peer messages: " .. first:sub(1, 174)
      .. "\u{2026}. Run /agent-chat to read/reply.", stop)
  end)
end)

describe("hooks never fail and never write", function()
  local function busy_root()
    local root = F.new_root()
    F.init(root, "one")
    F.post(root, "one", "alice", "hi", "x")
    return root
  end

  it("stay silent and exit 0 on a root that is a file, or missing", function()
    local dir = F.tmpdir()
    H.write(dir .. "/file", "not a directory")
    for _, kind in ipairs(hooks.KINDS) do
      local r = quiet_ok(hook(dir .. "/file", kind, { AGENT_CHAT_NAME = "bob" }))
      assert.are.equal("", r.stdout)
      r = quiet_ok(hook(dir .. "/missing/deeper", kind, {}))
      assert.are.equal("", r.stdout)
    end
  end)

  it("skip broken channels and still report the others", function()
    local root = busy_root()
    F.init(root, "broken")
    H.write(root .. "/broken/_meta.json", "[1, 2")
    assert(os.execute("mkdir -p " .. F.sh(root .. "/nometa") .. " && ln -s /etc " .. F.sh(root .. "/link")))
    F.post(root, "broken", "alice", "hi", "x")
    local r = quiet_ok(hook(root, "prompt", { AGENT_CHAT_NAME = "bob" }))
    assert.truthy(r.stdout:find("#one (1)", 1, true), F.describe(r))
    assert.is_nil(r.stdout:find("#link", 1, true), F.describe(r))
    assert.is_nil(r.stdout:find("#nometa", 1, true), F.describe(r))
  end)

  it("ignore invalid and missing names in AGENT_CHAT_CHANNELS, keep order and duplicates", function()
    local root = busy_root()
    F.init(root, "two")
    F.post(root, "two", "alice", "a", "x")
    F.post(root, "two", "carol", "b", "y")
    local r = quiet_ok(hook(root, "session-start", {
      AGENT_CHAT_NAME = " bob ", AGENT_CHAT_CHANNELS = " two ,, ../etc, .hidden, none,one,two, " }))
    assert.are.equal("[agent-chat] bob has unread peer messages: #two (2), #one (1), #two (2). "
      .. "Run /agent-chat to read/reply.\n", r.stdout)
  end)

  it("session-start says the identity is unset when the root has any channel, whatever AGENT_CHAT_CHANNELS lists",
    function()
    local NOTICE = "[agent-chat] Inbox hook disabled: identity is unset; set AGENT_CHAT_NAME.\n"
    local root = busy_root()
    for _, list in ipairs({ "", " , ", "_x", "../one", "nosuch", "one", "a/b, nosuch" }) do
      local r = quiet_ok(hook(root, "session-start", { AGENT_CHAT_CHANNELS = list, AGENT_CHAT_NAME = "  " }))
      assert.are.equal(NOTICE, r.stdout, "AGENT_CHAT_CHANNELS=" .. list)
      for _, kind in ipairs({ "prompt", "stop" }) do
        assert.are.equal("", quiet_ok(hook(root, kind, { AGENT_CHAT_CHANNELS = list })).stdout)
      end
    end
    -- A root without channels (a folder without _meta.json is none) stays silent.
    local empty = F.new_root()
    assert(os.execute("mkdir -p " .. F.sh(empty .. "/nometa")))
    assert.are.equal("", quiet_ok(hook(empty, "session-start", { AGENT_CHAT_CHANNELS = "nometa" })).stdout)
  end)

  it("ignore whatever the host sends on stdin", function()
    local root = busy_root()
    local r = F.run({ "hook", "stop" }, { env = { AGENT_CHAT_ROOT = root, AGENT_CHAT_NAME = "bob" },
                                          stdin = "\0\255{not json" })
    quiet_ok(r)
    local obj = json.loads(r.stdout)
    assert.truthy(obj.systemMessage:find("#one (1)", 1, true))
  end)

  it("never write a cursor or any other file", function()
    local root = busy_root()
    local before = F.snapshot(root)
    for _, kind in ipairs(hooks.KINDS) do
      quiet_ok(hook(root, kind, { AGENT_CHAT_NAME = "bob" }))
      quiet_ok(hook(root, kind, {}))
    end
    assert.are.same({}, F.diff(before, F.snapshot(root)))
  end)
end)

describe("the Claude Code plugin", function()
  it("has valid JSON manifests whose hook commands run and exit 0", function()
    local manifest = json.loads(H.read(PLUGIN .. "/.claude-plugin/plugin.json"))
    assert.are.equal("agent-chat", manifest.name)
    local spec = json.loads(H.read(PLUGIN .. "/hooks/hooks.json"))
    local seen = {}
    for event, groups in pairs(spec.hooks) do
      for _, group in ipairs(groups) do
        for _, h in ipairs(group.hooks) do
          -- the wrapper that finds the binary (plugin_spec.lua runs it as
          -- Claude Code does, with and without a binary)
          local kind = h.command:match('^"%${CLAUDE_PLUGIN_ROOT}/bin/agent%-chat%-hook" (%S+)$')
          assert.truthy(kind, h.command)
          seen[event] = kind
          assert.are.equal(0, F.shell(h.command .. " </dev/null", { CLAUDE_PLUGIN_ROOT = PLUGIN,
            AGENT_CHAT_BIN = F.bin, AGENT_CHAT_ROOT = F.tmpdir() }))
        end
      end
    end
    assert.are.same({ SessionStart = "session-start", UserPromptSubmit = "prompt", Stop = "stop" }, seen)
  end)

  it("documents only commands and flags the binary has", function()
    local checked = 0
    for _, doc in ipairs({ "/skills/agent-chat/SKILL.md", "/commands/agent-chat.md" }) do
      local text = H.read(PLUGIN .. doc)
      for line in text:gmatch("`(agent%-chat [^`]+)`") do
        local words = {}
        for w in line:gmatch("[^%s]+") do
          words[#words + 1] = w
        end
        -- the command word, and the subcommand of `task`, `event`, `import`
        -- and `bridge`
        if words[2]:sub(1, 1) == "<" then
          goto next                   -- "agent-chat <command> -h": a placeholder
        end
        local argv = { words[2] }
        if words[2] == "task" or words[2] == "event" or words[2] == "import" or words[2] == "bridge" then
          argv[2] = words[3]
        end
        argv[#argv + 1] = "-h"
        local r = F.run(argv)
        assert(r.code == 0, doc .. ": `" .. line .. "`: " .. F.describe(r))
        for flag in line:gmatch("%s(%-%-[%w-]+)") do
          assert(r.stdout:find(flag, 1, true), doc .. ": `" .. line .. "` uses " .. flag
            .. ", which `agent-chat " .. table.concat(argv, " ") .. "` does not list")
        end
        checked = checked + 1
        ::next::
      end
    end
    assert.is_true(checked >= 20, "only " .. checked .. " commands found in the plugin docs")
  end)
end)
