-- tests/helper.lua: shared by every busted spec (loaded through .busted).
-- Specs get it with `local H = require "spec_helper"`.
--
--   H.bin                         path of the agent-chat binary under test
--   H.tmpdir()                    fresh directory, removed at exit
--   H.sh(s)                       quote one word for /bin/sh
--   H.run(argv, opts)             run the binary: argv is a list of words;
--                                 opts.stdin (string), opts.env (table; a
--                                 false value unsets), opts.root (sets
--                                 AGENT_CHAT_ROOT), opts.cwd
--                                 -> {code=, stdout=, stderr=}
--   H.read(path), H.write(path, data), H.ls(dir)
local H = {}

local function script_dir()
  local src = debug.getinfo(1, "S").source:sub(2)
  return src:match("^(.*)/[^/]*$") or "."
end

local here = script_dir()
local repo = here:match("^(.*)/tests$") or (here == "tests" and ".") or here .. "/.."
H.repo = repo
H.bin = os.getenv("AGENT_CHAT_BIN") or (repo .. "/agent-chat")

local made = {}

function H.sh(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

function H.tmpdir()
  local p = io.popen("mktemp -d " .. H.sh((os.getenv("TMPDIR") or "/tmp") .. "/ac-test.XXXXXX"))
  local dir = p:read("l")
  p:close()
  made[#made + 1] = dir
  return dir
end

function H.read(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local s = f:read("a")
  f:close()
  return s
end

function H.write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

--- Sorted entries of a directory (without . and ..).
function H.ls(dir)
  local out = {}
  local p = io.popen("ls -A " .. H.sh(dir) .. " 2>/dev/null")
  for line in p:lines() do
    out[#out + 1] = line
  end
  p:close()
  table.sort(out)
  return out
end

function H.run(argv, opts)
  opts = opts or {}
  local dir = H.tmpdir()
  local words = {}
  for _, w in ipairs(argv) do
    words[#words + 1] = H.sh(w)
  end
  -- env(1) wants every -u before the first NAME=VALUE.
  local unset, set = {}, {}
  if opts.root then
    set[#set + 1] = "AGENT_CHAT_ROOT=" .. H.sh(opts.root)
  end
  for k, v in pairs(opts.env or {}) do
    if v == false then
      unset[#unset + 1] = "-u " .. k
    else
      set[#set + 1] = k .. "=" .. H.sh(v)
    end
  end
  local env = table.move(set, 1, #set, #unset + 1, unset)
  local stdin = "/dev/null"
  if opts.stdin then
    stdin = dir .. "/stdin"
    H.write(stdin, opts.stdin)
  end
  local cmd = string.format("%s env %s %s %s <%s >%s 2>%s",
    opts.cwd and ("cd " .. H.sh(opts.cwd) .. " &&") or "",
    table.concat(env, " "), H.sh(opts.bin or H.bin), table.concat(words, " "),
    H.sh(stdin), H.sh(dir .. "/out"), H.sh(dir .. "/err"))
  local ok, how, code = os.execute(cmd)
  if how == "signal" then
    code = 128 + code
  end
  return { code = ok and 0 or code, stdout = H.read(dir .. "/out"), stderr = H.read(dir .. "/err") }
end

-- Remove temporary directories when the Lua state closes.
setmetatable(made, { __gc = function(t)
  for _, d in ipairs(t) do
    os.execute("rm -rf " .. H.sh(d))
  end
end })

package.loaded["spec_helper"] = H
return H
