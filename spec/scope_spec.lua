-- Scopes (dp_check_scopes, include/devplan/visit.h): type inference and
-- dp.planner.verify reject a variable read outside the scope of what binds
-- it, with its position; a node shared by several places is evaluated where
-- all its uses meet.
local dp = require "devplan"
local t = require "devplan.testing"

local T = dp.type.tensor({4}, "float32")

local function module_of(params, body) return dp.IRModule{functions = {{"main", dp.fn(params, body)}}} end

describe("scopes", function()
  it("a let's variable read after its let is an error naming the variable and the let", function()
    local x, v = dp.var("x", T), dp.var("v", T)
    local inner = dp.let(v, dp.call("negative", {x}), v)
    -- (let %v = negative(%x); %v) then add(that, %v): %v outside its let
    local mod = module_of({x}, dp.call("add", {inner, v}))
    local ok, err = pcall(dp.infer_type, mod)
    assert.is_false(ok)
    assert.equal("type", err.code)
    assert.truthy(tostring(err):find("variable %v is used outside its scope: the call of add reads it where the let that binds it does not reach", 1, true), tostring(err))
    local scope = {}
    for _, v in ipairs((dp.planner.verify(mod, t.config("cpu")))) do
      if v.kind == "scope" then scope[#scope + 1] = v.message end
    end
    assert.same({"variable %v is used outside its scope: the call of add reads it where the let that binds it does not reach"}, scope)
    local vok, verr = pcall(dp.passes.Verify(), mod)
    assert.is_false(vok)
    assert.truthy(tostring(verr):find("used outside its scope", 1, true), tostring(verr))
  end)

  it("gives the reader's position in text, and the binder's in a note", function()
    -- a node shared by the let's value and its body is evaluated before the let: out of scope
    local x, v = dp.var("x", T), dp.var("v", T)
    local reads_v = dp.call("exp", {v}, nil, {span = {line = 7, col = 3}})
    local mod = module_of({x}, dp.let(v, dp.call("add", {x, reads_v}), reads_v, {span = {line = 5, col = 1}}))
    local ok, err = pcall(dp.infer_type, mod)
    assert.is_false(ok)
    assert.equal(7, err.line)
    assert.truthy(tostring(err):find("the let that binds %v is here", 1, true), tostring(err))
  end)

  it("a recursive let, closures, match clauses and shared nodes inside one scope are fine", function()
    local mod = dp.parse([[
type List[A] { Cons(A, List[A]), Nil }
def @main(%x: Tensor[(4), float32], %c: bool) {
  let %loop = fn (%i: Tensor[(4), float32]) -> Tensor[(4), float32] { if (%c) { %loop(negative(%i)) } else { %i } };
  %0 = exp(%x);
  %1 = if (%c) { add(%0, %0) } else { %0 };
  match (Cons(%1, Nil)) {
    Cons(%h, _) => { let %y = %loop(%h); add(%y, %0) },
    Nil => %x,
  }
}]])
    assert.same({}, (dp.planner.verify(dp.passes.PlanDevices(t.config("cpu"))(mod), t.config("cpu"))))
  end)

  it("a variable bound twice is an error", function()
    local mod = (function()
      local x, v = dp.var("x", T), dp.var("v", T)
      local a = dp.let(v, dp.call("negative", {x}), v)
      local b = dp.let(v, dp.call("exp", {x}), v)
      return module_of({x}, dp.call("add", {a, b}))
    end)()
    collectgarbage() -- (a tree: the one walk's doubt, then the full check's words)
    local ok, err = pcall(dp.infer_type, mod)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("variable %v is bound twice: by the let and by the let", 1, true), tostring(err))
  end)

  -- (a module whose nodes are each held once is checked in one walk, any
  -- doubt left to the full check: these are the doubts, and the fine cases)
  it("a variable read before the let that binds it, in a tree, is out of scope", function()
    local mod = (function()
      local x, v = dp.var("x", T), dp.var("v", T)
      -- add(%v, (let %v = negative(%x); %v)): the first read is outside
      return module_of({x}, dp.call("add", {v, dp.let(v, dp.call("negative", {x}), v)}))
    end)()
    collectgarbage() -- (the Lua handles of the nodes go: each is held once, by its user)
    local ok, err = pcall(dp.infer_type, mod)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("variable %v is used outside its scope: the call of add reads it", 1, true), tostring(err))
  end)

  it("a let's value that is no function does not see the let's variable (parsed text)", function()
    local ok, err = pcall(dp.parse, [[
def @main(%a: Tensor[(4), float32], %c: bool) {
  let %x = if (%c) { %x } else { %a };
  %x
}]])
    assert.is_false(ok)
    assert.truthy(tostring(err):find("variable %x is used outside its scope: a if reads it where the let that binds it does not reach", 1, true), tostring(err))
  end)

  it("a tree with a recursive let, closures, shadowing lets and match clauses is fine", function()
    local mod = dp.parse([[
type List[A] { Cons(A, List[A]), Nil }
def @main(%x: Tensor[(4), float32], %c: bool) {
  let %loop = fn (%i: Tensor[(4), float32]) -> Tensor[(4), float32] { if (%c) { %loop(negative(%i)) } else { %i } };
  let %y = %loop(%x);
  match (Cons(exp(%y), Nil)) {
    Cons(%h, _) => { let %y = %loop(%h); add(%y, %h) },
    Nil => %y,
  }
}]])
    assert.same({}, (dp.planner.verify(dp.passes.PlanDevices(t.config("cpu"))(mod), t.config("cpu"))))
  end)

  -- (the parser resolves names by scope, so it has the check run only where
  -- the text can still be out of scope: a let's variable read in its own
  -- value, an expression of the metatable; these are those cases)
  it("parsed text: a let's variable in its own value, at any nesting, and meta expressions are checked", function()
    local A = "def @main(%a: Tensor[(4), float32]) {\n"
    local bad = {
      A .. "  let %x = add(%x, %a);\n  %x\n}",
      A .. "  let %x = (let %y = negative(%x); %y);\n  %x\n}",
      A .. "  let %x = negative(%a);\n  let %y = (let %z = add(%x, %y); %z);\n  %y\n}",
    }
    for _, text in ipairs(bad) do
      local ok, err = pcall(dp.parse, text)
      assert.is_false(ok, text)
      assert.truthy(tostring(err):find("is used outside its scope", 1, true), tostring(err))
    end
    -- a let of a function may call itself; its body and later lets see it
    assert.truthy(dp.parse(A .. "  let %f = fn (%i: Tensor[(4), float32]) -> Tensor[(4), float32] { %f(%i) };\n"
      .. "  let %y = %f(%a);\n  (let %z = add(%y, %y); %z)\n}"))
    -- an expression of the metatable brings its own variables: add(%v, (let %v = negative(%x); %v))
    local x, v = dp.var("x", T), dp.var("v", T)
    local outside = dp.call("add", {v, dp.let(v, dp.call("negative", {x}), v)})
    local ok, err = pcall(dp.parse, A .. "  meta[Expr][0]\n}", {Expr = {outside}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("variable %v is used outside its scope", 1, true), tostring(err))
  end)

  it("checks a 100,000-deep let chain (any depth)", function()
    local x = dp.var("x", T)
    local vars = {}
    for i = 1, 100000 do vars[i] = dp.var("v" .. i, T) end
    local body = vars[#vars]
    for i = #vars, 1, -1 do body = dp.let(vars[i], dp.call("negative", {i > 1 and vars[i - 1] or x}), body) end
    assert.truthy(dp.infer_type(module_of({x}, body)))
  end)
end)
