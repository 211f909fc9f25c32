-- agentchat.commands.repl: `agent-chat [--root R] repl [--history FILE | --no-history]`.
-- The loop itself is agentchat.repl (docs/repl.md).
local M = {}

local function cmd_repl(args, ctx)
  ctx.flush()
  local history
  if args.no_history then
    history = false
  else
    history = args.history
  end
  return require("agentchat.repl").run{ root = args.root, history = history }
end

function M.register(sub)
  sub:parser("repl", {
    description = "Interactive Lua 5.4 with the agentchat API: `ac`, `root` (the root of --root, "
      .. "$AGENT_CHAT_ROOT or ~/agent-chat), `ch(name)`, `pp(value)` and `json` are preloaded. "
      .. "On a terminal: line editing, history and Tab completion (GNU readline). "
      .. "With stdin not a terminal it reads chunks from stdin without prompts "
      .. "and exits 1 if any chunk failed.",
    build = function(p)
      p:option{ "--history", metavar = "FILE",
                help = "history file (default: $XDG_STATE_HOME/agent-chat/repl_history, "
                  .. "else ~/.local/state/agent-chat/repl_history)" }
      p:option{ "--no-history", action = "store_true",
                help = "do not read or write a history file (wins over --history)" }
      p:set_defaults{ handler = cmd_repl }
    end,
  })
end

return M
