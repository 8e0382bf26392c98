-- The parser's fast path (simple `%n = E;` and `let %x = E;` statements
-- built by the C builder from position captures) must build exactly what
-- the full grammar builds, with the same spans and the same errors.
--
-- Each text is parsed twice: as written, and with a comment inside every
-- statement (`=/**/` in place of `=    `, same length, so positions stay
-- the same), which the fast path does not accept, so the full grammar
-- parses every statement.
local dp = require "devplan"

local T = "Tensor[(5, 7), float32]"
local CPU = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}
local GPU = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
local MT = {VirtualDevice = {CPU, GPU}}

local function slow_version(text)
  local s, n = text:gsub("=    ", "=/**/")
  assert(n > 0, "the text should have statements written with '=    '")
  return s
end

-- kind and span of every node, in visiting order
local function spans(m)
  local out = {}
  dp.visit(m, function(e)
    local sp = e.span
    out[#out + 1] = e.kind .. "@" .. (sp and (sp.line .. ":" .. sp.col) or "-")
  end)
  return out
end

local function same_both_ways(text, mt)
  local fast = dp.parse(text, mt or MT)
  local slow = dp.parse(slow_version(text), mt or MT)
  assert.is_true(dp.structural_equal(fast, slow))
  assert.are.same(spans(slow), spans(fast))
  assert.are.equal(tostring(slow), tostring(fast))
  return fast
end

local function err_of(text, mt)
  local ok, e = pcall(dp.parse, text, mt or MT)
  assert.is_false(ok)
  assert.are.equal("table", type(e))
  return e
end

local function same_error(text, line, col, pattern, mt)
  for _, t in ipairs{text, slow_version(text)} do
    local e = err_of(t, mt)
    assert.are.equal(line, e.line)
    assert.are.equal(col, e.col)
    assert.is_truthy(e.message:find(pattern), e.message)
  end
end

local function def(body)
  return "def @main(%a: " .. T .. ", %b: " .. T .. ") {\n" .. body .. "\n}"
end

describe("parser fast path", function()
  it("builds graph bindings, lets, nested calls and meta attributes as the full grammar does", function()
    local m = same_both_ways(def(table.concat({
      "  %0 =    add(%a, %b);",
      "  %1 =    on_device(multiply(%0, %a), virtual_device=meta[VirtualDevice][1]);",
      "  let %x =    add(on_device(%1, virtual_device=meta[VirtualDevice][0]), %0);",
      "  let %x =    multiply(%a, %b);", -- shadows the first %x
      "  %2 =    %x;",
      "  add(%2, %1)"}, "\n")))
    assert.are.equal("let", m["main"].body.kind)
  end)

  it("binds a let's variable before its value, as the full grammar does", function()
    -- `let %x = f(%x)` refers to the %x being defined (the full grammar
    -- binds it before parsing the value); both paths agree.
    local m = same_both_ways(def("  let %y =    add(%a, %b);\n  let %z =    add(%y, %a);\n  %z"))
    local body = m["main"].body
    assert.are.equal("let", body.kind)
    assert.are.equal("let", body.body.kind)
  end)

  it("keeps sharing: a graph binding used twice is one node", function()
    local m = same_both_ways(def("  %0 =    add(%a, %b);\n  %1 =    multiply(%0, %0);\n  %1"))
    local body = m["main"].body
    assert.is_true(rawequal(body.args[1], body.args[2]))
  end)

  it("scopes names to their block: function bodies, branches and shadowing", function()
    same_both_ways(def(table.concat({
      "  %0 =    add(%a, %b);",
      "  %1 =    fn (%x: " .. T .. ") {",
      "    %0 =    multiply(%x, %x);",  -- a new %0, local to the function
      "    let %a =    add(%0, %x);",
      "    %a",
      "  };",
      "  %2 =    %1(%0);",
      "  add(%2, %a)"}, "\n")))
  end)

  it("falls back on the full grammar for a callee or meta entry not seen yet, and for other forms", function()
    local m = same_both_ways(def(table.concat({
      "  %0 =    nn.relu(%a);",
      "  %1 =    nn.relu(%0);",
      "  %2 =    (%0, %1);",
      "  %3 =    %2.0;",
      "  %4 =    nn.softmax(%3, axis=1);",
      "  %5 =    on_device(%4, virtual_device=meta[VirtualDevice][0]);",
      "  %6 =    on_device(%5, virtual_device=meta[VirtualDevice][0]);",
      "  %6"}, "\n")))
    assert.are.equal("on_device", m["main"].body.callee.name)
  end)

  it("reports name errors at the same place", function()
    same_error(def("  %0 =    add(%a, %b);\n  %1 =    add(%0, %c);\n  %1"), 3, 19, "unknown variable %%c")
    same_error(def("  %0 =    add(%a, %b);\n  %0 =    add(%a, %b);\n  %0"), 3, 3, "duplicate definition of %%0")
    same_error(def("  %0 =    add(%a, %b);\n  %1 =    add(%a);\n  %1"), 3, 11, "operator 'add' takes 2 arguments, 1 given")
    -- an unknown variable before an arity error of a later call comes first
    same_error(def("  %0 =    add(%a, %b);\n  %1 =    add(add(%q), %b);\n  %1"), 3, 19, "unknown variable %%q")
    -- an arity error of an inner call comes before a later unknown variable
    same_error(def("  %0 =    add(%a, %b);\n  %1 =    add(add(%a), %q);\n  %1"), 3, 15, "operator 'add' takes 2 arguments, 1 given")
    same_error(def("  %0 =    add(%a, %b);\n  let %x =    add(%x, %y);\n  %x"), 3, 23, "unknown variable %%y")
  end)

  it("reports an attribute error of a fast statement at the attribute", function()
    local mt = {VirtualDevice = {CPU}}
    same_error(def("  %0 =    on_device(%a, virtual_device=meta[VirtualDevice][0]);\n"
      .. "  %1 =    nn.softmax(%0, virtual_device=meta[VirtualDevice][0]);\n  %1"), 3, 26, "virtual_device", mt)
  end)

  it("handles calls nested deeper than LPeg's stack allows: parsed or a clean error", function()
    local depth = 2000
    local text = def("  %0 =    add(%a, %b);\n  %1 =    " .. string.rep("nn.relu(", depth) .. "%0"
      .. string.rep(")", depth) .. ";\n  %1")
    local ok, err = pcall(dp.parse, text)
    local ok2, err2 = pcall(dp.parse, slow_version(text))
    assert.are.equal(ok2, ok)
    if not ok then
      assert.are.equal("table", type(err))
      assert.is_truthy(tostring(err):find("nested too deeply"), tostring(err))
      assert.are.equal(err2.line, err.line)
      assert.are.equal(err2.col, err.col)
    end
  end)
end)
