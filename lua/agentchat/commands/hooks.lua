-- agentchat.commands.hooks: `agent-chat hook session-start|prompt|stop`,
-- the host lifecycle hooks (SPEC.md 4, Hooks), byte for byte.
--
-- A hook tells the agent it has unread peer messages: it counts the
-- relevant messages above the agent's cursor in each channel, never writes
-- a cursor, and never fails: whatever goes wrong (no root, a broken
-- channel, bad input), it prints nothing more and exits 0, because a
-- failing hook would get in the way of the host it runs in.
local json = require "agentchat.json"
local sys = require "agentchat.sys"

local M = {}

M.KINDS = { "session-start", "prompt", "stop" }

-- Summary bounds in characters (code points).
local BOUND = { ["session-start"] = 190, prompt = 190, stop = 175 }
local ELLIPSIS = "\u{2026}"
local STOP_JSON = { separators = { ",", ":" }, ensure_ascii = true }

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
  local names = env.channels or require("agentchat.pycompat").comma_list(env.AGENT_CHAT_CHANNELS)
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

--- "#<channel> (<count>)" for every channel with unread messages for `name`.
function M.unread_items(channels, name)
  local items = {}
  for _, ch in ipairs(channels) do
    local ok, batch = pcall(ch.fetch, ch, { as = name })
    if ok and batch and #batch.messages > 0 then
      items[#items + 1] = "#" .. ch.name .. " (" .. #batch.messages .. ")"
    end
  end
  return items
end

local function ulen(s)
  return utf8.len(s) or #s
end

-- The first n characters of s.
local function ucut(s, n)
  local stop = utf8.offset(s, n + 1)
  return stop and s:sub(1, stop - 1) or s
end

--- Join items with ", " within `bound` characters (SPEC.md 4, Summary
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

--- The line hook `kind` prints, or nil for none.
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
  local items = M.unread_items(channels, name)
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
  return cfg.root, { AGENT_CHAT_NAME = cfg.name, channels = cfg.channels }
end

local function cmd_hook(args, ctx)
  local ok, line = pcall(function()
    local path, env = settings(args)
    local root = path and require("agentchat").open(path)
    return root and M.message(args.kind, root, env)
  end)
  if ok and line then
    ctx.out(line .. "\n")
  end
  return 0
end

function M.register(sub)
  sub:parser("hook", {
    description = "Host lifecycle hooks (SPEC.md 4): print a one-line notice when the agent "
      .. "($AGENT_CHAT_NAME, else the config's identity.name) has unread peer messages in the channels "
      .. "($AGENT_CHAT_CHANNELS, else the config's channels, default all). Never writes cursors; "
      .. "always exits 0.",
    build = function(p)
      p:positional{ "kind", choices = M.KINDS, help = "which hook: session-start, prompt or stop" }
      p:set_defaults{ handler = cmd_hook }
    end })
end

return M
