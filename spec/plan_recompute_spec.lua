-- PlanDevices' recompute option (src/planner/recompute.c, issue 20): a copy
-- of a value cheaper to compute again on its destination (a constant,
-- zeros, ones, a reshape of what is there) is that computation; TVM issue
-- #15019's program (a value shared by a CPU call and a GPU call, read again
-- after each) ends with the one copy it cannot do without; what qualifies
-- and what does not; generated programs, checked with the evaluator of
-- devplan.evaluate.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen_copies"
local pc = require "props_copies"
local run = require("devplan.evaluate").execute

local config = testing.config("cpu")

local program = testing.program

local function planned(text, opts)
  local out = dp.passes.PlanDevices(config, opts)(dp.parse(program(text), testing.META))
  local v, total = dp.planner.verify(out, config)
  assert.are.equal(0, total, v[1] and v[1].message)
  assert.structurally_equal(out, dp.passes.PlanDevices(config)(out))
  return out
end

-- TVM issue #15019 (PR #15090): a value nobody placed, shared by a call on
-- the CPU and one on the GPU, each read again later: TVM's rules copy it to
-- the other device once per later use.
local ISSUE_15019 = [[
#[version = "0.0.5"]
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T) -> T {
  %0 = ones(shape=[5, 7], dtype="float32");
  %1 = on_device(add(%x, %0), virtual_device=CPU);
  %2 = on_device(multiply(%y, %0), virtual_device=GPU);
  %3 = on_device(subtract(%1, %0), virtual_device=CPU);
  %4 = on_device(add(%2, %0), virtual_device=GPU);
  on_device(add(%3, device_copy(%4, src_virtual_device=GPU, dst_virtual_device=CPU)), virtual_device=CPU)
}
]]

describe("PlanDevices {recompute = true}", function()
  it("ends TVM issue #15019's program with the one copy it needs (the GPU's result to the CPU)", function()
    local args = {x = 1, y = 2}
    local tvm = planned(ISSUE_15019)
    local mb = dp.passes.ShareCopies()(planned(ISSUE_15019, {placement = "min_bytes"}))
    local rc = planned(ISSUE_15019, {placement = "min_bytes", recompute = true})
    local r0, r1, r2 = run(tvm, args), run(mb, args), run(rc, args)
    assert.are.equal(3, r0.copies) -- ones to the GPU for each GPU read, the result back
    assert.are.equal(2, r1.copies)
    assert.are.equal(1, r2.copies)
    assert.is_true(pc.equal(r0.value, r2.value))
    assert.are.equal(0, r2.nviolations, r2.violations[1])
    local list = dp.planner.recomputed(rc)
    assert.are.equal(1, #list)
    assert.are.equal("ones", list[1].value)
    assert.are.equal("cuda", list[1].dst.device_type_name)
    assert.are.equal(1, run(planned(ISSUE_15019, {recompute = true}), args).copies) -- with TVM's placement too
    -- and on the latency placement's answer: never more copies than it alone, the same values
    local lat = planned(ISSUE_15019, {placement = "latency"})
    local lat_rc = planned(ISSUE_15019, {placement = "latency", recompute = true})
    local rl, rlr = run(lat, args), run(lat_rc, args)
    assert.is_true(rlr.copies <= rl.copies, rlr.copies .. " > " .. rl.copies)
    assert.is_true(pc.equal(rl.value, rlr.value))
    assert.are.equal(0, rlr.nviolations, rlr.violations[1])
    assert.is_table(dp.planner.recomputed(lat_rc))
    assert.has_error(function() dp.passes.PlanDevices(config, {placement = "latency", polymorphic = true}) end,
      'devplan.passes.PlanDevices: option polymorphic goes with placement = "tvm" or "min_bytes", not "latency"')
    -- dp.planner.plan_with runs the option as the pass does, and checks it the same way
    local mod = dp.parse(program(ISSUE_15019), testing.META)
    local direct = dp.planner.plan_with(mod, config, {placement = "min_bytes", recompute = true})
    assert.structurally_equal(rc, direct)
    assert.are.equal(1, #dp.planner.recomputed(direct))
    assert.has_error(function() dp.planner.plan_with(mod, config, {recompute = 1}) end,
      "devplan.planner.plan_with: option 'recompute' must be a boolean, got number")
  end)

  it("recomputes a reshape of what is already there, not other computations", function()
    -- %y lives on the GPU: the CPU's reshape of it is computed again there
    -- instead of copied back; exp of it is not cheap: copied
    local text = [[
#[version = "0.0.5"]
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T) -> T {
  %0 = on_device(reshape(%y, newshape=[5, 7]), virtual_device=CPU);
  %1 = on_device(exp(%y), virtual_device=CPU);
  %2 = on_device(add(%x, %0), virtual_device=CPU);
  %3 = on_device(multiply(%0, %y), virtual_device=GPU);
  %4 = on_device(subtract(%1, %y), virtual_device=GPU);
  %5 = on_device(add(%3, %4), virtual_device=GPU);
  add(%2, device_copy(%5, src_virtual_device=GPU, dst_virtual_device=CPU))
}
]]
    local args = {x = 1, y = 2}
    local tvm, rc = planned(text), planned(text, {recompute = true})
    local list = dp.planner.recomputed(rc)
    assert.are.equal(1, #list)
    assert.are.equal("reshape", list[1].value)
    assert.are.equal("cuda", list[1].dst.device_type_name)
    local r0, r1 = run(tvm, args), run(rc, args)
    assert.are.equal(r0.copies - 1, r1.copies)
    assert.is_true(pc.equal(r0.value, r1.value))
    assert.are.equal(0, r1.nviolations, r1.violations[1])
  end)

  it("needs a boolean, reports on the command line, and is plan_devices(recompute=true)", function()
    assert.has_error(function() dp.passes.PlanDevices(config, {recompute = 1}) end)
    local path = testing.temp_file(program(ISSUE_15019), ".relay")
    local f = io.popen("bin/devplan plan " .. path .. " --default cpu --placement min_bytes --recompute 2>&1")
    local text = f:read("a")
    f:close()
    assert.truthy(text:find("// recompute: 1 copy computed again on the destination:", 1, true), text)
    assert.truthy(text:find("ones at 3:8 in @main (1 call) on cuda instead of copied from cpu", 1, true), text)
    local p = dp.pipeline.build("plan_devices(default=cpu,placement=min_bytes,recompute=true)")
    assert.are.equal(1, testing.count_calls(p(dp.parse(program(ISSUE_15019), testing.META)), "device_copy"))
  end)

  it("keeps values and never copies more on generated programs (200, both placements)", function()
    local recomputed = 0
    for seed = 1, 200 do
      local text, info = gen.program(seed, {constants = true})
      local failure, st = pc.check_recompute(text, info.inputs)
      assert.is_nil(failure, failure and ("seed " .. seed .. ": " .. failure.property .. ": " .. failure.detail))
      recomputed = recomputed + st.recomputed
    end
    assert.is_true(recomputed > 50, recomputed .. " recomputed")
  end)
end)

describe("PlanDevices {recompute = true} under allocation failures", function()
  it("raises out of memory, leaks nothing and gives the same answer after", function()
    local mod = dp.parse(program(ISSUE_15019), testing.META)
    local p = dp.passes.PlanDevices(config, {placement = "min_bytes", recompute = true})
    local want = tostring(p(mod))
    local failures = testing.fail_each_allocation(function() return p(mod) end, want)
    assert.is_true(failures > 100, failures .. " allocations")
  end)
end)
