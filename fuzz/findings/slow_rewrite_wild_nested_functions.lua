-- run from the project root: bin/devplan fuzz/findings/slow_rewrite_wild_nested_functions.lua   (exit 1 while the defect is present)
-- The API fuzzer's hour (2026-11-29, batch 9595081746, call 7: a timeout) ran P.rewrite with a pattern that
-- matches anything on the fuzzer's 100,000-deep closures ((fn (%x1) { add(%x1, (fn (%x2) { ... })(%a)) })(%a)).
-- A wildcard matching a function literal makes a group of its whole body (a function is never a group's input,
-- as in TVM's PatternGrouper); the group is then rejected (%a is used outside it), and the next literal down does
-- the same: quadratic in the depth (1,000: 0.03 s, 2,000: 0.10 s, 4,000: 0.47 s, 6,000: 1.07 s; 100,000: hours).
local dp = require "devplan"
local P = dp.pattern
local T = dp.type.tensor({2}, "float32")
local function closures(n)
  local a = dp.var("a", T)
  local e = dp.call("negative", {a})
  for i = 1, n do
    local x = dp.var("x" .. i, T)
    e = dp.call(dp.fn({x}, dp.call("add", {x, e})), {a})
  end
  return dp.IRModule{functions = {{"main", dp.fn({a}, e)}}}
end
local rows = {}
for _, n in ipairs({1500, 6000}) do
  local m = dp.infer_type(closures(n))
  local t0 = os.clock()
  P.rewrite(m, {{P.wild(), function() return nil end}}, {max_rounds = 2})
  local t = os.clock() - t0
  rows[#rows + 1] = t
  print(("n=%d rewrite=%.3fs"):format(n, t))
end
if rows[2] > 0.3 and rows[2] / math.max(rows[1], 1e-3) > 3 * 4 then
  print("DEFECT: P.rewrite with a wildcard is superlinear in the depth of nested function literals"); os.exit(1)
end
print("ok")
