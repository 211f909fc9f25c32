-- agentchat.api.doctor: deadlock and stall detection (docs/doctor.md).
--
--   ch:doctor{stale_after=600, now=sys.time()}
--       -- {channel, generated_at, stale_after, edges, cycles, stalls, findings}
--
-- The wait-for graph has one node per agent and an edge "A waits for B"
-- for each of these, read from what the channel records (nothing else
-- tells who waits for whom):
--   request  A posted a request (a `*_request` type with a request id) to
--            B alone, and B has not answered it (no `*_response` with that
--            id from B after it);
--   task     A's task T is blocked (its status: A said it waits), T depends
--            on U, U is not done and B holds U (its owner, leased or
--            preassigned);
--   lock     A's task T is blocked and its files_hint overlaps a path lock
--            of B (expired or not: it conflicts until recovered).
-- A task in progress is being worked on, an open one (even preassigned)
-- is not started: neither says its owner waits, so neither makes an edge.
-- Edges to oneself are left out (no one waits for himself). A cycle is a
-- set of agents that wait for each other: one per strongly connected group
-- of two or more agents, the shortest through its first agent by name.
-- Stalls are holders that stopped: a task whose lease expired, a path lock
-- that expired, and an open request older than stale_after seconds whose
-- addressee posted nothing since. Findings = cycles + stalls.
local A = {}

A.DEFAULT_STALE_AFTER = 600

local ENDED = { done = true, cancelled = true }

local function protocols()
  return require "agentchat.protocols"
end

-- Open requests: {from, to, request_id, type, seq, ts, age, silent}.
local function open_requests(messages, now, sys)
  local requests, answered, last_seq = {}, {}, {}
  local recipients = require("agentchat").recipients
  for _, m in ipairs(messages) do
    local f = m.fields
    if m.from then
      last_seq[m.from] = m.seq
    end
    if f.request_id and protocols().is_response_type(f.type) then
      answered[f.request_id .. "\0" .. (m.from or "")] = m.seq
    elseif f.request_id and protocols().response_type(f.type) and m.from then
      local to = recipients(f.to)
      if to and #to == 1 and to[1] ~= m.from then
        requests[#requests + 1] = { from = m.from, to = to[1], request_id = f.request_id, type = f.type,
                                    seq = m.seq, ts = m.ts }
      end
    end
  end
  local out = {}
  for _, r in ipairs(requests) do
    local reply = answered[r.request_id .. "\0" .. r.to]
    if not reply or reply < r.seq then
      local t = r.ts and sys.iso_epoch(r.ts)
      r.age = t and math.max(0, math.floor(now - t)) or nil
      r.silent = (last_seq[r.to] or 0) < r.seq
      out[#out + 1] = r
    end
  end
  return out
end

local function age_of(ts, now, sys)
  local t = type(ts) == "string" and sys.iso_epoch(ts)
  return t and math.max(0, math.floor(now - t)) or nil
end

-- The edges of the graph and the stalls, from the three sources.
local function collect(ch, opts, sys)
  local now = opts.now
  local batch, msg, code, exit = ch:peek(math.maxinteger)
  if not batch then
    return nil, msg, code, exit
  end
  local list
  list, msg, code, exit = ch:tasks()
  if not list then
    return nil, msg, code, exit
  end
  local locks
  locks, msg, code, exit = ch:locks{ ignore_journal = true }
  if not locks then
    return nil, msg, code, exit
  end
  local edges, stalls = {}, {}
  for _, r in ipairs(open_requests(batch.messages, now, sys)) do
    edges[#edges + 1] = { from = r.from, to = r.to, kind = "request", request_id = r.request_id,
                          type = r.type, seq = r.seq,
                          detail = string.format("request %s (#%d, %s) has no response", r.request_id,
                                                 r.seq, r.type) }
    if r.silent and r.age and r.age > opts.stale_after then
      stalls[#stalls + 1] = { kind = "request", agent = r.to, from = r.from, request_id = r.request_id,
                              seq = r.seq, type = r.type, age = r.age,
                              detail = string.format("request %s (#%d, %s) from %s to %s has no response "
                                .. "after %ds, and %s has posted nothing since", r.request_id, r.seq, r.type,
                                r.from, r.to, r.age, r.to) }
    end
  end
  local by_id = {}
  for _, t in ipairs(list) do
    by_id[t.id] = t
  end
  local blocked = {}
  for _, t in ipairs(list) do
    if t.owner and t.status == "blocked" then
      blocked[#blocked + 1] = t
    end
    local expired = t.lease_expires_at and age_of(t.lease_expires_at, now, sys)
    if t.owner and t.status == "in_progress" and expired and sys.iso_epoch(t.lease_expires_at) < now then
      stalls[#stalls + 1] = { kind = "lease", agent = t.owner, task = t.id, expires_at = t.lease_expires_at,
                              age = expired,
                              detail = string.format("task %s: the lease of %s expired at %s (%ds ago)",
                                                     t.id, t.owner, t.lease_expires_at, expired) }
    end
  end
  for _, t in ipairs(blocked) do
    for _, dep in ipairs(t.depends_on or {}) do
      local u = by_id[dep]
      if u and not ENDED[u.status] and u.owner and u.owner ~= t.owner then
        edges[#edges + 1] = { from = t.owner, to = u.owner, kind = "task", task = t.id, dependency = u.id,
                              detail = string.format("task %s (blocked) needs %s (%s), held by %s", t.id,
                                                     u.id, u.status, u.owner) }
      end
    end
    for _, hint in ipairs(t.files_hint or {}) do
      local path = ch:normalize_lock_path(hint)
      for _, l in ipairs(path and locks or {}) do
        if l.owner ~= t.owner then
          for _, p in ipairs(l.paths) do
            if require("agentchat").path_overlaps(path, p.normalized_path) then
              edges[#edges + 1] = { from = t.owner, to = l.owner, kind = "lock", task = t.id, path = hint,
                                    lock_id = l.lock_id,
                                    detail = string.format("task %s (blocked) needs %s, locked by %s (lock %s)",
                                                           t.id, hint, l.owner, l.lock_id) }
              break
            end
          end
        end
      end
    end
  end
  for _, l in ipairs(locks) do
    if l.expired then
      local shown = {}
      for _, p in ipairs(l.paths) do
        shown[#shown + 1] = p.display_path
      end
      local age = age_of(l.expires_at, now, sys) or 0
      stalls[#stalls + 1] = { kind = "lock", agent = l.owner, lock_id = l.lock_id, expires_at = l.expires_at,
                              age = age,
                              detail = string.format("lock %s of %s on %s expired at %s (%ds ago)", l.lock_id,
                                                     l.owner, table.concat(shown, ", "), l.expires_at, age) }
    end
  end
  return edges, stalls
end

-- Tarjan's strongly connected components of the agents (iterative on
-- purpose: no recursion depth to worry about on a large team).
local function components(nodes, out_edges)
  local index, low, on, stack, comps, n = {}, {}, {}, {}, {}, 0
  for _, root in ipairs(nodes) do
    if not index[root] then
      local work = { { root, 1 } }
      n = n + 1
      index[root], low[root] = n, n
      stack[#stack + 1], on[root] = root, true
      while #work > 0 do
        local frame = work[#work]
        local v, i = frame[1], frame[2]
        local e = out_edges[v][i]
        if e then
          frame[2] = i + 1
          local w = e.to
          if not index[w] then
            n = n + 1
            index[w], low[w] = n, n
            stack[#stack + 1], on[w] = w, true
            work[#work + 1] = { w, 1 }
          elseif on[w] then
            low[v] = math.min(low[v], index[w])
          end
        else
          work[#work] = nil
          if #work > 0 then
            local u = work[#work][1]
            low[u] = math.min(low[u], low[v])
          end
          if low[v] == index[v] then
            local comp = {}
            repeat
              local w = table.remove(stack)
              on[w] = nil
              comp[#comp + 1] = w
            until w == v
            if #comp > 1 then
              table.sort(comp)
              comps[#comps + 1] = comp
            end
          end
        end
      end
    end
  end
  return comps
end

-- The shortest cycle through comp[1] inside comp (breadth first).
local function cycle_of(comp, out_edges)
  local inside = {}
  for _, v in ipairs(comp) do
    inside[v] = true
  end
  local start = comp[1]
  local via, queue, head = {}, { start }, 1
  while head <= #queue do
    local v = queue[head]
    head = head + 1
    for _, e in ipairs(out_edges[v]) do
      if inside[e.to] and e.to == start then
        local path = { e }
        local x = v
        while x ~= start do
          table.insert(path, 1, via[x])
          x = via[x].from
        end
        local agents = { start }
        for _, pe in ipairs(path) do
          agents[#agents + 1] = pe.to
        end
        return { agents = agents, edges = path }
      elseif inside[e.to] and not via[e.to] and e.to ~= start then
        via[e.to] = e
        queue[#queue + 1] = e.to
      end
    end
  end
  return nil   -- unreachable: a component of two or more has a cycle through each member
end

--- The doctor's report of a channel (see the top of this file).
function A.report(ch, opts)
  local sys = require "agentchat.sys"
  opts = opts or {}
  if type(opts) ~= "table" then
    error("doctor expects an options table", 3)
  end
  local stale_after = opts.stale_after or A.DEFAULT_STALE_AFTER
  if type(stale_after) ~= "number" or stale_after ~= stale_after or stale_after < 0 then
    error("doctor: stale_after must be a number of seconds >= 0", 3)
  end
  if opts.now ~= nil and type(opts.now) ~= "number" then
    error("doctor: now must be seconds since 1970", 3)
  end
  local edges, stalls, code, exit = collect(ch, { stale_after = stale_after, now = opts.now or sys.time() }, sys)
  if not edges then
    return nil, stalls, code, exit
  end
  local out_edges, nodes = {}, {}
  for _, e in ipairs(edges) do
    for _, v in ipairs({ e.from, e.to }) do
      if not out_edges[v] then
        out_edges[v] = {}
        nodes[#nodes + 1] = v
      end
    end
    table.insert(out_edges[e.from], e)
  end
  table.sort(nodes)
  local cycles = {}
  for _, comp in ipairs(components(nodes, out_edges)) do
    cycles[#cycles + 1] = cycle_of(comp, out_edges)
  end
  table.sort(cycles, function(a, b)
    return a.agents[1] < b.agents[1]
  end)
  return { channel = ch.name, generated_at = sys.now_iso(0), stale_after = stale_after, edges = edges,
           cycles = cycles, stalls = stalls, findings = #cycles + #stalls }
end

function A.install(Channel, _)
  function Channel:doctor(opts)
    return A.report(self, opts)
  end
end

return A
