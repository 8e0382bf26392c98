-- PartitionByVirtualDevice: on a planned module, the maximal connected
-- pieces of code on one device become global functions whose
-- virtual_device says where they run (RFC 0038's PartitionBySEScope;
-- src/planner/partition.c, include/devplan/partition.h say how).
--
--   local partition = dp.passes.PartitionByVirtualDevice{by = "virtual_device"}
--   local parted = partition(planned)
--   local parted, regions = partition.partition(planned, ctx?)   -- the pieces as data too
--
-- Each region: {name = "main_ccompiler_0" (the hoisted function), caller =
-- "main" (the function it came from), virtual_device =, target =, nodes =
-- {the planned module's nodes it computes, in post order}, inputs = {the
-- values it reads, in parameter order}, outputs = {the values it gives, in
-- result order}}. Run in a pass context, the pass also leaves them in
-- ctx.regions (the command line's --report prints them).
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

local error, ipairs, pairs, pcall, rawset, setmetatable = error, ipairs, pairs, pcall, rawset, setmetatable
local tostring, type = tostring, type
local table = table
_ENV = nil -- no global is read or written below this line

local M = {}

local BY = {virtual_device = true, target = true, device_type = true}

-- A configuration that canonicalises the module's devices to themselves:
-- one target per kind (the one with a host, as primitive targets are),
-- and their host; the planner's default (llvm, cuda) when there is none.
local function config_of(mod)
  local by_kind, order, host = {}, {}, nil
  for _, t in ipairs(core.partition_targets(mod)) do -- (one walk in C)
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
  local function partition(mod, ctx)
    if not ir.is_module(mod) then
      error("PartitionByVirtualDevice: a module expected, got " .. type(mod), 2)
    end
    local cfg = opts.config or (ir.is_config(ctx and ctx.config) and ctx.config) or config_of(mod)
    local parted, held = core.partition(mod, cfg, by)
    local regions = {}
    for i = 1, held:count() do
      local name, caller, vd = held:info(i)
      -- the lists of nodes are made when first read (a piece may hold a million nodes)
      regions[i] = setmetatable({name = name, caller = caller, virtual_device = vd, target = vd.target}, {
        __index = function(r, k)
          if k ~= "nodes" and k ~= "inputs" and k ~= "outputs" then return nil end
          local list = held:list(i, k)
          rawset(r, k, list)
          return list
        end,
      })
    end
    return parted, regions
  end
  local p = pass.new("PartitionByVirtualDevice", function(mod, ctx)
    local parted, regions = partition(mod, ctx)
    ctx.regions = regions
    return parted
  end, {by = by})
  p.partition = partition
  return p
end

-- ---- the regions as a reader wants them (the command line's --report) ----

-- What a node is: "add at 3:5", "%x", "a tuple", "Composite:npu.conv".
local function describe(e)
  local what
  if e.kind == "var" then return "%" .. e.name end
  if e.kind == "call" then
    local c = e.callee
    what = c.kind == "op" and c.name or c.kind == "global" and ("@" .. c.name)
      or c.kind == "fn" and c.attrs and c.attrs.Composite and ("Composite:" .. tostring(c.attrs.Composite))
      or "call"
  elseif e.kind == "proj" then
    what = "." .. e.index
  elseif e.kind == "const" then
    what = "a constant"
  else
    what = e.kind
  end
  local s = e.span
  return s and (what .. " at " .. s.line .. ":" .. s.col) or what
end

-- The values a region reads through annotations and copies: their names.
local function strip(e)
  while e.kind == "call" and e.callee.kind == "op" and (e.callee.name == "on_device" or e.callee.name == "device_copy") do
    e = e.args[1]
  end
  return e
end

-- Plain tables (for JSON): {name =, caller =, device =, target = its kind, nodes =
-- {"add at 3:5", ...}, inputs = {...}, outputs = {...}}.
function M.regions_data(regions)
  local out = {}
  for i, r in ipairs(regions) do
    local function list(xs, through)
      local l = {}
      for j, e in ipairs(xs) do l[j] = describe(through and strip(e) or e) end
      return l
    end
    out[i] = {name = r.name, caller = r.caller, device = tostring(r.virtual_device),
              target = r.target and r.target.kind or nil,
              nodes = list(r.nodes), inputs = list(r.inputs, true), outputs = list(r.outputs)}
  end
  return out
end

-- The regions as text, one block per region.
function M.regions_text(regions)
  local lines = {("%d region%s hoisted by PartitionByVirtualDevice:"):format(#regions, #regions == 1 and "" or "s")}
  for _, r in ipairs(M.regions_data(regions)) do
    lines[#lines + 1] = ("  @%s  from @%s, runs on %s"):format(r.name, r.caller, r.device)
    lines[#lines + 1] = "    computes: " .. table.concat(r.nodes, ", ")
    lines[#lines + 1] = "    inputs:   " .. (#r.inputs > 0 and table.concat(r.inputs, ", ") or "(none)")
    lines[#lines + 1] = "    outputs:  " .. table.concat(r.outputs, ", ")
  end
  return table.concat(lines, "\n") .. "\n"
end

return M
