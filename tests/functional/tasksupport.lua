-- tests/functional/tasksupport.lua: shared code for the task-board specs
-- (task_crash_spec, task_race_spec, task_hostile_spec, task_next_spec,
-- etcd_queue_spec). Not a spec itself.
--
--   local T = require "tasksupport"      (after support.lua is on the path)
--
--   T.scratch()            a fresh directory on tmpfs (/dev/shm when usable),
--                          removed when the Lua state closes
--   T.run(root, argv, env) run F.bin with --root root and argv, in the clean
--                          environment of support.lua (LC_ALL=C, fsync off, no
--                          fault variables unless env sets them); sequential
--                          runs reuse one pair of output files, so thousands
--                          of runs stay cheap -> {code=, stdout=, stderr=, argv=}
--   T.must(root, argv)     T.run and assert exit 0
--   T.b64decode(s)         standard base64 -> bytes (nil when malformed)
--   T.b64encode(s)         bytes -> standard base64
--   T.pyrepr(s)            Python's repr() of an ASCII string
--   T.normalize(text)      every ISO-8601 timestamp replaced by <ts>
--   T.record(fields)       the exact bytes of a task record (docs/format.md 3.5)
--   T.claim(fields)        the exact bytes of a claim file (docs/format.md 3.6)
--   T.touch_old(path, s)   set the mtime of path s seconds into the past
--   T.messages(snap)       message files of a channel snapshot: list of
--                          {path=, seq=, text=} sorted by seq
--   T.parse_message(text)  frontmatter fields + parsed JSON body, or nil, why
--   T.new_channel()        a fresh root (on T.scratch()) with channel "c"
--   T.next_race(root, pre) 32 `task next` racers on channel c (`pre`: words
--                          before the command, e.g. {"--store", URL}); every
--                          fourth ("writerN") has only capability docs, the
--                          others ("builderN") build. Checks each one's exit
--                          and line -> {task id = winner}, number of wins
--   T.race(root, n, argv_of) n runs at once (a go-file barrier), run i with
--                          argv_of(i) -> list of {code=, stdout=, stderr=, argv=}
local H = require "spec_helper"
local F = require "support"
local json = require "agentchat.json"

local T = {}

local made = {}
setmetatable(made, { __gc = function(t)
  for _, d in ipairs(t) do
    os.execute("rm -rf " .. H.sh(d))
  end
end })

local function shm_base()
  if os.execute("test -d /dev/shm -a -w /dev/shm") then
    return "/dev/shm"
  end
  return os.getenv("TMPDIR") or "/tmp"
end

T.base = shm_base()

function T.scratch()
  local p = io.popen("mktemp -d " .. H.sh(T.base .. "/ac-task.XXXXXX"))
  local dir = p:read("l")
  p:close()
  made[#made + 1] = dir
  return dir
end

local io_dir

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

function T.env(extra)
  local vars = {
    LC_ALL = "C",
    HOME = F.home,
    AGENT_CHAT_TEST_FSYNC = "0",
    AGENT_CHAT_ROOT = false,
    AGENT_CHAT_DEBUG = false,
    AGENT_CHAT_NAME = false,
    AGENT_CHAT_CHANNELS = false,
    AGENT_CHAT_FAULT = false,
    AGENT_CHAT_FAULT_LOG = false,
  }
  for k, v in pairs(extra or {}) do
    vars[k] = v
  end
  return env_words(vars)
end

function T.run(root, argv, env)
  io_dir = io_dir or T.scratch()
  local words = { H.sh(F.bin) }
  if root then
    words[#words + 1] = "--root"
    words[#words + 1] = H.sh(root)
  end
  for _, w in ipairs(argv) do
    words[#words + 1] = H.sh(w)
  end
  local out, err = io_dir .. "/out", io_dir .. "/err"
  local ok, how, code = os.execute(string.format("env %s %s </dev/null >%s 2>%s", T.env(env),
    table.concat(words, " "), H.sh(out), H.sh(err)))
  if how == "signal" then
    code = 128 + code
  end
  local full = { "--root", root }
  for _, w in ipairs(argv) do
    full[#full + 1] = w
  end
  return { code = ok and 0 or code, stdout = H.read(out), stderr = H.read(err), argv = full }
end

function T.must(root, argv, env)
  local r = T.run(root, argv, env)
  assert(r.code == 0, F.describe(r))
  return r
end

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local B64IDX = {}
for i = 1, #B64 do
  B64IDX[B64:byte(i)] = i - 1
end

function T.b64decode(s)
  if type(s) ~= "string" or #s % 4 ~= 0 then
    return nil
  end
  local out = {}
  for i = 1, #s, 4 do
    local a, b, c, d = s:byte(i, i + 3)
    local va, vb = B64IDX[a], B64IDX[b]
    if not va or not vb then
      return nil
    end
    local vc = c ~= 61 and B64IDX[c] or 0
    local vd = d ~= 61 and B64IDX[d] or 0
    if (c ~= 61 and not B64IDX[c]) or (d ~= 61 and not B64IDX[d]) then
      return nil
    end
    local n = va << 18 | vb << 12 | vc << 6 | vd
    out[#out + 1] = string.char(n >> 16 & 255)
    if c ~= 61 then
      out[#out + 1] = string.char(n >> 8 & 255)
    end
    if d ~= 61 then
      out[#out + 1] = string.char(n & 255)
    end
  end
  return table.concat(out)
end

function T.b64encode(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a << 16 | (b or 0) << 8 | (c or 0)
    out[#out + 1] = B64:sub((n >> 18) + 1, (n >> 18) + 1) .. B64:sub((n >> 12 & 63) + 1, (n >> 12 & 63) + 1)
      .. (b and B64:sub((n >> 6 & 63) + 1, (n >> 6 & 63) + 1) or "=")
      .. (c and B64:sub((n & 63) + 1, (n & 63) + 1) or "=")
  end
  return table.concat(out)
end

--- Python's repr() of an ASCII str (quotes chosen as Python does).
function T.pyrepr(s)
  local q = "'"
  if s:find("'", 1, true) and not s:find('"', 1, true) then
    q = '"'
  end
  local body = s:gsub("[%z\1-\31\127\\']", function(c)
    if c == "\\" then
      return "\\\\"
    elseif c == "\n" then
      return "\\n"
    elseif c == "\t" then
      return "\\t"
    elseif c == "\r" then
      return "\\r"
    elseif c == "'" then
      return q == "'" and "\\'" or "'"
    end
    return string.format("\\x%02x", c:byte())
  end)
  return q .. body .. q
end

function T.normalize(text)
  if text == nil then
    return nil
  end
  return (text:gsub("%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[%.%d]*[%+%-]%d%d:%d%d", "<ts>"))
end

--- JSON text of a Lua value in the records' style: strings quoted, nil as
--- null, lists as arrays (one item per line, indent 4).
local function jv(v, indent)
  if v == nil or v == json.null then
    return "null"
  elseif type(v) == "table" then
    if #v == 0 then
      return "[]"
    end
    local items = {}
    for i, s in ipairs(v) do
      items[i] = indent .. "  " .. jv(s, indent .. "  ")
    end
    return "[\n" .. table.concat(items, ",\n") .. "\n" .. indent .. "]"
  elseif type(v) == "string" then
    return json.dumps(v, { ensure_ascii = false })
  end
  return tostring(v)
end

local TASK_FIELDS = { "id", "channel", "title", "status", "owner", "created_by", "depends_on",
                      "files_hint", "acceptance", "lease_expires_at", "branch", "updated_at" }
local CLAIM_FIELDS = { "task_id", "channel", "owner", "lease_expires_at", "claimed_at", "updated_at",
                       "previous_owner", "previous_lease_expires_at", "recovery_reason" }
T.TASK_FIELDS, T.CLAIM_FIELDS = TASK_FIELDS, CLAIM_FIELDS

local function encode(order, fields)
  local lines = {}
  for _, k in ipairs(order) do
    lines[#lines + 1] = "  " .. json.dumps(k) .. ": " .. jv(fields[k], "  ")
  end
  return "{\n" .. table.concat(lines, ",\n") .. "\n}\n"
end

--- A task record with defaults: {id=, channel=} required.
function T.record(f)
  local r = {
    title = "T", status = "open", created_by = "lead", depends_on = {}, files_hint = {},
    acceptance = {}, updated_at = "2030-01-01T00:00:00+00:00",
  }
  for k, v in pairs(f) do
    r[k] = v
  end
  return encode(TASK_FIELDS, r)
end

function T.claim(f)
  return encode(CLAIM_FIELDS, f)
end

function T.touch_old(path, seconds)
  os.execute("touch -h -d @" .. (os.time() - seconds) .. " " .. H.sh(path))
end

function T.messages(snap)
  local out = {}
  for path, v in pairs(snap) do
    local seq = path:match("^(%d+)%-[^/]*%.md$")
    if seq then
      out[#out + 1] = { path = path, seq = tonumber(seq), text = v:sub(3) }
    end
  end
  table.sort(out, function(a, b)
    return a.seq < b.seq
  end)
  return out
end

--- A complete audit message: frontmatter in the fixed order, a closing
--- ---, and a JSON object body whose event is the status.
function T.parse_message(text)
  local seq, from, rest = text:match("^%-%-%-\nseq: (%d+)\nfrom: ([^\n]*)\nto: all\n(.*)$")
  if not seq then
    return nil, "frontmatter does not start with ---/seq/from/to"
  end
  local channel, ts, status, title, body =
    rest:match("^channel: ([^\n]*)\nts: ([^\n]*)\nstatus: ([^\n]*)\ntitle: ([^\n]*)\n%-%-%-\n(.*)$")
  if not channel then
    return nil, "frontmatter is not channel/ts/status/title/---"
  end
  if body:sub(-2) ~= "}\n" then
    return nil, "body does not end with }\\n"
  end
  local obj, jerr = json.loads(body)
  if type(obj) ~= "table" then
    return nil, "body is not a JSON object: " .. tostring(jerr)
  end
  if obj.event ~= status then
    return nil, "body event " .. tostring(obj.event) .. " differs from status " .. status
  end
  return { seq = tonumber(seq), from = from, channel = channel, ts = ts, status = status,
           title = title, body = obj }
end

--- Run `n` jobs at once (released together by a go-file barrier): job i
--- runs the binary with argv_of(i) (--root prepended). Returns a list of
--- {code=, stdout=, stderr=, argv=}.
function T.race(root, n, argv_of)
  local dir = T.scratch()
  local lines = {
    'W=$1; R=$2',
    'job() { i=$1; shift',
    '  while [ ! -e "$W/go" ]; do sleep 0.005; done',
    '  "$A" --root "$R" "$@" >"$W/out.$i" 2>"$W/err.$i"; echo $? >"$W/rc.$i"; }',
  }
  for i = 1, n do
    local words = {}
    for _, w in ipairs(argv_of(i)) do
      words[#words + 1] = F.sh(w)
    end
    lines[#lines + 1] = "job " .. i .. " " .. table.concat(words, " ") .. " &"
  end
  lines[#lines + 1] = "sleep 0.2; : >\"$W/go\"; wait"
  local rc = F.shell(table.concat(lines, "\n") .. "\n", nil, dir, root)
  assert(rc == 0, "race script failed")
  local out = {}
  for i = 1, n do
    out[i] = {
      code = tonumber(F.read(dir .. "/rc." .. i)),
      stdout = F.read(dir .. "/out." .. i),
      stderr = F.read(dir .. "/err." .. i),
      argv = argv_of(i),
    }
  end
  return out
end

function T.new_channel()
  local root = T.scratch() .. "/root"
  T.must(root, { "init", "c" })
  return root
end

function T.next_race(root, pre)
  local function agent(i)
    return (i % 4 == 0 and "writer" or "builder") .. i
  end
  local results = T.race(root, 32, function(i)
    local argv = { table.unpack(pre or {}) }
    for _, w in ipairs({ "task", "next", "c", "--as", agent(i), "--capability",
                         i % 4 == 0 and "docs" or "lint,build", "--lease-seconds", "600" }) do
      argv[#argv + 1] = w
    end
    return argv
  end)
  local seen, won = {}, 0
  for i, r in ipairs(results) do
    assert(r.stderr == "", agent(i) .. ": " .. r.stderr)
    if r.code == 0 then
      local id = assert(r.stdout:match("^claimed task (%S+) %[in_progress%]\n$"), r.stdout)
      assert(seen[id] == nil, id .. " claimed twice")
      assert(i % 4 ~= 0, agent(i) .. " has no build capability but claimed " .. id)
      seen[id] = agent(i)
      won = won + 1
    else
      assert(r.code == 3 and r.stdout == "no ready task for " .. agent(i) .. " in 'c'\n",
             agent(i) .. ": exit " .. tostring(r.code) .. ", " .. r.stdout)
    end
  end
  return seen, won
end

package.loaded["tasksupport"] = T
return T
