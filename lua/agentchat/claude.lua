-- agentchat.claude: Claude Code's native agent teams (docs/claude-teams.md),
-- what `import claude-team` and `bridge claude-team` share.
--
--   claude.home()                        -- $CLAUDE_CONFIG_DIR, else ~/.claude
--   claude.locate(dir_or_team)           -- {dir, home, name} | nil, msg, code, exit
--   claude.roster(dir, warn)             -- {name, lead, members, lead_session}
--   claude.entries(text)                 -- the inbox array | nil, problem
--   claude.record(entry, ctx)            -- the channel record of one entry
--   claude.key(team, owner, from, timestamp, text [, msg_id])
--   claude.entry(m, owner, team)         -- the inbox entry a channel message
--                                        -- becomes: {object, key} | nil
--   claude.delivered_keys(m, team, names) -- keys of the entries `m` becomes
--   claude.append(text, objects)         -- the inbox file with entries added
--
-- What is known of the files is collected from public sources (no schema is
-- published): every field is treated as optional, a field we do not know is
-- kept, and nothing here ever rewrites an entry it did not write.
--
-- The key of an entry (import_id `claude:<32 hex>`) is what the importer and
-- the bridge recognise it by: its msg_id when it has one, else a hash of the
-- team, the inbox's owner, the sender, the timestamp as written and the text
-- (the `read` flag that Claude Code sets is not part of it). An entry the
-- bridge wrote from a channel message is recognised the same way: its key is
-- computed from the message itself (claude.entry), so neither direction
-- ever carries it back.
local importer = require "agentchat.importer"
local json = require "agentchat.json"
local protocols = require "agentchat.protocols"
local py = require "agentchat.pycompat"
local sys = require "agentchat.sys"

local M = {}

local fail = require("agentchat.errors").fail

M.HARNESS = "claude-code"
M.INBOXES = "inboxes"

-- The entry fields Claude Code writes (from 2.1.39 on); every other one is
-- kept as the message's `claude_extra`.
local ENTRY_FIELDS = { from = true, text = true, timestamp = true, read = true, color = true, summary = true }

-- idleReason -> the status of the status event (docs/format.md 3.10).
M.IDLE_STATUS = { available = "idle", interrupted = "idle", failed = "blocked" }

-- ------------------------------------------------------------ where

--- Claude Code's configuration folder: $CLAUDE_CONFIG_DIR, else ~/.claude.
function M.home()
  local env = os.getenv("CLAUDE_CONFIG_DIR")
  if env and env ~= "" then
    return env
  end
  local home = sys.home()
  return home and (home .. "/.claude") or nil
end

local function dirname(p)
  return p:match("^(.*)/[^/]*$") or "."
end

local function basename(p)
  return p:match("([^/]*)$")
end

--- The team folder of `arg`: a path (anything with a '/'), or a team name
--- looked up as <home>/teams/<name> (else a folder of that name here).
--- Returns {dir, home, name}: `home` is the configuration folder the team
--- lives in (its tasks are <home>/tasks/...), nil when the folder is not
--- inside one (<home>/teams/<name>).
function M.locate(arg)
  if type(arg) ~= "string" or arg == "" then
    error("a team folder or team name is required", 3)
  end
  local ac = require "agentchat"
  local dir
  if arg:find("/", 1, true) or arg == "." or arg == ".." then
    dir = ac.normalize_path(arg)
  else
    local home = M.home()
    local candidate = home and (home .. "/teams/" .. arg)
    if candidate and require("agentchat.folder").check(candidate) then
      return { dir = candidate, home = home, name = arg }
    end
    if not require("agentchat.folder").check(arg) then
      return fail("IMPORT_INVALID_FOLDER", "no team " .. py.repr_str(arg) .. " in "
        .. py.repr_str(home and (home .. "/teams") or "~/.claude/teams") .. " (and no folder of that name)")
    end
    dir = arg
  end
  local ok, msg, code, exit = importer.check_dir(dir)
  if not ok then
    return nil, msg, code, exit
  end
  local parent = dirname(dir)
  local home = basename(parent) == "teams" and dirname(parent) or nil
  return { dir = dir, home = home, name = basename(dir) }
end

-- ------------------------------------------------------------ text

--- A frontmatter value made of free text: control characters and runs of
--- whitespace become one space, the ends are stripped, at most 4000 bytes
--- (cut at a character boundary); nil when nothing is left.
function M.field_text(s)
  if type(s) ~= "string" then
    return nil
  end
  s = sys.strip((s:gsub("[%z\1-\31\127]+", " "):gsub("\194[\128-\159]", " "):gsub("  +", " ")))
  if #s > 4000 then
    s = s:sub(1, (utf8.offset(s, 1, 4001) or 4001) - 1)
    while not utf8.len(s) do
      s = s:sub(1, -2)
    end
    s = sys.strip(s)
  end
  return s ~= "" and s or nil
end

local COMPACT = { sort_keys = true, ensure_ascii = true, separators = { ",", ":" } }

-- The fields of obj not in `known`, as one compact JSON text for a
-- frontmatter value (nil when there are none, or too many bytes to keep).
local function leftover(obj, known, except)
  local rest, any = {}, false
  for k, v in pairs(obj) do
    if not known[k] and not (except and except[k]) then
      rest[k] = v
      any = true
    end
  end
  if not any then
    return nil
  end
  local text = json.dumps(rest, COMPACT)
  return #text <= 4000 and text or nil, #text > 4000
end

-- ------------------------------------------------------------ the roster

--- The team's roster from <dir>/config.json, every field optional:
--- {name, lead, members = {{name, agentId, agentType, color}}, lead_session}.
--- A member without a usable name is left out with warn(file, problem).
function M.roster(dir, warn)
  local text, msg, code, exit = importer.read(dir, "config.json")
  if not text then
    return nil, msg, code, exit
  end
  local cfg
  if not sys.utf8_valid(text) then
    msg = "not valid UTF-8"
  else
    cfg, msg = json.loads(text)
    if cfg ~= nil and (type(cfg) ~= "table" or json.is_array(cfg)) then
      cfg, msg = nil, "not a JSON object"
    end
  end
  if cfg == nil then
    return fail("IMPORT_INVALID_CONFIG", "config.json: " .. msg)
  end
  local name = importer.value(cfg, "name")
  local roster = { name = type(name) == "string" and name ~= "" and name or basename(dir), members = {} }
  local lead_id = importer.value(cfg, "leadAgentId")
  if type(lead_id) == "string" then
    roster.lead = lead_id:match("^(.-)@") or lead_id
  end
  local session = importer.value(cfg, "leadSessionId")
  roster.lead_session = type(session) == "string" and session or nil
  local members = importer.value(cfg, "members")
  if members ~= nil and (type(members) ~= "table" or not json.is_array(members)) then
    warn("config.json", "members is not a list (no members read)")
    members = nil
  end
  for i, m in ipairs(members or {}) do
    local mname = type(m) == "table" and importer.value(m, "name")
    if type(mname) ~= "string" or mname == "" or mname:find("%c") or not sys.utf8_valid(mname) then
      warn("config.json", "members[" .. (i - 1) .. "] has no usable name (left out)")
    else
      local kind = importer.value(m, "agentType")
      roster.members[#roster.members + 1] = { name = mname, agentId = importer.value(m, "agentId"),
                                              agentType = kind, color = importer.value(m, "color") }
      if not roster.lead and (kind == "team-lead" or kind == "coordinator") then
        roster.lead = mname
      end
    end
  end
  if roster.lead and (roster.lead == "" or roster.lead:find("%c") or not sys.utf8_valid(roster.lead)) then
    roster.lead = nil
  end
  return roster
end

--- The entries of an inbox file (a JSON array): the list, or nil and the
--- problem.
function M.entries(text)
  return importer.json_file(text, "array")
end

-- ------------------------------------------------------------ keys

local function hash(parts)
  return sys.sha256(table.concat(parts, "\0")):sub(1, 32)
end

--- The import key of an entry (see the top).
function M.key(team, owner, from, timestamp, text, msg_id)
  if msg_id then
    return "claude:" .. hash({ "claude-msg", team, owner, msg_id })
  end
  return "claude:" .. hash({ "claude", team, owner, from, timestamp, text })
end

-- The timestamp of an entry as written, for its key (a number as JSON
-- writes it).
local function stamp_text(v)
  if type(v) == "string" then
    return v
  end
  return json.dumps(v)
end

-- ------------------------------------------------------------ entry -> record

-- A request id of a protocol message, or nil and the problem.
local function request_id(obj, keys)
  for _, k in ipairs(keys) do
    local v = importer.value(obj, k)
    if v ~= nil then
      if math.type(v) == "integer" then
        v = tostring(v)
      end
      local ok, msg = protocols.check_request_id(v)
      if not ok then
        return nil, msg
      end
      return v
    end
  end
  return nil, "missing field '" .. keys[1] .. "'"
end

local function opt_text(obj, key)
  local v = importer.value(obj, key)
  return type(v) == "string" and v or nil
end

-- The protocol messages agent-chat maps to its own types (FORMAT: 3.4):
-- the record's type, its status (or `decision`: the JSON field that says
-- approved), the JSON field of its body and of its plan file. The fields
-- a mapping does not use are kept as `claude_fields`.
local PROTOCOL = {
  shutdown_request = { type = "shutdown_request", body = "reason" },
  shutdown_approved = { type = "shutdown_response", status = "approved", body = "reason" },
  shutdown_rejected = { type = "shutdown_response", status = "rejected", body = "reason" },
  plan_approval_request = { type = "plan_approval_request", body = "planContent", plan_file = "planFilePath" },
  plan_approval_response = { type = "plan_approval_response", body = "feedback", decision = "approved" },
}

-- The typed message of protocol object obj by its PROTOCOL spec: {type,
-- status, request_id, body, plan_file, used}, or nil and the problem.
local function protocol(obj, spec)
  local id, problem = request_id(obj, { "requestId", "request_id" })
  if not id then
    return nil, problem
  end
  local p = { type = spec.type, status = spec.status, request_id = id, body = opt_text(obj, spec.body) or "",
              used = { requestId = true, request_id = true, type = true, from = true, timestamp = true,
                       [spec.body] = true } }
  if spec.plan_file then
    p.plan_file = M.field_text(opt_text(obj, spec.plan_file))
    p.used[spec.plan_file] = true
  end
  if spec.decision then
    local approved = importer.value(obj, spec.decision)
    if approved == nil then
      approved = importer.value(obj, "approve")
    end
    if type(approved) ~= "boolean" then
      return nil, "field '" .. spec.decision .. "' must be true or false"
    end
    p.status = approved and "approved" or "rejected"
    p.used[spec.decision], p.used.approve = true, true
  end
  return p
end
M.PROTOCOL_TYPES = { "shutdown_request", "shutdown_approved", "shutdown_rejected", "plan_approval_request",
                     "plan_approval_response", "idle_notification" }

-- The protocol object inside an entry's text, or nil (plain text).
local function protocol_of(text)
  if not text:match("^%s*{") then
    return nil
  end
  local obj = json.loads(text)
  if type(obj) == "table" and not json.is_array(obj) and type(obj.type) == "string" then
    return obj
  end
  return nil
end

-- A UTC ISO-8601 time with milliseconds of microseconds since 1970
-- (the form Claude Code writes: 2026-02-10T09:30:00.120Z).
function M.iso_utc(us)
  local secs = us // 1000000
  return os.date("!%Y-%m-%dT%H:%M:%S", secs) .. string.format(".%03dZ", (us % 1000000) // 1000)
end

-- The status event of an idle_notification (docs/format.md 3.10).
local function idle_event(obj, rec)
  local reason = opt_text(obj, "idleReason") or "available"
  local detail = M.field_text(opt_text(obj, "summary")) or ("idle (" .. reason .. ")")
  local task = importer.value(obj, "completedTaskId")
  if task ~= nil and (type(task) == "string" or math.type(task) == "integer") then
    detail = detail .. " [task " .. tostring(task)
      .. (type(obj.completedStatus) == "string" and (" " .. obj.completedStatus) or "") .. "]"
  end
  local failure = M.field_text(opt_text(obj, "failureReason"))
  if failure then
    detail = detail .. ": " .. failure
  end
  local events = require "agentchat.events"
  local event = events.build{ type = "status", agent = rec.from, harness = M.HARNESS,
                              status = M.IDLE_STATUS[reason] or "idle", detail = M.field_text(detail),
                              ts = M.iso_utc(rec.ts_us) }
  local ok, msg = events.validate(event)
  if not ok then
    return nil, "idle_notification: " .. msg
  end
  rec.title, rec.status, rec.body, rec.to = "event:status", "event.status", events.encode(event), "all"
  return rec
end

--- The channel record of one inbox entry (the importer's record shape,
--- docs/import.md), or nil and the problem. ctx = {team, owner}; the
--- record's `hash` is its key without the repeat suffix, `plain` the key
--- of its sender, time and text even when it has a msg_id (what
--- claude.entry computes for an entry the bridge wrote).
function M.record(entry, ctx)
  if type(entry) ~= "table" or json.is_array(entry) then
    return nil, "not a JSON object"
  end
  local from, problem = importer.need_string(entry, "from")
  if not from then
    return nil, problem
  end
  if from:find("%c") then
    return nil, "field 'from' contains a control character"
  end
  local text = importer.value(entry, "text")
  if text == nil then
    return nil, "missing field 'text'"
  elseif type(text) ~= "string" then
    return nil, "field 'text' must be a string"
  end
  local ts_us
  ts_us, problem = importer.time(entry, "timestamp")
  if not ts_us then
    return nil, problem
  end
  local msg_id = importer.value(entry, "msg_id")
  if msg_id ~= nil and type(msg_id) ~= "string" and math.type(msg_id) ~= "integer" then
    msg_id = nil
  end
  local fields = {}
  local extra, too_big = leftover(entry, ENTRY_FIELDS)
  fields.claude_extra = extra
  local summary = M.field_text(opt_text(entry, "summary"))
  fields.summary = summary
  fields.color = M.field_text(opt_text(entry, "color"))
  local plain = M.key(ctx.team, ctx.owner, from, stamp_text(entry.timestamp), text)
  local rec = {
    hash = msg_id and M.key(ctx.team, ctx.owner, nil, nil, nil, tostring(msg_id)) or plain, plain = plain,
    ts_us = ts_us, from = from, to = ctx.owner, body = text, status = "discussion", fields = fields,
    note = too_big and "its unknown fields are too long to keep (over 4000 bytes)" or nil,
  }
  local obj = protocol_of(text)
  if obj and obj.type == "idle_notification" then
    return idle_event(obj, rec)
  end
  local spec = obj and PROTOCOL[obj.type]
  if spec then
    local p
    p, problem = protocol(obj, spec)
    if not p then
      return nil, obj.type .. ": " .. problem
    end
    rec.type, rec.request_id, rec.body = p.type, p.request_id, p.body
    rec.status = p.status or "discussion"
    rec.reply_for = protocols.is_response_type(p.type) and p.request_id or nil
    fields.plan_file = p.plan_file
    fields.claude_fields = leftover(obj, p.used)
  elseif obj then
    -- Another protocol message: its type when it can be ours, the JSON as
    -- the body.
    local t = obj.type
    local id = request_id(obj, { "requestId", "request_id" })
    local typed = protocols.check_type(t) and (id or not (protocols.response_type(t)
      or protocols.is_response_type(t)))
    if typed then
      rec.type, rec.request_id = t, id
      rec.reply_for = id and protocols.is_response_type(t) and id or nil
    else
      fields.claude_type = M.field_text(t)
    end
  end
  local title = summary and importer.title_of(summary) or ""
  if title == "" and not obj then
    title = importer.title_of(text)
  end
  if title == "" then
    title = obj and ((rec.type or obj.type) .. (rec.status ~= "discussion" and (": " .. rec.status) or ""))
      or "message"
  end
  rec.title = title
  return rec
end

-- ------------------------------------------------------------ message -> entry

--- The roster names a channel message goes to (never its sender): the
--- names its `to` lists that are in `names`, or, for a broadcast, every
--- one of them. Only ordinary messages the channel did not get from an
--- import (its `import_id`) go anywhere: events, audit records and
--- Claude Code's own entries stay in the channel.
function M.recipients(m, names)
  local f = m.fields or {}
  if f.import_id or m.decode_error or require("agentchat.kinds").of(m) ~= "message" then
    return {}
  end
  local from = f.from
  if type(from) ~= "string" or from == "" then
    return {}
  end
  local list = require("agentchat").recipients(f.to)
  local member = {}
  for _, n in ipairs(names) do
    member[n] = true
  end
  local out, seen = {}, {}
  for _, n in ipairs(list or names) do
    if member[n] and n ~= from and not seen[n] then
      seen[n] = true
      out[#out + 1] = n
    end
  end
  return out
end

-- The timestamp of the entry a message becomes: the message's own time
-- (UTC, its whole seconds) with the seq's last three digits as
-- milliseconds, so that the entry, and its key, follow from the message
-- alone (the ts line has whole seconds only).
local function entry_time(m)
  local secs = m.fields and m.fields.ts and sys.iso_epoch(m.fields.ts) or m.mtime or 0
  return M.iso_utc(math.floor(secs) * 1000000 + (m.seq % 1000) * 1000)
end

local function quote(v)
  return json.dumps(v, { ensure_ascii = false })
end

-- A JSON object with its keys in the given order: {{key, value}, ...}
-- (nil values left out); `indent` nil for one line.
local function ordered(pairs_, indent)
  local parts = {}
  for _, kv in ipairs(pairs_) do
    if kv[2] ~= nil then
      parts[#parts + 1] = quote(kv[1]) .. (indent and ": " or ":") .. quote(kv[2])
    end
  end
  if not indent then
    return "{" .. table.concat(parts, ",") .. "}"
  end
  local pad = string.rep(" ", indent)
  return "{\n" .. pad .. "  " .. table.concat(parts, ",\n" .. pad .. "  ") .. "\n" .. pad .. "}"
end

-- The text of the entry of message m: the protocol message Claude Code
-- reads for the typed requests and responses it knows, else the body.
local function entry_text(m, stamp)
  local f = m.fields
  local body = sys.rstrip(m.body or "")
  local t, id = f.type, f.request_id
  local approved = sys.strip(f.status or "") == "approved"
  if id and t == "shutdown_request" then
    return ordered({ { "type", t }, { "requestId", id }, { "from", f.from }, { "reason", body },
                     { "timestamp", stamp } }), true
  elseif id and t == "shutdown_response" then
    return ordered({ { "type", approved and "shutdown_approved" or "shutdown_rejected" }, { "requestId", id },
                     { "from", f.from }, { "reason", body ~= "" and body or nil }, { "timestamp", stamp } }), true
  elseif id and t == "plan_approval_request" then
    return ordered({ { "type", t }, { "from", f.from }, { "timestamp", stamp }, { "planFilePath", f.plan_file or "" },
                     { "planContent", body }, { "requestId", id } }), true
  elseif id and t == "plan_approval_response" then
    return ordered({ { "type", t }, { "requestId", id }, { "approved", approved },
                     { "feedback", body ~= "" and body or nil }, { "timestamp", stamp } }), true
  end
  if body == "" then
    body = f.title or ""
  end
  return body, false
end

--- The entry channel message m becomes in `owner`'s inbox: {json = its
--- text as an element of the inbox array (two-space indented, as Claude
--- Code writes its files), key = its key, from, timestamp}. The entry has
--- from, text, summary (the title, for plain messages), timestamp and
--- read = false.
function M.entry(m, owner, team)
  local stamp = entry_time(m)
  local text, typed = entry_text(m, stamp)
  local f = m.fields
  local obj = ordered({ { "from", f.from }, { "text", text },
                        { "summary", not typed and M.field_text(f.title) or nil },
                        { "timestamp", stamp }, { "read", false } }, 2)
  return { json = "  " .. obj, key = M.key(team, owner, f.from, stamp, text), from = f.from, timestamp = stamp }
end

--- The key of an entry by its sender, timestamp and text (never its
--- msg_id): what M.entry gives the entries the bridge writes; nil for an
--- entry without them.
function M.plain_key(entry, team, owner)
  if type(entry) ~= "table" or type(entry.from) ~= "string" or type(entry.text) ~= "string"
      or entry.timestamp == nil then
    return nil
  end
  return M.key(team, owner, entry.from, stamp_text(entry.timestamp), entry.text)
end

--- The keys of the entries channel message m becomes (see M.recipients).
function M.delivered_keys(m, team, names)
  local out = {}
  for _, owner in ipairs(M.recipients(m, names)) do
    out[#out + 1] = M.entry(m, owner, team).key
  end
  return out
end

--- The inbox file `text` (a JSON array as Claude Code writes it, or empty
--- for a new file) with the entries `jsons` (from M.entry) appended. The
--- bytes before the closing bracket are kept as they are, so every entry
--- already there (its `read` flag, the fields we do not know, its
--- formatting) stays exactly as it was. nil and the problem when the text
--- is not a JSON array.
function M.append(text, jsons)
  local list = {}
  if text:match("^%s*$") then
    text = "[]"
  else
    local problem
    list, problem = M.entries(text)
    if not list then
      return nil, problem
    end
  end
  local head = text:match("^(.-)%s*%]%s*$")
  if not head then
    return nil, "not a JSON array"
  end
  local added = table.concat(jsons, ",\n")
  if #list == 0 then
    return "[\n" .. added .. "\n]"
  end
  return head .. ",\n" .. added .. "\n]"
end

-- ------------------------------------------------------------ tasks

-- Claude Code's task status -> the board's (docs/tasks.md).
M.TASK_STATUS = { pending = "open", in_progress = "in_progress", completed = "done", deleted = "cancelled" }

local function task_id(v)
  if math.type(v) == "integer" then
    v = tostring(v)
  end
  if type(v) ~= "string" or #v > 250 or not v:match("^[A-Za-z0-9][A-Za-z0-9._-]*$") then
    return nil
  end
  return v
end

--- One task file (FORMAT: 3.5) as a board task: {id, title, status,
--- owner, depends_on, acceptance, internal}, or nil and the problem.
--- `stem` is its file name without ".json" (the id when it has none).
function M.task(obj, stem)
  if type(obj) ~= "table" or json.is_array(obj) then
    return nil, "not a JSON object"
  end
  local raw = importer.value(obj, "id")
  if raw == nil then
    raw = stem
  end
  local id = task_id(raw)
  if not id then
    return nil, "id must be letters, digits, '.', '_' or '-' (at most 250): " .. py.repr(raw)
  end
  local meta = importer.value(obj, "metadata")
  local internal = type(meta) == "table" and meta._internal == true
  local status = importer.value(obj, "status")
  if status == nil then
    status = "pending"
  end
  if not M.TASK_STATUS[status] then
    return nil, "field 'status' must be pending, in_progress, completed or deleted: " .. py.repr(status)
  end
  local subject = importer.value(obj, "subject")
  if subject ~= nil and type(subject) ~= "string" then
    return nil, "field 'subject' must be a string"
  end
  local owner = importer.value(obj, "owner")
  if owner ~= nil and type(owner) ~= "string" then
    return nil, "field 'owner' must be a string"
  end
  owner = M.field_text(owner)
  local deps, seen = {}, {}
  local blocked = importer.value(obj, "blockedBy")
  if blocked ~= nil and (type(blocked) ~= "table" or not (json.is_array(blocked) or next(blocked) == nil)) then
    return nil, "field 'blockedBy' must be a list"
  end
  for _, d in ipairs(blocked or {}) do
    local dep = task_id(d)
    if not dep then
      return nil, "blockedBy: not a task id: " .. py.repr(d)
    end
    if not seen[dep] and dep ~= id then
      seen[dep] = true
      deps[#deps + 1] = dep
    end
  end
  local acceptance = {}
  local description = importer.value(obj, "description")
  if type(description) == "string" then
    for line in (description .. "\n"):gmatch("([^\n]*)\n") do
      local item = M.field_text(line)
      if item then
        acceptance[#acceptance + 1] = item
      end
    end
  end
  return { id = id, title = M.field_text(subject) or "", status = M.TASK_STATUS[status], owner = owner,
           depends_on = deps, acceptance = acceptance, internal = internal }
end

return M
