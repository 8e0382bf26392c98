-- Placement by cost (PlanDevices{placement = "min_bytes"} + ShareCopies)
-- against brute force, on small generated dataflow programs
-- (fuzz/relaygen_dataflow.lua): plain and fixed on_device, values shared by
-- several readers, free and annotated parameters, the user's device_copy,
-- tuples, the function's result device. The cost model is planner.md's:
-- every value copied once to each other device where it is read; the
-- result of @main is where its body is. With two devices min_bytes is
-- exact (one minimum cut); with three (alpha-expansion) it never copies
-- more than TVM's rules. It plans exactly when some placement exists.
-- fuzz/gen_run.lua --dataflow runs as many as asked (20,000 with two
-- devices and 10,000 with three pass, docs/planner-semantics.md).
local dp = require "devplan"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local df = require "relaygen_dataflow"
local props = require "props"

local QUICK = os.getenv("DEVPLAN_QUICK") ~= nil

-- check_placement on seeds 1..n: the failures, and what happened.
local function run(n, devices)
  local failures, counts = {}, {exact = 0, none = 0, tvm_more = 0, tvm_plans = 0, planned = 0}
  for seed = 1, n do
    local prog = df.program(seed, {devices = devices, max_calls = devices == 3 and 5 or nil})
    local failure, info = props.check_placement(prog, df)
    if failure then
      failures[#failures + 1] = failure.detail
    elseif not info.best then
      counts.none = counts.none + 1
    else
      counts.planned = counts.planned + 1
      if info.min_bytes == info.best then counts.exact = counts.exact + 1 end
      if info.tvm then
        counts.tvm_plans = counts.tvm_plans + 1
        if info.tvm > info.min_bytes then counts.tvm_more = counts.tvm_more + 1 end
      end
    end
  end
  return failures, counts
end

describe("placement by cost against brute force", function()
  it("copies exactly the least bytes on two-device dataflow programs", function()
    local n = QUICK and 300 or 2000
    local failures, c = run(n, 2)
    assert.are.same({}, {failures[1], failures[2]})
    assert.are.equal(n, c.planned + c.none)
    assert.are.equal(c.planned, c.exact)
    -- the programs are worth checking: most have a placement, TVM's rules
    -- plan many of them, and min_bytes copies fewer bytes on some
    assert.is_true(c.planned > n // 2, c.planned .. " of " .. n .. " have a placement")
    assert.is_true(c.tvm_plans > n // 3, "TVM's rules plan " .. c.tvm_plans)
    assert.is_true(c.tvm_more > n // 40, "min_bytes beats TVM's rules on " .. c.tvm_more)
  end)

  it("never copies more than TVM's rules with three devices", function()
    local n = QUICK and 150 or 800
    local failures, c = run(n, 3)
    assert.are.same({}, {failures[1], failures[2]})
    assert.is_true(c.planned > n // 2)
    assert.is_true(c.exact > c.planned * 9 // 10, c.exact .. " of " .. c.planned .. " at the minimum")
  end)

  it("has every feature the cost model names among its programs", function()
    local features = {
      plain = "on_device%([^\n]*VirtualDevice%]%[%d%]%)", fixed = "constrain_result=True",
      copy = "device_copy%(", tuple = "concatenate%(%(", free_param = "%%p%d: Tensor",
      annotated_param = "%%p%d {virtual_device=", result_device = "%), virtual_device=meta",
      shared = "%%%d+ = [^\n]*\n.-%%(%d+)[,)].-%%%1[,)]",
    }
    local seen = {}
    for seed = 1, 300 do
      local text = df.program(seed).text
      for k, pat in pairs(features) do
        if text:find(pat) then seen[k] = (seen[k] or 0) + 1 end
      end
    end
    for k in pairs(features) do assert.is_true((seen[k] or 0) >= 20, k .. ": " .. tostring(seen[k])) end
  end)

  it("keeps the cases min_bytes once got wrong", function()
    -- 215: a copy to a device and back again, and the user's copy from a
    -- device to itself; 100: a plain on_device around a tuple field raised
    -- "conflicting virtual devices at a field of tuple"; 268: a plain
    -- on_device read by a call and by a copy's source; 4885: two of the
    -- user's copies of one value; 1214: a value copied to a device and back
    -- in two places (ShareCopies' second round)
    for seed, best in pairs{[215] = 140, [100] = 336, [268] = 420, [4885] = 40, [1214] = 168} do
      local failure, info = props.check_placement(df.program(seed), df)
      assert.is_nil(failure, failure and failure.detail)
      assert.are.same({best, best}, {info.best, info.min_bytes}, "seed " .. seed)
    end
  end)

  it("holds every property of fuzz/props.lua on the same programs", function()
    local checker = props.checker()
    for seed = 1, QUICK and 60 or 300 do
      local failure = checker:check(df.program(seed).text)
      assert.is_nil(failure, failure and (failure.property .. ": " .. failure.detail))
    end
  end)
end)
