-- agentchat.commands.import: `import team DIR --into CH`, `import bus DIR
-- --into CH` (docs/import.md), `import claude-team DIR|TEAM --into CH`
-- (docs/claude-teams.md) and `import folder DIR [CHANNEL...]` (a folder
-- root's channels into the root's store: docs/etcd.md).
--
-- The folder is read and checked completely before anything is written:
-- a missing, unreadable or malformed file, a folder whose every line is
-- malformed (or, with --strict, any malformed line) fails with nothing
-- created or posted. Only then is the channel
-- created if it is missing (members and topic from the team roster) and
-- the new messages posted. Warnings go to stderr, one per skipped line;
-- the summary line to stdout. Exit 0 even when lines were skipped (the
-- warnings and the summary say so); 1 for every failure.
local ac = require "agentchat"
local importer = require "agentchat.importer"
local open = require "agentchat.commands.open"

local M = {}

-- The channel to import into: the open channel, or false when it does not
-- exist yet (a bad name fails here, before the folder is read).
local function existing(root, name)
  local ch, msg, code, exit = root:channel(name)
  if not ch and code == "CHANNEL_NOT_FOUND" then
    return false
  end
  return ch, msg, code, exit
end

-- Create the missing channel with the plan's members and topic, announced
-- as `init` announces it.
local function create(root, name, plan, ctx)
  local ch, msg, code, exit = root:init(name, plan.init)
  if ch then
    local members = plan.init.members
    ctx.out(string.format("created channel '%s' at %s  members=%s\n", name,
      ac.join_path(root.path, name), #members > 0 and table.concat(members, ", ") or "(open)"))
  end
  return ch, msg, code, exit
end

-- Print the plan's warnings from the n-th on; returns how many there are.
local function warn(ctx, plan, n)
  for i = n, #plan.warnings do
    ctx.err("agent-chat: warning: " .. importer.where(plan.warnings[i]) .. "\n")
  end
  return #plan.warnings
end

-- Post the plan into ch and print the summary (and the warnings of the
-- posting itself: a task the board keeps as it is).
local function finish(ch, plan, args, ctx)
  local shown = #plan.warnings
  local report, msg, code, exit = importer.apply(ch, plan, {
    dry_run = args.dry_run,
    on_wait = function()
      ctx.err(string.format("agent-chat: waiting for another import into '%s' to finish\n", args.into))
    end,
  })
  warn(ctx, plan, shown + 1)
  if not report then
    return ctx.fail(msg, code, exit)
  end
  ctx.out(importer.summary(report, plan.kind == "bus"))
  return 0
end

local function run(kind, args, ctx)
  local root, rc = open.root(args, ctx)
  if not root then
    return rc
  end
  local found <close>, msg, code, exit = existing(root, args.into)
  if found == nil then
    return ctx.fail(msg, code, exit)
  end
  local plan
  plan, msg, code, exit = importer.load(kind, args.dir)
  if not plan then
    return ctx.fail(msg, code, exit)
  end
  warn(ctx, plan, 1)
  local ok
  ok, msg, code, exit = importer.strict_check(plan, args.strict)
  if not ok then
    return ctx.fail(msg, code, exit)
  end
  if found then
    return finish(found, plan, args, ctx)
  elseif args.dry_run then
    local nacks = 0
    for _, rec in ipairs(plan.records) do
      nacks = nacks + #rec.acks
    end
    ctx.out(importer.summary({ imported = #plan.records, present = 0, skipped = plan.skipped, dry_run = true,
                               acked = nacks, acks_present = 0, unit = plan.unit,
                               tasks_imported = plan.tasks and #plan.tasks, tasks_present = 0,
                               tasks_skipped = plan.tasks_skipped or 0 }, plan.kind == "bus"))
    return 0
  end
  local made, cmsg, ccode, cexit = create(root, args.into, plan, ctx)
  if not made and ccode == "CHANNEL_EXISTS" then
    -- Another import (or an init) created it since we looked: use it.
    made, cmsg, ccode, cexit = root:channel(args.into)
  end
  local _ <close> = made or nil
  if not made then
    return ctx.fail(cmsg, ccode, cexit)
  end
  return finish(made, plan, args, ctx)
end

local function options(p, what, metavar)
  p:positional{ "dir", metavar = metavar or "DIR", help = what }
  p:option{ "--into", required = true, metavar = "CH", help = "channel to import into (created if missing)" }
  p:option{ "--dry-run", action = "store_true",
            help = "read and check the folder, say what would be imported, write nothing" }
  p:option{ "--strict", action = "store_true", help = "import nothing when a line is malformed (exit 1)" }
end

-- `import folder DIR [CHANNEL...]`: a folder root's channels copied into
-- the root's store (an etcd store; docs/etcd.md "Migration").
local function run_folder(args, ctx)
  local root, rc = open.root(args, ctx)
  if not root then
    return rc
  end
  local names = #args.channels > 0 and args.channels or nil
  local reports, msg, code, exit, partial = root:import_folder(args.dir, { channels = names })
  local export = require "agentchat.commands.export"
  local dir = ac.normalize_path(args.dir)
  local n = export.report(ctx, reports, function(rep)
    return string.format("imported '%s' from %s into %s: %s", rep.channel, ac.join_path(dir, rep.channel),
      ac.join_path(root.path, rep.channel), export.counts(rep))
  end, msg, code, exit, partial)
  root:close()
  return n
end

function M.register(sub)
  sub:parser("import", {
    description = "Import another tool's mailbox folder into a channel, idempotently (docs/import.md).",
    build = function(ip)
      local is = ip:subparsers{ dest = "import_command", metavar = "FORMAT", required = true }
      is:parser("team", { help = "a team mailbox folder: config.json and inbox/<name>.jsonl", build = function(p)
        options(p, "the team folder")
        p:set_defaults{ handler = function(args, ctx)
          return run("team", args, ctx)
        end }
      end })
      is:parser("bus", { help = "a receipt-bus folder: ledger.jsonl and inbox/<agent>.jsonl", build = function(p)
        options(p, "the bus folder")
        p:set_defaults{ handler = function(args, ctx)
          return run("bus", args, ctx)
        end }
      end })
      is:parser("claude-team", { help = "a Claude Code agent team: config.json, inboxes/<name>.json and its "
          .. "task files (docs/claude-teams.md)", build = function(p)
        options(p, "the team folder (~/.claude/teams/<team>), or the team's name", "DIR|TEAM")
        p:set_defaults{ handler = function(args, ctx)
          return run("claude-team", args, ctx)
        end }
      end })
      is:parser("folder", { help = "an agent-chat folder root (what export writes): its channels, "
          .. "into the root's store", build = function(p)
        p:positional{ "dir", metavar = "DIR", help = "the folder root" }
        p:positional{ "channels", nargs = "*", metavar = "CHANNEL", help = "channels to import (default: all)" }
        p:set_defaults{ handler = run_folder }
      end })
    end })
end

return M
