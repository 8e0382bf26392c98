-- Runs generated programs whose copies can move (fuzz/relaygen_copies.lua)
-- through MoveCopies' properties (fuzz/props_copies.lua), and sums the
-- copies executed before and after.
--
--   bin/devplan fuzz/copies_run.lua [--n N] [--seed S] [--devices 2|3] [--quiet]
--   bin/devplan fuzz/copies_run.lua --polymorphic [--n N] ...   helpers with no device
--       annotations called on several devices, planned with PlanDevices'
--       polymorphic option (props_copies.check_poly)
--   bin/devplan fuzz/copies_run.lua --recompute [--n N] ...    values cheap to compute
--       anywhere, planned with PlanDevices' recompute option (check_recompute)
--   bin/devplan fuzz/copies_run.lua --file PROGRAM.relay    (the properties of one text,
--                                                             no runs)
--
-- Seeds S .. S+N-1 (defaults: N 1000, S 1). Each failing seed is printed
-- with its property and what failed (regenerate it with
-- `gen.program(seed)`); the exit status is 1 when any failed.
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen_copies"
local pc = require "props_copies"

local opts = {n = 1000, seed = 1, devices = 2}
local i = 1
while i <= #arg do
  local a = arg[i]
  local function value()
    i = i + 1
    return arg[i] or error("copies_run: " .. a .. " needs a value")
  end
  if a == "--n" then opts.n = math.tointeger(tonumber(value()))
  elseif a == "--seed" then opts.seed = math.tointeger(tonumber(value()))
  elseif a == "--devices" then opts.devices = math.tointeger(tonumber(value()))
  elseif a == "--file" then opts.file = value()
  elseif a == "--quiet" then opts.quiet = true
  elseif a == "--polymorphic" then opts.poly = true
  elseif a == "--recompute" then opts.recompute = true
  else error("copies_run: unknown option " .. a) end
  i = i + 1
end

if opts.file then
  local f = assert(io.open(opts.file, "rb"))
  local text = f:read("a")
  f:close()
  local failure = pc.check(text, nil)
  if failure then
    print(failure.property .. ": " .. failure.detail)
    os.exit(1)
  end
  print("ok")
  os.exit(0)
end

if opts.recompute then
  local total = {programs = 0, plans = 0, failed = 0, recomputed = 0, before = 0, after = 0, runs = 0}
  local by_property = {}
  for seed = opts.seed, opts.seed + opts.n - 1 do
    local text, info = gen.program(seed, {devices = opts.devices, constants = true})
    local failure, st = pc.check_recompute(text, info.inputs)
    total.programs = total.programs + 1
    for _, k in ipairs{"plans", "recomputed", "before", "after", "runs"} do total[k] = total[k] + st[k] end
    if failure then
      total.failed = total.failed + 1
      by_property[failure.property] = (by_property[failure.property] or 0) + 1
      if not opts.quiet or by_property[failure.property] <= 3 then
        print(string.format("seed %d: %s: %s", seed, failure.property, (failure.detail:gsub("\n.*", " ..."))))
      end
    end
  end
  print(string.format("%d programs, %d plans (TVM's placement and min_bytes), %d failed; %d values recomputed; "
    .. "%d runs: %d copies executed without recompute, %d with it", total.programs, total.plans, total.failed,
    total.recomputed, total.runs, total.before, total.after))
  for p, n in pairs(by_property) do print("  " .. p .. ": " .. n) end
  os.exit(total.failed == 0 and 0 or 1)
end

if opts.poly then
  local total = {programs = 0, plain = 0, poly = 0, failed = 0, specialised = 0, before = 0, after = 0, runs = 0}
  local by_property = {}
  for seed = opts.seed, opts.seed + opts.n - 1 do
    local text, info = gen.program(seed, {devices = opts.devices, free_signatures = true})
    local failure, st = pc.check_poly(text, info.inputs)
    total.programs = total.programs + 1
    for _, k in ipairs{"plain", "poly", "specialised", "before", "after", "runs"} do total[k] = total[k] + st[k] end
    if failure then
      total.failed = total.failed + 1
      by_property[failure.property] = (by_property[failure.property] or 0) + 1
      if not opts.quiet or by_property[failure.property] <= 3 then
        print(string.format("seed %d: %s: %s", seed, failure.property, (failure.detail:gsub("\n.*", " ..."))))
      end
    end
  end
  print(string.format("%d programs: TVM's rules plan %d, polymorphic planning %d (%d functions specialised); "
    .. "%d failed; on the runs both plan, %d copies executed by TVM's plan, %d by the polymorphic one",
    total.programs, total.plain, total.poly, total.specialised, total.failed, total.before, total.after))
  for p, n in pairs(by_property) do print("  " .. p .. ": " .. n) end
  os.exit(total.failed == 0 and 0 or 1)
end

local total = {programs = 0, skipped = 0, failed = 0, runs = 0, before = 0, after = 0, fewer = 0,
               bytes_before = 0, bytes_after = 0, changed = 0}
local by_property = {}
local clock = os.clock()
for seed = opts.seed, opts.seed + opts.n - 1 do
  local text, info = gen.program(seed, {devices = opts.devices})
  local failure, st = pc.check(text, info.inputs)
  total.programs = total.programs + 1
  total.skipped = total.skipped + st.skipped
  if failure then
    total.failed = total.failed + 1
    by_property[failure.property] = (by_property[failure.property] or 0) + 1
    if not opts.quiet or by_property[failure.property] <= 3 then
      print(string.format("seed %d: %s: %s", seed, failure.property, (failure.detail:gsub("\n.*", " ..."))))
    end
  else
    for _, k in ipairs{"runs", "before", "after", "fewer", "bytes_before", "bytes_after"} do
      total[k] = total[k] + st[k]
    end
    if st.before > st.after then total.changed = total.changed + 1 end
  end
end
print(string.format("%d programs (%d not planned by TVM's rules, skipped), %d failed; %d runs: %d copies "
  .. "executed before MoveCopies, %d after (%d bytes, %d bytes); %d runs and %d programs copy less; %.1f s",
  total.programs, total.skipped, total.failed, total.runs, total.before, total.after, total.bytes_before,
  total.bytes_after, total.fewer, total.changed, os.clock() - clock))
for p, n in pairs(by_property) do print("  " .. p .. ": " .. n) end
os.exit(total.failed == 0 and 0 or 1)
