-- Testing helpers for busted specs: `require "devplan.testing"` registers
-- three luassert assertions and returns the conformance palette and small
-- helpers that specs (and benchmarks) would otherwise each copy.
--
--   assert.structurally_equal(actual, expected)   -- diff: path + both sides
--   assert.plans_to(input_text, expected_text, config, metatable?)  -- verified too
--   assert.idempotent(pass, mod)                  -- pass(pass(mod)) == pass(mod)
--
-- The palette is the one the conformance runner (shared/conformance/run.lua)
-- builds (targets HOST, CPU, GPU with an llvm host; virtual devices CPU, GPU,
-- HOST, CPU_SCOPE_A, ...), so a spec names devices exactly as the conformance
-- cases do.
local dp = require "devplan"

local assert, collectgarbage, dofile, error, ipairs, pairs = assert, collectgarbage, dofile, error, ipairs, pairs
local pcall, rawset, require, setmetatable, tostring, type = pcall, rawset, require, setmetatable, tostring, type
local io, os, table = io, os, table
_ENV = nil -- no global is read or written below this line

local M = {}

-- ---------------------------------------------------------------- palette

local HOST_TARGET = dp.Target("llvm")

M.TARGET = {
  HOST = HOST_TARGET,
  CPU = dp.Target("llvm"):with_host(HOST_TARGET),
  GPU = dp.Target("cuda"):with_host(HOST_TARGET),
}

local function vd(device_type, target, scope)
  return dp.VirtualDevice{device_type = device_type, virtual_device_id = 0,
                          target = target, memory_scope = scope}
end

M.PALETTE = {
  HOST = vd("cpu", M.TARGET.HOST),
  CPU = vd("cpu", M.TARGET.CPU),
  GPU = vd("cuda", M.TARGET.GPU),
  CPU_SCOPE_A = vd("cpu", M.TARGET.CPU, "scopeA"),
  CPU_SCOPE_B = vd("cpu", M.TARGET.CPU, "scopeB"),
  GPU_SCOPE_GLOBAL = vd("cuda", M.TARGET.GPU, "global"),
  GPU_SCOPE_TEXTURE = vd("cuda", M.TARGET.GPU, "global.texture"),
  GLOBAL = dp.VirtualDevice{memory_scope = "global"},
  TEXTURE = dp.VirtualDevice{memory_scope = "global.texture"},
}

-- The metatable most specs parse with: meta[VirtualDevice][0] is CPU, [1] GPU.
M.META = {VirtualDevice = {M.PALETTE.CPU, M.PALETTE.GPU}}

-- A CompilationConfig over palette targets (names or Target values; default
-- CPU and GPU) with the given default device type (default "cuda", as the
-- conformance runner).
function M.config(default_device_type, targets)
  local ts = {}
  for i, t in ipairs(targets or {"CPU", "GPU"}) do
    ts[i] = type(t) == "string" and assert(M.TARGET[t], "unknown palette target " .. t) or t
  end
  return dp.CompilationConfig{targets = ts, default_device_type = default_device_type or "cuda"}
end

-- ---------------------------------------------------------------- files and cases

function M.read_file(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

-- The shared test material (TVM's tests as data, reproducers, workloads):
-- DEVPLAN_SHARED, else the folder `shared` beside the project's root. Only
-- the specs that compare with it need it: M.shared_dir is looked up when
-- first read, and is an error saying where it was looked for when missing.
local function find_shared()
  local env = os.getenv("DEVPLAN_SHARED")
  if env and env ~= "" then
    if exists(env .. "/conformance/run.lua") then return env end
    error("devplan.testing: DEVPLAN_SHARED is " .. env .. ", which has no conformance/run.lua", 3)
  end
  local root = dp.root or "."
  local dir = (root .. "/../shared"):gsub("/[^/]+/%.%./", "/")
  if exists(dir .. "/conformance/run.lua") then return dir end
  error("devplan.testing: the shared test material was not found: no " .. dir .. "/conformance/run.lua "
    .. "(set DEVPLAN_SHARED to its folder)", 3)
end

setmetatable(M, {__index = function(t, key)
  if key == "shared_dir" then
    local dir = find_shared()
    rawset(t, key, dir)
    return dir
  end
end})

-- The path of a model the project ships (models/NAME.relay under dp.root).
function M.model(name)
  local path = (dp.root or ".") .. "/models/" .. name .. ".relay"
  if not exists(path) then
    error("devplan.testing.model: no model " .. name .. " (" .. path .. " does not exist)", 2)
  end
  return path
end

-- A nested list of `shape` filled with `fill`.
function M.filled(shape, fill, depth)
  depth = depth or 1
  local t = {}
  for i = 1, shape[depth] do
    t[i] = depth == #shape and fill or M.filled(shape, fill, depth + 1)
  end
  return t
end

-- The metatable of a conformance case (devices by palette name, constants).
function M.metatable_for(case)
  local devices, constants = {}, {}
  for i, name in ipairs(case.devices or {}) do
    devices[i] = assert(M.PALETTE[name], "unknown palette device " .. tostring(name))
  end
  for i, c in ipairs(case.constants or {}) do
    local value = c.value
    if value == nil then value = M.filled(c.shape, c.fill or 0) end
    constants[i] = dp.const(value, c.dtype)
  end
  return {VirtualDevice = devices, ["relay.Constant"] = constants}
end

-- A case's text field (a string, or a function returning one).
function M.text(x)
  if type(x) == "function" then return x() end
  return x
end

-- The sorted file names (not paths) of the *.lua files of dir.
function M.lua_files(dir)
  local names = {}
  local listing = assert(io.popen('ls "' .. dir .. '"'))
  for f in listing:lines() do
    if f:match("%.lua$") then names[#names + 1] = f end
  end
  listing:close()
  table.sort(names)
  return names
end

-- ---- running the devplan executable (specs of the command line) ----

-- A new temporary file holding text (name ending in ext, default
-- ".relay"); M.remove_temp_files() removes every one made so far.
local temps = {}
function M.temp_file(text, ext)
  local base = os.tmpname()
  local name = base .. (ext or ".relay")
  local f = assert(io.open(name, "w"))
  f:write(text)
  f:close()
  temps[#temps + 1] = base
  temps[#temps + 1] = name
  return name
end

function M.remove_temp_files()
  for _, p in ipairs(temps) do os.remove(p) end
  temps = {}
end

-- Under busted, the temporary files a spec file made go when it ends, so
-- that no spec leaves files in the temporary folder.
do
  local has_busted, busted = pcall(require, "busted")
  if has_busted and type(busted) == "table" and busted.subscribe then
    busted.subscribe({"suite", "end"}, function()
      M.remove_temp_files()
      return nil, true
    end)
  end
end

-- The executable under test: DEVPLAN_EXE (the sanitizer and valgrind runs
-- set it), else bin/devplan, as an absolute path.
M.exe = (function()
  local exe = os.getenv("DEVPLAN_EXE") or "bin/devplan"
  if exe:find("/", 1, true) and exe:sub(1, 1) ~= "/" then exe = (os.getenv("PWD") or ".") .. "/" .. exe end
  return exe
end)()

-- Relay text in the specs' shorthand, spelled out: T (before `,`, `)`, `;`
-- or a space) is Tensor[(5, 7), float32], CPU and GPU are
-- meta[VirtualDevice][0] and [1] (parse it with M.META).
function M.program(text)
  return (text:gsub("T([,);%s])", "Tensor[(5, 7), float32]%1")
    :gsub("CPU", "meta[VirtualDevice][0]"):gsub("GPU", "meta[VirtualDevice][1]"))
end

-- Runs `devplan ARGS` (a shell fragment), with `input` on standard input
-- when given, from the folder `cwd` when given (else the current one);
-- returns the exit status, standard output, standard error.
function M.run_devplan(args, input, cwd)
  local out, err = os.tmpname(), os.tmpname()
  local cmd = (cwd and "cd '" .. cwd .. "' && " or "") .. M.exe .. " " .. args .. " >" .. out .. " 2>" .. err
  if input then cmd = cmd .. " <" .. M.temp_file(input, ".in") end
  local ok, _, code = os.execute(cmd)
  local o, e = M.read_file(out), M.read_file(err)
  os.remove(out)
  os.remove(err)
  return ok and 0 or code, o, e
end

-- How many calls of the operator `op_name` e holds (an expression or a
-- module; each distinct node counted once), e.g. count_calls(m, "device_copy").
function M.count_calls(e, op_name)
  local n = 0
  dp.visit(e, function(node)
    if node.kind == "call" and node.callee.kind == "op" and node.callee.name == op_name then
      n = n + 1
    end
  end)
  return n
end

-- A call of operator op_name in e (an expression or module; the last one
-- the walk meets), or nil.
function M.find_call(e, op_name)
  local found
  dp.visit(e, function(node)
    if node.kind == "call" and node.callee.kind == "op" and node.callee.name == op_name then found = node end
  end)
  return found
end

-- How deep nodes of `kind` nest along child(e) (e.g. a let chain along
-- .body): the depth and the first node that is not of `kind`.
function M.depth(e, kind, child)
  local d = 0
  while e.kind == kind do
    d = d + 1
    e = child(e)
  end
  return d, e
end

-- The keys of t, sorted (for printing or comparing sets).
function M.sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

-- f(...) must raise: its error's text and the error value.
function M.error_of(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e), e
end

-- A small module to run pipelines on: two inputs, negative, exp and add.
M.SMALL_MODULE = [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = negative(%a);
  %1 = exp(%b);
  add(%0, %1)
}
]]

-- ---------------------------------------------------------------- memory

-- Runs f() with its n-th allocation failing, for n = 1, 2, ... until
-- `settle` runs in a row (default 20) fail nothing (past f's last
-- allocation). Each run gives `want` (compared as text: an allocation whose
-- failure changes nothing) or raises a "memory" devplan.Error; anything
-- else is an error naming n. Returns how many runs failed.
function M.fail_each_allocation(f, want, settle)
  settle = settle or 20
  local n, failures, oks = 1, 0, 0
  while oks < settle do
    dp.debug.fail_alloc(n)
    local ok, res = pcall(f)
    dp.debug.fail_alloc(0)
    if ok then
      oks = oks + 1
      assert(tostring(res) == want, "allocation " .. n .. " failed silently")
    else
      assert(type(res) == "table" and res.code == "memory", "allocation " .. n .. ": " .. tostring(res))
      failures, oks = failures + 1, 0
    end
    n = n + 1
  end
  return failures
end


-- Valgrind and ASan hold freed blocks back (quarantine), so RSS says
-- nothing about reuse under them.
M.instrumented = ((os.getenv("LD_PRELOAD") or ""):find("vgpreload") or os.getenv("ASAN_OPTIONS")) ~= nil

-- The resident set size in KiB (/proc/self/statm), or nil when unknown or
-- meaningless (instrumented runs).
function M.rss_kb()
  if M.instrumented then return nil end
  local f = io.open("/proc/self/statm")
  if not f then return nil end
  local _, resident = f:read("n", "n")
  f:close()
  return resident and resident * 4 -- pages of 4 KiB
end

-- Two full collections: dropped Lua values release their C objects (and
-- objects whose release the first one freed go in the second).
function M.settle()
  collectgarbage("collect")
  collectgarbage("collect")
end

-- ---------------------------------------------------------------- comparisons

-- nil when a and b are structurally equal, else the text of the first
-- difference (path and both sides) as dp.assert_structural_equal finds it.
function M.difference(actual, expected)
  local ok, err = pcall(dp.assert_structural_equal, actual, expected)
  if ok then return nil end
  if type(err) ~= "table" or err.lhs == nil then return tostring(err) end
  local at = err.path ~= "" and err.path or "the root"
  local function side(text) return (tostring(text):gsub("\n", "\n            ")) end
  return ("first difference at %s\n  actual:   %s\n  expected: %s"):format(at, side(err.lhs), side(err.rhs))
end

-- ---------------------------------------------------------------- planning

-- PlanDevices(config, opts) that also verifies every module it plans
-- (dp.planner.verify against the input, raising a "verify" devplan.Error on
-- any violation): what the specs plan with, so that every plan the suite
-- makes is checked. Returns the pass.
function M.plan(config, opts)
  local pass = dp.passes.PlanDevices(config, opts)
  return function(mod)
    local planned = pass(mod)
    dp.planner.verify(planned, config, {input = mod, raise = true})
    if M.check_schedules then M.check_schedule(planned, config) end
    return planned
  end
end

-- With DEVPLAN_CHECK_SCHEDULES set, every plan M.plan makes is also scheduled
-- (dp.planner.schedule, the default model) and the schedule checked by the
-- suite's independent checker (spec/support/schedule_check.lua, found from
-- the project root), raising on any broken rule; M.schedules_checked counts them.
M.check_schedules = os.getenv("DEVPLAN_CHECK_SCHEDULES") ~= nil
M.schedules_checked = 0
local schedule_checker
function M.check_schedule(planned, config)
  schedule_checker = schedule_checker or dofile((dp.root or ".") .. "/spec/support/schedule_check.lua")
  local s = dp.planner.schedule(planned, config)
  local cost = dp.costs.DEFAULT
  local problems = schedule_checker(planned, config, s, {cost = function(c, vd) return cost(c, vd) end})
  if #problems > 0 then
    error(dp.Error{message = "the schedule of a plan breaks the cost model's rules: " .. problems[1], code = "verify"}, 2)
  end
  M.schedules_checked = M.schedules_checked + 1
end

-- ---------------------------------------------------------------- assertions

local has_luassert, luassert = pcall(require, "luassert")
local has_say, say = pcall(require, "say")

-- Replaces the assertion's arguments by one preformatted message.
local function set_message(arguments, message)
  for i = 1, (arguments.n or #arguments) do arguments[i] = nil end
  arguments[1], arguments.n, arguments.nofmt = message, 1, {true}
end

local function structurally_equal(_, arguments)
  local diff = M.difference(arguments[1], arguments[2])
  set_message(arguments, diff or tostring(arguments[1]))
  return diff == nil
end

-- Plans input_text (parsed with the metatable) with PlanDevices(config),
-- verifies the plan (M.plan) and compares it with expected_text.
local function plans_to(_, arguments)
  local input, expected_text, config, mt = arguments[1], arguments[2], arguments[3], arguments[4]
  local planned = M.plan(config)(dp.parse(input, mt))
  local diff = M.difference(planned, dp.parse(expected_text, mt))
  set_message(arguments, (diff or "") .. "\nplanned module:\n" .. tostring(planned))
  return diff == nil
end

-- pass(pass(mod)) equals pass(mod).
local function idempotent(_, arguments)
  local pass, mod = arguments[1], arguments[2]
  local once = pass(mod)
  local twice = pass(once)
  local diff = M.difference(twice, once)
  set_message(arguments, (diff and diff:gsub("actual:  ", "again:   "):gsub("expected:", "once:    ")
                          or "") .. "\noutput:\n" .. tostring(once))
  return diff == nil
end

if has_luassert and has_say then
  say:set("assertion.structurally_equal.positive", "Expected structurally equal values; %s")
  say:set("assertion.structurally_equal.negative",
          "Expected values that differ structurally, both are:\n%s")
  say:set("assertion.plans_to.positive", "Planning did not give the expected module; %s")
  say:set("assertion.plans_to.negative", "Expected planning to differ from the given module;%s")
  say:set("assertion.idempotent.positive", "Pass is not idempotent: running it on its output; %s")
  say:set("assertion.idempotent.negative", "Expected running the pass again to change its output;%s")
  luassert:register("assertion", "structurally_equal", structurally_equal,
                    "assertion.structurally_equal.positive", "assertion.structurally_equal.negative")
  luassert:register("assertion", "plans_to", plans_to,
                    "assertion.plans_to.positive", "assertion.plans_to.negative")
  luassert:register("assertion", "idempotent", idempotent,
                    "assertion.idempotent.positive", "assertion.idempotent.negative")
end

return M
