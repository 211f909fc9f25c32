-- Runaway templates (issue 14.6, 14.10). Before: `return string.rep("",
-- 2^53)` never ended and ignored SIGINT and SIGTERM (string.rep was charged
-- for the bytes it copies, none); a backtracking pattern,
-- string.find(("a"):rep(1e5), ("a*"):rep(30) .. "b"), ran 985 s inside
-- the C matcher, where neither the budget nor the clock was checked; one
-- 190-operand concatenation of 16 MiB strings peaked at 3.13 GB before
-- TEMPLATE_MEMORY_EXCEEDED. Now the pattern functions and string.rep meter
-- their work (src/l_sandbox.c), the time limit is wall-clock and checked by
-- that meter too, SIGINT/SIGTERM are, and the allocator enforces the heap
-- cap.
--
-- Each case runs under a watchdog (60 s): a template that does not stop is
-- killed and the case fails on the exit status, not on a timing. The
-- figures (seconds to stop, peak RSS) go to stderr.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local RUNAWAY = {
  rep = 'return string.rep("", 2^53)',
  backtrack = 'return tostring(string.find(("a"):rep(1e5), ("a*"):rep(30) .. "b"))',
}
local CONCAT = 'local s = ("x"):rep(16 * 2^20) return ' .. string.rep("s", 190, " .. ")
local CAP = 256 * 1024 * 1024

--- Run `agent-chat ARGS` in the background with AGENT_CHAT_ROOT=root;
--- after `delay` seconds send `signal` (if any); a watchdog kills it after
--- 60 s. Returns {code, stdout, stderr} and the seconds it took.
local function run(root, args, signal, delay)
  return F.background(root, args, signal and ("kill -" .. signal .. " $pid") or ":", delay or 0)
end

local function fixture()
  local root = F.new_root()
  F.init(root, "dev")
  F.post(root, "dev", "alice", "hello", "x")
  local dir = F.tmpdir()
  for name, src in pairs(RUNAWAY) do
    F.write(dir .. "/" .. name .. ".lua", src)
  end
  F.write(dir .. "/concat.lua", CONCAT)
  -- Renders a template through the API with a budget too large to matter,
  -- so only the time limit, a signal or the heap cap can stop it; prints
  -- the outcome's code, the seconds it ran and the process's peak RSS.
  F.write(dir .. "/render.lua", [[
local ac = require "agentchat"
local sys = require "agentchat.sys"
local root, file = ...
local ch = assert(ac.open(root):channel("dev"))
local src = assert(io.open(file)):read("a")
local t0 = sys.monotonic()
local ok, text, msg, code = pcall(ch.render_state, ch, { template = src, budget = 1e15 })
if not ok then
  code, msg = type(text) == "table" and text.code or "RAISED", tostring(type(text) == "table" and text.message or text)
end
local hwm = (io.open("/proc/self/status"):read("a"):match("VmHWM:%s*(%d+) kB"))
io.stdout:write(string.format("%s\t%.2f\t%s\t%s\n", tostring(code), sys.monotonic() - t0, hwm, tostring(msg)))
io.stdout:flush()
]])
  return root, dir
end

--- The outcome line of render.lua: code, seconds, peak RSS in KiB, message.
local function outcome(r)
  local code, secs, kb, msg = (r.stdout or ""):match("^(%S+)\t(%S+)\t(%S+)\t([^\n]*)")
  return code, tonumber(secs), tonumber(kb), msg
end

describe("runaway templates (issue 14.6)", function()
  for _, name in ipairs({ "rep", "backtrack" }) do
    it(name .. ": state --template stops it with TEMPLATE_BUDGET_EXCEEDED", function()
      local root, dir = fixture()
      local r, took = run(root, "state dev --template " .. F.sh(dir .. "/" .. name .. ".lua"))
      assert.equal(1, r.code, F.describe(r))
      assert.is_nil(F.error_line(r.stderr), r.stderr)
      assert.truthy(r.stderr:find("^agent%-chat: TEMPLATE_BUDGET_EXCEEDED: .*template exceeded its instruction "
        .. "budget %(50000000 instructions%)\n$"), r.stderr)
      io.stderr:write(string.format("# %s via the CLI: stopped by the budget after %.2f s\n", name, took))
    end)

    it(name .. ": with the budget out of the way, the 5 s time limit stops it", function()
      local root, dir = fixture()
      local r, took = run(root, "run " .. F.sh(dir .. "/render.lua") .. " " .. F.sh(root) .. " "
        .. F.sh(dir .. "/" .. name .. ".lua"))
      assert.equal(0, r.code, F.describe(r))
      local code, secs, _, msg = outcome(r)
      assert.equal("TEMPLATE_BUDGET_EXCEEDED", code, r.stdout)
      assert.equal("template exceeded its time limit (5 s)", msg)
      io.stderr:write(string.format("# %s: stopped by the 5 s time limit after %.2f s (process %.2f s)\n",
        name, secs, took))
    end)

    for _, sig in ipairs({ "INT", "TERM" }) do
      it(name .. ": SIG" .. sig .. " stops it", function()
        local root, dir = fixture()
        local r, took = run(root, "run " .. F.sh(dir .. "/render.lua") .. " " .. F.sh(root) .. " "
          .. F.sh(dir .. "/" .. name .. ".lua"), sig, 1)
        -- SIGTERM is re-raised once the command has cleaned up (143).
        assert.equal(sig == "INT" and 0 or 143, r.code, F.describe(r))
        local code, secs = outcome(r)
        -- Not the time limit's TEMPLATE_BUDGET_EXCEEDED: the signal did it.
        assert.equal("INTERRUPTED", code, r.stdout)
        io.stderr:write(string.format("# %s: SIG%s after 1 s stopped it after %.2f s (process %.2f s)\n",
          name, sig, secs, took))
      end)
    end
  end
end)

describe("the heap cap (issue 14.10)", function()
  it("a 190-operand concatenation of 16 MiB strings stops below twice the cap", function()
    local root, dir = fixture()
    local r = run(root, "state dev --template " .. F.sh(dir .. "/concat.lua"))
    assert.equal(1, r.code, F.describe(r))
    assert.equal("agent-chat: TEMPLATE_MEMORY_EXCEEDED: " .. dir .. "/concat.lua: template exceeded its memory "
      .. "limit (268435456 bytes)\n", r.stderr)
    r = run(root, "run " .. F.sh(dir .. "/render.lua") .. " " .. F.sh(root) .. " " .. F.sh(dir .. "/concat.lua"))
    assert.equal(0, r.code, F.describe(r))
    local code, _, kb = outcome(r)
    assert.equal("TEMPLATE_MEMORY_EXCEEDED", code, r.stdout)
    io.stderr:write(string.format("# concatenation: peak RSS %.1f MiB (cap %d MiB)\n", kb / 1024, CAP >> 20))
    assert.is_true(kb * 1024 < 2 * CAP, "peak RSS " .. kb .. " KiB")
  end)
end)
