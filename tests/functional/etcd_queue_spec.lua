-- Issue 18 on the etcd store (docs/tasks.md "Work queues", docs/doctor.md):
-- `task next` and `doctor` use the store interface alone, so they behave on
-- etcd as on the folder.
--   * 32 processes race `task next` for 10 tasks needing `build`: exactly 10
--     claims, each task once, each by an agent that has `build`, nothing
--     left pending;
--   * --wait wakes on the etcd watch when another agent finishes the
--     dependency;
--   * doctor prints on etcd what it prints on the folder (a two-agent cycle
--     through a request and a lock, then nothing once it is answered).
-- Runs under tests/etcd/with-cluster (tests/run-one), SKIP without etcd.
local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
local F = E.F
if not E.endpoints then
  return E.skip(describe, pending)
end
local T = require "tasksupport"
local json = require "agentchat.json"

local function must(store, root, argv)
  local r = E.ac(store, root, argv)
  assert(r.code == 0, F.describe(r))
  return r
end

describe("the etcd store: task next and doctor", function()
  it("32 racers for 10 tasks: 10 claims, each task once, none for an agent without the capability", function()
    local store, root = E.store(), F.new_root()
    must(store, root, { "init", "c" })
    for i = 1, 10 do
      must(store, root, { "task", "create", "c", string.format("q%02d", i), "--from", "lead", "--title", "x",
                          "--for-capability", "build" })
    end
    local seen, won = T.next_race(root, { "--store", store })
    assert.are.equal(10, won)
    local list = assert(json.loads(must(store, root, { "task", "list", "c", "--json" }).stdout))
    assert.are.equal(10, #list)
    for _, t in ipairs(list) do
      assert.are.same({ "in_progress", seen[t.id] }, { t.status, t.owner })
    end
    local r = E.ac(store, root, { "task", "recover-pending", "c", "--as", "ops" })
    assert.are.equal("agent-chat: LEASE_TRANSACTION_NOT_FOUND: no pending lease transaction exists\n", r.stderr)
  end)

  it("--wait wakes when another agent finishes the dependency", function()
    local store, root = E.store(), F.new_root()
    must(store, root, { "init", "c" })
    must(store, root, { "task", "create", "c", "first", "--from", "lead", "--title", "x", "--owner", "ann" })
    must(store, root, { "task", "claim", "c", "first", "--as", "ann" })
    must(store, root, { "task", "create", "c", "second", "--from", "lead", "--title", "x", "--depends-on", "first",
                        "--for-capability", "build" })
    local r = F.background(root, "--store " .. F.sh(store) .. " task next c --as bob --capability build --wait 25",
                           F.sh(F.bin) .. " --store " .. F.sh(store) .. " task done c first --as ann >/dev/null", 1)
    assert.are.same({ 0, "claimed task second [in_progress]\n", "" }, { r.code, r.stdout, r.stderr })
  end)

  it("doctor prints what it prints on the folder", function()
    local folder, etcd = E.both({
      { "init", "c" },
      { "lock", "c", "src", "--as", "alice" },
      { "request", "c", "--from", "alice", "--to", "bob", "--type", "review_request", "--request-id", "r7",
        "--no-wait" },
      { "task", "create", "c", "fix", "--from", "lead", "--title", "x", "--owner", "bob",
        "--files-hint", "src/app.c" },
      { "task", "block", "c", "fix", "--as", "bob" },
      { "doctor", "c" },
      { "doctor", "c", "--json" },
      { "respond", "c", "--request", "r7", "--from", "bob", "--reject" },
      { "doctor", "c" },
    })
    for i = 1, #folder do
      assert.are.same(folder[i], etcd[i])
    end
    for _, i in ipairs({ 1, 2, 3, 4, 5, 8, 9 }) do
      assert.are.equal(0, folder[i].code, folder[i].argv .. ": " .. folder[i].stderr)
    end
    assert.are.equal(1, folder[6].code)
    assert.is_truthy(folder[6].stdout:find("^cycle: alice %-> bob %-> alice\n"), folder[6].stdout)
    assert.are.equal("", folder[9].stdout)
  end)
end)
