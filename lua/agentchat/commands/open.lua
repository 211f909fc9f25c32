-- agentchat.commands.open: the root and the channel a command names, with
-- failures printed through ctx.fail. Each command family maps the core's
-- channel errors to its own codes (the Python tool words them per family).
--
--   local ch, rc_or_root = open.channel(args, ctx, how)
--     how.open(root, name)    opener (default root:channel)
--     how.invalid = {code, exit}
--                             CHANNEL_INVALID_NAME becomes "invalid channel
--                             name: '<name>' (<core message>)" with that code
--     how.missing(root, name) -> message, code, exit for CHANNEL_NOT_FOUND
--     how.exit                exit code of every other failure (default: its own)
--   Returns the channel and the root, or nil and the exit code.
local ac = require "agentchat"

local M = {}

function M.root(args, ctx)
  local root, msg, code, exit = ac.open(args.root)
  if not root then
    return nil, ctx.fail(msg, code, exit)
  end
  return root
end

function M.channel(args, ctx, how)
  how = how or {}
  local root, rc = M.root(args, ctx)
  if not root then
    return nil, rc
  end
  local ch, msg, code, exit
  if how.open then
    ch, msg, code, exit = how.open(root, args.channel)
  else
    ch, msg, code, exit = root:channel(args.channel)
  end
  if ch then
    return ch, root
  end
  if code == "CHANNEL_INVALID_NAME" and how.invalid then
    -- The core message quotes the name with control characters escaped.
    local shown = msg:match(": '(.*)'$") or args.channel
    return nil, ctx.fail("invalid channel name: '" .. shown .. "' (" .. msg .. ")", how.invalid[1],
      how.invalid[2])
  elseif code == "CHANNEL_NOT_FOUND" and how.missing then
    return nil, ctx.fail(how.missing(root, args.channel))
  end
  return nil, ctx.fail(msg, code, how.exit or exit)
end

return M
