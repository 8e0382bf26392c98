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
local runner = require "runner"

local opts = runner.options("copies_run", arg, {n = 1000, seed = 1, devices = 2},
  {"n", "seed", "devices", "file", "quiet"}, {["--polymorphic"] = "poly", ["--recompute"] = "recompute"})

if opts.file then
  local failure = pc.check(runner.read(opts.file), nil)
  if failure then
    print(failure.property .. ": " .. failure.detail)
    os.exit(1)
  end
  print("ok")
  os.exit(0)
end

-- The three runs: what the generator makes, the properties checked, the
-- counts summed (of every program, or only of those that passed) and the
-- summary line.
local MODES = {
  recompute = {
    gen = {constants = true}, check = pc.check_recompute, always = true,
    keys = {"plans", "recomputed", "before", "after", "runs"},
    summary = function(t)
      return string.format("%d programs, %d plans (TVM's placement and min_bytes), %d failed; %d values "
        .. "recomputed; %d runs: %d copies executed without recompute, %d with it", t.programs, t.plans,
        t.failed, t.recomputed, t.runs, t.before, t.after)
    end,
  },
  poly = {
    gen = {free_signatures = true}, check = pc.check_poly, always = true,
    keys = {"plain", "poly", "specialised", "before", "after", "runs"},
    summary = function(t)
      return string.format("%d programs: TVM's rules plan %d, polymorphic planning %d (%d functions "
        .. "specialised); %d failed; on the runs both plan, %d copies executed by TVM's plan, %d by the "
        .. "polymorphic one", t.programs, t.plain, t.poly, t.specialised, t.failed, t.before, t.after)
    end,
  },
  move = {
    gen = {}, check = pc.check, always = false,
    keys = {"runs", "before", "after", "fewer", "bytes_before", "bytes_after"},
    summary = function(t)
      return string.format("%d programs (%d not planned by TVM's rules, skipped), %d failed; %d runs: %d "
        .. "copies executed before MoveCopies, %d after (%d bytes, %d bytes); %d runs and %d programs copy "
        .. "less; %.1f s", t.programs, t.skipped, t.failed, t.runs, t.before, t.after, t.bytes_before,
        t.bytes_after, t.fewer, t.changed, os.clock() - t.clock)
    end,
  },
}

local mode = MODES[opts.recompute and "recompute" or opts.poly and "poly" or "move"]
local total = {programs = 0, failed = 0, skipped = 0, changed = 0, clock = os.clock()}
for _, k in ipairs(mode.keys) do total[k] = 0 end
local by_property = {}
for seed = opts.seed, opts.seed + opts.n - 1 do
  local gen_opts = {devices = opts.devices}
  for k, v in pairs(mode.gen) do gen_opts[k] = v end
  local text, info = gen.program(seed, gen_opts)
  local failure, st = mode.check(text, info.inputs)
  total.programs = total.programs + 1
  total.skipped = total.skipped + (st.skipped or 0)
  if failure then
    total.failed = total.failed + 1
    by_property[failure.property] = (by_property[failure.property] or 0) + 1
    if not opts.quiet or by_property[failure.property] <= 3 then
      print(string.format("seed %d: %s: %s", seed, failure.property, (failure.detail:gsub("\n.*", " ..."))))
    end
  end
  if mode.always or not failure then
    for _, k in ipairs(mode.keys) do total[k] = total[k] + st[k] end
    if not mode.always and st.before > st.after then total.changed = total.changed + 1 end
  end
end
print(mode.summary(total))
for p, n in pairs(by_property) do print("  " .. p .. ": " .. n) end
os.exit(total.failed == 0 and 0 or 1)
