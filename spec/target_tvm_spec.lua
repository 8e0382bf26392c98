-- What TVM's own target and configuration tests check, in devplan's terms:
-- tests/python/target/test_target_target.py (parsing, printing, host
-- handling, with_host, kind defaults, errors) and
-- tests/cpp/target/compilation_config_test.cc (CompilationConfig).
-- TVM compares targets structurally; devplan interns them, so "equal" is
-- rawequal here.
local dp = require "devplan"
local testing = require "devplan.testing"
local VD = dp.VirtualDevice

local err_of = testing.error_of

local function set(list)
  local s = {}
  for _, x in ipairs(list or {}) do s[x] = true end
  return s
end

describe("TVM's target tests", function()
  it("test_all_targets_device_type_verify: each kind's device type is the device type of its name", function()
    local kinds = dp.target_kinds()
    assert.is_true(#kinds >= 11)
    for _, k in ipairs(kinds) do
      local t = dp.Target(k.name)
      assert.equal(k.device_type, t.device_type, k.name)
      assert.equal(t.device_type, VD{device_type = k.name}.device_type, k.name)
    end
  end)

  it("test_target_string_parse: kind, options, keys from the kind, lists", function()
    local t = dp.Target("cuda -model=unknown -libs=cublas,cudnn")
    assert.equal("cuda", t.kind)
    assert.equal("unknown", t.options.model)
    assert.same(set{"cuda", "gpu"}, set(t.options.keys))
    assert.same(set{"cublas", "cudnn"}, set(t.options.libs))
    assert.equal(tostring(t), tostring(dp.Target("cuda -libs=cublas,cudnn -model=unknown")))
  end)

  it("test_target_string_with_spaces: quoted values keep their blanks and print back", function()
    local t = dp.Target("vulkan -device_name='Name of GPU with spaces' -device_type=discrete")
    assert.equal("Name of GPU with spaces", t.options.device_name)
    assert.equal("discrete", t.options.device_type)
    local again = dp.Target(tostring(t))
    assert.is_true(rawequal(t, again))
    assert.equal("Name of GPU with spaces", again.options.device_name)
  end)

  it("test_target_llvm_options: a quoted list option", function()
    local t = dp.Target("llvm -cl-opt='-unroll-threshold:uint=100,-unroll-count:uint=3'")
    assert.same({"-unroll-threshold:uint=100", "-unroll-count:uint=3"}, t.options["cl-opt"])
    assert.is_true(rawequal(t, dp.Target(tostring(t))))
  end)

  it("integer options are integers (-vector-width=256)", function()
    local t = dp.Target("llvm -vector-width=256")
    assert.equal(256, t.options["vector-width"])
    assert.equal("integer", math.type(t.options["vector-width"]))
    assert.truthy(err_of(dp.Target, "llvm -vector-width=256.5"):find("expects an integer", 1, true))
  end)

  it("test_target_config: a table and its JSON give the same target", function()
    local config = {kind = "llvm", keys = {"arm_cpu", "cpu"}, device = "arm_cpu", libs = {"cblas"},
                    ["mfloat-abi"] = "hard", mattr = {"+neon", "-avx512f"}}
    local json = '{"kind": "llvm", "keys": ["arm_cpu", "cpu"], "device": "arm_cpu", "libs": ["cblas"], '
      .. '"mfloat-abi": "hard", "mattr": ["+neon", "-avx512f"]}'
    for _, form in ipairs{config, json} do
      local t = dp.Target(form)
      assert.equal("llvm", t.kind)
      assert.same({"arm_cpu", "cpu"}, t.options.keys)
      assert.equal("arm_cpu", t.options.device)
      assert.same({"cblas"}, t.options.libs)
      assert.equal("hard", t.options["mfloat-abi"])
      assert.same({"+neon", "-avx512f"}, t.options.mattr)
    end
    assert.is_true(rawequal(dp.Target(config), dp.Target(json)))
    assert.is_true(rawequal(dp.Target(config),
      dp.Target("llvm -keys=arm_cpu,cpu -device=arm_cpu -libs=cblas -mfloat-abi=hard -mattr=+neon,-avx512f")))
  end)

  it("test_config_map: a map is no option value", function()
    assert.truthy(err_of(dp.Target, {kind = "llvm", libs = {a = "b", c = "d"}})
      :find("target option -libs of kind llvm: a table with keys is not an option value", 1, true))
    assert.truthy(err_of(dp.Target, '{"kind": "llvm", "libs": {"a": "b", "c": "d"}}')
      :find("an object is not an option value", 1, true))
  end)

  it("keys: the device's name comes with the kind's keys, given keys replace them", function()
    assert.same({"mali", "opencl", "gpu"}, dp.Target("opencl -device=mali").options.keys)
    assert.same({"arm_cpu"}, dp.Target("llvm -keys=arm_cpu").options.keys)
    assert.same({"x", "arm_cpu"}, dp.Target("llvm -keys=x -device=arm_cpu").options.keys)
    assert.same({"cpu"}, dp.Target("llvm -keys=cpu,cpu").options.keys)
    assert.is_nil(dp.Target("ext_dev").options.keys)
    for _, s in ipairs{"opencl -device=mali", "llvm -keys=arm_cpu", "llvm -keys=x -device=arm_cpu"} do
      assert.is_true(rawequal(dp.Target(s), dp.Target(tostring(dp.Target(s)))), s)
    end
  end)

  it("the kinds' defaults (TVM's add_attr_option defaults and target parsers, no device to query)", function()
    local cuda = dp.Target("cuda").options
    assert.equal(1024, cuda.max_num_threads)
    assert.equal(32, cuda.thread_warp_size)
    assert.equal("sm_50", cuda.arch)
    local nvptx = dp.Target("nvptx").options
    assert.equal("nvptx64-nvidia-cuda", nvptx.mtriple)
    assert.equal("sm_20", nvptx.mcpu)
    local rocm = dp.Target("rocm").options
    assert.equal("gfx900", rocm.mcpu)
    assert.equal(64, rocm.thread_warp_size)
    assert.equal(256, dp.Target("opencl").options.max_num_threads)
    assert.equal(31, dp.Target("metal").options.max_function_args)
    assert.is_true(dp.Target("vulkan").options.supports_float32)
    assert.is_nil(dp.Target("vulkan").options.supports_float16)
    assert.equal(256, dp.Target("webgpu").options.max_num_threads)
    assert.same({"hexagon", "cpu"}, dp.Target("hexagon").options.keys)
    -- every default the schema lists is there
    for _, k in ipairs(dp.target_kinds()) do
      local t = dp.Target(k.name)
      for name in pairs(t.options) do assert.is_not_nil(k.options[name], k.name .. " " .. name) end
    end
  end)

  it("from_device is read and dropped (devplan queries no device); target_device_type sets the device type", function()
    assert.is_true(rawequal(dp.Target("cuda -from_device=0"), dp.Target("cuda")))
    local t = dp.Target("llvm -target_device_type=2")
    assert.equal(2, t.device_type)
    assert.equal(2, VD{target = t}.device_type)
    assert.truthy(err_of(VD, {device_type = "cpu", target = t}):find("disagrees", 1, true))
  end)

  it("test_target_host_single_dict / string: the host in the target", function()
    local a = dp.Target{kind = "llvm", host = "llvm -mcpu=skylake"}
    assert.equal("llvm", a.kind)
    assert.equal("llvm", a.host.kind)
    local b = dp.Target("cuda --host llvm")
    assert.equal("cuda", b.kind)
    assert.equal("llvm", b.host.kind)
    assert.is_true(rawequal(b, dp.Target("cuda -host=llvm")))
    assert.is_true(rawequal(b, dp.Target("cuda --host=llvm")))
    assert.is_true(rawequal(b, dp.Target('{"kind": "cuda", "host": {"kind": "llvm"}}')))
    assert.is_true(rawequal(b, dp.Target("cuda -host='{\"kind\": \"llvm\"}'")))
  end)

  it("test_target_host_merge: giving a target its own host again changes nothing", function()
    local t = dp.Target("cuda --host llvm")
    assert.is_true(rawequal(t, t:with_host(t.host)))
    assert.is_true(rawequal(t, t:with_host(dp.Target("llvm"))))
    assert.is_true(rawequal(t, t:with_host("llvm")))
  end)

  it("test_target_with_host", function()
    local t = dp.Target("cuda"):with_host(dp.Target("llvm"))
    assert.equal("cuda", t.kind)
    assert.equal("llvm", t.host.kind)
    local u = t:with_host("c -mcpu=cortex-a57")
    assert.equal("c", u.host.kind)
    assert.equal("cortex-a57", u.host.options.mcpu)
  end)

  it("test_target_attr_bool_value: True, true, False, false, 1, 0 and a bare flag", function()
    for _, v in ipairs{"True", "true", "TRUE", "1"} do
      assert.is_true(dp.Target("vulkan --supports_float16=" .. v).options.supports_float16, v)
    end
    for _, v in ipairs{"False", "false", "0"} do
      assert.is_false(dp.Target("vulkan --supports_float16=" .. v).options.supports_float16, v)
    end
    assert.is_true(dp.Target("vulkan -supports_float16").options.supports_float16)
    assert.is_true(dp.Target("llvm -fast-math -mcpu=x").options["fast-math"])
  end)

  it("the -key value form", function()
    local t = dp.Target("llvm -mcpu arm64 -num-cores 4")
    assert.equal("arm64", t.options.mcpu)
    assert.equal(4, t.options["num-cores"])
    assert.is_true(rawequal(t, dp.Target("llvm -mcpu=arm64 -num-cores=4")))
  end)

  it("test_target_tag_0: a tag is its whole configuration", function()
    local t = dp.Target("nvidia/geforce-rtx-2080-ti")
    assert.equal("cuda", t.kind)
    assert.equal("sm_75", t.options.arch)
    assert.equal(49152, t.options.max_shared_memory_per_block)
    assert.equal(1024, t.options.max_threads_per_block)
    assert.equal(32, t.options.thread_warp_size)
    assert.equal(65536, t.options.registers_per_block)
    assert.is_true(rawequal(dp.Target("nvidia/tesla-p40"), dp.Target("cuda -arch=sm_61 "
      .. "-max_shared_memory_per_block=49152 -max_threads_per_block=1024 -registers_per_block=65536")))
  end)

  it("test_target_host_tags: a tag with its host, and a tag as a host", function()
    local nano = dp.Target("nvidia/jetson-nano")
    assert.equal("sm_53", nano.options.arch)
    assert.equal(32768, nano.options.registers_per_block)
    assert.equal("llvm", nano.host.kind)
    assert.equal("aarch64-linux-gnu", nano.host.options.mtriple)
    assert.equal("cortex-a57", nano.host.options.mcpu)
    assert.equal(4, nano.host.options["num-cores"])
    local t = nano:with_host("nvidia/geforce-rtx-2080-ti")
    assert.equal("cuda", t.host.kind)
    assert.equal("sm_75", t.host.options.arch)
    assert.equal("cuda", dp.Target("llvm --host nvidia/tesla-p40").host.kind)
    -- devplan's targets are never more than two deep
    assert.truthy(err_of(dp.Target, "cuda --host nvidia/jetson-nano")
      :find("the target tag 'nvidia/jetson-nano' has a host, and a host target cannot have a host of its own", 1, true))
  end)

  it("an unknown tag: the closest tag, or what to write instead", function()
    assert.truthy(err_of(dp.Target, "nvidia/tesla-p41"):find("unknown target tag 'nvidia/tesla-p41'; did you mean 'nvidia/tesla-p40'?", 1, true))
    assert.truthy(err_of(dp.Target, "acme/npu-9"):find("unknown target tag 'acme/npu-9' (devplan knows TVM's CUDA tags", 1, true))
  end)

  it("the same content as a string, a table and JSON is one target, printed canonically", function()
    local forms = {
      "rocm -mcpu=gfx908 -mattr=+xnack -max_num_threads=1024 --host='llvm -mcpu=znver2'",
      {kind = "rocm", mcpu = "gfx908", mattr = {"+xnack"}, max_num_threads = 1024, host = {kind = "llvm", mcpu = "znver2"}},
      '{"kind": "rocm", "mcpu": "gfx908", "mattr": ["+xnack"], "max_num_threads": 1024, "host": "llvm -mcpu=znver2"}',
    }
    local t = dp.Target(forms[1])
    for i = 2, #forms do assert.is_true(rawequal(t, dp.Target(forms[i])), i) end
    assert.equal("rocm -keys=rocm,gpu -mattr=+xnack -max_num_threads=1024 -max_shared_memory_per_block=65536"
      .. " -max_threads_per_block=256 -mcpu=gfx908 -mtriple=amdgcn-amd-amdhsa-hcc -thread_warp_size=64"
      .. " -host='llvm -keys=cpu -mcpu=znver2'", tostring(t))
    assert.is_true(rawequal(t, dp.Target(tostring(t))))
    -- TVM's Target.export() JSON (tag "" and all) reads back too
    local exported = '{"kind": "cuda", "tag": "", "keys": ["cuda", "gpu"], "arch": "sm_50", '
      .. '"max_num_threads": 1024, "thread_warp_size": 32, "host": {"kind": "llvm", "tag": "", "keys": ["cpu"]}}'
    assert.is_true(rawequal(dp.Target(exported), dp.Target("cuda -host=llvm")))
  end)

  it("every declared option of every kind reads back from its printed form", function()
    local values = {int = "7", bool = "true", string = "v", list = "a,b"}
    for _, k in ipairs(dp.target_kinds()) do
      for name, type in pairs(k.options) do
        if name ~= "from_device" and name ~= "target_device_type" then
          local v = values[type]
          if name == "arch" or (name == "mcpu" and k.name == "nvptx") then v = "sm_86" end
          if name == "mcpu" and k.name == "rocm" then v = "gfx90a" end
          if name == "mtriple" and k.name == "nvptx" then v = "nvptx64-nvidia-cuda" end
          if name == "mtriple" and k.name == "rocm" then v = "amdgcn-amd-amdhsa-hcc" end
          local t = dp.Target(k.name .. " -" .. name .. "=" .. v)
          assert.is_true(rawequal(t, dp.Target(tostring(t))), k.name .. " -" .. name)
          assert.is_not_nil(t.options[name], k.name .. " -" .. name)
        end
      end
    end
  end)
end)

describe("TVM's CompilationConfig tests", function()
  local cpu = dp.Target("llvm -mcpu arm64")
  local cuda = dp.Target("nvidia/tesla-p40") -- TVM's TestCudaTarget
  local llvm = dp.Target("llvm")

  it("Constructor_Homogeneous_DefaultHost: the host is a default llvm, not a primitive target", function()
    local c = dp.CompilationConfig{targets = {cuda}}
    assert.equal(1, #c.primitive_targets)
    assert.is_true(rawequal(c.primitive_targets[1], cuda:with_host(llvm)))
    assert.is_true(rawequal(c.default_virtual_device, VD{device_type = "cuda", virtual_device_id = 0, target = cuda:with_host(llvm)}))
    assert.is_true(rawequal(c.host_virtual_device, VD{device_type = "cpu", virtual_device_id = 0, target = llvm}))
  end)

  it("Constructor_Homogeneous_InnerHost: the target's host is the host", function()
    local c = dp.CompilationConfig{targets = {cuda:with_host(cpu)}}
    assert.is_true(rawequal(c.host_target, cpu))
    assert.is_true(rawequal(c.primitive_targets[1], cuda:with_host(cpu)))
  end)

  it("Constructor_Homogeneous_CPUHost: a cpu target hosts itself", function()
    local c = dp.CompilationConfig{targets = {cpu}}
    assert.is_true(rawequal(c.default_virtual_device, VD{device_type = "cpu", virtual_device_id = 0, target = cpu:with_host(cpu)}))
    assert.is_true(rawequal(c.host_virtual_device, VD{device_type = "cpu", virtual_device_id = 0, target = cpu}))
  end)

  it("Constructor_Heterogeneous_FallbackCPUHost: the default device type given", function()
    local c = dp.CompilationConfig{targets = {cpu, cuda}, default_device_type = "cuda"}
    assert.is_true(rawequal(c.default_virtual_device, VD{device_type = "cuda", virtual_device_id = 0, target = cuda:with_host(cpu)}))
    assert.is_true(rawequal(c.host_virtual_device, VD{device_type = "cpu", virtual_device_id = 0, target = cpu}))
  end)

  it("Constructor_InvalidAttribute, NoMatchingPrimitiveTarget, DefaultNoMatchingPrimitiveTarget", function()
    assert.truthy(err_of(dp.CompilationConfig, {targets = {cuda}, default_device_type = 0}):find("invalid default device type", 1, true))
    assert.truthy(err_of(dp.CompilationConfig, {targets = {cuda}, default_device_type = "metal"}):find("no target for the default device type metal", 1, true))
    assert.truthy(err_of(dp.CompilationConfig, {targets = {cuda, "ext_dev"}}):find("no target for the default device type cpu", 1, true))
  end)

  it("Constructor_Idempotent: built again from its primitive targets, the same", function()
    local c = dp.CompilationConfig{targets = {cpu, cuda}}
    local again = dp.CompilationConfig{targets = c.primitive_targets}
    for i, t in ipairs(c.primitive_targets) do assert.is_true(rawequal(t, again.primitive_targets[i])) end
    assert.is_true(rawequal(c.host_target, again.host_target))
  end)

  it("FindPrimitiveTargetForDeviceOrFail, FindPrimitiveTargetForKind, CanonicalVirtualDevice", function()
    local c = dp.CompilationConfig{targets = {cpu, cuda}}
    assert.is_true(rawequal(c:canonical(VD{device_type = "cpu"}).target, cpu:with_host(cpu)))
    assert.truthy(err_of(c.canonical, c, VD{device_type = "metal"}):find("no target for device type metal", 1, true))
    local found
    for _, t in ipairs(c.primitive_targets) do if t.kind == "cuda" then found = t end end
    assert.is_true(rawequal(found, cuda:with_host(cpu)))
    -- a target built apart is replaced by the configuration's own
    local other = dp.Target("nvidia/tesla-p40"):with_host(dp.Target("llvm"))
    assert.is_true(rawequal(c:canonical(VD{device_type = "cuda", target = other}).target, found))
    local v = c:canonical(VD{device_type = "cuda"})
    assert.is_true(rawequal(v, c:canonical(VD{device_type = "cuda"})))
    -- CanonicalVirtualDevice_NoDevice: nothing to fill in, the same object
    local free = VD{virtual_device_id = 3, memory_scope = "local"}
    assert.is_true(rawequal(c:canonical(free), free))
    assert.is_true(rawequal(c:canonical(VD{}), VD{}))
  end)
end)

describe("the command line's --target", function()
  local EXE = os.getenv("DEVPLAN_EXE") or "bin/devplan"
  local function run(args)
    local f = io.popen(EXE .. " " .. args .. " 2>&1; echo \"rc=$?\"")
    local out = f:read("a")
    f:close()
    return out
  end

  it("takes tvmc's comma-separated targets, and says what is wrong", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write('#[version = "0.0.5"]\ndef @main(%a: Tensor[(5, 7), float32]) {\n  negative(%a)\n}\n')
    f:close()
    local out = run("plan " .. path .. " --target 'llvm, cuda' --default cuda")
    assert.truthy(out:find('target="cuda -host=llvm"', 1, true), out)
    assert.truthy(out:find("rc=0", 1, true), out)
    assert.equal(out, run("plan " .. path .. " --target llvm --target cuda --default cuda"))
    out = run("plan " .. path .. " --target 'llvm, cdua'")
    assert.truthy(out:find("unknown target kind 'cdua'; did you mean 'cuda'?", 1, true), out)
    assert.truthy(out:find("rc=1", 1, true), out)
    out = run("plan " .. path .. " --target cuda --default cpu")
    assert.truthy(out:find("no target for the default device type cpu", 1, true), out)
    assert.truthy(out:find("rc=1", 1, true), out)
    os.remove(path)
  end)
end)
