-- Specs for agentchat.pycompat. Every expected value below was printed
-- by CPython 3.11 (repr(), float(), int(), str.strip(), str.isspace()).
local M = require "agentchat.pycompat"

-- { value, repr(value) }
local FLOAT_REPR = {
  { 1.0, "1.0" },
  { 0.25, "0.25" },
  { 1e-05, "1e-05" },
  { 1e+16, "1e+16" },
  { 1.5e+16, "1.5e+16" },
  { 1.5e+300, "1.5e+300" },
  { 123456789.0, "123456789.0" },
  { 0.0001, "0.0001" },
  { -0.0, "-0.0" },
  { 0.0, "0.0" },
  { math.huge, "inf" },
  { -math.huge, "-inf" },
  { 0.1, "0.1" },
  { 0.30000000000000004, "0.30000000000000004" },
  { 0.3333333333333333, "0.3333333333333333" },
  { 0.6666666666666666, "0.6666666666666666" },
  { 1000000000000000.0, "1000000000000000.0" },
  { 9999999999999998.0, "9999999999999998.0" },
  { 1e+22, "1e+22" },
  { 0.00011000000000000002, "0.00011000000000000002" },
  { 0.00011, "0.00011" },
  { 5e-324, "5e-324" },
  { 2.2250738585072014e-308, "2.2250738585072014e-308" },
  { 1.7976931348623157e+308, "1.7976931348623157e+308" },
  { 1.5e-323, "1.5e-323" },
  { 8.98846567431158e+307, "8.98846567431158e+307" },
  { 2.2250738585072014e-308, "2.2250738585072014e-308" },
  { 100.0, "100.0" },
  { 1234.5, "1234.5" },
  { -2.5, "-2.5" },
  { 1e+100, "1e+100" },
  { 1.2345678901234568e+16, "1.2345678901234568e+16" },
  { 0.001, "0.001" },
  { 3.141592653589793, "3.141592653589793" },
  { 2.718281828459045, "2.718281828459045" },
  { 4.35, "4.35" },
  { 0.3, "0.3" },
  { 1e-310, "1e-310" },
  { 9007199254740992.0, "9007199254740992.0" },
  { 1.23e-18, "1.23e-18" },
  { 6.02214076e+23, "6.02214076e+23" },
}

-- { str, repr(float(str)) or nil when float() raises ValueError }
local FLOAT_PARSE = {
  { "1.5", "1.5" },
  { " 1.5 ", "1.5" },
  { "\t1.5\n", "1.5" },
  { "1_0", "10.0" },
  { "1_000.000_1", "1000.0001" },
  { "1e1_0", "10000000000.0" },
  { "-1", "-1.0" },
  { "+1", "1.0" },
  { ".5", "0.5" },
  { "5.", "5.0" },
  { "1e5", "100000.0" },
  { "1E-5", "1e-05" },
  { "1e+05", "100000.0" },
  { "inf", "inf" },
  { "-inf", "-inf" },
  { "+Infinity", "inf" },
  { "iNfInItY", "inf" },
  { "-0", "-0.0" },
  { "0", "0.0" },
  { "00.5", "0.5" },
  { "1e400", "inf" },
  { "-1e400", "-inf" },
  { "1e-400", "0.0" },
  { "\217\163.\217\165", "3.5" },
  { "\239\188\145\239\188\146", "12.0" },
  { "\194\1601.5\227\128\128", "1.5" },
  { "\194\1331", "1.0" },
  { "1\226\128\168", "1.0" },
  { "1__0", nil },
  { "_1", nil },
  { "1_", nil },
  { "1_.5", nil },
  { "1._5", nil },
  { "1_e5", nil },
  { "0x10", nil },
  { "1e", nil },
  { "e1", nil },
  { ".", nil },
  { "", nil },
  { " ", nil },
  { "+", nil },
  { "- 1", nil },
  { "+-1", nil },
  { "infin", nil },
  { "in f", nil },
  { "nanx", nil },
  { "1.5.2", nil },
  { "1e5.5", nil },
  { "\0281.5", nil },
  { "1.5\031", nil },
  { "1\000", nil },
  { "\217\161\217\171\217\165", nil },
  { "1,5", nil },
  { "\195\169", nil },
}

-- { str, int(str) or nil when int() raises ValueError }
local INT_PARSE = {
  { "0", 0 },
  { "-0", 0 },
  { "+7", 7 },
  { " 42 ", 42 },
  { "\n-42\t", -42 },
  { "1_000", 1000 },
  { "0_0", 0 },
  { "00012", 12 },
  { "\217\163\217\163", 33 },
  { "\194\1605", 5 },
  { "9223372036854775807", 9223372036854775807 },
  { "-9223372036854775808", -9223372036854775808 },
  { "1.0", nil },
  { "1e3", nil },
  { "0x10", nil },
  { "_1", nil },
  { "1_", nil },
  { "1__0", nil },
  { "", nil },
  { " ", nil },
  { "-", nil },
  { "+ 1", nil },
  { "\0281", nil },
  { "abc", nil },
  { "1 2", nil },
  { "\217\163", 3 },
}

-- { str, repr(str) }; invalid UTF-8 stands for the surrogate escapes
-- Python makes of undecodable argv bytes.
local REPR_STR = {
  { "", "''" },
  { "abc", "'abc'" },
  { "it's", "\"it's\"" },
  { "say \"hi\"", "'say \"hi\"'" },
  { "both ' and \"", "'both \\' and \"'" },
  { "back\\slash", "'back\\\\slash'" },
  { "tab\there", "'tab\\there'" },
  { "new\nline", "'new\\nline'" },
  { "cr\013x", "'cr\\rx'" },
  { "\000\001\031\127", "'\\x00\\x01\\x1f\\x7f'" },
  { "caf\195\169", "'caf\195\169'" },
  { "\195\188n\195\175c\195\182de", "'\195\188n\195\175c\195\182de'" },
  { "\194\133", "'\\x85'" },
  { "\194\160", "'\\xa0'" },
  { "\194\173", "'\\xad'" },
  { "\226\128\168", "'\\u2028'" },
  { "\226\128\139", "'\\u200b'" },
  { "\239\187\191", "'\\ufeff'" },
  { "\227\128\128", "'\\u3000'" },
  { "\240\159\152\128", "'\240\159\152\128'" },
  { "\243\160\128\129", "'\\U000e0001'" },
  { "\244\143\191\191", "'\\U0010ffff'" },
  { "\238\128\128", "'\\ue000'" },
  { "\205\184", "'\\u0378'" },
  { "\255", "'\\udcff'" },
  { "\237\160\128", "'\\udced\\udca0\\udc80'" },
  { "x\195", "'x\\udcc3'" },
  { "\192\175", "'\\udcc0\\udcaf'" },
}

-- { s, s.strip(), s.lstrip(), s.rstrip() }
local STRIP = {
  { "  a b  ", "a b", "a b  ", "  a b" },
  { "\t\n\011\012\013 a\013\n", "a", "a\013\n", "\t\n\011\012\013 a" },
  { "\028\029\030\031a\031", "a", "a\031", "\028\029\030\031a" },
  { "\194\133\194\160a\225\154\128\226\128\128", "a", "a\225\154\128\226\128\128", "\194\133\194\160a" },
  { "\226\128\138a\226\128\168\226\128\169", "a", "a\226\128\168\226\128\169", "\226\128\138a" },
  { "\226\128\175a\226\129\159\227\128\128", "a", "a\226\129\159\227\128\128", "\226\128\175a" },
  { "\226\128\139x", "\226\128\139x", "\226\128\139x", "\226\128\139x" },
  { "   ", "", "", "" },
  { "", "", "", "" },
  { "a", "a", "a", "a" },
  { "\194\160", "", "", "" },
  { "\255a ", "\255a", "\255a ", "\255a" },
}

-- [c for c in range(0x110000) if chr(c).isspace()]
local SPACES = {
  0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0,
  0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
  0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000
}

describe("pycompat", function()
  describe("float_repr", function()
    for _, case in ipairs(FLOAT_REPR) do
      it(case[2], function()
        assert.equal(case[2], M.float_repr(case[1]))
      end)
    end

    it("prints nan", function()
      assert.equal("nan", M.float_repr(0 / 0))
      assert.equal("nan", M.float_repr(-(0 / 0)))
    end)

    it("treats integers as floats", function()
      assert.equal("1.0", M.float_repr(1))
      assert.equal("-0.0", M.float_repr(-0.0))
      assert.equal("1e+16", M.float_repr(10000000000000000))
    end)

    it("round-trips the shortest digits", function()
      for _, x in ipairs{ 0.1, 1 / 3, 2 ^ -1074, 2 ^ 1023, 1e23, 123.456 } do
        assert.equal(x, tonumber(M.float_repr(x)))
      end
    end)
  end)

  describe("float_parse", function()
    for _, case in ipairs(FLOAT_PARSE) do
      it(M.repr_str(case[1]), function()
        local v = M.float_parse(case[1])
        if case[2] == nil then
          assert.is_nil(v)
        else
          assert.equal("float", math.type(v))
          assert.equal(case[2], M.float_repr(v))
        end
      end)
    end

    it("parses nan in any case and with a sign", function()
      for _, s in ipairs{ "nan", "NaN", "-nan", "+NAN", " nan " } do
        local v = M.float_parse(s)
        assert.is_true(v ~= v, s)
      end
    end)

    it("returns a reason on failure", function()
      local v, why = M.float_parse("soon")
      assert.is_nil(v)
      assert.is_string(why)
      assert.is_nil(M.float_parse(nil))
    end)
  end)

  describe("int_parse", function()
    for _, case in ipairs(INT_PARSE) do
      it(M.repr_str(case[1]), function()
        local v = M.int_parse(case[1])
        if case[2] == nil then
          assert.is_nil(v)
        else
          assert.equal("integer", math.type(v))
          assert.equal(case[2], v)
        end
      end)
    end

    it("rejects values beyond 64 bits, which Python would accept", function()
      for _, s in ipairs{ "9223372036854775808", "-9223372036854775809",
          "100000000000000000000", ("9"):rep(30) } do
        local v, why = M.int_parse(s)
        assert.is_nil(v)
        assert.equal("integer out of range", why)
      end
      assert.equal(math.mininteger, M.int_parse("-000009223372036854775808"))
    end)
  end)

  describe("repr_str", function()
    for _, case in ipairs(REPR_STR) do
      it(case[2], function()
        assert.equal(case[2], M.repr_str(case[1]))
      end)
    end
  end)

  describe("repr and str", function()
    local cases = {
      { "x", "'x'", "x" },
      { 3, "3", "3" },
      { -7, "-7", "-7" },
      { 3.0, "3.0", "3.0" },
      { 1e-5, "1e-05", "1e-05" },
      { true, "True", "True" },
      { false, "False", "False" },
      { nil, "None", "None" },
      { {}, "[]", "[]" },
      { { "a", 1, 2.5, { "b" } }, "['a', 1, 2.5, ['b']]", "['a', 1, 2.5, ['b']]" },
    }
    for i, case in ipairs(cases) do
      it(case[2] .. " (" .. i .. ")", function()
        assert.equal(case[2], M.repr(case[1]))
        assert.equal(case[3], M.str(case[1]))
      end)
    end
  end)

  describe("whitespace", function()
    for _, case in ipairs(STRIP) do
      it(M.repr_str(case[1]), function()
        assert.equal(case[2], M.strip(case[1]))
        assert.equal(case[3], M.lstrip(case[1]))
        assert.equal(case[4], M.rstrip(case[1]))
      end)
    end

    it("is_space matches str.isspace for every code point", function()
      local expected = {}
      for _, cp in ipairs(SPACES) do
        expected[cp] = true
      end
      for cp = 0, 0x10ffff do
        if M.is_space(cp) ~= (expected[cp] == true) then
          error(("is_space(0x%x) is wrong"):format(cp))
        end
      end
    end)
  end)

  describe("code points", function()
    it("decodes UTF-8 and escapes invalid bytes as U+DC80..U+DCFF", function()
      local got = {}
      for pos, cp, nxt in M.codes("a\195\169\255\226\130\172\240\159\152\128\237\160\128") do
        got[#got + 1] = { pos, cp, nxt }
      end
      assert.same({
        { 1, 0x61, 2 }, { 2, 0xe9, 4 }, { 4, 0xdcff, 5 }, { 5, 0x20ac, 8 },
        { 8, 0x1f600, 12 }, { 12, 0xdced, 13 }, { 13, 0xdca0, 14 },
        { 14, 0xdc80, 15 },
      }, got)
    end)

    it("counts characters like len()", function()
      assert.equal(0, M.ulen(""))
      assert.equal(4, M.ulen("caf\195\169"))
      assert.equal(3, M.ulen("\192\175x"))
    end)

    it("knows printable code points", function()
      assert.is_true(M.is_printable(0x41))
      assert.is_true(M.is_printable(0x20))
      assert.is_true(M.is_printable(0xe9))
      assert.is_true(M.is_printable(0x1f600))
      assert.is_false(M.is_printable(0x7f))
      assert.is_false(M.is_printable(0x85))
      assert.is_false(M.is_printable(0xa0))
      assert.is_false(M.is_printable(0x2028))
      assert.is_false(M.is_printable(0xdcff))
      assert.is_false(M.is_printable(0x10ffff))
    end)

    it("knows decimal digits", function()
      assert.equal(7, M.decimal_value(0x37))
      assert.equal(3, M.decimal_value(0x663))
      assert.equal(9, M.decimal_value(0x1d7ff))
      assert.is_nil(M.decimal_value(0x41))
      assert.is_nil(M.decimal_value(0xb2))  -- superscript two: a digit, not decimal
    end)
  end)
end)
