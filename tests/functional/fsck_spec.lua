-- `agent-chat fsck` (docs/fsck.md): channels damaged by hand, one per
-- finding code, each asserting the exact stdout line and exit 1; a clean
-- channel that every command has used (exit 0, no output); --repair fixing
-- exactly the repairable findings and nothing else; fsck never changing
-- anything without --repair (tree snapshots, lock files included); crashes
-- that leave only a pending journal report only FSCK_PENDING_JOURNAL;
-- hostile trees (symlinks out of the root, huge files, non-UTF-8 names,
-- directories where files belong) give findings, never a crash.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local T = require "tasksupport"

local FAR = "2099-01-01T00:05:00.000000+00:00"
local TS = "2030-01-01T00:00:00+00:00"

local function run(root, argv, env)
  return T.run(root, argv, env)
end

local function must(root, argv)
  return T.must(root, argv)
end

--- A channel "c" with one message from alice (seq 1): the smallest clean
--- channel. Returns root, channel dir.
local function channel()
  local root = T.scratch() .. "/root"
  must(root, { "init", "c" })
  must(root, { "post", "c", "--from", "alice", "--title", "hello", "--body", "hi" })
  return root, root .. "/c"
end

local function sh(cmd)
  assert(os.execute(cmd), cmd)
end

--- fsck must print exactly `lines` (a list) on stdout, nothing on stderr,
--- and exit `code` (1 when there are lines, else 0).
local function expect(root, lines, argv, code)
  local r = run(root, argv or { "fsck" })
  local want = #lines > 0 and (table.concat(lines, "\n") .. "\n") or ""
  assert.are.equal(want, r.stdout, F.describe(r))
  assert.are.equal("", r.stderr, F.describe(r))
  assert.are.equal(code or (#lines > 0 and 1 or 0), r.code, F.describe(r))
  return r
end

--- Write a message file by hand (raising .seqhigh to cover it, so only the
--- damage under test is reported).
local function hand_message(dir, name, text)
  F.write(dir .. "/" .. name, text)
  local seq = tonumber(name:match("^(%d+)"))
  local high = tonumber(F.read(dir .. "/.seqhigh") or "0") or 0
  if seq > high then
    F.write(dir .. "/.seqhigh", tostring(seq))
  end
end

local function message_text(seq, from, title)
  return string.format("---\nseq: %d\nfrom: %s\nto: all\nchannel: c\nts: %s\nstatus: discussion\n"
    .. "title: %s\n---\nbody\n", seq, from, TS, title)
end

local function lock_id(r)
  return assert(r.stdout:match("^locked (%x+) "), F.describe(r))
end

-- ------------------------------------------------------------ clean

describe("fsck on a clean channel", function()
  it("every command has used it: exit 0 and no output; --verbose prints one summary line", function()
    local root, dir = channel()
    must(root, { "read", "c", "--as", "bob" })
    must(root, { "peek", "c" })
    must(root, { "task", "create", "c", "a", "--from", "lead", "--title", "A" })
    must(root, { "task", "create", "c", "b", "--from", "lead", "--title", "B", "--depends-on", "a" })
    must(root, { "task", "create", "c", "x", "--from", "lead", "--title", "X" })
    must(root, { "task", "claim", "c", "a", "--as", "alice" })
    must(root, { "task", "renew", "c", "a", "--as", "alice" })
    must(root, { "task", "done", "c", "a", "--as", "alice" })
    must(root, { "task", "claim", "c", "b", "--as", "bob" })
    must(root, { "task", "claim", "c", "x", "--as", "carol", "--lease", "0.01" })
    os.execute("sleep 0.1")     -- let the lease expire
    must(root, { "task", "recover", "c", "x", "--as", "dave", "--reason", "carol left" })
    must(root, { "task", "release", "c", "x", "--as", "dave" })
    must(root, { "task", "block", "c", "x", "--as", "dave" })
    must(root, { "task", "update", "c", "x", "--as", "dave", "--title", "X2" })
    local l1 = lock_id(must(root, { "lock", "c", "src", "--as", "bob" }))
    must(root, { "lock", "c", "docs/a.md", "--as", "carol", "--lease", "0.01" })
    os.execute("sleep 0.1")     -- let the lock expire
    must(root, { "check", "c", "src/x.c" })
    must(root, { "recover", "c", "docs/a.md", "--as", "dave", "--reason", "carol left" })
    must(root, { "unlock", "c", l1, "--as", "bob" })
    must(root, { "recover-pending", "c", "--as", "bob" })
    must(root, { "state", "c", "--write", "--as", "alice" })
    must(root, { "compact", "c" })
    must(root, { "event", "post", "c", "--from", "alice", "--type", "status", "--harness", "h",
                 "--status", "busy" })
    must(root, { "event", "read", "c" })
    F.write(dir .. "/task-7.md", "marker\n")
    must(root, { "claim", "c", "task-7.md", "--as", "bob" })
    must(root, { "read", "c", "--as", "bob" })
    run(root, { "wait", "c", "--as", "bob", "--timeout", "0" })
    must(root, { "roster", "c" })
    must(root, { "channels" })
    must(root, { "task", "list", "c" })
    must(root, { "task", "show", "c", "b" })
    must(root, { "state", "c" })
    expect(root, {})
    expect(root, {}, { "fsck", "c" })
    local r = run(root, { "fsck", "--verbose" })
    assert.are.equal("fsck: 1 channel checked, 0 findings (0 corrupt, 0 pending, 0 repairable, 0 busy), "
      .. "0 repaired\n", r.stdout, F.describe(r))
    assert.are.equal(0, r.code)
  end)

  it("a root that does not exist has no channels: exit 0", function()
    expect(T.scratch() .. "/nothing", {})
  end)

  it("--json of a clean root", function()
    local root = channel()
    local r = run(root, { "fsck", "--json" })
    assert.are.equal(0, r.code, F.describe(r))
    local doc = require("agentchat.json").loads(r.stdout)
    assert.are.same({ "c" }, doc.channels)
    assert.are.equal(0, #doc.findings)
    assert.are.equal(0, #doc.repaired)
    assert.are.same({ corrupt = 0, pending = 0, repairable = 0, busy = 0 }, doc.counts)
  end)
end)

-- ------------------------------------------------------------ one per code

describe("fsck finding codes", function()
  it("FSCK_BAD_ENTRY: a file where a directory belongs", function()
    local root, dir = channel()
    F.write(dir .. "/tasks", "not a dir\n")
    expect(root, { "c: FSCK_BAD_ENTRY: tasks: is a regular file, expected a directory" })
  end)

  it("FSCK_BAD_META: _meta.json that is JSON but not a channel record", function()
    local root, dir = channel()
    F.write(dir .. "/_meta.json", "[1, 2]")
    expect(root, { "c: FSCK_BAD_META: _meta.json: is not an object with a list of string members and "
      .. "a string topic" })
    F.write(dir .. "/_meta.json", "{oops")
    expect(root, { "c: FSCK_BAD_META: _meta.json: is not valid JSON" })
  end)

  it("FSCK_BAD_MESSAGE: no frontmatter, invalid UTF-8, NUL bytes, no seq field", function()
    local root, dir = channel()
    hand_message(dir, "0002-x-plain.md", "just text\n")
    hand_message(dir, "0003-x-latin.md", message_text(3, "x", "caf\xe9"))
    hand_message(dir, "0004-x-nul.md", message_text(4, "x\0y", "a b"))
    -- NUL bytes in a body are fine: the Python tool posts them.
    hand_message(dir, "0006-x-nulbody.md", (message_text(6, "x", "nul body"):gsub("body\n$", "a\0b\n")))
    hand_message(dir, "0005-x-noseq.md", "---\nfrom: x\n---\nbody\n")
    expect(root, {
      "c: FSCK_BAD_MESSAGE: 0002-x-plain.md: has no closed frontmatter (a '---' block first)",
      "c: FSCK_BAD_MESSAGE: 0003-x-latin.md: is not valid UTF-8",
      "c: FSCK_BAD_MESSAGE: 0004-x-nul.md: contains NUL bytes in its frontmatter",
      "c: FSCK_BAD_MESSAGE: 0005-x-noseq.md: frontmatter has no seq field",
    })
  end)

  it("FSCK_SEQ_MISMATCH: the frontmatter's seq differs from the name's", function()
    local root, dir = channel()
    hand_message(dir, "0002-bob-x.md", message_text(7, "bob", "x"))
    expect(root, { "c: FSCK_SEQ_MISMATCH: 0002-bob-x.md: frontmatter says seq: 7, the file name says 2" })
  end)

  it("FSCK_DUPLICATE_SEQ: two files with one seq", function()
    local root, dir = channel()
    hand_message(dir, "1-dup.md", message_text(1, "bob", "dup"))
    expect(root, { "c: FSCK_DUPLICATE_SEQ: 0001-alice-hello.md: seq 1 is also used by 1-dup.md" })
  end)

  it("FSCK_SEQHIGH_BEHIND: .seqhigh below, missing or garbage", function()
    local root, dir = channel()
    hand_message(dir, "0002-bob-x.md", message_text(2, "bob", "x"))
    F.write(dir .. "/.seqhigh", "1")
    expect(root, { "c: FSCK_SEQHIGH_BEHIND: .seqhigh: says 1, below the highest message seq 2; "
      .. "run: agent-chat fsck c --repair" })
    os.remove(dir .. "/.seqhigh")
    expect(root, { "c: FSCK_SEQHIGH_BEHIND: .seqhigh: missing, but messages go up to seq 2 (a deleted "
      .. "seq could be reused); run: agent-chat fsck c --repair" })
    F.write(dir .. "/.seqhigh", "two")
    expect(root, { "c: FSCK_SEQHIGH_BEHIND: .seqhigh: is not a decimal seq; messages go up to seq 2; "
      .. "run: agent-chat fsck c --repair" })
    F.write(dir .. "/.seqhigh", "9")     -- above: deleted messages, fine
    expect(root, {})
  end)

  it("FSCK_BAD_CURSOR: garbage, empty, beyond the highest seq ever allocated", function()
    local root, dir = channel()
    must(root, { "read", "c", "--as", "bob" })
    F.write(dir .. "/.cursors/carol.txt", "x1")
    F.write(dir .. "/.cursors/dave.txt", "")
    F.write(dir .. "/.cursors/erin.txt", "99")
    F.write(dir .. "/.cursors/fred.txt", " 1\n")    -- whitespace is fine (docs/format.md 3.4)
    expect(root, {
      "c: FSCK_BAD_CURSOR: .cursors/carol.txt: is not a decimal seq ('x1'; reads as 0)",
      "c: FSCK_BAD_CURSOR: .cursors/dave.txt: is empty (reads as 0: every message shows again)",
      "c: FSCK_BAD_CURSOR: .cursors/erin.txt: is 99, beyond the highest seq ever allocated (1): wait "
        .. "skips new messages until a read rewrites it",
    })
  end)

  it("FSCK_BAD_TASK: an invalid record, and a dependency cycle", function()
    local root, dir = channel()
    must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "One" })
    F.write(dir .. "/tasks/t1.json", T.record{ id = "t1", channel = "c", status = "paused" })
    expect(root, { "c: FSCK_BAD_TASK: tasks/t1.json: TASK_INVALID_STATUS: unknown task status: 'paused'" })
    F.write(dir .. "/tasks/t1.json", T.record{ id = "t1", channel = "c", depends_on = { "t1" } })
    expect(root, { "c: FSCK_BAD_TASK: tasks: TASK_DEPENDENCY_CYCLE: dependency cycle includes task t1" })
  end)

  it("FSCK_BAD_CLAIM: an unreadable lease record, of a task and of no task", function()
    local root, dir = channel()
    must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "One" })
    os.execute("mkdir -p " .. F.sh(dir .. "/claims"))
    F.write(dir .. "/claims/t1.alice.json", "{")
    expect(root, { "c: FSCK_BAD_CLAIM: claims: LEASE_INVALID_RECORD: could not read lease record "
      .. "t1.alice.json: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)" })
    os.remove(dir .. "/claims/t1.alice.json")
    F.write(dir .. "/claims/zz.bob.json", "[]")
    expect(root, { "c: FSCK_BAD_CLAIM: claims/zz.bob.json: is not a lease record" })
  end)

  it("FSCK_CLAIM_MISMATCH: claim and task disagree, a claim without its task, a lease on a blocked task",
    function()
      local root, dir = channel()
      must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "One" })
      must(root, { "task", "create", "c", "t2", "--from", "lead", "--title", "Two" })
      os.execute("mkdir -p " .. F.sh(dir .. "/claims"))
      local claim = { channel = "c", owner = "alice", lease_expires_at = FAR, claimed_at = TS,
                      updated_at = TS }
      claim.task_id = "t1"
      F.write(dir .. "/claims/t1.alice.json", T.claim(claim))
      claim.task_id = "gone"
      F.write(dir .. "/claims/gone.alice.json", T.claim(claim))
      F.write(dir .. "/tasks/t2.json", T.record{ id = "t2", channel = "c", status = "blocked",
                                                 owner = "bob", lease_expires_at = FAR })
      claim.task_id, claim.owner = "t2", "bob"
      F.write(dir .. "/claims/t2.bob.json", T.claim(claim))
      expect(root, {
        "c: FSCK_CLAIM_MISMATCH: claims: LEASE_INCONSISTENT: task t1 and claim record disagree",
        "c: FSCK_CLAIM_MISMATCH: claims/t2.bob.json: task t2 holds a lease but its status is blocked, "
          .. "not in_progress",
        "c: FSCK_CLAIM_MISMATCH: claims/gone.alice.json: lease record of task gone, which has no task "
          .. "record under this file name",
      })
    end)

  it("FSCK_BAD_LOCK and FSCK_LOCK_CONFLICT: a record under the wrong name, two locks on one path",
    function()
      local root, dir = channel()
      local id = lock_id(must(root, { "lock", "c", "src", "--as", "bob" }))
      local text = F.read(dir .. "/locks/" .. id .. ".json")
      F.write(dir .. "/locks/00000000000000000000000000000000.json", text)
      expect(root, { "c: FSCK_BAD_LOCK: locks/00000000000000000000000000000000.json: "
        .. "PATH_LOCK_INVALID_RECORD: lock id does not match filename '00000000000000000000000000000000.json'" })
      local other = "ffffffffffffffffffffffffffffffff"
      F.write(dir .. "/locks/00000000000000000000000000000000.json",
        (text:gsub(id, other):gsub('"src"', '"src/lib"'):gsub("bob", "carol")))
      os.rename(dir .. "/locks/00000000000000000000000000000000.json", dir .. "/locks/" .. other .. ".json")
      local a, b = id, other
      if b < a then
        a, b = b, a
      end
      local la = a == id and "src" or "src/lib"
      local lb = a == id and "src/lib" or "src"
      local oa = a == id and "bob" or "carol"
      local ob = a == id and "carol" or "bob"
      expect(root, { string.format("c: FSCK_LOCK_CONFLICT: locks/%s.json: %s overlaps %s of lock %s "
        .. "(owners %s and %s)", a, la, lb, b, oa, ob) })
    end)

  it("FSCK_BAD_JOURNAL: journals recover-pending cannot use", function()
    local root, dir = channel()
    os.execute("mkdir -p " .. F.sh(dir .. "/claims") .. " " .. F.sh(dir .. "/locks"))
    F.write(dir .. "/claims/.lease-transaction.json", '{"version": 9}')
    F.write(dir .. "/locks/.path-lock-transaction.json", "nope")
    expect(root, {
      "c: FSCK_BAD_JOURNAL: claims/.lease-transaction.json: LEASE_TRANSACTION_INVALID: transaction "
        .. "journal has an unsupported shape (recover-pending cannot use it: restore the records by hand, "
        .. "then remove it)",
      "c: FSCK_BAD_JOURNAL: locks/.path-lock-transaction.json: PATH_LOCK_TRANSACTION_INVALID: could not "
        .. "read transaction marker: Expecting value: line 1 column 1 (char 0) (recover-pending cannot use "
        .. "it: restore the lock record by hand, then remove it)",
    })
  end)

  it("FSCK_STRAY_TEMP, FSCK_STALE_RESERVATION, FSCK_STALE_SEQ_LOCK: debris older than its limit", function()
    local root, dir = channel()
    must(root, { "read", "c", "--as", "bob" })
    must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "One" })
    local old = {
      dir .. "/.state.md.ab12cd34.tmp", dir .. "/.cursors/.bob.txt.0a1b2c3d.tmp",
      dir .. "/tasks/.t1.json.zzzz9999.tmp", dir .. "/.seqres-5",
    }
    for _, p in ipairs(old) do
      F.write(p, "partial")
      T.touch_old(p, 120)
    end
    F.write(dir .. "/.young.json.abcdefgh.tmp", "live writer")    -- younger than a minute
    F.write(dir .. "/.notes.tmp", "an editor's, not ours")
    T.touch_old(dir .. "/.notes.tmp", 120)
    sh("mkdir " .. F.sh(dir .. "/_seq.lock"))
    T.touch_old(dir .. "/_seq.lock", 100)
    local hint = "; run: agent-chat fsck c --repair"
    expect(root, {
      "c: FSCK_STALE_SEQ_LOCK: _seq.lock: left by a poster that died 100 s ago (the next post removes it)"
        .. hint,
      "c: FSCK_STALE_RESERVATION: .seqres-5: seq reservation left by a poster that died (it only burns "
        .. "that seq)" .. hint,
      "c: FSCK_STRAY_TEMP: .state.md.ab12cd34.tmp: temp file left by an interrupted write" .. hint,
      "c: FSCK_STRAY_TEMP: .cursors/.bob.txt.0a1b2c3d.tmp: temp file left by an interrupted write" .. hint,
      "c: FSCK_STRAY_TEMP: tasks/.t1.json.zzzz9999.tmp: temp file left by an interrupted write" .. hint,
    })
  end)

  it("FSCK_BAD_ACK: ack records named after no seq, a seq never allocated, not JSON objects", function()
    local root, dir = channel()
    sh("mkdir -p " .. F.sh(dir .. "/.acks/1") .. " " .. F.sh(dir .. "/.acks/5") .. " " .. F.sh(dir .. "/.acks/x"))
    F.write(dir .. "/.acks/1/bob.json", '{"agent": "bob", "seq": 1}\n')
    expect(root, {
      "c: FSCK_BAD_ACK: .acks/5: acknowledges seq 5, beyond the highest seq ever allocated (1)",
      "c: FSCK_BAD_ACK: .acks/x: is not named after a message seq",
    })
    sh("rmdir " .. F.sh(dir .. "/.acks/5") .. " " .. F.sh(dir .. "/.acks/x"))
    F.write(dir .. "/.acks/1/eve.json", "[1]")
    expect(root, { "c: FSCK_BAD_ACK: .acks/1/eve.json: is not a JSON object" })
    os.remove(dir .. "/.acks/1/eve.json")
    expect(root, {})     -- valid ack records are tolerated
  end)

  it("FSCK_BUSY: a task mutation lock held for 10 s", function()
    local root, dir = channel()
    must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "One" })
    local held = T.scratch() .. "/held"
    -- The holder's shell writes its pid (then execs sleep under that pid)
    -- as the last step before it waits: once the file is there, it holds the lock.
    sh(string.format("flock %s sh -c 'echo $$ > %s.tmp && mv %s.tmp %s; exec sleep 30' >/dev/null 2>&1 &",
      F.sh(dir .. "/_tasks.lock"), F.sh(held), F.sh(held), F.sh(held)))
    for _ = 1, 400 do
      if F.read(held) then
        break
      end
      os.execute("sleep 0.05")
    end
    local pid = assert((F.read(held) or ""):match("%d+"), "the lock holder did not start")
    local r = run(root, { "fsck" })
    os.execute("kill " .. pid)
    assert.are.equal("c: FSCK_BUSY: _tasks.lock: held for more than 10 s: tasks and claims not checked; "
      .. "run fsck again\n", r.stdout, F.describe(r))
    assert.are.equal(1, r.code)
  end)

  it("every code is documented in docs/fsck.md with its class", function()
    local doc = assert(F.read(H.repo .. "/docs/fsck.md"))
    local classes = require("agentchat._fsck").CLASSES
    local n = 0
    for code, class in pairs(classes) do
      n = n + 1
      assert.truthy(doc:find("| `" .. code .. "` | " .. class .. " |", 1, true),
        code .. " (" .. class .. ") has no row in docs/fsck.md")
    end
    assert.are.equal(20, n)
  end)
end)

-- ------------------------------------------------------------ pending journals

describe("fsck after a crash in the middle of a mutation", function()
  local function crash(root, argv, point)
    local r = run(root, argv, { AGENT_CHAT_FAULT = point .. "#1:crash" })
    assert.are_not.equal(0, r.code, F.describe(r))
  end

  it("a lease journal is FSCK_PENDING_JOURNAL only; task recover-pending makes it clean", function()
    local root = channel()
    must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "One" })
    crash(root, { "task", "claim", "c", "t1", "--as", "alice" }, "lease.claim.publish")
    expect(root, { "c: FSCK_PENDING_JOURNAL: claims/.lease-transaction.json: interrupted lease mutation "
      .. "(lease.claimed of task t1, phase prepared); run: agent-chat task recover-pending c --as NAME" })
    must(root, { "task", "recover-pending", "c", "--as", "ops" })
    expect(root, {})
  end)

  it("a path-lock journal is FSCK_PENDING_JOURNAL only; recover-pending makes it clean", function()
    local root = channel()
    crash(root, { "lock", "c", "src", "--as", "bob" }, "post.message.publish")
    local r = run(root, { "fsck" })
    assert.are.equal(1, r.code, F.describe(r))
    assert.truthy(r.stdout:match("^c: FSCK_PENDING_JOURNAL: locks/%.path%-lock%-transaction%.json: "
      .. "interrupted path%-lock lock of %x+ %(phase applied%); run: agent%-chat recover%-pending c "
      .. "%-%-as NAME\n$"), F.describe(r))
    must(root, { "recover-pending", "c", "--as", "ops" })
    expect(root, {})
  end)

  it("a crash at every fault point of claim and lock leaves nothing or a pending journal", function()
    local base = channel()
    must(base, { "task", "create", "c", "t1", "--from", "lead", "--title", "One" })
    for _, sc in ipairs({ { "task", "claim", "c", "t1", "--as", "alice" }, { "lock", "c", "src", "--as", "bob" } }) do
      local log = T.scratch() .. "/log"
      local ref = T.scratch() .. "/root"
      sh("cp -a " .. F.sh(base) .. " " .. F.sh(ref))
      run(ref, sc, { AGENT_CHAT_FAULT_LOG = log })
      local points = {}
      for p in (F.read(log) or ""):gmatch("[^\n]+") do
        points[#points + 1] = p:match("^%S+")
      end
      assert.is_true(#points >= 20, "only " .. #points .. " fault points")
      for _, p in ipairs(points) do
        local w = T.scratch() .. "/root"
        sh("cp -a " .. F.sh(base) .. " " .. F.sh(w))
        run(w, sc, { AGENT_CHAT_FAULT = p .. "#1:crash" })
        local r = run(w, { "fsck" })
        for _, line in ipairs(F.lines(r.stdout)) do
          assert.truthy(line:match("^c: FSCK_PENDING_JOURNAL: "), p .. ": " .. F.describe(r))
        end
        assert.are.equal(r.stdout == "" and 0 or 1, r.code, F.describe(r))
      end
    end
  end)
end)

-- ------------------------------------------------------------ --repair

describe("fsck --repair", function()
  --- A channel with every repairable finding, one corrupt one (a cursor),
  --- a young temp and an editor's temp that must survive.
  local function damaged()
    local root, dir = channel()
    must(root, { "read", "c", "--as", "bob" })
    hand_message(dir, "0002-bob-x.md", message_text(2, "bob", "x"))
    F.write(dir .. "/.seqhigh", "1")
    for _, p in ipairs({ dir .. "/.seqres-7", dir .. "/.cursors/.bob.txt.0a1b2c3d.tmp",
                         dir .. "/.seqhigh.abcdefgh.tmp" }) do
      F.write(p, "x")
      T.touch_old(p, 120)
    end
    F.write(dir .. "/.young.json.abcdefgh.tmp", "live")
    F.write(dir .. "/.notes.tmp", "editor")
    T.touch_old(dir .. "/.notes.tmp", 120)
    sh("mkdir " .. F.sh(dir .. "/_seq.lock"))
    T.touch_old(dir .. "/_seq.lock", 100)
    F.write(dir .. "/.cursors/erin.txt", "junk")
    return root, dir
  end

  it("fixes exactly the repairable findings, says what it did, reports the rest", function()
    local root, dir = damaged()
    local before = F.snapshot(dir)
    expect(root, {
      "c: repaired: FSCK_SEQHIGH_BEHIND: .seqhigh: raised to 2",
      "c: repaired: FSCK_STALE_SEQ_LOCK: _seq.lock: removed",
      "c: repaired: FSCK_STRAY_TEMP: .seqhigh.abcdefgh.tmp: removed",
      "c: repaired: FSCK_STALE_RESERVATION: .seqres-7: removed",
      "c: repaired: FSCK_STRAY_TEMP: .cursors/.bob.txt.0a1b2c3d.tmp: removed",
      "c: FSCK_BAD_CURSOR: .cursors/erin.txt: is not a decimal seq ('junk'; reads as 0)",
    }, { "fsck", "--repair" })
    local changes = F.diff(before, F.snapshot(dir))
    assert.are.same({ "removed .cursors/.bob.txt.0a1b2c3d.tmp", "changed .seqhigh",
                      "removed .seqhigh.abcdefgh.tmp", "removed .seqres-7", "removed _seq.lock" }, changes)
    assert.are.equal("2", F.read(dir .. "/.seqhigh"))
    expect(root, { "c: FSCK_BAD_CURSOR: .cursors/erin.txt: is not a decimal seq ('junk'; reads as 0)" })
  end)

  it("exit 0 when everything found was repaired; a second run has nothing to do", function()
    local root, dir = channel()
    os.remove(dir .. "/.seqhigh")
    expect(root, { "c: repaired: FSCK_SEQHIGH_BEHIND: .seqhigh: raised to 1" }, { "fsck", "c", "--repair" }, 0)
    expect(root, {}, { "fsck", "--repair" })
  end)

  it("--json lists repairs apart from findings", function()
    local root = damaged()
    local r = run(root, { "fsck", "--repair", "--json" })
    assert.are.equal(1, r.code, F.describe(r))
    local doc = require("agentchat.json").loads(r.stdout)
    assert.are.equal(5, #doc.repaired)
    assert.are.equal(1, #doc.findings)
    assert.are.equal("FSCK_BAD_CURSOR", doc.findings[1].code)
    assert.are.equal("corrupt", doc.findings[1].class)
    assert.are.equal(".cursors/erin.txt", doc.findings[1].path)
    assert.are.equal("raised to 2", doc.repaired[1].repaired)
  end)
end)

-- ------------------------------------------------------------ read-only, hostile

--- Every kind of damage at once, plus hostile entries.
local function hostile()
  local root, dir = channel()
  local parent = root:match("^(.*)/root$")
  must(root, { "read", "c", "--as", "bob" })
  must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "One" })
  must(root, { "task", "claim", "c", "t1", "--as", "alice" })
  must(root, { "lock", "c", "src", "--as", "bob" })
  F.write(parent .. "/outside.md", message_text(9, "evil", "outside"))
  sh("mkdir " .. F.sh(parent .. "/outside"))
  F.write(parent .. "/outside/x.json", "{}")
  sh("ln -s " .. F.sh(parent .. "/outside.md") .. " " .. F.sh(dir .. "/0009-evil-link.md"))
  sh("ln -s " .. F.sh(parent .. "/outside") .. " " .. F.sh(dir .. "/locks2"))
  sh("mkdir " .. F.sh(dir .. "/0010-a-dir.md"))
  sh("truncate -s 17M " .. F.sh(dir .. "/0011-x-huge.md"))
  F.write(dir .. "/0012-\xff\xfe-name.md", message_text(12, "x", "bad name"))
  F.write(dir .. "/.seqhigh", "12")
  sh("ln -s " .. F.sh(parent .. "/outside.md") .. " " .. F.sh(dir .. "/.cursors/mallory.txt"))
  sh("mkdir " .. F.sh(dir .. "/.cursors/dir.txt"))
  sh("mkdir " .. F.sh(dir .. "/tasks/t9.json"))
  sh("ln -s " .. F.sh(parent .. "/outside/x.json") .. " " .. F.sh(dir .. "/claims/t1.bob.json"))
  sh("rm " .. F.sh(dir .. "/.path-locks.lock") .. " && mkdir " .. F.sh(dir .. "/.path-locks.lock"))
  sh("truncate -s 5M " .. F.sh(dir .. "/tasks/big.json"))
  return root, dir, parent
end

describe("fsck is read-only and survives hostile trees", function()
  it("changes nothing without --repair (the whole tree around the root, lock files included)", function()
    local root, dir, parent = hostile()
    os.remove(dir .. "/_tasks.lock")        -- must not be created by a check
    F.write(dir .. "/.seqres-3", "x")
    T.touch_old(dir .. "/.seqres-3", 300)
    local before = F.snapshot(parent)
    for _, argv in ipairs({ { "fsck" }, { "fsck", "c" }, { "fsck", "--json" }, { "fsck", "--verbose" } }) do
      local r = run(root, argv)
      assert.are.equal(1, r.code, F.describe(r))
      assert.are.same({}, F.diff(before, F.snapshot(parent)), F.describe(r))
    end
  end)

  it("symlinks out of the root, huge files, non-UTF-8 names, directories for files: findings, no crash",
    function()
      local root = hostile()
      local r = run(root, { "fsck" })
      assert.is_nil(F.crashed(r.stderr), F.describe(r))
      assert.are.equal("", r.stderr, F.describe(r))
      assert.are.equal(1, r.code, F.describe(r))
      local want = {
        "c: FSCK_BAD_ENTRY: .path-locks.lock: is a directory, expected a regular file",
        "c: FSCK_BAD_MESSAGE: 0009-evil-link.md: is a symbolic link (never followed), not a message file",
        "c: FSCK_BAD_MESSAGE: 0010-a-dir.md: is a directory, not a message file",
        "c: FSCK_BAD_MESSAGE: 0011-x-huge.md: is larger than 16 MiB (readers show only its first 64 KiB)",
        "c: FSCK_BAD_CURSOR: .cursors/dir.txt: is a directory",
        "c: FSCK_BAD_CURSOR: .cursors/mallory.txt: is a symbolic link (never followed)",
        "c: FSCK_BAD_TASK: tasks/big.json: TASK_INVALID_RECORD: could not read task record big.json: "
          .. "[Errno 27] File too large",
        "c: FSCK_BAD_TASK: tasks/t9.json: TASK_INVALID_RECORD: could not read task record t9.json: "
          .. "[Errno 21] Is a directory",
        "c: FSCK_BAD_CLAIM: claims: LEASE_INVALID_RECORD: could not read lease record t1.bob.json: "
          .. "[Errno 40] Too many levels of symbolic links",
      }
      assert.are.same(want, F.lines(r.stdout))
    end)

  it("a non-UTF-8 message name is shown escaped", function()
    local root, dir = channel()
    hand_message(dir, "0002-\xff-x.md", "no frontmatter\n")
    expect(root, { "c: FSCK_BAD_MESSAGE: 0002-\\xff-x.md: has no closed frontmatter (a '---' block first)" })
  end)
end)

-- ------------------------------------------------------------ arguments

describe("fsck arguments", function()
  it("checks the listed channels only, each once", function()
    local root, dir = channel()
    must(root, { "init", "d" })
    os.remove(dir .. "/.seqhigh")
    expect(root, {}, { "fsck", "d", "d" })
    expect(root, { "c: FSCK_SEQHIGH_BEHIND: .seqhigh: missing, but messages go up to seq 1 (a deleted seq "
      .. "could be reused); run: agent-chat fsck c --repair" }, { "fsck", "d", "c" })
  end)

  it("a missing or invalid channel is one error line, exit 1; --root after the command is usage", function()
    local root = channel()
    local r = run(root, { "fsck", "nope" })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.stdout)
    assert.are.equal("agent-chat: channel 'nope' not found under " .. root .. " (run: init nope)\n", r.stderr)
    r = run(root, { "fsck", "../x" })
    assert.are.equal(1, r.code)
    assert.are.equal("agent-chat: invalid channel name (path traversal blocked): '../x'\n", r.stderr)
    r = run(nil, { "fsck", "--root", root })
    assert.are.equal(2, r.code)
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
  end)
end)
