-- The executable's subcommands (lua/devplan/cli.lua, dispatched from
-- src/cli/main.c): devplan parse / devplan plan on small files, their
-- output, errors and exit statuses.
local dp = require "devplan"
local testing = require "devplan.testing"

local temp = testing.temp_file

-- exit status, standard output, standard error
local function run(args, cwd) return testing.run_devplan(args, nil, cwd) end

local function has(s, sub) return s:find(sub, 1, true) ~= nil end

local SIMPLE = [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = add(%a, %b);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  multiply(%1, %b)
}
]]

-- %a is demanded on the CPU and on the GPU: copies by default, an error with --strict
local TWO_DEMANDS = [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=meta[VirtualDevice][0]);
  %1 = on_device(exp(%a), virtual_device=meta[VirtualDevice][1]);
  (%0, %1)
}
]]

-- contradictory annotations on one value: a conflict even by default
local CONFLICT = [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0]);
  %1 = on_device(%a, virtual_device=meta[VirtualDevice][1]);
  add(%0, %1)
}
]]

local PALETTE = {VirtualDevice = {dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0},
                                  dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}}}
local config = testing.config

describe("devplan subcommands", function()
  teardown(testing.remove_temp_files)

  it("are listed by --help, with the meta palette convention", function()
    local code, out = run("--help")
    assert.equal(0, code)
    for _, c in ipairs{"parse ", "plan ", "opt ", "help "} do assert.truthy(has(out, "\n  " .. c), c) end
    assert.truthy(has(out, "meta[VirtualDevice][0] is the CPU"), out)
    assert.truthy(has(out, "-e CODE"), out) -- the script usage is still there
    local code2, out2 = run("help")
    assert.equal(0, code2)
    assert.equal(out, out2)
    code, out = run("plan --help")
    assert.equal(0, code)
    for _, opt in ipairs{"--target", "--host", "--default", "--meta", "--strict", "--explain"} do
      assert.truthy(has(out, opt), opt)
    end
    code, out = run("parse -h")
    assert.equal(0, code)
    assert.truthy(has(out, "--types"), out)
  end)

  describe("parse", function()
    it("prints the module, which parses back to the same module", function()
      local f = temp(SIMPLE)
      local code, out, err = run("parse " .. f)
      assert.equal(0, code, err)
      assert.equal("", err)
      assert.truthy(has(out, "on_device(%0, virtual_device=VirtualDevice(device_type=cpu, virtual_device_id=0))"), out)
      assert.is_nil(out:find("ty=", 1, true))
      dp.assert_structural_equal(dp.parse(SIMPLE, PALETTE), dp.parse(out))
    end)

    it("adds the checked types with --types", function()
      local code, out = run("parse --types " .. temp(SIMPLE))
      assert.equal(0, code)
      assert.truthy(has(out, "multiply(%1, %b) /* ty=Tensor[(5, 7), float32] */"), out)
    end)

    it("reports a syntax error with file:line:col, the source line and a caret, status 1", function()
      local f = temp("def @main(%a: Tensor[(5, 7), float32]) {\n  add(%a, \n}\n")
      local code, out, err = run("parse " .. f)
      assert.equal(1, code)
      assert.equal("", out)
      assert.truthy(has(err, f .. ":3:1: expected an expression or ')', found '}'\n}\n^\n"), err)
      assert.equal(1, select(2, err:gsub("\n%s*%^\n", "")), err) -- one caret line
    end)

    it("takes the metatable from --meta, and says --meta is needed beyond the palette", function()
      local text = "def @main(%a: Tensor[(2), int64]) {\n"
        .. "  add(on_device(%a, virtual_device=meta[VirtualDevice][2]), meta[relay.Constant][0])\n}\n"
      local f = temp(text)
      local code, out, err = run("parse " .. f)
      assert.equal(1, code)
      assert.truthy(has(err, f .. ":2:36: meta[VirtualDevice][2] is out of range"), err)
      assert.truthy(has(err, "--meta META.lua"), err)
      local meta = temp([[
local dp = require "devplan"
return {VirtualDevice = {dp.VirtualDevice{device_type = "cpu"}, dp.VirtualDevice{device_type = "cuda"},
                         dp.VirtualDevice{device_type = "cuda", virtual_device_id = 1}},
        ["relay.Constant"] = {dp.const({3, 4}, "int64")}}
]], ".lua")
      code, out, err = run("parse " .. f .. " --meta " .. meta)
      assert.equal(0, code, err)
      assert.truthy(has(out, "virtual_device=VirtualDevice(device_type=cuda, virtual_device_id=1)"), out)
      code, out = run("parse --meta=" .. meta .. " " .. f)
      assert.equal(0, code)
      assert.truthy(has(out, "device_type=cuda, virtual_device_id=1"), out)
    end)

    it("reports a bad metatable file and a missing file, status 1", function()
      local f = temp(SIMPLE)
      local code, _, err = run("parse " .. f .. " --meta " .. temp("return 5", ".lua"))
      assert.equal(1, code)
      assert.truthy(has(err, "must return the metatable (a table), it returned a number"), err)
      code, _, err = run("parse " .. f .. " --meta " .. temp("error('broken meta')", ".lua"))
      assert.equal(1, code)
      assert.truthy(has(err, "broken meta"), err)
      code, _, err = run("parse /nonexistent/x.relay")
      assert.equal(1, code)
      assert.truthy(has(err, "cannot open /nonexistent/x.relay"), err)
    end)
  end)

  describe("plan", function()
    it("prints the module PlanDevices plans", function()
      local f = temp(TWO_DEMANDS)
      local code, out, err = run("plan " .. f .. " --target llvm --target cuda --default cuda")
      assert.equal(0, code, err)
      local expected = dp.passes.PlanDevices(config("cuda"))(dp.parse(TWO_DEMANDS, PALETTE))
      assert.equal(tostring(expected), out)
      assert.truthy(has(out, "device_copy(%a, src_virtual_device=VirtualDevice(device_type=cpu"), out)
    end)

    it("follows --default and --host", function()
      local f = temp("def @main(%a: Tensor[(5, 7), float32]) {\n  negative(%a)\n}\n")
      local _, out = run("plan " .. f .. " --target llvm --target cuda --default cuda")
      assert.truthy(has(out, 'virtual_device=VirtualDevice(device_type=cuda, virtual_device_id=0, target="cuda -host=llvm")) {'), out)
      _, out = run("plan " .. f .. " --target llvm --target cuda --default cpu")
      assert.truthy(has(out, 'virtual_device=VirtualDevice(device_type=cpu, virtual_device_id=0, target="llvm -host=llvm")) {'), out)
      _, out = run("plan " .. f .. " --target cuda --host 'llvm -mcpu=skylake'")
      assert.truthy(has(out, [[target="cuda -host='llvm -mcpu=skylake'"]]), out)
    end)

    it("reports a conflict with both constraints, their positions and the chain, status 1", function()
      local f = temp(CONFLICT)
      local code, out, err = run("plan " .. f .. " --target llvm --target cuda")
      assert.equal(1, code)
      assert.equal("", out)
      assert.truthy(err:find("^" .. f:gsub("%p", "%%%0") .. ":4:8: conflicting virtual devices"), err)
      assert.truthy(has(err, "it must be on cpu because of the annotation on_device at " .. f .. ":3:8"), err)
      assert.truthy(has(err, "it must also be on cuda because of the annotation on_device at " .. f .. ":4:8"), err)
      -- the source line with a caret under the column, then the chain
      assert.truthy(has(err, "\n  %1 = on_device(%a, virtual_device=meta[VirtualDevice][1]);\n       ^\n"), err)
      assert.truthy(has(err, "the two meet at"), err)
    end)

    it("--strict rejects what the default resolves with copies", function()
      local f = temp(TWO_DEMANDS)
      local code, out = run("plan " .. f .. " --target llvm --target cuda")
      assert.equal(0, code)
      assert.truthy(has(out, "device_copy"), out)
      local err
      code, out, err = run("plan " .. f .. " --target llvm --target cuda --strict")
      assert.equal(1, code)
      assert.equal("", out)
      assert.truthy(has(err, "conflicting virtual devices"), err)
      assert.truthy(has(err, f .. ":3:8") and has(err, f .. ":4:8"), err)
      assert.truthy(has(err, "flows through an argument of negative"), err)
    end)

    it("--strict plans a consistent module as the default does", function()
      local f = temp(SIMPLE)
      local c1, a = run("plan " .. f .. " --target llvm --target cuda")
      local c2, b = run("plan " .. f .. " --target llvm --target cuda --strict")
      assert.equal(0, c1)
      assert.equal(0, c2)
      assert.equal(a, b)
    end)

    it("--explain says, after the module, each parameter's and result's device and why", function()
      local f = temp(SIMPLE)
      local code, out, err = run("plan " .. f .. " --target llvm --target cuda --explain")
      assert.equal(0, code, err)
      local module, explained = out:match("^(.-\n)(// explain @main\n.*)$")
      assert.truthy(module, out)
      local _, plain = run("plan " .. f .. " --target llvm --target cuda")
      assert.equal(plain, module)
      local cpu = 'VirtualDevice(device_type=cpu, virtual_device_id=0, target="llvm -host=llvm")'
      assert.truthy(has(explained, "//   %a: " .. cpu), explained)
      assert.truthy(has(explained, "//   %b: " .. cpu), explained)
      assert.truthy(has(explained, "//   result: " .. cpu), explained)
      assert.truthy(has(explained, "%a at " .. f .. ":2:11 is on cpu because of the annotation on_device at "
        .. f .. ":4:8"), explained)
      assert.truthy(has(explained, "//       it flows through an argument of add at " .. f .. ":3:8"), explained)
      -- the explanation is comments: the whole output parses back to the planned module
      dp.assert_structural_equal(dp.parse(plain), dp.parse(out))
    end)

    it("reports usage and configuration errors, status 1", function()
      local f = temp(SIMPLE)
      local cases = {
        {"plan " .. f .. " --report xml", "--report takes text or json"},
        {"plan " .. f .. " --target tpu", "unknown target kind 'tpu'"},
        {"plan " .. f .. " --target llvm --default tpu", "unknown device type 'tpu'"},
        {"plan " .. f .. " --target llvm --bogus", "devplan plan: unknown option '--bogus'"},
        {"plan " .. f .. " --target", "--target needs a value"},
        {"plan " .. f .. " " .. f .. " --target llvm", "one file expected"},
        {"parse", "a FILE is needed"},
        {"parse " .. f .. " --types=yes", "--types takes no value"},
      }
      for _, c in ipairs(cases) do
        local code, out, err = run(c[1])
        assert.equal(1, code, c[1])
        assert.equal("", out, c[1])
        assert.truthy(has(err, c[2]), c[1] .. "\n" .. err)
      end
    end)

    it("rejects empty option values and empty --annotate items", function()
      local f = temp(SIMPLE)
      local cases = {
        {"plan " .. f .. " --annotate ''", "devplan plan: --annotate needs a value, got an empty one"},
        {"plan " .. f .. " --annotate=", "devplan plan: --annotate needs a value, got an empty one"},
        {"plan " .. f .. " --annotate ,", "got ',' (an empty item)"},
        {"plan " .. f .. " --annotate add=cuda,,multiply=cpu", "got 'add=cuda,,multiply=cpu' (an empty item)"},
        {"plan " .. f .. " --annotate 'add=cuda, '", "(an empty item)"},
        {"plan " .. f .. " --rules ''", "--rules needs a value, got an empty one"},
        {"plan " .. f .. " --target ''", "--target needs a value, got an empty one"},
        {"plan " .. f .. " -o ''", "-o needs a value, got an empty one"},
        {"opt " .. f .. " -p ''", "-p needs a value, got an empty one"},
      }
      for _, c in ipairs(cases) do
        local code, out, err = run(c[1])
        assert.equal(1, code, c[1])
        assert.equal("", out, c[1])
        assert.truthy(has(err, c[2]), c[1] .. "\n" .. err)
      end
    end)

    it("says so when the module is empty: an error to plan or opt, a note to parse", function()
      for _, text in ipairs{"", "\n\n", '#[version = "0.0.5"]\n// nothing here\n'} do
        local f = temp(text)
        local code, out, err = run("plan " .. f)
        assert.equal(1, code)
        assert.equal("", out)
        assert.equal("devplan plan: " .. f .. " defines nothing (no def, type or primfn): there is nothing to plan\n", err)
        code, out, err = run("opt " .. f .. " -p infer_type")
        assert.equal(1, code)
        assert.truthy(has(err, "devplan opt: " .. f .. " defines nothing"), err)
        code, out, err = run("parse " .. f)
        assert.equal(0, code)
        assert.equal('#[version = "0.0.5"]\n', out)
        assert.equal("devplan parse: note: " .. f .. " defines nothing: the module is empty\n", err)
      end
      local code, _, err = run("plan - </dev/null")
      assert.equal(1, code)
      assert.truthy(has(err, "standard input defines nothing"), err)
      -- a module of type definitions only is not empty
      local code2, _, err2 = run("plan " .. temp('#[version = "0.0.5"]\ntype Box[A] { Box(A) }\n'))
      assert.equal(0, code2, err2)
    end)

    it("needs a cuda target for meta[VirtualDevice][1] without --meta", function()
      local code, _, err = run("plan " .. temp(TWO_DEMANDS) .. " --target llvm")
      assert.equal(1, code)
      assert.truthy(has(err, "cuda"), err)
    end)
  end)

  it("runs an existing file named like a subcommand as a script", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert.is_true(os.execute("mkdir " .. dir))
    local f = assert(io.open(dir .. "/plan", "w"))
    f:write("print('a script named plan', ...)\n")
    f:close()
    local code, out = run("plan x", dir)
    os.execute("rm -rf " .. dir)
    assert.equal(0, code)
    assert.equal("a script named plan\tx\n", out)
  end)
end)
