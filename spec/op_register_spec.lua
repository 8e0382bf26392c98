-- Operators registered from Lua with a type relation written in Lua,
-- used by dp.infer_type; dp.op.get; misuse.
local dp = require "devplan"

local T = dp.type.tensor({4, 6}, "float32")
local function has(s, sub) return s:find(sub, 1, true) ~= nil end

local counter = 0
local function fresh(name)
  counter = counter + 1
  return ("test.%s%d"):format(name, counter)
end

local function main_of(params, body)
  return dp.IRModule{functions = {{"main", dp.fn(params, body)}}}
end

describe("dp.op", function()
  it("gets built-in operators and raises for unknown names", function()
    assert.equal("nn.conv2d", dp.op.get("nn.conv2d").name)
    local ok, err = pcall(dp.op.get, "no.such")
    assert.is_false(ok)
    assert.equal("name", err.code)
    local names = dp.op.names()
    local set = {}
    for _, n in ipairs(names) do set[n] = true end
    for _, n in ipairs{"on_device", "device_copy", "add", "nn.conv2d", "call_lowered"} do
      assert.is_true(set[n], n)
    end
  end)

  it("registers an operator whose Lua relation drives inference", function()
    local name = fresh("transpose2d")
    local seen_args, seen_attrs
    local op = dp.op.register(name, {
      num_inputs = 1,
      attrs = {{name = "scale", kind = "int", default = 1}, {name = "tag", kind = "str"}},
      type_rel = function(args, attrs)
        seen_args, seen_attrs = args, attrs
        local s = args[1].shape
        return dp.type.tensor({s[2] * attrs.scale, s[1]}, args[1].dtype)
      end,
    })
    assert.equal("op", op.kind)
    assert.is_true(rawequal(op, dp.op.get(name)))
    assert.equal(1, op.num_inputs)
    local x = dp.var("x", T)
    local call = dp.call(name, {x}, {scale = 2, tag = "t"})
    assert.equal(2, call.attrs.scale)
    local mod = dp.infer_type(main_of({x}, call))
    assert.equal("Tensor[(12, 4), float32]", tostring(mod.main.body.checked_type))
    assert.is_true(rawequal(seen_args[1], T))
    assert.equal(2, seen_attrs.scale)
    assert.equal("t", seen_attrs.tag)
    -- the default reaches the relation when the call leaves it out
    local y = dp.var("y", T)
    mod = dp.infer_type(main_of({y}, dp.call(name, {y})))
    assert.equal("Tensor[(6, 4), float32]", tostring(mod.main.body.checked_type))
    assert.equal(1, seen_attrs.scale)
    -- the schema is checked
    assert.has_error(function() dp.call(name, {x}, {nope = 1}) end)
    assert.has_error(function() dp.call(name, {x}, {scale = "big"}) end)
    assert.has_error(function() dp.call(name, {x, x}) end)
  end)

  it("turns an error inside the relation into a type error naming the call", function()
    local name = fresh("broken")
    dp.op.register(name, {num_inputs = 1, type_rel = function() error("relation exploded") end})
    local x = dp.var("x", T)
    local ok, err = pcall(dp.infer_type, main_of({x}, dp.call(name, {x})))
    assert.is_false(ok)
    assert.equal("type", err.code)
    assert.truthy(has(tostring(err), name))
    assert.truthy(has(tostring(err), "relation exploded"))
    -- a relation returning something that is not a Type
    local bad = fresh("bad")
    dp.op.register(bad, {num_inputs = 1, type_rel = function() return 42 end})
    ok, err = pcall(dp.infer_type, main_of({x}, dp.call(bad, {x})))
    assert.is_false(ok)
    assert.truthy(has(tostring(err), "must return a Type"))
    -- the state stays usable
    local good = fresh("id")
    dp.op.register(good, {num_inputs = 1, type_rel = function(a) return a[1] end})
    local mod = dp.infer_type(main_of({x}, dp.call(good, {x})))
    assert.is_true(rawequal(mod.main.body.checked_type, T))
  end)

  it("runs the relation from inside a coroutine", function()
    local name = fresh("co")
    dp.op.register(name, {num_inputs = 1, type_rel = function(a) return a[1] end})
    local x = dp.var("x", T)
    local co = coroutine.wrap(function()
      return dp.infer_type(main_of({x}, dp.call(name, {x}))).main.body.checked_type
    end)
    assert.is_true(rawequal(co(), T))
  end)

  it("rejects bad registrations", function()
    local rel = function(a) return a[1] end
    local name = fresh("dup")
    dp.op.register(name, {num_inputs = 1, type_rel = rel})
    local ok, err = pcall(dp.op.register, name, {num_inputs = 1, type_rel = rel})
    assert.is_false(ok)
    assert.truthy(has(tostring(err), "already registered"))
    assert.is_false(pcall(dp.op.register, "add", {num_inputs = 2, type_rel = rel}))
    assert.is_false(pcall(dp.op.register, fresh("x"), {num_inputs = 1}))
    assert.is_false(pcall(dp.op.register, fresh("x"), {num_inputs = "one", type_rel = rel}))
    assert.is_false(pcall(dp.op.register, fresh("x"), {type_rel = rel, attrs = {{name = "a", kind = "weird"}}}))
    assert.is_false(pcall(dp.op.register, fresh("x"), {type_rel = rel, attrs = {{kind = "int"}}}))
    assert.is_false(pcall(dp.op.register, fresh("x"), {type_rel = rel,
      attrs = {{name = "a", kind = "int", default = function() end}}}))
  end)
end)
