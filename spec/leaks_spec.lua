-- Leak regressions (../shared/repro/leak_*.lua). What leaked is only seen by
-- LeakSanitizer and valgrind: scripts/sanitize.sh and scripts/valgrind.sh
-- fail this file if anything here leaks again; the assertions check that
-- the behaviour around the fixes is right.
local dp = require "devplan"

local function T(shape) return dp.type.tensor(shape, "float32") end

describe("assert_structural_equal", function()
  local a = dp.parse("def @main(%x: Tensor[(3), float32]) { %x }")
  local b = dp.parse("def @main(%x: Tensor[(5), float32]) { %x }")

  it("checks its message argument before comparing (an argument error, nothing held)", function()
    for _, bad in ipairs{{}, print, true} do
      for _, rhs in ipairs{a, b} do
        local ok, err = pcall(dp.assert_structural_equal, a, rhs, bad)
        assert.is_false(ok)
        assert.are.equal("string", type(err))
        assert.truthy(err:find("bad argument #3", 1, true), err)
      end
    end
  end)

  it("still names the path and both sides, with the message", function()
    local ok, err = pcall(dp.assert_structural_equal, a, b, "shapes")
    assert.is_false(ok)
    assert.are.equal("value", err.code)
    assert.truthy(err.message:find("^shapes: not structurally equal"), err.message)
    assert.truthy(err.lhs:find("3", 1, true) and err.rhs:find("5", 1, true), err.lhs .. " / " .. err.rhs)
    assert.are.equal("string", type(err.path))
    ok, err = pcall(dp.assert_structural_equal, 1, 2)
    assert.is_false(ok)
    assert.are.same({"1", "2", ""}, {err.lhs, err.rhs, err.path})
    assert.is_nil(dp.assert_structural_equal(a, a, "same"))
  end)
end)

describe("operators registered with object defaults", function()
  it("keep a virtual device default usable (the context is closed, not leaked, at exit)", function()
    local cpu = dp.VirtualDevice{device_type = "cpu"}
    local seen
    local op = dp.op.register("leaks.vdev_default", {num_inputs = 1,
      attrs = {{name = "where", kind = "vdev", default = cpu}},
      type_rel = function(args, attrs) seen = attrs.where; return args[1] end})
    local call = dp.call(op, {dp.var("x", T{2})})
    assert.are.equal("Tensor[(2), float32]", tostring(dp.infer_expr(call)))
    assert.are.equal(cpu, seen)
    assert.are.same({}, call.attrs) -- the default is not written
  end)

  it("keep a constant default usable", function()
    local c = dp.const({1, 2}, "int64")
    local op = dp.op.register("leaks.const_default", {num_inputs = 1,
      attrs = {{name = "k", kind = "any", default = c}},
      type_rel = function(args, attrs) assert(attrs.k == c); return args[1] end})
    assert.are.equal("Tensor[(2), float32]", tostring(dp.infer_expr(dp.call(op, {dp.var("x", T{2})}))))
  end)

  it("read each attribute spec without metamethods, so both passes see the same values", function()
    local calls = 0
    local tricky = setmetatable({name = "n"}, {__index = function(_, k)
      calls = calls + 1
      if calls > 2 then error("raised in the second pass") end
      return k == "kind" and "int" or k == "default" and 1 or nil
    end})
    local op = dp.op.register("leaks.raw_spec", {num_inputs = 1, attrs = {tricky},
      type_rel = function(args) return args[1] end})
    assert.are.equal(0, calls)
    -- kind and default came from no metamethod: kind "any", no default
    local call = dp.call(op, {dp.var("x", T{2})}, {n = "anything"})
    assert.are.same({n = "anything"}, call.attrs)
  end)

  it("reject a kind that is not a string", function()
    local ok, err = pcall(dp.op.register, "leaks.bad_kind", {num_inputs = 1,
      attrs = {{name = "n", kind = 3}}, type_rel = function(args) return args[1] end})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown kind", 1, true), tostring(err))
  end)
end)
