-- Every conflict at once: dp.passes.PlanDevices(config, {all_conflicts = true})
-- reports every independent conflict of a module in one run (err.errors, in
-- source order, each worded as PlanDevices words it when it stops there),
-- one error per root cause, capped in the summary; `devplan plan` does so by
-- default (--first-conflict: TVM's stop at the first).
local dp = require "devplan"
local testing = require "devplan.testing"
local gen = dofile("bench/gen.lua")

local P = testing.PALETTE
local config = testing.config("cuda")
local META = {VirtualDevice = {P.CPU, P.GPU, P.CPU_SCOPE_A, P.CPU_SCOPE_B}}
local ALL = {all_conflicts = true}
local STRICT_ALL = {all_conflicts = true, resolve_conflicts = false}
local T = "Tensor[(5, 7), float32]"
local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"
local SCOPE_A, SCOPE_B = "meta[VirtualDevice][2]", "meta[VirtualDevice][3]"

local function parse(text, name) return dp.parse(text, META, {source_name = name or "m.relay"}) end

-- The error planning raises (with opts), or fails the spec when it plans.
local function plan_error(mod, opts)
  local ok, err = pcall(dp.planner.plan_with, mod, config, opts or ALL)
  assert.is_false(ok, "planned without a conflict")
  assert.equal("table", type(err), tostring(err))
  return err
end

-- PlanDevices' own error, stopping at the first conflict (TVM).
local function first_error(mod, strict)
  local ok, err
  if strict then ok, err = pcall(dp.planner.plan_with, mod, config, {resolve_conflicts = false})
  else ok, err = pcall(dp.planner.plan, mod, config) end
  return not ok and err or nil
end

local function positions(err)
  local t = {}
  for i, e in ipairs(err.errors) do t[i] = e.line .. ":" .. e.col end
  return t
end

local function in_source_order(errs)
  for i = 2, #errs do
    local a, b = errs[i - 1], errs[i]
    if a.line > b.line or (a.line == b.line and a.col > b.col) then return false end
  end
  return true
end

-- Each let binds a value annotated on the CPU that the next reads on the GPU.
local function let_pairs(pairs_, indent)
  local out = {}
  for i = 1, #pairs_ do
    local x, y, src = pairs_[i][1], pairs_[i][2], pairs_[i][3]
    out[#out + 1] = indent .. "let %" .. x .. " = on_device(negative(" .. src .. "), virtual_device=" .. CPU .. ");"
    out[#out + 1] = indent .. "let %" .. y .. " = on_device(exp(%" .. x .. "), virtual_device=" .. GPU .. ");"
  end
  return table.concat(out, "\n")
end

describe("all_conflicts", function()
  it("reports independent conflicts of a let chain, in source order, each with both constraints and its chain", function()
    local text = '#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ', %b: ' .. T .. ', %c: ' .. T .. ') {\n'
      .. let_pairs({{"x0", "y0", "%a"}, {"x1", "y1", "%b"}, {"x2", "y2", "%c"}}, "  ")
      .. "\n  (%y0, %y1, %y2)\n}\n"
    local mod = parse(text)
    for _, opts in ipairs{ALL, STRICT_ALL} do
      local err = plan_error(mod, opts)
      assert.equal("conflict", err.code)
      assert.same({"3:3", "5:3", "7:3"}, positions(err))
      for i, e in ipairs(err.errors) do
        assert.is_true(dp.is_error(e))
        assert.equal("conflict", e.code)
        assert.equal("m.relay", e.source)
        local cpu_at, gpu_at = 3 + 2 * (i - 1), 4 + 2 * (i - 1)
        assert.truthy(e.message:find("because of the annotation on_device at m.relay:" .. cpu_at .. ":13", 1, true), e.message)
        assert.truthy(e.message:find("because of the annotation on_device at m.relay:" .. gpu_at .. ":13", 1, true), e.message)
        assert.truthy(tostring(e):find("flows through an argument of exp at m.relay:" .. gpu_at .. ":23", 1, true), tostring(e))
        assert.truthy(tostring(e):find("the two meet at the binding of let at m.relay:" .. cpu_at .. ":3", 1, true), tostring(e))
      end
      -- the summary: where the first is, how many, the first's message, the others as notes
      assert.equal(3, err.line)
      assert.equal(3, err.col)
      assert.equal("3 conflicts: " .. err.errors[1].message, err.message)
      assert.truthy(tostring(err):find("\n  5:3: " .. err.errors[2].message, 1, true), tostring(err))
      assert.truthy(tostring(err):find("\n  7:3: " .. err.errors[3].message, 1, true), tostring(err))
    end
    -- PlanDevices alone stops at the first it meets (here the innermost let), worded the same
    local first = first_error(mod)
    assert.equal("7:3", first.line .. ":" .. first.col)
    assert.equal(tostring(first), tostring(plan_error(mod).errors[3]))
  end)

  it("reports conflicts across functions, in source order", function()
    local text = '#[version = "0.0.5"]\n'
      .. "def @f(%p: " .. T .. ") {\n" .. let_pairs({{"x", "y", "%p"}}, "  ") .. "\n  %y\n}\n"
      .. "def @main(%a: " .. T .. ", %b: " .. T .. ") {\n" .. let_pairs({{"u", "v", "%a"}}, "  ")
      .. "\n  %0 = @f(%b);\n  (%v, %0)\n}\n"
    local err = plan_error(parse(text))
    assert.same({"3:3", "8:3"}, positions(err))
    -- whatever order the functions come in
    local swapped = text:gsub("(def @f.-\n}\n)(def @main.*)$", "%2%1")
    assert.are_not.equal(text, swapped)
    err = plan_error(parse(swapped))
    assert.same({"3:3", "9:3"}, positions(err))
  end)

  it("reports conflicts inside both branches of an if and every clause of a match", function()
    local text = '#[version = "0.0.5"]\n'
      .. "type List[A] { Cons(A, List[A]), Nil }\n"
      .. "def @main(%a: " .. T .. ", %b: " .. T .. ", %d: " .. T .. ", %e: " .. T .. ", %c: bool, %l: List["
      .. T .. "]) {\n"
      .. "  %0 = if (%c) {\n" .. let_pairs({{"x", "y", "%a"}}, "    ") .. "\n    %y\n  } else {\n"
      .. let_pairs({{"u", "v", "%b"}}, "    ") .. "\n    %v\n  };\n"
      .. "  %1 = match (%l) {\n"
      .. "    Cons(_, _) => {\n" .. let_pairs({{"m", "n", "%d"}}, "      ") .. "\n      %n\n    },\n"
      .. "    Nil => {\n" .. let_pairs({{"s", "t", "%e"}}, "      ") .. "\n      %t\n    },\n"
      .. "  };\n  (%0, %1)\n}\n"
    local mod = parse(text)
    local err = plan_error(mod)
    assert.same({"5:5", "9:5", "15:7", "20:7"}, positions(err))
    assert.truthy(in_source_order(err.errors))
  end)

  it("keeps the two sides of a conflict apart: each side's own later conflicts are found", function()
    local text = '#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ', %b: ' .. T .. ') {\n'
      .. "  %0 = on_device(negative(%a), virtual_device=" .. CPU .. ", constrain_result=True);\n"
      .. "  %1 = on_device(exp(%b), virtual_device=" .. GPU .. ", constrain_result=True);\n"
      .. "  %2 = add(%0, %1);\n"                                                   -- CPU meets GPU
      .. "  %3 = on_device(%2, virtual_device=" .. SCOPE_A .. ", constrain_result=True);\n" -- refines the CPU side
      .. "  %4 = on_device(%0, virtual_device=" .. SCOPE_B .. ", constrain_result=True);\n" -- scopeA meets scopeB
      .. "  (%3, %4)\n}\n"
    local err = plan_error(parse(text))
    assert.same({"5:8", "7:8"}, positions(err))
    assert.truthy(err.errors[1].message:find("on cpu because", 1, true), err.errors[1].message)
    assert.truthy(err.errors[1].message:find("on cuda because", 1, true), err.errors[1].message)
    assert.truthy(err.errors[2].message:find('"scopeA"', 1, true), err.errors[2].message)
    assert.truthy(err.errors[2].message:find('"scopeB"', 1, true), err.errors[2].message)
  end)

  it("reports one root cause once, however often the two sides meet again", function()
    local text = '#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ', %b: ' .. T .. ', %c: bool) {\n'
      .. "  %0 = on_device(negative(%a), virtual_device=" .. CPU .. ", constrain_result=True);\n"
      .. "  %1 = on_device(exp(%b), virtual_device=" .. GPU .. ", constrain_result=True);\n"
      .. "  %2 = add(%0, %1);\n"
      .. "  %3 = multiply(%0, %1);\n"
      .. "  %4 = if (%c) { %0 } else { %1 };\n"
      .. "  %5 = subtract(%1, %3);\n"
      .. "  %6 = (%0, %1);\n"
      .. "  (%2, %3, %4, %5, %6)\n}\n"
    local mod = parse(text)
    local err = plan_error(mod)
    assert.same({"5:8"}, positions(err))
    -- one conflict: the error is PlanDevices' own, word for word
    assert.equal(tostring(first_error(mod)), tostring(err))
    assert.equal(tostring(err.errors[1]), tostring(err))
  end)

  it("reports two groups that meet at several places once: had they been one, none would conflict", function()
    -- %a's group is on the CPU (both negatives read it), the tuple's on the GPU (every exp)
    local text = '#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ') {\n'
      .. let_pairs({{"x0", "y0", "%a"}, {"x1", "y1", "%a"}}, "  ") .. "\n  (%y0, %y1)\n}\n"
    local mod = parse(text)
    local err = plan_error(mod)
    assert.same({"5:3"}, positions(err)) -- the one PlanDevices stops at
    assert.equal(tostring(first_error(mod)), tostring(err))
    -- apart, they are two
    text = text:gsub("%(%%y0, %%y1%)", "%%y1")
    assert.same({"3:3", "5:3"}, positions(plan_error(parse(text))))
  end)

  it("caps the summary with \"and N more\" and lists every conflict in err.errors", function()
    local mod = parse(gen.conflicts(25), "c.relay")
    local err = plan_error(mod)
    assert.equal(25, #err.errors)
    assert.truthy(err.message:find("^25 conflicts: conflicting virtual devices"), err.message)
    local s = tostring(err)
    assert.truthy(s:find("\n  and 5 more$"), s)
    local notes = 0
    for _ in s:gmatch("\n  %d+:%d+: conflicting virtual devices") do notes = notes + 1 end
    assert.equal(19, notes) -- the first in the message, 19 more shown
    assert.truthy(in_source_order(err.errors))
  end)

  it("reports 200 independent conflicts in one run", function()
    local text = gen.conflicts(200)
    local mod = parse(text, "c.relay")
    for _, opts in ipairs{ALL, STRICT_ALL} do
      local err = plan_error(mod, opts)
      assert.equal(200, #err.errors)
      assert.truthy(err.message:find("^200 conflicts: "), err.message)
      local seen = {}
      for i, e in ipairs(err.errors) do
        assert.equal(3 + 2 * (i - 1), e.line) -- the i-th CPU let, in order
        assert.is_nil(seen[e.line])
        seen[e.line] = true
      end
    end
  end)

  it("plans a module without conflicts exactly as without the option", function()
    for _, text in ipairs{gen.chain(40), gen.let(40), gen.branchy(120)} do
      local mod = parse(text)
      assert.equal(tostring(dp.planner.plan(mod, config)), tostring(dp.planner.plan_with(mod, config, ALL)))
      dp.assert_structural_equal(dp.planner.plan(mod, config), testing.plan(config, ALL)(mod))
    end
  end)

  it("is plan_devices(all_conflicts=true) in a pipeline", function()
    local mod = parse(gen.conflicts(4))
    local p = dp.pipeline.build("plan_devices(all_conflicts=true)", {config = config})
    local ok, err = pcall(p, mod)
    assert.is_false(ok)
    assert.equal(4, #err.errors)
    ok, err = pcall(dp.pipeline.build("plan_devices", {config = config}), mod)
    assert.is_false(ok)
    assert.is_nil(err.errors)
    assert.has_error(function() dp.pipeline.build("plan_devices(all_conflicts=yes)", {config = config}) end)
  end)

  it("leaves the module and the state usable, and checks the option", function()
    local mod = parse(gen.conflicts(3))
    local before = tostring(mod)
    for _ = 1, 3 do plan_error(mod) end
    assert.equal(before, tostring(mod))
    assert.has_error(function() dp.passes.PlanDevices(config, {all_conflicts = 1}) end,
      "devplan.passes.PlanDevices: option 'all_conflicts' must be a boolean, got number")
    local err = select(2, pcall(dp.passes.PlanDevices(config, ALL), mod))
    assert.equal(3, #err.errors)
    assert.truthy(tostring(err):find("in pass PlanDevices(all_conflicts=true)", 1, true), tostring(err))
  end)
end)

-- Generated programs: whatever conflicts PlanDevices meets first, all_conflicts
-- lists it word for word, the list is in source order and never names the
-- same error twice.
describe("all_conflicts on generated programs", function()
  package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
  local relaygen = require "relaygen"
  local props = require "props"

  local function check(mod, strict, what)
    local first = first_error(mod, strict)
    local ok, err = pcall(dp.planner.plan_with, mod, props.CONFIG,
                          {all_conflicts = true, resolve_conflicts = not strict})
    if not first then
      assert.is_true(ok, what .. ": planned only without all_conflicts: " .. tostring(err))
      return 0
    end
    if first.code ~= "conflict" then
      assert.is_false(ok, what)
      assert.equal(first.code, err.code, what)
      return 0
    end
    assert.is_false(ok, what)
    assert.equal("conflict", err.code, what)
    assert.truthy(#err.errors >= 1, what)
    assert.truthy(in_source_order(err.errors), what)
    local found, texts = false, {}
    for _, e in ipairs(err.errors) do
      local s = tostring(e)
      assert.is_nil(texts[s], what .. ": twice: " .. s)
      texts[s] = true
      if s == tostring(first) then found = true end
    end
    assert.is_true(found, what .. ": the first conflict is missing: " .. tostring(first) .. "\nin:\n" .. tostring(err))
    if #err.errors == 1 then assert.equal(tostring(first), tostring(err), what) end
    return #err.errors
  end

  it("agree with PlanDevices stopping at the first (relaygen programs)", function()
    local n = os.getenv("DEVPLAN_QUICK") and 60 or 300
    local conflicted, several = 0, 0
    for seed = 1, n do
      local text = relaygen.text(relaygen.program(seed))
      local okp, mod = pcall(dp.parse, text, props.META, {source_name = "g" .. seed .. ".relay"})
      if okp then
        for _, strict in ipairs{false, true} do
          local k = check(mod, strict, "seed " .. seed .. (strict and " strict" or ""))
          if k > 0 then conflicted = conflicted + 1 end
          if k > 1 then several = several + 1 end
        end
      end
    end
    -- the generator makes conflicts often, several in one program often too
    assert.is_true(conflicted > n / 4, conflicted .. " conflicting of " .. n)
    assert.is_true(several > n / 8, several .. " with several of " .. n)
  end)

  it("agree on the benchmark shapes with conflicts injected", function()
    -- branchy-naive is a conflict everywhere its two halves meet, strictly
    local naive = dp.parse(gen["branchy-naive"](400), testing.META)
    assert.is_true(check(naive, true, "branchy-naive") >= 1)
    -- chains and lets with a GPU annotation injected among their CPU ones
    for _, name in ipairs{"chain", "let"} do
      local text = gen[name](60)
      local k = 0
      text = text:gsub("on_device%((.-)virtual_device=meta%[VirtualDevice%]%[0%]%)", function(body)
        k = k + 1
        if k % 2 == 0 then return "on_device(" .. body .. "virtual_device=meta[VirtualDevice][1])" end
      end)
      local mod = dp.parse(text, testing.META)
      assert.equal(6, k)
      -- (phase 0b copies the chain's values where the annotations disagree)
      for _, strict in ipairs(name == "let" and {false, true} or {true}) do
        assert.equal(3, check(mod, strict, name .. (strict and " strict" or "")), name)
      end
    end
  end)
end)

-- `devplan plan` reports every conflict by default, as a compiler prints
-- errors; --first-conflict stops at the first.
describe("devplan plan and conflicts", function()
  local proc = dofile("spec/support/proc.lua")

  local function count(s, sub)
    local n, i = 0, 1
    while true do
      local j = s:find(sub, i, true)
      if not j then return n end
      n, i = n + 1, j + 1
    end
  end

  it("prints each conflict with its line, caret and chain, then how many, with status 1", function()
    local f = testing.temp_file(gen.conflicts(3))
    local r = proc.run({"plan", f, "--target", "llvm", "--target", "cuda"})
    assert.equal(1, r.status)
    assert.equal("", r.stdout)
    assert.equal(3, count(r.stderr, ": conflicting virtual devices at the binding of let at "))
    for i, line in ipairs{3, 5, 7} do
      local head = f .. ":" .. line .. ":3: conflicting virtual devices"
      local at = r.stderr:find(head, 1, true)
      assert.truthy(at, r.stderr)
      -- the source line and a caret under the column, then the chain
      local block = r.stderr:sub(at)
      assert.truthy(block:find("^[^\n]*\n  let %%x" .. (i - 1) .. " = on_device%(negative%(%%a%)[^\n]*\n  %^\n"), block)
      assert.truthy(block:find("the two meet at the binding of let at " .. f .. ":" .. line .. ":3", 1, true), block)
    end
    assert.truthy(r.stderr:find("\n3 errors\n?$"), r.stderr)
    -- in source order
    local p3, p5, p7 = r.stderr:find(f .. ":3:3:", 1, true), r.stderr:find(f .. ":5:3:", 1, true),
                       r.stderr:find(f .. ":7:3:", 1, true)
    assert.is_true(p3 < p5 and p5 < p7)
  end)

  it("--first-conflict stops at the first PlanDevices meets, as TVM", function()
    local f = testing.temp_file(gen.conflicts(3))
    local r = proc.run({"plan", f, "--target", "llvm", "--target", "cuda", "--first-conflict"})
    assert.equal(1, r.status)
    assert.equal(1, count(r.stderr, ": conflicting virtual devices at "))
    assert.truthy(r.stderr:find("^" .. f:gsub("%p", "%%%0") .. ":7:3: conflicting virtual devices"), r.stderr)
    assert.falsy(r.stderr:find("errors", 1, true), r.stderr)
    -- TVM's behaviour: its phase 0b alone (a plain on_device read on two devices stays a conflict)
    assert.truthy(r.stderr:find("in pass PlanDevices%(resolve_conflicts=tvm%)\n?$"), r.stderr)
  end)

  it("prints one conflict as --first-conflict does, and plans a consistent module either way", function()
    local one = testing.temp_file(gen.conflicts(1))
    local a = proc.run({"plan", one, "--target", "llvm", "--target", "cuda"})
    local b = proc.run({"plan", one, "--target", "llvm", "--target", "cuda", "--first-conflict"})
    assert.equal(1, a.status)
    assert.equal(1, b.status)
    assert.equal(b.stderr:gsub("in pass PlanDevices[^\n]*", ""), (a.stderr:gsub("in pass PlanDevices[^\n]*", "")))
    local ok = testing.temp_file(gen.chain(30))
    local c = proc.run({"plan", ok, "--target", "llvm", "--target", "cuda"})
    local d = proc.run({"plan", ok, "--target", "llvm", "--target", "cuda", "--first-conflict"})
    assert.equal(0, c.status)
    assert.equal(c.stdout, d.stdout)
  end)

  it("--strict reports every value demanded on two devices", function()
    local f = testing.temp_file(gen["branchy-naive"](200))
    local r = proc.run({"plan", f, "--target", "llvm", "--target", "cuda", "--strict"})
    assert.equal(1, r.status)
    local n = tonumber(r.stderr:match("\n(%d+) errors\n?$"))
    assert.truthy(n and n >= 2, r.stderr)
    assert.equal(n, count(r.stderr, ": conflicting virtual devices at "))
  end)
end)
