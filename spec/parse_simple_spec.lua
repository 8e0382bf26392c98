-- The C reader of simple statements (src/parse/simple.c) against the
-- grammar alone: the parser reads `%n = E;`, `let %x = E;` and `E;` over
-- calls, tuples, names, literals and operators in C, and must read each
-- exactly as the LPeg grammar does: the same module, or the same error at
-- the same position. The grammar alone is the parser module loaded again
-- with the reader turned down (it declines every statement).
local dp = require "devplan"
local core = require "devplan.core"

local T = "Tensor[(5, 7), float32]"
local MT = {VirtualDevice = {dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0},
                             dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}}}

-- devplan.parser made with a reader that declines everything
local function grammar_only()
  local saved, reader = package.loaded["devplan.parser"], core._parse_simple
  core._parse_simple = function() return false end
  package.loaded["devplan.parser"] = nil
  local ok, mod = pcall(require, "devplan.parser")
  core._parse_simple, package.loaded["devplan.parser"] = reader, saved
  assert(ok, mod)
  return mod
end
local REF = grammar_only()

-- what a parse gives: the printed result, or the error and its position
local function outcome(parse, text)
  local ok, r = pcall(parse, text, MT)
  if ok then return "ok\n" .. dp.astext(r) end
  if type(r) ~= "table" then return "raw error: " .. tostring(r) end
  return ("error %s:%s %s"):format(tostring(r.line), tostring(r.col), tostring(r.message))
end

local function same(text)
  local want, got = outcome(REF.parse, text), outcome(dp.parse, text)
  assert.are.equal(want, got, text)
  local e = "(" .. text:match("{\n(.*)\n}$") .. ")"
  assert.are.equal(outcome(REF.parse_expr, e), outcome(dp.parse_expr, e), e)
  return want
end

local function def(body)
  return "def @main(%a: " .. T .. ", %b: " .. T .. ", %t: (" .. T .. ", " .. T .. ")) {\n" .. body .. "\n}"
end

describe("the C reader of simple statements", function()
  it("reads every simple form as the grammar does", function()
    local forms = {
      "%0 = add(%a, %b);\n%0",
      "let %x = multiply(%a, %b);\n%x",
      "add(%a, %b);\n%a",
      "%0 = (%a, %b);\n%0.1",
      "%0 = (%a,);\n%1 = ();\n%2 = (%a);\n%2",
      "%0 = %t.0;\n%1 = ((%a, %b), %a).0.1;\n%1",
      "%0 = %a + %b * %a - %b / %a;\n%1 = -%0;\n%2 = - -%1;\n%3 = %a < %b;\n%4 = %0 == %1 != %3;\n%2",
      "%0 = add(%a, 1f);\n%1 = add(%0, -2f);\n%2 = multiply(%1, 3.5e1f);\n%2",
      "%0 = on_device(%a, virtual_device=meta[VirtualDevice][0]);\n%1 = on_device(%0, virtual_device=meta[VirtualDevice][1],);\n%1",
      "%0 = zeros(shape=[5, 7], dtype=\"float32\");\n%1 = reshape(%0, newshape=[35,]);\n%2 = reshape(%1, newshape=[5, 7]);\n%2",
      "%0 = nn.conv2d(%a, %b, padding=[0, 0, 0, 0], channels=None, kernel_size=[5, 7]);\n%0",
      "%0 = add(%a, %b,);\n%0",
      "%0 = sum(%a, axis=[], keepdims=True, exclude=False);\n%0",
      "let %x = add(%a, %b);\nlet %y = add(%x, %x);\n%1 = (%x, %y);\n%1",
      "%0 = @main(%a, %b, %t);\n%0",
      -- errors, syntax and builder's
      "%0 = add(%a %b);\n%0",
      "%0 = add(%a,, %b);\n%0",
      "%0 = add(%a, %b)\n%0",
      "%0 = ;\n%0",
      "%0 = add(%a, x=1, %b);\n%0",
      "%0 = add(x=);\n%0",
      "%0 = (%a, x=1);\n%0",
      "%0 = %a.;\n%0",
      "%0 = %a +;\n%0",
      "%0 = add(%zz, %b);\n%0",
      "%0 = addd(%a, %b);\n%0",
      "%0 = add(%a, %b);\n%0 = add(%a, %b);\n%0",
      "%0 = add(%a);\n%0",
      "%0 = add(%a, %b, virtual_device=1);\n%0",
      "%0 = on_device(%a, virtual_device=meta[VirtualDevice][7]);\n%0",
      "%0 = reshape(%a, newshape=[,]);\n%0",
      "%0 = reshape(%a, newshape=[1,,2]);\n%0",
      "%0 = reshape(%a, newshape=[1 2]);\n%0",
      "%0 = add(%a, %b);;\n%0",
      "%0 = add(%a, %b);\n",
      "%0 = %t.99999999999;\n%0",
      "let %x = %x;\n%x",
      "%0 = add(%a, %b);\nlet %x: " .. T .. " = %0;\n%x",
      "%0 = on_device(%a, virtual_device=VirtualDevice(device_type=\"cpu\"));\n%0",
      "%0 = add(%a, %b);\n%1 = fn (%c) { %c };\n%2 = %1(%0);\n%2",
      "%0 = add(%a, %b);\n%1 = if (True) { %0 } else { %a };\n%1",
    }
    for _, body in ipairs(forms) do same(def(body)) end
  end)

  it("agrees with the grammar on 3,000 random statements, well formed or not", function()
    -- token pieces of statements, put together at random and then mutated:
    -- a token dropped, doubled or replaced
    local operands = {"%a", "%b", "%t", "%zz", "1f", "-2f", "True", "@main", "meta[VirtualDevice][0]", "None"}
    local calls = {"add(", "multiply(", "negative(", "on_device(", "nn.relu(", "reshape(", "@main(", "Nil("}
    local attrs = {"virtual_device=", "newshape=", "axis=", "x="}
    local avals = {"1", "\"s\"", "True", "None", "meta[VirtualDevice][1]", "[1, 2]", "[]", "[[1], [2,]]"}
    local binops = {" + ", " * ", " - ", " == ", " < "}
    local junk = {";", ",", "(", ")", "[", "]", ".", ".0", "=", "{", "}", "let", "%q =", "x=", "1"}
    local seed = 12345
    local function rand(n) -- (a fixed generator: the same cases on every run)
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n + 1
    end
    local function pick(t) return t[rand(#t)] end
    local function expr(depth, out)
      local r = rand(6)
      if depth > 3 or r <= 2 then
        out[#out + 1] = pick(operands)
      elseif r == 3 then
        out[#out + 1] = pick(calls)
        for i = 1, rand(3) - 1 do
          if i > 1 then out[#out + 1] = ", " end
          expr(depth + 1, out)
        end
        if rand(3) == 1 then out[#out + 1] = ", " .. pick(attrs) .. pick(avals) end
        out[#out + 1] = ")"
      elseif r == 4 then
        out[#out + 1] = "("
        for i = 1, rand(3) - 1 do
          if i > 1 then out[#out + 1] = ", " end
          expr(depth + 1, out)
        end
        out[#out + 1] = rand(2) == 1 and ",)" or ")"
      elseif r == 5 then
        expr(depth + 1, out)
        out[#out + 1] = pick(binops)
        expr(depth + 1, out)
      else
        out[#out + 1] = rand(2) == 1 and "-" or ""
        expr(depth + 1, out)
        if rand(2) == 1 then out[#out + 1] = ".0" end
      end
    end
    local outcomes = {}
    for case = 1, 3000 do
      local body = {}
      for s = 1, rand(4) do
        local head = ({"%" .. s .. " = ", "let %x" .. s .. " = ", ""})[rand(3)]
        local out = {head}
        expr(0, out)
        out[#out + 1] = ";\n"
        body[#body + 1] = table.concat(out)
      end
      body[#body + 1] = "%a"
      local pieces = body
      if case % 2 == 0 then -- a mutation
        local text = table.concat(pieces)
        local at = rand(#text)
        local m = rand(3)
        if m == 1 then text = text:sub(1, at - 1) .. text:sub(at + 1)
        elseif m == 2 then text = text:sub(1, at) .. text:sub(at)
        else text = text:sub(1, at - 1) .. pick(junk) .. text:sub(at + 1) end
        pieces = {text}
      end
      local o = same(def(table.concat(pieces)))
      outcomes[o:sub(1, 2)] = (outcomes[o:sub(1, 2)] or 0) + 1
    end
    -- (both kinds of outcome are exercised)
    assert.is_true((outcomes.ok or 0) > 150, tostring(outcomes.ok))
    assert.is_true((outcomes.er or 0) > 300, tostring(outcomes.er))
  end)

  it("reads a statement of more marks than the grammar's engine holds", function()
    -- (LPeg hands a statement's marks to its action on Lua's stack, a
    -- million values at most: the grammar alone says the statement is too
    -- large; the C reader has no such limit)
    local n = 600000
    local text = "(" .. ("1f, "):rep(n) .. ");\n0f"
    local ok, err = pcall(REF.parse_expr, text)
    assert.is_false(ok)
    assert.is_truthy(tostring(err.message):find("too large", 1, true), tostring(err.message))
    local e = dp.parse_expr(text)
    assert.are.equal("let", e.kind)
    assert.are.equal(n, #e.value.fields)
  end)
end)
