-- What the planner says about every program it is tested on, written to a
-- folder, so that two builds can be compared byte for byte (a restructuring
-- of the planner must not change one plan or one message):
--
--   bin/devplan scripts/plan_snapshot.lua OUT [--fuzz N] [--dataflow N]
--   OTHER/bin/devplan scripts/plan_snapshot.lua OUT2 ...; diff -r OUT OUT2
--
-- Each program is planned by PlanDevices under TVM's rules, strict, as TVM's
-- phase 0b (first conflict), with every conflict, by min_bytes, each plan
-- then through ShareCopies, partitioned (PartitionByVirtualDevice, its
-- regions) and reported (dp.planner.report, text and JSON); every plan is
-- verified, and a sample of its expressions and placement by cost's
-- decisions are explained. A failure is written as its
-- code, message, notes and every conflict's message. The programs: every
-- conformance case of the shared material (DEVPLAN_SHARED, else ../shared),
-- every model of models/ (convolutions and dense annotated on the GPU, and
-- not annotated) with both default devices, the shared annotated models,
-- the generated workloads of bench/gen.lua, N programs of fuzz/relaygen.lua
-- (default 2000) and N of fuzz/relaygen_dataflow.lua (default 500).
local dp = require "devplan"
local t = require "devplan.testing"

local out_dir = assert(arg[1], "usage: plan_snapshot.lua OUT [--fuzz N] [--dataflow N]")
local nfuzz, ndataflow = 2000, 500
for i = 2, #arg, 2 do
  if arg[i] == "--fuzz" then nfuzz = math.tointeger(tonumber(arg[i + 1]))
  elseif arg[i] == "--dataflow" then ndataflow = math.tointeger(tonumber(arg[i + 1]))
  else error("plan_snapshot: unknown option " .. arg[i]) end
end
os.execute("mkdir -p '" .. out_dir .. "'")

local function error_text(e)
  if type(e) ~= "table" then return "raw error: " .. tostring(e) end
  local lines = {"ERROR " .. tostring(e.code) .. ": " .. tostring(e)}
  for _, n in ipairs(e.notes or {}) do lines[#lines + 1] = "  note: " .. tostring(n.message or n) end
  for i, c in ipairs(e.errors or {}) do
    lines[#lines + 1] = ("  [%d] %s"):format(i, tostring(c))
    for _, n in ipairs(c.notes or {}) do lines[#lines + 1] = "    note: " .. tostring(n.message or n) end
  end
  return table.concat(lines, "\n")
end

-- (Lua's references to nodes go first: where other references reach a node
-- phase 0 may rebuild it rather than read it in place, the same plan with
-- other nodes, which explanations of the input's nodes would tell apart)
local function attempt(f, ...)
  collectgarbage()
  collectgarbage()
  local ok, res, extra = pcall(f, ...)
  if ok then return true, res, extra end
  return false, error_text(res)
end

-- Every n-th expression of a module's functions, in visit order.
local function sample(mod, n)
  local list, k = {}, 0
  dp.visit(mod, function(e)
    k = k + 1
    if k % n == 1 and e.kind ~= "op" and e.kind ~= "constructor" then list[#list + 1] = e end
  end)
  return list
end

local OPTIONS = {
  {"tvm", nil},
  {"strict", {resolve_conflicts = false}},
  {"first_conflict", {resolve_conflicts = "tvm"}},
  {"all_conflicts", {all_conflicts = true}},
  {"strict_all", {resolve_conflicts = false, all_conflicts = true}},
  {"min_bytes", {placement = "min_bytes"}},
  {"min_bytes_all", {placement = "min_bytes", all_conflicts = true}},
}

local share = dp.passes.ShareCopies()

-- The regions as text (the partition pass's regions_text, wherever its file is).
local function regions_text(regions)
  local ok, m = pcall(require, "devplan.passes.partition_by_virtual_device")
  if not ok then m = require "partition_by_virtual_device" end
  return m.regions_text(regions)
end

-- Everything about one module, as text.
local function snapshot(name, mod, config, opts)
  opts = opts or {}
  local out = {}
  local function put(s) out[#out + 1] = s end
  for _, o in ipairs(OPTIONS) do
    put("== " .. name .. " / " .. o[1])
    local ok, planned = attempt(dp.passes.PlanDevices(config, o[2]), mod)
    if not ok then
      put(planned)
    else
      put(dp.astext(planned))
      local okv, v = attempt(dp.planner.verify, planned, config, {input = mod})
      put(okv and ("verify: " .. #v .. " violations") or ("verify " .. v))
      local oks, shared = attempt(share, planned)
      put("-- ShareCopies")
      put(oks and dp.astext(shared) or shared)
      if o[1] == "tvm" or o[1] == "min_bytes" then
        put("-- PartitionByVirtualDevice")
        local part = dp.passes.PartitionByVirtualDevice{config = config}
        local okp, parted, regions = attempt(part.partition, planned)
        if okp then
          put(dp.astext(parted))
          put(regions_text(regions))
        else
          put(parted)
        end
        put("-- report")
        local okr, report = attempt(dp.planner.report, planned, config)
        if okr then
          put(report:text())
          put(report:json())
        else
          put(report)
        end
      end
    end
    if (o[1] == "tvm" or o[1] == "min_bytes") and not opts.no_explain then
      put("-- explanations")
      local okd, d = attempt(dp.planner.domains, mod, config, o[2])
      if not okd then
        put(d)
      else
        for _, p in ipairs(d:placements()) do put("placement: " .. p.text) end
        for _, e in ipairs(sample(mod, opts.every or 3)) do
          local okx, x = attempt(d.explain, d, e)
          if okx then
            put(x.text)
            for _, s in ipairs(x.steps) do put("  " .. s.message) end
          else
            put(x)
          end
        end
      end
    end
  end
  return table.concat(out, "\n") .. "\n"
end


local function write(file, text)
  local f = assert(io.open(out_dir .. "/" .. file, "wb"))
  f:write(text)
  f:close()
end

local written = 0
local function group(file, list)
  write(file, table.concat(list))
  written = written + 1
end

-- the conformance cases
do
  local dir = t.shared_dir .. "/conformance/cases/"
  local parts = {}
  for _, f in ipairs(t.lua_files(dir)) do
    local case = dofile(dir .. f)
    local config = t.config("cuda", case.targets)
    local mt = t.metatable_for(case)
    local ok, mod = attempt(dp.parse, t.text(case.input), mt)
    parts[#parts + 1] = ok and snapshot(case.name, mod, config, {every = 1}) or (case.name .. ": " .. mod .. "\n")
    if case.expected then
      local okx, expected = attempt(dp.parse, t.text(case.expected), mt)
      if okx then parts[#parts + 1] = snapshot(case.name .. " (expected)", expected, config, {every = 1}) end
    end
  end
  group("conformance.txt", parts)
end

-- the models: not annotated, and convolutions and dense on the GPU
do
  local annotate = dp.passes.AnnotateVirtualDevices{
    ["nn.conv2d"] = function() return t.PALETTE.GPU end,
    ["nn.dense"] = function() return t.PALETTE.GPU end,
  }
  local listing = assert(io.popen('ls "' .. dp.root .. '/models"'))
  for f in listing:lines() do
    local name = f:match("^([%w_]+)%.relay$")
    if name then
      local plain = dp.parse(t.read_file(dp.root .. "/models/" .. f), t.META)
      local annotated = annotate(plain)
      local parts = {}
      for _, dflt in ipairs{"cpu", "cuda"} do
        local config = t.config(dflt)
        parts[#parts + 1] = snapshot(name .. " annotated, default " .. dflt, annotated, config, {every = 97})
      end
      parts[#parts + 1] = snapshot(name .. " plain", plain, t.config("cpu"), {every = 211, no_explain = true})
      group("model_" .. name .. ".txt", parts)
    end
  end
  listing:close()
  for _, name in ipairs{"dcgan", "resnet18"} do
    local path = t.shared_dir .. "/models/" .. name .. ".annotated.relay"
    local mod = dp.parse(t.read_file(path), t.META)
    group("shared_" .. name .. ".txt", {snapshot(name .. ".annotated", mod, t.config("cpu"), {every = 53})})
  end
end

-- the generated workloads
do
  local gen = dofile(dp.root .. "/bench/gen.lua")
  local parts = {}
  for _, n in ipairs{10, 100, 1000} do
    for _, kind in ipairs{"chain", "let"} do
      parts[#parts + 1] = snapshot(kind .. n, dp.parse(gen[kind](n), t.META), t.config("cuda"), {every = 37})
    end
    parts[#parts + 1] = snapshot("branchy" .. n, dp.parse(gen.branchy(n), t.META), t.config("cuda"), {every = 37})
    parts[#parts + 1] = snapshot("branchy-naive" .. n, dp.parse(gen.branchy(n, true), t.META), t.config("cuda"), {every = 37})
  end
  if gen.conflicts then
    for _, n in ipairs{1, 10, 100} do
      local ok, mod = attempt(dp.parse, gen.conflicts(n), t.META)
      if ok then parts[#parts + 1] = snapshot("conflicts" .. n, mod, t.config("cuda"), {every = 7}) end
    end
  end
  group("workloads.txt", parts)
end

-- generated programs
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local props = require "props"
do
  local gen = require "relaygen"
  local parts = {}
  for seed = 1, nfuzz do
    local text = gen.text(gen.program(seed))
    local ok, mod = attempt(dp.parse, text, props.META)
    parts[#parts + 1] = ok and snapshot("relaygen " .. seed, mod, props.CONFIG, {every = 5})
      or ("relaygen " .. seed .. ": " .. mod .. "\n")
    if seed % 250 == 0 then
      group(("relaygen_%05d.txt"):format(seed), parts)
      parts = {}
    end
  end
  if #parts > 0 then group("relaygen_last.txt", parts) end
end
do
  local df = require "relaygen_dataflow"
  local parts = {}
  for seed = 1, ndataflow do
    for _, devices in ipairs{2, 3} do
      local prog = df.program(seed, {devices = devices, max_calls = devices == 3 and 5 or nil})
      local ok, mod = attempt(dp.parse, prog.text, props.META)
      parts[#parts + 1] = ok and snapshot(("dataflow %d/%d"):format(seed, devices), mod, props.CONFIG, {every = 2})
        or ("dataflow " .. seed .. ": " .. mod .. "\n")
    end
  end
  group("dataflow.txt", parts)
end
print(("plan_snapshot: %d files in %s"):format(written, out_dir))
