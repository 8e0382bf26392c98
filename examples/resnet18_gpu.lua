-- resnet18 with its convolutions and its dense layer on the GPU: place, plan,
-- read the copies and their bytes, and draw the plan.
-- Run: bin/devplan examples/resnet18_gpu.lua [MODEL.relay] [OUT.svg]
-- (the same with one command each:
--    devplan plan resnet18.relay --annotate nn.conv2d=cuda,nn.dense=cuda --short-devices
--    devplan plan resnet18.relay --annotate nn.conv2d=cuda,nn.dense=cuda --report text
--    devplan plan resnet18.relay --annotate nn.conv2d=cuda,nn.dense=cuda --svg resnet18.svg)
local dp = require "devplan"

local model = arg and arg[1] or (dp.root .. "/models/resnet18.relay")
local out = arg and arg[2] or "resnet18.svg"

-- The machine: an llvm CPU (the host) and a cuda GPU; what nothing places
-- stays on the CPU.
local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}

-- A pipeline: annotate the operators, plan, verify the plan.
local pipeline = dp.pipeline.build("annotate(nn.conv2d=cuda,nn.dense=cuda),plan_devices,verify", {config = config})
local ctx = dp.PassContext{config = config, time = true}
local planned = pipeline(dp.parse_file(model), ctx)

-- Where everything runs, and what crosses devices.
print(dp.planner.report(planned, config))
io.write(ctx:timing_report())

-- The picture: nodes coloured by device, the copy as a red dashed edge.
dp.graph.svg(planned, out, {config = config, title = "resnet18 on CPU + GPU"})
print("drawn: " .. out)
