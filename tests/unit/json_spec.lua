-- agentchat.json (src/l_json.c) failure paths: json.dumps of values it
-- cannot encode, at any depth, raises one clear error and leaks nothing
-- (the suite runs under AddressSanitizer in CI); deep nesting is refused
-- before it can overflow the Lua stack.
local json = require "agentchat.json"

local function nest(n, leaf)
  local top = {}
  local t = top
  for _ = 2, n do
    t[1] = {}
    t = t[1]
  end
  t[1] = leaf
  return top
end

describe("json.dumps", function()
  it("raises one line for what JSON cannot hold, however deep it sits", function()
    local cases = {
      { { a = { b = { print } } }, "json.dumps: cannot encode a function" },
      { { 1, 2, coroutine.create(print) }, "json.dumps: cannot encode a thread" },
      { { x = io.stdout }, "json.dumps: cannot encode a userdata" },
      { { [1.5] = 1 }, "json.dumps: object keys must be strings" },
      { { k = { "ok", "\255" } }, "json.dumps: string is not valid UTF-8" },
      { nest(500, print), "json.dumps: cannot encode a function" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(json.dumps, c[1])
      assert.is_false(ok)
      assert.truthy(tostring(err):find(c[2], 1, true), tostring(err))
    end
  end)

  it("encodes 1,000 levels and refuses more, without overflowing the stack", function()
    local text = json.dumps(nest(999, 1))
    assert.are.equal(string.rep("[", 999) .. "1" .. string.rep("]", 999), text)
    for _, depth in ipairs({ 1002, 5000, 50000 }) do
      local ok, err = pcall(json.dumps, nest(depth, 1))
      assert.is_false(ok)
      assert.truthy(tostring(err):find("nesting deeper than 1000", 1, true), tostring(err))
    end
  end)

  it("still encodes after a failure", function()
    pcall(json.dumps, { a = print })
    assert.are.equal('{"a": [1, 2, {"b": null}]}',
      json.dumps({ a = { 1, 2, { b = json.null } } }, { sort_keys = true }))
  end)
end)
