-- agentchat.changes: a task or lock change, read from its audit message.
--
--   local changes = require "agentchat.changes"
--   local kind, change = changes.of(msg)   -- "task" | "lock" | nil
--
-- Every task, lease and path-lock mutation posts an audit message to `all`
-- (docs/format.md 3.9) with `status: <event>` and a JSON body whose `event` is the
-- same name. That stream is the change feed: it is ordered by seq, it
-- survives restarts through the reader's cursor, and the Python tool writes
-- the same messages. What it does not contain is a lease or lock that
-- simply runs out (expiry is a moment, not a write): watch scripts that
-- care use a periodic `tick` and ch:tasks() / ch:locks().
--
-- A change is the audit body with JSON nulls as nil, plus
--   kind    "task" or "lock"
--   event   the event name (task.created, lease.claimed, path.locked, ...)
--   actor   who made the change (the message's `from`)
--   seq     the message's seq
--   message the message itself (agentchat message table)
--   data    the decoded body as is (nulls are json.null)
local json = require "agentchat.json"

local M = {}

-- Event name prefixes of each kind (docs/format.md 3.9 event names).
M.PREFIXES = {
  { "task.", "task" },
  { "lease.", "task" },
  { "path.", "lock" },
}

--- The kind of change a status names ("task", "lock") or nil.
function M.kind_of(status)
  if type(status) ~= "string" then
    return nil
  end
  for _, p in ipairs(M.PREFIXES) do
    if status:sub(1, #p[1]) == p[1] then
      return p[2]
    end
  end
  return nil
end

--- kind, change for an audit message; nil for any other message. A
--- message that only looks like one (status right, body not an audit
--- object naming the same event) stays an ordinary message.
function M.of(msg)
  local kind = M.kind_of(msg.status)
  if not kind then
    return nil
  end
  local body = json.loads(msg.body or "")
  if type(body) ~= "table" or json.is_array(body) or body.event ~= msg.status then
    return nil
  end
  local change = {}
  for k, v in pairs(body) do
    if v ~= json.null then
      change[k] = v
    end
  end
  change.kind = kind
  change.event = body.event
  change.actor = msg.from
  change.seq = msg.seq
  change.message = msg
  change.data = body
  return kind, change
end

return M
