-- Strict planning: dp.passes.PlanDevices(config, {resolve_conflicts = false})
-- skips phase 0b, so values nobody annotated that are demanded on two
-- devices (bench/gen.lua's branchy-naive) are a conflict error with
-- positions instead of copies; consistent modules plan as by default.
local dp = require "devplan"
local testing = require "devplan.testing"
local gen = dofile("bench/gen.lua")

local CPU, GPU = testing.PALETTE.CPU, testing.PALETTE.GPU
local config = testing.config("cuda")
local META = testing.META
local STRICT = {resolve_conflicts = false}

local function parse(text) return dp.parse(text, META, {source_name = "b.relay"}) end

local function count_copies(mod) return testing.count_calls(mod, "device_copy") end

local function lines_of(text)
  local t = {}
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do t[#t + 1] = l end
  return t
end

describe("strict planning (resolve_conflicts = false)", function()
  local naive_text = gen["branchy-naive"](120)

  it("the default resolves branchy-naive by inserting copies", function()
    local mod = parse(naive_text)
    assert.equal(0, count_copies(mod))
    local planned = testing.plan(config)(mod)
    assert.is_true(count_copies(planned) > 0)
    -- resolve_conflicts = true is the default spelled out
    local same = testing.plan(config, {resolve_conflicts = true})(mod)
    assert.is_true(dp.structural_equal(planned, same))
  end)

  it("rejects branchy-naive with a conflict naming both constraints and their positions", function()
    local mod = parse(naive_text)
    local ok, err = pcall(testing.plan(config, STRICT), mod)
    assert.is_false(ok)
    assert.equal("table", type(err))
    assert.equal("conflict", err.code)
    local d1, l1, c1, d2, l2, c2 = err.message:match(
      "must be on (%w+) because .- at b%.relay:(%d+):(%d+); it must also be on (%w+) because .- at b%.relay:(%d+):(%d+)")
    assert.truthy(d1, err.message)
    assert.are_not.equal(d1, d2)
    assert.same({"cpu", "cuda"}, d1 < d2 and {d1, d2} or {d2, d1})
    -- both positions point at on_device annotations of the text
    local lines = lines_of(naive_text)
    for _, lc in ipairs{{tonumber(l1), tonumber(c1)}, {tonumber(l2), tonumber(c2)}} do
      assert.truthy(lines[lc[1]]:sub(lc[2]):find("^on_device"), lines[lc[1]])
    end
    assert.are_not.equal(l1, l2)
    -- the error has a position, and the chain between the two in its notes
    assert.equal("b.relay", err.source)
    assert.is_true(err.line > 0 and err.col > 0)
    assert.is_true(#err.notes >= 2)
    assert.truthy(tostring(err):find("^b%.relay:%d+:%d+: conflicting virtual devices"), tostring(err))
    assert.truthy(tostring(err):find("flows through an argument of", 1, true))
  end)

  it("leaves the module and the state usable after the conflict", function()
    local mod = parse(naive_text)
    local before = tostring(mod)
    assert.has_error(function() testing.plan(config, STRICT)(mod) end)
    assert.equal(before, tostring(mod))
    assert.is_true(count_copies(testing.plan(config)(mod)) > 0)
  end)

  it("plans a consistent module exactly as the default does", function()
    for _, text in ipairs{gen.branchy(120), gen.chain(50), gen.let(50)} do
      local mod = parse(text)
      local default = testing.plan(config)(mod)
      local strict = testing.plan(config, STRICT)(mod)
      dp.assert_structural_equal(default, strict)
      assert.equal(tostring(default), tostring(strict))
    end
  end)

  it("reports a parameter demanded on two devices, which the default copies", function()
    local mod = dp.parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=meta[VirtualDevice][0]);
  %1 = on_device(exp(%a), virtual_device=meta[VirtualDevice][1]);
  (%0, %1)
}
]], META, {source_name = "p.relay"})
    local planned = tostring(testing.plan(config)(mod))
    assert.truthy(planned:find("device_copy(%a,", 1, true), planned)
    local ok, err = pcall(testing.plan(config, STRICT), mod)
    assert.is_false(ok)
    assert.equal("conflict", err.code)
    assert.truthy(err.message:find("p.relay:3:8", 1, true), err.message)
    assert.truthy(err.message:find("p.relay:4:8", 1, true), err.message)
  end)

  it("names a device_copy in a conflict once (\"device_copy at\", not \"device_copy device_copy\")", function()
    local mod = dp.parse([[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = device_copy(%a, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  %1 = device_copy(%a, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]);
  (%0, %1)
}
]], META, {source_name = "c.relay"})
    local ok, err = pcall(testing.plan(config, STRICT), mod)
    assert.is_false(ok)
    assert.equal("conflict", err.code)
    local text = tostring(err)
    assert.truthy(text:find("device_copy at c.relay:3:8", 1, true), text)
    assert.falsy(text:find("device_copy device_copy", 1, true), text)
    assert.falsy(text:find("on_device on_device", 1, true), text)
  end)

  it("checks its options and its configuration", function()
    assert.has_error(function() dp.passes.PlanDevices(config, {resolve_conflict = false}) end,
      "devplan.passes.PlanDevices: unknown option 'resolve_conflict'")
    assert.has_error(function() dp.passes.PlanDevices(config, {resolve_conflicts = "no"}) end,
      "devplan.passes.PlanDevices: option 'resolve_conflicts' must be a boolean or \"tvm\", got \"no\"")
    assert.has_error(function() dp.passes.PlanDevices(config, {resolve_conflicts = 1}) end,
      "devplan.passes.PlanDevices: option 'resolve_conflicts' must be a boolean or string, got number")
    assert.has_error(function() dp.passes.PlanDevices(config, 5) end,
      "devplan.passes.PlanDevices: options must be a table, got number")
    assert.has_error(function() dp.passes.PlanDevices(nil, STRICT) end,
      "devplan.passes.PlanDevices: a CompilationConfig expected, got nil")
    assert.has_error(function() dp.passes.PlanDevices(config, STRICT)("main") end)
  end)

  it("gives the domains with the same option (dp.planner.domains)", function()
    local passes = dp.planner
    local mod = parse(naive_text)
    local d = passes.domains(mod, config)
    local fn = d.module:get("main")
    assert.equal(GPU, d:lookup(fn))
    local ok, err = pcall(passes.domains, mod, config, STRICT)
    assert.is_false(ok)
    assert.equal("conflict", err.code)
  end)

  it("plans a deep chain strictly", function()
    local n = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
    local ty = dp.type.tensor({5, 7}, "float32")
    local a, b = dp.var("a", ty), dp.var("b", ty)
    local prev = a
    for i = 1, n do
      prev = dp.call(i % 2 == 0 and "add" or "multiply", {prev, b})
      if i % 1000 == 0 then prev = dp.call("on_device", {prev}, {virtual_device = CPU}) end
    end
    local mod = dp.IRModule{functions = {{"main", dp.fn({a, b}, prev)}}}
    local planned = testing.plan(config, STRICT)(mod)
    assert.equal(CPU, planned:get("main").virtual_device)
  end)
end)
