--- agentchat.pycompat: small pieces of Python 3.11 behaviour in pure Lua 5.4.
--
-- The Python tool this program replaces prints values with repr() and
-- parses numbers with float()/int(); users see those strings in error
-- messages and output lines, so they must match byte for byte.
--
-- Strings are UTF-8. Bytes that are not valid UTF-8 are treated the way
-- Python treats command-line arguments (the "surrogateescape" error
-- handler): every such byte b becomes the lone surrogate U+DC00+b, which
-- is neither a space nor printable nor a digit.
--
-- Public API (all functions are pure):
--   is_space(cp)        -> boolean   str.isspace() of one code point
--   is_printable(cp)    -> boolean   str.isprintable() of one code point
--   decimal_value(cp)   -> 0..9|nil  unicodedata.decimal()
--   codes(s)            -> iterator  for pos, cp in codes(s) (surrogateescape)
--   ulen(s)             -> integer   len() of the Python str
--   strip(s), lstrip(s), rstrip(s)   str.strip() and friends (no argument)
--   float_parse(s)      -> number | nil, reason    float(str)
--   int_parse(s)        -> integer | nil, reason   int(str)
--   float_repr(x)       -> string    repr(float)
--   repr_str(s)         -> string    repr(str)
--   repr(v)             -> string    repr() of a str, int, float, bool,
--                                    nil (None) or list table
--   str(v)              -> string    str() of the same kinds of values
local json = require "agentchat.json"

local M = {}

local byte, char, concat = string.byte, string.char, table.concat
local fmt = string.format

-- ---------------------------------------------------------------------------
-- Unicode tables (Unicode 14.0.0, the database of Python 3.11).

-- str.isspace(): bidirectional class WS, B or S, or category Zs.
local SPACES = {}
for _, cp in ipairs{
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0,
  0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
  0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
} do
  SPACES[cp] = true
end

-- First code point (the digit zero) of every run of ten Unicode decimal
-- digits (category Nd), so unicodedata.decimal(c) is c - zero.
-- Regenerate with:
--   [c for c in range(0x110000) if unicodedata.decimal(chr(c), None) == 0]
local DIGIT_ZEROS = {
  0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6,
  0xc66, 0xce6, 0xd66, 0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0,
  0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90, 0x1b50, 0x1bb0, 0x1c40, 0x1c50,
  0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10, 0x104a0,
  0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0,
  0x11650, 0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0,
  0x16a60, 0x16ac0, 0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6,
  0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
}

-- Code points that str.isprintable() rejects (categories Cc, Cf, Cs, Co,
-- Cn, Zl, Zp and Zs except U+0020), as inclusive ranges. Encoded as
-- "gap.extra" pairs in base 36: a range starts `gap` after the end of the
-- previous one (+1) and spans `extra` + 1 code points. Regenerate with a
-- loop over chr(c).isprintable() for c in range(0x110000).
local NONPRINTABLE_ENCODED = table.concat{
  "0.v,2n.x,c.0,ju.1,6.3,7.0,1.0,k.0,b1.0,12.1,1e.1,3.0,1j.7,r.3,6.g," ..
  "m.0,5c.0,1c.1,1n.1,2t.d,1n.1,1d.1,f.0,s.1,1.0,b.4,v.8,22.0,4h.0," ..
  "8.1,2.1,m.0,7.0,1.2,4.1,9.1,2.1,4.7,1.3,2.0,5.1,p.1,3.0,6.3,2.1," ..
  "m.0,7.0,2.0,2.0,2.1,1.0,5.3,2.1,3.2,1.6,4.0,1.6,h.9,3.0,9.0,3.0," ..
  "m.0,7.0,2.0,5.1,a.0,3.0,3.1,1.e,4.1,c.6,7.0,3.0,8.1,2.1,m.0,7.0," ..
  "2.0,5.1,9.1,2.1,3.6,3.3,2.0,5.1,i.9,2.0,6.2,3.0,4.2,2.0,1.0,2.2," ..
  "2.2,3.2,c.3,5.2,3.0,4.1,1.5,1.d,l.4,d.0,3.0,n.0,g.1,9.0,3.0,4.6," ..
  "2.0,3.1,1.1,4.1,a.6,m.0,3.0,n.0,a.0,5.1,9.0,3.0,4.6,2.5,2.0,4.1," ..
  "a.0,2.c,d.0,3.0,1f.0,3.0,6.3,g.1,q.0,3.0,i.2,o.0,9.0,1.1,7.2,1.3," ..
  "6.0,1.0,8.5,a.1,3.b,1m.3,t.10,2.0,1.0,5.0,o.0,1.0,n.1,5.0,1.0,6.1," ..
  "a.1,4.v,20.0,10.3,13.0,10.0,f.0,d.10,5i.0,1.4,1.1,ah.0,4.1,7.0," ..
  "1.0,4.1,15.0,4.1,x.0,4.1,7.0,1.0,4.1,f.0,1l.0,4.1,1v.1,w.2,q.5," ..
  "2e.1,6.1,hs.0,s.2,2h.6,m.8,o.8,k.b,d.0,3.0,2.b,2m.1,a.5,a.5,e.0," ..
  "b.5,2h.6,17.4,1y.9,v.0,c.3,c.3,1.2,16.1,5.a,18.3,q.5,b.2,1q.1," ..
  "1t.0,t.1,b.5,a.5,e.1,v.1c,25.2,1b.0,38.7,1o.2,f.2,1o.6,17.1,b.7," ..
  "17.4,eu.1,6.1,12.1,6.1,8.0,1.0,1.0,1.0,v.1,1h.0,f.0,e.1,6.0,j.1," ..
  "3.0,9.g,o.7,1b.g,2.1,r.0,d.2,x.e,x.e,3w.3,if.o,b.k,1ec.1,w.0,9p.4," ..
  "19.0,1.4,1.1,1k.6,2.d,o.8,7.0,7.0,7.0,7.0,7.0,7.0,7.0,7.0,3i.x," ..
  "q.0,2h.b,5y.p,c.4,1r.0,2e.1,2v.4,17.0,2m.0,2c.b,1b.0,mlp.2,1j.8," ..
  "9o.j,54.7,5n.4,2.0,1.0,5.n,1n.2,a.5,1k.7,1y.7,c.5,38.a,u.2,26.0," ..
  "b.3,x.0,1j.8,e.1,a.1,2v.n,s.9,6.1,6.1,6.8,7.0,7.0,1o.3,3i.1,a.5," ..
  "8mc.b,n.3,1d.6ir,a6.1,2y.11,7.b,5.4,q.0,5.0,1.0,2.0,2.0,3h.f,cd.1," ..
  "1i.6,1.v,16.5,1f.0,j.0,4.3,5.0,3r.3,5a.2,6.1,6.1,6.1,3.2,7.0,7.c," ..
  "2.1,c.0,q.0,j.0,2.0,f.1,e.x,3f.4,3.3,19.2,2g.0,d.2,1.1a,1a.3l,t.2," ..
  "1d.e,s.3,10.8,u.4,17.4,u.0,11.3,e.15,4e.1,a.5,10.3,10.3,14.7,1g.a," ..
  "c.0,f.0,7.0,2.0,b.0,f.0,7.0,2.1u,8n.8,m.9,8.n,6.0,16.0,9.1w,6.1," ..
  "1.0,18.0,2.2,1.1,n.0,20.7,9.1b,j.0,2.4,x.2,r.4,1.1r,1k.3,k.1,1e.0," ..
  "2.4,8.0,3.0,t.1,3.3,a.6,9.6,1s.v,13.3,c.8,1i.2,t.1,r.4,q.6,4.b," ..
  "7.27,21.1i,1f.c,1f.6,1a.7,a.85,v.0,16.0,3.1,2.25,14.7,16.l,q.11," ..
  "s.j,n.8,26.3,10.8,1q.0,5.c,p.6,a.5,1h.0,i.7,13.8,2o.0,k.a,i.0," ..
  "18.1s,7.0,1.0,4.0,f.0,b.5,1n.4,a.5,4.0,8.1,2.1,m.0,7.0,2.0,5.0," ..
  "a.1,2.1,3.1,1.5,1.4,7.1,7.2,5.3u,2k.0,5.t,20.7,a.4l,1i.1,12.x," ..
  "1x.a,a.5,d.i,1m.5,a.1h,r.1,f.3,n.54,1o.2r,2b.b,8.1,1.1,8.0,2.0," ..
  "u.0,2.1,c.8,a.1x,8.1,1a.1,b.q,20.7,2b.c,21.7a,9.0,19.0,e.9,t.2," ..
  "w.1,m.0,e.20,7.0,2.0,18.2,1.0,2.0,9.7,a.5,6.0,2.0,11.0,2.0,6.6," ..
  "a.8l,p.52,1.e,1e.c,pn.2t,33.0,5.a,5g.217,2r.c,tr.34g,g7.6ns,ft.6," ..
  "v.0,a.3,29.0,a.5,u.1,6.9,1y.9,a.0,7.0,l.4,j.j3,2j.2s,23.3,1l.6," ..
  "h.1r,5.a,2.d,4qg.7,ye.15,9.6w6,4.0,7.0,2.0,83.18,3.g,4.7,b0.1s3," ..
  "2z.4,d.2,9.6,a.1,4.3mn,1a.1,n.8,38.1n,6u.9,13.1,22.7,34.k,1y.49," ..
  "k.b,2f.8,p.3q,2d.0,1z.0,2.1,1.1,2.1,4.0,c.0,1.0,7.0,1t.0,4.1,8.0," ..
  "7.0,s.0,4.0,5.0,1.2,7.0,9g.1,84.1,ji.e,5.0,f.un,v.68,7.0,h.1,7.0," ..
  "2.0,5.5w,19.2,e.1,a.3,2.8v,v.g,1m.4,1.yn,7.0,4.0,2.0,f.0,5h.1," ..
  "g.14,24.3,a.3,2.ls,1w.23,1p.5d,4.0,r.0,2.0,1.1,1.0,a.0,4.0,1.0," ..
  "1.5,1.3,1.0,1.0,1.0,3.0,2.0,1.1,1.0,1.0,1.0,1.0,1.0,2.0,1.1,4.0," ..
  "7.0,4.0,4.0,1.0,a.0,h.4,3.0,5.0,h.1f,2.7h,18.3,2s.b,f.1,f.0,f.0," ..
  "11.9,4u.1j,t.c,18.3,9.6,2.d,6.49,rc.4,g.2,d.2,38.b,2h.6,c.3,1.e," ..
  "c.3,1k.7,a.5,14.7,u.1,2.25,9g.b,e.1,5.2,5.2,7.8,t.2,b.4,6.9,a.5," ..
  "8.7,7.8,43.0,1j.10,a.sl,wyo.v,37d.6,66.1,4g2.d,5rl.2e6,f2.15t," ..
  "3t7.fcms,6o.47bj",
}

-- Decoded on first use: most commands never need it, and every command
-- pays for what a module does when it loads.
local NP_FIRST, NP_LAST
local function nonprintable_ranges()
  if not NP_FIRST then
    NP_FIRST, NP_LAST = {}, {}
    local pos = 0
    for gap, extra in NONPRINTABLE_ENCODED:gmatch("(%w+)%.(%w+)") do
      local first = pos + tonumber(gap, 36)
      local last = first + tonumber(extra, 36)
      NP_FIRST[#NP_FIRST + 1], NP_LAST[#NP_LAST + 1] = first, last
      pos = last + 1
    end
  end
  return NP_FIRST, NP_LAST
end

--- str.isspace() for one code point.
function M.is_space(cp)
  return SPACES[cp] == true
end

--- str.isprintable() for one code point (binary search in the ranges).
function M.is_printable(cp)
  local first, last = nonprintable_ranges()
  local lo, hi = 1, #first
  while lo <= hi do
    local mid = (lo + hi) // 2
    if cp < first[mid] then
      hi = mid - 1
    elseif cp > last[mid] then
      lo = mid + 1
    else
      return false
    end
  end
  return true
end

--- unicodedata.decimal(chr(cp), None): the digit value 0..9 or nil.
function M.decimal_value(cp)
  if cp >= 0x30 and cp <= 0x39 then
    return cp - 0x30
  end
  if cp < 0x660 then
    return nil
  end
  for i = 2, #DIGIT_ZEROS do
    local zero = DIGIT_ZEROS[i]
    if cp >= zero and cp <= zero + 9 then
      return cp - zero
    end
  end
  return nil
end

-- ---------------------------------------------------------------------------
-- UTF-8 decoding with Python's validity rules (no overlongs, no encoded
-- surrogates, nothing above U+10FFFF).

local function cont(s, i)
  local b = byte(s, i)
  return b and b >= 0x80 and b <= 0xbf and b or nil
end

--- Decode the character starting at byte i of s.
-- Returns the code point and the byte index after it. An invalid byte b
-- (>= 0x80) is returned alone as U+DC00 + b, like surrogateescape.
local function decode(s, i)
  local b = byte(s, i)
  if b < 0x80 then
    return b, i + 1
  end
  local n, min2, max2, cp
  if b >= 0xc2 and b <= 0xdf then
    n, cp = 2, b & 0x1f
  elseif b >= 0xe0 and b <= 0xef then
    n, cp = 3, b & 0x0f
    if b == 0xe0 then min2 = 0xa0 elseif b == 0xed then max2 = 0x9f end
  elseif b >= 0xf0 and b <= 0xf4 then
    n, cp = 4, b & 0x07
    if b == 0xf0 then min2 = 0x90 elseif b == 0xf4 then max2 = 0x8f end
  else
    return 0xdc00 + b, i + 1
  end
  local b2 = cont(s, i + 1)
  if not b2 or b2 < (min2 or 0x80) or b2 > (max2 or 0xbf) then
    return 0xdc00 + b, i + 1
  end
  cp = (cp << 6) | (b2 & 0x3f)
  for k = 2, n - 1 do
    local bk = cont(s, i + k)
    if not bk then
      return 0xdc00 + b, i + 1
    end
    cp = (cp << 6) | (bk & 0x3f)
  end
  return cp, i + n
end

--- Iterate over the code points of s: `for pos, cp, nxt in codes(s)`,
-- where pos is the first byte of the character and nxt the byte after it.
function M.codes(s)
  local i = 1
  return function()
    if i > #s then
      return nil
    end
    local pos = i
    local cp
    cp, i = decode(s, i)
    return pos, cp, i
  end
end

--- len() of the Python str that s decodes to.
function M.ulen(s)
  -- utf8.len (in C) agrees for valid UTF-8; it returns nil otherwise.
  local fast = utf8.len(s)
  if fast then
    return fast
  end
  local n = 0
  for _ in M.codes(s) do
    n = n + 1
  end
  return n
end

-- Byte bounds of s without its leading and trailing whitespace; nil if
-- s is empty or only whitespace.
local function strip_bounds(s)
  local first, last
  for pos, cp, nxt in M.codes(s) do
    if not SPACES[cp] then
      first = first or pos
      last = nxt - 1
    end
  end
  return first, last
end

--- str.strip() with Python's whitespace set.
function M.strip(s)
  local a, z = byte(s, 1), byte(s, -1)
  if a and a > 32 and a < 127 and z > 32 and z < 127 then
    return s          -- printable ASCII at both ends: nothing to strip
  elseif not s:find("[\128-\255]") then
    -- ASCII: the whitespace is \t \n \v \f \r, \x1c-\x1f and ' '
    -- (both ends found in linear time, whatever the spaces inside).
    local first = s:find("[^\t-\r\28- ]")
    if not first then
      return ""
    end
    return s:sub(first, s:match("^.*[^\t-\r\28- ]()") - 1)
  end
  local first, last = strip_bounds(s)
  return first and s:sub(first, last) or ""
end

--- str.lstrip().
--- Python: [m.strip() for m in s.split(",") if m.strip()] -- the comma
--- lists of flags and environment variables (order and duplicates kept).
M.comma_list = require("agentchat.sys").comma_list

function M.lstrip(s)
  local first = strip_bounds(s)
  return first and s:sub(first) or ""
end

--- str.rstrip().
function M.rstrip(s)
  local first, last = strip_bounds(s)
  return first and s:sub(1, last) or ""
end

-- ---------------------------------------------------------------------------
-- float() and int()

-- _PyUnicode_TransformDecimalAndSpaceToASCII: an all-ASCII string is kept
-- as is; otherwise every non-ASCII space becomes " ", every non-ASCII
-- decimal digit its ASCII digit, and anything else makes the string
-- invalid. Note that ASCII \x1c-\x1f are *not* turned into spaces, so
-- float("\x1c1") fails even though "\x1c".isspace() is true.
local function to_ascii(s)
  if not s:find("[\128-\255]") then
    return s
  end
  local out = {}
  for _, cp in M.codes(s) do
    if cp < 127 then
      out[#out + 1] = char(cp)
    elseif SPACES[cp] then
      out[#out + 1] = " "
    else
      local d = M.decimal_value(cp)
      if not d then
        return nil
      end
      out[#out + 1] = char(0x30 + d)
    end
  end
  return concat(out)
end

-- Py_ISSPACE: the ASCII whitespace that float()/int() strip.
local function ascii_strip(s)
  return (s:gsub("^[ \t\n\v\f\r]+", ""):gsub("[ \t\n\v\f\r]+$", ""))
end

-- _Py_string_to_number_with_underscores: an underscore must sit between
-- two ASCII digits; returns the string without underscores, or nil.
local function remove_underscores(s)
  if not s:find("_", 1, true) then
    return s
  end
  if s:find("__", 1, true) or s:find("[^0-9]_") or s:find("_[^0-9]")
      or s:find("^_") or s:find("_$") then
    return nil
  end
  return (s:gsub("_", ""))
end

--- Python float(s) for a str s.
-- Returns a float, or nil and a reason. Accepts surrounding whitespace,
-- a sign, decimal digits (Unicode decimal digits too) with single
-- underscores between digits, a fraction, an exponent, and inf, infinity
-- and nan in any case. Hexadecimal is rejected. Overflow gives +-inf and
-- underflow 0.0, as in Python.
function M.float_parse(s)
  if type(s) ~= "string" then
    return nil, "not a string"
  end
  local t = to_ascii(s)
  t = t and remove_underscores(t)
  if not t then
    return nil, "could not convert string to float"
  end
  t = ascii_strip(t)
  local sign, rest = t:match("^([+-]?)(.*)$")
  local lower = rest:lower()
  if lower == "inf" or lower == "infinity" then
    return sign == "-" and -math.huge or math.huge
  elseif lower == "nan" then
    return 0.0 / 0.0
  end
  local mant, exp = rest:match("^([0-9.]+)([eE][+-]?[0-9]+)$")
  if not mant then
    mant, exp = rest:match("^([0-9.]+)$"), "e0"
  end
  if not mant or not (mant:match("^[0-9]+%.?[0-9]*$")
      or mant:match("^%.[0-9]+$")) then
    return nil, "could not convert string to float"
  end
  -- The exponent makes tonumber() return a float (strtod, correctly
  -- rounded); "-0" stays -0.0.
  return tonumber(sign .. mant .. exp)
end

--- Python int(s) for a str s (base 10).
-- Returns an integer, or nil and a reason. Accepts surrounding
-- whitespace, a sign, decimal digits (Unicode decimal digits too),
-- leading zeros and single underscores between digits. Unlike Python,
-- values outside the 64-bit range -2^63 .. 2^63-1 are rejected (nil,
-- "integer out of range"), since Lua integers cannot hold them.
--- The value of int(s) as a canonical decimal string of any size
-- ("-12", "0", "123456789012345678901234567890"), i.e. str(int(s));
-- nil and a reason when Python's int() would raise.
function M.int_digits(s)
  if type(s) ~= "string" then
    return nil, "not a string"
  end
  local t = to_ascii(s)
  t = t and ascii_strip(t)
  local sign, digits = (t or ""):match("^([+-]?)([0-9_]+)$")
  digits = digits and remove_underscores(digits)
  if not digits then
    return nil, "invalid literal for int() with base 10"
  end
  digits = digits:gsub("^0+", "")
  if digits == "" then
    return "0"
  end
  return (sign == "-" and "-" or "") .. digits
end

function M.int_parse(s)
  local text, why = M.int_digits(s)
  if not text then
    return nil, why
  end
  local sign, digits = text:match("^(%-?)(%d+)$")
  local limit = sign == "-" and "9223372036854775808" or "9223372036854775807"
  if #digits > #limit or (#digits == #limit and digits > limit) then
    return nil, "integer out of range"
  end
  return math.tointeger(tonumber(sign .. digits))
end

-- ---------------------------------------------------------------------------
-- repr(float)

-- Digits of m (no sign, no leading zeros) and exponent e such that
-- m * 10^e reads back as x.
local function roundtrips(m, e, x)
  return tonumber(fmt("%de%d", m, e)) == x
end

--- Shortest decimal digits that read back as x (x finite, > 0), as
-- (digits, decpt) with x = 0.DIGITS * 10^decpt, like Python's
-- _Py_dg_dtoa mode 0. %.Ne gives the nearest N-digit decimal; at a power
-- of two the rounding interval is lopsided, so the neighbours of that
-- decimal are tried as well before moving to N + 1 digits.
local function shortest(x)
  for p = 1, 17 do
    local s = fmt("%." .. (p - 1) .. "e", x)
    local lead, frac, e = s:match("^(%d)%.?(%d*)e([-+]%d+)$")
    local m, e10 = tonumber(lead .. frac), tonumber(e) - (p - 1)
    local found
    if roundtrips(m, e10, x) then
      found = m
    else
      local lo, hi = 10 ^ (p - 1), 10 ^ p
      for _, c in ipairs{ m - 1, m + 1 } do
        if c >= lo and c < hi and roundtrips(c, e10, x) then
          found = c
          break
        end
      end
    end
    if found then
      local digits = tostring(found):gsub("0+$", "")
      return digits, e10 + p
    end
  end
  error("float_repr: no round-trip representation")  -- unreachable
end

--- Python repr(float). Integers are converted to float first.
function M.float_repr(x)
  if math.type(x) == "integer" then
    x = x + 0.0
  end
  if x ~= x then
    return "nan"
  elseif x == math.huge then
    return "inf"
  elseif x == -math.huge then
    return "-inf"
  elseif x == 0 then
    return 1 / x < 0 and "-0.0" or "0.0"
  end
  local sign = x < 0 and "-" or ""
  local digits, decpt = shortest(math.abs(x))
  local n = #digits
  if decpt <= -4 or decpt > 16 then
    local mant = digits:sub(1, 1)
    if n > 1 then
      mant = mant .. "." .. digits:sub(2)
    end
    return sign .. mant .. fmt("e%+03d", decpt - 1)
  elseif decpt <= 0 then
    return sign .. "0." .. ("0"):rep(-decpt) .. digits
  elseif decpt < n then
    return sign .. digits:sub(1, decpt) .. "." .. digits:sub(decpt + 1)
  end
  return sign .. digits .. ("0"):rep(decpt - n) .. ".0"
end

-- ---------------------------------------------------------------------------
-- repr(str)

local ESCAPES = { [0x5c] = "\\\\", [0x09] = "\\t", [0x0a] = "\\n",
  [0x0d] = "\\r" }

--- Python repr() of a str (s is UTF-8; invalid bytes show as \udcNN).
function M.repr_str(s)
  local quote = "'"
  if s:find("'", 1, true) and not s:find('"', 1, true) then
    quote = '"'
  end
  local qb = byte(quote)
  local out = { quote }
  for pos, cp in M.codes(s) do
    local piece
    if cp == qb then
      piece = "\\" .. quote
    elseif ESCAPES[cp] then
      piece = ESCAPES[cp]
    elseif cp < 0x20 or cp == 0x7f then
      piece = fmt("\\x%02x", cp)
    elseif cp < 0x7f then
      piece = char(cp)
    elseif M.is_printable(cp) then
      local _, nxt = decode(s, pos)
      piece = s:sub(pos, nxt - 1)
    elseif cp <= 0xff then
      piece = fmt("\\x%02x", cp)
    elseif cp <= 0xffff then
      piece = fmt("\\u%04x", cp)
    else
      piece = fmt("\\U%08x", cp)
    end
    out[#out + 1] = piece
  end
  out[#out + 1] = quote
  return concat(out)
end

-- Keys exactly 1..#t (an empty table counts: Lua's {} is read as a list).
local function is_sequence(t)
  local n = 0
  for _ in pairs(t) do
    n = n + 1
  end
  return n == #t
end

--- Python repr() of a Lua value: strings as str, integers as int, floats
-- as float, booleans as True/False, nil as None, and sequences as lists.
function M.repr(v)
  local t = type(v)
  if t == "string" then
    return M.repr_str(v)
  elseif t == "number" then
    if math.type(v) == "integer" then
      return tostring(v)
    end
    return M.float_repr(v)
  elseif t == "boolean" then
    return v and "True" or "False"
  elseif v == nil then
    return "None"
  elseif v == json.null then
    return "None"
  elseif t == "table" and (json.is_array(v) or is_sequence(v)) then
    local parts = {}
    for i = 1, #v do
      parts[i] = M.repr(v[i])
    end
    return "[" .. concat(parts, ", ") .. "]"
  elseif t == "table" then
    -- A dict. Python keeps the JSON text's key order, which a Lua table
    -- has lost: keys are shown sorted (exact for zero or one key).
    local keys, parts = {}, {}
    for k in pairs(v) do
      keys[#keys + 1] = tostring(k)
    end
    table.sort(keys)
    for i, k in ipairs(keys) do
      parts[i] = M.repr_str(k) .. ": " .. M.repr(v[k])
    end
    return "{" .. concat(parts, ", ") .. "}"
  end
  return tostring(v)
end

--- Python str() of the same kinds of values as repr(): a string is
-- returned unchanged, everything else as repr().
function M.str(v)
  if type(v) == "string" then
    return v
  end
  return M.repr(v)
end

return M
