-- PlanDevices is its phases in order, nothing else: running them one by one
-- from Lua (dp.planner.rewrite, conflicts, analyze, default, capture) gives
-- the same module, or the same error, on every conformance case, every
-- model of ../shared/models/ (annotated as the models are: convolutions and
-- dense on the GPU), and the generated workloads (bench/gen.lua).
local dp = require "devplan"
local t = require "devplan.testing"
local gen = dofile("bench/gen.lua")

-- The phases one by one; the error's text when one fails.
local function by_phases(mod, config)
  local ok, res = pcall(function()
    local m = dp.planner.rewrite(mod, config)
    m = dp.planner.conflicts(m, config)
    local d = dp.planner.analyze(m, config)
    dp.planner.default(d)
    return dp.planner.capture(d)
  end)
  return ok, ok and res or tostring(res)
end

-- (the pass names itself in its errors' last note)
local function at_once(mod, config)
  local ok, res = pcall(dp.passes.PlanDevices(config), mod)
  return ok, ok and res or (tostring(res):gsub("\n  in pass PlanDevices$", ""))
end

local function same(mod, config)
  local ok1, one = by_phases(mod, config)
  local ok2, all = at_once(mod, config)
  assert.equal(ok2, ok1, ok1 and all or one)
  if ok1 then assert.structurally_equal(one, all) else assert.equal(all, one) end
  return ok1
end

describe("the phases one by one equal PlanDevices", function()
  local cases = t.shared_dir .. "/conformance/cases/"
  for _, f in ipairs(t.lua_files(cases)) do
    local case = dofile(cases .. f)
    it("conformance " .. case.name, function()
      local config = t.config("cuda", case.targets)
      assert.is_true(same(dp.parse(t.text(case.input), t.metatable_for(case)), config))
    end)
  end

  local models = t.shared_dir .. "/models/"
  local annotate = dp.passes.AnnotateVirtualDevices{
    ["nn.conv2d"] = function() return t.PALETTE.GPU end,
    ["nn.dense"] = function() return t.PALETTE.GPU end,
  }
  local listing = io.popen('ls "' .. models .. '"')
  for f in listing:lines() do
    if f:match("^[%w_]+%.relay$") then
      it("model " .. f, function()
        local mod = annotate(dp.parse(t.read_file(models .. f), t.META))
        for _, dflt in ipairs{"cpu", "cuda"} do assert.is_true(same(mod, t.config(dflt))) end
      end)
    end
  end
  listing:close()

  for _, shape in ipairs{"chain", "let", "branchy", "branchy-naive"} do
    it("generated workload " .. shape, function()
      local n = shape == "branchy-naive" and 120 or 5000
      assert.is_true(same(dp.parse(gen[shape](n), t.META), t.config("cuda")))
    end)
  end

  it("a conflict: the same error either way", function()
    local text = [[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %1 = on_device(%a, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  add(%0, %1)
}]]
    assert.is_false(same(dp.parse(text, t.META), t.config("cuda")))
  end)
end)
