-- run from the project root: bin/devplan fuzz/findings/slow_find_dominator_parent_not_dominated.lua   (exit 1 while the defect is present)
-- A dominator pattern whose path succeeds down a nest, to a parent every level uses (%z here), so that no root but
-- the top post-dominates it. Each root tried walked the path down the whole nest before the final test failed:
-- quadratic in the depth (found while fixing slow_rewrite_dominator_deep_tuples.lua; 4,000 deep: find 0.87 s).
local dp = require "devplan"
local P = dp.pattern
local T = dp.type.tensor({2}, "float32")
local function nest(n)
  local z = dp.var("z", T)
  local e = dp.tuple{z}
  for _ = 1, n do e = dp.tuple{e, z} end
  return dp.IRModule{functions = {{"main", dp.fn({z}, e)}}}
end
local pattern = P.dominates(P.var("z"), P.wild(), P.wild())
local t = {}
for i, n in ipairs({1000, 4000}) do
  local m = nest(n)
  local t0 = os.clock()
  local found = #pattern:find(m)
  t[i] = os.clock() - t0
  print(("n=%d find=%.3fs"):format(n, t[i]))
  if found ~= 1 then print(("FAILED: %d matches, want 1 (the top tuple)"):format(found)); os.exit(1) end
end
if t[2] > 0.2 and t[2] / math.max(t[1], 1e-3) > 4 * 3 then
  print("DEFECT: a dominator's path is walked down the whole nest for every root: quadratic in the depth"); os.exit(1)
end
print("ok")
