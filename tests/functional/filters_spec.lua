-- Filters and budgets for agents (issue 13, item 4; docs/format.md "Message
-- kinds"): --kind on read, wait, inbox and peek (and hooks.kinds for the
-- hooks' counts), so a waiting agent is not woken by audit traffic; and
-- --max-messages / --max-bytes on read and inbox, which print at most that
-- much, say how much is left and move the cursor only past what was shown.
-- The defaults stay what they were. Also the stop hook's opt-in block mode
-- (item 3).
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local function cursor(root, ch, agent)
  return F.read(root .. "/" .. ch .. "/.cursors/" .. agent .. ".txt")
end

-- A channel whose first messages are audit traffic: #1 task.created, #2
-- lease.claimed (by lead), then an event #3.
local function busy_channel()
  local root = F.new_root()
  F.init(root, "c")
  F.ok(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "build" })
  F.ok(root, { "task", "claim", "c", "t1", "--as", "lead" })
  F.ok(root, { "event", "post", "c", "--from", "lead", "--type", "status", "--harness", "test",
               "--status", "busy" })
  return root
end

describe("--kind", function()
  local root

  before_each(function()
    root = busy_channel()
  end)

  it("wait --kind message is not woken by audit and event traffic; the default still is", function()
    local r = F.ac(root, { "wait", "c", "--as", "bob", "--kind", "message", "--timeout", "0.2",
                           "--interval", "0.05" })
    assert.equal(2, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.equal("(timeout after 0.2s: no new messages for bob in 'c')\n", r.stderr)
    r = F.ac(root, { "wait", "c", "--as", "carol", "--timeout", "5" })
    assert.equal(0, r.code, F.describe(r))
    assert.same({ 1, 2, 3 }, F.seqs(r.stdout))
  end)

  it("wait --kind message sleeps through audit posted meanwhile and prints the peer message", function()
    local r = F.background(root,
      "wait c --as bob --kind message --timeout 20 --interval 0.05",
      [["$A" task update c t1 --as lead --title renamed >/dev/null
sleep 0.3
"$A" event post c --from lead --type status --harness test --status idle >/dev/null
sleep 0.3
"$A" post c --from alice --to bob --title ping --body hello >/dev/null]], 0.3)
    assert.equal(0, r.code, r.stderr)
    assert.same({ 6 }, F.seqs(r.stdout))
    assert.equal("6", cursor(root, "c", "bob"))
  end)

  it("read --kind picks kinds; the others are skipped like messages for others", function()
    F.post(root, "c", "alice", "hello", "x")
    assert.same({ 1, 2 }, F.seqs(F.ok(root, { "read", "c", "--as", "bob", "--kind", "audit", "--peek" }).stdout))
    assert.same({ 3, 4 }, F.seqs(F.ok(root, { "read", "c", "--as", "bob", "--kind", "event", "--kind", "message",
                                              "--peek" }).stdout))
    assert.same({ 4 }, F.seqs(F.ok(root, { "read", "c", "--as", "bob", "--kind", "message" }).stdout))
    assert.equal("4", cursor(root, "c", "bob"))
    -- the default is every kind, as before
    assert.same({ 1, 2, 3, 4 }, F.seqs(F.ok(root, { "read", "c", "--as", "carol" }).stdout))
  end)

  it("an unknown kind is a usage error", function()
    local r = F.ac(root, { "read", "c", "--as", "bob", "--kind", "chat" })
    assert.equal(2, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
    assert.truthy(r.stderr:find("invalid choice: 'chat'", 1, true), r.stderr)
  end)

  it("peek --kind shows the last N of those kinds", function()
    F.post(root, "c", "alice", "hello", "x")
    assert.same({ 2 }, F.seqs(F.ok(root, { "peek", "c", "-n", "1", "--kind", "audit" }).stdout))
    assert.same({ 1, 2 }, F.seqs(F.ok(root, { "peek", "c", "-n", "5", "--kind", "audit" }).stdout))
    assert.same({ 3, 4 }, F.seqs(F.ok(root, { "peek", "c", "-n", "2" }).stdout))
    local r = F.ok(root, { "peek", "c", "--kind", "event", "--kind", "message", "-n", "9" })
    assert.same({ 3, 4 }, F.seqs(r.stdout))
    F.init(root, "d")
    F.ok(root, { "task", "create", "d", "t1", "--from", "lead", "--title", "build" })
    assert.equal("(no message messages in 'd')\n", F.ok(root, { "peek", "d", "--kind", "message" }).stdout)
  end)

  it("inbox --kind message shows peer messages only", function()
    F.post(root, "c", "alice", "hello", "x", "--to", "bob")
    local r = F.ok(root, { "inbox", "--as", "bob", "--kind", "message" })
    assert.same({ 4 }, F.seqs(r.stdout))
    assert.equal("4", cursor(root, "c", "bob"))
  end)

  it("the hooks count only hooks.kinds (root config), or $AGENT_CHAT_HOOK_KINDS", function()
    local env = { AGENT_CHAT_NAME = "bob" }
    local r = F.ok(root, { "hook", "prompt" }, env)
    assert.equal("[agent-chat] bob has unread peer messages: #c (3). Run /agent-chat to read/reply.\n", r.stdout)
    F.write(root .. "/agent-chat.yaml", "hooks:\n  kinds: [message]\n")
    assert.equal("", F.ok(root, { "hook", "prompt" }, env).stdout)
    assert.equal("", F.ok(root, { "hook", "session-start" }, env).stdout)
    F.post(root, "c", "alice", "hello", "x", "--to", "bob")
    r = F.ok(root, { "hook", "prompt" }, env)
    assert.equal("[agent-chat] bob has unread peer messages: #c (1). Run /agent-chat to read/reply.\n", r.stdout)
    env.AGENT_CHAT_HOOK_KINDS = "audit, event"
    r = F.ok(root, { "hook", "prompt" }, env)
    assert.equal("[agent-chat] bob has unread peer messages: #c (3). Run /agent-chat to read/reply.\n", r.stdout)
  end)
end)

describe("the stop hook's block mode", function()
  local root
  local active = '{"session_id":"s","hook_event_name":"Stop","stop_hook_active":true}'
  local first = '{"session_id":"s","hook_event_name":"Stop","stop_hook_active":false}'
  local NOTE = '{"systemMessage":"[agent-chat] Your turn is ending with unread peer messages: #c (%d). '
    .. 'Run /agent-chat to read/reply."}\n'

  before_each(function()
    root = busy_channel()
  end)

  local function stop(env, stdin)
    env.AGENT_CHAT_NAME = "bob"
    local r = F.run({ "--root", root, "hook", "stop" }, { env = env, stdin = stdin })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    return r.stdout
  end

  it("is off by default: the stop hook prints its systemMessage, whatever the input", function()
    F.post(root, "c", "alice", "hello", "x", "--to", "bob")
    assert.equal(NOTE:format(4), stop({}, first))
  end)

  it("blocks the end of the turn while peer messages for the agent are unread", function()
    F.post(root, "c", "alice", "hello", "x", "--to", "bob")
    local want = '{"decision":"block","reason":"[agent-chat] bob has unread peer messages: #c (1). Read '
      .. 'them before you end your turn (agent-chat read c --as bob --kind message, or /agent-chat) and '
      .. 'answer what needs an answer."}\n'
    assert.equal(want, stop({ AGENT_CHAT_STOP_HOOK = "block" }, first))
    assert.equal(want, stop({ AGENT_CHAT_STOP_HOOK = "block" }, ""))     -- no input: not active
    F.write(root .. "/agent-chat.yaml", "hooks:\n  stop: block\n")
    assert.equal(want, stop({}, first))
  end)

  it("never blocks twice in a row: with stop_hook_active it only notifies", function()
    F.post(root, "c", "alice", "hello", "x", "--to", "bob")
    assert.equal(NOTE:format(4), stop({ AGENT_CHAT_STOP_HOOK = "block" }, active))
  end)

  it("does not block for audit and event traffic, and is silent once everything is read", function()
    assert.equal(NOTE:format(3), stop({ AGENT_CHAT_STOP_HOOK = "block" }, first))
    F.ok(root, { "read", "c", "--as", "bob" })
    assert.equal("", stop({ AGENT_CHAT_STOP_HOOK = "block" }, first))
  end)

  it("a bad setting is skipped, never a failure", function()
    F.post(root, "c", "alice", "hello", "x", "--to", "bob")
    assert.equal(NOTE:format(4), stop({ AGENT_CHAT_STOP_HOOK = "sometimes" }, "{not json"))
  end)
end)

describe("--max-messages and --max-bytes", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
    for i = 1, 5 do
      F.post(root, "c", "alice", "m" .. i, string.rep("x", i * 10), "--to", i == 3 and "carol" or "all")
    end
  end)

  it("read prints at most N messages, says how many are left, and the next read goes on", function()
    local r = F.ok(root, { "read", "c", "--as", "bob", "--max-messages", "2" })
    assert.same({ 1, 2 }, F.seqs(r.stdout))
    assert.truthy(r.stdout:find("\n%(2 more messages for bob in 'c' not shown %(%-%-max%-messages 2%)"), r.stdout)
    assert.equal("3", cursor(root, "c", "bob"))      -- #3 is for carol: passed
    r = F.ok(root, { "read", "c", "--as", "bob", "--max-messages", "1" })
    assert.same({ 4 }, F.seqs(r.stdout))
    assert.truthy(r.stdout:find("(1 more message for bob in 'c' not shown", 1, true), r.stdout)
    assert.equal("4", cursor(root, "c", "bob"))
    r = F.ok(root, { "read", "c", "--as", "bob", "--max-messages", "5" })
    assert.same({ 5 }, F.seqs(r.stdout))
    assert.is_nil(r.stdout:find("more message", 1, true))
    assert.equal("5", cursor(root, "c", "bob"))
  end)

  it("read --max-bytes prints at most that many bytes of messages", function()
    local all = F.ok(root, { "read", "c", "--as", "bob", "--peek" }).stdout
    local blocks = {}
    for block in all:gmatch(F.RULE .. "\n.-\n\n") do
      blocks[#blocks + 1] = block
    end
    assert.equal(4, #blocks)
    local limit = #blocks[1] + #blocks[2] + 1
    local r = F.ok(root, { "read", "c", "--as", "bob", "--max-bytes", tostring(limit) })
    assert.same({ 1, 2 }, F.seqs(r.stdout))
    local shown = r.stdout:match("^(.-)%(2 more messages")
    assert.truthy(shown and #shown <= limit, r.stdout)
    assert.equal(blocks[1] .. blocks[2], shown)
    assert.equal("3", cursor(root, "c", "bob"))
  end)

  it("a message bigger than --max-bytes is not cut: nothing is shown and the cursor stays", function()
    local r = F.ok(root, { "read", "c", "--as", "bob", "--max-bytes", "50" })
    assert.same({}, F.seqs(r.stdout))
    assert.truthy(r.stdout:find("^%(4 more messages for bob in 'c' not shown: the next, #1, is %d+ bytes, "
      .. "more than %-%-max%-bytes 50"), r.stdout)
    assert.equal("0", cursor(root, "c", "bob"))
  end)

  it("inbox budgets the merged list; each channel's cursor stops before what was held back", function()
    F.init(root, "d")
    F.post(root, "d", "dave", "d1", "y")
    F.post(root, "d", "dave", "d2", "y")
    local seen = {}
    for _ = 1, 10 do
      local r = F.ok(root, { "inbox", "--as", "bob", "--max-messages", "2" })
      for ch, seq in r.stdout:gmatch("\n#(%a)\n%-%-%-\nseq: (%d+)\n") do
        seen[#seen + 1] = ch .. seq
      end
      if r.stdout:find("^%(no new messages") then
        break
      end
      assert.truthy(#F.seqs(r.stdout) <= 2, r.stdout)
    end
    table.sort(seen)
    assert.same({ "c1", "c2", "c4", "c5", "d1", "d2" }, seen)
  end)

  it("a budget that is not a positive int is a usage error", function()
    for _, v in ipairs({ "0", "-1", "x" }) do
      local r = F.ac(root, { "read", "c", "--as", "bob", "--max-messages", v })
      assert.equal(2, r.code, F.describe(r))
      assert.truthy(r.stderr:find("invalid positive int value", 1, true), r.stderr)
    end
  end)
end)
