-- agentchat.commands.typed: the typed-message options of `post` (--type,
-- --request-id, --role; docs/protocols.md). Apart from the protocol
-- commands so that a plain post loads none of the protocol code: it is
-- only required once one of the options is given.
local M = {}

--- The typed-message options of `post`. abbrev = false: `--re` must stay
--- `--reply` and `--t` keep its old ambiguity message (Python's parser
--- has neither option, so no abbreviation may reach them).
function M.post_options(p)
  p:option{ "--type", abbrev = false, metavar = "TYPE",
            help = "message type, written as extra frontmatter: message, broadcast, shutdown_request, "
              .. "shutdown_response, plan_approval_request, plan_approval_response, or another "
              .. "lower-case name (docs/protocols.md)" }
  p:option{ "--request-id", abbrev = false, metavar = "ID",
            help = "request id correlating a *_request with its *_response" }
  p:option{ "--role", abbrev = false, metavar = "ROLE", help = "role: parent, child, steer or follow_up" }
end

--- The typed fields of a post from its arguments: {type=, request_id=,
--- role=} (empty without the options), checked before anything is read
--- or written; or nil and the exit code after printing the error.
function M.post_fields(args, ctx)
  local t = { type = args.type, request_id = args.request_id, role = args.role }
  if t.type == nil and t.request_id == nil and t.role == nil then
    return t
  end
  local ok, msg, code, exit = require("agentchat.protocols").extra_fields(t)
  if not ok then
    return nil, ctx.fail(msg, code, exit)
  end
  return t
end

return M
