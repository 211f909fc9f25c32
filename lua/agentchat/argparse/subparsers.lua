-- agentchat.argparse.subparsers: subcommands for agentchat.argparse
-- (add_subparsers, add_parser and the lazily declared sub:lazy), loaded by
-- the first parser:subparsers(): the command line's top level and the
-- commands with subcommands of their own (task, event, import) use it, a
-- plain command does not.
local argparse = require "agentchat.argparse"
local pycompat = require("agentchat.lazy")("agentchat.pycompat")

local concat = table.concat
local SUPPRESS, PARSER = argparse.SUPPRESS, argparse.PARSER
local action_name = argparse._action_name

local S = {}

local Subparsers = {}
Subparsers.__index = Subparsers

--- parser:subparsers(spec) (see agentchat.argparse).
function S.add(self, spec)
  self:_ready()
  spec = spec or {}
  if self._subparsers_action then
    error("cannot have multiple subparser arguments", 2)
  end
  local group = self._positionals
  if spec.title ~= nil or spec.description ~= nil then
    group = self:_add_group(spec.title or "subcommands", spec.description)
  end
  -- The subcommands' prog prefix: this parser's usage with the
  -- positionals defined so far (Python formats it here; it is made when
  -- the first subcommand is, see prog_prefix).
  local action = {
    kind = "parsers", option_strings = {}, dest = spec.dest or SUPPRESS,
    nargs = PARSER, required = spec.required == true, help = spec.help,
    metavar = spec.metavar, choices = {}, _map = {}, _lazy = {}, _choices_actions = {},
    _prog_prefix = spec.prog, _prefix_positionals = self:_get_positional_actions(),
  }
  self:_add_action(action, group)
  self._subparsers_action = action
  action._sub = setmetatable({ action = action, _parent = self }, Subparsers)
  return action._sub
end

-- The prog prefix of the subcommands of `action` (Parser:subparsers).
local function prog_prefix(parent, action)
  local prefix = action._prog_prefix
  if prefix == nil then
    local a, z = parent.prog:byte(1), parent.prog:byte(-1)
    if #action._prefix_positionals == 0 and parent.usage == nil
        and a and a > 32 and a < 127 and z > 32 and z < 127 then
      prefix = parent.prog      -- the usage is the prog, nothing to strip
    else
      local text = parent:_format_usage(action._prefix_positionals, nil, "")
      prefix = pycompat.strip(text)
    end
    action._prog_prefix = prefix
  end
  return prefix
end

--- Add a subcommand. opts: help (lists it in the parent's help; omit to
-- hide it), aliases (list), prog, description, epilog, usage, add_help,
-- allow_abbrev, tag, build (a function(parser) that defines the
-- arguments on first use, see Parser:_ensure_built). The new parser
-- inherits `columns`.
function Subparsers:parser(name, opts)
  opts = opts or {}
  local aliases = self:_declare(name, opts)
  local parser = self:_make(name, opts)
  for _, alias in ipairs(aliases) do
    self.action._map[alias] = parser
  end
  return parser
end

--- Declare a subcommand like :parser(name, opts), without aliases and
-- returning nothing: its parser is made only when a command line names it
-- (its help line is listed all the same). For a command line that
-- declares many subcommands and runs one. opts.unlisted (an extension):
-- the subcommand is accepted but left out of the choices an invalid
-- choice lists, so a family Python's parser defined keeps its message
-- when we add a subcommand to it.
function Subparsers:lazy(name, opts)
  local action = self.action
  if opts.aliases ~= nil then
    error("a lazy subparser has no aliases", 2)
  elseif action._map[name] or action._lazy[name] then
    error("argument " .. tostring(action_name(action))
      .. ": conflicting subparser: " .. name, 2)
  end
  action._lazy[name] = opts
  if opts.unlisted then
    action._unlisted = action._unlisted or {}
    action._unlisted[name] = true
  else
    action.choices[#action.choices + 1] = name
  end
  if opts.help ~= nil then
    -- Its help line is made when a help text needs it (choices_actions).
    action._choices_actions[#action._choices_actions + 1] = name
  end
end

local NO_STRINGS = setmetatable({}, { __newindex = function()
  error("shared empty list", 2)
end })

-- The help line of a subcommand (its name and aliases, and its help).
local function choice_action(name, aliases, help)
  local metavar = name
  if #aliases > 0 then
    metavar = metavar .. " (" .. concat(aliases, ", ") .. ")"
  end
  return { kind = "choice", option_strings = NO_STRINGS, dest = name, metavar = metavar,
           help = help }
end

-- The help lines of the subcommands of a subparsers action (those of
-- lazily declared ones are made now); an empty list for other actions.
function S.choices_actions(action)
  local list = action._choices_actions
  if not list then
    return NO_STRINGS
  end
  for i, c in ipairs(list) do
    if type(c) == "string" then
      list[i] = choice_action(c, NO_STRINGS, action._lazy[c].help)
    end
  end
  return list
end

-- The checks, help line and choices of a new subcommand; returns its aliases.
function Subparsers:_declare(name, opts)
  local action = self.action
  local aliases = opts.aliases or NO_STRINGS
  if action._map[name] or action._lazy[name] then
    error("argument " .. tostring(action_name(action))
      .. ": conflicting subparser: " .. name, 3)
  end
  for _, alias in ipairs(aliases) do
    if action._map[alias] or action._lazy[alias] then
      error("argument " .. tostring(action_name(action))
        .. ": conflicting subparser alias: " .. alias, 3)
    end
  end
  if opts.help ~= nil then
    action._choices_actions[#action._choices_actions + 1] = choice_action(name, aliases, opts.help)
  end
  action.choices[#action.choices + 1] = name
  for _, alias in ipairs(aliases) do
    action.choices[#action.choices + 1] = alias
  end
  return aliases
end

-- The parser of a declared subcommand.
function Subparsers:_make(name, opts)
  local action = self.action
  local parser = argparse.parser{
    prog = opts.prog or (prog_prefix(self._parent, action) .. " " .. name),
    description = opts.description, epilog = opts.epilog, usage = opts.usage,
    add_help = opts.add_help, allow_abbrev = opts.allow_abbrev,
    columns = self._parent.columns, tag = opts.tag, parent = self._parent,
    _deferred = opts.build ~= nil,
  }
  parser._build = opts.build
  action._map[name] = parser
  return parser
end

--- The parser of subcommand `name` of a subparsers action (made now if it
--- was declared lazily), or nil.
function S.find(action, name)
  local parser = action._map[name]
  if parser == nil then
    local opts = action._lazy[name]
    if opts then
      S.choices_actions(action)   -- its help line, while opts.help is at hand
      action._lazy[name] = nil
      parser = action._sub:_make(name, opts)
    end
  end
  return parser
end

return S
