-- The properties of MoveCopies (issue 20), checked on a program's text by
-- fuzz/copies_run.lua and spec/plan_move_copies_spec.lua:
--
--   local pc = require "props_copies"            -- fuzz/ on package.path
--   local failure, stats = pc.check(text, runs)  -- runs: @main's arguments, one table per run
--   -- failure nil when every property holds, else {property =, detail =}
--
-- The program is planned by TVM's rules (dp.passes.PlanDevices; a program
-- they cannot plan is skipped: stats.skipped), then moved
-- (dp.passes.MoveCopies), and
--   move-error   MoveCopies gives a module (never an error)
--   verify       dp.planner.verify accepts the moved module
--   fixed-point  PlanDevices plans the moved module to itself
--   idempotent   MoveCopies moves nothing in the moved module
--   roundtrip    the moved module prints and parses back to itself
-- and on every run (devplan.evaluate runs a module on small tensors):
--   devices      every operator's arguments are on its device (both modules)
--   values       the moved module computes what the planned one did
--   copies       it executes no more copies, and no more bytes copied, on
--                this run (this path) than the planned module
-- stats: {skipped =, runs =, before =, after =, fewer =} (copies summed over
-- the runs, runs with fewer copies).
local dp = require "devplan"
local props = require "props"
local run = require("devplan.evaluate").execute

local M = {}

M.META, M.CONFIG = props.META, props.CONFIG

local equal = require("devplan.evaluate").same
M.equal = equal

local function fail(property, detail) return {property = property, detail = detail} end

local function text_of(e) return type(e) == "table" and e.message or tostring(e) end

-- Checks text; opts.config / opts.meta override the palette's.
function M.check(text, runs, opts)
  opts = opts or {}
  local config, meta = opts.config or M.CONFIG, opts.meta or M.META
  local stats = {skipped = 0, runs = 0, before = 0, after = 0, fewer = 0, bytes_before = 0, bytes_after = 0}
  local ok, mod = pcall(dp.parse, text, meta)
  if not ok then return fail("parse", text_of(mod)), stats end
  local planned
  ok, planned = pcall(dp.passes.PlanDevices(config), mod)
  if not ok then
    stats.skipped = 1
    return nil, stats
  end
  return M.check_planned(planned, runs, opts, stats)
end

-- The properties of MoveCopies on a planned module (check's, from
-- move-error on).
function M.check_planned(planned, runs, opts, stats)
  opts = opts or {}
  local config, meta = opts.config or M.CONFIG, opts.meta or M.META
  stats = stats or {skipped = 0, runs = 0, before = 0, after = 0, fewer = 0, bytes_before = 0, bytes_after = 0}
  local ok, moved, moves = pcall(dp.planner.move, planned, config)
  if not ok then return fail("move-error", text_of(moved)), stats end
  stats.moves = moves
  local v, total = dp.planner.verify(moved, config)
  if total > 0 then return fail("verify", v[1].message), stats end
  local again
  ok, again = pcall(dp.passes.PlanDevices(config), moved)
  if not ok then return fail("fixed-point", "planning the moved module failed: " .. text_of(again)), stats end
  if not dp.structural_equal(again, moved) then
    return fail("fixed-point", "PlanDevices changes the moved module:\n" .. tostring(again)), stats
  end
  local twice
  ok, twice = pcall(dp.planner.move, moved, config)
  if not ok then return fail("idempotent", "moving again failed: " .. text_of(twice)), stats end
  if not dp.structural_equal(twice, moved) then
    return fail("idempotent", "MoveCopies moves the moved module again:\n" .. tostring(twice)), stats
  end
  local re
  ok, re = pcall(dp.parse, tostring(moved), meta)
  if not ok or not dp.structural_equal(re, moved) then
    return fail("roundtrip", ok and "parses to another module" or text_of(re)), stats
  end
  for i, args in ipairs(runs or {}) do
    local ok0, r0 = pcall(run, planned, args)
    local ok1, r1 = pcall(run, moved, args)
    if not ok0 then return fail("devices", "run " .. i .. " of the planned module: " .. tostring(r0)), stats end
    if not ok1 then return fail("devices", "run " .. i .. " of the moved module: " .. tostring(r1)), stats end
    if r0.nviolations > 0 then return fail("devices", "planned, run " .. i .. ": " .. r0.violations[1]), stats end
    if r1.nviolations > 0 then return fail("devices", "moved, run " .. i .. ": " .. r1.violations[1]), stats end
    if not equal(r0.value, r1.value) then return fail("values", "run " .. i .. " computes another value"), stats end
    if r1.copies > r0.copies or r1.bytes > r0.bytes then
      return fail("copies", string.format("run %d copies %d (%d bytes) where the planned module copied %d (%d bytes)",
        i, r1.copies, r1.bytes, r0.copies, r0.bytes)), stats
    end
    stats.runs = stats.runs + 1
    stats.before = stats.before + r0.copies
    stats.after = stats.after + r1.copies
    stats.bytes_before = stats.bytes_before + r0.bytes
    stats.bytes_after = stats.bytes_after + r1.bytes
    if r1.copies < r0.copies then stats.fewer = stats.fewer + 1 end
  end
  return nil, stats
end

-- Recompute instead of copy (PlanDevices {recompute = true}, with TVM's
-- placement and with min_bytes), checked on a program's text against the
-- same placement without it:
--   recompute-error  where that plans, so does recompute
--   verify, fixed-point, roundtrip   of the plan with recompute
--   devices, values  every run: arguments on their devices, the same value
--   copies       no run copies more than the plan without recompute
-- stats: {plans =, recomputed =, before =, after =}.
function M.check_recompute(text, runs, opts)
  opts = opts or {}
  local config, meta = opts.config or M.CONFIG, opts.meta or M.META
  local stats = {plans = 0, recomputed = 0, before = 0, after = 0, runs = 0}
  local ok, mod = pcall(dp.parse, text, meta)
  if not ok then return fail("parse", text_of(mod)), stats end
  for _, placement in ipairs{"tvm", "min_bytes"} do
    local okp, plain = pcall(dp.passes.PlanDevices(config, {placement = placement}), mod)
    if okp then
      local okr, rc = pcall(dp.passes.PlanDevices(config, {placement = placement, recompute = true}), mod)
      if not okr then return fail("recompute-error", placement .. ": " .. text_of(rc)), stats end
      stats.plans = stats.plans + 1
      stats.recomputed = stats.recomputed + #dp.planner.recomputed(rc)
      local v, total = dp.planner.verify(rc, config)
      if total > 0 then return fail("verify", placement .. ": " .. v[1].message), stats end
      local again
      ok, again = pcall(dp.passes.PlanDevices(config), rc)
      if not ok or not dp.structural_equal(again, rc) then
        return fail("fixed-point", placement .. ": " .. (ok and "TVM's rules change it" or text_of(again))), stats
      end
      if placement == "min_bytes" then
        ok, again = pcall(dp.passes.PlanDevices(config, {placement = "min_bytes", recompute = true}), rc)
        if not ok or not dp.structural_equal(again, rc) then
          return fail("fixed-point", "min_bytes with recompute changes its own plan"), stats
        end
      end
      local re
      ok, re = pcall(dp.parse, tostring(rc), meta)
      if not ok or not dp.structural_equal(re, rc) then return fail("roundtrip", placement), stats end
      for i, args in ipairs(runs or {}) do
        local ok0, r0 = pcall(run, plain, args)
        local ok1, r1 = pcall(run, rc, args)
        if not ok0 or not ok1 then return fail("devices", tostring(ok0 and r1 or r0)), stats end
        if r1.nviolations > 0 then return fail("devices", placement .. ", run " .. i .. ": " .. r1.violations[1]), stats end
        if not equal(r0.value, r1.value) then return fail("values", placement .. ", run " .. i), stats end
        if r1.copies > r0.copies then
          return fail("copies", string.format("%s, run %d: %d copies, %d without recompute", placement, i, r1.copies,
            r0.copies)), stats
        end
        stats.before = stats.before + r0.copies
        stats.after = stats.after + r1.copies
        stats.runs = stats.runs + 1
      end
    end
  end
  return nil, stats
end

-- Device-polymorphic planning (PlanDevices {polymorphic = true}), checked
-- on a program's text:
--   poly-error   where TVM's rules plan, polymorphic planning plans too
--   verify, fixed-point, roundtrip   as above, of the polymorphic plan
--   devices, values   every run of it: arguments on their devices, the value
--                of TVM's plan (or, where that is a conflict, of the program
--                run without devices)
--   copies       no run copies more than TVM's plan did
--   move         MoveCopies after it keeps the properties of check
-- stats: {plain =, poly = (plans made), specialised =, before =, after =}.
function M.check_poly(text, runs, opts)
  opts = opts or {}
  local config, meta = opts.config or M.CONFIG, opts.meta or M.META
  local stats = {plain = 0, poly = 0, specialised = 0, before = 0, after = 0, runs = 0}
  local ok, mod = pcall(dp.parse, text, meta)
  if not ok then return fail("parse", text_of(mod)), stats end
  local okp, plain = pcall(dp.passes.PlanDevices(config), mod)
  local okq, poly = pcall(dp.passes.PlanDevices(config, {polymorphic = true}), mod)
  if okp then stats.plain = 1 end
  if not okq then
    if okp then return fail("poly-error", text_of(poly)), stats end
    return nil, stats
  end
  stats.poly = 1
  local rep = dp.planner.specialisations(poly)
  stats.specialised = rep.specialised
  local v, total = dp.planner.verify(poly, config)
  if total > 0 then return fail("verify", v[1].message), stats end
  local again
  ok, again = pcall(dp.passes.PlanDevices(config), poly)
  if not ok or not dp.structural_equal(again, poly) then
    return fail("fixed-point", ok and "PlanDevices changes the polymorphic plan" or text_of(again)), stats
  end
  local re
  ok, re = pcall(dp.parse, tostring(poly), meta)
  if not ok or not dp.structural_equal(re, poly) then return fail("roundtrip", "the polymorphic plan"), stats end
  for i, args in ipairs(runs or {}) do
    local okr, want = pcall(run, okp and plain or mod, args)
    local ok1, r1 = pcall(run, poly, args)
    if not okr then return fail("devices", "run " .. i .. " of the reference: " .. tostring(want)), stats end
    if not ok1 then return fail("devices", "run " .. i .. " of the polymorphic plan: " .. tostring(r1)), stats end
    if r1.nviolations > 0 then return fail("devices", "polymorphic, run " .. i .. ": " .. r1.violations[1]), stats end
    if not equal(want.value, r1.value) then return fail("values", "run " .. i .. " computes another value"), stats end
    if okp and r1.copies > want.copies then
      return fail("copies", string.format("run %d copies %d where TVM's plan copied %d", i, r1.copies, want.copies)), stats
    end
    if okp then
      stats.before = stats.before + want.copies
      stats.after = stats.after + r1.copies
    end
    stats.runs = stats.runs + 1
  end
  local failure = M.check_planned(poly, runs, {config = config, meta = meta})
  if failure then return fail("move", failure.property .. ": " .. failure.detail), stats end
  return nil, stats
end

return M
