-- Functional specs for `make install` / `make uninstall` and what they ship
-- besides the binary: the manual page (man/agent-chat.1) and the bash
-- completion (completions/agent-chat.bash). The man page must render without
-- warnings and document every option of every command; the completion is
-- driven as bash drives it (COMP_WORDS/COMP_CWORD, then the function
-- registered with `complete -F`), and its static option table is compared
-- with `agent-chat CMD -h` so neither can drift from the parsers.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

--- The repository as an absolute path (the bash drivers run elsewhere).
local REPO do
  local p = io.popen("cd " .. F.sh(H.repo) .. " && pwd")
  REPO = p:read("l")
  p:close()
end
local MAN = REPO .. "/man/agent-chat.1"
local COMPLETION = REPO .. "/completions/agent-chat.bash"
local PREFIX = "/usr/local"

--- Run a shell command line; returns exit code, stdout, stderr.
local function sh(cmd)
  local dir = F.tmpdir()
  local ok, how, code = os.execute("(" .. cmd .. ") >" .. F.sh(dir .. "/out") .. " 2>" .. F.sh(dir .. "/err"))
  if how == "signal" then
    code = 128 + code
  end
  return ok and 0 or code, F.read(dir .. "/out") or "", F.read(dir .. "/err") or ""
end

local function have(tool)
  return (sh("command -v " .. tool)) == 0
end

--- `make TARGET DESTDIR=... PREFIX=/usr/local`, run from the repository.
--- `-o agent-chat` installs the binary that is there instead of rebuilding
--- it: `make test` has just built it, and the test must not race a rebuild.
local function make(target, destdir)
  return sh("cd " .. F.sh(REPO) .. " && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory"
    .. " -o agent-chat " .. target .. " DESTDIR=" .. F.sh(destdir) .. " PREFIX=" .. PREFIX)
end

local function mode(path)
  local _, out = sh("stat -c %a " .. F.sh(path))
  return out:match("%d+")
end

local function sorted(t)
  table.sort(t)
  return t
end

local function words(s)
  local out = {}
  for w in (s or ""):gmatch("%S+") do
    out[#out + 1] = w
  end
  return out
end

-- The -h output of the binary -------------------------------------------

--- `agent-chat PATH... -h` (wide, so argparse wraps nothing). Returns the
--- text, or nil and a reason (a command whose module has not landed yet).
local function help(path)
  local argv = words(path)
  argv[#argv + 1] = "-h"
  local r = F.run(argv, { env = { COLUMNS = "300" } })
  if r.code ~= 0 then
    return nil, F.describe(r)
  end
  return r.stdout
end

--- The lines of one section ("options:", "commands:", ...) of a help text.
local function section(text, title)
  local out, inside = {}, false
  for _, line in ipairs(F.lines(text)) do
    if line == title then
      inside = true
    elseif inside and line == "" then
      break
    elseif inside then
      out[#out + 1] = line
    end
  end
  return out
end

--- The names listed under a COMMAND placeholder (subparser choices).
local function listed_commands(text, title)
  local out = {}
  for _, line in ipairs(section(text, title)) do
    local name = line:match("^    (%S+)")
    if name then
      out[#out + 1] = name
    end
  end
  return out
end

--- The options of a command: { ["--as"] = {value = true, choices = {..}} }.
local function options(text)
  local out = {}
  for _, line in ipairs(section(text, "options:")) do
    local inv = line:match("^  (%-%S.-)%s%s") or line:match("^  (%-%S.*)$")
    if inv then
      for part in (inv .. ", "):gmatch("(.-), ") do
        local name, meta = part:match("^(%-%-?[%w%-]+)%s*(.*)$")
        local o = { value = meta ~= "" }
        local choices = meta:match("^{(.*)}$")
        if choices then
          o.choices = {}
          for c in choices:gmatch("[^,]+") do
            o.choices[#o.choices + 1] = c
          end
        end
        out[name] = o
      end
    end
  end
  return out
end

--- The choices of positional arguments shown as {a,b} (hook's kind).
local function positional_choices(text)
  for _, line in ipairs(section(text, "positional arguments:")) do
    local choices = line:match("^  {(.-)}")
    if choices then
      local out = {}
      for c in choices:gmatch("[^,]+") do
        out[#out + 1] = c
      end
      return out
    end
  end
  return nil
end

--- Every command path the binary has: "post", "task claim", ...
local function command_paths()
  local top = assert(help(""))
  local paths = {}
  for _, name in ipairs(listed_commands(top, "commands:")) do
    paths[#paths + 1] = name
    if name == "task" or name == "event" or name == "status" or name == "import" or name == "bridge" then
      local text = help(name)
      for _, sub in ipairs(text and listed_commands(text, "positional arguments:") or {}) do
        paths[#paths + 1] = name .. " " .. sub
      end
    end
  end
  return paths, listed_commands(top, "commands:")
end

-- The completion, driven like bash drives it ------------------------------

--- Source the completion in one bash and run each case: a list of words,
--- the last one being the word under the cursor. Returns one sorted list
--- of candidates per case. `env` adds variables; `cwd` is bash's cwd.
local function complete(script, cases, env, cwd)
  local lines = { "set -u", "source " .. F.sh(script) .. " || exit 9", "set +u",
    "complete -p agent-chat | grep -q -- '-F _agent_chat agent-chat' || exit 8",
    "t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE=\"$*\"; "
      .. "COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _agent_chat 2>&1 || echo \"status $?\"; "
      .. "printf '%s\\n' \"${COMPREPLY[@]}\"; echo '@@'; }" }
  for _, case in ipairs(cases) do
    local q = {}
    for i, w in ipairs(case) do
      q[i] = F.sh(w)
    end
    lines[#lines + 1] = "t " .. table.concat(q, " ")
  end
  local dir = F.tmpdir()
  F.write(dir .. "/driver.bash", table.concat(lines, "\n") .. "\n")
  local vars = { "env -u AGENT_CHAT_ROOT LC_ALL=C HOME=" .. F.sh(F.home) }
  for k, v in pairs(env or {}) do
    vars[#vars + 1] = k .. "=" .. F.sh(v)
  end
  local code, out, err = sh((cwd and ("cd " .. F.sh(cwd) .. " && ") or "") .. table.concat(vars, " ")
    .. " bash --norc --noprofile " .. F.sh(dir .. "/driver.bash"))
  assert(code == 0 and err == "", "bash exited " .. code .. ": " .. F.show(err))
  local results, cur = {}, {}
  for _, line in ipairs(F.lines(out)) do
    if line == "@@" then
      results[#results + 1] = sorted(cur)
      cur = {}
    elseif line ~= "" then
      cur[#cur + 1] = line
    end
  end
  assert(#results == #cases, "expected " .. #cases .. " results: " .. F.show(out))
  return results
end

describe("make install", function()
  local dest, code, out, err

  setup(function()
    dest = F.tmpdir() .. "/dest"
    code, out, err = make("install", dest)
  end)

  it("installs the binary, the man page and the completion under PREFIX", function()
    assert.equal(0, code, out .. err)
    local bin = dest .. PREFIX .. "/bin/agent-chat"
    local man = dest .. PREFIX .. "/share/man/man1/agent-chat.1"
    local comp = dest .. PREFIX .. "/share/bash-completion/completions/agent-chat"
    assert.equal("755", mode(bin))
    assert.equal("644", mode(man))
    assert.equal("644", mode(comp))
    assert.equal(F.read(MAN), F.read(man))
    assert.equal(F.read(COMPLETION), F.read(comp))
    local rc, hout = sh(F.sh(bin) .. " -h")
    assert.equal(0, rc)
    assert.truthy(hout:find("usage: agent-chat", 1, true))
  end)

  it("installs a man page that man finds in PREFIX/share/man", function()
    if not have("man") then
      pending("man is not installed")
      return
    end
    local rc, page, perr = sh("MANWIDTH=80 man --manpath=" .. F.sh(dest .. PREFIX .. "/share/man")
      .. " agent-chat | cat")
    assert.equal(0, rc, perr)
    assert.truthy(page:find("agent-chat - peer agent sessions", 1, true), F.show(page))
  end)

  it("installs a completion that works from its installed path", function()
    local root = F.tmpdir()
    F.init(root, "dev")
    local r = complete(dest .. PREFIX .. "/share/bash-completion/completions/agent-chat",
      { { "agent-chat", "po" }, { "agent-chat", "post", "" } }, { AGENT_CHAT_ROOT = root })
    assert.same({ "post" }, r[1])
    assert.same({ "dev" }, r[2])
  end)

  it("is undone by make uninstall", function()
    local rc, uout, uerr = make("uninstall", dest)
    assert.equal(0, rc, uout .. uerr)
    local _, left = sh("find " .. F.sh(dest) .. " -type f")
    assert.equal("", left)
  end)
end)

describe("the man page", function()
  it("renders without warnings (groff -ww, man, mandoc -Tlint)", function()
    local checked = {}
    if have("groff") then
      local rc, gout, gerr = sh("groff -man -Tutf8 -ww -z " .. F.sh(MAN))
      assert.equal(0, rc)
      assert.equal("", gout .. gerr)
      checked[#checked + 1] = "groff"
    end
    if have("man") then
      local rc, page, merr = sh("MANWIDTH=80 man -l " .. F.sh(MAN) .. " | cat")
      assert.equal(0, rc)
      assert.equal("", merr)
      for _, h in ipairs({ "NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "ENVIRONMENT", "FILES",
                           "EXIT STATUS", "EXAMPLES", "SEE ALSO" }) do
        assert.truthy(page:find("\n" .. h .. "\n", 1, true), "no section " .. h)
      end
      checked[#checked + 1] = "man"
    end
    if have("mandoc") then
      local rc, lout, lerr = sh("mandoc -Tlint " .. F.sh(MAN))
      assert.equal("", lout .. lerr)
      assert.equal(0, rc)
      checked[#checked + 1] = "mandoc"
    end
    if #checked == 0 then
      pending("neither groff, man nor mandoc is installed")
    end
  end)

  it("has a section for every command, naming every option -h shows", function()
    local src = F.read(MAN)
    -- Sections: ".SS name" or '.SS "task claim"', text up to the next .SS/.SH.
    local sections, current = {}, nil
    for line in (src .. "\n"):gmatch("([^\n]*)\n") do
      local title = line:match("^%.SS%s+(.*)$")
      if title then
        title = title:gsub('"', ""):gsub("\\%-", "-")
        current = {}
        sections[title] = current
      elseif line:match("^%.SH") then
        current = nil
      elseif current then
        current[#current + 1] = line
      end
    end
    local paths = command_paths()
    local missing = {}
    for _, path in ipairs(paths) do
      local text = help(path)
      if text then
        local body = sections[path]
        if not body then
          missing[#missing + 1] = path .. ": no .SS section"
        else
          local plain = table.concat(body, "\n"):gsub("\\f[BIRP]", ""):gsub("\\%-", "-")
          for name in pairs(options(text)) do
            -- -h/--help is documented once, under OPTIONS.
            local pattern = name:gsub("%-", "%%-") .. "%f[^%w%-]"
            if name ~= "-h" and name ~= "--help" and not plain:find(pattern) then
              missing[#missing + 1] = path .. ": " .. name
            end
          end
        end
      end
    end
    assert.same({}, sorted(missing))
  end)

  it("lists every environment variable the sources read", function()
    -- getenv("NAME") in C and Lua, getenv(env, "NAME") in agentchat.config.
    local _, found = sh("cd " .. F.sh(REPO) .. " && grep -rhoE 'getenv\\(([a-z]+, )?\"[A-Z_]+\"' src lua"
      .. " | sort -u")
    local src = F.read(MAN):gsub("\\%-", "-")
    local missing = {}
    for name in found:gmatch('"([A-Z_]+)"') do
      if not src:find("\n.B " .. name .. "\n", 1, true) then
        missing[#missing + 1] = name
      end
    end
    assert.same({}, missing)
  end)
end)

describe("the bash completion", function()
  local root, results

  -- { words..., expected candidates } (the last word is being completed)
  local CASES = {
    { { "agent-chat", "po" }, { "post" } },
    { { "agent-chat", "re" }, { "read", "receipts", "recover", "recover-pending", "repl", "request", "respond" } },
    { { "agent-chat", "post", "dev", "--wait-for", "" }, { "acked", "read" } },
    { { "agent-chat", "task", "cl" }, { "claim" } },
    { { "agent-chat", "task", "re" }, { "recover", "recover-pending", "release", "renew" } },
    { { "agent-chat", "event", "" }, { "post", "read" } },
    { { "agent-chat", "hook", "s" }, { "session-start", "stop" } },
    { { "agent-chat", "con" }, { "config" } },
    { { "agent-chat", "config", "-" }, { "--help", "--json", "-h" } },
    { { "agent-chat", "post", "" }, { "dev", "ops" } },
    { { "agent-chat", "post", "--from", "bob", "--title", "x", "d" }, { "dev" } },
    { { "agent-chat", "event", "post", "ch", "--type", "" }, { "capability", "status" } },
    { { "agent-chat", "event", "post", "ch", "--type", "=", "s" }, { "status" } },
    { { "agent-chat", "event", "read", "dev", "--type", "c" }, { "capability" } },
    { { "agent-chat", "event", "post", "dev", "--status", "b" }, { "blocked", "busy" } },
    { { "agent-chat", "event", "post", "dev", "--primitives", "messages,wa" }, { "messages,wait" } },
    { { "agent-chat", "post", "dev", "--type", "shutdown_" }, { "shutdown_request", "shutdown_response" } },
    { { "agent-chat", "post", "dev", "--role", "" }, { "child", "follow_up", "parent", "steer" } },
    { { "agent-chat", "request", "dev", "--type", "" }, { "plan_approval_request", "shutdown_request" } },
    { { "agent-chat", "respond", "dev", "--a" }, { "--approve" } },
    { { "agent-chat", "task", "update", "dev", "build", "--status", "" },
      { "blocked", "cancelled", "done", "in_progress", "open" } },
    { { "agent-chat", "recover-pending", "dev", "--resolve-publication", "" }, { "published", "rollback" } },
    { { "agent-chat", "post", "dev", "--st" }, { "--status" } },
    { { "agent-chat", "read", "dev", "--" },
      { "--all", "--as", "--help", "--kind", "--max-bytes", "--max-messages", "--peek" } },
    { { "agent-chat", "peek", "-" }, { "--help", "--kind", "-h", "-n" } },
    { { "agent-chat", "wait", "dev", "--kind", "" }, { "audit", "event", "message" } },
    { { "agent-chat", "inbox", "--as", "bob", "--kind", "=", "m" }, { "message" } },
    { { "agent-chat", "inbox", "--channels", "d" }, { "dev" } },
    { { "agent-chat", "inbox", "--channels", "dev," }, { "dev,ops" } },
    { { "agent-chat", "--" }, { "--help", "--root", "--store", "--version" } },
    { { "agent-chat", "task", "claim", "dev", "" }, { "build", "design" } },
    { { "agent-chat", "task", "update", "dev", "build", "--depends-on", "design,b" }, { "design,build" } },
    { { "agent-chat", "read", "dev", "--as", "" }, { "alice", "bob", "carol" } },
    { { "agent-chat", "post", "dev", "--to", "alice," }, { "alice,all", "alice,bob", "alice,carol" } },
    { { "agent-chat", "claim", "dev", "" }, { "task-7.md" } },
    { { "agent-chat", "lock", "dev", "" }, { "src/" } },
    { { "agent-chat", "check", "dev", "src/", "src/" }, { "src/a.c" } },
    { { "agent-chat", "post", "dev", "--body-file", "bo" }, { "body.d", "body.md" } },
    { { "agent-chat", "watch", "dev", "--script", "br" }, { "brief.lua" } },
    { { "agent-chat", "watch", "dev", "--o" }, { "--on-error", "--once" } },
    { { "agent-chat", "watch", "dev", "--on-error", "" }, { "dead-letter", "skip", "stop" } },
    { { "agent-chat", "watch", "dev", "--dead-letter", "o" }, { "ops" } },
    { { "agent-chat", "state", "dev", "--template", "" }, { "body.d", "brief.lua" } },
    { { "agent-chat", "run", "br" }, { "brief.lua" } },
    { { "agent-chat", "run", "brief.lua", "-" }, {} },
    { { "agent-chat", "channels", "" }, {} },
    { { "agent-chat", "init", "" }, {} },
    { { "agent-chat", "frobnicate", "" }, {} },
    { { "agent-chat", "import", "" }, { "bus", "claude-team", "folder", "team" } },
    { { "agent-chat", "import", "claude-team", "ref" }, { "refactor-squad" } },
    { { "agent-chat", "import", "claude-team", "b" }, { "body.d" } },
    { { "agent-chat", "bridge", "" }, { "claude-team" } },
    { { "agent-chat", "bridge", "claude-team", "ref" }, { "refactor-squad" } },
    { { "agent-chat", "bridge", "claude-team", "x", "--channel", "o" }, { "ops" } },
    { { "agent-chat", "bridge", "claude-team", "x", "--" }, { "--as", "--channel", "--help", "--once" } },
    { { "agent-chat", "import", "team", "--into", "d" }, { "dev" } },
    { { "agent-chat", "import", "bus", "x", "--" }, { "--dry-run", "--help", "--into", "--strict" } },
    { { "agent-chat", "import", "team", "bo" }, { "body.d" } },
  }

  setup(function()
    root = F.tmpdir() .. "/root"
    F.init(root, "dev", "--members", "alice,bob")
    F.init(root, "ops")
    os.execute("mkdir -p " .. F.sh(root .. "/notachannel") .. " " .. F.sh(root .. "/dev/src"))
    F.write(root .. "/dev/src/a.c", "")
    F.write(root .. "/dev/task-7.md", "")
    for _, id in ipairs({ "build", "design" }) do
      assert.equal(0, F.run({ "--root", root, "task", "create", "dev", id, "--from", "alice",
                              "--title", id }).code)
    end
    -- the agents: the members alice and bob, and the cursors of carol, of
    -- alice again (listed once) and of Zed (a hashed file: not a name)
    for _, who in ipairs({ "carol", "alice", "Zed" }) do
      assert.equal(0, F.run({ "--root", root, "read", "dev", "--as", who }).code)
    end
    local cwd = F.tmpdir()
    F.write(cwd .. "/body.md", "hi")
    F.write(cwd .. "/brief.lua", "")
    os.execute("mkdir " .. F.sh(cwd .. "/body.d"))
    local cases = {}
    for i, c in ipairs(CASES) do
      cases[i] = c[1]
    end
    results = complete(COMPLETION, cases, { AGENT_CHAT_ROOT = root,
      CLAUDE_CONFIG_DIR = F.absolute(H.repo .. "/tests/fixtures/claude-teams/home") }, cwd)
  end)

  for i, c in ipairs(CASES) do
    it("completes '" .. table.concat(c[1], " ") .. "<TAB>'", function()
      assert.same(sorted(c[2]), results[i])
    end)
  end

  it("takes the root from --root before $AGENT_CHAT_ROOT", function()
    local other = F.tmpdir()
    F.init(other, "zeta")
    local r = complete(COMPLETION, {
      { "agent-chat", "--root", other, "post", "" },
      { "agent-chat", "--root=" .. other, "read", "" },
      { "agent-chat", "read", "" },
    }, { AGENT_CHAT_ROOT = root })
    assert.same({ "zeta" }, r[1])
    assert.same({ "zeta" }, r[2])
    assert.same({ "dev", "ops" }, r[3])
  end)

  it("takes the root from the user config's root next (asking the program on the line)", function()
    local cfg, croot = F.tmpdir(), F.tmpdir()
    F.init(croot, "fromconfig")
    os.execute("mkdir -p " .. F.sh(cfg .. "/agent-chat"))
    F.write(cfg .. "/agent-chat/config.yaml", "root: " .. croot .. "\n")
    local r = complete(COMPLETION, {
      { F.bin, "post", "" },
      { F.bin, "--root", root, "post", "" },
    }, { XDG_CONFIG_HOME = cfg })
    assert.same({ "fromconfig" }, r[1])
    assert.same({ "dev", "ops" }, r[2])
    r = complete(COMPLETION, { { F.bin, "post", "" } }, { XDG_CONFIG_HOME = cfg, AGENT_CHAT_ROOT = root })
    assert.same({ "dev", "ops" }, r[1])
  end)

  it("falls back to ~/agent-chat", function()
    local home = F.tmpdir()
    F.init(home .. "/agent-chat", "homechan")
    local r = complete(COMPLETION, { { "agent-chat", "roster", "" } }, { HOME = home })
    assert.same({ "homechan" }, r[1])
  end)
end)

describe("the completion's option table", function()
  local paths, commands = command_paths()
  local spec

  setup(function()
    -- Ask the completion for its whole table in one bash run.
    local lines = { "source " .. F.sh(COMPLETION),
      "echo \"commands $_agent_chat_commands\"",
      "echo \"task $_agent_chat_task_commands\"",
      "echo \"event $_agent_chat_event_commands\"",
      "echo \"status $_agent_chat_status_commands\"",
      "echo \"import $_agent_chat_import_commands\"",
      "echo \"bridge $_agent_chat_bridge_commands\"",
      "echo \"hook $_agent_chat_hook_kinds\"" }
    for _, path in ipairs(paths) do
      lines[#lines + 1] = string.format("if _agent_chat_spec %s; then echo \"valued %s|$_agent_chat_valued\";"
        .. " echo \"flags %s|$_agent_chat_flags\"; for o in $_agent_chat_valued; do"
        .. " echo \"choices %s|$o|$(_agent_chat_choices %s \"$o\")\"; done; fi",
        F.sh(path), path, path, path, F.sh(path))
    end
    local dir = F.tmpdir()
    F.write(dir .. "/table.bash", table.concat(lines, "\n") .. "\n")
    local code, out, err = sh("bash --norc --noprofile " .. F.sh(dir .. "/table.bash"))
    assert(code == 0 and err == "", err)
    spec = { valued = {}, flags = {}, choices = {} }
    for _, line in ipairs(F.lines(out)) do
      local kind, rest = line:match("^(%S+) (.*)$")
      if kind == "valued" or kind == "flags" then
        local path, list = rest:match("^(.-)|(.*)$")
        spec[kind][path] = words(list)
      elseif kind == "choices" then
        local path, opt, list = rest:match("^(.-)|(.-)|(.*)$")
        spec.choices[path .. " " .. opt] = words(list)
      else
        spec[kind] = words(rest)
      end
    end
  end)

  it("lists the commands of agent-chat -h", function()
    assert.same(commands, spec.commands)
  end)

  it("lists the subcommands of task -h, event -h, status -h, import -h and bridge -h", function()
    for _, family in ipairs({ "task", "event", "status", "import", "bridge" }) do
      local subs = {}
      for _, path in ipairs(paths) do
        local sub = path:match("^" .. family .. " (.*)$")
        if sub then
          subs[#subs + 1] = sub
        end
      end
      assert.same(subs, spec[family])
    end
  end)

  for _, path in ipairs(paths) do
    it("has the options of 'agent-chat " .. path .. " -h'", function()
      local text, why = help(path)
      if not text then
        pending("'" .. path .. " -h' does not work yet: " .. why)
        return
      end
      assert.is_not_nil(spec.valued[path], "no entry for '" .. path .. "' in _agent_chat_spec")
      local want_valued, want_flags = {}, {}
      for name, o in pairs(options(text)) do
        if o.value then
          want_valued[#want_valued + 1] = name
          if o.choices then
            assert.same(sorted(o.choices), sorted(spec.choices[path .. " " .. name]),
              "choices of " .. path .. " " .. name)
          end
        else
          want_flags[#want_flags + 1] = name
        end
      end
      assert.same(sorted(want_valued), sorted(spec.valued[path]))
      assert.same(sorted(want_flags), sorted(spec.flags[path]))
      local kinds = positional_choices(text)
      if kinds and path == "hook" then
        assert.same(kinds, spec.hook)
      end
    end)
  end

  it("has the global options of agent-chat -h", function()
    local text = assert(help(""))
    local want = {}
    for name in pairs(options(text)) do
      want[#want + 1] = name
    end
    local r = complete(COMPLETION, { { "agent-chat", "-" } })
    assert.same(sorted(want), r[1])
  end)
end)
