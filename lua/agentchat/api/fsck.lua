-- agentchat.api.fsck: root:fsck, the folder checker behind `agent-chat
-- fsck` (docs/fsck.md). The private C module agentchat._fsck reads and checks one
-- channel's files (and repairs the safe things); this file picks the
-- channels and sorts the findings into what is left and what was repaired.
--
--   local report = assert(root:fsck{channels = {"dev"}, repair = false})
--   report.channels   -- names checked, in order
--   report.findings   -- {channel, code, class, path, message}, not repaired
--   report.repaired   -- the same, plus `repaired` (what was done)
--   report.counts     -- {corrupt=, pending=, repairable=, busy=} of findings
local A = {}

--- Install root:fsck into the Root metatable.
function A.install(Root)
  --- Check the channels of opts.channels (default: every channel of the
  --- root, sorted); opts.repair fixes the repairable findings.
  function Root:fsck(opts)
    if opts ~= nil and type(opts) ~= "table" then
      error("fsck expects an options table", 2)
    end
    opts = opts or {}
    if opts.channels ~= nil and type(opts.channels) ~= "table" then
      error("fsck: channels must be a list of names", 2)
    end
    if opts.repair ~= nil and type(opts.repair) ~= "boolean" then
      error("fsck: repair must be a boolean", 2)
    end
    local fsck = require "agentchat._fsck"
    local names = opts.channels
    local msg, code, exit
    if names == nil then
      names, msg, code, exit = self._store:channels()
      if not names then
        return nil, msg, code, exit
      end
      -- Directories whose _meta.json is a symlink or a FIFO: no command can
      -- open them, so the store does not list them; fsck reports them.
      local hidden
      hidden, msg, code, exit = fsck.hidden(self._store)
      if not hidden then
        return nil, msg, code, exit
      end
      if #hidden > 0 then
        table.move(hidden, 1, #hidden, #names + 1, names)
        table.sort(names)
      end
    end
    local report = { channels = {}, findings = {}, repaired = {},
                     counts = { corrupt = 0, pending = 0, repairable = 0, busy = 0 } }
    local seen = {}
    for _, name in ipairs(names) do
      if type(name) ~= "string" then
        error("fsck: channels must be a list of names", 2)
      end
      if not seen[name] then
        seen[name] = true
        local ch, list
        ch, msg, code, exit = self:channel(name)
        if ch then
          list, msg, code, exit = fsck.channel(ch:handle(), { repair = opts.repair or false })
          ch:close()
        elseif code == "CHANNEL_NOT_FOUND" then
          list = fsck.directory(self._store, name, { repair = opts.repair or false })
        end
        if not list then
          return nil, msg, code, exit
        end
        report.channels[#report.channels + 1] = name
        for _, f in ipairs(list) do
          f.channel = name
          if f.repaired then
            report.repaired[#report.repaired + 1] = f
          else
            report.findings[#report.findings + 1] = f
            report.counts[f.class] = report.counts[f.class] + 1
          end
        end
      end
    end
    return report
  end
end

return A
