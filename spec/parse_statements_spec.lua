-- Statements and their scopes. The grammar gives every statement without a
-- block inside it to the builder in batches of up to 64, and a statement
-- with a block alone, after the actions of its blocks (lua/devplan/parser.lua):
-- names must resolve as they are written whatever the grouping, and errors
-- must come at their own position.
local dp = require "devplan"
local testing = require "devplan.testing"

local T = "Tensor[(5, 7), float32]"
local CPU = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}
local GPU = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
local MT = {VirtualDevice = {CPU, GPU}}

local function def(body)
  return "def @main(%a: " .. T .. ", %b: " .. T .. ") {\n" .. body .. "\n}"
end

local function main(text, mt) return dp.parse(text, mt or MT)["main"] end

local function err_of(text, mt)
  local ok, e = pcall(dp.parse, text, mt or MT)
  assert.is_false(ok)
  assert.are.equal("table", type(e))
  return e
end

local function check_error(text, line, col, pattern, mt)
  local e = err_of(text, mt)
  assert.is_truthy(e.message:find(pattern), e.message)
  assert.are.same({line, col}, {e.line, e.col})
end

-- n statements `%i = add(%{i-1}, %b);`, with `extra(i)` (a statement or "")
-- after each
local function chain(n, extra)
  local out = {}
  for i = 0, n - 1 do
    out[#out + 1] = ("  %%%d = add(%s, %%b);"):format(i, i == 0 and "%a" or "%" .. (i - 1))
    if extra then out[#out + 1] = extra(i) end
  end
  out[#out + 1] = "  %" .. (n - 1)
  return def(table.concat(out, "\n"))
end

describe("parser statements", function()
  it("builds graph bindings, lets, nested calls and meta attributes", function()
    local f = main(def(table.concat({
      "  %0 = add(%a, %b);",
      "  %1 = on_device(multiply(%0, %a), virtual_device=meta[VirtualDevice][1]);",
      "  let %x = add(on_device(%1, virtual_device=meta[VirtualDevice][0]), %0);",
      "  let %x = multiply(%a, %b);", -- shadows the first %x
      "  %2 = %x;",
      "  add(%2, %1)"}, "\n")))
    local l1 = f.body
    assert.are.equal("let", l1.kind)
    assert.are.equal("add", l1.value.callee.name)
    local l2 = l1.body
    assert.are.equal("multiply", l2.value.callee.name)
    -- %2 is the second %x; the final add uses it and %1
    assert.is_true(rawequal(l2.var, l2.body.args[1]))
    assert.are.equal(GPU, l2.body.args[2].attrs.virtual_device)
  end)

  it("binds a let's variable before its value (a recursive function refers to itself)", function()
    local f = main(def("  let %f = fn (%x: " .. T .. ") -> " .. T .. " { %f(%x) };\n  %f(%a)"))
    local let = f.body
    assert.is_true(rawequal(let.var, let.value.body.callee))
    -- a value without a block too (the batched path): %x is the new variable
    local g = main("def @main(%a: " .. T .. ") { let %x: " .. T .. " = %a; let %y: " .. T .. " = %x; %y }")
    assert.is_true(rawequal(g.body.var, g.body.body.value))
  end)

  it("keeps sharing: a graph binding used twice is one node", function()
    local f = main(def("  %0 = add(%a, %b);\n  %1 = multiply(%0, %0);\n  %1"))
    assert.is_true(rawequal(f.body.args[1], f.body.args[2]))
  end)

  it("scopes names to their block: function bodies, branches, clauses, shadowing", function()
    local f = main(def(table.concat({
      "  %0 = add(%a, %b);",
      "  %1 = fn (%x: " .. T .. ") {",
      "    %0 = multiply(%x, %x);",  -- a new %0, local to the function
      "    let %a = add(%0, %x);",
      "    %a",
      "  };",
      "  %2 = %1(%0);",             -- the outer %0
      "  add(%2, %a)"}, "\n")))      -- the parameter %a
    local call = f.body.args[1]
    assert.are.equal("add", call.args[1].callee.name)
    assert.are.equal("a", f.body.args[2].name)
    assert.is_true(rawequal(f.params[1], f.body.args[2]))
    -- a name defined in a branch is not seen after it
    local e = err_of(def("  %0 = if (True) { %9 = add(%a, %b); %9 } else { %a };\n  %9"))
    assert.is_truthy(e.message:find("unknown variable %%9"), e.message)
  end)

  it("gives the same nodes and spans whether statements come in batches or alone", function()
    -- 200 statements: batches of 64; then the same with a statement holding a
    -- block after each, so that each goes alone
    local batched = main(chain(200))
    local alone = main(chain(200, function(i) return ("  %%f%d = fn () { %%a };"):format(i) end))
    local a, b = batched.body, alone.body
    for i = 199, 0, -1 do
      assert.are.equal("call", a.kind)
      assert.are.same({i + 2, 3 + #("%" .. i .. " = ")}, {a.span.line, a.span.col})
      assert.are.same({2 * i + 2, a.span.col}, {b.span.line, b.span.col})
      a, b = a.args[1], b.args[1]
    end
    assert.are.equal("a", a.name)
    assert.are.equal("a", b.name)
  end)

  it("reports name errors at their place in a batch, at a batch's edge and after a block", function()
    for _, i in ipairs{0, 1, 63, 64, 65, 130} do
      local text = chain(140):gsub("(%%" .. i .. " = add%([^,]*, )%%b%)", "%1%%c)")
      local line = select(i + 2, table.unpack((function()
        local t = {}
        for l in text:gmatch("[^\n]+") do t[#t + 1] = l end
        return t
      end)()))
      check_error(text, i + 2, line:find("%c", 1, true), "unknown variable %%c")
    end
    check_error(def("  %0 = add(%a, %b);\n  %0 = add(%a, %b);\n  %0"), 3, 3, "duplicate definition of %%0")
    check_error(def("  %0 = add(%a, %b);\n  %1 = add(%a);\n  %1"), 3, 8, "operator 'add' takes 2 arguments, 1 given")
    -- an unknown variable before an arity error of a later call comes first
    check_error(def("  %0 = add(%a, %b);\n  %1 = add(add(%q), %b);\n  %1"), 3, 16, "unknown variable %%q")
    -- an arity error of an inner call comes before a later unknown variable
    check_error(def("  %0 = add(%a, %b);\n  %1 = add(add(%a), %q);\n  %1"), 3, 12, "operator 'add' takes 2 arguments, 1 given")
    check_error(def("  %0 = add(%a, %b);\n  let %x = add(%x, %y);\n  %x"), 3, 20, "unknown variable %%y")
    -- inside a function's body, after a block
    check_error(def("  %0 = fn (%x: " .. T .. ") { %x };\n  %1 = %0(%z);\n  %1"), 3, 11, "unknown variable %%z")
  end)

  it("reports an attribute error at the attribute", function()
    check_error(def("  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0]);\n"
      .. "  %1 = nn.softmax(%0, virtual_device=meta[VirtualDevice][0]);\n  %1"), 3, 23, "virtual_device")
  end)

  it("reads a block's final expression once, so nested final blocks stay linear", function()
    -- fn () { fn () { ... } } nested 3,000 deep: each level's final expression
    -- is a block; reading one twice would double the work per level
    local n = 3000
    local depth, e = testing.depth(dp.parse_expr(("fn () { "):rep(n) .. "1" .. (" }"):rep(n)), "fn",
                                   function(x) return x.body end)
    assert.are.equal(n, depth)
    assert.are.equal("const", e.kind)
  end)

  it("rejects a block ending in a `;` or empty, at its `}`", function()
    check_error(def("  %0 = add(%a, %b);\n  %0;"), 4, 1, "expected an expression")
    check_error("def @main() { }", 1, 15, "expected an expression")
    check_error("def @main() { let %x = 1; }", 1, 27, "expected an expression")
  end)

  it("reads a let variable's virtual device as the printer writes it (as a parameter's)", function()
    local x = dp.var("x", dp.parse_type(T))
    local v = dp.var("v", dp.parse_type(T), {virtual_device = GPU})
    local m = dp.IRModule{functions = {{"main", dp.fn({x}, dp.let(v, dp.call("negative", {x}), dp.call("exp", {v})))}}}
    local text = tostring(m)
    assert.truthy(text:find("let %v {virtual_device=", 1, true), text)
    local back = dp.parse(text)
    assert.are.equal(text, tostring(back))
    assert.truthy(back.main.body.var.virtual_device, text)
    -- without a type, with the metadata's device, and any other key an error at its place
    local body = main(def("  let %v {virtual_device=meta[VirtualDevice][1]} = add(%a, %b);\n  %v")).body
    assert.are.equal("cuda", body.var.virtual_device.device_type_name)
    check_error(def("  let %v {foo=1}: " .. T .. " = add(%a, %b);\n  %v"), 2, 11,
      "unknown let variable attribute 'foo' %(only virtual_device%)")
  end)
end)
