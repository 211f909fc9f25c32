-- agentchat.commands.fsck: `agent-chat fsck [CH...] [--repair] [--json]
-- [--verbose]` (docs/fsck.md). One line per finding on stdout,
-- "CH: CODE: message"; with --repair, "CH: repaired: CODE: path: what" for
-- each fix. Exit 0 when nothing is left, 1 with findings (or when the check
-- cannot run: then one error line on stderr, as every command), 2 usage.
local open = require "agentchat.commands.open"
local json = require "agentchat.json"

local M = {}

local PRETTY = { indent = 2, sort_keys = true, ensure_ascii = false }

local function as_json(report)
  local function list(items)
    local out = {}
    for _, f in ipairs(items) do
      out[#out + 1] = { channel = f.channel, code = f.code, class = f.class, path = f.path,
                        message = f.message, repaired = f.repaired }
    end
    return json.array(out)
  end
  return json.dumps({ channels = json.array(report.channels), findings = list(report.findings),
                      repaired = list(report.repaired), counts = report.counts }, PRETTY) .. "\n"
end

local function cmd_fsck(args, ctx)
  local root, rc = open.root(args, ctx)
  if not root then
    return rc
  end
  local listed = args.channels and #args.channels > 0 and args.channels or nil
  local report, msg, code, exit = root:fsck{ channels = listed, repair = args.repair }
  root:close()
  if not report then
    return ctx.fail(msg, code, exit)
  end
  if args.json then
    ctx.out(as_json(report))
  else
    local out = {}
    for _, f in ipairs(report.repaired) do
      out[#out + 1] = f.channel .. ": repaired: " .. f.code .. ": " .. (f.path ~= "" and f.path or ".")
        .. ": " .. f.repaired .. "\n"
    end
    for _, f in ipairs(report.findings) do
      out[#out + 1] = f.channel .. ": " .. f.code .. ": " .. f.message .. "\n"
    end
    if args.verbose then
      local c = report.counts
      out[#out + 1] = string.format("fsck: %d channel%s checked, %d finding%s (%d corrupt, %d pending, "
        .. "%d repairable, %d busy), %d repaired\n", #report.channels, #report.channels == 1 and "" or "s",
        #report.findings, #report.findings == 1 and "" or "s", c.corrupt, c.pending, c.repairable, c.busy,
        #report.repaired)
    end
    ctx.out(table.concat(out))
  end
  return #report.findings == 0 and 0 or 1
end

function M.register(sub)
  sub:parser("fsck", {
    description = "Check channel folders (every channel of the root, or the ones named): messages, "
      .. "the seq high-water mark, cursors, task records, claims, path locks, pending journals and "
      .. "debris. One line per finding, 'CH: CODE: message'; exit 0 when clean, 1 with findings. "
      .. "See docs/fsck.md for the codes and what resolves each.",
    build = function(p)
      p:positional{ "channels", nargs = "*", metavar = "CH", help = "channels to check (default: all)" }
      p:option{ "--repair", action = "store_true",
                help = "remove old temp files and seq reservations, raise .seqhigh, remove a stale "
                  .. "_seq.lock; report the rest" }
      p:option{ "--json", action = "store_true", help = "print the report as JSON (indent 2, sorted keys)" }
      p:option{ "--verbose", action = "store_true", help = "end with a summary line, even when clean" }
      p:set_defaults{ handler = cmd_fsck }
    end })
end

return M
