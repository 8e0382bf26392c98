-- Properties that run the program: each pass that must keep what a
-- program computes is checked by evaluating the program before and after
-- it (devplan.evaluate), on generated programs (fuzz/relaygen_fn.lua, run
-- by fuzz/eval_run.lua and spec/eval_gen_spec.lua).
--
--   local eval_props = require "eval_props"       -- fuzz/ on package.path
--   local failure, outcome = eval_props.check(text, {args1, args2, ...}, seed)
--   -- failure: nil, or {property =, detail =}; outcome: what happened when none failed
--
-- Properties (the names failures carry):
--   eval-raw-error   every step gives a result or a devplan.Error, never another error
--   eval-parse       the generated text parses (the generator's own check)
--   eval-plan        PlanDevices plans it (or finds a conflict), and the plan computes the same
--   eval-share       ShareCopies of the plan computes the same, and verifies
--   eval-partition   PartitionByVirtualDevice of the plan computes the same
--   eval-merge       MergeComposite (rules chosen by the seed) computes the same,
--                    before planning and planned after it
--   eval-annotate    MergeAndAnnotate (rules with devices) then PlanDevices computes
--                    the same (or finds a conflict)
local dp = require "devplan"
local testing = require "devplan.testing"
local evaluate = require "devplan.evaluate"

local M = {}

local PAL = testing.PALETTE
M.META = testing.META -- meta[VirtualDevice][0] cpu, [1] cuda
M.CONFIG = testing.config("cuda")

local P = dp.pattern
local W = P.wild

-- The rules MergeComposite and MergeAndAnnotate take, by seed.
local RULES = {
  {name = "neg2", pattern = P.op("negative")(P.op("negative")(W()))},
  {name = "add", pattern = P.op("add")(W(), W())},
  {name = "exp_add", pattern = P.op("exp")(P.op("add")(W(), W()))},
  {name = "mul_relu", pattern = P.op("multiply")(P.op("nn.relu")(W()), W())},
  {name = "add_const", pattern = P.op("add")(W(), P.const())},
  {name = "sub", pattern = P.op("subtract")(W(), W())},
  {name = "relu_opt", pattern = P.op("nn.relu")(W()):optional(function(x) return P.op("exp")(x) end)},
  {name = "any_unary", pattern = P.op_kind("elemwise", "broadcast", "injective", "opaque")(W())},
}

local function rules_for(seed, with_device)
  local out = {}
  for i = 1, 1 + seed % 2 do
    local r = RULES[(seed * 7 + i * 3) % #RULES + 1]
    out[i] = {name = r.name .. i, pattern = r.pattern,
              device = with_device and (((seed + i) % 2 == 0) and PAL.CPU or PAL.GPU) or nil}
  end
  return out
end

local Fail = {}
local function fail(property, detail) error(setmetatable({property = property, detail = detail}, Fail), 0) end

-- f(...) protected: "ok", result | "error", devplan.Error | raises a failure.
local function attempt(what, f, ...)
  local ok, res = pcall(f, ...)
  if ok then return "ok", res end
  if getmetatable(res) == Fail then error(res, 0) end
  if not dp.is_error(res) then fail("eval-raw-error", what .. ": " .. tostring(res)) end
  return "error", res
end

-- Results of mod for each argument set (the property's failure when it cannot run).
local function results(mod, argsets, property, what)
  local out = {}
  for i, args in ipairs(argsets) do
    local ok, v = pcall(evaluate.run, mod, args)
    if not ok then fail(property, what .. " does not run: " .. tostring(v) .. "\n" .. tostring(mod)) end
    out[i] = v
  end
  return out
end

local function same(property, what, want, mod, argsets)
  local got = results(mod, argsets, property, what)
  for i = 1, #want do
    if not evaluate.same(want[i], got[i]) then
      fail(property, ("%s computes %s where the program computes %s (arguments %d)\n%s")
        :format(what, evaluate.show(got[i]), evaluate.show(want[i]), i, tostring(mod)))
    end
  end
end

local function plan(mod)
  return attempt("PlanDevices", dp.passes.PlanDevices(M.CONFIG), mod)
end

local function check(text, argsets, seed)
  local st, mod = attempt("parse", dp.parse, text, M.META)
  if st ~= "ok" then fail("eval-parse", tostring(mod)) end
  local want = results(mod, argsets, "eval-parse", "the program")

  local pst, planned = plan(mod)
  if pst == "error" and planned.code ~= "conflict" then fail("eval-plan", "PlanDevices: " .. tostring(planned)) end
  if pst == "ok" then
    same("eval-plan", "PlanDevices", want, planned, argsets)
    local s, shared = attempt("ShareCopies", dp.passes.ShareCopies(), planned)
    if s ~= "ok" then fail("eval-share", tostring(shared)) end
    same("eval-share", "ShareCopies", want, shared, argsets)
    local violations = dp.planner.verify(shared, M.CONFIG)
    if #violations > 0 then fail("eval-share", "ShareCopies' plan does not verify: " .. violations[1].message) end
    local p, parted = attempt("PartitionByVirtualDevice",
      dp.passes.PartitionByVirtualDevice{config = M.CONFIG}, planned)
    if p ~= "ok" then fail("eval-partition", tostring(parted)) end
    same("eval-partition", "PartitionByVirtualDevice", want, parted, argsets)
  end

  local m, merged = attempt("MergeComposite", dp.passes.MergeComposite(rules_for(seed, false)), mod)
  if m ~= "ok" then fail("eval-merge", tostring(merged)) end
  same("eval-merge", "MergeComposite", want, merged, argsets)
  local mp, mplanned = plan(merged)
  if mp == "ok" then same("eval-merge", "MergeComposite, then PlanDevices", want, mplanned, argsets) end

  local a, annotated = attempt("MergeAndAnnotate", dp.passes.MergeAndAnnotate(rules_for(seed, true)), mod)
  if a ~= "ok" then fail("eval-annotate", tostring(annotated)) end
  same("eval-annotate", "MergeAndAnnotate", want, annotated, argsets)
  local ap, aplanned = plan(annotated)
  if ap == "ok" then
    same("eval-annotate", "MergeAndAnnotate, then PlanDevices", want, aplanned, argsets)
  elseif aplanned.code ~= "conflict" then
    fail("eval-annotate", "MergeAndAnnotate, then PlanDevices: " .. tostring(aplanned))
  end
  return pst == "ok" and "planned" or "conflict"
end

-- nil and the outcome ("planned" or "conflict"), or the failure.
function M.check(text, argsets, seed)
  local ok, r = pcall(check, text, argsets, seed or 1)
  if ok then return nil, r end
  if getmetatable(r) == Fail then return r end
  return {property = "eval-raw-error", detail = "the checker: " .. tostring(r)}
end

return M
