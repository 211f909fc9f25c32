-- tests/functional/watchsupport.lua: shared code for the specs that run
-- `agent-chat watch` (watch_spec, examples_spec). Not a spec itself.
--
--   local W = require "watchsupport"     (after support.lua is on the path)
--
--   W.cursor(root, ch, agent)  the agent's cursor as a number (0 if none)
--   W.script(text)             write a watch script to a fresh file -> path
--   W.NOTE                     Lua prelude for such scripts: `...` is a log
--                              path; note(line) appends a line to it (opened
--                              and closed each time, so a kill -9 loses no
--                              line); exists(path); sys = agentchat.sys
--   W.logfile()                a fresh log path for NOTE
--   W.log_lines(path)          the log's lines
--   W.seqs_of(lines, verb)     seqs of the "<verb> <seq>" lines, in order
--   W.set_of(list)             {[v] = true, ...}
--   W.eventually(fn, timeout)  poll fn() every 50 ms until it is truthy or
--                              `timeout` s (default 10) pass; its last value
--   W.spawn(root, argv)        start `agent-chat --root root watch argv...`
--                              in the background -> job with job.pid,
--                              job:signal("INT"|"TERM"|"KILL"),
--                              job:stderr() (what it printed so far),
--                              job:finish(timeout) -> {code, stdout, stderr}
--                              (SIGKILL at the timeout)
--   W.spawn_command(root, cmd, argv)  the same for any command
local F = require "support"

local W = {}

function W.cursor(root, ch, agent)
  return tonumber(F.read(root .. "/" .. ch .. "/.cursors/" .. agent .. ".txt") or "0")
end

function W.script(text)
  local path = F.tmpdir() .. "/handler.lua"
  F.write(path, text)
  return path
end

function W.logfile()
  return F.tmpdir() .. "/log"
end

function W.log_lines(path)
  return F.lines(F.read(path) or "")
end

W.NOTE = [[
local LOG = ...
local sys = require "agentchat.sys"
local function note(s)
  local f = assert(io.open(LOG, "a"))
  f:write(s, "\n")
  f:close()
end
local function exists(p)
  local f = io.open(p)
  if f then f:close() end
  return f ~= nil
end
]]

function W.seqs_of(lines, verb)
  local out = {}
  for _, l in ipairs(lines) do
    local n = l:match("^" .. verb .. " (%d+)$")
    if n then
      out[#out + 1] = tonumber(n)
    end
  end
  return out
end

function W.set_of(list)
  local s = {}
  for _, v in ipairs(list) do
    s[v] = true
  end
  return s
end

function W.eventually(fn, timeout)
  return F.eventually(fn, timeout)
end

function W.spawn(root, argv)
  return W.spawn_command(root, "watch", argv)
end

--- W.spawn for any command: `agent-chat --root root COMMAND argv...`.
function W.spawn_command(root, command, argv)
  local dir = F.tmpdir()
  -- The inner shell keeps the pid and, once it ends, the exit status:
  -- written aside and renamed, since job:finish polls for the file and
  -- must never read it empty, between its creation and the write.
  local rc = F.shell([[
W=$1; shift
( "$A" "$@" >"$W/out" 2>"$W/err" </dev/null & echo $! >"$W/pid"; wait $!
  echo $? >"$W/rc.tmp"; mv "$W/rc.tmp" "$W/rc" ) >/dev/null 2>&1 &
]], {}, dir, "--root", root, command, table.unpack(argv))
  assert(rc == 0)
  local pid = W.eventually(function()
    local p = F.read(dir .. "/pid")
    return p and p:match("%d+")
  end)
  assert(pid, command .. " did not start")
  local job = { pid = pid, dir = dir }
  function job.signal(_, sig)
    os.execute("kill -" .. sig .. " " .. pid .. " 2>/dev/null")
  end
  function job.stderr()
    return F.read(dir .. "/err") or ""
  end
  function job.finish(_, timeout)
    local function rc_file()
      return F.read(dir .. "/rc")
    end
    local code = W.eventually(rc_file, timeout or 10)
    if not code then
      job:signal("KILL")
      code = W.eventually(rc_file, 5)
    end
    return { code = tonumber(code), stdout = F.read(dir .. "/out"), stderr = F.read(dir .. "/err") }
  end
  return job
end

package.loaded["watchsupport"] = W
return W
