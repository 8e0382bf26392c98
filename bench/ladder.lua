-- The depth ladder as a table: every pass and printer on programs nested
-- 1,000 / 10,000 / 100,000 deep in five shapes (spec/support/ladder.lua),
-- CPU seconds per run at each depth, each 10x step's ratio and both steps'
-- (the bounds: spec/support/ladder.lua).
--
--   bin/devplan bench/ladder.lua [STEP-NAME-PART] [SHAPE]
local dp = require "devplan"
local L = dofile(dp.root .. "/spec/support/ladder.lua")
local only, only_shape = arg[1], arg[2]
print(("%-26s %-14s %9s %9s %9s  %-6s %-6s %-7s %s"):format("step", "shape", "1,000", "10,000", "100,000",
  "x", "x", "x both", "verdict"))
local failed = 0
for _, shape in ipairs(L.SHAPE_ORDER) do
  if not only_shape or shape == only_shape then
    local inputs = L.inputs(shape)
    for _, step in ipairs(L.STEPS) do
      if (not only or step.name:find(only, 1, true)) and not (step.skip and step.skip[shape]) then
        local why, m = L.check(step, shape, inputs)
        if why then failed = failed + 1 end
        print(("%-26s %-14s %s  %s"):format(step.name, shape, L.row(m), why and "SUPERLINEAR" or "ok"))
        io.stdout:flush()
      end
    end
  end
end
print(failed == 0 and "every step linear" or (failed .. " superlinear"))
