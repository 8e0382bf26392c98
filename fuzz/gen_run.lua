-- Runs generated programs (fuzz/relaygen.lua) through the properties of
-- fuzz/props.lua, shrinks each failing one to a small reproducer and
-- writes it to a file.
--
--   bin/devplan fuzz/gen_run.lua [--n N] [--seed S] [--out DIR] [--depth D]
--                                [--no-shrink] [--max-failures K] [--per-cause K] [--quiet]
--   bin/devplan fuzz/gen_run.lua --file PROGRAM.relay     (check one text)
--   bin/devplan fuzz/gen_run.lua --dataflow [--devices 2|3] [--n N] [--seed S]
--       small dataflow programs (fuzz/relaygen_dataflow.lua): every property,
--       and placement by cost against brute force (props.check_placement)
--
-- Seeds S .. S+N-1 (defaults: N 1000, S 1). Only the first K failures
-- (default 50), and with --per-cause the first K of each cause, are shrunk
-- and written. Failures go to DIR (default
-- fuzz/failures/) as PROPERTY-SEED.relay, the shrunk program with a header
-- saying what failed; for the "order" property the reordered text is in
-- PROPERTY-SEED.order.relay. The summary counts outcomes and failures by
-- property, and failures by cause (the first line of what failed, with
-- positions, names and numbers left out) with the first seed of each;
-- the exit status is 1 when any program failed.
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local props = require "props"
local runner = require "runner"

local opts = runner.options("gen_run", arg,
  {n = 1000, seed = 1, out = dp.root .. "/fuzz/failures", shrink = true, max_failures = 50},
  {"n", "seed", "out", "depth", "file", "max-failures", "per-cause", "no-shrink", "quiet", "devices"},
  {["--dataflow"] = "dataflow"})

local checker = props.checker()

if opts.file then
  local failure, res = checker:check(runner.read(opts.file))
  if failure then
    print(("FAIL %s: %s"):format(failure.property, failure.detail))
    os.exit(1)
  end
  print("ok: " .. res.outcome)
  os.exit(0)
end

if opts.dataflow then
  local df = require "relaygen_dataflow"
  local counts, nfail, t0 = {}, 0, os.clock()
  local function count(k) counts[k] = (counts[k] or 0) + 1 end
  for seed = opts.seed, opts.seed + opts.n - 1 do
    local prog = df.program(seed, {devices = opts.devices, max_calls = opts.devices == 3 and 5 or nil})
    local failure = checker:check(prog.text)
    local info
    if not failure then failure, info = props.check_placement(prog, df) end
    if failure then
      nfail = nfail + 1
      count("FAILED " .. failure.property)
      if nfail <= opts.max_failures then print(("FAIL seed %d %s: %s"):format(seed, failure.property, failure.detail)) end
    elseif not info.best then count("no placement (both a conflict)")
    else
      count(info.min_bytes == info.best and "min_bytes = brute force" or "min_bytes > brute force (alpha-expansion)")
      if info.tvm then count(info.tvm > info.min_bytes and "TVM's rules plan, copy more" or "TVM's rules plan, copy as many") end
    end
  end
  print(("%d dataflow programs (seeds %d..%d, %d devices), %.1f s"):format(opts.n, opts.seed,
    opts.seed + opts.n - 1, opts.devices or 2, os.clock() - t0))
  for _, k in ipairs(require("devplan.testing").sorted_keys(counts)) do print(("  %-45s %d"):format(k, counts[k])) end
  print(("%d passed, %d failed"):format(opts.n - nfail, nfail))
  os.exit(nfail == 0 and 0 or 1)
end

local function texts(prog, seed)
  local orders = {}
  for k, order in ipairs(gen.orders(prog, seed)) do orders[k] = gen.text(prog, order) end
  return gen.text(prog), orders
end

local function check(prog, seed)
  local text, orders = texts(prog, seed)
  return checker:check(text, {orders = orders, only_conflicts = true})
end

local function shrink(prog, seed, property)
  return gen.shrink(prog, function(cand)
    local f = check(cand, seed)
    return f ~= nil and f.property == property
  end)
end

local function report(seed, prog, failure)
  os.execute("mkdir -p '" .. opts.out .. "'")
  local small = opts.shrink and shrink(prog, seed, failure.property) or prog
  local f2 = check(small, seed) or failure
  local text, orders = texts(small, seed)
  local header = ("// property %s failed on generated program seed %d (fuzz/relaygen.lua), shrunk.\n"
    .. "// %s\n// Check: bin/devplan fuzz/gen_run.lua --seed %d --n 1   (meta: fuzz/props.lua M.META)\n")
    :format(f2.property, seed, (f2.detail:gsub("\n", "\n// ")), seed)
  local base = ("%s/%s-%d"):format(opts.out, f2.property, seed)
  runner.write(base .. ".relay", header .. text)
  if f2.property == "order" then
    for k, o in ipairs(orders) do runner.write(("%s.order%d.relay"):format(base, k), header .. o) end
  end
  return base .. ".relay", f2
end

local tally = runner.tally(opts)
for seed = opts.seed, opts.seed + opts.n - 1 do
  local prog = gen.program(seed, {depth = opts.depth})
  local failure, res = check(prog, seed)
  if failure then
    if tally:fail(seed, failure) then
      local path, f2 = report(seed, prog, failure)
      print(("FAIL seed %d %s -> %s\n  %s"):format(seed, failure.property, path,
        (f2.detail:sub(1, 300):gsub("\n", "\n  "))))
    end
  else
    tally:ok(res.outcome)
  end
  tally:progress(seed)
end
tally:finish()
