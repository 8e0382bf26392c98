-- A seeded generator of programs whose copies can move (issue 20): helper
-- functions with annotated parameters and results called from several
-- places and devices, if branches whose arms copy the same values, match
-- over an option, loops (recursive global functions and let-bound
-- closures, while_loop's shape) over loop-invariant tensors, closures
-- capturing values of their context, shared inputs.
--
--   local gen = require "relaygen_copies"        -- fuzz/ on package.path
--   local text, info = gen.program(seed, opts?)  -- Relay text, and the inputs to run it on
--   info.inputs = { {a = 3, c0 = true, n = 2, ...}, ... }   -- @main's parameters, per run
--
-- Devices are decided by the generator, as a user writing annotations
-- would: every operator call is placed with a plain on_device (computed
-- there, read anywhere: a reader elsewhere gets a copy), parameters and
-- function results carry a virtual_device, and a value that lives on one
-- device (a let variable, a parameter, a call's result) read on another is
-- copied explicitly (device_copy), so TVM's rules plan the program as
-- written. Devices: meta[VirtualDevice][0] cpu, [1] cuda, [4] opencl
-- (fuzz/props.lua's palette); opts.devices = 2 (default) or 3.
--
-- opts.constants: values cheap to compute anywhere (zeros, ones, constants
-- nobody placed, reshapes), for PlanDevices' recompute option.
--
-- opts.free_signatures: helper functions with no device annotation at all
-- (parameters, result, body), each call placing its arguments and result on
-- one device of its own choice: TVM's rules see one function called on two
-- devices (a conflict), device-polymorphic planning (PlanDevices'
-- polymorphic option) a specialisation per device.
local relaygen = require "relaygen"

local M = {}

local T = "Tensor[(5, 7), float32]"
local META = {cpu = "meta[VirtualDevice][0]", cuda = "meta[VirtualDevice][1]", opencl = "meta[VirtualDevice][4]"}
local UNARY = {"negative", "exp", "tanh", "nn.relu", "abs"}
local BINARY = {"add", "multiply", "subtract"}

M.TYPE = T

-- ------------------------------------------------------------ the state

local Gen = {}
Gen.__index = Gen

local function new(seed, opts)
  local g = setmetatable({}, Gen)
  g.rng = relaygen.rng(seed)
  g.devices = (opts and opts.devices == 3) and {"cpu", "cuda", "opencl"} or {"cpu", "cuda"}
  g.constants = opts and opts.constants
  g.k = 0          -- graph binding numbers
  g.names = {}     -- let names used
  g.funcs = {}     -- helper functions: {name, params = {{name, dev}...}, bools, ret}
  g.loops = {}     -- global loops: {name, dev, invariants = {dev...}}
  g.defs = {}      -- text of the definitions, in order
  return g
end

function Gen:dev() return self.rng:pick(self.devices) end
function Gen:chance(p) return self.rng:chance(p) end
function Gen:below(n) return self.rng:below(n) end

function Gen:fresh(prefix)
  local n = 1
  while self.names[prefix .. n] do n = n + 1 end
  self.names[prefix .. n] = true
  return prefix .. n
end

-- A block: lines, the values visible in it ({name, dev, fixed}), the
-- booleans, the counter and its device, the indentation.
local function block(parent, indent)
  local b = {lines = {}, vals = {}, bools = parent and parent.bools or {}, indent = indent,
             n = parent and parent.n, parent = parent}
  if parent then for _, v in ipairs(parent.vals) do b.vals[#b.vals + 1] = v end end
  return b
end

local function emit(b, line) b.lines[#b.lines + 1] = string.rep("  ", b.indent) .. line end

-- The text reading value v on device d: a value that lives on one device
-- (fixed) read elsewhere is copied; one computed by a plain on_device (or a
-- parameter nobody placed) is read anywhere.
local function use(v, d, strict)
  if (v.fixed or strict) and v.dev and v.dev ~= d then
    return "device_copy(" .. v.name .. ", src_virtual_device=" .. META[v.dev]
      .. ", dst_virtual_device=" .. META[d] .. ")"
  end
  return v.name
end

function Gen:pick_val(b)
  -- later values more often (chains), any value sometimes (sharing)
  local n = #b.vals
  if self:chance(0.5) then return b.vals[n - self:below(math.min(n, 3))] end
  return b.vals[self:below(n) + 1]
end

-- ------------------------------------------------------------ statements

-- A value cheap to compute anywhere (opts.constants): zeros, ones or a
-- constant nobody placed (read anywhere), or a reshape of a value, placed.
function Gen:const_stmt(b)
  local name = "%" .. self.k
  self.k = self.k + 1
  local r = self:below(4)
  if r == 0 then emit(b, name .. ' = zeros(shape=[5, 7], dtype="float32");')
  elseif r == 1 then emit(b, name .. ' = ones(shape=[5, 7], dtype="float32");')
  elseif r == 2 then emit(b, name .. " = add(ones(shape=[5, 7], dtype=\"float32\"), 2f);")
  else
    local d = self:dev()
    emit(b, name .. " = on_device(reshape(" .. use(self:pick_val(b), d) .. ", newshape=[5, 7]), virtual_device="
      .. META[d] .. ");")
    b.vals[#b.vals + 1] = {name = name, dev = d, fixed = false}
    return
  end
  b.vals[#b.vals + 1] = {name = name, dev = nil, fixed = false}
end

-- An operator call on device d: a graph binding (read anywhere) or a let
-- (lives on d).
function Gen:op_stmt(b, d)
  d = d or self:dev()
  local call
  if self:chance(0.4) then
    call = self.rng:pick(UNARY) .. "(" .. use(self:pick_val(b), d) .. ")"
  else
    call = self.rng:pick(BINARY) .. "(" .. use(self:pick_val(b), d) .. ", " .. use(self:pick_val(b), d) .. ")"
  end
  local ann = "on_device(" .. call .. ", virtual_device=" .. META[d] .. ")"
  if self:chance(0.35) then
    local name = "%" .. self:fresh("x")
    emit(b, "let " .. name .. " = " .. ann .. ";")
    b.vals[#b.vals + 1] = {name = name, dev = d, fixed = true}
  else
    local name = "%" .. self.k
    self.k = self.k + 1
    emit(b, name .. " = " .. ann .. ";")
    b.vals[#b.vals + 1] = {name = name, dev = d, fixed = false}
  end
end

-- A call of a helper with no device annotations: on a device the call
-- chooses, its arguments copied there, its result living there.
function Gen:free_call_stmt(b, f)
  local d = self:dev()
  local args = {}
  for i = 1, f.nparams do args[i] = use(self:pick_val(b), d, true) end
  local name = "%" .. self:fresh("r")
  emit(b, "let " .. name .. " = on_device(@" .. f.name .. "(" .. table.concat(args, ", ") .. "), virtual_device="
    .. META[d] .. ");")
  b.vals[#b.vals + 1] = {name = name, dev = d, fixed = true}
end

-- A call of a helper function: its arguments copied to its parameters'
-- devices where they live elsewhere; its result lives on its device.
function Gen:call_stmt(b, f)
  if f.free then return self:free_call_stmt(b, f) end
  local args = {}
  for i, p in ipairs(f.params) do args[i] = use(self:pick_val(b), p.dev, true) end
  for _ = 1, f.bools do args[#args + 1] = #b.bools > 0 and self.rng:pick(b.bools) or "True" end
  local name = "%" .. self:fresh("r")
  emit(b, "let " .. name .. " = @" .. f.name .. "(" .. table.concat(args, ", ") .. ");")
  b.vals[#b.vals + 1] = {name = name, dev = f.ret, fixed = true}
end

-- A block's statements (as many as count), ending in a value on device d:
-- the text of that value (copied explicitly where it is made elsewhere:
-- a block's result is where its context is).
function Gen:body(b, count, d, depth)
  for _ = 1, count do self:stmt(b, depth) end
  local v = self:pick_val(b)
  if not v.dev then -- (a parameter nobody placed: placed by its readers; computed here instead)
    local name = "%" .. self.k
    self.k = self.k + 1
    emit(b, name .. " = on_device(" .. self.rng:pick(UNARY) .. "(" .. v.name .. "), virtual_device=" .. META[d] .. ");")
    return name
  end
  return use(v, d, true)
end

-- if (%c) { ... } else { ... } on device d (the condition lives there too).
function Gen:if_stmt(b, depth)
  local d = self:dev()
  local c = self.rng:pick(b.bools)
  local arms = {}
  -- a value both arms read (so both copy it), sometimes
  local shared = self:chance(0.6) and self:pick_val(b) or nil
  local sd = self:dev()
  for i = 1, 2 do
    local a = block(b, b.indent + 1)
    if shared then
      local name = "%" .. self.k
      self.k = self.k + 1
      emit(a, name .. " = on_device(" .. self.rng:pick(UNARY) .. "(" .. use(shared, sd) .. "), virtual_device="
        .. META[sd] .. ");")
      a.vals[#a.vals + 1] = {name = name, dev = sd, fixed = false}
    end
    arms[i] = {a, self:body(a, self:below(3), d, depth + 1)}
  end
  local name = "%" .. self.k
  self.k = self.k + 1
  emit(b, name .. " = on_device(if (" .. c .. ") {")
  for _, l in ipairs(arms[1][1].lines) do b.lines[#b.lines + 1] = l end
  emit(b, "  " .. arms[1][2])
  emit(b, "} else {")
  for _, l in ipairs(arms[2][1].lines) do b.lines[#b.lines + 1] = l end
  emit(b, "  " .. arms[2][2])
  emit(b, "}, virtual_device=" .. META[d] .. ");")
  b.vals[#b.vals + 1] = {name = name, dev = d, fixed = false}
end

-- match over an option made from a boolean: both clauses read a value of
-- the context on one device (so both copy it where it lives elsewhere).
function Gen:match_stmt(b, depth)
  local d, sd = self:dev(), self:dev()
  local c = self.rng:pick(b.bools)
  local v, w = self:pick_val(b), self:pick_val(b)
  local opt = "%" .. self:fresh("o")
  emit(b, "let " .. opt .. " = on_device(if (" .. c .. ") { Some(" .. use(v, d) .. ") } else { Nothing }, "
    .. "virtual_device=" .. META[d] .. ");")
  local y = "%" .. self:fresh("y")
  local arms = {}
  for i = 1, 2 do
    local a = block(b, b.indent + 2)
    local first = w
    if i == 1 then
      first = {name = y, dev = d, fixed = true}
      a.vals[#a.vals + 1] = first
    end
    local name = "%" .. self.k
    self.k = self.k + 1
    emit(a, name .. " = on_device(" .. self.rng:pick(BINARY) .. "(" .. use(first, sd) .. ", " .. use(w, sd)
      .. "), virtual_device=" .. META[sd] .. ");")
    a.vals[#a.vals + 1] = {name = name, dev = sd, fixed = false}
    arms[i] = {a, self:body(a, self:below(2), d, depth + 1)}
  end
  local name = "%" .. self.k
  self.k = self.k + 1
  emit(b, name .. " = on_device(match (" .. opt .. ") {")
  for i, head in ipairs{"Some(" .. y .. ")", "Nothing"} do
    emit(b, "  " .. head .. " => {")
    for _, l in ipairs(arms[i][1].lines) do b.lines[#b.lines + 1] = l end
    emit(b, "    " .. arms[i][2])
    emit(b, "  },")
  end
  emit(b, "}, virtual_device=" .. META[d] .. ");")
  b.vals[#b.vals + 1] = {name = name, dev = d, fixed = false}
  self.uses_option = true
end

-- A loop as a let-bound recursive closure (Relay's while_loop): a counter
-- and an accumulator on device d; its body reads values of the context
-- (loop invariants, copied on every iteration as written).
function Gen:closure_loop_stmt(b)
  local d = self:dev()
  local lp = "%" .. self:fresh("loop")
  local i, acc = "%" .. self:fresh("i"), "%" .. self:fresh("acc")
  local inner = block(b, b.indent + 2)
  inner.vals[#inner.vals + 1] = {name = acc, dev = d, fixed = true}
  local nops = 1 + self:below(3)
  for _ = 1, nops do
    local od = self:chance(0.7) and d or self:dev()
    -- read the accumulator and an invariant
    local inv = b.vals[self:below(#b.vals) + 1]
    local call = self.rng:pick(BINARY) .. "(" .. use(inner.vals[#inner.vals], od) .. ", " .. use(inv, od) .. ")"
    local name = "%" .. self.k
    self.k = self.k + 1
    emit(inner, name .. " = on_device(" .. call .. ", virtual_device=" .. META[od] .. ");")
    inner.vals[#inner.vals + 1] = {name = name, dev = od, fixed = false}
  end
  local init = self:pick_val(b)
  emit(b, "let " .. lp .. " = fn (" .. i .. " {virtual_device=" .. META[d] .. "}: int32, " .. acc
    .. " {virtual_device=" .. META[d] .. "}: " .. T .. ", virtual_device=" .. META[d] .. ") -> " .. T .. " {")
  emit(b, "  if (less(" .. i .. ", " .. use(b.n, d) .. ")) {")
  for _, l in ipairs(inner.lines) do b.lines[#b.lines + 1] = l end
  emit(b, "    " .. lp .. "(add(" .. i .. ", 1), " .. use(inner.vals[#inner.vals], d, true) .. ")")
  emit(b, "  } else {")
  emit(b, "    " .. acc)
  emit(b, "  }")
  emit(b, "};")
  local name = "%" .. self:fresh("l")
  emit(b, "let " .. name .. " = " .. lp .. "(0, " .. use(init, d, true) .. ");")
  b.vals[#b.vals + 1] = {name = name, dev = d, fixed = true}
end

-- A closure of the context, called once or twice.
function Gen:closure_stmt(b, depth)
  local r = self:dev()
  local pd = self:dev()
  local f = "%" .. self:fresh("f")
  local y = "%" .. self:fresh("y")
  local inner = block(b, b.indent + 1)
  inner.vals[#inner.vals + 1] = {name = y, dev = pd, fixed = true}
  local res = self:body(inner, 1 + self:below(2), r, depth + 1)
  emit(b, "let " .. f .. " = fn (" .. y .. " {virtual_device=" .. META[pd] .. "}: " .. T .. ", virtual_device="
    .. META[r] .. ") -> " .. T .. " {")
  for _, l in ipairs(inner.lines) do b.lines[#b.lines + 1] = l end
  emit(b, "  " .. res)
  emit(b, "};")
  for _ = 1, 1 + self:below(2) do
    local name = "%" .. self:fresh("k")
    emit(b, "let " .. name .. " = " .. f .. "(" .. use(self:pick_val(b), pd, true) .. ");")
    b.vals[#b.vals + 1] = {name = name, dev = r, fixed = true}
  end
end

-- A call of a global loop.
function Gen:loop_call_stmt(b, lp)
  local args = {"0", use(b.n, lp.dev), use(self:pick_val(b), lp.dev, true)}
  for _, wd in ipairs(lp.invariants) do args[#args + 1] = use(self:pick_val(b), wd, true) end
  local name = "%" .. self:fresh("g")
  emit(b, "let " .. name .. " = @" .. lp.name .. "(" .. table.concat(args, ", ") .. ");")
  b.vals[#b.vals + 1] = {name = name, dev = lp.dev, fixed = true}
end

function Gen:stmt(b, depth)
  local w = {op = 6, copy = 0.6, const = self.constants and 2 or 0}
  if #self.funcs > 0 then w.call = 2.5 end
  if depth < 2 and #b.bools > 0 then w["if"] = 1.5; w.match = 0.6 end
  if b.n and depth < 1 then w.closure_loop = 1 end
  if b.n and #self.loops > 0 and depth < 2 then w.loop = 1.5 end
  if depth < 1 then w.closure = 0.7 end
  local k = self.rng:weighted(w)
  if k == "op" then self:op_stmt(b)
  elseif k == "call" then self:call_stmt(b, self.rng:pick(self.funcs))
  elseif k == "if" then self:if_stmt(b, depth)
  elseif k == "match" then self:match_stmt(b, depth)
  elseif k == "closure_loop" then self:closure_loop_stmt(b)
  elseif k == "loop" then self:loop_call_stmt(b, self.rng:pick(self.loops))
  elseif k == "closure" then self:closure_stmt(b, depth)
  elseif k == "const" then self:const_stmt(b)
  else
    -- an explicit copy of a value that lives on one device
    local v = self:pick_val(b)
    if v.fixed then
      local d = self:dev()
      if d ~= v.dev then
        local name = "%" .. self:fresh("z")
        emit(b, "let " .. name .. " = " .. use(v, d) .. ";")
        b.vals[#b.vals + 1] = {name = name, dev = d, fixed = true}
        return
      end
    end
    self:op_stmt(b)
  end
end

-- ------------------------------------------------------------ definitions

function Gen:helper(idx)
  local f = {name = "g" .. idx, params = {}, bools = self:chance(0.4) and 1 or 0, ret = self:dev()}
  local b = block(nil, 1)
  local ps = {}
  for i = 1, 1 + self:below(3) do
    local p = {name = "%p" .. i, dev = self:dev()}
    f.params[i] = p
    b.vals[#b.vals + 1] = {name = p.name, dev = p.dev, fixed = true}
    ps[#ps + 1] = p.name .. " {virtual_device=" .. META[p.dev] .. "}: " .. T
  end
  if f.bools > 0 then
    b.bools = {"%c"}
    ps[#ps + 1] = "%c: bool"
  end
  local saved = self.funcs
  self.funcs = {table.unpack(saved)} -- calls only earlier helpers
  local res = self:body(b, 1 + self:below(4), f.ret, 1)
  self.funcs = saved
  local lines = {"def @" .. f.name .. "(" .. table.concat(ps, ", ") .. ", virtual_device=" .. META[f.ret] .. ") -> "
    .. T .. " {"}
  for _, l in ipairs(b.lines) do lines[#lines + 1] = l end
  lines[#lines + 1] = "  " .. res
  lines[#lines + 1] = "}"
  self.defs[#self.defs + 1] = table.concat(lines, "\n")
  self.funcs[#self.funcs + 1] = f
end

-- A helper with no device annotations: operators over its parameters and
-- calls of earlier such helpers, wherever its callers put it.
function Gen:free_helper(idx)
  local f = {name = "h" .. idx, free = true, nparams = 1 + self:below(3)}
  local ps, vals = {}, {}
  for i = 1, f.nparams do
    ps[i] = "%q" .. i .. ": " .. T
    vals[i] = "%q" .. i
  end
  local lines = {"def @" .. f.name .. "(" .. table.concat(ps, ", ") .. ") -> " .. T .. " {"}
  local k = 0
  for _ = 1, 1 + self:below(3) do
    local call
    local earlier = {}
    for _, g in ipairs(self.funcs) do if g.free then earlier[#earlier + 1] = g end end
    if #earlier > 0 and self:chance(0.3) then
      local g = self.rng:pick(earlier)
      local args = {}
      for i = 1, g.nparams do args[i] = self.rng:pick(vals) end
      call = "@" .. g.name .. "(" .. table.concat(args, ", ") .. ")"
    elseif self:chance(0.4) then
      call = self.rng:pick(UNARY) .. "(" .. self.rng:pick(vals) .. ")"
    else
      call = self.rng:pick(BINARY) .. "(" .. self.rng:pick(vals) .. ", " .. self.rng:pick(vals) .. ")"
    end
    lines[#lines + 1] = "  %v" .. k .. " = " .. call .. ";"
    vals[#vals + 1] = "%v" .. k
    k = k + 1
  end
  lines[#lines + 1] = "  " .. vals[#vals]
  lines[#lines + 1] = "}"
  self.defs[#self.defs + 1] = table.concat(lines, "\n")
  self.funcs[#self.funcs + 1] = f
end

-- A global recursive loop over invariant tensors it passes on unchanged.
function Gen:global_loop(idx)
  local lp = {name = "loop" .. idx, dev = self:dev(), invariants = {}}
  local b = block(nil, 2)
  b.vals[#b.vals + 1] = {name = "%acc", dev = lp.dev, fixed = true}
  local ps = {"%i {virtual_device=" .. META[lp.dev] .. "}: int32", "%n {virtual_device=" .. META[lp.dev] .. "}: int32",
              "%acc {virtual_device=" .. META[lp.dev] .. "}: " .. T}
  local ws = {}
  for i = 1, 1 + self:below(2) do
    local wd = self:dev()
    lp.invariants[i] = wd
    ps[#ps + 1] = "%w" .. i .. " {virtual_device=" .. META[wd] .. "}: " .. T
    ws[i] = {name = "%w" .. i, dev = wd, fixed = true}
  end
  for _ = 1, 1 + self:below(3) do
    local od = self:chance(0.7) and lp.dev or self:dev()
    local inv = self.rng:pick(ws)
    local call = self.rng:pick(BINARY) .. "(" .. use(b.vals[#b.vals], od) .. ", " .. use(inv, od) .. ")"
    local name = "%" .. self.k
    self.k = self.k + 1
    emit(b, name .. " = on_device(" .. call .. ", virtual_device=" .. META[od] .. ");")
    b.vals[#b.vals + 1] = {name = name, dev = od, fixed = false}
  end
  local pass = {}
  for i = 1, #ws do pass[i] = ws[i].name end
  local lines = {"def @" .. lp.name .. "(" .. table.concat(ps, ", ") .. ", virtual_device=" .. META[lp.dev] .. ") -> "
    .. T .. " {", "  if (less(%i, %n)) {"}
  for _, l in ipairs(b.lines) do lines[#lines + 1] = l end
  lines[#lines + 1] = "    @" .. lp.name .. "(add(%i, 1), %n, " .. use(b.vals[#b.vals], lp.dev, true) .. ", "
    .. table.concat(pass, ", ") .. ")"
  lines[#lines + 1] = "  } else {"
  lines[#lines + 1] = "    %acc"
  lines[#lines + 1] = "  }"
  lines[#lines + 1] = "}"
  self.defs[#self.defs + 1] = table.concat(lines, "\n")
  self.loops[#self.loops + 1] = lp
end

function M.program(seed, opts)
  local g = new(seed, opts)
  if opts and opts.free_signatures then
    for i = 1, 1 + g:below(3) do g:free_helper(i) end
  end
  for i = 1, g:below(3) do g:helper(i) end
  for i = 1, g:below(2) do g:global_loop(i) end
  local b = block(nil, 1)
  local ps, inputs = {}, {}
  local nt = 1 + g:below(3)
  for i = 1, nt do
    local name = string.char(96 + i)
    local d = g:chance(0.6) and g:dev() or nil
    if d then
      ps[#ps + 1] = "%" .. name .. " {virtual_device=" .. META[d] .. "}: " .. T
      b.vals[#b.vals + 1] = {name = "%" .. name, dev = d, fixed = true}
    else
      ps[#ps + 1] = "%" .. name .. ": " .. T
      b.vals[#b.vals + 1] = {name = "%" .. name, dev = nil, fixed = false}
    end
    inputs[#inputs + 1] = {name = name, kind = "tensor"}
  end
  local nb = g:below(3)
  for i = 1, nb do
    ps[#ps + 1] = "%c" .. (i - 1) .. ": bool"
    b.bools[#b.bools + 1] = "%c" .. (i - 1)
    inputs[#inputs + 1] = {name = "c" .. (i - 1), kind = "bool"}
  end
  if g:chance(0.6) or #g.loops > 0 then
    ps[#ps + 1] = "%n: int32"
    b.n = {name = "%n", fixed = false}
    inputs[#inputs + 1] = {name = "n", kind = "count"}
  end
  local rd = g:dev()
  local res = g:body(b, 2 + g:below(6), rd, 0)
  local lines = {'#[version = "0.0.5"]'}
  if g.uses_option then lines[#lines + 1] = "type Option[A] {\n  Some(A),\n  Nothing,\n}" end
  for _, d in ipairs(g.defs) do lines[#lines + 1] = d end
  lines[#lines + 1] = "def @main(" .. table.concat(ps, ", ") .. ", virtual_device=" .. META[rd] .. ") -> " .. T .. " {"
  for _, l in ipairs(b.lines) do lines[#lines + 1] = l end
  lines[#lines + 1] = "  " .. res
  lines[#lines + 1] = "}"
  -- runs: every combination of the booleans (at most 4), loop counts 0, 1 and 3
  local runs = {}
  local counts = b.n and {0, 1, 3} or {0}
  for mask = 0, (1 << nb) - 1 do
    for _, cnt in ipairs(counts) do
      local r = {}
      for k, inp in ipairs(inputs) do
        if inp.kind == "tensor" then r[inp.name] = (seed * 31 + k * 17 + mask) % 997
        elseif inp.kind == "bool" then r[inp.name] = (mask >> tonumber(inp.name:sub(2))) & 1 == 1
        else r[inp.name] = cnt end
      end
      runs[#runs + 1] = r
    end
  end
  return table.concat(lines, "\n") .. "\n", {inputs = runs}
end

-- ------------------------------------------------------------ known minimums
--
-- Programs whose fewest copies per run are known by construction, for
-- checking that MoveCopies reaches them:
--   "loop"      a loop on the GPU (a recursive global function, or a let-bound
--               closure as while_loop writes it) over k loop invariants the
--               CPU holds, each read in every iteration: k copies when the
--               loop runs, none when it does not;
--   "calls"     a chain of m calls of a function that takes its argument and
--               returns its result on the CPU but computes on the GPU, made
--               from the GPU (each call copies its argument there and back,
--               and its result): no copy at all;
--   "branches"  a value on the CPU read on the GPU in both arms of an if
--               (or both clauses of a match) and after it: one copy.
-- M.family(kind, seed) -> text, runs, minimum(run) (copies).
local CPU, GPU = META.cpu, META.cuda

local function copy(x, a, b)
  return "device_copy(" .. x .. ", src_virtual_device=" .. a .. ", dst_virtual_device=" .. b .. ")"
end

local function family_loop(rng)
  local k = 1 + rng:below(3)
  local closure = rng:chance(0.5)
  local nops = 1 + rng:below(3)
  local ws, wps = {}, {}
  for i = 1, k do
    ws[i] = "%w" .. i
    wps[i] = "%w" .. i .. " {virtual_device=" .. CPU .. "}: " .. T
  end
  local lines = {'#[version = "0.0.5"]'}
  local body = {}
  local acc = "%acc"
  for j = 1, nops + k - 1 do
    local w = ws[(j - 1) % k + 1]
    local name = "%" .. (j - 1)
    body[#body + 1] = "    " .. name .. " = on_device(" .. BINARY[(j - 1) % 3 + 1] .. "(" .. acc .. ", "
      .. copy(w, CPU, GPU) .. "), virtual_device=" .. GPU .. ");"
    acc = name
  end
  if closure then
    lines[#lines + 1] = "def @main(%n {virtual_device=" .. GPU .. "}: int32, %x {virtual_device=" .. GPU .. "}: " .. T
      .. ", " .. table.concat(wps, ", ") .. ", virtual_device=" .. GPU .. ") -> " .. T .. " {"
    lines[#lines + 1] = "  let %loop = fn (%i {virtual_device=" .. GPU .. "}: int32, %acc {virtual_device=" .. GPU
      .. "}: " .. T .. ", virtual_device=" .. GPU .. ") -> " .. T .. " {"
    lines[#lines + 1] = "  if (less(%i, %n)) {"
    for _, l in ipairs(body) do lines[#lines + 1] = l end
    lines[#lines + 1] = "    %loop(add(%i, 1), " .. acc .. ")"
    lines[#lines + 1] = "  } else {\n    %acc\n  }\n  };"
    lines[#lines + 1] = "  %loop(0, %x)\n}"
  else
    lines[#lines + 1] = "def @loop(%i {virtual_device=" .. GPU .. "}: int32, %n {virtual_device=" .. GPU
      .. "}: int32, %acc {virtual_device=" .. GPU .. "}: " .. T .. ", " .. table.concat(wps, ", ")
      .. ", virtual_device=" .. GPU .. ") -> " .. T .. " {"
    lines[#lines + 1] = "  if (less(%i, %n)) {"
    for _, l in ipairs(body) do lines[#lines + 1] = l end
    lines[#lines + 1] = "    @loop(add(%i, 1), %n, " .. acc .. ", " .. table.concat(ws, ", ") .. ")"
    lines[#lines + 1] = "  } else {\n    %acc\n  }\n}"
    lines[#lines + 1] = "def @main(%n {virtual_device=" .. GPU .. "}: int32, %x {virtual_device=" .. GPU .. "}: " .. T
      .. ", " .. table.concat(wps, ", ") .. ", virtual_device=" .. GPU .. ") -> " .. T .. " {"
    lines[#lines + 1] = "  @loop(0, %n, %x, " .. table.concat(ws, ", ") .. ")\n}"
  end
  local runs = {}
  for _, n in ipairs{0, 1, 4} do
    local r = {n = n, x = 5}
    for i = 1, k do r["w" .. i] = 10 + i end
    runs[#runs + 1] = r
  end
  return table.concat(lines, "\n") .. "\n", runs, function(r) return r.n > 0 and k or 0 end
end

local function family_calls(rng)
  local m = 1 + rng:below(4)
  local lines = {'#[version = "0.0.5"]',
    "def @f(%a {virtual_device=" .. CPU .. "}: " .. T .. ", virtual_device=" .. CPU .. ") -> " .. T .. " {",
    "  let %y = on_device(" .. UNARY[rng:below(#UNARY) + 1] .. "(" .. copy("%a", CPU, GPU) .. "), virtual_device=" .. GPU .. ");",
    "  %0 = on_device(add(%y, %y), virtual_device=" .. GPU .. ");",
    "  " .. copy("%0", GPU, CPU),
    "}",
    "def @main(%x {virtual_device=" .. GPU .. "}: " .. T .. ", virtual_device=" .. GPU .. ") -> " .. T .. " {"}
  local prev = "%x"
  for i = 1, m do
    lines[#lines + 1] = "  let %r" .. i .. " = " .. copy("@f(" .. copy(prev, GPU, CPU) .. ")", CPU, GPU) .. ";"
    prev = "%r" .. i
  end
  lines[#lines + 1] = "  " .. prev .. "\n}"
  return table.concat(lines, "\n") .. "\n", {{x = 7}}, function() return 0 end
end

local function family_branches(rng)
  local match = rng:chance(0.5)
  local lines = {'#[version = "0.0.5"]'}
  if match then lines[#lines + 1] = "type Option[A] {\n  Some(A),\n  Nothing,\n}" end
  lines[#lines + 1] = "def @main(%x {virtual_device=" .. CPU .. "}: " .. T .. ", %y {virtual_device=" .. GPU .. "}: "
    .. T .. ", %c {virtual_device=" .. GPU .. "}: bool, virtual_device=" .. GPU .. ") -> " .. T .. " {"
  local arm = function(op) return "on_device(" .. op .. "(" .. copy("%x", CPU, GPU) .. ", %y), virtual_device=" .. GPU .. ")" end
  if match then
    lines[#lines + 1] = "  let %o = on_device(if (%c) { Some(%y) } else { Nothing }, virtual_device=" .. GPU .. ");"
    lines[#lines + 1] = "  %0 = match (%o) {\n    Some(%z) => " .. arm("add") .. ",\n    Nothing => " .. arm("multiply") .. ",\n  };"
  else
    lines[#lines + 1] = "  %0 = if (%c) { " .. arm("add") .. " } else { " .. arm("multiply") .. " };"
  end
  lines[#lines + 1] = "  on_device(subtract(%0, " .. copy("%x", CPU, GPU) .. "), virtual_device=" .. GPU .. ")\n}"
  return table.concat(lines, "\n") .. "\n", {{x = 3, y = 4, c = true}, {x = 3, y = 4, c = false}},
    function() return 1 end
end

function M.family(kind, seed)
  local rng = relaygen.rng(seed)
  if kind == "loop" then return family_loop(rng) end
  if kind == "calls" then return family_calls(rng) end
  if kind == "branches" then return family_branches(rng) end
  error("relaygen_copies.family: unknown kind " .. tostring(kind))
end

M.FAMILIES = {"loop", "calls", "branches"}

return M
