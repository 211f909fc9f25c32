-- agentchat.kinds: what a message is, for the filters of read, wait,
-- inbox, peek and the hooks (--kind, docs/format.md "Message kinds"), and
-- the budgets of a catch-up read (--max-messages, --max-bytes).
--
--   local kinds = require "agentchat.kinds"
--   kinds.of(m)                 -- "message" | "event" | "audit"
--   kinds.set(list, what)       -- {message = true, ...} or nil when list is nil;
--                               -- raises on a name that is not a kind
--   kinds.keep(messages, set)   -- the messages of those kinds, in order
--   kinds.budget(messages, max_messages, max_bytes, size)
--                               -- how many of them fit (a prefix)
--   kinds.shown_text(m)         -- a message's text as `read` prints it
--   kinds.shown_bytes(m)        -- the bytes `read` prints for a message
--   kinds.PRINTED               -- how `read` frames each message: {before,
--                               -- after, unreadable(name, why)}
--   kinds.print(messages)       -- what `read` prints for these messages
--
-- The kind comes from the frontmatter `status`, the field every tool
-- writes: events are `event.<type>` and the status keys' `status.set`
-- (docs/status-keys.md), audit messages (the record of every
-- task, lease, path-lock and compact mutation, and of a message `watch
-- --on-error skip` set aside) are `task.*`, `lease.*`, `path.*`, `state.*`
-- and `watch.*`; everything else, including typed requests and
-- hand-written files, is a message.
local sys = require "agentchat.sys"

local M = {}

M.KINDS = { "message", "event", "audit" }

-- By the status's first word and its dot.
local PREFIXES = { ["event."] = "event", ["status."] = "event", ["task."] = "audit", ["lease."] = "audit",
                   ["path."] = "audit", ["state."] = "audit", ["watch."] = "audit" }

--- The kind of a message with this status (nil or a string).
function M.of_status(status)
  local head = type(status) == "string" and status:match("^[^.]*%.")
  return head and PREFIXES[head] or "message"
end

--- The kind of a message (an API message table, or a C record with fields).
function M.of(m)
  local status = m.status
  if status == nil and m.fields then
    status = m.fields.status
  end
  return M.of_status(status)
end

local VALID = { message = true, event = true, audit = true }

--- The set of kinds a list names; nil for nil (every kind). A name that is
--- not a kind raises (`what` names the caller in the message).
function M.set(list, what)
  if list == nil then
    return nil
  end
  if type(list) == "string" then
    list = { list }
  end
  if type(list) ~= "table" then
    error((what or "kinds") .. ": kinds must be a list of names", 3)
  end
  local set = {}
  for _, k in ipairs(list) do
    if not VALID[k] then
      error((what or "kinds") .. ": unknown kind " .. string.format("%q", tostring(k))
        .. " (message, event or audit)", 3)
    end
    set[k] = true
  end
  return set
end

--- The messages whose kind is in `set` (all of them when set is nil).
function M.keep(messages, set)
  if not set then
    return messages
  end
  local out = {}
  for _, m in ipairs(messages) do
    if set[M.of(m)] then
      out[#out + 1] = m
    end
  end
  return out
end

-- The one-line notice the Python tool prints in place of a file that is
-- not UTF-8 (its decode error names the first bad bytes).
local function unreadable(name, why)
  return "(could not read message " .. name .. ": " .. why .. ")"
end

--- The text of a message as read, wait, peek and inbox print it
--- (right-stripped), or the notice for a file that is not UTF-8.
function M.shown_text(m)
  if m.decode_error then
    return unreadable(m.name, m.decode_error)
  end
  return m.shown or sys.rstrip(m.text)     -- m.shown: a message fetched with `shown`
end

--- How read, wait and peek frame each message: a rule line before its
--- text as shown, a blank line after (the fetch option `printed`, which
--- the C binding repeats for every message).
M.RULE = string.rep("=", 70)
M.PRINTED = { before = M.RULE .. "\n", after = "\n\n", unreadable = unreadable }

--- The bytes `read` prints for a message (what --max-bytes counts).
function M.shown_bytes(m)
  return #M.PRINTED.before + #M.shown_text(m) + #M.PRINTED.after
end

--- What read prints for `messages`, framed as PRINTED says.
function M.print(messages)
  local texts = {}
  for i, m in ipairs(messages) do
    texts[i] = M.shown_text(m)
  end
  if #texts == 0 then
    return ""
  end
  local p = M.PRINTED
  return p.before .. table.concat(texts, p.after .. p.before) .. p.after
end

--- How many of `messages`, from the first, fit both budgets (nil: no
--- limit); size(m) is what one message costs in bytes.
function M.budget(messages, max_messages, max_bytes, size)
  local n, bytes = 0, 0
  for _, m in ipairs(messages) do
    if max_messages and n >= max_messages then
      break
    end
    if max_bytes then
      bytes = bytes + size(m)
      if bytes > max_bytes then
        break
      end
    end
    n = n + 1
  end
  return n
end

return M
