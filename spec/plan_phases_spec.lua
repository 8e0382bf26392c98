-- The planner's phases one by one, the callee rules, conflicts and their
-- messages, explain, virtual_devices, determinism and deep programs.
local dp = require "devplan"
local testing = require "devplan.testing"

local CPU, GPU = testing.PALETTE.CPU, testing.PALETTE.GPU
local META = testing.META
local CONFIG = testing.config("cuda")
local plan = testing.plan(CONFIG)
local T = "Tensor[(5, 7), float32]"

local function parse(body, params)
  return dp.parse('#[version = "0.0.5"]\ndef @main(' .. (params or ("%a: " .. T .. ", %b: " .. T)) ..
                  ") {\n" .. body .. "\n}\n", META)
end

local function err_of(f, ...) return select(2, testing.error_of(f, ...)) end

describe("phase 0 (rewrite)", function()
  local LET = "let %x = on_device(add(%a, %b), virtual_device=meta[VirtualDevice][0]);\nnegative(%x)"
  it("leaves an on_device let value for analysis to read as fixed (no spine rebuilt)", function()
    local m = parse(LET)
    assert.is_true(rawequal(dp.planner.rewrite(m, CONFIG), m))
    -- fixed: the let variable is on the CPU even before defaulting
    local d = dp.planner.analyze(m, CONFIG)
    assert.is_true(rawequal(d:lookup(m.main.body.var), CONFIG:canonical(CPU)))
  end)
  it("fixes an on_device let value that is used elsewhere too", function()
    local m = parse("%0 = on_device(add(%a, %b), virtual_device=meta[VirtualDevice][0]);\n" ..
                    "let %x = %0;\nadd(%x, %0)")
    local v = dp.planner.rewrite(m, CONFIG).main.body.value
    assert.equal("on_device", v.callee.name)
    assert.is_true(v.attrs.constrain_result)
  end)
  it("merges nested on_device let values on one device", function()
    local m = parse("let %x = on_device(on_device(add(%a, %b), virtual_device=meta[VirtualDevice][0]), " ..
                    "virtual_device=meta[VirtualDevice][0]);\nnegative(%x)")
    local v = dp.planner.rewrite(m, CONFIG).main.body.value
    assert.is_true(v.attrs.constrain_result)
    assert.equal("call", v.args[1].kind)
    assert.equal("add", v.args[1].callee.name)
  end)
  it("reads an on_device at a function body's top as fixed", function()
    local m = parse("on_device(add(%a, %b), virtual_device=meta[VirtualDevice][0])")
    assert.is_true(rawequal(dp.planner.rewrite(m, CONFIG), m))
    local d = dp.planner.analyze(m, CONFIG)
    assert.is_true(rawequal(d:lookup(m.main), CONFIG:canonical(CPU)))
  end)
  it("moves on_device below a projection", function()
    local m = dp.planner.rewrite(parse("%0 = (%a, %b);\n%1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);\n%1.0"), CONFIG)
    local b = m.main.body
    assert.equal("on_device", b.callee.name)
    assert.equal("proj", b.args[1].kind)
  end)
  it("leaves a module without such forms alone", function()
    local m = parse("add(%a, %b)")
    assert.is_true(dp.structural_equal(dp.planner.rewrite(m, CONFIG), m))
  end)
end)

describe("phase 1 (analyze) and the domains", function()
  it("flows an on_device constraint through a polymorphic operator", function()
    local m = parse("%0 = add(%a, %b);\non_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True)")
    local d = dp.planner.analyze(m, CONFIG)
    local a = m.main.params[1]
    assert.is_true(rawequal(d:lookup(a), CONFIG:canonical(CPU)))
  end)
  it("leaves unconstrained values free until defaulting", function()
    local m = parse("add(%a, %b)")
    local d = dp.planner.analyze(m, CONFIG)
    assert.is_true(d:lookup(m.main.params[1]):is_fully_unconstrained())
    dp.planner.default(d)
    assert.is_true(rawequal(d:lookup(m.main.params[1]), CONFIG:canonical(GPU)))
  end)
  it("unify joins two domains, set_default fills what is free", function()
    local m = parse("%0 = negative(%a);\n%1 = negative(%b);\n(%0, %1)", "%a: " .. T .. ", %b: " .. T)
    local d = dp.planner.analyze(m, CONFIG)
    local a, b = m.main.params[1], m.main.params[2]
    d:unify(a, b)
    d:set_default(a, CPU)
    assert.is_true(rawequal(d:lookup(b), CONFIG:canonical(CPU)))
    -- a later default does not override
    d:set_default(b, GPU)
    assert.is_true(rawequal(d:lookup(a), CONFIG:canonical(CPU)))
  end)
  it("a failed unify is a conflict error and leaves the domains usable", function()
    local m = parse("%0 = on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True);\n" ..
                    "add(%0, device_copy(%b, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]))")
    local d = dp.planner.analyze(m, CONFIG)
    local e = err_of(d.unify, d, m.main.params[1], m.main.params[2])
    assert.equal("conflict", e.code)
    assert.is_true(rawequal(d:lookup(m.main.params[1]), CONFIG:canonical(CPU)))
    assert.is_true(rawequal(d:lookup(m.main.params[2]), CONFIG:canonical(GPU)))
  end)
end)

describe("callee rules", function()
  it("vm.shape_of: result on the host, argument free", function()
    local m = parse("%0 = on_device(%a, virtual_device=meta[VirtualDevice][1], constrain_result=True);\nvm.shape_of(%0, dtype=\"int64\")", "%a: Tensor[(?, ?), float32]")
    local d = dp.planner.analyze(m, CONFIG)
    assert.is_true(rawequal(d:lookup(m.main.body), CONFIG.host_virtual_device))
    assert.is_true(rawequal(d:lookup(m.main.params[1]), CONFIG:canonical(GPU)))
  end)
  it("device_copy: argument on the source, result on the destination", function()
    local m = parse("device_copy(%a, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1])", "%a: " .. T)
    local d = dp.planner.analyze(m, CONFIG)
    assert.is_true(rawequal(d:lookup(m.main.params[1]), CONFIG:canonical(CPU)))
    assert.is_true(rawequal(d:lookup(m.main.body), CONFIG:canonical(GPU)))
  end)
  it("canonicalises a device type alone through the configuration", function()
    local m = dp.parse('#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ') {\n' ..
      '  on_device(negative(%a), virtual_device=VirtualDevice(device_type=cpu), constrain_result=True)\n}\n')
    local out = plan(m)
    assert.is_true(rawequal(out.main.virtual_device, CONFIG:canonical(CPU)))
  end)
  it("a no-op device_copy is removed", function()
    local m = parse("device_copy(%a, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][1])", "%a: " .. T)
    assert.equal("var", plan(m).main.body.kind)
  end)
end)

describe("conflicts", function()
  local text = '#[version = "0.0.5"]\n' ..
    'def @main(%a: ' .. T .. ') {\n' ..
    '  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True);\n' ..
    '  %1 = on_device(%a, virtual_device=meta[VirtualDevice][1], constrain_result=True);\n' ..
    '  add(%0, %1)\n' ..
    '}\n'
  it("is a devplan.Error naming both constraints with positions and the chain", function()
    local e = err_of(plan, dp.parse(text, META))
    assert.equal("conflict", e.code)
    local s = tostring(e)
    assert.truthy(s:find("cpu", 1, true))
    assert.truthy(s:find("cuda", 1, true))
    assert.truthy(s:find("on_device at 3:8", 1, true) or s:find(":3:8", 1, true))
    assert.truthy(s:find("on_device at 4:8", 1, true) or s:find(":4:8", 1, true))
    -- an operator is named once ("the annotation on_device at", never "on_device on_device")
    assert.falsy(s:find("on_device on_device", 1, true), s)
    assert.is_true(#e.notes >= 2)
    assert.is_number(e.line)
  end)
end)

describe("explain and virtual_devices", function()
  local m = parse("%0 = add(%a, %b);\n%1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);\nsubtract(%1, %c)",
                  "%a: " .. T .. ", %b: " .. T .. ", %c: " .. T)
  it("says which constraint decided a device, with its position", function()
    local a = m.main.params[1]
    local x = dp.planner.explain(m, a, CONFIG)
    assert.is_true(rawequal(x.device, CONFIG:canonical(CPU)))
    assert.equal("on_device", x.rule)
    assert.equal(4, x.line)
    assert.truthy(x.text:find("%a", 1, true))
    assert.is_true(#x.steps >= 1)
  end)
  it("names the defaulting rule when no constraint decided", function()
    local x = dp.planner.explain(m, m.main.body, CONFIG)
    assert.is_true(rawequal(x.device, CONFIG:canonical(GPU)))
    assert.truthy(x.rule:find("default"))
  end)
  it("gives every sub-expression's device", function()
    local vds = dp.planner.virtual_devices(m, CONFIG)
    local n = 0
    dp.visit(m.main, function(e)
      if e.kind ~= "op" then
        n = n + 1
        assert.is_not_nil(vds[e], e.kind)
      end
    end)
    assert.is_true(n > 5)
    assert.is_true(rawequal(vds[m.main.body], CONFIG:canonical(GPU)))
  end)
end)

describe("determinism", function()
  local two = function(first, second)
    local defs = {
      f = "def @f(%x: " .. T .. ") {\n  negative(%x)\n}\n",
      main = "def @main(%a: " .. T .. ") {\n  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True);\n  @f(%0)\n}\n",
    }
    return dp.parse('#[version = "0.0.5"]\n' .. defs[first] .. defs[second], META)
  end
  it("plans the same module twice to the same text", function()
    local m = two("f", "main")
    assert.equal(tostring(plan(m)), tostring(plan(m)))
  end)
  it("does not depend on the order functions are defined in", function()
    local p1, p2 = plan(two("f", "main")), plan(two("main", "f"))
    dp.assert_structural_equal(p1.f, p2.f)
    dp.assert_structural_equal(p1.main, p2.main)
  end)
end)

describe("deep programs", function()
  local n = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
  -- n unary ops, every 10th wrapped in on_device(meta[VirtualDevice][dev]);
  -- `bind` formats one statement from (index, value text), `name` the value's name.
  local function chain_text(bind, name, dev, result)
    local parts = {'#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ') {\n'}
    local prev = "%a"
    for i = 0, n - 1 do
      local value = ("negative(%s)"):format(prev)
      if i % 10 == 9 then value = ("on_device(%s, virtual_device=meta[VirtualDevice][%d])"):format(value, dev) end
      parts[#parts + 1] = bind(i, value)
      prev = name(i)
    end
    parts[#parts + 1] = result(prev) .. "\n}\n"
    return table.concat(parts)
  end
  local function let_chain()
    return chain_text(function(i, v) return ("let %%x%d = %s;\n"):format(i, v) end,
                      function(i) return "%x" .. i end, 0, function(r) return r end)
  end
  it("plans a " .. n .. "-deep let chain through every phase", function()
    local m = dp.parse(let_chain(), META)
    local r = dp.planner.rewrite(m, CONFIG)
    local d = dp.planner.analyze(r, CONFIG)
    dp.planner.default(d)
    local out = dp.planner.capture(d)
    assert.is_true(rawequal(out.main.virtual_device, CONFIG:canonical(CPU)))
    dp.planner.verify(out, CONFIG, {input = m, raise = true})
  end)
  -- A dataflow chain: graph bindings, each value used once by the next; every
  -- 10th value annotated on the GPU; the result fixed on the CPU.
  local function dataflow_chain()
    return chain_text(function(i, v) return ("%%%d = %s;\n"):format(i, v) end,
                      function(i) return "%" .. i end, 1,
                      function(r) return "on_device(" .. r .. ", virtual_device=meta[VirtualDevice][0], constrain_result=True)" end)
  end
  it("plans a " .. n .. "-deep dataflow chain through every phase, then all phases at once", function()
    local m = dp.parse(dataflow_chain(), META)
    local r = dp.planner.conflicts(dp.planner.rewrite(m, CONFIG), CONFIG)
    local d = dp.planner.analyze(r, CONFIG)
    dp.planner.default(d)
    local out = dp.planner.capture(d)
    assert.is_true(rawequal(out.main.virtual_device, CONFIG:canonical(CPU)))
    assert.is_true(rawequal(out.main.params[1].virtual_device, CONFIG:canonical(GPU)))
    dp.planner.verify(out, CONFIG, {input = m, raise = true})
    assert.is_true(dp.structural_equal(out, plan(m)))
  end)
end)

describe("phase 0b (conflicting demands)", function()
  local text = "%0 = negative(%a);\n%1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);\n" ..
               "%2 = negative(%a);\n%3 = on_device(%2, virtual_device=meta[VirtualDevice][1]);\nadd(%1, %3)"
  local function copies(m) return testing.count_calls(m, "device_copy") end
  -- on_device calls that constrain neither side: "a copy is allowed here"
  -- (attrs leave out defaults: constrain_body is true unless said)
  local function copies_allowed(m)
    local n = 0
    dp.visit(m, function(e)
      if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "on_device" and
         e.attrs.constrain_body == false and not e.attrs.constrain_result then n = n + 1 end
    end)
    return n
  end
  it("allows a copy where an unannotated parameter is demanded on two devices", function()
    local m = parse(text, "%a: " .. T)
    local c = dp.planner.conflicts(m, CONFIG)
    -- (an unconstrained on_device, not a device_copy: analysis fixes its
    -- ends, and a conflict never names a copy the user did not write)
    assert.equal(1, copies_allowed(c))
    assert.equal(0, copies(c))
    local planned = plan(m)
    assert.is_true(rawequal(planned.main.params[1].virtual_device, CONFIG:canonical(CPU)))
    dp.assert_structural_equal(plan(planned), planned)
  end)
  it("keeps the checked types of what it rebuilds (a closure called through an on_device)", function()
    -- (fuzz finding g9: the rebuilt on_device of a closure lost its type, and
    -- analysis said "the callee of this call does not take 1 argument")
    local m = parse("let %v = device_copy(%a, src_virtual_device=meta[VirtualDevice][0], " ..
                    "dst_virtual_device=meta[VirtualDevice][0]);\n" ..
                    "%0 = fn (%p: " .. T .. ") -> " .. T .. " {\n" ..
                    "  on_device(exp(%a), virtual_device=meta[VirtualDevice][1], constrain_result=True)\n};\n" ..
                    "(on_device(%0, virtual_device=meta[VirtualDevice][1]))(%a)", "%a: " .. T)
    local planned = plan(m)
    assert.is_true(copies(planned) >= 1)
    dp.assert_structural_equal(plan(planned), planned)
  end)
  it("takes a device_copy's destination as its first demand (g14)", function()
    -- fuzz/findings/g14: the first use's demand (cpu) stood for a copy to
    -- cuda, the second use got a copy "from cpu", and the conflict that
    -- remained was between the two ends of the one copy
    local m = dp.parse([[
def @h1(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
        %y {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %x
}
def @main(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  %0 = device_copy(%a, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  @h1(%0, %0)
}]], META)
    assert.equal("conflict", err_of(testing.plan(CONFIG, {resolve_conflicts = false}), m).code)
    local planned = plan(m)
    -- the first argument goes back to the cpu, the second takes the copy as it is
    local call = planned.main.body
    assert.equal("device_copy", call.args[1].callee.name)
    assert.is_true(rawequal(call.args[1].attrs.src_virtual_device, CONFIG:canonical(GPU)))
    assert.is_true(rawequal(call.args[1].attrs.dst_virtual_device, CONFIG:canonical(CPU)))
    assert.equal(2, copies(planned))
    dp.assert_structural_equal(plan(planned), planned)
  end)
  it("leaves a conflict that names the user's annotations, never the copy it allows (g15)", function()
    -- fuzz/findings/g15 (g13's kind): %a was first demanded on cuda (the
    -- tuple @main returns), then on cpu; the device_copy phase 0b inserted
    -- carried %a's position and was named as the conflict's cpu side
    local m = dp.parse([[
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32], virtual_device=meta[VirtualDevice][1]) {
  %0 = device_copy(%b, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]);
  match (Nil) {
    Cons(_, %m) => (%0, %a),
    Nil => {
      let %v = on_device(multiply(%0, %a), virtual_device=meta[VirtualDevice][0], constrain_result=True);
      (%v, %v)
    },
  }
}]], META, {source_name = "g15.relay"})
    local strict = tostring(err_of(testing.plan(CONFIG, {resolve_conflicts = false}), m))
    local e = err_of(plan, m)
    assert.equal("conflict", e.code)
    local msg = tostring(e)
    assert.truthy(msg:find("because of the destination of device_copy at g15.relay:6:8", 1, true), msg)
    assert.truthy(msg:find("because of the virtual_device of function fn at g15.relay:5:1", 1, true), msg)
    assert.is_nil(msg:find("device_copy at g15.relay:5:", 1, true), msg)
    assert.equal(strict:gsub("%(resolve_conflicts=false%)", ""), msg)
  end)
  it("returns the module unchanged when nothing conflicts", function()
    local m = parse("add(%a, %b)")
    assert.is_true(rawequal(dp.planner.conflicts(m, CONFIG), m))
  end)
end)

describe("a function value under an on_device", function()
  -- a function cannot be copied: a call through the annotation calls the
  -- function itself, so its parameters take the call's arguments
  it("a call through it is a conflict, not a plan passing an argument on another device", function()
    local m = parse("%1 = on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_result=True);\n" ..
                    "%0 = fn (%p: " .. T .. ") -> " .. T .. " { negative(%p) };\n" ..
                    "(on_device(%0, virtual_device=meta[VirtualDevice][1]))(%1)", "%a: " .. T)
    local e = err_of(plan, m)
    assert.equal("conflict", e.code)
  end)
  it("where its argument is free, the argument goes where the parameter is", function()
    local m = parse("%0 = fn (%p: " .. T .. ") -> " .. T .. " { negative(%p) };\n" ..
                    "(on_device(%0, virtual_device=meta[VirtualDevice][1]))(%a)", "%a: " .. T)
    local config = testing.config("cpu") -- (not where a default would put it anyway)
    local planned = testing.plan(config)(m)
    assert.is_true(rawequal(planned.main.params[1].virtual_device, config:canonical(GPU)))
    dp.assert_structural_equal(testing.plan(config)(planned), planned)
  end)
end)

describe("explanations of domains a script changed", function()
  it("name the script's default through its unification, and survive a conflict", function()
    local m = parse("%0 = negative(%a);\n%1 = negative(%b);\n(%0, %1)")
    local d = dp.planner.analyze(m, CONFIG)
    local a, b = m.main.params[1], m.main.params[2]
    d:unify(a, b)
    d:set_default(a, CPU)
    local x = d:explain(b)
    assert.equal("script default", x.rule)
    assert.is_true(#x.steps >= 1)
    -- a conflicting constraint names the script's default, and changes nothing
    local e = err_of(d.constrain, d, b, GPU)
    assert.equal("conflict", e.code)
    assert.truthy(tostring(e):find("script's default", 1, true), tostring(e))
    assert.is_true(rawequal(d:lookup(b), CONFIG:canonical(CPU)))
    assert.equal("script default", d:explain(b).rule)
    dp.planner.default(d)
    assert.equal("script default", d:explain(b).rule)
  end)
end)
