-- Group 2 (generator: about 14% of the idempotence failures, 52 of 361 shrunk ones). New.
-- An on_device around a function value (a closure, or a global used as a value) that is then called:
-- the closure is planned on cpu (its parameter and result), but the call passes %a (on cuda) with no
-- copy and returns the cpu result as @main's cuda result with no copy: a wrong plan without an error.
-- planner.md: a function value lives where its result lives, so on_device(fn, cpu) puts the function
-- (its result) on cpu, and the call's cuda context needs copies. Planning the output again is a conflict.
-- Run from the project root: bin/devplan fuzz/findings/g2_on_device_around_function_value.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
require("props").main([[
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %0 = fn (%p: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] { negative(%p) };
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  %1(%a)
}
]])
