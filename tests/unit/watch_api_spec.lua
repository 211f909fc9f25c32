-- The watch loop as a Lua API (lua/agentchat/watch.lua) and the change
-- reader (lua/agentchat/changes.lua), run inside the binary with --once
-- semantics on channels built through the API. The command line, signals
-- and kill -9 are covered by tests/functional/watch_spec.lua.
local H = require "spec_helper"
local ac = require "agentchat"
local changes = require "agentchat.changes"
local watch = require "agentchat.watch"

local base = H.tmpdir()
local n = 0

local function channel()
  n = n + 1
  local root = assert(ac.open(base .. "/r" .. n))
  return assert(root:init("dev"))
end

--- watch.run with once = true, collecting the log lines.
local function run_once(ch, handlers, opts)
  local lines = {}
  opts = opts or {}
  opts.as, opts.handlers, opts.once = opts.as or "bob", handlers, true
  opts.log = function(line)
    lines[#lines + 1] = line
  end
  local code, reason = watch.run(ch, opts)
  return code, reason, lines
end

describe("agentchat.watch.handlers", function()
  it("turns a function into a message handler, and a task/lock one when asked", function()
    local f = function() end
    assert.same({ message = f }, watch.handlers(f))
    assert.same({ message = f, task = f, lock = f }, watch.handlers(f, { tasks = true, locks = true }))
  end)

  it("keeps a valid table and names what is wrong with an invalid one", function()
    local t = { message = function() end, interval = 2 }
    assert.equal(t, watch.handlers(t))
    local cases = {
      { 7, "must return a function or a table of handlers (got number)" },
      { { on_message = print }, "unknown field 'on_message'" },
      { { tick = true }, "field 'tick' must be a function" },
      { { message = print, interval = "5" }, "field 'interval' must be a number" },
      { { stop = print }, "has no handler (message, task, lock or tick)" },
    }
    for _, c in ipairs(cases) do
      local ok, msg = watch.handlers(c[1])
      assert.is_nil(ok)
      assert.truthy(msg:find(c[2], 1, true), msg)
    end
    assert.equal("has no 'task' handler for --tasks", select(2, watch.handlers({ message = print }, { tasks = true })))
  end)
end)

describe("agentchat.watch.run", function()
  it("delivers relevant messages in order, moves the cursor, and returns 0, 'once'", function()
    local ch = channel()
    assert(ch:post{ from = "alice", title = "one", body = "1" })
    assert(ch:post{ from = "alice", to = "carol", title = "other", body = "2" })
    assert(ch:post{ from = "alice", to = "bob", title = "two", body = "3" })
    local got = {}
    local code, reason = run_once(ch, function(m, ctx)
      got[#got + 1] = m.seq .. " " .. m.title .. " " .. ctx.name .. " " .. ctx.channel.name
    end)
    assert.equal(0, code)
    assert.equal("once", reason)
    assert.same({ "1 one bob dev", "3 two bob dev" }, got)
    assert.equal(3, ch:cursor("bob"))
  end)

  it("keeps the cursor on the last handled message when a handler fails, and logs the traceback", function()
    local ch = channel()
    for i = 1, 3 do
      assert(ch:post{ from = "alice", title = "m" .. i, body = "x" })
    end
    local stopped
    local code, reason, lines = run_once(ch, {
      message = function(m)
        if m.seq == 2 then
          error("no #2")
        end
      end,
      stop = function(_, why)
        stopped = why
      end,
    }, { retries = 1, backoff = 0 })
    assert.equal(1, code)
    assert.equal("failed", reason)
    assert.equal("failed", stopped)
    assert.equal(1, ch:cursor("bob"))
    assert.truthy(lines[1]:find("^watch: handler 'message' on #2 failed %(attempt 1 of 2%): .-no #2\n"
      .. "stack traceback:"), lines[1])
    assert.equal("watch: retrying in 0.0 s", lines[2])
    assert.truthy(lines[3]:find("attempt 2 of 2", 1, true), lines[3])
    assert.equal("watch: giving up on #2; cursor stays at #1", lines[4])
  end)

  it("gives ctx.post, ctx.reply, ctx.log, ctx.cursor and ctx.stop", function()
    local ch = channel()
    assert(ch:post{ from = "alice", title = "q", body = "?" })
    assert(ch:post{ from = "alice", title = "later", body = "x" })
    local code, reason, lines = run_once(ch, function(m, ctx)
      local r = ctx.reply(m, { body = "a" })
      ctx.post{ title = "note", body = "b", to = "carol", status = "info" }
      ctx.log("replied", r.seq, ctx.cursor())
      ctx.stop()
    end)
    assert.equal(0, code)
    assert.equal("stopped", reason)
    assert.same({ "watch: replied 3 0" }, lines)
    local msgs = assert(ch:peek(2)).messages
    assert.same({ "bob", "alice", "1", "Re: q" }, { msgs[1].from, msgs[1].to, msgs[1].reply_to, msgs[1].title })
    assert.same({ "carol", "info", "note" }, { msgs[2].to, msgs[2].status, msgs[2].title })
    assert.equal(1, ch:cursor("bob"), "the second message stays unread")
  end)

  it("makes ctx.post raise on failure, so the message is retried", function()
    local ch = channel()
    assert(ch:post{ from = "alice", title = "q", body = "?" })
    local code, _, lines = run_once(ch, function(_, ctx)
      ctx.post{ title = "bad\0title" }
    end, { retries = 0 })
    assert.equal(1, code)
    assert.truthy(lines[1]:find("INVALID_TEXT: title must not contain NUL bytes", 1, true), lines[1])
  end)

  it("raises on misuse", function()
    local ch = channel()
    assert.has_error(function()
      watch.run(ch, { handlers = print })
    end)
    assert.has_error(function()
      watch.run(ch, { as = "bob", handlers = 3 })
    end)
    assert.has_error(function()
      watch.run(ch, { as = "bob", handlers = print, interval = 0 })
    end)
    assert.has_error(function()
      watch.run(ch, { as = "bob", handlers = print, retries = -1 })
    end)
  end)
end)

describe("agentchat.changes", function()
  it("reads task, lease and path audits as changes and leaves other messages alone", function()
    local ch = channel()
    assert(ch:task_create{ id = "t1", from = "alice", title = "T" })
    assert(ch:claim("t1", { as = "carol" }))
    assert(ch:lock({ "src" }, { as = "carol" }))
    assert(ch:post{ from = "alice", title = "x", body = "{}", status = "task.created" })
    assert(ch:post{ from = "alice", title = "hi", body = "x" })
    local msgs = assert(ch:peek(10)).messages
    local k1, c1 = changes.of(msgs[1])
    assert.equal("task", k1)
    assert.same({ "task", "task.created", "t1", "open", "alice", 1 },
      { c1.kind, c1.event, c1.task_id, c1.status, c1.actor, c1.seq })
    assert.is_nil(c1.owner)
    assert.equal(msgs[1], c1.message)
    local k2, c2 = changes.of(msgs[2])
    assert.same({ "task", "lease.claimed", "carol", "open" }, { k2, c2.event, c2.owner, c2.previous_status })
    local k3, c3 = changes.of(msgs[3])
    assert.same({ "lock", "path.locked", "src" }, { k3, c3.event, c3.paths[1].normalized_path })
    assert.is_nil(changes.of(msgs[4]), "body does not name the event")
    assert.is_nil(changes.of(msgs[5]))
  end)

  it("names the kind of an event by its prefix", function()
    assert.equal("task", changes.kind_of("task.updated"))
    assert.equal("task", changes.kind_of("lease.transaction.cleaned"))
    assert.equal("lock", changes.kind_of("path.lock.recovered"))
    assert.is_nil(changes.kind_of("state.compacted"))
    assert.is_nil(changes.kind_of("event.status"))
    assert.is_nil(changes.kind_of(nil))
  end)
end)
