-- agentchat.commands.queue: the capability work queue's side of the `task`
-- commands (docs/tasks.md "Work queues"): `task next` and `task list
-- --json`, loaded only by them (agentchat.commands.tasks calls in).
local ac = require "agentchat"
local open = require "agentchat.commands.open"

local M = {}

-- `task next` found nothing to claim.
local EXIT_NONE_READY = 3

--- `task next` on the open channel `ch`: claim the oldest ready task for
--- one of the agent's capabilities; the claim line of `task claim`, or
--- one line and exit 3.
function M.next(ch, args, ctx, capabilities)
  local wait, err_rc = open.seconds(ctx, args.wait, "--wait")
  if not wait then
    return err_rc
  end
  local t, msg, code, exit = ch:next_task{ as = args.as, capabilities = capabilities,
                                           lease = args.lease_seconds, wait = wait }
  if not t then
    if code == "TASK_NONE_READY" then
      ctx.out(msg .. "\n")
      return EXIT_NONE_READY
    end
    return ctx.fail(msg, code, exit)
  end
  ctx.out("claimed task " .. t.id .. " [" .. t.status .. "]\n")
  return 0
end

--- `task list --json`: the records as a JSON array, every field present.
function M.list_json(list, ctx)
  local json = require "agentchat.json"
  for i, t in ipairs(list) do
    t.for_capability = json.array(ac.task_capabilities(t))
    for _, k in ipairs({ "depends_on", "files_hint", "acceptance" }) do
      t[k] = json.array(t[k] or {})
    end
    for _, k in ipairs({ "owner", "lease_expires_at", "branch" }) do
      if t[k] == nil then
        t[k] = json.null
      end
    end
    list[i] = t
  end
  ctx.out(json.dumps(json.array(list), { indent = 2, sort_keys = true, ensure_ascii = false }) .. "\n")
  return 0
end

return M
