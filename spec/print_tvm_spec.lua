-- The printer as TVM's printer tests expect it (issue 9): every text it
-- prints parses back to the same program; arguments bound before the
-- callee; free variables declared; names kept; spans on request; primfn
-- scopes escaped; else-if chains flat and linear.
local dp = require "devplan"

local SEMVER = '#[version = "0.0.5"]\n'

-- TVM's astext helper: print, parse back, compare.
local function astext(x, opts)
  local text = opts and dp.astext(x, opts) or tostring(x)
  local back = (dp.is_module(x) and dp.parse or dp.parse_expr)(text)
  assert.is_true(dp.structural_equal(back, x), text)
  return text
end

local function lines(...) return table.concat({...}, "\n") end

describe("printer, as TVM's", function()
  it("binds a call's arguments before its callee (test_call_node_order)", function()
    local x, y = dp.var("x"), dp.var("y")
    local prog = dp.call(dp.fn({x}, x), {dp.call(dp.fn({y}, y), {dp.const(1, "int32")})})
    assert.are.equal(lines("%0 = fn (%y) {", "  %y", "};", "%1 = %0(1);", "%2 = fn (%x) {", "  %x", "};", "%2(%1)"),
                     astext(prog))
  end)

  it("inlines a let's value that is used once (test_let_inlining)", function()
    local tup = dp.tuple{dp.const(0, "int32"), dp.const(0, "int32")}
    local x = dp.var("x")
    assert.are.equal(lines("%0 = (0, 0);", "let %x = %0;", "%0"), astext(dp.let(x, tup, tup)))
    assert.are.equal(lines("let %x = (0, 0);", "%x"), astext(dp.let(x, tup, x)))
  end)

  it("prints a let used twice so that it parses back", function()
    local a = dp.var("a", dp.type.tensor({2}, "float32"))
    local x = dp.var("x")
    local l = dp.let(x, dp.call("negative", {a}), dp.call("add", {x, x}))
    local m = dp.IRModule{functions = {{"main", dp.fn({a}, dp.tuple{l, l})}}}
    local text = astext(m)
    assert.truthy(text:find("%0 = (\n    let %x = negative(%a);\n    add(%x, %x)\n  );", 1, true), text)
  end)

  it("declares free variables with free_var, and names them as written", function()
    local x, y = dp.var("base/x"), dp.var("base/y")
    local text = astext(dp.call("add", {x, y}))
    assert.are.equal(lines("free_var %base/x;", "free_var %base/y;", "add(%base/x, %base/y)"), text)
    assert.truthy(astext(dp.var("1")):find("%v1", 1, true)) -- (test_variable_name)
    local w = dp.var("conv1.weight", dp.type.tensor({3}, "float32"))
    assert.truthy(astext(dp.fn({w}, w)):find("%conv1.weight: Tensor", 1, true))
    -- what the lexer cannot read as one name becomes `_`
    assert.truthy(astext(dp.var("a b/2")):find("%a_b_2", 1, true))
    -- a free variable in a function of a module is declared in its body
    local m = dp.IRModule{functions = {{"main", dp.fn({}, dp.call("negative", {dp.var("z", dp.type.scalar("int8"))}))}}}
    assert.truthy(astext(m):find("def @main() {\n  free_var %z: int8;\n  negative(%z)\n}", 1, true))
  end)

  it("prints scalars as literals of their dtype (test_scalars)", function()
    for _, c in ipairs{{42, "int16", "42i16"}, {42, "int32", "42"}, {42, "int64", "42i64"},
                       {3, "float16", "3f16"}, {3, "float32", "3f"}, {3, "float64", "3f64"}} do
      assert.are.equal(c[3], astext(dp.const(c[1], c[2])))
    end
  end)

  it("prints a None attribute and a constructor without fields (test_null_attribute, test_unapplied_constructor)", function()
    local x, y = dp.var("x"), dp.var("y")
    assert.truthy(astext(dp.fn({x}, y, {attrs = {TestAttribute = dp.NONE}})):find("TestAttribute=None", 1, true))
    local typedef = "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}"
    local main = "def @main[A]() -> fn (A, List[A]) -> List[A] {\n  Cons\n}"
    local text = astext(dp.parse(SEMVER .. typedef .. "\n" .. main))
    assert.truthy(text:find(typedef, 1, true), text)
    assert.truthy(text:find(main, 1, true), text)
  end)

  it("prints checked types as TVM (test_optional_info)", function()
    local c = dp.const(1, "int32")
    local m = dp.infer_type(dp.IRModule{functions = {{"main", dp.fn({}, dp.call("add", {c, c}))}}})
    local _, n = astext(m, {types = true}):gsub("/%* ty=int32 %*/", "")
    assert.are.equal(3, n)
  end)

  it("prints spans when asked, as TVM (test_span)", function()
    local x = dp.var("x", dp.type.tensor({3, 2}, "float32"))
    local z = dp.call("add", {x, dp.const(10e10)}, nil, {span = {source = "Add0", line = 0, col = 0}})
    z = dp.call("add", {z, z}, nil, {span = {source = "Add1", line = 0, col = 0}})
    local txt = astext(dp.fn({x}, z), {spans = true})
    assert.truthy(txt:find("add(%x, 1e+11f) /* span=Add0:0:0 */", 1, true), txt)
    assert.truthy(txt:find("add(%0, %0) /* span=Add1:0:0 */", 1, true), txt)
    assert.falsy(tostring(dp.fn({x}, z)):find("span", 1, true))
    local m = dp.parse("def @main(%a: float32) {\n  add(%a, %a)\n}", nil, {source_name = "m.relay"})
    local t = astext(m, {spans = true, types = true})
    assert.truthy(t:find("add(%a, %a) /* ty=float32 span=m.relay:2:3 */", 1, true), t)
  end)

  it("escapes primfn buffer scopes (fuzz/findings/p1_primfn_scope_not_escaped.relay)", function()
    local text = 'primfn @p(Tensor[(2), float32] scope="a\\"b", Tensor[(2), float32] scope="c\\\\d") -> Tensor[(2), float32];\n'
      .. "def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) { call_lowered(@p, (%x, %y)) }"
    local m = dp.parse(text)
    assert.are.equal('a"b', m:primfn("p").args[1].scope)
    assert.are.equal("c\\d", m:primfn("p").args[2].scope)
    local printed = astext(m)
    assert.truthy(printed:find('scope="a\\"b"', 1, true), printed)
    assert.are.equal(printed:match("primfn[^\n]*"), tostring(m:primfn("p")))
  end)

  it("prints an else-if chain flat, in time linear in its length", function()
    local n = 20000
    local e = dp.parse_expr("if (True) { 1 }" .. (" else if (False) { 2 }"):rep(n) .. " else { 3 }")
    local text = tostring(e)
    assert.is_true(#text < 30 * n, "the text grows with the chain only")
    local tail = "} else if (False) {\n  2\n} else {\n  3\n}"
    assert.are.equal(tail, text:sub(-#tail))
    assert.is_true(dp.structural_equal(dp.parse_expr(text), e))
    -- a condition shared by two branches is bound before the chain
    local a, b = dp.var("a", dp.type.scalar("int32")), dp.var("b", dp.type.scalar("int32"))
    local s = dp.call("add", {a, b})
    local chain = dp.if_(dp.call("less", {a, b}), s, dp.if_(dp.call("greater", {a, b}), dp.call("multiply", {s, s}), s))
    local t = astext(dp.fn({a, b}, chain))
    assert.truthy(t:find("  } else if (%2) {\n    multiply(%1, %1)\n  } else {", 1, true), t)
  end)
end)
