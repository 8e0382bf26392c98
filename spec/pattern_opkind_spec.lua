-- Operator pattern kinds (TVM's TOpPattern) of every built-in operator, with
-- TVM's values; dp.op.register takes one; patterns read them (op_kind,
-- has_attr{TOpPattern = k}).
local dp = require "devplan"
local P = dp.pattern

-- TVM's registrations (src/relay/op/...: RELAY_REGISTER_UNARY_OP is elemwise,
-- RELAY_REGISTER_BINARY_OP and RELAY_REGISTER_CMP_OP broadcast, reductions
-- comm_reduce, convolutions/dense/pools/batch_norm out_elemwise_fusable).
local TVM = {
  elemwise = {"negative", "exp", "log", "sqrt", "rsqrt", "abs", "floor", "ceil", "round", "erf",
    "sigmoid", "tanh", "logical_not", "copy", "zeros_like", "ones_like", "clip", "cast", "zeros",
    "ones", "nn.relu", "nn.leaky_relu"},
  broadcast = {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "floor_divide",
    "mod", "logical_and", "logical_or", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "expand_dims", "nn.bias_add", "where", "floor_mod", "logical_xor", "broadcast_to",
    "nn.prelu"},
  injective = {"concatenate", "split", "reshape", "reshape_like", "transpose", "squeeze",
    "layout_transform", "nn.batch_flatten", "strided_slice", "take", "tile", "nn.pad", "image.resize2d"},
  comm_reduce = {"sum", "mean", "max", "min", "prod"},
  out_elemwise_fusable = {"nn.conv2d", "nn.conv2d_transpose", "nn.conv3d", "nn.dense", "nn.batch_norm",
    "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d",
    "nn.adaptive_avg_pool2d", "nn.adaptive_max_pool2d", "nn.adaptive_avg_pool3d", "nn.adaptive_max_pool3d",
    "nn.batch_matmul"},
  opaque = {"nn.dropout", "nn.softmax", "nn.log_softmax", "on_device", "device_copy",
    "memory.alloc_storage", "memory.alloc_tensor", "vm.shape_of", "vm.reshape_tensor",
    "vm.invoke_tvm_op", "call_lowered", "nn.layer_norm"},
}
local VALUE = {elemwise = 0, broadcast = 1, injective = 2, comm_reduce = 3, out_elemwise_fusable = 4, opaque = 8}

describe("operator pattern kinds", function()
  it("every built-in operator has TVM's kind", function()
    local listed = {}
    for kind, names in pairs(TVM) do
      for _, name in ipairs(names) do
        listed[name] = true
        assert.equal(kind, dp.op.get(name).pattern, name)
        assert.truthy(P.op(name):has_attr{TOpPattern = VALUE[kind]}:match(dp.op.get(name)), name)
      end
    end
    for _, name in ipairs(dp.op.names()) do
      if not name:find("^spec%.") then assert.truthy(listed[name], name .. " has no kind in this table") end
    end
  end)

  it("dp.op.register takes a kind; without one an operator has none", function()
    local rel = function(args) return args[1] end
    local op = dp.op.register("spec.kinded", {num_inputs = 1, type_rel = rel, pattern = "injective"})
    assert.equal("injective", op.pattern)
    assert.truthy(P.op_kind("injective"):match(op))
    local bare = dp.op.register("spec.unkinded", {num_inputs = 1, type_rel = rel})
    assert.is_nil(bare.pattern)
    assert.falsy(P.op("spec.unkinded"):has_attr{TOpPattern = 8}:match(bare), "no entry: never matches")
    assert.falsy(P.op_kind("opaque", "elemwise", "injective"):match(bare))
    local ok, err = pcall(dp.op.register, "spec.badkind", {num_inputs = 1, type_rel = rel, pattern = "fancy"})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("operator pattern kind", 1, true), tostring(err))
    assert.has_error(function() dp.op.register("spec.badkind2", {num_inputs = 1, type_rel = rel, pattern = 1}) end)
  end)
end)
