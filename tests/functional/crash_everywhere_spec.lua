-- Crash everywhere (issue 8): every mutating command, killed or failed at
-- every fault point it reaches, named or system call, ends in the state
-- before it or after it once the documented recovery ran. The model and the
-- command table are in crashsupport.lua; in short, for each command of
-- C.COMMANDS (post, task claim, task done, task recover, lock, unlock, ack,
-- compact, and task create and update):
--
--   1. a clean run with AGENT_CHAT_FAULT_LOG and AGENT_CHAT_FAULT_LOG_SYS=1
--      lists its fault points in order: the named points and one sys.<call>
--      per mutating system call (the run is done twice: the lists must be
--      equal);
--   2. for every index N, a fresh copy of the prepared channel runs the
--      command with "sys.*#N:<action>", and for every named point P reached
--      k times, with "P#k:<action>"; the actions are crash (SIGKILL there),
--      fail:EIO and fail:ENOSPC (the call fails with that errno; a failed
--      write lands half its buffer first);
--   3. after the documented recovery (an aged _seq.lock; `task
--      recover-pending` when a lease journal is left; path-lock
--      `recover-pending`; nothing for post), the visible files of the
--      channel (timestamps and random ids normalized) are exactly those
--      before the command or after a clean run (compact also has the
--      documented stage "state.md rewritten, state.compacted not yet
--      posted", task create/update "record written, audit message not
--      posted" after a crash), and which one is decided by the position:
--      before the commit call (the link() of the command's message) before,
--      after it after, for crash and fail alike (task create/update undo an
--      error); a run that exited 0 is fully visible; a failed run printed
--      one coded error line naming the errno, and one after the commit
--      point the code the table documents (LEASE_TRANSACTION_CLEANUP_FAILED,
--      PATH_LOCK_TRANSACTION_PENDING);
--   4. `read --all --peek` shows exactly the message files (no temp file,
--      nothing partial), `task list` and `check` work, the next post and
--      read work, and `agent-chat fsck` exits 0 once the binary has fsck.
--
-- A guard checks that src/ makes no mutating system call except through
-- the wrappers (so the walk reaches every one of them).
--
-- `make test` runs a deterministic subset (every crash state: each named
-- point and each system call no named point directly precedes; every
-- point failing with EIO; ENOSPC at every named point and every 3rd system
-- call); `make torture` (AGENT_CHAT_CRASH_ALL=1) runs every point with
-- every action. The summary on stderr gives the counts.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local C = require "crashsupport"

local FULL = (os.getenv("AGENT_CHAT_CRASH_ALL") or "") ~= "" and os.getenv("AGENT_CHAT_CRASH_ALL") ~= "0"

local summary = {}

local function keys(set)
  local out = {}
  for k in pairs(set) do
    out[#out + 1] = k
  end
  table.sort(out)
  return table.concat(out, " ")
end
local totals = { runs = 0, crash = 0, fail = 0, seconds = 0 }

for _, cmd in ipairs(C.COMMANDS) do
  describe("crash everywhere: " .. cmd.name, function()
    local prep, walk

    local function get()
      if not walk then
        prep = prep or C.prepare(cmd)
        walk = C.walk(prep, C.plan(prep, FULL))
        local stages = {}
        for k, v in pairs(walk.stages) do
          stages[#stages + 1] = k .. "=" .. v
        end
        table.sort(stages)
        local crash = walk.by_action.crash or 0
        local fail = walk.runs - crash
        totals.runs = totals.runs + walk.runs
        totals.crash = totals.crash + crash
        totals.fail = totals.fail + fail
        totals.seconds = totals.seconds + walk.seconds
        summary[#summary + 1] = string.format(
          "%-13s %2d sys calls + %2d named points (%2d distinct); %3d crash + %3d fail runs in %5.1f s;"
          .. " stages %s; recover-pending %d; hidden debris left by %d crash + %d fail runs;"
          .. " failed after the commit %d (%s); fail runs that still succeeded %d (%s)",
          cmd.name, prep.nsys, prep.named, (function()
            local seen, n = {}, 0
            for _, f in ipairs(prep.faults) do
              if not f.sys and not seen[f.point] then
                seen[f.point], n = true, n + 1
              end
            end
            return n
          end)(), crash, fail, walk.seconds, table.concat(stages, " "), walk.recovered,
          walk.debris_by.crash or 0, walk.debris_by.fail or 0,
          #walk.after_error, keys(walk.after_error_points), walk.ok_runs, keys(walk.ok_points))
      end
      return walk
    end

    it("reaches mutating system calls and named points, the same ones on every run", function()
      prep = prep or C.prepare(cmd)
      assert.is_true(prep.nsys >= 5, cmd.name .. ": " .. table.concat(prep.entries, " "))
      assert.is_true(prep.named >= 5, cmd.name .. ": " .. table.concat(prep.entries, " "))
      for _, want in ipairs({ "sys.create", "sys.write", "sys.fsync", "sys.link" }) do
        local seen = false
        for _, e in ipairs(prep.entries) do
          seen = seen or e == want
        end
        assert.is_true(seen, cmd.name .. " never reaches " .. want)
      end
    end)

    it("ends before or after at every fault point (crash, EIO, ENOSPC), and works again", function()
      local w = get()
      assert.is_true(w.runs >= (FULL and 3 or 2) * prep.named, "only " .. w.runs .. " runs")
      assert.equal(0, #w.problems, C.shown(w.problems))
    end)
  end)
end

-- task create/update are not journaled: an audit post that fails is
-- undone in process (TASK_AUDIT_FAILED, the Python tool's code); if
-- undoing fails too, TASK_AUDIT_ROLLBACK_FAILED says so.
describe("crash everywhere: task create and update roll back a failed audit post", function()
  local T = require "tasksupport"
  for _, case in ipairs({
    { C.COMMANDS[8], "create" },
    { C.COMMANDS[9], "update" },
  }) do
    local cmd, what = case[1], case[2]
    it(cmd.name, function()
      local prep = C.prepare(cmd)
      local root = prep.dir .. "/rb"
      C.copy(prep.tpl, root)
      local r = C.run(root, cmd.argv, { AGENT_CHAT_FAULT = "post.message.write:fail:ENOSPC" })
      assert.equal(2, r.code, F.describe(r))
      assert.is_nil(F.error_line(r.stderr))
      assert.truthy(r.stderr:find("^agent%-chat: TASK_AUDIT_FAILED: task record changed but audit event could"
        .. " not be written: could not publish message .*: No space left on device\n$"), r.stderr)
      assert.same(prep.stages[0], C.state(root .. "/c").files)
      C.copy(prep.tpl, root)
      r = C.run(root, cmd.argv, { AGENT_CHAT_FAULT = "post.message.write:fail:ENOSPC,task.rollback" })
      assert.equal(2, r.code, F.describe(r))
      assert.truthy(r.stderr:find("^agent%-chat: TASK_AUDIT_ROLLBACK_FAILED: could not roll back task " .. what
        .. ": %[Errno 5%] Input/output error\n$"), r.stderr)
      -- the record stays written: the middle stage
      assert.same(prep.stages[1], C.state(root .. "/c").files)
      assert.is_nil(T.run(root, { "task", "list", "c" }).stderr:match("."))
    end)
  end
end)

-- The walk reaches a system call only through the wrappers of fsutil.h
-- (sys.<call> points): a bare mutating call in the runtime would be a step
-- no fault can hit. fsutil.c holds the wrappers themselves, fault.c writes
-- the fault log; the scan stamp (fsetxattr, a cache) is not a fault point.
describe("crash everywhere: every mutating system call is a fault point", function()
  local CALLS = { "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
                  "renameat2", "link", "linkat", "symlink", "symlinkat", "truncate", "ftruncate", "write",
                  "pwrite", "writev", "fsync", "fdatasync", "fchmod", "fchmodat", "chmod", "fchown",
                  "fchownat", "chown", "utimensat", "futimens", "mknod", "mknodat", "fopen", "fdopen" }
  local EXEMPT = { ["src/fsutil.c"] = true, ["src/fault.c"] = true }

  --- "file:line: text" of every bare mutating call in C source `text`.
  local function bare_calls(path, text)
    -- blank out comments and string literals, keeping the line breaks
    text = text:gsub("/%*.-%*/", function(c)
      return (c:gsub("[^\n]", " "))
    end):gsub("//[^\n]*", ""):gsub('"[^"\n]*"', '""')
    local out = {}
    local function at(pos, what)
      local line = select(2, text:sub(1, pos):gsub("\n", "")) + 1
      out[#out + 1] = string.format("%s:%d: %s", path, line, what)
    end
    for _, name in ipairs(CALLS) do
      for pos in text:gmatch("()%f[%w_]" .. name .. "%s*%(") do
        at(pos, name .. "()")
      end
    end
    for pos, stmt in text:gmatch("()%f[%w_]openat?%s*(%b())") do
      if stmt:find("O_CREAT", 1, true) or stmt:find("O_TRUNC", 1, true) then
        at(pos, "open with O_CREAT/O_TRUNC")
      end
    end
    return out
  end

  it("has no bare one in src/ (and lua/agentchat writes no file itself)", function()
    local found = {}
    local p = io.popen("cd " .. F.sh(H.repo) .. " && ls src/*.c")
    for path in p:lines() do
      if not EXEMPT[path] then
        for _, f in ipairs(bare_calls(path, F.read(H.repo .. "/" .. path))) do
          found[#found + 1] = f
        end
      end
    end
    p:close()
    p = io.popen("cd " .. F.sh(H.repo) .. " && grep -rnE "
      .. F.sh([[io\.open\([^)]*['"][wa+]|os\.(rename|remove)\(|io\.output\(]]) .. " lua/agentchat")
    for line in p:lines() do
      found[#found + 1] = line
    end
    p:close()
    assert.equal(0, #found, "use the ac_sys_* wrappers of fsutil.h:\n" .. table.concat(found, "\n"))
  end)

  it("the check finds one", function()
    local found = bare_calls("x.c", table.concat({
      "/* unlink(x) in a comment is fine */",
      "int f(int d) { ac_sys_unlinkat(d, \"unlink(\", 0);",
      "  int fd = openat(d, n, O_RDONLY);",
      "  fd = openat(d, n, O_WRONLY | O_CREAT, 0644);",
      "  return renameat(d, a, d, b) + write(fd, \"x\", 1); }",
    }, "\n"))
    assert.same({ "x.c:5: renameat()", "x.c:5: write()", "x.c:4: open with O_CREAT/O_TRUNC" }, found)
  end)
end)

-- The walk has teeth: a channel changed behind its back is in no stage.
describe("crash everywhere: the checker", function()
  it("notices a half-written message, a lost record and a visible temp file", function()
    local prep = C.prepare(C.COMMANDS[1])
    local dir = prep.dir .. "/tamper"
    for _, case in ipairs({
      { "printf -- '---\\nseq: 9\\n' > %s/0009-x-half.md", "in no stage" },
      { "rm %s/tasks/t1.json", "in no stage" },
      { "echo x > %s/0010-alice-hello.md.tmp", "in no stage" },
      { "mkdir %s/.junk", "unknown hidden entry" },
    }) do
      C.copy(prep.tpl, dir)
      assert(os.execute(string.format(case[1], F.sh(dir .. "/c"))))
      local saved = prep.tpl
      prep.tpl = dir
      local res = C.run_one(prep, prep.faults[1], "crash")
      prep.tpl = saved
      assert.truthy(table.concat(res.problems, "\n"):find(case[2], 1, true),
        case[1] .. ": " .. table.concat(res.problems, "\n"))
    end
  end)

  it("expects before up to the commit call and after it, from the fault position", function()
    local prep = C.prepare(C.COMMANDS[1])
    local commit = prep.commit_pos[1]
    assert.equal("sys.link", prep.entries[commit])
    assert.equal("post.message.publish", prep.entries[commit - 1])
    assert.equal(0, C.expected_stage(prep, commit))
    assert.equal(1, C.expected_stage(prep, commit + 1))
  end)
end)

teardown(function()
  if totals.runs == 0 then
    return
  end
  io.stderr:write(string.format("# crash everywhere (%s%s): %d runs (%d crash, %d fail) in %.0f s\n#   %s\n",
    FULL and "every point, every action" or "make test subset; AGENT_CHAT_CRASH_ALL=1 for all",
    C.fsck_available() and ", fsck after each" or ", no fsck command yet",
    totals.runs, totals.crash, totals.fail, totals.seconds, table.concat(summary, "\n#   ")))
end)
