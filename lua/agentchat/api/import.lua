-- agentchat.api.import: the importer methods of agentchat.Channel
-- (docs/import.md; the logic is agentchat.importer and
-- agentchat.importers.*).
--
--   ch:import_team(dir [, {dry_run=false, strict=false}])  -- report
--   ch:import_bus(dir [, {dry_run=false, strict=false}])   -- report
--   ch:import_claude_team(dir_or_team [, {dry_run=false, strict=false}])
--                                                          -- report
--
-- A report is {imported, present, skipped, warnings = {{file, line,
-- message}}, seqs, dry_run}.
local A = {}

function A.install(Channel, _)
  local function run(ch, kind, dir, opts)
    if type(dir) ~= "string" then
      error("import_" .. kind:gsub("-", "_") .. " expects a folder path", 3)
    end
    if opts ~= nil and type(opts) ~= "table" then
      error("import_" .. kind:gsub("-", "_") .. " expects nil or {dry_run=, strict=}", 3)
    end
    local importer = require "agentchat.importer"
    local plan, msg, code, exit = importer.load(kind, dir)
    if not plan then
      return nil, msg, code, exit
    end
    return importer.apply(ch, plan, opts)
  end

  function Channel:import_team(dir, opts)
    return run(self, "team", dir, opts)
  end

  function Channel:import_bus(dir, opts)
    return run(self, "bus", dir, opts)
  end

  function Channel:import_claude_team(dir, opts)
    return run(self, "claude-team", dir, opts)
  end
end

return A
