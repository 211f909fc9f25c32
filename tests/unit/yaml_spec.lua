-- yaml.decode / yaml.decode_all / yaml.encode (src/l_yaml.c), run inside
-- the binary: ./agent-chat run /usr/bin/busted tests/unit/yaml_spec.lua
local yaml = require "yaml"
local json = require "agentchat.json"

-- Deep equality that also compares number subtypes (1 vs 1.0), NaN, the
-- sign of zero and the array mark.
local function same(a, b, path)
  path = path or "value"
  if type(a) ~= type(b) then
    return false, path .. ": " .. type(a) .. " vs " .. type(b)
  end
  if type(a) == "number" then
    if math.type(a) ~= math.type(b) then
      return false, path .. ": " .. math.type(a) .. " vs " .. math.type(b)
    end
    if a ~= a and b ~= b then
      return true
    end
    if a ~= b or (a == 0 and 1 / a ~= 1 / b) then
      return false, path .. ": " .. tostring(a) .. " vs " .. tostring(b)
    end
    return true
  end
  if type(a) ~= "table" then
    if a ~= b then
      return false, path .. ": " .. tostring(a) .. " vs " .. tostring(b)
    end
    return true
  end
  if json.is_array(a) ~= json.is_array(b) then
    return false, path .. ": array mark differs"
  end
  for k, v in pairs(a) do
    local ok, why = same(v, b[k], path .. "[" .. tostring(k) .. "]")
    if not ok then
      return false, why
    end
  end
  for k in pairs(b) do
    if a[k] == nil then
      return false, path .. ": extra key " .. tostring(k)
    end
  end
  return true
end

local function assert_same(a, b)
  local ok, why = same(a, b)
  assert(ok, why)
end

local function roundtrip(v)
  local text = yaml.encode(v)
  local back, err = yaml.decode(text)
  assert(back ~= nil, "decode failed: " .. tostring(err) .. "\n" .. text)
  local ok, why = same(v, back)
  assert(ok, tostring(why) .. "\n--- text:\n" .. text)
  -- Encoding is deterministic.
  assert.equals(text, yaml.encode(back))
  return text
end

-- A test name for any text: control characters escaped, cut.
local function name(s)
  s = string.format("%q", s):gsub("\\\n", "\\n"):gsub("[%c\128-\255]", function(c)
    return string.format("\\%d", c:byte())
  end)
  return s:sub(1, 50)
end

local function err_of(text, opts)
  local v, msg, code = yaml.decode(text, opts)
  assert.is_nil(v)
  assert.equals("YAML_INVALID", code)
  assert.is_string(msg)
  assert.is_nil(msg:find("\n"), "error message is one line: " .. msg)
  return msg
end

describe("yaml module", function()
  it("is the same table as agentchat.yaml and shares json's null and array mark", function()
    assert.equals(require "agentchat.yaml", yaml)
    assert.equals(json.null, yaml.null)
    assert.equals(json.array_mt, yaml.array_mt)
    assert.is_true(json.is_array(yaml.array({})))
    assert.is_true(yaml.is_array(json.array({})))
    assert.equals("[]", json.dumps(yaml.decode("[]")))
  end)
end)

describe("yaml.decode scalars", function()
  local cases = {
    { "~", yaml.null }, { "null", yaml.null }, { "NULL", yaml.null }, { "", yaml.null },
    { "true", true }, { "False", false }, { "yes", "yes" }, { "no", "no" }, { "on", "on" },
    { "off", "off" }, { "y", "y" },
    { "42", 42 }, { "-7", -7 }, { "+3", 3 }, { "012", 12 }, { "0o17", 15 }, { "0x1f", 31 },
    { "0b11", "0b11" }, { "1_000", "1_000" },
    { "1.5", 1.5 }, { "1e3", 1000.0 }, { "-.5", -0.5 }, { "3.0", 3.0 },
    { "9223372036854775807", math.maxinteger }, { "9223372036854775808", 9223372036854775808.0 },
    { ".inf", math.huge }, { "-.Inf", -math.huge },
    { "hello world", "hello world" }, { "'42'", "42" }, { '"true"', "true" }, { "!!str 42", "42" },
    { "! 42", "42" }, { "!!int 42", 42 }, { "!!float 42", 42.0 }, { "!!bool true", true },
    { "!!null ~", yaml.null }, { "'~'", "~" }, { '"a\\tb\\u00e9"', "a\tb\u{e9}" },
    { "|\n  line1\n  line2\n", "line1\nline2\n" }, { ">-\n  folded\n  text\n", "folded text" },
    { "2001-12-14", "2001-12-14" }, { "<<", "<<" },
  }
  for _, c in ipairs(cases) do
    it(name(c[1]), function()
      assert_same(c[2], (yaml.decode(c[1])))
    end)
  end

  it(".nan is NaN", function()
    local v = yaml.decode(".nan")
    assert.is_true(v ~= v)
  end)

  it("an empty text, a comment-only text and an empty document are yaml.null", function()
    assert.equals(yaml.null, yaml.decode(""))
    assert.equals(yaml.null, yaml.decode("# nothing here\n"))
    assert.equals(yaml.null, yaml.decode("---\n"))
    assert.equals(yaml.null, yaml.decode("--- ~\n...\n"))
  end)
end)

describe("yaml.decode collections", function()
  it("marks sequences as arrays (empty ones too) and keeps nulls in place", function()
    local v = yaml.decode("a: [1, ~, 3]\nb: []\nc: {}\nd:\n  - x\n  -\n  - z\n")
    assert_same(json.array({ 1, yaml.null, 3 }), v.a)
    assert.is_true(json.is_array(v.b))
    assert.is_false(json.is_array(v.c))
    assert.equals(0, #v.b)
    assert.equals(3, #v.d)
    assert.equals(yaml.null, v.d[2])
  end)

  it("keeps key types", function()
    local v = yaml.decode("1: one\ntrue: yes\n'1': string one\n1.5: f\n")
    assert.equals("one", v[1])
    assert.equals("string one", v["1"])
    assert.equals("yes", v[true])
    assert.equals("f", v[1.5])
  end)

  it("reads nested block and flow styles", function()
    local v = yaml.decode([[
identity:
  name: alice
list:
  - {a: 1, b: [x, y]}
  - - nested
    - seq
]])
    assert.equals("alice", v.identity.name)
    assert.equals(1, v.list[1].a)
    assert.equals("y", v.list[1].b[2])
    assert.equals("seq", v.list[2][2])
  end)

  it("copies anchors into aliases (not shared tables)", function()
    local v = yaml.decode("base: &b {x: 1, l: [1, 2]}\nuse: *b\ns: &s str\nt: *s\n")
    assert_same(v.base, v.use)
    assert.are_not.equal(v.base, v.use)
    assert.are_not.equal(v.base.l, v.use.l)
    assert.is_true(json.is_array(v.use.l))
    assert.equals("str", v.t)
  end)

  it("treats << as an ordinary key (YAML 1.2 has no merge keys)", function()
    local v = yaml.decode("a: &a {x: 1}\nb:\n  <<: *a\n  y: 2\n")
    assert.equals(1, v.b["<<"].x)
    assert.is_nil(v.b.x)
  end)

  it("returns source positions with marks = true", function()
    local v, marks = yaml.decode("top:\n  name: alice\n  list:\n    - a\n    - b\n", { marks = true })
    assert.same({ line = 1, column = 1 }, { line = marks[v].line, column = marks[v].column })
    assert.same({ line = 1, column = 1 }, marks[v].keys.top)
    assert.same({ line = 2, column = 3 }, marks[v.top].keys.name)
    assert.same({ line = 3, column = 3 }, marks[v.top].keys.list)
    assert.same({ line = 5, column = 7 }, marks[v.top.list].keys[2])
  end)
end)

describe("yaml.decode_all", function()
  it("returns every document in an array", function()
    local docs = yaml.decode_all("a: 1\n---\n- x\n--- ~\n")
    assert.equals(3, #docs)
    assert.is_true(json.is_array(docs))
    assert.equals(1, docs[1].a)
    assert.equals("x", docs[2][1])
    assert.equals(yaml.null, docs[3])
    assert.equals(0, #yaml.decode_all(""))
  end)

  it("scopes anchors to their document", function()
    local _, msg = yaml.decode_all("a: &x 1\n---\nb: *x\n")
    assert.equals("line 3, column 4: alias *x refers to no anchor", msg)
  end)
end)

describe("yaml.decode errors", function()
  local cases = {
    { "a: 1\na: 2\n", "line 2, column 1: duplicate key 'a'" },
    { "a: b\n\tc: d\n", "line 2, column 1: found a tab character that violates indentation "
      .. "(while scanning a plain scalar at line 1, column 4)" },
    { "a: [1, 2\n", "line 2, column 1: did not find expected ',' or ']' "
      .. "(while parsing a flow sequence at line 1, column 4)" },
    { "a: b\n  c: d\n", "line 2, column 4: mapping values are not allowed in this context" },
    { "a: \255\n", "line 1, column 4: invalid leading UTF-8 octet (byte 0xff)" },
    { "ok: \xc3\xa9\nbad: \xe2\x82\n", "line 2, column 7: invalid trailing UTF-8 octet (byte 0x0a)" },
    { "a: \xe2\x82", "line 1, column 4: incomplete UTF-8 octet sequence" },
    { "a: \1\n", "line 1, column 4: control characters are not allowed (U+0001)" },
    { "a\n---\nb\n", "line 2, column 1: the text holds more than one document (use yaml.decode_all)" },
    { "a: *nope\n", "line 1, column 4: alias *nope refers to no anchor" },
    { "a: &x [1, *x]\n", "line 1, column 11: alias *x is inside its own anchor "
      .. "(recursive structures are not supported)" },
    { "? [a, b]\n: c\n", "line 1, column 3: complex mapping keys (sequences or mappings) are not supported" },
    { "~: x\n", "line 1, column 1: null is not supported as a mapping key" },
    { ".nan: x\n", "line 1, column 1: NaN is not supported as a mapping key" },
    { "a: !!binary aGVsbG8=\n", "line 1, column 4: unsupported tag 'binary'" },
    { "a: !custom x\n", "line 1, column 4: unsupported tag '!custom'" },
    { "a: !!set {x}\n", "line 1, column 4: unsupported tag 'set'" },
    { "a: !!int 1.5\n", "line 1, column 4: '1.5' is not a valid !!int value" },
    { "a: !!int 99999999999999999999\n", "line 1, column 4: '99999999999999999999' is not a valid "
      .. "!!int value (integers are limited to 64 bits)" },
    { "a: !!bool yes\n", "line 1, column 4: 'yes' is not a valid !!bool value" },
    { "key with\nnewline: 1\n", "line 2, column 8: mapping values are not allowed in this context" },
    { "a: 'unterminated\n", "line 2, column 1: found unexpected end of stream "
      .. "(while scanning a quoted scalar at line 1, column 4)" },
    { "a: 1\n1: x\n1.0: y\n", "line 3, column 1: duplicate key '1.0'" },
    { "\"a\\nb\": 1\n\"a\\nb\": 2\n", "line 2, column 1: duplicate key 'a\\x0ab'" },
  }
  for _, c in ipairs(cases) do
    it(name(c[1]), function()
      assert.equals(c[2], err_of(c[1]))
    end)
  end

  it("caps nesting depth (flow and block)", function()
    local deep = string.rep("[", 5000) .. string.rep("]", 5000)
    assert.equals("line 1, column 1002: nesting deeper than 1000 levels", err_of(deep))
    assert.equals("line 1, column 5: nesting deeper than 3 levels", err_of("[[[[1]]]]", { max_depth = 3 }))
    assert.is_table(yaml.decode("[[[1]]]", { max_depth = 3 }))
    local block = {}
    for i = 1, 1200 do
      block[#block + 1] = string.rep(" ", i - 1) .. "k:"
    end
    assert.matches("nesting deeper than 1000 levels", err_of(table.concat(block, "\n") .. " v\n"))
  end)

  it("stops an alias bomb quickly", function()
    local lines = { 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]' }
    for i = 2, 9 do
      local prev, cur = string.char(96 + i - 1), string.char(96 + i)
      lines[#lines + 1] = cur .. ": &" .. cur .. " [" .. string.rep("*" .. prev, 9, ",") .. "]"
    end
    local t0 = os.clock()
    local msg = err_of(table.concat(lines, "\n") .. "\n")
    assert.equals("line 6, column 8: aliases expand to more than 100000 nodes (an alias bomb?)", msg)
    assert.is_true(os.clock() - t0 < 2)
    -- The budget is an option; a small one trips early, zero forbids aliases.
    assert.matches("more than 3 nodes", err_of("a: &a [1, 2]\nb: *a\nc: *a\n", { max_alias_nodes = 3 }))
    assert.matches("more than 0 nodes", err_of("a: &a 1\nb: *a\n", { max_alias_nodes = 0 }))
    assert.is_table(yaml.decode("a: &a [1, 2]\nb: *a\n", { max_alias_nodes = 3 }))
  end)

  it("survives random garbage without raising", function()
    math.randomseed(7)
    local alphabet = { "a", ":", " ", "\n", "-", "[", "]", "{", "}", "&x", "*x", "!", "'", '"', "#",
                       "|", ">", "?", ",", "\t", "\255", "1", "~", "---", "..." }
    for _ = 1, 2000 do
      local parts = {}
      for i = 1, math.random(1, 40) do
        parts[i] = alphabet[math.random(#alphabet)]
      end
      local text = table.concat(parts)
      local ok, v, msg = pcall(yaml.decode, text)
      assert(ok, "raised on " .. string.format("%q", text) .. ": " .. tostring(v))
      if v == nil then
        assert(msg:match("^line %d+, column %d+: [^\n]+$"), msg)
      end
    end
  end)

  it("raises on misuse", function()
    assert.has_error(function() yaml.decode(nil) end)
    assert.has_error(function() yaml.decode("a", 5) end)
    assert.has_error(function() yaml.decode("a", { max_depth = -1 }) end)
  end)
end)

describe("yaml.encode", function()
  it("writes block style with sorted keys", function()
    assert.equals("a: 1\nb:\n- x\n- 2.5\nc:\n  d: true\n  e: null\n",
      yaml.encode({ b = { "x", 2.5 }, a = 1, c = { e = yaml.null, d = true } }))
  end)

  it("writes empty tables as {} and marked arrays as []", function()
    assert.equals("a: []\nb: {}\n", yaml.encode({ a = yaml.array(), b = {} }))
  end)

  it("writes scalars at the top level", function()
    assert.equals("hello\n", yaml.encode("hello"))
    assert.equals("42\n", yaml.encode(42))
    assert.equals("1.0\n", yaml.encode(1.0))
    assert.equals("null\n", yaml.encode(nil))
    assert.equals("null\n", yaml.encode(yaml.null))
    assert.equals("\"yes\"\n", yaml.encode("yes"))
  end)

  it("quotes strings another reader could take for other types", function()
    for _, s in ipairs({ "yes", "No", "on", "OFF", "y", "true", "null", "~", "", "12", "012", "0x1f",
                         "1.5", "1e3", ".inf", ".nan", "0b101", "1_000", "1:30", "2001-12-14", "<<",
                         "=", "-1", "+1" }) do
      local text = yaml.encode({ k = s })
      assert.is_truthy(text:match('^k: "'), s .. " -> " .. text)
      assert.equals(s, yaml.decode(text).k)
    end
    assert.equals("k: alice\n", yaml.encode({ k = "alice" }))
  end)

  it("writes an unmarked table with keys 1..n as a sequence (as json.dumps does)", function()
    assert.equals("- a\n- b\n", yaml.encode({ "a", "b" }))
    assert.is_true(json.is_array(yaml.decode(yaml.encode({ "a", "b" }))))
    assert.equals("1: a\n3: b\n", yaml.encode({ [1] = "a", [3] = "b" }))
  end)

  it("writes multi-line strings as literal blocks", function()
    assert.equals("body: |\n  line 1\n  line 2\n", yaml.encode({ body = "line 1\nline 2\n" }))
  end)

  it("raises on values YAML cannot hold", function()
    assert.has_error(function() yaml.encode({ f = print }) end, "yaml.encode: cannot encode a function")
    assert.has_error(function() yaml.encode({ [{}] = 1 }) end,
      "yaml.encode: cannot encode a table as a mapping key")
    assert.has_error(function() yaml.encode("\255") end, "yaml.encode: string is not valid UTF-8")
    local cyc = {}
    cyc.self = cyc
    assert.has_error(function() yaml.encode(cyc) end, "yaml.encode: nesting deeper than 1000 levels (a cycle?)")
    assert.has_error(function() yaml.encode(io.stdout) end)
  end)
end)

describe("yaml round trips", function()
  local fixed = {
    "plain", "", " leading", "trailing ", "a: b", "- item", "# not a comment", "key: value # x",
    "multi\nline", "multi\nline\n", "trailing newlines\n\n\n", "\n", "\n\nleading newlines",
    "  indented\nfirst line", "tab\there", "line\twith tab\n", "quote ' and \" both", "back\\slash",
    "\0nul", "\1\2\27 controls", "\r\n crlf", "caf\u{e9} \u{65e5}\u{672c}", "\u{85} nel",
    "\u{2028} ls", "\u{feff}bom", "emoji \u{1f600}", "@at", "`tick", "%percent", "&anchor", "*alias",
    "!tag", "|pipe", ">gt", "?q", "{brace", "[bracket", ",comma", "---", "...", "--- doc", "yes",
    "NO", "True", "~", "null", "0", "-0", "007", "1e5", "0x10", ".5", "+.inf", "1:2", "2020-01-01",
    string.rep("long ", 100), string.rep("x", 300) .. "\n" .. string.rep("y", 300),
    " \n", "a\n ", "x\n\n", "\ttab first", "last tab\t", "\n\n", " ",
  }
  for i, s in ipairs(fixed) do
    it("string " .. i .. " " .. name(s), function()
      roundtrip(s)
      roundtrip({ key = s })
      roundtrip(json.array({ s }))
      roundtrip({ [s] = "as key" })
    end)
  end

  it("numbers keep their subtype and value", function()
    for _, x in ipairs({ 0, 1, -1, math.maxinteger, math.mininteger, 0.0, -0.0, 1.0, -1.5, 0.1,
                         1e20, 1e-20, 1.7976931348623157e308, 5e-324, math.huge, -math.huge,
                         2 ^ 53, 2 ^ 63, 123456789.125 }) do
      roundtrip(x)
      roundtrip(json.array({ x }))
      roundtrip({ n = x })
    end
    roundtrip({ n = 0 / 0 })
  end)

  it("mixed keys and nested structures", function()
    roundtrip({ [1] = "one", [2.5] = "two and a half", [true] = "t", [false] = "f", s = "str",
                ["1"] = "string one" })
    roundtrip({ a = { b = { c = { d = json.array({ {}, json.array(), { x = yaml.null } }) } } } })
    roundtrip(json.array({ json.array({ json.array({}) }) }))
    roundtrip({})
    roundtrip(json.array())
  end)

  it("random values (2000 of them)", function()
    math.randomseed(42)
    local pieces = { "a", "b", " ", ":", "-", "#", "\n", "'", '"', "yes", "1", ".", "\t", "\u{e9}",
                     "~", "[", "{", "&", "*", "!", "|", ">", "null", "0x", "e5", "\\", "%" }
    local function rstring()
      local t = {}
      for i = 1, math.random(0, 8) do
        t[i] = pieces[math.random(#pieces)]
      end
      return table.concat(t)
    end
    local function rvalue(depth)
      local r = math.random(depth > 3 and 6 or 8)
      if r == 1 then
        return rstring()
      elseif r == 2 then
        return math.random(-1000, 1000)
      elseif r == 3 then
        return (math.random() - 0.5) * 10 ^ math.random(-10, 10)
      elseif r == 4 then
        return math.random(2) == 1
      elseif r == 5 then
        return yaml.null
      elseif r == 6 then
        return rstring() .. "\n" .. rstring()
      elseif r == 7 then
        local t = json.array()
        for i = 1, math.random(0, 4) do
          t[i] = rvalue(depth + 1)
        end
        return t
      else
        local t = {}
        for _ = 1, math.random(0, 4) do
          local k = math.random(5) == 1 and math.random(100) or rstring()
          t[k] = rvalue(depth + 1)
        end
        return t
      end
    end
    for _ = 1, 2000 do
      roundtrip(rvalue(0))
    end
  end)

  it("decode(encode(decode(text))) is stable for a hand-written config", function()
    local text = [[
# agent-chat config
identity:
  name: alice
root: ~/chats
channels: [dev, ops]
wait:
  interval: 2.5
state:
  template: templates/brief.lua
workflows:
  path:
    - ~/workflows
]]
    local v = assert(yaml.decode(text))
    roundtrip(v)
  end)
end)
