-- The runtime of the API fuzzer (fuzz/apifuzz.lua) and of the reproducers
-- it writes: each call runs protected, in a coroutine, and what it raises
-- is judged; what it returns joins the pool later calls take arguments from.
--
--   local rt = require "apifuzz_rt"       -- fuzz/ on package.path
--   rt.call(id, function() return dp.parse(rt.V[3]) end)
--   rt.finish()                            -- prints what was found; exit status 1 when anything
--
-- A call finds something when it raises an error that is neither a
-- devplan.Error nor an argument error: a raw Lua error from inside the
-- library ("attempt to index ...", a stack overflow, a position in
-- lua/devplan/ or passes/), an error value of another kind; or when the
-- Lua state no longer works after it. Errors raised by the fuzzer's own
-- callbacks carry the mark FUZZCB and may come back as they are (dp.visit
-- and dp.rewrite hand a callback's error on unchanged, by design). Crashes,
-- sanitizer reports and hangs are seen by the driver (fuzz/apifuzz.sh).
local dp = require "devplan"

local M = {}

M.V = {}        -- the pool: values made so far (by the prelude, by calls, held by callbacks)
M.found = {}    -- {id =, what =} per finding
M.calls = 0
M.armed = false -- allocation failure armed for the running call

-- The deep values a call makes or picks multiply its work (finding a
-- pattern n deep in a program m deep costs n x m): each call may use deep
-- values whose sizes multiply to at most BUDGET. A deep value made asks
-- for its size and gets what is left; a deep value of the pool is skipped
-- by pick when it does not fit.
local BUDGET = 1e6
M.budget = BUDGET
local sizes = setmetatable({}, {__mode = "k"}) -- deep value -> its size

local function charge(n)
  n = math.max(1, math.min(n, math.floor(M.budget)))
  M.budget = math.max(1, M.budget / n)
  return n
end


-- (at most 4,000: a callback called on every node of a deep program would
-- make later picks slow)
local function add(v)
  if v ~= nil and #M.V < 4000 then M.V[#M.V + 1] = v end
end
M.add = add

-- A fresh state (the fuzzer runs batch after batch in one process).
function M.reset()
  M.V, M.found, M.calls = {}, {}, 0
end

-- ------------------------------------------------------------ the pool

local pass_mod, ctx_mod
local function kind_of(v)
  pass_mod = pass_mod or require "devplan.pass"
  if dp.is_expr(v) then return "expr" end
  if dp.is_module(v) then return "module" end
  if dp.is_type(v) then return "type" end
  if dp.pattern.is_pattern(v) then return "pattern" end
  if pass_mod.is_pass(v) then return "pass" end
  if dp.is_virtual_device(v) then return "vdev" end
  if dp.is_target(v) then return "target" end
  if dp.is_config(v) then return "config" end
  local mt = getmetatable(v)
  if type(mt) == "table" and mt.__name == "devplan.PassContext" then return "ctx" end
  if type(mt) == "table" and type(mt.__name) == "string" and mt.__name:find("Domains") then return "domains" end
  return type(v)
end
M.kind_of = kind_of

-- The k-th value of the pool of kind (any kind: "any"), counting round;
-- nil when the pool has none of that kind.
function M.pick(kind, k)
  local n, list = #M.V, {}
  for i = 1, n do
    local v = M.V[i]
    if (kind == "any" or kind_of(v) == kind) and (sizes[v] or 1) <= M.budget then list[#list + 1] = v end
  end
  if #list == 0 then return nil end
  local v = list[k % #list + 1]
  if sizes[v] then charge(sizes[v]) end
  return v
end

-- Calls the j-th callable member (sorted by name) of the k-th value of the
-- pool with args: as a method (the value first) for members reached
-- through its metatable, as a function for its own fields.
-- Paths: what the library writes (dp.write_file, a schedule's write_svg)
-- goes into a folder of its own, never the current one (a suite run from
-- the project root would leave files such as "cuda" there). A string path
-- keeps its name, slashes made underscores (a number is one: the library
-- takes it as its text); other values pass unchanged, so argument errors
-- are still reached.
local scratch
function M.path(p)
  if math.type(p) then p = tostring(p) end
  if type(p) ~= "string" then return p end
  if not scratch then
    scratch = os.tmpname()
    os.remove(scratch)
    assert(os.execute("mkdir -p '" .. scratch .. "'"), "apifuzz_rt: cannot make a scratch folder")
  end
  return scratch .. "/" .. p:sub(1, 200):gsub("[/%z]", "_")
end
local WRITES_TO = {write_svg = true, write_file = true} -- members whose first argument is a path

function M.invoke(k, j, ...)
  if #M.V == 0 then return nil end
  local v = M.V[k % #M.V + 1]
  local members = {}
  if type(v) == "table" then
    for name, f in pairs(v) do
      if type(name) == "string" and type(f) == "function" then members[#members + 1] = {name, f, false} end
    end
  end
  local mt = getmetatable(v)
  local index = type(mt) == "table" and rawget(mt, "__index")
  if type(index) == "table" then
    for name, f in pairs(index) do
      if type(name) == "string" and type(f) == "function" then members[#members + 1] = {name, f, true} end
    end
  end
  if #members == 0 then return v end
  table.sort(members, function(a, b) return a[1] < b[1] or (a[1] == b[1] and not a[3] and b[3]) end)
  local m = members[j % #members + 1]
  local args = table.pack(...)
  if WRITES_TO[m[1]] and args.n > 0 then args[1] = M.path(args[1]) end
  if m[3] then return m[2](v, table.unpack(args, 1, args.n)) end
  return m[2](table.unpack(args, 1, args.n))
end

-- text with a few bytes changed (deleted, inserted or replaced), by seed.
function M.mutate(text, seed)
  if type(text) ~= "string" or #text == 0 then return text end
  local r = require("relaygen").rng(seed)
  local bytes = {"(", ")", "{", "}", "%", "@", ",", ";", "\"", "\0", "0", "9", "e", "-", ".", "[", "]", " ", "\n",
                 "meta[", "fn (", "let ", "if (", "#[", "99999999999999999999"}
  for _ = 1, 1 + r:below(4) do
    local at = r:below(#text) + 1
    local what = r:below(3)
    if what == 0 then text = text:sub(1, at - 1) .. text:sub(at + 1)
    elseif what == 1 then text = text:sub(1, at - 1) .. r:pick(bytes) .. text:sub(at)
    else text = text:sub(1, at - 1) .. r:pick(bytes) .. text:sub(at + 1) end
  end
  return text
end

-- ------------------------------------------------------------ judging errors

local LIBRARY_POSITION = {"/lua/devplan/[%w_]+%.lua:%d+:", "/passes/[%w_]+%.lua:%d+:",
                          "^lua/devplan/[%w_]+%.lua:%d+:", "^passes/[%w_]+%.lua:%d+:"}
local RAW_TEXT = {"attempt to %a+ a", "attempt to compare", "attempt to perform", "stack overflow",
                  "C stack overflow", "no integer representation", "table index is n[ai][ln]",
                  "invalid key to 'next'", "string length overflow"}

local function safe_tostring(v)
  local ok, s = pcall(tostring, v)
  return ok and s or ("<" .. type(v) .. " whose tostring fails>")
end

-- nil when err is an acceptable error, else what is wrong with it.
function M.judge(err)
  if dp.is_error(err) then return nil end
  if type(err) == "table" and rawget(err, "FUZZCB") then return nil end -- a callback's own error value
  if type(err) ~= "string" then return "an error value that is a " .. type(err) .. ": " .. safe_tostring(err) end
  if err:find("FUZZCB", 1, true) then return nil end
  if err:find("attempt to yield across a C-call boundary", 1, true) then return nil end -- a callback yielded
  if err:find("not enough memory", 1, true) then return nil end
  for _, p in ipairs(LIBRARY_POSITION) do
    if err:find(p) then return "a raw error from inside the library: " .. err end
  end
  if err:find("bad argument #%d+ to '[^']*' %(") then return nil end -- luaL_argerror's own form
  for _, p in ipairs(RAW_TEXT) do
    if err:find(p) then return "a raw Lua error: " .. err end
  end
  return nil -- an argument error
end

-- ------------------------------------------------------------ running a call

local SANITY = "def @main(%x: Tensor[(2), float32]) { negative(%x) }"

-- Does the Lua state still work (parse, type, plan, print)?
local function sane()
  local ok, r = pcall(function()
    local m = dp.parse(SANITY)
    return tostring(dp.passes.PlanDevices(dp.CompilationConfig{targets = {"llvm"}})(m))
  end)
  return ok and type(r) == "string" and r:find("negative", 1, true) ~= nil, r
end

local function note(id, what)
  M.found[#M.found + 1] = {id = id, what = what}
  io.write(("FOUND call %d: %s\n"):format(id, what:sub(1, 600)))
end

-- Runs f (a call of the API) as call number id: in a coroutine (a callback
-- may yield: the call is resumed a few times, then left suspended), with
-- allocation failure armed when fail is given ({n, persistent}). Its
-- results join the pool.
function M.call(id, f, fail)
  M.calls = M.calls + 1
  M.budget = BUDGET
  local co = coroutine.create(f)
  if fail then
    M.armed = true
    dp.debug.fail_alloc(fail[1], fail[2])
  end
  local res = table.pack(coroutine.resume(co))
  for _ = 1, 3 do
    if coroutine.status(co) ~= "suspended" then break end
    res = table.pack(coroutine.resume(co, M.V[(id % math.max(1, #M.V)) + 1]))
  end
  dp.debug.fail_alloc(0) -- (also when the call itself armed it: dp.debug.fail_alloc is fuzzed too)
  M.armed = false
  if coroutine.status(co) == "suspended" then return end -- left suspended, collected later
  if res[1] then
    for i = 2, math.min(res.n, 3) do add(res[i]) end
  else
    local why = M.judge(res[2])
    if why then note(id, why) end
  end
  if id % 16 == 0 or not res[1] then
    local ok, r = sane()
    if not ok then note(id, "the Lua state no longer works after it: " .. safe_tostring(r)) end
  end
end

-- ------------------------------------------------------------ values

-- A table nested n deep ({{{...}}}), and a table holding itself.
function M.deep_table(n)
  local t = {}
  for _ = 1, n do t = {t} end
  return t
end

function M.self_table()
  local t = {1, 2}
  t[3] = t
  t.self = t
  return t
end

-- An expression n deep of one shape (calls, tuples, ifs, lets, closures).
function M.deep_expr(shape, n)
  n = charge(n)
  local T = dp.type.tensor({2}, "float32")
  local a = dp.var("a", T)
  local e = dp.call("negative", {a})
  for i = 1, n do
    if shape == "tuple" then e = dp.tuple{e}
    elseif shape == "if" then e = dp.if_(dp.const(true), e, dp.call("negative", {a}))
    elseif shape == "let" then
      local v = dp.var("v" .. i, T)
      e = dp.let(v, dp.call("negative", {a}), dp.call("add", {v, e}))
    elseif shape == "fn" then
      local x = dp.var("x" .. i, T)
      e = dp.call(dp.fn({x}, dp.call("add", {x, e})), {a})
    else e = dp.call("negative", {e}) end
  end
  local f = dp.fn({a}, e)
  sizes[f] = n
  return f, a
end

function M.deep_module(shape, n)
  local f = M.deep_expr(shape, n)
  local m = dp.IRModule{functions = {{"main", f}}}
  sizes[m] = sizes[f]
  return m
end

-- A pattern n deep: op(op(...(wild))), or a chain of n alternatives (at
-- most 500: every node of a program tries every alternative, and the fuzzer
-- matches patterns against programs 100,000 deep; the depth ladder times
-- chains of 100,000 alone).
function M.deep_pattern(kind, n)
  local P = dp.pattern
  if kind == "alt" then n = math.min(n, 500) end
  n = charge(n)
  local p = P.wild()
  for _ = 1, n do
    if kind == "alt" then p = P.op("negative")(P.wild()) + p else p = P.op("negative")(p) end
  end
  sizes[p] = n
  return p
end

function M.deep_sequential(n)
  local p = dp.passes.InferType()
  for _ = 1, n do p = dp.Sequential{p} end
  return p
end

-- An error value whose tostring raises.
function M.bad_error_object()
  return setmetatable({FUZZCB = true}, {__tostring = function() error("FUZZCB tostring", 0) end})
end

-- Callbacks, by kind, each made afresh: they raise, yield, re-enter the
-- library, hold their arguments (in the pool, so later calls use nodes a
-- callback saw), or return a value of any kind.
function M.callback(kind, v)
  if kind == "raise" then return function() error("FUZZCB raised", 0) end end
  if kind == "raise_table" then return function() error({FUZZCB = true}) end end
  if kind == "raise_bad" then return function() error(M.bad_error_object()) end end
  if kind == "yield" then return function(...) return coroutine.yield(...) end end
  if kind == "reenter" then
    local calls = 0
    return function(x, ...)
      calls = calls + 1
      if calls > 3 then return v end -- (called per node of a deep program: three are enough)
      pcall(function()
        if dp.is_module(x) then add(dp.infer_type(x)); add(dp.passes.PlanDevices(
          dp.CompilationConfig{targets = {"llvm", "cuda"}})(x)) end
        if dp.is_expr(x) then add(tostring(x)); add(dp.infer_expr(x)); dp.visit(x, function(e) add(e) end) end
        add(dp.parse(SANITY))
      end)
      return v
    end
  end
  if kind == "hold" then
    return function(...)
      for i = 1, select("#", ...) do add((select(i, ...))) end
      return v
    end
  end
  if kind == "collect" then -- (a full collection its first three times only: called per node of a
    local calls = 0          -- deep program, a collection each time would cost the heap per node)
    return function()
      calls = calls + 1
      if calls <= 3 then collectgarbage() end
      return v
    end
  end
  return function() return v end -- "return": returns v, whatever it is
end

-- ------------------------------------------------------------ the end

-- Prints the findings; exit status 1 when there are any (os.exit so that
-- the sanitizers' leak check runs at the real exit).
function M.finish(quiet)
  collectgarbage()
  collectgarbage()
  if not quiet or #M.found > 0 then
    print(("%d calls, %d found"):format(M.calls, #M.found))
  end
  return #M.found == 0
end

return M
