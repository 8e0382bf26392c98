-- run from the project root: bin/devplan fuzz/findings/slow_rewrite_dominator_deep_tuples.lua   (exit 1 while the defect is present)
-- The API fuzzer's hour (2026-11-29, batch 9596218351, call 22: a timeout after 600 s under ASan) ran P.rewrite with
-- a dominator pattern whose path is a chain of 496 alternatives on the fuzzer's 100,000-deep nested tuples. Each
-- root tried matches the path down the whole nest (TVM's DominatorPattern), every node against every alternative:
-- quadratic in the depth, times the pattern (release build, 496 alternatives: 1,000 deep 8.8 s).
local dp = require "devplan"
local P = dp.pattern
local T = dp.type.tensor({2}, "float32")
local function tuples(n)
  local a = dp.var("a", T)
  local e = dp.call("negative", {a})
  for _ = 1, n do e = dp.tuple{e} end
  return dp.IRModule{functions = {{"main", dp.fn({a}, e)}}}
end
local path = P.wild()
for _ = 1, 50 do path = P.op("negative")(P.wild()) + path end
local neg = P.op("negative")(P.wild())
local pattern = P.dominates(P.dominates(P.op("zeros"), neg, P.wild()), path, P.wild():optional(neg))
local t = {}
for i, n in ipairs({500, 2000}) do
  local m = tuples(n)
  local t0 = os.clock()
  P.rewrite(m, {{pattern, function() return nil end}}, {once = true})
  t[i] = os.clock() - t0
  print(("n=%d rewrite=%.3fs"):format(n, t[i]))
end
if t[2] > 0.3 and t[2] / math.max(t[1], 1e-3) > 3 * 4 then
  print("DEFECT: a dominator pattern's path is matched down the whole nest for every root: quadratic in the depth"); os.exit(1)
end
print("ok")
