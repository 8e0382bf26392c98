-- An ONNX model, imported and planned: mobilenet_v3_small as torch exports it
-- (models/, its weights stripped, so imported with weights "none"), its
-- convolutions and matrix products on the GPU and its hard-swish activations
-- (clip) on the CPU; TVM's rules and placement by cost compared, and the first
-- copy explained by the ONNX node that made its value.
-- Run: bin/devplan examples/onnx.lua [MODEL.onnx [INPUT=D1,D2,...]]
-- (with one command each:
--    devplan import model.onnx -o model.relay
--    devplan plan model.onnx --annotate nn.conv2d=cuda,clip=cpu --placement min_bytes --report text)
local dp = require "devplan"

local model = arg and arg[1] or (dp.root .. "/models/mobilenet_v3_small.onnx")
local shapes
if arg and arg[2] then -- e.g. input=1,3,224,224: sizes for dynamic dimensions
  local name, dims = arg[2]:match("^(.+)=(.*)$")
  shapes = {[name] = {}}
  for d in dims:gmatch("%d+") do table.insert(shapes[name], tonumber(d)) end
end

-- The weights' values do not matter to planning: "none" keeps their types only.
local mod, info = dp.onnx.load(model, {weights = "none", shapes = shapes})
local calls = 0
dp.visit(mod, function(e) if e.kind == "call" then calls = calls + 1 end end)
print(("%s: %d ONNX nodes became %d Relay calls"):format(model:match("[^/]*$"), info.nodes, calls))

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
local gpu = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
local cpu = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}
local annotated = dp.passes.AnnotateVirtualDevices{
  ["nn.conv2d"] = function() return gpu end,
  ["nn.dense"] = function() return gpu end,
  ["nn.batch_matmul"] = function() return gpu end,
  clip = function() return cpu end,
}(mod)

for _, placement in ipairs{"tvm", "min_bytes"} do
  local ok, planned = pcall(dp.passes.PlanDevices(config, {placement = placement}), annotated)
  -- by cost, one copy per value and device pair (what the optimiser counts)
  if ok and placement == "min_bytes" then planned = dp.passes.ShareCopies()(planned) end
  if not ok then
    print(placement .. ": " .. tostring(planned))
  else
    local r = dp.planner.report(planned, config)
    print(("%-9s %3d copies, %10d bytes copied"):format(placement, r.totals.copies, r.totals.bytes_copied))
    if placement == "min_bytes" and r.copies[1] then
      -- the first copy: which ONNX node made the value it copies, and why it moves
      local c = r.copies[1]
      print(("first copy: %s of %s (ONNX node %s, graph.node[%d]) %s -> %s"):format(c.name, c.value, c.source,
            c.line - 1, c.src, c.dst))
    end
  end
end
