-- Functional specs for event errors (docs/format.md 2.3, 2.5, 3.10): every EVENT_*
-- code, from `event post` (nothing written) and from `event read` meeting a
-- hand-made event message (exit 2, the exact "agent-chat: CODE: message"
-- line, the events before it already printed, none after it, and the same
-- failure with --type of either type, because --type filters after
-- validation). Also: which messages count as events (frontmatter status
-- "event.<anything>" as the frontmatter parser reads it), seq order, and
-- how valid hand-made events are re-encoded.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local CH = "ee"

local function ac(root, ...)
  local r = F.run({ "--root", root, ... })
  assert.is_nil(F.crashed(r.stderr), F.describe(r))
  return r
end

--- A message file as `event post` writes it (docs/format.md 3.3, 3.10), or with
--- `status` in place of the event status line.
local function message(seq, status, body)
  return table.concat({
    "---",
    "seq: " .. seq,
    "from: x",
    "to: all",
    "channel: " .. CH,
    "ts: 2030-01-01T00:00:00+00:00",
    "status: " .. status,
    "title: event:" .. (status:match("^event%.(.*)$") or "x"),
    "---",
    body,
  }, "\n") .. "\n"
end

--- Compact JSON object text from a base list of {key, raw JSON} pairs with
--- `changes` (key -> raw JSON, or false to drop the key); keys sorted.
local STATUS = {
  agent = '"x"', event = '"status"', harness = '"h"', schema_version = "1", status = '"busy"',
  ts = '"2030-01-01T00:00:00+00:00"',
}
local CAPABILITY = {
  agent = '"x"', event = '"capability"', harness = '"h"', primitives = '["wait"]', schema_version = "1",
  ts = '"2030-01-01T00:00:00Z"',
}
local function body(base, changes)
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
local function status_body(changes)
  return body(STATUS, changes)
end
local function capability_body(changes)
  return body(CAPABILITY, changes)
end

--- A root whose channel holds two events posted by the tool (seq 1 and
--- 2); returns root, channel dir, and the `event read` lines for no
--- --type, --type capability and --type status.
local function seeded()
  local root = F.new_root()
  F.init(root, CH)
  local r = ac(root, "event", "post", CH, "--from", "alice", "--type", "capability", "--harness", "claude-code",
    "--primitives", "messages,wait")
  assert.equal(0, r.code, F.describe(r))
  r = ac(root, "event", "post", CH, "--from", "bob", "--type", "status", "--harness", "codex", "--status", "busy",
    "--detail", "compiling")
  assert.equal(0, r.code, F.describe(r))
  local out = {}
  for _, t in ipairs({ "", "capability", "status" }) do
    r = t == "" and ac(root, "event", "read", CH) or ac(root, "event", "read", CH, "--type", t)
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr, F.describe(r))
    out[t] = r.stdout
  end
  assert.equal(2, #F.lines(out[""]))
  assert.equal(1, #F.lines(out.capability))
  assert.equal(1, #F.lines(out.status))
  return root, root .. "/" .. CH, out
end

--- Assert that `event read` (and with each --type) fails with exactly
--- `want` after printing the lines in `before`.
local function read_fails(root, before, want, label)
  for _, t in ipairs({ "", "capability", "status" }) do
    local r = t == "" and ac(root, "event", "read", CH) or ac(root, "event", "read", CH, "--type", t)
    local what = label .. (t == "" and "" or " --type " .. t) .. ": " .. F.describe(r)
    assert.equal(2, r.code, what)
    assert.equal(before[t], r.stdout, what)
    if want:sub(-1) == "*" then
      local prefix = "agent-chat: " .. want:sub(1, -2)
      assert.equal(prefix, r.stderr:sub(1, #prefix), what)
      assert.is_nil(F.error_line(r.stderr), what)
    else
      assert.equal("agent-chat: " .. want .. "\n", r.stderr, what)
    end
  end
end

local MALFORMED = "EVENT_MALFORMED_BODY: 0003-x-event-status.md"
local VERSION = "EVENT_UNSUPPORTED_VERSION: schema_version must be 1"
local BAD_TYPE = "EVENT_INVALID_TYPE: event must be capability or status"
local DUPLICATE = "EVENT_DUPLICATE_PRIMITIVE: primitives must be unique"
local NOT_STRINGS = "EVENT_INVALID_PRIMITIVES: primitives must be strings"
local ALL8 = '["messages","cursors","wait","tasks","dependencies","leases","path_locks","state_summary"]'

-- { label, frontmatter status, body, expected "CODE: message" (a trailing
-- "*" compares only the prefix; used where docs/format.md does not fix the text) }
local READ_CASES = {
  -- Not JSON: the message file name.
  { "text body", "event.status", "not json", MALFORMED },
  { "empty body", "event.status", "", MALFORMED },
  { "blank lines only", "event.capability", "\n\n  \n", MALFORMED },
  { "truncated object", "event.status", '{"agent":', MALFORMED },
  { "two objects", "event.status", status_body() .. status_body(), MALFORMED },
  { "two lines of JSON", "event.status", status_body() .. "\n" .. status_body(),
    MALFORMED },
  { "single quotes", "event.status", "{'agent': 'x'}", MALFORMED },
  { "trailing comma", "event.status", status_body():sub(1, -2) .. ",}", MALFORMED },
  { "UTF-8 BOM", "event.status", "\239\187\191" .. status_body(), MALFORMED },
  { "frontmatter only", "event.status", nil, MALFORMED },
  -- Not an object.
  { "array", "event.status", "[]", "EVENT_INVALID_RECORD: event must be an object" },
  { "array of an event", "event.status", "[" .. status_body() .. "]", "EVENT_INVALID_RECORD: event must be an object" },
  { "string", "event.status", '"busy"', "EVENT_INVALID_RECORD: event must be an object" },
  { "number", "event.status", "42", "EVENT_INVALID_RECORD: event must be an object" },
  { "null", "event.status", "null", "EVENT_INVALID_RECORD: event must be an object" },
  { "true", "event.status", "true", "EVENT_INVALID_RECORD: event must be an object" },
  -- Fields that are not in schema v1, or not for this event type.
  { "extra field", "event.status", status_body{ extra = "1" }, "EVENT_UNKNOWN_FIELD: extra" },
  { "extra null field", "event.capability", capability_body{ note = "null" }, "EVENT_UNKNOWN_FIELD: note" },
  { "upper-case twin", "event.status", status_body{ AGENT = '"x"' }, "EVENT_UNKNOWN_FIELD: AGENT" },
  { "empty key", "event.status", status_body{ [""] = "1" }, "EVENT_UNKNOWN_FIELD: " },
  { "primitives on status", "event.status", status_body{ primitives = '["wait"]' },
    "EVENT_UNKNOWN_FIELD: primitives" },
  { "status on capability", "event.capability", capability_body{ status = '"busy"' },
    "EVENT_UNKNOWN_FIELD: status" },
  { "detail on capability", "event.capability", capability_body{ detail = '""' }, "EVENT_UNKNOWN_FIELD: detail" },
  -- Required fields.
  -- (a missing schema_version or event fails their value checks, which
  -- come first; a missing primitives list is "not strings")
  { "no schema_version", "event.status", status_body{ schema_version = false }, VERSION },
  { "no event", "event.status", status_body{ event = false }, BAD_TYPE },
  { "no agent", "event.status", status_body{ agent = false }, "EVENT_REQUIRED_FIELD_MISSING: agent" },
  { "no harness", "event.status", status_body{ harness = false }, "EVENT_REQUIRED_FIELD_MISSING: harness" },
  { "no ts", "event.status", status_body{ ts = false }, "EVENT_REQUIRED_FIELD_MISSING: ts" },
  { "no primitives", "event.capability", capability_body{ primitives = false }, NOT_STRINGS },
  { "empty object", "event.status", "{}", VERSION },
  -- Version: the integer 1, nothing else.
  { "version 2", "event.status", status_body{ schema_version = "2" }, VERSION },
  { "version 0", "event.status", status_body{ schema_version = "0" }, VERSION },
  { "version -1", "event.status", status_body{ schema_version = "-1" },
    VERSION },
  { "version 1.5", "event.status", status_body{ schema_version = "1.5" },
    VERSION },
  { "version \"1\"", "event.status", status_body{ schema_version = '"1"' },
    VERSION },
  { "version true", "event.status", status_body{ schema_version = "true" },
    VERSION },
  { "version null", "event.status", status_body{ schema_version = "null" },
    VERSION },
  { "version [1]", "event.status", status_body{ schema_version = "[1]" },
    VERSION },
  -- Event type.
  { "type heartbeat", "event.status", status_body{ event = '"heartbeat"' },
    BAD_TYPE },
  { "type Status", "event.status", status_body{ event = '"Status"' },
    BAD_TYPE },
  { "type empty", "event.status", status_body{ event = '""' }, BAD_TYPE },
  { "type number", "event.status", status_body{ event = "5" }, BAD_TYPE },
  { "type null", "event.status", status_body{ event = "null" }, BAD_TYPE },
  { "type list", "event.status", status_body{ event = '["status"]' },
    BAD_TYPE },
  -- agent / harness / detail text.
  { "agent a/b", "event.status", status_body{ agent = '"a/b"' },
    "EVENT_INVALID_TEXT: invalid agent name (path traversal blocked): 'a/b'" },
  { "agent a\\b", "event.status", status_body{ agent = '"a\\\\b"' },
    "EVENT_INVALID_TEXT: invalid agent name (path traversal blocked): 'a\\b'" },
  { "agent a:b", "event.status", status_body{ agent = '"a:b"' },
    "EVENT_INVALID_TEXT: invalid agent name (path traversal blocked): 'a:b'" },
  { "agent ..", "event.status", status_body{ agent = '".."' },
    "EVENT_INVALID_TEXT: invalid agent name (path traversal blocked): '..'" },
  { "agent .", "event.status", status_body{ agent = '"."' },
    "EVENT_INVALID_TEXT: invalid agent name (path traversal blocked): '.'" },
  { "agent _sys", "event.status", status_body{ agent = '"_sys"' },
    "EVENT_INVALID_TEXT: invalid agent name (reserved prefix blocked): '_sys'" },
  { "agent .dot", "event.capability", capability_body{ agent = '".dot"' },
    "EVENT_INVALID_TEXT: invalid agent name (reserved prefix blocked): '.dot'" },
  { "agent empty", "event.status", status_body{ agent = '""' }, "EVENT_INVALID_TEXT: agent is invalid" },
  { "agent number", "event.status", status_body{ agent = "5" }, "EVENT_INVALID_TEXT: agent is invalid" },
  { "agent null", "event.status", status_body{ agent = "null" }, "EVENT_INVALID_TEXT: agent is invalid" },
  { "agent tab", "event.status", status_body{ agent = '"al\\tice"' }, "EVENT_INVALID_TEXT: agent is invalid" },
  { "agent newline", "event.status", status_body{ agent = '"alice\\n"' }, "EVENT_INVALID_TEXT: agent is invalid" },
  { "agent NUL", "event.status", status_body{ agent = '"a\\u0000"' }, "EVENT_INVALID_TEXT: agent is invalid" },
  { "agent C1", "event.status", status_body{ agent = '"a\\u0085b"' }, "EVENT_INVALID_TEXT: agent is invalid" },
  { "harness h:1", "event.status", status_body{ harness = '"h:1"' },
    "EVENT_INVALID_TEXT: invalid harness name (path traversal blocked): 'h:1'" },
  { "harness _h", "event.capability", capability_body{ harness = '"_h"' },
    "EVENT_INVALID_TEXT: invalid harness name (reserved prefix blocked): '_h'" },
  { "harness DEL", "event.status", status_body{ harness = '"h\\u007f"' }, "EVENT_INVALID_TEXT: harness is invalid" },
  { "harness empty", "event.status", status_body{ harness = '""' }, "EVENT_INVALID_TEXT: harness is invalid" },
  { "harness number", "event.status", status_body{ harness = "7" }, "EVENT_INVALID_TEXT: harness is invalid" },
  { "detail newline", "event.status", status_body{ detail = '"two\\nlines"' },
    "EVENT_INVALID_TEXT: detail is invalid" },
  { "detail tab", "event.status", status_body{ detail = '"tab\\there"' }, "EVENT_INVALID_TEXT: detail is invalid" },
  { "detail NUL", "event.status", status_body{ detail = '"\\u0000"' }, "EVENT_INVALID_TEXT: detail is invalid" },
  { "detail number", "event.status", status_body{ detail = "5" }, "EVENT_INVALID_TEXT: detail is invalid" },
  -- Timestamp.
  { "ts number", "event.status", status_body{ ts = "5" }, "EVENT_INVALID_TIMESTAMP: ts must be a string" },
  { "ts null", "event.status", status_body{ ts = "null" }, "EVENT_INVALID_TIMESTAMP: ts must be a string" },
  { "ts naive", "event.status", status_body{ ts = '"2030-01-01T00:00:00"' },
    "EVENT_INVALID_TIMESTAMP: ts must include an offset" },
  { "ts date only", "event.status", status_body{ ts = '"2030-01-01"' },
    "EVENT_INVALID_TIMESTAMP: ts must include an offset" },
  { "ts not ISO", "event.status", status_body{ ts = '"yesterday"' }, "EVENT_INVALID_TIMESTAMP: ts must be ISO-8601" },
  { "ts with a bad offset", "event.status", status_body{ ts = '"2030-01-01T00:00:00+25:00"' },
    "EVENT_INVALID_TIMESTAMP: ts must be ISO-8601" },
  -- Status.
  { "status sleeping", "event.status", status_body{ status = '"sleeping"' }, "EVENT_INVALID_STATUS: sleeping" },
  { "status Busy", "event.status", status_body{ status = '"Busy"' }, "EVENT_INVALID_STATUS: Busy" },
  { "status empty", "event.status", status_body{ status = '""' }, "EVENT_INVALID_STATUS: " },
  { "status missing", "event.status", status_body{ status = false }, "EVENT_INVALID_STATUS: None" },
  { "status null", "event.status", status_body{ status = "null" }, "EVENT_INVALID_STATUS: None" },
  { "status list", "event.status", status_body{ status = '["busy", null]' }, "EVENT_INVALID_STATUS: ['busy', None]" },
  { "status object", "event.status", status_body{ status = '{"s": true}' }, "EVENT_INVALID_STATUS: {'s': True}" },
  { "status 5", "event.status", status_body{ status = "5" }, "EVENT_INVALID_STATUS: 5" },
  { "status true", "event.status", status_body{ status = "true" }, "EVENT_INVALID_STATUS: True" },
  -- Primitives.
  { "primitives string", "event.capability", capability_body{ primitives = '"wait"' },
    NOT_STRINGS },
  { "primitives object", "event.capability", capability_body{ primitives = '{"wait":true}' },
    NOT_STRINGS },
  { "primitives [1]", "event.capability", capability_body{ primitives = "[1]" },
    NOT_STRINGS },
  { "primitives with null", "event.capability", capability_body{ primitives = '["wait",null]' },
    NOT_STRINGS },
  { "primitives nested", "event.capability", capability_body{ primitives = '[["wait"]]' },
    NOT_STRINGS },
  { "primitives empty", "event.capability", capability_body{ primitives = "[]" }, NOT_STRINGS },
  { "primitive teleport", "event.capability", capability_body{ primitives = '["teleport"]' },
    "EVENT_UNKNOWN_PRIMITIVE: teleport" },
  { "primitive Wait", "event.capability", capability_body{ primitives = '["Wait"]' }, "EVENT_UNKNOWN_PRIMITIVE: Wait" },
  { "primitive after a good one", "event.capability", capability_body{ primitives = '["wait","path-locks"]' },
    "EVENT_UNKNOWN_PRIMITIVE: path-locks" },
  { "primitive untrimmed", "event.capability", capability_body{ primitives = '[" wait"]' },
    "EVENT_UNKNOWN_PRIMITIVE:  wait" },
  { "primitive empty", "event.capability", capability_body{ primitives = '[""]' }, "EVENT_UNKNOWN_PRIMITIVE: " },
  { "primitives wait,wait", "event.capability", capability_body{ primitives = '["wait","wait"]' },
    DUPLICATE },
  { "primitives a,b,a", "event.capability", capability_body{ primitives = '["messages","cursors","messages"]' },
    DUPLICATE },
  { "all eight and one again", "event.capability", capability_body{ primitives = ALL8:sub(1, -2) .. ',"leases"]' },
    DUPLICATE },
  -- Several problems: the first in the order object, schema_version, event,
  -- unknown fields (all of them, sorted), agent, harness, ts, the type's own
  -- fields; within primitives: strings, duplicates, unknown names.
  { "two unknown fields", "event.status", status_body{ zeta = "1", extra = "2" },
    "EVENT_UNKNOWN_FIELD: extra, zeta" },
  { "unknown fields, type-only ones too", "event.capability", capability_body{ status = '"busy"', Extra = "1",
    detail = '""' }, "EVENT_UNKNOWN_FIELD: Extra, detail, status" },
  { "version before everything", "event.status", '{"event":"nap","agent":"a/b","more":1}', VERSION },
  { "type before unknown fields", "event.status", status_body{ event = '"nap"', extra = "1" }, BAD_TYPE },
  { "unknown fields before agent", "event.status", status_body{ agent = '"a/b"', extra = "1" },
    "EVENT_UNKNOWN_FIELD: extra" },
  { "agent before harness", "event.status", status_body{ agent = false, harness = '"h:1"' },
    "EVENT_REQUIRED_FIELD_MISSING: agent" },
  { "harness before ts", "event.status", status_body{ harness = '"_h"', ts = false },
    "EVENT_INVALID_TEXT: invalid harness name (reserved prefix blocked): '_h'" },
  { "ts before status", "event.status", status_body{ ts = "5", status = '"nap"' },
    "EVENT_INVALID_TIMESTAMP: ts must be a string" },
  { "status before detail", "event.status", status_body{ status = '"nap"', detail = "5" },
    "EVENT_INVALID_STATUS: nap" },
  { "duplicate before unknown primitive", "event.capability",
    capability_body{ primitives = '["teleport","wait","wait"]' }, DUPLICATE },
  { "not strings before duplicates", "event.capability", capability_body{ primitives = '["wait","wait",1]' },
    NOT_STRINGS },
  -- The frontmatter status decides what is an event; the body decides the
  -- type: a status body under event.capability is judged as a status event.
  { "status body under event.capability", "event.capability", status_body{ status = '"lost"' },
    "EVENT_INVALID_STATUS: lost" },
  { "under event.other", "event.other", status_body{ schema_version = "2" },
    VERSION },
  { "under bare event.", "event.", "{", MALFORMED },
}

describe("event read on a hand-made invalid event", function()
  local root, dir, before
  setup(function()
    root, dir, before = seeded()
  end)

  for _, case in ipairs(READ_CASES) do
    local label, status, text, want = case[1], case[2], case[3], case[4]
    it("fails for " .. label .. " with " .. want:match("^[A-Z_]+"), function()
      local file = dir .. "/0003-x-event-status.md"
      local content = message(3, status, text or "")
      if text == nil then
        content = content:match("^(.*\n%-%-%-\n)")
      end
      F.write(file, content)
      -- A valid event after the bad one is never printed.
      F.write(dir .. "/0004-y-event-status.md", message(4, "event.status", status_body{ agent = '"y"' }))
      local ok, err = pcall(read_fails, root, before, want, label)
      os.remove(file)
      os.remove(dir .. "/0004-y-event-status.md")
      assert(ok, err)
    end)
  end

  it("reads again once the bad message is gone", function()
    local r = ac(root, "event", "read", CH)
    assert.equal(0, r.code, F.describe(r))
    assert.equal(before[""], r.stdout)
  end)
end)

describe("event read ordering and selection", function()
  it("names the malformed message's own file", function()
    local root, dir, before = seeded()
    F.write(dir .. "/3-Odd Name.md", message(77, "event.status", "nope"))
    read_fails(root, before, "EVENT_MALFORMED_BODY: 3-Odd Name.md", "odd name")
  end)

  it("stops at the first invalid event in seq order, not name order", function()
    local root, dir, before = seeded()
    -- "0010-..." sorts before "9-..." by name; seq 9 comes first.
    F.write(dir .. "/0010-a-event-status.md", message(10, "event.status", status_body{ schema_version = "2" }))
    F.write(dir .. "/9-z-event-status.md", message(9, "event.status", status_body{ extra = "1" }))
    read_fails(root, before, "EVENT_UNKNOWN_FIELD: extra", "two bad")
  end)

  it("prints every valid event before the bad one, the tool's and hand-made ones alike", function()
    local root, dir = seeded()
    F.write(dir .. "/0003-x-event-status.md", message(3, "event.status", status_body{ status = '"idle"' }))
    F.write(dir .. "/0004-x-event-capability.md", message(4, "event.capability",
      capability_body{ primitives = '["leases","tasks"]' }))
    local r = ac(root, "event", "read", CH)
    assert.equal(0, r.code, F.describe(r))
    local good = r.stdout
    assert.equal(4, #F.lines(good))
    F.write(dir .. "/0005-x-event-status.md", message(5, "event.status", status_body{ status = '"asleep"' }))
    r = ac(root, "event", "read", CH)
    assert.equal(2, r.code, F.describe(r))
    assert.equal(good, r.stdout)
    assert.equal("agent-chat: EVENT_INVALID_STATUS: asleep\n", r.stderr)
    -- A later tool post does not hide the bad one.
    r = ac(root, "event", "post", CH, "--from", "carol", "--type", "status", "--harness", "h", "--status", "ready")
    assert.equal(0, r.code, F.describe(r))
    assert.equal("posted event status -> " .. CH .. "\n", r.stdout)
    r = ac(root, "event", "read", CH, "--type", "capability")
    assert.equal(2, r.code, F.describe(r))
    assert.equal(2, #F.lines(r.stdout), F.describe(r))
    assert.equal("agent-chat: EVENT_INVALID_STATUS: asleep\n", r.stderr)
  end)

  -- { label, file content } of messages that are not events: garbage
  -- bodies, yet `event read` skips them.
  local NOT_EVENTS = {
    { "status event (no dot)", message(3, "event", "garbage") },
    { "status events.status", message(3, "events.status", "garbage") },
    { "status Event.status", message(3, "Event.status", "garbage") },
    { "status eventstatus", message(3, "eventstatus", "garbage") },
    { "status discussion", message(3, "discussion", status_body{ extra = "1" }) },
    { "empty status", message(3, "", "garbage") },
    { "status in the body only", "---\nseq: 3\nfrom: x\n---\nstatus: event.status\ngarbage\n" },
    { "no frontmatter", "status: event.status\n{\n" },
    { "unclosed frontmatter", "---\nseq: 3\nstatus: event.status\n{\n" },
    { "not a message name", nil },
  }
  for _, case in ipairs(NOT_EVENTS) do
    it("skips a message with " .. case[1], function()
      local root, dir, before = seeded()
      if case[2] then
        F.write(dir .. "/0003-x-note.md", case[2])
      else
        F.write(dir .. "/notes.md", message(3, "event.status", "garbage"))
        F.write(dir .. "/0004-x-event-status.txt", message(4, "event.status", "garbage"))
      end
      for _, t in ipairs({ "", "capability", "status" }) do
        local r = t == "" and ac(root, "event", "read", CH) or ac(root, "event", "read", CH, "--type", t)
        assert.equal(0, r.code, F.describe(r))
        assert.equal(before[t], r.stdout, F.describe(r))
        assert.equal("", r.stderr, F.describe(r))
      end
    end)
  end

  -- The frontmatter parser strips keys and values and accepts "--- extra".
  local COUNTED = {
    { "no space after the colon", "status:event.status" },
    { "padded value", "status:    event.status   " },
    { "padded key", "  status  : event.status" },
  }
  for _, case in ipairs(COUNTED) do
    it("counts a message whose status line has " .. case[1], function()
      local root, dir, before = seeded()
      local text = message(3, "event.status", "garbage"):gsub("status: event%.status", case[2], 1)
      F.write(dir .. "/0003-x-event-status.md", text)
      read_fails(root, before, MALFORMED, case[1])
    end)
  end

  it("re-encodes valid hand-made events: sorted keys, non-ASCII kept, default separators", function()
    local root = F.new_root()
    F.init(root, CH)
    local dir = root .. "/" .. CH
    F.write(dir .. "/0001-x-event-status.md", message(1, "event.status",
      '{\n  "ts": "2030-01-01T00:00:00-05:00",\n  "status": "blocked",\n  "schema_version": 1,\n'
      .. '  "harness": "h\\u00e9",\n  "event": "status",\n  "detail": "caf\\u00e9 \\u2713 \\/ \\"q\\"",\n'
      .. '  "agent": "zo\\u00eb"\n}\n\n'))
    F.write(dir .. "/0002-x-event-other.md", message(2, "event.other",
      '  {"agent":"x","event":"capability","harness":"h","primitives":["state_summary","messages"],'
      .. '"schema_version":1,"ts":"20300101T000000+0530"}  '))
    F.write(dir .. "/0003-x-event-status.md", message(3, "event.status", status_body{ detail = '""' }))
    -- schema_version 1.0 equals 1; a lower-case z is UTC too.
    F.write(dir .. "/0004-x-event-status.md", message(4, "event.status",
      status_body{ schema_version = "1.0", ts = '"2030-01-01T00:00:00z"' }))
    local r = ac(root, "event", "read", CH)
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    assert.equal(table.concat({
      '{"agent": "zoë", "detail": "café ✓ / \\"q\\"", "event": "status", "harness": "hé", '
        .. '"schema_version": 1, "status": "blocked", "ts": "2030-01-01T00:00:00-05:00"}',
      '{"agent": "x", "event": "capability", "harness": "h", "primitives": ["state_summary", "messages"], '
        .. '"schema_version": 1, "ts": "20300101T000000+0530"}',
      '{"agent": "x", "detail": "", "event": "status", "harness": "h", "schema_version": 1, "status": "busy", '
        .. '"ts": "2030-01-01T00:00:00+00:00"}',
      '{"agent": "x", "event": "status", "harness": "h", "schema_version": 1.0, "status": "busy", '
        .. '"ts": "2030-01-01T00:00:00z"}',
    }, "\n") .. "\n", r.stdout)
    r = ac(root, "event", "read", CH, "--type", "capability")
    assert.equal(0, r.code, F.describe(r))
    assert.equal(1, #F.lines(r.stdout))
    assert.truthy(r.stdout:find('"primitives": ["state_summary", "messages"]', 1, true), F.describe(r))
  end)

  it("prints nothing for a channel without events", function()
    local root = F.new_root()
    F.init(root, CH)
    F.post(root, CH, "alice", "hello", "not an event")
    local r = ac(root, "event", "read", CH)
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.equal("", r.stderr)
  end)
end)

describe("event post errors", function()
  local TRAVERSAL = "EVENT_INVALID_TEXT: invalid %s name (path traversal blocked): '%s'"
  local RESERVED = "EVENT_INVALID_TEXT: invalid %s name (reserved prefix blocked): '%s'"
  local function cap(from, harness, ...)
    return { "--from", from, "--type", "capability", "--harness", harness, ... }
  end
  local function st(...)
    return { "--from", "alice", "--type", "status", "--harness", "h", ... }
  end

  -- { flags after `event post CH`, "CODE: message" }
  local CASES = {
    { st(), "EVENT_INVALID_STATUS: None" },
    { st("--detail", "no status given"), "EVENT_INVALID_STATUS: None" },
    { cap("alice", "h", "--primitives", "teleport"), "EVENT_UNKNOWN_PRIMITIVE: teleport" },
    { cap("alice", "h", "--primitives", "Wait"), "EVENT_UNKNOWN_PRIMITIVE: Wait" },
    { cap("alice", "h", "--primitives", "wait", "--primitives", "Wait"), "EVENT_UNKNOWN_PRIMITIVE: Wait" },
    { cap("alice", "h", "--primitives", "wait,path-locks"), "EVENT_UNKNOWN_PRIMITIVE: path-locks" },
    { cap("alice", "h", "--primitives", "wait,wait"), DUPLICATE },
    { cap("alice", "h", "--primitives", "wait", "--primitives", " wait "),
      DUPLICATE },
    { cap("alice", "h", "--primitives", "tasks, leases,tasks"), DUPLICATE },
    { cap("a/b", "h"), TRAVERSAL:format("agent", "a/b") },
    { cap("a\\b", "h"), TRAVERSAL:format("agent", "a\\b") },
    { cap("..", "h"), TRAVERSAL:format("agent", "..") },
    { cap(".", "h"), TRAVERSAL:format("agent", ".") },
    { cap("_sys", "h"), RESERVED:format("agent", "_sys") },
    { cap(".dot", "h"), RESERVED:format("agent", ".dot") },
    { cap("", "h"), "EVENT_INVALID_TEXT: agent is invalid" },
    { cap("al\tice", "h"), "EVENT_INVALID_TEXT: agent is invalid" },
    { cap("alice\n", "h"), "EVENT_INVALID_TEXT: agent is invalid" },
    { cap("a\194\133b", "h"), "EVENT_INVALID_TEXT: agent is invalid" },
    { cap("alice", "h:1"), TRAVERSAL:format("harness", "h:1") },
    { cap("alice", "x/y"), TRAVERSAL:format("harness", "x/y") },
    { cap("alice", "_h"), RESERVED:format("harness", "_h") },
    { cap("alice", "h\127"), "EVENT_INVALID_TEXT: harness is invalid" },
    { cap("alice", ""), "EVENT_INVALID_TEXT: harness is invalid" },
    { st("--status", "busy", "--detail", "two\nlines"), "EVENT_INVALID_TEXT: detail is invalid" },
    { st("--status", "busy", "--detail", "cr\r"), "EVENT_INVALID_TEXT: detail is invalid" },
    { st("--status", "busy", "--detail", "esc\27[31m"), "EVENT_INVALID_TEXT: detail is invalid" },
    { st("--status", "idle", "--detail", "nel\194\133"), "EVENT_INVALID_TEXT: detail is invalid" },
  }

  for _, case in ipairs(CASES) do
    local argv, want = case[1], case[2]
    it("refuses " .. F.show(table.concat(argv, " ")):sub(1, 70) .. " with " .. want:match("^[A-Z_]+"), function()
      local root, parent = F.new_root()
      F.init(root, CH)
      local before = F.snapshot(parent)
      local r = ac(root, "event", "post", CH, table.unpack(argv))
      assert.equal(2, r.code, F.describe(r))
      assert.equal("", r.stdout, F.describe(r))
      assert.equal("agent-chat: " .. want .. "\n", r.stderr, F.describe(r))
      assert.same({}, F.diff(before, F.snapshot(parent)), F.describe(r))
    end)
  end

  -- Usage errors (exit 2, one line; the text is argparse's and not fixed
  -- by docs/format.md beyond that).
  local USAGE = {
    { { "event", "post", CH, "--from", "a", "--type", "status", "--harness", "h", "--status", "sleeping" },
      "invalid choice: 'sleeping'" },
    { { "event", "post", CH, "--from", "a", "--type", "weird", "--harness", "h" }, "invalid choice: 'weird'" },
    { { "event", "post", CH, "--from", "a", "--type", "capability" }, "--harness" },
    { { "event", "post", CH, "--type", "capability", "--harness", "h" }, "--from" },
    { { "event", "post", CH, "--from", "a", "--harness", "h" }, "--type" },
    { { "event", "post", "--from", "a", "--type", "capability", "--harness", "h" }, "channel" },
    { { "event" }, "COMMAND" },
    { { "event", "publish", CH }, "invalid choice: 'publish'" },
    { { "event", "read" }, "channel" },
    { { "event", "read", CH, "--type", "other" }, "invalid choice: 'other'" },
  }
  for _, case in ipairs(USAGE) do
    local argv, needle = case[1], case[2]
    it("usage error: " .. table.concat(argv, " "), function()
      local root, parent = F.new_root()
      F.init(root, CH)
      local before = F.snapshot(parent)
      local r = ac(root, table.unpack(argv))
      assert.equal(2, r.code, F.describe(r))
      assert.equal("", r.stdout, F.describe(r))
      assert.is_nil(F.error_line(r.stderr), F.describe(r))
      assert.truthy(r.stderr:find(needle, 1, true), F.describe(r))
      assert.same({}, F.diff(before, F.snapshot(parent)), F.describe(r))
    end)
  end

  it("reports missing and invalid channels with the plain messages (exit 1)", function()
    local root, parent = F.new_root()
    F.init(root, CH)
    local before = F.snapshot(parent)
    local want = {
      nochan = "channel 'nochan' not found under " .. root .. " (run: init nochan)",
      ["../x"] = "invalid channel name (path traversal blocked): '../x'",
      ["_x"] = "invalid channel name (reserved prefix blocked): '_x'",
      [".hidden"] = "invalid channel name (reserved prefix blocked): '.hidden'",
    }
    for name, text in pairs(want) do
      for _, argv in ipairs({
        { "event", "post", name, "--from", "alice", "--type", "capability", "--harness", "h" },
        { "event", "read", name },
        { "event", "read", name, "--type", "status" },
      }) do
        local r = ac(root, table.unpack(argv))
        assert.equal(1, r.code, F.describe(r))
        assert.equal("", r.stdout, F.describe(r))
        assert.equal("agent-chat: " .. text .. "\n", r.stderr, F.describe(r))
      end
    end
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  it("checks the event before the channel: a bad event on a bad channel reports the event (exit 2)", function()
    local root, parent = F.new_root()
    F.init(root, CH)
    local before = F.snapshot(parent)
    for _, name in ipairs({ "nochan", "../x", "_x", ".hidden", "a:b" }) do
      for _, case in ipairs({
        { { "--from", "a/b", "--type", "status", "--harness", "h", "--status", "busy" }, TRAVERSAL:format("agent", "a/b") },
        { { "--from", "alice", "--type", "status", "--harness", "h" }, "EVENT_INVALID_STATUS: None" },
        { { "--from", "alice", "--type", "capability", "--harness", ".h" }, RESERVED:format("harness", ".h") },
        { { "--from", "alice", "--type", "capability", "--harness", "h", "--primitives", "teleport,wait,wait" },
          DUPLICATE },
      }) do
        local r = ac(root, "event", "post", name, table.unpack(case[1]))
        assert.equal(2, r.code, F.describe(r))
        assert.equal("", r.stdout, F.describe(r))
        assert.equal("agent-chat: " .. case[2] .. "\n", r.stderr, F.describe(r))
      end
    end
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  it("takes agent names of any length (only the two safe-name rules apply)", function()
    local root = F.new_root()
    F.init(root, CH)
    local long = string.rep("a", 300)
    local r = ac(root, "event", "post", CH, "--from", long, "--type", "status", "--harness", string.rep("h", 300),
      "--status", "busy")
    assert.equal(0, r.code, F.describe(r))
    r = ac(root, "event", "read", CH)
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find('"agent": "' .. long .. '"', 1, true), F.describe(r))
  end)

  it("ignores --status and --detail for capability events", function()
    local root = F.new_root()
    F.init(root, CH)
    local r = ac(root, "event", "post", CH, "--from", "alice", "--type", "capability", "--harness", "h",
      "--status", "busy", "--detail", "ignored for capability")
    assert.equal(0, r.code, F.describe(r))
    assert.equal("posted event capability -> " .. CH .. "\n", r.stdout)
    r = ac(root, "event", "read", CH)
    assert.equal(0, r.code, F.describe(r))
    assert.falsy(r.stdout:find('"status"', 1, true), F.describe(r))
    assert.falsy(r.stdout:find('"detail"', 1, true), F.describe(r))
  end)
end)
