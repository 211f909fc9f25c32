-- agentchat.commands.messages: read, wait and peek (docs/format.md 2.1),
-- byte-compatible with the Python tool's output. (post is
-- agentchat.commands.post; init, channels, roster and the legacy marker
-- claim are agentchat.commands.channels.)
local open = require "agentchat.commands.open"
local py = require("agentchat.lazy")("agentchat.pycompat")

local M = {}

-- ------------------------------------------------------------ helpers

-- An argparse type for a Python int, which has no size limit: -n saturates.
local function int_saturating(s)
  local v = py.int_parse(s)
  if v then
    return v
  end
  local text = py.int_digits(s)
  if not text then
    return nil, "int"
  end
  return text:sub(1, 1) == "-" and math.mininteger or math.maxinteger
end

local open_channel = open.channel

local warn_skipped = open.warn_skipped

-- ------------------------------------------------------------ commands

local function cmd_read(args, ctx)
  if not open.agent(ctx, args, "as", "--as") then
    return 2
  end
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  -- The messages are printed with the agent's cursor lock held, and the
  -- cursor moves only once they are out.
  local out_ok = true
  local batch, msg, code, exit = ch:read{
    as = args.as, all = args.all, peek = args.peek, kinds = args.kind,
    max_messages = args.max_messages, max_bytes = args.max_bytes, printed = true,
    show = function(b)
      warn_skipped(ctx, b)
      if b.n > 0 then
        ctx.out(b.printed)
      elseif (b.remaining or 0) == 0 then
        ctx.out(string.format("(no new messages for %s in '%s'; cursor at #%d)\n",
          args.as, args.channel, b.cursor_before))
      end
      open.held_note(ctx, b, args, " in '" .. args.channel .. "'")
      out_ok = ctx.flush()
      return out_ok
    end,
  }
  if not batch then
    return ctx.fail(msg, code, exit)
  end
  return out_ok and 0 or 1
end

local function cmd_wait(args, ctx)
  if args.for_ or args.resume then
    return require("agentchat.commands.waitany").run(args, ctx)
  end
  if not require("agentchat.commands.waitany").required(args, ctx) then
    return 2
  end
  if args.json then
    return ctx.fail("--json needs --for or --resume (a plain wait prints the messages as read does)",
      "USAGE", 2)
  end
  if not open.agent(ctx, args, "as", "--as") then
    return 2
  end
  -- No --interval: the config's wait.interval, else 5 (docs/config.md).
  local ch <close>, interval = open.waiting(args, ctx)
  if not ch then
    return interval
  end
  local out_ok = true
  local batch, msg, code, exit = ch:wait{
    as = args.as, timeout = args.timeout, interval = interval, kinds = args.kind, printed = true,
    show = function(b)
      warn_skipped(ctx, b)
      ctx.out(b.printed)
      out_ok = ctx.flush()
      return out_ok
    end,
  }
  if not batch then
    if code == "ETIMEDOUT" then
      ctx.err(string.format("(timeout after %ss: no new messages for %s in '%s')\n",
        py.float_repr(args.timeout), args.as, args.channel))
      return 2
    end
    return ctx.fail(msg, code, exit)
  end
  return out_ok and 0 or 1
end

local function cmd_peek(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  if args.n <= 0 then
    return 0
  end
  local batch, msg, code, exit = ch:peek(args.n, { kinds = args.kind, printed = true })
  if not batch then
    return ctx.fail(msg, code, exit)
  end
  warn_skipped(ctx, batch)
  if batch.count == 0 then
    ctx.out("(channel '" .. args.channel .. "' is empty)\n")
  elseif batch.n == 0 then
    ctx.out("(no " .. table.concat(args.kind, " or ") .. " messages in '" .. args.channel .. "')\n")
  else
    ctx.out(batch.printed)
  end
  return 0
end

-- ------------------------------------------------------------ grammar

function M.register(sub)
  -- Arguments are defined on first use (argparse `build`): a command line
  -- pays only for the subcommand it runs.
  sub:parser("read", { description = "Print the messages for an agent above its cursor, then move the cursor.",
    build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:option{ "--as", dest = "as", required = true, help = "reader (agent name)" }
      p:option{ "--all", action = "store_true", help = "show every message from #1, own ones included" }
      p:option{ "--peek", action = "store_true", help = "do not move the cursor" }
      open.reading_options(p, true)
      p:set_defaults{ handler = cmd_read }
    end })

  sub:parser("wait", { description = "Block (no CPU) until a message for the agent arrives, print it, move the cursor. "
      .. "Exit 2 on timeout. With --for, until any of the conditions holds (a message, a task state, a free "
      .. "lock, an acked message, in this or another channel); on timeout it prints a resume token.",
    build = function(p)
      -- Required unless --resume (cmd_wait checks).
      p:positional{ "channel", nargs = "?", help = "channel name (required unless --resume)" }
      p:option{ "--as", dest = "as", help = "reader (agent name; required unless --resume)" }
      p:option{ "--timeout", type = "float", default = 900.0, help = "seconds to wait (default: 900)" }
      p:option{ "--interval", type = "float",
                help = "rescan period in seconds where change notification is unavailable (default: 5)" }
      p:option{ "--for", dest = "for_", action = "append", metavar = "COND",
                help = "wake when this holds: message, task:ID=STATE, lock:PATH=free, receipt:SEQ=acked|read, "
                  .. "each optionally prefixed by CHANNEL: (another channel); repeatable, the first that "
                  .. "holds is printed" }
      p:option{ "--resume", metavar = "TOKEN",
                help = "wait again for the conditions of a timed-out --for wait, missing nothing that "
                  .. "happened since (the token it printed)" }
      p:option{ "--json", action = "store_true", help = "with --for: print the result as JSON" }
      open.reading_options(p, false)
      p:set_defaults{ handler = cmd_wait }
    end })

  sub:parser("peek", { description = "Show the last N messages, any recipient; no cursor moves.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:option{ "-n", type = int_saturating, type_name = "int", default = 3, help = "how many (default: 3)" }
      open.reading_options(p, false)
      p:set_defaults{ handler = cmd_peek }
    end })

end

return M
