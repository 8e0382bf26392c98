-- ONNX models on the command line: devplan import, and an .onnx file
-- wherever a Relay file is read (parse, plan, opt; standard input too).
local dp = require "devplan"
local testing = require "devplan.testing" -- assert.structurally_equal, run_devplan
local EXE = testing.exe
local DIR = "spec/data/onnx/"

-- exit status, standard output, standard error
local run = testing.run_devplan

local function has(s, sub) return s:find(sub, 1, true) ~= nil end

describe("devplan import", function()
  it("prints the module with the weights in a #[metadata] section, which parses back to the import", function()
    local status, out, err = run("import " .. DIR .. "tiny_cnn.onnx")
    assert.are.equal(0, status, err)
    assert.truthy(has(out, "meta[relay.Constant][0]"))
    assert.truthy(has(out, "\n#[metadata]\n"))
    assert.structurally_equal(dp.onnx.load(DIR .. "tiny_cnn.onnx"), dp.parse(out))
  end)

  it("writes -o OUT, which devplan parse reads", function()
    local path = os.tmpname()
    local status, out, err = run("import " .. DIR .. "tiny_cnn.onnx --weights none --spans -o " .. path)
    assert.are.equal(0, status, err)
    assert.are.equal("", out)
    local f = assert(io.open(path))
    local text = f:read("a")
    f:close()
    assert.truthy(has(text, "%fw: Tensor[(10, 64), float32]"))
    assert.truthy(has(text, "span=conv1:1:0"))
    status, out, err = run("parse " .. path)
    assert.are.equal(0, status, err)
    os.remove(path)
  end)

  it("reads the model from standard input", function()
    local status, out, err = run("import - --weights none < " .. DIR .. "tiny_cnn.onnx")
    assert.are.equal(0, status, err)
    assert.structurally_equal(dp.onnx.load(DIR .. "tiny_cnn.onnx", {weights = "none"}), dp.parse(out))
  end)

  it("fixes dynamic dimensions with --input-shape, and says so when they are not fixed", function()
    local status, _, err = run("import " .. DIR .. "tiny_dynamic.onnx")
    assert.are.equal(1, status)
    assert.truthy(has(err, "graph input 'x' has a dynamic dimension 0 ('batch')"), err)
    local out
    status, out, err = run("import " .. DIR .. "tiny_dynamic.onnx --input-shape x=5,4")
    assert.are.equal(0, status, err)
    assert.truthy(has(out, "%x: Tensor[(5, 4), float32]"))
    status, _, err = run("import " .. DIR .. "tiny_dynamic.onnx --input-shape x")
    assert.are.equal(1, status)
    assert.truthy(has(err, "--input-shape wants NAME=D1,D2,..."), err)
  end)

  it("prints errors naming the file and the node, exit status 1", function()
    local status, out, err = run("import " .. DIR .. "tiny_badconv.onnx")
    assert.are.equal(1, status)
    assert.are.equal("", out)
    assert.are.equal("devplan: " .. DIR .. "tiny_badconv.onnx: graph.node[0] 'bad_conv' (Conv): nn.conv2d: data has 3 "
      .. "channels but the weight expects 4 x 1 groups\n", err)
    status, _, err = run("import " .. DIR .. "tiny_cnn.onnx --weights all")
    assert.are.equal(1, status)
    assert.truthy(has(err, "--weights takes const, params or none"), err)
  end)

  it("suggests what to do with a model given without a command", function()
    local status, _, err = run(DIR .. "tiny_cnn.onnx")
    assert.are.equal(1, status)
    assert.truthy(has(err, "is an ONNX model, not a Lua script"), err)
    assert.truthy(has(err, "devplan import " .. DIR .. "tiny_cnn.onnx -o model.relay"), err)
  end)
end)

describe("an .onnx file where a Relay file is read", function()
  it("tells ONNX bytes from Relay text by a control byte anywhere (tab, newline and return are text)", function()
    local function file(text)
      local path = os.tmpname()
      local f = assert(io.open(path, "wb"))
      f:write(text)
      f:close()
      return path
    end
    local relay = "def @main(%a: Tensor[(2), float32]) {\n\tadd(%a, %a)\r\n}\n"
    local text, late = file(relay), file(relay .. "\12")
    local status, out, err = run("parse " .. text)
    assert.are.equal(0, status, err)
    assert.truthy(has(out, "add(%a, %a)"), out)
    status, _, err = run("parse " .. late)
    assert.are.equal(1, status)
    assert.truthy(has(err, "Relay text, not an ONNX model"), err)
    os.remove(text)
    os.remove(late)
  end)

  it("loads in the REPL, which plans and explains it", function()
    local s = require("devplan.repl").session()
    assert.truthy(s:eval('model("' .. DIR .. 'tiny_cnn.onnx")'):find("model: 1 function(s), 8 calls", 1, true))
    s:eval('annotate{["nn.dense"] = "cuda"}')
    s:eval("plan()")
    assert.truthy(s:eval('explain("%6")'):find("at fc:10:0", 1, true))
  end)

  it("examples/onnx.lua imports, plans and explains a copy by its ONNX node", function()
    local p = assert(io.popen(EXE .. " examples/onnx.lua 2>&1"))
    local out = p:read("a")
    assert.truthy(p:close(), out)
    assert.truthy(has(out, "mobilenet_v3_small.onnx: 159 ONNX nodes became 251 Relay calls"), out)
    assert.truthy(has(out, "first copy: ") and has(out, "(ONNX node /features/"), out)
  end)

  it("plans, reports and explains, naming the ONNX nodes", function()
    local status, out, err = run("plan " .. DIR .. "resnet18.onnx --weights none --annotate nn.conv2d=cuda,nn.dense=cuda"
      .. " --report text")
    assert.are.equal(0, status, err)
    assert.truthy(has(out, "@cuda"), out)
    status, out, err = run("plan " .. DIR .. "tiny_cnn.onnx --annotate nn.dense=cuda --explain")
    assert.are.equal(0, status, err)
    assert.truthy(has(out, "#[metadata]"))
    assert.truthy(has(out, "at fc:10:0"), out)
  end)

  it("names the ONNX node of each copy in the report and of each call in the picture", function()
    local dot = os.tmpname()
    local status, out, err = run("plan " .. DIR .. "tiny_cnn.onnx --annotate nn.conv2d=cuda --report text --dot " .. dot)
    assert.are.equal(0, status, err)
    assert.truthy(has(out, "1,024 bytes  (ONNX node conv1)"), out)
    local f = assert(io.open(dot))
    local text = f:read("a")
    f:close()
    os.remove(dot)
    assert.truthy(has(text, "nn.conv2d\\nconv1") or has(text, "nn.conv2d\nconv1"), text)
    assert.truthy(has(text, "nn.dense\\nfc") or has(text, "nn.dense\nfc"), text)
  end)

  it("runs a pipeline with opt, and parses", function()
    local status, out, err = run("opt " .. DIR .. "tiny_cnn.onnx --weights none -p 'infer_type,annotate(nn.conv2d=cuda),plan_devices'")
    assert.are.equal(0, status, err)
    assert.truthy(has(out, "device_copy") or has(out, "on_device") or has(out, "virtual_device"), out)
    status, out, err = run("opt " .. DIR .. "resnet18.onnx --weights none -p "
      .. "'annotate(nn.conv2d=cuda),plan_devices,partition(by=virtual_device)'")
    assert.are.equal(0, status, err)
    assert.truthy(has(out, "def @main_cuda_0("), out)
    status, out, err = run("parse " .. DIR .. "transformer_encoder_ln.onnx --weights none --types")
    assert.are.equal(0, status, err)
    assert.truthy(has(out, "nn.layer_norm"), out)
  end)
end)
