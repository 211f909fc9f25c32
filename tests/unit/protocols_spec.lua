-- agentchat.protocols (docs/protocols.md) through the Lua API, in this
-- process: the naming rules, the extra frontmatter of typed posts,
-- request/await/respond correlation and the team view.
local H = require "spec_helper"
local ac = require "agentchat"
local protocols = require "agentchat.protocols"
local sys = require "agentchat.sys"

local function fresh(members)
  local root = assert(ac.open(H.tmpdir() .. "/root"))
  return root, assert(root:init("dev", { members = members or { "lead", "bob", "carol" } }))
end

local function fails(code, ...)
  local v, msg, got, exit = ...
  assert.is_nil(v, "expected " .. code)
  assert.equal(code, got, tostring(msg))
  assert.is_string(msg)
  assert.is_false(msg:find("\n", 1, true) ~= nil, "one line: " .. msg)
  return msg, exit
end

local function files(ch)
  local out = {}
  for _, name in ipairs(H.ls(ch.root.path .. "/" .. ch.name)) do
    if name:match("%.md$") then
      out[#out + 1] = name
    end
  end
  return out
end

describe("naming rules", function()
  it("accepts the six types and lower-case, dot-namespaced names", function()
    for _, t in ipairs(protocols.TYPES) do
      assert.is_true(protocols.check_type(t), t)
    end
    for _, t in ipairs({ "decision", "a", "x1", "review_request", "acme.review_request", "a.b.c_9",
                         string.rep("a", 64) }) do
      assert.is_true(protocols.check_type(t), t)
    end
  end)

  it("refuses other type names with MESSAGE_INVALID_TYPE, exit 1", function()
    for _, t in ipairs({ "", "Message", "1x", "_x", "a-b", "a b", "a..b", ".a", "a.", "a.1b", "zo\u{eb}",
                         "a\nb", string.rep("a", 65), 42, false }) do
      local _, exit = fails("MESSAGE_INVALID_TYPE", protocols.check_type(t))
      assert.equal(1, exit)
    end
  end)

  it("knows the four roles and nothing else", function()
    for _, r in ipairs({ "parent", "child", "steer", "follow_up" }) do
      assert.is_true(protocols.check_role(r))
    end
    for _, r in ipairs({ "Parent", "boss", "", "follow-up", " child", 1 }) do
      fails("MESSAGE_INVALID_ROLE", protocols.check_role(r))
    end
    fails("MESSAGE_INVALID_ROLE", protocols.check_role(nil))
  end)

  it("checks request ids", function()
    for _, id in ipairs({ "3f2a", "req-1", "a.b:c@d_e-f", "X", string.rep("9", 128) }) do
      assert.is_true(protocols.check_request_id(id), id)
    end
    for _, id in ipairs({ "", " x", "-x", ".x", "a b", "a\nb", "a/b", "\u{eb}", string.rep("9", 129), 7 }) do
      fails("MESSAGE_INVALID_REQUEST_ID", protocols.check_request_id(id))
    end
  end)

  it("pairs request and response types", function()
    assert.equal("shutdown_response", protocols.response_type("shutdown_request"))
    assert.equal("acme.review_response", protocols.response_type("acme.review_request"))
    assert.is_nil(protocols.response_type("shutdown"))
    assert.is_nil(protocols.response_type("_request"))
    assert.is_nil(protocols.response_type(nil))
    assert.is_true(protocols.is_response_type("plan_approval_response"))
    assert.is_false(protocols.is_response_type("message"))
    assert.is_false(protocols.is_response_type(nil))
  end)

  it("makes fresh uuid4 request ids", function()
    local a, b = protocols.new_request_id(), protocols.new_request_id()
    assert.truthy(a:match("^%x+$") and #a == 32)
    assert.not_equal(a, b)
    assert.is_true(protocols.check_request_id(a))
  end)
end)

describe("extra frontmatter", function()
  it("orders type, request_id, role, then the other fields by key", function()
    local out = assert(protocols.extra_fields{ type = "plan_approval_request", request_id = "r1",
                                               role = "parent", fields = { zeta = "z", alpha = "a" } })
    assert.same({ { "type", "plan_approval_request" }, { "request_id", "r1" }, { "role", "parent" },
                  { "alpha", "a" }, { "zeta", "z" } }, out)
    assert.same({}, protocols.extra_fields{})
  end)

  it("wants a request id on request and response types", function()
    fails("MESSAGE_REQUEST_ID_REQUIRED", protocols.extra_fields{ type = "shutdown_request" })
    fails("MESSAGE_REQUEST_ID_REQUIRED", protocols.extra_fields{ type = "plan_approval_response" })
    assert.truthy(protocols.extra_fields{ type = "broadcast" })
    assert.truthy(protocols.extra_fields{ request_id = "r1" })
  end)

  it("refuses the typed keys under fields, and raises for a bad fields table", function()
    fails("MESSAGE_INVALID_FIELD", protocols.extra_fields{ fields = { role = "parent" } })
    assert.has_error(function()
      protocols.extra_fields{ fields = "x" }
    end)
    assert.has_error(function()
      protocols.extra_fields{ fields = { a = 1 } }
    end)
  end)

  it("writes them after title; a post without them is unchanged", function()
    local _, ch = fresh()
    local plain = assert(ch:post{ from = "lead", to = "bob", title = "t", body = "b" })
    local typed = assert(ch:post{ from = "lead", to = "bob", title = "t", body = "b", type = "shutdown_request",
                                  request_id = "r1", role = "parent", fields = { note = "x y" } })
    local dir = ch.root.path .. "/dev/"
    local a, b = H.read(dir .. plain.file), H.read(dir .. typed.file)
    local head = a:match("^(.-title: t\n)---\n")
    assert.truthy(head)
    assert.not_truthy(a:find("type:", 1, true))
    local ts = b:match("\nts: ([^\n]*)\n")
    assert.equal(head:gsub("seq: 1\n", "seq: 2\n"):gsub("\nts: [^\n]*\n", "\nts: " .. ts .. "\n")
      .. "type: shutdown_request\nrequest_id: r1\nrole: parent\nnote: x y\n---\nb\n", b)
    local m = assert(ch:peek(1)).messages[1]
    assert.equal("shutdown_request", m.type)
    assert.equal("r1", m.request_id)
    assert.equal("parent", m.role)
    assert.equal("x y", m.fields.note)
    local p = assert(ch:peek(2)).messages[1]
    assert.is_nil(p.type)
    assert.is_nil(p.request_id)
    assert.is_nil(p.role)
  end)

  it("checks keys and values in the store, writing nothing on failure", function()
    local _, ch = fresh()
    local cases = {
      { { fields = { Bad = "x" } }, "MESSAGE_INVALID_FIELD" },
      { { fields = { title = "x" } }, "MESSAGE_INVALID_FIELD" },
      { { fields = { note = "a\nfrom: mallory" } }, "MESSAGE_INVALID_FIELD" },
      { { fields = { note = " padded" } }, "MESSAGE_INVALID_FIELD" },
      { { fields = { note = "a\0b" } }, "MESSAGE_INVALID_FIELD" },
      { { type = "Bad" }, "MESSAGE_INVALID_TYPE" },
      { { role = "boss" }, "MESSAGE_INVALID_ROLE" },
      { { request_id = "a b" }, "MESSAGE_INVALID_REQUEST_ID" },
      { { type = "shutdown_request" }, "MESSAGE_REQUEST_ID_REQUIRED" },
    }
    for _, c in ipairs(cases) do
      local t = { from = "lead", title = "t", body = "b" }
      for k, v in pairs(c[1]) do
        t[k] = v
      end
      local _, exit = fails(c[2], ch:post(t))
      assert.equal(1, exit)
    end
    assert.same({}, files(ch))
    -- The next post still gets #1: no seq was taken by the failures.
    assert.equal(1, assert(ch:post{ from = "lead", title = "t", body = "b" }).seq)
  end)
end)

describe("request and respond", function()
  it("posts a request, finds an early response at once, and leaves cursors alone", function()
    local _, ch = fresh()
    local req = assert(ch:request{ from = "lead", to = "bob", type = "shutdown_request", body = "stop", wait = false })
    assert.equal(1, req.seq)
    assert.equal("bob", req.to)
    assert.is_true(protocols.check_request_id(req.request_id))
    local m = assert(ch:peek(1)).messages[1]
    assert.equal("shutdown_request", m.type)
    assert.equal(req.request_id, m.request_id)
    assert.equal("bob", m.to)
    assert.equal("shutdown_request", m.title)

    local res = assert(ch:respond{ from = "bob", request_id = req.request_id, approve = true, reason = "bye" })
    assert.equal("approved", res.decision)
    assert.equal("shutdown_response", res.type)
    assert.equal("lead", res.to)
    assert.equal(1, res.request_seq)
    local rm = assert(ch:peek(1)).messages[1]
    assert.equal("approved", rm.status)
    assert.equal("1", rm.reply_to)
    assert.equal("shutdown_response: approved", rm.title)

    -- timeout = 0: found without waiting at all.
    local r = assert(ch:await_response{ as = "lead", request_id = req.request_id, timeout = 0 })
    assert.is_true(r.approved)
    assert.equal("bye", r.reason)
    assert.equal("bob", r.from)
    assert.equal(2, r.seq)
    assert.equal(0, ch:cursor("lead"))
    assert.equal(0, ch:cursor("bob"))
  end)

  it("times out with ETIMEDOUT, exit 2, and returns the posted request", function()
    local _, ch = fresh()
    local none, msg, code, exit, req = ch:request{ from = "lead", to = "bob", type = "plan_approval_request",
                                                   timeout = 0.1, interval = 0.05 }
    assert.is_nil(none)
    assert.equal("ETIMEDOUT", code)
    assert.equal(2, exit)
    assert.truthy(msg:find("no response to request " .. req.request_id .. " from bob", 1, true))
    fails("ETIMEDOUT", ch:await_response{ as = "lead", request_id = req.request_id, timeout = 0 })
  end)

  it("takes the first response from the addressee and ignores the others", function()
    local _, ch = fresh()
    local req = assert(ch:request{ from = "lead", to = "bob", type = "shutdown_request", wait = false })
    -- carol is not the addressee: her "response" does not count.
    assert(ch:post{ from = "carol", to = "lead", title = "fake", body = "", status = "approved",
                    type = "shutdown_response", request_id = req.request_id })
    assert(ch:respond{ from = "bob", request_id = req.request_id, approve = false, reason = "busy" })
    -- A second response by hand (respond refuses it): the first one wins.
    assert(ch:post{ from = "bob", to = "lead", title = "again", body = "", status = "approved",
                    type = "shutdown_response", request_id = req.request_id })
    local r = assert(ch:await_response{ as = "lead", request_id = req.request_id, timeout = 0 })
    assert.is_false(r.approved)
    assert.equal("rejected", r.decision)
    assert.equal("busy", r.reason)
    assert.equal(3, r.seq)
  end)

  it("ignores a response older than the request", function()
    local _, ch = fresh()
    assert(ch:post{ from = "bob", to = "lead", title = "stale", body = "", status = "approved",
                    type = "shutdown_response", request_id = "r7" })
    local none, _, code = ch:request{ from = "lead", to = "bob", type = "shutdown_request", request_id = "r7",
                                      timeout = 0 }
    assert.is_nil(none)
    assert.equal("ETIMEDOUT", code)
  end)

  it("waits for several responses at once", function()
    local _, ch = fresh()
    local a = assert(ch:request{ from = "lead", to = "bob", type = "shutdown_request", wait = false })
    local b = assert(ch:request{ from = "lead", to = "carol", type = "shutdown_request", wait = false })
    assert(ch:respond{ from = "carol", request_id = b.request_id, decision = "approved" })
    local got, missing, requests = ch:await_responses{ as = "lead", request_ids = { a.request_id, b.request_id },
                                                       timeout = 0.1, interval = 0.05 }
    assert.is_table(got)
    assert.same({ a.request_id }, missing)
    assert.is_nil(got[a.request_id])
    assert.is_true(got[b.request_id].approved)
    assert.equal(2, #requests)
    assert.equal("carol", requests[2].to)
  end)

  it("refuses bad requests before writing anything", function()
    local _, ch = fresh()
    local base = { from = "lead", to = "bob", type = "shutdown_request" }
    local function with(k, v)
      local t = { timeout = 0 }
      for kk, vv in pairs(base) do
        t[kk] = vv
      end
      t[k] = v
      return t
    end
    fails("MESSAGE_INVALID_TYPE", ch:request(with("type", "shutdown")))
    fails("MESSAGE_INVALID_TYPE", ch:request(with("type", "Shutdown_request")))
    fails("REQUEST_INVALID_RECIPIENT", ch:request(with("to", "all")))
    fails("REQUEST_INVALID_RECIPIENT", ch:request(with("to", "bob,carol")))
    fails("REQUEST_INVALID_RECIPIENT", ch:request(with("to", " bob")))
    fails("REQUEST_INVALID_RECIPIENT", ch:request(with("to", "lead")))
    fails("MESSAGE_INVALID_ROLE", ch:request(with("role", "boss")))
    fails("MESSAGE_INVALID_REQUEST_ID", ch:request(with("request_id", "a b")))
    assert.same({}, files(ch))
    local none, _, code, exit, req = ch:request(with("request_id", "dup"))
    assert.is_nil(none)
    assert.equal("ETIMEDOUT", code)
    assert.equal(2, exit)
    assert.equal("dup", req.request_id)
    fails("REQUEST_EXISTS", ch:request(with("request_id", "dup")))
    assert.equal(1, #files(ch))
    assert.has_error(function()
      ch:request{ from = "lead", type = "shutdown_request" }
    end)
    assert.has_error(function()
      ch:request(with("timeout", "soon"))
    end)
  end)

  it("refuses bad responses before writing anything", function()
    local _, ch = fresh()
    local req = assert(ch:request{ from = "lead", to = "bob", type = "shutdown_request", wait = false })
    fails("REQUEST_NOT_FOUND", ch:respond{ from = "bob", request_id = "nope", approve = true })
    fails("MESSAGE_INVALID_REQUEST_ID", ch:respond{ from = "bob", request_id = "a b", approve = true })
    fails("REQUEST_INVALID_RECIPIENT", ch:respond{ from = "carol", request_id = req.request_id, approve = true })
    fails("REQUEST_INVALID_RECIPIENT", ch:respond{ from = "lead", request_id = req.request_id, approve = true })
    assert.equal(1, #files(ch))
    assert(ch:respond{ from = "bob", request_id = req.request_id, approve = true })
    fails("REQUEST_ALREADY_ANSWERED", ch:respond{ from = "bob", request_id = req.request_id, approve = false })
    assert.equal(2, #files(ch))
    assert.has_error(function()
      ch:respond{ from = "bob", request_id = req.request_id }
    end)
    assert.has_error(function()
      ch:respond{ from = "bob", request_id = req.request_id, decision = "maybe" }
    end)
    fails("REQUEST_NOT_FOUND", ch:await_response{ as = "carol", request_id = req.request_id, timeout = 0 })
  end)
end)

describe("team view", function()
  local NOW = math.floor(sys.time())

  local function iso(t)
    return os.date("!%Y-%m-%dT%H:%M:%S+00:00", t)
  end

  local function status(ch, agent, value, ts)
    assert(ch:event_post{ from = agent, harness = "test", type = "status", status = value, ts = ts })
  end

  local function by_name(team)
    local out = {}
    for _, m in ipairs(team.members) do
      out[m.name] = m
    end
    return out
  end

  it("follows the lifecycle working -> idle -> working -> shutdown", function()
    local _, ch = fresh({ "lead", "bob" })
    local function life()
      return by_name(assert(ch:team{ now = NOW })).bob.lifecycle
    end
    assert.equal("unknown", life())
    status(ch, "bob", "busy", "2029-12-31T23:59:00+00:00")
    assert.equal("working", life())
    status(ch, "bob", "idle", "2029-12-31T23:59:30+00:00")
    assert.equal("idle", life())
    status(ch, "bob", "blocked", "2029-12-31T23:59:40+00:00")
    assert.equal("working", life())
    local req = assert(ch:request{ from = "lead", to = "bob", type = "shutdown_request", wait = false })
    assert(ch:respond{ from = "bob", request_id = req.request_id, approve = false })
    assert.equal("working", life())
    req = assert(ch:request{ from = "lead", to = "bob", type = "shutdown_request", wait = false })
    assert(ch:respond{ from = "bob", request_id = req.request_id, approve = true })
    assert.equal("shutdown", life())
    status(ch, "bob", "ready", "2029-12-31T23:59:50+00:00")
    assert.equal("idle", life())
    status(ch, "bob", "stopped", "2029-12-31T23:59:55+00:00")
    assert.equal("shutdown", life())
  end)

  it("shows the latest status with its age, and who is silent", function()
    local root, ch = fresh({ "lead", "bob", "carol" })
    status(ch, "bob", "busy", iso(NOW - 4000))
    -- An offset other than UTC: the same instant, NOW - 3700.
    status(ch, "bob", "blocked", os.date("!%Y-%m-%dT%H:%M:%S+01:00", NOW - 3700 + 3600))
    -- dave is no member but posts; an old message (ts by hand) makes him silent.
    H.write(root.path .. "/dev/0003-dave-old.md", "---\nseq: 3\nfrom: dave\nto: all\nchannel: dev\n"
      .. "ts: " .. iso(NOW - 7200) .. "\nstatus: discussion\ntitle: old\n---\nhi\n")
    local team = assert(ch:team{ now = NOW, silent_after = 3600 })
    assert.equal("dev", team.channel)
    assert.equal(3600, team.silent_after)
    local names = {}
    for i, m in ipairs(team.members) do
      names[i] = m.name
    end
    assert.same({ "lead", "bob", "carol", "dave" }, names)
    local m = by_name(team)
    assert.equal("blocked", m.bob.status)
    assert.equal("working", m.bob.lifecycle)
    assert.equal(3700, m.bob.status_age)
    assert.equal(2, m.bob.status_seq)
    assert.equal("test", m.bob.harness)
    assert.is_true(m.bob.member)
    assert.is_false(m.dave.member)
    assert.equal(7200, m.dave.last_seen_age)
    assert.is_true(m.dave.silent)
    assert.is_true(m.lead.silent)           -- never seen
    assert.is_nil(m.lead.last_seen_age)
    assert.is_true(m.carol.silent)
    assert.same({ "lead", "carol", "dave" }, team.silent)
    -- bob's event messages are stamped now: he is not silent.
    assert.is_false(m.bob.silent)
    assert.is_true(#assert(ch:team{ silent_after = 1e9 }).silent == 2)   -- lead and carol: never seen
  end)

  it("does not count a shut-down member as silent, and raises for bad options", function()
    local _, ch = fresh({ "bob" })
    status(ch, "bob", "stopped", "2020-01-01T00:00:00+00:00")
    local m = by_name(assert(ch:team{ now = NOW + 1e6, silent_after = 0 })).bob
    assert.equal("shutdown", m.lifecycle)
    assert.is_false(m.silent)
    assert.has_error(function()
      ch:team{ silent_after = -1 }
    end)
    assert.has_error(function()
      ch:team("x")
    end)
  end)
end)
