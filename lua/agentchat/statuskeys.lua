-- agentchat.statuskeys: latest-wins status keys (docs/status-keys.md).
--
-- A status key is one current value per (agent, key). Each set is an
-- ordinary broadcast message from the agent, so the history stays in the
-- channel: `status: status.set`, `title: status:<key>`, `to: all`, and a
-- body of compact JSON {agent, key, value, ts[, ttl]} (sorted keys). The
-- status is not `event.<type>`, so the Python tool's `event read`, which
-- validates every `event.*` message, never sees it; its readers show it as
-- a message. The current value is the one of the highest seq (the
-- channel's order: two concurrent sets leave the later post), expired once
-- ttl seconds passed since its ts.
--
--   statuskeys.post(ch, {agent=, key=, value=, ttl=})  -- entry, post result | nil, msg, code, exit
--   statuskeys.entry(m)              -- the entry of a status.set message, or nil
--   statuskeys.current(messages, {key=, agent=, now=})  -- {entry, ...} sorted by agent, key
--   statuskeys.read(ch, {key=, agent=, now=})   -- the same from the channel
--   statuskeys.since(ch, after)      -- the entries above seq `after`, in seq order, and
--                                       the highest seq seen
local json = require "agentchat.json"
local sys = require "agentchat.sys"

local M = {}

M.STATUS = "status.set"
M.MAX_KEY = 64
M.MAX_VALUE = 1024

local EXIT = 2

local function fail(code, message)
  return nil, message, code, EXIT
end

local function has_control(s)
  return s:find("[%z\1-\31\127]") ~= nil or s:find("\xc2[\x80-\x9f]") ~= nil
end

--- A key: letters, digits and . _ - (not first), at most MAX_KEY bytes.
function M.check_key(key)
  if type(key) ~= "string" or key == "" or #key > M.MAX_KEY or not key:find("^[%w][%w._-]*$") then
    return fail("STATUS_INVALID_KEY", string.format(
      "invalid status key %s: 1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit",
      type(key) == "string" and require("agentchat.pycompat").repr_str(key) or tostring(key), M.MAX_KEY))
  end
  return true
end

--- A value: clean UTF-8 text on one line, at most MAX_VALUE bytes.
function M.check_value(value)
  if type(value) ~= "string" or #value > M.MAX_VALUE or not sys.utf8_valid(value) or has_control(value) then
    return fail("STATUS_INVALID_VALUE", string.format(
      "invalid status value: one line of UTF-8 text without control characters, at most %d bytes", M.MAX_VALUE))
  end
  return true
end

--- A ttl: nil (none), or a finite number of seconds > 0.
function M.check_ttl(ttl)
  if ttl ~= nil and (type(ttl) ~= "number" or ttl ~= ttl or ttl <= 0 or ttl == math.huge) then
    return fail("STATUS_INVALID_TTL", "invalid ttl: a number of seconds greater than 0")
  end
  return true
end

--- The entry of a message (an API message), or nil when it is not a
--- well-formed status set.
function M.entry(m)
  if m.fields.status ~= M.STATUS then
    return nil
  end
  local obj = json.loads(m.body or "")
  if type(obj) ~= "table" or type(obj.agent) ~= "string" or not M.check_key(obj.key)
      or not M.check_value(obj.value) or not M.check_ttl(obj.ttl) or type(obj.ts) ~= "string" then
    return nil
  end
  local at = sys.iso_epoch(obj.ts)
  if not at then
    return nil
  end
  return { agent = obj.agent, key = obj.key, value = obj.value, ttl = obj.ttl, set_at = obj.ts,
           set_epoch = at, seq = m.seq }
end

-- Age and expiry of an entry at `now` (seconds since 1970).
local function aged(e, now)
  e.age = math.max(0, math.floor(now - e.set_epoch))
  e.expired = e.ttl ~= nil and now - e.set_epoch > e.ttl
  return e
end

local function matches(e, opts)
  return (opts.key == nil or e.key == opts.key) and (opts.agent == nil or e.agent == opts.agent)
end

--- The current entries among `messages` (in seq order): the last set of
--- each (agent, key), aged at opts.now (default now), sorted by agent
--- then key.
function M.current(messages, opts)
  opts = opts or {}
  local now = opts.now or sys.time()
  local latest, order = {}, {}
  for _, m in ipairs(messages) do
    local e = M.entry(m)
    if e and matches(e, opts) then
      local id = e.agent .. "\0" .. e.key
      if not latest[id] then
        order[#order + 1] = id
      end
      if not latest[id] or latest[id].seq < e.seq then
        latest[id] = e
      end
    end
  end
  local out = {}
  for _, id in ipairs(order) do
    out[#out + 1] = aged(latest[id], now)
  end
  table.sort(out, function(a, b)
    if a.agent ~= b.agent then
      return a.agent < b.agent
    end
    return a.key < b.key
  end)
  return out
end

--- The current entries of channel `ch` (see current).
function M.read(ch, opts)
  local batch, msg, code, exit = ch:peek(math.maxinteger)
  if not batch then
    return nil, msg, code, exit
  end
  return M.current(batch.messages, opts)
end

--- The status sets above seq `after` in seq order (aged now), and the
--- highest seq the scan saw (where the next call starts).
function M.since(ch, after)
  local batch, msg, code, exit = ch:fetch{ as = "", all = true, after = after }
  if not batch then
    return nil, msg, code, exit
  end
  local out, now = {}, sys.time()
  for _, m in ipairs(batch.messages) do
    local e = M.entry(m)
    if e then
      out[#out + 1] = aged(e, now)
    end
  end
  return out, math.max(after, batch.cursor)
end

--- Set key to value for spec.agent on channel ch: one post. Returns the
--- entry and the post's result.
function M.post(ch, spec)
  local ok, msg, code, exit = M.check_key(spec.key)
  if ok then
    ok, msg, code, exit = M.check_value(spec.value)
  end
  if ok then
    ok, msg, code, exit = M.check_ttl(spec.ttl)
  end
  if ok and (type(spec.agent) ~= "string" or sys.strip(spec.agent) == "" or has_control(spec.agent)) then
    ok, msg, code, exit = fail("STATUS_INVALID_AGENT", "invalid agent name for a status key")
  end
  if not ok then
    return nil, msg, code, exit
  end
  local obj = { agent = spec.agent, key = spec.key, value = spec.value, ttl = spec.ttl,
                ts = spec.ts or sys.now_iso(6) }
  local body = json.dumps(obj, { sort_keys = true, ensure_ascii = false, separators = { ",", ":" } })
  local res
  res, msg, code, exit = ch:post{ from = spec.agent, to = "all", title = "status:" .. spec.key,
                                  status = M.STATUS, body = body }
  if not res then
    return nil, msg, code, exit
  end
  local e = { agent = obj.agent, key = obj.key, value = obj.value, ttl = obj.ttl, set_at = obj.ts,
              set_epoch = sys.iso_epoch(obj.ts), seq = res.seq }
  return aged(e, sys.time()), res
end

return M
