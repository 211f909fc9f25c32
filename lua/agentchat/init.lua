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
local py = require "agentchat.pycompat"
local kinds = require "agentchat.kinds"

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
      local configured, msg, code = require("agentchat.config").user_root()
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

local Root = {}
Root.__index = Root
Root.__name = "agentchat.root"

-- A broken config file stops the store lookup only when it may say where
-- the store is (a top-level `store:` line): a command that needs nothing
-- else from it keeps working, as it did before stores could be chosen.
local function broken_store_file(cfg)
  for _, scope in ipairs({ "root", "user" }) do
    local f = cfg.files[scope]
    if f and f.status == "invalid" then
      local text = sys.read_file(f.path, 1024 * 1024 + 1) or ""
      if ("\n" .. text):find("\nstore[ \t]*:") then
        return f
      end
    end
  end
end

-- Could a config file name a store? A cheap probe for the two files first
-- (config.user_path and config.root_path say where they are): most commands
-- run without any, and loading the config module costs about a tenth of a
-- command.
local function config_present(root)
  local function present(path)
    local data, _, errno = sys.read_file(path, 1)
    return data ~= nil or (errno ~= 2 and errno ~= 20)     -- ENOENT, ENOTDIR: absent
  end
  if present(M.join_path(root, "agent-chat.yaml")) then
    return true
  end
  local xdg = os.getenv("XDG_CONFIG_HOME")
  if xdg and xdg:sub(1, 1) == "/" then
    return present(xdg .. "/agent-chat/config.yaml")
  end
  local home = sys.home()
  return home ~= nil and present(home .. "/.config/agent-chat/config.yaml")
end

--- The store of a root (docs/etcd.md): `flag` (--store), else M.default_store,
--- else $AGENT_CHAT_STORE (empty = unset), else the root config's `store`,
--- else the user config's. Returns the etcd URL and the options of
--- store.open (credentials and TLS files from the etcd.* settings), false for
--- the root folder, or nil, message, code.
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
  local cfg
  if present then
    cfg = require("agentchat.config").load{ root = root, lenient = true }
  else
    -- no file to read: the environment alone (what config.load would say)
    local function env(name)
      local v = os.getenv(name)
      return v ~= "" and v or nil
    end
    cfg = { etcd_user = env("AGENT_CHAT_ETCD_USER"), etcd_password = env("AGENT_CHAT_ETCD_PASSWORD"),
            etcd_ca = env("AGENT_CHAT_ETCD_CA"), etcd_cert = env("AGENT_CHAT_ETCD_CERT"),
            etcd_key = env("AGENT_CHAT_ETCD_KEY") }
  end
  if spec == nil then
    local bad = broken_store_file(cfg)
    if bad then
      return fail(bad.code, bad.error)
    end
    spec = cfg.store
  end
  if spec == nil then
    return false
  end
  if not store.is_etcd(spec) then
    return fail("STORE_INVALID", "store must be an etcd://HOST:PORT[,HOST:PORT...]/PREFIX URL "
      .. "(the root folder needs no store setting)")
  end
  return spec, { username = cfg.etcd_user, password = cfg.etcd_password, ca_file = cfg.etcd_ca,
                 cert_file = cfg.etcd_cert, key_file = cfg.etcd_key }
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

--- Open an existing channel.
function Root:channel(name)
  if type(name) ~= "string" then
    error("channel name must be a string", 2)
  end
  local h, msg, code, exit = self._store:channel(name)
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

-- Copy `names` (nil: every channel of src) from store src to store dst
-- (agentchat.store's copy, include/agentchat/copy.h): a list of reports
-- {channel, messages, records, acks, cursors, skipped}, or nil, message,
-- code, exit at the first failure (the reports so far as a fifth value).
local function copy_channels(src, dst, names)
  if names == nil then
    local all, msg, code, exit = src:channels()
    if not all then
      return nil, msg, code, exit
    end
    names = all
  end
  local reports = {}
  for _, name in ipairs(names) do
    if type(name) ~= "string" then
      error("channels must be a list of names", 3)
    end
    local rep, msg, code, exit = store.copy(src, dst, name)
    if not rep then
      return nil, msg, code, exit, reports
    end
    rep.channel = name
    reports[#reports + 1] = rep
  end
  return reports
end

-- Copy between this root's store and the folder (or store) `dir`, each
-- way: the other store opened, the copy, the other store closed. `into`:
-- the root's store is the target (import).
local function copy_with(self, dir, opts, what, into)
  if type(dir) ~= "string" then
    error(what .. " expects a folder path", 3)
  end
  local other, msg, code, exit = store.open(store.is_etcd(dir) and dir or M.normalize_path(dir))
  if not other then
    return nil, msg, code, exit
  end
  local names = (opts or {}).channels
  if into and names == nil then
    names, msg, code, exit = other:channels()
    if names and #names == 0 then
      names, msg, code = nil, "no channel under " .. dir .. " (a folder root holds <channel>/_meta.json)",
        "IMPORT_INVALID_FOLDER"
    end
  end
  local reports, partial
  if names ~= nil or not into then
    local src, dst = self._store, other
    if into then
      src, dst = other, self._store
    end
    reports, msg, code, exit, partial = copy_channels(src, dst, names)
  end
  other:close()
  return reports, msg, code, exit, partial
end

--- Copy channels of this root's store to the folder `dir`, in the folder
--- format (docs/etcd.md "Migration"); opts.channels: names (default: all).
--- A channel the folder has already is refused (CHANNEL_EXISTS).
function Root:export(dir, opts)
  return copy_with(self, dir, opts, "export", false)
end

--- Copy channels of the folder root `dir` into this root's store (the
--- reverse of export); opts.channels: names (default: all of the folder).
--- IMPORT_INVALID_FOLDER when the folder holds no channel.
function Root:import_folder(dir, opts)
  return copy_with(self, dir, opts, "import_folder", true)
end

--- Names of the channels under the root, sorted.
function Root:channel_names()
  return self._store:channels()
end

--- Parse _meta.json bytes the way the CLI needs them: an object whose
--- members is a list of strings and whose topic is a string (or absent).
--- Returns {channel, members, topic, created} or nil.
M.parse_meta = store.parse_meta

--- One entry per channel: {name, meta (nil if unreadable), count, last}.
function Root:channels()
  local names, msg, code, exit = self._store:channels()
  if not names then
    return nil, msg, code, exit
  end
  local out = {}
  for _, name in ipairs(names) do
    local entry = { name = name, count = 0 }
    local ch = self:channel(name)
    if ch then
      entry.meta = ch:meta()
      local last = ch:peek(1)
      if last then
        entry.count = last.count
        entry.last = last.messages[1]
      end
      ch:close()
    end
    out[#out + 1] = entry
  end
  return out
end

-- Close the channels (and release the cursor locks) of M._batches entries.
function M._release(entries)
  for _, e in ipairs(entries) do
    if e.lock then
      e.lock:release()
      e.lock = nil
    end
    if e.ch then
      e.ch:close()
      e.ch = nil
    end
  end
end

-- What a fetch for `as` gives in each channel of `names` (nil: every
-- channel of the store), cursors untouched: {{channel = name, batch =
-- batch}, ...} in that order, or the first failure. A listed channel that
-- cannot be opened fails; an unlisted one removed since the listing is
-- skipped. opts.kinds filters (see fetch). With opts.hold, every channel
-- stays open (entry.ch) with `as`'s cursor lock held (entry.lock), taken
-- in name order so that two callers over the same channels never wait for
-- each other in a circle; M._release(entries) ends that (on a failure
-- everything is released before returning).
-- Shared by root:unread and root:inbox (api/inbox.lua), hence in M, as a
-- private name.
function M._batches(root, as, names, opts)
  opts = opts or {}
  local listed = names ~= nil
  local msg, code, exit
  if not listed then
    names, msg, code, exit = root._store:channels()
    if not names then
      return nil, msg, code, exit
    end
  end
  local out = {}
  local function failed(m, c, x)
    M._release(out)
    return nil, m, c, x
  end
  for _, name in ipairs(names) do
    local ch
    ch, msg, code, exit = root:channel(name)
    if ch then
      out[#out + 1] = { channel = name, ch = ch }
    elseif listed or code ~= "CHANNEL_NOT_FOUND" then
      return failed(msg, code, exit)      -- (unlisted: removed since the listing)
    end
  end
  if opts.hold then
    local order = { table.unpack(out) }
    table.sort(order, function(x, y)
      return x.channel < y.channel
    end)
    for _, e in ipairs(order) do
      e.lock, msg, code, exit = e.ch._h:cursor_lock(as)
      if not e.lock then
        return failed(msg, code, exit)
      end
    end
  end
  for _, e in ipairs(out) do
    e.batch, msg, code, exit = e.ch:fetch{ as = as, kinds = opts.kinds }
    if not opts.hold then
      e.ch:close()
      e.ch = nil
    end
    if not e.batch then
      return failed(msg, code, exit)
    end
  end
  return out
end

--- Unread counts for agent `as`, the summary the host hooks print:
--- {channel=, count=} for each channel with messages for `as` above its
--- cursor (the relevance of `read`), cursors untouched. opts.channels: the
--- names to look at, in that order (default: every channel, sorted); a
--- listed channel that cannot be opened fails. opts.kinds: count only
--- messages of those kinds (see fetch).
function Root:unread(as, opts)
  if type(as) ~= "string" then
    error("unread expects an agent name", 2)
  end
  if opts ~= nil and (type(opts) ~= "table" or (opts.channels ~= nil and type(opts.channels) ~= "table")) then
    error("unread expects {channels = {name, ...}, kinds = {kind, ...}}", 2)
  end
  kinds.set(opts and opts.kinds, "unread")
  local batches, msg, code, exit = M._batches(self, as, opts and opts.channels, { kinds = opts and opts.kinds })
  if not batches then
    return nil, msg, code, exit
  end
  local out = {}
  for _, e in ipairs(batches) do
    if #e.batch.messages > 0 then
      out[#out + 1] = { channel = e.channel, count = #e.batch.messages }
    end
  end
  return out
end

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

--- The body of a message text: everything after its closing frontmatter
--- fence (the whole text when it has none).
function M.body_of(text)
  if text:sub(1, 3) ~= "---" then
    return text
  end
  local first = true
  local pos = 1
  while true do
    local nl = text:find("\n", pos, true)
    local line = text:sub(pos, (nl or #text + 1) - 1)
    if not first and sys.strip(line) == "---" then
      return nl and text:sub(nl + 1) or ""
    end
    first = false
    if not nl then
      return text
    end
    pos = nl + 1
  end
end

-- A message as the API shows it: the C record plus the common fields.
local function message(m)
  local f = m.fields
  m.file = m.name
  m.from = f.from
  m.to = f.to
  m.title = f.title
  m.status = f.status
  m.ts = f.ts
  m.reply_to = f.reply_to
  m.type = f.type              -- typed messages (docs/protocols.md)
  m.request_id = f.request_id
  m.role = f.role
  return m
end

local function batch_of(inbox, agent, before)
  for _, m in ipairs(inbox.messages) do
    message(m)
  end
  return {
    agent = agent,
    messages = inbox.messages,
    skipped = inbox.skipped,
    count = inbox.count,
    cursor_before = before,
    cursor = inbox.max_seq,     -- where a commit moves the cursor
  }
end

-- An explicit `ts` (imports keep the original time, docs/import.md): an
-- ISO-8601 time with a UTC offset, on one line, as readers parse it back.
local function check_ts(ts)
  if type(ts) ~= "string" then
    error("post: ts must be a string", 3)
  end
  if ts:find("%c") or sys.strip(ts) ~= ts or sys.iso_has_offset(ts) ~= true then
    return fail("MESSAGE_INVALID_FIELD", "ts must be an ISO-8601 time with a UTC offset: " .. py.repr_str(ts))
  end
  return true
end

--- Post a message. t = {from, title, body, to="all", reply=0, status="discussion",
--- type=, request_id=, role=, fields={key=value}, ts=} (type, request_id, role and
--- fields are extra frontmatter after title, docs/protocols.md; ts replaces the
--- current time, docs/import.md). Returns {seq, file, channel}.
function Channel:post(t)
  if type(t) ~= "table" then
    error("post expects a table", 2)
  end
  local fields = { "from", "title", "body" }
  for _, k in ipairs(fields) do
    if t[k] == nil then
      error("post: field '" .. k .. "' is required", 2)
    end
  end
  for _, k in ipairs({ "from", "title", "body", "to", "status" }) do
    if t[k] ~= nil then
      local ok, msg, code = check_text(t[k], k)
      if not ok then
        return nil, msg, code
      end
    end
  end
  local reply = t.reply or t.reply_to or 0
  if math.type(reply) ~= "integer" and not (type(reply) == "string" and reply:match("^%-?%d+$")) then
    error("post: reply must be an integer (or its decimal text)", 2)
  end
  local to = t.to
  if to == nil or to == "" then
    to = "all"
  end
  if t.ts ~= nil then
    local ok, msg, code, exit = check_ts(t.ts)
    if not ok then
      return nil, msg, code, exit
    end
  end
  local extra
  if t.type ~= nil or t.request_id ~= nil or t.role ~= nil or t.fields ~= nil then
    local msg, code, exit
    extra, msg, code, exit = require("agentchat.protocols").extra_fields(t)
    if not extra then
      return nil, msg, code, exit
    end
  end
  local seq, file, code, exit = self._h:post{
    from = t.from, to = to, title = t.title, status = t.status or "discussion",
    body = t.body, reply_to = reply, extra = extra, ts = t.ts,
  }
  if not seq then
    return nil, file, code, exit
  end
  -- A third value is a warning: visible, but not known to be durable.
  return { seq = seq, file = file, channel = self.name, warning = code }
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

--- Move the agent's cursor up to `value`; a cursor already past it stays.
--- Takes the agent's cursor lock for the write.
function Channel:advance_cursor(agent, value)
  if type(agent) ~= "string" or math.type(value) ~= "integer" then
    error("advance_cursor expects (agent, seq)", 2)
  end
  local lock <close>, msg, code, exit = self._h:cursor_lock(agent)
  if not lock then
    return nil, msg, code, exit
  end
  return self._h:advance_cursor(agent, value)
end

-- opts.after: an explicit seq to look above instead of the cursor.
local function after_of(self, opts)
  if opts.after ~= nil then
    if math.type(opts.after) ~= "integer" then
      error("after must be an integer seq", 3)
    end
    return opts.after
  end
  return self._h:cursor(opts.as)
end

local function positive(v, what, name)
  if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
    error(what .. ": " .. name .. " must be a positive integer", 4)
  end
end

-- Check the options every reading call shares; misuse raises.
local function check_read_opts(opts, what)
  if type(opts) ~= "table" or type(opts.as) ~= "string" then
    error(what .. " expects {as = name}", 3)
  end
  positive(opts.max_messages, what, "max_messages")
  positive(opts.max_bytes, what, "max_bytes")
  if opts.show ~= nil and type(opts.show) ~= "function" then
    error(what .. ": show must be a function", 3)
  end
  return kinds.set(opts.kinds, what)
end

-- Apply opts.kinds and the budgets to a batch: keep the messages of those
-- kinds, then the first ones that fit; when some are held back the cursor
-- stops just below the first of them (never below where it was).
local function trim(batch, opts, set)
  local msgs = kinds.keep(batch.messages, set)
  local n = #msgs
  if opts.max_messages or opts.max_bytes then
    n = kinds.budget(msgs, opts.max_messages, opts.max_bytes, opts.size or kinds.shown_bytes)
  end
  batch.remaining = #msgs - n
  if n < #msgs then
    batch.next = msgs[n + 1]
    batch.cursor = math.max(batch.cursor_before, msgs[n + 1].seq - 1)
    for i = #msgs, n + 1, -1 do
      msgs[i] = nil
    end
  end
  batch.messages = msgs
  return batch
end

--- Unread messages for opts.as without moving the cursor.
--- opts.all: everything from seq 1, own messages and others' included.
--- opts.after: look above this seq instead of the cursor.
--- opts.kinds: only these kinds ({"message", "event", "audit"}, see
--- agentchat.kinds); the others are skipped like messages for others.
--- opts.max_messages, opts.max_bytes: at most that many messages / bytes as
--- read prints them (opts.size(m) to count otherwise); batch.remaining
--- says how many were held back, and batch.cursor stops before them.
function Channel:fetch(opts)
  local set = check_read_opts(opts, "fetch")
  local before = after_of(self, opts)
  local inbox, msg, code, exit = self._h:fetch{
    as = opts.as, after = opts.all and 0 or before, all = opts.all and true or false,
  }
  if not inbox then
    return nil, msg, code, exit
  end
  return trim(batch_of(inbox, opts.as, before), opts, set)
end

--- Move the cursor as a read of `batch` does: to batch.cursor (the highest
--- seq of all message files seen in the scan that produced it, or just
--- below what a budget held back), unless another reader moved it further
--- meanwhile: a commit never moves a cursor back past someone else's read.
function Channel:commit(batch)
  if type(batch) ~= "table" or type(batch.agent) ~= "string" then
    error("commit expects a batch from fetch", 2)
  end
  local lock <close>, msg, code, exit = self._h:cursor_lock(batch.agent)
  if not lock then
    return nil, msg, code, exit
  end
  return self._h:advance_cursor(batch.agent, batch.cursor, batch.cursor_before)
end

-- The end of a read or a wait, holding the agent's cursor lock: show the
-- batch (opts.show may return false: output failed, the cursor stays),
-- then move the cursor unless `peek`.
local function deliver(self, batch, opts, peek)
  if opts.show and opts.show(batch) == false then
    return batch
  end
  if not peek then
    local ok, msg, code, exit = self._h:advance_cursor(batch.agent, batch.cursor, batch.cursor_before)
    if not ok then
      return nil, msg, code, exit
    end
  end
  return batch
end

-- The agent's cursor lock, or false (nothing to hold) for a peek.
local function lock_unless(self, agent, peek)
  if peek then
    return false
  end
  return self._h:cursor_lock(agent)
end

--- read: fetch and move the cursor unless opts.peek (or opts.after). Other
--- processes reading as the same agent wait for it (the cursor lock), so
--- no message is delivered twice. opts as for fetch, plus opts.show(batch):
--- called before the cursor moves, with the lock held (the CLI prints
--- there); returning false leaves the cursor where it was.
function Channel:read(opts)
  check_read_opts(opts, "read")
  local peek = opts.peek or opts.after ~= nil
  local lock <close>, msg, code, exit = lock_unless(self, opts.as, peek)
  if lock == nil then
    return nil, msg, code, exit
  end
  local batch
  batch, msg, code, exit = self:fetch(opts)
  if not batch then
    return nil, msg, code, exit
  end
  return deliver(self, batch, opts, peek)
end

--- Block until relevant messages arrive (opts.timeout seconds, default 900;
--- opts.interval, default 5). Returns a batch like fetch, committed unless
--- opts.peek (or opts.after: wait above that seq, cursor untouched); or nil,
--- "timed out", "ETIMEDOUT" / nil, "cancelled by user", "INTERRUPTED".
--- opts.kinds: wait for messages of those kinds only (the others are
--- skipped). opts.show as for read. Several processes waiting as one agent
--- each get different messages: the one that takes the cursor lock first
--- delivers, the others go on waiting.
function Channel:wait(opts)
  local set = check_read_opts(opts, "wait")
  local peek = opts.peek or opts.after ~= nil
  local deadline = sys.monotonic() + (opts.timeout or 900.0)
  local base = after_of(self, opts)      -- the cursor the wait started from
  local floor = base                     -- wait for relevant messages above this
  while true do
    local inbox, msg, code, exit = self._h:wait{
      as = opts.as, after = floor, timeout = math.max(0, deadline - sys.monotonic()),
      interval = opts.interval or 5.0,
    }
    if not inbox then
      return nil, msg, code, exit
    end
    local lock <close>, lmsg, lcode, lexit = lock_unless(self, opts.as, peek)
    if lock == nil then
      return nil, lmsg, lcode, lexit
    end
    local batch
    local now = peek and base or self._h:cursor(opts.as)
    if peek or (now == base and floor == base) then
      batch = trim(batch_of(inbox, opts.as, base), opts, set)
    else
      -- Another reader moved the cursor (or only other kinds arrived):
      -- look again above the cursor, under the lock.
      batch, msg, code, exit = self:fetch{ as = opts.as, kinds = opts.kinds, max_messages = opts.max_messages,
                                           max_bytes = opts.max_bytes, size = opts.size }
      if not batch then
        return nil, msg, code, exit
      end
    end
    if #batch.messages > 0 then
      return deliver(self, batch, opts, peek)
    end
    base = now
    floor = math.max(now, inbox.max_seq, batch.cursor, floor)
  end
end

--- The last n messages in seq order, any recipient; cursors untouched.
--- Returns a batch ({messages, count}). opts.kinds: the last n messages of
--- those kinds (count stays the number of message files).
function Channel:peek(n, opts)
  n = n or 3
  if math.type(n) ~= "integer" then
    error("peek expects an integer", 2)
  end
  local set = kinds.set(opts and opts.kinds, "peek")
  local want = n
  while true do
    local inbox, msg, code, exit = self._h:last(want)
    if not inbox then
      return nil, msg, code, exit
    end
    local batch = batch_of(inbox, nil, nil)
    if not set then
      return batch
    end
    local kept = kinds.keep(batch.messages, set)
    -- Not enough of those kinds among the last `want`: look further back.
    if #kept >= n or want >= batch.count or n <= 0 then
      batch.messages = { table.unpack(kept, math.max(1, #kept - n + 1)) }
      return batch
    end
    want = want < math.maxinteger // 4 and want * 4 or math.maxinteger
  end
end

--- Legacy marker claim: rename task-<id>.md to task-<id>.CLAIMED-<slug>.md.
--- (ch:claim(id, ...) is the task board's lease claim, agentchat.api.tasks.)
function Channel:claim_marker(marker, opts)
  if type(marker) ~= "string" or type(opts) ~= "table" or type(opts.as) ~= "string" then
    error("claim_marker expects (marker, {as = name})", 2)
  end
  return self._h:claim_marker(marker, opts.as)
end

--- The raw "agentchat.channel" handle (for the C bindings of other families).
function Channel:handle()
  return self._h
end

M.Root = Root
M.Channel = Channel

-- Each family adds its methods to Channel (one file per family).
require("agentchat.api.tasks").install(Channel, M)
require("agentchat.api.locks").install(Channel, M)
require("agentchat.api.events").install(Channel, M)
require("agentchat.api.state").install(Channel, M)
require("agentchat.api.protocols").install(Channel, M)
require("agentchat.api.receipts").install(Channel, M)
require("agentchat.api.inbox").install(Channel, M)
require("agentchat.api.fsck").install(Root)
require("agentchat.api.import").install(Channel, M)
M.errors = errors
M.pycompat = py
M.version = "0.1.0"

return M
