-- Building, inspecting and rewriting IR from Lua.
-- Run: bin/devplan examples/ir_basics.lua
local dp = require "devplan"

-- fn (%x: Tensor[(5, 7), float32], %y: Tensor[(5, 7), float32]) { negative(add(%x, %y)) }
local T = dp.type.tensor({5, 7}, "float32")
local x, y = dp.var("x", T), dp.var("y", T)
local sum = dp.call("add", {x, y})
local main = dp.fn({x, y}, dp.call("negative", {sum}))
local mod = dp.infer_type(dp.IRModule{functions = {{"main", main}}})
print(mod)

-- Inspect: every node once, children first.
dp.visit(mod.main, function(e)
  if e.kind == "call" then
    print(("%s : %s"):format(e.callee.name, tostring(e.checked_type)))
  end
end)

-- Rewrite: put every add on the CPU with an on_device annotation.
local cpu = dp.VirtualDevice{device_type = "cpu"}
local annotated = dp.rewrite(mod, {
  call = function(call)
    if call.callee.kind == "op" and call.callee.name == "add" then
      return dp.call("on_device", {call}, {virtual_device = cpu})
    end
  end,
})
print(annotated)

-- Structural equality is alpha-equivalence: re-parsing the printed text gives an equal module.
assert(dp.structural_equal(dp.parse(tostring(annotated)), annotated))

-- Register an operator with its type relation written in Lua.
dp.op.register("example.double", {
  num_inputs = 1,
  type_rel = function(arg_types) return arg_types[1] end,
})
print(dp.infer_type(dp.parse([[
def @main(%a: Tensor[(2), float32]) { example.double(%a) }
]])))
