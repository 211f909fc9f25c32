-- Functional specs for `agent-chat wait` (docs/format.md 2.1, 4 "wait", 5.2):
-- the timeout line and exit code, immediate return, wake-up by another
-- process, signals, polling and where the cursor ends up.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local ac = F.run_checked

local function timed(fn)
  local t0 = F.now()
  local r = fn()
  return r, F.now() - t0
end

local function cursor(root, ch, agent)
  return F.read(root .. "/" .. ch .. "/.cursors/" .. agent .. ".txt")
end

describe("wait timeout", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "w")
  end)

  -- { --timeout value, how Python prints the float }
  local CASES = {
    { "1", "1.0" },
    { "0.25", "0.25" },
    { "0", "0.0" },
    { "0.0", "0.0" },
    { "2.50e-1", "0.25" },
    { "1e-3", "0.001" },
    { ".5", "0.5" },
  }

  for _, case in ipairs(CASES) do
    it("exits 2 with '(timeout after " .. case[2] .. "s: ...)' for --timeout " .. case[1], function()
      local r = ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", case[1] })
      assert.equal(2, r.code, F.describe(r))
      assert.equal("", r.stdout)
      assert.equal("(timeout after " .. case[2] .. "s: no new messages for bob in 'w')\n", r.stderr)
    end)
  end

  it("really waits for the timeout before giving up", function()
    local r, took = timed(function()
      return ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "1" })
    end)
    assert.equal(2, r.code, F.describe(r))
    assert.is_true(took >= 0.9, "gave up after " .. took .. " s")
  end)

  it("times out at once with --timeout 0 and nothing unread", function()
    local r, took = timed(function()
      return ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "0", "--interval", "3600" })
    end)
    assert.equal(2, r.code, F.describe(r))
    assert.is_true(took < 60, "took " .. took .. " s")
  end)

  it("does not count messages for others, own messages or read ones as new", function()
    F.post(root, "w", "alice", "for carol", "x", "--to", "carol")
    F.post(root, "w", "bob", "own", "x")
    F.post(root, "w", "alice", "old", "x", "--to", "bob")
    ac({ "--root", root, "read", "w", "--as", "bob" })
    local r = ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "0.25" })
    assert.equal(2, r.code, F.describe(r))
    assert.equal("(timeout after 0.25s: no new messages for bob in 'w')\n", r.stderr)
  end)

  it("leaves the channel as it was on timeout", function()
    local before = F.snapshot(root)
    ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "0" })
    local after = F.snapshot(root)
    assert.same({}, F.diff(before, after, function(p)
      return p:match("^w/%.cursors") ~= nil
    end))
  end)
end)

describe("wait with unread messages", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "w")
  end)

  it("returns at once with what is already unread", function()
    F.post(root, "w", "alice", "hello", "hi bob", "--to", "bob")
    local r, took = timed(function()
      return ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "120", "--interval", "3600" })
    end)
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    assert.same({ 1 }, F.seqs(r.stdout))
    assert.truthy(r.stdout:find("\nhi bob\n\n$"), F.describe(r))
    assert.is_true(took < 60, "took " .. took .. " s")
    assert.equal("1", cursor(root, "w", "bob"))
  end)

  it("prints like read: a rule, the file text right-stripped, an empty line", function()
    local seq = F.post(root, "w", "alice", "hello", "body line\n\n  \n", "--to", "bob")
    local file = string.format("%04d-alice-hello.md", seq)
    local text = F.read(root .. "/w/" .. file)
    local r = ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "5" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(F.RULE .. "\n" .. text:gsub("%s+$", "") .. "\n\n", r.stdout)
  end)

  it("prints unread messages with --timeout 0", function()
    F.post(root, "w", "alice", "hello", "x")
    local r = ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "0" })
    assert.equal(0, r.code, F.describe(r))
    assert.same({ 1 }, F.seqs(r.stdout))
  end)

  it("moves the cursor to the highest seq of the scan, relevant or not", function()
    F.post(root, "w", "alice", "for bob", "x", "--to", "bob")
    F.post(root, "w", "alice", "for carol", "x", "--to", "carol")
    F.post(root, "w", "bob", "own", "x")
    local r = ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "5" })
    assert.equal(0, r.code, F.describe(r))
    assert.same({ 1 }, F.seqs(r.stdout))
    assert.equal("3", cursor(root, "w", "bob"))
    r = ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "0" })
    assert.equal(2, r.code, F.describe(r))
  end)

  it("keeps a cursor per name: names with the same slug do not share one (docs/format.md)", function()
    F.post(root, "w", "alice", "one", "x")
    local r = ac({ "--root", root, "wait", "w", "--as", "Bob", "--timeout", "5" })
    assert.equal(0, r.code, F.describe(r))
    assert.is_nil(cursor(root, "w", "bob"))
    r = ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "0" })
    assert.equal(0, r.code, F.describe(r))
    assert.same({ 1 }, F.seqs(r.stdout))
    assert.equal("1", cursor(root, "w", "bob"))
  end)
end)

describe("wait woken by another process", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "w")
  end)

  --- Start `wait` in the background, run `between` (shell) after `delay`
  --- seconds, then collect the waiter. Returns {code, stdout, stderr}, took.
  local function waiter(wait_args, between, delay)
    return F.background(root, "wait w " .. wait_args, between, delay)
  end

  it("wakes up on a post well before the timeout", function()
    local r, took = waiter("--as bob --timeout 20",
      [["$A" post w --from alice --to bob --title wake --body "wake up" >/dev/null]], 0.5)
    assert.equal(0, r.code, F.show(r.stderr))
    assert.equal("", r.stderr)
    assert.same({ 1 }, F.seqs(r.stdout))
    assert.truthy(r.stdout:find("wake up", 1, true))
    assert.is_true(took < 10, "took " .. took .. " s")
    assert.equal("1", cursor(root, "w", "bob"))
  end)

  it("wakes up sooner than the default 5 s polling interval", function()
    local r, took = waiter("--as bob --timeout 20",
      [["$A" post w --from alice --to bob --title wake --body x >/dev/null]], 0.5)
    assert.equal(0, r.code, F.show(r.stderr))
    assert.is_true(took < 4.5, "took " .. took .. " s: woken by polling, not by a change notification?")
  end)

  it("still works with a short --interval", function()
    local r, took = waiter("--as bob --timeout 20 --interval 0.2",
      [["$A" post w --from alice --title poll --body "polled" >/dev/null]], 0.5)
    assert.equal(0, r.code, F.show(r.stderr))
    assert.same({ 1 }, F.seqs(r.stdout))
    assert.is_true(took < 10, "took " .. took .. " s")
  end)

  it("keeps waiting through messages for others and prints only its own", function()
    local r = waiter("--as bob --timeout 20", [[
"$A" post w --from alice --to carol --title other --body "for carol" >/dev/null
"$A" post w --from bob --title own --body "from bob" >/dev/null
sleep 0.5
"$A" post w --from alice --to bob --title mine --body "for bob" >/dev/null
]], 0.3)
    assert.equal(0, r.code, F.show(r.stderr))
    assert.same({ 3 }, F.seqs(r.stdout))
    assert.falsy(r.stdout:find("for carol", 1, true))
    assert.equal("3", cursor(root, "w", "bob"))
  end)

  it("exits 130 with 'agent-chat: cancelled by user' on SIGINT and leaves nothing behind", function()
    local before = F.snapshot(root)
    local r, took = waiter("--as bob --timeout 20", [[kill -INT $pid]], 1)
    assert.equal(130, r.code, F.show(r.stderr))
    assert.equal("", r.stdout)
    assert.equal("agent-chat: cancelled by user\n", r.stderr)
    assert.is_true(took < 10, "took " .. took .. " s")
    assert.same({}, F.diff(before, F.snapshot(root)))
  end)

  it("ends on SIGTERM and leaves no temp file or _seq.lock", function()
    local before = F.snapshot(root)
    local r, took = waiter("--as bob --timeout 20", [[kill -TERM $pid]], 1)
    assert.not_equal(0, r.code)
    assert.not_equal(137, r.code, "had to be killed with SIGKILL")
    assert.equal("", r.stdout)
    assert.is_nil(F.crashed(r.stderr), F.show(r.stderr))
    assert.is_true(took < 10, "took " .. took .. " s")
    assert.same({}, F.diff(before, F.snapshot(root)))
  end)

  it("leaves the channel usable after SIGTERM", function()
    local r = waiter("--as bob --timeout 20", [[kill -TERM $pid]], 0.5)
    assert.not_equal(0, r.code)
    assert.equal(1, F.post(root, "w", "alice", "after", "x", "--to", "bob"))
    local w = ac({ "--root", root, "wait", "w", "--as", "bob", "--timeout", "5" })
    assert.equal(0, w.code, F.describe(w))
    assert.same({ 1 }, F.seqs(w.stdout))
  end)
end)
