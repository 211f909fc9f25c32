-- `make check-layers` (scripts/check-layers): the layers of
-- docs/architecture.md hold in the tree (the C below and above the store
-- interface, and the CLI on the Lua API scripts use), and the check has
-- teeth: each kind of violation planted in a copy of the tree makes it fail
-- with a line that names the file, the line and the rule.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local SCRIPT = H.repo .. "/scripts/check-layers"

local function check(root)
  local dir = H.tmpdir()
  local ok, how, code = os.execute("lua5.4 " .. F.sh(SCRIPT) .. " --root " .. F.sh(root)
    .. " >" .. F.sh(dir .. "/out") .. " 2>" .. F.sh(dir .. "/err"))
  return { code = ok and 0 or (how == "signal" and 128 + code or code), stdout = H.read(dir .. "/out"),
           stderr = H.read(dir .. "/err") }
end

--- A copy of the tree's C (src/ and include/) and Lua commands to plant
--- violations in.
local function tree_copy()
  local dir = H.tmpdir() .. "/tree"
  assert(os.execute("mkdir -p " .. F.sh(dir .. "/lua/agentchat") .. " && cp -a " .. F.sh(H.repo .. "/src") .. " "
    .. F.sh(H.repo .. "/include") .. " " .. F.sh(dir) .. " && cp -a " .. F.sh(H.repo .. "/lua/agentchat/commands")
    .. " " .. F.sh(dir .. "/lua/agentchat/")))
  return dir
end

local function plant(root, path, text)
  assert(os.execute("mkdir -p " .. F.sh((root .. "/" .. path):match("^(.*)/[^/]*$"))))
  H.write(root .. "/" .. path, text)
end

describe("check-layers", function()
  it("passes on the tree", function()
    local r = check(H.repo)
    assert.equal(0, r.code, r.stderr)
    assert.truthy(r.stdout:find("layers kept", 1, true), r.stdout)
  end)

  for _, case in ipairs({
    { "a file-system header above src/fs/", "src/planted.c", '#include "fs/fsutil.h"\nint x;\n',
      "src/planted.c:1: fs-header" },
    { "the same through the public prefix", "src/planted.c", '\n#include "agentchat/seq.h"\n',
      "src/planted.c:2: fs-header" },
    { "a directory descriptor", "src/planted.c", "int f(int chfd);\n",
      "src/planted.c:1: dirfd: chfd" },
    { "an *at() call", "src/planted.c", "int f(void) {\n  return openat(3, \"x\", 0);\n}\n",
      "src/planted.c:2: dirfd: openat()" },
    { "a mutating system call", "src/planted.c", "void f(void) {\n\n  unlink(\"x\");\n}\n",
      "src/planted.c:3: syscall: unlink()" },
    { "an open for writing", "src/planted.c", "int f(void) { return open(\"x\", O_WRONLY | O_CREAT, 0644); }\n",
      "src/planted.c:1: syscall: open() for writing" },
    { "lua.h outside the bindings", "src/planted.c", "#include <lua.h>\n",
      "src/planted.c:1: lua: includes <lua.h>" },
    { "lauxlib.h in a public header", "include/agentchat/planted.h", "#include <lauxlib.h>\n",
      "include/agentchat/planted.h:1: lua" },
    { "curl outside src/etcd/", "src/planted.c", "#include <curl/curl.h>\n",
      "src/planted.c:1: curl" },
  }) do
    it("fails on " .. case[1], function()
      local root = tree_copy()
      plant(root, case[2], case[3])
      local r = check(root)
      assert.equal(1, r.code, r.stdout .. r.stderr)
      assert.truthy(r.stderr:find(case[4], 1, true), r.stderr)
      assert.equal(1, select(2, r.stderr:gsub("\n  ", "")), "exactly one violation: " .. r.stderr)
    end)
  end

  it("ignores comments and string literals, and allows what src/fs/ and the bindings do", function()
    local root = tree_copy()
    plant(root, "src/planted.c", table.concat({
      "/* unlink(x), openat(), chfd and #include <lua.h> in prose */",
      "// rename(a, b)",
      "static const char *s = \"unlink(x) chfd\";",
    }, "\n") .. "\n")
    plant(root, "src/fs/planted.c", "#include \"fsutil.h\"\nvoid f(int dirfd) { unlinkat(dirfd, \"x\", 0); }\n")
    plant(root, "src/l_planted.c", "#include <lua.h>\n#include <lauxlib.h>\n")
    local r = check(root)
    assert.equal(0, r.code, r.stderr)
  end)

  for _, case in ipairs({
    { "a command using a private binding", 'local t = require "agentchat._tasks"\n', "x.lua:1: cli-api" },
    { "a command using a raw channel handle", "-- ch:handle() in prose is fine\nlocal h = ch:handle()\n",
      "x.lua:2: cli-api" },
  }) do
    it("fails on " .. case[1], function()
      local root = tree_copy()
      plant(root, "lua/agentchat/commands/x.lua", case[2])
      local r = check(root)
      assert.equal(1, r.code, r.stdout .. r.stderr)
      assert.truthy(r.stderr:find(case[3], 1, true), r.stderr)
      assert.equal(1, select(2, r.stderr:gsub("\n  ", "")), "exactly one violation: " .. r.stderr)
    end)
  end

  it("a binding may not reach below the store either", function()
    local root = tree_copy()
    plant(root, "src/l_planted.c", "#include <lua.h>\n#include \"fs/mutex.h\"\n")
    local r = check(root)
    assert.equal(1, r.code, r.stderr)
    assert.truthy(r.stderr:find("src/l_planted.c:2: fs-header", 1, true), r.stderr)
  end)
end)
