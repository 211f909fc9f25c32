-- The smaller things of issue 13, item 8 (the bash completion's are in
-- install_spec, the demo's in demo_spec, the plugin's in plugin_spec):
-- --version; inbox --channels "" meaning every channel; an import of a
-- folder whose every line is malformed; control characters in titles on a
-- terminal; `team` without the `system` actor.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

-- Run agent-chat ARGV with its stdout on a terminal (script(1) gives it a
-- pty); returns the output with the pty's \r\n turned back into \n, or nil
-- and why when script(1) is missing.
local function on_terminal(root, argv)
  if not os.execute("command -v script >/dev/null 2>&1") then
    return nil, "script(1) is not installed"
  end
  local words = { F.sh(F.bin), "--root", F.sh(root) }
  for _, w in ipairs(argv) do
    words[#words + 1] = F.sh(w)
  end
  local dir = F.tmpdir()
  os.execute("env -u AGENT_CHAT_ROOT HOME=" .. F.sh(F.home) .. " LC_ALL=C AGENT_CHAT_TEST_FSYNC=0 script -qec "
    .. F.sh(table.concat(words, " ")) .. " /dev/null </dev/null >" .. F.sh(dir .. "/out") .. " 2>&1")
  return (F.read(dir .. "/out"):gsub("\r\n", "\n"))
end

describe("--version", function()
  it("prints the version and exits 0, also after --root", function()
    for _, argv in ipairs({ { "--version" }, { "--root", "/nonexistent", "--version" } }) do
      local r = F.run(argv)
      assert.equal(0, r.code, F.describe(r))
      assert.truthy(r.stdout:match("^agent%-chat %d+%.%d+%.%d+\n$"), r.stdout)
      assert.equal("", r.stderr)
    end
    assert.truthy(F.run({ "-h" }).stdout:find("--version", 1, true))
  end)
end)

describe("inbox --channels", function()
  it("empty (or only commas and blanks) means every channel, as $AGENT_CHAT_CHANNELS does for the hooks", function()
    local root = F.new_root()
    F.init(root, "a")
    F.init(root, "b")
    F.post(root, "a", "alice", "in a", "x")
    F.post(root, "b", "alice", "in b", "y")
    for _, list in ipairs({ "", " , ", "," }) do
      local r = F.ok(root, { "inbox", "--as", "bob", "--peek", "--channels", list })
      assert.truthy(r.stdout:find("\n#a\n", 1, true) and r.stdout:find("\n#b\n", 1, true), F.describe(r))
    end
    local r = F.ok(root, { "inbox", "--as", "bob", "--peek", "--channels", "b" })
    assert.is_nil(r.stdout:find("\n#a\n", 1, true))
  end)
end)

describe("import of a folder whose every line is malformed", function()
  local function bus()
    local dir = F.tmpdir() .. "/bus"
    os.execute("mkdir -p " .. F.sh(dir .. "/inbox"))
    F.write(dir .. "/ledger.jsonl", "not json\n{bad\n")
    F.write(dir .. "/inbox/bob.jsonl", "nope\n")
    return dir
  end

  it("fails, creates nothing (not even the root or the channel) and says why", function()
    local root, parent = F.new_root()
    local before = F.snapshot(parent)
    local r = F.run({ "--root", root, "import", "bus", bus(), "--into", "dev" })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("\nagent%-chat: IMPORT_MALFORMED_LINES: every line in '.-' is malformed %(3 "
      .. "malformed lines%): nothing imported\n$"), r.stderr)
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  it("into an existing channel too: nothing posted", function()
    local root = F.new_root()
    F.init(root, "dev")
    local before = F.snapshot(root)
    local r = F.run({ "--root", root, "import", "bus", bus(), "--into", "dev" })
    assert.equal(1, r.code, F.describe(r))
    assert.same({}, F.diff(before, F.snapshot(root)))
  end)

  it("a folder with one good line still imports it, warning about the rest", function()
    local dir = bus()
    F.write(dir .. "/ledger.jsonl", "not json\n" .. '{"id": "m-1", "ts": "2026-11-30T10:00:00Z", '
      .. '"from": "alice", "to": "bob", "message": "hi"}\n')
    local root = F.new_root()
    local r = F.run({ "--root", root, "import", "bus", dir, "--into", "dev" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("imported 1 messages", 1, true), F.describe(r))
  end)
end)

describe("control characters in titles", function()
  local root
  local TITLE = "\27[31mred\7 \194\155x"

  setup(function()
    root = F.new_root()
    F.init(root, "c")
    F.post(root, "c", "alice", TITLE, "body")
  end)

  it("are shown escaped on a terminal", function()
    local out, why = on_terminal(root, { "channels" })
    if not out then
      pending(why)
      return
    end
    assert.truthy(out:find("last: #1 alice: \\x1b[31mred\\x07 \\u009bx\n", 1, true), F.show(out))
    out = on_terminal(root, { "read", "c", "--as", "bob", "--peek" })
    assert.truthy(out:find("\ntitle: \\x1b[31mred\\x07 \\u009bx\n", 1, true), F.show(out))
    assert.is_nil(out:find("\27", 1, true))
  end)

  it("stay byte for byte in pipes and files", function()
    local r = F.ok(root, { "channels" })
    assert.truthy(r.stdout:find("last: #1 alice: " .. TITLE .. "\n", 1, true), F.show(r.stdout))
    r = F.ok(root, { "read", "c", "--as", "bob", "--peek" })
    assert.truthy(r.stdout:find("\ntitle: " .. TITLE .. "\n", 1, true), F.show(r.stdout))
  end)
end)

describe("team", function()
  it("leaves out `system`, the actor of state --write and compact without --as", function()
    local root = F.new_root()
    F.init(root, "c", "--members", "alice")
    F.post(root, "c", "bob", "hi", "x")
    F.ok(root, { "compact", "c" })
    F.ok(root, { "state", "c", "--write" })
    local r = F.ok(root, { "team", "c" })
    assert.is_nil(r.stdout:find("\nsystem ", 1, true), r.stdout)
    assert.truthy(r.stdout:find("\nalice ", 1, true) and r.stdout:find("\nbob ", 1, true), r.stdout)
    -- a `system` that posts like anyone else is a teammate
    F.post(root, "c", "system", "maintenance", "tonight")
    r = F.ok(root, { "team", "c" })
    assert.truthy(r.stdout:find("\nsystem ", 1, true), r.stdout)
  end)
end)

describe("LEASE_MUTATION_REQUIRED", function()
  it("names the command that does what was refused", function()
    local root = F.new_root()
    F.init(root, "c")
    F.ok(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "build" })
    F.ok(root, { "task", "claim", "c", "t1", "--as", "alice" })
    local prefix = "agent-chat: LEASE_MUTATION_REQUIRED: task t1 must be changed through its lease operation; "
    for _, case in ipairs({
      { { "task", "update", "c", "t1", "--as", "alice", "--status", "done" },
        "use: agent-chat task done c t1 --as alice" },
      { { "task", "update", "c", "t1", "--as", "alice", "--status", "open" },
        "use: agent-chat task release c t1 --as alice" },
      { { "task", "block", "c", "t1", "--as", "alice" },
        "release the lease first (agent-chat task release c t1 --as alice), then block it" },
      { { "task", "update", "c", "t1", "--as", "alice", "--owner", "bob" },
        "release the lease first (agent-chat task release c t1 --as alice), then the new owner claims it" },
      { { "task", "update", "c", "t1", "--as", "alice", "--status", "cancelled" },
        "release the lease first (agent-chat task release c t1 --as alice), then update it" },
    }) do
      local r = F.ac(root, case[1])
      assert.equal(2, r.code, F.describe(r))
      assert.equal(prefix .. case[2] .. "\n", r.stderr)
    end
    -- and the command it names works
    F.ok(root, { "task", "done", "c", "t1", "--as", "alice" })
  end)
end)
