-- The report and PartitionByVirtualDevice read a planned module's devices
-- from the module itself (src/planner/lexical.c: what PlanDevices' capture
-- writes down), not by planning it again; where the module does not say
-- them all that way they plan it again as before. Checked here: both ways
-- give the same report (text and JSON) and the same partition (module and
-- regions) on generated programs, their plans and inputs; planned modules
-- are read from themselves; modules that are not planned, or planned
-- otherwise, are planned again.
local dp = require "devplan"
local core = require "devplan.core"
local t = require "devplan.testing"
local part = require "devplan.passes.partition_by_virtual_device"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local relaygen = require "relaygen"
local dataflow = require "relaygen_dataflow"
local props = require "props"
local gen = dofile((dp.root or ".") .. "/bench/gen.lua")

local QUICK = os.getenv("DEVPLAN_QUICK") ~= nil

-- The report of m, its devices read from m (how nil) or by planning it again ("replan").
local function report(m, cfg, how)
  local scan_of = core.planner.report_scan
  core.planner.report_scan = function(a, b) return scan_of(a, b, how) end
  local ok, r = pcall(dp.planner.report, m, cfg)
  core.planner.report_scan = scan_of
  if not ok then return "error: " .. tostring(r) end
  return r:text() .. r:json()
end

local function replanned(m, cfg) return core.planner.report_scan(m, cfg):replanned() end

-- The partition of m as text: the module and its regions.
local function partition(m, cfg, how)
  local ok, parted, held = pcall(core.partition, m, cfg, "virtual_device", how)
  if not ok then return "error: " .. tostring(parted) end
  local regions = {}
  for i = 1, held:count() do
    local name, caller, vd = held:info(i)
    regions[i] = {name = name, caller = caller, virtual_device = vd, target = vd.target,
                  nodes = held:list(i, "nodes"), inputs = held:list(i, "inputs"), outputs = held:list(i, "outputs")}
  end
  return dp.astext(parted) .. part.regions_text(regions)
end

local function same_both_ways(name, m, cfg)
  local a, b = report(m, cfg), report(m, cfg, "replan")
  assert(a == b, name .. ": the report differs\n" .. b .. "\n---- read from the module:\n" .. a)
  local c, d = partition(m, cfg), partition(m, cfg, "replan")
  assert(c == d, name .. ": the partition differs\n" .. d .. "\n---- read from the module:\n" .. c)
end

describe("devices read from a planned module", function()
  it("give the report and partition planning it again gives, on generated programs", function()
    local stats = {relaygen = {plans = 0, read = 0}, dataflow = {plans = 0, read = 0}}
    local shared = dp.passes.ShareCopies()
    local function each(kind, name, mod, cfg)
      local stat = stats[kind]
      same_both_ways(name .. " (input)", mod, cfg)
      for _, o in ipairs{{"tvm"}, {"min_bytes", {placement = "min_bytes"}}, {"first", {resolve_conflicts = "tvm"}}} do
        local ok, planned = pcall(dp.passes.PlanDevices(cfg, o[2]), mod)
        if ok then
          stat.plans = stat.plans + 1
          if not replanned(planned, cfg) then stat.read = stat.read + 1 end
          same_both_ways(name .. " / " .. o[1], planned, cfg)
          same_both_ways(name .. " / " .. o[1] .. " shared", shared(planned), cfg)
          local okp, parted = pcall(dp.passes.PartitionByVirtualDevice{config = cfg}, planned)
          if okp then same_both_ways(name .. " / " .. o[1] .. " partitioned", parted, cfg) end
        end
      end
    end
    for seed = 1, QUICK and 40 or 200 do
      local ok, mod = pcall(dp.parse, relaygen.text(relaygen.program(seed)), props.META)
      if ok then each("relaygen", "relaygen " .. seed, mod, props.CONFIG) end
    end
    for seed = 1, QUICK and 20 or 80 do
      local ok, mod = pcall(dp.parse, dataflow.program(seed, {devices = 3, max_calls = 5}).text, props.META)
      if ok then each("dataflow", "dataflow " .. seed, mod, props.CONFIG) end
    end
    -- dataflow programs' plans are all read from themselves; of relaygen's
    -- (closures called through variables, references, match, primitive
    -- functions, the memory dialect) about two in five
    local r, d = stats.relaygen, stats.dataflow
    assert.is_true(d.plans > 0 and d.read == d.plans, d.read .. " of " .. d.plans .. " dataflow plans read")
    assert.is_true(r.read >= r.plans * 0.3, r.read .. " of " .. r.plans .. " relaygen plans read")
  end)

  it("reads the generated workloads' plans from themselves", function()
    local cfg = t.config("cuda")
    for _, shape in ipairs{"chain", "let", "branchy"} do
      local mod = dp.parse(shape == "branchy" and gen.branchy(300, false) or gen[shape](300), t.META)
      local planned = dp.passes.PlanDevices(cfg)(mod)
      assert.is_false(replanned(planned, cfg), shape)
      assert.is_false(replanned(planned, nil), shape .. " (the default configuration)")
      same_both_ways(shape, planned, cfg)
    end
  end)

  it("plans again a module that does not say its devices as a plan by the configuration does", function()
    local cfg = t.config("cuda")
    local T = "Tensor[(5, 7), float32]"
    local function mod(body, fnvd)
      return dp.parse(("#[version = \"0.0.5\"]\ndef @main(%%a {virtual_device=meta[VirtualDevice][0]}: %s, "
        .. "%%b {virtual_device=meta[VirtualDevice][0]}: %s, virtual_device=meta[VirtualDevice][%d]) {\n%s\n}\n")
        :format(T, T, fnvd, body), t.META)
    end
    local cases = {
      -- as planned: read from the module
      {mod("  %0 = add(%a, %b);\n  multiply(%0, %0)", 0), false},
      {mod("  %0 = add(%a, %b);\n  %1 = device_copy(%0, src_virtual_device=meta[VirtualDevice][0], "
        .. "dst_virtual_device=meta[VirtualDevice][1]);\n  %2 = multiply(%1, %1);\n  "
        .. "on_device(%2, virtual_device=meta[VirtualDevice][1], constrain_result=True)", 1), false},
      -- not planned: an on_device that is not fixed
      {mod("  %0 = add(%a, %b);\n  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1]);\n  multiply(%1, %1)", 0), true},
      -- inconsistent: a GPU function body computed from CPU parameters without a copy
      {mod("  %0 = add(%a, %b);\n  multiply(%0, %0)", 1), true},
      -- a copy whose source is not where its argument lives
      {mod("  %0 = add(%a, %b);\n  %1 = device_copy(%0, src_virtual_device=meta[VirtualDevice][1], "
        .. "dst_virtual_device=meta[VirtualDevice][0]);\n  multiply(%1, %1)", 0), true},
    }
    for i, c in ipairs(cases) do
      assert.equal(c[2], replanned(c[1], cfg), "case " .. i)
      same_both_ways("case " .. i, c[1], cfg)
    end
  end)
end)
