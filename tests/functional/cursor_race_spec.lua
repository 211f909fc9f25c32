-- A cursor never moves backward and a message is never delivered twice when
-- several processes read as one agent at the same time (issue 14, item 9:
-- before the per-agent cursor lock, 8 readers and 2 posters gave 12 backward
-- moves by `read`, 6 by `wait` and 13 by `inbox`, each a duplicate delivery).
--
-- For each of read, wait and inbox: 2 posters post POSTS messages each while
-- 8 processes read as `r` in a loop, and a monitor samples r's cursor file
-- as fast as it can. Then:
--   * every message was delivered exactly once over all 8 readers (none
--     twice: no duplicate delivery; none missing: nothing lost);
--   * the monitor never saw the cursor go down (a sample lower than the one
--     before it), and the cursor ends at the last seq;
--   * no reader failed.
-- ROUNDS (env CURSOR_RACE_ROUNDS, default 1; `make torture` runs more)
-- repeats each race in a fresh channel.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local READERS, POSTS = 8, 40
local ROUNDS = tonumber(os.getenv("CURSOR_RACE_ROUNDS") or "") or 1

-- The reader loop of each mode ($W is the work directory, $i the reader).
local LOOPS = {
  read = [["$A" read c --as r]],
  wait = [["$A" wait c --as r --timeout 0.3 --interval 0.05]],
  inbox = [["$A" inbox --as r --channels c]],
}

local SCRIPT = [[
W=$1
mkdir -p "$W/out"
( while [ ! -e "$W/stop" ]; do
    cat c/.cursors/r.txt 2>/dev/null; echo
  done >"$W/samples" ) &
mon=$!
i=1
readers=
while [ $i -le ]] .. READERS .. [[ ]; do
  ( while [ ! -e "$W/stop" ]; do
      @LOOP@ >>"$W/out/$i" 2>>"$W/err.$i"
      rc=$?
      [ $rc -eq 0 ] || [ $rc -eq 2 ] || echo "exit $rc" >>"$W/err.$i"
    done ) &
  readers="$readers $!"
  i=$((i + 1))
done
posters=
for p in a b; do
  ( j=1
    while [ $j -le ]] .. POSTS .. [[ ]; do
      "$A" post c --from "$p" --title "m$j" --body "$p $j" >/dev/null 2>>"$W/post.err" \
        || echo "post failed" >>"$W/post.err"
      j=$((j + 1))
    done ) &
  posters="$posters $!"
done
wait $posters
# Let the readers drain the channel: the cursor reaches the last seq.
n=0
while [ "$(cat c/.cursors/r.txt 2>/dev/null)" != "]] .. 2 * POSTS .. [[" ] && [ $n -lt 600 ]; do
  sleep 0.05; n=$((n + 1))
done
sleep 0.3
touch "$W/stop"
wait $readers
wait $mon
]]

-- Seqs printed by the readers: "seq: N" frontmatter lines.
local function delivered(work)
  local count = {}
  for i = 1, READERS do
    for n in (F.read(work .. "/out/" .. i) or ""):gmatch("\nseq: (%d+)\n") do
      n = tonumber(n)
      count[n] = (count[n] or 0) + 1
    end
  end
  return count
end

local function backward_moves(work)
  local moves, last = {}, nil
  for line in (F.read(work .. "/samples") or ""):gmatch("([^\n]*)\n") do
    local v = tonumber(line)
    if v then
      if last and v < last then
        moves[#moves + 1] = last .. " -> " .. v
      end
      last = v
    end
  end
  return moves, last
end

local function race(mode)
  local root = F.new_root()
  F.init(root, "c")
  local work = F.tmpdir()
  local rc = F.shell("cd " .. F.sh(root) .. " || exit 1\n" .. SCRIPT:gsub("@LOOP@", LOOPS[mode]),
    { AGENT_CHAT_ROOT = root }, work)
  assert.equal(0, rc)
  local problems = {}
  if (F.read(work .. "/post.err") or "") ~= "" then
    problems[#problems + 1] = "a post failed: " .. F.show(F.read(work .. "/post.err"))
  end
  for i = 1, READERS do
    local err = F.read(work .. "/err." .. i) or ""
    -- wait's timeout line is expected; anything else is a failure
    err = err:gsub("%(timeout after [%d.]+s: no new messages for r in 'c'%)\n", "")
    if err ~= "" then
      problems[#problems + 1] = "reader " .. i .. ": " .. F.show(err)
    end
  end
  local count = delivered(work)
  local dup, missing = {}, {}
  for seq = 1, 2 * POSTS do
    if not count[seq] then
      missing[#missing + 1] = seq
    elseif count[seq] > 1 then
      dup[#dup + 1] = seq .. " (x" .. count[seq] .. ")"
    end
  end
  if #dup > 0 then
    problems[#problems + 1] = #dup .. " messages delivered more than once: " .. table.concat(dup, ", ")
  end
  if #missing > 0 then
    problems[#problems + 1] = #missing .. " messages never delivered: " .. table.concat(missing, ", ")
  end
  local moves, last = backward_moves(work)
  if #moves > 0 then
    problems[#problems + 1] = #moves .. " backward cursor moves seen: " .. table.concat(moves, ", ")
  end
  if last ~= 2 * POSTS then
    problems[#problems + 1] = "the cursor ended at " .. tostring(last) .. ", not " .. 2 * POSTS
  end
  return problems
end

describe("8 processes reading as one agent while 2 post", function()
  for _, mode in ipairs({ "read", "wait", "inbox" }) do
    it(mode .. ": no backward cursor move, every message delivered exactly once", function()
      for round = 1, ROUNDS do
        local problems = race(mode)
        assert.same({}, problems, mode .. " round " .. round .. ":\n" .. table.concat(problems, "\n"))
      end
    end)
  end
end)
