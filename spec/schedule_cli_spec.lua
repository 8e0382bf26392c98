-- devplan plan --costs FILE --report / --gantt FILE.svg: the modelled
-- schedule on the command line (lua/devplan/cli.lua, report.lua, gantt.lua).
local testing = require "devplan.testing"

local shared = testing.shared_dir
local MODEL = shared .. "/models/squeezenet.relay"
local ARM = shared .. "/bench/costs/arm_cpu_v0.08.log"
local MALI = shared .. "/bench/costs/mali_v0.06.log"
local RK = "--target llvm --target 'opencl -device=mali' --annotate nn.conv2d=opencl"

local function q(s) return "'" .. s .. "'" end

describe("devplan plan --costs", function()
  after_each(testing.remove_temp_files)

  it("adds the schedule to the report: makespan, busy time per device and link, critical path", function()
    local status, out, err = testing.run_devplan("plan " .. q(MODEL) .. " " .. RK .. " --costs " .. q(ARM)
      .. " --costs " .. q(MALI) .. " --board rk3399 --report text")
    assert.equal(0, status, err)
    assert.truthy(out:find("schedule (costs from " .. ARM .. ", " .. MALI .. "): makespan ", 1, true), out)
    assert.truthy(out:find("\n@cpu%s+%d+%s+[%d.]+ ms%s+%d+%%"), out)
    assert.truthy(out:find("\n@opencl%s+%d+"), out)
    assert.truthy(out:find("\n@opencl%->@cpu%s+1 "), out)
    assert.truthy(out:find("critical path: %d+ tasks %(the last 30%)"), out)
    assert.truthy(out:find("(modelled: no device ran anything)", 1, true), out)
  end)

  it("adds it to the JSON report", function()
    local costs = testing.temp_file("cost nn.conv2d * 0.001\nrate * flops=1e9 bytes=1e9 overhead=0\n", ".costs")
    local status, out, err = testing.run_devplan("plan " .. q(MODEL) .. " " .. RK .. " --costs " .. costs .. " --report json")
    assert.equal(0, status, err)
    local json = require "dkjson"
    local r = json.decode(out)
    assert.is_table(r.schedule)
    assert.is_true(r.schedule.makespan > 0.026) -- 26 convolutions of 1 ms, on one device
    assert.equal("costs from " .. costs, r.schedule.costs)
    assert.is_true(#r.schedule.resources >= 2)
    assert.is_true(#r.schedule.critical > 0)
    assert.equal(r.schedule.makespan, r.schedule.critical[#r.schedule.critical].finish)
  end)

  it("draws the schedule with --gantt (the default model without --costs)", function()
    local svg = os.tmpname() .. ".svg"
    local status, out, err = testing.run_devplan("plan " .. q(MODEL) .. " " .. RK .. " --gantt " .. svg .. " -o /dev/null")
    assert.equal(0, status, err)
    local text = testing.read_file(svg)
    os.remove(svg)
    assert.truthy(text:find("^<svg "), text:sub(1, 80))
    assert.truthy(text:find("default cost model: makespan", 1, true))
    local bars = 0
    for _ in text:gmatch("<rect [^>]*><title>") do bars = bars + 1 end
    assert.equal(93 + 1, bars) -- every call and the one copy
    assert.truthy(text:find(">@opencl-&gt;@cpu<", 1, true))
  end)

  it("says what is wrong with a cost file, where", function()
    local costs = testing.temp_file("cost nn.conv2d cpu 0.001\ncost nn.conv2d cpu fast\n", ".costs")
    local status, _, err = testing.run_devplan("plan " .. q(MODEL) .. " --costs " .. costs .. " --report text")
    assert.equal(1, status)
    assert.truthy(err:find(costs .. ":2:1: the cost must be a number of seconds >= 0, got 'fast'", 1, true), err)
    status, _, err = testing.run_devplan("plan " .. q(MODEL) .. " --costs " .. q(ARM) .. " --report text")
    assert.equal(1, status)
    assert.truthy(err:find("choose one with board = NAME (devplan plan --board NAME)", 1, true), err)
    status, _, err = testing.run_devplan("plan " .. q(MODEL) .. " --board rk3399 --report text")
    assert.equal(1, status)
    assert.truthy(err:find("--board needs --costs", 1, true), err)
    status, _, err = testing.run_devplan("plan " .. q(MODEL) .. " --gantt /nonexistent/dir/x.svg -o /dev/null")
    assert.equal(1, status)
    assert.truthy(err:find("cannot write /nonexistent/dir/x.svg", 1, true), err)
  end)

  it("has an example: the baselines and HEFT's schedule of squeezenet, drawn", function()
    local svg = os.tmpname() .. ".svg"
    local status, out, err = testing.run_devplan("examples/latency.lua " .. q(MODEL) .. " " .. svg)
    local drawn = io.open(svg) ~= nil
    os.remove(svg)
    assert.equal(0, status, err)
    assert.truthy(out:find("HEFT (devices side by side) ", 1, true), out)
    assert.truthy(out:find("(0 pooling calls on the GPU)", 1, true), out)
    local bound = tonumber(out:match("lower bound%s+([%d.]+) ms"))
    local heft = tonumber(out:match("HEFT %(devices side by side%)%s+([%d.]+) ms"))
    assert.is_true(bound <= heft, out)
    assert.is_true(drawn)
  end)

  it("is listed in plan's help", function()
    local status, out = testing.run_devplan("help plan")
    assert.equal(0, status)
    assert.truthy(out:find("--costs FILE", 1, true))
    assert.truthy(out:find("--gantt FILE.svg", 1, true))
    assert.truthy(out:find("--board NAME", 1, true))
  end)
end)
