-- Lease journal variants (claims/.lease-transaction.json, docs/format.md 3.6), as
-- the Python tool reads and resolves them: legacy version-1 markers (no
-- transaction id, no task_after, maybe no phase), the order of the checks
-- on malformed journals (what every lease command says, and what
-- recover-pending says after it), a published journal that disagrees with
-- the records, the commands that look up their task before the journal,
-- the code of a failed audit post, and which lease rule speaks first when
-- a lease is both expired and held by someone else. Each refusal is one coded line,
-- exit 2, and changes nothing under the root.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local T = require "tasksupport"
local json = require "agentchat.json"

local FAR = "2099-01-01T00:05:00.000000+00:00"
local STAMP = "2030-01-01T00:00:00.000000+00:00"
local TXID = "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
local J = "/c/claims/.lease-transaction.json"
local PENDING = "a previous lease mutation needs explicit recovery"

--- A channel c with t1 (open, bytes BEFORE) and bob's claim of it as it
--- would be after the claim (task AFTER, claim CLAIM); the journal is
--- written by the case.
local BEFORE = T.record{ id = "t1", channel = "c", title = "One" }
local AFTER = T.record{ id = "t1", channel = "c", title = "One", status = "in_progress", owner = "bob",
  lease_expires_at = FAR, updated_at = STAMP }
local CLAIM = T.claim{ task_id = "t1", channel = "c", owner = "bob", lease_expires_at = FAR,
  claimed_at = STAMP, updated_at = STAMP }

local function board(task_bytes, with_claim)
  local root = T.scratch() .. "/root"
  T.must(root, { "init", "c" })
  assert(os.execute("mkdir " .. H.sh(root .. "/c/tasks") .. " " .. H.sh(root .. "/c/claims")))
  F.write(root .. "/c/tasks/t1.json", task_bytes)
  if with_claim then
    F.write(root .. "/c/claims/t1.bob.json", CLAIM)
  end
  T.must(root, { "task", "list", "c" })            -- makes _tasks.lock
  return root
end

--- The journal text: a legacy v1 marker of bob's claim (no transaction
--- id, no phase, no task_after) with `over` merged (json.null removes).
local function marker(over)
  local j = { version = 1, task_id = "t1", task_file = "tasks/t1.json", task_before = T.b64encode(BEFORE),
    claim_changes = json.array{ { file = "t1.bob.json", previous = json.null, next = T.b64encode(CLAIM) } },
    event = "lease.claimed", details = { lease_expires_at = FAR, lease_owner = "bob" } }
  for k, v in pairs(over or {}) do
    if v == json.null then
      j[k] = nil
    else
      j[k] = v
    end
  end
  return json.dumps(j, { indent = 2, sort_keys = true, ensure_ascii = false }) .. "\n"
end

local function refused(root, argv, code, text)
  local before = F.snapshot(root)
  local r = T.run(root, argv)
  assert.is_nil(F.crashed(r.stderr), F.describe(r))
  assert.equal(2, r.code, F.describe(r))
  assert.equal("", r.stdout, F.describe(r))
  assert.equal("agent-chat: " .. code .. ": " .. text .. "\n", r.stderr)
  assert.same({}, F.diff(before, F.snapshot(root)), F.describe(r))
end

local LEASE_COMMANDS = {
  { "task", "claim", "c", "t1", "--as", "carol" },
  { "task", "renew", "c", "t1", "--as", "bob" },
  { "task", "release", "c", "t1", "--as", "bob" },
  { "task", "done", "c", "t1", "--as", "bob" },
  { "task", "block", "c", "t1", "--as", "bob" },
  { "task", "recover", "c", "t1", "--as", "carol", "--reason", "stale" },
  { "task", "update", "c", "t1", "--as", "bob", "--title", "x" },
}

local RECOVER = { "task", "recover-pending", "c", "--as", "ops" }
local function resolve(how)
  return { "task", "recover-pending", "c", "--as", "ops", "--resolve-publication", how }
end

--- The last audit message of channel c: its frontmatter and JSON body.
local function last_audit(root)
  local msgs = T.messages(F.snapshot(root .. "/c"))
  return assert(T.parse_message(msgs[#msgs].text))
end

--- The journal is gone, and the last audit message reports its recovery.
local function resolved(root, status, how)
  assert.is_nil(F.read(root .. J))
  local m = last_audit(root)
  assert.equal(status, m.status)
  assert.equal("ops", m.from)
  assert.equal(how, m.body.transaction_recovery)
  assert.equal("lease.claimed", m.body.transaction_event)
  assert.equal("t1", m.body.transaction_task_id)
  assert.same({}, m.body.changed_fields)
end

describe("a legacy version-1 lease marker", function()
  it("in phase applied without a transaction id fails closed until the operator resolves it", function()
    local root = board(AFTER, true)
    F.write(root .. J, marker{ phase = "applied" })
    for _, argv in ipairs(LEASE_COMMANDS) do
      refused(root, argv, "LEASE_TRANSACTION_PENDING", PENDING)
    end
    refused(root, RECOVER, "LEASE_TRANSACTION_PUBLICATION_UNKNOWN",
      "legacy applied transaction publication state is unknown; rerun with explicit publication resolution")
  end)

  it("--resolve-publication rollback restores task_before and the previous claims", function()
    local root = board(AFTER, true)
    F.write(root .. J, marker{ phase = "applied" })
    T.must(root, resolve("rollback"))
    assert.equal(BEFORE, F.read(root .. "/c/tasks/t1.json"))
    assert.is_nil(F.read(root .. "/c/claims/t1.bob.json"))
    resolved(root, "lease.transaction.recovered", "rollback")
    T.must(root, { "task", "claim", "c", "t1", "--as", "carol" })
  end)

  -- A legacy marker has no task_after: "published" means the task is as
  -- it was (task_before) and the claims are the next payloads.
  it("--resolve-publication published accepts the records as they are, checked", function()
    local root = board(BEFORE, true)
    F.write(root .. J, marker{ phase = "applied" })
    T.must(root, resolve("published"))
    assert.equal(BEFORE, F.read(root .. "/c/tasks/t1.json"))
    assert.equal(CLAIM, F.read(root .. "/c/claims/t1.bob.json"))
    resolved(root, "lease.transaction.cleaned", "cleanup")

    root = board(BEFORE, false)
    F.write(root .. J, marker{ phase = "applied" })
    refused(root, resolve("published"), "LEASE_TRANSACTION_INVALID", "published transaction is missing its claim")
    root = board(AFTER, true)
    F.write(root .. J, marker{ phase = "applied" })
    refused(root, resolve("published"), "LEASE_TRANSACTION_INVALID",
      "published transaction task does not match task_after")
  end)

  it("without a phase is a prepared one: rolled back without a resolution", function()
    local root = board(AFTER, true)
    F.write(root .. J, marker())
    refused(root, resolve("published"), "LEASE_TRANSACTION_INVALID",
      "publication resolution applies only to applied transactions")
    T.must(root, RECOVER)
    assert.equal(BEFORE, F.read(root .. "/c/tasks/t1.json"))
    assert.is_nil(F.read(root .. "/c/claims/t1.bob.json"))
  end)

  it("with a transaction id is decided by its audit message, like version 2", function()
    local root = board(AFTER, true)
    F.write(root .. J, marker{ phase = "applied", transaction_id = TXID, task_after = T.b64encode(AFTER) })
    F.write(root .. "/c/0001-bob-lease-claimed-t1.md", "---\nseq: 1\nfrom: bob\nto: all\nchannel: c\n"
      .. "ts: 2030-01-01T00:00:00+00:00\nstatus: lease.claimed\ntitle: lease.claimed t1\n---\n"
      .. '{\n  "transaction_id": "' .. TXID .. '"\n}\n')
    T.must(root, RECOVER)
    assert.equal(AFTER, F.read(root .. "/c/tasks/t1.json"))
    assert.equal("lease.transaction.cleaned", last_audit(root).status)
  end)

  it("with an unknown phase is refused by recover-pending only", function()
    local root = board(AFTER, true)
    F.write(root .. J, marker{ phase = "exploded" })
    for _, argv in ipairs(LEASE_COMMANDS) do
      refused(root, argv, "LEASE_TRANSACTION_PENDING", PENDING)
    end
    refused(root, RECOVER, "LEASE_TRANSACTION_INVALID", "unsupported transaction phase: 'exploded'")
  end)
end)

describe("the order of the checks on a malformed lease journal", function()
  -- { journal text, message of every command (nil: PENDING), message of recover-pending }
  local CASES = {
    { '{"version": "1"}', "transaction journal has an unsupported shape" },
    { '{"version": false}', "transaction journal has an unsupported shape" },
    { '{"version": 2.0, "phase": "prepared"}', "transaction journal is missing transaction_id" },
    { '{"version": 2, "transaction_id": "", "phase": "prepared"}',
      "transaction journal is missing transaction_id" },
    { '{"version": 2, "transaction_id": "x", "phase": "done"}',
      "version 2 transaction journal requires an explicit valid phase" },
    { '{"version": 2, "transaction_id": "x"}',
      "version 2 transaction journal requires an explicit valid phase" },
    { '{"version": 1}', "transaction journal is missing task_file" },
    { '{"version": true, "task_file": 1}', "transaction journal is missing task_before" },
    { '{"version": 1, "task_file": 1, "task_before": 1}', "transaction journal is missing claim_changes" },
    { '{"version": 1, "task_file": 1, "task_before": 1, "claim_changes": []}',
      "transaction journal is missing event" },
    { '{"version": 1, "task_file": 1, "task_before": 1, "claim_changes": {}, "event": 1}',
      "transaction journal claim_changes must be an array" },
    -- readable: the other commands say PENDING, recover-pending the rest
    { '{"version": 1, "task_file": 1, "task_before": 1, "claim_changes": [], "event": 1}', nil,
      "transaction journal has an invalid task_file" },
    { marker{ task_file = "claims/t1.json" }, nil,
      "transaction journal task path outside tasks layout: claims/t1.json" },
    { marker{ task_file = "tasks/.json" }, nil, "task_id must be a safe identity", "LEASE_INVALID_TASK_ID" },
    { marker{ task_id = "t2" }, nil, "transaction task_id does not match task_file stem" },
    { marker{ task_before = 5 }, nil, "transaction journal bytes must be base64 text" },
    { marker{ task_before = "QUJ" }, nil, "transaction journal bytes are not valid base64" },
    { marker{ task_before = json.null }, nil, "transaction journal is missing task_before", nil, true },
    { marker{ task_before = T.b64encode("{") }, nil,
      "transaction journal task_before is not valid JSON: Expecting property name enclosed in double quotes:"
        .. " line 1 column 2 (char 1)" },
    { marker{ task_before = T.b64encode('{"id": "t2"}') }, nil,
      "transaction journal task_before id does not match task record" },
    { marker{ task_before = T.b64encode('{"id": "t1"}') }, nil, "required task field is missing",
      "TASK_REQUIRED_FIELD_MISSING" },
    { marker{ version = 2, phase = "prepared", transaction_id = TXID }, nil,
      "transaction journal has no task_after rollback bytes" },
    { marker{ claim_changes = json.array{ "x" } }, nil, "transaction journal claim change is malformed" },
    { marker{ claim_changes = json.array{ { file = "t1.bob.json" } } }, nil,
      "transaction journal claim change requires previous and next payloads" },
    { marker{ claim_changes = json.array{ { file = 7, previous = json.null, next = json.null } } }, nil,
      "claim change filename outside claims layout: 7" },
    { marker{ claim_changes = json.array{ { file = "t2.bob.json", previous = json.null, next = json.null } } },
      nil, "claim change filename does not belong to task: 't2.bob.json'" },
    { marker{ claim_changes = json.array{ { file = "t1.b b.json", previous = json.null, next = json.null } } },
      nil, "owner must be a safe identity", "LEASE_INVALID_OWNER" },
    { marker{ claim_changes = json.array{ { file = "t1.bob.json", previous = json.null, next = json.null } } },
      nil, "claim change must include previous or next payload" },
    { marker{ claim_changes = json.array{ { file = "t1.bob.json", previous = json.null,
      next = T.b64encode("[]") } } }, nil, "lease record must be a JSON object", "LEASE_INVALID_RECORD" },
    { marker{ claim_changes = json.array{ { file = "t1.eve.json", previous = json.null,
      next = T.b64encode(CLAIM) } } }, nil, "claim next payload does not match its journal filename" },
    { marker{ claim_changes = json.array{ { file = "t1.bob.json", previous = T.b64encode(CLAIM),
      next = json.null } } }, nil, "previous claim exists without task_before lease metadata" },
    { marker{ task_before = T.b64encode(AFTER) }, nil, "task_before lease metadata has no previous claim" },
    { marker{ version = 2, phase = "applied", transaction_id = TXID, task_after = T.b64encode(AFTER),
      claim_changes = json.array{} }, nil, "task_after retains lease metadata without a next claim" },
    { marker{ version = 2, phase = "applied", transaction_id = TXID, task_after = T.b64encode(AFTER),
      claim_changes = json.array{ { file = "t1.bob.json", previous = json.null, next = T.b64encode((CLAIM:gsub(
        "2099%-01%-01T00:05", "2099-01-01T00:06"))) } } }, nil,
      "task_after lease metadata does not match next claim" },
  }

  for i, case in ipairs(CASES) do
    local text, every, rp, rp_code = case[1], case[2], case[3], case[4]
    it("case " .. i .. ": " .. (every or rp), function()
      local root = board(AFTER, true)
      F.write(root .. J, text)
      for _, argv in ipairs(LEASE_COMMANDS) do
        if every then
          refused(root, argv, "LEASE_TRANSACTION_INVALID", every)
        elseif case[5] then
          refused(root, argv, "LEASE_TRANSACTION_INVALID", rp)
        else
          refused(root, argv, "LEASE_TRANSACTION_PENDING", PENDING)
        end
      end
      for _, argv in ipairs({ RECOVER, resolve("rollback"), resolve("published") }) do
        refused(root, argv, every and "LEASE_TRANSACTION_INVALID" or rp_code or "LEASE_TRANSACTION_INVALID",
          every or rp)
      end
    end)
  end

  it("task lookups come before the journal; show, list and create never read it", function()
    local root = board(AFTER, true)
    F.write(root .. J, "not json\n")
    refused(root, { "task", "claim", "c", "nope", "--as", "carol" }, "TASK_NOT_FOUND",
      "task record does not exist: nope")
    refused(root, { "task", "update", "c", "nope", "--as", "carol", "--title", "x" }, "TASK_NOT_FOUND",
      "task record does not exist: nope")
    refused(root, { "task", "recover", "c", "bad id", "--as", "carol", "--reason", "r" }, "TASK_INVALID_ID",
      "unsafe task id: 'bad id'")
    refused(root, { "task", "renew", "c", "ünï", "--as", "carol" }, "TASK_NOT_FOUND",
      "task record does not exist: ünï")
    refused(root, { "task", "claim", "c", "t1", "--as", "bad owner" }, "LEASE_INVALID_OWNER",
      "owner must be a safe identity")
    refused(root, { "task", "recover", "c", "t1", "--as", "carol", "--reason", " " }, "LEASE_INVALID_REASON",
      "recovery reason must not be empty")
    refused(root, { "task", "update", "c", "t1", "--as", "carol" }, "TASK_INVALID_UPDATE",
      "task update requires at least one field")
    refused(root, { "task", "claim", "c", "t1", "--as", "carol", "--ttl", "0" }, "LEASE_TRANSACTION_INVALID",
      "could not read transaction journal: Expecting value: line 1 column 1 (char 0)")
    T.must(root, { "task", "show", "c", "t1" })
    T.must(root, { "task", "list", "c" })
    T.must(root, { "task", "create", "c", "t2", "--from", "lead", "--title", "two" })
  end)
end)

describe("a published lease journal that disagrees with the records", function()
  local function published(root)
    F.write(root .. J, marker{ version = 2, phase = "published", transaction_id = TXID,
      task_after = T.b64encode(AFTER) })
  end

  it("is refused and stays; a resolution is not allowed for it", function()
    local root = board(BEFORE, true)
    published(root)
    refused(root, RECOVER, "LEASE_TRANSACTION_INVALID", "published transaction task does not match task_after")
    refused(root, resolve("rollback"), "LEASE_TRANSACTION_INVALID",
      "publication resolution applies only to applied transactions")
    -- the same task with other bytes (key order, spacing) is the same task
    root = board(json.dumps(json.loads(AFTER)), true)
    published(root)
    T.must(root, RECOVER)
    assert.equal("lease.transaction.cleaned", last_audit(root).status)
  end)

  it("checks the claims too: a removed one kept, a next one missing or different", function()
    local root = board(AFTER, false)
    published(root)
    refused(root, RECOVER, "LEASE_TRANSACTION_INVALID", "published transaction is missing its claim")
    F.write(root .. "/c/claims/t1.bob.json", (CLAIM:gsub("2030%-01%-01T00:00:00%.000000", "2030-01-02T00:00:00.000000")))
    refused(root, RECOVER, "LEASE_TRANSACTION_INVALID", "published transaction claim does not match next payload")
    F.write(root .. "/c/claims/t1.bob.json", CLAIM)
    T.must(root, RECOVER)
  end)
end)

describe("an audit post that fails", function()
  it("undoes a lease change and says TASK_AUDIT_FAILED, as the Python tool does", function()
    local root = board(BEFORE, false)
    local before = F.snapshot(root)
    local r = T.run(root, { "task", "claim", "c", "t1", "--as", "bob" }, { AGENT_CHAT_FAULT = "seq.lock" })
    assert.equal(2, r.code, F.describe(r))
    assert.equal("agent-chat: TASK_AUDIT_FAILED: task record changed but audit event could not be written: "
      .. "could not acquire channel seq lock: Input/output error\n", r.stderr)
    assert.same({}, F.diff(before, F.snapshot(root), function(path)
      return path == "c/claims"                       -- the (empty) directory stays
    end), F.describe(r))
    r = T.run(root, { "task", "create", "c", "t2", "--from", "lead", "--title", "x" },
      { AGENT_CHAT_FAULT = "seq.lock" })
    assert.equal("agent-chat: TASK_AUDIT_FAILED: task record changed but audit event could not be written: "
      .. "could not acquire channel seq lock: Input/output error\n", r.stderr)
    assert.is_nil(F.read(root .. "/c/tasks/t2.json"))
  end)
end)

describe("a lease that is both expired and held by someone else", function()
  -- The Python tool's lease rules: renew, release and done check the holder
  -- before the expiry; update and block (update_task) and claim check the
  -- expiry first. Several ids and holders, so that no name is special.
  local PAST = "2001-02-03T04:05:06.000000+00:00"
  local function expired(id, holder)
    local root = T.scratch() .. "/root"
    T.must(root, { "init", "c" })
    assert(os.execute("mkdir " .. H.sh(root .. "/c/tasks") .. " " .. H.sh(root .. "/c/claims")))
    F.write(root .. "/c/tasks/" .. id .. ".json", T.record{ id = id, channel = "c", status = "in_progress",
      owner = holder, lease_expires_at = PAST })
    F.write(root .. "/c/claims/" .. id .. "." .. holder .. ".json", T.claim{ task_id = id, channel = "c",
      owner = holder, lease_expires_at = PAST, claimed_at = "2001-02-03T04:00:00.000000+00:00",
      updated_at = "2001-02-03T04:00:00.000000+00:00" })
    T.must(root, { "task", "list", "c" })
    return root
  end

  for _, who in ipairs({ { "t1", "bob", "carol" }, { "Job_2", "alice", "bob" }, { "x", "lead.ops", "eve" } }) do
    local id, holder, other = who[1], who[2], who[3]
    local MISMATCH = "lease for task " .. id .. " belongs to " .. holder
    local RECOVERY = "expired lease for task " .. id .. " requires explicit recovery"
    it(id .. " held by " .. holder .. ": the holder first for renew/release/done, the expiry first otherwise",
      function()
        local root = expired(id, holder)
        for _, op in ipairs({ "renew", "release", "done" }) do
          refused(root, { "task", op, "c", id, "--as", other }, "LEASE_OWNER_MISMATCH", MISMATCH)
          refused(root, { "task", op, "c", id, "--as", holder }, "LEASE_RECOVERY_REQUIRED", RECOVERY)
        end
        for _, argv in ipairs({
          { "task", "update", "c", id, "--as", other, "--title", "y" },
          { "task", "update", "c", id, "--as", holder, "--title", "y" },
          { "task", "block", "c", id, "--as", other },
          { "task", "block", "c", id, "--as", holder },
          { "task", "claim", "c", id, "--as", other },
          { "task", "claim", "c", id, "--as", holder },
        }) do
          refused(root, argv, "LEASE_RECOVERY_REQUIRED", RECOVERY)
        end
        -- an unexpired lease: update by another is the holder's rule
        T.must(root, { "task", "recover", "c", id, "--as", other, "--reason", "stale" })
        refused(root, { "task", "update", "c", id, "--as", holder, "--title", "y" }, "LEASE_OWNER_MISMATCH",
          "lease for task " .. id .. " belongs to " .. other)
        refused(root, { "task", "renew", "c", id, "--as", holder }, "LEASE_OWNER_MISMATCH",
          "lease for task " .. id .. " belongs to " .. other)
      end)
  end
end)
