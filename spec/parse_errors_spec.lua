-- Parser errors: each kind names the source, line and column, shows the
-- line with a caret under the column, and says what is wrong.
local dp = require "devplan"

local T = "Tensor[(5, 7), float32]"
local CPU = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}

-- Parse, expect an error; return it.
local function err_of(text, mt, f)
  local ok, e = pcall(f or dp.parse, text, mt, {source_name = "bad.relay"})
  assert.is_false(ok, "the text should not parse")
  assert.are.equal("table", type(e))
  return e
end

local function check(text, line, col, msg_pattern, code, mt)
  local e = err_of(text, mt)
  assert.are.equal("bad.relay", e.source)
  assert.are.equal(line, e.line)
  assert.are.equal(col, e.col)
  assert.is_truthy(e.message:find(msg_pattern), "message was: " .. e.message)
  if code then assert.are.equal(code, e.code) end
  local s = tostring(e)
  assert.is_truthy(s:find("^bad%.relay:" .. line .. ":" .. col .. ": "), s)
  -- the offending line, then a caret under the column
  local src_line = select(line, table.unpack((function()
    local t = {}
    for l in (text .. "\n"):gmatch("([^\n]*)\n") do t[#t + 1] = l end
    return t
  end)()))
  local shown, caret = s:match("\n([^\n]*)\n([^\n]*)$")
  assert.are.equal(src_line, shown)
  assert.are.equal(string.rep(" ", col - 1) .. "^", caret)
  return e
end

local function def(body, params)
  return "def @main(" .. (params or "%a: " .. T .. ", %b: " .. T) .. ") {\n" .. body .. "\n}"
end

describe("parser errors", function()
  it("syntax: says what was expected and what was found", function()
    check(def("  %0 = add(%a, %b;\n  %0"), 2, 18, "expected ',' or '%)', found ';'", "syntax")
    check(def("  %0 = add(%a %b);\n  %0"), 2, 15, "expected ',' or '%)', found '%%b'", "syntax")
    check(def("  %0 = add(%a, %b)\n  %0"), 3, 3, "expected ';', found '%%0'", "syntax")
    check("def main() { 1 }", 1, 5, "expected a global name %('@name'%), found 'main'", "syntax")
    check("def @main(%a: Tensor[(5, 7), float32]) { %a } junk", 1, 47, "expected.*'def'.*found 'junk'", "syntax")
    check("def @main(%a: " .. T .. ") { add(%a, %a) ", 1, 54, "found end of input", "syntax")
  end)

  it("unknown operator, variable, global, constructor, type", function()
    check(def("  %0 = addd(%a, %b);\n  %0"), 2, 8, "unknown operator 'addd'", "name")
    check(def("  %0 = add(%a, %c);\n  %0"), 2, 16, "unknown variable %%c", "name")
    check(def("  %0 = add(%a, nope(%c));\n  %0"), 2, 16, "unknown operator 'nope'", "name")
    check(def("  @g(%a)"), 2, 3, "unknown global @g", "name")
    check(def("  Cons(%a)"), 2, 3, "unknown constructor 'Cons'", "name")
    check("def @main(%a: Tensor[(5, 7), floot32]) { %a }", 1, 30, "unknown type 'floot32'", "name")
    check("def @main(%a: List[int32]) { %a }", 1, 15, "unknown type 'List'", "name")
  end)

  it("duplicate definitions", function()
    check("def @f(%a: " .. T .. ") { %a }\ndef @f(%a: " .. T .. ") { %a }", 2, 1,
      "duplicate definition of @f", "name")
    check(def("  %0 = add(%a, %b);\n  %0 = add(%a, %b);\n  %0"), 3, 3,
      "duplicate definition of %%0", "name")
    check("def @main(%a: " .. T .. ", %a: " .. T .. ") { %a }", 1, 40, "duplicate parameter %%a", "name")
    check("type L { A, A }\ndef @main() { A }", 1, 13, "duplicate definition of constructor A", "name")
  end)

  it("wrong number of arguments", function()
    check(def("  add(%a)"), 2, 3, "operator 'add' takes 2 arguments, 1 given")
    check("type L { C(int32) }\ndef @main() { C() }", 2, 15, "constructor 'C' takes 1 argument, 0 given")
  end)

  it("unknown attribute and wrong attribute type", function()
    local e = check(def("  nn.softmax(%a, axes=1)"), 2, 18, "axes")
    e = check(def("  nn.softmax(%a, axis=\"x\")"), 2, 18, "axis")
    assert.is_truthy(e.message)
    check(def("  on_device(%a, virtual_device=3)"), 2, 17, "virtual_device")
  end)

  it("meta: index out of range, kind missing, wrong kind", function()
    check(def("  on_device(%a, virtual_device=meta[VirtualDevice][2])"), 2, 32,
      "meta%[VirtualDevice%]%[2%] is out of range %(the metatable has 1 VirtualDevice entry%)", "name",
      {VirtualDevice = {CPU}})
    check(def("  on_device(%a, virtual_device=meta[VirtualDevice][0])"), 2, 32,
      "no metatable was given and the text has no metadata section", "name")
    check(def("  add(%a, meta[relay.Constant][0])"), 2, 11, "the metatable has no 'relay.Constant' list",
      "name", {VirtualDevice = {CPU}})
    check(def("  add(%a, meta[relay.Constant][0])"), 2, 11, "is not a constant", "value",
      {["relay.Constant"] = {CPU}})
  end)

  it("type errors from inference carry the position", function()
    local e = check(def("  %0 = add(%a, %b);\n  %0", "%a: Tensor[(5, 7), float32], %b: Tensor[(4, 3), float32]"),
      2, 8, "do not broadcast", "type")
    assert.is_truthy(#e.message > 0)
  end)

  it("leaves the Lua state usable and parses again after an error", function()
    for _ = 1, 3 do err_of(def("  %0 = add(%a, %c);\n  %0")) end
    local m = dp.parse(def("  add(%a, %b)"))
    assert.are.equal("call", m["main"].body.kind)
    collectgarbage()
    collectgarbage()
  end)

  it("reports errors inside nested blocks at their own position", function()
    check(def("  %0 = fn (%x) {\n    %1 = add(%x, %y);\n    %1\n  };\n  %0(%a)"), 3, 18,
      "unknown variable %%y", "name")
    check(def("  if (%a) {\n    add(%a %b)\n  } else { %a }"), 3, 12, "expected ',' or '%)'", "syntax")
  end)

  it("errors from dp.parse_expr and dp.parse_type", function()
    local e = err_of("add(%x, %x)", nil, dp.parse_expr)
    assert.are.equal(1, e.line)
    assert.are.equal(5, e.col)
    e = err_of("Tensor[(5, 7) float32]", nil, function(t, _, o) return dp.parse_type(t, o) end)
    assert.are.equal(15, e.col)
  end)

  it("shows the right line far into a long text, before and after lines already read", function()
    -- a chain of n calls, one a line; the call on line `bad` (counted in the text) does not broadcast
    local function long_body(n, bad)
      local lines = {"  %0 = add(%a, %b);"}
      for i = 1, n - 1 do
        lines[#lines + 1] = ("  %%%d = add(%%%d, %s);"):format(i, i - 1, i + 2 == bad and "%c" or "%b")
      end
      lines[#lines + 1] = ("  %%%d"):format(n - 1)
      return table.concat(lines, "\n")
    end
    local params = "%a: " .. T .. ", %b: " .. T .. ", %c: Tensor[(4, 3), float32]"
    -- inference runs once the body is read: its error points back past every mark
    for _, bad in ipairs{3, 64, 65, 66, 129, 130, 1000, 2001} do
      check(def(long_body(2000, bad), params), bad, #("  %" .. (bad - 2) .. " = ") + 1, "do not broadcast", "type")
    end
    -- a syntax error is found where the lexer is: the last line, without a newline after it
    check((def(long_body(300, 0), params):gsub("\n}$", " %%a")), 302, 8, "expected ';' or '}'", "syntax")
  end)

  it("positions a type error in a text that is only an operator (fuzzer input)", function()
    check("add", 1, 1, "an operator can only be called", "type")
    check("\n\n  nn.relu", 3, 3, "an operator can only be called", "type")
  end)
end)
