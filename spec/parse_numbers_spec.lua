-- Number literals (issues 8 and 9): read once, checked against their dtype
-- (as TVM's parser: 2147483648i32, 32768i16, 3.40283e+38f32 and 65505f16
-- are errors; an unsuffixed integer too big for int32 is int64), stored with
-- the core's conversions (a float16 literal and dp.const of the same number
-- have the same bits), and printed so that they read back.
local dp = require "devplan"

local function scalar(text)
  local e = dp.parse_expr(text)
  assert.are.equal("const", e.kind)
  return e.value, e.dtype
end

local function fails(text, pattern, col)
  local ok, err = pcall(dp.parse_expr, text)
  assert.is_false(ok, text)
  assert.are.equal("table", type(err))
  assert.is_truthy(err.message:find(pattern), err.message)
  assert.are.equal(col or 1, err.col)
end

describe("parser numbers", function()
  it("reads integers: int32 by default, int64 when too big, suffixes checked", function()
    assert.are.same({1, "int32"}, {scalar("1")})
    assert.are.same({-5, "int32"}, {scalar("-05")})
    assert.are.same({2147483647, "int32"}, {scalar("2147483647")})
    assert.are.same({2147483648, "int64"}, {scalar("2147483648")})
    assert.are.same({-2147483648, "int32"}, {scalar("-2147483648")})
    assert.are.same({9223372036854775807, "int64"}, {scalar("9223372036854775807")})
    assert.are.same({math.mininteger, "int64"}, {scalar("-9223372036854775808")})
    assert.are.same({-42, "int16"}, {scalar("-42i16")})
    assert.are.same({-42, "int32"}, {scalar("-42i")})
    assert.are.same({255, "uint8"}, {scalar("255u8")})
    assert.are.same({7, "uint32"}, {scalar("7u")})
    assert.are.equal("18446744073709551615u64", tostring(dp.parse_expr("18446744073709551615u64")))
    fails("2147483648i32", "number '2147483648i32' is out of range for int32")
    fails("32768i16", "out of range for int16")
    fails("256u8", "out of range for uint8")
    fails("-1u8", "out of range for uint8")
    fails("9223372036854775808", "out of range for int64")
    fails("99999999999999999999999", "out of range")
    fails("1.5i64", "an integer was expected, found '1.5i64'")
    fails("1f8", "unknown number suffix")
  end)

  it("reads reals: float32 by default, suffixes checked against the dtype's largest finite value", function()
    assert.are.same({1.5, "float32"}, {scalar("1.5")})
    assert.are.same({3.0, "float16"}, {scalar("3f16")})
    assert.are.same({0.1, "float64"}, {scalar("0.1f64")})
    assert.are.same({1e1, "float32"}, {scalar("1E+1f")})
    assert.are.same({65504.0, "float16"}, {scalar("65504f16")})
    fails("65505f16", "out of range for float16")
    fails("3.40283e+38f32", "out of range for float32")
    fails("1e999f64", "out of range")
  end)

  it("stores a float16 literal with the same bits as dp.const (round to nearest even)", function()
    -- 1 + 0.75 ulp of float16 rounds up to 1 + 1 ulp
    for _, v in ipairs{1.000732421875, 1.0001, 0.1, 65504, 6e-8, 2.98e-8, -0.0, 1 / 3} do
      local lit = dp.parse_expr(string.format("%.17gf16", v))
      assert.is_true(dp.structural_equal(lit, dp.const(v, "float16")), tostring(v))
    end
    assert.are.equal(1.0009765625, dp.const(1.000732421875, "float16").value)
    assert.are.equal(1.0009765625, scalar("1.000732421875f16"))
    -- in a tensor constant too
    local c = dp.parse_expr("Constant(Tensor[(2), float16], [1.000732421875, 1e-8])")
    assert.are.same({1.0009765625, 0.0}, c.value)
  end)

  it("reads inf and nan, with a sign, as TVM's tokenizer reads `inff`", function()
    assert.are.same({math.huge, "float32"}, {scalar("inff")})
    assert.are.same({-math.huge, "float32"}, {scalar("-inff")})
    assert.are.same({-math.huge, "float16"}, {scalar("-inff16")})
    assert.are.same({math.huge, "float64"}, {scalar("inff64")})
    local v = scalar("nanf")
    assert.is_true(v ~= v)
    local c = dp.parse_expr("Constant(Tensor[(3), float32], [inf, -inf, nan])")
    assert.are.equal(math.huge, c.value[1])
    assert.are.equal(-math.huge, c.value[2])
    fails("infi", "unknown operator 'infi'") -- (a name, not a number)
  end)

  it("checks each value of a Constant against its dtype", function()
    local c = dp.parse_expr("Constant(Tensor[(2, 2), int16], [1, -2, 32767, -32768])")
    assert.are.same({{1, -2}, {32767, -32768}}, c.value)
    fails("Constant(Tensor[(1), int16], [32768])", "number '32768' is out of range for int16", 31)
    fails("Constant(Tensor[(1), int32], [1.5])", "int32 constant takes integers", 31)
    fails("Constant(Tensor[(1), bool], [2])", "out of range for bool", 30)
    fails("Constant(Tensor[(2), float32], [1])", "constant of 2 elements has 1 value")
    assert.are.same({true, false, true}, dp.parse_expr("Constant(Tensor[(3), bool], [True, 0, 1])").value)
  end)

  it("prints every scalar dtype as a literal that reads back", function()
    for _, dt in ipairs{"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                        "float16", "float32", "float64", "bool"} do
      local c = dp.const(dt == "bool" and true or 1, dt)
      local back = dp.parse_expr(tostring(c))
      assert.is_true(dp.structural_equal(c, back), dt .. ": " .. tostring(c))
    end
    assert.are.equal("42i16", tostring(dp.const(42, "int16")))
    assert.are.equal("Constant(bfloat16, [1.5])", tostring(dp.const(1.5, "bfloat16")))
  end)
end)
