-- agentchat.api.copy: root:export and root:import_folder, channels copied
-- between this root's store and a folder (docs/etcd.md "Migration"; the C
-- copy is agentchat.store's copy, include/agentchat/copy.h).
local store = require "agentchat.store"

local A = {}
local AC     -- agentchat (its normalize_path), set by install

-- Copy `names` (nil: every channel of src) from store src to store dst
-- (agentchat.store's copy, include/agentchat/copy.h): a list of reports
-- {channel, messages, records, acks, cursors, skipped}, or nil, message,
-- code, exit at the first failure (the reports so far as a fifth value).
local function copy_channels(src, dst, names)
  if names == nil then
    local all, msg, code, exit = src:channels()
    if not all then
      return nil, msg, code, exit
    end
    names = all
  end
  local reports = {}
  for _, name in ipairs(names) do
    if type(name) ~= "string" then
      error("channels must be a list of names", 3)
    end
    local rep, msg, code, exit = store.copy(src, dst, name)
    if not rep then
      return nil, msg, code, exit, reports
    end
    rep.channel = name
    reports[#reports + 1] = rep
  end
  return reports
end

-- Copy between this root's store and the folder (or store) `dir`, each
-- way: the other store opened, the copy, the other store closed. `into`:
-- the root's store is the target (import).
local function copy_with(self, dir, opts, what, into)
  if type(dir) ~= "string" then
    error(what .. " expects a folder path", 3)
  end
  local other, msg, code, exit = store.open(store.is_etcd(dir) and dir or AC.normalize_path(dir))
  if not other then
    return nil, msg, code, exit
  end
  local names = (opts or {}).channels
  if into and names == nil then
    names, msg, code, exit = other:channels()
    if names and #names == 0 then
      names, msg, code = nil, "no channel under " .. dir .. " (a folder root holds <channel>/_meta.json)",
        "IMPORT_INVALID_FOLDER"
    end
  end
  local reports, partial
  if names ~= nil or not into then
    local src, dst = self._store, other
    if into then
      src, dst = other, self._store
    end
    reports, msg, code, exit, partial = copy_channels(src, dst, names)
  end
  other:close()
  return reports, msg, code, exit, partial
end

--- Install root:export and root:import_folder into M.Root.
function A.install(_, M)
  AC = M
  local Root = M.Root
  --- Copy channels of this root's store to the folder `dir`, in the folder
  --- format (docs/etcd.md "Migration"); opts.channels: names (default: all).
  --- A channel the folder has already is refused (CHANNEL_EXISTS).
  function Root:export(dir, opts)
    return copy_with(self, dir, opts, "export", false)
  end

  --- Copy channels of the folder root `dir` into this root's store (the
  --- reverse of export); opts.channels: names (default: all of the folder).
  --- IMPORT_INVALID_FOLDER when the folder holds no channel.
  function Root:import_folder(dir, opts)
    return copy_with(self, dir, opts, "import_folder", true)
  end
end

return A
