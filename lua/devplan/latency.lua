-- The latency placement's Lua face (PlanDevices' placement = "latency",
-- src/planner/latency*.c through src/lua/l_schedule.c), and the cost
-- options every schedule shares with it (devplan.schedule runs on them).
--
--   place(mod, config, opts)          dp.schedule.place: the plan, its makespan,
--                                     the candidates it weighed (docs/latency.md)
--   place_domains(mod, config, opts)  dp.planner.domains with placement = "latency"
--   check_options(opts, who, allowed, level), core_options(opts)
--                                     a schedule's options (cost, bandwidth, ...),
--                                     checked, and as the C side reads them
--   check_args(mod, config, who, level), typed(mod)
--
-- It stands below devplan.plan_options and devplan.passes (PlanDevices with
-- placement = "latency" runs place) and above devplan.costs.
local core = require "devplan.core"
local ir = require "devplan.ir"
local costs = require "devplan.costs"

local error, ipairs, pairs, tostring, type = error, ipairs, pairs, tostring, type
local math, table = math, table
_ENV = nil -- no global is read or written below this line

local M = {}

-- ---------------------------------------------------------------- a schedule's options

function M.check_options(opts, who, allowed, level)
  level = level + 1
  if opts == nil then return {} end
  if type(opts) ~= "table" then error(who .. ": options must be a table, got " .. type(opts), level) end
  for k, v in pairs(opts) do
    if not allowed[k] then
      local names = {}
      for n in pairs(allowed) do names[#names + 1] = n end
      table.sort(names)
      error(who .. ": unknown option '" .. tostring(k) .. "' (" .. table.concat(names, ", ") .. ")", level)
    end
  end
  if opts.cost ~= nil and not costs.is_costs(opts.cost) then
    error(who .. ": option 'cost' must be a function(call, vd) -> seconds | nil, a cost table "
      .. "(dp.costs.load) or a model (dp.costs.model), got " .. type(opts.cost), level)
  end
  local bw = opts.bandwidth
  if bw ~= nil and type(bw) ~= "function" and not (type(bw) == "number" and bw > 0 and bw < math.huge) then
    error(who .. ": option 'bandwidth' must be a number of bytes per second > 0 or a function(src, dst)", level)
  end
  for _, k in ipairs{"serial", "verify", "share_copies"} do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      error(who .. ": option '" .. k .. "' must be a boolean", level)
    end
  end
  return opts
end

-- The options the C side reads.
function M.core_options(opts)
  local c, cost = {bandwidth = opts.bandwidth, serial = opts.serial}, opts.cost
  if costs.is_model(cost) then
    c.rates = cost.rates
  elseif costs.is_table(cost) then
    c.cost = function(call, vd) return cost(call, vd) end
  elseif type(cost) == "function" then
    c.cost = cost
  else
    c.rates = costs.DEFAULT.rates
  end
  return c
end

function M.typed(mod)
  for _, nf in ipairs(mod:functions()) do
    if nf[2].body.checked_type == nil then
      core.infer_type(mod)
      return
    end
  end
end

function M.check_args(mod, config, who, level)
  if not ir.is_module(mod) then error(who .. ": a module expected, got " .. type(mod), level + 1) end
  if not ir.is_config(config) then
    error(who .. ": a CompilationConfig expected, got " .. type(config), level + 1)
  end
end

-- ---------------------------------------------------------------- the latency placement

local PLACE_OPTIONS = {cost = true, bandwidth = true, objective = true, exact = true, full = true,
                       effort = true, resolve_conflicts = true, all_conflicts = true}

local function check_place_options(opts, who, level)
  opts = M.check_options(opts, who, PLACE_OPTIONS, level + 1)
  if opts.objective ~= nil and opts.objective ~= "time" and opts.objective ~= "bytes" then
    error(who .. ": option 'objective' must be \"time\" or \"bytes\", got " .. tostring(opts.objective), level + 1)
  end
  for _, k in ipairs{"exact", "full"} do
    local v = opts[k]
    if v ~= nil and (math.type(v) ~= "integer" or v < 0 or (k == "exact" and v > 64)) then
      error(who .. ": option '" .. k .. "' must be an integer >= 0" .. (k == "exact" and " and <= 64" or ""), level + 1)
    end
  end
  if opts.effort ~= nil and not (type(opts.effort) == "number" and opts.effort > 0 and opts.effort < math.huge) then
    error(who .. ": option 'effort' must be a number > 0", level + 1)
  end
  local rc = opts.resolve_conflicts
  if rc ~= nil and type(rc) ~= "boolean" and rc ~= "tvm" then
    error(who .. ": option 'resolve_conflicts' must be a boolean or \"tvm\"", level + 1)
  end
  if opts.all_conflicts ~= nil and type(opts.all_conflicts) ~= "boolean" then
    error(who .. ": option 'all_conflicts' must be a boolean", level + 1)
  end
  return opts
end

local function place_core_options(opts)
  local c = M.core_options(opts)
  for _, k in ipairs{"objective", "exact", "full", "effort", "resolve_conflicts", "all_conflicts"} do c[k] = opts[k] end
  return c
end

-- dp.schedule.place(mod, config, {cost =, bandwidth =, objective =, exact =, effort =, ...}?)
-- -> {planned =, makespan =, bytes =, bound =, candidates = {{name =, makespan =, model =, ...}},
--     winner =, exact =, evaluations =, calls =, decisions =, soft =, soft_broken =, soft_weight =}:
-- the latency placement (include/devplan/latency.h, docs/latency.md).
function M.place(mod, config, opts)
  M.check_args(mod, config, "devplan.schedule.place", 2)
  opts = check_place_options(opts, "devplan.schedule.place", 2)
  M.typed(mod)
  return core.schedule.latency(mod, config, place_core_options(opts))
end

-- The domains of the latency placement's plan (dp.planner.domains with
-- placement = "latency").
function M.place_domains(mod, config, opts)
  M.check_args(mod, config, "devplan.planner.domains", 2)
  opts = check_place_options(opts, "devplan.planner.domains", 2)
  M.typed(mod)
  return core.schedule.latency_domains(mod, config, place_core_options(opts))
end

return M
