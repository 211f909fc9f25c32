-- agentchat.pretty: readable, bounded rendering of Lua values (the REPL
-- prints results with it; scripts may use it too).
--
--   local pretty = require "agentchat.pretty"
--   print(pretty.format({ b = 1, a = { "x", "y" } }))   --> { a = { "x", "y" }, b = 1 }
--
-- pretty.format(value [, opts]) -> string
--   Tables: the array part 1..n first, then the other keys sorted (numbers,
--   then strings, then booleans, then the rest by tostring); a table that
--   fits in `width` columns stays on one line, otherwise one entry per line
--   indented by two spaces. Strings are quoted with Lua escapes (invalid
--   UTF-8 bytes as \ddd). JSON null (json.null, cjson.null) prints `null`.
--   A table with a __tostring metamethod (roots, channels, error objects)
--   prints as tostring does.
--   Limits, all in opts (defaults in pretty.defaults):
--     depth   nesting shown; deeper tables print as {...}            (6)
--     items   entries shown per table, then "... (N more)"          (100)
--     string  bytes shown per string, then ...(+N bytes)            (400)
--     width   columns for the one-line form                          (80)
--     budget  values rendered in total before "..." (huge inputs)  (5000)
--   A table met again inside itself prints as <cycle>; a table shared by
--   two branches prints in both.
-- pretty.quote(s [, max]) -> the string literal alone.
local M = {}

M.defaults = { depth = 6, items = 100, string = 400, width = 80, budget = 5000 }

local KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local
  nil not or repeat return then true until while]]):gmatch("%a+") do
  KEYWORDS[w] = true
end
M.keywords = KEYWORDS

local function is_null(v)
  if type(v) ~= "userdata" then
    return false
  end
  local json = package.loaded["agentchat.json"]
  if json and v == json.null then
    return true
  end
  local cjson = package.loaded["cjson"]
  return cjson ~= nil and v == cjson.null
end

local ESCAPES = { ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r", ["\\"] = "\\\\", ['"'] = '\\"',
                  ["\a"] = "\\a", ["\b"] = "\\b", ["\f"] = "\\f", ["\v"] = "\\v" }

local function escape_char(c)
  return ESCAPES[c] or string.format("\\%03d", c:byte())
end

--- A double-quoted Lua literal for `s`, cut after `max` bytes (at a UTF-8
--- character boundary) with a note of how much was left out.
function M.quote(s, max)
  local rest = 0
  if max and #s > max then
    local cut = max
    -- Do not split a UTF-8 sequence: back up over continuation bytes.
    while cut > 0 and (s:byte(cut + 1) or 0) & 0xC0 == 0x80 do
      cut = cut - 1
    end
    rest = #s - cut
    s = s:sub(1, cut)
  end
  local body
  if utf8.len(s) then
    body = s:gsub('[%c"\\]', escape_char)
  else
    body = s:gsub('[%c"\\\128-\255]', escape_char)
  end
  if rest > 0 then
    return '"' .. body .. '"...(+' .. rest .. " bytes)"
  end
  return '"' .. body .. '"'
end

local function number_repr(n)
  if n ~= n then
    return "0/0"
  elseif n == math.huge then
    return "math.huge"
  elseif n == -math.huge then
    return "-math.huge"
  end
  return tostring(n)
end

-- Sort order of keys: numbers, strings, booleans, anything else.
local RANK = { number = 1, string = 2, boolean = 3 }

local function key_less(a, b)
  local ta, tb = type(a), type(b)
  local ra, rb = RANK[ta] or 4, RANK[tb] or 4
  if ra ~= rb then
    return ra < rb
  end
  if ta == "number" or ta == "string" then
    return a < b
  end
  if ta == "boolean" then
    return (not a) and b
  end
  return tostring(a) < tostring(b)
end

local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__tostring") ~= nil
end

local render

local function key_repr(k, st)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") and not KEYWORDS[k] then
    return k
  end
  return "[" .. render(k, 0, 0, st) .. "]"
end

-- st: {opts, path = {tables on the current branch}, budget = n}
render = function(v, indent, depth, st)
  local t = type(v)
  if t == "string" then
    return M.quote(v, st.opts.string)
  elseif t == "number" then
    return number_repr(v)
  elseif t ~= "table" then
    if is_null(v) then
      return "null"
    end
    return tostring(v)
  end
  if has_tostring(v) then
    local ok, s = pcall(tostring, v)
    return ok and s or "<__tostring failed: " .. tostring(s) .. ">"
  end
  if st.path[v] then
    return "<cycle>"
  end
  if next(v) == nil then
    return "{}"
  end
  if depth >= st.opts.depth or st.budget <= 0 then
    return "{...}"
  end

  -- Entries: the array part, then the other keys sorted.
  local n = 0
  while rawget(v, n + 1) ~= nil do
    n = n + 1
  end
  local keys = {}
  for k in next, v do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then
      keys[#keys + 1] = k
    end
  end
  table.sort(keys, key_less)

  st.path[v] = true
  local items, total, max = {}, n + #keys, st.opts.items
  local shown = 0
  for i = 1, total do
    if shown >= max or st.budget <= 0 then
      break
    end
    st.budget = st.budget - 1
    shown = shown + 1
    if i <= n then
      items[shown] = render(rawget(v, i), indent + 2, depth + 1, st)
    else
      local k = keys[i - n]
      items[shown] = key_repr(k, st) .. " = " .. render(rawget(v, k), indent + 2, depth + 1, st)
    end
  end
  st.path[v] = nil
  if shown < total then
    items[#items + 1] = "... (" .. (total - shown) .. " more)"
  end

  local one = "{ " .. table.concat(items, ", ") .. " }"
  if not one:find("\n", 1, true) and indent + #one <= st.opts.width then
    return one
  end
  local pad = string.rep(" ", indent + 2)
  return "{\n" .. pad .. table.concat(items, ",\n" .. pad) .. "\n" .. string.rep(" ", indent) .. "}"
end

--- Render `v` (see the header for opts).
function M.format(v, opts)
  local o = {}
  for k, d in pairs(M.defaults) do
    local x = opts and opts[k]
    o[k] = x ~= nil and x or d
  end
  return render(v, 0, 0, { opts = o, path = {}, budget = o.budget })
end

return M
