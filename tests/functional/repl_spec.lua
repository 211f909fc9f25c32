-- Functional specs for `agent-chat repl` with stdin not a terminal (a
-- pipe): the scripted mode. No banner, no prompts, no escape codes; values
-- on stdout, errors with a traceback on stderr; the loop goes on after an
-- error and the exit code says whether any chunk failed. The terminal mode
-- is tested in tmux by repl_tmux_spec.lua.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

describe("agent-chat repl (stdin not a terminal)", function()
  local root

  before_each(function()
    root = F.new_root()
  end)

  local function repl(input, argv, opts)
    opts = opts or {}
    opts.stdin = input
    local words = { "--root", root, "repl" }
    for _, w in ipairs(argv or {}) do
      words[#words + 1] = w
    end
    return F.run(words, opts)
  end

  it("prints the values of expressions like lua's REPL, and nothing for statements", function()
    local r = repl('1 + 1\n"text"\nx = 41\nx + 1\n=x, nil, "s"\nprint("printed")\nnil\n')
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    assert.equal("2\ntext\n42\n41\tnil\ts\nprinted\nnil\n", r.stdout)
  end)

  it("reads multi-line chunks until they are complete", function()
    local r = repl(table.concat({
      "function twice(n)",
      "  local r = n * 2",
      "  return r",
      "end",
      "twice(21)",
      "t = {",
      "  a = 1,",
      "}",
      "t.a",
      "for i = 1, 3 do",
      "  io.write(i, ' ')",
      "end print()",
      "",
    }, "\n"))
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    assert.equal("42\n1\n1 2 3 \n", r.stdout)
  end)

  it("reports an error with a traceback and goes on; exit 1 at the end", function()
    local r = repl(table.concat({
      "function boom() error('kaput') end",
      "boom()",
      "'still here'",
      "error({code = 'E_X', message = 'structured'})",
      "x = = 1",
      "'and here'",
      "",
    }, "\n"))
    assert.equal(1, r.code, F.describe(r))
    assert.equal("still here\nand here\n", r.stdout)
    local e = r.stderr
    assert.truthy(e:find("agent-chat: stdin:1: kaput\nstack traceback:\n", 1, true), e)
    assert.truthy(e:find("in function 'boom'", 1, true), e)
    assert.truthy(e:find("stdin:1: in main chunk", 1, true), e)
    assert.truthy(e:find("agent-chat: E_X: structured\nstack traceback:\n", 1, true), e)
    assert.truthy(e:find("agent-chat: stdin:1: unexpected symbol near '='\n", 1, true), e)
    -- The REPL's own frames are cut from the traceback.
    assert.falsy(e:find("xpcall", 1, true), e)
    assert.falsy(e:find("INTERNAL", 1, true), e)
  end)

  it("reports a chunk left incomplete at end of input", function()
    local r = repl("for i = 1, 2 do\n  print(i)\n")
    assert.equal(1, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.equal("agent-chat: stdin:2: 'end' expected (to close 'for' at line 1) near <eof>\n", r.stderr)
  end)

  it("has ac, root, ch, pp and json ready; root follows --root", function()
    F.init(root, "dev", "--members", "alice,bob", "--topic", "Rel")
    local r = repl(table.concat({
      "ac.version == require('agentchat').version",
      "root.path",
      "ch('dev')",
      "ch('dev'):roster()",
      "pp({b = 2, a = json.null})",
      "ch('nope')",
      "",
    }, "\n"))
    assert.equal(1, r.code, F.describe(r))
    assert.equal(table.concat({
      "true",
      root,
      "agentchat.channel (dev)",
      '{ channel = "dev", members = { "alice", "bob" }, messages = 0, topic = "Rel" }',
      "{ a = null, b = 2 }",
      "",
    }, "\n"), r.stdout)
    assert.truthy(r.stderr:find("^agent%-chat: CHANNEL_NOT_FOUND: channel 'nope' not found"), r.stderr)
  end)

  it("takes the root from $AGENT_CHAT_ROOT without --root", function()
    local r = F.run({ "repl" }, { root = root, stdin = "root.path\n" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(root .. "\n", r.stdout)
  end)

  it("pretty-prints a channel's messages", function()
    F.init(root, "dev", "--members", "alice,bob")
    F.post(root, "dev", "alice", "Kickoff", "Can you take the parser?", "--to", "bob")
    F.post(root, "dev", "bob", "Re: Kickoff", "Yes.", "--to", "alice", "--reply", "1")
    local r = repl('b = ch("dev"):peek(2)\nb.count\nb.messages[2].fields\nb\n')
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    local out = F.lines(r.stdout)
    assert.equal("2", out[1])
    -- A nested table: sorted keys, two-space indentation, quoted strings.
    assert.equal("{", out[2])
    assert.equal('  channel = "dev",', out[3])
    assert.equal('  from = "bob",', out[4])
    assert.equal('  reply_to = "1",', out[5])
    assert.equal('  seq = "2",', out[6])
    assert.equal('  status = "discussion",', out[7])
    assert.equal('  title = "Re: Kickoff",', out[8])
    assert.equal('  to = "alice",', out[9])
    assert.truthy(out[10]:match('^  ts = "%d%d%d%d%-%d%d%-%d%dT[^"]+"$'), out[10])
    assert.equal("}", out[11])
    -- The whole batch: the messages in seq order, bodies escaped on one line.
    local batch = table.concat(out, "\n", 12)
    local head = '{\n  count = 2,\n  cursor = 2,\n  messages = {\n    {\n      body = "Can you take the parser?\\n",\n'
    assert.equal(head, batch:sub(1, #head))
    assert.truthy(batch:find('\n      title = "Kickoff",\n', 1, true), batch)
    assert.truthy(batch:find('\n      title = "Re: Kickoff",\n', 1, true), batch)
    assert.truthy(batch:find("\n  skipped = {}\n}$"), batch)
    local first = batch:find("Kickoff", 1, true)
    assert.truthy(first < batch:find("Re: Kickoff", 1, true))
  end)

  it("survives cycles and huge tables in results", function()
    local r = repl("t = {name = 't'} t.self = t\nt\nbig = {} for i = 1, 500 do big[i] = i end\nbig\n")
    assert.equal(0, r.code, F.describe(r))
    local out = F.lines(r.stdout)
    assert.equal('{ name = "t", self = <cycle> }', out[1])
    assert.truthy(r.stdout:find("... (400 more)", 1, true), r.stdout)
  end)

  it("writes no history and no escape codes", function()
    local r = repl("1\n", {}, { env = { XDG_STATE_HOME = F.home .. "/state" } })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("1\n", r.stdout)
    assert.falsy(r.stdout:find("\27", 1, true))
    assert.is_nil(F.read(F.home .. "/state/agent-chat/repl_history"))
  end)

  it("exits 0 on empty input and shows its help", function()
    local r = repl("")
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stdout .. r.stderr)
    r = F.run({ "repl", "-h" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("^usage: agent%-chat repl %[%-h%] %[%-%-history FILE%] %[%-%-no%-history%]"),
      r.stdout)
    r = F.run({ "repl", "extra" })
    assert.equal(2, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr))
  end)

  it("a Ctrl-C (SIGINT) while evaluating cancels the chunk, not the REPL", function()
    -- The first chunk spins until SIGINT; the next ones must still run.
    local dir = F.tmpdir()
    local code = F.shell([[
mkfifo "$1/in"
"$A" --root "$2" repl <"$1/in" >"$1/out" 2>"$1/err" &
pid=$!
exec 3>"$1/in"
printf '%s\n' 'io.write("spinning\n") io.stdout:flush() while true do end' >&3
i=0
while ! grep -q spinning "$1/out" 2>/dev/null; do
  i=$((i+1)); [ $i -gt 200 ] && break; sleep 0.05
done
kill -INT $pid
echo '"after"' >&3
exec 3>&-
wait $pid
echo $? >"$1/code"
]], nil, dir, root)
    assert.equal(0, code)
    assert.equal("spinning\nafter\n", F.read(dir .. "/out"))
    assert.truthy(F.read(dir .. "/err"):find("^agent%-chat: INTERRUPTED: cancelled by user\n"),
      F.read(dir .. "/err"))
    assert.equal("1\n", F.read(dir .. "/code"))
  end)

  it("SIGTERM while waiting for input ends quietly, killed by SIGTERM", function()
    local dir = F.tmpdir()
    local code = F.shell([[
mkfifo "$1/in"
"$A" --root "$2" repl <"$1/in" >"$1/out" 2>"$1/err" &
pid=$!
exec 3>"$1/in"
printf '%s\n' '"ready"' >&3
i=0
while ! grep -q ready "$1/out" 2>/dev/null; do
  i=$((i+1)); [ $i -gt 200 ] && break; sleep 0.05
done
kill -TERM $pid
{ wait $pid; echo $? >"$1/code"; } 2>/dev/null   # no "Terminated" notice
exec 3>&-
]], nil, dir, root)
    assert.equal(0, code)
    assert.equal("ready\n", F.read(dir .. "/out"))
    assert.equal("", F.read(dir .. "/err"))
    assert.equal("143\n", F.read(dir .. "/code"))
  end)
end)
