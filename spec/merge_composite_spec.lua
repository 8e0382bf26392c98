-- dp.passes.MergeComposite (lua/devplan/passes/merge_composite.lua over src/pattern):
-- TVM's MergeComposite, rule by rule in table order.
local dp = require "devplan"
local t = require "devplan.testing"
local P = dp.pattern
local W = P.wild

local T = "Tensor[(10, 10), float32]"
local function parse(text, meta) return dp.parse('#[version = "0.0.5"]\n' .. text, meta) end

-- The composite functions of a module: {name, label, args (kinds), ops}.
local function composites(mod)
  local out = {}
  dp.visit(mod, function(e)
    if e.kind == "call" and e.callee.kind == "fn" and e.callee.attrs and e.callee.attrs.Composite then
      local ops = {}
      dp.visit(e.callee.body, function(x)
        if x.kind == "call" and x.callee.kind == "op" then ops[#ops + 1] = x.callee.name end
      end)
      local args = {}
      for i, a in ipairs(e.args) do args[i] = a.kind == "var" and a.name or a.kind end
      out[#out + 1] = {name = e.callee.attrs.Composite, label = e.callee.attrs.PartitionedFromPattern,
                       args = table.concat(args, ","), ops = table.concat(ops, ",")}
    end
  end)
  return out
end

local add_relu = P.op("nn.relu")(P.op("add")(W(), W()))

describe("MergeComposite", function()
  it("hoists a group into a Composite function called where it was", function()
    local mod = parse("def @main(%a: " .. T .. ", %b: " .. T .. ") { %0 = add(%a, %b); nn.relu(%0) }")
    local out = dp.passes.MergeComposite{{name = "add_relu", pattern = add_relu}}(mod)
    assert.structurally_equal(out, parse("def @main(%a: " .. T .. ", %b: " .. T .. [[) {
      %1 = fn (%FunctionVar_0_0: ]] .. T .. ", %FunctionVar_0_1: " .. T
      .. [[, Composite="add_relu", PartitionedFromPattern="add_nn.relu_") {
        %0 = add(%FunctionVar_0_0, %FunctionVar_0_1); nn.relu(%0) };
      %1(%a, %b) }]]))
    assert.truthy(out.main.body.checked_type, "typed")
    assert.equal("MergeComposite(rules=add_relu)", tostring(dp.passes.MergeComposite{{name = "add_relu", pattern = add_relu}}))
  end)

  it("embeds constants matched by const, passes those a wildcard matched", function()
    local meta = {["relay.Constant"] = {dp.const(t.filled({3, 3, 1, 1}, 1.0))}}
    local text = [[def @main(%x: Tensor[(1, 3, 8, 8), float32], %b: Tensor[(3), float32]) {
      %0 = nn.conv2d(%x, meta[relay.Constant][0]); %1 = nn.bias_add(%0, %b); nn.relu(%1) }]]
    local function group(weight)
      local p = P.op("nn.relu")(P.op("nn.bias_add")(P.op("nn.conv2d")(W(), weight), W()))
      return composites(dp.passes.MergeComposite{{name = "p", pattern = p}}(parse(text, meta)))[1]
    end
    assert.equal("x,b", group(P.const()).args)
    assert.equal("x,const,b", group(W()).args)
    assert.equal("x,b", group(P.var() + P.const()).args, "the side of the alternative that matched")
  end)

  it("applies the rules in order: what an earlier rule grouped is opaque to later ones", function()
    local mod = parse("def @main(%a: " .. T .. ", %b: " .. T .. ") { %0 = add(%a, %b); %1 = abs(%0); nn.relu(%1) }")
    local B = P.op("abs")(P.op("add")(W(), W()))
    local C = P.op("nn.relu")(P.op("abs")(W()))
    local got = composites(dp.passes.MergeComposite{{name = "B", pattern = B}, {name = "C", pattern = C}}(mod))
    assert.equal(1, #got)
    assert.equal("B", got[1].name)
    got = composites(dp.passes.MergeComposite{{name = "C", pattern = C}, {name = "B", pattern = B}}(mod))
    assert.equal(1, #got)
    assert.equal("C", got[1].name)
  end)

  it("takes the outermost match: an optional part makes the larger group", function()
    local mod = parse([[def @main(%x: Tensor[(1, 3, 7, 7), float32], %w: Tensor[(3, 3, 1, 1), float32], %b: Tensor[(3), float32]) {
      %0 = nn.conv2d(%x, %w); %1 = nn.bias_add(%0, %b); nn.relu(%1) }]])
    local layer = P.op("nn.bias_add")(P.op("nn.conv2d")(W(), W()), W()):optional(P.op("nn.relu"))
    local got = composites(dp.passes.MergeComposite{{name = "layer", pattern = layer}}(mod))
    assert.equal(1, #got)
    assert.equal("nn.conv2d_nn.bias_add_nn.relu_", got[1].label)
  end)

  it("rejects a group whose inner node escapes, duplicates one the root post-dominates", function()
    local over = parse([[def @main(%i: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 3, 1, 1), float32]) {
      %0 = nn.conv2d(%i, %w); %1 = nn.relu(%0); add(%1, %0) }]])
    local conv_relu = P.op("nn.relu")(P.op("nn.conv2d")(W(), W()))
    assert.equal(0, #composites(dp.passes.MergeComposite{{name = "cr", pattern = conv_relu}}(over)))
    local dominated = parse("def @main(%a: " .. T .. ", %b: " .. T .. [[) {
      %0 = add(%a, %b); %1 = sigmoid(%0); multiply(%0, %1) }]])
    local p = P.op("multiply")(P.op("add")(W(), W()), W())
    local out = dp.passes.MergeComposite{{name = "p", pattern = p}}(dominated)
    local got = composites(out)
    assert.equal(1, #got)
    assert.equal("add,multiply", got[1].ops)
    assert.equal(1, t.count_calls(out.main.body, "add") - 1, "the sigmoid keeps its own add")
  end)

  it("a check decides: false leaves the group unrewritten; an error names the rule", function()
    local mod = parse("def @main(%a: " .. T .. ", %b: " .. T .. ") { %0 = add(%a, %b); nn.relu(%0) }")
    local seen
    local out = dp.passes.MergeComposite{{name = "add_relu", pattern = add_relu,
      check = function(root) seen = root; return false end}}(mod)
    assert.equal(mod.main.body, seen)
    assert.equal(0, #composites(out))
    local ok, err = pcall(dp.passes.MergeComposite{{name = "add_relu", pattern = add_relu,
      check = function() error("no shape") end}}, mod)
    assert.is_false(ok)
    assert.equal("callback", err.code)
    assert.truthy(tostring(err):find("MergeComposite rule 'add_relu'", 1, true), tostring(err))
    assert.truthy(tostring(err):find("no shape", 1, true), tostring(err))
    ok, err = pcall(dp.passes.MergeComposite{{name = "pred", pattern = add_relu:where(function() error("oops") end)}}, mod)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("MergeComposite rule 'pred'", 1, true), tostring(err))
  end)

  it("rejects bad rule tables with clear errors", function()
    local function fails(rules, text)
      local ok, err = pcall(dp.passes.MergeComposite, rules)
      assert.is_false(ok)
      assert.truthy(tostring(err):find(text, 1, true), tostring(err))
    end
    fails(5, "a list of rules")
    fails({}, "no rules")
    fails({{pattern = add_relu}}, "rule 1 needs a name")
    fails({{name = "x", pattern = 3}}, "rule 1 ('x'): pattern must be a pattern")
    fails({{name = "x", pattern = add_relu, check = 1}}, "check must be a function")
  end)

  local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
  it("groups a " .. N .. "-call chain", function()
    local x = dp.var("x", dp.type.tensor({4}, "float32"))
    local e = x
    for i = 1, N do e = dp.call(i % 2 == 0 and "nn.relu" or "add", i % 2 == 0 and {e} or {e, x}) end
    local mod = dp.infer_type(dp.IRModule{functions = {{"main", dp.fn({x}, e)}}})
    local out = dp.passes.MergeComposite{{name = "add_relu", pattern = add_relu}}(mod)
    assert.equal(N // 2, t.count_calls(out, "nn.relu"))
    local fn_calls = 0
    dp.visit(out.main.body, {pre = function(n)
      if n.kind == "call" and n.callee.kind == "fn" then fn_calls = fn_calls + 1 end
      return n.kind ~= "fn"
    end})
    assert.equal(N // 2, fn_calls)
  end)
end)
