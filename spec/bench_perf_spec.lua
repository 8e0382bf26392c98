-- bench/perf.lua and bench/memory.lua run at a small size and give every
-- row they promise (no timing is checked: a script broken by a change of
-- the API or of bench/gen.lua shows here, not on the day someone measures).
-- They measure the release build (bin/devplan), so the instrumented run
-- leaves them out.
local testing = require "devplan.testing"
local proc = dofile("spec/support/proc.lua")

local N = 3000

local function run(args)
  local r = proc.run(args, {exe = "bin/devplan", timeout = 300})
  assert.are.equal(0, r.status, r.out)
  return r.stdout
end

-- The rows of the table under the header that starts with title.
local function rows(out, title)
  local at = out:find("\n## " .. title, 1, true)
  assert.is_truthy(at, "no table '" .. title .. "' in\n" .. out)
  local body = out:sub(at + 1):match("^[^\n]*\n[^\n]*\n(.-)\n\n") or out:sub(at + 1):match("^[^\n]*\n[^\n]*\n(.*)$")
  local t = {}
  for line in body:gmatch("[^\n]+") do
    local shape, rest = line:match("^(%a+)%s+(.*)$")
    if shape then t[shape] = rest end
  end
  return t
end

local describe_bench = testing.instrumented and pending or describe

describe_bench("bench/perf.lua", function()
  it("gives a row of figures for every shape of the rows asked", function()
    local out = run{"bench/perf.lua", "--rows", "plan,heap,cli,parse,print,annotate,share,report,min_bytes",
      "--n", tostring(N)}
    local want = {
      {"PlanDevices, ", {"chain", "let", "branchy"}},
      {"PlanDevices' heap", {"chain", "let", "branchy"}},
      {"devplan plan FILE", {"chain", "let", "branchy"}},
      {"parse with type inference", {"chain", "let", "branchy"}},
      {"print the parsed module", {"chain", "let", "branchy"}},
      {"print the planned module (dp.astext)", {"chain", "let", "branchy"}},
      {"print the planned module into a file", {"chain", "let", "branchy"}},
      {"AnnotateVirtualDevices", {"chain", "let"}},
      {"ShareCopies", {"chain", "let"}},
      {"dp.planner.report(...):text()", {"let", "branchy"}},
      {"dp.planner.report(...):json()", {"let", "branchy"}},
      {"PlanDevices placement = min_bytes, 2 devices", {"chain", "let", "branchy"}},
      {"PlanDevices placement = min_bytes, 4 targets", {"chain", "let", "branchy"}},
    }
    for _, w in ipairs(want) do
      local t = rows(out, w[1])
      for _, shape in ipairs(w[2]) do
        assert.is_truthy(t[shape], w[1] .. ": no row for " .. shape .. " in\n" .. out)
        local first = t[shape]:match("^([%d.]+)")
        assert.is_truthy(first and tonumber(first) >= 0, w[1] .. " " .. shape .. ": " .. t[shape])
      end
    end
    -- the heap row counts bytes (bench/heapcount.c preloaded): a plan takes some
    local heap = rows(out, "PlanDevices' heap")
    assert.is_true(tonumber(heap.let:match("^(%d+)")) > 0, heap.let)
  end)

  it("gives each step's sizes, ratios and user and system seconds (scale, partition, steps)", function()
    local out = run{"bench/perf.lua", "--rows", "scale,partition,steps", "--n", tostring(N), "--settle", "0.01"}
    local function check(title, line)
      -- best cold s at N/100, N/10, N; x, x; median cold s at the three, x, x;
      -- user x, x; sys s
      local f = {}
      for v in line:gmatch("%S+") do f[#f + 1] = v end
      assert.are.equal(13, #f, title .. ": " .. line)
      for i = 1, 10 do assert.is_true(tonumber(f[i]) >= 0, title .. ": " .. line) end
      for i = 1, 3 do assert.is_true(tonumber(f[i]) <= tonumber(f[i + 5]), title .. ": best > median: " .. line) end
      assert.is_true(f[13] == "?" or tonumber(f[13]) >= 0, title .. ": " .. line)
    end
    for _, w in ipairs{{"PlanDevices 30 -> 300 -> 3k calls", {"chain", "let", "branchy"}},
                       {"PartitionByVirtualDevice 30 -> 300 -> 3k calls", {"let", "branchy"}}} do
      local t = rows(out, w[1])
      for _, shape in ipairs(w[2]) do
        assert.is_truthy(t[shape], w[1] .. ": no row for " .. shape .. " in\n" .. out)
        check(w[1], t[shape])
      end
    end
    local at = out:find("\n## Every other pass, 30 -> 300 -> 3k calls", 1, true)
    assert.is_truthy(at, out)
    local n = 0
    for line in out:sub(at + 1):gmatch("[^\n]+") do
      local shape, rest = line:match("^.-%s(%a+)%s%s+(%d.*)$")
      if shape and not line:match("^pass%s") then
        n = n + 1
        check(line, rest)
      end
    end
    assert.are.equal(26, n, out:sub(at))
  end)

  it("takes the cold seconds as the best and the median of --repeat and the user seconds as their mean", function()
    -- A stand-in old build whose child prints, for its k-th run at each
    -- size, set figures ("cold warm heap user sys"). --repeat 2 runs the
    -- sizes 8, 4 and 2 times (4x and 2x at the two smaller ones): the mean
    -- user seconds step (1 + 7 * 3) / 8 = 2.75 -> 10 -> 100 (3.6x, 10x),
    -- those of the best cold run 1 -> 10 -> 100, the median cold seconds
    -- 2 -> 20 -> 100 (10x, 5x).
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p '" .. dir .. "/bin'"))
    local f = assert(io.open(dir .. "/bin/devplan", "w"))
    f:write([[#!/bin/sh
c="$(dirname "$0")/runs_$4_$5"
k=$(($(cat "$c" 2>/dev/null || echo 0) + 1))
echo $k > "$c"
case "$5.$k" in
]] .. N // 100 .. [[.1) echo 1 1 0 1 0.5 ;;
]] .. N // 100 .. [[.*) echo 2 2 0 3 0.5 ;;
]] .. N // 10 .. [[.1) echo 10 10 0 10 0.5 ;;
]] .. N // 10 .. [[.*) echo 20 20 0 10 0.5 ;;
*) echo 100 100 0 100 0.5 ;;
esac
]])
    f:close()
    assert(os.execute("chmod +x '" .. dir .. "/bin/devplan'"))
    local out = run{"bench/perf.lua", "--rows", "scale", "--n", tostring(N), "--repeat", "2", "--old", dir}
    os.execute("rm -rf '" .. dir .. "'")
    local at = assert(out:find("\nchain%s+old%s"), out)
    local f8 = {}
    for v in out:sub(at + 1):match("^[^\n]*"):gmatch("%S+") do f8[#f8 + 1] = v end
    -- shape, build; cold s x3; x, x; median s x3; x, x; user x, x; sys s
    assert.are.same({"chain", "old", "1.0000", "10.0000", "100.000", "10.0", "10.0", "2.0000", "20.0000", "100.000",
                     "10.0", "5.0", "3.6", "10.0", "0.500"}, f8)
  end)

  it("alternates old and new process by process, ABBA, the three sizes interleaved in each repeat", function()
    -- Both builds stand-ins (a copy of bench/perf.lua in a tree whose
    -- bin/devplan is one): each child writes "build row n" to one log.
    local dir = os.tmpname()
    os.remove(dir)
    local log = dir .. "/log"
    assert(os.execute(("mkdir -p '%s/new/bin' '%s/new/bench' '%s/old/bin' && cp bench/perf.lua bench/gen.lua '%s/new/bench/'")
      :format(dir, dir, dir, dir)))
    for _, b in ipairs{"old", "new"} do
      local f = assert(io.open(dir .. "/" .. b .. "/bin/devplan", "w"))
      f:write('#!/bin/sh\necho "' .. b .. ' $3 $5" >> \'' .. log .. '\'\necho 1 1 0 1 0\n')
      f:close()
      assert(os.execute("chmod +x '" .. dir .. "/" .. b .. "/bin/devplan'"))
    end
    run{dir .. "/new/bench/perf.lua", "--rows", "plan,scale", "--n", "1000", "--repeat", "2", "--old", dir .. "/old"}
    local f = assert(io.open(log))
    local got = {}
    for l in f:lines() do got[#got + 1] = l end
    f:close()
    os.execute("rm -rf '" .. dir .. "'")
    local want = {}
    local function pair(k, n) -- the k-th pair of a size
      local a, b = "old plan " .. n, "new plan " .. n
      if k % 2 == 0 then a, b = b, a end
      want[#want + 1] = a
      want[#want + 1] = b
    end
    -- scale, for each shape: repeat 1 (4 of 10, 2 of 100, 1 of 1000), then
    -- repeat 2; the PlanDevices table reads its runs at 1000 (none more)
    for _ = 1, 3 do
      for r = 1, 2 do
        for k = 1, 4 do pair(4 * (r - 1) + k, 10) end
        for k = 1, 2 do pair(2 * (r - 1) + k, 100) end
        pair(r, 1000)
      end
    end
    assert.are.same(want, got)
  end)

  it("counts --callgrind's instructions around the step, with --linear's code, or as a difference (~)", function()
    local function ir(env)
      local args = {"bench/perf.lua", "--rows", "plan", "--n", "2000", "--callgrind", "plan"}
      if env then table.insert(args, 1, env); table.insert(args, 2, "bin/devplan") end
      local r = proc.run(args, {exe = env and "env" or "bin/devplan", timeout = 300})
      assert.are.equal(0, r.status, r.out)
      local t = rows(r.stdout, "PlanDevices, ")
      local v, mark = t.let:match("^[%d.]+%s+[%d.]+%s+[%d.]+%s+(%d+)(.*)$")
      assert.is_truthy(v, t.let)
      return tonumber(v), mark
    end
    local counted, m1 = ir()
    local diff, m2 = ir("DEVPLAN_PERF_NO_COUNT=1") -- (as a build without dp.debug.callgrind)
    assert.are.equal("", m1)
    assert.are.equal(" ~", m2)
    assert.is_true(counted > 100 and math.abs(diff - counted) < 0.2 * counted, counted .. " vs " .. diff)
  end)

  it("runs the hot pages' command before each step and each command (--hot-pages)", function()
    local out = run{"bench/perf.lua", "--rows", "plan,cli", "--n", tostring(N), "--hot-pages", "2", "--cpu", "0"}
    assert.is_truthy(out:find("hot pages: each process starts after one that touched 2 MiB", 1, true), out)
    assert.is_truthy(out:find("each process on CPU 0 alone (--cpu)", 1, true), out)
    assert.are.equal(3, #(function() local t = {} for k in pairs(rows(out, "PlanDevices, ")) do t[#t + 1] = k end return t end)())
    -- the child runs what PERF_HOT_PAGES says just before its step, and fails with it
    local mark = os.tmpname()
    os.remove(mark)
    local r = proc.run({"bench/perf.lua", "--child", "plan", "chain", tostring(N), "once"},
      {exe = "bin/devplan", env = {PERF_HOT_PAGES = "touch '" .. mark .. "'"}})
    assert.are.equal(0, r.status, r.out)
    local f = io.open(mark)
    assert.is_truthy(f, "the child did not run PERF_HOT_PAGES")
    f:close()
    os.remove(mark)
    r = proc.run({"bench/perf.lua", "--child", "plan", "chain", tostring(N), "once"},
      {exe = "bin/devplan", env = {PERF_HOT_PAGES = "false"}})
    assert.are_not.equal(0, r.status)
    assert.is_truthy(r.out:find("perf.lua: false failed", 1, true), r.out)
    -- bench/hotpages.c refuses a size that is not one
    r = proc.run({"0"}, {exe = "bin/hotpages"})
    assert.are.equal(2, r.status, r.out)
    assert.is_truthy(r.out:find("usage: hotpages MB", 1, true), r.out)
  end)

  it("refuses an unknown option", function()
    local r = proc.run({"bench/perf.lua", "--nope"}, {exe = "bin/devplan"})
    assert.are_not.equal(0, r.status)
    assert.is_truthy(r.out:find("unknown option --nope", 1, true), r.out)
    r = proc.run({"bench/perf.lua", "--settle", "soon"}, {exe = "bin/devplan"})
    assert.are_not.equal(0, r.status)
    assert.is_truthy(r.out:find("--settle needs seconds", 1, true), r.out)
  end)
end)

describe("bench/perf.lua's option parsing and table logic", function()
  local perf = assert(loadfile("bench/perf.lua"))("--lib")

  it("parses the options, with their defaults, and refuses bad ones", function()
    local o = perf.options{}
    assert.are.same({1000000, 1, 0, false, 0, -1, 8}, {o.n, o["repeat"], o.settle, o.linear, o["hot-pages"], o.cpu, o.ll})
    assert.is_nil(o.old)
    o = perf.options{"--rows", "scale,steps", "--old", "/x", "--n", "5000", "--repeat", "3", "--callgrind", "all",
                     "--settle", "0.5", "--linear", "--hot-pages", "800", "--cpu", "1", "--ll", "32"}
    assert.are.same({"scale,steps", "/x", 5000, 3, "all", 0.5, true, 800, 1, 32},
      {o.rows, o.old, o.n, o["repeat"], o.callgrind, o.settle, o.linear, o["hot-pages"], o.cpu, o.ll})
    for bad, msg in pairs{["--nope"] = "unknown option --nope", ["--repeat=0"] = "--repeat needs",
                          ["--repeat=x"] = "--repeat needs", ["--n=1.5"] = "--n needs", ["--settle=soon"] = "--settle needs",
                          ["--hot-pages=-1"] = "--hot-pages needs", ["--hot-pages=1.5"] = "--hot-pages needs",
                          ["--cpu=x"] = "--cpu needs", ["--cpu=-2"] = "--cpu needs",
                          ["--ll=12"] = "--ll needs", ["--ll=0"] = "--ll needs", ["--ll=x"] = "--ll needs",
                          ["--old"] = "--old needs a value"} do
      local a, v = bad:match("^([^=]+)=?(.*)$")
      local ok, err = pcall(perf.options, v ~= "" and {a, v} or {a})
      assert.is_false(ok, bad)
      assert.is_truthy(tostring(err):find(msg, 1, true), bad .. ": " .. tostring(err))
    end
  end)

  it("takes the median", function()
    assert.are.equal(2, perf.median{3, 1, 2})
    assert.are.equal(2.5, perf.median{4, 1, 3, 2})
    assert.are.equal(7, perf.median{7})
    assert.is_nil(perf.median{})
  end)

  it("orders the processes: builds alternated ABBA, sizes interleaved in each repeat", function()
    local function flat(t)
      local s = {}
      for _, x in ipairs(t) do s[#s + 1] = x[1] .. ":" .. x[2] end
      return table.concat(s, " ")
    end
    assert.are.equal("1:1 1:2 1:2 1:1 1:1 1:2", flat(perf.schedule(2, {1}, 3)))
    assert.are.equal("1:1 1:1 1:1", flat(perf.schedule(1, {1}, 3)))
    assert.are.equal("1:1 1:2 1:2 1:1 2:1 2:2 1:1 1:2 1:2 1:1 2:2 2:1", flat(perf.schedule(2, {2, 1}, 2)))
    assert.are.same({1, 2}, perf.pair(2, 3))
    assert.are.same({2, 1}, perf.pair(2, 4))
  end)

  it("sums the runs up: best and median cold, best warm, largest heap, mean user and system", function()
    local r = perf.summary{{3, 2, 10, 1, 0.5}, {1, 4, 30, 2, 0.25}, {2, 1, 20, 3, 0}}
    assert.are.same({cold = 1, med = 2, warm = 1, heap = 30, user = 2, sys = 0.25}, r)
    r = perf.summary{{3, 2, 10, 1, 0.5}, {1, 4, 30, -1, -1}}
    assert.are.same({-1, -1, 2}, {r.user, r.sys, r.med})
    local a, b, c = perf.summary{{1, 0, 0, 1, 0}}, perf.summary{{10, 0, 0, 10, 0}, {30, 0, 0, 10, 0}},
      perf.summary{{100, 0, 0, 100, 0.5}}
    local f = {}
    for v in perf.three(a, b, c):gmatch("%S+") do f[#f + 1] = v end
    assert.are.same({"1.0000", "10.0000", "100.000", "10.0", "10.0", "1.0000", "20.0000", "100.000", "20.0", "5.0",
                     "10.0", "10.0", "0.500"}, f)
    c.sys = -1
    assert.is_truthy(perf.three(a, b, c):match("%?$"))
  end)
end)

describe_bench("bench/memory.lua", function()
  it("follows the command's steps (the same file printed) and gives the memory after each", function()
    local out = run{"bench/memory.lua", "--n", tostring(N), "--shapes", "chain,let"}
    assert.is_falsy(out:find("NOT the file", 1, true), out)
    for _, shape in ipairs{"chain", "let"} do
      local at = out:find("## " .. shape .. ", " .. N .. " calls", 1, true)
      assert.is_truthy(at, shape .. " has no timeline in\n" .. out)
      local part = out:sub(at)
      for _, step in ipairs{"parsed", "planned", "input collected", "printed into the file"} do
        local live, rss, peak = part:match("\n" .. step .. "%s+([%d.]+)%s+([%d.]+)%s+([%d.]+)")
        assert.is_truthy(live, shape .. ": no step '" .. step .. "' in\n" .. part)
        assert.is_true(tonumber(rss) > 0 and tonumber(peak) >= tonumber(rss) - 0.1, part)
      end
    end
  end)
end)
