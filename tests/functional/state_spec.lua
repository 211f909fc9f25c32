-- Functional specs for `state` and `compact` (docs/format.md 2.3, 3.8): a golden
-- channel built by hand (tests/fixtures/state/proj: decisions by status,
-- title, `type:` and heading; blockers by title, status and heading;
-- verification messages and a done task with its completing audit
-- message; open, blocked, cancelled and done tasks; a lease; a live and an
-- expired path lock; audit and event messages that must not be
-- classified) rendered byte for byte against tests/golden/, determinism,
-- compact's file and audit message, lenient and --strict reads, a pending
-- lock journal, and user templates: the example, and hostile ones that
-- must fail with one coded line and write nothing.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local json = require "agentchat.json"

local FIXTURE = H.repo .. "/tests/fixtures/state/proj"
local GOLDEN_MD = H.read(H.repo .. "/tests/golden/state-proj.md")
local GOLDEN_JSON = H.read(H.repo .. "/tests/golden/state-proj.json")
local EXAMPLE = H.repo .. "/examples/state-brief.lua"

--- A fresh root holding a copy of the fixture channel `proj`.
local function fixture()
  local root = F.new_root()
  assert(os.execute("mkdir -p " .. F.sh(root) .. " && cp -R " .. F.sh(FIXTURE) .. " " .. F.sh(root .. "/proj")))
  return root, root .. "/proj"
end

local function ac(root, ...)
  return F.run({ "--root", root, ... })
end

local function ok(r)
  assert(r.code == 0, F.describe(r))
  assert(r.stderr == "", F.describe(r))
  return r
end

--- A one-line coded failure: exit `exit`, stderr "agent-chat: CODE: ...".
local function fails(r, exit, code, msg)
  assert(r.code == exit, F.describe(r))
  assert(r.stdout == "", F.describe(r))
  assert(F.error_line(r.stderr) == nil, F.error_line(r.stderr))
  assert(not F.crashed(r.stderr), F.crashed(r.stderr))
  local want = "agent-chat: " .. code .. ": " .. (msg or "")
  assert(r.stderr:sub(1, #want) == want, "want " .. F.show(want) .. ", " .. F.describe(r))
end

-- The channel's files minus the mutexes every reader creates.
local function files(dir)
  local snap = F.snapshot(dir)
  snap["_tasks.lock"], snap[".path-locks.lock"] = nil, nil
  return snap
end

local function template(body)
  local path = F.tmpdir() .. "/t.lua"
  H.write(path, body)
  return path
end

local function mask_generated(text)
  return (text:gsub('"generated_at": "[^"]*"', '"generated_at": "<generated_at>"'))
end

describe("state of the golden channel", function()
  it("prints the Markdown of docs/format.md 3.8 byte for byte", function()
    local root = fixture()
    local r = ok(ac(root, "state", "proj"))
    assert.are.equal(GOLDEN_MD, r.stdout)
  end)

  it("prints the --json data (indent 2, sorted keys) byte for byte", function()
    local root = fixture()
    local r = ok(ac(root, "state", "proj", "--json"))
    assert.are.equal(GOLDEN_JSON, mask_generated(r.stdout))
    local data = json.loads(r.stdout)
    assert.truthy(data.generated_at:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d+[+-]%d%d:%d%d$"),
      data.generated_at)
  end)

  it("never classifies audit or event messages, whatever their fields say", function()
    local root = fixture()
    local data = json.loads(ok(ac(root, "state", "proj", "--json")).stdout)
    for _, list in ipairs({ data.decisions, data.blockers, data.verification }) do
      for _, item in ipairs(list) do
        assert.are_not.equal("#0009", item.source_id)
        assert.are_not.equal("#0011", item.source_id)
        assert.are_not.equal(9, item.seq)
      end
    end
    -- the done task's evidence comes from its completing audit message
    local task_a
    for _, v in ipairs(data.verification) do
      if v.source_id == "a" then
        task_a = v
      end
    end
    -- (its time is the task's updated_at, as the Python tool shows it)
    assert.are.equal("ivy", task_a.author)
    assert.are.equal("2030-01-01T11:00:00.000000+00:00", task_a.time)
  end)

  it("renders identical bytes every time, and touches nothing without --write", function()
    local root, dir = fixture()
    ok(ac(root, "state", "proj"))
    local before = files(dir)
    local first = ok(ac(root, "state", "proj")).stdout
    for _ = 1, 3 do
      assert.are.equal(first, ok(ac(root, "state", "proj")).stdout)
    end
    assert.are.same({}, F.diff(before, files(dir)))
  end)
end)

describe("compact and state --write", function()
  it("write state.md atomically with the printed summary, identical on re-render", function()
    local root, dir = fixture()
    local printed = ok(ac(root, "state", "proj")).stdout
    local r = ok(ac(root, "compact", "proj", "--no-audit"))
    assert.are.equal("compacted state for proj -> proj/state.md (open_tasks=4, locks=2, decisions=4)\n",
      r.stdout)
    local first = H.read(dir .. "/state.md")
    assert.are.equal(printed, first)
    ok(ac(root, "state", "proj", "--save", "--no-audit"))
    assert.are.equal(first, H.read(dir .. "/state.md"))
    for name in pairs(F.snapshot(dir)) do
      assert.is_nil(name:match("tmp") or name:match("^%.state"), "temp file left: " .. name)
    end
  end)

  it("post state.compacted with the counts of the state before it", function()
    local root, dir = fixture()
    ok(ac(root, "compact", "proj"))
    local text = H.read(dir .. "/0014-system-state-compacted.md")
    assert.truthy(text, "no audit message #14 from system")
    assert.truthy(text:find("\nstatus: state.compacted\ntitle: state.compacted\n---\n", 1, true), text)
    local body = json.loads(text:match("\n%-%-%-\n(.*)$"))
    assert.are.same({ blockers_count = 5, channel = "proj", compacted_at = body.compacted_at,
                      decisions_count = 4, event = "state.compacted", last_seq = 13,
                      open_tasks_count = 4, path_locks_count = 2 }, body)
    ok(ac(root, "state", "proj", "--write", "--actor", "alice"))
    assert.truthy(F.read(dir .. "/0015-alice-state-compacted.md"))
    assert.truthy(H.read(dir .. "/state.md"):find("**Last Message Sequence**: #0014\n", 1, true))
  end)

  it("refuses --write on compact and --template with --json (usage, nothing written)", function()
    local root, dir = fixture()
    local before = files(dir)
    local r = ac(root, "compact", "proj", "--write")
    assert.are.equal(2, r.code, F.describe(r))
    fails(ac(root, "state", "proj", "--json", "--template", EXAMPLE), 2, "USAGE")
    assert.are.same({}, F.diff(before, files(dir)))
  end)
end)

describe("sources that cannot be read", function()
  it("leave out a malformed task record, and --strict fails on it", function()
    local root, dir = fixture()
    H.write(dir .. "/tasks/zz.json", "not json")
    assert.are.equal(GOLDEN_MD, ok(ac(root, "state", "proj")).stdout)
    fails(ac(root, "state", "proj", "--strict"), 1, "STATE_MALFORMED_SOURCE",
      "malformed task source: TASK_INVALID_RECORD: could not read task record zz.json: "
      .. "Expecting value: line 1 column 1 (char 0)")
    fails(ac(root, "compact", "proj", "--strict"), 1, "STATE_MALFORMED_SOURCE")
    assert.is_nil(F.read(dir .. "/state.md"))
  end)

  it("leave out a malformed lock record, and --strict fails on it", function()
    local root, dir = fixture()
    H.write(dir .. "/locks/cccccccccccccccccccccccccccccccc.json", "[]")
    assert.are.equal(GOLDEN_MD, ok(ac(root, "state", "proj")).stdout)
    fails(ac(root, "state", "proj", "--strict"), 1, "STATE_MALFORMED_SOURCE",
      "malformed path-lock source: PATH_LOCK_INVALID_RECORD: ")
  end)

  it("hide the lock a pending path-lock journal concerns", function()
    local root, dir = fixture()
    H.write(dir .. "/locks/.path-lock-transaction.json", json.dumps({
      actor = "bob", after = json.null, before = json.null, event = "path.lock.unlocked",
      operation = "unlock", phase = "prepared", target = string.rep("b", 32) .. ".json",
      transaction_id = string.rep("1", 32), version = 1 }, { indent = 2, sort_keys = true }) .. "\n")
    local data = json.loads(ok(ac(root, "state", "proj", "--json")).stdout)
    assert.are.equal(1, #data.path_locks)
    assert.are.equal(string.rep("a", 32), data.path_locks[1].lock_id)
    assert.are.same({}, data.owners.bob.path_locks)
  end)

  it("report a missing or invalid channel with the state codes", function()
    local root = fixture()
    fails(ac(root, "state", "nochan"), 1, "STATE_CHANNEL_NOT_FOUND", "channel directory not found: 'nochan'")
    fails(ac(root, "compact", "../proj"), 1, "STATE_INVALID_CHANNEL",
      "invalid channel name: '../proj' (invalid channel name (path traversal blocked): '../proj')")
  end)

  it("read a channel folder whose _meta.json is missing as the Python tool does: empty topic and members",
    function()
    -- Python's state looks for the channel's folder, not its _meta.json.
    local root, dir = fixture()
    local want = json.loads(ok(ac(root, "state", "proj", "--json")).stdout)
    want.topic, want.members, want.created_at = "", {}, ""
    os.remove(dir .. "/_meta.json")
    local before = files(dir)
    local got = json.loads(ok(ac(root, "state", "proj", "--json")).stdout)
    got.generated_at, want.generated_at = nil, nil
    assert.same(want, got)
    local md = ok(ac(root, "state", "proj")).stdout
    assert.truthy(md:find("- **Topic**: (none)\n- **Members**: (none)\n", 1, true), md)
    assert.same(before, files(dir))
    -- A folder that is not there at all, or whose _meta.json is a symlink,
    -- is still no channel.
    fails(ac(root, "state", "nochan"), 1, "STATE_CHANNEL_NOT_FOUND", "channel directory not found: 'nochan'")
    assert(os.execute("ln -s /etc/hostname " .. F.sh(dir .. "/_meta.json")))
    fails(ac(root, "state", "proj"), 1, "STATE_CHANNEL_NOT_FOUND", "channel directory not found: 'proj'")
  end)

  it("compact such a folder with --no-audit; with its audit message it writes nothing and says why", function()
    local root, dir = fixture()
    os.remove(dir .. "/state.md")
    os.remove(dir .. "/_meta.json")
    local before = files(dir)
    fails(ac(root, "compact", "proj"), 1, "STATE_CHANNEL_NOT_FOUND",
      "channel 'proj' has no _meta.json: compact cannot post its state.compacted message "
      .. "(run: init proj, or compact --no-audit)")
    assert.same(before, files(dir))
    local r = ok(ac(root, "compact", "proj", "--no-audit"))
    assert.truthy(r.stdout:find("^compacted state for proj %-> proj/state.md"), r.stdout)
    assert.truthy(H.read(dir .. "/state.md"):find("- **Topic**: (none)", 1, true))
    -- and no other command takes it for a channel: no post lands there
    local p = ac(root, "post", "proj", "--from", "a", "--title", "t", "--body", "b")
    assert.equal(1, p.code, F.describe(p))
    assert.truthy(p.stderr:find("channel 'proj' not found under", 1, true), p.stderr)
  end)
end)

describe("state --template", function()
  it("renders the example template from the same data as --json", function()
    local root = fixture()
    local r = ok(ac(root, "state", "proj", "--template", EXAMPLE))
    local lines = F.lines(r.stdout)
    assert.are.equal("#proj (last #13): Ship the parser", lines[1])
    assert.truthy(r.stdout:find("\ntask b [in_progress] Build @bob\n", 1, true), r.stdout)
    assert.truthy(r.stdout:find("\ntask d [open] Later (blocked)\n", 1, true), r.stdout)
    assert.truthy(r.stdout:find("\nlock src,docs/guide.md by bob until 2099-01-01T00:00:00.000000+00:00\n",
      1, true), r.stdout)
    assert.are.equal("4 decisions, 4 open tasks, 5 blockers, 4 verified", lines[#lines])
    assert.are.equal(r.stdout, ok(ac(root, "state", "proj", "--template", EXAMPLE)).stdout)
  end)

  it("writes what the template returns with --write", function()
    local root, dir = fixture()
    local t = template("local s = ...\nreturn s.channel .. ' ' .. #s.open_tasks .. ' ' .. s.last_seq .. '\\n'")
    local r = ok(ac(root, "state", "proj", "--write", "--no-audit", "--template", t))
    assert.are.equal("compacted state for proj -> proj/state.md\n", r.stdout)
    assert.are.equal("proj 4 13\n", H.read(dir .. "/state.md"))
  end)

  local hostile = {
    { "loops forever", "while true do end", "TEMPLATE_BUDGET_EXCEEDED" },
    { "loops inside pcall", "while true do pcall(function() while true do end end) end",
      "TEMPLATE_BUDGET_EXCEEDED" },
    { "raises", "error('no summary today')", "TEMPLATE_RUNTIME_ERROR" },
    { "returns a number", "return 42", "TEMPLATE_BAD_RESULT" },
    { "returns nothing", "local s = ...", "TEMPLATE_BAD_RESULT" },
    { "runs a command", "os.execute('touch /tmp/agent-chat-pwned') return ''", "TEMPLATE_FORBIDDEN" },
    { "opens a pipe", "io.popen('id') return ''", "TEMPLATE_FORBIDDEN" },
    { "loads a file", "dofile('/etc/passwd') return ''", "TEMPLATE_FORBIDDEN" },
    { "does not compile", "return (", "TEMPLATE_LOAD_ERROR" },
  }
  for _, case in ipairs(hostile) do
    it("stops a template that " .. case[1] .. " with " .. case[3] .. " and writes nothing", function()
      local root, dir = fixture()
      local t = template(case[2])
      local before = files(dir)
      fails(ac(root, "state", "proj", "--template", t), 1, case[3])
      fails(ac(root, "compact", "proj", "--template", t), 1, case[3])
      fails(ac(root, "state", "proj", "--write", "--template", t), 1, case[3])
      assert.are.same({}, F.diff(before, files(dir)))
    end)
  end

  it("says which template file cannot be read", function()
    local root = fixture()
    fails(ac(root, "state", "proj", "--template", "/nonexistent/t.lua"), 1, "TEMPLATE_UNREADABLE",
      "cannot read template /nonexistent/t.lua: ")
  end)
end)

-- The rules by which the Python tool reads messages and _meta.json for the
-- state, each on a hand-made channel beyond the recorded cases.
describe("state reads messages and _meta.json as the Python tool does", function()
  local function chan(meta)
    local root = F.new_root()
    F.init(root, "s")
    if meta then
      F.write(root .. "/s/_meta.json", meta)
    end
    return root, root .. "/s"
  end
  local function msg(dir, name, fields, body)
    local lines = { "---" }
    for _, kv in ipairs(fields) do
      lines[#lines + 1] = kv
    end
    lines[#lines + 1] = "---"
    F.write(dir .. "/" .. name, table.concat(lines, "\n") .. "\n" .. body)
  end
  local function data(root, ...)
    return json.loads(ok(ac(root, "state", "s", "--json", ...)).stdout)
  end
  local function ids(list, key)
    local out = {}
    for i, v in ipairs(list) do
      out[i] = v[key or "source_id"]
    end
    return out
  end

  it("classifies by type, status, keys, title prefixes and '#' headings at a line start", function()
    local root, dir = chan()
    msg(dir, "0001-a-m.md", { "seq: 1", "from: a", "title: x" }, "# Decision: use C\n")
    msg(dir, "0002-a-m.md", { "seq: 2", "from: a", "title: x" }, "##Decision\nno space needed\n")
    msg(dir, "0003-a-m.md", { "seq: 3", "from: a", "title: x" }, "#\n\nDecision across lines\n")
    msg(dir, "0004-a-m.md", { "seq: 4", "from: a", "title: x" }, "# Decisions are not one\n")
    msg(dir, "0005-a-m.md", { "seq: 5", "from: a", "title: x" }, "text\n  # Decision indented is not\n")
    msg(dir, "0006-a-m.md", { "seq: 6", "from: a", "title: x", "type: Blocked" }, "t\n")
    msg(dir, "0007-a-m.md", { "seq: 7", "from: a", "title: x", "status: BLOCKER" }, "s\n")
    msg(dir, "0008-a-m.md", { "seq: 8", "from: a", "title: x", "type: test" }, "t\n")
    msg(dir, "0009-a-m.md", { "seq: 9", "from: a", "title: x", "status: verified-by" }, "s\n")
    msg(dir, "0010-a-m.md", { "seq: 10", "from: a", "title: x", "evidence: yes" }, "k\n")
    msg(dir, "0011-a-m.md", { "seq: 11", "from: a", "title: EVIDENCE:   bench" }, "p\n")
    msg(dir, "0012-a-m.md", { "seq: 12", "from: a", "title: x" }, "text\n### evidence\n")
    msg(dir, "0013-a-m.md", { "seq: 13", "from: a", "title: x", "status: task.updated", "decision: y" },
      "# Decision\n")
    local d = data(root)
    assert.same({ 1, 2, 3 }, ids(d.decisions, "seq"))
    assert.same({ "#0006", "#0007" }, ids(d.blockers))
    assert.same({ "10", "11", "12", "8", "9" }, ids(d.verification))
    assert.equal("bench", d.verification[2].title)
  end)

  it("gives a message without frontmatter the sender 'unknown', the file name as title and no time", function()
    local root, dir = chan()
    F.write(dir .. "/0001-hand.md", "## Blocker\nthe disk is full\n")
    msg(dir, "0002-a-m.md", { "seq: 2", "from: ", "title: ", "time: noon", "ts: 2030", "status: blocked" }, "b\n")
    local d = data(root)
    assert.same({ "unknown", "0001-hand", "", "## Blocker\nthe disk is full" },
      { d.blockers[1].author, d.blockers[1].title, d.blockers[1].time, d.blockers[1].details })
    assert.same({ "unknown", "0002-a-m", "noon" }, { d.blockers[2].author, d.blockers[2].title, d.blockers[2].time })
  end)

  it("takes the body after the second '---' of the file, wherever it is", function()
    local root, dir = chan()
    msg(dir, "0001-a-m.md", { "seq: 1", "from: a", "title: Decision: a---b" }, "real body\n")
    local d = data(root)
    assert.equal("b\n---\nreal body", d.decisions[1].details)
  end)

  it("reads a _meta.json that is broken or odd as empty or as Python's str() of its values", function()
    for _, case in ipairs({
      { "not json", "", {} }, { "[1]", "", {} }, { '{"members": "alice"}', "", {} },
      { '{"topic": 5, "members": [" b ", "", "  ", 3, null, "a"]}', "5", { "3", "None", "a", "b" } },
      { '{"topic": "  ", "members": []}', "  ", {} },
    }) do
      local root = chan(case[1])
      local d = data(root)
      assert.equal(case[2], d.topic, case[1])
      assert.same(case[3], d.members, case[1])
    end
    local root = chan('{"topic": "  ", "members": []}')
    assert.truthy(ok(ac(root, "state", "s")).stdout:find("\n- **Topic**: \n", 1, true))
  end)

  it("fails --strict on a broken _meta.json or a message that is not UTF-8, and compacts without it", function()
    local root, dir = chan("[1]")
    fails(ac(root, "compact", "s", "--strict"), 1, "STATE_INVALID_RECORD", "_meta.json must be a JSON object")
    F.write(dir .. "/_meta.json", "{oops")
    fails(ac(root, "state", "s", "--strict"), 1, "STATE_MALFORMED_SOURCE",
      "corrupted _meta.json: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)")
    F.write(dir .. "/_meta.json", "{}")
    msg(dir, "0001-a-m.md", { "seq: 1", "from: a", "title: Decision: x" }, "caf\233\n")
    fails(ac(root, "state", "s", "--strict"), 1, "STATE_MALFORMED_SOURCE", "malformed message file 0001-a-m.md: "
      .. "'utf-8' codec can't decode byte 0xe9 in position 45: invalid continuation byte")
    F.write(dir .. "/_meta.json", "not json")
    local r = ok(ac(root, "compact", "s", "--from", ""))
    assert.equal("compacted state for s -> s/state.md (open_tasks=0, locks=0, decisions=0)\n", r.stdout)
    assert.truthy(F.read(dir .. "/0002-system-state-compacted.md"), "the audit message comes from system")
  end)

  it("prints JSON with ASCII escapes, an owner's task without lease without 'lease expires', evidence "
    .. "without body without quote lines", function()
    local root, dir = chan('{"topic": "caf\\u00e9", "members": []}')
    ok(ac(root, "task", "create", "s", "t1", "--title", "Build", "--created-by", "alice"))
    local rec = json.loads(F.read(dir .. "/tasks/t1.json"))
    rec.owner = "bob"
    F.write(dir .. "/tasks/t1.json", json.dumps(rec, { indent = 2 }))
    msg(dir, "0009-a-m.md", { "seq: 9", "from: a", "title: Verification: empty", "ts: 2030-01-01T00:00:00+00:00" },
      "   \n")
    local r = ok(ac(root, "state", "s", "--json"))
    assert.truthy(r.stdout:find('"topic": "caf\\u00e9"', 1, true), r.stdout)
    r = ok(ac(root, "state", "s"))
    assert.truthy(r.stdout:find("  - Task `t1` (**Build**, status: `open`)\n", 1, true), r.stdout)
    local last = "(by `a` at `2030-01-01T00:00:00+00:00`):\n"
    assert.equal(last, r.stdout:sub(-#last), r.stdout)
  end)
end)
