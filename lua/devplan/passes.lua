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
--       placement = "latency"     the plan whose modelled schedule finishes
--                                 first (cost =, bandwidth =, exact =, effort =:
--                                 dp.schedule.place, docs/latency.md)
--   dp.passes.ShareCopies()   one device_copy per value and pair of devices
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
  local run
  if opts.placement == "latency" then
    local lopts = planner.latency_options(opts)
    run = function(mod) return require("devplan.schedule").place(mod, config, lopts).planned end
  elseif planner.is_tvm(opts) then
    run = function(mod) return planner.plan(mod, config) end
  else
    run = function(mod) return planner.plan_with(mod, config, opts) end
  end
  local p = pass.new("PlanDevices", run, opts)
  p.config = config -- what the verifier checks the plan against
  return p
end

-- ShareCopies: one device_copy per value and pair of devices (of a planned
-- module; src/planner/share.c). PlanDevices copies once per use, as TVM.
function M.ShareCopies()
  return pass.new("ShareCopies", planner.share_copies)
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
