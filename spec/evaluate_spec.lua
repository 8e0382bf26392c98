-- devplan.evaluate.execute: the reference evaluator reading a module as
-- planned: copies counted per execution (a copy in a loop once per
-- iteration, in an if arm when the arm runs, one before an if whichever arm
-- runs, one nobody reads on this path still), every operator's arguments
-- checked against its device, its options and limits. (evaluate.run's values:
-- spec/eval_gen_spec.lua.)
local dp = require "devplan"
local testing = require "devplan.testing"
local evaluate = require "devplan.evaluate"

local T = "Tensor[(5, 7), float32]"
local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"

local function parse(text)
  text = text:gsub("T([,)%s])", T .. "%1"):gsub("CPU", CPU):gsub("GPU", GPU)
  return dp.parse("#[version = \"0.0.5\"]\n" .. text, testing.META)
end

local function copy(x, a, b)
  return "device_copy(" .. x .. ", src_virtual_device=" .. a .. ", dst_virtual_device=" .. b .. ")"
end

describe("devplan.evaluate.execute", function()
  it("counts a copy in a loop once per iteration, and computes the loop's counter", function()
    local mod = parse([[
def @loop(%i {virtual_device=GPU}: int32, %n {virtual_device=GPU}: int32, %x {virtual_device=GPU}: T, %w {virtual_device=CPU}: T, virtual_device=GPU) -> T {
  if (less(%i, %n)) {
    @loop(add(%i, 1), %n, on_device(multiply(%x, ]] .. copy("%w", CPU, GPU) .. [[), virtual_device=GPU), %w)
  } else { %x }
}
def @main(%n {virtual_device=GPU}: int32, %x {virtual_device=GPU}: T, %w {virtual_device=CPU}: T, virtual_device=GPU) -> T {
  @loop(0, %n, %x, %w)
}
]])
    for _, n in ipairs{0, 1, 7} do
      local r = evaluate.execute(mod, {n = n, x = 2, w = 3})
      assert.are.equal(n, r.copies)
      assert.are.equal(n * 5 * 7 * 4, r.bytes)
      assert.are.equal(0, r.nviolations, r.violations[1])
      assert.is_true(evaluate.same(evaluate.run(mod, {n = n, x = 2, w = 3}), r.value))
    end
    local r3, r4 = evaluate.execute(mod, {n = 3, x = 2, w = 3}), evaluate.execute(mod, {n = 4, x = 2, w = 3})
    assert.is_false(evaluate.same(r3.value, r4.value))
  end)

  it("counts a copy in an arm when the arm runs, one before the if whichever runs, one nobody reads too", function()
    local mod = parse([[
def @main(%x {virtual_device=CPU}: T, %c {virtual_device=GPU}: bool, virtual_device=GPU) -> T {
  %0 = ]] .. copy("%x", CPU, GPU) .. [[;
  %1 = ]] .. copy("negative(%x)", CPU, GPU) .. [[;
  if (%c) { on_device(add(add(%0, %1), ]] .. copy("exp(%x)", CPU, GPU) .. [[), virtual_device=GPU) } else {
    if (%c) { %1 } else { %0 }
  }
}
]])
    -- %0 and %1 are read in both outer arms: made before the if, whichever arm runs (when c
    -- is false, the inner if reads %0 alone: %1 runs all the same); the copy of exp(%x)
    -- when the then arm runs
    assert.are.equal(3, evaluate.execute(mod, {x = 1, c = true}).copies)
    assert.are.equal(2, evaluate.execute(mod, {x = 1, c = false}).copies)
    -- a copy read in one arm only lives in that arm
    local armed = parse([[
def @main(%x {virtual_device=CPU}: T, %c {virtual_device=GPU}: bool, virtual_device=GPU) -> T {
  %0 = ]] .. copy("%x", CPU, GPU) .. [[;
  if (%c) { if (%c) { %0 } else { on_device(negative(%0), virtual_device=GPU) } } else { ]] .. copy("%x", CPU, GPU) .. [[ }
}
]])
    assert.are.equal(1, evaluate.execute(armed, {x = 1, c = true}).copies)
    assert.are.equal(1, evaluate.execute(armed, {x = 1, c = false}).copies)
  end)

  it("finds an operator whose argument is on another device, and a copy from the wrong device", function()
    local mod = parse([[
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, virtual_device=GPU) -> T {
  %0 = on_device(add(%x, %y), virtual_device=GPU);
  on_device(multiply(%0, ]] .. copy("%y", CPU, GPU) .. [[), virtual_device=GPU)
}
]])
    local r = evaluate.execute(mod, {x = 1, y = 2})
    assert.are.equal(2, r.nviolations)
    local all = table.concat(r.violations, "\n")
    assert.truthy(all:find("argument 1 of add at 3:%d+: the call runs on [^\n]*cuda[^\n]*, the argument is on [^\n]*cpu"), all)
    assert.truthy(all:find("the argument of device_copy at 4:%d+: its source is [^\n]*cpu[^\n]*, the argument on [^\n]*cuda"), all)
    assert.are.equal(1, r.copies)
    -- a function's result and arguments against its own devices
    local calls = parse([[
def @f(%a {virtual_device=GPU}: T, virtual_device=GPU) -> T { %a }
def @main(%x {virtual_device=CPU}: T, virtual_device=CPU) -> T { @f(%x) }
]])
    local rc = evaluate.execute(calls, {x = 1})
    assert.truthy(rc.violations[1]:find("argument 1 of call at 3:%d+ of @f: its parameter is on [^\n]*cuda[^\n]*, the argument on [^\n]*cpu"), rc.violations[1])
    -- (the body reads %a where the argument left it: on the CPU)
    assert.truthy(rc.violations[2]:find("the result of @f: the function's virtual_device is [^\n]*cuda[^\n]*, the result on [^\n]*cpu"),
                  rc.violations[2])
    assert.are.equal(2, rc.nviolations)
  end)

  it("checks its options, and stops at its limit with a devplan.evaluate error", function()
    local mod = parse([[
def @loop(%i: int32, %x: T) -> T { if (less(%i, 1000000)) { @loop(add(%i, 1), %x) } else { %x } }
def @main(%x: T) -> T { @loop(0, %x) }
]])
    local ok, err = pcall(evaluate.execute, mod, {x = 1}, {limit = 500})
    assert.is_false(ok)
    assert.are.equal("devplan.evaluate: evaluation limit reached (500 steps)", err)
    ok, err = pcall(evaluate.execute, mod, {x = 1}, {nope = 1})
    assert.truthy(not ok and err:find("unknown option 'nope'", 1, true), err)
    ok, err = pcall(evaluate.execute, mod, {x = 1}, {limit = 0})
    assert.truthy(not ok and err:find("'limit' must be a positive integer", 1, true), err)
    ok, err = pcall(evaluate.execute, mod, {})
    assert.truthy(not ok and err:find("no value for %x", 1, true), err)
    ok, err = pcall(evaluate.execute, mod, 3)
    assert.truthy(not ok and err:find("arguments must be a table", 1, true), err)
  end)
end)
