-- dp.costs (lua/devplan/costs.lua, src/planner/schedule_cost.c): the
-- default model's estimates and formula, the plain cost format (matching,
-- precedence, errors with positions, round trip), TopHub logs read directly
-- (boards, the RK3399 records matched against the models' convolutions and
-- dense layers), merging.
local dp = require "devplan"
local testing = require "devplan.testing"

local shared = testing.shared_dir
local ARM = shared .. "/bench/costs/arm_cpu_v0.08.log"
local MALI = shared .. "/bench/costs/mali_v0.06.log"

local cpu = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}
local cuda = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
local opencl = dp.VirtualDevice{device_type = "opencl", virtual_device_id = 0}

local function first_call(mod, op)
  local found
  dp.visit(mod, function(e)
    if not found and e.kind == "call" and e.callee.kind == "op" and e.callee.name == op then found = e end
  end)
  return assert(found, op)
end

local function expr(text)
  local mod = dp.parse('#[version = "0.0.5"]\n' .. text)
  return mod:get("main").body
end

describe("the default model", function()
  it("estimates flops and bytes from operators, attributes and types", function()
    local conv = expr([[def @main(%x: Tensor[(1, 3, 224, 224), float32], %w: Tensor[(64, 3, 7, 7), float32]) {
      nn.conv2d(%x, %w, strides=[2, 2], padding=[3, 3, 3, 3], kernel_size=[7, 7], channels=64) }]])
    -- 2 * (1*64*112*112) outputs * (3*7*7) multiply-adds each
    assert.equal(2 * 64 * 112 * 112 * 147, dp.costs.flops(conv))
    assert.equal((3 * 224 * 224 + 64 * 3 * 7 * 7 + 64 * 112 * 112) * 4, dp.costs.bytes(conv))
    local dw = expr([[def @main(%x: Tensor[(1, 32, 56, 56), float32], %w: Tensor[(32, 1, 3, 3), float32]) {
      nn.conv2d(%x, %w, padding=[1, 1, 1, 1], groups=32, kernel_size=[3, 3], channels=32) }]])
    assert.equal(2 * 32 * 56 * 56 * 9, dp.costs.flops(dw))
    local dense = expr([[def @main(%x: Tensor[(1, 512), float32], %w: Tensor[(1000, 512), float32]) {
      nn.dense(%x, %w) }]])
    assert.equal(2 * 1000 * 512, dp.costs.flops(dense))
    local pool = expr([[def @main(%x: Tensor[(1, 64, 112, 112), float32]) {
      nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]) }]])
    assert.equal(64 * 56 * 56 * 9, dp.costs.flops(pool))
    local add = expr([[def @main(%x: Tensor[(5, 7), float32]) { add(%x, %x) }]])
    assert.equal(35, dp.costs.flops(add))
    assert.equal(3 * 140, dp.costs.bytes(add))
    local fused = expr([[def @main(%x: Tensor[(5, 7), float32]) {
      %0 = fn (%p: Tensor[(5, 7), float32], Primitive=1) { add(negative(%p), %p) };
      %0(%x) }]])
    assert.equal(70, dp.costs.flops(fused))
  end)

  it("is overhead + flops / rate + bytes / rate, per device type", function()
    local add = expr([[def @main(%x: Tensor[(5, 7), float32]) { add(%x, %x) }]])
    local m = dp.costs.model{cpu = {flops = 1e9, bytes = 1e8, overhead = 1e-5}, default = {flops = 2e9}}
    assert.near(1e-5 + 35 / 1e9 + 420 / 1e8, m(add, cpu), 1e-15)
    assert.near(1e-6 + 35 / 2e9 + 420 / 1e10, m(add, cuda), 1e-15) -- default, with the default rate's others
    assert.near(1e-6 + 35 / 1e10 + 420 / 1e10, dp.costs.DEFAULT(add, cuda), 1e-15)
    assert.equal(1e9, m:rate("cpu").flops)
    assert.truthy(tostring(m):find("cpu = {flops = 1e+09", 1, true))
  end)

  it("checks its rates", function()
    assert.truthy(testing.error_of(dp.costs.model, {xpu = {flops = 1}}):find("unknown device type 'xpu'", 1, true))
    assert.truthy(testing.error_of(dp.costs.model, {cpu = {flops = 0}}):find("cpu.flops must be a number > 0", 1, true))
    assert.truthy(testing.error_of(dp.costs.model, {cpu = {flop = 1}}):find("unknown field 'flop'", 1, true))
    assert.truthy(testing.error_of(dp.costs.model, {cpu = {overhead = -1}}):find("overhead must be a number >= 0", 1, true))
  end)
end)

describe("the plain cost format", function()
  local conv = expr([[def @main(%x: Tensor[(1, 3, 224, 224), float32], %w: Tensor[(64, 3, 7, 7), float32]) {
    nn.conv2d(%x, %w, strides=[2, 2], padding=[3, 3], kernel_size=[7, 7], channels=64) }]])
  local relu = expr([[def @main(%x: Tensor[(5, 7), float32]) { nn.relu(%x) }]])

  it("matches calls by operator, device, shapes, dtypes and attributes (defaults included)", function()
    local t = dp.costs.parse([[
# a comment
rate cpu flops=1e9 bytes=1e9 overhead=0
cost nn.conv2d cpu 0.5
cost nn.conv2d cpu 0.25 args=1x3x224x224,64x3x7x7 strides=2,2 padding=3,3,3,3 groups=1 dilation=1,1
cost nn.conv2d * 0.125 args=1x3x224x224,64x3x7x7 dtype=float32 strides=2,2 padding=3,3,3,3 groups=1 dilation=1,1 data_layout=NCHW
cost nn.relu cuda 0.001 out=5x7
cannot nn.relu opencl
]], {name = "my.costs"})
    assert.equal(0.125, t(conv, cpu))          -- the entry with the most keys (8)
    assert.equal(0.125, t(conv, cuda))         -- * is any device
    assert.equal(0.001, t(relu, cuda))
    assert.is_nil(t(relu, opencl))             -- cannot: the device cannot run it
    assert.is_false(t:lookup(relu, opencl))
    assert.is_nil(t:lookup(relu, cpu))         -- not covered: the model decides
    assert.equal(35 / 1e9 + 280 / 1e9, t(relu, cpu))
    assert.is_true(t:covers(conv, cpu))
    assert.equal(5, #t)
  end)

  it("lets the entry loaded last win among equally specific ones", function()
    local a = dp.costs.parse("cost nn.relu cpu 1\n")
    local b = dp.costs.parse("cost nn.relu cpu 2\n")
    assert.equal(2, a:merge(b)(relu, cpu))
    assert.equal(1, b:merge(a)(relu, cpu))
    assert.equal(3, dp.costs.parse("cost nn.relu cpu 1\ncost nn.relu cpu 3\n")(relu, cpu))
    -- a matching key beats none; a key that does not match rules the entry out
    local c = dp.costs.parse("cost nn.relu cpu 1 out=5x7\ncost nn.relu cpu 2\ncost nn.relu cpu 4 out=9x9\n")
    assert.equal(1, c(relu, cpu))
  end)

  it("says what is wrong and where", function()
    local function err(text)
      local _, e = testing.error_of(dp.costs.parse, text, {name = "x.costs"})
      assert.is_true(dp.is_error(e))
      return tostring(e)
    end
    assert.truthy(err("cost nn.relu cpu 1\ncost nn.reluu cpu 1\n"):find("x.costs:2:1: unknown operator 'nn.reluu'", 1, true))
    assert.truthy(err("cost nn.relu xpu 1\n"):find("x.costs:1:1: unknown device type 'xpu'", 1, true))
    assert.equal(1, dp.costs.parse("cost nn.relu gpu 1\n")(relu, cuda)) -- (gpu: cuda's other name)
    assert.truthy(err("cost nn.relu cpu fast\n"):find("the cost must be a number of seconds >= 0, got 'fast'", 1, true))
    assert.truthy(err("cost nn.relu cpu -1\n"):find("got '-1'", 1, true))
    assert.truthy(err("cost nn.relu cpu 1 out\n"):find("'out' is not KEY=VALUE", 1, true))
    assert.truthy(err("costs nn.relu cpu 1\n"):find("unknown line 'costs'", 1, true))
    assert.truthy(err("cost nn.relu\n"):find("cost needs OP DEVICE SECONDS", 1, true))
    assert.truthy(err("rate cpu flops=x\n"):find("flops must be a number", 1, true))
    assert.truthy(err("rate cpu speed=1\n"):find("rate takes flops=N", 1, true))
    assert.truthy(err("rate cpu flops=0\n"):find("flops must be a number > 0", 1, true))
  end)

  it("writes back what it read", function()
    local t = dp.costs.parse([[
rate cpu flops=2e9 bytes=3e9 overhead=1e-05
cost nn.conv2d cpu 0.25 args=1x3x224x224,64x3x7x7 strides=2,2
cannot nn.relu opencl out=5x7
]])
    local again = dp.costs.parse(t:text())
    assert.equal(t:text(), again:text())
    assert.equal(0.25, again(conv, cpu))
    assert.is_nil(again(relu, opencl))
    assert.equal(2e9, again.model:rate("cpu").flops)
  end)

  it("loads files, and says which cannot be read", function()
    local path = testing.temp_file("cost nn.relu cpu 0.5\n", ".costs")
    local t = dp.costs.load(path)
    assert.equal(0.5, t(relu, cpu))
    local text = testing.error_of(dp.costs.load, "/nonexistent/x.costs")
    assert.truthy(text:find("cannot open", 1, true), text)
    assert.truthy(testing.error_of(dp.costs.load, path, {boards = "x"}):find("unknown option 'boards'", 1, true))
    assert.truthy(testing.error_of(dp.costs.load, {}):find("a path or a list of paths", 1, true))
    testing.remove_temp_files()
  end)
end)

describe("TopHub logs", function()
  it("need a board when a log has several, and name them", function()
    local text = testing.error_of(dp.costs.load, ARM)
    assert.truthy(text:find("several boards (bcm2837, kirin970, pynq, rk3399, snapdragon835, ultra96, vtacpu)", 1, true), text)
    text = testing.error_of(dp.costs.load, ARM, {board = "rk3400"})
    assert.truthy(text:find("no record of board 'rk3400'", 1, true), text)
  end)

  it("read the RK3399 records: the fastest template per workload", function()
    local arm = dp.costs.load(ARM, {board = "rk3399"})
    local mali = dp.costs.load(MALI, {board = "rk3399"})
    assert.equal(220, #arm)             -- 181 spatial pack + 21 winograd + 18 depthwise, all distinct
    assert.equal(526, #mali)            -- 528 records, 2 dense workloads with and without bias
    assert.same({records = 220, used = 220, failed = 0, skipped = 0, entries = 220},
                {records = arm.tophub[1].records, used = arm.tophub[1].used, failed = arm.tophub[1].failed,
                 skipped = arm.tophub[1].skipped, entries = arm.tophub[1].entries})
    for _, e in ipairs(mali.entries) do
      assert.is_true(e.op == "nn.conv2d" or e.op == "nn.dense")
      assert.equal("opencl", e.device)
    end
  end)

  it("cover the models' convolutions and dense layers", function()
    local t = dp.costs.load({ARM, MALI}, {board = "rk3399"})
    local want = {resnet18 = {21, 22, 22}, mobilenet = {27, 28, 28}, squeezenet = {26, 26, 26},
                  vgg16 = {13, 16, 16}}
    for name, w in pairs(want) do
      local mod = dp.parse_file(shared .. "/models/" .. name .. ".relay")
      local n, c, g = 0, 0, 0
      dp.visit(mod, function(e)
        if e.kind == "call" and e.callee.kind == "op" and (e.callee.name == "nn.conv2d" or e.callee.name == "nn.dense") then
          n = n + 1
          if t:covers(e, cpu) then c = c + 1 end
          if t:covers(e, opencl) then g = g + 1 end
        end
      end)
      assert.same(w, {c, g, n}, name)
    end
    -- resnet18's first convolution: the fastest of its arm_cpu records
    local mod = dp.parse_file(shared .. "/models/resnet18.relay")
    local first = first_call(mod, "nn.conv2d")
    local s = t(first, cpu)
    assert.is_true(s > 1e-3 and s < 0.1, tostring(s))
    -- a device the logs do not cover gets the default model
    assert.equal(dp.costs.DEFAULT(first, cuda), t(first, cuda))
  end)

  it("count for another device type when asked", function()
    local t = dp.costs.load(MALI, {board = "rk3399", device = "cuda"})
    assert.equal("cuda", t.entries[1].device)
    assert.truthy(testing.error_of(dp.costs.load, MALI, {board = "rk3399", device = "xpu"}):find("unknown device type 'xpu'", 1, true))
  end)

  it("say which line is not a record", function()
    local path = testing.temp_file('# log\n{"input": ["llvm -model=x", "dense.x", [], {}], "result": [[0.1], 0]}\n{not json\n', ".log")
    local text = testing.error_of(dp.costs.load, path)
    assert.truthy(text:find(":3:1: not a TopHub record", 1, true), text)
    testing.remove_temp_files()
  end)
end)
