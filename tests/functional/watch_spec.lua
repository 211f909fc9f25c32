-- Functional specs for `agent-chat watch` (docs/watch.md): delivery in seq
-- order with the relevance of `read`, the cursor moved only after each
-- handler returned (a raising handler and a kill -9 lose nothing), retries
-- with a traceback on stderr, Ctrl-C / SIGTERM, --once, task and lock
-- changes, and one-line usage errors.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local ac = F.run
local W = require "watchsupport"
local cursor, script, logfile, log_lines, NOTE = W.cursor, W.script, W.logfile, W.log_lines, W.NOTE
local seqs_of, set_of, eventually, spawn = W.seqs_of, W.set_of, W.eventually, W.spawn

describe("watch --once", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
  end)

  it("hands each relevant message to the handler in seq order and moves the cursor past the scan", function()
    F.post(root, "c", "alice", "one", "b1")
    F.post(root, "c", "alice", "for carol", "b2", "--to", "carol")
    F.post(root, "c", "bob", "own", "b3")
    F.post(root, "c", "alice", "two", "b4", "--to", "bob,carol")
    F.post(root, "c", "alice", "for dave", "b5", "--to", "dave")
    local s = script([[
return { message = function(m, ctx)
  print(m.kind, m.seq, m.from, m.title, m.body:gsub("\n$", ""), ctx.name, ctx.channel.name)
end }
]])
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    assert.equal("message\t1\talice\tone\tb1\tbob\tc\n"
      .. "message\t4\talice\ttwo\tb4\tbob\tc\n", r.stdout)
    assert.equal(5, cursor(root, "c", "bob"))
    r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stdout)
  end)

  it("accepts a single function as the script's handler", function()
    F.post(root, "c", "alice", "one", "x")
    local s = script("return function(m) print(m.kind, m.seq) end\n")
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("message\t1\n", r.stdout)
  end)

  it("calls start, idle, tick and stop around the batch", function()
    F.post(root, "c", "alice", "one", "x")
    local s = script([[
return {
  start = function() print("start") end,
  message = function(m) print("message", m.seq) end,
  idle = function() print("idle") end,
  tick = function() print("tick") end,
  stop = function(_, why) print("stop", why) end,
}
]])
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("start\nmessage\t1\nidle\ntick\nstop\tonce\n", r.stdout)
    r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal("start\ntick\nstop\tonce\n", r.stdout, "no idle without messages")
  end)

  it("passes --arg values as ..., arg and ctx.args", function()
    local s = script([[
local a, b = ...
print(a, b, arg[0] ~= nil, #arg)
return { tick = function(ctx) print(table.concat(ctx.args, "+")) end }
]])
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once",
                   "--arg", "x y", "--arg", "" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("x y\t\ttrue\t2\nx y+\n", r.stdout)
  end)

  it("ctx.reply answers the sender with reply_to, and the watcher does not see its own replies", function()
    F.post(root, "c", "alice", "question", "why?")
    local s = script([[
return function(m, ctx)
  local res = ctx.reply(m, { body = "because", status = "answer" })
  print(res.seq, res.file)
end
]])
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("2\t0002-bob-re-question.md\n", r.stdout)
    local text = F.read(root .. "/c/0002-bob-re-question.md")
    assert.truthy(text:find("\nfrom: bob\nto: alice\nreply_to: 1\n", 1, true), text)
    assert.truthy(text:find("\nstatus: answer\ntitle: Re: question\n---\nbecause\n$"), text)
    r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal("", r.stdout)
    assert.equal(2, cursor(root, "c", "bob"))
  end)

  it("stops after the message whose handler called ctx.stop(), leaving the rest unread", function()
    for i = 1, 4 do
      F.post(root, "c", "alice", "m" .. i, "x")
    end
    local s = script("return function(m, ctx) print(m.seq) if m.seq == 2 then ctx.stop() end end\n")
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("1\n2\n", r.stdout)
    assert.equal(2, cursor(root, "c", "bob"))
  end)

  it("warns about an unreadable message and goes on", function()
    F.post(root, "c", "alice", "one", "x")
    os.execute("mkdir " .. F.sh(root .. "/c/0002-alice-bad.md"))   -- a name that is not a file
    F.post(root, "c", "alice", "three", "x")
    local s = script("return function(m) print(m.seq) end\n")
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("1\n3\n", r.stdout)
    assert.equal("agent-chat: warning: skipped unreadable message 0002-alice-bad.md: Is a directory\n", r.stderr)
    assert.equal(3, cursor(root, "c", "bob"))
  end)
end)

describe("watch with a handler that raises", function()
  local root, log

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
    log = logfile()
    for i = 1, 5 do
      F.post(root, "c", "alice", "m" .. i, "body " .. i)
    end
  end)

  -- Raises on #3 while the file FAIL exists.
  local function flaky(fail)
    return script(NOTE .. [[
local FAIL = select(2, ...)
local function check(m)
  if m.seq == 3 and exists(FAIL) then
    error("cannot handle #" .. m.seq)
  end
end
return { message = function(m)
  note("begin " .. m.seq)
  check(m)
  note("end " .. m.seq)
end }
]]), fail
  end

  it("reports the failure with a traceback, keeps the cursor before it, and loses nothing on the next run", function()
    local fail = F.tmpdir() .. "/FAIL"
    F.write(fail, "")
    local s = flaky(fail)
    local argv = { "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once", "--retries", "0",
                   "--arg", log, "--arg", fail }
    local r = ac(argv)
    assert.equal(1, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.truthy(r.stderr:find("^agent%-chat: watch: handler 'message' on #3 failed %(attempt 1 of 1%): "
      .. ".-handler%.lua:%d+: cannot handle #3\nstack traceback:\n"), F.describe(r))
    assert.truthy(r.stderr:find("handler.lua:%d+: in %a+ 'check'"), F.describe(r))
    assert.truthy(r.stderr:find("\nagent%-chat: watch: giving up on #3; cursor stays at #2\n$"), F.describe(r))
    assert.equal(2, cursor(root, "c", "bob"))
    assert.same({ 1, 2 }, seqs_of(log_lines(log), "end"))

    -- Still failing: delivered again, still not past it.
    r = ac(argv)
    assert.equal(1, r.code, F.describe(r))
    assert.equal(2, cursor(root, "c", "bob"))

    os.remove(fail)
    r = ac(argv)
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    assert.equal(5, cursor(root, "c", "bob"))
    assert.same({ 1, 2, 3, 4, 5 }, seqs_of(log_lines(log), "end"))
    assert.same({ 1, 2, 3, 3, 3, 4, 5 }, seqs_of(log_lines(log), "begin"))
  end)

  it("retries with backoff and goes on when a retry succeeds", function()
    local fail = F.tmpdir() .. "/FAIL"
    F.write(fail, "")
    -- The first failure removes FAIL, so the retry succeeds.
    local s = script(NOTE .. [[
local FAIL = select(2, ...)
return function(m)
  note("begin " .. m.seq)
  if m.seq == 3 and exists(FAIL) then
    os.remove(FAIL)
    error({ code = "FLAKY", message = "try again" })
  end
  note("end " .. m.seq)
end
]])
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once",
                   "--retries", "2", "--backoff", "0.2", "--arg", log, "--arg", fail })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: watch: handler 'message' on #3 failed %(attempt 1 of 3%): "
      .. "FLAKY: try again\nstack traceback:\n"), F.describe(r))
    assert.truthy(r.stderr:find("\nagent%-chat: watch: retrying in 0%.2 s\n$"), F.describe(r))
    assert.same({ 1, 2, 3, 4, 5 }, seqs_of(log_lines(log), "end"))
    assert.equal(5, cursor(root, "c", "bob"))
  end)

  it("doubles the pause between retries, then stops with exit 1", function()
    local fail = F.tmpdir() .. "/FAIL"
    F.write(fail, "")
    local s = flaky(fail)
    local t0 = F.now()
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s,
                   "--retries", "2", "--backoff", "0.2", "--arg", log, "--arg", fail })
    local took = F.now() - t0
    assert.equal(1, r.code, F.describe(r))
    local _, failures = r.stderr:gsub("failed %(attempt %d of 3%)", "")
    assert.equal(3, failures, F.describe(r))
    assert.truthy(r.stderr:find("retrying in 0.2 s\n", 1, true), F.describe(r))
    assert.truthy(r.stderr:find("retrying in 0.4 s\n", 1, true), F.describe(r))
    assert.is_true(took >= 0.6, "took " .. took .. " s")
    assert.equal(2, cursor(root, "c", "bob"))
  end)

  it("reports a failing tick with its traceback and stops", function()
    local s = script("return { tick = function() local t = nil; return t.field end }\n")
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once", "--retries", "0" })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: watch: handler 'tick' failed %(attempt 1 of 1%): .-"
      .. "attempt to index a nil value"), F.describe(r))
    assert.truthy(r.stderr:find("stack traceback:", 1, true), F.describe(r))
    assert.equal(5, cursor(root, "c", "bob"), "messages without a handler are passed")
  end)
end)

describe("watch killed with SIGKILL", function()
  local root, log

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
    log = logfile()
  end)

  it("delivers the message whose handler was killed again on restart", function()
    for i = 1, 4 do
      F.post(root, "c", "alice", "m" .. i, "x")
    end
    local block = F.tmpdir() .. "/BLOCK"
    F.write(block, "")
    local s = script(NOTE .. [[
local BLOCK = select(2, ...)
return function(m)
  note("begin " .. m.seq)
  while m.seq == 3 and exists(BLOCK) do sys.sleep(0.05) end
  note("end " .. m.seq)
end
]])
    local job = spawn(root, { "c", "--as", "bob", "--script", s, "--arg", log, "--arg", block })
    assert.truthy(eventually(function()
      return set_of(seqs_of(log_lines(log), "begin"))[3]
    end), "the handler never reached #3")
    job:signal("KILL")
    local r = job:finish()
    assert.equal(137, r.code, F.show(r.stderr))
    assert.equal(2, cursor(root, "c", "bob"))
    assert.same({ 1, 2 }, seqs_of(log_lines(log), "end"))

    os.remove(block)
    r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once", "--arg", log,
             "--arg", block })
    assert.equal(0, r.code, F.describe(r))
    assert.same({ 1, 2, 3, 4 }, seqs_of(log_lines(log), "end"))
    assert.same({ 1, 2, 3, 3, 4 }, seqs_of(log_lines(log), "begin"))
    assert.equal(4, cursor(root, "c", "bob"))
  end)

  it("never lets the cursor pass an unhandled message, over many kills at random moments", function()
    -- 40 messages: every third for someone else, every fifth bob's own.
    local relevant = {}
    local lines = {}
    for i = 1, 40 do
      local from, to = "alice", "all"
      if i % 5 == 0 then
        from = "bob"
      elseif i % 3 == 0 then
        to = "carol"
      else
        relevant[#relevant + 1] = i
      end
      lines[#lines + 1] = string.format("assert(ch:post{ from = %q, to = %q, title = 'm%d', body = 'x' })",
        from, to, i)
    end
    local poster = F.tmpdir() .. "/post.lua"
    F.write(poster, "local ch = assert(assert(require('agentchat').open()):channel('c'))\n"
      .. table.concat(lines, "\n") .. "\n")
    local p = ac({ "--root", root, "run", poster })
    assert.equal(0, p.code, F.describe(p))

    local s = script(NOTE .. [[
return function(m)
  note("begin " .. m.seq)
  sys.sleep(0.02)
  note("end " .. m.seq)
end
]])
    math.randomseed(os.time())
    local kills = 0
    for _ = 1, 30 do
      local job = spawn(root, { "c", "--as", "bob", "--script", s, "--arg", log })
      F.sleep(string.format("%.3f", 0.05 + math.random() * 0.25))
      job:signal("KILL")
      local r = job:finish()
      assert.is_nil(F.crashed(r.stderr), F.show(r.stderr))
      kills = kills + 1
      -- The invariant: every relevant message at or below the cursor was
      -- handled to the end.
      local c = cursor(root, "c", "bob")
      local ended = set_of(seqs_of(log_lines(log), "end"))
      for _, seq in ipairs(relevant) do
        if seq <= c then
          assert.is_true(ended[seq] == true, "cursor " .. c .. " passed #" .. seq .. " unhandled")
        end
      end
      if c == 40 then
        break
      end
    end
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once", "--arg", log })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(40, cursor(root, "c", "bob"))
    local ended = seqs_of(log_lines(log), "end")
    local got = set_of(ended)
    for _, seq in ipairs(relevant) do
      assert.is_true(got[seq] == true, "#" .. seq .. " was lost")
    end
    for seq in pairs(got) do
      assert.is_true(set_of(relevant)[seq] == true, "#" .. seq .. " is not for bob")
    end
    -- Seqs are handled in order; a repeat only ever restarts at the
    -- message a kill interrupted.
    for i = 2, #ended do
      assert.is_true(ended[i] > ended[i - 1] or ended[i] == ended[i - 1], "out of order: "
        .. table.concat(ended, ","))
    end
    assert.is_true(kills >= 1)
    -- Most runs are killed inside a handler (it sleeps between its two
    -- notes): those messages began more often than they ended.
    local began = seqs_of(log_lines(log), "begin")
    assert.is_true(#began >= #ended, "begins " .. #began .. ", ends " .. #ended)
  end)
end)

describe("watch stopped by a signal", function()
  local root, log

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
    log = logfile()
  end)

  local IDLE = NOTE .. [[
return {
  start = function() note("start") end,
  message = function(m) note("message " .. m.seq) end,
  stop = function(_, why) note("stop " .. why) end,
}
]]

  it("wakes up for a post, then exits 130 with 'cancelled by user' on SIGINT", function()
    local s = script(IDLE)
    -- An hour between rescans: only a change notification can wake it.
    local job = spawn(root, { "c", "--as", "bob", "--script", s, "--interval", "3600", "--arg", log })
    assert.truthy(eventually(function()
      return (F.read(log) or ""):find("start")
    end))
    F.post(root, "c", "alice", "wake", "x")
    assert.truthy(eventually(function()
      return set_of(seqs_of(log_lines(log), "message"))[1]
    end, 60), "not woken by a change notification")
    -- The cursor moves after the handler returns: the last step to wait for.
    assert.truthy(eventually(function()
      return cursor(root, "c", "bob") == 1
    end))
    job:signal("INT")
    local r = job:finish()
    assert.equal(130, r.code, F.show(r.stderr))
    assert.equal("agent-chat: cancelled by user\n", r.stderr)
    assert.same({ "start", "message 1", "stop signal" }, log_lines(log))
    assert.equal(1, cursor(root, "c", "bob"))
  end)

  it("uses no CPU while it waits", function()
    local s = script(IDLE)
    local job = spawn(root, { "c", "--as", "bob", "--script", s, "--arg", log })
    assert.truthy(eventually(function()
      return (F.read(log) or ""):find("start")
    end))
    local before = F.cpu_ticks(job.pid)
    F.sleep(1.5)
    local after = F.cpu_ticks(job.pid)
    job:signal("INT")
    assert.equal(130, job:finish().code)
    if not before then
      pending("no /proc/PID/stat here")
      return
    end
    assert.is_true(after - before <= 2, "used " .. (after - before) .. " clock ticks in 1.5 s of waiting")
  end)

  it("stops cleanly on SIGTERM: the stop handler runs and nothing is left behind", function()
    local s = script(IDLE)
    local job = spawn(root, { "c", "--as", "bob", "--script", s, "--arg", log })
    assert.truthy(eventually(function()
      return (F.read(log) or ""):find("start")
    end))
    local before = F.snapshot(root)
    job:signal("TERM")
    local r = job:finish()
    assert.equal(143, r.code, F.show(r.stderr))
    assert.is_nil(F.crashed(r.stderr), F.show(r.stderr))
    assert.same({ "start", "stop signal" }, log_lines(log))
    assert.same({}, F.diff(before, F.snapshot(root)))
  end)

  it("interrupts a running handler on SIGTERM and delivers its message again on restart", function()
    F.post(root, "c", "alice", "one", "x")
    F.post(root, "c", "alice", "two", "x")
    local s = script(NOTE .. [[
return function(m)
  note("begin " .. m.seq)
  if m.seq == 2 then
    while true do end     -- a runaway handler: the signal must still stop it
  end
  note("end " .. m.seq)
end
]])
    local job = spawn(root, { "c", "--as", "bob", "--script", s, "--arg", log })
    assert.truthy(eventually(function()
      return set_of(seqs_of(log_lines(log), "begin"))[2]
    end))
    job:signal("TERM")
    local r = job:finish()
    assert.equal(143, r.code, F.show(r.stderr))
    assert.equal(1, cursor(root, "c", "bob"))
    local s2 = script(NOTE .. "return function(m) note('again ' .. m.seq) end\n")
    r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s2, "--once", "--arg", log })
    assert.equal(0, r.code, F.describe(r))
    assert.same({ 2 }, seqs_of(log_lines(log), "again"))
  end)

  it("stops a retry pause on SIGINT", function()
    F.post(root, "c", "alice", "one", "x")
    local s = script(NOTE .. "return function(m) note('begin ' .. m.seq) error('no') end\n")
    local job = spawn(root, { "c", "--as", "bob", "--script", s, "--backoff", "60", "--arg", log })
    assert.truthy(eventually(function()
      return (F.read(job.dir .. "/err") or ""):find("retrying in 60.0 s", 1, true)
    end))
    job:signal("INT")
    -- job:finish kills it (exit 137) if it still sleeps after 30 s.
    local r = job:finish(30)
    assert.equal(130, r.code, F.show(r.stderr))
    assert.truthy(r.stderr:find("\nagent%-chat: cancelled by user\n$"), F.show(r.stderr))
    assert.equal(0, cursor(root, "c", "bob"))
  end)
end)

describe("watch with task and lock changes", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
  end)

  local function board()
    assert.equal(0, ac({ "--root", root, "task", "create", "c", "t1", "--from", "alice", "--title", "T" }).code)
    F.post(root, "c", "alice", "hello", "x")
    assert.equal(0, ac({ "--root", root, "task", "claim", "c", "t1", "--as", "carol" }).code)
    assert.equal(0, ac({ "--root", root, "lock", "c", "src", "--as", "carol" }).code)
    assert.equal(0, ac({ "--root", root, "task", "create", "c", "t2", "--from", "bob", "--title", "own" }).code)
  end

  it("hands task/lease audits to `task` and path audits to `lock`, everything else to `message`", function()
    board()
    local s = script([[
return {
  message = function(m) print("message", m.seq, m.title) end,
  task = function(c)
    print(c.kind, c.seq, c.event, c.task_id, c.status, c.owner, c.previous_status, c.actor,
          c.message.seq, c.lease_expires_at ~= nil)
  end,
  lock = function(c) print(c.kind, c.seq, c.event, #c.lock_id, c.owner, c.paths[1].normalized_path, c.actor) end,
}
]])
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("task\t1\ttask.created\tt1\topen\tnil\tnil\talice\t1\tfalse\n"
      .. "message\t2\thello\n"
      .. "task\t3\tlease.claimed\tt1\tin_progress\tcarol\topen\tcarol\t3\ttrue\n"
      .. "lock\t4\tpath.locked\t32\tcarol\tsrc\tcarol\n", r.stdout)
  end)

  it("with --tasks, a single function gets the changes too (item.kind tells which)", function()
    board()
    local s = script("return function(x) print(x.kind, x.seq, x.event or x.status) end\n")
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once", "--tasks" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("task\t1\ttask.created\nmessage\t2\tdiscussion\ntask\t3\tlease.claimed\n"
      .. "message\t4\tpath.locked\n", r.stdout)
    r = ac({ "--root", root, "watch", "c", "--as", "dave", "--script", s, "--once", "--locks" })
    assert.equal("message\t1\ttask.created\nmessage\t2\tdiscussion\nmessage\t3\tlease.claimed\n"
      .. "lock\t4\tpath.locked\nmessage\t5\ttask.created\n", r.stdout)
  end)

  it("without asking, audit messages are ordinary messages", function()
    board()
    local s = script("return { message = function(m) print(m.seq, m.status) end }\n")
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("1\ttask.created\n2\tdiscussion\n3\tlease.claimed\n4\tpath.locked\n", r.stdout)
  end)

  it("treats a message that only looks like an audit as a message", function()
    F.post(root, "c", "alice", "fake", "not json", "--status", "task.created")
    local s = script("return { message = function(m) print('message', m.seq) end,\n"
      .. "task = function() print('task') end }\n")
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", s, "--once" })
    assert.equal("message\t1\n", r.stdout)
  end)

  it("delivers changes made while it waits, with the lease recovery details", function()
    local log = logfile()
    local s = script(NOTE .. [[
return {
  start = function() note("start") end,
  task = function(c)
    note(c.event .. " " .. c.task_id .. " " .. tostring(c.previous_owner) .. " " .. tostring(c.recovery_reason))
  end,
}
]])
    local job = spawn(root, { "c", "--as", "bob", "--script", s, "--arg", log })
    -- Changes made before the watch took its first look are not changes to it.
    assert.truthy(eventually(function()
      return log_lines(log)[1] == "start"
    end))
    assert.equal(0, ac({ "--root", root, "task", "create", "c", "t1", "--from", "alice", "--title", "T" }).code)
    assert.equal(0, ac({ "--root", root, "task", "claim", "c", "t1", "--as", "carol", "--lease", "0.01" }).code)
    F.sleep(0.1)
    assert.equal(0, ac({ "--root", root, "task", "recover", "c", "t1", "--as", "dave", "--reason", "gone" }).code)
    assert.truthy(eventually(function()
      return #log_lines(log) >= 4
    end))
    job:signal("INT")
    assert.equal(130, job:finish().code)
    assert.same({ "start", "task.created t1 nil nil", "lease.claimed t1 nil nil", "lease.recovered t1 carol gone" },
      log_lines(log))
  end)
end)

describe("watch usage and script errors", function()
  local root

  before_each(function()
    root = F.new_root()
    F.init(root, "c")
  end)

  local function one_line(r, code, pattern)
    assert.equal(code, r.code, F.describe(r))
    assert.equal("", r.stdout)
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
    if pattern then
      assert.truthy(r.stderr:find(pattern), F.describe(r))
    end
  end

  local ok_script
  before_each(function()
    ok_script = script("return function() end\n")
  end)

  it("needs --as and --script", function()
    one_line(ac({ "--root", root, "watch", "c", "--script", ok_script }), 2,
      "^agent%-chat: USAGE: watch: the following arguments are required: %-%-as")
    one_line(ac({ "--root", root, "watch", "c", "--as", "bob" }), 2,
      "^agent%-chat: USAGE: watch: the following arguments are required: %-%-script")
    one_line(ac({ "--root", root, "watch" }), 2, "required: channel, %-%-as, %-%-script")
  end)

  for _, case in ipairs({ { "--interval", "0" }, { "--interval", "-1" }, { "--interval", "soon" },
                          { "--interval", "inf" }, { "--retries", "-1" }, { "--retries", "1.5" },
                          { "--backoff", "-0.5" }, { "--backoff", "nan" } }) do
    it("refuses " .. case[1] .. " " .. case[2], function()
      one_line(ac({ "--root", root, "watch", "c", "--as", "bob", "--script", ok_script, case[1], case[2] }), 2,
        "argument " .. case[1]:gsub("%-", "%%-") .. ": invalid ")
    end)
  end

  it("refuses unknown options", function()
    one_line(ac({ "--root", root, "watch", "c", "--as", "bob", "--script", ok_script, "--bogus" }), 2)
  end)

  it("fails like other commands on a missing or invalid channel", function()
    one_line(ac({ "--root", root, "watch", "nope", "--as", "bob", "--script", ok_script }), 1,
      "^agent%-chat: channel 'nope' not found under ")
    one_line(ac({ "--root", root, "watch", "../x", "--as", "bob", "--script", ok_script }), 1,
      "path traversal blocked")
  end)

  it("reports a missing script or a syntax error in one line", function()
    one_line(ac({ "--root", root, "watch", "c", "--as", "bob", "--script", root .. "/none.lua" }), 1,
      "^agent%-chat: watch: cannot open ")
    one_line(ac({ "--root", root, "watch", "c", "--as", "bob", "--script", script("return {") }), 1,
      "^agent%-chat: watch: .*handler%.lua:1: ")
  end)

  for _, case in ipairs({
    { "return 42", "must return a function or a table of handlers %(got number%)" },
    { "return { mesage = function() end }", "unknown field 'mesage'" },
    { "return { message = 'x' }", "field 'message' must be a function" },
    { "return { start = function() end }", "has no handler" },
    { "return { message = function() end }", "has no 'task' handler for %-%-tasks", "--tasks" },
    { "return { message = function() end }", "has no 'lock' handler for %-%-locks", "--locks" },
  }) do
    it("refuses a script that " .. case[2]:gsub("%%", ""), function()
      local argv = { "--root", root, "watch", "c", "--as", "bob", "--script", script(case[1]), "--once" }
      argv[#argv + 1] = case[3]
      one_line(ac(argv), 1, "^agent%-chat: watch: .*handler%.lua " .. case[2])
    end)
  end

  it("reports a script that raises while loading with its traceback", function()
    local r = ac({ "--root", root, "watch", "c", "--as", "bob", "--script", script("error('bad start')\n") })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: watch: .-handler%.lua failed: .-handler%.lua:1: bad start\n"
      .. "stack traceback:\n"), F.describe(r))
  end)

  it("prints its help on -h", function()
    local r = ac({ "watch", "-h" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("^usage: agent%-chat watch "), F.describe(r))
    assert.truthy(r.stdout:find("--once", 1, true))
  end)
end)

-- Issue 13, item 5: one message its handler can never handle used to wedge
-- watch for good ("giving up on #2; cursor stays at #1", and every restart
-- stopped at the same place); --on-error skip / dead-letter go on past it.
describe("watch --on-error", function()
  local root

  -- #1 ping, #2 a hand-written file without frontmatter, #3 ping. The
  -- handler raises on a message without a title.
  before_each(function()
    root = F.new_root()
    F.init(root, "c")
    F.init(root, "ops")
    F.post(root, "c", "alice", "ping one", "x")
    F.write(root .. "/c/0002-handmade.md", "no frontmatter here\n")
    F.post(root, "c", "alice", "ping three", "x")
  end)

  local STRICT = "return function(m) print('handled', m.seq, assert(m.title, 'no title'):upper()) end\n"

  local function watch(extra)
    local argv = { "--root", root, "watch", "c", "--as", "bot", "--script", script(STRICT), "--once",
                   "--retries", "1", "--backoff", "0" }
    for _, a in ipairs(extra or {}) do
      argv[#argv + 1] = a
    end
    return ac(argv)
  end

  it("stop (the default) still gives up there, every time", function()
    for i = 1, 2 do
      local r = watch()
      assert.equal(1, r.code, F.describe(r))
      assert.equal(i == 1 and "handled\t1\tPING ONE\n" or "", r.stdout)
      assert.truthy(r.stderr:find("giving up on #2; cursor stays at #1\n$"), r.stderr)
    end
  end)

  it("skip records the failure, goes on past the message, and a restart does not stop there again", function()
    local r = watch({ "--on-error", "skip" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("handled\t1\tPING ONE\nhandled\t3\tPING THREE\n", r.stdout)
    assert.truthy(r.stderr:find("\nagent%-chat: watch: warning: handler 'message' failed 2 times on #2; skipped "
      .. "it %(recorded as #4%)\n$"), r.stderr)
    assert.equal(3, cursor(root, "c", "bot"))
    -- the record: an audit message from and to the watcher, listed by peek --kind audit
    local p = F.ok(root, { "peek", "c", "--kind", "audit" })
    assert.same({ 4 }, F.seqs(p.stdout))
    local text = F.read(root .. "/c/0004-bot-watch-skipped-2.md")
    assert.truthy(text:find("\nfrom: bot\nto: bot\n", 1, true), text)
    assert.truthy(text:find("\nstatus: watch.skipped\ntitle: watch.skipped #2\n", 1, true), text)
    local body = require("agentchat.json").loads(text:match("\n%-%-%-\n(.*)$"))
    assert.same({ agent = "bot", attempts = 2, channel = "c", event = "watch.skipped", file = "0002-handmade.md",
                  handler = "message", seq = 2 }, { agent = body.agent, attempts = body.attempts,
                  channel = body.channel, event = body.event, file = body.file, handler = body.handler,
                  seq = body.seq })
    assert.truthy(body.error:find("no title", 1, true), body.error)
    -- nobody else gets it: a peer's read shows only the three messages
    local peer = F.ok(root, { "read", "c", "--as", "carol" }).stdout
    assert.same({ 1, 3 }, F.seqs(peer))         -- (#2 has no frontmatter: no seq line)
    assert.truthy(peer:find("no frontmatter here", 1, true), peer)
    assert.is_nil(peer:find("watch.skipped", 1, true), peer)
    r = watch({ "--on-error", "skip" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stdout)
  end)

  it("dead-letter posts a pointer in the named channel and goes on", function()
    local r = watch({ "--on-error", "dead-letter", "--dead-letter", "ops" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("handled\t1\tPING ONE\nhandled\t3\tPING THREE\n", r.stdout)
    assert.truthy(r.stderr:find("\nagent%-chat: watch: warning: handler 'message' failed 2 times on #2; "
      .. "dead%-lettered it to ops as #1\n$"), r.stderr)
    assert.equal(3, cursor(root, "c", "bot"))
    local out = F.ok(root, { "read", "ops", "--as", "lead" }).stdout
    assert.truthy(out:find("\nfrom: bot\nto: all\n", 1, true), out)
    assert.truthy(out:find("\nstatus: dead%-letter\ntitle: dead letter: c#2 \n"), out)
    for _, line in ipairs({ "- channel: c", "- seq: 2", "- file: 0002-handmade.md", "- error: " }) do
      assert.truthy(out:find("\n" .. line, 1, true), line .. " in " .. out)
    end
  end)

  it("refuses --dead-letter without dead-letter, the reverse, and a missing channel", function()
    for _, extra in ipairs({ { "--on-error", "dead-letter" }, { "--dead-letter", "ops" },
                             { "--on-error", "skip", "--dead-letter", "ops" } }) do
      local r = watch(extra)
      assert.equal(2, r.code, F.describe(r))
      assert.is_nil(F.error_line(r.stderr), F.describe(r))
    end
    local r = watch({ "--on-error", "dead-letter", "--dead-letter", "nope" })
    assert.equal(1, r.code, F.describe(r))
    assert.truthy(r.stderr:find("^agent%-chat: channel 'nope' not found .*%(run: init nope%)\n$"), r.stderr)
    r = watch({ "--on-error", "later" })
    assert.equal(2, r.code, F.describe(r))
  end)

  it("the first example of docs/watch.md handles a message without a title", function()
    local doc = F.read(H.repo .. "/docs/watch.md")
    local example = doc:match("```lua\n(return function%(msg, ctx%).-)```")
    assert.truthy(example, "no example in docs/watch.md")
    local r = ac({ "--root", root, "watch", "c", "--as", "bot", "--script", script(example), "--once",
                   "--retries", "0" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("", r.stderr)
    local replies = F.ok(root, { "read", "c", "--as", "alice", "--kind", "message" }).stdout
    assert.same({ 4, 5 }, F.seqs(replies))
    assert.truthy(replies:find("\nreply_to: 1\n", 1, true) and replies:find("\nreply_to: 3\n", 1, true), replies)
  end)
end)
