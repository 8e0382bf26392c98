-- FIXED (verifier). The planner is right: planner.md's host is (cpu, 0, host target) with no
-- memory scope, and defaulting a call's domain gives its unconstrained positions the call's
-- result device (TVM's SetResultDefaultThenParams), scope included. The verifier now checks a
-- host position, and where a vm.shape_of result stands, by refinement of the host device.
-- Regression: spec/plan_verify_spec.lua, "host positions take the memory scope ... (g10)".
-- Group 10 (generator, all of Relay: 690 of the 786 failures in 24,000 programs, the "verify"
-- property; first found by the ADT/ref/lowered/memory generator). New. planner.md: vm.shape_of is
-- fn(free):host, memory.alloc_storage fn(host, host, host):d, memory.alloc_tensor fn(x, host,
-- host):x, vm.reshape_tensor fn(x, host):x, where host is the configuration's host device (here
-- cpu, no memory scope). Seen: the host positions take the memory scope of another position of
-- the same call: the size and alignment of an alloc_storage on (cpu, "scopeA") are planned on
-- (cpu, "scopeA") with the host target (text 1); the result of vm.shape_of of a (cuda, "global")
-- tensor is planned on (cpu, "global") (text 2); the shape of a vm.reshape_tensor whose data is on
-- (cpu, "scopeA") is planned on (cpu, "scopeA") (text 3). The verifier then reports each host
-- position. Expected: host positions on the host device exactly (or, if a host position may take
-- a scope, the verifier saying so: one of the two is wrong).
-- Run from the project root: bin/devplan fuzz/findings/g10_host_positions_take_memory_scope.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  let %s = memory.alloc_storage(64i64, 0i64, virtual_device=meta[VirtualDevice][2]);
  %a
}
]], [[
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  let %s = vm.shape_of(device_copy(%a, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][3]), dtype="int64");
  %a
}
]], [[
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  vm.reshape_tensor(on_device(%a, virtual_device=meta[VirtualDevice][2], constrain_result=True), meta[relay.Constant][1], newshape=[5, 7])
}
]])
