-- examples/watch-auto-responder.lua: acknowledge every request of a type.
--
--   agent-chat watch dev --as reviewer --script examples/watch-auto-responder.lua
--   agent-chat watch dev --as reviewer --script examples/watch-auto-responder.lua \
--     --arg proposal --arg plan-approval        # other request types
--
-- A message is a request of type T (default: `proposal` and
-- `review-request`) when its status is T, or its title starts with "T:"
-- or "[T]" (any case), the way `state` recognises decisions:
--   agent-chat post dev --from alice --title "Proposal: split the parser" --body ...
--   agent-chat post dev --from alice --status review-request --title "PR 12" --body ...
-- Each one gets a reply to its sender (reply_to = its seq, status `ack`),
-- so the sender's `wait` wakes up with the answer.
--
-- Delivery is at least once: after a crash the message being answered can
-- come again. Before answering, the script looks for its own earlier reply
-- to that seq among the last messages, so a request is acknowledged once.

local kinds = { ... }
if #kinds == 0 then
  kinds = { "proposal", "review-request" }
end

local RECENT = 200      -- how far back to look for an earlier reply

local function trim_lower(s)
  return (s or ""):match("^%s*(.-)%s*$"):lower()
end

-- The request type a message carries, or nil.
local function request_kind(msg)
  local status, title = trim_lower(msg.status), trim_lower(msg.title)
  for _, k in ipairs(kinds) do
    if status == k or title:sub(1, #k + 1) == k .. ":" or title:sub(1, #k + 2) == "[" .. k .. "]" then
      return k
    end
  end
  return nil
end

local function already_answered(ctx, msg)
  local recent = assert(ctx.channel:peek(RECENT))
  for _, m in ipairs(recent.messages) do
    if m.from == ctx.name and tonumber(m.reply_to) == msg.seq then
      return true
    end
  end
  return false
end

return function(msg, ctx)
  local kind = request_kind(msg)
  if not kind or already_answered(ctx, msg) then
    return
  end
  ctx.reply(msg, {
    status = "ack",
    title = "ack: " .. (msg.title or ""),
    body = string.format("Received your %s #%d (%s). It is queued; %s will follow up here.\n",
      kind, msg.seq, msg.title or "", ctx.name),
  })
end
