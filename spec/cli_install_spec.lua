-- make install (scripts/install.sh) and luarocks make (the rockspec): the
-- module where Lua 5.4 expects it under the prefix, an executable that
-- needs nothing, every installed example running, what to add to the
-- environment for a prefix a stock lua5.4 does not search, and nothing
-- installed that refers to the build tree.
local testing = require "devplan.testing"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return ok and 0 or code, out
end

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function temp_dir()
  local _, out = sh("mktemp -d")
  return (out:gsub("%s+$", ""))
end

local tree = assert(os.getenv("PWD"))
local BUSTED = select(2, sh("command -v busted")):gsub("%s+$", "")

-- Runs every installed example from an empty folder (some write a picture
-- there) with the installed executable; returns the failures' outputs.
local function run_examples(exe, root)
  local scratch = temp_dir()
  local failures, n = {}, 0
  local _, list = sh("ls " .. sh_quote(root .. "/examples"))
  for name in list:gmatch("[^\n]+%.lua") do
    n = n + 1
    local cmd = name == "rules.lua"
      and ("plan " .. sh_quote(root .. "/models/resnet18.relay") .. " --rules " .. sh_quote(root .. "/examples/rules.lua"))
      or sh_quote(root .. "/examples/" .. name)
    local code, out = sh("cd " .. sh_quote(scratch) .. " && " .. sh_quote(exe) .. " " .. cmd)
    if code ~= 0 then failures[#failures + 1] = name .. ":\n" .. out end
  end
  os.execute("rm -rf " .. sh_quote(scratch))
  return failures, n
end

describe("make install PREFIX=DIR", function()
  local prefix, message

  setup(function()
    prefix = temp_dir()
    local code
    code, message = sh("sh scripts/install.sh " .. prefix)
    assert.equal(0, code, message)
  end)
  teardown(function() os.execute("rm -rf " .. sh_quote(prefix)) end)

  it("lays the module out as Lua 5.4 expects under the prefix", function()
    for _, f in ipairs{"/bin/devplan", "/lib/lua/5.4/devplan/core.so", "/share/lua/5.4/devplan/init.lua",
                       "/share/lua/5.4/devplan/pipeline.lua", "/share/lua/5.4/devplan/passes/annotate_virtual_devices.lua",
                       "/share/devplan/examples/quickstart.lua", "/share/devplan/examples/rules/accelerator.lua",
                       "/share/devplan/models/resnet18.relay", "/share/devplan/models/README.md",
                       "/share/devplan/docs/api.md", "/share/devplan/docs/images/resnet18.svg",
                       "/share/devplan/README.md", "/share/devplan/LICENSE",
                       "/share/devplan/NOTICE", "/lib/libdevplan_core.a", "/include/devplan/print.h"} do
      local fh = io.open(prefix .. f)
      assert.truthy(fh, f)
      fh:close()
    end
  end)

  it("says exactly what a stock lua5.4 needs under this prefix, and with that it runs", function()
    -- the lines to add: PATH, LUA_PATH_5_4, LUA_CPATH_5_4, each as an export
    local exports = {}
    for line in message:gmatch("[^\n]+") do
      if line:match("^  export ") then exports[#exports + 1] = line:gsub("^  ", "") end
    end
    assert.same({
      'export PATH="' .. prefix .. '/bin:$PATH"',
      'export LUA_PATH_5_4="' .. prefix .. '/share/lua/5.4/?.lua;' .. prefix .. '/share/lua/5.4/?/init.lua;;"',
      'export LUA_CPATH_5_4="' .. prefix .. '/lib/lua/5.4/?.so;;"',
    }, exports, message)
    assert.truthy(message:find(prefix .. "/bin/devplan runs as it is", 1, true), message)
    local env = table.concat(exports, "; ") .. "; "
    local code, out = sh("cd / && " .. env .. "lua5.4 -e '"
      .. "local dp = require \"devplan\"; "
      .. "local m = dp.parse(\"def @main(%a: Tensor[(2), float32]) { negative(%a) }\"); "
      .. "print(dp.root, dp.passes.PlanDevices(dp.CompilationConfig{targets = {\"llvm\"}})(m).main.virtual_device)'"
      .. " && devplan -e 'print(\"devplan on PATH\")'")
    assert.equal(0, code, out)
    assert.equal(prefix .. "/share/devplan\tVirtualDevice(device_type=cpu, virtual_device_id=0, target=\"llvm -host=llvm\")\n"
      .. "devplan on PATH\n", out)
    -- and busted specs that require devplan.testing, run by that lua5.4
    local dir = temp_dir()
    os.execute("mkdir -p " .. dir .. "/spec")
    local f = assert(io.open(dir .. "/spec/tiny_spec.lua", "w"))
    f:write([[
local dp = require "devplan"
local t = require "devplan.testing"
describe("installed devplan", function()
  it("plans", function()
    assert.structurally_equal(dp.parse("def @main(%x: Tensor[(2), float32]) { %x }"),
                              dp.parse("def @main(%y: Tensor[(2), float32]) { %y }"))
    assert.truthy(dp.parse_file(t.model("mlp")))
  end)
end)
]])
    f:close()
    code, out = sh("cd " .. dir .. " && " .. env .. "lua5.4 " .. BUSTED .. " -o TAP")
    assert.equal(0, code, out)
    assert.truthy(out:find("ok 1 - installed devplan plans", 1, true), out)
    -- the installed executable runs busted itself, with nothing added
    code, out = sh("cd " .. dir .. " && " .. prefix .. "/bin/devplan " .. BUSTED .. " -o TAP")
    os.execute("rm -rf " .. sh_quote(dir))
    assert.equal(0, code, out)
    assert.truthy(out:find("ok 1 - installed devplan plans", 1, true), out)
  end)

  it("installs an executable that finds its own files, and every example runs", function()
    local failures, n = run_examples(prefix .. "/bin/devplan", prefix .. "/share/devplan")
    assert.is_true(n >= 8)
    assert.same({}, failures)
    local code, out = sh("cd / && " .. prefix .. "/bin/devplan plan " .. prefix .. "/share/devplan"
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

local has_luarocks = sh("command -v luarocks") == 0
local describe_rock = has_luarocks and describe or pending

describe_rock("luarocks make (the rockspec)", function()
  local rocks, message

  setup(function()
    rocks = temp_dir()
    -- (Debian has lpeg and dkjson as packages, which luarocks does not see)
    local code
    code, message = sh("luarocks --lua-version 5.4 make --deps-mode=none --tree " .. sh_quote(rocks))
    assert.equal(0, code, message)
  end)
  teardown(function() os.execute("rm -rf " .. sh_quote(rocks)) end)

  it("installs a devplan whose dp.root has the examples, models and docs, and every example runs", function()
    local code, root = sh("cd / && " .. rocks .. "/bin/devplan -e 'io.write(require(\"devplan\").root)'")
    assert.equal(0, code, root)
    assert.equal(rocks .. "/lib/luarocks/rocks-5.4/devplan/0.1.0-1/share/devplan", root)
    for _, f in ipairs{"/examples/quickstart.lua", "/models/resnet18.relay", "/docs/api.md", "/LICENSE"} do
      local fh = io.open(root .. f)
      assert.truthy(fh, f)
      fh:close()
    end
    local failures, n = run_examples(rocks .. "/bin/devplan", root)
    assert.is_true(n >= 8)
    assert.same({}, failures)
  end)

  it("is found by a stock lua5.4 with the paths luarocks gives", function()
    local code, out = sh("cd / && eval \"$(luarocks --lua-version 5.4 path --tree " .. sh_quote(rocks) .. ")\" && "
      .. "lua5.4 -e 'local dp = require \"devplan\"; print(dp.root, dp.parse_file(dp.root .. \"/models/mlp.relay\").main ~= nil)'")
    assert.equal(0, code, out)
    assert.equal(rocks .. "/lib/luarocks/rocks-5.4/devplan/0.1.0-1/share/devplan\ttrue\n", out)
  end)

  it("keeps the C library in the rock's folder, out of the Lua module path", function()
    local code, out = sh("ls " .. sh_quote(rocks .. "/lib/lua/5.4"))
    assert.equal(0, code, out)
    assert.equal("devplan\n", out)
  end)
end)

describe("the rockspec", function()
  it("declares its licence, dependencies and source", function()
    local spec = {}
    local chunk = assert(loadfile(tree .. "/devplan-0.1.0-1.rockspec", "t", spec))
    chunk()
    assert.equal("Apache-2.0", spec.description.license)
    assert.same({"lua >= 5.4, < 5.5", "lpeg", "dkjson"}, spec.dependencies)
    assert.equal("devplan-0.1.0.tar.gz", spec.source.url)
    assert.truthy(testing.read_file(tree .. "/devplan-0.1.0-1.rockspec"):find("^%-%- SPDX%-License%-Identifier: Apache%-2%.0\n"))
    assert.truthy(testing.read_file(tree .. "/LICENSE"):find("Apache License\n%s+Version 2.0, January 2004"))
  end)
end)
