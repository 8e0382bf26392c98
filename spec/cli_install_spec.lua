-- make install (scripts/install.sh): the module where a stock lua5.4 and
-- busted find it under Lua 5.4's default paths of the prefix, the
-- executable, the examples; nothing installed refers to the build tree.
local testing = require "devplan.testing"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return ok and 0 or code, out
end

local tree = assert(os.getenv("PWD"))
local prefix = os.tmpname()
os.remove(prefix)
-- what a stock lua5.4 built with this prefix searches (";;": then the
-- system's defaults, where lpeg, busted and dkjson are)
local LUA_ENV = "LUA_PATH='" .. prefix .. "/share/lua/5.4/?.lua;" .. prefix .. "/share/lua/5.4/?/init.lua;;' "
  .. "LUA_CPATH='" .. prefix .. "/lib/lua/5.4/?.so;;' "
local BUSTED = select(2, sh("command -v busted")):gsub("%s+$", "")

describe("make install", function()
  setup(function()
    local code, out = sh("sh scripts/install.sh " .. prefix)
    assert.equal(0, code, out)
  end)
  teardown(function() os.execute("rm -rf " .. prefix) end)

  it("lays the module out as Lua 5.4 expects under the prefix", function()
    for _, f in ipairs{"/bin/devplan", "/lib/lua/5.4/devplan/core.so", "/share/lua/5.4/devplan/init.lua",
                       "/share/lua/5.4/devplan/pipeline.lua", "/share/lua/5.4/annotate_virtual_devices.lua",
                       "/share/devplan/examples/quickstart.lua", "/share/devplan/API.md",
                       "/lib/libdevplan_core.a", "/include/devplan/print.h"} do
      local fh = io.open(prefix .. f)
      assert.truthy(fh, f)
      fh:close()
    end
  end)

  it("runs from a stock lua5.4 with nothing but the prefix's default paths", function()
    local code, out = sh("cd / && " .. LUA_ENV .. "lua5.4 -e '"
      .. "local dp = require \"devplan\"; "
      .. "local m = dp.parse(\"def @main(%a: Tensor[(2), float32]) { negative(%a) }\"); "
      .. "print(dp.root, dp.passes.PlanDevices(dp.CompilationConfig{targets = {\"llvm\"}})(m).main.virtual_device)'")
    assert.equal(0, code, out)
    assert.equal(prefix .. "/share/devplan\tVirtualDevice(device_type=cpu, virtual_device_id=0, target=\"llvm -host=llvm\")\n", out)
  end)

  it("runs busted specs that require devplan.testing, without flags", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir .. "/spec")
    local f = assert(io.open(dir .. "/spec/tiny_spec.lua", "w"))
    f:write([[
local dp = require "devplan"
require "devplan.testing"
describe("installed devplan", function()
  it("plans", function()
    assert.structurally_equal(dp.parse("def @main(%x: Tensor[(2), float32]) { %x }"),
                              dp.parse("def @main(%y: Tensor[(2), float32]) { %y }"))
  end)
end)
]])
    f:close()
    local code, out = sh("cd " .. dir .. " && " .. LUA_ENV .. "lua5.4 " .. BUSTED .. " -o TAP")
    os.execute("rm -rf " .. dir)
    assert.equal(0, code, out)
    assert.truthy(out:find("ok 1 - installed devplan plans", 1, true), out)
  end)

  it("installs an executable that finds its own files and runs the examples and commands", function()
    local code, out = sh("cd / && " .. prefix .. "/bin/devplan " .. prefix .. "/share/devplan/examples/quickstart.lua")
    assert.equal(0, code, out)
    assert.truthy(out:find("device_copy(", 1, true), out)
    code, out = sh("cd / && " .. prefix .. "/bin/devplan plan " .. testing.shared_dir
      .. "/models/mlp.relay --annotate nn.dense=cuda --report text")
    assert.equal(0, code, out)
    assert.truthy(out:find("device_copy", 1, true), out)
    code, out = sh("cd / && " .. prefix .. "/bin/devplan -e 'print(package.path:find(\"" .. tree .. "\", 1, true))'")
    assert.equal("nil\n", out)
  end)

  it("refers to nothing in the build tree", function()
    local _, out = sh("grep -rl '" .. tree .. "' " .. prefix)
    assert.equal("", out)
  end)
end)
