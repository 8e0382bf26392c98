-- The metadata section (issue 9): a module TVM printed with
-- show_meta_data=True reads its meta[...] references from its own
-- #[metadata] section (TVM's JSON object graph), plans as the same module
-- given a metatable, and devplan's printer writes the section back in
-- TVM's format, constants byte for byte.
local dp = require "devplan"
local testing = require "devplan.testing"

local ROOT = dp.root or "."
local FILE = ROOT .. "/spec/data/tvm_meta_cuda.relay"

local read = testing.read_file

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  assert.are.equal("table", type(e), tostring(e))
  return e
end

-- base64, for the arrays the specs make
local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function b64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local v = a * 65536 + (b or 0) * 256 + (c or 0)
    local q = {}
    for k = 3, 0, -1 do
      local d = (v >> (6 * k)) & 63
      q[#q + 1] = B64:sub(d + 1, d + 1)
    end
    if not b then q[3], q[4] = "=", "=" elseif not c then q[4] = "=" end
    out[#out + 1] = table.concat(q)
  end
  return table.concat(out)
end

-- TVM's NDArray header (cpu device) for a shape and a DLPack dtype
local function header(shape, code, bits, nbytes)
  local h = string.pack("<I8I8i4i4i4BBI2", 0xDD5E40F096B4A13F, 0, 1, 0, #shape, code, bits, 1)
  for _, d in ipairs(shape) do h = h .. string.pack("<i8", d) end
  return h .. string.pack("<i8", nbytes)
end

-- A metadata section with one relay.Constant whose array is `array` (base64)
-- and, when given, more nodes after it.
local function section(array, constant_attrs, extra_nodes)
  return '{"root": 1, "nodes": [{"type_key": ""}, {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]}, '
    .. '{"type_key": "Array", "data": [3]}, {"type_key": "relay.Constant", "attrs": '
    .. (constant_attrs or '{"data": "0", "span": "0", "virtual_device_": "0"}') .. '}'
    .. (extra_nodes or "") .. '], "b64ndarrays": ["' .. array .. '"], "attrs": {"tvm_version": "0.9.dev0"}}'
end

local function with_section(body, json)
  return '#[version = "0.0.5"]\ndef @main() {\n  ' .. body .. '\n}\n\n#[metadata]\n' .. json
end

local FLOATS = b64(header({2}, 2, 32, 8) .. string.pack("<ff", 1.5, -2))

describe("the metadata section", function()
  it("gives a TVM module its devices and constants (TVM 0.9's layout, checked types and spans aside)", function()
    local m = dp.parse_file(FILE)
    local body = m.main.body
    local on_device = body.args[1]
    local vd = on_device.attrs.virtual_device
    assert.are.equal("cuda", vd.device_type_name)
    assert.are.equal(0, vd.virtual_device_id)
    assert.is_true(rawequal(vd.target, dp.Target("cuda"):with_host(dp.Target("llvm"))))
    assert.are.same({{1, 2}, {3, 4}}, on_device.args[1].args[2].value)
  end)

  it("plans exactly like the same module given a metatable", function()
    local text = read(FILE)
    local mod = dp.parse(text)
    local PALETTE = testing.PALETTE
    local bare = text:gsub("\n#%[metadata%].*$", "\n")
    local mt = {VirtualDevice = {PALETTE.GPU}, ["relay.Constant"] = {dp.const({{1, 2}, {3, 4}})}}
    local given = dp.parse(bare, mt)
    assert.is_true(dp.structural_equal(mod, given))
    local config = testing.config("cpu")
    local plan = testing.plan(config)
    assert.structurally_equal(plan(mod), plan(given))
    -- a metatable given wins over the section, kind by kind
    local cpu_mt = {VirtualDevice = {PALETTE.CPU}}
    local m2 = dp.parse(text, cpu_mt)
    assert.are.equal("cpu", m2.main.body.args[1].attrs.virtual_device.device_type_name)
    assert.are.same({{1, 2}, {3, 4}}, m2.main.body.args[1].args[1].args[2].value)
  end)

  it("reads every dtype TVM's arrays hold, little-endian, byte for byte", function()
    for _, c in ipairs{
      {"float32", 2, 32, string.pack("<ff", 1.5, -2), {1.5, -2}},
      {"float64", 2, 64, string.pack("<dd", 0.1, 1e300), {0.1, 1e300}},
      {"int8", 0, 8, string.pack("<bb", -128, 127), {-128, 127}},
      {"int64", 0, 64, string.pack("<i8i8", -1, 1 << 40), {-1, 1 << 40}},
      {"uint8", 1, 8, string.pack("<BB", 0, 255), {0, 255}},
      {"bool", 1, 1, string.pack("<BB", 1, 0), {true, false}},
      {"float16", 2, 16, string.pack("<I2I2", 0x3C00, 0xC000), {1, -2}},
    } do
      local text = with_section("meta[relay.Constant][0]", section(b64(header({2}, c[2], c[3], #c[4]) .. c[4])))
      local e = dp.parse(text).main.body
      assert.are.equal(c[1], e.dtype)
      local got = e.value
      if c[1] == "bool" then got = {got[1] == true or got[1] == 1, got[2] == true or got[2] == 1} end
      assert.are.same(c[5], got, c[1])
      -- printed back with meta = true: the same array, byte for byte
      local again = dp.astext(dp.parse(text), {meta = true})
      assert.truthy(again:find('"' .. b64(header({2}, c[2], c[3], #c[4]) .. c[4]) .. '"', 1, true), c[1])
    end
  end)

  it("reads and writes back a megabyte constant byte for byte", function()
    local n = 3 * 100000 -- floats, 1.2 MB
    local head = header({n}, 2, 32, 4 * n) -- 48 bytes: its base64 ends on a whole group
    local array = b64(head) .. ("AACAPwAAgD8AAIA/"):rep(n // 3) -- 1.0f three at a time
    local m = dp.parse(with_section("meta[relay.Constant][0]", section(array)))
    local c = m.main.body
    assert.are.same({n}, c.shape)
    local out = dp.astext(m, {meta = true})
    assert.truthy(out:find('"' .. array .. '"', 1, true))
    assert.is_true(dp.structural_equal(dp.parse(out), m))
  end)

  it("reads attribute values of other kinds: strings, numbers, lists", function()
    local json = '{"root": 1, "nodes": [{"type_key": ""}, {"type_key": "Map", "keys": ["runtime.String", "Array"], '
      .. '"data": [2, 4]}, {"type_key": "Array", "data": [3]}, {"type_key": "runtime.String", "repr_str": "NCHW"}, '
      .. '{"type_key": "Array", "data": [5]}, {"type_key": "Array", "data": [6, 7]}, '
      .. '{"type_key": "IntImm", "attrs": {"dtype": "int64", "value": "1", "span": "0"}}, '
      .. '{"type_key": "runtime.BoxInt", "repr_str": "2"}], "b64ndarrays": []}'
    local text = '#[version = "0.0.5"]\ndef @main(%x: Tensor[(1, 3, 4, 4), float32]) {\n'
      .. '  nn.max_pool2d(%x, pool_size=meta[Array][0], layout=meta[runtime.String][0])\n}\n#[metadata]\n' .. json
    local call = dp.parse(text).main.body
    assert.are.same({1, 2}, call.attrs.pool_size)
    assert.is_nil(call.attrs.layout) -- "NCHW" is the default
  end)

  it("says what it cannot represent, naming the type key, where it stands", function()
    local cases = {
      {section(FLOATS, nil, ', {"type_key": "tir.SizeVar", "attrs": {"name": "n"}}'):gsub('"data": %[2%]', '"data": [4]')
        :gsub('"keys": %["relay.Constant"%]', '"keys": ["tir.SizeVar"]'), "tir.SizeVar"},
      {section(FLOATS, '{"data": "0", "virtual_device_": "4"}', ', {"type_key": "VirtualDevice", "attrs": '
        .. '{"device_type_int": "2", "virtual_device_id": "0", "target": "0", "memory_scope": "0"}}'),
        "virtual device of its own"},
      {section(FLOATS, '{"data": "3"}'), "array 3 is not in b64ndarrays"},
      {section(b64(header({3}, 2, 32, 8) .. string.pack("<ff", 1, 2))), "holds 8 bytes where its shape and dtype need 12"},
      {section(b64(header({2}, 2, 8, 2) .. "ab")), "dtype code 2, 8 bits"},
      {section("not base64!"), "not base64"},
      {section(FLOATS):gsub('"root": 1', '"root": 7'), "root is not a node index"},
      {'{"root": 1, "nodes": [', "ends too early"},
      {'{"root": 1 "nodes": []}', "expected ',' or '}'"},
    }
    for _, c in ipairs(cases) do
      local text = with_section("meta[relay.Constant][0]", c[1])
      local e = err_of(dp.parse, text)
      assert.truthy(e.message:find(c[2], 1, true), e.message)
      assert.truthy(e.message:find("^metadata: "), e.message)
      assert.is_true(e.line >= 5, e.message) -- positioned in the section
    end
    -- the section is read even when no reference needs it
    local e = err_of(dp.parse, '#[version = "0.0.5"]\ndef @main() { 1 }\n#[metadata]\n{"root": 1}')
    assert.truthy(e.message:find("TVM's JSON object graph", 1, true), e.message)
    assert.are.equal(4, e.line)
    -- a reference nothing resolves
    e = err_of(dp.parse, with_section("meta[relay.Constant][1]", section(FLOATS)))
    assert.truthy(e.message:find("meta[relay.Constant][1] is out of range (the metadata has 1 relay.Constant entry)",
      1, true), e.message)
    assert.are.same({3, 3}, {e.line, e.col})
    e = err_of(dp.parse, with_section("on_device(1, virtual_device=meta[VirtualDevice][0])", section(FLOATS)))
    assert.truthy(e.message:find("the text's metadata has no 'VirtualDevice' list", 1, true), e.message)
  end)

  it("is written by the printer with meta = true, and reads back to the same module", function()
    local PALETTE = testing.PALETTE
    local text = read(FILE):gsub("\n#%[metadata%].*$", "\n")
    local m = dp.parse(text, {VirtualDevice = {PALETTE.GPU}, ["relay.Constant"] = {dp.const({{1, 2}, {3, 4}})}})
    local x = dp.var("x", dp.type.tensor({2}, "float32"), {virtual_device = PALETTE.CPU})
    m = m:with_function("other", dp.fn({x}, dp.call("device_copy", {x},
      {src_virtual_device = PALETTE.CPU, dst_virtual_device = PALETTE.GPU_SCOPE_TEXTURE})))
    local out = dp.astext(m, {meta = true})
    assert.truthy(out:find("virtual_device=meta[VirtualDevice][1]", 1, true), out)
    assert.truthy(out:find('\n#[metadata]\n{\n  "root": 1, \n  "nodes": [\n    {\n      "type_key": ""\n    }, ', 1, true), out)
    assert.truthy(out:find('"attrs": {"tvm_version": "0.9.dev0"}\n}$'), out)
    local back = dp.parse(out)
    assert.is_true(dp.structural_equal(back, m))
    assert.are.equal(out, dp.astext(back, {meta = true}))
    -- scalars stay literals; an expression prints its section too
    local e = dp.call("add", {dp.const({1, 2}), dp.const(3)})
    local t = dp.astext(e, {meta = true})
    assert.truthy(t:find("add(meta[relay.Constant][0], 3f)", 1, true), t)
    assert.is_true(dp.structural_equal(dp.parse_expr(t:gsub("\n#%[metadata%].*$", ""),
      {["relay.Constant"] = {dp.const({1, 2})}}), e))
    -- nothing to refer to: no section
    assert.falsy(dp.astext(dp.parse("def @main() { 1 }"), {meta = true}):find("metadata", 1, true))
  end)
end)
