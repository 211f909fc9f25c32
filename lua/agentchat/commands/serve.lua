-- agentchat.commands.serve: `agent-chat serve [--listen HOST:PORT]
-- [--channels a,b] [--token T | --token-file F] [--max-streams N]`, the
-- command-line face of agentchat.serve (docs/web.md).
--
-- stdout gets one line, "serving ROOT at http://HOST:PORT/", once the
-- server listens (with port 0 the port the system chose). Exit 130 on
-- SIGINT (SIGTERM stops the same way and is re-raised by the host), 2 for
-- bad flags (SERVE_USAGE, SERVE_TOKEN_REQUIRED), 1 when it cannot listen
-- (SERVE_LISTEN) or libmicrohttpd is missing (SERVE_UNAVAILABLE).
local open = require "agentchat.commands.open"
local sys = require "agentchat.sys"

local M = {}

local TOKEN_FILE_CAP = 4096

--- HOST:PORT or [IPV6]:PORT -> host, port; nil, why.
function M.parse_listen(s)
  local host, port = s:match("^%[([^%]]+)%]:(%d+)$")
  if not host then
    host, port = s:match("^([^:]+):(%d+)$")
  end
  if not host then
    return nil, "--listen takes HOST:PORT or [IPV6]:PORT (a numeric address), not '" .. s .. "'"
  end
  if not host:match("^%d+%.%d+%.%d+%.%d+$") and not host:find(":", 1, true) then
    return nil, "--listen takes a numeric address (127.0.0.1, ::1, 0.0.0.0), not '" .. host .. "'"
  end
  port = tonumber(port)
  if not port or port > 65535 then
    return nil, "--listen: the port must be 0 to 65535"
  end
  return host, port
end

-- The token of --token or --token-file (its first line), checked.
local function token_of(args, ctx)
  local token = args.token
  if args.token_file then
    if token then
      return nil, ctx.fail("--token and --token-file exclude each other", "SERVE_USAGE", 2)
    end
    local bytes, msg = sys.read_file(args.token_file, TOKEN_FILE_CAP)
    if not bytes then
      return nil, ctx.fail("could not read --token-file " .. args.token_file .. ": " .. tostring(msg),
        "SERVE_USAGE", 2)
    end
    token = bytes:match("^[ \t]*([^\r\n]-)[ \t]*\r?\n") or bytes:match("^[ \t]*(.-)[ \t]*$")
  end
  if token == nil then
    return false
  end
  if #token < 8 or not token:match("^[!-~]+$") then
    return nil, ctx.fail("a token is 8 or more printable ASCII characters without spaces", "SERVE_USAGE", 2)
  end
  return token
end

local function cmd_serve(args, ctx)
  local host, port = M.parse_listen(args.listen)
  if not host then
    return ctx.fail(port, "SERVE_USAGE", 2)
  end
  local token, trc = token_of(args, ctx)
  if token == nil then
    return trc
  end
  local http = require "agentchat.http"
  if not token and not http.is_loopback(host) then
    return ctx.fail("listening on " .. host .. " (not a loopback address) needs --token or --token-file",
      "SERVE_TOKEN_REQUIRED", 2)
  end
  local channels
  if args.channels then
    channels = {}
    local store = require "agentchat.store"
    for name in args.channels:gmatch("[^,]+") do
      local ok, msg, code = store.check_name(name)
      if not ok then
        return ctx.fail(msg, code)
      end
      channels[#channels + 1] = name
    end
  end
  local root, rc = open.root(args, ctx)
  if not root then
    return rc
  end
  local code, reason, msg, ecode = require("agentchat.serve").run(root, {
    host = host, port = port, token = token or nil, channels = channels, max_streams = args.max_streams,
    reopen = function()
      return require("agentchat").open(args.root)
    end,
    out = function(line)
      ctx.out(line .. "\n")
      ctx.flush()
    end,
    log = function(line)
      ctx.err("agent-chat: " .. line .. "\n")
    end,
  })
  if reason == "signal" then
    return ctx.fail("cancelled by user", "INTERRUPTED")
  elseif reason == "error" then
    return ctx.fail(msg, ecode)
  end
  return code
end

function M.register(sub)
  sub:parser("serve", {
    description = "Serve a read-only live web view of the channels (messages, task board, locks, team) "
      .. "and its JSON API; new messages appear without a reload. Loopback only unless a token is "
      .. "given. See docs/web.md.",
    build = function(p)
      p:option{ "--listen", metavar = "HOST:PORT", default = "127.0.0.1:8765",
                help = "numeric address and port to listen on (default: 127.0.0.1:8765; port 0: any free "
                  .. "port); an address other than loopback needs --token or --token-file" }
      p:option{ "--channels", metavar = "A,B",
                help = "comma-separated channels to show (default: every channel of the root)" }
      p:option{ "--token", metavar = "TOKEN",
                help = "require this token on every request (Authorization: Bearer TOKEN, or ?token=TOKEN)" }
      p:option{ "--token-file", metavar = "FILE", help = "read the token from the first line of FILE" }
      p:option{ "--max-streams", type = open.int_type(1, "positive int"), type_name = "positive int",
                metavar = "N", default = 16, help = "concurrent live event streams (default: 16)" }
      p:set_defaults{ handler = cmd_serve }
    end })
end

return M
