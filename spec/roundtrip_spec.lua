-- Round trip: tostring(dp.parse(t)) re-parses to a structurally equal
-- module, and printing that again gives the same text; for every input and
-- expected text of the conformance cases (metatables from run.lua's
-- palette, copied below) and the two models.
local dp = require "devplan"

local SHARED = "../shared"
do
  local f = io.open(SHARED .. "/docs/relay-text.md")
  if f then f:close() else SHARED = "/work/shared" end
end

-- The palette of ../shared/conformance/run.lua.
local HOST_TARGET = dp.Target("llvm")
local TARGET = {
  HOST = HOST_TARGET,
  CPU = dp.Target("llvm"):with_host(HOST_TARGET),
  GPU = dp.Target("cuda"):with_host(HOST_TARGET),
}

local function vd(device_type, target, scope)
  return dp.VirtualDevice{device_type = device_type, virtual_device_id = 0,
                          target = target, memory_scope = scope}
end

local PALETTE = {
  HOST = vd("cpu", TARGET.HOST),
  CPU = vd("cpu", TARGET.CPU),
  GPU = vd("cuda", TARGET.GPU),
  CPU_SCOPE_A = vd("cpu", TARGET.CPU, "scopeA"),
  CPU_SCOPE_B = vd("cpu", TARGET.CPU, "scopeB"),
  GPU_SCOPE_GLOBAL = vd("cuda", TARGET.GPU, "global"),
  GPU_SCOPE_TEXTURE = vd("cuda", TARGET.GPU, "global.texture"),
  GLOBAL = dp.VirtualDevice{memory_scope = "global"},
  TEXTURE = dp.VirtualDevice{memory_scope = "global.texture"},
}

local function filled(shape, fill, depth)
  depth = depth or 1
  local t = {}
  for i = 1, shape[depth] do
    t[i] = depth == #shape and fill or filled(shape, fill, depth + 1)
  end
  return t
end

local function metatable_for(case)
  local devices = {}
  for i, name in ipairs(case.devices or {}) do
    devices[i] = assert(PALETTE[name], "unknown palette device " .. tostring(name))
  end
  local constants = {}
  for i, c in ipairs(case.constants or {}) do
    local value = c.value
    if value == nil then value = filled(c.shape, c.fill or 0) end
    constants[i] = dp.const(value, c.dtype)
  end
  return {VirtualDevice = devices, ["relay.Constant"] = constants}
end

local function text(x) if type(x) == "function" then return x() end return x end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local t = f:read("a")
  f:close()
  return t
end

-- parse, print, re-parse, compare, print again
local function round_trip(t, mt, name)
  local m1 = dp.parse(t, mt, {source_name = name})
  local printed = tostring(m1)
  local m2 = dp.parse(printed, nil, {source_name = name .. " (printed)"})
  dp.assert_structural_equal(m1, m2)
  assert.are.equal(printed, tostring(m2))
  return m1, printed
end

describe("round trip", function()
  local dir = SHARED .. "/conformance/cases/"
  local names = {}
  for f in io.popen('ls "' .. dir .. '"'):lines() do
    if f:match("%.lua$") then names[#names + 1] = f end
  end
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
