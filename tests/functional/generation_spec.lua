-- Lease and lock generations on the folder store (docs/etcd.md "Fencing"):
-- the folder keeps none, so `task show` and `check` print what they always
-- printed, and a `--generation` is refused with a stable code, nothing
-- changed. (The etcd store's generations: etcd_fencing_spec.lua.)
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

describe("generations on the folder", function()
  it("are never printed, and --generation is refused", function()
    local root = F.new_root()
    F.init(root, "dev")
    assert.equal(0, F.ac(root, { "task", "create", "dev", "t1", "--from", "a", "--title", "x" }).code)
    assert.equal(0, F.ac(root, { "task", "claim", "dev", "t1", "--as", "alice" }).code)
    local r = F.ac(root, { "task", "show", "dev", "t1" })
    assert.falsy(r.stdout:find("generation", 1, true), F.describe(r))
    r = F.ac(root, { "task", "done", "dev", "t1", "--as", "alice", "--generation", "1" })
    assert.equal(2, r.code, F.describe(r))
    assert.equal("agent-chat: LEASE_FENCED: task t1 holds no lease of generation 1 (the folder store "
      .. "keeps no lease generations)\n", r.stderr)
    r = F.ac(root, { "task", "show", "dev", "t1" })
    assert.truthy(r.stdout:find("\nstatus: in_progress\n", 1, true), F.describe(r))
    r = F.ac(root, { "task", "claim", "dev", "t1", "--as", "alice", "--generation", "1" })
    assert.equal(2, r.code, F.describe(r))
    assert.truthy(r.stderr:find("unrecognized arguments: --generation 1", 1, true), F.describe(r))

    assert.equal(0, F.ac(root, { "lock", "dev", "src", "--as", "alice" }).code)
    r = F.ac(root, { "check", "dev", "src" })
    assert.truthy(r.stdout:find("^locked %x+ owner=alice expires=[^ ]+\n$"), F.describe(r))
    r = F.ac(root, { "unlock", "dev", "src", "--as", "alice", "--generation", "1" })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: PATH_LOCK_FENCED: lock %x+ has no generation 1 %(the folder "
      .. "store keeps no lock generations%)\n$"), F.describe(r))
    assert.equal(0, F.ac(root, { "unlock", "dev", "src", "--as", "alice" }).code)
  end)
end)
