-- agentchat.importers.bus: a receipt-bus folder (docs/import.md).
--
--   DIR/ledger.jsonl         every message the bus carried
--   DIR/inbox/<agent>.jsonl  the messages <agent> received (with its own
--                            status and ack time)
--
-- Lines are {id, ts, from, to, role, message, status, ack_at}. The ledger
-- and the inboxes overlap: a message is imported once, by its id (import
-- key "bus:<id>"); a copy of an id whose content differs (sender,
-- recipient, text, time or role) is a warning and skipped, never merged.
-- Ack state (status "acked" or an ack_at) is collected per agent: the
-- inbox's owner for an inbox line, the one addressee for a ledger line (a
-- ledger line to "all" does not say who acked). importer.apply writes them
-- through ch:ack; an ack the receipts would refuse (the agent is not an
-- addressee, or its name cannot name an ack file) is a warning here, and
-- its line's message is still imported.
local ac = require "agentchat"
local importer = require "agentchat.importer"
local protocols = require "agentchat.protocols"
local py = require "agentchat.pycompat"

local B = {}

local fail = require("agentchat.errors").fail

B.STATUSES = { queued = true, delivered = true, read = true, acked = true }

-- One line: the record, or nil and the problem. owner: the inbox's agent
-- (nil for the ledger).
local function record(obj, owner)
  local id, problem = importer.opt_id(obj, "id")
  if id == nil then
    return nil, "missing field 'id'"
  elseif id == false then
    return nil, problem
  end
  local ok, msg = protocols.check_request_id(id)
  if not ok then
    return nil, (msg:gsub("^request id", "id"))
  end
  local ts_us
  ts_us, problem = importer.time(obj, "ts")
  if not ts_us then
    return nil, problem
  end
  local from, to, text
  from, problem = importer.need_string(obj, "from")
  if not from then
    return nil, problem
  end
  to, problem = importer.need_string(obj, "to")
  if not to then
    return nil, problem
  end
  text, problem = importer.opt_string(obj, "message")
  if text == nil then
    return nil, "missing field 'message'"
  elseif text == false then
    return nil, problem
  end
  local role = importer.value(obj, "role")
  if role ~= nil then
    ok, msg = protocols.check_role(role)
    if not ok then
      return nil, msg
    end
  end
  local status = importer.value(obj, "status")
  if status ~= nil and not B.STATUSES[status] then
    return nil, "field 'status' must be queued, delivered, read or acked"
  end
  local ack_us
  ack_us, problem = importer.time(obj, "ack_at", true)
  if ack_us == nil then
    return nil, problem
  end
  local title = importer.title_of(text)
  local rec = {
    key = "bus:" .. id, id = id, ts_us = ts_us, from = from, to = to,
    title = title ~= "" and title or ("bus message " .. id), body = text, status = "discussion",
    role = role, fields = { bus_id = id }, acks = {},
  }
  local acker = owner
  if not owner and to ~= "all" and not to:find(",", 1, true) then
    acker = to
  end
  if acker and (status == "acked" or ack_us) then
    rec.acks[1] = { agent = acker, at_us = ack_us or nil }
  end
  return rec
end

-- Why `agent` cannot ack rec (the rules of ch:ack), or nil.
local function ack_refusal(rec, agent)
  local ok, msg = ac.check_agent(agent)
  if not ok then
    return msg
  end
  local list = ac.recipients(rec.to)
  local listed = list == nil
  for _, n in ipairs(list or {}) do
    listed = listed or n == agent
  end
  if agent == rec.from or not listed then
    return py.repr_str(agent) .. " is not an addressee (from: " .. rec.from .. ", to: " .. rec.to .. ")"
  end
  return nil
end

-- Do two copies of an id say the same message?
local function same(a, b)
  return a.ts_us == b.ts_us and a.from == b.from and a.to == b.to and a.body == b.body and a.role == b.role
end

-- Merge the acks of a copy into the first one (one per agent; a known
-- time beats none).
local function merge_acks(into, acks)
  for _, a in ipairs(acks) do
    local found
    for _, b in ipairs(into.acks) do
      if b.agent == a.agent then
        found = b
      end
    end
    if not found then
      into.acks[#into.acks + 1] = a
    elseif not found.at_us then
      found.at_us = a.at_us
    end
  end
end

--- Read a bus folder into a plan (importer.load).
function B.load(dir)
  local kinds, msg, code, exit = importer.entries(dir)
  if not kinds then
    return nil, msg, code, exit
  end
  if kinds["ledger.jsonl"] == nil and kinds.inbox == nil then
    return fail("IMPORT_INVALID_FOLDER", "no ledger.jsonl or inbox/ in " .. py.repr_str(dir)
      .. " (not a bus folder)")
  end
  local ok
  ok, msg, code, exit = importer.expect_all(kinds, { { "ledger.jsonl", "file" }, { "inbox", "dir" } })
  if not ok then
    return nil, msg, code, exit
  end
  local sources = {}
  if kinds["ledger.jsonl"] then
    sources[1] = { file = "ledger.jsonl" }
  end
  if kinds.inbox then
    local inboxes
    inboxes, msg, code, exit = importer.inboxes(dir)
    if not inboxes then
      return nil, msg, code, exit
    end
    for _, inbox in ipairs(inboxes) do
      sources[#sources + 1] = inbox
    end
  end

  ok, msg, code, exit = importer.check_total(dir, sources)
  if not ok then
    return nil, msg, code, exit
  end
  local plan = importer.new_plan("bus", dir)
  plan.init = { members = {}, topic = "" }
  local by_id = {}
  for _, src in ipairs(sources) do
    ok, msg, code, exit = importer.each_record(plan, dir, src, record, function(rec, n)
      local ack = rec.acks[1]
      local refusal = ack and ack_refusal(rec, ack.agent)
      if refusal then
        importer.note(plan, src.file, n, "ack not imported: " .. refusal)
        rec.acks = {}
      end
      local first = by_id[rec.id]
      if not first then
        rec.where = src.file .. ":" .. n
        by_id[rec.id] = rec
        importer.add(plan, rec)
      elseif same(first, rec) then
        merge_acks(first, rec.acks)
      else
        importer.warn(plan, src.file, n, "id " .. py.repr_str(rec.id) .. " differs from its copy at "
          .. first.where)
      end
    end)
    if not ok then
      return nil, msg, code, exit
    end
  end
  return plan
end

return B
