-- Functional specs for the team protocols (docs/protocols.md), spawning the
-- binary: typed posts (byte-identical without the new flags, extra
-- frontmatter after title with them, bad input refused with nothing
-- written), request/await/respond between processes (approval, rejection,
-- timeout, a response that arrives before the requester waits, duplicates,
-- Ctrl-C), the team view and examples/lead-shutdown.lua against teammates
-- simulated by background processes.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local EXAMPLE = H.repo .. "/examples/lead-shutdown.lua"

local ac = F.run_checked

--- A fresh root with channel dev (members lead, bob, carol, dave).
local function setup_root(members)
  local root = F.new_root()
  F.init(root, "dev", "--members", members or "lead,bob,carol,dave")
  return root
end

local function expect_error(argv, exit, pattern, opts)
  local r = ac(argv, opts)
  assert.equal(exit, r.code, F.describe(r))
  assert.is_nil(F.error_line(r.stderr), F.describe(r))
  assert.truthy(r.stderr:find(pattern, 1, true), "want " .. pattern .. ": " .. F.describe(r))
  assert.equal("", r.stdout, F.describe(r))
  return r
end

local function message_file(root, seq)
  for _, name in ipairs(H.ls(root .. "/dev")) do
    if tonumber(name:match("^(%d+)%-")) == seq then
      return F.read(root .. "/dev/" .. name), name
    end
  end
  return nil
end

--- Request id of a `request --no-wait` line.
local function posted_id(stdout)
  return assert(stdout:match("^request (%S+) posted #%d+ %-> "), F.show(stdout))
end

local background = F.background

-- bob answering like an agent would: wait until the request reaches him
-- (the last step of the requester before its wait), read its id, respond.
local RESPONDER = [[
id=$("$A" wait dev --as bob --timeout 20 | sed -n 's/^request_id: //p' | tail -1)
"$A" respond dev --from bob --request "$id" %s >/dev/null
]]

-- ------------------------------------------------------------ typed posts

describe("post --type/--request-id/--role", function()
  local root

  before_each(function()
    root = setup_root()
  end)

  it("writes a post without the new flags byte for byte as before (docs/format.md 3.3)", function()
    assert.equal(1, F.post(root, "dev", "lead", "Hello: world/Test", "body\n\n", "--to", "bob", "--reply", "3"))
    local text, name = message_file(root, 1)
    assert.equal("0001-lead-hello-world-test.md", name)
    local ts = text:match("\nts: ([^\n]*)\n")
    assert.equal("---\nseq: 1\nfrom: lead\nto: bob\nreply_to: 3\nchannel: dev\nts: " .. ts
      .. "\nstatus: discussion\ntitle: Hello: world/Test\n---\nbody\n", text)
  end)

  it("writes type, request_id and role after title, and nothing else changes", function()
    F.post(root, "dev", "lead", "plan", "the plan", "--to", "bob", "--reply", "0")
    local seq = F.post(root, "dev", "lead", "plan", "the plan", "--to", "bob", "--type", "plan_approval_request",
      "--request-id", "r-1", "--role", "parent")
    assert.equal(2, seq)
    local plain = message_file(root, 1)
    local typed, name = message_file(root, 2)
    assert.equal("0002-lead-plan.md", name)
    local ts = typed:match("\nts: ([^\n]*)\n")
    local want = plain:gsub("seq: 1\n", "seq: 2\n"):gsub("\nts: [^\n]*\n", "\nts: " .. ts .. "\n")
      :gsub("title: plan\n", "title: plan\ntype: plan_approval_request\nrequest_id: r-1\nrole: parent\n")
    assert.equal(want, typed)
    -- read and peek print the file as it is, extra lines included.
    local r = ac({ "--root", root, "read", "dev", "--as", "bob" })
    assert.equal(0, r.code)
    assert.equal(F.RULE .. "\n" .. plain:gsub("\n$", "") .. "\n\n" .. F.RULE .. "\n" .. typed:gsub("\n$", "")
      .. "\n\n", r.stdout)
    local p = ac({ "--root", root, "peek", "dev", "-n", "1" })
    assert.equal(F.RULE .. "\n" .. typed:gsub("\n$", "") .. "\n\n", p.stdout)
    -- roster's compatible output does not change.
    local ro = ac({ "--root", root, "roster", "dev" })
    assert.equal("channel : dev\ntopic   : (none)\nmembers : lead, bob, carol, dave\nmessages: 2\n", ro.stdout)
  end)

  it("is read by a Python-style frontmatter reader with the eight fields intact", function()
    F.post(root, "dev", "lead", "t", "b", "--to", "bob", "--reply", "4", "--status", "s",
      "--type", "shutdown_request", "--request-id", "r9", "--role", "steer")
    local _, name = message_file(root, 1)
    local script = F.tmpdir() .. "/fm.py"
    -- docs/format.md 3.3's reader, as the Python tool implements it.
    F.write(script, [[
import json, sys
def parse(text):
    lines = text.split("\n")
    if not lines or not lines[0].startswith("---"):
        return {}
    out = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return out
        if ":" not in line:
            continue
        k, v = line.split(":", 1)
        out[k.strip()] = v.strip()
    return {}
print(json.dumps(parse(open(sys.argv[1], encoding="utf-8").read()), sort_keys=True))
]])
    local p = io.popen("python3 " .. F.sh(script) .. " " .. F.sh(root .. "/dev/" .. name))
    local out = p:read("a")
    p:close()
    local json = require "agentchat.json"
    local fields = assert(json.loads(out), out)
    assert.equal("1", fields.seq)
    assert.equal("lead", fields.from)
    assert.equal("bob", fields.to)
    assert.equal("4", fields.reply_to)
    assert.equal("dev", fields.channel)
    assert.equal("s", fields.status)
    assert.equal("t", fields.title)
    assert.equal("shutdown_request", fields.type)
    assert.equal("r9", fields.request_id)
    assert.equal("steer", fields.role)
  end)

  it("keeps --re meaning --reply and --t ambiguous as before", function()
    local r = ac({ "--root", root, "post", "dev", "--from", "a", "--title", "x", "--re", "2", "--body", "b" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(message_file(root, 1):find("\nreply_to: 2\n", 1, true))
    expect_error({ "--root", root, "post", "dev", "--from", "a", "--t", "x", "--body", "b" }, 2,
      "agent-chat: USAGE: post: ambiguous option: --t could match --to, --title (see 'agent-chat post -h')")
    -- The new options are never abbreviated.
    expect_error({ "--root", root, "post", "dev", "--from", "a", "--title", "x", "--ty", "message", "--body", "b" },
      2, "unrecognized arguments: --ty message")
    expect_error({ "--root", root, "post", "dev", "--from", "a", "--title", "x", "--rol", "parent", "--body", "b" },
      2, "unrecognized arguments: --rol parent")
  end)

  local BAD = {
    { { "--type", "Shutdown" }, "MESSAGE_INVALID_TYPE", "'Shutdown'" },
    { { "--type", "a-b" }, "MESSAGE_INVALID_TYPE", "'a-b'" },
    { { "--type", "" }, "MESSAGE_INVALID_TYPE", "''" },
    { { "--type", "a b" }, "MESSAGE_INVALID_TYPE", "'a b'" },
    { { "--type", string.rep("x", 65) }, "MESSAGE_INVALID_TYPE", "at most 64" },
    { { "--type", "shutdown_request" }, "MESSAGE_REQUEST_ID_REQUIRED", "needs a request id" },
    { { "--type", "plan_approval_response" }, "MESSAGE_REQUEST_ID_REQUIRED", "needs a request id" },
    { { "--role", "boss" }, "MESSAGE_INVALID_ROLE", "parent, child, steer or follow_up: 'boss'" },
    { { "--role", "" }, "MESSAGE_INVALID_ROLE", "''" },
    { { "--request-id", "a b" }, "MESSAGE_INVALID_REQUEST_ID", "'a b'" },
    { { "--request-id", "" }, "MESSAGE_INVALID_REQUEST_ID", "''" },
    { { "--request-id=-x" }, "MESSAGE_INVALID_REQUEST_ID", "'-x'" },
    { { "--request-id", "a\nfrom: mallory" }, "MESSAGE_INVALID_REQUEST_ID", "'a\\nfrom: mallory'" },
    { { "--request-id", string.rep("7", 129) }, "MESSAGE_INVALID_REQUEST_ID", "at most 128" },
  }
  for _, case in ipairs(BAD) do
    it("refuses " .. F.show(table.concat(case[1], " ")) .. " with " .. case[2] .. ", exit 1, nothing written",
      function()
        local before = F.snapshot(root)
        local argv = { "--root", root, "post", "dev", "--from", "lead", "--title", "t", "--body", "b" }
        for _, w in ipairs(case[1]) do
          argv[#argv + 1] = w
        end
        expect_error(argv, 1, "agent-chat: " .. case[2] .. ": ")
        local r = ac(argv)
        assert.truthy(r.stderr:find(case[3], 1, true), F.describe(r))
        assert.same({}, F.diff(before, F.snapshot(root)))
      end)
  end

  it("checks the typed flags before reading a body from stdin", function()
    local r = ac({ "--root", root, "post", "dev", "--from", "lead", "--title", "t", "--role", "boss" },
      { stdin = "" })
    assert.equal(1, r.code)
    assert.truthy(r.stderr:find("MESSAGE_INVALID_ROLE", 1, true), F.describe(r))
  end)

  it("needs a value for each flag (usage error, exit 2)", function()
    for _, flag in ipairs({ "--type", "--request-id", "--role" }) do
      expect_error({ "--root", root, "post", "dev", "--from", "a", "--title", "t", "--body", "b", flag }, 2,
        "argument " .. flag .. ": expected one argument")
    end
  end)
end)

-- ------------------------------------------------------------ request / respond

describe("request and respond between two processes", function()
  local root

  before_each(function()
    root = setup_root()
  end)

  -- --interval 60 with --timeout 20: only a change notification can wake it.
  it("approves: exit 0, prints the response, woken by the post", function()
    local r = background(root, "request dev --from lead --to bob --type shutdown_request --body bye "
      .. "--timeout 20 --interval 60", RESPONDER:format("--approve --reason 'all done'"), 0.2)
    assert.equal(0, r.code, F.show(r.stderr))
    assert.equal("", r.stderr)
    local id = posted_id(r.stdout)
    assert.truthy(id:match("^%x+$") and #id == 32, id)
    local response = message_file(root, 2)
    assert.equal("request " .. id .. " posted #1 -> dev/0001-lead-shutdown-request.md\n" .. F.RULE .. "\n"
      .. response:gsub("\n$", "") .. "\n\n", r.stdout)
    assert.truthy(response:find("\nfrom: bob\nto: lead\nreply_to: 1\n", 1, true), response)
    assert.truthy(response:find("\nstatus: approved\ntitle: shutdown_response: approved\n"
      .. "type: shutdown_response\nrequest_id: " .. id .. "\n---\nall done\n$"), response)
    -- The requester's cursor is untouched: read still shows the response.
    assert.is_nil(F.read(root .. "/dev/.cursors/lead.txt"))
  end)

  it("rejects: exit 3, the response and its reason printed", function()
    local r = background(root, "request dev --from lead --to bob --type plan_approval_request --title plan "
      .. "--body 'step 1' --timeout 20", RESPONDER:format("--reject --reason 'not yet'"), 0.3)
    assert.equal(3, r.code, F.show(r.stderr))
    assert.equal("", r.stderr)
    assert.truthy(r.stdout:find("\nstatus: rejected\ntitle: plan_approval_response: rejected\n"
      .. "type: plan_approval_response\n", 1, true), F.show(r.stdout))
    assert.truthy(r.stdout:find("\nnot yet\n\n$"), F.show(r.stdout))
  end)

  it("times out: exit 2, one error line naming the request, only the request written", function()
    local r = ac({ "--root", root, "request", "dev", "--from", "lead", "--to", "bob", "--type", "shutdown_request",
                   "--request-id", "r1", "--timeout", "0.3" })
    assert.equal(2, r.code, F.describe(r))
    assert.equal("request r1 posted #1 -> dev/0001-lead-shutdown-request.md\n", r.stdout)
    assert.equal("agent-chat: ETIMEDOUT: no response to request r1 from bob in 'dev' after 0.3s\n", r.stderr)
    assert.same({ 1 }, F.file_seqs(root .. "/dev"))
  end)

  it("finds a response that arrived before the requester started waiting", function()
    local r = ac({ "--root", root, "request", "dev", "--from", "lead", "--to", "bob", "--type", "shutdown_request",
                   "--no-wait" })
    assert.equal(0, r.code, F.describe(r))
    local id = posted_id(r.stdout)
    r = ac({ "--root", root, "respond", "dev", "--from", "bob", "--request", id, "--approve" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("posted #2 -> dev/0002-bob-shutdown-response-approved.md\n", r.stdout)
    -- --timeout 0: found without waiting at all.
    r = ac({ "--root", root, "await", "dev", "--as", "lead", "--request", id, "--timeout", "0" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(F.RULE .. "\n" .. message_file(root, 2):gsub("%s+$", "") .. "\n\n", r.stdout)
    -- And again, as JSON.
    r = ac({ "--root", root, "await", "dev", "--as", "lead", "--request", id, "--json" })
    assert.equal(0, r.code, F.describe(r))
    local json = require "agentchat.json"
    local list = assert(json.loads(r.stdout))
    assert.equal(1, #list)
    assert.same({ answered = true, approved = true, decision = "approved", from = "bob", reason = "",
                  request_id = id, request_seq = 1, response_file = "0002-bob-shutdown-response-approved.md",
                  response_seq = 2, to = "bob", type = "shutdown_request" }, list[1])
  end)

  it("request --json prints one object, answered or not", function()
    local json = require "agentchat.json"
    local r = ac({ "--root", root, "request", "dev", "--from", "lead", "--to", "bob", "--type", "x_request",
                   "--request-id", "j1", "--no-wait", "--json" })
    assert.equal(0, r.code, F.describe(r))
    assert.same({ answered = false, approved = false, request_id = "j1", request_seq = 1, to = "bob",
                  type = "x_request" }, json.loads(r.stdout))
    r = ac({ "--root", root, "request", "dev", "--from", "lead", "--to", "bob", "--type", "x_request",
             "--request-id", "j2", "--json", "--timeout", "0.1" })
    assert.equal(2, r.code, F.describe(r))
    assert.is_false(json.loads(r.stdout).answered)
    assert.equal("agent-chat: ETIMEDOUT: no response to request j2 from bob in 'dev' after 0.1s\n", r.stderr)
    local w = background(root, "request dev --from lead --to bob --type x_request --json --timeout 20",
      RESPONDER:format("--reject --reason nope"), 0.3)
    assert.equal(3, w.code, F.show(w.stderr))
    local obj = json.loads(w.stdout)
    assert.equal("rejected", obj.decision)
    assert.equal("nope", obj.reason)
    assert.equal(4, obj.response_seq)
  end)

  it("await waits for a response posted later, in another process", function()
    local r = ac({ "--root", root, "request", "dev", "--from", "lead", "--to", "bob", "--type", "shutdown_request",
                   "--no-wait", "--request-id", "late" })
    assert.equal(0, r.code)
    local w = background(root, "await dev --as lead --request late --timeout 20 --interval 60",
      [["$A" respond dev --from bob --request late --reject >/dev/null]], 0.5)
    assert.equal(3, w.code, F.show(w.stderr))
    assert.truthy(w.stdout:find("\nstatus: rejected\n", 1, true))
  end)

  it("await names the requests without a response when it times out", function()
    for _, id in ipairs({ "a1", "a2" }) do
      assert.equal(0, ac({ "--root", root, "request", "dev", "--from", "lead", "--to", "bob",
                           "--type", "shutdown_request", "--no-wait", "--request-id", id }).code)
    end
    ac({ "--root", root, "respond", "dev", "--from", "bob", "--request", "a2", "--approve" })
    local r = ac({ "--root", root, "await", "dev", "--as", "lead", "--request", "a1", "--request", "a2",
                   "--timeout", "0.2" })
    assert.equal(2, r.code, F.describe(r))
    assert.same({ 3 }, F.seqs(r.stdout))
    assert.equal("agent-chat: ETIMEDOUT: no response to request a1 in 'dev' after 0.2s\n", r.stderr)
  end)

  it("takes the first response of the addressee; others and later ones do not count", function()
    assert.equal(0, ac({ "--root", root, "request", "dev", "--from", "lead", "--to", "bob",
                         "--type", "shutdown_request", "--no-wait", "--request-id", "d1" }).code)
    -- carol answers a request that is not hers (by hand: respond refuses).
    F.post(root, "dev", "carol", "fake", "yes", "--to", "lead", "--status", "approved",
      "--type", "shutdown_response", "--request-id", "d1")
    ac({ "--root", root, "respond", "dev", "--from", "bob", "--request", "d1", "--reject", "--reason", "no" })
    F.post(root, "dev", "bob", "changed my mind", "ok", "--to", "lead", "--status", "approved",
      "--type", "shutdown_response", "--request-id", "d1")
    local r = ac({ "--root", root, "await", "dev", "--as", "lead", "--request", "d1", "--timeout", "0" })
    assert.equal(3, r.code, F.describe(r))
    assert.same({ 3 }, F.seqs(r.stdout))
  end)

  it("exits 130 on Ctrl-C while waiting, leaving only the request", function()
    -- Signal once the request is out: the requester is then waiting.
    local r = background(root, "request dev --from lead --to bob --type shutdown_request --timeout 20", [[
while [ ! -e "$AGENT_CHAT_ROOT/dev/0001-lead-shutdown-request.md" ]; do sleep 0.05; done
kill -INT $pid]], 0.1)
    assert.equal(130, r.code, F.show(r.stderr))
    assert.equal("agent-chat: cancelled by user\n", r.stderr)
    assert.truthy(r.stdout:find("^request %x+ posted #1"))
    assert.same({ 1 }, F.file_seqs(root .. "/dev"))
  end)

  describe("bad input: a clear error, a stable code, nothing written", function()
    local BAD = {
      { "request: not a request type", { "request", "dev", "--from", "lead", "--to", "bob", "--type", "shutdown" },
        1, "agent-chat: MESSAGE_INVALID_TYPE: a request type must end in _request: 'shutdown'" },
      { "request: a bad type name", { "request", "dev", "--from", "lead", "--to", "bob", "--type", "Stop_request" },
        1, "agent-chat: MESSAGE_INVALID_TYPE: " },
      { "request: to all", { "request", "dev", "--from", "lead", "--to", "all", "--type", "shutdown_request" },
        1, "agent-chat: REQUEST_INVALID_RECIPIENT: a request goes to exactly one agent" },
      { "request: to a list", { "request", "dev", "--from", "lead", "--to", "bob,carol", "--type",
        "shutdown_request" }, 1, "agent-chat: REQUEST_INVALID_RECIPIENT: " },
      { "request: to oneself", { "request", "dev", "--from", "lead", "--to", "lead", "--type", "shutdown_request" },
        1, "agent-chat: REQUEST_INVALID_RECIPIENT: a request cannot go to its own sender: 'lead'" },
      { "request: a bad role", { "request", "dev", "--from", "lead", "--to", "bob", "--type", "shutdown_request",
        "--role", "boss" }, 1, "agent-chat: MESSAGE_INVALID_ROLE: " },
      { "request: a bad request id", { "request", "dev", "--from", "lead", "--to", "bob", "--type",
        "shutdown_request", "--request-id", "a/b" }, 1, "agent-chat: MESSAGE_INVALID_REQUEST_ID: " },
      { "request: no --to", { "request", "dev", "--from", "lead", "--type", "shutdown_request" }, 2,
        "agent-chat: USAGE: request: the following arguments are required: --to" },
      { "request: no --type", { "request", "dev", "--from", "lead", "--to", "bob" }, 2,
        "the following arguments are required: --type" },
      { "request: a missing channel", { "request", "nope", "--from", "lead", "--to", "bob", "--type",
        "shutdown_request" }, 1, "agent-chat: channel 'nope' not found under " },
      { "request: a bad timeout", { "request", "dev", "--from", "lead", "--to", "bob", "--type",
        "shutdown_request", "--timeout", "soon" }, 2, "argument --timeout: invalid float value: 'soon'" },
      { "respond: an unknown request", { "respond", "dev", "--from", "bob", "--request", "nope", "--approve" }, 1,
        "agent-chat: REQUEST_NOT_FOUND: no request nope in 'dev'" },
      { "respond: a bad request id", { "respond", "dev", "--from", "bob", "--request", "a b", "--approve" }, 1,
        "agent-chat: MESSAGE_INVALID_REQUEST_ID: " },
      { "respond: neither --approve nor --reject", { "respond", "dev", "--from", "bob", "--request", "x" }, 2,
        "agent-chat: USAGE: respond: one of the arguments --approve --reject is required "
          .. "(see 'agent-chat respond -h')" },
      { "respond: both", { "respond", "dev", "--from", "bob", "--request", "x", "--approve", "--reject" }, 2,
        "agent-chat: USAGE: respond: argument --reject: not allowed with argument --approve" },
      { "respond: no --request", { "respond", "dev", "--from", "bob", "--approve" }, 2,
        "the following arguments are required: --request" },
      { "await: an unknown request", { "await", "dev", "--as", "lead", "--request", "nope" }, 1,
        "agent-chat: REQUEST_NOT_FOUND: no request nope from lead in 'dev'" },
      { "await: no --request", { "await", "dev", "--as", "lead" }, 2,
        "the following arguments are required: --request" },
    }
    for _, case in ipairs(BAD) do
      it(case[1], function()
        local before = F.snapshot(root)
        local argv = { "--root", root }
        for _, w in ipairs(case[2]) do
          argv[#argv + 1] = w
        end
        expect_error(argv, case[3], case[4])
        assert.same({}, F.diff(before, F.snapshot(root)))
      end)
    end

    it("respond: twice, by someone else, by the requester; request: an id in use", function()
      assert.equal(0, ac({ "--root", root, "request", "dev", "--from", "lead", "--to", "bob",
                           "--type", "shutdown_request", "--no-wait", "--request-id", "x1" }).code)
      local before = F.snapshot(root)
      expect_error({ "--root", root, "respond", "dev", "--from", "carol", "--request", "x1", "--approve" }, 1,
        "agent-chat: REQUEST_INVALID_RECIPIENT: request x1 is addressed to bob, not carol")
      expect_error({ "--root", root, "respond", "dev", "--from", "lead", "--request", "x1", "--approve" }, 1,
        "agent-chat: REQUEST_INVALID_RECIPIENT: request x1 was sent by lead, who cannot answer it")
      expect_error({ "--root", root, "request", "dev", "--from", "lead", "--to", "carol", "--type",
                     "shutdown_request", "--request-id", "x1" }, 1,
        "agent-chat: REQUEST_EXISTS: request x1 already exists (#1)")
      expect_error({ "--root", root, "await", "dev", "--as", "carol", "--request", "x1" }, 1,
        "agent-chat: REQUEST_NOT_FOUND: no request x1 from carol in 'dev'")
      assert.same({}, F.diff(before, F.snapshot(root)))
      assert.equal(0, ac({ "--root", root, "respond", "dev", "--from", "bob", "--request", "x1", "--approve" }).code)
      before = F.snapshot(root)
      expect_error({ "--root", root, "respond", "dev", "--from", "bob", "--request", "x1", "--reject" }, 1,
        "agent-chat: REQUEST_ALREADY_ANSWERED: request x1 was already answered by bob in #2 (approved)")
      assert.same({}, F.diff(before, F.snapshot(root)))
    end)
  end)
end)

-- ------------------------------------------------------------ team

describe("team", function()
  local root

  before_each(function()
    root = setup_root("lead,bob,carol")
  end)

  local function team_json(...)
    local r = ac({ "--root", root, "team", "dev", "--json", ... })
    assert.equal(0, r.code, F.describe(r))
    local json = require "agentchat.json"
    local t = assert(json.loads(r.stdout))
    local by = {}
    for _, m in ipairs(t.members) do
      by[m.name] = m
    end
    return t, by
  end

  local function status(agent, value, detail)
    local argv = { "--root", root, "event", "post", "dev", "--from", agent, "--harness", "h", "--type", "status",
                   "--status", value }
    if detail then
      argv[#argv + 1] = "--detail"
      argv[#argv + 1] = detail
    end
    assert.equal(0, ac(argv).code)
  end

  it("follows each member's lifecycle working -> idle -> working -> shutdown", function()
    local _, by = team_json()
    assert.equal("unknown", by.bob.lifecycle)
    status("bob", "busy", "parser")
    _, by = team_json()
    assert.equal("working", by.bob.lifecycle)
    assert.equal("busy", by.bob.status)
    assert.equal("parser", by.bob.detail)
    status("bob", "idle")
    assert.equal("idle", select(2, team_json()).bob.lifecycle)
    status("bob", "busy")
    assert.equal("working", select(2, team_json()).bob.lifecycle)
    local r = ac({ "--root", root, "request", "dev", "--from", "lead", "--to", "bob", "--type", "shutdown_request",
                   "--no-wait" })
    ac({ "--root", root, "respond", "dev", "--from", "bob", "--request", posted_id(r.stdout), "--approve" })
    local t
    t, by = team_json()
    assert.equal("shutdown", by.bob.lifecycle)
    assert.equal("busy", by.bob.status)       -- the latest status event, still
    assert.equal("dev", t.channel)
    assert.equal(600, t.silent_after)
  end)

  it("prints a table and names the silent members", function()
    status("bob", "busy", "building the parser")
    -- dave is no member; his message is two hours old (written by hand).
    local ts = os.date("!%Y-%m-%dT%H:%M:%S+00:00", os.time() - 7200)
    F.write(root .. "/dev/0002-dave-old.md", "---\nseq: 2\nfrom: dave\nto: all\nchannel: dev\nts: " .. ts
      .. "\nstatus: discussion\ntitle: old\n---\nhi\n")
    local r = ac({ "--root", root, "team", "dev", "--silent-after", "3600" })
    assert.equal(0, r.code, F.describe(r))
    local lines = F.lines(r.stdout)
    assert.equal("NAME   LIFECYCLE  STATUS  SINCE  LAST SEEN  DETAIL", lines[1])
    assert.truthy(lines[2]:match("^lead   unknown    %-       %-      never      %(silent%)$"), lines[2])
    assert.truthy(lines[3]:match("^bob    working    busy    %d+s +%d+s +building the parser$"), lines[3])
    assert.truthy(lines[4]:match("^carol  unknown    %-       %-      never      %(silent%)$"), lines[4])
    assert.truthy(lines[5]:match("^dave   unknown    %-       %-      2h         %(silent%)$"), lines[5])
    assert.equal("silent for more than 3600.0s: lead, carol, dave", lines[6])
    assert.equal(6, #lines)
    local t = team_json("--silent-after", "3600")
    assert.same({ "lead", "carol", "dave" }, t.silent)
    assert.is_false(t.members[4].member)
  end)

  it("leaves roster's output as it was", function()
    status("bob", "busy")
    local r = ac({ "--root", root, "roster", "dev" })
    assert.equal("channel : dev\ntopic   : (none)\nmembers : lead, bob, carol\nmessages: 1\n", r.stdout)
  end)

  it("fails like the other commands on a missing channel and a bad threshold", function()
    expect_error({ "--root", root, "team", "nope" }, 1, "agent-chat: channel 'nope' not found under ")
    expect_error({ "--root", root, "team", "dev", "--silent-after", "-1" }, 2,
      "agent-chat: USAGE: --silent-after must be a finite number of seconds >= 0")
    expect_error({ "--root", root, "team", "dev", "--silent-after", "x" }, 2,
      "argument --silent-after: invalid float value: 'x'")
  end)
end)

-- ------------------------------------------------------------ the example

describe("examples/lead-shutdown.lua", function()
  -- A teammate simulated by a background process: it waits for the
  -- shutdown request like an agent would (`wait`), then answers it.
  local TEAMMATE = [[
teammate() {  # NAME approve|reject|ignore
  while :; do
    out=$("$A" wait dev --as "$1" --timeout 20) || return 1
    id=$(printf '%%s\n' "$out" | sed -n 's/^request_id: //p' | tail -1)
    if printf '%%s\n' "$out" | grep -q '^type: shutdown_request$'; then
      case $2 in
        approve) "$A" respond dev --from "$1" --request "$id" --approve --reason "$1 done" >/dev/null ;;
        reject) "$A" respond dev --from "$1" --request "$id" --reject --reason "$1 busy" >/dev/null ;;
      esac
      return 0
    fi
  done
}
%s
"$A" run "$EXAMPLE" dev --timeout %s >"$W/out" 2>"$W/err"
echo $? >"$W/rc"
wait
]]

  local function run_lead(root, teammates, timeout)
    local work = F.tmpdir()
    local rc = F.shell("W=$1\nEXAMPLE=$2\n" .. TEAMMATE:format(teammates, timeout),
      { AGENT_CHAT_ROOT = root }, work, EXAMPLE)
    assert.equal(0, rc)
    return { code = tonumber(F.read(work .. "/rc")), stdout = F.read(work .. "/out"),
             stderr = F.read(work .. "/err") }
  end

  it("reports who approved, rejected and timed out (exit 2)", function()
    local root = setup_root("lead,bob,carol,dave,erin")
    -- erin has already stopped: she is not asked again.
    assert.equal(0, ac({ "--root", root, "event", "post", "dev", "--from", "erin", "--harness", "h",
                         "--type", "status", "--status", "stopped" }).code)
    local r = run_lead(root, "teammate bob approve &\nteammate carol reject &\nsleep 0.3", "6")
    assert.equal(2, r.code, F.show(r.stderr) .. F.show(r.stdout))
    assert.equal("", r.stderr)
    local lines = F.lines(r.stdout)
    assert.truthy(lines[1]:match("^bob: approved %(#%d+%) bob done$"), lines[1])
    assert.truthy(lines[2]:match("^carol: rejected %(#%d+%) carol busy$"), lines[2])
    assert.truthy(lines[3]:match("^dave: timed out %(request %x+%)$"), lines[3])
    assert.equal("erin: already shut down", lines[4])
    assert.equal("shutdown of 'dev': 1 approved, 1 rejected, 1 timed out, 1 already down", lines[5])
    -- One request per teammate asked, one response per answer: nothing else.
    local requests, responses = 0, 0
    for _, name in ipairs(H.ls(root .. "/dev")) do
      if name:find("%-shutdown%.md$") then
        requests = requests + 1
      elseif name:find("shutdown%-response") then
        responses = responses + 1
      end
    end
    assert.equal(3, requests)
    assert.equal(2, responses)
  end)

  it("exits 0 when every teammate approves", function()
    local root = setup_root("lead,bob,carol")
    local r = run_lead(root, "teammate bob approve &\nteammate carol approve &\nsleep 0.3", "20")
    assert.equal(0, r.code, F.show(r.stderr) .. F.show(r.stdout))
    assert.equal("shutdown of 'dev': 2 approved, 0 rejected, 0 timed out, 0 already down",
      F.lines(r.stdout)[3])
  end)

  it("exits 3 when one rejects", function()
    local root = setup_root("lead,bob")
    local r = run_lead(root, "teammate bob reject &\nsleep 0.3", "20")
    assert.equal(3, r.code, F.show(r.stderr) .. F.show(r.stdout))
  end)
end)
