-- agentchat.commands.open: the root and the channel a command names, with
-- failures printed through ctx.fail, and the small steps several command
-- families share (below). Each command family maps the core's channel
-- errors to its own codes (the Python tool words them per family).
--
--   local ch, rc_or_root = open.channel(args, ctx, how)
--     how.open(root, name)    opener (default root:channel)
--     how.invalid = {code, exit}
--                             CHANNEL_INVALID_NAME becomes "invalid channel
--                             name: '<name>' (<core message>)" with that code
--     how.missing(root, name) -> message, code, exit for CHANNEL_NOT_FOUND
--     how.exit                exit code of every other failure (default: its own)
--   Returns the channel and the root, or nil and the exit code.
--
--   open.text_ok(ctx, value, what)   an option's text is valid UTF-8 (nil is)
--   open.body_file(args, ctx)        the text of --body-file
--   open.interval(args, ctx)         --interval, else the config's wait.interval
--   open.posted(ctx, channel, res)   the "posted #N -> ..." line and its warning
--   open.warn_skipped(ctx, batch)    a warning per unreadable message skipped
--   open.shown_text(m)               a message as read/peek print it
--   open.ljust(s, width)             s padded with spaces to width characters
--   open.commit_shown(ctx, skip, commit, ...)
--                                    once the output is out, commit(...)
--                                    unless skip; returns the exit code
--   open.agent(ctx, args, key, flag) args[key] (--as/--from) names an agent:
--                                    not empty, not only blanks
--   open.int_type(min, type_name)   an argparse type: a Python int >= min
--   open.seconds(ctx, value, flag)   a float flag's value is a finite number
--                                    of seconds >= 0 (USAGE, exit 2)
--   open.waiting(args, ctx, view)    the channel and rescan interval of a
--                                    blocking command (wait, status watch)
--   open.reading_options(p, budgets) --kind (and --max-messages,
--                                    --max-bytes) for read, wait, inbox, peek
--   open.held_note(ctx, batch, args, who)
--                                    the line saying what a budget held back
-- The ones that can fail print the failure and return nil and the exit code.
local ac = require "agentchat"
local py = require("agentchat.lazy")("agentchat.pycompat")
local sys = require "agentchat.sys"

local BODY_CAP = 16 * 1024 * 1024

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

function M.text_ok(ctx, value, what)
  if value ~= nil and not sys.utf8_valid(value) then
    return nil, ctx.fail(what .. " is not valid UTF-8", "INVALID_UTF8")
  end
  return true
end

-- The file is read as Python reads a text file: strict UTF-8 (else its
-- decode error) with universal newlines ("\r\n" and a lone "\r" are "\n").
function M.body_file(args, ctx)
  local data, msg = sys.read_file(args.body_file, BODY_CAP)
  if not data then
    return nil, ctx.fail("could not read body file: " .. msg .. ": " .. py.repr_str(args.body_file),
      "BODY_FILE_UNREADABLE")
  end
  local bad = sys.utf8_error(data)
  if bad then
    return nil, ctx.fail("could not read body file: " .. bad, "BODY_FILE_UNREADABLE")
  end
  return (data:gsub("\r\n?", "\n"))
end

function M.interval(args, ctx)
  if args.interval ~= nil then
    return args.interval
  end
  local interval, why, code, exit = require("agentchat.config").get("interval", args.root)
  if not interval then
    return nil, ctx.fail(why, code, exit)
  end
  return interval
end

function M.seconds(ctx, value, flag)
  if value ~= value or value < 0 or value == math.huge then
    return nil, ctx.fail(flag .. " must be a finite number of seconds >= 0", "USAGE", 2)
  end
  return value
end

--- The channel of a blocking command (wait, status watch) and its rescan
--- interval (M.interval): ch, interval; or nil and the exit code, the
--- failure reported. `view` (default args) names the channel as M.channel.
function M.waiting(args, ctx, view)
  local ch, rc = M.channel(view or args, ctx)
  if not ch then
    return nil, rc
  end
  local interval, irc = M.interval(args, ctx)
  if not interval then
    ch:close()
    return nil, irc
  end
  return ch, interval
end

function M.posted(ctx, channel, res)
  ctx.out(string.format("posted #%d -> %s/%s\n", res.seq, channel, res.file))
  if res.warning then
    ctx.err("agent-chat: warning: " .. res.warning .. "\n")
  end
end

function M.warn_skipped(ctx, batch)
  for _, s in ipairs(batch.skipped or {}) do
    ctx.err("agent-chat: warning: skipped unreadable message " .. s.name .. ": " .. s.reason .. "\n")
  end
end

-- The text of message `m` as read, wait and peek print it (rstripped),
-- or the notice that stands for a file that is not UTF-8: the unit the
-- budgets count (agentchat.kinds).
function M.shown_text(m)
  return require("agentchat.kinds").shown_text(m)
end

-- Cursors move only once the messages are out: flush, then (unless
-- `skip`, as for --peek) commit(...), which returns true or a failure.
function M.commit_shown(ctx, skip, commit, ...)
  if not ctx.flush() then
    return 1
  end
  if not skip then
    local ok, msg, code, exit = commit(...)
    if not ok then
      return ctx.fail(msg, code, exit)
    end
  end
  return 0
end

function M.agent(ctx, args, key, flag)
  local v = args[key]
  if v ~= nil and sys.strip(v) == "" then
    return nil, ctx.fail(flag .. " must name an agent, not be empty or blank (is $AGENT_CHAT_NAME unset?)",
      "USAGE", 2)
  end
  return true
end

function M.int_type(min, type_name)
  return function(s)
    local v = py.int_parse(s)
    if v == nil or v < min then
      return nil, type_name
    end
    return v
  end
end

local positive_int = M.int_type(1, "positive int")

function M.reading_options(p, budgets)
  p:option{ "--kind", dest = "kind", action = "append", choices = require("agentchat.kinds").KINDS,
            help = "only messages of this kind: message (from peers), event or audit (the task, lease, "
              .. "lock and compact records); repeatable; the others are skipped like messages for others "
              .. "(default: every kind)" }
  if budgets then
    p:option{ "--max-messages", type = positive_int, type_name = "positive int", metavar = "N",
              help = "print at most N messages; the cursor stops before the rest" }
    p:option{ "--max-bytes", type = positive_int, type_name = "positive int", metavar = "N",
              help = "print at most N bytes of messages; the cursor stops before the rest" }
  end
end

local function plural(n, word)
  return n .. " " .. word .. (n == 1 and "" or "s")
end

function M.held_note(ctx, batch, args, who)
  local n = batch.remaining or 0
  if n == 0 then
    return
  end
  local what = plural(n, "more message") .. " for " .. args.as .. who
  local shown = batch.n or #batch.messages     -- batch.n: a printed batch
  if shown == 0 and args.max_bytes and batch.next then
    ctx.out(string.format("(%s not shown: the next, #%d, is %d bytes, more than --max-bytes %d; "
      .. "read it with a larger --max-bytes)\n", what, batch.next.seq,
      require("agentchat.kinds").shown_bytes(batch.next), args.max_bytes))
    return
  end
  local limit = (args.max_messages and shown >= args.max_messages)
    and ("--max-messages " .. args.max_messages) or ("--max-bytes " .. tostring(args.max_bytes))
  ctx.out(string.format("(%s not shown (%s); the cursor stops before them: run it again for the rest)\n",
    what, limit))
end

function M.ljust(s, width)
  return s .. string.rep(" ", math.max(0, width - py.ulen(s)))
end

return M
