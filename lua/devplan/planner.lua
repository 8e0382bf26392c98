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
--   dp.planner.solve_placement(problem)   the placement optimiser on its own
--   dp.planner.report, why, schedule      what a plan does (below)
--
-- PlanDevices' options are checked by devplan.plan_options, which the
-- passes and the reports share; this module stands above them all.
local core = require "devplan.core"
local options = require "devplan.plan_options"
local report = require "devplan.report"
local why = require "devplan.why"
local schedule = require "devplan.schedule"

local pairs = pairs
_ENV = nil -- no global is read or written below this line

local M = {}
for name, fn in pairs(core.planner) do M[name] = fn end

M.check_options, M.is_tvm, M.check_config = options.check_options, options.is_tvm, options.check_config
M.domains = options.domains

-- dp.planner.report(planned, config?): devices, copies and bytes (lua/devplan/report.lua)
M.report = report.report
-- dp.planner.why(planned, e, {input =, config =, name =}?): why a planned value is
-- where it is; for a device_copy, why it was inserted (lua/devplan/why.lua)
M.why = why.why
-- dp.planner.schedule(planned, config, {cost =, bandwidth =, serial =, verify =}?): the
-- modelled schedule of a planned module (lua/devplan/schedule.lua, src/planner/schedule_*.c)
M.schedule = schedule.run

return M
