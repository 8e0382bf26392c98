-- dp.passes.PartitionByVirtualDevice (src/pattern/regions.c): on a planned
-- module, connected same-device code hoisted into global functions, never a
-- cycle, the same result; and the accelerator example built on it.
local dp = require "devplan"
local t = require "devplan.testing"

local CPU, GPU = t.PALETTE.CPU, t.PALETTE.GPU
local T = "Tensor[(8, 8), float32]"
local EXE = os.getenv("DEVPLAN_EXE") or "bin/devplan"

local function parse(text) return dp.parse('#[version = "0.0.5"]\n' .. text, t.META) end
local partition = dp.passes.PartitionByVirtualDevice{by = "virtual_device"}

-- The hoisted functions of parted: name -> {device =, ops = "a,b"}.
local function hoisted(parted, before)
  local out = {}
  for _, f in ipairs(parted:functions()) do
    if not before:get(f[1]) then
      local ops = {}
      dp.visit(f[2].body, function(e)
        if e.kind == "call" and e.callee.kind == "op" then ops[#ops + 1] = e.callee.name end
      end)
      out[f[1]] = {device = f[2].virtual_device, ops = table.concat(ops, ",")}
    end
  end
  return out
end

local function count(tbl)
  local n = 0
  for _ in pairs(tbl) do n = n + 1 end
  return n
end

-- What a module computes (devplan.evaluate: a tensor is one number, each
-- operator a stand-in that tells values apart, on_device and device_copy
-- the identity).
local function evaluate(mod, args) return require("devplan.evaluate").run(mod, args) end

describe("PartitionByVirtualDevice", function()
  local cfg = t.config("cuda")

  it("hoists the pieces of each device into functions the caller calls", function()
    local planned = dp.passes.PlanDevices(cfg)(parse("def @main(%x: " .. T .. ", %y: " .. T .. [[) {
      %0 = add(%x, %y); %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
      %2 = log(%1); %3 = exp(%1); %4 = (%2, %3); concatenate(%4) }]]))
    local parted = partition(planned)
    local fns = hoisted(parted, planned)
    assert.equal(2, count(fns))
    assert.same({device = CPU, ops = "add"}, fns.main_cpu_0)
    assert.same({device = GPU, ops = "log,exp,concatenate"}, fns.main_cuda_0)
    -- every call inside a function runs on the function's device
    local vds = dp.planner.virtual_devices(parted, cfg)
    for name, f in pairs(fns) do
      dp.visit(parted:get(name).body, function(e)
        if e.kind == "call" then assert.equal(f.device, vds[e], name) end
      end)
    end
    -- planning the partitioned module changes nothing: it is a planned module
    assert.structurally_equal(dp.passes.PlanDevices(cfg)(parted), parted)
    assert.same({}, (dp.planner.verify(parted, cfg)))
    assert.equal("PartitionByVirtualDevice(by=virtual_device)", tostring(partition))
  end)

  it("splits a connected piece where merging would make a cycle; several results make a tuple", function()
    local planned = dp.passes.PlanDevices(cfg)(parse([[def @main(%data: Tensor[(10, 10), float32]) {
      %0 = abs(%data); %1 = on_device(%0, virtual_device=meta[VirtualDevice][1]); %2 = nn.relu(%0);
      %3 = tanh(%1); %4 = on_device(%3, virtual_device=meta[VirtualDevice][0]); %5 = add(%2, %4);
      on_device(%5, virtual_device=meta[VirtualDevice][1]) }]]))
    local parted = partition(planned)
    local fns = hoisted(parted, planned)
    assert.equal(3, count(fns))
    assert.equal("abs,nn.relu", fns.main_cuda_0.ops)
    assert.equal("tuple", parted:get("main_cuda_0").body.kind, "two results: abs for tanh, relu for add")
    assert.equal("tanh", fns.main_cpu_0.ops)
    assert.equal("add", fns.main_cuda_1.ops)
  end)

  it("never merges siblings that no edge connects", function()
    local planned = dp.passes.PlanDevices(cfg)(parse("def @main(%x: " .. T .. ", %y: " .. T .. ", %z: " .. T .. [[) {
      %0 = add(%x, %y); %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
      %2 = subtract(%1, %z); %3 = on_device(%2, virtual_device=meta[VirtualDevice][1]);
      %4 = log(%1); %5 = on_device(%4, virtual_device=meta[VirtualDevice][1]);
      %6 = multiply(%5, %3); on_device(%6, virtual_device=meta[VirtualDevice][0]) }]]))
    assert.equal(4, count(hoisted(partition(planned), planned)))
  end)

  it("branches bound the pieces; lets do not", function()
    local planned = dp.passes.PlanDevices(cfg)(parse([[def @main(%x: float32) {
      let %a = negative(%x); let %b = exp(%a); if (less(%b, %x)) { tanh(%b) } else { log(%b) } }]]))
    local parted = partition(planned)
    -- every call is in some function, each on the GPU (the default); the
    -- let-bound values and the condition are one piece, each branch another
    local fns = hoisted(parted, planned)
    local all = {}
    for _, f in pairs(fns) do
      assert.equal(GPU, f.device)
      all[#all + 1] = f.ops
    end
    table.sort(all)
    assert.same({"log", "negative,exp,less", "tanh"}, all)
    assert.equal(0, t.count_calls(parted.main, "negative") + t.count_calls(parted.main, "exp"))
    assert.same(evaluate(planned, {x = 0.3}), evaluate(parted, {x = 0.3}))
  end)

  it("takes let chains into one piece per device; a variable read elsewhere stays bound", function()
    local planned = dp.passes.PlanDevices(cfg)(parse("def @main(%a: " .. T .. ", %b: " .. T .. ", %c: bool) {" .. [[
      let %x = add(%a, %b);
      let %y = multiply(%x, %x);
      let %z = subtract(device_copy(%y, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]),
                        device_copy(%a, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]));
      let %u = log(%z);
      let %w = add(device_copy(%u, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]), %x);
      let %v = if (%c) { let %q = negative(%w); %q } else { %y };
      (%v, %w)
    }]]))
    local parted = partition(planned)
    local fns = hoisted(parted, planned)
    assert.same({device = GPU, ops = "add,multiply"}, fns.main_cuda_0)
    assert.same({device = CPU, ops = "subtract,log"}, fns.main_cpu_0)
    assert.equal("tuple", parted:get("main_cuda_0").body.kind, "x and y both leave the piece")
    assert.same({device = GPU, ops = "add"}, fns.main_cuda_1)
    assert.same({device = GPU, ops = "negative"}, fns.main_cuda_2)
    assert.equal(4, count(fns))
    -- %x, %y and %u are read by other pieces: bound to outputs; %z only inside its own: gone
    local bound = {}
    dp.visit(parted.main.body, function(e) if e.kind == "let" then bound[e.var.name] = true end end)
    assert.same({x = true, y = true, u = true, w = true, v = true, q = true}, bound)
    for _, c in ipairs{true, false} do
      for _, a in ipairs{0.5, -1.25} do
        local env = {a = a, b = 2 * a + 1, c = c}
        assert.same(evaluate(planned, env), evaluate(parted, env))
      end
    end
    assert.structurally_equal(dp.passes.PlanDevices(cfg)(parted), parted)
    assert.same({}, (dp.planner.verify(parted, cfg)))
  end)

  it("keeps a let whose variable a function literal reads", function()
    local planned = dp.passes.PlanDevices(cfg)(parse([[def @main(%x: float32) {
      let %a = negative(%x); let %b = exp(%a); let %f = fn (%y: float32) { add(%y, %a) }; %f(%b) }]]))
    local parted = partition(planned)
    local bound = {}
    dp.visit(parted.main.body, function(e) if e.kind == "let" then bound[e.var.name] = true end end)
    assert.is_true(bound.a)
    assert.same(evaluate(planned, {x = 0.7}), evaluate(parted, {x = 0.7}))
  end)

  it("by = \"device_type\" and \"target\"; options are checked", function()
    local planned = dp.passes.PlanDevices(cfg)(parse("def @main(%x: " .. T .. ") { %0 = negative(%x); exp(%0) }"))
    for _, by in ipairs{"target", "device_type"} do
      local fns = hoisted(dp.passes.PartitionByVirtualDevice{by = by}(planned), planned)
      assert.equal("negative,exp", fns.main_cuda_0.ops, by)
    end
    assert.has_error(function() dp.passes.PartitionByVirtualDevice{by = "colour"} end)
    assert.has_error(function() dp.passes.PartitionByVirtualDevice{colour = 1} end)
    assert.has_error(function() dp.passes.PartitionByVirtualDevice{config = 5} end)
    local ok, err = pcall(partition, 5)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("[mM]odule"), tostring(err))
  end)

  local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
  -- (pieces of 10,000 calls: module function lookups are linear in the number of
  -- functions, src/core/module.c, so 100,000 hoisted functions would be slow)
  it("partitions a " .. N .. "-call chain that changes device every 10,000 calls", function()
    local x = dp.var("x", dp.type.tensor({4}, "float32"))
    local e = x
    for i = 1, N do
      e = dp.call(i % 2 == 0 and "negative" or "exp", {e})
      if i % 10000 == 0 then e = dp.call("on_device", {e}, {virtual_device = (i // 10000) % 2 == 0 and CPU or GPU}) end
    end
    local mod = dp.infer_type(dp.IRModule{functions = {{"main", dp.fn({x}, e)}}})
    local planned = dp.passes.PlanDevices(cfg)(mod)
    local parted = partition(planned)
    assert.equal(N // 10000 + 1, #parted:functions())
    assert.same({}, (dp.planner.verify(parted, cfg)))
  end)
end)

describe("the accelerator example", function()
  local function run(cmd)
    local p = assert(io.popen(cmd .. " 2>&1"))
    local out = p:read("a")
    local ok, _, code = p:close()
    return out, ok and 0 or code
  end

  it("puts resnet18's conv2d groups on the accelerator, from Lua", function()
    local out, code = run(EXE .. " examples/accelerator.lua")
    assert.equal(0, code, out)
    assert.truthy(out:find("ext_dev: 9 functions", 1, true), out)
    assert.truthy(out:find("@main_ext_dev_0: nn.conv2d, nn.batch_norm, nn.relu\n", 1, true), out)
    assert.truthy(out:find("cpu: 10 functions", 1, true), out)
  end)

  it("and from the command line with --rules", function()
    local out, code = run(EXE .. " plan " .. t.shared_dir .. "/models/resnet18.relay --target llvm"
      .. " --target ext_dev --default cpu --rules examples/rules/accelerator.lua")
    assert.equal(0, code, out)
    -- 9 groups, each fed its data and 5 weights and read back: the copies say where
    local to_accel = select(2, out:gsub("dst_virtual_device=VirtualDevice%(device_type=ext_dev", ""))
    assert.equal(54, to_accel, out:sub(1, 2000))
    local bad, bcode = run(EXE .. " plan " .. t.shared_dir .. "/models/resnet18.relay --target llvm --rules /no/such.lua")
    assert.equal(1, bcode)
    assert.truthy(bad:find("cannot open", 1, true), bad)
  end)
end)
