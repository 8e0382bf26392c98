-- Pictures (dp.graph, devplan plan --svg): how long each of the project's
-- models takes to draw, and generated modules up to 1,000,000 calls. The
-- goal: every model in a few seconds, a 1,000,000-call module in seconds
-- (a summary: auto picks the level). Wall seconds (dot runs in a process
-- of its own), from /proc/uptime.
-- Run: bin/devplan bench/graph.lua [N]   (N: the largest generated module, default 1000000)
local dp = require "devplan"
local gen = dofile(dp.root .. "/bench/gen.lua")

local function now()
  local f = assert(io.open("/proc/uptime"))
  local t = f:read("n")
  f:close()
  return t
end

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
local svg = os.tmpname()

local function row(name, planned, extra)
  local t0 = now()
  local d = dp.graph.layout(planned, {config = config})
  local t1 = now()
  dp.graph.svg(planned, svg, {config = config})
  local t2 = now()
  print(string.format("%-14s %9d %-8s %6d %6d %9.2f %9.2f%s", name, d.calls, d.level, #d.boxes, #d.edges, t1 - t0,
                      t2 - t1, extra or ""))
end

print("model            calls level     boxes  edges  layout s     svg s")
local list = {}
for f in io.popen('ls "' .. dp.root .. '/models"'):lines() do
  if f:match("%.relay$") then list[#list + 1] = f end
end
table.sort(list)
local annotate = dp.pipeline.build("annotate(nn.conv2d=cuda,nn.dense=cuda),plan_devices", {config = config})
for _, f in ipairs(list) do
  row(f:gsub("%.relay$", ""), annotate(dp.parse_file(dp.root .. "/models/" .. f)))
end
local full = dp.pipeline.build("annotate(nn.conv2d=cuda,nn.dense=cuda),plan_devices", {config = config})(
  dp.parse_file(dp.root .. "/models/densenet201.relay"))
local t0 = now()
dp.graph.svg(full, svg, {config = config, detail = "full"})
print(string.format("densenet201 with detail full: %.2f s", now() - t0))

local top = tonumber(arg and arg[1]) or 1000000
print("\ngenerated        calls level     boxes  edges  layout s     svg s")
local palette = require("devplan.devname").palette()
for _, shape in ipairs{"chain", "branchy"} do
  local n = 10000
  while n <= top do
    local planned = dp.passes.PlanDevices(config)(dp.parse(gen[shape](n), palette))
    collectgarbage()
    row(shape, planned)
    planned = nil
    collectgarbage()
    n = n * 10
  end
end
os.remove(svg)
