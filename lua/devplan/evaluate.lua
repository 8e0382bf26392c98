-- A small reference evaluator of Relay programs, for testing passes that
-- must keep what a program computes (PartitionByVirtualDevice,
-- MergeComposite, MergeAndAnnotate, ShareCopies, PlanDevices, MoveCopies):
-- run the module before and after, compare the results; and, for a planned
-- module, check that every operator's arguments live where it runs and
-- count the copies executed (docs/copies.md: copies per execution).
--
--   local evaluate = require "devplan.evaluate"
--   local v = evaluate.run(mod, {x = 3, c = true})   -- @main's result (args by name or position)
--   local r = evaluate.execute(mod, args, {limit =}?)
--   r.value       @main's result (as run's)
--   r.copies      device_copy calls executed, r.bytes the bytes they copied
--   r.violations  {"add at 3:5: the call runs on cuda, argument 1 is on cpu", ...}
--                 (the first 20; r.nviolations all of them), r.steps
--   evaluate.same(v1, v2)                            -- deep equality of two results
--   evaluate.show(v)                                 -- a readable form
--
-- Values: a tensor is one integer (what it holds stands for the whole
-- tensor), a bool a boolean, a tuple a list, a function a Lua function, a
-- constructor's value {ctor =, fields}, a reference {ref = value}. Each
-- operator is a stand-in that tells values apart: a mix of its name and
-- its arguments modulo a prime (so nothing overflows, and add(a, b) differs
-- from add(b, a) and from multiply(a, b)), shaped as its checked type (a
-- tuple type gives a tuple, bool a boolean); add, subtract and multiply of
-- an integer type compute (so a loop counter counts); on_device and
-- device_copy are the identity, `less` and the other comparisons compare.
-- A constant is an integer made from its value (a float x as x * 1000).
-- Evaluation follows the program as Relay runs it: lets, ifs, tuples,
-- projections, closures, calls of globals, function literals and function
-- values, recursive lets (loops), constructors, match and references.
--
-- When a node runs. A node shared by several places runs once, at the
-- innermost scope that holds all its uses (a function body, an if branch,
-- a match clause: where the printer binds it, include/devplan/visit.h),
-- each time that scope runs; when an activation of a scope ends, the nodes
-- of that scope nothing read on this path run too (the text format binds
-- them there). So the copies executed are, over every scope, the times it
-- ran times the device_copy nodes that live there (a copy made before an
-- if runs whichever branch is taken; one in a recursive function once per
-- iteration).
--
-- Devices, read as a later pass reads a planned module: a function's body
-- runs on the function's virtual_device, an on_device's body on its device,
-- a device_copy's argument on its source; anything else where its context
-- runs. A tensor carries the device it was made on (a parameter: its
-- virtual_device; a copy: its destination). An operator's tensor arguments
-- must be on the device it runs on, a function's arguments on its
-- parameters' devices, a copy's argument on its source, a function's
-- result on its virtual_device; @main's arguments are given on its
-- parameters'. A node nobody read on this path runs for its copies only:
-- its devices are not checked (its context is its readers').
local core = require "devplan.core"
local report = require "devplan.report"

local error, ipairs, pairs, rawequal, select, setmetatable, tostring, type =
  error, ipairs, pairs, rawequal, select, setmetatable, tostring, type
local math, string, table = math, string, table
_ENV = nil -- no global is read or written below this line

local M = {}

local PRIME = 2147483647 -- 2^31 - 1: a product of two values fits in an integer
local MAX_VIOLATIONS = 20

local function fail(msg) error("devplan.evaluate: " .. msg, 0) end

-- The integer a name stands for (FNV-1a, reduced), remembered.
local name_hashes = {}
local function name_hash(s)
  local h = name_hashes[s]
  if h then return h end
  h = 2166136261
  for i = 1, #s do h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff end
  h = h % PRIME
  name_hashes[s] = h
  return h
end

-- The integer a Lua number or boolean stands for.
local function number(v)
  if math.type(v) == "integer" then return v % PRIME end
  if type(v) == "number" then return math.floor(v * 1000) % PRIME end
  if type(v) == "boolean" then return v and 1 or 0 end
  fail("a tensor value expected, got " .. type(v))
end

-- ------------------------------------------------------------ values
-- Inside: a tensor {data = integer or boolean, dev = device key or nil}, a
-- tuple {tuple = true, n =, ...}, a closure {closure = true, call =}, a
-- constructor's value {ctor =, fields =}, a reference {ref = value}.

local function tensor(data, dev) return {data = data, dev = dev} end
local function tuple_of(vals) vals.tuple = true return vals end

-- Everything in v folded into h (a tuple's fields in order).
local function fold(h, v)
  if v.data ~= nil then return (h * 1000003 + number(v.data)) % PRIME end
  if v.tuple then
    for i = 1, v.n do h = fold(h, v[i]) end
    return (h * 31 + v.n) % PRIME
  end
  if v.closure then return (h * 41 + 2) % PRIME end
  return (h * 37 + 1) % PRIME -- a constructor's value, a reference
end

-- Every tensor of a value (tuples nested), for the device checks.
local function leaves(v, out)
  if v.data ~= nil then out[#out + 1] = v
  elseif v.tuple then for i = 1, v.n do leaves(v[i], out) end end
  return out
end

local function is_integer_type(t)
  return t ~= nil and t.kind == "tensor" and tostring(t.dtype):match("^u?int") ~= nil
end

local COMPARE = {
  less = function(a, b) return a < b end,
  greater = function(a, b) return a > b end,
  less_equal = function(a, b) return a <= b end,
  greater_equal = function(a, b) return a >= b end,
  equal = function(a, b) return a == b end,
  not_equal = function(a, b) return a ~= b end,
}
local ARITH = {
  add = function(a, b) return (a + b) % PRIME end,
  subtract = function(a, b) return (a - b) % PRIME end,
  multiply = function(a, b) return (a * b) % PRIME end,
}

-- A constant: its value as an integer (a tensor constant folded).
local function constant(e, dev)
  local v = e.value
  if type(v) == "boolean" then return tensor(v, dev) end
  if type(v) ~= "table" then return tensor(number(v), dev) end
  local h = 7
  local function walk(t)
    if type(t) == "table" then
      for _, x in ipairs(t) do walk(x) end
      h = (h * 31 + #t) % PRIME
    else
      h = (h * 1000003 + number(t)) % PRIME
    end
  end
  walk(v)
  return tensor(h, dev)
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
    if v.ctor ~= p.ctor.name then return false end
    for i, q in ipairs(subs) do
      if not bind(q, v.fields[i], env) then return false end
    end
    return true
  end
  if not v.tuple then fail("a tuple pattern on a value that is not a tuple") end
  for i, q in ipairs(subs) do
    if not bind(q, v[i], env) then return false end
  end
  return true
end

-- ------------------------------------------------------------ scopes

local function is_op(e, name)
  return e.kind == "call" and e.callee.kind == "op" and e.callee.name == name
end

local ATOMS = {var = true, global = true, op = true, ctor = true}

-- Every node of a global function with the scope it runs in (its home):
-- the innermost scope holding all its uses. A scope is {parent =, depth =,
-- copies =, bytes =, nodes =}; those a function literal, an if branch or a
-- match clause opens are opened[node][child slot].
local function scopes_of(fn, home, opened, scopes)
  local post = {}
  core.visit(fn, function(e) post[#post + 1] = e end)
  local root = {depth = 0, copies = 0, bytes = 0, nodes = {}}
  scopes[#scopes + 1] = root
  local pending = {}
  local function lca(a, b)
    if a == nil then return b end
    while a.depth > b.depth do a = a.parent end
    while b.depth > a.depth do b = b.parent end
    while a ~= b do a, b = a.parent, b.parent end
    return a
  end
  local function open(e, slot, at)
    opened[e] = opened[e] or {}
    local s = opened[e][slot]
    if not s then
      s = {parent = at, depth = at.depth + 1, copies = 0, bytes = 0, nodes = {}}
      opened[e][slot] = s
      scopes[#scopes + 1] = s
    end
    return s
  end
  -- the global function's body is the root scope
  if fn.kind == "fn" then opened[fn] = {[#core.children(fn)] = root} end
  for i = #post, 1, -1 do
    local e = post[i]
    local h = pending[e] or root
    home[e] = h
    local k = e.kind
    if not ATOMS[k] then
      local kids = core.children(e)
      for slot, c in ipairs(kids) do
        local at = h
        if (k == "fn" and slot == #kids) or ((k == "if" or k == "match") and slot > 1) then
          at = open(e, slot, h)
        end
        if c.kind ~= "var" then pending[c] = lca(pending[c], at) end
      end
    end
  end
  for _, e in ipairs(post) do
    local s, k = home[e], e.kind
    if not ATOMS[k] and not rawequal(e, fn) then s.nodes[#s.nodes + 1] = e end
    if k == "call" and is_op(e, "device_copy") then
      s.copies = s.copies + 1
      s.bytes = s.bytes + (report.bytes_of(e.checked_type) or 0)
    end
  end
end

-- The scopes of every function of mod: home, opened and the list of
-- scopes, kept for the module while its functions are the same nodes (a
-- module is run once per argument set, and once per pass it goes through).
local analyses = setmetatable({}, {__mode = "k"})

local function analysis(mod)
  local fns = mod:functions()
  local a = analyses[mod]
  if a and #a.fns == #fns then
    local same = true
    for i, nf in ipairs(fns) do same = same and rawequal(a.fns[i], nf[2]) end
    if same then return a.home, a.opened, a.scopes end
  end
  a = {fns = {}, home = {}, opened = {}, scopes = {}}
  for i, nf in ipairs(fns) do
    a.fns[i] = nf[2]
    scopes_of(nf[2], a.home, a.opened, a.scopes)
  end
  analyses[mod] = a
  return a.home, a.opened, a.scopes
end

-- ------------------------------------------------------------ running

-- The value of a tensor argument given to @main (a list: a tuple).
local function argument(a, dev)
  if type(a) == "table" then
    local r = {n = a.n or #a}
    for i = 1, r.n do r[i] = argument(a[i], dev) end
    return tuple_of(r)
  end
  if type(a) == "boolean" then return tensor(a, dev) end
  return tensor(number(a), dev)
end

-- Runs @main of mod on args: its value (inside form) and the counts.
local function execute(mod, args, opts)
  if type(args) ~= "table" then fail("arguments must be a table, got " .. type(args)) end
  local limit = opts.limit or 1000000
  local steps = 0
  local keys = setmetatable({}, {__mode = "k"})
  local function devkey(vd)
    if vd == nil then return nil end
    local k = keys[vd]
    if not k then
      k = tostring(vd)
      keys[vd] = k
    end
    return k
  end
  local home, opened, scopes = analysis(mod)
  local counts = {}          -- scope -> times it ran
  local violations, nviol = {}, 0
  local forcing = 0
  local function violate(fmt, ...)
    if forcing > 0 then return end -- (a node no one reads here: run for its copies only)
    nviol = nviol + 1
    if #violations < MAX_VIOLATIONS then violations[#violations + 1] = string.format(fmt, ...) end
  end
  local function where(e)
    local s = e.span
    local what = e.kind == "call" and e.callee.kind == "op" and e.callee.name or e.kind
    if s then return what .. " at " .. s.line .. ":" .. s.col end
    return what
  end
  local function ran(s) counts[s] = (counts[s] or 0) + 1 end
  local function scope_at(e, slot) return opened[e] and opened[e][slot] end
  -- The device of a tensor of v not on dev (tuples nested), or nil.
  local function elsewhere(v, dev)
    if v.data ~= nil then return v.dev and v.dev ~= dev and v.dev or nil end
    if v.tuple then
      for i = 1, v.n do
        local d = elsewhere(v[i], dev)
        if d then return d end
      end
    end
    return nil
  end
  -- fmt's last %s is the device the value is on; a the argument that
  -- tells where (a node: where(a))
  local function check_leaves(v, dev, fmt, ...)
    if not dev or forcing > 0 then return end
    if not elsewhere(v, dev) then return end
    for _, t in ipairs(leaves(v, {})) do
      if t.dev and t.dev ~= dev then
        local a = table.pack(...)
        for i = 1, a.n do
          if type(a[i]) == "userdata" then a[i] = where(a[i]) end
        end
        a[a.n + 1] = t.dev
        violate(fmt, table.unpack(a, 1, a.n + 1))
      end
    end
  end

  local eval
  -- Every node whose scope is act's runs when act does, read or not (where
  -- the printer binds it): the ones nothing read yet run at the end.
  local function force(act, env, dev)
    local nodes = act.scope and act.scope.nodes
    if not nodes then return end
    forcing = forcing + 1
    for _, e in ipairs(nodes) do
      if act.memo[e] == nil then eval(e, env, dev, act) end
    end
    forcing = forcing - 1
  end
  -- A closure: a call runs the body on the function's device, with the
  -- arguments checked against the parameters' devices.
  local function closure(fn, env, name, defact)
    local body_scope = scope_at(fn, #fn.params + 1)
    local dev = devkey(fn.virtual_device)
    return {closure = true, call = function(vals, site)
      if body_scope then ran(body_scope) end
      local act = {scope = body_scope, parent = defact, memo = {}}
      local env2 = setmetatable({}, {__index = env})
      for i, p in ipairs(fn.params) do
        local v = vals[i]
        if v == nil then fail("too few arguments in the call at " .. (type(site) == "string" and site or where(site))) end
        local want = devkey(p.virtual_device)
        check_leaves(v, want, "argument %d of %s of %s: its parameter is on %s, the argument on %s",
                     i, site, name or "a function", want)
        env2[p] = v
      end
      local r = eval(fn.body, env2, dev, act)
      force(act, env2, dev)
      check_leaves(r, dev, "the result of %s: the function's virtual_device is %s, the result on %s",
                   name or "a function", dev)
      return r
    end}
  end
  -- An operator's stand-in: a mix of its name and arguments, shaped as its
  -- checked type (a tuple type gives a tuple).
  local function stand_in(e, name, vals, dev)
    local t = e.checked_type
    local cmp, arith = COMPARE[name], ARITH[name]
    if (cmp or (arith and is_integer_type(t))) and vals.n == 2 and vals[1].data ~= nil and vals[2].data ~= nil then
      local a, b = number(vals[1].data), number(vals[2].data)
      return tensor((cmp or arith)(a, b), dev)
    end
    local h = name_hash(name)
    for i = 1, vals.n do h = fold(h, vals[i]) end
    local function shaped(ty, seed)
      if ty and ty.kind == "tuple" then
        local r = {n = #ty.fields}
        for i, f in ipairs(ty.fields) do r[i] = shaped(f, (seed * 31 + i) % PRIME) end
        return tuple_of(r)
      end
      if ty and ty.kind == "tensor" and ty.dtype == "bool" then return tensor(seed % 2 == 0, dev) end
      return tensor(seed, dev)
    end
    return shaped(t, h)
  end
  local function moved(x, dst)
    if x.data ~= nil then return tensor(x.data, dst) end
    if x.tuple then
      local r = {n = x.n}
      for i = 1, x.n do r[i] = moved(x[i], dst) end
      return tuple_of(r)
    end
    return x
  end
  local function ref_of(v)
    if type(v) ~= "table" or not v.isref then fail("a reference expected") end
    return v
  end
  local function compute(e, env, dev, act)
    steps = steps + 1
    if steps > limit then fail("evaluation limit reached (" .. limit .. " steps)") end
    local k = e.kind
    if k == "var" then
      local v = env[e]
      if v == nil then fail("unbound variable %" .. e.name) end
      return v
    elseif k == "const" then
      return constant(e, dev)
    elseif k == "global" then
      local f = mod:get(e.name)
      if not f then fail("no global @" .. e.name) end
      return closure(f, {}, "@" .. e.name, nil)
    elseif k == "ctor" then
      if #(e.inputs or {}) == 0 then return {ctor = e.name, fields = {}} end
      return {closure = true, call = function(vals) return {ctor = e.name, fields = vals} end}
    elseif k == "fn" then
      return closure(e, env, nil, act)
    elseif k == "let" then
      -- (variables are unique nodes: the let binds in the environment of
      -- its activation, so a long let chain is no long __index chain; a
      -- function value sees its own variable: a recursive let, a loop)
      env[e.var] = eval(e.value, env, dev, act)
      return eval(e.body, env, dev, act)
    elseif k == "if" then
      local c = eval(e.cond, env, dev, act)
      if type(c.data) ~= "boolean" then fail("a condition that is not a boolean") end
      local slot = c.data and 2 or 3
      local s = scope_at(e, slot)
      if s then ran(s) end
      local a = {scope = s, parent = act, memo = {}}
      local r = eval(c.data and e.then_branch or e.else_branch, env, dev, a)
      force(a, env, dev)
      return r
    elseif k == "tuple" then
      local r = {n = #e.fields}
      for i, f in ipairs(e.fields) do r[i] = eval(f, env, dev, act) end
      return tuple_of(r)
    elseif k == "proj" then
      local t = eval(e.tuple, env, dev, act)
      if not t.tuple then fail("a projection of a value that is not a tuple") end
      return t[e.index + 1]
    elseif k == "match" then
      local v = eval(e.data, env, dev, act)
      for i, c in ipairs(e.clauses) do
        local env2 = setmetatable({}, {__index = env})
        if bind(c.pattern, v, env2) then
          local s = scope_at(e, i + 1)
          if s then ran(s) end
          local a = {scope = s, parent = act, memo = {}}
          local r = eval(c.rhs, env2, dev, a)
          force(a, env2, dev)
          return r
        end
      end
      fail("no clause of a match fits")
    elseif k == "ref" then
      return {isref = true, ref = eval(e.value, env, dev, act)}
    elseif k == "ref_read" then
      return ref_of(eval(e.ref, env, dev, act)).ref
    elseif k == "ref_write" then
      local r = ref_of(eval(e.ref, env, dev, act))
      r.ref = eval(e.value, env, dev, act)
      return tuple_of({n = 0})
    elseif k ~= "call" then
      fail("cannot evaluate a " .. tostring(k))
    end
    local callee = e.callee
    if callee.kind == "op" then
      local name = callee.name
      if name == "on_device" then
        local vd = e.attrs.virtual_device
        local inner = vd and devkey(vd) or dev
        if e.attrs.constrain_body == false then inner = dev end
        return eval(e.args[1], env, inner, act)
      elseif name == "device_copy" then
        local src, dst = devkey(e.attrs.src_virtual_device), devkey(e.attrs.dst_virtual_device)
        local v = eval(e.args[1], env, src or dev, act)
        check_leaves(v, src, "the argument of %s: its source is %s, the argument on %s",
                     e, src)
        return moved(v, dst)
      end
      local vals = {n = #e.args}
      for i, a in ipairs(e.args) do
        vals[i] = eval(a, env, dev, act)
        check_leaves(vals[i], dev, "argument %d of %s: the call runs on %s, the argument is on %s", i, e, dev)
      end
      if name == "ref" then return {isref = true, ref = vals[1]} end
      if name == "ref_read" then return ref_of(vals[1]).ref end
      if name == "ref_write" then
        ref_of(vals[1]).ref = vals[2]
        return tuple_of({n = 0})
      end
      return stand_in(e, name, vals, dev)
    end
    local vals = {n = #e.args}
    for i, a in ipairs(e.args) do vals[i] = eval(a, env, dev, act) end
    if callee.kind == "ctor" and #(callee.inputs or {}) > 0 then
      local fields = {}
      for i = 1, vals.n do fields[i] = vals[i] end
      return {ctor = callee.name, fields = fields}
    end
    local f = eval(callee, env, dev, act)
    if f.ctor then return f end -- a constructor of no fields
    if not f.closure then fail("a call of a value that is not a function") end
    return f.call(vals, e)
  end
  -- A node runs once per activation of its home scope: its value is kept
  -- there (the activations of the scopes around the current one, lexically:
  -- a closure's body inside the one that made it).
  eval = function(e, env, dev, act)
    if e.kind == "var" then return compute(e, env, dev, act) end
    local h = home[e]
    local a = act
    while a and a.scope ~= h do a = a.parent end
    local m = (a or act).memo
    local v = m[e]
    if v == nil then
      v = compute(e, env, dev, act)
      m[e] = v
    end
    return v
  end

  local main = mod:get("main")
  if not main then fail("the module has no @main") end
  local vals = {n = #main.params}
  for i, p in ipairs(main.params) do
    local a = args[p.name]
    if a == nil then a = args[i] end
    if a == nil then fail("no value for %" .. p.name) end
    vals[i] = argument(a, devkey(p.virtual_device))
  end
  local value = closure(main, {}, "@main", nil).call(vals, "the entry")
  local copies, bytes = 0, 0
  for _, s in ipairs(scopes) do
    local n = counts[s] or 0
    copies = copies + n * s.copies
    bytes = bytes + n * s.bytes
  end
  return {value = value, copies = copies, bytes = bytes, violations = violations, nviolations = nviol,
          steps = steps}
end

-- The value as the caller sees it: a tensor its integer (or boolean), a
-- tuple a list, a function a Lua function, a reference {ref =} (the same
-- table for the same reference).
local function outside(v, seen)
  if v.data ~= nil then return v.data end
  local o = seen[v]
  if o then return o end
  if v.tuple then
    o = {}
    seen[v] = o
    for i = 1, v.n do o[i] = outside(v[i], seen) end
  elseif v.ctor then
    o = {ctor = v.ctor, fields = {}}
    seen[v] = o
    for i, f in ipairs(v.fields) do o.fields[i] = outside(f, seen) end
  elseif v.isref then
    o = {}
    seen[v] = o
    o.ref = outside(v.ref, seen)
  else -- a closure
    o = function(...)
      local n = select("#", ...)
      local vals = {n = n}
      for i = 1, n do vals[i] = argument(select(i, ...), nil) end
      return outside(v.call(vals, "a call from Lua"), {})
    end
    seen[v] = o
  end
  return o
end

-- @main's result for args (a table by parameter name, or a list by position).
function M.run(mod, args)
  return outside(execute(mod, args, {}).value, {})
end

-- @main run on args with its copies counted and its devices checked.
function M.execute(mod, args, opts)
  if opts ~= nil and type(opts) ~= "table" then fail("options must be a table, got " .. type(opts)) end
  opts = opts or {}
  for k, v in pairs(opts) do
    if k ~= "limit" then fail("unknown option '" .. tostring(k) .. "' (limit)") end
    if math.type(v) ~= "integer" or v < 1 then fail("option 'limit' must be a positive integer") end
  end
  local r = execute(mod, args, opts)
  r.value = outside(r.value, {})
  return r
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
