-- CompilationConfig: rules 1-6 of planner.md, and its errors.
local dp = require "devplan"
local testing = require "devplan.testing"
local VD = dp.VirtualDevice

local err_of = testing.error_of

local function config(t) return dp.CompilationConfig(t) end

describe("CompilationConfig", function()
  describe("rule 1: the host target", function()
    it("is the host given explicitly, without a host of its own", function()
      local c = config{targets = {"cuda -host=c"}, host = dp.Target("llvm -mcpu=skylake")}
      assert.is_true(rawequal(dp.Target("llvm -mcpu=skylake"), c.host_target))
      assert.is_true(rawequal(dp.Target("llvm"), config{targets = {"cuda"}, host = "llvm -host=c"}.host_target))
    end)
    it("else the host of the first target that has one", function()
      local c = config{targets = {"cuda", "opencl -host='llvm -mcpu=a'", "vulkan -host=c"},
                       default_device_type = "cuda"}
      assert.is_true(rawequal(dp.Target("llvm -mcpu=a"), c.host_target))
    end)
    it("else the first cpu target, without its host", function()
      local c = config{targets = {"cuda", "c -mcpu=x -host=llvm", "llvm"}, host = nil}
      assert.is_true(rawequal(dp.Target("llvm"), c.host_target)) -- a host given by a target comes first
      c = config{targets = {"cuda", "c -mcpu=x", "llvm"}}
      assert.is_true(rawequal(dp.Target("c -mcpu=x"), c.host_target))
    end)
    it("else the first hexagon target", function()
      local c = config{targets = {"cuda", "hexagon -mcpu=v68"}, default_device_type = "cuda"}
      assert.is_true(rawequal(dp.Target("hexagon -mcpu=v68"), c.host_target))
    end)
    it("else a default llvm target", function()
      local c = config{targets = {"cuda", "opencl"}, default_device_type = "cuda"}
      assert.is_true(rawequal(dp.Target("llvm"), c.host_target))
      assert.equal(2, #c.primitive_targets) -- the host is not a primitive target
    end)
  end)

  it("rule 2: the host virtual device is (host device type, 0, host target)", function()
    local c = config{targets = {"cuda", "hexagon"}, default_device_type = "hexagon"}
    local h = c.host_virtual_device
    assert.is_true(rawequal(h, VD{device_type = "hexagon", virtual_device_id = 0, target = "hexagon"}))
    assert.equal("", h.memory_scope)
  end)

  describe("rule 3: primitive targets", function()
    it("are the given targets with their host replaced by the host target", function()
      local c = config{targets = {"llvm -mcpu=a", "cuda -host=c"}, host = "llvm"}
      local p = c.primitive_targets
      assert.equal(2, #p)
      assert.is_true(rawequal(dp.Target("llvm -mcpu=a -host=llvm"), p[1]))
      assert.is_true(rawequal(dp.Target("cuda -host=llvm"), p[2]))
      assert.is_true(rawequal(p[2].host, c.host_target))
    end)
    it("the same target twice is an error naming it; two of one kind are two devices", function()
      local msg, e = err_of(config, {targets = {"cuda -arch=sm_80", "llvm", "cuda -arch=sm_80 -host=llvm"}})
      assert.truthy(msg:find("the target 'cuda -arch=sm_80' is given twice (targets 1 and 3)", 1, true), msg)
      assert.equal("value", e.code)
      assert.equal(3, #config{targets = {"cuda -arch=sm_80", "llvm", "cuda"}}.primitive_targets)
    end)
    it("targets of one device type but different kinds are allowed", function()
      local c = config{targets = {"llvm", "c"}}
      assert.equal(2, #c.primitive_targets)
    end)
  end)

  describe("rule 4: the default device type", function()
    it("is the one given", function()
      assert.equal(2, config{targets = {"llvm", "cuda"}, default_device_type = "cuda"}.default_device_type)
      assert.equal(2, config{targets = {"llvm", "cuda"}, default_device_type = 2}.default_device_type)
    end)
    it("else the device type all targets share", function()
      assert.equal(2, config{targets = {"cuda", "nvptx"}}.default_device_type)
    end)
    it("else cpu", function()
      local c = config{targets = {"cuda", "llvm"}}
      assert.equal(1, c.default_device_type)
      assert.is_true(rawequal(c.default_virtual_device.target, c.primitive_targets[2]))
    end)
    it("served by no target is an error, as in TVM: the host does not stand in", function()
      -- TVM's CompilationConfig.Constructor_DefaultNoMatchingPrimitiveTarget
      local msg, e = err_of(config, {targets = {"cuda", "ext_dev"}})
      assert.truthy(msg:find("no target for the default device type cpu (targets: cuda -host=llvm, "
                             .. "ext_dev -host=llvm; host: llvm)", 1, true), msg)
      assert.equal("value", e.code)
      assert.truthy(err_of(config, {targets = {"opencl", "cuda"}}):find("default device type cpu", 1, true))
      -- Constructor_NoMatchingPrimitiveTarget
      assert.truthy(err_of(config, {targets = {"cuda"}, default_device_type = "metal"})
        :find("no target for the default device type metal (targets: cuda -host=llvm; host: llvm)", 1, true))
      assert.truthy(err_of(config, {targets = {"cuda"}, default_device_type = 99})
        :find("no target for the default device type 99", 1, true))
    end)
    it("is invalid when 0, -1 or not a device type", function()
      -- TVM's CompilationConfig.Constructor_InvalidAttribute (kInvalidDeviceType)
      for _, bad in ipairs{0, -1} do
        local msg, e = err_of(config, {targets = {"cuda"}, default_device_type = bad})
        assert.truthy(msg:find("invalid default device type " .. bad, 1, true), msg)
        assert.equal("value", e.code)
      end
      assert.truthy(err_of(config, {targets = {"cuda"}, default_device_type = "cdua"})
        :find("unknown device type 'cdua'; did you mean 'cuda'?", 1, true))
      assert.truthy(err_of(config, {targets = {"cuda"}, default_device_type = 1.5}):find("must be an integer", 1, true))
      assert.truthy(err_of(config, {targets = {"cuda"}, default_device_type = {}}):find("must be a name or a number", 1, true))
    end)
  end)

  it("rule 5: the default virtual device is canonical (default device type, 0)", function()
    local c = config{targets = {"llvm", "cuda"}, default_device_type = "cuda"}
    local d = c.default_virtual_device
    assert.is_true(rawequal(d, VD{device_type = "cuda", virtual_device_id = 0, target = "cuda -host=llvm"}))
    local c2 = config{targets = {"llvm", "cuda"}}
    assert.is_true(rawequal(c2.default_virtual_device,
                            VD{virtual_device_id = 0, target = "llvm -host=llvm"}))
  end)

  describe("rule 6: canonical(vd)", function()
    local host = dp.Target("llvm")
    local cpu_t = dp.Target("llvm"):with_host(host)
    local gpu_t = dp.Target{kind = "cuda", host = host}
    local c = config{targets = {cpu_t, gpu_t}, default_device_type = "cuda"}

    it("fills the target of a device type from the first primitive target of that type", function()
      local v = c:canonical(VD{device_type = "cpu", memory_scope = "global"})
      assert.is_true(rawequal(v, VD{device_type = "cpu", target = cpu_t, memory_scope = "global"}))
      local g = c:canonical(VD{device_type = "cuda", virtual_device_id = 1})
      assert.is_true(rawequal(g.target, gpu_t))
      assert.equal(1, g.virtual_device_id)
    end)
    it("replaces a target by the equal primitive or host target", function()
      assert.is_true(rawequal(c:canonical(VD{target = "cuda"}).target, gpu_t))
      assert.is_true(rawequal(c:canonical(VD{target = "cuda -host=llvm"}).target, gpu_t))
      -- the host target names the CPU that runs operators, but for the host device itself (id 0)
      assert.is_true(rawequal(c:canonical(VD{target = "llvm"}).target, cpu_t))
      assert.is_true(rawequal(c:canonical(VD{target = "llvm", virtual_device_id = 0}).target, host))
      assert.is_true(rawequal(config{targets = {"cuda"}}:canonical(VD{target = "llvm"}).target, host))
    end)
    it("keeps a target the configuration does not know, and unconstrained devices", function()
      local other = VD{target = "cuda -arch=sm_80"}
      assert.is_true(rawequal(c:canonical(other), other))
      assert.is_true(rawequal(c:canonical(VD{}), VD{}))
      assert.is_true(rawequal(c:canonical(VD{memory_scope = "x"}), VD{memory_scope = "x"}))
    end)
    it("is interned: canonical results are rawequal", function()
      assert.is_true(rawequal(c:canonical(VD{device_type = "cuda"}), c:canonical(VD{device_type = 2})))
      assert.is_true(rawequal(c:canonical(VD{device_type = "cuda"}), c:canonical(VD{target = gpu_t})))
    end)
    it("no target for a device type is an error naming the type and the targets", function()
      local msg, e = err_of(c.canonical, c, VD{device_type = "opencl"})
      assert.truthy(msg:find("no target for device type opencl", 1, true), msg)
      assert.truthy(msg:find("targets: llvm -host=llvm, cuda -host=llvm; host: llvm", 1, true), msg)
      assert.equal("value", e.code)
    end)
  end)

  describe("targets as tvmc's comma-separated list", function()
    it("one string holds several targets; commas inside option values stay there", function()
      local c = config{targets = "cuda, llvm -mcpu=skylake -mattr=+avx2,+fma"}
      local p = c.primitive_targets
      assert.equal(2, #p)
      assert.equal("cuda", p[1].kind)
      assert.same({"+avx2", "+fma"}, p[2].options.mattr)
      assert.is_true(rawequal(c.host_target, dp.Target("llvm -mcpu=skylake -mattr=+avx2,+fma")))
      local d = config{targets = "cuda,llvm"}
      assert.is_true(rawequal(d.primitive_targets[1], config{targets = {"cuda", "llvm"}}.primitive_targets[1]))
      assert.equal(2, #config{targets = "cuda -libs=cublas,cudnn ,llvm"}.primitive_targets)
      assert.equal(2, #config{targets = "cuda -host='llvm -mattr=+a,+b',opencl -model='a, b'", default_device_type = "cuda"}.primitive_targets)
    end)
    it("a string in the list may hold several too (the command line's --target)", function()
      local c = config{targets = {"cuda,opencl", dp.Target("llvm")}}
      assert.equal(3, #c.primitive_targets)
      assert.equal("llvm", c.primitive_targets[3].kind)
    end)
    it("an empty place in the list is an error", function()
      assert.truthy(err_of(config, {targets = "cuda,,llvm"})
        :find("malformed list of targets 'cuda,,llvm': no target at offset 5", 1, true))
      assert.truthy(err_of(config, {targets = "cuda,"}):find("no target at offset 5", 1, true))
      assert.truthy(err_of(config, {targets = ""}):find("no target at offset 0", 1, true))
      assert.truthy(err_of(config, {targets = "cuda, cdua"}):find("did you mean 'cuda'?", 1, true))
      assert.truthy(err_of(config, {targets = 3}):find("'targets' must be a list of targets or a string", 1, true))
    end)
    it("a single target cannot be several", function()
      assert.truthy(err_of(dp.Target, "cuda,llvm"):find("'cuda,llvm' is a list of targets", 1, true))
      assert.truthy(err_of(dp.Target, "llvm -mcpu=x, cuda"):find("is a list of targets", 1, true))
    end)
  end)

  it("rule 6: a device type no primitive target serves is an error, the host's own included", function()
    local c = config{targets = {"cuda"}}
    assert.equal("llvm", c.host_target.kind)
    local msg = err_of(c.canonical, c, VD{device_type = "cpu"})
    assert.truthy(msg:find("no target for device type cpu (targets: cuda -host=llvm; host: llvm)", 1, true), msg)
  end)

  describe("errors", function()
    it("no targets", function()
      assert.truthy(err_of(config, {targets = {}}):find("no targets given", 1, true))
      assert.truthy(err_of(config, {}):find("no targets given", 1, true))
    end)
    it("no target for the default device type", function()
      local msg = err_of(config, {targets = {"llvm"}, default_device_type = "cuda"})
      assert.truthy(msg:find("no target for the default device type cuda (targets: llvm -host=llvm; host: llvm)", 1, true), msg)
    end)
    it("bad fields", function()
      local msg, e = err_of(config, {targets = {"llvm"}, default = "cuda"})
      assert.equal("string", type(e)) -- API misuse: an argument error
      assert.truthy(msg:find("bad argument #1 to 'CompilationConfig' (unknown key 'default'; known keys: targets, "
        .. "host, default_device_type, bandwidth, memory)", 1, true), msg)
      assert.truthy(err_of(config, {target = {"llvm"}}):find("unknown key 'target'; did you mean 'targets'?", 1, true))
      assert.truthy(err_of(config, {targets = {"tpu"}}):find("unknown target kind 'tpu'", 1, true))
      assert.truthy(err_of(config, {targets = {"llvm"}, default_device_type = "nope"})
        :find("unknown device type 'nope'", 1, true))
    end)
  end)

  it("prints its targets, host and default", function()
    local c = config{targets = {"llvm", "cuda"}, default_device_type = "cuda"}
    assert.equal('CompilationConfig(targets=["llvm -host=llvm", "cuda -host=llvm"], '
      .. 'host=VirtualDevice(device_type=cpu, virtual_device_id=0, target="llvm"), '
      .. 'default=VirtualDevice(device_type=cuda, virtual_device_id=0, target="cuda -host=llvm"))', tostring(c))
  end)

  describe("several targets of one device type (RFC 0038: big.LITTLE, a CPU and an Ethos-U)", function()
    local big, little = dp.Target("llvm -mcpu=cortex-a76"), dp.Target("llvm -mcpu=cortex-a55")
    local c = config{targets = {big, "cuda", little}, default_device_type = "cpu"}
    local P = c.primitive_targets

    it("virtual_device_id k names the k-th target of the device type", function()
      assert.is_true(rawequal(c:canonical(VD{device_type = "cpu"}).target, P[1]))
      assert.is_true(rawequal(c:canonical(VD{device_type = "cpu", virtual_device_id = 0}).target, P[1]))
      local l = c:canonical(VD{device_type = "cpu", virtual_device_id = 1})
      assert.is_true(rawequal(l.target, P[3]))
      assert.equal(1, l.virtual_device_id)
      assert.is_true(rawequal(c.default_virtual_device, c:canonical(VD{device_type = "cpu", virtual_device_id = 0})))
    end)

    it("a device naming the target gets the target's id", function()
      local l = c:canonical(VD{target = little})
      assert.equal(1, l.virtual_device_id)
      assert.is_true(rawequal(l, c:canonical(VD{device_type = "cpu", virtual_device_id = 1})))
      assert.is_true(rawequal(l, c:canonical(VD{device_type = "cpu", virtual_device_id = 1, target = little})))
      assert.equal(0, c:canonical(VD{target = big}).virtual_device_id)
    end)

    it("an id no target has, or another target's, is an error listing the targets by id", function()
      local msg, e = err_of(c.canonical, c, VD{device_type = "cpu", virtual_device_id = 2})
      assert.equal("value", e.code)
      assert.truthy(msg:find("no target for virtual_device_id 2", 1, true), msg)
      assert.truthy(msg:find('0 = "llvm -mcpu=cortex-a76 -host=', 1, true), msg)
      assert.truthy(msg:find('1 = "llvm -mcpu=cortex-a55 -host=', 1, true), msg)
      msg = err_of(c.canonical, c, VD{device_type = "cpu", virtual_device_id = 1, target = big})
      assert.truthy(msg:find("virtual_device_id 1 names another target", 1, true), msg)
      -- 0 is an id like any other (README, "virtual_device_id")
      msg = err_of(c.canonical, c, VD{device_type = "cpu", virtual_device_id = 0, target = little})
      assert.truthy(msg:find("virtual_device_id 0 names another target", 1, true), msg)
    end)

    it("one target per device type keeps the user's ids (toolchains as ext_dev ids)", function()
      local one = config{targets = {"llvm", "ext_dev"}, default_device_type = "cpu"}
      local d = one:canonical(VD{device_type = "ext_dev", virtual_device_id = 3})
      assert.equal(3, d.virtual_device_id)
      assert.equal("ext_dev", d.target.kind)
    end)

    it("plans and partitions on the two CPUs apart, each piece named after its target", function()
      local m = dp.parse([[
def @main(%x: Tensor[(4), float32]) {
  %0 = add(%x, %x);
  %1 = on_device(%0, virtual_device=VirtualDevice(device_type=cpu, virtual_device_id=1));
  exp(%1)
}]])
      local planned = dp.passes.PlanDevices(c)(m)
      assert.equal(1, testing.count_calls(planned, "device_copy"))
      local parted = dp.passes.PartitionByVirtualDevice{config = c}(planned)
      assert.equal(1, parted:get("main_llvm_0").virtual_device.virtual_device_id)
      assert.equal(0, parted:get("main_llvm_1").virtual_device.virtual_device_id)
    end)
  end)

  it("a device naming the host's target without an id is the CPU that runs operators", function()
    -- Target("llvm") is the host target; the primitive CPU is "llvm -host=llvm": one device
    local c = config{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
    local d = c:canonical(VD{device_type = "cpu", target = dp.Target("llvm")})
    assert.is_true(rawequal(d.target, c.default_virtual_device.target))
    local m = dp.parse([[def @main(%x: Tensor[(4), float32]) {
      %0 = add(%x, %x); %1 = on_device(%0, virtual_device=VirtualDevice(device_type=cpu, target="llvm")); exp(%1) }]])
    assert.equal(0, testing.count_calls(dp.passes.PlanDevices(c)(m), "device_copy"))
    -- the host device itself (id 0, the host target) stays the host's, as TVM's
    assert.is_true(rawequal(c:canonical(c.host_virtual_device), c.host_virtual_device))
  end)
end)
