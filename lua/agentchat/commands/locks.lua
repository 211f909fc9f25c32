-- agentchat.commands.locks: lock, check, unlock, recover and recover-pending
-- (docs/format.md 2.2), byte-compatible with the Python tool's output. Every
-- PATH_LOCK_* failure is one line "agent-chat: CODE: message", exit 1.
local open = require "agentchat.commands.open"
local locks_api = require "agentchat.api.locks"

local M = {}

local OWNER_FLAGS = { "--as", "--from", "--owner" }
local LEASE_FLAGS = { "--lease-seconds", "--lease", "--ttl" }

local function open_channel(args, ctx)
  return open.channel(args, ctx, { open = locks_api.lock_channel })
end

local function normalized_paths(rec)
  local out = {}
  for i, p in ipairs(rec.paths) do
    out[i] = p.normalized_path
  end
  return table.concat(out, ", ")
end

-- ------------------------------------------------------------ commands

local function cmd_lock(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local rec, msg, code, exit = ch:lock(args.paths, { as = args.as, lease = args.lease_seconds })
  if not rec then
    return ctx.fail(msg, code, exit)
  end
  ctx.out(string.format("locked %s -> %s/%s\n", rec.lock_id, args.channel, normalized_paths(rec)))
  return 0
end

local function cmd_check(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local hits, msg, code, exit = ch:check(args.paths, { as = args.as })
  if not hits then
    return ctx.fail(msg, code, exit)
  end
  if #hits == 0 then
    ctx.out("available\n")
    return 0
  end
  local out = {}
  for i, rec in ipairs(hits) do
    -- generation: the holder's fencing token, on a store that keeps one (docs/etcd.md)
    out[i] = string.format("locked %s owner=%s expires=%s%s\n", rec.lock_id, rec.owner, rec.expires_at,
      rec.generation and (" generation=" .. rec.generation) or "")
  end
  ctx.out(table.concat(out))
  return 0
end

local function cmd_unlock(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local rec, msg, code, exit = ch:unlock(args.target, { as = args.as, generation = args.generation })
  if not rec then
    return ctx.fail(msg, code, exit)
  end
  ctx.out(string.format("unlocked %s from %s\n", rec.lock_id, args.channel))
  return 0
end

local function cmd_recover(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local rec, msg, code, exit = ch:recover_lock(args.target, {
    as = args.as, reason = args.reason, lease = args.lease_seconds,
  })
  if not rec then
    return ctx.fail(msg, code, exit)
  end
  ctx.out(string.format("recovered %s for %s previous_owner=%s reason=%s\n", rec.lock_id,
    rec.owner, rec.previous_owner, rec.recovery_reason))
  return 0
end

local function cmd_recover_pending(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local res, msg, code, exit = ch:recover_pending_locks{ as = args.as,
                                                         resolve = args.resolve_publication }
  if not res then
    return ctx.fail(msg, code, exit)
  end
  -- Printed even when nothing was pending (the Python tool does).
  ctx.out("recovered pending path-lock transaction in " .. args.channel .. "\n")
  return 0
end

-- ------------------------------------------------------------ grammar

local function owner_option(p, required, help)
  local spec = { dest = "as", required = required, metavar = "NAME", help = help }
  for i, f in ipairs(OWNER_FLAGS) do
    spec[i] = f
  end
  p:option(spec)
end

local function lease_option(p)
  local spec = { dest = "lease_seconds", type = "float", default = 300.0, metavar = "SECONDS",
                 help = "lease in seconds (default: 300)" }
  for i, f in ipairs(LEASE_FLAGS) do
    spec[i] = f
  end
  p:option(spec)
end

function M.register(sub)
  -- Arguments are defined on first use (argparse `build`).
  sub:parser("lock", { description = "Lock files or directories (relative to the channel folder) for a lease. "
      .. "A directory lock covers everything below it.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:positional{ "paths", nargs = "+", metavar = "PATH", help = "paths to lock" }
      owner_option(p, true, "lock owner (agent name)")
      lease_option(p)
      p:set_defaults{ handler = cmd_lock }
    end })

  sub:parser("check", { description = "Print 'available', or every lock (expired ones included) that overlaps "
      .. "the paths. Exits 0 either way.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:positional{ "paths", nargs = "+", metavar = "PATH", help = "paths to check" }
      owner_option(p, false, "agent name (validated, otherwise ignored)")
      p:set_defaults{ handler = cmd_check }
    end })

  sub:parser("unlock", { description = "Release a lock, named by its id or by one of its paths.", build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:positional{ "target", help = "lock id, or a path of the lock" }
      owner_option(p, true, "lock owner (agent name)")
      p:option{ "--generation", type = "int", metavar = "N",
                help = "refuse (PATH_LOCK_FENCED) unless the lock still has this generation "
                  .. "(check prints it on an etcd store)" }
      p:set_defaults{ handler = cmd_unlock }
    end })

  sub:parser("recover", { description = "Take over an expired lock with a reason; the lock id is kept.",
    build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:positional{ "target", help = "lock id, or a path of the lock" }
      owner_option(p, true, "new owner (agent name)")
      p:option{ "--reason", required = true, help = "why the lock is recovered" }
      lease_option(p)
      p:set_defaults{ handler = cmd_recover }
    end })

  sub:parser("recover-pending", { description = "Roll back or complete a path-lock change that a crash left journaled.",
    build = function(p)
      p:positional{ "channel", help = "channel name" }
      owner_option(p, true, "operator (agent name)")
      p:option{ "--resolve-publication", choices = { "rollback", "published" },
                help = "for an applied or published change: roll it back, or accept it" }
      p:set_defaults{ handler = cmd_recover_pending }
    end })
end

return M
