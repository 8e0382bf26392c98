-- A small evaluator of modules, for the partitioning specs: does a
-- partitioned module compute what the planned one computed?
--
--   local evaluate = dofile("spec/support/evaluate.lua")
--   local value = evaluate(mod, {x = 3, c = true})   -- @main's parameters by name
--
-- A tensor is one integer modulo a prime and each operator a stand-in on
-- it (exact: no rounding, no NaN, so equal programs give equal values);
-- on_device and device_copy are the identity. Booleans, tuples, closures,
-- global functions (also as values), lets (recursive when the value is a
-- function), if, constructors and match work as in Relay. References, the
-- memory and VM operators and primfns are not modelled: evaluating them
-- raises "unsupported: ...". Shared nodes are evaluated once per
-- environment (programs are pure). Variables are found by node identity.
local P = 1000003

local STAND_INS = {
  add = function(a, b) return (a + b) % P end,
  subtract = function(a, b) return (a - b) % P end,
  multiply = function(a, b) return (a * b) % P end,
  negative = function(a) return (-a) % P end,
  exp = function(a) return (a * 7 + 3) % P end,
  log = function(a) return (a * 5 + 11) % P end,
  tanh = function(a) return (a * a + 2) % P end,
  ["nn.relu"] = function(a) return (a * a + 1) % P end,
  abs = function(a) return (a * 3 + 1) % P end,
  concatenate = function(t) local s = 0 for _, v in ipairs(t) do s = (s * 31 + v) % P end return s end,
  less = function(a, b) return a < b end,
  zeros = function() return 0 end,
  zeros_like = function() return 0 end,
  ones = function() return 1 end,
  on_device = function(a) return a end,
  device_copy = function(a) return a end,
}

local function unsupported(what) error("unsupported: " .. what, 0) end

-- A constant: a scalar's value folded into the integers; a tensor constant 1.
local function constant(e)
  local v = e.value
  if type(v) == "boolean" then return v end
  if type(v) == "number" then return math.floor(v * 1000 + 0.5) % P end
  return 1
end

local function ctor_value(name, fields) return {ctor = name, fields = fields} end

-- Binds pattern p against value v into env; false when it does not match.
local function bind(p, v, env)
  if p.kind == "wild" then return true end
  if p.kind == "var" then env[p.var] = v return true end
  if p.kind == "ctor" then
    if type(v) ~= "table" or v.ctor ~= p.ctor.name then return false end
    for i, sub in ipairs(p.patterns or {}) do
      if not bind(sub, v.fields[i], env) then return false end
    end
    return true
  end
  for i, sub in ipairs(p.patterns or {}) do -- tuple
    if not bind(sub, v[i], env) then return false end
  end
  return true
end

return function(mod, args)
  local memo = setmetatable({}, {__mode = "k"}) -- env -> node -> value
  local eval
  local function call_value(f, vals)
    if type(f) ~= "function" then unsupported("a call of a " .. type(f)) end
    return f(table.unpack(vals, 1, vals.n))
  end
  local function closure(fn, env)
    return function(...)
      local env2 = setmetatable({}, {__index = env})
      for i, p in ipairs(fn.params) do env2[p] = select(i, ...) end
      return eval(fn.body, env2)
    end
  end
  local function compute(e, env)
    local k = e.kind
    if k == "var" then
      local v = env[e]
      if v == nil then error("unbound variable %" .. e.name, 0) end
      return v
    end
    if k == "const" then return constant(e) end
    if k == "global" then return closure(mod:get(e.name), {}) end
    if k == "ctor" then return ctor_value(e.name, {}) end
    if k == "fn" then return closure(e, env) end
    if k == "let" then
      local env2 = setmetatable({}, {__index = env})
      env2[e.var] = eval(e.value, e.value.kind == "fn" and env2 or env)
      return eval(e.body, env2)
    end
    if k == "if" then
      if eval(e.cond, env) then return eval(e.then_branch, env) end
      return eval(e.else_branch, env)
    end
    if k == "tuple" then
      local r = {n = #e.fields}
      for i, f in ipairs(e.fields) do r[i] = eval(f, env) end
      return r
    end
    if k == "proj" then return eval(e.tuple, env)[e.index + 1] end
    if k == "match" then
      local v = eval(e.data, env)
      for _, c in ipairs(e.clauses) do
        local env2 = setmetatable({}, {__index = env})
        if bind(c.pattern, v, env2) then return eval(c.rhs, env2) end
      end
      error("no clause matches", 0)
    end
    if k ~= "call" then unsupported(k) end
    local vals = {n = #e.args}
    for i, a in ipairs(e.args) do vals[i] = eval(a, env) end
    local callee = e.callee
    if callee.kind == "op" then
      local f = STAND_INS[callee.name] or unsupported("operator " .. callee.name)
      if callee.name == "concatenate" then return f(vals[1]) end
      return f(table.unpack(vals, 1, vals.n))
    end
    if callee.kind == "ctor" then return ctor_value(callee.name, vals) end
    return call_value(eval(callee, env), vals)
  end
  eval = function(e, env)
    local m = memo[env]
    if not m then m = {}; memo[env] = m end
    local v = m[e]
    if v == nil then
      v = compute(e, env)
      m[e] = v
    end
    return v
  end
  local main = mod:get("main")
  local vals = {n = #main.params}
  for i, p in ipairs(main.params) do vals[i] = args[p.name] end
  return closure(main, {})(table.unpack(vals, 1, vals.n))
end
