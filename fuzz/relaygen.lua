-- A seeded generator of well-typed Relay programs for device planning, and
-- the shrinker that makes a failing one small.
--
--   local gen = require "relaygen"              -- fuzz/ on package.path
--   local prog = gen.program(seed, opts?)       -- the program as a tree
--   local text = gen.text(prog, order?)         -- Relay text; order permutes the definitions
--   local small = gen.shrink(prog, fails)       -- smallest found for which fails(p) stays true
--
-- Programs reach all of Relay. Their types (keys of TYPE_TEXT): tensors T
-- (Tensor[(5, 7), float32]), bool B, pairs P, functions F (fn (T) -> T),
-- lists L (List[T], an ADT of the program), options O (Opt[F]: functions
-- inside an ADT), references R (ref(T)), storage M, shapes H
-- (Tensor[(2), int64]), int64 scalars I and the unit () of effects. They
-- have global functions calling each other (and passed as values), graph
-- bindings (sharing) and lets (some with a type), effect statements (`e;`),
-- tuples and projections, if, closures capturing outer values, higher-order
-- calls, constructors and match/match? with nested patterns, ref, ref_read
-- and ref_write, primfn declarations with call_lowered, the memory and VM
-- operators (memory.alloc_storage, memory.alloc_tensor, vm.shape_of,
-- vm.reshape_tensor, vm.invoke_tvm_op of Primitive functions and primfns),
-- on_device in its four flavours (as let values, function bodies, nested,
-- around tuples, functions and ADTs, shared by several readers), device_copy, parameter and result
-- virtual_device annotations, scalar constants, and two or three devices
-- among cpu, cuda, opencl and memory-scoped ones. Each program turns on a
-- random subset of the ADT, reference, lowered and memory features, so
-- that old-style programs stay among them.
--
-- Every expression of the tree carries its type, so the shrinker
-- (relaygen_shrink.lua) only ever replaces an expression by another of
-- the same type; the printer is relaygen_text.lua.
local text = require "relaygen_text"
local shrink = require "relaygen_shrink"

local M = {}

-- ------------------------------------------------------------ random numbers

-- splitmix64 on Lua integers (wrapping arithmetic), so a seed gives the
-- same program on every machine and Lua build.
local Rng = {}
Rng.__index = Rng

function M.rng(seed)
  return setmetatable({s = seed}, Rng)
end

function Rng:next()
  self.s = self.s + 0x9E3779B97F4A7C15
  local z = self.s
  z = (z ~ (z >> 30)) * -4658895280553007687 -- 0xBF58476D1CE4E5B9
  z = (z ~ (z >> 27)) * -7723592293110705685 -- 0x94D049BB133111EB
  return z ~ (z >> 31)
end

-- An integer in [0, n).
function Rng:below(n)
  return (self:next() >> 1) % n
end

function Rng:chance(p)
  return self:below(1000000) < p * 1000000
end

function Rng:pick(list)
  return list[self:below(#list) + 1]
end

-- A key of weights ({key = weight}, weights may be fractions) chosen in
-- proportion; keys sorted so the choice does not depend on table order.
function Rng:weighted(weights)
  local keys, total = {}, 0
  for k, w in pairs(weights) do
    if w > 0 then keys[#keys + 1] = k; total = total + w end
  end
  table.sort(keys)
  local r = self:below(1 << 30) / (1 << 30) * total
  for _, k in ipairs(keys) do
    r = r - weights[k]
    if r < 0 then return k end
  end
  return keys[#keys] -- (rounding)
end

-- ------------------------------------------------------------ devices

-- Devices are meta[VirtualDevice][i] of fuzz/props.lua's M.META: 0 cpu,
-- 1 cuda, 2 (cpu, "scopeA"), 3 (cuda, "global"), 4 opencl.

-- Inline forms that leave fields unconstrained (canonicalised by planning).
local INLINE = {
  "VirtualDevice(device_type=cpu)",
  "VirtualDevice(device_type=cuda, virtual_device_id=0)",
  'VirtualDevice(device_type=cpu, memory_scope="scopeA")',
  'VirtualDevice(memory_scope="global")',
}

-- Memory scopes of primfn buffers ("" is unconstrained).
local SCOPES = {"", "", "", "global", "scopeA", "scopeB"}

M.TYPE_TEXT = text.TYPE_TEXT

-- ------------------------------------------------------------ the tree
--
-- program = {defs = {def...}, devices = {meta indices (0-based)},
--            adts = bool (the type definitions List and Opt are printed),
--            primfns = {{name, scopes = {buffer scope...}, ret = scope}...}}
-- def     = {name, params = {param...}, ret = ty, vd = device text?, body = block}
-- param   = {name, ty, vd = device text?}
-- block   = {stmts = {stmt...}, result = expr}
-- stmt    = {kind = "bind"|"let", name, expr, annotated = bool?} | {kind = "seq", expr} (`e;`)
-- expr    = {k = "var", name, ty} | {k = "global", name, ty}
--         | {k = "const", text, ty}               (scalars: ty "S" only as add's 2nd argument, "I", "H")
--         | {k = "op", op, args = {expr...}, attrs = "text"?, ty}
--                                                 (operators, ref/ref_read/ref_write, call_lowered,
--                                                  the memory and VM operators)
--         | {k = "call", callee = expr, args = {expr...}, ty}
--         | {k = "tuple", fields = {expr...}, ty} | {k = "proj", tuple = expr, index, ty = "T"}
--         | {k = "if", cond = expr, then_ = block, else_ = block, ty}
--         | {k = "fn", params = {param...}, body = block, attrs = "text"?, ty}
--         | {k = "ctor", name, args = {expr...}, ty}
--         | {k = "match", partial = bool, data = expr, clauses = {{pat = pattern, body = block}...}, ty}
-- pattern = {p = "wild"} | {p = "var", name, ty} | {p = "ctor", name, args = {pattern...}}

local G = {} -- the generator's state for one program
G.__index = G

local function new_state(seed, opts)
  local self = setmetatable({rng = M.rng(seed), opts = opts or {}, defs = {}, primfns = {}}, G)
  -- a second stream for what was added later, so that the first stream
  -- (and so every program made before) stays as it was
  self.rng2 = M.rng(seed * 7919 + 104729)
  local r = self.rng
  -- two or three devices: cpu and cuda, sometimes a memory-scoped one or opencl
  self.devices = {0, 1}
  if r:chance(0.5) then self.devices[3] = r:pick{2, 3, 4} end
  -- how many annotations (in tenths of the base weight): few annotations
  -- plan more often, many find more conflicts
  self.density = r:pick{1, 3, 10, 20}
  -- the parts of Relay this program uses besides the first-order core
  self.feat = {adt = r:chance(0.5), ref = r:chance(0.4), lowered = r:chance(0.4), memory = r:chance(0.4)}
  if opts and opts.features == false then self.feat = {} end
  return self
end

function G:device()
  local r = self.rng
  if r:chance(0.15) then return r:pick(INLINE) end
  return ("meta[VirtualDevice][%d]"):format(r:pick(self.devices))
end

function G:fresh(prefix)
  self.counter = self.counter + 1
  return prefix .. self.counter
end

-- Scope: a list of {name, ty} visible here (params and earlier bindings).
local function with(scope, name, ty)
  local s = {}
  for i = 1, #scope do s[i] = scope[i] end
  s[#s + 1] = {name = name, ty = ty}
  return s
end

local function of_type(scope, ty)
  local out = {}
  for _, v in ipairs(scope) do
    if v.ty == ty then out[#out + 1] = v end
  end
  return out
end

-- Helpers (global functions defined so far) whose result is ty.
function G:helpers(ty)
  local out = {}
  for _, d in ipairs(self.defs) do
    if d.ret == ty then out[#out + 1] = d end
  end
  return out
end

local function var(v) return {k = "var", name = v.name, ty = v.ty} end

local function op(name, args, ty, attrs)
  return {k = "op", op = name, args = args, ty = ty, attrs = attrs}
end

local ON_DEVICE_FLAVOURS = {
  "",                                            -- normal: constrain_body=True
  ", constrain_result=True",                     -- fixed
  ", constrain_body=False",                      -- free
  ", constrain_body=False, constrain_result=True",
}

function G:on_device(e)
  local flavour = self.rng:pick(ON_DEVICE_FLAVOURS)
  return op("on_device", {e}, e.ty, "virtual_device=" .. self:device() .. flavour)
end

function G:device_copy(e)
  return op("device_copy", {e}, e.ty,
    "src_virtual_device=" .. self:device() .. ", dst_virtual_device=" .. self:device())
end

-- ------------------------------------------------------------ expressions

-- An expression of type ty in scope, at most depth deep (nil when none
-- can be made: a bool with no bool in scope). free: nothing around the
-- expression fixes its type (a statement's value, a match's data), so it
-- must not be a bare Nil or Nothing, whose element type nothing would
-- decide.
function G:expr(ty, scope, depth, free)
  local vars = of_type(scope, ty)
  if depth <= 0 then
    if #vars > 0 then return var(self.rng:pick(vars)) end
    return self:leaf(ty, scope, free) -- no variable of this type
  end
  return self["expr_" .. ty](self, scope, depth, vars, free)
end

-- A value of type ty that needs no variable of its type (nil for B).
function G:leaf(ty, scope, free)
  if ty == "T" then return op("zeros", {}, "T", 'shape=[5, 7], dtype="float32"') end
  if ty == "P" then return {k = "tuple", ty = "P", fields = {self:leaf("T"), self:leaf("T")}} end
  if ty == "R" then return op("ref", {self:expr("T", scope, 0)}, "R") end
  if ty == "F" or ty == "M" or ty == "H" or ty == "I" then return self["expr_" .. ty](self, scope, 1, {}) end
  if ty == "L" then return free and self:make_cons(scope, 0) or self:make_nil_() end
  if ty == "O" then return free and self:make_some(scope, 0) or self:make_nothing() end
end

-- The choice among weighted ways to make a value of one type: each way
-- is a method "make_<way>" of (scope, depth, vars, ty); a way that gives
-- nil falls back to the default one.
function G:choose(ty, weights, scope, depth, vars, default, free)
  local k = self.rng:weighted(weights)
  local e = self["make_" .. k](self, scope, depth, vars, ty, free)
  if e == nil and default then e = self["make_" .. default](self, scope, depth, vars, ty, free) end
  return e
end

-- Weights shared by every type that can stand in a let, an if or a match.
function G:common_weights(ty, vars, w)
  local f = self.feat
  w.var = w.var or (#vars > 0 and 3 or 0)
  w.call = w.call or (#self:helpers(ty) > 0 and 2 or 0)
  w.on_device = w.on_device or 1
  w["if"] = w["if"] or 0
  w.match = w.match or (f.adt and 1 or 0)
  return w
end

function G:make_var(_, _, vars) return var(self.rng:pick(vars)) end

function G:make_call(scope, depth, _, ty)
  return self:call_global(self.rng:pick(self:helpers(ty)), scope, depth)
end

-- (on_device, device_copy, if and match leave their type to their context)
function G:make_on_device(scope, depth, _, ty, free)
  return self:on_device(self:expr(ty, scope, depth - 1, free))
end

function G:make_device_copy(scope, depth, _, ty, free)
  return self:device_copy(self:expr(ty, scope, depth - 1, free))
end

function G:make_if(scope, depth, _, ty, free)
  local cond = self:expr("B", scope, 0)
  if not cond then return nil end
  return {k = "if", cond = cond, ty = ty, then_ = self:block(ty, scope, depth - 1, free),
          else_ = self:block(ty, scope, depth - 1, free)}
end

function G:make_match(scope, depth, _, ty, free) return self:match(ty, scope, depth, free) end

function G:expr_T(scope, depth, vars)
  local f = self.feat
  local w = {
    var = #vars > 0 and 40 or 0, unary = 30, binary = 50, const = 10, on_device = 4 * self.density,
    device_copy = 2 * self.density,
    call = #self:helpers("T") > 0 and 30 or 0, closure = #of_type(scope, "F") > 0 and 20 or 10, proj = 20,
    ["if"] = #of_type(scope, "B") > 0 and 20 or 0,
    match = f.adt and 12 or 0, ref_read = f.ref and 10 or 0, lowered = #self.primfns > 0 and 12 or 0,
    alloc_tensor = f.memory and 6 or 0, reshape_tensor = f.memory and 5 or 0,
  }
  return self:choose("T", w, scope, depth, vars, "unary")
end

function G:make_unary(scope, depth)
  return op(self.rng:pick{"negative", "nn.relu", "exp"}, {self:expr("T", scope, depth - 1)}, "T")
end

function G:make_binary(scope, depth)
  return op(self.rng:pick{"add", "subtract", "multiply"}, {self:expr("T", scope, depth - 1),
    self:expr("T", scope, depth - 1)}, "T")
end

function G:make_const(scope, depth)
  local c = {k = "const", text = self.rng:pick{"1f", "0.5f", "-2f"}, ty = "S"}
  return op("add", {self:expr("T", scope, depth - 1), c}, "T")
end

function G:make_closure(scope, depth)
  return {k = "call", callee = self:expr("F", scope, depth - 1), args = {self:expr("T", scope, depth - 1)}, ty = "T"}
end

function G:make_proj(scope, depth)
  return {k = "proj", tuple = self:expr("P", scope, depth - 1), index = self.rng:below(2), ty = "T"}
end

function G:make_ref_read(scope, depth) return op("ref_read", {self:expr("R", scope, depth - 1)}, "T") end

-- call_lowered(@p, (args)): the primfn's buffers give memory scopes.
function G:make_lowered(scope, depth)
  local pf = self.rng:pick(self.primfns)
  local fields = {}
  for i = 1, #pf.scopes do fields[i] = self:expr("T", scope, depth - 1) end
  return op("call_lowered", {{k = "global", name = "@" .. pf.name, ty = "Q"},
                             {k = "tuple", fields = fields, ty = text.tuple_type(#fields)}}, "T")
end

function G:make_alloc_tensor(scope, depth)
  local shape = self.rng:pick{"assert_shape=[5, 7]", "const_shape=meta[relay.Constant][1]",
                              "const_shape=meta[relay.Constant][1], assert_shape=[5, 7]"}
  return op("memory.alloc_tensor", {self:expr("M", scope, depth - 1), self:expr("I", scope, 0),
                                    self:expr("H", scope, depth - 1)}, "T", shape)
end

function G:make_reshape_tensor(scope, depth)
  return op("vm.reshape_tensor", {self:expr("T", scope, depth - 1), self:expr("H", scope, depth - 1)}, "T",
            "newshape=[5, 7]")
end

function G:expr_P(scope, depth, vars, free)
  local w = self:common_weights("P", vars, {tuple = 4, ["if"] = #of_type(scope, "B") > 0 and 1 or 0})
  return self:choose("P", w, scope, depth, vars, "tuple", free)
end

function G:make_tuple(scope, depth)
  return {k = "tuple", ty = "P", fields = {self:expr("T", scope, depth - 1), self:expr("T", scope, depth - 1)}}
end

function G:globals_of_f()
  local out = {}
  for _, d in ipairs(self.defs) do
    if #d.params == 1 and d.params[1].ty == "T" and d.ret == "T" then out[#out + 1] = d end
  end
  return out
end

function G:expr_F(scope, depth, vars, free)
  local w = self:common_weights("F", vars, {fn = 3, global = #self:globals_of_f() > 0 and 2 or 0, call = 0})
  if depth <= 1 then w.on_device, w.match = 0, 0 end
  return self:choose("F", w, scope, depth, vars, "fn", free)
end

function G:make_global()
  return {k = "global", name = "@" .. self.rng:pick(self:globals_of_f()).name, ty = "F"}
end

function G:make_fn(scope, depth)
  local p = {name = self:fresh("%p"), ty = "T"}
  if self.rng:chance(0.02 * self.density) then p.vd = self:device() end
  local body = self:block("T", with(scope, p.name, "T"), depth - 1)
  return {k = "fn", params = {p}, body = body, ty = "F"}
end

-- B: only parameters have it
function G:expr_B(_, _, vars)
  if #vars > 0 then return var(self.rng:pick(vars)) end
  return nil
end

function G:expr_L(scope, depth, vars, free)
  local w = self:common_weights("L", vars, {cons = 3, nil_ = free and 0 or 1, device_copy = 0.2 * self.density,
                                            ["if"] = #of_type(scope, "B") > 0 and 1 or 0})
  return self:choose("L", w, scope, depth, vars, "cons", free)
end

function G:make_cons(scope, depth)
  return {k = "ctor", name = "Cons", args = {self:expr("T", scope, depth - 1), self:expr("L", scope, depth - 1)},
          ty = "L"}
end

function G:make_nil_() return {k = "ctor", name = "Nil", args = {}, ty = "L"} end

function G:expr_O(scope, depth, vars, free)
  local w = self:common_weights("O", vars, {some = 3, nothing = free and 0 or 1, match = 0})
  return self:choose("O", w, scope, depth, vars, "some", free)
end

function G:make_some(scope, depth)
  return {k = "ctor", name = "Some", args = {self:expr("F", scope, depth - 1)}, ty = "O"}
end

function G:make_nothing() return {k = "ctor", name = "Nothing", args = {}, ty = "O"} end

function G:expr_R(scope, depth, vars)
  local w = self:common_weights("R", vars, {var = #vars > 0 and 5 or 0, ref = 3, match = 0,
                                            ["if"] = #of_type(scope, "B") > 0 and 1 or 0})
  return self:choose("R", w, scope, depth, vars, "ref")
end

function G:make_ref(scope, depth) return op("ref", {self:expr("T", scope, depth - 1)}, "R") end

-- Storage: memory.alloc_storage(size, alignment) or (size, shape, alignment).
function G:expr_M(scope, depth, vars)
  local w = {var = #vars > 0 and 2 or 0, alloc_storage = 3, on_device = 0.5}
  return self:choose("M", w, scope, depth, vars, "alloc_storage")
end

function G:make_alloc_storage(scope, depth)
  local args = {self:expr("I", scope, 0)}
  if self.rng:chance(0.5) then args[2] = self:expr("H", scope, depth - 1) end
  args[#args + 1] = self:expr("I", scope, 0)
  local attrs = "virtual_device=" .. self:device()
  if self.rng:chance(0.3) then attrs = attrs .. ', dtype_hint="float32"' end
  return op("memory.alloc_storage", args, "M", attrs)
end

-- Shapes: vm.shape_of(t) (on the host) or a constant.
function G:expr_H(scope, depth, vars)
  local w = {var = #vars > 0 and 2 or 0, shape_of = 3, shape_const = 2}
  return self:choose("H", w, scope, depth, vars, "shape_const")
end

function G:make_shape_of(scope, depth)
  return op("vm.shape_of", {self:expr("T", scope, depth - 1)}, "H", 'dtype="int64"')
end

function G:make_shape_const() return {k = "const", text = "meta[relay.Constant][1]", ty = "H"} end

function G:expr_I(_, _, vars)
  if #vars > 0 and self.rng:chance(0.3) then return var(self.rng:pick(vars)) end
  return {k = "const", text = self.rng:pick{"280i64", "64i64", "0i64"}, ty = "I"}
end

-- ------------------------------------------------------------ effects

-- ref_write(r, v) or vm.invoke_tvm_op(op, (inputs), (outputs)): a value of
-- type () that a block runs for its effect.
function G:effect(scope, depth)
  local r, f = self.rng, self.feat
  local w = {ref_write = f.ref and 2 or 0, invoke = (f.memory or #self.primfns > 0) and 2 or 0}
  local k = r:weighted(w)
  if k == "ref_write" then
    return op("ref_write", {self:expr("R", scope, depth - 1), self:expr("T", scope, depth - 1)}, "U")
  end
  local nin = 1 + r:below(2)
  local callee
  if #self.primfns > 0 and r:chance(0.4) then
    callee = {k = "global", name = "@" .. r:pick(self.primfns).name, ty = "Q"}
  else
    callee = self:primitive_fn(nin)
  end
  local ins = {}
  for i = 1, nin do ins[i] = self:expr("T", scope, depth - 1) end
  local out = f.memory and r:chance(0.7) and self:make_alloc_tensor(scope, depth) or self:expr("T", scope, depth - 1)
  return op("vm.invoke_tvm_op", {callee, {k = "tuple", fields = ins, ty = text.tuple_type(nin)},
                                 {k = "tuple", fields = {out}, ty = text.tuple_type(1)}}, "U")
end

-- fn (%q1: T, ..., Primitive=1) -> T { ops of the parameters }: lowered
-- code, closed (planning does not look inside).
function G:primitive_fn(n)
  local params, scope = {}, {}
  for i = 1, n do
    params[i] = {name = self:fresh("%q"), ty = "T"}
    scope = with(scope, params[i].name, "T")
  end
  local function body(depth)
    if depth == 0 or self.rng:chance(0.3) then return var(self.rng:pick(scope)) end
    if self.rng:chance(0.5) then return op(self.rng:pick{"negative", "exp"}, {body(depth - 1)}, "T") end
    return op(self.rng:pick{"add", "multiply"}, {body(depth - 1), body(depth - 1)}, "T")
  end
  local attrs = "Primitive=1"
  if self.rng:chance(0.2 * self.density / 10) then attrs = "virtual_device=" .. self:device() .. ", " .. attrs end
  return {k = "fn", params = params, body = {stmts = {}, result = body(2)}, attrs = attrs, ty = "X"}
end

-- ------------------------------------------------------------ match

-- A pattern for a value of type ty (L, O, T, F); adds its variables to vars.
function G:pattern(ty, depth, vars)
  local r = self.rng
  local function bind()
    if r:chance(0.25) then return {p = "wild"} end
    local v = {p = "var", name = self:fresh("%m"), ty = ty}
    vars[#vars + 1] = v
    return v
  end
  if ty == "L" and r:chance(0.6) then
    if r:chance(0.3) then return {p = "ctor", name = "Nil", args = {}} end
    return {p = "ctor", name = "Cons", args = {self:pattern("T", depth - 1, vars),
                                               depth > 0 and self:pattern("L", depth - 1, vars) or bind()}}
  end
  if ty == "O" and r:chance(0.6) then
    if r:chance(0.3) then return {p = "ctor", name = "Nothing", args = {}} end
    return {p = "ctor", name = "Some", args = {self:pattern("F", depth - 1, vars)}}
  end
  return bind()
end

-- match (data) { clauses } of result type ty, on a list or an option.
-- `match` is complete: its clauses end with a variable or `_`, or are the
-- constructors with irrefutable fields; `match?` may leave cases out.
function G:match(ty, scope, depth, free)
  local r = self.rng
  local dty = r:chance(0.7) and "L" or "O"
  local data = self:expr(dty, scope, depth - 1, true)
  local partial = r:chance(0.3)
  local pats = {}
  if not partial and r:chance(0.3) then
    local vars = {}
    if dty == "L" then
      pats[1] = {{p = "ctor", name = "Cons", args = {self:pattern("T", 0, vars), self:pattern("L", 0, vars)}}, vars}
      pats[2] = {{p = "ctor", name = "Nil", args = {}}, {}}
    else
      pats[1] = {{p = "ctor", name = "Some", args = {self:pattern("F", 0, vars)}}, vars}
      pats[2] = {{p = "ctor", name = "Nothing", args = {}}, {}}
    end
    if r:chance(0.5) then pats[1], pats[2] = pats[2], pats[1] end
  else
    for i = 1, 1 + r:below(3) do
      local vars = {}
      pats[i] = {self:pattern(dty, 2, vars), vars}
    end
    if not partial then
      local vars = {}
      local last = r:chance(0.5) and {p = "wild"} or {p = "var", name = self:fresh("%m"), ty = dty}
      if last.p == "var" then vars[1] = last end
      pats[#pats + 1] = {last, vars}
    end
  end
  local clauses = {}
  for i, pv in ipairs(pats) do
    local s = scope
    for _, v in ipairs(pv[2]) do s = with(s, v.name, v.ty) end
    clauses[i] = {pat = pv[1], body = self:block(ty, s, depth - 1, free)}
  end
  return {k = "match", partial = partial, data = data, clauses = clauses, ty = ty}
end

-- ------------------------------------------------------------ blocks and definitions

function G:call_global(d, scope, depth)
  local args = {}
  for i, p in ipairs(d.params) do
    args[i] = self:expr(p.ty, scope, depth - 1)
    if not args[i] then return nil end
  end
  return {k = "call", callee = {k = "global", name = "@" .. d.name, ty = "F"}, args = args, ty = d.ret}
end

-- The types a block's statements bind, by weight.
function G:statement_types()
  local f = self.feat
  return {T = 6, P = 1, F = 1, L = f.adt and 1 or 0, O = f.adt and 0.5 or 0, R = f.ref and 1 or 0,
          M = f.memory and 0.5 or 0, H = f.memory and 0.5 or 0,
          U = (f.ref or f.memory or #self.primfns > 0) and 1 or 0}
end

-- A block: a few graph bindings, lets and effects, then a result of type ty.
function G:block(ty, scope, depth, free)
  local r = self.rng
  local stmts = {}
  local weights = self:statement_types()
  for _ = 1, r:below(depth > 0 and 4 or 1) do
    local sty = r:weighted(weights)
    if sty == "U" then
      local e = self:effect(scope, depth)
      if r:chance(0.5) then
        stmts[#stmts + 1] = {kind = "seq", expr = e}
      else
        stmts[#stmts + 1] = {kind = "let", name = self:fresh("%u"), expr = e}
      end
    else
      local annotated = r:chance(0.06)
      local e = self:expr(sty, scope, depth, not annotated)
      local st = {expr = e}
      if annotated or r:chance(0.4) then
        st.kind, st.name = "let", self:fresh("%v")
        -- an on_device as a let value is one of the forms phase 0 rewrites
        if r:chance(0.03 * self.density) then st.expr = self:on_device(e) end
        st.annotated = annotated
      else
        st.kind, st.name = "bind", self:fresh("%")
        -- a plain on_device its readers share, which they may read on other
        -- devices (computed there, read anywhere)
        if sty == "T" and self.rng2:chance(0.12) then
          st.expr = op("on_device", {e}, e.ty, ("virtual_device=meta[VirtualDevice][%d]")
            :format(self.rng2:pick(self.devices)))
        end
      end
      stmts[#stmts + 1] = st
      scope = with(scope, st.name, sty)
    end
  end
  local result = self:expr(ty, scope, depth, free)
  -- an on_device at a function body's top is the other form phase 0 rewrites
  if r:chance(0.015 * self.density) then result = self:on_device(result) end
  return {stmts = stmts, result = result}
end

local SIGNATURES = {
  {{"T"}, "T"}, {{"T", "T"}, "T"}, {{"F", "T"}, "T"}, {{"B", "T", "T"}, "T"}, {{"T"}, "P"}, {{"T", "T"}, "P"},
}
local FEATURE_SIGNATURES = {
  adt = {{{"L"}, "T"}, {{"T", "L"}, "L"}, {{"O", "T"}, "T"}, {{"F"}, "O"}},
  ref = {{{"R", "T"}, "T"}, {{"T"}, "R"}},
  memory = {{{"H", "T"}, "T"}, {{"M"}, "T"}},
}

function G:signatures()
  local out = {}
  for i, s in ipairs(SIGNATURES) do out[i] = s end
  for _, k in ipairs{"adt", "ref", "memory"} do
    if self.feat[k] then
      for _, s in ipairs(FEATURE_SIGNATURES[k]) do out[#out + 1] = s end
    end
  end
  return out
end

function G:def(name, sig, depth)
  local r = self.rng
  self.counter = 0
  local params, scope = {}, {}
  for i, ty in ipairs(sig[1]) do
    local p = {name = self:fresh("%a"), ty = ty}
    if r:chance(0.025 * self.density) then p.vd = self:device() end
    params[i] = p
    scope = with(scope, p.name, ty)
  end
  local d = {name = name, params = params, ret = sig[2], body = self:block(sig[2], scope, depth)}
  if r:chance(0.025 * self.density) then d.vd = self:device() end
  return d
end

function G:primfn(i)
  local r = self.rng
  local scopes = {}
  for k = 1, 1 + r:below(3) do scopes[k] = r:pick(SCOPES) end
  return {name = "p" .. i, scopes = scopes, ret = r:pick(SCOPES)}
end

-- The program of a seed. opts.depth (default 3), opts.helpers (max
-- number of global functions besides @main, default 3), opts.features
-- (false: only the first-order core, tuples, if and closures).
function M.program(seed, opts)
  opts = opts or {}
  local self = new_state(seed, opts)
  local r = self.rng
  local depth = opts.depth or 3
  if self.feat.lowered then
    for i = 1, 1 + r:below(2) do self.primfns[i] = self:primfn(i) end
  end
  local sigs = self:signatures()
  for i = 1, r:below((opts.helpers or 3) + 1) do
    self.defs[#self.defs + 1] = self:def("h" .. i, r:pick(sigs), depth - 1)
  end
  local main_sig = {{"T"}, r:chance(0.8) and "T" or "P"}
  local extra = {T = 7, B = 3, L = self.feat.adt and 1 or 0, R = self.feat.ref and 1 or 0,
                 I = self.feat.memory and 1 or 0}
  for _ = 1, r:below(3) do main_sig[1][#main_sig[1] + 1] = r:weighted(extra) end
  self.defs[#self.defs + 1] = self:def("main", main_sig, depth)
  return {defs = self.defs, devices = self.devices, adts = self.feat.adt or false, primfns = self.primfns}
end

-- ------------------------------------------------------------ printing and shrinking

M.text = text.text
-- (scopes, for the generators built on this one: relaygen_fn.lua)
M.with, M.of_type = with, of_type

-- Item orders (primfns and definitions) to compare: reversed, and a seeded shuffle.
function M.orders(prog, seed)
  local n, rev, shuf = text.nitems(prog), {}, {}
  for i = 1, n do rev[i], shuf[i] = n + 1 - i, i end
  local r = M.rng(seed or 1)
  for i = n, 2, -1 do
    local j = r:below(i) + 1
    shuf[i], shuf[j] = shuf[j], shuf[i]
  end
  return {rev, shuf}
end

M.smaller = shrink.smaller
M.size = shrink.size
M.shrink = shrink.shrink

return M
