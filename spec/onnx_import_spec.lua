-- dp.onnx.load (src/import): small models built with python3-onnx's helper API
-- (spec/data/onnx/make_models.py): the Relay it makes, the weights modes,
-- spans naming the nodes, the shape arithmetic evaluated at import, and bad
-- input of every kind as an error naming the file and the node.
local dp = require "devplan"
require "devplan.testing" -- assert.structurally_equal

local DIR = "spec/data/onnx/"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function load_error(what, opts)
  local ok, err = pcall(dp.onnx.load, what, opts)
  assert.is_false(ok, "the import should fail")
  assert.truthy(dp.is_error(err), "a devplan.Error expected, got " .. tostring(err))
  return err
end

-- protobuf's wire format, for bytes no exporter writes
local function varint(n)
  local out = {}
  repeat
    local b = n % 128
    n = n // 128
    out[#out + 1] = string.char(n > 0 and b + 128 or b)
  until n == 0
  return table.concat(out)
end
local function field(num, bytes) return varint(num * 8 + 2) .. varint(#bytes) .. bytes end

local TINY_CNN = [[
#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w1: Tensor[(4, 3, 3, 3), float32], %b1: Tensor[(4), float32],
          %g: Tensor[(4), float32], %bt: Tensor[(4), float32], %mu: Tensor[(4), float32], %var: Tensor[(4), float32],
          %fw: Tensor[(10, 64), float32], %fb: Tensor[(10), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b1);
  %2 = nn.batch_norm(%1, %g, %bt, %mu, %var, epsilon=0.001f);
  %3 = nn.relu(%2.0);
  %4 = nn.max_pool2d(%3, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0]);
  %5 = reshape(%4, newshape=[1, -1]);
  %6 = nn.dense(%5, %fw, units=10);
  add(%6, %fb)
}
]]

describe("dp.onnx.load", function()
  it("maps each node as TVM's frontend did; the shape subgraph is computed at import", function()
    local mod = dp.onnx.load(DIR .. "tiny_cnn.onnx", {weights = "none"})
    assert.structurally_equal(mod, dp.parse(TINY_CNN))
  end)

  it("makes weights constants by default, with the initializers' values", function()
    local mod = dp.onnx.load(DIR .. "tiny_cnn.onnx")
    local _, info = dp.onnx.load(DIR .. "tiny_cnn.onnx", {weights = "params"})
    assert.are.equal(1, #mod:functions()[1][2].params) -- only the graph input
    local consts = {}
    dp.visit(mod, function(e) if e.kind == "const" and e.ndim > 0 then consts[#consts + 1] = e end end)
    assert.are.equal(8, #consts)
    local w1 = info.params.w1
    assert.truthy(w1)
    local found = false
    for _, c in ipairs(consts) do
      if tostring(c.checked_type) == "Tensor[(4, 3, 3, 3), float32]" then
        assert.structurally_equal(c, w1)
        found = true
      end
    end
    assert.is_true(found)
    -- params: the same module as none, the values handed back
    assert.structurally_equal(dp.onnx.load(DIR .. "tiny_cnn.onnx", {weights = "none"}),
                              dp.onnx.load(DIR .. "tiny_cnn.onnx", {weights = "params"}))
    local names = {}
    for name in pairs(info.params) do names[#names + 1] = name end
    table.sort(names)
    assert.are.same({"b1", "bt", "fb", "fw", "g", "mu", "var", "w1"}, names)
  end)

  it("gives every call its node's name as the source and its index + 1 as the line", function()
    local mod = dp.onnx.load(DIR .. "tiny_cnn.onnx")
    local seen = {}
    dp.visit(mod, function(e)
      if e.kind == "call" and e.callee.kind == "op" then
        seen[e.callee.name] = e.span.source .. ":" .. e.span.line .. ":" .. e.span.col
      end
    end)
    assert.are.same({["nn.conv2d"] = "conv1:1:0", ["nn.bias_add"] = "conv1:1:0", ["nn.batch_norm"] = "bn1:2:0",
                     ["nn.relu"] = "relu1:3:0", ["nn.max_pool2d"] = "pool1:4:0", reshape = "flatten:9:0",
                     ["nn.dense"] = "fc:10:0", add = "fc:10:0"}, seen)
    assert.truthy(dp.astext(mod, {spans = true}):find("span=fc:10:0", 1, true))
  end)

  it("names unnamed nodes OpType_k, as TVM did", function()
    local mod = dp.onnx.load(DIR .. "tiny_unnamed.onnx")
    local spans = {}
    dp.visit(mod, function(e) if e.kind == "call" then spans[#spans + 1] = e.span.source .. ":" .. e.span.line end end)
    table.sort(spans)
    assert.are.same({"Relu_0:1", "Relu_1:2", "Sigmoid_0:3"}, spans)
  end)

  it("computes Range, Equal, Where, Mod, Not, ScatterND, ConstantOfShape and Expand on shapes at import", function()
    local mod, info = dp.onnx.load(DIR .. "tiny_shapes.onnx")
    assert.structurally_equal(mod, dp.parse([[
      def @main(%x: Tensor[(2, 6, 8), float32]) {
        %0 = transpose(%x, axes=[0, 2, 1]);
        %1 = broadcast_to(%0, shape=[2, 8, 6]);
        reshape(%1, newshape=[2, 8, 6])
      }]]))
    assert.are.equal("Tensor[(3), int64]", tostring(info.types.perm))
    assert.are.equal("int64", tostring(info.types.nodd))
    assert.are.equal("Tensor[(6), bool]", tostring(info.types.even))
  end)

  it("splits into num_outputs parts with the last one smaller (opset 18)", function()
    local mod = dp.onnx.load(DIR .. "tiny_split18.onnx")
    assert.are.equal("(Tensor[(2, 3), float32], Tensor[(2, 3), float32], Tensor[(2, 1), float32])",
                     tostring(mod:functions()[1][2].body.checked_type))
  end)

  it("reads bytes as well as paths", function()
    local bytes = read(DIR .. "tiny_cnn.onnx")
    assert.structurally_equal(dp.onnx.load(DIR .. "tiny_cnn.onnx"), dp.onnx.load(bytes))
    local err = load_error(bytes:sub(1, 100), {source = "cut.onnx"})
    assert.truthy(err.message:find("^cut%.onnx: not a valid ONNX model: at byte %d+ of 100"), err.message)
  end)

  describe("a dynamic dimension", function()
    it("is an error naming the input and the dimension", function()
      local err = load_error(DIR .. "tiny_dynamic.onnx")
      assert.are.equal(DIR .. "tiny_dynamic.onnx: graph input 'x' has a dynamic dimension 0 ('batch'): devplan plans "
        .. "static shapes; give its size (the shapes option, --input-shape x=D1,D2,...)", err.message)
    end)
    it("takes its size from the shapes option", function()
      local mod = dp.onnx.load(DIR .. "tiny_dynamic.onnx", {shapes = {x = {3, 4}}})
      assert.are.equal("Tensor[(3, 4), float32]", tostring(mod:functions()[1][2].params[1].checked_type))
      assert.truthy(load_error(DIR .. "tiny_dynamic.onnx", {shapes = {y = {3, 4}}}).message:find(
        "a shape is given for 'y', which is not an input of the graph", 1, true))
      assert.truthy(load_error(DIR .. "tiny_dynamic.onnx", {shapes = {x = {3}}}).message:find(
        "has 1 dimensions, the model's 2", 1, true))
      assert.has_error(function() dp.onnx.load(DIR .. "tiny_dynamic.onnx", {shapes = {x = {"a"}}}) end)
    end)
    it("computed by the graph, where a value must be known, is an error naming the node and the input", function()
      local err = load_error(DIR .. "tiny_dynamic_reshape.onnx")
      assert.truthy(err.message:find("graph.node[0] 'reshape' (Reshape): its shape (input 1 's') must be known at "
        .. "import, but it is computed from the graph's inputs", 1, true), err.message)
    end)
  end)

  describe("bad input is an error naming the file, the node and what is wrong", function()
    it("a node that does not type-check", function()
      local err = load_error(DIR .. "tiny_badconv.onnx")
      assert.are.equal("type", err.code)
      assert.are.equal(DIR .. "tiny_badconv.onnx: graph.node[0] 'bad_conv' (Conv): nn.conv2d: data has 3 channels "
        .. "but the weight expects 4 x 1 groups", err.message)
    end)
    it("an operator devplan does not map", function()
      local err = load_error(DIR .. "tiny_unsupported.onnx")
      assert.are.equal(DIR .. "tiny_unsupported.onnx: graph.node[1] 'hm' (Hardmax): operator 'Hardmax' (opset 13) "
        .. "is not supported", err.message)
    end)
    it("an opset devplan does not read", function()
      assert.truthy(load_error(DIR .. "tiny_opset9.onnx").message:find(
        "opset 9 of ai.onnx is not supported (devplan reads opsets 11 to 18)", 1, true))
    end)
    it("a weight without its data, unless weights are not read", function()
      local err = load_error(DIR .. "resnet18.onnx")
      assert.truthy(err.message:find("it has no data (import with weights none to plan without the values)", 1, true),
                    err.message)
      assert.truthy(dp.is_module(dp.onnx.load(DIR .. "resnet18.onnx", {weights = "none"})))
    end)
    it("truncated bytes, at every length", function()
      local bytes = read(DIR .. "tiny_cnn.onnx")
      for n = 0, #bytes - 1, 7 do
        local err = load_error(n == 0 and "\0" or bytes:sub(1, n), {source = "t.onnx"})
        assert.truthy(err.message:find("^t%.onnx: "), err.message)
      end
    end)
    it("not ONNX at all: empty, Relay text, other bytes, a message without a graph", function()
      local empty = os.tmpname()
      assert(io.open(empty, "wb")):close()
      assert.are.equal(empty .. ": empty: not an ONNX model", load_error(empty).message)
      os.remove(empty)
      assert.truthy(load_error("\0", {source = "z.onnx"}).message:find("a field number of 0 (not protobuf)", 1, true))
      assert.truthy(load_error("#[version = \"0.0.5\"]\ndef @main() { 1f }\n\1", {source = "m.onnx"}).message
        :find("m.onnx: Relay text, not an ONNX model", 1, true))
      assert.truthy(load_error("\137PNG\r\n\26\n\0\0\0\rIHDR", {source = "p.onnx"}).message
        :find("^p%.onnx: not a valid ONNX model: at byte %d+"))
      assert.are.equal("v.onnx: not an ONNX model: it has no graph", load_error("\8\7", {source = "v.onnx"}).message)
      assert.truthy(load_error("/no/such/model.onnx").message:find("cannot open /no/such/model.onnx", 1, true))
    end)
    it("messages nested without end (bounded before decoding, no deep recursion)", function()
      local graph = ""
      for _ = 1, 200 do graph = field(1, field(5, field(6, graph))) end
      local bytes = "\8\7" .. field(7, graph)
      local err = load_error(bytes, {source = "deep.onnx"})
      assert.truthy(err.message:find("messages nested more than 64 deep", 1, true), err.message)
    end)
    it("every input of the fuzzer's corpus: a module or a devplan.Error", function()
      local p = io.popen("ls fuzz/corpus_onnx")
      local n = 0
      for name in p:lines() do
        local ok, res = pcall(dp.onnx.load, read("fuzz/corpus_onnx/" .. name), {weights = "none"})
        assert(ok and dp.is_module(res) or dp.is_error(res), name .. ": " .. tostring(res))
        n = n + 1
      end
      p:close()
      assert.is_true(n > 0)
    end)
  end)

  it("fails cleanly at every allocation that fails (a memory error, the state usable)", function()
    local bytes = read(DIR .. "tiny_cnn.onnx")
    local n = 1
    while true do
      dp.debug.fail_alloc(n)
      local ok, res = pcall(dp.onnx.load, bytes)
      dp.debug.fail_alloc(0)
      if ok then break end
      assert.are.equal("memory", res.code, "allocation " .. n .. ": " .. tostring(res))
      n = n + 1
    end
    assert.is_true(n > 50)
    assert.structurally_equal(dp.onnx.load(bytes), dp.onnx.load(bytes))
  end)

  it("checks its options", function()
    assert.has_error(function() dp.onnx.load(DIR .. "tiny_cnn.onnx", {weights = "all"}) end,
                     'dp.onnx.load: weights must be "const", "params" or "none"')
    assert.has_error(function() dp.onnx.load(DIR .. "tiny_cnn.onnx", {weight = "none"}) end)
  end)
end)
