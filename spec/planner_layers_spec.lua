-- The planner's files call each other without a cycle, in layers
-- (scripts/planner_layers.lua, which the suite also runs to print them):
-- explanation sits above the phases, the phases above the domains, and
-- the domains are the union-find over the devices and nothing else.
local layers = dofile("scripts/planner_layers.lua")

local function level_of(g)
  local level = {}
  for i, files in ipairs(layers.layers(g)) do
    for _, f in ipairs(files) do level[f] = i - 1 end
  end
  return level
end

local function uses(g, f)
  local list = {}
  for t in pairs(g.edges[f]) do list[#list + 1] = t end
  table.sort(list)
  return list
end

describe("the planner's layers", function()
  local g = layers.graph(layers.read_folder("src/planner"))

  it("have no cycle of #includes and call sites", function()
    assert.is_nil(layers.cycle(g))
    local report = layers.report(g)
    for _, f in ipairs(g.files) do assert.truthy(report:find(f, 1, true), f) end
  end)

  it("put explanation above the phases, and only the pipeline and the state's face above it", function()
    local level = level_of(g)
    for _, phase in ipairs{"analyze.c", "default.c", "place.c", "capture.c", "conflicts.c", "rewrite.c",
                           "domains.c", "index.c", "replay.c"} do
      assert.is_true(level["explain.c"] > level[phase], phase)
      assert.is_nil(g.edges[phase]["explain.c"], phase .. " asks explain.c")
    end
    local askers = {}
    for _, f in ipairs(g.files) do
      if g.edges[f]["explain.c"] then askers[#askers + 1] = f end
    end
    assert.same({"domains_api.c", "plan.c"}, askers)
  end)

  it("keep the domains to the union-find over the devices of the index", function()
    assert.same({"devices.c", "index.c"}, uses(g, "domains.c"))
    assert.is_nil(g.edges["place.c"]["domains_api.c"])
    assert.is_nil(g.edges["domains.c"]["place.c"])
  end)

  it("have the latency search below the pipeline, planning through the function it is handed", function()
    local level = level_of(g)
    assert.truthy(g.edges["plan.c"]["latency.c"])
    for _, f in ipairs(g.files) do
      if f:match("^latency") then
        assert.is_nil(g.edges[f]["plan.c"], f .. " asks plan.c by name")
        assert.is_nil(g.edges[f]["explain.c"], f .. " asks explain.c")
        assert.is_true(level["plan.c"] > level[f], f)
      end
    end
    for _, f in ipairs{"latency_model.c", "latency_search.c", "latency_exact.c", "latency_soft.c"} do
      assert.is_true(level["latency.c"] > level[f], f)
    end
  end)

  it("have partitioning reuse the pipeline: it asks no phase itself", function()
    assert.truthy(g.edges["partition.c"]["plan.c"])
    for _, phase in ipairs{"rewrite.c", "conflicts.c", "analyze.c", "place.c", "default.c", "capture.c",
                           "domains.c", "index.c", "explain.c"} do
      assert.is_nil(g.edges["partition.c"][phase], phase)
    end
  end)
end)

describe("the layer checker", function()
  it("finds a cycle of calls", function()
    local g = layers.graph{["a.c"] = "int a(void) { return b(); }\n", ["b.c"] = "int b(void) { return a(); }\n"}
    assert.same({"a.c", "b.c", "a.c"}, layers.cycle(g))
  end)

  it("finds a cycle through an #include of a header of the folder, and a function pointer", function()
    local g = layers.graph{
      ["a.c"] = '#include "b.h"\nint a(void) { return 0; }\n',
      ["b.h"] = "int b(void);\n",
      ["b.c"] = "static int (*f)(void);\nint b(void) { f = a; return 0; }\n",
    }
    assert.equal('#include "b.h"', g.edges["a.c"]["b.c"])
    assert.equal("a", g.edges["b.c"]["a.c"])
    assert.truthy(layers.cycle(g))
  end)

  it("gives a static inline function of the shared header to its section's file", function()
    local g = layers.graph{
      ["planner.h"] = "/* ===== b.c: the b part ===== */\nstatic inline int bi(void) { return a(); }\n",
      ["a.c"] = '#include "planner.h"\nint a(void) { return 1; }\nint a2(void) { return bi(); }\n',
      ["b.c"] = '#include "planner.h"\nint b(void) { return 2; }\n',
    }
    assert.equal("bi", g.edges["a.c"]["b.c"])
    assert.equal("a", g.edges["b.c"]["a.c"])
    assert.truthy(layers.cycle(g))
  end)

  it("counts no static function of another file, comment or string", function()
    local g = layers.graph{
      ["a.c"] = "static int helper(void) { return 1; }\nint a(void) { return helper(); }\n",
      ["b.c"] = "static int helper(void) { return 2; }\n/* a() */\nint b(void) { const char *s = \"a()\"; return helper() + !s; }\n",
    }
    assert.is_nil(layers.cycle(g))
    assert.same({}, uses(g, "b.c"))
    assert.same({{"a.c", "b.c"}}, layers.layers(g))
  end)

  it("layers what it is given, lowest first", function()
    local g = layers.graph{
      ["low.c"] = "int low(void) { return 0; }\n",
      ["mid.c"] = "int mid(void) { return low(); }\n",
      ["top.c"] = "int top(void) { return mid() + low(); }\n",
    }
    assert.same({{"low.c"}, {"mid.c"}, {"top.c"}}, layers.layers(g))
    assert.truthy(layers.report(g):find("layer 2: top.c\n  top.c                uses low, mid", 1, true))
  end)
end)
