-- The task-board Lua API (lua/agentchat/api/tasks.lua over src/l_tasks.c),
-- exercised inside the binary: every channel method, its return shapes,
-- its error codes (nil, message, code, exit) and misuse raising.
--   ch:tasks(), ch:task(id), ch:task_create{...}, ch:task_update(id, {...}),
--   ch:claim / renew / release / done / block (id, {as=, lease=}),
--   ch:recover(id, {as=, reason=, lease=}), ch:recover_pending_lease{as=, resolve=}
local H = require "spec_helper"
local ac = require "agentchat"
local json = require "agentchat.json"

-- Roots on tmpfs when possible (fsync is cheap there), removed at exit.
local function scratch()
  if os.execute("test -d /dev/shm -a -w /dev/shm") then
    local p = io.popen("mktemp -d /dev/shm/ac-api.XXXXXX")
    local d = p:read("l")
    p:close()
    return d
  end
  return H.tmpdir()
end

local base = scratch()
teardown(function()
  os.execute("rm -rf " .. H.sh(base))
end)
local nroots = 0

local function fresh()
  nroots = nroots + 1
  local root = assert(ac.open(base .. "/r" .. nroots))
  return assert(root:init("c")), root
end

local function fails(code, exit, ...)
  local v, msg, c, e = ...
  assert.is_nil(v, "expected a failure, got " .. tostring(v))
  assert.equal(code, c, tostring(msg))
  assert.equal("string", type(msg))
  assert.is_nil(msg:find("\n", 1, true), msg)
  assert.equal(exit or 2, e)
  return msg
end

--- Seconds (whole) from a record's updated_at to its lease_expires_at:
--- both are ISO timestamps with an offset, written at the same moment.
local function lease_length(t)
  local function instant(ts)
    local y, mo, d, h, mi, s, sign, oh, om =
      ts:match("^(%d+)%-(%d+)%-(%d+)T(%d+):(%d+):(%d+)[%.%d]*([%+%-])(%d+):(%d+)$")
    assert(y, "not an ISO timestamp with an offset: " .. tostring(ts))
    -- os.time's local-time bias is the same for both and cancels out
    local off = (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == "+" and 1 or -1)
    return os.time{ year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h),
                    min = tonumber(mi), sec = tonumber(s), isdst = false } - off
  end
  return instant(t.lease_expires_at) - instant(t.updated_at)
end

--- The last audit message: status and parsed JSON body.
local function last_audit(ch)
  local batch = assert(ch:peek(1))
  local text = batch.messages[1].text
  local status = text:match("\nstatus: ([^\n]*)\n")
  local body = text:match("\n%-%-%-\n(.*)$")
  return status, assert(json.loads(body)), batch.messages[1]
end

local function read(path)
  return H.read(path)
end

describe("ch:task_create and ch:task / ch:tasks", function()
  it("creates a record and returns it as a table (null fields absent)", function()
    local ch = fresh()
    local t = assert(ch:task_create{ id = "t1", from = "lead", title = "Write docs",
                                     acceptance = { "reviewed" }, files_hint = { "docs/a.md" } })
    assert.equal("t1", t.id)
    assert.equal("c", t.channel)
    assert.equal("Write docs", t.title)
    assert.equal("open", t.status)
    assert.equal("lead", t.created_by)
    assert.same({}, t.depends_on)
    assert.same({ "docs/a.md" }, t.files_hint)
    assert.same({ "reviewed" }, t.acceptance)
    assert.is_nil(t.owner)
    assert.is_nil(t.lease_expires_at)
    assert.is_nil(t.branch)
    assert.truthy(t.updated_at:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[%+%-]%d%d:%d%d$"), t.updated_at)
    local keys = 0
    for _ in pairs(t) do
      keys = keys + 1
    end
    assert.equal(9, keys)
    -- the record file is the format.md 3.5 layout
    local file = read(ch.root.path .. "/c/tasks/t1.json")
    assert.truthy(file:find('^{\n  "id": "t1",\n  "channel": "c",\n  "title": "Write docs",\n'
      .. '  "status": "open",\n  "owner": null,\n'), file)
    assert.equal("\n", file:sub(-1))
    -- the audit message
    local status, body, m = last_audit(ch)
    assert.equal("task.created", status)
    assert.equal("t1", body.task_id)
    assert.truthy(m.text:find("\nfrom: lead\n", 1, true))
  end)

  it("takes created_by as well as from, owner, depends_on and branch", function()
    local ch = fresh()
    assert(ch:task_create{ id = "a", created_by = "lead", title = "" })
    local b = assert(ch:task_create{ id = "b", created_by = "lead", from = "ignored", title = "B",
                                     owner = "bob", depends_on = { "a" }, branch = "feat/b" })
    assert.equal("lead", b.created_by)
    assert.equal("bob", b.owner)
    assert.same({ "a" }, b.depends_on)
    assert.equal("feat/b", b.branch)
    -- owner "" means none
    local c = assert(ch:task_create{ id = "c", from = "lead", title = "C", owner = "" })
    assert.is_nil(c.owner)
  end)

  it("ch:task gives the record and the blocking dependencies", function()
    local ch = fresh()
    assert(ch:task_create{ id = "a", from = "lead", title = "A" })
    assert(ch:task_create{ id = "b", from = "lead", title = "B" })
    assert(ch:task_create{ id = "d", from = "lead", title = "D", depends_on = { "a", "b" } })
    local t, blocking = ch:task("d")
    assert.equal("d", t.id)
    assert.equal("a=open, b=open", blocking)
    assert(ch:task_update("b", { as = "lead", status = "cancelled" }))
    assert.equal("a=open, b=cancelled", select(2, ch:task("d")))
    assert.equal("", select(2, ch:task("a")))
  end)

  it("ch:tasks lists every record sorted by id", function()
    local ch = fresh()
    assert.same({}, assert(ch:tasks()))
    for _, id in ipairs({ "zeta", "Alpha", "beta", "a.1", "a-2" }) do
      assert(ch:task_create{ id = id, from = "lead", title = id })
    end
    local ids = {}
    for i, t in ipairs(assert(ch:tasks())) do
      ids[i] = t.id
      assert.equal("open", t.status)
    end
    assert.same({ "Alpha", "a-2", "a.1", "beta", "zeta" }, ids)
  end)

  it("fails with the task codes", function()
    local ch = fresh()
    assert(ch:task_create{ id = "t1", from = "lead", title = "T" })
    assert.equal("task record already exists: t1",
      fails("TASK_ALREADY_EXISTS", 2, ch:task_create{ id = "t1", from = "lead", title = "again" }))
    assert.equal("id must contain only letters, digits, '.', '_' or '-'",
      fails("TASK_INVALID_ID", 2, ch:task_create{ id = "../x", from = "lead", title = "T" }))
    fails("TASK_INVALID_ID", 2, ch:task_create{ id = ".hidden", from = "lead", title = "T" })
    fails("TASK_INVALID_ID", 2, ch:task_create{ id = "", from = "lead", title = "T" })
    local function t2(extra)
      local t = { id = "t2", from = "lead", title = "T" }
      for k, v in pairs(extra) do
        t[k] = v
      end
      return ch:task_create(t)
    end
    assert.equal("task t2 references unknown dependency nope",
      fails("TASK_UNKNOWN_DEPENDENCY", 2, t2{ depends_on = { "nope" } }))
    fails("TASK_DUPLICATE_DEPENDENCY", 2, t2{ depends_on = { "t1", "t1" } })
    fails("TASK_DEPENDENCY_CYCLE", 2, t2{ depends_on = { "t2" } })
    fails("TASK_INVALID_DEPENDENCY_ID", 2, t2{ depends_on = { "a b" } })
    fails("TASK_PATH_OUTSIDE_WORKSPACE", 2, t2{ files_hint = { "/etc" } })
    fails("TASK_PATH_OUTSIDE_WORKSPACE", 2, t2{ files_hint = { "../x" } })
    assert.equal("branch must not be empty",
      fails("TASK_INVALID_BRANCH", 2, ch:task_create{ id = "t2", from = "lead", title = "T", branch = "" }))
    assert.equal("created_by must not be empty",
      fails("TASK_INVALID_CREATED_BY", 2, ch:task_create{ id = "t2", from = "", title = "T" }))
    assert.equal("title contains a forbidden control character",
      fails("TASK_INVALID_TITLE", 2, ch:task_create{ id = "t2", from = "lead", title = "two\nlines" }))
    assert.equal("task record does not exist: nope", fails("TASK_NOT_FOUND", 2, ch:task("nope")))
    assert.equal("unsafe task id: 'bad id'", fails("TASK_INVALID_ID", 2, ch:task("bad id")))
    fails("TASK_INVALID_ID", 2, ch:task("../t1"))
    -- nothing of the failures was written
    assert.equal(1, #assert(ch:tasks()))
  end)

  -- Invalid UTF-8 in any text field fails with one TASK_ code.
  it("invalid UTF-8 in any text field fails with one TASK_ code", function()
    local ch = fresh()
    local _, _, c1, e1 = ch:task_create{ id = "u1", from = "lead", title = "\255" }
    local _, _, c2, e2 = ch:task_create{ id = "u2", from = "lead", title = "t", acceptance = { "\255" } }
    assert.equal(2, e1)
    assert.equal(2, e2)
    assert.truthy(c1:match("^TASK_"), c1)
    assert.equal(c1, c2)
    assert.same({}, assert(ch:tasks()))
  end)

  it("a bad record on disk makes every call fail with its code", function()
    local ch = fresh()
    assert(ch:task_create{ id = "t1", from = "lead", title = "T" })
    H.write(ch.root.path .. "/c/tasks/broken.json", "")
    local msg = "could not read task record broken.json: Expecting value: line 1 column 1 (char 0)"
    assert.equal(msg, fails("TASK_INVALID_RECORD", 2, ch:tasks()))
    assert.equal(msg, fails("TASK_INVALID_RECORD", 2, ch:task("t1")))
    assert.equal(msg, fails("TASK_INVALID_RECORD", 2, ch:task_create{ id = "t2", from = "l", title = "T" }))
    assert.equal(msg, fails("TASK_INVALID_RECORD", 2, ch:claim("t1", { as = "alice" })))
  end)

  it("raises on misuse", function()
    local ch = fresh()
    assert.has_error(function() ch:task_create("t1") end, "task_create expects a table")
    assert.has_error(function() ch:task_create() end)
    assert.has_error(function() ch:task_create{ from = "lead", title = "T" } end)
    assert.has_error(function() ch:task_create{ id = "t1", title = "T" } end)
    assert.has_error(function() ch:task_create{ id = "t1", from = "lead" } end)
    assert.has_error(function() ch:task_create{ id = "t1", from = "lead", title = 5 } end)
    assert.has_error(function() ch:task_create{ id = 7, from = "lead", title = "T" } end)
    assert.has_error(function() ch:task_create{ id = "t1", from = "lead", title = "T", depends_on = "a" } end)
    assert.has_error(function() ch:task_create{ id = "t1", from = "lead", title = "T", depends_on = { 1 } } end)
    assert.has_error(function() ch:task_create{ id = "t1", from = "lead", title = "T", files_hint = { {} } } end)
    assert.has_error(function() ch:task_create{ id = "t1", from = "lead", title = "T", branch = true } end)
    assert.has_error(function() ch:task() end)
    assert.has_error(function() ch:task({}) end)
    -- nothing was created by the raising calls
    assert.same({}, assert(ch:tasks()))
  end)
end)

describe("ch:task_update", function()
  it("changes fields and returns the new record", function()
    local ch = fresh()
    assert(ch:task_create{ id = "t1", from = "lead", title = "Old", owner = "bob", branch = "b1" })
    local t = assert(ch:task_update("t1", { as = "lead", title = "New", acceptance = { "x", "y" },
                                            clear_owner = true, owner = "carol", clear_branch = true }))
    assert.equal("New", t.title)
    assert.same({ "x", "y" }, t.acceptance)
    assert.is_nil(t.owner)      -- clear_owner wins over owner
    assert.is_nil(t.branch)
    local status, body = last_audit(ch)
    assert.equal("task.updated", status)
    assert.same({ "acceptance", "branch", "owner", "title" }, body.changed_fields)   -- never updated_at
    t = assert(ch:task_update("t1", { as = "lead", status = "in_progress" }))
    assert.equal("in_progress", t.status)
    t = assert(ch:task_update("t1", { as = "lead", status = "in_progress" }))   -- same state
    assert.equal("in_progress", t.status)
    t = assert(ch:task_update("t1", { as = "lead", depends_on = {}, files_hint = { "src/x.c" }, branch = "b2" }))
    assert.same({ "src/x.c" }, t.files_hint)
    assert.equal("b2", t.branch)
  end)

  it("fails with the update codes", function()
    local ch = fresh()
    assert(ch:task_create{ id = "t1", from = "lead", title = "T" })
    assert(ch:task_create{ id = "t2", from = "lead", title = "T2", depends_on = { "t1" } })
    assert.equal("task update requires at least one field",
      fails("TASK_INVALID_UPDATE", 2, ch:task_update("t1", { as = "lead" })))
    assert.equal("transition 'open' -> 'done' is not allowed",
      fails("TASK_INVALID_TRANSITION", 2, ch:task_update("t1", { as = "lead", status = "done" })))
    assert.equal("unknown task status: 'finished'",
      fails("TASK_INVALID_STATUS", 2, ch:task_update("t1", { as = "lead", status = "finished" })))
    assert.equal("task t2 depends on unfinished tasks: t1",
      fails("TASK_DEPENDENCY_NOT_READY", 2, ch:task_update("t2", { as = "lead", status = "in_progress" })))
    fails("TASK_DEPENDENCY_CYCLE", 2, ch:task_update("t1", { as = "lead", depends_on = { "t2" } }))
    fails("TASK_NOT_FOUND", 2, ch:task_update("t9", { as = "lead", title = "x" }))
    fails("TASK_INVALID_BRANCH", 2, ch:task_update("t1", { as = "lead", branch = "" }))
    -- a leased task: only its holder, and not its status or owner
    assert(ch:claim("t1", { as = "alice" }))
    assert.equal("lease for task t1 belongs to alice",
      fails("LEASE_OWNER_MISMATCH", 2, ch:task_update("t1", { as = "bob", title = "x" })))
    assert.equal("task t1 must be changed through its lease operation",
      fails("LEASE_MUTATION_REQUIRED", 2, ch:task_update("t1", { as = "alice", status = "open" })))
    fails("LEASE_MUTATION_REQUIRED", 2, ch:task_update("t1", { as = "alice", owner = "bob" }))
    assert(ch:task_update("t1", { as = "alice", title = "holder may retitle" }))
  end)

  it("raises on misuse", function()
    local ch = fresh()
    assert(ch:task_create{ id = "t1", from = "lead", title = "T" })
    assert.has_error(function() ch:task_update("t1") end, "task_update expects {as = name}")
    assert.has_error(function() ch:task_update("t1", { title = "x" }) end, "task_update expects {as = name}")
    assert.has_error(function() ch:task_update("t1", { as = 5, title = "x" }) end)
    assert.has_error(function() ch:task_update("t1", { as = "lead", title = 5 }) end)
    assert.has_error(function() ch:task_update("t1", { as = "lead", acceptance = "x" }) end)
    assert.has_error(function() ch:task_update(nil, { as = "lead", title = "x" }) end)
    assert.equal("T", ch:task("t1").title)
  end)
end)

describe("lease methods", function()
  local ch
  before_each(function()
    ch = fresh()
    assert(ch:task_create{ id = "t1", from = "lead", title = "T" })
  end)

  it("claim, renew, release: records, claim files and audit messages", function()
    local t = assert(ch:claim("t1", { as = "alice", lease = 60 }))
    assert.equal("in_progress", t.status)
    assert.equal("alice", t.owner)
    local left = lease_length(t)
    assert.is_true(left >= 59 and left <= 61, "lease of " .. left .. " s")
    local claim = assert(json.loads(read(ch.root.path .. "/c/claims/t1.alice.json")))
    assert.equal(t.lease_expires_at, claim.lease_expires_at)
    local status, body = last_audit(ch)
    assert.equal("lease.claimed", status)
    assert.equal("alice", body.lease_owner)
    assert.equal(32, #body.transaction_id)

    t = assert(ch:renew("t1", { as = "alice" }))    -- default lease 300
    left = lease_length(t)
    assert.is_true(left >= 299 and left <= 301, "renewed lease of " .. left .. " s")
    assert.equal("lease.renewed", (last_audit(ch)))

    t = assert(ch:release("t1", { as = "alice" }))
    assert.equal("open", t.status)
    assert.is_nil(t.owner)
    assert.is_nil(t.lease_expires_at)
    assert.is_nil(read(ch.root.path .. "/c/claims/t1.alice.json"))
    assert.equal("lease.released", (last_audit(ch)))
  end)

  it("done and block, with and without a lease", function()
    assert(ch:task_create{ id = "t2", from = "lead", title = "T2" })
    assert(ch:claim("t1", { as = "alice" }))
    assert.equal("task t1 must be changed through its lease operation",
      fails("LEASE_MUTATION_REQUIRED", 2, ch:block("t1", { as = "alice" })))
    local t = assert(ch:done("t1", { as = "alice" }))
    assert.equal("done", t.status)
    assert.is_nil(t.owner)
    assert.equal("lease.completed", (last_audit(ch)))
    -- a repeated done on a done task is a same-state fallback
    t = assert(ch:done("t1", { as = "zed" }))
    assert.equal("done", t.status)
    local status, body = last_audit(ch)
    assert.equal("task.updated", status)
    assert.equal("complete", body.lease_fallback)
    assert.equal(32, #body.transaction_id)
    -- block without a lease: a plain task.updated
    t = assert(ch:block("t2", { as = "zed" }))
    assert.equal("blocked", t.status)
    status, body = last_audit(ch)
    assert.equal("task.updated", status)
    assert.is_nil(body.transaction_id)
    assert(ch:block("t2", { as = "zed" }))   -- same state
    -- release without a lease
    t = assert(ch:release("t2", { as = "zed" }))
    assert.equal("open", t.status)
    assert.equal("release", select(2, last_audit(ch)).lease_fallback)
  end)

  it("recover takes over an expired lease and records who and why", function()
    assert(ch:claim("t1", { as = "alice", lease = 0.001 }))
    os.execute("sleep 0.02")
    assert.equal("expired lease for task t1 requires explicit recovery",
      fails("LEASE_RECOVERY_REQUIRED", 2, ch:renew("t1", { as = "alice" })))
    fails("LEASE_RECOVERY_REQUIRED", 2, ch:claim("t1", { as = "bob" }))
    fails("LEASE_RECOVERY_REQUIRED", 2, ch:release("t1", { as = "alice" }))
    fails("LEASE_RECOVERY_REQUIRED", 2, ch:done("t1", { as = "alice" }))
    assert.equal("recovery reason must not be empty",
      fails("LEASE_INVALID_REASON", 2, ch:recover("t1", { as = "bob" })))
    fails("LEASE_INVALID_REASON", 2, ch:recover("t1", { as = "bob", reason = "" }))
    assert.equal("recovery reason contains a forbidden control character",
      fails("LEASE_INVALID_REASON", 2, ch:recover("t1", { as = "bob", reason = "a\nb" })))
    local t = assert(ch:recover("t1", { as = "bob", reason = "alice left", lease = 120 }))
    assert.equal("bob", t.owner)
    assert.equal("in_progress", t.status)
    local claim = assert(json.loads(read(ch.root.path .. "/c/claims/t1.bob.json")))
    assert.equal("alice", claim.previous_owner)
    assert.equal("alice left", claim.recovery_reason)
    assert.is_nil(read(ch.root.path .. "/c/claims/t1.alice.json"))
    local status, body = last_audit(ch)
    assert.equal("lease.recovered", status)
    assert.equal("alice", body.previous_owner)
    assert.equal("lease for task t1 is still active",
      fails("LEASE_NOT_EXPIRED", 2, ch:recover("t1", { as = "carol", reason = "r" })))
  end)

  it("fails with the lease codes", function()
    assert(ch:task_create{ id = "t2", from = "lead", title = "T2", owner = "bob" })
    assert(ch:task_create{ id = "t3", from = "lead", title = "T3", depends_on = { "t1" } })
    assert.equal("no active lease for task t1", fails("LEASE_NOT_FOUND", 2, ch:renew("t1", { as = "alice" })))
    fails("LEASE_NOT_FOUND", 2, ch:recover("t1", { as = "alice", reason = "r" }))
    assert.equal("lease duration must be positive",
      fails("LEASE_INVALID_DURATION", 2, ch:claim("t1", { as = "alice", lease = 0 })))
    fails("LEASE_INVALID_DURATION", 2, ch:claim("t1", { as = "alice", lease = -5 }))
    fails("LEASE_INVALID_DURATION", 2, ch:claim("t1", { as = "alice", lease = 0 / 0 }))
    fails("LEASE_INVALID_DURATION", 2, ch:claim("t1", { as = "alice", lease = math.huge }))
    assert.equal("owner must be a safe identity",
      fails("LEASE_INVALID_OWNER", 2, ch:claim("t1", { as = "bad owner" })))
    fails("LEASE_INVALID_OWNER", 2, ch:claim("t1", { as = "" }))
    fails("LEASE_INVALID_OWNER", 2, ch:claim("t1", { as = "../x" }))
    assert.equal("task t2 is assigned to bob", fails("LEASE_CONFLICT", 2, ch:claim("t2", { as = "alice" })))
    assert.equal("task t3 depends on unfinished tasks: t1",
      fails("TASK_DEPENDENCY_NOT_READY", 2, ch:claim("t3", { as = "alice" })))
    fails("TASK_NOT_FOUND", 2, ch:claim("nope", { as = "alice" }))
    fails("TASK_INVALID_ID", 2, ch:claim("../t1", { as = "alice" }))
    assert(ch:claim("t1", { as = "alice" }))
    assert.equal("task t1 is leased by alice", fails("LEASE_CONFLICT", 2, ch:claim("t1", { as = "alice" })))
    assert.equal("lease for task t1 belongs to alice",
      fails("LEASE_OWNER_MISMATCH", 2, ch:renew("t1", { as = "bob" })))
    fails("LEASE_OWNER_MISMATCH", 2, ch:release("t1", { as = "bob" }))
    fails("LEASE_OWNER_MISMATCH", 2, ch:done("t1", { as = "bob" }))
    assert(ch:done("t1", { as = "alice" }))
    assert.equal("transition 'done' -> 'in_progress' is not allowed",
      fails("TASK_INVALID_TRANSITION", 2, ch:claim("t1", { as = "alice" })))
    fails("TASK_INVALID_TRANSITION", 2, ch:release("t1", { as = "alice" }))
  end)

  it("raises on misuse", function()
    for _, op in ipairs({ "claim", "renew", "release", "done", "block", "recover" }) do
      assert.has_error(function() ch[op](ch, "t1") end, op .. " expects {as = name}")
      assert.has_error(function() ch[op](ch, "t1", {}) end, op .. " expects {as = name}")
      assert.has_error(function() ch[op](ch, "t1", { as = 5 }) end, op .. " expects {as = name}")
      assert.has_error(function() ch[op](ch, "t1", "alice") end, op .. " expects {as = name}")
      assert.has_error(function() ch[op](ch, nil, { as = "alice" }) end)
    end
    assert.has_error(function() ch:claim("t1", { as = "alice", lease = "soon" }) end)
    assert.has_error(function() ch:recover("t1", { as = "alice", reason = {} }) end)
    assert.equal("open", ch:task("t1").status)
  end)
end)

describe("ch:recover_pending_lease", function()
  local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  local function b64(s)
    local out = {}
    for i = 1, #s, 3 do
      local a, b, c = s:byte(i, i + 2)
      local n = a << 16 | (b or 0) << 8 | (c or 0)
      out[#out + 1] = B64:sub((n >> 18) + 1, (n >> 18) + 1) .. B64:sub((n >> 12 & 63) + 1, (n >> 12 & 63) + 1)
        .. (b and B64:sub((n >> 6 & 63) + 1, (n >> 6 & 63) + 1) or "=")
        .. (c and B64:sub((n & 63) + 1, (n & 63) + 1) or "=")
    end
    return table.concat(out)
  end

  --- A claim whose journal was left "applied" without its audit message
  --- (as a crash between the claim files and the audit post leaves it).
  --- Returns the channel and the record bytes before and after.
  local function crashed_claim(phase)
    local ch = fresh()
    assert(ch:task_create{ id = "t1", from = "lead", title = "T" })
    local dir = ch.root.path .. "/c"
    local before = read(dir .. "/tasks/t1.json")
    assert(ch:claim("t1", { as = "alice" }))
    local after = read(dir .. "/tasks/t1.json")
    local claim = read(dir .. "/claims/t1.alice.json")
    local j = {
      version = 2, phase = phase or "applied", transaction_id = "0123456789abcdef0123456789abcdef",
      task_id = "t1", task_file = "tasks/t1.json", task_before = b64(before), task_after = b64(after),
      claim_changes = json.array{ { file = "t1.alice.json", previous = json.null, next = b64(claim) } },
      event = "lease.claimed", details = { lease_owner = "alice" },
    }
    H.write(dir .. "/claims/.lease-transaction.json",
      json.dumps(j, { indent = 2, sort_keys = true, ensure_ascii = false }) .. "\n")
    return ch, before, after, dir
  end

  it("returns true after rolling back, and the lease methods are blocked until then", function()
    local ch, before, _, dir = crashed_claim("applied")
    local msg = "a previous lease mutation needs explicit recovery"
    assert.equal(msg, fails("LEASE_TRANSACTION_PENDING", 2, ch:claim("t1", { as = "bob" })))
    fails("LEASE_TRANSACTION_PENDING", 2, ch:renew("t1", { as = "alice" }))
    fails("LEASE_TRANSACTION_PENDING", 2, ch:release("t1", { as = "alice" }))
    fails("LEASE_TRANSACTION_PENDING", 2, ch:done("t1", { as = "alice" }))
    fails("LEASE_TRANSACTION_PENDING", 2, ch:recover("t1", { as = "bob", reason = "r" }))
    fails("LEASE_TRANSACTION_PENDING", 2, ch:task_update("t1", { as = "alice", title = "x" }))
    assert(ch:task("t1"))      -- reads do not look at the journal
    assert(ch:tasks())
    assert.is_true(ch:recover_pending_lease{ as = "ops" })
    assert.equal(before, read(dir .. "/tasks/t1.json"))
    assert.is_nil(read(dir .. "/claims/t1.alice.json"))
    assert.is_nil(read(dir .. "/claims/.lease-transaction.json"))
    local status, body = last_audit(ch)
    assert.equal("lease.transaction.recovered", status)
    assert.equal("rollback", body.transaction_recovery)
    assert.equal("no pending lease transaction exists",
      fails("LEASE_TRANSACTION_NOT_FOUND", 2, ch:recover_pending_lease{ as = "ops" }))
    assert(ch:claim("t1", { as = "bob" }))
  end)

  it("resolve = 'published' keeps the change, 'rollback' undoes it", function()
    local ch, _, after, dir = crashed_claim("applied")
    assert.is_true(ch:recover_pending_lease{ as = "ops", resolve = "published" })
    assert.equal(after, read(dir .. "/tasks/t1.json"))
    assert.equal("lease.transaction.cleaned", (last_audit(ch)))
    local ch2, before2, _, dir2 = crashed_claim("applied")
    assert.is_true(ch2:recover_pending_lease{ as = "ops", resolve = "rollback" })
    assert.equal(before2, read(dir2 .. "/tasks/t1.json"))
  end)

  it("fails with the recovery codes", function()
    local ch = crashed_claim("prepared")
    assert.equal("publication resolution applies only to applied transactions",
      fails("LEASE_TRANSACTION_INVALID", 2, ch:recover_pending_lease{ as = "ops", resolve = "published" }))
    assert.equal("actor must be a safe identity",
      fails("LEASE_INVALID_OWNER", 2, ch:recover_pending_lease{ as = "bad actor" }))
    H.write(ch.root.path .. "/c/claims/.lease-transaction.json", '{"version": 9}')
    assert.equal("transaction journal has an unsupported shape",
      fails("LEASE_TRANSACTION_INVALID", 2, ch:recover_pending_lease{ as = "ops" }))
    fails("LEASE_TRANSACTION_INVALID", 2, ch:claim("t1", { as = "bob" }))
  end)

  -- An unknown resolve value is refused with a code and the journal stays.
  it("rejects an unknown resolve value and leaves the journal", function()
    local ch, _, _, dir = crashed_claim("applied")
    local ok, res = pcall(ch.recover_pending_lease, ch, { as = "ops", resolve = "rollbak" })
    if ok then
      assert.is_nil(res, "resolve = 'rollbak' was accepted")
    end
    assert.truthy(read(dir .. "/claims/.lease-transaction.json"), "the journal was resolved")
  end)

  it("raises on misuse", function()
    local ch = fresh()
    assert.has_error(function() ch:recover_pending_lease() end, "recover_pending_lease expects {as = name}")
    assert.has_error(function() ch:recover_pending_lease{} end, "recover_pending_lease expects {as = name}")
    assert.has_error(function() ch:recover_pending_lease{ as = 1 } end)
    assert.has_error(function() ch:recover_pending_lease{ as = "ops", resolve = {} } end)
  end)
end)

describe("a closed channel", function()
  it("raises for every task method", function()
    local ch = fresh()
    assert(ch:task_create{ id = "t1", from = "lead", title = "T" })
    ch:close()
    assert.has_error(function() ch:tasks() end)
    assert.has_error(function() ch:task("t1") end)
    assert.has_error(function() ch:task_create{ id = "t2", from = "lead", title = "T" } end)
    assert.has_error(function() ch:task_update("t1", { as = "lead", title = "x" }) end)
    assert.has_error(function() ch:claim("t1", { as = "alice" }) end)
    assert.has_error(function() ch:recover_pending_lease{ as = "ops" } end)
  end)
end)
