-- The watch examples (examples/watch-*.lua) run by `agent-chat watch`
-- against real temporary channels, asserting their effect on the store:
-- tasks assigned, leases and locks recovered with a notice, requests
-- acknowledged, state.md re-rendered. Set-up and inspection go through the
-- Lua API in this process; the examples run in the binary under test.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local W = require "watchsupport"
local ac = require "agentchat"

local EXAMPLES = H.repo .. "/examples/"

--- A fresh root with channel "dev": root path, channel (API).
local function channel()
  local path = F.new_root()
  local root = assert(ac.open(path))
  return path, assert(root:init("dev"))
end

--- Run an example once: `watch dev --as NAME --script examples/FILE --once ARGS...`.
local function once(root, name, file, ...)
  local r = F.run({ "--root", root, "watch", "dev", "--as", name, "--script", EXAMPLES .. file, "--once", ... })
  assert.is_nil(F.crashed(r.stderr), F.describe(r))
  assert.equal(0, r.code, F.describe(r))
  return r
end

local function owners(ch)
  local out = {}
  for _, t in ipairs(assert(ch:tasks())) do
    out[t.id] = t.owner or "-"
  end
  return out
end

--- Messages of the channel after seq `after`, optionally only from `from`.
local function messages(ch, after, from)
  local out = {}
  for _, m in ipairs(assert(ch:peek(10000)).messages) do
    if m.seq > (after or 0) and (from == nil or m.from == from) then
      out[#out + 1] = m
    end
  end
  return out
end

local function last_seq(ch)
  local all = assert(ch:peek(1)).messages
  return all[1] and all[1].seq or 0
end

local function status(ch, agent, value)
  assert(ch:event_post{ from = agent, harness = "test", type = "status", status = value })
end

describe("examples/watch-dispatcher.lua", function()
  local root, ch

  before_each(function()
    root, ch = channel()
    assert(ch:task_create{ id = "a", from = "lead", title = "Design" })
    assert(ch:task_create{ id = "b", from = "lead", title = "Build", depends_on = { "a" } })
    assert(ch:task_create{ id = "c", from = "lead", title = "Docs" })
    assert(ch:task_create{ id = "d", from = "lead", title = "Held", owner = "zed" })
    assert(ch:task_create{ id = "e", from = "lead", title = "Extra" })
  end)

  it("assigns ready tasks to idle agents, longest idle first, and tells them", function()
    status(ch, "carol", "idle")
    status(ch, "bob", "busy")
    status(ch, "alice", "idle")
    status(ch, "dave", "idle")
    status(ch, "dave", "blocked")
    local before = last_seq(ch)
    once(root, "dispatcher", "watch-dispatcher.lua")
    -- Ready by id: a, c, e (b waits for a, d has an owner); idle: carol, alice.
    assert.same({ a = "carol", b = "-", c = "alice", d = "zed", e = "-" }, owners(ch))
    local told = {}
    for _, m in ipairs(messages(ch, before, "dispatcher")) do
      if m.status == "assignment" then
        told[#told + 1] = m.to .. " " .. m.title
        assert.truthy(m.body:find("agent-chat task claim dev " .. m.title:match("%S+$"), 1, true), m.body)
      end
    end
    assert.same({ "carol assigned: a", "alice assigned: c" }, told)
  end)

  it("is idempotent: a second run assigns nothing more", function()
    status(ch, "alice", "idle")
    once(root, "dispatcher", "watch-dispatcher.lua")
    local after_first = last_seq(ch)
    once(root, "dispatcher", "watch-dispatcher.lua")
    assert.equal(after_first, last_seq(ch))
    assert.same({ a = "alice", b = "-", c = "-", d = "zed", e = "-" }, owners(ch))
  end)

  it("hands out the next task when a dependency is done and the agent is idle again", function()
    status(ch, "alice", "idle")
    once(root, "dispatcher", "watch-dispatcher.lua")
    assert.equal("alice", owners(ch).a)
    assert(ch:claim("a", { as = "alice" }))
    assert(ch:done("a", { as = "alice" }))
    status(ch, "alice", "idle")
    once(root, "dispatcher", "watch-dispatcher.lua")
    assert.equal("alice", owners(ch).b, "b is ready now and comes first by id")
  end)

  it("reacts while it runs: a new idle agent gets a task within moments", function()
    local job = W.spawn(root, { "dev", "--as", "dispatcher", "--script", EXAMPLES .. "watch-dispatcher.lua" })
    F.sleep(0.3)
    assert.same({ a = "-", b = "-", c = "-", d = "zed", e = "-" }, owners(ch))
    status(ch, "erin", "idle")
    -- The owner is set before the notice is posted and logged: wait for
    -- the log line, the last step, before interrupting.
    assert.truthy(W.eventually(function()
      return job:stderr():find("assigned a to erin\n", 1, true)
    end), "erin got no task")
    assert.equal("erin", owners(ch).a)
    job:signal("INT")
    local r = job:finish()
    assert.equal(130, r.code, F.show(r.stderr))
    assert.equal("agent-chat: watch: assigned a to erin\nagent-chat: cancelled by user\n", r.stderr)
  end)
end)

describe("examples/watch-lease-watchdog.lua", function()
  local root, ch

  before_each(function()
    root, ch = channel()
    assert(ch:task_create{ id = "t1", from = "lead", title = "One" })
    assert(ch:task_create{ id = "t2", from = "lead", title = "Two" })
  end)

  it("recovers an expired task lease with a reason, frees the task and posts a notice", function()
    assert(ch:claim("t1", { as = "bob", lease = 0.01 }))
    assert(ch:claim("t2", { as = "dave" }))
    F.sleep(0.1)
    local before = last_seq(ch)
    once(root, "watchdog", "watch-lease-watchdog.lua")
    local t1, t2 = assert(ch:task("t1")), assert(ch:task("t2"))
    assert.equal("open", t1.status)
    assert.is_nil(t1.owner)
    assert.equal("in_progress", t2.status)
    assert.equal("dave", t2.owner)
    local seen = {}
    for _, m in ipairs(messages(ch, before, "watchdog")) do
      seen[#seen + 1] = m.status
      if m.status == "lease.recovered" then
        assert.truthy(m.body:find('"previous_owner": "bob"', 1, true), m.body)
        assert.truthy(m.body:find('"recovery_reason": "lease of bob expired at ', 1, true), m.body)
      elseif m.status == "notice" then
        assert.equal("recovered task lease t1 from bob", m.title)
        assert.same({ "all" }, { m.to })
      end
    end
    assert.same({ "lease.recovered", "lease.released", "notice" }, seen)
  end)

  it("recovers and unlocks an expired path lock, keeps a live one, and posts a notice", function()
    local stale = assert(ch:lock({ "src" }, { as = "carol", lease = 0.01 }))
    local live = assert(ch:lock({ "docs" }, { as = "erin" }))
    F.sleep(0.1)
    local before = last_seq(ch)
    once(root, "watchdog", "watch-lease-watchdog.lua")
    local left = assert(ch:locks())
    assert.equal(1, #left)
    assert.equal(live.lock_id, left[1].lock_id)
    local seen = {}
    for _, m in ipairs(messages(ch, before, "watchdog")) do
      seen[#seen + 1] = m.status .. " " .. m.title
    end
    assert.same({ "path.lock.recovered path.lock.recovered " .. stale.lock_id,
                  "path.lock.unlocked path.lock.unlocked " .. stale.lock_id,
                  "notice recovered path lock src from carol" }, seen)
    -- Nothing is left to do: a second sweep writes nothing.
    local after = last_seq(ch)
    once(root, "watchdog", "watch-lease-watchdog.lua")
    assert.equal(after, last_seq(ch))
  end)

  it("releases a lease it holds itself (a sweep interrupted between recover and release)", function()
    assert(ch:claim("t1", { as = "bob", lease = 0.01 }))
    F.sleep(0.1)
    assert(ch:recover("t1", { as = "watchdog", reason = "half done" }))
    once(root, "watchdog", "watch-lease-watchdog.lua")
    local t1 = assert(ch:task("t1"))
    assert.equal("open", t1.status)
    assert.is_nil(t1.owner)
  end)

  it("sweeps every --interval while it runs", function()
    local job = W.spawn(root, { "dev", "--as", "watchdog", "--script", EXAMPLES .. "watch-lease-watchdog.lua",
                                "--interval", "0.2" })
    F.sleep(0.3)
    assert(ch:claim("t1", { as = "bob", lease = 0.3 }))
    -- The notice is the sweep's last step: wait for it, not for the task.
    assert.truthy(W.eventually(function()
      return #messages(ch, 0, "watchdog") >= 3
    end), "the expired lease was not recovered")
    assert.equal("open", assert(ch:task("t1")).status)
    job:signal("TERM")
    local r = job:finish()
    assert.equal(143, r.code, F.show(r.stderr))
    assert.equal(1, #messages(ch, 0, "watchdog") - 2, "one notice besides the two audits")
  end)
end)

describe("examples/watch-auto-responder.lua", function()
  local root, ch

  before_each(function()
    root, ch = channel()
    assert(ch:post{ from = "alice", title = "Proposal: split the parser", body = "x" })
    assert(ch:post{ from = "bob", status = "review-request", title = "PR 12", body = "x" })
    assert(ch:post{ from = "bob", title = "lunch?", body = "x" })
    assert(ch:post{ from = "carol", title = "[Review-Request] docs", body = "x", to = "reviewer" })
    assert(ch:post{ from = "dave", title = "proposal pending", body = "not a request" })
    assert(ch:post{ from = "erin", status = "plan-approval", title = "plan", body = "x" })
  end)

  local function acks()
    local out = {}
    for _, m in ipairs(messages(ch, 0, "reviewer")) do
      out[#out + 1] = string.format("%s %s %s %s", m.to, m.reply_to, m.status, m.title)
    end
    return out
  end

  it("acknowledges every proposal and review request, to its sender, as a reply", function()
    once(root, "reviewer", "watch-auto-responder.lua")
    assert.same({ "alice 1 ack ack: Proposal: split the parser", "bob 2 ack ack: PR 12",
                  "carol 4 ack ack: [Review-Request] docs" }, acks())
    local first = messages(ch, 0, "reviewer")[1]
    assert.truthy(first.body:find("Received your proposal #1", 1, true), first.body)
  end)

  it("answers a request once even when it is delivered again", function()
    once(root, "reviewer", "watch-auto-responder.lua")
    assert(ch:set_cursor("reviewer", 0))
    once(root, "reviewer", "watch-auto-responder.lua")
    assert.equal(3, #acks())
  end)

  it("takes other request types from --arg", function()
    once(root, "reviewer", "watch-auto-responder.lua", "--arg", "plan-approval")
    assert.same({ "erin 6 ack ack: plan" }, acks())
  end)
end)

describe("examples/watch-state-refresher.lua", function()
  local root, ch

  before_each(function()
    root, ch = channel()
    assert(ch:post{ from = "alice", title = "Decision: use C", body = "fast" })
    assert(ch:task_create{ id = "t1", from = "alice", title = "Parser" })
  end)

  local function state_md()
    return F.read(root .. "/dev/state.md")
  end

  -- state.md less its generation time, which differs between renderings.
  local function without_time(text)
    return (text or ""):gsub("[Gg]enerated[^\n]*", "")
  end

  it("renders state.md as `state` shows it, without posting anything", function()
    local before = last_seq(ch)
    once(root, "state-bot", "watch-state-refresher.lua")
    assert.equal(before, last_seq(ch), "audit = false: no state.compacted message")
    local r = F.run({ "--root", root, "state", "dev" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(without_time(r.stdout), without_time(state_md()))
    assert.truthy(state_md():find("use C", 1, true))
  end)

  it("re-renders state.md after new messages while it runs", function()
    local job = W.spawn(root, { "dev", "--as", "state-bot", "--script", EXAMPLES .. "watch-state-refresher.lua" })
    assert.truthy(W.eventually(function()
      return state_md()
    end), "no state.md at start")
    assert.falsy(state_md():find("use Lua for policy", 1, true))
    assert(ch:post{ from = "bob", title = "Decision: use Lua for policy", body = "scripts" })
    assert.truthy(W.eventually(function()
      return state_md():find("use Lua for policy", 1, true)
    end), "state.md was not re-rendered")
    assert(ch:task_create{ id = "t2", from = "bob", title = "Lexer" })
    assert.truthy(W.eventually(function()
      return state_md():find("Lexer", 1, true)
    end), "a task change did not re-render state.md")
    job:signal("INT")
    assert.equal(130, job:finish().code)
    for _, m in ipairs(messages(ch, 0)) do
      assert.not_equal("state.compacted", m.status)
    end
  end)

  it("renders with a user template given by --arg", function()
    once(root, "state-bot", "watch-state-refresher.lua", "--arg", EXAMPLES .. "state-brief.lua")
    assert.truthy(state_md():find("^#dev %(last #%d+%)"), state_md())
  end)
end)
