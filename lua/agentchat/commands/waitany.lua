-- agentchat.commands.waitany: `wait --for COND ...` and `wait --resume TOKEN`
-- (docs/wait-any.md), the composite form of `wait` (commands/messages.lua
-- hands it over). Exit 0 when a condition held, 2 on timeout (after
-- printing `resume: TOKEN`) and for a malformed condition or token
-- (WAIT_INVALID_CONDITION, WAIT_INVALID_RESUME), 1 other errors, 130 on
-- Ctrl-C.
local open = require "agentchat.commands.open"
local json = require "agentchat.json"
local py = require("agentchat.lazy")("agentchat.pycompat")

local M = {}

local PRETTY = { indent = 2, sort_keys = true, ensure_ascii = false }

-- A message as --json shows it.
local function message_json(m)
  return { seq = m.seq, file = m.file, from = m.from, to = m.to, title = m.title, status = m.status,
           ts = m.ts, body = require("agentchat").body_of(m.text or "") }
end

local function result_json(r)
  local out = { woke = true, condition = r.condition, index = r.index, kind = r.kind, channel = r.channel }
  if r.kind == "message" then
    local list = {}
    for i, m in ipairs(r.messages) do
      list[i] = message_json(m)
    end
    out.messages = json.array(list)
  elseif r.kind == "task" then
    out.task = { id = r.id, status = r.status, owner = r.owner, title = r.title }
  elseif r.kind == "lock" then
    out.path = r.path
  else
    out.seq, out.state, out.agents = r.seq, r.state, json.array(r.agents)
  end
  return out
end

local function result_text(r)
  local head = "woke: " .. r.condition .. "\n"
  if r.kind == "message" then
    return head .. require("agentchat.kinds").print(r.messages)
  elseif r.kind == "task" then
    return head .. string.format("task %s in '%s' is %s%s\n", r.id, r.channel, r.status,
      r.owner and (" (owner: " .. r.owner .. ")") or "")
  elseif r.kind == "lock" then
    return head .. string.format("lock: %s in '%s' is free\n", r.path, r.channel)
  end
  return head .. string.format("receipt: #%d in '%s' %s by %s\n", r.seq, r.channel, r.state,
    #r.agents > 0 and table.concat(r.agents, ", ") or "(nobody)")
end

--- channel and --as are optional in wait's grammar only for --resume (its
--- token names both): without it they are required, with Python's usage
--- error. true, or false once that error is out.
function M.required(args, ctx)
  local missing = {}
  if args.channel == nil then
    missing[#missing + 1] = "channel"
  end
  if args.as == nil then
    missing[#missing + 1] = "--as"
  end
  if #missing == 0 then
    return true
  end
  ctx.err(require("agentchat.cli").usage_line{ prog = "agent-chat wait",
    message = "the following arguments are required: " .. table.concat(missing, ", ") })
  return false
end

function M.run(args, ctx)
  local ac = require "agentchat"
  local channel, as = args.channel, args.as
  if args.resume then
    if args.for_ then
      return ctx.fail("give either --for conditions or --resume TOKEN, not both", "WAIT_INVALID_RESUME", 2)
    end
    local info, msg, code, exit = require("agentchat.api.waitany").token_info(args.resume)
    if not info then
      return ctx.fail(msg, code, exit)
    end
    if (channel and channel ~= info.channel) or (as and as ~= info.as) then
      return ctx.fail(string.format("the token is for channel '%s' as %s", info.channel, info.as),
        "WAIT_INVALID_RESUME", 2)
    end
    channel, as = info.channel, info.as
  elseif not M.required(args, ctx) then
    return 2
  end
  local view = { channel = channel, as = as, root = args.root }
  if not open.agent(ctx, view, "as", "--as") then
    return 2
  end
  -- Conditions are checked before the channel is opened: a malformed one
  -- is the same error wherever it would wait.
  for _, text in ipairs(args.for_ or {}) do
    local ok, msg, code, exit = ac.parse_condition(text)
    if not ok then
      return ctx.fail(msg, code, exit)
    end
  end
  local ch <close>, interval = open.waiting(args, ctx, view)
  if not ch then
    return interval
  end
  local out_ok = true
  local result, msg, code, exit, token = ch:wait_any{
    as = not args.resume and as or nil, conditions = args.for_, resume = args.resume,
    timeout = args.timeout, interval = interval, kinds = args.kind,
    show = function(r)
      if r.kind == "message" then
        open.warn_skipped(ctx, r.batch)
      end
      ctx.out(args.json and (json.dumps(result_json(r), PRETTY) .. "\n") or result_text(r))
      out_ok = ctx.flush()
      return out_ok
    end,
  }
  if not result then
    if code == "ETIMEDOUT" then
      if args.json then
        ctx.out(json.dumps({ woke = false, timeout = args.timeout, resume = token }, PRETTY) .. "\n")
      else
        ctx.err(string.format("(timeout after %ss: no condition held for %s in '%s')\n",
          py.float_repr(args.timeout), as, channel))
        ctx.out("resume: " .. token .. "\n")
      end
      ctx.flush()
      return 2
    end
    return ctx.fail(msg, code, exit)
  end
  return out_ok and 0 or 1
end

return M
