-- PartitionByVirtualDevice's regions on wide DAGs, against a plain
-- reference of the same rule (src/planner/partition.c, step 2: TVM's
-- MergeCompilerRegions): in post order each call starts a region and takes
-- in its producers' regions of the same device unless one is restricted,
-- where a region's restrictions are every region that reaches it through
-- another region or a barrier (a device_copy; a region of another device is
-- always one). The reference keeps every set whole and copies it at each
-- node (quadratic, fine for a few hundred calls); the partitioner shares
-- sets between the regions and barriers made from one another, drops
-- closed regions and takes sets over, which must not change one region.
-- The programs read values far back (the open frontier is wide, as on
-- bench/gen.lua's branchy shape) across runs of calls on two devices; the
-- device of each call is told by its operator (add and subtract on the CPU,
-- multiply and divide on the GPU), so the reference reads it off the
-- planned module.
local dp = require "devplan"
local t = require "devplan.testing"

local T = "Tensor[(5, 7), float32]"
local DEV = {"meta[VirtualDevice][0]", "meta[VirtualDevice][1]"}
local OPS = {{"add", "subtract"}, {"multiply", "divide"}}
local DEVICE_OF_OP = {add = 1, subtract = 1, multiply = 2, divide = 2}

-- A program of n calls: runs of random length on alternating or random
-- devices, each call reading the call before it and one far back (or a
-- parameter); each call is annotated with its device, and so is a read
-- that crosses devices.
local function program(n, seed)
  local rng = seed
  local function rand(k) -- 1 .. k (a small LCG: the same programs everywhere)
    rng = (rng * 1103515245 + 12345) % 2147483648
    return rng // 65536 % k + 1
  end
  local dev, name, lines = {}, {}, {}
  local d, left = 1, 0
  for i = 1, n do
    if left == 0 then
      left = rand(rand(3) == 1 and 3 or 40)
      d = rand(4) == 1 and d or 3 - d
    end
    left = left - 1
    dev[i] = d
    local function read(j)
      if j < 1 then return rand(2) == 1 and "%a" or "%b" end
      if dev[j] == d then return name[j] end
      return "on_device(" .. name[j] .. ", virtual_device=" .. DEV[dev[j]] .. ")"
    end
    local far = rand(3) == 1 and rand(i) - 1 or i // 2
    name[i] = "%" .. (i - 1)
    lines[i] = ("  %s = on_device(%s(%s, %s), virtual_device=%s);"):format(name[i], OPS[d][rand(2)], read(i - 1),
      read(far), DEV[d])
  end
  lines[#lines + 1] = "  " .. name[n]
  return '#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ", %b: " .. T .. ") {\n" .. table.concat(lines, "\n")
    .. "\n}\n"
end

-- The planned body's nodes in post order (an explicit stack: no recursion
-- over the depth), each once.
local function post_order(root)
  local order, seen, stack = {}, {}, {{root, 0}}
  while #stack > 0 do
    local top = stack[#stack]
    local e, k = top[1], top[2]
    local args = e.kind == "call" and e.args or {}
    if k < #args then
      top[2] = k + 1
      local a = args[k + 1]
      if not seen[a] then
        seen[a] = true
        stack[#stack + 1] = {a, 0}
      end
    else
      stack[#stack] = nil
      order[#order + 1] = e
    end
  end
  return order
end

-- The reference: each call of the body -> the number of its region.
local function reference(body)
  local order = post_order(body)
  local kind, place, parent, restr = {}, {}, {}, {}
  local function find(x)
    while parent[x] ~= x do x = parent[x] end
    return x
  end
  local function base(e) -- what a read stands for, under on_device
    while e.kind == "call" and e.callee.name == "on_device" do e = e.args[1] end
    return e
  end
  for _, e in ipairs(order) do
    if e.kind == "call" and e.callee.name ~= "on_device" then
      kind[e] = e.callee.name == "device_copy" and "barrier" or "member"
      place[e] = DEVICE_OF_OP[e.callee.name]
      assert(kind[e] == "barrier" or place[e], "an operator of neither device")
      parent[e] = e
      local parents, seen = {}, {}
      for _, a in ipairs(e.args) do
        local p = base(a)
        if kind[p] then
          local r = find(p)
          if not seen[r] then
            seen[r] = true
            parents[#parents + 1] = r
          end
        end
      end
      local acc = {}
      for _, p in ipairs(parents) do
        for r in pairs(restr[p]) do acc[find(r)] = true end
        if kind[p] == "barrier" or kind[e] == "barrier" or place[p] ~= place[e] then acc[p] = true end
      end
      for _, p in ipairs(parents) do
        if kind[e] == "member" and kind[p] == "member" and place[p] == place[e] and not acc[p] then
          parent[p] = e -- p's region joins e's
        end
      end
      restr[e] = acc
    end
  end
  local number, out, count = {}, {}, 0
  for _, e in ipairs(order) do
    if kind[e] == "member" then
      local r = find(e)
      if not number[r] then
        count = count + 1
        number[r] = count
      end
      out[e] = number[r]
    end
  end
  return out, count
end

describe("PartitionByVirtualDevice's regions", function()
  local cfg = t.config("cuda")
  local partition = dp.passes.PartitionByVirtualDevice{config = cfg}

  it("are the reference's on wide DAGs across two devices", function()
    local checked, regions = 0, 0
    for seed = 1, 60 do
      local n = 20 + seed * 8
      local planned = dp.passes.PlanDevices(cfg)(dp.parse(program(n, seed), t.META))
      local want, count = reference(planned:get("main").body)
      local _, got = partition.partition(planned)
      assert.equal(count, #got, "seed " .. seed .. ": the number of regions")
      -- each region is one of the reference's, whole, on its device
      local seen = {}
      for _, r in ipairs(got) do
        local number = want[r.nodes[1]]
        assert.truthy(number, "seed " .. seed .. ": a region's node is not a call of the body")
        assert.is_nil(seen[number], "seed " .. seed .. ": two regions for one of the reference's")
        seen[number] = true
        local size = 0
        for _, e in ipairs(r.nodes) do
          assert.equal(number, want[e], "seed " .. seed .. ": " .. r.name .. " mixes the reference's regions")
          assert.equal(DEVICE_OF_OP[e.callee.name] == 1 and "llvm" or "cuda", r.target.kind)
          size = size + 1
        end
        for e, m in pairs(want) do if m == number then size = size - 1 end end
        assert.equal(0, size, "seed " .. seed .. ": " .. r.name .. " misses calls of its region")
      end
      checked, regions = checked + 1, regions + count
    end
    assert.equal(60, checked)
    assert.is_true(regions > 600, "the programs have many regions: " .. regions)
  end)

  it("fail cleanly when an allocation fails (the shared sets freed once)", function()
    local planned = dp.passes.PlanDevices(cfg)(dp.parse(program(60, 7), t.META))
    local want = tostring(partition(planned))
    local failures = t.fail_each_allocation(function() return partition(planned) end, want)
    -- (each allocation of the pass fails once: the restriction sets' among them; an
    -- attempt's fourteen per-node arrays are one block, the projections and the
    -- caller walk's stack are in blocks made already, the regions' lists one block a
    -- body, so about 70 in all)
    assert.is_true(failures > 60, "allocations failed: " .. failures)
  end)
end)
