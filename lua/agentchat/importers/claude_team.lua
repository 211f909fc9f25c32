-- agentchat.importers.claude_team: a Claude Code agent team
-- (docs/claude-teams.md), `import claude-team DIR|TEAM`.
--
--   <home>/teams/<team>/config.json             the roster
--   <home>/teams/<team>/inboxes/<name>.json     a JSON array: what <name> received
--   <home>/tasks/<team or session id>/<n>.json  one task per file
--
-- Each inbox entry becomes one message from `from` to the inbox's owner at
-- its own time (agentchat.claude.record: protocol messages become typed
-- requests and responses, an idle_notification a status event); a malformed
-- entry is a warning with its file and index ("inboxes/x.json[3]") and is
-- skipped. Task files become tasks of the board (importer.apply_tasks).
-- Nothing below the team folder or the tasks folder is followed through a
-- symlink.
local claude = require "agentchat.claude"
local importer = require "agentchat.importer"

local C = {}

-- locate() checks the folder itself (a team name is not a path).
C.locates = true

-- The tasks folder of the team, relative to home: tasks/<team>, else, for
-- an implicit team session-<8 hex>, tasks/<lead session id> when that id
-- starts with those digits. nil when there is none.
local function tasks_folder(where, roster)
  if not where.home then
    return nil
  end
  local kinds = importer.entries(where.home, "tasks")
  if not kinds then
    return nil
  end
  for _, name in ipairs({ where.name, roster.name }) do
    if kinds[name] == "dir" then
      return "tasks/" .. name
    elseif kinds[name] then
      return importer.expect(kinds, name, "dir", "tasks/" .. name)
    end
  end
  local hex = where.name:match("^session%-(%x%x%x%x%x%x%x%x)$")
  local session = roster.lead_session
  if hex and session and session:sub(1, 8):lower() == hex:lower() and kinds[session] then
    local ok, msg, code, exit = importer.expect(kinds, session, "dir", "tasks/" .. session)
    if not ok then
      return nil, msg, code, exit
    end
    return "tasks/" .. session
  end
  return nil
end

-- Read the task files of home/sub into plan.tasks (warnings for the
-- malformed ones, nothing for the per-teammate trackers of
-- metadata._internal).
local function read_tasks(plan, home, sub)
  local files, msg, code, exit = importer.files(home, sub, "json")
  if not files then
    return nil, msg, code, exit
  end
  local ok
  ok, msg, code, exit = importer.each_json_file(plan, home, files, "object", function(f, obj)
    local task, problem = claude.task(obj, f.stem)
    if not task then
      importer.warn_task(plan, f.file, problem)
    elseif not task.internal then
      task.file = f.file
      plan.tasks[#plan.tasks + 1] = task
    end
  end, function(f, problem)
    importer.warn_task(plan, f.file, problem)
  end)
  if not ok then
    return nil, msg, code, exit
  end
  -- Numeric ids in number order, then the others by name.
  table.sort(plan.tasks, function(a, b)
    local x, y = tonumber(a.id), tonumber(b.id)
    if x and y and x ~= y then
      return x < y
    elseif (x ~= nil) ~= (y ~= nil) then
      return x ~= nil
    end
    return a.id < b.id
  end)
  importer.order_tasks(plan)
  return true
end

--- Read a team (a folder or a team name) into a plan (importer.load).
function C.load(arg)
  local where, msg, code, exit = claude.locate(arg)
  if not where then
    return nil, msg, code, exit
  end
  local dir = where.dir
  local kinds
  kinds, msg, code, exit = importer.open_folder(dir, "config.json", "Claude Code team folder",
                                                { { "config.json", "file" }, { claude.INBOXES, "dir" } })
  if not kinds then
    return nil, msg, code, exit
  end
  local ok
  local plan = importer.new_plan("claude-team", dir)
  plan.unit = "entries"
  local roster
  roster, msg, code, exit = claude.roster(dir, function(where_, problem)
    importer.note(plan, where_, nil, problem)
  end)
  if not roster then
    return nil, msg, code, exit
  end
  plan.roster = roster
  local names = importer.roster_names(roster)
  plan.init = { members = names, topic = "claude team " .. roster.name }
  -- Entries the bridge wrote from channel messages are the channel's own.
  plan.channel_keys = function(m)
    return claude.delivered_keys(m, roster.name, names)
  end
  if kinds[claude.INBOXES] then
    local inboxes
    inboxes, msg, code, exit = importer.sized_inboxes(dir, claude.INBOXES, "json")
    if not inboxes then
      return nil, msg, code, exit
    end
    ok, msg, code, exit = importer.each_json_file(plan, dir, inboxes, "array", function(inbox, list)
      local repeats = {}
      for i, entry in ipairs(list) do
        local rec, problem = claude.record(entry, { team = roster.name, owner = inbox.owner })
        if not rec then
          importer.warn(plan, inbox.file, nil, problem, i - 1)
        else
          if rec.note then
            importer.note(plan, inbox.file, nil, rec.note, i - 1)
          end
          repeats[rec.hash] = (repeats[rec.hash] or 0) + 1
          rec.key = rec.hash .. (repeats[rec.hash] > 1 and ("-" .. repeats[rec.hash]) or "")
          importer.add(plan, rec)
        end
      end
    end, function(inbox, problem)
      importer.warn(plan, inbox.file, nil, problem)
    end)
    if not ok then
      return nil, msg, code, exit
    end
  end
  local sub
  sub, msg, code, exit = tasks_folder(where, roster)
  if sub == nil and msg then
    return nil, msg, code, exit
  end
  if sub then
    plan.tasks_dir, plan.tasks = sub, {}
    ok, msg, code, exit = read_tasks(plan, where.home, sub)
    if not ok then
      return nil, msg, code, exit
    end
  end
  plan.task_actor = roster.lead or "team-lead"
  return plan
end

return C
