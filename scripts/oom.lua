-- Allocation failure walks (issue 8), run by scripts/oom.sh inside the
-- ASan build; any devplan executable runs it:
--   devplan scripts/oom.lua [--persistent] [--step K | --samples S] [--from N] [--to N] [FILE.relay...]
-- Without files: the two workloads of spec/support/oom_workload.lua (parse
-- with metadata, inference, both planning modes, printing, verify, patterns,
-- explain, errors; placement by cost, AnnotateVirtualDevices, a Lua
-- operator, rewrites, targets, the report), then every conformance case of
-- ../shared/conformance/cases (parse and plan). With files: parse, plan, print, verify, explain of each.
-- --step K walks every K-th n (default 1); --samples S about S values of n
-- spread over each workload's allocations (for large models: a full walk
-- costs allocations x run time).
-- Prints each problem and "N runs, N problems"; exits 1 when there is one.
local dp = require "devplan"
local W = dofile((dp.root or ".") .. "/spec/support/oom_workload.lua")
local t = require "devplan.testing"

local opts, files = {}, {}
local args = { ... }
local i = 1
while i <= #args do
  local a = args[i]
  if a == "--persistent" then opts.persistent = true
  elseif a == "--step" or a == "--samples" or a == "--from" or a == "--to" then
    i = i + 1
    opts[a:sub(3)] = math.tointeger(tonumber(args[i])) or error("oom.lua: " .. a .. " needs a whole number")
  else files[#files + 1] = a
  end
  i = i + 1
end

local function walk(name, run)
  local count = W.count(run)
  local step = opts.samples and math.max(1, count // opts.samples) or opts.step
  local o = { persistent = opts.persistent, step = step, from = opts.from, to = opts.to, run = run }
  io.write(("%s: %d allocations, n from %d every %d%s ... "):format(name, count, o.from or 1, o.step or 1,
    o.persistent and ", persistent" or ""))
  io.flush()
  local problems, runs = W.walk(o)
  print(("%d runs, %d problems"):format(runs, #problems))
  for _, p in ipairs(problems) do print("  " .. p) end
  return #problems
end

local bad = 0
if #files == 0 then
  bad = bad + walk("workload", W.run)
  bad = bad + walk("more of the library", W.run_more)
  local dir = t.shared_dir .. "/conformance/cases"
  for _, f in ipairs(t.lua_files(dir)) do
    local case = dofile(dir .. "/" .. f)
    if type(case.input) == "string" then bad = bad + walk("conformance " .. f, W.case_workload(case)) end
  end
end
for _, f in ipairs(files) do bad = bad + walk(f, W.text_workload(t.read_file(f))) end
print(bad == 0 and "clean" or bad .. " problems")
os.exit(bad == 0 and 0 or 1)
