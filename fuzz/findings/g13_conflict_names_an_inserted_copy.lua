-- FIXED (planner, phase 0b, commit 51fc590: a parameter's own virtual_device is its first
-- demand). The conflict now names the on_device at 2:12 and the one at 3:3. Regression:
-- spec/plan_verify_spec.lua, "a conflict the conflicts step leaves names the two annotations (g13)".
-- Group 13 (generator: 17 of the 786 failures in 24,000 programs, the "conflict" property; this
-- text uses only on_device, a tuple and a parameter annotation). New. The conflicts step (phase
-- 0b) marks %a for a copy (the tuple demands it on cpu, the rest on cuda); the conflict that
-- remains is then reported between "the source of device_copy at 1:11" (the copy the step
-- inserted, which carries the parameter's position) and "the virtual_device of parameter %a at
-- 1:11": one position twice, and a device_copy the user never wrote. Expected: a conflict naming
-- the two annotations that disagree (the on_device at 2:12 on cpu and the parameter's cuda, or the
-- on_device at 3:3), each at its own position.
-- Run from the project root: bin/devplan fuzz/findings/g13_conflict_names_an_inserted_copy.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  let %v = on_device((%a, %a), virtual_device=meta[VirtualDevice][0], constrain_result=True);
  on_device(multiply(%a, %a), virtual_device=meta[VirtualDevice][1])
}
]])
