-- The verifier from the command line: `plan --verify` checks the plan it made
-- against the file's annotations; `opt -p verify(planned=true)` checks a
-- module that claims to be planned, and a violation is an error with its
-- position and exit status 1.
local t = require "devplan.testing"

local ANNOTATED = t.shared_dir .. "/models/resnet18.annotated.relay"

-- A copy from cuda to cuda: wrong in any plan.
local WRONG = [[
def @main(%a {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][1]) {
  %0 = device_copy(%a, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][1]);
  negative(%0)
}
]]

describe("devplan plan --verify", function()
  it("plans, verifies and prints a model", function()
    local status, out, err = t.run_devplan("plan " .. ANNOTATED .. " --verify --report text")
    assert.equal(0, status, err)
    assert.truthy(out:find("1 copy, 4,000 bytes copied", 1, true), out)
  end)

  it("lists --verify in its help", function()
    local status, out = t.run_devplan("plan --help")
    assert.equal(0, status)
    assert.truthy(out:find("--verify", 1, true))
  end)
end)

describe("devplan opt -p verify(planned=true)", function()
  it("rejects a wrong plan with the position of the violation", function()
    local path = t.temp_file(WRONG, ".relay")
    local status, _, err = t.run_devplan("opt " .. path .. " -p 'verify(planned=true)' --target llvm --target cuda --reproducer /dev/null")
    assert.equal(1, status)
    assert.truthy(err:find(":2:8:", 1, true), err)
    assert.truthy(err:find("a copy to the same device", 1, true), err)
  end)

  it("accepts a right plan", function()
    local status, _, err = t.run_devplan("opt " .. t.shared_dir .. "/models/resnet18.planned.relay"
      .. " -p 'verify(planned=true)' --target llvm --target cuda --default cpu")
    assert.equal(0, status, err)
  end)
end)
