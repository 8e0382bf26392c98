-- Deep inputs: a 1,000,000-binding chain (graph bindings and lets) parses
-- without overflowing the Lua or the C stack (20,000 with DEVPLAN_QUICK).
local dp = require "devplan"
local testing = require "devplan.testing"
local depth_of = testing.depth

local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
local T = "Tensor[(5, 7), float32]"

local function chain(n, let)
  local out = {"def @main(%a: ", T, ", %b: ", T, ") {\n"}
  local prev = "%a"
  for i = 0, n - 1 do
    local name = (let and "x" or "") .. i
    out[#out + 1] = (let and "  let %" or "  %") .. name .. " = " .. (i % 2 == 0 and "add" or "multiply")
      .. "(" .. prev .. ", %b);\n"
    prev = "%" .. name
  end
  out[#out + 1] = "  " .. prev .. "\n}\n"
  return table.concat(out)
end

describe("deep inputs", function()
  it("parses a " .. N .. "-binding graph chain into a " .. N .. "-deep call chain", function()
    local m = dp.parse(chain(N))
    local depth, e = depth_of(m["main"].body, "call", function(x) return x.args[1] end)
    assert.are.equal(N, depth)
    assert.are.equal("a", e.name)
  end)

  it("parses a " .. N .. "-binding let chain into " .. N .. " nested lets", function()
    local m = dp.parse(chain(N, true))
    local depth, e = depth_of(m["main"].body, "let", function(x) return x.body end)
    assert.are.equal(N, depth)
    assert.are.equal("var", e.kind)
  end)

  it("reports an error at the end of a long chain with its position", function()
    local text = chain(N):gsub("%%b%);\n  %%%d+\n}\n$", "%%c);\n}\n")
    local ok, err = pcall(dp.parse, text)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("unknown variable %%c"))
    assert.are.equal(N + 1, err.line)
  end)

  -- Nesting inside one expression: the builder's stacks are explicit, LPeg's
  -- backtrack stack is sized for the lexer's bracket limit.
  local DEEP = 10000

  it("reads expressions nested " .. DEEP .. " deep: calls, parentheses, tuples, functions", function()
    local n = DEEP
    local d, leaf = depth_of(dp.parse_expr(("negative("):rep(n) .. "1f" .. (")"):rep(n)), "call",
      function(e) return e.args[1] end)
    assert.are.same({n, "const"}, {d, leaf.kind})
    assert.are.equal("const", dp.parse_expr(("("):rep(n) .. "1f" .. (")"):rep(n)).kind)
    d = depth_of(dp.parse_expr(("("):rep(n) .. "1f" .. (",)"):rep(n)), "tuple", function(e) return e.fields[1] end)
    assert.are.equal(n, d)
    d = depth_of(dp.parse_expr(("fn () { "):rep(n) .. "1f" .. (" }"):rep(n)), "fn", function(e) return e.body end)
    assert.are.equal(n, d)
    d = depth_of(dp.parse_expr("1f" .. (".0"):rep(n)), "proj", function(e) return e.tuple end)
    assert.are.equal(n, d)
    d = depth_of(dp.parse_expr(("- "):rep(n) .. "1f"), "call", function(e) return e.args[1] end)
    assert.are.equal(n, d)
    -- a call of a call of a call inside a module, type-checked
    local m = dp.parse("def @main(%a: " .. T .. ") { " .. ("nn.relu("):rep(n) .. "%a" .. (")"):rep(n) .. " }")
    assert.are.equal(n, (depth_of(m["main"].body, "call", function(e) return e.args[1] end)))
  end)

  it("reads types, if chains and patterns nested " .. DEEP .. " deep; attribute lists 32 deep", function()
    local n = DEEP
    local t = dp.parse_type(("("):rep(n) .. "int8" .. (",)"):rep(n))
    assert.are.equal(n, (depth_of(t, "tuple", function(x) return x.fields[1] end)))
    t = dp.parse_type(("fn () -> "):rep(n) .. "int8")
    assert.are.equal(n, (depth_of(t, "func", function(x) return x.ret end)))
    local e = dp.parse_expr("if (True) { 1 }" .. (" else if (False) { 2 }"):rep(n) .. " else { 3 }")
    assert.are.equal(n + 1, (depth_of(e, "if", function(x) return x.else_branch end)))
    e = dp.parse_expr("match ((1,)) { " .. ("("):rep(n) .. "_" .. (",)"):rep(n) .. " => 1 }")
    assert.are.equal("match", e.kind)
    dp.op.register("test.deep_attrs", {num_inputs = 1, attrs = {{name = "v", kind = "any"}},
      type_rel = function(ts) return ts[1] end})
    -- (attribute values are small: the core's list helpers recurse)
    e = dp.parse_expr("test.deep_attrs(1f, v=" .. ("["):rep(32) .. "1" .. ("]"):rep(32) .. ")")
    local v, d = e.attrs.v, 0
    while type(v) == "table" do
      v, d = v[1], d + 1
    end
    assert.are.same({32, 1}, {d, v})
    local ok, err = pcall(dp.parse_expr, "test.deep_attrs(1f, v=" .. ("["):rep(33) .. "1" .. ("]"):rep(33) .. ")")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("attribute lists nested too deeply"), err.message)
    assert.are.same({1, 23 + 32}, {err.line, err.col})
  end)

  it("stops brackets nested past its limit with a positioned error, at the first one past it", function()
    local n = dp._parse_max_nest
    local prefix = "negative(" -- (its call is one level)
    local cases = {
      {("("):rep(n + 10) .. "1", n + 1},
      {("negative("):rep(n + 10) .. "1", 9 * n + 1}, -- (`negative(` is one token)
      {prefix .. ("("):rep(n + 10) .. "1", #prefix + n},
      {("fn () { "):rep(n + 10) .. "1", 8 * n + 4},
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(dp.parse_expr, c[1])
      assert.is_false(ok)
      assert.are.equal("table", type(err))
      assert.is_truthy(err.message:find("nested too deeply"), err.message)
      assert.are.same({1, c[2]}, {err.line, err.col})
    end
  end)

  it("reads a syntax error inside nested calls in linear time (../shared/repro/slow_unclosed_nested_call.relay)", function()
    -- each unclosed level once doubled the work: 5,000 levels would never end
    local ok, err = pcall(dp.parse, "def @main(%a: " .. T .. ") {\n  " .. ("nn.relu("):rep(5000) .. "%a\n")
    assert.is_false(ok)
    assert.is_truthy(err.message:find("expected ',' or ')', found end of input", 1, true), err.message)
    assert.are.same({3, 1}, {err.line, err.col})
  end)
end)
