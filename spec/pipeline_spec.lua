-- Pipelines (lua/devplan/pass.lua, context.lua, instruments.lua,
-- pipeline.lua, verify.lua): dp.Sequential, pass contexts and their
-- instruments, errors naming the pass, textual pipelines and the registry.
local dp = require "devplan"
local testing = require "devplan.testing"

local TEXT = testing.SMALL_MODULE

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
local function module() return dp.parse(TEXT) end
local function count(m, op) return testing.count_calls(m, op) end

describe("dp.Sequential", function()
  it("runs its passes in order in one context and prints as a list", function()
    local order = {}
    local function step(name)
      return dp.pass(name, function(m, ctx) order[#order + 1] = name .. ":" .. tostring(ctx.options.tag); return m end)
    end
    local seq = dp.Sequential{step("A"), dp.Sequential{step("B"), step("C")}}
    assert.equal("Sequential{A, Sequential{B, C}}", tostring(seq))
    seq(module(), dp.PassContext{options = {tag = 7}})
    assert.same({"A:7", "B:7", "C:7"}, order)
  end)

  it("plans as PlanDevices does after an annotation pass", function()
    local annotate = dp.passes.AnnotateVirtualDevices{exp = function() return dp.VirtualDevice{device_type = "cuda"} end}
    local out = dp.Sequential{dp.passes.InferType(), annotate, dp.passes.PlanDevices(config)}(module())
    dp.assert_structural_equal(dp.passes.PlanDevices(config)(annotate(module())), out)
    assert.equal(1, count(out, "device_copy"))
  end)

  it("rejects what is not a list of passes", function()
    assert.has_error(function() dp.Sequential(3) end, "devplan.Sequential: a list of passes expected, got number")
    assert.has_error(function() dp.Sequential{dp.passes.InferType(), 5} end,
                     "devplan.Sequential: item 2 is a number, not a pass (dp.pass)")
    assert.has_error(function() dp.Sequential{x = dp.passes.InferType()} end)
  end)
end)

describe("dp.PassContext", function()
  it("rejects unknown options and bad instruments", function()
    assert.has_error(function() dp.PassContext{verbose = true} end)
    local ok, err = pcall(dp.PassContext, {instruments = {{bfore = function() end}}})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown callback 'bfore'", 1, true), tostring(err))
    assert.has_error(function() dp.PassContext{config = 3} end)
    assert.has_error(function() dp.PassContext{print_after = 3} end)
  end)

  it("times every pass, nested ones indented, and reports a total", function()
    local ctx = dp.PassContext{time = true}
    dp.Sequential{dp.passes.InferType(), dp.passes.PlanDevices(config)}(module(), ctx)
    assert.equal(3, #ctx.timings)
    assert.equal("Sequential{InferType, PlanDevices}", ctx.timings[1].pass)
    assert.equal(0, ctx.timings[1].depth)
    assert.equal("InferType", ctx.timings[2].pass)
    assert.equal(1, ctx.timings[2].depth)
    for _, t in ipairs(ctx.timings) do assert.is_true(t.seconds >= 0) end
    local text = ctx:timing_report()
    assert.truthy(text:find("\n%s+[%d.]+%s+[%d.]+%%    PlanDevices\n"), text)
    assert.truthy(text:find("total\n$"), text)
  end)

  it("prints before and after all passes, after named ones, or after those that changed the module", function()
    local seen = {}
    local function ctx(opts)
      seen = {}
      opts.output = function(s) seen[#seen + 1] = s end
      return dp.PassContext(opts)
    end
    local pipeline = dp.pipeline.build("infer_type,annotate(exp=cuda),plan_devices", {config = config})
    pipeline(module(), ctx{print_after = "all"})
    assert.equal(3, #seen)
    assert.truthy(seen[1]:find("^// %-%-%-%- after InferType %-%-%-%-\n#%[version"), seen[1])
    pipeline(module(), ctx{print_after = "changed", print_options = {short_devices = true}})
    assert.equal(2, #seen) -- InferType changed nothing
    assert.truthy(seen[2]:find("^// %-%-%-%- after PlanDevices"), seen[2])
    assert.truthy(seen[2]:find("device_copy(%2, src_virtual_device=@cuda, dst_virtual_device=@cpu)", 1, true), seen[2])
    pipeline(module(), ctx{print_before = {"plan_devices"}, print_after = {"AnnotateVirtualDevices"}})
    assert.equal(2, #seen)
    assert.truthy(seen[1]:find("^// %-%-%-%- after AnnotateVirtualDevices"), seen[1])
    assert.truthy(seen[2]:find("^// %-%-%-%- before PlanDevices"), seen[2])
  end)

  it("calls a user's instruments around each pass; should_run may skip one", function()
    local log = {}
    local inst = {
      should_run = function(p) return p.name ~= "InferType" end,
      before = function(p, m, ctx) log[#log + 1] = "before " .. p.name .. " " .. ctx.depth end,
      after = function(p, m, res) log[#log + 1] = "after " .. p.name .. " " .. tostring(rawequal(m, res)) end,
      failed = function(p, err) log[#log + 1] = "failed " .. p.name .. " " .. err.pass end,
    }
    local boom = dp.pass("Boom", function() error("no") end)
    local ctx = dp.PassContext{instruments = {inst}}
    dp.Sequential{dp.passes.InferType(), dp.passes.PlanDevices(config)}(module(), ctx)
    assert.same({"before Sequential 0", "before PlanDevices 1", "after PlanDevices false", "after Sequential false"}, log)
    log = {}
    assert.has_error(function() dp.Sequential{boom}(module(), ctx) end)
    assert.same({"before Sequential 0", "before Boom 1", "failed Boom Boom", "failed Sequential Boom"}, log)
  end)

  it("names the failing pass in the error, keeping a devplan.Error's code and position", function()
    local boom = dp.pass("Boom", function() error("kaboom") end)
    local ok, err = pcall(dp.Sequential{dp.passes.InferType(), boom, dp.passes.InferType()}, module())
    assert.is_false(ok)
    assert.is_true(dp.is_error(err))
    assert.equal("Boom", err.pass)
    assert.equal("callback", err.code)
    assert.truthy(tostring(err):find("pass Boom failed: .*kaboom"), tostring(err))
    -- a conflict inside PlanDevices keeps its code, position and notes
    local conflict = dp.parse([[
def @main(%a: Tensor[(5, 7), float32]) {
  %0 = on_device(%a, virtual_device=meta[VirtualDevice][0]);
  %1 = on_device(%a, virtual_device=meta[VirtualDevice][1]);
  add(%0, %1)
}]], testing.META, {source_name = "c.relay"})
    ok, err = pcall(dp.Sequential{dp.passes.PlanDevices(config)}, conflict)
    assert.is_false(ok)
    assert.equal("conflict", err.code)
    assert.equal("PlanDevices", err.pass)
    assert.equal(3, err.line)
    assert.truthy(tostring(err):find("^c%.relay:3:8: conflicting virtual devices"), tostring(err))
    assert.truthy(tostring(err):find("\n  in pass PlanDevices$"), tostring(err))
    -- a pass that returns something else than a module
    ok, err = pcall(dp.pass("Bad", function() return 3 end), module())
    assert.truthy(tostring(err):find("pass Bad returned a number, not an IRModule", 1, true), tostring(err))
  end)

  it("verifies after each pass: types, and the plan once planned", function()
    -- a pass that builds an ill-typed module
    local bad_types = dp.pass("BadTypes", function(m)
      local a = m.main.params[1]
      local wrong = dp.fn({a}, dp.call("add", {a, dp.const({1, 2, 3})}))
      return dp.IRModule{functions = {{"main", wrong}}}
    end)
    local ok, err = pcall(dp.Sequential{bad_types}, module(), dp.PassContext{verify_each = true})
    assert.is_false(ok)
    assert.equal("type", err.code)
    assert.equal("BadTypes", err.pass)
    assert.truthy(tostring(err):find("after pass BadTypes", 1, true), tostring(err))
    -- without verify_each the same pipeline goes through
    assert.is_true(dp.is_module(dp.Sequential{bad_types}(module())))
    -- a pass that moves a planned value to another device breaks the plan
    local move = dp.pass("MoveResult", function(m)
      return dp.rewrite(m, {fn = function(f)
        return dp.fn(f.params, f.body, {virtual_device = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0,
          target = dp.Target("cuda"):with_host(dp.Target("llvm"))}})
      end})
    end)
    local plan = dp.passes.PlanDevices(config)
    ok, err = pcall(dp.Sequential{plan, move}, module(), dp.PassContext{verify_each = true})
    assert.is_false(ok)
    assert.equal("MoveResult", err.pass)
    assert.truthy(tostring(err):find("after pass MoveResult", 1, true), tostring(err))
    -- the same check as a pass
    ok, err = pcall(dp.Sequential{plan, move, dp.passes.Verify()}, module())
    assert.is_false(ok)
    assert.equal("Verify", err.pass)
    -- a correct pipeline verifies
    assert.is_true(dp.is_module(dp.Sequential{plan, dp.passes.Verify()}(module(), dp.PassContext{verify_each = true})))
  end)
end)

describe("textual pipelines", function()
  it("parse and print back exactly", function()
    local examples = {
      "infer_type,annotate(rules=rules.lua),plan_devices(default=cuda),partition(by=target)",
      "infer_type",
      "annotate(nn.conv2d=cuda:1.texture,nn.dense=cuda),verify(planned=true)",
      "annotate(rules='my rules (v2).lua'),plan_devices",
    }
    if not dp.pipeline.entry("partition") then
      -- PartitionByVirtualDevice arrives from another branch: a stand-in name for the syntax
      dp.pipeline.register{name = "partition", options = {by = "key"}, make = function() return dp.passes.InferType() end}
    end
    for _, text in ipairs(examples) do assert.equal(text, tostring(dp.pipeline.parse(text))) end
    assert.equal("infer_type,plan_devices(default=cuda,strict=true)",
                 tostring(dp.pipeline.parse("  infer_type ,plan_devices( default = cuda , strict=true )  ")))
    local p = dp.pipeline.parse(examples[1])
    assert.equal(4, #p.items)
    assert.equal("plan_devices", p.items[3].name)
    assert.same({"default", "cuda"}, {p.items[3].args[1][1], p.items[3].args[1][2]})
  end)

  it("give positioned errors with the name that was probably meant", function()
    local cases = {
      {"infer_type,plan_devics", 12, "unknown pass 'plan_devics'; did you mean 'plan_devices'?"},
      {"plan_devices(defualt=cuda)", 14, "plan_devices: unknown option 'defualt'; did you mean 'default'?"},
      {"infer_type,,verify", 12, "expected a pass name, found ','"},
      {"plan_devices(default=cuda", 26, "expected ',' or ')' at the end"},
      {"plan_devices(default)", 21, "expected '=' after option 'default'"},
      {"infer_type verify", 12, "expected ',' between passes, found 'v'"},
      {"annotate(nn.conv2x=cuda)", 10, "unknown operator or option 'nn.conv2x'; did you mean 'nn.conv2d'?"},
      {"annotate(rules='x.lua)", 16, "unterminated string"},
      {"verify(planned=true,planned=false)", 21, "option 'planned' given twice"},
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(dp.pipeline.parse, c[1])
      assert.is_false(ok, c[1])
      assert.is_true(dp.is_error(err), c[1])
      assert.equal("pipeline", err.source)
      assert.equal(1, err.line)
      assert.equal(c[2], err.col, c[1] .. ": " .. tostring(err))
      assert.truthy(err.message:find(c[3], 1, true), c[1] .. ": " .. err.message)
    end
  end)

  it("build passes from the registry, with the configuration given", function()
    local p = dp.pipeline.build("infer_type,annotate(exp=cuda),plan_devices(default=cpu),verify", {config = config})
    assert.equal("Sequential{InferType, AnnotateVirtualDevices(exp=cuda), PlanDevices, Verify}", tostring(p))
    local out = p(module())
    assert.equal(1, count(out, "device_copy"))
    local ok, err = pcall(dp.pipeline.build, "plan_devices(default=tpu)")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("^pipeline:1:1: plan_devices: .*unknown device type 'tpu'"), tostring(err))
    ok, err = pcall(dp.pipeline.build, "annotate(exp=tpu)")
    assert.truthy(tostring(err):find("unknown device type 'tpu'", 1, true), tostring(err))
    ok, err = pcall(dp.pipeline.build, "plan_devices(strict=yes)")
    assert.truthy(tostring(err):find("option 'strict' must be true or false, got 'yes'", 1, true), tostring(err))
  end)

  it("take annotation rules from a Lua file returning a pass or a list of passes", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write([[
local dp = require "devplan"
local gpu = dp.VirtualDevice{device_type = "cuda"}
return {dp.passes.AnnotateVirtualDevices{exp = function() return gpu end},
        dp.passes.AnnotateVirtualDevices{negative = function() return gpu end}}
]])
    f:close()
    local out = dp.pipeline.build("annotate(rules=" .. path .. "),plan_devices", {config = config})(module())
    -- both rules ran: negative and exp on the GPU, the add on the CPU (the default)
    assert.equal(2, count(out, "device_copy"))
    f = assert(io.open(path, "w"))
    f:write("return 42")
    f:close()
    local ok, err = pcall(dp.pipeline.build, "annotate(rules=" .. path .. ")")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("must return a pass or a list of passes", 1, true), tostring(err))
    os.remove(path)
  end)

  it("can name passes users register, by entry or by pass value", function()
    local calls = 0
    dp.pipeline.register{name = "count_me_spec", help = "counts", options = {by = "step"},
      make = function(args) return dp.pass("CountMe", function(m) calls = calls + tonumber(args.by or 1); return m end) end}
    dp.pipeline.register(dp.pass("MyIdentitySpec", function(m) return m end))
    assert.truthy(dp.pipeline.entry("my_identity_spec"))
    dp.pipeline.build("count_me_spec(by=2),my_identity_spec,count_me_spec")(module())
    assert.equal(3, calls)
    assert.has_error(function() dp.pipeline.register{name = "count_me_spec", make = function() end} end,
                     "devplan.pipeline.register: 'count_me_spec' is registered already")
    assert.has_error(function() dp.pipeline.register{name = "x y", make = function() end} end)
    assert.has_error(function() dp.pipeline.register{name = "z", make = function() end, colour = 1} end)
    local names = dp.pipeline.names()
    for _, n in ipairs{"infer_type", "annotate", "plan_devices", "verify", "count_me_spec"} do
      local found = false
      for _, m in ipairs(names) do found = found or m == n end
      assert.is_true(found, n)
    end
  end)

  it("dp.pipeline.text writes items a program builds", function()
    assert.equal("annotate(nn.conv2d=cuda),plan_devices(strict=true)",
                 dp.pipeline.text{{"annotate", {{"nn.conv2d", "cuda"}}}, {"plan_devices", {{"strict", "true"}}}})
    assert.has_error(function() dp.pipeline.text{{"nonsense"}} end)
  end)
end)

describe("dp.Error", function()
  it("makes devplan.Errors from Lua, formatted as the C ones", function()
    local e = dp.Error{message = "boom", code = "value", source = "x.relay", line = 3, col = 4,
                       notes = {{message = "see here", line = 1, col = 2}, {message = "and this"}}}
    assert.is_true(dp.is_error(e))
    assert.equal("x.relay:3:4: boom\n  1:2: see here\n  and this", tostring(e))
    assert.equal("boom", dp.Error{message = "boom"}.formatted)
    assert.is_false(dp.is_error({formatted = "x"}))
    local ok, c_err = pcall(dp.Target, "tpu")
    assert.is_false(ok)
    assert.is_true(dp.is_error(c_err))
    assert.has_error(function() dp.Error{message = "m", code = "weird"} end)
    assert.has_error(function() dp.Error{code = "value"} end)
  end)
end)
