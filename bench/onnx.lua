-- Importing ONNX models and planning them (src/import, dp.onnx.load): a row per
-- model of spec/data/onnx/ (torchvision's classification networks, a small
-- vision transformer, transformer encoders, exported by torch and stripped of
-- their weights: imported with weights "none"), with
--   import      CPU seconds of dp.onnx.load (best of DEVPLAN_BENCH_REPEAT, default 3)
--   nodes       the ONNX graph's nodes, and the Relay calls they became
--   plan        CPU seconds of PlanDevices (TVM's rules) with the convolutions and
--               matrix products (nn.conv2d, nn.dense, nn.batch_matmul) on the GPU and
--               main's result on the CPU
--   tvm bytes   bytes copied under TVM's rules (dp.planner.report), or "conflict"
--   min bytes   bytes copied with placement = "min_bytes" then ShareCopies (one copy per
--               value and device pair: the optimum for two devices, as bench/placement.lua)
-- Configuration: targets llvm and cuda, default device type cpu (as devplan plan).
-- Set B puts pooling, concatenation, softmax and layer normalisation on the CPU
-- too (a GPU library with convolutions and matrix products only): copies in the
-- middle of the model, where TVM's rules and the optimum part.
-- Then resnet50 with its weights (about 100 MB), imported with weights as constants:
-- bench/out/resnet50.onnx, exported by torch when it is not there (Debian's
-- python3-torch and python3-torchvision: scripts/setup.sh models), skipped without.
--
-- Usage: bin/devplan bench/onnx.lua
local dp = require "devplan"

local REPEAT = tonumber(os.getenv("DEVPLAN_BENCH_REPEAT") or "3")
local DIR = "spec/data/onnx/"
local MODELS = {"resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_0", "densenet121",
                "inception_v3", "efficientnet_b0", "vgg11", "shufflenet_v2_x1_0", "regnet_y_400mf",
                "vit_small", "transformer_encoder", "transformer_encoder_ln"}

local function best(f)
  local t, r = math.huge, nil
  for _ = 1, REPEAT do
    collectgarbage()
    local t0 = os.clock()
    r = table.pack(f())
    t = math.min(t, os.clock() - t0)
  end
  return t, table.unpack(r)
end

local function human(n)
  if n >= 1e6 then return string.format("%.2f MB", n / 1e6) end
  if n >= 1e3 then return string.format("%.1f kB", n / 1e3) end
  return string.format("%d B", n)
end

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
local gpu = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
local on_gpu = function() return gpu end
local cpu = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}
local on_cpu = function() return cpu end
local set_a = {["nn.conv2d"] = on_gpu, ["nn.dense"] = on_gpu, ["nn.batch_matmul"] = on_gpu}
local set_b = {["nn.max_pool2d"] = on_cpu, ["nn.avg_pool2d"] = on_cpu, ["nn.global_avg_pool2d"] = on_cpu,
               concatenate = on_cpu, ["nn.softmax"] = on_cpu, ["nn.layer_norm"] = on_cpu}
for k, v in pairs(set_a) do set_b[k] = v end

-- the rules, and main's result on the CPU
local function annotator(rules)
  local pass = dp.passes.AnnotateVirtualDevices(rules)
  return function(mod)
    local m = pass(mod)
    local f = m.main
    return m:with_function("main", dp.fn(f.params, f.body, {ret_type = f.ret_type, virtual_device = cpu}))
  end
end
local annotate, annotate_b = annotator(set_a), annotator(set_b)

local function bytes(planned) return human(dp.planner.report(planned, config).totals.bytes_copied) end
local function by_cost(annotated)
  return dp.passes.ShareCopies()(dp.passes.PlanDevices(config, {placement = "min_bytes"})(annotated))
end

print("ONNX models (spec/data/onnx, weights none; nn.conv2d, nn.dense, nn.batch_matmul on the GPU)")
print(string.format("| %-22s | %9s | %5s | %5s | %8s | %10s | %10s | %10s | %10s |", "model", "import s", "nodes",
                    "calls", "plan s", "tvm", "min", "B: tvm", "B: min"))
print("|" .. string.rep("-", 24) .. "|" .. string.rep("-", 11) .. "|-------|-------|----------|"
      .. string.rep("------------|", 4))
for _, name in ipairs(MODELS) do
  local path = DIR .. name .. ".onnx"
  local t_import, mod, info = best(function() return dp.onnx.load(path, {weights = "none"}) end)
  local calls = 0
  dp.visit(mod, function(e) if e.kind == "call" then calls = calls + 1 end end)
  local annotated = annotate(mod)
  local t_plan, ok, planned = best(function() return pcall(dp.passes.PlanDevices(config), annotated) end)
  local tvm = ok and bytes(planned) or "conflict"
  local b = annotate_b(mod)
  local ok_b, planned_b = pcall(dp.passes.PlanDevices(config), b)
  print(string.format("| %-22s | %9.4f | %5d | %5d | %8s | %10s | %10s | %10s | %10s |", name, t_import, info.nodes,
                      calls, ok and string.format("%.4f", t_plan) or "-", tvm, bytes(by_cost(annotated)),
                      ok_b and bytes(planned_b) or "conflict", bytes(by_cost(b))))
end

local big = "bench/out/resnet50.onnx"
local f = io.open(big, "rb")
if f then f:close() else
  os.execute("mkdir -p bench/out")
  local py = [[
import torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet50().eval()
torch.onnx.export(m, torch.randn(1, 3, 224, 224), "]] .. big .. [[", opset_version=13,
                  input_names=["input"], output_names=["output"])
]]
  local p = io.popen("/usr/bin/python3 - >/dev/null 2>&1", "w")
  p:write(py)
  p:close()
end
f = io.open(big, "rb")
if not f then
  print("\nresnet50 with its weights: skipped (python3-torch and python3-torchvision export it: scripts/setup.sh models)")
  return
end
local size = f:seek("end")
f:close()
local t, mod = best(function() return dp.onnx.load(big) end)
local bytes = 0
local bytes_of = require("devplan.report").bytes_of
dp.visit(mod, function(e) if e.kind == "const" then bytes = bytes + (bytes_of(e.checked_type) or 0) end end)
print(string.format("\nresnet50 with its weights (%s, %.1f MB): imported in %.3f s (best of %d), %.1f MB of constants",
                    big, size / 1e6, t, REPEAT, bytes / 1e6))
