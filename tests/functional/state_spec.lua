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
    assert.are.equal("ivy", task_a.author)
    assert.are.equal("2030-01-01T11:00:00+00:00", task_a.time)
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
    assert.are.equal("4 decisions, 4 open tasks, 5 blockers, 3 verified", lines[#lines])
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
