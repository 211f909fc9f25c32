-- Fencing on the etcd store (docs/etcd.md): leases and path locks carry a
-- generation (the revision that granted them) that `task show` and `check`
-- print and the Lua API returns; a holder whose generation is no longer
-- current is refused with a stable code; a command that stalled while it
-- held the task board's lock (its lease expired, another process took the
-- lock) cannot commit afterwards. Runs under tests/etcd/with-cluster
-- (tests/run-one), SKIP without etcd.
local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
local F = E.F
if not E.endpoints then
  return E.skip(describe, pending)
end

local function gen_of(stdout, pattern)
  return tonumber(stdout:match(pattern))
end

describe("the etcd store: fencing", function()
  it("a lease's generation is the revision that granted it: renew keeps it, a new holder changes it",
    function()
      local _, _, ac = E.fresh(nil, { "task", "create", "dev", "t1", "--from", "a", "--title", "x" })
      local r = ac("task", "show", "dev", "t1")
      assert.falsy(r.stdout:find("generation", 1, true), "no lease, no generation: " .. F.show(r.stdout))
      assert.equal(0, ac("task", "claim", "dev", "t1", "--as", "alice", "--lease", "1").code)
      local g1 = gen_of(ac("task", "show", "dev", "t1").stdout, "\ngeneration: (%d+)\n$")
      assert.is_number(g1)
      assert.equal(0, ac("task", "renew", "dev", "t1", "--as", "alice", "--lease", "1",
                         "--generation", tostring(g1)).code)
      assert.equal(g1, gen_of(ac("task", "show", "dev", "t1").stdout, "\ngeneration: (%d+)\n$"))
      F.sleep(1.5)
      assert.equal(0, ac("task", "recover", "dev", "t1", "--as", "bob", "--reason", "alice left").code)
      local g2 = gen_of(ac("task", "show", "dev", "t1").stdout, "\ngeneration: (%d+)\n$")
      assert.is_true(g2 > g1)
      -- alice comes back with her old token: refused, nothing changed
      r = ac("task", "done", "dev", "t1", "--as", "alice", "--generation", tostring(g1))
      assert.equal(2, r.code, F.describe(r))
      assert.equal("agent-chat: LEASE_FENCED: the lease of task t1 is generation " .. g2 .. ", not " .. g1
        .. ": a newer holder took it over\n", r.stderr)
      -- so is a holder of the same name with an old token
      r = ac("task", "release", "dev", "t1", "--as", "bob", "--generation", tostring(g1))
      assert.equal(2, r.code, F.describe(r))
      assert.truthy(r.stderr:find("LEASE_FENCED", 1, true))
      -- the new holder's token works
      r = ac("task", "done", "dev", "t1", "--as", "bob", "--generation", tostring(g2))
      assert.equal("done task t1 [done]\n", r.stdout, F.describe(r))
    end)

  it("a holder that recovers its own expired lease gets a new generation: its old token is stale",
    function()
      -- an agent restarted elsewhere under the same name takes its lease back
      local _, _, ac = E.fresh(nil, { "task", "create", "dev", "t1", "--from", "a", "--title", "x" })
      assert.equal(0, ac("task", "claim", "dev", "t1", "--as", "alice", "--lease", "1").code)
      local g1 = gen_of(ac("task", "show", "dev", "t1").stdout, "\ngeneration: (%d+)\n$")
      F.sleep(1.5)
      assert.equal(0, ac("task", "recover", "dev", "t1", "--as", "alice", "--reason", "restarted").code)
      local g2 = gen_of(ac("task", "show", "dev", "t1").stdout, "\ngeneration: (%d+)\n$")
      assert.is_true(g2 > g1, g1 .. " then " .. tostring(g2))
      local r = ac("task", "done", "dev", "t1", "--as", "alice", "--generation", tostring(g1))
      assert.equal(2, r.code, F.describe(r))
      assert.truthy(r.stderr:find("LEASE_FENCED", 1, true), F.describe(r))
      assert.equal(0, ac("task", "done", "dev", "t1", "--as", "alice", "--generation", tostring(g2)).code)
      -- nothing is left of the lease (fsck finds the store consistent)
      r = ac("fsck")
      assert.equal(0, r.code, F.describe(r))
    end)

  it("the Lua API returns and takes the generations", function()
    local store, root = E.store(), F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "dev" }).code)
    local script = F.tmpdir() .. "/s.lua"
    F.write(script, [[
local ac = require "agentchat"
local ch = assert(ac.open():channel("dev"))
assert(ch:task_create{ id = "t", from = "a", title = "x" })
local t = assert(ch:claim("t", { as = "alice" }))
assert(math.type(t.generation) == "integer", "claim returns the generation")
assert(ch:task("t").generation == t.generation, "task() returns it")
local _, _, code = ch:done("t", { as = "alice", generation = t.generation + 1 })
assert(code == "LEASE_FENCED", tostring(code))
assert(ch:done("t", { as = "alice", generation = t.generation }))
local l = assert(ch:lock({ "src" }, { as = "alice" }))
assert(math.type(l.generation) == "integer", "lock returns the generation")
assert(ch:check({ "src" })[1].generation == l.generation, "check returns it")
_, _, code = ch:unlock("src", { as = "alice", generation = l.generation - 1 })
assert(code == "PATH_LOCK_FENCED", tostring(code))
assert(ch:unlock("src", { as = "alice", generation = l.generation }))
print("ok")
]])
    local r = F.run({ "--root", root, "--store", store, "run", script })
    assert.equal("ok\n", r.stdout, F.describe(r))
  end)

  it("a path lock's generation: check prints it, a recovered lock has a new one, unlock checks it",
    function()
      local _, _, ac = E.fresh()
      assert.equal(0, ac("lock", "dev", "src", "--as", "alice", "--lease", "0.5").code)
      local g1 = gen_of(ac("check", "dev", "src").stdout, " generation=(%d+)\n$")
      assert.is_number(g1)
      F.sleep(1)
      assert.equal(0, ac("recover", "dev", "src", "--as", "bob", "--reason", "stale").code)
      local g2 = gen_of(ac("check", "dev", "src").stdout, " generation=(%d+)\n$")
      assert.is_true(g2 > g1)
      local r = ac("unlock", "dev", "src", "--as", "bob", "--generation", tostring(g1))
      assert.equal(1, r.code, F.describe(r))
      assert.truthy(r.stderr:find("^agent%-chat: PATH_LOCK_FENCED: lock %x+ is generation " .. g2 .. ", not "
        .. g1 .. ": a newer holder took it over\n$"), F.describe(r))
      r = ac("unlock", "dev", "src", "--as", "bob", "--generation", tostring(g2))
      assert.equal(0, r.code, F.describe(r))
    end)

  -- A command that stalls holding the task board's lock: its lease (2 s)
  -- expires, another command takes the lock and changes the board; the
  -- stalled one wakes up and must not commit what it decided under a lock
  -- it no longer holds.
  local function stalled(other)
    local store, root = E.store("lease_ttl=2"), F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "dev" }).code)
    assert.equal(0, E.ac(store, root, { "task", "create", "dev", "t1", "--from", "a", "--title", "x" }).code)
    local dir = F.tmpdir()
    local rc = F.shell([[
"$A" --root "$1" --store "$2" task claim dev t1 --as alice >"$3/a.out" 2>"$3/a.err" &
pid=$!
# wait until it stopped itself at the batch (the lock is held, the decision made)
i=0
while [ "$(ps -o stat= -p $pid | cut -c1)" != T ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
sleep 3                      # its lease expires, and the lock with it
]] .. other .. [[ >"$3/b.out" 2>"$3/b.err"
echo $? >"$3/b.rc"
kill -CONT $pid
wait $pid
echo $? >"$3/a.rc"
]], { AGENT_CHAT_FAULT = "store.batch:stop" }, root, store, dir)
    assert.equal(0, rc)
    return {
      a = { code = tonumber(F.read(dir .. "/a.rc")), stdout = F.read(dir .. "/a.out"),
            stderr = F.read(dir .. "/a.err") },
      b = { code = tonumber(F.read(dir .. "/b.rc")), stdout = F.read(dir .. "/b.out"),
            stderr = F.read(dir .. "/b.err") },
    }, store, root
  end

  it("refuses a stalled holder's lease change after another took the board's lock", function()
    -- the other command claims the same task
    local res, store, root = stalled([[env -u AGENT_CHAT_FAULT "$A" --root "$1" --store "$2" task claim dev t1 --as bob]])
    assert.equal(0, res.b.code, F.show(res.b.stderr))
    assert.equal(2, res.a.code, F.show(res.a.stdout) .. F.show(res.a.stderr))
    assert.truthy(res.a.stderr:find("^agent%-chat: LEASE_FENCED: task t1 was not changed: "), res.a.stderr)
    local r = E.ac(store, root, { "task", "show", "dev", "t1" })
    assert.truthy(r.stdout:find("\nowner: bob\n", 1, true), F.describe(r))
    r = E.ac(store, root, { "read", "dev", "--as", "x", "--all" })
    local _, claims = r.stdout:gsub("\nstatus: lease.claimed\n", "")
    assert.equal(1, claims)
  end)

  it("refuses a stalled holder even when the other holder touched none of its records", function()
    -- the other command creates another task: t1's records are as alice
    -- read them, only the lock she decided under is gone
    local res, store, root = stalled([[env -u AGENT_CHAT_FAULT "$A" --root "$1" --store "$2" task create dev t2 --from bob --title y]])
    assert.equal(0, res.b.code, F.show(res.b.stderr))
    assert.equal(2, res.a.code, F.show(res.a.stdout) .. F.show(res.a.stderr))
    assert.truthy(res.a.stderr:find("^agent%-chat: LEASE_FENCED: task t1 was not changed: the lock this "
      .. "command held expired and was taken over"), res.a.stderr)
    local r = E.ac(store, root, { "task", "show", "dev", "t1" })
    assert.truthy(r.stdout:find("\nstatus: open\n", 1, true), F.describe(r))
  end)
end)
