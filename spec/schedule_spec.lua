-- dp.planner.schedule (src/planner/schedule_*.c, lua/devplan/schedule.lua):
-- the modelled schedule of a planned module, on modules whose schedule is
-- worked out by hand: devices one call at a time, links one copy at a time,
-- copies beside compute, readiness through tuples, functions, if; the
-- priority order; serial runs; errors; the lists' behaviour. Every
-- schedule made here also passes the independent checker.
local dp = require "devplan"
local testing = require "devplan.testing"
local check = dofile("spec/support/schedule_check.lua")

local config = testing.config("cpu")
local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"

local function module(body, params)
  return dp.parse('#[version = "0.0.5"]\n' .. body, testing.META)
end

local plan = testing.plan(config)

-- seconds by operator name, halved on the GPU (or as given in t)
local function cost_by(t, gpu_factor)
  return function(call, vd)
    local name = call.callee.kind == "op" and call.callee.name or "fused"
    local s = t[name] or 1
    if vd.device_type_name == "cuda" then s = s * (gpu_factor or 1) end
    return s
  end
end

local function scheduled(planned, opts)
  local s = dp.planner.schedule(planned, config, opts)
  local problems = check(planned, config, s, {cost = opts and opts.cost, bandwidth = opts and opts.bandwidth})
  assert.same({}, problems)
  return s
end

-- The task of operator `name` (the n-th in start order).
local function task(s, name, n)
  n = n or 1
  for _, t in ipairs(s.tasks) do
    local tn = t.kind == "copy" and "device_copy" or t.expr.callee.name
    if tn == name then
      n = n - 1
      if n == 0 then return t end
    end
  end
  error("no task " .. name)
end

describe("the schedule of a planned module", function()
  it("runs devices side by side, one call at a time each, copies on their link one at a time", function()
    -- negative and exp on the GPU, their results copied to the CPU (5 s each on
    -- one link: the second waits for the first), sqrt on the CPU meanwhile
    local mod = module(([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32], %c: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=GPU);
  %1 = on_device(exp(%b), virtual_device=GPU);
  %2 = on_device(sqrt(%c), virtual_device=CPU);
  %3 = add(%0, %1);
  add(%3, %2)
}]]):gsub("GPU", GPU):gsub("CPU", CPU))
    local s = scheduled(plan(mod), {cost = cost_by{}, bandwidth = 28}) -- 140 bytes / 28 = 5 s
    local neg, ex, sq = task(s, "negative"), task(s, "exp"), task(s, "sqrt")
    assert.same({0, 1}, {neg.start, neg.finish})
    assert.same({1, 2}, {ex.start, ex.finish})
    assert.same({0, 1}, {sq.start, sq.finish}) -- beside the GPU
    local c1, c2 = task(s, "device_copy", 1), task(s, "device_copy", 2)
    assert.same({1, 6}, {c1.start, c1.finish}) -- beside the GPU's exp
    assert.same({6, 11}, {c2.start, c2.finish}) -- the link was busy
    assert.equal("cuda", c1.src.device_type_name)
    assert.equal("cpu", c1.dst.device_type_name)
    assert.equal(c1.dst, c1.device)
    assert.equal(140, c1.bytes)
    assert.same({11, 12}, {task(s, "add", 1).start, task(s, "add", 1).finish})
    assert.equal(13, s.makespan)
    -- resources: the two devices and the one link, with their busy time
    local busy = {}
    for _, r in ipairs(s.resources) do
      local name = r.kind == "link" and (r.src.device_type_name .. "->" .. r.dst.device_type_name)
        or r.device.device_type_name
      busy[name] = {r.busy, r.tasks}
    end
    assert.same({{2, 2}, {3, 3}, {10, 2}}, {busy.cuda, busy.cpu, busy["cuda->cpu"]})
  end)

  it("reads a projection of a tuple as its field alone", function()
    -- exp takes 10 s on the CPU; the GPU's reader of the tuple's field 0 does not wait for it
    local mod = module(([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=GPU);
  %1 = on_device(exp(%b), virtual_device=CPU);
  %2 = (%0, %1);
  %3 = on_device(sqrt(%2.0), virtual_device=GPU);
  (%3, %2.1)
}]]):gsub("GPU", GPU):gsub("CPU", CPU))
    local s = scheduled(plan(mod), {cost = cost_by{exp = 10}})
    assert.equal(1, task(s, "sqrt").start)
    assert.equal(10, task(s, "exp").finish)
    assert.equal(10, task(s, "device_copy").start) -- the tuple's field 1 copied when made
  end)

  it("reads a function called once as if inlined, and one called twice apart", function()
    local once = module([[
def @f(%x: Tensor[(5, 7), float32]) { negative(%x) }
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = exp(%a);
  @f(%0)
}]])
    local s = scheduled(plan(once), {cost = cost_by{exp = 3}})
    assert.equal(3, task(s, "negative").start)
    assert.equal(4, s.makespan)
    -- (a planned module written out: exp on the CPU, @f on the GPU)
    local planned = module(([[
def @f(%x {virtual_device=GPU}: Tensor[(5, 7), float32], virtual_device=GPU) { negative(%x) }
def @main(%a {virtual_device=CPU}: Tensor[(5, 7), float32], virtual_device=CPU) {
  %0 = exp(%a);
  %1 = device_copy(%0, src_virtual_device=CPU, dst_virtual_device=GPU);
  %2 = device_copy(%a, src_virtual_device=CPU, dst_virtual_device=GPU);
  %3 = @f(%1);
  %4 = @f(%2);
  %5 = device_copy(%3, src_virtual_device=GPU, dst_virtual_device=CPU);
  %6 = device_copy(%4, src_virtual_device=GPU, dst_virtual_device=CPU);
  add(%5, %6)
}]]):gsub("GPU", GPU):gsub("CPU", CPU))
    dp.planner.verify(planned, config, {raise = true})
    s = scheduled(planned, {cost = cost_by{exp = 3}})
    -- @f is scheduled once, its parameter ready at 0: negative does not wait for exp
    local n = 0
    for _, t in ipairs(s.tasks) do if t.kind == "call" and t.expr.callee.name == "negative" then n = n + 1 end end
    assert.equal(1, n)
    assert.equal(0, task(s, "negative").start)
    -- the add waits for exp (an argument of a call of @f) all the same
    assert.is_true(task(s, "add").start >= task(s, "exp").finish)
  end)

  it("waits for the condition and both branches of an if", function()
    local mod = module([[
def @main(%c: bool, %a: Tensor[(5, 7), float32]) {
  %0 = if (%c) { exp(%a) } else { negative(%a) };
  add(%0, %a)
}]])
    local s = scheduled(plan(mod), {cost = cost_by{exp = 2, negative = 5}})
    assert.equal(7, task(s, "add").start) -- one device: the branches one after the other
    assert.equal(8, s.makespan)
  end)

  it("makes a call of a primitive function one task", function()
    local mod = module([[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = fn (%p: Tensor[(5, 7), float32], Primitive=1) { add(negative(%p), %p) };
  %0(%a)
}]])
    local s = scheduled(plan(mod), {cost = cost_by{fused = 4}})
    assert.equal(1, #s.tasks)
    assert.equal("fn", s.tasks[1].expr.callee.kind)
    assert.equal(4, s.makespan)
  end)

  it("starts first the ready call with the longest chain behind it", function()
    -- sqrt comes first in the text, but negative has exp (10 s on the GPU) behind it
    local mod = module(([[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(sqrt(%a), virtual_device=CPU);
  %1 = on_device(negative(%a), virtual_device=CPU);
  %2 = on_device(exp(%1), virtual_device=GPU);
  on_device(add(%0, %2), virtual_device=CPU)
}]]):gsub("GPU", GPU):gsub("CPU", CPU))
    local s = scheduled(plan(mod), {cost = cost_by{exp = 10}, bandwidth = 1e12})
    assert.equal(0, task(s, "negative").start)
    assert.equal(1, task(s, "sqrt").start)
  end)

  it("runs one task at a time with serial", function()
    local mod = module(([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=GPU);
  %1 = exp(%b);
  add(%0, %1)
}]]):gsub("GPU", GPU))
    local planned = plan(mod)
    local par = scheduled(planned, {cost = cost_by{exp = 3}, bandwidth = 70})
    local ser = scheduled(planned, {cost = cost_by{exp = 3}, bandwidth = 70, serial = true})
    assert.equal(4, par.makespan)             -- negative [0,1] and exp [0,3] side by side, copy [1,3], add [3,4]
    assert.equal(1 + 2 + 3 + 1, ser.makespan) -- the sum: one after another
    assert.is_true(ser.serial)
    assert.equal(1, #ser.resources)
    assert.equal("serial", ser.resources[1].kind)
  end)

  it("gives the critical path back from the makespan", function()
    local mod = module(([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=GPU);
  %1 = exp(%b);
  add(%0, %1)
}]]):gsub("GPU", GPU))
    local s = scheduled(plan(mod), {cost = cost_by{}, bandwidth = 14}) -- copy 10 s
    local path = s.critical
    assert.equal(3, #path)
    assert.equal("negative", path[1].task.expr.callee.name)
    assert.is_nil(path[1].waited)
    assert.equal("copy", path[2].task.kind)
    assert.equal("data", path[2].waited)
    assert.equal(s.makespan, path[3].task.finish)
    for i = 2, #path do assert.equal(path[i - 1].task.finish, path[i].task.start) end
    -- the path's tasks are the list's tables
    local in_list = {}
    for _, t in ipairs(s.tasks) do in_list[t] = true end
    for _, c in ipairs(path) do assert.is_true(in_list[c.task]) end
  end)

  it("has makespan 0 without tasks, and lists that read like lists", function()
    local s = dp.planner.schedule(plan(module([[
def @main(%a: Tensor[(5, 7), float32]) { %a }]])), config)
    assert.equal(0, s.makespan)
    assert.equal(0, #s.tasks)
    assert.equal(0, #s.critical)
    s = scheduled(plan(module([[
def @main(%a: Tensor[(5, 7), float32]) { negative(exp(%a)) }]])), {cost = cost_by{}})
    assert.equal(2, #s.tasks)
    assert.equal(s.tasks[1], s.tasks[1])
    local n = 0
    for i, t in ipairs(s.tasks) do
      n = n + 1
      assert.equal(i - 1, t.start)
    end
    assert.equal(2, n)
    assert.is_nil(s.tasks[3])
    assert.is_nil(s.tasks.x)
  end)

  it("uses the default model without a cost, and counts an unknown dimension as 1", function()
    local mod = module(([[
def @main(%a: Tensor[(?, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=GPU);
  exp(%0)
}]]):gsub("GPU", GPU))
    local s = scheduled(plan(mod))
    for _, t in ipairs(s.tasks) do assert.is_true(t.finish > t.start) end
    local c = task(s, "device_copy")
    assert.equal(28, c.bytes) -- (?, 7) float32: 7 * 4, ? counted 1
    assert.is_true(c.bytes_unknown)
  end)

  it("is the same every time", function()
    local mod = module(([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=GPU);
  %1 = exp(%b);
  %2 = sqrt(%a);
  %3 = on_device(tanh(%b), virtual_device=GPU);
  add(add(%0, %1), add(%2, %3))
}]]):gsub("GPU", GPU))
    local planned = plan(mod)
    local function starts()
      local out = {}
      for i, t in ipairs(dp.planner.schedule(planned, config, {cost = cost_by{}}).tasks) do
        out[i] = tostring(t.expr.callee.name) .. "@" .. t.start
      end
      return table.concat(out, " ")
    end
    assert.equal(starts(), starts())
  end)
end)

describe("the schedule's errors", function()
  local mod = module(([[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=GPU);
  exp(%0)
}]]):gsub("GPU", GPU))
  local planned = plan(mod)

  it("names the call and the device a cost model says cannot run it", function()
    local text = testing.error_of(dp.planner.schedule, planned, config, {cost = function(call, vd)
      if vd.device_type_name == "cuda" then return nil end
      return 1
    end})
    assert.truthy(text:find("negative at <string>:3:18", 1, true), text)
    assert.truthy(text:find("on cuda, but the cost model says that device cannot run it", 1, true), text)
  end)

  it("passes a cost function's error on as a devplan.Error", function()
    local _, err = testing.error_of(dp.planner.schedule, planned, config, {cost = function() error("no costs here") end})
    assert.is_true(dp.is_error(err))
    assert.equal("callback", err.code)
    assert.truthy(tostring(err):find("no costs here", 1, true))
    local text = testing.error_of(dp.planner.schedule, planned, config, {cost = function() return "fast" end})
    assert.truthy(text:find("cost must return a number of seconds, or nil", 1, true), text)
    text = testing.error_of(dp.planner.schedule, planned, config, {cost = function() return -1 end})
    assert.truthy(text:find("must be a number of seconds >= 0, got -1", 1, true), text)
    text = testing.error_of(dp.planner.schedule, planned, config, {cost = function() return 0 / 0 end})
    assert.truthy(text:find("must be a number of seconds >= 0", 1, true), text)
    text = testing.error_of(dp.planner.schedule, planned, config, {bandwidth = function() return 0 end})
    assert.truthy(text:find("bandwidth from cuda to cpu must be a number of bytes per second > 0", 1, true), text)
  end)

  it("says a module that is not planned is not", function()
    local text = testing.error_of(dp.planner.schedule, mod, config)
    assert.truthy(text:find("is not planned", 1, true), text)
    assert.truthy(text:find("exp at <string>:4:3 runs on no device", 1, true), text)
  end)

  it("checks its arguments and options", function()
    local text = testing.error_of(dp.planner.schedule, planned, config, {costs = 1})
    assert.truthy(text:find("unknown option 'costs'", 1, true), text)
    text = testing.error_of(dp.planner.schedule, planned, config, {cost = 3})
    assert.truthy(text:find("option 'cost' must be a function", 1, true), text)
    text = testing.error_of(dp.planner.schedule, planned, config, {bandwidth = -2})
    assert.truthy(text:find("option 'bandwidth' must be a number", 1, true), text)
    text = testing.error_of(dp.planner.schedule, planned, config, {serial = "yes"})
    assert.truthy(text:find("option 'serial' must be a boolean", 1, true), text)
    text = testing.error_of(dp.planner.schedule, "x", config)
    assert.truthy(text:find("a module expected", 1, true), text)
    text = testing.error_of(dp.planner.schedule, planned, nil)
    assert.truthy(text:find("a CompilationConfig expected", 1, true), text)
  end)

  it("verifies the plan first when asked", function()
    local bad = module(([[
def @main(%a {virtual_device=GPU}: Tensor[(5, 7), float32], virtual_device=CPU) {
  negative(%a)
}]]):gsub("GPU", GPU):gsub("CPU", CPU))
    assert.is_table(dp.planner.schedule(bad, config)) -- read as written
    local text = testing.error_of(dp.planner.schedule, bad, config, {verify = true})
    assert.truthy(text:find("not consistent", 1, true), text)
  end)

  it("leaves the Lua state usable and leaks nothing on errors", function()
    for _ = 1, 50 do
      pcall(dp.planner.schedule, planned, config, {cost = function() error("x") end})
      pcall(dp.planner.schedule, mod, config)
    end
    collectgarbage()
    local s = dp.planner.schedule(planned, config, {cost = cost_by{}})
    assert.equal(3, #s.tasks) -- negative, its copy, exp
  end)
end)

describe("allocation failures while scheduling", function()
  local W = dofile((dp.root or ".") .. "/spec/support/oom_workload.lua")
  after_each(function() dp.debug.fail_alloc(0) end)

  it("give an out-of-memory error or the clean result, one failure at a time", function()
    local planned = plan(module(([[
def @f(%x: Tensor[(5, 7), float32]) { negative(%x) }
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(exp(%a), virtual_device=GPU);
  %1 = (%0, sqrt(%b));
  %2 = @f(%1.1);
  add(%1.0, %2)
}]]):gsub("GPU", GPU)))
    local input = module(([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(exp(%a), virtual_device=GPU);
  %1 = sqrt(%b);
  let %x = tanh(%1);
  add(add(%0, %x), negative(%1))
}]]):gsub("GPU", GPU))
    local run = function()
      local out = {}
      local s = dp.planner.schedule(planned, config, {cost = cost_by{exp = 2}})
      out[#out + 1] = tostring(s.makespan) .. " " .. #s.tasks .. " " .. #s.critical
      for _, t in ipairs(s.tasks) do out[#out + 1] = t.kind .. t.start end
      local p = dp.schedule.problem(input, config, {cost = cost_by{}})
      local h = p:heft()
      out[#out + 1] = tostring(p:lower_bound().bound)
      out[#out + 1] = tostring(h:annotate())
      out[#out + 1] = tostring(dp.planner.schedule(planned, config, {serial = true}).makespan)
      return table.concat(out, "\n")
    end
    local problems, runs = W.walk{run = run}
    assert.same({}, problems)
    assert.is_true(runs > 50, tostring(runs))
  end)
end)
