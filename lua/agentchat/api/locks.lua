-- agentchat.api.locks: the path-lock methods of agentchat.Channel (docs/format.md
-- 2.2, 3.7). A lock reserves files and directories of the channel's
-- workspace for a lease; a directory covers everything below it; an
-- expired lock still conflicts until someone recovers it with a reason.
--
--   ch:lock(paths, {as=, lease=300})        -- record of the new lock
--   ch:check(paths [, {as=}])               -- overlapping locks ({} = available)
--   ch:unlock(target, {as=, generation=})   -- the removed record
--   ch:recover_lock(target, {as=, reason=, lease=300})  -- the new record
--   ch:recover_pending_locks{as=, resolve=nil|"rollback"|"published"}
--                                           -- {outcome="none"|"rolled_back"|"completed", ...}
--   ch:locks([{ignore_journal=true}])       -- every record, by lock id
--   ch:normalize_lock_path(path)            -- normalized, kind
--   agentchat.path_overlaps(a, b)           -- on normalized paths
--   agentchat.lock_channel(root, name)      -- open a channel with the
--                                              PATH_LOCK_* channel errors
--
-- `paths` is a string or a list of strings; `target` is a lock id or a
-- path. `as` may also be spelled `owner`, `lease` `lease_seconds` or
-- `ttl`. A record is {lock_id, channel, owner, expires_at, locked_at,
-- updated_at, previous_owner, previous_expires_at, recovery_reason (nil
-- when null), paths = {{display_path, kind, normalized_path}, ...},
-- expired, generation}: `generation` is the holder's fencing token on a
-- store that keeps one (etcd: the revision that granted the lock;
-- docs/etcd.md), and unlock's `generation` refuses (PATH_LOCK_FENCED) unless
-- the lock still has it. Failures return nil, message, code (PATH_LOCK_*) and the exit
-- code 1; misuse raises.
local A = {}

local function pl()
  return require "agentchat._pathlocks"
end

local function owner_of(opts, what, required)
  if opts ~= nil and type(opts) ~= "table" then
    error(what .. " expects an options table", 3)
  end
  local owner = opts and (opts.as or opts.owner or opts.from)
  if owner ~= nil and type(owner) ~= "string" then
    error(what .. ": 'as' must be a string", 3)
  end
  if required and owner == nil then
    error(what .. " expects {as = name}", 3)
  end
  return owner
end

local function lease_of(opts, what)
  local lease = opts.lease or opts.lease_seconds or opts.ttl
  if lease ~= nil and type(lease) ~= "number" then
    error(what .. ": lease must be a number of seconds", 3)
  end
  return lease
end

local function paths_of(paths, what)
  if type(paths) == "string" then
    return { paths }
  end
  if type(paths) ~= "table" then
    error(what .. " expects a path or a list of paths", 3)
  end
  return paths
end

--- Open channel `name` of `root` for path locks: the channel errors read
--- as the Python tool's path-lock store words them.
function A.lock_channel(root, name)
  local ch, msg, code, exit = root:channel(name)
  if ch then
    return ch
  end
  if code == "CHANNEL_INVALID_NAME" then
    -- Quoted as the core message quotes it ('a\b', not repr's 'a\\b').
    local shown = msg:match(": '(.*)'$") or name
    return nil, "invalid channel name: '" .. shown .. "' (" .. msg .. ")",
      "PATH_LOCK_INVALID_CHANNEL", 1
  elseif code == "CHANNEL_NOT_FOUND" then
    local ac = require "agentchat"
    return nil, "channel does not contain _meta.json: " .. ac.join_path(root.path, name),
      "PATH_LOCK_CHANNEL_NOT_FOUND", 1
  end
  return nil, msg, code, exit
end

function A.install(Channel, M)
  function Channel:lock(paths, opts)
    local owner = owner_of(opts, "lock", true)
    return pl().lock(self:handle(), paths_of(paths, "lock"), owner, lease_of(opts, "lock"))
  end

  function Channel:check(paths, opts)
    return pl().check(self:handle(), paths_of(paths, "check"), owner_of(opts, "check", false))
  end

  function Channel:unlock(target, opts)
    if type(target) ~= "string" then
      error("unlock expects a lock id or a path", 2)
    end
    local owner = owner_of(opts, "unlock", true)
    if opts.generation ~= nil and math.type(opts.generation) ~= "integer" then
      error("unlock: generation must be an integer", 2)
    end
    return pl().unlock(self:handle(), target, owner, opts.generation)
  end

  function Channel:recover_lock(target, opts)
    if type(target) ~= "string" then
      error("recover_lock expects a lock id or a path", 2)
    end
    local owner = owner_of(opts, "recover_lock", true)
    if type(opts.reason) ~= "string" then
      error("recover_lock expects {as = name, reason = text}", 2)
    end
    return pl().recover(self:handle(), target, owner, opts.reason, lease_of(opts, "recover_lock"))
  end

  function Channel:recover_pending_locks(opts)
    local actor = owner_of(opts, "recover_pending_locks", true)
    local resolve = opts.resolve
    if resolve ~= nil and resolve ~= "rollback" and resolve ~= "published" then
      error("recover_pending_locks: resolve must be nil, 'rollback' or 'published'", 2)
    end
    return pl().recover_pending(self:handle(), actor, resolve)
  end

  function Channel:locks(opts)
    return pl().list(self:handle(), opts)
  end

  function Channel:normalize_lock_path(path)
    if type(path) ~= "string" then
      error("normalize_lock_path expects a string", 2)
    end
    return pl().normalize(self:handle(), path)
  end

  M.path_overlaps = function(a, b)
    return pl().overlaps(a, b)
  end
  M.lock_channel = A.lock_channel
end

return A
