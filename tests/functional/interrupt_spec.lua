-- Ctrl-C in the Lua API (issue 13, item 6; docs/lua-api.md): a blocking
-- call interrupted by SIGINT returns nil, "cancelled by user", "INTERRUPTED"
-- (it used to raise a bare table the moment it returned, and `run` exited 1
-- with a traceback), and a script that lets the interrupt propagate makes
-- `run` print "agent-chat: cancelled by user" and exit 130.
--
-- Each case is a script run with `agent-chat run`: it prints "ready", makes
-- one blocking call, and prints what the call returned. The harness waits
-- for "ready", lets the call block, and sends SIGINT.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

-- Shared set-up of every script: `ch` is channel c, where alice posted #1
-- to bob; `ready()` says the call is about to block.
local PRELUDE = [[
local ac = require "agentchat"
local sys = require "agentchat.sys"
local root = ac.open()
local ch = assert(root:channel("c"))
local function ready() io.stdout:write("ready\n"); io.stdout:flush() end
local function show(...) print(select("#", ...), ...) end
]]

local RETURNED = "4\tnil\tcancelled by user\tINTERRUPTED\t130\n"

-- Every blocking call of the API, and how to make it block: `before` is
-- shell run first ($R is the root), e.g. a helper holding a lock.
local CASES = {
  { "sys.sleep", "show(sys.sleep(60))" },
  { "ch:wait", "show(ch:wait{ as = 'carol', timeout = 60 })" },
  { "ch:wait, only messages", "show(ch:wait{ as = 'bob', kinds = { 'event' }, timeout = 60 })" },
  { "h:wait", "show(ch:handle():wait{ as = 'carol', timeout = 60 })" },
  { "ch:wait_receipts", "show(ch:wait_receipts(1, { state = 'acked', timeout = 60 }))" },
  { "receipts.wait", "show(require('agentchat.receipts').wait(ch:handle(), 1, { 'bob' }, 'read', 60))" },
  { "ch:request", "local res, msg, code, exit = ch:request{ from = 'alice', to = 'bob', "
      .. "type = 'shutdown_request', timeout = 60 } show(res, msg, code, exit)" },
  { "ch:await_response", "local r = assert(ch:request{ from = 'alice', to = 'bob', type = 'shutdown_request', "
      .. "wait = false }) show(ch:await_response{ as = 'alice', request_id = r.request_id, timeout = 60 })" },
  { "protocols.await_one", "local r = assert(ch:request{ from = 'alice', to = 'bob', type = 'shutdown_request', "
      .. "wait = false }) show(require('agentchat.protocols').await_one(ch, { as = 'alice', "
      .. "request_id = r.request_id, timeout = 60 }))" },
  { "h:exclusive(true) while another process holds it", "show(ch:handle():exclusive(true))",
    helper = "local l = assert(ch:handle():exclusive(false))" },
  { "ch:read while another reader as bob holds the cursor", "show(ch:read{ as = 'bob' })",
    helper = "local l = assert(ch:handle():cursor_lock('bob'))" },
  { "ch:post while the seq lock is held", "show(ch:post{ from = 'alice', title = 't', body = 'b' })",
    before = [[mkdir "$R/c/_seq.lock"]] },
}

-- Run `body` (after PRELUDE) as a script; the "ready" it prints starts a
-- 0.5 s timer, then SIGINT. case.helper: a script holding a lock meanwhile;
-- case.before: shell run first. Returns {code, stdout, stderr}.
local function interrupted(root, body, case)
  case = case or {}
  local work = F.tmpdir()
  local script = PRELUDE .. "ready() " .. body .. "\nprint('done')\n"
  F.write(work .. "/s.lua", script)
  if case.helper then
    F.write(work .. "/helper.lua", PRELUDE .. case.helper .. "\nready()\nsys.sleep(60)\n")
  end
  local rc = F.shell([[
W=$1; R=$2
]] .. (case.before or "") .. [[

hp=
if [ -f "$W/helper.lua" ]; then
  "$A" run "$W/helper.lua" >"$W/helper.out" 2>&1 &
  hp=$!
  n=0; while ! grep -q ready "$W/helper.out" 2>/dev/null && [ $n -lt 400 ]; do sleep 0.05; n=$((n + 1)); done
fi
"$A" run "$W/s.lua" >"$W/out" 2>"$W/err" &
p=$!
n=0; while ! grep -q ready "$W/out" 2>/dev/null && [ $n -lt 400 ]; do sleep 0.05; n=$((n + 1)); done
sleep 0.5
kill -INT $p
wait $p
echo $? >"$W/rc"
[ -n "$hp" ] && kill $hp && wait $hp
exit 0
]], { AGENT_CHAT_ROOT = root }, work, root)
  assert.equal(0, rc)
  return { code = tonumber(F.read(work .. "/rc")), stdout = F.read(work .. "/out"), stderr = F.read(work .. "/err") }
end

describe("SIGINT during a blocking API call", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c", "--members", "alice,bob")
    F.post(root, "c", "alice", "hi", "x", "--to", "bob")
  end)

  for _, case in ipairs(CASES) do
    it(case[1] .. " returns nil, 'cancelled by user', 'INTERRUPTED' and the script goes on", function()
      local r = interrupted(root, case[2], case)
      assert.equal(0, r.code, r.stderr)
      assert.equal("ready\n" .. RETURNED .. "done\n", r.stdout)
      assert.equal("", r.stderr)
    end)
  end

  it("watch.run returns 130, 'signal'", function()
    local r = interrupted(root, "show(require('agentchat.watch').run(ch, { as = 'carol', "
      .. "handlers = { message = function() end } }))")
    assert.equal(0, r.code, r.stderr)
    assert.equal("ready\n2\t130\tsignal\ndone\n", r.stdout)
  end)
end)

describe("an interrupt the script lets propagate", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
  end)

  for _, case in ipairs({
    { "assert() on the returned failure", "assert(ch:wait{ as = 'bob', timeout = 60 })" },
    { "assert() on sys.sleep", "assert(sys.sleep(60))" },
    { "a busy Lua loop (the error the host raises)", "while true do end" },
    { "error() of the returned code", "local _, msg, code = sys.sleep(60) error(code .. ': ' .. msg)" },
  }) do
    it(case[1] .. ": run prints one line and exits 130", function()
      local r = interrupted(root, case[2])
      assert.equal(130, r.code, r.stderr)
      assert.equal("ready\n", r.stdout)
      assert.equal("agent-chat: cancelled by user\n", r.stderr)
    end)
  end

  it("the error the host raises is an agentchat error: it prints as INTERRUPTED: cancelled by user", function()
    local r = interrupted(root, [[
      local ok, e = pcall(function() while true do end end)
      print(ok, tostring(e), require("agentchat.errors").is_error(e), e.code, e.exit)]])
    assert.equal(0, r.code, r.stderr)
    assert.equal("ready\nfalse\tINTERRUPTED: cancelled by user\ttrue\tINTERRUPTED\t130\ndone\n", r.stdout)
  end)
end)
