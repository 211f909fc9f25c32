-- agentchat.api.queue: capability work queues (docs/tasks.md "Work
-- queues"), a method family of agentchat.Channel kept apart from the task
-- board's so that the board's commands do not load it.
--
--   ch:next_task{as=, capabilities=nil|{...}, lease=300, wait=0, interval=5}
--                                                -- claim the oldest ready task
--   agentchat.task_capabilities(record)          -- its for-capability names
--
-- A task created with for_capability = {"x", ...} needs an agent with one of
-- those capabilities. The Python tool refuses any field it does not know in
-- a task record (TASK_UNKNOWN_FIELD), so the names are kept where it reads
-- text: as acceptance items "for-capability: x" (it shows them as
-- criteria). next_task claims through ch:claim, whose lease batch under the
-- board's mutex makes a claim happen once whatever the number of callers; a
-- caller that loses a claim goes on to the next candidate.
-- Failures return nil, message, code, exit (TASK_*, LEASE_*).
local A = {}

local CAP_PREFIX = "for-capability: "
local NAME = "^[A-Za-z0-9][A-Za-z0-9._-]*$"

-- Append name to the list unless the set has it already.
local function add_once(list, set, name)
  if not set[name] then
    set[name] = true
    list[#list + 1] = name
  end
end

--- The capability names of a record's acceptance items, in order, once each.
local function capabilities_of(rec)
  local out, seen = {}, {}
  for _, item in ipairs(type(rec) == "table" and rec.acceptance or {}) do
    local name = type(item) == "string" and item:sub(1, #CAP_PREFIX) == CAP_PREFIX
      and item:sub(#CAP_PREFIX + 1)
    if name and name:match(NAME) then
      add_once(out, seen, name)
    end
  end
  return out
end

--- A list of capability names checked (nil stays nil), once each.
local function check_capabilities(list, what)
  if list == nil then
    return nil
  end
  if type(list) == "string" then
    list = { list }
  end
  if type(list) ~= "table" then
    error(what .. ": capabilities must be a list of names", 3)
  end
  local out, seen = {}, {}
  for _, name in ipairs(list) do
    if type(name) ~= "string" then
      error(what .. ": capabilities must be a list of names", 3)
    end
    if not name:match(NAME) then
      return nil, "capability must contain only letters, digits, '.', '_' or '-': "
        .. require("agentchat.pycompat").repr_str(name), "TASK_INVALID_CAPABILITY", 2
    end
    add_once(out, seen, name)
  end
  return out
end

-- One pass over the channel's messages: the seq of each task's
-- task.created audit message (the order tasks were made in; updated_at
-- has whole seconds only), and with `want_caps` the primitives of the
-- latest valid capability event of `as` ({} without one).
local function channel_facts(ch, as, want_caps)
  local batch, msg, code, exit = ch:peek(math.maxinteger)
  if not batch then
    return nil, msg, code, exit
  end
  local created, caps = {}, {}
  local events = want_caps and require "agentchat.events"
  for _, m in ipairs(batch.messages) do
    local status = m.fields.status
    if status == "task.created" then
      local id = (m.fields.title or ""):match("^task%.created (.+)$")
      created[id or ""] = created[id or ""] or m.seq
    elseif events and status == "event.capability" and m.from == as then
      local obj = require("agentchat.json").loads(m.body or "")
      if type(obj) == "table" and events.validate(obj) and obj.event == "capability" and obj.agent == as then
        caps = obj.primitives
      end
    end
  end
  return created, caps
end

-- Claim failures that mean "someone else got there first" (or the task
-- stopped being ready since the listing): try the next candidate.
local LOST = { LEASE_CONFLICT = true, LEASE_RECOVERY_REQUIRED = true, TASK_DEPENDENCY_NOT_READY = true,
               TASK_INVALID_TRANSITION = true, TASK_NOT_FOUND = true }

-- The ready tasks `as` may take: open, no lease, no owner (or preassigned
-- to `as`), every dependency done, and no capability needed or one of
-- `caps`.
local function candidates(list, as, caps)
  local by_id, have = {}, {}
  for _, t in ipairs(list) do
    by_id[t.id] = t
  end
  for _, c in ipairs(caps) do
    have[c] = true
  end
  local out = {}
  for _, t in ipairs(list) do
    local ok = t.status == "open" and t.lease_expires_at == nil and (t.owner == nil or t.owner == as)
    for _, dep in ipairs(ok and t.depends_on or {}) do
      ok = ok and by_id[dep] ~= nil and by_id[dep].status == "done"
    end
    local needs = ok and capabilities_of(t) or {}
    if #needs > 0 then
      ok = false
      for _, c in ipairs(needs) do
        ok = ok or have[c] == true
      end
    end
    if ok then
      out[#out + 1] = t
    end
  end
  return out
end

-- Oldest first: by the seq of the task.created message, then (a record
-- made without one) by updated_at, then by id.
local function sort_oldest(list, created)
  local sys = require "agentchat.sys"
  local key = {}
  for _, t in ipairs(list) do
    key[t] = { created[t.id] or math.huge, sys.iso_epoch(t.updated_at or "") or math.huge }
  end
  table.sort(list, function(a, b)
    local ka, kb = key[a], key[b]
    if ka[1] ~= kb[1] then
      return ka[1] < kb[1]
    elseif ka[2] ~= kb[2] then
      return ka[2] < kb[2]
    end
    return a.id < b.id
  end)
end

local need_as = require("agentchat.api.tasks").need_as

--- task_create's acceptance list with an item per capability of `list`
--- (for_capability) appended; or nil, message, code, exit for a bad name.
function A.with_capabilities(acceptance, list)
  local caps, msg, code, exit = check_capabilities(list, "task_create")
  if caps == nil and msg then
    return nil, msg, code, exit
  end
  if caps and #caps > 0 then
    acceptance = table.move(type(acceptance) == "table" and acceptance or {}, 1,
                            type(acceptance) == "table" and #acceptance or 0, 1, {})
    for _, c in ipairs(caps) do
      acceptance[#acceptance + 1] = CAP_PREFIX .. c
    end
  end
  return acceptance
end

function A.install(Channel, M)
  M.task_capabilities = capabilities_of

  function Channel:next_task(opts)
    need_as(opts, "next_task")
    for _, k in ipairs({ "lease", "wait", "interval" }) do
      if opts[k] ~= nil and type(opts[k]) ~= "number" then
        error("next_task: " .. k .. " must be a number of seconds", 2)
      end
    end
    local caps, msg, code, exit = check_capabilities(opts.capabilities, "next_task")
    if caps == nil and msg then
      return nil, msg, code, exit
    end
    -- The actor and the lease are checked before the look (as a claim
    -- checks them), so bad ones fail whether or not a task is ready.
    if not opts.as:match(NAME) then
      return nil, "owner must be a safe identity", "LEASE_INVALID_OWNER", 2
    end
    local lease = opts.lease or 300.0
    if not (lease > 0) then
      return nil, "lease duration must be positive", "LEASE_INVALID_DURATION", 2
    end
    local sys = require "agentchat.sys"
    local wait = opts.wait or 0
    if wait ~= wait or wait < 0 then
      wait = 0
    end
    local deadline = sys.monotonic() + wait
    -- The watch is opened before the first scan, so a task made ready
    -- between a scan and the wait still wakes it.
    local w <close> = wait > 0 and self:handle():watch() or nil
    while true do
      local list
      list, msg, code, exit = self:tasks()
      if not list then
        return nil, msg, code, exit
      end
      local created, mine = {}, caps
      if not caps then
        created, mine, code, exit = channel_facts(self, opts.as, true)
        if not created then
          return nil, mine, code, exit
        end
      end
      local ready = candidates(list, opts.as, mine)
      if caps and #ready > 1 then
        created, msg, code, exit = channel_facts(self, opts.as, false)
        if not created then
          return nil, msg, code, exit
        end
      end
      sort_oldest(ready, created)
      for _, t in ipairs(ready) do
        local rec
        rec, msg, code, exit = self:claim(t.id, { as = opts.as, lease = lease })
        if rec then
          return rec
        elseif not LOST[code] then
          return nil, msg, code, exit
        end
      end
      local remaining = deadline - sys.monotonic()
      if not w or remaining <= 0 then
        break
      end
      local nap = w:notifying() and remaining or math.min(remaining, opts.interval or 5.0)
      local _, why, wcode, wexit = w:wait(nap)
      if wcode then
        return nil, why, wcode, wexit
      end
    end
    return nil, "no ready task for " .. opts.as .. " in '" .. self.name .. "'"
      .. (wait > 0 and " after " .. require("agentchat.pycompat").float_repr(wait + 0.0) .. "s" or ""),
      "TASK_NONE_READY", 3
  end
end

return A
