-- examples/custom_default.lua: a Lua defaulting heuristic between analysis
-- and capture avoids the copy TVM's rules insert.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = "examples/?.lua;" .. package.path
local custom = require "custom_default"

local function count_copies(mod) return testing.count_calls(mod, "device_copy") end

describe("custom defaulting heuristic", function()
  local config = dp.CompilationConfig{targets = {dp.Target("llvm"), dp.Target("cuda")}, default_device_type = "cuda"}
  local mod = dp.parse(custom.example, {VirtualDevice = {dp.VirtualDevice{device_type = "cpu"}}})

  it("TVM's rules insert a copy", function()
    assert.equal(1, count_copies(testing.plan(config)(mod)))
  end)
  it("the heuristic plans without any copy, everything on the cpu", function()
    local planned = custom.plan(mod, config)
    assert.equal(0, count_copies(planned))
    assert.truthy(tostring(planned.main.virtual_device):find("device_type=cpu", 1, true))
  end)
  it("its output is a fixed point of PlanDevices", function()
    local planned = custom.plan(mod, config)
    assert.structurally_equal(testing.plan(config)(planned), planned)
  end)
end)
