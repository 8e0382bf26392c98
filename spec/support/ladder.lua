-- The depth ladder (spec/depth_ladder_spec.lua, bench/ladder.lua): programs
-- nested n deep in five shapes, and every pass and printer timed on them
-- at depths a decade apart. Processing must stay linear in the input
-- (n log n at most): a step of 10x in depth may cost about 12x in time
-- (M.STEP_BOUNDS and M.LADDER_BOUND below say how much room the checks give).
--
--   local ladder = dofile(dp.root .. "/spec/support/ladder.lua")
--   ladder.SHAPES            {name = function(n) -> module, not type-checked}
--   ladder.STEPS             {name =, run = function(input) end, input = function(typed, inputs, n) end?,
--                             untyped = true? (each run on a module just built), skip = {shape = true}?}
--   local inputs = ladder.inputs(shape)        the modules of a shape, made once
--   local why, m = ladder.check(step, shape, inputs)   nil when linear; m: the times
local dp = require "devplan"
local testing = require "devplan.testing"
local release_heap = require("devplan.core")._release_heap

local M = {}

local T = dp.type.tensor({5, 7}, "float32")
local P = testing.PALETTE
M.CONFIG = testing.config("cuda")

local function module_of(params, body)
  return dp.IRModule{functions = {{"main", dp.fn(params, body)}}}
end

-- The innermost value of each shape runs on the CPU (an on_device), the
-- rest wherever planning puts it (the GPU by default): planning has a
-- copy to insert at the bottom of the nesting.
local function cpu(e) return dp.call("on_device", {e}, {virtual_device = P.CPU}) end

M.SHAPES = {
  -- if (%c) { if (%c) { ... } else { %a } } else { %a }
  ["nested if"] = function(n)
    local a, c = dp.var("a", T), dp.var("c", dp.type.scalar("bool"))
    local e = cpu(dp.call("negative", {a}))
    for _ = 1, n do e = dp.if_(c, e, a) end
    return module_of({a, c}, e)
  end,
  -- ((((negative(%a),),),),)
  ["nested tuples"] = function(n)
    local a = dp.var("a", T)
    local e = cpu(dp.call("negative", {a}))
    for _ = 1, n do e = dp.tuple{e} end
    return module_of({a}, e)
  end,
  -- negative(negative(... add(%a, %a)))
  ["nested calls"] = function(n)
    local a = dp.var("a", T)
    local e = cpu(dp.call("add", {a, a}))
    for _ = 1, n do e = dp.call("negative", {e}) end
    return module_of({a}, e)
  end,
  -- let %x1 = negative(%a); let %x2 = negative(%x1); ... %xn
  ["lets"] = function(n)
    local a = dp.var("a", T)
    local vars = {}
    for i = 1, n do vars[i] = dp.var("x" .. i, T) end
    local e = vars[n]
    for i = n, 1, -1 do
      local value = dp.call("negative", {i == 1 and cpu(a) or vars[i - 1]})
      e = dp.let(vars[i], value, e)
    end
    return module_of({a}, e)
  end,
  -- (fn (%x1) { (fn (%x2) { ... add(%xn, %a) })(negative(%x1)) })(%a): closures
  -- nested n deep, the innermost capturing %a
  ["closures"] = function(n)
    local a = dp.var("a", T)
    local xs = {}
    for i = 1, n do xs[i] = dp.var("x" .. i, T) end
    local e = cpu(dp.call("add", {xs[n], a}))
    for i = n, 1, -1 do
      local arg = i == 1 and a or dp.call("negative", {xs[i - 1]})
      e = dp.call(dp.fn({xs[i]}, e), {arg})
    end
    return module_of({a}, e)
  end,
  -- (fn (%x1) { add(%x1, (fn (%x2) { add(%x2, ... negative(%a)) })(%a)) })(%a):
  -- the API fuzzer's closures (fuzz/apifuzz_rt.lua, shape "fn"), each body a
  -- piece of its own for PartitionByVirtualDevice (issue 22: 100,000 deep
  -- took over 10 minutes under ASan); timed by its own test, not every step
  ["fuzzer closures"] = function(n)
    local a = dp.var("a", T)
    local e = dp.call("negative", {a})
    for i = 1, n do
      local x = dp.var("x" .. i, T)
      e = dp.call(dp.fn({x}, dp.call("add", {x, e})), {a})
    end
    return module_of({a}, e)
  end,
  -- bench/gen.lua's branchy workload: call i reads calls i - 1 and i / 2, in
  -- runs of 50 on the CPU and the GPU (a DAG whose open frontier grows with
  -- n: PartitionByVirtualDevice's restriction sets were copied per node,
  -- quadratic); timed by its own test
  ["branchy"] = function(n)
    return dp.parse(dofile(dp.root .. "/bench/gen.lua").branchy(n), testing.META)
  end,
}

M.SHAPE_ORDER = {"nested if", "nested tuples", "nested calls", "lets", "closures"}

local P_ = dp.pattern
local plan = dp.passes.PlanDevices(M.CONFIG)
-- (an input function: the planned module of the same shape and size)
local function planned(_, inputs, n) return inputs(n, "planned") end

-- What each step runs on: the module (typed), or made from it once
-- (untimed) by `input`.
M.STEPS = {
  {name = "InferType", run = dp.passes.InferType(), untyped = true},
  {name = "PlanDevices", run = plan},
  {name = "PlanDevices min_bytes", run = dp.passes.PlanDevices(M.CONFIG, {placement = "min_bytes"})},
  {name = "ShareCopies", run = dp.passes.ShareCopies(), input = planned},
  {name = "Verify", run = dp.passes.Verify(M.CONFIG, {planned = true}), input = planned},
  {name = "AnnotateVirtualDevices", run = dp.passes.AnnotateVirtualDevices(
     {negative = function() return P.CPU end}, {config = M.CONFIG})},
  {name = "MergeComposite", run = dp.passes.MergeComposite{
     {name = "nn", pattern = P_.op("negative")(P_.op("negative")(P_.wild()))}}},
  {name = "MergeComposite untyped", untyped = true, run = dp.passes.MergeComposite{
     {name = "nn", pattern = P_.op("negative")(P_.op("negative")(P_.wild()))}}},
  {name = "MergeAndAnnotate", run = dp.passes.MergeAndAnnotate{
     {name = "nn", pattern = P_.op("negative")(P_.op("negative")(P_.wild())), device = P.CPU}}},
  {name = "PartitionByVirtualDevice", run = dp.passes.PartitionByVirtualDevice{config = M.CONFIG},
   input = planned},
  -- groups of function patterns: a wildcard on a function literal groups
  -- its whole body, and a function pattern's body is a fuzzy match
  {name = "pattern rewrite, function patterns", run = function(mod)
     local W = P_.wild
     return P_.rewrite(mod, {{W(), function() return nil end},
                             {P_.fn({W()}, W()), function() return nil end},
                             {P_.call(P_.fn(nil, W()), {W()}), function() return nil end}}, {max_rounds = 1})
   end},
  {name = "print", run = function(mod) return tostring(mod) end},
  {name = "print types", run = function(mod) return dp.astext(mod, {types = true}) end,
   -- TVM's text gives every node its whole type: nested tuples and closures
   -- have types as deep as the nesting, so the text itself is quadratic
   skip = {["nested tuples"] = true, ["closures"] = true}},
  {name = "print short_devices", run = function(mod) return dp.astext(mod, {short_devices = true}) end,
   input = planned},
  {name = "print meta", run = function(mod) return dp.astext(mod, {meta = true}) end, input = planned},
  {name = "print names", run = function(mod) return dp.astext(mod, {names = true}) end},
  {name = "parse", run = function(text) return dp.parse(text, testing.META) end,
   input = function(mod) return tostring(mod) end,
   -- the parser reads brackets nested up to dp._parse_max_nest (50,000) levels
   skip = {["nested if"] = true, ["closures"] = true}},
  {name = "planner report", run = function(mod) return dp.planner.report(mod, M.CONFIG):text() end,
   input = planned},
  {name = "graph dot", run = function(mod) return dp.graph.dot(mod, {config = M.CONFIG}) end, input = planned},
}

-- CPU seconds of one run of f(x): runs repeated until they took 20 ms
-- together (each on a fresh input from make() when given; making it is not
-- timed), the best of `tries` such measurements (a loaded machine slows
-- some, never speeds one up). Before each run the freed heap goes back to
-- the system (not timed), so that every run starts as cold at every depth:
-- otherwise a small input's runs reused the warm heap while a large one's
-- megabytes (a printer's 53 MB of text at 100,000 deep) were mapped afresh
-- each run, and the printers' ratios measured page faults (x60-77 a step
-- on a loaded machine, where faults cost the most).
function M.seconds(f, x, tries, make)
  local best = math.huge
  for _ = 1, tries do
    collectgarbage()
    collectgarbage()
    local runs, spent = 0, 0
    repeat
      local input = make and make() or x
      release_heap()
      local t0 = os.clock()
      f(input)
      spent = spent + (os.clock() - t0)
      runs = runs + 1
    until spent >= 0.02
    best = math.min(best, spent / runs)
  end
  return best
end

M.SIZES = {1000, 10000, 100000}

-- The modules of shape at each size: {[n] = {typed =, planned =, text =}}
-- (made when first asked for).
function M.inputs(shape)
  local cache = {}
  return function(n, kind)
    cache[n] = cache[n] or {}
    local c = cache[n]
    if not c.typed then c.typed = dp.infer_type(M.SHAPES[shape](n)) end
    if kind == "planned" and not c.planned then c.planned = plan(c.typed) end
    return c[kind or "typed"]
  end
end

-- Times of step on shape at each size: {t = {[n] = seconds}}. With m
-- (an earlier measurement), the minima of both, so that measuring again
-- can only lower them.
function M.measure(step, shape, inputs, m)
  local t = m and m.t or {}
  for _, n in ipairs(M.SIZES) do
    local typed = inputs(n)
    local x = step.input and step.input(typed, inputs, n) or typed
    local make = step.untyped and function() return M.SHAPES[shape](n) end or nil
    local tries = n >= 100000 and 1 or 3
    t[n] = math.min(t[n] or math.huge, M.seconds(step.run, x, tries, make))
  end
  return {t = t}
end

-- The bounds. A step of 10x in depth should cost 12x (linear, or n log n).
-- What they allow on top is the memory hierarchy's toll, measured on this
-- 2-core machine under load (bench/ladder.lua): a 1,000-deep input and what
-- a pass makes of it fit in the caches, a 100,000-deep one does not, so a
-- linear pass costs more per node as the depth grows; its ratios measured
-- up to 41x for one step (mostly where the caches run out: from 1,000 to
-- 10,000 for passes, 10,000 to 100,000 for the printers' megabytes of text)
-- and up to 500x for both; at load 10 (2026-11-29: four jobs on the two
-- cores) up to 53x a step (InferType of a typed module: microseconds at
-- 10,000 deep) and 622x both. Hence: at most 60x a step, 900x both steps
-- (12^2 = 144, with the same toll). A quadratic pass costs 100x a step
-- (times the toll) and 10,000x both.
M.STEP_BOUNDS = {60, 60} -- the first step, the second
M.LADDER_BOUND = 900

-- nil when the ladder stays in its bounds, else why not.
function M.verdict(m)
  local t, sizes = m.t, M.SIZES
  for i = 1, #sizes - 1 do
    local n = sizes[i]
    local r, bound = t[10 * n] / t[n], M.STEP_BOUNDS[i]
    if r > bound then
      return ("depth %d -> %d: %.5f s -> %.5f s (x%.1f, over x%d)"):format(n, 10 * n, t[n], t[10 * n], r, bound)
    end
  end
  local first, last = sizes[1], sizes[#sizes]
  local r = t[last] / t[first]
  if r > M.LADDER_BOUND then
    return ("depth %d -> %d: %.5f s -> %.5f s (x%.1f, over x%d)"):format(first, last, t[first], t[last], r,
      M.LADDER_BOUND)
  end
end

-- Patterns nested n deep, printed and matched: {name =, make = function(n)
-- -> pattern, run = function(p, e) end} on the nested calls of depth n.
M.PATTERN_STEPS = {
  {name = "pattern print (nested calls)", make = function(n)
     local p = P_.wild()
     for _ = 1, n do p = P_.op("negative")(p) end
     return p
   end, run = function(p) return tostring(p) end},
  {name = "pattern print (alternatives)", make = function(n)
     local p = P_.wild()
     for _ = 1, n do p = P_.op("negative")(P_.wild()) + p end
     return p
   end, run = function(p) return tostring(p) end},
  {name = "pattern compile and match", make = function(n)
     local p = P_.wild()
     for _ = 1, n do p = P_.op("negative")(p) end
     return p
   end, run = function(p, e) return dp.pattern.compile(p):match(e) end},
}

-- The ladder of a pattern step: a fresh pattern value each run (compiling
-- is remembered per value), matched against the nested calls as deep.
function M.check_pattern(step, inputs)
  local m = {t = {}}
  for _ = 1, 3 do
    for _, n in ipairs(M.SIZES) do
      local body = inputs(n):get("main").body
      local t = M.seconds(function(p) return step.run(p, body) end, nil, n >= 100000 and 1 or 3,
                          function() return step.make(n) end)
      m.t[n] = math.min(m.t[n] or math.huge, t)
    end
    if not M.verdict(m) then return nil, m end
  end
  return M.verdict(m), m
end

-- The memory a run takes: the peak resident kilobytes above what the
-- process held before it (Linux: /proc/self/clear_refs resets the peak), in
-- a fresh process (memory freed earlier would hide a run's growth).
-- `code` is a Lua chunk returning function(module) run on the typed module
-- of shape at depth n. nil when the system cannot say.
function M.peak_kb(shape, n, code)
  local f = io.open("/proc/self/clear_refs", "w")
  if not f then return nil end
  f:close()
  local script = testing.temp_file(([=[
local dp = require "devplan"
local L = dofile(dp.root .. "/spec/support/ladder.lua")
local run = load(%q)()
local function kb(field)
  for l in io.lines("/proc/self/status") do
    local v = l:match("^" .. field .. ":%%s*(%%d+)")
    if v then return tonumber(v) end
  end
end
local m = dp.infer_type(L.SHAPES[%q](%d))
collectgarbage()
collectgarbage()
local f = assert(io.open("/proc/self/clear_refs", "w"))
f:write("5")
f:close()
local before = kb("VmRSS")
local out = run(m)
print("peak_kb", kb("VmHWM") - before, out ~= nil)
]=]):format(code, shape, n), ".lua")
  local p = io.popen(testing.exe .. " " .. script .. " 2>&1")
  local text = p:read("a")
  p:close()
  local kb = text:match("peak_kb%s+(%d+)")
  assert(kb, "peak_kb: the run failed:\n" .. text)
  return tonumber(kb)
end

-- A row of numbers for the table bench/ladder.lua prints.
function M.row(m)
  local parts = {}
  for _, n in ipairs(M.SIZES) do parts[#parts + 1] = ("%9.5f"):format(m.t[n]) end
  for i = 1, #M.SIZES - 1 do
    local n = M.SIZES[i]
    parts[#parts + 1] = ("x%-5.1f"):format(m.t[10 * n] / m.t[n])
  end
  parts[#parts + 1] = ("x%-6.1f"):format(m.t[M.SIZES[#M.SIZES]] / m.t[M.SIZES[1]])
  return table.concat(parts, " ")
end

-- Checks step on shape: measured up to three times (the minima kept)
-- before a step over its bound counts. nil, or why it failed; and the
-- measurements.
function M.check(step, shape, inputs)
  local m
  for _ = 1, 3 do
    m = M.measure(step, shape, inputs, m)
    if not M.verdict(m) then return nil, m end
  end
  return M.verdict(m), m
end

return M
