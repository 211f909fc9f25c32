-- agentchat.commands.watch: `agent-chat watch CH --as NAME --script FILE`,
-- the command-line face of agentchat.watch (docs/watch.md).
--
-- The script is loaded like `run` loads one (full standard library, `arg`
-- and `...` are the --arg values) and returns its handlers. Exit
-- codes: 0 after --once or ctx.stop(), 1 when the script cannot be loaded
-- or a handler kept failing, 2 for usage errors, 130 on Ctrl-C (SIGTERM
-- stops the same way and is then re-raised by the host).
local ac = require "agentchat"
local py = require "agentchat.pycompat"
local watch = require "agentchat.watch"

local M = {}

-- argparse types: Python would say "invalid <type_name> value: 'x'".
local function positive_float(s)
  local v = py.float_parse(s)
  if v == nil or v ~= v or v <= 0 or v == math.huge then
    return nil, "positive float"
  end
  return v
end

local function non_negative_float(s)
  local v = py.float_parse(s)
  if v == nil or v ~= v or v < 0 or v == math.huge then
    return nil, "non-negative float"
  end
  return v
end

local non_negative_int = require("agentchat.commands.open").int_type(0, "non-negative int")

local function script_error(ctx, path, what)
  ctx.err("agent-chat: watch: " .. path .. " " .. what .. "\n")
  return 1
end

-- Load the script and return its handler table, or nil and the exit code.
local function load_handlers(args, ctx)
  local chunk, msg = loadfile(args.script)
  if not chunk then
    ctx.err("agent-chat: watch: " .. msg .. "\n")
    return nil, 1
  end
  local words = args.args or {}
  local a = { [0] = args.script }
  for i, v in ipairs(words) do
    a[i] = v
  end
  _G.arg = a
  local ok, value = xpcall(chunk, function(e)
    return debug.traceback(tostring(e), 2)
  end, table.unpack(words))
  if not ok then
    return nil, script_error(ctx, args.script, "failed: " .. tostring(value))
  end
  local handlers, why = watch.handlers(value, { tasks = args.tasks, locks = args.locks })
  if not handlers then
    return nil, script_error(ctx, args.script, why)
  end
  return handlers
end

-- The --dead-letter channel, false without one, or nil and the exit code.
local function dead_letter_channel(root, args, ctx)
  if not args.dead_letter then
    return false
  end
  local ch, msg, code, exit = root:channel(args.dead_letter)
  if not ch then
    return nil, ctx.fail(msg, code, exit)
  end
  return ch
end

local function cmd_watch(args, ctx)
  if args.root then
    ac.default_root = args.root      -- for scripts that call ac.open()
  end
  local root, msg, code, exit = ac.open(args.root)
  if not root then
    return ctx.fail(msg, code, exit)
  end
  local ch <close>, cmsg, ccode, cexit = root:channel(args.channel)
  if not ch then
    return ctx.fail(cmsg, ccode, cexit)
  end
  -- --script NAME that is not a file: look in the config's workflows.path.
  local script, wmsg, wcode, wexit = require("agentchat.config").resolve_workflow(args.script, args.root)
  if not script then
    return ctx.fail(wmsg, wcode, wexit)
  end
  args.script = script
  -- --on-error dead-letter names the channel the pointers go to; it must
  -- exist before anything is handled.
  if (args.on_error == "dead-letter") ~= (args.dead_letter ~= nil) then
    return ctx.fail("watch: --dead-letter CHANNEL goes with --on-error dead-letter, and only with it",
      "USAGE", 2)
  end
  local dead <close>, drc = dead_letter_channel(root, args, ctx)
  if dead == nil then
    return drc
  end
  local handlers, rc = load_handlers(args, ctx)
  if not handlers then
    return rc
  end
  local reason
  rc, reason = watch.run(ch, {
    as = args.as, handlers = handlers, once = args.once, interval = args.interval,
    tasks = args.tasks, locks = args.locks, retries = args.retries, backoff = args.backoff,
    args = args.args, on_error = args.on_error, dead_letter = dead or nil,
  })
  if reason == "signal" then
    return ctx.fail("cancelled by user", "INTERRUPTED")
  end
  return rc
end

function M.register(sub)
  sub:parser("watch", {
    description = "Call a Lua script's handler for each new message for NAME (and, if asked, each task "
      .. "or lock change); NAME's cursor moves past a message only after its handler returned, so a "
      .. "crash delivers it again. Blocks without CPU between messages. See docs/watch.md.",
    build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:option{ "--as", dest = "as", metavar = "NAME", required = true,
                help = "the agent the script reads as (its cursor)" }
      p:option{ "--script", metavar = "FILE", required = true,
                help = "Lua file returning a handler function or table (a bare NAME that is no file is "
                  .. "looked up as NAME or NAME.lua in the config's workflows.path)" }
      p:option{ "--interval", type = positive_float, type_name = "positive float", metavar = "S",
                help = "seconds between rescans and 'tick' calls (default: the script's interval, else 5)" }
      p:option{ "--tasks", action = "store_true", help = "deliver task and lease changes (audit messages)" }
      p:option{ "--locks", action = "store_true", help = "deliver path-lock changes (audit messages)" }
      p:option{ "--once", action = "store_true", help = "handle what is unread, tick once, then exit" }
      p:option{ "--retries", type = non_negative_int, type_name = "non-negative int", metavar = "N",
                default = watch.DEFAULT_RETRIES,
                help = "retries of a failing handler before giving up (default: 3)" }
      p:option{ "--backoff", type = non_negative_float, type_name = "non-negative float", metavar = "S",
                default = watch.DEFAULT_BACKOFF,
                help = "seconds before the first retry, doubled each time (default: 1)" }
      p:option{ "--on-error", choices = watch.ON_ERROR, default = "stop",
                help = "what a message whose handler still fails after the retries does: stop (the default: "
                  .. "exit 1, the cursor stays before it), skip (post a watch.skipped record of it and go on) "
                  .. "or dead-letter (post a pointer to it in --dead-letter CHANNEL and go on)" }
      p:option{ "--dead-letter", metavar = "CHANNEL",
                help = "with --on-error dead-letter: the channel the pointers go to" }
      p:option{ "--arg", dest = "args", action = "append", metavar = "VALUE",
                help = "an argument for the script (repeatable): its `...`, `arg` and ctx.args" }
      p:set_defaults{ handler = cmd_watch }
    end })
end

return M
