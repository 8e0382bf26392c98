-- Infix and prefix operators (issue 9): the calls TVM's parser builds, with
-- its precedence and associativity (all left associative):
--   * /  (multiply divide)  >  + -  (add subtract)  >  < > <= >=  >  == !=
-- and the prefix minus (negative) binding tighter than all of them, looser
-- than calls and projections.
local dp = require "devplan"

-- (variables are a function's parameters: free variables are another issue's)
local function expr(text) return dp.parse_expr("fn (%a, %b, %c, %d, %x, %y) { " .. text .. " }").body end
local function same(a, b) return dp.structural_equal(dp.parse_expr(a:find("%%") and "fn (%a, %b, %c, %d, %x, %y) { " .. a .. " }" or a),
  dp.parse_expr(b:find("%%") and "fn (%a, %b, %c, %d, %x, %y) { " .. b .. " }" or b)) end

describe("parser operators", function()
  it("builds the calls TVM's parser builds", function()
    for sym, op in pairs{["*"] = "multiply", ["/"] = "divide", ["+"] = "add", ["-"] = "subtract",
                         ["<"] = "less", [">"] = "greater", ["<="] = "less_equal",
                         [">="] = "greater_equal", ["=="] = "equal", ["!="] = "not_equal"} do
      local e = dp.parse_expr("1 " .. sym .. " 2")
      assert.are.equal("call", e.kind)
      assert.are.equal(op, e.callee.name)
      assert.are.same({1, 2}, {e.args[1].value, e.args[2].value})
      assert.are.equal(3, e.span.col) -- at the operator
    end
    local e = expr("-%x")
    assert.are.equal("negative", e.callee.name)
  end)

  it("groups by precedence, left to right, and by parentheses", function()
    assert.is_true(same("1 * 1 + 1", "(1 * 1) + 1"))
    assert.is_false(same("1 * 1 + 1", "1 * (1 + 1)"))
    assert.is_true(same("1 * 1 + 1 < 1 == 1", "(((1 * 1) + 1) < 1) == 1"))
    assert.is_true(same("1 == 1 < 1 + 1 * 1", "1 == (1 < (1 + (1 * 1)))"))
    assert.is_true(same("1 - 2 - 3", "(1 - 2) - 3"))
    assert.is_true(same("8 / 4 / 2", "(8 / 4) / 2"))
    assert.is_true(same("1 < 2 != 3 >= 4", "(1 < 2) != (3 >= 4)"))
    assert.is_true(same("1 + 2 * 3 - 4 / 5", "(1 + (2 * 3)) - (4 / 5)"))
  end)

  it("reads the prefix minus, and a run of minuses before a number as its sign (as TVM's tokenizer)", function()
    assert.are.equal(10, dp.parse_expr("--10").value)
    assert.are.equal(-10, dp.parse_expr("---10").value)
    assert.is_true(same("- -10", "negative(-10)"))
    assert.is_true(same("-%x * %y", "negative(%x) * %y"))
    assert.is_true(same("-%x.0", "negative(%x.0)"))
    assert.is_true(same("-nn.relu(%x)", "negative(nn.relu(%x))"))
    assert.is_true(same("- - %x", "negative(negative(%x))"))
    assert.is_true(same("%a - -%b", "subtract(%a, negative(%b))"))
    assert.is_true(same("%a * -1", "multiply(%a, -1)"))
  end)

  it("combines with calls, tuples, lets and function bodies", function()
    assert.is_true(same("add(%a + %b, -%c)", "add(add(%a, %b), negative(%c))"))
    assert.is_true(same("(%a + %b, %c * %d,)", "(add(%a, %b), multiply(%c, %d),)"))
    assert.is_true(same("(%a + %b).0", "add(%a, %b).0"))
    local e = dp.parse_expr("let %x = 1 + 2 * 3; %x - 1")
    assert.are.equal("add", e.value.callee.name)
    assert.are.equal("subtract", e.body.callee.name)
    e = dp.parse_expr("fn (%x: int32, %y: int32) { %x + %y }")
    assert.are.equal("add", e.body.callee.name)
    assert.are.equal("int32", tostring(dp.infer_expr(e).ret))
    e = dp.parse_expr("if (1 < 2) { 3 * 4 } else { 5 }")
    assert.are.equal("less", e.cond.callee.name)
  end)

  it("type-checks in a module; operators print as calls and read back", function()
    local T = "Tensor[(5, 7), float32]"
    local m = dp.parse("def @main(%a: " .. T .. ", %b: " .. T .. ") { %a * %b + -%a }")
    assert.are.equal(T, tostring(m["main"].body.checked_type))
    local back = dp.parse(tostring(m))
    assert.is_true(dp.structural_equal(m, back))
  end)

  it("reports a missing operand or operator where it is", function()
    local ok, err = pcall(dp.parse_expr, "1 + * 2")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("expected an expression, found '%*'"), err.message)
    assert.are.same({1, 5}, {err.line, err.col})
    ok, err = pcall(dp.parse_expr, "fn (%a) { %a -1 }") -- (as TVM: `-1` is a number)
    assert.is_false(ok)
    assert.are.same({1, 14}, {err.line, err.col})
  end)
end)
