-- agentchat.config: the config files (docs/config.md).
--
--   local config = require "agentchat.config"
--   local cfg = assert(config.load{ root = "--root value or nil" })
--   cfg.root, cfg.name, cfg.channels, cfg.interval, cfg.template, cfg.workflows,
--   cfg.hook_kinds, cfg.stop_hook
--   cfg.sources.name     -- "$AGENT_CHAT_NAME", "/path/config.yaml:3", "default", ...
--   cfg.files.user.path, cfg.files.user.status   -- "absent" | "loaded" | "invalid"
--
-- Two YAML files, both optional:
--
--   user config  $XDG_CONFIG_HOME/agent-chat/config.yaml (an absolute
--                XDG_CONFIG_HOME; else ~/.config/agent-chat/config.yaml)
--   root config  <root>/agent-chat.yaml
--
-- Precedence, per setting: command-line flag > environment > root config >
-- user config > default. A setting is only ever used where the command
-- line left a value open and the command would otherwise use its default
-- or fail; with no config file every command behaves exactly as without
-- this module.
--
-- Failure policy: a command reads the config files only when it needs a
-- value from them; a file that is there but broken (bad YAML, an unknown
-- key, a wrong type) fails the command with CONFIG_INVALID (or
-- CONFIG_UNREADABLE) and exit 1. `lenient = true` (the hooks, which must
-- never fail) skips a broken file instead and lists it in cfg.errors.
local ac = require "agentchat"
local errors = require "agentchat.errors"
local sys = require "agentchat.sys"
local yaml = require "agentchat.yaml"

local M = {}

local ROOT_FILE = "agent-chat.yaml"
local USER_FILE = "agent-chat/config.yaml"
local MAX_BYTES = 1024 * 1024
local DEFAULT_INTERVAL = 5.0

-- Settings in display order: the setting's name in `cfg`, the dotted key
-- in the file, and its environment variable (if any).
M.SETTINGS = {
  { field = "root", key = "root", env = "AGENT_CHAT_ROOT" },
  { field = "name", key = "identity.name", env = "AGENT_CHAT_NAME" },
  { field = "channels", key = "channels", env = "AGENT_CHAT_CHANNELS" },
  { field = "interval", key = "wait.interval" },
  { field = "template", key = "state.template" },
  { field = "workflows", key = "workflows.path" },
  { field = "hook_kinds", key = "hooks.kinds", env = "AGENT_CHAT_HOOK_KINDS" },
  { field = "stop_hook", key = "hooks.stop", env = "AGENT_CHAT_STOP_HOOK" },
  { field = "store", key = "store", env = "AGENT_CHAT_STORE" },
  { field = "etcd_user", key = "etcd.user", env = "AGENT_CHAT_ETCD_USER" },
  { field = "etcd_password", key = "etcd.password", env = "AGENT_CHAT_ETCD_PASSWORD", secret = true },
  { field = "etcd_ca", key = "etcd.ca", env = "AGENT_CHAT_ETCD_CA" },
  { field = "etcd_cert", key = "etcd.cert", env = "AGENT_CHAT_ETCD_CERT" },
  { field = "etcd_key", key = "etcd.key", env = "AGENT_CHAT_ETCD_KEY" },
}

-- The file's grammar: top-level keys, either a leaf (a value kind) or a
-- section of leaves. Kinds: name, path, names, paths, seconds, kinds,
-- stop_mode.
local SCHEMA = {
  identity = { name = "name" },
  root = "path",
  channels = "names",
  wait = { interval = "seconds" },
  state = { template = "path" },
  workflows = { path = "paths" },
  hooks = { kinds = "kinds", stop = "stop_mode" },
  store = "store",
  etcd = { user = "name", password = "secret", ca = "path", cert = "path", key = "path" },
}
local TOP_ORDER = { "identity", "root", "channels", "wait", "state", "workflows", "hooks", "store", "etcd" }

-- hooks.stop: what the Stop hook does with unread messages (docs/config.md).
local STOP_MODES = { notify = true, block = true }
local FIELD_OF = {}
for _, s in ipairs(M.SETTINGS) do
  FIELD_OF[s.key] = s.field
end

-- Parsed files by path: {layer} or {err = {msg, code}}. load{reload=true}
-- drops them (a long-running watch or REPL that wants to see edits).
local cache = {}

-- ---------------------------------------------------------------- helpers

local function getenv(env, name)
  if env then
    local v = env[name]
    return v ~= false and v or nil
  end
  return os.getenv(name)
end

local function home_dir(env)
  if env then
    local h = getenv(env, "HOME")
    if h and h ~= "" then
      return h
    end
    return nil, "could not determine the home directory", "NO_HOME"
  end
  return sys.home()
end

--- "a, b" lists as the hooks read $AGENT_CHAT_CHANNELS: entries trimmed,
--- empty ones dropped, order and duplicates kept.
M.split_list = sys.comma_list

--- The user config's path: $XDG_CONFIG_HOME/agent-chat/config.yaml when
--- XDG_CONFIG_HOME is absolute (the XDG spec ignores relative ones), else
--- ~/.config/agent-chat/config.yaml. nil, message, code when there is no
--- home directory either.
function M.user_path(env)
  local xdg = getenv(env, "XDG_CONFIG_HOME")
  if xdg and xdg:sub(1, 1) == "/" then
    return ac.normalize_path(xdg .. "/" .. USER_FILE)
  end
  local home, msg, code = home_dir(env)
  if not home then
    return nil, msg, code
  end
  return ac.normalize_path(home .. "/.config/" .. USER_FILE)
end

--- The root config's path for a (normalized) root.
function M.root_path(root)
  return ac.join_path(root, ROOT_FILE)
end

local function dirname(path)
  local dir = path:match("^(.*)/[^/]*$")
  if dir == nil then
    return "."
  end
  return dir == "" and "/" or dir
end

-- A path from a config file: "~" and "~/..." are the home directory, an
-- absolute path stays, a relative one is taken from the file's directory.
local function expand(p, file, env)
  if p == "~" or p:sub(1, 2) == "~/" then
    local home, msg = home_dir(env)
    if not home then
      return nil, "cannot expand '~': " .. msg
    end
    p = home .. p:sub(2)
  elseif p:sub(1, 1) ~= "/" then
    p = ac.join_path(dirname(file), p)
  end
  return ac.normalize_path(p)
end

local function type_of(v)
  if v == yaml.null then
    return "null"
  elseif type(v) == "table" then
    return yaml.is_array(v) and "a list" or "a mapping"
  elseif type(v) == "string" then
    return "a string"
  elseif type(v) == "number" then
    return "a number"
  end
  return "a " .. type(v)
end

local function show(s)
  s = tostring(s):gsub("[%c\\']", function(c)
    return string.format("\\x%02x", c:byte())
  end)
  if #s > 60 then
    s = s:sub(1, 57) .. "..."
  end
  return "'" .. s .. "'"
end

local function at(mark)
  mark = mark or { line = 1, column = 1 }
  return string.format("line %d, column %d: ", mark.line, mark.column)
end

-- A text setting: a string without control characters, trimmed, not empty.
local function clean_text(v)
  if type(v) ~= "string" or not sys.utf8_valid(v) or v:find("[%c]") then
    return nil
  end
  v = sys.strip(v)
  return v ~= "" and v or nil
end

-- Check one value of kind `kind`; returns the value to store or nil, why.
local CHECK = {}

function CHECK.name(v)
  local s = clean_text(v)
  if not s then
    return nil, "must be a non-empty name without control characters (got " .. type_of(v) .. ")"
  end
  return s
end

function CHECK.path(v, file, env)
  local s = clean_text(v)
  if not s then
    return nil, "must be a path (got " .. type_of(v) .. ")"
  end
  local p, why = expand(s, file, env)
  if not p then
    return nil, why
  end
  return p
end

local function list_of(v, each, what)
  if type(v) == "string" then
    v = M.split_list(v)
  elseif type(v) ~= "table" or not yaml.is_array(v) then
    return nil, "must be a list of " .. what .. " (got " .. type_of(v) .. ")"
  end
  local out = yaml.array()
  for i, item in ipairs(v) do
    local s, why = each(item)
    if not s then
      return nil, "item " .. i .. " " .. why
    end
    out[#out + 1] = s
  end
  return out
end

function CHECK.names(v)
  return list_of(v, CHECK.name, "channel names")
end

function CHECK.paths(v, file, env)
  return list_of(v, function(item)
    return CHECK.path(item, file, env)
  end, "directories")
end

function CHECK.kinds(v)
  local valid = {}
  for _, k in ipairs(require("agentchat.kinds").KINDS) do
    valid[k] = true
  end
  return list_of(v, function(item)
    if type(item) == "string" and valid[item] then
      return item
    end
    return nil, "must be message, event or audit (got " .. (type(item) == "string" and show(item) or type_of(item))
      .. ")"
  end, "kinds (message, event, audit)")
end

function CHECK.stop_mode(v)
  if type(v) ~= "string" or not STOP_MODES[v] then
    return nil, "must be notify or block (got " .. (type(v) == "string" and show(v) or type_of(v)) .. ")"
  end
  return v
end

-- store: where the state lives instead of the root folder (docs/etcd.md).
function CHECK.store(v)
  local s = clean_text(v)
  if s and s:match("^etcd://[^/?]*@") then
    -- never shown back: it holds credentials
    return nil, "must not carry credentials (user:password@): set etcd.user and etcd.password"
  end
  if not s or s:sub(1, 7) ~= "etcd://" then
    return nil, "must be an etcd://HOST:PORT[,HOST:PORT...]/PREFIX URL (got "
      .. (type(v) == "string" and show(v) or type_of(v)) .. ")"
  end
  return s
end

-- A secret (etcd.password): any non-empty text; never shown back, not even
-- in an error.
function CHECK.secret(v)
  if type(v) ~= "string" or v == "" or v:find("[%c]") then
    return nil, "must be a non-empty string without control characters"
  end
  return v
end

function CHECK.seconds(v)
  if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge then
    return nil, "must be a positive number of seconds (got " .. (type(v) == "number" and tostring(v) or type_of(v))
      .. ")"
  end
  return v + 0.0
end

local function known(keys)
  local t = {}
  for _, k in ipairs(keys) do
    t[#t + 1] = k
  end
  return table.concat(t, ", ")
end

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do
    out[#out + 1] = k
  end
  table.sort(out, function(a, b)
    return tostring(a) < tostring(b)
  end)
  return out
end

-- Validate a decoded document. Returns {values = {field = value},
-- lines = {field = line}} or nil, problem ("line L, column C: ...").
local function validate(doc, marks, file, scope, env)
  local layer = { values = {}, lines = {} }
  if doc == yaml.null then
    return layer
  end
  if type(doc) ~= "table" or yaml.is_array(doc) then
    local m = type(doc) == "table" and marks[doc] or nil
    return nil, at(m) .. "the config must be a mapping of settings (got " .. type_of(doc) .. ")"
  end
  local top = marks[doc].keys
  for _, key in ipairs(sorted_keys(doc)) do
    local spec = type(key) == "string" and SCHEMA[key] or nil
    local mark = top[key]
    local value = doc[key]
    if spec == nil then
      return nil, at(mark) .. "unknown key " .. show(key) .. " (known keys: " .. known(TOP_ORDER) .. ")"
    end
    if key == "root" and scope == "root" then
      return nil, at(mark) .. "'root' cannot be set in a root config (it is found through the root); "
        .. "set it in the user config"
    end
    if value == yaml.null then         -- `key:` with nothing: not set here
      goto continue
    end
    if type(spec) == "string" then
      local v, why = CHECK[spec](value, file, env)
      if v == nil then
        return nil, at(mark) .. key .. " " .. why
      end
      layer.values[FIELD_OF[key]] = v
      layer.lines[FIELD_OF[key]] = mark.line
    else
      if type(value) ~= "table" or yaml.is_array(value) then
        return nil, at(mark) .. key .. " must be a mapping (got " .. type_of(value) .. ")"
      end
      local sub = marks[value].keys
      for _, k in ipairs(sorted_keys(value)) do
        local kind = type(k) == "string" and spec[k] or nil
        local dotted = key .. "." .. tostring(k)
        if kind == nil then
          local names = {}
          for _, name in ipairs(sorted_keys(spec)) do
            names[#names + 1] = key .. "." .. name
          end
          return nil, at(sub[k]) .. "unknown key " .. show(dotted) .. " (known keys: " .. known(names) .. ")"
        end
        if value[k] ~= yaml.null then
          local v, why = CHECK[kind](value[k], file, env)
          if v == nil then
            return nil, at(sub[k]) .. dotted .. " " .. why
          end
          layer.values[FIELD_OF[dotted]] = v
          layer.lines[FIELD_OF[dotted]] = sub[k].line
        end
      end
    end
    ::continue::
  end
  return layer
end

--- Read and check one config file. Returns a layer {path, scope, values,
--- lines}; false when the file does not exist; nil, message, code when it
--- is broken (message starts with the path).
function M.read_file(path, scope, env)
  local text, msg, errno = sys.read_file(path, MAX_BYTES + 1)
  if not text then
    if errno == 2 or errno == 20 then   -- ENOENT, ENOTDIR: no config here
      return false
    end
    if errno == 27 then                 -- EFBIG from the cap
      return nil, path .. ": larger than 1 MiB", "CONFIG_INVALID"
    end
    return nil, path .. ": " .. msg, "CONFIG_UNREADABLE"
  end
  if #text > MAX_BYTES then
    return nil, path .. ": larger than 1 MiB", "CONFIG_INVALID"
  end
  local doc, marks = yaml.decode(text, { marks = true, max_depth = 20, max_alias_nodes = 1000 })
  if doc == nil then
    return nil, path .. ": " .. marks, "CONFIG_INVALID"
  end
  local layer, why = validate(doc, marks, path, scope, env)
  if not layer then
    return nil, path .. ": " .. why, "CONFIG_INVALID"
  end
  layer.path = path
  layer.scope = scope
  return layer
end

local function cached_read(path, scope, env)
  local key = scope .. "\0" .. path
  local hit = cache[key]
  if hit == nil then
    local layer, msg, code = M.read_file(path, scope, env)
    hit = layer ~= nil and { layer = layer } or { msg = msg, code = code }
    if env == nil then                  -- tests pass their own env: never cache those
      cache[key] = hit
    end
  end
  if hit.msg then
    return nil, hit.msg, hit.code
  end
  return hit.layer
end

--- Forget every file read so far (the next load reads them again).
function M.reset()
  cache = {}
end

-- Read the file for `scope` at `path` into cfg (files, errors). Returns the
-- layer (false if absent), or nil, message, code when broken and strict.
local function layer_of(cfg, scope, path, opts)
  if not path then
    cfg.files[scope] = { status = "absent" }
    return false
  end
  local layer, msg, code = cached_read(path, scope, opts.env)
  if layer == nil then
    cfg.files[scope] = { path = path, status = "invalid", error = msg, code = code }
    if opts.lenient then
      cfg.errors[#cfg.errors + 1] = code .. ": " .. msg
      return false
    end
    return nil, msg, code
  end
  cfg.files[scope] = { path = path, status = layer and "loaded" or "absent" }
  return layer
end

--- The user config's root setting, for agentchat.resolve_root: the path,
--- false when no user config sets one, or nil, message, code.
function M.user_root(env)
  local path = M.user_path(env)
  if not path then
    return false
  end
  local layer, msg, code = cached_read(path, "user", env)
  if layer == nil then
    return nil, msg, code
  end
  return layer and layer.values.root or false
end

--- The merged settings. opts:
---   root     the --root flag (nil: agentchat.default_root, $AGENT_CHAT_ROOT,
---            the user config, ~/agent-chat)
---   lenient  skip broken files (listed in cfg.errors) instead of failing
---   env      a table to read instead of the process environment (tests)
---   reload   forget files read earlier in this process first
--- Returns cfg (see the top of this file) or nil, message, code, exit.
function M.load(opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    error("config.load expects an options table", 2)
  end
  if opts.reload then
    M.reset()
  end
  local env = opts.env
  local cfg = { sources = {}, files = {}, errors = {} }

  local user_path = M.user_path(env)
  local user, msg, code = layer_of(cfg, "user", user_path, opts)
  if user == nil then
    return errors.fail(code, msg)
  end

  -- The root: flag > environment > user config > default.
  local root, source = opts.root, "--root"
  if root == nil and ac.default_root ~= nil then
    root = ac.default_root
  end
  if root == nil then
    local e = getenv(env, "AGENT_CHAT_ROOT")
    if e and e ~= "" then
      root, source = e, "$AGENT_CHAT_ROOT"
    elseif user and user.values.root then
      root, source = user.values.root, user.path .. ":" .. user.lines.root
    else
      local home, hmsg, hcode = home_dir(env)
      if not home then
        if not opts.lenient then
          return errors.fail(hcode, hmsg)
        end
        cfg.errors[#cfg.errors + 1] = hcode .. ": " .. hmsg
      else
        root, source = ac.join_path(ac.normalize_path(home), "agent-chat"), "default"
      end
    end
  end
  if root then
    cfg.root = ac.normalize_path(root)
    cfg.sources.root = source
  end

  local rootl = false
  if cfg.root then
    rootl, msg, code = layer_of(cfg, "root", M.root_path(cfg.root), opts)
    if rootl == nil then
      return errors.fail(code, msg)
    end
  else
    cfg.files.root = { status = "absent" }
  end

  -- Every other setting: environment > root config > user config > default.
  local from_env = {}
  local name = sys.strip(getenv(env, "AGENT_CHAT_NAME") or "")
  if name ~= "" then
    from_env.name = name
  end
  local channels = M.split_list(getenv(env, "AGENT_CHAT_CHANNELS"))
  if #channels > 0 then
    from_env.channels = yaml.array(channels)
  end
  -- The hooks never fail: an environment value that is not valid is
  -- ignored (lenient) or fails like a broken config file.
  for _, e in ipairs({ { "hook_kinds", "AGENT_CHAT_HOOK_KINDS", CHECK.kinds },
                       { "stop_hook", "AGENT_CHAT_STOP_HOOK", CHECK.stop_mode } }) do
    local raw = getenv(env, e[2])
    if raw and sys.strip(raw) ~= "" then
      local v, why = e[3](e[1] == "stop_hook" and sys.strip(raw) or raw)
      if v == nil then
        if not opts.lenient then
          return errors.fail("CONFIG_INVALID", "$" .. e[2] .. " " .. why)
        end
        cfg.errors[#cfg.errors + 1] = "CONFIG_INVALID: $" .. e[2] .. " " .. why
      else
        from_env[e[1]] = v
      end
    end
  end
  for _, e in ipairs({ { "store", "AGENT_CHAT_STORE" }, { "etcd_user", "AGENT_CHAT_ETCD_USER" },
                       { "etcd_password", "AGENT_CHAT_ETCD_PASSWORD" }, { "etcd_ca", "AGENT_CHAT_ETCD_CA" },
                       { "etcd_cert", "AGENT_CHAT_ETCD_CERT" }, { "etcd_key", "AGENT_CHAT_ETCD_KEY" } }) do
    local raw = getenv(env, e[2])
    if raw and raw ~= "" then
      from_env[e[1]] = raw
    end
  end
  local defaults = { interval = DEFAULT_INTERVAL, channels = yaml.array(), workflows = yaml.array(),
                     hook_kinds = yaml.array(), stop_hook = "notify" }
  for _, s in ipairs(M.SETTINGS) do
    local f = s.field
    if f ~= "root" then
      if from_env[f] ~= nil then
        cfg[f], cfg.sources[f] = from_env[f], "$" .. s.env
      elseif rootl and rootl.values[f] ~= nil then
        cfg[f], cfg.sources[f] = rootl.values[f], rootl.path .. ":" .. rootl.lines[f]
      elseif user and user.values[f] ~= nil then
        cfg[f], cfg.sources[f] = user.values[f], user.path .. ":" .. user.lines[f]
      else
        cfg[f], cfg.sources[f] = defaults[f], "default"
      end
    end
  end
  return cfg
end

--- One setting for a command: cfg[field] of load{root = root}, or nil,
--- message, code, exit when a config file is broken.
function M.get(field, root)
  local cfg, msg, code, exit = M.load{ root = root }
  if not cfg then
    return nil, msg, code, exit
  end
  return cfg[field]
end

local function exists(p)
  local f = io.open(p, "r")
  if f then
    f:close()
    return true
  end
  return false
end

--- Find a workflow script: `name` itself when it names an existing file or
--- contains a "/", else the first <dir>/<name> or <dir>/<name>.lua over
--- `dirs` (cfg.workflows). Returns the path (name unchanged when nothing
--- matches, so the caller's "cannot open" names what the user typed).
function M.find_workflow(name, dirs)
  if name:find("/", 1, true) or exists(name) then
    return name
  end
  for _, dir in ipairs(dirs or {}) do
    for _, candidate in ipairs({ ac.join_path(dir, name), ac.join_path(dir, name .. ".lua") }) do
      if exists(candidate) then
        return candidate
      end
    end
  end
  return name
end

--- find_workflow over the config's workflows.path, reading the config only
--- when `name` is not a file already (so a broken config does not stop a
--- `watch --script ./x.lua`). Returns the path or nil, message, code, exit.
function M.resolve_workflow(name, root)
  if name:find("/", 1, true) or exists(name) then
    return name
  end
  local dirs, msg, code, exit = M.get("workflows", root)
  if not dirs then
    return nil, msg, code, exit
  end
  return M.find_workflow(name, dirs)
end

return M
