-- examples/watch-state-refresher.lua: keep state.md current.
--
--   agent-chat watch dev --as state-bot --script examples/watch-state-refresher.lua
--   agent-chat watch dev --as state-bot --script examples/watch-state-refresher.lua \
--     --arg examples/state-brief.lua             # render with a user template
--
-- state.md is what `agent-chat compact` writes: the channel's decisions,
-- open tasks, owners, locks and blockers (docs/format.md 3.8). This script
-- re-renders it at start and after every batch of new messages (task and
-- lock changes are messages too), once per batch rather than once per
-- message, so a burst of 100 posts costs one rendering.
--
-- It writes with audit = false: a state.compacted message after every
-- change would wake every agent's `wait` and double the channel's traffic.
-- (It could not loop on its own audits anyway: a reader never gets its
-- own messages.) A crash between a message and the rendering loses
-- nothing: the next start renders first.

local template_path = ...
local template
if template_path then
  local f = assert(io.open(template_path))
  template = f:read("a")
  f:close()
end

local dirty = false

local function refresh(ctx)
  assert(ctx.channel:compact{ as = ctx.name, audit = false, template = template, name = template_path })
end

return {
  start = refresh,
  message = function()
    dirty = true
  end,
  idle = function(ctx)
    if dirty then
      refresh(ctx)
      dirty = false
    end
  end,
}
