-- The etcd store under faults (docs/etcd.md "Failure behaviour"), each
-- with the CLI as agents run it, against a 3-member cluster of its own
-- (tests/run-one runs this spec under tests/etcd/with-cluster; SKIP
-- without etcd):
--   - the leader SIGKILLed while 4 writers post 200 messages each: seqs
--     dense 1..800, no duplicate, every `posted #N` line holds its post;
--   - a SIGSTOPped member (accepts connections, never answers): posts and
--     reads go on through the others, nothing lost or doubled;
--   - quorum lost: one line, a non-zero exit (1; 2 for the task board's
--     TASK_*), within the command's timeout;
--   - a `wait` whose member is killed resumes on another and misses nothing;
--   - a partitioned old holder (nftables on loopback; the member runs under
--     its own uid): its renewal fails while cut off, its lease and lock go
--     to a new holder, and after the heal its `task done` and `unlock` are
--     refused by fencing while the new holder's succeed.
local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
local F = E.F
if not E.endpoints then
  return E.skip(describe, pending)
end

local function hosts(...)
  local eps = {}
  for ep in E.hosts():gmatch("[^,]+") do
    eps[#eps + 1] = ep
  end
  local out = {}
  for _, i in ipairs({ ... }) do
    out[#out + 1] = eps[i]
  end
  return table.concat(out, ",")
end

local function ctl(...)
  local out, ok = E.ctl(...)
  assert(ok, "cluster.sh " .. table.concat({ ... }, " ") .. ": " .. out)
  return out
end

-- Every member back and healthy (after a test that killed some).
local function restore()
  for i = 1, 3 do
    E.ctl("resume", "m" .. i)
    E.ctl("restart", "m" .. i)
  end
  E.ctl("heal")
  ctl("wait-healthy", "30")
end

describe("the etcd store under faults", function()
  after_each(restore)

  it("keeps seqs dense 1..800 without duplicates when the leader is SIGKILLed under 4 writers", function()
    local store, root, dir = E.store(), F.new_root(), F.tmpdir()
    assert.equal(0, E.ac(store, root, { "init", "c" }).code)
    local t0 = F.now()
    local rc = F.shell([[
for k in 1 2 3 4; do
  ( i=0
    while [ $i -lt 200 ]; do
      "$A" --root "$1" --store "$2" post c --from "w$k" --title "w$k-$i" --body "writer $k post $i" ||
        echo "FAILED w$k-$i exit $?"
      i=$((i+1))
    done ) >"$3/out.$k" 2>"$3/err.$k" &
done
# kill the leader once a quarter of the posts are in
while [ "$(cat "$3"/out.* | grep -c '^posted ')" -lt 200 ]; do sleep 0.05; done
"$CTL" kill-leader >"$3/killed"
date +%s.%N >"$3/killed.at"
wait
]], { CTL = E.ctl_path, ETCD_CLUSTER_DIR = os.getenv("ETCD_CLUSTER_DIR") }, root, store, dir)
    assert.equal(0, rc)
    print(string.format("# 800 posts by 4 writers in %.1f s, leader %s killed after 200", F.now() - t0,
      ((F.read(dir .. "/killed") or "?"):gsub("%s+$", ""))))
    local posted, seen, dups, failed = {}, {}, 0, {}
    for k = 1, 4 do
      local out = F.read(dir .. "/out." .. k) or ""
      for line in out:gmatch("[^\n]+") do
        local seq, title = line:match("^posted #(%d+) %-> c/%d+%-w%d%-(w%d%-%d+)%.md$")
        if seq then
          seq = tonumber(seq)
          if seen[seq] then
            dups = dups + 1
          end
          seen[seq] = true
          posted[#posted + 1] = { seq = seq, title = title }
        else
          failed[#failed + 1] = line
        end
      end
      assert.equal("", F.read(dir .. "/err." .. k) or "", "writer " .. k .. "'s stderr")
    end
    assert.same({}, failed)
    assert.equal(0, dups)
    assert.equal(800, #posted)
    for s = 1, 800 do
      assert.is_true(seen[s], "seq " .. s .. " missing")
    end
    -- the store: 800 messages, each `posted #N` line holds its post
    local r = E.ac(store, root, { "read", "c", "--as", "checker", "--all" })
    assert.equal(0, r.code, F.describe(r))
    local titles = {}
    for seq, title in r.stdout:gmatch("\nseq: (%d+)\n.-\ntitle: ([^\n]*)\n") do
      titles[tonumber(seq)] = title
    end
    local n = 0
    for _ in pairs(titles) do
      n = n + 1
    end
    assert.equal(800, n)
    for _, p in ipairs(posted) do
      assert.equal(p.title, titles[p.seq], "#" .. p.seq)
    end
  end)

  it("goes on through the others while a member is SIGSTOPped", function()
    -- m1, the first endpoint every command tries, hangs
    local store = "etcd://" .. hosts(1, 2, 3) .. "/t/stopped-" .. os.time() .. "?request_timeout=0.5"
    local root = F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "c" }).code)
    ctl("pause", "m1")
    local seqs = {}
    for i = 1, 6 do
      local r = E.ac(store, root, { "post", "c", "--from", "a", "--to", "b", "--title", "p" .. i, "--body", "x" })
      assert.equal(0, r.code, F.describe(r))
      seqs[#seqs + 1] = tonumber(r.stdout:match("^posted #(%d+)"))
    end
    local r = E.ac(store, root, { "read", "c", "--as", "b" })
    assert.equal(0, r.code, F.describe(r))
    ctl("resume", "m1")
    assert.same({ 1, 2, 3, 4, 5, 6 }, seqs)
    local got = {}
    for seq in r.stdout:gmatch("\nseq: (%d+)\n") do
      got[#got + 1] = tonumber(seq)
    end
    assert.same({ 1, 2, 3, 4, 5, 6 }, got)
  end)

  it("fails with one line and a non-zero exit within its timeout when the quorum is lost", function()
    local store, root = E.store("timeout=3"), F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "c" }).code)
    assert.equal(0, E.ac(store, root, { "post", "c", "--from", "a", "--title", "t", "--body", "b" }).code)
    ctl("kill", "m2")
    ctl("kill", "m3")
    for _, argv in ipairs({
      { "post", "c", "--from", "a", "--title", "t", "--body", "b" },
      { "read", "c", "--as", "b" },
      { "wait", "c", "--as", "b", "--timeout", "20" },
      { "task", "create", "c", "t1", "--from", "a", "--title", "x" },
      { "lock", "c", "src", "--as", "a" },
    }) do
      local t0 = F.now()
      local r = E.ac(store, root, argv)
      local took = F.now() - t0
      print(string.format("# %s without quorum: exit %d after %.1f s: %s", argv[1], r.code, took,
        (r.stderr:gsub("\n$", ""))))
      assert.is_true(r.code ~= 0, F.describe(r))
      assert.is_nil(F.error_line(r.stderr), F.describe(r))
      assert.truthy(r.stderr:find("ETCD_", 1, true), F.describe(r))
      assert.is_true(took < 15, argv[1] .. " took " .. took .. " s (timeout 3 s): a hang?")
    end
  end)

  it("resumes a wait on another member when its member is killed, missing nothing", function()
    local store = "etcd://" .. hosts(1, 2, 3) .. "/t/watch-" .. os.time()
    local root = F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "w" }).code)
    -- the waiter's watch is on m1, the first endpoint; m1 dies, then (while
    -- the watch moves elsewhere) a message for bob is posted through the others
    local r, took = F.background(root, "--store " .. F.sh(store) .. " wait w --as bob --timeout 30",
      F.sh(E.ctl_path) .. " kill m1 >/dev/null; " .. F.sh(F.bin) .. " --store " .. F.sh(store)
        .. " post w --from alice --to bob --title 'while m1 was down' --body x >/dev/null", 2)
    print(string.format("# wait returned after %.1f s (m1 killed at 2 s)", took))
    assert.equal(0, r.code, F.show(r.stderr))
    assert.truthy(r.stdout:find("title: while m1 was down\n", 1, true), F.show(r.stdout))
    assert.is_true(took < 25, "took " .. took .. " s")
  end)

  it("refuses a partitioned old holder's task done and unlock by fencing, the new holder's succeed", function()
    local run_as = os.getenv("ETCD_RUN_AS") or ""
    if not run_as:find("m3=", 1, true) then
      pending("needs m3 under its own uid and nftables (root, setpriv, nft): not available here")
      return
    end
    local all = "etcd://" .. hosts(1, 2, 3) .. "/t/partition-" .. os.time()
    local old = all:gsub("^etcd://[^/]+", "etcd://" .. hosts(3)) .. "?timeout=3"
    local new = all:gsub("^etcd://[^/]+", "etcd://" .. hosts(1, 2))
    local root = F.new_root()
    local function on(store, ...)
      return E.ac(store, root, { ... })
    end
    assert.equal(0, on(all, "init", "dev").code)
    assert.equal(0, on(all, "task", "create", "dev", "t1", "--from", "lead", "--title", "x").code)
    -- the old holder works through m3 only
    assert.equal(0, on(old, "task", "claim", "dev", "t1", "--as", "alice", "--lease", "2").code)
    assert.equal(0, on(old, "lock", "dev", "src", "--as", "alice", "--lease", "2").code)
    local g_old = tonumber(on(old, "task", "show", "dev", "t1").stdout:match("\ngeneration: (%d+)\n"))
    local l_old = tonumber(on(old, "check", "dev", "src").stdout:match(" generation=(%d+)\n"))
    assert.is_number(g_old)
    assert.is_number(l_old)
    ctl("partition", "m3")
    -- cut off, it cannot even renew
    local r = on(old, "task", "renew", "dev", "t1", "--as", "alice")
    print("# renew while partitioned: exit " .. r.code .. ": " .. (r.stderr:gsub("\n$", "")))
    assert.is_true(r.code ~= 0, F.describe(r))
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
    F.sleep(2.5)
    -- its leases ran out: the agent restarted elsewhere takes both back
    assert.equal(0, on(new, "task", "recover", "dev", "t1", "--as", "alice", "--reason", "m3 cut off").code)
    assert.equal(0, on(new, "recover", "dev", "src", "--as", "alice", "--reason", "m3 cut off").code)
    local g_new = tonumber(on(new, "task", "show", "dev", "t1").stdout:match("\ngeneration: (%d+)\n"))
    local l_new = tonumber(on(new, "check", "dev", "src").stdout:match(" generation=(%d+)\n"))
    ctl("heal")
    ctl("wait-healthy", "30")
    -- the old holder comes back with its tokens: refused, nothing changed
    r = on(old, "task", "done", "dev", "t1", "--as", "alice", "--generation", tostring(g_old))
    assert.equal(2, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: LEASE_FENCED: "), F.describe(r))
    r = on(old, "unlock", "dev", "src", "--as", "alice", "--generation", tostring(l_old))
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: PATH_LOCK_FENCED: "), F.describe(r))
    -- the new holder's succeed
    r = on(new, "task", "done", "dev", "t1", "--as", "alice", "--generation", tostring(g_new))
    assert.equal("done task t1 [done]\n", r.stdout, F.describe(r))
    r = on(new, "unlock", "dev", "src", "--as", "alice", "--generation", tostring(l_new))
    assert.equal(0, r.code, F.describe(r))
  end)
end)
