-- Group 7 (generator: all 371 "conflict" failures, 100 shrunk). Known cause, wider than reported:
-- an on_device that phase 0 rewrites (at a function body's top, as here, or as a let value:
-- ../shared/repro/f_conflict_column_let_value_on_device.lua) is named at its body's position (2:13,
-- the device_copy) instead of its own (2:3), so the conflict names one position twice. With a
-- variable as body it names the parameter's declaration, on another line.
-- Run from the project root: bin/devplan fuzz/findings/g7_conflict_position_of_rewritten_on_device.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a1: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  on_device(device_copy(%a1, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]), virtual_device=meta[VirtualDevice][1])
}
]])
