-- The latency placement, soft annotations and memory budgets on the command
-- line: --placement latency with --costs, --annotate OP=DEVICE~W, --memory
-- (lua/devplan/cli.lua, pipeline.lua).
local dp = require "devplan"
local testing = require "devplan.testing"

local MODEL = dp.root .. "/models/squeezenet.relay"
local ARM = dp.root .. "/examples/tophub/arm_cpu_v0.08.log"
local MALI = dp.root .. "/examples/tophub/mali_v0.06.log"
local RK = "--target llvm --target 'opencl -device=mali'"

local function q(s) return "'" .. s .. "'" end

local CHAIN = [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = negative(%a);
  %1 = exp(%0);
  tanh(%1)
}
]]

describe("devplan plan --placement latency", function()
  after_each(testing.remove_temp_files)

  it("places squeezenet for the RK3399 costs and reports the schedule it optimised", function()
    local status, out, err = testing.run_devplan("plan " .. q(MODEL) .. " " .. RK .. " --placement latency --costs "
      .. q(ARM) .. " --costs " .. q(MALI) .. " --board rk3399 --report json")
    assert.equal(0, status, err)
    local r = require("dkjson").decode(out)
    local config = dp.CompilationConfig{targets = {"llvm", "opencl -device=mali"}}
    local costs = dp.costs.load({ARM, MALI}, {board = "rk3399"})
    local placed = dp.schedule.place(dp.parse_file(MODEL), config, {cost = costs})
    assert.is_true(math.abs(r.schedule.makespan - placed.makespan) < 1e-12, r.schedule.makespan .. " " .. placed.makespan)
    assert.is_true(#r.schedule.memory >= 2)
    for _, m in ipairs(r.schedule.memory) do assert.is_true(m.peak > 0) end
  end)

  it("takes soft annotations (OP=DEVICE~W) and memory budgets", function()
    local file = testing.temp_file(CHAIN, ".relay")
    local costs = testing.temp_file("cost * cpu 1\ncost * cuda 3\n", ".costs")
    local function exp_device(args)
      local status, out, err = testing.run_devplan("plan " .. file .. " --placement latency --costs " .. costs
        .. " --bandwidth 1e3 " .. args .. " --report text")
      assert.equal(0, status, err)
      return out:match("@(%a+)%s+exp ") or out:match("@(%a+)%s+%S+%s+exp"), out
    end
    -- keeping exp on cuda costs 2.28 s: a weight below that is broken, one above kept
    local status, out = testing.run_devplan("plan " .. file .. " --placement latency --costs " .. costs
      .. " --bandwidth 1e3 --annotate exp=cuda~2 -o -")
    assert.equal(0, status)
    assert.falsy(out:find("cuda", 1, true), out)
    status, out = testing.run_devplan("plan " .. file .. " --placement latency --costs " .. costs
      .. " --bandwidth 1e3 --annotate exp=cuda~3 -o -")
    assert.equal(0, status)
    assert.truthy(out:find("device_copy", 1, true), out)
    -- a budget of 100 bytes on cuda: exp cannot stay there
    status, out = testing.run_devplan("plan " .. file .. " --placement latency --costs " .. costs
      .. " --bandwidth 1e3 --annotate exp=cuda~3 --memory cuda=100 -o -")
    assert.equal(0, status)
    assert.falsy(out:find("cuda", 1, true), out)
    -- the report shows each device's peak
    local _, text = exp_device("--memory cuda=2GiB,cpu=1KiB")
    assert.truthy(text:find("memory @cpu%s+peak 280 bytes at .- %(budget 1 KiB%)"), text)
  end)

  it("keeps min_bytes within the budgets and says when nothing fits", function()
    local file = testing.temp_file(CHAIN, ".relay")
    local status, out, err = testing.run_devplan("plan " .. file .. " --placement min_bytes --memory cpu=100,cuda=200")
    assert.equal(1, status, out)
    assert.truthy(err:find("memory budget: no placement found keeps cuda within its budget of 200 bytes", 1, true), err)
    status, out, err = testing.run_devplan("plan " .. file .. " --placement min_bytes --annotate exp=cuda~1000 --memory cuda=100")
    assert.equal(0, status, err)
    assert.falsy(out:find("cuda", 1, true), out)
  end)

  it("says what is wrong with its options", function()
    local file = testing.temp_file(CHAIN, ".relay")
    for _, case in ipairs{
      {"--annotate exp=cuda~x", "the weight after ~ must be a number >= 0"},
      {"--annotate exp=cuda~-1", "the weight after ~ must be a number >= 0"},
      {"--memory cuda", "--memory: 'cuda' is not DEVTYPE=SIZE"},
      {"--memory cuda=lots", "the memory budget of cuda must be a number of bytes or a size"},
      {"--memory cdua=1GB", "did you mean 'cuda'"},
      {"--placement fastest", "latency"},
      {"--placement latency --polymorphic", "--polymorphic goes with --placement tvm or min_bytes, not latency"},
    } do
      local status, _, err = testing.run_devplan("plan " .. file .. " " .. case[1])
      assert.equal(1, status, case[1])
      assert.truthy(err:find(case[2], 1, true), case[1] .. ": " .. err)
    end
  end)

  it("recomputes on the latency placement's answer (--recompute)", function()
    local file = testing.temp_file([[
def @main(%x: Tensor[(5, 7), float32], %y: Tensor[(5, 7), float32]) {
  %0 = ones(shape=[5, 7], dtype="float32");
  %1 = on_device(add(%x, %0), virtual_device=VirtualDevice(device_type=cpu));
  %2 = on_device(multiply(%y, %0), virtual_device=VirtualDevice(device_type=cuda));
  add(%1, %2)
}]], ".relay")
    local status, out, err = testing.run_devplan("plan " .. file .. " --placement latency --recompute")
    assert.equal(0, status, err)
    assert.truthy(out:find("// recompute: 1 copy computed again on the destination:", 1, true), out)
    assert.truthy(out:find("ones at 2:8 in @main (1 call) on cuda instead of copied from cpu", 1, true), out)
  end)
end)
