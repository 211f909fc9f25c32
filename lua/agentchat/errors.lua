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

-- Exit codes by code (docs/format.md 2.5): the C runtime's one table (err.h,
-- ac_err_exit_for: the TASK_/LEASE_/EVENT_/WAIT_/STATUS_ families, USAGE, ETIMEDOUT and
-- RECEIPT_TIMEOUT exit 2, CLAIM_LOST 3, INTERRUPTED 130, the rest 1).
-- exit_codes lists the single codes of that table that do not exit 1.
local ok_sys, sys = pcall(require, "agentchat.sys")
local function table_exit(code)
  return ok_sys and type(code) == "string" and sys.exit_code(code) or 1
end

M.exit_codes = {}
for _, code in ipairs({ "CLAIM_LOST", "INTERRUPTED", "ETIMEDOUT", "USAGE", "RECEIPT_TIMEOUT" }) do
  M.exit_codes[code] = table_exit(code)
end

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
    exit = exit or M.exit_for(code),
  }, Error)
end

function M.is_error(v)
  return getmetatable(v) == Error
end

--- The exit code for a code (with an optional exit hint from C): the
--- table's when it says other than 1, else the hint, else 1.
function M.exit_for(code, hint)
  local e = table_exit(code)
  if e ~= 1 then
    return e
  end
  return hint or 1
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
  return nil, message, code, exit or M.exit_for(code)
end

--- Raise the failure of a `nil, message, code, exit` return as an error object.
function M.raise(message, code, exit)
  error(M.new(code or "ERROR", message or "unknown error", exit), 2)
end

return M
