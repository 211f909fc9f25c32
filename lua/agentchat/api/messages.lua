-- agentchat.api.messages: reading, the methods of agentchat.Channel and Root
-- at the heart of the API (docs/lua-api.md): fetch, read, wait, peek,
-- commit, advance_cursor, claim_marker, root:channels and root:unread, and
-- agentchat.body_of. A family like the others (see init.lua, M._families):
-- a command that does not read does not load it (ch:post is api/post.lua).
local kinds = require "agentchat.kinds"
local sys = require "agentchat.sys"

local A = {}

function A.install(Channel, M)
  local Root = M.Root

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

  -- (Messages made with `shown` are already what they are to be.)
  local function batch_of(inbox, agent, before, shown)
    if not shown then
      for _, m in ipairs(inbox.messages) do
        message(m)
      end
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

  -- How the binding is to give the messages (its fetch, wait and last
  -- options): printed by C when nothing is to be kept or held back, else
  -- as read shows them when that is all that is needed, else whole.
  local function binding_how(opts, set)
    if opts.printed and not (set or opts.max_messages or opts.max_bytes) then
      return { printed = kinds.PRINTED }
    end
    return { shown = (opts.printed or opts.shown) and true or nil }
  end

  -- The batch of an inbox fetched as binding_how said, kept and budgeted
  -- (trim); with opts.printed, the messages as batch.printed and batch.n.
  local function make_batch(inbox, agent, before, opts, set)
    if inbox.printed then
      return { agent = agent, messages = {}, n = inbox.n, printed = inbox.printed,
               skipped = inbox.skipped, count = inbox.count, cursor_before = before,
               cursor = inbox.max_seq, remaining = 0 }
    end
    local batch = trim(batch_of(inbox, agent, before, opts.printed or opts.shown), opts, set)
    if opts.printed then
      batch.n, batch.printed, batch.messages = #batch.messages, kinds.print(batch.messages), {}
    end
    return batch
  end

  -- How many messages a batch holds (printed ones included).
  local function size_of(batch)
    return batch.n or #batch.messages
  end

  --- Unread messages for opts.as without moving the cursor.
  --- opts.all: everything from seq 1 (above opts.after when it is given),
  --- own messages and others' included.
  --- opts.after: look above this seq instead of the cursor.
  --- opts.kinds: only these kinds ({"message", "event", "audit"}, see
  --- agentchat.kinds); the others are skipped like messages for others.
  --- opts.max_messages, opts.max_bytes: at most that many messages / bytes as
  --- read prints them (opts.size(m) to count otherwise); batch.remaining
  --- says how many were held back, and batch.cursor stops before them.
  --- opts.shown: each message only as read shows it ({seq, status, shown},
  --- docs/lua-api.md); opts.printed: no messages, but batch.printed, what
  --- read prints for them, and batch.n, how many: each at a fraction of the
  --- cost of whole messages.
  function Channel:fetch(opts)
    local set = check_read_opts(opts, "fetch")
    local before = after_of(self, opts)
    local how = binding_how(opts, set)
    local from = before
    if opts.all and opts.after == nil then
      from = 0
    end
    local inbox, msg, code, exit = self._h:fetch{
      as = opts.as, after = from, all = opts.all and true or false,
      shown = how.shown, printed = how.printed,
    }
    if not inbox then
      return nil, msg, code, exit
    end
    return make_batch(inbox, opts.as, before, opts, set)
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
      local how = binding_how(opts, set)
      local inbox, msg, code, exit = self._h:wait{
        as = opts.as, after = floor, timeout = math.max(0, deadline - sys.monotonic()),
        interval = opts.interval or 5.0, shown = how.shown, printed = how.printed,
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
        batch = make_batch(inbox, opts.as, base, opts, set)
      else
        -- Another reader moved the cursor (or only other kinds arrived):
        -- look again above the cursor, under the lock.
        batch, msg, code, exit = self:fetch{ as = opts.as, kinds = opts.kinds, max_messages = opts.max_messages,
                                             max_bytes = opts.max_bytes, size = opts.size, shown = opts.shown,
                                             printed = opts.printed }
        if not batch then
          return nil, msg, code, exit
        end
      end
      if size_of(batch) > 0 then
        return deliver(self, batch, opts, peek)
      end
      base = now
      floor = math.max(now, inbox.max_seq, batch.cursor, floor)
    end
  end

  --- The last n messages in seq order, any recipient; cursors untouched.
  --- Returns a batch ({messages, count}). opts.kinds: the last n messages of
  --- those kinds (count stays the number of message files). opts.shown and
  --- opts.printed as for fetch.
  function Channel:peek(n, opts)
    n = n or 3
    if math.type(n) ~= "integer" then
      error("peek expects an integer", 2)
    end
    local set = kinds.set(opts and opts.kinds, "peek")
    opts = opts or {}
    local how = binding_how(opts, set)
    local want = n
    while true do
      local inbox, msg, code, exit = self._h:last(want, how)
      if not inbox then
        return nil, msg, code, exit
      end
      if inbox.printed then
        return { messages = {}, n = inbox.n, printed = inbox.printed, skipped = inbox.skipped,
                 count = inbox.count }
      end
      local batch = batch_of(inbox, nil, nil, opts.printed or opts.shown)
      local kept = set and kinds.keep(batch.messages, set) or batch.messages
      -- Not enough of those kinds among the last `want`: look further back.
      if not set or #kept >= n or want >= batch.count or n <= 0 then
        if set then
          batch.messages = { table.unpack(kept, math.max(1, #kept - n + 1)) }
        end
        if opts.printed then
          batch.n, batch.printed, batch.messages = #batch.messages, kinds.print(batch.messages), {}
        end
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
end

return A
