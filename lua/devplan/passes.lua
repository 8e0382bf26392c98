-- Passes written in Lua on top of the planner's phases (dp.planner).
--
-- dp.passes.PlanDevices(config, opts?) extends the C pass of
-- src/lua/l_planner.c with one explicit option:
--
--   resolve_conflicts = true  (default) TVM's semantics: all phases, among
--                             them phase 0b, which inserts a device_copy
--                             where a value nobody annotated is demanded on
--                             two devices. This is the C pass itself.
--   resolve_conflicts = false strict planning: phase 0b is skipped, so such
--                             a module is a "conflict" devplan.Error naming
--                             both constraints with their positions (and
--                             the chain between them in its notes).
--
-- dp.passes.AnnotateVirtualDevices(rules) comes from passes/.
--
-- M.domains(mod, config, opts) gives the planner's domains after
-- defaulting, with the same option: what the command line explains from.
local M = {}

local OPTIONS = {resolve_conflicts = "boolean"}

local function check_options(opts, level)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    error("devplan.passes.PlanDevices: options must be a table, got " .. type(opts), level + 1)
  end
  for k, v in pairs(opts) do
    local want = OPTIONS[k]
    if not want then
      error("devplan.passes.PlanDevices: unknown option '" .. tostring(k) .. "'", level + 1)
    end
    if type(v) ~= want then
      error("devplan.passes.PlanDevices: option '" .. k .. "' must be a " .. want
        .. ", got " .. type(v), level + 1)
    end
  end
  return opts
end

-- Phases 0, (0b), 1 and 2: the domains a planned module is captured from.
local function domains(planner, mod, config, resolve)
  local m = planner.rewrite(mod, config)
  if resolve then m = planner.conflicts(m, config) end
  local d = planner.analyze(m, config)
  planner.default(d)
  return d
end

local dp -- the devplan module (attached)

function M.domains(mod, config, opts)
  opts = check_options(opts, 2)
  if not dp.is_module(mod) then
    error("devplan.passes.domains: a module expected, got " .. type(mod), 2)
  end
  -- the pass checks the configuration (a nil one would mean the planner's
  -- exploration default, which nobody chose here)
  dp.passes.PlanDevices(config)
  return domains(dp.planner, mod, config, opts.resolve_conflicts ~= false)
end

-- Adds the options to dp.passes.PlanDevices (the C pass stays the default).
function M.attach(devplan)
  dp = devplan
  local c_plan_devices = dp.passes.PlanDevices
  local planner = dp.planner
  dp.passes.PlanDevices = function(config, opts)
    opts = check_options(opts, 2)
    local ok, pass = pcall(c_plan_devices, config) -- checks config
    if not ok then
      error("devplan.passes.PlanDevices: a CompilationConfig expected, got " .. type(config), 2)
    end
    if opts.resolve_conflicts ~= false then return pass end
    return function(mod)
      return planner.capture(domains(planner, mod, config, false))
    end
  end
  -- Passes written in Lua (passes/ on package.path).
  dp.passes.AnnotateVirtualDevices = require("annotate_virtual_devices").make(dp)
end

return M
