-- PlanDevices' numbering keeps each node's annotation in a byte
-- (src/planner/index.c, dp__ann in planner.h): an operator's rule, an
-- on_device's device below 63 with its two flags, a device_copy's index
-- below 63. Anything wider (the 64th copy on, a device past 62) is kept
-- beside, by id. These plans read such annotations: each must be the one
-- written (a wrong one puts a copy's ends or an on_device's device
-- elsewhere: a conflict, or a plan that verify rejects).
local dp = require "devplan"
local testing = require "devplan.testing"
local evaluate = require "devplan.evaluate"

local T = "Tensor[(5, 7), float32]"

local function count(text, pattern)
  local n = 0
  for _ in text:gmatch(pattern) do n = n + 1 end
  return n
end

describe("PlanDevices with annotations wider than a byte", function()
  local config = testing.config("cuda")

  it("reads every device_copy's ends past the 63rd copy", function()
    local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"
    local lines = {'#[version = "0.0.5"]', "def @main(%x0 {virtual_device=" .. CPU .. "}: " .. T .. ") {"}
    local n = 80
    for i = 1, n do -- (copies alternate: CPU to GPU, then back)
      local a, b = i % 2 == 1 and CPU or GPU, i % 2 == 1 and GPU or CPU
      lines[#lines + 1] = ("  let %%x%d = device_copy(add(%%x%d, %%x%d), src_virtual_device=%s, dst_virtual_device=%s);")
        :format(i, i - 1, i - 1, a, b)
    end
    lines[#lines + 1] = "  %x" .. n .. "\n}"
    local text = table.concat(lines, "\n")
    local planned = dp.passes.PlanDevices(config)(dp.parse(text, testing.META))
    local r = evaluate.execute(planned, {x0 = 1})
    assert.are.equal(0, r.nviolations, r.violations[1])
    assert.are.equal(n, r.copies)
    assert.are.same({}, dp.planner.verify(planned, config, {input = dp.parse(text, testing.META)}))
  end)

  it("reads an on_device's device past the 62nd", function()
    local devs, n = {testing.PALETTE.CPU}, 70
    for k = 1, n do -- (70 devices: the GPU in 70 memory scopes)
      devs[#devs + 1] = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0,
                                         target = testing.TARGET.GPU, memory_scope = "s" .. k}
    end
    local meta = {VirtualDevice = devs}
    local lines = {'#[version = "0.0.5"]', "def @main(%y0 {virtual_device=meta[VirtualDevice][0]}: " .. T .. ") {"}
    for k = 1, n do
      local c = ("device_copy(%%y0, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][%d])")
        :format(k)
      lines[#lines + 1] = ("  let %%y%d = on_device(add(%s, %s), virtual_device=meta[VirtualDevice][%d]);"):format(k, c, c, k)
    end
    lines[#lines + 1] = "  %y" .. n .. "\n}"
    local text = table.concat(lines, "\n")
    local planned = dp.passes.PlanDevices(config)(dp.parse(text, meta))
    assert.are.same({}, dp.planner.verify(planned, config, {input = dp.parse(text, meta)}))
    local out = dp.astext(planned)
    assert.are.equal(2 * n, count(out, "device_copy%("))
    for k = 1, n do -- each let's value on its own device
      assert.truthy(out:find(("let %%%%y%d = on_device%%([^\n]*memory_scope=\"s%d\""):format(k, k)), k)
    end
  end)
end)
