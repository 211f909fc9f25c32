-- tests/functional/crashsupport.lua: the crash-everywhere walk of
-- crash_everywhere_spec.lua (issue 8). Not a spec itself.
--
--   local C = require "crashsupport"     (after support.lua is on the path)
--
--   C.COMMANDS            the commands walked, one table entry each (below)
--   C.prepare(cmd)        template channel, the before/after states, and the
--                         fault points of a clean run (AGENT_CHAT_FAULT_LOG
--                         with AGENT_CHAT_FAULT_LOG_SYS=1), in order
--   C.plan(prep, full)    the (fault, action) runs: every index when `full`,
--                         else the deterministic subset of `make test`
--   C.run_one(prep, f, action)  one faulted run on a fresh copy, judged
--   C.fsck_available()    true once the binary has an `fsck` command
--
-- The model. A command's clean run reaches a sequence of fault points:
-- named points (AC_FAULT("post.dirsync")) and the sys.<call> point of every
-- mutating system call (include/agentchat/fault.h). A fault is "sys.*#N"
-- (the Nth mutating call) or "P#k" (the kth time the named point P is
-- reached); its position is its index in that sequence. A command has one
-- or more commit points, each a named point whose next system call makes
-- the change visible (the link() of the command's message, the rename() of
-- state.md); a fault at position p must leave stage k, the number of
-- commit calls strictly before p: stage 0 is the channel before the
-- command, the last stage the channel after a clean run, and a stage in
-- between (compact only) is documented in the table. "Leave" means: after
-- the documented recovery (an aged _seq.lock, as 30 s would make it stale;
-- then the table's `recover` command), the visible files of the channel
-- (every path without a component starting with '.', except _seq.lock and
-- the _tasks.lock flock target), with timestamps and random ids
-- normalized and recovery's own audit messages set aside, are exactly the
-- stage's. A run that exits 0 must leave the last stage (success is fully
-- visible), whatever its fault.
local F = require "support"
local T = require "tasksupport"

local C = {}

-- ------------------------------------------------------------ the table

-- The channel every command starts from: a message, an open task (t1), a
-- task leased to bob (t2), one whose lease (carol's) has expired (t3), and
-- a path lock of bob's. A step is an argv, or {sleep = seconds}.
C.BASE = {
  { "init", "c" },
  { "post", "c", "--from", "lead", "--title", "kickoff", "--body", "the plan" },
  { "task", "create", "c", "t1", "--from", "lead", "--title", "Free task", "--files-hint", "src/a.c" },
  { "task", "create", "c", "t2", "--from", "lead", "--title", "Bob's task" },
  { "task", "create", "c", "t3", "--from", "lead", "--title", "Carol's task" },
  { "task", "claim", "c", "t2", "--as", "bob" },
  { "lock", "c", "src/b.c", "--as", "bob" },
  { "task", "claim", "c", "t3", "--as", "carol", "--lease", "0.001" },
  { sleep = 0.05 },
}

-- The documented recoveries: `task recover-pending` when a lease journal
-- is left (it refuses to run without one), path-lock `recover-pending`
-- always (it also removes temp files a crash left in locks/). `after_error`
-- is the code of the error a command prints when an I/O error hits it
-- after its commit point: the change stands, the journal stays, and the
-- recovery finishes it (format.md 3.6; docs/path-locks.md). A command without
-- one must never fail after its commit point (post and compact report a
-- failed directory sync after publication as a warning, exit 0).
C.LEASE = { when = "claims/.lease-transaction.json", argv = { "task", "recover-pending", "c", "--as", "ops" },
            after_error = "LEASE_TRANSACTION_CLEANUP_FAILED" }
C.LOCKS = { argv = { "recover-pending", "c", "--as", "ops" }, after_error = "PATH_LOCK_TRANSACTION_PENDING" }

-- Audit messages a recovery posts (set aside when comparing states).
C.RECOVERY_EVENTS = { ["lease.transaction.recovered"] = true, ["lease.transaction.cleaned"] = true }

-- One entry per command: name, argv (run with --root), recover (nil: the
-- next post/read must simply work), setup (default C.BASE), commits
-- (default: the command's message is linked, {"post.message.publish"}; an
-- earlier commit lists with `take` the paths it makes visible), rollback
-- (an error, not a crash, before the last commit undoes the earlier ones).
-- Adding a command to the walk is one line here.
C.COMMANDS = {
  { name = "post", argv = { "post", "c", "--from", "alice", "--title", "hello", "--body", "world" } },
  { name = "task claim", argv = { "task", "claim", "c", "t1", "--as", "alice" }, recover = C.LEASE },
  { name = "task done", argv = { "task", "done", "c", "t2", "--as", "bob" }, recover = C.LEASE },
  { name = "task recover", argv = { "task", "recover", "c", "t3", "--as", "dave", "--reason", "carol left" },
    recover = C.LEASE },
  { name = "lock", argv = { "lock", "c", "src/a.c", "--as", "alice" }, recover = C.LOCKS },
  { name = "unlock", argv = { "unlock", "c", "src/b.c", "--as", "bob" }, recover = C.LOCKS },
  -- state.md (derived from the messages, rewritten by every compact) is
  -- published before the state.compacted message that announces it; a
  -- fault between the two leaves the new state.md without the message.
  { name = "compact", argv = { "compact", "c" },
    commits = { { "state.publish", take = "^state%.md$" }, { "post.message.publish" } } },
  -- task create and update are not journaled (format.md 3.5, as in the Python
  -- tool): a crash between the record and its audit message leaves the
  -- record without the message; an error there is rolled back.
  { name = "task create", argv = { "task", "create", "c", "t9", "--from", "lead", "--title", "New" },
    commits = { { "task.record.publish", take = "^tasks/t9%.json$" }, { "post.message.publish" } },
    rollback = true },
  { name = "task update", argv = { "task", "update", "c", "t1", "--as", "lead", "--title", "Renamed" },
    commits = { { "task.record.publish", take = "^tasks/t1%.json$" }, { "post.message.publish" } },
    rollback = true },
  -- An ack is one file linked into .acks/<seq>/ (docs/receipts.md).
  { name = "ack", argv = { "ack", "c", "1", "--as", "bob" }, commits = { { "ack.publish" } } },
}

-- ------------------------------------------------------------ helpers

local copy = F.copy
C.copy = copy

local NO_FAULT = { AGENT_CHAT_FAULT = false, AGENT_CHAT_FAULT_LOG = false, AGENT_CHAT_FAULT_LOG_SYS = false }

local function run(root, argv, env)
  local e = {}
  for k, v in pairs(NO_FAULT) do
    e[k] = v
  end
  for k, v in pairs(env or {}) do
    e[k] = v
  end
  return T.run(root, argv, e)
end
C.run = run

--- Timestamps -> <ts>, random ids (16+ lowercase hex digits) -> <id>.
local function norm(s)
  s = s:gsub("%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[%.%d]*[%+%-]%d%d:%d%d", "<ts>")
  s = s:gsub("[%x]+", function(h)
    if #h >= 16 and h:find("%d") and not h:find("%u") then
      return "<id>"
    end
  end)
  return s
end
C.norm = norm

-- Hidden entries a command may leave: kind, or nil for an unknown one.
local function hidden_kind(path)
  local base = path:match("[^/]*$")
  if path == "_seq.lock" then
    return "stale _seq.lock"
  elseif path:match("^_seq%.lock/") then
    return nil
  elseif path == ".seqhigh" or path == ".path-locks.lock" or path == ".cursors"
      or path:match("^%.cursors/[^/]+%.txt$") then
    return "state"
  elseif path == ".acks" or path:match("^%.acks/%d+$") then
    return "state"                  -- made before an ack, and by receipt waiters
  elseif path == "claims/.lease-transaction.json" or path == "locks/.path-lock-transaction.json" then
    return "journal"
  elseif base:match("^%.seqres%-%d+$") and not path:find("/") then
    return "debris"
  elseif base:match("^%..+%.[%l%d]+%.tmp$") then
    return "debris"
  end
  return nil
end

--- The visible state of a channel directory: {files = {normalized path =
--- normalized bytes}, seqs = sorted message seqs (all), recovery = {paths of
--- recovery audit messages}, hidden = {path = kind}, unknown = {paths}}.
function C.state(chdir)
  local snap = F.snapshot(chdir)
  local st = { files = {}, seqs = {}, recovery = {}, hidden = {}, unknown = {} }
  local multi = {}
  for path, v in pairs(snap) do
    -- Ack records live in the hidden .acks/ but are what `ack` changes.
    local ack_record = path:match("^%.acks/%d+/[^./][^/]*%.json$") ~= nil
    local hidden = not ack_record
      and (("/" .. path):find("/%.") ~= nil or path == "_seq.lock" or path:match("^_seq%.lock/"))
    if hidden then
      local kind = hidden_kind(path)
      if kind then
        st.hidden[path] = kind
      else
        st.unknown[#st.unknown + 1] = path
      end
    elseif v:sub(1, 2) == "f:" then
      local text = v:sub(3)
      local seq = path:match("^(%d+)%-[^/]*%.md$")
      if seq then
        st.seqs[#st.seqs + 1] = tonumber(seq)
      end
      local status = seq and text:match("\nstatus: ([^\n]*)\n")
      if status and C.RECOVERY_EVENTS[status] then
        st.recovery[#st.recovery + 1] = path
      elseif path ~= "_tasks.lock" then
        -- Two files may normalize to one name (two lock records): keep
        -- every content, sorted.
        local np = norm(path)
        multi[np] = multi[np] or {}
        table.insert(multi[np], norm(text))
      end
    elseif v:sub(1, 2) == "l:" then
      st.unknown[#st.unknown + 1] = path .. " (symlink)"
    end
  end
  for np, list in pairs(multi) do
    table.sort(list)
    st.files[np] = table.concat(list, "\n<next file>\n")
  end
  table.sort(st.seqs)
  table.sort(st.unknown)
  return st
end

local same = F.same

--- Differences of two file maps, for messages.
local function diff(want, got)
  local out = {}
  local keys = {}
  for k in pairs(want) do
    keys[#keys + 1] = k
  end
  for k in pairs(got) do
    if want[k] == nil then
      keys[#keys + 1] = k
    end
  end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if want[k] == nil then
      out[#out + 1] = "extra " .. k
    elseif got[k] == nil then
      out[#out + 1] = "missing " .. k
    elseif want[k] ~= got[k] then
      out[#out + 1] = "differs " .. k .. ": " .. F.show(got[k])
    end
  end
  return table.concat(out, "; ")
end

local fsck_checked, fsck_ok
function C.fsck_available()
  if not fsck_checked then
    fsck_checked = true
    fsck_ok = run(nil, { "fsck", "--help" }).code == 0
  end
  return fsck_ok
end

-- ------------------------------------------------------------ prepare

local templates = {}

local function template(setup)
  if templates[setup] then
    return templates[setup]
  end
  local dir = T.scratch() .. "/tpl"
  for _, step in ipairs(setup) do
    if step.sleep then
      F.sleep(step.sleep)
    else
      local r = run(dir, step)
      assert(r.code == 0, "setup: " .. F.describe(r))
    end
  end
  templates[setup] = dir
  return dir
end

local function fault_log(root, argv, log)
  os.remove(log)
  local r = run(root, argv, { AGENT_CHAT_FAULT_LOG = log, AGENT_CHAT_FAULT_LOG_SYS = "1" })
  local entries = {}
  for line in (F.read(log) or ""):gmatch("[^\n]+") do
    entries[#entries + 1] = line
  end
  return r, entries
end

--- Everything a walk of `cmd` needs.
function C.prepare(cmd)
  local dir = T.scratch()
  local tpl = dir .. "/tpl"
  copy(template(cmd.setup or C.BASE), tpl)
  local before = C.state(tpl .. "/c")
  local ref = dir .. "/ref"
  copy(tpl, ref)
  local r, entries = fault_log(ref, cmd.argv, dir .. "/log")
  assert(r.code == 0, "clean run: " .. F.describe(r))
  local after = C.state(ref .. "/c")
  -- The sequence must not depend on the run (same template, same points).
  copy(tpl, dir .. "/ref2")
  local _, again = fault_log(dir .. "/ref2", cmd.argv, dir .. "/log2")
  assert(table.concat(again, " ") == table.concat(entries, " "),
    cmd.name .. ": two clean runs reach different fault points:\n" .. table.concat(entries, " ")
    .. "\n" .. table.concat(again, " "))

  local faults, nsys, occ, named = {}, 0, {}, 0
  for pos, name in ipairs(entries) do
    if name:sub(1, 4) == "sys." then
      nsys = nsys + 1
      faults[#faults + 1] = { rule = "sys.*#" .. nsys, pos = pos, point = name, sys = true }
    else
      occ[name] = (occ[name] or 0) + 1
      named = named + 1
      faults[#faults + 1] = { rule = name .. "#" .. occ[name], pos = pos, point = name }
    end
    -- shadowed: a crash here is the same as at the previous point (no
    -- system call between them)
    faults[#faults].shadowed = pos > 1 and entries[pos - 1]:sub(1, 4) ~= "sys."
  end

  -- Commit positions and stages.
  local commits = cmd.commits or { { "post.message.publish" } }
  local cpos, stages = {}, { [0] = before.files }
  for k, c in ipairs(commits) do
    local want, n, at = c[2] or 1, 0, nil
    for pos, name in ipairs(entries) do
      if name == c[1] then
        n = n + 1
        if n == want then
          at = pos
          break
        end
      end
    end
    assert(at, cmd.name .. ": the commit point " .. c[1] .. " is not reached: " .. table.concat(entries, " "))
    local call
    for pos = at + 1, #entries do
      if entries[pos]:sub(1, 4) == "sys." then
        call = pos
        break
      end
    end
    assert(call, cmd.name .. ": no system call after the commit point " .. c[1])
    cpos[k] = call
    if k == #commits then
      stages[k] = after.files
    else
      local s = {}
      for p, v in pairs(stages[k - 1]) do
        if not p:match(c.take) then
          s[p] = v
        end
      end
      for p, v in pairs(after.files) do
        if p:match(c.take) then
          s[p] = v
        end
      end
      stages[k] = s
    end
  end
  for k = 1, #commits do
    assert(not same(stages[k - 1], stages[k]), cmd.name .. ": stage " .. k .. " changes nothing")
  end
  return {
    cmd = cmd, dir = dir, tpl = tpl, entries = entries, faults = faults, nsys = nsys, named = named,
    stages = stages, nstages = #commits, commit_pos = cpos, ref_stdout = norm(r.stdout),
  }
end

--- The stage a fault at `pos` must leave.
local function expected_stage(prep, pos)
  local k = 0
  for _, c in ipairs(prep.commit_pos) do
    if c < pos then
      k = k + 1
    end
  end
  return k
end
C.expected_stage = expected_stage

-- ------------------------------------------------------------ the plan

C.ACTIONS = { "crash", "fail:EIO", "fail:ENOSPC" }

--- The runs of a walk: {fault, action} pairs. Full: every fault point with
--- every action. Subset (make test): every crash state (every named point,
--- and every system call that no named point directly precedes: a crash
--- there is a state no named point gives), every fault point failing with
--- EIO, and every 3rd one with ENOSPC (plus every named point).
function C.plan(prep, full)
  local runs = {}
  for i, f in ipairs(prep.faults) do
    for _, action in ipairs(C.ACTIONS) do
      local take = full
        or (action == "crash" and not (f.sys and f.shadowed))
        or action == "fail:EIO"
        or (action == "fail:ENOSPC" and (not f.sys or i % 3 == 0))
      if take then
        runs[#runs + 1] = { fault = f, action = action }
      end
    end
  end
  return runs
end

-- ------------------------------------------------------------ one run

local STRERROR = { EIO = "Input/output error", ENOSPC = "No space left on device" }

--- Run the command with `action` at fault `f` on a fresh copy and judge
--- the result. Returns {problems = {}, stage = k or nil, exit = code,
--- recovered = bool, debris = {paths}, after_error = bool}.
function C.run_one(prep, f, action)
  local cmd = prep.cmd
  local where = string.format("%s %s@%s (%s, position %d)", cmd.name, action, f.rule, f.point, f.pos)
  local res = { problems = {}, debris = {}, where = where }
  local probs = res.problems
  local function problem(fmt, ...)
    probs[#probs + 1] = where .. ": " .. string.format(fmt, ...)
  end
  local root = prep.dir .. "/w"
  local chdir = root .. "/c"
  copy(prep.tpl, root)

  local r = run(root, cmd.argv, { AGENT_CHAT_FAULT = f.rule .. ":" .. action })
  res.exit = r.code
  if action == "crash" then
    if r.code ~= 137 then
      problem("the point was not reached (no SIGKILL): %s", F.describe(r))
      return res
    end
  elseif r.code ~= 0 then
    local errno = action:match("^fail:(%u+)$")
    if r.code >= 125 or F.crashed(r.stderr) then
      problem("not a clean error: %s", F.describe(r))
    elseif F.error_line(r.stderr) then
      problem("%s", F.error_line(r.stderr))
    elseif not r.stderr:match("^agent%-chat: [A-Z][A-Z_]+: .") then
      problem("the error line has no code: %s", F.show(r.stderr))
    elseif errno and not r.stderr:find(STRERROR[errno], 1, true) then
      problem("the error does not say %q: %s", STRERROR[errno], F.show(r.stderr))
    end
  elseif norm(r.stdout) ~= prep.ref_stdout then
    problem("exit 0 but stdout %s, a clean run printed %s", F.show(r.stdout), F.show(prep.ref_stdout))
  end

  -- The documented recovery: a poster that died leaves _seq.lock, stale
  -- (removed by the next poster) after 30 s; age it instead of waiting.
  if os.execute("test -d " .. F.sh(chdir .. "/_seq.lock")) then
    T.touch_old(chdir .. "/_seq.lock", 60)
  end
  local rec = cmd.recover
  if rec and (not rec.when or os.execute("test -e " .. F.sh(chdir .. "/" .. rec.when))) then
    local x = run(root, rec.argv)
    res.recovered = rec.when ~= nil
    if x.code ~= 0 then
      problem("recovery failed: %s", F.describe(x))
      return res
    end
  end

  local st = C.state(chdir)
  for _, p in ipairs(st.unknown) do
    problem("an unknown hidden entry is left: %s", p)
  end
  for path, kind in pairs(st.hidden) do
    if kind == "journal" then
      problem("a journal is left after recovery: %s", path)
    elseif kind == "debris" or kind == "stale _seq.lock" then
      res.debris[#res.debris + 1] = path
    end
  end
  if #st.recovery > (res.recovered and 1 or 0) then
    problem("%d recovery audit messages (recovered: %s)", #st.recovery, tostring(res.recovered))
  end

  -- Exactly one stage, and the right one.
  local want = r.code == 0 and prep.nstages or expected_stage(prep, f.pos)
  if cmd.rollback and action ~= "crash" and want < prep.nstages then
    want = 0
  end
  for k = 0, prep.nstages do
    if same(st.files, prep.stages[k]) then
      res.stage = k
    end
  end
  if res.stage == nil then
    problem("the channel is in no stage; against the expected stage %d: %s", want,
      diff(prep.stages[want], st.files))
  elseif res.stage ~= want then
    problem("ended in stage %d of %d, expected %d (exit %d)", res.stage, prep.nstages, want, r.code)
  end
  res.after_error = r.code ~= 0 and action ~= "crash" and res.stage == prep.nstages
  if res.after_error then
    local code = cmd.recover and cmd.recover.after_error
    if not code then
      problem("failed (exit %d) but the change is fully visible, and %s documents no such error: %s",
        r.code, cmd.name, F.show(r.stderr))
    elseif r.stderr:sub(1, #code + 14) ~= "agent-chat: " .. code .. ": " then
      problem("failed after the commit point without saying %s: %s", code, F.show(r.stderr))
    end
  end

  -- Readers see exactly the message files: no temp file, nothing partial.
  local rd = run(root, { "read", "c", "--as", "probe", "--all", "--peek" })
  if rd.code ~= 0 or rd.stderr ~= "" then
    problem("read --all --peek: %s", F.describe(rd))
  elseif table.concat(F.seqs(rd.stdout), ",") ~= table.concat(st.seqs, ",") then
    problem("read shows seqs %s, the channel has message files %s", table.concat(F.seqs(rd.stdout), ","),
      table.concat(st.seqs, ","))
  end
  for _, argv in ipairs({ { "task", "list", "c" }, { "check", "c", "src" } }) do
    local x = run(root, argv)
    if x.code ~= 0 or x.stderr ~= "" then
      problem("probe: %s", F.describe(x))
    end
  end

  -- The channel works: a post, and a read that shows it.
  local p = run(root, { "post", "c", "--from", "zed", "--title", "after the fault", "--body", "ok" })
  local rd2 = run(root, { "read", "c", "--as", "zed-reader" })
  if p.code ~= 0 or p.stderr ~= "" then
    problem("the next post: %s", F.describe(p))
  elseif rd2.code ~= 0 or not rd2.stdout:find("\ntitle: after the fault\n", 1, true) then
    problem("the next read: %s", F.describe(rd2))
  end
  if C.fsck_available() then
    local x = run(root, { "fsck" })
    if x.code ~= 0 then
      problem("fsck: %s", F.describe(x))
    end
  end
  return res
end

-- ------------------------------------------------------------ a walk

--- Run a plan; returns a summary {runs, by_action = {action = n},
--- stages = {"crash:0" = n, ...}, recovered, debris, after_error = {...},
--- problems = {...}, seconds}.
function C.walk(prep, runs)
  local t0 = F.now()
  local out = { runs = 0, by_action = {}, stages = {}, recovered = 0, debris = 0, after_error = {},
                after_error_points = {}, debris_by = {}, debris_kinds = {}, ok_points = {}, ok_runs = 0,
                problems = {} }
  for _, x in ipairs(runs) do
    local res = C.run_one(prep, x.fault, x.action)
    out.runs = out.runs + 1
    out.by_action[x.action] = (out.by_action[x.action] or 0) + 1
    local key = x.action:match("^%a+") .. ":" .. tostring(res.stage)
    out.stages[key] = (out.stages[key] or 0) + 1
    out.recovered = out.recovered + (res.recovered and 1 or 0)
    if #res.debris > 0 then
      local a = x.action:match("^%a+")
      out.debris = out.debris + 1
      out.debris_by[a] = (out.debris_by[a] or 0) + 1
      for _, d in ipairs(res.debris) do
        local kind = d:match("_seq%.lock") or d:match("%.seqres") or d:match("%.tmp$")
        out.debris_kinds[a .. " " .. kind] = (out.debris_kinds[a .. " " .. kind] or 0) + 1
      end
    end
    if x.action ~= "crash" and res.exit == 0 then
      out.ok_points[x.fault.point] = true
      out.ok_runs = out.ok_runs + 1
    end
    if res.after_error then
      out.after_error[#out.after_error + 1] = x.fault.rule .. ":" .. x.action
      out.after_error_points[x.fault.point] = true
    end
    table.move(res.problems, 1, #res.problems, #out.problems + 1, out.problems)
  end
  out.seconds = F.now() - t0
  return out
end

function C.shown(list)
  if #list == 0 then
    return "none"
  end
  local head = {}
  for i = 1, math.min(#list, 30) do
    head[i] = list[i]
  end
  return #list .. " problem(s):\n  " .. table.concat(head, "\n  ") .. (#list > 30 and "\n  ..." or "")
end

package.loaded["crashsupport"] = C
return C
