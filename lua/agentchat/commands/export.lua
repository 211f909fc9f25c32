-- agentchat.commands.export: `agent-chat export --to DIR [CHANNEL...]`, the
-- root's channels (an etcd store's, or a folder's) written to DIR in the
-- folder format (docs/etcd.md "Migration"; include/agentchat/copy.h says
-- what is copied). One line per channel; a channel DIR has already is
-- refused (CHANNEL_EXISTS, exit 1).
--
-- `agent-chat trim CHANNEL --through N --archive DIR [--dry-run]`: archive,
-- then trim (docs/etcd.md "Retention"): the channel is exported to DIR as
-- above, and only once that succeeded with nothing skipped
-- (TRIM_ARCHIVE_INCOMPLETE) are its messages 1..N and their acks removed
-- (ch:trim). The newest message always stays (TRIM_KEEPS_NEWEST), and a
-- DIR that holds the channel already is refused (CHANNEL_EXISTS), both
-- checked before anything is written.
local ac = require "agentchat"
local open = require "agentchat.commands.open"
local store = require "agentchat.store"

local M = {}

--- "12 messages, 3 records, 2 acks, 4 cursors[, 1 skipped]"
function M.counts(rep)
  local s = string.format("%d messages, %d records, %d acks, %d cursors", rep.messages, rep.records,
    rep.acks, rep.cursors)
  if rep.skipped > 0 then
    s = s .. string.format(", %d skipped", rep.skipped)
  end
  return s
end

--- Print the reports, then the failure if any.
function M.report(ctx, reports, line, msg, code, exit, partial)
  for _, rep in ipairs(reports or partial or {}) do
    ctx.out(line(rep) .. "\n")
  end
  if not reports then
    return ctx.fail(msg, code, exit)
  end
  return 0
end

local function cmd_export(args, ctx)
  local root, rc = open.root(args, ctx)
  if not root then
    return rc
  end
  local names = #args.channels > 0 and args.channels or nil
  local reports, msg, code, exit, partial = root:export(args.to, { channels = names })
  root:close()
  local to = ac.normalize_path(args.to)
  return M.report(ctx, reports, function(rep)
    return string.format("exported '%s' to %s: %s", rep.channel, ac.join_path(to, rep.channel),
      M.counts(rep))
  end, msg, code, exit, partial)
end

local function cmd_trim(args, ctx)
  local ch <close>, root = open.channel(args, ctx)
  if not ch then
    return root
  end
  local check, msg, code, exit = ch:trim(args.through, { dry_run = true })
  if not check then
    return ctx.fail(msg, code, exit)
  end
  local archive = ac.join_path(ac.normalize_path(args.archive), args.channel)
  -- An archive folder holds one copy of a channel: a second trim (or the
  -- rerun of one that stopped) archives to a new folder.
  if not store.is_etcd(args.archive) and ac._file_present(ac.join_path(archive, "_meta.json")) then
    return ctx.fail(string.format("the archive %s already holds channel '%s': archive to a new folder "
      .. "(nothing was removed)", ac.normalize_path(args.archive), args.channel), "CHANNEL_EXISTS", 1)
  end
  if args.dry_run then
    ctx.out(string.format("would archive '%s' to %s, then remove %d messages (#1 to #%d); "
      .. "#%d and later stay\n", args.channel, archive, check.messages, args.through, args.through + 1))
    return 0
  end
  local reports, partial
  reports, msg, code, exit, partial = root:export(args.archive, { channels = { args.channel } })
  local erc = M.report(ctx, reports, function(rep)
    return string.format("exported '%s' to %s: %s", rep.channel, archive, M.counts(rep))
  end, msg, code, exit, partial)
  if erc ~= 0 then
    return erc
  end
  -- Export skips what it cannot read or place (a message over 16 MiB, an
  -- unreadable file, a second file of one seq): trim would remove it
  -- unarchived, so nothing goes.
  if reports[1].skipped > 0 then
    return ctx.fail(string.format("the archive of '%s' lacks %d files export skipped (unreadable, over "
      .. "16 MiB, or a second file of one seq): nothing was removed", args.channel, reports[1].skipped),
      "TRIM_ARCHIVE_INCOMPLETE", 1)
  end
  local done
  done, msg, code, exit = ch:trim(args.through)
  if not done then
    return ctx.fail(msg, code, exit)
  end
  ctx.out(string.format("trimmed '%s' through #%d: %d messages, %d acks removed; #%d and later stay\n",
    args.channel, args.through, done.messages, done.acks, args.through + 1))
  return 0
end

function M.register(sub)
  sub:parser("export", {
    description = "Copy channels (default: all) to a folder in the folder format: messages, tasks, "
      .. "leases, path locks, acks and cursors, byte for byte (docs/etcd.md).",
    build = function(p)
      p:option{ "--to", required = true, metavar = "DIR", help = "the folder root to write" }
      p:positional{ "channels", nargs = "*", metavar = "CHANNEL", help = "channels to export (default: all)" }
      p:set_defaults{ handler = cmd_export }
    end })
  sub:parser("trim", {
    description = "Archive a channel to a folder (as export does), then remove its messages up to a seq "
      .. "and their acks. The seq counter stays, so no seq is reused; the newest message always stays "
      .. "(docs/etcd.md).",
    build = function(p)
      p:positional{ "channel", help = "channel name" }
      p:option{ "--through", required = true, type = open.int_type(1, "positive int"),
                type_name = "positive int", metavar = "N", help = "remove the messages #1 to #N" }
      p:option{ "--archive", required = true, metavar = "DIR",
                help = "the folder root to export the channel to first (DIR/CHANNEL must not exist)" }
      p:option{ "--dry-run", action = "store_true", help = "say what would be archived and removed; change nothing" }
      p:set_defaults{ handler = cmd_trim }
    end })
end

return M
