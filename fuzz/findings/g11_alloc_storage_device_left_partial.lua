-- FIXED (verifier). TVM's capture keeps alloc_storage's attribute as written; the verifier now
-- accepts the storage standing where the attribute is refined (and still reports another device).
-- Regression: spec/plan_verify_spec.lua, "an alloc_storage device the plan completes (g11)".
-- Group 11 (generator, all of Relay: 52 of the 786 failures in 24,000 programs, the "verify"
-- property). New. memory.alloc_storage(..., virtual_device=VirtualDevice(device_type=cpu)) names a
-- device without an id. Planning completes it (the storage lives on (cpu, 0, llvm) in the planned
-- module, as defaulting decides) but leaves the attribute as written, and the verifier compares
-- the attribute, canonicalised to (cpu, -1, llvm), with where the storage stands: "gives its
-- result on VirtualDevice(device_type=cpu, target=...), but where it stands
-- VirtualDevice(device_type=cpu, virtual_device_id=0, ...) is expected". on_device and device_copy
-- attributes are rewritten to the planned devices by phase 3; alloc_storage's is not. Expected:
-- the verifier accepts its own planner's output (an attribute the planned device refines), or
-- phase 3 writes the planned device into the attribute.
-- Run from the project root: bin/devplan fuzz/findings/g11_alloc_storage_device_left_partial.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  let %s = memory.alloc_storage(64i64, 0i64, virtual_device=VirtualDevice(device_type=cpu));
  %a
}
]])
