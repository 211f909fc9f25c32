-- agentchat.api.tasks: the task-board methods of agentchat.Channel.
--
--   ch:tasks()                                   -- list of records, by id
--   ch:task(id)                                  -- record, blocking ("" = ready)
--   ch:task_create{id=, from=, title=, owner=, depends_on={}, files_hint={},
--                  acceptance={}, branch=}       -- record
--   ch:task_update(id, {as=, title=, owner=, clear_owner=, depends_on=,
--                  files_hint=, acceptance=, branch=, clear_branch=, status=})
--   ch:claim(id, {as=, lease=300})               -- take the lease
--   ch:renew(id, {as=, lease=300, generation=})
--   ch:release(id, {as=, generation=}) / ch:done(id, {as=, generation=}) / ch:block(id, {as=})
--   ch:recover(id, {as=, reason=, lease=300})    -- take over an expired lease
--   ch:recover_pending_lease{as=, resolve=nil|"rollback"|"published"}
--   (ch:next_task and task_create's for_capability: api/queue.lua)
--
-- Records are tables with the twelve fields of docs/format.md 3.5 (JSON null
-- fields are nil); ch:task and the lease methods add `generation`, the
-- fencing generation of the task's lease, on a store that keeps one (etcd:
-- the revision that granted it; docs/etcd.md). `generation` given to renew,
-- release or done: the lease must still be that one (LEASE_FENCED).
-- Failures return nil, message, code (TASK_*, LEASE_*).
local A = {}

local function tasks()
  return require "agentchat._tasks"
end

local function need_as(opts, what)
  if type(opts) ~= "table" or type(opts.as) ~= "string" then
    error(what .. " expects {as = name}", 3)
  end
end
A.need_as = need_as     -- (api/queue.lua's next_task)

function A.install(Channel, M)
  function Channel:tasks()
    return tasks().list(self:handle())
  end

  function Channel:task(id)
    return tasks().show(self:handle(), id)
  end

  function Channel:task_create(t)
    if type(t) ~= "table" then
      error("task_create expects a table", 2)
    end
    local acceptance = t.acceptance
    if t.for_capability ~= nil then
      local msg, code, exit
      acceptance, msg, code, exit = require("agentchat.api.queue").with_capabilities(acceptance,
        t.for_capability)
      if not acceptance then
        return nil, msg, code, exit
      end
    end
    return tasks().create(self:handle(), {
      id = t.id, created_by = t.created_by or t.from, title = t.title, owner = t.owner,
      depends_on = t.depends_on, files_hint = t.files_hint, acceptance = acceptance,
      branch = t.branch,
    })
  end

  function Channel:task_update(id, t)
    need_as(t, "task_update")
    return tasks().update(self:handle(), id, t.as, t)
  end

  for _, op in ipairs({ "claim", "renew", "release", "done", "block", "recover" }) do
    Channel[op] = function(self, id, opts)
      need_as(opts, op)
      if opts.generation ~= nil and math.type(opts.generation) ~= "integer" then
        error(op .. ": generation must be an integer", 2)
      end
      return tasks().lease(self:handle(), op, id, opts.as, opts.lease or 300.0, opts.reason,
        opts.generation)
    end
  end

  function Channel:recover_pending_lease(opts)
    need_as(opts, "recover_pending_lease")
    return tasks().recover_pending(self:handle(), opts.as, opts.resolve)
  end
end

return A
