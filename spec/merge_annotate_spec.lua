-- dp.passes.MergeAndAnnotate (lua/devplan/passes/merge_composite.lua, src/pattern/annotate.c):
-- MergeComposite's groups kept in place and placed on their rule's device;
-- after PlanDevices every call of a group runs there and only what enters or
-- leaves a group is copied.
local dp = require "devplan"
local t = require "devplan.testing"
local P = dp.pattern
local W = P.wild

local CPU, GPU = t.PALETTE.CPU, t.PALETTE.GPU
local T = "Tensor[(1, 3, 8, 8), float32]"

local function parse(text) return dp.parse('#[version = "0.0.5"]\n' .. text, t.META) end

-- Each operator call of the planned @main (not on_device / device_copy) with its device.
local function placed(planned, cfg)
  local vds, out = dp.planner.virtual_devices(planned, cfg), {}
  dp.visit(planned.main.body, function(e)
    if e.kind == "call" and e.callee.kind == "op" and e.callee.name ~= "on_device"
        and e.callee.name ~= "device_copy" then
      out[#out + 1] = e.callee.name .. "@" .. (rawequal(vds[e], GPU) and "GPU" or rawequal(vds[e], CPU) and "CPU" or "?")
    end
  end)
  return table.concat(out, " ")
end

local conv_relu = P.op("nn.relu")(P.op("nn.conv2d")(W(), W()))

describe("MergeAndAnnotate", function()
  local cfg = t.config("cpu")

  it("places each group on its device; the planner places the rest", function()
    local mod = parse([[def @main(%x {virtual_device=meta[VirtualDevice][0]}: ]] .. T
      .. [[, %w {virtual_device=meta[VirtualDevice][0]}: Tensor[(3, 3, 1, 1), float32]) {
      %0 = negative(%x); %1 = nn.conv2d(%0, %w); %2 = nn.relu(%1); %3 = add(%2, %x);
      %4 = nn.conv2d(%3, %w); %5 = nn.relu(%4); %6 = exp(%5); tanh(%6) }]])
    local annotate = dp.passes.MergeAndAnnotate{{name = "conv_relu", pattern = conv_relu, device = GPU}}
    local annotated = annotate(mod)
    local planned = dp.passes.PlanDevices(cfg)(annotated)
    assert.same({}, (dp.planner.verify(planned, cfg, {input = annotated})), "a consistent plan that keeps the annotations")
    -- add reads %x (on the CPU), so it runs there; exp and tanh are free: TVM's
    -- defaulting gives them @main's result device, the default CPU
    assert.equal("negative@CPU nn.conv2d@GPU nn.relu@GPU add@CPU nn.conv2d@GPU nn.relu@GPU exp@CPU tanh@CPU",
      placed(planned, cfg))
    -- copies only at the groups' edges: data and weight into each group, the result out
    assert.equal(6, t.count_calls(planned, "device_copy"))
    assert.equal("MergeAndAnnotate(rules=conv_relu)", tostring(annotate))
  end)

  it("a free value between two groups follows its consumer (TVM's defaulting): no copies", function()
    local mod = parse([[def @main(%x {virtual_device=meta[VirtualDevice][0]}: ]] .. T
      .. [[, %w {virtual_device=meta[VirtualDevice][0]}: Tensor[(3, 3, 1, 1), float32]) {
      %0 = nn.conv2d(%x, %w); %1 = nn.relu(%0); %2 = exp(%1); %3 = nn.conv2d(%2, %w); nn.relu(%3) }]])
    local planned = dp.passes.PlanDevices(cfg)(dp.passes.MergeAndAnnotate{{name = "cr", pattern = conv_relu, device = GPU}}(mod))
    assert.equal("nn.conv2d@GPU nn.relu@GPU exp@GPU nn.conv2d@GPU nn.relu@GPU", placed(planned, cfg))
  end)

  it("keeps the program's nodes: only on_device is added", function()
    local mod = parse("def @main(%x: " .. T .. ", %w: Tensor[(3, 3, 1, 1), float32]) { %0 = nn.conv2d(%x, %w); nn.relu(%0) }")
    local out = dp.passes.MergeAndAnnotate{{name = "cr", pattern = conv_relu, device = GPU}}(mod)
    local stripped = dp.rewrite(out, {call = function(c)
      if c.callee.kind == "op" and c.callee.name == "on_device" then return c.args[1] end
    end})
    assert.structurally_equal(stripped, mod)
    assert.equal(3, t.count_calls(out, "on_device"), "the root (read from outside) and two inputs")
  end)

  it("a node of a group used outside it stays on the group's device; its user reads it through a copy", function()
    -- the add is inside multiply(add(conv, _), _); subtract(add, %b) reads it from outside
    -- (and flows into the root, so the group is taken), on the CPU with %b
    local mod = parse("def @main(%x {virtual_device=meta[VirtualDevice][0]}: " .. T
      .. ", %w {virtual_device=meta[VirtualDevice][0]}: Tensor[(3, 3, 1, 1), float32], %b {virtual_device=meta[VirtualDevice][0]}: " .. T .. [[) {
      %0 = nn.conv2d(%x, %w); %1 = add(%0, %b); %2 = subtract(%1, %b); %3 = multiply(%1, %2); negative(%3) }]])
    local p = P.op("multiply")(P.op("add")(P.op("nn.conv2d")(W(), W()), W()), W())
    local planned = dp.passes.PlanDevices(cfg)(dp.passes.MergeAndAnnotate{{name = "p", pattern = p, device = GPU}}(mod))
    assert.equal("nn.conv2d@GPU add@GPU subtract@CPU multiply@GPU negative@CPU", placed(planned, cfg))
  end)

  it("earlier rules win; a check decides; later rules never see into a group", function()
    local mod = parse("def @main(%x {virtual_device=meta[VirtualDevice][0]}: " .. T
      .. ", %w {virtual_device=meta[VirtualDevice][0]}: Tensor[(3, 3, 1, 1), float32]) { %0 = nn.conv2d(%x, %w); %1 = nn.relu(%0); exp(%1) }")
    local relu_exp = P.op("exp")(P.op("nn.relu")(W()))
    local first = dp.passes.MergeAndAnnotate{{name = "cr", pattern = conv_relu, device = GPU},
                                             {name = "re", pattern = relu_exp, device = CPU}}(mod)
    assert.equal("nn.conv2d@GPU nn.relu@GPU exp@CPU", placed(dp.passes.PlanDevices(cfg)(first), cfg))
    local refused = dp.passes.MergeAndAnnotate{{name = "cr", pattern = conv_relu, device = GPU, check = function() return false end},
                                               {name = "re", pattern = relu_exp, device = GPU}}(mod)
    assert.equal("nn.conv2d@CPU nn.relu@GPU exp@GPU", placed(dp.passes.PlanDevices(cfg)(refused), cfg))
  end)

  it("needs a device per rule, and names the rule in errors", function()
    local ok, err = pcall(dp.passes.MergeAndAnnotate, {{name = "cr", pattern = conv_relu}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("rule 1 ('cr'): device must be a VirtualDevice", 1, true), tostring(err))
    local mod = parse("def @main(%x: " .. T .. ", %w: Tensor[(3, 3, 1, 1), float32]) { %0 = nn.conv2d(%x, %w); nn.relu(%0) }")
    ok, err = pcall(dp.passes.MergeAndAnnotate{{name = "cr", pattern = conv_relu, device = GPU,
      check = function() error("bad check") end}}, mod)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("MergeAndAnnotate rule 'cr': the check function raised an error", 1, true), tostring(err))
  end)

  local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
  it("annotates and plans a " .. N .. "-call chain", function()
    local x = dp.var("x", dp.type.tensor({4}, "float32"), {virtual_device = CPU})
    local e = x
    local n = N - N % 3 -- whole triples: negative, exp, add
    for i = 1, n do
      local k = i % 3
      e = k == 1 and dp.call("negative", {e}) or k == 2 and dp.call("exp", {e}) or dp.call("add", {e, x})
    end
    local mod = dp.infer_type(dp.IRModule{functions = {{"main", dp.fn({x}, e)}}})
    local pair = P.op("exp")(P.op("negative")(W()))
    local planned = dp.passes.PlanDevices(cfg)(dp.passes.MergeAndAnnotate{{name = "pair", pattern = pair, device = GPU}}(mod))
    -- each pair runs on the GPU between two adds on the CPU: one copy in, one out
    assert.equal(2 * (n // 3), t.count_calls(planned, "device_copy"))
  end)
end)
