-- PlanDevices' options, checked, and the domains they give: what the
-- planner's Lua face (devplan.planner), its passes (devplan.passes) and its
-- reports (devplan.why) share, below all three.
--
--   check_options(opts, who, level)  the options, or an error naming `who`
--   is_tvm(opts)                     are they PlanDevices as TVM (nothing further)?
--   check_config(config, who, level)
--   domains(mod, config, opts)       dp.planner.domains: phases 0 to 2 with opts
--   latency_options(opts)            placement = "latency"'s options for devplan.latency
local core = require "devplan.core"
local ir = require "devplan.ir"
local latency = require "devplan.latency"

local error, next, pairs, tostring, type = error, next, pairs, tostring, type
local math, table = math, table
_ENV = nil -- no global is read or written below this line

local M = {}

-- PlanDevices' options and the types they take (src/lua/l_place.c reads them):
--   resolve_conflicts  true | false | "tvm"   (default true) phase 0b: a value demanded
--                                 on two devices gets a copy (TVM's, and a plain
--                                 on_device's result read anywhere: docs/planner-semantics.md);
--                                 "tvm": TVM's phase 0b alone; false: strict
--   all_conflicts      boolean   every independent conflict in one error (err.errors)
--   placement          "tvm" | "min_bytes"   TVM's defaulting (default), or every
--                                 value nobody constrained placed to minimise the
--                                 bytes copied (src/planner/place.c)
--   capability         function(call, vd) -> boolean   (min_bytes) may call run on vd
--   compute_cost       function(call, vd) -> seconds   (min_bytes) time joins bytes
--   bandwidth          number | function(src, dst) -> bytes per second  (min_bytes, latency)
--   cost               function | cost table | model   (latency) what a call costs (dp.costs)
--   exact, effort      (latency) branch and bound up to `exact` decisions; the search's work
--   polymorphic        boolean   a global function called with different device
--                                 signatures is specialised per signature (@f, @f_cuda;
--                                 src/planner/poly.c, docs/copies.md)
--   max_specialisations integer  (polymorphic) at most this many functions copied (default 64)
--   recompute          boolean   a copy of a value cheaper to compute again on its
--                                 destination (a constant, zeros, a reshape of what is
--                                 there, ...) is that computation instead (src/planner/
--                                 recompute.c; dp.planner.recomputed(planned))
--   consume            boolean   the caller gives the module up: the plan may reuse its
--                                 calls and lets (changed in place) instead of copying
--                                 them, so that planning does not hold both (the module
--                                 stays usable memory, its content is then unspecified;
--                                 not with polymorphic, ignored by placement = "latency")
local OPTIONS = {resolve_conflicts = {"boolean", "string"}, all_conflicts = {"boolean"}, placement = {"string"},
                 capability = {"function"}, compute_cost = {"function"},
                 bandwidth = {"number", "function"}, cost = {"function", "table"},
                 exact = {"number"}, effort = {"number"}, polymorphic = {"boolean"},
                 max_specialisations = {"number"}, recompute = {"boolean"}, consume = {"boolean"}}
local PLACEMENTS = {tvm = true, min_bytes = true, latency = true}

-- PlanDevices' options, checked: unknown keys and wrong types are errors.
function M.check_options(opts, who, level)
  -- (callers in devplan name themselves; anyone else gets this name)
  who = type(who) == "string" and who or "devplan.planner.check_options"
  level = math.type(level) == "integer" and level >= 1 and level or 2
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    error(who .. ": options must be a table, got " .. type(opts), level + 1)
  end
  for k, v in pairs(opts) do
    local want = OPTIONS[k]
    if not want then
      error(who .. ": unknown option '" .. tostring(k) .. "'", level + 1)
    end
    if type(v) ~= want[1] and type(v) ~= want[2] then
      error(who .. ": option '" .. k .. "' must be a " .. table.concat(want, " or ") .. ", got " .. type(v), level + 1)
    end
  end
  if type(opts.resolve_conflicts) == "string" and opts.resolve_conflicts ~= "tvm" then
    error(who .. ": option 'resolve_conflicts' must be a boolean or \"tvm\", got \"" .. opts.resolve_conflicts .. "\"", level + 1)
  end
  if opts.placement ~= nil and not PLACEMENTS[opts.placement] then
    error(who .. ": option 'placement' must be \"tvm\", \"min_bytes\" or \"latency\", got \"" .. opts.placement .. "\"", level + 1)
  end
  if type(opts.bandwidth) == "number" and not (opts.bandwidth > 0 and opts.bandwidth <= 1e300) then
    -- (dp_bandwidth_ok's rule, as CompilationConfig's bandwidths: NaN fails both tests)
    error(("%s: option 'bandwidth' must be a number of bytes per second > 0 and finite, got %s")
      :format(who, opts.bandwidth ~= opts.bandwidth and "nan" or tostring(opts.bandwidth)), level + 1)
  end
  if opts.max_specialisations ~= nil and not opts.polymorphic then
    error(who .. ": option 'max_specialisations' needs polymorphic = true", level + 1)
  end
  if opts.max_specialisations ~= nil and (math.type(opts.max_specialisations) ~= "integer" or opts.max_specialisations < 1) then
    error(who .. ": option 'max_specialisations' must be a positive integer", level + 1)
  end
  if opts.placement == "latency" and opts.polymorphic then
    error(who .. ": option polymorphic goes with placement = \"tvm\" or \"min_bytes\", not \"latency\"", level + 1)
  end
  if opts.placement == "latency" then
    if opts.capability or opts.compute_cost then
      error(who .. ": placement = \"latency\" takes cost = function(call, vd) -> seconds | nil "
        .. "(nil: vd cannot run the call), not capability or compute_cost", level + 1)
    end
  elseif opts.cost or opts.exact or opts.effort then
    error(who .. ": options cost, exact and effort need placement = \"latency\"", level + 1)
  elseif (opts.capability or opts.compute_cost or opts.bandwidth) and opts.placement ~= "min_bytes" then
    error(who .. ": options capability, compute_cost and bandwidth need placement = \"min_bytes\" or \"latency\"", level + 1)
  end
  return opts
end

-- placement = "latency"'s options as devplan.latency.place takes them.
function M.latency_options(opts)
  local o = {}
  -- (recompute runs on the placement's answer: lua/devplan/passes.lua; the
  -- search plans the module many times: it never consumes it)
  for k, v in pairs(opts) do
    if k ~= "placement" and k ~= "recompute" and k ~= "consume" then o[k] = v end
  end
  return o
end

-- Are these options PlanDevices as TVM (nothing further)?
function M.is_tvm(opts)
  if type(opts) ~= "table" then return opts == nil end
  return next(opts) == nil or (next(opts, next(opts)) == nil and opts.resolve_conflicts == true)
end

function M.check_config(config, who, level)
  who = type(who) == "string" and who or "devplan.planner.check_config"
  level = math.type(level) == "integer" and level >= 1 and level or 2
  if not ir.is_config(config) then
    error(who .. ": a CompilationConfig expected, got " .. type(config), level + 1)
  end
end

-- Phases 0, (0b), 1, (placement) and 2: the domains a planned module is
-- captured from, with PlanDevices' options (resolve_conflicts = false skips
-- phase 0b: strict planning).
function M.domains(mod, config, opts)
  opts = M.check_options(opts, "devplan.planner.domains", 2)
  if not ir.is_module(mod) then
    error("devplan.planner.domains: a module expected, got " .. type(mod), 2)
  end
  M.check_config(config, "devplan.planner.domains", 2)
  if opts.placement == "latency" then
    return latency.place_domains(mod, config, M.latency_options(opts))
  end
  return core.planner.domains_with(mod, config, opts)
end

return M
