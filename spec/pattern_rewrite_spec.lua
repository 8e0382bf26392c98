-- dp.pattern.rewrite: rules {pattern, function(captures) return replacement end}
-- applied to a fixed point (TVM's rewrite), over an expression or a module.
local dp = require "devplan"
local t = require "devplan.testing"
local P = dp.pattern
local W = P.wild
local ladder = dofile((dp.root or ".") .. "/spec/support/ladder.lua")

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

  -- TVM's groups around function literals: a function is never an input, so
  -- a pattern matching one groups its whole body; a group is rejected when a
  -- node inside it is used outside. (Decided without walking the body when
  -- the group has no inputs, and with the graph's numbering for the fuzzy
  -- matches: these say what the fast answers must agree with.)
  describe("groups around function literals", function()
    -- the function literals each rule was called on, by the name of their parameter
    local function grouped(mod, pattern)
      local names = {}
      P.rewrite(mod, {{pattern, function(_, rebuilt)
        if rebuilt.kind == "fn" then names[#names + 1] = rebuilt.params[1].name
        elseif rebuilt.kind == "call" and rebuilt.callee.kind == "fn" then
          names[#names + 1] = "call " .. rebuilt.callee.params[1].name end
      end}}, {once = true})
      table.sort(names)
      return table.concat(names, " ")
    end

    it("a wildcard groups a literal that captures nothing, not one whose capture is used outside", function()
      -- %f captures %a (also read by the call outside it); %g captures nothing
      local mod = parse("def @main(%a: " .. T .. ") { %0 = fn (%x: " .. T .. ") { add(%x, %a) }; "
        .. "%1 = fn (%y: " .. T .. ") { negative(%y) }; %2 = %0(%a); %1(%2) }")
      assert.equal("y", grouped(mod, W()))
      -- inside a literal that captures nothing, the inner one's capture is inside the group
      local nested = parse("def @main(%a: " .. T .. ") { %0 = fn (%x: " .. T .. ") { %1 = fn (%y: " .. T
        .. ") { add(%y, %x) }; %1(%x) }; %0(%a) }")
      assert.equal("x", grouped(nested, W()))
    end)

    it("an argument the literal's body reads is inside the group (a fuzzy match), else an input", function()
      local function call_of(body)
        return parse("def @main(%a: " .. T .. ") { %0 = fn (%x: " .. T .. ") { " .. body .. " }; "
          .. "%1 = %0(%a); add(%1, %a) }")
      end
      local p = P.call(P.fn({W()}, W()), {W()})
      -- %a read in the body: inside, and used outside by the add: rejected
      assert.equal("", grouped(call_of("add(%x, %a)"), p))
      -- not read there: an input, and the group holds
      assert.equal("call x", grouped(call_of("negative(%x)"), p))
    end)

    it("nested literals that all capture the outer parameter: none is grouped, at any depth", function()
      for _, n in ipairs({1, 2, 50}) do
        -- (fn (%x1) { add(%x1, (fn (%x2) { ... negative(%a) })(%a)) })(%a)
        local m = dp.infer_type(ladder.SHAPES["fuzzer closures"](n))
        assert.equal("", grouped(m, W()), n .. " deep")
        -- the argument %a is read inside the body too: a fuzzy match, so no input,
        -- and the call is rejected as its literals are, but the outermost
        assert.equal("call x" .. n, grouped(m, P.call(P.fn({W()}, W()), {W()})), n .. " deep")
      end
    end)
  end)
end)
