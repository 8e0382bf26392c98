-- The BYOC flow of docs/byoc.md, as a user runs it: examples/byoc.lua from
-- Lua, and the command line with the files of examples/byoc/.
local t = require "devplan.testing"

describe("the BYOC example", function()
  it("runs from Lua: a toolchain kind, rules, plan, partition, regions", function()
    local code, out, err = t.run_devplan("examples/byoc.lua")
    assert.equal(0, code, err)
    assert.truthy(out:find('toolchain device: VirtualDevice(device_type=ext_dev, target="ccompiler -opt_level=3 -host=llvm")', 1, true), out)
    assert.truthy(out:find("@main_ccompiler_0 runs on ext_dev (ccompiler): nn.dense, nn.bias_add, nn.relu; 3 inputs, 1 output", 1, true), out)
    assert.truthy(out:find("@main_ccompiler_1 runs on ext_dev (ccompiler): add, multiply; 3 inputs, 1 output", 1, true), out)
    -- the int32 add fails the dtype checker: the host's
    assert.truthy(out:find("@main_llvm_1 runs on cpu (llvm): add, cast; 1 input, 1 output", 1, true), out)
  end)

  local CLI = "plan examples/byoc/model.relay --load examples/byoc/ccompiler.lua --target llvm"
    .. " --target 'ccompiler -opt_level=3' --default cpu --rules examples/byoc/support.lua --placement min_bytes"

  it("runs from the command line, as docs/byoc.md shows it", function()
    local code, out, err = t.run_devplan(CLI .. " --partition --report text")
    assert.equal(0, code, err)
    assert.truthy(out:find("4 regions hoisted by PartitionByVirtualDevice:", 1, true), out)
    assert.truthy(out:find("@main_ccompiler_0  from @main, runs on VirtualDevice(device_type=ext_dev, virtual_device_id=0, "
      .. 'target="ccompiler -opt_level=3 -host=llvm")\n    computes: nn.dense at 4:8, nn.bias_add at 5:8, nn.relu at 6:8\n'
      .. "    inputs:   %x, %w, %b\n    outputs:  nn.relu at 6:8", 1, true), out)
    code, out, err = t.run_devplan(CLI .. " --partition")
    assert.equal(0, code, err)
    assert.truthy(out:find("def @main_ccompiler_1(", 1, true), out)
    -- the same support table run twice changes nothing
    code, out, err = t.run_devplan(CLI .. " --rules examples/byoc/support.lua --partition --report text")
    assert.equal(0, code, err)
    assert.truthy(out:find("4 regions hoisted", 1, true), out)
  end)

  it("needs the kind loaded before --target names it", function()
    local code, _, err = t.run_devplan("plan examples/byoc/model.relay --target llvm --target ccompiler --default cpu")
    assert.equal(1, code)
    assert.truthy(err:find("unknown target kind 'ccompiler'", 1, true), err)
  end)
end)
