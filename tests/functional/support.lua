-- tests/functional/support.lua: shared code for the functional specs (the
-- specs spawn ./agent-chat and look at stdout, stderr, the exit code and the
-- files left on disk). Not a spec itself: prove only runs *_spec.lua.
--
--   local H = require "spec_helper"
--   package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
--   local F = require "support"
--
--   F.bin                   the binary under test (a private copy of H.bin)
--   F.home                  a temporary $HOME used by every F.run
--   F.run(argv, opts)       like H.run, with a clean environment: LC_ALL=C,
--                           HOME=F.home, AGENT_CHAT_TEST_FSYNC=0, no
--                           XDG_CONFIG_HOME and no AGENT_CHAT_ROOT unless
--                           opts.root is given.
--                           opts.env (false unsets), opts.stdin, opts.cwd
--                           -> {code=, stdout=, stderr=}
--   F.shell(script, env, ...) run a /bin/sh script (A = the binary, $1... =
--                           the extra words) -> exit code
--   F.snapshot(dir)         {relpath = "d" | "f:<bytes>" | "l:<target>"}
--   F.diff(a, b)            list of human-readable differences ({} if none)
--   F.same(a, b)            two flat tables hold the same keys and values
--   F.copy(from, to)        cp -a of a tree over `to` (default: a fresh
--                           temporary path) -> to
--   F.run_checked(argv, opts) F.run that raises if the binary crashed
--   F.ac(root, argv, env)   F.run_checked of `--root ROOT ARGV...`
--   F.ok(root, argv, env)   the same, and it exited 0
--   F.background(root, cmd, between, delay)
--                           cmd in the background, `between` after `delay`
--                           s, then collect it -> {code=, stdout=, stderr=}, s
--   F.crashed(stderr)       a reason string if stderr shows a crash, else nil
--   F.error_line(stderr)    nil if stderr is one "agent-chat: ..." line,
--                           else a reason string
--   F.lines(s), F.show(s), F.new_root(), F.init(root, ch), F.post(...)
--   F.absolute(dir)         the absolute path of a directory
local H = require "spec_helper"

local F = {}

local function abspath(p)
  local f = io.popen("cd " .. H.sh(p:match("^(.*)/[^/]*$") or ".") .. " && pwd")
  local dir = f:read("l")
  f:close()
  return dir .. "/" .. p:match("[^/]*$")
end

--- The binary under test, copied once per spec file: the specs run for a
--- while, and a concurrent `make` must not swap the binary in the middle
--- of a run (exec would fail with EACCES/ETXTBSY while it is relinked).
local function stable_copy(src)
  local dir = H.tmpdir()
  local dst = dir .. "/agent-chat"
  for _ = 1, 20 do
    if os.execute("cp " .. H.sh(src) .. " " .. H.sh(dst) .. " 2>/dev/null && "
        .. H.sh(dst) .. " -h >/dev/null 2>&1") then
      return dst
    end
    os.execute("sleep 0.5")
  end
  return src
end

F.source_bin = abspath(H.bin)

function F.absolute(dir)
  local f = assert(io.popen("cd " .. H.sh(dir) .. " && pwd"))
  local out = f:read("l")
  f:close()
  return out
end
F.cwd = abspath("x"):match("^(.*)/x$")
F.bin = stable_copy(F.source_bin)
F.sh = H.sh
F.read = H.read
F.write = H.write
F.tmpdir = H.tmpdir
F.home = H.tmpdir()
F.RULE = string.rep("=", 70)

--- Printable form of a string for assertion messages.
function F.show(s)
  if s == nil then
    return "nil"
  end
  s = tostring(s)
  if #s > 300 then
    s = s:sub(1, 300) .. "...(" .. #s .. " bytes)"
  end
  return (s:gsub("[%z\1-\31\127-\255]", function(c)
    if c == "\n" then
      return "\\n"
    end
    return string.format("\\x%02x", c:byte())
  end))
end

function F.lines(s)
  local out = {}
  for line in (s or ""):gmatch("([^\n]*)\n") do
    out[#out + 1] = line
  end
  local tail = (s or ""):match("([^\n]*)$")
  if tail and tail ~= "" then
    out[#out + 1] = tail
  end
  return out
end

--- Environment words for env(1): unsets first (GNU env treats the first
--- NAME=VALUE as the end of its options), then assignments, sorted.
local function env_words(vars)
  local unset, set = {}, {}
  for k, v in pairs(vars) do
    if v == false then
      unset[#unset + 1] = "-u " .. k
    else
      set[#set + 1] = k .. "=" .. H.sh(v)
    end
  end
  table.sort(unset)
  table.sort(set)
  return table.concat(unset, " ") .. " " .. table.concat(set, " ")
end

-- `tests/run-one etcd-spec:FILE` runs a folder spec with every command on an
-- etcd store (AGENT_CHAT_TEST_ON_ETCD=1 under tests/etcd/with-cluster): the
-- store of a root is a key prefix of its own, as each root is a folder of
-- its own. Only specs that look at outputs alone can pass that way.
local on_etcd = os.getenv("AGENT_CHAT_TEST_ON_ETCD") == "1" and os.getenv("AGENT_CHAT_TEST_ETCD_ENDPOINTS")
F.on_etcd = on_etcd and true or false

local function store_of(root)
  if not on_etcd or not root then
    return false
  end
  if root:sub(1, 1) ~= "/" then
    root = F.cwd .. "/" .. root
  end
  return "etcd://" .. on_etcd:gsub("https?://", "") .. "/fs/"
    .. require("agentchat.sys").sha256(root):sub(1, 24)
end

-- The --root of an argv (before the command).
local function root_of(argv)
  for i, w in ipairs(argv) do
    if w == "--root" then
      return argv[i + 1]
    elseif w:sub(1, 7) == "--root=" then
      return w:sub(8)
    elseif w:sub(1, 1) ~= "-" then
      return nil
    end
  end
end

local function base_env(opts, argv)
  local vars = {
    LC_ALL = "C",
    HOME = F.home,
    AGENT_CHAT_TEST_FSYNC = "0",
    AGENT_CHAT_STORE = store_of((argv and root_of(argv)) or opts.root
      or (opts.env and opts.env.AGENT_CHAT_ROOT) or nil),
    AGENT_CHAT_ROOT = false,
    AGENT_CHAT_DEBUG = false,
    AGENT_CHAT_NAME = false,
    AGENT_CHAT_CHANNELS = false,
    XDG_CONFIG_HOME = false,        -- the user config is F.home's (none unless a spec writes one)
  }
  if opts.root then
    vars.AGENT_CHAT_ROOT = opts.root
  end
  for k, v in pairs(opts.env or {}) do
    vars[k] = v
  end
  return vars
end

function F.run(argv, opts)
  opts = opts or {}
  local dir = H.tmpdir()
  local words = {}
  for _, w in ipairs(argv) do
    words[#words + 1] = H.sh(w)
  end
  local stdin = "/dev/null"
  if opts.stdin then
    stdin = dir .. "/stdin"
    H.write(stdin, opts.stdin)
  end
  local cmd = string.format("%s env %s %s %s <%s >%s 2>%s",
    opts.cwd and ("cd " .. H.sh(opts.cwd) .. " &&") or "",
    env_words(base_env(opts, argv)), H.sh(F.bin), table.concat(words, " "),
    H.sh(stdin), H.sh(dir .. "/out"), H.sh(dir .. "/err"))
  local ok, how, code = os.execute(cmd)
  if how == "signal" then
    code = 128 + code
  end
  return { code = ok and 0 or code, stdout = H.read(dir .. "/out"), stderr = H.read(dir .. "/err"),
           argv = argv }
end

--- Run a /bin/sh script with the words `...` as $1, $2, ... $A is the
--- binary; `env` adds variables (the same clean environment as F.run).
--- Returns the exit code.
function F.shell(script, env, ...)
  local dir = H.tmpdir()
  local vars = base_env({ env = env })
  vars.A = F.bin
  H.write(dir .. "/script.sh", script)
  local args = {}
  for i, w in ipairs({ ... }) do
    args[i] = H.sh(w)
  end
  local ok, how, code = os.execute("env " .. env_words(vars) .. " /bin/sh " .. H.sh(dir .. "/script.sh")
    .. " " .. table.concat(args, " "))
  if how == "signal" then
    return 128 + code
  end
  return ok and 0 or code
end

--- A reason string if stderr shows a crash (a traceback or an internal
--- error), else nil.
function F.crashed(stderr)
  stderr = stderr or ""
  for _, bad in ipairs({ "stack traceback", "Traceback", "INTERNAL_ERROR", "internal error",
                         "attempt to ", "Segmentation", "core dumped" }) do
    if stderr:find(bad, 1, true) then
      return "stderr shows a crash (" .. bad .. "): " .. F.show(stderr)
    end
  end
  return nil
end

--- nil if stderr is exactly one line starting "agent-chat: ", else why not.
function F.error_line(stderr)
  stderr = stderr or ""
  if stderr:sub(1, 12) ~= "agent-chat: " then
    return "stderr does not start with 'agent-chat: ': " .. F.show(stderr)
  end
  if stderr:sub(-1) ~= "\n" then
    return "stderr does not end with a newline: " .. F.show(stderr)
  end
  if stderr:sub(1, -2):find("\n", 1, true) then
    return "stderr has more than one line: " .. F.show(stderr)
  end
  return nil
end

--- Describe a result for assertion messages.
function F.describe(r)
  local argv = {}
  for i, w in ipairs(r.argv or {}) do
    argv[i] = F.show(w)
  end
  return string.format("agent-chat %s -> exit %s, stdout %s, stderr %s", table.concat(argv, " "),
    tostring(r.code), F.show(r.stdout), F.show(r.stderr))
end

--- Snapshot of a tree: relative path -> "d", "f:<content>" or "l:<target>".
--- A missing directory gives an empty snapshot.
function F.snapshot(dir)
  local snap = {}
  local p = io.popen("find " .. H.sh(dir) .. " -mindepth 1 -printf '%y\\0%P\\0%l\\0' 2>/dev/null")
  local data = p:read("a")
  p:close()
  local fields = {}
  for field in data:gmatch("([^%z]*)%z") do
    fields[#fields + 1] = field
  end
  for i = 1, #fields - 2, 3 do
    local kind, rel, target = fields[i], fields[i + 1], fields[i + 2]
    if kind == "f" then
      snap[rel] = "f:" .. (H.read(dir .. "/" .. rel) or "<unreadable>")
    elseif kind == "l" then
      snap[rel] = "l:" .. target
    else
      snap[rel] = kind
    end
  end
  return snap
end

--- Differences between two snapshots; `ignore(path)` may skip paths.
function F.diff(a, b, ignore)
  local out = {}
  local keys, seen = {}, {}
  for k in pairs(a) do
    keys[#keys + 1] = k
    seen[k] = true
  end
  for k in pairs(b) do
    if not seen[k] then
      keys[#keys + 1] = k
    end
  end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if not (ignore and ignore(k)) then
      if a[k] == nil then
        out[#out + 1] = "added " .. F.show(k)
      elseif b[k] == nil then
        out[#out + 1] = "removed " .. F.show(k)
      elseif a[k] ~= b[k] then
        out[#out + 1] = "changed " .. F.show(k)
      end
    end
  end
  return out
end

--- Do two flat tables hold the same keys and values?
function F.same(a, b)
  for k, v in pairs(a) do
    if b[k] ~= v then
      return false
    end
  end
  for k in pairs(b) do
    if a[k] == nil then
      return false
    end
  end
  return true
end

--- Copy the tree `from` (cp -a) to `to`, replacing what is there; `to`
--- defaults to a fresh temporary path. Returns `to`.
function F.copy(from, to)
  to = to or (H.tmpdir() .. "/copy")
  assert(os.execute("rm -rf " .. H.sh(to) .. " && cp -a " .. H.sh(from) .. " " .. H.sh(to)))
  return to
end

--- F.run that raises if the binary crashed. Returns the result.
function F.run_checked(argv, opts)
  local r = F.run(argv, opts)
  local crash = F.crashed(r.stderr)
  if crash then
    error(crash .. ": " .. F.describe(r), 2)
  end
  return r
end

--- `agent-chat --root ROOT ARGV...` (F.run_checked, `env` as opts.env).
function F.ac(root, argv, env)
  local r = F.run_checked({ "--root", root, table.unpack(argv) }, { env = env })
  return r
end

--- F.ac that also raises unless the command exited 0.
function F.ok(root, argv, env)
  local r = F.ac(root, argv, env)
  if r.code ~= 0 then
    error("expected exit 0: " .. F.describe(r), 2)
  end
  return r
end

--- Run `agent-chat CMD...` (words already quoted for sh; AGENT_CHAT_ROOT
--- is root) in the background, run `between` (sh, $A is the binary) after
--- `delay` seconds, collect it; a watchdog kills it after 30 s. Returns
--- {code, stdout, stderr} and the seconds taken.
function F.background(root, cmd, between, delay)
  local work = H.tmpdir()
  local t0 = F.now()
  local rc = F.shell([[
W=$1
exec 2>"$W/shell.err"
"$A" ]] .. cmd .. [[ >"$W/out" 2>"$W/err" &
pid=$!
( trap 'kill $s 2>/dev/null; exit 0' TERM
  sleep 30 & s=$!
  wait $s && kill -KILL $pid ) </dev/null >/dev/null 2>&1 &
dog=$!
sleep ]] .. delay .. "\n" .. between .. [[

wait $pid
echo $? >"$W/rc"
kill $dog 2>/dev/null
]], { AGENT_CHAT_ROOT = root }, work)
  if rc ~= 0 then
    error("the background shell failed: " .. tostring(H.read(work .. "/shell.err")), 2)
  end
  return { code = tonumber(H.read(work .. "/rc")), stdout = H.read(work .. "/out"),
           stderr = H.read(work .. "/err") }, F.now() - t0
end

--- The CPU time process `pid` used so far, in clock ticks (utime + stime,
--- fields 14 and 15 of /proc/PID/stat), or nil where there is no /proc.
function F.cpu_ticks(pid)
  local stat = F.read("/proc/" .. pid .. "/stat")
  local rest = stat and stat:match("%) (.*)$")
  if not rest then
    return nil
  end
  local f = {}
  for w in rest:gmatch("%S+") do
    f[#f + 1] = w
  end
  return tonumber(f[12]) + tonumber(f[13])   -- fields 14, 15 counted from field 3
end

--- A fresh root path inside a fresh parent directory (the root itself is
--- not created). Returns root, parent.
function F.new_root()
  local parent = H.tmpdir()
  return parent .. "/root", parent
end

--- Create channel `ch` under `root` (asserting success).
function F.init(root, ch, ...)
  local argv = { "--root", root, "init", ch, ... }
  local r = F.run(argv)
  assert(r.code == 0, F.describe(r))
  return r
end

--- Post a message (asserting success); returns the seq.
function F.post(root, ch, from, title, body, ...)
  local r = F.run({ "--root", root, "post", ch, "--from", from, "--title", title, "--body", body, ... })
  assert(r.code == 0, F.describe(r))
  return tonumber(r.stdout:match("^posted #(%d+)"))
end

--- Message blocks of read/peek/wait output (text between the rule lines).
function F.blocks(stdout)
  local blocks = {}
  local cur
  for _, line in ipairs(F.lines(stdout)) do
    if line == F.RULE then
      cur = {}
      blocks[#blocks + 1] = cur
    elseif cur then
      cur[#cur + 1] = line
    end
  end
  return blocks
end

--- The seqs of the "seq: N" frontmatter lines in read/peek/wait output.
function F.seqs(stdout)
  local out = {}
  for n in (stdout or ""):gmatch("\nseq: (%d+)\n") do
    out[#out + 1] = tonumber(n)
  end
  return out
end

--- Seqs of the message files in a channel directory, from the names.
function F.file_seqs(dir)
  local out = {}
  for _, name in ipairs(H.ls(dir)) do
    local n = name:match("^(%d+)%-.*%.md$")
    if n then
      out[#out + 1] = tonumber(n)
    end
  end
  table.sort(out)
  return out
end

--- Wall-clock seconds (float) via the binary's monotonic clock when
--- available, else os.time().
function F.now()
  local ok, sys = pcall(require, "agentchat.sys")
  if ok and sys.monotonic then
    return sys.monotonic()
  end
  return os.time()
end

function F.sleep(s)
  os.execute("sleep " .. tostring(s))
end

--- Call fn() every `step` seconds (default 0.05) until it returns a true
--- value or `timeout` seconds (default 10) pass; then its last value.
function F.eventually(fn, timeout, step)
  local t0 = F.now()
  repeat
    local v = fn()
    if v then
      return v
    end
    F.sleep(step or 0.05)
  until F.now() - t0 > (timeout or 10)
  return fn()
end

package.loaded["support"] = F
return F
