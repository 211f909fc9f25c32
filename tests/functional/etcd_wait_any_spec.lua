-- The composite wait (`wait --for`, `wait --resume`) and the status keys on
-- the etcd store (docs/wait-any.md, docs/status-keys.md): each condition
-- kind wakes a blocked wait, across channels too; a resumed wait returns a
-- post made in between; concurrent status sets leave the highest seq's.
-- The same as wait_any_spec and status_keys_spec on a folder; tests/run-one
-- runs it under tests/etcd/with-cluster (SKIP without etcd).
local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
local F = E.F
if not E.endpoints then
  return E.skip(describe, pending)
end
local json = require "agentchat.json"

describe("the etcd store: wait --for", function()
  local store, root, ac

  before_each(function()
    store, root, ac = E.fresh(nil, { "init", "other" },
      { "task", "create", "dev", "T1", "--title", "build", "--from", "alice" },
      { "task", "claim", "dev", "T1", "--as", "alice" },
      { "lock", "dev", "src/a.c", "--as", "alice" },
      { "post", "dev", "--from", "alice", "--to", "bob", "--title", "ack me", "--body", "x" },
      { "read", "dev", "--as", "bob" })
  end)

  -- `wait` in the background, `trigger` (agent-chat arguments) 0.5 s later.
  local function woken(cond, trigger)
    local q = {}
    for i, w in ipairs(trigger) do
      q[i] = F.sh(w)
    end
    local r = F.background(root, "--store " .. F.sh(store) .. " wait dev --as bob --kind message --for "
      .. F.sh(cond) .. " --timeout 20", '"$A" --store ' .. F.sh(store) .. " " .. table.concat(q, " ")
      .. " >/dev/null", 0.5)
    assert.equal(0, r.code, F.describe(r))
    assert.equal("woke: " .. cond, F.lines(r.stdout)[1])
    return r
  end

  it("wakes on a message", function()
    local r = woken("message", { "post", "dev", "--from", "alice", "--to", "bob", "--title", "hi", "--body", "x" })
    assert.truthy(r.stdout:find("title: hi", 1, true), F.show(r.stdout))
  end)

  it("wakes when the task is done", function()
    woken("task:T1=done", { "task", "done", "dev", "T1", "--as", "alice" })
  end)

  it("wakes when the lock is released", function()
    woken("lock:src/a.c=free", { "unlock", "dev", "src/a.c", "--as", "alice" })
  end)

  it("wakes when the message is acked", function()
    -- The sender waits for bob's ack of its message (the last one).
    local seq = ac("peek", "dev", "-n", "1").stdout:match("\nseq: (%d+)\n")
    assert.truthy(seq)
    local r = F.background(root, "--store " .. F.sh(store) .. " wait dev --as alice --for receipt:" .. seq
      .. "=acked --timeout 20", '"$A" --store ' .. F.sh(store) .. " ack dev " .. seq .. " --as bob >/dev/null", 0.5)
    assert.equal(0, r.code, F.describe(r))
    assert.equal("woke: receipt:" .. seq .. "=acked", F.lines(r.stdout)[1])
  end)

  it("wakes on a message in another channel", function()
    woken("other:message", { "post", "other", "--from", "carol", "--title", "there", "--body", "x" })
  end)

  it("resumes with the post made in between", function()
    local r = ac("wait", "dev", "--as", "bob", "--for", "message", "--for", "other:message", "--timeout", "0")
    assert.equal(2, r.code, F.describe(r))
    local token = r.stdout:match("^resume: (%S+)\n$")
    assert.truthy(token, F.show(r.stdout))
    assert.equal(0, ac("post", "other", "--from", "carol", "--title", "between", "--body", "x").code)
    r = ac("wait", "--resume", token, "--timeout", "5", "--json")
    assert.equal(0, r.code, F.describe(r))
    local obj = json.loads(r.stdout)
    assert.same({ "other:message", "between" }, { obj.condition, obj.messages[1].title })
  end)
end)

describe("the etcd store: status keys", function()
  it("keep the highest seq's value of concurrent sets, and show expiry", function()
    local store, root, ac = E.fresh()
    local lines = {}
    for i = 1, 6 do
      lines[#lines + 1] = string.format('"$A" --store %s status set dev k v%d --as alice >/dev/null &', F.sh(store), i)
    end
    lines[#lines + 1] = "wait"
    assert.equal(0, F.shell(table.concat(lines, "\n"), { AGENT_CHAT_ROOT = root }))
    local r = ac("peek", "dev", "-n", "1")
    local last = r.stdout:match('"value":"(v%d)"')
    assert.truthy(last, F.show(r.stdout))
    r = ac("status", "get", "dev", "k", "--json")
    assert.equal(0, r.code, F.describe(r))
    local keys = json.loads(r.stdout).keys
    assert.same({ 1, "alice", last }, { #keys, keys[1].agent, keys[1].value })
    assert.equal(0, ac("status", "set", "dev", "lease", "x", "--as", "bob", "--ttl", "0.2").code)
    F.sleep(0.5)
    keys = json.loads(ac("status", "get", "dev", "lease", "--json").stdout).keys
    assert.is_true(keys[1].expired)
  end)
end)
