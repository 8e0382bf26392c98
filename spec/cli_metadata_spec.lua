-- The command line and the metadata section (issue 9): a file with its own
-- #[metadata] is read with it (no palette guessed over it); --meta still
-- wins; --show-meta-data writes the section, and the output reads back.
local dp = require "devplan"
local testing = require "devplan.testing"

local FILE = (dp.root or ".") .. "/spec/data/tvm_meta_cuda.relay"

local function has(s, sub) return s:find(sub, 1, true) ~= nil end

describe("devplan and the metadata section", function()
  after_each(function() testing.remove_temp_files() end)

  it("takes a file's devices from its metadata, not from the palette", function()
    local code, out, err = testing.run_devplan("parse " .. FILE)
    assert.equal(0, code, err)
    assert.truthy(has(out, "on_device(%0, virtual_device=VirtualDevice(device_type=cuda, virtual_device_id=0, "
      .. 'target="cuda -host=llvm"), constrain_result=True)'), out)
    assert.truthy(has(out, "Constant(Tensor[(2, 2), float32], [1, 2, 3, 4])"), out)
    -- planned: the add and its inputs on cuda (the palette's [0] would be the CPU)
    code, out, err = testing.run_devplan("plan " .. FILE .. " --short-devices")
    assert.equal(0, code, err)
    assert.truthy(has(out, "// @cuda = "), out)
    assert.falsy(has(out, "@cpu"), out)
    -- the same text without its section: the palette, documented, for files without one
    local bare = testing.read_file(FILE):gsub("\n#%[metadata%].*$", "\n"):gsub("meta%[relay%.Constant%]%[0%]", "%%x")
    code, out, err = testing.run_devplan("plan " .. testing.temp_file(bare) .. " --short-devices")
    assert.equal(0, code, err)
    assert.truthy(has(out, "// @cpu = "), out)
  end)

  it("lets --meta win over the file's section", function()
    local meta = testing.temp_file([[
local dp = require "devplan"
return {VirtualDevice = {dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}}}
]], ".lua")
    local code, out, err = testing.run_devplan("parse " .. FILE .. " --meta " .. meta)
    assert.equal(0, code, err)
    assert.truthy(has(out, "virtual_device=VirtualDevice(device_type=cpu, virtual_device_id=0)"), out)
    assert.truthy(has(out, "[1, 2, 3, 4]"), out) -- the constant still from the section
  end)

  it("writes the section with --show-meta-data, and reads its own output back", function()
    local out_file = testing.temp_file("")
    local code, _, err = testing.run_devplan("plan " .. FILE .. " --show-meta-data --explain -o " .. out_file)
    assert.equal(0, code, err)
    local text = testing.read_file(out_file)
    assert.truthy(has(text, "virtual_device=meta[VirtualDevice][0]"), text)
    assert.truthy(has(text, "add(%x, meta[relay.Constant][0])"), text)
    assert.truthy(text:find("// explain @main.-\n#%[metadata%]\n{"), text) -- comments before the section
    local code2, out2, err2 = testing.run_devplan("plan " .. out_file .. " --show-meta-data")
    assert.equal(0, code2, err2)
    assert.are.equal(text:gsub("//[^\n]*\n", ""), out2)
  end)

  it("points at what the section holds that devplan cannot read", function()
    local text = testing.read_file(FILE):gsub('"repr_str": "cuda"', '"repr_str": "cdua"', 1)
    local path = testing.temp_file(text)
    local code, out, err = testing.run_devplan("parse " .. path)
    assert.equal(1, code)
    assert.equal("", out)
    assert.truthy(err:find(path .. ":%d+:%d+: metadata: Target: unknown target kind 'cdua'; did you mean 'cuda'%?"), err)
    code, out = testing.run_devplan("help parse")
    assert.truthy(has(out, "--show-meta-data"), out)
    assert.truthy(has(out, "#[metadata]"), out)
  end)
end)
