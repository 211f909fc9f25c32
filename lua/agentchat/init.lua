-- agentchat: the Lua API of agent-chat.
--
--   local ac = require "agentchat"
--   local root = ac.open()                 -- --root / $AGENT_CHAT_ROOT / ~/agent-chat
--   local ch = assert(root:init("dev", {members = {"alice", "bob"}, topic = "T"}))
--   assert(ch:post{from = "alice", to = "bob", title = "hi", body = "hello"})
--   local batch = ch:read{as = "bob"}      -- messages, cursor moved
--   for _, m in ipairs(batch.messages) do print(m.seq, m.from, m.title) end
--
-- Expected failures return `nil, message, code` (and the CLI exit code as a
-- fourth value); misuse (wrong argument types) raises. The CLI is built on
-- exactly this API. See docs/lua-api.md for the reference.
local store = require "agentchat.store"
local sys = require "agentchat.sys"
local errors = require "agentchat.errors"
local py = require("agentchat.lazy")("agentchat.pycompat")

local M = {}

local fail = errors.fail

-- ---------------------------------------------------------------- roots

--- str(pathlib.PurePosixPath(p)): collapse '//' and '.' parts, drop a
--- trailing '/', keep a leading '//' (POSIX allows it to be special).
function M.normalize_path(p)
  if p == "" then
    return "."
  end
  local lead = ""
  if p:sub(1, 2) == "//" and p:sub(3, 3) ~= "/" then
    lead = "//"
  elseif p:sub(1, 1) == "/" then
    lead = "/"
  end
  local parts = {}
  for part in p:gmatch("[^/]+") do
    if part ~= "." then
      parts[#parts + 1] = part
    end
  end
  local s = lead .. table.concat(parts, "/")
  if s == "" then
    return "."
  end
  return s
end

--- Path of `name` under `root` as Python prints `root / name`.
function M.join_path(root, name)
  if root == "." then
    return name
  end
  if root:sub(-1) == "/" then
    return root .. name
  end
  return root .. "/" .. name
end

-- Cheap probes for the config files (config.user_path and config.root_path
-- say where they are): most commands run without any, and loading the
-- config module costs about a tenth of a command. A file that cannot be
-- probed (not ENOENT, ENOTDIR) counts as present: config.load decides.
local function file_present(path)
  local data, _, errno = sys.read_file(path, 1)
  return data ~= nil or (errno ~= 2 and errno ~= 20)
end

M._file_present = file_present   -- for commands/export.lua (trim)

local function user_config_present()
  local xdg = os.getenv("XDG_CONFIG_HOME")
  if xdg and xdg:sub(1, 1) == "/" then
    return file_present(xdg .. "/agent-chat/config.yaml")
  end
  local home = sys.home()
  return home ~= nil and file_present(home .. "/.config/agent-chat/config.yaml")
end

--- The root a command uses: `flag`, else $AGENT_CHAT_ROOT (empty = unset),
--- else the user config's `root` (docs/config.md), else ~/agent-chat.
--- Returns the normalized path (CONFIG_INVALID when the user config that
--- would decide is broken).
function M.resolve_root(flag)
  local root = flag
  if root == nil then
    root = M.default_root   -- set by `agent-chat --root R run ...`
  end
  if root == nil then
    local env = os.getenv("AGENT_CHAT_ROOT")
    if env and env ~= "" then
      root = env
    else
      local configured, msg, code = false, nil, nil
      if user_config_present() then
        configured, msg, code = require("agentchat.config").user_root()
      end
      if configured == nil then
        return fail(code, msg)
      end
      if configured then
        return configured
      end
      local home
      home, msg, code = sys.home()
      if not home then
        return fail(code, msg)
      end
      root = M.join_path(M.normalize_path(home), "agent-chat")
    end
  end
  return M.normalize_path(root)
end

-- A frontmatter field or a body: a UTF-8 string; NUL bytes only in the
-- body (the Python tool writes them there; a field is one text line).
local function check_text(value, what)
  if type(value) ~= "string" then
    error(what .. " must be a string", 3)
  end
  if what ~= "body" and value:find("\0", 1, true) then
    return fail("INVALID_TEXT", what .. " must not contain NUL bytes")
  end
  if not sys.utf8_valid(value) then
    return fail("INVALID_UTF8", what .. " is not valid UTF-8")
  end
  return true
end

M._check_text = check_text   -- for api/messages.lua

local Root = {}
Root.__index = Root
Root.__name = "agentchat.root"

-- Could a config file name a store? (the root's, then the user's)
local function config_present(root)
  return file_present(M.join_path(root, "agent-chat.yaml")) or user_config_present()
end

--- The store of a root (docs/etcd.md): `flag` (--store), else M.default_store,
--- else $AGENT_CHAT_STORE (empty = unset), else the root config's `store`,
--- else the user config's. Returns the etcd URL and the options of
--- store.open (credentials and TLS files from the etcd.* settings), false for
--- the root folder, or nil, message, code. The usual case, no store named
--- anywhere, is decided here; the rest in agentchat.storechoice.
function M.resolve_store(root, flag)
  local spec = flag
  if spec == nil then
    spec = M.default_store
  end
  if spec == nil then
    local env = os.getenv("AGENT_CHAT_STORE")
    if env and env ~= "" then
      spec = env
    end
  end
  local present = config_present(root)
  if spec == nil and not present then
    return false
  end
  return require("agentchat.storechoice").resolve(root, spec, present)
end

-- The etcd stores ac.open opened, weak: a script's unused ones go.
local remote_stores = setmetatable({}, { __mode = "k" })

--- End the session of every etcd store opened (store.h session_end): what
--- the CLI does before it exits without freeing its state.
function M.end_sessions()
  for st in pairs(remote_stores) do
    st:end_session()
  end
end

--- Open a root (need not exist). `path` nil resolves as resolve_root(nil);
--- an etcd://... path opens that store. The store is chosen by
--- resolve_store: `path` is then where the config files are found.
function M.open(path)
  if path ~= nil and type(path) ~= "string" then
    error("root path must be a string", 2)
  end
  local spec, opts, msg, code
  local root = path
  if path ~= nil and store.is_etcd(path) then
    spec = path
    root = nil
  end
  root, msg, code = M.resolve_root(root)
  if not root then
    return nil, msg, code
  end
  if spec then
    spec, opts = M.resolve_store(root, spec)
  else
    spec, opts, code = M.resolve_store(root)
    if spec == nil then
      return nil, opts, code
    end
  end
  local st, smsg, scode, sexit
  if spec then
    st, smsg, scode, sexit = store.open(spec, opts)
  else
    st, smsg, scode, sexit = store.open(root)
  end
  if not st then
    return nil, smsg, scode, sexit
  end
  if spec then
    -- An etcd store's session lease must end before the CLI exits without
    -- closing its state (cli.main calls M.end_sessions).
    remote_stores[st] = true
  end
  -- path: where the channels are, as messages name it (the folder, or the
  -- store's URL); dir: the root folder of the config files.
  return setmetatable({ path = spec and st:root() or root, dir = root, _store = st }, Root)
end

function Root:__tostring()
  return "agentchat.root (" .. self.path .. ")"
end

local Channel = {}
Channel.__index = Channel
Channel.__name = "agentchat.channel"

local function wrap_channel(root, handle)
  return setmetatable({ root = root, name = handle:name(), _h = handle }, Channel)
end

--- Open an existing channel. opts.bare: also a channel folder whose
--- _meta.json is missing (what `state` and `compact` read, as the Python
--- tool does); such a channel takes no post.
function Root:channel(name, opts)
  if type(name) ~= "string" then
    error("channel name must be a string", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("channel options must be a table", 2)
  end
  local h, msg, code, exit = self._store:channel(name, opts ~= nil and opts.bare == true)
  if not h then
    return nil, msg, code, exit
  end
  return wrap_channel(self, h)
end

--- Create a channel. opts.members: list of names (kept in order), opts.topic.
function Root:init(name, opts)
  if type(name) ~= "string" then
    error("channel name must be a string", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("init expects an options table", 2)
  end
  opts = opts or {}
  if type(opts.members or {}) ~= "table" then
    error("init: members must be a list of names", 2)
  end
  local ok, msg, code, exit = store.check_name(name)
  if not ok then
    return nil, msg, code, exit
  end
  local members = opts.members or {}
  local topic = opts.topic or ""
  for i, m in ipairs(members) do
    ok, msg, code = check_text(m, "member " .. i)
    if not ok then
      return nil, msg, code
    end
  end
  ok, msg, code = check_text(topic, "topic")
  if not ok then
    return nil, msg, code
  end
  local meta
  meta, msg, code = store.meta_compose(name, members, topic, sys.now_iso(0))
  if not meta then
    return nil, msg, code
  end
  ok, msg, code, exit = self._store:create(name, meta)
  if not ok then
    return nil, msg, code, exit
  end
  return self:channel(name)
end

--- Names of the channels under the root, sorted.
function Root:channel_names()
  return self._store:channels()
end

--- Parse _meta.json bytes the way the CLI needs them: an object whose
--- members is a list of strings and whose topic is a string (or absent).
--- Returns {channel, members, topic, created} or nil.
M.parse_meta = store.parse_meta

--- Release the root's store handle. Channels opened from it stay usable
--- until they are closed; the root itself raises when used again.
function Root:close()
  self._store:close()
end
Root.__close = Root.close

-- ---------------------------------------------------------------- channels

function Channel:__tostring()
  return "agentchat.channel (" .. self.name .. ")"
end

function Channel:close()
  self._h:close()
end
Channel.__close = Channel.close

--- Parsed _meta.json ({channel, members, topic, created}) or nil, message, code.
function Channel:meta()
  local bytes, msg, code, exit = self._h:meta()
  if not bytes then
    return nil, msg, code, exit
  end
  local meta = M.parse_meta(bytes)
  if not meta then
    return fail("META_UNREADABLE",
      "could not read or parse _meta.json for channel '" .. self.name .. "'")
  end
  return meta
end

--- {channel, topic, members, messages} for `roster`.
function Channel:roster()
  local meta, msg, code, exit = self:meta()
  if not meta then
    return nil, msg, code, exit
  end
  local summary
  summary, msg, code, exit = self._h:summary()
  if not summary then
    return nil, msg, code, exit
  end
  return { channel = self.name, topic = meta.topic, members = meta.members,
           messages = summary.count }
end

--- The agent's cursor.
function Channel:cursor(agent)
  return self._h:cursor(agent)
end

--- Set the agent's cursor to `value`, whatever it was (it may go down: use
--- this to rewind; a read never moves a cursor back).
function Channel:set_cursor(agent, value)
  return self._h:set_cursor(agent, value)
end

--- The raw "agentchat.channel" handle (for the C bindings of other families).
function Channel:handle()
  return self._h
end

M.Root = Root
M.Channel = Channel

-- ---------------------------------------------------------------- families

-- Each family (api/<name>.lua) defines methods of Channel and Root, and a
-- few functions of M, in its install(Channel, M) (Root methods on M.Root).
-- A family is loaded the first time one of its names is called: until then
-- each name holds a forwarder, which stays (so that a wrapper set on these
-- tables later keeps working), and a command loads only the families it
-- uses; every name is there all along for pairs(), the REPL and the docs.
-- api_spec checks these lists against what each install defines.
M._families = {
  post = { Channel = { "post" } },
  messages = { Channel = { "advance_cursor", "fetch", "commit", "read", "wait", "peek", "claim_marker" },
               Root = { "channels", "unread" },
               M = { "body_of", "_release", "_batches" } },
  tasks = { Channel = { "tasks", "task", "task_create", "task_update", "claim", "renew",
                        "release", "done", "block", "recover", "recover_pending_lease" } },
  queue = { Channel = { "next_task" }, M = { "task_capabilities" } },
  locks = { Channel = { "lock", "check", "unlock", "recover_lock", "recover_pending_locks",
                        "locks", "normalize_lock_path" },
            M = { "path_overlaps", "lock_channel" } },
  events = { Channel = { "event_post", "events" } },
  state = { Channel = { "state", "render_state", "compact" } },
  protocols = { Channel = { "request", "await_response", "await_responses", "respond", "team" } },
  waitany = { Channel = { "wait_any" }, M = { "parse_condition" } },
  status = { Channel = { "status_set", "status_get", "status_watch" } },
  receipts = { Channel = { "addressees", "ack", "receipts", "wait_receipts" },
               M = { "recipients", "check_agent" } },
  inbox = { Root = { "inbox", "commit_inbox" } },
  fsck = { Root = { "fsck" } },
  copy = { Root = { "export", "import_folder" } },
  trim = { Channel = { "trim" } },
  doctor = { Channel = { "doctor" } },
  import = { Channel = { "import_team", "import_bus", "import_claude_team" } },
}

--- The definitions of a family: {Channel = {...}, Root = {...}, M = {...}},
--- its install run against these tables (M's other fields read through).
function M._family(name)
  local fam = M._families[name]
  local defs = fam.defs
  if not defs then
    defs = { Channel = {}, Root = {}, M = {} }
    local m = setmetatable({ Root = defs.Root, Channel = defs.Channel },
                           { __index = M, __newindex = defs.M })
    require("agentchat.api." .. name).install(defs.Channel, m)
    fam.defs = defs
  end
  return defs
end

for name, fam in pairs(M._families) do
  for where, names in pairs(fam) do
    local t = where == "M" and M or where == "Root" and Root or Channel
    for _, key in ipairs(names) do
      t[key] = function(...)
        return M._family(name)[where][key](...)
      end
    end
  end
end

M.errors = errors
M.pycompat = py
M.version = "0.1.0"

return M
