-- agentchat.config from Lua (docs/config.md, docs/lua-api.md): load() with
-- its sources, precedence, lenient mode, read_file, the path helpers.
-- opts.env stands in for the process environment, so nothing here depends
-- on the machine's own HOME or config.
local H = require "spec_helper"
local config = require "agentchat.config"
local yaml = require "yaml"

local function mkdir(p)
  assert(os.execute("mkdir -p " .. H.sh(p)))
end

local function setup(user_text, root_text)
  local home = H.tmpdir()
  local w = { home = home, user = home .. "/.config/agent-chat/config.yaml", root = home .. "/agent-chat" }
  w.root_cfg = w.root .. "/agent-chat.yaml"
  if user_text then
    mkdir(home .. "/.config/agent-chat")
    H.write(w.user, user_text)
  end
  if root_text then
    mkdir(w.root)
    H.write(w.root_cfg, root_text)
  end
  w.env = { HOME = home }
  return w
end

describe("config.load", function()
  it("gives the defaults with no files", function()
    local w = setup()
    local cfg = assert(config.load{ env = w.env })
    assert.equal(w.root, cfg.root)
    assert.is_nil(cfg.name)
    assert.same({}, cfg.channels)
    assert.is_true(yaml.is_array(cfg.channels))
    assert.equal(5.0, cfg.interval)
    assert.equal("float", math.type(cfg.interval))
    assert.is_nil(cfg.template)
    assert.same({}, cfg.workflows)
    assert.same({}, cfg.hook_kinds)
    assert.equal("notify", cfg.stop_hook)
    assert.same({ root = "default", name = "default", channels = "default", interval = "default",
                  template = "default", workflows = "default", hook_kinds = "default",
                  stop_hook = "default", store = "default", etcd_user = "default",
                  etcd_password = "default", etcd_ca = "default", etcd_cert = "default",
                  etcd_key = "default" }, cfg.sources)
    assert.is_nil(cfg.store)
    assert.same({ path = w.user, status = "absent" }, cfg.files.user)
    assert.same({ path = w.root_cfg, status = "absent" }, cfg.files.root)
    assert.same({}, cfg.errors)
  end)

  it("merges flag > environment > root config > user config > default, with sources", function()
    local w = setup("root: ~/team\nidentity:\n  name: ursula\nchannels: [a, b]\nwait:\n  interval: 3\n"
      .. "workflows:\n  path: [wf]\n",
      nil)
    local team = w.home .. "/team"
    mkdir(team)
    H.write(team .. "/agent-chat.yaml", "identity:\n  name: rita\nstate:\n  template: t.lua\n")
    local cfg = assert(config.load{ env = w.env })
    assert.equal(team, cfg.root)
    assert.equal(w.user .. ":1", cfg.sources.root)
    assert.equal("rita", cfg.name)
    assert.equal(team .. "/agent-chat.yaml:2", cfg.sources.name)
    assert.same({ "a", "b" }, cfg.channels)
    assert.equal(w.user .. ":4", cfg.sources.channels)
    assert.equal(3.0, cfg.interval)
    assert.equal(team .. "/t.lua", cfg.template)
    assert.same({ w.home .. "/.config/agent-chat/wf" }, cfg.workflows)

    w.env.AGENT_CHAT_NAME = " erin "
    w.env.AGENT_CHAT_CHANNELS = "x,,y"
    w.env.AGENT_CHAT_ROOT = w.home .. "/envroot"
    cfg = assert(config.load{ env = w.env })
    assert.equal("erin", cfg.name)
    assert.equal("$AGENT_CHAT_NAME", cfg.sources.name)
    assert.same({ "x", "y" }, cfg.channels)
    assert.equal("$AGENT_CHAT_CHANNELS", cfg.sources.channels)
    assert.equal(w.home .. "/envroot", cfg.root)
    assert.equal("$AGENT_CHAT_ROOT", cfg.sources.root)
    assert.is_nil(cfg.template)                 -- the team root config is not this root's

    cfg = assert(config.load{ env = w.env, root = team .. "//" })
    assert.equal(team, cfg.root)
    assert.equal("--root", cfg.sources.root)
    assert.equal(team .. "/t.lua", cfg.template)
    assert.equal("erin", cfg.name)
  end)

  it("uses an absolute $XDG_CONFIG_HOME and ignores a relative one", function()
    local w = setup("identity:\n  name: dot\n")
    mkdir(w.home .. "/x/agent-chat")
    H.write(w.home .. "/x/agent-chat/config.yaml", "identity:\n  name: xdg\n")
    w.env.XDG_CONFIG_HOME = w.home .. "/x"
    assert.equal("xdg", config.load{ env = w.env }.name)
    assert.equal(w.home .. "/x/agent-chat/config.yaml", config.user_path(w.env))
    w.env.XDG_CONFIG_HOME = "x"
    assert.equal("dot", config.load{ env = w.env }.name)
  end)

  it("fails on a broken file, or skips it when lenient", function()
    local w = setup("identity:\n  name: ursula\n", "wait: {interval: soon}\n")
    local cfg, msg, code, exit = config.load{ env = w.env }
    assert.is_nil(cfg)
    assert.equal("CONFIG_INVALID", code)
    assert.equal(1, exit)
    assert.equal(w.root_cfg .. ": line 1, column 8: wait.interval must be a positive number of seconds "
      .. "(got a string)", msg)
    cfg = assert(config.load{ env = w.env, lenient = true })
    assert.equal("ursula", cfg.name)
    assert.equal(5.0, cfg.interval)
    assert.equal("invalid", cfg.files.root.status)
    assert.same({ "CONFIG_INVALID: " .. msg }, cfg.errors)
  end)

  it("has no root at all without a home directory, unless given one", function()
    local cfg, msg, code = config.load{ env = {} }
    assert.is_nil(cfg)
    assert.equal("NO_HOME", code)
    assert.is_string(msg)
    cfg = assert(config.load{ env = {}, lenient = true })
    assert.is_nil(cfg.root)
    cfg = assert(config.load{ env = {}, root = "/r" })
    assert.equal("/r", cfg.root)
  end)

  it("raises on misuse", function()
    assert.has_error(function() config.load("x") end)
  end)
end)

describe("config.read_file", function()
  it("returns false for a missing file and a layer for a good one", function()
    local w = setup("wait:\n  interval: 1\n")
    assert.is_false(config.read_file(w.home .. "/none.yaml", "user", w.env))
    local layer = assert(config.read_file(w.user, "user", w.env))
    assert.same({ interval = 1.0 }, layer.values)
    assert.same({ interval = 2 }, layer.lines)
    assert.equal("user", layer.scope)
  end)

  it("refuses files over 1 MiB", function()
    local w = setup(string.rep("#", 1024 * 1024 + 1))
    local v, msg, code = config.read_file(w.user, "user", w.env)
    assert.is_nil(v)
    assert.equal("CONFIG_INVALID", code)
    assert.equal(w.user .. ": larger than 1 MiB", msg)
  end)

  it("caps nesting and aliases in config files", function()
    local w = setup(string.rep("[", 30) .. string.rep("]", 30) .. "\n")
    local _, msg = config.read_file(w.user, "user", w.env)
    assert.matches("nesting deeper than 20 levels", msg)
  end)
end)

describe("config helpers", function()
  it("split_list reads lists like $AGENT_CHAT_CHANNELS", function()
    assert.same({ "a", "b", "a" }, config.split_list(" a ,, b,a, "))
    assert.same({}, config.split_list(nil))
  end)

  it("root_path and user_path", function()
    assert.equal("r/agent-chat.yaml", config.root_path("r"))
    assert.equal("/h/.config/agent-chat/config.yaml", config.user_path({ HOME = "/h/" }))
    assert.is_nil(config.user_path({}))
  end)

  it("find_workflow searches the directories for NAME and NAME.lua", function()
    local d1, d2 = H.tmpdir(), H.tmpdir()
    H.write(d2 .. "/greet.lua", "return {}")
    H.write(d1 .. "/plain", "return {}")
    assert.equal(d2 .. "/greet.lua", config.find_workflow("greet", { d1, d2 }))
    assert.equal(d1 .. "/plain", config.find_workflow("plain", { d1, d2 }))
    assert.equal("missing", config.find_workflow("missing", { d1, d2 }))
    assert.equal("./greet", config.find_workflow("./greet", { d2 }))
  end)
end)
