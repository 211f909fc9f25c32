-- agentchat.protocols: team protocols on top of ordinary messages
-- (docs/protocols.md): typed messages, correlated request/response
-- (shutdown, plan approval, any `<name>_request`) and the team view.
--
--   protocols.check_type(t), check_role(r), check_request_id(id)
--   protocols.extra_fields{type=, request_id=, role=, fields={k=v}}
--                                    -- the {key, value} list h:post writes
--   protocols.request(ch, spec)      -- post a request, wait for its response
--   protocols.await(ch, spec)        -- wait for responses to posted requests
--   protocols.respond(ch, spec)      -- answer a request
--   protocols.team(ch, opts)         -- members, status, lifecycle, silence
--
-- Everything is an ordinary message with extra frontmatter keys after the
-- standard ones (type, request_id, role), so the Python tool reads every
-- file, and the channel is the only state: a response is found by scanning
-- the requester's messages above the request's seq, never through a cursor
-- (the requester's cursor is not touched, so `read` still shows the
-- response). Expected failures return nil, message, code, exit.
local errors = require "agentchat.errors"
local json = require "agentchat.json"
local sys = require "agentchat.sys"
local py = require "agentchat.pycompat"

local M = {}

local fail = errors.fail

--- The types the two mailbox designs use (docs/protocols.md). Other types
--- are allowed when they follow the naming rule (check_type).
M.TYPES = { "message", "broadcast", "shutdown_request", "shutdown_response",
            "plan_approval_request", "plan_approval_response" }
--- The roles of the receipt-bus design.
M.ROLES = { "parent", "child", "steer", "follow_up" }
--- The decisions `respond` writes into the response's status.
M.DECISIONS = { "approved", "rejected" }
--- Lifecycle of a member by the status of its latest status event (an
--- approved shutdown_response from the member means shutdown too).
M.LIFECYCLE = { busy = "working", blocked = "working", ready = "idle", idle = "idle",
                stopped = "shutdown" }
M.DEFAULT_SILENT_AFTER = 600
M.DEFAULT_TIMEOUT = 900
M.TYPE_MAX, M.REQUEST_ID_MAX = 64, 128

local ROLE = {}
for _, r in ipairs(M.ROLES) do
  ROLE[r] = true
end

local function quoted(v)
  if type(v) ~= "string" then
    return tostring(v)
  end
  return py.repr_str(v)
end

--- A message type: one or more dot-separated names, each a lower-case
--- ASCII letter followed by lower-case letters, digits and `_`; at most 64
--- characters (`shutdown_request`, `acme.review_request`).
function M.check_type(t)
  local ok = type(t) == "string" and #t <= M.TYPE_MAX and t ~= ""
  if ok then
    for part in (t .. "."):gmatch("([^.]*)%.") do
      if not part:match("^[a-z][a-z0-9_]*$") then
        ok = false
        break
      end
    end
  end
  if not ok then
    return fail("MESSAGE_INVALID_TYPE", "message type must be lower-case words of [a-z0-9_] starting "
      .. "with a letter, dot-separated, at most 64 characters: " .. quoted(t))
  end
  return true
end

--- A role: parent, child, steer or follow_up.
function M.check_role(r)
  if not ROLE[r] then
    return fail("MESSAGE_INVALID_ROLE", "role must be parent, child, steer or follow_up: " .. quoted(r))
  end
  return true
end

--- A request id: [A-Za-z0-9][A-Za-z0-9._:@-]*, at most 128 characters (a
--- uuid4 hex fits, and so do the ids of other mailbox tools).
function M.check_request_id(id)
  if type(id) ~= "string" or #id > M.REQUEST_ID_MAX or not id:match("^[A-Za-z0-9][A-Za-z0-9._:@%-]*$") then
    return fail("MESSAGE_INVALID_REQUEST_ID",
      "request id must match [A-Za-z0-9][A-Za-z0-9._:@-]* (at most 128 characters): " .. quoted(id))
  end
  return true
end

--- The response type of a request type (`x_request` -> `x_response`), or nil.
function M.response_type(request_type)
  local base = type(request_type) == "string" and request_type:match("^(.+)_request$")
  return base and (base .. "_response") or nil
end

--- Whether a type is a response type (ends in `_response`).
function M.is_response_type(t)
  return type(t) == "string" and t:match("^.+_response$") ~= nil
end

--- A fresh request id (uuid4 hex).
function M.new_request_id()
  return sys.uuid4()
end

--- The extra frontmatter of a typed post, in the order it is written:
--- type, request_id, role, then `fields` sorted by key. Checks the three
--- typed values (a request or response type needs a request id); the
--- generic rules (keys, control characters) are the store's
--- (MESSAGE_INVALID_FIELD).
function M.extra_fields(t)
  local out = {}
  local ok, msg, code, exit
  if t.type ~= nil then
    ok, msg, code, exit = M.check_type(t.type)
    if not ok then
      return nil, msg, code, exit
    end
    if t.request_id == nil and (M.response_type(t.type) or M.is_response_type(t.type)) then
      return fail("MESSAGE_REQUEST_ID_REQUIRED", "a message of type " .. t.type
        .. " needs a request id (or use request/respond, which make and copy one)")
    end
    out[#out + 1] = { "type", t.type }
  end
  if t.request_id ~= nil then
    ok, msg, code, exit = M.check_request_id(t.request_id)
    if not ok then
      return nil, msg, code, exit
    end
    out[#out + 1] = { "request_id", t.request_id }
  end
  if t.role ~= nil then
    ok, msg, code, exit = M.check_role(t.role)
    if not ok then
      return nil, msg, code, exit
    end
    out[#out + 1] = { "role", t.role }
  end
  if t.fields ~= nil then
    if type(t.fields) ~= "table" then
      error("post: fields must be a table of key = value strings", 3)
    end
    local keys = {}
    for k, v in pairs(t.fields) do
      if type(k) ~= "string" or type(v) ~= "string" then
        error("post: fields must be a table of key = value strings", 3)
      end
      if k == "type" or k == "request_id" or k == "role" then
        return fail("MESSAGE_INVALID_FIELD", "frontmatter key '" .. k .. "' has its own option: pass " .. k .. "=")
      end
      keys[#keys + 1] = k
    end
    table.sort(keys)
    for _, k in ipairs(keys) do
      out[#out + 1] = { k, t.fields[k] }
    end
  end
  return out
end

-- ------------------------------------------------------------ helpers

--- Recipients of a `to` value as the reader sees them: ac.recipients
--- (nil for a broadcast, else the list of names). Looked up when called:
--- agentchat loads this module lazily, never while it is loading itself.
local function recipients(to)
  return require("agentchat").recipients(to)
end

local function addressed_to(m, agent)
  local list = recipients(m.fields.to)
  if not list then
    return true
  end
  for _, r in ipairs(list) do
    if r == agent then
      return true
    end
  end
  return false
end

local function is_request(m)
  return M.response_type(m.fields.type) ~= nil and m.fields.request_id ~= nil
end

local function is_response(m)
  return M.is_response_type(m.fields.type) and m.fields.request_id ~= nil
end

--- Every message of the channel, in seq order.
local function all_messages(ch)
  local batch, msg, code, exit = ch:peek(math.maxinteger)
  if not batch then
    return nil, msg, code, exit
  end
  return batch.messages
end

--- The request message with this id (the first one; from `from` when
--- given), or nil.
local function find_request(messages, id, from)
  for _, m in ipairs(messages) do
    if m.fields.request_id == id and is_request(m) and (from == nil or m.from == from) then
      return m
    end
  end
  return nil
end

--- The response object of response message m to request `req`: it
--- approves when its status is `approved`, anything else does not.
local function response_of(m, req)
  local decision = sys.strip(m.fields.status or "")
  return {
    request_id = m.fields.request_id,
    decision = decision,
    approved = decision == "approved",
    reason = sys.strip(m.body or ""),
    from = m.from,
    seq = m.seq,
    file = m.file,
    type = m.fields.type,
    request_seq = req and req.seq or nil,
    message = m,
  }
end

local function seconds(x)
  return py.float_repr(x + 0.0)
end

local function check_timeout(t, what)
  if t ~= nil and type(t) ~= "number" then
    error(what .. ": timeout must be a number of seconds", 3)
  end
end

-- ------------------------------------------------------------ request / await

--- Wait for the responses to requests posted by `as` (docs/protocols.md).
--- spec = {as=, requests = {{request_id=, seq=, to=}, ...}, timeout=900,
--- interval=5}: each request's response is the first message above its
--- seq with that request_id, a `*_response` type, from its `to`, visible
--- to `as`. Existing messages are scanned first, so a response that
--- arrived before the wait is found at once; later ones wake the wait
--- (ch:wait: change notification, no CPU). Returns {[id] = response, ...}
--- and the list of ids still unanswered when the deadline passed (empty
--- when all were answered); or nil, message, "INTERRUPTED"/"IO_ERROR".
local function await_all(ch, spec)
  local pending, npending, after = {}, 0, math.maxinteger
  for _, r in ipairs(spec.requests) do
    if not pending[r.request_id] then
      npending = npending + 1
    end
    pending[r.request_id] = r
    after = math.min(after, r.seq)
  end
  local got = {}
  if npending == 0 then
    return got, {}
  end
  local timeout = spec.timeout or M.DEFAULT_TIMEOUT
  if timeout ~= timeout or timeout < 0 then
    timeout = 0
  end
  local deadline = sys.monotonic() + timeout
  while true do
    local remaining = math.max(deadline - sys.monotonic(), 0)
    local batch, msg, code, exit = ch:wait{ as = spec.as, after = after, timeout = remaining,
                                            interval = spec.interval or 5.0, peek = true }
    if not batch then
      if code ~= "ETIMEDOUT" then
        return nil, msg, code, exit
      end
      break
    end
    for _, m in ipairs(batch.messages) do
      local r = is_response(m) and pending[m.fields.request_id]
      if r and m.seq > r.seq and (r.to == nil or m.from == r.to) then
        got[r.request_id] = response_of(m, r)
        pending[r.request_id] = nil
        npending = npending - 1
      end
    end
    after = math.max(after, batch.cursor)
    if npending == 0 or remaining <= 0 then
      break
    end
  end
  local missing, seen = {}, {}
  for _, r in ipairs(spec.requests) do
    if pending[r.request_id] and not seen[r.request_id] then
      missing[#missing + 1] = r.request_id
      seen[r.request_id] = true
    end
  end
  return got, missing
end

--- The posted request `as` sent with this id, as await_all wants it.
local function request_record(messages, ch, as, id)
  local m = find_request(messages, id, as)
  if not m then
    return fail("REQUEST_NOT_FOUND", "no request " .. id .. " from " .. as .. " in '" .. ch.name .. "'")
  end
  local list = recipients(m.fields.to)
  return { request_id = id, seq = m.seq, to = list and #list == 1 and list[1] or nil, type = m.fields.type,
           from = m.from, file = m.file }
end

--- Wait for the responses to requests `as` posted earlier.
--- spec = {as=, request_ids = {...} (or request_id=), timeout=900,
--- interval=5}. Returns {[id] = response}, missing ids (see await_all),
--- and the list of request records in the order of the ids.
function M.await(ch, spec)
  if type(spec) ~= "table" or type(spec.as) ~= "string" then
    error("await expects {as = name, request_ids = {...}}", 2)
  end
  local ids = spec.request_ids or { spec.request_id }
  if type(ids) ~= "table" or #ids == 0 then
    error("await expects request_ids = {id, ...} or request_id = id", 2)
  end
  check_timeout(spec.timeout, "await")
  for _, id in ipairs(ids) do
    local ok, msg, code, exit = M.check_request_id(id)
    if not ok then
      return nil, msg, code, exit
    end
  end
  local messages, msg, code, exit = all_messages(ch)
  if not messages then
    return nil, msg, code, exit
  end
  local requests = {}
  for _, id in ipairs(ids) do
    local r
    r, msg, code, exit = request_record(messages, ch, spec.as, id)
    if not r then
      return nil, msg, code, exit
    end
    requests[#requests + 1] = r
  end
  local got, missing
  got, missing, code, exit = await_all(ch, { as = spec.as, requests = requests, timeout = spec.timeout,
                                             interval = spec.interval })
  if not got then
    return nil, missing, code, exit
  end
  return got, missing, requests
end

--- One response: `await` for a single id, with ETIMEDOUT when it did not
--- come in time.
function M.await_one(ch, spec)
  local got, msg, code, exit = M.await(ch, spec)
  if not got then
    return nil, msg, code, exit
  end
  local r = got[spec.request_id]
  if not r then
    return fail("ETIMEDOUT", "no response to request " .. spec.request_id .. " in '" .. ch.name
      .. "' after " .. seconds(spec.timeout or M.DEFAULT_TIMEOUT) .. "s", 2)
  end
  return r
end

--- Check the request of spec {from, to, type} and return the responder.
local function check_request(spec)
  local ok, msg, code, exit = M.check_type(spec.type)
  if not ok then
    return nil, msg, code, exit
  end
  if not M.response_type(spec.type) then
    return fail("MESSAGE_INVALID_TYPE", "a request type must end in _request: " .. quoted(spec.type))
  end
  local list = recipients(spec.to)
  if not list or #list ~= 1 or list[1] ~= spec.to then
    return fail("REQUEST_INVALID_RECIPIENT",
      "a request goes to exactly one agent (not a broadcast or a list): " .. quoted(spec.to))
  end
  if list[1] == spec.from then
    return fail("REQUEST_INVALID_RECIPIENT", "a request cannot go to its own sender: " .. quoted(spec.from))
  end
  return list[1]
end

--- Post a request (docs/protocols.md) and, unless spec.wait == false, wait
--- for its response. spec = {from=, to=, type=, title=type, body="",
--- request_id=uuid4, role=, timeout=900, interval=5, wait=true}.
--- Returns the response object and the request {request_id, seq, file,
--- channel, type, to, from}; with wait == false only the request.
--- Failures: nil, message, code, exit, and the request when it was posted
--- (ETIMEDOUT: no response in time).
function M.request(ch, spec)
  if type(spec) ~= "table" or type(spec.from) ~= "string" or type(spec.to) ~= "string" then
    error("request expects {from = name, to = name, type = ...}", 2)
  end
  check_timeout(spec.timeout, "request")
  local responder, msg, code, exit = check_request(spec)
  if not responder then
    return nil, msg, code, exit
  end
  if spec.role ~= nil then
    local ok
    ok, msg, code, exit = M.check_role(spec.role)
    if not ok then
      return nil, msg, code, exit
    end
  end
  local id = spec.request_id
  if id == nil then
    id, msg, code, exit = M.new_request_id()
    if not id then
      return nil, msg, code, exit
    end
  else
    local ok
    ok, msg, code, exit = M.check_request_id(id)
    if not ok then
      return nil, msg, code, exit
    end
    local messages
    messages, msg, code, exit = all_messages(ch)
    if not messages then
      return nil, msg, code, exit
    end
    local old = find_request(messages, id)
    if old then
      return fail("REQUEST_EXISTS", "request " .. id .. " already exists (#" .. old.seq
        .. "); wait for its response instead of posting it again")
    end
  end
  local res
  res, msg, code, exit = ch:post{ from = spec.from, to = responder, title = spec.title or spec.type,
                                  body = spec.body or "", type = spec.type, request_id = id,
                                  role = spec.role }
  if not res then
    return nil, msg, code, exit
  end
  local req = { request_id = id, seq = res.seq, file = res.file, channel = res.channel, type = spec.type,
                to = responder, from = spec.from, warning = res.warning }
  if spec.wait == false then
    return req
  end
  local got, missing
  got, missing, code, exit = await_all(ch, { as = spec.from, requests = { req }, timeout = spec.timeout,
                                             interval = spec.interval })
  if not got then
    return nil, missing, code, exit, req
  end
  if not got[id] then
    return nil, "no response to request " .. id .. " from " .. responder .. " in '" .. ch.name
      .. "' after " .. seconds(spec.timeout or M.DEFAULT_TIMEOUT) .. "s", "ETIMEDOUT", 2, req
  end
  return got[id], req
end

--- Answer a request: spec = {from=, request_id=, approve=true|false
--- (or decision="approved"|"rejected"), reason=, title=}. The response goes
--- to the requester with the matching `*_response` type, the request id,
--- `reply_to` the request and `status` the decision; the body is the
--- reason. Returns {request_id, decision, seq, file, channel, type, to,
--- request_seq}.
function M.respond(ch, spec)
  if type(spec) ~= "table" or type(spec.from) ~= "string" then
    error("respond expects {from = name, request_id = id, approve = true|false}", 2)
  end
  local decision = spec.decision
  if decision == nil then
    if type(spec.approve) ~= "boolean" then
      error("respond expects approve = true|false (or decision = 'approved'|'rejected')", 2)
    end
    decision = spec.approve and "approved" or "rejected"
  elseif decision ~= "approved" and decision ~= "rejected" then
    error("respond: decision must be 'approved' or 'rejected'", 2)
  end
  if spec.reason ~= nil and type(spec.reason) ~= "string" then
    error("respond: reason must be a string", 2)
  end
  local ok, msg, code, exit = M.check_request_id(spec.request_id)
  if not ok then
    return nil, msg, code, exit
  end
  local id = spec.request_id
  local messages
  messages, msg, code, exit = all_messages(ch)
  if not messages then
    return nil, msg, code, exit
  end
  local req = find_request(messages, id)
  if not req then
    return fail("REQUEST_NOT_FOUND", "no request " .. id .. " in '" .. ch.name .. "'")
  end
  if req.from == spec.from then
    return fail("REQUEST_INVALID_RECIPIENT", "request " .. id .. " was sent by " .. spec.from
      .. ", who cannot answer it")
  end
  if not addressed_to(req, spec.from) then
    return fail("REQUEST_INVALID_RECIPIENT", "request " .. id .. " is addressed to "
      .. (req.fields.to or "all") .. ", not " .. spec.from)
  end
  for _, m in ipairs(messages) do
    if m.seq > req.seq and m.from == spec.from and is_response(m) and m.fields.request_id == id then
      return fail("REQUEST_ALREADY_ANSWERED", "request " .. id .. " was already answered by " .. spec.from
        .. " in #" .. m.seq .. " (" .. (m.fields.status or "") .. ")")
    end
  end
  local rtype = M.response_type(req.fields.type)
  local to = req.from
  if to == nil or sys.strip(to) == "" then
    to = "all"
  end
  local res
  res, msg, code, exit = ch:post{ from = spec.from, to = to, reply = req.seq,
                                  title = spec.title or (rtype .. ": " .. decision), status = decision,
                                  body = spec.reason or "", type = rtype, request_id = id }
  if not res then
    return nil, msg, code, exit
  end
  return { request_id = id, decision = decision, seq = res.seq, file = res.file, channel = res.channel,
           type = rtype, to = to, request_seq = req.seq, warning = res.warning }
end

-- ------------------------------------------------------------ team view

local function set_add(list, seen, name)
  if name and name ~= "" and not seen[name] then
    seen[name] = true
    list[#list + 1] = name
  end
end

--- The team of a channel: the members of _meta.json (in their order), then
--- everyone else seen posting or reporting a status (by name; not the
--- `system` actor of audit records), each with
--- its latest status event, its lifecycle (LIFECYCLE; "unknown" without a
--- signal) and when it was last seen (its latest message of any kind).
--- opts = {silent_after=600, now=sys.time()}. Returns {channel,
--- generated_at, silent_after, members = {{name, member, lifecycle,
--- status, detail, harness, status_ts, status_age, status_seq, last_seen,
--- last_seen_age, last_seq, silent, status_keys = nil | {{key, value,
--- set_at, age, ttl, expired, seq}, ...}}, ...}, silent = {names}}: a member is
--- silent when it was never seen or not for more than silent_after
--- seconds, unless it is shut down.
function M.team(ch, opts)
  opts = opts or {}
  local silent_after = opts.silent_after or M.DEFAULT_SILENT_AFTER
  if type(silent_after) ~= "number" or silent_after ~= silent_after or silent_after < 0
      or silent_after == math.huge then
    error("team: silent_after must be a finite number of seconds >= 0", 2)
  end
  if opts.now ~= nil and type(opts.now) ~= "number" then
    error("team: now must be seconds since 1970", 2)
  end
  local now = opts.now or sys.time()
  local meta, msg, code, exit = ch:meta()
  if not meta then
    return nil, msg, code, exit
  end
  local messages
  messages, msg, code, exit = all_messages(ch)
  if not messages then
    return nil, msg, code, exit
  end
  local names, seen, in_meta = {}, {}, {}
  for _, name in ipairs(meta.members) do
    set_add(names, seen, name)
    in_meta[name] = true
  end
  local others, state = {}, {}
  local function st(name)
    local s = state[name]
    if not s then
      s = {}
      state[name] = s
    end
    return s
  end
  local events = require "agentchat.events"
  local kinds = require "agentchat.kinds"
  for _, m in ipairs(messages) do
    local from = m.from
    -- `system` is the actor of the audit records that `state --write` and
    -- `compact` post without --as: a tool, not a team member.
    if from == "system" and kinds.of(m) == "audit" then
      from = nil
    end
    if from and from ~= "" then
      set_add(others, seen, from)
      local s = st(from)
      s.last_seq, s.last_ts, s.mtime = m.seq, m.ts, m.mtime
    end
    local status = m.fields.status or ""
    if status == "event.status" then
      local obj = json.loads(m.body or "")
      if type(obj) == "table" and events.validate(obj) and obj.event == "status" then
        local s = st(obj.agent)
        s.event = { status = obj.status, detail = obj.detail, harness = obj.harness, ts = obj.ts, seq = m.seq }
        s.signal = M.LIFECYCLE[obj.status]
        set_add(others, seen, obj.agent)
      end
    elseif m.fields.type == "shutdown_response" and sys.strip(status) == "approved" and from and from ~= "" then
      st(from).signal = "shutdown"
    end
  end
  table.sort(others)
  for _, name in ipairs(others) do
    names[#names + 1] = name
  end
  local function age(ts, fallback)
    local t = ts and sys.iso_epoch(ts) or fallback
    if not t then
      return nil
    end
    return math.max(0, math.floor(now - t))
  end
  -- Status keys (docs/status-keys.md): each member's current values.
  local keys_of = {}
  for _, e in ipairs(require("agentchat.statuskeys").current(messages, { now = now })) do
    keys_of[e.agent] = keys_of[e.agent] or {}
    table.insert(keys_of[e.agent], { key = e.key, value = e.value, set_at = e.set_at, age = e.age,
                                     ttl = e.ttl, expired = e.expired, seq = e.seq })
  end
  local out = { channel = ch.name, generated_at = sys.now_iso(0), silent_after = silent_after,
                members = {}, silent = {} }
  for _, name in ipairs(names) do
    local s = state[name] or {}
    local e = s.event or {}
    local last_age = s.last_seq and age(s.last_ts, s.mtime) or nil
    local lifecycle = s.signal or "unknown"
    local silent = lifecycle ~= "shutdown" and (last_age == nil or last_age > silent_after)
    out.members[#out.members + 1] = {
      name = name, member = in_meta[name] == true, lifecycle = lifecycle,
      status = e.status, detail = e.detail, harness = e.harness, status_ts = e.ts,
      status_age = e.ts and age(e.ts) or nil, status_seq = e.seq,
      last_seen = s.last_ts, last_seen_age = last_age, last_seq = s.last_seq, silent = silent,
      status_keys = keys_of[name],
    }
    if silent then
      out.silent[#out.silent + 1] = name
    end
  end
  return out
end

return M
