-- agentchat.api.events: the event methods of agentchat.Channel.
--
--   ch:event_post{from=, harness=, type="capability"|"status", status=,
--                 detail=, primitives={...}}   -- the event object, the post
--   ch:events{type=nil|"capability"|"status"}  -- list of event objects
--
-- Failures return nil, message, code with the EVENT_* codes of docs/format.md
-- 3.10; `ch:events` also fails on the first malformed event message.
local A = {}

function A.install(Channel, _)
  function Channel:event_post(t)
    if type(t) ~= "table" then
      error("event_post expects a table", 2)
    end
    return require("agentchat.events").post(self, {
      agent = t.from or t.agent, harness = t.harness, type = t.type, status = t.status,
      detail = t.detail, primitives = t.primitives, ts = t.ts,
    })
  end

  function Channel:events(opts)
    local list, msg, code, exit = require("agentchat.events").read(self, opts)
    if list == nil or code then
      return nil, msg, code, exit
    end
    local out = {}
    for i, e in ipairs(list) do
      out[i] = e.event
    end
    return out
  end
end

return A
