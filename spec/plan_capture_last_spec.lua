-- PlanDevices' own capture (src/planner/capture.c, dp__capture_last) frees
-- the domains and the index's kinds once it has read every node's device,
-- where nothing else it asks needs them (no call of a function value, no
-- lowered call, no primfn): its plan must be the one dp.planner.capture
-- makes from the same domains kept whole. Programs where they go (operator
-- calls, lets, nested annotations whose chain capture follows, copies,
-- tuples and branches, the generated shapes of bench/gen.lua) and where they
-- stay (a closure called, a primfn); generated programs are compared in
-- spec/plan_settled_spec.lua the same way.
local dp = require "devplan"
local testing = require "devplan.testing"
local gen = dofile(dp.root .. "/bench/gen.lua")

local T = "Tensor[(5, 7), float32]"
local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"

local function parse(body, before)
  return dp.parse('#[version = "0.0.5"]\n' .. (before or "") .. "def @main(%a: " .. T .. ", %b: " .. T ..
                  ") {\n" .. body .. "\n}\n", testing.META)
end

-- The phases one by one (dp.planner.capture keeps the domains).
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
  local _, total = dp.planner.verify(whole, config, {input = m})
  assert.are.equal(0, total)
  return dp.astext(whole)
end

describe("PlanDevices' capture without the domains", function()
  local config = testing.config("cuda")
  it("follows a chain of nested annotations by the nodes' ids", function()
    local text = same_plan(parse("%0 = on_device(on_device(add(%a, %b), virtual_device=" .. GPU ..
                                 "), virtual_device=" .. CPU .. ");\nmultiply(%0, %b)"), config)
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
  it("plans the generated shapes as the phases do", function()
    for _, text in ipairs{gen.chain(300), gen.let(300), gen.branchy(300, false)} do
      same_plan(dp.parse(text, testing.META), config)
    end
  end)
  it("keeps the domains where a function value is called", function()
    local text = same_plan(parse("let %f = fn (%y: " .. T .. ") { add(%y, %b) };\n%f(%a)"), config)
    assert.truthy(text:find("%%f%(%%a%)"))
  end)
  it("plans modules of several functions as the phases do", function()
    same_plan(parse("%0 = @g(%a);\non_device(multiply(%0, %b), virtual_device=" .. GPU .. ")",
                    "def @g(%y: " .. T .. ") {\n  negative(%y)\n}\n"), config)
  end)
end)
