-- The two real models: planning NAME.annotated.relay gives NAME.planned.relay
-- (TVM's output) and planning the planned module changes nothing.
local dp = require "devplan"

local DIR = "../shared/models/"
local HOST = dp.Target("llvm")
local CPU_T, GPU_T = dp.Target("llvm"):with_host(HOST), dp.Target("cuda"):with_host(HOST)
local CPU = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0, target = CPU_T}
local GPU = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0, target = GPU_T}
local META = {VirtualDevice = {CPU, GPU}}

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

describe("models", function()
  local plan = dp.passes.PlanDevices(dp.CompilationConfig{targets = {CPU_T, GPU_T}, default_device_type = "cpu"})
  for _, name in ipairs{"resnet18", "dcgan"} do
    it(name .. " plans as TVM did", function()
      local planned = plan(dp.parse(read(DIR .. name .. ".annotated.relay"), META))
      local expected = dp.parse(read(DIR .. name .. ".planned.relay"), META)
      dp.assert_structural_equal(planned, expected)
    end)
    it(name .. ": planning the planned module changes nothing", function()
      local expected = dp.parse(read(DIR .. name .. ".planned.relay"), META)
      dp.assert_structural_equal(plan(expected), expected)
    end)
  end
end)
