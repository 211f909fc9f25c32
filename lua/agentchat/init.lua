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

--- Open a root (need not exist). `path` nil resolves as resolve_root(nil).
function M.open(path)
  if path ~= nil and type(path) ~= "string" then
    error("root path must be a string", 2)
  end
  local root, msg, code = M.resolve_root(path)
  if not root then
    return nil, msg, code
  end
  local st, smsg, scode, sexit = store.open(root)
  if not st then
    return nil, smsg, scode, sexit
  end
  return setmetatable({ path = root, _store = st }, Root)
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

-- What a fetch for `as` gives in each channel of `names` (nil: every
-- channel of the store), cursors untouched: {{channel = name, batch =
-- batch}, ...} in that order, or the first failure. A listed channel that
-- cannot be opened fails; an unlisted one removed since the listing is
-- skipped. Shared by root:unread and root:inbox (api/inbox.lua), hence in
-- M, as a private name.
function M._batches(root, as, names)
  local listed = names ~= nil
  local msg, code, exit
  if not listed then
    names, msg, code, exit = root._store:channels()
    if not names then
      return nil, msg, code, exit
    end
  end
  local out = {}
  for _, name in ipairs(names) do
    local ch
    ch, msg, code, exit = root:channel(name)
    if ch then
      local batch
      batch, msg, code, exit = ch:fetch{ as = as }
      ch:close()
      if not batch then
        return nil, msg, code, exit
      end
      out[#out + 1] = { channel = name, batch = batch }
    elseif listed or code ~= "CHANNEL_NOT_FOUND" then
      return nil, msg, code, exit      -- (unlisted: removed since the listing)
    end
  end
  return out
end

--- Unread counts for agent `as`, the summary the host hooks print:
--- {channel=, count=} for each channel with messages for `as` above its
--- cursor (the relevance of `read`), cursors untouched. opts.channels: the
--- names to look at, in that order (default: every channel, sorted); a
--- listed channel that cannot be opened fails.
function Root:unread(as, opts)
  if type(as) ~= "string" then
    error("unread expects an agent name", 2)
  end
  if opts ~= nil and (type(opts) ~= "table" or (opts.channels ~= nil and type(opts.channels) ~= "table")) then
    error("unread expects {channels = {name, ...}}", 2)
  end
  local batches, msg, code, exit = M._batches(self, as, opts and opts.channels)
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

--- Set the agent's cursor.
function Channel:set_cursor(agent, value)
  return self._h:set_cursor(agent, value)
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

--- Unread messages for opts.as without moving the cursor.
--- opts.all: everything from seq 1, own messages and others' included.
--- opts.after: look above this seq instead of the cursor.
function Channel:fetch(opts)
  if type(opts) ~= "table" or type(opts.as) ~= "string" then
    error("fetch expects {as = name}", 2)
  end
  local before = after_of(self, opts)
  local inbox, msg, code, exit = self._h:fetch{
    as = opts.as, after = opts.all and 0 or before, all = opts.all and true or false,
  }
  if not inbox then
    return nil, msg, code, exit
  end
  return batch_of(inbox, opts.as, before)
end

--- Move the cursor as a read of `batch` does: to the highest seq of all
--- message files seen in the scan that produced it.
function Channel:commit(batch)
  if type(batch) ~= "table" or type(batch.agent) ~= "string" or math.type(batch.cursor) ~= "integer" then
    error("commit expects a batch from fetch (with agent and cursor)", 2)
  end
  return self._h:set_cursor(batch.agent, batch.cursor)
end

-- `result` once commit(obj, result) returned true (it moves cursors), or
-- its failure; `result` alone when `skip` (a peek). The last step of read,
-- wait and root:inbox (api/inbox.lua), hence in M, as a private name.
function M._committed(obj, commit, result, skip)
  if not skip then
    local ok, msg, code, exit = commit(obj, result)
    if not ok then
      return nil, msg, code, exit
    end
  end
  return result
end

--- read: fetch, then commit unless opts.peek.
function Channel:read(opts)
  local batch, msg, code, exit = self:fetch(opts)
  if not batch then
    return nil, msg, code, exit
  end
  return M._committed(self, self.commit, batch, opts.peek or opts.after ~= nil)
end

--- Block until relevant messages arrive (opts.timeout seconds, default 900;
--- opts.interval, default 5). Returns a batch like fetch, committed unless
--- opts.peek (or opts.after: wait above that seq, cursor untouched); or nil,
--- "timed out", "ETIMEDOUT" / nil, "cancelled by user", "INTERRUPTED".
function Channel:wait(opts)
  if type(opts) ~= "table" or type(opts.as) ~= "string" then
    error("wait expects {as = name}", 2)
  end
  local before = after_of(self, opts)
  local inbox, msg, code, exit = self._h:wait{
    as = opts.as, after = before, timeout = opts.timeout or 900.0,
    interval = opts.interval or 5.0,
  }
  if not inbox then
    return nil, msg, code, exit
  end
  local batch = batch_of(inbox, opts.as, before)
  return M._committed(self, self.commit, batch, opts.peek or opts.after ~= nil)
end

--- The last n messages in seq order, any recipient; cursors untouched.
--- Returns a batch ({messages, count}).
function Channel:peek(n)
  n = n or 3
  if math.type(n) ~= "integer" then
    error("peek expects an integer", 2)
  end
  local inbox, msg, code, exit = self._h:last(n)
  if not inbox then
    return nil, msg, code, exit
  end
  return batch_of(inbox, nil, nil)
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
