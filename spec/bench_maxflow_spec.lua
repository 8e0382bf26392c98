-- bench/maxflow.c builds against the core library and runs: its graphs and
-- placement problems at a small size each give a row with a cut (the
-- benchmark reads the planner's internal header, so a change there that
-- breaks it shows here, not on the day someone measures). Without igraph:
-- the comparison is bench/maxflow.sh's; the cut's correctness is
-- tests/c/maxflow_test.c's (brute force).
local proc = dofile("spec/support/proc.lua")

describe("bench/maxflow.c", function()
  it("builds and gives a cut for every graph and placement problem", function()
    local lib = "lib/libdevplan_core.a"
    assert.is_truthy(io.open(lib, "rb"), "no " .. lib .. ": build the release first (scripts/build.sh release)")
    local exe = os.tmpname()
    local ok = os.execute(("gcc -std=c11 -O1 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Iinclude "
      .. "bench/maxflow.c %s -lm -o %s 2>&1"):format(lib, proc.quote(exe)))
    assert.is_true(ok == true or ok == 0, "bench/maxflow.c does not build")
    local r = proc.run({"3000"}, {exe = exe, timeout = 120})
    os.remove(exe)
    assert.are.equal(0, r.status, r.out)
    for _, name in ipairs{"grid", "chain", "branchy", "random"} do
      local nodes, arcs, secs, cut = r.stdout:match("\n" .. name .. " +(%d+) +(%d+) +([%d.]+) +(%d+)\n")
      assert.is_truthy(nodes, name .. " has no row in\n" .. r.stdout)
      assert.is_true(tonumber(nodes) >= 2900 and tonumber(arcs) > 0 and tonumber(cut) > 0, r.stdout)
    end
    local rows = 0
    for _ in r.stdout:gmatch("%((%d) labels%)") do rows = rows + 1 end
    assert.are.equal(4, rows, r.stdout)
  end)
end)
