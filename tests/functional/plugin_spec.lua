-- The Claude Code plugin (issue 13, item 2; claude-plugin/, README "Claude
-- Code plugin"): a marketplace file in the repository, `make install-plugin`
-- into a temporary HOME, and every hook of the installed hooks.json run the
-- way Claude Code runs a command hook: the command through a shell with
-- CLAUDE_PLUGIN_ROOT set, the hook input as JSON on stdin, exit 0 with the
-- documented output shape (plain text for SessionStart and
-- UserPromptSubmit, a JSON object for Stop). With the binary, without it
-- (one line on stderr, exit 0: a hook never breaks a session), and found
-- through AGENT_CHAT_BIN or PATH. Before the wrapper the hooks called a bare
-- `agent-chat` and failed with exit 127 on every prompt.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local json = require "agentchat.json"

local REPO = H.repo
local PLAIN_PATH = "/usr/bin:/bin"     -- a PATH without agent-chat

-- The hook input Claude Code writes on stdin for each event.
local EVENTS = {
  SessionStart = { kind = "session-start", input = { hook_event_name = "SessionStart", source = "startup" } },
  UserPromptSubmit = { kind = "prompt", input = { hook_event_name = "UserPromptSubmit", prompt = "hi" } },
  Stop = { kind = "stop", input = { hook_event_name = "Stop", stop_hook_active = false } },
}

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("a")
  local ok, _, code = p:close()
  return ok and 0 or code, out
end

-- Run one hook entry of hooks.json as Claude Code would: `sh -c COMMAND` in
-- the project directory with the hook input on stdin. Returns {code,
-- stdout, stderr}.
local function run_hook(command, plugin, input, env)
  local dir = F.tmpdir()
  local base = { HOME = env.HOME, PATH = env.PATH or PLAIN_PATH, CLAUDE_PLUGIN_ROOT = plugin,
                 CLAUDE_PROJECT_DIR = dir, LC_ALL = "C" }
  for k, v in pairs(env) do
    base[k] = v
  end
  local words = {}
  for k, v in pairs(base) do
    if v then
      words[#words + 1] = k .. "=" .. F.sh(v)
    end
  end
  table.sort(words)
  input.session_id = "3f2a"
  input.transcript_path = dir .. "/t.jsonl"
  input.cwd = dir
  F.write(dir .. "/in.json", json.dumps(input))
  local cmd = string.format("cd %s && env -i %s /bin/sh -c %s <%s >%s 2>%s", F.sh(dir), table.concat(words, " "),
    F.sh(command), F.sh(dir .. "/in.json"), F.sh(dir .. "/out"), F.sh(dir .. "/err"))
  local ok, _, code = os.execute(cmd)
  return { code = ok and 0 or code, stdout = F.read(dir .. "/out"), stderr = F.read(dir .. "/err") }
end

describe("the plugin marketplace in the repository", function()
  it("lists the plugin with a source Claude Code accepts", function()
    local market = json.loads(F.read(REPO .. "/.claude-plugin/marketplace.json"))
    assert.is_table(market)
    assert.equal("agent-chat", market.name)
    assert.is_string(market.owner.name)
    assert.equal(1, #market.plugins)
    local entry = market.plugins[1]
    -- a relative source starts with ./ and never climbs out with ..
    assert.truthy(entry.source:match("^%./"), entry.source)
    assert.is_nil(entry.source:find("..", 1, true))
    local manifest = json.loads(F.read(REPO .. "/" .. entry.source:sub(3) .. "/.claude-plugin/plugin.json"))
    assert.equal(manifest.name, entry.name)
    assert.equal(manifest.version, entry.version)
  end)

  it("its hooks go through the wrapper, never a bare agent-chat", function()
    local hooks = json.loads(F.read(REPO .. "/claude-plugin/hooks/hooks.json")).hooks
    for event, spec in pairs(EVENTS) do
      local entry = hooks[event][1].hooks[1]
      assert.equal("command", entry.type)
      assert.equal('"${CLAUDE_PLUGIN_ROOT}/bin/agent-chat-hook" ' .. spec.kind, entry.command)
    end
  end)
end)

describe("make install-plugin into a temporary HOME", function()
  local home, market, plugin, root, hooks, install_out

  setup(function()
    home = F.tmpdir()
    local code
    code, install_out = sh("make --no-print-directory -s -C " .. F.sh(REPO) .. " install-plugin HOME=" .. F.sh(home))
    assert.equal(0, code, install_out)
    market = home .. "/.local/share/agent-chat/claude-marketplace"
    plugin = market .. "/claude-plugin"
    hooks = json.loads(F.read(plugin .. "/hooks/hooks.json")).hooks
    root = F.new_root()
    F.init(root, "dev")
    F.ok(root, { "task", "create", "dev", "t1", "--from", "lead", "--title", "build" })
    F.post(root, "dev", "alice", "hello", "x", "--to", "bob")
  end)

  local function each_hook(env, check)
    for event, spec in pairs(EVENTS) do
      local input = {}
      for k, v in pairs(spec.input) do
        input[k] = v
      end
      local r = run_hook(hooks[event][1].hooks[1].command, plugin, input, env)
      check(event, r)
    end
  end

  it("makes a local marketplace holding the plugin and its own binary, and says how to add it", function()
    assert.equal(F.read(REPO .. "/.claude-plugin/marketplace.json"),
      F.read(market .. "/.claude-plugin/marketplace.json"))
    assert.equal(0, (sh(F.sh(plugin .. "/bin/agent-chat") .. " -h >/dev/null")))
    for _, f in ipairs({ ".claude-plugin/plugin.json", "commands/agent-chat.md", "skills/agent-chat/SKILL.md",
                         "bin/agent-chat-hook" }) do
      assert.equal(F.read(REPO .. "/claude-plugin/" .. f), F.read(plugin .. "/" .. f), f)
    end
    assert.truthy(install_out:find("/plugin marketplace add " .. market, 1, true), install_out)
    assert.truthy(install_out:find("/plugin install agent-chat@agent-chat", 1, true), install_out)
    -- again: replaced in place
    local code, out = sh("make --no-print-directory -s -C " .. F.sh(REPO) .. " install-plugin HOME=" .. F.sh(home))
    assert.equal(0, code, out)
  end)

  it("runs every hook with the plugin's binary: exit 0 and the documented output", function()
    each_hook({ HOME = home, AGENT_CHAT_NAME = "bob", AGENT_CHAT_ROOT = root }, function(event, r)
      assert.equal(0, r.code, event .. ": " .. r.stderr)
      assert.equal("", r.stderr, event)
      if event == "Stop" then
        local out = json.loads(r.stdout)
        assert.is_table(out, r.stdout)
        assert.equal("[agent-chat] Your turn is ending with unread peer messages: #dev (2). "
          .. "Run /agent-chat to read/reply.", out.systemMessage)
      else
        assert.equal("[agent-chat] bob has unread peer messages: #dev (2). Run /agent-chat to read/reply.\n",
          r.stdout, event)
      end
    end)
  end)

  it("passes the hook input on: the opt-in blocking Stop hook, and its stop_hook_active guard", function()
    local env = { HOME = home, AGENT_CHAT_NAME = "bob", AGENT_CHAT_ROOT = root, AGENT_CHAT_STOP_HOOK = "block",
                  AGENT_CHAT_HOOK_KINDS = "message" }
    local stop = hooks.Stop[1].hooks[1].command
    local r = run_hook(stop, plugin, { hook_event_name = "Stop", stop_hook_active = false }, env)
    assert.equal(0, r.code, r.stderr)
    local out = json.loads(r.stdout)
    assert.equal("block", out.decision)
    assert.truthy(out.reason:find("agent-chat read dev --as bob --kind message", 1, true), out.reason)
    r = run_hook(stop, plugin, { hook_event_name = "Stop", stop_hook_active = true }, env)
    assert.equal(0, r.code, r.stderr)
    out = json.loads(r.stdout)
    assert.is_nil(out.decision)
    assert.truthy(out.systemMessage:find("#dev (1)", 1, true), r.stdout)
  end)

  it("without any binary: every hook prints one line on stderr and exits 0", function()
    local bare = F.copy(plugin)
    os.remove(bare .. "/bin/agent-chat")
    for event, spec in pairs(EVENTS) do
      local r = run_hook(hooks[event][1].hooks[1].command, bare, spec.input,
        { HOME = F.tmpdir(), AGENT_CHAT_NAME = "bob", AGENT_CHAT_ROOT = root })
      assert.equal(0, r.code, event)
      assert.equal("", r.stdout, event)
      assert.is_nil(F.error_line((r.stderr:gsub("^agent%-chat plugin", "agent-chat"))), event .. ": " .. r.stderr)
      assert.truthy(r.stderr:find("no agent%-chat binary found"), r.stderr)
    end
  end)

  it("finds the binary through AGENT_CHAT_BIN, then PATH, then ~/.local/bin", function()
    local bare = F.copy(plugin)
    os.remove(bare .. "/bin/agent-chat")
    local prompt = hooks.UserPromptSubmit[1].hooks[1].command
    local want = "[agent-chat] bob has unread peer messages: #dev (2). Run /agent-chat to read/reply.\n"
    local base = { AGENT_CHAT_NAME = "bob", AGENT_CHAT_ROOT = root }
    local function with(extra)
      local env = { HOME = F.tmpdir() }
      for k, v in pairs(base) do
        env[k] = v
      end
      for k, v in pairs(extra) do
        env[k] = v
      end
      return run_hook(prompt, bare, { hook_event_name = "UserPromptSubmit", prompt = "x" }, env)
    end
    local r = with({ AGENT_CHAT_BIN = F.bin })
    assert.same({ 0, want, "" }, { r.code, r.stdout, r.stderr })
    local bindir = F.tmpdir()
    os.execute("cp " .. F.sh(F.bin) .. " " .. F.sh(bindir .. "/agent-chat"))
    r = with({ PATH = bindir .. ":" .. PLAIN_PATH })
    assert.same({ 0, want, "" }, { r.code, r.stdout, r.stderr })
    local h = F.tmpdir()
    os.execute("mkdir -p " .. F.sh(h .. "/.local/bin") .. " && cp " .. F.sh(F.bin) .. " " .. F.sh(h .. "/.local/bin/"))
    r = with({ HOME = h })
    assert.same({ 0, want, "" }, { r.code, r.stdout, r.stderr })
  end)

  it("a binary that fails is reported in one line, and the hook still exits 0", function()
    local broken = F.tmpdir() .. "/agent-chat"
    F.write(broken, "#!/bin/sh\necho half >&2\nexit 3\n")
    os.execute("chmod +x " .. F.sh(broken))
    local r = run_hook(hooks.SessionStart[1].hooks[1].command, plugin, EVENTS.SessionStart.input,
      { HOME = home, AGENT_CHAT_BIN = broken, AGENT_CHAT_NAME = "bob", AGENT_CHAT_ROOT = root })
    assert.equal(0, r.code)
    assert.equal("", r.stdout)
    assert.truthy(r.stderr:find("\nagent%-chat plugin: '.-' failed %(exit 3%)"), r.stderr)
  end)
end)

describe("the plugin's instructions", function()
  local texts = {
    skill = F.read(REPO .. "/claude-plugin/skills/agent-chat/SKILL.md"),
    command = F.read(REPO .. "/claude-plugin/commands/agent-chat.md"),
  }

  it("never tell an agent to block longer than its shell tool allows (2 minutes by default)", function()
    for name, text in pairs(texts) do
      for n in text:gmatch("%-%-timeout[ =](%d+)") do
        assert.is_true(tonumber(n) <= 110, name .. ": --timeout " .. n)
      end
    end
    assert.truthy(texts.skill:find("--timeout 110", 1, true))
  end)

  it("write the wait loop out once, in the skill, and the command points to it", function()
    local _, loops = texts.skill:gsub("\n## Waiting for peers\n", "")
    assert.equal(1, loops)
    local _, waits = texts.skill:gsub("agent%-chat wait ", "")
    assert.equal(1, waits)
    assert.truthy(texts.command:find('"Waiting for peers"', 1, true))
    assert.is_nil(texts.command:find("agent-chat wait ", 1, true))
  end)
end)
