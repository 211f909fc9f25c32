-- agentchat.api.post: ch:post, writing a message (docs/lua-api.md). A family
-- of its own (see init.lua, M._families): `post` loads only this.
local errors = require "agentchat.errors"
local sys = require "agentchat.sys"
local py = require("agentchat.lazy")("agentchat.pycompat")

local A = {}

local fail = errors.fail

function A.install(Channel, M)
  local check_text = M._check_text

  -- An explicit `ts` (imports keep the original time, docs/import.md): an
  -- ISO-8601 time with a UTC offset, on one line, as readers parse it back.
  local function check_ts(ts)
    if type(ts) ~= "string" then
      error("post: ts must be a string", 3)
    end
    if ts:find("%c") or sys.strip(ts) ~= ts or sys.iso_has_offset(ts) ~= true then
      return fail("MESSAGE_INVALID_FIELD", "ts must be an ISO-8601 time with a UTC offset: " .. py.repr_str(ts))
    end
    return true
  end

  --- Post a message. t = {from, title, body, to="all", reply=0, status="discussion",
  --- type=, request_id=, role=, fields={key=value}, ts=} (type, request_id, role and
  --- fields are extra frontmatter after title, docs/protocols.md; ts replaces the
  --- current time, docs/import.md). Returns {seq, file, channel}.
  function Channel:post(t)
    if type(t) ~= "table" then
      error("post expects a table", 2)
    end
    local fields = { "from", "title", "body" }
    for _, k in ipairs(fields) do
      if t[k] == nil then
        error("post: field '" .. k .. "' is required", 2)
      end
    end
    for _, k in ipairs({ "from", "title", "body", "to", "status" }) do
      if t[k] ~= nil then
        local ok, msg, code = check_text(t[k], k)
        if not ok then
          return nil, msg, code
        end
      end
    end
    local reply = t.reply or t.reply_to or 0
    if math.type(reply) ~= "integer" and not (type(reply) == "string" and reply:match("^%-?%d+$")) then
      error("post: reply must be an integer (or its decimal text)", 2)
    end
    local to = t.to
    if to == nil or to == "" then
      to = "all"
    end
    if t.ts ~= nil then
      local ok, msg, code, exit = check_ts(t.ts)
      if not ok then
        return nil, msg, code, exit
      end
    end
    local extra
    if t.type ~= nil or t.request_id ~= nil or t.role ~= nil or t.fields ~= nil then
      local msg, code, exit
      extra, msg, code, exit = require("agentchat.protocols").extra_fields(t)
      if not extra then
        return nil, msg, code, exit
      end
    end
    local seq, file, code, exit = self._h:post{
      from = t.from, to = to, title = t.title, status = t.status or "discussion",
      body = t.body, reply_to = reply, extra = extra, ts = t.ts,
    }
    if not seq then
      return nil, file, code, exit
    end
    -- A third value is a warning: visible, but not known to be durable.
    return { seq = seq, file = file, channel = self.name, warning = code }
  end
end

return A
