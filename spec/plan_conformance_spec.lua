-- PlanDevices on every conformance case of ../shared/conformance (TVM's own
-- test suite as data): the planned module must structurally equal TVM's,
-- and planning TVM's output again must change nothing.
local dp = require "devplan"

local CASES = os.getenv("DEVPLAN_CONFORMANCE") or "../shared/conformance/cases"
local HOST = dp.Target("llvm")
local TARGET = {HOST = HOST, CPU = dp.Target("llvm"):with_host(HOST), GPU = dp.Target("cuda"):with_host(HOST)}
local function vd(t, target, scope)
  return dp.VirtualDevice{device_type = t, virtual_device_id = 0, target = target, memory_scope = scope}
end
local PALETTE = {
  HOST = vd("cpu", TARGET.HOST), CPU = vd("cpu", TARGET.CPU), GPU = vd("cuda", TARGET.GPU),
  CPU_SCOPE_A = vd("cpu", TARGET.CPU, "scopeA"), CPU_SCOPE_B = vd("cpu", TARGET.CPU, "scopeB"),
  GPU_SCOPE_GLOBAL = vd("cuda", TARGET.GPU, "global"),
  GPU_SCOPE_TEXTURE = vd("cuda", TARGET.GPU, "global.texture"),
  GLOBAL = dp.VirtualDevice{memory_scope = "global"},
  TEXTURE = dp.VirtualDevice{memory_scope = "global.texture"},
}

local function filled(shape, fill, depth)
  depth = depth or 1
  local t = {}
  for i = 1, shape[depth] do t[i] = depth == #shape and fill or filled(shape, fill, depth + 1) end
  return t
end

local function metatable_for(case)
  local devices, constants = {}, {}
  for i, name in ipairs(case.devices or {}) do devices[i] = assert(PALETTE[name]) end
  for i, c in ipairs(case.constants or {}) do
    constants[i] = dp.const(c.value == nil and filled(c.shape, c.fill or 0) or c.value, c.dtype)
  end
  return {VirtualDevice = devices, ["relay.Constant"] = constants}
end

local function text(x) if type(x) == "function" then return x() end return x end

local names = {}
local listing = assert(io.popen('ls "' .. CASES .. '"'))
for f in listing:lines() do if f:match("%.lua$") then names[#names + 1] = f end end
listing:close()
table.sort(names)

describe("conformance", function()
  it("finds the cases", function() assert.is_true(#names >= 20) end)
  for _, f in ipairs(names) do
    local case = dofile(CASES .. "/" .. f)
    it(case.name, function()
      local targets = {}
      for i, n in ipairs(case.targets or {"CPU", "GPU"}) do targets[i] = TARGET[n] end
      local plan = dp.passes.PlanDevices(dp.CompilationConfig{targets = targets, default_device_type = "cuda"})
      local mt = metatable_for(case)
      local actual = plan(dp.parse(text(case.input), mt))
      if case.expected then
        local expected = dp.parse(text(case.expected), mt)
        dp.assert_structural_equal(actual, expected)
        if case.idempotent ~= false then dp.assert_structural_equal(plan(expected), expected) end
      end
      -- idempotent on its own output, always
      dp.assert_structural_equal(plan(actual), actual)
    end)
  end
end)
