-- dp.graph (lua/devplan/graph.lua, src/lua/l_graph.c): the picture of a
-- module answers where each part runs and where the copies are: devices as
-- coloured lanes, copies as red edges with the report's exact bytes, long
-- chains on one device collapsed (detail "full" draws every call), a
-- legend; any module gets a small picture, and dot runs under limits.
local dp = require "devplan"
local testing = require "devplan.testing"
local gen = dofile(dp.root .. "/bench/gen.lua")

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}

local function resnet_planned()
  local mod = dp.parse_file(testing.model("resnet18"))
  return dp.pipeline.build("annotate(nn.conv2d=cuda,nn.dense=cuda),plan_devices", {config = config})(mod)
end

local slurp = testing.read_file

local function count(text, pattern)
  return select(2, text:gsub(pattern, ""))
end

-- The bytes of the copies a picture shows, summed.
local function copy_bytes(d)
  local sum = 0
  for _, e in ipairs(d.edges) do if e.copies > 0 then sum = sum + e.bytes end end
  return sum
end

describe("dp.graph", function()
  local planned
  setup(function() planned = resnet_planned() end)

  it("draws resnet18 with its chains collapsed, each device a lane, the copy with its exact bytes", function()
    local d = dp.graph.layout(planned, {config = config})
    assert.equal("chains", d.level) -- (auto: full has 91 nodes, past the budget of 40)
    assert.same({full = 91, chains = 23, regions = 2, devices = 2}, d.counts)
    assert.equal(72, d.calls)
    assert.same({1, 4000}, {d.copies, d.bytes})
    local text = dp.graph.dot(planned, {config = config})
    assert.truthy(text:find("^digraph devplan {\n"), text:sub(1, 200))
    assert.equal(2, count(text, "subgraph cluster_lane"))
    assert.truthy(text:find('label="@cuda"; style="rounded,filled"', 1, true), text)
    assert.truthy(text:find('label="@cpu"; style="rounded,filled"', 1, true), text)
    -- one copy, labelled as the report counts it
    assert.equal(1, count(text, "style=dashed"))
    local r = dp.planner.report(planned, config)
    assert.truthy(text:find('label="copy 4,000 bytes\\n@cuda -> @cpu"', 1, true), text)
    assert.equal(r.totals.bytes_copied, copy_bytes(d))
    -- chains as double boxes with their first and last names, e.g. "%10 ... %14"
    assert.truthy(text:find('label="%%10 ... %%14\\n4 calls: nn.conv2d ... nn.conv2d"'), text)
    assert.truthy(count(text, "peripheries=2") >= 10)
    -- the legend: the devices with their colours, the copy, the level
    local gpu = text:match('<TD BGCOLOR="(#%x+)">@cuda</TD>')
    assert.truthy(gpu, text)
    assert.truthy(text:find('nn.conv2d", fillcolor="' .. gpu .. '"', 1, true), text)
    assert.truthy(text:find("device_copy, with the bytes it copies", 1, true))
    assert.truthy(text:find("chains: a double box", 1, true))
    assert.truthy(text:find('label="72 calls on 2 devices, 1 copy, 4,000 bytes copied"', 1, true), text)
    -- on_device and device_copy are no nodes
    assert.falsy(text:find("\\non_device\"", 1, true))
    assert.falsy(text:find("\\ndevice_copy\"", 1, true))
  end)

  it("draws every call with detail full, and one box per part with regions or devices", function()
    local full = dp.graph.dot(planned, {config = config, detail = "full"})
    assert.equal(21, count(full, "\\nnn%.conv2d\""))
    assert.truthy(full:find('label="copy 4,000 bytes\\n@cuda -> @cpu"', 1, true))
    for _, level in ipairs{"regions", "devices"} do
      local d = dp.graph.layout(planned, {config = config, detail = level})
      assert.equal(level, d.level)
      assert.equal(2, #d.boxes)
      assert.equal(70, d.boxes[1].calls)
      assert.same({"nn.conv2d", 21}, d.boxes[1].ops[1] and {d.boxes[1].ops[1][1], d.boxes[1].ops[1][2]})
      assert.equal(4000, copy_bytes(d))
    end
    -- the budget: a larger one draws more
    assert.equal("full", dp.graph.layout(planned, {config = config, max_nodes = 100}).level)
    assert.has_error(function() dp.graph.dot(planned, {detail = "everything"}) end)
    assert.has_error(function() dp.graph.dot(planned, {max_nodes = 0}) end)
    assert.has_error(function() dp.graph.dot(planned, {colour = true}) end)
    assert.has_error(function() dp.graph.dot(3) end)
  end)

  it("draws parameters of small functions, and a module that does not plan in grey", function()
    local mod = dp.parse([[
def @main(%a: Tensor[(5, 7), float32]) {
  negative(%a)
}]])
    local text = dp.graph.dot(mod)
    assert.truthy(text:find('label="%a", fillcolor="#8dd3c7", shape=ellipse', 1, true), text)
    assert.truthy(text:find("n1 -> n2;", 1, true), text)
    local conflict = dp.parse([[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0]);
  %1 = on_device(%a, virtual_device=meta[VirtualDevice][1]);
  add(%0, %1)
}]], testing.META)
    text = dp.graph.dot(conflict, {config = testing.config("cpu")})
    assert.truthy(text:find('label="%a", fillcolor="#eeeeee", shape=ellipse', 1, true), text)
    assert.truthy(text:find("no devices: the module does not plan", 1, true), text)
  end)

  it("sums the copies between boxes, exactly as the report counts them", function()
    local mod = dp.parse(gen.branchy(2000), require("devplan.devname").palette())
    local p = dp.passes.PlanDevices(config)(mod)
    local r = dp.planner.report(p, config)
    for _, level in ipairs{"chains", "regions", "devices"} do
      local d = dp.graph.layout(p, {config = config, detail = level})
      assert.equal(r.totals.copies, d.copies, level)
      assert.equal(r.totals.bytes_copied, d.bytes, level)
      assert.equal(r.totals.bytes_copied, copy_bytes(d), level)
    end
    -- auto keeps the picture small: at most 40 boxes
    local d = dp.graph.layout(p, {config = config})
    assert.is_true(#d.boxes <= 40, d.level)
    assert.truthy(dp.graph.dot(p, {config = config}):find("copies, ", 1, true))
  end)

  it("comes out whole or as an out-of-memory error when any allocation fails", function()
    local small = dp.pipeline.build("annotate(nn.conv2d=cuda),plan_devices", {config = config})(
      dp.parse_file(testing.model("dqn")))
    local want = dp.graph.dot(small, {config = config, detail = "full"})
    local n, failed, oks = 1, 0, 0
    repeat -- (until 30 runs in a row fail nothing: past the last allocation)
      dp.debug.fail_alloc(n)
      local ok, r = pcall(dp.graph.dot, small, {config = config, detail = "full"})
      dp.debug.fail_alloc(0)
      if ok then
        assert.equal(want, r)
        oks = oks + 1
      else
        failed, oks = failed + 1, 0
        assert.truthy(tostring(r):find("out of memory", 1, true) or tostring(r):find("not enough memory", 1, true),
                      "n = " .. n .. ": " .. tostring(r))
      end
      n = n + 1
    until oks >= 30
    assert.is_true(failed > 20)
  end)

  it("stacks the functions of a partitioned module, main first, and labels calls of functions", function()
    local parted = dp.passes.PartitionByVirtualDevice{}(planned)
    local d = dp.graph.layout(parted, {config = config, detail = "regions"})
    local text = dp.graph.dot(parted, {config = config, detail = "regions"})
    assert.equal(#parted:functions(), count(text, "subgraph cluster_f"))
    assert.truthy(text:find('subgraph cluster_f1 {\n    label="@main"', 1, true), text)
    assert.equal(#parted:functions() - 1, count(text, "%[style=invis%]"))
    local main_calls = 0
    for _, b in ipairs(d.boxes) do if b.fn == 1 then main_calls = main_calls + b.function_calls end end
    assert.equal(#parted:functions() - 1, main_calls)
    assert.truthy(text:find("1 call of a function", 1, true), text)
    assert.equal(72, d.calls) -- the operators' calls, inside the functions
    assert.equal(4000, copy_bytes(d))
  end)

  it("renders resnet18 as SVG", function()
    local path = testing.temp_file("", ".svg")
    dp.graph.svg(planned, path, {config = config, title = "resnet18"})
    local svg = slurp(path)
    assert.truthy(svg:find("<svg", 1, true))
    assert.truthy(svg:find("nn.conv2d", 1, true))
    assert.truthy(svg:find("copy 4,000 bytes", 1, true))
    assert.truthy(svg:find(">resnet18<", 1, true))
    assert.truthy(svg:find("</svg>%s*$"))
  end)

  it("stops Graphviz past its time limit with a clear error", function()
    local text = dp.graph.dot(planned, {config = config, detail = "full"})
    local ok, err = pcall(dp.graph.render, text, testing.temp_file("", ".svg"), "svg", {time_limit = 0.001})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("Graphviz's dot took more than 0.001 seconds to lay out", 1, true), tostring(err))
    assert.truthy(tostring(err):find("raise time_limit", 1, true))
    assert.has_error(function() dp.graph.render(text, "x.svg", "svg", {memory_limit = 1000}) end)
    assert.has_error(function() dp.graph.render(text, "x.svg", "svg", {time_limit = -1}) end)
  end)
end)

describe("devplan plan --svg / --dot", function()
  local RESNET = testing.model("resnet18") .. " --annotate nn.conv2d=cuda,nn.dense=cuda"

  it("writes the picture and prints no module unless asked (-o, --explain)", function()
    local dot, svg = testing.temp_file("", ".dot"), testing.temp_file("", ".svg")
    local code, out, err = testing.run_devplan("plan " .. RESNET .. " --dot " .. dot .. " --svg " .. svg)
    assert.equal(0, code, err)
    assert.equal("", out)
    assert.equal(dp.graph.dot(resnet_planned(), {config = config}), slurp(dot))
    assert.truthy(slurp(svg):find("<svg", 1, true))
    code, out = testing.run_devplan("plan " .. RESNET .. " --svg " .. svg .. " -o -")
    assert.equal(0, code)
    assert.truthy(out:find("def @main", 1, true))
    code, out = testing.run_devplan("plan " .. RESNET .. " --svg " .. svg .. " --report text")
    assert.equal(0, code)
    assert.truthy(out:find("1 device_copy, 4,000 bytes:", 1, true))
  end)

  it("takes --graph-detail", function()
    local dot = testing.temp_file("", ".dot")
    local code, _, err = testing.run_devplan("plan " .. RESNET .. " --dot " .. dot .. " --graph-detail full")
    assert.equal(0, code, err)
    assert.equal(21, count(slurp(dot), "\\nnn%.conv2d\""))
    code, _, err = testing.run_devplan("plan " .. RESNET .. " --dot " .. dot .. " --graph-detail all")
    assert.equal(1, code)
    assert.truthy(err:find("--graph-detail takes auto, full, chains, regions or devices, got 'all'", 1, true), err)
  end)
end)
