-- export and import folder between two folder roots (docs/etcd.md
-- "Migration"; the etcd side: etcd_export_spec.lua): the copy holds the
-- same files byte for byte, except state.md and the lock files commands
-- make as they go.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

describe("export and import folder", function()
  it("copy a folder root's channels byte for byte", function()
    local a, b, c = F.new_root(), F.new_root(), F.new_root()
    for _, argv in ipairs({
      { "init", "dev", "--members", "alice,bob" },
      { "post", "dev", "--from", "alice", "--to", "bob", "--title", "hi", "--body", "x" },
      { "ack", "dev", "1", "--as", "bob" },
      { "read", "dev", "--as", "bob" },
      { "task", "create", "dev", "t1", "--from", "alice", "--title", "first" },
      { "task", "claim", "dev", "t1", "--as", "bob" },
      { "lock", "dev", "src", "--as", "bob" },
    }) do
      assert.equal(0, F.ac(a, argv).code)
    end
    local r = F.ac(a, { "export", "--to", b })
    assert.equal("exported 'dev' to " .. b .. "/dev: 4 messages, 3 records, 1 acks, 1 cursors\n", r.stdout,
      F.describe(r))
    r = F.ac(c, { "import", "folder", b })
    assert.equal("imported 'dev' from " .. b .. "/dev into " .. c .. "/dev: 4 messages, 3 records, 1 acks, "
      .. "1 cursors\n", r.stdout, F.describe(r))
    local function files(root)
      local snap = F.snapshot(root)
      for k in pairs(snap) do
        -- made by commands as they go, not state
        if k:match("%.lock$") or k:match("/%.seqhigh$") or snap[k] == "d" then
          snap[k] = nil
        end
      end
      return snap
    end
    assert.are.same(files(a), files(b))
    assert.are.same(files(a), files(c))
    r = F.ac(b, { "fsck" })
    assert.equal(0, r.code, F.describe(r))
    r = F.ac(a, { "export", "--to", b })
    assert.equal(1, r.code, F.describe(r))
    assert.equal("agent-chat: channel 'dev' already exists\n", r.stderr)
  end)
end)
