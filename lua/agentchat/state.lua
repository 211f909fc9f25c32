-- agentchat.state: the derived summary of a channel (docs/format.md 2.3, 3.8).
--
--   state.gather(ch, {strict=})      -- the data table (`state --json`)
--   state.render(data)               -- the Markdown of the built-in template
--   state.compact(ch, {actor=, audit=, strict=, text=})
--                                    -- write state.md, post state.compacted
--
-- The data is gathered from the records (task snapshot, lock list) and
-- from every message; JSON nulls are json.null and lists are json arrays,
-- so json.dumps(data) is the --json output. Failures return nil, message,
-- code, exit (STATE_* exit 1).
local json = require "agentchat.json"
local kinds = require "agentchat.kinds"
local sys = require "agentchat.sys"

local M = {}

local null = json.null
local EXIT = 1

M.TASK_FIELDS = { "id", "channel", "title", "status", "owner", "created_by", "depends_on",
                  "files_hint", "acceptance", "lease_expires_at", "branch", "updated_at" }
M.LOCK_FIELDS = { "channel", "expires_at", "lock_id", "locked_at", "owner", "previous_expires_at",
                  "previous_owner", "recovery_reason", "updated_at" }

local OPEN_STATUS = { open = true, in_progress = true, blocked = true }

-- Audit and event messages are records of the tools, never classified.
local function is_tool_message(status)
  return kinds.of_status(status) ~= "message"
end

local function lower(s)
  return type(s) == "string" and s:lower() or ""
end

-- What a message is marked as (docs/format.md 3.8): for each word (decision,
-- blocker, verification), frontmatter `type: <word>` or `status: <word>`
-- or a `<word>` key, a title starting with "<word>:" or "[<word>]" (any
-- case), or a Markdown heading "<word>" in the body.
local WORDS = { "decision", "blocker", "verification" }

local function marks(f, body)
  local found = {}
  local kind, status = lower(sys.strip(f.type or "")), lower(sys.strip(f.status or ""))
  local title = lower(sys.strip(f.title or ""))
  local prefix = title:match("^(%a+):") or title:match("^%[(%a+)%]")
  for _, w in ipairs(WORDS) do
    if kind == w or status == w or f[w] ~= nil or prefix == w then
      found[w] = true
    end
  end
  if body:find("#", 1, true) then
    for line in body:gmatch("[^\n]+") do
      local heading = line:match("^%s*#+%s*(%a+)%s*:?%s*$")
      if heading then
        found[heading:lower()] = true
      end
    end
  end
  return found
end

-- The title as shown: "Decision: use C" -> "use C" ("[Decision] x" stays).
local function shown_title(title, word)
  title = sys.strip(title or "")
  if title:sub(1, #word + 1):lower() == word .. ":" then
    return sys.strip(title:sub(#word + 2))
  end
  return title
end

local function seq4(seq)
  return string.format("%04d", seq)
end

local function array(t)
  return json.array(t or {})
end

local function str_or_null(v)
  return v == nil and null or v
end

-- ------------------------------------------------------------ messages

local function classify_messages(messages, out)
  for _, m in ipairs(messages) do
    local f = m.fields
    local status = f.status or ""
    if not is_tool_message(status) then
      local body = m.body
      local details = sys.strip(body)
      local author, time = f.from or "", f.ts or ""
      local is = marks(f, body)
      if is.decision then
        out.decisions[#out.decisions + 1] = {
          author = author, details = details, seq = m.seq, source = "message:" .. seq4(m.seq),
          time = time, title = shown_title(f.title, "decision"),
        }
      end
      if status == "blocked" or is.blocker then
        out.blockers[#out.blockers + 1] = {
          author = author, blocking_items = array(), details = details, kind = "message",
          source_id = "#" .. seq4(m.seq), time = time, title = shown_title(f.title, "blocker"),
        }
      end
      if status == "verified" or is.verification then
        out.verification[#out.verification + 1] = {
          acceptance = array(), author = author, evidence = details,
          source_id = tostring(m.seq), source_type = "message", time = time,
          title = shown_title(f.title, "verification"),
        }
      end
    end
  end
end

-- Who completed each done task, and when: the last lease.completed or
-- task.updated audit message that left it done.
local function completions(messages)
  local by_task = {}
  for _, m in ipairs(messages) do
    local status = m.fields.status
    if status == "lease.completed" or status == "task.updated" then
      local body = json.loads(m.body)
      if type(body) == "table" and body.status == "done" and type(body.task_id) == "string" then
        by_task[body.task_id] = { author = m.fields.from or "", time = m.fields.ts or "" }
      end
    end
  end
  return by_task
end

-- ------------------------------------------------------------ tasks

local function full_task(rec)
  for _, k in ipairs(M.TASK_FIELDS) do
    if rec[k] == nil then
      rec[k] = null
    end
  end
  return rec
end

local function task_blockers(t, by_id, out)
  local unfinished, shown = {}, {}
  for _, dep in ipairs(t.depends_on) do
    local d = by_id[dep]
    local status = d and d.status or "missing"
    if status ~= "done" then
      unfinished[#unfinished + 1] = dep
      shown[#shown + 1] = dep .. " (status: " .. status .. ")"
    end
  end
  local author, time = str_or_null(t.created_by), t.updated_at
  if #unfinished > 0 then
    out[#out + 1] = {
      author = author, blocking_items = array(unfinished),
      details = "Unfinished dependencies: " .. table.concat(shown, ", "),
      kind = "task_dependency", source_id = t.id, time = time,
      title = "Task " .. t.id .. " blocked on dependencies: " .. table.concat(unfinished, ", "),
    }
  end
  if t.status == "blocked" then
    out[#out + 1] = {
      author = author, blocking_items = array(), details = "Task is marked with status 'blocked'",
      kind = "task_status", source_id = t.id, time = time,
      title = "Task " .. t.id .. " blocked (" .. t.title .. ")",
    }
  end
end

local function owner_entry(owners, name)
  local o = owners[name]
  if not o then
    o = { owner = name, path_locks = array(), tasks = array() }
    owners[name] = o
  end
  return o
end

local function gather_tasks(records, messages, out)
  local by_id = {}
  for _, t in ipairs(records) do
    by_id[t.id] = t
  end
  local done_by = completions(messages)
  for _, t in ipairs(records) do
    if OPEN_STATUS[t.status] then
      out.open_tasks[#out.open_tasks + 1] = full_task(t)
      task_blockers(t, by_id, out.blockers)
      if t.owner ~= nil and t.owner ~= null then
        local ts = owner_entry(out.owners, t.owner).tasks
        ts[#ts + 1] = { id = t.id, lease_expires_at = str_or_null(t.lease_expires_at),
                        status = t.status, title = t.title }
      end
    elseif t.status == "done" and #t.acceptance > 0 then
      local who = done_by[t.id] or { author = t.owner or t.created_by, time = t.updated_at }
      out.verification[#out.verification + 1] = {
        acceptance = t.acceptance, author = who.author,
        evidence = "Completed task criteria satisfied for " .. t.id .. ".",
        source_id = t.id, source_type = "task", time = who.time,
        title = "Task " .. t.id .. " completed: " .. t.title,
      }
    end
  end
end

-- ------------------------------------------------------------ locks

local function gather_locks(records, pending_id, out)
  for _, r in ipairs(records) do
    if r.lock_id ~= pending_id then
      local rec, norm = {}, {}
      for _, k in ipairs(M.LOCK_FIELDS) do
        rec[k] = str_or_null(r[k])
      end
      for i, p in ipairs(r.paths) do
        rec.paths = rec.paths or array()
        rec.paths[i] = { display_path = p.display_path, kind = p.kind,
                         normalized_path = p.normalized_path }
        norm[i] = p.normalized_path
      end
      rec.paths = rec.paths or array()
      out.path_locks[#out.path_locks + 1] = rec
      local ls = owner_entry(out.owners, r.owner).path_locks
      ls[#ls + 1] = { expires_at = r.expires_at, lock_id = r.lock_id, paths = array(norm) }
    end
  end
end

-- ------------------------------------------------------------ gather

-- A record that cannot be used fails --strict as STATE_MALFORMED_SOURCE;
-- a busy lock or an I/O error keeps its own code.
local function malformed(source, msg, code, exit)
  if code == "INTERRUPTED" or code:match("_TIMEOUT$") or code:match("_IO_ERROR$") then
    return nil, msg, code, exit
  end
  return nil, "malformed " .. source .. " source: " .. code .. ": " .. msg, "STATE_MALFORMED_SOURCE",
    EXIT
end

local function by_keys(a, b)
  if a.kind ~= b.kind then
    return a.kind < b.kind
  end
  return a.source_id < b.source_id
end

local function by_time(a, b)
  if a.time ~= b.time then
    return a.time < b.time
  end
  return a.source_id < b.source_id
end

--- The state of channel `ch` (an agentchat.Channel). opts.strict: a
--- malformed task or lock record fails instead of being left out.
function M.gather(ch, opts)
  opts = opts or {}
  local meta, msg, code, exit = ch:meta()
  if not meta then
    return nil, msg, code, exit
  end
  local batch
  batch, msg, code, exit = ch:peek(math.maxinteger)
  if not batch then
    return nil, msg, code, exit
  end
  local h = ch:handle()
  local records
  records, msg, code, exit = require("agentchat.tasks").snapshot(h, opts.strict)
  if not records then
    return malformed("task", msg, code, exit)
  end
  local members = {}
  for i, m in ipairs(meta.members or {}) do
    members[i] = m
  end
  table.sort(members)
  local data = {
    channel = ch.name, topic = meta.topic or "", members = array(members),
    created_at = meta.created_at or "", last_seq = batch.cursor or 0,
    generated_at = sys.now_iso(6), decisions = array(), open_tasks = array(),
    blockers = array(), owners = {}, path_locks = array(), verification = array(),
  }
  classify_messages(batch.messages, data)
  gather_tasks(records, batch.messages, data)
  local locks, pending
  locks, pending, code, exit = require("agentchat.pathlocks").list(h, {
    ignore_journal = true, lenient = not opts.strict })
  if not locks then
    return malformed("path-lock", pending, code, exit)
  end
  gather_locks(locks, pending, data)
  table.sort(data.blockers, by_keys)
  table.sort(data.verification, by_time)
  return data
end

--- The Markdown of `data` with the built-in template (docs/format.md 3.8).
function M.render(data)
  return require("agentchat.templates.state_md")(data)
end

--- Counts for `compact`'s line and the state.compacted message.
function M.counts(data)
  return { open_tasks = #data.open_tasks, locks = #data.path_locks, decisions = #data.decisions,
           blockers = #data.blockers }
end

local AUDIT_JSON = { indent = 2, sort_keys = true, ensure_ascii = false }

--- Write `text` (the rendered `data`) as state.md, then, unless opts.audit
--- is false, post state.compacted from opts.actor (default "system") with
--- the counts and last_seq of `data`, the state before that message.
function M.write(ch, data, text, opts)
  local ok, msg, code, exit = ch:handle():write_state(text)
  if not ok then
    return nil, msg, code, exit
  end
  if opts.audit == false then
    return true
  end
  local n = M.counts(data)
  local body = json.dumps({
    blockers_count = n.blockers, channel = ch.name, compacted_at = sys.now_iso(6),
    decisions_count = n.decisions, event = "state.compacted", last_seq = data.last_seq,
    open_tasks_count = n.open_tasks, path_locks_count = n.locks,
  }, AUDIT_JSON)
  local res
  res, msg, code, exit = ch:post{ from = opts.actor or "system", to = "all", title = "state.compacted",
                                  status = "state.compacted", body = body }
  if not res then
    return nil, msg, code, exit
  end
  return true
end

return M
