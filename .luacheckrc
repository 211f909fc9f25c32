-- luacheck configuration (make lint).
std = "lua54"
codes = true
max_line_length = 120
exclude_files = { "build/" }
files["tests"] = { std = "+busted" }
