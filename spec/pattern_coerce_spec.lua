-- Where dp.pattern expects a pattern, a string is the operator of that name
-- (P.op) and a function a predicate on any expression (P.wild():where(f)),
-- as LPeg coerces the operands of its own patterns.
local dp = require "devplan"
local P = dp.pattern

local mod = dp.parse([[#[version = "0.0.5"]
def @main(%x: Tensor[(2, 2), float32], %y: Tensor[(2, 2), float32]) {
  subtract(add(%x, %y), %y)
}]])
local body = mod.main.body

describe("pattern values coerced as LPeg's", function()
  it("take a string as the operator of that name", function()
    local p = P.call("subtract", {P.call("add"), P.wild()})
    assert.equal("subtract(add(...), _)", tostring(p))
    assert.truthy(p:match(body))
    assert.is_nil(P.call("add", {P.wild(), P.wild()}):match(body))
    -- as a side of an alternative, on either side: a call of either operator
    assert.truthy(("multiply" + P.op("subtract"))(P.wild(), P.wild()):match(body))
    assert.truthy((P.op("multiply") + "subtract")(P.wild(), P.wild()):match(body))
    assert.equal("_ + nn.relu(_)", tostring(P.wild():optional("nn.relu")))
  end)

  it("take a function as a predicate on any expression", function()
    local is_var = function(e) return e.kind == "var" end
    local p = P.op("subtract")("add", is_var)
    assert.equal("subtract(add, _:where(...))", tostring(p))
    assert.is_nil(p:match(body)) -- the callee "add" is the operator itself, not a call of it
    assert.truthy(P.op("subtract")(P.call("add"), is_var):match(body))
    assert.is_nil(P.op("subtract")(is_var, is_var):match(body))
  end)

  it("say which operand names an unknown operator, and refuse anything else", function()
    local ok, err = pcall(function() return P.op("add")(P.wild(), "nosuch") end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("calling a pattern: argument 2: unknown operator 'nosuch'", 1, true),
                  tostring(err))
    ok, err = pcall(P.call, "add", {P.wild(), 4})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("args[2] must be a pattern", 1, true), tostring(err))
  end)
end)
