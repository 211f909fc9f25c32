-- agentchat.api.protocols: the team-protocol methods of agentchat.Channel
-- (docs/protocols.md; the logic is agentchat.protocols).
--
--   ch:request{from=, to=, type=, title=, body=, request_id=, role=,
--              timeout=900, interval=5, wait=true}   -- response, request
--   ch:await_response{as=, request_id=, timeout=900, interval=5}
--   ch:await_responses{as=, request_ids={...}, timeout=900, interval=5}
--                                                    -- {[id]=response}, missing
--   ch:respond{from=, request_id=, approve=true|false, reason=, title=}
--   ch:team{silent_after=600, now=}
local A = {}

function A.install(Channel, _)
  local function P()
    return require "agentchat.protocols"
  end

  function Channel:request(t)
    if type(t) ~= "table" then
      error("request expects a table", 2)
    end
    return P().request(self, t)
  end

  function Channel:await_response(t)
    if type(t) ~= "table" or type(t.request_id) ~= "string" then
      error("await_response expects {as = name, request_id = id}", 2)
    end
    return P().await_one(self, t)
  end

  function Channel:await_responses(t)
    if type(t) ~= "table" or type(t.request_ids) ~= "table" then
      error("await_responses expects {as = name, request_ids = {id, ...}}", 2)
    end
    return P().await(self, t)
  end

  function Channel:respond(t)
    if type(t) ~= "table" then
      error("respond expects a table", 2)
    end
    return P().respond(self, t)
  end

  function Channel:team(opts)
    if opts ~= nil and type(opts) ~= "table" then
      error("team expects nil or {silent_after = seconds}", 2)
    end
    return P().team(self, opts)
  end
end

return A
