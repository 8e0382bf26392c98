-- Group 8 (generator: all 108 "order" failures). Known cause (../shared/repro/
-- d_reorder_default_of_shared_free_param.lua), smaller and with globals used as values: @h1's domain
-- is shared with its use in @main (no polymorphism for globals); phase 2 defaults function by
-- function in definition order, so @h1 is cuda when it comes first and cpu (@main's result) when
-- @main comes first. Expected: the same plan in both orders.
-- Run from the project root: bin/devplan fuzz/findings/g8_definition_order.lua
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local T = "Tensor[(5, 7), float32]"
local H1 = ("def @h1(%%a1: %s) -> %s { %%a1 }\n"):format(T, T)
local MAIN = ("def @main(%%a1 {virtual_device=meta[VirtualDevice][0]}: %s) -> %s {\n  let %%v2 = @h1;\n  %%a1\n}\n"):format(T, T)
local failure = require("props").checker():check(H1 .. MAIN, {orders = {MAIN .. H1}})
if failure then
  print(("FAILED %s: %s"):format(failure.property, failure.detail))
  os.exit(1)
end
print("ok")
