-- Rules for an accelerator (used by examples/accelerator.lua and by the command line):
--   bin/devplan plan models/resnet18.relay --target llvm --target ext_dev \
--       --default cpu --rules examples/rules/accelerator.lua
-- Returns a pass run before planning: every conv2d, with an optional bias_add or
-- batch_norm after it, followed by a relu, is one group placed on the accelerator
-- (device type ext_dev, whatever target the configuration gives it); the planner
-- puts everything else on the CPU (default device type cpu) and copies only what
-- enters or leaves a group.
local dp = require "devplan"
local P = dp.pattern

local ACCEL = dp.VirtualDevice{device_type = "ext_dev"}

local conv = P.op("nn.conv2d")(P.wild(), P.wild())
local with_bias = conv:optional(function(x) return P.op("nn.bias_add")(x, P.wild()) end)
local normalised = with_bias:optional(function(x)
  return P.proj(P.op("nn.batch_norm")(x, P.wild(), P.wild(), P.wild(), P.wild()), 0)
end)

return dp.passes.MergeAndAnnotate{
  {name = "accel.conv2d_relu", pattern = P.op("nn.relu")(normalised), device = ACCEL},
}
