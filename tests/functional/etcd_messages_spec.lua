-- The messaging commands on the etcd store (docs/etcd.md): the same output
-- lines and exit codes as on the folder for init, post, read, peek, wait,
-- roster, channels and inbox; store selection by --store,
-- $AGENT_CHAT_STORE and the config's `store`; wait woken by a post from
-- another process; cursors that never go back; one-line errors. Runs under
-- tests/etcd/with-cluster (tests/run-one), SKIP without etcd.
local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
local F = E.F
if not E.endpoints then
  return E.skip(describe, pending)
end

describe("the etcd store: messages", function()
  it("prints what the folder prints for the same commands", function()
    E.check_same({
      { "channels" },
      { "init", "dev", "--members", "alice,bob", "--topic", "the topic" },
      { "init", "dev" },
      { "init", "bad/name" },
      { "init", "ops" },
      { "post", "dev", "--from", "alice", "--to", "bob", "--title", "hello", "--body", "hi bob" },
      { "post", "dev", "--from", "bob", "--title", "re: hello", "--body", "hi\nalice", "--reply", "1" },
      { "post", "dev", "--from", "carol", "--to", "alice,bob", "--title", "", "--body", "x",
        "--status", "blocked" },
      { "post", "dev", "--from", "alice", "--title", "t", "--body", "typed", "--type", "broadcast" },
      { "post", "nochannel", "--from", "alice", "--title", "t", "--body", "b" },
      { "post", "ops", "--from", "ops", "--to", "bob", "--title", "deploy", "--body", "now" },
      { "read", "dev", "--as", "bob" },
      { "read", "dev", "--as", "bob" },
      { "read", "dev", "--as", "alice", "--max-messages", "1" },
      { "read", "dev", "--as", "alice" },
      { "read", "dev", "--as", "carol", "--all" },
      { "read", "dev", "--as", "dave", "--peek" },
      { "read", "nochannel", "--as", "bob" },
      { "peek", "dev" },
      { "peek", "dev", "-n", "2" },
      { "roster", "dev" },
      { "roster", "nochannel" },
      { "channels" },
      { "inbox", "--as", "bob" },
      { "inbox", "--as", "bob" },
      { "wait", "dev", "--as", "bob", "--timeout", "0" },
      { "wait", "dev", "--as", "alice", "--timeout", "0" },
      { "post", "dev", "--from", "bob", "--to", "alice", "--title", "ping", "--body", "p" },
      { "wait", "dev", "--as", "alice", "--timeout", "5" },
      { "read", "dev", "--as", "alice" },
    }, { 2, 6, 7, 12, 19, 20, 21, 23 })
  end)

  it("is chosen by --store, $AGENT_CHAT_STORE or the config's store; the folder stays empty", function()
    local store, root = E.store(), F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "c" }).code)
    -- the environment
    local r = F.run({ "--root", root, "post", "c", "--from", "a", "--title", "t", "--body", "b" },
      { env = { AGENT_CHAT_STORE = store } })
    assert.equal("posted #1 -> c/0001-a-t.md\n", r.stdout, F.describe(r))
    -- the root config (agent-chat.yaml in the root folder)
    os.execute("mkdir -p " .. F.sh(root))
    F.write(root .. "/agent-chat.yaml", "store: " .. store .. "\n")
    r = F.run({ "--root", root, "post", "c", "--from", "a", "--title", "t", "--body", "b" })
    assert.equal("posted #2 -> c/0002-a-t.md\n", r.stdout, F.describe(r))
    -- the user config
    local home = F.tmpdir()
    local other = F.new_root()
    os.execute("mkdir -p " .. F.sh(home .. "/.config/agent-chat"))
    F.write(home .. "/.config/agent-chat/config.yaml", "store: " .. store .. "\n")
    r = F.run({ "--root", other, "post", "c", "--from", "a", "--title", "t", "--body", "b" },
      { env = { HOME = home } })
    assert.equal("posted #3 -> c/0003-a-t.md\n", r.stdout, F.describe(r))
    -- the folder root holds nothing but its config: the state is in etcd
    local snap = F.snapshot(root)
    assert.are.same({ ["agent-chat.yaml"] = "f:store: " .. store .. "\n" }, snap)
    assert.are.same({}, F.snapshot(other))
    r = E.ac(store, F.new_root(), { "peek", "c", "-n", "1" })
    assert.truthy(r.stdout:find("seq: 3\n", 1, true), F.describe(r))
    -- the config command names it
    r = F.run({ "--root", root, "config" })
    local line
    for _, l in ipairs(F.lines(r.stdout)) do
      if l:sub(1, 6) == "store " then
        line = l
      end
    end
    assert.truthy(line and line:find(store, 1, true) and line:find(root .. "/agent-chat.yaml:1", 1, true),
      F.describe(r))
  end)

  it("refuses a bad store URL with one line, naming no credentials", function()
    local root = F.new_root()
    for _, case in ipairs({
      { "etcd://", "ETCD_CONFIG" },
      { "etcd://127.0.0.1:1", "ETCD_CONFIG" },
      { "etcd://user:secret@127.0.0.1:1/p", "ETCD_CONFIG" },
      { "etcd://127.0.0.1:1/p?bogus=1", "ETCD_CONFIG" },
      { "etcd://host name:1/p", "ETCD_CONFIG" },
    }) do
      local r = F.run({ "--root", root, "--store", case[1], "channels" })
      assert.equal(1, r.code, F.describe(r))
      assert.is_nil(F.error_line(r.stderr), F.describe(r))
      assert.truthy(r.stderr:find("agent-chat: " .. case[2] .. ": ", 1, true), F.describe(r))
      assert.falsy(r.stderr:find("secret", 1, true), F.describe(r))
    end
    os.execute("mkdir -p " .. F.sh(root))
    F.write(root .. "/agent-chat.yaml", "store: /a/folder\n")
    local r = F.run({ "--root", root, "channels" })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("CONFIG_INVALID", 1, true), F.describe(r))
  end)

  it("fails with one line and exit 1 within its timeout when no member answers", function()
    local root = F.new_root()
    local t0 = F.now()
    local r = F.run({ "--root", root, "--store", "etcd://127.0.0.1:1,127.0.0.1:2/p?timeout=1",
                      "post", "c", "--from", "a", "--title", "t", "--body", "b" })
    assert.equal(1, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
    assert.truthy(r.stderr:find("agent-chat: ETCD_UNAVAILABLE: ", 1, true), F.describe(r))
    assert.is_true(F.now() - t0 < 10, "took " .. (F.now() - t0) .. " s")
  end)

  it("wakes a wait when another process posts", function()
    local store, root = E.store(), F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "w" }).code)
    local r = F.background(root, "--store " .. F.sh(store) .. " wait w --as bob --timeout 20",
      F.sh(F.bin) .. " --store " .. F.sh(store) .. " post w --from alice --to bob --title wake "
        .. "--body up >/dev/null", 1)
    assert.equal(0, r.code, F.show(r.stderr))
    assert.truthy(r.stdout:find("title: wake\n", 1, true), F.show(r.stdout))
    -- the cursor moved past it
    r = E.ac(store, root, { "read", "w", "--as", "bob" })
    assert.equal("(no new messages for bob in 'w'; cursor at #1)\n", r.stdout)
  end)

  it("ends its session lease when a command exits: a timed-out wait leaves no lease behind", function()
    -- A wait prepares the session lease of the cursor lock it takes on
    -- waking; the CLI must close the store (which revokes it) before it
    -- exits, not leave it to expire (cli.main, agentchat.end_sessions).
    local store, root = E.store(), F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "l" }).code)
    local function leases()
      local p = io.popen("ETCDCTL_API=3 etcdctl --endpoints=" .. F.sh(E.endpoints) .. " lease list 2>&1")
      local out = p:read("a")
      p:close()
      return out
    end
    local before = leases():match("found (%d+) leases")
    assert.truthy(before, leases())
    local r = E.ac(store, root, { "wait", "l", "--as", "bob", "--timeout", "1" })
    assert.equal(2, r.code, F.show(r.stderr))    -- the timeout's
    assert.truthy(r.stderr:find("timeout after 1.0s", 1, true), r.stderr)
    assert.equal(before, leases():match("found (%d+) leases"))
    -- every command that takes a lock on its lease: a read (the cursor
    -- lock), a path lock and a task claim (the board's lock)
    for _, argv in ipairs({ { "post", "l", "--from", "a", "--title", "t", "--body", "b" },
                            { "read", "l", "--as", "bob" },
                            { "lock", "l", "src/a.c", "--as", "bob" },
                            { "task", "create", "l", "t1", "--title", "t", "--from", "a" },
                            { "task", "claim", "l", "t1", "--as", "bob" } }) do
      r = E.ac(store, root, argv)
      assert.equal(0, r.code, F.show(r.stderr))
      assert.equal(before, leases():match("found (%d+) leases"), table.concat(argv, " "))
    end
  end)

  it("keeps cursors monotonic under concurrent readers: each message read once", function()
    local store, root = E.store(), F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "r" }).code)
    for i = 1, 20 do
      assert.equal(0, E.ac(store, root, { "post", "r", "--from", "a", "--to", "bob",
                                          "--title", "m" .. i, "--body", "b" }).code)
    end
    local dir = F.tmpdir()
    local rc = F.shell([[
for k in 1 2 3 4; do
  ( for j in 1 2 3; do "$A" --root "$1" --store "$2" read r --as bob --max-messages 2; done ) \
    >"$3/out.$k" 2>"$3/err.$k" &
done
wait
]], nil, root, store, dir)
    assert.equal(0, rc)
    local seen, count = {}, 0
    for k = 1, 4 do
      local out = F.read(dir .. "/out." .. k) or ""
      for seq in out:gmatch("\nseq: (%d+)\n") do
        seq = tonumber(seq)
        assert.is_nil(seen[seq], "seq " .. seq .. " delivered twice")
        seen[seq] = true
        count = count + 1
      end
      assert.equal("", F.read(dir .. "/err." .. k) or "")
    end
    local r = E.ac(store, root, { "read", "r", "--as", "bob" })
    for seq in r.stdout:gmatch("\nseq: (%d+)\n") do
      seq = tonumber(seq)
      assert.is_nil(seen[seq], "seq " .. seq .. " delivered twice")
      seen[seq] = true
      count = count + 1
    end
    assert.equal(20, count)
  end)
end)
