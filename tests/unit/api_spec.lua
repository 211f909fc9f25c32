-- The agentchat Lua API, exercised inside the binary (real C bindings).
local H = require "spec_helper"
local ac = require "agentchat"
local store = require "agentchat.store"
local sys = require "agentchat.sys"

local function fresh_root()
  return assert(ac.open(H.tmpdir() .. "/root"))
end

describe("agentchat paths", function()
  it("normalizes like pathlib", function()
    local cases = {
      { "", "." }, { ".", "." }, { "./x", "x" }, { "a//b/", "a/b" }, { "/", "/" },
      { "//srv/x", "//srv/x" }, { "///x", "/x" }, { "a/./b/.", "a/b" }, { "../x", "../x" },
    }
    for _, c in ipairs(cases) do
      assert.equal(c[2], ac.normalize_path(c[1]), c[1])
    end
  end)

  it("joins as Python prints root / name", function()
    assert.equal("ch", ac.join_path(".", "ch"))
    assert.equal("/ch", ac.join_path("/", "ch"))
    assert.equal("r/ch", ac.join_path("r", "ch"))
  end)

  it("resolves the root: flag, default_root, then the environment", function()
    assert.equal("x/y", ac.resolve_root("x//y/"))
    local saved = ac.default_root
    ac.default_root = "/some/where"
    assert.equal("/some/where", ac.resolve_root(nil))
    ac.default_root = saved
  end)
end)

describe("agentchat channels", function()
  it("creates, reopens and refuses to recreate a channel", function()
    local root = fresh_root()
    local ch = assert(root:init("dev", { members = { "alice", "bob" }, topic = " T " }))
    assert.equal("dev", ch.name)
    local meta = assert(ch:meta())
    assert.same({ "alice", "bob" }, meta.members)
    assert.equal(" T ", meta.topic)
    local none, msg, code = root:init("dev")
    assert.is_nil(none)
    assert.equal("CHANNEL_EXISTS", code)
    assert.equal("channel 'dev' already exists", msg)
    assert.truthy(root:channel("dev"))
  end)

  it("writes _meta.json exactly like Python's json.dumps(indent=2)", function()
    local root = fresh_root()
    assert(root:init("u", { members = { "zo\u{eb}", "\u{674e}" }, topic = "unicode ok" }))
    local text = H.read(root.path .. "/u/_meta.json")
    assert.truthy(text:find('^{\n  "channel": "u",\n  "members": %[\n    "zo\\u00eb",\n    "\\u674e"\n  %],\n'))
    assert.truthy(text:find('\n  "topic": "unicode ok",\n  "created": "[^"]+"\n}$'))
  end)

  it("reports invalid and missing channels with stable codes", function()
    local root = fresh_root()
    for _, name in ipairs({ "", ".", "..", "a/b", "a\\b", "a:b", ".x", "_x", "a\tb", ("n"):rep(300) }) do
      local ch, _, code = root:channel(name)
      assert.is_nil(ch)
      assert.equal("CHANNEL_INVALID_NAME", code, name)
    end
    local ch, msg, code, exit = root:channel("nosuch")
    assert.is_nil(ch)
    assert.equal("CHANNEL_NOT_FOUND", code)
    assert.equal(1, exit)
    assert.equal("channel 'nosuch' not found under " .. root.path .. " (run: init nosuch)", msg)
  end)

  it("lists channels with counts and the last message", function()
    local root = fresh_root()
    local a = assert(root:init("a"))
    assert(root:init("b"))
    assert(a:post{ from = "x", title = "one", body = "1" })
    assert(a:post{ from = "y", title = "two", body = "2" })
    local list = assert(root:channels())
    assert.equal(2, #list)
    assert.equal("a", list[1].name)
    assert.equal(2, list[1].count)
    assert.equal("two", list[1].last.title)
    assert.equal("y", list[1].last.from)
    assert.is_nil(list[2].last)
    assert.same({ "a", "b" }, root:channel_names())
  end)

  it("gives the roster", function()
    local root = fresh_root()
    local ch = assert(root:init("r", { members = { "m" } }))
    assert(ch:post{ from = "x", title = "t", body = "b" })
    assert.same({ channel = "r", topic = "", members = { "m" }, messages = 1 }, ch:roster())
  end)
end)

describe("agentchat messages", function()
  local ch
  before_each(function()
    ch = assert(fresh_root():init("m"))
  end)

  it("posts with consecutive seqs and exact file names", function()
    local r1 = assert(ch:post{ from = "Alice B", title = "Hello: World", body = "x" })
    local r2 = assert(ch:post{ from = "bob", title = "", body = "" })
    assert.equal(1, r1.seq)
    assert.equal("0001-alice-b-hello-world.md", r1.file)
    assert.equal(2, r2.seq)
    assert.equal("0002-bob-msg.md", r2.file)
  end)

  it("writes the frontmatter in the fixed order, reply_to only when non-zero", function()
    assert(ch:post{ from = "a", to = "b,c", title = "t", body = "body  \n\n", reply = 7, status = "q" })
    local m = assert(ch:peek(1)).messages[1]
    assert.truthy(m.text:find("^%-%-%-\nseq: 1\nfrom: a\nto: b,c\nreply_to: 7\nchannel: m\n"
      .. "ts: [^\n]+\nstatus: q\ntitle: t\n%-%-%-\nbody\n$"))
    assert(ch:post{ from = "a", to = "", title = "t", body = "x", reply = 0 })
    m = assert(ch:peek(1)).messages[1]
    assert.is_nil(m.text:find("reply_to", 1, true))
    assert.equal("all", m.to)
  end)

  it("returns INVALID_UTF8 / INVALID_TEXT instead of writing bad text", function()
    local r, _, code = ch:post{ from = "a", title = "\xff", body = "x" }
    assert.is_nil(r)
    assert.equal("INVALID_UTF8", code)
    r, _, code = ch:post{ from = "a\0b", title = "t", body = "x" }
    assert.is_nil(r)
    assert.equal("INVALID_TEXT", code)
    assert.equal(0, assert(ch:peek(5)).count)
  end)

  it("raises on misuse", function()
    assert.has_error(function() ch:post("nope") end)
    assert.has_error(function() ch:post{ title = "t", body = "b" } end)
    assert.has_error(function() ch:post{ from = 1, title = "t", body = "b" } end)
    assert.has_error(function() ch:read{} end)
  end)

  it("reads relevant messages and moves the cursor to the highest seq seen", function()
    assert(ch:post{ from = "alice", title = "all", body = "1" })
    assert(ch:post{ from = "alice", to = "carol", title = "for carol", body = "2" })
    assert(ch:post{ from = "bob", title = "own", body = "3" })
    assert(ch:post{ from = "alice", to = "[bob, dave]", title = "for bob", body = "4" })
    local b = assert(ch:read{ as = "bob" })
    local seqs = {}
    for _, m in ipairs(b.messages) do
      seqs[#seqs + 1] = m.seq
    end
    assert.same({ 1, 4 }, seqs)
    assert.equal(0, b.cursor_before)
    assert.equal(4, ch:cursor("bob"))
    b = assert(ch:read{ as = "bob" })
    assert.equal(0, #b.messages)
    assert.equal(4, b.cursor_before)
  end)

  it("peeks without moving cursors; --all shows everything", function()
    for i = 1, 3 do
      assert(ch:post{ from = "bob", title = "m" .. i, body = tostring(i) })
    end
    local b = assert(ch:read{ as = "bob", peek = true })
    assert.equal(0, #b.messages)
    assert.equal(0, ch:cursor("bob"))
    b = assert(ch:read{ as = "bob", all = true, peek = true })
    assert.equal(3, #b.messages)
    assert.equal(0, ch:cursor("bob"))
    b = assert(ch:peek(2))
    assert.equal(2, #b.messages)
    assert.equal("m2", b.messages[1].title)
    assert.equal(0, #assert(ch:peek(0)).messages)
  end)

  it("fetch + commit is read in two steps", function()
    assert(ch:post{ from = "a", title = "t", body = "b" })
    local b = assert(ch:fetch{ as = "z" })
    assert.equal(0, ch:cursor("z"))
    assert(ch:commit(b))
    assert.equal(1, ch:cursor("z"))
  end)

  it("lowers a cursor that is past the last message", function()
    assert(ch:post{ from = "a", title = "t", body = "b" })
    assert(ch:set_cursor("z", 99))
    local b = assert(ch:read{ as = "z" })
    assert.equal(99, b.cursor_before)
    assert.equal(1, ch:cursor("z"))
  end)

  it("waits: immediate when unread, ETIMEDOUT otherwise", function()
    local got, msg, code = ch:wait{ as = "bob", timeout = 0 }
    assert.is_nil(got)
    assert.equal("timed out", msg)
    assert.equal("ETIMEDOUT", code)
    assert(ch:post{ from = "a", to = "bob", title = "t", body = "b" })
    local t0 = sys.monotonic()
    got = assert(ch:wait{ as = "bob", timeout = 10 })
    assert.is_true(sys.monotonic() - t0 < 5)
    assert.equal(1, #got.messages)
    assert.equal(1, ch:cursor("bob"))
  end)

  it("claims legacy markers once", function()
    local dir = ch.root.path .. "/m"
    H.write(dir .. "/task-7.md", "seven")
    assert.equal("task-7.CLAIMED-bob-smith.md", assert(ch:claim_marker("task-7.md", { as = "Bob Smith" })))
    local r, msg, code, exit = ch:claim_marker("task-7.md", { as = "carol" })
    assert.is_nil(r)
    assert.equal("CLAIM_LOST", code)
    assert.equal(3, exit)
    assert.equal("task 'task-7.md' already claimed or missing (lost the race)", msg)
    r, msg, code = ch:claim_marker("notes.md", { as = "carol" })
    assert.is_nil(r)
    assert.equal("CLAIM_INVALID_NAME", code)
    assert.equal("invalid task name (expected task-<id>.md marker): 'notes.md'", msg)
  end)
end)

describe("agentchat messages as read shows them (shown, printed)", function()
  local kinds = require "agentchat.kinds"
  local ch

  -- A channel with messages for bob, one for carol, an event, and a file
  -- that is not UTF-8.
  before_each(function()
    ch = assert(fresh_root():init("s"))
    assert(ch:post{ from = "alice", to = "bob", title = "one", body = "first  \n\n" })
    assert(ch:post{ from = "alice", to = "carol", title = "two", body = "not for bob" })
    assert(ch:post{ from = "alice", title = "three", body = "x", status = "event.note" })
    H.write(ch.root.path .. "/s/0004-alice-bad.md", "---\nseq: 4\nfrom: alice\nto: all\n---\nbad \xff byte\n")
    assert(ch:post{ from = "alice", title = "five", body = "last" })
  end)

  local function whole(opts)
    opts.as = "bob"
    return assert(ch:fetch(opts))
  end

  it("shown: {seq, status, shown} per message, or the name and decode error", function()
    local w, s = whole({}), whole({ shown = true })
    assert.equal(#w.messages, #s.messages)
    for i, m in ipairs(s.messages) do
      assert.equal(w.messages[i].seq, m.seq)
      assert.equal(w.messages[i].status, m.status)
      assert.equal(kinds.shown_text(w.messages[i]), kinds.shown_text(m))
      assert.equal(kinds.shown_bytes(w.messages[i]), kinds.shown_bytes(m))
      assert.is_nil(m.fields)
    end
    assert.equal("0004-alice-bad.md", s.messages[3].name)
    assert.truthy(s.messages[3].decode_error)
    assert.equal(w.cursor, s.cursor)
  end)

  it("printed: what read prints, with n, the same whichever way it is made", function()
    local w = whole({})
    local p = whole({ printed = true })
    assert.same({}, p.messages)
    assert.equal(#w.messages, p.n)
    assert.equal(kinds.print(w.messages), p.printed)
    assert.truthy(p.printed:find("\n(could not read message 0004-alice-bad.md: ", 1, true))
    assert.equal(w.cursor, p.cursor)
    assert.equal(0, p.remaining)
    -- kinds and budgets look at each message (the Lua side prints then)
    local k = whole({ printed = true, kinds = { "message" } })
    assert.equal(kinds.print(whole({ kinds = { "message" } }).messages), k.printed)
    local b = whole({ printed = true, max_messages = 2 })
    local wb = whole({ max_messages = 2 })
    assert.equal(2, b.n)
    assert.equal(kinds.print(wb.messages), b.printed)
    assert.equal(wb.remaining, b.remaining)
    assert.equal(wb.next.seq, b.next.seq)
    assert.equal(wb.cursor, b.cursor)
  end)

  it("printed and shown for peek, read and wait too", function()
    local w = assert(ch:peek(3))
    local p = assert(ch:peek(3, { printed = true }))
    assert.equal(3, p.n)
    assert.equal(kinds.print(w.messages), p.printed)
    assert.equal(kinds.print(assert(ch:peek(2, { kinds = { "event" } })).messages),
      assert(ch:peek(2, { kinds = { "event" }, printed = true })).printed)
    local shown
    local r = assert(ch:read{ as = "bob", printed = true, show = function(b) shown = b.printed end })
    assert.equal(shown, r.printed)
    assert.equal(kinds.print(whole({ after = 0 }).messages), r.printed)
    assert(ch:post{ from = "alice", to = "bob", title = "six", body = "waited for" })
    local wt = assert(ch:wait{ as = "bob", printed = true, timeout = 5 })
    assert.equal(1, wt.n)
    assert.equal(kinds.PRINTED.before .. assert(ch:peek(1)).messages[1].text:gsub("%s+$", "")
      .. kinds.PRINTED.after, wt.printed)
  end)
end)

describe("agentchat.store and agentchat.sys", function()
  it("checks names with the compatible messages", function()
    assert.is_true(store.check_name("my chat"))
    local _, ok, msg, code
    ok, msg, code = store.check_name("a/b")
    assert.is_nil(ok)
    assert.equal("invalid channel name (path traversal blocked): 'a/b'", msg)
    assert.equal("CHANNEL_INVALID_NAME", code)
    _, msg = store.check_name("_x")
    assert.equal("invalid channel name (reserved prefix blocked): '_x'", msg)
    _, msg = store.check_name("a\nb")
    assert.equal("invalid channel name (control character blocked): 'a\\nb'", msg)
    assert.is_true(store.check_marker("task-build_x.md"))
    _, msg = store.check_marker("task-a.b.md")
    assert.equal("invalid task name (expected task-<id>.md marker): 'task-a.b.md'", msg)
  end)

  it("exposes Python-compatible text helpers", function()
    assert.equal("n-c-d-title", sys.slugify("\u{dc}n\u{ef}c\u{f8}d\u{e9} \u{65e5}\u{672c}\u{8a9e} title"))
    assert.equal("msg", sys.slugify("---"))
    assert.equal("1.0", sys.float_repr(1))
    assert.equal("1e-05", sys.float_repr(0.00001))
    assert.equal("x", sys.strip("\u{3000} x \u{85}"))
    assert.equal(" x", sys.rstrip(" x\u{2028}\t"))
    assert.is_false(sys.utf8_valid("\xed\xa0\x80"))   -- a surrogate
  end)

  it("closes handles idempotently and refuses use after close", function()
    local root = fresh_root()
    local ch = assert(root:init("c"))
    ch:close()
    ch:close()
    assert.has_error(function() ch:cursor("x") end)
  end)
end)

describe("agentchat method families", function()
  -- init.lua lists each family's names (M._families) and puts a forwarder
  -- under each until the family loads; a name missing from the list would
  -- be absent until some other method loaded its family.
  it("list exactly the names each family's install defines", function()
    for name, fam in pairs(ac._families) do
      local defs = { Channel = {}, Root = {}, M = {} }
      local m = setmetatable({ Root = defs.Root, Channel = defs.Channel },
                             { __index = ac, __newindex = defs.M })
      require("agentchat.api." .. name).install(defs.Channel, m)
      for _, where in ipairs({ "Channel", "Root", "M" }) do
        local defined, listed = {}, {}
        for k, v in pairs(defs[where]) do
          assert.equal("function", type(v), name .. ": " .. where .. "." .. k)
          defined[#defined + 1] = k
        end
        for _, k in ipairs(fam[where] or {}) do
          listed[#listed + 1] = k
        end
        table.sort(defined)
        table.sort(listed)
        assert.same(defined, listed, name .. ": " .. where)
      end
    end
  end)

  it("load a family when one of its methods is first called, and forward to it", function()
    -- A fresh state: the families of this process may be loaded already.
    local code = [[
      local ac = require "agentchat"
      local before = package.loaded["agentchat.api.locks"] ~= nil
      local ok = ac.path_overlaps("a/b", "a/b/c")
      print(before, ok, package.loaded["agentchat.api.locks"] ~= nil,
            package.loaded["agentchat.api.tasks"] ~= nil)
    ]]
    local path = H.tmpdir() .. "/fam.lua"
    H.write(path, code)
    local out = H.run({ "run", path }).stdout
    assert.equal("false\ttrue\ttrue\tfalse\n", out)
  end)
end)
