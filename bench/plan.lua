-- PlanDevices alone on generated modules (the shapes of
-- ../shared/bench/gen_relay.py): chain (dataflow), let chain, and a DAG
-- (branchy, with explicit use-site annotations), with on_device
-- annotations. Prints seconds for the pass, peak memory beyond the module,
-- and nanoseconds per call.
-- Usage: bin/devplan bench/plan.lua [N ...]   (default 10000 100000 1000000)
local dp = require "devplan"
local testing = require "devplan.testing"

local CPU, GPU = testing.PALETTE.CPU, testing.PALETTE.GPU
local config = testing.config("cuda")
local TY = dp.type.tensor({5, 7}, "float32")
local OPS = {"add", "multiply"}

local function on(e, vd) return dp.call("on_device", {e}, {virtual_device = vd}) end

local function module_of(body, a, b)
  return dp.IRModule{functions = {{"main", dp.fn({a, b}, body)}}}
end

local gen = {}
function gen.chain(n) -- on_device(CPU) every 10th op, as gen_relay.py
  local a, b = dp.var("a", TY), dp.var("b", TY)
  local prev = a
  for i = 0, n - 1 do
    prev = dp.call(OPS[i % 2 + 1], {prev, b})
    if i % 10 == 9 then prev = on(prev, CPU) end
  end
  return module_of(prev, a, b)
end
function gen.let(n)
  local a, b = dp.var("a", TY), dp.var("b", TY)
  local vars, vals, prev = {}, {}, a
  for i = 0, n - 1 do
    local v = dp.call(OPS[i % 2 + 1], {prev, b})
    if i % 10 == 9 then v = on(v, CPU) end
    vars[i + 1], vals[i + 1] = dp.var("x" .. i), v
    prev = vars[i + 1]
  end
  local body = prev
  for i = n, 1, -1 do body = dp.let(vars[i], vals[i], body) end
  return module_of(body, a, b)
end
function gen.branchy(n) -- alternating devices by blocks of 50, crossings annotated
  local a, b = dp.var("a", TY), dp.var("b", TY)
  local r, blockdev = {}, function(i) return (i // 50) % 2 == 0 and CPU or GPU end
  local function use(j, i)
    if blockdev(j) ~= blockdev(i) then return on(r[j], blockdev(j)) end
    return r[j]
  end
  r[0] = dp.call("add", {a, b})
  for i = 1, n - 1 do
    local v = dp.call(OPS[i % 2 + 1], {use(i - 1, i), use(i // 2, i)})
    if i % 50 == 49 then v = on(v, blockdev(i)) end
    r[i] = v
  end
  return module_of(r[n - 1], a, b)
end

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

local sizes = {}
for _, s in ipairs(arg or {}) do sizes[#sizes + 1] = tonumber(s) end
if #sizes == 0 then sizes = {10000, 100000, 1000000} end

print(("%-8s %10s %10s %12s %12s"):format("shape", "calls", "plan s", "bytes/call", "ns/call"))
for _, shape in ipairs{"chain", "let", "branchy"} do
  for _, n in ipairs(sizes) do
    local mod = gen[shape](n)
    dp.infer_type(mod)
    local plan = dp.passes.PlanDevices(config)
    collectgarbage() collectgarbage()
    collectgarbage("stop")
    local before = status("VmRSS")
    reset_peak()
    local t0 = os.clock()
    local out = plan(mod)
    local secs = os.clock() - t0
    local peak = status("VmHWM") - before
    collectgarbage("restart")
    print(("%-8s %10d %10.3f %12.0f %12.0f"):format(shape, n, secs, peak / n, secs * 1e9 / n))
    out, mod = nil, nil
    collectgarbage() collectgarbage()
  end
end
