-- Deep inputs, wrong arguments and odd values on the surfaces issue 22 names:
-- printing nested scopes, left recursive patterns, deep patterns and pass
-- nesting, instrument errors, pipeline arguments, option rules (bandwidths),
-- metadata messages. (Timing: spec/depth_ladder_spec.lua.)
local dp = require "devplan"
local testing = require "devplan.testing"
local P = dp.pattern

local T = dp.type.tensor({5, 7}, "float32")
package.path = dp.root .. "/fuzz/?.lua;" .. package.path

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return e
end

describe("printing nested scopes", function()
  it("indents at most 64 levels, and the text parses back to the same module", function()
    local a, c = dp.var("a", T), dp.var("c", dp.type.scalar("bool"))
    local e = dp.call("negative", {a})
    for _ = 1, 2000 do e = dp.if_(c, e, a) end
    local mod = dp.infer_type(dp.IRModule{functions = {{"main", dp.fn({a, c}, e)}}})
    local text = tostring(mod)
    local widest = 0
    for spaces in text:gmatch("\n( *)") do widest = math.max(widest, #spaces) end
    assert.equal(128, widest)
    assert.is_true(#text < 2000 * 600, "the text is linear in the depth")
    assert.structurally_equal(dp.parse(text), mod)
  end)

  it("binds a node shared by scopes at any depth where all its uses see it", function()
    -- random programs whose nodes are shared across nested ifs and lets
    local r = require "relaygen" -- (fuzz/: the seeded generator's random numbers)
    for trial = 1, 120 do
      local rng = r.rng(trial)
      local a = dp.var("a", T)
      local pool = {a}
      local function pick() return pool[rng:below(#pool) + 1] end
      local function build(d)
        local k = d == 0 and 0 or rng:below(4)
        if k == 0 then
          local x = dp.call("negative", {pick()})
          pool[#pool + 1] = x
          return x
        elseif k == 1 then
          local x = dp.call("add", {pick(), build(d - 1)})
          pool[#pool + 1] = x
          return x
        elseif k == 2 then
          local t = build(d - 1)
          return dp.if_(dp.const(true), t, build(d - 1))
        end
        local v = dp.var("v", T)
        local value = build(d - 1)
        local n0 = #pool
        pool[#pool + 1] = v
        local body = build(d - 1)
        for i = #pool, n0 + 1, -1 do pool[i] = nil end -- what the body made reads v
        return dp.let(v, value, body)
      end
      local mod = dp.infer_type(dp.IRModule{functions = {{"main", dp.fn({a}, build(1 + rng:below(10)))}}})
      assert.structurally_equal(dp.parse(tostring(mod)), mod)
    end
  end)
end)

describe("recursive patterns", function()
  local x = dp.var("x", T)
  local e = dp.call("negative", {dp.call("negative", {x})})

  it("a left recursive one is an error naming it when compiled, in any form", function()
    local forms = {
      function(s) return s end,
      function(s) return s + P.wild() end,
      function(s) return P.wild() + s end,
      function(s) return s + s end,
      function(s) return s:has_attr{a = 1} + P.const() end,
      function(s) return s:where(function() return true end) end,
      function(s) return P.dominates(P.wild(), P.wild(), s) end,
      function(s) return P.rec(function(t) return t + s end) end,
    }
    for i, f in ipairs(forms) do
      local p = P.rec(f)
      local err = err_of(p.match, p, e)
      assert.is_true(dp.is_error(err), "form " .. i)
      assert.equal("value", err.code)
      assert.truthy(err.message:find("^dp.pattern: rec R1 = .* is left recursive"), err.message)
      local err2 = err_of(dp.passes.MergeComposite, {{name = "r", pattern = p}})
      assert.truthy(tostring(err2):find("left recursive", 1, true))
    end
  end)

  it("one that matches a sub-expression first matches chains", function()
    local p = P.rec(function(s) return P.op("negative")(s) + P.var() end)
    assert.is_table(p:match(e))
    local q = P.rec(function(s) return P.op("negative")(s + P.var()) end)
    assert.is_table(q:match(e))
  end)

  it("the C program refuses a cycle through the same expression too", function()
    local core = require "devplan.core"
    local e2 = err_of(core.pattern.compile, {{kind = "alt", kids = {1, 2}, any = false},
      {kind = "wild", kids = {}, any = false}}, 1, {values = {}, names = {}})
    assert.truthy(tostring(e2):find("left recursion", 1, true))
  end)
end)

describe("deep and wrong values", function()
  it("a pattern 100,000 deep prints, and so does a chain of 100,000 alternatives", function()
    local p, q = P.wild(), P.wild()
    for _ = 1, 100000 do
      p = P.op("negative")(p)
      q = P.op("negative")(P.wild()) + q
    end
    assert.equal(100000 * #"negative(" + 1 + 100000, #tostring(p))
    assert.truthy(tostring(q):find("^negative%(_%) %+ %(negative%(_%) %+ %("))
  end)

  it("has_attr checks its values when the pattern is built", function()
    local deep = {}
    for _ = 1, 100 do deep = {deep} end
    local self = {}
    self[1] = self
    assert.truthy(tostring(err_of(P.wild().has_attr, P.wild(), {a = deep})):find("nested too deeply", 1, true))
    assert.truthy(tostring(err_of(P.wild().has_attr, P.wild(), {a = self})):find("nested too deeply", 1, true))
    assert.truthy(tostring(err_of(P.wild().has_attr, P.wild(), {a = print})):find("unsupported value", 1, true))
  end)

  it("dp.pattern.compile, dp.pipeline.text, load_rules and annotate_ops name their argument", function()
    assert.truthy(err_of(P.compile, 1.5):find("dp.pattern.compile: a pattern expected, got number", 1, true))
    assert.truthy(err_of(dp.pipeline.text, {5}):find("item 1 must be", 1, true))
    assert.truthy(err_of(dp.pipeline.text, {{"verify", {{{}, "x"}}}}):find("option 1 must be {key, value}", 1, true))
    assert.truthy(err_of(dp.pipeline.text, 7):find("a list of", 1, true))
    assert.truthy(err_of(dp.pipeline.load_rules, {}):find("a string", 1, true))
    assert.truthy(err_of(dp.pipeline.annotate_ops, "cuda"):find("annotate_ops: a table", 1, true))
    assert.truthy(err_of(dp.pipeline.annotate_ops, {add = 1}):find("(strings), got [string] = number", 1, true))
    assert.truthy(err_of(dp.pipeline.annotate_ops, {"cuda"}):find("got [number] = string", 1, true))
    local a = dp.passes.AnnotateVirtualDevices{add = function() end}
    assert.truthy(tostring(err_of(a.capability, dp.fn({}, dp.const(1.0)), testing.PALETTE.GPU)):find("must be a call", 1, true))
  end)

  it("the schedule's helpers and methods name what they were given (API fuzzer, 2026-11-29)", function()
    local S = dp.schedule
    assert.truthy(tostring(err_of(S.Schedule.live)):find("Schedule:live: a schedule expected", 1, true))
    assert.truthy(tostring(err_of(S.Schedule.live, 1e308, testing.PALETTE.GPU)):find("got number", 1, true))
    assert.truthy(tostring(err_of(S.format_bytes, {})):find("format_bytes: bytes (a number) expected, got table", 1, true))
    assert.equal("nan bytes", S.format_bytes(0/0):gsub("^%-", ""))
    assert.equal("-inf bytes", S.format_bytes(-math.huge))
    assert.equal("1.5 KiB", S.format_bytes(1536))
  end)

  it("a cost table's methods name the user's call when given no call (API fuzzer, 2026-11-29)", function()
    local t = dp.costs.load({dp.root .. "/examples/rk3399.costs"})
    for _, method in ipairs({"entry", "lookup", "covers"}) do
      local err = tostring(err_of(t[method], t, {}, testing.PALETTE.GPU))
      assert.truthy(err:find("devplan.CostTable: a call expected, got table", 1, true), err)
      assert.falsy(err:find("costs.lua", 1, true), err)
    end
    local err = tostring(err_of(function() return t({}, testing.PALETTE.GPU) end))
    assert.falsy(err:find("costs.lua", 1, true), err)
  end)

  it("dp.planner.why given a device_copy that is not the planned module's says so (API fuzzer, 2026-11-29)", function()
    local cfg = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cuda"}
    local planned = dp.passes.PlanDevices(cfg)(dp.parse("def @main(%x: Tensor[(2), float32]) { negative(%x) }"))
    local err = err_of(dp.planner.why, planned, dp.call("device_copy", {dp.var("y", T)}))
    assert.equal("value", err.code)
    assert.truthy(err.message:find("not part of the planned module", 1, true), err.message)
  end)

  it("an unknown pass name of a megabyte is rejected at once, and cut in the message", function()
    local name = ("a"):rep(1 << 20)
    local t0 = os.clock()
    local err = err_of(dp.pipeline.parse, name)
    assert.is_true(os.clock() - t0 < 2)
    assert.equal("name", err.code)
    assert.truthy(err.message:find("(1048576 characters)", 1, true))
    assert.is_true(#err.message < 400)
  end)

  it("a MergeComposite rule matching constants (groups without inputs) works", function()
    local m = dp.passes.MergeComposite{{name = "c", pattern = P.const()}}(dp.parse("def @main() { add(1f, 2f) }"))
    assert.truthy(tostring(m):find("Composite", 1, true))
  end)
end)

describe("passes nested and instruments", function()
  local mod = dp.parse("def @main(%x: Tensor[(2), float32]) { negative(%x) }")

  it("Sequentials nest to any depth: they run, print and fail with every level told", function()
    local p = dp.passes.InferType()
    for _ = 1, 10000 do p = dp.Sequential{p} end
    assert.is_true(dp.is_module(p(mod)))
    assert.equal(10000 * #"Sequential{}" + #"InferType", #tostring(p))
    local boom = dp.pass("boom", function() error("no") end)
    for _ = 1, 300 do boom = dp.Sequential{boom} end
    local told = 0
    local ctx = dp.PassContext{instruments = {{failed = function() told = told + 1 end}}}
    local err = err_of(ctx.run, ctx, boom, mod)
    assert.equal("boom", err.pass)
    assert.equal(301, told)
    assert.equal(0, ctx.depth)
  end)

  it("timings and depth follow the nesting", function()
    local ctx = dp.PassContext{time = true}
    ctx:run(dp.Sequential{dp.passes.InferType(), dp.Sequential{dp.passes.InferType()}}, mod)
    local depths = {}
    for i, t in ipairs(ctx.timings) do depths[i] = t.name .. t.depth end
    assert.same({"Sequential0", "InferType1", "Sequential1", "InferType2"}, depths)
    -- each entry names its pass with the Sequentials inside cut short (linear in deep nesting)
    assert.equal("Sequential{InferType, Sequential{...}}", ctx.timings[1].pass)
    assert.equal("Sequential{InferType}", ctx.timings[3].pass)
    local deep = dp.passes.InferType()
    for _ = 1, 20000 do deep = dp.Sequential{deep} end
    local t0 = os.clock()
    dp.PassContext{time = true}:run(deep, mod)
    assert.is_true(os.clock() - t0 < 20, "timing 20,000 nested Sequentials is linear")
  end)

  it("a pass running passes from its own run function may nest 64 deep", function()
    local function nest(n)
      if n == 0 then return dp.passes.InferType() end
      local inner = nest(n - 1)
      return dp.pass("outer", function(m, ctx) return ctx:run(inner, m) end)
    end
    assert.is_true(dp.is_module(nest(60)(mod)))
    local err = err_of(nest(200), mod)
    assert.truthy(tostring(err):find("nested more than 64 deep", 1, true))
  end)

  it("an error raised by should_run is a devplan.Error naming the pass", function()
    local ctx = dp.PassContext{instruments = {{should_run = function() error("no run") end}}}
    local err = err_of(ctx.run, ctx, dp.passes.InferType(), mod)
    assert.is_true(dp.is_error(err))
    assert.equal("callback", err.code)
    assert.equal("InferType", err.pass)
    assert.truthy(tostring(err):find("deciding whether to run pass InferType", 1, true))
  end)
end)

describe("option rules", function()
  local cfg = testing.config("cuda")

  it("PlanDevices' bandwidth is checked when the pass is built, as CompilationConfig's", function()
    for _, v in ipairs{-1, 0, 0 / 0, math.huge} do
      local e1 = err_of(dp.passes.PlanDevices, cfg, {placement = "min_bytes", bandwidth = v})
      assert.truthy(e1:find("option 'bandwidth' must be a number of bytes per second > 0 and finite", 1, true))
      local e2 = err_of(dp.CompilationConfig, {targets = {"llvm", "cuda"}, bandwidth = v})
      assert.truthy(tostring(e2):find("'bandwidth' must be a number of bytes per second > 0 and finite", 1, true))
      local e3 = err_of(dp.CompilationConfig, {targets = {"llvm", "cuda"}, bandwidth = {["cpu->cuda"] = v}})
      assert.truthy(tostring(e3):find("bandwidth 'cpu->cuda' must be", 1, true))
    end
    assert.truthy(tostring(err_of(dp.CompilationConfig, {targets = {"llvm"}, bandwidth = 0 / 0})):find("got nan", 1, true))
    assert.is_true(dp.is_config(dp.CompilationConfig{targets = {"llvm", "cuda"}, bandwidth = 1e9}))
  end)

  it("a metadata array whose header misstates its size says which size is wrong", function()
    local function header(shape, code, bits, size)
      local h = string.pack("<I8I8I4I4I4BBI2", 0xDD5E40F096B4A13F, 0, 1, 0, #shape, code, bits, 1)
      for _, d in ipairs(shape) do h = h .. string.pack("<i8", d) end
      return h .. string.pack("<I8", size)
    end
    local function b64(s)
      local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
      return ((s:gsub(".", function(x)
        local r, b = "", x:byte()
        for i = 8, 1, -1 do r = r .. (b % 2 ^ i - b % 2 ^ (i - 1) > 0 and "1" or "0") end
        return r
      end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(x)
        if #x < 6 then return "" end
        local c = 0
        for i = 1, 6 do c = c + (x:sub(i, i) == "1" and 2 ^ (6 - i) or 0) end
        return chars:sub(c + 1, c + 1)
      end) .. ({"", "==", "="})[#s % 3 + 1])
    end
    local array = b64(header({2}, 2, 32, 16) .. string.pack("<ff", 1, 2))
    local text = 'def @main() { meta[relay.Constant][0] }\n#[metadata]\n{"root": 1, "nodes": [{"type_key": ""}, '
      .. '{"type_key": "Map", "keys": ["relay.Constant"], "data": [2]}, {"type_key": "Array", "data": [3]}, '
      .. '{"type_key": "relay.Constant", "attrs": {"data": "0", "span": "0", "virtual_device_": "0"}}], '
      .. '"b64ndarrays": ["' .. array .. '"], "attrs": {"tvm_version": "0.8.0"}}'
    local err = err_of(dp.parse, text)
    assert.truthy(err.message:find("the array's header gives its size as 16 bytes where its shape and dtype need 8",
      1, true), err.message)
  end)
end)

describe("methods and helpers called with anything (the API fuzzer's finds of 2026-11-29)", function()
  it("name themselves instead of failing inside the library", function()
    local cases = {
      {dp.schedule.Schedule.text, {5}, "devplan.Schedule:text: a schedule expected"},
      {dp.schedule.Schedule.__tostring, {{}}, "devplan.Schedule:text: a schedule expected"},
      {dp.schedule.format_time, {{}}, "devplan.schedule.format_time: seconds (a number)"},
      {dp.planner.check_options, {"", "who", 0}, "who: options must be a table"},
      {dp.Sequential{}.run, {0 / 0}, "mod must be an IRModule"},
      {dp.passes.Verify().run, {dp.parse(testing.SMALL_MODULE), 5}, "ctx must be a dp.PassContext"},
      {getmetatable(dp.costs.DEFAULT).__call, {}, "devplan.CostModel:__call: a CostModel expected"},
      {dp.costs.DEFAULT, {}, "devplan.CostModel: a call expected"},
      -- a hole in op_kind's kinds was kept, and printing the pattern failed inside pattern.lua
      {dp.pattern.op_kind, {nil, "opaque", n = 2}, "dp.pattern.op_kind: argument 1: unknown operator pattern kind nil"},
    }
    for i, c in ipairs(cases) do
      local ok, err = pcall(c[1], table.unpack(c[2], 1, c[2].n or #c[2]))
      assert.is_false(ok, "case " .. i)
      local text = tostring(err)
      assert.truthy(text:find(c[3], 1, true), "case " .. i .. ": " .. text)
      assert.falsy(text:find("lua/devplan/", 1, true), "case " .. i .. ": " .. text)
    end
  end)
end)
