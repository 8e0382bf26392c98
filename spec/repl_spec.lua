-- The REPL's evaluation and helpers without a terminal (lua/devplan/repl.lua:
-- repl.session(), session:eval(line) returns what the REPL prints).
local repl = require "devplan.repl"
local testing = require "devplan.testing"

local TWO = "def @main(%a: Tensor[(5, 7), float32]) {\n"
  .. "  %0 = on_device(negative(%a), virtual_device=meta[VirtualDevice][0]);\n"
  .. "  %1 = on_device(exp(%a), virtual_device=meta[VirtualDevice][1]);\n"
  .. "  (%0, %1)\n}"
-- TWO and a call nobody annotated
local THREE = TWO:gsub("  %(%%0, %%1%)\n}$", "  %%2 = add(%%a, %%a);\n  (%%0, %%1, %%2)\n}")
assert(THREE ~= TWO)

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
    assert.truthy(s:eval("model(" .. string.format("%q", require("devplan").root .. "/models/resnet18.relay") .. ")")
      :find("^model: 1 function%(s%), 72 calls"))
    assert.equal("annotated: 22 on_device\n", s:eval('annotate{["nn.conv2d"] = "cuda", ["nn.dense"] = "cuda"}'))
    assert.truthy(s:eval("plan()"):find("^planned: 1 device_copy, 4,000 bytes copied"))
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
    local svg = testing.temp_file("", ".svg")
    assert.equal("drawn: " .. svg .. "\n", s:eval("draw(" .. string.format("%q", svg) .. ")"))
    assert.truthy(testing.read_file(svg):find("<svg", 1, true))
    testing.remove_temp_files()
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
    -- and it starts again, saying that planned is dropped
    local again = s:eval("step()")
    assert.truthy(again:find("^%(planned is nil now: step%(%) started planning mod again; the last step%(%) sets it%)\nphase 0, rewrite"), again)
    assert.is_nil(s.env.planned)
  end)

  it("says when its state changes, and answers about planned only", function()
    local s = repl.session()
    assert.truthy(s:eval("report()"):find("^no model yet"))
    s:eval("model(" .. string.format("%q", THREE) .. ")")
    assert.equal("nothing is planned yet: plan() (or step() through the phases) first\n", s:eval("report()"))
    assert.equal("nothing is planned yet: plan() (or step() through the phases) first\n", s:eval('device("%0")'))
    assert.truthy(s:eval("show()"):find("^// mod %(not planned: plan%(%) plans it%)\n"))
    s:eval("plan()")
    assert.truthy(s:eval("show()"):find("^// planned: the plan of mod\n"))
    assert.truthy(s:eval('device("%0")'):find("VirtualDevice", 1, true))
    -- each change of mod or the configuration drops the plan and says so
    -- (negative is placed already: the first annotation wins, nothing changes)
    assert.equal("annotated: 2 on_device (nothing new: each call named is placed already; mod and planned stay)\n",
                 s:eval('annotate{negative = "cuda"}'))
    assert.truthy(s:eval('device("%0")'):find("VirtualDevice", 1, true))
    assert.equal("annotated: 3 on_device\n(planned is nil now: annotate() changed mod; plan() plans again)\n",
                 s:eval('annotate{add = "cuda"}'))
    assert.equal("nothing is planned: annotate() changed mod since the last plan; plan() again\n", s:eval('explain("%0")'))
    s:eval("plan()")
    assert.truthy(s:eval("config{default = 'cuda'}"):find("\n%(planned is nil now: config%(%) changed the configuration; plan%(%) plans again%)\n$"))
    assert.truthy(s:eval("report()"):find("^nothing is planned: config%(%) changed the configuration"))
    s:eval("plan()")
    assert.truthy(s:eval("model(" .. string.format("%q", THREE) .. ")"):find("\n%(planned is nil now: model%(%) loaded another module; plan%(%) plans again%)\n$"))
    -- no message when there was nothing to drop
    assert.equal("annotated: 3 on_device\n", s:eval('annotate{add = "cuda"}'))
    -- in the middle of a step() cycle: the helpers say where it is
    s:eval("step()")
    s:eval("step()")
    assert.equal("nothing is planned yet: step() is at phase 0b, conflicts of 5 (next: phase 1, analyze); "
      .. "step() on to the capture, or plan()\n", s:eval('device("%1")'))
    assert.truthy(s:eval("show()"):find("^// mod at phase 0b, conflicts of step%(%) %(not planned yet%)\n"))
    assert.truthy(s:eval("plan()"):find("^%(the step%(%) cycle at phase 0b, conflicts is left%)\nplanned: "))
    -- mod assigned by hand: planned is not its plan any more
    s:eval("mod = dp.parse(" .. string.format("%q", THREE) .. ", {VirtualDevice = {dp.VirtualDevice{device_type = 'cpu'}, "
      .. "dp.VirtualDevice{device_type = 'cuda'}}})")
    assert.equal("planned is the plan of another module than mod (mod was assigned since): plan() again\n",
                 s:eval("report()"))
    assert.truthy(s:eval("step()"):find("^%(planned is nil now: step%(%) started planning mod again; the last step%(%) sets it%)\nphase 0, rewrite"))
    s:eval("mod = dp.parse('def @main(%x: Tensor[(2), float32]) { negative(%x) }')")
    assert.truthy(s:eval("step()"):find("^mod changed since step%(%) began"))
    s:eval("plan()")
    assert.truthy(s:eval("report()"):find("^device ", 1))
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
