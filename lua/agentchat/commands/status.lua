-- agentchat.commands.status: latest-wins status keys (docs/status-keys.md):
-- `status set`, `status get`, `status watch`. Exit 0, 2 for a bad key,
-- value or ttl (STATUS_*) and usage errors, 1 other errors, 130 on Ctrl-C.
local open = require "agentchat.commands.open"
local json = require "agentchat.json"

local M = {}

local PRETTY = { indent = 2, sort_keys = true, ensure_ascii = false }
local COMPACT = { sort_keys = true, ensure_ascii = false }

local function entry_json(e)
  return { agent = e.agent, key = e.key, value = e.value, ttl = e.ttl, set_at = e.set_at, age = e.age,
           expired = e.expired, seq = e.seq }
end

local function ttl_text(e)
  if not e.ttl then
    return "-"
  end
  return require("agentchat.pycompat").float_repr(e.ttl) .. "s"
end

local function cmd_set(args, ctx)
  if not open.agent(ctx, args, "as", "--as") then
    return 2
  end
  local ch <close>, rc = open.channel(args, ctx)
  if not ch then
    return rc
  end
  local e, res, code, exit = ch:status_set(args.key, args.value, { as = args.as, ttl = args.ttl })
  if not e then
    return ctx.fail(res, code, exit)
  end
  ctx.out(string.format("set %s=%s for %s in '%s' (#%d%s)\n", e.key, e.value, e.agent, args.channel, e.seq,
    e.ttl and (", ttl " .. ttl_text(e)) or ""))
  if res.warning then
    ctx.err("agent-chat: warning: " .. res.warning .. "\n")
  end
  return 0
end

local function cmd_get(args, ctx)
  local ch <close>, rc = open.channel(args, ctx)
  if not ch then
    return rc
  end
  local list, msg, code, exit = ch:status_get(args.key, { agent = args.agent })
  if not list then
    return ctx.fail(msg, code, exit)
  end
  if args.json then
    local out = {}
    for i, e in ipairs(list) do
      out[i] = entry_json(e)
    end
    ctx.out(json.dumps({ channel = args.channel, keys = json.array(out) }, PRETTY) .. "\n")
    return 0
  end
  if #list == 0 then
    ctx.out(string.format("(no status keys%s in '%s')\n", args.key and (" named " .. args.key) or "",
      args.channel))
    return 0
  end
  local age = require("agentchat.commands.protocols").age
  local rows = { { "AGENT", "KEY", "VALUE", "SET", "AGE", "TTL", "STATE" } }
  for _, e in ipairs(list) do
    rows[#rows + 1] = { e.agent, e.key, e.value, e.set_at, age(e.age), ttl_text(e),
                        e.expired and "expired" or "live" }
  end
  ctx.out(require("agentchat.commands.protocols").columns(rows))
  return 0
end

-- Each change as it is posted (ch:status_watch blocks without CPU in
-- between).
local function cmd_watch(args, ctx)
  local ch <close>, interval = open.waiting(args, ctx)
  if not ch then
    return interval
  end
  local out_ok = true
  local n, msg, code, exit = ch:status_watch{
    key = args.key, agent = args.agent, timeout = args.timeout, count = args.count, interval = interval,
    show = function(e)
      if args.json then
        ctx.out(json.dumps(entry_json(e), COMPACT) .. "\n")
      else
        ctx.out(string.format("%s %s %s=%s%s\n", e.set_at, e.agent, e.key, e.value,
          e.ttl and (" (ttl " .. ttl_text(e) .. ")") or ""))
      end
      out_ok = ctx.flush()
      return out_ok
    end,
  }
  if not n then
    return ctx.fail(msg, code, exit)
  end
  return out_ok and 0 or 1
end

function M.register(sub)
  sub:parser("status", {
    description = "Latest-wins status keys: one current value per agent and key, with its age and expiry; "
      .. "the history stays in the channel.",
    build = function(sp)
      local ss = sp:subparsers{ dest = "status_command", metavar = "COMMAND", required = true }
      ss:parser("set", { help = "set a status key for an agent", build = function(p)
        p:positional{ "channel", help = "channel name" }
        p:positional{ "key", help = "key (letters, digits, '.', '_', '-')" }
        p:positional{ "value", help = "value (one line of text)" }
        p:option{ "--as", dest = "as", required = true, help = "agent name" }
        p:option{ "--ttl", type = "float", help = "seconds until the value shows as expired (default: never)" }
        p:set_defaults{ handler = cmd_set }
      end })
      ss:parser("get", { help = "show the current value of each agent's keys", build = function(p)
        p:positional{ "channel", help = "channel name" }
        p:positional{ "key", nargs = "?", help = "only this key" }
        p:option{ "--agent", help = "only this agent's keys" }
        p:option{ "--json", action = "store_true", help = "print JSON" }
        p:set_defaults{ handler = cmd_get }
      end })
      ss:parser("watch", { help = "print status changes as they are set (blocks, no CPU)", build = function(p)
        p:positional{ "channel", help = "channel name" }
        p:option{ "--key", help = "only this key" }
        p:option{ "--agent", help = "only this agent's keys" }
        p:option{ "--timeout", type = "float", help = "stop after this many seconds (default: never)" }
        p:option{ "--count", type = open.int_type(1, "positive int"), type_name = "positive int",
                  help = "stop after this many changes" }
        p:option{ "--interval", type = "float",
                  help = "rescan period in seconds where change notification is unavailable (default: 5)" }
        p:option{ "--json", action = "store_true", help = "one JSON object per line" }
        p:set_defaults{ handler = cmd_watch }
      end })
    end })
end

return M
