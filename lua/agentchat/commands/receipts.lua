-- agentchat.commands.receipts: `ack`, `receipts`, `inbox`, and the
-- `--wait-for` half of `post` (docs/receipts.md).
local ac = require "agentchat"
local json = require "agentchat.json"
local open = require "agentchat.commands.open"
local py = require("agentchat.lazy")("agentchat.pycompat")
local sys = require "agentchat.sys"

local M = {}

local RULE = string.rep("=", 70)

-- A SEQ argument: decimal digits naming a positive integer.
local function parse_seq(text, ctx)
  local n = text:match("^%d+$") and math.tointeger(tonumber(text))
  if not n or n < 1 then
    return nil, ctx.fail("seq must be a positive integer: " .. py.repr_str(text), "RECEIPT_INVALID_SEQ")
  end
  return n
end

local function pretty_json(v)
  return json.dumps(v, { indent = 2, sort_keys = true, ensure_ascii = false }) .. "\n"
end

-- ISO time to the second for the table (the JSON keeps microseconds).
local function short_time(t)
  return t and (t:gsub("%.%d+", "", 1)) or "-"
end

local ljust, warn_skipped = open.ljust, open.warn_skipped

-- ------------------------------------------------------------ ack

local function cmd_ack(args, ctx)
  local seq, rc = parse_seq(args.seq, ctx)
  if not seq then
    return rc
  end
  local ch <close>, crc = open.channel(args, ctx)
  if not ch then
    return crc
  end
  local res, msg, code, exit = ch:ack(seq, { as = args.as })
  if not res then
    return ctx.fail(msg, code, exit)
  end
  if res.new then
    ctx.out(string.format("acked #%d in '%s' as %s\n", seq, args.channel, args.as))
  else
    ctx.out(string.format("already acked #%d in '%s' as %s (at %s)\n", seq, args.channel, args.as,
      res.acked_at or "?"))
  end
  if res.warning then
    ctx.err("agent-chat: warning: " .. res.warning .. "\n")
  end
  return 0
end

-- ------------------------------------------------------------ receipts

local RULE_NAMES = { to = "", members = " (channel members)", senders = " (agents that posted here)" }

local function receipts_text(r)
  local out = {}
  out[#out + 1] = string.format("#%d in '%s' from %s: %s\n", r.seq, r.channel, r.from or "?", r.title or "")
  local names = {}
  for i, a in ipairs(r.addressees) do
    names[i] = a.agent
  end
  out[#out + 1] = string.format("delivered %s to %s%s\n", r.delivered_at or "?",
    #names > 0 and table.concat(names, ", ") or "(no known addressees)", RULE_NAMES[r.addressees_from])
  if #names == 0 then
    return table.concat(out)
  end
  local wa, wr = 5, 4
  for _, a in ipairs(r.addressees) do
    wa = math.max(wa, py.ulen(a.agent))
    wr = math.max(wr, #short_time(a.read_at))
  end
  out[#out + 1] = ljust("AGENT", wa) .. "  STATE      " .. ljust("READ", wr) .. "  ACKED\n"
  for _, a in ipairs(r.addressees) do
    out[#out + 1] = ljust(a.agent, wa) .. "  " .. ljust(a.state, 9) .. "  " .. ljust(short_time(a.read_at), wr)
      .. "  " .. short_time(a.acked_at) .. "\n"
  end
  return table.concat(out)
end

local function cmd_receipts(args, ctx)
  local seq, rc = parse_seq(args.seq, ctx)
  if not seq then
    return rc
  end
  local ch <close>, crc = open.channel(args, ctx)
  if not ch then
    return crc
  end
  local r, msg, code, exit = ch:receipts(seq)
  if not r then
    return ctx.fail(msg, code, exit)
  end
  if args.json then
    local list = {}
    for i, a in ipairs(r.addressees) do
      list[i] = { agent = a.agent, state = a.state, delivered = a.delivered, read = a.read,
                  acked = a.acked, read_at = a.read_at or json.null, acked_at = a.acked_at or json.null,
                  cursor = a.cursor }
    end
    ctx.out(pretty_json({
      channel = r.channel, seq = r.seq, file = r.file, from = r.from or json.null, to = r.to or json.null,
      title = r.title or json.null, delivered_at = r.delivered_at or json.null, broadcast = r.broadcast,
      addressees_from = r.addressees_from, addressees = json.array(list),
      all_read = r.all_read, all_acked = r.all_acked,
    }))
  else
    ctx.out(receipts_text(r))
  end
  return 0
end

-- ------------------------------------------------------------ post --wait-for

--- Before `post` publishes: the agents `--wait-for` will wait for (the
--- addressees the message will have), checked so that a name that can
--- never ack fails before anything is written. Returns the list, or nil
--- and the exit code.
function M.wait_targets(ch, args, ctx)
  local agents, how, code, exit = ch:addressees{ from = args.from, to = args.to }
  if not agents then
    return nil, ctx.fail(how, code, exit)
  end
  if #agents == 0 then
    return nil, ctx.fail("--wait-for: the message would have no addressees to wait for "
      .. "(an open channel nobody else posted to: name them with --to, or give the channel --members)",
      "RECEIPT_NO_ADDRESSEES")
  end
  for _, a in ipairs(agents) do
    local ok, msg, ecode, eexit = ac.check_agent(a)
    if not ok then
      return nil, ctx.fail("--wait-for: an addressee can never ack: " .. msg, ecode, eexit)
    end
  end
  return agents
end

--- After the post line is out: wait until `agents` reached the state.
function M.wait_for(ch, seq, agents, args, ctx)
  if not ctx.flush() then
    return 1
  end
  local interval, irc = open.interval(args, ctx)   -- post has no --interval: the config's
  if not interval then
    return irc
  end
  local ok, msg, code, exit = ch:wait_receipts(seq, { state = args.wait_for, timeout = args.timeout or 900.0,
                                                     interval = interval, agents = agents })
  if not ok then
    return ctx.fail(msg, code, exit)
  end
  return 0
end

-- ------------------------------------------------------------ inbox

-- `budgeted`: --max-messages or --max-bytes was given (then `remaining`
-- says how many messages they held back).
local function inbox_json(ib, budgeted)
  local msgs, chans = {}, {}
  for i, m in ipairs(ib.messages) do
    msgs[i] = { channel = m.channel, seq = m.seq, file = m.file, from = m.from or json.null,
                to = m.to or json.null, title = m.title or json.null, status = m.status or json.null,
                ts = m.ts or json.null, reply_to = m.reply_to or json.null, fields = m.fields,
                body = m.body, text = m.text }
  end
  for i, e in ipairs(ib.channels) do
    chans[i] = { channel = e.channel, cursor_before = e.cursor_before, cursor = e.cursor, messages = e.count }
  end
  return pretty_json({ agent = ib.agent, messages = json.array(msgs), channels = json.array(chans),
                       remaining = budgeted and ib.remaining or nil })
end

local function cmd_inbox(args, ctx)
  if not open.agent(ctx, args, "as", "--as") then
    return 2
  end
  local root, rc = open.root(args, ctx)
  if not root then
    return rc
  end
  -- --channels "" (or only commas and blanks) means every channel, as an
  -- empty $AGENT_CHAT_CHANNELS does for the hooks.
  local channels = args.channels and sys.comma_list(args.channels) or nil
  if channels and #channels == 0 then
    channels = nil
  end
  -- As with `read`, the messages are printed with the cursor locks held,
  -- and the cursors move only once they are out.
  local out_ok = true
  local ib, msg, code, exit = root:inbox{
    as = args.as, peek = args.peek, channels = channels, kinds = args.kind,
    max_messages = args.max_messages, max_bytes = args.max_bytes,
    show = function(b)
      for _, e in ipairs(b.channels) do
        warn_skipped(ctx, e.batch)
      end
      if args.json then
        ctx.out(inbox_json(b, args.max_messages or args.max_bytes))
      elseif #b.messages == 0 and b.remaining == 0 then
        ctx.out(string.format("(no new messages for %s in %d channel%s)\n", args.as, #b.channels,
          #b.channels == 1 and "" or "s"))
      else
        local parts = {}
        for _, m in ipairs(b.messages) do
          parts[#parts + 1] = RULE .. "\n#" .. m.channel .. "\n" .. open.shown_text(m) .. "\n\n"
        end
        ctx.out(table.concat(parts))
        open.held_note(ctx, b, args, "")
      end
      out_ok = ctx.flush()
      return out_ok
    end,
  }
  if not ib then
    return ctx.fail(msg, code, exit)
  end
  return out_ok and 0 or 1
end

-- ------------------------------------------------------------ grammar

function M.register(sub)
  sub:parser("ack", { description = "Acknowledge a message addressed to you (idempotent: the first ack stays). "
      .. "Receipts: docs/receipts.md.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:positional{ "seq", metavar = "SEQ", help = "seq of the message" }
      p:option{ "--as", dest = "as", required = true, help = "acking agent (an addressee of the message)" }
      p:set_defaults{ handler = cmd_ack }
    end })

  sub:parser("receipts", { description = "Show, per addressee of a message, whether it was delivered, "
      .. "read (the agent's cursor passed it) or acked, with times.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:positional{ "seq", metavar = "SEQ", help = "seq of the message" }
      p:option{ "--json", action = "store_true", help = "print JSON (indent 2, sorted keys)" }
      p:set_defaults{ handler = cmd_receipts }
    end })

  sub:parser("inbox", { description = "Print the unread messages for an agent across channels in time order, "
      .. "each labelled with its channel, and move each channel's cursor as read does.", build = function(p)
      p:option{ "--as", dest = "as", required = true, help = "reader (agent name)" }
      p:option{ "--channels", help = "comma list of channels (default, or empty: every channel of the root)" }
      p:option{ "--peek", action = "store_true", help = "do not move any cursor" }
      p:option{ "--json", action = "store_true", help = "print JSON (indent 2, sorted keys)" }
      open.reading_options(p, true)
      p:set_defaults{ handler = cmd_inbox }
    end })
end

return M
