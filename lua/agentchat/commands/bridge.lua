-- agentchat.commands.bridge: `bridge claude-team TEAM --channel CH [--as
-- NAME] [--once]` (docs/claude-teams.md): a long-running bridge between a
-- channel and a Claude Code agent team; the loop is agentchat.bridge.
--
-- stdout gets one line per message carried ("delivered #12 from alice to
-- researcher (shutdown_request)", "mirrored inboxes/alice.json[3] from
-- researcher to alice as #13 (shutdown_response)"); with --once a last line
-- counts them. stderr gets the start line and the warnings about the
-- team's files. Exit 0 (--once: everything carried), 1 an error, 130
-- SIGINT/SIGTERM.
local bridge = require "agentchat.bridge"
local open = require "agentchat.commands.open"

local M = {}

local function cmd_claude_team(args, ctx)
  local ch <close>, rc = open.channel(args, ctx)
  if not ch then
    return rc
  end
  -- Rescans where the store cannot notify: the config's wait.interval.
  local interval = open.interval(args, ctx)
  if not interval then
    return 1
  end
  local code, reason, counts, msg, ecode = bridge.claude_team(ch, {
    team = args.team, as = args.as, once = args.once, interval = interval,
    log = function(line)
      ctx.err("agent-chat: " .. line .. "\n")
    end,
    out = function(line)
      ctx.out(line .. "\n")
      ctx.flush()
    end,
  })
  if reason == "signal" then
    return ctx.fail("cancelled by user", "INTERRUPTED")
  elseif reason == "error" then
    return ctx.fail(msg, ecode, code)
  end
  ctx.out(string.format("carried %d messages to the team and %d entries to the channel\n", counts.to_team,
    counts.to_channel))
  return code
end

function M.register(sub)
  sub:parser("bridge", {
    description = "Carry messages between a channel and another tool's agents, live (docs/claude-teams.md).",
    build = function(bp)
      local bs = bp:subparsers{ dest = "bridge_command", metavar = "KIND", required = true }
      bs:parser("claude-team", {
        help = "a Claude Code agent team: its inbox files, under Claude Code's own lock",
        description = "Deliver the channel's messages to the team members' native inboxes and post the "
          .. "entries of every inbox to the channel, in both directions as they come (no polling), "
          .. "typed requests and responses included; what was carried survives a crash on both sides.",
        build = function(p)
          p:positional{ "team", metavar = "TEAM",
                        help = "the team folder (~/.claude/teams/<team>), or the team's name" }
          p:option{ "--channel", required = true, metavar = "CH", help = "the channel (it must exist)" }
          p:option{ "--as", dest = "as", metavar = "NAME", default = bridge.DEFAULT_AS,
                    help = "the bridge's name in the channel: its cursor (default: claude-team)" }
          p:option{ "--once", action = "store_true",
                    help = "carry what is there in both directions, then exit" }
          p:set_defaults{ handler = cmd_claude_team }
        end })
    end })
end

return M
