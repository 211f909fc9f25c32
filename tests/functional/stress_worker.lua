-- stress_worker.lua - one of the processes of stress_spec.lua, run as
--   agent-chat --root ROOT run stress_worker.lua NAME CHANNEL SECONDS LOG SEED BIN NTASKS
-- Until SECONDS have passed it does random operations on CHANNEL through
-- the Lua API (a few posts through the CLI binary BIN): posts, reads,
-- waits, task claims, renews, releases (and recovers of expired leases),
-- path locks and unlocks. Every operation is logged as one JSON line to
-- LOG with the monotonic times around the call (t0 before, t1 after), so
-- the spec can tell what the worker held when: a claim or lock certainly
-- took effect before t1, an unlock or release certainly not before t0.
-- At the end it gives back what it holds and logs {op = "end"}.
local ac = require "agentchat"
local json = require "agentchat.json"
local sys = require "agentchat.sys"

local name, chan_name, seconds, log_path, seed, bin, ntasks = ...
seconds, seed, ntasks = tonumber(seconds), tonumber(seed), tonumber(ntasks)
math.randomseed(seed)

local TASK_LEASE = 3        -- seconds; holds are shorter, renewals extend
local LOCK_LEASE = 3
-- Files, and (less often) the directories above them.
local FILES = { "src/a.c", "src/b.c", "src/lib/x.c", "src/lib/y.c", "docs/a.md", "docs/b.md",
                "tests/t1", "tests/t2", "README", "Makefile" }
local DIRS = { "src", "src/lib", "docs", "tests" }

local function random_path()
  if math.random() < 0.15 then
    return DIRS[math.random(#DIRS)]
  end
  return FILES[math.random(#FILES)]
end

local root = ac.open()
local ch = assert(root:channel(chan_name))
local log = assert(io.open(log_path, "w"))
local now = sys.monotonic

local function emit(rec)
  log:write(json.dumps(rec), "\n")
end

--- Call f(...) and log {op=, ok=, code=, t0=, t1=} plus what `extra`
--- adds from the result. Returns the result (nil on failure).
local function logged(op, fields, f, ...)
  local t0 = now()
  local res, msg, code = f(...)
  local t1 = now()
  fields.op, fields.t0, fields.t1 = op, t0, t1
  fields.ok = res ~= nil and res ~= false
  if not fields.ok then
    fields.code, fields.msg = tostring(code), tostring(msg)
  end
  return res, fields
end

local counter = 0
local function post()
  counter = counter + 1
  local token = ("%s-%d"):format(name, counter)
  local to = "all"
  if math.random() < 0.2 then
    to = ("w%02d"):format(math.random(1, 32))
  end
  if math.random() < 0.05 then
    -- Through the CLI, as agents do.
    local t0 = now()
    local p = io.popen(("%s --root %s post %s --from %s --to %s --title %s --body %s 2>&1")
      :format(bin, root.path, chan_name, name, to, token, "body-" .. token))
    local out = p:read("a")
    local ok = p:close()
    local t1 = now()
    local seq = out:match("^posted #(%d+) %-> ")
    emit({ op = "post", via = "cli", ok = ok and seq ~= nil, seq = tonumber(seq), token = token,
           to = to, t0 = t0, t1 = t1, msg = (not seq) and out or nil })
    return
  end
  local res, rec = logged("post", { token = token, to = to }, ch.post, ch,
    { from = name, to = to, title = token, body = "body-" .. token })
  if res then
    rec.seq = res.seq
  end
  emit(rec)
end

local function read_batch(batch, rec)
  if batch then
    local seqs = {}
    for i, m in ipairs(batch.messages) do
      seqs[i] = m.seq
    end
    rec.seqs = json.array(seqs)
    rec.cursor_before, rec.cursor = batch.cursor_before, batch.cursor
  end
  emit(rec)
end

local function read()
  local batch, rec = logged("read", {}, ch.read, ch, { as = name })
  read_batch(batch, rec)
end

local function wait()
  local batch, rec = logged("wait", {}, ch.wait, ch,
    { as = name, timeout = 0.05 + math.random() * 0.3, interval = 0.05 })
  if not batch and rec.code == "ETIMEDOUT" then
    rec.ok, rec.timeout = true, true
  end
  read_batch(batch, rec)
end

-- The task and the lock this worker holds, with when to give them back.
local task, lock

--- Release the task held. A lease that ran out (this worker was slower
--- than its lease) cannot be released: take it over again first, as a
--- well-behaved agent does, so that no task stays stuck.
local function release_task()
  local _, rec = logged("release", { task = task.id }, ch.release, ch, task.id, { as = name })
  emit(rec)
  if rec.code == "LEASE_RECOVERY_REQUIRED" then
    _, rec = logged("recover", { task = task.id, lease = TASK_LEASE }, ch.recover, ch, task.id,
      { as = name, reason = "stress: own lease expired", lease = TASK_LEASE })
    emit(rec)
    if rec.ok then
      _, rec = logged("release", { task = task.id }, ch.release, ch, task.id, { as = name })
      emit(rec)
    end
  end
  task = nil
end

local function task_op()
  if task then
    if now() >= task.until_t then
      release_task()
      return
    end
    local _, rec = logged("renew", { task = task.id, lease = TASK_LEASE }, ch.renew, ch, task.id,
      { as = name, lease = TASK_LEASE })
    emit(rec)
    if rec.code == "LEASE_RECOVERY_REQUIRED" then
      release_task()      -- expired, nobody took it over yet
    elseif not rec.ok then
      task = nil          -- lost it (expired and recovered by another)
    end
    return
  end
  local id = "t" .. math.random(1, ntasks)
  local res, rec = logged("claim", { task = id, lease = TASK_LEASE }, ch.claim, ch, id,
    { as = name, lease = TASK_LEASE })
  if not res and rec.code == "LEASE_RECOVERY_REQUIRED" then
    -- The holder overran its lease (a slow machine): take it over.
    emit(rec)
    res, rec = logged("recover", { task = id, lease = TASK_LEASE }, ch.recover, ch, id,
      { as = name, reason = "stress: lease expired", lease = TASK_LEASE })
  end
  if res then
    rec.expires = res.lease_expires_at
    task = { id = id, until_t = now() + math.random() * 0.8 }
  end
  emit(rec)
end

local function lock_op()
  if lock then
    if now() >= lock.until_t then
      local _, rec = logged("unlock", { id = lock.id }, ch.unlock, ch, lock.id, { as = name })
      emit(rec)
      lock = nil
    end
    return
  end
  local want = { random_path() }
  if math.random() < 0.4 then
    want[2] = random_path()
  end
  if math.random() < 0.01 then
    want = { "." }
  end
  local res, rec = logged("lock", { lease = LOCK_LEASE }, ch.lock, ch, want,
    { as = name, lease = LOCK_LEASE })
  if res then
    local paths = {}
    for i, p in ipairs(res.paths) do
      paths[i] = p.normalized_path
    end
    rec.id, rec.paths = res.lock_id, json.array(paths)
    lock = { id = res.lock_id, until_t = now() + math.random() * 0.5 }
  end
  emit(rec)
end

local deadline = now() + seconds
while now() < deadline do
  local r = math.random()
  if r < 0.30 then
    post()
  elseif r < 0.45 then
    read()
  elseif r < 0.52 then
    wait()
  elseif r < 0.76 then
    task_op()
  else
    lock_op()
  end
end

-- Give back what is held.
if task then
  release_task()
end
if lock then
  local _, rec = logged("unlock", { id = lock.id }, ch.unlock, ch, lock.id, { as = name })
  emit(rec)
end
emit({ op = "end", t0 = now(), t1 = now() })
log:close()
ch:close()
root:close()
