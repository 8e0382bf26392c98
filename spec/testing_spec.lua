-- lua/devplan/testing.lua: the busted assertions pass and fail as they
-- should (failure messages included), and the palette matches the one of
-- ../shared/conformance/run.lua.
local dp = require "devplan"
local testing = require "devplan.testing"

local T = "Tensor[(5, 7), float32]"
local function program(body)
  return '#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ", %b: " .. T .. ") {\n" .. body .. "\n}\n"
end

-- The message of the error f raises (it must raise).
local function failure(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected the assertion to fail")
  return tostring(err)
end

local function has(text, piece)
  assert.is_truthy(text:find(piece, 1, true), ("%q not in:\n%s"):format(piece, text))
end

describe("assert.structurally_equal", function()
  it("passes for alpha-equivalent modules", function()
    local a = dp.parse(program("add(%a, %b)"))
    local b = dp.parse((program("add(%a, %b)"):gsub("%%a", "%%x")))
    assert.structurally_equal(a, b)
    assert.is_not.structurally_equal(a, dp.parse(program("add(%b, %a)")))
  end)
  it("passes for equal types and plain values", function()
    assert.structurally_equal(dp.type.tensor({5, 7}), dp.parse_type(T))
    assert.structurally_equal(3, 3)
  end)
  it("fails with the path of the first difference and both sides", function()
    local a = dp.parse(program("add(%a, %b)"))
    local b = dp.parse(program("multiply(%a, %b)"))
    local msg = failure(assert.structurally_equal, a, b)
    has(msg, "Expected structurally equal values; first difference at ")
    has(msg, "actual:   ")
    has(msg, "expected: ")
    has(msg, "add")
    has(msg, "multiply")
    -- the path names where in the module
    has(msg, "main")
  end)
  it("fails for values of different kinds", function()
    local msg = failure(assert.structurally_equal, dp.type.tensor({5}), dp.type.scalar("int32"))
    has(msg, "Tensor[(5), float32]")
    has(msg, "int32")
  end)
  it("negated, fails when both are equal and prints the value", function()
    local a = dp.parse(program("add(%a, %b)"))
    local msg = failure(assert.is_not.structurally_equal, a, a)
    has(msg, "Expected values that differ structurally")
    has(msg, "add(%a, %b)")
  end)
end)

describe("assert.plans_to", function()
  local config = testing.config("cpu")
  local input = program("%0 = add(%a, %b);\n%1 = on_device(%0, virtual_device=meta[VirtualDevice][1]);\nnegative(%1)")
  local expected = [[
#[version = "0.0.5"]
def @main(%a {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32],
          %b {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][0]) {
  %0 = add(%a, %b);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]);
  negative(%2)
}
]]
  it("passes when planning gives the expected module", function()
    assert.plans_to(input, expected, config, testing.META)
  end)
  it("fails with the difference and the planned module", function()
    local wrong = expected:gsub("negative%(%%2%)", "negative(%%1)")
    local msg = failure(assert.plans_to, input, wrong, config, testing.META)
    has(msg, "Planning did not give the expected module; first difference at ")
    has(msg, "planned module:")
    has(msg, "device_copy(")
  end)
  it("works without a metatable", function()
    local plain = program("add(%a, %b)")
    local planned = tostring(dp.passes.PlanDevices(config)(dp.parse(plain)))
    assert.plans_to(plain, planned, config)
    failure(assert.plans_to, plain, plain, config)
  end)
end)

describe("assert.idempotent", function()
  local mod = dp.parse(program("%0 = add(%a, %b);\n%1 = on_device(%0, virtual_device=meta[VirtualDevice][1]);\nnegative(%1)"),
                       testing.META)
  it("passes for PlanDevices", function()
    assert.idempotent(dp.passes.PlanDevices(testing.config("cpu")), mod)
  end)
  it("fails for a pass whose output changes when run again", function()
    -- wraps the body of main in one more negative each time
    local function grow(m)
      return dp.rewrite(m, {fn = function(f)
        return dp.fn(f.params, dp.call("negative", {f.body}))
      end})
    end
    local msg = failure(assert.idempotent, grow, mod)
    has(msg, "Pass is not idempotent: running it on its output; first difference at ")
    has(msg, "again:")
    has(msg, "once:")
    has(msg, "output:")
  end)
  it("negated, fails for an idempotent pass", function()
    local msg = failure(assert.is_not.idempotent, function(m) return m end, mod)
    has(msg, "Expected running the pass again to change its output")
  end)
end)

describe("the palette", function()
  it("has run.lua's targets and devices", function()
    local P, TG = testing.PALETTE, testing.TARGET
    assert.equal("llvm", TG.HOST.kind)
    assert.is_true(rawequal(TG.CPU.host, TG.HOST))
    assert.is_true(rawequal(TG.GPU.host, TG.HOST))
    assert.equal("cuda", TG.GPU.kind)
    assert.is_true(rawequal(P.CPU, dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0, target = TG.CPU}))
    assert.is_true(rawequal(P.GPU_SCOPE_TEXTURE, dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0,
                                                                   target = TG.GPU, memory_scope = "global.texture"}))
    assert.equal("scopeA", P.CPU_SCOPE_A.memory_scope)
    assert.is_true(P.GLOBAL.target == nil and P.GLOBAL.memory_scope == "global")
    for _, name in ipairs{"HOST", "CPU", "GPU", "CPU_SCOPE_A", "CPU_SCOPE_B", "GPU_SCOPE_GLOBAL",
                          "GPU_SCOPE_TEXTURE", "GLOBAL", "TEXTURE"} do
      assert.is_not_nil(P[name], name)
    end
  end)
  it("makes configurations", function()
    local c = testing.config("cpu")
    assert.equal(2, #c.primitive_targets)
    assert.equal(dp.VirtualDevice{device_type = "cpu"}.device_type, c.default_device_type)
    local g = testing.config(nil, {"GPU"})
    assert.equal(1, #g.primitive_targets)
    assert.equal("cuda", g.primitive_targets[1].kind)
    assert.has_error(function() testing.config("cpu", {"TPU"}) end)
  end)
  it("builds a case's metatable", function()
    local mt = testing.metatable_for{devices = {"GPU", "CPU_SCOPE_A"},
                                     constants = {{shape = {2, 3}, fill = 1, dtype = "int32"}, {value = 3}}}
    assert.is_true(rawequal(mt.VirtualDevice[1], testing.PALETTE.GPU))
    assert.same({{1, 1, 1}, {1, 1, 1}}, mt["relay.Constant"][1].value)
    assert.equal(3, mt["relay.Constant"][2].value)
    assert.has_error(function() testing.metatable_for{devices = {"NOPE"}} end)
  end)
  it("has the small helpers the specs share", function()
    local msg, err = testing.error_of(dp.parse, "def @main( {")
    assert.is_true(dp.is_error(err))
    assert.equal(tostring(err), msg)
    assert.has_error(function() testing.error_of(function() end) end)
    assert.same({"a", "b", "c"}, testing.sorted_keys{c = 1, a = 2, b = 3})
    local e = dp.parse_expr("negative(negative(negative(1f)))")
    local d, leaf = testing.depth(e, "call", function(x) return x.args[1] end)
    assert.equal(3, d)
    assert.equal("const", leaf.kind)
    assert.equal(2, #dp.parse(testing.SMALL_MODULE).main.params)
  end)
  it("finds the shared folder and reads files", function()
    local run = testing.read_file(testing.shared_dir .. "/conformance/run.lua")
    assert.is_truthy(run:find("GPU_SCOPE_TEXTURE", 1, true))
    assert.is_nil(testing.shared_dir:find("/../", 1, true))
    assert.is_true(#testing.lua_files(testing.shared_dir .. "/conformance/cases") >= 20)
    assert.has_error(function() testing.read_file("/nonexistent/file") end)
  end)
  it("names no machine path: the shared folder is DEVPLAN_SHARED or beside the root, else an error", function()
    local lib = testing.read_file(dp.root .. "/lua/devplan/testing.lua")
    assert.is_nil(lib:find("/work/", 1, true))
    local code, _, err = testing.run_devplan("-e 'print(require(\"devplan.testing\").shared_dir)'", nil)
    assert.equal(0, code, err)
    local bad = "DEVPLAN_SHARED=/nonexistent " .. testing.exe
      .. " -e 'print(require(\"devplan.testing\").shared_dir)' 2>&1"
    local p = io.popen(bad)
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("devplan.testing: DEVPLAN_SHARED is /nonexistent, which has no conformance/run.lua",
                           1, true), out)
    local p2 = io.popen("DEVPLAN_SHARED=" .. testing.shared_dir .. " " .. testing.exe
      .. " -e 'io.write(require(\"devplan.testing\").shared_dir)'")
    assert.equal(testing.shared_dir, p2:read("a"))
    p2:close()
  end)
  it("gives the path of a model the project ships", function()
    assert.equal(dp.root .. "/models/mlp.relay", testing.model("mlp"))
    assert.truthy(dp.parse_file(testing.model("resnet18")).main)
    local ok, err = pcall(testing.model, "resnet19")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("no model resnet19 (" .. dp.root .. "/models/resnet19.relay does not exist)", 1, true))
  end)
end)
