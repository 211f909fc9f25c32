-- The record families on the etcd store (docs/etcd.md): tasks and their
-- leases, path locks, acks and receipts, events, state and compact print
-- what the folder prints; a batch is one transaction. Runs under
-- tests/etcd/with-cluster (tests/run-one), SKIP without etcd.
local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
local F = E.F
if not E.endpoints then
  return E.skip(describe, pending)
end


describe("the etcd store: records", function()
  it("tasks and leases print what the folder prints", function()
    E.check_same({
      { "init", "dev", "--members", "alice,bob" },
      { "task", "create", "dev", "t1", "--title", "first", "--from", "alice", "--files-hint", "src/a,./b//c/" },
      { "task", "create", "dev", "t1", "--title", "again", "--from", "alice" },
      { "task", "create", "dev", "t2", "--title", "second", "--from", "alice", "--depends-on", "t1" },
      { "task", "create", "dev", "t3", "--title", "bad dep", "--from", "alice", "--depends-on", "nope" },
      { "task", "create", "dev", "t4", "--title", "outside", "--from", "alice", "--files-hint", "../x" },
      { "task", "list", "dev" },
      { "task", "claim", "dev", "t2", "--as", "bob" },
      { "task", "claim", "dev", "t1", "--as", "bob", "--lease-seconds", "60" },
      { "task", "claim", "dev", "t1", "--as", "alice" },
      { "task", "renew", "dev", "t1", "--as", "bob", "--lease-seconds", "120" },
      { "task", "renew", "dev", "t1", "--as", "alice" },
      { "task", "update", "dev", "t1", "--as", "bob", "--title", "first, renamed" },
      { "task", "show", "dev", "t1" },
      { "task", "done", "dev", "t1", "--as", "alice" },
      { "task", "done", "dev", "t1", "--as", "bob" },
      { "task", "claim", "dev", "t2", "--as", "alice", "--lease-seconds", "1" },
      { "task", "block", "dev", "t2", "--as", "alice" },
      { "task", "release", "dev", "t2", "--as", "alice" },
      { "task", "claim", "dev", "t2", "--as", "alice", "--lease-seconds", "0.5" },
      { sleep = 1 },
      { "task", "recover", "dev", "t2", "--as", "bob", "--reason", "alice is gone" },
      { "task", "update", "dev", "t2", "--as", "bob", "--status", "cancelled" },
      { "task", "list", "dev" },
      { "task", "list", "dev", "--json" },
      { "task", "show", "dev", "nope" },
      { "task", "recover-pending", "dev", "--as", "alice" },
      { "read", "dev", "--as", "carol" },
    }, { 1, 2, 4, 7, 9, 11, 13, 14, 16, 17, 22 })
  end)

  it("path locks print what the folder prints", function()
    E.check_same({
      { "init", "dev" },
      { "lock", "dev", "src/a", "src/b/c.txt", "--as", "alice" },
      { "lock", "dev", "src", "--as", "bob" },
      { "lock", "dev", "src/a/deep/x", "--as", "bob" },
      { "lock", "dev", "docs", "--as", "bob", "--lease-seconds", "0.5" },
      { "lock", "dev", "../up", "--as", "bob" },
      { "check", "dev", "src/a/x", "docs/y", "other", sort = true },
      { "check", "dev", "--json", "src" },
      { "unlock", "dev", "docs", "--as", "alice" },
      { sleep = 1 },
      { "lock", "dev", "docs/x", "--as", "carol" },
      { "recover", "dev", "docs", "--as", "carol", "--reason", "stale" },
      { "lock", "dev", "docs/x", "--as", "carol" },
      { "unlock", "dev", "docs/x", "--as", "carol" },
      { "unlock", "dev", "docs/x", "--as", "carol" },
      { "recover-pending", "dev", "--as", "bob" },
      { "read", "dev", "--as", "dave" },
    }, { 1, 2, 5, 7, 12 })
  end)

  it("acks, receipts, events, state and compact print what the folder prints", function()
    E.check_same({
      { "init", "dev", "--members", "alice,bob" },
      { "post", "dev", "--from", "alice", "--to", "bob", "--title", "q", "--body", "question" },
      { "receipts", "dev", "1" },
      { "ack", "dev", "1", "--as", "bob" },
      { "ack", "dev", "1", "--as", "bob" },
      { "ack", "dev", "1", "--as", "carol" },
      { "read", "dev", "--as", "bob" },
      { "receipts", "dev", "1" },
      { "receipts", "dev", "1", "--json" },
      { "post", "dev", "--from", "alice", "--to", "bob", "--title", "w", "--body", "b",
        "--wait-for", "read", "--timeout", "0.2" },
      { "event", "post", "dev", "--from", "bob", "--type", "status", "--harness", "h", "--status", "idle" },
      { "event", "read", "dev" },
      { "state", "dev" },
      { "state", "dev", "--json" },
      { "compact", "dev", "--as", "alice" },
      { "team", "dev", ages = true },
      { "inbox", "--as", "alice" },
    }, { 1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17 })
  end)
end)

describe("the etcd store: fsck", function()
  it("finds what breaks an invariant and repairs the counter", function()
    local store, root = E.store(), F.new_root()
    local function ac(...)
      return E.ac(store, root, { ... })
    end
    assert.equal(0, ac("init", "dev").code)
    assert.equal(0, ac("post", "dev", "--from", "a", "--title", "t", "--body", "b").code)
    assert.equal(0, ac("post", "dev", "--from", "a", "--title", "u", "--body", "b").code)
    assert.equal(0, ac("task", "create", "dev", "t1", "--from", "a", "--title", "x").code)
    assert.equal(0, ac("task", "claim", "dev", "t1", "--as", "bob").code)
    assert.equal(0, ac("lock", "dev", "src", "--as", "bob").code)
    local r = ac("fsck")
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stdout .. r.stderr)
    -- damage it behind the store's back
    local prefix = store:match("^etcd://[^/]+/(.*)$")
    local function put(key, value)
      local out, ok = E.ctl("etcdctl", "put", "--", prefix .. "/" .. key, value)
      assert(ok, out)
    end
    put("ch/dev\1seq", "1")       -- the counter, right after the channel record
    put("c/dev/cur/zed", "99 1")
    put("c/dev/r/locks/bad.json", "{}")
    put("c/dev/r/tasks/t2.json", "not json")
    put("c/dev/r/claims/t9.bob.json", '{"task_id": "t9"}')
    put("c/dev/m/00000000000000000009/0009-x-y.md", "---\nseq: 8\n---\nbody\n")
    r = ac("fsck")
    assert.equal(1, r.code, F.describe(r))
    local lines = F.lines(r.stdout)
    table.sort(lines)
    assert.are.same({
      "dev: FSCK_BAD_CURSOR: .cursors/zed: is 99, beyond the highest seq 9",
      "dev: FSCK_BAD_LOCK: locks/bad.json: PATH_LOCK_INVALID_RECORD: lock record is missing required fields",
      "dev: FSCK_BAD_TASK: tasks/t2.json: TASK_INVALID_RECORD: could not read task record t2.json: "
        .. "Expecting value: line 1 column 1 (char 0)",
      "dev: FSCK_CLAIM_MISMATCH: claims/t9.bob.json: lease record of task t9, which has no task record "
        .. "under this name",
      "dev: FSCK_SEQHIGH_BEHIND: seq: the counter is 1, below the highest message 9; run: agent-chat fsck "
        .. "dev --repair",
      "dev: FSCK_SEQ_MISMATCH: 0009-x-y.md: frontmatter says seq: 8, the key says 9",
    }, lines)
    r = ac("fsck", "--repair")
    assert.truthy(r.stdout:find("dev: repaired: FSCK_SEQHIGH_BEHIND: seq: raised the counter\n", 1, true),
      F.describe(r))
    -- the next post takes 10, never a seq in use
    r = ac("post", "dev", "--from", "a", "--title", "after", "--body", "b")
    assert.equal("posted #10 -> dev/0010-a-after.md\n", r.stdout, F.describe(r))
  end)
end)
