-- Functional specs for `agent-chat inbox` (issue 7; docs/receipts.md): the
-- relevant unread messages of every channel (or the listed ones) in time
-- order, each labelled with its channel, and each channel's cursor moved
-- exactly as `read` moves it (checked against `read` run on a copy).
--
-- The three channels are written by hand (docs/format.md 3.3 files) so that their
-- `ts` values interleave across channels and disagree with seq order once.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local json = require "agentchat.json"

local ac, ok = F.ac, F.ok

local function message(root, ch, seq, from, to, ts, title)
  local text = string.format("---\nseq: %d\nfrom: %s\nto: %s\nchannel: %s\nts: %s\nstatus: discussion\n"
    .. "title: %s\n---\n%s body\n", seq, from, to, ch, ts, title, title)
  F.write(string.format("%s/%s/%04d-%s-%s.md", root, ch, seq, from, title), text)
end

-- For bob, in time order: b1 (01) c1 (02) a1 (03) b2 (04) a2 (05*) c3 (06).
-- a2's ts (00:00:00) is earlier than a1's, but a channel keeps seq order.
-- Not for bob: a3 (own), b3 (to carol), c2 (to carol).
local function three_channels(root)
  for _, ch in ipairs({ "alpha", "beta", "gamma" }) do
    F.init(root, ch)
  end
  message(root, "alpha", 1, "alice", "bob", "2026-11-30T10:00:03+00:00", "a1")
  message(root, "alpha", 2, "alice", "all", "2026-11-30T10:00:00+00:00", "a2")
  message(root, "alpha", 3, "bob", "all", "2026-11-30T10:00:07+00:00", "a3")
  message(root, "beta", 1, "carol", "bob,dave", "2026-11-30T10:00:01+00:00", "b1")
  message(root, "beta", 2, "carol", "all", "2026-11-30T11:00:04+01:00", "b2")   -- 10:00:04 UTC
  message(root, "beta", 3, "dave", "carol", "2026-11-30T10:00:08+00:00", "b3")
  message(root, "gamma", 1, "dave", "bob", "2026-11-30T10:00:02+00:00", "c1")
  message(root, "gamma", 2, "dave", "carol", "2026-11-30T10:00:05+00:00", "c2")
  message(root, "gamma", 3, "erin", "[bob]", "2026-11-30T10:00:06+00:00", "c3")
end

local WANT = { "beta:b1", "gamma:c1", "alpha:a1", "alpha:a2", "beta:b2", "gamma:c3" }

-- channel:title of each shown message, from the text output.
local function shown(stdout)
  local out = {}
  for _, b in ipairs(F.blocks(stdout)) do
    local title
    for _, line in ipairs(b) do
      title = title or line:match("^title: (.*)$")
    end
    out[#out + 1] = (b[1] or ""):match("^#(.*)$") .. ":" .. tostring(title)
  end
  return out
end

local function cursors(root)
  local out = {}
  for _, ch in ipairs({ "alpha", "beta", "gamma" }) do
    out[ch] = F.read(root .. "/" .. ch .. "/.cursors/bob.txt")
  end
  return out
end

describe("inbox", function()
  local root

  before_each(function()
    root = F.new_root()
    three_channels(root)
  end)

  it("shows the relevant unread messages of every channel in time order, labelled", function()
    local r = ok(root, { "inbox", "--as", "bob" })
    assert.equal("", r.stderr)
    assert.same(WANT, shown(r.stdout))
    -- Each block: the rule, "#<channel>", then the file text as `read` prints it.
    local text = F.read(root .. "/gamma/0001-dave-c1.md")
    assert.truthy(r.stdout:find(F.RULE .. "\n#gamma\n" .. text:gsub("%s+$", "") .. "\n\n", 1, true), r.stdout)
  end)

  it("moves every channel's cursor exactly as read does", function()
    local other = F.copy(root)
    ok(root, { "inbox", "--as", "bob" })
    for _, ch in ipairs({ "alpha", "beta", "gamma" }) do
      ok(other, { "read", ch, "--as", "bob" })
    end
    assert.same(cursors(other), cursors(root))
    assert.same({ alpha = "3", beta = "3", gamma = "3" }, cursors(root))
    assert.same({}, F.diff(F.snapshot(other), F.snapshot(root)))
    -- Nothing is unread any more, in the inbox or in any channel.
    local r = ok(root, { "inbox", "--as", "bob" })
    assert.equal("(no new messages for bob in 3 channels)\n", r.stdout)
    r = ok(root, { "read", "beta", "--as", "bob" })
    assert.equal("(no new messages for bob in 'beta'; cursor at #3)\n", r.stdout)
  end)

  it("shows only what arrived since, after a read of one channel", function()
    ok(root, { "read", "alpha", "--as", "bob" })
    local r = ok(root, { "inbox", "--as", "bob" })
    assert.same({ "beta:b1", "gamma:c1", "beta:b2", "gamma:c3" }, shown(r.stdout))
  end)

  it("--peek shows the same and moves no cursor", function()
    local before = F.snapshot(root)
    local r = ok(root, { "inbox", "--as", "bob", "--peek" })
    assert.same(WANT, shown(r.stdout))
    assert.same({}, F.diff(before, F.snapshot(root)))
  end)

  it("--channels limits it to the listed channels, whose cursors alone move", function()
    local r = ok(root, { "inbox", "--as", "bob", "--channels", " gamma, alpha,gamma" })
    assert.same({ "gamma:c1", "alpha:a1", "alpha:a2", "gamma:c3" }, shown(r.stdout))
    assert.same({ alpha = "3", gamma = "3" }, cursors(root))
  end)

  it("--json lists the messages in the same order with their channel, and the cursors", function()
    local r = ok(root, { "inbox", "--as", "bob", "--json", "--peek" })
    local doc = json.loads(r.stdout)
    assert.equal("bob", doc.agent)
    local got = {}
    for i, m in ipairs(doc.messages) do
      got[i] = m.channel .. ":" .. m.title
    end
    assert.same(WANT, got)
    assert.equal("carol", doc.messages[1].from)
    assert.equal("b1 body\n", doc.messages[1].body)
    assert.same({ { channel = "alpha", cursor = 3, cursor_before = 0, messages = 2 },
                  { channel = "beta", cursor = 3, cursor_before = 0, messages = 2 },
                  { channel = "gamma", cursor = 3, cursor_before = 0, messages = 2 } }, doc.channels)
  end)

  it("fails for a listed channel that is missing or invalid, moving no cursor", function()
    local before = F.snapshot(root)
    local r = ac(root, { "inbox", "--as", "bob", "--channels", "alpha,nope" })
    assert.equal(1, r.code)
    assert.equal("", r.stdout)
    assert.equal("agent-chat: channel 'nope' not found under " .. root .. " (run: init nope)\n", r.stderr)
    r = ac(root, { "inbox", "--as", "bob", "--channels", "alpha,../x" })
    assert.equal("agent-chat: invalid channel name (path traversal blocked): '../x'\n", r.stderr)
    assert.same({}, F.diff(before, F.snapshot(root)))
  end)

  it("works on a root without channels", function()
    local r = ok(F.new_root(), { "inbox", "--as", "bob" })
    assert.equal("(no new messages for bob in 0 channels)\n", r.stdout)
  end)

  it("requires --as (usage error, exit 2)", function()
    local r = ac(root, { "inbox" })
    assert.equal(2, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr))
  end)
end)
