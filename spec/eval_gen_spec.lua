-- Programs full of function literals (fuzz/relaygen_fn.lua) through the
-- passes that must keep what a program computes (fuzz/eval_props.lua:
-- PlanDevices, ShareCopies, PartitionByVirtualDevice, MergeComposite,
-- MergeAndAnnotate, each run checked by devplan.evaluate). fuzz/eval_run.lua
-- runs thousands and writes reproducers; here a few hundred, and the
-- evaluator itself.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen_fn"
local eval_props = require "eval_props"
local evaluate = require "devplan.evaluate"
local proc = dofile(dp.root .. "/spec/support/proc.lua")

local N = testing.instrumented and 40 or 250

-- PartitionByVirtualDevice places a hoisted piece's call before the let
-- its function literal reads (../shared/repro/partition_let_var_used_before_binding.lua,
-- being fixed apart): while that reproducer still fails, generated programs
-- that show the same (an unbound variable after partitioning) are that
-- defect, counted but not failures; once it passes, they fail here.
local function known_partition_defect(failure)
  if failure.property ~= "eval-partition" or not failure.detail:find("unbound variable", 1, true) then return false end
  local path = testing.shared_dir .. "/repro/partition_let_var_used_before_binding.lua"
  local r = proc.run({path}, {timeout = 120})
  return r.status ~= 0
end

describe("generated programs with function literals", function()
  it("parse, and the evaluator runs them", function()
    for seed = 1, 30 do
      local prog = gen.program(seed)
      local mod = dp.parse(gen.text(prog), eval_props.META)
      local v = evaluate.run(mod, gen.args(prog, 1))
      assert.is_not_nil(v)
    end
  end)

  it("have function literals of every kind: called, passed, returned, curried", function()
    local seen = {}
    for seed = 1, 60 do
      local text = gen.text(gen.program(seed))
      if text:find("}%)%(") then seen.called = true end
      if text:find("%-> fn %(") then seen.returned = true end
      if text:find("fn %(%%p%d+: Tensor%[%(5, 7%), float32%], %%p") then seen.two_params = true end
      if text:find("@h%d%(fn ") then seen.passed = true end
    end
    assert.same({called = true, returned = true, two_params = true, passed = true}, seen)
  end)

  it("the evaluator tells programs that compute different things apart", function()
    local a = dp.parse("def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) { add(%x, %y) }")
    local b = dp.parse("def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) { add(%y, %x) }")
    local c = dp.parse("def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) { "
      .. "(fn (%p: Tensor[(2), float32]) { add(%p, %y) })(%x) }")
    local args = {x = 3, y = 5}
    assert.is_false(evaluate.same(evaluate.run(a, args), evaluate.run(b, args)))
    assert.is_true(evaluate.same(evaluate.run(a, args), evaluate.run(c, args)))
    -- a rewrite that swaps the arguments of add changes what a program computes
    local swapped = dp.rewrite(a, {call = function(e)
      if e.callee.kind == "op" and e.callee.name == "add" then return dp.call("add", {e.args[2], e.args[1]}) end
    end})
    assert.is_false(evaluate.same(evaluate.run(a, args), evaluate.run(swapped, args)))
  end)

  it(("keep what they compute through every pass (%d programs)"):format(N), function()
    local outcomes, failed, known = {}, {}, 0
    for seed = 1, N do
      local prog = gen.program(seed)
      local failure, outcome = eval_props.check(gen.text(prog), {gen.args(prog, 1), gen.args(prog, 2)}, seed)
      if failure and known_partition_defect(failure) then
        known = known + 1
      elseif failure then
        failed[#failed + 1] = ("seed %d: %s: %s"):format(seed, failure.property, failure.detail:sub(1, 400))
      else
        outcomes[outcome] = (outcomes[outcome] or 0) + 1
      end
    end
    assert.same({}, failed)
    assert.is_true((outcomes.planned or 0) > N / 2, "most programs plan")
    if known > 0 then print(("(%d programs show the known partition defect)"):format(known)) end
  end)
end)
