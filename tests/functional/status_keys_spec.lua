-- Functional specs for latest-wins status keys, `status set|get|watch` and
-- their rows in `team` (docs/status-keys.md): the current value per (agent,
-- key) is the set with the highest seq, also when many processes set it at
-- once; a ttl shows as expired; `status watch` prints sets as they come;
-- the history stays in the channel as messages that the event reader (ours
-- and the Python tool's rule: every `event.*` message is validated) skips;
-- bad input fails with one line and posts nothing.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local W = require "watchsupport"

local json = require "agentchat.json"

describe("status keys", function()
  local root

  local function run(...)
    return F.ac(root, { ... })
  end

  local function ok(...)
    return F.ok(root, { ... })
  end

  -- `status get dev [ARGS...] --json`, decoded (a key must come right after
  -- the channel: Python's argparse gives positionals out together).
  local function keys(...)
    local argv = { "status", "get", "dev", ... }
    argv[#argv + 1] = "--json"
    return json.loads(ok(table.unpack(argv)).stdout).keys
  end

  before_each(function()
    root = F.new_root()
    F.init(root, "dev", "--members", "alice,bob")
  end)

  it("sets and gets one current value per agent and key", function()
    local r = ok("status", "set", "dev", "build", "green", "--as", "alice")
    assert.equal("set build=green for alice in 'dev' (#1)\n", r.stdout)
    ok("status", "set", "dev", "build", "red", "--as", "bob", "--ttl", "3600")
    ok("status", "set", "dev", "phase", "tests", "--as", "alice")
    ok("status", "set", "dev", "build", "yellow", "--as", "alice")
    local list = keys()
    assert.same({ "alice build yellow 4", "alice phase tests 3", "bob build red 2" }, (function()
      local out = {}
      for i, e in ipairs(list) do
        out[i] = e.agent .. " " .. e.key .. " " .. e.value .. " " .. e.seq
      end
      return out
    end)())
    assert.equal(3600, list[3].ttl)
    assert.is_false(list[3].expired)
    assert.is_true(list[1].age >= 0)
    assert.equal(2, #keys("build"))
    assert.equal(1, #keys("build", "--agent", "bob"))
    r = ok("status", "get", "dev", "phase")
    assert.equal("AGENT", r.stdout:match("^(%S+)"))
    assert.truthy(r.stdout:find("\nalice  phase  tests  ", 1, true), F.show(r.stdout))
    assert.equal("(no status keys named nope in 'dev')\n", ok("status", "get", "dev", "nope").stdout)
  end)

  it("leaves the later write (by seq) when many processes set one key at once", function()
    -- 8 writers as alice and 4 as bob, all at once.
    local script = {}
    for i = 1, 8 do
      script[#script + 1] = string.format('"$A" status set dev k a%d --as alice >/dev/null &', i)
    end
    for i = 1, 4 do
      script[#script + 1] = string.format('"$A" status set dev k b%d --as bob >/dev/null &', i)
    end
    script[#script + 1] = "wait"
    assert.equal(0, F.shell(table.concat(script, "\n"), { AGENT_CHAT_ROOT = root }))
    -- The winner of each agent: the value of its status.set message with the highest seq.
    local best = {}
    for _, name in ipairs(H.ls(root .. "/dev")) do
      local seq = tonumber(name:match("^(%d+)%-.*%.md$"))
      if seq then
        local body = json.loads(F.read(root .. "/dev/" .. name):match("\n%-%-%-\n(.*)$"))
        if not best[body.agent] or best[body.agent].seq < seq then
          best[body.agent] = { seq = seq, value = body.value }
        end
      end
    end
    local list = keys("k")
    assert.equal(2, #list)
    assert.same({ "alice", best.alice.value, best.alice.seq }, { list[1].agent, list[1].value, list[1].seq })
    assert.same({ "bob", best.bob.value, best.bob.seq }, { list[2].agent, list[2].value, list[2].seq })
    -- Every reader agrees, the history is all there.
    assert.same(list, keys("k"))
    assert.equal(12, #F.file_seqs(root .. "/dev"))
  end)

  it("shows a value past its ttl as expired", function()
    ok("status", "set", "dev", "lease", "mine", "--as", "alice", "--ttl", "0.3")
    ok("status", "set", "dev", "other", "x", "--as", "alice", "--ttl", "3600")
    F.sleep(0.6)
    local list = keys()
    assert.same({ "lease", true }, { list[1].key, list[1].expired })
    assert.same({ "other", false }, { list[2].key, list[2].expired })
    local r = ok("status", "get", "dev", "lease")
    assert.truthy(r.stdout:find("0.3s  expired\n", 1, true), F.show(r.stdout))
  end)

  it("prints sets as they are posted with status watch", function()
    ok("status", "set", "dev", "old", "before", "--as", "alice")
    local job = W.spawn_command(root, "status", { "watch", "dev", "--count", "2", "--json", "--key", "build" })
    F.sleep(0.3)
    ok("status", "set", "dev", "other", "skipped", "--as", "alice")
    ok("status", "set", "dev", "build", "green", "--as", "alice")
    ok("status", "set", "dev", "build", "red", "--as", "bob")
    local r = job:finish(20)
    assert.equal(0, r.code, F.describe(r))
    local lines = F.lines(r.stdout)
    assert.equal(2, #lines, F.show(r.stdout))
    assert.same({ "alice", "green" }, { json.loads(lines[1]).agent, json.loads(lines[1]).value })
    assert.same({ "bob", "red" }, { json.loads(lines[2]).agent, json.loads(lines[2]).value })
    r = ok("status", "watch", "dev", "--timeout", "0")
    assert.equal("", r.stdout)
  end)

  it("uses no CPU while status watch waits", function()
    local job = W.spawn_command(root, "status", { "watch", "dev", "--count", "1" })
    F.sleep(0.3)
    local before = F.cpu_ticks(job.pid)
    F.sleep(1.5)
    local after = F.cpu_ticks(job.pid)
    ok("status", "set", "dev", "build", "green", "--as", "alice")
    local r = job:finish(20)
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find(" alice build=green\n$"), F.show(r.stdout))
    if not before or not after then
      pending("no /proc/PID/stat here")
      return
    end
    assert.is_true(after - before <= 2, "used " .. (after - before) .. " clock ticks in 1.5 s of waiting")
  end)

  it("lists each member's keys in team", function()
    ok("status", "set", "dev", "build", "green", "--as", "alice")
    local r = ok("team", "dev")
    assert.truthy(r.stdout:find("status keys:\n  NAME   KEY    VALUE  AGE  STATE\n  alice  build  green  ", 1, true),
      F.show(r.stdout))
    local team = json.loads(ok("team", "dev", "--json").stdout)
    assert.equal("green", team.members[1].status_keys[1].value)
    assert.is_nil(team.members[2].status_keys)
  end)

  it("keeps the channel valid for the event reader and fsck", function()
    ok("event", "post", "dev", "--from", "bob", "--type", "status", "--harness", "h", "--status", "busy")
    ok("status", "set", "dev", "build", "green", "--as", "alice")
    local r = ok("event", "read", "dev")
    assert.equal(1, #F.lines(r.stdout))
    ok("fsck", "dev")
    -- The set is an ordinary broadcast message: read shows it.
    r = ok("read", "dev", "--as", "carol", "--kind", "event")
    assert.truthy(r.stdout:find("status: status.set", 1, true), F.show(r.stdout))
  end)

  local BAD = {
    { { "bad key", "v" }, "STATUS_INVALID_KEY" },
    { { "-x", "v" }, nil },    -- argparse takes it for an option: a usage error
    { { "k", "two\nlines" }, "STATUS_INVALID_VALUE" },
    { { "k", string.rep("x", 1025) }, "STATUS_INVALID_VALUE" },
    { { "k", "v", "--ttl", "0" }, "STATUS_INVALID_TTL" },
    { { "k", "v", "--ttl", "nan" }, "STATUS_INVALID_TTL" },
  }
  for _, case in ipairs(BAD) do
    it("rejects " .. (case[2] or "an option-like key") .. " with one line and posts nothing", function()
      local before = F.snapshot(root)
      local argv = { "status", "set", "dev", table.unpack(case[1]) }
      argv[#argv + 1] = "--as"
      argv[#argv + 1] = "alice"
      local r = run(table.unpack(argv))
      assert.equal(2, r.code, F.describe(r))
      assert.is_nil(F.error_line(r.stderr))
      if case[2] then
        assert.truthy(r.stderr:find("agent-chat: " .. case[2] .. ": ", 1, true), F.show(r.stderr))
      end
      assert.same({}, F.diff(before, F.snapshot(root)))
    end)
  end
end)
