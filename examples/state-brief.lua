-- examples/state-brief.lua: a state template for a small context window.
--
--   agent-chat state dev --template examples/state-brief.lua
--
-- One line per fact, no Markdown decoration: the goal, the last decisions,
-- what is open (ready tasks first), who holds what, and the blockers. The
-- template receives the same table as `state --json` prints (see
-- docs/state-templates.md) and returns the text. It runs in a sandbox:
-- string, table, math and utf8 are there; files, processes and os are not.
local state = ...

local MAX_DECISIONS = 3

local out = {}
local function say(fmt, ...)
  out[#out + 1] = string.format(fmt, ...)
end

-- JSON null arrives as the value `null` (a global of the sandbox).
local function present(v)
  return v ~= nil and v ~= null and v ~= ""
end

local topic = state.topic:match("^%s*(.-)%s*$")
say("#%s (last #%d): %s", state.channel, state.last_seq, topic ~= "" and topic or "no topic")

local first = math.max(1, #state.decisions - MAX_DECISIONS + 1)
for i = first, #state.decisions do
  local d = state.decisions[i]
  say("decided #%d %s (%s)", d.seq, d.title, d.author)
end

-- Ready tasks (nothing blocking them) before the others.
local blocked = {}
for _, b in ipairs(state.blockers) do
  if b.kind ~= "message" then
    blocked[b.source_id] = true
  end
end
local ready, waiting = {}, {}
for _, t in ipairs(state.open_tasks) do
  local line = string.format("task %s [%s] %s%s", t.id, t.status, t.title,
    present(t.owner) and (" @" .. t.owner) or "")
  if blocked[t.id] then
    waiting[#waiting + 1] = line .. " (blocked)"
  else
    ready[#ready + 1] = line
  end
end
for _, l in ipairs(ready) do
  out[#out + 1] = l
end
for _, l in ipairs(waiting) do
  out[#out + 1] = l
end

for _, l in ipairs(state.path_locks) do
  local paths = {}
  for i, p in ipairs(l.paths) do
    paths[i] = p.normalized_path
  end
  say("lock %s by %s until %s", table.concat(paths, ","), l.owner, l.expires_at)
end

for _, b in ipairs(state.blockers) do
  if b.kind == "message" then
    say("blocker %s %s (%s)", b.source_id, b.title, b.author)
  end
end

say("%d decisions, %d open tasks, %d blockers, %d verified", #state.decisions,
  #state.open_tasks, #state.blockers, #state.verification)
return table.concat(out, "\n") .. "\n"
