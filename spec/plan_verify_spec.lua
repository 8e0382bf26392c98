-- dp.planner.verify: hand-made wrong plans (each kind of violation, with its
-- position), wrong plans made by mutating right ones, the wrong plans the
-- planner used to make (../shared/repro), its API, and every plan of the
-- conformance cases, the models and the generated workloads passing it.
local dp = require "devplan"
local t = require "devplan.testing"
local gen = dofile("bench/gen.lua")

local P = t.PALETTE
local CONFIG = t.config("cuda")
-- (7 and up: the host and cuda in a memory scope, the generator's findings g10-g12)
local HOST_SA = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0, target = t.TARGET.HOST,
                                 memory_scope = "scopeA"}
local HOST_GLOBAL = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0, target = t.TARGET.HOST,
                                     memory_scope = "global"}
local CPU_GLOBAL = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0, target = t.TARGET.CPU,
                                    memory_scope = "global"}
local META = {VirtualDevice = {P.CPU, P.GPU, P.HOST, P.CPU_SCOPE_A, P.CPU_SCOPE_B, P.GLOBAL, P.TEXTURE,
                               P.GPU_SCOPE_GLOBAL, HOST_SA, HOST_GLOBAL, CPU_GLOBAL,
                               dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0, target = t.TARGET.GPU,
                                                memory_scope = "scopeB"}},
              ["relay.Constant"] = {dp.const({5, 7}, "int64")}}
local T = "Tensor[(5, 7), float32]"
local CPU, GPU, HOST, SA, SB = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]", "meta[VirtualDevice][2]",
                               "meta[VirtualDevice][3]", "meta[VirtualDevice][4]"

-- Fills {CPU} ... in a text.
local function fill(text)
  return (text:gsub("{(%u+)}", {CPU = CPU, GPU = GPU, HOST = HOST, SA = SA, SB = SB, T = T,
                                 GG = "meta[VirtualDevice][7]", HSA = "meta[VirtualDevice][8]",
                                 HG = "meta[VirtualDevice][9]", CG = "meta[VirtualDevice][10]",
                                 GSB = "meta[VirtualDevice][11]"}))
end

local function parse(text) return dp.parse(fill(text), META, {source_name = "p.relay"}) end

local function verify(planned_text, input_text)
  return dp.planner.verify(parse(planned_text), CONFIG, input_text and {input = parse(input_text)})
end

-- The one violation of planned_text: kind, line, col and a piece of its message.
local function one(kind, line, col, words, planned_text, input_text)
  local vs, n = verify(planned_text, input_text)
  local all = {}
  for _, v in ipairs(vs) do all[#all + 1] = v.kind .. " " .. tostring(v.line) .. ":" .. tostring(v.col) .. " " .. v.message end
  assert.equal(1, n, table.concat(all, "\n"))
  local v = vs[1]
  assert.equal(kind, v.kind, v.message)
  assert.equal(line, v.line, v.message)
  if col then assert.equal(col, v.col, v.message) end
  assert.equal("p.relay", v.source)
  assert.truthy(v.message:find(words, 1, true), v.message)
  return v
end

describe("dp.planner.verify finds", function()
  it("an operator's argument on another device than the call", function()
    local v = one("argument", 2, 3, "%a in subtract at p.relay:2:3 lives on cpu, but subtract runs on cuda", [[
def @main(%a {virtual_device={CPU}}: {T}, %b {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  subtract(%a, %b)
}]])
    assert.equal("var", v.expr.kind)
    assert.is_true(rawequal(v.expected, CONFIG:canonical(P.GPU)))
    assert.is_true(rawequal(v.actual, CONFIG:canonical(P.CPU)))
  end)

  it("a call's result on the host where an argument of a device call is expected", function()
    one("context", 3, 8, "vm.shape_of at p.relay:3:8 gives its result on cpu", [[
def @main(%x {virtual_device={GPU}}: Tensor[(3), float32], virtual_device={GPU}) {
  %0 = negative(%x);
  %1 = vm.shape_of(%0);
  %1
}]])
  end)

  it("a shape argument that is not on the host", function()
    one("argument", 2, 3, "vm.reshape_tensor needs it on the host", [[
def @main(%x {virtual_device={GPU}}: {T}, %s {virtual_device={GPU}}: Tensor[(2), int64], virtual_device={GPU}) {
  vm.reshape_tensor(%x, %s, newshape=[7, 5])
}]])
  end)

  it("a device_copy from a device to itself", function()
    one("copy", 2, 8, "copies from cuda to cuda: a copy to the same device", [[
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  %0 = device_copy(%a, src_virtual_device={GPU}, dst_virtual_device={GPU});
  negative(%0)
}]])
  end)

  it("a device_copy whose source is not where its argument lives", function()
    one("copy", 2, 8, "%a in device_copy at p.relay:2:8 lives on cpu, but the copy copies from cuda", [[
def @main(%a {virtual_device={CPU}}: {T}, virtual_device={CPU}) {
  %0 = device_copy(%a, src_virtual_device={GPU}, dst_virtual_device={CPU});
  negative(%0)
}]])
  end)

  it("a device_copy whose destination is not what its consumer expects", function()
    -- e_partial_device_copy_attrs_not_refined.lua: the output TVM's rules gave
    one("context", 2, 8, "copies to cpu, but its consumer expects cpu (memory scope \"scopeA\")", [[
def @main(%a {virtual_device={SA}}: {T}, virtual_device={SA}) {
  %0 = device_copy(%a, src_virtual_device={SA}, dst_virtual_device={CPU});
  subtract(%a, %0)
}]])
  end)

  it("a device_copy without its ends", function()
    local vs, n = verify([[
def @main(%x {virtual_device={GPU}}: Tensor[(3), float32], virtual_device={GPU}) {
  device_copy(%x)
}]])
    assert.equal(1, n)
    assert.equal("copy", vs[1].kind)
    assert.truthy(vs[1].message:find("has no src_virtual_device", 1, true))
  end)

  it("functions and parameters without virtual_device", function()
    local vs, n = verify([[
def @main(%a: {T}) {
  negative(%a)
}]])
    assert.equal(2, n)
    assert.equal("@main at p.relay:1:1 has no virtual_device", vs[1].message)
    assert.same({"annotation", 1, 11}, {vs[2].kind, vs[2].line, vs[2].col})
    assert.equal("parameter %a of @main at p.relay:1:1 has no virtual_device", vs[2].message)
  end)

  it("a body that does not live where its function's virtual_device says", function()
    one("argument", 1, 1, "%a in fn at p.relay:1:1 lives on cpu, but the function's virtual_device is cuda", [[
def @main(%a {virtual_device={CPU}}: {T}, virtual_device={GPU}) {
  %a
}]])
  end)

  it("an on_device that does not fix its result", function()
    local vs = verify([[
def @main(%a {virtual_device={CPU}}: {T}, virtual_device={CPU}) {
  %0 = negative(%a);
  %1 = on_device(%0, virtual_device={CPU});
  negative(%1)
}]])
    assert.equal(1, #vs)
    assert.same({"annotation", 3, 8}, {vs[1].kind, vs[1].line, vs[1].col})
    assert.truthy(vs[1].message:find("does not fix a device", 1, true))
  end)

  it("a call of a global function outside the device it returns on", function()
    -- (col: wherever the parser puts a call of a global)
    local v = one("context", 5, nil, "returns on cpu, but where it stands cuda is expected", [[
def @f(%x {virtual_device={CPU}}: {T}, virtual_device={CPU}) {
  negative(%x)
}
def @main(%a {virtual_device={CPU}}: {T}, virtual_device={GPU}) {
  %0 = @f(%a);
  negative(%0)
}]])
    assert.equal(v.expr.span.col, v.col)
  end)

  it("an argument of a global function on another device than its parameter", function()
    one("argument", 6, nil, "lives on cuda, but parameter %x of the function called is on cpu", [[
def @f(%x {virtual_device={CPU}}: {T}, virtual_device={GPU}) {
  %0 = device_copy(%x, src_virtual_device={CPU}, dst_virtual_device={GPU});
  negative(%0)
}
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  @f(%a)
}]])
  end)

  it("one node in two device contexts", function()
    local vs = verify([[
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  %0 = negative(%a);
  %1 = on_device(%0, virtual_device={GPU}, constrain_result=True);
  %2 = device_copy(%1, src_virtual_device={GPU}, dst_virtual_device={CPU});
  %3 = on_device(%2, virtual_device={CPU}, constrain_result=True);
  %4 = add(%3, %0);
  %5 = on_device(%4, virtual_device={CPU}, constrain_result=True);
  device_copy(%5, src_virtual_device={CPU}, dst_virtual_device={GPU})
}]])
    assert.equal(1, #vs)
    assert.same({"context", 2, 8}, {vs[1].kind, vs[1].line, vs[1].col})
    assert.truthy(vs[1].message:find("negative at p.relay:2:8 lives on cuda, but it is also used where cpu is expected", 1, true))
  end)

  it("tuple fields, if branches and let bodies on another device than their context", function()
    local vs, n = verify([[
def @main(%a {virtual_device={CPU}}: {T}, %c {virtual_device={GPU}}: bool, virtual_device={GPU}) {
  %0 = if (%c) { %a } else { %a };
  let %x = on_device(%0, virtual_device={GPU}, constrain_result=True);
  let %y = (%a, %x);
  %a
}]])
    local where = {}
    for _, v in ipairs(vs) do where[#where + 1] = v.line .. ":" .. v.col .. " " .. v.message end
    table.sort(where)
    assert.equal(4, n, table.concat(where, "\n"))
    assert.same({
      "2:8 %a in if at p.relay:2:8 lives on cpu, but the if is on cuda",
      "2:8 %a in if at p.relay:2:8 lives on cpu, but the if is on cuda",
      "4:12 %a in tuple at p.relay:4:12 lives on cpu, but the tuple is on cuda",
      "4:3 %a in let at p.relay:4:3 lives on cpu, but the let is on cuda",
    }, where)
  end)

  it("a call_lowered argument or result in another memory scope than the primfn's buffer", function()
    local vs, n = verify([[
primfn @gem(Tensor[(128, 128), float32] scope="scopeA") -> Tensor[(128, 128), float32] scope="scopeA";
def @main(%x {virtual_device={SB}}: Tensor[(128, 128), float32], virtual_device={SB}) {
  call_lowered(@gem, (%x,))
}]])
    assert.equal(2, n)
    assert.truthy(vs[1].message:find("lives in memory scope \"scopeB\", but buffer 0 of primfn @gem is in scope \"scopeA\"", 1, true), vs[1].message)
    assert.truthy(vs[2].message:find("primfn @gem gives its result in scope \"scopeA\"", 1, true), vs[2].message)
  end)

  it("a device that is not one of the configuration's", function()
    local vulkan = dp.VirtualDevice{device_type = "vulkan"}
    local m = dp.parse(fill([[
def @main(%a {virtual_device=meta[VirtualDevice][0]}: {T}, virtual_device=meta[VirtualDevice][0]) {
  negative(%a)
}]]), {VirtualDevice = {vulkan}})
    local vs = dp.planner.verify(m, CONFIG)
    assert.is_true(#vs >= 1)
    assert.equal("annotation", vs[1].kind)
    assert.truthy(vs[1].message:find("is not one of the configuration's", 1, true), vs[1].message)
  end)
end)

describe("dp.planner.verify with the input", function()
  it("finds an on_device of a variable the plan dropped", function()
    -- e_respect_on_device_of_variable_dropped.lua: the output TVM's rules gave
    one("input", 2, 3, "on_device at p.relay:2:12 puts the value of %a at p.relay:1:11 on cpu in the input, " ..
        "but the planned module has it on cuda", [[
def @main(%a {virtual_device={GPU}}: {T}, %b {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  let %v = %a;
  add(%v, %b)
}]], [[
def @main(%a: {T}, %b: {T}) {
  let %v = on_device(%a, virtual_device={CPU});
  add(%v, %b)
}]])
  end)

  it("finds nested annotations whose copy the plan lost", function()
    -- b_idempotent_nested_on_device.lua: the output TVM's rules gave
    local planned = [[
def @main(%a {virtual_device={CPU}}: {T}, %b {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  subtract(%a, %b)
}]]
    local input = [[
def @main(%a: {T}, %b: {T}) {
  %0 = on_device(%a, virtual_device={CPU});
  %1 = on_device(%0, virtual_device={GPU});
  subtract(%1, %b)
}]]
    one("argument", 2, 3, "%a in subtract at p.relay:2:3 lives on cpu, but subtract runs on cuda", planned, input)
  end)

  it("finds parameter and function annotations the plan changed", function()
    local vs, n = verify([[
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  negative(%a)
}]], [[
def @main(%a {virtual_device={CPU}}: {T}, virtual_device={SA}) {
  negative(%a)
}]])
    assert.equal(2, n)
    assert.equal("the result of @main at p.relay:1:1 is annotated cpu (memory scope \"scopeA\") in the input, " ..
                 "but the planned module has it on cuda", vs[1].message)
    assert.equal("parameter %a of @main at p.relay:1:1 is annotated cpu in the input, but the planned module has it on cuda",
                 vs[2].message)
  end)

  it("finds device_copy ends the plan does not respect", function()
    one("input", 2, 3, "device_copy at p.relay:2:8 puts %a at p.relay:1:11 on cpu in the input", [[
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  negative(%a)
}]], [[
def @main(%a: {T}) {
  %0 = device_copy(%a, src_virtual_device={CPU}, dst_virtual_device={GPU});
  negative(%0)
}]])
  end)

  it("accepts a device refined with a memory scope", function()
    local vs = verify([[
def @main(%a {virtual_device={SA}}: {T}, virtual_device={SA}) {
  negative(%a)
}]], [[
def @main(%a: {T}) {
  %0 = on_device(%a, virtual_device={CPU});
  negative(%0)
}]])
    assert.same({}, vs)
  end)

  -- the input's annotated value stands inside the chain the planner made
  -- at that position, not always at its top: no false report
  it("accepts a copy phase 0b put after an input device_copy", function()
    -- generated seed 3060: relu(%3) took %3 (a copy to cuda) on the cpu
    local input = parse([[
def @main(%a1 {virtual_device={CPU}}: {T}, %a2: {T}, virtual_device={CPU}) -> {T} {
  %3 = device_copy(multiply(exp(%a1), %a1), src_virtual_device={CPU}, dst_virtual_device={GPU});
  let %v4 = on_device(on_device(multiply(device_copy(%3, src_virtual_device={GPU}, dst_virtual_device={CPU}), nn.relu(%3)), virtual_device={CPU}), virtual_device=VirtualDevice(device_type=cpu));
  %a1
}]])
    local planned = t.plan(CONFIG)(input)
    assert.same({}, (dp.planner.verify(planned, CONFIG, {input = input})))
    -- (the copy the input wrote is there, with the planner's after it)
    local _, copies = tostring(planned):gsub("device_copy%(", "")
    assert.equal(3, copies)
  end)

  it("accepts an input copy that went (equal ends) under a copy the planner made", function()
    -- fuzz corpus 424e9825...: on_device(device_copy(%z, src=cpu), scopeA, fixed)
    -- as an argument of a primfn whose buffer is in another scope
    local config = t.config("cuda")
    local meta = {VirtualDevice = {P.CPU_SCOPE_A, P.GPU, P.CPU}}
    local input = dp.parse([[
primfn @gem(Tensor[(2, 2), float32] scope="scopeB") -> Tensor[(2, 2), float32] scope="scopeB";
def @main(%z {virtual_device=meta[VirtualDevice][2]}: Tensor[(2, 2), float32]) {
  %0 = device_copy(%z, src_virtual_device=meta[VirtualDevice][2]);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %2 = call_lowered(@gem, (%1,));
  on_device(%2, virtual_device=meta[VirtualDevice][1], constrain_result=True)
}]], meta)
    local planned = dp.passes.PlanDevices(config)(input)
    assert.same({}, (dp.planner.verify(planned, config, {input = input})))
    assert.truthy(tostring(planned):find('memory_scope="scopeB"', 1, true))
  end)

  it("finds a module that is not the input planned", function()
    local vs = verify([[
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  negative(%a)
}]], [[
def @main(%a: {T}) {
  add(%a, %a)
}
def @g(%b: {T}) {
  %b
}]])
    assert.equal(2, #vs)
    assert.truthy(vs[1].message:find("does not stand where the input has add", 1, true), vs[1].message)
    assert.equal("@g of the input is not in the planned module", vs[2].message)
  end)
end)

-- The generator's findings g10-g13 (fuzz/findings/): plans TVM's rules give
-- that the verifier used to reject, each as the exact plan, verified.
describe("dp.planner.verify and the generator's findings", function()
  local function plans(input, expected) assert.plans_to(fill(input), fill(expected), CONFIG, META) end

  describe("host positions take the memory scope defaulting gives them (g10)", function()
    -- planner.md: the host is (cpu, 0, host target) with no memory scope, and
    -- defaulting a call's domain fills the scope from the call's result, as
    -- TVM's SetResultDefaultThenParams does: a host position refined with a
    -- scope is on the host
    it("the size and alignment of an alloc_storage in a memory scope", function()
      plans([[
def @main(%a: {T}) -> {T} {
  let %s = memory.alloc_storage(64i64, 0i64, virtual_device={SA});
  %a
}]], [[
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) -> {T} {
  %0 = on_device(64i64, virtual_device={HSA}, constrain_result=True);
  %1 = on_device(0i64, virtual_device={HSA}, constrain_result=True);
  %2 = memory.alloc_storage(%0, %1, virtual_device={SA});
  let %s = on_device(%2, virtual_device={SA}, constrain_result=True);
  %a
}]])
    end)

    it("the result of vm.shape_of bound where the let is in a memory scope", function()
      plans([[
def @main(%a: {T}) -> {T} {
  let %s = vm.shape_of(device_copy(%a, src_virtual_device={CPU}, dst_virtual_device={GG}), dtype="int64");
  %a
}]], [[
def @main(%a {virtual_device={CG}}: {T}, virtual_device={CG}) -> {T} {
  %0 = device_copy(%a, src_virtual_device={CG}, dst_virtual_device={GG});
  %1 = on_device(%0, virtual_device={GG}, constrain_result=True);
  %2 = vm.shape_of(%1, dtype="int64");
  let %s = on_device(%2, virtual_device={HG}, constrain_result=True);
  %a
}]])
    end)

    it("the shape of a vm.reshape_tensor whose data is in a memory scope", function()
      plans([[
def @main(%a: {T}) -> {T} {
  vm.reshape_tensor(on_device(%a, virtual_device={SA}, constrain_result=True), meta[relay.Constant][0], newshape=[5, 7])
}]], [[
def @main(%a {virtual_device={SA}}: {T}, virtual_device={SA}) -> {T} {
  %0 = on_device(meta[relay.Constant][0], virtual_device={HSA}, constrain_result=True);
  vm.reshape_tensor(%a, %0, newshape=[5, 7])
}]])
    end)

    it("but a host position on another target or device is still found", function()
      -- (cpu, "scopeA") with the cpu target is not the host target refined
      one("argument", 2, 8, "lives on cpu (memory scope \"scopeA\"), but memory.alloc_storage needs it on the host", [[
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  %0 = on_device(64i64, virtual_device={SA}, constrain_result=True);
  %1 = on_device(0i64, virtual_device={HSA}, constrain_result=True);
  %2 = memory.alloc_storage(%0, %1, virtual_device={SA});
  let %s = on_device(%2, virtual_device={SA}, constrain_result=True);
  %a
}]])
      one("context", 3, 8, 'vm.shape_of at p.relay:3:8 gives its result on VirtualDevice(device_type=cpu, ' ..
          'virtual_device_id=0, target="llvm"), but where it stands', [[
def @main(%x {virtual_device={CPU}}: Tensor[(3), float32], virtual_device={CPU}) {
  %0 = negative(%x);
  %1 = vm.shape_of(%0);
  %1
}]])
    end)
  end)

  describe("an alloc_storage device the plan completes (g11)", function()
    -- TVM's capture keeps the attribute as written; where the storage
    -- stands refines it
    it("is accepted as written", function()
      plans([[
def @main(%a: {T}) -> {T} {
  let %s = memory.alloc_storage(64i64, 0i64, virtual_device=VirtualDevice(device_type=cpu));
  %a
}]], [[
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) -> {T} {
  %0 = on_device(64i64, virtual_device={HOST}, constrain_result=True);
  %1 = on_device(0i64, virtual_device={HOST}, constrain_result=True);
  %2 = memory.alloc_storage(%0, %1, virtual_device=VirtualDevice(device_type=cpu));
  let %s = on_device(%2, virtual_device={CPU}, constrain_result=True);
  %a
}]])
    end)

    it("and found where the storage stands on another device", function()
      one("context", 4, 8, "memory.alloc_storage at p.relay:4:8 gives its result on cpu", [[
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={GPU}) {
  %0 = on_device(64i64, virtual_device={HOST}, constrain_result=True);
  %1 = on_device(0i64, virtual_device={HOST}, constrain_result=True);
  %2 = memory.alloc_storage(%0, %1, virtual_device=VirtualDevice(device_type=cpu));
  let %s = on_device(%2, virtual_device={GPU}, constrain_result=True);
  %a
}]])
    end)
  end)

  describe("an annotation around a call_lowered holds for phase 0's wrapper (g12)", function()
    -- planner.md, phase 0: call_lowered's result is wrapped in an
    -- unconstrained on_device so that a copy may follow the primfn's scope
    it("a fixed on_device in another scope than the primfn's result: a copy after the call", function()
      plans([[
primfn @p({T}) -> {T} scope="scopeB";
def @main(%a: {T}) -> {T} {
  on_device(call_lowered(@p, (%a,)), virtual_device={SA}, constrain_result=True)
}]], [[
primfn @p({T} scope="scopeA") -> {T} scope="scopeB";
def @main(%a {virtual_device={SA}}: {T}, virtual_device={SA}) -> {T} {
  %0 = call_lowered(@p, (%a,));
  %1 = on_device(%0, virtual_device={SB}, constrain_result=True);
  device_copy(%1, src_virtual_device={SB}, dst_virtual_device={SA})
}]])
    end)

    it("a device_copy's source: the copy the planner made stands before it", function()
      plans([[
primfn @p({T}) -> {T};
def @main(%a {virtual_device={GPU}}: {T}) -> {T} {
  device_copy(call_lowered(@p, (call_lowered(@p, (%a,)),)), src_virtual_device={CPU}, dst_virtual_device={CPU})
}]], [[
primfn @p({T}) -> {T};
def @main(%a {virtual_device={GPU}}: {T}, virtual_device={CPU}) -> {T} {
  %0 = call_lowered(@p, (%a,));
  %1 = call_lowered(@p, (%0,));
  %2 = on_device(%1, virtual_device={GPU}, constrain_result=True);
  device_copy(%2, src_virtual_device={GPU}, dst_virtual_device={CPU})
}]])
    end)

    it("an annotation on an argument", function()
      plans([[
primfn @p({T} scope="global", {T} scope="scopeB") -> {T};
def @main(%a: {T}) -> {T} {
  call_lowered(@p, (%a, on_device(%a, virtual_device={CPU}, constrain_result=True)))
}]], [[
primfn @p({T} scope="global", {T} scope="scopeB") -> {T};
def @main(%a {virtual_device={CG}}: {T}, virtual_device={GPU}) -> {T} {
  %0 = device_copy(%a, src_virtual_device={CG}, dst_virtual_device={GSB});
  %1 = on_device(%0, virtual_device={GSB}, constrain_result=True);
  call_lowered(@p, (%a, %1))
}]])
    end)

    it("but a plan without the copy is still found", function()
      local vs = verify([[
primfn @p({T} scope="scopeB") -> {T} scope="scopeB";
def @main(%a {virtual_device={SB}}: {T}, virtual_device={SB}) -> {T} {
  call_lowered(@p, (%a,))
}]], [[
primfn @p({T}) -> {T} scope="scopeB";
def @main(%a: {T}) -> {T} {
  on_device(call_lowered(@p, (%a,)), virtual_device={SA}, constrain_result=True)
}]])
      assert.is_true(#vs >= 1)
      assert.truthy(vs[1].message:find("puts the value of call_lowered at p.relay:3:13 on cpu (memory scope \"scopeA\") " ..
                                       "in the input", 1, true), vs[1].message)
    end)
  end)

  it("a conflict the conflicts step leaves names the two annotations, each at its place (g13)", function()
    local ok, err = pcall(t.plan(CONFIG), parse([[
def @main(%a {virtual_device={GPU}}: {T}) -> {T} {
  let %v = on_device((%a, %a), virtual_device={CPU}, constrain_result=True);
  on_device(multiply(%a, %a), virtual_device={GPU})
}]]))
    assert.is_false(ok)
    assert.equal("conflict", err.code, tostring(err))
    local msg = tostring(err)
    assert.truthy(msg:find("because of the annotation on_device at p.relay:2:12", 1, true), msg)
    assert.truthy(msg:find("because of the annotation on_device at p.relay:3:3", 1, true), msg)
    assert.is_nil(msg:find("device_copy", 1, true), msg)
  end)
end)

describe("dp.planner.verify's API", function()
  local bad = [[
def @main(%a {virtual_device={CPU}}: {T}, %b {virtual_device={CPU}}: {T}, virtual_device={GPU}) {
  %0 = add(%a, %b);
  %1 = multiply(%0, %a);
  subtract(%1, %b)
}]]

  it("returns the list of violations and how many were found", function()
    local vs, n = verify(bad)
    assert.equal(4, n)
    assert.equal(4, #vs)
    for _, v in ipairs(vs) do
      assert.equal("argument", v.kind)
      assert.is_true(dp.is_expr(v.expr))
    end
  end)

  it("keeps the first `limit`, and counts all", function()
    local vs, n = dp.planner.verify(parse(bad), CONFIG, {limit = 1})
    assert.equal(1, #vs)
    assert.equal(4, n)
  end)

  it("raises them as one \"verify\" devplan.Error with `raise`", function()
    local ok, err = pcall(dp.planner.verify, parse(bad), CONFIG, {raise = true})
    assert.is_false(ok)
    assert.equal("verify", err.code)
    assert.equal(2, err.line)
    assert.equal(8, err.col)
    assert.equal(4, #err.notes)
    assert.truthy(tostring(err):find("the planned module is not consistent (4 violations)", 1, true), tostring(err))
    local ok2, err2 = pcall(dp.planner.verify, parse(bad), CONFIG, {raise = true, limit = 2})
    assert.is_false(ok2)
    assert.equal(3, #err2.notes)
    assert.equal("... and 2 more", err2.notes[3].message)
  end)

  it("returns an empty list for a consistent plan, and raises nothing", function()
    local m = parse([[
def @main(%a: {T}, %b {virtual_device={CPU}}: {T}) {
  %0 = add(%a, %b);
  %1 = multiply(%0, %a);
  subtract(%1, %b)
}]])
    local planned = dp.passes.PlanDevices(CONFIG)(m)
    local vs, n = dp.planner.verify(planned, CONFIG, {input = m, raise = true})
    assert.same({}, vs)
    assert.equal(0, n)
  end)

  it("rejects bad arguments", function()
    local m = parse(bad)
    assert.has_error(function() dp.planner.verify("main", CONFIG) end)
    assert.has_error(function() dp.planner.verify(m, CONFIG, 5) end)
    assert.has_error(function() dp.planner.verify(m, CONFIG, {inptu = m}) end,
                     "bad option 'inptu' to 'verify' (input, raise or limit expected)")
    assert.has_error(function() dp.planner.verify(m, CONFIG, {input = "m"}) end,
                     "bad option 'input' to 'verify' (a module expected)")
    assert.has_error(function() dp.planner.verify(m, CONFIG, {limit = 0}) end,
                     "bad option 'limit' to 'verify' (an integer >= 1 expected)")
    assert.has_error(function() dp.planner.verify(m, CONFIG, {raise = 1}) end,
                     "bad option 'raise' to 'verify' (a boolean expected)")
  end)
end)

-- Right plans made wrong: each copy taken out, or the function moved to
-- another device. Every such mutation of a conformance case is found.
describe("dp.planner.verify on mutated plans", function()
  local dir = t.shared_dir .. "/conformance/cases/"
  local function without_copies(m)
    return dp.rewrite(m, {call = function(call)
      if call.callee.kind == "op" and call.callee.name == "device_copy" then return call.args[1] end
    end})
  end
  local function moved(m, config)
    local f = m:get("main")
    local other = rawequal(f.virtual_device, config:canonical(P.CPU)) and P.GPU or P.CPU
    return m:with_function("main", dp.fn(f.params, f.body, {virtual_device = config:canonical(other),
                                                             ret_type = f.ret_type, attrs = f.attrs}))
  end
  local mutated = 0
  for _, name in ipairs(t.lua_files(dir)) do
    local case = dofile(dir .. name)
    if case.targets[2] then -- the cases with two devices
      it(case.name, function()
        local config = t.config("cuda", case.targets)
        local input = dp.parse(t.text(case.input), t.metatable_for(case))
        local planned = t.plan(config)(input)
        -- (higher_order's one copy feeds a call through a parameter of
        -- function type: the devices of that function's parameters are
        -- written nowhere in the module, the verifier cannot see them)
        if t.count_calls(planned, "device_copy") > 0 and case.name ~= "higher_order" then
          local vs = dp.planner.verify(without_copies(planned), config)
          assert.is_true(#vs > 0, "removing the copies of " .. case.name .. " goes unnoticed")
          mutated = mutated + 1
        end
        local vs = dp.planner.verify(moved(planned, config), config, {input = input})
        assert.is_true(#vs > 0, "moving @main of " .. case.name .. " goes unnoticed")
      end)
    end
  end
  it("had copies to take out in most cases", function() assert.is_true(mutated >= 8, mutated) end)
end)

describe("every plan passes dp.planner.verify", function()
  local models = t.shared_dir .. "/models/"
  local listing = io.popen('ls "' .. models .. '"')
  for f in listing:lines() do
    if f:match("%.relay$") then
      it("model " .. f, function()
        local input = dp.parse(t.read_file(models .. f), t.META)
        for _, dflt in ipairs{"cpu", "cuda"} do t.plan(t.config(dflt))(input) end
      end)
    end
  end
  listing:close()

  -- programs whose devices are read through functions, branches, tuples and references
  local tricky = {
    ["a recursive closure"] = [[
def @main(%x: {T}, %n: int64) {
  let %f = fn (%y: {T}, %k: int64) -> {T} {
    if (less(%k, 1i64)) { %y } else { %f(negative(%y), subtract(%k, 1i64)) }
  };
  %0 = on_device(%x, virtual_device={CPU});
  %f(%0, %n)
}]],
    ["a function chosen by an if"] = [[
def @main(%x: {T}, %c: bool) {
  let %f = fn (%y: {T}) { negative(%y) };
  let %g = fn (%y: {T}) { %0 = on_device(%y, virtual_device={CPU}); add(%0, %0) };
  %1 = if (%c) { %f } else { %g };
  %1(%x)
}]],
    ["a function taken from a tuple"] = [[
def @main(%x: {T}) {
  let %f = fn (%y: {T}) { negative(%y) };
  let %t = (%f, %f);
  %0 = %t.1;
  %1 = on_device(%x, virtual_device={GPU});
  %0(%1)
}]],
    ["references"] = [[
def @main(%x: {T}) {
  let %r = ref(%x);
  %0 = ref_read(%r);
  %1 = on_device(%0, virtual_device={CPU});
  let %u = ref_write(%r, negative(%1));
  ref_read(%r)
}]],
    -- (phase 0 moves the inner annotation below the projection: the outer one
    -- then holds for the inner one's result, after a copy)
    ["a projection of an on_device under another annotation"] = [[
def @main(%x: {T}) {
  on_device((on_device((%x, %x), virtual_device={CPU})).0, virtual_device={GPU})
}]],
    ["call_lowered of a function"] = [[
def @f(%y: {T}) -> {T} { negative(%y) }
def @main(%x: {T}) {
  %0 = on_device(%x, virtual_device={CPU});
  %1 = call_lowered(@f, (%0,));
  add(%1, %1)
}]],
  }
  for name, text in pairs(tricky) do
    it(name, function()
      local planned = t.plan(CONFIG)(parse(text))
      assert.structurally_equal(t.plan(CONFIG)(planned), planned)
    end)
  end

  -- (branchy-naive: the size where default planning still resolves it)
  for shape, n in pairs{chain = 3000, let = 3000, branchy = 3000, ["branchy-naive"] = 120} do
    it("generated workload " .. shape, function()
      local input = dp.parse(gen[shape](n), t.META)
      t.plan(t.config("cuda"))(input)
    end)
  end

  it("a planned 1,000,000-call chain, at the default stack size", function()
    local n = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
    local input = dp.parse(gen.chain(n), t.META)
    local planned = dp.passes.PlanDevices(CONFIG)(input)
    local vs, total = dp.planner.verify(planned, CONFIG, {input = input})
    assert.equal(0, total)
    -- and a wrong one is found at that depth
    local other = rawequal(planned.main.virtual_device, CONFIG:canonical(P.CPU)) and P.GPU or P.CPU
    local wrong = planned:with_function("main", dp.fn(planned.main.params, planned.main.body,
                                                       {virtual_device = CONFIG:canonical(other)}))
    assert.is_true(select(2, dp.planner.verify(wrong, CONFIG)) > 0)
  end)
end)

describe("devplan plan --verify", function()
  local exe = os.getenv("DEVPLAN_EXE") or "bin/devplan"
  it("plans, verifies and prints", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(fill([[
def @main(%a: {T}, %b: {T}) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0]);
  add(%0, %b)
}]]))
    f:close()
    local p = io.popen(exe .. " plan " .. path .. " --target llvm --target cuda --default cuda --verify 2>&1; echo \"exit $?\"")
    local out = p:read("a")
    p:close()
    os.remove(path)
    assert.truthy(out:find("device_copy(%a", 1, true), out)
    assert.truthy(out:find("exit 0", 1, true), out)
  end)
end)
