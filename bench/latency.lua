-- Modelled latency (makespan) of the plans of the 15 models on the RK3399
-- (a Cortex-A CPU and a Mali GPU sharing DRAM), and of the generated
-- workloads under a synthetic cost model: the latency baselines of issue 24.
-- MODELLED: no device ran anything; every number is the schedule
-- dp.planner.schedule computes from the costs below (include/devplan/schedule.h
-- states the model: devices one call at a time, links one copy at a time,
-- copies beside compute).
--
-- Costs: the TopHub logs of examples/tophub/ for the RK3399 (arm_cpu for
-- the CPU, mali for the GPU: conv2d, depthwise conv2d, dense), read directly by
-- dp.costs.load; every call the logs do not cover gets the default model, whose
-- rates here are: flops per second the median rate of the covered calls of the
-- 15 models on that device (calibrated from the logs themselves), memory 4 GB/s
-- (CPU) and 6 GB/s (GPU), an overhead of 5 us (CPU) and 30 us (GPU, an OpenCL
-- kernel launch) per call; copies between the two at 4 GB/s. The rates that
-- are not from the logs are assumptions, stated so the numbers can be redone.
--
-- Columns (seconds of modelled latency unless said):
--   single    the best single device: every call on it (where the device can run it)
--   serial    each call on its faster device, run one after another (as a runtime
--             running operators in order: the sum of the tasks, copies included)
--   heft      HEFT's placement (dp.schedule.problem(...):heft()), planned and scheduled
--   tvm       TVM's rules with the calls the mali log covers (conv2d, dense) on the GPU
--   minb      min_bytes (then ShareCopies) with the same annotations
--   latency   the latency placement (PlanDevices placement = "latency"; no annotations: it
--             places every call), its plan scheduled
--   bound     max(critical path of per-call minima, sum of per-call minima / 2)
--   heft/bnd  how far HEFT is above the bound; lat/bnd the latency placement's
--   closer    how much smaller the latency placement's gap to the bound is than HEFT's
--             ((heft - lat) / (heft - bound))
--   sched ms  CPU ms of dp.planner.schedule on HEFT's plan (the cost model included);
--             heft ms: HEFT itself (p:heft(), the cost matrix made); plan ms:
--             PlanDevices of the annotated module (TVM's rules); lat ms: the latency
--             placement (dp.schedule.place, cost lookups included), lat/plan: over plan ms;
--             each after a full collection, the collector stopped
-- Baseline plans are PlanDevices' plans of the placement written as annotations
-- (dp.schedule.evaluate), after ShareCopies; every schedule is valid by
-- construction and the suite's checker (spec/schedule_check_spec.lua) checks
-- the same kinds of plans.
--
-- Usage: bin/devplan bench/latency.lua [N ...]   (generated sizes; default 100000 1000000; 0: none)
local dp = require "devplan"
local testing = require "devplan.testing"
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "bench"
local gen = dofile(here .. "/gen.lua")

local SIZES = {}
for i = 1, #(arg or {}) do SIZES[#SIZES + 1] = tonumber(arg[i]) end
if #SIZES == 0 then SIZES = {100000, 1000000} end
if SIZES[1] == 0 then SIZES = {} end

local MODELS = {"resnet18", "resnet50", "resnet152", "resnet3d18", "mobilenet", "squeezenet",
                "inception_v3", "densenet121", "densenet201", "vgg16", "dcgan", "lstm", "mlp", "dqn",
                "synthetic"}
local LOGS = {dp.root .. "/examples/tophub/arm_cpu_v0.08.log", dp.root .. "/examples/tophub/mali_v0.06.log"}

local function load_average()
  local f = io.open("/proc/loadavg")
  if not f then return "?" end
  local s = f:read("l")
  f:close()
  return s:match("^(%S+ %S+ %S+)")
end

-- f(...) and its CPU seconds, the collector stopped (after a full collection)
local function clock(f, ...)
  collectgarbage()
  collectgarbage("stop")
  local t0 = os.clock()
  local r = f(...)
  local secs = os.clock() - t0
  collectgarbage("restart")
  return r, secs
end

-- ---------------------------------------------------------------- the RK3399 costs

local config = dp.CompilationConfig{targets = {"llvm -device=arm_cpu -model=rk3399", "opencl -device=mali -model=rk3399"},
                                    default_device_type = "cpu", bandwidth = {default = 4e9}}
local CPU = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}
local GPU = dp.VirtualDevice{device_type = "opencl", virtual_device_id = 0}
local logs = dp.costs.load(LOGS, {board = "rk3399"})

local modules = {}
for _, name in ipairs(MODELS) do modules[name] = dp.parse_file(dp.root .. "/models/" .. name .. ".relay") end

-- flops per second: the median over the covered calls of the models, per device
local function median_rate(vd)
  local rates = {}
  for _, name in ipairs(MODELS) do
    dp.visit(modules[name], function(e)
      if e.kind == "call" and e.callee.kind == "op" then
        local s = logs:lookup(e, vd)
        if s and s > 0 then rates[#rates + 1] = dp.costs.flops(e) / s end
      end
    end)
  end
  table.sort(rates)
  return rates[(#rates + 1) // 2], #rates
end
local cpu_flops, ncpu = median_rate(CPU)
local gpu_flops, ngpu = median_rate(GPU)
local rates = dp.costs.model{cpu = {flops = cpu_flops, bytes = 4e9, overhead = 5e-6},
                             opencl = {flops = gpu_flops, bytes = 6e9, overhead = 3e-5}}
local costs = dp.costs.load(LOGS, {board = "rk3399", model = rates})

-- calls the mali log covers go on the GPU (TVM's rules and min_bytes rows)
local annotate = dp.passes.AnnotateVirtualDevices{
  ["nn.conv2d"] = function(call) if costs:covers(call, GPU) then return GPU end end,
  ["nn.dense"] = function(call) if costs:covers(call, GPU) then return GPU end end,
}

local function fmt(x)
  if x == nil then return "-" end
  if x >= 100 then return string.format("%.1f", x) end
  if x >= 1 then return string.format("%.3f", x) end
  return string.format("%.4f", x)
end

local function row(cells, widths)
  local out = {}
  for i, c in ipairs(cells) do
    local w = widths[i]
    out[i] = i == 1 and string.format("%-" .. w .. "s", c) or string.format("%" .. w .. "s", c)
  end
  return "| " .. table.concat(out, " | ") .. " |"
end

local HEAD = {"workload", "calls", "cov c/g", "single", "serial", "heft", "tvm", "minb", "latency", "bound",
              "heft/bnd", "lat/bnd", "closer", "sched ms", "heft ms", "lat ms", "plan ms", "lat/plan"}
local W = {18, 8, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 7, 8, 7, 8, 7, 8}

local function header(title)
  print(title)
  print(row(HEAD, W))
  local dash = {}
  for i, w in ipairs(W) do dash[i] = string.rep("-", w) end
  print("|-" .. table.concat(dash, "-|-") .. "-|")
end

-- One workload: every plan, its makespan, the times.
local function measure(name, mod, cfg, cost, ann_pass)
  local b = dp.schedule.baselines(mod, cfg, {cost = cost})
  local b_single, bound = b.best_single.schedule.makespan, b.bound.bound
  local calls = select(1, b.problem:calls())
  local heft = b.heft.schedule.makespan
  local _, sched_s = clock(dp.planner.schedule, b.heft.planned, cfg, {cost = cost})
  local _, heft_s = clock(b.problem.heft, b.problem)
  local annotated = ann_pass and ann_pass(mod) or mod
  local tvm_ok, tvm_planned = pcall(dp.passes.PlanDevices(cfg), annotated)
  local plan_s = select(2, clock(dp.passes.PlanDevices(cfg), annotated))
  local tvm = tvm_ok and dp.planner.schedule(tvm_planned, cfg, {cost = cost}).makespan or nil
  local mb_planned = dp.passes.ShareCopies()(dp.passes.PlanDevices(cfg, {placement = "min_bytes"})(annotated))
  local minb = dp.planner.schedule(mb_planned, cfg, {cost = cost}).makespan
  local serial = b.cheapest.schedule.makespan
  b = nil
  local lat, lat_s = clock(dp.schedule.place, mod, cfg, {cost = cost})
  local s = dp.planner.schedule(lat.planned, cfg, {cost = cost})
  assert(math.abs(s.makespan - lat.makespan) <= 1e-9 * s.makespan, name .. ": the latency plan's schedule differs")
  return {name = name, calls = calls, single = b_single, serial = serial, heft = heft,
          tvm = tvm, minb = minb, bound = bound, sched = sched_s, heft_s = heft_s, plan = plan_s,
          lat = lat.makespan, lat_s = lat_s}
end

local function print_row(r, cov)
  local gap = r.heft - r.bound
  print(row({r.name, tostring(r.calls), cov or "", fmt(r.single), fmt(r.serial), fmt(r.heft), fmt(r.tvm),
             fmt(r.minb), fmt(r.lat), fmt(r.bound), string.format("%.3f", r.heft / r.bound),
             string.format("%.3f", r.lat / r.bound), gap > 0 and string.format("%.0f%%", 100 * (r.heft - r.lat) / gap) or "-",
             string.format("%.2f", r.sched * 1e3), string.format("%.2f", r.heft_s * 1e3),
             string.format("%.1f", r.lat_s * 1e3), string.format("%.2f", r.plan * 1e3),
             string.format("%.1f", r.lat_s / r.plan)}, W))
end

print(string.format("bench/latency.lua, %s, load average %s; MODELLED latency: no device ran anything",
                    os.date("%Y-%m-%d"), load_average()))
print(string.format("RK3399 default model: CPU %.1f GFLOP/s (median of %d covered calls), GPU %.1f GFLOP/s (of %d); "
                    .. "memory 4 / 6 GB/s, overhead 5 / 30 us; copies 4 GB/s", cpu_flops / 1e9, ncpu, gpu_flops / 1e9, ngpu))
print()
header("Models (models/), RK3399 costs (TopHub arm_cpu + mali, rk3399), seconds")
local sums = {heft = 0, bound = 0, serial = 0, single = 0}
for _, name in ipairs(MODELS) do
  local mod = modules[name]
  local nc, ng = 0, 0
  dp.visit(mod, function(e)
    if e.kind == "call" and e.callee.kind == "op" then
      if costs:covers(e, CPU) then nc = nc + 1 end
      if costs:covers(e, GPU) then ng = ng + 1 end
    end
  end)
  local r = measure(name, mod, config, costs, annotate)
  print_row(r, nc .. "/" .. ng)
  io.stdout:flush()
end

-- ---------------------------------------------------------------- generated workloads

-- add and multiply on (5, 7) float32: CPU 1.11 us a call, GPU 1.26 us (a larger
-- launch overhead, faster arithmetic); copies of 140 bytes at 1 GB/s (0.14 us)
local synthetic = dp.costs.model{cpu = {flops = 5e8, bytes = 1e10, overhead = 1e-6},
                                 cuda = {flops = 2e9, bytes = 1e10, overhead = 1.2e-6}}
local gcfg = dp.CompilationConfig{targets = {testing.TARGET.CPU, testing.TARGET.GPU}, default_device_type = "cuda",
                                  bandwidth = {default = 1e9}}
print()
header("Generated workloads (bench/gen.lua), synthetic costs (CPU 1.11 us, GPU 1.26 us a call; 1 GB/s), seconds")
for _, n in ipairs(SIZES) do
  for _, shape in ipairs{"chain", "branchy"} do
    collectgarbage()
    local mod = dp.parse(gen[shape](n), testing.META)
    local r = measure(shape .. " " .. n, mod, gcfg, synthetic, nil)
    print_row(r, "")
    io.stdout:flush()
  end
end
print()
print("load average at the end: " .. load_average())
