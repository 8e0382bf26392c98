-- examples/custom_default.lua: a Lua defaulting heuristic between analysis
-- and capture avoids the copy TVM's rules insert.
local dp = require "devplan"
package.path = "examples/?.lua;" .. package.path
local custom = require "custom_default"

local function count_copies(mod)
  local n = 0
  dp.visit(mod.main, function(e)
    if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "device_copy" then n = n + 1 end
  end)
  return n
end

describe("custom defaulting heuristic", function()
  local config = dp.CompilationConfig{targets = {dp.Target("llvm"), dp.Target("cuda")}, default_device_type = "cuda"}
  local mod = dp.parse(custom.example, {VirtualDevice = {dp.VirtualDevice{device_type = "cpu"}}})

  it("TVM's rules insert a copy", function()
    assert.equal(1, count_copies(dp.passes.PlanDevices(config)(mod)))
  end)
  it("the heuristic plans without any copy, everything on the cpu", function()
    local planned = custom.plan(mod, config)
    assert.equal(0, count_copies(planned))
    assert.truthy(tostring(planned.main.virtual_device):find("device_type=cpu", 1, true))
  end)
  it("its output is a fixed point of PlanDevices", function()
    local planned = custom.plan(mod, config)
    dp.assert_structural_equal(dp.passes.PlanDevices(config)(planned), planned)
  end)
end)
