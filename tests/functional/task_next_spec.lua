-- Capability work queues (issue 18; docs/tasks.md "Work queues"):
-- `task create --for-capability X` and `task next CH --as A [--capability
-- X] [--wait S]`.
--   * 32 processes race `task next` for 10 tasks needing `build`: exactly 10
--     claims, each task once, each by an agent that has `build`; the others
--     say "no ready task" with exit 3, and the 8 agents without `build`
--     claim nothing.
--   * which task is next: the oldest ready one (open, no holder, every
--     dependency done) that needs one of the agent's capabilities or none;
--     without --capability, the primitives of the agent's latest capability
--     event.
--   * --wait wakes when a task becomes ready (another agent finishes its
--     dependency), and gives up with exit 3 when none does.
--   * the record stays one the Python tool reads (its twelve fields; the
--     capability is an acceptance item), `task show` and `task list --json`
--     show it, and a bad capability name is one coded line with nothing
--     written.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local T = require "tasksupport"
local json = require "agentchat.json"

local new_channel = T.new_channel

local function record(root, id)
  return assert(json.loads(F.read(root .. "/c/tasks/" .. id .. ".json")))
end

local function claim_files(root)
  local out = {}
  for _, name in ipairs(F.lines(io.popen("ls -A " .. F.sh(root .. "/c/claims") .. " 2>/dev/null"):read("a"))) do
    if name:match("%.json$") then
      out[#out + 1] = name
    end
  end
  table.sort(out)
  return out
end

local function claimed_events(root)
  local n = 0
  for _, m in ipairs(T.messages(F.snapshot(root .. "/c"))) do
    local msg = assert(T.parse_message(m.text))
    if msg.status == "lease.claimed" then
      n = n + 1
    end
  end
  return n
end

describe("task next", function()
  it("32 racers for 10 tasks: 10 claims, each task once, none for an agent without the capability", function()
    local root = new_channel()
    for i = 1, 10 do
      T.must(root, { "task", "create", "c", string.format("q%02d", i), "--from", "lead", "--title", "job " .. i,
                     "--for-capability", "build" })
    end
    local seen, won = T.next_race(root)
    assert.are.equal(10, won)
    for i = 1, 10 do
      local id = string.format("q%02d", i)
      local rec = record(root, id)
      assert.are.equal("in_progress", rec.status)
      assert.are.equal(seen[id], rec.owner)
      local sys = require "agentchat.sys"
      assert.are.equal(600, sys.iso_epoch(rec.lease_expires_at) - sys.iso_epoch(rec.updated_at))
    end
    local files = claim_files(root)
    assert.are.equal(10, #files)
    for _, name in ipairs(files) do
      local id, owner = name:match("^(q%d%d)%.(.+)%.json$")
      assert.are.equal(seen[id], owner)
    end
    assert.are.equal(10, claimed_events(root))
    assert.is_nil(F.read(root .. "/c/claims/.lease-transaction.json"))
  end)

  it("takes the oldest ready task that needs one of the agent's capabilities, or none", function()
    local root = new_channel()
    T.must(root, { "task", "create", "c", "dep", "--from", "lead", "--title", "first" })
    T.must(root, { "task", "create", "c", "after-dep", "--from", "lead", "--title", "x", "--depends-on", "dep",
                   "--for-capability", "build" })
    T.must(root, { "task", "create", "c", "theirs", "--from", "lead", "--title", "x", "--owner", "zed",
                   "--for-capability", "build" })
    T.must(root, { "task", "create", "c", "review", "--from", "lead", "--title", "x",
                   "--for-capability", "review" })
    T.must(root, { "task", "create", "c", "build", "--from", "lead", "--title", "x",
                   "--for-capability", "build", "--for-capability", "ci" })
    -- dep (no capability: anyone) is the oldest ready one
    local r = T.run(root, { "task", "next", "c", "--as", "ann", "--capability", "build" })
    assert.are.same({ 0, "claimed task dep [in_progress]\n", "" }, { r.code, r.stdout, r.stderr })
    -- after-dep waits for dep, theirs is preassigned, review needs another capability
    r = T.run(root, { "task", "next", "c", "--as", "bob", "--capability", "ci" })
    assert.are.same({ 0, "claimed task build [in_progress]\n" }, { r.code, r.stdout })
    r = T.run(root, { "task", "next", "c", "--as", "bob", "--capability", "build" })
    assert.are.same({ 3, "no ready task for bob in 'c'\n", "" }, { r.code, r.stdout, r.stderr })
    -- an agent without capabilities takes only tasks that need none
    r = T.run(root, { "task", "next", "c", "--as", "cat" })
    assert.are.equal(3, r.code)
    T.must(root, { "task", "done", "c", "dep", "--as", "ann" })
    r = T.run(root, { "task", "next", "c", "--as", "bob", "--capability", "build" })
    assert.are.same({ 0, "claimed task after-dep [in_progress]\n" }, { r.code, r.stdout })
    -- the preassigned owner takes its own task
    r = T.run(root, { "task", "next", "c", "--as", "zed", "--capability", "build" })
    assert.are.same({ 0, "claimed task theirs [in_progress]\n" }, { r.code, r.stdout })
  end)

  it("without --capability uses the primitives of the agent's latest capability event", function()
    local root = new_channel()
    T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "x", "--for-capability", "leases" })
    T.must(root, { "event", "post", "c", "--from", "ann", "--type", "capability", "--harness", "h",
                   "--primitives", "leases" })
    T.must(root, { "event", "post", "c", "--from", "ann", "--type", "capability", "--harness", "h",
                   "--primitives", "messages" })
    T.must(root, { "event", "post", "c", "--from", "bob", "--type", "capability", "--harness", "h",
                   "--primitives", "messages,leases" })
    local r = T.run(root, { "task", "next", "c", "--as", "ann" })
    assert.are.equal(3, r.code)     -- ann's latest event no longer names leases
    r = T.run(root, { "task", "next", "c", "--as", "bob" })
    assert.are.same({ 0, "claimed task t1 [in_progress]\n" }, { r.code, r.stdout })
  end)

  it("--wait wakes when a task becomes ready, and gives up with exit 3", function()
    local root = new_channel()
    T.must(root, { "task", "create", "c", "first", "--from", "lead", "--title", "x", "--owner", "ann" })
    T.must(root, { "task", "claim", "c", "first", "--as", "ann" })
    T.must(root, { "task", "create", "c", "second", "--from", "lead", "--title", "x", "--depends-on", "first",
                   "--for-capability", "build" })
    local r = T.run(root, { "task", "next", "c", "--as", "bob", "--capability", "build", "--wait", "0.2" })
    assert.are.same({ 3, "no ready task for bob in 'c' after 0.2s\n", "" }, { r.code, r.stdout, r.stderr })
    r = F.background(root, "task next c --as bob --capability build --wait 25",
                     F.sh(F.bin) .. " task done c first --as ann >/dev/null", 1)
    assert.are.same({ 0, "claimed task second [in_progress]\n", "" }, { r.code, r.stdout, r.stderr })
  end)

  it("keeps a record the Python tool reads, and shows the capability", function()
    local root = new_channel()
    T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "x", "--acceptance", "tests pass",
                   "--for-capability", "build", "--for-capability", "build" })
    local rec = record(root, "t1")
    local keys = {}
    for k in pairs(rec) do
      keys[#keys + 1] = k
    end
    table.sort(keys)
    local twelve = {}
    for i, k in ipairs(T.TASK_FIELDS) do
      twelve[i] = k
    end
    table.sort(twelve)
    assert.are.same(twelve, keys)
    assert.are.same({ "tests pass", "for-capability: build" }, rec.acceptance)
    local r = T.must(root, { "task", "show", "c", "t1" })
    assert.is_truthy(r.stdout:find("\nacceptance: tests pass; for-capability: build\n", 1, true))
    assert.is_truthy(r.stdout:find("\nfor_capability: build\n$"))
    T.must(root, { "task", "create", "c", "t2", "--from", "lead", "--title", "y" })
    r = T.must(root, { "task", "show", "c", "t2" })
    assert.is_falsy(r.stdout:find("for_capability", 1, true))
    r = T.must(root, { "task", "list", "c", "--json" })
    local list = assert(json.loads(r.stdout))
    assert.are.same({ "t1", "t2" }, { list[1].id, list[2].id })
    assert.are.same({ "build" }, list[1].for_capability)
    assert.are.same({}, list[2].for_capability)
    assert.are.equal(json.null, list[2].owner)
  end)

  it("refuses a bad capability, actor, lease or wait with one coded line and writes nothing", function()
    local root = new_channel()
    local before = F.snapshot(root)
    local r = T.run(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "x",
                            "--for-capability", "a/b" })
    assert.are.same({ 2, "" }, { r.code, r.stdout })
    assert.are.equal("agent-chat: TASK_INVALID_CAPABILITY: capability must contain only letters, digits, "
      .. "'.', '_' or '-': 'a/b'\n", r.stderr)
    for _, argv in ipairs({ { "--as", "bob", "--capability", ".x" }, { "--as", "a/b" }, { "--as", "" },
                            { "--as", "bob", "--lease-seconds", "0" }, { "--as", "bob", "--wait", "-1" } }) do
      r = T.run(root, { "task", "next", "c", table.unpack(argv) })
      assert.are.same({ 2, "" }, { r.code, r.stdout }, table.concat(argv, " "))
      assert.is_nil(F.error_line(r.stderr))
    end
    assert.are.same({}, F.diff(before, F.snapshot(root)))
  end)
end)
