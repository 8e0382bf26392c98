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
      -- cold s at N/100, N/10, N; x, x; user x, x; sys s
      local f = {}
      for v in line:gmatch("%S+") do f[#f + 1] = v end
      assert.are.equal(8, #f, title .. ": " .. line)
      for i = 1, 5 do assert.is_true(tonumber(f[i]) >= 0, title .. ": " .. line) end
      assert.is_true(f[8] == "?" or tonumber(f[8]) >= 0, title .. ": " .. line)
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

  it("takes the cold seconds as the best of --repeat and the user seconds as their mean", function()
    -- A stand-in old build whose child prints, for its k-th run at each
    -- size, set figures ("cold warm heap user sys"). --repeat 2 runs the
    -- sizes 8, 4 and 2 times (4x and 2x at the two smaller ones): the mean
    -- user seconds step (1 + 7 * 3) / 8 = 2.75 -> 10 -> 100 (3.6x, 10x),
    -- those of the best cold run 1 -> 10 -> 100.
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
    -- shape, build; cold s x3; x, x; user x, x; sys s
    assert.are.same({"chain", "old", "1.0000", "10.0000", "100.000", "10.0", "10.0", "3.6", "10.0", "0.500"}, f8)
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
