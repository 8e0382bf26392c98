-- PartitionByVirtualDevice: on a planned module, the maximal connected
-- pieces of code on one device become global functions whose
-- virtual_device says where they run (RFC 0038's PartitionBySEScope;
-- src/pattern/regions.c, include/devplan/partition.h say how).
--
--   local parted = dp.passes.PartitionByVirtualDevice{by = "virtual_device"}(planned)
--
-- Options:
--   by      "virtual_device" (default): pieces share the whole virtual device;
--           "target": their target; "device_type": their device type
--   config  the CompilationConfig the module was planned with; without it,
--           the pass context's config (ctx.config), else one made from the
--           targets the module's annotations name
local core = require "devplan.core"
local ir = require "devplan.ir"
local pass = require "devplan.pass"

local M = {}

local BY = {virtual_device = true, target = true, device_type = true}

-- The targets a planned module names (function, parameter, on_device and
-- device_copy virtual devices), in first-seen order.
local function targets_of(mod)
  local seen, list = {}, {}
  local function add(vd)
    local t = vd and vd.target
    if t and not seen[t] then
      seen[t] = true
      list[#list + 1] = t
    end
  end
  core.visit(mod, function(e)
    if e.kind == "fn" then add(e.virtual_device)
    elseif e.kind == "var" then add(e.virtual_device)
    elseif e.kind == "call" and e.callee.kind == "op" then
      local a = e.attrs
      if a then add(a.virtual_device); add(a.src_virtual_device); add(a.dst_virtual_device) end
    end
  end)
  return list
end

-- A configuration that canonicalises the module's devices to themselves:
-- one target per kind (the one with a host, as primitive targets are),
-- and their host; the planner's default (llvm, cuda) when there is none.
local function config_of(mod)
  local by_kind, order, host = {}, {}, nil
  for _, t in ipairs(targets_of(mod)) do
    if t.host then host = host or t.host end
    local k = t.kind
    if not by_kind[k] then order[#order + 1] = k end
    if not by_kind[k] or (t.host and not by_kind[k].host) then by_kind[k] = t end
  end
  local targets = {}
  for i, k in ipairs(order) do targets[i] = by_kind[k] end
  if #targets > 0 then
    local ok, cfg = pcall(core.CompilationConfig, {targets = targets, host = host})
    if ok then return cfg end
  end
  return core.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
end

function M.new(opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    error("PartitionByVirtualDevice: options must be a table {by =, config =}, got " .. type(opts), 2)
  end
  for k in pairs(opts) do
    if k ~= "by" and k ~= "config" then
      error("PartitionByVirtualDevice: unknown option '" .. tostring(k) .. "'", 2)
    end
  end
  local by = opts.by or "virtual_device"
  if not BY[by] then
    error("PartitionByVirtualDevice: by must be \"virtual_device\", \"target\" or \"device_type\", got "
      .. tostring(by), 2)
  end
  if opts.config ~= nil and not ir.is_config(opts.config) then
    error("PartitionByVirtualDevice: config must be a CompilationConfig, got " .. type(opts.config), 2)
  end
  return pass.new("PartitionByVirtualDevice", function(mod, ctx)
    if not ir.is_module(mod) then
      error("PartitionByVirtualDevice: a module expected, got " .. type(mod), 2)
    end
    local cfg = opts.config or (ir.is_config(ctx and ctx.config) and ctx.config) or config_of(mod)
    return core.pattern.partition(mod, cfg, by)
  end, {by = by})
end

return M
