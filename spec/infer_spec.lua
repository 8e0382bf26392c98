-- Type inference (src/core/infer.c): the two real models must get exactly the
-- types TVM printed in their /* ty=... */ comments; unannotated parameters,
-- higher-order functions, globals, ADTs, refs; errors that name the
-- expression and its position; deep chains.
local dp = require "devplan"
local testing = require "devplan.testing"

local MODELS = testing.shared_dir .. "/models/"
local CASES = testing.shared_dir .. "/conformance/cases/"
local read = testing.read_file

-- line number -> TVM's type for each `%N = ... /* ty=T */;` line, and the
-- final expression's line (`expr /* ty=T */` before the closing brace).
local function tvm_types(text)
  local want, n = {}, 0
  local lineno = 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    lineno = lineno + 1
    local ty = line:match("^%s+%%%d+ = .-/%* ty=(.-) %*/;%s*$") or
               line:match("^%s+[^%%].-/%* ty=(.-) %*/%s*$")
    if ty then
      want[lineno] = ty
      n = n + 1
    end
  end
  return want, n
end

-- Every node that starts a bound line: the outermost node on that line
-- (the last visited in post order), as the printer binds one per line.
local function nodes_by_line(fn)
  local by_line = {}
  dp.visit(fn.body, function(e)
    local sp = e.span
    if sp and sp.line then
      local prev = by_line[sp.line]
      -- post order: a parent comes after its children; keep the one with
      -- the smallest column (the call itself, not its arguments)
      if not prev or sp.col <= prev.span.col then by_line[sp.line] = e end
    end
  end)
  return by_line
end

describe("inference on the real models", function()
  for _, name in ipairs{"resnet18", "dcgan"} do
    it(name .. ": every binding gets TVM's type", function()
      local text = read(MODELS .. name .. ".relay")
      -- parsed as TVM printed it: the /* ty=... */ comments stay in the
      -- text (the parser skips them) and are the expected types below
      assert.is_truthy(text:find("/* ty=", 1, true))
      local mod = dp.parse(text, nil, {source_name = name .. ".relay"})
      local want, count = tvm_types(text)
      assert.is_true(count > 10)
      local by_line = nodes_by_line(mod["main"])
      local checked = 0
      for line, ty in pairs(want) do
        local e = by_line[line]
        assert.is_not_nil(e, "no node on line " .. line)
        assert.is_not_nil(e.checked_type, "untyped node on line " .. line)
        assert.are.equal(ty, tostring(e.checked_type), "line " .. line)
        checked = checked + 1
      end
      assert.are.equal(count, checked)
      -- parameters and the function itself
      local fn = mod["main"]
      for _, p in ipairs(fn.params) do
        assert.are.equal(tostring(p.type_annotation), tostring(p.checked_type))
      end
      assert.are.equal(tostring(fn.ret_type), tostring(fn.checked_type.ret))
    end)
  end
end)

describe("inference", function()
  local T57 = "Tensor[(5, 7), float32]"

  it("types operator calls from their relations", function()
    local mod = dp.parse([[
def @main(%x: Tensor[(1, 3, 224, 224), float32], %w: Tensor[(64, 3, 7, 7), float32]) {
  %0 = nn.conv2d(%x, %w, strides=[2, 2], padding=[3, 3, 3, 3], channels=64, kernel_size=[7, 7]);
  %1 = nn.max_pool2d(%0, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]);
  %2 = split(%1, indices_or_sections=2, axis=1);
  %3 = (%2.0, %2.1);
  concatenate(%3, axis=1)
}]])
    assert.are.equal("Tensor[(1, 64, 56, 56), float32]", tostring(mod["main"].body.checked_type))
  end)

  it("infers unannotated parameters from their uses (higher order)", function()
    local mod = dp.parse(read(CASES .. "10_higher_order.lua"):match("input = %[%[(.-)%]%]"),
                         {VirtualDevice = {dp.VirtualDevice{device_type = "cpu"}, dp.VirtualDevice{device_type = "cuda"}}})
    local fn = mod["main"]
    assert.are.equal("fn (" .. T57 .. ", " .. T57 .. ") -> " .. T57, tostring(fn.checked_type))
    local g
    dp.visit(fn.body, function(e) if e.kind == "var" and e.name == "g" then g = e end end)
    assert.are.equal("fn (" .. T57 .. ") -> " .. T57, tostring(g.checked_type))
  end)

  it("handles the conformance cases with unannotated functions", function()
    local meta = {VirtualDevice = {dp.VirtualDevice{device_type = "cpu"}, dp.VirtualDevice{device_type = "cuda"},
                                   dp.VirtualDevice{device_type = "cpu", memory_scope = "scopeB"}},
                  ["relay.Constant"] = {dp.const({3, 2}, "int64")}}
    for _, case in ipairs{"08_func_param_on_cpu", "26_conditional", "33_primitive", "22_tuple_get_item",
                          "28_ref", "27_global", "31_lowered", "13_shape_of", "17_dynamic_input"} do
      local text = read(CASES .. case .. ".lua"):match("input = %[%[(.-)%]%]")
      local mod = dp.parse(text, meta)
      local fn = mod["main"]
      assert.is_not_nil(fn.checked_type, case)
      dp.visit(fn, function(e)
        if e.kind ~= "op" then assert.is_not_nil(e.checked_type, case .. ": untyped " .. e.kind) end
      end)
    end
  end)

  it("types layout_transform by the real layout rule", function()
    local mod = dp.parse([[
def @main(%x: Tensor[(1, 32, 40, 40), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW4c");
  %1 = add(%0, %0);
  layout_transform(%1, src_layout="NCHW4c", dst_layout="NCHW")
}]])
    local types = {}
    dp.visit(mod["main"].body, function(e) if e.kind == "call" then types[#types + 1] = tostring(e.checked_type) end end)
    assert.are.same({"Tensor[(1, 8, 40, 40, 4), float32]", "Tensor[(1, 8, 40, 40, 4), float32]",
                     "Tensor[(1, 32, 40, 40), float32]"}, types)
  end)

  it("lets globals call each other in any order", function()
    local mod = dp.parse([[
def @main(%x: Tensor[(5, 7), float32]) {
  @f(%x)
}
def @f(%a: Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32] {
  @g(%a)
}
def @g(%b: Tensor[(5, 7), float32]) {
  negative(%b)
}]])
    assert.are.equal(T57, tostring(mod["main"].checked_type.ret))
    assert.are.equal(T57, tostring(mod["g"].checked_type.ret))
  end)

  it("instantiates polymorphic constructors per use and binds match patterns", function()
    local mod = dp.parse([[
type List[A] { Cons(A, List[A]), Nil }
def @main(%x: Tensor[(3), float32], %n: int64) {
  %0 = Cons(%x, Nil);
  %1 = Cons(%n, Nil);
  %2 = match (%0) {
    Cons(%h, _) => %h,
    Nil => %x
  };
  (%2, %1).0
}]])
    local fn = mod["main"]
    assert.are.equal("Tensor[(3), float32]", tostring(fn.body.checked_type))
    local lists = {}
    dp.visit(fn.body, function(e)
      if e.kind == "call" and e.callee.kind == "ctor" and e.callee.name == "Cons" then
        lists[tostring(e.checked_type)] = true
      end
    end)
    assert.is_true(lists["List[Tensor[(3), float32]]"])
    assert.is_true(lists["List[int64]"])
  end)

  it("reports a parameter nothing constrains, and keeps unknowns nested in a type (as TVM)", function()
    local ok, err = pcall(dp.parse, "def @main(%a: Tensor[(5, 7), float32]) {\n  fn (%x) { %a }\n}")
    assert.is_false(ok)
    assert.truthy(tostring(err):find(":2:7: variable %x: cannot infer its type", 1, true), tostring(err))
    local mod = dp.parse([[
type List[A] { Cons(A, List[A]), Nil }
def @main(%x: Tensor[(3), float32]) { (%x, Nil) }]])
    assert.are.equal("(Tensor[(3), float32], List[?])", tostring(mod["main"].body.checked_type))
  end)

  it("types a recursive let (the variable used in its own value)", function()
    local mod = dp.parse([[
def @main(%x: Tensor[(5, 7), float32], %c: bool) {
  let %f = fn (%n) { if (%c) { %f(negative(%n)) } else { %n } };
  %f(%x)
}]])
    assert.are.equal("fn (" .. T57 .. ") -> " .. T57, tostring(mod["main"].body.var.checked_type))
  end)

  it("types references and if", function()
    local mod = dp.parse([[
def @main(%x: Tensor[(5, 7), float32], %c: bool) {
  let %r = ref(%x);
  %0 = ref_write(%r, negative(%x));
  if (%c) { ref_read(%r) } else { %x }
}]])
    local fn = mod["main"]
    assert.are.equal(T57, tostring(fn.body.checked_type))
    assert.are.equal("ref(" .. T57 .. ")", tostring(fn.body.var.checked_type))
  end)

  it("reports shape errors naming the call, the operator and the position", function()
    local ok, err = pcall(dp.parse, [[
def @main(%x: Tensor[(5, 7), float32], %y: Tensor[(3), float32]) {
  %0 = negative(%x);
  add(%0, %y)
}]], nil, {source_name = "bad.relay"})
    assert.is_false(ok)
    local msg = tostring(err)
    assert.truthy(msg:find("bad.relay:3:", 1, true), msg)
    assert.truthy(msg:find("call of add", 1, true), msg)
    assert.truthy(msg:find("do not broadcast", 1, true), msg)
    assert.are.equal("type", err.code)
  end)

  it("reports mismatches at the expression (if condition must be bool)", function()
    local ok, err = pcall(dp.parse, [[
def @main(%x: Tensor[(5, 7), float32]) {
  if (%x) { %x } else { %x }
}]])
    assert.is_false(ok)
    assert.truthy(tostring(err):find("type mismatch", 1, true), tostring(err))
    assert.truthy(tostring(err):find(":2:3:", 1, true), tostring(err))
    assert.truthy(tostring(err):find("if expression", 1, true), tostring(err))
  end)

  it("reports a wrong number of operator arguments", function()
    local ok, err = pcall(dp.parse, "def @main(%x: Tensor[(5, 7), float32]) { add(%x) }")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("add", 1, true) and tostring(err):find("2 arguments", 1, true), tostring(err))
  end)

  it("keeps the nodes untyped when inference fails", function()
    local x = dp.var("x", dp.type.tensor({5, 7}, "float32"))
    local y = dp.var("y", dp.type.tensor({3}, "float32"))
    local n = dp.call("negative", {x})
    local bad = dp.call("add", {n, y})
    assert.has_error(function() dp.infer_expr(bad) end)
    assert.is_nil(n.checked_type)
    assert.is_nil(bad.checked_type)
    assert.are.equal(T57, tostring(dp.infer_expr(n)))
  end)

  it("infers million-deep let chains and call chains", function()
    local n = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
    local x = dp.var("x", dp.type.tensor({4}, "float32"))
    local e = x
    for _ = 1, n do e = dp.call("negative", {e}) end
    assert.are.equal("Tensor[(4), float32]", tostring(dp.infer_expr(e)))
    local vars, vals, prev = {}, {}, x
    for i = 1, n do
      vars[i] = dp.var("v")
      vals[i] = dp.call("add", {prev, prev})
      prev = vars[i]
    end
    local body = prev
    for i = n, 1, -1 do body = dp.let(vars[i], vals[i], body) end
    local fn = dp.fn({x}, body)
    assert.are.equal("fn (Tensor[(4), float32]) -> Tensor[(4), float32]", tostring(dp.infer_expr(fn)))
    assert.are.equal("Tensor[(4), float32]", tostring(vars[n].checked_type))
  end)
end)
