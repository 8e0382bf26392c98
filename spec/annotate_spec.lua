-- AnnotateVirtualDevices (lua/devplan/passes/annotate_virtual_devices.lua): per-operator
-- device rules. On the real models it reproduces the annotated modules the
-- shared models were planned from, and planning them gives TVM's output.
local dp = require "devplan"
local t = require "devplan.testing"

local GPU = t.PALETTE.GPU
local function on_gpu() return GPU end
local rules = {["nn.conv2d"] = on_gpu, ["nn.dense"] = on_gpu}

describe("AnnotateVirtualDevices", function()
  for _, name in ipairs{"resnet18", "dcgan"} do
    it(name .. ": conv2d and dense on the GPU give the shared annotated model", function()
      local dir = t.shared_dir .. "/models/"
      local plain = dp.parse(t.read_file(dir .. name .. ".relay"), t.META)
      local annotated = dp.passes.AnnotateVirtualDevices(rules)(plain)
      local expected = dp.parse(t.read_file(dir .. name .. ".annotated.relay"), t.META)
      assert.structurally_equal(annotated, expected)
      local planned = t.plan(t.config("cpu"))(annotated)
      assert.structurally_equal(planned, dp.parse(t.read_file(dir .. name .. ".planned.relay"), t.META))
    end)
  end

  it("a rule returning nil leaves the call alone", function()
    local m = dp.parse([[
def @main(%a: Tensor[(5, 7), float32]) { %0 = negative(%a); negative(%0) }]])
    local first = true
    local out = dp.passes.AnnotateVirtualDevices{negative = function()
      local r = first and GPU or nil
      first = false
      return r
    end}(m)
    assert.are.equal(1, t.count_calls(out, "on_device"))
  end)

  it("calls a rule with the call, with `...`, or with nothing when it takes no argument", function()
    local m = dp.parse([[
def @main(%a: Tensor[(5, 7), float32]) { %0 = negative(%a); %1 = exp(%0); %2 = negative(%1); %3 = exp(%2); tanh(%3) }]])
    local seen = {negative = 0, exp = 0, tanh = 0}
    local out = dp.passes.AnnotateVirtualDevices{
      negative = function() seen.negative = seen.negative + 1; return GPU end,      -- no parameter
      exp = function(...) local c = ...; assert(c.kind == "call"); seen.exp = seen.exp + 1 end,
      tanh = function(c) assert(c.callee.name == "tanh"); seen.tanh = seen.tanh + 1; return GPU end,
    }(m)
    assert.same({negative = 2, exp = 2, tanh = 1}, seen)
    assert.are.equal(3, t.count_calls(out, "on_device"))
    -- an error in a rule without parameters is the rule's error all the same
    local ok, err = pcall(dp.passes.AnnotateVirtualDevices{negative = function() error("no device", 0) end}, m)
    assert.is_false(ok)
    assert.matches("no device", tostring(err))
  end)

  it("rejects unknown operators and non-function rules", function()
    assert.has_error(function() dp.passes.AnnotateVirtualDevices{["no.such_op"] = on_gpu} end)
    local ok, err = pcall(dp.passes.AnnotateVirtualDevices, {add = 3})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("must be a function", 1, true))
  end)

  local function parse(text) return dp.parse('#[version = "0.0.5"]\n' .. text, t.META) end
  local CPU = t.PALETTE.CPU

  -- The device each operator call was annotated with (its on_device), in post order.
  local function annotations(mod)
    local out = {}
    dp.visit(mod.main.body, function(e)
      if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "on_device" then
        local c = e.args[1]
        out[#out + 1] = c.callee.name .. "@" .. (rawequal(e.attrs.virtual_device, GPU) and "GPU" or "CPU")
      end
    end)
    return table.concat(out, " ")
  end

  it("the operator's own rule, else its kind's, else \"*\"", function()
    local m = parse("def @main(%a: Tensor[(5, 7), float32]) { %0 = negative(%a); %1 = add(%0, %a); %2 = reshape(%1, newshape=[35]); exp(%2) }")
    local out = dp.passes.AnnotateVirtualDevices{
      exp = function() return CPU end,
      ["kind:elemwise"] = function() return GPU end,
      ["*"] = function() return CPU end,
    }(m)
    assert.equal("negative@GPU add@CPU reshape@CPU exp@CPU", annotations(out))
    -- "*" never wraps on_device / device_copy, and a placed call is left alone
    local again = dp.passes.AnnotateVirtualDevices{["*"] = function() return GPU end}(out)
    assert.equal(t.count_calls(out, "on_device"), t.count_calls(again, "on_device"))
    assert.structurally_equal(again, out)
  end)

  it("candidates: the first the planner accepts wins, and explain says why", function()
    local m = parse([[def @main(%a: Tensor[(5, 7), float32], %b {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32]) {
      %0 = negative(%a); %1 = add(%0, %b); %2 = on_device(%1, virtual_device=meta[VirtualDevice][0], constrain_result=True); exp(%2) }]])
    local npu = dp.VirtualDevice{device_type = "ext_dev"}
    local annotate = dp.passes.AnnotateVirtualDevices({
      negative = function() return {npu, GPU, CPU} end,
    }, {config = t.config("cpu")})
    local out, decisions = annotate.resolve(m)
    assert.equal("negative@CPU add@CPU", annotations(out), "add: the module's own annotation")
    assert.equal(1, #decisions)
    assert.equal(3, decisions[1].index)
    assert.equal(CPU, decisions[1].device)
    assert.equal(2, #decisions[1].rejected)
    local why = annotate.explain(m, m.main.body.args[1].args[1].args[1])
    assert.truthy(why.text:find("negative at 3:12 runs on", 1, true), why.text)
    assert.truthy(why.text:find("candidate 3 of 3", 1, true), why.text)
    assert.truthy(why.text:find("no target for device type ext_dev", 1, true), why.text)
    assert.truthy(why.text:find("conflicting virtual devices", 1, true), why.text)
    -- without the NPU in the way, the first candidate the planner takes is the GPU
    local free = parse("def @main(%a: Tensor[(5, 7), float32]) { negative(%a) }")
    assert.equal("negative@GPU", annotations(annotate(free)))
    -- the configuration may come from the pass context instead
    local ctx_pass = dp.passes.AnnotateVirtualDevices{negative = function() return {GPU, CPU} end}
    assert.equal("negative@GPU", annotations(ctx_pass(free, dp.PassContext{config = t.config("cpu")})))
  end)

  it("candidates need a configuration; bad rules are clear errors", function()
    local free = parse("def @main(%a: Tensor[(5, 7), float32]) { negative(%a) }")
    local ok, err = pcall(dp.passes.AnnotateVirtualDevices{negative = function() return {GPU, CPU} end}, free)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("needs the configuration", 1, true), tostring(err))
    ok, err = pcall(dp.passes.AnnotateVirtualDevices{negative = function() return 5 end}, free)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("must return a VirtualDevice, a list of them, dp.soft(vd, weight) or nil", 1, true), tostring(err))
    ok, err = pcall(dp.passes.AnnotateVirtualDevices, {["kind:fancy"] = on_gpu})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown operator pattern kind 'fancy'", 1, true), tostring(err))
    assert.has_error(function() dp.passes.AnnotateVirtualDevices({}, {colour = 1}) end)
    assert.has_error(function() dp.passes.AnnotateVirtualDevices({}, {config = 5}) end)
  end)
end)

describe("AnnotateVirtualDevices: rules see the typed call, place any call, and compose", function()
  local CPU, GPU = t.PALETTE.CPU, t.PALETTE.GPU
  local NPU = dp.VirtualDevice{device_type = "ext_dev", virtual_device_id = 0}
  local function parse(text) return dp.parse('#[version = "0.0.5"]\n' .. text, t.META) end

  -- "name@device" of each placed call, in post order
  local function placements(mod)
    local out = {}
    dp.visit(mod, {
      pre = function(e) return not (e.kind == "fn" and e.attrs and e.attrs.Composite) end,
      post = function(e)
        if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "on_device" and e.attrs.constrain_body ~= false then
          local c, callee = e.args[1], e.args[1].callee
          local name = callee.kind == "op" and callee.name or callee.kind == "global" and "@" .. callee.name
            or callee.kind == "fn" and "Composite:" .. tostring(callee.attrs.Composite) or "%" .. callee.name
          local vd = e.attrs.virtual_device
          out[#out + 1] = name .. "@" .. (rawequal(vd, GPU) and "GPU" or rawequal(vd, CPU) and "CPU" or "NPU")
          assert(c.kind == "call")
        end
      end,
    })
    return table.concat(out, " ")
  end

  it("gives a rule the call as it is in the module, type-checked (a dtype checker works)", function()
    local m = parse([[def @main(%x: Tensor[(10, 10), float32], %y: Tensor[(10, 10), int32]) {
      %0 = nn.relu(%x); %1 = nn.relu(%0); %2 = nn.relu(%y); (%1, %2) }]])
    local seen = {}
    local annotate = dp.passes.AnnotateVirtualDevices{["nn.relu"] = function(call)
      seen[#seen + 1] = call.checked_type.dtype
      if call.args[1].checked_type.dtype == "float32" then return NPU end
    end}
    local out = annotate(m)
    assert.equal("nn.relu@NPU nn.relu@NPU", placements(out))
    assert.same({"float32", "float32", "int32"}, seen)
    -- an untyped module is type-checked first
    local x = dp.var("x", dp.type.tensor({3}, "float32"))
    local mod = dp.IRModule{functions = {{"main", dp.fn({x}, dp.call("nn.relu", {x}))}}}
    assert.equal("nn.relu@NPU", placements(annotate(mod)))
  end)

  it("places calls of Composite functions, of globals and of closures; \"*\" takes every call", function()
    local m = parse([[
def @helper(%a: Tensor[(4), float32]) { negative(%a) }
def @main(%x: Tensor[(4), float32]) {
  %0 = fn (%p: Tensor[(4), float32], Composite="npu.add_relu") { %1 = add(%p, %p); nn.relu(%1) };
  %2 = %0(%x);
  %3 = @helper(%2);
  let %f = fn (%q: Tensor[(4), float32]) { exp(%q) };
  %f(%3)
}]])
    local out = dp.passes.AnnotateVirtualDevices{
      ["Composite:npu.add_relu"] = function(call)
        assert.truthy(call.args[1].checked_type)
        return NPU
      end,
      ["@helper"] = function() return GPU end,
      negative = function() return GPU end,
      ["*"] = function() return CPU end,
    }(m)
    -- the Composite function's own calls are part of it: never placed on their own
    assert.equal("negative@GPU exp@CPU Composite:npu.add_relu@NPU @helper@GPU %f@CPU", placements(out))
    local planned = dp.passes.PlanDevices(t.config("cpu", {"CPU", "GPU", dp.Target("ext_dev")}))(out)
    assert.truthy(planned)
  end)

  it("composes: the first pass to place a call wins; a pass run twice changes nothing", function()
    local m = parse([[def @main(%x: Tensor[(4), float32]) {
      %0 = abs(%x); %1 = nn.relu(%0); %2 = tanh(%0); %3 = add(%1, %2); exp(%3) }]])
    local for_npu = dp.passes.AnnotateVirtualDevices{abs = function() return NPU end, add = function() return NPU end}
    local for_gpu = dp.passes.AnnotateVirtualDevices{add = function() return GPU end, tanh = function() return GPU end}
    local rest = dp.passes.AnnotateVirtualDevices{["*"] = function() return CPU end}
    local out = rest(for_gpu(for_npu(m)))
    assert.equal("abs@NPU nn.relu@CPU tanh@GPU add@NPU exp@CPU", placements(out))
    assert.structurally_equal(out, rest(for_gpu(for_npu(out))))
    assert.structurally_equal(for_npu(m), for_npu(for_npu(m)))
    -- and with MergeAndAnnotate first: its groups are placed, the rest falls back
    local P = dp.pattern
    local merge = dp.passes.MergeAndAnnotate{
      {name = "npu.add", pattern = P.op("add")(P.wild(), P.wild()), device = NPU}, ["*"] = CPU}
    local merged = merge(m)
    assert.equal("abs@CPU nn.relu@CPU tanh@CPU add@NPU exp@CPU", placements(merged))
    assert.structurally_equal(merged, merge(merged))
    assert.equal("MergeAndAnnotate(rules=npu.add,*)", tostring(merge))
    -- a group of several calls: its inner calls read its inputs (fixed on its device) and
    -- each other, so the fallback leaves them to the group too
    local chain = dp.passes.MergeAndAnnotate{
      {name = "npu.relu_add", pattern = P.op("add")(P.op("nn.relu")(P.wild()), P.wild()), device = NPU}, ["*"] = CPU}
    local grouped = chain(m)
    assert.equal("abs@CPU tanh@CPU add@NPU exp@CPU", placements(grouped))
    local planned = dp.passes.PlanDevices(t.config("cpu", {"CPU", "GPU", dp.Target("ext_dev")}))(grouped)
    local vds = dp.planner.virtual_devices(planned, t.config("cpu", {"CPU", "GPU", dp.Target("ext_dev")}))
    assert.equal("ext_dev", vds[t.find_call(planned, "nn.relu")].device_type_name)
    assert.equal("cpu", vds[t.find_call(planned, "tanh")].device_type_name)
    assert.has_error(function() dp.passes.MergeAndAnnotate{["*"] = 5} end)
    assert.has_error(function() dp.passes.MergeAndAnnotate{{name = "a", pattern = P.wild(), device = NPU}, other = 1} end)
  end)

  -- A rule that runs a pass on the module being annotated (side_effect(m) before
  -- it answers) must not change what the annotation asks or makes.
  local function annotated_while(side_effect)
    local m = parse([[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = add(%a, %b);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  %2 = negative(%a);
  %3 = multiply(%1, %2);
  %4 = add(%3, %2);
  %5 = on_device(%4, virtual_device=meta[VirtualDevice][0]);
  %6 = exp(%0);
  %7 = add(%5, %6);
  tanh(%7)
}]])
    local function annotate(with_effect)
      local asked = {}
      local out = dp.passes.AnnotateVirtualDevices{["*"] = function(call)
        if with_effect then side_effect(m) end
        asked[#asked + 1] = call.callee.name
        return #asked % 2 == 0 and GPU or nil
      end}(m)
      return table.concat(asked, " "), dp.astext(out)
    end
    local asked, text = annotate(false)
    assert.equal("negative multiply exp add tanh", asked)
    local asked2, text2 = annotate(true)
    assert.equal(asked, asked2)
    assert.equal(text, text2)
    -- and the module annotated afterwards, alone, as before
    local again, text3 = annotate(false)
    assert.equal(asked, again)
    assert.equal(text, text3)
  end

  it("a rule that plans the module it annotates changes nothing (the walk's records are found by mark)", function()
    -- PlanDevices numbers the module's shared nodes by their marks, which the
    -- annotation's walk uses to find what it knows of a node: a placed call,
    -- a shared call already rewritten
    annotated_while(function(m) dp.passes.PlanDevices(t.config("cpu"))(m) end)
  end)

  it("a rule that annotates the module it is annotating changes nothing (the nested run leaves the outer's flags)", function()
    annotated_while(function(m) dp.passes.AnnotateVirtualDevices{["*"] = function() return GPU end}(m) end)
  end)

  it("capability(call, vd) names what it needs", function()
    local a = dp.passes.AnnotateVirtualDevices{add = function() end}
    local ok, err = pcall(a.capability, dp.fn({}, dp.const(1.0)), GPU)
    assert.is_false(ok)
    assert.equal("value", err.code)
    assert.truthy(tostring(err):find("argument 1 must be a call, got a fn", 1, true), tostring(err))
    ok, err = pcall(a.capability, dp.call("add", {dp.const(1.0), dp.const(2.0)}), "cuda")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("argument 2 must be a VirtualDevice", 1, true), tostring(err))
  end)
end)
