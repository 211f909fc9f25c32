-- Races on the task board (issue 3 acceptance; docs/format.md 2.4 "Leases", 3.6,
-- 4 "Advisory locks", "Sequence allocation"): processes started at once
-- (released together by a go-file barrier) on one channel.
--   * 16 claims of one open task: exactly one wins, 15 get LEASE_CONFLICT
--     naming the winner, one claim file that agrees with the record, one
--     lease.claimed message.
--   * claims racing a recover of an expired lease, and renews racing the
--     expiry of a short lease: whatever the order, the task record and the
--     claim file agree, `task show` works, no journal is left.
--   * 16 creates of 16 different tasks: all succeed, 16 task.created
--     messages with distinct seqs.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local T = require "tasksupport"
local json = require "agentchat.json"

local race = T.race

local new_channel = T.new_channel

local function read_json(path)
  local text = F.read(path)
  if not text then
    return nil
  end
  return assert(json.loads(text))
end

--- The claim files of task `id` in channel c.
local function claim_files(root, id)
  local out = {}
  for _, name in ipairs(F.lines(io.popen("ls -A " .. F.sh(root .. "/c/claims") .. " 2>/dev/null"):read("a"))) do
    if name:sub(1, #id + 1) == id .. "." then
      out[#out + 1] = name
    end
  end
  return out
end

local function audit(root, event)
  local snap = F.snapshot(root .. "/c")
  local out = {}
  for _, m in ipairs(T.messages(snap)) do
    local msg = assert(T.parse_message(m.text))
    if not event or msg.status == event then
      out[#out + 1] = msg
    end
  end
  return out
end

--- Assert the record of `id` and its claim (if any) agree, show works and
--- no journal or lock debris is left. Returns the record.
local function assert_consistent(root, id, ctx)
  ctx = ctx or ""
  local rec = read_json(root .. "/c/tasks/" .. id .. ".json")
  assert.is_table(rec, ctx)
  local files = claim_files(root, id)
  assert.is_nil(F.read(root .. "/c/claims/.lease-transaction.json"), ctx .. ": a journal is left")
  if rec.owner ~= json.null and rec.lease_expires_at ~= json.null then
    assert.same({ id .. "." .. rec.owner .. ".json" }, files, ctx)
    local claim = read_json(root .. "/c/claims/" .. files[1])
    assert.equal(rec.owner, claim.owner, ctx)
    assert.equal(rec.lease_expires_at, claim.lease_expires_at, ctx)
    assert.equal(id, claim.task_id, ctx)
    assert.equal("in_progress", rec.status, ctx)
  else
    assert.same({}, files, ctx)
    assert.equal(json.null, rec.lease_expires_at, ctx)
  end
  local r = T.run(root, { "task", "show", "c", id })
  assert.equal(0, r.code, F.describe(r))
  assert.truthy(r.stdout:find("\nowner: " .. (rec.owner == json.null and "-" or rec.owner) .. "\n", 1, true),
    F.describe(r))
  return rec
end

describe("16 processes claiming one open task at once", function()
  for round = 1, 3 do
    it("gives the lease to exactly one (round " .. round .. ")", function()
      local root = new_channel()
      T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "Contended" })
      local res = race(root, 16, function(i)
        return { "task", "claim", "c", "t1", "--as", "agent" .. i, "--lease", "600" }
      end)
      local winners, losers = {}, {}
      for i, r in ipairs(res) do
        if r.code == 0 then
          assert.equal("claimed task t1 [in_progress]\n", r.stdout)
          assert.equal("", r.stderr)
          winners[#winners + 1] = "agent" .. i
        else
          losers[#losers + 1] = r
        end
      end
      assert.equal(1, #winners, "winners: " .. table.concat(winners, ","))
      assert.equal(15, #losers)
      for _, r in ipairs(losers) do
        assert.equal(2, r.code, F.describe(r))
        assert.equal("", r.stdout)
        assert.equal("agent-chat: LEASE_CONFLICT: task t1 is leased by " .. winners[1] .. "\n", r.stderr)
      end
      local rec = assert_consistent(root, "t1", "after the claim race")
      assert.equal(winners[1], rec.owner)
      local claimed = audit(root, "lease.claimed")
      assert.equal(1, #claimed)
      assert.equal(winners[1], claimed[1].from)
      assert.equal(winners[1], claimed[1].body.lease_owner)
      assert.equal(rec.lease_expires_at, claimed[1].body.lease_expires_at)
      -- task.created + lease.claimed, nothing else
      assert.equal(2, #audit(root))
      assert.same({}, claim_files(root, "t9"))
    end)
  end

  it("holds with a lease that is renewed, released and claimed again under contention", function()
    local root = new_channel()
    T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "Busy" })
    T.must(root, { "task", "claim", "c", "t1", "--as", "agent1" })
    -- the holder renews and releases while 8 others keep claiming
    local res = race(root, 10, function(i)
      if i == 1 then
        return { "task", "renew", "c", "t1", "--as", "agent1" }
      elseif i == 2 then
        return { "task", "release", "c", "t1", "--as", "agent1" }
      end
      return { "task", "claim", "c", "t1", "--as", "agent" .. i }
    end)
    local claims = 0
    for i, r in ipairs(res) do
      if i >= 3 and r.code == 0 then
        claims = claims + 1
      end
      assert.is_true(r.code == 0 or r.code == 2, F.describe(r))
      assert.is_nil(F.crashed(r.stderr), F.describe(r))
      if r.code == 2 then
        assert.truthy(r.stderr:match("^agent%-chat: LEASE_[A-Z_]+: [^\n]+\n$"), F.describe(r))
      end
    end
    assert.equal(0, res[2].code, F.describe(res[2]))   -- the holder's release always works
    assert.is_true(claims <= 1, claims .. " claims won")
    local rec = assert_consistent(root, "t1", "after the mixed race")
    assert.equal(claims, #audit(root, "lease.claimed") - 1)
    if claims == 1 then
      assert.equal("in_progress", rec.status)
    else
      assert.equal("open", rec.status)
    end
  end)
end)

describe("a claim racing a recover of an expired lease", function()
  it("leaves the recovered lease and agreeing records, in every order (10 rounds)", function()
    for round = 1, 10 do
      local root = new_channel()
      T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "Stale" })
      T.must(root, { "task", "claim", "c", "t1", "--as", "alice", "--lease", "0.001" })
      F.sleep(0.01)
      local res = race(root, 4, function(i)
        if i == 1 then
          return { "task", "recover", "c", "t1", "--as", "bob", "--reason", "alice vanished" }
        elseif i == 2 then
          return { "task", "recover", "c", "t1", "--as", "dave", "--reason", "me too" }
        end
        return { "task", "claim", "c", "t1", "--as", "carol" .. i }
      end)
      local ctx = "round " .. round
      local recovered = {}
      for i = 1, 2 do
        if res[i].code == 0 then
          recovered[#recovered + 1] = i == 1 and "bob" or "dave"
          assert.equal("recovered task t1 [in_progress]\n", res[i].stdout)
        end
      end
      assert.equal(1, #recovered, ctx .. ": recoveries " .. table.concat(recovered, ","))
      local winner = recovered[1]
      local loser = res[winner == "bob" and 2 or 1]
      assert.equal(2, loser.code, F.describe(loser))
      assert.equal("agent-chat: LEASE_NOT_EXPIRED: lease for task t1 is still active\n", loser.stderr)
      for i = 3, 4 do
        local r = res[i]
        assert.equal(2, r.code, ctx .. ": a claim won over an expired lease: " .. F.describe(r))
        local ok = r.stderr
            == "agent-chat: LEASE_RECOVERY_REQUIRED: expired lease for task t1 requires explicit recovery\n"
          or r.stderr == "agent-chat: LEASE_CONFLICT: task t1 is leased by " .. winner .. "\n"
        assert.is_true(ok, ctx .. ": " .. F.describe(r))
      end
      local rec = assert_consistent(root, "t1", ctx)
      assert.equal(winner, rec.owner)
      local claim = read_json(root .. "/c/claims/t1." .. winner .. ".json")
      assert.equal("alice", claim.previous_owner)
      assert.equal(winner == "bob" and "alice vanished" or "me too", claim.recovery_reason)
      assert.equal(1, #audit(root, "lease.recovered"))
      assert.equal(1, #audit(root, "lease.claimed"))
    end
  end)
end)

describe("a renew racing the expiry of a short lease", function()
  it("either renews (record and claim move together) or requires recovery (nothing changes)", function()
    local renewed, refused = 0, 0
    for round = 1, 12 do
      local root = new_channel()
      T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "Short" })
      -- the go-file barrier opens ~0.2 s after this claim: leases of
      -- 0.17 .. 0.28 s expire just before or just after the renews run
      T.must(root, { "task", "claim", "c", "t1", "--as", "alice", "--lease", tostring(0.16 + round / 100) })
      local before = F.read(root .. "/c/tasks/t1.json")
      local claim_before = F.read(root .. "/c/claims/t1.alice.json")
      local res = race(root, 3, function()
        return { "task", "renew", "c", "t1", "--as", "alice", "--lease", "0.15" }
      end)
      local ok_count = 0
      for _, r in ipairs(res) do
        if r.code == 0 then
          ok_count = ok_count + 1
          assert.equal("renewed task t1 [in_progress]\n", r.stdout)
        else
          assert.equal(2, r.code, F.describe(r))
          assert.equal("agent-chat: LEASE_RECOVERY_REQUIRED: expired lease for task t1 requires explicit recovery\n",
            r.stderr)
        end
      end
      local rec = assert_consistent(root, "t1", "round " .. round)
      assert.equal("alice", rec.owner)
      if ok_count == 0 then
        refused = refused + 1
        assert.equal(before, F.read(root .. "/c/tasks/t1.json"))
        assert.equal(claim_before, F.read(root .. "/c/claims/t1.alice.json"))
      else
        renewed = renewed + 1
      end
      assert.equal(ok_count, #audit(root, "lease.renewed"))
      -- the expired lease is then recoverable, and consistent afterwards
      F.sleep(0.2)
      local r = T.run(root, { "task", "recover", "c", "t1", "--as", "bob", "--reason", "expired" })
      assert.equal(0, r.code, F.describe(r))
      assert.equal("bob", assert_consistent(root, "t1", "after recover").owner)
    end
    -- Not asserted: which side of the boundary each round fell on.
    io.stderr:write(string.format("# renew vs expiry: %d rounds renewed, %d refused\n", renewed, refused))
  end)

  it("a renew and a recover at the expiry never both win", function()
    for round = 1, 8 do
      local root = new_channel()
      T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "Edge" })
      T.must(root, { "task", "claim", "c", "t1", "--as", "alice", "--lease", tostring(0.18 + round / 100) })
      local res = race(root, 2, function(i)
        if i == 1 then
          return { "task", "renew", "c", "t1", "--as", "alice", "--lease", "60" }
        end
        return { "task", "recover", "c", "t1", "--as", "bob", "--reason", "timeout" }
      end)
      assert.is_false(res[1].code == 0 and res[2].code == 0, "both renew and recover succeeded")
      local rec = assert_consistent(root, "t1", "round " .. round)
      if res[2].code == 0 then
        assert.equal("bob", rec.owner)
      else
        assert.equal("alice", rec.owner)
      end
    end
  end)
end)

describe("16 processes creating 16 different tasks at once", function()
  it("all succeed, with 16 task.created messages and distinct seqs", function()
    local root = new_channel()
    local res = race(root, 16, function(i)
      return { "task", "create", "c", string.format("t%02d", i), "--from", "agent" .. i,
               "--title", "Task " .. i, "--acceptance", "done " .. i }
    end)
    for i, r in ipairs(res) do
      assert.equal(0, r.code, F.describe(r))
      assert.equal(string.format("created task t%02d [open]\n", i), r.stdout)
    end
    local created = audit(root, "task.created")
    assert.equal(16, #created)
    local seqs, ids = {}, {}
    for _, m in ipairs(created) do
      assert.is_nil(seqs[m.seq], "duplicate seq " .. m.seq)
      seqs[m.seq] = true
      ids[#ids + 1] = m.body.task_id
      assert.equal("agent" .. tonumber(m.body.task_id:sub(2)), m.from)
    end
    table.sort(ids)
    local want = {}
    for i = 1, 16 do
      want[i] = string.format("t%02d", i)
      assert.truthy(seqs[i], "seq " .. i .. " missing")
      local rec = read_json(root .. "/c/tasks/" .. want[i] .. ".json")
      assert.equal("Task " .. i, rec.title)
    end
    assert.same(want, ids)
    local list = T.run(root, { "task", "list", "c" })
    assert.equal(0, list.code, F.describe(list))
    assert.equal(17, #F.lines(list.stdout))
    local leftovers = {}
    for path in pairs(F.snapshot(root .. "/c")) do
      if path:match("%.tmp$") or path:match("^%.seqres") or path == "_seq.lock" then
        leftovers[#leftovers + 1] = path
      end
    end
    assert.same({}, leftovers)
  end)

  it("16 creates of the same id: one succeeds, 15 get TASK_ALREADY_EXISTS", function()
    local root = new_channel()
    local res = race(root, 16, function(i)
      return { "task", "create", "c", "same", "--from", "agent" .. i, "--title", "Mine " .. i }
    end)
    local won = {}
    for i, r in ipairs(res) do
      if r.code == 0 then
        won[#won + 1] = i
      else
        assert.equal(2, r.code, F.describe(r))
        assert.equal("agent-chat: TASK_ALREADY_EXISTS: task record already exists: same\n", r.stderr)
      end
    end
    assert.equal(1, #won)
    local rec = read_json(root .. "/c/tasks/same.json")
    assert.equal("Mine " .. won[1], rec.title)
    assert.equal(1, #audit(root, "task.created"))
  end)
end)
