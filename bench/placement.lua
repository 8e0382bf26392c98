-- Bytes copied between devices, and copies, under three plans:
--   tvm        dp.passes.PlanDevices(config): TVM's rules, one copy per use
--   +share     the same plan after dp.passes.ShareCopies (one copy per value,
--              device pair and scope)
--   min_bytes  PlanDevices(config, {placement = "min_bytes"}) then ShareCopies
-- on the 15 models of ../shared/models/ (NAME.relay) with realistic partial
-- annotations, and on the generated workloads of ../shared/bench/ (bench/gen.lua).
--
-- The models' annotations (dp.passes.AnnotateVirtualDevices, as `devplan plan
-- --annotate` writes them): convolutions and dense on the GPU, the result on
-- the CPU (main's virtual_device), and the operators a GPU library here is
-- taken not to have on the CPU, in two sets, one table each:
--   A  pooling, concatenate, split and batch_flatten (a GPU library with
--      convolutions and matrix products only);
--   B  concatenate, split and batch_flatten (data movement left to the host;
--      pooling runs on the GPU too: nobody annotates it).
-- A model "has a CPU-only operator in the middle" when a call of one of the
-- set reads a value a GPU operator made (through any chain) and a GPU
-- operator reads what it made (the column "mid"; values followed through
-- let variables, not into function literals: lstm's split sits in the cell
-- function its steps call); the goal (2x fewer bytes than TVM's rules) is
-- about those. Configuration: targets {CPU, GPU},
-- default device type cpu (the models' convention, ../shared/models/README.md).
-- The generated workloads are annotated by their generator (every 10th op on
-- the CPU, branchy's blocks); configuration as ../shared/bench/README.md
-- (default cuda).
--
-- min_bytes with two devices is a minimum cut: its column is the optimum of
-- the placement (for the annotations given), so tvm/min says how far TVM's
-- rules are from the best any placement can do.
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
local CPU_SETS = {
  {name = "A", ops = {"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.adaptive_avg_pool3d",
                      "concatenate", "split", "nn.batch_flatten"}},
  {name = "B", ops = {"concatenate", "split", "nn.batch_flatten"}},
}

local function set_of(list)
  local s = {}
  for _, x in ipairs(list) do s[x] = true end
  return s
end

local function annotate_models(cpu_only)
  local map = {}
  for _, op in ipairs(GPU_OPS) do map[op] = "cuda" end
  for _, op in ipairs(cpu_only) do map[op] = "cpu" end
  return dp.pipeline.annotate_ops(map)
end

-- Does a call of an operator of cpu_only sit between GPU operators in main
-- (reads what one made, through any chain, and one reads what it made)?
local function cpu_in_middle(mod, cpu_only)
  local gpu, cpu = set_of(GPU_OPS), set_of(cpu_only)
  local function op_of(n)
    return n.kind == "call" and n.callee.kind == "op" and n.callee.name or nil
  end
  local bound = {}   -- let variable -> its value
  dp.visit(mod.main.body, function(n) if n.kind == "let" then bound[n.var] = n.value end end)
  local function deps(n)
    if n.kind == "var" then return bound[n] and {bound[n]} or {} end
    if n.kind == "function" then return {} end
    return dp.children(n)
  end
  local up = {}      -- node -> a GPU call is among it and what it reads
  local order = {}
  dp.visit(mod.main.body, function(n) order[#order + 1] = n end)
  local function gpu_up(n) -- (the visit order has children first; a let variable's value too)
    if up[n] ~= nil then return up[n] end
    local r = gpu[op_of(n) or ""] or false
    for _, k in ipairs(deps(n)) do r = r or gpu_up(k) end
    up[n] = r
    return r
  end
  local feeds_gpu = {} -- node -> a GPU call reads it (through any chain)
  local function mark(n)
    if feeds_gpu[n] then return end
    feeds_gpu[n] = true
    for _, k in ipairs(deps(n)) do mark(k) end
  end
  for _, n in ipairs(order) do
    if gpu[op_of(n) or ""] then for _, k in ipairs(deps(n)) do mark(k) end end
  end
  for _, n in ipairs(order) do
    if cpu[op_of(n) or ""] and feeds_gpu[n] then
      for _, k in ipairs(deps(n)) do if gpu_up(k) then return true end end
    end
  end
  return false
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

local ROW = "| %-22s | %8s | %3s | %6s %10s | %6s %10s | %6s %10s | %7s |"
local function header(title)
  print(title)
  print(ROW:format("workload", "calls", "mid", "tvm", "bytes", "+share", "bytes", "min_b.", "bytes", "tvm/min"))
  print("|" .. ("-"):rep(24) .. "|" .. ("-"):rep(10) .. "|" .. ("-"):rep(5) .. "|" .. ("-"):rep(19) .. "|"
    .. ("-"):rep(19) .. "|" .. ("-"):rep(19) .. "|" .. ("-"):rep(9) .. "|")
end

-- TVM's rules may find the annotations conflicting (a value an annotated
-- operator reads on the GPU and another on the CPU, when an annotation
-- reaches it): the row says so, and min_bytes, which puts a copy there, goes on.
local function row(name, mod, config, mid)
  local ok, tvm = pcall(checked, dp.passes.PlanDevices(config), mod, config)
  local mb = dp.passes.ShareCopies()(checked(dp.passes.PlanDevices(config, {placement = "min_bytes"}), mod, config))
  local c3, b3, calls = count(mb, config)
  if not ok then
    assert(tvm.code == "conflict", tostring(tvm))
    print(ROW:format(name, calls, mid, "-", "conflict", "-", "conflict", c3, human(b3), "-"))
    return nil, b3
  end
  local c1, b1 = count(tvm, config)
  local c2, b2 = count(dp.passes.ShareCopies()(tvm), config)
  local ratio = b3 > 0 and ("%.2fx"):format(b1 / b3) or (b1 > 0 and "inf" or "-")
  print(ROW:format(name, calls, mid, c1, human(b1), c2, human(b2), c3, human(b3), ratio))
  return b1, b3
end

local worse = {}
local mconfig = testing.config("cpu")
for _, set in ipairs(CPU_SETS) do
  header(("Models, set %s (../shared/models/NAME.relay; %s on the GPU, %s on the CPU, the result on the CPU)"):format(
    set.name, table.concat(GPU_OPS, ", "), table.concat(set.ops, ", ")))
  local annotate = annotate_models(set.ops)
  local mids, met, conflicts = 0, 0, 0
  for _, name in ipairs(MODELS) do
    local mod = dp.parse(testing.read_file(testing.shared_dir .. "/models/" .. name .. ".relay"), testing.META)
    mod = result_on_cpu(annotate(mod))
    local mid = cpu_in_middle(mod, set.ops)
    local b1, b3 = row(name, mod, mconfig, mid and "yes" or "")
    if b1 and b3 > b1 then worse[#worse + 1] = name .. " (" .. set.name .. ")" end
    if mid then
      mids = mids + 1
      if not b1 then conflicts = conflicts + 1
      elseif b1 >= 2 * b3 then met = met + 1 end
    end
  end
  print(("set %s: %d models with a CPU-only operator in the middle: 2x fewer bytes on %d, a conflict under "
    .. "TVM's rules on %d, short of 2x on %d"):format(set.name, mids, met, conflicts, mids - met - conflicts))
  print()
end

header(("Generated workloads (bench/gen.lua, ../shared/bench/gen_relay.py), %d calls"):format(N_GEN))
local gconfig = testing.config("cuda")
for _, shape in ipairs{"chain", "let", "branchy"} do
  local b1, b3 = row(shape, dp.parse(gen[shape](N_GEN), testing.META), gconfig, "")
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
