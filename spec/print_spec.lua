-- The printer (tostring, dp.astext): Relay text as TVM printed it, for every
-- node kind; graph bindings for calls and shared nodes; names made distinct;
-- inline virtual devices; type comments; million-deep chains.
local dp = require "devplan"

local T = dp.type.tensor({5, 7}, "float32")
local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
local FA, FB = "free_var %a: Tensor[(5, 7), float32];", "free_var %b: Tensor[(5, 7), float32];"

local function lines(...)
  return table.concat({...}, "\n")
end

-- The text of e without the declarations of its free variables.
local function body(e)
  local t = tostring(e)
  while t:find("^free_var ") do t = t:gsub("^[^\n]*\n", "", 1) end
  return t
end

describe("printer", function()
  local a, b = dp.var("a", T), dp.var("b", T)

  it("prints a module: version line, def, graph bindings, result inline", function()
    local c, d = dp.var("c", T), dp.var("d", T)
    local body = dp.call("subtract", {dp.call("add", {a, b}), dp.call("add", {c, d})})
    local m = dp.IRModule{functions = {{"main", dp.fn({a, b, c, d}, body)}}}
    assert.are.equal(lines(
      '#[version = "0.0.5"]',
      "def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32], " ..
        "%c: Tensor[(5, 7), float32], %d: Tensor[(5, 7), float32]) {",
      "  %0 = add(%a, %b);",
      "  %1 = add(%c, %d);",
      "  subtract(%0, %1)",
      "}", ""), tostring(m))
  end)

  it("prints functions in definition order, with result types", function()
    local f = dp.fn({a}, dp.call("negative", {a}), {ret_type = T})
    local g = dp.fn({b}, dp.call(dp.global("f"), {b}))
    local m = dp.IRModule{functions = {{"f", f}, {"main", g}}}
    local s = tostring(m)
    local pf, pm = s:find("def @f%("), s:find("def @main%(")
    assert.truthy(pf and pm and pf < pm)
    assert.truthy(s:find("-> Tensor[(5, 7), float32] {", 1, true))
    assert.truthy(s:find("  @f(%b)\n", 1, true))
  end)

  it("prints a shared node once", function()
    local s = dp.call("add", {a, b})
    local e = dp.fn({a, b}, dp.call("multiply", {s, s}))
    assert.are.equal(lines(
      "fn (%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {",
      "  %0 = add(%a, %b);",
      "  multiply(%0, %0)",
      "}"), tostring(e))
  end)

  it("binds a node shared by both branches of an if before the if", function()
    local c = dp.var("c", dp.type.scalar("bool"))
    local n = dp.call("negative", {a})
    local e = dp.fn({c, a}, dp.if_(c, dp.call("add", {n, n}), n))
    assert.are.equal(lines(
      "fn (%c: bool, %a: Tensor[(5, 7), float32]) {",
      "  %0 = negative(%a);",
      "  if (%c) {",
      "    add(%0, %0)",
      "  } else {",
      "    %0",
      "  }",
      "}"), tostring(e))
  end)

  it("prints let chains, tuples and projections", function()
    local x = dp.var("x", T)
    local e = dp.let(x, dp.call("add", {a, b}), dp.proj(dp.tuple{x, a}, 1))
    assert.are.equal(lines(
      "free_var %a: Tensor[(5, 7), float32];",
      "free_var %b: Tensor[(5, 7), float32];",
      "let %x: Tensor[(5, 7), float32] = add(%a, %b);",
      "%0 = (%x, %a);",
      "%0.1"), tostring(e))
    assert.are.equal("(%a,)", body(dp.tuple{a}))
    assert.are.equal("()", body(dp.tuple{}))
    assert.are.equal("(%a, %b)", body(dp.tuple{a, b}))
  end)

  it("prints nested function values", function()
    local p = dp.var("p", T)
    local inner = dp.fn({p}, dp.call("negative", {p}), {attrs = {Primitive = 1}})
    local f = dp.var("f")
    local e = dp.fn({a}, dp.let(f, inner, dp.call(f, {a})))
    assert.are.equal(lines(
      "fn (%a: Tensor[(5, 7), float32]) {",
      "  let %f = fn (%p: Tensor[(5, 7), float32], Primitive=1) {",
      "    negative(%p)",
      "  };",
      "  %f(%a)",
      "}"), tostring(e))
  end)

  it("prints references", function()
    local r = dp.var("r")
    local e = dp.let(r, dp.ref(a), dp.ref_write(r, dp.ref_read(r)))
    assert.are.equal(lines(
      "free_var %a: Tensor[(5, 7), float32];",
      "let %r = ref(%a);",
      "%0 = ref_read(%r);",
      "ref_write(%r, %0)"), tostring(e))
  end)

  it("prints match, match? and constructors", function()
    local A = dp.type.var("A")
    local td = dp.typedef("List", {A}, {
      {name = "Cons", inputs = {A, dp.type.adt("List", {A})}},
      {name = "Nil", inputs = {}},
    })
    local cons, nil_ = td.constructors[1], td.constructors[2]
    local l, h, t = dp.var("l"), dp.var("h"), dp.var("t")
    local clauses = {
      {dp.pat.ctor(cons, {dp.pat.var(h), dp.pat.wild()}), h},
      {dp.pat.ctor(nil_, {}), a},
    }
    assert.are.equal(lines(
      "free_var %l;",
      "free_var %a: Tensor[(5, 7), float32];",
      "match (%l) {",
      "  Cons(%h, _) => %h,",
      "  Nil => %a,",
      "}"), tostring(dp.match(l, clauses)))
    assert.truthy(tostring(dp.match(l, clauses, false)):find("\nmatch? (%l) {", 1, true))
    assert.are.equal("Cons(%a, %l)", body(dp.call(cons, {a, l})))
    local m = dp.IRModule{functions = {{"main", dp.fn({l}, dp.match(l, clauses))}}, typedefs = {td}}
    assert.truthy(tostring(m):find("type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n", 1, true))
    local e2 = dp.match(l, {{dp.pat.tuple{dp.pat.var(h), dp.pat.var(t)}, t}})
    assert.truthy(body(e2):find("(%h, %t) => %t,", 1, true))
  end)

  it("prints scalar constants as literals and tensors as Constant(...)", function()
    assert.are.equal("1f", tostring(dp.const(1)))
    assert.are.equal("2.5f", tostring(dp.const(2.5)))
    assert.are.equal("3i64", tostring(dp.const(3, "int64")))
    assert.are.equal("-3i64", tostring(dp.const(-3, "int64")))
    assert.are.equal("1", tostring(dp.const(1, "int32")))
    assert.are.equal("True", tostring(dp.const(true, "bool")))
    assert.are.equal("1.5f16", tostring(dp.const(1.5, "float16")))
    assert.are.equal("2f64", tostring(dp.const(2, "float64")))
    assert.are.equal("0.1f", tostring(dp.const(0.1)))
    assert.are.equal("Constant(Tensor[(2), int64], [3, 2])", tostring(dp.const({3, 2}, "int64")))
    assert.are.equal("Constant(Tensor[(2, 2), float32], [1.5, 2, 3, 4])",
                     tostring(dp.const({{1.5, 2}, {3, 4}})))
  end)

  it("prints every attribute kind in stored order", function()
    assert.are.equal(lines(FA, FB, "nn.batch_norm(%a, %b, %b, %b, %b, epsilon=2e-05f, scale=False)"),
      tostring(dp.call("nn.batch_norm", {a, b, b, b, b}, {scale = false, epsilon = 2e-5})))
    assert.are.equal('layout_transform(%a, src_layout="NCHW", dst_layout="NCHW4c")',
      body(dp.call("layout_transform", {a}, {dst_layout = "NCHW4c", src_layout = "NCHW"})))
    assert.are.equal("nn.conv2d(%a, %b, padding=[1, 1, 1, 1], channels=64)",
      body(dp.call("nn.conv2d", {a, b}, {channels = 64, padding = {1, 1, 1, 1}})))
    -- defaults are not printed
    assert.are.equal("nn.conv2d(%a, %b)", body(dp.call("nn.conv2d", {a, b}, {groups = 1})))
  end)

  it("makes clashing and numeric names distinct", function()
    local x1, x2 = dp.var("x", T), dp.var("x", T)
    assert.are.equal(lines(
      "fn (%x: Tensor[(5, 7), float32], %x1: Tensor[(5, 7), float32]) {",
      "  add(%x, %x1)",
      "}"), tostring(dp.fn({x1, x2}, dp.call("add", {x1, x2}))))
    local z = dp.var("0", T)
    local s = tostring(dp.fn({z}, dp.call("negative", {z})))
    assert.truthy(s:find("%v0: Tensor", 1, true))
    assert.falsy(s:find("%0", 1, true))
  end)

  it("prints virtual devices inline", function()
    local cpu = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0, memory_scope = "global"}
    local p = dp.var("p", T, {virtual_device = cpu})
    local s = tostring(dp.fn({p}, p, {virtual_device = cpu}))
    local vd = 'VirtualDevice(device_type=cpu, virtual_device_id=0, memory_scope="global")'
    assert.truthy(s:find("fn (%p {virtual_device=" .. vd .. "}: Tensor[(5, 7), float32], " ..
                         "virtual_device=" .. vd .. ") {", 1, true), s)
  end)

  it("adds type comments when asked, after inference", function()
    local m = dp.IRModule{functions = {{"main", dp.fn({a, b}, dp.call("add", {a, b}))}}}
    m = dp.infer_type(m) or m
    assert.are.equal(lines(
      '#[version = "0.0.5"]',
      "def @main(%a: Tensor[(5, 7), float32] /* ty=Tensor[(5, 7), float32] */, " ..
        "%b: Tensor[(5, 7), float32] /* ty=Tensor[(5, 7), float32] */) {",
      "  add(%a, %b) /* ty=Tensor[(5, 7), float32] */",
      "}", ""), dp.astext(m, {types = true}))
    assert.falsy(tostring(m):find("ty=", 1, true))
  end)

  it("prints text that re-parses to an equal module and prints the same again", function()
    local c = dp.var("c", dp.type.scalar("bool"))
    local x, y = dp.var("x", T), dp.var("x", T)
    local n = dp.call("negative", {a})
    local body = dp.let(x, dp.call("add", {n, dp.const(1)}),
      dp.let(y, dp.if_(c, n, x), dp.proj(dp.tuple{y, dp.const({3, 2}, "int64")}, 0)))
    local m = dp.IRModule{functions = {{"main", dp.fn({c, a}, body)}}}
    local text = tostring(m)
    local m2 = dp.parse(text)
    assert.is_true(dp.structural_equal(m, m2))
    assert.are.equal(text, tostring(m2))
  end)

  it("prints a model as TVM did, type comments included", function()
    local f = assert(io.open("../shared/models/dcgan.relay"))
    local src = f:read("a")
    f:close()
    assert.are.equal(src, dp.astext(dp.parse(src), {types = true}))
  end)

  describe("at depth " .. N, function()
    it("prints a call chain", function()
      local x, y = dp.var("x", T), dp.var("y", T)
      local p2, p1 = x, y
      for _ = 1, N do p2, p1 = p1, dp.call("add", {p1, p2}) end
      local s = tostring(dp.IRModule{functions = {{"main", dp.fn({x, y}, p1)}}})
      assert.truthy(s:find("  %0 = add(%y, %x);\n  %1 = add(%0, %y);\n", 1, true))
      local tail = ("  add(%%%d, %%%d)\n}\n"):format(N - 2, N - 3)
      assert.are.equal(tail, s:sub(-#tail))
    end)

    it("prints a let chain", function()
      local x0 = dp.var("x", T)
      local vars = {}
      for i = 1, N do vars[i] = dp.var("x", T) end
      local body = vars[N]
      for i = N, 1, -1 do
        body = dp.let(vars[i], dp.call("negative", {vars[i - 1] or x0}), body)
      end
      local s = tostring(dp.fn({x0}, body))
      assert.truthy(s:find("\n  let %x1: Tensor[(5, 7), float32] = negative(%x);\n", 1, true))
      local tail = ("\n  %%x%d\n}"):format(N)
      assert.are.equal(tail, s:sub(-#tail))
      local _, count = s:gsub("\n  let ", "")
      assert.are.equal(N, count)
    end)
  end)
end)
