-- Specs for agentchat.argparse. Every expected value below was produced
-- by CPython 3.11's argparse (the oracle) for an equivalent parser,
-- with COLUMNS=80; the parsers here pin `columns = 80` so that the
-- environment does not matter.
local M = require "agentchat.argparse"

-- The command line used by most specs: a trimmed copy of agent-chat's.
-- Returns the top parser and the subparsers by name ("post",
-- "task claim", ...).
local function cli()
  local by_name = {}
  local top = M.parser{ prog = "agent-chat", columns = 80,
    description = "File-based chat channels for agents." }
  top:option{ "--root", metavar = "DIR", help = "chat root folder" }
  local sub = top:subparsers{ dest = "command", metavar = "COMMAND",
    required = true, help = "command to run" }
  local function add(s, name, help, prefix)
    local p = s:parser(name, { help = help })
    by_name[(prefix or "") .. name] = p
    return p
  end

  local p = add(sub, "init", "create a channel")
  p:positional{ "channel" }
  p:option{ "--members" }
  p:option{ "--topic" }
  add(sub, "channels", "list channels")

  p = add(sub, "post", "post a message")
  p:positional{ "channel", help = "channel name" }
  p:option{ "--from", dest = "from", required = true, metavar = "NAME",
    help = "sender" }
  p:option{ "--to", default = "all", help = "recipients (default: %(default)s)" }
  p:option{ "--title", required = true }
  p:option{ "--reply", type = "int" }
  p:option{ "--status", default = "discussion" }
  p:option{ "--body" }
  p:option{ "--body-file", metavar = "PATH" }

  p = add(sub, "read", "read new messages")
  p:positional{ "channel" }
  p:option{ "--as", dest = "as", required = true }
  p:option{ "--all", action = "store_true" }
  p:option{ "--peek", action = "store_true" }

  p = add(sub, "wait", "wait for messages")
  p:positional{ "channel" }
  p:option{ "--as", dest = "as", required = true }
  p:option{ "--timeout", type = "float", default = 900.0 }
  p:option{ "--interval", type = "float", default = 5.0 }

  p = add(sub, "peek", "show the last messages")
  p:positional{ "channel" }
  p:option{ "-n", type = "int", default = 3 }

  p = add(sub, "lock", "lock paths")
  p:positional{ "channel" }
  p:positional{ "paths", nargs = "+", metavar = "PATH" }
  p:option{ "--as", "--from", "--owner", dest = "as", required = true }
  p:option{ "--lease-seconds", "--lease", "--ttl", type = "float", default = 300.0 }

  p = add(sub, "recover-pending", "recover a pending transaction")
  p:positional{ "channel" }
  p:option{ "--as", "--from", "--owner", dest = "as", required = true }
  p:option{ "--resolve-publication", choices = { "rollback", "published" } }

  local ev = add(sub, "event", "adapter events")
  local esub = ev:subparsers{ dest = "event_command", metavar = "COMMAND",
    required = true }
  p = add(esub, "post", "post an event", "event ")
  p:positional{ "channel" }
  p:option{ "--from", dest = "from", required = true }
  p:option{ "--type", dest = "event_type", required = true,
    choices = { "capability", "status" } }
  p:option{ "--primitives", action = "append" }
  p = add(esub, "read", "read events", "event ")
  p:positional{ "channel" }

  local task = add(sub, "task", "structured tasks")
  task.tag = "task"
  local tsub = task:subparsers{ dest = "task_command", metavar = "COMMAND",
    required = true }
  local function tp(name, help, with_id)
    local t = add(tsub, name, help, "task ")
    t:positional{ "channel" }
    if with_id ~= false then
      t:positional{ "task_id" }
    end
    return t
  end
  p = tp("create", "create a task")
  p:option{ "--from", "--created-by", dest = "created_by", required = true }
  p:option{ "--title", required = true }
  p:option{ "--owner" }
  p:option{ "--depends-on", action = "append" }
  tp("list", "list tasks", false)
  tp("show", "show a task")
  p = tp("update", "update a task")
  p:option{ "--as", "--from", dest = "as", required = true }
  p:option{ "--title" }
  p:option{ "--clear-owner", action = "store_true" }
  p:option{ "--status" }
  for _, name in ipairs{ "claim", "renew", "recover" } do
    p = tp(name, name .. " a lease")
    p:option{ "--as", "--from", dest = "as", required = true }
    if name == "recover" then
      p:option{ "--reason", required = true }
    end
    p:option{ "--lease-seconds", "--lease", "--ttl", type = "float", default = 300.0 }
  end
  p = tp("recover-pending", "recover a pending lease transaction", false)
  p:option{ "--as", "--from", dest = "as", required = true }
  p:option{ "--resolve-publication", choices = { "rollback", "published" } }
  for _, name in ipairs{ "done", "block", "release" } do
    p = tp(name, name .. " a task")
    p:option{ "--as", "--from", dest = "as", required = true }
  end
  return top, by_name
end

-- Options of every kind, short-option clusters, nargs.
local function misc()
  local p = M.parser{ prog = "misc", columns = 80 }
  p:option{ "-v", "--verbose", action = "count" }
  p:option{ "-q", action = "store_true" }
  p:option{ "-x", action = "store_true" }
  p:option{ "-n", "--num", type = "int" }
  p:option{ "--title" }
  p:option{ "--to" }
  p:option{ "--tag", action = "append" }
  p:option{ "--level", type = "int", choices = { 1, 2, 3 } }
  p:option{ "--pair", nargs = 2 }
  p:option{ "--maybe", nargs = "?", const = "CONST", default = "DEF" }
  p:option{ "--some", nargs = "+", type = "int" }
  p:option{ "--no-color", action = "store_false", dest = "color" }
  p:positional{ "first" }
  p:positional{ "rest", nargs = "*" }
  return p
end

-- A parser with an option that looks like a negative number, which turns
-- off the "negative numbers are values" rule.
local function neg()
  local p = M.parser{ prog = "neg", columns = 80 }
  p:option{ "-1", dest = "one", action = "store_true" }
  p:positional{ "pos", nargs = "?" }
  return p
end

local PARSERS = { cli = function() return (cli()) end, misc = misc, neg = neg }

-- { argv, expected args } (Python's Namespace without its None values)
local OK = {
  cli = {
    { { "init", "c" },
      { channel = "c", command = "init" } },
    { { "--root", "r", "init", "c", "--members", "a,b", "--topic", "" },
      {
        channel = "c", command = "init", members = "a,b", root = "r",
        topic = ""
      } },
    { { "--root=r", "channels" },
      { command = "channels", root = "r" } },
    { { "--ro", "r", "channels" },
      { command = "channels", root = "r" } },
    { { "post", "c", "--from", "a", "--title", "t" },
      {
        channel = "c", command = "post", ["from"] = "a", status = "discussion",
        title = "t", to = "all"
      } },
    { { "post", "--from", "a", "c", "--title", "" },
      {
        channel = "c", command = "post", ["from"] = "a", status = "discussion",
        title = "", to = "all"
      } },
    { { "post", "c", "--from=a", "--title=x=y", "--to=" },
      {
        channel = "c", command = "post", ["from"] = "a", status = "discussion",
        title = "x=y", to = ""
      } },
    { {
        "post", "c", "--fr", "a", "--ti", "t", "--st=done", "--body-f", "b.md"
      },
      {
        body_file = "b.md", channel = "c", command = "post", ["from"] = "a",
        status = "done", title = "t", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", "-3" },
      {
        channel = "c", command = "post", ["from"] = "a", reply = -3,
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "t", "--reply=-3" },
      {
        channel = "c", command = "post", ["from"] = "a", reply = -3,
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", " 7 " },
      {
        channel = "c", command = "post", ["from"] = "a", reply = 7,
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", "1_000" },
      {
        channel = "c", command = "post", ["from"] = "a", reply = 1000,
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", "\217\163" },
      {
        channel = "c", command = "post", ["from"] = "a", reply = 3,
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "t", "--title", "u" },
      {
        channel = "c", command = "post", ["from"] = "a", status = "discussion",
        title = "u", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "t", "--body", "-" },
      {
        body = "-", channel = "c", command = "post", ["from"] = "a",
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "t", "--body", "- x" },
      {
        body = "- x", channel = "c", command = "post", ["from"] = "a",
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "t", "--body", "-x y" },
      {
        body = "-x y", channel = "c", command = "post", ["from"] = "a",
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "c", "--from", "a", "--title", "-1.5" },
      {
        channel = "c", command = "post", ["from"] = "a", status = "discussion",
        title = "-1.5", to = "all"
      } },
    { { "post", "--from", "a", "--title", "t", "--", "-c" },
      {
        channel = "-c", command = "post", ["from"] = "a",
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "-3", "--from", "a", "--title", "t" },
      {
        channel = "-3", command = "post", ["from"] = "a",
        status = "discussion", title = "t", to = "all"
      } },
    { { "post", "-c d", "--from", "a", "--title", "t" },
      {
        channel = "-c d", command = "post", ["from"] = "a",
        status = "discussion", title = "t", to = "all"
      } },
    { { "read", "c", "--as", "a", "--all", "--peek" },
      {
        all = true, ["as"] = "a", channel = "c", command = "read", peek = true
      } },
    { { "read", "c", "--as", "a", "--al" },
      {
        all = true, ["as"] = "a", channel = "c", command = "read",
        peek = false
      } },
    { { "read", "c", "--as=" },
      {
        all = false, ["as"] = "", channel = "c", command = "read",
        peek = false
      } },
    { { "wait", "c", "--as", "a", "--timeout", " 1.5 " },
      {
        ["as"] = "a", channel = "c", command = "wait", interval = 5.0,
        timeout = 1.5
      } },
    { { "wait", "c", "--as", "a", "--timeout", "1_0" },
      {
        ["as"] = "a", channel = "c", command = "wait", interval = 5.0,
        timeout = 10.0
      } },
    { {
        "wait", "c", "--as", "a", "--timeout", "inf", "--interval=-Infinity"
      },
      {
        ["as"] = "a", channel = "c", command = "wait", interval = -math.huge,
        timeout = math.huge
      } },
    { { "wait", "c", "--as", "a", "--timeout", "1", "--interval", ".5" },
      {
        ["as"] = "a", channel = "c", command = "wait", interval = 0.5,
        timeout = 1.0
      } },
    { { "wait", "c", "--as", "a", "--timeout", "1e400", "--interval", "5." },
      {
        ["as"] = "a", channel = "c", command = "wait", interval = 5.0,
        timeout = math.huge
      } },
    { { "peek", "c", "-n", "5" },
      { channel = "c", command = "peek", n = 5 } },
    { { "peek", "c", "-n5" },
      { channel = "c", command = "peek", n = 5 } },
    { { "peek", "c", "-n", "-2" },
      { channel = "c", command = "peek", n = -2 } },
    { { "peek", "c", "-n-2" },
      { channel = "c", command = "peek", n = -2 } },
    { { "peek", "c", "-n=4" },
      { channel = "c", command = "peek", n = 4 } },
    { { "peek", "c", "-n", "1", "-n", "2" },
      { channel = "c", command = "peek", n = 2 } },
    { { "lock", "c", "a", "b", "--as", "x" },
      {
        ["as"] = "x", channel = "c", command = "lock", lease_seconds = 300.0,
        paths = { "a", "b" }
      } },
    { { "lock", "c", "--owner", "x", "a", "b", "--ttl", "5" },
      {
        ["as"] = "x", channel = "c", command = "lock", lease_seconds = 5.0,
        paths = { "a", "b" }
      } },
    { { "lock", "c", "a", "--from", "x", "--lease", "2.5" },
      {
        ["as"] = "x", channel = "c", command = "lock", lease_seconds = 2.5,
        paths = { "a" }
      } },
    { { "lock", "c", "a", "--as", "x", "--lease-s", "5" },
      {
        ["as"] = "x", channel = "c", command = "lock", lease_seconds = 5.0,
        paths = { "a" }
      } },
    { { "lock", "c", "--as", "x", "--", "a", "--", "-b" },
      {
        ["as"] = "x", channel = "c", command = "lock", lease_seconds = 300.0,
        paths = { "a", "--", "-b" }
      } },
    { {
        "recover-pending", "c", "--as", "x", "--resolve-publication",
        "rollback"
      },
      {
        ["as"] = "x", channel = "c", command = "recover-pending",
        resolve_publication = "rollback"
      } },
    { { "recover-pending", "c", "--as", "x", "--res", "published" },
      {
        ["as"] = "x", channel = "c", command = "recover-pending",
        resolve_publication = "published"
      } },
    { {
        "event", "post", "c", "--from", "a", "--type", "status",
        "--primitives", "a,b", "--primitives", "c"
      },
      {
        channel = "c", command = "event", event_command = "post",
        event_type = "status", ["from"] = "a", primitives = { "a,b", "c" }
      } },
    { { "event", "read", "c" },
      { channel = "c", command = "event", event_command = "read" } },
    { {
        "task", "create", "cli", "t1", "--created-by", "a", "--title", "",
        "--depends-on", "a,b", "--depends-on", "c"
      },
      {
        channel = "cli", command = "task", created_by = "a",
        depends_on = { "a,b", "c" }, task_command = "create", task_id = "t1",
        title = ""
      } },
    { { "task", "claim", "cli", "t1", "--as", "a", "--ttl=12.5" },
      {
        ["as"] = "a", channel = "cli", command = "task", lease_seconds = 12.5,
        task_command = "claim", task_id = "t1"
      } },
    { {
        "task", "update", "cli", "t1", "--as", "a", "--clear-owner",
        "--status", "done"
      },
      {
        ["as"] = "a", channel = "cli", clear_owner = true, command = "task",
        status = "done", task_command = "update", task_id = "t1"
      } },
    { {
        "task", "update", "cli", "t1", "--from", "a", "--clear", "--ti", "x"
      },
      {
        ["as"] = "a", channel = "cli", clear_owner = true, command = "task",
        task_command = "update", task_id = "t1", title = "x"
      } },
    { { "--root", "r", "task", "list", "c" },
      { channel = "c", command = "task", root = "r", task_command = "list" } },
  },
  misc = {
    { { "f" },
      {
        color = true, first = "f", maybe = "DEF", q = false, rest = {  },
        x = false
      } },
    { { "-vvv", "f" },
      {
        color = true, first = "f", maybe = "DEF", q = false, rest = {  },
        verbose = 3, x = false
      } },
    { { "-v", "--verbose", "f", "g", "h" },
      {
        color = true, first = "f", maybe = "DEF", q = false,
        rest = { "g", "h" }, verbose = 2, x = false
      } },
    { { "-qx", "f" },
      {
        color = true, first = "f", maybe = "DEF", q = true, rest = {  },
        x = true
      } },
    { { "-qxvv", "f" },
      {
        color = true, first = "f", maybe = "DEF", q = true, rest = {  },
        verbose = 2, x = true
      } },
    { { "-qn5", "f" },
      {
        color = true, first = "f", maybe = "DEF", num = 5, q = true,
        rest = {  }, x = false
      } },
    { { "-qn", "5", "f" },
      {
        color = true, first = "f", maybe = "DEF", num = 5, q = true,
        rest = {  }, x = false
      } },
    { { "--num=1", "--num", "2", "f" },
      {
        color = true, first = "f", maybe = "DEF", num = 2, q = false,
        rest = {  }, x = false
      } },
    { { "--level", "2", "f" },
      {
        color = true, first = "f", level = 2, maybe = "DEF", q = false,
        rest = {  }, x = false
      } },
    { { "--tag", "a", "--tag", "b", "f" },
      {
        color = true, first = "f", maybe = "DEF", q = false, rest = {  },
        tag = { "a", "b" }, x = false
      } },
    { { "--pair", "k", "v", "f" },
      {
        color = true, first = "f", maybe = "DEF", pair = { "k", "v" },
        q = false, rest = {  }, x = false
      } },
    { { "--maybe", "--", "f" },
      {
        color = true, first = "f", maybe = "CONST", q = false, rest = {  },
        x = false
      } },
    { { "f", "--maybe" },
      {
        color = true, first = "f", maybe = "CONST", q = false, rest = {  },
        x = false
      } },
    { { "f", "--maybe", "x" },
      {
        color = true, first = "f", maybe = "x", q = false, rest = {  },
        x = false
      } },
    { { "f", "--some", "1", "2" },
      {
        color = true, first = "f", maybe = "DEF", q = false, rest = {  },
        some = { 1, 2 }, x = false
      } },
    { { "--no-color", "f" },
      {
        color = false, first = "f", maybe = "DEF", q = false, rest = {  },
        x = false
      } },
    { { "--no", "f" },
      {
        color = false, first = "f", maybe = "DEF", q = false, rest = {  },
        x = false
      } },
    { { "f", "g", "h", "-q" },
      {
        color = true, first = "f", maybe = "DEF", q = true,
        rest = { "g", "h" }, x = false
      } },
    { { "-q=x", "f" },
      {
        color = true, first = "f", maybe = "DEF", q = true, rest = {  },
        x = true
      } },
    { { "--v", "f" },
      {
        color = true, first = "f", maybe = "DEF", q = false, rest = {  },
        verbose = 1, x = false
      } },
    { { "f", "--", "-q" },
      {
        color = true, first = "f", maybe = "DEF", q = false, rest = { "-q" },
        x = false
      } },
    { { "--", "-x" },
      {
        color = true, first = "-x", maybe = "DEF", q = false, rest = {  },
        x = false
      } },
    { { "-", "-" },
      {
        color = true, first = "-", maybe = "DEF", q = false, rest = { "-" },
        x = false
      } },
  },
  neg = {
    { {  },
      { one = false } },
    { { "-1" },
      { one = true } },
    { { "-1", "x" },
      { one = true, pos = "x" } },
    { { "--", "-2" },
      { one = false, pos = "-2" } },
  },
}

-- { argv, prog of the parser that raised the error, message }
local ERR = {
  cli = {
    { {  }, "agent-chat",
      "the following arguments are required: COMMAND" },
    { { "frobnicate" }, "agent-chat",
      "argument COMMAND: invalid choice: 'frobnicate' (choose from "
      .. "'init', 'channels', 'post', 'read', 'wait', 'peek', 'lock', "
      .. "'recover-pending', 'event', 'task')" },
    { { "-x" }, "agent-chat",
      "the following arguments are required: COMMAND" },
    { { "--root" }, "agent-chat",
      "argument --root: expected one argument" },
    { { "--roo" }, "agent-chat",
      "argument --root: expected one argument" },
    { { "--=x", "channels" }, "agent-chat",
      "ambiguous option: --=x could match --help, --root" },
    { { "channels", "extra" }, "agent-chat",
      "unrecognized arguments: extra" },
    { { "channels", "--root", "x" }, "agent-chat",
      "unrecognized arguments: --root x" },
    { { "--root", "x", "init", "c", "--root", "y" }, "agent-chat",
      "unrecognized arguments: --root y" },
    { { "init", "c", "d", "--bogus", "e", "-z" }, "agent-chat",
      "unrecognized arguments: d --bogus e -z" },
    { { "post" }, "agent-chat post",
      "the following arguments are required: channel, --from, --title" },
    { { "post", "c" }, "agent-chat post",
      "the following arguments are required: --from, --title" },
    { { "post", "c", "--from", "a" }, "agent-chat post",
      "the following arguments are required: --title" },
    { { "post", "c", "--from", "a", "--title" }, "agent-chat post",
      "argument --title: expected one argument" },
    { { "post", "c", "--from", "a", "--title", "--to", "x" }, "agent-chat post",
      "argument --title: expected one argument" },
    { { "post", "c", "--from", "a", "--t", "x" }, "agent-chat post",
      "ambiguous option: --t could match --to, --title" },
    { { "post", "c", "--from", "a", "--t=x" }, "agent-chat post",
      "ambiguous option: --t=x could match --to, --title" },
    { { "post", "c", "--from", "a", "--title", "t", "--bo", "x" },
      "agent-chat post",
      "ambiguous option: --bo could match --body, --body-file" },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", "abc" },
      "agent-chat post",
      "argument --reply: invalid int value: 'abc'" },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", "it's" },
      "agent-chat post",
      "argument --reply: invalid int value: \"it's\"" },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", "1.5" },
      "agent-chat post",
      "argument --reply: invalid int value: '1.5'" },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", "0x10" },
      "agent-chat post",
      "argument --reply: invalid int value: '0x10'" },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", "tab\there\n\001\195\169" },
      "agent-chat post",
      "argument --reply: invalid int value: 'tab\\there\\n\\x01\195\169'" },
    { { "post", "c", "--from", "a", "--title", "t", "--reply", "--" },
      "agent-chat post",
      "argument --reply: expected one argument" },
    { { "post", "c", "--from", "a", "--title", "t", "--body" },
      "agent-chat post",
      "argument --body: expected one argument" },
    { { "post", "-c", "--from", "a", "--title", "t" }, "agent-chat post",
      "the following arguments are required: channel" },
    { { "post", "c", "d", "--from", "a", "--title", "t" }, "agent-chat",
      "unrecognized arguments: d" },
    { { "post", "--", "-c", "--from", "a" }, "agent-chat post",
      "the following arguments are required: --from, --title" },
    { { "read", "c", "--as", "a", "--all=yes" }, "agent-chat read",
      "argument --all: ignored explicit argument 'yes'" },
    { { "read", "c", "--as", "a", "--a" }, "agent-chat read",
      "ambiguous option: --a could match --as, --all" },
    { { "wait", "c", "--as", "a", "--timeout", "0x10" }, "agent-chat wait",
      "argument --timeout: invalid float value: '0x10'" },
    { { "wait", "c", "--as", "a", "--timeout", "1__0" }, "agent-chat wait",
      "argument --timeout: invalid float value: '1__0'" },
    { { "wait", "c", "--as", "a", "--timeout", "soon" }, "agent-chat wait",
      "argument --timeout: invalid float value: 'soon'" },
    { { "peek", "c", "-nx" }, "agent-chat peek",
      "argument -n: invalid int value: 'x'" },
    { { "peek", "c", "-n", "x" }, "agent-chat peek",
      "argument -n: invalid int value: 'x'" },
    { { "wait", "c", "--as", "a", "--interval", "-Infinity" },
      "agent-chat wait",
      "argument --interval: expected one argument" },
    { { "peek", "c", "-n" }, "agent-chat peek",
      "argument -n: expected one argument" },
    { { "peek", "c", "-m" }, "agent-chat",
      "unrecognized arguments: -m" },
    { { "lock", "c", "--as", "x" }, "agent-chat lock",
      "the following arguments are required: PATH" },
    { { "lock", "c", "a" }, "agent-chat lock",
      "the following arguments are required: --as/--from/--owner" },
    { { "lock", "c", "a", "--as", "x", "--ttl", "soon" }, "agent-chat lock",
      "argument --lease-seconds/--lease/--ttl: invalid float value: 'soon'" },
    { { "lock", "c", "a", "--as", "x", "--l", "5" }, "agent-chat lock",
      "ambiguous option: --l could match --lease-seconds, --lease" },
    { { "lock", "c", "a", "--as", "x", "--le=5" }, "agent-chat lock",
      "ambiguous option: --le=5 could match --lease-seconds, --lease" },
    { { "lock", "c", "a", "--as", "x", "b" }, "agent-chat",
      "unrecognized arguments: b" },
    { { "recover-pending", "c", "--as", "x", "--resolve-publication", "maybe" },
      "agent-chat recover-pending",
      "argument --resolve-publication: invalid choice: 'maybe' (choose "
      .. "from 'rollback', 'published')" },
    { { "event" }, "agent-chat event",
      "the following arguments are required: COMMAND" },
    { { "event", "nope" }, "agent-chat event",
      "argument COMMAND: invalid choice: 'nope' (choose from 'post', "
      .. "'read')" },
    { { "event", "post", "c", "--from", "a", "--type", "bogus" },
      "agent-chat event post",
      "argument --type: invalid choice: 'bogus' (choose from "
      .. "'capability', 'status')" },
    { { "event", "post", "c" }, "agent-chat event post",
      "the following arguments are required: --from, --type" },
    { { "event", "read", "c", "extra", "--more" }, "agent-chat",
      "unrecognized arguments: extra --more" },
    { { "task" }, "agent-chat task",
      "the following arguments are required: COMMAND" },
    { { "task", "frobnicate", "cli" }, "agent-chat task",
      "argument COMMAND: invalid choice: 'frobnicate' (choose from "
      .. "'create', 'list', 'show', 'update', 'claim', 'renew', 'recover', "
      .. "'recover-pending', 'done', 'block', 'release')" },
    { { "task", "create", "cli" }, "agent-chat task create",
      "the following arguments are required: task_id, "
      .. "--from/--created-by, --title" },
    { { "task", "create", "cli", "t1", "--from", "a" },
      "agent-chat task create",
      "the following arguments are required: --title" },
    { { "task", "list" }, "agent-chat task list",
      "the following arguments are required: channel" },
    { { "task", "list", "cli", "extra" }, "agent-chat",
      "unrecognized arguments: extra" },
    { { "task", "claim", "cli", "t1" }, "agent-chat task claim",
      "the following arguments are required: --as/--from" },
    { { "task", "claim", "cli", "t1", "--as", "a", "--lease-seconds", "soon" },
      "agent-chat task claim",
      "argument --lease-seconds/--lease/--ttl: invalid float value: 'soon'" },
    { { "task", "show", "cli" }, "agent-chat task show",
      "the following arguments are required: task_id" },
    { { "task", "recover-pending", "cli", "--as", "a", "--resolve-publication", "maybe" },
      "agent-chat task recover-pending",
      "argument --resolve-publication: invalid choice: 'maybe' (choose "
      .. "from 'rollback', 'published')" },
    { { "task", "update", "cli", "t1", "--as", "a", "--bogus" }, "agent-chat",
      "unrecognized arguments: --bogus" },
    { { "task", "update", "cli", "t1", "--as", "a", "--clear-owner=1" },
      "agent-chat task update",
      "argument --clear-owner: ignored explicit argument '1'" },
    { { "task", "recover", "c", "t", "--as", "a", "--reason" },
      "agent-chat task recover",
      "argument --reason: expected one argument" },
    { { "--root", "r", "task", "list", "c", "--root", "s" }, "agent-chat",
      "unrecognized arguments: --root s" },
  },
  misc = {
    { {  }, "misc",
      "the following arguments are required: first, rest" },
    { { "-qz", "f" }, "misc",
      "argument -q: ignored explicit argument 'z'" },
    { { "-q=z", "f" }, "misc",
      "argument -q: ignored explicit argument 'z'" },
    { { "-n", "--num", "f" }, "misc",
      "argument -n/--num: expected one argument" },
    { { "--level", "4", "f" }, "misc",
      "argument --level: invalid choice: 4 (choose from 1, 2, 3)" },
    { { "--level", "x", "f" }, "misc",
      "argument --level: invalid int value: 'x'" },
    { { "--pair", "k", "f" }, "misc",
      "the following arguments are required: first, rest" },
    { { "--pair", "k" }, "misc",
      "argument --pair: expected 2 arguments" },
    { { "--some", "f" }, "misc",
      "argument --some: invalid int value: 'f'" },
    { { "--some", "1", "2", "f" }, "misc",
      "argument --some: invalid int value: 'f'" },
    { { "f", "--some" }, "misc",
      "argument --some: expected at least one argument" },
    { { "f", "--some", "1", "x" }, "misc",
      "argument --some: invalid int value: 'x'" },
    { { "--t", "x", "f" }, "misc",
      "ambiguous option: --t could match --title, --to, --tag" },
    { { "f", "-q", "g", "h" }, "misc",
      "unrecognized arguments: g h" },
    { { "f", "g", "-q", "h" }, "misc",
      "unrecognized arguments: h" },
  },
  neg = {
    { { "-2" }, "neg",
      "unrecognized arguments: -2" },
    { { "-1x" }, "neg",
      "argument -1: ignored explicit argument 'x'" },
    { { "x", "y" }, "neg",
      "unrecognized arguments: y" },
  },
}

-- { argv, complete stderr text of Python's parser.error() }
local FULL = {
  { { "task", "claim", "c", "t", "--as", "a", "--ttl", "soon" },
    "usage: agent-chat task claim [-h] --as AS [--lease-seconds LEASE_SECONDS]\n"
    .. "                             channel task_id\n"
    .. "agent-chat task claim: error: argument --lease-seconds/--lease/--ttl: invalid float "
    .. "value: 'soon'\n" },
  { { "post", "c" },
    "usage: agent-chat post [-h] --from NAME [--to TO] --title TITLE\n"
    .. "                       [--reply REPLY] [--status STATUS] [--body BODY]\n"
    .. "                       [--body-file PATH]\n"
    .. "                       channel\n"
    .. "agent-chat post: error: the following arguments are required: --from, --title\n" },
  { { "channels", "--root", "x" },
    "usage: agent-chat [-h] [--root DIR] COMMAND ...\n"
    .. "agent-chat: error: unrecognized arguments: --root x\n" },
  { { "peek", "c", "-nx" },
    "usage: agent-chat peek [-h] [-n N] channel\n"
    .. "agent-chat peek: error: argument -n: invalid int value: 'x'\n" },
}

local function show(argv)
  return table.concat(argv, " ")
end

describe("argparse", function()
  describe("successful parses", function()
    for _, name in ipairs{ "cli", "misc", "neg" } do
      for _, case in ipairs(OK[name]) do
        it(name .. ": " .. show(case[1]), function()
          local args, err = PARSERS[name]():parse(case[1])
          assert.is_nil(err)
          assert.same(case[2], args)
        end)
      end
    end

    it("keeps ints as integers and floats as floats", function()
      local args = cli():parse{ "post", "c", "--from", "a", "--title", "t",
        "--reply", "5" }
      assert.equal("integer", math.type(args.reply))
      args = cli():parse{ "wait", "c", "--as", "a", "--timeout", "1" }
      assert.equal("float", math.type(args.timeout))
      assert.equal("float", math.type(args.interval))
    end)

    it("parses nan as a float NaN", function()
      local args = cli():parse{ "wait", "c", "--as", "a", "--timeout", "nan" }
      assert.is_true(args.timeout ~= args.timeout)
    end)

    it("does not modify argv", function()
      local argv = { "lock", "c", "--", "a", "--", "b", "--as", "x" }
      local copy = { table.unpack(argv) }
      cli():parse(argv)
      assert.same(copy, argv)
    end)
  end)

  describe("errors", function()
    for _, name in ipairs{ "cli", "misc", "neg" } do
      for _, case in ipairs(ERR[name]) do
        it(name .. ": " .. show(case[1]), function()
          local args, err = PARSERS[name]():parse(case[1])
          assert.is_nil(args)
          assert.equal("error", err.kind)
          assert.equal(case[3], err.message)
          assert.equal(case[2], err.prog)
          assert.equal(case[2], err.parser.name)
        end)
      end
    end

    for _, case in ipairs(FULL) do
      it("formats like Python: " .. show(case[1]), function()
        local _, err = cli():parse(case[1])
        assert.equal(case[2], M.format_error(err))
        assert.equal(case[2], tostring(err))
        assert.equal(case[2]:match("^(.-)\n[^\n]*: error: "), err.usage)
      end)
    end

    it("names the parser object that raised the error", function()
      local top, by_name = cli()
      local _, err = top:parse{ "task", "claim", "c", "t", "--as", "a",
        "--ttl", "soon" }
      assert.equal(by_name["task claim"], err.parser)
      assert.equal(by_name.task, err.parser.parent)
      assert.equal("task", err.parser.parent.tag)
      assert.equal(top, err.parser.parent.parent)

      _, err = top:parse{ "task" }
      assert.equal(by_name.task, err.parser)
      assert.equal("task", err.parser.tag)

      _, err = top:parse{ "task", "list", "c", "--bogus" }
      assert.equal(top, err.parser)
      assert.is_nil(err.parser.parent)
    end)

    it("reports a nested subparsers' extras from the top parser, in order", function()
      local _, err = cli():parse{ "--root", "r", "x", "task", "list", "c", "y" }
      assert.equal("agent-chat", err.prog)
      assert.equal("argument COMMAND: invalid choice: 'x' (choose from 'init', "
        .. "'channels', 'post', 'read', 'wait', 'peek', 'lock', "
        .. "'recover-pending', 'event', 'task')", err.message)
      _, err = cli():parse{ "event", "read", "c", "d", "--e", "-f" }
      assert.equal("unrecognized arguments: d --e -f", err.message)
    end)
  end)

  describe("help", function()
    it("prints the top-level help", function()
      local args, res = cli():parse{ "-h" }
      assert.is_nil(args)
      assert.equal("help", res.kind)
      assert.equal("agent-chat", res.parser.name)
      assert.equal([[
usage: agent-chat [-h] [--root DIR] COMMAND ...

File-based chat channels for agents.

positional arguments:
  COMMAND          command to run
    init           create a channel
    channels       list channels
    post           post a message
    read           read new messages
    wait           wait for messages
    peek           show the last messages
    lock           lock paths
    recover-pending
                   recover a pending transaction
    event          adapter events
    task           structured tasks

options:
  -h, --help       show this help message and exit
  --root DIR       chat root folder
]], res.text)
      assert.equal(res.text, M.format_error(res))
    end)

    it("prints a nested subcommand's help", function()
      local _, res = cli():parse{ "task", "claim", "--help" }
      assert.equal("help", res.kind)
      assert.equal("agent-chat task claim", res.prog)
      assert.equal([[
usage: agent-chat task claim [-h] --as AS [--lease-seconds LEASE_SECONDS]
                             channel task_id

positional arguments:
  channel
  task_id

options:
  -h, --help            show this help message and exit
  --as AS, --from AS
  --lease-seconds LEASE_SECONDS, --lease LEASE_SECONDS, --ttl LEASE_SECONDS
]], res.text)
    end)

    it("wins over unknown arguments seen before it", function()
      local _, res = cli():parse{ "post", "c", "--bogus", "-h" }
      assert.equal("help", res.kind)
      assert.equal([[
usage: agent-chat post [-h] --from NAME [--to TO] --title TITLE
                       [--reply REPLY] [--status STATUS] [--body BODY]
                       [--body-file PATH]
                       channel

positional arguments:
  channel           channel name

options:
  -h, --help        show this help message and exit
  --from NAME       sender
  --to TO           recipients (default: all)
  --title TITLE
  --reply REPLY
  --status STATUS
  --body BODY
  --body-file PATH
]], res.text)
    end)

    it("loses to errors found before it", function()
      local _, res = cli():parse{ "post", "c", "--reply", "x", "-h" }
      assert.equal("error", res.kind)
      _, res = cli():parse{ "post", "--t", "-h" }
      assert.equal("ambiguous option: --t could match --to, --title", res.message)
    end)

    it("format_usage matches the usage line of errors", function()
      local top, by_name = cli()
      assert.equal("usage: agent-chat [-h] [--root DIR] COMMAND ...\n",
        top:format_usage())
      assert.equal("usage: agent-chat peek [-h] [-n N] channel\n",
        by_name.peek:format_usage())
    end)
  end)

  describe("subparsers without a metavar", function()
    -- Python: add_subparsers(required=True) without dest or metavar.
    local function nodest()
      local p = M.parser{ prog = "nd", columns = 80 }
      local s = p:subparsers{ required = true }
      local a = s:parser("aa")
      a:positional{ "x", type = "int", choices = { 1, 2 } }
      s:parser("bb", { aliases = { "b" } })
      return p
    end

    local cases = {
      { {}, "nd", "the following arguments are required: {aa,bb,b}" },
      { { "cc" }, "nd",
        "argument {aa,bb,b}: invalid choice: 'cc' (choose from 'aa', 'bb', 'b')" },
      { { "aa" }, "nd aa", "the following arguments are required: x" },
      { { "aa", "3" }, "nd aa", "argument x: invalid choice: 3 (choose from 1, 2)" },
      { { "aa", "x" }, "nd aa", "argument x: invalid int value: 'x'" },
    }
    for _, case in ipairs(cases) do
      it(show(case[1]), function()
        local _, err = nodest():parse(case[1])
        assert.equal(case[2], err.prog)
        assert.equal(case[3], err.message)
      end)
    end

    it("accepts aliases and stores nothing without a dest", function()
      assert.same({ x = 2 }, nodest():parse{ "aa", "2" })
      assert.same({}, nodest():parse{ "b" })
    end)

    it("shows the choices in help", function()
      local _, res = nodest():parse{ "-h" }
      assert.equal("usage: nd [-h] {aa,bb,b} ...\n\npositional arguments:\n"
        .. "  {aa,bb,b}\n\noptions:\n  -h, --help  show this help message and exit\n",
        res.text)
    end)

    it("uses the dest when there is no metavar", function()
      local p = M.parser{ prog = "wd" }
      local s = p:subparsers{ dest = "cmd", required = true }
      s:parser("aa")
      s:parser("bb")
      local _, err = p:parse{}
      assert.equal("the following arguments are required: cmd", err.message)
      _, err = p:parse{ "cc" }
      assert.equal("argument cmd: invalid choice: 'cc' (choose from 'aa', 'bb')",
        err.message)
      assert.same({ cmd = "bb" }, p:parse{ "bb" })
    end)
  end)

  describe("lazily declared subcommands (sub:lazy, an extension)", function()
    -- The same grammar declared eagerly and lazily (mixed, in one order)
    -- parses and prints alike; a lazy command's parser is made, and its
    -- build run, only when a command line names it.
    local built
    local function grammar(lazy)
      built = {}
      local p = M.parser{ prog = "lz", columns = 80 }
      local s = p:subparsers{ dest = "cmd", metavar = "CMD", required = true, title = "commands" }
      for _, name in ipairs({ "aa", "bb", "cc" }) do
        local opts = { help = "the " .. name .. " command", build = function(q)
          built[#built + 1] = name
          q:positional{ "x", type = "int" }
          q:option{ "--flag", action = "store_true" }
        end }
        if lazy and name ~= "bb" then
          s:lazy(name, opts)
        else
          s:parser(name, opts)
        end
      end
      return p
    end

    it("parses and prints as eager subcommands do", function()
      for _, argv in ipairs({ { "aa", "1" }, { "cc", "2", "--fl" }, { "dd" }, {}, { "-h" }, { "aa", "-h" },
                              { "bb", "x" }, { "cc" } }) do
        local want, werr = grammar(false):parse(argv)
        local got, gerr = grammar(true):parse(argv)
        if want then
          assert.same(want, got, show(argv))
        else
          assert.equal(werr.text, gerr.text, show(argv))
          assert.equal(werr.message, gerr.message, show(argv))
          assert.equal(werr.prog, gerr.prog, show(argv))
        end
      end
    end)

    it("builds only the command the line names", function()
      assert.same({ cmd = "cc", x = 3, flag = false }, grammar(true):parse{ "cc", "3" })
      assert.same({ "cc" }, built)
      grammar(true):parse{ "-h" }
      assert.same({}, built)
    end)

    it("refuses a name declared twice and aliases", function()
      local s = M.parser{ prog = "m" }:subparsers{}
      s:lazy("a", {})
      assert.has_error(function() s:lazy("a", {}) end)
      assert.has_error(function() s:parser("a") end)
      assert.has_error(function() s:lazy("b", { aliases = { "c" } }) end)
    end)

    it("accepts an unlisted one, leaving it out of the invalid-choice message", function()
      local p = M.parser{ prog = "u" }
      local s = p:subparsers{ dest = "cmd", metavar = "CMD", required = true }
      s:lazy("old", { help = "listed" })
      s:lazy("new", { help = "ours", unlisted = true, build = function(q)
        q:option{ "--n", type = "int" }
      end })
      assert.same({ cmd = "new", n = 2 }, p:parse{ "new", "--n", "2" })
      local _, err = p:parse{ "nope" }
      assert.equal("argument CMD: invalid choice: 'nope' (choose from 'old')", err.message)
      assert.is_truthy(p:format_help():find("new%s+ours"))
    end)
  end)

  describe("abbrev = false (an extension)", function()
    -- post as the Python tool has it, plus options it lacks: they must not
    -- change what an abbreviation meant, nor the ambiguity messages.
    local function typed()
      local p = M.parser{ prog = "post", columns = 80 }
      p:option{ "--to" }
      p:option{ "--title" }
      p:option{ "--reply", type = "int" }
      p:option{ "--type", abbrev = false }
      p:option{ "--request-id", abbrev = false }
      p:option{ "--role", abbrev = false }
      return p
    end

    it("keeps old abbreviations unique", function()
      assert.same({ reply = 2 }, typed():parse{ "--re", "2" })
      assert.same({ reply = 2 }, typed():parse{ "--r=2" })
    end)

    it("leaves the old ambiguity message as it was", function()
      local _, err = typed():parse{ "--t", "x" }
      assert.equal("ambiguous option: --t could match --to, --title", err.message)
    end)

    it("recognises the option only when spelled in full", function()
      assert.same({ type = "x", request_id = "r", role = "parent" },
        typed():parse{ "--type", "x", "--request-id=r", "--role", "parent" })
      local _, err = typed():parse{ "--ty", "x" }
      assert.equal("unrecognized arguments: --ty x", err.message)
      _, err = typed():parse{ "--request", "x" }
      assert.equal("unrecognized arguments: --request x", err.message)
    end)
  end)

  describe("custom types", function()
    local function ct()
      local p = M.parser{ prog = "ct" }
      p:option{ "--ch", type = function(s)
        if s:sub(1, 1) == "." then
          return nil, "channel"
        end
        return s:upper()
      end }
      p:option{ "--pos", type = function(s)
        return nil, { message = "must be positive: '" .. s .. "'" }
      end }
      p:option{ "--named", type_name = "slug", type = function() return nil end }
      return p
    end

    it("converts values", function()
      assert.same({ ch = "AB" }, ct():parse{ "--ch", "ab" })
    end)

    it("reports the type name, like a Python function's __name__", function()
      local _, err = ct():parse{ "--ch", ".x" }
      assert.equal("argument --ch: invalid channel value: '.x'", err.message)
      _, err = ct():parse{ "--named", "x" }
      assert.equal("argument --named: invalid slug value: 'x'", err.message)
    end)

    it("uses an ArgumentTypeError-style message verbatim", function()
      local _, err = ct():parse{ "--pos", "1" }
      assert.equal("argument --pos: must be positive: '1'", err.message)
    end)
  end)

  describe("definitions", function()
    it("infers dests like argparse", function()
      local p = M.parser{ prog = "d" }
      assert.equal("lease_seconds", p:option{ "--lease-seconds", "--ttl" }.dest)
      assert.equal("long_name", p:option{ "-l", "--long-name" }.dest)
      assert.equal("n", p:option{ "-n" }.dest)
      assert.equal("x_y", p:option{ "-x-y" }.dest)
      assert.equal("task-id", p:positional{ "task-id" }.dest)
    end)

    it("fills defaults, store_true/false and unset values", function()
      local p = M.parser{ prog = "d" }
      p:option{ "--a" }
      p:option{ "--b", default = "x" }
      p:option{ "--c", action = "store_true" }
      p:option{ "--d", action = "store_false" }
      p:option{ "--e", action = "append" }
      p:option{ "--f", action = "count" }
      p:option{ "--g", type = "float", default = "2.5" }
      assert.same({ b = "x", c = false, d = true, g = 2.5 }, p:parse{})
      assert.same({ b = "x", c = true, d = false, e = { "1", "2" }, f = 2, g = 0.5 },
        p:parse{ "--c", "--d", "--e", "1", "--e", "2", "--f", "--f", "--g", ".5" })
    end)

    it("copies an append default instead of changing it", function()
      local default = { "base" }
      local p = M.parser{ prog = "d" }
      p:option{ "--tag", action = "append", default = default }
      assert.same({ tag = { "base", "x" } }, p:parse{ "--tag", "x" })
      assert.same({ "base" }, default)
    end)

    it("supports set_defaults", function()
      local p = M.parser{ prog = "d" }
      local s = p:subparsers{ dest = "cmd" }
      local a = s:parser("a")
      local handler = function() end
      a:set_defaults{ func = handler }
      local args = p:parse{ "a" }
      assert.equal(handler, args.func)
      assert.same({}, p:parse{})
    end)

    it("parse_known returns the extras instead of failing", function()
      local args, extras = misc():parse_known{ "f", "--bogus", "-q", "x" }
      assert.equal("f", args.first)
      assert.is_true(args.q)
      assert.same({ "--bogus", "x" }, extras)
    end)

    it("can build argparse-style errors for later checks", function()
      local top, by_name = cli()
      local err = by_name.post:make_error("bad thing")
      assert.equal("agent-chat post", err.prog)
      assert.equal(by_name.post, err.parser)
      assert.matches("\nagent%-chat post: error: bad thing\n$", M.format_error(err))
      assert.equal("usage: agent-chat [-h] [--root DIR] COMMAND ...\n"
        .. "agent-chat: error: x\n", tostring(top:make_error("x")))
    end)

    local misuse = {
      { "option without a dash", function(p) p:option{ "name" } end },
      { "option without names", function(p) p:option{ help = "x" } end },
      { "conflicting option strings", function(p) p:option{ "-h" } end },
      { "positional with required", function(p) p:positional{ "x", required = true } end },
      { "positional with a dash", function(p) p:positional{ "-x" } end },
      { "unknown action", function(p) p:option{ "--x", action = "frob" } end },
      { "unknown type", function(p) p:option{ "--x", type = "bool" } end },
      { "bad nargs", function(p) p:option{ "--x", nargs = "many" } end },
      { "nargs with store_true", function(p)
        p:option{ "--x", action = "store_true", nargs = 1 }
      end },
      { "two subparsers", function(p) p:subparsers{}; p:subparsers{} end },
      { "duplicate subcommand", function(p)
        local s = p:subparsers{}
        s:parser("a")
        s:parser("a")
      end },
      { "argv with a non-string", function(p) p:parse{ "a", 1 } end },
    }
    for _, case in ipairs(misuse) do
      it("raises on " .. case[1], function()
        assert.has_error(function() case[2](M.parser{ prog = "m" }) end)
      end)
    end

    it("defaults prog to the script name", function()
      assert.is_string(M.parser{}.name)
    end)
  end)
end)
