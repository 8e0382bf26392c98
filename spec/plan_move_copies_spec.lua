-- dp.passes.MoveCopies (src/planner/move*.c, issue 20): copies of a planned
-- module moved to where they run least, counted per execution by the
-- reference evaluator, devplan.evaluate (which also checks every operator's
-- arguments are on its device). device_planner.cc's worked example, loops
-- over loop invariants (global recursion and while_loop's closures),
-- branches and matches whose arms copy, round trips, closures; the
-- families whose minimum is known reach it; generated programs keep their
-- values, never copy more on any run, verify and are fixed points; the
-- pipeline, the command line, explanations, deep programs, allocation
-- failures.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen_copies"
local pc = require "props_copies"
local run = require("devplan.evaluate").execute

local T = "Tensor[(5, 7), float32]"
local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"
local config = testing.config("cpu")

-- T, CPU, GPU spelt out in a program's text.
local function program(text)
  return (text:gsub("T([,)%s])", T .. "%1"):gsub("CPU", CPU):gsub("GPU", GPU))
end

local function copy(x, a, b)
  return "device_copy(" .. x .. ", src_virtual_device=" .. a .. ", dst_virtual_device=" .. b .. ")"
end

local function plan(text, cfg)
  return dp.passes.PlanDevices(cfg or config)(dp.parse(program(text), testing.META))
end

-- Planned and moved, checked: verifies, a fixed point of PlanDevices and of
-- MoveCopies, re-parses; on each run the same value, no more copies, every
-- operator's arguments on its device. Returns moved, planned, moves and the
-- copies executed per run (before, after).
local function moved_of(text, runs, cfg)
  cfg = cfg or config
  local planned = plan(text, cfg)
  local moved, moves = dp.planner.move(planned, cfg)
  local v, total = dp.planner.verify(moved, cfg)
  assert.are.equal(0, total, v[1] and v[1].message)
  assert.structurally_equal(moved, dp.passes.PlanDevices(cfg)(moved))
  assert.structurally_equal(moved, (dp.planner.move(moved, cfg)))
  assert.structurally_equal(moved, dp.parse(tostring(moved)))
  local before, after = {}, {}
  for i, args in ipairs(runs) do
    local r0, r1 = run(planned, args), run(moved, args)
    assert.are.equal(0, r0.nviolations, r0.violations[1])
    assert.are.equal(0, r1.nviolations, r1.violations[1])
    assert.is_true(pc.equal(r0.value, r1.value), "run " .. i .. " computes another value")
    assert.is_true(r1.copies <= r0.copies, "run " .. i .. ": " .. r1.copies .. " copies, " .. r0.copies .. " before")
    before[i], after[i] = r0.copies, r1.copies
  end
  return moved, planned, moves, before, after
end

local function kinds(moves)
  local k = {}
  for _, m in ipairs(moves) do k[m.kind] = (k[m.kind] or 0) + 1 end
  return k
end

-- device_planner.cc's comment: "we leave it to a downstream transformation
-- to heuristically minimize cross-device calls by moving device copies out
-- of functions", @f executing on the CPU around a GPU computation.
local WORKED = [[
#[version = "0.0.5"]
def @f(%a {virtual_device=CPU}: T, virtual_device=CPU) -> T {
  let %x = on_device(negative(%a), virtual_device=GPU);
  %0 = on_device(add(%x, %x), virtual_device=GPU);
  device_copy(%0, src_virtual_device=GPU, dst_virtual_device=CPU)
}
def @main(%p {virtual_device=CPU}: T) -> T {
  exp(@f(%p))
}
]]

describe("MoveCopies on device_planner.cc's worked example", function()
  it("makes @f execute on the GPU and @main copy: the minimum, two copies", function()
    local moved, _, moves, before, after = moved_of(WORKED, {{p = 3}})
    local f = moved:get("f")
    assert.are.equal("cuda", f.virtual_device.device_type_name)
    assert.are.equal("cuda", f.params[1].virtual_device.device_type_name)
    assert.are.equal(0, testing.count_calls(f, "device_copy"))
    assert.are.equal(2, testing.count_calls(moved:get("main"), "device_copy"))
    assert.are.same({2}, before)
    assert.are.same({2}, after) -- %p to the GPU, the result back: no fewer can run
    assert.are.same({parameter = 1, result = 1}, kinds(moves))
  end)

  it("copies nothing for a caller that already had the value where @f now wants it", function()
    -- a second caller on the GPU copied the argument to the CPU and the
    -- result back: 6 copies on that path before, 2 after (the minimum)
    local text = WORKED:gsub("def @main.*", "") .. [[
def @main(%p {virtual_device=CPU}: T, %c: bool) -> T {
  %1 = @f(%p);
  if (%c) {
    exp(%1)
  } else {
    %2 = device_copy(@f(%1), src_virtual_device=CPU, dst_virtual_device=GPU);
    %3 = on_device(tanh(%2), virtual_device=GPU);
    device_copy(%3, src_virtual_device=GPU, dst_virtual_device=CPU)
  }
}
]]
    local _, _, moves, before, after = moved_of(text, {{p = 3, c = true}, {p = 3, c = false}})
    assert.are.same({2, 6}, before)
    assert.are.same({2, 2}, after)
    assert.is_true((kinds(moves).cancelled or 0) >= 1)
  end)

  it("moves the copy every caller makes of the result into the function, where it copies it already", function()
    local text = [[
#[version = "0.0.5"]
def @f(%a {virtual_device=GPU}: T, virtual_device=GPU) -> T {
  %0 = on_device(exp(%a), virtual_device=GPU);
  let %u = on_device(tanh(device_copy(%0, src_virtual_device=GPU, dst_virtual_device=CPU)), virtual_device=CPU);
  %0
}
def @main(%x {virtual_device=GPU}: T, virtual_device=CPU) -> T {
  %1 = device_copy(@f(%x), src_virtual_device=GPU, dst_virtual_device=CPU);
  %2 = device_copy(@f(on_device(negative(%x), virtual_device=GPU)), src_virtual_device=GPU, dst_virtual_device=CPU);
  add(%1, %2)
}
]]
    local moved, _, moves, before, after = moved_of(text, {{x = 3}})
    assert.are.same({4}, before)
    assert.are.same({2}, after) -- each call copied its result twice, once inside and once after
    assert.are.equal("cpu", moved:get("f").virtual_device.device_type_name)
    assert.are.equal(0, testing.count_calls(moved:get("main"), "device_copy"))
    assert.truthy(moves[1].text:find("moved into it", 1, true), moves[1].text)
  end)

  it("leaves a parameter copied only in one branch of the function where it is", function()
    local text = [[
#[version = "0.0.5"]
def @f(%a {virtual_device=CPU}: T, %c {virtual_device=CPU}: bool, virtual_device=CPU) -> T {
  if (%c) { device_copy(on_device(exp(]] .. copy("%a", CPU, GPU) .. [[), virtual_device=GPU), src_virtual_device=GPU, dst_virtual_device=CPU) } else { %a }
}
def @main(%p {virtual_device=CPU}: T, %c {virtual_device=CPU}: bool) -> T { @f(%p, %c) }
]]
    local moved, _, _, before, after = moved_of(text, {{p = 3, c = true}, {p = 3, c = false}})
    assert.are.same(before, after)
    assert.are.equal("cpu", moved:get("f").params[1].virtual_device.device_type_name)
  end)
end)

describe("MoveCopies out of loops", function()
  local GLOBAL = [[
#[version = "0.0.5"]
def @loop(%i {virtual_device=GPU}: int32, %n {virtual_device=GPU}: int32, %x {virtual_device=GPU}: T, %w {virtual_device=CPU}: T, virtual_device=GPU) -> T {
  if (less(%i, %n)) {
    %0 = on_device(multiply(%x, ]] .. copy("%w", CPU, GPU) .. [[), virtual_device=GPU);
    @loop(add(%i, 1), %n, %0, %w)
  } else {
    %x
  }
}
def @main(%n {virtual_device=GPU}: int32, %x {virtual_device=GPU}: T, %w {virtual_device=CPU}: T, virtual_device=GPU) -> T {
  @loop(0, %n, %x, %w)
}
]]
  local RUNS = {{n = 0, x = 4, w = 5}, {n = 1, x = 4, w = 5}, {n = 5, x = 4, w = 5}}

  it("peels a recursive function: the invariant is copied once per loop, not per iteration", function()
    local moved, _, moves, before, after = moved_of(GLOBAL, RUNS)
    assert.are.same({0, 1, 5}, before)
    assert.are.same({0, 1, 1}, after)
    assert.is_not_nil(moved:get("loop_cuda"))
    assert.are.equal("cuda", moved:get("loop_cuda").params[4].virtual_device.device_type_name)
    assert.are.equal(1, kinds(moves).loop)
    assert.truthy(moves[1].text:find("not at all when the loop does not", 1, true))
  end)

  it("peels a while_loop closure over a variable it captures", function()
    local text = [[
#[version = "0.0.5"]
def @main(%n {virtual_device=GPU}: int32, %x {virtual_device=GPU}: T, %w {virtual_device=CPU}: T, virtual_device=GPU) -> T {
  let %while_loop = fn (%i {virtual_device=GPU}: int32, %y {virtual_device=GPU}: T, virtual_device=GPU) -> T {
    if (less(%i, %n)) {
      %0 = on_device(multiply(%y, ]] .. copy("%w", CPU, GPU) .. [[), virtual_device=GPU);
      %while_loop(add(%i, 1), %0)
    } else {
      %y
    }
  };
  %while_loop(0, %x)
}
]]
    local moved, _, _, before, after = moved_of(text, RUNS)
    assert.are.same({0, 1, 5}, before)
    assert.are.same({0, 1, 1}, after)
    assert.truthy(tostring(moved):find("let %while_loop_cuda = fn", 1, true))
  end)

  it("keeps the copies when the function budget is spent", function()
    local planned = plan(GLOBAL)
    local moved = dp.planner.move(planned, config, {max_new_functions = 1})
    assert.is_not_nil(moved:get("loop_cuda"))
    local p = dp.passes.MoveCopies(config, {max_new_functions = 1})
    assert.structurally_equal(moved, p(planned))
  end)
end)

describe("MoveCopies out of closures", function()
  -- a closure called twice whenever it is made, copying %x (which it captures) on every call
  local TWICE = [[
#[version = "0.0.5"]
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, virtual_device=GPU) -> T {
  %0 = on_device(negative(%x), virtual_device=CPU);
  let %f = fn (%z {virtual_device=GPU}: T, virtual_device=GPU) -> T { on_device(add(]] .. copy("%0", CPU, GPU) .. [[, %z), virtual_device=GPU) };
  %1 = %f(%y);
  %f(%1)
}
]]

  it("makes a copy of what a closure captures where the closure is made, when a call always follows", function()
    local moved, _, moves, before, after = moved_of(TWICE, {{x = 1, y = 2}})
    assert.are.same({2}, before)
    assert.are.same({1}, after)
    assert.are.same({captured = 1}, kinds(moves))
    assert.truthy(moves[1].text:find("once per closure instead of once per call", 1, true), moves[1].text)
    -- the copy and what it copies now run outside the closure
    local text = tostring(moved)
    assert.truthy(text:find("let %copy_cuda = ", 1, true), text)
    assert.truthy(text:find("fn (%z {virtual_device=VirtualDevice(device_type=cuda, virtual_device_id=0, target=\"cuda -host=llvm\")}: Tensor[(5, 7), float32], virtual_device=VirtualDevice(device_type=cuda, virtual_device_id=0, target=\"cuda -host=llvm\")) -> Tensor[(5, 7), float32] {\n    add(%copy_cuda, %z)", 1, true), text)
    -- explained
    local texts = {}
    dp.visit(moved, function(e)
      if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "device_copy" then
        texts[#texts + 1] = dp.planner.why(moved, e, {config = config})
      end
    end)
    assert.are.equal(1, #texts)
    assert.truthy(texts[1]:find("MoveCopies moved it here:\n    %f (in @main) copies", 1, true), texts[1])
  end)

  it("names the variable it copies, and leaves one it makes from its parameters", function()
    local text = [[
#[version = "0.0.5"]
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, virtual_device=GPU) -> T {
  let %f = fn (%z {virtual_device=GPU}: T, virtual_device=GPU) -> T {
    %0 = on_device(add(%x, ]] .. copy("%z", GPU, CPU) .. [[), virtual_device=CPU);
    on_device(multiply(]] .. copy("%x", CPU, GPU) .. [[, ]] .. copy("%0", CPU, GPU) .. [[), virtual_device=GPU)
  };
  %1 = %f(%y);
  %f(%1)
}
]]
    local moved, _, moves, before, after = moved_of(text, {{x = 1, y = 2}})
    assert.are.same({6}, before)
    assert.are.same({5}, after) -- %x once; what it computes from %z still per call
    assert.are.equal(1, kinds(moves).captured)
    assert.truthy(tostring(moved):find("let %x_cuda = ", 1, true))
  end)

  it("moves what it copies out of the closure only when operators alone compute it", function()
    local text = [[
#[version = "0.0.5"]
def @g(%a: T) -> T { negative(%a) }
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, virtual_device=GPU) -> T {
  let %f = fn (%z {virtual_device=GPU}: T, virtual_device=GPU) -> T { on_device(add(]] .. copy("on_device(@g(%x), virtual_device=CPU)", CPU, GPU) .. [[, %z), virtual_device=GPU) };
  %1 = %f(%y);
  %f(%1)
}
]]
    -- a call of a function (which may do anything, each time) stays in the closure
    local _, _, moves, before, after = moved_of(text, {{x = 1, y = 2}})
    assert.are.same({2}, before)
    assert.are.same({2}, after)
    assert.is_nil(kinds(moves).captured)
    -- computed before the closure already (read there too), it is copied once
    local outside = [[
#[version = "0.0.5"]
def @g(%a: T) -> T { negative(%a) }
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, virtual_device=GPU) -> T {
  %0 = on_device(@g(%x), virtual_device=CPU);
  let %f = fn (%z {virtual_device=GPU}: T, virtual_device=GPU) -> T { on_device(add(]] .. copy("%0", CPU, GPU) .. [[, %z), virtual_device=GPU) };
  %1 = %f(%y);
  on_device(add(%f(%1), ]] .. copy("exp(%0)", CPU, GPU) .. [[), virtual_device=GPU)
}
]]
    _, _, moves, before, after = moved_of(outside, {{x = 1, y = 2}})
    assert.are.same({3}, before)
    assert.are.same({2}, after)
    assert.are.equal(1, kinds(moves).captured)
  end)

  it("leaves the copy where a call may not follow the closure (a branch), or runs only sometimes", function()
    local in_branch = [[
#[version = "0.0.5"]
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, %c {virtual_device=GPU}: bool, virtual_device=GPU) -> T {
  let %f = fn (%z {virtual_device=GPU}: T, virtual_device=GPU) -> T { on_device(add(]] .. copy("%x", CPU, GPU) .. [[, %z), virtual_device=GPU) };
  if (%c) { %1 = %f(%y); %f(%1) } else { %y }
}
]]
    local _, _, moves, before, after = moved_of(in_branch, {{x = 1, y = 2, c = true}, {x = 1, y = 2, c = false}})
    assert.are.same({2, 0}, before)
    assert.are.same({2, 0}, after)
    assert.is_nil(kinds(moves).captured)
    local in_arm = [[
#[version = "0.0.5"]
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, %c {virtual_device=GPU}: bool, virtual_device=GPU) -> T {
  let %f = fn (%z {virtual_device=GPU}: T, %d {virtual_device=GPU}: bool, virtual_device=GPU) -> T {
    if (%d) { on_device(add(]] .. copy("%x", CPU, GPU) .. [[, %z), virtual_device=GPU) } else { %z }
  };
  %1 = %f(%y, %c);
  %f(%1, %c)
}
]]
    _, _, moves, before, after = moved_of(in_arm, {{x = 1, y = 2, c = true}, {x = 1, y = 2, c = false}})
    assert.are.same({2, 0}, before)
    assert.are.same({2, 0}, after)
    assert.is_nil(kinds(moves).captured)
  end)
end)

describe("MoveCopies out of branches", function()
  it("makes one copy before an if whose arms both copy the value", function()
    local text = [[
#[version = "0.0.5"]
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, %c {virtual_device=GPU}: bool, virtual_device=GPU) -> T {
  if (%c) { on_device(add(]] .. copy("%x", CPU, GPU) .. [[, %y), virtual_device=GPU) } else { on_device(multiply(]] .. copy("%x", CPU, GPU) .. [[, %y), virtual_device=GPU) }
}
]]
    local moved, _, moves = moved_of(text, {{x = 1, y = 2, c = true}, {x = 1, y = 2, c = false}})
    assert.are.equal(1, testing.count_calls(moved, "device_copy"))
    local s = tostring(moved)
    assert.is_true(s:find("device_copy", 1, true) < s:find("if (", 1, true), s)
    assert.are.equal(1, kinds(moves).merged)
    assert.truthy(moves[1].text:find("every arm", 1, true))
  end)

  it("leaves a copy only one arm makes in its arm", function()
    local text = [[
#[version = "0.0.5"]
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, %c {virtual_device=GPU}: bool, virtual_device=GPU) -> T {
  if (%c) { on_device(add(]] .. copy("%x", CPU, GPU) .. [[, %y), virtual_device=GPU) } else { %y }
}
]]
    local moved, _, _, before, after = moved_of(text, {{x = 1, y = 2, c = true}, {x = 1, y = 2, c = false}})
    assert.are.same({1, 0}, before)
    assert.are.same({1, 0}, after)
    local s = tostring(moved)
    assert.is_true(s:find("device_copy", 1, true) > s:find("if (", 1, true), s)
  end)

  it("does not make a copy a closure makes where the closure is made: it may never be called", function()
    local text = [[
#[version = "0.0.5"]
def @main(%x {virtual_device=CPU}: T, %y {virtual_device=GPU}: T, %c {virtual_device=GPU}: bool, virtual_device=GPU) -> T {
  let %f = fn (%z {virtual_device=GPU}: T, virtual_device=GPU) -> T { on_device(add(]] .. copy("%x", CPU, GPU) .. [[, %z), virtual_device=GPU) };
  let %g = fn (%z {virtual_device=GPU}: T, virtual_device=GPU) -> T { on_device(multiply(]] .. copy("%x", CPU, GPU) .. [[, %z), virtual_device=GPU) };
  if (%c) { %f(%y) } else { %y }
}
]]
    local _, _, _, before, after = moved_of(text, {{x = 1, y = 2, c = true}, {x = 1, y = 2, c = false}})
    assert.are.same({1, 0}, before)
    assert.are.same({1, 0}, after)
  end)

  it("reaches the minimum on the known families (loops, chains of calls, branches and matches)", function()
    for _, kind in ipairs(gen.FAMILIES) do
      for seed = 1, 30 do
        local text, runs, minimum = gen.family(kind, seed)
        local failure, st = pc.check(text, runs)
        assert.is_nil(failure, failure and (kind .. " " .. seed .. ": " .. failure.property .. ": " .. failure.detail))
        assert.are.equal(0, st.skipped, kind .. " " .. seed .. " does not plan")
        local moved = dp.planner.move(dp.passes.PlanDevices(pc.CONFIG)(dp.parse(text, pc.META)), pc.CONFIG)
        for _, r in ipairs(runs) do
          assert.are.equal(minimum(r), run(moved, r).copies, kind .. " " .. seed)
        end
      end
    end
  end)
end)

describe("MoveCopies on generated programs", function()
  it("keeps values, never copies more on any run, verifies and is a fixed point (300 programs, 2 and 3 devices)", function()
    local total = {before = 0, after = 0, runs = 0, planned = 0}
    for seed = 1, 300 do
      local text, info = gen.program(seed, {devices = seed % 3 == 0 and 3 or 2})
      local failure, st = pc.check(text, info.inputs)
      assert.is_nil(failure, failure and ("seed " .. seed .. ": " .. failure.property .. ": " .. failure.detail))
      total.before = total.before + st.before
      total.after = total.after + st.after
      total.runs = total.runs + st.runs
      if st.skipped == 0 then total.planned = total.planned + 1 end
    end
    assert.is_true(total.planned >= 250, "only " .. total.planned .. " programs planned")
    assert.is_true(total.after < total.before * 0.8, total.after .. " copies after, " .. total.before .. " before")
  end)
end)

describe("MoveCopies as a pass", function()
  it("is move_copies in pipelines and --move-copies on plan, with max_new_functions", function()
    local mod = dp.parse(program(WORKED), testing.META)
    local p = dp.pipeline.build("plan_devices(default=cpu),move_copies,verify")
    local out = p(mod)
    assert.are.equal("cuda", out:get("f").virtual_device.device_type_name)
    assert.is_not_nil(dp.planner.moves(out))
    assert.has_error(function() dp.pipeline.build("move_copies(max_new_functions=0)") end)
    local path = testing.temp_file(program(WORKED), ".relay")
    local f = io.popen("bin/devplan plan " .. path .. " --default cpu --move-copies --short-devices --explain 2>&1")
    local text = f:read("a")
    f:close()
    assert.truthy(text:find("def @f(%a {virtual_device=@cuda}", 1, true), text)
    assert.truthy(text:find("MoveCopies then moved copies (2 moves", 1, true), text)
    assert.truthy(text:find("MoveCopies moved it here:", 1, true), text)
  end)

  it("checks its arguments", function()
    assert.has_error(function() dp.passes.MoveCopies("x") end,
      "devplan.passes.MoveCopies: a CompilationConfig expected, got string")
    assert.has_error(function() dp.passes.MoveCopies(config, {bogus = 1}) end,
      "devplan.passes.MoveCopies: unknown option 'bogus' (max_new_functions)")
    assert.has_error(function() dp.passes.MoveCopies(config, {max_new_functions = 0}) end)
    assert.has_error(function() dp.planner.move("x", config) end)
  end)

  it("explains a moved copy: which move brought it where it is", function()
    local moved = dp.passes.MoveCopies(config)(plan(WORKED))
    local texts = {}
    dp.visit(moved, function(e)
      if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "device_copy" then
        texts[#texts + 1] = dp.planner.why(moved, e, {config = config})
      end
    end)
    assert.are.equal(2, #texts)
    table.sort(texts)
    assert.truthy(texts[1]:find("MoveCopies moved it here:\n    the copy of", 1, true), texts[1])
    local all = table.concat(texts, "\n")
    assert.truthy(all:find("the copy of parameter %a of @f from cpu to cuda", 1, true), all)
    assert.truthy(all:find("the copy of the result of @f from cuda to cpu", 1, true), all)
  end)

  it("leaves a module without copies as it is, and works on a 100,000-deep chain", function()
    local mod = dp.parse(testing.SMALL_MODULE)
    local planned = dp.passes.PlanDevices(config)(mod)
    assert.structurally_equal(planned, (dp.planner.move(planned, config)))
    local parts = {'#[version = "0.0.5"]\ndef @main(%a {virtual_device=' .. CPU .. '}: ' .. T .. ', %c: bool) {\n'}
    local prev = "%a"
    for i = 1, os.getenv("DEVPLAN_QUICK") and 10000 or 100000 do
      parts[#parts + 1] = "  %" .. i .. " = add(" .. prev .. ", %a);\n"
      prev = "%" .. i
    end
    local x = copy(prev, CPU, GPU)
    parts[#parts + 1] = "  if (%c) { on_device(exp(" .. x .. "), virtual_device=" .. GPU .. ") } else { on_device(tanh("
      .. x .. "), virtual_device=" .. GPU .. ") }\n}\n"
    local big = dp.passes.PlanDevices(config)(dp.parse(table.concat(parts), testing.META))
    assert.are.equal(4, testing.count_calls(big, "device_copy")) -- the value to the GPU, the arms' back
    local m = dp.planner.move(big, config)
    assert.are.equal(3, testing.count_calls(m, "device_copy")) -- one copy to the GPU, before the if
  end)
end)

describe("MoveCopies under allocation failures", function()
  it("raises out of memory, leaks nothing and gives the same answer after", function()
    local planned = plan([[
#[version = "0.0.5"]
def @f(%a {virtual_device=CPU}: T, virtual_device=CPU) -> T {
  let %x = on_device(negative(%a), virtual_device=GPU);
  device_copy(%x, src_virtual_device=GPU, dst_virtual_device=CPU)
}
def @main(%n {virtual_device=GPU}: int32, %x {virtual_device=GPU}: T, %w {virtual_device=CPU}: T, %c {virtual_device=GPU}: bool, virtual_device=GPU) -> T {
  let %loop = fn (%i {virtual_device=GPU}: int32, %y {virtual_device=GPU}: T, virtual_device=GPU) -> T {
    if (less(%i, %n)) {
      %0 = on_device(multiply(%y, device_copy(%w, src_virtual_device=CPU, dst_virtual_device=GPU)), virtual_device=GPU);
      %loop(add(%i, 1), %0)
    } else { %y }
  };
  %1 = if (%c) { on_device(exp(device_copy(%w, src_virtual_device=CPU, dst_virtual_device=GPU)), virtual_device=GPU) } else { %x };
  %2 = device_copy(@f(device_copy(%1, src_virtual_device=GPU, dst_virtual_device=CPU)), src_virtual_device=CPU, dst_virtual_device=GPU);
  let %g = fn (%z {virtual_device=GPU}: T, virtual_device=GPU) -> T {
    on_device(subtract(%z, device_copy(negative(%w), src_virtual_device=CPU, dst_virtual_device=GPU)), virtual_device=GPU)
  };
  %3 = %g(%2);
  %loop(0, %g(%3))
}
]])
    local want_mod, want_moves = dp.planner.move(planned, config)
    local want = tostring(want_mod)
    local k = {}
    for _, m in ipairs(want_moves) do k[m.kind] = true end
    assert.is_true(k.captured and k.loop and k.parameter and k.result and true, want) -- every kind of move fails in turn
    -- every allocation in turn fails once: an out of memory error, or (an
    -- allocation whose failure changes nothing) the same module
    local failures = testing.fail_each_allocation(function() return dp.planner.move(planned, config) end, want)
    assert.is_true(failures > 300, failures .. " allocations")
    assert.are.equal(want, tostring((dp.planner.move(planned, config))))
  end)
end)
