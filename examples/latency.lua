-- The modelled latency of a model on a board with a CPU and a GPU side by
-- side (the RK3399: the TopHub logs' measured convolution and dense times,
-- examples/rk3399.costs for the rest): the baselines, and HEFT's schedule
-- as text and as a Gantt chart. MODELLED: no device runs anything.
-- Run: bin/devplan examples/latency.lua [MODEL.relay] [OUT.svg]
-- (on the command line:
--    devplan plan squeezenet.relay --target llvm --target 'opencl -device=mali'
--      --annotate nn.conv2d=opencl --costs examples/tophub/arm_cpu_v0.08.log --costs examples/tophub/mali_v0.06.log
--      --costs examples/rk3399.costs --board rk3399 --report text --gantt plan.svg)
local dp = require "devplan"

local model = arg and arg[1] or (dp.root .. "/models/squeezenet.relay")
local out = arg and arg[2] or "latency.svg"

-- The board: an ARM CPU (the host) and a Mali GPU; copies at 4 GB/s.
local config = dp.CompilationConfig{targets = {"llvm", "opencl -device=mali"}, default_device_type = "cpu",
                                    bandwidth = {default = 4e9}}
-- What calls cost: the RK3399's records of both TopHub logs, over the rates
-- of examples/rk3399.costs (a later file wins where two cover a call).
local costs = dp.costs.load({dp.root .. "/examples/tophub/arm_cpu_v0.08.log", dp.root .. "/examples/tophub/mali_v0.06.log",
                             dp.root .. "/examples/rk3399.costs"}, {board = "rk3399"})

local mod = dp.parse_file(model)
local b = dp.schedule.baselines(mod, config, {cost = costs})
local t = dp.schedule.format_time
print("lower bound                          " .. t(b.bound.bound))
for _, r in ipairs(b.single) do
  print(string.format("all on %-29s %s", r.device.device_type_name, t(r.schedule.makespan)))
end
print("each call on its faster device,")
print("  one after another                  " .. t(b.cheapest.schedule.makespan))
print("HEFT (devices side by side)          " .. t(b.heft.schedule.makespan))
print()
print(b.heft.schedule:text({path = 8}))

-- A cost function of your own works the same: seconds, or nil where a
-- device cannot run the call (here: the GPU runs no pooling).
local function no_gpu_pooling(call, vd)
  if vd.device_type_name == "opencl" and call.callee.name:find("pool") then return nil end
  return costs(call, vd)
end
local p = dp.schedule.problem(mod, config, {cost = no_gpu_pooling})
local r = dp.schedule.evaluate(mod, config, p:heft(), {cost = no_gpu_pooling})
local pools_on_gpu = 0
for _, task in ipairs(r.schedule.tasks) do
  if task.kind == "call" and task.expr.callee.name:find("pool") and task.device.device_type_name == "opencl" then
    pools_on_gpu = pools_on_gpu + 1
  end
end
print(string.format("HEFT with no pooling on the GPU: %s (%d pooling calls on the GPU)", t(r.schedule.makespan),
                    pools_on_gpu))

b.heft.schedule:write_svg(out, {title = "HEFT on " .. model:match("([^/]*)$")})
print("drawn: " .. out)
