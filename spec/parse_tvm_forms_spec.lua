-- Forms that TVM's printer emits and its parser accepts: projections of
-- parenthesised expressions, negative numbers, None and nested lists as
-- attribute values, literals with dtype suffixes, True/False, metatable
-- constants, result types of local functions, the version header, CRLF.
local dp = require "devplan"
require "devplan.testing" -- assert.structurally_equal

local T = "Tensor[(5, 7), float32]"
local MT = {["relay.Constant"] = {dp.const({3, 2}, "int64")}}

-- an operator whose two attributes take any value, to see what was read
dp.op.register("test.parse_forms_any", {num_inputs = 1,
  attrs = {{name = "v", kind = "any"}, {name = "w", kind = "any"}},
  type_rel = function(ts) return ts[1] end})

local function body_of(text, mt) return dp.parse(text, mt or MT)["main"].body end
local function main1(body) return "def @main(%a: " .. T .. ", %b: " .. T .. ") { " .. body .. " }" end

describe("parser on TVM's printed forms", function()
  it("projects a parenthesised expression: (%a, %b).1, and chains projections", function()
    local e = body_of(main1("(%a, %b).1"))
    assert.are.equal("proj", e.kind)
    assert.are.equal(1, e.index)
    assert.are.equal("tuple", e.tuple.kind)
    assert.are.equal("b", e.tuple.fields[2].name)
    e = body_of(main1("((%a, %b).1, (%a,)).1.0"))
    assert.are.equal("proj", e.kind)
    assert.are.equal(0, e.index)
    assert.are.equal(1, e.tuple.index)
    assert.are.equal("a", e.tuple.tuple.fields[2].fields[1].name)
    e = body_of(main1("%0 = (%a, (%a, %b)); %0.1.0"))
    assert.are.equal(0, e.index)
    assert.are.equal(1, e.tuple.index)
  end)

  it("reads negative numbers, None and nested lists as attribute values", function()
    local e = body_of(main1("test.parse_forms_any(%a, v=[[1, 2], [3, -4], []], w=None)"))
    assert.are.same({{1, 2}, {3, -4}, {}}, e.attrs.v)
    assert.are.equal(dp.NONE, e.attrs.w)
    e = body_of(main1("test.parse_forms_any(%a, v=-1, w=[-1.5f, 2e-05f, -3i64, True, \"s\", [None]])"))
    assert.are.equal(-1, e.attrs.v)
    assert.are.equal("integer", math.type(e.attrs.v))
    assert.are.same({-1.5, 2e-05, -3, true, "s", {dp.NONE}}, e.attrs.w)
    -- with an operator's own schema: axis=-1 of nn.softmax is its default
    e = body_of(main1("sum(%a, axis=[-1], keepdims=True)"))
    assert.are.same({-1}, e.attrs.axis)
    assert.is_true(e.attrs.keepdims)
    -- function attributes take the same values
    e = body_of(main1("%0 = fn (%x: " .. T .. ", Primitive=1, Foo=[[1], [-2, 3]], Bar=None) { %x }; %0(%a)"))
    assert.are.same({{1}, {-2, 3}}, e.callee.attrs.Foo)
    assert.are.equal(dp.NONE, e.callee.attrs.Bar)
  end)

  it("reads literals with dtype suffixes, exponents and signs, and True/False", function()
    local e = body_of("def @main() { (1e-05f, -0.5f, 1.5f16, 3f64, -3i64, 1i8, 2u8, 1.5e3f, 7, -7, 2.5, True, False) }")
    local want = {{1e-05, "float32"}, {-0.5, "float32"}, {1.5, "float16"}, {3.0, "float64"},
                  {-3, "int64"}, {1, "int8"}, {2, "uint8"}, {1500.0, "float32"}, {7, "int32"},
                  {-7, "int32"}, {2.5, "float32"}, {true, "bool"}, {false, "bool"}}
    assert.are.equal(#want, #e.fields)
    for i, w in ipairs(want) do
      local c = e.fields[i]
      assert.are.equal("const", c.kind)
      assert.are.equal(w[2], c.dtype, "literal " .. i)
      assert.are.equal(0, c.ndim)
      if type(w[1]) == "boolean" then assert.are.equal(w[1], c.value == true or c.value == 1)
      elseif w[2]:find("^float") then assert.is_true(math.abs(c.value - w[1]) <= 1e-3 * math.abs(w[1]), "literal " .. i)
      else assert.are.equal(w[1], c.value, "literal " .. i) end
    end
    -- an integer suffix on a fraction is an error
    local ok, err = pcall(dp.parse, "def @main() { 1.5i64 }")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("integer"), err.message)
  end)

  it("reads a metatable constant followed by its type comment, as an argument and alone", function()
    local e = body_of("def @main() {\n  %0 = meta[relay.Constant][0] /* ty=Tensor[(2), int64] */;\n"
      .. "  add(%0, meta[relay.Constant][0] /* ty=Tensor[(2), int64] */) /* ty=Tensor[(2), int64] */\n}")
    assert.are.equal("call", e.kind)
    assert.is_true(rawequal(e.args[1], e.args[2]))
    assert.are.same({3, 2}, e.args[1].value)
    assert.are.equal("Tensor[(2), int64]", tostring(e.checked_type))
  end)

  it("reads the metadata section TVM's printer appends; a metatable given wins", function()
    local text = '#[version = "0.0.5"]\ndef @main() {\n  meta[relay.Constant][0] /* ty=Tensor[(2), int64] */\n}\n\n'
      .. '#[metadata]\n{\n  "root": 0, \n  "nodes": [{"type_key": ""}], \n  "b64ndarrays": [], \n'
      .. '  "attrs": {"tvm_version": "0.8.0"}\n}'
    local e = body_of(text)
    assert.are.same({3, 2}, e.value)
    -- with neither, the reference is a clear error, not a guess
    local ok, err = pcall(dp.parse, text)
    assert.is_false(ok)
    assert.is_truthy(err.message:find("metadata has no 'relay.Constant' list", 1, true), err.message)
    -- something else after the functions is still an error
    ok, err = pcall(dp.parse, "def @main() { 1 }\n#[meta]\n")
    assert.is_false(ok)
    assert.are.equal(2, err.line)
  end)

  it("reads a result type on a local function: fn (...) -> T { }", function()
    local e = body_of(main1("%0 = fn (%x: " .. T .. ", %y: " .. T .. ") -> " .. T
      .. " { add(%x, %y) }; %1 = fn () -> (" .. T .. ",) { (%a,) }; (%0(%a, %b), %1)"))
    local f = e.fields[1].callee
    assert.are.equal("fn", f.kind)
    assert.are.equal(T, tostring(f.ret_type))
    assert.are.equal("(" .. T .. ",)", tostring(e.fields[2].ret_type))
    assert.are.equal("fn () -> (" .. T .. ",)", tostring(e.fields[2].checked_type))
  end)

  it("reads the version header followed by blank lines and comments", function()
    local m = dp.parse('#[version = "0.0.5"]\n\n\n// a comment\n\n/* another */\n\ndef @main(%a: ' .. T .. ") { %a }")
    assert.are.equal(8, m["main"].span.line)
    m = dp.parse('#[version = "0.0.5"]   \t\n\ndef @main(%a: ' .. T .. ") { %a }")
    assert.are.equal(3, m["main"].span.line)
  end)

  it("reads CRLF line endings; lines and columns are those of the LF text", function()
    local lf = '#[version = "0.0.5"]\ndef @main(%a: ' .. T .. ', %b: ' .. T .. ') {\n'
      .. "  %0 = add(%a, %b);\n  let %x = multiply(%0, %0);\n"
      .. "  %1 = fn (%y: " .. T .. ") -> " .. T .. " {\n    negative(%y)\n  };\n  %1(%x)\n}\n"
    local crlf = lf:gsub("\n", "\r\n")
    local a, b = dp.parse(lf), dp.parse(crlf)
    assert.structurally_equal(a, b)
    assert.are.equal(tostring(a), tostring(b))
    local la, lb = a["main"].body, b["main"].body
    assert.are.same(la.value.span, lb.value.span)
    assert.are.same(la.body.callee.body.span, lb.body.callee.body.span)
    assert.are.same({source = "<string>", line = 6, col = 5}, lb.body.callee.body.span)
  end)
end)
