-- dp.planner: the planner's phases as primitives (C, src/planner/ through
-- src/lua/l_planner.c) and what Lua adds on top of them.
--
--   dp.planner.plan(mod, config)         every phase in order (PlanDevices)
--   dp.planner.rewrite / conflicts / analyze / default / capture
--   dp.planner.explain, dp.planner.virtual_devices
--   dp.planner.domains(mod, config, opts) the domains after defaulting, as
--       dp.passes.PlanDevices(config, opts) would capture them
--   dp.planner.plan_with(mod, config, opts) PlanDevices with options
--   dp.planner.share_copies(planned)      ShareCopies
--   dp.planner.move(planned, config, opts) MoveCopies (the module; its moves: dp.planner.moves)
--   dp.planner.specialisations(planned)   PlanDevices {polymorphic = true}'s report
--   dp.planner.recomputed(planned)        PlanDevices {recompute = true}'s list
--   (docs/copies.md)
--   dp.planner.solve_placement(problem)   the placement optimiser on its own
--   dp.planner.report, why, schedule      what a plan does (below)
--
-- PlanDevices' options are checked by devplan.plan_options, which the
-- passes and the reports share; this module stands above them all.
local core = require "devplan.core"
local ir = require "devplan.ir"
local options = require "devplan.plan_options"
local copies = require "devplan.copies"
local report = require "devplan.report"
local why = require "devplan.why"
local schedule = require "devplan.schedule"

local error, pairs, type = error, pairs, type
_ENV = nil -- no global is read or written below this line

local M = {}
for name, fn in pairs(core.planner) do M[name] = fn end

M.check_options, M.is_tvm, M.check_config = options.check_options, options.is_tvm, options.check_config
M.domains = options.domains

-- dp.planner.plan_with(mod, config, opts): PlanDevices with options, as the
-- pass runs it (polymorphic and recompute included: devplan.copies).
function M.plan_with(mod, config, opts)
  opts = options.check_options(opts, "devplan.planner.plan_with", 2)
  if not ir.is_module(mod) then
    error("devplan.planner.plan_with: a module expected, got " .. type(mod), 2)
  end
  options.check_config(config, "devplan.planner.plan_with", 2)
  return copies.plan_with(mod, config, opts)
end

-- Copies where they belong (lua/devplan/copies.lua, docs/copies.md)
M.move, M.moves = copies.move, copies.moves
M.specialisations, M.recomputed = copies.specialisations, copies.recomputed
M.default_config = copies.default_config

-- dp.planner.report(planned, config?): devices, copies and bytes (lua/devplan/report.lua)
M.report = report.report
-- dp.planner.why(planned, e, {input =, config =, name =}?): why a planned value is
-- where it is; for a device_copy, why it was inserted (lua/devplan/why.lua)
M.why = why.why
-- dp.planner.schedule(planned, config, {cost =, bandwidth =, serial =, verify =}?): the
-- modelled schedule of a planned module (lua/devplan/schedule.lua, src/planner/schedule_*.c)
M.schedule = schedule.run

return M
