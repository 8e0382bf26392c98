-- dp.passes.ShareCopies (src/planner/share.c): one device_copy per value and
-- device pair, made where it dominates every use it serves (before the
-- branches or closures that each copied the value). On every
-- conformance case, the models and generated programs, the
-- result passes the verifier against the input, re-plans to itself,
-- re-parses to itself, and copies no more than PlanDevices' plan.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local props = require "props"

local share = dp.passes.ShareCopies()
local TY = "Tensor[(5, 7), float32]"

local function copies(mod) return testing.count_calls(mod, "device_copy") end

-- The properties of a shared plan: verifier, idempotence, round trip, fewer copies.
local function check(input, planned, config)
  local shared = share(planned)
  local v, total = dp.planner.verify(shared, config, {input = input})
  assert.are.equal(0, total, v[1] and v[1].message)
  local plan = dp.passes.PlanDevices(config)
  assert.structurally_equal(shared, plan(shared))
  assert.structurally_equal(shared, dp.parse(tostring(shared)))
  assert.structurally_equal(shared, share(shared))
  assert.is_true(copies(shared) <= copies(planned))
  local before = dp.planner.report(planned, config).totals.bytes_copied
  assert.is_true(dp.planner.report(shared, config).totals.bytes_copied <= before)
  return shared
end

local function planned_of(text, config)
  config = config or testing.config("cuda")
  local mod = dp.infer_type(dp.parse(text, testing.META))
  local planned = dp.passes.PlanDevices(config)(mod)
  return check(mod, planned, config), planned
end

local HEAD = "#[version = \"0.0.5\"]\ndef @main(%a: " .. TY .. ", %b: " .. TY .. ", %c: bool, %d: " .. TY .. ") {\n"
local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"
local function on(e, dev) return "on_device(" .. e .. ", virtual_device=" .. dev .. ")" end

describe("ShareCopies", function()
  it("makes one copy of a value used three times in one scope", function()
    local shared, planned = planned_of(HEAD .. "  %0 = " .. on("add(%a, %b)", CPU) .. ";\n"
      .. "  %1 = multiply(%0, %d);\n  %2 = subtract(%1, %0);\n  " .. on("add(%2, %0)", GPU) .. "\n}\n")
    assert.are.equal(3, copies(planned))
    assert.are.equal(1, copies(shared))
  end)

  it("makes one copy for both branches of an if, before the if (after the value)", function()
    -- each branch copies %x itself: no use dominates the other, one copy serves both
    local shared, planned = planned_of(HEAD .. "  let %x = " .. on("add(%a, %b)", CPU) .. ";\n"
      .. "  if (%c) { " .. on("add(" .. on("%x", CPU) .. ", %d)", GPU) .. " } else { "
      .. on("multiply(" .. on("%x", CPU) .. ", " .. on("%x", CPU) .. ")", GPU) .. " }\n}\n")
    assert.are.equal(3, copies(planned))
    assert.are.equal(1, copies(shared))
    local text = tostring(shared)
    local let_at, copy_at, if_at = text:find("let %x", 1, true), text:find("device_copy", 1, true),
                                   text:find("if (%c)", 1, true)
    assert.is_true(let_at < copy_at and copy_at < if_at, text)
  end)

  it("reuses the copy of an enclosing scope inside a branch", function()
    local shared, planned = planned_of(HEAD .. "  let %x = " .. on("add(%a, %b)", CPU) .. ";\n"
      .. "  %0 = " .. on("multiply(" .. on("%x", CPU) .. ", %d)", GPU) .. ";\n"
      .. "  if (%c) { " .. on("add(" .. on("%x", CPU) .. ", %0)", GPU) .. " } else { %0 }\n}\n")
    assert.are.equal(2, copies(planned))
    assert.are.equal(1, copies(shared))
  end)

  it("makes one copy for the closures that read a value of their context, in the context", function()
    local fn = function(op)
      return "fn (%y: " .. TY .. ") { " .. on(op .. "(" .. on("%x", CPU) .. ", %y)", GPU) .. " }"
    end
    local shared, planned = planned_of(HEAD .. "  let %x = " .. on("add(%a, %b)", CPU) .. ";\n"
      .. "  let %f = " .. fn("add") .. ";\n  let %g = " .. fn("multiply") .. ";\n"
      .. "  if (%c) { %f(%d) } else { %g(%d) }\n}\n")
    assert.are.equal(2, copies(planned))
    assert.are.equal(1, copies(shared))
    for body in tostring(shared):gmatch("fn %b()%s*{(.-)};") do
      assert.falsy(body:find("device_copy", 1, true))
    end
  end)

  it("merges the copies of a value copied to a device and back in two places", function()
    local shared, planned = planned_of("#[version = \"0.0.5\"]\ndef @main(%a: " .. TY .. ") {\n"
      .. "  %0 = " .. on("nn.relu(%a)", CPU) .. ";\n"
      .. "  %1 = device_copy(%0, src_virtual_device=" .. GPU .. ", dst_virtual_device=" .. CPU .. ");\n"
      .. "  %2 = device_copy(%0, src_virtual_device=" .. GPU .. ", dst_virtual_device=" .. CPU .. ");\n"
      .. "  " .. on("add(%1, %2)", CPU) .. "\n}\n", testing.config("cpu"))
    assert.are.equal(4, copies(planned))
    assert.are.equal(2, copies(shared)) -- to the GPU, and back
  end)

  it("keeps copies of one value to two devices apart", function()
    local OPENCL = "meta[VirtualDevice][4]"
    local text = HEAD .. "  %0 = " .. on("add(%a, %b)", CPU) .. ";\n"
      .. "  %1 = " .. on("add(" .. on("%0", CPU) .. ", " .. on("%0", CPU) .. ")", GPU) .. ";\n"
      .. "  %2 = " .. on("add(" .. on("%0", CPU) .. ", " .. on("%0", CPU) .. ")", OPENCL) .. ";\n"
      .. "  " .. on("add(" .. on("%1", GPU) .. ", " .. on("%2", OPENCL) .. ")", CPU) .. "\n}\n"
    local mod = dp.parse(text, props.META)
    local planned = dp.passes.PlanDevices(props.CONFIG)(mod)
    local shared = check(mod, planned, props.CONFIG)
    assert.are.equal(6, copies(planned))
    assert.are.equal(4, copies(shared)) -- %0 to cuda, %0 to opencl, %1 and %2 back to the cpu
  end)

  it("leaves a module without copies as it is", function()
    local mod = dp.parse(testing.SMALL_MODULE)
    local planned = dp.passes.PlanDevices(testing.config("cpu"))(mod)
    assert.structurally_equal(planned, share(planned))
  end)

  it("is a pass of the pipeline registry and of the command line's plan", function()
    local p = dp.pipeline.build("plan_devices(default=cpu),share_copies")
    local mod = dp.parse(HEAD .. "  %0 = " .. on("add(%a, %b)", CPU) .. ";\n  "
      .. on("add(multiply(%0, %d), %0)", GPU) .. "\n}\n", testing.META)
    assert.are.equal(1, copies(p(mod)))
  end)

  it("works on a 200,000-deep chain", function()
    local parts = {HEAD}
    local prev = "%a"
    for i = 1, os.getenv("DEVPLAN_QUICK") and 20000 or 200000 do
      parts[#parts + 1] = "  %" .. i .. " = add(" .. prev .. ", %b);\n"
      prev = "%" .. i
    end
    parts[#parts + 1] = "  " .. on("add(" .. on(prev, CPU) .. ", " .. on(prev, CPU) .. ")", GPU) .. "\n}\n"
    local mod = dp.parse(table.concat(parts), testing.META)
    local planned = dp.passes.PlanDevices(testing.config("cpu"))(mod)
    assert.are.equal(2, copies(planned))
    assert.are.equal(1, copies(share(planned)))
  end)
end)

describe("ShareCopies on the conformance cases", function()
  local CASES = testing.shared_dir .. "/conformance/cases"
  for _, f in ipairs(testing.lua_files(CASES)) do
    local case = dofile(CASES .. "/" .. f)
    if case.expected then
      it(case.name, function()
        local config = testing.config("cuda", case.targets)
        local mt = testing.metatable_for(case)
        local input = dp.parse(testing.text(case.input), mt)
        check(input, dp.passes.PlanDevices(config)(input), config)
      end)
    end
  end
end)

describe("ShareCopies on the annotated models", function()
  for _, name in ipairs{"resnet18", "dcgan"} do
    it(name, function()
      local config = testing.config("cpu")
      local input = dp.parse(testing.read_file(testing.shared_dir .. "/models/" .. name .. ".annotated.relay"),
                             testing.META)
      check(input, dp.passes.PlanDevices(config)(input), config)
    end)
  end
end)

describe("ShareCopies on min_bytes plans of the 15 models", function()
  -- annotated as bench/placement.lua annotates them
  local map = {["nn.conv2d"] = "cuda", ["nn.conv3d"] = "cuda", ["nn.conv2d_transpose"] = "cuda",
               ["nn.dense"] = "cuda", ["nn.max_pool2d"] = "cpu", ["nn.avg_pool2d"] = "cpu",
               ["nn.global_avg_pool2d"] = "cpu", ["concatenate"] = "cpu", ["split"] = "cpu"}
  local config = testing.config("cpu")
  local names = {"resnet18", "resnet50", "resnet152", "resnet3d18", "mobilenet", "squeezenet",
                 "inception_v3", "densenet121", "densenet201", "vgg16", "dcgan", "lstm", "mlp", "dqn",
                 "synthetic"}
  for _, name in ipairs(names) do
    it(name, function()
      local mod = dp.parse(testing.read_file(testing.shared_dir .. "/models/" .. name .. ".relay"), testing.META)
      mod = dp.pipeline.annotate_ops(map)(mod)
      check(mod, dp.passes.PlanDevices(config, {placement = "min_bytes"})(mod), config)
    end)
  end
end)

describe("ShareCopies on generated programs", function()
  it("holds its properties on every program that plans", function()
    local n, planned_n, fewer = os.getenv("DEVPLAN_QUICK") and 60 or 250, 0, 0
    local seeds = {}
    for seed = 1, n do seeds[#seeds + 1] = seed end
    -- (few generated programs copy one value twice in a scope: 142 and 239 of the first 250 do)
    if n < 239 then seeds[#seeds + 1], seeds[#seeds + 2] = 142, 239 end
    for _, seed in ipairs(seeds) do
      local ok, input = pcall(dp.parse, gen.text(gen.program(seed)), props.META)
      if ok then
        local pok, planned = pcall(dp.passes.PlanDevices(props.CONFIG), input)
        -- (programs the planner's own open findings leave inconsistent are not ShareCopies')
        if pok and select(2, dp.planner.verify(planned, props.CONFIG, {input = input})) == 0 then
          planned_n = planned_n + 1
          local shared = check(input, planned, props.CONFIG)
          if copies(shared) < copies(planned) then fewer = fewer + 1 end
        end
      end
    end
    assert.is_true(planned_n > n // 3, "only " .. planned_n .. " programs planned")
    assert.is_true(fewer > 0, "no generated program had a copy to share")
  end)
end)
