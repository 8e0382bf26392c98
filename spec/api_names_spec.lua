-- docs/api.md (the Lua API) names only what the binding offers: every `dp.name`
-- it mentions resolves, and the fields it lists for targets, virtual
-- devices, configurations, domains and devplan.testing are there.
local dp = require "devplan"
local testing = require "devplan.testing"

local doc = testing.read_file(dp.root .. "/docs/api.md")

local function resolve(path)
  local v = dp
  for part in path:gmatch("[^.]+") do
    if type(v) ~= "table" then return nil end
    v = v[part]
  end
  return v
end

describe("docs/api.md", function()
  it("names only functions and values the module has", function()
    local seen = 0
    for path in doc:gmatch("dp%.([%a_][%w_.]*)") do
      path = path:gsub("%.$", "")
      assert.is_not_nil(resolve(path), "docs/api.md names dp." .. path .. ", which does not exist")
      seen = seen + 1
    end
    assert.is_true(seen > 50)
  end)

  it("lists fields that targets, virtual devices and configurations have", function()
    local t = dp.Target("cuda -max_num_threads=7 -libs=a,b")
    assert.equal("cuda", t.device_type_name)
    assert.equal(2, t.device_type)
    assert.equal(7, t.options.max_num_threads)
    assert.same({"a", "b"}, t.options.libs)
    assert.same({"cuda", "gpu"}, t.options.keys)
    assert.is_function(t.with_host)
    local v = dp.VirtualDevice{device_type = "cuda"}
    assert.equal("cuda", v.device_type_name)
    assert.equal(-1, v.virtual_device_id)
    assert.equal("", v.memory_scope)
    local c = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cuda"}
    assert.equal(2, #c.primitive_targets)
    assert.equal("llvm", c.host_target.kind)
    assert.equal(2, c.default_device_type)
    local counts = dp.debug.counts()
    for _, k in ipairs{"targets", "virtual_devices", "types"} do
      assert.is_true(math.type(counts[k]) == "integer", k)
      assert.is_truthy(doc:find(k .. " =", 1, true), k)
    end
  end)

  it("lists the domains' methods and fields", function()
    local mod = dp.parse('#[version = "0.0.5"]\ndef @main(%a: Tensor[(5, 7), float32]) { negative(%a) }')
    local d = dp.planner.analyze(mod)
    for _, m in ipairs{"lookup", "unify", "constrain", "set_default", "fully_constrained", "explain"} do
      assert.is_function(d[m], m)
      assert.is_truthy(doc:find("d:" .. m .. "(", 1, true), m)
    end
    assert.is_true(rawequal(d.module, mod) or dp.structural_equal(d.module, mod))
    assert.is_not_nil(d.config)
  end)

  it("lists what devplan.testing returns", function()
    local section = doc:match("## Testing.*")
    for name, v in pairs(testing) do
      assert.is_truthy(section:find("`" .. name, 1, true), "devplan.testing." .. name .. " is not in docs/api.md")
      assert.is_not_nil(v)
    end
  end)
end)
