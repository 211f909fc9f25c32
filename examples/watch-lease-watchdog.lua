-- examples/watch-lease-watchdog.lua: free expired task leases and path
-- locks, and tell the channel.
--
--   agent-chat watch dev --as watchdog --script examples/watch-lease-watchdog.lua
--   agent-chat watch dev --as watchdog --script examples/watch-lease-watchdog.lua --once  # from cron
--
-- Expiry writes nothing (a lease simply runs out), so there is no message
-- to react to: this script only has a `tick`, which watch calls every
-- `interval` seconds (30 here; --interval overrides) and once with --once.
--
-- An expired task lease is taken over with `task recover` and a reason,
-- which records the previous owner in the lease.recovered audit message,
-- then released, so the task is open and ready for someone else (the
-- dispatcher example hands it out). An expired path lock is recovered the
-- same way, then unlocked. Each one gets a notice to `all` naming the
-- previous owner.
--
-- Whether a lease has run out is the store's call: recover refuses a live
-- lease with LEASE_NOT_EXPIRED, and that is simply skipped, so the
-- watchdog and the store never disagree about clocks. If the watchdog is
-- stopped between the recover and the release, it holds that lease; the
-- next sweep releases whatever the watchdog itself holds, so a crash never
-- strands a task. The notice is best effort (the audit messages are the
-- record).

local function notice(ctx, what, id, previous, reason)
  ctx.post{
    status = "notice", title = string.format("recovered %s %s from %s", what, id, previous),
    body = string.format("The %s %s of %s ran out and was freed by %s.\nReason: %s\n",
      what, id, previous, ctx.name, reason),
  }
end

-- recover + release for one expired task lease; nothing for a live one.
local function sweep_task(ctx, t)
  local ch, me = ctx.channel, ctx.name
  local previous = t.owner
  if previous ~= me then
    local reason = string.format("lease of %s expired at %s", previous, t.lease_expires_at)
    local rec, msg, code = ch:recover(t.id, { as = me, reason = reason, lease = 60 })
    if not rec then
      if code == "LEASE_NOT_EXPIRED" or code == "LEASE_NOT_FOUND" then
        return                        -- still alive, or in progress without a lease
      end
      error(code .. ": " .. msg)
    end
    assert(ch:release(t.id, { as = me }))
    notice(ctx, "task lease", t.id, previous, reason)
  else
    assert(ch:release(t.id, { as = me }))   -- left over from an interrupted sweep
  end
end

local function sweep_lock(ctx, l)
  local ch, me = ctx.channel, ctx.name
  if l.owner ~= me then
    local reason = string.format("lock of %s expired at %s", l.owner, l.expires_at)
    assert(ch:recover_lock(l.lock_id, { as = me, reason = reason, lease = 60 }))
    assert(ch:unlock(l.lock_id, { as = me }))
    local paths = {}
    for i, p in ipairs(l.paths) do
      paths[i] = p.normalized_path
    end
    notice(ctx, "path lock", table.concat(paths, ", "), l.owner, reason)
  else
    assert(ch:unlock(l.lock_id, { as = me }))
  end
end

return {
  interval = 30,
  tick = function(ctx)
    for _, t in ipairs(assert(ctx.channel:tasks())) do
      if t.status == "in_progress" and t.owner then
        sweep_task(ctx, t)
      end
    end
    for _, l in ipairs(assert(ctx.channel:locks())) do
      if l.expired or l.owner == ctx.name then
        sweep_lock(ctx, l)
      end
    end
  end,
}
