-- bench/misses.sh (one step's instructions and simulated cache misses per
-- call) and bench/chase.c (the machine's latency by working set, the size
-- to simulate) run at a small size and print what they promise; bad
-- arguments get a usage error, not a table. No figure is checked: they
-- measure, the docs say what the figures mean. The module files are
-- written on first use, as perf.lua writes them (a fresh clone has none).
local testing = require "devplan.testing"
local proc = dofile("spec/support/proc.lua")

local describe_bench = testing.instrumented and pending or describe

describe_bench("bench/misses.sh", function()
  it("prints a row of per-call counts for each size asked, with the last level it simulated", function()
    local r = proc.run({"bench/misses.sh", "plan", "chain", "200", "2000"},
      {exe = "bash", env = {LL_MIB = "4"}, timeout = 300})
    assert.are.equal(0, r.status, r.out)
    local lines = {}
    for l in r.stdout:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(3, #lines, r.stdout)
    assert.is_truthy(lines[1]:find("(LL 4 MiB)", 1, true), lines[1])
    for i, n in ipairs{200, 2000} do
      local row, shape, calls, ir, d1, ll = lines[i + 1]:match("^(%S+)%s+(%S+)%s+(%d+)%s+(%d+)%s+([%d.]+)%s+([%d.]+)$")
      assert.are.same({"plan", "chain", n}, {row, shape, tonumber(calls)}, lines[i + 1])
      -- (planning a call takes hundreds of instructions and touches memory)
      assert.is_true(tonumber(ir) > 100 and tonumber(d1) > 0 and tonumber(ll) >= 0, lines[i + 1])
    end
  end)

  it("refuses a last level that is not a power of two, an unknown shape, a size that is no count, a missing step",
    function()
    local r = proc.run({"bench/misses.sh", "plan", "chain", "200"}, {exe = "bash", env = {LL_MIB = "12"}})
    assert.are.equal(2, r.status)
    assert.is_truthy(r.out:find("LL_MIB must be a power of two", 1, true), r.out)
    r = proc.run({"bench/misses.sh", "plan", "ring", "200"}, {exe = "bash"})
    assert.are.equal(2, r.status)
    assert.is_truthy(r.out:find("unknown shape 'ring' (chain, let, branchy)", 1, true), r.out)
    r = proc.run({"bench/misses.sh", "plan", "chain", "2e3"}, {exe = "bash"})
    assert.are.equal(2, r.status)
    assert.is_truthy(r.out:find("a size is a count of calls, not '2e3'", 1, true), r.out)
    assert.are.equal("", r.stdout) -- (no table begun)
    r = proc.run({"bench/misses.sh", "plan"}, {exe = "bash"})
    assert.are.equal(2, r.status)
    assert.is_truthy(r.out:find("usage: bench/misses.sh ROW SHAPE", 1, true), r.out)
  end)

  it("fails with the child's error for a step perf.lua does not know", function()
    local r = proc.run({"bench/misses.sh", "nosuchrow", "chain", "200"}, {exe = "bash", timeout = 300})
    assert.are_not.equal(0, r.status)
    assert.is_truthy(r.out:find("unknown row nosuchrow", 1, true), r.out)
  end)
end)

describe_bench("bench/chase.c", function()
  local exe = os.tmpname()
  teardown(function() os.remove(exe) end)

  it("builds without warnings and prints a latency for each block size up to the largest asked", function()
    local r = proc.run({"-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", exe, "bench/chase.c"}, {exe = "cc"})
    assert.are.equal(0, r.status, r.out)
    r = proc.run({"2", "20000"}, {exe = exe})
    assert.are.equal(0, r.status, r.out)
    local sizes = {}
    for n, unit, ns in r.stdout:gmatch("\n%s*(%d+) (%a+)%s+([%d.]+)") do
      assert.is_true(tonumber(ns) > 0, r.stdout)
      sizes[#sizes + 1] = n .. " " .. unit
    end
    assert.are.same({"64 KiB", "128 KiB", "256 KiB", "512 KiB", "1 MiB", "2 MiB"}, sizes)
    r = proc.run({"0"}, {exe = exe})
    assert.are.equal(2, r.status)
    assert.is_truthy(r.out:find("usage: chase", 1, true), r.out)
  end)
end)
