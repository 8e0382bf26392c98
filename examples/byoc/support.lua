-- What ccompiler supports, as TVM's BYOC writes it (FTVMAnnotateTarget:
-- one checker per operator), and everything else on the host. A --rules
-- file: it returns the annotation passes, run in order before planning.
--   devplan plan model.relay --load examples/byoc/ccompiler.lua --target llvm --target ccompiler \
--     --rules examples/byoc/support.lua ...
local dp = require "devplan"

-- the configuration's devices by type: its ccompiler target (whatever options
-- --target gave it) and its CPU; with several toolchains on ext_dev,
-- virtual_device_id k names the k-th
local ACCEL = dp.VirtualDevice{device_type = "ext_dev"}
local HOST = dp.VirtualDevice{device_type = "cpu"}

-- a dtype checker: the rule gets the call as it is in the module, type-checked
local function float32(call)
  for _, a in ipairs(call.args) do
    if a.checked_type.dtype ~= "float32" then return false end
  end
  return true
end

local SUPPORT = {
  ["nn.dense"] = float32, ["nn.bias_add"] = float32, ["nn.relu"] = float32,
  add = float32, multiply = float32,
}

local rules = {}
for op, check in pairs(SUPPORT) do
  rules[op] = function(call) if check(call) then return ACCEL end end
end

return {
  dp.passes.AnnotateVirtualDevices(rules),             -- what ccompiler takes
  dp.passes.AnnotateVirtualDevices{["*"] = function() return HOST end}, -- the rest: the host
}
