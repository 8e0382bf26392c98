-- PlanDevices alone on generated modules, built the way users and TVM's
-- figures (../shared/bench/README.md) build them: bench/gen.lua writes the
-- text of ../shared/bench/gen_relay.py (shapes chain, let, branchy) and
-- dp.parse reads it with the conformance palette (testing.META), so the
-- nodes are allocated in order as in any parsed program. The pass alone is
-- timed (os.clock, CPU seconds, best of REPEAT runs on the same module).
-- Memory is the peak heap growth during the pass in bytes per call, counted
-- by bench/heapcount.c (bench/plan.sh preloads it; column "heap B/call"):
-- every byte the pass holds at its peak, the planned module it returns
-- included, nothing of the input module. Run without it, the column is the
-- peak RSS growth instead ("rss B/call"; VmHWM after resetting it through
-- /proc/self/clear_refs, minus VmRSS before), which misses memory the pass
-- takes from chunks the parser freed. The Lua collector is stopped during
-- the pass either way. "result B/call" is the heap the planned module
-- keeps after the pass (0 without the counter): peak minus result is the
-- planner's own working memory. The last column is the time of each size over the previous
-- size's (1M/100k should stay within 12x, i.e. near-linear). "verify s" is
-- dp.planner.verify on the planned module, with the input.
-- Usage: bin/devplan bench/plan.lua [N ...]   (default 10000 100000 1000000)
--        DEVPLAN_BENCH_REPEAT=3 (default 1), DEVPLAN_BENCH_SHAPES="chain let"
local dp = require "devplan"
local testing = require "devplan.testing"
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "bench"
local gen = dofile(here .. "/gen.lua")

local config = testing.config("cuda")
local REPEAT = tonumber(os.getenv("DEVPLAN_BENCH_REPEAT") or "1")

local function status(key)
  local f = io.open("/proc/self/status")
  if not f then return 0 end
  for line in f:lines() do
    local v = line:match("^" .. key .. ":%s*(%d+)")
    if v then f:close() return tonumber(v) * 1024 end
  end
  f:close()
  return 0
end
local function reset_peak()
  local f = io.open("/proc/self/clear_refs", "w")
  if f then f:write("5") f:close() end
end

local function full_gc() collectgarbage() collectgarbage() end

-- One timed run: CPU seconds and peak RSS growth in bytes.
local function run_once(plan, mod)
  full_gc()
  collectgarbage("stop")
  local before = status("VmRSS")
  reset_peak()
  os.getenv("DEVPLAN_HEAP_RESET")
  local t0 = os.clock()
  local out = plan(mod)
  local secs = os.clock() - t0
  local heap = tonumber(os.getenv("DEVPLAN_HEAP_PEAK"))
  local kept = tonumber(os.getenv("DEVPLAN_HEAP_LIVE")) or 0
  local peak = heap or status("VmHWM") - before
  out = nil
  collectgarbage("restart")
  full_gc()
  return secs, peak, kept
end

local sizes = {}
for _, s in ipairs(arg or {}) do sizes[#sizes + 1] = tonumber(s) end
if #sizes == 0 then sizes = {10000, 100000, 1000000} end
local shapes = {}
for s in (os.getenv("DEVPLAN_BENCH_SHAPES") or "chain let branchy"):gmatch("%S+") do
  shapes[#shapes + 1] = s
end

local HEAP = os.getenv("DEVPLAN_HEAP_PEAK") ~= nil
-- The planned module checked by dp.planner.verify against the input (CPU
-- seconds, best of REPEAT): the verifier must stay linear too.
local function verify_secs(mod)
  local planned = dp.passes.PlanDevices(config)(mod)
  local best = math.huge
  for _ = 1, REPEAT do
    full_gc()
    local t0 = os.clock()
    local _, total = dp.planner.verify(planned, config, {input = mod})
    best = math.min(best, os.clock() - t0)
    assert(total == 0, "the plan does not verify")
  end
  return best
end

print(("%-8s %10s %10s %12s %12s %10s %10s %10s"):format("shape", "calls", "plan s",
  HEAP and "heap B/call" or "rss B/call", "result B/call",
  "ns/call", "x prev", "verify s"))
for _, shape in ipairs(shapes) do
  local prev_secs
  for _, n in ipairs(sizes) do
    local mod = dp.parse(gen[shape](n), testing.META)
    local plan = dp.passes.PlanDevices(config)
    local best, peak, kept = math.huge, 0, 0
    for _ = 1, REPEAT do
      local s, p, k = run_once(plan, mod)
      if s < best then best = s end
      if p > peak then peak, kept = p, k end
    end
    local ratio = prev_secs and ("%10.1f"):format(best / prev_secs) or ("%10s"):format("-")
    print(("%-8s %10d %10.3f %12.0f %12.0f %10.0f %s %10.3f"):format(shape, n, best, peak / n,
      kept / n, best * 1e9 / n, ratio, verify_secs(mod)))
    prev_secs = best
    mod = nil
    full_gc()
  end
end
