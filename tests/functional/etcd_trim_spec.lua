-- `agent-chat trim` on an etcd store (docs/etcd.md "Retention"):
-- the same lines and exit codes as on a folder (trim_spec.lua), the keys of
-- the trimmed messages, tokens and acks gone, the counter kept, and acks
-- beyond one listing page and one transaction. Runs under
-- tests/etcd/with-cluster (tests/run-one), SKIP without etcd.
local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
local F = E.F
if not E.endpoints then
  return E.skip(describe, pending)
end

-- The keys under a store's prefix, each without it.
local function keys(store)
  local prefix = store:match("^etcd://[^/]+/(.*)$") .. "/"
  local out = {}
  for line in E.ctl("etcdctl", "get", "--prefix", "--keys-only", prefix):gmatch("[^\n]+") do
    out[#out + 1] = line:sub(#prefix + 1):gsub("\1", "^A")
  end
  table.sort(out)
  return out
end

local STEPS = {
  { "init", "dev", "--members", "alice,bob" },
  { "post", "dev", "--from", "alice", "--to", "bob", "--title", "m1", "--body", "a" },
  { "post", "dev", "--from", "alice", "--to", "bob", "--title", "m2", "--body", "b" },
  { "post", "dev", "--from", "alice", "--to", "bob", "--title", "m3", "--body", "c" },
  { "post", "dev", "--from", "alice", "--to", "bob", "--title", "m4", "--body", "d" },
  { "ack", "dev", "2", "--as", "bob" },
  { "ack", "dev", "4", "--as", "bob" },
  { "trim", "dev", "--through", "4", "--archive", "ARCHIVE" },
  { "trim", "dev", "--through", "3", "--archive", "ARCHIVE", "--dry-run" },
  { "trim", "dev", "--through", "0", "--archive", "ARCHIVE" },
  { "trim", "nope", "--through", "1", "--archive", "ARCHIVE" },
  { "trim", "dev", "--through", "3", "--archive", "ARCHIVE" },
  { "post", "dev", "--from", "alice", "--to", "bob", "--title", "m5", "--body", "e" },
  { "read", "dev", "--as", "bob" },
  { "receipts", "dev", "4" },
  { "fsck" },
}

describe("the etcd store: trim", function()
  it("prints what the folder prints for the same steps", function()
    local function run(on, root, where)
      local archive = F.absolute(F.tmpdir()) .. "/archive"
      local out = {}
      for i, step in ipairs(STEPS) do
        local argv = {}
        for k, w in ipairs(step) do
          argv[k] = w == "ARCHIVE" and archive or w
        end
        local r = on(argv)
        local function norm(x)
          x = x:gsub(archive:gsub("%p", "%%%0"), "<ARCHIVE>")
          return E.normalize(x, root, where)
        end
        out[i] = { r.code, norm(r.stdout), norm(r.stderr) }
      end
      return out, archive
    end
    local froot, eroot, store = F.new_root(), F.new_root(), E.store()
    local folder = run(function(argv) return F.ac(froot, argv) end, froot, froot)
    local etcd, archive = run(function(argv) return E.ac(store, eroot, argv) end, eroot, store)
    for i = 1, #STEPS do
      local what = table.concat(STEPS[i], " ")
      assert.same(folder[i], etcd[i], what)
    end
    -- the work was done, not only refused alike
    assert.equal(1, etcd[8][1])                  -- through the newest: refused
    assert.equal(0, etcd[12][1])
    assert.equal("exported 'dev' to <ARCHIVE>/dev: 4 messages, 0 records, 2 acks, 0 cursors\n"
      .. "trimmed 'dev' through #3: 3 messages, 1 acks removed; #4 and later stay\n", etcd[12][2])
    assert.equal("posted #5 -> dev/0005-alice-m5.md\n", etcd[13][2])
    assert.equal(0, F.ac(archive, { "fsck" }).code)
    -- what is left in etcd: the newest messages, their tokens and acks, the counter
    assert.same({
      "c/dev/cur/bob",
      "c/dev/i/00000000000000000004",
      "c/dev/i/00000000000000000005",
      "c/dev/m/00000000000000000004/0004-alice-m4.md",
      "c/dev/m/00000000000000000005/0005-alice-m5.md",
      "c/dev/r/.acks/4/bob.json",
      "ch/dev",
      "ch/dev^Aseq",
    }, keys(store))
  end)

  it("removes messages and acks beyond one transaction and one listing page", function()
    local store, root = E.store(), F.new_root()
    assert.equal(0, E.ac(store, root, { "init", "big" }).code)
    -- 1100 messages (two transactions of at most 1000), the first 360 acked
    -- by 3 agents: 1080 ack keys (two pages of 1000), 360 seqs (four
    -- transactions of at most 100)
    local script = F.tmpdir() .. "/fill.lua"
    local f = assert(io.open(script, "w"))
    f:write([[
local ac = require "agentchat"
local ch = assert(assert(ac.open()):channel("big"))
for i = 1, 1100 do
  assert(ch:post{ from = "alice", title = "m" .. i, body = "x" })
end
for i = 1, 360 do
  for _, who in ipairs({ "bob", "carol", "dave" }) do
    assert(ch:ack(i, { as = who }))
  end
end
assert(ch:ack(1100, { as = "bob" }))
]])
    f:close()
    local r = E.ac(store, root, { "run", script })
    assert.equal(0, r.code, F.show(r.stderr))
    r = E.ac(store, root, { "trim", "big", "--through", "1099", "--archive", F.tmpdir() .. "/a" })
    assert.equal(0, r.code, F.show(r.stderr))
    assert.truthy(r.stdout:find("\ntrimmed 'big' through #1099: 1099 messages, 1080 acks removed; #1100 "
      .. "and later stay\n", 1, true), r.stdout)
    local left = {}
    for _, k in ipairs(keys(store)) do
      if k:find("^c/big/[mri]/") then
        left[#left + 1] = k
      end
    end
    assert.same({ "c/big/i/00000000000000001100", "c/big/m/00000000000000001100/1100-alice-m1100.md",
                  "c/big/r/.acks/1100/bob.json" }, left)
  end)
end)
