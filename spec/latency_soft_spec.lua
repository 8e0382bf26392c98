-- Soft annotations (issue 24): on_device(e, virtual_device=D, soft=W), a
-- preference of weight W (seconds under the latency placement, bytes under
-- min_bytes) broken only where breaking it saves more than W; TVM's rules
-- read it as the annotation it would be without `soft`. Checked against
-- brute force over every placement of small programs.
local dp = require "devplan"
local testing = require "devplan.testing"
local P = dofile("spec/support/latency_programs.lua")

local config = testing.config("cpu")
local CPU, GPU = P.DEVICES[1], P.DEVICES[2]

local function parse(text) return dp.parse((text:gsub("CPU", CPU):gsub("GPU", GPU)), testing.META) end

local function device_of(schedule, op)
  for _, t in ipairs(schedule.tasks) do
    if t.kind == "call" and t.expr.callee.name == op then return t.device.device_type_name end
  end
end

describe("a soft annotation", function()
  it("is written soft=W, printed only when set", function()
    local mod = parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=GPU, soft=0.25f);
  on_device(exp(%0), virtual_device=GPU)
}]])
    local text = dp.astext(mod)
    assert.truthy(text:find("soft=0.25f", 1, true), text)
    local _, n = text:gsub("soft=", "")
    assert.equal(1, n)
    assert.is_true(dp.structural_equal(mod, dp.parse(text)))
    -- a weight is a number >= 0; a soft annotation names a device and constrains its body only
    for _, bad in ipairs{"soft=-1f", "soft=1f, constrain_result=True", "soft=1f, constrain_body=False"} do
      local ok, err = pcall(parse, [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) { on_device(negative(%a), virtual_device=GPU, ]] .. bad .. [[) }]])
      assert.is_false(ok, bad)
      assert.truthy(tostring(err):find("soft", 1, true), tostring(err))
    end
    local ok, err = pcall(dp.parse, [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) { on_device(negative(%a), soft=1f) }]])
    assert.is_false(ok)
    assert.truthy(tostring(err):find("needs a virtual_device", 1, true), tostring(err))
  end)

  it("is an ordinary annotation under TVM's rules", function()
    local soft = parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) { exp(on_device(negative(%a), virtual_device=GPU, soft=1f)) }]])
    local hard = parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) { exp(on_device(negative(%a), virtual_device=GPU)) }]])
    local a, b = dp.passes.PlanDevices(config)(soft), dp.passes.PlanDevices(config)(hard)
    assert.equal(dp.astext(b), (dp.astext(a):gsub(", soft=1f", "")))
  end)

  it("is broken by the latency placement only where that saves more than its weight", function()
    -- keeping exp on the GPU (3 s there, 1 s on the CPU, copies 0.14 s each way) costs 2.28 s
    for _, case in ipairs{{0.5, "cpu"}, {2.2, "cpu"}, {2.3, "cuda"}, {10, "cuda"}} do
      local mod = parse(([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = negative(%a);
  %1 = on_device(exp(%0), virtual_device=GPU, soft=W);
  tanh(%1)
}]]):gsub("W", tostring(case[1])))
      local cost = function(_, vd) return vd.device_type_name == "cuda" and 3 or 1 end
      local r = dp.schedule.place(mod, config, {cost = cost, bandwidth = 1e3})
      local s = dp.planner.schedule(r.planned, config, {cost = cost, bandwidth = 1e3})
      assert.equal(case[2], device_of(s, "exp"), "weight " .. case[1])
      assert.equal(case[2] == "cpu" and 1 or 0, r.soft_broken)
      assert.equal(1, r.soft)
    end
  end)

  it("is weighed as brute force weighs it under the latency placement (makespan + broken weights)", function()
    local worst = 1
    for seed = 1, 30 do
      local prog = P.program(seed * 13 + 1, 2 + seed % 7, {hard = 10, soft = 35})
      local cost = P.cost(seed)
      local score = function(_, s, place)
        local w = 0
        for i, c in ipairs(prog.calls) do if c.soft and place.calls[i] ~= c.soft then w = w + c.weight end end
        return s.makespan + w
      end
      local best = P.brute(prog, config, {cost = cost, bandwidth = 1e3, score = score})
      local r = dp.schedule.place(prog.module, config, {cost = cost, bandwidth = 1e3})
      local s = dp.planner.schedule(r.planned, config, {cost = cost, bandwidth = 1e3})
      local broken = P.soft_broken(prog, s)
      assert.is_true(math.abs(broken - r.soft_weight) < 1e-9, "seed " .. seed .. ": " .. broken .. " " .. r.soft_weight)
      local mine = r.makespan + broken
      assert.is_true(mine <= best * 1.05 + 1e-9, ("seed %d: %g, brute force %g"):format(seed, mine, best))
      worst = math.max(worst, mine / best)
    end
    assert.is_true(worst <= 1.05)
  end)

  it("is weighed as brute force weighs it under min_bytes (bytes copied + broken weights)", function()
    for seed = 1, 30 do
      local prog = P.program(seed * 17 + 5, 2 + seed % 7, {hard = 10, soft = 40,
                                                          weight = function(rng) return 70 * rng(0, 6) end})
      local function bytes_of(s)
        local n = 0
        for _, t in ipairs(s.tasks) do if t.kind == "copy" then n = n + t.bytes end end
        return n
      end
      local score = function(_, s, place)
        local w = 0
        for i, c in ipairs(prog.calls) do if c.soft and place.calls[i] ~= c.soft then w = w + c.weight end end
        return bytes_of(s) + w
      end
      local best = P.brute(prog, config, {score = score})
      -- (min_bytes counts a copy per value and destination device, as ShareCopies leaves a plan)
      local planned = dp.passes.ShareCopies()(dp.passes.PlanDevices(config, {placement = "min_bytes"})(prog.module))
      local s = dp.planner.schedule(planned, config)
      local mine = bytes_of(s) + P.soft_broken(prog, s)
      assert.is_true(mine <= best + 1e-9, ("seed %d: %g, brute force %g"):format(seed, mine, best))
    end
  end)

  it("comes from AnnotateVirtualDevices rules (dp.soft) and from --annotate OP=DEVICE~W", function()
    local mod = dp.parse('#[version = "0.0.5"]\ndef @main(%a: Tensor[(5, 7), float32]) { tanh(exp(%a)) }')
    local gpu = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
    local annotated = dp.passes.AnnotateVirtualDevices{exp = function() return dp.soft(gpu, 0.5) end}(mod)
    assert.truthy(dp.astext(annotated):find("soft=0.5f", 1, true), dp.astext(annotated))
    local p = dp.pipeline.build("annotate(exp=cuda~0.5)", {config = config})
    assert.is_true(dp.structural_equal(annotated, p(mod)))
    -- a soft rule restricts nothing as a capability
    local rules = dp.passes.AnnotateVirtualDevices{exp = function() return dp.soft(gpu, 1) end}
    local call
    dp.visit(mod, function(e) if e.kind == "call" and e.callee.name == "exp" then call = e end end)
    assert.is_true(rules.capability(call, dp.VirtualDevice{device_type = "cpu"}))
    assert.truthy(testing.error_of(dp.soft, gpu, -1):find("weight must be a number >= 0", 1, true))
    assert.truthy(testing.error_of(dp.soft, "cuda", 1):find("a VirtualDevice expected", 1, true))
    local text = testing.error_of(dp.pipeline.build, "annotate(exp=cuda~x)", {config = config})
    assert.truthy(text:find("must be a number >= 0", 1, true), text)
  end)
end)
