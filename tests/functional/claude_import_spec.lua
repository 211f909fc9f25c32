-- Functional specs for `agent-chat import claude-team DIR|TEAM --into CH`
-- (docs/claude-teams.md), spawning the binary on the fixture configuration
-- folder tests/fixtures/claude-teams/home (a ~/.claude with the team
-- refactor-squad, the implicit team session-3f2a9c0d of one CLI run and
-- their task lists, in the shapes of the captured files): the exact summary
-- and warnings (file and index of every malformed entry), the messages
-- (original times, summaries, protocol messages as typed requests and
-- responses with their request ids and replies, idle notifications as
-- status events, unknown fields kept), the task board (blockedBy as
-- dependencies, statuses mapped, trackers left out), idempotence (a second
-- import leaves the root byte-identical), a team given by name, --dry-run,
-- --strict, and symlinks (never followed below the folder).
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local ac = require "agentchat"
local json = require "agentchat.json"

local HOME = F.absolute(H.repo .. "/tests/fixtures/claude-teams/home")
local SQUAD = HOME .. "/teams/refactor-squad"

-- Times are written in the local zone: pin it. CLAUDE_CONFIG_DIR names
-- the configuration folder a team name is looked up in.
local function run(root, argv, env)
  local words = { "--root", root }
  for _, w in ipairs(argv) do
    words[#words + 1] = w
  end
  local vars = { TZ = "UTC", CLAUDE_CONFIG_DIR = HOME }
  for k, v in pairs(env or {}) do
    vars[k] = v
  end
  local r = F.run(words, { env = vars })
  assert.is_nil(F.crashed(r.stderr), F.describe(r))
  return r
end

local WARNINGS = table.concat({
  "agent-chat: warning: config.json: members[3] has no usable name (left out)",
  "agent-chat: warning: inboxes/broken.json: not valid JSON: Unterminated string starting at: line 1 column 32 "
    .. "(char 31)",
  "agent-chat: warning: inboxes/researcher.json[3]: field 'timestamp' is not an ISO-8601 time: 'yesterday'",
  "agent-chat: warning: inboxes/researcher.json[4]: not a JSON object",
  "agent-chat: warning: inboxes/team-lead.json[4]: missing field 'from'",
  "agent-chat: warning: inboxes/team-lead.json[6]: field 'text' must be a string",
  "agent-chat: warning: inboxes/tester.json[2]: shutdown_approved: missing field 'requestId'",
  "agent-chat: warning: tasks/refactor-squad/6.json: field 'status' must be pending, in_progress, completed "
    .. "or deleted: 'paused'",
}, "\n") .. "\n"
-- Said while the tasks are put on the board.
local TASK_NOTES = "agent-chat: warning: tasks/refactor-squad/10.json: blockedBy 9 is not a task of the list "
  .. "(left out)\n"

local function messages(root, name)
  local r <close> = assert(ac.open(root))
  local ch <close> = assert(r:channel(name))
  return assert(ch:peek(1000)).messages
end

local function tasks(root, name)
  local r <close> = assert(ac.open(root))
  local ch <close> = assert(r:channel(name))
  local out = {}
  for _, t in ipairs(assert(ch:tasks())) do
    out[#out + 1] = table.concat({ t.id, t.status, t.owner or "-", table.concat(t.depends_on, ","), t.title,
                                   table.concat(t.acceptance, "|") }, " ; ")
  end
  return out
end

describe("import claude-team", function()
  local root, first, snap

  setup(function()
    root = F.new_root()
    first = run(root, { "import", "claude-team", SQUAD, "--into", "squad" })
    snap = F.snapshot(root)
  end)

  it("creates the channel from the roster, warns per malformed entry with file and index, sums up", function()
    assert.equal(0, first.code, F.describe(first))
    assert.equal("created channel 'squad' at " .. root .. "/squad  members=team-lead, researcher, tester\n"
      .. "imported 16 messages (0 already present, 6 entries skipped)\n"
      .. "imported 5 tasks (0 already present, 1 skipped)\n", first.stdout)
    assert.equal(WARNINGS .. TASK_NOTES, first.stderr)
    local r = run(root, { "roster", "squad" })
    assert.equal("channel : squad\ntopic   : claude team refactor-squad\nmembers : team-lead, researcher, tester\n"
      .. "messages: 25\n", r.stdout)
  end)

  it("adds nothing when run again: the root is byte-identical", function()
    local again = run(root, { "import", "claude-team", SQUAD, "--into", "squad" })
    assert.equal(0, again.code, F.describe(again))
    assert.equal("imported 0 messages (16 already present, 6 entries skipped)\n"
      .. "imported 0 tasks (5 already present, 1 skipped)\n", again.stdout)
    assert.equal(WARNINGS .. TASK_NOTES, again.stderr)
    assert.same({}, F.diff(snap, F.snapshot(root)))
  end)

  it("posts each entry at its own time, sender to the inbox's owner, protocol messages typed", function()
    local got = {}
    for _, m in ipairs(messages(root, "squad")) do
      if m.seq <= 16 then
        got[#got + 1] = table.concat({ m.seq, m.ts, m.from, m.to, m.status, m.type or "-", m.request_id or "-",
                                       m.reply_to or "-", m.title }, " ")
      end
    end
    assert.same({
      "1 2026-02-10T08:59:00+00:00 team-lead researcher discussion - - - Survey the parser entry points",
      "2 2026-02-10T08:59:01+00:00 team-lead researcher discussion task_assignment - - task_assignment",
      "3 2026-02-10T09:00:05+00:00 researcher team-lead discussion - - - Found the three parser entry points",
      "4 2026-02-10T09:00:06+00:00 researcher all event.status - - - event:status",
      "5 2026-02-10T09:02:00+00:00 tester team-lead discussion plan_approval_request "
        .. "plan_approval-1770714120000@tester - plan_approval_request",
      "6 2026-02-10T09:03:00+00:00 team-lead tester rejected plan_approval_response "
        .. "plan_approval-1770714120000@tester 5 plan_approval_response: rejected",
      "7 2026-02-10T09:09:00+00:00 team-lead researcher discussion shutdown_request "
        .. "shutdown-1770714540000@researcher - shutdown_request",
      "8 2026-02-10T09:09:01+00:00 team-lead tester discussion shutdown_request shutdown-1770714541000@tester - "
        .. "shutdown_request",
      "9 2026-02-10T09:09:30+00:00 researcher team-lead approved shutdown_response "
        .. "shutdown-1770714540000@researcher 7 shutdown_response: approved",
      "10 2026-02-10T09:10:30+00:00 tester team-lead rejected shutdown_response shutdown-1770714541000@tester 8 "
        .. "shutdown_response: rejected",
      "11 2026-02-10T09:11:00+00:00 tester team-lead discussion - - - Tests green",
      "12 2026-02-10T09:11:30+00:00 tester team-lead discussion permission_request perm-1 - permission_request",
      "13 2026-02-10T09:12:00+00:00 researcher all event.status - - - event:status",
      "14 2026-02-10T09:12:30+00:00 researcher team-lead discussion - - - ok",
      "15 2026-02-10T09:12:30+00:00 researcher team-lead discussion - - - ok",
      "16 2026-02-10T09:20:00+00:00 team-lead orchestrator discussion - - - Parser split merged",
    }, got)
  end)

  it("keeps the summary, the colour, the plan file and every field it does not know", function()
    local m = messages(root, "squad")
    assert.same({ "Found the three parser entry points", "blue" }, { m[3].fields.summary, m[3].fields.color })
    assert.equal("Found the entry points: parse_file, parse_string and the REPL hook.\n"
      .. "All three go through lexer_next().\n", m[3].body)
    assert.equal('{"delivery":{"id":"d-1","sessionId":"s-9"},"msgV":2,"msg_id":"m-7f3a"}', m[11].fields.claude_extra)
    assert.equal("/home/me/.claude/plans/split-lexer.md", m[5].fields.plan_file)
    assert.equal("1. add a regression test\n2. split lexer.c\n", m[5].body)
    assert.equal('{"backendType":"in-process","paneId":"in-process"}', m[9].fields.claude_fields)
    assert.equal('{"permissionMode":"default"}', m[6].fields.claude_fields)
    assert.equal("Split step 2 into lexer and token files first.\n", m[6].body)
    -- A real repeat stays twice; each message has its own key.
    assert.matches("^claude:%x+$", m[14].fields.import_id)
    assert.equal(m[14].fields.import_id .. "-2", m[15].fields.import_id)
  end)

  it("turns idle notifications into status events the team view reads", function()
    local m = messages(root, "squad")
    assert.same({ agent = "researcher", detail = "survey done [task 1 resolved]", event = "status",
                  harness = "claude-code", schema_version = 1, status = "idle", ts = "2026-02-10T09:00:06.000Z" },
                json.loads(m[4].body))
    assert.same({ agent = "researcher", detail = "idle (failed): the build broke", event = "status",
                  harness = "claude-code", schema_version = 1, status = "blocked", ts = "2026-02-10T09:12:00.000Z" },
                json.loads(m[13].body))
    local r = run(root, { "event", "read", "squad", "--type", "status" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(2, #F.lines(r.stdout))
  end)

  it("correlates imported requests and responses like posted ones", function()
    local r <close> = assert(ac.open(root))
    local ch <close> = assert(r:channel("squad"))
    local yes = assert(ch:await_response{ as = "team-lead", request_id = "shutdown-1770714540000@researcher",
                                          timeout = 0 })
    local no = assert(ch:await_response{ as = "team-lead", request_id = "shutdown-1770714541000@tester", timeout = 0 })
    assert.same({ "approved", 9 }, { yes.decision, yes.seq })
    assert.same({ "rejected", "still running the test suite", 10 }, { no.decision, no.reason, no.seq })
    local plan = assert(ch:await_response{ as = "tester", request_id = "plan_approval-1770714120000@tester",
                                           timeout = 0 })
    assert.same({ "rejected", 6 }, { plan.decision, plan.seq })
  end)

  it("puts the task files on the board: blockedBy as dependencies, statuses mapped, trackers left out", function()
    assert.same({
      "1 ; done ; researcher ;  ; Survey the parser ; List every entry point.|Note their callers.",
      "10 ; open ; team-lead ; 3 ; Release 2.0 ; ",
      "2 ; in_progress ; tester ; 1 ; Split the lexer ; lexer.c into lexer.c and token.c",
      "3 ; open ; - ; 2,1 ; Write the migration notes ; ",
      "5 ; cancelled ; - ;  ; Rewrite in Rust ; ",
    }, tasks(root, "squad"))
  end)

  it("finds a team by name in $CLAUDE_CONFIG_DIR, and the task list of an implicit session team", function()
    local r2 = F.new_root()
    local r = run(r2, { "import", "claude-team", "session-3f2a9c0d", "--into", "wake" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("created channel 'wake' at " .. r2 .. "/wake  members=team-lead\n"
      .. "imported 1 messages (0 already present, 0 entries skipped)\n"
      .. "imported 1 tasks (0 already present, 0 skipped)\n", r.stdout)
    assert.equal("", r.stderr)
    local m = messages(r2, "wake")[1]
    assert.same({ "orchestrator", "team-lead", "CI green, continue with step 4", "2026-02-10T10:05:00+00:00" },
                { m.from, m.to, m.title, m.ts })
    assert.same({ "1 ; open ; - ;  ; Step 4: the docs ; Update docs/parser.md." }, tasks(r2, "wake"))
    r = run(r2, { "import", "claude-team", "refactor-squad", "--into", "squad" }, { CLAUDE_CONFIG_DIR = false,
                                                                                   HOME = H.tmpdir() })
    assert.equal(1, r.code, F.describe(r))
    assert.matches("^agent%-chat: IMPORT_INVALID_FOLDER: no team 'refactor%-squad' in '.*/%.claude/teams' "
      .. "%(and no folder of that name%)\n$", r.stderr)
  end)

  it("--dry-run writes nothing, not even the channel", function()
    local r2 = F.new_root()
    local r = run(r2, { "import", "claude-team", SQUAD, "--into", "squad", "--dry-run" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("would import 16 messages (0 already present, 6 entries skipped)\n"
      .. "would import 5 tasks (0 already present, 1 skipped)\n", r.stdout)
    assert.equal(WARNINGS, r.stderr)
    assert.same({}, F.snapshot(r2))
    r = run(root, { "import", "claude-team", SQUAD, "--into", "squad", "--dry-run" })
    assert.equal("would import 0 messages (16 already present, 6 entries skipped)\n"
      .. "would import 0 tasks (5 already present, 1 skipped)\n", r.stdout)
    assert.same({}, F.diff(snap, F.snapshot(root)))
  end)

  it("--strict imports nothing when an entry or a task file is malformed (exit 1)", function()
    local r2 = F.new_root()
    local r = run(r2, { "import", "claude-team", SQUAD, "--into", "squad", "--strict" })
    assert.equal(1, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.equal(WARNINGS .. "agent-chat: IMPORT_MALFORMED_LINES: 6 malformed entries and 1 malformed task file in '"
      .. SQUAD .. "' (strict: nothing imported)\n", r.stderr)
    assert.same({}, F.snapshot(r2))
  end)

  it("finishes an interrupted import: a task created but not moved on reaches its status", function()
    local r2 = F.new_root()
    F.init(r2, "squad")
    assert.equal(0, F.ac(r2, { "task", "create", "squad", "1", "--title", "Survey the parser", "--from", "x" }).code)
    assert.equal(0, F.ac(r2, { "task", "create", "squad", "5", "--title", "Something else", "--from", "x" }).code)
    local r = run(r2, { "import", "claude-team", SQUAD, "--into", "squad" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("imported 16 messages (0 already present, 6 entries skipped)\n"
      .. "imported 3 tasks (1 already present, 2 skipped)\n", r.stdout)
    assert.equal(WARNINGS .. "agent-chat: warning: tasks/refactor-squad/5.json: task 5 is on the board already "
      .. "with another title (left as it is)\n" .. TASK_NOTES, r.stderr)
    local got = tasks(r2, "squad")
    assert.equal("1 ; done ; - ;  ; Survey the parser ; ", got[1])
    assert.equal("5 ; open ; - ;  ; Something else ; ", got[5])
  end)
end)

describe("import claude-team: the folder", function()
  local function copy_home()
    return F.copy(HOME)
  end

  it("ignores lock directories, hidden files and files that are not .json in inboxes/", function()
    local home = copy_home()
    local dir = home .. "/teams/refactor-squad"
    assert(os.execute("mkdir " .. F.sh(dir .. "/inboxes/team-lead.json.lock")))
    F.write(dir .. "/inboxes/.team-lead.json.1234.tmp", "[")
    local r2 = F.new_root()
    local r = run(r2, { "import", "claude-team", dir, "--into", "squad", "--dry-run" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("would import 16 messages (0 already present, 6 entries skipped)\n"
      .. "would import 5 tasks (0 already present, 1 skipped)\n", r.stdout)
  end)

  for _, case in ipairs({
    { "an inbox", "teams/refactor-squad/inboxes/tester.json", "inboxes/tester.json" },
    { "the inboxes folder", "teams/refactor-squad/inboxes", "inboxes" },
    { "config.json", "teams/refactor-squad/config.json", "config.json" },
    { "a task file", "tasks/refactor-squad/2.json", "tasks/refactor-squad/2.json" },
  }) do
    it("never follows a symlink below the folder: " .. case[1], function()
      local home = copy_home()
      local outside = H.tmpdir()
      local path = home .. "/" .. case[2]
      assert(os.execute("mv " .. F.sh(path) .. " " .. F.sh(outside .. "/x") .. " && ln -s "
        .. F.sh(outside .. "/x") .. " " .. F.sh(path)))
      local r2 = F.new_root()
      local r = run(r2, { "import", "claude-team", home .. "/teams/refactor-squad", "--into", "squad" })
      assert.equal(1, r.code, F.describe(r))
      assert.equal("", r.stdout)
      assert.truthy(r.stderr:find("agent-chat: IMPORT_UNREADABLE: cannot read " .. case[3]
        .. ": it is a symlink (symlinks are not followed)\n", 1, true), r.stderr)
      assert.same({}, F.snapshot(r2))
    end)
  end

  it("follows the folder it is given (the user's own path may be a symlink)", function()
    local link = H.tmpdir() .. "/team"
    assert(os.execute("ln -s " .. F.sh(SQUAD) .. " " .. F.sh(link)))
    local r2 = F.new_root()
    local r = run(r2, { "import", "claude-team", link, "--into", "squad", "--dry-run" })
    assert.equal(0, r.code, F.describe(r))
    -- Outside <home>/teams/ no task list is looked for.
    assert.equal("would import 16 messages (0 already present, 6 entries skipped)\n", r.stdout)
  end)

  it("refuses a folder that is not a team (no config.json), and a config that is not an object", function()
    local r2 = F.new_root()
    local dir = H.tmpdir()
    local r = run(r2, { "import", "claude-team", dir, "--into", "squad" })
    assert.equal(1, r.code)
    assert.equal("agent-chat: IMPORT_INVALID_FOLDER: no config.json in '" .. dir
      .. "' (not a Claude Code team folder)\n", r.stderr)
    F.write(dir .. "/config.json", "[1]")
    r = run(r2, { "import", "claude-team", dir, "--into", "squad" })
    assert.equal("agent-chat: IMPORT_INVALID_CONFIG: config.json: not a JSON object\n", r.stderr)
    assert.same({}, F.snapshot(r2))
  end)

  it("treats every field of the roster as optional", function()
    local dir = H.tmpdir()
    F.write(dir .. "/config.json", "{}")
    assert(os.execute("mkdir " .. F.sh(dir .. "/inboxes")))
    F.write(dir .. "/inboxes/lead.json", '[{"from":"a","text":"hi","timestamp":"2026-02-10T09:00:00Z"}]')
    local r2 = F.new_root()
    local r = run(r2, { "import", "claude-team", dir, "--into", "t" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("created channel 't' at " .. r2 .. "/t  members=(open)\n"
      .. "imported 1 messages (0 already present, 0 entries skipped)\n", r.stdout)
  end)
end)

describe("ch:import_claude_team", function()
  it("returns the report with the task counts", function()
    local root = F.new_root()
    F.init(root, "squad")
    local r <close> = assert(ac.open(root))
    local ch <close> = assert(r:channel("squad"))
    local report = assert(ch:import_claude_team(SQUAD, { dry_run = true }))
    assert.same({ 16, 0, 6, 5, 0, 1, true }, { report.imported, report.present, report.skipped,
                                               report.tasks_imported, report.tasks_present, report.tasks_skipped,
                                               report.dry_run })
    assert.same({ "inboxes/researcher.json", 3 }, { report.warnings[3].file, report.warnings[3].index })
    assert.has_error(function()
      ch:import_claude_team(42)
    end, "import_claude_team expects a folder path")
  end)
end)
