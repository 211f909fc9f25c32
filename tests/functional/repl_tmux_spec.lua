-- Acceptance test of `agent-chat repl` as a person uses it (issue 6): in a
-- real terminal, tmux. The spec starts a detached tmux server of its own
-- (private socket, no user config) with a 120x40 window running the REPL
-- with a temporary HOME and root, types with send-keys and reads the screen
-- with capture-pane. Every check polls the screen until the expected text
-- shows up or a timeout passes (no fixed sleeps), and a failure prints the
-- screen. Pending when tmux is not installed or the build has no readline.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local sys = require "agentchat.sys"

local TIMEOUT = 10   -- seconds per screen check (generous for sanitizer builds)

local function have_tmux()
  return os.execute("command -v tmux >/dev/null 2>&1") == true
end

describe("agent-chat repl in a terminal (tmux)", function()
  if not have_tmux() then
    pending("tmux is not installed (apt-get install tmux): the terminal acceptance test cannot run")
    return
  end
  if not require("agentchat.readline").available then
    pending("this build has no readline (install libreadline-dev and rebuild): no line editing to test")
    return
  end

  local dir, sock, root, home, state
  local session = "repl"

  local function sh(cmd)
    local p = io.popen(cmd .. " 2>&1")
    local out = p:read("a")
    local ok = p:close()
    return ok, out
  end

  local function tmux(...)
    local words = {}
    for i, w in ipairs({ ... }) do
      words[i] = F.sh(w)
    end
    return sh("tmux -S " .. F.sh(sock) .. " " .. table.concat(words, " "))
  end

  local function screen()
    local _, out = tmux("capture-pane", "-p", "-t", session)
    return out
  end

  -- Lines of the screen without the trailing blank ones.
  local function lines()
    local out = F.lines(screen())
    while #out > 0 and out[#out]:match("^%s*$") do
      out[#out] = nil
    end
    return out
  end

  local function last_line()
    local l = lines()
    return l[#l] or ""
  end

  -- Poll until pred(screen) is true; fail with the screen after TIMEOUT.
  local function wait_until(what, pred)
    local deadline = sys.monotonic() + TIMEOUT
    while true do
      local s = screen()
      if pred(s) then
        return s
      end
      if sys.monotonic() > deadline then
        error("timed out waiting for " .. what .. "; the screen:\n" .. s, 2)
      end
      sys.sleep(0.05)
    end
  end

  local function wait_for(text)
    return wait_until(("%q"):format(text), function(s)
      return s:find(text, 1, true) ~= nil
    end)
  end

  local function wait_last_line(text)
    return wait_until("last line " .. ("%q"):format(text), function()
      return last_line() == text
    end)
  end

  -- The row of the pane's cursor (0 is the top).
  local function cursor_row()
    local _, out = tmux("display-message", "-p", "-t", session, "#{cursor_y}")
    return tonumber(out:match("%d+"))
  end

  -- Type literal text (no key names), then press the named keys.
  local function type_text(text)
    assert(tmux("send-keys", "-t", session, "-l", text))
  end

  local function press(...)
    assert(tmux("send-keys", "-t", session, ...))
  end

  local function start_repl()
    local cmd = table.concat({
      "env -u AGENT_CHAT_ROOT -u XDG_STATE_HOME -u AGENT_CHAT_LUA_PATH",
      "HOME=" .. F.sh(home), "TERM=screen", "LC_ALL=C.UTF-8", "INPUTRC=/dev/null",
      F.sh(F.bin), "--root", F.sh(root), "repl;",
      "echo REPL-EXIT=$?; sleep 600",
    }, " ")
    local ok, out = tmux("-f", "/dev/null", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", cmd)
    assert(ok, out)
    wait_for("Ctrl-D exits.")
    wait_last_line(">")
  end

  local function stop_server()
    if sock then
      tmux("kill-server")
    end
  end

  setup(function()
    dir = F.tmpdir()
    sock = dir .. "/tmux.sock"
    home = dir .. "/home"
    root = dir .. "/chat"
    state = home .. "/.local/state/agent-chat/repl_history"
    assert(os.execute("mkdir -p " .. F.sh(home)))
    F.init(root, "dev", "--members", "alice,bob", "--topic", "Release planning")
    F.init(root, "ops")
    F.post(root, "dev", "alice", "Kickoff", "Can you take the parser?", "--to", "bob")
    F.post(root, "dev", "bob", "Re: Kickoff", "Yes.", "--to", "alice", "--reply", "1")
  end)

  teardown(stop_server)

  it("starts, calls the API, pretty-prints, recalls history, completes, and exits on Ctrl-D", function()
    start_repl()
    local banner = screen()
    assert.truthy(banner:find("agent-chat " .. require("agentchat").version .. " REPL", 1, true), banner)
    assert.truthy(banner:find("root " .. root .. " (2 channels)", 1, true), banner)

    -- An expression prints its value.
    type_text("6 * 7")
    press("Enter")
    wait_for("\n42\n")

    -- Call the API: a channel's last two messages as a pretty table.
    type_text('root:channel("dev"):peek(2)')
    press("Enter")
    local s = wait_for("  skipped = {}\n}")
    assert.truthy(s:find('\n      title = "Re: Kickoff",\n', 1, true), s)
    assert.truthy(s:find('\n      to = "alice",\n', 1, true), s)
    assert.truthy(s:find('\n      body = "Yes.\\n",\n', 1, true), s)
    assert.falsy(s:find("\27", 1, true))
    wait_last_line(">")

    -- History: Up recalls the last line, Up again the one before; Enter
    -- runs it again.
    press("C-l")
    wait_until("a cleared screen", function()
      return #lines() == 1
    end)
    press("Up")
    wait_last_line('> root:channel("dev"):peek(2)')
    press("Up")
    wait_last_line("> 6 * 7")
    press("Enter")
    wait_until("42 again", function()
      local l = lines()
      return l[1] == "> 6 * 7" and l[2] == "42" and l[3] == ">"
    end)

    -- Completion of API names: root:chan<Tab> -> root:channel; then
    -- (readline's usual rule) Tab rings the bell and a second one lists
    -- the alternatives.
    press("C-l")
    wait_until("a cleared screen", function()
      return #lines() == 1
    end)
    type_text("root:chan")
    press("Tab")
    wait_last_line("> root:channel")
    press("Tab", "Tab")
    s = wait_for("channel_names")
    assert.truthy(s:find("channels", 1, true), s)
    -- A channel name inside the string, then a method of the channel.
    type_text('("d')
    press("Tab")
    wait_last_line('> root:channel("dev"')
    type_text("):ros")
    press("Tab")
    wait_last_line('> root:channel("dev"):roster(')
    type_text(")")
    press("Enter")
    s = wait_for("topic = \"Release planning\"")
    assert.truthy(s:find('members = { "alice", "bob" }', 1, true), s)

    -- Ctrl-C cancels the line being typed; the REPL goes on.
    press("C-l")
    wait_until("a cleared screen", function()
      return #lines() == 1
    end)
    type_text("this line is abandoned")
    -- Ctrl-C is a signal: the terminal flushes input the REPL has not read
    -- yet, so press it only once the text is on the line.
    wait_last_line("> this line is abandoned")
    press("C-c")
    wait_for("> this line is abandoned^C\n>")
    type_text("1 + 1")
    press("Enter")
    wait_until("2 after Ctrl-C", function()
      local l = lines()
      return l[#l - 1] == "2" and l[#l] == ">"
    end)

    -- Ctrl-C also stops a running chunk: one message, and the REPL goes on.
    press("C-l")
    wait_until("a cleared screen", function()
      return #lines() == 1
    end)
    type_text("while true do end")
    press("Enter")
    -- Running: the Enter was read (the cursor left the prompt's row).
    wait_last_line("> while true do end")
    wait_until("the chunk running", function()
      return cursor_row() == 1
    end)
    press("C-c")
    wait_for("agent-chat: INTERRUPTED: cancelled by user\nstack traceback:\n")
    wait_last_line(">")
    type_text("1 + 1")
    press("Enter")
    wait_until("2 after the interrupted chunk", function()
      local l = lines()
      return l[#l - 1] == "2" and l[#l] == ">"
    end)

    -- Ctrl-D exits 0 and the history file has what was typed.
    press("C-d")
    wait_for("REPL-EXIT=0")
    local hist = F.read(state)
    assert.truthy(hist, "no history file at " .. state)
    assert.truthy(hist:find("6 * 7\n", 1, true), hist)
    assert.truthy(hist:find('root:channel("dev"):peek(2)\n', 1, true), hist)
    assert.truthy(hist:find('root:channel("dev"):roster()\n', 1, true), hist)
    assert.falsy(hist:find("abandoned", 1, true), hist)
  end)

  it("a new session recalls the history of the last one", function()
    stop_server()
    start_repl()
    press("Up")
    wait_last_line("> 1 + 1")
    press("Up")
    wait_last_line("> while true do end")
    press("C-u")
    wait_last_line(">")
    press("C-d")
    wait_for("REPL-EXIT=0")
  end)
end)
