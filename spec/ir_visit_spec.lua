-- dp.visit and dp.rewrite driven by Lua functions: order, sharing,
-- callbacks that throw, and million-deep chains.
local dp = require "devplan"

local T = dp.type.tensor({2}, "float32")
local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000

describe("dp.visit", function()
  local a, b = dp.var("a", T), dp.var("b", T)
  local s = dp.call("add", {a, b})
  local m = dp.call("multiply", {s, s})   -- s shared
  local f = dp.fn({a, b}, m)

  it("visits children first, each distinct node once", function()
    local seen = {}
    dp.visit(f, function(e) seen[#seen + 1] = e end)
    -- post order: params, then the body's children before the body
    local pos = {}
    for i, e in ipairs(seen) do
      assert.is_nil(pos[e], "visited twice")
      pos[e] = i
    end
    assert.truthy(pos[a] < pos[s] and pos[b] < pos[s])
    assert.truthy(pos[s] < pos[m] and pos[m] < pos[f])
    assert.equal(seen[#seen], f)
    -- a, b, add op, s, multiply op, m, f
    assert.equal(7, #seen)
  end)

  it("pre returning false skips the children", function()
    local pre, post = {}, {}
    dp.visit(f, {
      pre = function(e) pre[#pre + 1] = e.kind; return e.kind ~= "call" end,
      post = function(e) post[#post + 1] = e.kind end,
    })
    assert.same({"fn", "var", "var", "call"}, pre)
    assert.same({"var", "var", "call", "fn"}, post)
  end)

  it("propagates an error from the callback with its value", function()
    local marker = {}
    local ok, err = pcall(dp.visit, f, function(e) if e.kind == "call" then error(marker) end end)
    assert.is_false(ok)
    assert.equal(marker, err)
    ok, err = pcall(dp.visit, f, function() error("boom") end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("boom"))
    local n = 0
    dp.visit(f, function() n = n + 1 end)  -- still usable
    assert.equal(7, n)
  end)

  it("visits every function of a module", function()
    local mod = dp.IRModule{functions = {{"main", f}}}
    local n = 0
    dp.visit(mod, function() n = n + 1 end)
    assert.equal(7, n)
  end)

  it("rejects misuse", function()
    assert.has_error(function() dp.visit(3, print) end)
    assert.has_error(function() dp.visit(f, 3) end)
    assert.has_error(function() dp.visit(f, {}) end)
  end)
end)

describe("dp.rewrite", function()
  local a, b = dp.var("a", T), dp.var("b", T)
  local s = dp.call("add", {a, b})
  local m = dp.call("multiply", {s, s})
  local f = dp.fn({a, b}, m)

  it("keeps the node when handlers return nil", function()
    local r = dp.rewrite(f, {call = function() end})
    assert.is_true(rawequal(r, f))
    assert.is_true(rawequal(dp.rewrite(f, {}), f))
  end)

  it("rewrites children first and keeps sharing", function()
    local calls = 0
    local r = dp.rewrite(f, {call = function(call)
      calls = calls + 1
      if call.callee.name == "add" then return dp.call("subtract", call.args) end
    end})
    assert.equal(2, calls)            -- the shared add is rewritten once
    assert.equal("subtract", r.body.args[1].callee.name)
    assert.is_true(rawequal(r.body.args[1], r.body.args[2]))
    assert.is_true(rawequal(r.params[1], a))
    assert.equal("add", f.body.args[1].callee.name)   -- the input is unchanged
  end)

  it("passes the rebuilt node and the original, and 'any' catches every kind", function()
    local kinds = {}
    dp.rewrite(f, {any = function(new, old)
      assert.equal(new.kind, old.kind)
      kinds[new.kind] = (kinds[new.kind] or 0) + 1
    end})
    assert.same({var = 2, op = 2, call = 2, fn = 1}, kinds)
  end)

  it("pre may replace a node before its children are visited", function()
    local visited_inside = false
    local x = dp.var("x", T)
    local r = dp.rewrite(f, {
      pre = function(e) if e.kind == "call" and e.callee.name == "multiply" then return x end end,
      var = function(v) if v == a then visited_inside = true end end,
    })
    assert.is_true(rawequal(r.body, x))
  end)

  it("propagates handler errors and leaves nothing behind", function()
    local marker = setmetatable({}, {__tostring = function() return "marker" end})
    local ok, err = pcall(dp.rewrite, f, {call = function() error(marker) end})
    assert.is_false(ok)
    assert.equal(marker, err)
    ok, err = pcall(dp.rewrite, f, {call = function() return "nope" end})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("must return an expression", 1, true))
    assert.is_true(rawequal(dp.rewrite(f, {}), f))
  end)

  it("leaves nothing half-built when a handler throws", function()
    -- Every replacement holds a fresh interned type: if any part of the
    -- half-built result leaked, its type would stay in the context's table.
    local body = dp.var("p", T)
    local p = body
    for _ = 1, 2000 do body = dp.call("negative", {body}) end
    local g = dp.fn({p}, body)
    collectgarbage(); collectgarbage()
    local before = dp.debug.counts().types
    for round = 1, 5 do
      local n = 0
      local ok = pcall(dp.rewrite, g, {call = function(c)
        n = n + 1
        if n == 1500 then error("stop") end
        local u = dp.var("u", dp.type.tensor({round, 100000 + n}))
        return dp.call("add", {c.args[1], u})
      end})
      assert.is_false(ok)
    end
    collectgarbage(); collectgarbage()
    assert.equal(before, dp.debug.counts().types)
  end)

  it("rewrites a module's functions", function()
    local mod = dp.IRModule{functions = {{"main", f}}}
    local r = dp.rewrite(mod, {call = function(c)
      if c.callee.name == "multiply" then return dp.call("add", c.args) end
    end})
    assert.equal("add", r.main.body.callee.name)
    assert.equal("multiply", mod.main.body.callee.name)
  end)

  it("rejects unknown handler keys", function()
    assert.has_error(function() dp.rewrite(f, {Call = function() end}) end)
    assert.has_error(function() dp.rewrite(f, {call = 3}) end)
  end)
end)

describe("deep chains (" .. N .. ")", function()
  it("builds, visits, rewrites, compares, prints and frees a let chain", function()
    local x = dp.var("x", T)
    -- let %v1 = negative(%x); let %v2 = negative(%v1); ... ; %vN
    -- (built from the inside out, holding only two vars at a time)
    local cur = dp.var("v" .. N)
    local body = cur
    for i = N, 1, -1 do
      local prev = i == 1 and x or dp.var("v" .. (i - 1))
      body = dp.let(cur, dp.call("negative", {prev}), body)
      cur = prev
    end
    local f = dp.fn({x}, body)
    local n = 0
    dp.visit(f, function() n = n + 1 end)
    assert.equal(3 * N + 3, n)   -- N vars, N calls, N lets, the op, x, fn
    local r = dp.rewrite(f, {call = function(c) return dp.call("exp", c.args) end})
    assert.equal("exp", r.body.value.callee.name)
    assert.is_false(dp.structural_equal(f, r))
    assert.is_true(dp.structural_equal(f, dp.rewrite(r, {call = function(c)
      return dp.call("negative", c.args) end})))
    local text = tostring(r)
    assert.truthy(#text > 10 * N)
    f, r, body, text = nil, nil, nil, nil
    collectgarbage(); collectgarbage()
  end)

  it("builds, visits, rewrites, compares, prints and frees a call chain", function()
    local x = dp.var("x", T)
    local e = x
    for _ = 1, N do e = dp.call("negative", {e}) end
    local f = dp.fn({x}, e)
    local n = 0
    dp.visit(f, {pre = function() n = n + 1 end})
    assert.equal(N + 3, n)
    local r = dp.rewrite(f, {op = function(op) if op.name == "negative" then return dp.op.get("exp") end end})
    assert.equal("exp", r.body.callee.name)
    assert.is_false(dp.structural_equal(f, r))
    local y = dp.var("y", T)
    local e2 = y
    for _ = 1, N do e2 = dp.call("negative", {e2}) end
    assert.is_true(dp.structural_equal(f, dp.fn({y}, e2)))   -- alpha-equivalent
    assert.truthy(#tostring(f) > 10 * N)
    f, r, e, e2 = nil, nil, nil, nil
    collectgarbage(); collectgarbage()
  end)
end)
