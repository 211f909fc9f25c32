-- agentchat.commands.scripting: `agent-chat run SCRIPT [ARGS...]`.
--
-- The script runs in this process with the full Lua standard library (as
-- lua.c would run it), `arg` built like lua.c builds it (arg[0] is the
-- script, arg[1..n] its arguments, negative indices the interpreter part)
-- and the arguments also passed as `...`. `require "agentchat"` and
-- `require "cjson"` work. A script that raises prints its traceback and
-- exits 1, except when the error is an interrupt: the INTERRUPTED error
-- the host raises on Ctrl-C or SIGTERM, or any error raised after one
-- arrived (a script's assert() on a call that returned nil, "cancelled by
-- user", "INTERRUPTED"): then it prints "agent-chat: cancelled by user" and
-- exits 130, as every other command does.
local ac = require "agentchat"
local errors = require "agentchat.errors"
local sys = require "agentchat.sys"

local M = {}

local INTERRUPTED = {}

local function traceback(e)
  if (type(e) == "table" and e.code == "INTERRUPTED") or sys.interrupted() then
    return INTERRUPTED
  end
  if type(e) == "table" and e.code and e.message then
    e = e.code .. ": " .. e.message
  end
  return debug.traceback(tostring(e), 2)
end

--- Handle `run` given the full argv and the index of the command word.
function M.raw(command, argv, at, root, ctx)
  if command ~= "run" then
    return ctx.fail(command .. " is not available in this build", "USAGE", 2)
  end
  local script = argv[at + 1]
  if script == nil then
    io.stderr:write("agent-chat: USAGE: run: the following arguments are required: script"
      .. " (see 'agent-chat run -h')\n")
    return 2
  end
  if root then
    ac.default_root = root
  end
  local a = {}
  for i = 0, at do
    a[i - at - 1] = argv[i]      -- arg[-1] = "run", arg[-2] = ..., down to the program
  end
  a[0] = script
  local n = 0
  for i = at + 2, #argv do
    n = n + 1
    a[n] = argv[i]
  end
  _G.arg = a
  local chunk, msg = loadfile(script ~= "-" and script or nil)
  if not chunk then
    io.stderr:write("agent-chat: " .. msg .. "\n")
    return 1
  end
  local ok, err = xpcall(chunk, traceback, table.unpack(a, 1, n))
  io.stdout:flush()
  if err == INTERRUPTED then
    io.stderr:write(errors.line("INTERRUPTED", "cancelled by user") .. "\n")
    return errors.exit_for("INTERRUPTED")
  end
  if not ok then
    io.stderr:write("agent-chat: " .. tostring(err) .. "\n")
    return 1
  end
  return 0
end

function M.register(sub)
  sub:parser("run", { description = "Run SCRIPT with the full Lua 5.4 standard library and the agentchat modules; "
      .. "arguments after it are passed through untouched.", build = function(p)
      p:positional{ "script", help = "Lua file ('-' reads stdin)" }
      p:positional{ "args", nargs = "...", help = "arguments for the script" }
      p:set_defaults{ handler = function(_, ctx)
        return ctx.fail("run must be the command word", "USAGE", 2)
      end }
    end })
end

return M
