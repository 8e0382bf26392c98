-- Every example a new user starts from runs, and says what it should.
local EXE = os.getenv("DEVPLAN_EXE") or "bin/devplan"

local function run(script)
  local p = assert(io.popen(EXE .. " " .. script .. " 2>&1"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return out, ok and 0 or code
end

describe("examples", function()
  it("quickstart plans a module with a CPU and a GPU and explains a device", function()
    local out, code = run("examples/quickstart.lua")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("device_copy(", 1, true), out)
    assert.truthy(out:find("is on cpu because of the annotation on_device", 1, true), out)
  end)

  it("devices builds targets, virtual devices and a configuration", function()
    local out, code = run("examples/devices.lua")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("VirtualDevice(", 1, true), out)
  end)

  it("ir_basics builds, visits, rewrites IR and registers an operator", function()
    local out, code = run("examples/ir_basics.lua")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("add : Tensor[(5, 7), float32]", 1, true), out)
    assert.truthy(out:find("on_device(%0, virtual_device=VirtualDevice(device_type=cpu))", 1, true), out)
    assert.truthy(out:find("example.double(%a)", 1, true), out)
  end)

  it("custom_default shows TVM's copy, then the heuristic's plan without it", function()
    local out, code = run("examples/custom_default.lua")
    assert.are.equal(0, code, out)
    local tvm, custom = out:match("^(.-)%-%- with the custom default:(.*)$")
    assert.truthy(tvm, out)
    assert.truthy(tvm:find("device_copy(", 1, true), out)
    assert.falsy(custom:find("device_copy(", 1, true), out)
  end)

  -- the framework's examples (pipelines, rules, resnet18 on CPU + GPU)
  it("pipeline registers a pass, runs a textual pipeline with instruments", function()
    local out, code = run("examples/pipeline.lua")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("pipeline: infer_type,exp_on_gpu,plan_devices,verify", 1, true), out)
    assert.truthy(out:find("// ---- after PlanDevices ----", 1, true), out)
    assert.truthy(out:find("ran: InferType, AnnotateVirtualDevices, ExpOnGpu, PlanDevices, Verify, Sequential", 1, true), out)
    assert.truthy(out:find("pass timings", 1, true), out)
  end)

  it("resnet18_gpu plans resnet18 on CPU + GPU, reports the copy and draws it", function()
    local svg = os.tmpname() .. ".svg"
    local out, code = run("examples/resnet18_gpu.lua ../shared/models/resnet18.relay " .. svg)
    assert.are.equal(0, code, out)
    assert.truthy(out:find("1 device_copy, 4,000 bytes:", 1, true), out)
    local f = assert(io.open(svg))
    assert.truthy(f:read("a"):find("<svg", 1, true))
    f:close()
    os.remove(svg)
  end)

  it("rules is a rules file for devplan plan --rules", function()
    local out, code = run("plan ../shared/models/resnet18.relay --rules examples/rules.lua --report text")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("1 device_copy", 1, true), out)
  end)
end)
