-- Where `devplan plan FILE -o OUT` peaks: a timeline of its memory, step by
-- step, for the generated chain, let and branchy modules of bench/gen.lua
-- (bench/out/SHAPE_N.relay, written once as bench/perf.lua writes them).
-- Each shape runs in a fresh process that takes the command's steps one at
-- a time (lua/devplan/cli.lua's run_pipeline with the default options:
-- read, parse, collect, plan, drop the input, collect, give the heap back,
-- print into the file) and prints after each: the live heap (malloc's
-- bytes in use, counted by bench/heapcount.c, preloaded), the resident set
-- and the peak resident set so far (/proc/self/status' VmRSS and VmHWM).
-- The file it prints is compared with the command's own (cmp): the steps
-- are the command's. (A script keeps up to 32 MiB of freed heap where a
-- command gives it back, src/cli/main.c: the steps' peaks may be a few MB
-- above the command's own peak, printed first.)
--
-- Usage: bin/devplan bench/memory.lua [--n N] [--shapes chain,let,branchy]
-- A step whose peak column grows is where the memory went; the planner's
-- phases inside "plan" are not split (the live heap before and after, and
-- the peak, bound them).
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "bench"
local root = here .. "/.."
local OUT = root .. "/bench/out"

local function status()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+)")) / 1024, tonumber(s:match("VmHWM:%s*(%d+)")) / 1024
end

-- (heapcount.c answers these two names; without it, 0)
local function live() return tonumber(os.getenv("DEVPLAN_HEAP_LIVE") or "0") / 2^20 end

local function child(path, out)
  local dp = require "devplan"
  local core = require "devplan.core"
  local parser = require "devplan.parser"
  local devname = require "devplan.devname"
  os.getenv("DEVPLAN_HEAP_RESET")
  local function mark(step)
    local rss, hwm = status()
    io.stdout:write(("%-24s %9.1f %9.1f %9.1f\n"):format(step, live(), rss, hwm))
  end
  mark("start")
  local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
  local p = dp.pipeline.build("plan_devices(all_conflicts=true)", {config = config})
  p.passes[1].consume_input = true -- (as the command gives its input up: cli.lua's give_up_input)
  local text = assert(core._read_text(path)) -- (as the command reads a regular file)
  mark("read")
  local meta = not parser.has_metadata(text) and devname.palette() or nil
  local mod = dp.parse(text, meta, {source_name = path})
  mark("parsed")
  text = nil
  collectgarbage()
  mark("text collected")
  local ctx = dp.PassContext{config = config}
  local res = p(mod, ctx)
  mark("planned")
  mod, ctx = nil, nil
  collectgarbage()
  mark("input collected")
  core._release_heap()
  mark("heap given back")
  dp.write_file(out, res, {newline = true})
  mark("printed into the file")
end

if arg[1] == "--child" then
  child(arg[2], arg[3])
  io.stdout:flush()
  os.exit(0)
end

local opts = {n = 1000000, shapes = "chain,let,branchy"}
do
  local i = 1
  while arg[i] do
    local a = arg[i]
    if a == "--n" or a == "--shapes" then
      opts[a:sub(3)] = assert(arg[i + 1], a .. " needs a value")
      i = i + 2
    else error("memory.lua: unknown option " .. a .. " (see the header of bench/memory.lua)") end
  end
  opts.n = assert(math.tointeger(tonumber(opts.n)), "--n wants a whole number")
end

local function exists(p)
  local f = io.open(p)
  if f then f:close() end
  return f ~= nil
end
local function sh(cmd)
  local pr = assert(io.popen(cmd))
  local s = pr:read("a")
  pr:close()
  return s
end

local heapcount = root .. "/bin/heapcount.so"
if not exists(heapcount) then
  assert(os.execute("cc -O2 -shared -fPIC -o '" .. heapcount .. "' '" .. root .. "/bench/heapcount.c'"))
end
local gen = dofile(here .. "/gen.lua")
local f = io.open("/proc/loadavg")
local load = f and f:read("l"):match("^(%S+ %S+ %S+)") or "?"
if f then f:close() end
print(("bench/memory.lua: %s UTC, load average %s"):format(os.date("!%Y-%m-%d %H:%M"), load))
local exe = root .. "/bin/devplan"
for shape in opts.shapes:gmatch("[^,]+") do
  local path = gen.file(OUT, shape, opts.n)
  local mine, theirs = OUT .. "/memory_out.relay", OUT .. "/memory_cmd.relay"
  local timeline = sh(("LD_PRELOAD='%s' '%s' '%s' --child '%s' '%s'"):format(heapcount, exe, here .. "/memory.lua",
    path, mine))
  local cmd = sh(("/usr/bin/time -f '@@ %%U %%S %%M' '%s' plan '%s' -o '%s' 2>&1"):format(exe, path, theirs))
  local u, s, m = cmd:match("@@ (%S+) (%S+) (%S+)")
  local same = os.execute(("cmp -s '%s' '%s'"):format(mine, theirs))
  os.remove(mine)
  os.remove(theirs)
  print(("\n## %s, %d calls: devplan plan FILE -o OUT took %.2f s CPU, peak %.0f MB%s"):format(shape, opts.n,
    tonumber(u or 0) + tonumber(s or 0), tonumber(m or 0) / 1024,
    same and "" or " (NOT the file of these steps: the timeline does not follow the command)"))
  print(("%-24s %9s %9s %9s"):format("after", "live MB", "RSS MB", "peak MB"))
  io.write(timeline)
end
