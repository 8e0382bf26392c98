-- The verifier: what a pipeline checks after each pass (verify_each) and
-- what the Verify pass (dp.passes.Verify, lua/devplan/passes.lua) checks.
--
--   type check   dp.infer_type on the whole module again (a "type" error
--                names the first expression that does not check)
--   plan check   once the module has been planned: dp.planner.verify
--                (src/planner/verify.c): operator arguments where the call
--                runs, device_copy ends, annotations that agree with the
--                bodies and, given the module the planning pass was given,
--                every user annotation of it respected
local core = require "devplan.core"
local ir = require "devplan.ir"

local error, type = error, type
_ENV = nil -- no global is read or written below this line

local M = {}

local function plan_check(mod, config, input)
  core.planner.verify(mod, config, {input = input, raise = true})
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

return M
