-- Group 6 (generator: about 6% of the idempotence failures, 22 of 361, and all 5+4 strict-default ones).
-- New. Phase 0b (conflicts.c) treats a call of a function (a closure, a global, a function-typed
-- parameter) like an operator call: it demands the call's device of the arguments. But the arguments
-- of such a call go where the callee's parameters are, not where its result is. Here %0(%b) is
-- demanded on cuda, so %b is demanded on cuda first; the later cpu demand of negative(%b) then marks
-- a copy. The first plan is consistent, but planning it again (now %b and %p are annotated cpu)
-- inserts a copy at %0(%b) and ends in a conflict. With three devices the same cause makes default
-- and strict planning differ (strict succeeds without the copy): see the second text below
-- (meta 4 is opencl).
-- Run from the project root: bin/devplan fuzz/findings/g6_conflicts_step_and_function_calls.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %0 = fn (%p: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] { %a };
  add(%0(%b), on_device(negative(%b), virtual_device=meta[VirtualDevice][0]))
}
]], [[
def @main(%a1: Tensor[(5, 7), float32], %a2: Tensor[(5, 7), float32], %a3: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][0]) -> Tensor[(5, 7), float32] {
  add((fn (%p6: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
    %a1
  })(%a3), on_device(multiply(%a2, %a3), virtual_device=meta[VirtualDevice][4]))
}
]])
