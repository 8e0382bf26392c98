-- "Computed here, read anywhere" (docs/planner-semantics.md): under
-- PlanDevices' default rules a plain on_device(e, virtual_device=D) says e
-- is computed on D; where its result is demanded on devices that cannot
-- join (TVM's rules: a conflict), each reader on another device reads a
-- copy, one per destination device, shared. resolve_conflicts = "tvm"
-- (--first-conflict), strict planning and constrain_result=True keep TVM's
-- conflict; where TVM's rules plan, the plan is theirs.
local dp = require "devplan"
local t = require "devplan.testing"
local proc = dofile((dp.root or ".") .. "/spec/support/proc.lua")

local CONFIG = t.config("cuda")
local plan = t.plan(CONFIG)
local tvm = dp.passes.PlanDevices(CONFIG, {resolve_conflicts = "tvm"})
local strict = dp.passes.PlanDevices(CONFIG, {resolve_conflicts = false})
local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"
local TY = "Tensor[(5, 7), float32]"

local function parse(text) return dp.parse(text, t.META) end
local function copies(m) return t.count_calls(m, "device_copy") end

-- abs on the accelerator read there (relu) and on the host (tanh): BYOC's
-- commonest shape (merge_compiler_regions' test_diamond_graph_fanouts),
-- annotated as AnnotateVirtualDevices does
local DIAMOND = ([[
def @main(%data: TY) {
  %0 = abs(%data);
  %1 = on_device(%0, virtual_device=GPU);
  %2 = nn.relu(%1);
  %3 = on_device(%2, virtual_device=GPU);
  %4 = tanh(%1);
  %5 = on_device(%4, virtual_device=CPU);
  %6 = add(%3, %5);
  on_device(%6, virtual_device=GPU)
}]]):gsub("TY", TY):gsub("GPU", GPU):gsub("CPU", CPU)

describe("computed here, read anywhere", function()
  it("plans the diamond: abs on the GPU, one copy of it to the host for tanh", function()
    assert.plans_to(DIAMOND, ([[
def @main(%data {virtual_device=GPU}: TY, virtual_device=GPU) {
  %0 = abs(%data);
  %1 = nn.relu(%0);
  %2 = on_device(%0, virtual_device=GPU, constrain_result=True);
  %3 = device_copy(%2, src_virtual_device=GPU, dst_virtual_device=CPU);
  %4 = tanh(%3);
  %5 = on_device(%4, virtual_device=CPU, constrain_result=True);
  %6 = device_copy(%5, src_virtual_device=CPU, dst_virtual_device=GPU);
  add(%1, %6)
}]]):gsub("TY", TY):gsub("GPU", GPU):gsub("CPU", CPU), CONFIG, t.META)
  end)

  it("keeps TVM's conflict with resolve_conflicts = \"tvm\", strict planning, or a fixed result", function()
    for _, pass in ipairs{tvm, strict} do
      local ok, err = pcall(pass, parse(DIAMOND))
      assert.is_false(ok)
      assert.are.equal("conflict", err.code)
    end
    local fixed = DIAMOND:gsub("%%1 = on_device%(%%0, virtual_device=([^)]*)%)", "%%1 = on_device(%%0, virtual_device=%1, constrain_result=True)")
    assert.are_not.equal(DIAMOND, fixed)
    local ok, err = pcall(plan, parse(fixed))
    assert.is_false(ok)
    assert.are.equal("conflict", err.code)
  end)

  it("gives the readers on one other device one copy, shared, and the rest none", function()
    local planned = plan(parse(([[
def @main(%a: TY, %b: TY) {
  %0 = on_device(add(%a, %b), virtual_device=GPU);
  %1 = on_device(negative(%0), virtual_device=CPU);
  %2 = on_device(exp(%0), virtual_device=CPU);
  %3 = on_device(tanh(%0), virtual_device=GPU);
  %4 = on_device(multiply(%1, %2), virtual_device=CPU);
  (%3, %4, %0)
}]]):gsub("TY", TY):gsub("GPU", GPU):gsub("CPU", CPU)))
    -- %0 to the CPU once (negative and exp), the product back once
    assert.are.equal(2, copies(planned))
    local text = tostring(planned)
    assert.truthy(text:find("negative%((%%%d+)%);\n  %%%d+ = exp%(%1%)"), text)
  end)

  it("copies for a reader that is no call: a tuple field, a copy's source", function()
    local input = parse(([[
def @main(%a: TY) {
  %0 = on_device(nn.relu(%a), virtual_device=CPU);
  %1 = on_device(concatenate((%0, %0), axis=0), virtual_device=GPU);
  %2 = device_copy(%0, src_virtual_device=GPU, dst_virtual_device=CPU);
  %3 = on_device(negative(%0), virtual_device=CPU);
  (%1, %2, %3)
}]]):gsub("TY", TY):gsub("GPU", GPU):gsub("CPU", CPU))
    assert.has_error(function() tvm(input) end)
    local planned = plan(input)
    -- relu's value to the GPU once (the tuple's two fields and the copy's
    -- source), the user's copy back, the concatenation to the body's CPU
    assert.are.equal(3, copies(planned))
    assert.structurally_equal(planned, plan(planned))
  end)

  it("plans as TVM's rules wherever they plan (generated programs)", function()
    package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
    local df = require "relaygen_dataflow"
    local same, anywhere, n = 0, 0, os.getenv("DEVPLAN_QUICK") and 300 or 1500
    for seed = 1, n do
      local prog = df.program(seed)
      local config = t.config(prog.default == 1 and "cpu" or "cuda")
      local mod = parse(prog.text)
      local ok1, a = pcall(dp.passes.PlanDevices(config, {resolve_conflicts = "tvm"}), mod)
      local ok2, b = pcall(dp.passes.PlanDevices(config), mod)
      if ok1 then
        assert.is_true(ok2, prog.text)
        assert.are.equal(tostring(a), tostring(b))
        same = same + 1
      elseif ok2 then
        anywhere = anywhere + 1
        local _, total = dp.planner.verify(b, config, {input = mod})
        assert.are.equal(0, total, prog.text)
        assert.structurally_equal(b, dp.passes.PlanDevices(config)(b))
      end
    end
    assert.is_true(same > n // 5 and anywhere > n // 300, same .. " the same, " .. anywhere .. " only read anywhere")
  end)

  it("is the command line's default; --first-conflict is TVM's behaviour", function()
    local f = t.temp_file(DIAMOND)
    local r = proc.run({"plan", f})
    assert.are.equal(0, r.status, r.out)
    assert.truthy(r.stdout:find("tanh", 1, true))
    r = proc.run({"plan", f, "--first-conflict"})
    assert.are.equal(1, r.status)
    assert.truthy(r.stderr:find("conflicting virtual devices", 1, true), r.stderr)
  end)
end)

describe("a conflict at an annotation a pass inserted", function()
  it("names the call it wraps and that call's position", function()
    local m = dp.parse("def @main(%data: " .. TY .. ") {\n  %0 = abs(%data);\n  %1 = nn.relu(%0);\n"
      .. "  %2 = tanh(%0);\n  add(%1, %2)\n}")
    local rules = {abs = function() return t.PALETTE.GPU end, ["nn.relu"] = function() return t.PALETTE.GPU end,
                   add = function() return t.PALETTE.GPU end, ["*"] = function() return t.PALETTE.CPU end}
    local annotated = dp.passes.AnnotateVirtualDevices(rules, {config = CONFIG})(m)
    local ok, err = pcall(tvm, annotated)
    assert.is_false(ok)
    local s = tostring(err)
    assert.truthy(s:find("^<string>:4:8: conflicting virtual devices at the annotation on_device of tanh at <string>:4:8: "), s)
    assert.truthy(s:find("because of the annotation on_device of nn.relu at <string>:3:8", 1, true), s)
    assert.falsy(s:find("on_device:", 1, true), s)
    assert.are.same({4, 8}, {err.line, err.col})
    -- and the default rules plan it
    assert.are.equal(2, copies(plan(annotated)))
  end)
end)

describe("allocation failures in read anywhere, placement by cost and ShareCopies", function()
  after_each(function() dp.debug.fail_alloc(0) end)
  local W = dofile((dp.root or ".") .. "/spec/support/oom_workload.lua")
  -- a value read on two devices by calls, a tuple and a copy's source; the
  -- user's copies of one value, to the same device and to itself; in each
  -- mode, with ShareCopies; the conflict TVM's rules word
  local texts = {(([[
def @main(%a: TY) {
  %0 = on_device(nn.relu(%a), virtual_device=CPU);
  %1 = on_device(concatenate((%0, %0), axis=0), virtual_device=GPU);
  %2 = device_copy(%0, src_virtual_device=GPU, dst_virtual_device=CPU);
  %3 = on_device(negative(%0), virtual_device=CPU);
  %4 = on_device(exp(%0), virtual_device=GPU);
  (%1, %2, %3, %4)
}]]):gsub("TY", TY):gsub("GPU", GPU):gsub("CPU", CPU)), (([[
def @main(%x: TY, %y: TY) {
  %0 = on_device(nn.relu(%x), virtual_device=CPU);
  %1 = device_copy(%0, src_virtual_device=GPU, dst_virtual_device=CPU);
  %2 = device_copy(%0, src_virtual_device=GPU, dst_virtual_device=CPU);
  %3 = device_copy(%y, src_virtual_device=GPU, dst_virtual_device=GPU);
  %4 = add(%1, %3);
  %5 = add(%4, %2);
  (%5, concatenate((%0, %0), axis=0))
}]]):gsub("TY", TY):gsub("GPU", GPU):gsub("CPU", CPU))}
  local share = dp.passes.ShareCopies()
  local function run()
    local out = {}
    for _, text in ipairs(texts) do
      local m = dp.parse(text, t.META)
      for _, o in ipairs{{}, {placement = "min_bytes"}, {resolve_conflicts = "tvm"}} do
        local ok, r = pcall(dp.passes.PlanDevices(CONFIG, o), m)
        if not ok and W.is_oom(r) then error(r, 0) end
        out[#out + 1] = ok and tostring(share(r)) or tostring(r)
      end
    end
    return table.concat(out, "\n")
  end

  it("each is an out-of-memory error, and the next run gives the clean answer", function()
    local step = t.instrumented and 7 or 1
    local problems, runs = W.walk{run = run, step = step}
    assert.are.same({}, problems)
    assert.is_true(runs > 100, tostring(runs))
    assert.are.same({}, (W.walk{run = run, step = step, persistent = true}))
  end)
end)
