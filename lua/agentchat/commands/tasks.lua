-- agentchat.commands.tasks: `agent-chat task <sub> CH ...` (docs/format.md 2.4),
-- byte-compatible with the Python tool: output lines, TASK_*/LEASE_* codes
-- (exit 2), and argparse errors inside `task` turned into one coded line
-- ("TASK_INVALID_COMMAND: cli error: ..." for an invalid choice,
-- "TASK_INVALID_ARGUMENT: cli error: ..." otherwise).
local ac = require "agentchat"
local errors = require "agentchat.errors"
local open = require "agentchat.commands.open"
local py = require("agentchat.lazy")("agentchat.pycompat")
local sys = require "agentchat.sys"

local M = {}

local SUBCOMMANDS = { "create", "list", "show", "update", "claim", "renew", "recover",
                      "recover-pending", "done", "block", "release", "next" }

-- Errors raised by the task parsers become one coded line.
local TAG = {
  format_error = function(perr)
    local code = perr.message:find("invalid choice:", 1, true) and "TASK_INVALID_COMMAND"
      or "TASK_INVALID_ARGUMENT"
    return errors.line(code, "cli error: " .. perr.message) .. "\n"
  end,
}

-- ------------------------------------------------------------ helpers

--- Repeatable list flags: each value may be a comma list; items trimmed,
--- blanks dropped. nil when the flag was never given.
local function flat_list(values)
  if values == nil then
    return nil
  end
  local out = {}
  for _, v in ipairs(values) do
    local items = sys.comma_list(v)
    table.move(items, 1, #items, #out + 1, out)
  end
  return out
end

-- The channel, mapped to the task store's errors (docs/format.md 3.1).
local OPEN = {
  invalid = { "TASK_INVALID_CHANNEL", 2 },
  missing = function(root, name)
    return "channel does not contain _meta.json: " .. ac.join_path(root.path, name), "TASK_CHANNEL_NOT_FOUND", 2
  end,
  exit = 2,
}

local function open_channel(args, ctx)
  return open.channel(args, ctx, OPEN)
end

local function ljust(s, width)
  local n = py.ulen(s)
  return n >= width and s or s .. string.rep(" ", width - n)
end

local function dash(s)
  if s == nil or s == "" then
    return "-"
  end
  return s
end

local function joined(list, sep)
  return dash(list and table.concat(list, sep) or "")
end

-- ------------------------------------------------------------ commands

local function cmd_list(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local list, msg, code, exit = ch:tasks()
  if not list then
    return ctx.fail(msg, code, exit)
  end
  if args.json then
    return require("agentchat.commands.queue").list_json(list, ctx)
  end
  local rows = { { "ID", "STATUS", "OWNER", "DEPENDS_ON", "TITLE" } }
  for _, t in ipairs(list) do
    rows[#rows + 1] = { t.id, t.status, dash(t.owner), joined(t.depends_on, ","), t.title }
  end
  local width = { 0, 0, 0, 0 }
  for _, r in ipairs(rows) do
    for i = 1, 4 do
      width[i] = math.max(width[i], py.ulen(r[i]))
    end
  end
  local out = {}
  for _, r in ipairs(rows) do
    out[#out + 1] = ljust(r[1], width[1]) .. "  " .. ljust(r[2], width[2]) .. "  "
      .. ljust(r[3], width[3]) .. "  " .. ljust(r[4], width[4]) .. "  " .. r[5] .. "\n"
  end
  if #list == 0 then
    out[#out + 1] = "(no tasks)\n"
  end
  ctx.out(table.concat(out))
  return 0
end

local function cmd_show(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local t, blocking, code, exit = ch:task(args.task_id)
  if not t then
    return ctx.fail(blocking, code, exit)
  end
  ctx.out(table.concat({
    "id: " .. t.id,
    "channel: " .. t.channel,
    "title: " .. t.title,
    "status: " .. t.status,
    "owner: " .. dash(t.owner),
    "created_by: " .. dash(t.created_by),
    "depends_on: " .. joined(t.depends_on, ","),
    "dependencies: " .. (blocking == "" and "ready" or "blocked (" .. blocking .. ")"),
    "files_hint: " .. joined(t.files_hint, ","),
    "acceptance: " .. joined(t.acceptance, "; "),
    "lease_expires_at: " .. dash(t.lease_expires_at),
    "branch: " .. dash(t.branch),
    "updated_at: " .. dash(t.updated_at),
  }, "\n") .. "\n")
  if t.generation then
    -- the lease's fencing generation (a store that keeps one: docs/etcd.md)
    ctx.out("generation: " .. t.generation .. "\n")
  end
  local caps = ac.task_capabilities(t)
  if #caps > 0 then
    -- Only for a queued task, so every other record shows as the Python tool shows it.
    ctx.out("for_capability: " .. table.concat(caps, ",") .. "\n")
  end
  return 0
end

local function cmd_create(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local t, msg, code, exit = ch:task_create{
    id = args.task_id, created_by = args.created_by, title = args.title, owner = args.owner,
    depends_on = flat_list(args.depends_on), files_hint = flat_list(args.files_hint),
    acceptance = flat_list(args.acceptance), branch = args.branch,
    for_capability = flat_list(args.for_capability),
  }
  if not t then
    return ctx.fail(msg, code, exit)
  end
  ctx.out("created task " .. t.id .. " [" .. t.status .. "]\n")
  return 0
end

-- LEASE_MUTATION_REQUIRED says which command does what was refused: the
-- holder of a lease changes its task through the lease (done, release);
-- to block, reassign or cancel it, the lease is released first. `op` is
-- the subcommand that was refused.
local function lease_hint(msg, code, args, op)
  if code ~= "LEASE_MUTATION_REQUIRED" then
    return msg
  end
  local function cmd(verb)
    return string.format("agent-chat task %s %s %s --as %s", verb, args.channel, args.task_id, args.as)
  end
  if op == "update" and args.status == "done" then
    return msg .. "; use: " .. cmd("done")
  elseif op == "update" and args.status == "open" then
    return msg .. "; use: " .. cmd("release")
  end
  local next_step = op == "block" and "block it" or
    ((args.owner or args.clear_owner) and not args.status) and "the new owner claims it" or "update it"
  return msg .. "; release the lease first (" .. cmd("release") .. "), then " .. next_step
end

local function cmd_update(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local t, msg, code, exit = ch:task_update(args.task_id, {
    as = args.as, title = args.title, owner = args.owner, clear_owner = args.clear_owner,
    depends_on = flat_list(args.depends_on), files_hint = flat_list(args.files_hint),
    acceptance = flat_list(args.acceptance), branch = args.branch,
    clear_branch = args.clear_branch, status = args.status,
  })
  if not t then
    return ctx.fail(lease_hint(msg, code, args, "update"), code, exit)
  end
  ctx.out("updated task " .. t.id .. " [" .. t.status .. "]\n")
  return 0
end

-- claim, renew, recover, done, block, release: one lease operation each.
local LEASE_VERB = { claim = "claimed", renew = "renewed", recover = "recovered", done = "done",
                     block = "blocked", release = "released" }

local function cmd_lease(op)
  return function(args, ctx)
    local ch <close>, rc = open_channel(args, ctx)
    if not ch then
      return rc
    end
    local t, msg, code, exit = ch[op](ch, args.task_id, { as = args.as, lease = args.lease_seconds,
                                                          reason = args.reason,
                                                          generation = args.generation })
    if not t then
      return ctx.fail(lease_hint(msg, code, args, op), code, exit)
    end
    ctx.out(LEASE_VERB[op] .. " task " .. t.id .. " [" .. t.status .. "]\n")
    return 0
  end
end

-- `task next` (agentchat.commands.queue): the channel opened as the
-- task commands open it, the capabilities as their lists are given.
local function cmd_next(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  return require("agentchat.commands.queue").next(ch, args, ctx, flat_list(args.capability))
end

local function cmd_recover_pending(args, ctx)
  local ch <close>, rc = open_channel(args, ctx)
  if not ch then
    return rc
  end
  local ok, msg, code, exit = ch:recover_pending_lease{ as = args.as, resolve = args.resolve_publication }
  if not ok then
    return ctx.fail(msg, code, exit)
  end
  ctx.out("recovered pending lease transaction in " .. args.channel .. "\n")
  return 0
end

-- ------------------------------------------------------------ grammar

local function channel_arg(p)
  p:positional{ "channel", help = "channel name" }
end

local function task_arg(p)
  p:positional{ "task_id", help = "task id: letters, digits, '.', '_' or '-'" }
end

local function actor(p)
  p:option{ "--as", "--from", dest = "as", required = true, help = "acting agent" }
end

local function lease_flags(p)
  p:option{ "--lease-seconds", "--lease", "--ttl", dest = "lease_seconds", type = "float",
            default = 300.0, help = "lease duration in seconds (default: 300)" }
end

-- The holder's fencing token (docs/etcd.md): refused unless the lease is
-- still that one.
local function generation_flag(p)
  p:option{ "--generation", type = "int", metavar = "N",
            help = "refuse (LEASE_FENCED) unless the lease still has this generation "
              .. "(task show prints it on an etcd store)" }
end

local function list_flags(p)
  p:option{ "--depends-on", action = "append", help = "dependency ids (repeatable, comma lists allowed)" }
  p:option{ "--files-hint", action = "append", help = "workspace paths (repeatable, comma lists allowed)" }
  p:option{ "--acceptance", action = "append", help = "acceptance criteria (repeatable, comma lists allowed)" }
end

local build_task

function M.register(sub)
  sub:parser("task", { description = "Task board with dependencies and expiring leases.", tag = TAG,
    build = function(task) build_task(task) end })
end

-- cli.parse's shortcut for the lease commands' usual line, `task OP CH ID
-- --as A`: what the parser below returns for it (lease_seconds where OP
-- takes one); nil for any other line, which the parser then reads. An
-- agent runs these all day; the parser is the largest module to load.
local DIRECT_LEASE = { claim = 300.0, renew = 300.0, done = false, release = false, block = false }

function M.direct(_, rest)
  local op, lease = rest[1], DIRECT_LEASE[rest[1]]
  if #rest ~= 5 or lease == nil or rest[4] ~= "--as" then
    return nil
  end
  for _, v in ipairs({ rest[2], rest[3], rest[5] }) do
    if v == "" or v:sub(1, 1) == "-" then
      return nil
    end
  end
  return { task_command = op, channel = rest[2], task_id = rest[3], as = rest[5],
           lease_seconds = lease or nil, handler = cmd_lease(op) }
end

local HANDLERS = { create = cmd_create, list = cmd_list, show = cmd_show, update = cmd_update,
                   ["recover-pending"] = cmd_recover_pending, next = cmd_next }   -- the others: cmd_lease

local HELP = {
  create = "create a task", list = "list tasks", show = "show one task",
  update = "change fields of a task", claim = "take a task's lease",
  renew = "extend your lease", recover = "take over an expired lease (needs --reason)",
  ["recover-pending"] = "resolve a crashed lease mutation", done = "finish a task",
  block = "mark a task blocked", release = "give a task back",
  next = "claim the oldest ready task needing one of your capabilities",
}

-- The subcommands are declared lazily: only the one named is built.
function build_task(task)
  local ts = task:subparsers{ dest = "task_command", metavar = "COMMAND", required = true }
  for _, name in ipairs(SUBCOMMANDS) do
    -- `next` is ours: unlisted, so an invalid subcommand still lists the
    -- Python tool's eleven (its golden error line).
    ts:lazy(name, { help = HELP[name], tag = TAG, unlisted = name == "next", build = function(p)
      channel_arg(p)
      if name ~= "list" and name ~= "recover-pending" and name ~= "next" then
        task_arg(p)
      end
      if name == "create" then
        p:option{ "--from", "--created-by", dest = "created_by", required = true, help = "creator" }
        p:option{ "--title", required = true, help = "task title (may be empty)" }
        p:option{ "--owner", help = "preassigned owner ('' for none)" }
        list_flags(p)
        p:option{ "--branch", help = "git branch (must not be empty)" }
        -- abbrev = false: `--f` must stay ambiguous between --from and --files-hint only
        p:option{ "--for-capability", dest = "for_capability", action = "append", abbrev = false,
                  help = "only an agent with this capability takes it with 'task next' (repeatable)" }
      elseif name == "update" then
        actor(p)
        p:option{ "--title", help = "new title" }
        p:option{ "--owner", help = "new owner" }
        p:option{ "--clear-owner", action = "store_true", help = "remove the owner" }
        list_flags(p)
        p:option{ "--branch", help = "new branch" }
        p:option{ "--clear-branch", action = "store_true", help = "remove the branch" }
        p:option{ "--status", help = "open, in_progress, blocked, done or cancelled" }
      elseif name == "claim" or name == "renew" then
        actor(p)
        lease_flags(p)
        if name == "renew" then
          generation_flag(p)
        end
      elseif name == "recover" then
        actor(p)
        p:option{ "--reason", required = true, help = "why the lease is taken over" }
        lease_flags(p)
      elseif name == "next" then
        actor(p)
        p:option{ "--capability", action = "append",
                  help = "a capability of yours (repeatable, comma lists allowed; default: the "
                    .. "primitives of your latest capability event)" }
        lease_flags(p)
        p:option{ "--wait", type = "float", default = 0.0,
                  help = "seconds to wait for a ready task (default: 0, look once); exit 3 when none" }
      elseif name == "list" then
        p:option{ "--json", action = "store_true", help = "the records as a JSON array" }
      elseif name == "recover-pending" then
        actor(p)
        p:option{ "--resolve-publication", choices = { "rollback", "published" },
                  help = "how to resolve an applied transaction" }
      elseif name ~= "list" and name ~= "show" then
        actor(p)
        if name == "done" or name == "release" then
          generation_flag(p)
        end
      end
      p:set_defaults{ handler = HANDLERS[name] or cmd_lease(name) }
    end })
  end
end

return M
