-- The lean form of a placement written as annotations
-- (dp_sched_annotate_lean, placement:annotate{lean = true}), from which the
-- latency placement plans its answers: PlanDevices plans it to the plan of
-- the full form (every use annotated), after ShareCopies, or fails where
-- the full form fails; it writes fewer annotations; where the module names
-- a memory scope it is the full form.
package.path = "fuzz/?.lua;" .. package.path
local dp = require "devplan"
local testing = require "devplan.testing"
local P = dofile("spec/support/latency_programs.lua")
local gen = dofile("bench/gen.lua")

local share = dp.passes.ShareCopies()

local function count_on_device(mod)
  local n = 0
  dp.visit(mod, function(e)
    if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "on_device" then n = n + 1 end
  end)
  return n
end

-- Both forms of placement pl plan alike; the number of on_device calls of each.
local function same_plan(cfg, pl, label)
  local full, lean = pl:annotate(), pl:annotate{lean = true}
  local ok1, p1 = pcall(dp.passes.PlanDevices(cfg), full)
  local ok2, p2 = pcall(dp.passes.PlanDevices(cfg), lean)
  assert.equal(ok1, ok2, label .. ": " .. tostring(ok1 and p2 or p1))
  if ok1 then
    local a, b = share(p1), share(p2)
    assert.is_true(dp.structural_equal(a, b), label .. ":\n" .. tostring(a) .. "\n---- lean:\n" .. tostring(b))
  end
  return count_on_device(full), count_on_device(lean), ok1
end

-- The operator calls of mod but annotations, in the order of a walk.
local function op_calls(mod)
  local out = {}
  dp.visit(mod, function(e)
    if e.kind == "call" and e.callee.kind == "op" and e.callee.name ~= "on_device" then out[#out + 1] = e end
  end)
  return out
end

describe("the lean form of a placement's annotations", function()
  it("plans as the full form on generated programs of all of Relay (baselines' placements)", function()
    local gen_r = require "relaygen"
    local props = require "props"
    local compared, planned, fewer = 0, 0, 0
    for seed = 1, 150 do
      local ok, mod = pcall(dp.parse, gen_r.text(gen_r.program(seed)), props.META)
      if ok and pcall(dp.passes.PlanDevices(props.CONFIG), mod) then
        local p = dp.schedule.problem(mod, props.CONFIG)
        local pls = {p:heft(), p:cheapest()}
        for i = 1, #p:devices() do pls[#pls + 1] = p:single(i) end
        for k, pl in ipairs(pls) do
          local nfull, nlean, ok_ = same_plan(props.CONFIG, pl, "seed " .. seed .. " placement " .. k)
          compared = compared + 1
          if ok_ then planned = planned + 1 end
          assert.is_true(nlean <= nfull, "seed " .. seed)
          if nlean < nfull then fewer = fewer + 1 end
        end
      end
    end
    assert.is_true(compared >= 300, tostring(compared))
    assert.is_true(planned >= compared * 0.9, planned .. " of " .. compared)
    assert.is_true(fewer >= 20, fewer .. " of " .. compared)
  end)

  it("plans as the full form on small dataflow programs, every placement of their calls", function()
    local cfg = testing.config("cpu")
    local cpu = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}
    local gpu = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
    local n = 0
    for seed = 1, 40 do
      local mod = P.program(seed, 4, {hard = 20}).module
      local p = dp.schedule.problem(mod, cfg)
      local calls = op_calls(mod)
      for mask = 0, (1 << #calls) - 1 do
        local t = {}
        for i, call in ipairs(calls) do t[call] = (mask >> (i - 1)) & 1 == 1 and gpu or cpu end
        same_plan(cfg, p:placement(t), "seed " .. seed .. " mask " .. mask)
        n = n + 1
      end
    end
    assert.is_true(n >= 600, tostring(n))
  end)

  it("writes far fewer annotations for generated workloads on one device, and plans them alike", function()
    local cfg = dp.CompilationConfig{targets = {testing.TARGET.CPU, testing.TARGET.GPU}, default_device_type = "cuda"}
    for _, shape in ipairs{"chain", "branchy", "let"} do
      local mod = dp.parse(gen[shape](300), testing.META)
      local p = dp.schedule.problem(mod, cfg)
      local single = p:single(1)
      local nfull, nlean = same_plan(cfg, single, shape)
      -- (the generator's own annotations, and a place for a copy at each read of a
      -- parameter: the problem leaves the parameters to TVM's rules)
      assert.is_true(nfull > nlean + 200, shape .. ": " .. nfull .. " / " .. nlean)
      same_plan(cfg, p:heft(), shape .. " heft")
    end
  end)

  it("is the module itself where nothing needs writing (parameters and calls on one device)", function()
    local cfg = dp.CompilationConfig{targets = {testing.TARGET.CPU, testing.TARGET.GPU}, default_device_type = "cuda"}
    local text = gen.chain(200):gsub("%%a: Tensor", "%%a {virtual_device=meta[VirtualDevice][0]}: Tensor")
                              :gsub("%%b: Tensor", "%%b {virtual_device=meta[VirtualDevice][0]}: Tensor")
    local mod = dp.parse(text, testing.META)
    local p = dp.schedule.problem(mod, cfg)
    local cpu = 0
    for i, vd in ipairs(p:devices()) do if vd.device_type_name == "cpu" then cpu = i end end
    local pl = p:single(cpu)
    local lean = pl:annotate{lean = true}
    assert.equal(count_on_device(mod), count_on_device(lean))
    assert.is_true(dp.structural_equal(mod, lean))
    local nfull, nlean, ok = same_plan(cfg, pl, "parameters fixed")
    assert.is_true(ok)
    assert.is_true(nfull > nlean + 150, nfull .. " / " .. nlean)
  end)

  it("is the full form where the module names a memory scope", function()
    local cfg = testing.config("cpu")
    local mod = dp.parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(%a, virtual_device=VirtualDevice(device_type=cpu, virtual_device_id=0, memory_scope="scopeA"), constrain_result=True);
  %1 = add(%b, %b);
  %2 = exp(%1);
  subtract(%0, %2)
}]])
    local p = dp.schedule.problem(mod, cfg)
    local pl = p:single(1)
    assert.is_true(dp.structural_equal(pl:annotate(), pl:annotate{lean = true}))
    same_plan(cfg, pl, "scoped")
  end)
end)
