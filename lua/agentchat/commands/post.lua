-- agentchat.commands.post: `post` (docs/format.md 2.1), byte-compatible with the
-- Python tool's output: a family of its own, the command every agent runs most.
local open = require "agentchat.commands.open"
local py = require("agentchat.lazy")("agentchat.pycompat")
local sys = require "agentchat.sys"

local M = {}

local BODY_CAP = 16 * 1024 * 1024
local STDIN_HINT = "Enter message body; press Ctrl-D (or Ctrl-Z and Enter on Windows) to finish.\n"

-- An argparse type for a Python int, which has no size limit: --reply keeps
-- the canonical decimal text (written as is).
local function int_text(s)
  local text = py.int_digits(s)
  if not text then
    return nil, "int"
  end
  return text
end

local open_channel, text_ok = open.channel, open.text_ok

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

-- The options a usual post line has (the others, `--opt=value`, repeats,
-- abbreviations and values starting with '-' go through argparse): their
-- args key.
local DIRECT = { ["--from"] = "from", ["--to"] = "to", ["--title"] = "title", ["--reply"] = "reply",
                 ["--status"] = "status", ["--body"] = "body", ["--body-file"] = "body_file" }

--- cli.parse's shortcut: `post CHANNEL --opt VALUE...` with the options
--- above, each once, --from and --title given, parsed as argparse would
--- (cli_parse_spec compares the two); nil for anything else. argparse is
--- a third of a post's start-up.
function M.direct(_, rest)
  local channel = rest[1]
  if not channel or channel == "" or channel:sub(1, 1) == "-" or #rest % 2 == 0 then
    return nil
  end
  local args = { channel = channel, to = "all", status = "discussion", handler = cmd_post }
  local seen = {}
  for i = 2, #rest, 2 do
    local key, v = DIRECT[rest[i]], rest[i + 1]
    if not key or seen[key] or v:sub(1, 1) == "-" then
      return nil
    end
    seen[key] = true
    args[key] = v
  end
  if not (seen.from and seen.title) then
    return nil
  end
  if args.reply then
    args.reply = int_text(args.reply)
    if not args.reply then
      return nil                   -- argparse words the error
    end
  end
  return args
end

function M.register(sub)
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
end

return M
