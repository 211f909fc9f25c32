-- `agent-chat serve` on the etcd store (docs/web.md, docs/etcd.md): the
-- JSON API and the page read the same channels, a post from another process
-- reaches an open event stream through the store's own watch (its
-- watch_wait_fd; no polling: the idle CPU is printed), and SIGTERM stops it
-- cleanly. Runs under tests/etcd/with-cluster (tests/run-one), SKIP
-- without etcd.
local E = dofile(require("spec_helper").repo .. "/tests/functional/etcdsupport.lua")
local F = E.F
if not E.endpoints then
  return E.skip(describe, pending)
end
local S = require "servesupport"
local json = require "agentchat.json"

describe("serve on the etcd store", function()
  it("answers from the store and streams a post from another process", function()
    local store = E.store()
    local root = F.new_root()
    local function ok(argv)
      local r = E.ac(store, root, argv)
      assert.are.equal(0, r.code, F.describe(r))
      return r
    end
    ok({ "init", "dev", "--members", "alice,bob" })
    ok({ "post", "dev", "--from", "alice", "--to", "bob", "--title", "<b>on etcd</b>", "--body", "hi" })
    ok({ "task", "create", "dev", "t1", "--title", "Fix", "--from", "alice" })
    local srv = assert(S.start(root, {}, { AGENT_CHAT_STORE = store }))
    local v = json.loads(srv:get("/api/channels").body)
    assert.are.equal("dev", v.channels[1].name)
    assert.are.equal(2, v.channels[1].count)
    local tasks = json.loads(srv:get("/api/channels/dev/tasks").body)
    assert.are.equal("t1", tasks[1].id)
    local page = srv:get("/c/dev").body
    assert.truthy(page:find("&lt;b&gt;on etcd&lt;/b&gt;", 1, true))
    local s = srv:stream("/api/channels/dev/events")
    assert.truthy(S.eventually(function()
      return s.text():find("retry:", 1, true)
    end, 10))
    local cpu = srv:cpu_ticks()
    F.sleep(1.5)
    local idle = srv:cpu_ticks() - cpu
    local t0 = F.now()
    ok({ "post", "dev", "--from", "bob", "--to", "alice", "--title", "live", "--body", "x" })
    local got = S.eventually(function()
      return s.text():find("\nid: 3\n", 1, true)
    end, 15)
    io.stderr:write(string.format("# serve on etcd: SSE event read %.1f ms after the post started; "
      .. "%d CPU ticks in 1.5 s idle with a stream open\n", (F.now() - t0) * 1000, idle))
    s.stop()
    assert.truthy(got, "no event: " .. F.show(s.text()))
    local r = srv:stop("TERM")
    assert.are.equal(143, r.code)
    assert.are.equal("agent-chat: cancelled by user\n", r.stderr)
  end)
end)
