-- A short run of the API fuzzer (fuzz/apifuzz.lua): a few hundred calls of
-- every surface of dp with random and typed arguments, odd callbacks, deep
-- values and allocation failure armed on a share of them, in this process
-- (under the sanitizer run of the suite, in the instrumented executable).
-- fuzz/apifuzz.sh runs it for as long as asked; what it finds there becomes
-- a reproducer in fuzz/findings/.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local apifuzz = require "apifuzz"
local rt = require "apifuzz_rt"

local BATCHES = testing.instrumented and 3 or 8
local SEED = 424242 -- fixed: the suite runs the same calls every time

describe("the API fuzzer", function()
  it("knows every function of dp", function()
    local names = {}
    for _, f in ipairs(apifuzz.FUNCTIONS) do names[f] = true end
    for _, f in ipairs{"dp.parse", "dp.pattern.rec", "dp.passes.PlanDevices", "dp.pipeline.build",
                       "dp.PassContext", "dp.planner.plan_with", "dp.planner.report", "dp.graph.dot",
                       "dp.planner.solve_placement", "dp._parser", "dp.debug.fail_alloc"} do
      assert.is_true(names[f], f)
    end
  end)

  it("judges errors: devplan.Errors and argument errors pass, raw errors do not", function()
    assert.is_nil(rt.judge(dp.Error{message = "x", code = "value"}))
    assert.is_nil(rt.judge("bad argument #1 to 'parse' (string expected, got nil)"))
    assert.is_nil(rt.judge("dp.pattern.compile: a pattern expected, got number"))
    assert.is_nil(rt.judge("FUZZCB raised"))
    assert.is_string(rt.judge("/x/lua/devplan/pattern.lua:10: attempt to index a nil value"))
    assert.is_string(rt.judge("attempt to concatenate a table value"))
    assert.is_string(rt.judge("C stack overflow"))
    assert.is_string(rt.judge({}))
  end)

  it(("finds nothing in %d batches of calls, and writes no file in the current folder"):format(BATCHES), function()
    local function listing()
      local ls = io.popen("ls -A")
      local names = ls:read("a")
      ls:close()
      return names
    end
    local before = listing()
    local found = {}
    for seed = SEED, SEED + BATCHES - 1 do
      if not apifuzz.run_source(apifuzz.batch(seed, 40, 0.1), "apifuzz-" .. seed) then
        for _, f in ipairs(rt.found) do found[#found + 1] = ("batch %d call %d: %s"):format(seed, f.id, f.what) end
      end
    end
    dp.debug.fail_alloc(0)
    dp.debug.capture_cut_ids(0) -- (fuzzed too: planning later in this process cuts as it would)
    assert.same({}, found)
    assert.are.equal(before, listing()) -- (what the library writes goes to rt.path's folder)
  end)
end)
