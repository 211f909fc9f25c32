-- agentchat.commands.state: `state` and `compact` (docs/format.md 2.3, 3.8), and
-- `state --template FILE.lua`, which renders with a user template in the
-- sandbox (agentchat.sandbox).
local open = require "agentchat.commands.open"
local json = require "agentchat.json"
local state = require "agentchat.state"
local sys = require "agentchat.sys"

local M = {}

local EXIT = 1
local PRETTY = { indent = 2, sort_keys = true, ensure_ascii = true }

-- The channel, with the state command's codes for a bad or missing one.
-- A channel folder whose _meta.json is missing is read as the Python tool
-- reads it (empty topic and members); only a missing folder is not found.
local OPEN = {
  open = function(root, name)
    return root:channel(name, { bare = true })
  end,
  invalid = { "STATE_INVALID_CHANNEL", EXIT },
  missing = function(_, name)
    return "channel directory not found: '" .. name .. "'", "STATE_CHANNEL_NOT_FOUND", EXIT
  end,
}

local function open_channel(args, ctx)
  return open.channel(args, ctx, OPEN)
end

-- The Markdown: the built-in template, or the user's in the sandbox.
local function render(data, args)
  if not args.template then
    return state.render(data)
  end
  local source, err = sys.read_file(args.template)
  if not source then
    return nil, "cannot read template " .. args.template .. ": " .. tostring(err), "TEMPLATE_UNREADABLE",
      EXIT
  end
  local text, msg, code = require("agentchat.sandbox").render(source, args.template, data)
  if not text then
    -- Say which file failed, once (Lua's own messages start with it).
    if msg:sub(1, #args.template + 1) ~= args.template .. ":" then
      msg = args.template .. ": " .. msg
    end
    return nil, msg, code, EXIT
  end
  return text
end

-- Both commands: gather, render (before anything is written, so a failing
-- template changes nothing), then maybe write state.md and audit.
local function run(args, ctx, write, done_line)
  if args.template and args.json then
    return ctx.fail("--template renders Markdown; it cannot be combined with --json", "USAGE", 2)
  end
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  -- No --template (and no --json): the config's state.template, if any.
  if args.template == nil and not args.json then
    local template, why, wcode, wexit = require("agentchat.config").get("template", args.root)
    if why then
      return ctx.fail(why, wcode, wexit)
    end
    args.template = template
  end
  local data, msg, code, exit = state.gather(ch, { strict = args.strict })
  if not data then
    return ctx.fail(msg, code, exit)
  end
  local text
  if write or not args.json then
    text, msg, code, exit = render(data, args)
    if not text then
      return ctx.fail(msg, code, exit)
    end
  end
  if write then
    local ok
    ok, msg, code, exit = state.write(ch, data, text, { actor = args.actor, audit = not args.no_audit })
    if not ok then
      return ctx.fail(msg, code, exit)
    end
  end
  if args.json then
    ctx.out(json.dumps(data, PRETTY) .. "\n")
  elseif write then
    ctx.out(done_line(data))
  else
    ctx.out(text)
  end
  return 0
end

local function cmd_state(args, ctx)
  return run(args, ctx, args.write, function()
    return "compacted state for " .. args.channel .. " -> " .. args.channel .. "/state.md\n"
  end)
end

local function cmd_compact(args, ctx)
  return run(args, ctx, true, function(data)
    local n = state.counts(data)
    return string.format("compacted state for %s -> %s/state.md (open_tasks=%d, locks=%d, decisions=%d)\n",
      args.channel, args.channel, n.open_tasks, n.locks, n.decisions)
  end)
end

local function common(p)
  p:positional{ "channel", help = "channel name" }
  p:option{ "--as", "--from", "--actor", dest = "actor",
            help = "agent the state.compacted message comes from (default: system)" }
  p:option{ "--no-audit", action = "store_true", help = "do not post the state.compacted message" }
  p:option{ "--json", action = "store_true", help = "print the state as JSON (indent 2, sorted keys)" }
  p:option{ "--strict", action = "store_true",
            help = "fail on a malformed task or lock record instead of leaving it out" }
  p:option{ "--template", metavar = "FILE.lua",
            help = "render the Markdown with this Lua template (sandboxed; see docs/state-templates.md)" }
end

function M.register(sub)
  sub:parser("state", {
    description = "Print the channel's derived state summary (state.md): goal, decisions, open tasks, "
      .. "blockers, owners, path locks and verification evidence.",
    build = function(p)
      common(p)
      p:option{ "--write", "--save", dest = "write", action = "store_true",
                help = "also write <channel>/state.md (atomically) and post state.compacted" }
      p:set_defaults{ handler = cmd_state }
    end })
  sub:parser("compact", {
    description = "Write <channel>/state.md (atomically) and post a state.compacted message.",
    build = function(p)
      common(p)
      p:set_defaults{ handler = cmd_compact }
    end })
end

return M
