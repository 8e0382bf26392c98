-- Quick start: plan a small module on a machine with a CPU and a GPU.
-- Run: bin/devplan examples/quickstart.lua
local dp = require "devplan"

-- The machine: an llvm CPU (also the host) and a cuda GPU; values nobody
-- placed default to the GPU.
local cpu_target, gpu_target = dp.Target("llvm"), dp.Target("cuda")
local config = dp.CompilationConfig{targets = {cpu_target, gpu_target}, default_device_type = "cuda"}
local CPU = dp.VirtualDevice{device_type = "cpu"}

-- One annotation: the first add must run on the CPU.
local mod = dp.parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32],
          %c: Tensor[(5, 7), float32], %d: Tensor[(5, 7), float32]) {
  %0 = add(%a, %b);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  %2 = add(%c, %d);
  subtract(%1, %2)
}
]], {VirtualDevice = {CPU}}, {source_name = "quickstart.relay"})

-- PlanDevices places every value and inserts the copy the CPU result needs.
local planned = dp.passes.PlanDevices(config)(mod)
print(planned)

-- Why is %a on the CPU?
local why = dp.planner.explain(mod, mod.main.params[1], config)
print(why.text)
for _, step in ipairs(why.steps) do print("  " .. step.message) end
