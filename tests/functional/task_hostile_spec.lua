-- Hostile input to the task board (issue 3 acceptance; docs/format.md 2.4, 2.5,
-- 3.1, 3.5, 3.6, 5.4, 5.5): task ids and channel names with "..", "/",
-- control characters; files_hint escaping the channel; hand-edited task
-- records and claim files (extra fields, wrong types, a dependency cycle);
-- truncated and escaping lease journals. Each case gives one clear coded
-- error line with exit 2 and changes NOTHING: the whole tree under the
-- root's parent (which also holds bait files outside the channel) is
-- snapshotted before and after every command.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local T = require "tasksupport"
local json = require "agentchat.json"

local TS = "2030-01-01T00:00:00+00:00"
local FAR = "2099-01-01T00:05:00.000000+00:00"

--- A board: channel c with t1 (open) and t2 (leased by alice), the
--- _tasks.lock already made, bait files outside the channel.
local function board()
  local parent = T.scratch()
  local root = parent .. "/root"
  T.must(root, { "init", "c" })
  T.must(root, { "task", "create", "c", "t1", "--from", "lead", "--title", "One" })
  T.must(root, { "task", "create", "c", "t2", "--from", "lead", "--title", "Two" })
  T.must(root, { "task", "claim", "c", "t2", "--as", "alice" })
  F.write(parent .. "/outside.json", "bait\n")
  F.write(root .. "/x.json", "bait\n")
  os.execute("mkdir " .. F.sh(parent .. "/outside"))
  F.write(parent .. "/outside/f", "bait\n")
  return root, parent
end

local function no_raw_controls(s)
  return not s:sub(1, -2):find("[%z\1-\31\127]")
end

--- Run and assert: exit 2, no stdout, one "agent-chat: CODE: ..." line
--- (exactly `text` when given, else starting with `code`), no raw control
--- characters, and nothing under `parent` changed.
local function refused(parent, root, argv, code, text)
  local before = F.snapshot(parent)
  local r = T.run(root, argv)
  assert.is_nil(F.crashed(r.stderr), F.describe(r))
  assert.equal(2, r.code, F.describe(r))
  assert.equal("", r.stdout, F.describe(r))
  assert.is_nil(F.error_line(r.stderr), F.describe(r))
  assert.is_true(no_raw_controls(r.stderr), "raw control character in " .. F.describe(r))
  if text then
    assert.equal("agent-chat: " .. code .. ": " .. text .. "\n", r.stderr)
  else
    assert.equal("agent-chat: " .. code .. ": ", r.stderr:sub(1, 14 + #code), F.describe(r))
  end
  assert.same({}, F.diff(before, F.snapshot(parent)), F.describe(r))
  return r
end

-- Every task subcommand that takes a task id, with `id` in place.
local function id_commands(id)
  return {
    { "task", "show", "c", id },
    { "task", "update", "c", id, "--as", "alice", "--title", "x" },
    { "task", "claim", "c", id, "--as", "alice" },
    { "task", "renew", "c", id, "--as", "alice" },
    { "task", "release", "c", id, "--as", "alice" },
    { "task", "done", "c", id, "--as", "alice" },
    { "task", "block", "c", id, "--as", "alice" },
    { "task", "recover", "c", id, "--as", "bob", "--reason", "r" },
  }
end

-- ---------------------------------------------------------------- ids

describe("hostile task ids", function()
  local IDS = { "..", ".", "../x", "../../etc/passwd", "a/b", "/abs", "a\\b", "a:b", "a\1b", "a\nb",
                "tab\tid", "\27[31m", "del\127", ".hidden", ".lease-transaction", "bad id", "" }
  -- What create says: text first (empty; NUL, CR, LF), then the characters.
  local function create_msg(id, field)
    if id == "" then
      return field .. " must not be empty"
    elseif id:find("[%z\r\n]") then
      return field .. " contains a forbidden control character"
    end
    return field .. " must contain only letters, digits, '.', '_' or '-'"
  end

  for _, id in ipairs(IDS) do
    it(F.show(T.pyrepr(id)) .. " is refused by create and by every lookup", function()
      local root, parent = board()
      refused(parent, root, { "task", "create", "c", id, "--from", "lead", "--title", "t" },
        "TASK_INVALID_ID", create_msg(id, "id"))
      for _, argv in ipairs(id_commands(id)) do
        refused(parent, root, argv, "TASK_INVALID_ID", "unsafe task id: " .. T.pyrepr(id))
      end
      local dep = id == "" and "a/b" or id
      refused(parent, root, { "task", "create", "c", "t3", "--from", "lead", "--title", "t",
                              "--depends-on", dep },
        "TASK_INVALID_DEPENDENCY_ID", create_msg(dep, "dependency"))
    end)
  end

  it("a 300-byte id is not found on lookup, and changes nothing", function()
    local root, parent = board()
    local id = string.rep("a", 300)
    for _, argv in ipairs(id_commands(id)) do
      refused(parent, root, argv, "TASK_NOT_FOUND", "task record does not exist: " .. id)
    end
  end)

  -- A 300-byte id cannot name a file: create refuses it (TASK_INVALID_ID),
-- exit 2, nothing changed.
  it("a 300-byte id gets a clear error from create and changes nothing", function()
    local root, parent = board()
    local id = string.rep("a", 300)
    local before = F.snapshot(parent)
    local r = T.run(root, { "task", "create", "c", id, "--from", "lead", "--title", "t" })
    assert.equal(2, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
    assert.truthy(r.stderr:match("^agent%-chat: TASK_INVALID_ID: ") or r.stderr:match("^agent%-chat: TASK_IO_ERROR: "),
      F.describe(r))
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  -- A 250-byte id fits tasks/<id>.json but not claims/<id>.<owner>.json: the
-- claim is refused before anything is written (exit 2), and a pending
-- journal is always recoverable.
  it("a 250-byte id: claim fails cleanly or works, and never wedges the board", function()
    local root = board()
    local id = string.rep("b", 250)
    T.must(root, { "task", "create", "c", id, "--from", "lead", "--title", "long" })
    local before = F.snapshot(root)
    local r = T.run(root, { "task", "claim", "c", id, "--as", "alice" })
    if r.code ~= 0 then
      local d = F.diff(before, F.snapshot(root))
      -- recover-pending must be able to undo whatever was left
      if #d > 0 then
        local rp = T.run(root, { "task", "recover-pending", "c", "--as", "ops" })
        assert.equal(0, rp.code, F.describe(r) .. "\nleft " .. table.concat(d, "; ") .. "\nthen "
          .. F.describe(rp))
      end
      assert.is_nil(F.read(root .. "/c/claims/.lease-transaction.json"), "a journal is left")
      -- the rest of the board still works
      T.must(root, { "task", "claim", "c", "t1", "--as", "carol" })
      assert.is_nil(F.error_line(r.stderr), F.describe(r))
      assert.equal(2, r.code, F.describe(r))
      assert.same({}, d, "the refused claim changed the channel")
    end
  end)
end)

-- ---------------------------------------------------------------- channels

describe("hostile channel names in task commands", function()
  local TRAVERSAL = "invalid channel name: %s (invalid channel name (path traversal blocked): %s)"
  local RESERVED = "invalid channel name: %s (invalid channel name (reserved prefix blocked): %s)"
  local NAMES = {
    { "..", TRAVERSAL }, { ".", TRAVERSAL }, { "../x", TRAVERSAL }, { "../root/c", TRAVERSAL },
    { "a/b", TRAVERSAL }, { "/abs", TRAVERSAL }, { "a\\b", TRAVERSAL }, { "a:b", TRAVERSAL },
    { "", TRAVERSAL }, { ".hidden", RESERVED }, { "_x", RESERVED },
    -- Control characters: the TASK_INVALID_CHANNEL line shows the name escaped
-- (format.md 2.5/5.4: every failure is exactly one line).
    { "a\nb" }, { "a\tb" }, { "\27[31m" },
  }

  local function commands(name)
    local out = {
      { "task", "list", name },
      { "task", "create", name, "t9", "--from", "lead", "--title", "t" },
      { "task", "recover-pending", name, "--as", "ops" },
    }
    for _, argv in ipairs(id_commands("t1")) do
      argv[3] = name
      out[#out + 1] = argv
    end
    return out
  end

  for _, case in ipairs(NAMES) do
    local name, fmt = case[1], case[2]
    it(F.show(T.pyrepr(name)) .. " gives TASK_INVALID_CHANNEL in every task command, nothing changed", function()
      local root, parent = board()
      for _, argv in ipairs(commands(name)) do
        if fmt then
          -- names are quoted as given, like the core message (format.md 2, 2.4)
          refused(parent, root, argv, "TASK_INVALID_CHANNEL", fmt:format("'" .. name .. "'", "'" .. name .. "'"))
        else
          refused(parent, root, argv, "TASK_INVALID_CHANNEL")
        end
      end
    end)
  end

  it("a channel that is valid for messages but not a safe name: list works, mutations refused", function()
    local root, parent = board()
    os.execute("mkdir " .. F.sh(root .. "/odd name"))
    F.write(root .. "/odd name/_meta.json", F.read(root .. "/c/_meta.json"))
    local r = T.run(root, { "task", "list", "odd name" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("ID  STATUS  OWNER  DEPENDS_ON  TITLE\n(no tasks)\n", r.stdout)
    refused(parent, root, { "task", "create", "odd name", "t1", "--from", "lead", "--title", "t" },
      "TASK_INVALID_CHANNEL", "channel is not a safe channel name")
  end)
end)

-- ---------------------------------------------------------------- files_hint

describe("files_hint that escapes the channel", function()
  local OUT = "files_hint path is outside the channel workspace: "

  local function symlinks(root, parent)
    local c = root .. "/c"
    os.execute(table.concat({
      "ln -s " .. F.sh(parent .. "/outside") .. " " .. F.sh(c .. "/link"),
      "ln -s ../../outside " .. F.sh(c .. "/rel"),
      "ln -s " .. F.sh(parent .. "/outside.json") .. " " .. F.sh(c .. "/pw"),
      "ln -s /nonexistent/x " .. F.sh(c .. "/dang"),
      "ln -s loop " .. F.sh(c .. "/loop"),
      "ln -s .. " .. F.sh(c .. "/up"),
      "mkdir " .. F.sh(c .. "/src"),
      "ln -s ../.. " .. F.sh(c .. "/src/up2"),
    }, " && "))
  end

  -- { hint, reason text (nil: any TASK_PATH_OUTSIDE_WORKSPACE) }
  local HINTS = {
    { "/etc/passwd", "absolute paths are not allowed" },
    { "../escape", "parent traversal is not allowed" },
    { "a/../../x", "parent traversal is not allowed" },
    { "src/../../root/c/x", "parent traversal is not allowed" },
    { "C:/windows", "absolute paths are not allowed" },
    { "a:b" },
    { "a\\..\\..\\x" },
    { "link" }, { "link/f" }, { "rel/f" }, { "pw" }, { "dang" }, { "loop/x" },
    { "up/outside.json" }, { "src/up2/x" },
  }

  for _, case in ipairs(HINTS) do
    local hint, reason = case[1], case[2]
    it(F.show(hint) .. " is refused by create and update, nothing changed", function()
      local root, parent = board()
      symlinks(root, parent)
      local text = reason and (OUT .. T.pyrepr(hint) .. " (" .. reason .. ")")
      refused(parent, root, { "task", "create", "c", "t3", "--from", "lead", "--title", "t",
                              "--files-hint", "ok.txt," .. hint }, "TASK_PATH_OUTSIDE_WORKSPACE", text)
      refused(parent, root, { "task", "update", "c", "t1", "--as", "lead", "--files-hint", hint },
        "TASK_PATH_OUTSIDE_WORKSPACE", text)
    end)
  end

  it("paths that stay inside, through symlinks too, are accepted", function()
    local root, parent = board()
    symlinks(root, parent)
    T.must(root, { "task", "create", "c", "t3", "--from", "lead", "--title", "t",
                   "--files-hint", "src/main.c,./x,up/c/inside,src/up2/c/y,docs/" })
  end)

  -- The Python tool checks only NUL in a hint's text: other control
  -- characters are names, and a backslash is a separator.
  it("control characters other than NUL are text, backslashes separators", function()
    local root = board()
    T.must(root, { "task", "create", "c", "t3", "--from", "lead", "--title", "t",
                   "--files-hint", "a\nb,tab\there,del\127,src\\main.c" })
    local rec = json.loads(F.read(root .. "/c/tasks/t3.json"))
    assert.same({ "a\nb", "tab\there", "del\127", "src\\main.c" }, rec.files_hint)
  end)

  it("a record whose files_hint became a symlink to outside breaks every command, nothing changed", function()
    local root, parent = board()
    T.must(root, { "task", "create", "c", "t3", "--from", "lead", "--title", "t", "--files-hint", "later/x" })
    os.execute("ln -s " .. F.sh(parent .. "/outside") .. " " .. F.sh(root .. "/c/later"))
    local text = OUT .. "'later/x' (resolved path escapes the workspace)"
    refused(parent, root, { "task", "list", "c" }, "TASK_PATH_OUTSIDE_WORKSPACE", text)
    for _, argv in ipairs(id_commands("t1")) do
      refused(parent, root, argv, "TASK_PATH_OUTSIDE_WORKSPACE", text)
    end
  end)
end)

-- ---------------------------------------------------------------- records

describe("hand-edited task records", function()
  local function every_command(parent, root, code, text)
    refused(parent, root, { "task", "list", "c" }, code, text)
    refused(parent, root, { "task", "create", "c", "t9", "--from", "lead", "--title", "t" }, code, text)
    -- recover-pending reads no task record when there is no journal (the
    -- Python tool's order): it still only says that nothing is pending.
    refused(parent, root, { "task", "recover-pending", "c", "--as", "ops" },
      "LEASE_TRANSACTION_NOT_FOUND", "no pending lease transaction exists")
    for _, argv in ipairs(id_commands("t1")) do
      refused(parent, root, argv, code, text)
    end
  end

  local function put(root, name, text)
    F.write(root .. "/c/tasks/" .. name, text)
  end

  local function with_field(field, raw)
    local rec = T.record{ id = "t1", channel = "c" }
    local out, n = rec:gsub('\n  "' .. field .. '": [^\n]*\n', '\n  "' .. field .. '": ' .. raw .. "\n", 1)
    if n == 0 then   -- last field: no trailing comma
      out = rec:gsub('\n  "' .. field .. '": [^\n]*', '\n  "' .. field .. '": ' .. raw, 1)
    end
    -- keep the comma the original line had
    return out
  end

  -- { field, raw JSON replacing the value (comma kept), expected code, exact text or nil }
  local TYPES = {
    { "id", "5,", "TASK_INVALID_ID", "id must be a string" },
    { "id", '"T1",', "TASK_RECORD_ID_MISMATCH", "task id 'T1' does not match filename 't1.json'" },
    { "id", '"../t1",', "TASK_INVALID_ID" },
    { "channel", "7,", "TASK_INVALID_CHANNEL" },
    { "channel", '"elsewhere",', "TASK_CHANNEL_MISMATCH", "task channel 'elsewhere' does not match 'c'" },
    { "title", "5,", "TASK_INVALID_TITLE" },
    { "title", "null,", "TASK_INVALID_TITLE" },
    { "title", '["a"],', "TASK_INVALID_TITLE" },
    { "title", '"two\\nlines",', "TASK_INVALID_TITLE", "title contains a forbidden control character" },
    { "status", "1,", "TASK_INVALID_STATUS" },
    { "status", '"paused",', "TASK_INVALID_STATUS", "unknown task status: 'paused'" },
    { "owner", '"",', "TASK_INVALID_OWNER", "owner must not be empty" },
    { "owner", "3,", "TASK_INVALID_OWNER" },
    { "owner", "[],", "TASK_INVALID_OWNER" },
    { "created_by", '"",', "TASK_INVALID_CREATED_BY", "created_by must not be empty" },
    { "created_by", "9,", "TASK_INVALID_CREATED_BY" },
    { "created_by", "null,", "TASK_INVALID_CREATED_BY" },
    { "depends_on", '"t2",', "TASK_INVALID_DEPENDS_ON" },
    { "depends_on", "null,", "TASK_INVALID_DEPENDS_ON" },
    { "depends_on", "{},", "TASK_INVALID_DEPENDS_ON" },
    { "depends_on", "[1],", "TASK_INVALID_DEPENDENCY_ID" },
    { "depends_on", '["../t2"],', "TASK_INVALID_DEPENDENCY_ID",
      "dependency must contain only letters, digits, '.', '_' or '-'" },
    { "depends_on", '["t2", "t2"],', "TASK_DUPLICATE_DEPENDENCY", "dependency is listed more than once: t2" },
    { "depends_on", '["t1"],', "TASK_DEPENDENCY_CYCLE", "dependency cycle includes task t1" },
    { "depends_on", '["nope"],', "TASK_UNKNOWN_DEPENDENCY", "task t1 references unknown dependency nope" },
    { "files_hint", '{"a": 1},', "TASK_INVALID_FILES_HINT", "files_hint must be a JSON array" },
    { "files_hint", '"x",', "TASK_INVALID_FILES_HINT", "files_hint must be a JSON array" },
    { "files_hint", "[5],", "TASK_PATH_OUTSIDE_WORKSPACE",
      "files_hint path is outside the channel workspace: 5 (invalid path text)" },
    { "files_hint", '["/etc/passwd"],', "TASK_PATH_OUTSIDE_WORKSPACE",
      "files_hint path is outside the channel workspace: '/etc/passwd' (absolute paths are not allowed)" },
    { "acceptance", '"x",', "TASK_INVALID_ACCEPTANCE" },
    { "acceptance", "[true],", "TASK_INVALID_ACCEPTANCE" },
    { "lease_expires_at", '"2030-01-01T00:00:00",', "TASK_INVALID_TIMESTAMP",
      "lease_expires_at must include an explicit UTC offset" },
    { "lease_expires_at", "5,", "TASK_INVALID_TIMESTAMP" },
    { "lease_expires_at", '"tomorrow",', "TASK_INVALID_TIMESTAMP" },
    { "lease_expires_at", '"",', "TASK_INVALID_TIMESTAMP" },
    { "branch", '"",', "TASK_INVALID_BRANCH", "branch must not be empty" },
    { "branch", "5,", "TASK_INVALID_BRANCH" },
    { "updated_at", '"2030-01-01T00:00:00"', "TASK_INVALID_TIMESTAMP",
      "updated_at must include an explicit UTC offset" },
    { "updated_at", '"2030-01-01 00:00"', "TASK_INVALID_TIMESTAMP" },
    { "updated_at", "null", "TASK_INVALID_TIMESTAMP" },
    { "updated_at", "1893456000", "TASK_INVALID_TIMESTAMP" },
  }

  for _, case in ipairs(TYPES) do
    local field, raw, code, text = case[1], case[2], case[3], case[4]
    it(field .. " = " .. raw:gsub(",$", "") .. " makes every task command fail with " .. code, function()
      local root, parent = board()
      local rec = with_field(field, raw)
      assert.truthy(rec:find('"' .. field .. '": ' .. raw, 1, true), rec)
      put(root, "t1.json", rec)
      every_command(parent, root, code, text)
    end)
  end

  it("an extra field, a missing field, a non-object, a truncated record", function()
    local root, parent = board()
    local good = F.read(root .. "/c/tasks/t1.json")
    put(root, "t1.json", (good:gsub('\n}\n$', ',\n  "priority": "high"\n}\n')))
    every_command(parent, root, "TASK_UNKNOWN_FIELD", "task record contains unknown fields")
    put(root, "t1.json", (good:gsub('\n  "branch": null,', "")))
    every_command(parent, root, "TASK_REQUIRED_FIELD_MISSING", "required task field is missing")
    put(root, "t1.json", '["t1"]\n')
    every_command(parent, root, "TASK_INVALID_RECORD", "task record must be a JSON object")
    put(root, "t1.json", '{\n  "id": "t1",\n  "chan')
    every_command(parent, root, "TASK_INVALID_RECORD",
      "could not read task record t1.json: Unterminated string starting at: line 3 column 3 (char 18)")
    put(root, "t1.json", "")
    every_command(parent, root, "TASK_INVALID_RECORD",
      "could not read task record t1.json: Expecting value: line 1 column 1 (char 0)")
    put(root, "t1.json", good:sub(1, 40))
    refused(parent, root, { "task", "list", "c" }, "TASK_INVALID_RECORD")
  end)

  it("a dependency cycle across three hand-written records", function()
    local root, parent = board()
    put(root, "a.json", T.record{ id = "a", channel = "c", depends_on = { "b" } })
    put(root, "b.json", T.record{ id = "b", channel = "c", depends_on = { "cc" } })
    put(root, "cc.json", T.record{ id = "cc", channel = "c", depends_on = { "a" } })
    every_command(parent, root, "TASK_DEPENDENCY_CYCLE", "dependency cycle includes task a")
    -- breaking the cycle makes the board usable again
    put(root, "cc.json", T.record{ id = "cc", channel = "c" })
    local r = T.run(root, { "task", "list", "c" })
    assert.equal(0, r.code, F.describe(r))
  end)

  it("files the readers ignore (dot, underscore, not .json) stay ignored", function()
    local root = board()
    put(root, ".hidden.json", "garbage")
    put(root, "_under.json", "garbage")
    put(root, "notes.txt", "garbage")
    local r = T.run(root, { "task", "list", "c" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(3, #F.lines(r.stdout))
  end)
end)

describe("hand-edited claim files", function()
  local function claim(over)
    local f = { task_id = "t2", channel = "c", owner = "alice", lease_expires_at = FAR,
                claimed_at = TS, updated_at = TS }
    for k, v in pairs(over or {}) do
      f[k] = v
    end
    return T.claim(f)
  end

  local function lease_commands()
    return {
      { "task", "claim", "c", "t2", "--as", "bob" },
      { "task", "renew", "c", "t2", "--as", "alice" },
      { "task", "release", "c", "t2", "--as", "alice" },
      { "task", "done", "c", "t2", "--as", "alice" },
      { "task", "recover", "c", "t2", "--as", "bob", "--reason", "r" },
    }
  end

  local function setup()
    local root, parent = board()
    F.write(root .. "/c/tasks/t2.json", T.record{ id = "t2", channel = "c", title = "Two",
      status = "in_progress", owner = "alice", lease_expires_at = FAR })
    F.write(root .. "/c/claims/t2.alice.json", claim())
    T.must(root, { "task", "renew", "c", "t2", "--as", "alice" })   -- the hand-made lease is valid
    F.write(root .. "/c/tasks/t2.json", T.record{ id = "t2", channel = "c", title = "Two",
      status = "in_progress", owner = "alice", lease_expires_at = FAR })
    F.write(root .. "/c/claims/t2.alice.json", claim())
    return root, parent
  end

  it("an extra field, a truncated file, a disagreeing expiry, a second claim: coded errors", function()
    local root, parent = setup()
    F.write(root .. "/c/claims/t2.alice.json", (claim():gsub('\n}\n$', ',\n  "note": "x"\n}\n')))
    for _, argv in ipairs(lease_commands()) do
      refused(parent, root, argv, "LEASE_UNKNOWN_FIELD", "lease record contains unknown fields")
    end
    F.write(root .. "/c/claims/t2.alice.json", "")
    for _, argv in ipairs(lease_commands()) do
      refused(parent, root, argv, "LEASE_INVALID_RECORD",
        "could not read lease record t2.alice.json: Expecting value: line 1 column 1 (char 0)")
    end
    F.write(root .. "/c/claims/t2.alice.json", claim{ lease_expires_at = "2098-01-01T00:00:00+00:00" })
    for _, argv in ipairs(lease_commands()) do
      refused(parent, root, argv, "LEASE_INCONSISTENT")
    end
    F.write(root .. "/c/claims/t2.alice.json", claim())
    F.write(root .. "/c/claims/t2.bob.json", claim{ owner = "bob" })
    for _, argv in ipairs(lease_commands()) do
      refused(parent, root, argv, "LEASE_INCONSISTENT")
    end
    -- task list does not read claims (format.md 3.6)
    assert.equal(0, T.run(root, { "task", "list", "c" }).code)
  end)

  it("a claim file naming another channel or a wrong owner", function()
    local root, parent = setup()
    F.write(root .. "/c/claims/t2.alice.json", claim{ channel = "other" })
    for _, argv in ipairs(lease_commands()) do
      refused(parent, root, argv, "LEASE_INCONSISTENT", "lease channel 'other' does not match 'c'")
    end
    F.write(root .. "/c/claims/t2.alice.json", claim{ owner = "bob" })
    for _, argv in ipairs(lease_commands()) do
      refused(parent, root, argv, "LEASE_RECORD_ID_MISMATCH",
        "lease identity does not match filename 't2.alice.json'")
    end
  end)
end)

-- ---------------------------------------------------------------- journals

describe("hostile lease journals", function()
  local JOURNAL_TXID = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"

  --- A v2 journal: bob's claim of t1, prepared; `over` replaces fields.
  local function journal(over)
    local before = T.record{ id = "t1", channel = "c" }
    local after = T.record{ id = "t1", channel = "c", status = "in_progress", owner = "bob",
      lease_expires_at = FAR, updated_at = "2030-01-01T00:00:00.000000+00:00" }
    local claim = T.claim{ task_id = "t1", channel = "c", owner = "bob", lease_expires_at = FAR,
      claimed_at = "2030-01-01T00:00:00.000000+00:00", updated_at = "2030-01-01T00:00:00.000000+00:00" }
    local j = {
      version = 2, phase = "prepared", transaction_id = JOURNAL_TXID, task_id = "t1",
      task_file = "tasks/t1.json", task_before = T.b64encode(before), task_after = T.b64encode(after),
      claim_changes = json.array{ { file = "t1.bob.json", previous = json.null, next = T.b64encode(claim) } },
      event = "lease.claimed", details = { lease_expires_at = FAR, lease_owner = "bob" },
    }
    for k, v in pairs(over or {}) do
      j[k] = v
    end
    return json.dumps(j, { indent = 2, sort_keys = true, ensure_ascii = false }) .. "\n", before
  end

  --- A board whose t1 record has exactly the journal's "before" bytes.
  local function setup()
    local root, parent = board()
    local _, before = journal()
    F.write(root .. "/c/tasks/t1.json", before)
    return root, parent
  end

  --- Every lease command and task update refuses with code/text; so does
  --- recover-pending, or with rp_code/rp_text when given (a journal whose
  --- shape is readable blocks the others as pending, and only
  --- recover-pending looks into it, in the Python tool's order).
  local function guarded(parent, root, code, text, rp_code, rp_text)
    local cmds = {
      { "task", "claim", "c", "t1", "--as", "carol" },
      { "task", "renew", "c", "t2", "--as", "alice" },
      { "task", "release", "c", "t2", "--as", "alice" },
      { "task", "done", "c", "t2", "--as", "alice" },
      { "task", "recover", "c", "t2", "--as", "bob", "--reason", "r" },
      { "task", "update", "c", "t1", "--as", "lead", "--title", "x" },
    }
    local pending = {
      { "task", "recover-pending", "c", "--as", "ops" },
      { "task", "recover-pending", "c", "--as", "ops", "--resolve-publication", "rollback" },
      { "task", "recover-pending", "c", "--as", "ops", "--resolve-publication", "published" },
    }
    for _, argv in ipairs(cmds) do
      refused(parent, root, argv, code, text)
    end
    for _, argv in ipairs(pending) do
      refused(parent, root, argv, rp_code or code, rp_code and rp_text or text)
    end
  end

  local PENDING = "a previous lease mutation needs explicit recovery"

  -- Cut points in the journal above (1611 bytes) and Python's json.loads
  -- message for the cut text (checked with python3 on this machine).
  local CUTS = {
    { 0, "Expecting value: line 1 column 1 (char 0)" },
    { 1, "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)" },
    { 22, "Expecting value: line 2 column 21 (char 22)" },
    { 84, "Unterminated string starting at: line 5 column 15 (char 72)" },
    { 629, "Expecting ',' delimiter: line 12 column 4 (char 629)" },
    { 674, "Unterminated string starting at: line 14 column 12 (char 670)" },
    { 805, "Unterminated string starting at: line 15 column 17 (char 698)" },
    { 1609, "Expecting ',' delimiter: line 21 column 1 (char 1609)" },
  }

  it("the crafted journal is what the cut points were computed for", function()
    local text = journal()
    assert.equal(1611, #text)
    assert.equal('"phase": "pre', text:sub(662, 674))
  end)

  for _, cut in ipairs(CUTS) do
    it("a journal cut at byte " .. cut[1] .. ": LEASE_TRANSACTION_INVALID everywhere, nothing changed", function()
      local root, parent = setup()
      local text = journal()
      F.write(root .. "/c/claims/.lease-transaction.json", text:sub(1, cut[1]))
      guarded(parent, root, "LEASE_TRANSACTION_INVALID", "could not read transaction journal: " .. cut[2])
      -- show, list and create do not look at the journal (format.md 3.6)
      local r = T.run(root, { "task", "show", "c", "t1" })
      assert.equal(0, r.code, F.describe(r))
      r = T.run(root, { "task", "list", "c" })
      assert.equal(0, r.code, F.describe(r))
    end)
  end

  it("the intact journal is pending and rolls back (control case)", function()
    local root = setup()
    local text, before = journal()
    F.write(root .. "/c/claims/.lease-transaction.json", text)
    local r = T.run(root, { "task", "claim", "c", "t1", "--as", "carol" })
    assert.equal("agent-chat: LEASE_TRANSACTION_PENDING: a previous lease mutation needs explicit recovery\n",
      r.stderr)
    T.must(root, { "task", "recover-pending", "c", "--as", "ops" })
    assert.equal(before, F.read(root .. "/c/tasks/t1.json"))
    assert.is_nil(F.read(root .. "/c/claims/t1.bob.json"))
  end)

  local SHAPE = "transaction journal has an unsupported shape"
  local LAYOUT = "transaction journal task path outside tasks layout: "
  local CLAIMS = "claim change filename outside claims layout: "
  -- Journals that try to make recovery write or delete outside claims/ and
  -- tasks/ (bait: <parent>/outside.json, <root>/x.json, c/x.json), and
  -- what recover-pending says of each.
  local ESCAPES = {
    { "task_file ../x.json", { task_file = "../x.json" }, LAYOUT .. "../x.json" },
    { "task_file tasks/../../x.json", { task_file = "tasks/../../x.json" }, LAYOUT .. "tasks/../../x.json" },
    { "task_file /abs", { task_file = "/tmp/x.json" }, LAYOUT .. "/tmp/x.json" },
    { "task_file of another task", { task_file = "tasks/t2.json" },
      "transaction task_id does not match task_file stem" },
    { "task_id ../x", { task_id = "../x", task_file = "tasks/../x.json" }, LAYOUT .. "tasks/../x.json" },
    { "claim file ../x.json", { claim_changes = json.array{ { file = "../x.json", previous = json.null,
                                                              next = T.b64encode("evil\n") } } },
      CLAIMS .. "'../x.json'" },
    { "claim file ../../outside.json", { claim_changes = json.array{ { file = "../../outside.json",
        previous = T.b64encode("evil\n"), next = json.null } } }, CLAIMS .. "'../../outside.json'" },
    { "claim file /abs", { claim_changes = json.array{ { file = "/tmp/evil.json", previous = json.null,
                                                         next = json.null } } }, CLAIMS .. "'/tmp/evil.json'" },
    { "claim file in a subdirectory", { claim_changes = json.array{ { file = "sub/t1.bob.json",
        previous = json.null, next = json.null } } }, CLAIMS .. "'sub/t1.bob.json'" },
    { "claim file naming the journal", { claim_changes = json.array{ { file = ".lease-transaction.json",
        previous = json.null, next = json.null } } }, CLAIMS .. "'.lease-transaction.json'" },
  }

  for _, case in ipairs(ESCAPES) do
    for _, phase in ipairs({ "prepared", "applied" }) do
      it("a " .. phase .. " journal with " .. case[1] .. ": LEASE_TRANSACTION_INVALID, nothing touched", function()
        local root, parent = setup()
        local over = { phase = phase }
        for k, v in pairs(case[2]) do
          over[k] = v
        end
        F.write(root .. "/c/x.json", "bait\n")
        F.write(root .. "/c/claims/.lease-transaction.json", (journal(over)))
        guarded(parent, root, "LEASE_TRANSACTION_PENDING", PENDING, "LEASE_TRANSACTION_INVALID", case[3])
      end)
    end
  end

  -- A journal may only name its own task's lease files (<task>.<owner>.json,
-- format.md 3.6): another task's claim file is LEASE_TRANSACTION_INVALID and
-- that task stays untouched.
  it("a journal whose claim change names another task's claim file is refused", function()
    local root, parent = setup()
    F.write(root .. "/c/claims/.lease-transaction.json", (journal{ claim_changes = json.array{
      { file = "t2.alice.json", previous = json.null, next = json.null } } }))
    local r = T.run(root, { "task", "recover-pending", "c", "--as", "ops" })
    assert.truthy(F.read(root .. "/c/claims/t2.alice.json"), "t2's claim was deleted by " .. F.describe(r))
    assert.equal(2, r.code, F.describe(r))
    guarded(parent, root, "LEASE_TRANSACTION_PENDING", PENDING, "LEASE_TRANSACTION_INVALID",
      "claim change filename does not belong to task: 't2.alice.json'")
  end)

  it("other unusable journals: wrong version, missing transaction_id, bad base64, not an object", function()
    local root, parent = setup()
    local J = root .. "/c/claims/.lease-transaction.json"
    F.write(J, '{"version": 9}')
    guarded(parent, root, "LEASE_TRANSACTION_INVALID", SHAPE)
    F.write(J, '["version", 2]')
    guarded(parent, root, "LEASE_TRANSACTION_INVALID", SHAPE)
    local text = journal():gsub('  "transaction_id": "[0-9a-f]+",\n', "")
    F.write(J, text)
    guarded(parent, root, "LEASE_TRANSACTION_INVALID", "transaction journal is missing transaction_id")
    F.write(J, (journal{ task_after = "!!not base64!!" }))
    guarded(parent, root, "LEASE_TRANSACTION_PENDING", PENDING, "LEASE_TRANSACTION_INVALID",
      "transaction journal bytes are not valid base64")
    F.write(J, (journal{ phase = "exploded" }))
    guarded(parent, root, "LEASE_TRANSACTION_INVALID",
      "version 2 transaction journal requires an explicit valid phase")
  end)
end)
