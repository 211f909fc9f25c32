-- agentchat.argparse.format: the help and usage text of agentchat.argparse
-- (CPython 3.11's HelpFormatter with its textwrap-based wrapping), loaded
-- the first time a parser formats its usage or help: for -h, and for the
-- usage line of an error. It adds Parser:_format_usage, :format_usage and
-- :format_help (see agentchat.argparse).
local argparse = require "agentchat.argparse"
local pycompat = require "agentchat.pycompat"

local concat, insert = table.concat, table.insert
local repr, ulen = pycompat.repr, pycompat.ulen
local copy_list, extend = argparse._copy_list, argparse._extend
-- The help lines of a subparsers action's commands (none for another action).
local function choices_actions(action)
  return action._choices_actions and require("agentchat.argparse.subparsers").choices_actions(action) or {}
end
local Parser = argparse._Parser

local SUPPRESS = argparse.SUPPRESS
local OPTIONAL, ZERO_OR_MORE, ONE_OR_MORE = "?", "*", "+"
local REMAINDER, PARSER = "...", "A..."

local M = argparse

-- Width of the help formatter: shutil.get_terminal_size().columns - 2.
local function formatter_width(parser)
  local columns = parser.columns
  if not columns then
    local env = os.getenv("COLUMNS")
    columns = env and pycompat.int_parse(env)
    if not columns or columns <= 0 then
      columns = M.columns or 80
    end
  end
  return columns - 2
end

-- Python's str() of a value in help text (%(default)s and friends).
local function py_str(v)
  if type(v) == "function" then
    return "function"
  end
  return pycompat.str(v)
end

-- A subset of Python's "%" operator with a mapping: %(name)s, %(name)r,
-- %(name)d (with optional flags and width) and %%. `known` lists keys
-- that exist with a nil (None) value. Like Python, a missing key or a
-- stray "%" raises.
local function py_format(fmt, params, known)
  local out, i = {}, 1
  while true do
    local j = fmt:find("%", i, true)
    if not j then
      out[#out + 1] = fmt:sub(i)
      break
    end
    out[#out + 1] = fmt:sub(i, j - 1)
    if fmt:sub(j + 1, j + 1) == "%" then
      out[#out + 1] = "%"
      i = j + 2
    else
      local key, flags, width, conv, nxt =
        fmt:match("^%((.-)%)([-#0 +]*)(%d*)([srdi])()", j + 1)
      if not key then
        error(("unsupported format in %q"):format(fmt), 0)
      end
      local v = params[key]
      if v == nil and not (known and known[key]) then
        error(("format refers to unknown key %q"):format(key), 0)
      end
      local s
      if conv == "r" then
        s = repr(v)
      elseif conv == "s" then
        s = py_str(v)
      else
        s = ("%d"):format(math.tointeger(v) or error("%d needs an integer", 0))
      end
      width = tonumber(width)
      if width and ulen(s) < width then
        local pad = (" "):rep(width - ulen(s))
        s = flags:find("-", 1, true) and s .. pad or pad .. s
      end
      out[#out + 1] = s
      i = nxt
    end
  end
  return concat(out)
end

-- ---------------------------------------------------------------------------
-- textwrap.wrap / textwrap.fill for text whose whitespace has already
-- been collapsed to single spaces (HelpFormatter does that first).

local function chars_of(s)
  local t = {}
  for pos, _, nxt in pycompat.codes(s) do
    t[#t + 1] = s:sub(pos, nxt - 1)
  end
  return t
end

-- Character classes of textwrap.TextWrapper.wordsep_re. Non-ASCII
-- characters count as letters, which is right for the scripts we meet.
local function is_letter(c)
  if c == nil then
    return false
  elseif #c > 1 then
    return true
  end
  local b = c:byte()
  return (b >= 65 and b <= 90) or (b >= 97 and b <= 122) or b == 95
end

local function is_word(c)
  if is_letter(c) then
    return true
  end
  local b = c and #c == 1 and c:byte()
  return b and b >= 48 and b <= 57 or false
end

local WORD_PUNCT = { ["!"] = true, ['"'] = true, ["'"] = true, ["&"] = true, ["."] = true,
                     [","] = true, ["?"] = true }

local function is_word_punct(c)
  return c ~= nil and (is_word(c) or WORD_PUNCT[c] == true)
end

-- Does an em-dash (two or more '-' followed by a word character) start
-- at index i of chars?
local function em_dash_at(chars, i)
  local j = i
  while chars[j] == "-" do
    j = j + 1
  end
  return j - i >= 2 and is_word(chars[j]), j
end

-- Split one space-free word into textwrap chunks ("goof-ball" ->
-- "goof-", "ball"), following wordsep_re with break_on_hyphens=True.
local function split_word(chars, first, last, out)
  local p = first
  while p <= last do
    local is_dash, dash_end = em_dash_at(chars, p)
    if p > 1 and is_word_punct(chars[p - 1]) and is_dash then
      out[#out + 1] = concat(chars, "", p, dash_end - 1)
      p = dash_end
    else
      local e = p + 1
      while true do
        local c = chars[e]
        if e > last then
          out[#out + 1] = concat(chars, "", p, last)
          p = last + 1
          break
        elseif c == "-" and ((is_letter(chars[e - 2]) and is_letter(chars[e - 1]))
            or (is_letter(chars[e - 3]) and chars[e - 2] == "-"
              and is_letter(chars[e - 1])))
            and is_letter(chars[e + 1])
            and (is_letter(chars[e + 2])
              or (chars[e + 2] == "-" and is_letter(chars[e + 3]))) then
          out[#out + 1] = concat(chars, "", p, e)
          p = e + 1
          break
        elseif is_word_punct(chars[e - 1]) and em_dash_at(chars, e) then
          out[#out + 1] = concat(chars, "", p, e - 1)
          p = e
          break
        end
        e = e + 1
      end
    end
  end
end

-- The chunks of collapsed text: " " between words, each word split by
-- split_word (a word without '-' is one chunk). split_word looks at most
-- one character before and three after a word, where there is a space or
-- nothing, which it treats alike: so each word is split on its own.
local function split_chunks(text)
  local chunks = {}
  local pos = 1
  while pos <= #text do
    local space = text:find(" ", pos, true)
    local word = text:sub(pos, (space or #text + 1) - 1)
    if word:find("-", 1, true) then
      local chars = chars_of(word)
      split_word(chars, 1, #chars, chunks)
    elseif word ~= "" then
      chunks[#chunks + 1] = word
    end
    if not space then
      break
    end
    chunks[#chunks + 1] = " "
    pos = space + 1
  end
  return chunks
end

-- textwrap.TextWrapper._wrap_chunks with break_long_words and
-- drop_whitespace on.
-- (The chunks are taken from the front, chunks[i]; Python pops them off
-- the end of the reversed list.)
local function wrap(text, width, initial_indent, subsequent_indent)
  initial_indent, subsequent_indent = initial_indent or "", subsequent_indent or ""
  if text ~= "" and text:byte(-1) ~= 32 and ulen(text) <= width - ulen(initial_indent) then
    return { initial_indent .. text }    -- it all fits on the first line
  end
  local chunks = split_chunks(text)
  local i, n = 1, #chunks
  local lines, nlines = {}, 0
  while i <= n do
    local cur, ncur, cur_len = {}, 0, 0
    local indent = nlines > 0 and subsequent_indent or initial_indent
    local w = width - ulen(indent)
    if chunks[i] == " " and nlines > 0 then
      i = i + 1
    end
    while i <= n do
      local l = ulen(chunks[i])
      if cur_len + l <= w then
        ncur = ncur + 1
        cur[ncur] = chunks[i]
        i = i + 1
        cur_len = cur_len + l
      else
        break
      end
    end
    if i <= n and ulen(chunks[i]) > w then
      -- _handle_long_word
      local space_left = w < 1 and 1 or w - cur_len
      local chunk = chars_of(chunks[i])
      local cut = space_left
      if #chunk > space_left then
        local hyphen
        for k = space_left, 1, -1 do
          if chunk[k] == "-" then
            hyphen = k - 1
            break
          end
        end
        if hyphen and hyphen > 0 then
          for k = 1, hyphen do
            if chunk[k] ~= "-" then
              cut = hyphen + 1
              break
            end
          end
        end
      end
      ncur = ncur + 1
      cur[ncur] = concat(chunk, "", 1, cut)
      chunks[i] = concat(chunk, "", cut + 1)
    end
    if cur[ncur] == " " then
      cur[ncur] = nil
      ncur = ncur - 1
    end
    if ncur > 0 then
      nlines = nlines + 1
      lines[nlines] = indent .. concat(cur)
    end
  end
  return lines
end

-- HelpFormatter._whitespace_matcher ('\s+' with re.ASCII) then strip().
local function collapse(text)
  local find = string.find
  if find(text, "  ", 1, true) or find(text, "\n", 1, true) or find(text, "\t", 1, true)
      or find(text, "\r", 1, true) or find(text, "\f", 1, true) or find(text, "\v", 1, true) then
    text = text:gsub("[ \t\n\r\f\v]+", " ")
  end
  return pycompat.strip(text)
end

-- Keys of an action that %(...)s in its help may name.
local HELP_KEYS = { option_strings = true, dest = true, nargs = true,
  const = true, default = true, type = true, choices = true, required = true,
  help = true, metavar = true, prog = true }

-- ---------------------------------------------------------------------------
-- Help formatting (HelpFormatter)

local function metavar_of(action, default_metavar, size)
  local result
  if action.metavar ~= nil then
    result = action.metavar
  elseif action.choices ~= nil then
    local strs = {}
    for i, c in ipairs(action.choices) do
      strs[i] = py_str(c)
    end
    result = "{" .. concat(strs, ",") .. "}"
  else
    result = default_metavar
  end
  if type(result) == "table" then
    return result
  end
  local t = {}
  for i = 1, size do
    t[i] = result
  end
  return t
end

-- _format_args
local function format_args(action, default_metavar)
  local nargs = action.nargs
  if nargs == nil then
    return metavar_of(action, default_metavar, 1)[1]
  elseif nargs == OPTIONAL then
    return ("[%s]"):format(metavar_of(action, default_metavar, 1)[1])
  elseif nargs == ZERO_OR_MORE then
    local mv = metavar_of(action, default_metavar, 1)
    if #mv == 2 then
      return ("[%s [%s ...]]"):format(mv[1], mv[2])
    end
    return ("[%s ...]"):format(mv[1])
  elseif nargs == ONE_OR_MORE then
    local mv = metavar_of(action, default_metavar, 2)
    return ("%s [%s ...]"):format(mv[1], mv[2])
  elseif nargs == REMAINDER then
    return "..."
  elseif nargs == PARSER then
    return ("%s ..."):format(metavar_of(action, default_metavar, 1)[1])
  elseif nargs == SUPPRESS then
    return ""
  end
  return concat(metavar_of(action, default_metavar, nargs), " ", 1, nargs)
end

local function default_optional_metavar(action)
  return action.dest:upper()
end

-- _format_actions_usage (no mutually exclusive groups)
local function format_actions_usage(actions)
  local parts = {}
  for _, action in ipairs(actions) do
    if action.help ~= SUPPRESS then
      if #action.option_strings == 0 then
        parts[#parts + 1] = format_args(action, action.dest)
      else
        local part = action.option_strings[1]
        if action.nargs ~= 0 then
          part = part .. " " .. format_args(action, default_optional_metavar(action))
        end
        if not action.required then
          part = "[" .. part .. "]"
        end
        parts[#parts + 1] = part
      end
    end
  end
  local text = concat(parts, " ")
  text = text:gsub("([%[%(]) ", "%1"):gsub(" ([%]%)])", "%1")
    :gsub("[%[%(] *[%]%)]", "")
  return pycompat.strip(text)
end

-- re.findall(r'\(.*?\)+(?=\s|$)|\[.*?\]+(?=\s|$)|\S+', text)
local function usage_parts(text)
  local parts = {}
  local i, n = 1, #text
  local function is_ws(c)
    return c == "" or c:match("^[ \t\n\r\f\v]$") ~= nil
  end
  while i <= n do
    local c = text:sub(i, i)
    if is_ws(c) then
      i = i + 1
    else
      local stop
      local close = (c == "(" and ")") or (c == "[" and "]") or nil
      if close then
        local k = i + 1
        while k <= n and text:sub(k, k) ~= "\n" do
          if text:sub(k, k) == close then
            local r = k
            while text:sub(r + 1, r + 1) == close do
              r = r + 1
            end
            if is_ws(text:sub(r + 1, r + 1)) then
              stop = r
              break
            end
            k = r + 1
          else
            k = k + 1
          end
        end
      end
      if not stop then
        stop = i
        while stop + 1 <= n and not is_ws(text:sub(stop + 1, stop + 1)) do
          stop = stop + 1
        end
      end
      parts[#parts + 1] = text:sub(i, stop)
      i = stop + 1
    end
  end
  return parts
end

-- _format_usage: "usage: ...\n\n"; prefix defaults to "usage: ".
function Parser:_format_usage(actions, width, prefix)
  width = width or formatter_width(self)
  prefix = prefix or "usage: "
  local prog = self.prog
  local usage
  if self.usage ~= nil then
    usage = py_format(self.usage, { prog = prog })
  elseif #actions == 0 then
    usage = prog
  else
    local optionals, positionals = {}, {}
    for _, a in ipairs(actions) do
      if #a.option_strings > 0 then
        optionals[#optionals + 1] = a
      else
        positionals[#positionals + 1] = a
      end
    end
    local action_usage = format_actions_usage(extend(copy_list(optionals), positionals))
    usage = action_usage ~= "" and prog .. " " .. action_usage or prog
    local text_width = width
    if ulen(prefix) + ulen(usage) > text_width then
      local opt_parts = usage_parts(format_actions_usage(optionals))
      local pos_parts = usage_parts(format_actions_usage(positionals))
      local function get_lines(parts, indent, pfx)
        local lines, line = {}, {}
        local line_len = (pfx and ulen(pfx) or ulen(indent)) - 1
        for _, part in ipairs(parts) do
          if line_len + 1 + ulen(part) > text_width and #line > 0 then
            lines[#lines + 1] = indent .. concat(line, " ")
            line = {}
            line_len = ulen(indent) - 1
          end
          line[#line + 1] = part
          line_len = line_len + ulen(part) + 1
        end
        if #line > 0 then
          lines[#lines + 1] = indent .. concat(line, " ")
        end
        if pfx then
          lines[1] = lines[1]:sub(#indent + 1)
        end
        return lines
      end
      local lines
      if ulen(prefix) + ulen(prog) <= 0.75 * text_width then
        local indent = (" "):rep(ulen(prefix) + ulen(prog) + 1)
        if #opt_parts > 0 then
          lines = get_lines(extend({ prog }, opt_parts), indent, prefix)
          extend(lines, get_lines(pos_parts, indent))
        elseif #pos_parts > 0 then
          lines = get_lines(extend({ prog }, pos_parts), indent, prefix)
        else
          lines = { prog }
        end
      else
        local indent = (" "):rep(ulen(prefix))
        lines = get_lines(extend(copy_list(opt_parts), pos_parts), indent)
        if #lines > 1 then
          lines = extend(get_lines(opt_parts, indent), get_lines(pos_parts, indent))
        end
        insert(lines, 1, prog)
      end
      usage = concat(lines, "\n")
    end
  end
  return prefix .. usage .. "\n\n"
end

-- HelpFormatter.format_help() post-processing.
local function finish_help(text)
  if text:find("\n\n\n", 1, true) then
    -- Each run of three newlines or more becomes two (with plain finds:
    -- a pattern is tried at every byte of the text).
    local out, pos = {}, 1
    while true do
      local run = text:find("\n\n\n", pos, true)
      if not run then
        out[#out + 1] = text:sub(pos)
        break
      end
      out[#out + 1] = text:sub(pos, run + 1)
      pos = run + 2
      while text:byte(pos) == 10 do
        pos = pos + 1
      end
    end
    text = concat(out)
  end
  local first, last = 1, #text
  while text:byte(first) == 10 do
    first = first + 1
  end
  while last >= first and text:byte(last) == 10 do
    last = last - 1
  end
  return text:sub(first, last) .. "\n"
end

--- format_usage(): "usage: ...\n" (empty if usage is argparse.SUPPRESS).
function Parser:format_usage()
  self:_ensure_built()
  if self.usage == SUPPRESS then
    return ""
  end
  return finish_help(self:_format_usage(self._actions, formatter_width(self)))
end

-- _format_text: description, epilog and group descriptions.
local function format_text(text, prog, width, indent)
  if text:find("%(prog)", 1, true) then
    text = py_format(text, { prog = prog })
  end
  local text_width = math.max(width - indent, 11)
  local pad = (" "):rep(indent)
  return concat(wrap(collapse(text), text_width, pad, pad), "\n") .. "\n\n"
end

-- _format_action_invocation
local function invocation(action)
  if #action.option_strings == 0 then
    return metavar_of(action, action.dest, 1)[1]
  elseif action.nargs == 0 then
    return concat(action.option_strings, ", ")
  end
  local args = format_args(action, default_optional_metavar(action))
  local parts = {}
  for i, s in ipairs(action.option_strings) do
    parts[i] = s .. " " .. args
  end
  return concat(parts, ", ")
end

-- _expand_help
local function expand_help(action, prog)
  if not action.help:find("%", 1, true) then
    return action.help       -- Python's % leaves a text without % as it is
  end
  local params = {}
  for key in pairs(HELP_KEYS) do
    local v = action[key]
    if v ~= SUPPRESS then
      params[key] = v
    end
  end
  params.prog = prog
  local known = {}
  for key in pairs(HELP_KEYS) do
    known[key] = action[key] ~= SUPPRESS
  end
  if type(params.type) == "function" then
    params.type = action.type_name or "function"
  end
  if params.choices ~= nil then
    local strs = {}
    for i, c in ipairs(params.choices) do
      strs[i] = py_str(c)
    end
    params.choices = concat(strs, ", ")
  end
  return py_format(action.help, params, known)
end

--- format_help(): the full help text, ending in "\n".
function Parser:format_help()
  self:_ensure_built()
  local width = formatter_width(self)
  local max_help_position = math.min(24, math.max(width - 20, 4))
  local out = {}
  if self.usage ~= SUPPRESS then
    out[#out + 1] = self:_format_usage(self._actions, width)
  end
  if self.description ~= nil and self.description ~= SUPPRESS then
    out[#out + 1] = format_text(self.description, self.prog, width, 0)
  end

  -- add_argument(): longest invocation, measured at the section indent.
  local action_max_length = 0
  for _, group in ipairs(self._groups) do
    for _, action in ipairs(group.actions) do
      if action.help ~= SUPPRESS then
        local len = ulen(invocation(action))
        for _, sub in ipairs(choices_actions(action)) do
          len = math.max(len, ulen(invocation(sub)))
        end
        action_max_length = math.max(action_max_length, len + 2)
      end
    end
  end
  local help_position = math.min(action_max_length + 2, max_help_position)
  local help_width = math.max(width - help_position, 11)

  local function format_action(action, indent)
    local action_width = help_position - indent - 2
    local header = invocation(action)
    local parts = {}
    local indent_first = 0
    local help = action.help
    if help == nil or help == "" then
      parts[1] = (" "):rep(indent) .. header .. "\n"
    elseif ulen(header) <= action_width then
      parts[1] = (" "):rep(indent) .. header
        .. (" "):rep(action_width - ulen(header)) .. "  "
    else
      parts[1] = (" "):rep(indent) .. header .. "\n"
      indent_first = help_position
    end
    if help ~= nil and pycompat.strip(help) ~= "" then
      local text = expand_help(action, self.prog)
      if text ~= "" then
        local lines = wrap(collapse(text), help_width)
        if #lines == 0 then
          lines = { "" }
        end
        parts[#parts + 1] = (" "):rep(indent_first) .. lines[1] .. "\n"
        for i = 2, #lines do
          parts[#parts + 1] = (" "):rep(help_position) .. lines[i] .. "\n"
        end
      end
    elseif parts[1]:sub(-1) ~= "\n" then
      parts[#parts + 1] = "\n"
    end
    for _, sub in ipairs(choices_actions(action)) do
      parts[#parts + 1] = format_action(sub, indent + 2)
    end
    return concat(parts)
  end

  for _, group in ipairs(self._groups) do
    local items = {}
    if group.description ~= nil and group.description ~= SUPPRESS then
      items[#items + 1] = format_text(group.description, self.prog, width, 2)
    end
    for _, action in ipairs(group.actions) do
      if action.help ~= SUPPRESS then
        items[#items + 1] = format_action(action, 2)
      end
    end
    local body = concat(items)
    if body ~= "" then
      out[#out + 1] = "\n" .. group.title .. ":\n" .. body .. "\n"
    end
  end
  if self.epilog ~= nil and self.epilog ~= SUPPRESS then
    out[#out + 1] = format_text(self.epilog, self.prog, width, 0)
  end
  return finish_help(concat(out))
end
