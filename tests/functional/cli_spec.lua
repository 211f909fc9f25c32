-- Functional specs for the command line as a whole (docs/format.md 2, 2.5): usage
-- errors, help, the one-line error format and root selection. Every run
-- here also checks that stderr never shows a traceback.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

--- Run the binary and assert it did not crash.
local ac = F.run_checked

describe("agent-chat usage errors", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
  end)

  -- { description, argv after "--root R" (nil: no --root at all) }
  local CASES = {
    { "no command", {} },
    { "an unknown command", { "frobnicate" } },
    { "post without --from", { "post", "c", "--title", "t", "--body", "x" } },
    { "post without --title", { "post", "c", "--from", "a", "--body", "x" } },
    { "post without a channel", { "post", "--from", "a", "--title", "t", "--body", "x" } },
    { "post with an unknown flag", { "post", "c", "--from", "a", "--title", "t", "--body", "x", "--bogus" } },
    { "post --from without its value", { "post", "c", "--title", "t", "--from" } },
    { "read without --as", { "read", "c" } },
    { "wait without --as", { "wait", "c", "--timeout", "0" } },
    { "claim without the task", { "claim", "c", "--as", "a" } },
    { "init without a channel", { "init" } },
    { "roster without a channel", { "roster" } },
    { "peek without a channel", { "peek" } },
    { "channels with an extra argument", { "channels", "extra" } },
    { "--reply x", { "post", "c", "--from", "a", "--title", "t", "--body", "x", "--reply", "x" } },
    { "--reply 1.5", { "post", "c", "--from", "a", "--title", "t", "--body", "x", "--reply", "1.5" } },
    { "--reply ''", { "post", "c", "--from", "a", "--title", "t", "--body", "x", "--reply", "" } },
    { "-n x", { "peek", "c", "-n", "x" } },
    { "-n 1.5", { "peek", "c", "-n", "1.5" } },
    { "-n ''", { "peek", "c", "-n", "" } },
    { "--timeout abc", { "wait", "c", "--as", "b", "--timeout", "abc" } },
    { "--timeout ''", { "wait", "c", "--as", "b", "--timeout", "" } },
    { "--timeout 0x10", { "wait", "c", "--as", "b", "--timeout", "0x10" } },
    { "--interval x", { "wait", "c", "--as", "b", "--timeout", "0", "--interval", "x" } },
    { "--root after the subcommand (read)", { "read", "c", "--as", "a", "--root", "@OTHER" } },
    { "--root after the subcommand (channels)", { "channels", "--root", "@OTHER" } },
    { "--root after the subcommand (init)", { "init", "d", "--root", "@OTHER" } },
    { "--root without its value", nil, { "--root" } },
    { "run without a script", { "run" } },
  }

  local function argv_of(case, other)
    if case[3] then
      return case[3]
    end
    local argv = { "--root", root }
    for _, w in ipairs(case[2]) do
      argv[#argv + 1] = (w == "@OTHER") and other or w
    end
    return argv
  end

  for _, case in ipairs(CASES) do
    it("exits 2 without output or changes for " .. case[1], function()
      local other = F.new_root()
      local before = F.snapshot(root)
      local r = ac(argv_of(case, other))
      assert.equal(2, r.code, F.describe(r))
      assert.equal("", r.stdout, F.describe(r))
      assert.not_equal("", r.stderr, F.describe(r))
      assert.same({}, F.diff(before, F.snapshot(root)))
      assert.same({}, F.snapshot(other))
    end)
  end

  -- docs/format.md 2.5: every failure is one "agent-chat: ..." line; usage errors
  -- carry argparse's message in "agent-chat: USAGE: <cmd>: <message> (see ...)".
  it("prints every usage error as exactly one stderr line starting 'agent-chat: '", function()
    local bad = {}
    for _, case in ipairs(CASES) do
      local r = ac(argv_of(case, F.new_root()))
      local why = F.error_line(r.stderr)
      if why then
        bad[#bad + 1] = case[1] .. ": " .. why
      end
    end
    assert.same({}, bad)
  end)

  it("names the problem in the usage error text", function()
    local r = ac({ "--root", root, "post", "c", "--title", "t", "--body", "x" })
    assert.truthy(r.stderr:find("--from", 1, true), F.describe(r))
    r = ac({ "--root", root, "peek", "c", "-n", "x" })
    assert.truthy(r.stderr:find("invalid int value: 'x'", 1, true), F.describe(r))
    r = ac({ "--root", root, "wait", "c", "--as", "b", "--timeout", "abc" })
    assert.truthy(r.stderr:find("invalid float value: 'abc'", 1, true), F.describe(r))
    r = ac({ "--root", root, "frobnicate" })
    assert.truthy(r.stderr:find("frobnicate", 1, true), F.describe(r))
  end)
end)

describe("agent-chat numeric flags", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
    F.post(root, "c", "alice", "one", "1")
  end)

  it("accepts what Python's int() accepts for -n (' 3', '1_0', '+2')", function()
    for _, n in ipairs({ " 3", "1_0", "+2" }) do
      local r = ac({ "--root", root, "peek", "c", "-n", n })
      assert.equal(0, r.code, F.describe(r))
      assert.same({ 1 }, F.seqs(r.stdout))
    end
  end)

  -- -n and --reply are Python ints (arbitrary precision): -n saturates,
  -- --reply keeps the decimal text.
  it("accepts an -n beyond 64 bits like Python's int()", function()
    local r = ac({ "--root", root, "peek", "c", "-n", "99999999999999999999" })
    assert.equal(0, r.code, F.describe(r))
    assert.same({ 1 }, F.seqs(r.stdout))
  end)

  it("accepts a negative --reply and writes it as is", function()
    local r = ac({ "--root", root, "post", "c", "--from", "a", "--title", "t", "--body", "x",
                   "--reply", "-5" })
    assert.equal(0, r.code, F.describe(r))
    local file = r.stdout:match("^posted #%d+ %-> c/(%S+)\n$")
    assert.truthy(file, F.describe(r))
    assert.truthy(F.read(root .. "/c/" .. file):find("\nreply_to: -5\n", 1, true))
  end)
end)

describe("agent-chat help", function()
  local function commands()
    local r = ac({ "-h" })
    local list = {}
    local in_commands = false
    for _, line in ipairs(F.lines(r.stdout)) do
      if line:match("^commands:") then
        in_commands = true
      elseif in_commands and line:match("^%S") then
        in_commands = false
      elseif in_commands then
        local name = line:match("^    (%l[%w-]*)  ")
        if name then
          list[#list + 1] = name
        end
      end
    end
    return list
  end

  it("prints usage on stdout and exits 0 for -h and --help", function()
    for _, flag in ipairs({ "-h", "--help" }) do
      local r = ac({ flag })
      assert.equal(0, r.code, F.describe(r))
      assert.equal("", r.stderr, F.describe(r))
      assert.truthy(r.stdout:match("^usage: agent%-chat "), F.describe(r))
      assert.truthy(r.stdout:find("--root", 1, true), F.describe(r))
    end
    assert.equal(ac({ "-h" }).stdout, ac({ "--help" }).stdout)
  end)

  it("accepts -h after --root", function()
    local root = F.new_root()
    local r = ac({ "--root", root, "--help" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:match("^usage: agent%-chat "), F.describe(r))
    assert.same({}, F.snapshot(root))
  end)

  it("lists every message command and run", function()
    local list = commands()
    local have = {}
    for _, c in ipairs(list) do
      have[c] = true
    end
    for _, c in ipairs({ "init", "channels", "roster", "post", "read", "wait", "peek", "claim", "run" }) do
      assert.is_true(have[c] == true, "command missing from help: " .. c)
    end
  end)

  it("gives -h and --help for every command (usage on stdout, exit 0)", function()
    local list = commands()
    assert.is_true(#list >= 9)
    for _, c in ipairs(list) do
      for _, flag in ipairs({ "-h", "--help" }) do
        local r = ac({ c, flag })
        assert.equal(0, r.code, F.describe(r))
        assert.equal("", r.stderr, F.describe(r))
        assert.truthy(r.stdout:find("^usage: agent%-chat " .. c:gsub("%-", "%%-")), F.describe(r))
      end
    end
  end)

  it("lets -h win over missing required arguments", function()
    local r = ac({ "post", "-h" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("--from", 1, true), F.describe(r))
    r = ac({ "wait", "--help", "--timeout", "nonsense" })
    assert.equal(0, r.code, F.describe(r))
  end)
end)

describe("agent-chat error lines", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
  end)

  local function expect_error(argv, code, text, opts)
    local r = ac(argv, opts)
    assert.equal(code, r.code, F.describe(r))
    assert.equal("", r.stdout, F.describe(r))
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
    if text then
      assert.equal("agent-chat: " .. text .. "\n", r.stderr)
    end
    return r
  end

  it("reports a missing channel for every message command", function()
    local msg = "channel 'nope' not found under " .. root .. " (run: init nope)"
    expect_error({ "--root", root, "post", "nope", "--from", "a", "--title", "t", "--body", "x" }, 1, msg)
    expect_error({ "--root", root, "read", "nope", "--as", "a" }, 1, msg)
    expect_error({ "--root", root, "peek", "nope" }, 1, msg)
    expect_error({ "--root", root, "roster", "nope" }, 1, msg)
    expect_error({ "--root", root, "wait", "nope", "--as", "a", "--timeout", "1" }, 1, msg)
    expect_error({ "--root", root, "claim", "nope", "task-1.md", "--as", "a" }, 1, msg)
  end)

  it("reports an existing channel", function()
    expect_error({ "--root", root, "init", "c" }, 1, "channel 'c' already exists")
  end)

  it("reports invalid channel names", function()
    expect_error({ "--root", root, "init", ".." }, 1, "invalid channel name (path traversal blocked): '..'")
    expect_error({ "--root", root, "init", "." }, 1, "invalid channel name (path traversal blocked): '.'")
    expect_error({ "--root", root, "read", "_x", "--as", "a" }, 1,
      "invalid channel name (reserved prefix blocked): '_x'")
  end)

  it("reports an empty body", function()
    expect_error({ "--root", root, "post", "c", "--from", "a", "--title", "t" }, 1,
      "empty body (pass --body, --body-file, or pipe via stdin)", { stdin = " \n\t\n" })
  end)

  it("reports an unreadable body file with Python's OSError text", function()
    local cwd = F.tmpdir()
    expect_error({ "--root", root, "post", "c", "--from", "a", "--title", "t", "--body-file", "missing.md" },
      1, "could not read body file: [Errno 2] No such file or directory: 'missing.md'", { cwd = cwd })
  end)

  it("reports a lost legacy claim with exit 3", function()
    expect_error({ "--root", root, "claim", "c", "task-1.md", "--as", "a" }, 3,
      "task 'task-1.md' already claimed or missing (lost the race)")
  end)

  it("reports an invalid legacy task name", function()
    expect_error({ "--root", root, "claim", "c", "notes.md", "--as", "a" }, 1,
      "invalid task name (expected task-<id>.md marker): 'notes.md'")
  end)

  -- The Python tool's marker names: task-[A-Za-z0-9][A-Za-z0-9_-]*.md
  it("takes only task-<letters, digits, _ and ->.md as a legacy marker name", function()
    for _, name in ipairs({ "task-a b.md", "task-1.MD", "task-1.md.bak", "task-1.txt", "task-\195\188.md",
                            "task-_x.md", "task--x.md", "task-a.b.md", "task-.md", "Task-1.md" }) do
      expect_error({ "--root", root, "claim", "c", name, "--as", "a" }, 1,
        "invalid task name (expected task-<id>.md marker): '" .. name .. "'")
    end
    F.write(root .. "/c/task-x_Y-9.md", "marker\n")
    local r = F.run({ "--root", root, "claim", "c", "task-x_Y-9.md", "--as", "a" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("claimed task-x_Y-9.md -> task-x_Y-9.CLAIMED-a.md\n", r.stdout)
  end)

  it("reports an unparsable _meta.json", function()
    F.init(root, "broken")
    F.write(root .. "/broken/_meta.json", "{not json")
    expect_error({ "--root", root, "roster", "broken" }, 1,
      "could not read or parse _meta.json for channel 'broken'")
  end)

  -- docs/format.md 5.5: a _meta.json that is valid JSON but not an object (an
  -- array such as "[1, 2, 3]" or "[]") is an error for roster, while
  -- channels still lists the channel.
  it("reports a _meta.json that is valid JSON but not an object", function()
    F.init(root, "arr")
    F.write(root .. "/arr/_meta.json", "[1, 2, 3]")
    expect_error({ "--root", root, "roster", "arr" }, 1)
    local r = ac({ "--root", root, "channels" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("\narr ", 1, true), F.describe(r))
  end)

  it("prints the wait timeout without the agent-chat: prefix", function()
    local r = ac({ "--root", root, "wait", "c", "--as", "bob", "--timeout", "0" })
    assert.equal(2, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.equal("(timeout after 0.0s: no new messages for bob in 'c')\n", r.stderr)
  end)
end)

describe("agent-chat root selection", function()
  local home, env_root, flag_root

  before_each(function()
    home = F.tmpdir()
    env_root = F.tmpdir() .. "/env-root"
    flag_root = F.tmpdir() .. "/flag-root"
  end)

  local function chans(r)
    local names = {}
    for _, line in ipairs(F.lines(r.stdout)) do
      local name = line:match("^(%S+)%s+%d+%s")
      if name then
        names[#names + 1] = name
      end
    end
    return names
  end

  it("uses --root over AGENT_CHAT_ROOT", function()
    local r = ac({ "--root", flag_root, "init", "x" }, { env = { HOME = home, AGENT_CHAT_ROOT = env_root } })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("created channel 'x' at " .. flag_root .. "/x  members=(open)\n", r.stdout)
    assert.truthy(F.read(flag_root .. "/x/_meta.json"))
    assert.same({}, F.snapshot(env_root))
    assert.same({}, F.snapshot(home))
  end)

  it("uses AGENT_CHAT_ROOT over ~/agent-chat", function()
    local r = ac({ "init", "y" }, { env = { HOME = home, AGENT_CHAT_ROOT = env_root } })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("created channel 'y' at " .. env_root .. "/y  members=(open)\n", r.stdout)
    assert.same({}, F.snapshot(home))
    r = ac({ "channels" }, { env = { HOME = home, AGENT_CHAT_ROOT = env_root } })
    assert.same({ "y" }, chans(r))
  end)

  it("falls back to ~/agent-chat", function()
    local r = ac({ "init", "z" }, { env = { HOME = home } })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("created channel 'z' at " .. home .. "/agent-chat/z  members=(open)\n", r.stdout)
    assert.truthy(F.read(home .. "/agent-chat/z/_meta.json"))
  end)

  it("treats an empty AGENT_CHAT_ROOT as unset", function()
    local r = ac({ "init", "e" }, { env = { HOME = home, AGENT_CHAT_ROOT = "" } })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("created channel 'e' at " .. home .. "/agent-chat/e  members=(open)\n", r.stdout)
    r = ac({ "channels" }, { env = { HOME = home, AGENT_CHAT_ROOT = "" } })
    assert.same({ "e" }, chans(r))
  end)

  it("applies the same precedence to reads", function()
    ac({ "--root", flag_root, "init", "f" })
    ac({ "init", "g" }, { env = { HOME = home, AGENT_CHAT_ROOT = env_root } })
    ac({ "init", "h" }, { env = { HOME = home } })
    local env = { HOME = home, AGENT_CHAT_ROOT = env_root }
    assert.same({ "f" }, chans(ac({ "--root", flag_root, "channels" }, { env = env })))
    assert.same({ "g" }, chans(ac({ "channels" }, { env = env })))
    assert.same({ "h" }, chans(ac({ "channels" }, { env = { HOME = home } })))
  end)

  it("accepts --root=DIR", function()
    local r = ac({ "--root=" .. flag_root, "init", "q" }, { env = { HOME = home } })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(F.read(flag_root .. "/q/_meta.json"))
  end)

  it("rejects --root after the subcommand and touches no root", function()
    local r = ac({ "init", "w", "--root", flag_root }, { env = { HOME = home, AGENT_CHAT_ROOT = env_root } })
    assert.equal(2, r.code, F.describe(r))
    assert.same({}, F.snapshot(flag_root))
    assert.same({}, F.snapshot(env_root))
    assert.same({}, F.snapshot(home))
  end)

  it("takes a relative root from the working directory and prints it as given", function()
    local cwd = F.tmpdir()
    local r = ac({ "--root", "relative-root", "init", "rel" }, { cwd = cwd, env = { HOME = home } })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("created channel 'rel' at relative-root/rel  members=(open)\n", r.stdout)
    assert.truthy(F.read(cwd .. "/relative-root/rel/_meta.json"))
  end)

  it("shows no channels for a root that does not exist, without creating it", function()
    local r = ac({ "--root", flag_root, "channels" }, { env = { HOME = home } })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("(no channels yet under " .. flag_root .. ")\n", r.stdout)
    local p = io.popen("test -e " .. F.sh(flag_root) .. " && echo yes || echo no")
    local exists = p:read("l")
    p:close()
    assert.equal("no", exists)
  end)

  it("creates a missing root with its parents on init", function()
    local deep = flag_root .. "/a/b"
    local r = ac({ "--root", deep, "init", "d" }, { env = { HOME = home } })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(F.read(deep .. "/d/_meta.json"))
  end)
end)
