-- agentchat.lazy: a module loaded the first time one of its fields is read.
--
--   local py = require("agentchat.lazy")("agentchat.pycompat")
--   ...
--   py.ulen(s)      -- requires agentchat.pycompat now, the first time
--
-- Every command pays for each module it loads (undumping its bytecode is
-- most of a short command), so a module that only some paths need is
-- reached through one of these. The proxy reads through to the module once
-- it is loaded; pairs() iterates the module. Only for modules whose fields
-- are set when they load (the proxy stands for the module table, it is not
-- that table).
return function(name)
  return setmetatable({}, {
    __index = function(proxy, key)
      local mod = require(name)
      setmetatable(proxy, { __index = mod, __pairs = function()
        return next, mod, nil
      end })
      return mod[key]
    end,
    __pairs = function()
      return next, require(name), nil
    end,
  })
end
