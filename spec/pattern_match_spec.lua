-- dp.pattern (lua/devplan/pattern.lua over the C matcher of src/pattern):
-- every kind of pattern, TVM's matching semantics (sharing by identity,
-- commutative add/multiply, re-association, attribute defaults,
-- dominators), captures, finding, printing, and clear errors.
local dp = require "devplan"
local P = dp.pattern
local W = P.wild

local function body(text, meta) return dp.parse('#[version = "0.0.5"]\n' .. text, meta).main.body end

local T = "Tensor[(10, 10), float32]"
local XY = "%x: " .. T .. ", %y: " .. T

describe("dp.pattern leaves", function()
  it("wildcard, var (by name), const, expr and op", function()
    local e = body("def @main(" .. XY .. ") { add(%x, 1f) }")
    assert.truthy(W():match(e))
    assert.truthy(P.var():match(e.args[1]))
    assert.truthy(P.var("x"):match(e.args[1]))
    assert.falsy(P.var("y"):match(e.args[1]))
    assert.falsy(P.var():match(e))
    assert.truthy(P.const():match(e.args[2]))
    assert.falsy(P.const():match(e.args[1]))
    assert.truthy(P.expr(dp.parse_expr("1f")):match(e.args[2]))
    assert.falsy(P.expr(dp.parse_expr("1")):match(e.args[2]), "an int32 1 is not 1f")
    assert.truthy(P.expr(e.args[1]):match(e.args[1]), "a variable is equal to itself")
    assert.truthy(P.op("add"):match(e.callee))
    assert.falsy(P.op("subtract"):match(e.callee))
  end)

  it("matches at the root only", function()
    local e = body("def @main(" .. XY .. ") { %0 = add(%x, %y); nn.relu(%0) }")
    assert.falsy(P.op("add")(W(), W()):match(e))
    assert.truthy(P.op("nn.relu")(P.op("add")(W(), W())):match(e))
  end)
end)

describe("dp.pattern calls", function()
  local e = body("def @main(" .. XY .. ") { subtract(%y, %x) }")

  it("match the callee, then the arguments in order, with exact arity", function()
    assert.truthy(P.op("subtract")(P.var("y"), P.var("x")):match(e))
    assert.falsy(P.op("subtract")(P.var("x"), P.var("y")):match(e), "subtract is not commutative")
    assert.falsy(P.op("subtract")(W()):match(e))
    assert.truthy(P.call(W(), nil):match(e), "args nil: any number")
    assert.truthy(P.call(P.op("subtract"), {W(), W()}):match(e))
    assert.falsy(P.call(P.op("subtract"), {}):match(e))
  end)

  it("add and multiply match commutatively", function()
    local a = body("def @main(" .. XY .. ") { add(%y, %x) }")
    assert.truthy(P.op("add")(P.var("x"), P.var("y")):match(a))
    local m = body("def @main(" .. XY .. ") { multiply(%y, %x) }")
    assert.truthy(P.op("multiply")(P.var("x"), P.var("y")):match(m))
    -- not through an alternative callee (TVM: only an operator pattern itself)
    assert.falsy(P.call(P.op("add") + P.op("subtract"), {P.var("x"), P.var("y")}):match(a))
  end)

  it("re-associates divide and multiply as TVM's batch-norm rewrites need", function()
    local bn = body([[def @main(%x: Tensor[(10, 10), float32], %var: Tensor[(10, 10), float32],
      %mean: Tensor[(10, 10), float32], %beta: Tensor[(10, 10), float32], %gamma: Tensor[(10, 10), float32]) {
      %0 = subtract(%x, %mean); %1 = add(%var, 1e-05f); %2 = sqrt(%1); %3 = divide(%0, %2);
      %4 = multiply(%gamma, %3); add(%4, %beta) }]])
    local p = P.op("add")(P.op("divide")(P.op("multiply")(W(), P.op("subtract")(W(), W())),
      P.op("sqrt")(P.op("add")(W(), P.const()))), W())
    assert.truthy(p:match(bn))
  end)

  it("callable patterns: any pattern called is a call pattern", function()
    local relu = body("def @main(%x: " .. T .. ") { nn.relu(%x) }")
    assert.truthy(W()(W()):match(relu))
    assert.truthy(P.op_kind("elemwise")(W()):match(relu))
    assert.falsy(P.op_kind("broadcast", "injective")(W()):match(relu))
  end)
end)

describe("dp.pattern sharing", function()
  it("one pattern value used twice matches one expression", function()
    local x, y = W(), W()
    local p = P.op("multiply")(P.op("add")(x, y), P.op("subtract")(x, y))
    assert.truthy(p:match(body("def @main(" .. XY .. ") { %0 = add(%x, %y); %1 = subtract(%x, %y); multiply(%0, %1) }")))
    assert.falsy(p:match(body("def @main(" .. XY .. ") { %0 = add(%x, %y); %1 = subtract(%y, %x); multiply(%0, %1) }")))
    -- two distinct wildcards may match the same node
    assert.truthy(P.op("add")(W(), W()):match(body("def @main(%x: " .. T .. ") { add(%x, %x) }")))
  end)

  it("the diamond: a shared conv must be one call", function()
    local conv = P.op("nn.conv2d")(W(), W())
    local p = P.op("add")(P.op("nn.relu")(conv), P.op("nn.leaky_relu")(conv))
    local one = [[def @main(%i: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 1, 1), float32]) {
      %0 = nn.conv2d(%i, %w); %1 = nn.relu(%0); %2 = nn.leaky_relu(%0); add(%1, %2) }]]
    local two = [[def @main(%i: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 1, 1), float32]) {
      %0 = nn.conv2d(%i, %w); %1 = nn.relu(%0); %2 = nn.conv2d(%i, %w); %3 = nn.leaky_relu(%2); add(%1, %3) }]]
    assert.truthy(p:match(body(one)))
    assert.falsy(p:match(body(two)))
  end)
end)

describe("dp.pattern structure", function()
  it("tuples, projections, functions, if and let", function()
    local e = body("def @main(" .. XY .. ") { %0 = add(%x, %y); %1 = (%x, %y, %0); %1.2 }")
    local tup = P.tuple{P.var("x"), W(), P.op("add")(W(), W())}
    assert.truthy(P.proj(tup, 2):match(e))
    assert.truthy(P.proj(tup):match(e))
    assert.falsy(P.proj(tup, 1):match(e))
    assert.truthy(P.proj(P.tuple(nil)):match(e))
    assert.falsy(P.proj(P.tuple{W(), W()}):match(e))
    local f = body("def @main() { fn (" .. XY .. ") { add(%x, %y) } }")
    local a, b = W(), W()
    assert.truthy(P.fn({a, b}, P.op("add")(a, b)):match(f))
    assert.truthy(P.fn(nil, W()):match(f))
    assert.falsy(P.fn({W()}, W()):match(f))
    local i = body("def @main(%x: float32, %y: float32) { if (less(%x, %y)) { %x } else { %y } }")
    local x, y = P.var("x"), P.var("y")
    assert.truthy(P.if_(P.op("less")(x, y), x, y):match(i))
    assert.falsy(P.if_(P.op("less")(x, y), y, x):match(i))
    local l = body("def @main(" .. XY .. ") { let %v = less(%x, %y); %v }")
    local v = P.var("v")
    assert.truthy(P.let(v, P.op("less")(W(), W()), v):match(l))
  end)

  it("alternatives are ordered; optional is p + f(p)", function()
    local e = body("def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 1, 1), float32], %b: Tensor[(3), float32]) { %0 = nn.conv2d(%x, %w); %1 = nn.bias_add(%0, %b); nn.relu(%1) }")
    local conv = P.op("nn.conv2d")(W(), W())
    local biased = conv:optional(function(c) return P.op("nn.bias_add")(c, W():as("bias")) end)
    local m = P.op("nn.relu")(biased):match(e)
    assert.truthy(m)
    assert.equal("b", m.bias.name)
    assert.equal(e.args[1], m[biased], "the alternative's node is what it matched")
    -- a pattern as the wrapper: q(p)
    assert.truthy(P.op("nn.bias_add")(conv, W()):optional(P.op("nn.relu")):match(e))
    -- ordered: the left side decides the bindings
    local left = (W():as("l") + W():as("r")):match(e)
    assert.truthy(left.l)
    assert.is_nil(left.r)
  end)
end)

describe("dp.pattern predicates", function()
  it("has_attr: call attributes with operator defaults, operator and function attributes", function()
    local c = body("def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 3, 3), float32]) { nn.conv2d(%x, %w, padding=[1, 1, 1, 1]) }")
    local conv = P.op("nn.conv2d")(W(), W())
    assert.truthy(conv:has_attr{data_layout = "NCHW"}:match(c), "a default counts")
    assert.truthy(conv:has_attr{padding = {1, 1, 1, 1}, groups = 1}:match(c))
    assert.falsy(conv:has_attr{padding = {0, 0, 0, 0}}:match(c))
    assert.falsy(conv:has_attr{RandomAttr = "NCHW"}:match(c), "a key the operator does not have")
    assert.truthy(conv:has_attr{}:match(c))
    assert.truthy(P.op("nn.conv2d"):has_attr{TOpPattern = 4}:match(c.callee))
    assert.falsy(P.op("nn.conv2d"):has_attr{TOpPattern = 0}:match(c.callee))
    assert.truthy(P.call(W():has_attr{TOpPattern = 4}, nil):match(c))
    local f = body("def @main() { fn (%x: " .. T .. ", Composite=\"add\") { %x } }")
    assert.truthy(W():has_attr{Composite = "add"}:match(f))
    assert.falsy(W():has_attr{Composite = "sub"}:match(f))
    local v = body("def @main(%x: " .. T .. ") { %x }")
    assert.falsy(W():has_attr{}:match(v), "a variable has no attributes, not even none")
    local cast = body("def @main(%x: Tensor[(10, 10), int32]) { cast(%x, dtype=\"float32\") }")
    assert.truthy(P.op("cast")(W()):has_attr{dtype = "float32"}:match(cast))
    local fcall = body("def @main(%a: fn (" .. T .. ") -> " .. T .. ", %b: " .. T .. ") { %a(%b, call_attr=\"attr\") }")
    assert.truthy(P.call(W(), {W()}):has_attr{call_attr = "attr"}:match(fcall))
  end)

  it("has_type, has_dtype, has_shape read checked types", function()
    local e = body("def @main(%x: Tensor[(10, 10), int32]) { %x }")
    assert.truthy(W():has_type("Tensor[(10, 10), int32]"):match(e))
    assert.truthy(W():has_type(dp.type.tensor({10, 10}, "int32")):match(e))
    assert.falsy(W():has_type("Tensor[(10, 10), float32]"):match(e))
    assert.truthy(W():has_dtype("int32"):match(e))
    assert.falsy(W():has_dtype("float32"):match(e))
    assert.truthy(W():has_shape{10, 10}:match(e))
    assert.falsy(W():has_shape{10}:match(e))
    local tup = body("def @main(%x: Tensor[(10, 10), int32]) { (%x,) }")
    assert.falsy(W():has_dtype("int32"):match(tup), "not a tensor")
  end)

  it("where: a Lua predicate after the pattern matched", function()
    local e = body("def @main(%x: " .. T .. ") { nn.relu(%x) }")
    local seen
    local p = P.op("nn.relu")(W()):where(function(x) seen = x; return x.args[1].name == "x" end)
    assert.truthy(p:match(e))
    assert.equal(e, seen)
    assert.falsy(P.op("nn.relu")(W()):where(function() return false end):match(e))
  end)

  it("dominates: child, a path of elementwise calls, the parent below in the post-dominator tree", function()
    local path = P.op_kind("elemwise")(W())
    local p = P.op("add")(W(), W()):dominates(P.op("nn.conv2d")(W(), W()), path)
    local diamond = [[def @main(%i: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 1, 1), float32]) {
      %0 = nn.conv2d(%i, %w); %1 = nn.relu(%0); %2 = nn.relu(%1); %3 = nn.leaky_relu(%0); add(%2, %3) }]]
    assert.truthy(p:match(body(diamond)))
    local escapes = [[def @main(%i: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 1, 1), float32]) {
      %0 = nn.relu(%i); %1 = nn.conv2d(%i, %w); %2 = nn.leaky_relu(%1); add(%0, %2) }]]
    assert.falsy(p:match(body(escapes)), "a path that ends at a variable")
    local two_parents = [[def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 1, 1), float32]) {
      %0 = nn.conv2d(%x, %w); %1 = tanh(%0); %2 = nn.conv2d(%1, %w); %3 = nn.relu(%2); %4 = nn.relu(%0); add(%3, %4) }]]
    assert.falsy(P.dominates(P.op("nn.conv2d")(W(), W()), P.op("nn.relu")(W()), P.op("add")(W(), W()))
      :match(body(two_parents)))
  end)
end)

describe("dp.pattern captures", function()
  it("map each pattern value and each name to what it matched", function()
    local e = body("def @main(" .. XY .. ") { %0 = add(%x, %y); nn.relu(%0) }")
    local a = P.op("add")(W():as("lhs"), W())
    local p = P.op("nn.relu")(a):as("out")
    local m = p:match(e)
    assert.equal(e, m.out)
    assert.equal(e, m[p])
    assert.equal(e.args[1], m[a])
    assert.equal("x", m.lhs.name)
  end)

  it("recursive patterns follow a chain (P.rec)", function()
    local e = body([[def @main(%d: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32]) {
      %0 = nn.dense(%d, %w); %1 = cast(%0, dtype="float32"); %2 = cast(%1, dtype="float32"); cast(%2, dtype="float32") }]])
    local dense = P.op("nn.dense")(W(), W())
    local chain = P.rec(function(self) return P.op("cast")(self + dense) end)
    local m = chain:match(e)
    assert.truthy(m)
    assert.equal(e, m[chain], "the outermost match")
    assert.equal("nn.dense", m[dense].callee.name)
    assert.falsy(chain:match(e.args[1].args[1].args[1]), "the dense alone is no cast")
  end)

  it("find lists every match in post order, in an expression or a module", function()
    local mod = dp.parse('#[version = "0.0.5"]\ndef @main(' .. XY .. [[) { %0 = add(%x, %y); %1 = add(%0, %y); add(%1, %x) }
      def @f(%a: Tensor[(10, 10), float32]) { add(%a, %a) }]])
    local p = P.op("add")(W(), W())
    local in_main = p:find(mod.main.body)
    assert.equal(3, #in_main)
    assert.equal(mod.main.body, in_main[3][p])
    assert.equal(4, #p:find(mod))
  end)
end)

describe("dp.pattern printing", function()
  it("reads like the program it matches", function()
    local conv = P.op("nn.conv2d")(W(), P.const())
    assert.equal("nn.relu(nn.conv2d(_, const))", tostring(P.op("nn.relu")(conv)))
    assert.equal("nn.conv2d(_, const) + nn.bias_add(nn.conv2d(_, const), _)",
      tostring(conv:optional(function(c) return P.op("nn.bias_add")(c, W()) end)))
    assert.equal("(%x, var, _(...)).1", tostring(P.proj(P.tuple{P.var("x"), P.var(), P.call(W(), nil)}, 1)))
    assert.equal("_(...)", tostring(P.call(W(), nil)))
    assert.equal("fn(...) { _ }", tostring(P.fn(nil, W())))
    assert.equal("<elemwise|broadcast>(x=_)", tostring(P.op_kind("elemwise", "broadcast")(W():as("x"))))
    assert.equal('_:has_attr{data_layout="NCHW", groups=1}', tostring(W():has_attr{groups = 1, data_layout = "NCHW"}))
    assert.equal("_:has_dtype(float32):has_shape{10, ?}", tostring(W():has_dtype("float32"):has_shape{10, -1}))
    assert.equal("dominates(nn.conv2d(_, _), _, add(_, _))",
      tostring(P.op("add")(W(), W()):dominates(P.op("nn.conv2d")(W(), W()))))
    assert.equal("rec R1 = cast(R1 + nn.dense(_, _))",
      tostring(P.rec(function(s) return P.op("cast")(s + P.op("nn.dense")(W(), W())) end)))
    assert.equal("1f", tostring(P.expr(dp.parse_expr("1f"))))
  end)
end)

describe("dp.pattern errors", function()
  local function fails(f, text)
    local ok, err = pcall(f)
    assert.is_false(ok)
    assert.truthy(tostring(err):find(text, 1, true), tostring(err))
  end

  it("in building a pattern: clear errors naming what is wrong", function()
    fails(function() P.op("no.such_op") end, "unknown operator 'no.such_op'")
    fails(function() P.op(3) end, "an operator name expected")
    fails(function() P.call(3, {}) end, "the callee must be a pattern")
    fails(function() P.call(W(), {W(), 4}) end, "args[2] must be a pattern")
    fails(function() P.op("add")(W(), true) end, "argument 2 must be a pattern")
    fails(function() return W() + 1 end, "the right side must be a pattern")
    fails(function() P.var("%x") end, "without '%'")
    fails(function() P.proj(W(), -1) end, "index must be an integer >= 0")
    fails(function() W():has_type("Tensor[(10,") end, "")
    fails(function() W():has_dtype("floaty") end, "a dtype such as")
    fails(function() W():has_shape{1.5} end, "dimensions must be integers")
    fails(function() W():has_attr{[1] = 2} end, "attribute names must be strings")
    fails(function() W():where(5) end, "a function(e) expected")
    fails(function() W():optional(5) end, "a function(p) or a pattern expected")
    fails(function() P.op_kind("fancy") end, "unknown operator pattern kind fancy")
    fails(function() P.rec(function() return 1 end) end, "the result of the function must be a pattern")
    fails(function() W():match(5) end, "an expression expected")
  end)

  it("an error in a :where predicate is a devplan.Error and the state stays usable", function()
    local e = body("def @main(%x: " .. T .. ") { nn.relu(%x) }")
    local p = P.op("nn.relu")(W()):where(function() error("boom") end)
    local ok, err = pcall(p.match, p, e)
    assert.is_false(ok)
    assert.equal("callback", err.code)
    assert.truthy(tostring(err):find("the :where predicate raised an error", 1, true))
    assert.truthy(tostring(err):find("boom", 1, true))
    assert.truthy(P.op("nn.relu")(W()):match(e))
  end)
end)

describe("dp.pattern at depth", function()
  local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000

  local function chain(n, op)
    local x = dp.var("x", dp.type.tensor({4}, "float32"))
    local e = x
    for _ = 1, n do e = dp.call(op, {e}) end
    return e, x
  end

  it("a recursive pattern follows a " .. N .. "-deep chain without the C stack", function()
    local e = chain(N, "negative")
    local p = P.rec(function(self) return P.op("negative")(self + P.var("x")) end)
    assert.truthy(p:match(e))
    assert.falsy(P.rec(function(self) return P.op("negative")(self + P.var("y")) end):match(e))
  end)

  it("a dominator path " .. N .. " calls long", function()
    local x = dp.var("x", dp.type.tensor({1, 3, 8, 8}, "float32"))
    local w = dp.var("w", dp.type.tensor({3, 3, 1, 1}, "float32"))
    local conv = dp.call("nn.conv2d", {x, w})
    local e = conv
    for _ = 1, N do e = dp.call("nn.relu", {e}) end
    local sum = dp.call("add", {e, conv})
    local p = P.op("add")(W(), W()):dominates(P.op("nn.conv2d")(W(), W()), P.op_kind("elemwise")(W()))
    assert.truthy(p:match(sum))
  end)
end)
