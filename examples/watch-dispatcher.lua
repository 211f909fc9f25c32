-- examples/watch-dispatcher.lua: hand ready tasks to idle agents.
--
--   agent-chat watch dev --as dispatcher --script examples/watch-dispatcher.lua
--   agent-chat watch dev --as dispatcher --script examples/watch-dispatcher.lua --once   # from cron
--
-- A task is ready when it is open, has no owner and every dependency is
-- done. An agent is idle when its latest status event says so
--   agent-chat event post dev --from alice --harness claude-code --type status --status idle
-- and it owns no open or in-progress task. Each ready task, by id, goes to
-- the agent that has been idle longest (the oldest idle event).
--
-- Assigning is `task update --owner AGENT` made by the dispatcher, plus a
-- message to the agent, which wakes its `agent-chat wait`. The task stays
-- open; from then on only its owner can claim it (anyone else gets
-- LEASE_CONFLICT "assigned to"). We do not claim on the agent's behalf: a
-- lease taken before the agent starts would run out while it has not seen
-- the task yet, and the audit trail would show the agent acting when it
-- did not.
--
-- When: at start, and after every batch that held a status event or a
-- task change (a task created or finished, a lease released). Dispatching
-- looks at the whole board each time, so it is idempotent, which is what
-- at-least-once delivery asks for: an assigned task has an owner and is
-- not ready any more, and its agent owns a task and is not idle any more.
-- The dispatcher's own task updates are not delivered back to it (a
-- reader never gets its own messages), so it does not wake itself up.

local function ready_tasks(tasks)
  local by_id = {}
  for _, t in ipairs(tasks) do
    by_id[t.id] = t
  end
  local ready = {}
  for _, t in ipairs(tasks) do
    local deps_done = true
    for _, dep in ipairs(t.depends_on) do
      deps_done = deps_done and by_id[dep] ~= nil and by_id[dep].status == "done"
    end
    if t.status == "open" and t.owner == nil and deps_done then
      ready[#ready + 1] = t
    end
  end
  return ready                      -- ch:tasks() lists by id
end

-- Idle agents, longest idle first: the latest status event of each agent
-- is idle, and the agent holds no open or in-progress task.
local function idle_agents(events, tasks)
  local latest, order = {}, {}
  for i, e in ipairs(events) do    -- seq order
    latest[e.agent] = { status = e.status, at = i }
  end
  local busy = {}
  for _, t in ipairs(tasks) do
    if t.owner and (t.status == "open" or t.status == "in_progress") then
      busy[t.owner] = true
    end
  end
  for agent, l in pairs(latest) do
    if l.status == "idle" and not busy[agent] then
      order[#order + 1] = { agent = agent, at = l.at }
    end
  end
  table.sort(order, function(a, b)
    return a.at < b.at
  end)
  return order
end

local function dispatch(ctx)
  local ch = ctx.channel
  local tasks = assert(ch:tasks())
  local events, msg = ch:events{ type = "status" }
  if not events then
    -- One malformed event message would fail every retry the same way:
    -- say so and wait for the next change instead of stopping the loop.
    ctx.log("cannot read status events: " .. tostring(msg))
    return
  end
  local agents = idle_agents(events, tasks)
  for i, t in ipairs(ready_tasks(tasks)) do
    local agent = agents[i]
    if not agent then
      break
    end
    local rec, umsg, code = ch:task_update(t.id, { as = ctx.name, owner = agent.agent })
    if not rec then
      error(code .. ": " .. umsg)     -- TASK_LOCK_TIMEOUT and friends: retried
    end
    ctx.post{
      to = agent.agent, status = "assignment", title = "assigned: " .. t.id,
      body = string.format("Task %s (%s) is yours. Claim it with:\n"
        .. "  agent-chat task claim %s %s --as %s\n", t.id, t.title, ch.name, t.id, agent.agent),
    }
    ctx.log("assigned " .. t.id .. " to " .. agent.agent)
  end
end

local dirty = false

return {
  start = dispatch,
  message = function(msg)
    if msg.status == "event.status" then
      dirty = true
    end
  end,
  task = function()
    dirty = true
  end,
  idle = function(ctx)
    if dirty then
      dispatch(ctx)
      dirty = false                 -- only once it worked: a retry dispatches again
    end
  end,
}
