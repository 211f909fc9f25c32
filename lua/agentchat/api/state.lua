-- agentchat.api.state: the state-summary methods of agentchat.Channel.
--
--   ch:state{strict=false}                 -- the data table (`state --json`)
--   ch:render_state{template=nil, strict=false, budget=nil}
--                                          -- the Markdown (built-in template,
--                                             or template = Lua source text
--                                             run in the sandbox)
--   ch:compact{as=nil, audit=true, template=nil, strict=false}
--                                          -- write state.md (+ state.compacted)
--
-- Failures return nil, message, code (STATE_*, TEMPLATE_*).
local A = {}

local function state()
  return require "agentchat.state"
end

local function render(data, opts)
  if opts.template == nil then
    return state().render(data)
  end
  if type(opts.template) ~= "string" then
    error("render_state: template must be Lua source text", 3)
  end
  local text, msg, code = require("agentchat.sandbox").render(opts.template, opts.name or "template", data,
    { budget = opts.budget })
  if not text then
    return nil, msg, code, 1
  end
  return text
end

function A.install(Channel, _)
  function Channel:state(opts)
    return state().gather(self, { strict = type(opts) == "table" and opts.strict })
  end

  local function options(opts, what)
    if opts ~= nil and type(opts) ~= "table" then
      error(what .. " expects an options table", 3)
    end
    return opts or {}
  end

  function Channel:render_state(opts)
    opts = options(opts, "render_state")
    local data, msg, code, exit = state().gather(self, { strict = opts.strict })
    if not data then
      return nil, msg, code, exit
    end
    return render(data, opts)
  end

  function Channel:compact(opts)
    opts = options(opts, "compact")
    local data, msg, code, exit = state().gather(self, { strict = opts.strict })
    if not data then
      return nil, msg, code, exit
    end
    local text
    text, msg, code, exit = render(data, opts)
    if not text then
      return nil, msg, code, exit
    end
    local ok
    ok, msg, code, exit = state().write(self, data, text, { actor = opts.as, audit = opts.audit })
    if not ok then
      return nil, msg, code, exit
    end
    return data
  end
end

return A
