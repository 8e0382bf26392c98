-- dp.pattern.rewrite: rules {pattern, function(captures) return replacement end}
-- applied to a fixed point (TVM's rewrite), over an expression or a module.
local dp = require "devplan"
local t = require "devplan.testing"
local P = dp.pattern
local W = P.wild

local function parse(text) return dp.parse('#[version = "0.0.5"]\n' .. text) end
local T = "Tensor[(10, 10), float32]"

describe("dp.pattern.rewrite", function()
  it("replaces each match by what the rule builds from the captures", function()
    local mod = parse("def @main(%x: " .. T .. ") { %0 = add(%x, 0f); %1 = multiply(%0, 1f); nn.relu(%1) }")
    local zero = P.expr(dp.parse_expr("0f"))
    local one = P.expr(dp.parse_expr("1f"))
    local out = P.rewrite(mod, {
      {P.op("add")(W():as("x"), zero), function(c) return c.x end},
      {P.op("multiply")(W():as("x"), one), function(c) return c.x end},
    })
    assert.structurally_equal(out, parse("def @main(%x: " .. T .. ") { nn.relu(%x) }"))
    assert.truthy(out.main.body.checked_type, "a typed module is typed again")
  end)

  it("reaches a fixed point: rewrites that enable other rewrites", function()
    -- negative(negative(x)) -> x, over a chain of four: two rounds of one rule
    local mod = parse("def @main(%x: " .. T .. ") { %0 = negative(%x); %1 = negative(%0); %2 = negative(%1); %3 = negative(%2); exp(%3) }")
    local out = P.rewrite(mod, {{P.op("negative")(P.op("negative")(W():as("x"))), function(c) return c.x end}})
    assert.structurally_equal(out, parse("def @main(%x: " .. T .. ") { exp(%x) }"))
  end)

  it("captures read the rewritten program; nil keeps the node", function()
    local mod = parse("def @main(%x: " .. T .. ") { %0 = add(%x, %x); %1 = add(%0, %0); exp(%1) }")
    local seen = {}
    local out = P.rewrite(mod, {{P.op("add")(W():as("a"), W()), function(c, rebuilt)
      seen[#seen + 1] = c.a
      assert.truthy(dp.is_expr(rebuilt))
      if c.a.kind == "var" then return dp.call("multiply", {c.a, dp.const(2.0)}) end
    end}}, {once = true})
    -- the outer add saw the inner one already rewritten
    assert.equal("call", seen[2].kind)
    assert.equal("multiply", seen[2].callee.name)
    assert.equal(1, t.count_calls(out, "multiply"))
    assert.equal(1, t.count_calls(out, "add"))
  end)

  it("works on an expression too, and once = true stops after one round", function()
    local e = parse("def @main(%x: " .. T .. ") { %0 = negative(%x); %1 = negative(%0); %2 = negative(%1); negative(%2) }").main.body
    local rule = {P.op("negative")(W():as("x")), function(c) return dp.call("exp", {c.x}) end}
    local once = P.rewrite(e, {rule}, {once = true})
    assert.equal(4, t.count_calls(once, "exp"))
    assert.equal(0, t.count_calls(once, "negative"))
  end)

  it("says so when the rules do not converge", function()
    local mod = parse("def @main(%x: " .. T .. ") { exp(%x) }")
    -- exp(x) -> exp(negative(x)): every round makes another match
    local grow = {{P.op("exp")(W():as("x")), function(c) return dp.call("exp", {dp.call("negative", {c.x})}) end}}
    local ok, err = pcall(P.rewrite, mod, grow, {max_rounds = 5})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("no fixed point after 5 rounds", 1, true), tostring(err))
  end)

  it("an error in a rule is a devplan.Error naming the rule", function()
    local mod = parse("def @main(%x: " .. T .. ") { negative(%x) }")
    local ok, err = pcall(P.rewrite, mod, {{P.op("negative")(W()), function() error("broken rule") end}})
    assert.is_false(ok)
    assert.equal("callback", err.code)
    assert.truthy(tostring(err):find("rule 1 (negative(_))", 1, true), tostring(err))
    assert.truthy(tostring(err):find("broken rule", 1, true), tostring(err))
    ok, err = pcall(P.rewrite, mod, {{P.op("negative")(W()), function() return 5 end}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("must return an expression or nil", 1, true), tostring(err))
    ok, err = pcall(P.rewrite, mod, {{P.op("negative")(W()):where(function() error("bad predicate") end),
      function() end}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("rule 1", 1, true) and tostring(err):find("bad predicate", 1, true), tostring(err))
    -- a type error in a replacement is a type error
    ok, err = pcall(P.rewrite, mod, {{P.op("negative")(W()),
      function() return dp.call("nn.conv2d", {dp.const(1.0), dp.const(2.0)}) end}})
    assert.is_false(ok)
    assert.equal("type", err.code)
  end)

  it("rejects bad rules", function()
    assert.has_error(function() P.rewrite(parse("def @main() { 1f }"), {{W()}}) end)
    assert.has_error(function() P.rewrite(parse("def @main() { 1f }"), {{5, function() end}}) end)
    assert.has_error(function() P.rewrite(parse("def @main() { 1f }"), {}, {max_rounds = 0}) end)
    assert.has_error(function() P.rewrite(5, {}) end)
  end)
end)
