-- The placement optimiser on its own (dp.planner.solve_placement): its cost
-- against brute force over every labelling of thousands of small random
-- problems. Two labels: the same minimum (one minimum s-t cut is exact),
-- with any per-pair copy costs. More labels: alpha-expansion, never below
-- the minimum, and within its stated bound when copies cost the same
-- between any two labels.
local dp = require "devplan"

-- An independent reading of the objective: unary costs, and per net one
-- copy per label among its readers other than its maker's.
local function copy_cost(p, w, a, b)
  if a == b then return 0 end
  if not p.pair then return w end
  return math.floor(w * p.pair[a][b] + 0.5)
end

local function energy(p, lab)
  local e, eu = 0, 0
  for v = 1, p.vars do
    if p.allowed and p.allowed[v] then
      local ok = false
      for _, l in ipairs(p.allowed[v]) do ok = ok or l == lab[v] end
      if not ok then return math.huge end
    end
    if p.fixed and p.fixed[v] and p.fixed[v] ~= lab[v] then return math.huge end
    if p.unary and p.unary[v] then eu = eu + p.unary[v][lab[v]] end
  end
  for _, n in ipairs(p.nets) do
    local seen = {}
    for _, r in ipairs(n.to) do
      local l = lab[r]
      if l ~= lab[n.from] and not seen[l] then
        seen[l] = true
        e = e + copy_cost(p, n.weight, lab[n.from], l)
      end
    end
  end
  return e + eu, eu, e
end

-- The least energy over every labelling, and that labelling's parts.
local function brute(p)
  local lab, best, bu, bc = {}, math.huge, nil, nil
  local function go(v)
    if v > p.vars then
      local e, eu, ec = energy(p, lab)
      if e < best then best, bu, bc = e, eu, ec end
      return
    end
    for l = 1, p.labels do
      lab[v] = l
      go(v + 1)
    end
  end
  go(1)
  return best, bu, bc
end

local function random_problem(rng, labels, opts)
  local n = rng(1, opts.max_vars or 9)
  local p = {labels = labels, vars = n, default = rng(1, labels), nets = {}}
  if rng(1, 3) > 1 then
    p.fixed = {}
    for v = 1, n do if rng(1, 4) == 1 then p.fixed[v] = rng(1, labels) end end
  end
  if opts.allowed and rng(1, 2) == 1 then
    p.allowed = {}
    for v = 1, n do
      if rng(1, 3) == 1 then
        local list = {}
        for l = 1, labels do if rng(1, 2) == 1 then list[#list + 1] = l end end
        if #list == 0 then list[1] = rng(1, labels) end
        if p.fixed and p.fixed[v] then list[#list + 1] = p.fixed[v] end
        p.allowed[v] = list
      end
    end
  end
  if opts.unary and rng(1, 2) == 1 then
    p.unary = {}
    for v = 1, n do
      if rng(1, 2) == 1 then
        local u = {}
        for l = 1, labels do u[l] = rng(0, 60) end
        p.unary[v] = u
      end
    end
  end
  if opts.pair then
    p.pair = {}
    for a = 1, labels do
      p.pair[a] = {}
      for b = 1, labels do p.pair[a][b] = a == b and 0 or rng(1, 40) / 10 end
    end
  end
  for _ = 1, rng(0, 2 * n) do
    local to = {}
    for _ = 1, rng(1, math.min(4, n)) do to[#to + 1] = rng(1, n) end
    p.nets[#p.nets + 1] = {from = rng(1, n), to = to, weight = rng(1, 100)}
  end
  return p
end

local function rng_of(seed)
  local state = seed
  return function(lo, hi) -- a small LCG: the same problems on every machine
    state = (state * 1103515245 + 12345) % 2147483648
    return lo + state % (hi - lo + 1)
  end
end

local function check_labels(p, labels, cost)
  assert.equal(p.vars, #labels)
  local e = energy(p, labels)
  assert.equal(e, cost, "the cost returned is the cost of the labels returned")
end

describe("dp.planner.solve_placement", function()
  it("cuts the cheapest place between two fixed ends", function()
    local labels, cost = dp.planner.solve_placement{labels = 2, vars = 4, fixed = {[1] = 1, [4] = 2},
      nets = {{from = 1, to = {2}, weight = 100}, {from = 2, to = {3}, weight = 10}, {from = 3, to = {4}, weight = 50}}}
    assert.same({1, 1, 2, 2}, labels)
    assert.equal(10, cost)
  end)

  it("counts a value once per destination label, however many readers there", function()
    -- 1 (label 1) is read by 2 and 3, both fixed on label 2: one copy
    local labels, cost = dp.planner.solve_placement{labels = 2, vars = 3, fixed = {[2] = 2, [3] = 2},
      nets = {{from = 1, to = {2, 3}, weight = 7}}}
    assert.same({2, 2, 2}, labels, "the maker follows its readers")
    assert.equal(0, cost)
    labels, cost = dp.planner.solve_placement{labels = 2, vars = 3, fixed = {[1] = 1, [2] = 2, [3] = 2},
      nets = {{from = 1, to = {2, 3}, weight = 7}}}
    assert.equal(7, cost)
  end)

  for _, case in ipairs{
    {"two labels, bytes", 2, {}},
    {"two labels, compute costs and forbidden labels", 2, {unary = true, allowed = true}},
    {"two labels, per-pair copy costs", 2, {pair = true, unary = true}},
  } do
    it(case[1] .. ": the minimum, on 1500 random problems", function()
      local rng = rng_of(#case[1])
      for i = 1, 1500 do
        local p = random_problem(rng, case[2], case[3])
        local best = brute(p)
        if best == math.huge then
          assert.has_error(function() dp.planner.solve_placement(p) end)
        else
          local labels, cost = dp.planner.solve_placement(p)
          check_labels(p, labels, cost)
          assert.equal(best, cost, "problem " .. i)
        end
      end
    end)
  end

  it("more labels: alpha-expansion within its bound and a local minimum of its moves, on 1000 random problems", function()
    local rng = rng_of(3)
    local exact = 0
    for i = 1, 1000 do
      local k = rng(3, 4)
      local p = random_problem(rng, k, {unary = true, allowed = true, max_vars = k == 3 and 8 or 6})
      local best, bu, bc = brute(p)
      if best < math.huge then
        local labels, cost = dp.planner.solve_placement(p)
        check_labels(p, labels, cost)
        assert.is_true(cost >= best)
        local pins = 1
        for _, n in ipairs(p.nets) do pins = math.max(pins, #n.to + 1) end
        local factor = 2 * math.min(k - 1, pins - 1)
        assert.is_true(cost <= bu + factor * bc, ("problem %d: %d > %d + %d * %d"):format(i, cost, bu, factor, bc))
        if cost == best then exact = exact + 1 end
        -- every move is exact here (no pair costs): no expansion of the
        -- result towards any label costs less (the solver stops computing
        -- a move once its labelling is unchanged since that move)
        for alpha = 1, k do
          local free = {}
          for v = 1, p.vars do if labels[v] ~= alpha then free[#free + 1] = v end end
          for mask = 1, (1 << #free) - 1 do
            local moved = {}
            for v = 1, p.vars do moved[v] = labels[v] end
            for j, v in ipairs(free) do
              if mask >> (j - 1) & 1 == 1 then moved[v] = alpha end
            end
            assert.is_true(energy(p, moved) >= cost,
              ("problem %d: an expansion towards %d costs %s < %d"):format(i, alpha, energy(p, moved), cost))
          end
        end
      end
    end
    assert.is_true(exact > 900, exact .. " of 1000 at the minimum")
  end)

  it("where costs saturate, judges each move by the costs, as counted (not by its cut)", function()
    -- Copies alone (no unary or pair costs) let a move be judged by its cut
    -- (place_solve.c, cuts_exact), but only while no cost can saturate.
    -- Here every labelling's cost saturates (nets between the two fixed
    -- variables alone cost more than DP_PLACE_INF): moving the free
    -- variables to label 2 saves copies, and its cut is cheaper than the
    -- one keeping every label, but the costs counted are both "cannot", so
    -- the labels stay as they are, as they always did.
    local n, nets = 2400, {}
    for i = 1, n do
      nets[#nets + 1] = {from = 2, to = {2 + i}, weight = 1000000000000000}
      nets[#nets + 1] = {from = 1, to = {2 + i}, weight = 500000000000000}
      nets[#nets + 1] = {from = 2, to = {1}, weight = 1000000000000000}
    end
    local labels, cost = dp.planner.solve_placement{labels = 2, vars = n + 2, default = 1,
      fixed = {[1] = 1, [2] = 2}, nets = nets}
    assert.equal(2305843009213693951, cost) -- DP_PLACE_INF
    for i = 3, n + 2 do assert.equal(1, labels[i]) end
    -- the same problem without the constant copies: the move is taken
    local some = {}
    for i = 1, #nets do if nets[i].to[1] ~= 1 then some[#some + 1] = nets[i] end end
    labels, cost = dp.planner.solve_placement{labels = 2, vars = n + 2, default = 1,
      fixed = {[1] = 1, [2] = 2}, nets = some}
    assert.equal(n * 500000000000000, cost)
    for i = 3, n + 2 do assert.equal(2, labels[i]) end
  end)

  it("rejects malformed problems with a clear error", function()
    assert.has_error(function() dp.planner.solve_placement{labels = 0, vars = 1} end)
    assert.has_error(function() dp.planner.solve_placement{labels = 2, vars = 2, nets = {{from = 3, to = {1}, weight = 1}}} end)
    assert.has_error(function() dp.planner.solve_placement{labels = 2, vars = 2, nets = {{from = 1, to = {2}, weight = -1}}} end)
    assert.has_error(function() dp.planner.solve_placement{labels = 2, vars = 1, allowed = {[1] = {}}} end,
                     "solve_placement: variable 1 may take no label")
    assert.has_error(function() dp.planner.solve_placement(3) end)
  end)

  it("where every variable may join the annotations' label, moves whole components: the least that every best labelling moves", function()
    -- (place_solve.c reads such a move from the components the nets join,
    -- without a graph: the labels every minimum cut gives, ties included)
    -- vars 1..3 one component with var 1 fixed on label 2: all go there;
    -- vars 4, 5 a component with no fixed variable: both stay on the
    -- default (label 2 would cost nothing either); var 6 in no net stays
    local labels, cost = dp.planner.solve_placement{labels = 2, vars = 6, default = 1, fixed = {[1] = 2},
      nets = {{from = 1, to = {2}, weight = 5}, {from = 3, to = {2}, weight = 7}, {from = 4, to = {5}, weight = 3}}}
    assert.same({2, 2, 2, 1, 1, 1}, labels)
    assert.equal(0, cost)
    -- three labels, two annotations' devices: the component with both is cut
    -- where it costs least (its graph); the one with label 3 alone goes there
    labels, cost = dp.planner.solve_placement{labels = 3, vars = 7, default = 1, fixed = {[1] = 2, [4] = 3, [6] = 3},
      nets = {{from = 1, to = {2}, weight = 5}, {from = 2, to = {3}, weight = 1}, {from = 3, to = {4}, weight = 5},
              {from = 5, to = {6, 7}, weight = 2}}}
    assert.same({2, 2, 3, 3, 3, 3, 3}, labels)
    assert.equal(1, cost)
  end)

  it("solves a 1,000,000-variable chain", function()
    local n = os.getenv("DEVPLAN_QUICK") and 100000 or 1000000
    local nets = {}
    for v = 1, n - 1 do nets[v] = {from = v, to = {v + 1}, weight = 100 + (v * 7919) % 1000} end
    nets[n // 2].weight = 1
    local labels, cost = dp.planner.solve_placement{labels = 2, vars = n, fixed = {[1] = 1, [n] = 2}, nets = nets}
    assert.equal(1, cost)
    assert.equal(1, labels[n // 2])
    assert.equal(2, labels[n // 2 + 1])
  end)
end)
