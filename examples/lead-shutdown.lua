-- examples/lead-shutdown.lua: a team lead that shuts its team down.
--
--   agent-chat --root ROOT run examples/lead-shutdown.lua CH [--as lead]
--       [--timeout 60] [--reason TEXT]
--
-- Spawns nothing: it runs the shutdown handshake of docs/protocols.md with
-- every teammate of channel CH (the members of its _meta.json, else
-- everyone the team view has seen), the lead itself left out. It posts one
-- shutdown_request per teammate, then waits (no CPU) for all the
-- responses at once, and prints one line per teammate:
--
--   bob: approved (#7) done with the parser
--   carol: rejected (#8) still running the tests
--   dave: timed out (request 3f2a...)
--   erin: already shut down
--
-- and a summary. Exit 0 when every teammate approved, 3 when one rejected,
-- 2 when one did not answer in time (the exit codes of `agent-chat
-- request`), 1 on errors. A teammate answers with
--
--   agent-chat respond CH --from bob --request ID --approve [--reason ...]
--
-- (or ch:respond from a watch script); ID is the request_id line of the
-- request it read.
local ac = require "agentchat"

local USAGE = "usage: agent-chat [--root ROOT] run examples/lead-shutdown.lua CH [--as NAME] "
  .. "[--timeout S] [--reason TEXT]"

local function die(msg, code)
  io.stderr:write("lead-shutdown: " .. msg .. "\n")
  os.exit(code or 1)
end

-- Arguments: CH, then options.
local opts = { as = "lead", timeout = 60, reason = "The work is done: please stop." }
local channel
local i = 1
while arg[i] do
  local a = arg[i]
  if a == "--as" or a == "--timeout" or a == "--reason" then
    local v = arg[i + 1] or die(a .. " needs a value\n" .. USAGE, 2)
    if a == "--timeout" then
      v = tonumber(v) or die("--timeout needs a number of seconds", 2)
    end
    opts[a:sub(3)] = v
    i = i + 2
  elseif a == "-h" or a == "--help" then
    print(USAGE)
    os.exit(0)
  elseif channel == nil and a:sub(1, 1) ~= "-" then
    channel = a
    i = i + 1
  else
    die("unexpected argument " .. a .. "\n" .. USAGE, 2)
  end
end
if not channel then
  die(USAGE, 2)
end

local root = assert(ac.open())
local ch, msg = root:channel(channel)
if not ch then
  die(msg)
end

-- The teammates: the channel's members, else everyone seen; never the lead.
local team
team, msg = ch:team()
if not team then
  die(msg)
end
local meta = assert(ch:meta())
local teammates, down = {}, {}
for _, m in ipairs(team.members) do
  if m.name ~= opts.as and (#meta.members == 0 or m.member) then
    if m.lifecycle == "shutdown" then
      down[#down + 1] = m.name
    else
      teammates[#teammates + 1] = m.name
    end
  end
end
if #teammates == 0 and #down == 0 then
  print("no teammates in '" .. channel .. "'")
  os.exit(0)
end

-- One request each, posted before any wait: a teammate may answer at
-- once, and its response is found however early it came.
local ids, by_name = {}, {}
for _, name in ipairs(teammates) do
  local req, err = ch:request{ from = opts.as, to = name, type = "shutdown_request", title = "shutdown",
                               body = opts.reason, wait = false }
  if not req then
    die("could not ask " .. name .. ": " .. err)
  end
  ids[#ids + 1] = req.request_id
  by_name[name] = req
end

local got = {}
if #ids > 0 then
  local err
  got, err = ch:await_responses{ as = opts.as, request_ids = ids, timeout = opts.timeout }
  if not got then
    die(err)
  end
end

local approved, rejected, timed_out = 0, 0, 0
for _, name in ipairs(teammates) do
  local req = by_name[name]
  local r = got[req.request_id]
  if not r then
    timed_out = timed_out + 1
    print(string.format("%s: timed out (request %s)", name, req.request_id))
  else
    if r.approved then
      approved = approved + 1
    else
      rejected = rejected + 1
    end
    print(string.format("%s: %s (#%d)%s", name, r.approved and "approved" or "rejected", r.seq,
      r.reason ~= "" and (" " .. r.reason:gsub("%s+", " ")) or ""))
  end
end
for _, name in ipairs(down) do
  print(name .. ": already shut down")
end
print(string.format("shutdown of '%s': %d approved, %d rejected, %d timed out, %d already down",
  channel, approved, rejected, timed_out, #down))
ch:close()
root:close()
os.exit(timed_out > 0 and 2 or rejected > 0 and 3 or 0)
