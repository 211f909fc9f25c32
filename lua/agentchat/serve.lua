-- agentchat.serve: `agent-chat serve`, a read-only live web view of a root
-- (docs/web.md). The HTTP server is C (src/http/server.h: libmicrohttpd,
-- a thread per connection, a watcher thread per streamed channel); this
-- module is the one loop that answers its requests, on the thread that
-- owns Lua, with the Lua API scripts use (root:channels(), root:unread(),
-- ch:fetch{}, ch:tasks(), ch:locks(), ch:team(), ch:receipts(), ch:state()).
--
--   local serve = require "agentchat.serve"
--   local code, reason = serve.run(root, {host=, port=, token=, channels=,
--                                         max_streams=, out=, log=})
--   -- reason: "signal" (SIGINT/SIGTERM: the caller exits 130) or "error"
--   serve.route(state, request) -- status, content type, body (one request;
--                                  the specs call it without a server)
--
-- Routes (GET and HEAD only; the server refuses anything else with 405):
--   /                          the page (the first channel)
--   /c/CH[?before=SEQ]         the page of channel CH
--   /c/CH/fragment/{board,locks,team}, /fragment/channels[?current=CH]
--                              the parts the page's script refreshes
--   /static/app.js, /static/app.css
--   /api/channels              [{name, count, topic, members, last_seq, unread}]
--   /api/channels/CH/messages[?before=SEQ|after=SEQ][&limit=N]
--   /api/channels/CH/{tasks,locks,team,state}, /api/channels/CH/receipts/SEQ
--   /api/channels/CH/events[?after=SEQ]   Server-Sent Events: "message"
--                              events ({seq, kind, html, message}) as posts
--                              arrive, after the ones above SEQ (or above
--                              the Last-Event-ID a reconnecting client sends)
local ac = require "agentchat"
local errors = require "agentchat.errors"
local json = require "agentchat.json"
local kinds = require "agentchat.kinds"
local sys = require "agentchat.sys"
local web = require "agentchat.web"

local M = {}

M.DEFAULT_HOST = "127.0.0.1"
M.DEFAULT_PORT = 8765
M.PAGE_MESSAGES = 100           -- messages the page shows
M.MAX_LIMIT = 500               -- the most one /messages page returns
M.CATCH_UP = 500                -- the most a (re)connecting stream is sent first

local HTML = "text/html; charset=utf-8"
local JSON = "application/json; charset=utf-8"
local TEXT = "text/plain; charset=utf-8"

-- ---------------------------------------------------------------- JSON

-- Strings that are not UTF-8 (a hand-made file name) cannot be JSON:
-- their bytes above 127 become U+FFFD.
local function clean(v, depth)
  local t = type(v)
  if t == "string" then
    if sys.utf8_valid(v) then
      return v
    end
    return (v:gsub("[\128-\255]", "\239\191\189"))
  elseif t == "table" and depth < 64 then
    local out = {}
    for k, x in pairs(v) do
      out[clean(k, depth + 1)] = clean(x, depth + 1)
    end
    return setmetatable(out, getmetatable(v))
  end
  return v
end

-- JSON text with <, > and & as \u escapes, so that no string in it can
-- close a tag if someone embeds it in HTML.
local function encode(v)
  local s = json.dumps(clean(v, 0), { ensure_ascii = false })
  return (s:gsub("[<>&]", function(c)
    return string.format("\\u%04x", c:byte())
  end))
end
M.encode = encode

local function array(t)
  return json.array(t or {})
end

-- A message for the API: its frontmatter and body, kind and type.
local function message_json(m)
  local fields = m.fields or {}
  return {
    seq = m.seq, file = m.file, from = m.from, to = m.to, title = m.title, status = m.status, ts = m.ts,
    reply_to = m.reply_to, kind = kinds.of(m), type = fields.type, request_id = fields.request_id,
    role = fields.role, body = m.body, fields = fields, incomplete = m.incomplete or nil,
  }
end

-- ---------------------------------------------------------------- state

-- What the loop keeps: the root, the channels it may show, the token, the
-- hubs (one per streamed channel: its number, the last seq published).
local function new_state(root, opts)
  local allowed
  if opts.channels and #opts.channels > 0 then
    allowed = {}
    for _, c in ipairs(opts.channels) do
      allowed[c] = true
    end
  end
  return { root = root, opts = opts, allowed = allowed, hubs = {}, by_hub = {},
           q = opts.token and ("token=" .. web.urlencode(opts.token)) or nil }
end

local STATUS = {
  CHANNEL_NOT_FOUND = 404, CHANNEL_INVALID_NAME = 400, RECEIPT_NOT_FOUND = 404, RECEIPT_INVALID_SEQ = 400,
  NOT_FOUND = 404, BAD_REQUEST = 400,
}

local function fail_json(code, msg)
  return STATUS[code] or 500, JSON, encode({ error = { code = code, message = msg } })
end

local function fail_html(code, msg)
  return STATUS[code] or 500, HTML, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
    .. web.escape(code) .. "</title></head><body><p>" .. web.escape(code .. ": " .. tostring(msg))
    .. "</p></body></html>\n"
end

-- The channels shown: every channel of the root, or the --channels ones.
local function channel_names(st)
  local names, msg, code = st.root:channel_names()
  if not names then
    return nil, msg, code
  end
  if not st.allowed then
    return names
  end
  local out = {}
  for _, n in ipairs(names) do
    if st.allowed[n] then
      out[#out + 1] = n
    end
  end
  return out
end

-- Open channel `name` when it is one this server shows (a name is checked
-- as everywhere: no path escapes).
local function open_channel(st, name)
  local ok, msg, code = require("agentchat.store").check_name(name)
  if not ok then
    return nil, msg, code
  end
  if st.allowed and not st.allowed[name] then
    return nil, "channel '" .. name .. "' is not served", "CHANNEL_NOT_FOUND"
  end
  return st.root:channel(name)
end

-- A non-negative integer query argument, or nil (absent), or false (bad).
local function int_arg(args, key)
  local v = args[key]
  if v == nil or v == "" then
    return nil
  end
  if not v:match("^%d+$") or #v > 15 then
    return false
  end
  return tonumber(v)
end

-- ---------------------------------------------------------------- data

-- Every channel with its count, topic, members and unread per member.
local function channel_list(st)
  local names, msg, code = channel_names(st)
  if not names then
    return nil, msg, code
  end
  local all
  all, msg, code = st.root:channels()
  if not all then
    return nil, msg, code
  end
  local wanted = {}
  for _, n in ipairs(names) do
    wanted[n] = true
  end
  local list, members, seen = {}, {}, {}
  for _, c in ipairs(all) do
    if wanted[c.name] then
      local meta = c.meta or {}
      local item = { name = c.name, count = c.count or 0, topic = meta.topic, members = array(meta.members),
                     last_seq = c.last and c.last.seq or 0, last_ts = c.last and c.last.ts or nil, unread = {} }
      list[#list + 1] = item
      for _, m in ipairs(meta.members or {}) do
        if not seen[m] then
          seen[m] = true
          members[#members + 1] = m
        end
      end
    end
  end
  -- Unread per member: one unread() per member over these channels.
  for _, m in ipairs(members) do
    local counts = {}
    local got = st.root:unread(m, { channels = names })
    for _, u in ipairs(got or {}) do
      counts[u.channel] = u.count
    end
    for _, item in ipairs(list) do
      for _, im in ipairs(item.members) do
        if im == m then
          item.unread[#item.unread + 1] = { member = m, count = counts[item.name] or 0 }
        end
      end
    end
  end
  for _, item in ipairs(list) do
    item.unread = array(item.unread)
  end
  return array(list)
end

-- A page of messages: the last `limit` below `before` (or the newest), or
-- the first `limit` above `after`. Returns the list, the seq of an older
-- page (or nil) and the channel's highest seq.
local function messages_page(ch, before, after, limit)
  local batch, msg, code
  if after then
    batch, msg, code = ch:fetch{ as = "agent-chat-serve", all = true, after = after, max_messages = limit }
  elseif before then
    local from = math.max(0, before - 1 - limit)
    batch, msg, code = ch:fetch{ as = "agent-chat-serve", all = true, after = from }
  else
    batch, msg, code = ch:peek(limit)
  end
  if not batch then
    return nil, msg, code
  end
  local list = {}
  for _, m in ipairs(batch.messages) do
    if not before or m.seq < before then
      list[#list + 1] = m
    end
  end
  while #list > limit do
    table.remove(list, 1)
  end
  local older = list[1] and list[1].seq > 1 and list[1].seq or nil
  return list, older, batch.count
end

local function panel_data(ch)
  local now = sys.time()
  local tasks = ch:tasks() or {}
  local locks = ch:locks() or {}
  local team = ch:team() or { members = {} }
  return tasks, locks, team, now
end

-- ---------------------------------------------------------------- routes

local function page(st, name, args)
  local list, msg, code = channel_list(st)
  if not list then
    return fail_html(code, msg)
  end
  if name == nil then
    name = list[1] and list[1].name
  end
  local p = { root = st.root.path, channels = list, q = st.q, token = st.opts.token }
  if name then
    local ch
    ch, msg, code = open_channel(st, name)
    if not ch then
      return fail_html(code, msg)
    end
    local before = int_arg(args, "before")
    if before == false then
      ch:close()
      return fail_html("BAD_REQUEST", "before must be a message seq")
    end
    local messages, older = messages_page(ch, before, nil, M.PAGE_MESSAGES)
    if not messages then
      ch:close()
      return fail_html(older, "could not read the messages")
    end
    local meta = ch:meta() or {}
    p.channel, p.topic, p.messages, p.older = name, meta.topic, messages, older
    p.last_seq = #messages > 0 and messages[#messages].seq or (before and before - 1) or 0
    p.tasks, p.locks, p.team, p.now = panel_data(ch)
    ch:close()
  end
  return 200, HTML, web.page(p)
end

local function fragment(st, name, which, args)
  if name == nil then
    if which ~= "channels" then
      return fail_html("NOT_FOUND", "no such fragment")
    end
    local list, msg, code = channel_list(st)
    if not list then
      return fail_html(code, msg)
    end
    return 200, HTML, web.channels(list, args.current, st.q)
  end
  local ch, msg, code = open_channel(st, name)
  if not ch then
    return fail_html(code, msg)
  end
  local tasks, locks, team, now = panel_data(ch)
  ch:close()
  if which == "board" then
    return 200, HTML, web.board(tasks, now)
  elseif which == "locks" then
    return 200, HTML, web.locks(locks, now)
  elseif which == "team" then
    return 200, HTML, web.team(team)
  end
  return fail_html("NOT_FOUND", "no such fragment")
end

-- /api/channels/CH/<what>[/<arg>]
local function api_channel(st, name, what, extra, args)
  local ch, msg, code = open_channel(st, name)
  if not ch then
    return fail_json(code, msg)
  end
  local out
  if what == "messages" and not extra then
    local before, after, limit = int_arg(args, "before"), int_arg(args, "after"), int_arg(args, "limit")
    if before == false or after == false or limit == false or limit == 0 or (before and after) then
      ch:close()
      return fail_json("BAD_REQUEST", "before, after and limit are message seqs (limit > 0), not both before and after")
    end
    limit = math.min(limit or M.PAGE_MESSAGES, M.MAX_LIMIT)
    local list, older, count = messages_page(ch, before, after, limit)
    if list then
      local ms = {}
      for i, m in ipairs(list) do
        ms[i] = message_json(m)
      end
      out = { channel = name, messages = array(ms), older = older, count = count }
    else
      msg, code = older, count
    end
  elseif what == "tasks" and not extra then
    out, msg, code = ch:tasks()
    out = out and array(out)
  elseif what == "locks" and not extra then
    out, msg, code = ch:locks()
    out = out and array(out)
  elseif what == "team" and not extra then
    out, msg, code = ch:team()
  elseif what == "state" and not extra then
    out, msg, code = ch:state()
  elseif what == "receipts" and extra then
    local seq = extra:match("^%d+$") and #extra <= 15 and tonumber(extra)
    if not seq or seq < 1 then
      msg, code = "a receipt names a message seq", "RECEIPT_INVALID_SEQ"
    else
      out, msg, code = ch:receipts(seq)
    end
  else
    msg, code = "no such resource", "NOT_FOUND"
  end
  ch:close()
  if out == nil then
    return fail_json(code or "IO_ERROR", msg)
  end
  return 200, JSON, encode(out)
end

--- One request: status, content type, body. `st` is the loop's state.
function M.route(st, req)
  local path, args = req.path, req.args or {}
  if path == "/" then
    return page(st, nil, args)
  end
  if path == "/static/app.js" or path == "/static/app.css" then
    local assets = require "agentchat.web_assets"
    local name = path:match("[^/]+$")
    return 200, assets.types[name], assets[name]
  end
  if path == "/api/channels" then
    local list, msg, code = channel_list(st)
    if not list then
      return fail_json(code, msg)
    end
    return 200, JSON, encode({ channels = list })
  end
  if path == "/fragment/channels" then
    return fragment(st, nil, "channels", args)
  end
  local parts = {}
  for seg in path:gmatch("[^/]+") do
    parts[#parts + 1] = seg
  end
  if path:find("//", 1, true) or path:sub(-1) == "/" then
    parts = {}
  end
  if parts[1] == "c" and parts[2] and not parts[3] then
    return page(st, parts[2], args)
  elseif parts[1] == "c" and parts[2] and parts[3] == "fragment" and parts[4] and not parts[5] then
    return fragment(st, parts[2], parts[4], args)
  elseif parts[1] == "api" and parts[2] == "channels" and parts[3] and parts[4] and #parts <= 5 then
    return api_channel(st, parts[3], parts[4], parts[5], args)
  end
  if parts[1] == "api" then
    return fail_json("NOT_FOUND", "no such resource")
  end
  return 404, TEXT, "not found\n"
end

-- ---------------------------------------------------------------- events

-- One SSE event for message m.
local function sse_event(m)
  local data = encode({ seq = m.seq, kind = kinds.of(m), html = web.message(m), message = message_json(m) })
  return string.format("id: %d\nevent: message\ndata: %s\n\n", m.seq, data)
end

-- The messages of channel `name` above `after` (at most `max`), or nil.
local function messages_after(st, name, after, max)
  local ch = open_channel(st, name)
  if not ch then
    return nil
  end
  local batch = ch:fetch{ as = "agent-chat-serve", all = true, after = after, max_messages = max }
  ch:close()
  return batch
end

-- The hub of channel `name`: made on first use with a channel handle of
-- its own (the watcher thread's alone), its last published seq read
-- after its watch opened, so nothing posted in between is missed.
local function hub_of(st, srv, name)
  local h = st.hubs[name]
  if h then
    return h
  end
  local wroot, msg, code
  if st.opts.reopen then
    wroot, msg, code = st.opts.reopen()
  else
    wroot, msg, code = ac.open(st.root.path)
  end
  if not wroot then
    return nil, msg, code
  end
  local wch
  wch, msg, code = wroot:channel(name)
  if not wch then
    return nil, msg, code
  end
  local n
  n, msg, code = srv:hub(name, wch:handle())
  if not n then
    wch:close()
    return nil, msg, code
  end
  local ch = open_channel(st, name)
  local count = 0
  if ch then
    local batch = ch:peek(1)
    count = batch and batch.messages[1] and batch.messages[1].seq or 0
    ch:close()
  end
  h = { n = n, name = name, seq = count, keep = { wroot, wch } }
  st.hubs[name] = h
  st.by_hub[n] = h
  return h
end

local function open_stream(st, srv, req, name)
  local ch, msg, code = open_channel(st, name)
  if not ch then
    return srv:respond(req.id, fail_json(code, msg))
  end
  ch:close()
  if req.head then
    return srv:respond(req.id, 200, "text/event-stream", "")
  end
  local h
  h, msg, code = hub_of(st, srv, name)
  if not h then
    return srv:respond(req.id, fail_json(code, msg))
  end
  -- Catch-up: what the client has not seen, up to what the hub published.
  local after = req.last_event_id and req.last_event_id:match("^%d+$") and tonumber(req.last_event_id)
    or int_arg(req.args or {}, "after")
  local pre = { "retry: 2000\n\n" }
  if after and after < h.seq then
    local batch = messages_after(st, name, math.max(after, h.seq - M.CATCH_UP), M.CATCH_UP)
    for _, m in ipairs(batch and batch.messages or {}) do
      if m.seq <= h.seq then
        pre[#pre + 1] = sse_event(m)
      end
    end
  end
  if srv:stream(req.id, h.n, table.concat(pre)) == "busy" and st.opts.log then
    st.opts.log("serve: refused an event stream: " .. st.opts.max_streams .. " are open (--max-streams)")
  end
end

-- A hub's channel may have changed: publish what is new.
local function publish(st, srv, n)
  local h = st.by_hub[n]
  if not h then
    return
  end
  while true do
    local batch = messages_after(st, h.name, h.seq, 200)
    if not batch or #batch.messages == 0 then
      return
    end
    local out = {}
    for _, m in ipairs(batch.messages) do
      out[#out + 1] = sse_event(m)
      h.seq = math.max(h.seq, m.seq)
    end
    srv:publish(h.n, table.concat(out))
    if (batch.remaining or 0) == 0 then
      return
    end
  end
end

local function handle(st, srv, req)
  local name = req.path:match("^/api/channels/([^/]+)/events$")
  if name then
    return open_stream(st, srv, req, name)
  end
  local status, ctype, body = M.route(st, req)
  srv:respond(req.id, status, ctype, req.head and "" or body)
end

-- A failure inside one request is that request's 500, not the server's
-- end; an interrupt raised in Lua (the host's hook) ends the loop.
local function guarded(f, ...)
  return xpcall(f, function(e)
    if errors.is_error(e) or (type(e) == "table" and e.code) then
      return e
    end
    return debug.traceback(tostring(e), 2)
  end, ...)
end

M.new_state = new_state

--- Serve until SIGINT/SIGTERM. opts: host, port, token, channels (list or
--- nil), max_streams, max_connections, out(line) for the address line,
--- log(line) for warnings, reopen() -> another Root of the same store (a
--- streamed channel's watcher gets a handle of its own; default
--- ac.open(root.path)). Returns 0, "signal" after a signal; 1, "error",
--- message, code when the server could not start.
function M.run(root, opts)
  local http = require "agentchat.http"
  local st = new_state(root, opts)
  local srv, msg, code = http.start{
    host = opts.host or M.DEFAULT_HOST, port = opts.port or M.DEFAULT_PORT, token = opts.token,
    check_host = not opts.token, max_streams = opts.max_streams, max_connections = opts.max_connections,
  }
  if not srv then
    return 1, "error", msg, code
  end
  local host = opts.host or M.DEFAULT_HOST
  local shown = host:find(":", 1, true) and ("[" .. host .. "]") or host
  if opts.out then
    opts.out(string.format("serving %s at http://%s:%d/%s", root.path, shown, srv:port(),
      opts.token and " (token required)" or ""))
  end
  local reason, emsg, ecode = "signal", nil, nil
  while true do
    local item, nmsg, ncode = srv:next()
    if item == nil then
      if ncode ~= "INTERRUPTED" then
        reason, emsg, ecode = "error", nmsg, ncode
      end
      break
    end
    if item then
      local ok, err
      if item.kind == "request" then
        ok, err = guarded(handle, st, srv, item)
        if not ok then
          srv:respond(item.id, 500, TEXT, "internal error\n")
        end
      else
        ok, err = guarded(publish, st, srv, item.hub)
      end
      if not ok then
        if type(err) == "table" and err.code == "INTERRUPTED" then
          break
        end
        if opts.log then
          opts.log("serve: " .. (type(err) == "table" and ((err.code or "?") .. ": " .. tostring(err.message))
            or tostring(err):match("^[^\n]*")))
        end
      end
    end
  end
  srv:close()
  for _, h in pairs(st.hubs) do
    h.keep[2]:close()
    h.keep[1]:close()
  end
  if reason == "error" then
    return 1, reason, emsg, ecode
  end
  return 0, reason
end

return M
