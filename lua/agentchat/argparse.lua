--- agentchat.argparse: Python 3.11 argparse semantics in pure Lua 5.4.
--
-- The command line of agent-chat must accept exactly the argv that the
-- Python tool accepts and reject the rest with the same messages, so this
-- is a port of the parsing half of CPython 3.11's Lib/argparse.py rather
-- than a new design: the pattern string of 'O' (option), 'A' (argument)
-- and '-' ('--') characters, the greedy regex matching of nargs patterns,
-- prefix abbreviations, the negative-number rule, parse_known_args for
-- subcommands and the order in which errors are detected all follow the
-- Python code. The help formatter is ported too (HelpFormatter with its
-- textwrap-based wrapping), so usage lines in error messages match; it is
-- in agentchat.argparse.format, loaded the first time a parser formats its
-- usage or help.
--
-- Usage:
--
--   local argparse = require "agentchat.argparse"
--   local p = argparse.parser{prog = "agent-chat", description = "..."}
--   p:option{"--root", metavar = "DIR", help = "..."}
--   local sub = p:subparsers{dest = "command", metavar = "COMMAND",
--                            required = true}
--   local post = sub:parser("post", {help = "post a message"})
--   post:positional{"channel"}
--   post:option{"--from", required = true}
--   post:option{"--reply", type = "int"}
--   local args, err = p:parse(argv)   -- argv without the program name
--   if not args then
--     io.stderr:write(argparse.format_error(err))   -- or err.text for help
--   end
--
-- Errors are values, not exceptions: parse() returns nil and a table
--
--   {kind = "error", message = "the following arguments are required: x",
--    parser = <parser that raised it>, prog = "agent-chat post",
--    usage = "usage: agent-chat post [-h] ..."}   -- no trailing newline
--
-- or, for -h/--help, {kind = "help", text = "<help ending in \n>",
-- parser = ..., prog = ...}. Both have a __tostring giving the text
-- Python prints. Misuse of the definition API (bad option names, unknown
-- actions, conflicting option strings) raises a Lua error instead.
--
-- API (Python name in brackets):
--   argparse.parser(opts) -> parser               [ArgumentParser()]
--   parser:option(spec) / :positional(spec) /
--     :argument(spec) -> action                   [add_argument()]
--   parser:subparsers(spec) -> sub                [add_subparsers()]
--   sub:parser(name, opts) -> parser              [add_parser()]
--   sub:lazy(name, opts)                          (add_parser(), the parser
--                                                  made when first named)
--   parser:set_defaults(tbl)                      [set_defaults()]
--   parser:parse(argv) -> args | nil, err         [parse_args()]
--   parser:parse_known(argv) -> args, extras | nil, err
--                                                 [parse_known_args()]
--   parser:make_error(msg) -> err                 [error(), as a value]
--   parser:format_usage(), parser:format_help()   (Python's text)
--   argparse.format_error(err) -> text            (what Python prints)
--   parser.name (= parser.prog), parser.tag (free for the caller),
--   parser.parent (the parser whose subcommand this is, or nil)
-- Help and usage are wrapped for a terminal of `columns` (parser field),
-- else $COLUMNS, else argparse.columns, else 80 columns, like Python.
--
-- Not reproduced: mutually exclusive groups, argument groups other than
-- the subparsers title group, prefix_chars other than "-",
-- fromfile_prefix_chars, the version action, parse_intermixed_args,
-- conflict_handler="resolve", and int() of values beyond 64 bits (Python
-- accepts them; here they are "invalid int value").
local pycompat = require("agentchat.lazy")("agentchat.pycompat")

local concat, remove = table.concat, table.remove

local function repr(v)
  return pycompat.repr(v)
end

local M = {}

--- Python's argparse.SUPPRESS: as a default, leave the dest unset; as
-- help, hide the argument. It is the same string as in Python.
M.SUPPRESS = "==SUPPRESS=="
local SUPPRESS = M.SUPPRESS

--- nargs values with Python's spelling.
M.OPTIONAL, M.ZERO_OR_MORE, M.ONE_OR_MORE = "?", "*", "+"
M.REMAINDER, M.PARSER = "...", "A..."
local OPTIONAL, ZERO_OR_MORE, ONE_OR_MORE = "?", "*", "+"
local REMAINDER, PARSER = "...", "A..."

--- Terminal width used for help and usage when neither the parser's
-- `columns` field nor $COLUMNS says otherwise. Python asks the terminal
-- on stdout and falls back to 80; the host may store the real width here.
M.columns = nil

local Parser = {}
Parser.__index = Parser


-- Errors and help requests unwind the parse with error(); this metatable
-- tells them apart from genuine Lua errors, which are re-raised.
local Result = {}
Result.__index = Result

--- Text Python prints for an error (usage, then "prog: error: msg") or
-- the help text for a help request.
function M.format_error(err)
  if err.kind == "help" then
    return err.text
  end
  local usage = err.usage ~= "" and err.usage .. "\n" or ""
  return usage .. err.prog .. ": error: " .. err.message .. "\n"
end

Result.__tostring = M.format_error

-- ---------------------------------------------------------------------------
-- Small helpers

local function copy_list(t)
  local r = {}
  for i = 1, #t do
    r[i] = t[i]
  end
  return r
end

local function extend(t, items)
  for i = 1, #items do
    t[#t + 1] = items[i]
  end
  return t
end

local function starts_with(s, prefix)
  return s:sub(1, #prefix) == prefix
end

-- _negative_number_matcher: ^-\d+$|^-\d*\.\d+$ where \d is any Unicode
-- decimal digit and $ also matches before one final newline.
local function looks_negative(s)
  if s:sub(-1) == "\n" then
    s = s:sub(1, -2)
  end
  if s:sub(1, 1) ~= "-" then
    return false
  end
  -- What follows the '-' must start with '.' or a digit; only a non-ASCII
  -- byte can begin a digit other than 0-9 (every option string passes here).
  local c = s:byte(2)
  if c and c < 0x80 and c ~= 0x2e and (c < 0x30 or c > 0x39) then
    return false
  end
  local before, after, dot = 0, 0, false
  for pos, cp in pycompat.codes(s) do
    if pos > 1 then
      if cp == 0x2e and not dot then
        dot = true
      elseif pycompat.decimal_value(cp) then
        if dot then
          after = after + 1
        else
          before = before + 1
        end
      else
        return false
      end
    end
  end
  if dot then
    return after > 0
  end
  return before > 0
end

-- ---------------------------------------------------------------------------
-- Actions

local ZERO_ARG = { store_const = true, store_true = true, store_false = true,
  append_const = true, count = true, help = true }
local KNOWN_ACTIONS = { store = true, append = true, extend = true }
for k in pairs(ZERO_ARG) do
  KNOWN_ACTIONS[k] = true
end

-- _get_action_name
local function action_name(action)
  if action == nil then
    return nil
  elseif #action.option_strings > 0 then
    return concat(action.option_strings, "/")
  elseif action.metavar ~= nil and action.metavar ~= SUPPRESS then
    return type(action.metavar) == "table" and repr(action.metavar)
      or action.metavar
  elseif action.dest ~= nil and action.dest ~= SUPPRESS then
    return action.dest
  elseif action.choices then
    return "{" .. concat(action.choices, ",") .. "}"
  end
  return nil
end

local function check_type(t)
  if not (t == nil or t == "string" or t == "str" or t == "int"
      or t == "float" or type(t) == "function") then
    error(("unknown type %s"):format(tostring(t)), 3)
  end
end

local function check_nargs(nargs)
  if nargs == nil or nargs == OPTIONAL or nargs == ZERO_OR_MORE
      or nargs == ONE_OR_MORE or nargs == REMAINDER or nargs == PARSER
      or nargs == SUPPRESS or (math.type(nargs) == "integer" and nargs > 0) then
    return
  end
  error(("invalid nargs value %s"):format(tostring(nargs)), 3)
end

-- ---------------------------------------------------------------------------
-- Parser construction

--- Create a parser. Fields of opts: prog (default: basename of arg[0]),
-- description, epilog, usage (a "%(prog)s" template), add_help (default
-- true), allow_abbrev (default true), columns (terminal width for help;
-- default $COLUMNS, then argparse.columns, then 80), tag (free for the
-- caller).
function M.parser(opts)
  opts = opts or {}
  local prog = opts.prog or opts.name
  if prog == nil then
    local arg = rawget(_G, "arg")
    prog = arg and arg[0] and tostring(arg[0]):match("[^/]*$") or "lua"
  end
  local self = setmetatable({
    name = prog,
    prog = prog,
    usage = opts.usage,
    description = opts.description,
    epilog = opts.epilog,
    add_help = opts.add_help ~= false,
    allow_abbrev = opts.allow_abbrev ~= false,
    columns = opts.columns,
    tag = opts.tag,
    parent = opts.parent,
  }, Parser)
  if opts._deferred then
    -- A subcommand with a `build`: its tables are made on first use too
    -- (Parser:_ensure_built), so defining thirty subcommands costs little.
    self._deferred = true
  else
    self:_init()
  end
  return self
end

-- Make the tables of a deferred parser (its build still to run).
function Parser:_ready()
  if self._deferred then
    self._deferred = nil
    self:_init()
  end
end

-- The tables of a new parser and its -h/--help action.
function Parser:_init()
  self._actions = {}
  self._option_map = {}
  self._option_order = {}
  self._groups = {}
  self._defaults = {}
  self._has_negative_number_optionals = false
  self._positionals = self:_add_group("positional arguments")
  self._optionals = self:_add_group("options")
  if self.add_help then
    self:_add_action({
      kind = "help", option_strings = { "-h", "--help" }, dest = SUPPRESS,
      default = SUPPRESS, nargs = 0, help = "show this help message and exit",
    })
  end
end

function Parser:_add_group(title, description)
  local group = { title = title, description = description, actions = {} }
  self._groups[#self._groups + 1] = group
  return group
end

function Parser:_add_action(action, group)
  for _, s in ipairs(action.option_strings) do
    if self._option_map[s] then
      error(("argument %s: conflicting option string: %s")
        :format(concat(action.option_strings, "/"), s), 3)
    end
  end
  self._actions[#self._actions + 1] = action
  for _, s in ipairs(action.option_strings) do
    self._option_map[s] = action
    self._option_order[#self._option_order + 1] = s
    if looks_negative(s) then
      self._has_negative_number_optionals = true
    end
  end
  group = group or (#action.option_strings > 0 and self._optionals
    or self._positionals)
  group.actions[#group.actions + 1] = action
  return action
end

-- Fill in the fields shared by options and positionals.
function Parser:_finish_action(spec, action)
  local kind = spec.action or "store"
  if not KNOWN_ACTIONS[kind] then
    error(("unknown action %q"):format(tostring(kind)), 3)
  end
  check_type(spec.type)
  action.kind = kind
  action.type = spec.type
  action.type_name = spec.type_name
  action.choices = spec.choices
  action.help = spec.help
  action.metavar = spec.metavar
  action.const = spec.const
  action.default = spec.default
  if ZERO_ARG[kind] then
    if spec.nargs ~= nil then
      error(("nargs is not allowed with action %q"):format(kind), 3)
    end
    action.nargs = 0
    if kind == "store_true" or kind == "store_false" then
      action.const = kind == "store_true"
      if action.default == nil then
        action.default = not action.const
      end
    end
  else
    check_nargs(spec.nargs)
    action.nargs = spec.nargs
  end
  if action.default == nil and self._defaults[action.dest] ~= nil then
    action.default = self._defaults[action.dest]
  end
  if action.choices ~= nil and type(action.choices) ~= "table" then
    error("choices must be a list", 3)
  end
  return action
end

--- Add an optional argument (add_argument("-x", "--long", ...)).
-- spec: option strings in the array part, then any of dest, metavar,
-- required, help, type ("string" | "int" | "float" | function(s) ->
-- value | nil, type_name_or_{message=...}), type_name (name used in
-- "invalid <name> value" for function types), default, choices (list),
-- action ("store" | "store_true" | "store_false" | "store_const" |
-- "append" | "append_const" | "extend" | "count"), nargs, const, abbrev
-- (false: the option is only recognised when spelled in full, an
-- extension: an option added to a command that Python's parser lacked
-- must not make an abbreviation that used to be unique ambiguous, e.g.
-- post's --re for --reply once --request-id exists).
-- Returns the action table.
function Parser:option(spec)
  self:_ready()
  if #spec == 0 then
    error("option needs at least one option string", 2)
  end
  local strings, long = {}, nil
  for i, s in ipairs(spec) do
    if type(s) ~= "string" or s:sub(1, 1) ~= "-" then
      error(("invalid option string %s: must start with a character '-'")
        :format(repr(tostring(s))), 2)
    end
    strings[i] = s
    if not long and #s > 1 and s:sub(2, 2) == "-" then
      long = s
    end
  end
  local dest = spec.dest
  if dest == nil then
    dest = (long or strings[1]):gsub("^%-+", ""):gsub("%-", "_")
    if dest == "" then
      error(("dest= is required for options like %s"):format(repr(strings[1])), 2)
    end
  end
  local action = self:_finish_action(spec, {
    option_strings = strings, dest = dest, required = spec.required == true,
  })
  action.abbrev = spec.abbrev ~= false
  return self:_add_action(action)
end

--- Add a positional argument (add_argument("name", ...)).
-- spec: the name (= dest) in spec[1], then help, metavar, type,
-- type_name, choices, default, nargs (nil | "?" | "*" | "+" | integer |
-- argparse.REMAINDER), action ("store" | "append" | "extend").
function Parser:positional(spec)
  self:_ready()
  local name = spec[1]
  if #spec ~= 1 or type(name) ~= "string" or name:sub(1, 1) == "-" then
    error("positional needs exactly one name not starting with '-'", 2)
  end
  if spec.dest ~= nil then
    error("dest supplied twice for positional argument", 2)
  end
  if spec.required ~= nil then
    error("'required' is an invalid argument for positionals", 2)
  end
  local required = true
  if spec.nargs == OPTIONAL
      or (spec.nargs == ZERO_OR_MORE and spec.default ~= nil) then
    required = false
  end
  local action = self:_finish_action(spec, {
    option_strings = {}, dest = name, required = required,
  })
  if action.nargs == 0 then
    error("positional arguments must take at least one value", 2)
  end
  return self:_add_action(action)
end

--- add_argument() style: dispatches on the first name.
function Parser:argument(spec)
  if type(spec[1]) == "string" and spec[1]:sub(1, 1) == "-" then
    return self:option(spec)
  end
  return self:positional(spec)
end

--- set_defaults(): values for dests that no argument sets (e.g. a
-- handler function per subcommand); also replaces action defaults.
function Parser:set_defaults(defaults)
  self:_ready()
  for k, v in pairs(defaults) do
    self._defaults[k] = v
  end
  for _, action in ipairs(self._actions) do
    if defaults[action.dest] ~= nil then
      action.default = defaults[action.dest]
    end
  end
end

--- add_subparsers(). spec fields: dest (default: not stored), metavar,
-- required (default false), help, title and description (put the
-- subcommands in their own help section), prog (prefix of the
-- subparsers' prog; default: this parser's prog and its positionals).
-- Returns an object whose :parser(name, opts) adds a subcommand (see
-- agentchat.argparse.subparsers, loaded by the first call: most command
-- lines have no subcommands of subcommands).
function Parser:subparsers(spec)
  return require("agentchat.argparse.subparsers").add(self, spec)
end

function Parser:_get_positional_actions()
  local r = {}
  for _, a in ipairs(self._actions) do
    if #a.option_strings == 0 then
      r[#r + 1] = a
    end
  end
  return r
end

-- ---------------------------------------------------------------------------
-- Errors

local function new_result(t)
  return setmetatable(t, Result)
end

--- The error table for `message` raised by this parser (what
-- parser.error(message) prints in Python). Useful for checks done after
-- parsing that should look like argparse errors.
function Parser:make_error(message)
  local usage = self:format_usage():gsub("\n$", "")
  return new_result{ kind = "error", message = message, parser = self,
    prog = self.prog, usage = usage }
end

function Parser:_error(message)
  error(self:make_error(message), 0)
end

-- ArgumentError(action, message) caught by parse_known_args.
function Parser:_arg_error(action, message)
  local name = action_name(action)
  if name ~= nil then
    message = "argument " .. name .. ": " .. message
  end
  self:_error(message)
end

-- ---------------------------------------------------------------------------
-- Pattern matching: a tiny greedy backtracking matcher for the regexes
-- built by _get_nargs_pattern. A pattern is a list of groups; a group is
-- a list of atoms {set = {A=true, ...}, min = n, max = n|nil}.

local function atom(chars, min, max)
  local set = {}
  for c in chars:gmatch(".") do
    set[c] = true
  end
  return { set = set, min = min, max = max }
end

-- _get_nargs_pattern
local function nargs_pattern(action)
  local nargs = action.nargs
  local p
  if nargs == nil then
    p = { atom("-", 0), atom("A", 1, 1), atom("-", 0) }
  elseif nargs == OPTIONAL then
    p = { atom("-", 0), atom("A", 0, 1), atom("-", 0) }
  elseif nargs == ZERO_OR_MORE then
    p = { atom("-", 0), atom("A-", 0) }
  elseif nargs == ONE_OR_MORE then
    p = { atom("-", 0), atom("A", 1, 1), atom("A-", 0) }
  elseif nargs == REMAINDER then
    p = { atom("-AO", 0) }
  elseif nargs == PARSER then
    p = { atom("-", 0), atom("A", 1, 1), atom("-AO", 0) }
  elseif nargs == SUPPRESS then
    p = { atom("-", 0), atom("-", 0) }
  else
    p = { atom("-", 0) }
    for i = 1, nargs do
      if i > 1 then
        p[#p + 1] = atom("-", 0)
      end
      p[#p + 1] = atom("A", 1, 1)
    end
    p[#p + 1] = atom("-", 0)
  end
  -- Options never take '--' (the pattern loses its '-*' parts and '-').
  if #action.option_strings > 0 then
    local q = {}
    for _, a in ipairs(p) do
      if not (a.set["-"] and not a.set.A) then
        a.set["-"] = nil
        q[#q + 1] = a
      end
    end
    p = q
  end
  return p
end

-- re.match of the concatenated groups against the start of s. Returns
-- the length matched by each group, or nil.
local function match_groups(groups, s)
  local atoms, owner = {}, {}
  for g, group in ipairs(groups) do
    for _, a in ipairs(group) do
      atoms[#atoms + 1] = a
      owner[#atoms] = g
    end
  end
  local counts = {}
  local function try(i, pos)
    if i > #atoms then
      return true
    end
    local a = atoms[i]
    local n = 0
    while (a.max == nil or n < a.max) and a.set[s:sub(pos + n, pos + n)] do
      n = n + 1
    end
    for k = n, a.min, -1 do
      counts[i] = k
      if try(i + 1, pos + k) then
        return true
      end
    end
    return false
  end
  if not try(1, 1) then
    return nil
  end
  local lengths = {}
  for g = 1, #groups do
    lengths[g] = 0
  end
  for i = 1, #atoms do
    lengths[owner[i]] = lengths[owner[i]] + counts[i]
  end
  return lengths
end

function Parser:_match_argument(action, pattern)
  local m = match_groups({ nargs_pattern(action) }, pattern)
  if m == nil then
    local nargs = action.nargs
    local msg
    if nargs == nil then
      msg = "expected one argument"
    elseif nargs == OPTIONAL then
      msg = "expected at most one argument"
    elseif nargs == ONE_OR_MORE then
      msg = "expected at least one argument"
    else
      msg = ("expected %s argument%s"):format(tostring(nargs),
        nargs == 1 and "" or "s")
    end
    self:_arg_error(action, msg)
  end
  return m[1]
end

-- Python's method is called on the parser; no parser state is needed.
function Parser._match_arguments_partial(_, actions, pattern)
  for i = #actions, 1, -1 do
    local groups = {}
    for k = 1, i do
      groups[k] = nargs_pattern(actions[k])
    end
    local m = match_groups(groups, pattern)
    if m then
      return m
    end
  end
  return {}
end

-- ---------------------------------------------------------------------------
-- Classifying argument strings

-- _get_option_tuples: options that arg could be an abbreviation of.
function Parser:_get_option_tuples(arg)
  local result = {}
  if arg:sub(2, 2) == "-" then
    if self.allow_abbrev then
      local prefix, explicit = arg, nil
      local eq = arg:find("=", 1, true)
      if eq then
        prefix, explicit = arg:sub(1, eq - 1), arg:sub(eq + 1)
      end
      for _, s in ipairs(self._option_order) do
        local action = self._option_map[s]
        if starts_with(s, prefix) and action.abbrev ~= false then
          result[#result + 1] = { action = action, option = s,
            explicit = explicit }
        end
      end
    end
  else
    local short, short_explicit = arg:sub(1, 2), arg:sub(3)
    for _, s in ipairs(self._option_order) do
      if s == short then
        result[#result + 1] = { action = self._option_map[s], option = s,
          explicit = short_explicit }
      elseif starts_with(s, arg) then
        result[#result + 1] = { action = self._option_map[s], option = s }
      end
    end
  end
  return result
end

-- _parse_optional: nil for a positional argument, else {action, option,
-- explicit}; action is nil for an option this parser does not know.
function Parser:_parse_optional(arg)
  if arg == "" or arg:sub(1, 1) ~= "-" then
    return nil
  end
  local action = self._option_map[arg]
  if action then
    return { action = action, option = arg }
  end
  if #arg == 1 then
    return nil
  end
  local eq = arg:find("=", 1, true)
  if eq then
    local opt, explicit = arg:sub(1, eq - 1), arg:sub(eq + 1)
    if self._option_map[opt] then
      return { action = self._option_map[opt], option = opt,
        explicit = explicit }
    end
  end
  local tuples = self:_get_option_tuples(arg)
  if #tuples > 1 then
    local names = {}
    for i, t in ipairs(tuples) do
      names[i] = t.option
    end
    self:_error(("ambiguous option: %s could match %s")
      :format(arg, concat(names, ", ")))
  elseif #tuples == 1 then
    return tuples[1]
  end
  if looks_negative(arg) and not self._has_negative_number_optionals then
    return nil
  end
  if arg:find(" ", 1, true) then
    return nil
  end
  return { option = arg }
end

-- ---------------------------------------------------------------------------
-- Values

function Parser:_get_value(action, s)
  local t = action.type
  if t == nil or t == "string" or t == "str" then
    return s
  end
  local v, err, name
  if t == "int" then
    v, name = pycompat.int_parse(s), "int"
  elseif t == "float" then
    v, name = pycompat.float_parse(s), "float"
  else
    v, err = t(s)
    if v == nil and type(err) == "table" then
      -- ArgumentTypeError: the message is used as is.
      self:_arg_error(action, tostring(err.message))
    end
    name = type(err) == "string" and err or action.type_name or "value"
  end
  if v == nil then
    self:_arg_error(action, ("invalid %s value: %s"):format(name, repr(s)))
  end
  return v
end

function Parser:_check_value(action, value)
  local choices = action.choices
  if choices == nil then
    return
  end
  for _, c in ipairs(choices) do
    if c == value then
      return
    end
  end
  if action._unlisted and action._unlisted[value] then
    return   -- an unlisted subcommand (Subparsers:lazy)
  end
  local shown = {}
  for i, c in ipairs(choices) do
    shown[i] = repr(c)
  end
  self:_arg_error(action, ("invalid choice: %s (choose from %s)")
    :format(repr(value), concat(shown, ", ")))
end

-- _get_values; strs is a fresh list the function may modify.
function Parser:_get_values(action, strs)
  local nargs = action.nargs
  if nargs ~= PARSER and nargs ~= REMAINDER then
    for i, s in ipairs(strs) do
      if s == "--" then
        remove(strs, i)
        break
      end
    end
  end
  local value
  if #strs == 0 and nargs == OPTIONAL then
    if #action.option_strings > 0 then
      value = action.const
    else
      value = action.default
    end
    if type(value) == "string" then
      value = self:_get_value(action, value)
      self:_check_value(action, value)
    end
  elseif #strs == 0 and nargs == ZERO_OR_MORE and #action.option_strings == 0 then
    if action.default ~= nil then
      value = action.default
    else
      value = strs
    end
    self:_check_value(action, value)
  elseif #strs == 1 and (nargs == nil or nargs == OPTIONAL) then
    value = self:_get_value(action, strs[1])
    self:_check_value(action, value)
  elseif nargs == REMAINDER then
    value = {}
    for i, s in ipairs(strs) do
      value[i] = self:_get_value(action, s)
    end
  elseif nargs == PARSER then
    value = {}
    for i, s in ipairs(strs) do
      value[i] = self:_get_value(action, s)
    end
    self:_check_value(action, value[1])
  elseif nargs == SUPPRESS then
    value = SUPPRESS
  else
    value = {}
    for i, s in ipairs(strs) do
      value[i] = self:_get_value(action, s)
    end
    for _, v in ipairs(value) do
      self:_check_value(action, v)
    end
  end
  return value
end

-- ---------------------------------------------------------------------------
-- Parsing. A namespace is {v = values, has = set of dests present}; the
-- set matters because Python copies None values from a subparser too.

local function new_namespace()
  return { v = {}, has = {} }
end

local function ns_set(ns, key, value)
  ns.v[key] = value
  ns.has[key] = true
end

-- Action.__call__ for each kind of action.
function Parser:_call_action(action, ns, values)
  local kind, dest = action.kind, action.dest
  if kind == "store" then
    ns_set(ns, dest, values)
  elseif kind == "store_const" or kind == "store_true" or kind == "store_false" then
    ns_set(ns, dest, action.const)
  elseif kind == "append" or kind == "append_const" or kind == "extend" then
    local items = copy_list(ns.v[dest] or {})
    if kind == "append" then
      items[#items + 1] = values
    elseif kind == "append_const" then
      items[#items + 1] = action.const
    else
      extend(items, values)
    end
    ns_set(ns, dest, items)
  elseif kind == "count" then
    ns_set(ns, dest, (ns.v[dest] or 0) + 1)
  elseif kind == "help" then
    error(new_result{ kind = "help", text = self:format_help(), parser = self,
      prog = self.prog }, 0)
  elseif kind == "parsers" then
    local name = values[1]
    if dest ~= SUPPRESS then
      ns_set(ns, dest, name)
    end
    local parser = require("agentchat.argparse.subparsers").find(action, name)
    if not parser then
      self:_arg_error(action, ("unknown parser %s (choices: %s)")
        :format(repr(name), concat(action.choices, ", ")))
    end
    local rest = { table.unpack(values, 2) }
    local subns, extras = parser:_parse_known_args(rest, nil)
    for key in pairs(subns.has) do
      ns_set(ns, key, subns.v[key])
    end
    if #extras > 0 then
      ns.unrecognized = extend(ns.unrecognized or {}, extras)
    end
  end
end

--- A subcommand's arguments may be defined lazily: sub:parser(name,
-- {build = function(p) ... end}) runs `build` the first time the parser is
-- used (parsed or formatted), so a command line pays only for the
-- subcommand it runs.
function Parser:_ensure_built()
  self:_ready()
  local build = self._build
  if build then
    self._build = nil
    build(self)
  end
end

-- parse_known_args(): returns the namespace and the extra arguments;
-- errors and help unwind with error(Result).
function Parser:_parse_known_args(args, ns)
  self:_ensure_built()
  ns = ns or new_namespace()
  for _, action in ipairs(self._actions) do
    if action.dest ~= SUPPRESS and not ns.has[action.dest]
        and action.default ~= SUPPRESS then
      ns_set(ns, action.dest, action.default)
    end
  end
  for k, v in pairs(self._defaults) do
    if not ns.has[k] then
      ns_set(ns, k, v)
    end
  end
  local extras = self:_parse_args_into(args, ns)
  if ns.unrecognized then
    extend(extras, ns.unrecognized)
    ns.unrecognized = nil
  end
  return ns, extras
end

-- _parse_known_args: the main loop.
function Parser:_parse_args_into(arg_strings, ns)
  -- Classify every argument: 'O' option, 'A' argument, '-' for '--'.
  local option_indices, parts = {}, {}
  local n = #arg_strings
  for i = 1, n do
    local s = arg_strings[i]
    if s == "--" then
      parts[i] = "-"
      for j = i + 1, n do
        parts[j] = "A"
      end
      break
    end
    local tuple = self:_parse_optional(s)
    if tuple == nil then
      parts[i] = "A"
    else
      option_indices[i] = tuple
      parts[i] = "O"
    end
  end
  local pattern = concat(parts)

  local seen = {}
  local extras = {}

  local function take_action(action, strs, option_string)
    seen[action] = true
    local values = self:_get_values(action, strs)
    if values ~= SUPPRESS then
      self:_call_action(action, ns, values, option_string)
    end
  end

  local function consume_optional(start)
    local tuple = option_indices[start]
    local action, option, explicit = tuple.action, tuple.option, tuple.explicit
    local todo = {}
    local stop
    while true do
      if action == nil then
        extras[#extras + 1] = arg_strings[start]
        return start + 1
      end
      if explicit ~= nil then
        local count = self:_match_argument(action, "A")
        if count == 0 and option:sub(2, 2) ~= "-" and explicit ~= "" then
          -- -xyz: -x takes no value, so try -y next.
          todo[#todo + 1] = { action, {}, option }
          option = option:sub(1, 1) .. explicit:sub(1, 1)
          local rest = explicit:sub(2)
          if self._option_map[option] then
            action = self._option_map[option]
            explicit = rest ~= "" and rest or nil
          else
            self:_arg_error(action, "ignored explicit argument " .. repr(explicit))
          end
        elseif count == 1 then
          stop = start + 1
          todo[#todo + 1] = { action, { explicit }, option }
          break
        else
          self:_arg_error(action, "ignored explicit argument " .. repr(explicit))
        end
      else
        local first = start + 1
        local count = self:_match_argument(action, pattern:sub(first))
        stop = first + count
        todo[#todo + 1] = { action, { table.unpack(arg_strings, first, stop - 1) },
          option }
        break
      end
    end
    for _, t in ipairs(todo) do
      take_action(t[1], t[2], t[3])
    end
    return stop
  end

  local positionals = self:_get_positional_actions()

  local function consume_positionals(start)
    local counts = self:_match_arguments_partial(positionals, pattern:sub(start))
    for i, count in ipairs(counts) do
      local strs = { table.unpack(arg_strings, start, start + count - 1) }
      start = start + count
      take_action(positionals[i], strs)
    end
    for _ = 1, #counts do
      remove(positionals, 1)
    end
    return start
  end

  local max_option_index = 0
  for i in pairs(option_indices) do
    if i > max_option_index then
      max_option_index = i
    end
  end

  local start = 1
  while start <= max_option_index do
    local next_option = math.huge
    for i in pairs(option_indices) do
      if i >= start and i < next_option then
        next_option = i
      end
    end
    local consumed = false
    if start ~= next_option then
      local stop = consume_positionals(start)
      if stop > start then
        start = stop
        consumed = true
      else
        start = stop
      end
    end
    if not consumed then
      if not option_indices[start] then
        for i = start, next_option - 1 do
          extras[#extras + 1] = arg_strings[i]
        end
        start = next_option
      end
      start = consume_optional(start)
    end
  end

  local stop = consume_positionals(start)
  for i = stop, n do
    extras[#extras + 1] = arg_strings[i]
  end

  local required = {}
  for _, action in ipairs(self._actions) do
    if not seen[action] then
      if action.required then
        required[#required + 1] = action_name(action)
      elseif type(action.default) == "string" and ns.has[action.dest]
          and rawequal(ns.v[action.dest], action.default) then
        ns_set(ns, action.dest, self:_get_value(action, action.default))
      end
    end
  end
  if #required > 0 then
    self:_error("the following arguments are required: " .. concat(required, ", "))
  end
  return extras
end

local function run_protected(f, ...)
  local res = table.pack(pcall(f, ...))
  if res[1] then
    return table.unpack(res, 2, res.n)
  end
  local e = res[2]
  if getmetatable(e) == Result then
    return nil, e
  end
  error(e, 0)
end

local function check_argv(argv)
  if type(argv) ~= "table" then
    error("argv must be a list of strings", 3)
  end
  for i = 1, #argv do
    if type(argv[i]) ~= "string" then
      error(("argv[%d] is not a string"):format(i), 3)
    end
  end
end

--- parse_known_args(): returns args and the list of unrecognized
-- arguments, or nil and an error/help table.
function Parser:parse_known(argv)
  check_argv(argv)
  local ns, extras = run_protected(self._parse_known_args, self,
    copy_list(argv), nil)
  if ns == nil then
    return nil, extras
  end
  return ns.v, extras
end

--- parse_args(): returns the args table (dest -> value), or nil and an
-- error/help table (see the top of this file).
function Parser:parse(argv)
  check_argv(argv)
  local args, extras = self:parse_known(argv)
  if args == nil then
    return nil, extras
  end
  if #extras > 0 then
    return nil, self:make_error("unrecognized arguments: " .. concat(extras, " "))
  end
  return args
end

-- ---------------------------------------------------------------------------
-- Help and usage text (HelpFormatter) are in agentchat.argparse.format,
-- loaded by the first call of one of these: a command line that parses
-- cleanly never needs them. Loading it replaces them with its methods.

for _, name in ipairs({ "_format_usage", "format_usage", "format_help" }) do
  Parser[name] = function(...)
    require "agentchat.argparse.format"
    return Parser[name](...)
  end
end

-- For agentchat.argparse.format and agentchat.argparse.subparsers.
M._Parser = Parser
M._copy_list, M._extend = copy_list, extend
M._action_name = action_name

return M
