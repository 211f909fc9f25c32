-- `agent-chat doctor CH` and ch:doctor() (issue 18; docs/doctor.md): the
-- wait-for graph of a channel (open requests, task dependencies held by
-- others, path locks a held task needs), its cycles and the stalls.
--   * a healthy channel (requests answered, dependencies and locks held
--     without a loop, fresh requests) prints nothing and exits 0;
--   * a planted two-agent cycle through a request and a lock, and a
--     three-step one through task dependencies, are reported (who waits for
--     whom, through what), exit 1, also as JSON;
--   * stalls: an expired lease, an expired path lock, and a request older
--     than --stale-after whose addressee posted nothing since (and not when
--     the addressee spoke after it).
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local T = require "tasksupport"
local json = require "agentchat.json"

local function new_channel()
  local root = T.new_channel()
  os.execute("mkdir -p " .. H.sh(root .. "/c/src") .. " " .. H.sh(root .. "/c/docs"))
  H.write(root .. "/c/src/app.c", "int main;\n")
  H.write(root .. "/c/docs/readme.md", "hi\n")
  return root
end

local function doctor(root, ...)
  return T.run(root, { "doctor", "c", ... })
end

-- A request from `from` to `to` posted by a script, `age` seconds ago.
local function old_request(root, from, to, id, age)
  local dir = T.scratch()
  H.write(dir .. "/s.lua", string.format([[
    local ac = require "agentchat"
    local sys = require "agentchat.sys"
    local ch = assert(ac.open():channel("c"))
    local ts = os.date("!%%Y-%%m-%%dT%%H:%%M:%%S+00:00", math.floor(sys.time()) - %d)
    assert(ch:post{ from = %q, to = %q, title = "review_request", body = "", type = "review_request",
                    request_id = %q, ts = ts })
  ]], age, from, to, id))
  T.must(root, { "run", dir .. "/s.lua" })
end

describe("doctor", function()
  it("says nothing on a healthy channel", function()
    local root = new_channel()
    T.must(root, { "lock", "c", "src/app.c", "--as", "alice" })
    T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "x", "--owner", "alice",
                   "--files-hint", "src/app.c" })
    T.must(root, { "task", "claim", "c", "t1", "--as", "alice" })
    T.must(root, { "task", "create", "c", "t2", "--from", "lead", "--title", "x", "--owner", "bob",
                   "--depends-on", "t1" })
    T.must(root, { "task", "block", "c", "t2", "--as", "bob" })
    T.must(root, { "request", "c", "--from", "bob", "--to", "alice", "--type", "review_request",
                   "--request-id", "r1", "--no-wait" })
    T.must(root, { "respond", "c", "--request", "r1", "--from", "alice", "--approve" })
    T.must(root, { "request", "c", "--from", "alice", "--to", "carol", "--type", "plan_approval_request",
                   "--no-wait" })
    old_request(root, "bob", "dave", "r-old", 7200)
    T.must(root, { "post", "c", "--from", "dave", "--title", "ok", "--body", "on it" })
    local r = doctor(root)
    assert.are.same({ 0, "", "" }, { r.code, r.stdout, r.stderr })
    r = doctor(root, "--json")
    assert.are.equal(0, r.code)
    local report = assert(json.loads(r.stdout))
    assert.are.same({ {}, {}, 0 }, { report.cycles, report.stalls, report.findings })
    -- what it saw: bob waits for alice (t2 needs t1), alice for carol and
    -- bob for dave (requests not answered yet)
    local seen = {}
    for _, e in ipairs(report.edges) do
      seen[#seen + 1] = e.from .. ">" .. e.to .. ":" .. e.kind
    end
    table.sort(seen)
    assert.are.same({ "alice>carol:request", "bob>alice:task", "bob>dave:request" }, seen)
  end)

  it("finds a two-agent cycle through a request and a lock", function()
    local root = new_channel()
    local lock_id = assert(T.must(root, { "lock", "c", "src", "--as", "alice" }).stdout:match("^locked (%x+) "))
    T.must(root, { "request", "c", "--from", "alice", "--to", "bob", "--type", "review_request",
                   "--request-id", "r7", "--no-wait" })
    T.must(root, { "task", "create", "c", "fix", "--from", "lead", "--title", "x", "--owner", "bob",
                   "--files-hint", "src/app.c" })
    T.must(root, { "task", "block", "c", "fix", "--as", "bob" })
    local r = doctor(root)
    assert.are.equal(1, r.code)
    assert.are.equal("", r.stderr)
    assert.are.equal(table.concat({
      "cycle: alice -> bob -> alice",
      "  alice waits for bob: request r7 (#2, review_request) has no response",
      "  bob waits for alice: task fix (blocked) needs src/app.c, locked by alice (lock " .. lock_id .. ")",
      "1 cycle, 0 stalls in 'c'",
    }, "\n") .. "\n", r.stdout)
    r = doctor(root, "--json")
    assert.are.equal(1, r.code)
    local report = assert(json.loads(r.stdout))
    assert.are.equal(1, report.findings)
    assert.are.same({ "alice", "bob", "alice" }, report.cycles[1].agents)
    assert.are.same({ "request", "lock" }, { report.cycles[1].edges[1].kind, report.cycles[1].edges[2].kind })
    -- bob answers: the cycle is gone
    T.must(root, { "respond", "c", "--request", "r7", "--from", "bob", "--reject" })
    r = doctor(root)
    assert.are.same({ 0, "" }, { r.code, r.stdout })
  end)

  it("finds a three-step cycle through task dependencies", function()
    local root = new_channel()
    -- alice's a2 needs bob's b1, bob's b2 needs carol's c1, carol's c2 needs alice's a1
    for _, who in ipairs({ { "alice", "a", "b" }, { "bob", "b", "c" }, { "carol", "c", "a" } }) do
      T.must(root, { "task", "create", "c", who[2] .. "1", "--from", "lead", "--title", "x", "--owner", who[1] })
    end
    for _, who in ipairs({ { "alice", "a", "b" }, { "bob", "b", "c" }, { "carol", "c", "a" } }) do
      T.must(root, { "task", "create", "c", who[2] .. "2", "--from", "lead", "--title", "x", "--owner", who[1],
                     "--depends-on", who[3] .. "1" })
    end
    -- not started, nobody waits yet
    local r = doctor(root)
    assert.are.same({ 0, "" }, { r.code, r.stdout })
    T.must(root, { "task", "block", "c", "a2", "--as", "alice" })
    T.must(root, { "task", "block", "c", "b2", "--as", "bob" })
    r = doctor(root)
    assert.are.same({ 0, "" }, { r.code, r.stdout })   -- a chain, not a cycle
    T.must(root, { "task", "block", "c", "c2", "--as", "carol" })
    r = doctor(root)
    assert.are.equal(1, r.code)
    assert.are.equal(table.concat({
      "cycle: alice -> bob -> carol -> alice",
      "  alice waits for bob: task a2 (blocked) needs b1 (open), held by bob",
      "  bob waits for carol: task b2 (blocked) needs c1 (open), held by carol",
      "  carol waits for alice: task c2 (blocked) needs a1 (open), held by alice",
      "1 cycle, 0 stalls in 'c'",
    }, "\n") .. "\n", r.stdout)
    -- bob finishes b1: alice no longer waits, the loop is open
    T.must(root, { "task", "claim", "c", "b1", "--as", "bob" })
    T.must(root, { "task", "done", "c", "b1", "--as", "bob" })
    r = doctor(root)
    assert.are.same({ 0, "" }, { r.code, r.stdout })
  end)

  it("finds stalls: an expired lease, an expired lock, an old request to a silent addressee", function()
    local root = new_channel()
    T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "x" })
    T.must(root, { "task", "claim", "c", "t1", "--as", "erin", "--lease-seconds", "0.01" })
    T.must(root, { "lock", "c", "docs", "--as", "fred", "--lease-seconds", "0.01" })
    old_request(root, "gus", "hal", "r-old", 7200)
    os.execute("sleep 0.1")   -- the leases are over
    local r = doctor(root)
    assert.are.equal(1, r.code)
    local lines = F.lines(r.stdout)
    assert.are.equal(4, #lines, r.stdout)
    assert.is_truthy(lines[1]:match("^stall: request r%-old %(#%d+, review_request%) from gus to hal has no "
      .. "response after 7%d%d%ds, and hal has posted nothing since$"), lines[1])
    assert.is_truthy(lines[2]:match("^stall: task t1: the lease of erin expired at %S+ %(%d+s ago%)$"), lines[2])
    assert.is_truthy(lines[3]:match("^stall: lock %x+ of fred on docs expired at %S+ %(%d+s ago%)$"), lines[3])
    assert.are.equal("0 cycles, 3 stalls in 'c'", lines[4])
    local report = assert(json.loads(doctor(root, "--json").stdout))
    local kinds = {}
    for _, s in ipairs(report.stalls) do
      kinds[#kinds + 1] = s.kind .. ":" .. s.agent
    end
    assert.are.same({ "request:hal", "lease:erin", "lock:fred" }, kinds)
    -- a longer --stale-after leaves the request out; hal speaking ends it too
    r = doctor(root, "--stale-after", "86400")
    assert.are.equal(3, #F.lines(r.stdout))
    T.must(root, { "post", "c", "--from", "hal", "--title", "hi", "--body", "back" })
    r = doctor(root)
    assert.are.equal("0 cycles, 2 stalls in 'c'", F.lines(r.stdout)[3])
  end)

  it("fails with one line on a bad channel or flag", function()
    local root = new_channel()
    local r = T.run(root, { "doctor", "nope" })
    assert.are.equal(1, r.code)
    assert.is_nil(F.error_line(r.stderr))
    r = T.run(root, { "doctor", "c", "--stale-after", "-1" })
    assert.are.equal(2, r.code)
    assert.is_nil(F.error_line(r.stderr))
  end)
end)
