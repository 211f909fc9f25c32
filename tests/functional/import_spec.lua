-- Functional specs for `agent-chat import team|bus DIR --into CH`
-- (docs/import.md), spawning the binary on the fixture folders of
-- tests/fixtures/import/: the exact summary and warning lines (file and
-- line number of every malformed line), the messages as `read` and the Lua
-- API show them (types, request ids, roles, original times, recipients, a
-- broadcast once), idempotence (a second import leaves the root
-- byte-identical; a re-run after a lost message re-posts only that one),
-- --dry-run and --strict, and bad input (missing or non-folder DIR,
-- symlinks, a FIFO, an unreadable file, a bad roster, a huge line): one
-- error line or warnings, and nothing written on error.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local ac = require "agentchat"

local FIXTURES = H.repo .. "/tests/fixtures/import"
local TEAM, BUS = FIXTURES .. "/team", FIXTURES .. "/bus"

-- Times are written in the local zone: pin it.
local function run(root, ...)
  local r = F.run({ "--root", root, ... }, { env = { TZ = "UTC" } })
  assert.is_nil(F.crashed(r.stderr), F.describe(r))
  return r
end

local TEAM_WARNINGS = table.concat({
  "agent-chat: warning: inbox/researcher.jsonl:3: missing field 'content'",
  "agent-chat: warning: inbox/researcher.jsonl:4: field 'from' must be a string",
  "agent-chat: warning: inbox/team-lead.jsonl:3: not valid JSON: Unterminated string starting at: "
    .. "line 1 column 47 (char 46)",
  "agent-chat: warning: inbox/zoë.jsonl:4: not valid UTF-8",
  "agent-chat: warning: inbox/zoë.jsonl:5: field 'timestamp' is not an ISO-8601 time: 'yesterday'",
  "agent-chat: warning: inbox/zoë.jsonl:6: a message of type shutdown_request needs a request id "
    .. "(or use request/respond, which make and copy one)",
}, "\n") .. "\n"

local BUS_WARNINGS = table.concat({
  "agent-chat: warning: ledger.jsonl:5: role must be parent, child, steer or follow_up: 'boss'",
  "agent-chat: warning: ledger.jsonl:6: missing field 'id'",
  "agent-chat: warning: ledger.jsonl:7: not valid JSON: Unterminated string starting at: "
    .. "line 1 column 50 (char 49)",
  "agent-chat: warning: inbox/worker-a.jsonl:3: id 'm-002' differs from its copy at ledger.jsonl:2",
  "agent-chat: warning: inbox/worker-b.jsonl:3: field 'status' must be queued, delivered, read or acked",
  "agent-chat: warning: inbox/worker-b.jsonl:4: ack not imported: 'worker-b' is not an addressee "
    .. "(from: worker-a, to: orchestrator)",
}, "\n") .. "\n"

--- The messages of a channel through the Lua API, in seq order.
local function messages(root, name)
  local r <close> = assert(ac.open(root))
  local ch <close> = assert(r:channel(name))
  return assert(ch:peek(1000)).messages
end

--- A copy of a fixture folder to damage.
local copy = F.copy

describe("import team", function()
  local root, first, snap

  setup(function()
    root = F.new_root()
    first = run(root, "import", "team", TEAM, "--into", "squad")
    snap = F.snapshot(root)
  end)

  it("creates the channel from the roster, warns per malformed line and sums up", function()
    assert.equal(0, first.code, F.describe(first))
    assert.equal("created channel 'squad' at " .. root .. "/squad  members=team-lead, researcher, zoë\n"
      .. "imported 9 messages (0 already present, 6 lines skipped)\n", first.stdout)
    assert.equal(TEAM_WARNINGS, first.stderr)
    local r = run(root, "roster", "squad")
    assert.equal("channel : squad\ntopic   : team refactor-squad\nmembers : team-lead, researcher, zoë\n"
      .. "messages: 9\n", r.stdout)
  end)

  it("adds nothing when run again: the root is byte-identical", function()
    local again = run(root, "import", "team", TEAM, "--into", "squad")
    assert.equal(0, again.code, F.describe(again))
    assert.equal("imported 0 messages (9 already present, 6 lines skipped)\n", again.stdout)
    assert.equal(TEAM_WARNINGS, again.stderr)
    assert.same({}, F.diff(snap, F.snapshot(root)))
  end)

  it("posts in time order (offsets honoured), keeps types, request ids and recipients", function()
    local got = {}
    for _, m in ipairs(messages(root, "squad")) do
      got[#got + 1] = table.concat({ m.seq, m.ts, m.from, m.to, m.type or "-", m.request_id or "-",
                                     m.status, m.reply_to or "-" }, " ")
    end
    assert.same({
      "1 2026-11-30T09:00:00+00:00 team-lead all broadcast - discussion -",
      "2 2026-11-30T09:00:05+00:00 researcher team-lead message - discussion -",
      "3 2026-11-30T09:02:00+00:00 zoë team-lead plan_approval_request plan-7 discussion -",
      "4 2026-11-30T09:03:00+00:00 team-lead zoë plan_approval_response plan-7 approved 3",
      "5 2026-11-30T09:05:00+00:00 zoë researcher message - discussion -",
      "6 2026-11-30T09:09:00+00:00 team-lead researcher shutdown_request shutdown-1 discussion -",
      "7 2026-11-30T09:09:01+00:00 team-lead zoë shutdown_request shutdown-2 discussion -",
      "8 2026-11-30T09:10:00+00:00 researcher team-lead shutdown_response shutdown-1 approved 6",
      "9 2026-11-30T09:10:30+00:00 zoë team-lead shutdown_response shutdown-2 rejected 7",
    }, got)
  end)

  it("writes the standard fields first and the extra keys after title", function()
    assert.equal(table.concat({
      "---",
      "seq: 9",
      "from: zoë",
      "to: team-lead",
      "reply_to: 7",
      "channel: squad",
      "ts: 2026-11-30T09:10:30+00:00",
      "status: rejected",
      "title: shutdown_response: rejected",
      "type: shutdown_response",
      "request_id: shutdown-2",
      "import_id: " .. messages(root, "squad")[9].fields.import_id,
      "---",
      "still running the test suite",
      "",
    }, "\n"), F.read(root .. "/squad/0009-zo-shutdown-response-rejected.md"))
    assert.matches("^team:%x+$", messages(root, "squad")[9].fields.import_id)
  end)

  it("shows imported messages to `read` like any other (unicode, the broadcast once)", function()
    local r = run(root, "read", "squad", "--as", "researcher", "--peek")
    assert.equal(0, r.code, F.describe(r))
    assert.same({ 1, 5, 6 }, F.seqs(r.stdout))
    assert.truthy(r.stdout:find("\ntitle: Ünïcødé 日本語 ✓ — the regression test passes\ntype: message\n", 1, true))
    assert.truthy(r.stdout:find("\ntype: shutdown_request\nrequest_id: shutdown-1\n", 1, true))
    local n = 0
    for _, m in ipairs(messages(root, "squad")) do
      if m.body:find("Standup", 1, true) then
        n = n + 1
      end
    end
    assert.equal(1, n)
  end)

  it("imported requests and responses correlate like posted ones (ch:await_response)", function()
    local r <close> = assert(ac.open(root))
    local ch <close> = assert(r:channel("squad"))
    local yes = assert(ch:await_response{ as = "team-lead", request_id = "shutdown-1", timeout = 0 })
    local no = assert(ch:await_response{ as = "team-lead", request_id = "shutdown-2", timeout = 0 })
    assert.same({ "approved", "my work is done", 8 }, { yes.decision, yes.reason, yes.seq })
    assert.same({ "rejected", "still running the test suite", 9 }, { no.decision, no.reason, no.seq })
  end)

  it("re-posts only what the channel lost (a re-run finishes an interrupted import)", function()
    local r2 = F.new_root()
    assert.equal(0, run(r2, "import", "team", TEAM, "--into", "squad").code)
    assert(os.remove(r2 .. "/squad/0005-zo-n-c-d-the-regression-test-passes.md"))
    local r = run(r2, "import", "team", TEAM, "--into", "squad")
    assert.equal("imported 1 messages (8 already present, 6 lines skipped)\n", r.stdout)
    local last = messages(r2, "squad")[9]
    assert.same({ 10, "zoë", "2026-11-30T09:05:00+00:00" }, { last.seq, last.from, last.ts })
  end)

  it("--dry-run writes nothing, not even the channel", function()
    local r2 = F.new_root()
    local r = run(r2, "import", "team", TEAM, "--into", "squad", "--dry-run")
    assert.equal(0, r.code, F.describe(r))
    assert.equal("would import 9 messages (0 already present, 6 lines skipped)\n", r.stdout)
    assert.equal(TEAM_WARNINGS, r.stderr)
    assert.same({}, F.snapshot(r2))
    r = run(root, "import", "team", TEAM, "--into", "squad", "--dry-run")
    assert.equal("would import 0 messages (9 already present, 6 lines skipped)\n", r.stdout)
  end)

  it("--strict imports nothing when a line is malformed (exit 1)", function()
    local r2 = F.new_root()
    local r = run(r2, "import", "team", TEAM, "--into", "squad", "--strict")
    assert.equal(1, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.equal(TEAM_WARNINGS .. "agent-chat: IMPORT_MALFORMED_LINES: 6 malformed lines in '" .. TEAM
      .. "' (strict: nothing imported)\n", r.stderr)
    assert.same({}, F.snapshot(r2))
  end)

  it("imports into an existing channel without touching its members", function()
    local r2 = F.new_root()
    F.init(r2, "squad", "--members", "someone")
    F.post(r2, "squad", "someone", "before", "hello")
    local r = run(r2, "import", "team", TEAM, "--into", "squad")
    assert.equal("imported 9 messages (0 already present, 6 lines skipped)\n", r.stdout)
    assert.equal("someone", messages(r2, "squad")[1].from)
    assert.equal(10, #messages(r2, "squad"))
    assert.truthy(run(r2, "roster", "squad").stdout:find("members : someone\n", 1, true))
  end)
end)

describe("import bus", function()
  local root, first, snap

  setup(function()
    root = F.new_root()
    first = run(root, "import", "bus", BUS, "--into", "bus")
    snap = F.snapshot(root)
  end)

  it("imports each id once and warns per malformed or conflicting line", function()
    assert.equal(0, first.code, F.describe(first))
    assert.equal("created channel 'bus' at " .. root .. "/bus  members=(open)\n"
      .. "imported 5 messages (0 already present, 5 lines skipped)\n"
      .. "recorded 2 acks (0 already present)\n", first.stdout)
    assert.equal(BUS_WARNINGS, first.stderr)
  end)

  it("adds nothing when run again: the root is byte-identical", function()
    local again = run(root, "import", "bus", BUS, "--into", "bus")
    assert.equal("imported 0 messages (5 already present, 5 lines skipped)\n"
      .. "recorded 0 acks (2 already present)\n", again.stdout)
    assert.equal(BUS_WARNINGS, again.stderr)
    assert.same({}, F.diff(snap, F.snapshot(root)))
  end)

  it("keeps roles, bus ids and times (ISO, epoch seconds, epoch milliseconds)", function()
    local got = {}
    for _, m in ipairs(messages(root, "bus")) do
      got[#got + 1] = table.concat({ m.seq, m.ts, m.from, m.to, m.role, m.fields.bus_id,
                                     m.fields.import_id, m.title }, " | ")
    end
    assert.same({
      "1 | 2026-11-30T10:00:00+00:00 | orchestrator | worker-a | parent | m-001 | bus:m-001 | Build the parser module.",
      "2 | 2026-11-30T10:02:00+00:00 | orchestrator | worker-b | parent | 5 | bus:5 | "
        .. "Ünïcødé naïve café — 日本語 review, please",
      "3 | 2026-11-30T10:05:00+00:00 | worker-a | orchestrator | child | m-002 | bus:m-002 | "
        .. "Parser done; 42 tests pass ✓",
      "4 | 2026-11-30T10:06:00+00:00 | orchestrator | all | steer | m-003 | bus:m-003 | "
        .. "Freeze main: release at 11:00.",
      "5 | 2026-11-30T10:07:00+00:00 | orchestrator | worker-b | follow_up | m-004 | bus:m-004 | "
        .. "Also update the docs.",
    }, got)
    assert.equal("Build the parser module.\nStart with the lexer.\n", messages(root, "bus")[1].body)
  end)

  it("writes the acks through the receipts API: one per acking addressee, seen by `receipts`", function()
    local f = io.popen("cd " .. F.sh(root .. "/bus") .. " && find .acks -type f | sort")
    local files = f:read("a")
    f:close()
    assert.equal(".acks/1/worker-a.json\n.acks/4/worker-a.json\n", files)
    local r = run(root, "receipts", "bus", "1", "--json")
    assert.equal(0, r.code, F.describe(r))
    local rec = require("agentchat.json").loads(r.stdout)
    assert.same({ "worker-a", "acked", true }, { rec.addressees[1].agent, rec.addressees[1].state, rec.all_acked })
    -- The ack keeps the ledger's ack_at, not the time of the import.
    local iso_epoch = require("agentchat.sys").iso_epoch
    assert.equal(iso_epoch("2026-11-30T10:00:09+00:00"), iso_epoch(rec.addressees[1].acked_at))
    assert.is_nil(rec.addressees[2])
    -- The broadcast #4, acked by worker-a in its inbox (worker-b's copy says only "read").
    local b <close> = assert(ac.open(root))
    local ch <close> = assert(b:channel("bus"))
    local four = assert(ch:receipts(4))
    local states = {}
    for _, a in ipairs(four.addressees) do
      states[a.agent] = a.state
    end
    assert.equal("acked", states["worker-a"])
    assert.is_not.equal("acked", states["worker-b"])
  end)

  it("--dry-run counts the acks it would record", function()
    local r2 = F.new_root()
    local r = run(r2, "import", "bus", BUS, "--into", "b", "--dry-run")
    assert.equal("would import 5 messages (0 already present, 5 lines skipped)\n"
      .. "would record 2 acks (0 already present)\n", r.stdout)
    assert.same({}, F.snapshot(r2))
    r = run(root, "import", "bus", BUS, "--into", "bus", "--dry-run")
    assert.equal("would import 0 messages (5 already present, 5 lines skipped)\n"
      .. "would record 0 acks (2 already present)\n", r.stdout)
  end)

  it("shows role and bus_id to `read`", function()
    local r = run(root, "read", "bus", "--as", "worker-b")
    assert.same({ 2, 4, 5 }, F.seqs(r.stdout))
    assert.truthy(r.stdout:find("\nrole: follow_up\nbus_id: m-004\nimport_id: bus:m-004\n---\n", 1, true))
  end)

  it("a folder with only inboxes is a bus folder too", function()
    local dir = copy(BUS)
    assert(os.remove(dir .. "/ledger.jsonl"))
    local r2 = F.new_root()
    local r = run(r2, "import", "bus", dir, "--into", "b")
    assert.equal(0, r.code, F.describe(r))
    assert.equal("created channel 'b' at " .. r2 .. "/b  members=(open)\n"
      .. "imported 4 messages (0 already present, 2 lines skipped)\n"
      .. "recorded 2 acks (0 already present)\n", r.stdout)
  end)
end)

describe("import: bad input", function()
  --- Run an import that must fail with one error line and write nothing.
  local function refused(kind, dir, code, line, ...)
    local root = F.new_root()
    local r = run(root, "import", kind, dir, "--into", "x", ...)
    assert.equal(code, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.equal(line .. "\n", r.stderr)
    assert.same({}, F.snapshot(root))
  end

  it("a missing DIR, or one that is not a folder", function()
    local missing = F.tmpdir() .. "/nope"
    refused("team", missing, 1, "agent-chat: IMPORT_INVALID_FOLDER: cannot open folder '" .. missing
      .. "': [Errno 2] No such file or directory")
    refused("bus", TEAM .. "/config.json", 1, "agent-chat: IMPORT_INVALID_FOLDER: cannot open folder '"
      .. TEAM .. "/config.json': [Errno 20] Not a directory")
  end)

  it("a folder of the wrong format", function()
    refused("team", BUS, 1, "agent-chat: IMPORT_INVALID_FOLDER: no config.json in '" .. BUS
      .. "' (not a team folder)")
    local empty = F.tmpdir()
    refused("bus", empty, 1, "agent-chat: IMPORT_INVALID_FOLDER: no ledger.jsonl or inbox/ in '" .. empty
      .. "' (not a bus folder)")
  end)

  it("symlinks are never followed, inside or out of DIR", function()
    local dir = copy(TEAM)
    assert(os.execute("ln -s /etc/passwd " .. F.sh(dir .. "/inbox/evil.jsonl")))
    refused("team", dir, 1, "agent-chat: IMPORT_UNREADABLE: cannot read inbox/evil.jsonl: it is a symlink "
      .. "(symlinks are not followed)")
    dir = copy(BUS)
    assert(os.execute("mv " .. F.sh(dir .. "/inbox") .. " " .. F.sh(dir .. "/../elsewhere") .. " && ln -s ../elsewhere "
      .. F.sh(dir .. "/inbox")))
    refused("bus", dir, 1, "agent-chat: IMPORT_UNREADABLE: cannot read inbox: it is a symlink "
      .. "(symlinks are not followed)")
    dir = copy(TEAM)
    assert(os.execute("mv " .. F.sh(dir .. "/config.json") .. " " .. F.sh(dir .. "/real.json")
      .. " && ln -s real.json " .. F.sh(dir .. "/config.json")))
    refused("team", dir, 1, "agent-chat: IMPORT_UNREADABLE: cannot read config.json: it is a symlink "
      .. "(symlinks are not followed)")
  end)

  it("an inbox that is not a regular file (a FIFO never blocks, a directory)", function()
    local dir = copy(BUS)
    assert(os.execute("mkfifo " .. F.sh(dir .. "/inbox/fifo.jsonl")))
    refused("bus", dir, 1, "agent-chat: IMPORT_UNREADABLE: cannot read inbox/fifo.jsonl: not a regular file")
    dir = copy(TEAM)
    assert(os.execute("mkdir " .. F.sh(dir .. "/inbox/dir.jsonl")))
    refused("team", dir, 1, "agent-chat: IMPORT_UNREADABLE: cannot read inbox/dir.jsonl: not a regular file")
  end)

  it("an inbox whose file name is not an agent name", function()
    local dir = copy(BUS)
    F.write(dir .. "/inbox/bad\255.jsonl", "{}\n")
    refused("bus", dir, 1, "agent-chat: IMPORT_INVALID_FOLDER: cannot import 'inbox/bad\\udcff.jsonl': its name "
      .. "must be an agent name (valid UTF-8, no control characters)")
  end)

  it("an unreadable file", function()
    local dir = copy(TEAM)
    assert(os.execute("chmod 000 " .. F.sh(dir .. "/inbox/researcher.jsonl")))
    local probe = io.open(dir .. "/inbox/researcher.jsonl", "r")
    if probe then
      probe:close()
      pending("running as root: permissions do not stop reads")
      return
    end
    refused("team", dir, 1, "agent-chat: IMPORT_UNREADABLE: cannot read inbox/researcher.jsonl: "
      .. "[Errno 13] Permission denied")
  end)

  it("a roster that is not valid", function()
    local dir = copy(TEAM)
    F.write(dir .. "/config.json", "")
    refused("team", dir, 1, "agent-chat: IMPORT_INVALID_CONFIG: config.json: Expecting value: line 1 column 1 (char 0)")
    F.write(dir .. "/config.json", '{"name": "t", "members": [{"name": "a"}, {"name": 7}]}')
    refused("team", dir, 1, "agent-chat: IMPORT_INVALID_CONFIG: config.json: members[1].name must be a "
      .. "non-empty one-line string")
    F.write(dir .. "/config.json", '{"members": []}')
    refused("team", dir, 1, "agent-chat: IMPORT_INVALID_CONFIG: config.json: name must be a non-empty one-line string")
  end)

  it("a bad --into, or none", function()
    -- Checked before the folder is read: no warnings first.
    refused("team", TEAM, 1, "agent-chat: invalid channel name (path traversal blocked): '../x'", "--into", "../x")
    local root = F.new_root()
    local r = run(root, "import", "bus", BUS)
    assert.equal(2, r.code, F.describe(r))
    assert.equal("agent-chat: USAGE: import bus: the following arguments are required: --into "
      .. "(see 'agent-chat import bus -h')\n", r.stderr)
  end)

  it("a huge line is skipped with a warning, the others imported", function()
    local dir = copy(BUS)
    local f = assert(io.open(dir .. "/ledger.jsonl", "a"))
    f:write('\n{"id": "big", "ts": 1, "from": "a", "to": "b", "message": "', string.rep("x", 1 << 20), '"}\n')
    f:write('{"id": "after", "ts": "2026-11-30T12:00:00Z", "from": "a", "to": "b", "message": "still here"}\n')
    f:close()
    local root = F.new_root()
    local r = run(root, "import", "bus", dir, "--into", "b")
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stderr:find("agent-chat: warning: ledger.jsonl:8: line longer than 1048576 bytes\n", 1, true))
    assert.truthy(r.stdout:find("imported 6 messages (0 already present, 6 lines skipped)\n"
      .. "recorded 2 acks (0 already present)\n", 1, true))
    assert.equal("still here\n", messages(root, "b")[6].body)
  end)
end)

describe("import: two at once", function()
  local BUS_WARNING_LINES = select(2, BUS_WARNINGS:gsub("\n", ""))

  it("waits, saying so, while another import holds the channel", function()
    local root = F.new_root()
    F.init(root, "b")
    local work = F.tmpdir()
    -- flock(1) takes the lock an import holds: a flock of the channel directory.
    local rc = F.shell([[
W=$1; R=$2; DIR=$3
flock "$R/b" sleep 1.5 &
sleep 0.3
TZ=UTC "$A" --root "$R" import bus "$DIR" --into b >"$W/out" 2>"$W/err"
echo $? >"$W/rc"
wait
]], {}, work, root, BUS)
    assert.equal(0, rc)
    local err = F.read(work .. "/err")
    assert.equal("0\n", F.read(work .. "/rc"), err)
    assert.equal(BUS_WARNINGS .. "agent-chat: waiting for another import into 'b' to finish\n", err)
    assert.equal("imported 5 messages (0 already present, 5 lines skipped)\n"
      .. "recorded 2 acks (0 already present)\n", F.read(work .. "/out"))
  end)

  it("eight imports of one folder into a missing channel: one creates it, each message posted once", function()
    local root = F.new_root()
    local work = F.tmpdir()
    local lines = { 'W=$1; R=$2; DIR=$3', 'job() {',
      '  while [ ! -e "$W/go" ]; do sleep 0.005; done',
      '  TZ=UTC "$A" --root "$R" import bus "$DIR" --into b >"$W/out.$1" 2>"$W/err.$1"; echo $? >"$W/rc.$1"; }' }
    for i = 1, 8 do
      lines[#lines + 1] = "job " .. i .. " &"
    end
    lines[#lines + 1] = 'sleep 0.2; : >"$W/go"; wait'
    assert.equal(0, F.shell(table.concat(lines, "\n") .. "\n", {}, work, root, BUS))
    local created, imported, acked = 0, 0, 0
    for i = 1, 8 do
      local out, err = F.read(work .. "/out." .. i), F.read(work .. "/err." .. i)
      assert.equal("0\n", F.read(work .. "/rc." .. i), err)
      assert.is_nil(F.crashed(err), err)
      local _, warnings = err:gsub("agent%-chat: warning: ", "")
      assert.equal(BUS_WARNING_LINES, warnings, err)
      if out:find("^created channel 'b' ") then
        created = created + 1
      end
      imported = imported + tonumber(out:match("imported (%d+) messages"))
      acked = acked + tonumber(out:match("recorded (%d+) acks"))
    end
    assert.equal(1, created)
    assert.equal(5, imported)
    assert.equal(2, acked)
    local seen = {}
    for _, m in ipairs(messages(root, "b")) do
      local id = m.fields.import_id
      assert.is_nil(seen[id], "posted twice: " .. tostring(id))
      seen[id] = true
    end
    assert.equal(5, #messages(root, "b"))
    local r = run(root, "fsck")
    assert.equal(0, r.code, F.describe(r))
  end)
end)
