-- The passes around PlanDevices against PlanDevices itself (issue 23): on
-- the generated modules of bench/gen.lua (parsed with the conformance
-- palette, as bench/plan.lua), CPU seconds (os.clock, best of REPEAT) of
--   plan            PlanDevices(config), the reference of each row
--   annotate        AnnotateVirtualDevices with one rule (add -> the GPU)
--   share           ShareCopies on the planned module
--   partition       PartitionByVirtualDevice{} on the planned module (no config:
--                   it finds the targets itself); partition_cfg with {config =}
--   report_text     dp.planner.report(planned, config):text(); report_json :json()
--   min2, min4      PlanDevices with placement = "min_bytes", two devices (the
--                   configuration's CPU and GPU) and four (also opencl, vulkan)
-- Columns: seconds, nanoseconds per call, the ratio to PlanDevices on the
-- same module, and the ratio to the previous size (linear: within 11x per
-- 10x more calls).
--
-- Usage: bin/devplan bench/passes.lua [N ...]   (default 10000 100000 1000000)
--        DEVPLAN_BENCH_REPEAT=3 (default 1)
--        DEVPLAN_BENCH_ROWS="annotate:chain annotate:let ..." (default: every row below)
local dp = require "devplan"
local testing = require "devplan.testing"
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "bench"
local gen = dofile(here .. "/gen.lua")

local REPEAT = tonumber(os.getenv("DEVPLAN_BENCH_REPEAT") or "1")
local cfg = testing.config("cuda")
local cfg4 = testing.config("cuda", {"CPU", "GPU", dp.Target("opencl"):with_host(testing.TARGET.HOST),
                                     dp.Target("vulkan"):with_host(testing.TARGET.HOST)})
local GPU = testing.PALETTE.GPU

-- row -> function(module, planned) -> the pass to time and its argument
local ROWS = {
  annotate = function(mod) return dp.passes.AnnotateVirtualDevices{add = function() return GPU end}, mod end,
  share = function(_, planned) return dp.passes.ShareCopies(), planned end,
  partition = function(_, planned) return dp.passes.PartitionByVirtualDevice{}, planned end,
  partition_cfg = function(_, planned) return dp.passes.PartitionByVirtualDevice{config = cfg}, planned end,
  report_text = function(_, planned) return function(p) return dp.planner.report(p, cfg):text() end, planned end,
  report_json = function(_, planned) return function(p) return dp.planner.report(p, cfg):json() end, planned end,
  min2 = function(mod) return dp.passes.PlanDevices(cfg, {placement = "min_bytes"}), mod end,
  min4 = function(mod) return dp.passes.PlanDevices(cfg4, {placement = "min_bytes"}), mod end,
}
local DEFAULT = "annotate:chain annotate:let share:let share:chain partition:let partition_cfg:let "
  .. "partition:branchy partition_cfg:branchy report_text:let report_json:let report_text:branchy "
  .. "report_json:branchy min2:chain min2:let min4:chain min4:let"

local function best(fn, x)
  local t = math.huge
  for _ = 1, REPEAT do
    collectgarbage()
    collectgarbage()
    local t0 = os.clock()
    local out = fn(x)
    t = math.min(t, os.clock() - t0)
    out = nil -- luacheck: ignore
  end
  return t
end

local sizes = {}
for _, s in ipairs(arg or {}) do sizes[#sizes + 1] = tonumber(s) end
if #sizes == 0 then sizes = {10000, 100000, 1000000} end
local wanted = {} -- shape -> rows, in order
local shapes = {}
for item in (os.getenv("DEVPLAN_BENCH_ROWS") or DEFAULT):gmatch("%S+") do
  local row, shape = item:match("^([%w_]+):(%w+)$")
  assert(row and ROWS[row] and gen[shape], "bench/passes.lua: unknown row " .. item)
  if not wanted[shape] then
    wanted[shape] = {}
    shapes[#shapes + 1] = shape
  end
  table.insert(wanted[shape], row)
end

print(("%-14s %-8s %9s %10s %9s %8s %8s"):format("row", "shape", "calls", "s", "ns/call", "x plan", "x prev"))
local prev = {}
for _, shape in ipairs(shapes) do
  for _, n in ipairs(sizes) do
    local mod = dp.parse(gen[shape](n), testing.META)
    local plan = dp.passes.PlanDevices(cfg)
    local tplan = best(plan, mod)
    local planned = plan(mod)
    print(("%-14s %-8s %9d %10.3f %9.0f %8s %8s"):format("plan", shape, n, tplan, tplan * 1e9 / n, "1.0",
      prev["plan" .. shape] and ("%8.1f"):format(tplan / prev["plan" .. shape]) or "-"))
    prev["plan" .. shape] = tplan
    for _, row in ipairs(wanted[shape]) do
      local t = best(ROWS[row](mod, planned))
      local key = row .. shape
      print(("%-14s %-8s %9d %10.3f %9.0f %8.1f %8s"):format(row, shape, n, t, t * 1e9 / n, t / tplan,
        prev[key] and ("%8.1f"):format(t / prev[key]) or "-"))
      prev[key] = t
    end
    mod, planned = nil, nil
    collectgarbage()
    collectgarbage()
  end
end
