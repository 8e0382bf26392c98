-- Readable output: the printer's options (dp.astext: short_devices,
-- param_lines, names; unknown options are errors) and the command line's
-- --short-devices, --types and colour (on a terminal or --color, never in
-- a pipe).
local dp = require "devplan"
local testing = require "devplan.testing"


local TWO = [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=meta[VirtualDevice][0]);
  %1 = on_device(exp(%b), virtual_device=meta[VirtualDevice][1]);
  add(%0, %1)
}
]]

local config = testing.config("cuda")

local function run(args)
  local code, out, err = testing.run_devplan(args)
  return code, out .. err
end

describe("dp.astext options", function()
  local planned = dp.passes.PlanDevices(config)(dp.parse(TWO, testing.META))

  it("short_devices names each device once in a legend and uses @names", function()
    local text = dp.astext(planned, {short_devices = true})
    local header = '#[version = "0.0.5"]\n'
    assert.equal(header, text:sub(1, #header))
    local legend = text:sub(#header + 1):match("^(// @.-\n)def ")
    assert.equal('// @cpu = VirtualDevice(device_type=cpu, virtual_device_id=0, target="llvm -host=llvm")\n'
      .. '// @cuda = VirtualDevice(device_type=cuda, virtual_device_id=0, target="cuda -host=llvm")\n', legend)
    local body = text:sub(#header + #legend + 1)
    assert.falsy(body:find("VirtualDevice(", 1, true), body)
    assert.truthy(body:find("%a {virtual_device=@cpu}: Tensor[(5, 7), float32]", 1, true), body)
    assert.truthy(body:find("device_copy(%1, src_virtual_device=@cpu, dst_virtual_device=@cuda)", 1, true), body)
    -- the plain text is unchanged
    assert.equal(tostring(planned), dp.astext(planned))
  end)

  it("names ids, scopes and devices that would clash apart", function()
    local mk = function(t) return dp.VirtualDevice(t) end
    local x = dp.var("x", dp.type.tensor({2}))
    local body = x
    for _, vd in ipairs{mk{device_type = "cuda", virtual_device_id = 1, memory_scope = "texture"},
                        mk{device_type = "cuda", virtual_device_id = 0},
                        mk{device_type = "cuda"},
                        mk{device_type = "cpu", memory_scope = "global"}} do
      body = dp.call("on_device", {body}, {virtual_device = vd})
    end
    local text = dp.astext(dp.fn({x}, body), {short_devices = true})
    assert.truthy(text:find("// @cuda:1.texture = VirtualDevice(device_type=cuda, virtual_device_id=1, memory_scope=\"texture\")", 1, true), text)
    assert.truthy(text:find("// @cuda = VirtualDevice(device_type=cuda, virtual_device_id=0)", 1, true), text)
    assert.truthy(text:find("// @cuda#2 = VirtualDevice(device_type=cuda)", 1, true), text)
    assert.truthy(text:find("// @cpu.global = VirtualDevice(device_type=cpu, memory_scope=\"global\")", 1, true), text)
  end)

  it("param_lines puts each parameter of a function of two or more on its own line", function()
    local text = dp.astext(planned, {param_lines = true})
    assert.truthy(text:find("def @main(%a {virtual_device=VirtualDevice(device_type=cpu, virtual_device_id=0, "
      .. "target=\"llvm -host=llvm\")}: Tensor[(5, 7), float32],\n    %b ", 1, true), text)
    -- whitespace only: it parses back to the same module
    dp.assert_structural_equal(planned, dp.parse(text))
  end)

  it("names = true also returns the node behind every printed name", function()
    local text, names = dp.astext(planned, {names = true})
    assert.equal(tostring(planned), text)
    assert.equal(planned.main.params[1], names.main["%a"])
    local copies = 0
    for name, e in pairs(names.main) do
      assert.truthy(text:find(name, 1, true), name)
      if e.kind == "call" and e.callee.name == "device_copy" then
        copies = copies + 1
        assert.truthy(text:find("  " .. name .. " = device_copy(", 1, true), name)
      end
    end
    assert.equal(1, copies)
    local _, enames = dp.astext(dp.parse_expr("fn (%x: Tensor[(2), float32]) { let %y = negative(%x); add(%y, %y) }"),
                                {names = true})
    assert.truthy(enames[""]["%x"] and enames[""]["%y"])
  end)

  it("rejects unknown options and anything but a module or an expression", function()
    local ok, err = pcall(dp.astext, planned, {short_device = true})
    assert.is_false(ok)
    assert.truthy(err:find("unknown option 'short_device'", 1, true), err)
    assert.truthy(err:find("types, short_devices, param_lines, names", 1, true), err)
    assert.has_error(function() dp.astext(planned, 3) end)
    assert.has_error(function() dp.astext(3) end)
    assert.has_error(function() dp.astext(3, {names = true}) end)
  end)
end)

describe("devplan --short-devices, --types and colour", function()
  local f = testing.temp_file(TWO)
  teardown(testing.remove_temp_files)

  it("--short-devices prints the legend and one parameter per line", function()
    local code, out = run("plan " .. f .. " --target llvm --target cuda --short-devices")
    assert.equal(0, code, out)
    assert.truthy(out:find("\n// @cpu = VirtualDevice(", 1, true), out)
    assert.truthy(out:find("def @main(%a {virtual_device=@cpu}: Tensor[(5, 7), float32],\n    %b {virtual_device=@cuda}", 1, true), out)
    code, out = run("plan " .. f .. " --target llvm --target cuda --short-devices --types")
    assert.truthy(out:find("/* ty=Tensor[(5, 7), float32] */", 1, true), out)
  end)

  it("colours with --color, never in a pipe", function()
    local _, plain = run("plan " .. f .. " --target llvm --target cuda --short-devices")
    assert.falsy(plain:find("\27[", 1, true))
    local _, coloured = run("plan " .. f .. " --target llvm --target cuda --short-devices --color")
    assert.truthy(coloured:find("\27%[1;31mdevice_copy\27%[0m"), coloured)
    assert.truthy(coloured:find("virtual_device=\27%[1;%d+m@cpu\27%[0m"), coloured)
    -- without the escapes it is the plain text
    assert.equal(plain, (coloured:gsub("\27%[[%d;]*m", "")))
    local _, none = run("plan " .. f .. " --target llvm --target cuda --color --no-color")
    assert.falsy(none:find("\27[", 1, true))
  end)
end)
