-- Copies where they belong (docs/copies.md): the Lua face of MoveCopies,
-- device-polymorphic functions and recompute (src/planner/move*.c, poly.c,
-- recompute.c), and what each run made, kept (weakly) by the module it
-- made, for devplan.planner, devplan.passes and devplan.why, which all
-- stand above this module.
--
--   move(planned, config, opts?)     MoveCopies: the module made and its moves
--   moves(mod)                       the moves MoveCopies made to produce mod
--   plan_with(mod, config, opts)     PlanDevices with options (checked by the
--                                    caller): polymorphic = true keeps its
--                                    report, recompute = true computes again
--   specialisations(mod)             polymorphic = true's report for mod
--   recomputed(mod)                  recompute = true's list for mod
--   check_move_options(opts, who, level)
--   default_config()                 llvm and cuda, default cpu
local core = require "devplan.core"
local ir = require "devplan.ir"
local options = require "devplan.plan_options"
local latency = require "devplan.latency"

local error, math, pairs, setmetatable, tostring, type = error, math, pairs, setmetatable, tostring, type
_ENV = nil -- no global is read or written below this line

local M = {}

local moves_of = setmetatable({}, {__mode = "k"})
local specialised_of = setmetatable({}, {__mode = "k"})
local recomputed_of = setmetatable({}, {__mode = "k"})

-- MoveCopies' options: {max_new_functions = positive integer} (the loops it
-- may peel: each peel adds a function), or nil.
function M.check_move_options(opts, who, level)
  if opts == nil then return nil end
  if type(opts) ~= "table" then
    error(who .. ": options must be a table, got " .. type(opts), level + 1)
  end
  for k, v in pairs(opts) do
    if k ~= "max_new_functions" then
      error(who .. ": unknown option '" .. tostring(k) .. "' (max_new_functions)", level + 1)
    end
    if math.type(v) ~= "integer" or v < 1 then
      error(who .. ": option 'max_new_functions' must be a positive integer", level + 1)
    end
  end
  return opts
end

-- MoveCopies on a planned module: the module made, with its moves (a list
-- of records, remembered for dp.planner.moves and explanations).
function M.move(planned, config, opts)
  if not ir.is_module(planned) then
    error("devplan.planner.move: a planned module expected, got " .. type(planned), 2)
  end
  options.check_config(config, "devplan.planner.move", 2)
  M.check_move_options(opts, "devplan.planner.move", 2)
  local out, moves = core.planner.move_copies(planned, config, opts)
  moves_of[out] = moves
  return out, moves
end

-- The moves MoveCopies made to produce mod (nil: it did not make mod).
function M.moves(mod) return moves_of[mod] end

-- PlanDevices with options (already checked; placement = "latency" too):
-- the module, and with polymorphic = true its report, remembered for specialisations(out); with
-- recompute = true what was computed again, remembered for recomputed(out).
function M.plan_with(mod, config, opts)
  if opts and opts.placement == "latency" then
    -- (the search does not weigh recomputation: it runs on the answer)
    local out = latency.place(mod, config, options.latency_options(opts)).planned
    if opts.recompute then out = M.recompute(out, config) end
    return out
  end
  local out, report = core.planner.plan_with(mod, config, opts)
  if opts and opts.recompute then out = M.recompute(out, config) end
  if report then specialised_of[out] = report end
  return out, report
end

-- recompute = true on a planned module (TVM's rules and min_bytes plan
-- with it; the latency placement's answer gets it afterwards): the module
-- with what was computed again remembered for recomputed(out).
function M.recompute(planned, config)
  local out, list = core.planner.recompute(planned, config)
  recomputed_of[out] = list
  return out
end

-- What PlanDevices' recompute option computed again instead of copying, for
-- the module it made: a list of {value =, fn =, line =, col =, src =, dst =,
-- calls =}, or nil.
function M.recomputed(mod) return recomputed_of[mod] end

-- The report of PlanDevices' polymorphic option for the module it made:
-- {specialised =, functions_added =, copies_before = (false: a conflict
-- without it), copies_after =}, or nil.
function M.specialisations(mod) return specialised_of[mod] end

-- The configuration MoveCopies uses when none is given (nor a pipeline's).
function M.default_config()
  return core.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
end

return M
