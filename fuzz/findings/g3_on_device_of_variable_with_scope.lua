-- Group 3 (generator: about 7% of the idempotence failures, 26 of 361). Known cause: an on_device whose
-- body is a variable, as a let value or function body, is dropped (../shared/repro/
-- e_respect_on_device_of_variable_dropped.lua); with a memory-scoped device it also shows as
-- non-idempotence: the unused %a1, %a3 default to plain cuda while %a2 and the result get
-- (cuda, "global"); planning again gives them (cuda, "global").
-- Run from the project root: bin/devplan fuzz/findings/g3_on_device_of_variable_with_scope.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a1: Tensor[(5, 7), float32], %a2: Tensor[(5, 7), float32], %a3: bool) -> Tensor[(5, 7), float32] {
  let %v4 = on_device(%a2, virtual_device=meta[VirtualDevice][3], constrain_body=False, constrain_result=True);
  %a2
}
]])
