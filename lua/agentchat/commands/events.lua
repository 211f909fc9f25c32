-- agentchat.commands.events: `event post` and `event read` (docs/format.md 2.3).
local open = require "agentchat.commands.open"
local events = require "agentchat.events"

local M = {}

local function open_channel(args, ctx)
  return open.channel(args, ctx)
end

-- Repeatable --primitives, each value a comma list (events.build trims and
-- drops blanks).
local function split_items(values)
  if not values then
    return nil
  end
  local items = {}
  for _, v in ipairs(values) do
    for item in (v .. ","):gmatch("([^,]*),") do
      items[#items + 1] = item
    end
  end
  return items
end

local function cmd_post(args, ctx)
  local spec = { agent = args.from, harness = args.harness, type = args.type, status = args.status,
                 detail = args.detail, primitives = split_items(args.primitives) }
  -- The event is checked before the channel name and the channel itself,
  -- so a bad event on a bad channel reports the event (exit 2).
  local obj, msg, code, exit = events.validate(events.build(spec))
  if not obj then
    return ctx.fail(msg, code, exit)
  end
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  obj, msg, code, exit = events.post(ch, spec)
  if not obj then
    return ctx.fail(msg, code, exit)
  end
  ctx.out("posted event " .. obj.event .. " -> " .. args.channel .. "\n")
  return 0
end

local function cmd_read(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local list, msg, code, exit = events.read(ch, { type = args.type })
  if list == nil then
    return ctx.fail(msg, code, exit)
  end
  local out = {}
  for _, e in ipairs(list) do
    out[#out + 1] = events.format(e.event) .. "\n"
  end
  ctx.out(table.concat(out))
  if code then
    -- The lines before the first invalid event stay printed (docs/format.md 2.3).
    return ctx.fail(msg, code, exit)
  end
  return 0
end

function M.register(sub)
  sub:parser("event", {
    description = "Adapter-neutral events (schema v1): capabilities and status.",
    build = function(ev)
      local es = ev:subparsers{ dest = "event_command", metavar = "COMMAND", required = true }
      es:parser("post", { help = "post an event", build = function(p)
        p:positional{ "channel", help = "channel name" }
        p:option{ "--from", required = true, help = "agent name" }
        p:option{ "--type", required = true, choices = { "capability", "status" }, help = "event type" }
        p:option{ "--harness", required = true, help = "agent host (claude-code, codex, ...)" }
        p:option{ "--status", choices = events.STATUSES, help = "status (status events)" }
        p:option{ "--detail", help = "free text detail (status events)" }
        p:option{ "--primitives", action = "append",
                  help = "supported primitives (capability events; repeatable, comma lists allowed)" }
        p:set_defaults{ handler = cmd_post }
      end })
      es:parser("read", { help = "print the channel's events, one JSON object per line", build = function(p)
        p:positional{ "channel", help = "channel name" }
        p:option{ "--type", choices = { "capability", "status" }, help = "only this type" }
        p:set_defaults{ handler = cmd_read }
      end })
    end })
end

return M
