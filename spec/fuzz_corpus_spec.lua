-- The coverage-guided fuzzer's committed corpus (fuzz/corpus/, minimised by
-- fuzz/run.sh --merge) replayed through the same properties its harness
-- checks (fuzz/props.lua): each input is a regression test.
local dp = require "devplan"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local props = require "props"
local testing = require "devplan.testing"

-- As in spec/gen_spec.lua: the planner's own properties fail on defects
-- the planner branch is fixing; reported pending until it is merged.
local PLANNER_OPEN = false
local PLANNER_PROPERTIES = {idempotence = true, order = true, conflict = true, ["strict-default"] = true,
                            verify = true, ["plan-error"] = true}

local DIR = (dp.root or ".") .. "/fuzz/corpus"

local function corpus()
  local names = {}
  local ls = io.popen("ls '" .. DIR .. "' 2>/dev/null")
  for name in ls:lines() do names[#names + 1] = name end
  ls:close()
  table.sort(names)
  return names
end

describe("the fuzzer's corpus", function()
  local names = corpus()
  local checker = props.checker()

  it("is there (a few hundred minimised inputs)", function()
    assert.is_true(#names >= 50 and #names <= 1000, #names .. " files in " .. DIR)
  end)

  it("replays with every property of fuzz/props.lua", function()
    local mine, planner = {}, {}
    -- valgrind runs (DEVPLAN_QUICK) replay every fourth input
    local step = os.getenv("DEVPLAN_QUICK") and 4 or 1
    for i = 1, #names, step do
      local name = names[i]
      local failure = checker:check(testing.read_file(DIR .. "/" .. name))
      if failure then
        local list = PLANNER_PROPERTIES[failure.property] and planner or mine
        list[#list + 1] = name .. ": " .. failure.property .. ": " .. failure.detail:sub(1, 300)
      end
    end
    assert.are.equal(0, #mine, table.concat(mine, "\n"))
    if #planner > 0 and PLANNER_OPEN then
      pending(#planner .. " inputs fail a planner property (the planner branch fixes them):\n"
        .. table.concat(planner, "\n", 1, math.min(5, #planner)))
    end
    assert.are.equal(0, #planner, table.concat(planner, "\n"))
  end)
end)
