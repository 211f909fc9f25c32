-- agentchat.web (docs/web.md): escaping and the safe Markdown subset of the
-- page of `agent-chat serve`, and the route table of agentchat.serve on
-- values no server is needed for. What a browser makes of the output is
-- serve_browser_spec's; here the HTML text itself.
local web = require "agentchat.web"

-- No tag or attribute of the input survives: the only '<' are the ones of
-- tags the renderer makes.
local ALLOWED = { p = true, br = true, strong = true, em = true, code = true, pre = true, ul = true, ol = true,
                  li = true, blockquote = true, h3 = true, h4 = true, h5 = true, h6 = true, a = true }

local function tags(html)
  local out = {}
  for tag in html:gmatch("<%s*/?%s*([%w]+)") do
    out[#out + 1] = tag:lower()
  end
  return out
end

local function assert_safe(html)
  for _, t in ipairs(tags(html)) do
    assert.is_true(ALLOWED[t] == true, "unexpected tag <" .. t .. "> in " .. html)
  end
  for attr in html:gmatch("<a ([^>]*)>") do
    assert.truthy(attr:match('^href="https?://[^"]*" rel="noopener noreferrer nofollow"$')
      or attr:match('^href="mailto:[^"]*" rel="noopener noreferrer nofollow"$'), attr)
  end
  for tag in html:gmatch("<[^>]*>") do
    assert.is_nil(tag:find("on%a+%s*="), tag)
  end
end

describe("web.escape", function()
  it("turns the five special characters into entities and NUL into U+FFFD", function()
    assert.are.equal("&lt;script&gt;&amp;&quot;&#39;", web.escape("<script>&\"'"))
    assert.are.equal("a\239\191\189b", web.escape("a\0b"))
    assert.are.equal("", web.escape(nil))
    assert.are.equal("12", web.escape(12))
  end)
end)

describe("web.markdown", function()
  it("renders the subset: paragraphs, emphasis, code, lists, quotes, headings, links", function()
    local html = web.markdown("# Title\n\nSome **bold** and *em* and `x < y`.\nnext line\n\n- one\n- two\n\n"
      .. "1. first\n\n> quoted\n\n```\nif a < b then\n```\n[site](https://example.org/a?b=1&c=2)")
    assert.truthy(html:find("<h3>Title</h3>", 1, true))
    assert.truthy(html:find("<p>Some <strong>bold</strong> and <em>em</em> and <code>x &lt; y</code>.<br>\n"
      .. "next line</p>", 1, true))
    assert.truthy(html:find("<ul><li>one</li><li>two</li></ul>", 1, true))
    assert.truthy(html:find("<ol><li>first</li></ol>", 1, true))
    assert.truthy(html:find("<blockquote>quoted</blockquote>", 1, true))
    assert.truthy(html:find("<pre><code>if a &lt; b then</code></pre>", 1, true))
    assert.truthy(html:find('<a href="https://example.org/a?b=1&amp;c=2" rel="noopener noreferrer nofollow">site</a>',
      1, true))
    assert_safe(html)
  end)

  it("keeps hostile input as text", function()
    local cases = {
      "<script>alert(1)</script>",
      '<img src=x onerror="alert(1)">',
      '" onerror="alert(1)',
      "[x](javascript:alert(1))",
      "[x](JavaScript:alert(1))",
      '[x](https://a.example/" onmouseover="alert(1))',
      "[x](data:text/html,<script>alert(1)</script>)",
      "**<b>bold</b>**",
      "`<code>` and ```<pre>```",
      "```\n</code></pre><script>alert(1)</script>\n```",
      "> <iframe src=x>",
      "# <svg onload=alert(1)>",
      "- <a href=javascript:alert(1)>x</a>",
      "*<img src=x onerror=alert(1)>*",
      "\0<script>",
    }
    for _, c in ipairs(cases) do
      local html = web.markdown(c)
      assert_safe(html)
      assert.is_nil(html:find("<script", 1, true), c)
      assert.is_nil(html:find('href="javascript', 1, true), c)
      assert.is_nil(html:find('href="data', 1, true), c)
    end
  end)

  it("an unclosed code fence runs to the end, escaped", function()
    assert.are.equal("<pre><code>&lt;b&gt;\n</code></pre>", web.markdown("```\n<b>\n"))
  end)
end)

describe("web.message", function()
  local function msg(t)
    t.fields = t.fields or {}
    return t
  end

  it("escapes every field and folds audit messages", function()
    local html = web.message(msg{ seq = 3, from = "<a>", to = '"b"', title = "<script>x</script>",
      status = "<s>", ts = "2026-12-02T03:00:00+00:00", file = "0003-<x>.md", body = "<i>" })
    assert.is_nil(html:find("<script", 1, true))
    assert.is_nil(html:find("<a>", 1, true))
    assert.is_nil(html:find("<i>", 1, true))
    assert.truthy(html:find("&lt;script&gt;x&lt;/script&gt;", 1, true))
    assert.truthy(html:find("0003-&lt;x&gt;.md", 1, true))
    assert.truthy(html:find(">03:00:00</time>", 1, true))
    local audit = web.message(msg{ seq = 4, from = "a", to = "all", title = "task.created t1", status = "task.created",
      body = "{\"task_id\": \"<t>\"}" })
    assert.truthy(audit:find('^<details class="msg audit" id="m%-4">'))
    assert.truthy(audit:find("&lt;t&gt;", 1, true))
  end)

  it("links a typed request and its response in a timeline", function()
    local req = msg{ seq = 5, from = "bob", to = "lead", title = "plan", status = "discussion",
      fields = { type = "plan_approval_request", request_id = "r-1" }, body = "" }
    local resp = msg{ seq = 7, from = "lead", to = "bob", title = "ok", status = "approved",
      fields = { type = "plan_approval_response", request_id = "r-1" }, body = "" }
    local html = web.timeline({ req, resp })
    assert.truthy(html:find('<a class="badge answered" href="#m-7">answered by #7</a>', 1, true))
    assert.truthy(html:find('<a class="badge answers" href="#m-5">answers #5</a>', 1, true))
    -- alone (a live event): it still says waiting, and the response links by id
    assert.truthy(web.message(req):find("awaiting response", 1, true))
    assert.truthy(web.message(resp):find('href="#req-r-1"', 1, true))
    -- a request id that is no safe anchor gets no link
    local odd = msg{ seq = 8, from = "x", to = "y", title = "t",
      fields = { type = "x_response", request_id = '"><script>' }, body = "" }
    assert.is_nil(web.message(odd):find("<script", 1, true))
  end)
end)

describe("web panels", function()
  it("escape task, lock, team and channel fields", function()
    local now = 1000
    local board = web.board({ { id = "<t>", title = "<b>x</b>", status = "in_progress", owner = "<o>",
      lease_expires_at = "1970-01-01T00:20:00+00:00" }, { id = "t2", title = "y", status = "<weird>" } }, now)
    assert.is_nil(board:find("<b>", 1, true))
    assert.is_nil(board:find("<o>", 1, true))
    assert.truthy(board:find('data-expires="1200"', 1, true))
    assert.truthy(board:find("lease ends in 3m 20s", 1, true))
    assert.truthy(board:find('class="column &lt;weird&gt;"', 1, true))
    local locks = web.locks({ { owner = "<o>", paths = { { display_path = "<p>" } },
      expires_at = "1970-01-01T00:10:00+00:00" } }, now)
    assert.is_nil(locks:find("<p>", 1, true))
    assert.truthy(locks:find("expires 6m 40s ago", 1, true))
    local team = web.team({ members = { { name = "<n>", lifecycle = "<l>", status = "<s>", last_seen_age = 61,
      silent = true } } })
    assert.is_nil(team:find("<n>", 1, true))
    assert.truthy(team:find("seen 1m 01s ago", 1, true))
    local chans = web.channels({ { name = '"><x', count = 1, unread = { { member = "<m>", count = 2 } } } }, nil,
      "token=a%26b")
    assert.is_nil(chans:find('"><x', 1, true))
    assert.truthy(chans:find('href="/c/%22%3E%3Cx?token=a%26b"', 1, true))
  end)
end)

describe("serve.route", function()
  it("answers 404 for paths outside its routes without touching a store", function()
    local serve = require "agentchat.serve"
    local st = serve.new_state({ path = "/nonexistent" }, {})
    for _, p in ipairs({ "/nothing", "/c", "/c/a/b/c/d", "/api", "/api/x" }) do
      local status = serve.route(st, { path = p, args = {} })
      assert.are.equal(404, status, p)
    end
    local status, ctype, body = serve.route(st, { path = "/static/app.js", args = {} })
    assert.are.equal(200, status)
    assert.truthy(ctype:match("^text/javascript"))
    assert.truthy(body:find("EventSource", 1, true))
  end)

  it("encodes JSON with <, > and & escaped", function()
    local serve = require "agentchat.serve"
    assert.are.equal('{"a": "\\u003c/script\\u003e\\u0026"}', serve.encode({ a = "</script>&" }))
  end)
end)
