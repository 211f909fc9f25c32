-- agentchat.api.receipts: acks and read receipts, methods of agentchat.Channel
-- (docs/receipts.md; the ack store and the zero-CPU wait are the private C
-- module agentchat._receipts).
--
--   ac.recipients(to)                      -- nil (broadcast) | {name, ...}
--   ac.check_agent(name)                   -- true | nil, msg, "RECEIPT_INVALID_AGENT"
--   ch:addressees(seq | {from=, to=})      -- {name, ...}, how
--   ch:ack(seq, {as=, at=})                -- {agent, seq, channel, new, acked_at, warning}
--   ch:receipts(seq)                       -- {seq, file, ..., addressees = {...}}
--   ch:wait_receipts(seq, {state="acked"|"read", timeout=900, interval=5, agents=})
--                                          -- true | nil, msg, "RECEIPT_TIMEOUT", 2, missing
--
-- Nothing shared is rewritten: "read" is derived from the readers' cursors,
-- an ack is one file per (message, agent) written once by that agent.
local errors = require "agentchat.errors"
local py = require("agentchat.lazy")("agentchat.pycompat")
local sys = require "agentchat.sys"

local A = {}

local fail = errors.fail

local function C()
  return require "agentchat._receipts"
end

--- The recipients of a `to` value as readers see them (docs/format.md 3.3): nil
--- for a broadcast (missing, "", "all", "[]", "*", or a list with no name
--- in it such as ","), else the names.
local function recipients(to)
  to = sys.strip(to or "")
  if to == "" or to == "all" or to == "[]" or to == "*" then
    return nil
  end
  local names = sys.comma_list((to:gsub("^[%[%]]+", ""):gsub("[%[%]]+$", "")))
  return #names > 0 and names or nil
end

-- A seq argument: an integer (raises otherwise), at least 1.
local function check_seq(seq, level)
  if math.type(seq) ~= "integer" then
    error("seq must be an integer", level + 1)
  end
  if seq < 1 then
    return fail("RECEIPT_INVALID_SEQ", "seq must be a positive integer: " .. seq)
  end
  return true
end

-- The message with that seq (the first file by name if a foreign writer
-- made two), or RECEIPT_NOT_FOUND.
local function message_of(ch, seq)
  local inbox, msg, code, exit = ch._h:message(seq)
  if not inbox then
    return nil, msg, code, exit
  end
  local m = inbox.messages[1]
  if not m then
    return fail("RECEIPT_NOT_FOUND", string.format("no message #%d in '%s'", seq, ch.name))
  end
  m.file = m.name
  return m
end

-- check_seq then message_of: the message #seq of a method's argument
-- (`level` as for check_seq, counted from the method).
local function checked_message(ch, seq, level)
  local ok, msg, code, exit = check_seq(seq, level + 1)
  if not ok then
    return nil, msg, code, exit
  end
  return message_of(ch, seq)
end

-- Senders of the channel's messages in order of first appearance (the
-- agents an open channel knows).
local function senders(ch)
  local inbox, msg, code, exit = ch._h:fetch{ as = "", all = true, after = 0, stamp = false }
  if not inbox then
    return nil, msg, code, exit
  end
  local out = {}
  for _, m in ipairs(inbox.messages) do
    out[#out + 1] = m.fields.from
  end
  return out
end

-- Addressees of a message given by its fields {from=, to=}: its `to`
-- list; for a broadcast the channel's members, or in an open channel the
-- agents that ever posted there; never the sender; each name once.
-- `how` says which rule applied: "to", "members" or "senders".
local function addressees_of(ch, fields)
  local from = fields.from
  local out, seen = {}, {}
  local function add(name)
    if name and name ~= from and not seen[name] then
      seen[name] = true
      out[#out + 1] = name
    end
  end
  local list = recipients(fields.to)
  if list then
    for _, n in ipairs(list) do
      add(n)
    end
    return out, "to"
  end
  local meta = ch:meta()
  if meta and #meta.members > 0 then
    for _, n in ipairs(meta.members) do
      add(n)
    end
    return out, "members"
  end
  local names, msg, code, exit = senders(ch)
  if not names then
    return nil, msg, code, exit
  end
  for _, n in ipairs(names) do
    add(n)
  end
  return out, "senders"
end

-- Is `agent` an addressee of message m by the relevance rule of `read`
-- (docs/format.md 4): not its sender, and the message is a broadcast or lists it.
local function relevant(m, agent)
  if m.fields.from == agent then
    return false
  end
  local list = recipients(m.fields.to)
  if not list then
    return true
  end
  for _, n in ipairs(list) do
    if n == agent then
      return true
    end
  end
  return false
end

local function ack_time(bytes, mtime)
  local ok, rec = pcall(require("agentchat.json").loads, bytes)
  if ok and type(rec) == "table" and type(rec.acked_at) == "string" then
    return rec.acked_at
  end
  return mtime
end

function A.install(Channel, M)
  M.recipients = recipients
  --- Can `name` ack a message (name an ack record)? true, or the failure.
  function M.check_agent(name)
    if type(name) ~= "string" then
      error("check_agent expects a string", 2)
    end
    return C().check_agent(name)
  end

  --- Addressees of message #seq (or of {from=, to=} before posting) and
  --- the rule that gave them ("to", "members", "senders").
  function Channel:addressees(what)
    if type(what) == "table" then
      return addressees_of(self, what)
    end
    local m, msg, code, exit = checked_message(self, what, 2)
    if not m then
      return nil, msg, code, exit
    end
    return addressees_of(self, m.fields)
  end

  --- Ack message #seq as opts.as: idempotent (the first ack stays).
  --- opts.at: the ack's time (ISO 8601 with an offset; default now), for
  --- importers that carry an ack made elsewhere.
  function Channel:ack(seq, opts)
    if type(opts) ~= "table" or type(opts.as) ~= "string" then
      error("ack expects (seq, {as = name})", 2)
    end
    if opts.at ~= nil and not (type(opts.at) == "string" and sys.iso_has_offset(opts.at)) then
      return fail("RECEIPT_INVALID_TIME", "ack time must be an ISO 8601 time with an offset: "
        .. py.repr_str(tostring(opts.at)))
    end
    local ok, msg, code, exit = check_seq(seq, 2)
    if not ok then
      return nil, msg, code, exit
    end
    local rc = C()
    ok, msg, code, exit = rc.check_agent(opts.as)
    if not ok then
      return nil, msg, code, exit
    end
    local m
    m, msg, code, exit = message_of(self, seq)
    if not m then
      return nil, msg, code, exit
    end
    if not relevant(m, opts.as) then
      return fail("RECEIPT_NOT_ADDRESSEE", string.format("message #%d in '%s' is not addressed to %s (to: %s)",
        seq, self.name, py.repr_str(opts.as), m.fields.to or "all"))
    end
    local h = self._h
    local record = require("agentchat.json").dumps({ agent = opts.as, channel = self.name, seq = seq, file = m.file,
                                acked_at = opts.at or sys.now_iso(6) },
                              { indent = 2, sort_keys = true, ensure_ascii = false }) .. "\n"
    local written, warning, wcode, wexit = rc.write_ack(h, seq, opts.as, record)
    if written == nil then
      return nil, warning, wcode, wexit
    end
    local bytes, mtime = rc.read_ack(h, seq, opts.as)
    local acked_at = bytes and ack_time(bytes, mtime) or nil
    return { agent = opts.as, seq = seq, channel = self.name, new = written, acked_at = acked_at,
             warning = warning }
  end

  --- The receipt of message #seq: per addressee delivered / read / acked.
  function Channel:receipts(seq)
    local m, msg, code, exit = checked_message(self, seq, 2)
    if not m then
      return nil, msg, code, exit
    end
    local names, how
    names, how, code, exit = addressees_of(self, m.fields)
    if not names then
      return nil, how, code, exit
    end
    local rc, h = C(), self._h
    -- An agent that acked a broadcast is one of its addressees, listed or not.
    local acked
    acked, msg, code, exit = rc.acks(h, seq)
    if not acked then
      return nil, msg, code, exit
    end
    local seen = {}
    for _, n in ipairs(names) do
      seen[n] = true
    end
    if how ~= "to" then
      for _, n in ipairs(acked) do
        if not seen[n] and relevant(m, n) then
          seen[n] = true
          names[#names + 1] = n
        end
      end
    end
    local out = { channel = self.name, seq = seq, file = m.file, from = m.fields.from, to = m.fields.to,
                  title = m.fields.title, delivered_at = m.fields.ts, broadcast = recipients(m.fields.to) == nil,
                  addressees_from = how, addressees = {}, all_read = true, all_acked = true }
    for _, n in ipairs(names) do
      local r = { agent = n, delivered = true, read = false, acked = false }
      r.cursor, r.cursor_at = rc.cursor(h, n)
      if rc.check_agent(n) then
        local bytes, mtime = rc.read_ack(h, seq, n)
        if bytes then
          r.acked, r.acked_at = true, ack_time(bytes, mtime)
        end
      end
      if r.cursor >= seq then
        r.read, r.read_at = true, r.cursor_at
      elseif r.acked then
        r.read, r.read_at = true, r.acked_at       -- an ack means it was seen
      end
      r.state = r.acked and "acked" or r.read and "read" or "delivered"
      out.all_read = out.all_read and r.read
      out.all_acked = out.all_acked and r.acked
      out.addressees[#out.addressees + 1] = r
    end
    return out
  end

  --- Block (no CPU) until every addressee of #seq (or opts.agents) read or
  --- acked it.
  function Channel:wait_receipts(seq, opts)
    opts = opts or {}
    if type(opts) ~= "table" or (opts.state ~= nil and opts.state ~= "read" and opts.state ~= "acked")
        or (opts.agents ~= nil and type(opts.agents) ~= "table") then
      error("wait_receipts expects (seq, {state = \"read\"|\"acked\", timeout=, interval=, agents=})", 2)
    end
    local m, msg, code, exit = checked_message(self, seq, 2)
    if not m then
      return nil, msg, code, exit
    end
    local agents = opts.agents
    if not agents then
      agents, msg, code, exit = addressees_of(self, m.fields)
      if not agents then
        return nil, msg, code, exit
      end
    end
    if #agents == 0 then
      return fail("RECEIPT_NO_ADDRESSEES", string.format(
        "message #%d in '%s' has no addressees to wait for (an open channel nobody else posted to: "
        .. "name them with --to, or give the channel --members)", seq, self.name))
    end
    local state = opts.state or "acked"
    local timeout = opts.timeout or 900.0
    local done, why, missing
    done, why, code, exit, missing = C().wait(self._h, seq, agents, state, timeout, opts.interval or 5.0)
    if done then
      return true
    end
    if code ~= "RECEIPT_TIMEOUT" then
      return nil, why, code, exit
    end
    return nil, string.format("timed out after %ss: #%d in '%s' not %s by %s", py.float_repr(timeout), seq,
      self.name, state, table.concat(missing, ", ")), code, exit, missing
  end
end

return A
