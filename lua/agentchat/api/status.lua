-- agentchat.api.status: latest-wins status keys, methods of agentchat.Channel
-- (docs/status-keys.md; the rules are agentchat.statuskeys).
--
--   ch:status_set(key, value, {as=, ttl=})   -- entry {agent, key, value, ttl,
--                                             set_at, age, expired, seq}
--   ch:status_get([key] [, {agent=, now=}])   -- {entry, ...}: the current value
--                                             of each (agent, key), by agent, key
--   ch:status_watch{key=, agent=, timeout=, count=, interval=5, show=function(entry)}
--                                          -- the number of sets shown: blocks (no CPU)
--                                             on the channel's change notification and
--                                             calls show for each set posted from now on
--                                             (show returning false stops)
--
-- Failures return nil, message, code, exit (STATUS_* exit 2; a post's own).
local A = {}

function A.install(Channel, _)
  function Channel:status_set(key, value, opts)
    if type(opts) ~= "table" or type(opts.as) ~= "string" then
      error("status_set expects (key, value, {as = name, ttl = seconds})", 2)
    end
    return require("agentchat.statuskeys").post(self, { agent = opts.as, key = key, value = value,
                                                        ttl = opts.ttl })
  end

  function Channel:status_get(key, opts)
    if type(key) == "table" and opts == nil then
      key, opts = nil, key
    end
    if (key ~= nil and type(key) ~= "string") or (opts ~= nil and type(opts) ~= "table") then
      error("status_get expects ([key] [, {agent = name, now = seconds}])", 2)
    end
    opts = opts or {}
    local sk = require "agentchat.statuskeys"
    if key ~= nil then
      local ok, msg, code, exit = sk.check_key(key)
      if not ok then
        return nil, msg, code, exit
      end
    end
    return sk.read(self, { key = key, agent = opts.agent, now = opts.now })
  end

  function Channel:status_watch(opts)
    if type(opts) ~= "table" or type(opts.show) ~= "function" then
      error("status_watch expects {show = function(entry), key =, agent =, timeout =, count =, interval =}", 2)
    end
    local sk = require "agentchat.statuskeys"
    local sys = require "agentchat.sys"
    if opts.key ~= nil then
      local ok, msg, code, exit = sk.check_key(opts.key)
      if not ok then
        return nil, msg, code, exit
      end
    end
    -- The watch first, then the starting point: nothing set after it is missed.
    local w <close> = self._h:watch()
    local summary, msg, code, exit = self._h:summary()
    if not summary then
      return nil, msg, code, exit
    end
    local after, seen = summary.max_seq, 0
    local deadline = opts.timeout and (sys.monotonic() + math.max(0, opts.timeout)) or math.huge
    local interval = math.max(0.01, opts.interval or 5.0)
    while true do
      local list
      list, after, code, exit = sk.since(self, after)
      if not list then
        return nil, after, code, exit
      end
      for _, e in ipairs(list) do
        if (opts.key == nil or e.key == opts.key) and (opts.agent == nil or e.agent == opts.agent) then
          seen = seen + 1
          if opts.show(e) == false or (opts.count and seen >= opts.count) then
            return seen
          end
        end
      end
      local now = sys.monotonic()
      if now >= deadline then
        return seen
      end
      local ok
      ok, msg, code, exit = w:wait(math.min(interval, deadline - now))
      if ok == nil then
        return nil, msg, code, exit
      end
    end
  end
end

return A
