-- agentchat.api.inbox: the cross-channel inbox, methods of agentchat.Root
-- (docs/receipts.md).
--
--   root:inbox{as=, channels=nil, peek=false}  -- {agent, messages, channels}
--   root:commit_inbox(inbox)                   -- true
--
-- One `read` per channel (same relevance rules, same batches), merged in
-- time order; committing moves each channel's cursor exactly as `read`
-- does, including channels where nothing was relevant.
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

function A.install(_, M)
  local Root = M.Root

  --- Unread messages for opts.as across channels, in time order, each with
  --- its `channel`; cursors moved as `read` moves them unless opts.peek.
  function Root:inbox(opts)
    if type(opts) ~= "table" or type(opts.as) ~= "string"
        or (opts.channels ~= nil and type(opts.channels) ~= "table") then
      error("inbox expects {as = name, channels = {name, ...}, peek = false}", 2)
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
    local entries, msg, code, exit = M._batches(self, opts.as, names)
    if not entries then
      return nil, msg, code, exit
    end
    for _, e in ipairs(entries) do
      for _, m in ipairs(e.batch.messages) do
        m.channel = e.channel
      end
      e.cursor_before, e.cursor, e.count = e.batch.cursor_before, e.batch.cursor, #e.batch.messages
    end
    local inbox = { agent = opts.as, messages = merge(entries), channels = entries }
    return M._committed(self, self.commit_inbox, inbox, opts.peek)
  end

  --- Move every channel's cursor as `read` would after showing the inbox.
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
