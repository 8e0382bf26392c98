-- The workload the allocation failure walk runs (spec/oom_spec.lua,
-- scripts/oom.lua): parse a module with a metadata section, infer its types,
-- plan it (on_device, device_copy, global functions, closures, let, if,
-- match), print it, verify it, MergeComposite, explain. run() returns one
-- string that sums up every result, so a run after failures can be compared
-- with a clean one (the state stayed usable and gives the same answers).
local dp = require "devplan"
local t = require "devplan.testing"
local P = dp.pattern

local M = {}

-- TVM's printing of a module with a #[metadata] section (a constant and a
-- virtual device as JSON).
M.META_TEXT = t.read_file("spec/data/tvm_meta_cuda.relay")

M.TEXT = [[
#[version = "0.0.5"]
type List[A] { Cons(A, List[A]), Nil }
def @f(%a: Tensor[(2, 2), float32], %b: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {
  %0 = add(%a, meta[relay.Constant][0]);
  %1 = nn.relu(%0);
  %2 = on_device(%1, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  subtract(%2, %b)
}
def @main(%x: Tensor[(2, 2), float32], %y: Tensor[(2, 2), float32], %c: bool) -> Tensor[(2, 2), float32] {
  let %g = fn (%p: Tensor[(2, 2), float32]) { negative(%p) };
  %3 = @f(%x, %y);
  %4 = device_copy(%3, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]);
  %5 = Cons(%4, Nil);
  %6 = match (%5) {
    Cons(%h, _) => %h,
    Nil => %4
  };
  %7 = if (%c) { %g(%6) } else { exp(%6) };
  let %t = (%7, %7);
  %8 = add(%t.0, %t.1);
  %9 = on_device(negative(%8), virtual_device=meta[VirtualDevice][0]);
  multiply(%8, %9)
}
]]

local add_relu = P.op("nn.relu")(P.op("add")(P.wild(), P.wild()))

-- The first call of operator `name` in mod (nil: the first call of anything).
local function first_call(mod, name)
  local found
  dp.visit(mod, function(e)
    if not found and e.kind == "call" and (not name or e.callee.kind == "op" and e.callee.name == name) then
      found = e
    end
  end)
  return found
end

-- Inputs that must fail: the error's text is part of the result, so an
-- allocation that fails while the message is made shows as a difference.
-- nested function literals capturing a parameter, and one capturing
-- nothing: the groups of function patterns (the post-dominators, closed
-- roots, fuzzy bodies)
M.CLOSURES = [[
#[version = "0.0.5"]
def @main(%a: Tensor[(2, 2), float32]) {
  %0 = fn (%x1: Tensor[(2, 2), float32]) { %1 = fn (%x2: Tensor[(2, 2), float32]) { add(%x2, %a) }; %1(%x1) };
  %2 = fn (%y: Tensor[(2, 2), float32]) { negative(%y) };
  %3 = %0(%a);
  (%2(%3), negative(%a))
}
]]

M.BAD = {
  conflict = [[
#[version = "0.0.5"]
def @main(%x: Tensor[(2, 2), float32]) {
  %0 = on_device(%x, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %1 = on_device(%x, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  add(%0, %1)
}
]],
  syntax = "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(2, 2), float32]) {\n  add(%x, %x\n}\n",
  type = "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(2, 2), float32], %y: Tensor[(3), float32]) {\n  add(%x, %y)\n}\n",
}

-- What f(...) raises: an out-of-memory error is raised again (it is what
-- the walk expects); of any other error, its code and position. When f
-- returns, "no error" and f's result. (Its
-- message may lose detail when memory runs out while it is being made: a
-- type printed "?", a path of notes cut short.)
local function error_text(f, ...)
  local ok, err = pcall(f, ...)
  if ok then return "no error", err end
  if M.is_oom(err) then error(err, 0) end
  if not dp.is_error(err) then return "not a devplan.Error: " .. tostring(err) end
  return ("%s error at %s:%s"):format(err.code, tostring(err.line), tostring(err.col))
end

function M.run()
  local config = t.config()
  local meta = { VirtualDevice = t.META.VirtualDevice, ["relay.Constant"] = { dp.const(t.filled({2, 2}, 1.5)) } }
  local mod = dp.parse(M.TEXT, meta)
  local planned = dp.planner.plan(mod, config)
  local strict = dp.passes.PlanDevices(config, { resolve_conflicts = false })(mod)
  local from_json = dp.planner.plan(dp.parse(M.META_TEXT), config)
  local out = { tostring(mod), tostring(planned), tostring(from_json),
                dp.astext(planned, { types = true, spans = true }), tostring(dp.structural_equal(planned, strict)) }
  out[#out + 1] = tostring(#dp.planner.verify(planned, config, { input = mod, raise = false }))
  out[#out + 1] = tostring(dp.passes.MergeComposite{{name = "add_relu", pattern = add_relu}}(mod))
  out[#out + 1] = tostring(dp.passes.PartitionByVirtualDevice{ config = config }(from_json))
  out[#out + 1] = tostring(#add_relu:find(mod))
  local ex = dp.planner.explain(mod, first_call(mod, "negative"), config)
  out[#out + 1] = tostring(ex.device) .. " " .. tostring(ex.rule) .. " " .. tostring(ex.reason)
  out[#out + 1] = error_text(dp.planner.plan, dp.parse(M.BAD.conflict, t.META), config)
  out[#out + 1] = error_text(dp.parse, M.BAD.syntax)
  out[#out + 1] = error_text(dp.parse, M.BAD.type)
  return table.concat(out, "\n----\n")
end

-- Whether err is what a failed allocation may give: devplan's "out of
-- memory" error, or Lua's own memory error where Lua allocates.
function M.is_oom(err)
  if dp.is_error(err) then return err.code == "memory" and err.message:find("out of memory", 1, true) ~= nil end
  return type(err) == "string" and err:find("not enough memory", 1, true) ~= nil
end

-- More of the library: placement by cost, AnnotateVirtualDevices with a Lua
-- rule, an operator registered with a Lua type relation (once per state),
-- dp.rewrite with a callback, printing with a metadata section, targets,
-- pattern rewriting, the report, the domains API, the placement solver.
local registered
function M.run_more()
  local config = t.config()
  if not registered then
    dp.op.register("oom_test.twice", { num_inputs = 1, attrs = { { name = "scale", kind = "int", default = 2 } },
      type_rel = function(args) return args[1] end, pattern = "elemwise" })
    registered = true
  end
  local mod = dp.parse(M.TEXT, { VirtualDevice = t.META.VirtualDevice, ["relay.Constant"] = { dp.const(t.filled({2, 2}, 2)) } })
  local out = {}
  out[#out + 1] = tostring(dp.planner.plan_with(mod, config, { placement = "min_bytes" }))
  local annotated = dp.passes.AnnotateVirtualDevices({
    exp = function() return { t.META.VirtualDevice[2] or t.META.VirtualDevice[1], t.META.VirtualDevice[1] } end,
  }, { config = config })(mod)
  out[#out + 1] = tostring(dp.planner.plan(annotated, config))
  local x = dp.var("x", dp.type.tensor({2, 2}, "float32"))
  local e = dp.call(dp.op.get("oom_test.twice"), { dp.call(dp.op.get("negative"), { x }) }, { scale = 3 })
  local fn = dp.fn({ x }, e)
  local typed = dp.infer_type(dp.IRModule{ functions = { { "main", fn } } })
  out[#out + 1] = tostring(typed)
  out[#out + 1] = tostring(dp.rewrite(typed, { call = function(rebuilt)
    if rebuilt.callee.kind == "op" and rebuilt.callee.name == "negative" then return dp.call(dp.op.get("exp"), rebuilt.args) end
  end }))
  out[#out + 1] = dp.astext(dp.parse(M.META_TEXT), { meta = true })
  out[#out + 1] = tostring(dp.Target("cuda -arch=sm_80 -max_num_threads=512")) .. " "
    .. tostring(dp.Target({ kind = "llvm", mcpu = "skylake", host = "llvm" }))
  out[#out + 1] = tostring(dp.CompilationConfig{ targets = { "llvm", "cuda" } })
  local timed = dp.CompilationConfig{ targets = { "llvm", "cuda" }, default_device_type = "cuda",
                                      bandwidth = { ["cpu->cuda"] = 1e9, ["*->cpu"] = 2e9, default = 5e9 } }
  out[#out + 1] = tostring(timed) .. "\n" .. tostring(dp.planner.plan_with(mod, timed, { placement = "min_bytes" }))
  out[#out + 1] = tostring(dp.pattern.rewrite(mod, { { add_relu, function(_, rebuilt) return dp.call(dp.op.get("nn.relu"), { rebuilt.args[1] }) end } }))
  local closures = dp.parse(M.CLOSURES)
  for _, p in ipairs({ P.wild(), P.fn({ P.wild() }, P.wild()), P.call(P.fn(nil, P.wild()), { P.wild() }),
                       P.dominates(P.call(P.wild(), nil), P.wild(), P.wild()) }) do
    local groups = 0
    dp.pattern.rewrite(closures, { { p, function() groups = groups + 1 end } }, { once = true })
    out[#out + 1] = tostring(p) .. ": " .. groups .. " groups, " .. #p:find(closures) .. " matches"
  end
  out[#out + 1] = dp.planner.report(dp.planner.plan(mod, config), config):text()
  local d = dp.planner.domains(mod, config)
  local neg = first_call(mod, "negative")
  out[#out + 1] = tostring(d:lookup(neg)) .. " " .. tostring(d:fully_constrained(neg)) .. " " .. d:explain(neg).text
  local vds = dp.planner.virtual_devices(mod, config)
  out[#out + 1] = tostring(vds[neg])
  local labels, cost = dp.planner.solve_placement{ labels = 3, vars = 5, fixed = { [1] = 1, [5] = 3 },
    nets = { { from = 1, to = { 2, 3 }, weight = 100 }, { from = 2, to = { 4 }, weight = 10 },
             { from = 3, to = { 4 }, weight = 20 }, { from = 4, to = { 5 }, weight = 50 } } }
  out[#out + 1] = table.concat(labels, ",") .. " " .. cost
  local ex = dp.parse_expr("free_var %z: int8; fn (%a: Tensor[(3), float32]) { let %b = (%a, %z); %b.0 }")
  out[#out + 1] = tostring(ex) .. " " .. #dp.free_vars(ex) .. " " .. #dp.children(ex)
    .. " " .. tostring(dp.parse_type("(Tensor[(2, ?), int8], fn (float32) -> bool)"))
  return table.concat(out, "\n----\n")
end

-- A workload for any module text (a model of ../shared/models): parse,
-- plan (default and strict), print, verify, explain the first call. A text
-- without a metadata section gets the conformance palette (testing.META).
function M.text_workload(text, config)
  return function()
    config = config or t.config()
    local mod = dp.parse(text, not text:find("#[metadata]", 1, true) and t.META or nil)
    local planned = dp.planner.plan(mod, config)
    local strict = dp.passes.PlanDevices(config, { resolve_conflicts = false })(mod)
    local out = { tostring(planned), tostring(dp.structural_equal(planned, strict)),
                  tostring(#dp.planner.verify(planned, config, { input = mod, raise = false })) }
    local call = first_call(mod)
    if call then out[#out + 1] = tostring(dp.planner.explain(mod, call, config).device) end
    return table.concat(out, "\n----\n")
  end
end

-- A workload for a conformance case of ../shared/conformance/cases (a
-- table with input, expected, devices, targets, ...): parse and plan, or
-- the code of the error planning gives.
function M.case_workload(case)
  return function()
    local meta, cfg = t.metatable_for(case), t.config(case.default_device_type, case.targets)
    local mod = dp.parse(case.input, meta)
    local outcome, planned = error_text(dp.planner.plan, mod, cfg)
    return tostring(mod) .. "\n----\n" .. outcome .. "\n" .. tostring(planned)
  end
end

-- How many allocations run() makes (the walk's upper end).
function M.count(run)
  run = run or M.run
  dp.debug.fail_alloc(math.maxinteger)
  local ok, err = pcall(run)
  local n = dp.debug.alloc_count()
  dp.debug.fail_alloc(0)
  if not ok then error(err, 0) end
  return n
end

-- Walks n = from, from + step, ... up to `to` (default: the count + 1),
-- making the n-th allocation of a run of opts.run (default M.run) fail (and
-- every later one when `persistent`). Each run must succeed with the clean
-- result or raise an out-of-memory error, and a clean run after it must
-- give the clean result again. Returns the list of problems (text) and the
-- number of runs.
function M.walk(opts)
  opts = opts or {}
  local run = opts.run or M.run
  local reference = run()
  local to = opts.to or M.count(run) + 1
  local problems, runs = {}, 0
  local function problem(n, what) problems[#problems + 1] = ("n=%d: %s"):format(n, what) end
  for n = opts.from or 1, to, opts.step or 1 do
    if opts.progress then opts.progress(n, to) end
    dp.debug.fail_alloc(n, opts.persistent)
    local ok, got = pcall(run)
    dp.debug.fail_alloc(0)
    runs = runs + 1
    if ok and got ~= reference then problem(n, "succeeded with a different result")
    elseif not ok and not M.is_oom(got) then problem(n, "not an out-of-memory error: " .. tostring(got))
    end
    collectgarbage()
    local again_ok, again = pcall(run)
    if not again_ok then problem(n, "the clean run after it failed: " .. tostring(again))
    elseif again ~= reference then problem(n, "the clean run after it gave a different result")
    end
  end
  return problems, runs
end

return M
