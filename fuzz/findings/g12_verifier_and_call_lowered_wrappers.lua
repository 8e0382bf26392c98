-- FIXED (verifier). The plans are TVM's (phase 0's copy_ok wrappers, and FreeOnDeviceDefaulter
-- visiting the inner wrapper first, which puts text 3's calls on cuda). An input annotation
-- around a call_lowered of a primfn now holds for the wrapper's value, at any level of the
-- planned chain at its position. Regression: spec/plan_verify_spec.lua, "... phase 0's wrapper (g12)".
-- Group 12 (generator, all of Relay: 27 of the 786 failures in 24,000 programs, the "verify"
-- property, every one with a call_lowered). New. Phase 0 wraps call_lowered's arguments and result
-- in unconstrained on_device (planner.md) so that a copy may stand between a primfn's buffer scope
-- and the annotation around it, and PlanDevices inserts such copies: text 1 plans the call on
-- (cpu, "scopeB"), its result scope, and copies it to the annotated (cpu, "scopeA"); text 2 keeps
-- %a on cpu, as annotated, and copies it to the (cuda, "scopeB") the primfn's second buffer
-- takes; text 3 plans both calls on cuda, where %a is, and copies the result to the cpu the
-- device_copy names as its source. The verifier checks each annotation on the call_lowered (or
-- on the argument) itself, ignoring the wrapper: "on_device puts call_lowered on cpu (memory scope
-- "scopeA") in the input, but the planned module has it on cpu (memory scope "scopeB")". Expected:
-- the verifier accepts these plans (an annotation around a call_lowered or around one of its
-- arguments holds for the wrapper), as it does for the projections phase 0 moves. Text 3 also
-- shows a choice to question: the calls could run on cpu with the copy before them instead.
-- Run from the project root: bin/devplan fuzz/findings/g12_verifier_and_call_lowered_wrappers.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
primfn @p(Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] scope="scopeB";
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  on_device(call_lowered(@p, (%a,)), virtual_device=meta[VirtualDevice][2], constrain_result=True)
}
]], [[
primfn @p(Tensor[(5, 7), float32] scope="global", Tensor[(5, 7), float32] scope="scopeB") -> Tensor[(5, 7), float32];
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  call_lowered(@p, (%a, on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True)))
}
]], [[
primfn @p(Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32];
def @main(%a {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  device_copy(call_lowered(@p, (call_lowered(@p, (%a,)),)), src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][0])
}
]])
