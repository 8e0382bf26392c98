-- PlanDevices' own round takes two shortcuts the phases run one by one do
-- not, and its plan must be theirs:
-- * it skips defaulting (phase 2) where no rule would change a device
--   (src/planner/default.c, dp__default_for_capture), where the phases
--   always default. Programs where the skip is taken (every class decided
--   by an annotation) and where it must not be (a free value; a device a
--   default refines: a memory scope alone, a device type without its
--   target), and generated ones;
-- * its capture (src/planner/capture.c, dp__capture_last) frees the domains
--   and the index's kinds once it has read every node's device, where
--   nothing else it asks needs them (no call of a function value, no
--   lowered call, no primfn), where dp.planner.capture keeps them whole.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local props = require "props"

local META = testing.META
local T = "Tensor[(5, 7), float32]"

-- def @main(%a, %b) { body }, after the definitions `before`
local function parse(body, before)
  return dp.parse('#[version = "0.0.5"]\n' .. (before or "") .. "def @main(%a: " .. T .. ", %b: " .. T ..
                  ") {\n" .. body .. "\n}\n", META)
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
  local _, violations = dp.planner.verify(whole, config, {input = m})
  assert.are.equal(0, violations)
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


describe("PlanDevices' capture without the domains", function()
  local config = testing.config("cuda")
  local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"
  it("follows a chain of nested annotations by the nodes' ids", function()
    local text = dp.astext(same_plan(parse("%0 = on_device(on_device(add(%a, %b), virtual_device=" .. GPU ..
                                           "), virtual_device=" .. CPU .. ");\nmultiply(%0, %b)"), config))
    -- the value goes to the GPU's annotation and back: two copies
    local _, copies = text:gsub("device_copy%(", "")
    assert.are.equal(2, copies)
  end)
  it("plans copies, tuples and branches as the phases do", function()
    same_plan(parse("%0 = add(%a, %b);\n%1 = device_copy(%0, src_virtual_device=" .. CPU ..
                    ", dst_virtual_device=" .. GPU .. ");\n%2 = multiply(%1, %1);\non_device(%2, virtual_device=" ..
                    GPU .. ")"), config)
    same_plan(parse("%0 = (on_device(add(%a, %b), virtual_device=" .. GPU .. "), %b);\n%1 = %0.0;\n" ..
                    "if (True) { %1 } else { negative(%b) }"), config)
  end)
  it("plans the generated shapes of bench/gen.lua as the phases do", function()
    local shapes = dofile(dp.root .. "/bench/gen.lua")
    for _, text in ipairs{shapes.chain(300), shapes.let(300), shapes.branchy(300, false)} do
      same_plan(dp.parse(text, META), config)
    end
  end)
  it("keeps the domains where a function value is called", function()
    local text = dp.astext(same_plan(parse("let %f = fn (%y: " .. T .. ") { add(%y, %b) };\n%f(%a)"), config))
    assert.truthy(text:find("%%f%(%%a%)"))
  end)
  it("plans modules of several functions as the phases do", function()
    same_plan(parse("%0 = @g(%a);\non_device(multiply(%0, %b), virtual_device=" .. GPU .. ")",
                    "def @g(%y: " .. T .. ") {\n  negative(%y)\n}\n"), config)
  end)
end)

-- After placement by cost (min_bytes) defaulting runs only the rules that
-- reach a class no flow reached (default.c, free_only), where no device can
-- be refined; dp.planner.domains runs every rule: both plans must be one.
-- (Where a module names memory scopes PlanDevices plans its plan again by
-- TVM's rules, plan.c: those are compared by plan_snapshot.lua only.)
describe("min_bytes, defaulting only the classes no flow reached", function()
  local config = testing.config("cuda")
  local min_bytes = {placement = "min_bytes"}
  local function same(m, cfg)
    local ok, whole = pcall(dp.passes.PlanDevices(cfg, min_bytes), m)
    local dok, d = pcall(dp.planner.domains, m, cfg, min_bytes)
    assert.are.equal(ok, dok)
    if not ok then return false end
    local text = dp.astext(whole)
    if text:find("memory_scope=", 1, true) then return false end
    assert.are.equal(dp.astext(dp.planner.capture(d)), text)
    return true
  end
  it("plans on_device calls, free lets and functions as every rule does", function()
    assert.is_true(same(parse("%0 = add(%a, %b);\n%1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);\n" ..
                              "%2 = multiply(%1, %b);\nlet %x = negative(%a);\nadd(on_device(%2, virtual_device=" ..
                              "meta[VirtualDevice][0]), %x)"), config))
    local two = dp.parse('#[version = "0.0.5"]\ndef @f(%x: ' .. T .. ") {\n  negative(%x)\n}\n" ..
                         "def @main(%a: " .. T .. ", %b: " .. T .. ") {\n  %0 = @f(%a);\n" ..
                         "  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);\n  add(%1, @f(%b))\n}\n", META)
    assert.is_true(same(two, config))
  end)
  it("runs every rule where a device can be refined", function()
    same(parse("%0 = add(%a, %b);\n%1 = on_device(%0, virtual_device=VirtualDevice(memory_scope=\"global\"));\n" ..
               "multiply(%1, %b)"), config)
    assert.is_true(same(parse("%0 = add(%a, %b);\n%1 = on_device(%0, virtual_device=VirtualDevice(device_type=2));\n" ..
                              "negative(on_device(%1, virtual_device=meta[VirtualDevice][0]))"), config))
  end)
  it("plans generated programs as every rule does", function()
    local n, compared = os.getenv("DEVPLAN_QUICK") and 40 or 200, 0
    for seed = 1, n do
      local ok, m = pcall(dp.parse, gen.text(gen.program(seed)), props.META)
      if ok and same(m, props.CONFIG) then compared = compared + 1 end
    end
    assert.is_true(compared >= n // 4, "compared " .. compared)
  end)
end)
