-- Round trip: tostring(dp.parse(t)) re-parses to a structurally equal
-- module, and printing that again gives the same text; for every input and
-- expected text of the conformance cases (metatables from run.lua's
-- palette, from devplan.testing) and the two models.
local dp = require "devplan"
local testing = require "devplan.testing"

local SHARED = testing.shared_dir
local PALETTE = testing.PALETTE
local metatable_for, text, read = testing.metatable_for, testing.text, testing.read_file

-- parse, print, re-parse, compare, print again
local function round_trip(t, mt, name)
  local m1 = dp.parse(t, mt, {source_name = name})
  local printed = tostring(m1)
  local m2 = dp.parse(printed, nil, {source_name = name .. " (printed)"})
  assert.structurally_equal(m1, m2)
  assert.are.equal(printed, tostring(m2))
  return m1, printed
end

describe("round trip", function()
  local dir = SHARED .. "/conformance/cases/"
  local names = testing.lua_files(dir)
  it("finds the conformance cases", function()
    assert.is_true(#names >= 20)
  end)
  for _, f in ipairs(names) do
    local case = dofile(dir .. f)
    it("holds for the input of case " .. case.name, function()
      round_trip(text(case.input), metatable_for(case), f .. ":input")
    end)
    if case.expected then
      it("holds for the expected module of case " .. case.name, function()
        round_trip(text(case.expected), metatable_for(case), f .. ":expected")
      end)
    end
  end

  local palette_mt = {VirtualDevice = {PALETTE.CPU, PALETTE.GPU}}
  for _, model in ipairs{"resnet18", "resnet18.annotated", "resnet18.planned", "dcgan",
                         "dcgan.annotated", "dcgan.planned"} do
    it("holds for the model " .. model, function()
      local m = round_trip(read(SHARED .. "/models/" .. model .. ".relay"), palette_mt, model)
      assert.is_not_nil(m["main"])
    end)
    it("holds for the model " .. model .. " printed with its type comments", function()
      local m = dp.parse(read(SHARED .. "/models/" .. model .. ".relay"), palette_mt)
      local typed = dp.astext(m, {types = true})
      assert.is_truthy(typed:find("/* ty=", 1, true))
      local m2 = dp.parse(typed, nil, {source_name = model .. " (printed with types)"})
      assert.structurally_equal(m, m2)
      assert.are.equal(typed, dp.astext(m2, {types = true}))
    end)
  end

  it("prints virtual devices inline so that no metatable is needed", function()
    local m, printed = round_trip([[
def @main(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32]) {
  on_device(%x, virtual_device=meta[VirtualDevice][1])
}]], palette_mt, "inline")
    assert.is_nil(printed:find("meta%["))
    assert.is_truthy(printed:find("VirtualDevice%(", 1))
    assert.is_not_nil(m)
  end)

  it("prints tensor constants so that they re-parse without a metatable", function()
    local _, printed = round_trip([[
def @main(%size: int64, %alignment: int64) {
  memory.alloc_storage(%size, meta[relay.Constant][0], %alignment, virtual_device=meta[VirtualDevice][0])
}]], {VirtualDevice = {PALETTE.CPU}, ["relay.Constant"] = {dp.const({3, 2}, "int64")}}, "const")
    assert.is_truthy(printed:find("Constant(Tensor[(2), int64], [3, 2])", 1, true))
  end)
end)
