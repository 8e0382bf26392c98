-- PlanDevices' polymorphic option (src/planner/poly.c, issue 20): a global
-- function called with different device signatures is specialised, one
-- function per signature (@f, @f_cuda); one called with one signature
-- stays one; recursion is specialised whole per call from outside it; the
-- budget; the report; the pipeline and the command line; generated helpers
-- with no annotations, checked with devplan.evaluate (copies counted per execution).
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen_copies"
local pc = require "props_copies"
local run = require("devplan.evaluate").execute

local config = testing.config("cpu")

local program = testing.program

local function poly(text, opts)
  opts = opts or {}
  opts.polymorphic = true
  local p = dp.passes.PlanDevices(config, opts)
  local out = p(dp.parse(program(text), testing.META))
  local v, total = dp.planner.verify(out, config)
  assert.are.equal(0, total, v[1] and v[1].message)
  assert.structurally_equal(out, dp.passes.PlanDevices(config)(out))
  assert.structurally_equal(out, dp.parse(tostring(out)))
  return out, dp.planner.specialisations(out), p
end

local TWO = [[
#[version = "0.0.5"]
def @f(%x: T) -> T { add(%x, %x) }
def @main(%a {virtual_device=CPU}: T, %b {virtual_device=GPU}: T) -> T {
  %0 = @f(%a);
  %1 = @f(%b);
  %2 = on_device(multiply(%0, %0), virtual_device=CPU);
  %3 = on_device(multiply(%1, %1), virtual_device=GPU);
  add(%2, device_copy(%3, src_virtual_device=GPU, dst_virtual_device=CPU))
}
]]

describe("PlanDevices {polymorphic = true}", function()
  it("specialises a function called from the CPU and from the GPU: @f and @f_cuda", function()
    local ok, err = pcall(dp.passes.PlanDevices(config), dp.parse(program(TWO), testing.META))
    assert.is_false(ok) -- TVM's rules: one signature, a conflict
    assert.are.equal("conflict", err.code)
    local out, rep = poly(TWO)
    assert.are.equal("cpu", out:get("f").params[1].virtual_device.device_type_name)
    assert.are.equal("cuda", out:get("f_cuda").params[1].virtual_device.device_type_name)
    assert.are.equal("cuda", out:get("f_cuda").virtual_device.device_type_name)
    assert.are.same({specialised = 1, functions_added = 1, copies_before = false, copies_after = 1}, rep)
    local r = run(out, {a = 1, b = 2})
    assert.are.equal(0, r.nviolations, r.violations[1])
    assert.are.equal(1, r.copies)
  end)

  it("keeps a function called with one signature one function, and the plan TVM's", function()
    local text = [[
#[version = "0.0.5"]
def @g(%y: T) -> T { negative(%y) }
def @f(%x: T) -> T { @g(add(%x, %x)) }
def @main(%a {virtual_device=GPU}: T, %b {virtual_device=GPU}: T) -> T {
  %0 = @f(%a);
  %1 = @f(%b);
  on_device(multiply(%0, @g(%1)), virtual_device=GPU)
}
]]
    local out, rep = poly(text)
    assert.are.same({"f", "g", "main"}, (function()
      local names = {}
      for _, nf in ipairs(out:functions()) do names[#names + 1] = nf[1] end
      table.sort(names)
      return names
    end)())
    assert.are.equal(0, rep.specialised)
    assert.structurally_equal(dp.passes.PlanDevices(config)(dp.parse(program(text), testing.META)), out)
  end)

  it("specialises what a specialised function calls, and merges the calls of one signature", function()
    local text = [[
#[version = "0.0.5"]
def @g(%y: T) -> T { negative(%y) }
def @f(%x: T) -> T { @g(add(%x, %x)) }
def @main(%a: T, %b: T) -> T {
  %0 = on_device(exp(%a), virtual_device=CPU);
  %1 = @f(%0);
  %2 = on_device(tanh(%b), virtual_device=GPU);
  %3 = @f(%2);
  %6 = @f(on_device(exp(%b), virtual_device=GPU));
  %4 = on_device(multiply(%1, %1), virtual_device=CPU);
  %5 = on_device(multiply(%3, %6), virtual_device=GPU);
  on_device(add(%4, %5), virtual_device=CPU)
}
]]
    local out, rep = poly(text)
    assert.is_not_nil(out:get("g_cuda"))
    assert.is_not_nil(out:get("f_cuda"))
    assert.is_nil(out:get("f_cuda_2"))
    assert.are.equal(2, rep.specialised)
    assert.truthy(tostring(out:get("f_cuda")):find("@g_cuda(", 1, true))
  end)

  it("specialises a recursive function whole per call from outside, not per recursive call", function()
    local text = [[
#[version = "0.0.5"]
def @loop(%i: int32, %n: int32, %x: T) -> T {
  if (less(%i, %n)) { @loop(add(%i, 1), %n, add(%x, %x)) } else { %x }
}
def @main(%n {virtual_device=CPU}: int32, %a {virtual_device=CPU}: T, %b {virtual_device=GPU}: T) -> T {
  %0 = @loop(0, %n, %a);
  %1 = @loop(0, device_copy(%n, src_virtual_device=CPU, dst_virtual_device=GPU), %b);
  add(%0, device_copy(%1, src_virtual_device=GPU, dst_virtual_device=CPU))
}
]]
    local out = poly(text)
    assert.truthy(tostring(out:get("loop")):find("@loop(", 1, true))
    assert.truthy(tostring(out:get("loop_cuda")):find("@loop_cuda(", 1, true))
    for _, n in ipairs{0, 3} do
      local r = run(out, {n = n, a = 1, b = 2})
      assert.are.equal(0, r.nviolations, r.violations[1])
    end
  end)

  it("stops copying past max_specialisations: the remaining calls share the function as it is", function()
    local out = poly([[
#[version = "0.0.5"]
def @f(%x: T) -> T { add(%x, %x) }
def @main(%a {virtual_device=GPU}: T, %b {virtual_device=GPU}: T) -> T {
  add(@f(%a), @f(%b))
}
]], {max_specialisations = 1})
    assert.is_not_nil(out:get("f"))
    assert.has_error(function() dp.passes.PlanDevices(config, {max_specialisations = 2}) end,
      "devplan.passes.PlanDevices: option 'max_specialisations' needs polymorphic = true")
    assert.has_error(function() dp.passes.PlanDevices(config, {polymorphic = true, max_specialisations = 0}) end)
  end)

  it("is plan_devices(polymorphic=true) and --polymorphic, which reports what it did", function()
    local p = dp.pipeline.build("plan_devices(default=cpu,polymorphic=true),move_copies,verify")
    local out = p(dp.parse(program(TWO), testing.META))
    assert.is_not_nil(out:get("f_cuda"))
    local path = testing.temp_file(program(TWO), ".relay")
    local f = io.popen("bin/devplan plan " .. path .. " --default cpu --polymorphic --short-devices 2>&1")
    local text = f:read("a")
    f:close()
    assert.truthy(text:find("def @f_cuda(%x {virtual_device=@cuda}", 1, true), text)
    assert.truthy(text:find("// polymorphic: 1 function specialised (1 added); 1 device_copy (a conflict without it)",
      1, true), text)
  end)

  it("plans generated helpers called on several devices (300 programs): verified, fixed points, "
    .. "their values, never more copies than TVM's plan", function()
    local plain, planned = 0, 0
    for seed = 1, 300 do
      local text, info = gen.program(seed, {free_signatures = true})
      local failure, st = pc.check_poly(text, info.inputs)
      assert.is_nil(failure, failure and ("seed " .. seed .. ": " .. failure.property .. ": " .. failure.detail))
      plain, planned = plain + st.plain, planned + st.poly
    end
    assert.is_true(planned > plain + 30, planned .. " polymorphic plans, " .. plain .. " by TVM's rules")
  end)
end)

describe("PlanDevices {polymorphic = true} under allocation failures", function()
  it("raises out of memory, leaks nothing and gives the same answer after", function()
    local mod = dp.parse(program(TWO), testing.META)
    local p = dp.passes.PlanDevices(config, {polymorphic = true})
    local want = tostring(p(mod))
    local failures = testing.fail_each_allocation(function() return p(mod) end, want)
    assert.is_true(failures > 200, failures .. " allocations")
  end)
end)
