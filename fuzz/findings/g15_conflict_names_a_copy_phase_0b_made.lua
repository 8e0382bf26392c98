-- FIXED (planner, phase 0b marks where a copy may go with an unconstrained on_device, so analysis
-- never sees a device_copy the user did not write, src/planner/conflicts.c). Regression:
-- spec/plan_phases_spec.lua, "phase 0b ... names the user's annotations (g15)".
-- Group 15 (generator, after g10-g13 were fixed: 1 of 20,000 programs, seed 18710, the
-- "conflict" property; g13's kind, with no parameter annotation). @h3 returns on cuda; %a2 is
-- first demanded there by the tuple (%5, %a2), then on cpu by multiply under on_device(cpu):
-- phase 0b inserted device_copy(%a2, src=cuda, dst=cpu), which carries %a2's position. The
-- real conflict (%5 is a copy to cpu, and a field of a tuple @h3 returns on cuda) was then
-- reported against "the source of device_copy at 9:39", the inserted copy: a copy the user
-- never wrote, at the position of a parameter. Expected: strict planning's conflict, the
-- destination of device_copy at 10:8 (cpu) against the virtual_device of @h3 at 9:1 (cuda).
-- Run from the project root: bin/devplan fuzz/findings/g15_conflict_names_a_copy_phase_0b_made.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
type List[A] {
  Cons(A, List[A]),
  Nil,
}
type Opt[A] {
  Some(A),
  Nothing,
}
def @h3(%a1: Tensor[(5, 7), float32], %a2: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][1]) -> (Tensor[(5, 7), float32], Tensor[(5, 7), float32]) {
  %5 = device_copy(%a1, src_virtual_device=VirtualDevice(device_type=cuda, virtual_device_id=0), dst_virtual_device=meta[VirtualDevice][0]);
  match (Nil) {
    Cons(_, %m8) => (%5, %a2),
    Nil => {
      let %v11: Tensor[(5, 7), float32] = on_device(multiply(%5, %a2), virtual_device=meta[VirtualDevice][0], constrain_result=True);
      (%v11, %v11)
    },
    }
}
def @main(%a1: Tensor[(5, 7), float32], %a2: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %a1
}
]])
