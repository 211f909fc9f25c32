-- Functional specs for hostile input (docs/format.md 2, 2.1, 3.3, 3.4, 5.5): bad
-- channel and agent names, bad body files, and hand-made files in a channel.
-- Each case gives one clear error line with the documented exit code (or, where
-- the Python tool succeeds, succeeds) and never changes what it must not:
-- the tree under the root's parent is snapshotted before and after.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local LONG = string.rep("a", 10 * 1024)

--- Run the binary and assert it did not crash.
local ac = F.run_checked

--- A root with channel `c` holding one message; returns root, parent.
local function seeded_root()
  local root, parent = F.new_root()
  F.init(root, "c")
  F.post(root, "c", "alice", "first", "first body")
  return root, parent
end

local function no_raw_controls(s)
  return not s:sub(1, -2):find("[%z\1-\31\127]")
end

describe("hostile channel names", function()
  local TRAVERSAL = "invalid channel name (path traversal blocked): '%s'"
  local RESERVED = "invalid channel name (reserved prefix blocked): '%s'"

  -- { name, exact stderr text (without "agent-chat: ") or nil }
  local NAMES = {
    { "..", TRAVERSAL:format("..") },
    { ".", TRAVERSAL:format(".") },
    { "../x", TRAVERSAL:format("../x") },
    { "../../../tmp/x", TRAVERSAL:format("../../../tmp/x") },
    { "a/b", TRAVERSAL:format("a/b") },
    { "/abs", TRAVERSAL:format("/abs") },
    { "a\\b", TRAVERSAL:format("a\\b") },
    { "a:b", TRAVERSAL:format("a:b") },
    { "", TRAVERSAL:format("") },
    { ".hidden", RESERVED:format(".hidden") },
    { ".cursors", RESERVED:format(".cursors") },
    { "_x", RESERVED:format("_x") },
    { "a\tb" },
    { "a\nb" },
    { "\27[31m" },
    { "bell\7" },
    { LONG },
    { "\255\254" },
    { "ok\195" },
    { "\192\175etc" },
  }

  local function commands(name)
    return {
      { "init", name },
      { "init", name, "--members", "a,b", "--topic", "t" },
      { "post", name, "--from", "alice", "--title", "t", "--body", "x" },
      { "read", name, "--as", "alice" },
      { "read", name, "--as", "alice", "--peek" },
      { "read", name, "--as", "alice", "--all" },
      { "peek", name },
      { "roster", name },
      { "wait", name, "--as", "alice", "--timeout", "0" },
      { "claim", name, "task-1.md", "--as", "alice" },
    }
  end

  for _, case in ipairs(NAMES) do
    local name, text = case[1], case[2]
    it("rejects " .. F.show(name):sub(1, 40) .. " in every message command and changes nothing", function()
      local root, parent = seeded_root()
      F.write(root .. "/c/task-1.md", "marker\n")
      local before = F.snapshot(parent)
      for _, argv in ipairs(commands(name)) do
        table.insert(argv, 1, root)
        table.insert(argv, 1, "--root")
        local r = ac(argv)
        assert.equal(1, r.code, F.describe(r))
        assert.equal("", r.stdout, F.describe(r))
        assert.is_nil(F.error_line(r.stderr), F.describe(r))
        if text then
          assert.equal("agent-chat: " .. text .. "\n", r.stderr)
        else
          assert.truthy(r.stderr:find("^agent%-chat: invalid channel name"), F.describe(r))
        end
        assert.is_true(no_raw_controls(r.stderr), "raw control character in " .. F.describe(r))
        assert.same({}, F.diff(before, F.snapshot(parent)), F.describe(r))
      end
    end)
  end

  it("reports a 10 KB channel name in one line", function()
    local root = seeded_root()
    local r = ac({ "--root", root, "post", LONG, "--from", "a", "--title", "t", "--body", "x" })
    assert.equal(1, r.code, F.describe(r))
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
  end)

  -- The rejected name is echoed with invalid bytes escaped (\xNN), like
  -- control characters, so the error line stays valid UTF-8.
  it("prints a valid UTF-8 error line for a name with invalid UTF-8", function()
    local root = seeded_root()
    for _, name in ipairs({ "\255\254", "ok\195", "\192\175etc" }) do
      local r = ac({ "--root", root, "post", name, "--from", "a", "--title", "t", "--body", "x" })
      assert.equal(1, r.code, F.describe(r))
      assert.is_not_nil(utf8.len(r.stderr), "stderr is not valid UTF-8: " .. F.describe(r))
    end
  end)

  it("reports a missing channel for every command and creates nothing", function()
    local root, parent = seeded_root()
    local before = F.snapshot(parent)
    local msg = "agent-chat: channel 'nochan' not found under " .. root .. " (run: init nochan)\n"
    for _, argv in ipairs(commands("nochan")) do
      if argv[1] ~= "init" then
        table.insert(argv, 1, root)
        table.insert(argv, 1, "--root")
        local r = ac(argv)
        assert.equal(1, r.code, F.describe(r))
        assert.equal("", r.stdout, F.describe(r))
        assert.equal(msg, r.stderr)
        assert.same({}, F.diff(before, F.snapshot(parent)), F.describe(r))
      end
    end
  end)

  it("treats a directory without _meta.json as a missing channel", function()
    local root, parent = seeded_root()
    os.execute("mkdir " .. F.sh(root .. "/bare"))
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "post", "bare", "--from", "a", "--title", "t", "--body", "x" })
    assert.equal(1, r.code, F.describe(r))
    assert.equal("agent-chat: channel 'bare' not found under " .. root .. " (run: init bare)\n", r.stderr)
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)
end)

describe("hostile agent names", function()
  -- Names the Python tool accepts for --from / --as.
  local NAMES = {
    "..", ".", "/", "../../x", "../../../escape", "a/../../b", "\\..\\x", "\27[31m", "a\tb",
    "a\nb\r\nc", "x\r", LONG, "---", "a\n---\nseq: 99\nto: mallory",
  }
  -- (A blank name such as "\n" is refused before anything is read or
  -- written: cursor_spec.lua.)

  --- Every path added under `parent` must be a message, a cursor, the
  --- cursor directory or the seq high-water mark of channel c.
  local function only_channel_files(before, after)
    local bad = {}
    for path in pairs(after) do
      if before[path] == nil then
        local ok = path == "root/c/.cursors" or path == "root/c/.seqhigh"
          or path:match("^root/c/%d+%-[%w-]*%.md$")
          or path:match("^root/c/%.cursors/[%w-]+%.txt$")
          or path:match("^root/c/%.cursors/[%w-]+%.%x+%.txt$")
        if not ok then
          bad[#bad + 1] = F.show(path)
        end
      end
    end
    return bad
  end

  for _, name in ipairs(NAMES) do
    it("keeps " .. F.show(name):sub(1, 40) .. " inside the channel (post --from, read/wait --as)", function()
      local root, parent = F.new_root()
      F.init(root, "c")
      local before = F.snapshot(parent)

      local r = ac({ "--root", root, "post", "c", "--from=" .. name, "--title", "t", "--body", "hello" })
      assert.equal(0, r.code, F.describe(r))
      local file = r.stdout:match("^posted #1 %-> c/(%S+%.md)\n$")
      assert.truthy(file, F.describe(r))
      local text = F.read(root .. "/c/" .. file)
      local lines = F.lines(text)
      assert.equal("from: " .. name:gsub("[\r\n]+", " "), lines[3])
      assert.equal("to: all", lines[4])
      local closers = 0
      for _, line in ipairs(lines) do
        if line == "---" then
          closers = closers + 1
        end
      end
      assert.equal(2, closers, "frontmatter injected: " .. F.show(text))

      -- Relevance compares --as with the stored sender, in which CR/LF runs
      -- became one space: such a sender does not recognise its own message.
      r = ac({ "--root", root, "read", "c", "--as=" .. name })
      assert.equal(0, r.code, F.describe(r))
      if name:find("[\r\n]") then
        assert.same({ 1 }, F.seqs(r.stdout))
      else
        assert.is_true(r.stdout:find("^%(no new messages for ") ~= nil, F.describe(r))
      end

      F.post(root, "c", "zed", "for you", "ping", "--to", "all")
      r = ac({ "--root", root, "wait", "c", "--as=" .. name, "--timeout", "5" })
      assert.equal(0, r.code, F.describe(r))
      assert.same({ 2 }, F.seqs(r.stdout))

      r = ac({ "--root", root, "peek", "c" })
      assert.equal(0, r.code, F.describe(r))
      assert.same({ 1, 2 }, F.seqs(r.stdout))

      assert.same({}, only_channel_files(before, F.snapshot(parent)))
    end)
  end

  it("gives agents whose names slug alike a cursor file each (docs/format.md)", function()
    local root = F.new_root()
    F.init(root, "c")
    F.post(root, "c", "zed", "one", "1")
    ac({ "--root", root, "read", "c", "--as", "../../x" })
    ac({ "--root", root, "read", "c", "--as", "x" })
    assert.equal("1", F.read(root .. "/c/.cursors/x.txt"))
    local names = H.ls(root .. "/c/.cursors")
    assert.equal(2, #names)
    assert.truthy(names[1]:match("^x%.%x+%.txt$") or names[2]:match("^x%.%x+%.txt$"), table.concat(names, " "))
  end)

  it("rejects --from with invalid UTF-8 in one line and changes nothing", function()
    local root, parent = seeded_root()
    local before = F.snapshot(parent)
    for _, argv in ipairs({
      { "post", "c", "--from", "\255bob", "--title", "t", "--body", "x" },
      { "post", "c", "--from", "bob", "--title", "t\192", "--body", "x" },
      { "post", "c", "--from", "bob", "--to", "\254", "--title", "t", "--body", "x" },
    }) do
      table.insert(argv, 1, root)
      table.insert(argv, 1, "--root")
      local r = ac(argv)
      assert.equal(1, r.code, F.describe(r))
      assert.is_nil(F.error_line(r.stderr), F.describe(r))
      assert.same({}, F.diff(before, F.snapshot(parent)), F.describe(r))
    end
  end)

  it("never crashes or escapes the channel for --as with invalid UTF-8", function()
    local root, parent = seeded_root()
    local before = F.snapshot(parent)
    for _, argv in ipairs({
      { "read", "c", "--as", "\255../x" },
      { "wait", "c", "--as", "\255", "--timeout", "0" },
    }) do
      table.insert(argv, 1, root)
      table.insert(argv, 1, "--root")
      local r = ac(argv)
      assert.truthy(r.code == 0 or (r.code == 1 and F.error_line(r.stderr) == nil), F.describe(r))
    end
    assert.same({}, only_channel_files(before, F.snapshot(parent)))
  end)
end)

describe("hostile body input", function()
  local root, parent, cwd

  before_each(function()
    root, parent = seeded_root()
    cwd = F.tmpdir()
    os.execute("mkdir " .. F.sh(cwd .. "/adir"))
    F.write(cwd .. "/bad.md", "line one\n\255\254 broken\n")
    F.write(cwd .. "/nul.md", "before\0after\n")
  end)

  local function post(extra, opts)
    local argv = { "--root", root, "post", "c", "--from", "bob", "--title", "t" }
    for _, w in ipairs(extra) do
      argv[#argv + 1] = w
    end
    opts = opts or {}
    opts.cwd = cwd
    return ac(argv, opts)
  end

  local function expect_refused(r, text)
    assert.equal(1, r.code, F.describe(r))
    assert.equal("", r.stdout, F.describe(r))
    assert.is_nil(F.error_line(r.stderr), F.describe(r))
    if text then
      assert.equal("agent-chat: " .. text .. "\n", r.stderr)
    end
  end

  it("reports a missing --body-file with Python's text and changes nothing", function()
    local before = F.snapshot(parent)
    expect_refused(post({ "--body-file", "missing.md" }),
      "could not read body file: [Errno 2] No such file or directory: 'missing.md'")
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  it("reports a directory as --body-file with Python's text and changes nothing", function()
    local before = F.snapshot(parent)
    expect_refused(post({ "--body-file", "adir" }), "could not read body file: [Errno 21] Is a directory: 'adir'")
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  -- Python reads the file as strict UTF-8 text and prints its decode error.
  it("refuses a --body-file with invalid UTF-8 with Python's decode error and changes nothing", function()
    local before = F.snapshot(parent)
    expect_refused(post({ "--body-file", "bad.md" }),
      "could not read body file: 'utf-8' codec can't decode byte 0xff in position 9: invalid start byte")
    F.write(cwd .. "/cut.md", "ok \195\169 then cut \226\130")
    expect_refused(post({ "--body-file", "cut.md" }),
      "could not read body file: 'utf-8' codec can't decode bytes in position 15-16: unexpected end of data")
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  -- Python reads stdin with surrogateescape: the error is writing it out,
  -- positions in characters, a run of bad bytes reported whole.
  it("refuses invalid UTF-8 on stdin with Python's encode error, and on --body, and changes nothing", function()
    local before = F.snapshot(parent)
    expect_refused(post({ "--body", "x\255" }))
    expect_refused(post({}, { stdin = "from stdin \254\n" }), "could not read body from stdin: 'utf-8' codec "
      .. "can't encode character '\\udcfe' in position 11: surrogates not allowed")
    expect_refused(post({}, { stdin = "caf\195\169 \255\254 x\n" }), "could not read body from stdin: 'utf-8' "
      .. "codec can't encode characters in position 5-6: surrogates not allowed")
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  -- The Python tool writes NUL bytes of a body as they are.
  it("posts a body with NUL bytes whole, from a file or stdin", function()
    local r = post({ "--body-file", "nul.md" })
    assert.equal(0, r.code, F.describe(r))
    local file = r.stdout:match("^posted #2 %-> c/(%S+)\n$")
    assert.truthy(file, F.describe(r))
    assert.truthy(F.read(root .. "/c/" .. file):find("---\nbefore\0after\n$"), F.describe(r))
    r = post({}, { stdin = "\0nul first\n" })
    assert.equal(0, r.code, F.describe(r))
    file = r.stdout:match("^posted #3 %-> c/(%S+)\n$")
    assert.truthy(F.read(root .. "/c/" .. file):find("---\n\0nul first\n$"), F.describe(r))
  end)

  -- A body file is text read with universal newlines; stdin is not.
  it("reads --body-file with universal newlines and keeps stdin's CR", function()
    F.write(cwd .. "/crlf.md", "one\r\ntwo\rthree\r\n\r\n")
    local r = post({ "--body-file", "crlf.md" })
    assert.equal(0, r.code, F.describe(r))
    local file = r.stdout:match("^posted #2 %-> c/(%S+)\n$")
    assert.truthy(F.read(root .. "/c/" .. file):find("---\none\ntwo\nthree\n$"), F.describe(r))
    r = post({}, { stdin = "one\r\ntwo\n" })
    assert.equal(0, r.code, F.describe(r))
    file = r.stdout:match("^posted #3 %-> c/(%S+)\n$")
    assert.truthy(F.read(root .. "/c/" .. file):find("---\none\r\ntwo\n$"), F.describe(r))
  end)
end)

describe("hand-made files in a channel", function()
  local root, parent, chan, outside

  local LATE = "---\nseq: 9\nfrom: alice\nto: all\nchannel: c\nts: 2026-01-01T00:00:00+00:00\n"
    .. "status: discussion\ntitle: late\n---\nlate body\n"

  before_each(function()
    root, parent = seeded_root()
    chan = root .. "/c"
    outside = parent .. "/outside"
    os.execute("mkdir " .. F.sh(outside))
    F.write(outside .. "/secret.txt", "TOP SECRET\n")
    F.write(outside .. "/cursor.txt", "5")
    F.write(chan .. "/0002-bad-utf8.md", "---\nseq: 2\nfrom: mallory\nto: all\ntitle: bad \255\n---\nbody \254\n")
    F.write(chan .. "/0003-nul.md", "---\nseq: 3\nfrom: mallory\nto: all\ntitle: nul\n---\nbo\0dy\n")
    F.write(chan .. "/0004-nofm.md", "no frontmatter here\n")
    assert(os.execute("head -c 20971520 /dev/zero | tr '\\0' x > " .. F.sh(chan .. "/0005-huge.md")))
    assert(os.execute("ln -s " .. F.sh(outside .. "/secret.txt") .. " " .. F.sh(chan .. "/0006-link.md")))
    assert(os.execute("mkdir " .. F.sh(chan .. "/0007-dir.md")))
    F.write(chan .. "/0007-dir.md/inner.txt", "inner\n")
    F.write(chan .. "/0008-unclosed.md", "---\nfrom: x\ntitle: unclosed\nbody without close\n")
    F.write(chan .. "/0009-alice-late.md", LATE)
    assert(os.execute("mkdir -p " .. F.sh(chan .. "/.cursors")))
    F.write(chan .. "/.cursors/bob.txt", "garbage\n")
    assert(os.execute("ln -s " .. F.sh(outside .. "/cursor.txt") .. " " .. F.sh(chan .. "/.cursors/carol.txt")))
  end)

  -- Cursor files may legitimately change; nothing else may.
  local function not_cursor(path)
    return path:match("^root/c/%.cursors/") ~= nil
  end

  local function check_reader(r, before)
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("first body", 1, true), F.describe(r))
    assert.truthy(r.stdout:find("late body", 1, true), F.describe(r))
    assert.falsy(r.stdout:find("TOP SECRET", 1, true), "followed a symlink out of the root: " .. F.describe(r))
    local seqs = F.seqs(r.stdout)
    for i = 2, #seqs do
      assert.is_true(seqs[i] > seqs[i - 1], "out of order or repeated: " .. F.describe(r))
    end
    assert.same({}, F.diff(before, F.snapshot(parent), not_cursor))
    assert.equal("TOP SECRET\n", F.read(outside .. "/secret.txt"))
    assert.equal("5", F.read(outside .. "/cursor.txt"))
  end

  it("read --peek shows what it can and changes nothing at all", function()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "read", "c", "--as", "bob", "--peek" })
    check_reader(r, before)
    assert.truthy(r.stdout:find("no frontmatter here", 1, true), F.describe(r))
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  it("read treats a garbage cursor as 0 and moves it past everything", function()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "read", "c", "--as", "bob" })
    check_reader(r, before)
    assert.equal(1, F.seqs(r.stdout)[1])
    assert.equal("9", F.read(chan .. "/.cursors/bob.txt"))
    r = ac({ "--root", root, "read", "c", "--as", "bob" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("(no new messages for bob in 'c'; cursor at #9)\n", r.stdout)
  end)

  it("read through a symlinked cursor never writes outside the root", function()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "read", "c", "--as", "carol" })
    assert.equal(0, r.code, F.describe(r))
    assert.same({}, F.diff(before, F.snapshot(parent), not_cursor))
    assert.equal("5", F.read(outside .. "/cursor.txt"))
    assert.equal("TOP SECRET\n", F.read(outside .. "/secret.txt"))
  end)

  it("read --all --peek shows everything readable once, in order", function()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "read", "c", "--as", "alice", "--all", "--peek" })
    check_reader(r, before)
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  it("peek shows what it can and changes nothing", function()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "peek", "c", "-n", "20" })
    check_reader(r, before)
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  it("wait returns the unread messages at once despite the bad files", function()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "wait", "c", "--as", "bob", "--timeout", "10" })
    check_reader(r, before)
    r = ac({ "--root", root, "wait", "c", "--as", "carol", "--timeout", "10" })
    assert.equal(0, r.code, F.describe(r))
    assert.same({}, F.diff(before, F.snapshot(parent), not_cursor))
    assert.equal("5", F.read(outside .. "/cursor.txt"))
  end)

  it("roster counts messages without crashing or changing anything", function()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "roster", "c" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("\nmessages: %d+\n$"), F.describe(r))
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  it("channels lists the channel with its last message", function()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "channels" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("last: #9 alice: late\n", 1, true), F.describe(r))
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)

  -- A message above the 16 MiB display cap is read by its first 64 KiB, so
  -- `channels` still shows it as the last message (docs/format.md 2.1).
  it("channels does not claim there is no last message when the last one is huge", function()
    os.remove(chan .. "/0009-alice-late.md")
    os.rename(chan .. "/0005-huge.md", chan .. "/0010-huge.md")
    local r = ac({ "--root", root, "channels" })
    assert.equal(0, r.code, F.describe(r))
    assert.falsy(r.stdout:find("last: -", 1, true), F.describe(r))
    assert.truthy(r.stdout:find("last: #%d+ "), F.describe(r))
  end)

  -- Like the Python tool's glob("*.md"), every name counts for the seq:
  -- after 0002-link.md (symlink) and 0003-dir.md (directory) the next post
  -- is #4 (docs/format.md 3.3/4: the next seq is above every message name on disk).
  it("post never reuses the seq of a symlink or directory named like a message", function()
    local r2, p2 = F.new_root()
    F.init(r2, "m")
    F.post(r2, "m", "a", "one", "x")
    assert(os.execute("ln -s " .. F.sh(outside .. "/secret.txt") .. " " .. F.sh(r2 .. "/m/0002-link.md")))
    assert(os.execute("mkdir " .. F.sh(r2 .. "/m/0003-dir.md")))
    local before = F.snapshot(p2)
    local r = ac({ "--root", r2, "post", "m", "--from", "a", "--title", "two", "--body", "x" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("posted #4 -> m/0004-a-two.md\n", r.stdout)
    assert.equal("l:" .. outside .. "/secret.txt", F.snapshot(p2)["root/m/0002-link.md"])
    assert.equal(before["root/m/0003-dir.md"], "d")
  end)

  it("post after hand-made files takes the next seq and leaves them alone", function()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "post", "c", "--from", "bob", "--title", "after", "--body", "x" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal("posted #10 -> c/0010-bob-after.md\n", r.stdout)
    local after = F.snapshot(parent)
    assert.same({}, F.diff(before, after, function(p)
      return p == "root/c/0010-bob-after.md" or p == "root/c/.seqhigh"
    end))
  end)
end)

describe("hand-edited _meta.json", function()
  local CASES = { "null", "42", "\"s\"", "{\"members\": \"alice\"}", "{\"members\": [1]}",
                  "{\"topic\": 5}", "{not json", "", "\255\254", "{\"members\": [\"a\0b\"]}" }

  for _, bytes in ipairs(CASES) do
    it("roster refuses " .. F.show(bytes) .. " in one line; channels still lists it", function()
      local root, parent = F.new_root()
      F.init(root, "m")
      F.write(root .. "/m/_meta.json", bytes)
      local before = F.snapshot(parent)
      local r = ac({ "--root", root, "roster", "m" })
      assert.equal(1, r.code, F.describe(r))
      assert.equal("agent-chat: could not read or parse _meta.json for channel 'm'\n", r.stderr)
      r = ac({ "--root", root, "channels" })
      assert.equal(0, r.code, F.describe(r))
      assert.truthy(r.stdout:find("\nm +0  %(open%)\n"), F.describe(r))
      assert.same({}, F.diff(before, F.snapshot(parent)))
    end)
  end

  it("channels survives hand-made channel directories with odd names", function()
    local root, parent = F.new_root()
    F.init(root, "m")
    for _, name in ipairs({ "bad\tname", "\255\254", "sp ace", "new\nline" }) do
      os.execute("mkdir " .. F.sh(root .. "/" .. name))
      F.write(root .. "/" .. name .. "/_meta.json", "{\"channel\": \"x\", \"members\": [], \"topic\": \"\"}")
    end
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "channels" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("sp ace", 1, true), F.describe(r))
    assert.same({}, F.diff(before, F.snapshot(parent)))
  end)
end)

describe("hostile arguments in usage errors", function()
  -- argparse quotes unrecognized arguments verbatim; CR/LF in them must not
  -- split the error (found by tests/fuzz/fuzz_argparse.c).
  local CASES = {
    { { "task", "list", "c", "--bogus", "x\ny" },
      "agent-chat: USAGE: unrecognized arguments: --bogus x\\ny (see 'agent-chat -h')\n" },
    { { "event", "read", "c", "x\r\ny" },
      "agent-chat: USAGE: unrecognized arguments: x\\r\\ny (see 'agent-chat -h')\n" },
    { { "peek", "c", "-n", "1", "a\n---\nseq: 9" },
      "agent-chat: USAGE: unrecognized arguments: a\\n---\\nseq: 9 (see 'agent-chat -h')\n" },
  }
  for _, case in ipairs(CASES) do
    it("prints one line for " .. F.show(table.concat(case[1], " ")), function()
      local root = F.new_root()
      local argv = { "--root", root }
      for _, a in ipairs(case[1]) do
        argv[#argv + 1] = a
      end
      local r = ac(argv)
      assert.equal(2, r.code, F.describe(r))
      assert.equal(case[2], r.stderr)
    end)
  end
end)

-- A message file that is not UTF-8 (the Python tool reads files as strict
-- UTF-8 text): read, wait and peek print a one-line notice with Python's
-- decode error in place of the text, and every reader sees no frontmatter
-- (no sender, no recipient: a broadcast) whenever the bad bytes lie in the
-- 8 KiB chunks Python decodes before the closing fence.
describe("message files that are not UTF-8", function()
  local function fm(seq, from, to, title)
    return "---\nseq: " .. seq .. "\nfrom: " .. from .. "\nto: " .. to .. "\nchannel: c\n"
      .. "ts: 2030-01-01T00:00:00+00:00\nstatus: discussion\ntitle: " .. title .. "\n---\n"
  end

  local function setup_channel()
    local root, parent = F.new_root()
    F.init(root, "c")
    local chan = root .. "/c"
    -- Each file's first bad sequence, and what Python says of it.
    F.write(chan .. "/0001-mallory-ff.md", fm(1, "mallory", "carol", "ff") .. "bad \255\254 bytes\n")
    F.write(chan .. "/0002-mallory-cut.md", fm(2, "mallory", "carol", "cut") .. "cut \226\130")
    F.write(chan .. "/0003-mallory-latin1.md", "caf\233 without frontmatter\n")
    F.write(chan .. "/0004-alice-fine.md", fm(4, "alice", "all", "fine") .. "fine body\n")
    -- The frontmatter closes in the first 8 KiB; the bad byte is in the
    -- third chunk, which Python never decodes to read the frontmatter.
    F.write(chan .. "/0005-mallory-late.md", fm(5, "mallory", "carol", "late") .. string.rep("x", 20000)
      .. "\255\n")
    return root, parent, chan
  end

  local NOTICES = {
    "(could not read message 0001-mallory-ff.md: 'utf-8' codec can't decode byte 0xff in position 113: "
      .. "invalid start byte)",
    "(could not read message 0002-mallory-cut.md: 'utf-8' codec can't decode bytes in position 114-115: "
      .. "unexpected end of data)",
    "(could not read message 0003-mallory-latin1.md: 'utf-8' codec can't decode byte 0xe9 in position 3: "
      .. "invalid continuation byte)",
    "(could not read message 0005-mallory-late.md: 'utf-8' codec can't decode byte 0xff in position 20111: "
      .. "invalid start byte)",
  }
  local RULE = string.rep("=", 70)

  it("read and peek print Python's one-line notice in place of the text", function()
    local root, parent = setup_channel()
    local before = F.snapshot(parent)
    local r = ac({ "--root", root, "peek", "c", "-n", "4" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(RULE .. "\n" .. NOTICES[2] .. "\n\n" .. RULE .. "\n" .. NOTICES[3] .. "\n\n" .. RULE .. "\n"
      .. fm(4, "alice", "all", "fine") .. "fine body\n\n" .. RULE .. "\n" .. NOTICES[4] .. "\n\n", r.stdout)
    assert.equal("", r.stderr)
    assert.same({}, F.diff(before, F.snapshot(parent)))
    -- bob sees the three unreadable ones (broadcasts without a sender) and
    -- alice's; the late one keeps its frontmatter: it is for carol.
    r = ac({ "--root", root, "read", "c", "--as", "bob" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(RULE .. "\n" .. NOTICES[1] .. "\n\n" .. RULE .. "\n" .. NOTICES[2] .. "\n\n" .. RULE .. "\n"
      .. NOTICES[3] .. "\n\n" .. RULE .. "\n" .. fm(4, "alice", "all", "fine") .. "fine body\n\n", r.stdout)
    assert.equal("5", F.read(root .. "/c/.cursors/bob.txt"))
  end)

  it("counts such a message for its own would-be sender, and keeps a frontmatter read before the bad chunk",
    function()
    local root = setup_channel()
    -- mallory is no sender of 1-3 for the Python tool; 5 is hers.
    local r = ac({ "--root", root, "read", "c", "--as", "mallory", "--peek" })
    assert.equal(0, r.code, F.describe(r))
    assert.equal(4, select(2, r.stdout:gsub(RULE, "")), F.describe(r))
    assert.falsy(r.stdout:find("0005", 1, true), F.describe(r))
    r = F.run({ "hook", "prompt" }, { env = { AGENT_CHAT_ROOT = root, AGENT_CHAT_NAME = "mallory" } })
    assert.equal("[agent-chat] mallory has unread peer messages: #c (4). Run /agent-chat to read/reply.\n",
      r.stdout)
    -- carol gets the late one too, shown as a notice (the whole file is read).
    r = ac({ "--root", root, "read", "c", "--as", "carol", "--peek" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find(NOTICES[4] .. "\n", 1, true), F.describe(r))
  end)

  it("a bad byte in the first chunk hides even a frontmatter that closed before it", function()
    local root = F.new_root()
    F.init(root, "c")
    F.write(root .. "/c/0001-mallory-near.md", fm(1, "mallory", "carol", "near") .. string.rep("x", 7000)
      .. "\255\n")
    local r = ac({ "--root", root, "read", "c", "--as", "bob", "--peek" })
    assert.equal(0, r.code, F.describe(r))
    assert.truthy(r.stdout:find("could not read message 0001-mallory-near.md", 1, true), F.describe(r))
    r = ac({ "--root", root, "channels" })
    assert.truthy(r.stdout:find("last: #1 ?: \n", 1, true), F.describe(r))
  end)
end)

-- `to` as the Python tool reads it: "", "all", "[]", "*" are broadcasts;
-- anything else is to.strip("[]") split on ",", entries stripped, blanks
-- dropped, and a list left empty is a broadcast too.
describe("hand-made recipients", function()
  -- { to value, is it for bob, is it for carol }
  local CASES = {
    { ",", true, true },
    { " , , ", true, true },
    { "[ , ]", true, true },
    { "[[]]", true, true },
    { "[", true, true },
    { "[bob]", true, false },
    { "[[bob]]", true, false },
    { "[ bob , ]", true, false },
    { "all,bob", true, false },
    { "*,carol", false, true },
    { "Bob", false, false },
    { "bob carol", false, false },
  }
  it("decide who a message is for, in read and in the hooks", function()
    local root = F.new_root()
    F.init(root, "c")
    for i, case in ipairs(CASES) do
      F.write(string.format("%s/c/%04d-x-m.md", root, i), "---\nseq: " .. i .. "\nfrom: x\nto: " .. case[1]
        .. "\nchannel: c\nts: 2030-01-01T00:00:00+00:00\nstatus: discussion\ntitle: m" .. i .. "\n---\nbody\n")
    end
    for col, who in ipairs({ "bob", "carol" }) do
      local want = {}
      for i, case in ipairs(CASES) do
        if case[col + 1] then
          want[#want + 1] = i
        end
      end
      local r = ac({ "--root", root, "read", "c", "--as", who, "--peek" })
      assert.equal(0, r.code, F.describe(r))
      assert.same(want, F.seqs(r.stdout), who)
      r = F.run({ "hook", "prompt" }, { env = { AGENT_CHAT_ROOT = root, AGENT_CHAT_NAME = who } })
      assert.equal("[agent-chat] " .. who .. " has unread peer messages: #c (" .. #want .. "). "
        .. "Run /agent-chat to read/reply.\n", r.stdout)
    end
  end)
end)
