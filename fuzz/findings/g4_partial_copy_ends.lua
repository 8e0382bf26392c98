-- Group 4 (generator: about 3% of the idempotence failures, 12 of 361). Known cause: device_copy ends
-- written less specific than what planning decides are not refined (../shared/repro/
-- e_partial_device_copy_attrs_not_refined.lua). Here %a1 is (cpu, "global") and the copy cpu -> cpu
-- is removed as a no-op, so @main's result is cpu without the scope while its body is %a1 on
-- (cpu, "global"); planning again changes @main's virtual_device.
-- Run from the project root: bin/devplan fuzz/findings/g4_partial_copy_ends.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a1 {virtual_device=VirtualDevice(memory_scope="global")}: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  device_copy(%a1, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][0])
}
]])
