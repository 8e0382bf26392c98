-- TVM's grammar, the rest (issue 9): free_var, blocks in parentheses, `_`
-- annotations, extern type, type parameters and polymorphic functions, a
-- module that is one expression, Nil as a call, options checked, types
-- nested deeper than any limit of the type solver.
local dp = require "devplan"
local testing = require "devplan.testing"

local function err_of(f, ...) return select(2, testing.error_of(f, ...)) end

-- prints, parses back to an equal value, prints the same again
local function round_trips(x)
  local text = tostring(x)
  local back = (dp.is_module(x) and dp.parse or dp.parse_expr)(text)
  assert.is_true(dp.structural_equal(back, x), text)
  assert.are.equal(text, tostring(back))
  return text
end

describe("TVM's grammar", function()
  it("free_var declares a free variable, in scope from there on", function()
    local e = dp.parse_expr("free_var %x: float32; %x((%x,).0, %x)")
    assert.are.equal("call", e.kind)
    assert.is_true(rawequal(e.callee, e.args[2]))
    assert.are.equal("float32", tostring(e.callee.type_annotation))
    assert.are.same({e.callee}, dp.free_vars(e))
    -- the printer declares free variables the same way, so its text re-parses
    local text = round_trips(e)
    assert.truthy(text:find("^free_var %%x: float32;\n"), text)
    -- as TVM's test_op_string_attr writes it
    local c = dp.parse_expr([[
      free_var %x: Tensor[(1, 32, 32, 3), float32];
      free_var %y: Tensor[(1, 1, 3, 3), float32];
      nn.conv2d(%x, %y, data_layout="NHWC", kernel_layout="HWIO")]])
    assert.are.equal("NHWC", c.attrs.data_layout)
    assert.are.equal("HWIO", c.attrs.kernel_layout)
    assert.truthy(tostring(err_of(dp.parse_expr, "free_var %x; free_var %x; %x")):find("duplicate", 1, true))
    assert.truthy(tostring(err_of(dp.parse_expr, "free_var %x; %y")):find("unknown variable %y; did you mean '%x'?", 1, true))
  end)

  it("reads a block in parentheses, as TVM prints a let that is no scope's result", function()
    local a = dp.var("a", dp.type.scalar("float32"))
    local x = dp.var("x")
    local l = dp.let(x, dp.call("add", {a, a}), dp.call("multiply", {x, x}))
    local f = dp.fn({a}, dp.call("add", {l, l}))
    local text = round_trips(f)
    assert.truthy(text:find("%0 = (\n    let %x = add(%a, %a);", 1, true), text)
    local e = dp.parse_expr("(let %y = 1; free_var %z: int32; add(%y, %z))")
    assert.are.equal("let", e.kind)
    -- a condition too, as TVM's ParseExpr reads one
    assert.are.equal("let", dp.parse_expr("if (let %c = True; %c) { 1 } else { 2 }").cond.kind)
    -- the block's names end with it
    assert.truthy(tostring(err_of(dp.parse_expr, "%0 = (let %y = 1; %y); %y")):find("unknown variable %y", 1, true))
  end)

  it("takes `_` as an annotation left to inference", function()
    local e = dp.parse_expr("let %_ : _ = (); ()")
    assert.is_nil(e.var.type_annotation)
    assert.is_true(dp.structural_equal(e, dp.let(dp.var("_"), dp.tuple({}), dp.tuple({}))))
    local m = dp.parse("def @main(%x: _, %y: int8) -> _ { let %z: int8 = %x; add(%z, %y) }")
    assert.is_nil(m.main.params[1].type_annotation)
    assert.is_nil(m.main.ret_type)
    assert.are.equal("int8", tostring(m.main.params[1].checked_type))
  end)

  it("takes `_` inside a type as a part left to inference (TVM's IncompleteType)", function()
    local m = dp.parse([[
      def @main(%x: (Tensor[(3), float32], _)) -> (_, Tensor[(3), int32]) {
        let %z: (_, _) = (%x.0, %x.1);
        %z
      }
      def @f(%y: int8) -> (_, _) { (%y, 1f) }]])
    assert.are.equal("(Tensor[(3), float32], Tensor[(3), int32])", tostring(m.main.params[1].checked_type))
    assert.are.equal("(Tensor[(3), float32], _)", tostring(m.main.params[1].type_annotation))
    assert.is_true(m.main.params[1].type_annotation.has_hole)
    assert.is_false(m.main.params[1].checked_type.has_hole)
    assert.are.equal("(int8, float32)", tostring(m.f.checked_type.ret))
    round_trips(m)
    -- each hole its own unknown: the two of a tuple may differ
    assert.are.equal("fn ((int8, float32)) -> float32",
      tostring(dp.parse("def @main(%p: (_, _)) { let %a: int8 = %p.0; let %b: float32 = %p.1; %b }").main.checked_type))
    -- a hole cannot be anything: what it meets decides, a mismatch is a positioned type error
    local err = err_of(dp.parse, "def @main(%x: (int8, _)) -> (int8, float32) {\n  let %y: (_, int32) = %x;\n  %x\n}")
    assert.are.equal("type", err.code)
    assert.is_number(err.line)
    assert.truthy(tostring(err):find("int32", 1, true) or tostring(err):find("float32", 1, true), tostring(err))
    -- from Lua
    local h = dp.type.hole()
    assert.are.equal("var", h.kind)
    assert.is_true(dp.type.tuple{dp.type.scalar("int8"), h}.has_hole)
    assert.are_not.equal(h, dp.type.hole())
  end)

  it("reads function types with type parameters (`fn [A](A) -> A`)", function()
    local m = dp.parse([[
      def @main(%f: fn [A](A) -> A, %g: fn [A, B](A, B) -> (B, A), %i: int32, %x: float32) {
        (%f(%i), %f(%x), %g(%i, %x))
      }]])
    assert.are.equal("fn [A](A) -> A", tostring(m.main.params[1].type_annotation))
    assert.are.equal(1, #m.main.params[1].type_annotation.type_params)
    assert.are.equal("(int32, float32, (float32, int32))", tostring(m.main.body.checked_type))
    round_trips(m)
    -- the type parameters are the function type's own
    assert.truthy(tostring(err_of(dp.parse, "def @main(%f: fn [A](A) -> A, %y: A) { %y }")):find("unknown type 'A'", 1, true))
    assert.truthy(tostring(err_of(dp.parse, "def @main(%f: fn [A, A](A) -> A) { %f }")):find("duplicate type parameter A", 1, true))
    -- nested: fn [A](fn [B](B) -> B, A) -> A
    local n = dp.parse("def @main(%h: fn [A](fn [B](B) -> B, A) -> A) { %h }")
    assert.are.equal("fn [A](fn [B](B) -> B, A) -> A", tostring(n.main.params[1].type_annotation))
    round_trips(n)
  end)

  it("reads extern type: a type without constructors", function()
    local m = dp.parse('#[version = "0.0.5"]\nextern type T[A]\n')
    local td = m:typedef("T")
    assert.are.equal(0, #td.constructors)
    assert.are.equal(1, #td.type_params)
    assert.is_true(dp.structural_equal(m, dp.IRModule{typedefs = {dp.typedef("T", {dp.type.var("A")}, {})}}))
    round_trips(m)
  end)

  it("reads type parameters; a polymorphic function is instantiated at each call", function()
    local m = dp.parse([[
      def @id[A](%x: A) -> A { %x }
      def @pair[A, B](%a: A, %b: B) -> (A, B) { (%a, %b) }
      def @main(%i: int32, %f: float32) {
        (@id(%i), @id(%f), @pair(%f, %i), fn [T](%t: T) -> T { %t }(%i))
      }]])
    assert.are.equal(1, #m.id.type_params)
    assert.are.equal(2, #m.pair.type_params)
    assert.are.equal("(int32, float32, (float32, int32), int32)", tostring(m.main.body.checked_type))
    assert.are.equal("fn [A](A) -> A", tostring(m.id.checked_type))
    local text = round_trips(m)
    assert.truthy(text:find("def @pair[A, B](%a: A, %b: B) -> (A, B) {", 1, true), text)
    -- from Lua
    local A = dp.type.var("A")
    local x = dp.var("x", A)
    local f = dp.fn({x}, x, {type_params = {A}})
    assert.are.same({A}, f.type_params)
    assert.are.equal("fn [A](%x: A) {\n  %x\n}", tostring(f))
    assert.truthy(select(2, pcall(dp.fn, {x}, x, {type_params = {A, A}})):find("given twice", 1, true))
    -- the type variables are the function's: unknown elsewhere, distinct
    assert.truthy(tostring(err_of(dp.parse, "def @f[A](%x: A) { %x } def @g(%y: A) { %y }")):find("unknown type 'A'", 1, true))
    assert.truthy(tostring(err_of(dp.parse, "def @f[A, A](%x: A) { %x }")):find("duplicate type parameter A", 1, true))
    -- a rigid type parameter is no unknown
    assert.are.equal("type", err_of(dp.parse, "def @f[A](%x: A) -> int32 { %x }").code)
  end)

  it("reads the match and ADT forms of TVM's tests", function()
    local m = dp.parse([[
      type List[A] { Cons(A, List[A]), Nil, }
      def @length[A](%xs: List[A]) -> int32 {
        match (%xs) {
          Cons(_, %rest : List[A]) => { (); 1 + @length(%rest) },
          Nil => 0,
        }
      }
      def @make_singleton(%x: int32) -> List[int32] { Cons(%x, Nil) }]])
    local body = m.make_singleton.body
    -- a constructor of no fields is a call of it, as TVM reads `Nil`
    assert.are.equal("call", body.args[2].kind)
    assert.are.equal(0, #body.args[2].args)
    assert.are.equal("List[int32]", tostring(body.checked_type))
    local text = round_trips(m)
    -- (a call, so bound to a name as TVM prints it: only variables,
    -- constants, globals, operators and constructors stand inline)
    assert.truthy(text:find("%0 = Nil;\n  Cons(%x, %0)", 1, true), text)
  end)

  it("reads a module that is one expression: its @main", function()
    local m = dp.parse('#[version = "0.0.5"]\nfn (%x: int8) { negative(%x) }')
    assert.are.equal("fn", m.main.kind)
    assert.are.equal(1, #m.main.params)
    -- any other expression: a function of its free variables (IRModule.from_expr)
    local m2 = dp.parse("free_var %a: float32; add(%a, 1f)")
    assert.are.equal("a", m2.main.params[1].name)
    -- type definitions may come first; definitions and a bare expression do not mix
    assert.is_truthy(dp.parse("type B { T, F } fn () { T }").main)
    local err = err_of(dp.parse, "def @main() { 1 } 2")
    assert.are.equal("syntax", err.code)
  end)

  it("rejects unknown option keys, as the rest of the API", function()
    for _, call in ipairs{
      function() return dp.parse("def @main() { 1 }", nil, {sourcename = "x"}) end,
      function() return dp.parse_expr("1", nil, {bogus = true}) end,
      function() return dp.parse_type("int8", {source = "x"}) end,
      function() return dp.parse_file("/dev/null", nil, {x = 1}) end,
    } do
      local ok, msg = pcall(call)
      assert.is_false(ok)
      assert.are.equal("string", type(msg))
      assert.truthy(msg:find("^bad argument #%d to 'parse[%w_]*' %(devplan%.parse[%w_]*: unknown option"), msg)
      assert.truthy(msg:find("source_name", 1, true), msg)
    end
    assert.are.equal("<string>", dp.parse_expr("1", nil, {source_name = "<string>"}).span.source)
  end)

  it("reads, types and prints types nested deeper than the parser's bracket depth of old", function()
    local n = 3000
    local text = "def @main(%x: " .. ("("):rep(n) .. "int8" .. (",)"):rep(n) .. ") { let %y = %x; %y }"
    local m = dp.parse(text)
    local t = tostring(m.main.body.checked_type)
    assert.are.equal(("("):rep(n) .. "int8" .. (",)"):rep(n), t)
  end)

  it("reads free @f references; a module resolves them when typing", function()
    local e = dp.parse_expr("@f(1)")
    assert.are.equal("global", e.callee.kind)
    local m = dp.parse("def @f(%x: int32) { %x }")
    assert.are.equal("int32", tostring(dp.infer_expr(e, m)))
  end)

  it("suggests the closest known name in errors", function()
    local cases = {
      {dp.parse_type, "Tensor[(2), flaot32]", "unknown type 'flaot32'; did you mean 'float32'?", 13},
      {dp.parse_expr, "nn.conv2dd(1, 2)", "unknown operator 'nn.conv2dd'; did you mean 'nn.conv2d'?", 1},
      {dp.parse_expr, "fn (%x) { %xx }", "unknown variable %xx; did you mean '%x'?", 11},
      {dp.parse, "def @main() { @mian() }", "unknown global @mian; did you mean '@main'?", 15},
      {dp.parse_expr, "on_device(1, virtual_device=VirtualDevice(device_type=cdua))",
        "unknown device type 'cdua'; did you mean 'cuda'?", 55},
      {dp.parse_expr, "on_device(1, virtual_device=VirtualDevice(devce_type=cpu))",
        "unknown VirtualDevice field 'devce_type'; did you mean 'device_type'?", 43},
      {dp.parse_expr, "nn.softmax(1f, axiss=1)", "unknown attribute 'axiss' for operator nn.softmax; did you mean 'axis'?", 16},
      {dp.parse, "type L { Nil } def @f(%x: Ls) { %x }", "unknown type 'Ls'; did you mean 'L'?", 27},
      {dp.parse, "type L { Nill } def @f() { Nil }", "unknown constructor 'Nil'; did you mean 'Nill'?", 28},
      {dp.parse_expr, "fn (%x {virtual_devce=VirtualDevice(device_type=cpu)}) { %x }",
        "unknown parameter attribute 'virtual_devce' (only virtual_device); did you mean 'virtual_device'?", 9},
    }
    for _, c in ipairs(cases) do
      local e = err_of(c[1], c[2])
      assert.truthy(e.message:find(c[3], 1, true), e.message)
      assert.are.equal(c[4], e.col, c[2])
    end
    -- from Lua too
    assert.truthy(tostring(select(2, pcall(dp.call, "nn.softmax", {dp.var("x")}, {axs = 1})))
      :find("did you mean 'axis'?", 1, true))
  end)
end)
