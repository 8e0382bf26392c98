-- The command line as a compiler driver (lua/devplan/cli.lua): devplan opt
-- with pipelines, plan --annotate/--rules/--load, standard input and
-- output, instruments, reproducers, help and suggestions.
local dp = require "devplan"
local testing = require "devplan.testing"

local RESNET = testing.model("resnet18")
local temp, run, slurp = testing.temp_file, testing.run_devplan, testing.read_file

local function has(s, sub) return s:find(sub, 1, true) ~= nil end

local SMALL = testing.SMALL_MODULE

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}

describe("devplan opt", function()
  teardown(testing.remove_temp_files)

  it("runs a pipeline and prints what the same pipeline gives in Lua", function()
    local f = temp(SMALL)
    local code, out, err = run("opt " .. f .. " -p 'infer_type,annotate(exp=cuda),plan_devices'")
    assert.equal(0, code, err)
    assert.equal("", err)
    local expected = dp.pipeline.build("infer_type,annotate(exp=cuda),plan_devices", {config = config})(dp.parse(SMALL))
    assert.equal(tostring(expected), out)
  end)

  it("reads standard input with - and writes -o OUT (- for standard output)", function()
    local outfile = temp("", ".out")
    local code, out, err = run("opt - -p infer_type -o " .. outfile, SMALL)
    assert.equal(0, code, err)
    assert.equal("", out)
    dp.assert_structural_equal(dp.parse(SMALL), dp.parse(slurp(outfile)))
    code, out = run("opt - --pipeline=infer_type -o -", SMALL)
    assert.equal(0, code)
    dp.assert_structural_equal(dp.parse(SMALL), dp.parse(out))
  end)

  it("prints after every pass, times the passes and verifies each, on standard error", function()
    local f = temp(SMALL)
    local code, out, err = run("opt " .. f .. " -p 'infer_type,annotate(exp=cuda),plan_devices' --print-after-all"
      .. " --time-passes --verify-each")
    assert.equal(0, code, err)
    assert.truthy(has(out, "device_copy("), out)
    assert.truthy(has(err, "// ---- after InferType ----\n#[version"), err)
    assert.truthy(has(err, "// ---- after AnnotateVirtualDevices(exp=cuda) ----"), err)
    assert.truthy(has(err, "// ---- after PlanDevices ----"), err)
    assert.truthy(has(err, "pass timings (CPU seconds)"), err)
    assert.truthy(err:find("%d+%.%d+%%%s+PlanDevices\n"), err)
    code, out, err = run("opt " .. f .. " -p 'infer_type,annotate(exp=cuda),plan_devices' --print-changed --short-devices")
    assert.equal(0, code)
    assert.falsy(has(err, "after InferType"), err)
    assert.truthy(has(err, "// @cuda = VirtualDevice(device_type=cuda, virtual_device_id=0)"), err)
    code, _, err = run("opt " .. f .. " -p 'infer_type,plan_devices' --print-before plan_devices")
    assert.equal(0, code)
    assert.truthy(err:find("^// %-%-%-%- before PlanDevices"), err)
  end)

  it("loads user passes with --load and lists the passes a pipeline can name", function()
    local load = temp([[
local dp = require "devplan"
dp.pipeline.register{name = "exp_on_gpu", help = "every exp on the GPU",
  make = function() return dp.pipeline.annotate_ops{exp = "cuda"} end}
]], ".lua")
    local f = temp(SMALL)
    local code, out, err = run("opt " .. f .. " --load " .. load .. " -p exp_on_gpu,plan_devices")
    assert.equal(0, code, err)
    assert.truthy(has(out, "device_copy(%2, src_virtual_device=VirtualDevice(device_type=cuda"), out)
    code, out = run("opt --load " .. load .. " --list-passes")
    assert.equal(0, code)
    for _, n in ipairs{"infer_type", "annotate", "plan_devices", "verify", "exp_on_gpu"} do
      assert.truthy(out:find("\n  " .. n .. " "), n .. "\n" .. out)
    end
  end)

  it("shows a bad pipeline with a caret under the column and a suggestion", function()
    local code, out, err = run("opt " .. temp(SMALL) .. " -p 'infer_type,plan_devics'")
    assert.equal(1, code)
    assert.equal("", out)
    assert.truthy(has(err, "pipeline:1:12: unknown pass 'plan_devics'; did you mean 'plan_devices'?"), err)
    assert.truthy(has(err, "\ninfer_type,plan_devics\n           ^"), err)
    code, _, err = run("opt " .. temp(SMALL))
    assert.equal(1, code)
    assert.truthy(has(err, "a pipeline is needed: -p PIPELINE"), err)
  end)

  it("writes a reproducer when a pass fails, which --run-reproducer replays", function()
    local load = temp([[
local dp = require "devplan"
dp.pipeline.register{name = "explode", make = function()
  return dp.pass("Explode", function(mod) error("boom in a user pass") end) end}
]], ".lua")
    local repro = temp("", ".repro.relay")
    local f = temp(SMALL)
    local code, out, err = run("opt " .. f .. " --load " .. load .. " -p infer_type,explode --target llvm"
      .. " --target cuda --default cuda --reproducer " .. repro)
    assert.equal(1, code)
    assert.equal("", out)
    assert.truthy(has(err, "pass Explode failed: " .. load .. ":3: boom in a user pass"), err)
    assert.truthy(has(err, "reproducer written to " .. repro), err)
    local text = slurp(repro)
    assert.truthy(text:find("^// devplan reproducer"), text)
    assert.truthy(has(text, "\n// pipeline: infer_type,explode\n"), text)
    assert.truthy(has(text, "\n// arg: --default\n// arg: cuda\n"), text)
    dp.assert_structural_equal(dp.parse(SMALL), dp.parse(text)) -- the input module, re-parseable
    local code2, out2, err2 = run("opt --run-reproducer " .. repro)
    assert.equal(1, code2)
    assert.equal("", out2)
    assert.truthy(has(err2, "pass Explode failed: " .. load .. ":3: boom in a user pass"), err2)
    -- by default the reproducer goes to a new temporary file, named in the message
    code, _, err = run("opt " .. f .. " --load " .. load .. " -p explode")
    assert.equal(1, code)
    local path = err:match("reproducer written to (%S+);")
    assert.truthy(path, err)
    assert.truthy(slurp(path):find("^// devplan reproducer"))
    os.remove(path)
    code, _, err = run("opt --run-reproducer " .. f)
    assert.equal(1, code)
    assert.truthy(has(err, "is not a devplan reproducer"), err)
  end)
end)

describe("devplan plan", function()
  it("places operators with --annotate and plans with default targets llvm and cuda", function()
    local code, out, err = run("plan " .. RESNET .. " --annotate nn.conv2d=cuda,nn.dense=cuda")
    assert.equal(0, code, err)
    local annotated = dp.parse(slurp(testing.shared_dir .. "/models/resnet18.annotated.relay"), testing.META)
    local expected = dp.passes.PlanDevices(config)(annotated)
    dp.assert_structural_equal(expected, dp.parse(out))
    -- repeated --annotate is the same
    local code2, out2 = run("plan " .. RESNET .. " --annotate nn.conv2d=cuda --annotate nn.dense=cuda")
    assert.equal(0, code2)
    assert.equal(out, out2)
  end)

  it("annotates models that call functions, not only operators (lstm)", function()
    local code, out, err = run("plan " .. testing.model("lstm") .. " --annotate nn.dense=cuda --report text")
    assert.equal(0, code, err)
    -- 151 operator calls (the 10 calls of the cell's function literals are
    -- not work of their own: their bodies' operators are counted)
    assert.truthy(has(out, "total: 151 calls"), out)
  end)

  it("takes rules from --rules files, run before planning", function()
    local rules = temp([[
local dp = require "devplan"
local gpu = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
return dp.passes.AnnotateVirtualDevices{["nn.conv2d"] = function() return gpu end,
                                        ["nn.dense"] = function() return gpu end}
]], ".lua")
    local code, out, err = run("plan " .. RESNET .. " --rules " .. rules)
    assert.equal(0, code, err)
    local _, expected = run("plan " .. RESNET .. " --annotate nn.conv2d=cuda,nn.dense=cuda")
    assert.equal(expected, out)
  end)

  -- A command that ran no user code leaves its memory to the system at exit
  -- (src/cli/main.c); one that ran a --rules, --load or annotate(rules=)
  -- file closes its Lua state, so the file's finalizers run as under lua5.4.
  it("runs the finalizers of --rules, --load and annotate(rules=) files at exit", function()
    local function finalizer_writes(mark)
      return ([[
local dp = require "devplan"
local mark = %q
-- reachable to the end (a global): only closing the state finalizes it
finalized_at_exit = setmetatable({}, {__gc = function()
  local f = assert(io.open(mark, "w")); f:write("finalized"); f:close()
end})
return dp.passes.AnnotateVirtualDevices{add = function() return dp.VirtualDevice{device_type = "cuda"} end}
]]):format(mark)
    end
    local f = temp(SMALL)
    for _, how in ipairs{"plan %s --rules %s", "opt %s --load %s -p plan_devices",
                         "opt %s -p 'annotate(rules=%s),plan_devices'"} do
      local mark = os.tmpname()
      os.remove(mark)
      local rules = temp(finalizer_writes(mark), ".lua")
      local code, _, err = run(how:format(f, rules))
      assert.equal(0, code, err)
      assert.equal("finalized", slurp(mark), how)
      os.remove(mark)
    end
  end)

  it("says what is wrong with an --annotate", function()
    local cases = {
      {"--annotate nn.conv2x=cuda", "unknown operator 'nn.conv2x'; did you mean 'nn.conv2d'?"},
      {"--annotate nn.conv2d", "--annotate wants OP=DEVICE"},
      {"--annotate nn.conv2d=tpu", "unknown device type 'tpu'"},
      {"--annotate nn.conv2d=cuda:x", "is not a device name"},
    }
    for _, c in ipairs(cases) do
      local code, out, err = run("plan " .. RESNET .. " " .. c[1])
      assert.equal(1, code, c[1])
      assert.equal("", out)
      assert.truthy(has(err, c[2]), c[1] .. "\n" .. err)
    end
  end)

  it("--explain also says why each copy was inserted, as comments", function()
    local code, out, err = run("plan " .. RESNET .. " --annotate nn.conv2d=cuda,nn.dense=cuda --explain")
    assert.equal(0, code, err)
    assert.truthy(has(out, "\n// @main %90 is a device_copy PlanDevices inserted: it copies a Tensor[(1, 1000), float32]"
      .. " (4,000 bytes) from @cuda to @cpu\n//   the value is made on @cuda:\n//     nn.dense at "), out)
    assert.truthy(out:find("\n//   and used on @cpu:\n//     nn.bias_add at [^\n]* is on cpu because of the default device"), out)
    dp.parse(out) -- comments: it still parses
  end)

  it("prints the report as text or JSON instead of the module", function()
    local code, out, err = run("plan " .. RESNET .. " --annotate nn.conv2d=cuda,nn.dense=cuda --report text")
    assert.equal(0, code, err)
    assert.truthy(has(out, "1 device_copy, 4,000 bytes:"), out)
    assert.truthy(has(out, "%90 = copy of %88  @cuda -> @cpu  Tensor[(1, 1000), float32]  4,000 bytes"), out)
    code, out = run("plan " .. RESNET .. " --annotate nn.conv2d=cuda,nn.dense=cuda --report json")
    assert.equal(0, code)
    local json = require "dkjson"
    local r = json.decode(out)
    assert.equal(1, #r.copies)
    assert.equal(4000, r.copies[1].bytes)
    assert.equal("cuda", r.copies[1].src)
    assert.equal("cpu", r.copies[1].dst)
    assert.equal(4000, r.totals.bytes_copied)
  end)

  it("writes a reproducer only when asked", function()
    local conflict = temp([[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0]);
  %1 = on_device(%a, virtual_device=meta[VirtualDevice][1]);
  add(%0, %1)
}
]])
    local code, _, err = run("plan " .. conflict)
    assert.equal(1, code)
    assert.falsy(has(err, "reproducer"), err)
    local repro = temp("", ".repro")
    code, _, err = run("plan " .. conflict .. " --reproducer " .. repro)
    assert.equal(1, code)
    assert.truthy(has(err, "reproducer written to " .. repro), err)
    assert.truthy(has(slurp(repro), "// pipeline: plan_devices(all_conflicts=true)\n"))
    local c2, _, e2 = run("opt --run-reproducer " .. repro)
    assert.equal(1, c2)
    assert.truthy(has(e2, "conflicting virtual devices"), e2)
  end)
end)

describe("devplan help and suggestions", function()
  it("help COMMAND and COMMAND --help print the command's options", function()
    local code, out = run("help opt")
    assert.equal(0, code)
    for _, o in ipairs{"-p PIPELINE", "--load FILE.lua", "--print-after-all", "--time-passes", "--verify-each",
                       "--run-reproducer FILE", "--short-devices", "--report text|json"} do
      assert.truthy(has(out, o), o .. "\n" .. out)
    end
    local code2, out2 = run("opt --help")
    assert.equal(0, code2)
    assert.equal(out, out2)
    code, out = run("help plan")
    for _, o in ipairs{"--annotate OP=DEVICE", "--rules FILE.lua", "--svg FILE", "--dot FILE", "--explain"} do
      assert.truthy(has(out, o), o)
    end
  end)

  it("suggests the command meant, and never runs a model as Lua", function()
    local code, out, err = run("pln x.relay")
    assert.equal(1, code)
    assert.equal("", out)
    assert.truthy(has(err, "unknown command 'pln'; did you mean 'plan'?"), err)
    code, out, err = run(RESNET)
    assert.equal(1, code)
    assert.equal("", out)
    assert.truthy(has(err, "is a model, not a Lua script"), err)
    assert.truthy(has(err, "devplan plan " .. RESNET .. " --annotate nn.conv2d=cuda"), err)
    code, _, err = run("help plna")
    assert.equal(1, code)
    assert.truthy(has(err, "did you mean 'plan'?"), err)
    code, _, err = run("plan " .. RESNET .. " --anotate nn.conv2d=cuda")
    assert.equal(1, code)
    assert.truthy(has(err, "unknown option '--anotate'; did you mean '--annotate'?"), err)
  end)
end)
