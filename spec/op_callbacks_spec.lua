-- Type relations written in Lua (src/lua/l_op.c) that misbehave: whatever
-- they do, inference ends with a type error naming the operator, nothing
-- leaks (the sanitizer and valgrind runs check) and the Lua state stays
-- usable: the same expressions type-check again afterwards.
local dp = require "devplan"

local T = dp.type.tensor({2}, "float32")
local counter = 0

local function register(type_rel)
  counter = counter + 1
  return dp.op.register("cb.op" .. counter, {num_inputs = 1, type_rel = type_rel})
end

-- infers op(negative(x)) and returns the error text; then checks that the
-- state is still usable with the same variable.
local function failure(op)
  local x = dp.var("x", T)
  local ok, err = pcall(dp.infer_expr, dp.call(op, {dp.call("negative", {x})}))
  assert.is_false(ok)
  assert.are.equal("type", err.code, tostring(err))
  assert.truthy(err.message:find(op.name, 1, true), err.message)
  assert.are.equal(T, dp.infer_expr(dp.call("negative", {x})))
  return err.message
end

describe("a type relation written in Lua", function()
  it("raising an error whose __tostring raises too", function()
    local msg = failure(register(function()
      error(setmetatable({}, {__tostring = function() error("and again") end}))
    end))
    assert.truthy(msg:find("cannot be printed", 1, true), msg)
  end)

  it("raising a table, a number, nil", function()
    for _, v in ipairs{{}, 42} do
      failure(register(function() error(v) end))
    end
    failure(register(function() error() end))
  end)

  it("returning something that is not a Type, or nothing", function()
    local msg = failure(register(function() return setmetatable({}, {__name = "devplan.Type"}) end))
    assert.truthy(msg:find("must return a Type", 1, true), msg)
    failure(register(function() end))
  end)

  it("yielding from inside a coroutine", function()
    local op = register(function() coroutine.yield(1) end)
    local co = coroutine.create(function()
      local ok, err = pcall(dp.infer_expr, dp.call(op, {dp.var("y", T)}))
      return ok, err
    end)
    local resumed, ok, err = coroutine.resume(co)
    assert.is_true(resumed)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("yield", 1, true), tostring(err))
  end)

  it("running inference and registering operators itself", function()
    local op = register(function(args)
      counter = counter + 1
      dp.op.register("cb.inner" .. counter, {num_inputs = 1, type_rel = function(a) return a[1] end})
      return dp.infer_expr(dp.call("negative", {dp.var("inner", args[1])}))
    end)
    assert.are.equal(T, dp.infer_expr(dp.call(op, {dp.var("z", T)})))
  end)
end)
