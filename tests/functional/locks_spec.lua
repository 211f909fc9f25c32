-- Functional specs for path locks (docs/format.md 2.2, 3.7, 3.9), spawning the
-- binary: a table of hostile and tricky paths (each accepted with its
-- normalized form or refused with format.md's code, and nothing written on
-- refusal), races between 16 processes (active locks never overlap,
-- exactly one request of an overlapping set wins), a crash (and an I/O
-- failure) at every fault point of lock, unlock and recover (afterwards
-- the old state, the new state, or PATH_LOCK_TRANSACTION_PENDING until
-- recover-pending resolves it), and the mutex timeout.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local json = require "agentchat.json"

local function ac(root, ...)
  return F.run({ "--root", root, ... })
end

--- A fresh root with channel `ch`; returns root, channel directory.
local function fresh(ch)
  local root = F.new_root()
  F.init(root, ch)
  return root, root .. "/" .. ch
end

local function ok(r)
  assert(r.code == 0, F.describe(r))
  assert(r.stderr == "", F.describe(r))
  return r
end

--- Assert a one-line PATH_LOCK_* failure with exit 1.
local function fails(r, code, msg)
  assert(r.code == 1, F.describe(r))
  assert(r.stdout == "", F.describe(r))
  assert(F.error_line(r.stderr) == nil, F.error_line(r.stderr))
  local want = "agent-chat: " .. code .. ": " .. (msg or "")
  if msg then
    assert(r.stderr == want .. "\n", "want " .. F.show(want) .. ", " .. F.describe(r))
  else
    assert(r.stderr:sub(1, #want) == want, "want " .. F.show(want) .. ", " .. F.describe(r))
  end
  return r
end

local function locked_id(r)
  return assert(r.stdout:match("^locked (%x+) %-> "), F.describe(r))
end

--- The state that matters: records (id -> {owner, previous_owner, paths}),
--- path-lock audit messages in seq order ("event id"), journal present.
local function state(dir)
  local s = { records = {}, audits = {}, journal = false, nrecords = 0 }
  for _, name in ipairs(H.ls(dir .. "/locks")) do
    if name == ".path-lock-transaction.json" then
      s.journal = true
    elseif name:match("^%x+%.json$") then
      local rec = assert(json.loads(H.read(dir .. "/locks/" .. name)))
      local paths = {}
      for i, p in ipairs(rec.paths) do
        paths[i] = p.normalized_path
      end
      s.records[rec.lock_id] = { owner = rec.owner, previous_owner = rec.previous_owner ~= json.null
        and rec.previous_owner or nil, paths = table.concat(paths, ",") }
      s.nrecords = s.nrecords + 1
    end
  end
  local msgs = {}
  for _, name in ipairs(H.ls(dir)) do
    local seq = name:match("^(%d+)%-.*%.md$")
    if seq then
      local text = H.read(dir .. "/" .. name)
      local status = text:match("\nstatus: ([^\n]*)\n")
      local id = text:match('\n  "lock_id": "(%x+)"')
      if status and status:match("^path%.") then
        msgs[#msgs + 1] = { seq = tonumber(seq), text = status .. " " .. tostring(id), body = text }
      end
    end
  end
  table.sort(msgs, function(a, b) return a.seq < b.seq end)
  for i, m in ipairs(msgs) do
    s.audits[i] = m.text
    s.bodies = s.bodies or {}
    s.bodies[i] = m.body
  end
  return s
end

-- ==================================================================== CLI

describe("lock CLI", function()
  local root, dir

  lazy_setup(function()
    root, dir = fresh("c")
  end)

  it("prints the normalized paths, the channel only before the first", function()
    local r = ok(ac(root, "lock", "c", "./lib//util.c", "tools/", "README", "--owner", "carol",
      "--ttl", "30"))
    local id = locked_id(r)
    assert.equal("locked " .. id .. " -> c/lib/util.c, tools, README\n", r.stdout)
    local s = state(dir)
    assert.same({ "path.locked " .. id }, s.audits)
    assert.equal("carol", s.records[id].owner)
    ok(ac(root, "unlock", "c", id, "--as", "carol"))
  end)

  it("check exits 0 with conflicts and lists each lock once, by id", function()
    local a = locked_id(ok(ac(root, "lock", "c", "x/1", "x/2", "--as", "alice")))
    local b = locked_id(ok(ac(root, "lock", "c", "y", "--as", "bob")))
    -- check refuses overlapping paths as lock does (the Python tool's rule)
    fails(ac(root, "check", "c", "x", "x/1", "y/z"), "PATH_LOCK_CONFLICT",
      "requested paths overlap within one lock request")
    local r = ok(ac(root, "check", "c", "x", "y/z"))
    local lines = F.lines(r.stdout)
    assert.equal(2, #lines)
    local ids = { a, b }
    table.sort(ids)
    assert.truthy(lines[1]:match("^locked " .. ids[1] .. " owner=%a+ expires=%d%d%d%d%-"))
    assert.truthy(lines[2]:match("^locked " .. ids[2] .. " owner=%a+ expires="))
    assert.equal("available\n", ok(ac(root, "check", "c", "x/3", "z")).stdout)
    ok(ac(root, "unlock", "c", "x/2", "--from", "alice"))
    ok(ac(root, "unlock", "c", b, "--owner", "bob"))
  end)

  it("gives usage errors exit 2 and -h exit 0 for every command", function()
    for _, argv in ipairs({
      { "lock", "c", "p" }, { "lock", "c", "--as", "a" }, { "unlock", "c", "--as", "a" },
      { "recover", "c", "p", "--as", "a" }, { "recover-pending", "c" },
      { "lock", "c", "p", "--as", "a", "--lease", "soon" },
      { "recover-pending", "c", "--as", "a", "--resolve-publication", "maybe" },
      { "check", "c" },
    }) do
      local r = ac(root, table.unpack(argv))
      assert(r.code == 2, F.describe(r))
      assert(F.error_line(r.stderr) == nil, F.describe(r))
    end
    for _, cmd in ipairs({ "lock", "check", "unlock", "recover", "recover-pending" }) do
      local r = ac(root, cmd, "-h")
      assert(r.code == 0 and r.stdout:find("usage: agent-chat " .. cmd, 1, true) == 1, F.describe(r))
    end
  end)

  it("checks the owner on every command, check included", function()
    fails(ac(root, "check", "c", "p", "--as", ""), "PATH_LOCK_INVALID_OWNER",
      "owner must be a safe identity")
    fails(ac(root, "unlock", "c", "p", "--as", "a b"), "PATH_LOCK_INVALID_OWNER",
      "owner must be a safe identity")
    fails(ac(root, "recover", "c", "p", "--as", "a/b", "--reason", "r"), "PATH_LOCK_INVALID_OWNER",
      "owner must be a safe identity")
    fails(ac(root, "recover-pending", "c", "--as", "_x"), "PATH_LOCK_INVALID_OWNER",
      "actor must be a safe identity")
  end)

  it("refuses durations that are not positive and finite", function()
    for _, v in ipairs({ "0", "-1", "inf", "-0.5", "nan", "-0.0", "1e300", "NaN", "Infinity" }) do
      local r = ac(root, "lock", "c", "p", "--as", "a", "--lease", v)
      assert(r.code == 1 and r.stderr:match("^agent%-chat: PATH_LOCK_INVALID_DURATION: "), F.describe(r))
    end
    local r = ok(ac(root, "lock", "c", "p", "--as", "a", "--lease", " 1e3 "))
    ok(ac(root, "unlock", "c", locked_id(r), "--as", "a"))
  end)

  it("wraps channel errors in PATH_LOCK_* codes", function()
    fails(ac(root, "check", "nochan", "x"), "PATH_LOCK_CHANNEL_NOT_FOUND",
      "channel does not contain _meta.json: " .. root .. "/nochan")
    fails(ac(root, "unlock", "a:b", "x", "--as", "a"), "PATH_LOCK_INVALID_CHANNEL",
      "invalid channel name: 'a:b' (invalid channel name (path traversal blocked): 'a:b')")
    fails(ac(root, "recover-pending", "_c", "--as", "a"), "PATH_LOCK_INVALID_CHANNEL",
      "invalid channel name: '_c' (invalid channel name (reserved prefix blocked): '_c')")
    -- control characters stay escaped: one line
    fails(ac(root, "lock", "a\nb", "x", "--as", "a"), "PATH_LOCK_INVALID_CHANNEL",
      "invalid channel name: 'a\\nb' (invalid channel name (control character blocked): 'a\\nb')")
    fails(ac(root, "check", "\27[31m", "x"), "PATH_LOCK_INVALID_CHANNEL",
      "invalid channel name: '\\x1b[31m' (invalid channel name (control character blocked): "
      .. "'\\x1b[31m')")
  end)
end)

-- ========================================================= hostile paths

describe("hostile and tricky paths", function()
  local ABS = "absolute paths are not allowed"
  local PARENT = "parent traversal is not allowed"
  local CTRL = "path contains a forbidden control character"
  local BACK = "backslashes are not valid portable separators"
  local OUT = "path resolves outside the channel workspace"
  local root, dir

  lazy_setup(function()
    root, dir = fresh("h")
    os.execute(table.concat({
      "mkdir -p " .. F.sh(dir .. "/dir/sub"),
      "touch " .. F.sh(dir .. "/file.txt"),
      "ln -s ../.. " .. F.sh(dir .. "/out"),
      "ln -s /etc " .. F.sh(dir .. "/abs_out"),
      "ln -s dir " .. F.sh(dir .. "/in"),
      "ln -s " .. F.sh(dir .. "/dir") .. " " .. F.sh(dir .. "/abs_in"),
      "ln -s loop " .. F.sh(dir .. "/loop"),
      "ln -s .. " .. F.sh(dir .. "/up"),
      "ln -s ../h/dir " .. F.sh(dir .. "/back"),
      "ln -s file.txt " .. F.sh(dir .. "/lfile"),
    }, " && "))
  end)

  local long4k = string.rep("d/", 2047) .. "f"          -- 4095 bytes
  local long20k = string.rep("e/", 10239) .. "g"
  local longname = string.rep("n", 300)

  -- { path, expected normalized path (string) or { message }, kind }
  local cases = {
    { "/etc/passwd", { ABS } },
    { "//server/share", { ABS } },
    { "/", { ABS } },
    { "C:/x", { ABS } },
    { "C:", { ABS } },
    { "a:b", { ABS } },
    { "src/a:b", { "path names may not contain ':'" } },
    { "..", { PARENT } },
    { "../x", { PARENT } },
    { "a/..", { PARENT } },
    { "a/../b", { PARENT } },
    { "a/b/..", { PARENT } },
    { "a/b/../../..", { PARENT } },
    { "./..", { PARENT } },
    { "a//../b", { PARENT } },
    { "dir/sub/../../..", { PARENT } },
    { "back\\slash", { BACK } },
    { "a\\..\\b", { BACK } },
    { "C:\\Windows", { BACK } },
    { "a\1b", { CTRL } },
    { "tab\there", { CTRL } },
    { "nl\nx", { CTRL } },
    { "cr\rx", { CTRL } },
    { "del\127", { CTRL } },
    { "esc\27[31m", { CTRL } },
    { "nel\u{85}", { CTRL } },
    { "bad\255utf8", { CTRL } },
    { "", { "path must be a non-empty string" } },
    { "out", { OUT } },
    { "out/etc/passwd", { OUT } },
    { "abs_out", { OUT } },
    { "abs_out/passwd", { OUT } },
    { "up", { OUT } },
    { "up/h/../..", { PARENT } },
    { "loop", { "path contains a symlink loop" } },
    { "in", "dir", "directory" },
    { "in/new.c", "dir/new.c", "file" },
    { "abs_in/x", "dir/x", "file" },
    { "back", "dir", "directory" },
    { "back/sub/", "dir/sub", "directory" },
    { "up/h/dir", "dir", "directory" },
    { "lfile", "file.txt", "file" },
    { "file.txt/child", "file.txt/child", "file" },
    { ".", ".", "directory" },
    { "./.", ".", "directory" },
    { "./a//b/", "a/b", "file" },
    { "dir/", "dir", "directory" },
    { "~/x", "~/x", "file" },
    { "with space/f", "with space/f", "file" },
    { "\u{fc}n\u{ef}code/\u{444}\u{430}\u{439}\u{43b}", "\u{fc}n\u{ef}code/\u{444}\u{430}\u{439}\u{43b}", "file" },
    { "...", "...", "file" },
    { ".hidden", ".hidden", "file" },
    { "a/b", "a/b", "file" },
    { "a/bc", "a/bc", "file" },
    { long4k, long4k, "file" },
    { long20k, long20k, "file" },
    { longname, longname, "file" },
    { "-dash", "-dash", "file" },
  }

  it("has at least 40 cases", function()
    assert.is_true(#cases >= 40)
  end)

  for i, c in ipairs(cases) do
    local label = string.format("#%d %s", i, F.show(c[1]):sub(1, 40))
    if type(c[2]) == "table" then
      it(label .. " is refused: " .. c[2][1] .. "; nothing is written", function()
        local before = F.snapshot(root)
        fails(ac(root, "lock", "h", "--as", "alice", "--", c[1]), "PATH_LOCK_INVALID_PATH", c[2][1])
        -- check validates the same way
        fails(ac(root, "check", "h", "--", c[1]), "PATH_LOCK_INVALID_PATH", c[2][1])
        assert.same({}, F.diff(before, F.snapshot(root)))
      end)
    else
      it(label .. " is locked as " .. F.show(c[2]):sub(1, 40) .. " (" .. c[3] .. ")", function()
        local r = ok(ac(root, "lock", "h", "--as", "alice", "--", c[1]))
        local id = locked_id(r)
        assert.equal("locked " .. id .. " -> h/" .. c[2] .. "\n", r.stdout)
        local rec = assert(json.loads(H.read(dir .. "/locks/" .. id .. ".json")))
        assert.equal(c[1], rec.paths[1].display_path)
        assert.equal(c[2], rec.paths[1].normalized_path)
        assert.equal(c[3], rec.paths[1].kind)
        -- unlock by the given path (it normalizes to the same) when it is a
        -- valid path argument, else by id
        ok(ac(root, "unlock", "h", c[1] ~= "-dash" and c[1] or id, "--as", "alice"))
        assert.is_nil(H.read(dir .. "/locks/" .. id .. ".json"))
      end)
    end
  end

  it("a/b and a/bc do not overlap; a/b and a/b/c do", function()
    local ab = locked_id(ok(ac(root, "lock", "h", "a/b", "--as", "alice")))
    local abc = locked_id(ok(ac(root, "lock", "h", "a/bc", "--as", "bob")))
    fails(ac(root, "lock", "h", "a/b/c", "--as", "carol"), "PATH_LOCK_CONFLICT",
      "lock request overlaps an active lock")
    assert.equal("locked " .. abc, ok(ac(root, "check", "h", "a/bc")).stdout:match("^locked %x+"))
    assert.equal("locked " .. ab, ok(ac(root, "check", "h", "a/b/c")).stdout:match("^locked %x+"))
    ok(ac(root, "unlock", "h", ab, "--as", "alice"))
    ok(ac(root, "unlock", "h", abc, "--as", "bob"))
  end)

  it("a symlink into the channel locks (and conflicts on) its target", function()
    local id = locked_id(ok(ac(root, "lock", "h", "in/new.c", "--as", "alice")))
    fails(ac(root, "lock", "h", "dir", "--as", "bob"), "PATH_LOCK_CONFLICT")
    fails(ac(root, "lock", "h", "abs_in/new.c", "--as", "bob"), "PATH_LOCK_CONFLICT")
    ok(ac(root, "unlock", "h", "dir/new.c", "--as", "alice"))
    assert.is_nil(H.read(dir .. "/locks/" .. id .. ".json"))
  end)

  it("a file later replaced by a directory keeps its lock and its kind", function()
    H.write(dir .. "/morph", "x")
    local id = locked_id(ok(ac(root, "lock", "h", "morph", "--as", "alice")))
    os.execute("rm " .. F.sh(dir .. "/morph") .. " && mkdir " .. F.sh(dir .. "/morph"))
    fails(ac(root, "lock", "h", "morph/inside.c", "--as", "bob"), "PATH_LOCK_CONFLICT")
    local rec = assert(json.loads(H.read(dir .. "/locks/" .. id .. ".json")))
    assert.equal("file", rec.paths[1].kind)
    ok(ac(root, "unlock", "h", "morph/", "--as", "alice"))
    local id2 = locked_id(ok(ac(root, "lock", "h", "morph", "--as", "alice")))
    rec = assert(json.loads(H.read(dir .. "/locks/" .. id2 .. ".json")))
    assert.equal("directory", rec.paths[1].kind)
    ok(ac(root, "unlock", "h", id2, "--as", "alice"))
  end)

  it("refuses a request whose own paths overlap, writing nothing", function()
    local before = F.snapshot(root)
    for _, set in ipairs({ { "x", "x" }, { "a/b", "./a//b" }, { "d", "d/e" }, { "z", "." },
                           { "in/q", "dir/q" } }) do
      fails(ac(root, "lock", "h", set[1], set[2], "--as", "alice"), "PATH_LOCK_CONFLICT",
        "requested paths overlap within one lock request")
    end
    assert.same({}, F.diff(before, F.snapshot(root)))
  end)
end)

-- ================================================================ races

--- Run `n` jobs of a shell script at once: each waits for the file `go`,
--- then runs its command line; returns the list of {code, out, err}.
local function race(work, commands)
  local lines = { "W=$1", "rm -f \"$W/go\"" }
  for i, cmd in ipairs(commands) do
    lines[#lines + 1] = string.format(
      "( while [ ! -e \"$W/go\" ]; do sleep 0.005; done; %s >\"$W/out%d\" 2>\"$W/err%d\"; "
      .. "echo $? >\"$W/rc%d\" ) &", cmd, i, i, i)
  end
  lines[#lines + 1] = "sleep 0.3; : >\"$W/go\"; wait"
  assert.equal(0, F.shell(table.concat(lines, "\n"), {}, work))
  local res = {}
  for i = 1, #commands do
    res[i] = { code = tonumber(H.read(work .. "/rc" .. i)), out = H.read(work .. "/out" .. i),
               err = H.read(work .. "/err" .. i) }
  end
  return res
end

local function lock_cmd(root, ch, owner, ...)
  local words = { F.sh(F.bin), "--root", F.sh(root), "lock", ch, "--as", owner }
  for _, p in ipairs({ ... }) do
    words[#words + 1] = F.sh(p)
  end
  return table.concat(words, " ")
end

describe("16 processes locking at once", function()
  it("exactly one of a set of overlapping requests wins", function()
    for round = 1, 3 do
      local root = fresh("r")
      local work = F.tmpdir()
      local cmds = {}
      for i = 1, 16 do
        -- a chain of prefixes (pairwise overlapping), plus duplicates and "."
        local path = i == 16 and "." or ("p" .. string.rep("/q", (i + round) % 8))
        cmds[i] = lock_cmd(root, "r", "w" .. i, path)
      end
      local wins = 0
      for _, r in ipairs(race(work, cmds)) do
        if r.code == 0 then
          wins = wins + 1
          assert.truthy(r.out:match("^locked %x+ %-> r/"))
        else
          assert.equal(1, r.code)
          assert.equal("agent-chat: PATH_LOCK_CONFLICT: lock request overlaps an active lock\n", r.err)
        end
      end
      assert.equal(1, wins)
      local s = state(root .. "/r")
      assert.equal(1, s.nrecords)
      assert.equal(1, #s.audits)
      assert.is_false(s.journal)
    end
  end)

  it("one winner per group of overlapping requests (4 groups of 4)", function()
    local root = fresh("g")
    local work = F.tmpdir()
    local cmds = {}
    for i = 1, 16 do
      local g = (i - 1) % 4
      local variants = { "g" .. g, "g" .. g .. "/a", "./g" .. g .. "//a/b/", "g" .. g }
      cmds[i] = lock_cmd(root, "g", "w" .. i, variants[(i - 1) // 4 + 1], "solo" .. i)
    end
    local res = race(work, cmds)
    local winners = {}
    for i, r in ipairs(res) do
      if r.code == 0 then
        local g = (i - 1) % 4
        assert.is_nil(winners[g], "two winners in group " .. g)
        winners[g] = i
      else
        assert.equal("agent-chat: PATH_LOCK_CONFLICT: lock request overlaps an active lock\n", r.err)
      end
    end
    for g = 0, 3 do
      assert.truthy(winners[g], "no winner in group " .. g)
    end
    assert.equal(4, state(root .. "/g").nrecords)
  end)

  it("under churn the active locks never overlap (sampled and replayed)", function()
    local root = fresh("c")
    local work = F.tmpdir()
    local pool = { "a", "a/b", "a/b/c", "a/bc", "b/x", "b/y", "b/x/1", "c/d/e", "c/d/f", "d",
                   "e/1", "e/2", "e/3", "f", "g/h", "." }
    local seed = 12345
    local function rnd(n)
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n + 1
    end
    local cmds = {}
    for w = 1, 16 do
      local steps = {}
      for _ = 1, 12 do
        local p1, p2 = pool[rnd(#pool)], pool[rnd(#pool)]
        -- lock one or two paths; on success unlock by the first path
        steps[#steps + 1] = string.format(
          "if %s >\"$W/s%d\" 2>>\"$W/e%d\"; then %s unlock c %s --as w%d >/dev/null 2>>\"$W/e%d\" "
          .. "|| echo unlock-failed >>\"$W/e%d\"; fi",
          lock_cmd(root, "c", "w" .. w, p1, rnd(3) == 1 and p2 or p1 .. "/" .. w),
          w, w, F.sh(F.bin) .. " --root " .. F.sh(root), F.sh(p1), w, w, w)
      end
      cmds[w] = table.concat(steps, "; ")
    end
    -- the monitor samples the whole lock table under the mutex
    local monitor = work .. "/monitor.lua"
    H.write(monitor, [[
local ac = require "agentchat"
local sys = require "agentchat.sys"
local root, w = arg[1], arg[2]
local ch = assert(ac.open(root)):channel("c")
local bad, samples = {}, 0
while not io.open(w .. "/stop") do
  local locks, msg = ch:locks()
  if not locks then
    bad[#bad + 1] = "locks() failed: " .. tostring(msg)
  else
    samples = samples + 1
    local paths = {}
    for _, l in ipairs(locks) do
      for _, p in ipairs(l.paths) do
        paths[#paths + 1] = { l.lock_id, p.normalized_path }
      end
    end
    for i = 1, #paths do
      for j = i + 1, #paths do
        if paths[i][1] ~= paths[j][1] and ac.path_overlaps(paths[i][2], paths[j][2]) then
          bad[#bad + 1] = paths[i][2] .. " overlaps " .. paths[j][2]
        end
      end
    end
  end
  sys.sleep(0.002)
end
local f = io.open(w .. "/monitor.out", "w")
f:write(samples, "\n", table.concat(bad, "\n"))
f:close()
]])
    local script = {
      "W=$1",
      F.sh(F.bin) .. " run " .. F.sh(monitor) .. " " .. F.sh(root) .. " \"$W\" &",
      "M=$!",
    }
    for w, cmd in ipairs(cmds) do
      script[#script + 1] = "( " .. cmd .. " ) & P" .. w .. "=$!"
    end
    for w = 1, #cmds do
      script[#script + 1] = "wait $P" .. w
    end
    script[#script + 1] = ": >\"$W/stop\"; wait $M"
    assert.equal(0, F.shell(table.concat(script, "\n"), {}, work))

    local mon = H.read(work .. "/monitor.out")
    local samples = tonumber(mon:match("^(%d+)"))
    assert.truthy(samples and samples > 0, "monitor took no samples")
    assert.equal("", mon:match("^%d+\n(.*)$"), "monitor saw overlapping locks")
    -- every failure was an ordinary conflict
    for w = 1, 16 do
      for line in (H.read(work .. "/e" .. w) or ""):gmatch("[^\n]+") do
        assert.truthy(line:match("^agent%-chat: PATH_LOCK_CONFLICT: ")
          or line:match("^agent%-chat: PATH_LOCK_RECOVERY_REQUIRED: "), line)
      end
    end
    -- replay the audit messages: they are posted under the mutex, so seq
    -- order is the order of the mutations
    local s = state(root .. "/c")
    assert.is_false(s.journal)
    assert.equal(0, s.nrecords)
    local active, locked = {}, 0
    for i, line in ipairs(s.audits) do
      local event, id = line:match("^(%S+) (%x+)$")
      local paths = {}
      for p in s.bodies[i]:gmatch('"normalized_path": "([^"]*)"') do
        paths[#paths + 1] = p
      end
      if event == "path.locked" then
        locked = locked + 1
        for other, ops in pairs(active) do
          for _, p in ipairs(paths) do
            for _, q in ipairs(ops) do
              assert.is_false(require("agentchat").path_overlaps(p, q),
                string.format("#%d: %s of %s overlaps %s of %s", i, p, id, q, other))
            end
          end
        end
        active[id] = paths
      else
        assert.equal("path.lock.unlocked", event)
        assert.truthy(active[id], "unlock of a lock that was not active: " .. id)
        active[id] = nil
      end
    end
    assert.is_nil(next(active))
    assert.truthy(locked >= 8, "only " .. locked .. " locks were granted")
  end)
end)

-- ================================================================ crashes

local EXPIRED = [[{
  "channel": "k",
  "expires_at": "2020-01-01T00:05:00.000000+00:00",
  "lock_id": "5a5b5c5d5e5f50515253545556575859",
  "locked_at": "2020-01-01T00:00:00.000000+00:00",
  "owner": "carol",
  "paths": [
    {
      "display_path": "old",
      "kind": "directory",
      "normalized_path": "old"
    }
  ],
  "previous_expires_at": null,
  "previous_owner": null,
  "recovery_reason": null,
  "updated_at": "2020-01-01T00:00:00.000000+00:00"
}
]]
local EXPIRED_ID = "5a5b5c5d5e5f50515253545556575859"

-- Each operation: how to set up, the command, and the two acceptable
-- outcomes (the old state and the new state).
local OPS = {
  lock = {
    setup = function() return {} end,
    argv = function() return { "lock", "k", "src/a.c", "docs", "--as", "alice" } end,
    unchanged = function(s)
      return s.nrecords == 0 and #s.audits == 0
    end,
    changed = function(s)
      local id, rec = next(s.records)
      return s.nrecords == 1 and rec.owner == "alice" and rec.paths == "src/a.c,docs"
        and #s.audits == 1 and s.audits[1] == "path.locked " .. id
    end,
  },
  unlock = {
    setup = function(root)
      local r = ok(ac(root, "lock", "k", "src/a.c", "--as", "alice"))
      return { id = locked_id(r) }
    end,
    argv = function() return { "unlock", "k", "./src/a.c", "--as", "alice" } end,
    unchanged = function(s, ctx)
      return s.nrecords == 1 and s.records[ctx.id] and #s.audits == 1
    end,
    changed = function(s, ctx)
      return s.nrecords == 0 and #s.audits == 2 and s.audits[2] == "path.lock.unlocked " .. ctx.id
    end,
  },
  recover = {
    setup = function(_, dir)
      os.execute("mkdir -p " .. F.sh(dir .. "/locks"))
      H.write(dir .. "/locks/" .. EXPIRED_ID .. ".json", EXPIRED)
      return {}
    end,
    argv = function() return { "recover", "k", "old", "--as", "erin", "--reason", "carol left" } end,
    unchanged = function(s, _, dir)
      return s.nrecords == 1 and H.read(dir .. "/locks/" .. EXPIRED_ID .. ".json") == EXPIRED
        and #s.audits == 0
    end,
    changed = function(s)
      local rec = s.records[EXPIRED_ID]
      return s.nrecords == 1 and rec and rec.owner == "erin" and rec.previous_owner == "carol"
        and #s.audits == 1 and s.audits[1] == "path.lock.recovered " .. EXPIRED_ID
    end,
  },
}

--- The fault points a command reaches, as "name#k" (k-th occurrence).
local function fault_points(op)
  local root, dir = fresh("k")
  local ctx = op.setup(root, dir)
  local log = F.tmpdir() .. "/faults"
  local argv = op.argv(ctx)
  local r = F.run({ "--root", root, table.unpack(argv) }, { env = { AGENT_CHAT_FAULT_LOG = log } })
  ok(r)
  local seen, points = {}, {}
  for name in (H.read(log) or ""):gmatch("[^\n]+") do
    seen[name] = (seen[name] or 0) + 1
    points[#points + 1] = name .. "#" .. seen[name]
  end
  return points
end

--- After a crash or a failure: either settled, or pending until
--- recover-pending settles it. Returns "unchanged" or "changed".
local function settle(root, dir, op, ctx, label)
  local s = state(dir)
  if s.journal then
    fails(ac(root, "check", "k", "anything"), "PATH_LOCK_TRANSACTION_PENDING",
      "a previous path-lock mutation needs explicit recovery")
    fails(ac(root, "lock", "k", "elsewhere", "--as", "zed"), "PATH_LOCK_TRANSACTION_PENDING")
  end
  -- recover-pending settles a journal, and otherwise changes nothing but
  -- the temp files a crash left behind
  ok(ac(root, "recover-pending", "k", "--as", "ops"))
  s = state(dir)
  assert.is_false(s.journal, label .. ": journal left after recover-pending")
  for _, name in ipairs(H.ls(dir .. "/locks")) do
    assert.falsy(name:match("%.tmp$"), label .. ": temp file left: " .. name)
  end
  local verdict = op.unchanged(s, ctx, dir) and "unchanged" or op.changed(s, ctx, dir) and "changed"
  assert(verdict, label .. ": neither the old nor the new state: records "
    .. F.show(require("agentchat.json").dumps(s.records)) .. ", audits " .. table.concat(s.audits, "; "))
  -- and the channel works again
  ok(ac(root, "check", "k", "."))
  return verdict
end

for _, name in ipairs({ "lock", "unlock", "recover" }) do
  local op = OPS[name]
  describe(name .. " interrupted at every fault point", function()
    local points

    lazy_setup(function()
      points = fault_points(op)
    end)

    it("reaches the journal, record and audit steps", function()
      local all = table.concat(points, " ")
      for _, want in ipairs({ "pathlock.journal.prepared.publish#1", "pathlock.journal.applied.publish#1",
                              "post.message.publish#1", "pathlock.journal.published.publish#1",
                              "pathlock.journal.remove#1" }) do
        assert.truthy(all:find(want, 1, true), want .. " not reached: " .. all)
      end
      assert.truthy(all:find(name == "unlock" and "pathlock.record.unlink#1"
        or "pathlock.record.publish#1", 1, true))
    end)

    for _, action in ipairs({ "crash", "fail" }) do
      it("ends unchanged, changed, or pending until recover-pending (" .. action .. ")", function()
        local outcomes = {}
        for _, point in ipairs(points) do
          local root, dir = fresh("k")
          local ctx = op.setup(root, dir)
          local r = F.run({ "--root", root, table.unpack(op.argv(ctx)) },
            { env = { AGENT_CHAT_FAULT = point .. ":" .. action } })
          local label = name .. " " .. action .. " at " .. point
          if action == "crash" then
            assert(r.code == 137, label .. ": " .. F.describe(r))
          else
            assert(F.crashed(r.stderr) == nil, label .. ": " .. F.describe(r))
            if r.code ~= 0 then
              assert(F.error_line(r.stderr) == nil, label .. ": " .. F.describe(r))
            end
          end
          local verdict = settle(root, dir, op, ctx, label)
          if action == "fail" and r.code == 0 then
            assert(verdict == "changed", label .. ": succeeded but did not change")
          end
          outcomes[verdict] = (outcomes[verdict] or 0) + 1
        end
        -- early points keep the old state, late ones the new
        assert.truthy(outcomes.unchanged and outcomes.changed, F.show(json.dumps(outcomes)))
      end)
    end
  end)
end

describe("recover-pending interrupted at every fault point", function()
  it("can be run again until it settles", function()
    local op = OPS.lock
    local log = F.tmpdir() .. "/faults"
    local root, dir = fresh("k")
    F.run({ "--root", root, table.unpack(op.argv({})) },
      { env = { AGENT_CHAT_FAULT = "pathlock.journal.applied.write#1:crash" } })
    assert.is_true(state(dir).journal)
    ok(F.run({ "--root", root, "recover-pending", "k", "--as", "ops" },
      { env = { AGENT_CHAT_FAULT_LOG = log } }))
    local points, seen = {}, {}
    for p in H.read(log):gmatch("[^\n]+") do
      seen[p] = (seen[p] or 0) + 1
      points[#points + 1] = p .. "#" .. seen[p]
    end
    assert.truthy(#points >= 4)
    for _, point in ipairs(points) do
      root, dir = fresh("k")
      F.run({ "--root", root, table.unpack(op.argv({})) },
        { env = { AGENT_CHAT_FAULT = "pathlock.journal.applied.write#1:crash" } })
      local r = F.run({ "--root", root, "recover-pending", "k", "--as", "ops" },
        { env = { AGENT_CHAT_FAULT = point .. ":crash" } })
      assert.equal(137, r.code)
      assert.equal("unchanged", settle(root, dir, op, {}, "recover-pending crash at " .. point))
    end
  end)
end)

local function b64decode(s)
  local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  local out, bits, nbits = {}, 0, 0
  for c in s:gmatch("[^=]") do
    bits = (bits << 6) | (alphabet:find(c, 1, true) - 1)
    nbits = nbits + 6
    if nbits >= 8 then
      nbits = nbits - 8
      out[#out + 1] = string.char((bits >> nbits) & 0xff)
    end
  end
  return table.concat(out)
end

describe("the journal", function()
  it("is written in the Python tool's format", function()
    local root, dir = fresh("k")
    F.run({ "--root", root, "lock", "k", "src/a.c", "--as", "alice" },
      { env = { AGENT_CHAT_FAULT = "post.message.write#1:crash" } })
    local text = H.read(dir .. "/locks/.path-lock-transaction.json")
    local j = assert(json.loads(text))
    assert.equal(1, j.version)
    assert.equal("applied", j.phase)
    assert.equal("lock", j.operation)
    assert.equal("path.locked", j.event)
    assert.equal("alice", j.actor)
    assert.equal(json.null, j.before)
    assert.truthy(j.transaction_id:match("^%x+$") and #j.transaction_id == 32)
    local id = j.target:match("^(%x+)%.json$")
    assert.truthy(id and #id == 32)
    assert.equal(H.read(dir .. "/locks/" .. id .. ".json"), b64decode(j.after))
    -- indent 2, sorted keys, trailing newline
    assert.equal(text, json.dumps(j, { indent = 2, sort_keys = true, ensure_ascii = false }) .. "\n")
  end)
end)

-- ================================================================ order of checks

-- The Python tool's order of checks (path_locks.py): a request meets the
-- error of its first problem in that order, so a channel with several
-- problems gives the same line with either tool.
describe("the order of the checks", function()
  local ID = "0a0b0c0d0e0f00010203040506070809"

  --- A hand-made record of lock `id` on `path`, expiring at `expires`.
  local function record(dir, id, owner, path, expires)
    os.execute("mkdir -p " .. F.sh(dir .. "/locks"))
    H.write(dir .. "/locks/" .. id .. ".json", json.dumps({
      channel = "o", expires_at = expires, lock_id = id, locked_at = "2030-01-01T00:00:00.000000+00:00",
      owner = owner, paths = { { display_path = path, kind = "file", normalized_path = path } },
      previous_expires_at = json.null, previous_owner = json.null, recovery_reason = json.null,
      updated_at = "2030-01-01T00:00:00.000000+00:00",
    }, { indent = 2, sort_keys = true }) .. "\n")
  end

  local PAST, FUTURE = "2020-01-01T00:00:00.000000+00:00", "2099-01-01T00:00:00.000000+00:00"
  local OVERLAP = "requested paths overlap within one lock request"

  it("lock: owner, paths with their overlaps in order, journal, records, conflicts, then duration", function()
    local root, dir = fresh("o")
    fails(ac(root, "lock", "o", "a", "a", "--as", "_x", "--ttl", "0"), "PATH_LOCK_INVALID_OWNER",
      "owner must be a safe identity")
    fails(ac(root, "lock", "o", "a", "a", "../b", "--as", "x"), "PATH_LOCK_CONFLICT", OVERLAP)
    fails(ac(root, "lock", "o", "../b", "a", "a", "--as", "x"), "PATH_LOCK_INVALID_PATH",
      "parent traversal is not allowed")
    fails(ac(root, "lock", "o", "ab:c", "--as", "x"), "PATH_LOCK_INVALID_PATH", "path names may not contain ':'")
    record(dir, ID, "alice", "a", FUTURE)
    fails(ac(root, "lock", "o", "a", "--as", "x", "--ttl", "-1"), "PATH_LOCK_CONFLICT",
      "lock request overlaps an active lock")
    fails(ac(root, "lock", "o", "b", "--as", "x", "--ttl", "1e12"), "PATH_LOCK_INVALID_DURATION",
      "lock duration is outside the supported timestamp range")
    -- an expired lock among the overlapping ones decides, whatever its id
    record(dir, "ffffffffffffffffffffffffffffffff", "bob", "b", PAST)
    fails(ac(root, "lock", "o", ".", "--as", "x"), "PATH_LOCK_RECOVERY_REQUIRED",
      "lock request overlaps an expired lock; recover it explicitly")
    H.write(dir .. "/locks/.path-lock-transaction.json", "{}")
    fails(ac(root, "lock", "o", "c", "--as", "x", "--ttl", "0"), "PATH_LOCK_TRANSACTION_INVALID",
      "transaction marker has an unsupported shape")
  end)

  it("check: paths and overlaps before the owner", function()
    local root = fresh("o")
    fails(ac(root, "check", "o", "src", "src/a", "--as", "bad owner"), "PATH_LOCK_CONFLICT", OVERLAP)
    fails(ac(root, "check", "o", "/x", "--as", "bad owner"), "PATH_LOCK_INVALID_PATH",
      "absolute paths are not allowed")
    fails(ac(root, "check", "o", "src", "--as", "bad owner"), "PATH_LOCK_INVALID_OWNER",
      "owner must be a safe identity")
  end)

  it("recover: owner, reason, journal, target, expiry, other locks, then duration", function()
    local root, dir = fresh("o")
    fails(ac(root, "recover", "o", "nope", "--as", "a b", "--reason", "\n"), "PATH_LOCK_INVALID_OWNER",
      "owner must be a safe identity")
    fails(ac(root, "recover", "o", "nope", "--as", "x", "--reason", "tab\there"), "PATH_LOCK_INVALID_REASON",
      "recovery reason contains a forbidden control character")
    fails(ac(root, "recover", "o", "nope", "--as", "x", "--reason", "r", "--ttl", "0"), "PATH_LOCK_NOT_FOUND",
      "lock record does not exist: nope")
    record(dir, ID, "alice", "a", FUTURE)
    fails(ac(root, "recover", "o", ID, "--as", "x", "--reason", "r", "--ttl", "nan"), "PATH_LOCK_NOT_STALE",
      "lock " .. ID .. " is still active")
    -- an expired lock whose paths another (active) lock overlaps
    record(dir, ID, "alice", "a/b", PAST)
    record(dir, "1a1b1c1d1e1f10111213141516171819", "bob", "a", FUTURE)
    fails(ac(root, "recover", "o", ID, "--as", "x", "--reason", "r", "--ttl", "0"), "PATH_LOCK_CONFLICT",
      "recovery request overlaps an active lock")
    os.remove(dir .. "/locks/1a1b1c1d1e1f10111213141516171819.json")
    fails(ac(root, "recover", "o", "a/b", "--as", "x", "--reason", "r", "--ttl", "0"),
      "PATH_LOCK_INVALID_DURATION", "lock duration must be positive")
    local r = ok(ac(root, "recover", "o", "a/b", "--as", "x", "--reason", "r"))
    assert.equal("recovered " .. ID .. " for x previous_owner=alice reason=r\n", r.stdout)
  end)

  it("unlock by id reads that record alone; by path every .json of locks/", function()
    local root, dir = fresh("o")
    record(dir, ID, "alice", "a", FUTURE)
    H.write(dir .. "/locks/ffffffffffffffffffffffffffffffff.json", "not json\n")
    fails(ac(root, "check", "o", "z"), "PATH_LOCK_INVALID_RECORD",
      "could not read lock record ffffffffffffffffffffffffffffffff.json: Expecting value: line 1 column 1 (char 0)")
    fails(ac(root, "unlock", "o", "a", "--as", "alice"), "PATH_LOCK_INVALID_RECORD",
      "could not read lock record ffffffffffffffffffffffffffffffff.json: Expecting value: line 1 column 1 (char 0)")
    ok(ac(root, "unlock", "o", ID, "--as", "alice"))
  end)

  it("an audit post that fails undoes the change: PATH_LOCK_AUDIT_FAILED", function()
    local root, dir = fresh("o")
    local before = F.snapshot(dir)
    local r = F.run({ "--root", root, "lock", "o", "a", "--as", "x" }, { env = { AGENT_CHAT_FAULT = "seq.lock" } })
    fails(r, "PATH_LOCK_AUDIT_FAILED",
      "path lock audit event could not be written: could not acquire channel seq lock: Input/output error")
    assert.same({}, F.diff(before, F.snapshot(dir), function(path)
      return path == "locks" or path == ".path-locks.lock"
    end))
  end)
end)

-- ================================================================ timeout

describe("the path-lock mutex", function()
  it("times out after 10 s with PATH_LOCK_TIMEOUT, check included", function()
    local root, dir = fresh("t")
    local work = F.tmpdir()
    local t0 = F.now()
    local code = F.shell(table.concat({
      "W=$1",
      ": >" .. F.sh(dir .. "/.path-locks.lock"),
      "flock " .. F.sh(dir .. "/.path-locks.lock") .. " sleep 12 &",
      "sleep 0.3",
      F.sh(F.bin) .. " --root " .. F.sh(root) .. " check t x >\"$W/out\" 2>\"$W/err\"; echo $? >\"$W/rc\"",
      "wait",
    }, "\n"), {}, work)
    assert.equal(0, code)
    local elapsed = F.now() - t0
    assert.equal("1\n", H.read(work .. "/rc"))
    assert.equal("agent-chat: PATH_LOCK_TIMEOUT: could not acquire path-lock mutation lock\n",
      H.read(work .. "/err"))
    assert.truthy(elapsed >= 10, "gave up after " .. elapsed .. " s")
  end)
end)
