-- PlanDevices(config, {placement = "min_bytes"}) (src/planner/place.c): on
-- small random modules with two devices, min_bytes followed by ShareCopies
-- copies exactly the least number of bytes brute force finds over every
-- placement of the values nobody annotated; never more than TVM's rules;
-- the plan passes the verifier, plans to itself, and is the same every run.
-- Capability, compute cost and bandwidth hooks; their errors; explain.
local dp = require "devplan"
local testing = require "devplan.testing"

local config = testing.config("cuda")
local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"
local min_bytes = dp.passes.PlanDevices(config, {placement = "min_bytes"})
local tvm = dp.passes.PlanDevices(config)
local share = dp.passes.ShareCopies()

local function bytes(planned) return dp.planner.report(planned, config).totals.bytes_copied end

local function rng_of(seed)
  local s = seed
  return function(lo, hi)
    s = (s * 1103515245 + 12345) % 2147483648
    return lo + (s // 65536) % (hi - lo + 1)
  end
end

-- A random module: values v[1..] of 140 bytes (5 x 7) or 20 bytes (5 x 1,
-- a sum), some operators annotated on a device, the result maybe on the
-- CPU. Every value is used. Returns the text and the problem brute force
-- solves: per value its bytes, device (0: free), operands.
local function random_module(seed)
  local rng = rng_of(seed)
  local vals = {{name = "%a", bytes = 140, dev = 0, args = {}}, {name = "%b", bytes = 140, dev = 0, args = {}}}
  local used, lines = {}, {}
  local function value(text, args, b)
    local dev = rng(1, 100) <= 35 and rng(1, 2) or 0
    if dev > 0 then text = "on_device(" .. text .. ", virtual_device=" .. (dev == 1 and CPU or GPU) .. ")" end
    local name = "%" .. #lines
    lines[#lines + 1] = "  " .. name .. " = " .. text .. ";\n"
    vals[#vals + 1] = {name = name, bytes = b, dev = dev, args = args}
    for _, a in ipairs(args) do used[a] = true end
    return #vals
  end
  for _ = 1, rng(2, 6) do
    local x, y = rng(1, #vals), rng(1, #vals)
    local kind = rng(1, 4)
    if kind == 1 and vals[x].bytes == 140 then
      value("sum(" .. vals[x].name .. ", axis=[1], keepdims=True)", {x}, 20)
    elseif kind == 2 then
      value("nn.relu(" .. vals[x].name .. ")", {x}, vals[x].bytes)
    else
      local op = kind == 3 and "add" or "multiply"
      local b = math.max(vals[x].bytes, vals[y].bytes)
      value(op .. "(" .. vals[x].name .. ", " .. vals[y].name .. ")", {x, y}, b)
    end
  end
  -- every value used: the unused ones added into the result
  local last = #vals
  for i = 3, #vals - 1 do
    if not used[i] then
      last = value("add(" .. vals[last].name .. ", " .. vals[i].name .. ")", {last, i},
                   math.max(vals[last].bytes, vals[i].bytes))
    end
  end
  local result = vals[last].name
  local result_dev = vals[last].dev
  if rng(1, 2) == 1 then
    result = "on_device(" .. result .. ", virtual_device=" .. CPU .. ")"
    result_dev = 1
  end
  local text = "#[version = \"0.0.5\"]\ndef @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {\n"
    .. table.concat(lines) .. "  " .. result .. "\n}\n"
  return text, vals, result_dev
end

-- The least bytes copied over every placement of the free values: each
-- value copied once to each device among its readers other than its own.
local function brute(vals, result_dev)
  local free, dev = {}, {}
  for i, v in ipairs(vals) do
    dev[i] = v.dev
    -- (an annotation at the body's top fixes where the body's value is made)
    if i == #vals and v.dev == 0 and result_dev > 0 then dev[i] = result_dev end
    if dev[i] == 0 then free[#free + 1] = i end
  end
  local best = math.huge
  for mask = 0, (1 << #free) - 1 do
    for k, i in ipairs(free) do dev[i] = (mask >> (k - 1)) & 1 == 1 and 2 or 1 end
    local need = {}
    for i, v in ipairs(vals) do
      for _, a in ipairs(v.args) do
        need[a] = need[a] or {}
        need[a][dev[i]] = true
      end
    end
    if result_dev > 0 then -- the result annotated: the last value is read there
      need[#vals] = need[#vals] or {}
      need[#vals][result_dev] = true
    end
    local cost = 0
    for a, where in pairs(need) do
      for d in pairs(where) do
        if d ~= dev[a] then cost = cost + vals[a].bytes end
      end
    end
    best = math.min(best, cost)
  end
  return best
end

describe("placement = \"min_bytes\"", function()
  it("copies the fewest bytes brute force finds, on 300 random modules with two devices", function()
    local checked, fewer, n = 0, 0, os.getenv("DEVPLAN_QUICK") and 100 or 300
    for seed = 1, n do
      local text, vals, result_dev = random_module(seed)
      local mod = dp.parse(text, testing.META)
      local planned = min_bytes(mod)
      local shared = share(planned)
      local best = brute(vals, result_dev)
      assert.are.equal(best, bytes(shared), "seed " .. seed .. ":\n" .. text .. "\n" .. tostring(shared))
      -- the verifier, idempotence (TVM's rules and min_bytes), determinism
      local v, total = dp.planner.verify(planned, config, {input = mod})
      assert.are.equal(0, total, v[1] and v[1].message)
      assert.structurally_equal(planned, tvm(planned))
      assert.structurally_equal(planned, min_bytes(planned))
      assert.structurally_equal(shared, tvm(shared))
      assert.are.equal(tostring(planned), tostring(min_bytes(dp.parse(text, testing.META))))
      -- never more than TVM's rules (with or without shared copies)
      local ok, by_tvm = pcall(tvm, mod)
      if ok then
        checked = checked + 1
        assert.is_true(bytes(shared) <= bytes(share(by_tvm)), "seed " .. seed)
        if bytes(shared) < bytes(share(by_tvm)) then fewer = fewer + 1 end
      end
    end
    assert.is_true(checked > n * 2 // 3)
    assert.is_true(fewer > n // 15, "min_bytes beat TVM's rules on only " .. fewer .. " modules")
  end)

  local function chain_module()
    return dp.parse("#[version = \"0.0.5\"]\n"
      .. "def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {\n"
      .. "  %0 = on_device(add(%a, %b), virtual_device=" .. GPU .. ");\n"
      .. "  %1 = nn.relu(%0);\n  %2 = multiply(%1, %1);\n"
      .. "  on_device(%2, virtual_device=" .. CPU .. ")\n}\n", testing.META)
  end


  it("keeps an operator off a device the capability function refuses", function()
    local mod = chain_module()
    local plain = dp.planner.domains(mod, config, {placement = "min_bytes"})
    local relu = testing.find_call(mod, "nn.relu")
    assert.are.equal("cuda", plain:explain(relu).device.device_type_name)
    local seen = 0
    local d = dp.planner.domains(mod, config, {placement = "min_bytes", capability = function(call, vd)
      assert.are.equal("call", call.kind)
      seen = seen + 1
      return not (call.callee.name == "nn.relu" and vd.device_type_name == "cuda")
    end})
    assert.is_true(seen > 0)
    assert.are.equal("cpu", d:explain(relu).device.device_type_name)
  end)

  it("chooses among AnnotateVirtualDevices' candidates by bytes (annotate.capability)", function()
    local P = testing.PALETTE
    local mod = chain_module()
    -- relu may run on either; multiply only on the CPU: relu stays with its input on the GPU
    -- or goes with its reader, whichever copies less (here the same: ties keep the default)
    local ann = dp.passes.AnnotateVirtualDevices{
      ["nn.relu"] = function() return {P.CPU, P.GPU} end,
      ["multiply"] = function() return P.CPU end,
    }
    assert.is_true(ann.capability(testing.find_call(mod, "nn.relu"), config:canonical(P.GPU)))
    assert.is_false(ann.capability(testing.find_call(mod, "multiply"), config:canonical(P.GPU)))
    assert.is_true(ann.capability(testing.find_call(mod, "add"), config:canonical(P.GPU)))
    local d = dp.planner.domains(mod, config, {placement = "min_bytes", capability = ann.capability})
    assert.are.equal("cpu", d:explain(testing.find_call(mod, "multiply")).device.device_type_name)
    -- relu only on the CPU: it moves there, and the copy with it
    ann = dp.passes.AnnotateVirtualDevices{["nn.relu"] = function() return {P.CPU} end}
    d = dp.planner.domains(mod, config, {placement = "min_bytes", capability = ann.capability})
    assert.are.equal("cpu", d:explain(testing.find_call(mod, "nn.relu")).device.device_type_name)
  end)

  it("says so when the capability function refuses a device an annotation asks for", function()
    local _, err = testing.error_of(dp.planner.domains, chain_module(), config, {placement = "min_bytes",
      capability = function(call, vd) return not (call.callee.name == "add" and vd.device_type_name == "cuda") end})
    assert.are.equal("value", err.code)
    assert.truthy(tostring(err):find("cannot run on cuda", 1, true), tostring(err))
    assert.are.equal(3, err.line)
  end)

  it("weighs compute time against copies with compute_cost and bandwidth", function()
    local mod = chain_module()
    local relu = testing.find_call(mod, "nn.relu")
    -- copies cost nothing much: the relu goes where it computes faster
    local fast_cpu = function(call, vd) return vd.device_type_name == "cpu" and 1e-9 or 1 end
    local d = dp.planner.domains(mod, config, {placement = "min_bytes", compute_cost = fast_cpu, bandwidth = 1e12})
    assert.are.equal("cpu", d:explain(relu).device.device_type_name)
    assert.truthy(d:explain(relu).text:find(" s of compute and copies", 1, true))
    -- copies cost a lot: it stays with its input on the GPU
    d = dp.planner.domains(mod, config, {placement = "min_bytes", compute_cost = function() return 0 end,
                                         bandwidth = function(src, dst) return 1 end})
    assert.are.equal("cuda", d:explain(relu).device.device_type_name)
  end)

  it("takes the bandwidths of the configuration, per pair of device types", function()
    local mod = chain_module()
    local relu = testing.find_call(mod, "nn.relu")
    local T = testing.TARGET
    local opencl = dp.Target("opencl"):with_host(T.HOST)
    local function cfg(bandwidth)
      return dp.CompilationConfig{targets = {T.CPU, T.GPU, opencl}, default_device_type = "cuda",
                                  bandwidth = bandwidth}
    end
    -- the relu computes fastest on opencl: fast links take it there
    local fast_opencl = function(call, vd) return vd.device_type_name == "opencl" and 0 or 1 end
    local function where(bandwidth)
      local d = dp.planner.domains(mod, cfg(bandwidth), {placement = "min_bytes", compute_cost = fast_opencl})
      return d:explain(relu).device.device_type_name
    end
    assert.are.equal("opencl", where(1e12))
    assert.are.equal("opencl", where({default = 1e12}))
    -- a slow link from cuda to opencl keeps it off opencl ("cuda->opencl" before "*->opencl")
    assert.are_not.equal("opencl", where({["cuda->opencl"] = 1, default = 1e12}))
    assert.are_not.equal("opencl", where({["*->opencl"] = 1, default = 1e12}))
    assert.are.equal("opencl", where({["cuda->opencl"] = 1e12, ["*->opencl"] = 1, default = 1e12}))
    -- the configuration's bandwidths alone make the objective time; the option wins over them
    local d = dp.planner.domains(mod, cfg({default = 1e10}), {placement = "min_bytes"})
    assert.truthy(d:explain(relu).text:find(" s of compute and copies", 1, true))
    d = dp.planner.domains(mod, cfg({["cuda->opencl"] = 1, default = 1e12}),
                           {placement = "min_bytes", compute_cost = fast_opencl, bandwidth = 1e12})
    assert.are.equal("opencl", d:explain(relu).device.device_type_name)
    -- the configuration keeps them, prints them and checks them
    local c = cfg({["cuda->opencl"] = 2e9, default = 1e10})
    assert.are.same({["cuda->opencl"] = 2e9, default = 1e10}, c.bandwidth)
    assert.truthy(tostring(c):find('bandwidth={"cuda->opencl"=2e+09, default=1e+10}', 1, true), tostring(c))
    assert.is_nil(config.bandwidth)
    for _, bad in ipairs{{["cuda->opencll"] = 1}, {["cuda-opencl"] = 1}, {["cuda->opencl"] = 0}, {default = -1},
                         {[1] = 5}, "fast", 0} do
      local ok, err = pcall(cfg, bad)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("bandwidth", 1, true), tostring(err))
    end
    local _, err = pcall(cfg, {["cuda->opencll"] = 1})
    assert.truthy(tostring(err):find("did you mean 'opencl'", 1, true), tostring(err))
  end)

  it("turns an error in a hook into a devplan.Error and stays usable", function()
    local mod = chain_module()
    local before = tostring(min_bytes(mod))
    for _, opts in ipairs{
      {placement = "min_bytes", capability = function() error("no capability today") end},
      {placement = "min_bytes", compute_cost = function() error({}) end},
      {placement = "min_bytes", compute_cost = function() return "fast" end},
      {placement = "min_bytes", bandwidth = function() error("no bandwidth") end},
    } do
      local ok, err = pcall(dp.passes.PlanDevices(config, opts), mod)
      assert.is_false(ok)
      assert.are.equal("devplan.Error", (getmetatable(err) or {}).__name)
    end
    assert.are.equal(before, tostring(min_bytes(mod)))
  end)

  it("rejects bad options", function()
    assert.has_error(function() dp.passes.PlanDevices(config, {placement = "fastest"}) end)
    assert.has_error(function() dp.passes.PlanDevices(config, {capability = function() end}) end)
    assert.has_error(function() dp.passes.PlanDevices(config, {placement = "min_bytes", bandwidth = "fast"}) end)
    assert.has_error(function() dp.passes.PlanDevices(config, {placement = "min_bytes", bandwidth = -1})(chain_module()) end)
  end)

  it("explains each decision with its cost either way", function()
    local mod = chain_module()
    local d = dp.planner.domains(mod, config, {placement = "min_bytes"})
    local x = d:explain(testing.find_call(mod, "nn.relu"))
    assert.are.equal("placement", x.rule)
    assert.truthy(x.text:find("placement by cost (min_bytes), which chose", 1, true), x.text)
    assert.truthy(x.text:find("bytes copied there, %d+ bytes copied on"), x.text)
    local list = d:placements()
    assert.is_true(#list >= 1)
    for _, p in ipairs(list) do
      assert.truthy(p.text:find("bytes copied", 1, true))
      assert.is_not_nil(p.device)
      assert.is_not_nil(p.expr)
    end
    assert.are.same({}, dp.planner.domains(mod, config):placements())
  end)

  it("leaves PlanDevices' default output TVM's (placement = \"tvm\" is the default)", function()
    local CASES = testing.shared_dir .. "/conformance/cases"
    for _, f in ipairs(testing.lua_files(CASES)) do
      local case = dofile(CASES .. "/" .. f)
      local cfg = testing.config("cuda", case.targets)
      local input = dp.parse(testing.text(case.input), testing.metatable_for(case))
      local ok, a = pcall(dp.passes.PlanDevices(cfg), input)
      local ok2, b = pcall(dp.passes.PlanDevices(cfg, {placement = "tvm"}), input)
      assert.are.equal(ok, ok2)
      if ok then assert.structurally_equal(a, b) end
    end
  end)

  it("places a 200,000-call chain", function()
    local parts = {"#[version = \"0.0.5\"]\ndef @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {\n"}
    local prev = "%a"
    for i = 1, os.getenv("DEVPLAN_QUICK") and 20000 or 200000 do
      local op = i % 2 == 0 and "add" or "multiply"
      local text = op .. "(" .. prev .. ", %b)"
      if i % 1000 == 0 then text = "on_device(" .. text .. ", virtual_device=" .. (i % 2000 == 0 and CPU or GPU) .. ")" end
      parts[#parts + 1] = "  %" .. i .. " = " .. text .. ";\n"
      prev = "%" .. i
    end
    parts[#parts + 1] = "  " .. prev .. "\n}\n"
    local mod = dp.parse(table.concat(parts), testing.META)
    local planned = share(min_bytes(mod))
    -- each device change copies the chain's value (and %b once to the other device)
    assert.is_true(bytes(planned) <= bytes(share(tvm(mod))))
  end)
end)

describe("min_bytes on the models", function()
  -- the annotations of bench/placement.lua: convolutions and dense on the GPU, pooling on the CPU
  local map = {["nn.conv2d"] = "cuda", ["nn.dense"] = "cuda", ["nn.conv2d_transpose"] = "cuda",
               ["nn.max_pool2d"] = "cpu", ["nn.global_avg_pool2d"] = "cpu", ["nn.batch_flatten"] = "cpu"}
  local mconfig = testing.config("cpu")
  for _, name in ipairs{"resnet18", "dcgan", "mlp", "synthetic"} do
    it(name .. ": verified, a fixed point, never more bytes than TVM's rules", function()
      local mod = dp.parse(testing.read_file(testing.shared_dir .. "/models/" .. name .. ".relay"), testing.META)
      mod = dp.pipeline.annotate_ops(map)(mod)
      local planned = dp.passes.PlanDevices(mconfig, {placement = "min_bytes"})(mod)
      local _, total = dp.planner.verify(planned, mconfig, {input = mod})
      assert.are.equal(0, total)
      assert.structurally_equal(planned, dp.passes.PlanDevices(mconfig)(planned))
      local shared = share(planned)
      local by_tvm = share(dp.passes.PlanDevices(mconfig)(mod))
      local b = function(m) return dp.planner.report(m, mconfig).totals.bytes_copied end
      assert.is_true(b(shared) <= b(by_tvm))
    end)
  end
end)

describe("min_bytes on the models, data movement on the host (bench/placement.lua's set B)", function()
  local map = {["nn.conv2d"] = "cuda", ["nn.dense"] = "cuda", ["concatenate"] = "cpu", ["split"] = "cpu",
               ["nn.batch_flatten"] = "cpu"}
  local mconfig = testing.config("cpu")
  -- pooling is nobody's: TVM's rules copy the last activations to the CPU at the
  -- annotation's boundary, min_bytes pools on the GPU first
  for _, name in ipairs{"resnet18", "mobilenet"} do
    it(name .. ": at least 2x fewer bytes than TVM's rules", function()
      local mod = dp.parse(testing.read_file(testing.shared_dir .. "/models/" .. name .. ".relay"), testing.META)
      mod = dp.pipeline.annotate_ops(map)(mod)
      local f = mod.main
      mod = mod:with_function("main", dp.fn(f.params, f.body, {ret_type = f.ret_type,
                                                               virtual_device = testing.PALETTE.CPU}))
      local planned = share(dp.passes.PlanDevices(mconfig, {placement = "min_bytes"})(mod))
      local _, total = dp.planner.verify(planned, mconfig, {input = mod})
      assert.are.equal(0, total)
      local b = function(m) return dp.planner.report(m, mconfig).totals.bytes_copied end
      local by_tvm = b(dp.passes.PlanDevices(mconfig)(mod))
      assert.is_true(by_tvm >= 2 * b(planned), by_tvm .. " vs " .. b(planned))
    end)
  end
end)

describe("the command line", function()
  local TEXT = "#[version = \"0.0.5\"]\n"
    .. "def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {\n"
    .. "  %0 = add(%a, %a);\n  %1 = nn.relu(%0);\n  %2 = multiply(%1, %b);\n"
    .. "  %3 = subtract(%2, %1);\n  add(%3, %1)\n}\n"
  after_each(testing.remove_temp_files)
  local function run(list)
    local q = {}
    for i, a in ipairs(list) do q[i] = "'" .. a .. "'" end
    return testing.run_devplan(table.concat(q, " "))
  end

  it("plans with --placement min_bytes and --share-copies", function()
    local path = testing.temp_file(TEXT, ".relay")
    local args = {"plan", path, "--annotate", "multiply=cuda,nn.relu=cpu", "--default", "cpu"}
    local st, tvm_out = run(args)
    assert.are.equal(0, st)
    local args2 = {table.unpack(args)}
    for _, a in ipairs{"--placement", "min_bytes", "--share-copies", "--report", "json"} do args2[#args2 + 1] = a end
    local st2, out2, err2 = run(args2)
    assert.are.equal(0, st2, err2)
    assert.truthy(out2:find('"copies"', 1, true))
    local args3 = {table.unpack(args)}
    args3[#args3 + 1], args3[#args3 + 2] = "--report", "json"
    local _, tvm_json = run(args3)
    local bytes_of = function(s) return tonumber(s:match('"bytes_copied"%s*:%s*(%d+)')) end
    assert.is_true(bytes_of(out2) <= bytes_of(tvm_json))
    assert.truthy(tvm_out:find("multiply", 1, true))
  end)

  it("explains the optimiser's decisions with --explain", function()
    local path = testing.temp_file(TEXT, ".relay")
    local st, out = run({"plan", path, "--annotate", "multiply=cuda", "--default", "cpu",
                                         "--placement", "min_bytes", "--explain"})
    assert.are.equal(0, st)
    assert.truthy(out:find("placement by cost (min_bytes), which chose", 1, true), out)
    assert.truthy(out:find("\n// placement by cost: %d+ decisions?\n//   "), out)
  end)

  it("takes the configuration's bandwidths with --bandwidth", function()
    local path = testing.temp_file(TEXT, ".relay")
    local base = {"plan", path, "--annotate", "multiply=cuda", "--default", "cpu", "--placement", "min_bytes",
                  "--explain"}
    local function with(...)
      local a = {table.unpack(base)}
      for _, x in ipairs{...} do a[#a + 1] = x end
      return run(a)
    end
    local st, out = with("--bandwidth", "cpu->cuda=12e9,cuda->cpu=1e10,default=5e9")
    assert.are.equal(0, st)
    assert.truthy(out:find("s of compute and copies", 1, true), out)
    st, out = with("--bandwidth", "8e9")
    assert.are.equal(0, st)
    assert.truthy(out:find("s of compute and copies", 1, true), out)
    local st2, _, err = with("--bandwidth", "cpu->cdua=1")
    assert.are_not.equal(0, st2)
    assert.truthy(err:find("did you mean 'cuda'", 1, true), err)
    st2, _, err = with("--bandwidth", "cpu->cuda:fast")
    assert.are_not.equal(0, st2)
    assert.truthy(err:find("--bandwidth", 1, true), err)
    local _, help = run({"help", "plan"})
    assert.truthy(help:find("--bandwidth", 1, true))
  end)

  it("rejects a bad --placement and lists both in --help", function()
    local path = testing.temp_file(TEXT, ".relay")
    local st, _, err = run({"plan", path, "--placement", "fastest"})
    assert.are_not.equal(0, st)
    assert.truthy(err:find("--placement takes tvm, min_bytes or latency", 1, true))
    local _, help = run({"help", "plan"})
    assert.truthy(help:find("--placement", 1, true))
    assert.truthy(help:find("--share-copies", 1, true))
  end)

  it("runs plan_devices(placement=min_bytes),share_copies in devplan opt", function()
    local path = testing.temp_file(TEXT, ".relay")
    local st, out, err = run({"opt", path, "-p",
      "annotate(multiply=cuda),plan_devices(default=cpu,placement=min_bytes),share_copies", "--report", "text"})
    assert.are.equal(0, st, err)
    assert.truthy(out:find("device_copy", 1, true) or out:find("no device_copy", 1, true))
    local st2, _, err2 = run({"opt", path, "-p", "plan_devices(placement=fast)"})
    assert.are_not.equal(0, st2)
    assert.truthy(err2:find("placement", 1, true))
  end)
end)

describe("min_bytes on generated programs", function()
  package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
  local gen = require "relaygen"
  local props = require "props"
  -- Seeds that planned wrongly once: with memory scopes (52, 104, 145, 316:
  -- a device with its scope left open and the same device in a scope are two
  -- devices to the optimiser, one to TVM's rules, so the plan changed when
  -- planned again; 35, 139, 162 left a host position in a scope), and without
  -- (1509, 1765, 2661: an on_device whose result placement put on another
  -- device than its reader lost its copies, so the value never went where the
  -- annotation says); min_bytes planned its own plan differently (3019, 7830,
  -- 12401, 16059: a primfn call rebuilt by phase 0 had lost its type, so its
  -- result cost nothing to copy; a plan with memory scopes met again).
  it("plan the seeds that planned wrongly once: verified fixed points", function()
    local plan = dp.passes.PlanDevices(props.CONFIG, {placement = "min_bytes"})
    local scoped = 0
    for _, seed in ipairs{35, 52, 104, 139, 145, 162, 316, 1509, 1765, 2661, 3019, 7830, 12401, 16059} do
      local text = gen.text(gen.program(seed))
      local input = dp.parse(text, props.META)
      local planned = plan(input)
      local v, total = dp.planner.verify(planned, props.CONFIG, {input = input})
      assert.are.equal(0, total, "seed " .. seed .. ": " .. (v[1] and v[1].message or ""))
      assert.structurally_equal(planned, dp.passes.PlanDevices(props.CONFIG)(planned))
      assert.structurally_equal(planned, plan(planned))
      if text:find("memory_scope", 1, true) then scoped = scoped + 1 end
    end
    assert.is_true(scoped >= 4)
  end)
  it("are verified, fixed points of TVM's rules and deterministic", function()
    local n, planned_n = os.getenv("DEVPLAN_QUICK") and 80 or 400, 0
    local plan = dp.passes.PlanDevices(props.CONFIG, {placement = "min_bytes"})
    for seed = 1, n do
      local text = gen.text(gen.program(seed))
      local ok, input = pcall(dp.parse, text, props.META)
      if ok then
        local pok, planned = pcall(plan, input)
        if pok then
          planned_n = planned_n + 1
          local v, total = dp.planner.verify(planned, props.CONFIG, {input = input})
          assert.are.equal(0, total, "seed " .. seed .. ": " .. (v[1] and v[1].message or ""))
          assert.structurally_equal(planned, dp.passes.PlanDevices(props.CONFIG)(planned))
          assert.are.equal(tostring(planned), tostring(plan(dp.parse(text, props.META))))
          local shared = share(planned)
          assert.structurally_equal(shared, dp.passes.PlanDevices(props.CONFIG)(shared))
        else
          -- a failure is a devplan.Error (a conflict among annotations), never a crash
          assert.are.equal("devplan.Error", (getmetatable(planned) or {}).__name, tostring(planned))
        end
      end
    end
    assert.is_true(planned_n > n // 10, "only " .. planned_n .. " programs planned")
  end)
end)
