-- Functional specs for the config files (docs/config.md): every setting
-- with a command-line effect at every precedence level (flag >
-- environment > root config > user config > default), broken files and
-- which commands they stop, and `agent-chat config`. Each test gets its
-- own $HOME (so its own ~/.config/agent-chat/config.yaml and default root).
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

-- A fresh world: w.home, w.user (user config path), w.root (default root).
local function world()
  local w = { home = F.tmpdir() }
  w.user_dir = w.home .. "/.config/agent-chat"
  w.user = w.user_dir .. "/config.yaml"
  w.root = w.home .. "/agent-chat"
  w.root_cfg = w.root .. "/agent-chat.yaml"
  return w
end

local function mkdir(p)
  assert(os.execute("mkdir -p " .. F.sh(p)))
end

local function write_user(w, text)
  mkdir(w.user_dir)
  F.write(w.user, text)
end

local function write_root(w, text)
  mkdir(w.root)
  F.write(w.root_cfg, text)
end

local function run(w, argv, env, opts)
  opts = opts or {}
  local e = { HOME = w.home }
  for k, v in pairs(env or {}) do
    e[k] = v
  end
  opts.env = e
  local r = F.run(argv, opts)
  assert.is_nil(F.crashed(r.stderr), F.describe(r))
  return r
end

local function ok(w, argv, env, opts)
  local r = run(w, argv, env, opts)
  assert(r.code == 0, F.describe(r))
  return r
end

-- A channel `dev` in the default root with one message from alice to all.
local function with_channel(w, root, ch)
  root = root or w.root
  ch = ch or "dev"
  ok(w, { "--root", root, "init", ch })
  ok(w, { "--root", root, "post", ch, "--from", "alice", "--title", "hi " .. ch, "--body", "x" })
end

local function failed_with(r, line)
  assert.equal(1, r.code, F.describe(r))
  assert.is_nil(F.error_line(r.stderr), F.describe(r))
  assert.equal(line .. "\n", r.stderr)
end

describe("no config files", function()
  it("agent-chat config shows every default", function()
    local w = world()
    local r = ok(w, { "config" })
    assert.equal(table.concat({
      "user config: " .. w.user .. " (absent)",
      "root config: " .. w.root_cfg .. " (absent)",
      "root            " .. w.root .. "  default",
      "identity.name   (unset)" .. string.rep(" ", #w.root - 7) .. "  default",
      "channels        (all)" .. string.rep(" ", #w.root - 5) .. "  default",
      "wait.interval   5.0" .. string.rep(" ", #w.root - 3) .. "  default",
      "state.template  (built-in)" .. string.rep(" ", #w.root - 10) .. "  default",
      "workflows.path  (none)" .. string.rep(" ", #w.root - 6) .. "  default",
      "hooks.kinds     (all)" .. string.rep(" ", #w.root - 5) .. "  default",
      "hooks.stop      notify" .. string.rep(" ", #w.root - 6) .. "  default",
      "store           (the root folder)" .. string.rep(" ", #w.root - 17) .. "  default",
      "etcd.user       (unset)" .. string.rep(" ", #w.root - 7) .. "  default",
      "etcd.password   (unset)" .. string.rep(" ", #w.root - 7) .. "  default",
      "etcd.ca         (unset)" .. string.rep(" ", #w.root - 7) .. "  default",
      "etcd.cert       (unset)" .. string.rep(" ", #w.root - 7) .. "  default",
      "etcd.key        (unset)" .. string.rep(" ", #w.root - 7) .. "  default",
    }, "\n") .. "\n", r.stdout)
    assert.equal("", r.stderr)
  end)

  it("commands use ~/agent-chat and the built-in defaults", function()
    local w = world()
    assert.equal("(no channels yet under " .. w.root .. ")\n", ok(w, { "channels" }).stdout)
    with_channel(w)
    local r = run(w, { "hook", "session-start" })
    assert.equal("[agent-chat] Inbox hook disabled: identity is unset; set AGENT_CHAT_NAME.\n", r.stdout)
  end)

  it("the required flags stay required (the identity never fills --as or --from)", function()
    local w = world()
    write_user(w, "identity:\n  name: alice\n")
    with_channel(w)
    local r = run(w, { "read", "dev" })
    assert.equal(2, r.code)
    assert.equal("agent-chat: USAGE: read: the following arguments are required: --as (see 'agent-chat read -h')\n",
      r.stderr)
    r = run(w, { "post", "dev", "--title", "t", "--body", "b" })
    assert.equal(2, r.code)
    assert.matches("required: %-%-from", r.stderr)
  end)
end)

describe("root", function()
  it("user config < $AGENT_CHAT_ROOT < --root", function()
    local w = world()
    write_user(w, "root: ~/from-user\n")
    -- user config
    assert.equal("(no channels yet under " .. w.home .. "/from-user)\n", ok(w, { "channels" }).stdout)
    ok(w, { "init", "c1" })
    assert.truthy(F.read(w.home .. "/from-user/c1/_meta.json"))
    -- environment beats it; an empty one counts as unset
    assert.equal("(no channels yet under " .. w.home .. "/from-env)\n",
      ok(w, { "channels" }, { AGENT_CHAT_ROOT = w.home .. "/from-env" }).stdout)
    assert.truthy(ok(w, { "channels" }, { AGENT_CHAT_ROOT = "" }).stdout:find("\nc1 ", 1, true))
    -- the flag beats both
    assert.equal("(no channels yet under " .. w.home .. "/from-flag)\n",
      ok(w, { "--root", w.home .. "/from-flag", "channels" }, { AGENT_CHAT_ROOT = w.home .. "/from-env" }).stdout)
  end)

  it("takes a relative root from the config file's directory, ~ from $HOME", function()
    local w = world()
    write_user(w, "root: chats\n")
    assert.equal("(no channels yet under " .. w.user_dir .. "/chats)\n", ok(w, { "channels" }).stdout)
    -- a bare ~ is YAML's null (not set here): the default applies; "~" is $HOME
    write_user(w, "root: ~\n")
    assert.equal("(no channels yet under " .. w.root .. ")\n", ok(w, { "channels" }).stdout)
    write_user(w, "root: '~'\n")
    assert.equal("(no channels yet under " .. w.home .. ")\n", ok(w, { "channels" }).stdout)
    write_user(w, "root: /abs//path/\n")
    assert.equal("(no channels yet under /abs/path)\n", ok(w, { "channels" }).stdout)
  end)

  it("reads $XDG_CONFIG_HOME/agent-chat/config.yaml when XDG_CONFIG_HOME is absolute", function()
    local w = world()
    local xdg = w.home .. "/xdg"
    mkdir(xdg .. "/agent-chat")
    F.write(xdg .. "/agent-chat/config.yaml", "root: ~/from-xdg\n")
    write_user(w, "root: ~/from-dot-config\n")
    assert.equal("(no channels yet under " .. w.home .. "/from-xdg)\n",
      ok(w, { "channels" }, { XDG_CONFIG_HOME = xdg }).stdout)
    -- relative or empty: ignored (XDG base directory spec), ~/.config is used
    assert.equal("(no channels yet under " .. w.home .. "/from-dot-config)\n",
      ok(w, { "channels" }, { XDG_CONFIG_HOME = "xdg" }, { cwd = w.home }).stdout)
    assert.equal("(no channels yet under " .. w.home .. "/from-dot-config)\n",
      ok(w, { "channels" }, { XDG_CONFIG_HOME = "" }).stdout)
  end)

  it("cannot be set in a root config", function()
    local w = world()
    write_root(w, "root: /elsewhere\n")
    local r = run(w, { "config" })
    failed_with(r, "agent-chat: CONFIG_INVALID: " .. w.root_cfg .. ": line 1, column 1: 'root' cannot be set "
      .. "in a root config (it is found through the root); set it in the user config")
  end)
end)

describe("wait.interval", function()
  -- wait with change notification off (AGENT_CHAT_WATCH=none), so only the
  -- polling interval decides when the message posted after 0.3 s is seen:
  -- a 0.1 s interval sees it at once, a 5 s or 10 s one only at the 4 s
  -- deadline (where wait rescans once more). Returns seconds taken.
  local function timed_wait(w, extra)
    local work = F.tmpdir()
    local t0 = F.now()
    local rc = F.shell([[
W=$1
"$A" wait dev --as bob --timeout 4 ]] .. (extra or "") .. [[ >"$W/out" 2>"$W/err" &
pid=$!
sleep 0.3
"$A" post dev --from alice --to bob --title ping --body x >/dev/null
wait $pid
echo $? >"$W/rc"
]], { HOME = w.home, AGENT_CHAT_WATCH = "none" }, work)
    local took = F.now() - t0
    assert.equal(0, rc)
    assert.equal("0", (F.read(work .. "/rc") or ""):match("%d+"), F.read(work .. "/err"))
    assert.truthy((F.read(work .. "/out") or ""):find("title: ping", 1, true))
    return took
  end

  local function setup()
    local w = world()
    ok(w, { "init", "dev" })
    return w
  end

  it("default 5 s: woken only at the deadline", function()
    local took = timed_wait(setup())
    assert.is_true(took >= 3.8, "took " .. took)
  end)

  it("user config", function()
    local w = setup()
    write_user(w, "wait:\n  interval: 0.1\n")
    local took = timed_wait(w)
    assert.is_true(took < 3, "took " .. took)
  end)

  it("root config beats user config", function()
    local w = setup()
    write_user(w, "wait:\n  interval: 0.1\n")
    write_root(w, "wait:\n  interval: 10\n")
    local took = timed_wait(w)
    assert.is_true(took >= 3.8, "took " .. took)
  end)

  it("--interval beats the root config", function()
    local w = setup()
    write_root(w, "wait:\n  interval: 10\n")
    local took = timed_wait(w, "--interval 0.1")
    assert.is_true(took < 3, "took " .. took)
  end)

  it("is shown with its source", function()
    local w = setup()
    write_user(w, "# comment\nwait:\n  interval: 2\n")
    assert.truthy(ok(w, { "config" }).stdout:find("wait.interval   2.0%s+" .. w.user:gsub("%p", "%%%0") .. ":3\n"))
  end)
end)

describe("state.template", function()
  local function setup()
    local w = world()
    with_channel(w)
    F.write(w.home .. "/user.lua", "return 'from user template\\n'\n")
    mkdir(w.root .. "/templates")
    F.write(w.root .. "/templates/root.lua", "return 'from root template\\n'\n")
    F.write(w.home .. "/flag.lua", "return 'from flag template\\n'\n")
    return w
  end

  it("default: the built-in template", function()
    local w = setup()
    assert.truthy(ok(w, { "state", "dev" }).stdout:find("^# State: dev\n"))
  end)

  it("user config < root config < --template; --json ignores the config", function()
    local w = setup()
    write_user(w, "state:\n  template: ~/user.lua\n")
    assert.equal("from user template\n", ok(w, { "state", "dev" }).stdout)
    write_root(w, "state:\n  template: templates/root.lua\n")
    assert.equal("from root template\n", ok(w, { "state", "dev" }).stdout)
    assert.equal("from flag template\n", ok(w, { "state", "dev", "--template", w.home .. "/flag.lua" }).stdout)
    assert.truthy(ok(w, { "state", "dev", "--json" }).stdout:find('^{\n  "blockers"'))
    -- compact writes state.md with it too
    ok(w, { "compact", "dev", "--no-audit" })
    assert.equal("from root template\n", F.read(w.root .. "/dev/state.md"))
  end)

  it("a configured template that is missing fails like --template does", function()
    local w = setup()
    write_root(w, "state:\n  template: nope.lua\n")
    local r = run(w, { "state", "dev" })
    assert.equal(1, r.code)
    local want = "agent-chat: TEMPLATE_UNREADABLE: cannot read template " .. w.root .. "/nope.lua: "
    assert.equal(want, r.stderr:sub(1, #want))
  end)
end)

describe("hooks: identity.name and channels", function()
  local function setup()
    local w = world()
    with_channel(w, nil, "dev")
    with_channel(w, nil, "ops")
    return w
  end

  local function hook(w, env)
    local r = run(w, { "hook", "session-start" }, env)
    assert.equal(0, r.code)
    assert.equal("", r.stderr)
    return r.stdout
  end

  local function line(name, summary)
    return "[agent-chat] " .. name .. " has unread peer messages: " .. summary .. ". Run /agent-chat to read/reply.\n"
  end

  it("identity: user config < root config < $AGENT_CHAT_NAME", function()
    local w = setup()
    assert.equal("[agent-chat] Inbox hook disabled: identity is unset; set AGENT_CHAT_NAME.\n", hook(w))
    write_user(w, "identity:\n  name: bob\n")
    assert.equal(line("bob", "#dev (1), #ops (1)"), hook(w))
    write_root(w, "identity:\n  name: carol\n")
    assert.equal(line("carol", "#dev (1), #ops (1)"), hook(w))
    assert.equal(line("dave", "#dev (1), #ops (1)"), hook(w, { AGENT_CHAT_NAME = "dave" }))
    -- a blank $AGENT_CHAT_NAME is unset: the config decides
    assert.equal(line("carol", "#dev (1), #ops (1)"), hook(w, { AGENT_CHAT_NAME = "  " }))
    -- the stop hook too
    assert.equal('{"systemMessage":"[agent-chat] Your turn is ending with unread peer messages: #dev (1), '
      .. '#ops (1). Run /agent-chat to read/reply."}\n', run(w, { "hook", "stop" }).stdout)
  end)

  it("channels: user config < root config < $AGENT_CHAT_CHANNELS", function()
    local w = setup()
    local env = { AGENT_CHAT_NAME = "bob" }
    assert.equal(line("bob", "#dev (1), #ops (1)"), hook(w, env))
    write_user(w, "channels: [ops, dev]\n")
    assert.equal(line("bob", "#ops (1), #dev (1)"), hook(w, env))
    write_root(w, "channels:\n  - dev\n")
    assert.equal(line("bob", "#dev (1)"), hook(w, env))
    env.AGENT_CHAT_CHANNELS = " ops , "
    assert.equal(line("bob", "#ops (1)"), hook(w, env))
    -- an $AGENT_CHAT_CHANNELS that lists nothing is unset: the config decides
    env.AGENT_CHAT_CHANNELS = " , "
    assert.equal(line("bob", "#dev (1)"), hook(w, env))
    -- a comma string in the config works like the variable
    write_root(w, "channels: 'ops, nope, dev'\n")
    env.AGENT_CHAT_CHANNELS = nil
    assert.equal(line("bob", "#ops (1), #dev (1)"), hook(w, env))
  end)

  it("root: the user config's root is where the hooks look", function()
    local w = world()
    write_user(w, "root: ~/team\nidentity:\n  name: bob\n")
    with_channel(w, w.home .. "/team", "dev")
    assert.equal(line("bob", "#dev (1)"), hook(w))
  end)

  it("never fail on a broken config: the broken file is skipped", function()
    local w = setup()
    write_user(w, "identity: [unclosed\n")
    assert.equal("[agent-chat] Inbox hook disabled: identity is unset; set AGENT_CHAT_NAME.\n", hook(w))
    assert.equal(line("eve", "#dev (1), #ops (1)"), hook(w, { AGENT_CHAT_NAME = "eve" }))
    write_user(w, "identity:\n  name: bob\n")
    write_root(w, "identity:\n  name: 42\nbogus: 1\n")
    assert.equal(line("bob", "#dev (1), #ops (1)"), hook(w))
    for _, kind in ipairs({ "prompt", "stop" }) do
      local r = run(w, { "hook", kind })
      assert.equal(0, r.code)
      assert.equal("", r.stderr)
    end
  end)
end)

describe("workflows.path (watch --script NAME)", function()
  it("user config < root config; a real file is used as is", function()
    local w = world()
    with_channel(w)
    mkdir(w.home .. "/wf-user")
    mkdir(w.root .. "/wf-root")
    F.write(w.home .. "/wf-user/greet.lua", "return function(m) print('user handler', m.seq) end\n")
    F.write(w.root .. "/wf-root/greet.lua", "return function(m) print('root handler', m.seq) end\n")
    local r = run(w, { "watch", "dev", "--as", "bob", "--script", "greet", "--once" })
    assert.equal(1, r.code)
    write_user(w, "workflows:\n  path: [~/wf-user]\n")
    assert.equal("user handler\t1\n", ok(w, { "watch", "dev", "--as", "bob", "--script", "greet", "--once" }).stdout)
    write_root(w, "workflows:\n  path:\n    - wf-root\n    - /nonexistent\n")
    assert.equal("root handler\t1\n",
      ok(w, { "watch", "dev", "--as", "carol", "--script", "greet.lua", "--once" }).stdout)
    -- an existing file wins over the search, even with a broken config
    F.write(w.home .. "/greet", "return function(m) print('cwd handler', m.seq) end\n")
    write_root(w, "workflows: nope: [\n")
    assert.equal("cwd handler\t1\n",
      ok(w, { "watch", "dev", "--as", "dave", "--script", "greet", "--once" }, nil, { cwd = w.home }).stdout)
  end)
end)

describe("broken config files", function()
  it("malformed YAML: CONFIG_INVALID with file, line and column, exit 1", function()
    local w = world()
    write_user(w, "identity:\n  name: alice\n   bad: indent\n")
    failed_with(run(w, { "channels" }), "agent-chat: CONFIG_INVALID: " .. w.user
      .. ": line 3, column 7: mapping values are not allowed in this context")
  end)

  local CASES = {
    { "idenity:\n  name: a\n", "line 1, column 1: unknown key 'idenity' (known keys: identity, root, channels, "
      .. "wait, state, workflows, hooks, store, etcd)" },
    { "wait:\n  intervall: 3\n", "line 2, column 3: unknown key 'wait.intervall' (known keys: wait.interval)" },
    { "wait:\n  interval: fast\n", "line 2, column 3: wait.interval must be a positive number of seconds "
      .. "(got a string)" },
    { "wait:\n  interval: -1\n", "line 2, column 3: wait.interval must be a positive number of seconds (got -1)" },
    { "wait: 5\n", "line 1, column 1: wait must be a mapping (got a number)" },
    { "identity:\n  name: [a]\n", "line 2, column 3: identity.name must be a non-empty name without control "
      .. "characters (got a list)" },
    { "identity:\n  name: '  '\n", "line 2, column 3: identity.name must be a non-empty name without control "
      .. "characters (got a string)" },
    { "channels: {a: 1}\n", "line 1, column 1: channels must be a list of channel names (got a mapping)" },
    { "channels: [dev, 3]\n", "line 1, column 1: channels item 2 must be a non-empty name without control "
      .. "characters (got a number)" },
    { "state:\n  template: yes\n", nil },       -- "yes" is a string in YAML 1.2: a valid path
    { "state:\n  template: true\n", "line 2, column 3: state.template must be a path (got a boolean)" },
    { "workflows:\n  path: 7\n", "line 2, column 3: workflows.path must be a list of directories (got a number)" },
    { "- a\n- b\n", "line 1, column 1: the config must be a mapping of settings (got a list)" },
    { "just text\n", "line 1, column 1: the config must be a mapping of settings (got a string)" },
    { "wait:\n  interval: 1\nwait:\n  interval: 2\n", "line 3, column 1: duplicate key 'wait'" },
    { "a: \255\n", "line 1, column 4: invalid leading UTF-8 octet (byte 0xff)" },
    { "a: 1\n---\nb: 2\n", "line 2, column 1: the text holds more than one document (use yaml.decode_all)" },
  }
  for _, c in ipairs(CASES) do
    it(c[1]:gsub("\n", "\\n"):gsub("\255", "\\255"), function()
      local w = world()
      write_root(w, c[1])
      local r = run(w, { "config" })
      if c[2] == nil then
        assert.equal(0, r.code, F.describe(r))
      else
        failed_with(r, "agent-chat: CONFIG_INVALID: " .. w.root_cfg .. ": " .. c[2])
      end
    end)
  end

  it("empty files and null values are fine", function()
    local w = world()
    write_user(w, "")
    write_root(w, "# only a comment\nidentity:\nwait:\n  interval:\n")
    local r = ok(w, { "config" })
    assert.truthy(r.stdout:find("identity.name   (unset)", 1, true))
  end)

  it("an unreadable config (a directory) is CONFIG_UNREADABLE", function()
    local w = world()
    mkdir(w.user)
    failed_with(run(w, { "channels" }), "agent-chat: CONFIG_UNREADABLE: " .. w.user .. ": [Errno 21] Is a directory")
  end)

  it("fails only the commands that need a value from the config", function()
    local w = world()
    with_channel(w)
    F.write(w.home .. "/t.lua", "return 'T\\n'\n")
    write_root(w, "wait: [\n")
    local bad = "agent-chat: CONFIG_INVALID: " .. w.root_cfg
      .. ": line 2, column 1: did not find expected node content (while parsing a flow node at line 2, column 1)"
    -- these need nothing from it
    ok(w, { "read", "dev", "--as", "bob" })
    ok(w, { "post", "dev", "--from", "bob", "--title", "t", "--body", "b" })
    ok(w, { "peek", "dev" })
    ok(w, { "roster", "dev" })
    ok(w, { "channels" })
    ok(w, { "task", "list", "dev" })
    ok(w, { "wait", "dev", "--as", "alice", "--timeout", "0", "--interval", "1" })
    ok(w, { "state", "dev", "--json" })
    assert.equal("T\n", ok(w, { "state", "dev", "--template", w.home .. "/t.lua" }).stdout)
    assert.equal(0, run(w, { "hook", "prompt" }).code)
    -- these would take a default from it
    failed_with(run(w, { "wait", "dev", "--as", "alice", "--timeout", "0" }), bad)
    failed_with(run(w, { "state", "dev" }), bad)
    failed_with(run(w, { "config" }), bad)
  end)

  it("a broken user config stops only commands that resolve the root through it", function()
    local w = world()
    with_channel(w)
    write_user(w, "root: [\n")
    local bad = "agent-chat: CONFIG_INVALID: " .. w.user
      .. ": line 2, column 1: did not find expected node content (while parsing a flow node at line 2, column 1)"
    failed_with(run(w, { "channels" }), bad)
    ok(w, { "channels" }, { AGENT_CHAT_ROOT = w.root })
    ok(w, { "--root", w.root, "peek", "dev" })
    failed_with(run(w, { "--root", w.root, "wait", "dev", "--as", "bob", "--timeout", "0" }), bad)
  end)
end)

describe("the store settings (docs/etcd.md)", function()
  it("shows the store with its source and never the etcd password", function()
    local w = world()
    write_user(w, "store: etcd://10.0.0.1:2379/team\netcd:\n  user: agent\n  password: pa55-w0rd-secret\n"
      .. "  ca: ca.crt\n")
    local r = ok(w, { "config" })
    assert.truthy(r.stdout:find("\nstore +etcd://10%.0%.0%.1:2379/team +" .. w.user:gsub("%p", "%%%0") .. ":1\n"),
      F.describe(r))
    assert.truthy(r.stdout:find("\netcd.password +%*%*%* +"), F.describe(r))
    assert.truthy(r.stdout:find("\netcd.ca +" .. (w.user_dir .. "/ca.crt"):gsub("%p", "%%%0")), F.describe(r))
    r = ok(w, { "config", "--json" })
    assert.falsy(r.stdout:find("pa55", 1, true), F.describe(r))
    assert.truthy(r.stdout:find('"value": "***"', 1, true), F.describe(r))
    r = ok(w, { "config" }, { AGENT_CHAT_ETCD_PASSWORD = "env-secret", AGENT_CHAT_STORE = "etcd://h:1/x" })
    assert.falsy(r.stdout:find("secret", 1, true), F.describe(r))
    assert.truthy(r.stdout:find("\nstore +etcd://h:1/x +%$AGENT_CHAT_STORE\n"), F.describe(r))
  end)

  it("never shows a store URL that carries credentials", function()
    local w = world()
    write_user(w, "store: etcd://bob:hunter2@10.0.0.1:2379/team\n")
    local r = run(w, { "channels" })
    assert.equal(1, r.code, F.describe(r))
    assert.falsy(r.stderr:find("hunter2", 1, true), F.describe(r))
    assert.truthy(r.stderr:find("must not carry credentials", 1, true), F.describe(r))
    local w2 = world()
    r = ok(w2, { "config" }, { AGENT_CHAT_STORE = "etcd://bob:hunter2@h:1/x" })
    assert.falsy(r.stdout:find("hunter2", 1, true), F.describe(r))
    r = ok(w2, { "config", "--json" }, { AGENT_CHAT_STORE = "etcd://bob:hunter2@h:1/x" })
    assert.falsy(r.stdout:find("hunter2", 1, true), F.describe(r))
    r = run(w2, { "channels" }, { AGENT_CHAT_STORE = "etcd://bob:hunter2@h:1/x" })
    assert.equal(1, r.code, F.describe(r))
    assert.falsy(r.stderr:find("hunter2", 1, true), F.describe(r))
  end)

  it("refuses a store that is not an etcd URL", function()
    local w = world()
    write_root(w, "store: /some/folder\n")
    failed_with(run(w, { "channels" }), "agent-chat: CONFIG_INVALID: " .. w.root_cfg
      .. ": line 1, column 1: store must be an etcd://HOST:PORT[,HOST:PORT...]/PREFIX URL (got '/some/folder')")
    local r = run(w, { "--store", "/some/folder", "channels" })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: STORE_INVALID: "), F.describe(r))
  end)

  it("a broken config file stops a command only when it names a store", function()
    local w = world()
    with_channel(w)
    write_root(w, "store: [\n")
    local r = run(w, { "--root", w.root, "peek", "dev" })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: CONFIG_INVALID: "), F.describe(r))
    write_root(w, "wait: [\n")
    ok(w, { "--root", w.root, "peek", "dev" })
  end)
end)
