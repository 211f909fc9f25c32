-- agentchat.commands.export: `agent-chat export --to DIR [CHANNEL...]`, the
-- root's channels (an etcd store's, or a folder's) written to DIR in the
-- folder format (docs/etcd.md "Migration"; include/agentchat/copy.h says
-- what is copied). One line per channel; a channel DIR has already is
-- refused (CHANNEL_EXISTS, exit 1).
local ac = require "agentchat"
local open = require "agentchat.commands.open"

local M = {}

--- "12 messages, 3 records, 2 acks, 4 cursors[, 1 skipped]"
function M.counts(rep)
  local s = string.format("%d messages, %d records, %d acks, %d cursors", rep.messages, rep.records,
    rep.acks, rep.cursors)
  if rep.skipped > 0 then
    s = s .. string.format(", %d skipped", rep.skipped)
  end
  return s
end

--- Print the reports, then the failure if any.
function M.report(ctx, reports, line, msg, code, exit, partial)
  for _, rep in ipairs(reports or partial or {}) do
    ctx.out(line(rep) .. "\n")
  end
  if not reports then
    return ctx.fail(msg, code, exit)
  end
  return 0
end

local function cmd_export(args, ctx)
  local root, rc = open.root(args, ctx)
  if not root then
    return rc
  end
  local names = #args.channels > 0 and args.channels or nil
  local reports, msg, code, exit, partial = root:export(args.to, { channels = names })
  root:close()
  local to = ac.normalize_path(args.to)
  return M.report(ctx, reports, function(rep)
    return string.format("exported '%s' to %s: %s", rep.channel, ac.join_path(to, rep.channel),
      M.counts(rep))
  end, msg, code, exit, partial)
end

function M.register(sub)
  sub:parser("export", {
    description = "Copy channels (default: all) to a folder in the folder format: messages, tasks, "
      .. "leases, path locks, acks and cursors, byte for byte (docs/etcd.md).",
    build = function(p)
      p:option{ "--to", required = true, metavar = "DIR", help = "the folder root to write" }
      p:positional{ "channels", nargs = "*", metavar = "CHANNEL", help = "channels to export (default: all)" }
      p:set_defaults{ handler = cmd_export }
    end })
end

return M
