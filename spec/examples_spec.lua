-- Every example a new user starts from runs, and says what it should; and
-- so does the README's first session. Both run in a copy of the project with
-- nothing beside it (no ../shared: what a user who clones the project has),
-- from the copy's root as the README says.
local testing = require "devplan.testing"

local EXE = testing.exe

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return out, ok and 0 or code
end

-- examples/NAME.lua -> how to run it (arguments after the script, or a
-- whole command line) and what its output must say.
local EXAMPLES = {
  quickstart = {finds = {"device_copy(", "is on cpu because of the annotation on_device"}},
  devices = {finds = {"VirtualDevice("}},
  ir_basics = {finds = {"add : Tensor[(5, 7), float32]", "on_device(%0, virtual_device=VirtualDevice(device_type=cpu))",
                        "example.double(%a)"}},
  custom_default = {check = function(out)
    local tvm, custom = out:match("^(.-)%-%- with the custom default:(.*)$")
    assert.truthy(tvm, out)
    assert.truthy(tvm:find("device_copy(", 1, true), out)
    assert.falsy(custom:find("device_copy(", 1, true), out)
  end},
  pipeline = {finds = {"pipeline: infer_type,exp_on_gpu,plan_devices,verify", "// ---- after PlanDevices ----",
                       "ran: InferType, AnnotateVirtualDevices, ExpOnGpu, PlanDevices, Verify, Sequential",
                       "pass timings"}},
  resnet18_gpu = {args = "models/resnet18.relay resnet18.svg", files = {"resnet18.svg"},
                  finds = {"1 device_copy, 4,000 bytes:", "drawn: resnet18.svg"}},
  accelerator = {finds = {"resnet18.relay: 19 functions besides @main", "ext_dev: 9 functions",
                          "@main_ext_dev_0: nn.conv2d, nn.batch_norm, nn.relu"}},
  onnx = {finds = {"mobilenet_v3_small.onnx: 159 ONNX nodes became 251 Relay calls", "(ONNX node "}},
  byoc = {finds = {"@main_ccompiler_0 runs on ext_dev (ccompiler): nn.dense, nn.bias_add, nn.relu",
                   "@main_llvm_0 runs on cpu (llvm): tanh"}},
  latency = {args = "models/squeezenet.relay latency.svg", files = {"latency.svg"},
             finds = {"HEFT (devices side by side)", "(modelled: no device ran anything)", "drawn: latency.svg"}},
  rules = {command = "plan models/resnet18.relay --rules examples/rules.lua --report text",
           finds = {"1 device_copy"}},
}

-- A copy of the project's files a user runs (the executable under test as
-- its bin/devplan) in a new folder with nothing beside it.
local copy, parent
local function make_copy()
  local p = io.popen("mktemp -d")
  parent = p:read("l")
  p:close()
  copy = parent .. "/devplan"
  local root = assert(require("devplan").root)
  local cmd = table.concat({
    "mkdir -p " .. sh_quote(copy .. "/bin") .. " " .. sh_quote(copy .. "/lib"),
    "cd " .. sh_quote(root),
    "cp -R lua examples models docs README.md " .. sh_quote(copy),
    "cp " .. sh_quote(EXE) .. " " .. sh_quote(copy .. "/bin/devplan"),
    "cp lib/devplan.so " .. sh_quote(copy .. "/lib/"),
  }, " && ")
  local out, code = sh(cmd)
  assert.equal(0, code, out)
end

local function run_in_copy(args, env)
  return sh("cd " .. sh_quote(copy) .. " && " .. (env or "") .. "bin/devplan " .. args)
end

describe("examples", function()
  setup(make_copy)
  teardown(function() os.execute("rm -rf " .. sh_quote(parent)) end)

  it("are all run here (a new example needs an entry)", function()
    local names = {}
    for _, f in ipairs(testing.lua_files(require("devplan").root .. "/examples")) do
      names[#names + 1] = f:gsub("%.lua$", "")
    end
    assert.is_true(#names >= 8)
    for _, n in ipairs(names) do assert.truthy(EXAMPLES[n], "examples/" .. n .. ".lua is not run by this spec") end
  end)

  for name, e in pairs(EXAMPLES) do
    it(name .. " runs from a copy of the project alone", function()
      local out, code = run_in_copy(e.command or ("examples/" .. name .. ".lua " .. (e.args or "")))
      assert.are.equal(0, code, out)
      for _, s in ipairs(e.finds or {}) do assert.truthy(out:find(s, 1, true), s .. "\n" .. out) end
      if e.check then e.check(out) end
      for _, f in ipairs(e.files or {}) do
        assert.truthy(testing.read_file(copy .. "/" .. f):find("<svg", 1, true), f)
        os.remove(copy .. "/" .. f)
      end
      assert.falsy(out:find("shared", 1, true), out)
    end)
  end
end)

describe("the README's first session", function()
  setup(make_copy)
  teardown(function() os.execute("rm -rf " .. sh_quote(parent)) end)

  -- The section "## A first session" of README.md: its command lines and
  -- its REPL lines ("> ...").
  local function session()
    local readme = testing.read_file(require("devplan").root .. "/README.md")
    local section = assert(readme:match("\n## A first session\n(.-)\n## "), "README.md has no '## A first session'")
    local commands, repl = {}, {}
    for line in section:gmatch("[^\n]+") do
      local cmd = line:match("^(bin/devplan .-)%s*#") or line:match("^(bin/devplan .-)%s*$")
      if cmd then commands[#commands + 1] = cmd end
      local input = line:match("^> (.*)$")
      if input then repl[#repl + 1] = input end
    end
    return section, commands, repl
  end

  it("runs from a copy of the project alone, and prints what the README shows", function()
    local section, commands, repl = session()
    assert.is_true(#commands >= 3, section)
    for _, cmd in ipairs(commands) do
      assert.falsy(cmd:find("shared", 1, true), cmd)
      local out, code = sh("cd " .. sh_quote(copy) .. " && " .. cmd:gsub("^bin/devplan", "bin/devplan"))
      assert.equal(0, code, cmd .. "\n" .. out)
      if cmd:find("--report text", 1, true) and cmd:find("resnet18.relay", 1, true) then
        -- the README's report is the one the command prints
        local shown = section:match("```\n(device%s+calls.-)\n```")
        assert.truthy(shown, section)
        for line in shown:gmatch("[^\n]+") do
          if line ~= "..." then assert.truthy(out:find(line, 1, true), line .. "\n" .. out) end
        end
      end
    end
    for _, f in ipairs{"resnet18.svg", "resnet18.relay"} do os.remove(copy .. "/" .. f) end
    -- the REPL lines, fed to a REPL session in the copy
    assert.is_true(#repl >= 3, section)
    local script = copy .. "/repl_session.lua"
    local f = assert(io.open(script, "w"))
    f:write("local s = require('devplan.repl').session()\n")
    for _, line in ipairs(repl) do f:write("io.write(s:eval(", string.format("%q", line), "))\n") end
    f:close()
    local out, code = run_in_copy("repl_session.lua")
    assert.equal(0, code, out)
    local shown = section:match("\n(%%90 is a device_copy[^\n]*)")
    assert.truthy(shown, section)
    assert.truthy(out:find(shown, 1, true), shown .. "\n" .. out)
    assert.falsy(out:find("error", 1, true), out)
    -- the Lua of the session, as a script
    local lua = section:match("```lua\n(.-)```")
    assert.truthy(lua, section)
    f = assert(io.open(copy .. "/first_session.lua", "w"))
    f:write(lua)
    f:close()
    out, code = run_in_copy("first_session.lua")
    assert.equal(0, code, out)
    assert.truthy(out:find("1 device_copy, 4,000 bytes:", 1, true), out)
    assert.truthy(testing.read_file(copy .. "/resnet18.svg"):find("<svg", 1, true))
  end)

  it("has no test material beside it: devplan.testing says so clearly", function()
    local out, code = run_in_copy("-e 'print(require(\"devplan.testing\").shared_dir)'")
    assert.equal(1, code)
    assert.truthy(out:find("devplan.testing: the shared test material was not found: no "
      .. parent .. "/shared/conformance/run.lua (set DEVPLAN_SHARED to its folder)", 1, true), out)
    out, code = run_in_copy("-e 'print(require(\"devplan.testing\").model(\"resnet18\"))'")
    assert.equal(0, code, out)
    assert.equal(copy .. "/models/resnet18.relay\n", out)
  end)
end)
