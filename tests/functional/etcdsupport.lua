-- tests/functional/etcdsupport.lua: shared code for the specs that run
-- commands against the etcd store (tests/functional/etcd_*_spec.lua). Not
-- a spec itself.
--
-- tests/run-one runs an etcd spec under tests/etcd/with-cluster, which
-- starts a 3-member cluster of its own on loopback (or prints a SKIP plan
-- when etcd is not installed) and passes its endpoints in
-- AGENT_CHAT_TEST_ETCD_ENDPOINTS.
--
--   local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
--   local F = E.F                      -- support.lua
--   if not E.endpoints then return E.skip(describe, pending) end
--   local store = E.store()            -- a fresh etcd://.../PREFIX per call
--   E.ac(store, root, argv, env)       -- F.run of `--root ROOT --store STORE ARGV...`
--   E.both(steps)                      -- the steps on a folder and on etcd,
--                                         outputs side by side, normalized
--   E.ctl(args...)                     -- tests/etcd/cluster.sh ARGS (kill, pause, ...)
local H = require "spec_helper"
local assert = require "luassert"   -- busted's (a dofile'd chunk sees Lua's own)
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local E = {}

local urls = os.getenv("AGENT_CHAT_TEST_ETCD_ENDPOINTS")
E.endpoints = urls and urls ~= "" and urls or nil
E.ctl_path = os.getenv("AGENT_CHAT_TEST_ETCD_CTL")

--- The endpoints as the store URL lists them ("127.0.0.1:1,127.0.0.1:2").
function E.hosts()
  return (E.endpoints:gsub("https?://", ""))
end

local counter = 0
local run_id = string.format("%d-%d", os.time(), math.random(1, 1e9))

--- A store URL with a prefix no other test uses.
function E.store(opts)
  counter = counter + 1
  local url = "etcd://" .. E.hosts() .. "/t/" .. run_id .. "/" .. counter
  if opts then
    url = url .. "?" .. opts
  end
  return url
end

--- busted's output for a spec that cannot run: one pending test.
function E.skip(describe, pending)     -- busted's, which a dofile'd chunk does not see
  describe("etcd store", function()
    pending("no etcd cluster: run this spec through tests/run-one (tests/etcd/with-cluster)")
  end)
end

function E.ac(store, root, argv, env)
  local a = { "--root", root, "--store", store }
  for _, w in ipairs(argv) do
    a[#a + 1] = w
  end
  return F.run_checked(a, { env = env })
end

--- Run cluster.sh ARGS; returns its stdout (trimmed) and whether it worked.
function E.ctl(...)
  local words = {}
  for i, w in ipairs({ ... }) do
    words[i] = F.sh(w)
  end
  local p = io.popen(F.sh(E.ctl_path) .. " " .. table.concat(words, " ") .. " 2>&1")
  local out = p:read("a")
  local ok = p:close()
  return (out:gsub("%s+$", "")), ok
end

-- What differs by nature between the two stores: the root as printed (a
-- path or a URL), the times and ids, and the fencing generations (etcd
-- only; etcd_fencing_spec checks them).
local function normalize(s, root, store)
  s = s or ""
  local function plain(x)
    return (x:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0"))
  end
  s = s:gsub(plain(store), "<ROOT>"):gsub(plain(root), "<ROOT>")
  s = s:gsub("ts: [^\n]+", "ts: <TS>")
  s = s:gsub("%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[%.%d]*[%+%-Z][%d:]*", "<TIME>")
  s = s:gsub(string.rep("%x", 32), "<ID>")     -- lock and transaction ids (uuid4)
  -- the fencing generations only a store that keeps them prints
  s = s:gsub("\ngeneration: %d+\n", "\n"):gsub(" generation=%d+\n", "\n")
  return s
end
E.normalize = normalize

--- Run each step (an argv list, or {sleep = S}) against a fresh folder root
--- and a fresh etcd store; returns two lists of {code, stdout, stderr},
--- normalized.
function E.both(steps, env)
  local folder, etcd = {}, {}
  local froot = F.new_root()
  local eroot = F.new_root()
  local store = E.store()
  for i, argv in ipairs(steps) do
    if argv.sleep then           -- { sleep = S }: let leases expire, on both
      os.execute("sleep " .. argv.sleep)
      argv = { "--version" }
    end
    local a = { "--root", froot }
    for _, w in ipairs(argv) do
      a[#a + 1] = w
    end
    local sort = argv.sort        -- { ..., sort = true }: an order that depends on random ids
    local ages = argv.ages        -- { ..., ages = true }: "1s" ago, which a second boundary moves
    local function out(x, root)
      x = normalize(x, root, store)
      if ages then
        x = x:gsub(" %d+s\n", " <AGE>\n"):gsub(" %d+s ", " <AGE> ")
      end
      if sort then
        local lines = F.lines(x)
        table.sort(lines)
        x = table.concat(lines, "\n")
      end
      return x
    end
    local r = F.run_checked(a, { env = env })
    folder[i] = { code = r.code, stdout = out(r.stdout, froot),
                  stderr = normalize(r.stderr, froot, store), argv = table.concat(argv, " ") }
    r = E.ac(store, eroot, argv, env)
    etcd[i] = { code = r.code, stdout = out(r.stdout, eroot),
                stderr = normalize(r.stderr, eroot, store), argv = table.concat(argv, " ") }
  end
  return folder, etcd
end

--- Run `steps` on a folder and on etcd (E.both) and assert that each step
--- printed the same and exited the same; the steps whose index is in `ok`
--- must succeed (the comparison is about work done, not only errors).
function E.check_same(steps, ok)
  local folder, etcd = E.both(steps)
  for _, i in ipairs(ok or {}) do
    assert.equal(0, folder[i].code, "step " .. i .. " (" .. folder[i].argv .. ") failed on the folder: "
      .. F.show(folder[i].stderr))
  end
  for i = 1, #folder do
    local f, e = folder[i], etcd[i]
    assert.are.same({ f.code, f.stdout, f.stderr }, { e.code, e.stdout, e.stderr },
      "step " .. i .. " (" .. f.argv .. "): folder exit " .. f.code .. " " .. F.show(f.stdout)
        .. F.show(f.stderr) .. " / etcd exit " .. e.code .. " " .. F.show(e.stdout) .. F.show(e.stderr))
  end
end

--- A channel `dev` on a fresh etcd store: the store, its root folder, and
--- a runner of `agent-chat --root ROOT --store STORE ARGS...`.
function E.fresh(opts, ...)
  local store, root = E.store(opts), F.new_root()
  local function ac(...)
    return E.ac(store, root, { ... })
  end
  assert(ac("init", "dev").code == 0)
  for _, argv in ipairs({ ... }) do
    local r = ac(table.unpack(argv))
    assert(r.code == 0, F.describe(r))
  end
  return store, root, ac
end

E.F = F
return E
