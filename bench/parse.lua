-- Parser and printer benchmark: generated chain, let-chain and DAG
-- (branchy) modules of ../shared/bench/gen_relay.py, built in Lua by
-- bench/gen.lua. Prints one row per (shape, N): seconds to parse, seconds
-- to print, peak memory so far (VmHWM), and operator calls parsed per second.
--
-- Usage: bin/devplan bench/parse.lua [N ...] [--shapes chain,let,branchy]
-- (also: branchy-naive, and chain-ty: the chain with TVM's /* ty=... */ comments)
local dp = require "devplan"

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "bench"
local gen = dofile(here .. "/gen.lua")

local sizes, shapes = {}, {"chain", "let", "branchy"}
local i = 1
while arg and arg[i] do
  if arg[i] == "--shapes" then
    shapes = {}
    for s in arg[i + 1]:gmatch("[^,]+") do shapes[#shapes + 1] = s end
    i = i + 2
  else
    sizes[#sizes + 1] = assert(tonumber(arg[i]), "sizes are numbers")
    i = i + 1
  end
end
if #sizes == 0 then sizes = {10000, 100000, 1000000} end

local function vmhwm()
  local f = io.open("/proc/self/status")
  if not f then return "?" end
  local kb
  for line in f:lines() do kb = kb or line:match("^VmHWM:%s*(%d+)") end
  f:close()
  return kb and string.format("%.0f MiB", tonumber(kb) / 1024) or "?"
end

local mt = {VirtualDevice = {dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0},
                             dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}}}
local clock = os.clock

print(string.format("%-8s %10s %9s %9s %10s %14s", "shape", "N", "parse s", "print s", "peak", "calls/s"))
for _, shape in ipairs(shapes) do
  for _, n in ipairs(sizes) do
    local text = gen[shape](n)
    collectgarbage()
    local t0 = clock()
    local m = dp.parse(text, mt)
    local t1 = clock()
    local printed = tostring(m)
    local t2 = clock()
    assert(#printed > 0)
    print(string.format("%-8s %10d %9.2f %9.2f %10s %14.0f", shape, n, t1 - t0, t2 - t1, vmhwm(),
      n / (t1 - t0)))
    m, text, printed = nil, nil, nil
    collectgarbage()
  end
end
