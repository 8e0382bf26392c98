-- Operator type relations on extreme sizes (src/core/ops_*.c, the checked
-- shape arithmetic of ops_internal.h): a huge dimension or attribute is a
-- type error at the call, never a wrapped number, a wrong type or a crash.
-- The ASan+UBSan run of this spec (scripts/sanitize.sh) is what proves
-- there is no signed overflow left on any of these paths.
local dp = require "devplan"

local MAX = math.maxinteger
local EXTREMES = {MAX, -MAX, MAX // 2 + 1, 1 << 62, 3037000500, -2, -1, 0}

local function T(shape, dtype) return dp.type.tensor(shape, dtype or "float32") end

-- The outcome of inferring op(args, attrs): "ok" with the type, or the error.
local function infer(op, arg_types, attrs)
  return pcall(function()
    local args = {}
    for i, t in ipairs(arg_types) do args[i] = dp.var("a" .. i, t) end
    return dp.infer_expr(dp.call(op, args, attrs))
  end)
end

-- A failure must be a devplan.Error ("type" from the relation, "value" when
-- dp.call already rejects the attribute), never a raw Lua error.
local function assert_clean(ok, res, what)
  if ok then
    assert.is_true(dp.is_type(res), what)
    return
  end
  assert.are.equal("table", type(res), what .. ": raw error " .. tostring(res))
  assert.truthy(res.code == "type" or res.code == "value", what .. ": " .. tostring(res))
end

-- One representative call per relation that does shape arithmetic, with
-- every integer in its argument shapes and attributes a slot to vary.
local SAMPLES = {
  {"nn.conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}},
   {strides = {1, 1}, padding = {1, 1, 1, 1}, dilation = {1, 1}, groups = 1, channels = 4, kernel_size = {3, 3}}},
  {"nn.conv3d", {{1, 3, 8, 8, 8}, {4, 3, 3, 3, 3}},
   {strides = {1, 1, 1}, padding = {1, 1, 1}, dilation = {1, 1, 1}, groups = 1, kernel_size = {3, 3, 3}}},
  {"nn.conv2d_transpose", {{1, 3, 8, 8}, {3, 4, 3, 3}},
   {strides = {2, 2}, padding = {1, 1}, output_padding = {1, 1}, dilation = {1, 1}, groups = 1,
    channels = 4, kernel_size = {3, 3}}},
  {"nn.dense", {{2, 5}, {7, 5}}, {units = 7}},
  {"nn.max_pool2d", {{1, 3, 8, 8}}, {pool_size = {2, 2}, strides = {2, 2}, dilation = {1, 1},
                                     padding = {0, 0, 1, 1}, ceil_mode = true}},
  {"nn.avg_pool2d", {{1, 3, 8, 8}}, {pool_size = {3, 3}, strides = {1, 1}, padding = {1, 1}}},
  {"nn.global_avg_pool2d", {{1, 3, 8, 8}}, {}},
  {"nn.adaptive_avg_pool2d", {{1, 3, 8, 8}}, {output_size = {2, 2}}},
  {"nn.adaptive_max_pool3d", {{1, 3, 4, 8, 8}}, {output_size = {1, 2, 2}}},
  {"nn.batch_flatten", {{2, 3, 4}}, {}},
  {"nn.bias_add", {{2, 3, 4}, {3}}, {axis = 1}},
  {"nn.softmax", {{2, 3}}, {axis = -1}},
  {"nn.batch_norm", {{2, 3, 4}, {3}, {3}, {3}, {3}}, {axis = 1}},
  {"sum", {{2, 3, 4}}, {axis = {1, 2}}},
  {"add", {{2, 1, 4}, {3, 1}}, {}},
  {"split", {{8, 4}}, {indices_or_sections = {3, 5}, axis = 0}},
  {"split", {{8, 4}}, {indices_or_sections = 2, axis = 1}},
  {"reshape", {{2, 3, 4}}, {newshape = {0, -1, 2}}},
  {"reshape", {{2, 3, 4}}, {newshape = {-3, -2}}},
  {"reshape", {{6, 4}}, {newshape = {-4, 2, -1, 4}}},
  {"reshape_like", {{2, 3, 4}, {6, 4}}, {lhs_begin = 0, lhs_end = 2, rhs_begin = 0, rhs_end = 1}},
  {"zeros", {}, {shape = {2, 3}}},
  {"transpose", {{2, 3, 4}}, {axes = {0, 2, 1}}},
  {"squeeze", {{1, 3, 1}}, {axis = {0}}},
  {"expand_dims", {{3, 4}}, {axis = 1, num_newaxis = 2}},
  {"layout_transform", {{1, 32, 8, 8}}, {src_layout = "NCHW", dst_layout = "NCHW4c"}},
  {"vm.reshape_tensor", {{6}, {2}}, {newshape = {2, 3}}},
  {"vm.shape_of", {{2, 3}}, {}},
}

local function copy(t)
  if type(t) ~= "table" then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = copy(v) end
  return c
end

-- Every integer slot of a sample: {where = "shape"|"attr", path = {...}}.
local function slots(sample)
  local out = {}
  for i, shape in ipairs(sample[2]) do
    for j = 1, #shape do out[#out + 1] = {"shape", i, j} end
  end
  for k, v in pairs(sample[3]) do
    if math.type(v) == "integer" then out[#out + 1] = {"attr", k}
    elseif type(v) == "table" then
      for j = 1, #v do out[#out + 1] = {"attr", k, j} end
    end
  end
  return out
end

local function types_of(op, shapes)
  local types = {}
  for i, s in ipairs(shapes) do
    -- vm.reshape_tensor's second argument is an int64 shape tensor
    types[i] = T(s, (op == "vm.reshape_tensor" and i == 2) and "int64" or "float32")
  end
  return types
end

-- The sample's argument types and attributes with one slot set to value;
-- nil when dp.type.tensor already rejects the shape (a dimension below -1).
local function with_value(sample, slot, value)
  local shapes, attrs = copy(sample[2]), copy(sample[3])
  if slot[1] == "shape" then shapes[slot[2]][slot[3]] = value
  elseif slot[3] then attrs[slot[2]][slot[3]] = value
  else attrs[slot[2]] = value end
  local ok, types = pcall(types_of, sample[1], shapes)
  if ok then return types, attrs end
end

describe("operator relations on extreme sizes", function()
  it("give a type or a type error for every extreme value in every slot", function()
    local tried = 0
    for _, sample in ipairs(SAMPLES) do
      local ok, res = infer(sample[1], types_of(sample[1], sample[2]), sample[3])
      assert.is_true(ok, sample[1] .. " sample itself: " .. tostring(res))
      for _, slot in ipairs(slots(sample)) do
        for _, v in ipairs(EXTREMES) do
          local types, attrs = with_value(sample, slot, v)
          if types then
            local ok2, res2 = infer(sample[1], types, attrs)
            assert_clean(ok2, res2, ("%s %s=%d"):format(sample[1], table.concat(slot, "."), v))
            tried = tried + 1
          end
        end
      end
    end
    assert.is_true(tried > 800, "tried " .. tried)
  end)

  it("report the overflow at the call in text (the shared ubsan_*.relay cases)", function()
    local cases = {
      {"%x: Tensor[(16), float32]", "expand_dims(%x, num_newaxis=9223372036854775807)", "exceeds rank 64"},
      {"%x: Tensor[(2, 9223372036854775807, 4), float32]", "nn.batch_flatten(%x)", "does not fit"},
      {"%x: Tensor[(9223372036854775807), float32], %y: Tensor[(5), float32]", "concatenate((%x, %y))",
       "does not fit"},
      {"%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]",
       "nn.conv2d(%x, %w, dilation=[9223372036854775807, 1])", "does not fit"},
      {"%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]",
       "nn.conv2d(%x, %w, padding=[9223372036854775807, 1, 1, 1])", "does not fit"},
      {"%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(3, 4, 3, 3), float32]",
       "nn.conv2d_transpose(%x, %w, strides=[9223372036854775807, 1])", "does not fit"},
      {"%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]",
       "nn.conv2d(%x, %w, groups=9223372036854775807, channels=9223372036854775807)", "does not fit"},
      {"%x: Tensor[(1, 3, 8, 8), float32]",
       "nn.max_pool2d(%x, pool_size=[2, 2], padding=[0, 0, 9223372036854775807, 0])", "does not fit"},
      {"%x: Tensor[(9223372036854775807, 4), float32]", "reshape(%x, newshape=[-1])", "does not fit"},
      {"%x: Tensor[(9223372036854775807, 2), float32], %y: Tensor[(4), float32]", "reshape_like(%x, %y)",
       "does not fit"},
      {"%x: Tensor[(8, 4), float32]", "split(%x, indices_or_sections=[3, -9223372036854775807, 1], axis=0)",
       "indices must be increasing"},
    }
    for _, c in ipairs(cases) do
      local prefix = "def @main(" .. c[1] .. ") {\n  "
      local ok, err = pcall(dp.parse, prefix .. c[2] .. "\n}")
      assert.is_false(ok, c[2])
      assert.are.equal("table", type(err), c[2] .. ": " .. tostring(err))
      assert.are.equal("type", err.code, tostring(err))
      assert.are.same({2, 3}, {err.line, err.col}, tostring(err))
      assert.truthy(err.message:find(c[3], 1, true), tostring(err))
    end
  end)

  it("reject a window wider than its padded input instead of typing it `?`", function()
    local ok, err = infer("nn.conv2d", {T{1, 3, 8, 8}, T{4, 3, 10, 10}}, {})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("wider than the padded input", 1, true), tostring(err))
    ok, err = infer("nn.max_pool2d", {T{1, 3, 4, 4}}, {pool_size = {6, 6}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("wider", 1, true), tostring(err))
    -- padding makes room: 8 + 2 - 10 + 1 = 1
    ok, err = infer("nn.conv2d", {T{1, 3, 8, 8}, T{4, 3, 10, 10}}, {padding = {1, 1}})
    assert.is_true(ok, tostring(err))
    assert.are.equal("Tensor[(1, 4, 1, 1), float32]", tostring(err))
  end)

  it("keep reshape's output within the rank limit (-2 and -4 at rank 64)", function()
    local ones = {}
    for i = 1, 63 do ones[i] = 1 end
    local ns = copy(ones)
    ns[64], ns[65], ns[66] = -4, 2, -1
    local ok, err = infer("reshape", {T{4}}, {newshape = ns})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("bad newshape", 1, true), tostring(err))
    local big = {}
    for i = 1, 70 do big[i] = 1 end
    ok, err = infer("reshape", {T(big)}, {newshape = {-2}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("bad newshape", 1, true), tostring(err))
    ok, err = infer("reshape", {T{6, 4}}, {newshape = {-4, 2, -1, 4}})
    assert.is_true(ok, tostring(err))
    assert.are.equal("Tensor[(2, 3, 4), float32]", tostring(err))
  end)

  it("reject a negative output dimension with a message, not `no result type`", function()
    for _, c in ipairs{
      {"zeros", {}, {shape = {2, -3}}},
      {"nn.adaptive_avg_pool2d", {T{1, 3, 8, 8}}, {output_size = {-5, 2}}},
      {"nn.dense", {T{2, 5}, T{7, 5}}, {units = -7}},
      {"layout_transform", {T{1, 32, 8, 8}}, {src_layout = "NCHW", dst_layout = "NCHW99999999999999999999c"}},
    } do
      local ok, err = infer(c[1], c[2], c[3])
      assert.is_false(ok, c[1])
      assert.are.equal("type", err.code, tostring(err))
      assert.is_nil(tostring(err):find("no result type", 1, true), tostring(err))
    end
  end)
end)
