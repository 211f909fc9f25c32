-- Crash safety of the lease mutations (issue 3 acceptance; docs/format.md 3.6
-- "Lifecycle of one mutation" / "Failure handling", 4 "Atomic publish",
-- include/agentchat/lease.h, include/agentchat/fault.h).
--
-- For claim, renew, release, done, recover, and the release/done fallbacks
-- on a task without a lease, the command first runs once with
-- AGENT_CHAT_FAULT_LOG to list every fault point it reaches (with how many
-- times each is reached). Then, for EVERY point and EVERY occurrence #N,
-- a fresh copy of the channel runs the command with "point#N:crash" (the
-- process SIGKILLs itself there) and, in a second walk, "point#N:fail"
-- (the step returns EIO). Afterwards the channel must be
--   * unchanged: task records and claim files byte-identical to before,
--   * fully changed: the same as after a successful run (timestamps aside;
--     byte-exact against the journal's task_after / next when one was
--     left), or
--   * pending: every lease command and `task update` fail with
--     LEASE_TRANSACTION_PENDING (changing nothing), and
--     `task recover-pending` brings it to one of the two states above,
--     choosing as format.md 3.6 says (prepared -> rollback; applied -> cleanup
--     iff the audit message exists; published -> cleanup), posts
--     lease.transaction.recovered / .cleaned, and leaves no journal;
-- and a follow-up lease command works. Message files are checked after
-- the crash and after recovery: every one is a complete audit message, and
-- the audit log agrees with the records (the command's event message exists
-- iff the change was kept). A crash while posting the audit message leaves
-- the `_seq.lock` directory behind; posters treat it as stale only when its
-- mtime is more than 30 s old (format.md 4 "Sequence allocation"), so the walk
-- ages it with touch before running recover-pending (otherwise the
-- recovery's own audit post would wait 10 s and fail).
-- Leftovers (*.tmp, _seq.lock, .seqres-*) are reported by separate tests.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local T = require "tasksupport"
local json = require "agentchat.json"

local JOURNAL = "claims/.lease-transaction.json"
local PENDING = "agent-chat: LEASE_TRANSACTION_PENDING: a previous lease mutation needs explicit recovery\n"

-- Every lease command (and update), none of which may run while a journal
-- is pending. t2 is an unrelated open task: the journal blocks it too.
local PENDING_PROBES = {
  { "task", "claim", "c", "t1", "--as", "alice" },
  { "task", "claim", "c", "t2", "--as", "carol" },
  { "task", "renew", "c", "t1", "--as", "alice" },
  { "task", "release", "c", "t1", "--as", "alice" },
  { "task", "done", "c", "t1", "--as", "alice" },
  { "task", "recover", "c", "t1", "--as", "bob", "--reason", "probe" },
  { "task", "update", "c", "t1", "--as", "alice", "--title", "probe" },
}

local function base_channel(root)
  T.must(root, { "init", "c" })
  T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "Crash test",
                 "--acceptance", "survives kill -9" })
  T.must(root, { "task", "create", "c", "t2", "--from", "lead", "--title", "Bystander" })
end

local function leased(seconds)
  return function(root)
    base_channel(root)
    T.must(root, { "task", "claim", "c", "t1", "--as", "alice", "--lease", tostring(seconds) })
  end
end

local function ownerless_in_progress(root)
  base_channel(root)
  T.must(root, { "task", "update", "c", "t1", "--as", "lead", "--status", "in_progress" })
end

-- name, template setup, the command, its audit event (+ lease_fallback),
-- the stdout of a successful run, and the follow-up once fully changed.
local SCENARIOS = {
  { name = "claim", setup = base_channel,
    argv = { "task", "claim", "c", "t1", "--as", "alice" }, event = "lease.claimed",
    stdout = "claimed task t1 [in_progress]\n",
    after = { "task", "renew", "c", "t1", "--as", "alice" } },
  { name = "renew", setup = leased(3600),
    argv = { "task", "renew", "c", "t1", "--as", "alice", "--lease", "7200" }, event = "lease.renewed",
    stdout = "renewed task t1 [in_progress]\n",
    after = { "task", "renew", "c", "t1", "--as", "alice" } },
  { name = "release", setup = leased(3600),
    argv = { "task", "release", "c", "t1", "--as", "alice" }, event = "lease.released",
    stdout = "released task t1 [open]\n",
    after = { "task", "claim", "c", "t1", "--as", "bob" } },
  { name = "done", setup = leased(3600),
    argv = { "task", "done", "c", "t1", "--as", "alice" }, event = "lease.completed",
    stdout = "done task t1 [done]\n",
    after = { "task", "done", "c", "t1", "--as", "alice" } },
  { name = "recover", setup = function(root)
      leased(0.001)(root)
      F.sleep(0.05)
    end,
    argv = { "task", "recover", "c", "t1", "--as", "bob", "--reason", "alice crashed" },
    event = "lease.recovered", stdout = "recovered task t1 [in_progress]\n",
    after = { "task", "renew", "c", "t1", "--as", "bob" } },
  { name = "release fallback (no lease)", setup = ownerless_in_progress,
    argv = { "task", "release", "c", "t1", "--as", "zed" }, event = "task.updated",
    fallback = "release", stdout = "released task t1 [open]\n",
    after = { "task", "claim", "c", "t1", "--as", "zed" } },
  { name = "done fallback (no lease)", setup = ownerless_in_progress,
    argv = { "task", "done", "c", "t1", "--as", "zed" }, event = "task.updated",
    fallback = "complete", stdout = "done task t1 [done]\n",
    after = { "task", "done", "c", "t1", "--as", "zed" } },
}

-- ---------------------------------------------------------------- state

local copy = F.copy

--- Task records and claim files (not journals, not temp files).
local function records(snap)
  local out = {}
  for path, v in pairs(snap) do
    local dir, name = path:match("^(%a+)/([^/]+)$")
    if (dir == "tasks" or dir == "claims") and name:sub(1, 1) ~= "." and name:match("%.json$") then
      out[path] = v
    end
  end
  return out
end

local function normalized(recs)
  local out = {}
  for k, v in pairs(recs) do
    out[k] = T.normalize(v)
  end
  return out
end

local same = F.same

local function leftovers(snap)
  local out = {}
  for path in pairs(snap) do
    local base = path:match("[^/]*$")
    if base:match("%.tmp$") or base:match("^%.seqres%-") or path == "_seq.lock" then
      out[#out + 1] = path
    end
  end
  table.sort(out)
  return out
end

--- The new message files since `before`, checked complete; problems are
--- appended to `probs`.
local function new_messages(snap, before, probs, where)
  local out = {}
  for _, m in ipairs(T.messages(snap)) do
    if before[m.path] == nil then
      local msg, why = T.parse_message(m.text)
      if not msg then
        probs[#probs + 1] = where .. ": half-written or malformed message " .. m.path .. " (" .. why .. "): "
          .. F.show(m.text)
      elseif msg.seq ~= m.seq then
        probs[#probs + 1] = where .. ": message " .. m.path .. " says seq " .. msg.seq
      else
        out[#out + 1] = msg
      end
    elseif before[m.path] ~= "f:" .. m.text then
      probs[#probs + 1] = where .. ": existing message rewritten: " .. m.path
    end
  end
  return out
end

--- nil, or why the record of t1 and its claim files disagree (format.md 3.6:
--- owner and lease_expires_at equal the claim's; one claim file at most).
local function lease_mismatch(snap)
  local rec = json.loads((snap["tasks/t1.json"] or "f:"):sub(3))
  if type(rec) ~= "table" then
    return "tasks/t1.json is not a record"
  end
  local files = {}
  for path in pairs(records(snap)) do
    if path:match("^claims/t1%.") then
      files[#files + 1] = path
    end
  end
  if rec.lease_expires_at == json.null then
    return #files > 0 and ("no lease in the record but " .. table.concat(files, ",")) or nil
  end
  if #files ~= 1 or files[1] ~= "claims/t1." .. tostring(rec.owner) .. ".json" then
    return "record leased by " .. tostring(rec.owner) .. " but claim files: " .. table.concat(files, ",")
  end
  local claim = json.loads(snap[files[1]]:sub(3))
  if type(claim) ~= "table" or claim.owner ~= rec.owner or claim.lease_expires_at ~= rec.lease_expires_at then
    return "the claim file disagrees with the record"
  end
  return nil
end

local function events_of(msgs)
  local out = {}
  for _, m in ipairs(msgs) do
    out[#out + 1] = m.status
  end
  return table.concat(out, ",")
end

-- ---------------------------------------------------------------- walk

--- Prepare a scenario: the template channel, its snapshot, the normalized
--- records after a clean run, and the fault points of a clean run.
local function prepare(sc)
  local dir = T.scratch()
  local tpl = dir .. "/tpl"
  sc.setup(tpl)
  local log = dir .. "/faults.log"
  local ref = dir .. "/ref"
  copy(tpl, ref)
  local r = T.run(ref, sc.argv, { AGENT_CHAT_FAULT_LOG = log })
  assert(r.code == 0 and r.stdout == sc.stdout, F.describe(r))
  local points, order = {}, {}
  for line in (F.read(log) or ""):gmatch("[^\n]+") do
    if not points[line] then
      order[#order + 1] = line
      points[line] = 0
    end
    points[line] = points[line] + 1
  end
  local ref_snap = F.snapshot(ref .. "/c")
  return {
    dir = dir, tpl = tpl,
    before = F.snapshot(tpl .. "/c"),
    after = normalized(records(ref_snap)),
    after_journal = ref_snap[JOURNAL],
    points = points, order = order,
  }
end

--- Run one faulted command in a fresh copy and judge what it left.
--- Returns {kind = "unchanged"|"changed"|"inconsistent"|nil, phase = the
--- journal's phase if one was left, problems = {}, exit_problems = {},
--- leftovers = {}}.
local function one_run(sc, prep, point, n, action)
  local w = prep.dir .. "/w"
  local where = string.format("%s %s@%s#%d", sc.name, action, point, n)
  local res = { problems = {}, exit_problems = {}, leftovers = {}, where = where }
  local probs = res.problems
  copy(prep.tpl, w)
  local root, chdir = w, w .. "/c"
  local before_recs = records(prep.before)

  local r = T.run(root, sc.argv, { AGENT_CHAT_FAULT = point .. "#" .. n .. ":" .. action })
  if action == "crash" then
    if r.code ~= 137 then
      probs[#probs + 1] = where .. ": the point was not reached again (" .. F.describe(r) .. ")"
      return res
    end
  elseif r.code == 0 and (point == "post.dirsync" or point == "post.unlock") then
    -- A failure after the audit message became visible: the message is
    -- published, so the change stands and the command succeeds (format.md 3.6
    -- decides publication by the message's presence); checked below as
    -- "changed".
    res.published_despite_fault = true
  else
    if r.code == 0 or r.code >= 128 then
      probs[#probs + 1] = where .. ": expected an error, got " .. F.describe(r)
      return res
    end
    if F.error_line(r.stderr) or not r.stderr:match("^agent%-chat: [A-Z][A-Z_]+: .") then
      res.exit_problems[#res.exit_problems + 1] = where .. ": not one coded error line: " .. F.describe(r)
    elseif r.code ~= 2 then
      res.exit_problems[#res.exit_problems + 1] = where .. ": exit " .. r.code
        .. " for a TASK_/LEASE_ error (format.md 2.5 says 2): " .. F.show(r.stderr)
    end
    if F.crashed(r.stderr) then
      probs[#probs + 1] = where .. ": " .. F.crashed(r.stderr)
    end
  end

  local snap = F.snapshot(chdir)
  new_messages(snap, prep.before, probs, where .. " (after the fault)")
  local journal_text = snap[JOURNAL]
  local recovered = false
  local jr

  local function classify(s)
    local rc = records(s)
    if same(rc, before_recs) then
      return "unchanged"
    elseif same(normalized(rc), prep.after) then
      return "changed"
    end
    return "inconsistent"
  end

  if journal_text then
    jr = json.loads(journal_text:sub(3))
    if type(jr) ~= "table" or jr.version ~= 2 or type(jr.transaction_id) ~= "string" then
      probs[#probs + 1] = where .. ": unreadable journal left: " .. F.show(journal_text)
      return res
    end
    if T.b64decode(jr.task_before) ~= before_recs["tasks/t1.json"]:sub(3) then
      probs[#probs + 1] = where .. ": journal task_before is not the record's previous bytes"
    end
    -- Pending: every lease command refuses, and changes nothing.
    for _, argv in ipairs(PENDING_PROBES) do
      local p = T.run(root, argv)
      if p.code ~= 2 or p.stderr ~= PENDING or p.stdout ~= "" then
        probs[#probs + 1] = where .. ": with a pending journal: " .. F.describe(p)
      end
    end
    -- show and list do not look at the journal (format.md 3.6)
    for _, argv in ipairs({ { "task", "show", "c", "t1" }, { "task", "list", "c" } }) do
      local p = T.run(root, argv)
      if p.code ~= 0 then
        probs[#probs + 1] = where .. ": with a pending journal: " .. F.describe(p)
      end
    end
    local snap2 = F.snapshot(chdir)
    if #F.diff(snap, snap2) > 0 then
      probs[#probs + 1] = where .. ": refused commands changed the channel: "
        .. table.concat(F.diff(snap, snap2), "; ")
    end
    -- The crashed poster's seq lock: stale only after 30 s.
    if snap["_seq.lock"] then
      res.seq_lock_aged = true
      T.touch_old(chdir .. "/_seq.lock", 60)
    end
    local rp = T.run(root, { "task", "recover-pending", "c", "--as", "ops" })
    if rp.code ~= 0 or rp.stdout ~= "recovered pending lease transaction in c\n" or rp.stderr ~= "" then
      probs[#probs + 1] = where .. ": recover-pending failed: " .. F.describe(rp)
      return res
    end
    recovered = true
    snap = F.snapshot(chdir)
  elseif snap["_seq.lock"] then
    T.touch_old(chdir .. "/_seq.lock", 60)
  end

  if snap[JOURNAL] then
    probs[#probs + 1] = where .. ": a journal remains"
  end
  local kind = classify(snap)
  res.kind = kind
  res.phase = jr and jr.phase
  local msgs = new_messages(snap, prep.before, probs, where)
  if kind == "inconsistent" then
    local d = F.diff(prep.before, snap, function(p)
      return not records({ [p] = "" })[p]
    end)
    probs[#probs + 1] = where .. ": records neither unchanged nor fully changed"
      .. (recovered and " after recover-pending" or "") .. ": " .. table.concat(d, "; ")
  end

  local mismatch = lease_mismatch(snap)
  if mismatch then
    probs[#probs + 1] = where .. ": " .. kind .. " state is inconsistent: " .. mismatch
  end

  -- The audit log must agree with the records.
  local mine, rec_msgs, other = {}, {}, {}
  for _, m in ipairs(msgs) do
    if m.status == sc.event and m.body.task_id == "t1" then
      mine[#mine + 1] = m
    elseif m.status == "lease.transaction.recovered" or m.status == "lease.transaction.cleaned" then
      rec_msgs[#rec_msgs + 1] = m
    else
      other[#other + 1] = m
    end
  end
  if #other > 0 then
    probs[#probs + 1] = where .. ": unexpected messages: " .. events_of(other)
  end
  if kind == "unchanged" and #mine > 0 then
    probs[#probs + 1] = where .. ": the change was rolled back but its " .. sc.event
      .. " audit message was published (" .. mine[1].title .. ", seq " .. mine[1].seq .. ")"
  elseif kind == "changed" then
    if #mine ~= 1 then
      probs[#probs + 1] = where .. ": fully changed but " .. #mine .. " " .. sc.event .. " messages"
    elseif sc.fallback and mine[1].body.lease_fallback ~= sc.fallback then
      probs[#probs + 1] = where .. ": lease_fallback is " .. tostring(mine[1].body.lease_fallback)
    elseif jr and mine[1].body.transaction_id ~= jr.transaction_id then
      probs[#probs + 1] = where .. ": the audit message carries another transaction_id"
    end
  end
  if recovered then
    local want = kind == "unchanged" and "lease.transaction.recovered" or "lease.transaction.cleaned"
    local how = kind == "unchanged" and "rollback" or "cleanup"
    if #rec_msgs ~= 1 or rec_msgs[1].status ~= want then
      probs[#probs + 1] = where .. ": recover-pending posted " .. events_of(rec_msgs) .. ", want " .. want
    elseif rec_msgs[1].from ~= "ops" or rec_msgs[1].body.transaction_recovery ~= how
        or rec_msgs[1].body.transaction_event ~= sc.event or rec_msgs[1].body.transaction_task_id ~= "t1"
        or rec_msgs[1].body.transaction_id ~= nil then
      probs[#probs + 1] = where .. ": recovery message body: " .. json.dumps(rec_msgs[1].body)
    end
    -- The decision of format.md 3.6.
    local published = #mine > 0
    local want_kind = (jr.phase == "prepared" and "unchanged") or (jr.phase == "published" and "changed")
      or (published and "changed" or "unchanged")
    if kind ~= want_kind then
      probs[#probs + 1] = string.format("%s: journal phase %s (audit message %s) must end %s, ended %s",
        where, jr.phase, published and "present" or "absent", want_kind, kind)
    end
    -- Fully changed: byte-exact against the journal's after state.
    if kind == "changed" then
      if snap["tasks/t1.json"] ~= "f:" .. (T.b64decode(jr.task_after) or "?") then
        probs[#probs + 1] = where .. ": tasks/t1.json differs from the journal's task_after"
      end
      for _, c in ipairs(jr.claim_changes or {}) do
        local want_bytes = c.next ~= json.null and ("f:" .. (T.b64decode(c.next) or "?")) or nil
        if snap["claims/" .. c.file] ~= want_bytes then
          probs[#probs + 1] = where .. ": claims/" .. c.file .. " differs from the journal's next bytes"
        end
      end
    end
  end

  -- A follow-up lease command works from either state.
  if kind == "unchanged" or kind == "changed" then
    local argv = kind == "unchanged" and sc.argv or sc.after
    local f = T.run(root, argv)
    if f.code ~= 0 or f.stderr ~= "" then
      probs[#probs + 1] = where .. ": follow-up after " .. kind .. ": " .. F.describe(f)
    elseif kind == "unchanged" and f.stdout ~= sc.stdout then
      probs[#probs + 1] = where .. ": re-run printed " .. F.show(f.stdout)
    end
    snap = F.snapshot(chdir)
    if snap[JOURNAL] then
      probs[#probs + 1] = where .. ": a journal remains after the follow-up"
    end
    new_messages(snap, prep.before, probs, where .. " (after the follow-up)")
  end
  for _, p in ipairs(leftovers(snap)) do
    res.leftovers[#res.leftovers + 1] = where .. ": " .. p
  end
  return res
end

local function walk(sc, prep, action)
  local out = { problems = {}, exit_problems = {}, leftovers = {}, runs = 0, kinds = {} }
  for _, point in ipairs(prep.order) do
    for n = 1, prep.points[point] do
      local res = one_run(sc, prep, point, n, action)
      out.runs = out.runs + 1
      local k = (res.phase and ("pending(" .. res.phase .. ")->") or "") .. tostring(res.kind)
      out.kinds[k] = (out.kinds[k] or 0) + 1
      table.move(res.problems, 1, #res.problems, #out.problems + 1, out.problems)
      table.move(res.exit_problems, 1, #res.exit_problems, #out.exit_problems + 1, out.exit_problems)
      table.move(res.leftovers, 1, #res.leftovers, #out.leftovers + 1, out.leftovers)
    end
  end
  return out
end

local function shown(list)
  if #list == 0 then
    return "none"
  end
  local head = {}
  for i = 1, math.min(#list, 25) do
    head[i] = list[i]
  end
  return #list .. " problem(s):\n  " .. table.concat(head, "\n  ") .. (#list > 25 and "\n  ..." or "")
end

local summary = {}

-- Families of durable steps every journaled lease mutation must reach.
local FAMILIES = { "mutex.acquire", "lease.journal.prepared.", "lease.task.", "lease.journal.applied.",
                   "lease.audit", "seq.lock", "post.message.", "post.dirsync", "post.unlock",
                   "lease.journal.published.", "lease.journal.delete" }

for _, sc in ipairs(SCENARIOS) do
  describe("crash safety of task " .. sc.name, function()
    local prep
    local walks = {}
    local function get(action)
      prep = prep or prepare(sc)
      if not walks[action] then
        walks[action] = walk(sc, prep, action)
        local kinds = {}
        for k, v in pairs(walks[action].kinds) do
          kinds[#kinds + 1] = k .. "=" .. v
        end
        table.sort(kinds)
        summary[#summary + 1] = string.format("%-28s %-5s %3d runs over %2d points: %s", sc.name, action,
          walks[action].runs, #prep.order, table.concat(kinds, " "))
      end
      return walks[action]
    end

    it("reaches every durable step (the fault log of a clean run)", function()
      prep = prep or prepare(sc)
      for _, fam in ipairs(FAMILIES) do
        local hit = false
        for _, p in ipairs(prep.order) do
          hit = hit or p:sub(1, #fam) == fam
        end
        assert.is_true(hit, sc.name .. " never reaches " .. fam .. ": " .. table.concat(prep.order, " "))
      end
      local claims = false
      for _, p in ipairs(prep.order) do
        claims = claims or p:match("^lease%.claim%.") ~= nil
      end
      -- Only the fallbacks change no claim file.
      assert.equal(sc.fallback == nil, claims, table.concat(prep.order, " "))
      assert.is_nil(prep.after_journal, "a clean run left a journal")
    end)

    it("crash at every point: unchanged, fully changed, or pending until recover-pending", function()
      local w = get("crash")
      assert.is_true(w.runs >= 25, "only " .. w.runs .. " crash runs")
      assert.equal(0, #w.problems, shown(w.problems))
    end)

    -- A SIGKILL between creating a temp file (ac_write_atomic, the
    -- .seqres-N reservation of a post) and publishing it leaves that file;
    -- recover-pending and the next successful task mutation remove it (the
    -- stale _seq.lock is removed by the next poster after 30 s, aged here).
    it("crash at every point: no *.tmp, _seq.lock or .seqres-* left once recovered", function()
      local w = get("crash")
      assert.equal(0, #w.leftovers, shown(w.leftovers))
    end)

    -- A failure *after* the audit message is linked (post.dirsync,
    -- post.unlock) keeps the change: its lease.* message is in the channel,
    -- and format.md 3.6 treats an existing audit message as publication.
    it("fail at every point: an error, and unchanged, fully changed or pending until recover-pending",
      function()
        local w = get("fail")
        assert.is_true(w.runs >= 25, "only " .. w.runs .. " fail runs")
        assert.equal(0, #w.problems, shown(w.problems))
      end)

    -- format.md 2.5 puts TASK_* and "TASK_IO_ERROR: ... for an I/O error during
    -- task" under exit 2.
    it("fail at every point: one coded error line, exit 2", function()
      local w = get("fail")
      assert.equal(0, #w.exit_problems, shown(w.exit_problems))
    end)

    it("fail at every point: no *.tmp, _seq.lock or .seqres-* left", function()
      local w = get("fail")
      assert.equal(0, #w.leftovers, shown(w.leftovers))
    end)
  end)
end

-- Crashes inside recover-pending itself: it must stay re-runnable.
describe("crash safety of task recover-pending", function()
  -- Leave a pending journal with a claim crash at `point`, then walk the
  -- points of recover-pending with crash and fail, re-running it after each.
  local CASES = {
    { "lease.task.dirsync", "unchanged" },            -- prepared: rollback
    { "lease.journal.applied.dirsync", "unchanged" }, -- applied, no message: rollback
    { "post.unlock", "changed" },                     -- applied, message posted: cleanup
    { "lease.journal.delete", "changed" },            -- published: cleanup
  }
  local runs = 0
  for _, case in ipairs(CASES) do
    local point, want = case[1], case[2]
    it("resolves a journal left at " .. point .. " to the " .. want .. " state, even if recovery crashes", function()
      local dir = T.scratch()
      local tpl = dir .. "/tpl"
      base_channel(tpl)
      local before = records(F.snapshot(tpl .. "/c"))
      local pend = dir .. "/pend"
      copy(tpl, pend)
      local r = T.run(pend, SCENARIOS[1].argv, { AGENT_CHAT_FAULT = point .. ":crash" })
      assert.equal(137, r.code, F.describe(r))
      if F.snapshot(pend .. "/c")["_seq.lock"] then
        T.touch_old(pend .. "/c/_seq.lock", 60)
      end
      local log = dir .. "/rp.log"
      local probe = dir .. "/probe"
      copy(pend, probe)
      T.must(probe, { "task", "recover-pending", "c", "--as", "ops" }, { AGENT_CHAT_FAULT_LOG = log })
      local target = records(F.snapshot(probe .. "/c"))
      if want == "unchanged" then
        assert.same(before, target)
      else
        assert.are_not.same(before, target)
      end
      local counts, order = {}, {}
      for line in F.read(log):gmatch("[^\n]+") do
        if not counts[line] then
          order[#order + 1] = line
        end
        counts[line] = (counts[line] or 0) + 1
      end
      assert.is_true(#order >= 5, table.concat(order, " "))
      local probs = {}
      for _, action in ipairs({ "crash", "fail" }) do
        for _, p in ipairs(order) do
          for n = 1, counts[p] do
            runs = runs + 1
            local where = string.format("%s then recover-pending %s@%s#%d", point, action, p, n)
            local w = dir .. "/w"
            copy(pend, w)
            local x = T.run(w, { "task", "recover-pending", "c", "--as", "ops" },
              { AGENT_CHAT_FAULT = p .. "#" .. n .. ":" .. action })
            -- Exit 0 is right only where the fault cannot undo the recovery:
            -- after its audit message is visible (post.dirsync, post.unlock)
            -- or in the best-effort debris sweep that follows (its seq.lock
            -- and seq.locked); the journal must then be gone and the state
            -- resolved (below).
            local harmless = p == "post.dirsync" or p == "post.unlock"
              or ((p == "seq.lock" or p == "seq.locked") and n == counts[p])
            if x.code == 0 and not harmless then
              probs[#probs + 1] = where .. ": did not fail: " .. F.describe(x)
            end
            local s = F.snapshot(w .. "/c")
            if s["_seq.lock"] then
              T.touch_old(w .. "/c/_seq.lock", 60)
            end
            if s[JOURNAL] then
              local again = T.run(w, { "task", "recover-pending", "c", "--as", "ops" })
              if again.code ~= 0 then
                probs[#probs + 1] = where .. ": re-run: " .. F.describe(again)
              end
              s = F.snapshot(w .. "/c")
            end
            if s[JOURNAL] then
              probs[#probs + 1] = where .. ": journal remains"
            end
            if not same(records(s), target) then
              probs[#probs + 1] = where .. ": ended in another state than a clean recovery"
            end
            new_messages(s, F.snapshot(pend .. "/c"), probs, where)
            local f = T.run(w, want == "unchanged" and SCENARIOS[1].argv or SCENARIOS[1].after)
            if f.code ~= 0 then
              probs[#probs + 1] = where .. ": follow-up: " .. F.describe(f)
            end
          end
        end
      end
      assert.equal(0, #probs, shown(probs))
    end)
  end

  teardown(function()
    summary[#summary + 1] = string.format("recover-pending walks: %d runs", runs)
  end)
end)

-- One summary line per walk on stderr (prove shows it), for the record.
teardown(function()
  io.stderr:write("# task crash walks:\n#   " .. table.concat(summary, "\n#   ") .. "\n")
end)
