-- The REPL's evaluation and helpers without a terminal (lua/devplan/repl.lua:
-- repl.session(), session:eval(line) returns what the REPL prints).
local repl = require "devplan.repl"
local testing = require "devplan.testing"

local TWO = "def @main(%a: Tensor[(5, 7), float32]) {\n"
  .. "  %0 = on_device(negative(%a), virtual_device=meta[VirtualDevice][0]);\n"
  .. "  %1 = on_device(exp(%a), virtual_device=meta[VirtualDevice][1]);\n"
  .. "  (%0, %1)\n}"

describe("the REPL", function()
  it("prints bare expressions and =expr, runs statements, reads unfinished chunks on", function()
    local s = repl.session()
    assert.equal("2\n", s:eval("1 + 1"))
    assert.equal("", s:eval("x = 40"))
    assert.equal("42\tfoo\n", s:eval("=x + 2, 'foo'"))
    assert.equal("", s:eval("function f(a)"))
    assert.equal("", s:eval("  return a * 2"))
    assert.equal("", s:eval("end"))
    assert.equal("84\n", s:eval("f(x + 2)"))
    assert.equal("cuda\n", s:eval("dp.Target('cuda').kind"))
  end)

  it("shows errors and goes on", function()
    local s = repl.session()
    assert.equal("stdin:1: boom\n", s:eval("error('boom')"))
    assert.truthy(s:eval("dp.Target('tpu')"):find("^unknown target kind 'tpu'"))
    assert.truthy(s:eval("x = = 1"):find("unexpected symbol", 1, true))
    assert.truthy(s:eval("explain('%1')"):find("no model yet", 1, true))
    assert.truthy(s:eval("model('nothere.relay')"):find("model: cannot open nothere.relay", 1, true))
    assert.truthy(s:eval("config{default = 'cuda', tragets = {}}"):find("unknown option 'tragets'", 1, true))
    assert.equal("3\n", s:eval("1 + 2"))
  end)

  it("loads a model, annotates, plans, and explains why a copy was inserted", function()
    local s = repl.session()
    assert.truthy(s:eval("model(" .. string.format("%q", testing.shared_dir .. "/models/resnet18.relay") .. ")")
      :find("^model: 1 function%(s%), 72 calls"))
    assert.equal("annotated: 22 on_device\n", s:eval('annotate{["nn.conv2d"] = "cuda", ["nn.dense"] = "cuda"}'))
    assert.truthy(s:eval("plan()"):find("^planned: 1 device_copy, 4000 bytes copied"))
    local why = s:eval('explain("%90")')
    assert.truthy(why:find("^%%90 is a device_copy PlanDevices inserted: it copies a Tensor%[%(1, 1000%), float32%] %(4,000 bytes%) from @cuda to @cpu"), why)
    assert.truthy(why:find("nn.dense at [^\n]*resnet18.relay:91:9 is on cuda because of the annotation on_device"), why)
    assert.truthy(why:find("nn.bias_add at [^\n]*resnet18.relay:92:9 is on cpu because of the default device %(configuration%) for the result of"), why)
    assert.truthy(s:eval('explain("%89")'):find("^%%89 is an on_device PlanDevices wrote"))
    assert.equal('VirtualDevice(device_type=cpu, virtual_device_id=0, target="llvm -host=llvm")\n', s:eval('device("%90")'))
    assert.equal('VirtualDevice(device_type=cuda, virtual_device_id=0, target="cuda -host=llvm")\n', s:eval('device("@main:%88")'))
    assert.truthy(s:eval("report()"):find("1 device_copy, 4,000 bytes:", 1, true))
    assert.truthy(s:eval("show()"):find("\n// @cuda = VirtualDevice", 1, true))
    assert.truthy(s:eval('show("%90")'):find("device_copy(", 1, true))
    assert.truthy(s:eval('explain("%9999")'):find("^no value is printed %%9999"))
    local svg = os.tmpname() .. ".svg"
    assert.equal("drawn: " .. svg .. "\n", s:eval("draw(" .. string.format("%q", svg) .. ")"))
    assert.truthy(testing.read_file(svg):find("<svg", 1, true))
    os.remove(svg)
    local t = s:eval('time("infer_type,plan_devices")')
    assert.truthy(t:find("pass timings (CPU seconds)", 1, true), t)
    assert.truthy(t:find("PlanDevices\n", 1, true), t)
  end)

  it("steps through the planner's phases one at a time", function()
    local s = repl.session()
    s:eval("model(" .. string.format("%q", TWO) .. ")")
    s:eval("config{default = 'cpu'}")
    local out = {}
    for i = 1, 5 do out[i] = s:eval("step()") end
    assert.truthy(out[1]:find("^phase 0, rewrite"), out[1])
    assert.truthy(out[2]:find("^phase 0b, conflicts: 1 copy allowed"), out[2])
    assert.truthy(out[2]:find("on_device(%a, constrain_body=False)", 1, true), out[2])
    assert.truthy(out[3]:find("^phase 1, analyze: 4 of 6 named values have a device"), out[3])
    assert.truthy(out[3]:find("\n  @main %1       ?", 1, true), out[3])
    assert.truthy(out[4]:find("^phase 2, default: 6 of 6 named values have a device"), out[4])
    assert.truthy(out[5]:find("^phase 3, capture: the planned module"), out[5])
    assert.truthy(out[5]:find("device_copy(%3, src_virtual_device=@cuda, dst_virtual_device=@cpu)", 1, true), out[5])
    -- the plan stepped to is the one plan() makes
    local stepped = s.env.planned
    s:eval("plan()")
    assert.is_true(require("devplan").structural_equal(stepped, s.env.planned))
    assert.truthy(s:eval("step()"):find("^phase 0, rewrite")) -- and it starts again
  end)

  it("completes names of the environment and fields of values", function()
    local s = repl.session()
    s:eval("model(" .. string.format("%q", TWO) .. ")")
    assert.same({"dp.planner"}, s:complete("dp.plan"))
    assert.same({"dp.pass", "dp.passes"}, s:complete("dp.pass"))
    local ex = s:complete("dp.planner.ex")
    assert.same({"dp.planner.explain"}, ex)
    assert.same({"mod:functions"}, s:complete("mod:fun"))
    assert.same({"mod.main"}, s:complete("mod.ma"))
    local any = s:complete("ann")
    assert.equal("annotate", any[1])
    assert.same({"function"}, s:complete("functio"))
    assert.same({}, s:complete("nothing_like_this."))
  end)
end)
