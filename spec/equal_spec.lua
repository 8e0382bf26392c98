-- Structural equality (dp.structural_equal, dp.assert_structural_equal):
-- alpha-renaming, free variables, sharing, attributes, annotations, virtual
-- devices, constants, modules, the difference report, million-deep chains.
local dp = require "devplan"

local T = dp.type.tensor({5, 7}, "float32")
local T2 = dp.type.tensor({5, 7}, "float16")
local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000

local eq = dp.structural_equal

local function diff_of(a, b)
  local ok, err = pcall(dp.assert_structural_equal, a, b)
  assert.is_false(ok, "expected a difference")
  return err
end

describe("structural equality", function()
  it("matches bound variables by position (alpha-renaming)", function()
    local x, y = dp.var("x", T), dp.var("y", T)
    assert.is_true(eq(dp.fn({x}, dp.call("negative", {x})), dp.fn({y}, dp.call("negative", {y}))))
    local p, q = dp.var("p", T), dp.var("q", T)
    assert.is_false(eq(dp.fn({x, y}, dp.call("add", {x, y})), dp.fn({p, q}, dp.call("add", {q, p}))))
    local v, w = dp.var("v", T), dp.var("w", T)
    assert.is_true(eq(dp.let(v, x, dp.call("negative", {v})), dp.let(w, x, dp.call("negative", {w}))))
  end)

  it("maps free variables on first meeting, consistently", function()
    local a, b, c, d = dp.var("a", T), dp.var("b", T), dp.var("c", T), dp.var("d", T)
    assert.is_true(eq(dp.call("add", {a, b}), dp.call("add", {c, d})))
    assert.is_false(eq(dp.call("add", {a, a}), dp.call("add", {c, d})))
    assert.is_false(eq(dp.call("add", {a, b}), dp.call("add", {c, c})))
    -- a bound variable never equals a free one
    local x = dp.var("x", T)
    assert.is_false(eq(dp.fn({x}, a), dp.fn({x}, x)))
  end)

  it("does not care about sharing", function()
    local a, b = dp.var("a", T), dp.var("b", T)
    local s = dp.call("add", {a, b})
    local dag = dp.fn({a, b}, dp.call("multiply", {s, s}))
    local tree = dp.fn({a, b}, dp.call("multiply", {dp.call("add", {a, b}), dp.call("add", {a, b})}))
    assert.is_true(eq(dag, tree))
    assert.is_true(eq(tree, dag))
  end)

  it("compares a wide DAG without blowing up", function()
    local a = dp.var("a", T)
    local function build()
      local e = a
      for _ = 1, 200 do e = dp.call("add", {e, e}) end -- 2^200 paths
      return e
    end
    assert.is_true(eq(build(), build()))
  end)

  it("compares every attribute kind", function()
    local a, b = dp.var("a", T), dp.var("b", T)
    local function conv(attrs) return dp.call("nn.conv2d", {a, b}, attrs) end
    assert.is_true(eq(conv{padding = {1, 1}}, conv{padding = {1, 1}}))
    assert.is_false(eq(conv{padding = {1, 1}}, conv{padding = {1, 2}}))       -- list
    assert.is_false(eq(conv{channels = 64}, conv{channels = 32}))              -- int
    assert.is_false(eq(conv{channels = 64}, conv{}))                           -- absent
    assert.is_false(eq(conv{data_layout = "NCHW"}, conv{data_layout = "NHWC"})) -- string
    local function bn(attrs) return dp.call("nn.batch_norm", {a, b, b, b, b}, attrs) end
    assert.is_true(eq(bn{epsilon = 2e-5}, bn{epsilon = 2e-5}))
    assert.is_false(eq(bn{epsilon = 2e-5}, bn{epsilon = 1e-5}))                -- float
    assert.is_false(eq(bn{scale = false}, bn{center = false}))                 -- bool
    -- a default written or not is the same call
    assert.is_true(eq(conv{groups = 1}, conv{}))
  end)

  it("compares annotations, result types and virtual devices", function()
    local x, y = dp.var("x", T), dp.var("x", T2)
    assert.is_false(eq(dp.fn({x}, x), dp.fn({y}, y)))
    local u = dp.var("u")
    assert.is_false(eq(dp.fn({x}, x), dp.fn({u}, u)))
    local z = dp.var("z", T)
    assert.is_false(eq(dp.fn({x}, x, {ret_type = T}), dp.fn({z}, z)))
    local cpu = dp.VirtualDevice{device_type = "cpu"}
    local gpu = dp.VirtualDevice{device_type = "cuda"}
    local p, q = dp.var("p", T, {virtual_device = cpu}), dp.var("q", T, {virtual_device = gpu})
    assert.is_false(eq(dp.fn({p}, p), dp.fn({q}, q)))
    local r = dp.var("r", T, {virtual_device = cpu})
    assert.is_true(eq(dp.fn({p}, p, {virtual_device = gpu}), dp.fn({r}, r, {virtual_device = gpu})))
    assert.is_false(eq(dp.fn({p}, p, {virtual_device = gpu}), dp.fn({r}, r, {virtual_device = cpu})))
    assert.is_false(eq(dp.fn({p}, p, {virtual_device = gpu}), dp.fn({r}, r)))
  end)

  it("compares constants by value, globals by name, ops by identity", function()
    assert.is_true(eq(dp.const({3, 2}, "int64"), dp.const({3, 2}, "int64")))
    assert.is_false(eq(dp.const({3, 2}, "int64"), dp.const({3, 3}, "int64")))
    assert.is_false(eq(dp.const({3, 2}, "int64"), dp.const({3, 2}, "int32")))
    assert.is_false(eq(dp.const({3, 2}, "int64"), dp.const({{3, 2}}, "int64")))
    assert.is_true(eq(dp.global("f"), dp.global("f")))
    assert.is_false(eq(dp.global("f"), dp.global("g")))
    assert.is_false(eq(dp.op.get("add"), dp.op.get("subtract")))
  end)

  it("binds pattern variables by position", function()
    local A = dp.type.var("A")
    local td = dp.typedef("List", {A}, {
      {name = "Cons", inputs = {A, dp.type.adt("List", {A})}}, {name = "Nil", inputs = {}}})
    local cons, nil_ = td.constructors[1], td.constructors[2]
    local l = dp.var("l")
    local function m(name, rhs_self)
      local h = dp.var(name)
      local rhs = rhs_self and h or l
      return dp.match(l, {{dp.pat.ctor(cons, {dp.pat.var(h), dp.pat.wild()}), rhs},
                          {dp.pat.ctor(nil_, {}), l}})
    end
    assert.is_true(eq(m("h", true), m("k", true)))
    assert.is_false(eq(m("h", true), m("h", false)))
    local partial = dp.match(l, {{dp.pat.wild(), l}}, false)
    assert.is_false(eq(partial, dp.match(l, {{dp.pat.wild(), l}})))
  end)

  it("compares types with type variables up to renaming", function()
    local A, B = dp.type.var("A"), dp.type.var("B")
    assert.is_true(eq(dp.type.adt("List", {A}), dp.type.adt("List", {B})))
    assert.is_false(eq(dp.type.tuple{A, A}, dp.type.tuple{A, B}))
    assert.is_false(eq(T, T2))
  end)

  it("compares modules: names, order and bodies", function()
    local function mod(order, op)
      local x = dp.var("x", T)
      local f = dp.fn({x}, dp.call(op or "negative", {x}))
      local y = dp.var("y", T)
      local g = dp.fn({y}, dp.call(dp.global("f"), {y}))
      return dp.IRModule{functions = order == 1 and {{"f", f}, {"main", g}} or {{"main", g}, {"f", f}}}
    end
    assert.is_true(eq(mod(1), mod(1)))
    assert.is_false(eq(mod(1), mod(2)))
    local err = diff_of(mod(1), mod(1, "exp"))
    assert.are.equal("@f.body.callee", err.path)
    assert.truthy(tostring(err):find("@f.body.callee", 1, true))
  end)

  it("reports the first difference: path and both sides", function()
    local a, b = dp.var("a", T), dp.var("b", T)
    local function mod(op)
      local s = dp.call("add", {a, b})
      return dp.IRModule{functions = {{"main", dp.fn({a, b}, dp.call("multiply", {a, dp.call(op, {s})}))}}}
    end
    local err = diff_of(mod("negative"), mod("exp"))
    assert.are.equal("@main.body.args[1].callee", err.path)
    assert.are.equal("negative", err.lhs)
    assert.are.equal("exp", err.rhs)
    local err2 = diff_of(dp.call("nn.conv2d", {a, b}, {channels = 64}),
                         dp.call("nn.conv2d", {a, b}, {channels = 32}))
    assert.truthy(err2.path:find("attrs.channels", 1, true))
    assert.are.equal("64", err2.lhs)
    assert.are.equal("32", err2.rhs)
    local x, y = dp.var("x", T), dp.var("x", T2)
    local err3 = diff_of(dp.fn({x}, x), dp.fn({y}, y))
    assert.truthy(err3.path:find("params[0].type_annotation", 1, true))
    assert.are.equal("Tensor[(5, 7), float32]", err3.lhs)
  end)

  describe("at depth " .. N, function()
    local function chain(last_op)
      local x, y = dp.var("x", T), dp.var("y", T)
      local p2, p1 = x, y
      for i = 1, N do
        p2, p1 = p1, dp.call(i == 1 and last_op or "add", {p1, p2})
      end
      return dp.fn({x, y}, p1)
    end

    it("compares call chains", function()
      local base = chain("add")
      assert.is_true(eq(base, chain("add")))
      assert.is_false(eq(base, chain("subtract")))
    end)

    it("compares let chains and reports a deep difference", function()
      local function lets(last)
        local x0 = dp.var("x", T)
        local vars = {}
        for i = 1, N do vars[i] = dp.var("v", T) end
        local body = vars[N]
        for i = N, 1, -1 do
          local op = (i == N and last) or "negative"
          body = dp.let(vars[i], dp.call(op, {vars[i - 1] or x0}), body)
        end
        return dp.fn({x0}, body)
      end
      local base = lets()
      assert.is_true(eq(base, lets()))
      local err = diff_of(base, lets("exp"))
      local want = "<root>" .. (".body"):rep(N) .. ".value.callee"
      assert.are.equal(#want, #err.path)
      assert.are.equal(want, err.path)
    end)
  end)
end)
