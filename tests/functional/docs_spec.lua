-- The project documents its own contract (issue 13, item 7): the folder
-- format and command-line rules are docs/format.md, and no file refers to a
-- SPEC the repository does not contain (README and docs used to cite
-- SPEC.md / ../shared/SPEC.md on about 39 lines). References of the form
-- "format.md 3.4" name sections that exist, and the local links of the
-- Markdown pages point to files that exist.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

local REPO = H.repo

-- The files git tracks (plus new ones not ignored), except the vendored
-- conformance kit, whose README describes the kit's own upstream, and this
-- spec, which has to name what it looks for.
local function repo_files()
  local p = io.popen("cd " .. F.sh(REPO) .. " && git ls-files --cached --others --exclude-standard 2>/dev/null")
  local out = {}
  for f in p:read("a"):gmatch("[^\n]+") do
    if not f:find("^tests/conformance/") and f ~= "tests/functional/docs_spec.lua" then
      out[#out + 1] = f
    end
  end
  p:close()
  return out
end

local function text_of(f)
  local s = F.read(REPO .. "/" .. f)
  if s and not s:find("\0", 1, true) then
    return s
  end
  return nil
end

-- "2.1", "3.4", "4", "5.2" ... that docs/format.md has: numbered headings,
-- and the numbered list of section 5.
local function sections()
  local have = {}
  local text = F.read(REPO .. "/docs/format.md")
  for n in text:gmatch("\n##+ (%d+[%.%d]*)") do
    have[(n:gsub("%.$", ""))] = true
  end
  local five = text:match("\n## 5%..-\n## 6%.")
  for n in five:gmatch("\n(%d+)%. ") do
    have["5." .. n] = true
  end
  return have
end

describe("the project's own documents", function()
  local files = repo_files()

  it("have docs/format.md", function()
    local text = F.read(REPO .. "/docs/format.md")
    assert.truthy(text and text:find("^# agent%-chat: folder format and command%-line rules\n"))
    for _, want in ipairs({ "### 3.4 Cursors", "### Message kinds", "### Budgets", "## 5. " }) do
      assert.truthy(text:find(want, 1, true), want)
    end
  end)

  it("never refer to a SPEC file or ../shared/SPEC.md", function()
    local found = {}
    for _, f in ipairs(files) do
      local s = text_of(f)
      if s then
        local n = 0
        for line in (s .. "\n"):gmatch("([^\n]*)\n") do
          n = n + 1
          if line:find("SPEC%.md") or line:find("%f[%w]SPEC%f[^%w_]") or line:find("../shared/SPEC", 1, true) then
            found[#found + 1] = f .. ":" .. n .. ": " .. line
          end
        end
      end
    end
    assert.same({}, found)
  end)

  it("cite only sections of format.md that exist", function()
    local have, bad = sections(), {}
    for _, f in ipairs(files) do
      local s = text_of(f)
      if s then
        -- "format.md 3.4", "format.md](format.md) 2.4, 2.5", "format.md 2.4 \"Leases\", 3.6"
        for refs in s:gmatch("format%.md%)? ([%d%.,/ ]+)") do
          for n in refs:gmatch("(%d+[%.%d]*)") do
            n = n:gsub("%.$", "")
            if not have[n] then
              bad[#bad + 1] = f .. ": format.md " .. n
            end
          end
        end
      end
    end
    assert.same({}, bad)
  end)

  it("link to local files that exist", function()
    local bad = {}
    for _, f in ipairs(files) do
      if f:find("%.md$") then
        local dir = f:match("^(.*)/[^/]*$") or "."
        for target in F.read(REPO .. "/" .. f):gmatch("%]%(([^)#%s]+)[^)]*%)") do
          if not target:find("^%a+:") then
            local path = REPO .. "/" .. dir .. "/" .. target
            if not os.rename(path, path) then
              bad[#bad + 1] = f .. " -> " .. target
            end
          end
        end
      end
    end
    assert.same({}, bad)
  end)
end)
