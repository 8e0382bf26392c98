-- The planner's reproducers of ../shared/repro (wrong plans found on
-- generated programs), each as the exact plan expected: the scenario of the
-- reproducer, the module PlanDevices must give, and that planning that
-- module again changes nothing.
local dp = require "devplan"
local t = require "devplan.testing"

local P = t.PALETTE
local CONFIG = t.config("cuda")
local META = {VirtualDevice = {P.CPU, P.GPU, P.HOST, P.CPU_SCOPE_A, P.CPU_SCOPE_B}}
local plan = t.plan(CONFIG)

-- Plans input (text) and compares with expected (text), then checks the
-- expected module is a fixed point.
local function plans(input, expected)
  assert.plans_to(input, expected, CONFIG, META)
  local e = dp.parse(expected, META)
  assert.structurally_equal(plan(e), e)
end

local function param_device(mod, fn, i) return mod:get(fn).params[i].virtual_device end

describe("planner reproducers", function()
  describe("on_device of a variable as a let value or function body is respected", function()
    -- e_respect_on_device_of_variable_dropped.lua: phase 0 dropped the
    -- annotation when its body was a variable (TVM's MaybeOnDeviceFixed)
    it("as a let value", function()
      plans([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  let %v = on_device(%a, virtual_device=meta[VirtualDevice][0]);
  add(%v, %b)
}]], [[
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
          %b {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][0]) {
  let %v = %a;
  add(%v, %b)
}]])
    end)

    it("as a function body", function()
      plans([[
def @main(%a: Tensor[(5, 7), float32]) {
  on_device(%a, virtual_device=meta[VirtualDevice][0])
}]], [[
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][0]) {
  %a
}]])
    end)

    it("against another annotation: a copy between them", function()
      plans([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  let %v = on_device(%a, virtual_device=meta[VirtualDevice][0]);
  %0 = on_device(%b, virtual_device=meta[VirtualDevice][1]);
  add(%v, %0)
}]], [[
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
          %b {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][0]) {
  let %v = %a;
  %0 = device_copy(%b, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]);
  add(%v, %0)
}]])
    end)

    it("a global function's parameter annotated inside a let in the caller", function()
      local planned = plan(dp.parse([[
def @main(%a: Tensor[(5, 7), float32]) {
  let %v = on_device(%a, virtual_device=meta[VirtualDevice][0]);
  negative(%v)
}]], META))
      assert.is_true(rawequal(param_device(planned, "main", 1), CONFIG:canonical(P.CPU)))
    end)
  end)

  describe("nested annotations on different devices keep the copy between them", function()
    -- b_idempotent_nested_on_device.lua, wrong_plan_nested_on_device.lua
    it("on_device(on_device(%a, cpu), gpu)", function()
      plans([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0]);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1]);
  subtract(%1, %b)
}]], [[
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
          %b {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][1]) {
  %0 = device_copy(%a, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  subtract(%0, %b)
}]])
    end)

    it("on_device(on_device(add, gpu), cpu) used on the gpu: there and back", function()
      plans([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = add(%a, %b);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1]);
  %2 = on_device(%1, virtual_device=meta[VirtualDevice][0]);
  subtract(%2, %b)
}]], [[
def @main(%a {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32],
          %b {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][1]) {
  %0 = add(%a, %b);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]);
  %3 = on_device(%2, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %4 = device_copy(%3, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  subtract(%4, %b)
}]])
    end)

    it("negative(on_device(on_device(negative(%x), cpu), gpu))", function()
      plans([[
def @main(%x: Tensor[(5, 7), float32]) {
  %0 = negative(%x);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  %2 = on_device(%1, virtual_device=meta[VirtualDevice][1]);
  negative(%2)
}]], [[
def @main(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][1]) {
  %0 = negative(%x);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  negative(%2)
}]])
    end)

    it("as a let value: the inner annotation stays, the outer is fixed", function()
      plans([[
def @main(%x: Tensor[(5, 7), float32]) {
  let %v = on_device(on_device(negative(%x), virtual_device=meta[VirtualDevice][0]),
                     virtual_device=meta[VirtualDevice][1]);
  negative(%v)
}]], [[
def @main(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][1]) {
  %0 = negative(%x);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  let %v = on_device(%2, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  negative(%v)
}]])
    end)

    it("device_copy of an on_device on another device than the copy's source", function()
      plans([[
def @main(%x: Tensor[(5, 7), float32]) {
  %0 = negative(%x);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1]);
  %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  negative(%2)
}]], [[
def @main(%x {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][1]) {
  %0 = negative(%x);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]);
  %3 = on_device(%2, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %4 = device_copy(%3, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  negative(%4)
}]])
    end)

    it("a thousand nested annotations, alternating devices", function()
      local n = 1000
      local text = {"def @main(%x: Tensor[(5, 7), float32]) {\n  %0 = negative(%x);\n"}
      for i = 1, n do
        text[#text + 1] = ("  %%%d = on_device(%%%d, virtual_device=meta[VirtualDevice][%d]);\n"):format(i, i - 1, i % 2)
      end
      text[#text + 1] = ("  negative(%%%d)\n}"):format(n)
      local planned = plan(dp.parse(table.concat(text), META))
      -- gpu, cpu, gpu, ... from the inside out (a copy between each two),
      -- then the outer negative on the default device, the gpu: one more
      assert.equal(n, t.count_calls(planned, "device_copy"))
      assert.structurally_equal(plan(planned), planned)
    end)
  end)

  describe("device_copy ends are the planned devices", function()
    -- nonidempotent_device_copy_noattrs.lua
    it("a device_copy without attributes after vm.shape_of", function()
      plans([[
def @main(%x: Tensor[(3), float32]) {
  %0 = vm.shape_of(%x);
  device_copy(%0)
}]], [[
def @main(%x {virtual_device=meta[VirtualDevice][1]}: Tensor[(3), float32],
          virtual_device=meta[VirtualDevice][1]) {
  %0 = vm.shape_of(%x);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][2], constrain_result=True);
  device_copy(%1, src_virtual_device=meta[VirtualDevice][2], dst_virtual_device=meta[VirtualDevice][1])
}]])
    end)

    -- e_partial_device_copy_attrs_not_refined.lua
    it("ends written without a memory scope that planning refines to the same device: removed", function()
      plans([[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = device_copy(%a, src_virtual_device=meta[VirtualDevice][3], dst_virtual_device=meta[VirtualDevice][0]);
  subtract(%a, %0)
}]], [[
def @main(%a {virtual_device=meta[VirtualDevice][3]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][3]) {
  subtract(%a, %a)
}]])
    end)

    it("equal ends written that planning refines to two scopes: a real copy", function()
      plans([[
def @main(%a {virtual_device=meta[VirtualDevice][3]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][4]) {
  device_copy(%a, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][0])
}]], [[
def @main(%a {virtual_device=meta[VirtualDevice][3]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][4]) {
  device_copy(%a, src_virtual_device=meta[VirtualDevice][3], dst_virtual_device=meta[VirtualDevice][4])
}]])
    end)
  end)

  describe("the plan does not depend on the order of the definitions", function()
    -- d_reorder_default_of_shared_free_param.lua
    local F = [[
def @f(%x: Tensor[(5, 7), float32], %c: bool) -> Tensor[(5, 7), float32] {
  negative(%x)
}
]]
    local MAIN = [[
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32], %c: bool) -> Tensor[(5, 7), float32] {
  let %u = @f(%a, %c);
  %b
}
]]
    it("a free parameter passed to a callee takes the caller's default", function()
      local p1, p2 = plan(dp.parse(F .. MAIN, META)), plan(dp.parse(MAIN .. F, META))
      assert.structurally_equal(p1:get("f"), p2:get("f"))
      assert.structurally_equal(p1:get("main"), p2:get("main"))
      local gpu = CONFIG:canonical(P.GPU)
      assert.is_true(rawequal(param_device(p1, "main", 3), gpu))
      assert.is_true(rawequal(param_device(p1, "f", 2), gpu))
    end)

    -- every order of three functions, one calling the next, and one unrelated
    local DEFS = {
      [[
def @h(%z: Tensor[(5, 7), float32], %k: bool) -> Tensor[(5, 7), float32] {
  %0 = on_device(%z, virtual_device=meta[VirtualDevice][0]);
  negative(%0)
}
]], [[
def @g(%y: Tensor[(5, 7), float32], %k: bool) -> Tensor[(5, 7), float32] {
  @h(%y, %k)
}
]], [[
def @main(%a: Tensor[(5, 7), float32], %k: bool) -> Tensor[(5, 7), float32] {
  let %u = @g(%a, %k);
  let %w = @other(%a, %k);
  %a
}
]], [[
def @other(%q: Tensor[(5, 7), float32], %k: bool) -> Tensor[(5, 7), float32] {
  %q
}
]]}
    local function permutations(n)
      local out, p = {}, {}
      local function go(used, k)
        if k > n then out[#out + 1] = {table.unpack(p)} return end
        for i = 1, n do
          if not used[i] then used[i] = true p[k] = i go(used, k + 1) used[i] = false end
        end
      end
      go({}, 1)
      return out
    end
    it("all 24 orders of four definitions give one plan", function()
      local first
      for _, perm in ipairs(permutations(#DEFS)) do
        local text = {}
        for i, k in ipairs(perm) do text[i] = DEFS[k] end
        local planned = plan(dp.parse(table.concat(text), META))
        if not first then
          first = planned
        else
          for _, name in ipairs{"h", "g", "main", "other"} do
            assert.structurally_equal(planned:get(name), first:get(name))
          end
        end
      end
    end)

    it("functions that call each other: the cycle broken by name, whatever the order", function()
      -- %k is free and one domain in both functions: @a defaults it to @a's
      -- device (the cpu) since "a" < "b", in both orders
      local A = [[
def @a(%x: float32, %k: bool, virtual_device=meta[VirtualDevice][0]) -> float32 {
  let %u = @b(%k);
  %x
}
]]
      local B = [[
def @b(%k: bool, virtual_device=meta[VirtualDevice][1]) -> float32 {
  let %w = @a(1f, %k);
  2f
}
]]
      local p1, p2 = plan(dp.parse(A .. B, META)), plan(dp.parse(B .. A, META))
      assert.structurally_equal(p1:get("a"), p2:get("a"))
      assert.structurally_equal(p1:get("b"), p2:get("b"))
      assert.is_true(rawequal(param_device(p2, "b", 1), CONFIG:canonical(P.CPU)))
    end)
  end)

  describe("found on generated programs: PlanDevices' output plans to itself", function()
    it("a default taken from a device that a later default refines (here its memory scope)", function()
      -- %p1 follows @main's result, which the copy's default only then puts
      -- in scope B: defaulting runs again, as planning the output would
      plans([[
def @main(%p1: Tensor[(5, 7), float32], %p2: Tensor[(5, 7), float32]) {
  let %v = device_copy(%p2, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][4]);
  %p2
}]], [[
def @main(%p1 {virtual_device=meta[VirtualDevice][4]}: Tensor[(5, 7), float32],
          %p2 {virtual_device=meta[VirtualDevice][4]}: Tensor[(5, 7), float32],
          virtual_device=meta[VirtualDevice][4]) {
  let %v = %p2;
  %p2
}]])
    end)

    it("phase 0b: a call of a function asks of its arguments its parameters' devices, not its own", function()
      -- the let value's on_device (fixed by phase 0, as in every planned
      -- module) put the call on the gpu, and 0b passed that on to %a, which
      -- @f takes on the cpu: a copy to the gpu, then a conflict
      plans([[
def @f(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][1]) -> Tensor[(5, 7), float32] {
  device_copy(%x, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1])
}
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  let %u = add(%0, %0);
  let %v = on_device(@f(%a), virtual_device=meta[VirtualDevice][1]);
  %v
}]], [[
def @f(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][1]) -> Tensor[(5, 7), float32] {
  device_copy(%x, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1])
}
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][1]) -> Tensor[(5, 7), float32] {
  %0 = add(%a, %a);
  let %u = on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %1 = @f(%a);
  let %v = on_device(%1, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  %v
}]])
    end)
  end)

  describe("type parameters survive planning", function()
    -- rewrite (phase 0) and capture rebuilt functions without their type
    -- parameters: `def @id(%x: A)` no longer parsed
    local ID = "def @id[A](%x: A) -> A {\n"
    local MAIN = "def @main(%i: Tensor[(2), float32]) { @id(%i) }"
    local function check(text)
      local mod = dp.parse(text, META)
      local phase0 = dp.planner.rewrite(mod, CONFIG)
      assert.equal(1, #phase0:get("id").type_params)
      local planned = plan(mod)
      assert.equal(1, #planned:get("id").type_params)
      local again = dp.parse(tostring(planned))
      assert.structurally_equal(again, planned)
      assert.structurally_equal(plan(again), planned)
    end

    it("by capture", function() check(ID .. "  %x\n}\n" .. MAIN) end)

    it("by phase 0 (a function body it rewrites)", function()
      check(ID .. "  on_device(on_device(%x, virtual_device=meta[VirtualDevice][0]), "
        .. "virtual_device=meta[VirtualDevice][0])\n}\n" .. MAIN)
    end)
    it("phase 0b: a parameter's own virtual_device is its first demand", function()
      -- generated seed 101749: the first use's demand (cuda) stood for %a, and
      -- the copy went to the use that agreed with its annotation (a conflict
      -- naming %a's position twice)
      plans([[
def @h1(%x {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32], %y {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %y
}
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  @h1(%a, %a)
}]], [[
def @h1(%x {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32], %y {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][0]) -> Tensor[(5, 7), float32] {
  %y
}
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][0]) -> Tensor[(5, 7), float32] {
  %0 = device_copy(%a, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  @h1(%1, %a)
}]])
    end)
  end)

  describe("conflict positions", function()
    -- f_conflict_column_let_value_on_device.lua
    it("a let-value on_device is named at its own column", function()
      local ok, err = pcall(plan, dp.parse([[
def @main(%a: Tensor[(5, 7), float32]) {
  let %v = on_device(negative(%a), virtual_device=meta[VirtualDevice][1]);
  %0 = on_device(%v, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  add(%0, %0)
}]], META))
      assert.is_false(ok)
      assert.equal("conflict", err.code)
      local s = tostring(err)
      assert.truthy(s:find("on_device at <string>:2:12", 1, true), s)
      assert.truthy(s:find("on_device at <string>:3:8", 1, true), s)
      assert.falsy(s:find("2:22", 1, true), s)
    end)

    it("so is a function-body on_device", function()
      local ok, err = pcall(plan, dp.parse([[
def @main(%a: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][0]) {
  on_device(negative(%a), virtual_device=meta[VirtualDevice][1])
}]], META))
      assert.is_false(ok)
      local s = tostring(err)
      assert.truthy(s:find("on_device at <string>:2:3", 1, true), s)
      assert.falsy(s:find("2:13", 1, true), s)
    end)
  end)

  describe("same module, same plan, whatever Lua holds", function()
    -- d_plan_depends_on_lua_references*.lua: phase 0b took a node with a
    -- reference count above one for shared, and only then made a
    -- device_copy's destination its first demand
    local function outcome(pass, text, hold)
      local m = dp.parse(text, META)
      local held, i = {}, 0
      if hold then
        dp.visit(m, function(e)
          i = i + 1
          if hold == "all" or i % hold == 0 then held[#held + 1] = e end
        end)
      end
      collectgarbage()
      local ok, r = pcall(pass, m)
      return (ok and "planned:\n" or "error: ") .. tostring(r), #held
    end
    local copy_back = [[
def @main(%x: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][0]) {
  %1 = device_copy(%x, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  %2 = add(%x, %1);
  add(%2, %x)
}]]

    it("a single-use device_copy read on its source device is copied back", function()
      plans(copy_back, [[
def @main(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][0]) {
  %0 = device_copy(%x, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][1], constrain_result=True);
  %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]);
  %3 = add(%x, %2);
  add(%3, %x)
}]])
    end)

    it("reads a fixed let value in place whether or not Lua holds it (explain answers about that node)", function()
      -- phase 0 took a let value whose reference count was above one for
      -- one another parent reaches too and rebuilt it, so what explain said
      -- of the input's nodes depended on what Lua held
      local text = [[
def @main(%a: Tensor[(5, 7), float32]) {
  let %v = on_device(add(%a, %a), virtual_device=meta[VirtualDevice][1]);
  negative(%v)
}]]
      local function explain_value(hold_all)
        local m = dp.parse(text, META)
        local value, held = nil, {}
        dp.visit(m, function(e)
          if hold_all then held[#held + 1] = e end
          if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "on_device" then value = e end
        end)
        collectgarbage()
        return dp.planner.explain(m, value)
      end
      local one, all = explain_value(false), explain_value(true)
      assert.truthy(one.text:find("^on_device at"), one.text)
      for _, k in ipairs({"text", "rule", "line", "col", "steps"}) do assert.are.same(one[k], all[k]) end
      assert.are.equal(tostring(one.device), tostring(all.device))
      -- a value another parent reaches too is still given a fixed annotation of its own
      local shared = dp.parse([[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(add(%a, %a), virtual_device=meta[VirtualDevice][1]);
  let %v = %0;
  (%v, %0)
}]], META)
      assert.truthy(tostring(plan(shared)):find("constrain_result=True", 1, true))
    end)

    it("plans or fails the same with no node, every node or some nodes held", function()
      local texts = {copy_back, [[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(negative(%a), virtual_device=meta[VirtualDevice][1]);
  let %v = on_device(add(%0, %a), virtual_device=meta[VirtualDevice][0]);
  %1 = device_copy(%v, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  %2 = on_device(%1, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  subtract(%2, %v)
}]]}
      local passes = {plan, t.plan(CONFIG, {resolve_conflicts = false}),
                      t.plan(CONFIG, {placement = "min_bytes"})}
      for _, text in ipairs(texts) do
        for _, pass in ipairs(passes) do
          local fresh = outcome(pass, text)
          for _, hold in ipairs{"all", 2, 3} do
            local held, n = outcome(pass, text, hold)
            assert.is_true(n > 0)
            assert.are.equal(fresh, held)
          end
        end
      end
    end)
  end)
end)
