-- Cursors (issue 13, item 1; docs/format.md "Cursors"): distinct names never
-- share a cursor, the Python tool's `.cursors/<slug>.txt` keeps its meaning
-- for names that are their own slug, a read never moves a cursor another
-- reader moved back, and an empty or blank --as / --from is refused.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local function sha256_hex(s)
  local dir = F.tmpdir()
  F.write(dir .. "/in", s)
  local p = io.popen("sha256sum " .. F.sh(dir .. "/in"))
  local out = p:read("a")
  p:close()
  return out:match("^(%x+)")
end

local function cursors(root, ch)
  local names = H.ls(root .. "/" .. ch .. "/.cursors")
  table.sort(names)
  return names
end

describe("names that slug alike", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
  end)

  -- The reproduction of the issue: every name without ASCII letters or
  -- digits slugs to "msg", and the read of one swallowed the other's.
  it("a read as 日本 leaves 中文's message unread", function()
    F.post(root, "c", "alice", "for you", "hello", "--to", "中文")
    local r = F.ok(root, { "read", "c", "--as", "日本" })
    assert.equal("(no new messages for 日本 in 'c'; cursor at #0)\n", r.stdout)
    r = F.ok(root, { "read", "c", "--as", "中文" })
    assert.same({ 1 }, F.seqs(r.stdout))
  end)

  it("Bob and bob each see every message addressed to them, whoever reads first", function()
    F.post(root, "c", "alice", "to Bob", "1", "--to", "Bob")
    F.post(root, "c", "alice", "to bob", "2", "--to", "bob")
    F.post(root, "c", "alice", "to all", "3")
    assert.same({ 2, 3 }, F.seqs(F.ok(root, { "read", "c", "--as", "bob" }).stdout))
    F.post(root, "c", "alice", "to both", "4", "--to", "Bob,bob")
    assert.same({ 1, 3, 4 }, F.seqs(F.ok(root, { "read", "c", "--as", "Bob" }).stdout))
    assert.same({ 4 }, F.seqs(F.ok(root, { "read", "c", "--as", "bob" }).stdout))
    assert.same({ 3 }, F.seqs(F.ok(root, { "read", "c", "--as", "BOB" }).stdout))
    -- wait and the hooks' counts use the same cursors
    local r = F.ac(root, { "wait", "c", "--as", "Bob", "--timeout", "0" })
    assert.equal(2, r.code, F.describe(r))
  end)

  it("Claude_1, claude-1 and CLAUDE-1 each keep their own cursor", function()
    F.post(root, "c", "alice", "one", "1")
    assert.same({ 1 }, F.seqs(F.ok(root, { "read", "c", "--as", "Claude_1" }).stdout))
    F.post(root, "c", "alice", "two", "2")
    assert.same({ 1, 2 }, F.seqs(F.ok(root, { "read", "c", "--as", "claude-1" }).stdout))
    assert.same({ 2 }, F.seqs(F.ok(root, { "read", "c", "--as", "Claude_1" }).stdout))
    local r = F.ok(root, { "read", "c", "--as", "CLAUDE-1", "--peek" })
    assert.same({ 1, 2 }, F.seqs(r.stdout))
  end)
end)

describe("the cursor files", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
    F.post(root, "c", "alice", "one", "1")
    F.post(root, "c", "bob", "two", "2")
  end)

  it("a name that is its own slug keeps .cursors/<name>.txt, the file the Python tool reads and writes", function()
    F.ok(root, { "read", "c", "--as", "carol" })
    F.ok(root, { "read", "c", "--as", "claude-1" })
    assert.same({ "carol.txt", "claude-1.txt" }, cursors(root, "c"))
    assert.equal("2", F.read(root .. "/c/.cursors/carol.txt"))
    -- The Python tool moves the cursor (in place, maybe with whitespace):
    -- ours reads that value and moves the same file.
    F.write(root .. "/c/.cursors/carol.txt", " 1\n")
    assert.same({ 2 }, F.seqs(F.ok(root, { "read", "c", "--as", "carol" }).stdout))
    assert.equal("2", F.read(root .. "/c/.cursors/carol.txt"))
    F.post(root, "c", "alice", "three", "3")
    F.ok(root, { "read", "c", "--as", "carol" })
    assert.equal("3", F.read(root .. "/c/.cursors/carol.txt"))
    assert.same({ "carol.txt", "claude-1.txt" }, cursors(root, "c"))
  end)

  it("any other name has <slug>.<first 32 hex digits of the SHA-256 of the name>.txt beside it", function()
    for _, name in ipairs({ "Bob", "中文", "a.b", "bob " }) do
      F.ok(root, { "read", "c", "--as", name })
    end
    F.ok(root, { "read", "c", "--as", "bob" })
    local want = {
      "a-b." .. sha256_hex("a.b"):sub(1, 32) .. ".txt",
      "bob." .. sha256_hex("Bob"):sub(1, 32) .. ".txt",
      "bob." .. sha256_hex("bob "):sub(1, 32) .. ".txt",
      "bob.txt",
      "msg." .. sha256_hex("中文"):sub(1, 32) .. ".txt",
    }
    table.sort(want)
    assert.same(want, cursors(root, "c"))
    assert.equal("2", F.read(root .. "/c/.cursors/bob." .. sha256_hex("Bob"):sub(1, 32) .. ".txt"))
  end)

  it("a cursor past every message is still rewritten by a read (the Python tool's rule)", function()
    os.execute("mkdir -p " .. F.sh(root .. "/c/.cursors"))
    F.write(root .. "/c/.cursors/dave.txt", "99")
    local r = F.ok(root, { "read", "c", "--as", "dave" })
    assert.equal("(no new messages for dave in 'c'; cursor at #99)\n", r.stdout)
    assert.equal("2", F.read(root .. "/c/.cursors/dave.txt"))
  end)

  it("a planted symlink is never followed: it reads as 0 and the read replaces the link", function()
    local outside = F.tmpdir()
    F.write(outside .. "/cursor.txt", "1")
    os.execute("mkdir -p " .. F.sh(root .. "/c/.cursors") .. " && ln -s " .. F.sh(outside .. "/cursor.txt")
      .. " " .. F.sh(root .. "/c/.cursors/erin.txt"))
    assert.same({ 1, 2 }, F.seqs(F.ok(root, { "read", "c", "--as", "erin" }).stdout))
    assert.equal("1", F.read(outside .. "/cursor.txt"))
    assert.equal("2", F.read(root .. "/c/.cursors/erin.txt"))
  end)
end)

describe("a commit through the Lua API", function()
  it("never moves a cursor back past what another reader moved it to", function()
    local root = F.new_root()
    F.init(root, "c")
    for i = 1, 3 do
      F.post(root, "c", "alice", "m" .. i, "x")
    end
    local dir = F.tmpdir()
    F.write(dir .. "/s.lua", [[
      local ac = require "agentchat"
      local ch = assert(ac.open():channel("c"))
      local batch = assert(ch:fetch{ as = "bob" })   -- scanned at cursor 0: up to #3
      assert(ch:set_cursor("bob", 7))               -- meanwhile another reader (or a rewind)
      assert(ch:commit(batch))
      print(ch:cursor("bob"))
      assert(ch:set_cursor("bob", 1))
      assert(ch:advance_cursor("bob", 2))
      assert(ch:advance_cursor("bob", 1))
      print(ch:cursor("bob"))
    ]])
    local r = F.run({ "run", dir .. "/s.lua" }, { root = root })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("7\n2\n", r.stdout)
  end)
end)

describe("an empty or blank agent name", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
    F.post(root, "c", "alice", "one", "1")
  end)

  for _, argv in ipairs({
    { "read", "c", "--as", "" },
    { "read", "c", "--as", "  " },
    { "wait", "c", "--as", "", "--timeout", "0" },
    { "inbox", "--as", "\t" },
    { "post", "c", "--from", "", "--title", "t", "--body", "b" },
    { "post", "c", "--from", " ", "--title", "t", "--body", "b" },
    { "post", "c", "--from=\n", "--title", "t", "--body", "b" },
  }) do
    it("is refused: " .. F.show(table.concat(argv, " ")), function()
      local before = F.snapshot(root)
      local r = F.ac(root, argv)
      assert.equal(2, r.code, F.describe(r))
      assert.is_nil(F.error_line(r.stderr), F.describe(r))
      assert.truthy(r.stderr:find("^agent%-chat: USAGE: %-%-%a+ must name an agent.*AGENT_CHAT_NAME"), r.stderr)
      assert.equal("", r.stdout)
      assert.same({}, F.diff(before, F.snapshot(root)))
    end)
  end
end)
