-- agentchat.api.waitany: the composite wait, ch:wait_any (docs/wait-any.md).
--
--   ch:wait_any{as=, conditions={"message", "task:ID=done", "lock:PATH=free",
--               "receipt:SEQ=acked", "other:message", ...}, timeout=900,
--               interval=5, kinds=, peek=, show=function(result)}
--   ch:wait_any{resume=TOKEN, timeout=, interval=, show=}
--       -- result | nil, msg, code, exit [, token]
--   agentchat.parse_condition(text)  -- {channel=, kind=, ...} | nil, msg, "WAIT_INVALID_CONDITION", 2
--
-- One blocking wait (store.wait_watches: the change notification of every
-- channel and ack folder involved, one deadline, no CPU while blocked)
-- until any condition holds; the first that holds, in the order given,
-- is the result: {condition=, index=, kind=, channel=, ...detail}. A
-- message condition delivers the relevant messages above where the wait
-- started (result.messages) and moves the agent's cursor past them (not
-- with peek), as `wait` does. On timeout: nil, "timed out", "ETIMEDOUT",
-- 2, token; ch:wait_any{resume=token} waits again for the same conditions
-- from the same starting points, so nothing that happened in between is
-- lost.
local errors = require "agentchat.errors"
local sys = require "agentchat.sys"

local A = {}

local fail = errors.fail

local TASK_STATES = { open = true, in_progress = true, blocked = true, done = true, cancelled = true }
local RECEIPT_STATES = { acked = true, read = true }

-- The most conditions one wait takes (each may need a watch of its own).
A.MAX_CONDITIONS = 16

local TOKEN_PREFIX = "w1."

local function bad(text, why)
  return fail("WAIT_INVALID_CONDITION", string.format(
    "invalid --for condition %s: %s (expected message, task:ID=STATE, lock:PATH=free or "
    .. "receipt:SEQ=acked|read, each optionally prefixed by CHANNEL:)",
    require("agentchat.pycompat").repr_str(text), why))
end

-- The condition without a channel prefix, or nil, why.
local function parse_base(s)
  if s == "message" then
    return { kind = "message" }
  end
  local kind, rest = s:match("^(%a+):(.*)$")
  if kind == "task" then
    local id, state = rest:match("^(.+)=([%a_]+)$")
    if not id then
      return nil, "a task condition is task:ID=STATE"
    end
    if not TASK_STATES[state] then
      return nil, "unknown task state '" .. state .. "' (open, in_progress, blocked, done, cancelled)"
    end
    return { kind = "task", id = id, state = state }
  elseif kind == "lock" then
    local path, state = rest:match("^(.+)=(%a+)$")
    if not path or state ~= "free" then
      return nil, "a lock condition is lock:PATH=free"
    end
    return { kind = "lock", path = path, state = state }
  elseif kind == "receipt" then
    local seq, state = rest:match("^(%d+)=(%a+)$")
    seq = seq and math.tointeger(tonumber(seq))
    if not seq or seq < 1 then
      return nil, "a receipt condition is receipt:SEQ=acked|read with SEQ a message number"
    end
    if not RECEIPT_STATES[state] then
      return nil, "unknown receipt state '" .. state .. "' (acked, read)"
    end
    return { kind = "receipt", seq = seq, state = state }
  end
  return nil, "unknown condition"
end

--- Parse one --for condition: {text=, channel= (nil: the wait's own),
--- kind="message"|"task"|"lock"|"receipt", id=, path=, seq=, state=}.
function A.parse(text)
  if type(text) ~= "string" then
    error("a condition is a string", 3)
  end
  if not sys.utf8_valid(text) or text:find("[%z\1-\31\127]") then
    return bad(text, "not clean text")
  end
  local c, why = parse_base(text)
  if not c then
    -- CHANNEL:rest, the channel a valid name and rest a condition (a
    -- channel may be named like a kind: "task:task:x=done").
    local chan, rest = text:match("^([^:]+):(.+)$")
    if chan and require("agentchat.store").check_name(chan) then
      local inner, iwhy = parse_base(rest)
      if inner then
        inner.channel = chan
        c = inner
      elseif why == "unknown condition" then
        why = iwhy
      end
    end
  end
  if not c then
    return bad(text, why)
  end
  c.text = text
  return c
end

-- ------------------------------------------------------------ resume token

-- The token: "w1." + base64 of compact JSON {ch, as, for, after}: the
-- channel, the agent, the conditions as given and, per channel with a
-- message condition, the seq the wait started above.
local function encode_token(state)
  local json = require "agentchat.json"
  local body = json.dumps({ ch = state.channel, as = state.as, ["for"] = json.array(state.texts),
                            after = state.after }, { sort_keys = true, separators = { ",", ":" } })
  return TOKEN_PREFIX .. sys.b64encode(body)
end

local function bad_token(why)
  return fail("WAIT_INVALID_RESUME", "invalid resume token: " .. why)
end

local function decode_token(token)
  if type(token) ~= "string" or token:sub(1, #TOKEN_PREFIX) ~= TOKEN_PREFIX then
    return bad_token("not a token printed by wait (it starts with '" .. TOKEN_PREFIX .. "')")
  end
  local body = sys.b64decode(token:sub(#TOKEN_PREFIX + 1))
  local t = body and require("agentchat.json").loads(body)
  if type(t) ~= "table" or type(t.ch) ~= "string" or type(t.as) ~= "string" or type(t["for"]) ~= "table"
      or #t["for"] == 0 or type(t.after) ~= "table" then
    return bad_token("it does not decode")
  end
  for k, v in pairs(t.after) do
    if type(k) ~= "string" or math.type(v) ~= "integer" or v < 0 then
      return bad_token("it does not decode")
    end
  end
  return t
end

--- The channel, agent and conditions a resume token holds: {channel=,
--- as=, conditions=}, or the failure (WAIT_INVALID_RESUME).
function A.token_info(token)
  local t, msg, code, exit = decode_token(token)
  if not t then
    return nil, msg, code, exit
  end
  return { channel = t.ch, as = t.as, conditions = t["for"] }
end

-- ------------------------------------------------------------ the wait

-- Each condition against the channel's current state: a result table when
-- it holds, false when not, or nil, msg, code, exit.
local checks = {}

function checks.message(w, c)
  local batch, msg, code, exit = c.ch:fetch{ as = w.as, after = w.after[c.chname], kinds = w.kinds }
  if not batch then
    return nil, msg, code, exit
  end
  if #batch.messages == 0 then
    return false
  end
  return { messages = batch.messages, batch = batch }
end

function checks.task(_, c)
  local rec, msg, code, exit = c.ch:task(c.id)
  if not rec then
    return nil, msg, code, exit
  end
  if rec.status ~= c.state then
    return false
  end
  return { id = c.id, status = rec.status, owner = rec.owner, title = rec.title, task = rec }
end

function checks.lock(_, c)
  local held, msg, code, exit = c.ch:check(c.path)
  if not held then
    return nil, msg, code, exit
  end
  if #held > 0 then
    return false
  end
  return { path = c.path }
end

function checks.receipt(_, c)
  local r, msg, code, exit = c.ch:receipts(c.seq)
  if not r then
    return nil, msg, code, exit
  end
  if not (c.state == "acked" and r.all_acked or c.state == "read" and r.all_read) then
    return false
  end
  local who = {}
  for _, a in ipairs(r.addressees) do
    who[#who + 1] = a.agent
  end
  return { seq = c.seq, state = c.state, agents = who, receipt = r }
end

-- Close what a wait opened (its watches, the other channels).
local function close_all(w)
  for _, x in ipairs(w.watches or {}) do
    x:close()
  end
  for name, ch in pairs(w.channels or {}) do
    if name ~= w.home then
      ch:close()
    end
  end
end

-- Open the channels and watches of the conditions and check each once
-- (so a bad one fails before any wait). Returns w or the failure.
local function prepare(self, w)
  w.channels, w.watches = { [self.name] = self }, {}
  local acks = {}
  -- One watch for everything where the store can (w:add), else one more
  -- each: at most 1 + MAX_CONDITIONS, the home channel's and one per other
  -- channel or receipt a condition names.
  local function watch_of(ch, opts)
    local first = w.watches[1]
    if not (first and first:add(ch._h, opts)) then
      w.watches[#w.watches + 1] = ch._h:watch(opts)
    end
  end
  -- Watches first, so nothing that happens after the first check is missed.
  w.home = self.name
  watch_of(self)
  for _, c in ipairs(w.conds) do
    c.chname = c.channel or self.name
    local ch = w.channels[c.chname]
    if not ch then
      local msg, code, exit
      ch, msg, code, exit = self.root:channel(c.chname)
      if not ch then
        return nil, msg, code, exit
      end
      w.channels[c.chname] = ch
      watch_of(ch)
    end
    c.ch = ch
    if c.kind == "message" and w.after[c.chname] == nil then
      w.after[c.chname] = ch:cursor(w.as)
    end
    if c.kind == "receipt" then
      local key = c.chname .. "\0" .. c.seq .. "\0" .. c.state
      if not acks[key] then
        acks[key] = true
        watch_of(ch, { acks = c.seq, cursors = c.state == "read" })
      end
    end
  end
  return w
end

-- The first condition that holds: its result, false, or the failure.
local function check_all(w)
  for i, c in ipairs(w.conds) do
    local r, msg, code, exit = checks[c.kind](w, c)
    if r == nil then
      return nil, msg, code, exit
    end
    if r then
      r.condition, r.index, r.kind, r.channel = c.text, i, c.kind, c.chname
      return r, c
    end
  end
  return false
end

function A.install(Channel, M)
  M.parse_condition = A.parse

  function Channel:wait_any(opts)
    if type(opts) ~= "table" or (opts.conditions ~= nil and type(opts.conditions) ~= "table")
        or (opts.show ~= nil and type(opts.show) ~= "function") then
      error("wait_any expects {as = name, conditions = {text, ...}, timeout =, interval =, show =} "
        .. "or {resume = token, ...}", 2)
    end
    local w = { after = {} }
    local texts
    if opts.resume ~= nil then
      if opts.conditions ~= nil then
        return fail("WAIT_INVALID_RESUME", "give either conditions or a resume token, not both")
      end
      local t, msg, code, exit = decode_token(opts.resume)
      if not t then
        return nil, msg, code, exit
      end
      if t.ch ~= self.name or (opts.as ~= nil and opts.as ~= t.as) then
        return fail("WAIT_INVALID_RESUME", string.format("the token is for channel '%s' as %s",
          t.ch, t.as))
      end
      w.as, texts, w.after = t.as, t["for"], t.after
    else
      if type(opts.as) ~= "string" then
        error("wait_any expects {as = name, conditions = {text, ...}}", 2)
      end
      w.as, texts = opts.as, opts.conditions or { "message" }
    end
    if #texts == 0 or #texts > A.MAX_CONDITIONS then
      return fail("WAIT_INVALID_CONDITION", string.format("a wait takes 1 to %d conditions, not %d",
        A.MAX_CONDITIONS, #texts))
    end
    w.conds, w.texts = {}, {}
    for i, text in ipairs(texts) do
      local c, msg, code, exit = A.parse(text)
      if not c then
        return nil, msg, code, exit
      end
      w.conds[i], w.texts[i] = c, text
    end
    w.channel, w.kinds = self.name, opts.kinds
    local timeout = opts.timeout or 900.0
    local interval = opts.interval or 5.0
    if interval < 0.01 then
      interval = 0.01
    end
    local deadline = sys.monotonic() + (timeout > 0 and timeout or 0)
    local ok, msg, code, exit = prepare(self, w)
    local result, cond
    if ok then
      while true do
        result, cond, code, exit = check_all(w)
        if result == nil then
          ok, msg = nil, cond
          break
        elseif result then
          break
        end
        local now = sys.monotonic()
        if now >= deadline then
          break
        end
        ok, msg, code, exit = require("agentchat.store").wait_watches(w.watches,
          math.min(interval, deadline - now))
        if not ok then
          break
        end
      end
    end
    if not ok then
      close_all(w)
      return nil, msg, code, exit
    end
    if not result then
      close_all(w)
      return nil, "timed out", "ETIMEDOUT", 2, encode_token(w)
    end
    if opts.show and opts.show(result) == false then
      close_all(w)
      return result
    end
    if cond.kind == "message" and not opts.peek then
      ok, msg, code, exit = cond.ch:advance_cursor(w.as, result.batch.cursor)
      if not ok then
        close_all(w)
        return nil, msg, code, exit
      end
    end
    close_all(w)
    return result
  end
end

A.encode_token = encode_token

return A
