-- A poster stopped while it holds _seq.lock (issue 14.1). Its lock ages
-- past 30 s, other posters steal it as stale and post, a reader reads past
-- them; then the stopped poster resumes. Before fencing it published its
-- lower seq (the reader never saw it), lowered .seqhigh and left a stale
-- scan stamp, so the next post reused a seq. Now it finds out that its lock
-- is gone before it raises .seqhigh or links the message, or right after
-- the link, and posts again above the others (seq.h, "Fencing").
--
-- Deterministic: the poster stops itself at a fault point (the "stop"
-- action of fault.h: SIGSTOP there, carry on after SIGCONT), cycling
-- through every step after its mkdir of the lock, 40 trials in all. Each
-- trial checks: no seq on two files, the reader sees each of the three
-- messages exactly once, .seqhigh never below what it was, fsck clean, and
-- the next post takes the next seq. The counts go to stderr.
--
-- AGENT_CHAT_PAUSE_SECONDS=N (make torture) adds a looped stress variant:
-- for N seconds, rounds of a poster stopped at a random step, its lock
-- aged, 0 to 3 thieves (none: the lock is only too old, not stolen), and
-- the same checks.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

-- Every step of a post after the lock is taken, named points and the
-- system calls right after the two gates (the rename of .seqhigh and the
-- link of the message come after the last check of the lock).
local POINTS = {
  "seq.locked", "sys.create#1", "post.seqhigh.write", "post.seqhigh.fsync", "post.seqhigh.publish",
  "sys.rename#1", "post.message.write", "post.message.fsync", "post.message.publish", "sys.link#1",
  "post.dirsync", "post.unlock",
}
local TRIALS = 40

-- Start a post with the fault rules $3 (one stops it; a subshell waits for
-- it and writes its exit status to $W/paused.rc) and the fault log $5 (if
-- any); wait until it is stopped (state T in /proc) or gone. Exit 0 once
-- stopped, 3 if it never stopped.
local START = [[
R=$1; W=$2; P=$3; T=$4
[ -n "$5" ] && export AGENT_CHAT_FAULT_LOG="$5" AGENT_CHAT_FAULT_LOG_SYS=1
( AGENT_CHAT_FAULT="$P" sh -c 'echo $$ >"$1/pid.tmp" && mv "$1/pid.tmp" "$1/pid" &&
    exec "$0" --root "$2" post dev --from paused --title "$3" --body x' "$A" "$W" "$R" "$T" \
    >"$W/paused.out" 2>"$W/paused.err" </dev/null
  echo $? >"$W/rc.tmp" && mv "$W/rc.tmp" "$W/paused.rc" ) >/dev/null 2>&1 &
n=0
while :; do
  n=$((n+1))
  [ $n -gt 6000 ] && exit 3
  if [ -f "$W/pid" ]; then
    pid=$(cat "$W/pid")
    st=$(sed 's/^.*) //' /proc/$pid/stat 2>/dev/null | cut -d' ' -f1)
    [ "$st" = T ] && exit 0
    [ -f "$W/paused.rc" ] && exit 3
  fi
  sleep 0.005
done
]]

-- Resume it and wait for $W/paused.rc (a watchdog kills it after 60 s).
local RESUME = [[
W=$1
pid=$(cat "$W/pid")
kill -CONT $pid
n=0
while [ ! -f "$W/paused.rc" ]; do
  n=$((n+1)); [ $n -eq 12000 ] && kill -KILL $pid
  sleep 0.005
done
]]

local function seqhigh(root)
  return tonumber(F.read(root .. "/dev/.seqhigh") or "0") or -1
end

-- Titles the reader got, from read output.
local function titles(stdout, into)
  for t in (stdout or ""):gmatch("\ntitle: ([^\n]*)\n") do
    into[#into + 1] = t
  end
  return into
end

-- Seqs used by more than one message file.
local function duplicate_seqs(dir)
  local seen, dups = {}, {}
  for _, name in ipairs(H.ls(dir)) do
    local n = name:match("^(%d+)%-.*%.md$")
    if n then
      if seen[n] then
        dups[#dups + 1] = n
      end
      seen[n] = true
    end
  end
  return dups
end

local function lock_age(root, sec)
  local lock = root .. "/dev/_seq.lock"
  os.execute("[ -d " .. F.sh(lock) .. " ] && touch -d '-" .. sec .. " seconds' " .. F.sh(lock))
end

--- One trial: the poster stopped at `point`, its lock aged 40 s, `thieves`
--- (default 2) others post, the reader reads, then the poster resumes.
--- Returns a list of problems and counts {dups =, lost =, dup_delivery =}.
local function trial(point, i, thieves)
  thieves = thieves or 2
  local root = F.new_root()
  local work = F.tmpdir()
  local problems = {}
  local function bad(fmt, ...)
    problems[#problems + 1] = point .. ": " .. string.format(fmt, ...)
  end
  F.init(root, "dev")
  F.post(root, "dev", "alice", "first", "x")
  F.ok(root, { "read", "dev", "--as", "reader" })
  local title = "paused " .. i
  if F.shell(START, nil, root, work, point .. ":stop", title) ~= 0 then
    bad("the poster never stopped: %s", F.show(F.read(work .. "/paused.err")))
    return problems, { dups = 0, lost = 0, dup_delivery = 0 }
  end
  lock_age(root, 40)
  local seen, want = {}, { title }
  for k = 1, thieves do
    want[#want + 1] = "thief " .. k
    F.post(root, "dev", "thief", want[#want], "x")
  end
  titles(F.ok(root, { "read", "dev", "--as", "reader" }).stdout, seen)
  local high_before = seqhigh(root)
  F.shell(RESUME, nil, work)
  local rc = tonumber(F.read(work .. "/paused.rc"))
  local out, err = F.read(work .. "/paused.out") or "", F.read(work .. "/paused.err") or ""
  if rc ~= 0 or not out:match("^posted #%d+") then
    bad("the resumed poster: exit %s, stdout %s, stderr %s", tostring(rc), F.show(out), F.show(err))
  end
  titles(F.ok(root, { "read", "dev", "--as", "reader" }).stdout, seen)
  local dir = root .. "/dev"
  local dups = duplicate_seqs(dir)
  if #dups > 0 then
    bad("seqs on two files: %s", table.concat(dups, " "))
  end
  local count, lost, twice = {}, 0, 0
  for _, t in ipairs(seen) do
    count[t] = (count[t] or 0) + 1
  end
  for _, t in ipairs(want) do
    if not count[t] then
      lost = lost + 1
      bad("the reader never saw %q (it saw %s)", t, table.concat(seen, ", "))
    elseif count[t] > 1 then
      twice = twice + 1
      bad("the reader saw %q %d times", t, count[t])
    end
  end
  local max = 0
  for _, s in ipairs(F.file_seqs(dir)) do
    max = math.max(max, s)
  end
  if seqhigh(root) < high_before or seqhigh(root) < max then
    bad(".seqhigh went from %d to %d (highest file %d)", high_before, seqhigh(root), max)
  end
  local posted = tonumber(out:match("^posted #(%d+)"))
  if posted and not F.read(dir .. "/" .. (out:match("%-> dev/(%S+)") or "?")) then
    bad("the resumed poster printed %s but that file is not there", F.show(out))
  end
  local fsck = F.ac(root, { "fsck", "dev" })
  if fsck.code ~= 0 then
    bad("fsck: %s", F.describe(fsck))
  end
  local next_seq = F.post(root, "dev", "alice", "after", "x")
  local dups_after = duplicate_seqs(dir)
  if next_seq ~= max + 1 or #dups_after > #dups then
    bad("the next post got #%s after #%d", tostring(next_seq), max)
  end
  dups = dups_after
  if F.read(dir .. "/_seq.lock") or #H.ls(dir .. "/_seq.lock") > 0 or H.ls(dir)[1] == "_seq.lock" then
    bad("_seq.lock left behind")
  end
  return problems, { dups = #dups, lost = lost, dup_delivery = twice }
end

--- Run trials while `more(i)` says so, each at the point and with the
--- thieves `pick(i)` gives. Returns the problems, the totals and the count.
local function trials(more, pick)
  local problems, totals, i = {}, { dups = 0, lost = 0, dup_delivery = 0 }, 0
  while more(i + 1) do
    i = i + 1
    local p, c = trial(pick(i))
    table.move(p, 1, #p, #problems + 1, problems)
    for k, v in pairs(c) do
      totals[k] = totals[k] + v
    end
  end
  return problems, totals, i
end

describe("a poster stopped while holding _seq.lock (issue 14.1)", function()
  it(TRIALS .. " trials at every step after the lock: no duplicate seq, nothing lost for a reader", function()
    local problems, totals = trials(function(i) return i <= TRIALS end,
      function(i) return POINTS[(i - 1) % #POINTS + 1], i end)
    io.stderr:write(string.format("# paused poster: %d trials over %d points: %d duplicate seqs, "
      .. "%d messages lost for the reader, %d delivered twice\n", TRIALS, #POINTS, totals.dups,
      totals.lost, totals.dup_delivery))
    assert.equal(0, #problems, table.concat(problems, "\n"))
  end)

  it("a poster stopped with its lock aged but not stolen posts normally", function()
    local root = F.new_root()
    local work = F.tmpdir()
    F.init(root, "dev")
    F.post(root, "dev", "alice", "first", "x")
    assert.equal(0, F.shell(START, nil, root, work, "post.message.write:stop", "alone"))
    lock_age(root, 40)
    F.shell(RESUME, nil, work)
    assert.equal("0", (F.read(work .. "/paused.rc") or ""):match("%d+"), F.read(work .. "/paused.err"))
    -- It had raised .seqhigh to 2 before it stopped; its lock too old to
    -- trust, it starts over and burns #2 (as a crash there would).
    assert.truthy((F.read(work .. "/paused.out") or ""):match("^posted #3 "), F.read(work .. "/paused.out"))
    assert.same({ 1, 3 }, F.file_seqs(root .. "/dev"))
    assert.equal(3, seqhigh(root))
    assert.is_nil(F.read(root .. "/dev/_seq.lock/x"))
    assert.equal(0, F.ac(root, { "fsck", "dev" }).code)
  end)
end)

-- The move (a poster stopped right before its link, passed by others, posts
-- the message again above them and removes the first copy) adds durable
-- steps to a post: a crash at each of them (the crash walk's rule, here
-- after the stop) leaves the message visible, as the first copy, the second
-- or both, never a seq on two files, and the channel usable once the
-- crashed poster's lock is stale.
describe("a crash while a stopped poster moves its message (issue 14.1)", function()
  local function run(rules, log)
    local root = F.new_root()
    local work = F.tmpdir()
    F.init(root, "dev")
    F.post(root, "dev", "alice", "first", "x")
    assert.equal(0, F.shell(START, nil, root, work, rules, "moved", log or ""))
    lock_age(root, 40)
    F.post(root, "dev", "thief", "thief 1", "x")
    F.post(root, "dev", "thief", "thief 2", "x")
    F.shell(RESUME, nil, work)
    return root, tonumber(F.read(work .. "/paused.rc")), F.read(work .. "/paused.err")
  end

  it("ends with the message visible at every crash point after the link", function()
    local log = F.tmpdir() .. "/log"
    local root, rc = run("sys.link#1:stop", log)
    assert.equal(0, rc)
    assert.same({ 1, 3, 4, 5 }, F.file_seqs(root .. "/dev"))   -- #2 moved to #5
    local sys, first_link = {}, nil
    for line in (F.read(log) or ""):gmatch("[^\n]+") do
      if line:match("^sys%.") then
        sys[#sys + 1] = line
        if line == "sys.link" and not first_link then
          first_link = #sys
        end
      end
    end
    assert.truthy(first_link and #sys >= first_link + 8, table.concat(sys, " "))
    local problems = {}
    for j = first_link + 1, #sys do
      local r, code, err = run("sys.link#1:stop,sys.*#" .. j .. ":crash")
      local where = string.format("crash at sys.*#%d (%s): ", j, sys[j])
      local dir = r .. "/dev"
      local copies = 0
      for _, name in ipairs(H.ls(dir)) do
        if name:match("^%d+%-paused%-moved%.md$") then
          copies = copies + 1
        end
      end
      if code ~= 137 then
        problems[#problems + 1] = where .. "exit " .. tostring(code) .. " " .. F.show(err)
      end
      if copies < 1 or #duplicate_seqs(dir) > 0 then
        problems[#problems + 1] = where .. copies .. " copies, duplicate seqs " .. table.concat(duplicate_seqs(dir), " ")
      end
      lock_age(r, 40)
      local fsck = F.ac(r, { "fsck", "dev", "--repair" })
      if fsck.code ~= 0 then
        problems[#problems + 1] = where .. F.describe(fsck)
      end
      local max = 0
      for _, n in ipairs(F.file_seqs(dir)) do
        max = math.max(max, n)
      end
      -- Above every file (a seq reserved before the crash is burnt).
      local next_seq = F.post(r, "dev", "alice", "after", "x")
      if next_seq <= max or #duplicate_seqs(dir) > 0 then
        problems[#problems + 1] = where .. "the next post is #" .. next_seq .. " after #" .. max
      end
    end
    assert.equal(0, #problems, table.concat(problems, "\n"))
  end)
end)

local LOOP = tonumber(os.getenv("AGENT_CHAT_PAUSE_SECONDS") or "")
if LOOP and LOOP > 0 then
  describe("a stopped poster, looped with random steps and thieves (make torture)", function()
    it("keeps seqs unique and loses nothing for " .. LOOP .. " s", function()
      local t0 = F.now()
      math.randomseed(os.time())
      local problems, totals, rounds = trials(function() return F.now() - t0 < LOOP end,
        function(i) return POINTS[math.random(#POINTS)], i, math.random(0, 3) end)
      io.stderr:write(string.format("# paused poster loop: %d rounds in %.0f s: %d duplicate seqs, "
        .. "%d lost, %d delivered twice\n", rounds, F.now() - t0, totals.dups, totals.lost,
        totals.dup_delivery))
      assert.equal(0, #problems, table.concat(problems, "\n"))
    end)
  end)
end
