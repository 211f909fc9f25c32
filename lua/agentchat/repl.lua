-- agentchat.repl: the interactive Lua loop of `agent-chat repl`.
--
-- It reads chunks the way lua.c (5.4) does: a line is first tried as
-- `return <line>;` (so a plain expression prints its value), else compiled
-- as a statement; a chunk that fails only because input ended (the syntax
-- error ends in "<eof>") asks for another line with the continuation prompt
-- `>> `; a first line `=expr` means `return expr`. Results are printed with
-- agentchat.pretty (strings at the top level raw, as print shows them),
-- errors as one "agent-chat: ..." message with a traceback on stderr, and
-- the loop goes on.
--
-- Globals of the session (it runs in _G, like lua.c, so definitions stay):
--   ac          require "agentchat"
--   root        the root opened per --root / $AGENT_CHAT_ROOT / ~/agent-chat
--   ch(name)    root:channel(name), raising CHANNEL_NOT_FOUND etc.
--   pp(v [, opts])  print v with agentchat.pretty (opts: depth, items, ...)
--   json        require "agentchat.json" (json.null prints as null)
--
-- On a terminal (stdin a TTY) input goes through GNU readline when the
-- build has it: line editing, history (persisted, see history_path) and Tab
-- completion (M.complete). Otherwise lines are read from stdin as they come,
-- with no banner, no prompts and no escape codes, so the REPL can be
-- scripted: `printf '1+1\n' | agent-chat repl` prints 2.
local ac = require "agentchat"
local pretty = require "agentchat.pretty"
local rl = require "agentchat.readline"
local sys = require "agentchat.sys"
local errors = require "agentchat.errors"

local M = {}

M.HISTORY_MAX = 1000          -- lines kept in the history file
M.CHUNKNAME = "=stdin"        -- as lua.c, so messages read "stdin:1: ..."

-- ------------------------------------------------------------ history file

--- The history file: `flag` (false: none), else
--- $XDG_STATE_HOME/agent-chat/repl_history (an absolute XDG_STATE_HOME),
--- else ~/.local/state/agent-chat/repl_history. nil when there is no home.
function M.history_path(flag)
  if flag == false then
    return nil
  end
  if flag then
    return flag
  end
  local state = os.getenv("XDG_STATE_HOME")
  if state and state:sub(1, 1) == "/" then
    return state .. "/agent-chat/repl_history"
  end
  local home = sys.home()
  if not home then
    return nil
  end
  return home .. "/.local/state/agent-chat/repl_history"
end

-- ------------------------------------------------------------- completion

-- Keys of `v` usable after `sep` ("." all fields, ":" methods), following
-- __index tables (classes such as agentchat.Channel). Names starting with
-- "_" are private unless `prefix` starts with "_".
local function members(v, sep, prefix, out, seen)
  local hops = 0
  local want_private = prefix:sub(1, 1) == "_"
  if type(v) == "string" then
    v = string
  end
  while v ~= nil and hops < 10 do
    hops = hops + 1
    if type(v) == "table" then
      for k, x in next, v do
        if type(k) == "string" and k:match("^[%a_][%w_]*$") and not pretty.keywords[k]
            and k:sub(1, #prefix) == prefix and not seen[k]
            and (want_private or k:sub(1, 1) ~= "_")
            and (sep == "." or type(x) == "function") then
          seen[k] = true
          out[#out + 1] = { k, x }
        end
      end
    end
    local mt = getmetatable(v)
    local index = type(mt) == "table" and rawget(mt, "__index") or nil
    if type(index) ~= "table" then
      break
    end
    v = index
  end
end

-- Walk a dotted chain of names from `env`; nil when any step is not a
-- table field (nothing is called; __index tables are followed).
local function lookup(env, chain)
  local v = env
  for name in chain:gmatch("[^.]+") do
    if type(v) ~= "table" and type(v) ~= "string" then
      return nil
    end
    local ok, x = pcall(function()
      return v[name]
    end)
    if not ok then
      return nil
    end
    v = x
  end
  return v
end

-- Index of the "(" matching the ")" that ends `s`, or nil.
local function open_paren(s)
  local depth = 0
  for i = #s, 1, -1 do
    local c = s:sub(i, i)
    if c == ")" then
      depth = depth + 1
    elseif c == "(" then
      depth = depth - 1
      if depth == 0 then
        return i
      end
    end
  end
  return nil
end

-- The value the expression `expr` (text before "." or ":") stands for, as
-- far as it can be known without running code: a chain of names, or a call
-- whose result type is known (root:channel(...), ch(...), ac.open(...)).
local function resolve(env, expr)
  expr = expr:gsub("%s+$", "")
  if expr:sub(-1) == ")" then
    local i = open_paren(expr)
    if not i then
      return nil
    end
    local callee = expr:sub(1, i - 1):gsub("%s+$", "")
    if callee:match("[:.]channel$") or callee:match("[:.]init$") or callee:match("^ch$")
        or callee:match("[^%w_.:]ch$") or callee:match("lock_channel$") then
      return ac.Channel
    elseif callee:match("open$") then
      return ac.Root
    end
    return nil
  end
  local chain = expr:match("([%a_][%w_]*[%w_.]*)$")
  if not chain or chain:find("..", 1, true) or chain:sub(-1) == "." then
    return nil
  end
  local before = expr:sub(1, #expr - #chain)
  if before:match("[%w_:]$") then
    return nil
  end
  return lookup(env, chain)
end

-- If the cursor is inside an unfinished string literal: its quote
-- character and the literal's content so far; "comment" inside a comment.
local function open_string(s)
  local i, n = 1, #s
  while i <= n do
    local c = s:sub(i, i)
    if c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local d = s:sub(j, j)
        if d == "\\" then
          j = j + 1
        elseif d == c then
          break
        end
        j = j + 1
      end
      if j > n then
        return c, s:sub(i + 1), s:sub(1, i - 1)
      end
      i = j + 1
    elseif c == "-" and s:sub(i + 1, i + 1) == "-" then
      return "comment"
    else
      i = i + 1
    end
  end
  return nil
end

local function channel_names(env)
  local r = rawget(env, "root")
  if type(r) ~= "table" or getmetatable(r) ~= ac.Root then
    return {}
  end
  local ok, names = pcall(r.channel_names, r)
  return ok and type(names) == "table" and names or {}
end

--- Tab completion. `text` is the word before the cursor (readline splits
--- words at spaces, operators, quotes, "." and ":"), `line` the input up to
--- the cursor and `start` the 0-based offset of `text` in it. Returns the
--- sorted candidates (each a replacement for `text`) and the string to add
--- after a unique one: "(" after a function, the closing quote after a
--- channel name, " " after a keyword.
function M.complete(env, text, line, start)
  local before = line:sub(1, start)
  local q, content, head = open_string(before)
  if q == "comment" then
    return {}, ""
  end
  if q then
    -- A channel name as the argument of root:channel( / ch( / root:init(.
    head = head:gsub("%s+$", "")
    if not (head:match("channel%s*%(?$") or head:match("%f[%w_]ch%s*%(?$")
        or head:match("[:.]init%s*%(?$")) then
      return {}, ""
    end
    local inner = content .. text
    local out = {}
    for _, name in ipairs(channel_names(env)) do
      if name:sub(1, #inner) == inner then
        out[#out + 1] = name:sub(#content + 1)
      end
    end
    table.sort(out)
    return out, q
  end

  local sep = before:sub(-1)
  local found, seen = {}, {}
  if sep == "." or sep == ":" then
    local base = before:sub(1, -2)
    if sep == "." and base:match("%d$") and not base:match("[%a_][%w_]*$") then
      return {}, ""             -- a number such as 1.5
    end
    local v = resolve(env, base)
    if v == nil then
      return {}, ""
    end
    members(v, sep, text, found, seen)
  else
    if before:match("[%w_]$") then
      return {}, ""
    end
    members(env, ".", text, found, seen)
    for k in pairs(pretty.keywords) do
      if k:sub(1, #text) == text and not seen[k] then
        found[#found + 1] = { k, nil, true }
      end
    end
  end
  table.sort(found, function(a, b)
    return a[1] < b[1]
  end)
  local out = {}
  for i, f in ipairs(found) do
    out[i] = f[1]
  end
  local append = ""
  if #found == 1 then
    if type(found[1][2]) == "function" then
      append = "("
    elseif found[1][3] then
      append = " "
    end
  end
  return out, append
end

-- ------------------------------------------------------------ evaluation

--- The error message of a failed chunk: error objects as "CODE: message",
--- then the traceback of the chunk, cut where the REPL called it.
local function traceback(e)
  local msg
  if type(e) == "string" then
    msg = e
  elseif type(e) == "table" and getmetatable(e) == nil and e.code and e.message then
    msg = tostring(e.code) .. ": " .. tostring(e.message)
  else
    local mt = getmetatable(e)
    if type(mt) == "table" and mt.__tostring then
      local ok, s = pcall(tostring, e)
      msg = ok and s or "(error object is a " .. type(e) .. " value)"
    elseif type(e) == "table" and e.code and e.message then
      msg = tostring(e.code) .. ": " .. tostring(e.message)
    else
      msg = "(error object is a " .. type(e) .. " value)"
    end
  end
  -- The first xpcall below the error is the REPL's (one in the user's
  -- code would have caught the error).
  local tb = debug.traceback(msg, 2)
  local cut = tb:find("\n\t[C]: in function 'xpcall'", 1, true)
  return cut and tb:sub(1, cut - 1) or tb
end

--- Text lua.c would print for the results of a chunk (nothing when there
--- are none): values separated by tabs, strings raw, the rest pretty.
function M.format_results(res, opts)
  if res.n == 0 then
    return nil
  end
  local parts = {}
  for i = 1, res.n do
    local v = res[i]
    parts[i] = type(v) == "string" and v or pretty.format(v, opts)
  end
  return table.concat(parts, "\t")
end

local function is_interrupt(e)
  return type(e) == "table" and e.code == "INTERRUPTED"
end

-- ------------------------------------------------------------- the loop

--- Set the session globals in `env` (see the header).
function M.install_globals(env, root)
  env.ac = ac
  env.root = root
  env.json = require "agentchat.json"
  env.pp = function(v, opts)
    io.stdout:write(pretty.format(v, opts), "\n")
  end
  env.ch = function(name)
    local r = rawget(env, "root")
    if type(r) ~= "table" or getmetatable(r) ~= ac.Root then
      error("ch: the global 'root' is not a root (ac.open(path) makes one)", 2)
    end
    local c, msg, code, exit = r:channel(name)
    if not c then
      error(errors.new(code, msg, exit), 2)
    end
    return c
  end
end

--- Run the loop. opts: root (path or nil), history (path, false for none,
--- nil for the default), env (default _G), interactive (default: stdin is
--- a terminal). Returns the exit code: 0, or in non-interactive mode 1 when
--- a chunk failed.
function M.run(opts)
  opts = opts or {}
  local env = opts.env or _G
  local interactive = opts.interactive
  if interactive == nil then
    interactive = sys.isatty(0) and true or false
  end
  local editing = interactive and rl.available
  local plain = not editing

  local root, msg, code = ac.open(opts.root)
  if not root then
    io.stderr:write(errors.line(code or "ERROR", msg or "cannot open the root") .. "\n")
    return 1
  end
  M.install_globals(env, root)

  local history = editing and M.history_path(opts.history) or nil
  local warned = false
  local function history_warn(m)
    if not warned then
      warned = true
      io.stderr:write("agent-chat: warning: " .. tostring(m) .. " (history not saved)\n")
    end
  end
  if history then
    local ok, m = rl.read_history(history)
    if not ok then
      history_warn(m)
    end
  end
  local last_saved
  local function save(line)
    if not editing or line:match("^%s*$") or line == last_saved then
      return
    end
    last_saved = line
    rl.add_history(line)
    if history and not warned then
      local ok, m = rl.append_history(history)
      if not ok then
        history_warn(m)
      end
    end
  end
  if editing then
    rl.set_completer(function(text, line, start)
      return M.complete(env, text, line, start)
    end)
  end

  local function read(first)
    local prompt
    if interactive then
      local p = rawget(env, first and "_PROMPT" or "_PROMPT2")
      prompt = p ~= nil and tostring(p) or (first and "> " or ">> ")
    end
    return rl.readline(prompt, plain)
  end

  -- One chunk (lua.c loadline): a function, or nil and a syntax error, or
  -- "eof" / "cancel".
  local function load_chunk()
    local line = read(true)
    if line == nil then
      return "eof"
    elseif line == false then
      return "cancel"
    end
    local src = line
    if src:sub(1, 1) == "=" then
      src = "return " .. src:sub(2)
    end
    local f = load("return " .. src .. ";", M.CHUNKNAME, "t", env)
    if f then
      save(line)
      return f
    end
    local buf, text = src, line
    while true do
      local g, err = load(buf, M.CHUNKNAME, "t", env)
      if g or not err:find("<eof>$") then
        save(text)
        return g, err
      end
      local more = read(false)
      if more == nil then
        save(text)
        return g, err
      elseif more == false then
        return "cancel"
      end
      buf = buf .. "\n" .. more
      text = text .. "\n" .. more
    end
  end

  local failed = false
  local function report(m)
    io.stdout:flush()
    io.stderr:write("agent-chat: " .. m .. "\n")
    io.stderr:flush()
    failed = true
  end

  -- Read, evaluate, print. Returns false at end of input.
  local function step()
    local f, err = load_chunk()
    if f == "eof" then
      return false
    elseif f == "cancel" then
      return true
    elseif not f then
      report(err)
      return true
    end
    local res = table.pack(xpcall(f, traceback))
    if not res[1] then
      if interactive and type(res[2]) == "string" and res[2]:find("^INTERRUPTED:") then
        io.stdout:write("\n")    -- the terminal echoed ^C on the line
      end
      report(res[2])
      return true
    end
    local out = M.format_results(table.pack(table.unpack(res, 2, res.n)))
    if out then
      io.stdout:write(out, "\n")
    end
    io.stdout:flush()
    return true
  end

  if interactive then
    local n = root:channel_names()
    io.stdout:write(string.format(
      "agent-chat %s REPL (%s), root %s (%s)\n"
      .. "ac, root, ch(name), pp(value), json are ready; Tab completes; Ctrl-D exits.\n",
      ac.version, _VERSION, root.path,
      n and (#n .. " channel" .. (#n == 1 and "" or "s")) or "not readable"))
    io.stdout:flush()
  end
  while true do
    rl.clear_interrupt()
    -- Ctrl-C may land anywhere, even between two chunks: never let it end
    -- the loop (the stop hook raises an INTERRUPTED error object).
    local ok, more = xpcall(step, traceback)
    if not ok then
      if is_interrupt(more) or (type(more) == "string" and more:find("^INTERRUPTED:")) then
        io.stdout:flush()
        io.stderr:write("agent-chat: INTERRUPTED: cancelled by user\n")
      else
        report("internal error: " .. tostring(more))
      end
    elseif not more then
      break
    end
    if sys.interrupted() == 15 then   -- SIGTERM: main.c re-raises it
      break
    end
  end
  if interactive then
    io.stdout:write("\n")
  end
  io.stdout:flush()
  rl.set_completer(nil)
  if history and not warned then
    rl.truncate_history(history, M.HISTORY_MAX)
  end
  if sys.interrupted() == 15 then
    return 143
  end
  return (failed and not interactive) and 1 or 0
end

return M
