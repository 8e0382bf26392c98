-- The parser's reproducers of ../shared/repro (issue 8), as regression
-- tests: each behaves as its header says it should.
local dp = require "devplan"
local testing = require "devplan.testing"

local REPRO = testing.shared_dir .. "/repro/"
local QUICK = os.getenv("DEVPLAN_QUICK")

local function parse_repro(name)
  return pcall(dp.parse_file, REPRO .. name)
end

local function error_at(ok, err, line, col, pattern)
  assert.is_false(ok)
  assert.are.equal("table", type(err), tostring(err))
  assert.is_truthy(err.message:find(pattern), err.message)
  assert.are.same({line, col}, {err.line, err.col})
  -- the line and a caret under the column
  assert.is_truthy(tostring(err):find("\n[^\n]*\n *%^$"), tostring(err))
end

describe("parser reproducers", function()
  it("raw_lpeg_subcapture_*: parentheses and tuple types nested past LPeg's capture limit", function()
    local ok, m = parse_repro("raw_lpeg_subcapture_paren.relay")
    assert.is_true(ok, tostring(m))
    assert.are.equal("var", m["main"].body.kind)
    ok, m = parse_repro("raw_lpeg_subcapture_tuple_type.relay")
    assert.is_true(ok, tostring(m))
    local t, d = m["main"].params[1].type_annotation, 0
    while t.kind == "tuple" do
      t, d = t.fields[1], d + 1
    end
    assert.are.same({100, "Tensor[(5, 7), float32]"}, {d, tostring(t)})
    -- patterns nested as deep (the third form the reproducer names)
    local e = dp.parse_expr("match ((1,)) { " .. ("("):rep(150) .. "_" .. (",)"):rep(150) .. " => 1 }")
    assert.are.equal("match", e.kind)
  end)

  it("raw_parse_opts_not_table: options that are not a table are an argument error", function()
    for _, call in ipairs{
      function() return dp.parse("def @main() { 1f }", nil, 5) end,
      function() return dp.parse_expr("1f", nil, print) end,
      function() return dp.parse_type("int8", 5) end,
      function() return dp.parse("def @main() { 1f }", 5) end,
      function() return dp.parse(5) end,
    } do
      local ok, err = pcall(call)
      assert.is_false(ok)
      assert.are.equal("string", type(err))
      assert.is_truthy(err:find("bad argument #%d to 'parse[_%a]*' %(table expected")
        or err:find("bad argument #1 to 'parse' %(string expected"), err)
    end
  end)

  it("raw_proj_index_overflow: a tuple index of 2^63 is a positioned error", function()
    local ok, err = parse_repro("raw_proj_index_overflow.relay")
    error_at(ok, err, 2, 45, "tuple index '9223372036854775808' is out of range")
  end)

  it("silent_wrap_numbers: out-of-range numbers are errors, never changed", function()
    local ok, err = parse_repro("silent_wrap_numbers.relay")
    assert.is_false(ok)
    assert.are.equal("value", err.code)
    local T = "Tensor[(2), float32]"
    local function parse_error(text, line, col, pattern)
      local ok2, err2 = pcall(dp.parse, text)
      error_at(ok2, err2, line, col, pattern)
    end
    parse_error("def @main(%x: Tensor[(99999999999999999999), float32]) { %x }", 1, 23,
      "dimension '99999999999999999999' is out of range")
    parse_error("def @main(%x {virtual_device=VirtualDevice(device_type=cpu, "
      .. "virtual_device_id=99999999999999999999)}: " .. T .. ") { %x }", 1, 79,
      "virtual_device_id '99999999999999999999' is out of range")
    parse_error("def @main() { Constant(Tensor[(1), int8], [300]) }", 1, 44, "number '300' is out of range for int8")
    -- the limits themselves are fine
    local m = dp.parse("def @main() { (Constant(Tensor[(2), int8], [127, -128]), Constant(Tensor[(1), uint8], [255])) }")
    assert.are.same({127, -128}, m["main"].body.fields[1].value)
    assert.are.same({255}, m["main"].body.fields[2].value)
  end)

  it("reparse_fail_inf_constant: inf and nan print as text that reads back (a literal beyond the dtype is an error)", function()
    -- TVM's parser rejects a literal its dtype cannot hold; so does devplan
    local ok, err = parse_repro("reparse_fail_inf_constant.relay")
    error_at(ok, err, 2, 15, "number '1e999f' is out of range")
    local values = {1 / 0, -1 / 0, 0 / 0, -(0 / 0)}
    for _, dtype in ipairs{"float32", "float16", "float64", "bfloat16"} do
      for _, v in ipairs(values) do
        for _, c in ipairs{dp.const(v, dtype), dp.const({v, 1, v}, dtype)} do
          local m = dp.IRModule{functions = {{"main", dp.fn({}, c)}}}
          local text = tostring(m)
          local back = dp.parse(text)
          assert.is_true(dp.structural_equal(m, back), text)
          assert.are.equal(text, tostring(back))
        end
      end
    end
    -- the spellings, as TVM's tokenizer reads `inff` (an attribute's too)
    assert.are.equal("inff", tostring(dp.const(1 / 0)))
    assert.are.equal("-inff16", tostring(dp.const(-1 / 0, "float16")))
    local x = dp.var("x", dp.type.tensor({3, 4}, "float32"))
    local f = dp.fn({x}, dp.call("clip", {x}, {a_min = -1 / 0, a_max = 1 / 0}))
    local m = dp.IRModule{functions = {{"main", f}}}
    assert.is_truthy(tostring(m):find("a_min=-inff, a_max=inff", 1, true), tostring(m))
    assert.is_true(dp.structural_equal(m, dp.parse(tostring(m))))
  end)

  it("slow_unclosed_nested_call: a syntax error inside nested calls is found in linear time", function()
    local ok, err = parse_repro("slow_unclosed_nested_call.relay")
    error_at(ok, err, 4, 1, "expected ',' or '%)', found end of input")
  end)

  it("slow_many_defs: many global definitions parse in linear time", function()
    local n = QUICK and 20000 or 100000
    for _, kind in ipairs{"indep", "chain"} do
      local b = {}
      for i = 1, n do
        b[i] = ("def @f%d(%%x: Tensor[(2), float32]) { %s }"):format(i,
          (kind == "chain" and i > 1) and ("@f" .. (i - 1) .. "(%x)") or "negative(%x)")
      end
      b[#b + 1] = "def @main(%x: Tensor[(2), float32]) { @f1(%x) }"
      local m = dp.parse(table.concat(b, "\n"))
      assert.are.equal(n + 1, #m:functions())
      assert.are.equal("f" .. n, m:functions()[n][1])
    end
  end)
end)
