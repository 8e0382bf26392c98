-- Annotation rules for `devplan plan MODEL --rules examples/rules.lua`: a
-- rules file returns a pass or a list of passes, run before planning.
-- Here: convolutions with many output channels and every dense layer on the
-- GPU, the rest where the planner puts it.
local dp = require "devplan"

local gpu = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}

return dp.passes.AnnotateVirtualDevices{
  ["nn.conv2d"] = function(call)
    if (call.attrs.channels or 0) >= 128 then return gpu end
  end,
  ["nn.dense"] = function() return gpu end,
}
