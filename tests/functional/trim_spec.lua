-- `agent-chat trim CHANNEL --through N --archive DIR` on a folder root
-- (docs/etcd.md "Retention"; etcd_trim_spec.lua runs the same on etcd):
-- archive first, then the messages 1..N and their acks go, the seq counter
-- stays, the newest message always stays, and a refusal or a failure
-- before the removal changes nothing.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local function channel(n, acks)
  local root = F.new_root()
  F.ok(root, { "init", "dev", "--members", "alice,bob" })
  for i = 1, n do
    F.ok(root, { "post", "dev", "--from", "alice", "--to", "bob", "--title", "m" .. i, "--body", "b" .. i })
  end
  for _, seq in ipairs(acks or {}) do
    F.ok(root, { "ack", "dev", tostring(seq), "--as", "bob" })
  end
  return root
end

local function exists(path)
  return os.execute("test -e " .. H.sh(path)) == true
end

local function messages(root)
  local names = {}
  for name in pairs(F.snapshot(root .. "/dev")) do
    if name:match("^%d+%-.*%.md$") then
      names[#names + 1] = name
    end
  end
  table.sort(names)
  return names
end

describe("trim", function()
  it("archives the channel, then removes the messages through N and their acks", function()
    local root = channel(6, { 2, 5, 6 })
    local archive = F.tmpdir() .. "/archive"
    local before = F.snapshot(root .. "/dev")
    local r = F.ac(root, { "trim", "dev", "--through", "5", "--archive", archive })
    assert.equal(0, r.code, F.show(r.stderr))
    assert.equal("", r.stderr)
    local dir = F.absolute(archive) .. "/dev"
    assert.equal("exported 'dev' to " .. dir .. ": 6 messages, 0 records, 3 acks, 0 cursors\n"
      .. "trimmed 'dev' through #5: 5 messages, 2 acks removed; #6 and later stay\n", r.stdout)
    -- the archive holds every message and ack byte for byte, and is a root
    local archived = F.snapshot(dir)
    for path, v in pairs(before) do
      if path:match("%.md$") or path:match("^%.acks/") then
        assert.equal(v, archived[path], path)
      end
    end
    assert.equal(0, F.ac(F.absolute(archive), { "fsck" }).code)
    -- what is left: the newest message and its ack
    assert.same({ "0006-alice-m6.md" }, messages(root))
    assert.falsy(exists(root .. "/dev/.acks/2"))
    assert.falsy(exists(root .. "/dev/.acks/5"))
    assert.truthy(exists(root .. "/dev/.acks/6/bob.json"))
    -- no seq comes back: the next post is #7, readers see what is left
    assert.equal("posted #7 -> dev/0007-alice-later.md\n",
      F.ok(root, { "post", "dev", "--from", "alice", "--title", "later", "--body", "x" }).stdout)
    local read = F.ok(root, { "read", "dev", "--as", "bob" }).stdout
    assert.truthy(read:find("seq: 6\n", 1, true), read)
    assert.falsy(read:find("seq: 5\n", 1, true), read)
    assert.equal(0, F.ac(root, { "fsck" }).code)
  end)

  it("keeps the newest message: a trim through it or beyond is refused before anything is written", function()
    local root = channel(3)
    local archive = F.tmpdir() .. "/archive"
    local before = F.snapshot(root)
    for _, n in ipairs({ "3", "9" }) do
      local r = F.ac(root, { "trim", "dev", "--through", n, "--archive", archive })
      assert.equal(1, r.code)
      assert.equal("agent-chat: TRIM_KEEPS_NEWEST: trim keeps the newest message of 'dev' (#3): trim "
        .. "through #2 at most\n", r.stderr)
      assert.equal("", r.stdout)
    end
    assert.falsy(exists(archive))
    assert.same({}, F.diff(before, F.snapshot(root)))
    -- an empty channel has nothing to trim
    F.ok(root, { "init", "empty" })
    local r = F.ac(root, { "trim", "empty", "--through", "1", "--archive", archive })
    assert.equal(1, r.code)
    assert.equal("agent-chat: TRIM_KEEPS_NEWEST: channel 'empty' has no messages to trim\n", r.stderr)
  end)

  it("removes nothing when the archive already holds the channel, dry run or not", function()
    local root = channel(4, { 1 })
    local archive = F.tmpdir() .. "/archive"
    F.ok(root, { "trim", "dev", "--through", "1", "--archive", archive })
    local before = F.snapshot(root)
    local archived = F.snapshot(archive)
    for _, extra in ipairs({ {}, { "--dry-run" } }) do
      local argv = { "trim", "dev", "--through", "3", "--archive", archive }
      table.move(extra, 1, #extra, #argv + 1, argv)
      local r = F.ac(root, argv)
      assert.equal(1, r.code)
      assert.equal("", r.stdout)
      assert.equal("agent-chat: the archive " .. F.absolute(archive) .. " already holds "
        .. "channel 'dev': archive to a new folder (nothing was removed)\n", r.stderr)
    end
    assert.same({}, F.diff(before, F.snapshot(root)))
    assert.same({}, F.diff(archived, F.snapshot(archive)))
  end)

  it("removes nothing when the archive skipped a file (a second file of one seq, one over 16 MiB)", function()
    for _, plant in ipairs({
      function(root)   -- the Python tool can leave two files of one seq
        local f = assert(io.open(root .. "/dev/0002-carol-dup.md", "w"))
        f:write("---\nseq: 2\nfrom: carol\nto: all\nchannel: dev\nts: 2026-01-01T00:00:00+00:00\n"
          .. "status: discussion\ntitle: dup\n---\nx\n")
        f:close()
      end,
      function(root)   -- over the 16 MiB a reader reads
        assert(os.execute("head -c 17000000 /dev/zero | tr '\\0' x > " .. H.sh(root .. "/dev/0001-dave-big.md")))
      end,
    }) do
      local root = channel(4, { 1 })
      plant(root)
      local before = F.snapshot(root)
      local archive = F.tmpdir() .. "/archive"
      local r = F.ac(root, { "trim", "dev", "--through", "3", "--archive", archive })
      assert.equal(1, r.code, F.show(r.stdout))
      assert.truthy(r.stdout:find("^exported 'dev' to .*, 1 skipped\n$"), r.stdout)
      assert.equal("agent-chat: TRIM_ARCHIVE_INCOMPLETE: the archive of 'dev' lacks 1 files export skipped "
        .. "(unreadable, over 16 MiB, or a second file of one seq): nothing was removed\n", r.stderr)
      assert.same({}, F.diff(before, F.snapshot(root)))
    end
  end)

  it("--dry-run says what it would do and changes nothing", function()
    local root = channel(5, { 1 })
    local tmp = F.tmpdir()
    local archive = tmp .. "/archive"
    local before = F.snapshot(root)
    local r = F.ac(root, { "trim", "dev", "--through", "2", "--archive", archive, "--dry-run" })
    assert.equal(0, r.code, F.show(r.stderr))
    assert.equal("would archive 'dev' to " .. F.absolute(tmp) .. "/archive/dev, then remove 2 "
      .. "messages (#1 to #2); #3 and later stay\n", r.stdout)
    assert.falsy(exists(archive))
    assert.same({}, F.diff(before, F.snapshot(root)))
  end)

  it("refuses bad arguments with a usage error", function()
    local root = channel(2)
    for _, argv in ipairs({
      { "trim", "dev", "--through", "0", "--archive", "a" },
      { "trim", "dev", "--through", "x", "--archive", "a" },
      { "trim", "dev", "--through", "1" },
      { "trim", "dev", "--archive", "a" },
    }) do
      local r = F.ac(root, argv)
      assert.equal(2, r.code, table.concat(argv, " "))
      assert.is_nil(F.error_line(r.stderr), r.stderr)
    end
    local r = F.ac(root, { "trim", "nope", "--through", "1", "--archive", F.tmpdir() .. "/a" })
    assert.equal(1, r.code)
    assert.truthy(r.stderr:find("channel 'nope' not found", 1, true), r.stderr)
    assert.truthy(F.ok(root, { "trim", "--help" }).stdout:find("--through N", 1, true))
  end)

  it("raises a missing high-water mark first, so a trimmed seq is never given again", function()
    local root = channel(4)
    os.remove(root .. "/dev/.seqhigh")                 -- as the Python tool leaves a channel
    F.ok(root, { "trim", "dev", "--through", "3", "--archive", F.tmpdir() .. "/archive" })
    local f = assert(io.open(root .. "/dev/.seqhigh"))
    assert.equal("4", f:read("a"):match("%d+"))
    f:close()
    -- even once the newest is removed by hand, the next post is #5
    os.remove(root .. "/dev/0004-alice-m4.md")
    assert.equal("posted #5 -> dev/0005-alice-n.md\n",
      F.ok(root, { "post", "dev", "--from", "alice", "--title", "n", "--body", "x" }).stdout)
  end)

  it("follows no symlink out of the channel: a planted .acks/<seq> link stays, its target untouched", function()
    local root = channel(3)
    local tmp = F.tmpdir()
    local outside = tmp .. "/outside"
    assert(os.execute("mkdir -p " .. H.sh(outside) .. " && echo keep > " .. H.sh(outside .. "/bob.json")
      .. " && mkdir -p " .. H.sh(root .. "/dev/.acks") .. " && ln -s " .. H.sh(outside) .. " "
      .. H.sh(root .. "/dev/.acks/1")))
    -- the archive refuses the channel (export reads no link), so nothing goes
    local before = F.snapshot(root)
    local r = F.ac(root, { "trim", "dev", "--through", "2", "--archive", tmp .. "/archive" })
    assert.equal(1, r.code)
    assert.is_nil(F.error_line(r.stderr), r.stderr)
    assert.same({}, F.diff(before, F.snapshot(root)))
    -- ch:trim itself (the API, no archive) removes the messages and leaves the link
    local script = tmp .. "/t.lua"
    local f = assert(io.open(script, "w"))
    f:write([[
local ac = require "agentchat"
local ch = assert(assert(ac.open()):channel("dev"))
local t = assert(ch:trim(2))
print(t.messages, t.acks, t.newest)
]])
    f:close()
    r = F.run({ "run", script }, { root = root })
    assert.equal(0, r.code, F.show(r.stderr))
    assert.equal("2\t0\t3\n", r.stdout)
    assert.truthy(exists(outside .. "/bob.json"))
    assert.equal("l:" .. outside, F.snapshot(root .. "/dev")[".acks/1"])
    assert.same({ "0003-alice-m3.md" }, messages(root))
    -- a directory named like a message (no command makes one) stays, the rest goes
    assert(os.execute("mkdir " .. H.sh(root .. "/dev/0004-x.md")))
    for i = 5, 6 do
      F.ok(root, { "post", "dev", "--from", "alice", "--title", "m" .. i, "--body", "x" })
    end
    f = assert(io.open(script, "w"))
    f:write('local ch = assert(assert(require("agentchat").open()):channel("dev")); assert(ch:trim(5))\n')
    f:close()
    r = F.run({ "run", script }, { root = root })
    assert.equal(0, r.code, F.show(r.stderr))
    assert.same({ "0004-x.md", "0006-alice-m6.md" }, messages(root))
  end)

  it("a trim killed half way leaves older messages gone, and the same trim run again finishes it", function()
    local root = channel(6, { 1, 2, 3 })
    -- killed once the archive is written, before the removal
    local archive = F.tmpdir() .. "/a1"
    local env = { AGENT_CHAT_FAULT = "store.msg_trim:crash" }
    local r = F.ac(root, { "trim", "dev", "--through", "4", "--archive", archive }, env)
    assert.equal(137, r.code, F.show(r.stderr))
    assert.equal(6, #messages(root))
    assert.truthy(exists(archive .. "/dev/0006-alice-m6.md"))
    -- killed in the middle of the removal: the 2nd message file unlinked
    local n = 0
    for i = 1, 40 do
      env = { AGENT_CHAT_FAULT = "sys.unlink#" .. i .. ":crash" }
      local copy = F.copy(root)
      r = F.ac(copy, { "trim", "dev", "--through", "4", "--archive", F.tmpdir() .. "/c" .. i }, env)
      if r.code == 0 then
        break                            -- past the last unlink
      end
      n = n + 1
      local left = messages(copy)
      -- always a prefix of the old messages gone, never a newer one first
      local first = tonumber(left[1]:match("^(%d+)"))
      for k, name in ipairs(left) do
        assert.equal(first + k - 1, tonumber(name:match("^(%d+)")), name)
      end
      r = F.ac(copy, { "trim", "dev", "--through", "4", "--archive", F.tmpdir() .. "/d" .. i })
      assert.equal(0, r.code, F.show(r.stderr))
      assert.same({ "0005-alice-m5.md", "0006-alice-m6.md" }, messages(copy))
      assert.falsy(exists(copy .. "/dev/.acks/1") or exists(copy .. "/dev/.acks/3"))
      assert.equal(0, F.ac(copy, { "fsck" }).code)
    end
    assert.truthy(n >= 4, "crashed at " .. n .. " unlinks")
  end)
end)
