-- agentchat.api.trim: ch:trim, retention of a long-running channel
-- (docs/etcd.md "Retention"; the rules are the store's, store.h
-- ac_chan_msg_trim).
--
--   ch:trim(through [, {dry_run = true}])
--       -- {messages, acks, newest}: the messages 1..through and their acks
--          removed, the seq counter kept (no seq is ever reused); the newest
--          message always stays (TRIM_KEEPS_NEWEST). dry_run: nothing is
--          removed and acks is 0 (counting them costs what removing does).
--          Archive first: `agent-chat trim` exports the channel, then trims.
local A = {}

function A.install(Channel, _)
  function Channel:trim(through, opts)
    if math.type(through) ~= "integer" or through < 1 then
      error("trim expects a seq >= 1", 2)
    end
    if opts ~= nil and type(opts) ~= "table" then
      error("trim expects ({dry_run = bool}) as its options", 2)
    end
    local messages, acks, newest, exit = self._h:trim(through, opts and opts.dry_run)
    if not messages then
      return nil, acks, newest, exit     -- message, code, exit
    end
    return { messages = messages, acks = acks, newest = newest }
  end
end

return A
