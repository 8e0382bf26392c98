-- What the fast paths of type inference (src/core/infer.c) must not change:
-- working types kept in the nodes are put back when inference fails,
-- remembered relation results never cross attributes or shapes, relations
-- written in Lua run once per call, and an inference started from inside a
-- Lua relation works on its own expression and refuses the one being typed.
local dp = require "devplan"

local T57 = "Tensor[(5, 7), float32]"
local function tensor(shape) return dp.type.tensor(shape, "float32") end

local counter = 0
local function fresh(name)
  counter = counter + 1
  return ("test.fast_%s%d"):format(name, counter)
end

describe("inference fast paths", function()
  it("puts back the checked types nodes had when a later inference fails", function()
    local x = dp.var("x", tensor({5, 7}))
    local n = dp.call("negative", {x})
    assert.are.equal(T57, tostring(dp.infer_expr(n)))
    local bad = dp.call("add", {n, dp.var("y", tensor({3}))})
    local ok, err = pcall(dp.infer_expr, bad)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("do not broadcast", 1, true), tostring(err))
    assert.are.equal(T57, tostring(n.checked_type))
    assert.are.equal(T57, tostring(x.checked_type))
    assert.is_nil(bad.checked_type)
    -- the failure found last, when every type is resolved
    local z = dp.var("z")
    local lone = dp.tuple({n, dp.fn({z}, x)})
    ok, err = pcall(dp.infer_expr, lone)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("variable %z: cannot infer its type", 1, true), tostring(err))
    assert.are.equal(T57, tostring(n.checked_type))
    assert.are.equal(T57, tostring(x.checked_type))
    assert.is_nil(z.checked_type)
    assert.is_nil(lone.checked_type)
  end)

  it("infers a typed module again to the same types", function()
    local mod = dp.parse([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  let %x = add(%a, %b);
  let %y = sum(%x, axis=[1]);
  %y
}]])
    local before = tostring(mod.main.checked_type)
    dp.infer_type(mod)
    assert.are.equal(before, tostring(mod.main.checked_type))
    assert.are.equal("fn (Tensor[(5, 7), float32], Tensor[(5, 7), float32]) -> Tensor[(5), float32]", before)
  end)

  it("does not reuse a relation result across attributes or shapes", function()
    local x = dp.var("x", tensor({5, 7}))
    local z = dp.var("z", tensor({3}))
    local t = dp.tuple({dp.call("sum", {x}, {axis = {0}}), dp.call("sum", {x}, {axis = {1}}),
                        dp.call("sum", {x}), dp.call("negative", {x}), dp.call("negative", {z}),
                        dp.call("add", {x, x}), dp.call("add", {z, z})})
    assert.are.equal("(Tensor[(7), float32], Tensor[(5), float32], float32, " .. T57 ..
                     ", Tensor[(3), float32], " .. T57 .. ", Tensor[(3), float32])", tostring(dp.infer_expr(t)))
  end)

  it("reports an error found while solving waiting calls, and stays usable", function()
    -- add waits for the tuple %t; solving it fails (this used to free the
    -- waiting list twice)
    local text = "def @main(%x: Tensor[(5, 7), float32]) {\n  %0 = fn (%t) { add(%t.0, %t.1) };\n" ..
                 "  %0((%x, meta[relay.Constant][0]))\n}"
    local ok, err = pcall(dp.parse, text, {["relay.Constant"] = {dp.const({3, 2}, "int64")}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find(":2:18: call of add: add: argument dtypes differ (float32 and int64)", 1, true),
                  tostring(err))
    local mod = dp.parse(text, {["relay.Constant"] = {dp.const({1, 2, 3, 4, 5, 6, 7}, "float32")}})
    assert.are.equal("fn (" .. T57 .. ") -> " .. T57, tostring(mod.main.checked_type))
  end)

  it("runs a relation written in Lua once per call", function()
    local calls = 0
    local name = fresh("count")
    dp.op.register(name, {num_inputs = 1, type_rel = function(args)
      calls = calls + 1
      return args[1]
    end})
    local x = dp.var("x", tensor({5, 7}))
    local e = x
    for _ = 1, 5 do e = dp.call(name, {e}) end
    assert.are.equal(T57, tostring(dp.infer_expr(e)))
    assert.are.equal(5, calls)
  end)

  it("lets a Lua relation infer another expression, not the one being typed", function()
    local inner_x = dp.var("ix", tensor({2}))
    local target
    local name = fresh("nested")
    dp.op.register(name, {num_inputs = 1, type_rel = function(args)
      local other = dp.infer_expr(dp.call("negative", {inner_x}))
      assert(tostring(other) == "Tensor[(2), float32]")
      if target then dp.infer_expr(target) end
      return args[1]
    end})
    local x = dp.var("x", tensor({5, 7}))
    local n = dp.call("negative", {x})
    local outer = dp.call(name, {n})
    assert.are.equal(T57, tostring(dp.infer_expr(outer)))
    -- the relation now infers a node the enclosing inference is typing
    local x2 = dp.var("x2", tensor({5, 7}))
    local n2 = dp.call("negative", {x2})
    target = n2
    local ok, err = pcall(dp.infer_expr, dp.call(name, {n2}))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("enclosing inference", 1, true), tostring(err))
    assert.is_nil(n2.checked_type)
    target = nil
    assert.are.equal(T57, tostring(dp.infer_expr(dp.call(name, {n2}))))
    assert.are.equal(T57, tostring(n2.checked_type))
  end)
end)
