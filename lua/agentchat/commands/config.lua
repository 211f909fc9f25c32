-- agentchat.commands.config: `agent-chat config [--json]`, the effective
-- settings and where each one comes from (docs/config.md).
--
--   user config: /home/me/.config/agent-chat/config.yaml (loaded)
--   root config: /home/me/agent-chat/agent-chat.yaml (absent)
--   root            /home/me/agent-chat  default
--   identity.name   alice                /home/me/.config/agent-chat/config.yaml:2
--   ...
--
-- A broken config file fails with its CONFIG_INVALID line (exit 1): this is
-- the command to run when another one reports it.
local config = require "agentchat.config"
local json = require "agentchat.json"
local py = require("agentchat.lazy")("agentchat.pycompat")

local M = {}

local function shown(field, value)
  if field == "store" then
    if value and value:match("^etcd://[^/?]*@") then
      return "(refused: credentials in the URL)"     -- never printed
    end
    return value or "(the root folder)"
  elseif field == "etcd_password" then
    return value and "***" or "(unset)"      -- a secret is never printed
  elseif field:sub(1, 5) == "etcd_" then
    return value or "(unset)"
  elseif field == "channels" then
    return #value > 0 and table.concat(value, ", ") or "(all)"
  elseif field == "workflows" then
    return #value > 0 and table.concat(value, ", ") or "(none)"
  elseif field == "hook_kinds" then
    return #value > 0 and table.concat(value, ", ") or "(all)"
  elseif field == "interval" then
    return py.float_repr(value)
  elseif field == "template" then
    return value or "(built-in)"
  elseif field == "name" then
    return value or "(unset)"
  end
  return value
end

local function ljust(s, width)
  local n = utf8.len(s) or #s
  return s .. string.rep(" ", math.max(width - n, 0))
end

local function file_line(label, f)
  if not f.path then
    return label .. ": (none: no home directory)\n"
  end
  return label .. ": " .. f.path .. " (" .. f.status .. ")\n"
end

local function cmd_config(args, ctx)
  local cfg, msg, code, exit = config.load{ root = args.root }
  if not cfg then
    return ctx.fail(msg, code, exit)
  end
  if args.json then
    local settings = {}
    for _, s in ipairs(config.SETTINGS) do
      local v = cfg[s.field]
      if v ~= nil and (s.secret or (s.field == "store" and v:match("^etcd://[^/?]*@"))) then
        v = "***"
      end
      settings[s.key] = { value = v == nil and json.null or v, source = cfg.sources[s.field] }
    end
    local files = {}
    for scope, f in pairs(cfg.files) do
      files[scope] = { path = f.path or json.null, status = f.status }
    end
    ctx.out(json.dumps({ files = files, settings = settings },
      { indent = 2, sort_keys = true, ensure_ascii = false }) .. "\n")
    return 0
  end
  local rows, kw, vw = {}, 0, 0
  for _, s in ipairs(config.SETTINGS) do
    local v = shown(s.field, cfg[s.field])
    rows[#rows + 1] = { s.key, v, cfg.sources[s.field] }
    kw = math.max(kw, #s.key)
    vw = math.max(vw, utf8.len(v) or #v)
  end
  local out = { file_line("user config", cfg.files.user), file_line("root config", cfg.files.root) }
  for _, r in ipairs(rows) do
    out[#out + 1] = ljust(r[1], kw) .. "  " .. ljust(r[2], vw) .. "  " .. r[3] .. "\n"
  end
  ctx.out(table.concat(out))
  return 0
end

function M.register(sub)
  sub:parser("config", {
    description = "Show the effective settings (root, identity.name, channels, wait.interval, "
      .. "state.template, workflows.path, hooks.kinds, hooks.stop, store, etcd.*), each with where it comes from: a flag, "
      .. "the environment, "
      .. "the root config (<root>/agent-chat.yaml), the user config "
      .. "($XDG_CONFIG_HOME/agent-chat/config.yaml) or the default. See docs/config.md.",
    build = function(p)
      p:option{ "--json", action = "store_true", help = "print JSON (indent 2, sorted keys)" }
      p:set_defaults{ handler = cmd_config }
    end })
end

return M
