-- What the printer writes for every program it is tested on, to a folder,
-- so that two builds can be compared byte for byte (a change of the printer
-- must not change one byte of any text):
--
--   bin/devplan scripts/print_snapshot.lua OUT [--fuzz N] [--workloads N,N]
--   OTHER/bin/devplan scripts/print_snapshot.lua OUT2 ...; diff -r OUT OUT2
--
-- Each module is printed parsed and planned (PlanDevices under TVM's
-- rules), with every printing option alone (types, short_devices, meta,
-- param_lines, spans) and with names = true (the names table too), through
-- dp.astext and through dp.write_file (the streaming printer: its file must
-- equal astext's text, else the line says so); and a sample of each
-- module's expressions printed on their own (free variables declared).
-- The programs: every model of models/ (ONNX ones imported), every
-- conformance case's input and expected text of the shared material
-- (DEVPLAN_SHARED, else ../shared), the generated workloads of bench/gen.lua
-- (default 10,000 and 100,000 calls: chain, let, branchy), and N programs
-- of each of fuzz/relaygen.lua, relaygen_fn.lua, relaygen_dataflow.lua and
-- relaygen_copies.lua (default 1000 each).
local dp = require "devplan"
local t = require "devplan.testing"

local out_dir = assert(arg[1], "usage: print_snapshot.lua OUT [--fuzz N] [--workloads N,N]")
local nfuzz, sizes = 1000, {10000, 100000}
for i = 2, #arg, 2 do
  if arg[i] == "--fuzz" then nfuzz = math.tointeger(tonumber(arg[i + 1]))
  elseif arg[i] == "--workloads" then
    sizes = {}
    for s in arg[i + 1]:gmatch("%d+") do sizes[#sizes + 1] = math.tointeger(tonumber(s)) end
  else error("print_snapshot: unknown option " .. arg[i]) end
end
os.execute("mkdir -p '" .. out_dir .. "'")
local scratch = out_dir .. "/.write_file.tmp"

local function error_text(e)
  if type(e) ~= "table" then return "raw error: " .. tostring(e) end
  return "ERROR " .. tostring(e.code) .. ": " .. tostring(e)
end

local function attempt(f, ...)
  local ok, res, extra = pcall(f, ...)
  if ok then return true, res, extra end
  return false, error_text(res)
end

local OPTIONS = {
  {"plain", nil},
  {"types", {types = true}},
  {"short_devices", {short_devices = true}},
  {"meta", {meta = true}},
  {"param_lines", {param_lines = true}},
  {"spans", {spans = true}},
}

-- The names table of dp.astext(x, {names = true}), as sorted lines.
local function names_text(names)
  local lines = {}
  for def, list in pairs(names or {}) do
    for k, v in pairs(list) do lines[#lines + 1] = ("%s %s %s"):format(tostring(def), tostring(k), tostring(v.kind)) end
  end
  table.sort(lines)
  return table.concat(lines, "\n")
end

-- Every n-th expression of a module's functions, in visit order (at most
-- 12: an expression prints all it reaches).
local function sample(mod, n)
  local list, k = {}, 0
  dp.visit(mod, function(e)
    k = k + 1
    if k % n == 1 and #list < 12 and e.kind ~= "op" and e.kind ~= "constructor" then list[#list + 1] = e end
  end)
  return list
end

local function prints(name, mod, out, every)
  local function put(s) out[#out + 1] = s end
  for _, o in ipairs(OPTIONS) do
    put("== " .. name .. " / " .. o[1])
    local ok, text = attempt(dp.astext, mod, o[2])
    put(ok and text or text)
    local okw, werr = attempt(dp.write_file, scratch, mod, o[2])
    if not okw then put("write_file: " .. werr)
    elseif ok and t.read_file(scratch) ~= text then put("write_file: DIFFERS from astext") end
  end
  put("== " .. name .. " / names")
  local ok, text, names = attempt(dp.astext, mod, {names = true})
  put(text)
  if ok then put(names_text(names)) end
  if every then
    put("== " .. name .. " / expressions")
    for _, e in ipairs(sample(mod, every)) do
      local oke, s = attempt(dp.astext, e)
      put(s)
      local okt, st = attempt(dp.astext, e, {types = true, short_devices = true})
      put(st)
    end
  end
end

local config = t.config("cuda")
local plan = dp.passes.PlanDevices(config)

local function module_prints(name, mod, meta_config, every)
  local out = {}
  prints(name, mod, out, every)
  local ok, planned = attempt(dp.passes.PlanDevices(meta_config or config), mod)
  if ok then prints(name .. " planned", planned, out, every) else out[#out + 1] = "plan: " .. planned end
  return table.concat(out, "\n") .. "\n"
end

local written = 0
local function write(file, text)
  local f = assert(io.open(out_dir .. "/" .. file, "wb"))
  f:write(text)
  f:close()
  written = written + 1
end

-- the models
do
  local listing = assert(io.popen('ls "' .. dp.root .. '/models"'))
  for f in listing:lines() do
    local name, ext = f:match("^([%w_]+)%.(%a+)$")
    local mod
    if ext == "relay" then mod = dp.parse(t.read_file(dp.root .. "/models/" .. f), t.META)
    elseif ext == "onnx" then mod = dp.onnx.load(dp.root .. "/models/" .. f, {weights = "none"}) end
    if mod then write("model_" .. name .. ".txt", module_prints(name, mod, nil, 53)) end
  end
  listing:close()
end

-- the conformance cases
do
  local dir = t.shared_dir .. "/conformance/cases/"
  local parts = {}
  for _, f in ipairs(t.lua_files(dir)) do
    local case = dofile(dir .. f)
    local cfg = t.config("cuda", case.targets)
    local mt = t.metatable_for(case)
    for _, which in ipairs{"input", "expected"} do
      if case[which] then
        local ok, mod = attempt(dp.parse, t.text(case[which]), mt)
        parts[#parts + 1] = ok and module_prints(case.name .. " " .. which, mod, cfg, 1)
          or (case.name .. " " .. which .. ": " .. mod .. "\n")
      end
    end
  end
  write("conformance.txt", table.concat(parts))
end

-- the generated workloads
do
  local gen = dofile(dp.root .. "/bench/gen.lua")
  for _, n in ipairs(sizes) do
    for _, kind in ipairs{"chain", "let", "branchy"} do
      local text = kind == "branchy" and gen.branchy(n) or gen[kind](n)
      write(("workload_%s_%d.txt"):format(kind, n), module_prints(kind .. n, dp.parse(text, t.META), nil, nil))
      collectgarbage()
    end
  end
end

-- generated programs
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local props = require "props"
local function generated(label, make)
  local parts = {}
  for seed = 1, nfuzz do
    local okg, text = pcall(make, seed)
    if okg then
      local ok, mod = attempt(dp.parse, text, props.META)
      parts[#parts + 1] = ok and module_prints(label .. " " .. seed, mod, props.CONFIG, 7)
        or (label .. " " .. seed .. ": " .. mod .. "\n")
    else
      parts[#parts + 1] = label .. " " .. seed .. ": generator: " .. tostring(text) .. "\n"
    end
    if seed % 250 == 0 or seed == nfuzz then
      write(("%s_%05d.txt"):format(label, seed), table.concat(parts))
      parts = {}
      collectgarbage()
    end
  end
end
local gen = require "relaygen"
generated("relaygen", function(seed) return gen.text(gen.program(seed)) end)
local fn = require "relaygen_fn"
generated("relaygen_fn", function(seed) return fn.text(fn.program(seed)) end)
local df = require "relaygen_dataflow"
generated("dataflow", function(seed) return df.program(seed, {devices = 2 + seed % 2}).text end)
local copies = require "relaygen_copies"
generated("copies", function(seed)
  local p = copies.program(seed)
  return type(p) == "table" and (p.text or p[1]) or p
end)
os.remove(scratch)
print(("print_snapshot: %d files in %s"):format(written, out_dir))
