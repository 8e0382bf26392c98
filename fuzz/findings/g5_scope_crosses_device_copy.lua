-- Group 5 (generator: about 6% of the idempotence failures, 23 of 361). New; to be judged against
-- TVM's Default rule. A let-bound device_copy from cuda to (cpu, "scopeA") gives the copy's *source*
-- %a, and @main, the device (cuda, memory_scope="scopeA"), which nobody wrote (the scope of the
-- destination reaches the other side of the copy, presumably through defaulting, which takes a
-- memory scope whatever the device type). Without the let (a graph binding) %a stays plain cuda.
-- The generator sees it as non-idempotence: free parameters defaulted in the first plan to plain
-- cuda get (cuda, "scopeA") in the second.
-- Run from the project root: bin/devplan fuzz/findings/g5_scope_crosses_device_copy.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a: Tensor[(5, 7), float32], %c: bool) -> Tensor[(5, 7), float32] {
  let %v = device_copy(%a, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][2]);
  %a
}
]])
