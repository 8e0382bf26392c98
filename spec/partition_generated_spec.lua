-- PartitionByVirtualDevice on generated planned programs: the partitioned
-- module verifies (dp.planner.verify, scopes included), type-checks,
-- prints text that re-parses to the same text, and computes the same
-- values as the planned one (devplan.evaluate). Two sources:
-- fuzz/relaygen.lua's programs (all of Relay), and programs made here of
-- let chains, closures called in lets, closures with operators inside and
-- annotations on two devices (the shapes where a piece's call could land
-- outside the scope of a let it reads).
local dp = require "devplan"
local t = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local props = require "props"
local evaluate = require("devplan.evaluate").run

local QUICK = os.getenv("DEVPLAN_QUICK") ~= nil

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- Arguments for @main's parameters: tensors a number, booleans both ways.
local function arguments(mod, salt)
  local args = {}
  for i, p in ipairs(mod:get("main").params) do
    local ty = p.checked_type
    if ty.kind == "tensor" and #ty.shape == 0 and ty.dtype == "bool" then args[p.name] = (salt + i) % 2 == 0
    elseif ty.kind == "tensor" then args[p.name] = (salt * 131 + i * 17) % 997
    elseif ty.kind == "adt" then args[p.name] = {ctor = "Cons", fields = {salt % 7, {ctor = "Nil", fields = {}}}}
    end
  end
  return args
end

-- The properties; returns a description of the first that fails, or nil.
-- stats counts what was checked.
local function check(planned, cfg, stats)
  local ok, parted = pcall(dp.passes.PartitionByVirtualDevice{config = cfg}, planned)
  if not ok then return "partition: " .. tostring(parted) end
  stats.partitioned = stats.partitioned + 1
  if #parted:functions() > #planned:functions() then stats.hoisted = stats.hoisted + 1 end
  local violations, n = dp.planner.verify(parted, cfg)
  if n > 0 then return "verify: " .. violations[1].message end
  local made = dp.astext(parted, {types = true}) -- the types given while partitioning
  local typed, err = pcall(dp.infer_type, parted)
  if not typed then return "type: " .. tostring(err) end
  if dp.astext(parted, {types = true}) ~= made then return "types other than inference's" end
  local text = tostring(parted)
  local reparsed, again = pcall(dp.parse, text)
  if not reparsed then return "re-parse: " .. tostring(again) end
  if tostring(again) ~= text then return "re-parse prints other text" end
  for salt = 1, 2 do
    local args = arguments(planned, salt)
    local fine, want = pcall(evaluate, planned, args)
    local got_ok, got = pcall(evaluate, parted, args)
    if fine then
      if not got_ok then return "evaluation of the partitioned module: " .. tostring(got) end
      if type(want) ~= "function" and not same(want, got) then return "different values" end
      stats.evaluated = stats.evaluated + 1
    elseif not tostring(want):find("^unsupported") then
      -- a program that fails when run (an incomplete match) fails the same way
      if got_ok or tostring(got) ~= tostring(want) then return "evaluation: " .. tostring(want) .. " / " .. tostring(got) end
    end
  end
  return nil
end

-- ---------------------------------------------------------------- programs made here

local T = "Tensor[(5, 7), float32]"
local DEVICES = {"meta[VirtualDevice][0]", "meta[VirtualDevice][1]"}

-- One program of lets over %a, %b (tensors) and %c (a bool): values are
-- operator chains, calls of closures bound earlier, closures whose bodies
-- hold operators, ifs, and on_device of either device around any of them.
local function let_program(seed)
  local r = gen.rng(seed)
  local vars, fns, lines, n = {"%a", "%b"}, {}, {}, 0
  local inside = false -- in a closure: no annotations (its callers decide)
  local function pick(list) return list[r:below(#list) + 1] end
  local function annotate(e)
    if not inside and r:chance(0.25) then
      local flavour = pick{"", ", constrain_result=True"}
      return ("on_device(%s, virtual_device=%s%s)"):format(e, pick(DEVICES), flavour)
    end
    return e
  end
  local function expr(depth, scope)
    local k = depth <= 0 and 0 or r:below(6)
    if k <= 1 then return pick(scope) end
    if k == 2 then return annotate(("%s(%s)"):format(pick{"negative", "exp", "nn.relu"}, expr(depth - 1, scope))) end
    if k == 3 or #fns == 0 then
      return annotate(("%s(%s, %s)"):format(pick{"add", "subtract", "multiply"}, expr(depth - 1, scope),
        expr(depth - 1, scope)))
    end
    if k == 4 then return annotate(("%s(%s)"):format(pick(fns), expr(depth - 1, scope))) end
    return ("if (%%c) { %s } else { %s }"):format(expr(depth - 1, scope), expr(depth - 1, scope))
  end
  for _ = 1, 3 + r:below(6) do
    n = n + 1
    if r:chance(0.3) then
      local q = "%q" .. n
      local inner = {q}
      for _, v in ipairs(vars) do inner[#inner + 1] = v end
      -- a closure: a chain of lets of its own, or one expression
      inside = true
      local body = expr(2, inner)
      if r:chance(0.5) then
        body = ("let %%w%d = %s; %s"):format(n, expr(2, inner), expr(2, {("%%w%d"):format(n), q, pick(vars)}))
      end
      inside = false
      lines[#lines + 1] = ("  let %%f%d = fn (%s: %s) { %s };"):format(n, q, T, body)
      fns[#fns + 1] = ("%%f%d"):format(n)
    else
      lines[#lines + 1] = ("  let %%v%d = %s;"):format(n, expr(3, vars))
      vars[#vars + 1] = ("%%v%d"):format(n)
    end
  end
  local tail = ("add(%s, %s)"):format(expr(2, vars), expr(2, vars))
  return ("#[version = \"0.0.5\"]\ndef @main(%%a: %s, %%b: %s, %%c: bool) -> %s {\n%s\n  %s\n}\n")
    :format(T, T, T, table.concat(lines, "\n"), tail)
end

describe("PartitionByVirtualDevice on generated programs", function()
  it("keeps every let-bound variable in scope and the values the same (programs of lets and closures)", function()
    local cfg = t.config("cuda")
    local plan = dp.passes.PlanDevices(cfg)
    local stats = {programs = 0, planned = 0, partitioned = 0, hoisted = 0, evaluated = 0}
    for seed = 1, QUICK and 150 or 600 do
      local text = let_program(seed)
      stats.programs = stats.programs + 1
      local ok, planned = pcall(plan, dp.parse(text, t.META))
      if ok then
        stats.planned = stats.planned + 1
        local problem = check(planned, cfg, stats)
        assert(problem == nil, ("seed %d: %s\n%s"):format(seed, tostring(problem), text))
      end
    end
    -- most of them plan, and the checks ran on them
    assert.is_true(stats.planned >= stats.programs * 0.5, stats.planned .. " of " .. stats.programs .. " planned")
    assert.is_true(stats.evaluated >= stats.planned, stats.evaluated .. " evaluations")
    assert.is_true(stats.hoisted >= stats.planned * 0.9, stats.hoisted .. " hoisted something")
  end)

  it("verifies, type-checks, re-parses and computes the same on fuzz/relaygen.lua's programs", function()
    local cfg = props.CONFIG
    local plan = dp.passes.PlanDevices(cfg)
    local stats = {programs = 0, planned = 0, partitioned = 0, hoisted = 0, evaluated = 0}
    for seed = 1, QUICK and 150 or 600 do
      local text = gen.text(gen.program(seed))
      stats.programs = stats.programs + 1
      local ok, planned = pcall(plan, dp.parse(text, props.META))
      if ok then
        stats.planned = stats.planned + 1
        local problem = check(planned, cfg, stats)
        assert(problem == nil, ("seed %d: %s\n%s"):format(seed, tostring(problem), text))
      end
    end
    assert.is_true(stats.planned >= stats.programs // 4, stats.planned .. " of " .. stats.programs .. " planned")
    assert.is_true(stats.evaluated >= stats.planned // 2, stats.evaluated .. " evaluations")
  end)
end)
