-- PlanDevices skips defaulting (phase 2) where no rule would change a device
-- (src/planner/default.c, dp__default_for_capture): its plan must be the one
-- the phases give run one by one, where defaulting always runs. Programs where
-- the skip is taken (every class decided by an annotation) and where it must
-- not be (a free value; a device a default refines: a memory scope alone, a
-- device type without its target), and generated ones.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local props = require "props"

local META = testing.META
local T = "Tensor[(5, 7), float32]"

local function parse(body)
  return dp.parse('#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ", %b: " .. T .. ") {\n" .. body .. "\n}\n", META)
end

-- The phases one by one, as PlanDevices composes them under TVM's rules.
local function by_phases(m, config)
  local r = dp.planner.conflicts(dp.planner.rewrite(m, config), config)
  local d = dp.planner.analyze(r, config)
  dp.planner.default(d)
  return dp.planner.capture(d)
end

local function same_plan(m, config)
  local whole = dp.passes.PlanDevices(config)(m)
  local phases = by_phases(m, config)
  assert.are.equal(dp.astext(phases), dp.astext(whole))
  return whole
end

describe("PlanDevices where defaulting changes nothing", function()
  local config = testing.config("cuda")
  it("plans every class an annotation decided as the phases do", function()
    -- the parameters reach every call: one class, on the CPU
    local m = parse("%0 = add(%a, %b);\n%1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);\n" ..
                    "multiply(%1, %b)")
    local out = same_plan(m, config)
    assert.is_true(rawequal(out.main.virtual_device, config:canonical(testing.PALETTE.CPU)))
  end)
  it("still defaults a free value", function()
    local m = parse("%0 = add(%a, %b);\nlet %x = negative(%a);\nmultiply(%0, %b)")
    same_plan(m, config)
  end)
  it("still refines a device that names a memory scope alone", function()
    local m = parse("%0 = add(%a, %b);\n" ..
                    "%1 = on_device(%0, virtual_device=VirtualDevice(memory_scope=\"global\"));\n" ..
                    "multiply(%1, %b)")
    same_plan(m, config)
  end)
  it("still refines a device type without its target", function()
    local m = parse("%0 = add(%a, %b);\n%1 = on_device(%0, virtual_device=VirtualDevice(device_type=2));\n" ..
                    "multiply(%1, %b)")
    same_plan(m, config)
  end)
  it("plans generated programs as the phases do", function()
    local n = os.getenv("DEVPLAN_QUICK") and 40 or 200
    for seed = 1, n do
      local ok, m = pcall(dp.parse, gen.text(gen.program(seed)), props.META)
      if ok then
        local pok, whole = pcall(dp.passes.PlanDevices(props.CONFIG), m)
        local fok, phases = pcall(by_phases, m, props.CONFIG)
        assert.are.equal(pok, fok, "seed " .. seed)
        if pok then assert.are.equal(dp.astext(phases), dp.astext(whole), "seed " .. seed) end
      end
    end
  end)
end)
