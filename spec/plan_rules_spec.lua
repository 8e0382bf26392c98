-- The callee rules of planner.md that the conformance cases do not reach:
-- memory.alloc_tensor, vm.reshape_tensor, vm.invoke_tvm_op, constructors,
-- match, tuples holding functions, and references. Each test plans a small
-- module and reads the devices the planner chose.
local dp = require "devplan"
local t = require "devplan.testing"

local CONFIG = t.config("cuda")
local CPU, GPU, HOST = t.PALETTE.CPU, t.PALETTE.GPU, t.PALETTE.HOST
local META = {VirtualDevice = {CPU, GPU, HOST}, ["relay.Constant"] = {dp.const({5, 7}, "int64")}}

-- The domains after analysis and defaulting, and the module they describe.
local function domains(text)
  local input = dp.parse(text, META)
  local m = dp.planner.rewrite(input, CONFIG)
  local d = dp.planner.analyze(m, CONFIG)
  dp.planner.default(d)
  -- the plan these domains give is consistent
  dp.planner.verify(dp.planner.capture(d), CONFIG, {input = input, raise = true})
  return d, m
end

local function canon(vd) return CONFIG:canonical(vd) end

-- The first call of the operator `name` in e (pre-order, children first).
local function find_call(e, name)
  local found
  dp.visit(e, function(n)
    if not found and n.kind == "call" and n.callee.kind == "op" and n.callee.name == name then found = n end
  end)
  return found
end

describe("planner callee rules", function()
  it("memory.alloc_tensor: storage and result together, offset and shape on the host", function()
    local d, m = domains([==[
def @main(%size: int64, %alignment: int64, %offset: int64, %shape: Tensor[(2), int64]) {
  %0 = memory.alloc_storage(%size, meta[relay.Constant][0], %alignment, virtual_device=meta[VirtualDevice][0]);
  memory.alloc_tensor(%0, %offset, %shape, const_shape=meta[relay.Constant][0])
}]==])
    local call = find_call(m.main, "memory.alloc_tensor")
    assert.is_true(rawequal(d:lookup(call), canon(CPU)))
    assert.is_true(rawequal(d:lookup(call.args[1]), canon(CPU)))
    assert.is_true(rawequal(d:lookup(call.args[2]), CONFIG.host_virtual_device))
    assert.is_true(rawequal(d:lookup(call.args[3]), CONFIG.host_virtual_device))
  end)

  it("vm.reshape_tensor: data and result together, shape on the host", function()
    local d, m = domains([==[
def @main(%x: Tensor[(5, 7), float32], %shape: Tensor[(2), int64]) {
  %0 = on_device(%x, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  vm.reshape_tensor(%0, %shape, newshape=[7, 5])
}]==])
    local call = find_call(m.main, "vm.reshape_tensor")
    assert.is_true(rawequal(d:lookup(call), canon(GPU)))
    assert.is_true(rawequal(d:lookup(m.main.params[1]), canon(GPU)))
    assert.is_true(rawequal(d:lookup(m.main.params[2]), CONFIG.host_virtual_device))
  end)

  it("vm.invoke_tvm_op: inputs, outputs and result together, the operator free", function()
    local d, m = domains([==[
def @main(%x: Tensor[(5, 7), float32], %y: Tensor[(5, 7), float32]) {
  %0 = fn (%a: Tensor[(5, 7), float32], Primitive=1) { negative(%a) };
  %1 = on_device(%x, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  vm.invoke_tvm_op(%0, (%1,), (%y,))
}]==])
    local call = find_call(m.main, "vm.invoke_tvm_op")
    assert.is_true(rawequal(d:lookup(call), canon(CPU)))
    assert.is_true(rawequal(d:lookup(m.main.params[2]), canon(CPU)))
  end)

  it("a constructor puts its arguments where its result is", function()
    local d, m = domains([==[
type List[A] { Cons(A, List[A]), Nil }
def @main(%x: Tensor[(5, 7), float32]) {
  %0 = on_device(%x, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  Cons(%0, Nil)
}]==])
    assert.is_true(rawequal(d:lookup(m.main.body), canon(CPU)))
    assert.is_true(rawequal(d:lookup(m.main.params[1]), canon(CPU)))
  end)

  it("match: the data, its patterns and the clauses share one device", function()
    local d, m = domains([==[
type List[A] { Cons(A, List[A]), Nil }
def @main(%l: List[Tensor[(5, 7), float32]], %d: Tensor[(5, 7), float32]) {
  %0 = on_device(%l, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  match (%0) {
    Cons(%h, _) => %h,
    Nil => %d,
  }
}]==])
    assert.is_true(rawequal(d:lookup(m.main.params[1]), canon(CPU)))
    assert.is_true(rawequal(d:lookup(m.main.params[2]), canon(CPU)))
    assert.is_true(rawequal(d:lookup(m.main.body), canon(CPU)))
  end)

  it("a function stored in a tuple is collapsed onto the tuple's device", function()
    local d, m = domains([==[
def @main(%x: Tensor[(5, 7), float32]) {
  %0 = fn (%a: Tensor[(5, 7), float32]) { negative(%a) };
  %1 = (%0, %x);
  %2 = on_device(%1, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %3 = %2.0;
  %3(%x)
}]==])
    assert.is_true(rawequal(d:lookup(m.main.params[1]), canon(CPU)))
    local fn
    dp.visit(m.main.body, function(n) if n.kind == "fn" then fn = n end end)
    assert.is_true(rawequal(d:lookup(fn.params[1]), canon(CPU)))
    assert.is_true(rawequal(d:lookup(fn.body), canon(CPU)))
  end)

  it("references: the reference, what it holds and what reads it share one device", function()
    local d, m = domains([==[
def @main(%x: Tensor[(5, 7), float32]) {
  let %r = ref(%x);
  %0 = ref_read(%r);
  on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True)
}]==])
    assert.is_true(rawequal(d:lookup(m.main.params[1]), canon(CPU)))
  end)

  it("an operator is polymorphic: two calls of add may sit on two devices", function()
    local planned = t.plan(CONFIG)(dp.parse([==[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = add(%a, %a);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  %2 = add(%b, %b);
  %3 = on_device(%2, virtual_device=meta[VirtualDevice][1]);
  subtract(%1, %3)
}]==], META))
    assert.is_true(rawequal(planned.main.params[1].virtual_device, canon(CPU)))
    assert.is_true(rawequal(planned.main.params[2].virtual_device, canon(GPU)))
  end)

  it("a tuple's fields share its device: two fixed devices in one tuple are a conflict", function()
    local ok, err = pcall(t.plan(CONFIG), dp.parse([==[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %1 = on_device(%b, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  (%0, %1)
}]==], META, {source_name = "t.relay"}))
    assert.is_false(ok)
    assert.are.equal("conflict", err.code)
    assert.truthy(tostring(err):find("on cpu because of the annotation on_device at t.relay:2:8", 1, true), tostring(err))
    assert.truthy(tostring(err):find("on cuda because of the annotation on_device at t.relay:3:8", 1, true), tostring(err))
  end)
end)
