-- agentchat.importers.team: a team mailbox folder (docs/import.md).
--
--   DIR/config.json         the roster: {"name": "...", "members": [{"name":
--                           "...", "agentId": "...", "agentType": "..."}, ...],
--                           "lead": "..."}; other keys are ignored
--   DIR/inbox/<name>.jsonl  the messages <name> received, one JSON object a
--                           line: {type, from, content, timestamp, ...}
--
-- Each line becomes one message from `from` to the inbox's owner (a
-- broadcast, which is in every inbox, becomes one message to all). Its
-- import key hashes what makes it that message (type, sender, recipient or
-- "all" for a broadcast, time, text, request id, decision), not the line's
-- bytes, so flags that a mailbox rewrites (`read`) do not make a second
-- copy; the n-th identical line of one inbox gets "-n" appended, so real
-- repeats are kept.
local importer = require "agentchat.importer"
local json = require "agentchat.json"
local protocols = require "agentchat.protocols"
local py = require "agentchat.pycompat"
local sys = require "agentchat.sys"

local T = {}

local fail = require("agentchat.errors").fail

-- Types whose text is the message itself (the others may have none).
local NEEDS_TEXT = { message = true, broadcast = true }

local function config_error(what)
  return fail("IMPORT_INVALID_CONFIG", "config.json: " .. what)
end

local function roster_string(obj, key, where, required)
  local v = importer.value(obj, key)
  if v == nil and not required then
    return true
  end
  if type(v) ~= "string" or v == "" or v:find("%c") then
    return config_error(where .. key .. " must be a non-empty one-line string")
  end
  return v
end

--- Read the roster: {name, lead, members = {{name, agentId, agentType}}}.
local function read_config(dir)
  local text, msg, code, exit = importer.read(dir, "config.json")
  if not text then
    return nil, msg, code, exit
  end
  if not sys.utf8_valid(text) then
    return config_error("not valid UTF-8")
  end
  local cfg
  cfg, msg = json.loads(text)
  if cfg == nil then
    return config_error(msg)
  end
  if type(cfg) ~= "table" or json.is_array(cfg) then
    return config_error("not a JSON object")
  end
  local ok
  ok, msg, code, exit = roster_string(cfg, "name", "", true)
  if not ok then
    return nil, msg, code, exit
  end
  local roster = { name = cfg.name, members = {} }
  ok, msg, code, exit = roster_string(cfg, "lead", "", false)
  if not ok then
    return nil, msg, code, exit
  end
  roster.lead = importer.value(cfg, "lead")
  local members = importer.value(cfg, "members") or json.array({})
  if type(members) ~= "table" or not json.is_array(members) then
    return config_error("members must be a list")
  end
  for i, m in ipairs(members) do
    local where = "members[" .. (i - 1) .. "]."
    if type(m) ~= "table" or json.is_array(m) then
      return config_error("members[" .. (i - 1) .. "] must be an object")
    end
    for _, key in ipairs({ "name", "agentId", "agentType" }) do
      ok, msg, code, exit = roster_string(m, key, where, key == "name")
      if not ok then
        return nil, msg, code, exit
      end
    end
    roster.members[#roster.members + 1] = { name = m.name, agentId = importer.value(m, "agentId"),
                                            agentType = importer.value(m, "agentType") }
  end
  return roster
end

-- The members of the channel the import creates: the lead, then the
-- members, each once, in roster order.
local function member_names(roster)
  local out, seen = {}, {}
  local function add(n)
    if n and not seen[n] then
      seen[n] = true
      out[#out + 1] = n
    end
  end
  add(roster.lead)
  for _, m in ipairs(roster.members) do
    add(m.name)
  end
  return out
end

-- One line of inbox/<owner>.jsonl: the record, or nil and the problem.
local function record(obj, owner)
  local kind, problem = importer.need_string(obj, "type")
  if not kind then
    return nil, problem
  end
  local from
  from, problem = importer.need_string(obj, "from")
  if not from then
    return nil, problem
  end
  local ts_us
  ts_us, problem = importer.time(obj, "timestamp")
  if not ts_us then
    return nil, problem
  end
  local text_key = importer.value(obj, "content") ~= nil and "content" or "text"
  local text
  text, problem = importer.opt_string(obj, text_key)
  if text == false then
    return nil, problem
  elseif text == nil and NEEDS_TEXT[kind] then
    return nil, "missing field 'content'"
  end
  text = text or ""
  local request_id
  local id_key = importer.value(obj, "request_id") ~= nil and "request_id" or "requestId"
  request_id, problem = importer.opt_id(obj, id_key)
  if request_id == false then
    return nil, problem
  end
  -- The rules of a typed post (type name, request id, a request or
  -- response needs one): checked here, so that no post can fail on them.
  local ok, msg = protocols.extra_fields{ type = kind, request_id = request_id }
  if not ok then
    return nil, msg
  end
  local approve = importer.value(obj, "approve")
  if approve == nil then
    approve = importer.value(obj, "approved")
  end
  if approve ~= nil and type(approve) ~= "boolean" then
    return nil, "field 'approve' must be true or false"
  end
  local reason, summary
  reason, problem = importer.opt_string(obj, "reason")
  if reason == false then
    return nil, problem
  end
  summary, problem = importer.opt_string(obj, "summary")
  if summary == false then
    return nil, problem
  end

  local decision = approve == true and "approved" or approve == false and "rejected" or nil
  local body = text
  if reason and reason ~= "" then
    body = text == "" and reason or (text .. "\n\nReason: " .. reason)
  end
  local title = summary and importer.title_of(summary) or ""
  if title == "" then
    title = importer.title_of(text)
  end
  if title == "" then
    title = kind .. (decision and (": " .. decision) or "")
  end
  local broadcast = kind == "broadcast"
  local content_key = table.concat({ "team", kind, from, broadcast and "*" or owner, tostring(ts_us), text,
                                     request_id or "", decision or "", reason or "" }, "\0")
  return {
    hash = sys.sha256(content_key):sub(1, 32),
    ts_us = ts_us, from = from, to = broadcast and "all" or owner, title = title, body = body,
    status = decision or "discussion", type = kind, request_id = request_id,
    reply_for = request_id and kind:match("_response$") and request_id or nil,
  }
end

--- Read a team folder into a plan (importer.load).
function T.load(dir)
  local kinds, msg, code, exit = importer.entries(dir)
  if not kinds then
    return nil, msg, code, exit
  end
  if kinds["config.json"] == nil then
    return fail("IMPORT_INVALID_FOLDER", "no config.json in " .. py.repr_str(dir) .. " (not a team folder)")
  end
  local ok
  ok, msg, code, exit = importer.expect_all(kinds, { { "config.json", "file" }, { "inbox", "dir" } })
  if not ok then
    return nil, msg, code, exit
  end
  local roster
  roster, msg, code, exit = read_config(dir)
  if not roster then
    return nil, msg, code, exit
  end
  local plan = importer.new_plan("team", dir)
  plan.roster = roster
  plan.init = { members = member_names(roster), topic = "team " .. roster.name }
  if not kinds.inbox then
    return plan
  end
  local inboxes
  inboxes, msg, code, exit = importer.inboxes(dir)
  if not inboxes then
    return nil, msg, code, exit
  end
  ok, msg, code, exit = importer.check_total(dir, inboxes)
  if not ok then
    return nil, msg, code, exit
  end
  local seen = {}
  for _, inbox in ipairs(inboxes) do
    local repeats = {}
    ok, msg, code, exit = importer.each_record(plan, dir, inbox, record, function(rec)
      repeats[rec.hash] = (repeats[rec.hash] or 0) + 1
      rec.key = "team:" .. rec.hash .. (repeats[rec.hash] > 1 and ("-" .. repeats[rec.hash]) or "")
      if not seen[rec.key] then        -- a broadcast's copy in another inbox
        seen[rec.key] = true
        importer.add(plan, rec)
      end
    end)
    if not ok then
      return nil, msg, code, exit
    end
  end
  return plan
end

return T
