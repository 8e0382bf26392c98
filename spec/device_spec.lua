-- Targets and virtual devices (planner.md "Devices and targets", seed 000,
-- seed 003 for target kinds, seed 004 for virtual_device_id).
local dp = require "devplan"
local testing = require "devplan.testing"

local err_of = testing.error_of

describe("Target", function()
  it("parses a kind and typed options and prints TVM's canonical string", function()
    local t = dp.Target("cuda -max_num_threads=1024 -arch=sm_80")
    assert.equal("cuda", t.kind)
    assert.equal(2, t.device_type)
    assert.is_nil(t.host)
    assert.equal(1024, t.options.max_num_threads)
    assert.equal(math.type(t.options.max_num_threads), "integer")
    assert.equal("sm_80", t.options.arch)
    -- keys first, then the options sorted, the kind's defaults included
    assert.equal("cuda -keys=cuda,gpu -arch=sm_80 -max_num_threads=1024 -thread_warp_size=32", tostring(t))
  end)

  it("gives each kind its device type and keys", function()
    local expected = {llvm = {1, "cpu"}, c = {1, "cpu"}, cuda = {2, "cuda,gpu"}, nvptx = {2, "cuda,gpu"},
                      rocm = {10, "rocm,gpu"}, opencl = {4, "opencl,gpu"}, vulkan = {7, "vulkan,gpu"},
                      metal = {8, "metal,gpu"}, hexagon = {16, "hexagon,cpu"}, webgpu = {15, "webgpu,gpu"},
                      ext_dev = {12, nil}, stackvm = {1, "cpu"}, hybrid = {1, nil}, sdaccel = {4, "sdaccel,hls"},
                      aocl = {32, "aocl,hls"}, aocl_sw_emu = {32, "aocl,hls"}}
    for kind, e in pairs(expected) do
      local t = dp.Target(kind)
      assert.equal(e[1], t.device_type, kind)
      assert.equal(e[2], t.options.keys and table.concat(t.options.keys, ","), kind)
      assert.is_true(rawequal(t, dp.Target(tostring(t))), kind)
    end
    assert.equal("ext_dev", tostring(dp.Target("ext_dev")))
    assert.equal("llvm -keys=cpu", tostring(dp.Target("llvm")))
  end)

  it("types booleans and lists as the kind declares, booleans printed 1/0 as TVM does", function()
    local t = dp.Target("llvm -mcpu=skylake -mattr=+avx2,+fma -fast-math=true -num-cores=4")
    assert.equal("skylake", t.options.mcpu)
    assert.same({"+avx2", "+fma"}, t.options.mattr)
    assert.is_true(t.options["fast-math"])
    assert.equal(4, t.options["num-cores"])
    assert.equal("llvm -keys=cpu -fast-math=1 -mattr=+avx2,+fma -mcpu=skylake -num-cores=4", tostring(t))
    assert.is_false(dp.Target("vulkan -supports_float16=0").options.supports_float16)
  end)

  it("rejects options the kind does not declare", function()
    local msg, e = err_of(dp.Target, "cuda -my_flag=7")
    assert.truthy(msg:find("unknown option '-my_flag' for target kind 'cuda' (its options: -mcpu, -arch,", 1, true), msg)
    assert.equal("value", e.code)
  end)

  it("is interned: equal descriptions give the same value", function()
    local a = dp.Target("cuda -arch=sm_80 -max_num_threads=1024")
    local b = dp.Target("cuda  -max_num_threads=1024   -arch=sm_80")
    local c = dp.Target{kind = "cuda", arch = "sm_80", max_num_threads = 1024}
    local d = dp.Target('{"kind": "cuda", "arch": "sm_80", "max_num_threads": 1024}')
    assert.is_true(rawequal(a, b))
    assert.is_true(rawequal(a, c))
    assert.is_true(rawequal(a, d))
    assert.is_false(rawequal(a, dp.Target("cuda -arch=sm_86")))
    assert.is_true(rawequal(a, dp.Target(a)))
    -- a default given explicitly is the default
    assert.is_true(rawequal(dp.Target("cuda"), dp.Target("cuda -keys=cuda,gpu -thread_warp_size=32 -arch=sm_50")))
  end)

  it("prints the host inline and round-trips", function()
    local host = dp.Target("llvm -mcpu=skylake")
    local t = dp.Target("cuda"):with_host(host)
    assert.equal("cuda -keys=cuda,gpu -arch=sm_50 -max_num_threads=1024 -thread_warp_size=32"
                 .. " -host='llvm -keys=cpu -mcpu=skylake'", tostring(t))
    assert.is_true(rawequal(t.host, host))
    assert.is_true(rawequal(t, dp.Target(tostring(t))))
    assert.is_true(rawequal(dp.Target("cuda -host=llvm").host, dp.Target("llvm")))
    for _, s in ipairs{"llvm -mcpu=skylake -host=llvm", "cuda -arch=sm_80 -host='llvm -mattr=+a,+b'",
                       "c -tag=\"it's a tag\"", "llvm -model='a b' -host=\"c -tag='x y'\"",
                       "vulkan -device_name='GPU with spaces' -host='llvm -model=\"a b\"'"} do
      local t1 = dp.Target(s)
      assert.is_true(rawequal(t1, dp.Target(tostring(t1))), s)
    end
  end)

  it("with_host replaces or removes the host", function()
    local t = dp.Target("cuda -host=llvm")
    local c = dp.Target("c")
    assert.is_true(rawequal(t:with_host(c).host, c))
    assert.is_true(rawequal(t:with_host("c"), t:with_host(c)))
    assert.is_true(rawequal(t:with_host(nil), dp.Target("cuda")))
    assert.is_nil(t:with_host(nil).host)
    assert.is_true(rawequal(t, dp.Target("cuda"):with_host(dp.Target("llvm"))))
  end)

  it("is built from a table with a host given by any form", function()
    local host = dp.Target("llvm")
    local a = dp.Target{kind = "cuda", host = host}
    assert.is_true(rawequal(a, dp.Target{kind = "cuda", host = "llvm"}))
    assert.is_true(rawequal(a, dp.Target{kind = "cuda", host = {kind = "llvm"}}))
    local l = dp.Target{kind = "llvm", mattr = {"+avx2", "+fma"}, ["fast-math"] = true}
    assert.is_true(rawequal(l, dp.Target("llvm -mattr=+avx2,+fma -fast-math=true")))
    assert.is_true(rawequal(l, dp.Target{kind = "llvm", mattr = {"+avx2", "+fma"}, ["fast-math"] = 1}))
  end)

  it("reads the JSON form, host as string or object", function()
    local t = dp.Target('{"kind": "cuda", "max_num_threads": 1024, "host": "llvm -mcpu=skylake"}')
    assert.is_true(rawequal(t, dp.Target("cuda -host='llvm -mcpu=skylake'")))
    local u = dp.Target([[ {"kind":"cuda","max_num_threads":1024,
                            "host":{"kind":"llvm","mcpu":"skylake"}} ]])
    assert.is_true(rawequal(t, u))
    local l = dp.Target('{"kind": "llvm", "mattr": ["+avx2", "+fma"], "fast-math": false, "tag": "a\\u00e9\\"b"}')
    assert.same({"+avx2", "+fma"}, l.options.mattr)
    assert.is_false(l.options["fast-math"])
    assert.equal('a\195\169"b', l.options.tag)
    assert.is_true(rawequal(l, dp.Target(tostring(l))))
  end)

  it("has a brief form in VirtualDevice literals: what construction derives is left out", function()
    local v = dp.VirtualDevice{target = "cuda -arch=sm_80 -host='llvm -mcpu=a'"}
    assert.equal([[VirtualDevice(device_type=cuda, target="cuda -arch=sm_80 -host='llvm -mcpu=a'")]], tostring(v))
    assert.equal('VirtualDevice(device_type=cpu, target="llvm -keys=arm_cpu -device=arm_cpu")',
                 tostring(dp.VirtualDevice{target = "llvm -keys=arm_cpu -device=arm_cpu"}))
    assert.equal('VirtualDevice(device_type=opencl, target="opencl -device=mali")',
                 tostring(dp.VirtualDevice{target = "opencl -device=mali"}))
  end)

  describe("errors say what is wrong", function()
    it("unknown kind, with the closest kind or the list", function()
      local msg, e = err_of(dp.Target, "fpga -x=1")
      assert.truthy(msg:find("unknown target kind 'fpga' (known kinds: llvm, c, cuda,", 1, true), msg)
      assert.equal("value", e.code)
      assert.truthy(err_of(dp.Target, "cdua"):find("unknown target kind 'cdua'; did you mean 'cuda'?", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "tpu"}):find("unknown target kind 'tpu'", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "LLVM"}):find("did you mean 'llvm'?", 1, true))
      assert.truthy(err_of(dp.Target, ""):find("empty target", 1, true))
    end)
    it("malformed options", function()
      assert.truthy(err_of(dp.Target, "cuda -arch"):find("target option -arch of kind cuda needs a value (-arch=...)", 1, true))
      assert.truthy(err_of(dp.Target, "cuda arch=sm_80"):find("expected an option -key=value, got 'arch=sm_80'", 1, true))
      assert.truthy(err_of(dp.Target, "cuda -=3"):find("expected an option", 1, true))
      assert.truthy(err_of(dp.Target, "cuda ---arch=x"):find("expected an option", 1, true))
      assert.truthy(err_of(dp.Target, "cuda -arch="):find("option -arch has no value", 1, true))
      assert.truthy(err_of(dp.Target, "-arch=sm_80"):find("must start with a kind", 1, true))
      assert.truthy(err_of(dp.Target, "cuda -max_num_threads=lots")
        :find("-max_num_threads of kind cuda expects an integer, got 'lots'", 1, true))
      assert.truthy(err_of(dp.Target, "llvm -fast-math=maybe"):find("expects a boolean", 1, true))
      assert.truthy(err_of(dp.Target, "llvm -fast-math=2"):find("expects a boolean", 1, true))
      assert.truthy(err_of(dp.Target, "cuda -arch=sm_80 -arch=sm_86"):find("-arch given twice", 1, true))
      assert.truthy(err_of(dp.Target, "cuda -host='llvm"):find("unterminated quote", 1, true))
      assert.truthy(err_of(dp.Target, "cuda -host=fpga"):find("unknown target kind 'fpga'", 1, true))
      assert.truthy(err_of(dp.Target, "cuda -host=llvm --host c"):find("-host given twice", 1, true))
      assert.truthy(err_of(dp.Target, "cuda --host"):find("-host needs a target", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "cuda", max_num_threads = 1.5})
        :find("target option -max_num_threads of kind cuda expects an integer, got 1.5", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "cuda", arch = 80}):find("-arch of kind cuda expects a string, got 80", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "cuda", max_num_threads = "1024"}):find("expects an integer, got '1024'", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "llvm", mattr = "+a"}):find("expects a list of strings", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "llvm", mattr = {"+a", 3}}):find("a list holds strings only", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "llvm", mattr = {"+a,+b"}}):find("has a ','", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "llvm", mcpu = print}):find("got function", 1, true))
      assert.truthy(err_of(dp.Target, {kind = "cuda", [1] = "x"})
        :find("option names must be strings, got the number key 1", 1, true))
      -- misuse of the table form names the field and what it got, also inside another table
      assert.truthy(err_of(dp.Target, {kindd = "cuda"}):find("the field 'kind' must be a target kind name", 1, true))
      assert.truthy(err_of(dp.Target, {kind = 5}):find("got number", 1, true))
      local msg, e = err_of(dp.Target, {kind = "cuda", host = 5})
      assert.equal("Target{...}: the field 'host' must be a Target, a target string or a table, got number", msg)
      assert.equal("value", e.code)
      assert.equal(msg, (err_of(dp.VirtualDevice, {target = {kind = "cuda", host = 5}})))
      assert.truthy(err_of(dp.Target, {kind = "cuda", archh = "sm_80"})
        :find("unknown option '-archh' for target kind 'cuda'; did you mean '-arch'?", 1, true))
      assert.truthy(err_of(dp.Target, "cuda -b@d=1"):find("malformed target option name", 1, true))
      assert.truthy(err_of(dp.Target, "cuda -kind=llvm"):find("'kind' is not an option", 1, true))
    end)
    it("values TVM's target parsers reject", function()
      assert.truthy(err_of(dp.Target, "cuda -arch=80"):find("-arch of kind cuda must be sm_<number> (as sm_80), got '80'", 1, true))
      assert.truthy(err_of(dp.Target, "nvptx -mcpu=x"):find("must be sm_<number>", 1, true))
      assert.truthy(err_of(dp.Target, "nvptx -mtriple=aarch64"):find("-mtriple of kind nvptx must be nvptx64-nvidia-cuda", 1, true))
      assert.truthy(err_of(dp.Target, "rocm -mcpu=sm_80"):find("must be gfx<version>", 1, true))
      assert.truthy(err_of(dp.Target, "llvm -target_device_type=99"):find("99 is not a known device type", 1, true))
      assert.equal("sm_90a", dp.Target("cuda -arch=sm_90a").options.arch)
    end)
    it("a host cannot have a host", function()
      assert.truthy(err_of(dp.Target, "cuda -host='llvm -host=c'"):find("cannot have a host", 1, true))
      local chained = dp.Target("cuda -host=llvm")
      assert.truthy(err_of(function() return dp.Target("opencl"):with_host(chained) end)
        :find("cannot have a host of its own", 1, true))
    end)
    it("malformed JSON, with the place", function()
      local cases = {
        {'{"kind": "cuda" "x": 1}', "line 1, column 17: expected ',' or '}'"},
        {'{"kind": "cuda", "x" 1}', "expected ':'"},
        {'{"kind": "cuda"} extra', "unexpected text after the object"},
        {'{"max_num_threads": 1024}', 'missing "kind"'},
        {'{}', 'missing "kind"'},
        {'{"kind": 3}', '"kind" must be a string'},
        {'{"kind": "cuda", "kind": "llvm"}', '"kind" given twice'},
        {'{"kind": "cuda", "x": null}', "null is not an option value"},
        {'{"kind": "llvm", "libs": {"a": "b"}}', "an object is not an option value"},
        {'{"kind": "cuda", "x": "a\\qb"}', "bad escape"},
        {'{"kind": "cuda", "x": 01}', "expected ',' or '}'"},
        {'{"kind": "cuda", "x": "abc', "unterminated string"},
        {'{"kind": "cuda",\n "x": [1]}', "line 2, column 8: a list option holds strings only"},
        {'{"kind": "cuda", "host": {"kind": "llvm", "host": "c"}}', "cannot have a host"},
        {'{"kind": "cuda", "host": 3}', '"host" must be a target string or object'},
        {'{"kind": "cuda", "max_num_threads": "many"}', "expects an integer"},
        {'{"kind": "cuda", "max_num_threads": 1e3}', "a number option value must be an integer"},
        {'{"kind": "cuda", "max_num_threads": 99999999999999999999}', "must be an integer (in the int64 range)"},
        {'{"kind": "cuda", "archh": "sm_80"}', "unknown option '-archh' for target kind 'cuda'; did you mean '-arch'?"},
      }
      for _, c in ipairs(cases) do
        local msg = err_of(dp.Target, c[1])
        assert.truthy(msg:find(c[2], 1, true), c[1] .. " gave: " .. msg)
      end
    end)
  end)
end)

describe("VirtualDevice", function()
  local llvm = dp.Target("llvm")
  local cuda = dp.Target("cuda")

  it("has every field optional, -1/nil/\"\" meaning unconstrained", function()
    local v = dp.VirtualDevice{}
    assert.equal(0, v.device_type)
    assert.equal(-1, v.virtual_device_id)
    assert.is_nil(v.target)
    assert.equal("", v.memory_scope)
    assert.is_true(v:is_fully_unconstrained())
    assert.is_false(v:is_fully_constrained())
    assert.equal("VirtualDevice()", tostring(v))
    assert.is_true(rawequal(v, dp.VirtualDevice()))
  end)

  it("reads fields by name and prints the inline form", function()
    local t = dp.Target("cuda -host=llvm")
    local v = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0, target = t, memory_scope = "global"}
    assert.equal(2, v.device_type)
    assert.equal("cuda", v.device_type_name)
    assert.equal(0, v.virtual_device_id)
    assert.is_true(rawequal(t, v.target))
    assert.equal("global", v.memory_scope)
    assert.equal('VirtualDevice(device_type=cuda, virtual_device_id=0, target="cuda -host=llvm", memory_scope="global")',
                 tostring(v))
    assert.equal('VirtualDevice(memory_scope="global")', tostring(dp.VirtualDevice{memory_scope = "global"}))
    assert.equal('VirtualDevice(device_type=cpu, target="llvm -host=\'llvm -mcpu=a\'")',
                 tostring(dp.VirtualDevice{target = "llvm -host='llvm -mcpu=a'"}))
  end)

  it("is interned: equal fields give rawequal values", function()
    local a = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0, target = cuda, memory_scope = "global"}
    local b = dp.VirtualDevice{device_type = 2, virtual_device_id = 0, target = dp.Target("cuda"), memory_scope = "global"}
    local c = dp.VirtualDevice{virtual_device_id = 0, target = "cuda", memory_scope = "global"}
    assert.is_true(rawequal(a, b))
    assert.is_true(rawequal(a, c))
    assert.is_false(rawequal(a, dp.VirtualDevice{device_type = "cuda", virtual_device_id = 1, target = cuda, memory_scope = "global"}))
  end)

  it("takes the device type from the target, and rejects one that disagrees", function()
    assert.equal(1, dp.VirtualDevice{target = llvm}.device_type)
    local msg, e = err_of(dp.VirtualDevice, {device_type = "cuda", target = llvm})
    assert.truthy(msg:find("device type cuda disagrees with target 'llvm' (device type cpu)", 1, true))
    assert.equal("value", e.code)
    assert.truthy(err_of(dp.VirtualDevice, {device_type = "gpu9"}):find("unknown device type 'gpu9'", 1, true))
    assert.truthy(err_of(dp.VirtualDevice, {virtual_device_id = -2}):find("-1 (unconstrained) or >= 0", 1, true))
    -- an unknown key is API misuse: an argument error naming it, the closest key and all of them
    local msg, e2 = err_of(dp.VirtualDevice, {device = "cpu"})
    assert.equal("string", type(e2))
    assert.truthy(msg:find("bad argument #1 to 'VirtualDevice' (unknown key 'device'; known keys: device_type, "
      .. "virtual_device_id, target, memory_scope)", 1, true), msg)
    assert.truthy(err_of(dp.VirtualDevice, {devce_type = "cpu"}):find("bad argument #1 to 'VirtualDevice' (unknown key "
      .. "'devce_type'; did you mean 'device_type'? known keys: device_type, virtual_device_id, target, memory_scope)",
      1, true))
    assert.truthy(err_of(dp.VirtualDevice, {"cpu"}):find("unknown key '1'", 1, true))
    assert.truthy(err_of(dp.VirtualDevice, {memory_scope = 3}):find("memory_scope must be a string", 1, true))
  end)

  it("knows fully constrained and fully unconstrained", function()
    assert.is_true(dp.VirtualDevice{target = llvm, virtual_device_id = 0, memory_scope = "global"}:is_fully_constrained())
    assert.is_false(dp.VirtualDevice{target = llvm, virtual_device_id = 0}:is_fully_constrained())
    assert.is_false(dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0, memory_scope = "g"}:is_fully_constrained())
    assert.is_false(dp.VirtualDevice{memory_scope = "g"}:is_fully_unconstrained())
    assert.is_false(dp.VirtualDevice{virtual_device_id = 0}:is_fully_unconstrained())
    assert.is_false(dp.VirtualDevice{device_type = "cpu"}:is_fully_unconstrained())
  end)

  describe("join and default (seed 000)", function()
    local VD = dp.VirtualDevice
    it("Join((cpu, -1, llvm, \"\"), (-, 3, -, \"global\")) = (cpu, 3, llvm, \"global\")", function()
      local r = VD.join(VD{device_type = "cpu", target = llvm}, VD{virtual_device_id = 3, memory_scope = "global"})
      assert.is_true(rawequal(r, VD{device_type = "cpu", virtual_device_id = 3, target = llvm, memory_scope = "global"}))
    end)
    it("the seed's second Join example is a slip: by the rules it is (cpu, 3, llvm, \"local\")", function()
      local r = VD.join(VD{device_type = "cpu", target = llvm}, VD{virtual_device_id = 3, memory_scope = "local"})
      assert.is_not_nil(r)
      assert.is_true(rawequal(r, VD{device_type = "cpu", virtual_device_id = 3, target = llvm, memory_scope = "local"}))
    end)
    it("Join is nil when a constrained field disagrees", function()
      local a = VD{device_type = "cpu", virtual_device_id = 0, target = llvm, memory_scope = "global"}
      assert.is_nil(VD.join(a, VD{device_type = "cuda"}))
      assert.is_nil(VD.join(a, VD{virtual_device_id = 1}))
      assert.is_nil(VD.join(a, VD{target = dp.Target("c")}))
      assert.is_nil(VD.join(a, VD{memory_scope = "local"}))
      assert.is_true(rawequal(a, VD.join(a, VD{})))
      assert.is_true(rawequal(a, VD.join(VD{}, a)))
      assert.is_true(rawequal(a, a:join(a)))
    end)
    it("targets built separately are one target and join", function()
      local a = VD{target = dp.Target("cuda")}
      local b = VD{target = dp.Target("cuda"), memory_scope = "global"}
      assert.is_not_nil(VD.join(a, b))
    end)
    it("Default((cpu, -1, llvm, \"local\"), (cpu, 3, -, \"global\")) = (cpu, 3, llvm, \"local\")", function()
      local r = VD.default(VD{device_type = "cpu", target = llvm, memory_scope = "local"},
                           VD{device_type = "cpu", virtual_device_id = 3, memory_scope = "global"})
      assert.is_true(rawequal(r, VD{device_type = "cpu", virtual_device_id = 3, target = llvm, memory_scope = "local"}))
    end)
    it("Default takes the rhs target only when it agrees with the defaulted device type", function()
      local r = VD.default(VD{device_type = "cpu"}, VD{target = cuda, virtual_device_id = 1})
      assert.is_true(rawequal(r, VD{device_type = "cpu", virtual_device_id = 1}))
      local s = VD.default(VD{memory_scope = "x"}, VD{target = cuda})
      assert.is_true(rawequal(s, VD{target = cuda, memory_scope = "x"}))
      local u = VD.default(VD{device_type = "cuda"}, VD{target = cuda})
      assert.is_true(rawequal(u, VD{target = cuda}))
    end)
    it("Default always gives a virtual device", function()
      local a = VD{device_type = "cpu", virtual_device_id = 0, target = llvm, memory_scope = "g"}
      assert.is_true(rawequal(a, VD.default(a, VD{device_type = "cuda", virtual_device_id = 5, target = cuda, memory_scope = "h"})))
      assert.is_true(rawequal(a, VD.default(VD{}, a)))
    end)
  end)

  describe("virtual_device_id (seed 004): -1 alone is unconstrained, 0 is an ordinary id", function()
    local VD = dp.VirtualDevice
    it("Join of id 1 and id 0 has no result", function()
      assert.is_nil(VD.join(VD{device_type = "cuda", virtual_device_id = 1}, VD{device_type = "cuda", virtual_device_id = 0}))
    end)
    it("id 0 is significant: it constrains and is kept by join and default", function()
      local zero = VD{device_type = "cuda", virtual_device_id = 0}
      assert.equal(0, VD.join(zero, VD{device_type = "cuda"}).virtual_device_id)
      assert.equal(0, VD.default(VD{device_type = "cuda"}, zero).virtual_device_id)
      assert.equal(0, VD.default(zero, VD{virtual_device_id = 1}).virtual_device_id)
      assert.is_false(VD{virtual_device_id = 0}:is_fully_unconstrained())
      assert.is_true(VD{target = cuda, virtual_device_id = 0, memory_scope = "global"}:is_fully_constrained())
    end)
    it("ids distinguish devices of one type and one target", function()
      local a = VD{target = cuda, virtual_device_id = 0}
      local b = VD{target = cuda, virtual_device_id = 1}
      assert.is_false(rawequal(a, b))
      assert.is_nil(VD.join(a, b))
    end)
  end)

  describe("target kinds registered by a user (a BYOC toolchain)", function()
    local t = require "devplan.testing"
    local kind = dp.register_target_kind("ccompiler", {device_type = "ext_dev", options = {
      {name = "opt_level", type = "int", default = 2},
      {name = "fast_math", type = "bool"},
      {name = "passes", type = "list", default = {"fold", "fuse"}},
      {name = "abi", type = "string", default = "eabi"},
    }})

    it("describes the kind as dp.target_kinds() lists it", function()
      assert.equal("ccompiler", kind.name)
      assert.equal("ext_dev", kind.device_type_name)
      assert.is_true(kind.registered)
      assert.same({"ccompiler"}, kind.keys)
      assert.equal("int", kind.options.opt_level)
      assert.equal("2", kind.defaults.opt_level)
      assert.equal("fold,fuse", kind.defaults.passes)
      local listed
      for _, k in ipairs(dp.target_kinds()) do if k.name == "ccompiler" then listed = k end end
      assert.same(kind, listed)
      for _, k in ipairs(dp.target_kinds()) do if k.name == "cuda" then assert.is_false(k.registered) end end
    end)

    it("builds targets as any kind: text, tables, defaults, typed options, hosts", function()
      local c = dp.Target("ccompiler -fast_math -opt_level=3")
      assert.equal("ccompiler", c.kind)
      assert.equal("ext_dev", c.device_type_name)
      assert.same({opt_level = 3, fast_math = true, passes = {"fold", "fuse"}, abi = "eabi", keys = {"ccompiler"}},
                  c.options)
      assert.is_true(rawequal(c, dp.Target{kind = "ccompiler", fast_math = true, opt_level = 3}))
      assert.is_true(rawequal(c, dp.Target(tostring(c))))
      assert.is_true(rawequal(dp.Target("ccompiler"):with_host("llvm").host, dp.Target("llvm")))
      assert.equal("ccompiler -host=llvm", dp.astext(dp.parse([[def @main(%x: float32) {
        on_device(%x, virtual_device=VirtualDevice(target="ccompiler -host=llvm")) }]]))
        :match('target="([^"]*)"'))
      local msg = t.error_of(dp.Target, "ccompiler -opt_level=high")
      assert.truthy(msg:find("-opt_level of kind ccompiler expects an integer", 1, true), msg)
      msg = t.error_of(dp.Target, "ccompiler -speed=3")
      assert.truthy(msg:find("unknown option '-speed' for target kind 'ccompiler'", 1, true), msg)
      msg = t.error_of(dp.Target, "ccompilr")
      assert.truthy(msg:find("did you mean 'ccompiler'?", 1, true), msg)
    end)

    it("serves a configuration, and VirtualDevice text reads it back", function()
      local cfg = dp.CompilationConfig{targets = {"llvm", "ccompiler"}, default_device_type = "cpu"}
      local vd = cfg:canonical(dp.VirtualDevice{target = "ccompiler"})
      assert.equal("ccompiler", vd.target.kind)
      local m = dp.parse([[def @main(%x: Tensor[(4), float32]) {
        %0 = add(%x, %x); %1 = on_device(%0, virtual_device=VirtualDevice(device_type=ext_dev, target="ccompiler")); exp(%1) }]])
      local planned = dp.passes.PlanDevices(cfg)(m)
      local parted = dp.passes.PartitionByVirtualDevice{config = cfg}(planned)
      assert.equal("ccompiler", parted:get("main_ccompiler_0").virtual_device.target.kind)
      assert.is_true(dp.structural_equal(dp.parse(tostring(parted)), parted))
    end)

    it("rejects a name already known, a bad name, device type, option or default", function()
      local function msg_of(name, spec) return (t.error_of(dp.register_target_kind, name, spec)) end
      assert.truthy(msg_of("ccompiler", {device_type = "cpu"}):find("registered already", 1, true))
      assert.truthy(msg_of("cuda", {device_type = "cpu"}):find("built in already", 1, true))
      assert.truthy(msg_of("my npu", {device_type = "cpu"}):find("malformed target kind name", 1, true))
      assert.truthy(msg_of("npu", {}):find("device_type is needed", 1, true))
      assert.truthy(msg_of("npu", {device_type = "quantum"}):find("unknown device type", 1, true))
      assert.truthy(msg_of("npu", {device_type = "ext_dev", options = {{name = "n", type = "float"}}})
        :find('needs a type: "string", "int", "bool" or "list"', 1, true))
      assert.truthy(msg_of("npu", {device_type = "ext_dev", options = {{name = "n", type = "int", default = "x"}}})
        :find("the default of option 'n' must be an integer, got a string", 1, true))
      assert.truthy(msg_of("npu", {device_type = "ext_dev", options = {{name = "keys", type = "list"}}})
        :find("one every kind has", 1, true))
      assert.has_error(function() dp.register_target_kind("npu", {device_type = "ext_dev", colour = 1}) end)
      assert.is_nil(select(2, pcall(dp.Target, "npu")) and nil) -- nothing registered by the failures
      assert.is_false((pcall(dp.Target, "npu")))
    end)

    it("running out of memory while registering is a memory error, and nothing half registered", function()
      local n = 0
      repeat
        n = n + 1
        local name = "oom_kind_" .. n
        dp.debug.fail_alloc(n)
        local ok, err = pcall(dp.register_target_kind, name, {device_type = "ext_dev",
          options = {{name = "a", type = "int", default = 1}, {name = "b", type = "list", default = {"x"}}}})
        dp.debug.fail_alloc(0)
        if not ok then
          assert.equal("memory", err.code, tostring(err))
          assert.is_false((pcall(dp.Target, name)), "half registered: " .. name)
        end
      until ok or n > 500
      assert.is_true(n > 3 and n < 500, n .. " allocations")
    end)

    it("is used from the command line: --load registers it, --target names it", function()
      local kinds = t.temp_file([[
local dp = require "devplan"
dp.register_target_kind("cli_npu", {device_type = "ext_dev", options = {{name = "tiles", type = "int", default = 4}}})
]], ".lua")
      local model = t.temp_file([[def @main(%x: Tensor[(4), float32]) {
  %0 = add(%x, %x); %1 = on_device(%0, virtual_device=VirtualDevice(device_type=ext_dev)); exp(%1) }]])
      local code, out, err = t.run_devplan("opt " .. model .. " --load " .. kinds .. " --target llvm --target 'cli_npu -tiles=8'"
        .. " --default cpu -p plan_devices,partition")
      assert.equal(0, code, err)
      assert.truthy(out:find("def @main_cli_npu_0(", 1, true), out)
      assert.truthy(out:find('target="cli_npu -tiles=8 -host=llvm"', 1, true), out)
      code, _, err = t.run_devplan("opt " .. model .. " --target cli_npu -p plan_devices")
      assert.equal(1, code)
      assert.truthy(err:find("unknown target kind 'cli_npu'", 1, true), err)
      t.remove_temp_files()
    end)
  end)
end)
