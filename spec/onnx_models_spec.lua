-- Real architectures exported to ONNX by torch (spec/data/onnx/make_models.py:
-- torchvision's classification networks, a small vision transformer,
-- transformer encoders; weights stripped, so imported with weights "none"):
-- each imports, gets from devplan the type ONNX's own shape inference gives
-- every value (where python3-onnx is installed; skipped and said so where
-- not), plans with its convolutions and matrix products on the GPU under
-- TVM's rules and by cost, verifies, partitions, reports and draws.
local dp = require "devplan"
local testing = require "devplan.testing"

local DIR = "spec/data/onnx/"
local MODELS = {"resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_0", "densenet121",
                "inception_v3", "efficientnet_b0", "vgg11", "shufflenet_v2_x1_0", "regnet_y_400mf",
                "vit_small", "transformer_encoder", "transformer_encoder_ln"}
if os.getenv("DEVPLAN_QUICK") then -- valgrind runs: one of each kind
  MODELS = {"resnet18", "mobilenet_v3_small", "vit_small", "transformer_encoder_ln"}
end

-- The Python that has the onnx package (Debian's python3-onnx), or nil.
local PYTHON = (function()
  for _, py in ipairs{"/usr/bin/python3", "python3"} do
    local ok = os.execute(py .. " -c 'import onnx' >/dev/null 2>&1")
    if ok then return py end
  end
end)()

-- ONNX's own types: name -> "Tensor[(d1, d2), dtype]".
local function onnx_types(path)
  local p = assert(io.popen(PYTHON .. " spec/support/onnx_shapes.py " .. path .. " 2>&1"))
  local out = p:read("a")
  assert(p:close(), "onnx shape inference failed on " .. path .. ":\n" .. out)
  local types, n = {}, 0
  for name, dtype, dims in out:gmatch("([^\t\n]+)\t([^\t\n]+)\t([^\t\n]*)\n") do
    -- as devplan prints types: a scalar by its dtype, a vector as (n)
    types[name] = dims == "" and dtype or "Tensor[(" .. dims:gsub(",", ", ") .. "), " .. dtype .. "]"
    n = n + 1
  end
  return types, n
end

local function annotate_gpu()
  local gpu = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
  local rule = function() return gpu end
  return dp.passes.AnnotateVirtualDevices{["nn.conv2d"] = rule, ["nn.dense"] = rule, ["nn.batch_matmul"] = rule}
end

describe("ONNX models exported by torch", function()
  local config = testing.config("cpu")
  for _, name in ipairs(MODELS) do
    local path = DIR .. name .. ".onnx"
    describe(name, function()
      local mod, info
      setup(function() mod, info = dp.onnx.load(path, {weights = "none"}) end)

      it("imports, and prints text that parses back to the same module", function()
        assert.truthy(dp.is_module(mod))
        assert.structurally_equal(mod, dp.parse(tostring(mod)))
      end)

      it("types every value as ONNX's shape inference does", function()
        if not PYTHON then
          pending("python3-onnx is not installed: the comparison with onnx.shape_inference is skipped")
          return
        end
        local want, n = onnx_types(path)
        assert.is_true(n > 0)
        local compared = 0
        for vname, t in pairs(want) do
          local got = info.types[vname]
          assert(got, name .. ": devplan has no type for ONNX value '" .. vname .. "'")
          assert.are.equal(t, tostring(got), name .. ": value '" .. vname .. "'")
          compared = compared + 1
        end
        assert.are.equal(n, compared)
      end)

      it("every call carries its ONNX node's name and index as its span", function()
        local calls, named = 0, 0
        dp.visit(mod, function(e)
          if e.kind == "call" then
            calls = calls + 1
            if e.span and e.span.source and e.span.line >= 1 then named = named + 1 end
          end
        end)
        assert.is_true(calls > 0)
        assert.are.equal(calls, named)
      end)

      it("plans with its convolutions and matrix products on the GPU, by TVM's rules and by cost", function()
        local annotated = annotate_gpu()(mod)
        for _, placement in ipairs{"tvm", "min_bytes"} do
          local ok, planned = pcall(dp.passes.PlanDevices(config, {placement = placement}), annotated)
          if placement == "min_bytes" or ok then
            assert(ok, tostring(planned))
            assert.are.same({}, dp.planner.verify(planned, config, {input = annotated}))
            local r = dp.planner.report(planned, config)
            assert.is_true(r.totals.calls > 0)
            local parted = dp.passes.PartitionByVirtualDevice{by = "virtual_device", config = config}(planned)
            assert.truthy(dp.is_module(parted))
            assert.truthy(dp.graph.dot(planned, {config = config}):find("digraph", 1, true))
          else
            assert.are.equal("conflict", planned.code) -- TVM's rules may meet a conflict (as on densenet)
          end
        end
      end)
    end)
  end
end)
