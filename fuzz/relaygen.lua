-- A seeded generator of well-typed Relay programs for device planning, and
-- the shrinker that makes a failing one small.
--
--   local gen = require "relaygen"              -- fuzz/ on package.path
--   local prog = gen.program(seed, opts?)       -- the program as a tree
--   local text = gen.text(prog, order?)         -- Relay text; order permutes the definitions
--   local small = gen.shrink(prog, fails)       -- smallest found for which fails(p) stays true
--
-- Programs use four types: T (Tensor[(5, 7), float32]), B (bool), P (a
-- pair of T) and F (fn (T) -> T). They have global functions calling each
-- other (and passed as values), graph bindings (sharing) and lets,
-- tuples and projections, if, closures capturing outer values,
-- higher-order calls, on_device in its four flavours (as let values,
-- function bodies, nested, around tuples and functions), device_copy,
-- parameter and result virtual_device annotations, scalar constants, and
-- two or three devices among cpu, cuda, opencl and memory-scoped ones.
-- Every expression of the tree carries its type, so the shrinker only
-- ever replaces an expression by another of the same type.
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

-- A key of weights ({key = weight}) chosen in proportion; keys sorted so
-- the choice does not depend on table order.
function Rng:weighted(weights)
  local keys, total = {}, 0
  for k, w in pairs(weights) do
    if w > 0 then keys[#keys + 1] = k; total = total + w end
  end
  table.sort(keys)
  local r = self:below(total)
  for _, k in ipairs(keys) do
    r = r - weights[k]
    if r < 0 then return k end
  end
end

-- ------------------------------------------------------------ devices and types

-- Devices are meta[VirtualDevice][i] of fuzz/props.lua's M.META: 0 cpu,
-- 1 cuda, 2 (cpu, "scopeA"), 3 (cuda, "global"), 4 opencl.

-- Inline forms that leave fields unconstrained (canonicalised by planning).
local INLINE = {
  "VirtualDevice(device_type=cpu)",
  "VirtualDevice(device_type=cuda, virtual_device_id=0)",
  'VirtualDevice(device_type=cpu, memory_scope="scopeA")',
  'VirtualDevice(memory_scope="global")',
}

local TYPE_TEXT = {
  T = "Tensor[(5, 7), float32]",
  B = "bool",
  P = "(Tensor[(5, 7), float32], Tensor[(5, 7), float32])",
  F = "fn (Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32]",
}
M.TYPE_TEXT = TYPE_TEXT

-- ------------------------------------------------------------ the tree
--
-- program = {defs = {def...}, devices = {meta indices (0-based)}}
-- def     = {name, params = {param...}, ret = ty, vd = device text?, body = block}
-- param   = {name, ty, vd = device text?}
-- block   = {stmts = {{kind = "bind"|"let", name, expr}...}, result = expr}
-- expr    = {k = "var", name, ty} | {k = "global", name, ty = "F"}
--         | {k = "const", text, ty = "S"}          (a scalar, only as add's 2nd argument)
--         | {k = "op", op, args = {expr...}, attrs = "text"?, ty}
--         | {k = "call", callee = expr, args = {expr...}, ty}
--         | {k = "tuple", fields = {expr, expr}, ty = "P"} | {k = "proj", tuple = expr, index, ty = "T"}
--         | {k = "if", cond = expr, then_ = block, else_ = block, ty}
--         | {k = "fn", params = {param...}, body = block, ty = "F"}

local G = {} -- the generator's state for one program
G.__index = G

local function new_state(seed, opts)
  local self = setmetatable({rng = M.rng(seed), opts = opts or {}, defs = {}}, G)
  local r = self.rng
  -- two or three devices: cpu and cuda, sometimes a memory-scoped one or opencl
  self.devices = {0, 1}
  if r:chance(0.5) then self.devices[3] = r:pick{2, 3, 4} end
  -- how many annotations (in tenths of the base weight): few annotations
  -- plan more often, many find more conflicts
  self.density = r:pick{1, 3, 10, 20}
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

local ON_DEVICE_FLAVOURS = {
  "",                                            -- normal: constrain_body=True
  ", constrain_result=True",                     -- fixed
  ", constrain_body=False",                      -- free
  ", constrain_body=False, constrain_result=True",
}

function G:on_device(e)
  local flavour = self.rng:pick(ON_DEVICE_FLAVOURS)
  return {k = "op", op = "on_device", args = {e}, ty = e.ty,
          attrs = "virtual_device=" .. self:device() .. flavour}
end

function G:device_copy(e)
  return {k = "op", op = "device_copy", args = {e}, ty = e.ty,
          attrs = "src_virtual_device=" .. self:device() .. ", dst_virtual_device=" .. self:device()}
end

-- An expression of type ty in scope, at most depth deep.
function G:expr(ty, scope, depth)
  local r = self.rng
  local vars = of_type(scope, ty)
  if depth <= 0 then
    if #vars > 0 then return var(r:pick(vars)) end
    depth = 1 -- no variable of this type: build one level
  end
  if ty == "T" then return self:tensor_expr(scope, depth, vars) end
  if ty == "P" then
    local w = {var = #vars > 0 and 3 or 0, tuple = 4, call = #self:helpers("P") > 0 and 2 or 0,
               on_device = 1}
    local k = r:weighted(w)
    if k == "var" then return var(r:pick(vars)) end
    if k == "call" then
      local c = self:call_global(r:pick(self:helpers("P")), scope, depth)
      if c then return c end
    end
    if k == "on_device" then return self:on_device(self:expr("P", scope, depth - 1)) end
    return {k = "tuple", ty = "P", fields = {self:expr("T", scope, depth - 1), self:expr("T", scope, depth - 1)}}
  end
  if ty == "F" then
    local globals = self:globals_of_f()
    local w = {var = #vars > 0 and 3 or 0, fn = 3, global = #globals > 0 and 2 or 0, on_device = 1}
    local k = r:weighted(w)
    if k == "var" then return var(r:pick(vars)) end
    if k == "global" then return {k = "global", name = "@" .. r:pick(globals).name, ty = "F"} end
    if k == "on_device" and depth > 1 then return self:on_device(self:expr("F", scope, depth - 1)) end
    return self:fn_literal(scope, depth)
  end
  -- B: only parameters have it
  if #vars > 0 then return var(r:pick(vars)) end
  return nil
end

function G:globals_of_f()
  local out = {}
  for _, d in ipairs(self.defs) do
    if #d.params == 1 and d.params[1].ty == "T" and d.ret == "T" then out[#out + 1] = d end
  end
  return out
end

function G:call_global(d, scope, depth)
  local args = {}
  for i, p in ipairs(d.params) do
    args[i] = self:expr(p.ty, scope, depth - 1)
    if not args[i] then return nil end
  end
  return {k = "call", callee = {k = "global", name = "@" .. d.name, ty = "F"}, args = args, ty = d.ret}
end

function G:fn_literal(scope, depth)
  local p = {name = self:fresh("%p"), ty = "T"}
  if self.rng:chance(0.02 * self.density) then p.vd = self:device() end
  local body = self:block("T", with(scope, p.name, "T"), depth - 1)
  return {k = "fn", params = {p}, body = body, ty = "F"}
end

function G:tensor_expr(scope, depth, vars)
  local r = self.rng
  local calls = self:helpers("T")
  local w = {
    var = #vars > 0 and 40 or 0, unary = 30, binary = 50, const = 10, on_device = 4 * self.density,
    device_copy = 2 * self.density,
    call = #calls > 0 and 30 or 0, closure = #of_type(scope, "F") > 0 and 20 or 10, proj = 20,
    ["if"] = #of_type(scope, "B") > 0 and 20 or 0,
  }
  local k = r:weighted(w)
  local d1 = depth - 1
  if k == "var" then return var(r:pick(vars)) end
  if k == "unary" then
    return {k = "op", op = r:pick{"negative", "nn.relu", "exp"}, args = {self:expr("T", scope, d1)}, ty = "T"}
  end
  if k == "binary" then
    return {k = "op", op = r:pick{"add", "subtract", "multiply"}, ty = "T",
            args = {self:expr("T", scope, d1), self:expr("T", scope, d1)}}
  end
  if k == "const" then
    return {k = "op", op = "add", ty = "T",
            args = {self:expr("T", scope, d1), {k = "const", text = r:pick{"1f", "0.5f", "-2f"}, ty = "S"}}}
  end
  if k == "on_device" then return self:on_device(self:expr("T", scope, d1)) end
  if k == "device_copy" then return self:device_copy(self:expr("T", scope, d1)) end
  if k == "call" then return self:call_global(r:pick(calls), scope, depth) or var(r:pick(of_type(scope, "T"))) end
  if k == "closure" then
    return {k = "call", callee = self:expr("F", scope, d1), args = {self:expr("T", scope, d1)}, ty = "T"}
  end
  if k == "proj" then
    return {k = "proj", tuple = self:expr("P", scope, d1), index = r:below(2), ty = "T"}
  end
  return {k = "if", cond = self:expr("B", scope, 0), ty = "T",
          then_ = self:block("T", scope, d1), else_ = self:block("T", scope, d1)}
end

-- A block: a few graph bindings and lets, then a result of type ty.
function G:block(ty, scope, depth)
  local r = self.rng
  local stmts = {}
  for _ = 1, r:below(depth > 0 and 4 or 1) do
    local sty = r:weighted{T = 6, P = 1, F = 1}
    local e = self:expr(sty, scope, depth)
    local st = {expr = e}
    if r:chance(0.4) then
      st.kind, st.name = "let", self:fresh("%v")
      -- an on_device as a let value is one of the forms phase 0 rewrites
      if r:chance(0.03 * self.density) then st.expr = self:on_device(e) end
    else
      st.kind, st.name = "bind", self:fresh("%")
    end
    stmts[#stmts + 1] = st
    scope = with(scope, st.name, sty)
  end
  local result = self:expr(ty, scope, depth)
  -- an on_device at a function body's top is the other form phase 0 rewrites
  if r:chance(0.015 * self.density) then result = self:on_device(result) end
  return {stmts = stmts, result = result}
end

local SIGNATURES = {
  {{"T"}, "T"}, {{"T", "T"}, "T"}, {{"F", "T"}, "T"}, {{"B", "T", "T"}, "T"}, {{"T"}, "P"}, {{"T", "T"}, "P"},
}

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

-- The program of a seed. opts.depth (default 3), opts.helpers (max
-- number of global functions besides @main, default 3).
function M.program(seed, opts)
  opts = opts or {}
  local self = new_state(seed, opts)
  local r = self.rng
  local depth = opts.depth or 3
  for i = 1, r:below((opts.helpers or 3) + 1) do
    self.defs[#self.defs + 1] = self:def("h" .. i, r:pick(SIGNATURES), depth - 1)
  end
  local main_sig = {{"T"}, r:chance(0.8) and "T" or "P"}
  for _ = 1, r:below(3) do main_sig[1][#main_sig[1] + 1] = r:chance(0.7) and "T" or "B" end
  self.defs[#self.defs + 1] = self:def("main", main_sig, depth)
  return {defs = self.defs, devices = self.devices}
end

-- ------------------------------------------------------------ printing

local Printer = {}
Printer.__index = Printer

function Printer:expr(e)
  local k = e.k
  if k == "var" or k == "global" then return e.name end
  if k == "const" then return e.text end
  if k == "op" or k == "call" then
    local parts = {}
    for i, a in ipairs(e.args) do parts[i] = self:expr(a) end
    if e.attrs then parts[#parts + 1] = e.attrs end
    local callee = k == "op" and e.op or self:expr(e.callee)
    if k == "call" and e.callee.k ~= "var" and e.callee.k ~= "global" then callee = "(" .. callee .. ")" end
    return callee .. "(" .. table.concat(parts, ", ") .. ")"
  end
  if k == "tuple" then return "(" .. self:expr(e.fields[1]) .. ", " .. self:expr(e.fields[2]) .. ")" end
  if k == "proj" then
    local t = self:expr(e.tuple)
    if e.tuple.k ~= "var" then t = "(" .. t .. ")" end
    return t .. "." .. e.index
  end
  if k == "if" then
    return "if (" .. self:expr(e.cond) .. ") " .. self:block(e.then_) .. " else " .. self:block(e.else_)
  end
  if k == "fn" then
    return "fn (" .. self:params(e.params) .. ") -> " .. TYPE_TEXT.T .. " " .. self:block(e.body)
  end
  error("relaygen: unknown expression kind " .. tostring(k))
end

function Printer:params(params, vd)
  local parts = {}
  for i, p in ipairs(params) do
    parts[i] = p.name .. (p.vd and (" {virtual_device=" .. p.vd .. "}") or "") .. ": " .. TYPE_TEXT[p.ty]
  end
  if vd then parts[#parts + 1] = "virtual_device=" .. vd end
  return table.concat(parts, ", ")
end

function Printer:block(b)
  self.indent = self.indent + 1
  local pad = ("  "):rep(self.indent)
  local lines = {"{"}
  for _, st in ipairs(b.stmts) do
    local lhs = st.kind == "let" and ("let " .. st.name) or st.name
    lines[#lines + 1] = pad .. lhs .. " = " .. self:expr(st.expr) .. ";"
  end
  lines[#lines + 1] = pad .. self:expr(b.result)
  self.indent = self.indent - 1
  lines[#lines + 1] = ("  "):rep(self.indent) .. "}"
  return table.concat(lines, "\n")
end

function Printer:def(d)
  return "def @" .. d.name .. "(" .. self:params(d.params, d.vd) .. ") -> " .. TYPE_TEXT[d.ret] .. " "
    .. self:block(d.body)
end

-- The program as Relay text; order (a list of definition indices) prints
-- the definitions in another order (the program is the same).
function M.text(prog, order)
  local p = setmetatable({indent = 0}, Printer)
  local out = {}
  for i = 1, #prog.defs do
    out[i] = p:def(prog.defs[order and order[i] or i])
  end
  return table.concat(out, "\n") .. "\n"
end

-- Definition orders to compare: reversed, and a seeded shuffle.
function M.orders(prog, seed)
  local n, rev, shuf = #prog.defs, {}, {}
  for i = 1, n do rev[i], shuf[i] = n + 1 - i, i end
  local r = M.rng(seed or 1)
  for i = n, 2, -1 do
    local j = r:below(i) + 1
    shuf[i], shuf[j] = shuf[j], shuf[i]
  end
  return {rev, shuf}
end

-- ------------------------------------------------------------ shrinking

local function deep_copy(t, seen)
  if type(t) ~= "table" then return t end
  seen = seen or {}
  if seen[t] then return seen[t] end
  local c = {}
  seen[t] = c
  for k, v in pairs(t) do c[k] = deep_copy(v, seen) end
  return c
end

-- Every slot holding an expression, in a fixed order: {parent, key, expr,
-- tvars, def, block, index}: parent[key] is expr; tvars are the T-typed
-- parameters visible there (replacements that stay in scope); def the
-- definition it is in; a statement's slot also has its block and index
-- (so it can be removed).
local function slots(prog)
  local out = {}
  local def
  local function visit_block(b, tvars)
    for j, st in ipairs(b.stmts) do
      out[#out + 1] = {parent = st, key = "expr", expr = st.expr, tvars = tvars, def = def, block = b, index = j}
    end
    out[#out + 1] = {parent = b, key = "result", expr = b.result, tvars = tvars, def = def}
  end
  local function params_t(params, tvars)
    local t = {}
    for i = 1, #tvars do t[i] = tvars[i] end
    for _, p in ipairs(params) do
      if p.ty == "T" then t[#t + 1] = p.name end
    end
    return t
  end
  for _, d in ipairs(prog.defs) do
    def = d
    visit_block(d.body, params_t(d.params, {}))
  end
  local i = 1
  while i <= #out do -- breadth first over what was collected, adding children
    local e, tvars = out[i].expr, out[i].tvars
    def = out[i].def
    local function child(parent, key)
      out[#out + 1] = {parent = parent, key = key, expr = parent[key], tvars = tvars, def = def}
    end
    if e.k == "op" or e.k == "call" then
      for j = 1, #e.args do child(e.args, j) end
      if e.k == "call" then child(e, "callee") end
    elseif e.k == "tuple" then
      for j = 1, #e.fields do child(e.fields, j) end
    elseif e.k == "proj" then
      child(e, "tuple")
    elseif e.k == "if" then
      visit_block(e.then_, tvars)
      visit_block(e.else_, tvars)
    elseif e.k == "fn" then
      visit_block(e.body, params_t(e.params, tvars))
    end
    i = i + 1
  end
  return out
end

-- Same-typed expressions that could stand for e (its children first).
local function replacements(e, tvars)
  local out = {}
  local function add(x)
    if x and x.ty == e.ty then out[#out + 1] = x end
  end
  if e.k == "op" or e.k == "call" then
    for _, a in ipairs(e.args) do add(a) end
  elseif e.k == "tuple" then
    for _, f in ipairs(e.fields) do add(f) end
  elseif e.k == "if" then
    add(e.then_.result)
    add(e.else_.result)
  elseif e.k == "proj" and e.tuple.k == "tuple" then
    add(e.tuple.fields[e.index + 1])
  end
  if e.ty == "T" and e.k ~= "var" then
    for _, name in ipairs(tvars) do add({k = "var", name = name, ty = "T"}) end
  end
  return out
end

-- Each candidate is a new program one step smaller: a definition removed,
-- an annotation removed, a statement removed, an expression replaced by
-- a same-typed child or a parameter. Candidates that no longer parse are
-- rejected by the caller (their failure differs).
function M.smaller(prog)
  local cands = {}
  local function push(f)
    local c = deep_copy(prog)
    f(c)
    cands[#cands + 1] = c
  end
  for i = 1, #prog.defs - 1 do
    push(function(c) table.remove(c.defs, i) end)
  end
  for di, d in ipairs(prog.defs) do
    if d.vd then push(function(c) c.defs[di].vd = nil end) end
    for pi, p in ipairs(d.params) do
      if p.vd then push(function(c) c.defs[di].params[pi].vd = nil end) end
    end
  end
  for si, s in ipairs(slots(prog)) do
    if s.block then
      push(function(c)
        local cs = slots(c)[si]
        table.remove(cs.block.stmts, cs.index)
      end)
      -- inline: every use of the bound name becomes (a copy of) its value
      push(function(c)
        local cs = slots(c)[si]
        local name, value = cs.parent.name, cs.expr
        table.remove(cs.block.stmts, cs.index)
        for _, u in ipairs(slots(c)) do
          if u.def == cs.def and u.expr.k == "var" and u.expr.name == name then
            u.parent[u.key] = deep_copy(value)
          end
        end
      end)
    end
    for ri = 1, #replacements(s.expr, s.tvars) do
      push(function(c)
        local cs = slots(c)[si]
        cs.parent[cs.key] = replacements(cs.expr, cs.tvars)[ri]
      end)
    end
  end
  return cands
end

-- Size of a program (number of expression slots and annotations): the
-- shrinker only accepts smaller ones.
function M.size(prog)
  local n = #slots(prog) + #prog.defs
  for _, d in ipairs(prog.defs) do
    if d.vd then n = n + 1 end
    for _, p in ipairs(d.params) do
      if p.vd then n = n + 1 end
    end
  end
  for _, s in ipairs(slots(prog)) do
    if s.expr.attrs then n = n + 1 end
  end
  return n
end

-- Greedy shrinking: take the first one-step-smaller program for which
-- fails(program) still holds, until none does (or max_steps candidates
-- were tried, default 3000).
function M.shrink(prog, fails, max_steps)
  local size, steps, progress = M.size(prog), 0, true
  while progress and steps < (max_steps or 3000) do
    progress = false
    for _, cand in ipairs(M.smaller(prog)) do
      steps = steps + 1
      local csize = M.size(cand)
      if csize < size and fails(cand) then
        prog, size, progress = cand, csize, true
        break
      end
    end
  end
  return prog
end

return M
