-- Memory budgets (issue 24): CompilationConfig{memory = {cuda = bytes}},
-- --memory. A value occupies its bytes on its device from the start of the
-- task that makes it (a copy: on its destination) to the finish of its last
-- reader; @main's parameters from 0, its result to the makespan. The peaks
-- of dp.planner.schedule against an independent computation here; the
-- latency and min_bytes placements keep within the budgets as brute force
-- finds possible; TVM's rules report the peak; no placement fits: an error
-- naming the device, the peak and the values live then.
local dp = require "devplan"
local testing = require "devplan.testing"
local P = dofile("spec/support/latency_programs.lua")

local function config_with(memory)
  return dp.CompilationConfig{targets = {testing.TARGET.CPU, testing.TARGET.GPU}, default_device_type = "cpu",
                              memory = memory}
end

-- The peak bytes per device type of a planned dataflow module (calls,
-- copies, tuples, annotations; @main alone), from its text and schedule.
local function peaks(planned, s)
  local main
  for _, nf in ipairs(planned:functions()) do if nf[1] == "main" then main = nf[2] end end
  local task, ends, device, bytes = {}, {}, {}, {}
  for _, t in ipairs(s.tasks) do task[t.expr] = t end
  local function size(e)
    local t = e.checked_type
    local n = 4
    for _, d in ipairs(t.shape) do n = n * d end
    return n
  end
  -- the value an argument reads: through annotations
  local function value(e)
    while e.kind == "call" and e.callee.kind == "op" and e.callee.name == "on_device" do e = e.args[1] end
    return e
  end
  local values = {}
  for _, p in ipairs(main.params) do
    values[#values + 1] = p
    device[p], bytes[p], ends[p] = p.virtual_device.device_type_name, size(p), 0
  end
  dp.visit(main.body, function(e)
    local t = task[e]
    if t then
      values[#values + 1] = e
      device[e], bytes[e], ends[e] = t.device.device_type_name, size(e), t.finish
      for _, a in ipairs(e.args) do
        local v = value(a)
        if ends[v] and t.finish > ends[v] then ends[v] = t.finish end
      end
    end
  end)
  local function result(e)
    e = value(e)
    if e.kind == "tuple" then for _, f in ipairs(e.fields) do result(f) end
    elseif ends[e] then ends[e] = s.makespan end
  end
  result(main.body)
  local events = {}
  for _, v in ipairs(values) do
    local from = task[v] and task[v].start or 0
    if ends[v] > from then
      events[#events + 1] = {from, bytes[v], device[v]}
      events[#events + 1] = {ends[v], -bytes[v], device[v]}
    end
  end
  table.sort(events, function(x, y) if x[1] ~= y[1] then return x[1] < y[1] end return x[2] < y[2] end)
  local cur, peak = {}, {}
  for _, ev in ipairs(events) do
    cur[ev[3]] = (cur[ev[3]] or 0) + ev[2]
    if cur[ev[3]] > (peak[ev[3]] or 0) then peak[ev[3]] = cur[ev[3]] end
  end
  return peak
end

local function schedule_peaks(s)
  local out = {}
  for _, m in ipairs(s.memory) do out[m.device.device_type_name] = m.peak end
  return out
end

local function fits(s)
  for _, m in ipairs(s.memory) do if m.budget and m.peak > m.budget * (1 + 1e-12) then return false end end
  return true
end

describe("memory budgets", function()
  it("are part of the configuration: bytes or sizes", function()
    local c = config_with{cuda = "2GiB", cpu = 5e8}
    assert.equal(2 ^ 31, c.memory.cuda)
    assert.equal(5e8, c.memory.cpu)
    assert.truthy(tostring(c):find("memory={cpu=5e+08, cuda=2.14748e+09}", 1, true), tostring(c))
    assert.equal(1.5e6, config_with{cuda = "1.5 MB"}.memory.cuda)
    assert.equal(512 * 1024, config_with{cuda = "512KiB"}.memory.cuda)
    for _, bad in ipairs{{cuda = 0}, {cuda = -1}, {cuda = "2 lots"}, {cdua = 1}, {[1] = 5}} do
      local ok, err = pcall(config_with, bad)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("memory", 1, true), tostring(err))
    end
    assert.truthy(tostring(select(2, pcall(config_with, {cdua = 1}))):find("did you mean 'cuda'", 1, true))
    -- a pipeline's plan_devices(default=...) keeps them
    local p = dp.pipeline.build("plan_devices(default=cuda)", {config = c})
    assert.equal(2 ^ 31, p.passes[1].config.memory.cuda)
  end)

  it("are measured by the schedule as the rules say (an independent count)", function()
    local config = config_with(nil)
    for seed = 1, 40 do
      local prog = P.program(seed, 2 + seed % 9, {hard = 30})
      local cost = P.cost(seed)
      local plans = {dp.schedule.place(prog.module, config, {cost = cost}).planned,
                     dp.passes.PlanDevices(config, {placement = "min_bytes"})(prog.module)}
      local ok, tvm = pcall(dp.passes.PlanDevices(config), prog.module) -- (TVM's rules may find a conflict)
      if ok then plans[#plans + 1] = tvm end
      for _, planned in ipairs(plans) do
        local s = dp.planner.schedule(planned, config, {cost = cost})
        local want, got = peaks(planned, s), schedule_peaks(s)
        for dev, b in pairs(want) do
          assert.is_true(math.abs((got[dev] or 0) - b) < 1e-6, ("seed %d %s: %s, counted %s"):format(seed, dev, tostring(got[dev]), b))
        end
        for dev, b in pairs(got) do assert.is_true(b == 0 or want[dev] ~= nil, "seed " .. seed .. " " .. dev) end
      end
    end
  end)

  it("under TVM's rules are reported, not kept", function()
    local config = config_with{cuda = 100}
    local mod = dp.parse(([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) { tanh(on_device(exp(%a), virtual_device=GPU)) }]]):gsub("GPU", P.DEVICES[2]), testing.META)
    local planned = dp.passes.PlanDevices(config)(mod)
    local s = dp.planner.schedule(planned, config)
    assert.is_false(fits(s))
    local text = s:text()
    assert.truthy(text:find("memory @cuda", 1, true) and text:find("(budget 100 bytes, OVER)", 1, true), text)
    local live = s:live(dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0})
    assert.is_true(#live >= 1)
    for _, v in ipairs(live) do assert.is_true(v.bytes > 0 and v.from <= v.to) end
    local json = dp.planner.report(planned, config):with_schedule(s, "default"):json()
    assert.truthy(json:find('"budget":100', 1, true) or json:find('"budget": 100', 1, true), json)
  end)

  it("are kept by the latency placement wherever brute force finds a placement that fits", function()
    local fitted, failed = 0, 0
    for seed = 1, 30 do
      local prog = P.program(seed * 11 + 2, 2 + seed % 6, {hard = 10, shape = "(10, 10)"})
      local cost = P.cost(seed)
      -- budgets around what the placements need: 400 bytes a value
      local budget = {cuda = 400 * (1 + seed % 4), cpu = 400 * (2 + seed % 3)}
      local config = config_with(budget)
      local best = P.brute(prog, config, {cost = cost, bandwidth = 1e3, score = function(_, s)
        return fits(s) and s.makespan or nil
      end})
      local ok, r = pcall(dp.schedule.place, prog.module, config, {cost = cost, bandwidth = 1e3})
      if best then
        fitted = fitted + 1
        assert.is_true(ok, "seed " .. seed .. ": " .. tostring(r))
        local s = dp.planner.schedule(r.planned, config, {cost = cost, bandwidth = 1e3})
        assert.is_true(fits(s), "seed " .. seed)
        assert.is_true(r.makespan <= best * 1.05 + 1e-9, ("seed %d: %g, brute force %g"):format(seed, r.makespan, best))
      else
        failed = failed + 1
        assert.is_false(ok, "seed " .. seed)
        local msg = tostring(r)
        assert.truthy(msg:find("memory budget: no placement found keeps", 1, true), msg)
        assert.truthy(msg:find("within its budget of", 1, true) and msg:find("value", 1, true), msg)
      end
    end
    assert.is_true(fitted > 5 and failed > 0, fitted .. " " .. failed)
  end)

  it("are kept by min_bytes wherever brute force finds a placement that fits", function()
    local function bytes_of(s)
      local n = 0
      for _, t in ipairs(s.tasks) do if t.kind == "copy" then n = n + t.bytes end end
      return n
    end
    local checked = 0
    for seed = 1, 25 do
      local prog = P.program(seed * 5 + 1, 2 + seed % 6, {hard = 20, shape = "(10, 10)"})
      local config = config_with{cuda = 400 * (1 + seed % 3), cpu = 400 * (2 + seed % 3)}
      local best = P.brute(prog, config, {score = function(_, s) return fits(s) and bytes_of(s) or nil end})
      local ok, planned = pcall(dp.passes.PlanDevices(config, {placement = "min_bytes"}), prog.module)
      if best then
        checked = checked + 1
        assert.is_true(ok, "seed " .. seed .. ": " .. tostring(planned))
        local s = dp.planner.schedule(planned, config)
        assert.is_true(fits(s), "seed " .. seed)
        assert.is_true(bytes_of(s) <= best + 1e-9, ("seed %d: %g bytes, brute force %g"):format(seed, bytes_of(s), best))
      else
        assert.is_false(ok, "seed " .. seed)
        assert.truthy(tostring(planned):find("memory budget", 1, true), tostring(planned))
      end
    end
    assert.is_true(checked > 5, tostring(checked))
  end)

  it("that nothing fits are an error naming the device, the peak and what is live", function()
    local config = config_with{cuda = 100, cpu = 300}
    local mod = dp.parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) { add(exp(%a), tanh(%a)) }]])
    for _, run in ipairs{function() return dp.schedule.place(mod, config) end,
                         function() return dp.passes.PlanDevices(config, {placement = "min_bytes"})(mod) end} do
      local ok, err = pcall(run)
      assert.is_false(ok)
      local msg = tostring(err)
      assert.truthy(msg:find("memory budget: no placement found keeps cpu within its budget of 300 bytes", 1, true), msg)
      assert.truthy(msg:find("420 bytes there at", 1, true), msg)
      assert.truthy(msg:find("exp at", 1, true) and msg:find("tanh at", 1, true), msg)
    end
  end)
end)
