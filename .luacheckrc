-- luacheck configuration (make lint).
std = "lua54"
codes = true
max_line_length = 120
exclude_files = { "build/" }
files["tests"] = { std = "+busted" }
-- State templates run in the sandbox, which provides `null` (JSON null).
files["examples/state-*.lua"] = { read_globals = { "null" } }
