-- dp.planner.report (lua/devplan/report.lua): per device the calls and the
-- bytes resident, every device_copy with its value, devices, type and
-- bytes, totals; as a table, text and JSON.
local dp = require "devplan"
local testing = require "devplan.testing"

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}

local TWO = [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(4), int64]) {
  %0 = exp(%a);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1]);
  %2 = negative(%1);
  (%2, %b)
}
]]

describe("dp.planner.report", function()
  it("counts calls and resident bytes per device, and lists each copy with its bytes", function()
    local planned = dp.passes.PlanDevices(config)(dp.parse(TWO, testing.META))
    local r = dp.planner.report(planned, config)
    assert.equal(2, #r.devices)
    local by = {}
    for _, d in ipairs(r.devices) do by[d.name] = d end
    -- exp on the GPU; negative on the CPU (the default), after a copy
    assert.equal(1, by.cuda.calls)
    assert.equal(1, by.cpu.calls)
    assert.equal(5 * 7 * 4 * 2, by.cuda.bytes)       -- %a (used there) and exp's result
    assert.equal(4 * 8 + 5 * 7 * 4 * 2, by.cpu.bytes) -- %b, the copy's result and negative's
    assert.equal(1, #r.copies)
    local c = r.copies[1]
    assert.same({"main", "cuda", "cpu", "Tensor[(5, 7), float32]", 140},
                {c.fn, c.src, c.dst, c.type, c.bytes})
    local text, names = dp.astext(planned, {names = true})
    assert.equal("device_copy", names.main[c.name].callee.name)
    assert.equal("exp", names.main[c.value].callee.name)
    assert.same({calls = 2, copies = 1, bytes_copied = 140, bytes_resident = by.cpu.bytes + by.cuda.bytes}, r.totals)
    assert.truthy(text)
  end)

  it("prints as a table and as JSON", function()
    local planned = dp.passes.PlanDevices(config)(dp.parse(TWO, testing.META))
    local r = dp.planner.report(planned, config)
    local text = tostring(r)
    assert.equal(text, r:text())
    assert.truthy(text:find("\n@cuda%s+1%s+"), text)
    assert.truthy(text:find("1 device_copy, 140 bytes:\n  @main %%%d+ = copy of %%%d+  @cuda %-> @cpu  Tensor%[%(5, 7%), float32%]  140 bytes"), text)
    assert.truthy(text:find("total: 2 calls, 1 copy, 140 bytes copied", 1, true), text)
    local decoded = require("dkjson").decode(r:json())
    assert.equal(140, decoded.copies[1].bytes)
    assert.equal(2, #decoded.devices)
    assert.equal(r:json(), r:json()) -- deterministic
  end)

  it("places the convolutions of resnet18 on the GPU: one copy of the 4,000-byte logits", function()
    local mod = dp.parse_file(testing.shared_dir .. "/models/resnet18.relay")
    local planned = dp.pipeline.build("annotate(nn.conv2d=cuda,nn.dense=cuda),plan_devices", {config = config})(mod)
    local r = dp.planner.report(planned, config)
    assert.equal(1, r.totals.copies)
    assert.equal(4000, r.totals.bytes_copied)
    assert.equal("Tensor[(1, 1000), float32]", r.copies[1].type)
    assert.equal(72, r.totals.calls) -- every operator call of the model, none of the annotations
  end)

  it("counts values of unknown size apart, and rejects what is not a module", function()
    local mod = dp.parse([[
def @main(%a: Tensor[(?, 7), float32]) {
  negative(%a)
}]])
    local r = dp.planner.report(dp.passes.PlanDevices(config)(mod), config)
    assert.equal(2, r.devices[1].unknown)
    assert.equal(0, r.devices[1].bytes)
    assert.has_error(function() dp.planner.report(3) end)
  end)

  it("dp.planner.why says why a copy was inserted, in terms of the input", function()
    local input = dp.parse(TWO, testing.META, {source_name = "two.relay"})
    local planned = dp.passes.PlanDevices(config)(input)
    local copy, wrote
    dp.visit(planned, function(e)
      if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "device_copy" then copy = e end
      if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "on_device" and e.attrs.constrain_result then
        wrote = e
      end
    end)
    local text = dp.planner.why(planned, copy, {input = input, config = config, name = "%3"})
    assert.truthy(text:find("^%%3 is a device_copy PlanDevices inserted: it copies a Tensor%[%(5, 7%), float32%] %(140 bytes%) from @cuda to @cpu"), text)
    assert.truthy(text:find("\n  the value is made on @cuda:\n    exp at two.relay:3:8 is on cuda because of the annotation on_device at two.relay:4:8"), text)
    assert.truthy(text:find("\n  and used on @cpu:\n    negative at two.relay:5:8 is on cpu because of the default device %(configuration%)"), text)
    -- without the input: the planned module's own reasons
    assert.truthy(dp.planner.why(planned, copy, {config = config}):find("^it is a device_copy PlanDevices inserted"))
    assert.truthy(dp.planner.why(planned, wrote, {input = input, config = config}):find("^it is an on_device PlanDevices wrote"))
    assert.has_error(function() dp.planner.why(planned, copy, {inptu = input}) end)
    assert.has_error(function() dp.planner.why(3, copy) end)
  end)
end)
