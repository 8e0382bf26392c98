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
--                                 bandwidth: planner.lua)
--       polymorphic = true        a global function specialised per device
--                                 signature (@f, @f_cuda; max_specialisations;
--                                 dp.planner.specialisations(planned))
--   dp.passes.ShareCopies()   one device_copy per value and pair of devices
--   dp.passes.MoveCopies(config?, {max_new_functions =}?)   copies moved to where
--                             they run least (docs/copies.md)
--   dp.passes.AnnotateVirtualDevices(rules)   passes/annotate_virtual_devices.lua
--   dp.passes.MergeComposite(rules), dp.passes.MergeAndAnnotate(rules)
--                                             passes/merge_composite.lua (dp.pattern)
--   dp.passes.PartitionByVirtualDevice{by =}  passes/partition_by_virtual_device.lua
--   dp.passes.InferType(), dp.passes.Verify(config?, opts?)  (below)
--
-- Passes written in Lua live in passes/ (on package.path); they require
-- "devplan.core" and the Lua parts they need, never "devplan" itself.
local pass = require "devplan.pass"
local planner = require "devplan.planner"

local M = {}

function M.PlanDevices(config, opts)
  opts = planner.check_options(opts, "devplan.passes.PlanDevices", 2)
  planner.check_config(config, "devplan.passes.PlanDevices", 2)
  local tvm = planner.is_tvm(opts)
  local p
  p = pass.new("PlanDevices", function(mod)
    if tvm then return planner.plan(mod, config) end
    local out, report = planner.plan_options(mod, config, opts)
    p.report = report -- polymorphic: the report of the last run (dp.planner.specialisations)
    p.recomputed = planner.recomputed(out) -- recompute: what the last run computed again
    return out
  end, opts)
  p.config = config -- what the verifier checks the plan against
  return p
end

-- ShareCopies: one device_copy per value and pair of devices (of a planned
-- module; src/planner/share.c). PlanDevices copies once per use, as TVM.
function M.ShareCopies()
  return pass.new("ShareCopies", planner.share_copies)
end

-- MoveCopies: copies of a planned module moved out of functions, loops and
-- branches, merged and cancelled, never more often on any path (issue 20;
-- src/planner/move*.c, docs/copies.md). config: the configuration it was
-- planned with (default: the pipeline's planning pass's, else the
-- context's, else llvm and cuda with default cpu). The moves made are kept
-- for the module made (dp.planner.moves(mod)) and explain each copy.
function M.MoveCopies(config, opts)
  if config ~= nil and not require("devplan.ir").is_config(config) then
    if type(config) == "table" and opts == nil then config, opts = nil, config
    else error("devplan.passes.MoveCopies: a CompilationConfig expected, got " .. type(config), 2) end
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("devplan.passes.MoveCopies: options must be a table, got " .. type(opts), 2)
  end
  for k, v in pairs(opts or {}) do
    if k ~= "max_new_functions" then
      error("devplan.passes.MoveCopies: unknown option '" .. tostring(k) .. "' (max_new_functions)", 2)
    end
    if math.type(v) ~= "integer" or v < 1 then
      error("devplan.passes.MoveCopies: option 'max_new_functions' must be a positive integer", 2)
    end
  end
  local p = pass.new("MoveCopies", function(mod, ctx)
    local cfg = config or (ctx and (ctx.planned_config or ctx.config)) or planner.default_config()
    return planner.move(mod, cfg, opts)
  end, opts)
  return p
end

M.AnnotateVirtualDevices = require("annotate_virtual_devices").new

-- Pattern passes (dp.pattern): passes/merge_composite.lua
local merge = require "merge_composite"
M.MergeComposite, M.MergeAndAnnotate = merge.MergeComposite, merge.MergeAndAnnotate
M.PartitionByVirtualDevice = require("partition_by_virtual_device").new

-- ---- the framework's passes (lua/devplan/verify.lua, pipelines) ----
local core = require "devplan.core"
--   dp.passes.InferType()   type-check the module (dp.infer_type)
function M.InferType() return pass.new("InferType", core.infer_type) end
--   dp.passes.Verify(config?, {planned =}?)   lua/devplan/verify.lua
M.Verify = require("devplan.verify").pass

return M
