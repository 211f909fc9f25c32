-- Functional specs for the composite wait, `wait CH --as A --for COND ...`
-- and `wait --resume TOKEN` (docs/wait-any.md): each condition kind wakes
-- a blocked wait, across channels too; the first condition that holds is
-- printed; a timeout prints a resume token and the resumed wait returns
-- what was posted in between; no CPU while blocked; malformed conditions
-- and tokens fail with one line and change nothing. Wake-up latency is
-- measured by `make bench` (bench/wait-any), never asserted here.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local W = require "watchsupport"

local ac = F.run_checked

describe("wait --for", function()
  local root

  local function ok(...)
    return F.ok(root, { ... })
  end

  -- Start a wait in the background; it must still be blocked a moment
  -- later (nothing it waits for holds yet).
  local function start(argv)
    local job = W.spawn_command(root, "wait", argv)
    F.sleep(0.3)
    assert.is_nil(F.read(job.dir .. "/rc"), "the wait returned before the change: "
      .. tostring(F.read(job.dir .. "/out")) .. tostring(job:stderr()))
    return job
  end

  local function woke(job, condition)
    local r = job:finish(20)
    assert.equal(0, r.code, F.describe(r))
    assert.equal("woke: " .. condition .. "\n", F.lines(r.stdout)[1] .. "\n")
    return r
  end

  before_each(function()
    root = F.new_root()
    F.init(root, "dev", "--members", "alice,bob")
    F.init(root, "other")
    ok("task", "create", "dev", "T1", "--title", "build", "--from", "alice")
    -- bob has read everything so far (the task's audit message).
    ok("read", "dev", "--as", "bob")
  end)

  it("wakes on a message for the agent", function()
    local job = start{ "dev", "--as", "bob", "--for", "message", "--timeout", "30" }
    F.post(root, "dev", "alice", "hello bob", "x", "--to", "bob")
    local r = woke(job, "message")
    assert.truthy(r.stdout:find("title: hello bob", 1, true), F.show(r.stdout))
    -- Delivered: the cursor moved past it, as plain wait moves it.
    assert.equal(2, W.cursor(root, "dev", "bob"))
  end)

  it("wakes when a task reaches the state", function()
    ok("task", "claim", "dev", "T1", "--as", "alice")
    local job = start{ "dev", "--as", "bob", "--for", "task:T1=done", "--timeout", "30" }
    ok("task", "done", "dev", "T1", "--as", "alice")
    local r = woke(job, "task:T1=done")
    assert.equal("task T1 in 'dev' is done", F.lines(r.stdout)[2])
  end)

  it("wakes when a path lock is released", function()
    ok("lock", "dev", "src/a.c", "--as", "alice")
    local job = start{ "dev", "--as", "bob", "--for", "lock:src/a.c=free", "--timeout", "30" }
    ok("unlock", "dev", "src/a.c", "--as", "alice")
    local r = woke(job, "lock:src/a.c=free")
    assert.equal("lock: src/a.c in 'dev' is free", F.lines(r.stdout)[2])
  end)

  it("wakes when every addressee acked a message", function()
    local seq = F.post(root, "dev", "alice", "please ack", "x", "--to", "bob")
    local job = start{ "dev", "--as", "alice", "--for", "receipt:" .. seq .. "=acked", "--timeout", "30" }
    ok("ack", "dev", tostring(seq), "--as", "bob")
    local r = woke(job, "receipt:" .. seq .. "=acked")
    assert.equal("receipt: #" .. seq .. " in 'dev' acked by bob", F.lines(r.stdout)[2])
  end)

  it("wakes on a message in another channel", function()
    local job = start{ "dev", "--as", "bob", "--for", "task:T1=done", "--for", "other:message",
                       "--timeout", "30" }
    F.post(root, "other", "carol", "over here", "x")
    local r = woke(job, "other:message")
    assert.truthy(r.stdout:find("channel: other", 1, true), F.show(r.stdout))
    assert.equal(1, W.cursor(root, "other", "bob"))
  end)

  it("wakes on a task of another channel", function()
    ok("task", "create", "other", "X", "--title", "x", "--from", "carol")
    ok("task", "claim", "other", "X", "--as", "carol")
    local job = start{ "dev", "--as", "bob", "--for", "other:task:X=done", "--timeout", "30" }
    ok("task", "done", "other", "X", "--as", "carol")
    woke(job, "other:task:X=done")
  end)

  it("prints the first condition that holds, in the order given, and --json", function()
    ok("task", "update", "dev", "T1", "--as", "alice", "--status", "cancelled")
    local r = ok("wait", "dev", "--as", "bob", "--for", "lock:src=free", "--for", "task:T1=cancelled",
                 "--timeout", "0", "--json")
    local obj = require("agentchat.json").loads(r.stdout)
    assert.same({ woke = true, condition = "lock:src=free", index = 1, kind = "lock", channel = "dev",
                  path = "src" }, obj)
    r = ok("wait", "dev", "--as", "bob", "--for", "task:T1=cancelled", "--for", "lock:src=free",
           "--timeout", "0", "--json")
    obj = require("agentchat.json").loads(r.stdout)
    assert.equal("task:T1=cancelled", obj.condition)
    assert.equal("cancelled", obj.task.status)
  end)

  it("uses no CPU while it waits", function()
    ok("lock", "dev", "src/a.c", "--as", "alice")
    -- --kind message: the lock's audit message does not count as one.
    local job = start{ "dev", "--as", "bob", "--kind", "message", "--for", "message", "--for", "task:T1=done",
                       "--for", "lock:src/a.c=free", "--for", "other:message", "--timeout", "60" }
    local before = F.cpu_ticks(job.pid)
    F.sleep(1.5)
    local after = F.cpu_ticks(job.pid)
    ok("unlock", "dev", "src/a.c", "--as", "alice")
    woke(job, "lock:src/a.c=free")
    if not before or not after then
      pending("no /proc/PID/stat here")
      return
    end
    assert.is_true(after - before <= 2, "used " .. (after - before) .. " clock ticks in 1.5 s of waiting")
  end)
end)

describe("wait --resume", function()
  local root

  local function run(...)
    return ac({ "--root", root, ... })
  end

  local function token_of(r)
    assert.equal(2, r.code, F.describe(r))
    local t = r.stdout:match("^resume: (%S+)\n$")
    assert.truthy(t, F.show(r.stdout))
    return t
  end

  before_each(function()
    root = F.new_root()
    F.init(root, "dev")
    F.init(root, "other")
  end)

  it("prints a token on timeout, and the resumed wait returns a post made in between", function()
    local r = run("wait", "dev", "--as", "bob", "--for", "message", "--for", "other:message", "--timeout", "0.2")
    assert.equal("(timeout after 0.2s: no condition held for bob in 'dev')\n", r.stderr)
    local token = token_of(r)
    -- Posted while nobody waits; another reader even moves bob's cursor.
    F.post(root, "other", "alice", "between slices", "x")
    assert.equal(0, run("read", "other", "--as", "bob").code)
    r = run("wait", "--resume", token, "--timeout", "5")
    assert.equal(0, r.code, F.describe(r))
    assert.equal("woke: other:message", F.lines(r.stdout)[1])
    assert.truthy(r.stdout:find("title: between slices", 1, true), F.show(r.stdout))
  end)

  it("times out again with a token that keeps the first starting point", function()
    local t1 = token_of(run("wait", "dev", "--as", "bob", "--for", "message", "--timeout", "0"))
    local t2 = token_of(run("wait", "--resume", t1, "--timeout", "0"))
    assert.equal(t1, t2)
    F.post(root, "dev", "alice", "late", "x")
    local r = run("wait", "dev", "--as", "bob", "--resume", t2, "--timeout", "5", "--json")
    assert.equal(0, r.code, F.describe(r))
    local obj = require("agentchat.json").loads(r.stdout)
    assert.equal("late", obj.messages[1].title)
  end)

  it("prints the token in --json on timeout", function()
    local r = run("wait", "dev", "--as", "bob", "--for", "message", "--timeout", "0", "--json")
    assert.equal(2, r.code, F.describe(r))
    local obj = require("agentchat.json").loads(r.stdout)
    assert.is_false(obj.woke)
    assert.truthy(obj.resume:match("^w1%."))
  end)
end)

describe("wait --for bad input", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "dev")
    ac({ "--root", root, "task", "create", "dev", "T1", "--title", "t", "--from", "alice" })
  end)

  local BAD = {
    { "bogus", "unknown condition" },
    { "task:T1=finished", "unknown task state 'finished'" },
    { "task:T1", "a task condition is task:ID=STATE" },
    { "lock:src=held", "a lock condition is lock:PATH=free" },
    { "receipt:x=acked", "a receipt condition is receipt:SEQ=acked|read" },
    { "receipt:3=seen", "unknown receipt state 'seen'" },
    { "../x:message", "unknown condition" },
    { "other:bogus", "unknown condition" },
  }
  for _, case in ipairs(BAD) do
    it("rejects --for " .. case[1] .. " with one line and changes nothing", function()
      local before = F.snapshot(root)
      local r = ac({ "--root", root, "wait", "dev", "--as", "bob", "--for", "message", "--for", case[1],
                     "--timeout", "5" })
      assert.equal(2, r.code, F.describe(r))
      assert.equal("", r.stdout)
      assert.is_nil(F.error_line(r.stderr))
      assert.truthy(r.stderr:find("^agent%-chat: WAIT_INVALID_CONDITION: invalid %-%-for condition"),
        F.show(r.stderr))
      assert.truthy(r.stderr:find(case[2], 1, true), F.show(r.stderr))
      assert.same({}, F.diff(before, F.snapshot(root)))
    end)
  end

  it("rejects a token it did not print, and --for with --resume", function()
    local r = ac({ "--root", root, "wait", "--resume", "w1.bm90IGpzb24=" })
    assert.equal(2, r.code, F.describe(r))
    assert.equal("agent-chat: WAIT_INVALID_RESUME: invalid resume token: it does not decode\n", r.stderr)
    r = ac({ "--root", root, "wait", "--resume", "w1.x", "--for", "message" })
    assert.equal(2, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr))
    assert.truthy(r.stderr:find("WAIT_INVALID_RESUME", 1, true))
  end)

  it("fails on a task that does not exist, before waiting", function()
    local r = ac({ "--root", root, "wait", "dev", "--as", "bob", "--for", "task:NOPE=done", "--timeout", "30" })
    assert.equal(2, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr))
    assert.truthy(r.stderr:find("TASK_NOT_FOUND", 1, true), F.show(r.stderr))
  end)

  it("keeps plain wait's usage error without channel or --as", function()
    local r = ac({ "--root", root, "wait" })
    assert.equal(2, r.code)
    assert.equal("agent-chat: USAGE: wait: the following arguments are required: channel, --as "
      .. "(see 'agent-chat wait -h')\n", r.stderr)
    r = ac({ "--root", root, "wait", "dev", "--for", "message" })
    assert.equal(2, r.code)
    assert.equal("agent-chat: USAGE: wait: the following arguments are required: --as "
      .. "(see 'agent-chat wait -h')\n", r.stderr)
  end)
end)

describe("ch:wait_any", function()
  it("returns the condition that holds, and the token on timeout", function()
    local root = F.new_root()
    F.init(root, "dev")
    local script = F.tmpdir() .. "/w.lua"
    F.write(script, [[
local ac = require "agentchat"
local ch = assert(ac.open():channel("dev"))
local r, msg, code, exit, token = ch:wait_any{ as = "bob", conditions = { "message" }, timeout = 0 }
assert(r == nil and code == "ETIMEDOUT" and exit == 2 and token:match("^w1%."), tostring(msg))
assert(ch:post{ from = "alice", title = "t", body = "b" })
r = assert(ch:wait_any{ resume = token, timeout = 5 })
print(r.kind, r.condition, r.index, #r.messages, ch:cursor("bob"))
local c, why, ccode = ac.parse_condition("lock:x=held")
print(c, ccode)
]])
    local r = ac({ "--root", root, "run", script })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("message\tmessage\t1\t1\t1\nnil\tWAIT_INVALID_CONDITION\n", r.stdout)
  end)
end)
