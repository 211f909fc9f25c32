-- The path-lock methods of agentchat.Channel (lua/agentchat/api/locks.lua
-- over the C binding agentchat.pathlocks), inside the binary.
local H = require "spec_helper"
local ac = require "agentchat"

local function fresh(name)
  local root = assert(ac.open(H.tmpdir() .. "/root"))
  local ch = assert(root:init(name or "w"))
  return ch, root
end

--- Every file under dir with its bytes (symlinks as "-> target").
local function snapshot(dir)
  local snap = {}
  local p = io.popen("find " .. H.sh(dir) .. " -mindepth 1 -printf '%y %P\\0' 2>/dev/null")
  for entry in p:read("a"):gmatch("([^%z]*)%z") do
    local kind, rel = entry:match("^(%a) (.*)$")
    snap[rel] = kind == "f" and H.read(dir .. "/" .. rel) or kind
  end
  p:close()
  return snap
end

local function fails(code, msg, ...)
  local res = table.pack(...)
  assert.is_nil(res[1])
  assert.equal(code, res[3])
  if msg then
    assert.equal(msg, res[2])
  end
  assert.equal(1, res[4])
end

describe("ch:lock / ch:check / ch:unlock", function()
  it("locks one path or several and returns the record", function()
    local ch = fresh()
    local rec = assert(ch:lock("src/a.c", { as = "alice" }))
    assert.equal(32, #rec.lock_id)
    assert.equal("alice", rec.owner)
    assert.equal("w", rec.channel)
    assert.same({ { display_path = "src/a.c", kind = "file", normalized_path = "src/a.c" } }, rec.paths)
    assert.is_false(rec.expired)
    assert.is_nil(rec.previous_owner)
    assert.truthy(rec.expires_at > rec.locked_at)
    local two = assert(ch:lock({ "./docs//", "README" }, { owner = "bob", lease = 60 }))
    assert.equal("docs", two.paths[1].normalized_path)
    assert.equal("./docs//", two.paths[1].display_path)
    local hits = assert(ch:check({ "docs/x", "src" }))
    assert.equal(2, #hits)
    assert.truthy(hits[1].lock_id < hits[2].lock_id)
    assert.same({}, assert(ch:check(".x")))
    local all = assert(ch:locks())
    assert.equal(2, #all)
    local gone = assert(ch:unlock("README", { as = "bob" }))
    assert.equal(two.lock_id, gone.lock_id)
    assert(ch:unlock(rec.lock_id, { as = "alice" }))
    assert.same({}, assert(ch:locks()))
  end)

  it("returns the CLI's errors as nil, message, code, exit", function()
    local ch = fresh()
    local rec = assert(ch:lock("x", { as = "alice" }))
    fails("PATH_LOCK_CONFLICT", "lock request overlaps an active lock", ch:lock("x/y", { as = "bob" }))
    fails("PATH_LOCK_CONFLICT", "requested paths overlap within one lock request",
      ch:lock({ "q", "q/r" }, { as = "bob" }))
    fails("PATH_LOCK_OWNER_MISMATCH", "lock " .. rec.lock_id .. " belongs to alice",
      ch:unlock("x", { as = "bob" }))
    fails("PATH_LOCK_NOT_FOUND", "lock record does not exist: y", ch:unlock("y", { as = "bob" }))
    fails("PATH_LOCK_NOT_STALE", "lock " .. rec.lock_id .. " is still active",
      ch:recover_lock("x", { as = "bob", reason = "r" }))
    fails("PATH_LOCK_INVALID_DURATION", "lock duration must be positive", ch:lock("z", { as = "a", lease = 0 }))
    fails("PATH_LOCK_INVALID_DURATION", nil, ch:lock("z", { as = "a", lease = math.huge }))
    fails("PATH_LOCK_INVALID_DURATION", nil, ch:lock("z", { as = "a", lease = 0 / 0 }))
    fails("PATH_LOCK_INVALID_OWNER", "owner must be a safe identity", ch:lock("z", { as = "a b" }))
    fails("PATH_LOCK_INVALID_PATH", "at least one path is required", ch:lock({}, { as = "a" }))
  end)

  it("raises on misuse", function()
    local ch = fresh()
    assert.has_error(function() ch:lock("x") end)
    assert.has_error(function() ch:lock(5, { as = "a" }) end)
    assert.has_error(function() ch:lock({ "x", 5 }, { as = "a" }) end)
    assert.has_error(function() ch:lock("x", { as = "a", lease = "soon" }) end)
    assert.has_error(function() ch:unlock(nil, { as = "a" }) end)
    assert.has_error(function() ch:recover_lock("x", { as = "a" }) end)
    assert.has_error(function() ch:recover_pending_locks{ as = "a", resolve = "maybe" } end)
  end)
end)

describe("NUL and other hostile strings through the API", function()
  local cases = {
    { "a\0b", "PATH_LOCK_INVALID_PATH", "path contains a forbidden control character" },
    { "\0", "PATH_LOCK_INVALID_PATH", "path contains a forbidden control character" },
    { "src/\0/../../etc", "PATH_LOCK_INVALID_PATH", "path contains a forbidden control character" },
    { "ok\0", "PATH_LOCK_INVALID_PATH", "path contains a forbidden control character" },
    { "/abs\0", "PATH_LOCK_INVALID_PATH", "path contains a forbidden control character" },
    { "../x", "PATH_LOCK_INVALID_PATH", "parent traversal is not allowed" },
    { "\u{2028}", nil },     -- a line separator is not a control character (Zl)
  }
  for _, c in ipairs(cases) do
    it(string.format("%q", c[1]) .. (c[2] and " is refused, nothing written" or " is accepted"), function()
      local ch, root = fresh()
      local before = snapshot(root.path)
      if c[2] then
        fails(c[2], c[3], ch:lock(c[1], { as = "alice" }))
        fails(c[2], c[3], ch:lock({ "fine", c[1] }, { as = "alice" }))
        fails(c[2], c[3], ch:check(c[1]))
        assert.same(before, snapshot(root.path))
      else
        assert(ch:lock(c[1], { as = "alice" }))
      end
    end)
  end

  it("refuses NUL in owners, targets and reasons", function()
    local ch, root = fresh()
    local before = snapshot(root.path)
    fails("PATH_LOCK_INVALID_OWNER", "owner must be a safe identity", ch:lock("x", { as = "alice\0" }))
    fails("PATH_LOCK_INVALID_OWNER", "owner must be a safe identity", ch:check("x", { as = "\0" }))
    fails("PATH_LOCK_NOT_FOUND", "lock record does not exist: x\\x00y", ch:unlock("x\0y", { as = "alice" }))
    fails("PATH_LOCK_INVALID_REASON", "recovery reason contains a forbidden control character",
      ch:recover_lock("x", { as = "alice", reason = "why\0" }))
    fails("PATH_LOCK_INVALID_OWNER", "actor must be a safe identity",
      ch:recover_pending_locks{ as = "ops\0" })
    assert.same(before, snapshot(root.path))
  end)
end)

describe("recovery through the API", function()
  it("recovers an expired lock and resolves nothing pending", function()
    local ch, root = fresh("r")
    local rec = assert(ch:lock("build/out.bin", { as = "alice", lease = 0.05 }))
    require("agentchat.sys").sleep(0.1)
    local listed = assert(ch:locks())
    assert.is_true(listed[1].expired)
    fails("PATH_LOCK_RECOVERY_REQUIRED", "lock request overlaps an expired lock; recover it explicitly",
      ch:lock("build", { as = "bob" }))
    fails("PATH_LOCK_INVALID_REASON", "recovery reason must not be empty",
      ch:recover_lock(rec.lock_id, { as = "bob", reason = " " }))
    local new = assert(ch:recover_lock("build/out.bin", { as = "bob", reason = "alice crashed", ttl = 600 }))
    assert.equal(rec.lock_id, new.lock_id)
    assert.equal("bob", new.owner)
    assert.equal("alice", new.previous_owner)
    assert.equal(rec.expires_at, new.previous_expires_at)
    assert.equal("alice crashed", new.recovery_reason)
    assert.equal(new.updated_at, new.locked_at)   -- a recovered lock is locked anew
    local res = assert(ch:recover_pending_locks{ as = "bob" })
    assert.equal("none", res.outcome)
    -- three audit messages were posted: locked, recovered (none by recover-pending)
    local n = 0
    for _, name in ipairs(H.ls(root.path .. "/r")) do
      if name:match("^%d+%-.*%.md$") then
        n = n + 1
      end
    end
    assert.equal(2, n)
  end)

  it("rolls back a prepared journal and reports it", function()
    local ch, root = fresh("j")
    local dir = root.path .. "/j"
    local rec = assert(ch:lock("a", { as = "alice" }))
    local bytes = H.read(dir .. "/locks/" .. rec.lock_id .. ".json")
    H.write(dir .. "/locks/.path-lock-transaction.json", string.format([[{
  "actor": "alice",
  "after": null,
  "before": null,
  "event": "path.lock.unlocked",
  "operation": "unlock",
  "phase": "prepared",
  "target": "%s.json",
  "transaction_id": "1a1b1c1d1e1f10111213141516171819",
  "version": 1
}
]], rec.lock_id))
    -- before = null: the rollback deletes the record (what the journal says)
    fails("PATH_LOCK_TRANSACTION_PENDING", "a previous path-lock mutation needs explicit recovery",
      ch:check("a"))
    local listed, pending = ch:locks{ ignore_journal = true }
    assert.equal(1, #listed)
    assert.equal(rec.lock_id, pending)
    local res = assert(ch:recover_pending_locks{ as = "ops" })
    assert.same({ outcome = "rolled_back", operation = "unlock", lock_id = rec.lock_id,
                  transaction_id = "1a1b1c1d1e1f10111213141516171819" }, res)
    assert.is_nil(H.read(dir .. "/locks/" .. rec.lock_id .. ".json"))
    assert.truthy(bytes)
  end)
end)

describe("channel helpers", function()
  it("opens channels with the PATH_LOCK_* channel errors", function()
    local _, root = fresh()
    fails("PATH_LOCK_CHANNEL_NOT_FOUND", "channel does not contain _meta.json: " .. root.path .. "/nope",
      ac.lock_channel(root, "nope"))
    fails("PATH_LOCK_INVALID_CHANNEL",
      "invalid channel name: '../x' (invalid channel name (path traversal blocked): '../x')",
      ac.lock_channel(root, "../x"))
    fails("PATH_LOCK_INVALID_CHANNEL",
      "invalid channel name: '.it's' (invalid channel name (reserved prefix blocked): '.it's')",
      ac.lock_channel(root, ".it's"))
    assert(ac.lock_channel(root, "w"))
  end)

  it("normalizes and compares paths", function()
    local ch = fresh()
    assert.same({ "a/b", "file" }, { ch:normalize_lock_path("./a//b/") })
    assert.same({ ".", "directory" }, { ch:normalize_lock_path("./.") })
    fails("PATH_LOCK_INVALID_PATH", "absolute paths are not allowed", ch:normalize_lock_path("/x"))
    assert.is_true(ac.path_overlaps("a/b", "a/b/c"))
    assert.is_false(ac.path_overlaps("a/b", "a/bc"))
    assert.is_true(ac.path_overlaps(".", "z"))
  end)
end)
