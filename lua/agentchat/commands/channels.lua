-- agentchat.commands.channels: init, channels, roster and the legacy marker
-- claim (docs/format.md 2.1), byte-compatible with the Python tool's output.
-- (post, read, wait and peek are agentchat.commands.messages.)
local ac = require "agentchat"
local open = require "agentchat.commands.open"
local py = require("agentchat.lazy")("agentchat.pycompat")
local store = require "agentchat.store"

local M = {}

-- ------------------------------------------------------------ helpers

local open_root, open_channel = open.root, open.channel

local split_list = require("agentchat.sys").comma_list

--- Cut to 37 characters plus "..." when longer than 40 (characters).
local function cut40(s)
  if py.ulen(s) <= 40 then
    return s
  end
  local stop = utf8.offset(s, 38)
  if not stop then   -- not valid UTF-8: count bytes
    return s:sub(1, 37) .. "..."
  end
  return s:sub(1, stop - 1) .. "..."
end

local ljust = open.ljust

-- ------------------------------------------------------------ commands

local function cmd_init(args, ctx)
  local root, rc = open_root(args, ctx)
  if not root then
    return rc
  end
  local members = args.members and split_list(args.members) or {}
  local ch <close>, msg, code, exit = root:init(args.channel, { members = members, topic = args.topic or "" })
  if not ch then
    return ctx.fail(msg, code, exit)
  end
  ctx.out(string.format("created channel '%s' at %s  members=%s\n", args.channel,
    ac.join_path(root.path, args.channel),
    #members > 0 and table.concat(members, ", ") or "(open)"))
  return 0
end

local function cmd_channels(args, ctx)
  local root, rc = open_root(args, ctx)
  if not root then
    return rc
  end
  local list, msg, code, exit = root:channels()
  if not list then
    return ctx.fail(msg, code, exit)
  end
  if #list == 0 then
    ctx.out("(no channels yet under " .. root.path .. ")\n")
    return 0
  end
  local width = 7
  for _, c in ipairs(list) do
    width = math.max(width, py.ulen(c.name))
  end
  local out = { ljust("CHANNEL", width) .. "  MSGS  MEMBERS / LAST\n" }
  local pad = string.rep(" ", width + 8)
  for _, c in ipairs(list) do
    local members = c.meta and #c.meta.members > 0 and table.concat(c.meta.members, ", ") or "(open)"
    out[#out + 1] = string.format("%s  %4d  %s\n", ljust(c.name, width), c.count, cut40(members))
    if c.last then
      local f = c.last.fields
      out[#out + 1] = string.format("%slast: #%d %s: %s\n", pad, c.last.seq,
        f.from or "?", cut40(f.title or ""))
    else
      out[#out + 1] = pad .. "last: -\n"
    end
  end
  ctx.out(table.concat(out))
  return 0
end

local function cmd_roster(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local r, msg, code, exit = ch:roster()
  if not r then
    return ctx.fail(msg, code, exit)
  end
  ctx.out(string.format("channel : %s\ntopic   : %s\nmembers : %s\nmessages: %d\n",
    r.channel, r.topic ~= "" and r.topic or "(none)",
    #r.members > 0 and table.concat(r.members, ", ") or "(open)", r.messages))
  return 0
end

local function cmd_claim(args, ctx)
  -- Marker names are checked before the channel is looked up.
  local ok, msg, code, exit = store.check_marker(args.task)
  if not ok then
    return ctx.fail(msg, code, exit)
  end
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local dest
  dest, msg, code, exit = ch:claim_marker(args.task, { as = args.as })
  if not dest then
    return ctx.fail(msg, code, exit)
  end
  ctx.out("claimed " .. args.task .. " -> " .. dest .. "\n")
  return 0
end

-- ------------------------------------------------------------ grammar

--- cli.parse's shortcut: `roster CH` as the parser below returns it (nil
--- for anything else, which the parser then reads).
function M.direct(name, rest)
  local ch = rest[1]
  if name == "roster" and #rest == 1 and ch ~= "" and ch:sub(1, 1) ~= "-" then
    return { channel = ch, handler = cmd_roster }
  end
  return nil
end

function M.register(sub)
  -- Arguments are defined on first use (argparse `build`): a command line
  -- pays only for the subcommand it runs.
  sub:parser("init", { description = "Create a channel folder with its _meta.json.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:option{ "--members", help = "comma-separated member names (informational only)" }
      p:option{ "--topic", help = "channel topic (stored verbatim)" }
      p:set_defaults{ handler = cmd_init }
    end })

  sub:parser("channels", { description = "List every channel under the root.", build = function(p)
      p:set_defaults{ handler = cmd_channels }
    end })

  sub:parser("roster", { description = "Show a channel's topic, members and message count.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:set_defaults{ handler = cmd_roster }
    end })

  sub:parser("claim", { description = "Rename task-<id>.md to task-<id>.CLAIMED-<agent>.md under the seq lock. "
      .. "Exit 3 if it is gone or already claimed.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:positional{ "task", help = "marker file name, task-<id>.md" }
      p:option{ "--as", dest = "as", required = true, help = "claimer (agent name)" }
      p:set_defaults{ handler = cmd_claim }
    end })
end

return M
