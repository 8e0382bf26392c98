-- AnnotateVirtualDevices (passes/annotate_virtual_devices.lua): per-operator
-- device rules. On the real models it reproduces the annotated modules the
-- shared models were planned from, and planning them gives TVM's output.
local dp = require "devplan"
local t = require "devplan.testing"

local GPU = t.PALETTE.GPU
local function on_gpu() return GPU end
local rules = {["nn.conv2d"] = on_gpu, ["nn.dense"] = on_gpu}

describe("AnnotateVirtualDevices", function()
  for _, name in ipairs{"resnet18", "dcgan"} do
    it(name .. ": conv2d and dense on the GPU give the shared annotated model", function()
      local dir = t.shared_dir .. "/models/"
      local plain = dp.parse(t.read_file(dir .. name .. ".relay"), t.META)
      local annotated = dp.passes.AnnotateVirtualDevices(rules)(plain)
      local expected = dp.parse(t.read_file(dir .. name .. ".annotated.relay"), t.META)
      assert.structurally_equal(annotated, expected)
      local planned = t.plan(t.config("cpu"))(annotated)
      assert.structurally_equal(planned, dp.parse(t.read_file(dir .. name .. ".planned.relay"), t.META))
    end)
  end

  it("a rule returning nil leaves the call alone", function()
    local m = dp.parse([[
def @main(%a: Tensor[(5, 7), float32]) { %0 = negative(%a); negative(%0) }]])
    local first = true
    local out = dp.passes.AnnotateVirtualDevices{negative = function()
      local r = first and GPU or nil
      first = false
      return r
    end}(m)
    assert.are.equal(1, t.count_calls(out, "on_device"))
  end)

  it("rejects unknown operators and non-function rules", function()
    assert.has_error(function() dp.passes.AnnotateVirtualDevices{["no.such_op"] = on_gpu} end)
    local ok, err = pcall(dp.passes.AnnotateVirtualDevices, {add = 3})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("must be a function", 1, true))
  end)
end)
