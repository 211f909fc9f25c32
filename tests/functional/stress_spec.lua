-- Stress (issue 8): 32 processes (stress_worker.lua) mix posts, reads,
-- waits, task claims, renews, releases, recovers, path locks and unlocks
-- on one channel for STRESS_SECONDS (20 in `make test`, longer in `make
-- torture`). Each logs what it did and when (monotonic times, one clock
-- for every process of the machine); then the invariants are checked:
--   * every post that succeeded has a seq of its own, its message file is
--     there exactly once with that seq, and the seqs have no gap that a
--     reported failure does not explain; every file's name and frontmatter
--     agree;
--   * no reader got a message twice, or missed one addressed to it below
--     the cursor it reached;
--   * no two workers held one task at overlapping times, nor overlapping
--     paths: a hold certainly lasts from the return of its claim or lock
--     (t1) until the call of the release or unlock (t0), a task lease at
--     most until the lease ran out (a renewal extends it);
--   * at the end the board, the claims and the locks are clean, nothing
--     is pending, and `agent-chat fsck` (when the binary has it) exits 0.
-- The numbers of operations per kind go to stderr (prove shows them).
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local json = require "agentchat.json"

local WORKERS = 32
local NTASKS = 12
local SECONDS = tonumber(os.getenv("STRESS_SECONDS") or "") or 20
-- Floating-point noise of the logged times (they come from one clock).
local EPS = 1e-6
-- Leases run on the wall clock, the logs on the monotonic one: a lease is
-- taken to end this much before its length is up, in case the wall clock
-- is slewed or stepped forward during the run.
local MARGIN = 0.05

--- The JSON lines of a worker's log.
local function read_log(path)
  local recs = {}
  for line in (H.read(path) or ""):gmatch("[^\n]+") do
    recs[#recs + 1] = assert(json.loads(line))
  end
  return recs
end

--- A refused operation (a conflict, a lease or lock rule, a wait that
--- timed out) changed nothing and used no seq; any other failure might
--- have.
local function refusal(code)
  code = code or ""
  return code == "ETIMEDOUT" or code:match("^LEASE_") or code:match("^PATH_LOCK_")
    or code:match("^TASK_")
end

--- Overlap of [a0, a1] and [b0, b1] longer than EPS.
local function overlap(a0, a1, b0, b1)
  return math.min(a1, b1) - math.max(a0, b0) > EPS
end

--- Intervals during which a worker certainly held each task: from a
--- claim's (or recover's) return, extended by each renewal to the call
--- time plus the lease, cut at the release's call.
local function task_holds(worker, recs, out)
  local cur
  local function close(t)
    if cur then
      for _, seg in ipairs(cur.segs) do
        seg[2] = math.min(seg[2], t)
        if seg[2] > seg[1] then
          out[#out + 1] = { task = cur.task, worker = worker, from = seg[1], to = seg[2] }
        end
      end
      cur = nil
    end
  end
  for _, r in ipairs(recs) do
    if (r.op == "claim" or r.op == "recover") and r.ok then
      close(r.t0)
      cur = { task = r.task, segs = { { r.t1, r.t0 + r.lease - MARGIN } } }
    elseif r.op == "renew" and r.ok and cur then
      cur.segs[#cur.segs + 1] = { r.t1, r.t0 + r.lease - MARGIN }
    elseif r.op == "renew" and not r.ok then
      close(r.t0)
    elseif r.op == "release" or r.op == "end" then
      close(r.t0)
    end
  end
  close(math.huge)
end

--- Intervals during which a worker held a path lock: from the lock's
--- return to its unlock's call (an expired lock still conflicts until it
--- is unlocked, and nobody here recovers locks); to the end of time when
--- the unlock failed.
local function lock_holds(worker, recs, out)
  local open = {}
  for _, r in ipairs(recs) do
    if r.op == "lock" and r.ok then
      open[r.id] = { id = r.id, worker = worker, paths = r.paths, from = r.t1 }
    elseif r.op == "unlock" and open[r.id] then
      local h = open[r.id]
      h.to = r.ok and r.t0 or math.huge
      out[#out + 1] = h
      open[r.id] = nil
    end
  end
  for _, h in pairs(open) do
    h.to = math.huge
    out[#out + 1] = h
  end
end

local function paths_overlap(a, b, ac)
  for _, p in ipairs(a) do
    for _, q in ipairs(b) do
      if ac.path_overlaps(p, q) then
        return true
      end
    end
  end
  return false
end

--- Pairs of holds (sorted by start) for which same(a, b) is true and the
--- times overlap: a list of problem texts.
local function overlapping(holds, same, show)
  table.sort(holds, function(a, b)
    return a.from < b.from
  end)
  local problems = {}
  for i = 1, #holds do
    for j = i + 1, #holds do
      local a, b = holds[i], holds[j]
      if b.from > a.to then
        break         -- sorted by start: no later hold overlaps a
      end
      if same(a, b) and overlap(a.from, a.to, b.from, b.to) then
        problems[#problems + 1] = show(a) .. " and " .. show(b)
      end
    end
  end
  return problems
end

--- Task holds of different workers on one task that overlap in time;
--- returns the problems and the number of holds.
local function task_violations(logs)
  local holds = {}
  for w, recs in pairs(logs) do
    task_holds(w, recs, holds)
  end
  return overlapping(holds, function(a, b)
    return a.task == b.task and a.worker ~= b.worker
  end, function(h)
    return ("%s by %s [%.6f, %.6f]"):format(h.task, h.worker, h.from, h.to)
  end), #holds
end

--- Path locks (different ones) on overlapping paths that overlap in time.
local function lock_violations(logs)
  local ac = require "agentchat"
  local holds = {}
  for w, recs in pairs(logs) do
    lock_holds(w, recs, holds)
  end
  return overlapping(holds, function(a, b)
    return a.id ~= b.id and paths_overlap(a.paths, b.paths, ac)
  end, function(h)
    return ("%s (%s) by %s [%.6f, %.6f]"):format(h.id, table.concat(h.paths, ","), h.worker,
      h.from, h.to)
  end), #holds
end

describe("the stress checkers", function()
  -- Hand-made logs: the checkers must see a double hold, and only that.
  it("see two workers holding one task, or overlapping paths, at once", function()
    local function rec(op, t0, t1, fields)
      fields.op, fields.t0, fields.t1, fields.ok = op, t0, t1, fields.ok ~= false
      return fields
    end
    local logs = {
      a = { rec("claim", 0, 1, { task = "t1", lease = 10 }), rec("release", 5, 6, { task = "t1" }),
            rec("lock", 0, 1, { id = "L1", paths = { "src" } }), rec("unlock", 5, 6, { id = "L1" }),
            rec("end", 9, 9, {}) },
      b = { rec("claim", 4, 4.5, { task = "t1", lease = 10 }),     -- while a holds t1
            rec("release", 7, 8, { task = "t1" }),
            rec("claim", 9, 9.5, { task = "t2", lease = 10 }),
            rec("lock", 3, 4, { id = "L2", paths = { "src/a.c" } }),  -- a holds src
            rec("unlock", 8, 9, { id = "L2" }),
            rec("lock", 2, 3, { id = "L3", paths = { "docs" } }),
            rec("end", 10, 10, {}) },
      c = { rec("claim", 6, 6.5, { task = "t1", lease = 5 }),      -- while b holds t1
            rec("claim", 9, 10, { task = "t3", lease = 0.5 }),     -- ran out at once: no hold
            rec("end", 10, 10, {}) },
    }
    local problems = task_violations(logs)
    assert.equal(2, #problems, table.concat(problems, "\n"))    -- a/b, and b/c on t1
    problems = lock_violations(logs)
    assert.equal(1, #problems, table.concat(problems, "\n"))    -- L1/L2 (L3 is elsewhere)
    -- Holds that only touch: a claim returning after the other's release
    -- call, or a lease that ran out (minus the margin) first.
    logs = {
      a = { rec("claim", 0, 1, { task = "t1", lease = 2 }), rec("end", 9, 9, {}) },
      b = { rec("recover", 1.5, 2, { task = "t1", lease = 2 }), rec("release", 3, 4, { task = "t1" }),
            rec("end", 9, 9, {}) },
      c = { rec("claim", 3.5, 4, { task = "t1", lease = 2 }), rec("end", 9, 9, {}) },
    }
    assert.same({}, (task_violations(logs)))
  end)
end)

describe("32 processes on one channel for STRESS_SECONDS", function()
  local root, work, chan, logs, rcs

  lazy_setup(function()
    root = F.new_root()
    work = F.tmpdir()
    chan = root .. "/c"
    local members = {}
    for i = 1, WORKERS do
      members[i] = ("w%02d"):format(i)
    end
    F.init(root, "c", "--members", table.concat(members, ","))
    for i = 1, NTASKS do
      local r = F.run({ "--root", root, "task", "create", "c", "t" .. i, "--from", "w01",
                        "--title", "task " .. i })
      assert(r.code == 0, F.describe(r))
    end
    for _, d in ipairs({ "src", "src/lib", "docs", "tests" }) do
      assert(os.execute("mkdir -p " .. F.sh(chan .. "/" .. d)))
    end
    -- All workers start together (a go-file barrier) and run SECONDS.
    local lines = {
      'W=$1; R=$2; S=$3; SEED=$4; WORKER=$5',
      'job() { while [ ! -e "$W/go" ]; do sleep 0.01; done',
      '  "$A" --root "$R" run "$WORKER" "$1" c "$S" "$W/$1.log" "$2" "$A" ' .. NTASKS
        .. ' >"$W/$1.out" 2>"$W/$1.err"; echo $? >"$W/$1.rc"; }',
    }
    for i = 1, WORKERS do
      lines[#lines + 1] = ("job w%02d $((SEED + %d)) &"):format(i, i)
    end
    lines[#lines + 1] = 'sleep 0.5; : >"$W/go"; wait'
    local seed = os.time()
    io.stderr:write(("stress: %d workers, %g s, seed %d\n"):format(WORKERS, SECONDS, seed))
    local rc = F.shell(table.concat(lines, "\n") .. "\n", nil, work, root, tostring(SECONDS),
      tostring(seed), H.repo .. "/tests/functional/stress_worker.lua")
    assert(rc == 0, "the stress script failed")
    logs, rcs = {}, {}
    for i = 1, WORKERS do
      local w = ("w%02d"):format(i)
      rcs[w] = { rc = tonumber(H.read(work .. "/" .. w .. ".rc") or ""),
                 err = H.read(work .. "/" .. w .. ".err") or "" }
      logs[w] = read_log(work .. "/" .. w .. ".log")
    end
  end)

  it("every worker ran to its end and reports its operations", function()
    local counts, kinds = {}, {}
    for w, recs in pairs(logs) do
      assert.equal(0, rcs[w].rc, w .. " failed: " .. rcs[w].err)
      assert.equal("end", recs[#recs] and recs[#recs].op, w .. " did not finish its log")
      for _, r in ipairs(recs) do
        if r.op ~= "end" then
          local key = r.op
          if not counts[key] then
            counts[key] = { ok = 0, failed = 0, codes = {} }
            kinds[#kinds + 1] = key
          end
          if r.ok then
            counts[key].ok = counts[key].ok + 1
          else
            counts[key].failed = counts[key].failed + 1
            counts[key].codes[r.code] = (counts[key].codes[r.code] or 0) + 1
          end
        end
      end
    end
    table.sort(kinds)
    local total = 0
    for _, k in ipairs(kinds) do
      local c = counts[k]
      local codes = {}
      for code, n in pairs(c.codes) do
        codes[#codes + 1] = code .. " " .. n
      end
      table.sort(codes)
      total = total + c.ok + c.failed
      io.stderr:write(("stress: %-8s %6d ok %6d refused%s\n"):format(k, c.ok, c.failed,
        #codes > 0 and (" (" .. table.concat(codes, ", ") .. ")") or ""))
    end
    io.stderr:write(("stress: %d operations in %g s\n"):format(total, SECONDS))
    assert.is_true(counts.post.ok > 0 and counts.claim.ok > 0 and counts.lock.ok > 0)
  end)

  it("gives every post a seq of its own, each message once, no unexplained gap", function()
    local files, by_seq, problems = {}, {}, {}
    for _, name in ipairs(H.ls(chan)) do
      local n = name:match("^(%d+)%-.*%.md$")
      if n then
        local seq = tonumber(n)
        local text = H.read(chan .. "/" .. name)
        local fm_seq = tonumber(text:match("^%-%-%-\nseq: (%d+)\n"))
        if fm_seq ~= seq then
          problems[#problems + 1] = name .. ": frontmatter seq " .. tostring(fm_seq)
        end
        if by_seq[seq] then
          problems[#problems + 1] = "seq " .. seq .. " twice: " .. by_seq[seq] .. ", " .. name
        end
        by_seq[seq] = name
        files[#files + 1] = { seq = seq, name = name, text = text }
      end
    end
    -- Tokens: each post's body-<token> is in exactly one file, the one of
    -- its seq.
    local token_file = {}
    for _, f in ipairs(files) do
      for token in f.text:gmatch("\nbody%-(w%d%d%-%d+)\n") do
        if token_file[token] then
          problems[#problems + 1] = "token " .. token .. " in two files"
        end
        token_file[token] = f
      end
    end
    local seqs_of_posts, failures, max_seq = {}, 0, 0
    for w, recs in pairs(logs) do
      for _, r in ipairs(recs) do
        if r.op == "post" and r.ok then
          local f = token_file[r.token]
          if not f then
            problems[#problems + 1] = w .. ": post " .. r.token .. " (#" .. r.seq .. ") is missing"
          elseif f.seq ~= r.seq then
            problems[#problems + 1] = w .. ": post " .. r.token .. " reported #" .. r.seq
              .. ", is in " .. f.name
          end
          if seqs_of_posts[r.seq] then
            problems[#problems + 1] = "seq " .. r.seq .. " reported to two posts"
          end
          seqs_of_posts[r.seq] = true
        elseif r.op ~= "end" and not r.ok and not refusal(r.code) then
          failures = failures + 1     -- a failure that may have used a seq
        end
      end
    end
    for _, f in ipairs(files) do
      max_seq = math.max(max_seq, f.seq)
    end
    local gaps = 0
    for s = 1, max_seq do
      if not by_seq[s] then
        gaps = gaps + 1
      end
    end
    io.stderr:write(("stress: %d messages, highest seq %d, %d gaps, %d failed operations, "
      .. "%d violations\n"):format(#files, max_seq, gaps, failures,
      #problems + (gaps > failures and 1 or 0)))
    assert.is_true(gaps <= failures, gaps .. " seq gaps but " .. failures .. " failures")
    assert.same({}, problems)
  end)

  it("delivers no message twice and misses none below a reader's cursor", function()
    local ac = require "agentchat"
    local r = assert(ac.open(root):channel("c"))
    local all = assert(r:peek(1000000)).messages
    local function for_worker(m, w)
      if m.from == w then
        return false
      end
      local to = m.to or "all"
      if to == "all" or to == "" or to == "*" or to == "[]" then
        return true
      end
      for part in to:gsub("^%[", ""):gsub("%]$", ""):gmatch("[^,]+") do
        if part:match("^%s*(.-)%s*$") == w then
          return true
        end
      end
      return false
    end
    local problems, delivered_total = {}, 0
    for w, recs in pairs(logs) do
      local got, last, cursor = {}, 0, 0
      for _, rec in ipairs(recs) do
        if rec.seqs then
          for _, s in ipairs(rec.seqs) do
            if got[s] then
              problems[#problems + 1] = w .. " got #" .. s .. " twice"
            elseif s <= last then
              problems[#problems + 1] = w .. " got #" .. s .. " after #" .. last
            end
            got[s], last = true, math.max(last, s)
            delivered_total = delivered_total + 1
          end
          cursor = math.max(cursor, rec.cursor or 0)
        end
      end
      for _, m in ipairs(all) do
        if m.seq <= cursor and for_worker(m, w) and not got[m.seq] then
          problems[#problems + 1] = w .. " missed #" .. m.seq .. " (cursor " .. cursor .. ")"
        end
      end
    end
    r:close()
    io.stderr:write(("stress: %d deliveries checked, %d violations\n"):format(delivered_total,
      #problems))
    assert.same({}, problems)
  end)

  it("never lets two workers hold one task at overlapping times", function()
    local problems, n = task_violations(logs)
    io.stderr:write(("stress: %d task holds checked, %d violations\n"):format(n, #problems))
    assert.is_true(n > 0)
    assert.same({}, problems)
  end)

  it("never lets two workers hold overlapping paths at overlapping times", function()
    local problems, n = lock_violations(logs)
    io.stderr:write(("stress: %d lock holds checked, %d violations\n"):format(n, #problems))
    assert.is_true(n > 0)
    assert.same({}, problems)
  end)

  it("leaves a clean channel: open tasks, no claims, no locks, nothing pending", function()
    local ac = require "agentchat"
    local ch = assert(ac.open(root):channel("c"))
    local tasks = assert(ch:tasks())
    assert.equal(NTASKS, #tasks)
    for _, t in ipairs(tasks) do
      assert.equal("open", t.status, t.id)
      assert.equal(json.null, t.owner or json.null, t.id)
    end
    assert.same({}, assert(ch:locks()))
    ch:close()
    local left = {}
    for _, sub in ipairs({ "claims", "locks", "tasks" }) do
      for _, name in ipairs(H.ls(chan .. "/" .. sub)) do
        if name:sub(1, 1) == "." then
          left[#left + 1] = sub .. "/" .. name     -- a journal or a temp file
        end
      end
    end
    for _, name in ipairs(H.ls(chan .. "/claims")) do
      left[#left + 1] = "claims/" .. name
    end
    for _, name in ipairs(H.ls(chan)) do
      if name:sub(1, 1) == "." and name ~= ".cursors" and name ~= ".seqhigh"
          and not name:match("%.lock$") then
        left[#left + 1] = name
      end
    end
    assert.same({}, left)
  end)

  it("passes agent-chat fsck when the binary has it", function()
    local help = F.run({ "fsck", "--help" })
    if help.code ~= 0 then
      io.stderr:write("stress: no fsck command in this binary: not run\n")
      return
    end
    local r = F.run({ "--root", root, "fsck" })
    assert.equal(0, r.code, F.describe(r))
  end)
end)
