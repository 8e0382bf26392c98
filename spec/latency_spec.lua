-- The latency placement (PlanDevices' placement = "latency",
-- dp.schedule.place; src/planner/latency*.c): its plan's schedule is the one
-- it optimised and valid by the independent checker; never worse than the
-- best single device, serial per-call choice or HEFT on the 15 models and
-- on 2,000 generated programs; within 5% of the best of every placement
-- (brute force) on programs of up to 10 calls; annotations and what a
-- device cannot run stay hard; errors.
package.path = "fuzz/?.lua;" .. package.path
local dp = require "devplan"
local testing = require "devplan.testing"
local check = dofile("spec/support/schedule_check.lua")
local P = dofile("spec/support/latency_programs.lua")

local config = testing.config("cpu")
local MODELS = {"resnet18", "resnet50", "resnet152", "resnet3d18", "mobilenet", "squeezenet", "inception_v3",
                "densenet121", "densenet201", "vgg16", "dcgan", "lstm", "mlp", "dqn", "synthetic"}

local function same(a, b) return math.abs(a - b) <= 1e-9 * math.max(1, math.abs(a), math.abs(b)) end

-- The placement's plan is valid, verified, keeps the input's annotations,
-- and its own schedule is the one the placement reports.
local function sound(mod, cfg, r, opts, label)
  local s = dp.planner.schedule(r.planned, cfg, opts)
  assert.is_true(same(s.makespan, r.makespan), label .. ": schedule " .. s.makespan .. ", reported " .. r.makespan)
  assert.same({}, check(r.planned, cfg, s, opts), label)
  assert.same({}, dp.planner.verify(r.planned, cfg, {input = mod}), label)
  return s
end

describe("the latency placement", function()
  it("plans a module, and its plan's schedule is the one it optimised", function()
    local mod = dp.parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = exp(%a);
  %1 = tanh(%b);
  %2 = negative(%0);
  %3 = sqrt(%1);
  add(%2, %3)
}]])
    local cost = function(call, vd) return vd.device_type_name == "cuda" and 2 or 2.5 end
    local r = dp.schedule.place(mod, config, {cost = cost, bandwidth = 1e3})
    sound(mod, config, r, {cost = cost, bandwidth = 1e3}, "two branches")
    -- the branches side by side, one on each device: 5 + a copy + 2, not 10 on one device
    assert.is_true(same(r.makespan, 7.14), tostring(r.makespan))
    assert.is_true(r.exact)
    assert.equal(5, r.calls)
    assert.is_true(r.bound <= r.makespan)
    local names = {}
    for _, c in ipairs(r.candidates) do names[c.name] = true end
    for _, n in ipairs{"heft", "cheapest", "single", "tvm", "min_bytes"} do assert.is_true(names[n], n) end
    -- the pass gives the same plan
    local planned = dp.passes.PlanDevices(config, {placement = "latency", cost = cost, bandwidth = 1e3})(mod)
    assert.is_true(dp.structural_equal(planned, r.planned))
  end)

  it("keeps annotations and what the cost model says a device cannot run", function()
    local mod = dp.parse(([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(exp(%a), virtual_device=CPU);
  %1 = tanh(%0);
  %2 = negative(%1);
  sqrt(%2)
}]]):gsub("CPU", P.DEVICES[1]), testing.META)
    -- the GPU is far faster, but cannot run tanh; exp is annotated on the CPU
    local cost = function(call, vd)
      if vd.device_type_name == "cuda" then return call.callee.name ~= "tanh" and 0.1 or nil end
      return 5
    end
    local r = dp.schedule.place(mod, config, {cost = cost})
    local s = sound(mod, config, r, {cost = cost}, "hard")
    for _, t in ipairs(s.tasks) do
      if t.kind == "call" and (t.expr.callee.name == "tanh" or t.expr.callee.name == "exp") then
        assert.equal("cpu", t.device.device_type_name, t.expr.callee.name)
      elseif t.kind == "call" then
        assert.equal("cuda", t.device.device_type_name, t.expr.callee.name)
      end
    end
  end)

  it("is never worse than the best single device, serial per-call choice or HEFT on the 15 models", function()
    local LOGS = {dp.root .. "/examples/tophub/arm_cpu_v0.08.log", dp.root .. "/examples/tophub/mali_v0.06.log",
                  dp.root .. "/examples/rk3399.costs"}
    local rk = dp.CompilationConfig{targets = {"llvm", "opencl -device=mali"}, default_device_type = "cpu",
                                    bandwidth = {default = 4e9}}
    local costs = dp.costs.load(LOGS, {board = "rk3399"})
    local closer = {}
    for _, name in ipairs(MODELS) do
      local mod = dp.parse_file(dp.root .. "/models/" .. name .. ".relay")
      local b = dp.schedule.baselines(mod, rk, {cost = costs})
      local r = dp.schedule.place(mod, rk, {cost = costs})
      sound(mod, rk, r, {cost = costs}, name)
      for _, base in ipairs{b.best_single, b.cheapest, b.heft} do
        assert.is_true(r.makespan <= base.schedule.makespan * (1 + 1e-12), name)
      end
      assert.is_true(r.makespan >= b.bound.bound * (1 - 1e-9), name)
      local heft_gap = b.heft.schedule.makespan - b.bound.bound
      closer[name] = (heft_gap - (r.makespan - b.bound.bound)) / heft_gap
    end
    -- squeezenet and inception_v3: the gap to the lower bound at least 5% smaller than HEFT's
    assert.is_true(closer.squeezenet >= 0.05, tostring(closer.squeezenet))
    assert.is_true(closer.inception_v3 >= 0.05, tostring(closer.inception_v3))
  end)

  it("is never worse than the baselines on 2,000 generated programs (and its plans check)", function()
    local n_exact = 0
    for seed = 1, 2000 do
      local prog = P.program(seed, 2 + seed % 13, {hard = 12})
      local cost = P.cost(seed, seed % 3 == 0)
      local bw = seed % 2 == 0 and 1e3 or 1e2
      local ok, b = pcall(dp.schedule.baselines, prog.module, config, {cost = cost, bandwidth = bw})
      local rok, r = pcall(dp.schedule.place, prog.module, config, {cost = cost, bandwidth = bw})
      if not ok then -- (an annotation puts a call where the cost model says it cannot run)
        assert.is_false(rok, "seed " .. seed)
        assert.truthy(tostring(r):find("cannot run it", 1, true), tostring(r))
      else
        assert.is_true(rok, tostring(r))
        for _, base in ipairs{b.best_single, b.cheapest, b.heft} do
          assert.is_true(r.makespan <= base.schedule.makespan * (1 + 1e-12), "seed " .. seed)
        end
        if r.exact then n_exact = n_exact + 1 end
        if seed % 20 == 0 then sound(prog.module, config, r, {cost = cost, bandwidth = bw}, "seed " .. seed) end
      end
    end
    assert.is_true(n_exact > 1000, tostring(n_exact))
  end)

  it("is within 5% of the best placement on programs of up to 10 calls (brute force)", function()
    local worst = 1
    for seed = 1, 40 do
      local n = 2 + seed % 9
      local prog = P.program(seed * 7 + 3, n, {hard = 10})
      local cost = P.cost(seed)
      local best = P.brute(prog, config, {cost = cost, bandwidth = 1e3})
      local r = dp.schedule.place(prog.module, config, {cost = cost, bandwidth = 1e3})
      assert.is_true(r.makespan <= best * 1.05, ("seed %d (%d calls): %g, brute force %g"):format(seed, n, r.makespan, best))
      worst = math.max(worst, r.makespan / best)
    end
    assert.is_true(worst <= 1.05)
  end)

  it("plans TVM's tests and generated programs of all of Relay, or says why not", function()
    local gen = require "relaygen"
    local props = require "props"
    local planned = 0
    for seed = 1, 80 do
      local ok, mod = pcall(dp.parse, gen.text(gen.program(seed)), props.META)
      if ok and pcall(dp.passes.PlanDevices(props.CONFIG), mod) then
        local rok, r = pcall(dp.schedule.place, mod, props.CONFIG)
        assert.is_true(rok or dp.is_error(r), tostring(r))
        if rok then
          planned = planned + 1
          sound(mod, props.CONFIG, r, {}, "relaygen " .. seed)
        end
      end
    end
    assert.is_true(planned > 20, tostring(planned))
  end)

  it("reports conflicts of the module's own annotations and calls no device can run", function()
    local text = testing.error_of(dp.schedule.place, dp.parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) { exp(%a) }]]), config, {cost = function() return nil end})
    assert.truthy(text:find("no device of the configuration can run exp", 1, true), text)
    local conflict = dp.parse(([[
#[version = "0.0.5"]
def @main(%a {virtual_device=CPU}: Tensor[(5, 7), float32]) {
  on_device(%a, virtual_device=GPU, constrain_result=True)
}]]):gsub("CPU", P.DEVICES[1]):gsub("GPU", P.DEVICES[2]), testing.META)
    local ok, err = pcall(dp.schedule.place, conflict, config, {resolve_conflicts = false})
    assert.is_false(ok)
    assert.equal("conflict", err.code)
  end)

  it("checks its options", function()
    local mod = dp.parse('#[version = "0.0.5"]\ndef @main(%a: Tensor[(5, 7), float32]) { exp(%a) }')
    local function err(f, ...) return testing.error_of(f, ...) end
    assert.truthy(err(dp.schedule.place, mod, config, {serial = true}):find("unknown option 'serial'", 1, true))
    assert.truthy(err(dp.schedule.place, mod, config, {objective = "fast"}):find("'objective' must be", 1, true))
    assert.truthy(err(dp.schedule.place, mod, config, {exact = 65}):find("'exact' must be", 1, true))
    assert.truthy(err(dp.schedule.place, mod, config, {effort = 0}):find("'effort' must be", 1, true))
    assert.truthy(err(dp.passes.PlanDevices, config, {placement = "latency", compute_cost = function() return 1 end})
      :find("takes cost =", 1, true))
    assert.truthy(err(dp.passes.PlanDevices, config, {cost = function() return 1 end})
      :find("need placement = \"latency\"", 1, true))
    assert.truthy(err(dp.passes.PlanDevices, config, {placement = "fastest"}):find("\"latency\"", 1, true))
    -- a cost function's error is the placement's
    local text = err(dp.schedule.place, mod, config, {cost = function() error("no costs here") end})
    assert.truthy(text:find("no costs here", 1, true), text)
  end)

  it("runs in pipelines with its costs", function()
    local mod = dp.parse('#[version = "0.0.5"]\ndef @main(%a: Tensor[(5, 7), float32]) { tanh(exp(%a)) }')
    local path = os.tmpname()
    dp.write_file(path, "cost * cpu 2\ncost * cuda 1\n")
    local p = dp.pipeline.build("plan_devices(placement=latency,costs=" .. path .. ")", {config = config})
    local planned = p(mod)
    local s = dp.planner.schedule(planned, config, {cost = dp.costs.load{path}})
    for _, t in ipairs(s.tasks) do assert.equal("cuda", t.device.device_type_name) end
    local env = dp.pipeline.build("plan_devices(placement=latency)", {config = config, costs = dp.costs.load{path}})
    assert.is_true(dp.structural_equal(planned, env(mod)))
    os.remove(path)
    local text = testing.error_of(dp.pipeline.build, "plan_devices(costs=x.costs)", {config = config})
    assert.truthy(text:find("need placement=latency", 1, true), text)
  end)
end)

describe("allocation failures while placing", function()
  local W = dofile((dp.root or ".") .. "/spec/support/oom_workload.lua")
  after_each(function() dp.debug.fail_alloc(0) end)

  it("give an out-of-memory error or the clean result, one failure at a time", function()
    local prog = P.program(7, 5, {hard = 20, soft = 30})
    local cost = P.cost(3)
    local small = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu",
                                       memory = {cuda = 300, cpu = 1e6}}
    local none = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu", memory = {cpu = 100, cuda = 100}}
    local run = function()
      local out = {}
      local r = dp.schedule.place(prog.module, small, {cost = cost, bandwidth = 1e3})
      out[#out + 1] = ("%.9g %s %d %.9g"):format(r.makespan, r.winner, r.soft_broken, r.bytes)
      out[#out + 1] = dp.astext(dp.passes.PlanDevices(small, {placement = "min_bytes"})(prog.module))
      local ok, err = pcall(dp.schedule.place, prog.module, none, {cost = cost})
      if not ok and W.is_oom(err) then error(err, 0) end -- (the budget's error is the result)
      out[#out + 1] = tostring(ok) .. " " .. tostring(err and err.message)
      return table.concat(out, "\n")
    end
    -- (a run makes about 120,000 allocations: every 157th fails, a prime
    -- step so that the failures fall on every kind of site, about a minute;
    -- DEVPLAN_OOM_STEP=1 walks every one, for hours)
    local step = math.tointeger(tonumber(os.getenv("DEVPLAN_OOM_STEP"))) or 157
    local problems, runs = W.walk{run = run, step = step}
    assert.same({}, problems)
    assert.is_true(runs > 120000 // step, tostring(runs))
  end)
end)
