-- BYOC, the RFC 0038 way, from Lua: a toolchain is a target kind, what it
-- supports is a set of annotation rules (a pattern group, per-operator
-- checkers that read dtypes, the rest on the host), PlanDevices places
-- everything, PartitionByVirtualDevice hoists each device's code into
-- functions named after their target, and its regions come back as data.
-- Run from the project root:  bin/devplan examples/byoc.lua
-- (docs/byoc.md walks through it; examples/byoc/ holds the command line's files)
local dp = require "devplan"
local P = dp.pattern

-- 1. the toolchain: a target kind running on ext_dev, with an option
dp.register_target_kind("ccompiler", {
  device_type = "ext_dev",
  options = {{name = "opt_level", type = "int", default = 2}},
})
local config = dp.CompilationConfig{targets = {"llvm", "ccompiler -opt_level=3"}, default_device_type = "cpu"}
local ACCEL = config:canonical(dp.VirtualDevice{device_type = "ext_dev"})
local HOST = config.default_virtual_device
print("toolchain device: " .. tostring(ACCEL))

-- 2. the model
local mod = dp.parse([[
#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16), float32], %w: Tensor[(16, 16), float32], %b: Tensor[(16), float32],
          %n: Tensor[(1, 16), int32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = tanh(%2);
  %4 = add(%2, %3);
  %5 = add(%n, %n);
  %6 = cast(%5, dtype="float32");
  multiply(%4, %6)
}
]])

-- 3. what the toolchain supports: a fused group, then single operators whose
-- checker reads the argument types (TVM's FTVMAnnotateTarget), then the
-- host for everything else. The first pass to place a call wins.
local dense_bias_relu = P.op("nn.relu")(P.op("nn.bias_add")(P.op("nn.dense")(P.wild(), P.wild()), P.wild()))
local function float32(call)
  for _, a in ipairs(call.args) do
    if a.checked_type.dtype ~= "float32" then return nil end
  end
  return ACCEL
end
local annotate = dp.Sequential{
  dp.passes.MergeAndAnnotate{{name = "ccompiler.dense_bias_relu", pattern = dense_bias_relu, device = ACCEL}},
  dp.passes.AnnotateVirtualDevices{add = float32, multiply = float32},
  dp.passes.AnnotateVirtualDevices{["*"] = function() return HOST end},
}

-- 4. plan (placement by cost: values nobody placed go where they copy the
-- fewest bytes), then partition
local planned = dp.passes.PlanDevices(config, {placement = "min_bytes"})(annotate(mod))
local partition = dp.passes.PartitionByVirtualDevice{config = config}
local parted, regions = partition.partition(planned)
print(dp.astext(parted, {short_devices = true}))

-- 5. the regions as data
for _, r in ipairs(regions) do
  local ops = {}
  for _, e in ipairs(r.nodes) do
    if e.kind == "call" and e.callee.kind == "op" then ops[#ops + 1] = e.callee.name end
  end
  print(("@%s runs on %s (%s): %s; %d input%s, %d output%s"):format(r.name, r.virtual_device.device_type_name,
    r.target.kind, table.concat(ops, ", "), #r.inputs, #r.inputs == 1 and "" or "s",
    #r.outputs, #r.outputs == 1 and "" or "s"))
end
assert(#dp.planner.verify(parted, config) == 0, "the partitioned module verifies")
