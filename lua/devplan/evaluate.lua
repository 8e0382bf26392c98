-- A small reference evaluator of Relay programs, for testing passes that
-- must keep what a program computes (PartitionByVirtualDevice,
-- MergeComposite, MergeAndAnnotate, ShareCopies, PlanDevices): run the
-- module before and after, compare the results.
--
--   local evaluate = require "devplan.evaluate"
--   local v = evaluate.run(mod, {x = 3, c = true})   -- @main's result (args by name or position)
--   evaluate.same(v1, v2)                            -- deep equality of two results
--
-- Values: a tensor is one integer (what it holds stands for the whole
-- tensor), a bool a boolean, a tuple a list, a function a Lua function, a
-- constructor's value {ctor =, fields}, a reference {ref = value}. Each
-- operator is a stand-in that tells values apart: a mix of its name and
-- its arguments modulo a prime (so nothing overflows, and add(a, b) differs
-- from add(b, a) and from multiply(a, b)); on_device and device_copy are
-- the identity, `less` and the other comparisons compare. A constant is an
-- integer made from its value. Evaluation follows the program as Relay
-- runs it: lets, ifs, tuples, projections, closures, calls of globals,
-- function literals and function values, constructors, match and
-- references.
local error, ipairs, rawequal, select, setmetatable, tostring, type =
  error, ipairs, rawequal, select, setmetatable, tostring, type
local math, table = math, table
_ENV = nil -- no global is read or written below this line

local M = {}

local PRIME = 2147483647 -- 2^31 - 1: a product of two values fits in an integer

-- The integer a name stands for (FNV-1a, reduced).
local function name_hash(s)
  local h = 2166136261
  for i = 1, #s do h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff end
  return h % PRIME
end

local function tensor(v)
  if math.type(v) == "integer" then return v % PRIME end
  if type(v) == "number" then return math.floor(v * 1000) % PRIME end
  if type(v) == "boolean" then return v and 1 or 0 end
  error("devplan.evaluate: a tensor value expected, got " .. type(v), 0)
end

-- Everything in v folded into one integer (a tuple's fields in order).
local function fold(h, v)
  if type(v) == "table" and v.ref == nil and v.ctor == nil then
    for _, x in ipairs(v) do h = fold(h, x) end
    return (h * 31 + #v) % PRIME
  end
  if type(v) == "table" then return (h * 37 + 1) % PRIME end
  if type(v) == "function" then return (h * 41 + 2) % PRIME end
  return (h * 1000003 + tensor(v)) % PRIME
end

local COMPARE = {
  less = function(a, b) return tensor(a) < tensor(b) end,
  greater = function(a, b) return tensor(a) > tensor(b) end,
  less_equal = function(a, b) return tensor(a) <= tensor(b) end,
  greater_equal = function(a, b) return tensor(a) >= tensor(b) end,
  equal = function(a, b) return tensor(a) == tensor(b) end,
  not_equal = function(a, b) return tensor(a) ~= tensor(b) end,
}

local IDENTITY = {on_device = true, device_copy = true}

-- The stand-in result of operator `name` on vals.
local function apply_op(name, vals)
  if IDENTITY[name] then return vals[1] end
  if COMPARE[name] then return COMPARE[name](vals[1], vals[2]) end
  if name == "ref" then return {ref = vals[1]} end
  if name == "ref_read" then return vals[1].ref end
  if name == "ref_write" then
    vals[1].ref = vals[2]
    return {}
  end
  local h = name_hash(name)
  for _, v in ipairs(vals) do h = fold(h, v) end
  return h
end

-- Does pattern p (dp.pat) match value v? Binds its variables in env.
local function bind(p, v, env)
  if p.kind == "wild" then return true end
  if p.kind == "var" then
    env[p.var] = v
    return true
  end
  local subs = p.patterns or {}
  if p.kind == "ctor" then
    if type(v) ~= "table" or v.ctor ~= p.ctor.name then return false end
    for i, q in ipairs(subs) do
      if not bind(q, v.fields[i], env) then return false end
    end
    return true
  end
  for i, q in ipairs(subs) do -- tuple
    if not bind(q, v[i], env) then return false end
  end
  return true
end

-- @main's result for args (a table by parameter name, or a list by position).
function M.run(mod, args)
  local globals = {}
  local eval
  local function global(name)
    local f = globals[name]
    if f == nil then
      local fn = mod:get(name)
      if not fn then error("devplan.evaluate: no global @" .. name, 0) end
      f = eval(fn, {})
      globals[name] = f
    end
    return f
  end
  local function scope(env) return setmetatable({}, {__index = env}) end
  function eval(e, env)
    local k = e.kind
    if k == "var" then
      local v = env[e]
      if v == nil then error("devplan.evaluate: unbound variable %" .. e.name, 0) end
      return v
    elseif k == "const" then
      local v = e.value
      if type(v) == "boolean" then return v end
      if type(v) == "table" then return fold(7, v) end
      return tensor(v)
    elseif k == "global" then
      return global(e.name)
    elseif k == "let" then
      local inner = scope(env)
      -- a function value sees its own variable (Relay's recursive let: a loop)
      inner[e.var] = eval(e.value, e.value.kind == "fn" and inner or env)
      return eval(e.body, inner)
    elseif k == "if" then
      if eval(e.cond, env) then return eval(e.then_branch, env) end
      return eval(e.else_branch, env)
    elseif k == "tuple" then
      local r = {}
      for i, f in ipairs(e.fields) do r[i] = eval(f, env) end
      return r
    elseif k == "proj" then
      return eval(e.tuple, env)[e.index + 1]
    elseif k == "fn" then
      return function(...)
        local inner = scope(env)
        for i, p in ipairs(e.params) do inner[p] = select(i, ...) end
        return eval(e.body, inner)
      end
    elseif k == "ctor" then
      if #(e.inputs or {}) == 0 then return {ctor = e.name, fields = {}} end
      return function(...) return {ctor = e.name, fields = {...}} end
    elseif k == "match" then
      local v = eval(e.data, env)
      for _, c in ipairs(e.clauses) do
        local inner = scope(env)
        if bind(c.pattern, v, inner) then return eval(c.rhs, inner) end
      end
      error("devplan.evaluate: no clause of a match fits", 0)
    elseif k == "ref" then
      return {ref = eval(e.value, env)}
    elseif k == "ref_read" then
      return eval(e.ref, env).ref
    elseif k == "ref_write" then
      eval(e.ref, env).ref = eval(e.value, env)
      return {}
    elseif k == "call" then
      local vals = {}
      for i, a in ipairs(e.args) do vals[i] = eval(a, env) end
      local callee = e.callee
      if callee.kind == "op" then return apply_op(callee.name, vals) end
      local f = eval(callee, env)
      if type(f) == "table" and f.ctor then return f end -- a constructor of no fields
      return f(table.unpack(vals, 1, #e.args))
    end
    error("devplan.evaluate: cannot evaluate a " .. tostring(k), 0)
  end
  local main = mod:get("main")
  if not main then error("devplan.evaluate: the module has no @main", 0) end
  local vals = {}
  for i, p in ipairs(main.params) do
    local v = args[p.name]
    if v == nil then v = args[i] end
    if v == nil then error("devplan.evaluate: no value for %" .. p.name, 0) end
    vals[i] = v
  end
  return global("main")(table.unpack(vals, 1, #main.params))
end

-- Are results a and b the same (tuples field by field; functions and
-- references only when they are the very same value)?
function M.same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  if a.ref ~= nil or b.ref ~= nil then return rawequal(a, b) end
  if a.ctor ~= nil or b.ctor ~= nil then
    return a.ctor == b.ctor and M.same(a.fields, b.fields)
  end
  if #a ~= #b then return false end
  for i = 1, #a do
    if not M.same(a[i], b[i]) then return false end
  end
  return true
end

-- A readable form of a result (for failure messages).
function M.show(v)
  if type(v) ~= "table" then return tostring(v) end
  if v.ctor then return v.ctor .. M.show(v.fields) end
  if v.ref ~= nil then return "ref(" .. M.show(v.ref) .. ")" end
  local parts = {}
  for i, x in ipairs(v) do parts[i] = M.show(x) end
  return "(" .. table.concat(parts, ", ") .. ")"
end

return M
