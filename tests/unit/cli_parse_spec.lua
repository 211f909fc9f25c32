-- cli.parse, the command line's parse without the whole grammar for the
-- usual `[--root R] COMMAND ARGS...`, must give exactly what the whole
-- parser (cli.build_parser():parse) gives: the same args, or the same
-- error or help text, for every command and for argv shapes around the
-- edges of its shortcut (abbreviations, "--", "--=", values starting with
-- '-', unknown options, extra arguments, -h).
local cli = require "agentchat.cli"

-- Functions (the handler) compare by kind: some are closures made when
-- the command's parser is built.
local function outcome(args, err)
  if args then
    local shown = {}
    for k, v in pairs(args) do
      shown[k] = type(v) == "function" and "<function>" or v
    end
    return { args = shown }
  end
  return { kind = err.kind, message = err.message, prog = err.prog, usage = err.usage, text = err.text }
end

local function both(argv)
  local fast = outcome(cli.parse(argv))
  local whole = outcome(cli.build_parser():parse(argv))
  return fast, whole
end

-- Argument lists that exercise a command's own grammar a little.
local TYPICAL = {
  post = { { "c", "--from", "a", "--title", "t", "--body", "b" }, { "c", "--fr", "a", "--ti", "t" },
           { "c", "--from", "a", "--title", "t", "--reply", "x" },
           -- the direct shortcut (commands/post.lua) and lines just off it
           { "c", "--from", "a", "--to", "b", "--title", "", "--reply", "0012", "--status", "s",
             "--body", "", "--body-file", "f" },
           { "c", "--title", "t", "--from", "a" }, { "c", "--from", "a" }, { "c", "--title", "t" },
           { "c", "--from", "a", "--title", "t", "--from", "b" }, { "c", "--from", "a", "--title", "-t" },
           { "c", "--from", "a", "--title", "t", "--reply", "-1" }, { "c", "--from", "a", "--title" },
           { "c", "--from", "a", "--title", "t", "--reply", " 7 " }, { "", "--from", "a", "--title", "t" },
           { "c", "--from", "a", "--title", "t", "--type", "message" }, { "--from", "a", "c", "--title", "t" },
           { "c", "--from=a", "--title", "t" }, { "c", "--from", "a", "--title", "t", "--body", "x=y" },
           { "c", "--from", "a", "--title", "t", "-h" }, { "c", "--from", "a", "--title", "t", "--", "x" } },
  read = { { "c", "--as", "bob" }, { "c", "--as", "bob", "--kind", "event", "--max-messages", "2" },
           { "c", "--as" } },
  wait = { { "c", "--as", "bob", "--timeout", "-1" } },
  peek = { { "c", "-n", "-3" }, { "c", "-n5" } },
  task = { { "create", "c", "j", "--from", "a", "--title", "t" }, { "claim", "c", "j", "--as", "b" },
           { "nope" }, { "create", "-h" },
           -- the lease commands' direct shortcut (commands/tasks.lua) and lines just off it
           { "renew", "c", "j", "--as", "b" }, { "done", "c", "j", "--as", "b" },
           { "release", "c", "j", "--as", "b" }, { "block", "c", "j", "--as", "b" },
           { "recover", "c", "j", "--as", "b" }, { "claim", "c", "j", "--from", "b" },
           { "claim", "c", "j", "--as", "" }, { "claim", "", "j", "--as", "b" },
           { "claim", "c", "-j", "--as", "b" }, { "claim", "c", "j", "--as", "-b" },
           { "claim", "c", "j", "--as", "b", "--lease-seconds", "5" }, { "claim", "c", "j", "--a", "b" } },
  lock = { { "c", "a/b", "docs", "--as", "alice", "--ttl", "60" } },
  unlock = { { "c", "id", "--as", "alice" } },
  check = { { "c", "dir7" } },
  roster = { { "c" }, { "-c" }, { "" }, { "c", "d" }, { "--", "c" } },
  hook = { { "prompt" }, { "bogus" }, { "stop" }, { "session-start" }, { "prompt", "x" }, { "-h" },
           { "--", "prompt" } },
  event = { { "post", "c", "--type", "x", "--from", "a" } },
}

local EDGES = {
  {}, { "-h" }, { "x" }, { "x", "y", "z" }, { "--", "x" }, { "x", "--=y" }, { "-5" }, { "--unknown" },
  { "x", "--root", "r" }, { "x", "-h" }, { "--as" },
}

describe("cli.parse", function()
  for _, c in ipairs(cli.commands) do
    local name = c[1]
    it("agrees with the whole parser for " .. name, function()
      local lists = {}
      for _, e in ipairs(EDGES) do
        lists[#lists + 1] = e
      end
      for _, t in ipairs(TYPICAL[name] or {}) do
        lists[#lists + 1] = t
      end
      for _, rest in ipairs(lists) do
        for _, lead in ipairs({ {}, { "--root", "r" }, { "--root=r" }, { "--root=" }, { "--root", "-r" },
                                 { "--ro", "r" }, { "--root", "a", "--root=b" }, { "--version" },
                                 { "--store", "etcd://h:1/p" }, { "--store=etcd://h:1/p", "--root", "r" },
                                 { "--store", "-s" }, { "--store", "a", "--store=b" } }) do
          local argv = table.move(lead, 1, #lead, 1, {})
          argv[#argv + 1] = name
          table.move(rest, 1, #rest, #argv + 1, argv)
          local fast, whole = both(argv)
          assert.same(whole, fast, table.concat(argv, " "))
        end
      end
    end)
  end

  it("agrees with the whole parser when there is no command to shortcut", function()
    for _, argv in ipairs({ {}, { "-h" }, { "--help" }, { "nope" }, { "--root" }, { "--root", "r" },
                            { "Post", "c" }, { "pos", "c" }, { "--", "roster", "c" }, { "-x", "roster", "c" },
                            { "--root", "r", "--", "roster", "c" } }) do
      local fast, whole = both(argv)
      assert.same(whole, fast, table.concat(argv, " "))
    end
  end)

  it("names the command's parser as the whole parser does", function()
    local _, err = cli.parse({ "roster" })
    assert.equal("agent-chat roster", err.prog)
    assert.equal("the following arguments are required: channel", err.message)
  end)
end)
