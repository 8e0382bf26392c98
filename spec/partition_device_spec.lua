-- dp.passes.PartitionByVirtualDevice (src/planner/partition.c): on a planned
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
    assert.same({device = CPU, ops = "add"}, fns.main_llvm_0)
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
    assert.equal("tanh", fns.main_llvm_0.ops)
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
    assert.same({device = CPU, ops = "subtract,log"}, fns.main_llvm_0)
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

  it("fences the lets a piece would read out of their scope, in a body without branches", function()
    -- the first attempt's pieces read variables out of their scope (a
    -- piece's call lands where all its uses meet): the second attempt makes
    -- the bodies of those lets blocks (no if opens one here: the fences
    -- alone do), which leaves two pieces; every let body a block (the third
    -- attempt's) would make five
    local planned = dp.passes.PlanDevices(cfg)(parse("def @main(%a: " .. T .. ", %b: " .. T .. ") {" .. [[
      let %v1 = on_device(multiply(%a, multiply(multiply(%b, %a), multiply(%b, %b))), virtual_device=meta[VirtualDevice][0]);
      let %v2 = multiply(subtract(%b, %v1), nn.relu(add(%a, %b)));
      let %v3 = multiply(on_device(subtract(%v2, exp(%v1)), virtual_device=meta[VirtualDevice][0]), %b);
      let %v4 = %v2;
      let %v5 = subtract(subtract(nn.relu(%v4), %b), negative(%v2));
      let %v6 = %a;
      add(%a, multiply(exp(%v6), on_device(add(%v3, %v2), virtual_device=meta[VirtualDevice][0])))
    }]]))
    local parted = partition(planned)
    local fns = hoisted(parted, planned)
    assert.equal(2, count(fns))
    assert.equal("tuple", parted:get("main_llvm_0").body.kind, "%v2, %v3 and %v5 leave the first piece")
    assert.same({}, (dp.planner.verify(parted, cfg)))
    for _, a in ipairs{0.5, -1.25} do
      local env = {a = a, b = 2 * a + 1}
      assert.same(evaluate(planned, env), evaluate(parted, env))
    end
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

  it("leaves a primitive global function as it is, whatever its Primitive attribute's value (the planner does not plan it)", function()
    for _, flag in ipairs{"1", "True"} do
      local planned = dp.passes.PlanDevices(cfg)(parse("def @main(%a: " .. T .. ", %b: " .. T .. [[) { @f(%a, %b) }
        def @f(%x: ]] .. T .. ", %y: " .. T .. ", Primitive=" .. flag .. [[) {
          %0 = add(%x, %y); %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]); multiply(%1, %y) }]]))
      local parted = partition(planned)
      assert.same({"main_cuda_0"}, t.sorted_keys(hoisted(parted, planned)), flag)
      assert.structurally_equal(planned:get("f"), parted:get("f"))
    end
  end)

  it("partitions inside function literals: the calls of a loop's closure (TVM's test_while_let)", function()
    local planned = dp.passes.PlanDevices(cfg)(parse([[
def @main(%v1: Tensor[(2), float32]) {
  let %loop = fn (%i: int32, %s: Tensor[(2), float32]) -> Tensor[(2), float32] {
    %0 = less(%i, 10);
    if (%0) {
      %1 = add(%i, 1);
      %2 = add(%s, %v1);
      %3 = on_device(%2, virtual_device=meta[VirtualDevice][0]);
      %4 = multiply(%3, %3);
      %loop(%1, %4)
    } else {
      %s
    }
  };
  %loop(0, zeros_like(%v1))
}]]))
    local parted = partition(planned)
    local fns = hoisted(parted, planned)
    -- the loop's own calls are hoisted where they are, inside the closure
    local inside = {}
    dp.visit(parted.main.body.value.body, function(e)
      if e.kind == "call" and e.callee.kind == "global" then
        local f = fns[e.callee.name]
        inside[#inside + 1] = f.ops .. "@" .. f.device.device_type_name
      end
    end)
    table.sort(inside)
    -- (the loop's state lives where the annotated add is: on the CPU) the condition, the
    -- counter and the accumulation are three pieces: siblings no edge connects stay apart
    assert.same({"add,multiply@cpu", "add@cpu", "less@cpu"}, inside)
    assert.same({}, (dp.planner.verify(parted, cfg)))
    assert.same(evaluate(planned, {v1 = 3}), evaluate(parted, {v1 = 3}))
    -- a Composite function is one unit: its call is a member, the function moves inside
    local comp = dp.passes.PlanDevices(cfg)(parse([[
def @main(%x: Tensor[(2), float32]) {
  %0 = fn (%a: Tensor[(2), float32], Composite="npu.add_relu") { %1 = add(%a, %a); nn.relu(%1) };
  %2 = %0(%x);
  exp(%2)
}]]))
    local cparted = partition(comp)
    local only
    for _, f in ipairs(cparted:functions()) do if f[1] ~= "main" then only = f[2] end end
    assert.equal(2, #cparted:functions())
    assert.equal("fn", only.body.args[1].callee.kind, "the Composite function is inside the piece")
    assert.equal("npu.add_relu", only.body.args[1].callee.attrs.Composite)
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

describe("PartitionByVirtualDevice's regions as data", function()
  local cfg = t.config("cuda")
  local text = "def @main(%x: " .. T .. ", %y: " .. T .. [[) {
      %0 = add(%x, %y); %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
      %2 = log(%1); %3 = exp(%1); %4 = (%2, %3); concatenate(%4) }]]

  it("names each region, its device and target, the nodes it computes, its inputs and outputs", function()
    local planned = dp.passes.PlanDevices(cfg)(parse(text))
    local partition = dp.passes.PartitionByVirtualDevice{config = cfg}
    local parted, regions = partition.partition(planned)
    assert.equal(2, #regions)
    local by_name = {}
    for _, r in ipairs(regions) do by_name[r.name] = r end
    local cpu, gpu = by_name.main_llvm_0, by_name.main_cuda_0
    assert.equal("main", cpu.caller)
    assert.is_true(rawequal(CPU, cpu.virtual_device))
    assert.is_true(rawequal(CPU.target, cpu.target))
    assert.is_true(rawequal(GPU, gpu.virtual_device))
    -- the nodes are the planned module's own: the add, then log, exp, the tuple and concatenate
    local add = t.find_call(planned, "add")
    assert.equal(1, #cpu.nodes)
    assert.is_true(rawequal(add, cpu.nodes[1]))
    assert.same({"log", "exp", "tuple", "concatenate"}, (function()
      local l = {}
      for i, e in ipairs(gpu.nodes) do l[i] = e.kind == "call" and e.callee.name or e.kind end
      return l
    end)())
    assert.same({"x", "y"}, {cpu.inputs[1].name, cpu.inputs[2].name})
    assert.is_true(rawequal(add, cpu.outputs[1]))
    assert.equal(2, #gpu.inputs, "a copy of the add for log and one for exp (PlanDevices copies per use)")
    for _, input in ipairs(gpu.inputs) do
      assert.equal("device_copy", input.callee.name)
      assert.is_true(rawequal(add, input.args[1].args[1]))
    end
    assert.is_true(rawequal(gpu.nodes[4], gpu.outputs[1]))
    -- the pass called as a pass gives the same module, and leaves the regions in its context
    local ctx = dp.PassContext()
    assert.is_true(dp.structural_equal(partition(planned, ctx), parted))
    assert.equal(2, #ctx.regions)
    assert.equal("main_llvm_0", ctx.regions[1].name)
  end)

  it("running out of memory anywhere is a memory error, and the state stays usable", function()
    local planned = dp.passes.PlanDevices(cfg)(parse(text))
    local partition = dp.passes.PartitionByVirtualDevice{config = cfg}
    local want = tostring((partition.partition(planned)))
    local failures = 0
    for n = 1, 600 do
      dp.debug.fail_alloc(n)
      local ok, res = pcall(partition.partition, planned)
      dp.debug.fail_alloc(0)
      if ok then -- (a cache that could not grow is only slower)
        assert.equal(want, tostring(res), "n = " .. n)
      else
        failures = failures + 1
        assert.equal("memory", res.code, tostring(res))
      end
    end
    assert.is_true(failures > 45, failures .. " allocations failed") -- (50 since closed aliases are dropped: no store for them)
    assert.equal(want, tostring((partition.partition(planned))))
  end)

  it("devplan plan --partition --report prints them, as text and as JSON", function()
    local file = t.temp_file("def @main(%x: " .. T .. ", %y: " .. T .. [[) {
  %0 = add(%x, %y);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  %2 = log(%1);
  exp(%2)
}]])
    local code, out, err = t.run_devplan("plan " .. file .. " --default cuda --partition --report text")
    assert.equal(0, code, err)
    assert.truthy(out:find("2 regions hoisted by PartitionByVirtualDevice:", 1, true), out)
    assert.truthy(out:find("@main_llvm_0  from @main, runs on VirtualDevice(device_type=cpu", 1, true), out)
    assert.truthy(out:find("computes: add at 2:8\n    inputs:   %x, %y\n    outputs:  add at 2:8", 1, true), out)
    assert.truthy(out:find("computes: log at 4:8, exp at 5:3", 1, true), out)
    code, out, err = t.run_devplan("plan " .. file .. " --default cuda --partition --report json")
    assert.equal(0, code, err)
    local data = require("dkjson").decode(out)
    assert.equal(2, #data.regions)
    assert.equal("main_llvm_0", data.regions[1].name)
    assert.equal("llvm", data.regions[1].target)
    assert.same({"%x", "%y"}, data.regions[1].inputs)
    assert.truthy(data.totals)
    -- without --partition, no regions
    code, out = t.run_devplan("plan " .. file .. " --report text")
    assert.equal(0, code)
    assert.falsy(out:find("regions hoisted", 1, true))
    t.remove_temp_files()
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
