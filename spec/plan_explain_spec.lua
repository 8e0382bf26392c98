-- Explanations that say why an annotation was written: AnnotateVirtualDevices'
-- candidate decisions reach dp.planner.explain, d:explain and dp.planner.why.
local dp = require "devplan"
local t = require "devplan.testing"

local P = t.PALETTE
local CONFIG = t.config("cpu")

local find_call = t.find_call

describe("explanations of annotations with a reason", function()
  local text = [[def @main(%a: Tensor[(5, 7), float32], %b {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32]) {
  %0 = negative(%a); %1 = add(%0, %b); %2 = on_device(%1, virtual_device=meta[VirtualDevice][0], constrain_result=True); exp(%2) }]]
  local npu = dp.VirtualDevice{device_type = "ext_dev"}
  local annotate = dp.passes.AnnotateVirtualDevices({negative = function() return {npu, P.GPU, P.CPU} end},
                                                     {config = CONFIG})

  it("dp.planner.explain of the annotated module says which candidate won and why", function()
    local out = annotate(dp.parse(text, t.META))
    local neg = find_call(out, "negative")
    local ex = dp.planner.explain(out, neg, CONFIG)
    assert.equal("on_device", ex.rule)
    assert.equal("call", ex.constraint.kind)
    assert.equal("on_device", ex.constraint.callee.name)
    assert.truthy(ex.reason:find("^AnnotateVirtualDevices chose it: negative at 2:8 runs on"), ex.reason)
    assert.truthy(ex.reason:find("candidate 3 of 3", 1, true), ex.reason)
    assert.truthy(ex.reason:find("no target for device type ext_dev", 1, true), ex.reason)
    assert.truthy(ex.text:find("because of the annotation on_device", 1, true), ex.text)
    assert.truthy(ex.text:find(ex.reason, 1, true), ex.text)
    -- the domains say the same
    local d = dp.planner.domains(out, CONFIG)
    assert.equal(ex.reason, d:explain(neg).reason)
  end)

  it("and so does dp.planner.why on the planned module, told in terms of its input", function()
    local out = annotate(dp.parse(text, t.META))
    local planned = dp.passes.PlanDevices(CONFIG)(out)
    local why = dp.planner.why(planned, find_call(planned, "negative"), {input = out, config = CONFIG})
    assert.truthy(why:find("AnnotateVirtualDevices chose it: negative at 2:8", 1, true), why)
  end)

  it("an annotation without a reason gives none", function()
    local m = dp.parse(text, t.META)
    local ex = dp.planner.explain(m, find_call(m, "add"), CONFIG)
    assert.equal("on_device", ex.rule)
    assert.is_nil(ex.reason)
    assert.falsy(ex.text:find("AnnotateVirtualDevices", 1, true))
  end)

  it("a reason is kept as long as its module, whatever the collector does", function()
    local out = annotate(dp.parse(text, t.META))
    collectgarbage(); collectgarbage()
    local ex = dp.planner.explain(out, find_call(out, "negative"), CONFIG)
    assert.truthy(ex.reason)
  end)

  it("dp.planner.reason checks its arguments", function()
    local m = dp.parse(text, t.META)
    assert.has_error(function() dp.planner.reason(m, m, "x") end)
    assert.has_error(function() dp.planner.reason(m, find_call(m, "add"), nil) end)
    dp.planner.reason(m, find_call(m, "add"), "a script said so")
    local ex = dp.planner.explain(m, find_call(m, "add"), CONFIG)
    -- (add's constraint is the on_device around it, not add itself)
    assert.is_nil(ex.reason)
  end)
end)
