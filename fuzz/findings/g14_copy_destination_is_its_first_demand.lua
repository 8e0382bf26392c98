-- FIXED (planner, phase 0b: a device_copy's destination is its first demand, src/planner/index.c).
-- Regression: spec/plan_phases_spec.lua, "phase 0b ... a device_copy's destination (g14)".
-- Group 14 (generator, after g10-g13 were fixed: 1 of 20,000 programs, seed 10939, the "conflict"
-- property). %2 = device_copy(%a1, cpu -> cuda) is used by @h1(%2, %2), whose parameters are
-- annotated cpu and cuda. Phase 0b took the first use's demand (cpu, from the first parameter)
-- as the copy's device and marked the second use (cuda) for a copy from cpu: a copy of a value
-- that is on cuda, from cpu. The conflict that remained named the two ends of the one
-- device_copy at 6:8 ("must be on cuda because of the destination of device_copy at 6:8; must
-- also be on cpu because of the source of device_copy at 6:8"). Expected: %2 is on cuda, where
-- the copy puts it, so the first argument gets the copy back to cpu and the program plans.
-- Run from the project root: bin/devplan fuzz/findings/g14_copy_destination_is_its_first_demand.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
primfn @p1(Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32];
def @h1(%a1 {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32], %a2 {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %a1
}
def @h2(%a1: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %2 = device_copy(%a1, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  call_lowered(@p1, (@h1(%2, %2),))
}
def @main(%a1: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %a1
}
]])
