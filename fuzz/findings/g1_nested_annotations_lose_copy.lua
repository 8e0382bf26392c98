-- Group 1 (generator: about 60% of the idempotence failures, 225 of 361 shrunk ones in 50,000 programs).
-- Nested annotations on different devices lose the copy between them: on_device(on_device(x, D1), D2),
-- on_device(device_copy(..)), device_copy(on_device(..)). Known: the issue's second wrong-plan bullet
-- (../shared/repro/b_idempotent_nested_on_device.lua, wrong_plan_nested_on_device.lua); this is the
-- smallest form the generator found. Seen: %a1 on cpu feeds exp on cuda with no copy; planning the
-- output again is a conflict. Expected: a cpu->cuda copy, and a fixed point.
-- Run from the project root: bin/devplan fuzz/findings/g1_nested_annotations_lose_copy.lua (exit 1 while present)
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a1: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  exp(on_device(on_device(%a1, virtual_device=meta[VirtualDevice][0]), virtual_device=meta[VirtualDevice][1]))
}
]])
