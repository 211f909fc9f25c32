-- What an adversarial run broke (issue 14), item by item: each case is the
-- reproduction of the issue, which failed before the fix. The paused poster
-- (14.1) has its own spec (paused_poster_spec.lua), the template limits
-- (14.6, 14.10) theirs (template_limits_spec.lua).
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local SEQ_MAX = "9223372036854775807"

--- A root with channel dev holding one message; returns root, parent.
local function seeded()
  local root, parent = F.new_root()
  F.init(root, "dev")
  F.post(root, "dev", "alice", "first", "x")
  return root, parent
end

--- Run `post` with a 10 s watchdog (a hang is a failure, not a stuck suite).
local function post_bounded(root, title, body)
  local work = F.tmpdir()
  local rc = F.shell([[
R=$1; W=$2; T=$3; B=$4
"$A" --root "$R" post dev --from alice --title "$T" --body "$B" >"$W/out" 2>"$W/err" &
pid=$!
n=0
while kill -0 $pid 2>/dev/null; do
  n=$((n+1)); [ $n -gt 1000 ] && { kill -KILL $pid; wait $pid; echo hung >"$W/rc"; exit 0; }
  sleep 0.01
done
wait $pid
echo $? >"$W/rc"
]], nil, root, work, title or "t", body or "b")
  assert.equal(0, rc)
  local code = F.read(work .. "/rc"):match("%S+")
  return { code = tonumber(code) or code, stdout = F.read(work .. "/out"), stderr = F.read(work .. "/err"),
           argv = { "post", "dev" } }
end

--- Run the Lua `source` with `agent-chat run` (its `...` is the root).
local function run_lua(root, source)
  local script = F.tmpdir() .. "/s.lua"
  F.write(script, source)
  local r = F.ac(root, { "run", script, root })
  assert.equal(0, r.code, F.describe(r))
  return r
end

--- Nothing changed under `parent` but what `ignore` allows.
local function unchanged(parent, before)
  local diff = F.diff(before, F.snapshot(parent))
  assert.same({}, diff, table.concat(diff, "\n"))
end

describe("14.2 a planted message name at the highest seq", function()
  it("post refuses SEQ_EXHAUSTED instead of wrapping to a negative seq, and writes nothing", function()
    local root, parent = seeded()
    F.write(root .. "/dev/" .. SEQ_MAX .. "-x.md", "---\nseq: " .. SEQ_MAX .. "\n---\nplanted\n")
    local before = F.snapshot(parent)
    local r = post_bounded(root)
    assert.equal(1, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr))
    assert.truthy(r.stderr:find("^agent%-chat: SEQ_EXHAUSTED: channel 'dev' has no seq left"), r.stderr)
    assert.equal("", r.stdout)
    unchanged(parent, before)
  end)

  it("the planted message is visible to read, peek and fsck", function()
    local root = seeded()
    F.write(root .. "/dev/" .. SEQ_MAX .. "-x.md",
      "---\nseq: " .. SEQ_MAX .. "\nfrom: eve\nto: all\ntitle: planted\n---\nplanted\n")
    local r = F.ok(root, { "read", "dev", "--as", "bob" })
    assert.truthy(r.stdout:find("title: planted", 1, true), r.stdout)
    assert.equal(SEQ_MAX, F.read(root .. "/dev/.cursors/bob.txt"))
    r = F.ok(root, { "peek", "dev", "-n", "1" })
    assert.truthy(r.stdout:find("seq: " .. SEQ_MAX, 1, true), r.stdout)
    -- A valid message: fsck only raises .seqhigh to it (hand-made files do not).
    r = F.ac(root, { "fsck", "dev", "--repair" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("dev: repaired: FSCK_SEQHIGH_BEHIND: .seqhigh: raised to " .. SEQ_MAX .. "\n", r.stdout)
  end)

  it("a name beyond the highest seq: post refuses, readers skip it, fsck reports it", function()
    local root, parent = seeded()
    local name = "99999999999999999999-x.md"
    F.write(root .. "/dev/" .. name, "---\nseq: 1\n---\nplanted\n")
    local before = F.snapshot(parent)
    local r = post_bounded(root)
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("SEQ_EXHAUSTED: channel 'dev' has no seq left: message file '" .. name
      .. "' has a seq above " .. SEQ_MAX, 1, true), r.stderr)
    unchanged(parent, before)
    r = F.ac(root, { "fsck", "dev" })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stdout:find("FSCK_BAD_MESSAGE: " .. name .. ": has a seq above " .. SEQ_MAX, 1, true),
      r.stdout)
    F.ok(root, { "read", "dev", "--as", "bob" })
    assert.equal("1", F.read(root .. "/dev/.cursors/bob.txt"))
    os.remove(root .. "/dev/" .. name)
    assert.equal(2, F.post(root, "dev", "alice", "after", "x"))
  end)
end)

describe("14.3 a hostile .seqhigh", function()
  local CASES = {
    { "18446744073709551615", "above the range" },
    { "9223372036854775808", "one above the range" },
    { "99999999999999999999999", "overflowing" },
    { "-1", "negative" },
    { "-5", "negative" },
    { "7x", "trailing garbage" },
    { "0x10", "hexadecimal" },
    { "", "empty" },
  }
  for _, case in ipairs(CASES) do
    local value, what = case[1], case[2]
    it("'" .. value .. "' (" .. what .. "): post refuses SEQ_HIGH_INVALID at once, never wraps or hangs", function()
      local root, parent = seeded()
      F.write(root .. "/dev/.seqhigh", value)
      local before = F.snapshot(parent)
      local r = post_bounded(root)
      assert.equal(1, r.code, F.describe(r))
      assert.is_nil(F.error_line(r.stderr))
      assert.equal("agent-chat: SEQ_HIGH_INVALID: .seqhigh of channel 'dev' holds '" .. value .. "', not a seq "
        .. "from 0 to " .. SEQ_MAX .. " (run: agent-chat fsck dev --repair)\n", r.stderr)
      unchanged(parent, before)
      -- fsck reports it; --repair raises it to the highest seq on disk.
      r = F.ac(root, { "fsck", "dev" })
      assert.equal(1, r.code, F.describe(r))
      assert.truthy(r.stdout:find("FSCK_SEQHIGH_BEHIND: .seqhigh:", 1, true), r.stdout)
      F.ok(root, { "fsck", "dev", "--repair" })
      assert.equal("1", F.read(root .. "/dev/.seqhigh"))
      assert.equal(2, F.post(root, "dev", "alice", "after", "x"))
    end)
  end

  it("the highest seq itself: post refuses SEQ_EXHAUSTED", function()
    local root, parent = seeded()
    F.write(root .. "/dev/.seqhigh", SEQ_MAX)
    local before = F.snapshot(parent)
    local r = post_bounded(root)
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: SEQ_EXHAUSTED: "), r.stderr)
    unchanged(parent, before)
  end)

  it("blanks around a valid value are fine; a lower .seqhigh never lowers the next seq", function()
    local root = seeded()
    F.write(root .. "/dev/.seqhigh", " 12 \n")
    assert.equal(13, F.post(root, "dev", "alice", "a", "x"))
    F.write(root .. "/dev/.seqhigh", "3")
    assert.equal(14, F.post(root, "dev", "alice", "b", "x"))
    assert.equal("14", F.read(root .. "/dev/.seqhigh"))
  end)
end)

describe("14.8 a message no reader could read", function()
  local CAP = 16 * 1024 * 1024

  local function try(root, body_len, title)
    local file = F.tmpdir() .. "/body"
    F.write(file, string.rep("b", body_len))
    return F.ac(root, { "post", "dev", "--from", "alice", "--title", title or "t", "--body-file", file })
  end

  it("a body of exactly 16 MiB is refused MESSAGE_TOO_LARGE, and nothing is written", function()
    local root, parent = seeded()
    local before = F.snapshot(parent)
    local r = try(root, CAP)
    assert.equal(1, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr))
    assert.truthy(r.stderr:find("^agent%-chat: MESSAGE_TOO_LARGE: message would be %d+ bytes, more than the "
      .. CAP .. " bytes %(16 MiB%) a message file may have\n$"), r.stderr)
    unchanged(parent, before)
  end)

  it("just under 16 MiB with a big title is refused too", function()
    local root, parent = seeded()
    local before = F.snapshot(parent)
    local r = try(root, CAP - 100, string.rep("T", 300))
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("MESSAGE_TOO_LARGE", 1, true), r.stderr)
    unchanged(parent, before)
  end)

  it("the largest message that fits is read back whole and fsck is clean", function()
    local root = seeded()
    local probe = try(root, 1000, "t")
    assert.equal(0, probe.code, F.describe(probe))
    local file = root .. "/dev/" .. probe.stdout:match("%-> dev/(%S+)")
    local overhead = #F.read(file) - 1000
    local r = try(root, CAP - overhead, "t")
    assert.equal(0, r.code, F.describe(r))
    -- Same sender, title, seq width and time format as the probe: the file
    -- is exactly 16 MiB, the largest a reader reads whole.
    assert.equal(CAP, #F.read(root .. "/dev/" .. r.stdout:match("%-> dev/(%S+)")))
    r = F.ok(root, { "read", "dev", "--as", "bob" })
    assert.is_nil(r.stdout:find("truncated for display", 1, true))
    assert.equal(0, F.ac(root, { "fsck", "dev" }).code)
  end)
end)

describe("14.4 claim files of two tasks that map to one name", function()
  --- t1 and t1.bob; bob.evil holds t1's lease (claims/t1.bob.evil.json).
  local function collision_board()
    local root, parent = F.new_root()
    F.init(root, "dev")
    F.ok(root, { "task", "create", "dev", "t1", "--from", "lead", "--title", "one" })
    F.ok(root, { "task", "create", "dev", "t1.bob", "--from", "lead", "--title", "two" })
    F.ok(root, { "task", "claim", "dev", "t1", "--as", "bob.evil" })
    return root, parent
  end

  it("the second claim is refused LEASE_NAME_COLLISION up front, nothing written", function()
    local root, parent = collision_board()
    local before = F.snapshot(parent)
    local r = F.ac(root, { "task", "claim", "dev", "t1.bob", "--as", "evil" })
    assert.equal(2, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr))
    assert.equal("agent-chat: LEASE_NAME_COLLISION: lease record t1.bob.evil.json of task t1.bob for evil "
      .. "already exists and is not that task's (another task id and owner give the same file name); use "
      .. "another owner name\n", r.stderr)
    unchanged(parent, before)
    -- The board is not blocked: both tasks work on.
    F.ok(root, { "task", "claim", "dev", "t1.bob", "--as", "carol" })
    F.ok(root, { "task", "done", "dev", "t1", "--as", "bob.evil" })
    assert.equal(0, F.ac(root, { "fsck", "dev" }).code)
  end)

  it("recover of an expired lease onto a colliding name is refused the same way", function()
    local root, parent = F.new_root()
    F.init(root, "dev")
    F.ok(root, { "task", "create", "dev", "t1", "--from", "lead", "--title", "one" })
    F.ok(root, { "task", "create", "dev", "t1.bob", "--from", "lead", "--title", "two" })
    F.ok(root, { "task", "claim", "dev", "t1", "--as", "bob.evil" })
    F.ok(root, { "task", "claim", "dev", "t1.bob", "--as", "carol", "--lease-seconds", "0.001" })
    F.sleep(0.05)
    local before = F.snapshot(parent)
    local r = F.ac(root, { "task", "recover", "dev", "t1.bob", "--as", "evil", "--reason", "gone" })
    assert.equal(2, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: LEASE_NAME_COLLISION: lease record t1.bob.evil.json "), r.stderr)
    unchanged(parent, before)
  end)

  it("recover-pending never deletes a record its journal did not write", function()
    -- The journal an older agent-chat left after the failed second claim:
    -- prepared, "create t1.bob.evil.json" (previous null), while that file
    -- holds bob.evil's lease of t1.
    local root = collision_board()
    local json = require "agentchat.json"
    local function b64(s)
      local f = F.tmpdir() .. "/b"
      F.write(f, s)
      local p = io.popen("base64 -w0 " .. F.sh(f))
      local out = p:read("a")
      p:close()
      return out
    end
    local dir = root .. "/dev"
    local t1_claim = F.read(dir .. "/claims/t1.bob.evil.json")
    local before = F.read(dir .. "/tasks/t1.bob.json")
    local their_claim = t1_claim:gsub('"task_id": "t1"', '"task_id": "t1.bob"'):gsub('"owner": "bob.evil"',
      '"owner": "evil"')
    local expires = json.loads(t1_claim).lease_expires_at
    local after = before:gsub('"status": "open"', '"status": "in_progress"'):gsub('"owner": null', '"owner": "evil"')
      :gsub('"lease_expires_at": null', '"lease_expires_at": "' .. expires .. '"')
    F.write(dir .. "/claims/.lease-transaction.json", json.dumps({
      version = 2, phase = "prepared", transaction_id = "7e34be68935c4fa491de3fe2bd60a3b9",
      task_id = "t1.bob", task_file = "tasks/t1.bob.json", event = "lease.claimed",
      task_before = b64(before), task_after = b64(after),
      claim_changes = json.array{ { file = "t1.bob.evil.json", previous = json.null, next = b64(their_claim) } },
      details = { lease_expires_at = expires, lease_owner = "evil" },
    }, { indent = 2, sort_keys = true }) .. "\n")
    F.ok(root, { "task", "recover-pending", "dev", "--as", "ops" })
    assert.equal(t1_claim, F.read(dir .. "/claims/t1.bob.evil.json"))
    assert.equal(before, F.read(dir .. "/tasks/t1.bob.json"))
    local r = F.ok(root, { "task", "show", "dev", "t1" })
    assert.truthy(r.stdout:find("bob.evil", 1, true), r.stdout)
    F.ok(root, { "task", "renew", "dev", "t1", "--as", "bob.evil" })
    assert.equal(0, F.ac(root, { "fsck", "dev" }).code)
  end)
end)

describe("14.5 lease durations beyond year 9999", function()
  local CASES = {
    { "task", "claim", "dev", "t1", "--as", "bob", "--lease-seconds", "9999999999999" },
    { "task", "claim", "dev", "t1", "--as", "bob", "--lease-seconds", "3e11" },
    { "task", "claim", "dev", "t1", "--as", "bob", "--lease-seconds", "253402300799" },
    { "task", "claim", "dev", "t1", "--as", "bob", "--lease-seconds", "1e308" },
    { "task", "renew", "dev", "t2", "--as", "alice", "--ttl", "3e11" },
  }
  for _, argv in ipairs(CASES) do
    it(table.concat(argv, " ", 2) .. ": LEASE_INVALID_DURATION, nothing written, every command still works", function()
      local root, parent = F.new_root()
      F.init(root, "dev")
      F.ok(root, { "task", "create", "dev", "t1", "--from", "lead", "--title", "one" })
      F.ok(root, { "task", "create", "dev", "t2", "--from", "lead", "--title", "two" })
      F.ok(root, { "task", "claim", "dev", "t2", "--as", "alice" })
      local before = F.snapshot(parent)
      local r = F.ac(root, argv)
      assert.equal(2, r.code, F.describe(r))
      assert.equal("agent-chat: LEASE_INVALID_DURATION: lease duration is outside the supported timestamp range\n", r.stderr)
      unchanged(parent, before)
      F.ok(root, { "task", "list", "dev" })
      assert.equal(0, F.ac(root, { "fsck", "dev" }).code)
    end)
  end

  it("a long but representable lease (one year) is accepted", function()
    local root = F.new_root()
    F.init(root, "dev")
    F.ok(root, { "task", "create", "dev", "t1", "--from", "lead", "--title", "one" })
    F.ok(root, { "task", "claim", "dev", "t1", "--as", "bob", "--lease-seconds", "31536000" })
    F.ok(root, { "task", "list", "dev" })
  end)
end)

describe("14.14 non-finite numbers", function()
  for _, v in ipairs({ "inf", "1e309", "nan", "Infinity" }) do
    it("team --silent-after " .. v .. " (with and without --json) is a usage error", function()
      local root = seeded()
      for _, extra in ipairs({ {}, { "--json" } }) do
        local argv = { "team", "dev", "--silent-after", v, table.unpack(extra) }
        local r = F.ac(root, argv)
        assert.equal(2, r.code, F.describe(r))
        assert.equal("agent-chat: USAGE: --silent-after must be a finite number of seconds >= 0\n", r.stderr)
        assert.equal("", r.stdout)
      end
    end)
  end

  it("the API refuses them too, and json.dumps says why", function()
    local root = seeded()
    local r = run_lua(root, [[
local ac = require "agentchat"
local json = require "agentchat.json"
local ch = assert(ac.open(...):channel("dev"))
print(select(2, pcall(ch.team, ch, { silent_after = math.huge })))
print(select(2, pcall(json.dumps, { x = 0 / 0 })))
print(json.dumps(assert(ch:team{ silent_after = 1e300 }).silent_after))
]])
    local lines = F.lines(r.stdout)
    assert.truthy(lines[1]:find("team: silent_after must be a finite number of seconds >= 0", 1, true), r.stdout)
    assert.equal("json.dumps: cannot encode inf or nan (JSON numbers are finite)", lines[2])
    assert.equal("1e+300", lines[3])
  end)
end)

describe("14.7 a message file still being written", function()
  -- The Python tool writes a message in place: a reader can find it empty
  -- or without its end. Message #2 is written in two halves 0.5 s apart;
  -- #3 is complete. Every reader that moves a cursor waits for #2 to be
  -- finished, shows all of it, and only then moves past it.
  local HEAD = "---\nseq: 2\nfrom: py\nto: all\nchannel: dev\nts: 2030-01-01T00:00:00+00:00\n"
    .. "status: discussion\ntitle: half\n---\nfirst half"
  local TAIL = " and second half\n"

  local function channel()
    local root = F.new_root()
    F.init(root, "dev")
    F.post(root, "dev", "alice", "one", "x")
    F.ok(root, { "read", "dev", "--as", "bob" })
    F.write(root .. "/dev/0002-py-half.md", HEAD)
    F.write(root .. "/dev/.seqhigh", "2")
    F.post(root, "dev", "alice", "three", "x")
    return root
  end

  --- Run cmd (words for sh) while the writer finishes #2 after `delay` s.
  local function while_written(root, cmd, delay)
    return F.background(root, cmd, "printf '%s' " .. F.sh(TAIL) .. " >>" .. F.sh(root .. "/dev/0002-py-half.md"),
      delay or 0.5)
  end

  local function whole(out)
    assert.truthy(out:find("first half and second half\n", 1, true), out)
    assert.is_nil(out:find("first half\n", 1, true), out)
    assert.truthy(out:find("title: three", 1, true), out)
  end

  it("read waits for it, shows it whole, then moves the cursor", function()
    local root = channel()
    local r = while_written(root, "read dev --as bob")
    assert.equal(0, r.code, F.describe(r))
    whole(r.stdout)
    assert.equal("3", F.read(root .. "/dev/.cursors/bob.txt"))
  end)

  it("inbox does the same", function()
    local root = channel()
    local r = while_written(root, "inbox --as bob")
    assert.equal(0, r.code, F.describe(r))
    whole(r.stdout)
    assert.equal("3", F.read(root .. "/dev/.cursors/bob.txt"))
  end)

  it("watch delivers the finished text", function()
    local root = channel()
    local script = F.tmpdir() .. "/w.lua"
    F.write(script, "return function(msg) io.write(msg.text, '\\n--\\n') end\n")
    local r = while_written(root, "watch dev --as bob --once --script " .. F.sh(script))
    assert.equal(0, r.code, F.describe(r))
    whole(r.stdout)
    assert.equal("3", F.read(root .. "/dev/.cursors/bob.txt"))
  end)

  it("wait too", function()
    local root = channel()
    local r = while_written(root, "wait dev --as bob --timeout 10")
    assert.equal(0, r.code, F.describe(r))
    whole(r.stdout)
    assert.equal("3", F.read(root .. "/dev/.cursors/bob.txt"))
  end)

  it("a writer slower than 2 s: the reader shows nothing from it on and keeps the cursor below it", function()
    local root = channel()
    local file = root .. "/dev/0002-py-half.md"
    -- The writer keeps the file fresh for 3 s while read runs, then
    -- finishes it.
    local r = F.background(root, "read dev --as bob",
      "for i in 1 2 3 4 5 6; do touch " .. F.sh(file) .. "; sleep 0.5; done", 0)
    assert.equal(0, F.shell("printf '%s' " .. F.sh(TAIL) .. " >>" .. F.sh(file)))
    assert.equal(0, r.code, F.describe(r))
    assert.is_nil(r.stdout:find("half", 1, true), r.stdout)
    assert.is_nil(r.stdout:find("three", 1, true), r.stdout)
    assert.equal("1", F.read(root .. "/dev/.cursors/bob.txt"))
    r = F.ok(root, { "read", "dev", "--as", "bob" })
    whole(r.stdout)
    assert.equal("3", F.read(root .. "/dev/.cursors/bob.txt"))
  end)

  it("a hand-made file without a final newline is shown as it is once it is 2 s old", function()
    local root = channel()
    os.execute("touch -d '-5 seconds' " .. F.sh(root .. "/dev/0002-py-half.md"))
    local r = F.ok(root, { "read", "dev", "--as", "bob" })
    assert.truthy(r.stdout:find("first half", 1, true), r.stdout)
    assert.equal("3", F.read(root .. "/dev/.cursors/bob.txt"))
  end)
end)

describe("14.11 a _meta.json that is a symlink or a FIFO", function()
  for _, kind in ipairs({ "symlink", "fifo" }) do
    it(kind .. ": the channel is invisible to commands, and fsck reports it", function()
      local root = F.new_root()
      F.init(root, "dev")
      F.init(root, "ok")
      local meta = root .. "/dev/_meta.json"
      os.rename(meta, root .. "/meta.real")
      if kind == "symlink" then
        assert.equal(0, F.shell("ln -s ../meta.real " .. F.sh(meta)))
      else
        assert.equal(0, F.shell("mkfifo " .. F.sh(meta)))
      end
      local want = "dev: FSCK_BAD_ENTRY: _meta.json: is " .. (kind == "symlink" and "a symbolic link" or "a special file")
        .. ", expected a regular file (no command can open the channel: they say it does not exist)\n"
      for _, argv in ipairs({ { "fsck" }, { "fsck", "dev" } }) do
        local r = F.ac(root, argv)
        assert.equal(1, r.code, F.describe(r))
        assert.equal(want, r.stdout)
      end
      local r = F.ac(root, { "fsck", "--json" })
      assert.truthy(r.stdout:find('"channels": [\n    "dev",\n    "ok"\n  ]', 1, true), r.stdout)
      assert.equal(0, F.ac(root, { "fsck", "ok" }).code)
    end)
  end
end)

describe("14.12 a lock file planted as a symlink", function()
  it("post fails at once with SEQ_LOCK_INVALID; fsck --repair removes all three, and everything works", function()
    local root = F.new_root()
    F.init(root, "dev")
    F.ok(root, { "task", "create", "dev", "t1", "--from", "lead", "--title", "one" })
    local dir = root .. "/dev"
    os.remove(dir .. "/_tasks.lock")
    for _, name in ipairs({ "_seq.lock", "_tasks.lock", ".path-locks.lock" }) do
      assert.equal(0, F.shell("ln -s /nonexistent " .. F.sh(dir .. "/" .. name)))
    end
    local r, took = F.background(root, "post dev --from a --title t --body b", ":", 0)
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: SEQ_LOCK_INVALID: _seq.lock is not a directory"), r.stderr)
    io.stderr:write(string.format("# post with a planted _seq.lock symlink failed after %.2f s\n", took))
    r = F.ac(root, { "fsck", "dev" })
    assert.equal(1, r.code, F.describe(r))
    for _, name in ipairs({ "_seq.lock", "_tasks.lock", ".path-locks.lock" }) do
      assert.truthy(r.stdout:find("FSCK_PLANTED_LOCK: " .. name .. ": is a symbolic link", 1, true), r.stdout)
    end
    r = F.ac(root, { "fsck", "dev", "--repair" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("dev: repaired: FSCK_PLANTED_LOCK: _seq.lock: removed\n"
      .. "dev: repaired: FSCK_PLANTED_LOCK: _tasks.lock: removed\n"
      .. "dev: repaired: FSCK_PLANTED_LOCK: .path-locks.lock: removed\n", r.stdout)
    F.post(root, "dev", "a", "t", "b")
    F.ok(root, { "task", "claim", "dev", "t1", "--as", "bob" })
    F.ok(root, { "lock", "dev", "src", "--as", "bob" })
    assert.equal(0, F.ac(root, { "fsck", "dev" }).code)
  end)
end)

describe("14.13 a NUL inside a name through the Lua API", function()
  it("is refused, never cut short", function()
    local root = F.new_root()
    F.init(root, "dev")
    local r = run_lua(root, [[
local ac = require "agentchat"
local root = ac.open(...)
print((select(3, root:init("new\0chan"))))
print((select(3, root:channel("dev\0zzz"))))
local ch = assert(root:channel("dev"))
print((select(2, pcall(ch.cursor, ch, "bob\0x"))))
print((select(2, pcall(ch.set_cursor, ch, "bob\0x", 1))))
print((select(3, ch:post{ from = "a\0b", title = "t", body = "b" })))
print((select(2, pcall(require("agentchat.json").dumps, { ["a\0b"] = 1 }))))
]])
    assert.same({ "CHANNEL_INVALID_NAME", "CHANNEL_INVALID_NAME",
      "bad argument #1 to 'cursor' (string contains a NUL byte)",
      "bad argument #1 to 'set_cursor' (string contains a NUL byte)", "INVALID_TEXT",
      "json.dumps: object keys must not contain NUL bytes" }, F.lines(r.stdout))
    assert.same({ "dev" }, H.ls(root))
    assert.same({ "_meta.json" }, H.ls(root .. "/dev"))
  end)
end)

describe("14.15 smaller ones", function()
  it("an import whose files total more than 64 MiB is refused up front", function()
    local root = F.new_root()
    F.init(root, "imp")
    local dir = F.tmpdir() .. "/team"
    assert.equal(0, F.shell("mkdir -p " .. F.sh(dir .. "/inbox") .. " && cp " .. F.sh(H.repo
      .. "/tests/fixtures/import/team/config.json") .. " " .. F.sh(dir)))
    -- Five sparse 20 MiB inboxes: never read, the sizes alone refuse them.
    for i = 1, 5 do
      assert.equal(0, F.shell("truncate -s 20M " .. F.sh(dir .. "/inbox/a" .. i .. ".jsonl")))
    end
    local r = F.ac(root, { "import", "team", dir, "--into", "imp", "--dry-run" })
    assert.equal(1, r.code, F.describe(r))
    assert.equal("agent-chat: IMPORT_TOO_LARGE: the folder's mailbox files hold 100.0 MiB together, more than "
      .. "64 MiB; import it in parts\n", r.stderr)
  end)

  it("fsck --repair leaves a user's .notes.abcd1234.tmp alone and removes only its own temps", function()
    local root = F.new_root()
    F.init(root, "dev")
    local dir = root .. "/dev"
    for _, name in ipairs({ ".notes.abcd1234.tmp", ".state.md.abcd1234.tmp", ".seqhigh.x1y2z3w4.tmp" }) do
      F.write(dir .. "/" .. name, "x")
      os.execute("touch -d '-5 minutes' " .. F.sh(dir .. "/" .. name))
    end
    local r = F.ac(root, { "fsck", "dev", "--repair" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("dev: repaired: FSCK_STRAY_TEMP: .seqhigh.x1y2z3w4.tmp: removed\n"
      .. "dev: repaired: FSCK_STRAY_TEMP: .state.md.abcd1234.tmp: removed\n", r.stdout)
    assert.equal("x", F.read(dir .. "/.notes.abcd1234.tmp"))
    -- The sweep of recover-pending neither.
    F.ok(root, { "task", "create", "dev", "t1", "--from", "lead", "--title", "one" })
    F.ac(root, { "task", "recover-pending", "dev", "--as", "ops" })
    assert.equal("x", F.read(dir .. "/.notes.abcd1234.tmp"))
  end)

  it("failing read-only commands create no lock file; succeeding ones do, as the Python tool's", function()
    local root = F.new_root()
    F.init(root, "dev")
    local dir = root .. "/dev"
    for _, argv in ipairs({ { "task", "show", "dev", "nosuch" }, { "task", "show", "dev", "../x" },
                            { "check", "dev", "../../x" } }) do
      local r = F.ac(root, argv)
      assert.is_true(r.code ~= 0, F.describe(r))
      assert.same({ "_meta.json" }, H.ls(dir), F.describe(r))
    end
    F.ok(root, { "task", "list", "dev" })
    F.ok(root, { "check", "dev", "src" })
    assert.same({ ".path-locks.lock", "_meta.json", "_tasks.lock" }, H.ls(dir))
  end)

  it("API misuse gets an argument error, not 'attempt to index'", function()
    local root = F.new_root()
    F.init(root, "dev")
    local r = run_lua(root, [[
local ac = require "agentchat"
local root = ac.open(...)
local ch = assert(root:channel("dev"))
for _, f in ipairs({ function() return ch:commit(5) end, function() return ch:compact(5) end,
                     function() return ch:render_state(true) end, function() return root:init("x", 5) end,
                     function() return root:init("x", { members = 5 }) end }) do
  print(select(2, pcall(f)))
end
]])
    local lines = F.lines(r.stdout)
    assert.equal(5, #lines, r.stdout)
    for _, l in ipairs(lines) do
      assert.is_nil(l:find("attempt to", 1, true), l)
    end
    assert.truthy(lines[1]:find("commit expects a batch from fetch", 1, true), lines[1])
  end)

  it("a template's NUL bytes or invalid UTF-8 never reach state.md", function()
    local root = F.new_root()
    F.init(root, "dev")
    local t = F.tmpdir()
    F.write(t .. "/nul.lua", 'return "a\\0b"')
    F.write(t .. "/bad.lua", 'return "caf\\xe9"')
    for name, want in pairs({ nul = "text with a NUL byte", bad = "text that is not valid UTF-8" }) do
      local r = F.ac(root, { "state", "dev", "--template", t .. "/" .. name .. ".lua", "--write", "--from", "a" })
      assert.equal(1, r.code, F.describe(r))
      assert.truthy(r.stderr:find("TEMPLATE_BAD_RESULT: ", 1, true), r.stderr)
      assert.truthy(r.stderr:find("template returned " .. want, 1, true), r.stderr)
      assert.is_nil(F.read(root .. "/dev/state.md"))
    end
  end)
end)
