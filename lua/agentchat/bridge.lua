-- agentchat.bridge: a live bridge between a channel and a Claude Code agent
-- team (docs/claude-teams.md), the loop behind `agent-chat bridge
-- claude-team TEAM --channel CH`.
--
--   local bridge = require "agentchat.bridge"
--   local code, reason = bridge.claude_team(ch, { team = "refactor-squad", as = "claude-team",
--                                                 once = false, interval = 5, stale_ms = 10000,
--                                                 log = function(line) end, out = function(line) end })
--
-- Two directions, one wait:
--
--   channel -> team   every ordinary message addressed to a team member (a
--                     broadcast: to every member) is appended to that
--                     member's inbox file, as the entry agentchat.claude
--                     makes of it (a typed request or response as the
--                     protocol message Claude Code reads);
--   team -> channel   every entry of every inbox file is posted to the
--                     channel, as `import claude-team` posts it.
--
-- Between turns the bridge blocks in one wait for both the channel's change
-- notification and an inotify watch of the team's inboxes/ folder (no
-- polling; where the store cannot notify, the channel is rescanned every
-- `interval` seconds).
--
-- Claude Code's lock: an inbox is written only holding proper-lockfile's
-- lock directory <inbox>.json.lock (made with mkdir, its mtime refreshed,
-- stale after stale_ms), which Claude Code takes for its own writes. Under
-- the lock the file is read again, the new entries are spliced in before
-- its closing bracket (every byte of the entries already there stays: the
-- fields we do not know, the read flags), and the whole file replaces the
-- old one atomically (temp + rename). The bridge never marks an entry read.
-- A lock that another holds is waited for (its removal is a change of the
-- folder); one that goes stale is taken over, as proper-lockfile does.
--
-- What was carried survives a crash on both sides, without a file of its
-- own:
--
--   channel -> team   the cursor of `as` is the last seq handled (every
--                     message at or below it is in its inboxes); above it,
--                     a message is delivered unless its entry (recognised
--                     by its key, agentchat.claude.entry) is in the inbox
--                     already. So a crash between the write of an inbox and
--                     the cursor's neither skips nor repeats a message.
--   team -> channel   a posted entry carries its key (import_id), and the
--                     channel is scanned for the keys when the bridge
--                     starts: an entry is posted once, and the entries the
--                     bridge wrote itself are never posted back.
--
-- A lock directory the bridge held when it was killed carries its mark
-- (hostfile.h) and is removed when it starts again, so Claude Code does
-- not wait for it to go stale.
local claude = require "agentchat.claude"
local errors = require "agentchat.errors"
local folder = require "agentchat.folder"
local importer = require "agentchat.importer"
local py = require "agentchat.pycompat"
local sys = require "agentchat.sys"

local M = {}

M.DEFAULT_AS = "claude-team"
M.STALE_MS = 10000          -- proper-lockfile's default stale time
M.DEFAULT_INTERVAL = 5.0    -- rescans where the store cannot notify
local SWEEP_AGE = 60        -- seconds after which a temp of ours is debris
local ONCE_WAIT = 2.0       -- --once waits this long past a lock's stale time

local ENOENT = 2
local INBOXES = claude.INBOXES
local INTERRUPT = errors.new("INTERRUPTED", "cancelled by user", 130)

local function is_interrupt(e)
  return (type(e) == "table" and e.code == "INTERRUPTED") or sys.interrupted() ~= nil
end

local function failure(msg, code, exit)
  return { msg = msg, code = code or "IO_ERROR", exit = exit }
end

-- Raise a channel failure out of the loop (bridge.claude_team returns it).
local function check(v, msg, code, exit)
  if v == nil then
    if code == "INTERRUPTED" then
      error(INTERRUPT, 0)
    end
    error(failure(msg, code, exit), 0)
  end
  return v
end

-- A warning about the team's files, once per `key` (a file that stays
-- unreadable is not reported on every turn).
local function warn(b, key, text)
  if not b.warned[key] then
    b.warned[key] = true
    b.log("warning: " .. text)
  end
end

-- ------------------------------------------------------------ the roster

-- Read the roster when config.json changed (first: at the start, where a
-- roster that cannot be read is an error; later it is a warning and the
-- roster read before stays).
local function load_roster(b, first)
  local st = folder.stat(b.dir, "config.json")
  local sig = st and (st.ino .. ":" .. st.size .. ":" .. st.mtime_ns) or "none"
  if sig == b.roster_sig then
    return
  end
  local roster, msg, code = claude.roster(b.dir, function(file, problem)
    warn(b, "roster:" .. problem, file .. ": " .. problem)
  end)
  b.roster_sig = sig
  if not roster then
    if first then
      error(failure(msg, code, 1), 0)
    end
    warn(b, "roster:" .. sig, msg .. " (keeping the roster read before)")
    return
  end
  b.team = b.team or roster.name
  b.names = importer.roster_names(roster)
end

-- ------------------------------------------------------------ channel -> team

-- What message m says: its import key and request (importer.learn), the
-- keys of the entries it becomes, and, above the cursor, those entries to
-- deliver.
local function learn(b, m)
  importer.learn(m, b.keys, b.requests)
  for _, owner in ipairs(claude.recipients(m, b.names)) do
    local e = claude.entry(m, owner, b.team)
    b.delivered[e.key] = true
    if m.seq > b.cursor then
      local q = b.queue[owner]
      if not q then
        q = {}
        b.queue[owner] = q
      end
      q[#q + 1] = { seq = m.seq, json = e.json, key = e.key, from = e.from, timestamp = e.timestamp,
                    type = m.fields.type }
    end
  end
end

local function scan_channel(b)
  local batch = check(b.ch:fetch{ as = b.as, all = true, after = b.scanned })
  for _, m in ipairs(batch.messages) do
    learn(b, m)
  end
  b.scanned = math.max(b.scanned, batch.cursor)
end

-- The entries of an inbox file's text ("" is none: a file being created).
local function parse(text)
  if text:match("^%s*$") then
    return {}
  end
  return claude.entries(text)
end

-- Append the queued entries of `owner` to its inbox under Claude Code's
-- lock. Returns true when the queue is done, false when it must wait (the
-- lock is held, the file cannot be used now).
local function deliver(b, owner)
  local rel = INBOXES .. "/" .. owner .. ".json"
  local lock <close>, age, errno = folder.lock(b.dir, rel .. ".lock", b.stale_ms, b.sig)
  if lock == false then
    b.busy[owner] = age
    return false
  elseif not lock then
    warn(b, "lock:" .. rel .. ":" .. tostring(errno), "cannot lock " .. rel .. ": " .. age)
    return false
  end
  b.busy[owner] = nil
  local text, msg, rerrno = folder.read(b.dir, rel, importer.FILE_MAX)
  if not text then
    if rerrno ~= ENOENT then
      warn(b, "read:" .. rel .. ":" .. msg, "cannot read " .. rel .. ": " .. msg .. " (not delivering into it)")
      return false
    end
    text = ""
  end
  local list, problem = parse(text)
  if not list then
    warn(b, "corrupt:" .. rel .. ":" .. sys.sha256(text), rel .. ": " .. problem
      .. " (not delivering into it until it is a JSON array again)")
    return false
  end
  -- Which of them are there already: only an entry with the sender and
  -- the time of one of them can be (its key says for sure).
  local maybe, present = {}, {}
  for _, item in ipairs(b.queue[owner]) do
    maybe[item.from .. "\0" .. item.timestamp] = true
  end
  for _, e in ipairs(list) do
    if type(e) == "table" and maybe[tostring(e.from) .. "\0" .. tostring(e.timestamp)] then
      local k = claude.plain_key(e, b.team, owner)
      if k then
        present[k] = true
      end
    end
  end
  local jsons, added = {}, {}
  for _, item in ipairs(b.queue[owner]) do
    if not present[item.key] then
      present[item.key] = true
      jsons[#jsons + 1] = item.json
      added[#added + 1] = item
    end
  end
  if #jsons > 0 then
    local out = assert(claude.append(text, jsons))
    local ok, why = lock:touch()
    if not ok then
      warn(b, "compromised:" .. rel .. ":" .. b.scanned, "the lock of " .. rel .. " was taken over while held ("
        .. why .. "); trying again")
      return false
    end
    ok, why = folder.write(b.dir, rel, out)
    if not ok then
      warn(b, "write:" .. rel .. ":" .. why, "cannot write " .. rel .. ": " .. why)
      return false
    end
  end
  lock:release()
  for _, item in ipairs(added) do
    b.out(string.format("delivered #%d from %s to %s (%s)", item.seq, item.from, owner, item.type or "message"))
  end
  b.carried_out = b.carried_out + #added
  b.queue[owner] = nil
  return true
end

-- The cursor of `as` follows the last seq below which everything is in its
-- inbox.
local function advance(b)
  local upto = b.scanned
  for _, q in pairs(b.queue) do
    upto = math.min(upto, q[1].seq - 1)
  end
  if upto > b.cursor then
    check(b.ch:advance_cursor(b.as, upto))
    b.cursor = upto
  end
end

local function deliver_all(b)
  local owners = {}
  for owner in pairs(b.queue) do
    owners[#owners + 1] = owner
  end
  table.sort(owners)
  for _, owner in ipairs(owners) do
    deliver(b, owner)
  end
  advance(b)
end

-- ------------------------------------------------------------ team -> channel

-- The inbox files, by name ({rel, owner}); a symlink is reported and left.
local function inboxes(b)
  local list, msg = folder.list(b.dir, INBOXES)
  if not list then
    warn(b, "list:" .. msg, "cannot list " .. INBOXES .. ": " .. msg)
    return {}
  end
  local out = {}
  for _, e in ipairs(list) do
    local owner = e.name:match("^(.+)%.json$")
    if owner and e.name:sub(1, 1) ~= "." then
      local rel = INBOXES .. "/" .. e.name
      if e.kind == "file" then
        out[#out + 1] = { rel = rel, owner = owner }
      else
        warn(b, "kind:" .. rel, "cannot read " .. rel .. ": "
          .. (e.kind == "symlink" and "it is a symlink (symlinks are not followed)" or "not a regular file"))
      end
    end
  end
  table.sort(out, function(x, y)
    return x.rel < y.rel
  end)
  return out
end

-- The entries of inbox `rel`, or nil, the problem and whether its lock is
-- held. A file that does not parse is read again under its lock: a writer
-- that writes in place (Claude Code) may have been in the middle of it,
-- and then the end of its write is a change of the folder.
local function read_entries(b, rel)
  local text, msg = folder.read(b.dir, rel, importer.FILE_MAX)
  if not text then
    return nil, msg
  end
  local list, problem = parse(text)
  if list then
    return list
  end
  local lock <close> = folder.lock(b.dir, rel .. ".lock", b.stale_ms, b.sig)
  if not lock then
    return nil, problem, true
  end
  text, msg = folder.read(b.dir, rel, importer.FILE_MAX)
  if not text then
    return nil, msg
  end
  return parse(text)
end

local function mirror(b)
  local recs = {}
  for _, f in ipairs(inboxes(b)) do
    local st = folder.stat(b.dir, f.rel)
    local sig = st and (st.ino .. ":" .. st.size .. ":" .. st.mtime_ns)
    if sig and b.seen[f.rel] ~= sig then
      local list, problem, busy = read_entries(b, f.rel)
      if busy then
        sig = nil               -- being written: read it when the writer is done
      elseif not list then
        warn(b, "corrupt:" .. f.rel .. ":" .. sig, f.rel .. ": " .. problem)
      else
        local repeats = {}
        local done = b.done[f.rel] or {}
        b.done[f.rel] = done
        for i, entry in ipairs(list) do
          -- An entry seen at this index before (its read flag may have
          -- changed since) is settled: only its key counts, for repeats.
          local same = done[i] and type(entry) == "table" and type(entry.text) == "string"
            and done[i].sig == tostring(entry.from) .. "\0" .. tostring(entry.timestamp) .. "\0" .. entry.text
          if same then
            if done[i].hash then
              repeats[done[i].hash] = (repeats[done[i].hash] or 0) + 1
            end
          else
            local rec
            rec, problem = claude.record(entry, { team = b.team, owner = f.owner })
            done[i] = type(entry) == "table" and type(entry.text) == "string" and {
              sig = tostring(entry.from) .. "\0" .. tostring(entry.timestamp) .. "\0" .. entry.text,
              hash = rec and rec.hash } or nil
            if not rec then
              warn(b, "entry:" .. f.rel .. ":" .. i, f.rel .. "[" .. (i - 1) .. "]: " .. problem)
            else
              repeats[rec.hash] = (repeats[rec.hash] or 0) + 1
              rec.key = rec.hash .. (repeats[rec.hash] > 1 and ("-" .. repeats[rec.hash]) or "")
              -- An entry the bridge wrote is the channel's own message.
              if not (b.keys[rec.key] or b.delivered[rec.plain]) then
                rec.fields.import_id = rec.key
                rec.where = f.rel .. "[" .. (i - 1) .. "]"
                rec.order = #recs
                recs[#recs + 1] = rec
              end
            end
          end
        end
        for i = #list + 1, #done do
          done[i] = nil
        end
      end
      b.seen[f.rel] = sig
    end
  end
  table.sort(recs, function(x, y)
    if x.ts_us ~= y.ts_us then
      return x.ts_us < y.ts_us
    end
    return x.order < y.order
  end)
  for _, rec in ipairs(recs) do
    local res = check(importer.post(b.ch, rec, b.requests))
    b.keys[rec.key] = res.seq
    if rec.request_id and type(rec.type) == "string" and rec.type:match("_request$") then
      b.requests[rec.request_id] = b.requests[rec.request_id] or res.seq
    end
    -- Its seq is above the scan: learnt (and skipped) when the scan gets there.
    b.out(string.format("mirrored %s from %s to %s as #%d (%s)", rec.where, rec.from, rec.to, res.seq,
      rec.status == "event.status" and "status event" or (rec.type or "message")))
    b.carried_in = b.carried_in + 1
  end
end

-- ------------------------------------------------------------ the loop

-- The mark of this bridge's lock directories (hostfile.h): the same for
-- every run of one bridge (team, channel, name), so a run finds what a
-- killed one left.
local function mark(b)
  return tonumber(sys.sha256(table.concat({ b.dir, b.ch.name, b.as }, "\0")):sub(1, 6), 16) % 999000 + 1000
end

-- Remove the lock directories a killed run of this bridge left, and its
-- temps that are old enough to be debris.
local function clean(b)
  for _, e in ipairs(folder.list(b.dir, INBOXES) or {}) do
    if e.kind == "dir" and e.name:match("%.json%.lock$") then
      local lock = folder.lock(b.dir, INBOXES .. "/" .. e.name, b.stale_ms, b.sig)
      if lock then
        lock:release()
      end
    end
  end
  folder.sweep(b.dir, INBOXES, SWEEP_AGE)
end

local function pending(b)
  return next(b.queue) ~= nil
end

-- How long to wait: for ever while notification works, else `interval`;
-- while an inbox lock is held, no longer than until it would be stale.
local function timeout(b)
  local t = b.cw:notifying() and math.huge or b.interval
  for _, age in pairs(b.busy) do
    t = math.min(t, math.max(0.01, (b.stale_ms - age) / 1000 + 0.05))
  end
  return t
end

local function loop(b)
  local deadline
  while true do
    if sys.interrupted() then
      error(INTERRUPT, 0)
    end
    load_roster(b)
    scan_channel(b)
    deliver_all(b)
    mirror(b)
    if b.once then
      if not pending(b) then
        return 0, "once"
      end
      local busy = next(b.busy) ~= nil
      deadline = deadline or (sys.monotonic() + b.stale_ms / 1000 + ONCE_WAIT)
      if not busy or sys.monotonic() >= deadline then
        local owners = {}
        for owner in pairs(b.queue) do
          owners[#owners + 1] = INBOXES .. "/" .. owner .. ".json"
        end
        table.sort(owners)
        error(failure("could not deliver to " .. table.concat(owners, ", ") .. " (locked or unreadable); "
          .. "run the bridge again", "BRIDGE_UNDELIVERED", 1), 0)
      end
    end
    local t = timeout(b)
    if deadline then
      t = math.min(t, math.max(0, deadline - sys.monotonic()))
    end
    check(b.cw:wait(t, b.hw))
  end
end

local function start(b)
  local where = check(claude.locate(b.team_arg))
  b.dir = where.dir
  b.lock = b.ch:handle():exclusive(false)
  if not b.lock then
    error(failure("another bridge or import is running on '" .. b.ch.name .. "'", "CHANNEL_BUSY", 1), 0)
  end
  if not folder.stat(b.dir, "config.json") then
    error(failure("no config.json in " .. py.repr_str(b.dir) .. " (not a Claude Code team folder)",
      "IMPORT_INVALID_FOLDER", 1), 0)
  end
  load_roster(b, true)
  local ok, msg = folder.mkdir(b.dir, INBOXES)
  if not ok then
    error(failure("cannot make " .. INBOXES .. " in " .. py.repr_str(b.dir) .. ": " .. msg, "IO_ERROR", 1), 0)
  end
  b.sig = mark(b)
  -- Both watches before the first scans: nothing that happens after them
  -- is missed.
  b.hw, msg = folder.watch(b.dir, INBOXES)
  if not b.hw then
    error(failure("cannot watch " .. INBOXES .. " in " .. py.repr_str(b.dir) .. ": " .. msg, "IO_ERROR", 1), 0)
  end
  b.cw = b.ch:handle():watch()
  clean(b)
  b.cursor = b.ch:cursor(b.as)
  b.log(string.format("bridge claude-team: %s <-> '%s' as %s, from #%d", b.dir, b.ch.name, b.as, b.cursor))
end

local function close(b)
  if b.cw then
    b.cw:close()
  end
  if b.hw then
    b.hw:close()
  end
  if b.lock then
    b.lock:release()
  end
end

local function check_opts(ch, opts)
  if type(ch) ~= "table" or type(ch.handle) ~= "function" then
    error("bridge.claude_team expects (channel, {team = ...})", 3)
  end
  if type(opts) ~= "table" or type(opts.team) ~= "string" then
    error("bridge.claude_team expects {team = folder or name}", 3)
  end
  if opts.as ~= nil and (type(opts.as) ~= "string" or opts.as == "" or opts.as:find("%c")) then
    error("bridge.claude_team: as must be a one-line name", 3)
  end
  for _, k in ipairs({ "interval", "stale_ms" }) do
    local v = opts[k]
    if v ~= nil and (type(v) ~= "number" or v ~= v or v <= 0) then
      error("bridge.claude_team: " .. k .. " must be a positive number", 3)
    end
  end
end

--- Run the bridge of channel `ch` (an agentchat.Channel) and the team
--- opts.team (a team folder or a team name, as for import claude-team)
--- until it is stopped, or once (opts.once: carry what is there, then
--- return). opts: as (the bridge's name: its cursor; default
--- "claude-team"), interval (seconds between rescans where the store cannot
--- notify, default 5), stale_ms (when a lock counts as abandoned, default
--- 10000, proper-lockfile's), log(line) (default: stderr, "agent-chat: "
--- before it), out(line) (one line per message carried, default stdout).
--- Returns the exit code, the reason ("once", "signal" or "error"), the
--- counts {to_team, to_channel} and, for an error, its message and code (the
--- channel failed, the team folder cannot be used, CHANNEL_BUSY: another
--- bridge or import runs on the channel; with once, BRIDGE_UNDELIVERED: a
--- message could not be delivered, its inbox locked or unreadable).
function M.claude_team(ch, opts)
  check_opts(ch, opts)
  local b = {
    ch = ch, team_arg = opts.team, as = opts.as or M.DEFAULT_AS, once = opts.once and true or false,
    interval = opts.interval or M.DEFAULT_INTERVAL, stale_ms = opts.stale_ms or M.STALE_MS,
    log = opts.log or function(line)
      io.stdout:flush()
      io.stderr:write("agent-chat: " .. line .. "\n")
    end,
    out = opts.out or function(line)
      io.stdout:write(line .. "\n")
      io.stdout:flush()
    end,
    keys = {}, requests = {}, delivered = {}, queue = {}, busy = {}, seen = {}, done = {}, warned = {},
    scanned = 0, cursor = 0, carried_out = 0, carried_in = 0,
  }
  local ok, rc, reason = xpcall(function()
    start(b)
    return loop(b)
  end, function(e)
    if is_interrupt(e) then
      return INTERRUPT
    end
    if type(e) == "table" and e.msg then
      return e
    end
    return debug.traceback(e, 2)
  end)
  close(b)
  local counts = { to_team = b.carried_out, to_channel = b.carried_in }
  if ok then
    return rc, reason, counts
  end
  if rc == INTERRUPT then
    return 130, "signal", counts
  end
  if type(rc) ~= "table" then
    error(rc, 0)
  end
  return errors.exit_for(rc.code, rc.exit), "error", counts, rc.msg, rc.code
end

return M
