-- tests/functional/servesupport.lua: `agent-chat serve` for the specs
-- (serve_spec, serve_browser_spec): a server on a free loopback port and
-- an HTTP client (curl, which install-deps installs).
--
--   local S = require "servesupport"
--   local srv = S.start(root, {"--channels", "a"})   -- waits for its line
--   srv.url, srv.port, srv.pid
--   srv:get(path, {method=, headers={...}, data=}) -> {status=, headers={lower=v}, body=}
--   srv:stream(path, {headers=}) -> s: s:text(), s:stop()   (curl -N in the background)
--   srv:cpu_ticks()            utime + stime of the server so far (/proc)
--   srv:stop("TERM"|"INT")     -> {code, stdout, stderr} (code 128+n when killed by n)
--   S.eventually(fn, timeout)  poll fn() every 10 ms until truthy
local F = require "support"

local S = {}

function S.eventually(fn, timeout)
  return F.eventually(fn, timeout, 0.01)
end

local Server = {}
Server.__index = Server

--- Start `agent-chat --root ROOT serve --listen 127.0.0.1:0 ARGV...`.
--- Returns the server, or nil and what it printed when it exited.
function S.start(root, argv, env)
  local dir = F.tmpdir()
  local words = { "--root", root, "serve", "--listen", "127.0.0.1:0" }
  for _, a in ipairs(argv or {}) do
    words[#words + 1] = a
  end
  local rc = F.shell([[
W=$1; shift
( "$A" "$@" >"$W/out" 2>"$W/err" </dev/null & echo $! >"$W/pid"; wait $!
  echo $? >"$W/rc.tmp"; mv "$W/rc.tmp" "$W/rc" ) >/dev/null 2>&1 &
]], env or {}, dir, table.unpack(words))
  assert(rc == 0)
  local pid = S.eventually(function()
    local p = F.read(dir .. "/pid")
    return p and p:match("%d+")
  end)
  assert(pid, "serve did not start")
  local srv = setmetatable({ pid = pid, dir = dir }, Server)
  local port = S.eventually(function()
    return (F.read(dir .. "/out") or ""):match("http://127%.0%.0%.1:(%d+)/") or F.read(dir .. "/rc")
  end, 20)
  if not port or not tostring(port):match("^%d+$") or F.read(dir .. "/rc") then
    local r = srv:finish(5)
    return nil, r
  end
  srv.port = tonumber(port)
  srv.url = "http://127.0.0.1:" .. port
  return srv
end

function Server:finish(timeout)
  local function rc_file()
    return F.read(self.dir .. "/rc")
  end
  local code = S.eventually(rc_file, timeout or 10)
  if not code then
    os.execute("kill -KILL " .. self.pid .. " 2>/dev/null")
    code = S.eventually(rc_file, 5)
  end
  return { code = tonumber(code), stdout = F.read(self.dir .. "/out") or "",
           stderr = F.read(self.dir .. "/err") or "" }
end

function Server:stop(sig)
  os.execute("kill -" .. (sig or "TERM") .. " " .. self.pid .. " 2>/dev/null")
  return self:finish(10)
end

function Server:stderr()
  return F.read(self.dir .. "/err") or ""
end

local function curl_args(opts)
  local words = { "curl", "-s", "--noproxy", "*", "--max-time", "20", "--path-as-is" }
  if opts.method then
    words[#words + 1] = "-X"
    words[#words + 1] = opts.method
  end
  if opts.head then
    words[#words + 1] = "-I"
  end
  for _, h in ipairs(opts.headers or {}) do
    words[#words + 1] = "-H"
    words[#words + 1] = h
  end
  if opts.data then
    words[#words + 1] = "--data-binary"
    words[#words + 1] = opts.data
  end
  return words
end

--- One request: {status, headers (lower-case names), body}.
function Server:get(path, opts)
  opts = opts or {}
  local dir = F.tmpdir()
  local words = curl_args(opts)
  for _, w in ipairs({ "-D", dir .. "/h", "-o", dir .. "/b", "-w", "%{http_code}",
                       opts.raw_url or (self.url .. path) }) do
    words[#words + 1] = w
  end
  local q = {}
  for i, w in ipairs(words) do
    q[i] = F.sh(w)
  end
  local p = assert(io.popen(table.concat(q, " ") .. " 2>/dev/null"))
  local code = p:read("a")
  p:close()
  local headers = {}
  for line in (F.read(dir .. "/h") or ""):gmatch("[^\r\n]+") do
    local k, v = line:match("^([^:]+):%s*(.*)$")
    if k then
      headers[k:lower()] = v
    end
  end
  return { status = tonumber(code), headers = headers, body = F.read(dir .. "/b") or "" }
end

--- An event stream read by curl -N in the background into a file.
function Server:stream(path, opts)
  opts = opts or {}
  local dir = F.tmpdir()
  local words = curl_args(opts)
  words[#words + 1] = "-N"
  words[#words + 1] = self.url .. path
  local q = {}
  for i, w in ipairs(words) do
    q[i] = F.sh(w)
  end
  os.execute("( " .. table.concat(q, " ") .. " >" .. F.sh(dir .. "/s") .. " 2>/dev/null & echo $! >"
    .. F.sh(dir .. "/pid") .. " )")
  local pid = S.eventually(function()
    local p = F.read(dir .. "/pid")
    return p and p:match("%d+")
  end)
  local s = { dir = dir, pid = pid }
  function s.text()
    return F.read(dir .. "/s") or ""
  end
  function s.stop()
    os.execute("kill " .. pid .. " 2>/dev/null")
  end
  return s
end

--- utime + stime of the server process, in clock ticks.
function Server:cpu_ticks()
  local stat = F.read("/proc/" .. self.pid .. "/stat") or ""
  local rest = stat:match("%) (.*)$") or ""
  local fields = {}
  for w in rest:gmatch("%S+") do
    fields[#fields + 1] = w
  end
  -- After "pid (comm) ": state is field 1, utime field 12, stime field 13.
  return (tonumber(fields[12]) or 0) + (tonumber(fields[13]) or 0)
end

--- The threads of the server process.
function Server:threads()
  local status = F.read("/proc/" .. self.pid .. "/status") or ""
  return tonumber(status:match("Threads:%s*(%d+)"))
end

package.loaded["servesupport"] = S
return S
