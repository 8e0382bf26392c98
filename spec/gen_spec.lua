-- The random program generator (fuzz/relaygen.lua) and the properties of
-- fuzz/props.lua on a few hundred of its programs. fuzz/gen_run.lua runs
-- as many as asked and shrinks failures; this is the suite's share.
local dp = require "devplan"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local props = require "props"

local N = os.getenv("DEVPLAN_QUICK") and 60 or 300

-- The planner's own properties.
local PLANNER_PROPERTIES = {idempotence = true, order = true, conflict = true, ["strict-default"] = true,
                            verify = true, ["plan-error"] = true}

local function texts(prog, seed)
  local orders = {}
  for k, order in ipairs(gen.orders(prog, seed)) do orders[k] = gen.text(prog, order) end
  return gen.text(prog), orders
end

describe("the program generator", function()
  it("gives the same program for the same seed, and different ones for others", function()
    assert.are.equal(gen.text(gen.program(42)), gen.text(gen.program(42)))
    local seen = {}
    for seed = 1, 50 do seen[gen.text(gen.program(seed))] = true end
    local distinct = 0
    for _ in pairs(seen) do distinct = distinct + 1 end
    assert.is_true(distinct >= 48, distinct .. " distinct programs of 50")
  end)

  it("writes well-typed programs that use every feature it promises", function()
    local features = {
      ["let "] = 0, ["%%%d+ = "] = 0, ["if %("] = 0, ["fn %("] = 0, ["%(%%a%d+, %%"] = 0, ["%)%.%d"] = 0,
      ["@h%d%(@h"] = 0, ["on_device%("] = 0, ["device_copy%("] = 0, ["constrain_body=False"] = 0,
      ["constrain_result=True"] = 0, ["constrain_body=False, constrain_result=True"] = 0,
      ["{virtual_device="] = 0, [", virtual_device=meta"] = 0, ["VirtualDevice%("] = 0,
      ["meta%[VirtualDevice%]%[2%]"] = 0, ["meta%[VirtualDevice%]%[3%]"] = 0, ["meta%[VirtualDevice%]%[4%]"] = 0,
      ["1f%)"] = 0, ["let %%v%d+ = on_device"] = 0, ["on_device%(on_device%("] = 0, ["on_device%(fn "] = 0,
      ["device_copy%(on_device%("] = 0,
      -- ADTs, match with nested patterns, references, primfns and the memory and VM operators
      ["type List%[A%]"] = 0, ["Cons%("] = 0, ["Nil"] = 0, ["Some%(fn"] = 0, ["Nothing"] = 0,
      ["match %("] = 0, ["match%? %("] = 0, ["Cons%(%%m%d+, Cons%("] = 0, ["Some%(%%m%d+%) =>"] = 0,
      ["_ =>"] = 0, ["=> {"] = 0, ["ref%("] = 0, ["ref_read%("] = 0, ["ref_write%("] = 0,
      ["primfn @p%d%(Tensor"] = 0, ['scope="'] = 0, ["call_lowered%(@p%d, %("] = 0,
      ["memory%.alloc_storage%("] = 0, ["memory%.alloc_tensor%("] = 0, ["vm%.shape_of%("] = 0,
      ["vm%.reshape_tensor%("] = 0, ["vm%.invoke_tvm_op%(fn"] = 0, ["vm%.invoke_tvm_op%(@p"] = 0,
      ["Primitive=1"] = 0, ["\n%s+ref_write%("] = 0, ["\n%s+vm%.invoke_tvm_op%("] = 0, ["let %%v%d+: "] = 0,
      ["%(%%a%d+: List%["] = 0, ["%(%%a%d+: ref%("] = 0, ["Storage%[%]"] = 0,
    }
    for seed = 1, 400 do
      local text = gen.text(gen.program(seed))
      local ok, err = pcall(dp.parse, text, props.META)
      assert.is_true(ok, "seed " .. seed .. ": " .. tostring(err) .. "\n" .. text)
      for pat in pairs(features) do
        if text:find(pat) then features[pat] = features[pat] + 1 end
      end
    end
    for pat, n in pairs(features) do assert.is_true(n >= 3, ("%q in %d programs of 400"):format(pat, n)) end
  end)

  it("permutes definitions and primfns without changing the program", function()
    local prog, seed
    for s = 1, 100 do -- a program with primfns and helpers
      prog, seed = gen.program(s, {helpers = 3}), s
      if #prog.primfns > 0 and #prog.defs >= 3 then break end
    end
    assert.is_true(#prog.primfns > 0 and #prog.defs >= 3)
    for _, order in ipairs(gen.orders(prog, seed)) do
      assert.are_not.equal(gen.text(prog), gen.text(prog, order))
      local a, b = dp.parse(gen.text(prog), props.META), dp.parse(gen.text(prog, order), props.META)
      for _, f in ipairs(a:functions()) do
        assert.is_true(dp.structural_equal(f[2], b:get(f[1])), f[1])
      end
    end
  end)

  it("shrinks a program while a property holds, to a small one", function()
    local prog
    for seed = 1, 100 do -- a big program with a device_copy
      local p = gen.program(seed)
      if gen.text(p):find("device_copy", 1, true) and gen.size(p) > 40 then prog = p; break end
    end
    assert.is_not_nil(prog)
    local small = gen.shrink(prog, function(p)
      return gen.text(p):find("device_copy", 1, true) ~= nil and pcall(dp.parse, gen.text(p), props.META)
    end)
    assert.is_true(gen.size(small) <= 8, "shrunk to size " .. gen.size(small) .. ":\n" .. gen.text(small))
    assert.truthy(gen.text(small):find("device_copy", 1, true))
    assert.is_true((pcall(dp.parse, gen.text(small), props.META)))
  end)
end)

describe("the property checker", function()
  local text = [[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=meta[VirtualDevice][0]);
  negative(%0)
}]]

  it("runs the verifier on every planned module, with the input", function()
    local seen = {}
    local checker = props.checker{verify = function(planned, input)
      seen[#seen + 1] = dp.is_module(planned) and dp.is_module(input)
      if tostring(planned):find("device_copy", 1, true) then return {"a copy (to see the failure)"} end
    end}
    local failure = checker:check(text)
    assert.are.same({property = "verify", detail = "plan: a copy (to see the failure)"}, failure)
    assert.are.same({true}, seen)
    -- by default the checker runs dp.planner.verify, with the input
    assert.is_function(props.checker().verify)
  end)

  it("tells a raw error from a devplan.Error, and checks conflicts name two positions", function()
    local checker = props.checker()
    assert.is_nil((checker:check(text)))
    checker.plan = function() error("not a devplan.Error") end
    local f = checker:check(text)
    assert.are.equal("raw-error", f.property)
    assert.truthy(f.detail:find("not a devplan.Error", 1, true), f.detail)
    checker = props.checker()
    local conflict = [[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %1 = on_device(%a, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  add(%0, %1)
}]]
    local none, res = checker:check(conflict)
    assert.is_nil(none)
    assert.are.equal("plan-conflict", res.outcome)
  end)
end)

describe(N .. " generated programs", function()
  local failures, outcomes -- of run_all, run once by the first test
  local function run_all()
    if failures then return end
    failures, outcomes = {}, {}
    local checker = props.checker()
    for seed = 1, N do
      local prog = gen.program(seed)
      local text, orders = texts(prog, seed)
      local failure, res = checker:check(text, {orders = orders, only_conflicts = true})
      if failure then
        failures[#failures + 1] = {seed = seed, property = failure.property, detail = failure.detail}
      else
        outcomes[res.outcome] = (outcomes[res.outcome] or 0) + 1
      end
    end
  end

  local function summary(list)
    local lines = {}
    for i, f in ipairs(list) do
      if i > 5 then lines[#lines + 1] = ("... and %d more"):format(#list - 5); break end
      lines[#lines + 1] = ("seed %d %s: %s"):format(f.seed, f.property, f.detail:sub(1, 400))
    end
    return table.concat(lines, "\n")
  end

  it("plan or fail with a devplan.Error, round trip, and plan the same twice", function()
    run_all()
    local mine = {}
    for _, f in ipairs(failures) do
      if not PLANNER_PROPERTIES[f.property] then mine[#mine + 1] = f end
    end
    assert.are.equal(0, #mine, summary(mine))
    -- the generator explores both sides: plans and conflicts
    assert.is_true((outcomes.planned or 0) >= N // 5, "planned: " .. tostring(outcomes.planned))
    assert.is_true((outcomes["plan-conflict"] or 0) >= N // 10, "conflicts: " .. tostring(outcomes["plan-conflict"]))
  end)

  it("have the planner's properties: idempotence, definition order, conflicts with two positions, "
    .. "strict = default, the verifier", function()
    run_all()
    local planner = {}
    for _, f in ipairs(failures) do
      if PLANNER_PROPERTIES[f.property] then planner[#planner + 1] = f end
    end
    assert.are.equal(0, #planner, summary(planner))
  end)
end)
