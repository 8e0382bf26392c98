-- The parser: every form of ../shared/docs/relay-text.md, checked on the
-- nodes it builds.
local dp = require "devplan"

local CPU = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}
local GPU = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
local MT = {VirtualDevice = {CPU, GPU}, ["relay.Constant"] = {dp.const({3, 2}, "int64")}}
local T = "Tensor[(5, 7), float32]"

local function main(text, mt) return dp.parse(text, mt or MT)["main"] end

describe("parser grammar", function()
  it("reads the version header, parameters, attributes and result type", function()
    local f = main('#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ', %b {virtual_device=meta[VirtualDevice][1]}: '
      .. T .. ',\n virtual_device=meta[VirtualDevice][0]) -> ' .. T .. ' { add(%a, %b) }')
    assert.are.equal("fn", f.kind)
    assert.are.equal(2, #f.params)
    assert.are.equal("a", f.params[1].name)
    assert.are.equal(GPU, f.params[2].virtual_device)
    assert.are.equal(CPU, f.virtual_device)
    assert.are.equal(T, tostring(f.ret_type))
    assert.are.equal("call", f.body.kind)
    assert.are.equal("add", f.body.callee.name)
  end)

  it("keeps global functions in definition order and resolves forward references", function()
    local m = dp.parse("def @g(%x: " .. T .. ") { @f(%x) }\ndef @f(%y: " .. T .. ") { %y }\n"
      .. "def @main(%z: " .. T .. ") { @g(%z) }")
    local fs = m:functions()
    assert.are.same({"g", "f", "main"}, {fs[1][1], fs[2][1], fs[3][1]})
    assert.are.equal("global", m["g"].body.callee.kind)
  end)

  it("makes a graph binding used twice one node (sharing)", function()
    local f = main("def @main(%a: " .. T .. ") { %0 = add(%a, %a); multiply(%0, %0) }")
    assert.are.equal("call", f.body.kind)
    assert.is_true(rawequal(f.body.args[1], f.body.args[2]))
    assert.are.equal("add", f.body.args[1].callee.name)
  end)

  it("makes let a real let node, and `e1; e2` a let of an unused variable", function()
    local f = main("def @main(%a: " .. T .. ") { let %x: " .. T .. " = add(%a, %a); %x }")
    assert.are.equal("let", f.body.kind)
    assert.are.equal("x", f.body.var.name)
    assert.are.equal(T, tostring(f.body.var.type_annotation))
    assert.is_true(rawequal(f.body.var, f.body.body))
    local g = main("def @main(%a: " .. T .. ") { add(%a, %a); %a }")
    assert.are.equal("let", g.body.kind)
    assert.are.equal("call", g.body.value.kind)
  end)

  it("reads operator attributes of every kind", function()
    local f = main([[def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
      %1 = nn.batch_norm(%0, meta[relay.Constant][0], meta[relay.Constant][0], meta[relay.Constant][0],
                         meta[relay.Constant][0], epsilon=2e-05f, scale=False);
      %1.0
    }]], {["relay.Constant"] = {dp.const({1, 2, 3, 4}, "float32")}})
    assert.are.equal("proj", f.body.kind)
    assert.are.equal(0, f.body.index)
    local bn = f.body.tuple
    assert.are.equal(false, bn.attrs.scale)
    assert.is_true(math.abs(bn.attrs.epsilon - 2e-05) < 1e-12)
    local conv = bn.args[1]
    assert.are.same({1, 1, 1, 1}, conv.attrs.padding)
    assert.are.equal(4, conv.attrs.channels)
  end)

  it("calls variables and function values; reads fn with attributes", function()
    local f = main("def @main(%a: " .. T .. ") {\n  %0 = fn (%x: " .. T .. ", Primitive=1) -> " .. T
      .. " { negative(%x) };\n  %1 = %0(%a);\n  %0(%1)\n}")
    assert.are.equal("call", f.body.kind)
    assert.are.equal("fn", f.body.callee.kind)
    assert.are.equal(1, f.body.callee.attrs.Primitive)
    assert.is_true(rawequal(f.body.callee, f.body.args[1].callee))
  end)

  it("reads tuples, projections, if, references and scalar constants", function()
    local f = main([[def @main(%c: bool, %a: Tensor[(5, 7), float32]) {
      %0 = (%a, %a,);
      %1 = (%a,);
      %2 = ();
      let %r = ref(%a);
      ref_write(%r, %0.1);
      %3 = ref_read(%r);
      if (%c) { add(%3, 1f) } else { multiply(%1.0, 2.5f) }
    }]])
    local let_r = f.body
    assert.are.equal("let", let_r.kind)
    assert.are.equal("ref", let_r.value.kind)
    assert.are.equal("ref_write", let_r.body.value.kind)
    local iff = let_r.body.body
    assert.are.equal("if", iff.kind)
    assert.are.equal("const", iff.then_branch.args[2].kind)
    assert.are.equal(1.0, iff.then_branch.args[2].value)
    assert.are.equal("float32", iff.then_branch.args[2].dtype)
    assert.are.equal(2.5, iff.else_branch.args[2].value)
    assert.are.equal("tuple", iff.else_branch.args[1].tuple.kind)
    assert.are.equal(1, #iff.else_branch.args[1].tuple.fields)
  end)

  it("reads scalar constants with dtype suffixes", function()
    local e = dp.parse_expr("(1, -3i64, 1f, 2.5f, 1.5f16, True, False, 7u8)")
    local want = {{1, "int32"}, {-3, "int64"}, {1.0, "float32"}, {2.5, "float32"},
                  {1.5, "float16"}, {true, "bool"}, {false, "bool"}, {7, "uint8"}}
    for i, w in ipairs(want) do
      local c = e.fields[i]
      assert.are.equal(w[2], c.dtype)
      if type(w[1]) == "boolean" then assert.are.equal(w[1], c.value == true or c.value == 1)
      else assert.are.equal(w[1], c.value) end
    end
  end)

  it("reads type definitions, constructors and match with every pattern form", function()
    local m = dp.parse([[
type List[A] { Cons(A, List[A]), Nil, }
type Pair[A, B] { MkPair(A, B) }
def @main(%l: List[int32], %d: int32) -> int32 {
  %0 = match (%l) {
    Cons(%h, Cons(_, %t)) => %h,
    Cons(%h2, Nil) => { let %z = %h2; %z },
    Nil => %d,
  };
  %1 = MkPair(%0, (%d, %d));
  match? (%1) {
    MkPair(%x, (%y, _)) => add(%x, %y)
  }
}]])
    local td = m:typedefs()
    assert.are.equal(2, #td)
    assert.are.equal("List", td[1].name)
    assert.are.equal(2, #td[1].constructors)
    local body = m["main"].body
    assert.are.equal("match", body.kind)
    assert.are.equal(false, body.complete)
    local inner = body.data.args[1]
    assert.are.equal("match", inner.kind)
    assert.are.equal(true, inner.complete)
    assert.are.equal(3, #inner.clauses)
    assert.are.equal("let", inner.clauses[2].rhs.kind)
  end)

  it("reads the inline VirtualDevice literal", function()
    local f = main([[def @main(%x {virtual_device=VirtualDevice(device_type=cuda, virtual_device_id=0,
        target="cuda -host=llvm", memory_scope="global")}: Tensor[(5, 7), float32]) { %x }]])
    local vd = f.params[1].virtual_device
    assert.are.equal(vd, dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0,
      target = dp.Target("cuda -host=llvm"), memory_scope = "global"})
    local g = main("def @main(%x {virtual_device=VirtualDevice(device_type=2)}: " .. T .. ") { %x }")
    assert.are.equal(g.params[1].virtual_device, dp.VirtualDevice{device_type = "cuda"})
  end)

  it("reads primfn declarations and call_lowered", function()
    local m = dp.parse([[
primfn @gem(Tensor[(128, 128), float32] scope="scopeA", Tensor[(128, 128), float32])
    -> Tensor[(128, 128), float32] scope="scopeB";
def @main(%x: Tensor[(128, 128), float32], %y: Tensor[(128, 128), float32]) {
  call_lowered(@gem, (%x, %y))
}]])
    assert.are.equal(1, #m:primfns())
    local body = m["main"].body
    assert.are.equal("call_lowered", body.callee.name)
    assert.are.equal("gem", body.args[1].name)
  end)

  it("reads tensor constants written inline and from the metatable", function()
    local f = main([[def @main(%s: int64) {
      (Constant(Tensor[(2, 2), float32], [1, 2, 3, 4]), meta[relay.Constant][0], meta[relay.Constant][0])
    }]])
    local c = f.body.fields[1]
    assert.are.same({2, 2}, c.shape)
    assert.are.same({{1, 2}, {3, 4}}, c.value)
    assert.is_true(rawequal(f.body.fields[2], f.body.fields[3]))
    assert.are.same({3, 2}, f.body.fields[2].value)
  end)

  it("skips comments anywhere white space may stand, including type comments", function()
    local f = main([[// leading
def @main(%a: Tensor[(5, 7), float32] /* ty=Tensor[(5, 7), float32] */, // a
          %b /* nested /* comment */ here */ : Tensor[(5, 7), float32]) {
  %0 = add(%a, /* inline */ %b) /* ty=Tensor[(5, 7), float32] */;
  %0 // done
}]])
    assert.are.equal("add", f.body.callee.name)
  end)

  it("reads types: tuples, functions, unknown dimensions, Storage, ref", function()
    assert.are.equal("(Tensor[(?, 3), float32], int64)", tostring(dp.parse_type("(Tensor[(?, 3), float32], int64)")))
    local ft = dp.parse_type("fn (int64, bool) -> (int64,)")
    assert.are.equal("func", ft.kind)
    assert.are.equal(2, #ft.args)
    assert.are.equal("storage", dp.parse_type("Storage[]").kind)
    assert.are.equal("ref", dp.parse_type("ref(float32)").kind)
    assert.is_true(rawequal(dp.parse_type("Tensor[(5, 7), float32]"), dp.parse_type(T)))
  end)

  it("gives every node its source span", function()
    local f = dp.parse("def @main(%a: " .. T .. ") {\n  %0 = add(%a, %a);\n  multiply(%0, %0)\n}",
      nil, {source_name = "m.relay"})["main"]
    assert.are.same({source = "m.relay", line = 3, col = 3}, f.body.span)
    assert.are.same({source = "m.relay", line = 2, col = 8}, f.body.args[1].span)
    assert.are.same({source = "m.relay", line = 1, col = 11}, f.params[1].span)
  end)

  it("parses a single expression with dp.parse_expr, untyped until dp.infer_expr (as TVM)", function()
    local e = dp.parse_expr("let %x = 1f; add(%x, %x)")
    assert.are.equal("let", e.kind)
    assert.is_nil(e.checked_type)
    assert.are.equal("float32", tostring(dp.infer_expr(e)))
    assert.are.equal("float32", tostring(e.checked_type))
  end)

  it("reads a module from a file with dp.parse_file", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("def @main(%a: " .. T .. ") { %a }\n")
    f:close()
    local m = dp.parse_file(path)
    os.remove(path)
    assert.are.equal("var", m["main"].body.kind)
  end)
  it("reads `else if` chains as ifs nested in the else branch (as TVM's parser does)", function()
    local B = "Tensor[(), bool]"
    local h = "def @main(%a: " .. T .. ", %b: " .. T .. ", %c: " .. B .. ", %d: " .. B .. ") {\n"
    local chain = dp.parse(h .. "  if (%c) { %a } else if (%d) { %b } else if (%c) { add(%a, %b) } else { %a }\n}")
    local nested = dp.parse(h .. "  if (%c) { %a } else { if (%d) { %b } else { if (%c) { add(%a, %b) } else { %a } } }\n}")
    assert.is_true(dp.structural_equal(chain, nested))
    local e = chain["main"].body
    assert.are.equal("if", e.kind)
    assert.are.equal("if", e.else_branch.kind)
    assert.are.equal("if", e.else_branch.else_branch.kind)
    assert.are.equal("call", e.else_branch.else_branch.then_branch.kind)
    -- the chain still needs its final else, and each if its parenthesised condition
    local ok, err = pcall(dp.parse, h .. "  if (%c) { %a } else if (%d) { %b }\n}")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("expected 'else'"))
    ok, err = pcall(dp.parse, h .. "  if (%c) { %a } else if %d { %b } else { %a }\n}")
    assert.is_false(ok)
    assert.are.equal(2, err.line)
    assert.are.equal(26, err.col)
  end)
end)
