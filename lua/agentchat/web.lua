-- agentchat.web: the HTML of `agent-chat serve` (docs/web.md): the page,
-- its fragments and the safe Markdown of message bodies.
--
--   local web = require "agentchat.web"
--   web.escape(s)                 -- text for HTML (& < > " ' as entities)
--   web.markdown(s)               -- a body as HTML: escaped first, then a
--                                 -- small safe subset (see below)
--   web.message(m [, links])      -- one message as an <article> (audit
--                                 -- messages folded in a <details>)
--   web.timeline(messages)        -- the messages, requests linked to responses
--   web.channels(list, current, q)  web.team(team), web.board(tasks, now),
--   web.locks(locks, now)         -- the fragments the page refreshes
--   web.page{...}                 -- the whole page
--
-- Every value that comes from a store (titles, bodies, names, file names,
-- task and lock fields) goes through escape() before it is part of the
-- HTML, so a body holding `<script>` or `" onerror=` is text on the page.
-- The Markdown subset only ever adds tags of its own around escaped text:
-- fenced and inline code, **bold**, *emphasis*, headings, lists, quotes,
-- and links whose target is http(s) or mailto (anything else stays text).
-- The page's script comes from /static/app.js and the Content-Security-
-- Policy of the server allows no other, so even a mistake here would not
-- run a script.
local json = require "agentchat.json"
local kinds = require "agentchat.kinds"
local sys = require "agentchat.sys"

local M = {}

local ENTITIES = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }

--- Text for HTML: the five special characters as entities, NUL as U+FFFD.
function M.escape(s)
  if s == nil then
    return ""
  end
  s = tostring(s)
  return (s:gsub("[&<>\"']", ENTITIES):gsub("%z", "\239\191\189"))
end
local esc = M.escape

-- A query string carrying the token (the page's links keep it).
local function with_query(path, q)
  if q and q ~= "" then
    return path .. (path:find("?", 1, true) and "&" or "?") .. q
  end
  return path
end

-- Percent-encoding of a path segment or query value.
function M.urlencode(s)
  return (tostring(s):gsub("[^%w%-%._~]", function(c)
    return string.format("%%%02X", c:byte())
  end))
end

-- ---------------------------------------------------------------- markdown

-- Inline markup of one escaped line. Code spans are cut out first (their
-- text stays as it is), then links, bold and emphasis.
local function inline(s)
  local codes = {}
  s = s:gsub("`([^`]+)`", function(c)
    codes[#codes + 1] = "<code>" .. c .. "</code>"
    return "\1" .. #codes .. "\2"
  end)
  s = s:gsub("%[([^%]]+)%]%(([^%s%)]+)%)", function(text, url)
    -- url is escaped text already: no quote can end the attribute.
    if url:match("^https?://") or url:match("^mailto:") then
      return '<a href="' .. url .. '" rel="noopener noreferrer nofollow">' .. text .. "</a>"
    end
    return nil
  end)
  s = s:gsub("%*%*([^*]+)%*%*", "<strong>%1</strong>")
  s = s:gsub("%f[%w*]%*([^*%s][^*]-)%*", "<em>%1</em>")
  return (s:gsub("\1(%d+)\2", function(n)
    return codes[tonumber(n)]
  end))
end

--- A message body as HTML (see the module comment for the subset).
function M.markdown(text)
  local out = {}
  local para, list, list_tag, quote = {}, nil, nil, {}
  local function flush()
    if #para > 0 then
      out[#out + 1] = "<p>" .. table.concat(para, "<br>\n") .. "</p>"
      para = {}
    end
    if list then
      out[#out + 1] = "<" .. list_tag .. ">" .. table.concat(list) .. "</" .. list_tag .. ">"
      list = nil
    end
    if #quote > 0 then
      out[#out + 1] = "<blockquote>" .. table.concat(quote, "<br>\n") .. "</blockquote>"
      quote = {}
    end
  end
  local code = nil
  text = tostring(text or ""):gsub("\r\n", "\n")
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if code then
      if line:match("^%s*```") then
        out[#out + 1] = "<pre><code>" .. table.concat(code, "\n") .. "</code></pre>"
        code = nil
      else
        code[#code + 1] = esc(line)
      end
    elseif line:match("^%s*```") then
      flush()
      code = {}
    else
      local e = esc(line)
      local hashes, heading = e:match("^(#+)%s+(.*)$")
      local bullet = e:match("^%s*[-*+]%s+(.*)$")
      local numbered = e:match("^%s*%d+[.)]%s+(.*)$")
      local quoted = e:match("^&gt;%s?(.*)$")
      if e:match("^%s*$") then
        flush()
      elseif hashes and #hashes <= 6 then
        flush()
        local level = math.min(#hashes + 2, 6)
        out[#out + 1] = string.format("<h%d>%s</h%d>", level, inline(heading), level)
      elseif bullet or numbered then
        local tag = bullet and "ul" or "ol"
        if #para > 0 or #quote > 0 or (list and list_tag ~= tag) then
          flush()
        end
        list = list or {}
        list_tag = tag
        list[#list + 1] = "<li>" .. inline(bullet or numbered) .. "</li>"
      elseif quoted then
        if #para > 0 or list then
          flush()
        end
        quote[#quote + 1] = inline(quoted)
      else
        if list or #quote > 0 then
          flush()
        end
        para[#para + 1] = inline(e)
      end
    end
  end
  if code then
    out[#out + 1] = "<pre><code>" .. table.concat(code, "\n") .. "</code></pre>"
  end
  flush()
  return table.concat(out, "\n")
end

-- ---------------------------------------------------------------- time

--- "3m 05s", "2h 10m", "4d 1h" for a number of seconds (>= 0).
function M.duration(s)
  s = math.floor(s)
  if s < 60 then
    return s .. "s"
  elseif s < 3600 then
    return string.format("%dm %02ds", s // 60, s % 60)
  elseif s < 86400 then
    return string.format("%dh %02dm", s // 3600, s % 3600 // 60)
  end
  return string.format("%dd %dh", s // 86400, s % 86400 // 3600)
end

-- A countdown to an ISO time: text now, and the epoch for the script.
local function countdown(iso, now, what)
  local t = iso and sys.iso_epoch(iso)
  if not t then
    return ""
  end
  local left = t - now
  local text = left > 0 and (what .. " in " .. M.duration(left)) or (what .. " " .. M.duration(-left) .. " ago")
  return string.format('<span class="countdown%s" data-expires="%d" data-what="%s" title="%s">%s</span>',
    left > 0 and "" or " expired", math.floor(t), esc(what), esc(iso), esc(text))
end

-- ---------------------------------------------------------------- messages

-- The request id of a typed message, when it is one a link can name.
local function request_id(m)
  local id = m.fields and m.fields.request_id
  if type(id) == "string" and id:match("^[%w_.:-]+$") and #id <= 128 then
    return id
  end
  return nil
end

local function typed(m)
  local t = m.fields and m.fields.type
  if type(t) ~= "string" then
    return nil
  end
  if t:match("_request$") then
    return "request", t
  elseif t:match("_response$") then
    return "response", t
  end
  return nil, t
end

local function header(m)
  local parts = {
    string.format('<a class="seq" href="#m-%d">#%d</a>', m.seq, m.seq),
    '<span class="from">' .. esc(m.from or "?") .. "</span>",
    '<span class="arrow">&#8594;</span>',
    '<span class="to">' .. esc(m.to or "?") .. "</span>",
  }
  if m.status and m.status ~= "" then
    parts[#parts + 1] = '<span class="status">' .. esc(m.status) .. "</span>"
  end
  if m.ts then
    -- The time of day shown, the whole stamp on hover.
    local shown = m.ts:match("^%d+%-%d+%-%d+T(%d+:%d+:%d+)") or m.ts
    parts[#parts + 1] = '<time datetime="' .. esc(m.ts) .. '" title="' .. esc(m.ts) .. '">' .. esc(shown)
      .. "</time>"
  end
  return table.concat(parts, " ")
end

--- One message as HTML. links (optional): {answered = {request_id = seq}}
--- from the timeline, so a request names its response.
function M.message(m, links)
  local kind = kinds.of(m)
  local title = m.title or m.file or ""
  if kind == "audit" then
    return string.format('<details class="msg audit" id="m-%d"><summary>%s <span class="title">%s</span>'
      .. "</summary><pre>%s</pre></details>", m.seq, header(m), esc(title), esc(m.body or ""))
  end
  if kind == "event" then
    -- A capability or status event: one line (its JSON on hover).
    local ok, ev = pcall(json.loads, m.body or "")
    local text = m.title or ""
    if ok and type(ev) == "table" then
      local bits = {}
      for _, k in ipairs({ "event", "status", "detail", "harness" }) do
        if type(ev[k]) == "string" then
          bits[#bits + 1] = ev[k]
        end
      end
      text = table.concat(bits, " \u{b7} ")
    end
    return string.format('<div class="msg event" id="m-%d" title="%s">%s <span class="title">%s</span></div>',
      m.seq, esc(m.body or ""), header(m), esc(text))
  end
  local role, t = typed(m)
  local id = request_id(m)
  local badges, anchor = {}, ""
  if t then
    badges[#badges + 1] = '<span class="badge type">' .. esc(t) .. "</span>"
  end
  if role == "request" and id then
    anchor = ' data-request="' .. esc(id) .. '"'
    local answer = links and links.answered and links.answered[id]
    if answer then
      badges[#badges + 1] = string.format('<a class="badge answered" href="#m-%d">answered by #%d</a>', answer,
        answer)
    else
      badges[#badges + 1] = '<span class="badge waiting">awaiting response</span>'
    end
  elseif role == "response" and id then
    local req = links and links.requests and links.requests[id]
    badges[#badges + 1] = string.format('<a class="badge answers" href="%s">answers %s</a>',
      req and ("#m-" .. req) or ("#req-" .. esc(id)), req and ("#" .. req) or esc(id))
  end
  if m.decode_error or m.incomplete then
    badges[#badges + 1] = '<span class="badge warn">unreadable bytes</span>'
  end
  local file = m.file and ('<span class="file">' .. esc(m.file) .. "</span>") or ""
  return string.format('<article class="msg %s" id="m-%d"%s>%s<header>%s %s</header>'
    .. '<h3 class="title">%s</h3>%s<div class="body">%s</div></article>',
    kind, m.seq, anchor, id and role == "request" and ('<span id="req-' .. esc(id) .. '"></span>') or "",
    header(m), table.concat(badges, " "), esc(title), file, M.markdown(m.body or ""))
end

--- The messages in seq order, typed requests and responses linked.
function M.timeline(messages)
  local links = { answered = {}, requests = {} }
  for _, m in ipairs(messages) do
    local role = typed(m)
    local id = request_id(m)
    if id and role == "request" and not links.requests[id] then
      links.requests[id] = m.seq
    elseif id and role == "response" and not links.answered[id] then
      links.answered[id] = m.seq
    end
  end
  local out = {}
  for _, m in ipairs(messages) do
    out[#out + 1] = M.message(m, links)
  end
  return table.concat(out, "\n")
end

-- ---------------------------------------------------------------- panels

--- The channel list: each channel with its count and unread per member.
function M.channels(list, current, q)
  local out = { "<ul class=\"channels\">" }
  for _, c in ipairs(list) do
    local unread = {}
    for _, u in ipairs(c.unread or {}) do
      unread[#unread + 1] = string.format('<span class="unread%s" title="unread for %s">%s %d</span>',
        u.count > 0 and " some" or "", esc(u.member), esc(u.member), u.count)
    end
    out[#out + 1] = string.format('<li%s><a href="%s">%s</a> <span class="count">%d</span>'
      .. '<div class="unreads">%s</div></li>', c.name == current and ' class="current"' or "",
      esc(with_query("/c/" .. M.urlencode(c.name), q)), esc(c.name), c.count or 0, table.concat(unread, " "))
  end
  out[#out + 1] = "</ul>"
  return table.concat(out, "\n")
end

--- The team strip: each member with its lifecycle, status and age.
function M.team(team)
  local out = {}
  for _, m in ipairs(team and team.members or {}) do
    local age = m.last_seen_age and ("seen " .. M.duration(m.last_seen_age) .. " ago") or "never seen"
    out[#out + 1] = string.format('<li class="member %s%s"><span class="name">%s</span> '
      .. '<span class="lifecycle">%s</span>%s <span class="age">%s</span></li>', esc(m.lifecycle or "unknown"),
      m.silent and " silent" or "", esc(m.name), esc(m.lifecycle or "unknown"),
      m.status and (' <span class="mstatus">' .. esc(m.status) .. "</span>") or "", esc(age))
  end
  return '<ul class="team">' .. table.concat(out) .. "</ul>"
end

local COLUMNS = { "open", "in_progress", "blocked", "done" }

--- The task board: a column per status, owners and lease countdowns.
function M.board(tasks, now)
  local cols, order = {}, {}
  for _, s in ipairs(COLUMNS) do
    cols[s] = {}
    order[#order + 1] = s
  end
  for _, t in ipairs(tasks or {}) do
    local s = type(t.status) == "string" and t.status or "unknown"
    if not cols[s] then
      cols[s] = {}
      order[#order + 1] = s
    end
    local c = cols[s]
    c[#c + 1] = string.format('<li class="task"><span class="tid">%s</span> <span class="ttitle">%s</span>%s%s</li>',
      esc(t.id), esc(t.title), t.owner and (' <span class="owner">' .. esc(t.owner) .. "</span>") or "",
      t.lease_expires_at and (" " .. countdown(t.lease_expires_at, now, "lease ends")) or "")
  end
  local out = { '<div class="board">' }
  for _, s in ipairs(order) do
    out[#out + 1] = string.format('<section class="column %s"><h3>%s <span class="count">%d</span></h3>'
      .. "<ul>%s</ul></section>", esc(s), esc(s:gsub("_", " ")), #cols[s], table.concat(cols[s]))
  end
  out[#out + 1] = "</div>"
  return table.concat(out)
end

--- The path locks: paths, owner and expiry.
function M.locks(locks, now)
  local out = {}
  for _, l in ipairs(locks or {}) do
    local paths = {}
    for _, p in ipairs(type(l.paths) == "table" and l.paths or {}) do
      paths[#paths + 1] = "<code>" .. esc(type(p) == "table" and (p.display_path or p.normalized_path) or p)
        .. "</code>"
    end
    out[#out + 1] = string.format('<li class="lock%s">%s <span class="owner">%s</span> %s</li>',
      l.expired and " expired" or "", table.concat(paths, " "), esc(l.owner), countdown(l.expires_at, now, "expires"))
  end
  if #out == 0 then
    return '<p class="none">no path locks</p>'
  end
  return '<ul class="locks">' .. table.concat(out) .. "</ul>"
end

-- ---------------------------------------------------------------- page

--- The whole page. p = {root, channels (list for M.channels), channel
--- (name or nil), topic, messages, older (seq or nil), team, tasks, locks,
--- now, token, q (the token's query string), last_seq, problem}.
function M.page(p)
  local q = p.q
  local main
  if p.channel then
    local older = p.older and string.format('<p class="older"><a href="%s">older messages</a></p>',
      esc(with_query("/c/" .. M.urlencode(p.channel) .. "?before=" .. p.older, q))) or ""
    main = table.concat({
      '<header class="chan"><h1>', esc(p.channel), '</h1><p class="topic">', esc(p.topic), "</p>",
      '<span id="live" class="live">static</span></header>',
      '<section id="team" class="strip">', M.team(p.team), "</section>",
      '<div class="cols"><main><h2>Messages</h2>', older, '<div id="timeline" class="timeline">',
      M.timeline(p.messages or {}), "</div></main>",
      '<aside><h2>Tasks</h2><div id="board">', M.board(p.tasks, p.now), "</div>",
      '<h2>Locks</h2><div id="locks">', M.locks(p.locks, p.now), "</div></aside></div>",
    })
  else
    main = '<p class="none">' .. esc(p.problem or "no channels yet") .. "</p>"
  end
  return table.concat({
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<title>", esc(p.channel and (p.channel .. " - agent-chat") or "agent-chat"), "</title>",
    '<link rel="stylesheet" href="', esc(with_query("/static/app.css", q)), '">',
    '<script defer src="', esc(with_query("/static/app.js", q)), '"></script></head>',
    '<body data-channel="', esc(p.channel or ""), '" data-token="', esc(p.token or ""),
    '" data-last-seq="', tostring(p.last_seq or 0), '">',
    '<nav><p class="brand">agent-chat</p><p class="root">', esc(p.root), "</p>",
    '<div id="channels">', M.channels(p.channels or {}, p.channel, q), "</div></nav>",
    '<div class="view">', main, "</div></body></html>\n",
  })
end

return M
