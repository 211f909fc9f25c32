-- On-disk byte identity (issue 11): a fixed workload, run with a frozen
-- wall clock and frozen random ids, leaves exactly the folder (every file,
-- hidden ones included, byte for byte) and prints exactly the transcript
-- (exit codes, stdout, stderr) recorded in tests/golden/identity/ by a
-- build of main without the store interface work of issue 11 (first
-- 5cc4d3a; re-recorded from main 9fe7894, whose `state` renders state.md
-- differently, issue 12). Any change of a byte on disk, a step's order
-- (which record or message comes first) or an output line shows here.
--
-- The workload: posts (reply, direct, status), read and inbox cursors, the
-- legacy marker claim, every task operation (create, update, claim, renew,
-- release, done, block, recover) and a refused one, lease journals left by
-- crashes at four points and resolved by `task recover-pending` (rollback
-- of prepared and applied-unannounced changes, cleanup of applied-announced
-- and published ones, --resolve-publication), path locks (lock, check,
-- unlock, recover) with their journals left by crashes and resolved by
-- `recover-pending`, acks, typed request and response, events, compact and
-- state --write, imports of a team and a bus folder, and fsck --repair.
--
-- How time and ids are frozen: tests/identity/frozen.c, an LD_PRELOAD shim
-- (build/tests/libfrozen.so) that makes CLOCK_REALTIME, gettimeofday and
-- time return AGENT_CHAT_FROZEN_US and getrandom a seeded stream; each
-- step gets its own instant (one second after the previous one) and seed.
-- The zone is a fixed POSIX one (+05:30) that needs no tzdata. Crashes are
-- fault points (fault.h) with the crash action, never while a post holds
-- _seq.lock (a frozen clock would never see that lock go stale).
--
-- Recording (with a build of main, only when main itself changed what it
-- writes; the store work must never need it):
--   AGENT_CHAT_IDENTITY_RECORD=1 AGENT_CHAT_BIN=MAIN-BINARY \
--     tests/run-one tests/functional/identity_spec.lua
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local REPO = (function()
  local p = io.popen("cd " .. F.sh(H.repo) .. " && pwd")
  local dir = p:read("l")
  p:close()
  return dir
end)()
local GOLDEN_DIR = REPO .. "/tests/golden/identity"
local PRELOAD = REPO .. "/build/tests/libfrozen.so"
local RECORD = (os.getenv("AGENT_CHAT_IDENTITY_RECORD") or "") == "1"
local BASE_US = 1717243200 * 1000000          -- 2024-06-01T12:00:00Z
local TEAM = REPO .. "/tests/fixtures/import/team"
local BUS = REPO .. "/tests/fixtures/import/bus"

-- A step: argv (run with --root), or {plant = function(root)}; `fault`
-- runs it with AGENT_CHAT_FAULT="<fault>:crash".
local STEPS = {
  { "init", "c", "--members", "lead,alice,bob,carol", "--topic", "identity" },
  { "init", "side" },
  { "post", "c", "--from", "lead", "--title", "Kickoff", "--body", "the plan\nline two" },
  { "post", "c", "--from", "alice", "--to", "bob", "--title", "Question", "--body", "ok?", "--reply", "1" },
  { "post", "c", "--from", "bob", "--title", "Decision: ship it", "--status", "decision", "--body", "yes" },
  { "post", "side", "--from", "carol", "--title", "Üñïcödé title", "--body", "naïve\n" },
  { "read", "c", "--as", "bob" },
  { "read", "c", "--as", "alice", "--peek" },
  { "inbox", "--as", "carol" },
  { plant = function(root)
      H.write(root .. "/c/task-legacy.md", "# legacy marker\n")
    end },
  { "claim", "c", "task-legacy.md", "--as", "bob" },
  { "task", "create", "c", "t1", "--from", "lead", "--title", "Parser", "--files-hint", "src/a.c,src/b.c",
    "--acceptance", "tests pass", "--acceptance", "docs", "--branch", "feat/parser" },
  { "task", "create", "c", "t2", "--from", "lead", "--title", "Printer", "--depends-on", "t1" },
  { "task", "create", "c", "t3", "--from", "lead", "--title", "Blocked one", "--owner", "carol" },
  { "task", "create", "c", "t4", "--from", "lead", "--title", "Expiring" },
  { "task", "create", "c", "t5", "--from", "lead", "--title", "Crash target" },
  { "task", "create", "c", "t1", "--from", "lead", "--title", "Duplicate" },
  { "task", "update", "c", "t1", "--as", "lead", "--title", "Parser v2", "--acceptance", "fuzzed" },
  { "task", "claim", "c", "t2", "--as", "alice" },
  { "task", "claim", "c", "t1", "--as", "alice", "--lease", "600" },
  { "task", "renew", "c", "t1", "--as", "alice", "--lease", "900" },
  { "task", "block", "c", "t1", "--as", "alice" },
  { "task", "done", "c", "t1", "--as", "alice" },
  { "task", "claim", "c", "t2", "--as", "bob" },
  { "task", "release", "c", "t2", "--as", "bob" },
  { "task", "block", "c", "t3", "--as", "carol" },
  { "task", "update", "c", "t3", "--as", "carol", "--status", "open" },
  { "task", "claim", "c", "t4", "--as", "carol", "--lease", "0.001" },
  { "task", "recover", "c", "t4", "--as", "dave", "--reason", "carol left" },
  { "task", "done", "c", "t4", "--as", "dave" },
  { "task", "list", "c" },
  { "task", "show", "c", "t2" },
  -- lease journals left by crashes, each resolved by recover-pending
  { "task", "claim", "c", "t5", "--as", "erin", fault = "lease.task.write" },
  { "task", "claim", "c", "t5", "--as", "erin" },
  { "task", "recover-pending", "c", "--as", "ops" },
  { "task", "claim", "c", "t5", "--as", "erin", fault = "lease.audit" },
  { "task", "recover-pending", "c", "--as", "ops" },
  { "task", "claim", "c", "t5", "--as", "erin", fault = "lease.journal.published.write" },
  { "task", "recover-pending", "c", "--as", "ops" },
  { "task", "renew", "c", "t5", "--as", "erin", fault = "lease.journal.delete" },
  { "task", "recover-pending", "c", "--as", "ops" },
  { "task", "release", "c", "t5", "--as", "erin", fault = "lease.journal.published.write" },
  { "task", "recover-pending", "c", "--as", "ops", "--resolve-publication", "rollback" },
  { "task", "done", "c", "t5", "--as", "erin", fault = "lease.journal.published.write" },
  { "task", "recover-pending", "c", "--as", "ops", "--resolve-publication", "published" },
  { "task", "recover-pending", "c", "--as", "ops" },
  -- path locks
  { "lock", "c", "src/a.c", "src/lib", "--as", "alice" },
  { "lock", "c", "docs", "--as", "bob", "--lease-seconds", "1" },
  { "lock", "c", "src/lib/x.c", "--as", "carol" },
  { "check", "c", "src", "docs/readme" },
  { "unlock", "c", "src/a.c", "--as", "alice" },
  { "recover", "c", "docs", "--as", "carol", "--reason", "bob is gone" },
  { "lock", "c", "tmp/one", "--as", "dave", fault = "pathlock.journal.applied.write" },
  { "lock", "c", "tmp/two", "--as", "dave" },
  { "recover-pending", "c", "--as", "ops" },
  { "unlock", "c", "docs", "--as", "carol", fault = "pathlock.journal.published.write" },
  { "recover-pending", "c", "--as", "ops" },
  { "lock", "c", "tmp/three", "--as", "dave", fault = "pathlock.journal.remove" },
  { "recover-pending", "c", "--as", "ops" },
  { "unlock", "c", "tmp/three", "--as", "dave", fault = "pathlock.journal.published.write" },
  { "recover-pending", "c", "--as", "ops", "--resolve-publication", "rollback" },
  { "recover-pending", "c", "--as", "ops" },
  -- acks, typed messages, events
  { "ack", "c", "2", "--as", "bob" },
  { "ack", "c", "2", "--as", "bob" },
  { "ack", "c", "1", "--as", "carol" },
  { "request", "c", "--from", "lead", "--to", "bob", "--type", "shutdown_request", "--body", "stop?",
    "--no-wait" },
  { "respond", "c", "--from", "bob", "--request", "rq-fixed", "--approve", "--reason", "done" },
  { "event", "post", "c", "--from", "alice", "--type", "capability", "--harness", "claude",
    "--primitives", "messages,tasks", "--primitives", "leases" },
  { "event", "post", "c", "--from", "alice", "--type", "status", "--harness", "claude", "--status", "busy",
    "--detail", "parsing" },
  { "event", "read", "c" },
  -- derived state, imports, fsck
  { "compact", "c", "--as", "lead" },
  { "state", "side", "--write" },
  { "import", "team", TEAM, "--into", "team" },
  { "import", "team", TEAM, "--into", "team" },
  { "import", "bus", BUS, "--into", "bus" },
  { "read", "team", "--as", "team-lead" },
  { "channels" },
  { "fsck", "c", "--repair" },
}

-- The request's id is frozen too (its uuid comes from getrandom), but the
-- response needs it on the command line: a fixed --request-id.
for _, s in ipairs(STEPS) do
  if s[1] == "request" then
    s[#s + 1] = "--request-id"
    s[#s + 1] = "rq-fixed"
  end
end

local function escape(s)
  return (s:gsub("[%z\1-\9\11-\31\127]", function(c)
    return string.format("\\x%02x", c:byte())
  end))
end

--- The folder as text: one "== <kind> <path>" line per entry (sorted
--- bytewise), file contents escaped (control bytes but newline as \xNN),
--- each followed by "<EOF>" so a missing final newline shows.
local function dump(root)
  local snap = F.snapshot(root)
  local paths = {}
  for p in pairs(snap) do
    paths[#paths + 1] = p
  end
  table.sort(paths)
  local out = {}
  for _, p in ipairs(paths) do
    local v = snap[p]
    if v == "d" then
      out[#out + 1] = "== dir " .. escape(p) .. "\n"
    elseif v:sub(1, 2) == "f:" then
      out[#out + 1] = "== file " .. escape(p) .. "\n" .. escape(v:sub(3)) .. "<EOF>\n"
    elseif v:sub(1, 2) == "l:" then
      out[#out + 1] = "== link " .. escape(p) .. " -> " .. escape(v:sub(3)) .. "\n"
    else
      out[#out + 1] = "== " .. v .. " " .. escape(p) .. "\n"
    end
  end
  return table.concat(out)
end

--- Run the workload in a fresh root; returns the transcript and the dump.
local function run_workload()
  local root = H.tmpdir() .. "/root"
  assert(os.execute("mkdir -p " .. F.sh(root)))
  local lines = {}
  for i, step in ipairs(STEPS) do
    if step.plant then
      step.plant(root)
      lines[#lines + 1] = string.format("## %d plant\n", i)
    else
      local argv = { "--root", root }
      table.move(step, 1, #step, 3, argv)
      local env = {
        LD_PRELOAD = PRELOAD,
        ASAN_OPTIONS = "verify_asan_link_order=0:detect_leaks=0",
        TZ = "XYZ-5:30",
        AGENT_CHAT_FROZEN_US = tostring(BASE_US + i * 1000000),
        AGENT_CHAT_FROZEN_SEED = tostring(i),
        AGENT_CHAT_FAULT = step.fault and (step.fault .. ":crash") or false,
      }
      local r = F.run(argv, { env = env })
      local function clean(s)
        s = s:gsub(root:gsub("%p", "%%%0"), "<root>")
        return (s:gsub(REPO:gsub("%p", "%%%0"), "<repo>"))
      end
      local shown = {}
      for k = 3, #argv do
        shown[#shown + 1] = clean(argv[k])
      end
      lines[#lines + 1] = string.format("## %d %s%s\nexit %d\n-- stdout\n%s-- stderr\n%s",
        i, table.concat(shown, " "), step.fault and (" [crash at " .. step.fault .. "]") or "",
        r.code, escape(clean(r.stdout)), escape(clean(r.stderr)))
    end
  end
  return table.concat(lines), dump(root)
end

describe("on-disk byte identity", function()
  it("has its clock-and-id freezer", function()
    assert.truthy(H.read(PRELOAD), "build it first: make build/tests/libfrozen.so (make tests does)")
  end)

  it("the freezer works: two runs of the workload are identical", function()
    -- (a cheap check of determinism on a prefix of the workload)
    local saved = {}
    for i = 1, #STEPS do
      saved[i] = STEPS[i]
    end
    for i = #STEPS, 16, -1 do
      STEPS[i] = nil
    end
    local t1, d1 = run_workload()
    local t2, d2 = run_workload()
    for i = 1, #saved do
      STEPS[i] = saved[i]
    end
    assert.equal(t1, t2)
    assert.equal(d1, d2)
    assert.truthy(d1:find("2024-06-01T17:30:01+05:30", 1, true), "the frozen clock reached the files")
  end)

  it("the workload leaves the recorded folder and prints the recorded transcript", function()
    local transcript, tree = run_workload()
    if RECORD then
      os.execute("mkdir -p " .. F.sh(GOLDEN_DIR))
      H.write(GOLDEN_DIR .. "/transcript.txt", transcript)
      H.write(GOLDEN_DIR .. "/tree.txt", tree)
      print("# recorded " .. GOLDEN_DIR .. " with " .. F.source_bin)
      return
    end
    local want_tree = H.read(GOLDEN_DIR .. "/tree.txt")
    local want_transcript = H.read(GOLDEN_DIR .. "/transcript.txt")
    assert.truthy(want_tree and want_transcript, "no golden in " .. GOLDEN_DIR)
    if tree ~= want_tree then
      local got = H.tmpdir() .. "/tree.txt"
      H.write(got, tree)
      local p = io.popen("diff -u " .. F.sh(GOLDEN_DIR .. "/tree.txt") .. " " .. F.sh(got) .. " | head -80")
      local d = p:read("a")
      p:close()
      error("the folder differs from the golden:\n" .. d)
    end
    if transcript ~= want_transcript then
      local got = H.tmpdir() .. "/transcript.txt"
      H.write(got, transcript)
      local p = io.popen("diff -u " .. F.sh(GOLDEN_DIR .. "/transcript.txt") .. " " .. F.sh(got) .. " | head -80")
      local d = p:read("a")
      p:close()
      error("the transcript differs from the golden:\n" .. d)
    end
  end)
end)
