-- The verifier: what a pipeline checks after each pass (verify_each) and
-- what the `verify` pass checks.
--
--   type check   dp.infer_type on the whole module again (a "type" error
--                names the first expression that does not check)
--   plan check   once the module has been planned: dp.planner.verify
--                (src/planner/verify.c): operator arguments where the call
--                runs, device_copy ends, annotations that agree with the
--                bodies and, given the module the planning pass was given,
--                every user annotation of it respected
local core = require "devplan.core"
local pass = require "devplan.pass"
local planner = require "devplan.planner"
local ir = require "devplan.ir"

local M = {}

local function plan_check(mod, config, input)
  planner.verify(mod, config, {input = input, raise = true})
end

-- Checks mod; raises a devplan.Error. opts: planned (boolean: check the
-- plan too), config (the configuration it was planned with; default: llvm
-- and cuda as dp.planner's), input (the module before planning: its
-- annotations must hold in mod).
function M.check(mod, opts)
  if not ir.is_module(mod) then error("devplan.verify: a module expected, got " .. type(mod), 2) end
  opts = opts or {}
  core.infer_type(mod)
  if opts.planned then plan_check(mod, opts.config, opts.input) end
  return mod
end

-- The verifier as a pass: checks the module it is given and returns it.
-- The plan is checked when the context has seen a planning pass (or when
-- {planned = true}); config: the configuration to check it against
-- (default: the one it was planned with, else the context's).
function M.pass(config, opts)
  if config ~= nil and not ir.is_config(config) then
    error("devplan.passes.Verify: a CompilationConfig expected, got " .. type(config), 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("devplan.passes.Verify: options must be a table, got " .. type(opts), 2)
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "planned" then error("devplan.passes.Verify: unknown option '" .. tostring(k) .. "' (planned)", 2) end
  end
  return pass.new("Verify", function(mod, ctx)
    return M.check(mod, {planned = opts.planned or ctx.planned,
                         config = config or ctx.planned_config or ctx.config,
                         input = rawequal(mod, ctx.planned_output) and ctx.planned_input or nil})
  end, opts)
end

return M
