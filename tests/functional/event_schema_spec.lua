-- Functional specs for the event schema (docs/format.md 3.10):
-- schemas/agent-chat-event.schema.json is a valid JSON Schema 2020-12 that
-- states what docs/format.md asks of it; every event that `event post` writes
-- (capability with every --primitives form, status with every value, with
-- and without --detail, unicode text) is a message with format.md's
-- frontmatter whose body is canonical compact JSON that a real validator
-- (tests/validate-json-schema: Debian's python3-jsonschema,
-- Draft202012Validator) accepts, and `event read` prints each one as
-- canonical spaced JSON that validates too. The validator is shown to
-- reject hand-made invalid events, and the tool rejects each of them as
-- well (and accepts the hand-made valid ones), so schema and tool agree.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local json = require "agentchat.json"

local CH = "ev"
local VALIDATOR = H.repo .. "/tests/validate-json-schema"
local SCHEMA = H.repo .. "/schemas/agent-chat-event.schema.json"
local ALL = { "messages", "cursors", "wait", "tasks", "dependencies", "leases", "path_locks", "state_summary" }
local REVERSED = { "state_summary", "path_locks", "leases", "dependencies", "tasks", "wait", "cursors", "messages" }

local function ac(root, ...)
  local r = F.run({ "--root", root, ... })
  assert.is_nil(F.crashed(r.stderr), F.describe(r))
  return r
end

--- Run the validator on `docs` (a list of one-line JSON texts), optionally
--- with --canonical compact|spaced -> {code=, out={"ok 1", ...}, err=}.
local function validate(docs, canonical)
  local dir = F.tmpdir()
  F.write(dir .. "/docs.jsonl", #docs > 0 and table.concat(docs, "\n") .. "\n" or "")
  local cmd = F.sh(VALIDATOR) .. (canonical and " --canonical " .. canonical or "") .. " " .. F.sh(SCHEMA) .. " "
    .. F.sh(dir .. "/docs.jsonl") .. " >" .. F.sh(dir .. "/out") .. " 2>" .. F.sh(dir .. "/err")
  local ok, _, code = os.execute("env LC_ALL=C.UTF-8 " .. cmd)
  return { code = ok and 0 or code, out = F.lines(F.read(dir .. "/out")), err = F.read(dir .. "/err") }
end

--- Assert the validator accepted every doc.
local function all_valid(docs, canonical)
  local v = validate(docs, canonical)
  assert.equal("", v.err)
  for i, line in ipairs(v.out) do
    assert.equal("ok " .. i, line, "line " .. i .. ": " .. F.show(docs[i]))
  end
  assert.equal(#docs, #v.out)
  assert.equal(0, v.code)
end

--- slugify of docs/format.md 3.3 (non-ASCII letters are outside [a-z0-9], so
--- byte-wise lower-casing is enough: "Zoë Ünïcødé" gives "zo-n-c-d").
local function slugify(s)
  s = s:lower():gsub("[^a-z0-9]+", "-"):gsub("^%-+", ""):gsub("%-+$", "")
  s = s:sub(1, 40):gsub("%-+$", "")
  return s == "" and "msg" or s
end

--- Split a message file into its frontmatter lines and its body.
local function split_message(text)
  assert.equal("---\n", text:sub(1, 4), F.show(text))
  local close = text:find("\n---\n", 4, true)
  assert.truthy(close, "no closing fence: " .. F.show(text))
  return F.lines(text:sub(5, close)), text:sub(close + 5)
end

local LOCAL_TS = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[+-]%d%d:%d%d$"
local BODY_TS = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%d%d%d%d[+-]%d%d:%d%d$"

describe("the event schema file", function()
  it("is a valid Draft 2020-12 schema (check_schema) that the validator can use", function()
    local v = validate({})
    assert.equal("", v.err)
    assert.same({}, v.out)
    assert.equal(0, v.code)
  end)

  it("states what docs/format.md 3.10 asks: $schema, additionalProperties, required order, const, enums", function()
    local s = assert(json.loads(assert(F.read(SCHEMA))))
    assert.equal("https://json-schema.org/draft/2020-12/schema", s["$schema"])
    assert.equal("object", s.type)
    assert.is_false(s.additionalProperties)
    assert.same({ "schema_version", "event", "agent", "harness", "ts" }, s.required)
    assert.equal(1, s.properties.schema_version.const)
    assert.equal("integer", math.type(s.properties.schema_version.const))
    assert.same({ "capability", "status" }, s.properties.event.enum)
    assert.same(ALL, s.properties.primitives.items.enum)
    assert.is_true(s.properties.primitives.uniqueItems)
    assert.equal(1, s.properties.primitives.minItems)
    assert.same({ "ready", "busy", "idle", "blocked", "stopped" }, s.properties.status.enum)
    local keys = {}
    for k in pairs(s.properties) do
      keys[#keys + 1] = k
    end
    table.sort(keys)
    assert.same({ "agent", "detail", "event", "harness", "primitives", "schema_version", "status", "ts" }, keys)
  end)

  it("makes the validator fail on a broken schema and on bad usage (exit 2)", function()
    local dir = F.tmpdir()
    F.write(dir .. "/bad.json", '{"type": 5}')
    F.write(dir .. "/doc", "{}\n")
    for _, argv in ipairs({
      F.sh(dir .. "/bad.json") .. " " .. F.sh(dir .. "/doc"),
      F.sh(dir .. "/missing.json") .. " " .. F.sh(dir .. "/doc"),
      "--canonical pretty " .. F.sh(SCHEMA),
      "",
    }) do
      local ok, _, code = os.execute(F.sh(VALIDATOR) .. " " .. argv .. " >/dev/null 2>&1")
      assert.is_falsy(ok, argv)
      assert.equal(2, code, argv)
    end
  end)
end)

describe("every event written by event post", function()
  local function cap(from, harness, ...)
    return { "--from", from, "--type", "capability", "--harness", harness, ... }
  end
  local function st(from, harness, status, ...)
    return { "--from", from, "--type", "status", "--harness", harness, "--status", status, ... }
  end
  local LONG = string.rep("long detail ", 400)

  -- { flags after `event post CH`, expected body fields (ts aside),
  --   env (optional) }
  local POSTS = {
    { cap("alice", "claude-code"), { primitives = ALL } },
    { cap("bob", "codex", "--primitives", "messages", "--primitives", "wait, tasks"),
      { primitives = { "messages", "wait", "tasks" } } },
    { cap("bob", "codex", "--primitives", " , "), { primitives = ALL } },
    { cap("bob", "codex", "--primitives", ""), { primitives = ALL } },
    { cap("bob", "codex", "--primitives", ",", "--primitives", "  "), { primitives = ALL } },
    { cap("carol", "gemini", "--primitives", ",wait,,"), { primitives = { "wait" } } },
    { cap("carol", "gemini", "--primitives", " wait ", "--primitives", "", "--primitives", "leases ,  cursors"),
      { primitives = { "wait", "leases", "cursors" } } },
    { cap("dave", "x", "--primitives", "path_locks,state_summary,leases,dependencies,cursors"),
      { primitives = { "path_locks", "state_summary", "leases", "dependencies", "cursors" } } },
    { cap("dave", "x", "--primitives", table.concat(REVERSED, ",")), { primitives = REVERSED } },
    { cap("erin", "h", "--status", "busy", "--detail", "ignored for capability"), { primitives = ALL } },
    { cap("Zoë Ünïcødé", "クロード-code", "--primitives", "wait"), { primitives = { "wait" } } },
    { cap("alice bob", "x y", "--primitives", "tasks"), { primitives = { "tasks" } } },
    { st("bob", "codex", "ready"), { status = "ready" } },
    { st("bob", "codex", "busy", "--detail", "compiling: 3/10 files"),
      { status = "busy", detail = "compiling: 3/10 files" } },
    { st("carol", "gemini", "idle", "--detail", ""), { status = "idle", detail = "" } },
    { st("carol", "gemini", "blocked", "--detail", "waiting on bob — review ✓ 🚀"),
      { status = "blocked", detail = "waiting on bob — review ✓ 🚀" } },
    { st("alice", "claude-code", "stopped"), { status = "stopped" } },
    { st("alice", "claude-code", "idle", "--primitives", "wait"), { status = "idle" } },
    { st("zoë", "h", "busy", "--detail", 'say "hi" \\ {"a":1} </script> \'q\''),
      { status = "busy", detail = 'say "hi" \\ {"a":1} </script> \'q\'' } },
    { st("a.b-c", "h", "blocked", "--detail", "line\226\128\168sep\226\128\169para\194\160nbsp"),
      { status = "blocked", detail = "line\226\128\168sep\226\128\169para\194\160nbsp" } },
    { st("ALICE", "H", "ready", "--detail", "  padded  "), { status = "ready", detail = "  padded  " } },
    { st("x-dash", "h", "idle", "--detail", LONG), { status = "idle", detail = LONG } },
    -- Local time with its offset; POSIX TZ strings need no tzdata.
    { st("plus", "h", "ready"), { status = "ready", offset = "+05:30" }, { TZ = "IST-5:30" } },
    { st("minus", "h", "ready"), { status = "ready", offset = "-03:00" }, { TZ = "ART3" } },
    { st("utc", "h", "ready"), { status = "ready", offset = "+00:00" }, { TZ = "UTC0" } },
  }
  for _, s in ipairs({ "ready", "busy", "idle", "blocked", "stopped" }) do
    POSTS[#POSTS + 1] = { st("each", "h", s), { status = s } }
    POSTS[#POSTS + 1] = { st("each", "h", s, "--detail", "d-" .. s), { status = s, detail = "d-" .. s } }
  end
  for _, p in ipairs(ALL) do
    POSTS[#POSTS + 1] = { cap("each", "h", "--primitives", p), { primitives = { p } } }
  end

  local root, dir
  local bodies, objects = {}, {}

  setup(function()
    root = F.new_root()
    F.init(root, CH)
    dir = root .. "/" .. CH
  end)

  it("posts them all with 'posted event <type> -> CH' and one message file each", function()
    for i, case in ipairs(POSTS) do
      local argv, want, env = case[1], case[2], case[3]
      local type = want.primitives and "capability" or "status"
      local r = F.run({ "--root", root, "event", "post", CH, table.unpack(argv) }, { env = env })
      assert.equal(0, r.code, F.describe(r))
      assert.equal("posted event " .. type .. " -> " .. CH .. "\n", r.stdout, F.describe(r))
      assert.equal("", r.stderr, F.describe(r))
      -- Events are ordinary messages: NNNN-<slug(agent)>-event-<type>.md.
      local from = argv[2]
      local name = string.format("%04d-%s-event-%s.md", i, slugify(from), type)
      local text = F.read(dir .. "/" .. name)
      assert.truthy(text, "no " .. name .. " in " .. table.concat(H.ls(dir), " "))
      local fm, body = split_message(text)
      assert.equal(7, #fm, F.show(text))
      assert.equal("seq: " .. i, fm[1])
      assert.equal("from: " .. from, fm[2])
      assert.equal("to: all", fm[3])
      assert.equal("channel: " .. CH, fm[4])
      assert.truthy(fm[5]:match("^ts: (.*)$"):match(LOCAL_TS), fm[5])
      assert.equal("status: event." .. type, fm[6])
      assert.equal("title: event:" .. type, fm[7])
      -- The body is one line of JSON and a newline.
      assert.equal("\n", body:sub(-1), F.show(body))
      assert.falsy(body:sub(1, -2):find("\n", 1, true), F.show(body))
      bodies[i] = body:sub(1, -2)
      local obj = assert(json.loads(bodies[i]))
      objects[i] = obj
      assert.equal(1, obj.schema_version)
      assert.equal(type, obj.event)
      assert.equal(from, obj.agent)
      assert.equal(argv[6], obj.harness)
      assert.truthy(obj.ts:match(BODY_TS), obj.ts)
      assert.same(want.primitives, obj.primitives and { table.unpack(obj.primitives) })
      assert.equal(want.status, obj.status)
      assert.equal(want.detail, obj.detail)
      if want.offset then
        assert.equal(want.offset, obj.ts:sub(-6))
        assert.equal(want.offset, fm[5]:sub(-6))
      end
    end
    assert.equal(#POSTS, #F.file_seqs(dir))
  end)

  it("writes bodies that the schema accepts, as canonical compact JSON", function()
    assert.equal(#POSTS, #bodies)
    all_valid(bodies, "compact")
  end)

  it("finds every event file by its frontmatter status, and each validates", function()
    -- Independently of the post loop: scan the channel, mixed with chat.
    F.post(root, CH, "alice", "plain chat", "not an event")
    F.post(root, CH, "alice", "event-looking", "status without the dot", "--status", "event")
    local found = {}
    for _, name in ipairs(H.ls(dir)) do
      if name:match("^%d+%-.*%.md$") then
        local fm, body = split_message(F.read(dir .. "/" .. name))
        local status = fm[#fm - 1]:match("^status: (.*)$")
        if status:sub(1, 6) == "event." then
          found[#found + 1] = body:sub(1, -2)
        end
      end
    end
    assert.equal(#POSTS, #found)
    all_valid(found, "compact")
  end)

  it("reads them back with event read as canonical spaced JSON that validates", function()
    local r = ac(root, "event", "read", CH)
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    local lines = F.lines(r.stdout)
    assert.equal(#POSTS, #lines)
    all_valid(lines, "spaced")
    for i, line in ipairs(lines) do
      assert.same(objects[i], json.loads(line), line)
    end
    local ncap = 0
    for _, t in ipairs({ "capability", "status" }) do
      r = ac(root, "event", "read", CH, "--type", t)
      assert.equal(0, r.code, F.describe(r))
      local part = F.lines(r.stdout)
      all_valid(part, "spaced")
      for _, line in ipairs(part) do
        assert.equal(t, json.loads(line).event)
      end
      ncap = ncap + #part
    end
    assert.equal(#POSTS, ncap)
  end)
end)

describe("the validator and the tool on hand-made events", function()
  local STATUS = {
    agent = '"x"', event = '"status"', harness = '"h"', schema_version = "1", status = '"busy"',
    ts = '"2030-01-01T00:00:00+00:00"',
  }
  local CAPABILITY = {
    agent = '"x"', event = '"capability"', harness = '"h"', primitives = '["wait"]', schema_version = "1",
    ts = '"2030-01-01T00:00:00Z"',
  }
  --- Compact JSON text of `base` with `changes` (key -> raw JSON, false
  --- drops the key), keys sorted.
  local function doc(base, changes)
    local fields = {}
    for k, v in pairs(base) do
      fields[k] = v
    end
    for k, v in pairs(changes or {}) do
      fields[k] = v or nil
    end
    local keys = {}
    for k in pairs(fields) do
      keys[#keys + 1] = k
    end
    table.sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do
      parts[i] = '"' .. k .. '":' .. fields[k]
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  local function s(changes)
    return doc(STATUS, changes)
  end
  local function c(changes)
    return doc(CAPABILITY, changes)
  end

  -- { label, body, tool_accepts (only for rules the tool does not share) }
  local INVALID = {
    { "unknown field", s{ extra = "1" } },
    { "unknown field on capability", c{ note = '"x"' } },
    { "primitives on a status event", s{ primitives = '["wait"]' } },
    { "status on a capability event", c{ status = '"busy"' } },
    { "detail on a capability event", c{ detail = '""' } },
    { "schema_version 2", s{ schema_version = "2" } },
    { "schema_version 0", s{ schema_version = "0" } },
    { "schema_version \"1\"", s{ schema_version = '"1"' } },
    { "schema_version true", s{ schema_version = "true" } },
    { "schema_version null", s{ schema_version = "null" } },
    { "event heartbeat", s{ event = '"heartbeat"' } },
    { "event Status", s{ event = '"Status"' } },
    { "event 5", s{ event = "5" } },
    { "missing schema_version", s{ schema_version = false } },
    { "missing event", s{ event = false } },
    { "missing agent", s{ agent = false } },
    { "missing harness", s{ harness = false } },
    { "missing ts", s{ ts = false } },
    { "missing primitives", c{ primitives = false } },
    { "missing status", s{ status = false } },
    { "duplicate primitives", c{ primitives = '["wait","wait"]' } },
    { "duplicate primitives among others", c{ primitives = '["messages","tasks","leases","tasks"]' } },
    { "unknown primitive", c{ primitives = '["teleport"]' } },
    { "primitive Wait", c{ primitives = '["Wait"]' } },
    { "empty primitives", c{ primitives = "[]" } },
    { "primitives a string", c{ primitives = '"wait"' } },
    { "primitives [1]", c{ primitives = "[1]" } },
    { "status sleeping", s{ status = '"sleeping"' } },
    { "status Busy", s{ status = '"Busy"' } },
    { "status 5", s{ status = "5" } },
    { "status null", s{ status = "null" } },
    { "agent a/b", s{ agent = '"a/b"' } },
    { "agent a\\b", s{ agent = '"a\\\\b"' } },
    { "agent a:b", s{ agent = '"a:b"' } },
    { "agent _sys", s{ agent = '"_sys"' } },
    { "agent .dot", s{ agent = '".dot"' } },
    { "agent ..", s{ agent = '".."' } },
    { "agent empty", s{ agent = '""' } },
    { "agent 5", s{ agent = "5" } },
    { "agent with a tab", s{ agent = '"al\\tice"' } },
    { "agent with a trailing newline", s{ agent = '"alice\\n"' } },
    { "agent with C1 NEL", s{ agent = '"a\\u0085b"' } },
    { "harness h:1", s{ harness = '"h:1"' } },
    { "harness _h", s{ harness = '"_h"' } },
    { "harness with DEL", s{ harness = '"h\\u007f"' } },
    { "harness with a trailing newline", s{ harness = '"h\\n"' } },
    { "detail two lines", s{ detail = '"two\\nlines"' } },
    { "detail with a trailing newline", s{ detail = '"x\\n"' } },
    { "detail NUL", s{ detail = '"\\u0000"' } },
    { "detail 5", s{ detail = "5" } },
    { "ts without offset", s{ ts = '"2030-01-01T00:00:00"' } },
    { "ts date only", s{ ts = '"2030-01-01"' } },
    { "ts 5", s{ ts = "5" } },
    { "ts not ISO-8601", s{ ts = '"yesterdayZ"' } },
    { "ts with a trailing newline", s{ ts = '"2030-01-01T00:00:00Z\\n"' } },
    { "array", "[]" },
    { "string", '"busy"' },
    { "null", "null" },
    { "not JSON", "not json" },
    { "NaN version", s{ schema_version = "NaN" } },
    -- The tool reads JSON as Python does (the last duplicate key wins);
    -- the validator refuses duplicate keys outright.
    { "duplicate key", s():sub(1, -2) .. ',"status":"idle"}', true },
    { "duplicate key hiding a bad value", s():sub(1, -2) .. ',"status":"napping"}' },
  }

  local VALID = {
    s(),
    s{ detail = '""' },
    s{ detail = '"caf\\u00e9 \\u2713 \\ud83d\\ude80"' },
    s{ status = '"ready"' }, s{ status = '"idle"' }, s{ status = '"blocked"' }, s{ status = '"stopped"' },
    c(),
    c{ primitives = '["messages","cursors","wait","tasks","dependencies","leases","path_locks","state_summary"]' },
    c{ primitives = '["state_summary","messages"]' },
    s{ ts = '"2030-01-01T00:00:00-05:00"' },
    s{ ts = '"2030-01-01 00:00:00+05:30"' },
    s{ ts = '"20300101T000000+0530"' },
    s{ ts = '"2030-01-01T00:00:00.5+00:00"' },
    s{ ts = '"2026-11-30T05:01:23.123456+00:00"' },
    s{ agent = '"zo\\u00eb"', harness = '"x y"' },
    s{ agent = '"a.b_c-d"' },
  }

  it("accepts hand-made valid events, and so does the tool", function()
    all_valid(VALID)
    local root = F.new_root()
    F.init(root, CH)
    for i, body in ipairs(VALID) do
      local type = body:match('"event":"(%a+)"')
      F.write(string.format("%s/%s/%04d-x-event-%s.md", root, CH, i, type), table.concat({
        "---", "seq: " .. i, "from: x", "to: all", "channel: " .. CH, "ts: 2030-01-01T00:00:00+00:00",
        "status: event." .. type, "title: event:" .. type, "---", body }, "\n") .. "\n")
    end
    local r = ac(root, "event", "read", CH)
    assert.equal(0, r.code, F.describe(r))
    assert.equal(#VALID, #F.lines(r.stdout))
    all_valid(F.lines(r.stdout), "spaced")
  end)

  it("rejects every hand-made invalid event", function()
    local docs = {}
    for i, case in ipairs(INVALID) do
      docs[i] = case[2]
    end
    local v = validate(docs)
    assert.equal("", v.err)
    assert.equal(#INVALID, #v.out)
    for i, line in ipairs(v.out) do
      assert.truthy(line:find("^invalid " .. i .. ": "), INVALID[i][1] .. ": " .. line)
    end
    assert.equal(1, v.code)
  end)

  it("rejects each invalid event alone, between valid ones", function()
    for _, case in ipairs(INVALID) do
      local v = validate({ s(), case[2], c() })
      assert.same({ "ok 1", "invalid 2", "ok 3" }, { v.out[1], v.out[2] and v.out[2]:match("^invalid 2"), v.out[3] },
        case[1])
      assert.equal(1, v.code, case[1])
    end
  end)

  it("finds non-canonical text with --canonical", function()
    local v = validate({ s(), '{"agent": "x", "event": "status", "harness": "h", "schema_version": 1, '
      .. '"status": "busy", "ts": "2030-01-01T00:00:00+00:00"}', s{ detail = '"caf\\u00e9"' } }, "compact")
    assert.equal("ok 1", v.out[1])
    assert.truthy(v.out[2]:find("^invalid 2: %$: not canonical"), v.out[2])
    assert.truthy(v.out[3]:find("^invalid 3: %$: not canonical"), v.out[3])
    assert.equal(1, v.code)
  end)

  it("agrees with the tool: event read refuses each of them with an EVENT_* code (exit 2)", function()
    local root = F.new_root()
    F.init(root, CH)
    local file = root .. "/" .. CH .. "/0001-x-event-status.md"
    for _, case in ipairs(INVALID) do
      F.write(file, table.concat({ "---", "seq: 1", "from: x", "to: all", "channel: " .. CH,
        "ts: 2030-01-01T00:00:00+00:00", "status: event.status", "title: event:status", "---", case[2] }, "\n") .. "\n")
      local r = ac(root, "event", "read", CH)
      if case[3] then
        assert.equal(0, r.code, case[1] .. ": " .. F.describe(r))
      else
        assert.equal(2, r.code, case[1] .. ": " .. F.describe(r))
        assert.equal("", r.stdout, case[1] .. ": " .. F.describe(r))
        assert.truthy(r.stderr:find("^agent%-chat: EVENT_[A-Z_]+: [^\n]*\n$"), case[1] .. ": " .. F.describe(r))
      end
    end
  end)
end)
