-- Migration between the stores (docs/etcd.md "Migration"): `export --to
-- DIR` writes an etcd store's channels in the folder format, `import folder
-- DIR` loads a folder's channels into an etcd store; what a command prints
-- afterwards is the same on either side, the folder passes fsck, and a
-- target channel that exists is refused. Runs under tests/etcd/with-cluster
-- (tests/run-one), SKIP without etcd.
local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
local F = E.F
if not E.endpoints then
  return E.skip(describe, pending)
end

-- A channel with a bit of everything.
local function populate(run)
  for _, argv in ipairs({
    { "init", "dev", "--members", "alice,bob", "--topic", "T" },
    { "init", "ops" },
    { "post", "dev", "--from", "alice", "--to", "bob", "--title", "hi", "--body", "hello\nbob" },
    { "post", "dev", "--from", "bob", "--title", "re", "--body", "x", "--reply", "1" },
    { "post", "ops", "--from", "carol", "--to", "dave", "--title", "deploy", "--body", "now" },
    { "ack", "dev", "1", "--as", "bob" },
    { "read", "dev", "--as", "bob" },
    { "read", "ops", "--as", "dave" },
    { "task", "create", "dev", "t1", "--from", "alice", "--title", "first" },
    { "task", "create", "dev", "t2", "--from", "alice", "--title", "second", "--depends-on", "t1" },
    { "task", "claim", "dev", "t1", "--as", "bob" },
    { "lock", "dev", "src", "docs/a.md", "--as", "bob" },
    { "event", "post", "dev", "--from", "bob", "--type", "status", "--harness", "h", "--status", "busy" },
  }) do
    local r = run(argv)
    assert(r.code == 0, F.describe(r))
  end
end

-- What a reader sees, with the generations only etcd prints left out.
local VIEW = {
  { "read", "dev", "--as", "zed", "--all" },
  { "read", "ops", "--as", "zed", "--all" },
  { "read", "dev", "--as", "bob" },
  { "read", "dev", "--as", "alice", "--peek" },
  { "receipts", "dev", "1" },
  { "task", "list", "dev" },
  { "task", "show", "dev", "t1" },
  { "check", "dev", "src", "docs" },
  { "roster", "dev" },
  { "event", "read", "dev" },
}

local function view(run, root)
  local out = {}
  for i, argv in ipairs(VIEW) do
    local r = run(argv)
    out[i] = { r.code, E.normalize(r.stdout, root, "\0"), E.normalize(r.stderr, root, "\0") }
  end
  return out
end

describe("the etcd store: export and import", function()
  it("exports an etcd store as a folder that reads the same and passes fsck", function()
    local store, root, dir = E.store(), F.new_root(), F.tmpdir() .. "/archive"
    local function on_etcd(argv)
      return E.ac(store, root, argv)
    end
    local function on_folder(argv)
      return F.ac(dir, argv)
    end
    populate(on_etcd)
    local r = on_etcd({ "export", "--to", dir })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("exported 'dev' to " .. dir .. "/dev: 7 messages, 4 records, 1 acks, 1 cursors\n"
      .. "exported 'ops' to " .. dir .. "/ops: 1 messages, 0 records, 0 acks, 1 cursors\n", r.stdout)
    assert.are.same(view(on_etcd, store), view(on_folder, dir))
    r = F.ac(dir, { "fsck" })
    assert.equal(0, r.code, F.describe(r))
    -- the folder is a live one: the next post takes the next seq
    r = on_folder({ "post", "dev", "--from", "alice", "--title", "after", "--body", "x" })
    assert.equal("posted #8 -> dev/0008-alice-after.md\n", r.stdout, F.describe(r))
    -- a channel the folder has is refused, nothing written
    r = on_etcd({ "export", "--to", dir, "dev" })
    assert.equal(1, r.code, F.describe(r))
    assert.equal("agent-chat: channel 'dev' already exists\n", r.stderr)
  end)

  it("imports a folder into an etcd store that reads the same; posts go on after its seqs", function()
    local store, root, dir = E.store(), F.new_root(), F.new_root()
    local function on_etcd(argv)
      return E.ac(store, root, argv)
    end
    local function on_folder(argv)
      return F.ac(dir, argv)
    end
    populate(on_folder)
    local r = on_etcd({ "import", "folder", dir, "dev" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("imported 'dev' from " .. dir .. "/dev into " .. store:gsub("%?.*", "")
      .. "/dev: 7 messages, 4 records, 1 acks, 1 cursors\n", r.stdout)
    r = on_etcd({ "import", "folder", dir, "ops" })
    assert.equal("imported 'ops' from " .. dir .. "/ops into " .. store .. "/ops: 1 messages, 0 records, "
      .. "0 acks, 1 cursors\n", r.stdout, F.describe(r))
    -- all of them: the first that exists stops it, nothing of it written
    r = on_etcd({ "import", "folder", dir })
    assert.equal(1, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.equal("agent-chat: channel 'dev' already exists\n", r.stderr)
    assert.are.same(view(on_folder, dir), view(on_etcd, store))
    r = on_etcd({ "fsck" })
    assert.equal(0, r.code, F.describe(r))
    r = on_etcd({ "post", "dev", "--from", "alice", "--title", "after", "--body", "x" })
    assert.equal("posted #8 -> dev/0008-alice-after.md\n", r.stdout, F.describe(r))
    r = on_etcd({ "import", "folder", F.tmpdir() .. "/nothing" })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: IMPORT_INVALID_FOLDER: no channel under "), F.describe(r))
  end)
end)
