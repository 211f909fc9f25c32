-- agentchat.cli: the command line. Builds the grammar (Python-compatible,
-- see agentchat.argparse), dispatches to the command modules and turns
-- failures into one stderr line and the exit code of docs/format.md 2.5.
-- Not loaded for a command line a family parses without it (M.parse).
local argparse = require("agentchat.lazy")("agentchat.argparse")
local errors = require "agentchat.errors"

local M = {}

-- Every command, in --help order: its name, its family module and its
-- one-line help. A family module is loaded only when one of its commands
-- runs (or is shown with -h): its register(subparsers) defines each command
-- with a `build` function and a `handler` default (handler(args, ctx) ->
-- exit code). Start-up is most of a command's time, so this matters.
M.commands = {
  { "init", "channels", "create a channel" },
  { "channels", "channels", "list channels with counts and last message" },
  { "roster", "channels", "show a channel's topic, members and size" },
  { "post", "post", "post a message" },
  { "read", "messages", "print unread messages and move the cursor" },
  { "wait", "messages", "block until a relevant message arrives" },
  { "peek", "messages", "show the last messages without touching cursors" },
  { "claim", "channels", "legacy: claim a task-<id>.md marker by renaming it" },
  { "ack", "receipts", "acknowledge a message addressed to you" },
  { "receipts", "receipts", "show who read and acked a message" },
  { "inbox", "receipts", "print unread messages across channels and move the cursors" },
  { "request", "protocols", "post a typed request (shutdown, plan approval) and wait for the response" },
  { "await", "protocols", "wait for the responses to requests posted earlier" },
  { "respond", "protocols", "approve or reject a request addressed to you" },
  { "team", "protocols", "members with their status, lifecycle and silence" },
  { "doctor", "doctor", "find deadlocks and stalls: who waits for whom, through what" },
  { "lock", "locks", "lock workspace paths for a lease" },
  { "check", "locks", "show the locks overlapping paths" },
  { "unlock", "locks", "release a path lock" },
  { "recover", "locks", "take over an expired path lock" },
  { "recover-pending", "locks", "resolve an interrupted path-lock change" },
  { "state", "state", "print the derived state summary (state.md)" },
  { "compact", "state", "write state.md and post state.compacted" },
  { "task", "tasks", "task board: create, claim, update, finish tasks" },
  { "event", "events", "post and read capability/status events" },
  { "status", "status", "latest-wins status keys per agent: set, get, watch" },
  { "import", "import", "import a team mailbox, a receipt-bus folder, a Claude Code team or a folder root into a channel" },
  { "export", "export", "copy channels to a folder in the folder format" },
  { "trim", "export", "archive a channel to a folder, then remove its old messages" },
  { "bridge", "bridge", "carry messages between a channel and a Claude Code agent team, live" },
  { "run", "scripting", "run a Lua script with the agentchat API" },
  { "watch", "watch", "run a Lua handler for each new message (zero-token loop)" },
  { "repl", "repl", "interactive Lua with the agentchat API" },
  { "serve", "serve", "serve a read-only live web view of the channels" },
  { "hook", "hooks", "host lifecycle hooks: session-start, prompt, stop" },
  { "config", "config", "show the effective settings and where each comes from" },
  { "fsck", "fsck", "check channel folders for corruption; --repair fixes the safe things" },
}

-- Build one command from its family: run the family's register() against a
-- stand-in that only takes the definition of `name`.
local function build_command(family, name, p)
  local stub = setmetatable({}, { __index = function()
    return function() end
  end })
  local only = {}
  function only.parser(_, n, opts)
    if n ~= name then
      return stub
    end
    p.description = opts.description or p.description
    p.tag = opts.tag or p.tag
    if opts.build then
      opts.build(p)
    end
    return p
  end
  require("agentchat.commands." .. family).register(only)
end

local DESCRIPTION = [[
Peer agent sessions coordinate by exchanging Markdown message files in
shared channel folders. Drop-in compatible with agent-chat-plugin.]]

local EPILOG = [[
Root: --root (before the command), else $AGENT_CHAT_ROOT, else the user
config's root (see 'agent-chat config'), else ~/agent-chat.
Store: --store etcd://HOST:PORT[,...]/PREFIX (before the command), else
$AGENT_CHAT_STORE, else the root or user config's store, else the root folder.
Run 'agent-chat COMMAND -h' for the options of a command.]]

function M.build_parser()
  local p = argparse.parser{ prog = "agent-chat", description = DESCRIPTION, epilog = EPILOG }
  p:option{ "--root", metavar = "ROOT",
            help = "chat root folder (default: $AGENT_CHAT_ROOT or ~/agent-chat)" }
  p:option{ "--store", metavar = "URL",
            help = "keep the state in etcd: etcd://HOST:PORT[,HOST:PORT...]/PREFIX "
              .. "(default: $AGENT_CHAT_STORE, the config's store, else the root folder)" }
  p:option{ "--version", action = "store_true", help = "print the version and exit" }
  local sub = p:subparsers{ dest = "command", metavar = "COMMAND", required = true,
                            title = "commands" }
  for _, c in ipairs(M.commands) do
    local name, family = c[1], c[2]
    sub:lazy(name, { help = c[3], build = function(cp)
      build_command(family, name, cp)
    end })
  end
  return p
end

-- The family of command `name`, or nil.
local function family_of(name)
  for _, c in ipairs(M.commands) do
    if c[1] == name then
      return c[2]
    end
  end
  return nil
end

--- parser:parse(argv) of the whole grammar (M.build_parser), without
--- building it for the usual command line: `[--root R | --root=R | --store
--- S | --store=S]... COMMAND ARGS...`, COMMAND spelled in full and no R or S
--- starting with '-'. There Python's top-level parser takes the last --root
--- (and --store, ours), hands ARGS to
--- COMMAND's parser untouched (whatever they hold) and adds what that
--- returns, so only COMMAND's parser is made (prog "agent-chat COMMAND", as
--- the whole parser names it; it has no parent). Anything else, and ARGS
--- the command leaves unrecognized (the top level's error) or holding an
--- argument starting with "--=" (which the top level finds ambiguous),
--- goes through the whole parser. cli_parse_spec checks that both agree,
--- the families' direct shortcuts too.
function M.parse(argv)
  local i, root, store = 1, nil, nil
  while true do
    local a, v = argv[i], argv[i + 1]
    if a == "--root" and v and v:sub(1, 1) ~= "-" then
      root, i = v, i + 2
    elseif a and a:sub(1, 7) == "--root=" then
      root, i = a:sub(8), i + 1
    elseif a == "--store" and v and v:sub(1, 1) ~= "-" then
      store, i = v, i + 2
    elseif a and a:sub(1, 8) == "--store=" then
      store, i = a:sub(9), i + 1
    else
      break
    end
  end
  local name = argv[i]
  local family = name and family_of(name)
  if family then
    local rest = table.move(argv, i + 1, #argv, 1, {})
    for _, a in ipairs(rest) do
      if a:sub(1, 3) == "--=" then
        family = nil
      end
    end
    -- A family may recognise its simplest lines itself (its direct(name,
    -- rest): the args its parser would return, else nil), without
    -- argparse: a hook runs on every prompt of every agent.
    local function whole(args)
      local out = { root = root, store = store, version = false, command = name }
      for k, v in pairs(args) do
        out[k] = v
      end
      return out
    end
    local direct = family and require("agentchat.commands." .. family).direct
    local args = direct and direct(name, rest)
    if args then
      return whole(args)
    end
    if family then
      local p = argparse.parser{ prog = "agent-chat " .. name }
      build_command(family, name, p)
      local extras
      args, extras = p:parse_known(rest)
      if args == nil then
        return nil, extras
      elseif #extras == 0 then
        return whole(args)
      end
    end
  end
  return M.build_parser():parse(argv)
end

--- One stderr line for an argparse error (docs/format.md 2.5: every failure is
--- one line): "agent-chat: USAGE: post: <argparse message> (see 'agent-chat
--- post -h')". The argparse text is Python's, word for word.
function M.usage_line(perr)
  local prog = perr.prog or "agent-chat"
  local sub = prog:match("^%S+%s+(.+)$")
  return errors.one_line(string.format("agent-chat: USAGE: %s%s (see '%s -h')",
    sub and (sub .. ": ") or "", perr.message, prog)) .. "\n"
end

-- What a terminal shows of a control character that a title or a body
-- carries (an escape sequence could recolour, retitle or clear the screen,
-- or hide text): C0 controls other than tab and newline, DEL and the C1
-- controls as \xNN / \u00NN. Files and pipes get the bytes as they are.
local function terminal_safe(s)
  s = s:gsub("[%z\1-\8\11-\31\127]", function(c)
    return string.format("\\x%02x", c:byte())
  end)
  return (s:gsub("\194([\128-\159])", function(c)
    return string.format("\\u%04x", c:byte())
  end))
end
M.terminal_safe = terminal_safe

-- Output helpers: everything goes through these so a failed write (a closed
-- pipe, a full disk) is noticed before a cursor moves.
local function make_ctx()
  local ctx = {}
  local tty = require("agentchat.sys").isatty(1)
  function ctx.out(s)
    io.stdout:write(tty and terminal_safe(s) or s)
  end
  function ctx.err(s)
    io.stderr:write(s)
  end
  --- Flush stdout; returns true, or false after reporting the failure.
  function ctx.flush()
    local ok, msg = io.stdout:flush()
    if not ok then
      io.stderr:write("agent-chat: IO_ERROR: could not write output: " .. tostring(msg) .. "\n")
      return false
    end
    return true
  end
  --- Report `nil, message, code, exit` and return the exit code.
  function ctx.fail(message, code, exit)
    code = code or "ERROR"
    io.stdout:flush()
    io.stderr:write(errors.line(code, message or "unknown error") .. "\n")
    return errors.exit_for(code, exit)
  end
  return ctx
end

-- `agent-chat [--root R] run SCRIPT ARGS...` passes ARGS through untouched
-- (argparse would claim options such as -h), so it is recognised first; so
-- is `--version` before the command (argparse would want a command first).
local function find_raw_command(argv)
  local i = 1
  while argv[i] do
    local a = argv[i]
    if a == "--root" or a == "--store" then
      i = i + 2
    elseif a:sub(1, 7) == "--root=" or a:sub(1, 8) == "--store=" then
      i = i + 1
    elseif a == "run" or a == "--version" then
      return a, i
    else
      return nil
    end
  end
  return nil
end

-- Commands that run the user's Lua code, whose finalizers must run when
-- the state is closed (the host leaves the state of the others to the end
-- of the process, src/lua_host.c).
local USER_CODE = { run = true, watch = true, repl = true }

-- The exit code, and the command when it is known.
local function run_main(argv)
  local ctx = make_ctx()
  local raw, at = find_raw_command(argv)
  if raw == "--version" then
    ctx.out("agent-chat " .. require("agentchat").version .. "\n")
    return ctx.flush() and 0 or 1
  end
  if raw and argv[at + 1] ~= "-h" and argv[at + 1] ~= "--help" then
    local scripting = require "agentchat.commands.scripting"
    local root
    for i = 1, at - 1 do
      if argv[i] == "--root" then
        root = argv[i + 1]
      elseif argv[i]:sub(1, 7) == "--root=" then
        root = argv[i]:sub(8)
      elseif argv[i] == "--store" then
        require("agentchat").default_store = argv[i + 1]
      elseif argv[i]:sub(1, 8) == "--store=" then
        require("agentchat").default_store = argv[i]:sub(9)
      end
    end
    return scripting.raw(raw, argv, at, root, ctx), raw
  end

  local args, perr = M.parse({ table.unpack(argv, 1) })
  if not args then
    if perr.kind == "help" then
      io.stdout:write(perr.text)
      return ctx.flush() and 0 or 1
    end
    if perr.parser and perr.parser.tag and perr.parser.tag.format_error then
      io.stderr:write(perr.parser.tag.format_error(perr))
    else
      io.stderr:write(M.usage_line(perr))
    end
    return 2
  end
  if args.store ~= nil then
    require("agentchat").default_store = args.store   -- every ac.open() of the command
  end
  local code = args.handler(args, ctx)
  if not ctx.flush() then
    return 1, args.command
  end
  return code or 0, args.command
end

--- Entry point used by the host: argv[0] is the program name. Returns the
--- exit code and whether the state may be left unclosed (no user code ran
--- that a finalizer could belong to; the session leases of the etcd stores
--- opened are ended here).
function M.main(argv)
  local ok, code, command = xpcall(run_main, function(e)
    if errors.is_error(e) or (type(e) == "table" and e.code) then
      return e
    end
    return debug.traceback(tostring(e), 2)
  end, argv)
  if ok then
    if USER_CODE[command] then
      return code, false
    end
    local ac = package.loaded["agentchat"]   -- not loaded: no store was opened
    if ac then
      ac.end_sessions()
    end
    return code, true
  end
  if type(code) == "table" then
    -- A domain error raised through the stack (e.g. Ctrl-C in Lua code).
    io.stdout:flush()
    io.stderr:write(errors.line(code.code, code.message) .. "\n")
    return code.exit or errors.exit_for(code.code)
  end
  local debug_env = os.getenv("AGENT_CHAT_DEBUG")
  if debug_env and debug_env ~= "" and debug_env ~= "0" then
    io.stderr:write("agent-chat: internal error: " .. tostring(code) .. "\n")
  else
    local first = tostring(code):match("^[^\n]*")
    io.stderr:write("agent-chat: INTERNAL_ERROR: " .. first
      .. " (set AGENT_CHAT_DEBUG=1 for a traceback)\n")
  end
  return 1
end

return M
