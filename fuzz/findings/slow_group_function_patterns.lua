-- run from the project root: bin/devplan fuzz/findings/slow_group_function_patterns.lua   (exit 1 while the defect is present)
-- Grouping the matches of function patterns in nested function literals was quadratic in the depth
-- (found by hand after the API fuzzer's hour of 2026-11-29, next to slow_rewrite_wild_nested_functions.lua):
--  * a function pattern's body is a fuzzy match: every node of the body was collected for every literal tried
--    (P.fn({_}, _): 6,000 deep 16.7 s);
--  * whether an argument is in the body was answered by that walk (P.call(P.fn({_}, _), {_}) where the
--    argument is a parameter of the function rewritten, captured by every literal);
--  * the post-dominators met by climbing one step at a time, and a value read at the top and at the bottom
--    of the nest sends every meeting point to the top (a wildcard on (nest, negative(%a)): 12,000 deep 0.36 s).
local dp = require "devplan"
local P = dp.pattern
local W = P.wild
local T = dp.type.tensor({2}, "float32")
-- the nest, as @main of a module (module = true) or as the function itself
local function nest(n, shared, module)
  local a = dp.var("a", T)
  local s = dp.call("negative", {a})
  local e = s
  for i = 1, n do
    local x = dp.var("x" .. i, T)
    e = dp.call(dp.fn({x}, dp.call("add", {x, e})), {a})
  end
  local f = dp.fn({a}, shared and dp.tuple({e, s}) or e)
  return module and dp.IRModule{functions = {{"main", f}}} or f
end
local cases = {
  {"P.fn({_}, _)", P.fn({W()}, W()), false, true},
  {"P.call(P.fn({_}, _), {_})", P.call(P.fn({W()}, W()), {W()}), false, false},
  {"_ on (nest, negative(%a))", W(), true, true, {6000, 24000}},
}
local bad = false
for _, c in ipairs(cases) do
  local t = {}
  local sizes = c[5] or {1500, 6000}
  for i, n in ipairs(sizes) do
    local f = nest(n, c[3], c[4])
    local t0 = os.clock()
    P.rewrite(f, {{c[2], function() return nil end}}, {max_rounds = 1})
    t[i] = os.clock() - t0
  end
  print(("%-28s %6d deep %.3f s, %6d deep %.3f s"):format(c[1], sizes[1], t[1], sizes[2], t[2]))
  if t[2] > 0.3 and t[2] / math.max(t[1], 1e-3) > 3 * 4 then bad = true end
end
if bad then print("DEFECT: grouping function patterns is superlinear in the depth of nested function literals"); os.exit(1) end
print("ok")
