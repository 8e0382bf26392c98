-- dp.planner: the planner's phases as primitives (C, src/planner/ through
-- src/lua/l_planner.c) and what Lua adds on top of them.
--
--   dp.planner.plan(mod, config)         every phase in order (PlanDevices)
--   dp.planner.rewrite / conflicts / analyze / default / capture
--   dp.planner.explain, dp.planner.virtual_devices
--   dp.planner.domains(mod, config, opts) the domains after defaulting, as
--       dp.passes.PlanDevices(config, opts) would capture them
local core = require "devplan.core"
local ir = require "devplan.ir"

local M = {}
for name, fn in pairs(core.planner) do M[name] = fn end

local OPTIONS = {resolve_conflicts = "boolean"}

-- PlanDevices' options, checked: unknown keys and wrong types are errors.
function M.check_options(opts, who, level)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    error(who .. ": options must be a table, got " .. type(opts), level + 1)
  end
  for k, v in pairs(opts) do
    local want = OPTIONS[k]
    if not want then
      error(who .. ": unknown option '" .. tostring(k) .. "'", level + 1)
    end
    if type(v) ~= want then
      error(who .. ": option '" .. k .. "' must be a " .. want .. ", got " .. type(v), level + 1)
    end
  end
  return opts
end

function M.check_config(config, who, level)
  if not ir.is_config(config) then
    error(who .. ": a CompilationConfig expected, got " .. type(config), level + 1)
  end
end

-- Phases 0, (0b), 1 and 2: the domains a planned module is captured from.
-- resolve_conflicts = false skips phase 0b (strict planning).
function M.domains(mod, config, opts)
  opts = M.check_options(opts, "devplan.planner.domains", 2)
  if not ir.is_module(mod) then
    error("devplan.planner.domains: a module expected, got " .. type(mod), 2)
  end
  M.check_config(config, "devplan.planner.domains", 2)
  local m = M.rewrite(mod, config)
  if opts.resolve_conflicts ~= false then m = M.conflicts(m, config) end
  local d = M.analyze(m, config)
  M.default(d)
  return d
end

-- dp.planner.report(planned, config?): devices, copies and bytes (lua/devplan/report.lua)
M.report = require("devplan.report").report
-- dp.planner.why(planned, e, {input =, config =, name =}?): why a planned value is
-- where it is; for a device_copy, why it was inserted (lua/devplan/why.lua)
M.why = require("devplan.why").why

return M
