-- PlanDevices' consume option (src/planner/capture.c, plan.h): the caller
-- gives its module up, and the plan reuses the module's calls and lets that
-- nothing else holds, changed in place, instead of copying them (`devplan
-- plan` sets it where nothing reads its input after planning: cli.lua's
-- give_up_input). The plan must be the one made without it; without it the
-- input stays as it was; what something else holds is not changed.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local props = require "props"

local META = testing.META
local CONSUME = {consume = true}

-- Plans text twice, from two parses: without consume and with it (opts
-- added); both plans' texts must be one, and the first input unchanged.
-- Returns the given-up module, its text before, and the plan's text.
local function both(text, meta, config, opts)
  local kept, given = dp.parse(text, meta), dp.parse(text, meta)
  local before = dp.astext(kept)
  local with = {consume = true}
  for k, v in pairs(opts or {}) do with[k] = v end
  local ok, plain = pcall(dp.passes.PlanDevices(config, opts), kept)
  local cok, consumed = pcall(dp.passes.PlanDevices(config, with), given)
  assert.are.equal(ok, cok)
  assert.are.equal(before, dp.astext(kept)) -- (not given up: as it was)
  if not ok then return nil end
  local out = dp.astext(consumed)
  assert.are.equal(dp.astext(plain), out)
  return given, before, out
end

describe("PlanDevices with consume = true", function()
  local config = testing.config("cuda")
  local shapes = dofile(dp.root .. "/bench/gen.lua")

  it("plans the generated shapes as without it, reusing the input's calls and lets", function()
    for _, text in ipairs{shapes.chain(300), shapes.let(300), shapes.branchy(300, false)} do
      local given, before = both(text, META, config)
      -- the given-up module is valid (it prints) and holds the plan's nodes
      -- now: its lets' values are the plan's fixed on_device calls
      local now = dp.astext(given)
      if text:find("let ", 1, true) then
        assert.are_not.equal(before, now)
        assert.truthy(now:find("constrain_result=True", 1, true))
      end
    end
  end)

  it("changes nothing something else holds", function()
    local text = shapes.let(50)
    local m = dp.parse(text, META)
    local before = dp.astext(m)
    local main = m.main -- (Lua holds the function: nothing under it is the module's alone)
    local out = dp.passes.PlanDevices(config, CONSUME)(m)
    assert.are.equal(before, dp.astext(m))
    assert.are.equal(dp.astext(dp.passes.PlanDevices(config)(dp.parse(text, META))), dp.astext(out))
    -- a node held by Lua keeps its children, and so everything above it
    local m2 = dp.parse(text, META)
    local body = m2.main.body
    main = nil
    collectgarbage()
    local body_text = dp.astext(body)
    local out2 = dp.passes.PlanDevices(config, CONSUME)(m2)
    assert.are.equal(body_text, dp.astext(body))
    assert.are.equal(dp.astext(out), dp.astext(out2))
  end)

  it("changes a call several parents read in place, unless something else holds it", function()
    -- each call is read by the next and by two more (call i by i + 1, 2i
    -- and 2i + 1): the plan changes them in place
    local text = shapes.branchy(300, false)
    local _, _, out = both(text, META, config)
    -- call 100, read by 101, 200 and 201 and copied into from the other
    -- device (199 calls down the first arguments), held by Lua: it and
    -- what it reads stay as they were, and the plan is the same
    local function past(x)
      while x.callee.name == "on_device" or x.callee.name == "device_copy" do x = x.args[1] end
      return x
    end
    local m = dp.parse(text, META)
    local held = past(m.main.body)
    for _ = 1, 199 do held = past(held.args[1]) end
    local held_text = dp.astext(held)
    collectgarbage() -- (the function and the calls above it: only the module's)
    local planned = dp.passes.PlanDevices(config, CONSUME)(m)
    assert.are.equal(held_text, dp.astext(held))
    assert.are.equal(out, dp.astext(planned))
  end)

  it("plans the models and workloads as without it, and with min_bytes", function()
    for _, name in ipairs{"mlp", "lstm", "dqn"} do
      local text = testing.read_file(testing.model(name))
      both(text, nil, config)
      both(text, nil, config, {placement = "min_bytes"})
    end
    both(shapes.branchy(200, false), META, config, {placement = "min_bytes", all_conflicts = true})
  end)

  it("plans generated programs as without it", function()
    local n = os.getenv("DEVPLAN_QUICK") and 40 or 300
    for seed = 1, n do
      local text = gen.text(gen.program(seed))
      if pcall(dp.parse, text, props.META) then
        both(text, props.META, props.CONFIG)
        both(text, props.META, props.CONFIG, {placement = "min_bytes"})
      end
    end
  end)

  it("is an option PlanDevices checks", function()
    assert.has_error(function() dp.passes.PlanDevices(config, {consume = 1}) end)
  end)
end)
