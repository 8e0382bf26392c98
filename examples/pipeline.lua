-- Pipelines: a pass of your own, registered so that a textual pipeline (and
-- `devplan opt -p ... --load examples/pipeline.lua`) can name it, run with
-- instruments: print after the passes that change the module, time them,
-- verify after each, and a callback of your own.
-- Run: bin/devplan examples/pipeline.lua
local dp = require "devplan"

-- A pass: every exp runs where its argument is (a rule written in Lua).
local gpu = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
local exp_on_gpu = dp.passes.AnnotateVirtualDevices{exp = function() return gpu end}

-- Registered: `exp_on_gpu` can now be named in pipelines.
dp.pipeline.register(dp.pass("ExpOnGpu", function(mod, ctx) return exp_on_gpu(mod, ctx) end))

local mod = dp.parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = negative(%a);
  %1 = exp(%b);
  add(%0, %1)
}
]])

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
local pipeline = dp.pipeline.parse("infer_type,exp_on_gpu,plan_devices,verify")
print("pipeline: " .. tostring(pipeline))

local seen = {}
local ctx = dp.PassContext{
  config = config,
  print_after = "changed",
  print_options = {short_devices = true},
  output = io.stdout,
  time = true,
  verify_each = true,
  instruments = {{after = function(pass) seen[#seen + 1] = pass.name end}},
}
dp.pipeline.build(pipeline, {config = config})(mod, ctx)
print("ran: " .. table.concat(seen, ", "))
io.write(ctx:timing_report())
