-- The operator registry (src/core/op.c, ops_*.c): the built-in operators,
-- their attribute schemas (TVM's order and defaults) and type relations.
local dp = require "devplan"

local function T(shape, dtype) return dp.type.tensor(shape, dtype or "float32") end

-- The checked type (as text) of op(args..., attrs) on arguments of the given types.
local function result(op, arg_types, attrs)
  local args = {}
  for i, t in ipairs(arg_types) do args[i] = dp.var("a" .. i, t) end
  local call = dp.call(op, args, attrs)
  return tostring(dp.infer_expr(call))
end

local function type_error(op, arg_types, attrs)
  local ok, err = pcall(result, op, arg_types, attrs)
  assert.is_false(ok, "expected a type error")
  return tostring(err)
end

describe("operator registry", function()
  it("has the operators real models and the planner use", function()
    for _, name in ipairs{"add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
                          "negative", "exp", "log", "sqrt", "abs", "sigmoid", "tanh", "nn.relu",
                          "equal", "less", "greater", "clip", "cast", "layout_transform",
                          "nn.conv2d", "nn.conv2d_transpose", "nn.conv3d", "nn.dense", "nn.batch_norm",
                          "nn.dropout", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
                          "nn.adaptive_avg_pool3d", "nn.batch_flatten", "nn.bias_add", "nn.softmax",
                          "concatenate", "split", "reshape", "reshape_like", "zeros", "ones",
                          "transpose", "squeeze", "expand_dims", "sum", "mean",
                          "on_device", "device_copy", "memory.alloc_storage", "memory.alloc_tensor",
                          "vm.shape_of", "vm.reshape_tensor", "vm.invoke_tvm_op", "call_lowered"} do
      local op = dp.op.get(name)
      assert.are.equal(name, op.name)
    end
    assert.are.equal(2, dp.op.get("nn.conv2d").num_inputs)
    assert.has_error(function() dp.op.get("no.such.op") end)
  end)

  it("drops attributes equal to their defaults and keeps schema order", function()
    local x, w = dp.var("x", T{1, 3, 8, 8}), dp.var("w", T{4, 3, 3, 3})
    local c = dp.call("nn.conv2d", {x, w}, {kernel_size = {3, 3}, groups = 1, strides = {1, 1},
                                           channels = 4, padding = {1, 1, 1, 1}, data_layout = "NCHW"})
    assert.are.same({padding = {1, 1, 1, 1}, channels = 4, kernel_size = {3, 3}}, c.attrs)
    assert.truthy(tostring(c):find("padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]", 1, true), tostring(c))
    -- written with or without defaults: the same call
    local d = dp.call("nn.conv2d", {x, w}, {padding = {1, 1, 1, 1}, channels = 4, kernel_size = {3, 3}})
    assert.is_true(dp.structural_equal(c, d))
    -- a float default is compared by value
    local bn = dp.call("nn.batch_norm", {x, x, x, x, x}, {epsilon = 1e-5, scale = false})
    assert.are.same({scale = false}, bn.attrs)
  end)

  it("rejects unknown attributes and wrong kinds, naming both", function()
    local x = dp.var("x", T{1, 3, 8, 8})
    local ok, err = pcall(dp.call, "nn.conv2d", {x, x}, {stride = {2, 2}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("stride", 1, true) and tostring(err):find("nn.conv2d", 1, true), tostring(err))
    ok, err = pcall(dp.call, "nn.conv2d", {x, x}, {groups = "two"})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("groups", 1, true) and tostring(err):find("nn.conv2d", 1, true), tostring(err))
    ok, err = pcall(dp.call, "add", {x, x}, {axis = 1})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("axis", 1, true), tostring(err))
  end)
end)

describe("type relations", function()
  it("broadcast as TVM does, `?` included", function()
    assert.are.equal("Tensor[(2, 5, 7), float32]", result("add", {T{2, 1, 7}, T{5, 1}}))
    assert.are.equal("Tensor[(5, 7), float32]", result("multiply", {T{5, 7}, dp.type.scalar("float32")}))
    assert.are.equal("Tensor[(?, 7), float32]", result("add", {T{-1, 7}, T{1, 7}}))
    assert.are.equal("Tensor[(5, 7), float32]", result("add", {T{-1, 7}, T{5, 7}}))
    assert.are.equal("Tensor[(5, 7), bool]", result("less", {T{5, 7}, T{5, 7}}))
    local msg = type_error("add", {T{5, 7}, T{3}})
    assert.truthy(msg:find("add", 1, true) and msg:find("do not broadcast", 1, true), msg)
    msg = type_error("add", {T{5, 7}, T({5, 7}, "int32")})
    assert.truthy(msg:find("dtypes differ", 1, true), msg)
  end)

  it("type convolutions, dense and pooling", function()
    assert.are.equal("Tensor[(1, 64, 112, 112), float32]", result("nn.conv2d", {T{1, 3, 224, 224}, T{64, 3, 7, 7}},
      {strides = {2, 2}, padding = {3, 3, 3, 3}, channels = 64, kernel_size = {7, 7}}))
    assert.are.equal("Tensor[(1, 32, 20, 20), float32]", result("nn.conv2d", {T{1, 32, 20, 20}, T{32, 1, 3, 3}},
      {groups = 32, padding = {1, 1}, channels = 32}))
    assert.are.equal("Tensor[(1, 512, 8, 8), float32]", result("nn.conv2d_transpose",
      {T{1, 1024, 4, 4}, T{1024, 512, 4, 4}},
      {channels = 512, kernel_size = {4, 4}, strides = {2, 2}, padding = {1, 1, 1, 1}}))
    assert.are.equal("Tensor[(1, 8, 4, 8, 8), float32]", result("nn.conv3d", {T{1, 3, 8, 16, 16}, T{8, 3, 3, 3, 3}},
      {padding = {1, 1, 1}, strides = {2, 2, 2}}))
    assert.are.equal("Tensor[(1, 1000), float32]", result("nn.dense", {T{1, 512}, T{1000, 512}}, {units = 1000}))
    assert.are.equal("Tensor[(1, 1000), float32]", result("nn.dense", {T{1, 512}, T{1000, 512}}, {units = dp.NONE}))
    assert.are.equal("Tensor[(1, 64, 56, 56), float32]", result("nn.max_pool2d", {T{1, 64, 112, 112}},
      {pool_size = {3, 3}, strides = {2, 2}, padding = {1, 1, 1, 1}}))
    assert.are.equal("Tensor[(1, 512, 1, 1), float32]", result("nn.global_avg_pool2d", {T{1, 512, 7, 7}}))
    assert.are.equal("Tensor[(1, 512, 1, 1, 1), float32]", result("nn.adaptive_avg_pool3d", {T{1, 512, 4, 7, 7}},
      {output_size = {1, 1, 1}}))
    local msg = type_error("nn.conv2d", {T{1, 3, 8, 8}, T{4, 5, 3, 3}})
    assert.truthy(msg:find("nn.conv2d", 1, true) and msg:find("channels", 1, true), msg)
  end)

  it("type batch_norm, dropout, bias_add, softmax, batch_flatten", function()
    local v = T{64}
    assert.are.equal("(Tensor[(1, 64, 56, 56), float32], Tensor[(64), float32], Tensor[(64), float32])",
      result("nn.batch_norm", {T{1, 64, 56, 56}, v, v, v, v}, {epsilon = 2e-5}))
    assert.are.equal("(Tensor[(3, 4), float32], Tensor[(3, 4), float32])", result("nn.dropout", {T{3, 4}}))
    assert.are.equal("Tensor[(1, 1000), float32]", result("nn.bias_add", {T{1, 1000}, T{1000}}, {axis = -1}))
    assert.are.equal("Tensor[(1, 1000), float32]", result("nn.softmax", {T{1, 1000}}))
    assert.are.equal("Tensor[(1, 512), float32]", result("nn.batch_flatten", {T{1, 512, 1, 1}}))
    local msg = type_error("nn.batch_norm", {T{1, 64, 56, 56}, v, T{32}, v, v})
    assert.truthy(msg:find("argument 3", 1, true), msg)
  end)

  it("type the shape operators", function()
    local tup = dp.var("t", dp.type.tuple{T{2, 3}, T{2, 4}})
    assert.are.equal("Tensor[(2, 7), float32]", tostring(dp.infer_expr(dp.call("concatenate", {tup}, {axis = 1}))))
    assert.are.equal("(Tensor[(1, 3, 4), float32], Tensor[(1, 3, 4), float32], Tensor[(1, 3, 4), float32])",
      result("split", {T{3, 3, 4}}, {indices_or_sections = 3}))
    assert.are.equal("(Tensor[(2, 1), float32], Tensor[(2, 2), float32], Tensor[(2, 2), float32])",
      result("split", {T{2, 5}}, {indices_or_sections = {1, 3}, axis = 1}))
    assert.are.equal("Tensor[(1, 1024, 4, 4), float32]", result("reshape", {T{1, 16384}}, {newshape = {-1, 1024, 4, 4}}))
    assert.are.equal("Tensor[(2, 12), float32]", result("reshape", {T{2, 3, 4}}, {newshape = {0, -1}}))
    assert.are.equal("Tensor[(6, 4), float32]", result("reshape_like", {T{2, 3, 4}, T{6, 4}}))
    assert.are.equal("Tensor[(2, 3), float32]", result("zeros", {}, {shape = {2, 3}, dtype = "float32"}))
    assert.are.equal("Tensor[(4, 3, 2), float32]", result("transpose", {T{2, 3, 4}}))
    assert.are.equal("Tensor[(2, 4, 3), float32]", result("transpose", {T{2, 3, 4}}, {axes = {0, 2, 1}}))
    assert.are.equal("Tensor[(3), float32]", result("squeeze", {T{1, 3, 1}}))
    assert.are.equal("Tensor[(3, 1, 4), float32]", result("expand_dims", {T{3, 4}}, {axis = 1}))
    assert.are.equal("Tensor[(3, 1, 5), float32]", result("sum", {T{3, 4, 5}}, {axis = {1}, keepdims = true}))
    assert.are.equal("float32", result("mean", {T{3, 4, 5}}))
    assert.are.equal("Tensor[(5, 7), int32]", result("cast", {T{5, 7}}, {dtype = "int32"}))
    assert.are.equal("Tensor[(1, 8, 40, 40, 4), float32]", result("layout_transform", {T{1, 32, 40, 40}},
      {src_layout = "NCHW", dst_layout = "NCHW4c"}))
    local msg = type_error("reshape", {T{2, 3, 4}}, {newshape = {5, 5}})
    assert.truthy(msg:find("reshape", 1, true), msg)
  end)

  it("type the planner's operators", function()
    assert.are.equal("Tensor[(?, 3), float32]", result("on_device", {T{-1, 3}}))
    assert.are.equal("Tensor[(2), int64]", result("vm.shape_of", {T{-1, -1}}, {dtype = "int64"}))
    local i64 = dp.type.scalar("int64")
    assert.are.equal("Storage[]", result("memory.alloc_storage", {i64, dp.type.tensor({2}, "int64"), i64}))
    assert.are.equal("Tensor[(?, ?), float32]", result("memory.alloc_tensor",
      {dp.type.storage(), i64, dp.type.tensor({2}, "int64")}))
    assert.are.equal("Tensor[(?, ?), float32]", result("vm.reshape_tensor", {T{6}, dp.type.tensor({2}, "int64")}))
  end)

  -- Every built-in operator has its type rule checked at least once: the
  -- families above by representatives, the rest of each family here.
  it("types the rest of the elementwise, comparison and logical operators", function()
    local a, b = T{2, 1, 4}, T{3, 1}
    for _, op in ipairs{"floor_divide", "mod"} do
      assert.are.equal("Tensor[(2, 3, 4), float32]", result(op, {a, b}))
    end
    for _, op in ipairs{"not_equal", "less_equal", "greater_equal"} do
      assert.are.equal("Tensor[(2, 3, 4), bool]", result(op, {a, b}))
    end
    local p, q = T({2, 1}, "bool"), T({3}, "bool")
    for _, op in ipairs{"logical_and", "logical_or"} do
      assert.are.equal("Tensor[(2, 3), bool]", result(op, {p, q}))
    end
    assert.are.equal("Tensor[(2, 1), bool]", result("logical_not", {p}))
    for _, op in ipairs{"rsqrt", "floor", "ceil", "round", "erf", "copy", "zeros_like", "ones_like",
                        "nn.log_softmax", "nn.leaky_relu"} do
      assert.are.equal("Tensor[(2, 1, 4), float32]", result(op, {a}))
    end
    assert.truthy(type_error("mod", {T{2, 3}, T{4}}):find("broadcast", 1, true))
  end)

  it("types the rest of the reductions", function()
    local x = T{2, 3, 4}
    for _, op in ipairs{"max", "min", "prod"} do
      assert.are.equal("Tensor[(2, 4), float32]", result(op, {x}, {axis = {1}}))
      assert.are.equal("Tensor[(2, 1, 4), float32]", result(op, {x}, {axis = {1}, keepdims = true}))
      assert.are.equal("float32", result(op, {x}))
    end
  end)

  it("types the rest of the pooling operators", function()
    local x = T{1, 64, 7, 7}
    assert.are.equal("Tensor[(1, 64, 1, 1), float32]", result("nn.global_max_pool2d", {x}))
    assert.are.equal("Tensor[(1, 64, 1, 1), float32]",
                     result("nn.adaptive_avg_pool2d", {x}, {output_size = {1, 1}}))
    assert.are.equal("Tensor[(1, 64, 2, 3), float32]",
                     result("nn.adaptive_max_pool2d", {x}, {output_size = {2, 3}}))
    assert.are.equal("Tensor[(1, 8, 1, 2, 2), float32]",
                     result("nn.adaptive_max_pool3d", {T{1, 8, 4, 6, 6}}, {output_size = {1, 2, 2}}))
  end)
end)

