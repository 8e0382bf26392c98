-- Runs a planned module on small tensors: computes its value, checks that
-- every operator's arguments live where it runs, and counts the
-- device_copy calls executed (issue 20's measure: copies per execution).
--
--   local run = dofile("spec/support/copies.lua")
--   local r = run(planned, {x = 3, c = true}, {limit = 100000}?)
--   r.value       @main's result (device tags removed: comparable across plans)
--   r.copies      device_copy calls executed, r.bytes their bytes
--   r.violations  {"add at 3:5 runs on cuda but argument 1 is on cpu", ...}
--
-- Values. A tensor is one integer modulo a prime (booleans stay booleans);
-- each operator is a stand-in on those integers (a fixed hash of its name
-- and arguments when it has no stand-in of its own; a tuple of them when
-- its checked type is a tuple), so equal programs give equal values, and a
-- program whose copies moved gives the same value as before. on_device and
-- device_copy are the identity on values. Tuples, closures, global
-- functions (also as values), lets (recursive when the value is a
-- function), if, constructors and match work as in Relay. References, the
-- memory and VM operators and primfns are not modelled ("unsupported").
--
-- Devices, read as a later pass reads a planned module: a function's body
-- runs on the function's virtual_device, an on_device's body on its device,
-- a device_copy's argument on its source; anything else where its context
-- runs. A value carries the device it was made on (a parameter: its
-- virtual_device; a copy: its destination). An operator's tensor arguments
-- must be on the device it runs on, a function's arguments on its
-- parameters' devices, a copy's argument on its source, a function's
-- result on its virtual_device, @main's parameters are given on theirs.
--
-- Counting, per execution. A node shared by several places is evaluated
-- once, at the innermost scope that holds all its uses (a function body,
-- an if branch, a match clause: where the printer binds it,
-- include/devplan/visit.h), each time that scope runs. So the copies
-- executed are, over every scope, the times it ran times the device_copy
-- nodes that live there, whether or not the value of such a copy was read
-- on that path (a copy made before an if runs whichever branch is taken).
-- Values are computed as they are read (programs are pure), each node once
-- per activation of its scope; when a scope's activation ends, the nodes of
-- that scope nothing read run too (the text format evaluates them there),
-- so their branches and calls count, without device checks (their context
-- is their readers', and none read them on this path).
local dp = require "devplan"
local report = require "devplan.report"

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
  less = function(a, b) return a < b end,
  greater = function(a, b) return a > b end,
  equal = function(a, b) return a == b end,
  zeros = function() return 0 end,
  zeros_like = function() return 0 end,
  ones = function() return 1 end,
  ones_like = function() return 1 end,
}

local function unsupported(what) error("unsupported: " .. what, 0) end

-- A fixed hash of a string, and of an operator's name and argument values.
local function hash_text(s)
  local h = 5381
  for i = 1, #s do h = (h * 33 + s:byte(i)) % P end
  return h
end

local function fold(h, v)
  if type(v) == "number" then return (h * 31 + v) % P end
  if type(v) == "boolean" then return (h * 31 + (v and 1 or 2)) % P end
  if type(v) == "table" then
    if v.data ~= nil then return fold(h, v.data) end
    for i = 1, v.n or #v do h = fold(h, v[i]) end
    return (h * 31 + 7) % P
  end
  return h
end

-- A constant: an integer scalar as it is, a float scalar folded into the
-- integers (times 1000); a tensor constant the hash of its elements.
local function constant(e)
  local v = e.value
  if type(v) == "boolean" then return v end
  if type(v) == "number" then
    if tostring(e.dtype):match("int") then return math.tointeger(v) % P end
    return math.floor(v * 1000 + 0.5) % P
  end
  local h = 17
  local function walk(t)
    if type(t) == "table" then for _, x in ipairs(t) do walk(x) end
    else h = (h * 31 + math.floor((tonumber(t) or 0) * 1000 + 0.5)) % P end
  end
  walk(v)
  return h
end

local function is_op(e, name)
  return e.kind == "call" and e.callee.kind == "op" and e.callee.name == name
end

-- ------------------------------------------------------------ scopes

-- Every node of a global function with the scope it is evaluated in (its
-- home): the innermost scope holding all its uses. A scope is a table
-- {parent =, depth =, copies =, bytes =}; the function literal, if branch
-- and match clause that open one are keyed by (node, child slot).
local function scopes_of(fn)
  local post = {}
  dp.visit(fn, function(e) post[#post + 1] = e end)
  local root = {depth = 0, copies = 0, bytes = 0, list = {}}
  local home, opened, pending = {}, {}, {}
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
      s = {parent = at, depth = at.depth + 1, copies = 0, bytes = 0, list = {}}
      opened[e][slot] = s
    end
    return s
  end
  pending[fn] = root
  -- the global function's body is the root scope
  if fn.kind == "fn" then opened[fn] = {[#dp.children(fn)] = root} end
  for i = #post, 1, -1 do
    local e = post[i]
    local h = pending[e] or root
    home[e] = h
    local k = e.kind
    if k ~= "var" and k ~= "global" and k ~= "op" and k ~= "ctor" then
      local kids = dp.children(e)
      for slot, c in ipairs(kids) do
        local at = h
        if k == "fn" and slot == #kids then at = open(e, slot, h)
        elseif k == "if" and slot > 1 then at = open(e, slot, h)
        elseif k == "match" and slot > 1 then at = open(e, slot, h) end
        if c.kind ~= "var" then pending[c] = lca(pending[c], at) end
      end
    end
  end
  for _, e in ipairs(post) do
    local k = e.kind
    if k ~= "var" and k ~= "global" and k ~= "op" and k ~= "ctor" and e ~= fn then
      local s = home[e]
      s.nodes = s.nodes or {}
      s.nodes[#s.nodes + 1] = e
    end
    if is_op(e, "device_copy") then
      local s = home[e]
      local b = report.bytes_of(e.checked_type) or 0
      s.copies = s.copies + 1
      s.bytes = s.bytes + b
      s.list[#s.list + 1] = e
    end
  end
  return home, opened, root
end

-- ------------------------------------------------------------ devices

local function devkey_cache()
  local cache = setmetatable({}, {__mode = "k"})
  return function(vd)
    if vd == nil then return nil end
    local k = cache[vd]
    if not k then
      k = tostring(vd)
      cache[vd] = k
    end
    return k
  end
end

-- A tensor value: {data = integer or boolean, dev = device key}.
local function tensor(data, dev) return {data = data, dev = dev} end

-- Every tensor leaf of a value (tuples nested), for the device checks.
local function leaves(v, out)
  out = out or {}
  if type(v) ~= "table" then return out end
  if v.data ~= nil then out[#out + 1] = v
  elseif v.tuple then for i = 1, v.n do leaves(v[i], out) end end
  return out
end

-- The value without devices (closures and ADTs as far as they go).
local function strip(v)
  if type(v) ~= "table" then return v end
  if v.data ~= nil then return v.data end
  if v.tuple then
    local r = {n = v.n}
    for i = 1, v.n do r[i] = strip(v[i]) end
    return r
  end
  if v.ctor then
    local r = {ctor = v.ctor}
    for i, f in ipairs(v.fields) do r[i] = strip(f) end
    return r
  end
  return "<closure>"
end

-- ------------------------------------------------------------ running

return function(mod, args, opts)
  opts = opts or {}
  local limit = opts.limit or 1000000
  local steps = 0
  local devkey = devkey_cache()
  local scope_info = {}      -- global function name -> {home, opened, root}
  local counts = {}          -- scope -> times it ran
  local violations, nviol = {}, 0
  local forcing = 0
  local function violate(fmt, ...)
    if forcing > 0 then return end -- (a node no one reads here: run for its copies only)
    nviol = nviol + 1
    if #violations < 20 then violations[#violations + 1] = string.format(fmt, ...) end
  end
  local function where(e)
    local s = e.span
    local what = e.kind == "call" and e.callee.kind == "op" and e.callee.name or e.kind
    if s then return what .. " at " .. s.line .. ":" .. s.col end
    return what
  end
  local info_of_node = {}    -- node -> the info of the global function it is in
  for _, nf in ipairs(mod:functions()) do
    local home, opened, root = scopes_of(nf[2])
    local info = {home = home, opened = opened, root = root}
    scope_info[nf[1]] = info
    for e in pairs(home) do info_of_node[e] = info end
  end
  local function ran(s) counts[s] = (counts[s] or 0) + 1 end
  local function scope_at(e, slot)
    local info = info_of_node[e]
    return info and info.opened[e] and info.opened[e][slot]
  end
  -- fmt's last %s is the device the value is on
  local function check_leaves(v, dev, fmt, ...)
    for _, t in ipairs(leaves(v)) do
      if dev and t.dev and t.dev ~= dev then
        local args = table.pack(...)
        args[args.n + 1] = t.dev
        violate(fmt, table.unpack(args, 1, args.n + 1))
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
    for i, sub in ipairs(p.patterns or {}) do
      if not bind(sub, v[i], env) then return false end
    end
    return true
  end
  -- A closure: calls run the body on the function's device, with the
  -- arguments checked against the parameters' devices.
  local function closure(fn, env, name, defact)
    local body_scope = scope_at(fn, #fn.params + 1)
    local dev = devkey(fn.virtual_device)
    return {closure = true, call = function(vals, site)
      if body_scope then ran(body_scope) end
      local act = {scope = body_scope, parent = defact, memo = {}}
      local env2 = setmetatable({}, {__index = env})
      for i, p in ipairs(fn.params) do
        local want = devkey(p.virtual_device)
        check_leaves(vals[i], want, "argument %d of the call at %s of %s: its parameter is on %s, the argument on %s",
                     i, site, name or "a function", want)
        env2[p] = vals[i]
      end
      local r = eval(fn.body, env2, dev, act)
      force(act, env2, dev)
      check_leaves(r, dev, "the result of %s: the function's virtual_device is %s, the result on %s", name or "a function", dev)
      return r
    end}
  end
  local function tuple_of(vals) vals.tuple = true return vals end
  -- An operator with no stand-in: a hash of its name and arguments, shaped
  -- as its checked type (a tuple type gives a tuple).
  local function generic(e, vals, dev)
    local h = fold(hash_text(e.callee.name), vals)
    local t = e.checked_type
    local function shaped(ty, seed)
      if ty and ty.kind == "tuple" then
        local r = {n = #ty.fields}
        for i, f in ipairs(ty.fields) do r[i] = shaped(f, (seed * 31 + i) % P) end
        return tuple_of(r)
      end
      if ty and ty.kind == "tensor" and ty.dtype == "bool" then return tensor(seed % 2 == 0, dev) end
      return tensor(seed, dev)
    end
    return shaped(t, h)
  end
  local function compute(e, env, dev, act)
    steps = steps + 1
    if steps > limit then error("evaluation limit reached (" .. limit .. " steps)", 0) end
    local k = e.kind
    if k == "var" then
      local v = env[e]
      if v == nil then error("unbound variable %" .. e.name, 0) end
      return v
    end
    if k == "const" then return tensor(constant(e), dev) end
    if k == "global" then
      local f = mod:get(e.name) or error("no function @" .. e.name, 0)
      return closure(f, {}, "@" .. e.name, nil)
    end
    if k == "ctor" then return {ctor = e.name, fields = {}} end
    if k == "fn" then return closure(e, env, nil, act) end
    if k == "let" then
      -- (variables are unique nodes: the let binds in the environment of
      -- its activation, so a long let chain is no long __index chain)
      env[e.var] = eval(e.value, env, dev, act)
      return eval(e.body, env, dev, act)
    end
    if k == "if" then
      local c = eval(e.cond, env, dev, act)
      local cv = type(c) == "table" and c.data
      if type(cv) ~= "boolean" then unsupported("a condition that is not a boolean") end
      local slot = cv and 2 or 3
      local s = scope_at(e, slot)
      if s then ran(s) end
      local a = {scope = s, parent = act, memo = {}}
      local r = eval(cv and e.then_branch or e.else_branch, env, dev, a)
      force(a, env, dev)
      return r
    end
    if k == "tuple" then
      local r = {n = #e.fields}
      for i, f in ipairs(e.fields) do r[i] = eval(f, env, dev, act) end
      return tuple_of(r)
    end
    if k == "proj" then
      local t = eval(e.tuple, env, dev, act)
      if type(t) ~= "table" or not t.tuple then unsupported("a projection of a non-tuple") end
      return t[e.index + 1]
    end
    if k == "match" then
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
      error("no clause matches", 0)
    end
    if k ~= "call" then unsupported(k) end
    local callee = e.callee
    if callee.kind == "op" then
      local name = callee.name
      if name == "on_device" then
        local vd = e.attrs.virtual_device
        local inner = vd and devkey(vd) or dev
        if e.attrs.constrain_body == false then inner = dev end
        return eval(e.args[1], env, inner, act)
      end
      if name == "device_copy" then
        local src, dst = devkey(e.attrs.src_virtual_device), devkey(e.attrs.dst_virtual_device)
        local v = eval(e.args[1], env, src or dev, act)
        check_leaves(v, src, "the argument of the device_copy at %s: its source is %s, the argument on %s", where(e), src)
        local function moved(x)
          if type(x) ~= "table" then return x end
          if x.data ~= nil then return tensor(x.data, dst) end
          if x.tuple then
            local r = {n = x.n}
            for i = 1, x.n do r[i] = moved(x[i]) end
            return tuple_of(r)
          end
          return x
        end
        return moved(v)
      end
      if name:match("^memory%.") or name:match("^vm%.") or name == "call_lowered" then
        unsupported("operator " .. name)
      end
      local vals = {n = #e.args}
      for i, a in ipairs(e.args) do
        vals[i] = eval(a, env, dev, act)
        check_leaves(vals[i], dev, "argument %d of %s: the call runs on %s, the argument is on %s", i, where(e), dev)
      end
      local f = STAND_INS[name]
      if f then
        local raw = {}
        for i = 1, vals.n do
          local v = vals[i]
          raw[i] = type(v) == "table" and v.data
          if raw[i] == nil then return generic(e, vals, dev) end
        end
        return tensor(f(table.unpack(raw, 1, vals.n)), dev)
      end
      if name == "concatenate" then return generic(e, vals, dev) end
      return generic(e, vals, dev)
    end
    local vals = {n = #e.args}
    for i, a in ipairs(e.args) do vals[i] = eval(a, env, dev, act) end
    if callee.kind == "ctor" then return {ctor = callee.name, fields = vals} end
    local f = eval(callee, env, dev, act)
    if type(f) ~= "table" or not f.closure then unsupported("a call of a non-function") end
    return f.call(vals, where(e))
  end
  -- A node runs once per activation of its home scope: its value is kept
  -- there (the activations of the scopes around the current one, lexically:
  -- a closure's body inside the one that made it).
  eval = function(e, env, dev, act)
    if e.kind == "var" then return compute(e, env, dev, act) end
    local info = info_of_node[e]
    local h = info and info.home[e]
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

  local main = mod:get("main") or error("no @main", 0)
  local vals = {n = #main.params}
  for i, p in ipairs(main.params) do
    local a = args[p.name]
    if a == nil then error("no value for %" .. p.name, 0) end
    local dev = devkey(p.virtual_device)
    if type(a) == "table" and a.tuple then
      local r = {n = a.n}
      for j = 1, a.n do r[j] = tensor(a[j], dev) end
      vals[i] = tuple_of(r)
    else
      vals[i] = tensor(a, dev)
    end
  end
  local value = closure(main, {}, "@main", nil).call(vals, "the entry")
  local copies, bytes = 0, 0
  for _, info in pairs(scope_info) do
    -- every scope of the function: the root and those opened
    local seen = {}
    local function add(s)
      if seen[s] then return end
      seen[s] = true
      local n = counts[s] or 0
      if rawget(_G, "DEBUG_SCOPES") and s.copies > 0 then
        for _, c in ipairs(s.list) do print("scope ran", n, "copy", (tostring(c):gsub("\n", " "):sub(1, 70))) end
      end
      copies = copies + n * s.copies
      bytes = bytes + n * s.bytes
    end
    add(info.root)
    for _, slots in pairs(info.opened) do for _, s in pairs(slots) do add(s) end end
  end
  return {value = strip(value), copies = copies, bytes = bytes, violations = violations,
          nviolations = nviol, steps = steps}
end
