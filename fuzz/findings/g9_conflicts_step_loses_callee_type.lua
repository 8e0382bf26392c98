-- Group 9 (generator: 1 program in 50,000; the "plan-error" property, added after it). New.
-- Default planning of a closure called through an on_device (on_device(%0, cuda))(%a), when phase
-- 0b has a conflict to resolve elsewhere in the function, fails with an internal-looking "value"
-- error at the call: "the callee of this call does not take 1 argument (is its type known?)";
-- strict planning reports the real conflict (4:5 against 2:12). Presumably the call rebuilt by
-- phase 0b loses its callee's checked type. Expected: a plan with copies, or a conflict.
-- Run from the project root: bin/devplan fuzz/findings/g9_conflicts_step_loses_callee_type.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  let %v = device_copy(%a, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][0]);
  %0 = fn (%p: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
    on_device(exp(%a), virtual_device=meta[VirtualDevice][1], constrain_result=True)
  };
  (on_device(%0, virtual_device=meta[VirtualDevice][1]))(%a)
}
]])
