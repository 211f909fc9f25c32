-- agentchat.importer: what the mailbox importers share (docs/import.md).
--
--   local plan, msg, code, exit = importer.load("team"|"bus", dir)
--       -- read and check the whole folder; nothing is written. A plan is
--       -- {kind, dir, records, warnings, skipped, init = {members, topic}}
--   local report, msg, code, exit = importer.apply(ch, plan, {dry_run=, strict=})
--       -- post the records the channel does not have yet, in time order
--
-- The two steps are separate so that every problem with the folder (a
-- missing or unreadable file, a bad roster) is found before the channel is
-- created or a message posted: an import is all or nothing up to the
-- posting itself, and a re-run finishes an interrupted one, because every
-- imported message carries its import key (frontmatter `import_id`) and a
-- message whose key the channel already has is never posted again.
--
-- A format module (agentchat.importers.<kind>) turns the folder into
-- records: {key, order, ts_us, from, to, title, body, status, type,
-- request_id, role, reply_for, fields = {k=v}, acks = {{agent, at_us}}}.
-- Malformed lines become warnings {file, line, message} and are skipped.
local errors = require "agentchat.errors"
local folder = require "agentchat.folder"
local json = require "agentchat.json"
local py = require "agentchat.pycompat"
local sys = require "agentchat.sys"

local M = {}

local fail = errors.fail

M.LINE_MAX = 1 << 20        -- bytes of one JSONL line
M.FILE_MAX = 64 << 20       -- bytes of one file
M.TOTAL_MAX = 64 << 20      -- bytes of all the folder's mailbox files together: what
                            -- is read is held as records until posted (five 64 MiB
                            -- files took 5.1 GB)
M.TITLE_MAX = 72            -- characters of a title made from a body
M.KINDS = { team = true, bus = true }

local ELOOP = 40

-- ------------------------------------------------------------ the folder

--- Check that dir is a folder; returns true or the IMPORT_INVALID_FOLDER
--- failure.
function M.check_dir(dir)
  if type(dir) ~= "string" then
    error("import expects a folder path (a string)", 3)
  end
  local ok, msg = folder.check(dir)
  if not ok then
    return fail("IMPORT_INVALID_FOLDER", "cannot open folder " .. py.repr_str(dir) .. ": " .. msg)
  end
  return true
end

--- The entries of dir (or of its sub-folder `sub`), by name: {name = kind}
--- and the sorted list of names.
function M.entries(dir, sub)
  local list, msg = folder.list(dir, sub)
  if not list then
    return fail("IMPORT_UNREADABLE", "cannot list " .. py.repr_str(sub or dir) .. ": " .. msg)
  end
  local kinds, names = {}, {}
  for _, e in ipairs(list) do
    kinds[e.name] = e.kind
    names[#names + 1] = e.name
  end
  table.sort(names)
  return kinds, names
end

--- The bytes of dir/rel (rel below dir, never through a symlink).
function M.read(dir, rel)
  local data, msg, errno = folder.read(dir, rel, M.FILE_MAX)
  if not data then
    if errno == ELOOP then
      msg = "it is a symlink (symlinks are not followed)"
    end
    return fail("IMPORT_UNREADABLE", "cannot read " .. rel .. ": " .. msg)
  end
  return data
end

--- Refuse a folder entry that is there but is not what it should be (a
--- symlink, a directory for a file): reading around it would lose it.
--- `shown` is its path in messages (default: name).
function M.expect(kinds, name, want, shown)
  local kind = kinds[name]
  shown = shown or name
  if kind == nil or kind == want then
    return true
  end
  if kind == "symlink" then
    return fail("IMPORT_UNREADABLE", "cannot read " .. shown .. ": it is a symlink (symlinks are not followed)")
  end
  return fail("IMPORT_UNREADABLE", "cannot read " .. shown .. ": not a "
    .. (want == "dir" and "folder" or "regular file"))
end

--- expect() for each {name, want} of `list`, in order: true or the first
--- failure.
function M.expect_all(kinds, list)
  for _, e in ipairs(list) do
    local ok, msg, code, exit = M.expect(kinds, e[1], e[2])
    if not ok then
      return nil, msg, code, exit
    end
  end
  return true
end

--- The inbox files of dir/inbox, by name: {{file = "inbox/<name>.jsonl",
--- owner = "<name>"}, ...}. Other names (no ".jsonl", a leading ".") are
--- not inboxes and are ignored; an inbox that is not a regular file, or
--- whose owner name cannot be an agent name (invalid UTF-8, a control
--- character), is an error: skipping it would lose its messages.
function M.inboxes(dir)
  local kinds, names, code, exit = M.entries(dir, "inbox")
  if not kinds then
    return nil, names, code, exit
  end
  local out = {}
  for _, name in ipairs(names) do
    local owner = name:match("^(.+)%.jsonl$")
    if owner and name:sub(1, 1) ~= "." then
      local file = "inbox/" .. name
      local ok, msg
      ok, msg, code, exit = M.expect(kinds, name, "file", file)
      if not ok then
        return nil, msg, code, exit
      end
      if not sys.utf8_valid(owner) or owner:find("%c") then
        return fail("IMPORT_INVALID_FOLDER", "cannot import " .. py.repr_str(file)
          .. ": its name must be an agent name (valid UTF-8, no control characters)")
      end
      out[#out + 1] = { file = file, owner = owner }
    end
  end
  return out
end

-- ------------------------------------------------------------ lines

--- A new plan for `kind` read from dir.
function M.new_plan(kind, dir)
  return { kind = kind, dir = dir, records = {}, warnings = {}, skipped = 0, order = 0 }
end

--- Record a skipped line.
function M.warn(plan, file, line, message)
  plan.warnings[#plan.warnings + 1] = { file = file, line = line, message = message }
  plan.skipped = plan.skipped + 1
end

--- Record a warning about a line that is imported all the same.
function M.note(plan, file, line, message)
  plan.warnings[#plan.warnings + 1] = { file = file, line = line, message = message }
end

--- Refuse up front (before anything is parsed) a folder whose mailbox
--- files, the sources {file = "inbox/x.jsonl"}, hold more than TOTAL_MAX
--- bytes together; each_record checks the bytes it reads again.
function M.check_total(dir, sources)
  local sizes, total = {}, 0
  for _, src in ipairs(sources) do
    local sub, name = src.file:match("^(.*)/([^/]*)$")
    local key = sub or ""
    if not sizes[key] then
      sizes[key] = {}
      for _, e in ipairs(folder.list(dir, sub) or {}) do
        sizes[key][e.name] = e.size
      end
    end
    total = total + (sizes[key][name or src.file] or 0)
  end
  if total > M.TOTAL_MAX then
    return M.too_large(total)
  end
  return true
end

function M.too_large(bytes)
  return fail("IMPORT_TOO_LARGE", string.format("the folder's mailbox files hold %.1f MiB together, more than %d "
    .. "MiB; import it in parts", bytes / (1 << 20), M.TOTAL_MAX >> 20))
end

--- Read the file src.file of dir and call fn(record, lineno) for each line
--- that parse(object, src.owner) turns into a record; a line it refuses
--- (nil and the problem) becomes a warning. Returns true or the failure
--- to read the file.
function M.each_record(plan, dir, src, parse, fn)
  local text, msg, code, exit = M.read(dir, src.file)
  if not text then
    return nil, msg, code, exit
  end
  -- Refused before the file is parsed: the records are what takes memory.
  plan.bytes = (plan.bytes or 0) + #text
  if plan.bytes > M.TOTAL_MAX then      -- grown since check_total
    return M.too_large(plan.bytes)
  end
  M.each_line(plan, src.file, text, function(obj, n)
    local rec, problem = parse(obj, src.owner)
    if not rec then
      M.warn(plan, src.file, n, problem)
      return
    end
    fn(rec, n)
  end)
  return true
end

--- Call fn(object, lineno) for each JSON object line of `text` (the file
--- `file`); blank lines are ignored, every other line that is not a JSON
--- object becomes a warning.
function M.each_line(plan, file, text, fn)
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if #line > M.LINE_MAX then
      M.warn(plan, file, n, "line longer than " .. M.LINE_MAX .. " bytes")
    elseif not sys.utf8_valid(line) then
      M.warn(plan, file, n, "not valid UTF-8")
    elseif sys.strip(line) ~= "" then
      local obj, msg = json.loads(line)
      if obj == nil then
        M.warn(plan, file, n, "not valid JSON: " .. msg)
      elseif type(obj) ~= "table" or json.is_array(obj) then
        M.warn(plan, file, n, "not a JSON object")
      else
        fn(obj, n)
      end
    end
  end
end

--- A JSON value with null read as absent.
function M.value(obj, key)
  local v = obj[key]
  if v == json.null then
    return nil
  end
  return v
end

--- A required non-empty string field: the value, or nil and the problem.
function M.need_string(obj, key)
  local v = M.value(obj, key)
  if v == nil then
    return nil, "missing field '" .. key .. "'"
  elseif type(v) ~= "string" then
    return nil, "field '" .. key .. "' must be a string"
  elseif v:find("\0", 1, true) then
    return nil, "field '" .. key .. "' contains a NUL character"
  elseif sys.strip(v) == "" then
    return nil, "field '" .. key .. "' is empty"
  end
  return v
end

--- An optional string field (any text but NUL): the value or nil, or
--- false and the problem.
function M.opt_string(obj, key)
  local v = M.value(obj, key)
  if v == nil then
    return nil
  elseif type(v) ~= "string" then
    return false, "field '" .. key .. "' must be a string"
  elseif v:find("\0", 1, true) then
    return false, "field '" .. key .. "' contains a NUL character"
  end
  return v
end

--- An id field (string, or an integer written in decimal).
function M.opt_id(obj, key)
  local v = M.value(obj, key)
  if math.type(v) == "integer" then
    return tostring(v)
  elseif v ~= nil and type(v) ~= "string" then
    return false, "field '" .. key .. "' must be a string"
  end
  return v
end

-- ------------------------------------------------------------ time

--- A timestamp field: an ISO-8601 text (Python's fromisoformat; no offset
--- means UTC) or a number of seconds since 1970 (milliseconds above 1e11,
--- as JavaScript's Date.now() writes them). Returns microseconds since
--- 1970, or nil and the problem.
function M.time(obj, key, optional)
  local v = M.value(obj, key)
  if v == nil then
    if optional then
      return false
    end
    return nil, "missing field '" .. key .. "'"
  end
  local secs
  if type(v) == "string" then
    secs = sys.iso_epoch(v)
    if not secs then
      return nil, "field '" .. key .. "' is not an ISO-8601 time: " .. py.repr_str(v)
    end
  elseif type(v) == "number" and v == v and v > -1e15 and v < 1e15 then
    secs = v >= 1e11 and v / 1000 or v
  else
    return nil, "field '" .. key .. "' must be an ISO-8601 text or a number of seconds"
  end
  local us = math.floor(secs * 1e6 + 0.5)
  -- Years 1..9999 only: what an ISO-8601 ts line can say.
  if us < -62135596800000000 or us > 253402300799000000 then
    return nil, "field '" .. key .. "' is out of range"
  end
  return us
end

--- The ts line of an instant: local time with its UTC offset, second
--- precision, as every other message (docs/format.md 3.3).
function M.format_ts(us)
  local secs = us // 1000000
  local z = os.date("%z", secs)
  return os.date("%Y-%m-%dT%H:%M:%S", secs) .. z:sub(1, 3) .. ":" .. z:sub(4, 5)
end

-- ------------------------------------------------------------ text

--- A title made from a body: its first non-blank line, cut to TITLE_MAX
--- characters ("..." marks a cut).
function M.title_of(text)
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    line = sys.strip(line)
    if line ~= "" then
      if utf8.len(line) > M.TITLE_MAX then
        line = line:sub(1, utf8.offset(line, M.TITLE_MAX - 2) - 1) .. "..."
      end
      return line
    end
  end
  return ""
end

--- Add a record to the plan (its order is the order it was read in).
function M.add(plan, rec)
  plan.order = plan.order + 1
  rec.order = plan.order
  rec.fields = rec.fields or {}
  rec.fields.import_id = rec.key
  rec.acks = rec.acks or {}
  plan.records[#plan.records + 1] = rec
  return rec
end

-- ------------------------------------------------------------ load / apply

--- Read the folder of `kind` ("team" or "bus").
function M.load(kind, dir)
  if not M.KINDS[kind] then
    error("unknown import kind: " .. tostring(kind), 2)
  end
  local ok, msg, code, exit = M.check_dir(dir)
  if not ok then
    return nil, msg, code, exit
  end
  return require("agentchat.importers." .. kind).load(dir)
end

-- What the channel already has: import keys and request seqs.
local function existing(ch)
  local batch, msg, code, exit = ch:peek(math.maxinteger)
  if not batch then
    return nil, msg, code, exit
  end
  local keys, requests = {}, {}
  for _, m in ipairs(batch.messages) do
    local f = m.fields
    if f.import_id then
      keys[f.import_id] = keys[f.import_id] or m.seq
    end
    if f.request_id and type(f.type) == "string" and f.type:match("_request$") then
      requests[f.request_id] = requests[f.request_id] or m.seq
    end
  end
  return keys, requests
end

local function post(ch, rec, requests)
  local reply = rec.reply_for and requests[rec.reply_for] or 0
  return ch:post{
    from = rec.from, to = rec.to, title = rec.title, body = rec.body,
    status = rec.status or "discussion", reply = reply, ts = M.format_ts(rec.ts_us),
    type = rec.type, request_id = rec.request_id, role = rec.role, fields = rec.fields,
  }
end

-- Write the acks of rec (posted or present as rec.seq; nil in a dry run of
-- a new message) through the receipts API, counting new and existing ones.
-- The ack's time is the line's ack_at when it has one, else the time of
-- the import (docs/import.md).
local function acks(ch, rec, report)
  for _, a in ipairs(rec.acks) do
    if report.dry_run then
      local done = rec.seq and require("agentchat._receipts").read_ack(ch:handle(), rec.seq, a.agent)
      if done then
        report.acks_present = report.acks_present + 1
      else
        report.acked = report.acked + 1
      end
    else
      local res, msg, code, exit = ch:ack(rec.seq, { as = a.agent, at = a.at_us and M.format_ts(a.at_us) })
      if not res then
        return nil, msg, code, exit
      end
      if res.new then
        report.acked = report.acked + 1
      else
        report.acks_present = report.acks_present + 1
      end
    end
  end
  return true
end

--- Whether the plan may be imported: IMPORT_MALFORMED_LINES when every
--- line was malformed (nothing to import: a wrong folder, most likely, and
--- no channel should be made for it), or, with `strict`, when any was;
--- else true.
function M.strict_check(plan, strict)
  local lines = plan.skipped .. " malformed line" .. (plan.skipped == 1 and "" or "s")
  if plan.skipped > 0 and #plan.records == 0 then
    return fail("IMPORT_MALFORMED_LINES", "every line in " .. py.repr_str(plan.dir) .. " is malformed ("
      .. lines .. "): nothing imported")
  end
  if strict and plan.skipped > 0 then
    return fail("IMPORT_MALFORMED_LINES", lines .. " in " .. py.repr_str(plan.dir) .. " (strict: nothing imported)")
  end
  return true
end

-- One import into a channel at a time: two at once would both find a
-- record missing and both post it. The lock is a flock of the channel
-- directory (no file added to the folder); opts.on_wait() is called once
-- when another import holds it and this one waits. false in a dry run.
local function exclusive(ch, opts)
  if opts.dry_run then
    return false
  end
  local lock, msg, code, exit = ch:handle():exclusive(false)
  if not lock and code == "CHANNEL_BUSY" then
    if opts.on_wait then
      opts.on_wait()
    end
    lock, msg, code, exit = ch:handle():exclusive(true)
  end
  return lock, msg, code, exit
end

--- Post the plan's records that ch lacks, in time order (stable for equal
--- times). opts.dry_run: count only. A plan whose lines were all malformed
--- is refused (IMPORT_MALFORMED_LINES); opts.strict refuses one with any
--- skipped line. opts.on_wait: called when
--- another import into ch runs, before waiting for it to end. Returns the
--- report {imported, present, skipped, warnings, seqs, dry_run}; a failure
--- while posting names how far it got (a re-run finishes the import).
function M.apply(ch, plan, opts)
  opts = opts or {}
  local usable, umsg, ucode, uexit = M.strict_check(plan, opts.strict)
  if not usable then
    return nil, umsg, ucode, uexit
  end
  local lock <close>, lmsg, lcode, lexit = exclusive(ch, opts)
  if lock == nil then
    return nil, lmsg, lcode, lexit
  end
  local keys, requests, code, exit = existing(ch)
  if not keys then
    return nil, requests, code, exit
  end
  local recs = {}
  for i, r in ipairs(plan.records) do
    recs[i] = r
  end
  table.sort(recs, function(a, b)
    if a.ts_us ~= b.ts_us then
      return a.ts_us < b.ts_us
    end
    return a.order < b.order
  end)
  local report = { imported = 0, present = 0, skipped = plan.skipped, warnings = plan.warnings,
                   seqs = {}, dry_run = opts.dry_run and true or false, acked = 0, acks_present = 0 }
  for _, rec in ipairs(recs) do
    if keys[rec.key] then
      report.present = report.present + 1
      rec.seq = keys[rec.key]
    elseif opts.dry_run then
      report.imported = report.imported + 1
    else
      if sys.interrupted() then
        return fail("INTERRUPTED", "cancelled by user")
      end
      local res, msg
      res, msg, code, exit = post(ch, rec, requests)
      if not res then
        return nil, msg .. " (after importing " .. report.imported .. " of " .. #recs
          .. " messages; run the import again to finish)", code, exit
      end
      rec.seq = res.seq
      keys[rec.key] = res.seq
      report.imported = report.imported + 1
      report.seqs[#report.seqs + 1] = res.seq
      if rec.request_id and type(rec.type) == "string" and rec.type:match("_request$") then
        requests[rec.request_id] = requests[rec.request_id] or res.seq
      end
    end
    local ok, msg
    ok, msg, code, exit = acks(ch, rec, report)
    if not ok then
      return nil, msg .. " (after importing " .. report.imported .. " of " .. #recs
        .. " messages; run the import again to finish)", code, exit
    end
  end
  return report
end

--- "file:line: message" of a warning.
function M.where(w)
  return w.file .. ":" .. w.line .. ": " .. w.message
end

--- The summary of a report: one line, and a second one about acks for a
--- format that has ack state (with_acks).
function M.summary(report, with_acks)
  local text = string.format("%s %d messages (%d already present, %d lines skipped)\n",
    report.dry_run and "would import" or "imported", report.imported, report.present, report.skipped)
  if with_acks then
    text = text .. string.format("%s %d acks (%d already present)\n",
      report.dry_run and "would record" or "recorded", report.acked or 0, report.acks_present or 0)
  end
  return text
end

return M
