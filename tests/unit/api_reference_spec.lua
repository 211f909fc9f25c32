-- docs/lua-api.md and the real Lua API, checked against each other (issue 6:
-- "the reference page and the tests are checked against each other by a
-- test, so neither drifts").
--
-- The page is machine-readable: every function or field is a table row whose
-- first cell is its signature in backticks, `alias.name(...)`,
-- `alias:name{...}` or `alias.name` (a value); the alias table under
-- "Reading this reference" says what each alias is (a module, or an object
-- this spec knows how to build: root, ch, st, h, ctx). This spec
--
--  (a) enumerates the real API (every module table, the Root and Channel
--      metatables plus their instance fields, the method tables of the store
--      and channel userdata via getmetatable(handle).__index, a watch
--      handler's ctx) and fails on any public name without a row and on any
--      row naming nothing (or a non-function for a call row); every module
--      the binary can require must be an alias or listed under "Internal
--      modules" (agentchat.cli, commands.*, api.*, templates.*, argparse,
--      pycompat, repl, readline: internal, summarized only); every error
--      code a row lists is in the "Error codes" table, every code that table
--      lists is used by the sources and every code string in src/ and
--      lua/agentchat/ is in the table;
--  (b) calls every documented function itself, directly (the chosen way: a
--      temporary root and channel, every function at least once, asserting
--      the shape of what it returns). Before the calls, each documented
--      function in its module table, metatable or userdata method table is
--      replaced by a counting wrapper that counts only calls made from this
--      file; the last test fails for any documented function nobody called.
--      Failures the calls provoke go through `fails()`, which also checks
--      that the row lists the code. The two functions that cannot run here
--      (sys.read_stdin would block on a terminal; config.get reads the real
--      HOME's config) run in a child `agent-chat run` and are marked by hand;
--  (c) checks the handles: the store and channel userdata have __close and
--      __gc, closing twice is safe and a closed handle raises a clear error;
--      Root and Channel have close() and __close.
--
-- The checks are plain functions over the parsed page, so the last block
-- feeds them a page with a row removed and an API with a dummy function
-- added and asserts that they complain: the check can fail.
local H = require "spec_helper"
local ac = require "agentchat"
local json = require "agentchat.json"
local store = require "agentchat.store"
local sys = require "agentchat.sys"

local SELF = debug.getinfo(1, "S").source
local DOC = H.repo .. "/docs/lua-api.md"

-- ------------------------------------------------------------ the page

local function code_spans(s)
  local out = {}
  for span in s:gmatch("`([^`]+)`") do
    out[#out + 1] = span
  end
  return out
end

-- Table cells of a Markdown row ("\|" is a pipe inside a cell).
local function cells(line)
  local row = line:gsub("\\|", "\1"):match("^%s*|(.*)|%s*$")
  if not row then
    return nil
  end
  local out = {}
  for cell in (row .. "|"):gmatch("([^|]*)|") do
    out[#out + 1] = (cell:gsub("\1", "|"):match("^%s*(.-)%s*$"))
  end
  return out
end

local function is_code(s)
  return s:match("^[A-Z][A-Z0-9_]*%*?$") ~= nil and (s:find("_", 1, true) or #s > 3) ~= nil
end

--- Parse the page text: aliases, rows, internal modules, error codes.
local function parse(text)
  local doc = { aliases = {}, rows = {}, by_id = {}, internal = {}, codes = {}, problems = {} }
  local section = ""
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    local heading = line:match("^#+%s+(.-)%s*$")
    if heading then
      section = heading
    end
    local c = cells(line)
    if c and #c >= 2 and not c[1]:match("^%-%-%-") then
      local first = code_spans(c[1])
      if section == "Reading this reference" and #first == 1 and first[1]:match("^[%a_][%w_]*$") then
        local alias = { name = first[1], line = n }
        alias.module = c[2]:match("module `([%w%._]+)`")
        alias.also = {}
        for extra in c[2]:gmatch('require "([%w%._]+)"') do
          alias.also[#alias.also + 1] = extra
        end
        doc.aliases[alias.name] = alias
      elseif section == "Internal modules" then
        for _, m in ipairs(first) do
          doc.internal[#doc.internal + 1] = m
        end
      elseif section == "Error codes" then
        for _, code in ipairs(first) do
          doc.codes[code] = true
        end
      elseif first[1] then
        local alias, sep, name, rest = first[1]:match("^([%a_][%w_]*)([%.:])([%a_][%w_]*)(.*)$")
        if alias and doc.aliases[alias] then
          local row = { alias = alias, sep = sep, name = name, id = alias .. "." .. name, line = n,
                        call = rest:match("^%s*[%({]") ~= nil, returns = c[2], errors = c[3] }
          if not row.call and rest ~= "" then
            doc.problems[#doc.problems + 1] = string.format("line %d: cannot read the signature `%s`", n, first[1])
          elseif #c < 3 then
            doc.problems[#doc.problems + 1] = string.format("line %d: %s has no errors column", n, row.id)
          elseif doc.by_id[row.id] then
            doc.problems[#doc.problems + 1] = string.format("line %d: %s has two rows", n, row.id)
          else
            row.codes = {}
            for _, span in ipairs(code_spans(c[3])) do
              if is_code(span) then
                row.codes[#row.codes + 1] = span
              end
            end
            doc.rows[#doc.rows + 1] = row
            doc.by_id[row.id] = row
          end
        end
      end
    end
  end
  return doc
end

local function read_doc()
  return assert(H.read(DOC), "cannot read " .. DOC)
end

--- Does the row of `id` list `code` (exactly, or through a FAMILY_* glob)?
local function row_lists(row, code)
  for _, c in ipairs(row.codes) do
    if c == code or (c:sub(-1) == "*" and code:sub(1, #c - 1) == c:sub(1, -2)) then
      return true
    end
  end
  return false
end

-- ------------------------------------------------------------ the real API

local function sorted_keys(t, keep)
  local out = {}
  for k, v in pairs(t) do
    if type(k) == "string" and keep(k, v) then
      out[#out + 1] = k
    end
  end
  table.sort(out)
  return out
end

local function public(k)
  return k:sub(1, 1) ~= "_"
end

--- Every module the binary can require: package.preload plus the Lua files.
local function module_names()
  local names = {}
  for k in pairs(package.preload) do
    names[k] = true
  end
  local base = H.repo .. "/lua/"
  local p = io.popen("cd " .. H.sh(base) .. " && find agentchat -name '*.lua'")
  for path in p:lines() do
    local name = path:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
    names[name] = true
  end
  p:close()
  local out = {}
  for k in pairs(names) do
    out[#out + 1] = k
  end
  table.sort(out)
  return out
end

-- The objects behind the object aliases, made in a fresh root.
local function make_objects()
  local dir = H.tmpdir()
  local root = assert(ac.open(dir .. "/root"))
  local ch = assert(root:init("dev", { members = { "alice", "bob" } }))
  local st = assert(store.open(dir .. "/root"))
  local h = assert(st:channel("dev"))
  local ctx
  local code = require("agentchat.watch").run(ch, { as = "bot", once = true, log = function() end,
    handlers = { tick = function(c) ctx = c end } })
  assert.equal(0, code)
  return { root = root, ch = ch, st = st, h = h, ctx = ctx }
end

--- name -> value for every public name of `alias` (methods, instance
--- fields, module fields), or nil and a reason.
local function real_names(alias, objects)
  local out = {}
  local function add(t, keep)
    for _, k in ipairs(sorted_keys(t, keep)) do
      out[k] = t[k]
    end
  end
  if alias.module then
    add(require(alias.module), public)
  elseif alias.name == "root" or alias.name == "ch" then
    local obj = objects[alias.name]
    add(getmetatable(obj), function(k)
      return k:sub(1, 2) ~= "__"
    end)
    add(obj, public)
  elseif alias.name == "st" or alias.name == "h" then
    add(getmetatable(objects[alias.name]).__index, public)
  elseif alias.name == "ctx" then
    add(objects.ctx, public)
  else
    return nil, "alias `" .. alias.name .. "` is neither a module nor an object this spec can build"
      .. " (root, ch, st, h, ctx): teach make_objects/real_names about it"
  end
  return out
end

local function internal(doc, name)
  for _, pat in ipairs(doc.internal) do
    if pat == name or (pat:sub(-2) == ".*" and name:sub(1, #pat - 1) == pat:sub(1, -2)) then
      return true
    end
  end
  return false
end

--- Problems between the page and the API (a list of lines, empty if none).
local function check_documented(doc, objects)
  local problems = {}
  local function bad(fmt, ...)
    problems[#problems + 1] = string.format(fmt, ...)
  end
  for _, p in ipairs(doc.problems) do
    problems[#problems + 1] = p
  end
  local modules = {}
  for _, a in pairs(doc.aliases) do
    if a.module then
      modules[a.module] = a
      for _, extra in ipairs(a.also) do
        modules[extra] = a
        if require(extra) ~= require(a.module) then
          bad("require %q is not the same table as require %q", extra, a.module)
        end
      end
    end
  end
  for _, name in ipairs(module_names()) do
    if not modules[name] and not internal(doc, name) then
      bad("module %s is neither documented (an alias row) nor listed under Internal modules", name)
    end
  end
  local names = {}
  for n in pairs(doc.aliases) do
    names[#names + 1] = n
  end
  table.sort(names)
  for _, n in ipairs(names) do
    local real, why = real_names(doc.aliases[n], objects)
    if not real then
      bad("%s", why)
    else
      for _, k in ipairs(sorted_keys(real, function()
        return true
      end)) do
        if not doc.by_id[n .. "." .. k] then
          bad("undocumented: %s%s%s (%s) has no row in docs/lua-api.md", n,
            (type(real[k]) == "function" and (n == "root" or n == "ch" or n == "st" or n == "h")) and ":" or ".",
            k, type(real[k]))
        end
      end
      for _, row in ipairs(doc.rows) do
        if row.alias == n then
          local v = real[row.name]
          if row.call and type(v) ~= "function" then
            bad("line %d: %s is documented as a function but is %s", row.line, row.id, type(v))
          elseif not row.call and v == nil and not row.returns:find("nil", 1, true) then
            bad("line %d: %s is documented but does not exist", row.line, row.id)
          elseif not row.call and type(v) == "function" then
            bad("line %d: %s is a function: write its row as a call", row.line, row.id)
          end
        end
      end
    end
  end
  return problems
end

-- ------------------------------------------------------------ error codes

local IGNORED_STRINGS = { DEFAULT_LEASE = true, DEPENDS_ON = true }

--- Every "CODE_LIKE" string literal of the sources, code -> first file.
--- A C file the Makefile does not build (work in progress on its way in)
--- is not part of the binary, so its codes are not the API's yet. The etcd
--- client and store (src/etcd/) are linked into agent-chat: their ETCD_*
--- codes are the API's.
local function source_codes()
  local out = {}
  local makefile = H.read(H.repo .. "/Makefile") or ""
  local p = io.popen("cd " .. H.sh(H.repo) .. " && find src include lua/agentchat -name '*.[ch]' -o -name '*.lua'")
  for path in p:lines() do
    local built = not path:match("^src/.*%.c$") or makefile:find(path, 1, true) ~= nil
    local text = built and H.read(H.repo .. "/" .. path) or ""
    for s in text:gmatch('"([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])"') do
      if not IGNORED_STRINGS[s] and not s:match("^AGENT_CHAT_") and not s:match("^XDG_")
          and not s:match("^CLAUDE_")
          and not s:match("^LUA_") then
        out[s] = out[s] or path
      end
    end
    for s in text:gmatch('"(E[A-Z]+)"') do
      out[s] = out[s] or path
    end
    out.INTERRUPTED = out.INTERRUPTED or (text:find('"INTERRUPTED"', 1, true) and path) or nil
    out.USAGE = out.USAGE or (text:find('"USAGE"', 1, true) and path) or nil
  end
  p:close()
  return out
end

-- Codes the sources use that are not failure codes of the API.
local NOT_API_CODES = {
  ENOTSUP = "agentchat.readline (internal) without readline",
  EQUAL = "an etcd compare result on the wire (src/etcd/wire.c)",
  NOT_EQUAL = "an etcd compare result on the wire (src/etcd/wire.c)",
  ERROR = "errors.raise's default when a failure had no code",
}

local function check_codes(doc)
  local problems = {}
  for _, row in ipairs(doc.rows) do
    for _, code in ipairs(row.codes) do
      if not doc.codes[code] then
        problems[#problems + 1] = string.format("line %d: %s lists %s, which the Error codes table lacks",
          row.line, row.id, code)
      end
    end
  end
  local used = source_codes()
  for code, path in pairs(used) do
    if not doc.codes[code] and not NOT_API_CODES[code] then
      problems[#problems + 1] = string.format("%s uses the code %s, which the Error codes table lacks", path, code)
    end
  end
  for code in pairs(doc.codes) do
    if code:sub(-1) ~= "*" and not used[code] then
      problems[#problems + 1] = string.format("the Error codes table lists %s, which no source uses", code)
    end
  end
  table.sort(problems)
  return problems
end

-- ------------------------------------------------------------ counting calls

local calls = {}
local wrapped = {}   -- {table, key, original}

--- Is the caller of the wrapper (C frames such as pcall skipped) this file?
local function from_self()
  local level = 3
  while true do
    local info = debug.getinfo(level, "S")
    if not info then
      return false
    end
    if info.what ~= "C" then
      return info.source == SELF
    end
    level = level + 1
  end
end

local function wrap(t, alias, doc)
  for _, row in ipairs(doc.rows) do
    local f = row.alias == alias and row.call and rawget(t, row.name)
    if type(f) == "function" then
      local id = row.id
      wrapped[#wrapped + 1] = { t, row.name, f }
      t[row.name] = function(...)
        if from_self() then
          calls[id] = (calls[id] or 0) + 1
        end
        return f(...)
      end
    end
  end
end

local function unwrap()
  for i = #wrapped, 1, -1 do
    local w = wrapped[i]
    w[1][w[2]] = w[3]
  end
  wrapped = {}
end

--- For a function that had to run in a child process.
local function mark(id)
  calls[id] = (calls[id] or 0) + 1
end

--- Functions with a row that this spec never called.
local function check_called(doc, counts)
  local out = {}
  for _, row in ipairs(doc.rows) do
    if row.call and not counts[row.id] then
      out[#out + 1] = string.format("line %d: %s is documented but no test here calls it", row.line, row.id)
    end
  end
  return out
end

-- ------------------------------------------------------------ helpers

local the_doc = parse(read_doc())

--- Assert an expected failure `nil, message, code[, exit]` with `code`,
--- and that the row of `id` lists the code.
local function fails(id, code, ...)
  local v, msg, got = ...
  assert.is_nil(v, id .. " should fail with " .. code)
  assert.is_string(msg)
  assert.equal(code, got, id .. ": " .. tostring(msg))
  local row = assert(the_doc.by_id[id], "no row for " .. id)
  assert.is_true(row_lists(row, code), string.format("the row of %s (line %d) does not list %s", id, row.line, code))
  return msg, select(4, ...)
end

--- A failure of a private binding (no reference row to check).
local function fails_internal(code, ...)
  local v, msg, got = ...
  assert.is_nil(v, "should fail with " .. code)
  assert.is_string(msg)
  assert.equal(code, got, tostring(msg))
  return msg, select(4, ...)
end

local function is_list(t)
  return type(t) == "table" and #t == select("#", table.unpack(t))
end

local function batch_shape(b)
  assert.is_table(b)
  assert.is_table(b.messages)
  assert.is_table(b.skipped)
  assert.is_number(b.count)
  assert.is_number(b.cursor)
end

local function inbox_shape(inbox)
  assert.is_table(inbox.messages)
  assert.is_table(inbox.skipped)
  assert.is_number(inbox.max_seq)
  assert.is_number(inbox.count)
end

-- ------------------------------------------------------------ (a) the page

describe("docs/lua-api.md", function()
  it("parses: aliases, rows, internal modules and error codes", function()
    assert.same({}, the_doc.problems)
    for _, a in ipairs({ "ac", "root", "ch", "json", "store", "st", "h", "sys", "errors", "events",
                         "state", "sandbox", "watch", "changes", "ctx", "bridge" }) do
      assert.truthy(the_doc.aliases[a], "alias " .. a)
    end
    -- the C bindings under the methods are private (issue 11)
    for _, m in ipairs({ "agentchat._tasks", "agentchat._pathlocks", "agentchat._receipts", "agentchat._fsck" }) do
      assert.truthy(internal(the_doc, m), m)
    end
    assert.is_true(#the_doc.rows > 150)
    assert.truthy(the_doc.by_id["ch.post"])
    assert.is_true(the_doc.by_id["ch.post"].call)
    assert.is_false(the_doc.by_id["root.path"].call)
    assert.truthy(the_doc.codes.CHANNEL_NOT_FOUND)
    assert.truthy(internal(the_doc, "agentchat.commands.messages"))
    assert.is_false(internal(the_doc, "agentchat.store"))
  end)

  it("documents every module, public function and field, and nothing that does not exist", function()
    local problems = check_documented(the_doc, make_objects())
    assert.same({}, problems, table.concat(problems, "\n"))
  end)

  it("knows every error code: rows list only table codes, the table matches the sources", function()
    local problems = check_codes(the_doc)
    assert.same({}, problems, table.concat(problems, "\n"))
  end)
end)

-- ------------------------------------------------------------ (b) every function called

describe("every documented function", function()
  local dir, root, ch, st, h
  local wrapped_modules = {}

  setup(function()
    for name, a in pairs(the_doc.aliases) do
      if a.module then
        wrap(require(a.module), name, the_doc)
        wrapped_modules[#wrapped_modules + 1] = a.module
      end
    end
    wrap(ac.Root, "root", the_doc)
    wrap(ac.Channel, "ch", the_doc)
    -- The userdata method tables exist once store is loaded.
    local tmp = assert(store.open(H.tmpdir()))
    wrap(getmetatable(tmp).__index, "st", the_doc)
    tmp:close()
    dir = H.tmpdir()
    local ust = assert(store.open(dir))
    assert(ust:create("probe", assert(store.meta_compose("probe", {}, "", "2026-01-01T00:00:00+00:00"))))
    local uh = assert(ust:channel("probe"))
    wrap(getmetatable(uh).__index, "h", the_doc)
    uh:close()
    ust:close()
  end)

  teardown(function()
    unwrap()
  end)

  it("agentchat: paths, roots, channels and closing", function()
    assert.equal("a/b", ac.normalize_path("./a//b/"))
    assert.equal(".", ac.normalize_path(""))
    assert.equal("r/x", ac.join_path("r", "x"))
    assert.equal("x/y", ac.resolve_root("x//y/"))
    assert.is_false(ac.resolve_store("x"))
    local spec, sopts = ac.resolve_store("x", "etcd://127.0.0.1:1/p")
    assert.equal("etcd://127.0.0.1:1/p", spec)
    assert.equal("table", type(sopts))
    fails("ac.resolve_store", "STORE_INVALID", ac.resolve_store("x", "/a/folder"))
    local eroot = assert(ac.open("etcd://127.0.0.1:1/p"))
    assert.equal("etcd://127.0.0.1:1/p", eroot.path)
    assert.is_string(eroot.dir)
    ac.end_sessions()              -- nothing was granted: nothing is contacted
    eroot:close()
    assert.equal("body\n", ac.body_of("---\nfrom: a\n---\nbody\n"))
    assert.equal("plain", ac.body_of("plain"))
    local meta = ac.parse_meta('{"channel": "c", "members": ["a"], "topic": "t", "created": "x"}')
    assert.same({ channel = "c", members = { "a" }, topic = "t", created = "x" }, meta)
    assert.is_nil(ac.parse_meta("[]"))
    assert.is_true(ac.path_overlaps("a/b", "a/b/c"))
    assert.is_false(ac.path_overlaps("a/b", "a/bc"))
    assert.is_string(ac.version)

    root = assert(ac.open(dir .. "/root"))
    assert.equal(dir .. "/root", root.path)
    assert.same({}, root:channel_names())
    ch = assert(root:init("dev", { members = { "alice", "bob" }, topic = "T" }))
    assert.equal("dev", ch.name)
    assert.equal(root, ch.root)
    fails("root.init", "CHANNEL_EXISTS", root:init("dev"))
    fails("root.init", "CHANNEL_INVALID_NAME", root:init("../x"))
    fails("root.init", "INVALID_UTF8", root:init("u", { topic = "\255" }))
    fails("root.init", "INVALID_TEXT", root:init("u", { members = { "a\0b" } }))
    assert(root:init("other"))
    assert.same({ "dev", "other" }, root:channel_names())
    fails("root.channel", "CHANNEL_NOT_FOUND", root:channel("nope"))
    fails("root.channel", "CHANNEL_INVALID_NAME", root:channel(".x"))
    local again = assert(root:channel("dev"))
    assert.equal("dev", again.name)
    again:close()
    -- bare: a channel folder whose _meta.json is missing opens, takes no post
    assert(os.execute("mkdir " .. dir .. "/root/nometa"))
    fails("root.channel", "CHANNEL_NOT_FOUND", root:channel("nometa"))
    local bare = assert(root:channel("nometa", { bare = true }))
    assert.is_true(bare:handle():bare())
    fails("ch.post", "CHANNEL_NOT_FOUND", bare:post{ from = "a", title = "t", body = "b" })
    fails("h.post", "CHANNEL_NOT_FOUND", bare:handle():post{ from = "a", title = "t", body = "b" })
    bare:close()
    assert.is_false(assert(root:channel("dev", { bare = true })):handle():bare())
    fails("root.channel", "CHANNEL_NOT_FOUND", root:channel("nope", { bare = true }))
    assert.has_error(function()
      root:channel("dev", "bare")
    end)

    fails("ac.lock_channel", "PATH_LOCK_CHANNEL_NOT_FOUND", ac.lock_channel(root, "nope"))
    fails("ac.lock_channel", "PATH_LOCK_INVALID_CHANNEL", ac.lock_channel(root, "a/b"))
    local lc = assert(ac.lock_channel(root, "dev"))
    lc:close()

    local other = assert(ac.open(dir .. "/root2"))
    other:close()
    other:close()                                      -- twice is harmless
    assert.has_error(function()
      other:channel("dev")
    end, "attempt to use a closed store")
  end)

  it("Channel: messages, cursors, roster, the legacy claim", function()
    local res = assert(ch:post{ from = "alice", to = "bob", title = "hi", body = "hello" })
    assert.same({ seq = 1, file = "0001-alice-hi.md", channel = "dev" }, res)
    assert(ch:post{ from = "bob", title = "re", body = "yes", reply = 1, status = "proposal" })
    fails("ch.post", "INVALID_UTF8", ch:post{ from = "alice", title = "\255", body = "x" })
    fails("ch.post", "INVALID_TEXT", ch:post{ from = "alice", title = "t\0", body = "x" })
    assert.has_error(function()
      ch:post{ from = "alice", title = "t" }
    end)

    local b = assert(ch:fetch{ as = "bob" })
    batch_shape(b)
    assert.equal(1, #b.messages)
    local m = b.messages[1]
    assert.equal("alice", m.from)
    assert.equal("bob", m.to)
    assert.equal("hello\n", m.body)
    assert.equal(0, ch:cursor("bob"))
    assert.is_true(ch:commit(b))
    assert.equal(2, ch:cursor("bob"))
    assert.is_true(ch:set_cursor("bob", 0))
    local r = assert(ch:read{ as = "bob", peek = true })
    assert.equal(1, #r.messages)
    assert.equal(0, ch:cursor("bob"))
    r = assert(ch:read{ as = "bob", max_messages = 1, kinds = { "message" } })
    assert.same({ 1, 0, 2 }, { #r.messages, r.remaining, r.cursor })
    assert.is_true(ch:set_cursor("bob", 0))
    r = assert(ch:read{ as = "bob" })
    assert.equal(2, r.cursor)
    assert.equal(2, ch:cursor("bob"))
    assert.is_true(ch:advance_cursor("bob", 1))
    assert.equal(2, ch:cursor("bob"))
    local all = assert(ch:read{ as = "bob", all = true, peek = true })
    assert.equal(2, #all.messages)

    local w = assert(ch:wait{ as = "alice", timeout = 5, interval = 0.05 })
    batch_shape(w)
    assert.equal("re", w.messages[1].title)
    assert.equal("1", w.messages[1].reply_to)
    fails("ch.wait", "ETIMEDOUT", ch:wait{ as = "alice", timeout = 0.05, interval = 0.01 })

    local p = assert(ch:peek(1))
    assert.equal(1, #p.messages)
    assert.equal(2, p.count)
    assert.same({ channel = "dev", topic = "T", members = { "alice", "bob" }, messages = 2 }, ch:roster())
    assert.same({ "alice", "bob" }, ch:meta().members)

    H.write(root.path .. "/dev/task-7.md", "claim me\n")
    assert.equal("task-7.CLAIMED-bob.md", ch:claim_marker("task-7.md", { as = "bob" }))
    fails("ch.claim_marker", "CLAIM_LOST", ch:claim_marker("task-7.md", { as = "carol" }))
    fails("ch.claim_marker", "CLAIM_INVALID_NAME", ch:claim_marker("x.md", { as = "carol" }))

    local unread = assert(root:unread("alice"))
    assert.same({}, unread)
    assert(ch:post{ from = "bob", to = "alice", title = "ping", body = "." })
    assert.same({ { channel = "dev", count = 1 } }, root:unread("alice"))
    assert.same({}, root:unread("alice", { channels = { "other" } }))
    fails("root.unread", "CHANNEL_NOT_FOUND", root:unread("alice", { channels = { "gone" } }))
    assert.equal(2, ch:cursor("alice"))                -- untouched

    local list = assert(root:channels())
    assert.equal(2, #list)
    assert.equal("dev", list[1].name)
    assert.equal(3, list[1].count)
    assert.equal("ping", list[1].last.title)
    assert.same({ "alice", "bob" }, list[1].meta.members)

    local hd = ch:handle()
    assert.equal("agentchat.channel", getmetatable(hd).__name)
    local tmp = assert(root:channel("other"))
    tmp:close()
    tmp:close()
    assert.has_error(function()
      tmp:peek(1)
    end, "attempt to use a closed channel")
  end)

  it("Channel: the task board, and the private agentchat._tasks", function()
    local rec = assert(ch:task_create{ id = "t1", from = "alice", title = "first" })
    assert.equal("t1", rec.id)
    assert.equal("open", rec.status)
    assert.equal("alice", rec.created_by)
    fails("ch.task_create", "TASK_ALREADY_EXISTS", ch:task_create{ id = "t1", from = "alice", title = "x" })
    fails("ch.task_create", "TASK_INVALID_ID", ch:task_create{ id = "bad id", from = "alice", title = "x" })
    local t, blocking = ch:task("t1")
    assert.equal("first", t.title)
    assert.equal("", blocking)
    fails("ch.task", "TASK_NOT_FOUND", ch:task("nope"))
    assert.equal(1, #assert(ch:tasks()))
    assert.equal("renamed", assert(ch:task_update("t1", { as = "alice", title = "renamed" })).title)
    fails("ch.task_update", "TASK_INVALID_UPDATE", ch:task_update("t1", { as = "alice" }))

    local claimed = assert(ch:claim("t1", { as = "bob", lease = 60 }))
    assert.equal("bob", claimed.owner)
    assert.equal("in_progress", claimed.status)
    assert.is_string(claimed.lease_expires_at)
    fails("ch.claim", "LEASE_CONFLICT", ch:claim("t1", { as = "carol" }))
    assert.is_string(assert(ch:renew("t1", { as = "bob", lease = 120 })).lease_expires_at)
    fails("ch.renew", "LEASE_OWNER_MISMATCH", ch:renew("t1", { as = "carol" }))
    fails("ch.release", "LEASE_OWNER_MISMATCH", ch:release("t1", { as = "carol" }))
    fails("ch.block", "LEASE_MUTATION_REQUIRED", ch:block("t1", { as = "bob" }))
    assert.is_nil(assert(ch:release("t1", { as = "bob" })).lease_expires_at)
    assert.equal("blocked", assert(ch:block("t1", { as = "bob" })).status)
    assert.equal("open", assert(ch:task_update("t1", { as = "alice", status = "open" })).status)
    assert(ch:claim("t1", { as = "bob" }))
    fails("ch.done", "LEASE_OWNER_MISMATCH", ch:done("t1", { as = "carol" }))
    assert.equal("done", assert(ch:done("t1", { as = "bob" })).status)

    assert(ch:task_create{ id = "t2", from = "alice", title = "second", depends_on = { "t1" } })
    assert(ch:claim("t2", { as = "carol", lease = 0.01 }))
    sys.sleep(0.05)
    fails("ch.recover", "LEASE_INVALID_REASON", ch:recover("t2", { as = "dave", reason = "" }))
    local rec2 = assert(ch:recover("t2", { as = "dave", reason = "carol left" }))
    assert.equal("dave", rec2.owner)
    fails("ch.recover", "LEASE_NOT_EXPIRED", ch:recover("t2", { as = "erin", reason = "x" }))
    fails("ch.recover_pending_lease", "LEASE_TRANSACTION_NOT_FOUND", ch:recover_pending_lease{ as = "dave" })
    assert.has_error(function()
      ch:claim("t2", {})
    end)

    local tasks = require "agentchat._tasks"
    local hd = ch:handle()
    assert.equal(2, #assert(tasks.list(hd)))
    local snap, skipped = tasks.snapshot(hd)
    assert.equal(2, #snap)
    assert.equal(0, skipped)
    assert.equal(json.null, snap[1].lease_expires_at)
    local shown, why = tasks.show(hd, "t2")
    assert.equal("t2", shown.id)
    assert.equal("", why)
    fails_internal("TASK_NOT_FOUND", tasks.show(hd, "zz"))
    assert.equal("t3", assert(tasks.create(hd, { id = "t3", created_by = "a", title = "x" })).id)
    assert.equal("y", assert(tasks.update(hd, "t3", "a", { title = "y" })).title)
    assert.equal("a", assert(tasks.lease(hd, "claim", "t3", "a", 60)).owner)
    fails_internal("LEASE_CONFLICT", tasks.lease(hd, "claim", "t3", "b"))
    fails_internal("LEASE_TRANSACTION_NOT_FOUND", tasks.recover_pending(hd, "a"))

    local q = assert(ch:task_create{ id = "q1", from = "alice", title = "queued", for_capability = { "build" } })
    assert.same({ "build" }, ac.task_capabilities(q))
    fails("ch.task_create", "TASK_INVALID_CAPABILITY",
          ch:task_create{ id = "q2", from = "alice", title = "x", for_capability = "a/b" })
    fails("ch.next_task", "TASK_NONE_READY", ch:next_task{ as = "erin", capabilities = { "docs" } })
    fails("ch.next_task", "TASK_INVALID_CAPABILITY", ch:next_task{ as = "erin", capabilities = { ".x" } })
    local next = assert(ch:next_task{ as = "erin", capabilities = { "build" }, lease = 60 })
    assert.same({ "q1", "erin", "in_progress" }, { next.id, next.owner, next.status })
  end)

  it("Channel: path locks, and the private agentchat._pathlocks and agentchat._fsck", function()
    local lock = assert(ch:lock({ "src/a.c", "docs" }, { as = "alice", lease = 60 }))
    assert.is_string(lock.lock_id)
    assert.equal("alice", lock.owner)
    assert.equal("docs", lock.paths[2].normalized_path)
    assert.is_false(lock.expired)
    fails("ch.lock", "PATH_LOCK_CONFLICT", ch:lock("src", { as = "bob" }))
    assert.equal(1, #assert(ch:check("src")))
    assert.same({}, assert(ch:check("tests", { as = "bob" })))
    local norm, kind = ch:normalize_lock_path("./src//b.c")
    assert.equal("src/b.c", norm)
    assert.equal("file", kind)
    assert.equal(1, #assert(ch:locks()))
    fails("ch.unlock", "PATH_LOCK_OWNER_MISMATCH", ch:unlock("docs", { as = "bob" }))
    fails("ch.unlock", "PATH_LOCK_NOT_FOUND", ch:unlock("nowhere", { as = "bob" }))
    assert.equal(lock.lock_id, assert(ch:unlock(lock.lock_id, { as = "alice" })).lock_id)

    assert(ch:lock("lib", { as = "bob", lease = 0.01 }))
    sys.sleep(0.05)
    fails("ch.lock", "PATH_LOCK_RECOVERY_REQUIRED", ch:lock("lib/x", { as = "carol" }))
    local rec = assert(ch:recover_lock("lib", { as = "carol", reason = "bob left" }))
    assert.equal("carol", rec.owner)
    assert.equal("bob", rec.previous_owner)
    fails("ch.recover_lock", "PATH_LOCK_NOT_STALE", ch:recover_lock("lib", { as = "dave", reason = "x" }))
    assert.equal("none", assert(ch:recover_pending_locks{ as = "carol" }).outcome)

    local pl = require "agentchat._pathlocks"
    local hd = ch:handle()
    local l2 = assert(pl.lock(hd, { "pkg" }, "erin", 60))
    assert.equal(1, #assert(pl.check(hd, { "pkg/x" })))
    assert.equal(2, #assert(pl.list(hd)))
    assert(os.execute("mkdir -p " .. H.sh(root.path .. "/dev/pkg")))
    assert.same({ "pkg", "directory" }, { pl.normalize(hd, "./pkg/") })
    fails_internal("PATH_LOCK_NOT_FOUND", pl.unlock(hd, "nope", "erin"))
    assert(pl.unlock(hd, l2.lock_id, "erin"))
    fails_internal("PATH_LOCK_NOT_STALE", pl.recover(hd, "lib", "erin", "why"))
    assert.equal("none", assert(pl.recover_pending(hd, "erin")).outcome)
    assert.is_true(pl.overlaps(".", "x"))
    assert.equal(300, pl.DEFAULT_LEASE)

    local fsck = require "agentchat._fsck"
    assert.same({}, assert(fsck.channel(hd)))
    assert.equal("pending", fsck.CLASSES.FSCK_PENDING_JOURNAL)
    assert.same({}, fsck.hidden(root._store))
    fails_internal("CHANNEL_NOT_FOUND", fsck.directory(root._store, "dev"))
    local report = assert(root:fsck{ channels = { "dev" } })
    assert.same({ "dev" }, report.channels)
    assert.same({}, report.findings)
    os.remove(root.path .. "/dev/.seqhigh")
    report = assert(root:fsck{ repair = true })
    assert.equal("FSCK_SEQHIGH_BEHIND", report.repaired[1].code)
    assert.equal(0, report.counts.repairable)
    fails("root.fsck", "CHANNEL_NOT_FOUND", root:fsck{ channels = { "gone" } })

    -- copies between stores (docs/etcd.md "Migration")
    local out = root.path .. "-export"
    local reports = assert(root:export(out, { channels = { "dev" } }))
    assert.equal("dev", reports[1].channel)
    assert.is_true(reports[1].messages > 0)
    fails("root.export", "CHANNEL_EXISTS", root:export(out, { channels = { "dev" } }))
    local other = assert(ac.open(root.path .. "-import"))
    reports = assert(other:import_folder(out))
    assert.equal("dev", reports[1].channel)
    fails("root.import_folder", "IMPORT_INVALID_FOLDER", other:import_folder(root.path .. "-none"))
    other:close()
    local st1, st2 = assert(store.open(out)), assert(store.open(root.path .. "-copy"))
    local rep = assert(store.copy(st1, st2, "dev"))
    assert.equal(reports[1].messages, rep.messages)
    fails("store.copy", "CHANNEL_EXISTS", store.copy(st1, st2, "dev"))
    st1:close()
    st2:close()
  end)

  it("Channel: events, and agentchat.events", function()
    local ev, post = assert(ch:event_post{ from = "alice", harness = "codex", type = "capability",
                                           primitives = { "messages", " wait " } })
    assert.equal("capability", ev.event)
    assert.same({ "messages", "wait" }, ev.primitives)
    assert.is_number(post.seq)
    fails("ch.event_post", "EVENT_INVALID_STATUS", ch:event_post{ from = "bob", harness = "x", type = "status" })
    fails("ch.event_post", "EVENT_UNKNOWN_PRIMITIVE",
      ch:event_post{ from = "bob", harness = "x", type = "capability", primitives = { "teleport" } })
    assert(ch:event_post{ from = "bob", harness = "x", type = "status", status = "idle" })
    assert.equal(2, #assert(ch:events()))
    assert.equal("idle", assert(ch:events{ type = "status" })[1].status)

    local events = require "agentchat.events"
    local obj = events.build{ agent = "carol", harness = "h", type = "status", status = "busy",
                              ts = "2026-01-01T00:00:00+00:00" }
    assert.is_true(events.validate(obj))
    fails("events.validate", "EVENT_INVALID_STATUS", events.validate(events.build{ agent = "c", harness = "h",
      type = "status", status = "napping" }))
    assert.equal('{"agent": "carol", "event": "status", "harness": "h", "schema_version": 1, '
      .. '"status": "busy", "ts": "2026-01-01T00:00:00+00:00"}', events.format(obj))
    assert.equal('{"agent":"carol","event":"status","harness":"h","schema_version":1,'
      .. '"status":"busy","ts":"2026-01-01T00:00:00+00:00"}', events.encode(obj))
    local posted, res = assert(events.post(ch, { agent = "carol", harness = "h", type = "status", status = "busy" }))
    assert.equal("busy", posted.status)
    assert.is_number(res.seq)
    local list = assert(events.read(ch, { type = "status" }))
    assert.equal(2, #list)
    assert.equal("carol", list[2].event.agent)
    assert.equal("carol", list[2].message.from)
    assert.equal(8, #events.PRIMITIVES)
    assert.equal(5, #events.STATUSES)
    assert.is_true(is_list(events.REQUIRED))
  end)

  it("Channel: status keys and the composite wait", function()
    local e, res = assert(ch:status_set("build", "green", { as = "alice", ttl = 60 }))
    assert.same({ "alice", "build", "green", 60, false }, { e.agent, e.key, e.value, e.ttl, e.expired })
    assert.is_number(res.seq)
    assert(ch:status_set("build", "red", { as = "alice" }))
    fails("ch.status_set", "STATUS_INVALID_KEY", ch:status_set("a b", "x", { as = "alice" }))
    fails("ch.status_set", "STATUS_INVALID_VALUE", ch:status_set("k", "two\nlines", { as = "alice" }))
    fails("ch.status_set", "STATUS_INVALID_TTL", ch:status_set("k", "v", { as = "alice", ttl = -1 }))
    fails("ch.status_set", "STATUS_INVALID_AGENT", ch:status_set("k", "v", { as = " " }))
    local list = assert(ch:status_get("build"))
    assert.equal(1, #list)
    assert.equal("red", list[1].value)
    assert.is_nil(list[1].ttl)
    assert.same({}, assert(ch:status_get({ agent = "nobody" })))
    fails("ch.status_get", "STATUS_INVALID_KEY", ch:status_get("a b"))
    local shown = {}
    assert.equal(0, ch:status_watch{ timeout = 0, show = function(entry)
      shown[#shown + 1] = entry
    end })
    fails("ch.status_watch", "STATUS_INVALID_KEY", ch:status_watch{ key = "a b", show = print })

    local c = assert(ac.parse_condition("other:task:T1=done"))
    assert.same({ "other", "task", "T1", "done" }, { c.channel, c.kind, c.id, c.state })
    fails("ac.parse_condition", "WAIT_INVALID_CONDITION", ac.parse_condition("task:T1=finished"))
    local r = assert(ch:wait_any{ as = "bob", conditions = { "lock:src=free" }, timeout = 0 })
    assert.same({ "lock:src=free", 1, "lock", "src" }, { r.condition, r.index, r.kind, r.path })
    local v, msg, code, exit, token = ch:wait_any{ as = "bob", conditions = { "receipt:1=acked" }, timeout = 0 }
    assert.is_nil(v, msg)
    assert.same({ "ETIMEDOUT", 2 }, { code, exit })
    assert.truthy(token:match("^w1%."))
    fails("ch.wait_any", "ETIMEDOUT", ch:wait_any{ resume = token, timeout = 0 })
    fails("ch.wait_any", "WAIT_INVALID_RESUME", ch:wait_any{ resume = "w1.x", timeout = 0 })
    fails("ch.wait_any", "WAIT_INVALID_CONDITION", ch:wait_any{ as = "bob", conditions = { "nope" } })
    fails("ch.wait_any", "TASK_NOT_FOUND", ch:wait_any{ as = "bob", conditions = { "task:NOPE=done" } })
    fails("ch.wait_any", "CHANNEL_NOT_FOUND", ch:wait_any{ as = "bob", conditions = { "nochan:message" } })
  end)

  it("Channel: the importers, and a post with an explicit ts", function()
    -- retention: ch:trim
    local tch = assert(root:init("trimmed"))
    for i = 1, 3 do
      assert(tch:post{ from = "alice", title = "m" .. i, body = "x" })
    end
    assert.same({ messages = 2, acks = 0, newest = 3 }, assert(tch:trim(2, { dry_run = true })))
    assert.equal(3, assert(tch:peek(5)).messages[1] and #assert(tch:peek(5)).messages)
    fails("ch.trim", "TRIM_KEEPS_NEWEST", tch:trim(3))
    assert.has_error(function()
      tch:trim(0)
    end)
    assert.same({ messages = 2, acks = 0, newest = 3 }, assert(tch:trim(2)))
    assert.equal(1, #assert(tch:peek(5)).messages)
    local ich = assert(root:init("imported"))
    local res = assert(ich:post{ from = "alice", title = "old", body = "x", ts = "2020-02-03T04:05:06+00:00" })
    assert.equal("2020-02-03T04:05:06+00:00", assert(ich:peek(1)).messages[1].ts)
    assert.is_number(res.seq)
    fails("ch.post", "MESSAGE_INVALID_FIELD", ich:post{ from = "a", title = "t", body = "x", ts = "yesterday" })
    local fixtures = H.repo .. "/tests/fixtures/import/"
    local r = assert(ich:import_team(fixtures .. "team"))
    assert.same({ 9, 0, 6, 6, 9, false }, { r.imported, r.present, r.skipped, #r.warnings, #r.seqs, r.dry_run })
    assert.same({ file = "inbox/researcher.jsonl", line = 3, message = "missing field 'content'" }, r.warnings[1])
    assert.equal(0, assert(ich:import_team(fixtures .. "team")).imported)
    r = assert(ich:import_bus(fixtures .. "bus", { dry_run = true }))
    assert.same({ 5, 0, 5, true, 2, 0 }, { r.imported, r.present, r.skipped, r.dry_run, r.acked, r.acks_present })
    fails("ch.import_bus", "IMPORT_MALFORMED_LINES", ich:import_bus(fixtures .. "bus", { strict = true }))
    fails("ch.import_team", "IMPORT_INVALID_FOLDER", ich:import_team(fixtures .. "bus"))
    fails("ch.import_bus", "IMPORT_INVALID_FOLDER", ich:import_bus(fixtures .. "nope"))
    r = assert(ich:import_bus(fixtures .. "bus"))
    assert.same({ 5, 2, 6 }, { r.imported, r.acked, #r.warnings })
    local bad = H.tmpdir()
    H.write(bad .. "/config.json", "[]")
    fails("ch.import_team", "IMPORT_INVALID_CONFIG", ich:import_team(bad))
    os.execute("ln -s /etc/passwd " .. bad .. "/ledger.jsonl")
    fails("ch.import_bus", "IMPORT_UNREADABLE", ich:import_bus(bad))
    assert.has_error(function()
      ich:import_team(42)
    end)
    r = assert(ich:import_claude_team(H.repo .. "/tests/fixtures/claude-teams/home/teams/refactor-squad",
                                      { dry_run = true }))
    assert.same({ 16, 0, 6, 5, 0, 1, true }, { r.imported, r.present, r.skipped, r.tasks_imported, r.tasks_present,
                                              r.tasks_skipped, r.dry_run })
    fails("ch.import_claude_team", "IMPORT_INVALID_FOLDER", ich:import_claude_team(fixtures .. "bus"))
    fails("ch.import_claude_team", "IMPORT_INVALID_CONFIG", ich:import_claude_team(bad))
    ich:close()
  end)

  it("Channel and Root: receipts and the inbox, and the private agentchat._receipts", function()
    assert.same({ "bob", "carol" }, ac.recipients(" [bob, carol,] "))
    assert.is_nil(ac.recipients(" all "))
    assert.is_true(ac.check_agent("carol"))
    fails("ac.check_agent", "RECEIPT_INVALID_AGENT", ac.check_agent("a/b"))
    assert.has_error(function()
      ac.check_agent(7)
    end)
    local c = assert(root:init("rcpt", { members = { "alice", "bob", "carol" } }))
    local res = assert(c:post{ from = "alice", to = "bob,carol", title = "Deploy?", body = "ok?" })
    assert(c:post{ from = "alice", title = "all hands", body = "x" })
    local names, how = c:addressees(res.seq)
    assert.same({ "bob", "carol" }, names)
    assert.equal("to", how)
    names, how = c:addressees{ from = "bob", to = "all" }
    assert.same({ "alice", "carol" }, names)
    assert.equal("members", how)
    fails("ch.addressees", "RECEIPT_NOT_FOUND", c:addressees(9))
    fails("ch.addressees", "RECEIPT_INVALID_SEQ", c:addressees(0))

    local a = assert(c:ack(res.seq, { as = "bob" }))
    assert.is_true(a.new)
    assert.is_true(sys.iso_has_offset(a.acked_at))
    assert.is_false(assert(c:ack(res.seq, { as = "bob" })).new)
    fails("ch.ack", "RECEIPT_NOT_ADDRESSEE", c:ack(res.seq, { as = "dave" }))
    fails("ch.ack", "RECEIPT_INVALID_AGENT", c:ack(res.seq, { as = "../x" }))
    fails("ch.ack", "RECEIPT_NOT_FOUND", c:ack(9, { as = "bob" }))
    fails("ch.ack", "RECEIPT_INVALID_SEQ", c:ack(-1, { as = "bob" }))
    fails("ch.ack", "RECEIPT_INVALID_TIME", c:ack(res.seq, { as = "carol", at = "yesterday" }))
    assert.is_nil(c:receipts(res.seq).addressees[2].acked_at, "a refused time writes no ack")
    assert.has_error(function()
      c:ack(1, {})
    end)

    local rec = assert(c:receipts(res.seq))
    assert.equal("acked", rec.addressees[1].state)
    assert.equal("delivered", rec.addressees[2].state)
    assert.is_false(rec.all_read)
    fails("ch.receipts", "RECEIPT_NOT_FOUND", c:receipts(9))
    fails("ch.receipts", "RECEIPT_INVALID_SEQ", c:receipts(0))

    local v, msg, code, exit, missing = c:wait_receipts(res.seq, { state = "acked", timeout = 0, interval = 0.01 })
    fails("ch.wait_receipts", "RECEIPT_TIMEOUT", v, msg, code, exit)
    assert.same({ "carol" }, missing)
    assert.is_true(c:wait_receipts(res.seq, { state = "acked", agents = { "bob" }, timeout = 1 }))
    fails("ch.wait_receipts", "RECEIPT_INVALID_AGENT", c:wait_receipts(res.seq, { agents = { "a/b" }, timeout = 0 }))
    fails("ch.wait_receipts", "RECEIPT_NOT_FOUND", c:wait_receipts(9, { timeout = 0 }))
    local open_ch = assert(root:init("rcpt-open"))
    assert(open_ch:post{ from = "alice", title = "alone", body = "x" })
    fails("ch.wait_receipts", "RECEIPT_NO_ADDRESSEES", open_ch:wait_receipts(1, { timeout = 0 }))
    open_ch:close()
    assert.has_error(function()
      c:wait_receipts(1, { state = "seen" })
    end)

    -- The inbox of carol: both messages of rcpt (and none elsewhere).
    local ib = assert(root:inbox{ as = "carol", peek = true, channels = { "rcpt", "rcpt" } })
    assert.equal(2, #ib.messages)
    assert.equal("rcpt", ib.messages[1].channel)
    assert.equal(0, c:cursor("carol"))
    assert.is_true(root:commit_inbox(ib))
    assert.equal(2, c:cursor("carol"))
    assert.equal(0, #assert(root:inbox{ as = "carol", channels = { "rcpt" } }).messages)
    fails("root.inbox", "CHANNEL_NOT_FOUND", root:inbox{ as = "carol", channels = { "nope" } })
    fails("root.inbox", "CHANNEL_INVALID_NAME", root:inbox{ as = "carol", channels = { "../x" } })
    assert.has_error(function()
      root:inbox{}
    end)
    assert.has_error(function()
      root:commit_inbox({})
    end)

    local hd = c:handle()
    local one = assert(hd:message(res.seq))
    inbox_shape(one)
    assert.equal("Deploy?", one.messages[1].fields.title)
    assert.equal(0, #assert(hd:message(99)).messages)

    local rc = require "agentchat._receipts"
    assert.is_true(rc.check_agent("carol"))
    fails_internal("RECEIPT_INVALID_AGENT", rc.check_agent(".x"))
    assert.is_true(rc.write_ack(hd, res.seq, "carol", "{}\n"))
    assert.is_false(rc.write_ack(hd, res.seq, "carol", "again\n"))
    fails_internal("RECEIPT_INVALID_AGENT", rc.write_ack(hd, res.seq, "a:b", "x"))
    local bytes, at = rc.read_ack(hd, res.seq, "carol")
    assert.equal("{}\n", bytes)
    assert.is_true(sys.iso_has_offset(at))
    assert.is_false(rc.read_ack(hd, res.seq, "dave"))
    fails_internal("RECEIPT_INVALID_AGENT", rc.read_ack(hd, res.seq, ""))
    assert.same({ "bob", "carol" }, rc.acks(hd, res.seq))
    local cur, cur_at = rc.cursor(hd, "carol")
    assert.equal(2, cur)
    assert.is_true(sys.iso_has_offset(cur_at))
    assert.is_nil(select(2, rc.cursor(hd, "nobody")))
    assert.is_true(rc.wait(hd, res.seq, { "bob", "carol" }, "acked", 1, 0.01))
    v, msg, code, exit, missing = rc.wait(hd, res.seq, { "bob", "erin" }, "read", 0, 0.01)
    fails_internal("RECEIPT_TIMEOUT", v, msg, code, exit)
    assert.same({ "erin" }, missing)
    fails_internal("RECEIPT_INVALID_AGENT", rc.wait(hd, res.seq, { "_x" }, "read", 0))
    c:close()
  end)

  it("Channel: team protocols, and agentchat.protocols", function()
    local P = require "agentchat.protocols"
    local typed = assert(ch:post{ from = "alice", to = "bob", title = "typed", body = "b", type = "message",
                                  role = "steer", fields = { note = "n" } })
    local m = assert(ch:peek(1)).messages[1]
    assert.equal(typed.seq, m.seq)
    assert.equal("message", m.type)
    assert.equal("steer", m.role)
    assert.equal("n", m.fields.note)
    fails("ch.post", "MESSAGE_INVALID_TYPE", ch:post{ from = "a", title = "t", body = "b", type = "Bad" })
    fails("ch.post", "MESSAGE_INVALID_ROLE", ch:post{ from = "a", title = "t", body = "b", role = "boss" })
    fails("ch.post", "MESSAGE_INVALID_REQUEST_ID", ch:post{ from = "a", title = "t", body = "b", request_id = "a b" })
    fails("ch.post", "MESSAGE_REQUEST_ID_REQUIRED", ch:post{ from = "a", title = "t", body = "b",
                                                            type = "shutdown_request" })
    fails("ch.post", "MESSAGE_INVALID_FIELD", ch:post{ from = "a", title = "t", body = "b", fields = { X = "1" } })
    local after = assert(ch:fetch{ as = "bob", after = typed.seq - 1 })
    assert.equal(typed.seq, after.messages[1].seq)

    local req = assert(ch:request{ from = "alice", to = "bob", type = "shutdown_request", wait = false })
    assert.is_string(req.request_id)
    assert.equal("bob", req.to)
    fails("ch.request", "REQUEST_INVALID_RECIPIENT",
      ch:request{ from = "alice", to = "all", type = "shutdown_request" })
    fails("ch.request", "MESSAGE_INVALID_TYPE", ch:request{ from = "alice", to = "bob", type = "shutdown" })
    fails("ch.request", "REQUEST_EXISTS", ch:request{ from = "alice", to = "bob", type = "shutdown_request",
                                                      request_id = req.request_id })
    local _, _, req2 = fails("ch.request", "ETIMEDOUT", ch:request{ from = "alice", to = "bob",
                                                                       type = "plan_approval_request", timeout = 0 })
    assert.equal("plan_approval_request", req2.type)
    fails("ch.await_response", "ETIMEDOUT", ch:await_response{ as = "alice", request_id = req.request_id,
                                                               timeout = 0 })
    fails("ch.await_response", "REQUEST_NOT_FOUND", ch:await_response{ as = "bob", request_id = req.request_id })
    local res = assert(ch:respond{ from = "bob", request_id = req.request_id, approve = true, reason = "ok" })
    assert.equal("approved", res.decision)
    assert.equal("shutdown_response", res.type)
    fails("ch.respond", "REQUEST_ALREADY_ANSWERED", ch:respond{ from = "bob", request_id = req.request_id,
                                                                 approve = false })
    fails("ch.respond", "REQUEST_NOT_FOUND", ch:respond{ from = "bob", request_id = "nope", approve = true })
    fails("ch.respond", "REQUEST_INVALID_RECIPIENT", ch:respond{ from = "carol", request_id = req2.request_id,
                                                                  approve = true })
    local r = assert(ch:await_response{ as = "alice", request_id = req.request_id, timeout = 0 })
    assert.is_true(r.approved)
    assert.equal("ok", r.reason)
    local got, missing, requests = ch:await_responses{ as = "alice", request_ids = { req.request_id, req2.request_id },
                                                       timeout = 0 }
    assert.is_true(got[req.request_id].approved)
    assert.same({ req2.request_id }, missing)
    assert.equal(2, #requests)
    fails("ch.await_responses", "REQUEST_NOT_FOUND", ch:await_responses{ as = "alice", request_ids = { "nope" } })
    local team = assert(ch:team{ silent_after = 60 })
    assert.equal("dev", team.channel)
    assert.equal("alice", team.members[1].name)
    assert.equal("shutdown", team.members[2].lifecycle)
    assert.is_table(team.silent)
    local report = assert(ch:doctor{ stale_after = 60 })
    assert.equal("dev", report.channel)
    assert.equal("request", report.edges[1].kind)   -- req2 has no response
    assert.same({ {}, {}, 0 }, { report.cycles, report.stalls, report.findings })

    assert.is_true(P.check_type("acme.review_request"))
    fails("protocols.check_type", "MESSAGE_INVALID_TYPE", P.check_type("a-b"))
    assert.is_true(P.check_role("follow_up"))
    fails("protocols.check_role", "MESSAGE_INVALID_ROLE", P.check_role("boss"))
    assert.is_true(P.check_request_id("r-1"))
    fails("protocols.check_request_id", "MESSAGE_INVALID_REQUEST_ID", P.check_request_id(""))
    assert.equal("x_response", P.response_type("x_request"))
    assert.is_true(P.is_response_type("x_response"))
    assert.equal(32, #P.new_request_id())
    assert.same({ { "type", "message" }, { "a", "1" } }, P.extra_fields{ type = "message", fields = { a = "1" } })
    fails("protocols.extra_fields", "MESSAGE_REQUEST_ID_REQUIRED", P.extra_fields{ type = "x_response" })
    fails("protocols.extra_fields", "MESSAGE_INVALID_FIELD", P.extra_fields{ fields = { role = "x" } })
    local preq = assert(P.request(ch, { from = "carol", to = "alice", type = "x_request", wait = false }))
    assert(P.respond(ch, { from = "alice", request_id = preq.request_id, decision = "rejected" }))
    assert.is_false(assert(P.await_one(ch, { as = "carol", request_id = preq.request_id, timeout = 0 })).approved)
    assert.is_false(assert(P.await(ch, { as = "carol", request_id = preq.request_id, timeout = 0 }))[preq.request_id]
      .approved)
    fails("protocols.await", "REQUEST_NOT_FOUND", P.await(ch, { as = "carol", request_id = "nope" }))
    fails("protocols.await_one", "REQUEST_NOT_FOUND", P.await_one(ch, { as = "carol", request_id = "nope" }))
    assert.equal("dev", assert(P.team(ch)).channel)
    assert.equal(6, #P.TYPES)
    assert.equal(4, #P.ROLES)
    assert.same({ "approved", "rejected" }, P.DECISIONS)
    assert.equal("shutdown", P.LIFECYCLE.stopped)
    assert.equal(600, P.DEFAULT_SILENT_AFTER)
    assert.equal(900, P.DEFAULT_TIMEOUT)
    assert.equal(64, P.TYPE_MAX)
    assert.equal(128, P.REQUEST_ID_MAX)
  end)

  it("Channel: the state summary, agentchat.state and agentchat.sandbox", function()
    local s = assert(ch:state())
    assert.equal("dev", s.channel)
    assert.is_number(s.last_seq)
    assert.is_table(s.open_tasks)
    assert.is_string(assert(ch:state{ strict = true }).generated_at)
    local md = assert(ch:render_state())
    assert.truthy(md:find("dev", 1, true))
    assert.equal("dev!", ch:render_state{ template = "local s = ... return s.channel .. '!'" })
    fails("ch.render_state", "TEMPLATE_RUNTIME_ERROR", ch:render_state{ template = "error('no')" })
    fails("ch.compact", "TEMPLATE_LOAD_ERROR", ch:compact{ template = "return (" })
    assert.is_nil(H.read(root.path .. "/dev/state.md"))
    assert.equal("dev", assert(ch:compact{ as = "alice" }).channel)
    assert.truthy(H.read(root.path .. "/dev/state.md"))

    local state = require "agentchat.state"
    local data = assert(state.gather(ch, { strict = false }))
    assert.equal(data.channel, "dev")
    assert.is_string(state.render(data))
    local n = state.counts(data)
    assert.same({ "blockers", "decisions", "locks", "open_tasks" }, sorted_keys(n, function() return true end))
    assert.is_true(state.write(ch, data, "# hand written\n", { audit = false }))
    assert.equal("# hand written\n", H.read(root.path .. "/dev/state.md"))
    assert.equal(12, #state.TASK_FIELDS)
    assert.is_true(#state.LOCK_FIELDS > 0)

    local sandbox = require "agentchat.sandbox"
    local stats = {}
    assert.equal("hi", sandbox.render("local s = ... return s.x", "t", { x = "hi" }, { stats = stats }))
    assert.is_number(stats.instructions)
    fails("sandbox.render", "TEMPLATE_BAD_RESULT", sandbox.render("return 1"))
    fails("sandbox.render", "TEMPLATE_FORBIDDEN", sandbox.render("return os.time()"))
    fails("sandbox.render", "TEMPLATE_BUDGET_EXCEEDED", sandbox.render("while true do end", "t", {}, { budget = 1e5 }))
    assert.is_number(sandbox.DEFAULT_BUDGET)
    assert.is_number(sandbox.DEFAULT_MAX_OUTPUT)
    assert.is_number(sandbox.DEFAULT_MAX_MEMORY)
    assert.is_number(sandbox.DEFAULT_MAX_SECONDS)
  end)

  it("agentchat.bridge", function()
    local bridge = require "agentchat.bridge"
    local home = H.tmpdir()
    os.execute("cp -r " .. H.sh(H.repo .. "/tests/fixtures/claude-teams/home/.") .. " " .. H.sh(home))
    local bch = assert(root:init("bridged", { members = { "alice" } }))
    assert(bch:post{ from = "alice", to = "researcher", title = "hi", body = "over the bridge" })
    local lines, logs = {}, {}
    local code, reason, counts = bridge.claude_team(bch, {
      team = home .. "/teams/refactor-squad", once = true,
      log = function(l) logs[#logs + 1] = l end, out = function(l) lines[#lines + 1] = l end })
    assert.same({ 0, "once", 1, 16 }, { code, reason, counts.to_team, counts.to_channel })
    assert.equal("delivered #1 from alice to researcher (message)", lines[1])
    local code2, reason2, _, msg, ecode = bridge.claude_team(bch, { team = home .. "/none", once = true,
      log = function() end, out = function() end })
    assert.same({ 1, "error", "IMPORT_INVALID_FOLDER" }, { code2, reason2, ecode })
    assert.truthy(msg)
    assert.equal("claude-team", bridge.DEFAULT_AS)
    assert.equal(10000, bridge.STALE_MS)
    assert.equal(5, bridge.DEFAULT_INTERVAL)
    assert.has_error(function()
      bridge.claude_team(bch, {})
    end)
    bch:close()
  end)

  it("agentchat.watch, the watch context and agentchat.changes", function()
    local watch = require "agentchat.watch"
    local f = function() end
    assert.same({ message = f }, watch.handlers(f))
    local none, why = watch.handlers(42)
    assert.is_nil(none)
    assert.is_string(why)
    local wch = assert(root:init("watched"))
    assert(wch:post{ from = "alice", to = "bot", title = "job", body = "do it" })
    local seen, lines = {}, {}
    local code, reason = watch.run(wch, { as = "bot", once = true, log = function(l) lines[#lines + 1] = l end,
      handlers = { message = function(msg, ctx)
        wrap(ctx, "ctx", the_doc)
        seen[#seen + 1] = msg.title
        assert.equal("bot", ctx.name)
        assert.equal("bot", ctx.as)
        assert.equal(wch, ctx.channel)
        assert.equal(root, ctx.root)
        assert.is_true(ctx.once)
        assert.is_number(ctx.interval)
        assert.same({}, ctx.args)
        assert.equal(0, ctx.cursor())
        local r = ctx.reply(msg, { body = "done" })
        assert.equal("Re: job", assert(wch:peek(1)).messages[1].title)
        assert.is_number(r.seq)
        assert.is_number(ctx.post{ to = "alice", title = "note", body = "n" }.seq)
        ctx.log("handled", msg.seq, msg.from)
        ctx.stop()
      end } })
    assert.equal(0, code)
    assert.equal("stopped", reason)
    assert.same({ "job" }, seen)
    assert.same({ "watch: handled 1 alice" }, lines)
    assert.equal(1, wch:cursor("bot"))
    assert.same({ 1, "failed" }, { watch.run(wch, { as = "alice", once = true, retries = 0, log = function() end,
      handlers = { message = function() error("boom") end } }) })
    assert.is_table(watch.HANDLERS)
    assert.equal(5, watch.DEFAULT_INTERVAL)
    assert.equal(3, watch.DEFAULT_RETRIES)
    assert.equal(1, watch.DEFAULT_BACKOFF)
    assert.equal(60, watch.MAX_BACKOFF)
    assert.same({ "stop", "skip", "dead-letter" }, watch.ON_ERROR)

    local changes = require "agentchat.changes"
    assert.equal("task", changes.kind_of("lease.claimed"))
    assert.equal("lock", changes.kind_of("path.locked"))
    assert.is_nil(changes.kind_of("discussion"))
    local found
    for _, m in ipairs(assert(ch:peek(1000)).messages) do
      local kind, change = changes.of(m)
      if kind == "task" and change.event == "task.created" then
        found = change
        break
      end
    end
    assert.is_table(found)
    assert.equal("alice", found.actor)
    assert.is_nil(changes.of({ status = "discussion", body = "" }))
    assert.is_table(changes.PREFIXES)

    local kinds = require "agentchat.kinds"
    assert.same({ "message", "event", "audit" }, kinds.KINDS)
    assert.equal("event", kinds.of_status("event.status"))
    assert.equal("audit", kinds.of_status("lease.claimed"))
    assert.equal("message", kinds.of_status(nil))
    assert.equal("audit", kinds.of({ fields = { status = "path.locked" } }))
    assert.equal("message", kinds.of({ status = "discussion" }))
    local set = kinds.set({ "event", "audit" })
    assert.same({ event = true, audit = true }, set)
    assert.is_nil(kinds.set(nil))
    assert.has_error(function()
      kinds.set({ "chat" }, "test")
    end)
    local msgs = { { status = "discussion", text = "a" }, { status = "event.x", text = "bb" },
                   { status = "task.created", text = "ccc" } }
    assert.same({ msgs[2], msgs[3] }, kinds.keep(msgs, set))
    assert.equal(2, kinds.budget(msgs, 2, nil, kinds.shown_bytes))
    assert.equal(1, kinds.budget(msgs, nil, 140, kinds.shown_bytes))
    assert.equal(74, kinds.shown_bytes({ text = "a\n\n" }))
    assert.equal("(could not read message 0002-x.md: bad)",
      kinds.shown_text({ name = "0002-x.md", decode_error = "bad" }))
    assert.equal(string.rep("=", 70), kinds.RULE)
    assert.equal(kinds.RULE .. "\n", kinds.PRINTED.before)
    assert.equal(kinds.RULE .. "\na\n\n" .. kinds.RULE .. "\nok\n\n",
      kinds.print({ { text = "a\n\n" }, { seq = 2, shown = "ok" } }))
    assert.equal("", kinds.print({}))
  end)

  it("agentchat.json and agentchat.yaml", function()
    assert.same({ a = { 1, 2 } }, json.loads('{"a": [1, 2]}'))
    fails("json.loads", "JSON_INVALID", json.loads("nope"))
    assert.equal('{"a": 1, "b": []}', json.dumps({ b = json.array({}), a = 1 }, { sort_keys = true }))
    assert.equal('{\n  "x": null\n}', json.dumps({ x = json.null }, { indent = 2 }))
    assert.has_error(function()
      json.dumps({ f = print })
    end)
    local arr = json.array({})
    assert.is_true(json.is_array(arr))
    assert.is_false(json.is_array({}))
    assert.equal(json.array_mt, getmetatable(arr))
    assert.equal(json.null, require("cjson").null)

    local yaml = require "agentchat.yaml"
    assert.same({ name = "x", list = { 1, "yes" } }, yaml.decode("name: x\nlist: [1, yes]\n"))
    fails("yaml.decode", "YAML_INVALID", yaml.decode("a: [1\n"))
    local v, marks = yaml.decode("a:\n  b: 1\n", { marks = true })
    assert.equal(1, v.a.b)
    assert.equal(2, marks[v.a].keys.b.line)
    assert.same({ 1, 2 }, yaml.decode_all("1\n---\n2\n"))
    fails("yaml.decode_all", "YAML_INVALID", yaml.decode_all("{"))
    assert.equal("a: 1\n", yaml.encode({ a = 1 }))
    assert.is_true(yaml.is_array(yaml.array({})))
    assert.equal(json.null, yaml.null)
    assert.equal(json.array_mt, yaml.array_mt)
  end)

  it("agentchat.store: the module, the store handle and the channel handle", function()
    assert.is_true(store.check_name("ok"))
    fails("store.check_name", "CHANNEL_INVALID_NAME", store.check_name(".."))
    assert.is_true(store.check_marker("task-1.md"))
    fails("store.check_marker", "CLAIM_INVALID_NAME", store.check_marker("x"))
    local meta = assert(store.meta_compose("raw", { "a" }, "t", "2026-01-01T00:00:00+00:00"))
    assert.same({ "a" }, store.parse_meta(meta).members)

    assert.is_true(store.is_etcd("etcd://h:1/p"))
    assert.is_false(store.is_etcd(dir))
    local est = assert(store.open("etcd://127.0.0.1:1/p?timeout=1", { username = "u", password = "pw" }))
    assert.equal("etcd", est:kind())
    est:end_session()              -- no lease yet: nothing to revoke, no request
    est:close()
    fails("store.open", "ETCD_CONFIG", store.open("etcd://127.0.0.1:1"))
    st = assert(store.open(dir .. "/raw"))
    assert.equal("fs", st:kind())
    assert.equal(dir .. "/raw", st:root())
    assert.same({}, assert(st:channels()))
    assert.is_true(st:create("raw", meta))
    fails("st.create", "CHANNEL_EXISTS", st:create("raw", meta))
    fails("st.create", "CHANNEL_INVALID_NAME", st:create("a/b", meta))
    assert.same({ "raw" }, st:channels())
    fails("st.channel", "CHANNEL_NOT_FOUND", st:channel("none"))
    h = assert(st:channel("raw"))
    assert.equal("raw", h:name())
    assert.equal(meta, h:meta())
    assert.is_false(h:bare())
    local seq, file = h:post{ from = "a", to = "b", title = "t", body = "x" }
    assert.equal(1, seq)
    assert.equal("0001-a-t.md", file)
    assert.has_error(function()
      h:post{ from = "a", title = "t" }
    end)
    local inbox = assert(h:fetch{ as = "b" })
    inbox_shape(inbox)
    assert.equal("x\n", inbox.messages[1].body)
    inbox_shape(assert(h:last(5)))
    assert.same({ count = 1, max_seq = 1, last_name = "0001-a-t.md" }, h:summary())
    fails("h.trim", "TRIM_KEEPS_NEWEST", h:trim(1))
    fails("h.trim", "TRIM_KEEPS_NEWEST", h:trim(1, true))   -- the check alone refuses alike
    assert.same({ count = 1, max_seq = 1, last_name = "0001-a-t.md" }, h:summary())
    assert.equal(0, h:cursor("b"))
    assert.is_true(h:set_cursor("b", 1))
    assert.equal(1, h:cursor("b"))
    do
      local lock <close> = assert(h:cursor_lock("b"))
      assert.equal("agentchat.dirlock (held)", tostring(lock))
      assert.is_true(h:advance_cursor("b", 0, 1))     -- still at the expected 1: set (a reset)
      assert.equal(0, h:cursor("b"))
    end
    assert.is_true(h:advance_cursor("b", 3))
    assert.is_true(h:advance_cursor("b", 2))           -- without expected: only up
    assert.is_true(h:advance_cursor("b", 2, 0))        -- moved since 0: only up
    assert.equal(3, h:cursor("b"))
    assert.is_true(h:set_cursor("b", 1))
    fails("h.wait", "ETIMEDOUT", h:wait{ as = "b", timeout = 0.05, interval = 0.01 })
    inbox_shape(assert(h:wait{ as = "b", after = 0, timeout = 1 }))
    H.write(dir .. "/raw/raw/task-9.md", "x")
    assert.equal("task-9.CLAIMED-b.md", h:claim_marker("task-9.md", "b"))
    fails("h.claim_marker", "CLAIM_LOST", h:claim_marker("task-9.md", "b"))
    assert.is_true(h:write_state("# s\n"))
    assert.equal("# s\n", H.read(dir .. "/raw/raw/state.md"))
    do
      local lock <close> = assert(h:exclusive(false))
      assert.equal("agentchat.dirlock (held)", tostring(lock))
      local h2 <close> = assert(st:channel("raw"))
      fails("h.exclusive", "CHANNEL_BUSY", h2:exclusive(false))
      lock:release()
      assert.equal("agentchat.dirlock (released)", tostring(lock))
      assert(h2:exclusive(true)):release()
    end
    do
      local w <close> = h:watch()
      assert.is_true(w:notifying())
      assert.same({ false, false }, { w:wait(0.01) })
      assert(h:post{ from = "a", to = "b", title = "t", body = "y" })
      local changed = w:wait(5)
      assert.is_true(changed)
      w:close()
      assert.has_error(function()
        w:wait(0)
      end, "attempt to use a closed watch")
      -- One wait on several watches: the messages and message #1's acks.
      local wm <close> = h:watch()
      local wa <close> = h:watch{ acks = 1, cursors = true }
      assert.is_true(store.wait_watches({ wm, wa }, 0.01))
      assert(h:set_cursor("b", 2))
      assert.is_true(store.wait_watches({ wm, wa }, 5))
      assert.has_error(function()
        store.wait_watches({ w }, 0)
      end, "attempt to use a closed watch")
    end
  end)

  it("agentchat.sys", function()
    assert.is_boolean(sys.isatty(1))
    local path = dir .. "/file.txt"
    H.write(path, "content")
    assert.equal("content", sys.read_file(path))
    local none, msg, errno = sys.read_file(dir .. "/missing")
    assert.is_nil(none)
    assert.equal("[Errno 2] No such file or directory", msg)
    assert.equal(2, errno)
    assert.equal(27, select(3, sys.read_file(path, 3)))     -- EFBIG over the cap
    -- sys.read_stdin reads standard input to EOF, which could be a
    -- terminal here: it runs in a child with a given stdin.
    local script = dir .. "/stdin.lua"
    H.write(script, 'io.write(assert(require("agentchat.sys").read_stdin(100)))')
    local r = H.run({ "run", script }, { stdin = "from stdin" })
    assert.equal(0, r.code, r.stderr)
    assert.equal("from stdin", r.stdout)
    mark("sys.read_stdin")
    assert.truthy(sys.now_iso():match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[+-]%d%d:%d%d$"))
    assert.truthy(sys.now_iso(6):match("%.%d%d%d%d%d%d[+-]"))
    local t0 = sys.monotonic()
    assert.is_true(sys.sleep(0.01))
    assert.is_true(sys.monotonic() - t0 >= 0.01)
    assert.is_true(sys.utf8_valid("\u{e9}"))
    assert.is_false(sys.utf8_valid("\255"))
    assert.is_nil(sys.utf8_error("\u{e9}"))
    assert.equal("'utf-8' codec can't decode byte 0xff in position 1: invalid start byte", sys.utf8_error("a\255"))
    assert.equal("'utf-8' codec can't encode character '\\udcff' in position 1: surrogates not allowed",
      sys.utf8_error("a\255", "surrogateescape"))
    assert.has_error(function() sys.utf8_error("a", "replace") end)
    assert.equal("hello-world", sys.slugify("Hello, World!"))
    assert.equal("x", sys.strip("\u{3000} x \n"))
    assert.same({ "a", "b c", "a" }, sys.comma_list(" a,,b c ,\u{3000},a,"))
    assert.same({}, sys.comma_list(nil))
    assert.is_true(sys.heading_has("text\n## \u{3000}Decision: go", { "blocker", "decision" }))
    assert.is_false(sys.heading_has("## decisions\n# x decision", { "decision" }))
    assert.equal(" x", sys.rstrip(" x \t"))
    assert.equal("0.1", sys.float_repr(0.1))
    assert.equal("1e+16", sys.float_repr(1e16))
    assert.is_nil(sys.interrupted())
    assert.is_true(math.type(sys.getpid()) == "integer")
    assert.is_string(sys.home())
    assert.is_true(sys.iso_has_offset("2026-01-01T00:00:00+00:00"))
    assert.is_false(sys.iso_has_offset("2026-01-01T00:00:00"))
    assert.is_nil(sys.iso_has_offset("yesterday"))
    assert.equal(1767225600.25, sys.iso_epoch("2026-01-01T01:00:00.25+01:00"))
    assert.equal(1767225600, sys.iso_epoch("2026-01-01T00:00:00"))
    assert.is_nil(sys.iso_epoch("yesterday"))
    assert.is_true(math.abs(sys.time() - os.time()) < 2)
    assert.truthy(sys.uuid4():match("^%x+$"))
    assert.equal(32, #sys.uuid4())
    assert.equal("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", sys.sha256("abc"))
    assert.equal("YWJjAA==", sys.b64encode("abc\0"))
    assert.equal("abc\0", sys.b64decode("YWJjAA=="))
    assert.is_nil(sys.b64decode("not base64!"))
    assert.equal(2, sys.exit_code("LEASE_CONFLICT"))
    assert.equal(3, sys.exit_code("CLAIM_LOST"))
    assert.equal(1, sys.exit_code("PATH_LOCK_CONFLICT"))
  end)

  it("agentchat.errors and agentchat.pretty", function()
    local errors = require "agentchat.errors"
    local e = errors.new("CLAIM_LOST", "gone")
    assert.equal("CLAIM_LOST: gone", tostring(e))
    assert.equal(3, e.exit)
    assert.is_true(errors.is_error(e))
    assert.is_false(errors.is_error({}))
    assert.same({ n = 4, nil, "m", "IO_ERROR", 1 }, table.pack(errors.fail("IO_ERROR", "m")))
    local ok, raised = pcall(errors.raise, "m", "SEQ_LOCK_TIMEOUT", 1)
    assert.is_false(ok)
    assert.is_true(errors.is_error(raised))
    assert.equal("SEQ_LOCK_TIMEOUT", raised.code)
    assert.equal("agent-chat: channel x", errors.line("CHANNEL_NOT_FOUND", "channel x"))
    assert.equal("agent-chat: IO_ERROR: disk", errors.line("IO_ERROR", "disk"))
    assert.equal("a\\nb\\r\\nc", errors.one_line("a\nb\r\nc"))
    assert.equal("agent-chat: IO_ERROR: x\\ny", errors.line("IO_ERROR", "x\ny"))
    assert.equal(130, errors.exit_for("INTERRUPTED"))
    assert.equal(2, errors.exit_for("TASK_NOT_FOUND", 2))
    assert.equal(1, errors.exit_for("IO_ERROR"))
    assert.is_true(errors.plain.CHANNEL_NOT_FOUND)
    assert.equal(3, errors.exit_codes.CLAIM_LOST)
    assert.equal(errors, ac.errors)
    assert.is_table(ac.pycompat)
    assert.equal(getmetatable(root), ac.Root)
    assert.equal(getmetatable(ch), ac.Channel)

    local pretty = require "agentchat.pretty"
    assert.equal('{ 1, 2, a = "x" }', pretty.format({ 1, 2, a = "x" }))
    assert.equal("null", pretty.format(json.null))
    assert.equal('"a\\n"', pretty.quote("a\n"))
    assert.is_number(pretty.defaults.width)
    assert.is_table(pretty.keywords)
  end)

  it("agentchat.config", function()
    local config = require "agentchat.config"
    local home = H.tmpdir()
    local env = { HOME = home, XDG_CONFIG_HOME = false, AGENT_CHAT_ROOT = false, AGENT_CHAT_NAME = false,
                  AGENT_CHAT_CHANNELS = false }
    local user = home .. "/.config/agent-chat/config.yaml"
    assert.equal(user, config.user_path(env))
    assert.equal("/x/agent-chat.yaml", config.root_path("/x"))
    assert.is_false(config.user_root(env))
    assert(os.execute("mkdir -p " .. H.sh(home .. "/.config/agent-chat") .. " " .. H.sh(home .. "/r")
      .. " " .. H.sh(home .. "/wf")))
    H.write(user, "identity:\n  name: ursula\nroot: " .. home .. "/r\n")
    assert.equal(home .. "/r", config.user_root(env))
    local cfg = assert(config.load{ env = env, reload = true })
    assert.equal("ursula", cfg.name)
    assert.equal(home .. "/r", cfg.root)
    assert.equal(user .. ":2", cfg.sources.name)
    assert.equal("loaded", cfg.files.user.status)
    local layer = assert(config.read_file(user, "user", env))
    assert.equal("ursula", layer.values.name)
    assert.is_false(config.read_file(home .. "/none.yaml", "root", env))
    H.write(home .. "/bad.yaml", "identity: [\n")
    fails("config.read_file", "CONFIG_INVALID", config.read_file(home .. "/bad.yaml", "root", env))
    H.write(home .. "/r/agent-chat.yaml", "bogus: 1\n")
    fails("config.load", "CONFIG_INVALID", config.load{ env = env, reload = true })
    local lenient = assert(config.load{ env = env, reload = true, lenient = true })
    assert.equal(1, #lenient.errors)
    assert.equal("invalid", lenient.files.root.status)
    assert.same({ "a", "b" }, config.split_list(" a, ,b "))
    H.write(home .. "/wf/x.lua", "return {}")
    assert.equal(home .. "/wf/x.lua", config.find_workflow("x", { home .. "/wf" }))
    assert.equal("nope", config.find_workflow("nope", { home .. "/wf" }))
    assert.equal("./x.lua", config.resolve_workflow("./x.lua"))
    config.reset()
    assert.is_table(config.SETTINGS[1])
    -- config.get reads the real environment and user config: in a child
    -- with this HOME, so the machine's own config cannot interfere.
    local script = home .. "/get.lua"
    H.write(script, 'local c = require "agentchat.config"\n'
      .. 'io.write(tostring(c.get("name", arg[1])), " ", tostring(c.get("interval", arg[1])))')
    os.remove(home .. "/r/agent-chat.yaml")
    local r = H.run({ "run", script, home .. "/r" }, { env = env })
    assert.equal(0, r.code, r.stderr)
    assert.equal("ursula 5.0", r.stdout)
    mark("config.get")
  end)

  it("closes what it opened (last: the objects above are used until here)", function()
    h:close()
    st:close()
    ch:close()
    root:close()
  end)

  it("called every documented function at least once", function()
    local missing = check_called(the_doc, calls)
    assert.same({}, missing, table.concat(missing, "\n"))
  end)
end)

-- ------------------------------------------------------------ (c) handles

describe("handles", function()
  local function fresh()
    local d = H.tmpdir()
    local root = assert(ac.open(d))
    local ch = assert(root:init("c"))
    return root, ch, d
  end

  it("store and channel userdata have __close, __gc, __tostring and __name", function()
    local root, ch = fresh()
    for _, u in ipairs({ root._store, ch:handle() }) do
      assert.equal("userdata", type(u))
      local mt = getmetatable(u)
      assert.is_function(mt.__close)
      assert.is_function(mt.__gc)
      assert.is_function(mt.__tostring)
      assert.is_table(mt.__index)
      assert.is_function(mt.__index.close)
    end
    assert.equal("agentchat.store", getmetatable(root._store).__name)
    assert.equal("agentchat.channel", getmetatable(ch:handle()).__name)
    assert.is_function(getmetatable(root).__close)
    assert.is_function(getmetatable(ch).__close)
  end)

  it("closing twice is safe and a closed handle raises a clear error", function()
    local root, ch = fresh()
    local h, st = ch:handle(), root._store
    assert.truthy(tostring(h):find("(c)", 1, true))
    h:close()
    h:close()
    assert.equal("agentchat.channel (closed)", tostring(h))
    for _, use in ipairs({ function() h:post{ from = "a", title = "t", body = "b" } end,
                           function() h:cursor("a") end,
                           function() ch:peek(1) end,
                           function() ch:tasks() end,
                           function() ch:locks() end }) do
      local ok, err = pcall(use)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("attempt to use a closed channel", 1, true), tostring(err))
    end
    ch:close()
    st:close()
    st:close()
    root:close()
    assert.equal("agentchat.store (closed)", tostring(st))
    local ok, err = pcall(root.channel, root, "c")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("attempt to use a closed store", 1, true))
    assert.has_error(function()
      st:channels()
    end, "attempt to use a closed store")
  end)

  it("a channel outlives its closed root; <close> closes both at scope exit", function()
    local root, ch = fresh()
    root:close()
    assert(ch:post{ from = "a", title = "t", body = "after the root closed" })
    assert.equal(1, assert(ch:peek(1)).count)
    ch:close()
    local h, st
    do
      local r <close> = assert(ac.open(select(3, fresh())))
      local c <close> = assert(r:channel("c"))
      h, st = c:handle(), r._store
      assert.equal(0, c:cursor("x"))
    end
    assert.equal("agentchat.channel (closed)", tostring(h))
    assert.equal("agentchat.store (closed)", tostring(st))
  end)

  it("the garbage collector releases unreferenced handles in any order", function()
    for _ = 1, 50 do
      local root, ch = fresh()
      if math.random(2) == 1 then
        root:close()
      end
      assert(ch:post{ from = "a", title = "t", body = "b" })
    end
    collectgarbage()
    collectgarbage()
  end)
end)

-- ------------------------------------------------------------ the checks can fail

describe("the drift checks themselves", function()
  it("report a removed row, an undocumented function and a row naming nothing", function()
    local text = read_doc()
    local objects = make_objects()
    -- A page without the row of ch:post, and with a row for a function that does not exist.
    local cut = text:gsub("\n| `ch:post{[^\n]*", "", 1)
    cut = cut:gsub("\n(| `ch:fetch)", "\n| `ch:teleport(where)` | nothing | — |\n%1", 1)
    local doc = parse(cut)
    local problems = table.concat(check_documented(doc, objects), "\n")
    assert.truthy(problems:find("undocumented: ch:post (function)", 1, true), problems)
    assert.truthy(problems:find("ch.teleport is documented as a function but is nil", 1, true), problems)
    -- A function added to a module without a row.
    sys.zz_dummy = function() end
    local ok, res = pcall(check_documented, the_doc, objects)
    sys.zz_dummy = nil
    assert.is_true(ok, res)
    assert.truthy(table.concat(res, "\n"):find("undocumented: sys.zz_dummy (function)", 1, true))
    -- A module neither documented nor internal.
    package.preload["agentchat.zz_new"] = function() return {} end
    ok, res = pcall(check_documented, the_doc, objects)
    package.preload["agentchat.zz_new"] = nil
    assert.is_true(ok, res)
    assert.truthy(table.concat(res, "\n"):find("module agentchat.zz_new is neither documented", 1, true))
  end)

  it("report a code missing from the table and a documented function nobody called", function()
    local text = read_doc()
    local doc = parse((text:gsub("\n| `CLAIM_LOST` |[^\n]*", "", 1)))
    local problems = table.concat(check_codes(doc), "\n")
    assert.truthy(problems:find("ch.claim_marker lists CLAIM_LOST, which the Error codes table lacks", 1, true))
    assert.truthy(problems:find("uses the code CLAIM_LOST, which the Error codes table lacks", 1, true))
    local counts = {}
    for _, row in ipairs(the_doc.rows) do
      counts[row.id] = 1
    end
    counts["ch.read"] = nil
    assert.same({ string.format("line %d: ch.read is documented but no test here calls it",
      the_doc.by_id["ch.read"].line) }, check_called(the_doc, counts))
  end)
end)
