-- agentchat.commands.protocols: the team-protocol commands
-- (docs/protocols.md): `request`, `await`, `respond` and `team`. The
-- typed-message options of `post` are in commands/typed.lua.
--
-- Exit codes of request and await (docs/format.md 2.5 meanings): 0 approved,
-- 3 rejected (or any response that does not approve, like a lost claim),
-- 2 timed out (like `wait`), 1 errors, 2 usage errors, 130 Ctrl-C.
local open = require "agentchat.commands.open"
local json = require "agentchat.json"
local protocols = require "agentchat.protocols"
local py = require("agentchat.lazy")("agentchat.pycompat")
local sys = require "agentchat.sys"

local M = {}

local RULE = string.rep("=", 70)
local PRETTY = { indent = 2, sort_keys = true, ensure_ascii = false }

M.EXIT_APPROVED, M.EXIT_REJECTED, M.EXIT_TIMEOUT = 0, 3, 2

-- ------------------------------------------------------------ helpers

local text_ok, interval_of = open.text_ok, open.interval

-- --body wins (even ''), then --body-file; no body is an empty one.
local function read_body(args, ctx)
  if args.body then
    return args.body
  end
  if args.body_file then
    return open.body_file(args, ctx)
  end
  return ""
end

local function show_response(ctx, r)
  ctx.out(RULE .. "\n" .. sys.rstrip(r.message.text) .. "\n\n")
end

local function exit_of(r)
  return r.approved and M.EXIT_APPROVED or M.EXIT_REJECTED
end

-- The JSON object of a response (request and await --json).
local function response_json(req, r)
  return {
    request_id = req.request_id, request_seq = req.seq, type = req.type, to = req.to,
    answered = r ~= nil,
    decision = r and r.decision or nil, approved = r and r.approved or false,
    reason = r and r.reason or nil, response_seq = r and r.seq or nil,
    response_file = r and r.file or nil, from = r and r.from or nil,
  }
end

-- ------------------------------------------------------------ commands

local function cmd_request(args, ctx)
  for _, f in ipairs({ { args.from, "--from" }, { args.to, "--to" }, { args.title, "--title" } }) do
    if not text_ok(ctx, f[1], f[2]) then
      return 1
    end
  end
  local ch <close>, rc = open.channel(args, ctx)
  if not ch then
    return rc
  end
  local body, brc = read_body(args, ctx)
  if not body then
    return brc
  end
  local interval, irc = interval_of(args, ctx)
  if not interval then
    return irc
  end
  -- Post first (wait = false) so the request line is out before the wait.
  local req, msg, code, exit = protocols.request(ch, {
    from = args.from, to = args.to, type = args.type, title = args.title, body = body,
    request_id = args.request_id, role = args.role, wait = false,
  })
  if not req then
    return ctx.fail(msg, code, exit)
  end
  if req.warning then
    ctx.err("agent-chat: warning: " .. req.warning .. "\n")
  end
  if not args.json then
    ctx.out(string.format("request %s posted #%d -> %s/%s\n", req.request_id, req.seq, args.channel, req.file))
    if not ctx.flush() then
      return 1
    end
  end
  if args.no_wait then
    if args.json then
      ctx.out(json.dumps(response_json(req, nil), PRETTY) .. "\n")
    end
    return 0
  end
  local got, missing
  got, missing, code, exit = protocols.await(ch, { as = args.from, request_id = req.request_id,
                                                   timeout = args.timeout, interval = interval })
  if not got then
    return ctx.fail(missing, code, exit)
  end
  local r = got[req.request_id]
  if args.json then
    ctx.out(json.dumps(response_json(req, r), PRETTY) .. "\n")
  elseif r then
    show_response(ctx, r)
  end
  if not r then
    ctx.flush()
    return ctx.fail("no response to request " .. req.request_id .. " from " .. req.to .. " in '"
      .. args.channel .. "' after " .. py.float_repr(args.timeout) .. "s", "ETIMEDOUT", M.EXIT_TIMEOUT)
  end
  return exit_of(r)
end

local function cmd_await(args, ctx)
  local ch <close>, rc = open.channel(args, ctx)
  if not ch then
    return rc
  end
  local interval, irc = interval_of(args, ctx)
  if not interval then
    return irc
  end
  local got, missing, code, exit = protocols.await(ch, { as = args.as, request_ids = args.request,
                                                         timeout = args.timeout, interval = interval })
  if not got then
    return ctx.fail(missing, code, exit)
  end
  local requests = code   -- await's third value: the request records
  local rc_all = M.EXIT_APPROVED
  local list, shown = {}, {}
  for _, req in ipairs(requests) do
    local r = got[req.request_id]
    if not shown[req.request_id] then
      shown[req.request_id] = true
      if args.json then
        list[#list + 1] = response_json(req, r)
      elseif r then
        show_response(ctx, r)
      end
    end
    if r and not r.approved then
      rc_all = M.EXIT_REJECTED
    end
  end
  if args.json then
    ctx.out(json.dumps(json.array(list), PRETTY) .. "\n")
  end
  if #missing > 0 then
    ctx.flush()
    return ctx.fail("no response to request " .. table.concat(missing, ", ") .. " in '" .. args.channel
      .. "' after " .. py.float_repr(args.timeout) .. "s", "ETIMEDOUT", M.EXIT_TIMEOUT)
  end
  return rc_all
end

local function cmd_respond(args, ctx)
  if args.approve == args.reject then
    local prog = "agent-chat respond"
    local message = args.approve and "argument --reject: not allowed with argument --approve"
      or "one of the arguments --approve --reject is required"
    ctx.err(require("agentchat.cli").usage_line{ prog = prog, message = message })
    return 2
  end
  for _, f in ipairs({ { args.from, "--from" }, { args.reason, "--reason" }, { args.title, "--title" } }) do
    if not text_ok(ctx, f[1], f[2]) then
      return 1
    end
  end
  local ch <close>, rc = open.channel(args, ctx)
  if not ch then
    return rc
  end
  local res, msg, code, exit = protocols.respond(ch, { from = args.from, request_id = args.request,
                                                       approve = args.approve, reason = args.reason,
                                                       title = args.title })
  if not res then
    return ctx.fail(msg, code, exit)
  end
  open.posted(ctx, args.channel, res)
  return 0
end

--- An age in seconds as people read it: 42s, 5m, 3h, 2d.
function M.age(s)
  if s == nil then
    return "-"
  elseif s < 60 then
    return string.format("%ds", s)
  elseif s < 3600 then
    return string.format("%dm", s // 60)
  elseif s < 86400 then
    return string.format("%dh", s // 3600)
  end
  return string.format("%dd", s // 86400)
end

--- Rows of cells as aligned columns (two spaces apart), one line each.
local function columns(rows)
  local widths = {}
  for _, row in ipairs(rows) do
    for i, cell in ipairs(row) do
      widths[i] = math.max(widths[i] or 0, py.ulen(cell))
    end
  end
  local out = {}
  for _, row in ipairs(rows) do
    local cells = {}
    for i, cell in ipairs(row) do
      cells[i] = i < #row and (cell .. string.rep(" ", widths[i] - py.ulen(cell))) or cell
    end
    out[#out + 1] = sys.rstrip(table.concat(cells, "  ")) .. "\n"
  end
  return table.concat(out)
end

local function cmd_team(args, ctx)
  local ch <close>, rc = open.channel(args, ctx)
  if not ch then
    return rc
  end
  local silent_after = args.silent_after
  if silent_after ~= silent_after or silent_after < 0 or silent_after == math.huge then
    return ctx.fail("--silent-after must be a finite number of seconds >= 0", "USAGE", 2)
  end
  local team, msg, code, exit = protocols.team(ch, { silent_after = silent_after })
  if not team then
    return ctx.fail(msg, code, exit)
  end
  if args.json then
    for _, m in ipairs(team.members) do
      m.status_keys = m.status_keys and json.array(m.status_keys)
    end
    team.members = json.array(team.members)
    team.silent = json.array(team.silent)
    ctx.out(json.dumps(team, PRETTY) .. "\n")
    return 0
  end
  if #team.members == 0 then
    ctx.out("(no members or posters in '" .. args.channel .. "')\n")
    return 0
  end
  local rows = { { "NAME", "LIFECYCLE", "STATUS", "SINCE", "LAST SEEN", "DETAIL" } }
  for _, m in ipairs(team.members) do
    rows[#rows + 1] = { m.name, m.lifecycle, m.status or "-", M.age(m.status_age),
                        m.last_seq and M.age(m.last_seen_age) or "never",
                        (m.silent and "(silent) " or "") .. (m.detail or "") }
  end
  ctx.out(columns(rows))
  ctx.out(string.format("silent for more than %ss: %s\n", py.float_repr(silent_after),
    #team.silent > 0 and table.concat(team.silent, ", ") or "(none)"))
  -- Status keys (docs/status-keys.md), when anyone set one.
  local keyrows = { { "  NAME", "KEY", "VALUE", "AGE", "STATE" } }
  for _, m in ipairs(team.members) do
    for _, k in ipairs(m.status_keys or {}) do
      keyrows[#keyrows + 1] = { "  " .. m.name, k.key, k.value, M.age(k.age), k.expired and "expired" or "live" }
    end
  end
  if #keyrows > 1 then
    ctx.out("status keys:\n" .. columns(keyrows))
  end
  return 0
end

M.columns = columns

-- ------------------------------------------------------------ grammar

local function channel_arg(p)
  p:positional{ "channel", help = "channel name" }
end

local function wait_options(p)
  p:option{ "--timeout", type = "float", default = 900.0,
            help = "seconds to wait for the response (default: 900); exit 2 when it passes" }
  p:option{ "--interval", type = "float",
            help = "rescan period in seconds where change notification is unavailable (default: 5)" }
end

function M.register(sub)
  sub:parser("request", { description = "Post a typed request to one agent and wait (no CPU) for the "
      .. "correlated response, then print it. Exit 0 approved, 3 rejected, 2 timed out.",
    build = function(p)
      channel_arg(p)
      p:option{ "--from", required = true, help = "requester (agent name)" }
      p:option{ "--to", required = true, help = "the one agent that answers" }
      p:option{ "--type", required = true, metavar = "TYPE",
                help = "shutdown_request, plan_approval_request or another <name>_request" }
      p:option{ "--title", help = "message title (default: the type)" }
      p:option{ "--body", help = "message body text (default: empty)" }
      p:option{ "--body-file", help = "read the body from this file" }
      p:option{ "--request-id", metavar = "ID", help = "request id (default: a new uuid4)" }
      p:option{ "--role", metavar = "ROLE", help = "role: parent, child, steer or follow_up" }
      wait_options(p)
      p:option{ "--no-wait", action = "store_true",
                help = "post and print the request id only; collect the response later with 'await'" }
      p:option{ "--json", action = "store_true", help = "print the outcome as JSON (indent 2, sorted keys)" }
      p:set_defaults{ handler = cmd_request }
    end })

  sub:parser("await", { description = "Wait (no CPU) for the responses to requests posted earlier "
      .. "(request --no-wait); a response already there is printed at once. Exit 0 all approved, "
      .. "3 one rejected, 2 one timed out.",
    build = function(p)
      channel_arg(p)
      p:option{ "--as", dest = "as", required = true, help = "the requester (agent name)" }
      p:option{ "--request", action = "append", required = true, metavar = "ID",
                help = "request id (repeatable)" }
      wait_options(p)
      p:option{ "--json", action = "store_true", help = "print the outcomes as a JSON list" }
      p:set_defaults{ handler = cmd_await }
    end })

  sub:parser("respond", { description = "Answer a request addressed to you: post the matching *_response "
      .. "with status approved or rejected and the reason as body.",
    build = function(p)
      channel_arg(p)
      p:option{ "--from", required = true, help = "responder (the agent the request went to)" }
      p:option{ "--request", required = true, metavar = "ID", help = "request id" }
      p:option{ "--approve", action = "store_true", help = "approve the request" }
      p:option{ "--reject", action = "store_true", help = "reject the request" }
      p:option{ "--reason", help = "why (the response body)" }
      p:option{ "--title", help = "message title (default: '<type>: <decision>')" }
      p:set_defaults{ handler = cmd_respond }
    end })

  sub:parser("team", { description = "List the channel's members (from _meta.json, then everyone seen) "
      .. "with their latest status event and its age, their lifecycle (working, idle, shutdown) and "
      .. "who has been silent too long.",
    build = function(p)
      channel_arg(p)
      p:option{ "--silent-after", type = "float", default = 600.0, metavar = "S",
                help = "seconds without a message after which a member counts as silent (default: 600)" }
      p:option{ "--json", action = "store_true", help = "print JSON (indent 2, sorted keys)" }
      p:set_defaults{ handler = cmd_team }
    end })
end

return M
