-- A seeded generator of Relay programs full of function literals, for the
-- properties that need to run a program (fuzz/eval_run.lua: the passes that
-- must keep what a program computes). Its trees are fuzz/relaygen.lua's
-- (printed by relaygen_text.lua, shrunk by relaygen_shrink.lua), over the
-- part of Relay devplan.evaluate runs.
--
--   local gen = require "relaygen_fn"           -- fuzz/ on package.path
--   local prog = gen.program(seed, opts?)       -- opts.depth (default 4), opts.helpers (default 3)
--   local text = gen.text(prog)
--   local args = gen.args(prog, k)              -- the k-th set of @main's arguments
--
-- Types (relaygen_text's keys): tensors T, bool B, pairs P, and functions:
-- F = fn (T) -> T, F2 = fn (T, T) -> T, FF = fn (T) -> fn (T) -> T (a
-- function returning a function). Function literals stand wherever a
-- function may: called on the spot, bound by lets and graph bindings,
-- passed to global functions and to other literals, returned by global
-- functions and by literals (curried), chosen by an if, put in tuples,
-- under on_device; their bodies capture outer parameters, lets and other
-- literals, and nest. Around them: operator calls, constants, lets, graph
-- bindings (sharing), ifs, tuples and projections, global functions
-- calling each other, on_device and device_copy between two devices
-- (meta[VirtualDevice][0] cpu, [1] cuda).
local relaygen = require "relaygen"
local text = require "relaygen_text"
local shrink = require "relaygen_shrink"

local M = {}

local G = {}
G.__index = G

local function var(v) return {k = "var", name = v.name, ty = v.ty} end
local function op(name, args, ty, attrs) return {k = "op", op = name, args = args, ty = ty, attrs = attrs} end

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

function G:fresh(prefix)
  self.counter = self.counter + 1
  return prefix .. self.counter
end

function G:device()
  return ("meta[VirtualDevice][%d]"):format(self.rng:below(2))
end

local FLAVOURS = {"", ", constrain_result=True", ", constrain_body=False",
                  ", constrain_body=False, constrain_result=True"}

function G:on_device(e)
  return op("on_device", {e}, e.ty, "virtual_device=" .. self:device() .. self.rng:pick(FLAVOURS))
end

function G:device_copy(e)
  local src = self.rng:below(2)
  return op("device_copy", {e}, e.ty, ("src_virtual_device=meta[VirtualDevice][%d], dst_virtual_device="
    .. "meta[VirtualDevice][%d]"):format(src, 1 - src))
end

-- Global functions defined so far whose result is ty (and with these params, when given).
function G:helpers(ty)
  local out = {}
  for _, d in ipairs(self.defs) do
    if d.ret == ty then out[#out + 1] = d end
  end
  return out
end

-- Global functions usable as a value of function type ty.
function G:globals_of(ty)
  local want = ({F = {"T"}, F2 = {"T", "T"}, FF = {"T"}})[ty]
  local ret = ({F = "T", F2 = "T", FF = "F"})[ty]
  local out = {}
  for _, d in ipairs(self.defs) do
    local fits = d.ret == ret and #d.params == #want
    for i, p in ipairs(d.params) do fits = fits and p.ty == want[i] end
    if fits then out[#out + 1] = d end
  end
  return out
end

-- An expression of type ty in scope, at most depth deep.
function G:expr(ty, scope, depth)
  local vars = of_type(scope, ty)
  if depth <= 0 then
    if #vars > 0 then return var(self.rng:pick(vars)) end
    return self:leaf(ty, scope)
  end
  local w = self["weights_" .. ty](self, scope, vars)
  local way = self.rng:weighted(w)
  if not way then return self:leaf(ty, scope) end -- (a bool with none in scope: nil)
  return self["make_" .. way](self, scope, depth, vars, ty) or self:leaf(ty, scope)
end

-- A value of ty that needs no variable of its type.
function G:leaf(ty, scope)
  if ty == "T" then
    local ts = of_type(scope, "T")
    if #ts > 0 then return op("negative", {var(self.rng:pick(ts))}, "T") end
    return op("zeros", {}, "T", 'shape=[5, 7], dtype="float32"')
  end
  if ty == "P" then return {k = "tuple", ty = "P", fields = {self:leaf("T", scope), self:leaf("T", scope)}} end
  if ty == "B" then return nil end
  return self["make_fn_" .. ty](self, scope, 1)
end

function G:weights_T(scope, vars)
  return {var = #vars > 0 and 30 or 0, unary = 20, binary = 30, const = 8,
          apply = 25, apply2 = 12, apply_curried = 10, literal_now = 12,
          global_call = #self:helpers("T") > 0 and 15 or 0, proj = 10,
          ["if"] = #of_type(scope, "B") > 0 and 12 or 0, on_device = 3, device_copy = 1}
end

function G:weights_P(scope, vars)
  return {var = #vars > 0 and 3 or 0, tuple = 6, global_call = #self:helpers("P") > 0 and 2 or 0,
          ["if"] = #of_type(scope, "B") > 0 and 1 or 0, on_device = 0.3}
end

function G:weights_B(_, vars)
  return {var = #vars > 0 and 1 or 0}
end

local function fn_weights(self, ty, scope, vars)
  return {var = #vars > 0 and 6 or 0, ["fn_" .. ty] = 8, global_fn = #self:globals_of(ty) > 0 and 3 or 0,
          ["if"] = #of_type(scope, "B") > 0 and 2 or 0, on_device = 0.3,
          curried = ty == "F" and 3 or 0, global_call = #self:helpers(ty) > 0 and 2 or 0}
end
function G:weights_F(scope, vars) return fn_weights(self, "F", scope, vars) end
function G:weights_F2(scope, vars) return fn_weights(self, "F2", scope, vars) end
function G:weights_FF(scope, vars) return fn_weights(self, "FF", scope, vars) end

function G:make_var(_, _, vars) return var(self.rng:pick(vars)) end

function G:make_unary(scope, depth)
  return op(self.rng:pick{"negative", "nn.relu", "exp"}, {self:expr("T", scope, depth - 1)}, "T")
end

function G:make_binary(scope, depth)
  return op(self.rng:pick{"add", "subtract", "multiply"},
    {self:expr("T", scope, depth - 1), self:expr("T", scope, depth - 1)}, "T")
end

function G:make_const(scope, depth)
  return op("add", {self:expr("T", scope, depth - 1),
                    {k = "const", text = self.rng:pick{"1f", "0.5f", "-2f"}, ty = "S"}}, "T")
end

-- %f(x): a call of a function value (a variable, a literal, a global, ...).
function G:make_apply(scope, depth)
  return {k = "call", callee = self:expr("F", scope, depth - 1), args = {self:expr("T", scope, depth - 1)}, ty = "T"}
end

function G:make_apply2(scope, depth)
  return {k = "call", callee = self:expr("F2", scope, depth - 1),
          args = {self:expr("T", scope, depth - 1), self:expr("T", scope, depth - 1)}, ty = "T"}
end

-- %ff(x)(y)
function G:make_apply_curried(scope, depth)
  local inner = {k = "call", callee = self:expr("FF", scope, depth - 1), args = {self:expr("T", scope, depth - 1)},
                 ty = "F"}
  return {k = "call", callee = inner, args = {self:expr("T", scope, depth - 1)}, ty = "T"}
end

-- (fn (%p: T) { ... })(x): a literal called where it stands
function G:make_literal_now(scope, depth)
  return {k = "call", callee = self:make_fn_F(scope, depth - 1), args = {self:expr("T", scope, depth - 1)}, ty = "T"}
end

function G:make_global_call(scope, depth, _, ty)
  local d = self.rng:pick(self:helpers(ty))
  local args = {}
  for i, p in ipairs(d.params) do
    args[i] = self:expr(p.ty, scope, depth - 1)
    if not args[i] then return nil end
  end
  return {k = "call", callee = {k = "global", name = "@" .. d.name, ty = "G"}, args = args, ty = ty}
end

function G:make_proj(scope, depth)
  return {k = "proj", tuple = self:expr("P", scope, depth - 1), index = self.rng:below(2), ty = "T"}
end

function G:make_tuple(scope, depth)
  return {k = "tuple", ty = "P", fields = {self:expr("T", scope, depth - 1), self:expr("T", scope, depth - 1)}}
end

function G:make_if(scope, depth, _, ty)
  local bs = of_type(scope, "B")
  if #bs == 0 then return nil end
  return {k = "if", cond = var(self.rng:pick(bs)), ty = ty,
          then_ = self:block(ty, scope, depth - 1), else_ = self:block(ty, scope, depth - 1)}
end

function G:make_on_device(scope, depth, _, ty)
  return self:on_device(self:expr(ty, scope, depth - 1))
end

function G:make_device_copy(scope, depth, _, ty)
  return self:device_copy(self:expr(ty, scope, depth - 1))
end

function G:make_global_fn(_, _, _, ty)
  return {k = "global", name = "@" .. self.rng:pick(self:globals_of(ty)).name, ty = ty}
end

-- fn (%p: T) -> T { body }: the body sees the enclosing scope (a closure)
function G:make_fn_F(scope, depth)
  local p = {name = self:fresh("%p"), ty = "T"}
  return {k = "fn", params = {p}, ret = "T", ty = "F", body = self:block("T", with(scope, p.name, "T"), depth - 1)}
end

function G:make_fn_F2(scope, depth)
  local p, q = {name = self:fresh("%p"), ty = "T"}, {name = self:fresh("%p"), ty = "T"}
  return {k = "fn", params = {p, q}, ret = "T", ty = "F2",
          body = self:block("T", with(with(scope, p.name, "T"), q.name, "T"), depth - 1)}
end

-- fn (%p: T) -> fn (T) -> T { ... a function of %p ... }
function G:make_fn_FF(scope, depth)
  local p = {name = self:fresh("%p"), ty = "T"}
  return {k = "fn", params = {p}, ret = "F", ty = "FF", body = self:block("F", with(scope, p.name, "T"), depth - 1)}
end

-- %ff(x): a function made by a function
function G:make_curried(scope, depth)
  return {k = "call", callee = self:expr("FF", scope, depth - 1), args = {self:expr("T", scope, depth - 1)}, ty = "F"}
end

-- A block: graph bindings and lets (of any type, function literals
-- included), then its result.
function G:block(ty, scope, depth)
  local r = self.rng
  local stmts = {}
  for _ = 1, r:below(depth > 0 and 4 or 1) do
    local sty = r:weighted{T = 5, P = 1, F = 3, F2 = 1, FF = 1}
    local e = self:expr(sty, scope, depth)
    local st = {expr = e}
    if r:chance(0.5) then
      st.kind, st.name = "let", self:fresh("%v")
      st.annotated = r:chance(0.2)
    else
      st.kind, st.name = "bind", self:fresh("%")
    end
    stmts[#stmts + 1] = st
    scope = with(scope, st.name, sty)
  end
  return {stmts = stmts, result = self:expr(ty, scope, depth)}
end

local SIGNATURES = {
  {{"T"}, "T"}, {{"T", "T"}, "T"}, {{"F", "T"}, "T"}, {{"F2", "T"}, "T"}, {{"FF", "T"}, "T"},
  {{"T"}, "F"}, {{"T"}, "P"}, {{"B", "T"}, "T"}, {{"T", "F"}, "F"},
}

function G:def(name, sig, depth)
  self.counter = 0
  local params, scope = {}, {}
  for i, ty in ipairs(sig[1]) do
    params[i] = {name = self:fresh("%a"), ty = ty}
    scope = with(scope, params[i].name, ty)
  end
  return {name = name, params = params, ret = sig[2], body = self:block(sig[2], scope, depth)}
end

-- The program of a seed.
function M.program(seed, opts)
  opts = opts or {}
  local self = setmetatable({rng = relaygen.rng(seed), defs = {}, counter = 0}, G)
  local r = self.rng
  local depth = opts.depth or 4
  for i = 1, r:below((opts.helpers or 3) + 1) do
    self.defs[#self.defs + 1] = self:def("h" .. i, r:pick(SIGNATURES), depth - 1)
  end
  local main_sig = {{"T"}, r:chance(0.8) and "T" or "P"}
  for _ = 1, r:below(3) do main_sig[1][#main_sig[1] + 1] = r:pick{"T", "B", "B"} end
  self.defs[#self.defs + 1] = self:def("main", main_sig, depth)
  return {defs = self.defs, devices = {0, 1}, adts = false, primfns = {}}
end

M.text = text.text
M.shrink = shrink.shrink
M.size = shrink.size

-- The k-th set of @main's arguments, by parameter name (without %):
-- tensors as integers, bools as booleans, different for each k.
function M.args(prog, k)
  local main = prog.defs[#prog.defs]
  local r = relaygen.rng(1000003 * k + #main.params)
  local out = {}
  for _, p in ipairs(main.params) do
    local name = p.name:sub(2)
    if p.ty == "B" then out[name] = r:chance(0.5) else out[name] = r:below(1000) + 1 end
  end
  return out
end

return M
