-- Functional specs for concurrent processes on one channel (docs/format.md 4
-- "Sequence allocation", "Atomic publish", "wait"; 5.1-5.3): parallel
-- posters get distinct gap-free seqs, readers never see a partial message,
-- a restarted `wait` never misses one, and deleted seqs are never reused.
-- The processes are background jobs of a /bin/sh script (F.shell); the
-- specs then look at what they printed and left on disk.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local function range(n)
  local out = {}
  for i = 1, n do
    out[i] = i
  end
  return out
end

local function sorted(list)
  local out = { table.unpack(list) }
  table.sort(out)
  return out
end

--- "posted #N -> ..." seqs from a file of post outputs.
local function posted_seqs(text)
  local out = {}
  for n in (text or ""):gmatch("posted #(%d+) %-> ") do
    out[#out + 1] = tonumber(n)
  end
  return out
end

--- Problems with one printed message block (lines between rules), or nil.
local function block_problem(block)
  if block[1] ~= "---" then
    return "does not open with ---"
  end
  if not (block[2] or ""):match("^seq: %d+$") then
    return "second line is not 'seq: N'"
  end
  local close
  for i = 2, #block do
    if block[i] == "---" then
      close = i
      break
    end
  end
  if not close then
    return "frontmatter not closed"
  end
  local body = false
  for i = close + 1, #block do
    if block[i] ~= "" then
      body = true
    end
  end
  if not body then
    return "no body line"
  end
  if not block[close - 1]:match("^title: ") then
    return "title line missing before the closing ---"
  end
  return nil
end

describe("8 posters x 200 posts into one channel, with a reader polling", function()
  local POSTERS, EACH = 8, 200
  local TOTAL = POSTERS * EACH
  local root, work, chan, rc

  lazy_setup(function()
    root = F.new_root()
    work = F.tmpdir()
    chan = root .. "/c"
    F.init(root, "c")
    local script = [[
W=$1
: >"$W/peek.out"; : >"$W/read.out"; : >"$W/reader.err"; : >"$W/reader.rc"
( n=0
  while [ ! -e "$W/done" ]; do
    n=$((n + 1))
    "$A" peek c -n 5 >>"$W/peek.out" 2>>"$W/reader.err" || echo "peek $?" >>"$W/reader.rc"
    echo "@@END" >>"$W/peek.out"
    "$A" read c --as zed >>"$W/read.out" 2>>"$W/reader.err" || echo "read $?" >>"$W/reader.rc"
  done
  "$A" read c --as zed >>"$W/read.out" 2>>"$W/reader.err" || echo "read $?" >>"$W/reader.rc"
  echo "$n" >"$W/reader.count" ) &
reader=$!
pids=
p=1
while [ $p -le ]] .. POSTERS .. [[ ]; do
  ( : >"$W/post.$p.out"; : >"$W/post.$p.err"
    j=1
    while [ $j -le ]] .. EACH .. [[ ]; do
      "$A" post c --from "p$p" --title "m$j" --body "body $p $j" >>"$W/post.$p.out" 2>>"$W/post.$p.err" \
        || echo "post $j: $?" >>"$W/post.$p.err"
      j=$((j + 1))
    done ) &
  pids="$pids $!"
  p=$((p + 1))
done
wait $pids
touch "$W/done"
wait $reader
]]
    rc = F.shell(script, { AGENT_CHAT_ROOT = root }, work)
  end)

  it("finishes every post successfully", function()
    assert.equal(0, rc)
    for p = 1, POSTERS do
      assert.equal("", F.read(work .. "/post." .. p .. ".err"), "poster " .. p)
      assert.equal(EACH, #posted_seqs(F.read(work .. "/post." .. p .. ".out")), "poster " .. p)
    end
  end)

  it("hands out seqs 1..1600 with no gap and no duplicate", function()
    local all = {}
    for p = 1, POSTERS do
      for _, n in ipairs(posted_seqs(F.read(work .. "/post." .. p .. ".out"))) do
        all[#all + 1] = n
      end
    end
    assert.same(range(TOTAL), sorted(all))
  end)

  it("leaves exactly one file per seq, each with the matching seq: line", function()
    assert.same(range(TOTAL), F.file_seqs(chan))
    local bad = {}
    for _, name in ipairs(H.ls(chan)) do
      local n = name:match("^(%d+)%-.*%.md$")
      if n then
        local text = F.read(chan .. "/" .. name)
        if not text:find("^%-%-%-\nseq: " .. tonumber(n) .. "\n") then
          bad[#bad + 1] = name
        end
      end
    end
    assert.same({}, bad)
  end)

  it("leaves no lock directory and no temp file behind", function()
    for _, name in ipairs(H.ls(chan)) do
      assert.is_true(name == "_meta.json" or name == ".seqhigh" or name == ".cursors"
        or name:match("^%d+%-.*%.md$") ~= nil, "unexpected file " .. F.show(name))
    end
    for _, name in ipairs(H.ls(chan .. "/.cursors")) do
      assert.equal("zed.txt", name)
    end
  end)

  it("ran the reader while the posters were posting", function()
    local n = tonumber(F.read(work .. "/reader.count"))
    assert.is_true(n ~= nil and n >= 5, "reader iterations: " .. tostring(n))
    assert.equal("", F.read(work .. "/reader.rc"))
    assert.equal("", F.read(work .. "/reader.err"))
  end)

  it("never shows the polling peek a partial or empty message", function()
    local out = F.read(work .. "/peek.out")
    local bad, seen = {}, 0
    for segment in out:gmatch("(.-)@@END\n") do
      local blocks = F.blocks(segment)
      if #blocks == 0 then
        if segment ~= "(channel 'c' is empty)\n" then
          bad[#bad + 1] = "neither messages nor the empty line: " .. F.show(segment)
        end
      end
      for _, b in ipairs(blocks) do
        seen = seen + 1
        local why = block_problem(b)
        if why then
          bad[#bad + 1] = why .. ": " .. F.show(table.concat(b, "\n"))
        end
      end
    end
    assert.is_true(seen > 0, "the reader saw no message at all")
    assert.same({}, bad)
  end)

  it("shows the cursor-moving reader every message exactly once, whole and in order", function()
    local out = F.read(work .. "/read.out")
    local bad = {}
    for _, b in ipairs(F.blocks(out)) do
      local why = block_problem(b)
      if why then
        bad[#bad + 1] = why .. ": " .. F.show(table.concat(b, "\n"))
      end
    end
    assert.same({}, bad)
    assert.same(range(TOTAL), F.seqs(out))
  end)
end)

describe("a wait loop against a steady poster", function()
  local N = 200
  local root, work, chan, rc

  lazy_setup(function()
    root = F.new_root()
    work = F.tmpdir()
    chan = root .. "/w"
    F.init(root, "w")
    -- One process posts N messages to bob and, after every 5th, one to
    -- carol (irrelevant to bob, but it moves his cursor).
    F.write(work .. "/poster.lua", [[
local ac = require "agentchat"
local ch = assert(ac.open():channel("w"))
for i = 1, ]] .. N .. [[ do
  assert(ch:post{ from = "alice", to = "bob", title = "m" .. i, body = "body " .. i })
  if i % 5 == 0 then
    assert(ch:post{ from = "alice", to = "carol", title = "c" .. i, body = "not for bob" })
  end
  if i % 4 == 0 then
    os.execute("sleep 0.01")
  end
end
]])
    rc = F.shell([[
W=$1
: >"$W/wait.out"; : >"$W/wait.err"; : >"$W/wait.rc"
"$A" run "$W/poster.lua" >"$W/poster.out" 2>"$W/poster.err" &
poster=$!
i=0
while [ "$(grep -c '^seq: ' "$W/wait.out")" -lt ]] .. N .. [[ ] && [ $i -lt 2000 ]; do
  i=$((i + 1))
  "$A" wait w --as bob --timeout 10 >>"$W/wait.out" 2>>"$W/wait.err"
  rc=$?
  echo "$rc" >>"$W/wait.rc"
  [ "$rc" -eq 0 ] || break
done
wait $poster
echo "$?" >"$W/poster.rc"
echo "$i" >"$W/iterations"
]], { AGENT_CHAT_ROOT = root }, work)
  end)

  local function bob_seqs()
    local out = {}
    for _, name in ipairs(H.ls(chan)) do
      local n = name:match("^(%d+)%-alice%-m%d+%.md$")
      if n then
        out[#out + 1] = tonumber(n)
      end
    end
    table.sort(out)
    return out
  end

  it("lets the poster finish", function()
    assert.equal(0, rc)
    assert.equal("0\n", F.read(work .. "/poster.rc"), F.read(work .. "/poster.err"))
    assert.equal(N, #bob_seqs())
  end)

  it("never fails or times out a wait", function()
    assert.equal("", F.read(work .. "/wait.err"))
    for _, line in ipairs(F.lines(F.read(work .. "/wait.rc"))) do
      assert.equal("0", line)
    end
    local iterations = tonumber(F.read(work .. "/iterations"))
    assert.is_true(iterations > 1, "wait ran only " .. tostring(iterations) .. " time(s)")
  end)

  it("prints every message for bob exactly once and in order, and nothing else", function()
    local out = F.read(work .. "/wait.out")
    assert.same(bob_seqs(), F.seqs(out))
    assert.falsy(out:find("not for bob", 1, true))
    for _, b in ipairs(F.blocks(out)) do
      assert.is_nil(block_problem(b), F.show(table.concat(b, "\n")))
    end
  end)
end)

describe("seq allocation after deletions", function()
  it("never reuses a seq after message files are deleted", function()
    local root = F.new_root()
    F.init(root, "d")
    for i = 1, 5 do
      assert.equal(i, F.post(root, "d", "a", "m" .. i, "x"))
    end
    os.remove(root .. "/d/0005-a-m5.md")
    assert.equal(6, F.post(root, "d", "a", "m6", "x"))
    assert(os.execute("rm -f " .. F.sh(root .. "/d") .. "/0*.md"))
    assert.same({}, F.file_seqs(root .. "/d"))
    assert.equal(7, F.post(root, "d", "a", "m7", "x"))
    assert.same({ 7 }, F.file_seqs(root .. "/d"))
  end)

  it("still counts hand-made files above the high-water mark", function()
    local root = F.new_root()
    F.init(root, "d")
    assert.equal(1, F.post(root, "d", "a", "one", "x"))
    F.write(root .. "/d/12-short.md", "hand made\n")
    assert.equal(13, F.post(root, "d", "a", "two", "x"))
  end)

  it("never reuses a seq while another process deletes files during the posts", function()
    local root = F.new_root()
    local work = F.tmpdir()
    F.init(root, "d")
    local POSTERS, EACH = 4, 100
    local rc = F.shell([[
W=$1; R=$2
: >"$W/del.count"
( n=0
  while [ ! -e "$W/done" ]; do
    rm -f "$R"/d/0*.md
    n=$((n + 1))
  done
  echo "$n" >"$W/del.count" ) &
deleter=$!
pids=
p=1
while [ $p -le ]] .. POSTERS .. [[ ]; do
  ( j=1
    while [ $j -le ]] .. EACH .. [[ ]; do
      "$A" post d --from "p$p" --title "m$j" --body x >>"$W/post.$p.out" 2>>"$W/post.$p.err" \
        || echo "post $j: $?" >>"$W/post.$p.err"
      j=$((j + 1))
    done ) &
  pids="$pids $!"
  p=$((p + 1))
done
wait $pids
touch "$W/done"
wait $deleter
]], { AGENT_CHAT_ROOT = root }, work, root)
    assert.equal(0, rc)
    local all = {}
    for p = 1, POSTERS do
      assert.equal("", F.read(work .. "/post." .. p .. ".err") or "", "poster " .. p)
      for _, n in ipairs(posted_seqs(F.read(work .. "/post." .. p .. ".out"))) do
        all[#all + 1] = n
      end
    end
    assert.is_true(tonumber(F.read(work .. "/del.count")) > 10, "the deleter barely ran")
    assert.same(range(POSTERS * EACH), sorted(all))
    assert.equal(POSTERS * EACH + 1, F.post(root, "d", "a", "after", "x"))
  end)
end)

describe("the _seq.lock directory", function()
  it("makes a poster wait while another process holds it", function()
    local root = F.new_root()
    local work = F.tmpdir()
    F.init(root, "l")
    local t0 = F.now()
    local rc = F.shell([[
W=$1; R=$2
mkdir "$R/l/_seq.lock"
"$A" post l --from a --title held --body x >"$W/out" 2>"$W/err" &
pid=$!
sleep 1
[ -e "$W/out" ] && [ ! -s "$W/out" ] && echo waiting >"$W/state"
rmdir "$R/l/_seq.lock"
wait $pid
echo $? >"$W/rc"
]], { AGENT_CHAT_ROOT = root }, work, root)
    local took = F.now() - t0
    assert.equal(0, rc)
    assert.equal("waiting\n", F.read(work .. "/state"), "the post did not wait for the lock")
    assert.equal("0\n", F.read(work .. "/rc"), F.read(work .. "/err"))
    assert.equal("posted #1 -> l/0001-a-held.md\n", F.read(work .. "/out"))
    assert.is_true(took < 9, "took " .. took .. " s")
  end)

  it("is stolen when stale, and concurrent thieves still never share a seq", function()
    local root = F.new_root()
    local work = F.tmpdir()
    F.init(root, "l")
    local POSTERS, EACH = 4, 25
    local rc = F.shell([[
W=$1; R=$2
mkdir "$R/l/_seq.lock"
touch -d '90 seconds ago' "$R/l/_seq.lock"
pids=
p=1
while [ $p -le ]] .. POSTERS .. [[ ]; do
  ( j=1
    while [ $j -le ]] .. EACH .. [[ ]; do
      "$A" post l --from "p$p" --title "m$j" --body x >>"$W/post.$p.out" 2>>"$W/post.$p.err" \
        || echo "post $j: $?" >>"$W/post.$p.err"
      j=$((j + 1))
    done ) &
  pids="$pids $!"
  p=$((p + 1))
done
wait $pids
]], { AGENT_CHAT_ROOT = root }, work, root)
    assert.equal(0, rc)
    local all = {}
    for p = 1, POSTERS do
      assert.equal("", F.read(work .. "/post." .. p .. ".err") or "", "poster " .. p)
      for _, n in ipairs(posted_seqs(F.read(work .. "/post." .. p .. ".out"))) do
        all[#all + 1] = n
      end
    end
    assert.same(range(POSTERS * EACH), sorted(all))
    assert.same(range(POSTERS * EACH), F.file_seqs(root .. "/l"))
    assert.is_nil(F.snapshot(root)["l/_seq.lock"], "the lock directory was left behind")
  end)
end)
