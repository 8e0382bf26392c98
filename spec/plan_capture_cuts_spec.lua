-- Capture's index cuts without consume (src/planner/capture.c, tops and
-- cut): PlanDevices' capture gives the index's tail back behind it from
-- 2^21 ids on even where the caller keeps its module, so that the plan's new
-- nodes take those pages. Only the 1M benchmarks reach that size, so here
-- dp.debug.capture_cut_ids lowers the threshold (a cut every 32nd of
-- the ids, at least 8): the plans must be byte for byte the ones made
-- without cuts, and the cuts must have run (under ASan a read of an id past
-- a cut is a heap overflow).
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local props = require "props"

local META = testing.META

-- The plan's text of a fresh parse of text, and the cuts made without
-- consume meanwhile, with the threshold at ids (0: as planning has it).
local function plan(text, meta, config, opts, ids)
  dp.debug.capture_cut_ids(ids)
  local ok, out = pcall(dp.passes.PlanDevices(config, opts), dp.parse(text, meta))
  local cuts, moves = dp.debug.capture_cut_ids(0)
  return ok and dp.astext(out) or ("error: " .. tostring(out)), cuts, moves
end

-- Plans text without cuts and with the threshold at each of ids; every
-- plan the same. Returns the most cuts one plan made.
local function same(text, meta, config, opts, ids)
  local want, none = plan(text, meta, config, opts, 0)
  assert.are.equal(0, none) -- (below 2^21 ids: no cut without the hook)
  local most = 0
  for _, k in ipairs(ids or {1, 64, 1000}) do
    local got, cuts = plan(text, meta, config, opts, k)
    assert.are.equal(want, got)
    most = math.max(most, cuts)
  end
  return most
end

describe("PlanDevices' index cuts without consume (threshold lowered)", function()
  local config = testing.config("cuda")
  local shapes = dofile(dp.root .. "/bench/gen.lua")
  after_each(function() dp.debug.capture_cut_ids(0) end)

  it("plans the generated shapes as without cuts, and cuts", function()
    for _, n in ipairs{20, 300, 3000} do
      for _, name in ipairs{"chain", "let"} do
        local cuts = same(shapes[name](n), META, config)
        assert.is_true(cuts > 0, name .. " " .. n .. ": no cut made")
      end
      same(shapes.branchy(n, false), META, config)
    end
    -- (branchy's cuts come at capture's end at most sizes, where none is
    -- made: at 50 calls some come before it)
    assert.is_true(same(shapes.branchy(50, false), META, config) > 0)
  end)

  it("plans as without cuts with min_bytes and with every conflict", function()
    for _, opts in ipairs{{placement = "min_bytes"}, {all_conflicts = true}} do
      assert.is_true(same(shapes.let(500), META, config, opts) > 0)
      same(shapes.branchy(200, false), META, config, opts)
    end
  end)

  it("leaves consume's cuts as they were (counted apart)", function()
    local text = shapes.let(300)
    local want = plan(text, META, config, nil, 0)
    local got, cuts = plan(text, META, config, {consume = true}, 1)
    assert.are.equal(want, got)
    assert.are.equal(0, cuts)
  end)

  -- (these are too small or read ids out of order, nested functions: they
  -- check that the threshold alone changes nothing)
  it("plans the models and generated programs as without cuts", function()
    for _, name in ipairs{"mlp", "lstm", "dqn"} do
      local text = testing.read_file(testing.model(name))
      same(text, nil, config, nil, {1, 16})
    end
    local n = os.getenv("DEVPLAN_QUICK") and 40 or 200
    for seed = 1, n do
      local text = gen.text(gen.program(seed))
      if pcall(dp.parse, text, props.META) then same(text, props.META, props.CONFIG, nil, {1}) end
    end
  end)

  -- At a million let calls planning cuts without the hook, and those cuts
  -- move the post order down behind the cut child slots (only where that
  -- gives a huge page back: no smaller module gets there). Too slow under
  -- the sanitizers; the release build plans it in a second.
  local at_a_million = testing.instrumented and pending or it
  at_a_million("plans a million let calls as without cuts, the post order moved", function()
    local gen_bench = dofile((dp.root or ".") .. "/bench/gen.lua")
    local text = gen_bench.let(1000000)
    local cut, cuts, moves = plan(text, META, config, nil, 0)
    assert.is_true(cuts > 0 and moves > 0, cuts .. " cuts, " .. moves .. " moves")
    local whole, none = plan(text, META, config, nil, 4294967295) -- (a threshold no module reaches)
    assert.are.equal(0, none)
    assert.is_true(cut == whole, "the plans differ")
  end)

  it("checks its argument", function()
    assert.has_error(function() dp.debug.capture_cut_ids(-1) end)
    assert.are.equal(0, dp.debug.capture_cut_ids(0))
  end)
end)
