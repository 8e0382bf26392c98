-- PlanDevices on every conformance case of ../shared/conformance (TVM's own
-- test suite as data): the planned module must structurally equal TVM's,
-- and planning TVM's output again must change nothing.
local dp = require "devplan"
local testing = require "devplan.testing"

local CASES = os.getenv("DEVPLAN_CONFORMANCE") or (testing.shared_dir .. "/conformance/cases")
local names = testing.lua_files(CASES)

describe("conformance", function()
  it("finds the cases", function() assert.is_true(#names >= 20) end)
  for _, f in ipairs(names) do
    local case = dofile(CASES .. "/" .. f)
    it(case.name, function()
      local plan = testing.plan(testing.config("cuda", case.targets))
      local mt = testing.metatable_for(case)
      local actual = plan(dp.parse(testing.text(case.input), mt))
      if case.expected then
        local expected = dp.parse(testing.text(case.expected), mt)
        assert.structurally_equal(actual, expected)
        if case.idempotent ~= false then assert.structurally_equal(plan(expected), expected) end
      end
      -- a fixed point of its own output, always
      assert.structurally_equal(plan(actual), actual)
    end)
  end
end)
