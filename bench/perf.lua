-- Every row of issue 23's table in one run: the planner (PlanDevices on the
-- generated chain, let and branchy modules of bench/gen.lua, cold and warm,
-- its planning heap), `devplan plan FILE` end to end, parse, print, the
-- passes around the planner (AnnotateVirtualDevices, ShareCopies,
-- PartitionByVirtualDevice, the report, min_bytes) and 10,000,000-call
-- modules. Each measurement runs in a fresh process (a cold run is what a
-- user waits for; a warm one is the same step run again in that process),
-- so that no row pays for another's garbage or page faults.
--
-- Usage: bin/devplan bench/perf.lua [options]
--   --rows LIST      rows to run (default all but 10m): plan, scale, heap,
--                    cli, parse, print, annotate, share, partition, report,
--                    min_bytes, steps (every other pass at N / 100, N / 10
--                    and N calls), 10m
--   --n N            the size of the rows measured at 1,000,000 calls
--   --old DIR        also run every row with DIR/bin/devplan (a build of
--                    another commit: old and new side by side in one run):
--                    the two alternate process by process, the first of
--                    each pair swapped every other time (old new, new old,
--                    ...: ABBA), so that both meet the same moments of the
--                    host (it takes free pages back: docs/benchmarks.md)
--   --callgrind LIST instructions per call (valgrind's callgrind, at 100,000
--                    calls, or N / 10 if less) of these steps (plan, parse, print, printplan,
--                    printfile, annotate, share, partition, report_text, report_json,
--                    min_bytes, min_bytes4; "all"): counted around the step
--                    alone (dp.debug.callgrind), as --linear counts; a build
--                    without it (--old): a run with the step minus one
--                    without it, the figure marked "~"
--   --repeat N       N fresh processes per measurement (default 1): the best
--                    and the median cold seconds; in the step tables (scale,
--                    partition, steps) the two smaller sizes run 4N and 2N
--                    (cheap; a cold run of a few milliseconds swings most),
--                    the three sizes interleaved: each repeat runs its 4 of
--                    N / 100, 2 of N / 10 and 1 of N calls before the next
--   --linear         after the scale, partition and steps tables: each of
--                    their steps' instructions and simulated last-level
--                    cache misses per call at the three sizes (callgrind,
--                    the step alone; a fixed cache: 32 KiB L1s and the
--                    last level of --ll) and its minor page faults per 1,000
--                    calls: deterministic, where seconds swing with the host
--                    (an --old build without dp.debug.callgrind: a difference
--                    of two runs, the row marked "~")
--   --ll MiB         the last level --linear simulates (default 8, 16-way; a
--                    power of two): this machine's effective one as
--                    bench/chase.c measures it (a pointer chase: 20 ns a read
--                    in 4 MiB, 40 in 8, 157 in 16), not what the virtual CPU
--                    reports; bench/misses.sh counts one step the same way
--   --settle S       wait S seconds before each fresh process (the host then
--                    takes back more of the pages the last one freed, so
--                    that small sizes pay first touches as large ones do;
--                    see docs/benchmarks.md, fresh pages)
--   --hot-pages MB   each fresh process first runs bin/hotpages MB (from
--                    bench/hotpages.c: touches MB MiB and exits) just
--                    before its step, and each command (cli, 10m) just
--                    before it starts, so that every size finds its fresh
--                    pages among those the kernel was just given back, none
--                    among those the host took (docs/benchmarks.md, fresh
--                    pages): the step's own cost, as on a machine without
--                    a balloon. MB: more than the step's peak (1000 at 1M)
--   --cpu N          each fresh process and command runs on CPU N alone
--                    (taskset): unpinned, the scheduler moving a 1M-call step
--                    between the two cores made its user seconds 0.26 or
--                    0.47 s from one run to the next
-- Columns: CPU seconds (os.clock around the step alone; the shared machine's
-- load is printed first: wall times on it are noisy, instructions are not),
-- peak RSS where a whole command is measured, and the ratio to the goal's
-- reference where the goal is relative (x plan: the time over PlanDevices'
-- on the same module). The modules are written once to bench/out/.

-- ------------------------------------------------------- the pure logic
-- (loadfile("bench/perf.lua")("--lib") returns it: spec/bench_perf_spec.lua)
local M = {}

-- The options of args (a list): a table, or an error naming the option.
function M.options(args)
  local opts = {rows = "plan,scale,heap,cli,parse,print,annotate,share,partition,report,min_bytes,steps",
                n = 1000000, ["repeat"] = 1, settle = 0, linear = false,
                ["hot-pages"] = 0, cpu = -1, ll = 8}
  local i = 1
  while args[i] do
    local a = args[i]
    if a == "--rows" or a == "--old" or a == "--n" or a == "--repeat" or a == "--callgrind" or a == "--settle"
      or a == "--hot-pages" or a == "--cpu" or a == "--ll" then
      opts[a:sub(3)] = assert(args[i + 1], a .. " needs a value")
      i = i + 2
    elseif a == "--linear" then
      opts.linear = true
      i = i + 1
    else error("perf.lua: unknown option " .. a .. " (see the header of bench/perf.lua)") end
  end
  opts.n = math.tointeger(tonumber(opts.n))
  assert(opts.n and opts.n >= 100, "--n needs a count of calls (100 or more)")
  opts["repeat"] = math.tointeger(tonumber(opts["repeat"]))
  assert(opts["repeat"] and opts["repeat"] >= 1, "--repeat needs a count of processes (1 or more)")
  opts.settle = assert(tonumber(opts.settle), "--settle needs seconds")
  local hot = math.tointeger(tonumber(opts["hot-pages"]))
  assert(hot and hot >= 0, "--hot-pages needs a size in MiB (0: none)")
  opts["hot-pages"] = hot
  opts.cpu = math.tointeger(tonumber(opts.cpu))
  assert(opts.cpu and opts.cpu >= -1, "--cpu needs a CPU number")
  local ll = math.tointeger(tonumber(opts.ll))
  assert(ll and ll >= 1 and ll <= 65536 and ll & (ll - 1) == 0, "--ll needs a size in MiB (a power of two)")
  opts.ll = ll
  return opts
end

-- The median of a list of numbers (the mean of the two middle ones).
function M.median(t)
  local s = {table.unpack(t)}
  table.sort(s)
  local k = #s
  if k == 0 then return nil end
  return k % 2 == 1 and s[(k + 1) // 2] or (s[k // 2] + s[k // 2 + 1]) / 2
end

-- The order of the fresh processes of one measurement: a list of {size,
-- build} (indexes into sizes and 1..nbuilds). sizes[i] is how many runs
-- size i takes per repeat; each repeat runs every size's in turn (the
-- sizes interleaved: a host that slows down meets them all), and each run
-- is one process of every build, the first of the pair swapped each time
-- the size runs again (old new, new old, old new: ABBA; M.pair(n, k): the
-- k-th pair's builds in order).
function M.pair(nbuilds, k)
  local t = {}
  for b = 1, nbuilds do t[b] = k % 2 == 0 and nbuilds + 1 - b or b end
  return t
end
function M.schedule(nbuilds, sizes, reps)
  local out, k = {}, {}
  for _ = 1, reps do
    for s, times in ipairs(sizes) do
      for _ = 1, times do
        k[s] = (k[s] or 0) + 1
        for _, b in ipairs(M.pair(nbuilds, k[s])) do out[#out + 1] = {s, b} end
      end
    end
  end
  return out
end

-- The figures of a measurement's runs (each {cold, warm, heap, user,
-- sys}; -1: unknown): {cold = the best, med = the median cold, warm = the
-- best, heap = the largest, user =, sys = the means (-1 where a run did
-- not split its seconds)}. The kernel splits a run's time between user
-- and system by sampling at ticks: the mean of N runs is an unbiased
-- split, the best run's (or the least of N) is not.
function M.summary(runs)
  local r = {cold = math.huge, warm = math.huge, heap = 0, user = 0, sys = 0}
  local colds, split = {}, true
  for _, x in ipairs(runs) do
    r.cold, r.warm, r.heap = math.min(r.cold, x[1]), math.min(r.warm, x[2]), math.max(r.heap, x[3])
    colds[#colds + 1] = x[1]
    split = split and x[4] >= 0 and x[5] >= 0
    r.user, r.sys = r.user + x[4], r.sys + x[5]
  end
  r.med = M.median(colds)
  if split and #runs > 0 then r.user, r.sys = r.user / #runs, r.sys / #runs else r.user, r.sys = -1, -1 end
  return r
end

-- "x" of a step ("?" where unknown).
local function ratio(a, b) return (a >= 0 and b > 0) and ("%7.1f"):format(a / b) or "      ?" end

-- A step table's figures of one build at its three sizes (summaries a, b,
-- c): the best cold seconds and their two steps, the medians and theirs,
-- the two steps of the mean user seconds, the mean system seconds at the
-- largest.
function M.three(a, b, c)
  return ("%9.4f %9.4f %9.3f %7.1f %7.1f %9.4f %9.4f %9.3f %7.1f %7.1f %s %s %s"):format(a.cold, b.cold, c.cold,
    b.cold / a.cold, c.cold / b.cold, a.med, b.med, c.med, b.med / a.med, c.med / b.med, ratio(b.user, a.user),
    ratio(c.user, b.user), c.sys >= 0 and ("%7.3f"):format(c.sys) or "      ?")
end

if (...) == "--lib" then return M end

local dp = require "devplan"

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "bench"
local root = here .. "/.."
local gen = dofile(here .. "/gen.lua")
local OUT = root .. "/bench/out"

-- ---------------------------------------------------------------- the child

-- One step in this process: prints "secs warm_secs heap_bytes" (heap: the
-- peak heap growth when bench/heapcount.c is preloaded, else 0). Mode
-- "once": the step runs once (no warm run); "count": once, with callgrind
-- switched on around the step alone (dp.debug.callgrind); "skipgc":
-- everything but the step runs, with the full collection before it
-- ("once" minus it: the step alone, for a build without
-- dp.debug.callgrind). The sixth field printed: the step's minor page
-- faults.
local function child(row, shape, n, mode)
  local skip, count = mode == "skipgc", mode == "count"
  local once = mode == "once" or count
  local testing = require "devplan.testing"
  local config = testing.config("cuda")
  local function read(path)
    local f = assert(io.open(path, "rb"))
    local t = f:read("a")
    f:close()
    return t
  end
  local file = ("%s/%s_%d.relay"):format(OUT, shape, n)
  local text = read(file)
  -- The first timed run's user and system seconds apart (-1: a build
  -- without dp.debug.rusage, run by --old).
  local rusage = dp.debug and dp.debug.rusage
  local split
  local function time(f, ...)
    if skip then
      collectgarbage() -- (all but the step: callgrind's baseline)
      return 0
    end
    local hot = not split and os.getenv("PERF_HOT_PAGES") -- (--hot-pages: just before the step)
    if hot then assert(os.execute(hot), "perf.lua: " .. hot .. " failed") end
    collectgarbage()
    collectgarbage("stop")
    os.getenv("DEVPLAN_HEAP_RESET")
    -- (DEVPLAN_PERF_NO_COUNT: as a build without dp.debug.callgrind, for
    -- spec/bench_perf_spec.lua)
    local cg = count and not split and not os.getenv("DEVPLAN_PERF_NO_COUNT") and dp.debug.callgrind
    local u0 = rusage and rusage()
    if cg then cg(true) end
    local t0 = os.clock()
    local r = f(...)
    local s = os.clock() - t0
    if cg then cg(false) end
    local u1 = rusage and rusage()
    split = split or (u1 and {u1.user - u0.user, u1.sys - u0.sys, u1.minflt - u0.minflt}) or {-1, -1, -1}
    collectgarbage("restart")
    return s, r
  end
  local heap = function() return tonumber(os.getenv("DEVPLAN_HEAP_PEAK")) or 0 end
  local function report(s1, s2, h)
    split = split or {-1, -1, -1}
    print(s1, s2, h, split[1], split[2], split[3])
  end
  if row == "parse" then
    local s = time(dp.parse, text, testing.META)
    report(s, -1, heap()) -- (no warm run: the text is parsed once)
    return
  end
  local mod = dp.parse(text, testing.META)
  text = nil
  local plan = dp.passes.PlanDevices(config)
  local function twice(f, ...)
    local s1, r = time(f, ...)
    local h = heap()
    r = nil
    local s2 = once and 0 or time(f, ...)
    report(s1, s2, h)
  end
  if row == "plan" or row == "heap" then return twice(plan, mod) end
  if row == "print" then return twice(dp.astext, mod) end
  if row == "annotate" then
    return twice(dp.passes.AnnotateVirtualDevices{add = function() return testing.PALETTE.GPU end}, mod)
  end
  if row == "min_bytes" or row == "min_bytes4" then
    local cfg = row == "min_bytes" and config
      or dp.CompilationConfig{targets = {"llvm", "cuda", "opencl", "vulkan"}, default_device_type = "cuda"}
    return twice(dp.passes.PlanDevices(cfg, {placement = "min_bytes"}), mod)
  end
  local planned = plan(mod)
  if row == "printplan" then return twice(dp.astext, planned) end
  if row == "printfile" then -- (as devplan plan -o prints: no Lua string)
    return twice(function(m) return dp.write_file(OUT .. "/print_out.relay", m) end, planned)
  end
  if row == "share" then return twice(dp.passes.ShareCopies(), planned) end
  if row == "partition" then return twice(dp.passes.PartitionByVirtualDevice{config = config}, planned) end
  if row == "report_text" then return twice(function(m) return dp.planner.report(m, config):text() end, planned) end
  if row == "report_json" then return twice(function(m) return dp.planner.report(m, config):json() end, planned) end
  error("perf.lua: unknown row " .. row)
end

if arg[1] == "--child" then
  child(arg[2], arg[3], tonumber(arg[4]), arg[5])
  -- (no closing of the state: freeing what the step made is not the step,
  -- and would count in callgrind's difference)
  io.stdout:flush()
  os.exit(0)
end

-- ---------------------------------------------------------------- the parent

local opts = M.options(arg)
local ROWS = {}
for r in opts.rows:gmatch("[^,]+") do ROWS[r] = true end
local N = opts.n

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end
local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

-- The module files (written once).
local function module_file(shape, n) return gen.file(OUT, shape, n) end

local HEAPCOUNT = root .. "/bin/heapcount.so"
local function heapcount()
  if not exists(HEAPCOUNT) then
    assert(os.execute("cc -O2 -shared -fPIC -o '" .. HEAPCOUNT .. "' '" .. root .. "/bench/heapcount.c'"))
  end
  return HEAPCOUNT
end

-- --hot-pages: the command that touches that many MiB (built once).
local HOT
if opts["hot-pages"] > 0 then
  local exe = root .. "/bin/hotpages"
  if not exists(exe) then
    assert(os.execute("cc -O2 -o '" .. exe .. "' '" .. root .. "/bench/hotpages.c'"))
  end
  HOT = ("'%s' %d"):format(exe, opts["hot-pages"])
end

-- --cpu: the prefix that runs a command on that CPU alone.
local PIN = opts.cpu >= 0 and ("taskset -c %d "):format(opts.cpu) or ""

-- The builds compared: {label, root}.
local BUILDS = {}
if opts.old then BUILDS[#BUILDS + 1] = {"old", opts.old} end
BUILDS[#BUILDS + 1] = {opts.old and "new" or "", root}
local SCRIPT = here .. "/perf.lua"

-- One fresh process of a step: {cold, warm, heap, user, sys} (-1:
-- unknown). --settle S first waits S seconds, so that more processes find
-- the host's pages as an idle machine leaves them (docs/benchmarks.md:
-- fresh pages).
local function run_once(build, row, shape, n, env)
  if opts.settle > 0 then sh(("sleep %g"):format(opts.settle)) end
  local hot = HOT and ("PERF_HOT_PAGES=\"%s\" "):format(HOT) or ""
  local out = sh(("%s%s %s'%s/bin/devplan' '%s' --child %s %s %d"):format(hot, env or "", PIN, build[2], SCRIPT, row,
    shape, n))
  local a, b, c, u, k = out:match("^(%S+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(%S+)")
  assert(a, "perf.lua: the step " .. row .. " " .. shape .. " failed:\n" .. out)
  return {tonumber(a), tonumber(b), tonumber(c), tonumber(u), tonumber(k)}
end

-- A step of every build at some sizes (sizes: a list of {n, runs per
-- repeat}), in fresh processes in M.schedule's order: [build label][i] =
-- M.summary of size i's runs.
local function measure(row, shape, sizes, env, reps)
  local runs, times = {}, {}
  for i, sz in ipairs(sizes) do
    module_file(shape, sz[1])
    times[i] = sz[2]
  end
  for _, sb in ipairs(M.schedule(#BUILDS, times, reps or opts["repeat"])) do
    local b = BUILDS[sb[2]]
    runs[b[1]] = runs[b[1]] or {}
    local t = runs[b[1]]
    t[sb[1]] = t[sb[1]] or {}
    table.insert(t[sb[1]], run_once(b, row, shape, sizes[sb[1]][1], env))
  end
  local out = {}
  for label, t in pairs(runs) do
    out[label] = {}
    for i in ipairs(sizes) do out[label][i] = M.summary(t[i]) end
  end
  return out
end

-- A step's three sizes, N / 100, N / 10 and N: the best and median cold
-- seconds of each and their steps, the two steps of the user seconds
-- alone, and the system seconds at N.
local function size(n) return n % 1000000 == 0 and (n // 1000000) .. "M" or n % 1000 == 0 and (n // 1000) .. "k" or tostring(n) end
local STEP_COLS = ("%9s %9s %9s %7s %7s %9s %9s %9s %7s %7s %7s %7s %7s"):format(size(N // 100) .. " s",
  size(N // 10) .. " s", size(N) .. " s", "x", "x", size(N // 100) .. " med", size(N // 10) .. " med",
  size(N) .. " med", "x med", "x med", "user x", "x", "sys s")
-- The two smaller sizes take 4x and 2x the processes (their cold runs of
-- a few ms swing most with the host; cheap to repeat).
local SMALL_REPEAT = {4, 2, 1}
local function three_sizes(n) return {{n // 100, SMALL_REPEAT[1]}, {n // 10, SMALL_REPEAT[2]}, {n, SMALL_REPEAT[3]}} end

-- The step alone under callgrind, for --linear and --callgrind alike:
-- its instructions per call; with `cache` (--linear) also its simulated
-- last-level misses per call (a fixed cache: 32 KiB L1s, a last level of
-- --ll MiB, this machine's effective one; valgrind would read what the
-- virtual CPU reports, here 256 MiB direct-mapped) and its minor page
-- faults per 1,000 calls from a native run. Mode "count" switches
-- callgrind on around the step only (dp.debug.callgrind); a build without
-- it (--old) gets a run with the step minus one with all but the step and
-- its collection (mode skipgc), its figures marked "~" (LL misses of two
-- runs differ in more than the step). Returns Ir, LL, faults, approx
-- (nil: callgrind failed).
local CACHE = ("--I1=32768,8,64 --D1=32768,8,64 --LL=%d,16,64"):format(opts.ll << 20)
local function counts(build, row, shape, n, cache)
  module_file(shape, n)
  local file = os.tmpname()
  local function totals(path)
    local f = io.open(path)
    if not f then return nil end
    local ev, tot
    for l in f:lines() do
      ev = l:match("^events:%s*(.*)") or ev
      tot = l:match("^summary:%s*(.*)") or l:match("^totals:%s*(.*)") or tot
    end
    f:close()
    os.remove(path)
    if not (ev and tot) then return nil end
    local t, names = {}, {}
    for e in ev:gmatch("%S+") do names[#names + 1] = e end
    local i = 0
    for v in tot:gmatch("%S+") do i = i + 1; t[names[i]] = tonumber(v) end
    return {t.Ir or 0, (t.ILmr or 0) + (t.DLmr or 0) + (t.DLmw or 0)}
  end
  local function run(mode, atstart)
    sh(("valgrind --tool=callgrind %s --instr-atstart=%s --callgrind-out-file='%s' '%s/bin/devplan' '%s' --child %s %s %d %s >/dev/null 2>&1")
      :format(cache and "--cache-sim=yes " .. CACHE or "", atstart, file, build[2], SCRIPT, row, shape, n, mode))
  end
  run("count", "no")
  local c = totals(file .. ".1")
  os.remove(file)
  local approx = false
  if not c then -- (no dp.debug.callgrind in this build: LL misses are then
    -- a difference of two runs whose caches differ, "~")
    run("once", "yes")
    local with = totals(file)
    run("skipgc", "yes")
    local without = totals(file)
    c = with and without and {with[1] - without[1], with[2] - without[2]}
    approx = true
  end
  os.remove(file)
  if not c then return nil end
  if not cache then return c[1] / n, nil, nil, approx end
  local out = sh(("'%s/bin/devplan' '%s' --child %s %s %d count"):format(build[2], SCRIPT, row, shape, n))
  local flt = tonumber(out:match("^%S+%s+%S+%s+%S+%s+%S+%s+%S+%s+(%S+)"))
  return c[1] / n, c[2] / n, flt and flt >= 0 and flt * 1000 / n or nil, approx
end

-- The --linear table of a step table's rows: per call, instructions and
-- LL misses at the three sizes, and each step's factor (10x the per-call
-- growth: linear is 10, the goal <= 11); faults per 1,000 calls.
local LIN_COLS = ("%8s %8s %8s %6s %6s %7s %7s %7s %6s %6s %6s %6s %6s"):format("Ir", "Ir", "Ir", "x", "x", "LL", "LL",
  "LL", "x", "x", "flt/1k", "flt/1k", "flt/1k")
local function linear_row(build, row, shape, n)
  local ir, ll, fl, approx = {}, {}, {}, false
  for i, m in ipairs{n // 100, n // 10, n} do
    local a
    ir[i], ll[i], fl[i], a = counts(build, row, shape, m, true)
    approx = approx or a
  end
  if not (ir[1] and ir[2] and ir[3]) then return "        ? (callgrind failed)" end
  local function x(a, b) return b > 0 and ("%6.1f"):format(10 * a / b) or "     ?" end
  local function f(v) return v and ("%6.1f"):format(v) or "     ?" end
  return ("%8.0f %8.0f %8.0f %s %s %7.2f %7.2f %7.2f %s %s %s %s %s"):format(ir[1], ir[2], ir[3], x(ir[2], ir[1]),
    x(ir[3], ir[2]), ll[1], ll[2], ll[3], x(ll[2], ll[1]), x(ll[3], ll[2]), f(fl[1]), f(fl[2]), f(fl[3])) .. (approx and " ~" or "")
end
local function linear_header(what, first)
  print("")
  print(("## %s: per call at %s / %s / %s calls (callgrind, the step alone, last level %d MiB; x: 10x the growth per call, goal <= 11)")
    :format(what, size(N // 100), size(N // 10), size(N), opts.ll))
  print(first .. " " .. LIN_COLS)
end

-- A command line: CPU seconds (user + sys) and peak RSS in MB of 10^6 bytes
-- (time's %M is in KiB; a goal "< 300 MB" is read in the stricter unit).
local function command(build, args)
  local out = sh(("%s%s/usr/bin/time -f '@@ %%U %%S %%M' '%s/bin/devplan' %s 2>&1 >/dev/null"):format(
    HOT and PIN .. HOT .. " && " or "", PIN, build[2], args))
  local u, s, m = out:match("@@ (%S+) (%S+) (%d+)")
  assert(u, "perf.lua: the command failed: devplan " .. args .. "\n" .. out)
  return tonumber(u) + tonumber(s), tonumber(m) * 1024 / 1e6, out
end

local function load()
  local f = io.open("/proc/loadavg")
  local l = f and f:read("l") or "?"
  if f then f:close() end
  return l:match("^(%S+ %S+ %S+)") or l
end

print(("bench/perf.lua: %s, load average %s, %s"):format(os.date("!%Y-%m-%d %H:%M UTC"), load(),
  (sh("nproc"):gsub("%s+$", "")) .. " cores"))
if opts.old then print("old: " .. opts.old .. "   new: " .. root) end
if HOT then print(("hot pages: each process starts after one that touched %d MiB (--hot-pages)"):format(opts["hot-pages"])) end
if PIN ~= "" then print(("each process on CPU %d alone (--cpu)"):format(opts.cpu)) end

local function row(fmt, ...) print(fmt:format(...)) end
local SHAPES = {"chain", "let", "branchy"}
-- PlanDevices' summaries, kept for the tables that compare with them:
-- [shape][n] = {reps =, [build label] = M.summary}.
local plan_secs = {}
local function keep_plan(shape, sizes, reps, res)
  plan_secs[shape] = plan_secs[shape] or {}
  for i, sz in ipairs(sizes) do
    local have = plan_secs[shape][sz[1]]
    if not have or have.reps <= reps * sz[2] then
      local k = {reps = reps * sz[2]}
      for _, b in ipairs(BUILDS) do k[b[1]] = res[b[1]][i] end
      plan_secs[shape][sz[1]] = k
    end
  end
end
-- PlanDevices' summary of build at n calls (measured with every build,
-- alternated, where not kept).
local function plan_time(build, shape, n)
  local have = plan_secs[shape] and plan_secs[shape][n]
  if not have then
    local sizes = {{n, 1}}
    keep_plan(shape, sizes, opts["repeat"], measure("plan", shape, sizes))
    have = plan_secs[shape][n]
  end
  return have[build[1]]
end

local function header(title, cols)
  print("")
  print("## " .. title)
  print(cols)
end

local CG = {}
for r in (opts.callgrind or ""):gmatch("[^,]+") do CG[r] = true end
local function ipc(build, r, shape)
  if not (CG[r] or CG.all) then return "" end
  local v, _, _, approx = counts(build, r, shape, math.min(100000, N // 10), false)
  return v and ("%9.0f"):format(v) .. (approx and " ~" or "") or "        ?"
end

-- A step table's rows of one shape: the three sizes of every build,
-- interleaved and alternated (measure), a row for each build. res: the
-- measurement where made before.
local function step_measure(r, shape)
  local sizes = three_sizes(N)
  local res = measure(r, shape, sizes)
  if r == "plan" then keep_plan(shape, sizes, opts["repeat"], res) end
  return res
end
local function step_rows(r, shape, prefix, res)
  res = res or step_measure(r, shape)
  for _, b in ipairs(BUILDS) do
    local t = res[b[1]]
    print(prefix .. (" %-4s "):format(b[1]) .. M.three(t[1], t[2], t[3]))
  end
end

-- (the scale table's runs first: the PlanDevices table then reads its
-- runs at N, measured among the smaller sizes, instead of as many more)
local scale_res = {}
if ROWS.scale then
  for _, shape in ipairs(SHAPES) do scale_res[shape] = step_measure("plan", shape) end
end

if ROWS.plan then
  header(("PlanDevices, %d calls (goal < 0.5 s cold)"):format(N),
    ("%-8s %-4s %9s %9s %9s %9s"):format("shape", "", "cold s", "med s", "warm s", opts.callgrind and "Ir/call" or ""))
  for _, shape in ipairs(SHAPES) do
    for _, b in ipairs(BUILDS) do
      local t = plan_time(b, shape, N)
      row("%-8s %-4s %9.3f %9.3f %9.3f %s", shape, b[1], t.cold, t.med, t.warm, ipc(b, "plan", shape))
    end
  end
end

if ROWS.scale then
  header(("PlanDevices %s -> %s -> %s calls (goal: each step <= 11x, cold)"):format(size(N // 100), size(N // 10), size(N)),
    ("%-8s %-4s %s"):format("shape", "", STEP_COLS))
  for _, shape in ipairs(SHAPES) do step_rows("plan", shape, ("%-8s"):format(shape), scale_res[shape]) end
  if opts.linear then
    linear_header("PlanDevices", ("%-8s %-4s"):format("shape", ""))
    for _, shape in ipairs(SHAPES) do
      for _, b in ipairs(BUILDS) do row("%-8s %-4s %s", shape, b[1], linear_row(b, "plan", shape, N)) end
    end
  end
end

if ROWS.heap then
  header(("PlanDevices' heap at its peak, %d calls (the planned module included; goal let < 300 B/call)"):format(N),
    ("%-8s %-4s %12s"):format("shape", "", "B/call"))
  for _, shape in ipairs(SHAPES) do
    local res = measure("heap", shape, {{N, 1}}, "LD_PRELOAD=" .. heapcount())
    for _, b in ipairs(BUILDS) do row("%-8s %-4s %12.0f", shape, b[1], res[b[1]][1].heap / N) end
  end
end

-- A whole command per build, the first of the pair swapped each shape.
local function commands(shapes, n, args, show)
  for k, shape in ipairs(shapes) do
    local file = module_file(shape, n)
    local got = {}
    for _, i in ipairs(M.pair(#BUILDS, k)) do got[BUILDS[i][1]] = {command(BUILDS[i], args(file))} end
    for _, b in ipairs(BUILDS) do show(shape, b, table.unpack(got[b[1]])) end
  end
  os.remove(OUT .. "/plan_out.relay")
end

if ROWS.cli then
  header(("devplan plan FILE -o OUT, %d calls (goal < 2 s CPU and < 300 MB)"):format(N),
    ("%-8s %-4s %9s %9s"):format("shape", "", "CPU s", "peak MB"))
  commands(SHAPES, N, function(file) return ("plan '%s' -o '%s/plan_out.relay'"):format(file, OUT) end,
    function(shape, b, s, m) row("%-8s %-4s %9.2f %9.0f", shape, b[1], s, m) end)
end

-- A step with a cold, median and warm column, and its time over PlanDevices'.
local function step_table(title, r, shapes, n, goal)
  header(("%s, %d calls (goal %s)"):format(title, n, goal),
    ("%-8s %-4s %9s %9s %9s %9s %9s"):format("shape", "", "cold s", "med s", "warm s", "x plan",
      opts.callgrind and "Ir/call" or ""))
  for _, shape in ipairs(shapes) do
    local res = measure(r, shape, {{n, 1}})
    for _, b in ipairs(BUILDS) do
      local t = res[b[1]][1]
      local p = plan_time(b, shape, n)
      row("%-8s %-4s %9.3f %9.3f %9s %9.1f %s", shape, b[1], t.cold, t.med, t.warm < 0 and "-" or ("%9.3f"):format(t.warm),
        t.cold / p.cold, ipc(b, r, shape))
    end
  end
end

if ROWS.parse then step_table("parse with type inference", "parse", SHAPES, N, "< 1 s") end
if ROWS.print then
  step_table("print the parsed module (dp.astext)", "print", SHAPES, N, "< 0.3 s")
  step_table("print the planned module (dp.astext)", "printplan", SHAPES, N, "< 0.3 s")
  step_table("print the planned module into a file (dp.write_file, as devplan plan -o)", "printfile", SHAPES, N,
    "< 0.3 s")
  os.remove(OUT .. "/print_out.relay")
end
if ROWS.annotate then
  step_table("AnnotateVirtualDevices, one rule (add on the GPU)", "annotate", {"chain", "let"}, N, "within 2x of PlanDevices")
end
if ROWS.share then step_table("ShareCopies on the plan", "share", {"chain", "let"}, N, "within 1x of PlanDevices") end
if ROWS.partition then
  step_table("PartitionByVirtualDevice on the plan", "partition", {"let", "branchy"}, N // 10, "within 3x of PlanDevices")
  header(("PartitionByVirtualDevice %s -> %s -> %s calls (goal: linear, each step <= 11x, cold)"):format(size(N // 100),
    size(N // 10), size(N)),
    ("%-8s %-4s %s"):format("shape", "", STEP_COLS))
  for _, shape in ipairs{"let", "branchy"} do step_rows("partition", shape, ("%-8s"):format(shape)) end
  if opts.linear then
    linear_header("PartitionByVirtualDevice", ("%-8s %-4s"):format("shape", ""))
    for _, shape in ipairs{"let", "branchy"} do
      for _, b in ipairs(BUILDS) do row("%-8s %-4s %s", shape, b[1], linear_row(b, "partition", shape, N)) end
    end
  end
end
if ROWS.report then
  step_table("dp.planner.report(...):text() of the plan", "report_text", {"let", "branchy"}, N // 10, "within 2x of PlanDevices")
  step_table("dp.planner.report(...):json() of the plan", "report_json", {"let", "branchy"}, N // 10, "within 2x of PlanDevices")
end
if ROWS.min_bytes then
  step_table("PlanDevices placement = min_bytes, 2 devices", "min_bytes", {"chain", "let", "branchy"}, N, "within 2x of PlanDevices")
  step_table("PlanDevices placement = min_bytes, 4 targets", "min_bytes4", {"chain", "let", "branchy"}, N, "within 2x of PlanDevices")
end

-- Every other pass from 10k to 100k to N calls (PlanDevices' and
-- PartitionByVirtualDevice's steps have their own tables above).
if ROWS.steps then
  local passes = {
    {"parse", "parse with type inference", SHAPES},
    {"print", "print the parsed module", SHAPES},
    {"printplan", "print the planned module", SHAPES},
    {"printfile", "print the planned module into a file", SHAPES},
    {"annotate", "AnnotateVirtualDevices, one rule", {"chain", "let"}},
    {"share", "ShareCopies", {"chain", "let"}},
    {"report_text", "the report as text", {"let", "branchy"}},
    {"report_json", "the report as JSON", {"let", "branchy"}},
    {"min_bytes", "min_bytes, 2 devices", SHAPES},
    {"min_bytes4", "min_bytes, 4 targets", SHAPES},
  }
  header(("Every other pass, %s -> %s -> %s calls (goal: linear, each step <= 11x, cold)"):format(size(N // 100),
    size(N // 10), size(N)),
    ("%-38s %-8s %-4s %s"):format("pass", "shape", "", STEP_COLS))
  for _, p in ipairs(passes) do
    for _, shape in ipairs(p[3]) do step_rows(p[1], shape, ("%-38s %-8s"):format(p[2], shape)) end
  end
  if opts.linear then
    linear_header("Every other pass", ("%-38s %-8s %-4s"):format("pass", "shape", ""))
    for _, p in ipairs(passes) do
      for _, shape in ipairs(p[3]) do
        for _, b in ipairs(BUILDS) do
          row("%-38s %-8s %-4s %s", p[2], shape, b[1], linear_row(b, p[1], shape, N))
        end
      end
    end
  end
  os.remove(OUT .. "/print_out.relay")
end

if ROWS["10m"] then
  local n = 10 * N
  header(("devplan plan FILE -o OUT --time-passes, %d calls (goal: planning < 6 s, peak < 3 GB)"):format(n),
    ("%-8s %-4s %9s %9s %9s"):format("shape", "", "CPU s", "plan s", "peak MB"))
  commands({"chain", "branchy"}, n,
    function(file) return ("plan '%s' -o '%s/plan_out.relay' --time-passes"):format(file, OUT) end,
    function(shape, b, s, m, out)
      local p = out:match("\n%s*([%d.]+)%s+[%d.]+%%%s+PlanDevices")
      row("%-8s %-4s %9.2f %9s %9.0f", shape, b[1], s, p or "?", m)
    end)
end
