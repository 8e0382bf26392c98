-- dp.graph (lua/devplan/graph.lua): the dataflow graph as Graphviz text,
-- nodes coloured by device, copies as marked edges with their bytes,
-- functions as clusters; the SVG renders with Graphviz's dot.
local dp = require "devplan"
local testing = require "devplan.testing"

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}

local function resnet_planned()
  local mod = dp.parse_file(testing.model("resnet18"))
  return dp.pipeline.build("annotate(nn.conv2d=cuda,nn.dense=cuda),plan_devices", {config = config})(mod)
end

local slurp = testing.read_file

describe("dp.graph", function()
  it("draws calls as nodes coloured by device and copies as marked edges with bytes", function()
    local text = dp.graph.dot(resnet_planned(), {config = config})
    assert.truthy(text:find("^digraph devplan {\n"), text:sub(1, 200))
    assert.truthy(text:find("subgraph cluster_1 {\n    label=\"@main\"", 1, true))
    local _, convs = text:gsub("\\nnn%.conv2d\"", "")
    assert.equal(21, convs)
    -- one copy edge, labelled with its bytes and devices
    local _, copies = text:gsub("style=dashed", "")
    assert.equal(1, copies)
    assert.truthy(text:find('label="copy 3.9 KiB\\n@cuda -> @cpu"', 1, true), text)
    -- the legend names both devices with their colours; conv nodes have the GPU's
    local gpu_colour = text:match('legend%d+ %[label="@cuda\\n.-", fillcolor="(#%x+)"%]')
    assert.truthy(gpu_colour, text)
    assert.truthy(text:find('nn.conv2d", fillcolor="' .. gpu_colour .. '"', 1, true))
    -- on_device and device_copy are no nodes
    assert.falsy(text:find("\\non_device\"", 1, true))
    assert.falsy(text:find("\\ndevice_copy\"", 1, true))
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
    text = dp.graph.dot(conflict)
    assert.truthy(text:find('label="%a", fillcolor="#eeeeee", shape=ellipse', 1, true), text)
    assert.falsy(text:find("cluster_legend", 1, true))
    assert.has_error(function() dp.graph.dot(mod, {colour = true}) end)
    assert.has_error(function() dp.graph.dot(3) end)
  end)

  it("renders resnet18 planned on CPU and GPU as SVG", function()
    local path = os.tmpname() .. ".svg"
    dp.graph.svg(resnet_planned(), path, {config = config, title = "resnet18"})
    local svg = slurp(path)
    os.remove(path)
    assert.truthy(svg:find("<svg", 1, true))
    assert.truthy(svg:find("nn.conv2d", 1, true))
    assert.truthy(svg:find("copy 3.9 KiB", 1, true))
    assert.truthy(svg:find("</svg>%s*$"))
  end)

  it("is what devplan plan --svg and --dot write", function()
    local dot, svg = os.tmpname() .. ".dot", os.tmpname() .. ".svg"
    local code, _, err = testing.run_devplan("plan " .. testing.model("resnet18")
      .. " --annotate nn.conv2d=cuda,nn.dense=cuda --dot " .. dot .. " --svg " .. svg .. " -o /dev/null")
    assert.equal(0, code, err)
    assert.equal(dp.graph.dot(resnet_planned(), {config = config}), slurp(dot))
    assert.truthy(slurp(svg):find("<svg", 1, true))
    os.remove(dot)
    os.remove(svg)
  end)
end)
