-- agentchat.templates.state_md: the built-in `state.md` template, the exact
-- layout of docs/format.md 3.8 (the Python tool's output, byte for byte).
--
-- It receives the state table (the `state --json` data; JSON null is
-- json.null) and returns the Markdown. A user template (`state --template
-- FILE.lua`) gets the same table as its chunk argument; see
-- docs/state-templates.md.
local null = require("agentchat.json").null
local sys = require "agentchat.sys"

local function value(v, empty)
  if v == nil or v == null or v == "" then
    return empty
  end
  return v
end

local function joined(list, empty)
  if list == nil or list == null or #list == 0 then
    return empty
  end
  return table.concat(list, ", ")
end

local function sorted(list)
  local out = {}
  for i, v in ipairs(list) do
    out[i] = v
  end
  table.sort(out)
  return out
end

local function seq4(n)
  return string.format("#%04d", n)
end

-- Python's str.splitlines(): the line breaks are \n, \r, \r\n, \v, \f,
-- \x1c-\x1e, U+0085, U+2028 and U+2029; no empty last line.
local BREAKS = { "\r\n", "\n", "\r", "\v", "\f", "\28", "\29", "\30", "\u{85}", "\u{2028}", "\u{2029}" }
local function splitlines(text)
  local out, start, i = {}, 1, 1
  while i <= #text do
    local hit
    for _, b in ipairs(BREAKS) do
      if text:sub(i, i + #b - 1) == b then
        hit = b
        break
      end
    end
    if hit then
      out[#out + 1] = text:sub(start, i - 1)
      i = i + #hit
      start = i
    else
      i = i + 1
    end
  end
  if start <= #text then
    out[#out + 1] = text:sub(start)
  end
  return out
end

-- Each line of `text` (stripped, split as splitlines) with a prefix
-- ("  " indents, "  > " quotes); nothing for an empty text.
local function lines(text, prefix, out)
  for _, line in ipairs(splitlines(sys.strip(text))) do
    out[#out + 1] = prefix .. line
  end
end

local function goal(s, out)
  -- A topic of blanks shows as nothing; only an empty one is "(none)".
  out[#out + 1] = "- **Channel**: " .. s.channel
  out[#out + 1] = "- **Topic**: " .. (s.topic ~= "" and sys.strip(s.topic) or "(none)")
  out[#out + 1] = "- **Members**: " .. joined(s.members, "(none)")
  out[#out + 1] = "- **Last Message Sequence**: " .. seq4(s.last_seq)
end

local function decisions(s, out)
  for _, d in ipairs(s.decisions) do
    out[#out + 1] = "- `[" .. seq4(d.seq) .. "]` **" .. d.title .. "** (by `" .. d.author
      .. "` at `" .. d.time .. "`):"
    if sys.strip(d.details) == "" then
      out[#out + 1] = "  *(no additional details)*"
    else
      lines(d.details, "  ", out)
    end
  end
end

local function open_tasks(s, out)
  for _, t in ipairs(s.open_tasks) do
    out[#out + 1] = "- `[" .. t.id .. "]` **" .. t.title .. "** (`" .. t.status .. "`)"
    out[#out + 1] = "  - **Owner**: `" .. value(t.owner, "unassigned") .. "`"
    out[#out + 1] = "  - **Lease**: `" .. value(t.lease_expires_at, "none") .. "`"
    out[#out + 1] = "  - **Depends on**: `" .. joined(sorted(t.depends_on), "none") .. "`"
    out[#out + 1] = "  - **Files hint**: `" .. joined(sorted(t.files_hint), "none") .. "`"
    out[#out + 1] = "  - **Acceptance**: `" .. joined(t.acceptance, "none") .. "`"
  end
end

local function blockers(s, out)
  for _, b in ipairs(s.blockers) do
    local by = value(b.author, "") ~= "" and " (by `" .. b.author .. "`)" or ""
    out[#out + 1] = "- `[" .. b.source_id .. "]` **" .. b.title .. "**" .. by .. ": " .. b.details
  end
end

local function owners(s, out)
  local names = {}
  for name in pairs(s.owners) do
    names[#names + 1] = name
  end
  table.sort(names)
  for _, name in ipairs(names) do
    local o = s.owners[name]
    out[#out + 1] = "- **" .. name .. "**:"
    for _, t in ipairs(o.tasks) do
      local lease = value(t.lease_expires_at, "")
      out[#out + 1] = "  - Task `" .. t.id .. "` (**" .. t.title .. "**, status: `" .. t.status .. "`"
        .. (lease ~= "" and ", lease expires: `" .. lease .. "`" or "") .. ")"
    end
    for _, l in ipairs(o.path_locks) do
      out[#out + 1] = "  - Path Lock `" .. l.lock_id .. "` (`" .. joined(sorted(l.paths), "") .. "`, expires: `"
        .. l.expires_at .. "`)"
    end
  end
end

local function path_locks(s, out)
  for _, l in ipairs(s.path_locks) do
    local paths = {}
    for i, p in ipairs(l.paths) do
      paths[i] = p.normalized_path
    end
    table.sort(paths)
    out[#out + 1] = "- `[" .. l.lock_id .. "]` `" .. table.concat(paths, ", ") .. "` (owner: `" .. l.owner
      .. "`, expires: `" .. l.expires_at .. "`)"
  end
end

local function verification(s, out)
  for _, v in ipairs(s.verification) do
    if v.source_type == "task" then
      out[#out + 1] = "- `[" .. v.source_id .. "]` **" .. v.title .. "** (verified by `" .. v.author
        .. "` at `" .. v.time .. "`):"
    else
      out[#out + 1] = "- `[" .. seq4(tonumber(v.source_id)) .. "]` **" .. v.title .. "** (by `" .. v.author
        .. "` at `" .. v.time .. "`):"
    end
    if #v.acceptance > 0 then
      out[#out + 1] = "  - Acceptance criteria: " .. table.concat(v.acceptance, ", ")
    end
    lines(v.evidence, "  > ", out)
  end
end

local SECTIONS = {
  { "Goal & Topic", goal },
  { "Decisions", decisions },
  { "Open Tasks", open_tasks },
  { "Blockers", blockers },
  { "Owners & Leases", owners },
  { "Path Locks", path_locks },
  { "Verification Evidence", verification },
}

return function(state)
  local parts = { "# State: " .. state.channel }
  for _, sec in ipairs(SECTIONS) do
    local out = { "## " .. sec[1] }
    sec[2](state, out)
    if #out == 1 then
      out[2] = "*(none)*"
    end
    parts[#parts + 1] = table.concat(out, "\n")
  end
  return table.concat(parts, "\n\n") .. "\n"
end
