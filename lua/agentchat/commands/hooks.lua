-- agentchat.commands.hooks: `agent-chat hook session-start|prompt|stop`,
-- the host lifecycle hooks (docs/format.md 4, Hooks), byte for byte.
--
-- A hook tells the agent it has unread peer messages: it counts the
-- relevant messages above the agent's cursor in each channel, never writes
-- a cursor, and never fails: whatever goes wrong (no root, a broken
-- channel, bad input), it prints nothing more and exits 0, because a
-- failing hook would get in the way of the host it runs in.
--
-- Two settings change that, both off by default (docs/config.md, hooks.*):
-- hooks.kinds counts only some kinds of messages (peer messages rather
-- than audit traffic), and hooks.stop = block makes the stop hook keep the
-- agent's turn going while messages for it are unread, with Claude Code's
-- Stop-hook decision ({"decision":"block","reason":...} on stdout, the
-- reason going to the model); when the hook input on stdin says
-- stop_hook_active (the turn already continues because of a stop hook) it
-- never blocks again, so it cannot loop.
local json = require "agentchat.json"
local sys = require "agentchat.sys"

local M = {}

M.KINDS = { "session-start", "prompt", "stop" }

-- Summary bounds in characters (code points).
local BOUND = { ["session-start"] = 190, prompt = 190, stop = 175 }
local ELLIPSIS = "\u{2026}"
local STOP_JSON = { separators = { ",", ":" }, ensure_ascii = true }
local BLOCK_JSON = { separators = { ",", ":" }, ensure_ascii = true, sort_keys = true }
local STDIN_CAP = 1024 * 1024

--- The identity, or nil when unset (empty or blank counts as unset).
function M.identity(env)
  local name = sys.strip(env.AGENT_CHAT_NAME or "")
  return name ~= "" and name or nil
end

--- The channels the hook looks at: the listed ones in their order, else
--- every channel of the root sorted by name; names that are invalid or
--- have no channel are dropped. Returns a list of open channels.
--- env.channels (a list, from the config) stands for AGENT_CHAT_CHANNELS.
function M.channels(root, env)
  local names = env.channels or sys.comma_list(env.AGENT_CHAT_CHANNELS)
  if #names == 0 then
    names = root:channel_names() or {}
  end
  local out = {}
  for _, name in ipairs(names) do
    local ok, ch = pcall(root.channel, root, name)
    if ok and ch then
      out[#out + 1] = ch
    end
  end
  return out
end

--- "#<channel> (<count>)" for every channel with unread messages for `name`
--- (of `kinds`, a list, when given), and their channels.
function M.unread_items(channels, name, kinds)
  local items, names = {}, {}
  if kinds and #kinds == 0 then
    kinds = nil
  end
  for _, ch in ipairs(channels) do
    -- printed: the count without a record per message
    local ok, batch = pcall(ch.fetch, ch, { as = name, kinds = kinds, printed = true })
    if ok and batch and batch.n > 0 then
      items[#items + 1] = "#" .. ch.name .. " (" .. batch.n .. ")"
      names[#names + 1] = ch.name
    end
  end
  return items, names
end

local function ulen(s)
  return utf8.len(s) or #s
end

-- The first n characters of s.
local function ucut(s, n)
  local stop = utf8.offset(s, n + 1)
  return stop and s:sub(1, stop - 1) or s
end

--- Join items with ", " within `bound` characters (docs/format.md 4, Summary
--- bound): whole items while they fit, then ", …" when some were left out.
--- A first item longer than the bound is cut to bound - 1 characters + "…"
--- and stands alone: no ", …" follows it, however many items come after.
function M.bounded(items, bound)
  local taken, len = {}, 0
  for _, item in ipairs(items) do
    local grown = len + (#taken > 0 and 2 or 0) + ulen(item)
    if grown > bound then
      if #taken == 0 then
        return ucut(item, bound - 1) .. ELLIPSIS
      end
      taken[#taken + 1] = ELLIPSIS
      break
    end
    taken[#taken + 1] = item
    len = grown
  end
  return table.concat(taken, ", ")
end

-- The stop hook's block decision for unread messages of `kinds`, or nil
-- when there are none.
local function block_decision(channels, name, kinds)
  local items, names = M.unread_items(channels, name, kinds)
  if #items == 0 then
    return nil
  end
  local flags = ""
  for _, k in ipairs(kinds) do
    flags = flags .. " --kind " .. k
  end
  local how = #names == 1
    and string.format("agent-chat read %s --as %s%s", names[1], name, flags)
    or string.format("agent-chat inbox --as %s --channels %s%s", name, table.concat(names, ","), flags)
  return json.dumps({ decision = "block", reason = "[agent-chat] " .. name
    .. " has unread peer messages: " .. M.bounded(items, BOUND.stop) .. ". Read them before you end "
    .. "your turn (" .. how .. ", or /agent-chat) and answer what needs an answer." }, BLOCK_JSON)
end

--- The line hook `kind` prints, or nil for none. env.kinds (a list):
--- count only those kinds; env.stop == "block": the stop hook blocks (see
--- above) unless env.stop_hook_active.
function M.message(kind, root, env)
  local name = M.identity(env)
  if not name then
    -- Any channel of the root counts here, whatever AGENT_CHAT_CHANNELS
    -- lists: the notice is about the identity, not about those channels.
    if kind == "session-start" and #(root:channel_names() or {}) > 0 then
      return "[agent-chat] Inbox hook disabled: identity is unset; set AGENT_CHAT_NAME."
    end
    return nil
  end
  local channels = M.channels(root, env)
  if #channels == 0 then
    return nil
  end
  if kind == "stop" and env.stop == "block" and not env.stop_hook_active then
    local kinds = env.kinds and #env.kinds > 0 and env.kinds or { "message" }
    local decision = block_decision(channels, name, kinds)
    if decision then
      return decision
    end
  end
  local items = M.unread_items(channels, name, env.kinds)
  if #items == 0 then
    return nil
  end
  local summary = M.bounded(items, BOUND[kind])
  if kind == "stop" then
    return json.dumps({ systemMessage = "[agent-chat] Your turn is ending with unread peer messages: "
      .. summary .. ". Run /agent-chat to read/reply." }, STOP_JSON)
  end
  return "[agent-chat] " .. name .. " has unread peer messages: " .. summary
    .. ". Run /agent-chat to read/reply."
end

-- The root, identity and channels: $AGENT_CHAT_ROOT, $AGENT_CHAT_NAME and
-- $AGENT_CHAT_CHANNELS, else the config files' root, identity.name and
-- channels (docs/config.md). A broken config file is skipped (lenient):
-- a hook never fails.
local function settings(args)
  local cfg = require("agentchat.config").load{ root = args.root, lenient = true }
  if not cfg or not cfg.root then
    return nil
  end
  return cfg.root, { AGENT_CHAT_NAME = cfg.name, channels = cfg.channels, kinds = cfg.hook_kinds,
                     stop = cfg.stop_hook }
end

-- Whether the hook input on stdin (Claude Code's JSON: session_id,
-- hook_event_name, stop_hook_active, ...) says the turn already continues
-- because of a stop hook. Read only by a stop hook that may block, and
-- never from a terminal; anything unreadable counts as false.
local function stop_hook_active()
  if sys.isatty(0) then
    return false
  end
  local data = sys.read_stdin(STDIN_CAP)
  local input = data and json.loads(data)
  return type(input) == "table" and input.stop_hook_active == true
end

local function cmd_hook(args, ctx)
  local ok, line = pcall(function()
    local path, env = settings(args)
    if env and args.kind == "stop" and env.stop == "block" then
      env.stop_hook_active = stop_hook_active()
    end
    local root = path and require("agentchat").open(path)
    return root and M.message(args.kind, root, env)
  end)
  if ok and line then
    ctx.out(line .. "\n")
  end
  return 0
end

--- cli.parse's shortcut: `hook KIND` alone, as the parser below returns
--- it (nil for anything else, which the parser then reads).
function M.direct(_, rest)
  local kind = rest[1]
  if #rest == 1 and (kind == "session-start" or kind == "prompt" or kind == "stop") then
    return { kind = kind, handler = cmd_hook }
  end
  return nil
end

function M.register(sub)
  sub:parser("hook", {
    description = "Host lifecycle hooks (docs/format.md 4): print a one-line notice when the agent "
      .. "($AGENT_CHAT_NAME, else the config's identity.name) has unread peer messages in the channels "
      .. "($AGENT_CHAT_CHANNELS, else the config's channels, default all). Never writes cursors; "
      .. "always exits 0. hooks.kinds ($AGENT_CHAT_HOOK_KINDS) counts only some kinds; hooks.stop = block "
      .. "($AGENT_CHAT_STOP_HOOK) makes the stop hook block the end of the turn while peer messages are "
      .. "unread (Claude Code's Stop decision; never twice in a row: stop_hook_active).",
    build = function(p)
      p:positional{ "kind", choices = M.KINDS, help = "which hook: session-start, prompt or stop" }
      p:set_defaults{ handler = cmd_hook }
    end })
end

return M
