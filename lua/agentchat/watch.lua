-- agentchat.watch: the loop behind `agent-chat watch`, a zero-token bot.
--
--   local watch = require "agentchat.watch"
--   local code, reason = watch.run(ch, { as = "bot", handlers = {
--     message = function(msg, ctx) ctx.reply(msg, { body = "seen" }) end,
--   } })
--
-- For every new message relevant to `as` (the relevance of `read`) the
-- script's handler runs, and only once it has returned does `as`'s cursor
-- move to that message's seq, one message at a time. A handler that
-- raises, a kill -9 or a power cut therefore leaves the cursor on the last
-- message that was fully handled, and the next start delivers the rest
-- again: delivery is at least once, so handlers should be idempotent (the
-- message a crash interrupted can arrive twice, never zero times).
--
-- Between messages the loop blocks in ch:wait (inotify/dnotify, no CPU),
-- waking every `interval` seconds to rescan and to call `tick`.
--
-- What a message whose handler keeps failing does is opts.on_error:
-- "stop" (the default: give up, the cursor stays before it, so the next
-- start tries it again), "skip" (post a `watch.skipped` record of the
-- failure and go on past it) or "dead-letter" (post a pointer to it in the
-- channel opts.dead_letter and go on).
-- docs/watch.md is the user documentation; this file is the mechanism.
local changes = require "agentchat.changes"
local errors = require "agentchat.errors"
local sys = require "agentchat.sys"

local M = {}

M.DEFAULT_INTERVAL = 5.0
M.DEFAULT_RETRIES = 3
M.DEFAULT_BACKOFF = 1.0
M.MAX_BACKOFF = 60.0
M.ON_ERROR = { "stop", "skip", "dead-letter" }

-- The fields a script's table may have. Anything else is a typo that
-- would otherwise silently never run.
M.HANDLERS = { "message", "task", "lock", "tick", "idle", "start", "stop" }
local KNOWN = { interval = "number" }
for _, h in ipairs(M.HANDLERS) do
  KNOWN[h] = "function"
end

--- Normalize what a script returned into a handler table. `value` is a
--- function (it gets messages, and task/lock changes when opts.tasks /
--- opts.locks ask for them; `item.kind` tells which) or a table of
--- handlers. Returns the table, or nil and a message.
function M.handlers(value, opts)
  opts = opts or {}
  if type(value) == "function" then
    return { message = value, task = opts.tasks and value or nil, lock = opts.locks and value or nil }
  end
  if type(value) ~= "table" then
    return nil, "must return a function or a table of handlers (got " .. type(value) .. ")"
  end
  local names = {}
  for k in pairs(value) do
    names[#names + 1] = tostring(k)
  end
  table.sort(names)
  for _, k in ipairs(names) do
    local want = KNOWN[k]
    if not want then
      return nil, "unknown field '" .. k .. "' (handlers: " .. table.concat(M.HANDLERS, ", ")
        .. "; option: interval)"
    end
    if type(value[k]) ~= want then
      return nil, "field '" .. k .. "' must be a " .. want
    end
  end
  if not (value.message or value.task or value.lock or value.tick) then
    return nil, "has no handler (message, task, lock or tick)"
  end
  for _, kind in ipairs({ "task", "lock" }) do
    if opts[kind .. "s"] and not value[kind] then
      return nil, "has no '" .. kind .. "' handler for --" .. kind .. "s"
    end
  end
  return value
end

-- ------------------------------------------------------------ the context

-- What a handler gets as `ctx`. ctx.post and ctx.reply raise on failure,
-- so a failed post makes the handler fail and the message come again.
local function new_context(w)
  local ch, name = w.channel, w.as
  local ctx = { channel = ch, root = ch.root, name = name, as = name, once = w.once,
                interval = w.interval, args = w.args }

  function ctx.post(t)
    if type(t) ~= "table" then
      error("ctx.post expects a table", 2)
    end
    local res, msg, code, exit = ch:post{
      from = t.from or name, to = t.to, title = t.title or "", body = t.body or "",
      status = t.status, reply = t.reply or t.reply_to,
    }
    if not res then
      errors.raise(msg, code, exit)
    end
    return res
  end

  function ctx.reply(m, t)
    t = t or {}
    return ctx.post{ from = t.from, to = t.to or m.from, status = t.status, body = t.body,
                     title = t.title or ("Re: " .. (m.title or "")), reply = m.seq }
  end

  function ctx.log(...)
    local parts = table.pack(...)
    for i = 1, parts.n do
      parts[i] = tostring(parts[i])
    end
    w.log("watch: " .. table.concat(parts, " ", 1, parts.n))
  end

  function ctx.stop()
    w.stopping = true
  end

  function ctx.cursor()
    return ch:cursor(name)
  end

  return ctx
end

-- ------------------------------------------------------------ calling handlers

-- Ctrl-C and SIGTERM arrive as this error (raised into the running Lua
-- code by the host's interrupt hook), or as an INTERRUPTED return that a
-- handler turned into an error.
local function is_interrupt(e)
  return (type(e) == "table" and e.code == "INTERRUPTED") or sys.interrupted() ~= nil
end

local INTERRUPT = errors.new("INTERRUPTED", "cancelled by user", 130)

-- The traceback of a handler failure, cut below the handler: the frames
-- of this loop are noise to the script's author.
local function traceback(e)
  if is_interrupt(e) then
    return INTERRUPT
  end
  if type(e) == "table" and e.code and e.message then
    e = e.code .. ": " .. e.message
  end
  local tb = debug.traceback(tostring(e), 2)
  local cut = tb:find("\n%s*%[C%]: in function 'xpcall'")
  return cut and tb:sub(1, cut - 1) or tb
end

-- Call fn(...) until it returns, `attempts` times at most, pausing
-- backoff, 2*backoff, 4*backoff ... (capped) in between. Returns true, or
-- false and the last error once every attempt failed (each failure
-- reported with its traceback). A signal propagates as the INTERRUPTED
-- error.
local function call(w, label, attempts, fn, ...)
  local err
  for attempt = 1, attempts do
    local ok
    ok, err = xpcall(fn, traceback, ...)
    io.stdout:flush()
    if ok then
      return true
    end
    if err == INTERRUPT then
      error(INTERRUPT, 0)
    end
    w.log(string.format("watch: %s failed (attempt %d of %d): %s", label, attempt, attempts, err))
    if attempt < attempts then
      local pause = math.min(w.backoff * 2 ^ (attempt - 1), M.MAX_BACKOFF)
      w.log(string.format("watch: retrying in %s s", sys.float_repr(pause)))
      if not sys.sleep(pause) then
        error(INTERRUPT, 0)
      end
    end
  end
  return false, err
end

-- The handler and the argument a message goes to: its task or lock
-- change when the script takes those, else the message itself.
local function route(w, m)
  local h = w.handlers
  if h.task or h.lock then
    local kind, change = changes.of(m)
    if kind and h[kind] then
      return kind, h[kind], change
    end
  end
  m.kind = "message"
  return "message", h.message, m
end

-- ------------------------------------------------------------ the loop

local function give_up(w, what)
  w.log(string.format("watch: giving up on %s; cursor stays at #%d", what, w.channel:cursor(w.as)))
  return 1, "failed"
end

local function io_failure(w, msg, code, exit)
  w.log((errors.line(code or "IO_ERROR", msg or "unknown error"):gsub("^agent%-chat: ", "")))
  return errors.exit_for(code, exit), "error"
end

-- The first line of a handler failure (its traceback cut off).
local function first_line(err)
  return (tostring(err):match("^[^\n]*"))
end

local RECORD_JSON = { indent = 2, sort_keys = true, ensure_ascii = false }

-- With --on-error skip or dead-letter: record that the handler `kind` gave
-- up on message m (error `err`) and let the loop go past it. Returns true,
-- or nil, message, code, exit when the record could not be posted.
local function set_aside(w, kind, m, err)
  local ch, attempts = w.channel, w.attempts
  local what = string.format("handler '%s' failed %d time%s on #%d", kind, attempts,
    attempts == 1 and "" or "s", m.seq)
  if w.on_error == "skip" then
    -- A record in the channel itself, from and to the watcher: no reader
    -- gets it by accident (the watcher never reads its own messages), and
    -- `peek CH --kind audit` or `read CH --as NAME --all --kind audit`
    -- lists it.
    local res, msg, code, exit = ch:post{
      from = w.as, to = w.as, status = "watch.skipped", title = "watch.skipped #" .. m.seq,
      body = require("agentchat.json").dumps({
        event = "watch.skipped", agent = w.as, channel = ch.name, seq = m.seq, file = m.file,
        handler = kind, attempts = attempts, error = first_line(err),
      }, RECORD_JSON) .. "\n",
    }
    if not res then
      return nil, msg, code, exit
    end
    w.log(string.format("watch: warning: %s; skipped it (recorded as #%d)", what, res.seq))
    return true
  end
  local res, msg, code, exit = w.dead_letter:post{
    from = w.as, to = "all", status = "dead-letter",
    title = string.format("dead letter: %s#%d %s", ch.name, m.seq, m.title or ""),
    body = table.concat({
      string.format("`%s` gave up on message #%d of channel %s: %s.", w.as, m.seq, ch.name, what),
      "",
      "- channel: " .. ch.name,
      "- seq: " .. m.seq,
      "- file: " .. tostring(m.file),
      "- from: " .. tostring(m.from),
      "- title: " .. tostring(m.title),
      "- error: " .. first_line(err),
      "",
      string.format("Read it with: agent-chat peek %s -n 1 (it is #%d), or agent-chat read %s --as %s --all --peek",
        ch.name, m.seq, ch.name, w.as),
      "",
    }, "\n"),
  }
  if not res then
    return nil, msg, code, exit
  end
  w.log(string.format("watch: warning: %s; dead-lettered it to %s as #%d", what, w.dead_letter.name, res.seq))
  return true
end

-- Deliver one batch message by message; the cursor follows each handled
-- one. Returns nil to go on, or the exit code and reason to stop.
local function deliver(w, batch)
  for _, s in ipairs(batch.skipped or {}) do
    w.log("warning: skipped unreadable message " .. s.name .. ": " .. s.reason)
  end
  for _, m in ipairs(batch.messages) do
    local kind, fn, item = route(w, m)
    local done, err = true, nil
    if fn then
      done, err = call(w, string.format("handler '%s' on #%d", kind, m.seq), w.attempts, fn, item, w.ctx)
    end
    if not done then
      if w.on_error == "stop" then
        return give_up(w, "#" .. m.seq)
      end
      local ok, msg, code, exit = set_aside(w, kind, m, err)
      if not ok then
        return io_failure(w, msg, code, exit)
      end
    end
    local ok, msg, code, exit = w.channel:advance_cursor(w.as, m.seq)
    if not ok then
      return io_failure(w, msg, code, exit)
    end
    if w.stopping then
      return 0, "stopped"
    end
    if sys.interrupted() then
      error(INTERRUPT, 0)    -- the handler swallowed the signal's error
    end
  end
  -- Everything relevant in the scan is handled: skip the rest of it, as
  -- a read would.
  local ok, msg, code, exit = w.channel:commit(batch)
  if not ok then
    return io_failure(w, msg, code, exit)
  end
  return nil
end

-- One turn: wait (or, with once, just look), deliver, then idle and tick.
local function turn(w)
  local h, ch = w.handlers, w.channel
  local batch, msg, code, exit
  if w.once then
    batch, msg, code, exit = ch:fetch{ as = w.as }
  else
    local timeout = math.huge
    if h.tick then
      timeout = math.max(0, w.next_tick - sys.monotonic())
    end
    batch, msg, code, exit = ch:wait{ as = w.as, peek = true, timeout = timeout, interval = w.interval }
  end
  if not batch then
    if code == "INTERRUPTED" then
      error(INTERRUPT, 0)
    elseif code ~= "ETIMEDOUT" then
      return io_failure(w, msg, code, exit)
    end
  else
    local rc, reason = deliver(w, batch)
    if rc then
      return rc, reason
    end
    if h.idle and #batch.messages > 0 and not call(w, "handler 'idle'", w.attempts, h.idle, w.ctx) then
      return give_up(w, "idle")
    end
  end
  if h.tick and (w.once or sys.monotonic() >= w.next_tick) then
    if not call(w, "handler 'tick'", w.attempts, h.tick, w.ctx) then
      return give_up(w, "tick")
    end
    w.next_tick = sys.monotonic() + w.interval
  end
  if w.stopping then
    return 0, "stopped"
  end
  if w.once then
    return 0, "once"
  end
  return nil
end

local function loop(w)
  if w.handlers.start and not call(w, "handler 'start'", w.attempts, w.handlers.start, w.ctx) then
    return give_up(w, "start")
  end
  while true do
    if sys.interrupted() then
      error(INTERRUPT, 0)
    end
    local rc, reason = turn(w)
    if rc then
      return rc, reason
    end
  end
end

local function check_opts(opts)
  if type(opts) ~= "table" or type(opts.as) ~= "string" then
    error("watch.run expects (channel, {as = name, handlers = ...})", 3)
  end
  for _, k in ipairs({ "interval", "backoff" }) do
    local v = opts[k]
    if v ~= nil and (type(v) ~= "number" or v ~= v or v < 0 or (k == "interval" and v == 0)) then
      error("watch.run: " .. k .. " must be a " .. (k == "interval" and "positive" or "non-negative")
        .. " number", 3)
    end
  end
  if opts.retries ~= nil and (math.type(opts.retries) ~= "integer" or opts.retries < 0) then
    error("watch.run: retries must be a non-negative integer", 3)
  end
  local on_error = opts.on_error or "stop"
  if on_error ~= "stop" and on_error ~= "skip" and on_error ~= "dead-letter" then
    error("watch.run: on_error must be stop, skip or dead-letter", 3)
  end
  local dl = opts.dead_letter
  if (on_error == "dead-letter") ~= (dl ~= nil) then
    error("watch.run: dead_letter (a channel) goes with on_error = \"dead-letter\", and only with it", 3)
  end
  if dl ~= nil and (type(dl) ~= "table" or type(dl.post) ~= "function") then
    error("watch.run: dead_letter must be a channel", 3)
  end
end

--- Run the loop on channel `ch` (an agentchat.Channel) until it stops.
--- opts: as (the agent), handlers (a function or table, see M.handlers),
--- once, interval, tasks, locks, retries, backoff, args (list given to
--- the handlers as ctx.args), log (function(line), default stderr),
--- on_error ("stop" | "skip" | "dead-letter", see the top) and dead_letter
--- (the channel, an agentchat.Channel, for "dead-letter").
--- Returns the exit code and the reason: 0 "once" | 0 "stopped" (a
--- handler called ctx.stop()) | 1 "failed" (a handler kept failing) |
--- 1 "error" (the channel failed) | 130 "signal" (SIGINT or SIGTERM).
--- A bad handler table raises.
function M.run(ch, opts)
  check_opts(opts)
  local handlers, why = M.handlers(opts.handlers, opts)
  if not handlers then
    error("watch.run: handlers " .. why, 2)
  end
  local w = {
    channel = ch, as = opts.as, handlers = handlers, once = opts.once and true or false,
    interval = opts.interval or handlers.interval or M.DEFAULT_INTERVAL,
    attempts = 1 + (opts.retries or M.DEFAULT_RETRIES),
    backoff = opts.backoff or M.DEFAULT_BACKOFF,
    args = opts.args or {},
    on_error = opts.on_error or "stop", dead_letter = opts.dead_letter,
    log = opts.log or function(line)
      io.stdout:flush()
      io.stderr:write("agent-chat: " .. line .. "\n")
    end,
    next_tick = sys.monotonic(),
  }
  w.ctx = new_context(w)
  local ok, rc, reason = xpcall(loop, function(e)
    if is_interrupt(e) then
      return INTERRUPT
    end
    return debug.traceback(e, 2)
  end, w)
  if not ok then
    if rc ~= INTERRUPT then
      error(rc, 0)
    end
    rc, reason = 130, "signal"
  end
  if handlers.stop then
    -- One attempt: after a signal nothing may block any more.
    local done, stopped = pcall(call, w, "handler 'stop'", 1, handlers.stop, w.ctx, reason)
    if not (done and stopped) and rc == 0 then
      rc = 1
    end
  end
  return rc, reason
end

return M
