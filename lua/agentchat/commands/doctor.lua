-- agentchat.commands.doctor: `agent-chat doctor CH [--stale-after S] [--json]`
-- (docs/doctor.md): the cycles of the channel's wait-for graph and its
-- stalls. Nothing at all on a healthy channel (exit 0); with findings, a
-- block per cycle, a line per stall and a count (exit 1). An error is one
-- line on stderr with its code's exit, as every command.
local json = require "agentchat.json"
local open = require "agentchat.commands.open"

local M = {}

local PRETTY = { indent = 2, sort_keys = true, ensure_ascii = false }

local function text(report)
  local out = {}
  for _, c in ipairs(report.cycles) do
    out[#out + 1] = "cycle: " .. table.concat(c.agents, " -> ") .. "\n"
    for _, e in ipairs(c.edges) do
      out[#out + 1] = "  " .. e.from .. " waits for " .. e.to .. ": " .. e.detail .. "\n"
    end
  end
  for _, s in ipairs(report.stalls) do
    out[#out + 1] = "stall: " .. s.detail .. "\n"
  end
  out[#out + 1] = string.format("%d cycle%s, %d stall%s in '%s'\n", #report.cycles,
    #report.cycles == 1 and "" or "s", #report.stalls, #report.stalls == 1 and "" or "s", report.channel)
  return table.concat(out)
end

local function cmd_doctor(args, ctx)
  local ch <close>, rc = open.channel(args, ctx)
  if not ch then
    return rc
  end
  local stale_after, err_rc = open.seconds(ctx, args.stale_after, "--stale-after")
  if not stale_after then
    return err_rc
  end
  local report, msg, code, exit = ch:doctor{ stale_after = stale_after }
  if not report then
    return ctx.fail(msg, code, exit)
  end
  if args.json then
    for _, c in ipairs(report.cycles) do
      c.agents, c.edges = json.array(c.agents), json.array(c.edges)
    end
    report.edges, report.cycles, report.stalls =
      json.array(report.edges), json.array(report.cycles), json.array(report.stalls)
    ctx.out(json.dumps(report, PRETTY) .. "\n")
  elseif report.findings > 0 then
    ctx.out(text(report))
  end
  return report.findings == 0 and 0 or 1
end

function M.register(sub)
  sub:parser("doctor", {
    description = "Find who waits for whom in a channel: cycles of the wait-for graph (open requests, "
      .. "task dependencies held by others, path locks a held task needs) and stalls (expired leases "
      .. "and locks, old requests to a silent addressee). Prints nothing and exits 0 when healthy, "
      .. "exit 1 with findings. See docs/doctor.md.",
    build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:option{ "--stale-after", type = "float", default = 600.0,
                help = "seconds after which an unanswered request to an addressee silent since is a "
                  .. "stall (default: 600)" }
      p:option{ "--json", action = "store_true",
                help = "print the whole report (edges, cycles, stalls) as JSON, even when clean" }
      p:set_defaults{ handler = cmd_doctor }
    end })
end

return M
