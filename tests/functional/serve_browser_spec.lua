-- End-to-end check of `agent-chat serve` in headless Chromium (docs/web.md):
-- the page of a demo channel is opened, a message is posted while it is
-- open, and the page shows it without a reload (its event stream), within
-- a latency that is printed (not asserted). The message's title and body
-- carry `<script>`, `<img onerror>` and `" onerror=` payloads and a
-- javascript: link, which must render as text: no script ran, no image or
-- script element was made, no javascript: link. A screenshot is kept as a
-- test artifact in build/test-artifacts/serve-browser.png.
--
-- Chromium is driven over the DevTools protocol on a pipe
-- (tests/functional/cdp_live.py, python3's standard library only). Without
-- chromium or python3 the check is pending (a SKIP line), never passed.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local S = require "servesupport"
local json = require "agentchat.json"

local function which(name)
  local p = io.popen("command -v " .. name .. " 2>/dev/null")
  local path = p:read("l")
  p:close()
  return path
end

local TITLE = [[<img src=x onerror="window.__pwned=1"> " onerror="window.__pwned=2 live]]
local BODY = [[**it works** <script>window.__pwned=3</script> [x](javascript:window.__pwned=4)]]

describe("serve in headless Chromium", function()
  it("shows a message posted while the page is open, without a reload, as text", function()
    local chromium = which("chromium") or which("chromium-browser")
    if not chromium then
      pending("chromium is not installed (apt-get install chromium; scripts/install-deps does)")
      return
    end
    if not which("python3") then
      pending("python3 is not installed: cdp_live.py cannot drive chromium")
      return
    end
    local root = F.new_root()
    F.init(root, "demo", "--members", "alice,bob", "--topic", "a demo channel")
    F.post(root, "demo", "alice", "plan", "1. build\n2. test", "--to", "bob")
    F.ok(root, { "task", "create", "demo", "web", "--title", "Ship the web view", "--from", "alice" })
    F.ok(root, { "task", "claim", "demo", "web", "--as", "bob", "--lease", "900" })
    F.ok(root, { "lock", "demo", "src/http", "--as", "bob", "--ttl", "600" })
    local srv = assert(S.start(root))
    local artifacts = H.repo .. "/build/test-artifacts"
    os.execute("mkdir -p " .. F.sh(artifacts))
    local shot = artifacts .. "/serve-browser.png"
    os.remove(shot)
    local next_seq = json.loads(srv:get("/api/channels").body).channels[1].last_seq + 1
    local cmd = { "python3", H.repo .. "/tests/functional/cdp_live.py", chromium, srv.url .. "/c/demo",
                  tostring(next_seq), shot,
                  "--", F.bin, "--root", root, "post", "demo", "--from", "bob", "--to", "alice", "--title", TITLE,
                  "--body", BODY }
    local words = {}
    for i, w in ipairs(cmd) do
      words[i] = F.sh(w)
    end
    local p = assert(io.popen("env LC_ALL=C HOME=" .. F.sh(F.home) .. " AGENT_CHAT_TEST_FSYNC=0 "
      .. table.concat(words, " ") .. " 2>&1"))
    local out = p:read("a")
    p:close()
    local r = srv:stop("TERM")
    assert.are.equal(143, r.code)
    local line = out:match("(%b{})%s*$")
    local v = line and json.loads(line)
    assert(v, "cdp_live.py: " .. F.show(out))
    assert.are.equal(json.null, v.error, tostring(v.error))
    assert.is_true(v.live, "the page's event stream did not open")
    assert.is_true(v.appeared, "the message did not appear")
    io.stderr:write(string.format("# serve: the message appeared in Chromium's DOM %.1f ms after the post started; "
      .. "screenshot %s\n", v.latency_ms, shot))
    assert.is_false(v.reloaded)
    assert.are.equal(TITLE, v.title)
    assert.are.equal(1, v.scripts)
    assert.are.equal(json.null, v.pwned)
    assert.are.equal(0, v.images)
    assert.are.equal(0, v.links)
    assert.truthy(F.read(shot), "no screenshot")
  end)
end)
