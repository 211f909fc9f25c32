-- agentchat.api.inbox: the cross-channel inbox, methods of agentchat.Root
-- (docs/receipts.md).
--
--   root:inbox{as=, channels=nil, peek=false, kinds=, max_messages=,
--               max_bytes=, show=}            -- {agent, messages, channels, remaining}
--   root:commit_inbox(inbox)                   -- true
--
-- One `read` per channel (same relevance rules, same batches), merged in
-- time order; committing moves each channel's cursor exactly as `read`
-- does, including channels where nothing was relevant.
local kinds = require "agentchat.kinds"
local sys = require "agentchat.sys"

local A = {}

-- When a message was posted, in seconds: its `ts`, else its file's mtime.
local function time_of(m)
  return (m.ts and sys.iso_epoch(m.ts)) or m.mtime or 0
end

-- Merge the channels' message lists (each in seq order) by time; ties keep
-- the channel order, and a channel's own messages keep their seq order
-- even when their clocks disagree.
local function merge(entries)
  local out, pos, keys = {}, {}, {}
  for i, e in ipairs(entries) do
    pos[i] = 1
    keys[i] = {}
    for j, m in ipairs(e.batch.messages) do
      keys[i][j] = time_of(m)
    end
  end
  while true do
    local best, best_key
    for i = 1, #entries do
      local k = keys[i][pos[i]]
      if k and (not best or k < best_key) then
        best, best_key = i, k
      end
    end
    if not best then
      return out
    end
    out[#out + 1] = entries[best].batch.messages[pos[best]]
    pos[best] = pos[best] + 1
  end
end

-- Keep the first messages of the merged list that fit the budgets; in each
-- channel whose messages were held back, the cursor stops just below the
-- first of them (as read does). Returns the number held back.
local function budget(inbox, entries, opts)
  if not (opts.max_messages or opts.max_bytes) then
    return 0
  end
  local n = kinds.budget(inbox.messages, opts.max_messages, opts.max_bytes, opts.size or function(m)
    return kinds.shown_bytes(m) + #m.channel + 2     -- and the "#channel" line inbox prints
  end)
  local held = #inbox.messages - n
  if held > 0 then
    inbox.next = inbox.messages[n + 1]
    local first = {}
    for i = n + 1, #inbox.messages do
      local m = inbox.messages[i]
      first[m.channel] = first[m.channel] or m.seq
      inbox.messages[i] = nil
    end
    for _, e in ipairs(entries) do
      local seq = first[e.channel]
      if seq then
        local kept = {}
        for _, m in ipairs(e.batch.messages) do
          if m.seq < seq then
            kept[#kept + 1] = m
          end
        end
        e.batch.remaining = #e.batch.messages - #kept
        e.batch.messages = kept
        e.batch.cursor = math.max(e.batch.cursor_before, seq - 1)
      end
    end
  end
  return held
end

function A.install(_, M)
  local Root = M.Root

  --- Unread messages for opts.as across channels, in time order, each with
  --- its `channel`; cursors moved as `read` moves them unless opts.peek.
  --- opts.kinds, opts.max_messages, opts.max_bytes and opts.show as for
  --- ch:read (the budgets apply to the merged list; inbox.remaining says
  --- how many were held back). Every channel's cursor lock for opts.as is
  --- held from the scan to the cursor moves, so two inboxes (or an inbox
  --- and a read) as one agent never deliver a message twice.
  function Root:inbox(opts)
    if type(opts) ~= "table" or type(opts.as) ~= "string"
        or (opts.channels ~= nil and type(opts.channels) ~= "table") then
      error("inbox expects {as = name, channels = {name, ...}, peek = false}", 2)
    end
    kinds.set(opts.kinds, "inbox")
    for _, k in ipairs({ "max_messages", "max_bytes" }) do
      local v = opts[k]
      if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
        error("inbox: " .. k .. " must be a positive integer", 2)
      end
    end
    if opts.show ~= nil and type(opts.show) ~= "function" then
      error("inbox: show must be a function", 2)
    end
    -- Listed names: checked and each taken once, before anything is read.
    local names = opts.channels
    if names then
      local seen = {}
      names = {}
      for _, name in ipairs(opts.channels) do
        if type(name) ~= "string" then
          error("inbox: channel names must be strings", 2)
        end
        if not seen[name] then
          seen[name] = true
          names[#names + 1] = name
        end
      end
    end
    local entries, msg, code, exit = M._batches(self, opts.as, names, { kinds = opts.kinds, hold = not opts.peek })
    if not entries then
      return nil, msg, code, exit
    end
    local held <close> = setmetatable(entries, { __close = M._release })
    for _, e in ipairs(entries) do
      for _, m in ipairs(e.batch.messages) do
        m.channel = e.channel
      end
    end
    local inbox = { agent = opts.as, messages = merge(entries), channels = entries }
    inbox.remaining = budget(inbox, entries, opts)
    for _, e in ipairs(entries) do
      e.cursor_before, e.cursor, e.count = e.batch.cursor_before, e.batch.cursor, #e.batch.messages
    end
    if opts.show and opts.show(inbox) == false then
      return inbox
    end
    if not opts.peek then
      for _, e in ipairs(entries) do
        local ok
        ok, msg, code, exit = e.ch._h:advance_cursor(opts.as, e.batch.cursor, e.batch.cursor_before)
        if not ok then
          return nil, msg, code, exit
        end
      end
    end
    return inbox
  end

  --- Move every channel's cursor as `read` would after showing the inbox
  --- (for an inbox taken with peek = true; root:inbox without peek moved
  --- them already).
  function Root:commit_inbox(inbox)
    if type(inbox) ~= "table" or type(inbox.channels) ~= "table" then
      error("commit_inbox expects the table root:inbox returned", 2)
    end
    for _, e in ipairs(inbox.channels) do
      local ch, msg, code, exit = self:channel(e.channel)
      if not ch then
        return nil, msg, code, exit
      end
      local ok
      ok, msg, code, exit = ch:commit(e.batch)
      ch:close()
      if not ok then
        return nil, msg, code, exit
      end
    end
    return true
  end
end

return A
