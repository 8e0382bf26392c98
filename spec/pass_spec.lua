-- Passes are values (lua/devplan/pass.lua): a name, options, a function.
local dp = require "devplan"

describe("dp.pass", function()
  local mod = dp.parse("def @main(%x: Tensor[(2), float32]) { negative(%x) }")

  it("runs its function on a module and passes a context", function()
    local seen
    local p = dp.pass("count", function(m, ctx) seen = ctx; return m end)
    assert.equal(mod, p(mod))
    assert.equal("devplan.PassContext", getmetatable(seen).__name) -- a fresh one
    local ctx = dp.PassContext{options = {answer = 42}}
    p(mod, ctx)
    assert.equal(ctx, seen)
    assert.equal(42, seen.options.answer)
    assert.has_error(function() p(mod, {answer = 42}) end, "devplan.pass: 'count' runs in a dp.PassContext, got a table")
  end)

  it("p.run is its function called directly: arguments checked, a fresh context when left out", function()
    local seen
    local p = dp.pass("direct", function(m, ctx) seen = ctx; return m end)
    assert.equal(mod, p.run(mod))
    assert.equal("devplan.PassContext", getmetatable(seen).__name)
    assert.has_error(function() p.run(0 / 0) end, "devplan.pass: direct.run(mod, ctx?): mod must be an IRModule, got number")
    assert.has_error(function() p.run(mod, 5) end,
      "devplan.pass: direct.run(mod, ctx?): ctx must be a dp.PassContext, got number")
    -- built-in passes read their context: called directly they get one
    for _, q in ipairs{dp.Sequential{p}, dp.passes.Verify(), dp.passes.PartitionByVirtualDevice()} do
      assert.is_true(dp.is_module(q.run(mod)), tostring(q))
      assert.has_error(function() q.run(mod, {}) end)
    end
  end)

  it("prints its name and options in key order", function()
    assert.equal("p", tostring(dp.pass("p", function(m) return m end)))
    assert.equal("p(a=1, b=x, c=true)",
                 tostring(dp.pass("p", function(m) return m end, {c = true, b = "x", a = 1})))
  end)

  it("rejects a bad name, function or options", function()
    assert.has_error(function() dp.pass(nil, function() end) end)
    assert.has_error(function() dp.pass("", function() end) end)
    assert.has_error(function() dp.pass("p", 3) end)
    assert.has_error(function() dp.pass("p", function() end, 5) end)
  end)

  it("is what the built-in passes are", function()
    local config = dp.CompilationConfig{targets = {dp.Target("llvm")}}
    local plan = dp.passes.PlanDevices(config, {resolve_conflicts = false})
    assert.equal("PlanDevices", plan.name)
    assert.equal("PlanDevices(resolve_conflicts=false)", tostring(plan))
    assert.is_true(dp.is_module(plan(mod)))
    local annotate = dp.passes.AnnotateVirtualDevices{negative = function() return nil end}
    assert.equal("AnnotateVirtualDevices", annotate.name)
    assert.is_true(dp.structural_equal(mod, annotate(mod)))
  end)
end)

describe("require 'devplan'", function()
  it("is an ordinary Lua module over devplan.core", function()
    local core = require "devplan.core"
    assert.equal(core.Target, dp.Target)
    assert.equal(core.planner.analyze, dp.planner.analyze)
    assert.is_function(dp.planner.domains)
    assert.is_nil(rawget(_G, "devplan"))
  end)
end)
