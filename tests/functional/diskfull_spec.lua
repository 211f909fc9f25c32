-- Disk full, read-only file system and permission errors (issue 8), on a
-- real small file system: a 256 KiB tmpfs mounted for this spec (CI runs as
-- root). Every mutating command (post, read (it moves a cursor), task
-- create/claim/done, lock, unlock, compact, event post, init) must
--
--   * on a full disk: fail with one coded error line naming the errno
--     ("No space left on device") and a non-zero exit, leave no file that
--     was not there (the tree is listed and compared; only the empty
--     .cursors/ directory a read makes may appear), and succeed once the
--     space is freed (then a post and a read work, and fsck is clean once
--     the binary has it);
--   * with 0, 1, 2, ... pages free (a disk filling up in the middle of a
--     command, until the command succeeds): succeed completely, or fail
--     leaving the state before it (crashsupport's comparison of the visible
--     files), after the documented recovery of a journal where one is left;
--   * on a read-only remount: fail the same way ("Read-only file system")
--     and change nothing at all, while the reading commands (peek, read
--     --peek, task list/show, check, state, channels, roster, event read,
--     and fsck once the binary has it) still work; writable again,
--     everything works;
--   * run as another user (setpriv --reuid=65534 --regid=65534
--     --clear-groups, the channel being root's): fail with "Permission
--     denied" and change nothing; the reading commands work.
--
-- Without root, or where mount is not permitted, every test says it is
-- pending (a SKIP line in the TAP output) instead of passing. The teardown
-- unmounts whatever happened.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"
local T = require "tasksupport"
local C = require "crashsupport"

local SIZE = "256k"
local PAGE = 4096

local function sh(cmd)
  return os.execute(cmd) == true
end

local function capture(cmd)
  local p = io.popen(cmd)
  local s = p:read("a")
  p:close()
  return (s:gsub("%s+$", ""))
end

-- ------------------------------------------------------------ the mount

local M = { mounted = false }

local function try_mount()
  if capture("id -u") ~= "0" then
    return "not running as root: mount needs it (CI runs the suite as root)"
  end
  if not sh("command -v setpriv >/dev/null 2>&1") then
    return "setpriv is not installed"
  end
  M.base = capture("mktemp -d /tmp/ac-diskfull.XXXXXX")
  sh("chmod 755 " .. F.sh(M.base))
  M.mnt = M.base .. "/mnt"
  sh("mkdir " .. F.sh(M.mnt))
  if not sh("mount -t tmpfs -o size=" .. SIZE .. ",mode=0755 ac-diskfull " .. F.sh(M.mnt) .. " 2>/dev/null") then
    return "mount -t tmpfs is not permitted here"
  end
  M.mounted = true
  -- A binary and a HOME the unprivileged user can reach.
  M.bin = M.base .. "/agent-chat"
  assert(sh("cp " .. F.sh(F.bin) .. " " .. F.sh(M.bin) .. " && chmod 755 " .. F.sh(M.bin)))
  M.home = M.base .. "/home"
  assert(sh("mkdir -m 777 " .. F.sh(M.home)))
  M.root = M.mnt .. "/root"
  return nil
end

local function unmount()
  if M.mounted then
    sh("mount -o remount,rw " .. F.sh(M.mnt) .. " 2>/dev/null")
    if not sh("umount " .. F.sh(M.mnt) .. " 2>/dev/null") then
      sh("umount -l " .. F.sh(M.mnt) .. " 2>/dev/null")
    end
    M.mounted = false
  end
  if M.base then
    sh("rm -rf " .. F.sh(M.base))
    M.base = nil
  end
end

-- ------------------------------------------------------------ running

--- Run the binary on the mounted root; opts.nobody drops to uid/gid 65534.
local function run(argv, opts)
  opts = opts or {}
  local words = { F.sh(M.bin), "--root", F.sh(opts.root or M.root) }
  for _, w in ipairs(argv) do
    words[#words + 1] = F.sh(w)
  end
  local out, err = M.base .. "/out", M.base .. "/err"
  local cmd = string.format("env %s %s%s </dev/null >%s 2>%s",
    T.env({ HOME = M.home, XDG_CONFIG_HOME = false, AGENT_CHAT_FAULT_LOG_SYS = false }),
    opts.nobody and "setpriv --reuid=65534 --regid=65534 --clear-groups " or "",
    table.concat(words, " "), F.sh(out), F.sh(err))
  local ok, how, code = os.execute(cmd)
  if how == "signal" then
    code = 128 + code
  end
  local full = {}
  for i, w in ipairs(argv) do
    full[i] = w
  end
  return { code = ok and 0 or code, stdout = F.read(out), stderr = F.read(err), argv = full }
end

local function tree()
  return capture("cd " .. F.sh(M.mnt) .. " && find . -printf '%y %s %p\\n' | sort")
end

-- The commands that write, in an order in which each succeeds on the
-- channel SETUP makes (after the ones before it).
local MUTATING = {
  { "post", "c", "--from", "alice", "--title", "hello", "--body", "world" },
  { "read", "c", "--as", "zed" },
  { "task", "create", "c", "t9", "--from", "lead", "--title", "New task" },
  { "task", "claim", "c", "t1", "--as", "alice" },
  { "task", "done", "c", "t2", "--as", "bob" },
  { "lock", "c", "src/a.c", "--as", "alice" },
  { "unlock", "c", "src/b.c", "--as", "bob" },
  { "compact", "c" },
  { "event", "post", "c", "--from", "alice", "--type", "status", "--harness", "test", "--status", "busy" },
  { "init", "c2" },
}

local READERS = {
  { "peek", "c" },
  { "read", "c", "--as", "zed", "--peek" },
  { "task", "list", "c" },
  { "task", "show", "c", "t1" },
  { "check", "c", "src" },
  { "state", "c" },
  { "channels" },
  { "roster", "c" },
  { "event", "read", "c" },
}

local SETUP = {
  { "init", "c" },
  { "post", "c", "--from", "lead", "--title", "kickoff", "--body", "the plan" },
  { "task", "create", "c", "t1", "--from", "lead", "--title", "Free task" },
  { "task", "create", "c", "t2", "--from", "lead", "--title", "Bob's task" },
  { "task", "claim", "c", "t2", "--as", "bob" },
  { "lock", "c", "src/b.c", "--as", "bob" },
}

-- The channel, built once outside the mount (copied in by each test).
local template
local function fresh_channel()
  sh("mount -o remount,rw " .. F.sh(M.mnt) .. " 2>/dev/null")   -- after a failed read-only test
  if not template then
    template = T.scratch() .. "/root"
    for _, argv in ipairs(SETUP) do
      local r = C.run(template, argv)
      assert(r.code == 0, F.describe(r))
    end
  end
  assert(sh("rm -rf " .. F.sh(M.mnt) .. "/* && cp -a " .. F.sh(template) .. " " .. F.sh(M.root)))
end

--- Fill the file system, then free `pages` pages of it.
local function fill(pages)
  sh("dd if=/dev/zero of=" .. F.sh(M.mnt .. "/filler") .. " bs=4k 2>/dev/null")
  -- really full: not one more page
  assert(not sh("dd if=/dev/zero of=" .. F.sh(M.mnt .. "/probe") .. " bs=4k count=1 2>/dev/null"),
    "the tmpfs did not fill up")
  sh("rm -f " .. F.sh(M.mnt .. "/probe"))
  if pages and pages > 0 then
    assert(sh("truncate -s -" .. (pages * PAGE) .. " " .. F.sh(M.mnt .. "/filler")))
  end
end

local function free()
  sh("rm -f " .. F.sh(M.mnt .. "/filler"))
end

local function label(argv)
  return table.concat(argv, " ")
end

--- Problems of a failed run: exit, the one coded line, the errno text.
local function check_failure(r, errtext, probs)
  local where = label(r.argv)
  if r.code == 0 then
    probs[#probs + 1] = where .. ": succeeded: " .. F.describe(r)
  elseif r.code >= 125 or F.crashed(r.stderr) then
    probs[#probs + 1] = where .. ": not a clean error: " .. F.describe(r)
  elseif F.error_line(r.stderr) then
    probs[#probs + 1] = where .. ": " .. F.error_line(r.stderr)
  elseif not r.stderr:match("^agent%-chat: [A-Z][A-Z_]+: .") then
    probs[#probs + 1] = where .. ": the error has no code: " .. F.show(r.stderr)
  elseif not r.stderr:find(errtext, 1, true) then
    probs[#probs + 1] = where .. ": the error does not say " .. errtext .. ": " .. F.show(r.stderr)
  end
end

local function check_readers(probs, opts, what)
  local readers = { table.unpack(READERS) }
  if C.fsck_available() then
    readers[#readers + 1] = { "fsck" }   -- read-only too, and the failed commands left nothing to find
  end
  for _, argv in ipairs(readers) do
    local r = run(argv, opts)
    if r.code ~= 0 or r.stderr ~= "" then
      probs[#probs + 1] = what .. ": reading command " .. F.describe(r)
    end
  end
  return #readers
end

--- After the space is back: every mutating command works, then a post and
--- a read, and fsck is clean.
local function check_works_again(probs, what)
  for _, argv in ipairs(MUTATING) do
    local r = run(argv)
    if r.code ~= 0 then
      probs[#probs + 1] = what .. ", then freed: " .. F.describe(r)
    end
  end
  local p = run({ "post", "c", "--from", "zed", "--title", "works again", "--body", "ok" })
  local r = run({ "read", "c", "--as", "zed-again" })
  if p.code ~= 0 or r.code ~= 0 or not r.stdout:find("\ntitle: works again\n", 1, true) then
    probs[#probs + 1] = what .. ", then freed: post/read: " .. F.describe(p) .. " / " .. F.describe(r)
  end
  if C.fsck_available() then
    local x = run({ "fsck" })
    if x.code ~= 0 then
      probs[#probs + 1] = what .. ", then freed: fsck: " .. F.describe(x)
    end
  end
end

local summary = {}

describe("on a " .. SIZE .. " tmpfs", function()
  local why_not

  setup(function()
    why_not = try_mount()
  end)

  teardown(function()
    unmount()
    if #summary > 0 then
      io.stderr:write("# disk full / read-only / permissions:\n#   " .. table.concat(summary, "\n#   ") .. "\n")
    end
  end)

  it("disk full: every mutating command fails cleanly, leaves no file, and works once space is freed", function()
    if why_not then
      pending(why_not)
      return
    end
    fresh_channel()
    fill(0)
    local before = F.snapshot(M.mnt)
    local probs = {}
    for _, argv in ipairs(MUTATING) do
      local r = run(argv)
      check_failure(r, "No space left on device", probs)
      local now = F.snapshot(M.mnt)
      for _, d in ipairs(F.diff(before, now)) do
        -- a read may leave the empty .cursors/ it made before its write failed
        if not (d == "added root/c/.cursors" and now["root/c/.cursors"] == "d") then
          probs[#probs + 1] = label(argv) .. ": " .. d .. "\n" .. tree()
        end
      end
      before = now
    end
    local nreaders = check_readers(probs, nil, "disk full")
    free()
    check_works_again(probs, "disk full")
    summary[#summary + 1] = string.format("disk full: %d mutating commands failed cleanly, %d readers worked",
      #MUTATING, nreaders)
    assert.equal(0, #probs, C.shown(probs))
  end)

  -- The commands of crashsupport's walk, with a disk that fills up part way.
  it("filling up mid-command: with 0, 1, 2, ... pages free, done completely or not at all", function()
    if why_not then
      pending(why_not)
      return
    end
    local probs, lines = {}, {}
    local cmds = {
      { argv = MUTATING[1] },
      { argv = MUTATING[3] },
      { argv = MUTATING[4], recover = C.LEASE },
      { argv = MUTATING[5], recover = C.LEASE },
      { argv = MUTATING[6], recover = C.LOCKS },
      { argv = MUTATING[7], recover = C.LOCKS },
      { argv = MUTATING[8], commits = 2 },
      { argv = MUTATING[9] },
    }
    for _, cmd in ipairs(cmds) do
      -- the states before and after a clean run, off the mount
      fresh_channel()
      local ref = T.scratch() .. "/root"
      assert(sh("cp -a " .. F.sh(M.root) .. " " .. F.sh(ref)))
      local before = C.state(ref .. "/c")
      local r0 = C.run(ref, cmd.argv)
      assert(r0.code == 0, F.describe(r0))
      local after = C.state(ref .. "/c")
      local fails, recovered, pages = 0, 0, 0
      while true do
        fresh_channel()
        fill(pages)
        local r = run(cmd.argv)
        local where = string.format("%s with %d page(s) free", label(cmd.argv), pages)
        if r.code ~= 0 then
          fails = fails + 1
          check_failure(r, "No space left on device", probs)
        end
        free()
        local rec = cmd.recover
        if rec and (not rec.when or sh("test -e " .. F.sh(M.root .. "/c/" .. rec.when))) then
          local x = run(rec.argv)
          recovered = recovered + (rec.when and 1 or 0)
          if x.code ~= 0 then
            probs[#probs + 1] = where .. ": recovery: " .. F.describe(x)
          end
        end
        local st = C.state(M.root .. "/c")
        local is_before, is_after = true, true
        for k, v in pairs(st.files) do
          is_before = is_before and before.files[k] == v
          is_after = is_after and after.files[k] == v
        end
        for k in pairs(before.files) do
          is_before = is_before and st.files[k] ~= nil
        end
        for k in pairs(after.files) do
          is_after = is_after and st.files[k] ~= nil
        end
        -- compact: state.md may be the new one while its message is not
        -- posted (crashsupport's documented middle stage)
        local middle = false
        if cmd.commits and not is_before and not is_after then
          middle = true
          for k, v in pairs(st.files) do
            middle = middle and (k == "state.md" and v == after.files[k] or k ~= "state.md" and before.files[k] == v)
          end
          for k in pairs(before.files) do
            middle = middle and st.files[k] ~= nil
          end
        end
        if r.code == 0 and not is_after then
          probs[#probs + 1] = where .. ": succeeded but the change is not all there"
        elseif not (is_before or is_after or middle) then
          probs[#probs + 1] = where .. ": neither before nor after: " .. tree()
        end
        for _, p in ipairs(st.unknown) do
          probs[#probs + 1] = where .. ": unknown file left: " .. p
        end
        for p, kind in pairs(st.hidden) do
          if kind ~= "state" then
            probs[#probs + 1] = where .. ": " .. kind .. " left: " .. p
          end
        end
        if r.code == 0 or pages >= 40 then
          break
        end
        pages = pages + 1
      end
      lines[#lines + 1] = string.format("%s: failed with 0..%d pages free (%d runs, %d journals recovered),"
        .. " succeeded with %d", label(cmd.argv), pages - 1, fails, recovered, pages)
      if pages >= 40 then
        probs[#probs + 1] = label(cmd.argv) .. ": still failing with 40 pages free"
      end
    end
    for _, l in ipairs(lines) do
      summary[#summary + 1] = "filling up: " .. l
    end
    assert.equal(0, #probs, C.shown(probs))
  end)

  it("read-only: every mutating command fails cleanly and changes nothing; readers work; rw works", function()
    if why_not then
      pending(why_not)
      return
    end
    fresh_channel()
    assert(sh("mount -o remount,ro " .. F.sh(M.mnt)))
    local before = F.snapshot(M.mnt)
    local probs = {}
    for _, argv in ipairs(MUTATING) do
      local r = run(argv)
      check_failure(r, "Read-only file system", probs)
    end
    local d = F.diff(before, F.snapshot(M.mnt))
    if #d > 0 then
      probs[#probs + 1] = "the read-only tree changed (?): " .. table.concat(d, "; ")
    end
    local nreaders = check_readers(probs, nil, "read-only")
    assert(sh("mount -o remount,rw " .. F.sh(M.mnt)))
    check_works_again(probs, "read-only")
    summary[#summary + 1] = string.format("read-only: %d mutating commands failed cleanly, %d readers worked",
      #MUTATING, nreaders)
    assert.equal(0, #probs, C.shown(probs))
  end)

  it("permission denied: another user's writes fail cleanly and change nothing; its reads work", function()
    if why_not then
      pending(why_not)
      return
    end
    fresh_channel()
    local who = run({ "channels" }, { nobody = true })
    assert(who.code == 0, "the unprivileged user cannot run the binary: " .. F.describe(who))
    local before = F.snapshot(M.mnt)
    local probs = {}
    for _, argv in ipairs(MUTATING) do
      local r = run(argv, { nobody = true })
      check_failure(r, "Permission denied", probs)
    end
    local d = F.diff(before, F.snapshot(M.mnt))
    if #d > 0 then
      probs[#probs + 1] = "another user changed the tree: " .. table.concat(d, "; ") .. "\n" .. tree()
    end
    local nreaders = check_readers(probs, { nobody = true }, "as uid 65534")
    check_works_again(probs, "as uid 65534 (then as the owner)")
    summary[#summary + 1] = string.format("permissions: %d mutating commands failed cleanly as uid 65534,"
      .. " %d readers worked", #MUTATING, nreaders)
    assert.equal(0, #probs, C.shown(probs))
  end)
end)
