-- agentchat.commands.messages: post, read, wait and peek (docs/format.md 2.1),
-- byte-compatible with the Python tool's output. (init, channels, roster
-- and the legacy marker claim are agentchat.commands.channels.)
local open = require "agentchat.commands.open"
local py = require("agentchat.lazy")("agentchat.pycompat")
local sys = require "agentchat.sys"

local M = {}

local BODY_CAP = 16 * 1024 * 1024
local STDIN_HINT = "Enter message body; press Ctrl-D (or Ctrl-Z and Enter on Windows) to finish.\n"

-- ------------------------------------------------------------ helpers

-- argparse types for Python ints, which have no size limit: --reply keeps
-- the canonical decimal text (written as is); -n saturates.
local function int_text(s)
  local text = py.int_digits(s)
  if not text then
    return nil, "int"
  end
  return text
end

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

local warn_skipped, text_ok = open.warn_skipped, open.text_ok

-- ------------------------------------------------------------ commands

-- Body sources: --body wins (even ''), then --body-file, then stdin.
local function read_body(args, ctx)
  if args.body then
    return text_ok(ctx, args.body, "--body") and args.body or nil, 1
  end
  if args.body_file then
    return open.body_file(args, ctx)
  end
  if sys.isatty(0) then
    ctx.err(STDIN_HINT)
  end
  local data, msg = sys.read_stdin(BODY_CAP)
  if not data then
    return nil, ctx.fail("could not read stdin: " .. msg, "IO_ERROR")
  end
  if sys.strip(data) == "" then
    return nil, ctx.fail("empty body (pass --body, --body-file, or pipe via stdin)", "BODY_EMPTY")
  end
  -- Python reads stdin with surrogateescape and fails writing it out.
  local bad = sys.utf8_error(data, "surrogateescape")
  if bad then
    return nil, ctx.fail("could not read body from stdin: " .. bad, "BODY_STDIN_UNREADABLE")
  end
  return data
end

local function cmd_post(args, ctx)
  if not open.agent(ctx, args, "from", "--from") then
    return 2
  end
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  for _, f in ipairs({ { args.from, "--from" }, { args.title, "--title" },
                       { args.to, "--to" }, { args.status, "--status" } }) do
    if f[1] and not text_ok(ctx, f[1], f[2]) then
      return 1
    end
  end
  -- Typed messages (docs/protocols.md): checked before the body is read.
  local typed, trc = require("agentchat.commands.typed").post_fields(args, ctx)
  if not typed then
    return trc
  end
  local body, brc = read_body(args, ctx)
  if not body then
    return brc
  end
  -- Receipts (docs/receipts.md): --wait-for checks its addressees before
  -- anything is posted, then waits after the usual line is printed.
  local receipts, waiting = args.wait_for and require "agentchat.commands.receipts"
  if args.timeout and not receipts then
    return ctx.fail("--timeout applies only with --wait-for", "USAGE", 2)
  elseif receipts then
    waiting, brc = receipts.wait_targets(ch, args, ctx)
    if not waiting then
      return brc
    end
  end
  local res, msg, code, exit = ch:post{
    from = args.from, to = args.to, title = args.title, body = body,
    reply = args.reply or "0", status = args.status,
    type = typed.type, request_id = typed.request_id, role = typed.role,
  }
  if not res then
    return ctx.fail(msg, code, exit)
  end
  open.posted(ctx, args.channel, res)
  if receipts then
    return receipts.wait_for(ch, res.seq, waiting, args, ctx)
  end
  return 0
end

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
  if not open.agent(ctx, args, "as", "--as") then
    return 2
  end
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  -- No --interval: the config's wait.interval, else 5 (docs/config.md).
  local interval, irc = open.interval(args, ctx)
  if not interval then
    return irc
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
  sub:parser("post", { description = "Post a message. The body comes from --body, else --body-file, else stdin.",
    build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:option{ "--from", required = true, help = "sender name" }
      p:option{ "--to", default = "all", help = "recipients: all, or a comma list (default: all)" }
      p:option{ "--title", required = true, help = "message title (may be empty)" }
      p:option{ "--reply", type = int_text, type_name = "int", help = "seq this message replies to (0: none)" }
      p:option{ "--status", default = "discussion", help = "status label (default: discussion)" }
      p:option{ "--body", help = "message body text" }
      p:option{ "--body-file", help = "read the body from this file" }
      -- Receipts (docs/receipts.md). abbrev = false: --ti must stay --title.
      p:option{ "--wait-for", choices = { "read", "acked" }, abbrev = false,
                help = "after posting, block until every addressee has read or acked the message" }
      p:option{ "--timeout", type = "float", abbrev = false,
                help = "--wait-for: seconds to wait (default: 900); exit 2 naming the missing agents" }
      -- Typed messages (docs/protocols.md): --type, --request-id, --role.
      require("agentchat.commands.typed").post_options(p)
      p:set_defaults{ handler = cmd_post }
    end })

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
      .. "Exit 2 on timeout.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:option{ "--as", dest = "as", required = true, help = "reader (agent name)" }
      p:option{ "--timeout", type = "float", default = 900.0, help = "seconds to wait (default: 900)" }
      p:option{ "--interval", type = "float",
                help = "rescan period in seconds where change notification is unavailable (default: 5)" }
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
