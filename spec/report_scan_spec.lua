-- dp.planner.report counts in C (src/planner/report.c) and writes its copies
-- from C until a script reads r.copies: checked here against the report as
-- it was written in Lua (a walk of every node with each node's device,
-- kept below as the reference), and the text and JSON written from C
-- against the same written from the rows.
local dp = require "devplan"
local core = require "devplan.core"
local devname = require "devplan.devname"
local testing = require "devplan.testing"
local gen = dofile((dp.root or ".") .. "/bench/gen.lua")

local MAX = math.maxinteger
local function bytes_of(t)
  if t == nil then return nil, "unknown" end
  return core.type.bytes(t)
end
local M = {bytes_of = bytes_of}

-- the reference: dp.planner.report as it was before it counted in C
local function is_op(e, name)
  return e.kind == "call" and e.callee.kind == "op" and e.callee.name == name
end

-- expr -> {fn =, name =}: the printed names of the module's nodes.
local function printed_names(mod)
  local _, names = core.astext(mod, {names = true})
  local of = {}
  for fn, map in pairs(names) do
    for name, e in pairs(map) do of[e] = {fn = fn, name = name} end
  end
  return of
end

-- The copied value, through the on_device that marks where it was made.
local function copied(e)
  local v = e.args[1]
  while is_op(v, "on_device") do v = v.args[1] end
  return v
end

-- The names of the global functions another function refers to (their
-- parameters are the callers' arguments).
local function called_functions(mod)
  local called = {}
  for _, nf in ipairs(mod:functions()) do
    core.visit(nf[2].body, function(e)
      if e.kind == "global" and e.name ~= nf[1] then called[e.name] = true end
    end)
  end
  return called
end

-- sum + b without wrapping: the new sum, or nil when it does not fit.
local function add(sum, b)
  if b == nil or sum > MAX - b then return nil end
  return sum + b
end

local function reference(planned, config)
  local devices = core.planner.virtual_devices(planned, config)
  local names = printed_names(planned)
  local namer = devname.namer()
  local per, order = {}, {}
  local totals = {calls = 0, copies = 0, bytes_copied = 0, bytes_resident = 0, copies_too_large = 0, too_large = 0}
  local r = {devices = order, copies = {}, totals = totals}
  local function entry(vd)
    local n = namer(vd)
    if not per[n] then
      per[n] = {name = n, device = tostring(vd), calls = 0, bytes = 0, unknown = 0, too_large = 0}
      order[#order + 1] = per[n]
    end
    return per[n]
  end
  local function resident(e, vd)
    if not vd or vd:is_fully_unconstrained() then return end
    local d = entry(vd)
    local b, why = M.bytes_of(e.checked_type)
    if why == "unknown" then
      d.unknown = d.unknown + 1
      return
    end
    local sum = add(d.bytes, b)
    if sum then d.bytes = sum else d.too_large = d.too_large + 1 end
    sum = add(totals.bytes_resident, b)
    if sum then totals.bytes_resident = sum else totals.too_large = totals.too_large + 1 end
  end
  local called = called_functions(planned)
  for _, nf in ipairs(planned:functions()) do
    if not called[nf[1]] then
      for _, p in ipairs(nf[2].params) do resident(p, devices[p]) end
    end
  end
  core.visit(planned, function(e)
    if e.kind == "const" then
      resident(e, devices[e])
    elseif is_op(e, "device_copy") then
      local src, dst = e.attrs.src_virtual_device, e.attrs.dst_virtual_device
      local v = copied(e)
      local own, val = names[e] or {}, names[v] or {}
      local b, why = M.bytes_of(e.checked_type)
      r.copies[#r.copies + 1] = {
        fn = own.fn or val.fn, name = own.name, value = val.name or own.name,
        src = namer(src), dst = namer(dst), type = tostring(e.checked_type), bytes = b, size = why,
        line = e.span and e.span.line, col = e.span and e.span.col, source = e.span and e.span.source,
      }
      entry(src)
      resident(e, dst)
      totals.copies = totals.copies + 1
      if why ~= "unknown" then
        local sum = add(totals.bytes_copied, b)
        if sum then totals.bytes_copied = sum else totals.copies_too_large = totals.copies_too_large + 1 end
      end
    elseif e.kind == "call" and (e.callee.kind == "op" or e.callee.kind == "ctor") and not is_op(e, "on_device") then
      local vd = devices[e]
      if vd and not vd:is_fully_unconstrained() then
        entry(vd).calls = entry(vd).calls + 1
        totals.calls = totals.calls + 1
      end
      resident(e, vd)
    end
  end)
  return r

end

local cuda = testing.config("cuda")
local cpu = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}

-- planned modules: generated shapes, annotated models, their partitions
local function cases()
  local list = {}
  for _, shape in ipairs{"chain", "let", "branchy"} do
    local planned = dp.passes.PlanDevices(cuda)(dp.parse(gen[shape](400), testing.META))
    list[#list + 1] = {shape, planned, cuda}
    list[#list + 1] = {shape .. " partitioned", dp.passes.PartitionByVirtualDevice{}(planned), cuda}
  end
  for _, name in ipairs{"resnet18", "lstm", "squeezenet", "mlp"} do
    local mod = dp.parse_file(dp.root .. "/models/" .. name .. ".relay")
    local planned = dp.pipeline.build("annotate(nn.conv2d=cuda,nn.dense=cuda,concatenate=cpu),plan_devices",
                                      {config = cpu})(mod)
    list[#list + 1] = {name, planned, cpu}
    list[#list + 1] = {name .. " partitioned", dp.passes.PartitionByVirtualDevice{}(planned), cpu}
  end
  return list
end

describe("dp.planner.report counted in C", function()
  it("counts every device, copy and total as the walk of every node in Lua did", function()
    for _, c in ipairs(cases()) do
      local r, want = dp.planner.report(c[2], c[3]), reference(c[2], c[3])
      assert.same(want.devices, r.devices, c[1])
      assert.same(want.totals, r.totals, c[1])
      assert.same(want.copies, r.copies, c[1])
    end
  end)

  it("writes the copies in text and JSON from C as from the rows a script reads", function()
    local copies = 0
    for _, c in ipairs(cases()) do
      local fast = dp.planner.report(c[2], c[3])
      local text, json = fast:text(), fast:json()
      local rows = dp.planner.report(c[2], c[3])
      copies = copies + #rows.copies -- read: text and JSON now come from the rows
      assert.equal(rows:text(), text, c[1])
      assert.equal(rows:json(), json, c[1])
    end
    assert.is_true(copies > 100, copies .. " copies") -- the cases have copies to write
  end)

  it("names each copy and its value as the printed text does, on fuzz/relaygen.lua's programs", function()
    -- (the names come from the printer's naming rules without the text:
    -- lets, ifs and else-if chains, matches, closures, free variables)
    package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
    local relaygen, dataflow, props = require "relaygen", require "relaygen_dataflow", require "props"
    local plan, named = dp.passes.PlanDevices(props.CONFIG), 0
    for seed = 1, 500 do
      local text = seed <= 400 and relaygen.text(relaygen.program(seed)) or dataflow.program(seed, {devices = 3}).text
      local ok, planned = pcall(plan, dp.parse(text, props.META))
      if ok then
        local names = printed_names(planned)
        local r, i = dp.planner.report(planned, props.CONFIG), 0
        core.visit(planned, function(e)
          if not is_op(e, "device_copy") then return end
          i = i + 1
          local own, val, row = names[e] or {}, names[copied(e)] or {}, r.copies[i]
          assert.same({own.fn or val.fn, own.name, val.name or own.name}, {row.fn, row.name, row.value},
                      "seed " .. seed .. ", copy " .. i)
          if own.name then named = named + 1 end
        end)
        assert.equal(i, #r.copies, "seed " .. seed)
      end
    end
    assert.is_true(named > 100, named .. " copies named")
  end)

  it("writes JSON through dkjson's escapes when a copy's source name needs them", function()
    -- (the C writer remembers the strings it found plain, the source's among
    -- them: a name that is not plain is escaped however often it repeats)
    for _, name in ipairs{'in "quotes".relay', "caf\195\169.relay", "plain.relay"} do
      local planned = dp.passes.PlanDevices(cuda)(dp.parse(gen.branchy(200), testing.META, {source_name = name}))
      local fast = dp.planner.report(planned, cuda)
      local json = fast:json()
      local rows = dp.planner.report(planned, cuda)
      assert.is_true(#rows.copies > 10)
      assert.equal(name, rows.copies[1].source)
      assert.equal(rows:json(), json, name)
      assert.equal(rows:text(), fast:text(), name)
    end
  end)

  it("reads devices shared among annotations once, and each node's own where they differ", function()
    -- (the lexical reading keeps the attributes of the last on_device and
    -- device_copy calls it found readable: calls of four devices in turn,
    -- their annotations' attributes shared by planning, give the same
    -- report as planning the module again)
    local four = dp.CompilationConfig{targets = {"llvm", "cuda", "opencl", "vulkan"}, default_device_type = "cuda"}
    local kinds, i = {"cpu", "cuda", "opencl", "vulkan"}, 0
    local annotate = dp.passes.AnnotateVirtualDevices{add = function()
      i = i + 1
      return dp.VirtualDevice{device_type = kinds[(i // 7) % 4 + 1]}
    end}
    local planned = dp.passes.PlanDevices(four)(annotate(dp.parse(gen.chain(300), testing.META)))
    local quick, again = core.planner.report_scan(planned, four), core.planner.report_scan(planned, four, "replan")
    assert.is_false(quick:replanned())
    assert.is_true(again:replanned())
    local names = {}
    for k, d in ipairs(quick:devices()) do names[k] = tostring(d.vd) end
    assert.equal(4, #names)
    assert.same(again:totals(), quick:totals())
    assert.is_true(quick:count() > 200, quick:count() .. " copies")
    assert.equal(again:copies_text(names), quick:copies_text(names))
    assert.same(again:devices(), quick:devices())
  end)

  it("writes a large report once, around the copies it writes in C, as the rows would be written", function()
    -- (the text and the JSON are made in one block each, the copies' lines
    -- between the rest, and taken by Lua as they are: src/lua/l_text.c)
    local planned = dp.passes.PlanDevices(cuda)(dp.parse(gen.branchy(30000), testing.META))
    local sched = {text = function() return "a schedule\n" end, summary = function() return {makespan = 7} end}
    for _, s in ipairs{false, true} do
      local fast, rows = dp.planner.report(planned, cuda), dp.planner.report(planned, cuda)
      if s then
        fast:with_schedule(sched, "costs.lua")
        rows:with_schedule(sched, "costs.lua")
      end
      assert.is_true(#rows.copies > 5000)
      local text, json = fast:text(), fast:json()
      assert.is_true(#text > 1048576 and #json > 1048576)
      assert.is_true(rows:text() == text)
      assert.is_true(rows:json() == json)
      assert.equal(s, text:find("\na schedule\n$") ~= nil)
      assert.equal(s, json:find('"makespan":7') ~= nil)
      assert.equal("\n", json:sub(-1))
      local keys = {[text:sub(1, 10) .. text:sub(11)] = 1}
      assert.equal(1, keys[text])
    end
  end)

  it("names each copy and its value as dp.astext names them, flat bodies and others", function()
    -- (the report's names come from the printer's one walk where a body is
    -- flat, told once the walk is done: a body it gives up on midway, a
    -- nested function, an if, a match, is named by the three passes afresh)
    package.path = dp.root .. "/fuzz/?.lua;" .. package.path
    local props = require "props"
    local fn, copies = require "relaygen_fn", require "relaygen_copies"
    local programs = {{gen.branchy(300), testing.META, cuda}, {gen.let(300), testing.META, cuda}}
    for seed = 1, 80 do
      programs[#programs + 1] = {fn.text(fn.program(seed)), props.META, props.CONFIG}
      local p = copies.program(seed)
      programs[#programs + 1] = {type(p) == "table" and (p.text or p[1]) or p, props.META, props.CONFIG}
    end
    local checked, nested = 0, 0
    for _, p in ipairs(programs) do
      local okp, mod = pcall(dp.parse, p[1], p[2])
      local ok, planned = okp, nil
      if ok then ok, planned = pcall(dp.passes.PlanDevices(p[3]), mod) end
      if ok then
        local _, names = dp.astext(planned, {names = true})
        local text = dp.astext(planned)
        for _, c in ipairs(dp.planner.report(planned, p[3]).copies) do
          if c.name then
            local e = names[c.fn or ""][c.name]
            assert(e, c.name .. " has no expression")
            assert.truthy(dp.astext(e):match("device_copy%([^\n]*$"), c.name)
            assert(names[c.fn or ""][c.value], c.value .. " has no expression")
            checked = checked + 1
            if text:find("fn (", 1, true) or text:find("if (", 1, true) then nested = nested + 1 end
          end
        end
      end
    end
    assert.is_true(checked > 400 and nested > 200, checked .. " copies, " .. nested .. " in modules not flat")
  end)

  it("lets a script change the rows before writing them", function()
    local planned = dp.passes.PlanDevices(cuda)(dp.parse(gen.branchy(120), testing.META))
    local r = dp.planner.report(planned, cuda)
    assert.is_true(#r.copies > 0)
    r.copies[1].name = "%renamed \"quoted\""
    assert.truthy(r:text():find("%renamed \"quoted\" = copy of", 1, true))
    assert.truthy(r:json():find('"name":"%renamed \\"quoted\\""', 1, true))
  end)
end)
