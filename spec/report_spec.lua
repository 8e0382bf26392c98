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
    assert.same({calls = 2, copies = 1, bytes_copied = 140, bytes_resident = by.cpu.bytes + by.cuda.bytes,
                 copies_too_large = 0, too_large = 0}, r.totals)
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
    local mod = dp.parse_file(dp.root .. "/models/resnet18.relay")
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

  it("counts each value once: partitioning into functions changes no count", function()
    local mod = dp.parse_file(dp.root .. "/models/resnet18.relay")
    local planned = dp.pipeline.build("annotate(nn.conv2d=cuda,nn.dense=cuda),plan_devices", {config = config})(mod)
    local parted = dp.passes.PartitionByVirtualDevice{}(planned)
    assert.is_true(#parted:functions() > 1)
    local a, b = dp.planner.report(planned, config), dp.planner.report(parted, config)
    assert.same(a.totals, b.totals)
    assert.equal(82661096, a.devices[1].bytes) -- 78.8 MiB on the GPU, before and after
    for i, d in ipairs(a.devices) do
      assert.same({d.name, d.calls, d.bytes}, {b.devices[i].name, b.devices[i].calls, b.devices[i].bytes})
    end
  end)

  it("counts a function's parameters where its caller made them, and an entry function's as inputs", function()
    local mod = dp.parse([[
#[version = "0.0.5"]
def @twice(%x: Tensor[(10), float32]) {
  add(%x, %x)
}
def @main(%a: Tensor[(10), float32]) {
  %0 = @twice(%a);
  @twice(%0)
}
]])
    local r = dp.planner.report(dp.passes.PlanDevices(config)(mod), config)
    -- %a, and the two adds: the calls of @twice are neither calls nor values
    assert.same({calls = 1, bytes = 80}, {calls = r.devices[1].calls, bytes = r.devices[1].bytes})
  end)
end)

describe("byte counts", function()
  local report = require "devplan.report"
  local function ty(text) return dp.parse_type(text) end

  it("are exact up to 2^63 - 1 and say 'too large' past it, never wrapping", function()
    assert.equal(4000, report.bytes_of(ty("Tensor[(1, 1000), float32]")))
    assert.equal(0, report.bytes_of(ty("Tensor[(0, 4611686018427387904, 8), float32]")))
    assert.equal(math.maxinteger, report.bytes_of(ty("Tensor[(9223372036854775807), int8]")))
    assert.same({nil, "too large"}, {report.bytes_of(ty("Tensor[(4000000000, 4000000000), float32]"))})
    assert.same({nil, "too large"}, {report.bytes_of(ty("Tensor[(4611686018427387904), int16]"))})
    -- a tuple whose fields fit but whose sum does not
    assert.same({nil, "too large"},
      {report.bytes_of(ty("(Tensor[(9223372036854775807), int8], Tensor[(1), int8])"))})
    assert.same({nil, "unknown"}, {report.bytes_of(ty("(Tensor[(4000000000, 4000000000), float32], Tensor[(?), int8])"))})
    assert.equal("4,000 bytes", report.bytes_text(ty("Tensor[(1, 1000), float32]")))
    assert.equal("more bytes than a 64-bit count holds",
                 report.bytes_text(ty("Tensor[(4000000000, 4000000000), float32]")))
  end)

  local BIG = [[
#[version = "0.0.5"]
def @main(%x: Tensor[(4000000000, 4000000000), float32], %y: Tensor[(10), float32]) {
  %0 = add(%x, %x);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1]);
  %2 = nn.relu(%1);
  (%2, negative(%y))
}
]]

  it("in the report: values too large to count are counted apart, not summed", function()
    local planned = dp.passes.PlanDevices(config)(dp.parse(BIG, testing.META))
    local r = dp.planner.report(planned, config)
    local by = {}
    for _, d in ipairs(r.devices) do by[d.name] = d end
    -- %x (a parameter read on the GPU) and add on the GPU; the copy's result and
    -- relu on the CPU, where %y and negative are counted
    assert.same({bytes = 0, too_large = 2}, {bytes = by.cuda.bytes, too_large = by.cuda.too_large})
    assert.same({bytes = 80, too_large = 2}, {bytes = by.cpu.bytes, too_large = by.cpu.too_large})
    assert.same({nil, "too large"}, {r.copies[1].bytes, r.copies[1].size})
    assert.same({1, 0, 80, 4}, {r.totals.copies_too_large, r.totals.bytes_copied, r.totals.bytes_resident,
                                r.totals.too_large})
    local text = r:text()
    assert.truthy(text:find("1 device_copy, 0 bytes + 1 too large to count:", 1, true), text)
    assert.truthy(text:find("Tensor[(4000000000, 4000000000), float32]  more bytes than a 64-bit count holds", 1, true), text)
    assert.truthy(text:find("(left out, too large to count: 1 copy, 4 values)", 1, true), text)
    assert.falsy(text:find("-%d"), text) -- no negative number anywhere
    local decoded = require("dkjson").decode(r:json())
    assert.equal("too large", decoded.copies[1].size)
    assert.equal(4, decoded.totals.too_large)
  end)

  it("in the report: sums that would pass 2^63 - 1 stop before, the rest counted apart", function()
    local planned = dp.passes.PlanDevices(config)(dp.parse([[
#[version = "0.0.5"]
def @main(%x: Tensor[(4611686018427387904), int8], %y: Tensor[(4611686018427387904), int8]) {
  (%x, %y)
}
]]))
    local r = dp.planner.report(planned, config)
    assert.same({4611686018427387904, 1}, {r.devices[1].bytes, r.devices[1].too_large})
    assert.same({4611686018427387904, 1}, {r.totals.bytes_resident, r.totals.too_large})
  end)

  it("in placement by cost: a value too large to weigh is an error at its position", function()
    local mod = dp.parse(BIG, testing.META, {source_name = "big.relay"})
    local ok, err = pcall(dp.passes.PlanDevices(config, {placement = "min_bytes"}), mod)
    assert.is_false(ok)
    assert.equal("big.relay", err.source)
    assert.same({2, 11}, {err.line, err.col})
    assert.truthy(err.message:find("placement by cost: a value of type Tensor[(4000000000, 4000000000), float32] "
      .. "has more bytes than a cost can count (2^61)", 1, true), err.message)
    -- large values that fit one by one but not together
    local together = dp.parse(BIG:gsub("4000000000, 4000000000", "600000000, 600000000"), testing.META)
    ok, err = pcall(dp.passes.PlanDevices(config, {placement = "min_bytes"}), together)
    assert.is_false(ok)
    assert.truthy(err.message:find("the module's values have more bytes together than a cost can count", 1, true),
                  err.message)
    -- under TVM's rules nothing is weighed: the module plans
    assert.is_true(dp.is_module(dp.passes.PlanDevices(config)(mod)))
  end)
end)
