-- agentchat.events: adapter-neutral capability/status events, schema v1
-- (docs/format.md 2.3, 3.10). An event is an ordinary message from the agent with
-- `status: event.<type>`, `title: event:<type>`, `to: all` and a body of
-- compact JSON (sorted keys, "," / ":" separators, non-ASCII as UTF-8).
--
--   events.validate(obj)      -- true | nil, message, code   (EVENT_* codes)
--   events.build{agent=, harness=, type=, status=, detail=, primitives=, ts=}
--   events.post(ch, spec)     -- the event object | nil, message, code
--   events.read(ch, {type=})  -- iterator-free: {events}, then the first
--                                error (so callers print what came before)
local json = require "agentchat.json"
local sys = require "agentchat.sys"
local store = require "agentchat.store"

local M = {}

M.PRIMITIVES = { "messages", "cursors", "wait", "tasks", "dependencies", "leases",
                 "path_locks", "state_summary" }
M.STATUSES = { "ready", "busy", "idle", "blocked", "stopped" }
M.REQUIRED = { "schema_version", "event", "agent", "harness", "ts" }  -- the schema's order

local KNOWN_PRIMITIVE, KNOWN_STATUS = {}, {}
for _, p in ipairs(M.PRIMITIVES) do
  KNOWN_PRIMITIVE[p] = true
end
for _, s in ipairs(M.STATUSES) do
  KNOWN_STATUS[s] = true
end
local ALLOWED = { schema_version = true, event = true, agent = true, harness = true, ts = true,
                  primitives = true, status = true, detail = true }
local ONLY_FOR = { primitives = "capability", status = "status", detail = "status" }

local EXIT = 2

local function fail(code, message)
  return nil, message, code, EXIT
end

-- Python's str() of a JSON value, for "EVENT_INVALID_STATUS: <value>".
local function py_str(v)
  if v == nil or v == json.null then
    return "None"
  elseif v == true then
    return "True"
  elseif v == false then
    return "False"
  elseif type(v) == "string" then
    return v
  elseif type(v) == "table" then
    return require("agentchat.pycompat").repr(v)
  end
  return json.dumps(v)
end

local function has_control(s)
  -- Unicode Cc: C0, DEL, C1 (U+0080..U+009F is \xc2\x80..\xc2\x9f)
  return s:find("[%z\1-\31\127]") ~= nil or s:find("\xc2[\x80-\x9f]") ~= nil
end

-- Text the event stores (agent, harness, detail): a string with no control
-- character and valid UTF-8 (a lone surrogate from a JSON escape is not).
local function clean_text(v)
  return type(v) == "string" and not has_control(v) and sys.utf8_valid(v)
end

-- agent / harness: non-empty clean text that also passes the two core rules
-- of a safe name (docs/format.md 3.10). Only those two: the name never becomes a
-- path (the message file uses its slug), so the file-system limits on
-- channel names (length) do not apply.
local function check_name(value, what)
  if not clean_text(value) or value == "" then
    return fail("EVENT_INVALID_TEXT", what .. " is invalid")
  end
  local why
  if value == "." or value == ".." or value:find("[/\\:]") then
    why = "path traversal blocked"
  elseif value:find("^[._]") then
    why = "reserved prefix blocked"
  end
  if why then
    return fail("EVENT_INVALID_TEXT", "invalid " .. what .. " name (" .. why .. "): '" .. value .. "'")
  end
  return true
end

-- ts: a string Python's fromisoformat reads (a trailing Z or z taken as
-- +00:00), with an offset.
local function check_ts(ts)
  if type(ts) ~= "string" then
    return fail("EVENT_INVALID_TIMESTAMP", "ts must be a string")
  end
  if ts:find("[Zz]$") then
    ts = ts:sub(1, -2) .. "+00:00"
  end
  local has = sys.iso_has_offset(ts)
  if has == nil then
    return fail("EVENT_INVALID_TIMESTAMP", "ts must be ISO-8601")
  elseif not has then
    return fail("EVENT_INVALID_TIMESTAMP", "ts must include an offset")
  end
  return true
end

local function check_primitives(prims)
  if type(prims) ~= "table" or not json.is_array(prims) or #prims == 0 then
    return fail("EVENT_INVALID_PRIMITIVES", "primitives must be strings")
  end
  for _, p in ipairs(prims) do
    if type(p) ~= "string" then
      return fail("EVENT_INVALID_PRIMITIVES", "primitives must be strings")
    end
  end
  -- Duplicates are reported before unknown names.
  local seen = {}
  for _, p in ipairs(prims) do
    if seen[p] then
      return fail("EVENT_DUPLICATE_PRIMITIVE", "primitives must be unique")
    end
    seen[p] = true
  end
  for _, p in ipairs(prims) do
    if not KNOWN_PRIMITIVE[p] then
      return fail("EVENT_UNKNOWN_PRIMITIVE", p)
    end
  end
  return true
end

-- schema_version equals the number 1 (1.0 too, as Python compares), never
-- a boolean.
local function is_version_1(v)
  return type(v) == "number" and v == 1
end

--- Validate a decoded event object (docs/format.md 3.10). The checks run in the
--- Python tool's order, so the first problem reported is the same: object,
--- schema_version, event type, unknown fields (all of them, sorted, joined
--- by ", "), agent, harness, ts, then the type's own fields.
function M.validate(obj)
  if type(obj) ~= "table" or json.is_array(obj) then
    return fail("EVENT_INVALID_RECORD", "event must be an object")
  end
  if not is_version_1(obj.schema_version) then
    return fail("EVENT_UNSUPPORTED_VERSION", "schema_version must be 1")
  end
  if obj.event ~= "capability" and obj.event ~= "status" then
    return fail("EVENT_INVALID_TYPE", "event must be capability or status")
  end
  local unknown = {}
  for k in pairs(obj) do
    if not ALLOWED[k] or (ONLY_FOR[k] and ONLY_FOR[k] ~= obj.event) then
      unknown[#unknown + 1] = tostring(k)
    end
  end
  if #unknown > 0 then
    table.sort(unknown)
    return fail("EVENT_UNKNOWN_FIELD", table.concat(unknown, ", "))
  end
  for _, k in ipairs{ "agent", "harness" } do
    if obj[k] == nil then
      return fail("EVENT_REQUIRED_FIELD_MISSING", k)
    end
    local ok, msg, code = check_name(obj[k], k)
    if not ok then
      return nil, msg, code, EXIT
    end
  end
  if obj.ts == nil then
    return fail("EVENT_REQUIRED_FIELD_MISSING", "ts")
  end
  local ok, msg, code = check_ts(obj.ts)
  if not ok then
    return nil, msg, code, EXIT
  end
  if obj.event == "capability" then
    return check_primitives(obj.primitives)
  end
  if type(obj.status) ~= "string" or not KNOWN_STATUS[obj.status] then
    return fail("EVENT_INVALID_STATUS", py_str(obj.status))
  end
  if obj.detail ~= nil and not clean_text(obj.detail) then
    return fail("EVENT_INVALID_TEXT", "detail is invalid")
  end
  return true
end

--- The event object for spec {agent, harness, type, status, detail,
--- primitives (list; items trimmed, blanks dropped, empty = default), ts}.
function M.build(spec)
  local obj = { schema_version = 1, event = spec.type, agent = spec.agent, harness = spec.harness,
                ts = spec.ts or sys.now_iso(6) }
  if spec.type == "capability" then
    local prims = {}
    for _, p in ipairs(spec.primitives or {}) do
      local v = sys.strip(p)
      if v ~= "" then
        prims[#prims + 1] = v
      end
    end
    if #prims == 0 then
      prims = { table.unpack(M.PRIMITIVES) }
    end
    obj.primitives = json.array(prims)
  elseif spec.type == "status" then
    obj.status = spec.status
    obj.detail = spec.detail
  end
  return obj
end

local COMPACT = { sort_keys = true, ensure_ascii = false, separators = { ",", ":" } }
local SPACED = { sort_keys = true, ensure_ascii = false }

--- Validate and post an event on channel `ch` (an agentchat.Channel).
function M.post(ch, spec)
  local obj = M.build(spec)
  local ok, msg, code, exit = M.validate(obj)
  if not ok then
    return nil, msg, code, exit
  end
  local res
  res, msg, code, exit = ch:post{ from = obj.agent, to = "all", title = "event:" .. obj.event,
                                  status = "event." .. obj.event, body = json.dumps(obj, COMPACT) }
  if not res then
    return nil, msg, code, exit
  end
  return obj, res
end

--- Every event of the channel in seq order, validated: returns the list of
--- {event=obj, message=m} read before the first invalid one, then (when
--- there is one) its message and code. opts.type filters after validation.
function M.read(ch, opts)
  opts = opts or {}
  local batch, msg, code, exit = ch:peek(math.maxinteger)
  if not batch then
    return nil, msg, code, exit
  end
  local out = {}
  for _, m in ipairs(batch.messages) do
    local status = m.fields.status
    if status and status:sub(1, 6) == "event." then
      local obj = json.loads(m.body)
      if obj == nil then
        return out, m.file, "EVENT_MALFORMED_BODY", EXIT
      end
      local ok, vmsg, vcode = M.validate(obj)
      if not ok then
        return out, vmsg, vcode, EXIT
      end
      if not opts.type or obj.event == opts.type then
        out[#out + 1] = { event = obj, message = m }
      end
    end
  end
  return out
end

--- One event as `event read` prints it: json.dumps(obj, sort_keys=True,
--- ensure_ascii=False) with Python's default separators.
function M.format(obj)
  return json.dumps(obj, SPACED)
end

return M
