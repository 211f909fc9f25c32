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
local py = require "agentchat.pycompat"
local sys = require "agentchat.sys"

local M = {}

local null = json.null
local EXIT = 1

M.TASK_FIELDS = { "id", "channel", "title", "status", "owner", "created_by", "depends_on",
                  "files_hint", "acceptance", "lease_expires_at", "branch", "updated_at" }
M.LOCK_FIELDS = { "channel", "expires_at", "lock_id", "locked_at", "owner", "previous_expires_at",
                  "previous_owner", "recovery_reason", "updated_at" }

local OPEN_STATUS = { open = true, in_progress = true, blocked = true }

local function lower(s)
  return type(s) == "string" and s:lower() or ""
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

-- Python's truthiness of a JSON value.
local function truthy(v)
  return v ~= nil and v ~= null and v ~= false and v ~= "" and v ~= 0 and
    not (type(v) == "table" and next(v) == nil)
end

-- ------------------------------------------------------------ messages

-- Python's re.search(r"^#+\s*(WORD|...)\b", body, IGNORECASE | MULTILINE):
-- at the start of a line, one or more "#", any whitespace (line breaks
-- too), one of the words in any case, then no word character (in C: state
-- looks at every message).
local heading_has = sys.heading_has

-- The title without a leading "<word>:" (any case) and the whitespace
-- after it, stripped; the title itself when nothing is left.
local function shown_title(title, words)
  local low = title:lower()
  for _, w in ipairs(words) do
    if low:sub(1, #w + 1) == w .. ":" then
      local rest = title:sub(#w + 2)
      rest = sys.strip(rest)
      return rest ~= "" and rest or title
    end
  end
  local t = sys.strip(title)
  return t ~= "" and t or title
end

local function starts(low, prefixes)
  local find = string.find
  for _, p in ipairs(prefixes) do
    if find(low, p, 1, true) == 1 then
      return true
    end
  end
  return false
end

local function set(list)
  local t = {}
  for _, v in ipairs(list) do
    t[v] = true
  end
  return t
end

-- What marks a message as a decision, a blocker or verification evidence
-- (the Python tool's heuristics): its frontmatter `type` or `status`
-- (lower-cased) in a set, a frontmatter key present, a title prefix (any
-- case), or a Markdown heading word in the body.
local KINDS = {
  decision = { types = set{ "decision" }, statuses = set{ "decision" }, keys = { "decision" },
               prefixes = { "decision:", "[decision]" }, headings = { "decision" }, strip = { "decision" } },
  blocker = { types = set{ "blocker", "blocked" }, statuses = set{ "blocker", "blocked" }, keys = { "blocker" },
              prefixes = { "blocker:", "[blocker]" }, headings = { "blocker" }, strip = { "blocker" } },
  verification = { types = set{ "verification", "evidence", "test" },
                   statuses = set{ "verified", "verified-by", "verification" },
                   keys = { "verification", "evidence" },
                   prefixes = { "verification:", "evidence:", "[verification]" },
                   headings = { "verification", "evidence" }, strip = { "verification", "evidence" } },
}

local function is_kind(k, f, kind, status, low_title, body)
  if k.types[kind] or k.statuses[status] or starts(low_title, k.prefixes) then
    return true
  end
  for _, key in ipairs(k.keys) do
    if f[key] ~= nil then
      return true
    end
  end
  return heading_has(body, k.headings)
end

-- The body as the Python tool cuts it: the text after the second "---"
-- anywhere in the file (else the whole text), stripped.
local function cut_body(text)
  local a = text:find("---", 1, true)
  local b = a and text:find("---", a + 3, true)
  return sys.strip(b and text:sub(b + 3) or text)
end

-- Audit and event messages are records of the tools, never classified.
local function is_tool_message(status)
  return kinds.of_status(status) ~= "message"
end

-- A file that is not UTF-8 is left out, or fails --strict. Returns true,
-- or nil and the failure.
local function classify_messages(messages, out, strict)
  for _, m in ipairs(messages) do
    if m.decode_error then
      if strict then
        return nil, "malformed message file " .. m.name .. ": " .. m.decode_error, "STATE_MALFORMED_SOURCE", EXIT
      end
    elseif not is_tool_message(m.fields.status or "") then
      local f = m.fields
      local body = cut_body(m.text)
      local author = truthy(f.from) and f.from or "unknown"
      local time = truthy(f.time) and f.time or f.ts or ""
      local title = truthy(f.title) and f.title or m.name:gsub("%.md$", "")
      local kind, status, low_title = lower(f.type), lower(f.status), title:lower()
      if is_kind(KINDS.decision, f, kind, status, low_title, body) then
        out.decisions[#out.decisions + 1] = {
          author = author, details = body, seq = m.seq, source = "message:" .. seq4(m.seq),
          time = time, title = shown_title(title, KINDS.decision.strip),
        }
      end
      if is_kind(KINDS.blocker, f, kind, status, low_title, body) then
        out.blockers[#out.blockers + 1] = {
          author = author, blocking_items = array(), details = body, kind = "message",
          source_id = "#" .. seq4(m.seq), time = time, title = shown_title(title, KINDS.blocker.strip),
        }
      end
      if is_kind(KINDS.verification, f, kind, status, low_title, body) then
        out.verification[#out.verification + 1] = {
          acceptance = array(), author = author, evidence = body,
          source_id = tostring(m.seq), source_type = "message", time = time,
          title = shown_title(title, KINDS.verification.strip),
        }
      end
    end
  end
  return true
end

-- Who completed each done task: the sender of the last lease.completed or
-- task.updated audit message whose body says so.
local function completions(messages)
  local by_task = {}
  for _, m in ipairs(messages) do
    local status = lower(m.fields.status)
    if (status == "lease.completed" or status == "task.updated") and not m.decode_error then
      local body = json.loads(cut_body(m.text))
      if type(body) == "table" and body.event == status and body.status == "done"
          and type(body.task_id) == "string" then
        by_task[body.task_id] = truthy(m.fields.from) and m.fields.from or "unknown"
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

-- Python: `owner or created_by` (the first that is set and not empty).
local function owner_or_creator(t)
  if truthy(t.owner) then
    return t.owner
  end
  return str_or_null(t.created_by)
end

local function task_blockers(t, by_id, out)
  local unfinished, shown = {}, {}
  for _, dep in ipairs(t.depends_on) do
    local d = by_id[dep]
    if not (d and d.status == "done") then
      unfinished[#unfinished + 1] = dep
      shown[#shown + 1] = dep .. " (status: " .. (d and d.status or "unknown") .. ")"
    end
  end
  local author, time = owner_or_creator(t), t.updated_at
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
    -- Every task can block (its status, its unfinished dependencies).
    task_blockers(t, by_id, out.blockers)
    if OPEN_STATUS[t.status] then
      out.open_tasks[#out.open_tasks + 1] = full_task(t)
      if truthy(t.owner) then
        local ts = owner_entry(out.owners, t.owner).tasks
        ts[#ts + 1] = { id = t.id, lease_expires_at = str_or_null(t.lease_expires_at),
                        status = t.status, title = t.title }
      end
    elseif t.status == "done" then
      out.verification[#out.verification + 1] = {
        acceptance = t.acceptance, author = done_by[t.id] or owner_or_creator(t),
        evidence = "Completed task criteria satisfied for " .. t.id .. ".",
        source_id = t.id, source_type = "task", time = t.updated_at,
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

-- table.sort keeping equal items in their order (Python's sort is stable).
local function stable_sort(list, less)
  local pos = {}
  for i, v in ipairs(list) do
    pos[v] = i
  end
  table.sort(list, function(a, b)
    if less(a, b) then
      return true
    elseif less(b, a) then
      return false
    end
    return pos[a] < pos[b]
  end)
end

-- Topic, members and created_at from the raw _meta.json as the Python
-- tool reads them for the state: anything unreadable counts as empty, or
-- fails --strict (not JSON or not UTF-8: STATE_MALFORMED_SOURCE; not an
-- object: STATE_INVALID_RECORD). Values are Python's str() of what is
-- there; members are stripped, blank ones dropped.
local function read_meta(ch, strict)
  local out = { topic = "", members = {}, created_at = "" }
  local bytes = ch:handle():meta()
  if not bytes then
    return out
  end
  local bad = sys.utf8_error(bytes)
  local raw, err = nil, bad
  if not bad then
    raw, err = json.loads(bytes)
  end
  if err then
    if strict then
      return nil, "corrupted _meta.json: " .. err, "STATE_MALFORMED_SOURCE", EXIT
    end
    return out
  end
  if type(raw) ~= "table" or json.is_array(raw) then
    if strict then
      return nil, "_meta.json must be a JSON object", "STATE_INVALID_RECORD", EXIT
    end
    return out
  end
  out.topic = truthy(raw.topic) and py.str(raw.topic) or ""
  out.created_at = truthy(raw.created_at) and py.str(raw.created_at) or ""
  if type(raw.members) == "table" and json.is_array(raw.members) then
    for _, m in ipairs(raw.members) do
      local v = sys.strip(py.str(m))
      if v ~= "" then
        out.members[#out.members + 1] = v
      end
    end
  end
  return out
end

--- The state of channel `ch` (an agentchat.Channel). opts.strict: a
--- malformed task or lock record, message file or _meta.json fails
--- instead of being left out.
function M.gather(ch, opts)
  opts = opts or {}
  local meta, msg, code, exit = read_meta(ch, opts.strict)
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
  records, msg, code, exit = require("agentchat._tasks").snapshot(h, opts.strict)
  if not records then
    return malformed("task", msg, code, exit)
  end
  table.sort(meta.members)
  local data = {
    channel = ch.name, topic = meta.topic, members = array(meta.members),
    created_at = meta.created_at, last_seq = batch.cursor or 0,
    generated_at = sys.now_iso(6), decisions = array(), open_tasks = array(),
    blockers = array(), owners = {}, path_locks = array(), verification = array(),
  }
  local ok
  ok, msg, code, exit = classify_messages(batch.messages, data, opts.strict)
  if not ok then
    return nil, msg, code, exit
  end
  gather_tasks(records, batch.messages, data)
  local locks, pending
  locks, pending, code, exit = require("agentchat._pathlocks").list(h, {
    ignore_journal = true, lenient = not opts.strict })
  if not locks then
    return malformed("path-lock", pending, code, exit)
  end
  gather_locks(locks, pending, data)
  stable_sort(data.blockers, by_keys)
  stable_sort(data.verification, by_time)
  for _, o in pairs(data.owners) do
    table.sort(o.tasks, function(a, b) return a.id < b.id end)
    table.sort(o.path_locks, function(a, b) return a.lock_id < b.lock_id end)
  end
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
  if opts.audit ~= false and ch:handle():bare() then
    -- Its _meta.json is missing: the audit message could not be posted,
    -- so write nothing rather than state.md alone.
    return nil, "channel '" .. ch.name .. "' has no _meta.json: compact cannot post its state.compacted "
      .. "message (run: init " .. ch.name .. ", or compact --no-audit)", "STATE_CHANNEL_NOT_FOUND", 1
  end
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
  -- An empty actor counts as none (Python: `actor or "system"`).
  local from = (opts.actor ~= nil and opts.actor ~= "") and opts.actor or "system"
  res, msg, code, exit = ch:post{ from = from, to = "all", title = "state.compacted",
                                  status = "state.compacted", body = body }
  if not res then
    return nil, msg, code, exit
  end
  return true
end

return M
