-- dp.passes: the built-in passes, each a pass value (devplan.pass).
--
--   dp.passes.PlanDevices(config, opts?)
--       TVM's PlanDevices (every phase of dp.planner in order). Options:
--       resolve_conflicts = true  (default) phase 0b: a device_copy where a
--                                 value nobody annotated is demanded on two
--                                 devices (TVM's), and where the result of a
--                                 plain on_device is (computed there, read
--                                 anywhere: docs/planner-semantics.md)
--       resolve_conflicts = "tvm" TVM's phase 0b alone: the second kind stays
--                                 a conflict
--       resolve_conflicts = false strict planning: phase 0b is skipped, so
--                                 such a module is a "conflict" devplan.Error
--                                 naming both constraints with their
--                                 positions (and the chain in its notes)
--       all_conflicts = true      every independent conflict at once: one
--                                 error ("N conflicts: ..."), each conflict
--                                 in err.errors, in source order (README,
--                                 "Every conflict at once")
--       placement = "min_bytes"   values nobody constrained placed to copy
--                                 the fewest bytes (capability, compute_cost,
--                                 bandwidth: plan_options.lua)
--       polymorphic = true        a global function specialised per device
--                                 signature (@f, @f_cuda; max_specialisations;
--                                 dp.planner.specialisations(planned))
--       recompute = true          a copy of a constant, zeros, a reshape of
--                                 what is there... computed again instead
--                                 (dp.planner.recomputed(planned))
--       placement = "latency"     the plan whose modelled schedule finishes
--                                 first (cost =, bandwidth =, exact =, effort =:
--                                 devplan.latency, docs/latency.md)
--       consume = true            the caller gives the module up: the plan
--                                 reuses its calls and lets nothing else holds
--                                 (changed in place) instead of copying them;
--                                 the module is then valid but unspecified
--                                 (`devplan plan` gives its input up where
--                                 nothing reads it after planning: it sets
--                                 p.consume_input, which the pass's options,
--                                 and so its name, do not show)
--   dp.passes.ShareCopies()   one device_copy per value and pair of devices
--   dp.passes.MoveCopies(config?, {max_new_functions =}?)   copies moved to where
--                             they run least (docs/copies.md)
--   dp.passes.AnnotateVirtualDevices(rules)   passes/annotate_virtual_devices.lua
--   dp.passes.MergeComposite(rules), dp.passes.MergeAndAnnotate(rules)
--                                             passes/merge_composite.lua (dp.pattern)
--   dp.passes.PartitionByVirtualDevice{by =}  passes/partition_by_virtual_device.lua
--   (passes/: lua/devplan/passes/, the modules devplan.passes.*)
--   dp.passes.InferType(), dp.passes.Verify(config?, opts?)  (below)
--
-- Passes written in Lua live in lua/devplan/passes/; they require
-- "devplan.core" and the Lua parts they need, never "devplan" itself, nor
-- this module (it requires them).
local core = require "devplan.core"
local ir = require "devplan.ir"
local pass = require "devplan.pass"
local options = require "devplan.plan_options"
local copies = require "devplan.copies"
local verify = require "devplan.verify"
local annotate = require "devplan.passes.annotate_virtual_devices"
local merge = require "devplan.passes.merge_composite"
local partition = require "devplan.passes.partition_by_virtual_device"

local error, pairs, rawequal, tostring, type = error, pairs, rawequal, tostring, type
_ENV = nil -- no global is read or written below this line

local M = {}

-- opts and consume = true (a copy: the pass's options stay as made).
local function given_up(opts)
  local o = {consume = true}
  for k, v in pairs(opts) do o[k] = v end
  return o
end

function M.PlanDevices(config, opts)
  opts = options.check_options(opts, "devplan.passes.PlanDevices", 2)
  options.check_config(config, "devplan.passes.PlanDevices", 2)
  local p
  if options.is_tvm(opts) then
    p = pass.new("PlanDevices", function(mod)
      if p.consume_input then return core.planner.plan_with(mod, config, {consume = true}) end
      return core.planner.plan(mod, config)
    end, opts)
  else
    p = pass.new("PlanDevices", function(mod)
      local out, report = copies.plan_with(mod, config, p.consume_input and given_up(opts) or opts)
      p.report = report -- polymorphic: the report of the last run (dp.planner.specialisations)
      p.recomputed = copies.recomputed(out) -- recompute: what the last run computed again
      return out
    end, opts)
  end
  p.config = config -- what the verifier checks the plan against
  return p
end

-- ShareCopies: one device_copy per value and pair of devices (of a planned
-- module; src/planner/share.c). PlanDevices copies once per use, as TVM.
function M.ShareCopies()
  return pass.new("ShareCopies", core.planner.share_copies)
end

-- MoveCopies: copies of a planned module moved out of functions, loops and
-- branches, merged and cancelled, never more often on any path (issue 20;
-- src/planner/move*.c, docs/copies.md). config: the configuration it was
-- planned with (default: the pipeline's planning pass's, else the
-- context's, else llvm and cuda with default cpu). The moves made are kept
-- for the module made (dp.planner.moves(mod)) and explain each copy.
function M.MoveCopies(config, opts)
  if config ~= nil and not ir.is_config(config) then
    if type(config) == "table" and opts == nil then config, opts = nil, config
    else error("devplan.passes.MoveCopies: a CompilationConfig expected, got " .. type(config), 2) end
  end
  copies.check_move_options(opts, "devplan.passes.MoveCopies", 2)
  return pass.new("MoveCopies", function(mod, ctx)
    local cfg = config or (ctx and (ctx.planned_config or ctx.config)) or copies.default_config()
    return copies.move(mod, cfg, opts)
  end, opts)
end

M.AnnotateVirtualDevices = annotate.new

-- Pattern passes (dp.pattern): passes/merge_composite.lua
M.MergeComposite, M.MergeAndAnnotate = merge.MergeComposite, merge.MergeAndAnnotate
M.PartitionByVirtualDevice = partition.new

-- ---- the framework's passes (lua/devplan/verify.lua, pipelines) ----
--   dp.passes.InferType()   type-check the module (dp.infer_type)
function M.InferType() return pass.new("InferType", core.infer_type) end

--   dp.passes.Verify(config?, {planned =}?)   the verifier (lua/devplan/verify.lua) as a
--   pass: checks the module it is given and returns it. The plan is checked when the
--   context has seen a planning pass (or when {planned = true}); config: the
--   configuration to check it against (default: the one it was planned with, else the
--   context's).
function M.Verify(config, opts)
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
    return verify.check(mod, {planned = opts.planned or ctx.planned,
                              config = config or ctx.planned_config or ctx.config,
                              input = rawequal(mod, ctx.planned_output) and ctx.planned_input or nil})
  end, opts)
end

return M
