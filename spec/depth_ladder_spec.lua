-- The depth ladder: every pass and printer on programs nested 1,000 /
-- 10,000 / 100,000 deep in five shapes (nested if, nested tuples, nested
-- calls, lets, closures), and patterns as deep, timed against each other:
-- processing stays linear in the depth (a step of 10x costs about 12x; the
-- bounds, with room for the caches, are in spec/support/ladder.lua, and
-- bench/ladder.lua prints the table). Ratios, not absolute times: each
-- time is the best of a few runs, and a ladder over its bounds is measured
-- again (three times, keeping the minima) before it fails.
local dp = require "devplan"
local testing = require "devplan.testing"
local L = dofile(dp.root .. "/spec/support/ladder.lua")

local function table_of(rows)
  local out = {}
  for _, r in ipairs(rows) do
    out[#out + 1] = ("%-28s %s  %s"):format(r.name, L.row(r.m), r.why or "ok")
  end
  return table.concat(out, "\n")
end

describe("the depth ladder", function()
  if testing.instrumented then
    pending("timing is not meaningful under instrumentation")
    return
  end

  for _, shape in ipairs(L.SHAPE_ORDER) do
    it("every pass and printer is linear in the depth of " .. shape, function()
      local inputs = L.inputs(shape)
      local rows, failed = {}, 0
      for _, step in ipairs(L.STEPS) do
        if not (step.skip and step.skip[shape]) then
          local why, m = L.check(step, shape, inputs)
          rows[#rows + 1] = {name = step.name, m = m, why = why}
          if why then failed = failed + 1 end
        end
      end
      assert.equal(0, failed, shape .. ": superlinear steps\n" .. table_of(rows))
    end)
  end

  -- issue 22: the API fuzzer's batch (seed 9593746455) ran this pipeline
  -- on closures 100,000 deep; a realloc per piece made it quadratic (over 10
  -- minutes under ASan)
  local FUZZ_PIPELINE = [[
    local dp = require "devplan"
    local pipe = dp.Sequential{dp.passes.PartitionByVirtualDevice(), dp.passes.ShareCopies()}
    return function(m) return dp.PassContext{verify_each = true}:run(pipe, m) end
  ]]

  it("PartitionByVirtualDevice and ShareCopies (verify_each) are linear in the depth of closures, "
     .. "in time and in memory", function()
    local run = load(FUZZ_PIPELINE)()
    local why, m = L.check({name = "Partition, ShareCopies", run = run}, "fuzzer closures",
                           L.inputs("fuzzer closures"))
    assert.is_nil(why, "superlinear\n" .. table_of({{name = "Partition, ShareCopies", m = m, why = why}}))
    local k10 = L.peak_kb("fuzzer closures", 10000, FUZZ_PIPELINE)
    if not k10 then return end -- (no /proc: the time is checked)
    local k100 = L.peak_kb("fuzzer closures", 100000, FUZZ_PIPELINE)
    -- linear: 10x the memory (with room: 20x); quadratic: 100x
    assert.is_true(k100 <= 20 * math.max(k10, 1000),
      ("peak memory 10,000 deep %d KB, 100,000 deep %d KB (x%.1f, over x20)"):format(k10, k100, k100 / k10))
  end)

  it("PartitionByVirtualDevice is linear in the size of a DAG with a wide open frontier (branchy)", function()
    local step
    for _, s in ipairs(L.STEPS) do if s.name == "PartitionByVirtualDevice" then step = s end end
    local why, m = L.check(step, "branchy", L.inputs("branchy"))
    assert.is_nil(why, "superlinear\n" .. table_of({{name = step.name, m = m, why = why}}))
  end)

  it("patterns print and match in time linear in their depth", function()
    local inputs = L.inputs("nested calls")
    local rows, failed = {}, 0
    for _, step in ipairs(L.PATTERN_STEPS) do
      local why, m = L.check_pattern(step, inputs)
      rows[#rows + 1] = {name = step.name, m = m, why = why}
      if why then failed = failed + 1 end
    end
    assert.equal(0, failed, "superlinear pattern steps\n" .. table_of(rows))
  end)

  it("catches a quadratic step", function()
    -- a step that walks the whole nesting once per level
    local quadratic = {name = "quadratic", run = function(mod)
      local e, n = mod:get("main").body, 0
      while e.kind == "call" do
        local inner = e
        while inner.kind == "call" do inner = inner.args[1]; n = n + 1 end
        e = e.args[1]
      end
      return n
    end}
    local sizes = L.SIZES
    L.SIZES = {20, 200, 2000}
    local why = L.check(quadratic, "nested calls", L.inputs("nested calls"))
    L.SIZES = sizes
    assert.is_string(why)
  end)
end)
