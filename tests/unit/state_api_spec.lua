-- The state-summary Lua API (lua/agentchat/api/state.lua): ch:state(),
-- ch:render_state{template=}, ch:compact{...}, exercised inside the binary
-- on a channel built through the API itself.
local H = require "spec_helper"
local ac = require "agentchat"
local json = require "agentchat.json"

local base = H.tmpdir()
local nroots = 0

-- A channel with a decision, a blocker, a verification message, a done
-- task with acceptance criteria, a blocked chain and a path lock.
local function busy_channel()
  nroots = nroots + 1
  local root = assert(ac.open(base .. "/r" .. nroots))
  local ch = assert(root:init("dev", { members = { "bob", "alice" }, topic = "Parser" }))
  assert(ch:post{ from = "alice", title = "Decision: use C", body = "Lua for policy." })
  assert(ch:post{ from = "bob", title = "Blocker: CI is red", body = "Runner out of disk." })
  assert(ch:task_create{ id = "a", from = "alice", title = "Design", acceptance = { "doc reviewed" } })
  assert(ch:task_create{ id = "b", from = "alice", title = "Build", depends_on = { "a" } })
  assert(ch:claim("a", { as = "carol" }))
  assert(ch:done("a", { as = "carol" }))
  assert(ch:claim("b", { as = "bob" }))
  assert(ch:lock({ "src" }, { as = "bob" }))
  assert(ch:post{ from = "bob", title = "Verification: tests", status = "verified", body = "all green" })
  return ch, root
end

describe("ch:state()", function()
  it("returns the --json data: sections, nulls and arrays in place", function()
    local ch = busy_channel()
    local s = assert(ch:state())
    assert.are.equal("dev", s.channel)
    assert.are.same({ "alice", "bob" }, { s.members[1], s.members[2] })
    assert.are.equal(9, s.last_seq)
    assert.are.equal("use C", s.decisions[1].title)
    assert.are.equal(1, #s.open_tasks)
    assert.are.equal("b", s.open_tasks[1].id)
    assert.are.equal(json.null, s.open_tasks[1].branch)
    assert.are.equal("#0002", s.blockers[1].source_id)
    assert.are.equal("b", s.owners.bob.tasks[1].id)
    assert.are.same({ "src" }, { s.owners.bob.path_locks[1].paths[1] })
    assert.are.equal(1, #s.path_locks)
    assert.are.equal(2, #s.verification)
    local by_type = {}
    for _, v in ipairs(s.verification) do
      by_type[v.source_type] = v
    end
    assert.are.equal("carol", by_type.task.author)            -- who completed task a
    assert.are.equal("a", by_type.task.source_id)
    assert.are.equal("9", by_type.message.source_id)
    -- json.dumps of the table is what `state --json` prints
    local text = json.dumps(s, { indent = 2, sort_keys = true, ensure_ascii = false })
    assert.truthy(text:find('"blocking_items": []', 1, true))
    assert.truthy(text:find('"owners": {\n', 1, true))
  end)
end)

describe("ch:render_state()", function()
  it("renders the built-in Markdown, identical on every call", function()
    local ch = busy_channel()
    local md = assert(ch:render_state())
    assert.are.equal("# State: dev\n\n## Goal & Topic\n", md:sub(1, 30))
    assert.truthy(md:find("\n## Path Locks\n- `[", 1, true))
    assert.are.equal(md, assert(ch:render_state()))
    assert.are.equal("\n", md:sub(-1))
    assert.are_not.equal("\n", md:sub(-2, -2))
  end)

  it("renders a template over a copy of the data", function()
    local ch = busy_channel()
    local text = assert(ch:render_state{ template = [[
      local s = ...
      s.channel = "changed"
      return #s.open_tasks .. " open, lease " .. tostring(s.open_tasks[1].branch == null)
    ]] })
    assert.are.equal("1 open, lease true", text)
    assert.are.equal("dev", assert(ch:state()).channel)
  end)

  it("fails with the template's code and exit 1", function()
    local ch = busy_channel()
    for src, code in pairs({ ["while true do end"] = "TEMPLATE_BUDGET_EXCEEDED",
                             ["return {}"] = "TEMPLATE_BAD_RESULT",
                             ["io.open('/etc/passwd')"] = "TEMPLATE_FORBIDDEN",
                             ["error('x')"] = "TEMPLATE_RUNTIME_ERROR" }) do
      local v, msg, c, exit = ch:render_state{ template = src, budget = 1e6 }
      assert.is_nil(v)
      assert.are.equal(code, c, msg)
      assert.are.equal(1, exit)
      assert.is_nil(msg:find("\n", 1, true))
    end
    assert.has_error(function() ch:render_state{ template = 42 } end)
  end)
end)

describe("ch:compact()", function()
  it("writes state.md and posts state.compacted from the actor", function()
    local ch, root = busy_channel()
    local s = assert(ch:compact{ as = "alice" })
    local dir = root.path .. "/dev"
    assert.are.equal(assert(ch:render_state()):gsub("#0009", "#0010"), H.read(dir .. "/state.md"):gsub("#0009",
      "#0010"))
    local last = assert(ch:peek(1)).messages[1]
    assert.are.equal("alice", last.from)
    assert.are.equal("state.compacted", last.status)
    local body = json.loads(last.body)
    assert.are.equal(s.last_seq, body.last_seq)
    assert.are.equal(#s.open_tasks, body.open_tasks_count)
  end)

  it("writes nothing when the template fails, and posts nothing without audit", function()
    local ch, root = busy_channel()
    local dir = root.path .. "/dev"
    local v, _, code = ch:compact{ template = "return 1" }
    assert.is_nil(v)
    assert.are.equal("TEMPLATE_BAD_RESULT", code)
    assert.is_nil(H.read(dir .. "/state.md"))
    assert(ch:compact{ audit = false, template = "return 'x\\n'" })
    assert.are.equal("x\n", H.read(dir .. "/state.md"))
    assert.are.equal(9, assert(ch:state()).last_seq)
  end)
end)
