-- Bytes copied between devices, and copies, under three plans:
--   tvm        dp.passes.PlanDevices(config): TVM's rules, one copy per use
--   +share     the same plan after dp.passes.ShareCopies (one copy per value,
--              device pair and scope)
--   min_bytes  PlanDevices(config, {placement = "min_bytes"}) then ShareCopies
-- on the 15 models of ../shared/models/ (NAME.relay) with realistic partial
-- annotations, and on the generated workloads of ../shared/bench/ (bench/gen.lua).
--
-- The models' annotations (dp.passes.AnnotateVirtualDevices, as `devplan plan
-- --annotate` writes them): convolutions and dense on the GPU; the operators
-- a GPU library here is taken not to have (pooling, concatenate, split,
-- batch_flatten) on the CPU; the result on the CPU (main's virtual_device).
-- Configuration: targets {CPU, GPU}, default device type cpu (the models'
-- convention, ../shared/models/README.md). The generated workloads are
-- annotated by their generator (every 10th op on the CPU, branchy's blocks);
-- configuration as ../shared/bench/README.md (default cuda).
--
-- Bytes are dp.planner.report's (checked types). Every plan is checked with
-- dp.planner.verify against its input. The last table times min_bytes
-- placement alone (PlanDevices with placement = "min_bytes", CPU seconds,
-- best of DEVPLAN_BENCH_REPEAT) on generated chains of 1,000,000 calls.
--
-- Usage: bin/devplan bench/placement.lua [N_GENERATED [N_SPEED]]
--        (defaults 10000 and 1000000; N_SPEED 0 skips the timing table)
local dp = require "devplan"
local testing = require "devplan.testing"
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "bench"
local gen = dofile(here .. "/gen.lua")

local N_GEN = tonumber(arg and arg[1]) or 10000
local N_SPEED = tonumber(arg and arg[2]) or 1000000
local REPEAT = tonumber(os.getenv("DEVPLAN_BENCH_REPEAT") or "1")
local MODELS = {"resnet18", "resnet50", "resnet152", "resnet3d18", "mobilenet", "squeezenet",
                "inception_v3", "densenet121", "densenet201", "vgg16", "dcgan", "lstm", "mlp", "dqn",
                "synthetic"}
local GPU_OPS = {"nn.conv2d", "nn.conv3d", "nn.conv2d_transpose", "nn.dense"}
local CPU_ONLY = {"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.adaptive_avg_pool3d",
                  "concatenate", "split", "nn.batch_flatten"}

local function annotate_models()
  local map = {}
  for _, op in ipairs(GPU_OPS) do map[op] = "cuda" end
  for _, op in ipairs(CPU_ONLY) do map[op] = "cpu" end
  return dp.pipeline.annotate_ops(map)
end

-- main's result on the CPU.
local function result_on_cpu(mod)
  local f = mod.main
  return mod:with_function("main", dp.fn(f.params, f.body, {ret_type = f.ret_type,
                                                             virtual_device = testing.PALETTE.CPU}))
end

local function count(mod, config)
  local t = dp.planner.report(mod, config).totals
  return t.copies, t.bytes_copied, t.calls
end

local function checked(plan, mod, config)
  local planned = plan(mod)
  local _, total = dp.planner.verify(planned, config, {input = mod})
  assert(total == 0, "a plan does not verify")
  return planned
end

local function human(b)
  if b >= 1e9 then return ("%.2f GB"):format(b / 1e9) end
  if b >= 1e6 then return ("%.2f MB"):format(b / 1e6) end
  if b >= 1e3 then return ("%.1f kB"):format(b / 1e3) end
  return ("%d B"):format(b)
end

local ROW = "| %-22s | %8s | %6s %10s | %6s %10s | %6s %10s | %7s |"
local function header(title)
  print(title)
  print(ROW:format("workload", "calls", "tvm", "bytes", "+share", "bytes", "min_b.", "bytes", "tvm/min"))
  print("|" .. ("-"):rep(24) .. "|" .. ("-"):rep(10) .. "|" .. ("-"):rep(19) .. "|" .. ("-"):rep(19)
    .. "|" .. ("-"):rep(19) .. "|" .. ("-"):rep(9) .. "|")
end

-- TVM's rules may find the annotations conflicting (a value an annotated
-- operator reads on the GPU and another on the CPU, when an annotation
-- reaches it): the row says so, and min_bytes, which puts a copy there, goes on.
local function row(name, mod, config)
  local ok, tvm = pcall(checked, dp.passes.PlanDevices(config), mod, config)
  local mb = dp.passes.ShareCopies()(checked(dp.passes.PlanDevices(config, {placement = "min_bytes"}), mod, config))
  local c3, b3, calls = count(mb, config)
  if not ok then
    assert(tvm.code == "conflict", tostring(tvm))
    print(ROW:format(name, calls, "-", "conflict", "-", "conflict", c3, human(b3), "-"))
    return nil, b3
  end
  local c1, b1 = count(tvm, config)
  local c2, b2 = count(dp.passes.ShareCopies()(tvm), config)
  local ratio = b3 > 0 and ("%.2fx"):format(b1 / b3) or (b1 > 0 and "inf" or "-")
  print(ROW:format(name, calls, c1, human(b1), c2, human(b2), c3, human(b3), ratio))
  return b1, b3
end

local worse = {}
header(("Models (../shared/models/NAME.relay; %s on the GPU, %s on the CPU, the result on the CPU)"):format(
  table.concat(GPU_OPS, ", "), table.concat(CPU_ONLY, ", ")))
local mconfig = testing.config("cpu")
local annotate = annotate_models()
for _, name in ipairs(MODELS) do
  local mod = dp.parse(testing.read_file(testing.shared_dir .. "/models/" .. name .. ".relay"), testing.META)
  mod = result_on_cpu(annotate(mod))
  local b1, b3 = row(name, mod, mconfig)
  if b1 and b3 > b1 then worse[#worse + 1] = name end
end
print()

header(("Generated workloads (bench/gen.lua, ../shared/bench/gen_relay.py), %d calls"):format(N_GEN))
local gconfig = testing.config("cuda")
for _, shape in ipairs{"chain", "let", "branchy"} do
  local b1, b3 = row(shape, dp.parse(gen[shape](N_GEN), testing.META), gconfig)
  if b1 and b3 > b1 then worse[#worse + 1] = shape end
end
print()
print(#worse == 0 and "min_bytes copies no more bytes than TVM's rules on every workload"
  or "min_bytes copies more than TVM's rules on: " .. table.concat(worse, ", "))

if N_SPEED > 0 then
  print()
  print(("%-8s %10s %12s %12s %10s"):format("shape", "calls", "tvm s", "min_bytes s", "ns/call"))
  for _, shape in ipairs{"chain", "branchy"} do
    local mod = dp.parse(gen[shape](N_SPEED), testing.META)
    local function best(plan)
      local b = math.huge
      for _ = 1, REPEAT do
        collectgarbage()
        collectgarbage("stop")
        local t0 = os.clock()
        local out = plan(mod)
        b = math.min(b, os.clock() - t0)
        out = nil
        collectgarbage("restart")
      end
      return b
    end
    local t1 = best(dp.passes.PlanDevices(gconfig))
    local t2 = best(dp.passes.PlanDevices(gconfig, {placement = "min_bytes"}))
    print(("%-8s %10d %12.3f %12.3f %10.0f"):format(shape, N_SPEED, t1, t2, t2 * 1e9 / N_SPEED))
    mod = nil
    collectgarbage()
  end
end
