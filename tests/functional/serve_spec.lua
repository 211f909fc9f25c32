-- Functional specs for `agent-chat serve` (docs/web.md) against a running
-- server on a free loopback port: status codes, the JSON API's shapes,
-- the page (static, without JavaScript), event streams after a post (the
-- latency printed, not asserted), tokens, the read-only methods, hostile
-- content escaped in HTML and JSON, limits, and SIGTERM / SIGINT.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local S = require "servesupport"
local json = require "agentchat.json"

local HOSTILE_TITLE = [[<script>window.__pwned=1</script>" onerror="window.__pwned=2]]
local HOSTILE_BODY = [[<img src=x onerror="window.__pwned=3"> " onerror=alert(1) <script>alert(2)</script>
[click](javascript:alert(3)) **bold** `<b>code</b>`]]
local HOSTILE_NAME = [[<img src=x onerror=alert(4)>]]

local function decode(r)
  local v, msg = json.loads(r.body)
  assert(v, "not JSON: " .. tostring(msg) .. ": " .. F.show(r.body))
  return v
end

-- A page or fragment shows no markup of the hostile strings: every `<` of
-- them is escaped, so none of their tags or attributes exists.
local function assert_escaped(html)
  assert.is_nil(html:find("<script>window", 1, true))
  assert.is_nil(html:find("<script>alert", 1, true))
  assert.is_nil(html:find("<img", 1, true))
  assert.is_nil(html:find('" onerror="', 1, true))
  assert.is_nil(html:find("javascript:", 1, true) and html:find('href="javascript:', 1, true))
  -- exactly one script element: the page's own
  local n = select(2, html:gsub("<script", ""))
  assert.are.equal(1, n)
end

describe("serve", function()
  local root, srv

  setup(function()
    root = F.new_root()
    F.init(root, "dev", "--members", "alice,bob", "--topic", "the demo")
    F.init(root, "other")
    F.post(root, "dev", "alice", "hello", "first **message**", "--to", "bob")
    F.post(root, "dev", "bob", HOSTILE_TITLE, HOSTILE_BODY)
    F.post(root, "dev", HOSTILE_NAME, "from a hostile name", "b", "--to", HOSTILE_NAME)
    F.ok(root, { "task", "create", "dev", "t1", "--title", "Fix <b>it</b>", "--from", "alice" })
    F.ok(root, { "task", "claim", "dev", "t1", "--as", "bob", "--lease", "600" })
    F.ok(root, { "lock", "dev", "src/a.c", "--as", "bob", "--ttl", "300" })
    local err
    srv, err = S.start(root)
    assert(srv, "serve did not start: " .. F.show(err and (err.stderr .. err.stdout)))
  end)

  teardown(function()
    if srv then
      srv:stop("KILL")
    end
  end)

  it("prints the address it listens on, on loopback", function()
    assert.truthy(F.read(srv.dir .. "/out"):match("^serving .* at http://127%.0%.0%.1:%d+/\n$"))
  end)

  it("lists the channels with counts, topic, members and unread per member", function()
    local r = srv:get("/api/channels")
    assert.are.equal(200, r.status)
    assert.truthy(r.headers["content-type"]:match("^application/json"))
    assert.are.equal("nosniff", r.headers["x-content-type-options"])
    local v = decode(r)
    assert.are.equal(2, #v.channels)
    local dev = v.channels[1]
    assert.are.equal("dev", dev.name)
    assert.are.equal(6, dev.count)
    assert.are.equal("the demo", dev.topic)
    assert.are.same({ "alice", "bob" }, { dev.members[1], dev.members[2] })
    assert.are.equal(6, dev.last_seq)
    -- bob: #1 (to bob) and #4 (alice's task.created, to all); #3 goes to
    -- the hostile name, #2, #5 and #6 are his own. alice: #2, #5, #6.
    local unread = {}
    for _, u in ipairs(dev.unread) do
      unread[u.member] = u.count
    end
    assert.are.equal(2, unread.bob)
    assert.are.equal(3, unread.alice)
    assert.are.equal("other", v.channels[2].name)
  end)

  it("pages messages backwards and forwards", function()
    local v = decode(srv:get("/api/channels/dev/messages?limit=2"))
    assert.are.equal(2, #v.messages)
    assert.are.equal(5, v.messages[1].seq)
    assert.are.equal(6, v.messages[2].seq)
    assert.are.equal(5, v.older)
    assert.are.equal(6, v.count)
    assert.are.equal("audit", v.messages[2].kind)
    v = decode(srv:get("/api/channels/dev/messages?before=5&limit=2"))
    assert.are.same({ 3, 4 }, { v.messages[1].seq, v.messages[2].seq })
    v = decode(srv:get("/api/channels/dev/messages?after=1&limit=1"))
    assert.are.equal(1, #v.messages)
    assert.are.equal(2, v.messages[1].seq)
    local m = decode(srv:get("/api/channels/dev/messages?after=0&limit=1")).messages[1]
    assert.are.equal("alice", m.from)
    assert.are.equal("bob", m.to)
    assert.are.equal("hello", m.title)
    assert.are.equal("message", m.kind)
    assert.are.equal("first **message**\n", m.body)
    assert.are.equal(400, srv:get("/api/channels/dev/messages?limit=x").status)
    assert.are.equal(400, srv:get("/api/channels/dev/messages?before=3&after=1").status)
  end)

  it("serves tasks, locks, team, state and receipts", function()
    local tasks = decode(srv:get("/api/channels/dev/tasks"))
    assert.are.equal("t1", tasks[1].id)
    assert.are.equal("bob", tasks[1].owner)
    assert.are.equal("in_progress", tasks[1].status)
    assert.truthy(tasks[1].lease_expires_at)
    local locks = decode(srv:get("/api/channels/dev/locks"))
    assert.are.equal("bob", locks[1].owner)
    assert.are.equal("src/a.c", locks[1].paths[1].display_path)
    local team = decode(srv:get("/api/channels/dev/team"))
    assert.are.equal("dev", team.channel)
    assert.are.equal("alice", team.members[1].name)
    local state = decode(srv:get("/api/channels/dev/state"))
    assert.are.equal("dev", state.channel)
    local rec = decode(srv:get("/api/channels/dev/receipts/1"))
    assert.are.equal(1, rec.seq)
    assert.are.equal("bob", rec.addressees[1].agent)
    assert.are.equal("delivered", rec.addressees[1].state)
    assert.are.equal(404, srv:get("/api/channels/dev/receipts/99").status)
    assert.are.equal("RECEIPT_INVALID_SEQ", decode(srv:get("/api/channels/dev/receipts/x")).error.code)
  end)

  it("refuses unknown channels, bad names and paths that try to leave the root", function()
    local r = srv:get("/api/channels/nope/messages")
    assert.are.equal(404, r.status)
    assert.are.equal("CHANNEL_NOT_FOUND", decode(r).error.code)
    r = srv:get("/api/channels/.hidden/tasks")
    assert.are.equal(400, r.status)
    assert.are.equal("CHANNEL_INVALID_NAME", decode(r).error.code)
    for _, p in ipairs({ "/api/channels/..%2F..%2Fetc/messages", "/api/channels/%2e%2e/tasks",
                         "/c/..%2Fdev", "/api/channels/dev/../other/tasks", "/static/../serve.lua",
                         "/api/channels/dev/nothing", "/nothing" }) do
      r = srv:get(p, { raw_url = srv.url .. p })
      assert.truthy(r.status == 404 or r.status == 400, p .. " -> " .. tostring(r.status))
      assert.is_nil(r.body:find("root:", 1, true))
    end
  end)

  it("is read-only: every method but GET and HEAD gets 405, a body 413", function()
    for _, m in ipairs({ "POST", "PUT", "DELETE", "PATCH", "OPTIONS" }) do
      local r = srv:get("/api/channels", { method = m })
      assert.are.equal(405, r.status, m)
      assert.are.equal("GET, HEAD", r.headers.allow)
    end
    local r = srv:get("/api/channels", { method = "POST", data = "x=1" })
    assert.are.equal(405, r.status)
    r = srv:get("/api/channels", { method = "GET", data = "x=1" })
    assert.are.equal(413, r.status)
    r = srv:get("/api/channels", { head = true })
    assert.are.equal(200, r.status)
    assert.is_nil(r.body:find('"channels"', 1, true))   -- headers only
    -- the channel still has its six messages
    assert.are.equal(6, decode(srv:get("/api/channels")).channels[1].count)
  end)

  it("renders the page without JavaScript: timeline, board, locks, team, channel list", function()
    local r = srv:get("/c/dev")
    assert.are.equal(200, r.status)
    assert.truthy(r.headers["content-type"]:match("^text/html"))
    assert.truthy(r.headers["content-security-policy"]:find("script-src 'self'", 1, true))
    local html = r.body
    assert.truthy(html:find('<article class="msg message" id="m-1"', 1, true))
    assert.truthy(html:find("<strong>message</strong>", 1, true))
    -- audit traffic folded
    assert.truthy(html:find('<details class="msg audit" id="m-4"', 1, true))
    assert.truthy(html:find('class="column in_progress"', 1, true))
    assert.truthy(html:find('<span class="owner">bob</span>', 1, true))
    assert.truthy(html:find('data%-expires="%d+" data%-what="lease ends"'))
    assert.truthy(html:find("<code>src/a.c</code>", 1, true))
    assert.truthy(html:find('<span class="name">alice</span>', 1, true))
    assert.truthy(html:find('href="/c/other"', 1, true))
    assert.truthy(html:find('data-last-seq="6"', 1, true))
    assert.are.equal(200, srv:get("/").status)
    assert.truthy(srv:get("/static/app.js").headers["content-type"]:match("^text/javascript"))
    assert.truthy(srv:get("/static/app.css").body:find("body", 1, true))
    for _, f in ipairs({ "board", "locks", "team" }) do
      assert.are.equal(200, srv:get("/c/dev/fragment/" .. f).status)
    end
  end)

  it("escapes hostile titles, bodies and names in the page", function()
    local html = srv:get("/c/dev").body
    assert_escaped(html)
    assert.truthy(html:find("&lt;script&gt;window.__pwned=1&lt;/script&gt;&quot; onerror=&quot;window.__pwned=2",
      1, true))
    assert.truthy(html:find("&lt;img src=x onerror=&quot;window.__pwned=3&quot;&gt;", 1, true))
    assert.truthy(html:find("<code>&lt;b&gt;code&lt;/b&gt;</code>", 1, true))
    assert.truthy(html:find("[click](javascript:alert(3))", 1, true))
    assert.truthy(html:find('<span class="from">&lt;img src=x onerror=alert(4)&gt;</span>', 1, true))
    assert.truthy(html:find("Fix &lt;b&gt;it&lt;/b&gt;", 1, true))
  end)

  it("escapes hostile content in JSON: valid, exact once decoded, no raw '<'", function()
    local r = srv:get("/api/channels/dev/messages?after=1&limit=2")
    assert.is_nil(r.body:find("<", 1, true))
    assert.truthy(r.body:find("\\u003cscript\\u003e", 1, true))
    local v = decode(r)
    assert.are.equal(HOSTILE_TITLE, v.messages[1].title)
    assert.are.equal(HOSTILE_BODY .. "\n", v.messages[1].body)
    assert.are.equal(HOSTILE_NAME, v.messages[2].from)
  end)

  it("escapes a hostile channel name in the channel list and its links", function()
    F.init(root, '"><b>x')
    local html = srv:get("/").body
    assert.is_nil(html:find('"><b>x', 1, true))
    assert.truthy(html:find("&quot;&gt;&lt;b&gt;x", 1, true))
    assert.truthy(html:find('href="/c/%22%3E%3Cb%3Ex"', 1, true))
    assert.are.equal(200, srv:get("/c/%22%3E%3Cb%3Ex").status)
  end)

  it("refuses a Host that is not a loopback name (DNS rebinding) when there is no token", function()
    assert.are.equal(403, srv:get("/api/channels", { headers = { "Host: evil.example" } }).status)
    assert.are.equal(200, srv:get("/api/channels", { headers = { "Host: localhost:1" } }).status)
  end)

  it("streams a post to the channel's event stream as it happens (latency printed)", function()
    local s = srv:stream("/api/channels/dev/events")
    assert.truthy(S.eventually(function()
      return s.text():find("retry: 2000", 1, true)
    end, 10), "no stream")
    local before_cpu = srv:cpu_ticks()
    F.sleep(1.5)
    -- Idle, with a stream open: no polling loop, so (almost) no CPU.
    local idle = srv:cpu_ticks() - before_cpu
    local t0 = F.now()
    local seq = F.post(root, "dev", "alice", "live one", "it is <b>live</b>")
    local posted = F.now()
    local got = S.eventually(function()
      return s.text():find("\nid: " .. seq .. "\n", 1, true)
    end, 10)
    local latency = (F.now() - t0) * 1000
    s.stop()
    io.stderr:write(string.format("# serve: SSE event read %.1f ms after the post started (the post process "
      .. "itself took %.1f ms); %d CPU ticks in 1.5 s idle with a stream open\n", latency, (posted - t0) * 1000,
      idle))
    assert.truthy(got, "the event did not arrive: " .. F.show(s.text()))
    assert.is_true(idle <= 5, "idle CPU ticks: " .. idle)
    local data = s.text():match("\nid: " .. seq .. "\nevent: message\ndata: ([^\n]*)\n\n")
    local ev = json.loads(data)
    assert.are.equal(seq, ev.seq)
    assert.are.equal("live one", ev.message.title)
    assert.truthy(ev.html:find('id="m-' .. seq .. '"', 1, true))
    assert.truthy(ev.html:find("it is &lt;b&gt;live&lt;/b&gt;", 1, true))
  end)

  it("catches a (re)connecting stream up from ?after= or Last-Event-ID", function()
    local s = srv:stream("/api/channels/dev/events?after=5")
    assert.truthy(S.eventually(function()
      return s.text():find("\nid: 6\n", 1, true)
    end, 10))
    s.stop()
    assert.is_nil(s.text():find("\nid: 5\n", 1, true))
    s = srv:stream("/api/channels/dev/events?after=1", { headers = { "Last-Event-ID: 4" } })
    assert.truthy(S.eventually(function()
      return s.text():find("\nid: 5\n", 1, true)
    end, 10))
    s.stop()
    assert.is_nil(s.text():find("\nid: 4\n", 1, true))
    assert.is_nil(s.text():find("\nid: 2\n", 1, true))
  end)
end)

describe("serve with a token", function()
  local root, srv
  local TOKEN = "s3cret-token-for-tests"

  setup(function()
    root = F.new_root()
    F.init(root, "dev")
    local tf = F.tmpdir() .. "/token"
    F.write(tf, TOKEN .. "\n")
    srv = assert(S.start(root, { "--token-file", tf, "--max-streams", "1" }))
  end)

  teardown(function()
    if srv then
      srv:stop("KILL")
    end
  end)

  it("refuses every request without the token (401) and takes it as Bearer or ?token=", function()
    for _, p in ipairs({ "/", "/api/channels", "/static/app.js", "/api/channels/dev/events" }) do
      local r = srv:get(p)
      assert.are.equal(401, r.status, p)
      assert.truthy(r.headers["www-authenticate"]:match("^Bearer"))
    end
    assert.are.equal(401, srv:get("/api/channels?token=wrong").status)
    assert.are.equal(401, srv:get("/api/channels", { headers = { "Authorization: Bearer wrong" } }).status)
    assert.are.equal(401, srv:get("/api/channels", { headers = { "Authorization: Basic " .. TOKEN } }).status)
    assert.are.equal(200, srv:get("/api/channels", { headers = { "Authorization: Bearer " .. TOKEN } }).status)
    assert.are.equal(200, srv:get("/api/channels?token=" .. TOKEN).status)
    -- the page's links and script carry it
    local html = srv:get("/?token=" .. TOKEN).body
    assert.truthy(html:find("/static/app.js?token=" .. TOKEN, 1, true))
    -- with a token, any Host is fine
    assert.are.equal(200, srv:get("/api/channels?token=" .. TOKEN, { headers = { "Host: example.org" } }).status)
  end)

  it("caps concurrent event streams (--max-streams) with 503", function()
    local s = srv:stream("/api/channels/dev/events?token=" .. TOKEN)
    assert.truthy(S.eventually(function()
      return s.text():find("retry:", 1, true)
    end, 10))
    local r = srv:get("/api/channels/dev/events?token=" .. TOKEN)
    s.stop()
    assert.are.equal(503, r.status)
  end)
end)

describe("serve refuses", function()
  it("a non-loopback address without a token, bad --listen and bad tokens (exit 2, one line)", function()
    local root = F.new_root()
    local cases = {
      { { "--listen", "0.0.0.0:0" }, "SERVE_TOKEN_REQUIRED" },
      { { "--listen", "localhost:80" }, "SERVE_USAGE" },
      { { "--listen", "127.0.0.1" }, "SERVE_USAGE" },
      { { "--listen", "127.0.0.1:70000" }, "SERVE_USAGE" },
      { { "--token", "short" }, "SERVE_USAGE" },
      { { "--token", "has space in it" }, "SERVE_USAGE" },
      { { "--channels", "a,../b" }, "CHANNEL_INVALID_NAME" },
    }
    for _, c in ipairs(cases) do
      local argv = { "--root", root, "serve" }
      for _, a in ipairs(c[1]) do
        argv[#argv + 1] = a
      end
      local r = F.run(argv)
      assert.is_nil(F.error_line(r.stderr), F.describe(r))
      assert.truthy(r.stderr:find(c[2], 1, true) or (c[2] == "CHANNEL_INVALID_NAME" and r.code == 1),
        F.describe(r))
      assert.are_not.equal(0, r.code)
    end
  end)

  it("a port that is taken (SERVE_LISTEN, exit 1)", function()
    local root = F.new_root()
    F.init(root, "dev")
    local srv = assert(S.start(root))
    local r = F.run({ "--root", root, "serve", "--listen", "127.0.0.1:" .. srv.port })
    srv:stop("TERM")
    assert.are.equal(1, r.code)
    assert.truthy(r.stderr:match("^agent%-chat: SERVE_LISTEN: could not listen on 127%.0%.0%.1 port %d+: "))
  end)
end)

describe("serve stops cleanly", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "dev")
  end)

  it("on SIGTERM, with an event stream open: killed by SIGTERM after cleanup, nothing left", function()
    local srv = assert(S.start(root))
    local s = srv:stream("/api/channels/dev/events")
    assert.truthy(S.eventually(function()
      return s.text():find("retry:", 1, true)
    end, 10))
    local r = srv:stop("TERM")
    s.stop()
    assert.are.equal(128 + 15, r.code, r.stderr)
    assert.are.equal("agent-chat: cancelled by user\n", r.stderr)
    assert.is_nil(F.read("/proc/" .. srv.pid .. "/stat"))
  end)

  it("on SIGINT: exit 130", function()
    local srv = assert(S.start(root))
    assert.are.equal(200, srv:get("/api/channels").status)
    local r = srv:stop("INT")
    assert.are.equal(130, r.code, r.stderr)
    assert.are.equal("agent-chat: cancelled by user\n", r.stderr)
  end)
end)
