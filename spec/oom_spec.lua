-- Allocation failures (issue 8): dp.debug.fail_alloc makes the n-th C
-- allocation fail; walking n over two workloads (spec/support/oom_workload.lua:
-- parse with metadata, inference, PlanDevices in both modes, printing,
-- verify, MergeComposite, find, PartitionByVirtualDevice, explain, errors;
-- placement by cost, AnnotateVirtualDevices, a Lua operator, dp.rewrite,
-- targets, pattern rewriting, the report)
-- checks that each failure is an "out of memory" devplan.Error, and that
-- the state gives the clean answers again afterwards. Leaks show under the
-- ASan build (scripts/oom.sh runs the whole walk there).
local dp = require "devplan"
local t = require "devplan.testing"
local W = dofile((dp.root or ".") .. "/spec/support/oom_workload.lua")

-- Under valgrind each run is ~50 times slower: every 11th n there.
local under_valgrind = (os.getenv("LD_PRELOAD") or ""):find("vgpreload") ~= nil
local STEP = under_valgrind and 11 or 1

describe("allocation failure injection", function()
  after_each(function() dp.debug.fail_alloc(0) end)

  it("fails the n-th allocation once, then works again", function()
    dp.debug.fail_alloc(1)
    local _, err = t.error_of(dp.parse, t.SMALL_MODULE)
    assert.is_true(dp.is_error(err), tostring(err))
    assert.equal("memory", err.code)
    assert.equal("out of memory", err.message)
    assert.truthy(dp.parse(t.SMALL_MODULE), "only the first allocation failed")
  end)

  it("persistent: the n-th and every later one fail", function()
    dp.debug.fail_alloc(3, true)
    assert.is_true(W.is_oom(select(2, t.error_of(dp.parse, t.SMALL_MODULE))))
    assert.is_true(W.is_oom(select(2, t.error_of(dp.parse, t.SMALL_MODULE))), "still failing")
    dp.debug.fail_alloc(0)
    assert.truthy(dp.parse(t.SMALL_MODULE))
  end)

  it("counts allocations only while armed", function()
    assert.equal(0, dp.debug.alloc_count())
    dp.debug.fail_alloc(math.maxinteger)
    dp.parse(t.SMALL_MODULE)
    local n = dp.debug.alloc_count()
    assert.is_true(n > 10, tostring(n))
    dp.debug.fail_alloc(0)
    assert.equal(0, dp.debug.alloc_count())
  end)

  it("rejects a negative count", function()
    local err = t.error_of(dp.debug.fail_alloc, -1)
    assert.equal(0, dp.debug.alloc_count(), "left off")
    assert.truthy(tostring(err):find("bad argument #1", 1, true), tostring(err))
  end)
end)

describe("walking every allocation", function()
  it("of parse, inference, planning, printing, patterns and explain: one failure at a time", function()
    local problems, runs = W.walk{ step = STEP }
    assert.same({}, problems)
    assert.is_true(runs > 100, tostring(runs))
  end)

  it("and with every allocation from the n-th on failing", function()
    local problems = W.walk{ step = STEP, persistent = true }
    assert.same({}, problems)
  end)

  it("of placement by cost, AnnotateVirtualDevices, Lua operators and rewrites, targets, the report", function()
    local problems, runs = W.walk{ run = W.run_more, step = STEP }
    assert.same({}, problems)
    assert.is_true(runs > 100, tostring(runs))
    assert.same({}, (W.walk{ run = W.run_more, step = STEP, persistent = true }))
  end)
end)

describe("walking every allocation of each conformance case", function()
  local dir = t.shared_dir .. "/conformance/cases"
  for _, f in ipairs(t.lua_files(dir)) do
    local case = dofile(dir .. "/" .. f)
    if type(case.input) == "string" then
      it(f, function()
        assert.same({}, (W.walk{ run = W.case_workload(case), step = STEP }))
      end)
    end
  end
end)

describe("DEVPLAN_FAIL_ALLOC in the executable", function()
  local file = (dp.root or ".") .. "/spec/data/tvm_meta_cuda.relay"
  -- status, stdout, stderr of `devplan plan FILE` with DEVPLAN_FAIL_ALLOC=n
  local function run(n)
    local out, err = os.tmpname(), os.tmpname()
    local ok, _, code = os.execute(("DEVPLAN_FAIL_ALLOC=%s %s plan %s >%s 2>%s"):format(n, t.exe, file, out, err))
    local o, e = t.read_file(out), t.read_file(err)
    os.remove(out)
    os.remove(err)
    return ok and 0 or code, o, e
  end

  it("ends with an error, never a crash, and succeeds beyond the count", function()
    local status, clean = run(0)
    assert.equal(0, status)
    for _, n in ipairs{ 1, 2, 5, 20, 50, "20+", "100+", 200, 400, "400+" } do
      local st, out, err = run(n)
      if st ~= 0 then
        assert.equal(1, st, "n=" .. n .. ": " .. err)
        assert.truthy(err:find("out of memory", 1, true) or err:find("not enough memory", 1, true), "n=" .. n .. ": " .. err)
      else
        assert.equal(clean, out, "n=" .. n)
      end
    end
    local st, out = run(1000000)
    assert.equal(0, st)
    assert.equal(clean, out)
  end)
end)
