-- agentchat.errors: error values shared by the Lua API and the CLI.
--
-- Expected failures travel as `nil, message, code` (plus the exit code as a
-- fourth value from the C bindings). Raising wrappers and the CLI use error
-- objects: tables {code=, message=, exit=} with a shared metatable whose
-- __tostring gives "CODE: message".
local M = {}

-- Codes whose message the CLI prints without the code, because the Python
-- tool prints exactly that line (docs/format.md 2.1, 2.5).
M.plain = {
  CHANNEL_NOT_FOUND = true,
  CHANNEL_EXISTS = true,
  CHANNEL_INVALID_NAME = true,
  META_UNREADABLE = true,
  SEQ_LOCK_TIMEOUT = true,
  CLAIM_LOST = true,
  CLAIM_INVALID_NAME = true,
  BODY_EMPTY = true,
  BODY_FILE_UNREADABLE = true,
  BODY_STDIN_UNREADABLE = true,
  INTERRUPTED = true,
}

-- Exit codes by code (docs/format.md 2.5); everything else exits 1.
M.exit_codes = {
  CLAIM_LOST = 3,
  INTERRUPTED = 130,
  ETIMEDOUT = 2,
  USAGE = 2,
}

local Error = {}
Error.__index = Error
Error.__name = "agentchat.error"
Error.__tostring = function(e)
  return e.code .. ": " .. e.message
end
-- The host gives the INTERRUPTED error it raises on Ctrl-C this metatable
-- too (src/lua_host.c, lstop), so it prints and tests like any other.
debug.getregistry()[Error.__name] = Error

--- Make an error object.
function M.new(code, message, exit)
  return setmetatable({
    code = code,
    message = message,
    exit = exit or M.exit_codes[code] or 1,
  }, Error)
end

function M.is_error(v)
  return getmetatable(v) == Error
end

--- The exit code for a code (with an optional exit hint from C).
function M.exit_for(code, hint)
  return M.exit_codes[code] or hint or 1
end

--- A message made fit for one line (docs/format.md 2.5: every failure is one
--- stderr line): CR and LF, which only user input can bring in (argparse
--- quotes "unrecognized arguments" verbatim), are written as \r and \n,
--- as Python's repr() writes them.
function M.one_line(message)
  return (string.gsub(tostring(message), "[\r\n]", { ["\r"] = "\\r", ["\n"] = "\\n" }))
end

--- The one stderr line for an error ("agent-chat: [CODE: ]message").
function M.line(code, message)
  message = M.one_line(message)
  if M.plain[code] then
    return "agent-chat: " .. message
  end
  return "agent-chat: " .. code .. ": " .. message
end

--- Return `nil, message, code, exit` (the expected-failure convention).
function M.fail(code, message, exit)
  return nil, message, code, exit or M.exit_codes[code] or 1
end

--- Raise the failure of a `nil, message, code, exit` return as an error object.
function M.raise(message, code, exit)
  error(M.new(code or "ERROR", message or "unknown error", exit), 2)
end

return M
