-- Small random dataflow programs for device planning, each with the
-- placement problem it poses in planner.md's terms, and the least bytes
-- any placement copies (brute force over every placement of what nobody
-- annotated): the reference placement by cost (min_bytes + ShareCopies)
-- must meet, and TVM's rules may not beat.
--
--   local df = require "relaygen_dataflow"        -- fuzz/ on package.path
--   local prog = df.program(seed, opts?)          -- {text =, default =, classes =, ...}
--   local best = df.brute(prog)                   -- least bytes, or nil: no placement
--
-- A program is @main with one to three parameters (some with a
-- virtual_device, the others free) and two to seven graph bindings of
-- operator calls (nn.relu, tanh, negative, add and multiply broadcasting,
-- sum keeping dimensions, concatenate of a tuple) and of the user's
-- device_copy; a binding may be wrapped in on_device, plain (constrain_body
-- only: computed there, read anywhere) or fixed (constrain_result too); an
-- argument or a tuple field may be a plain on_device of a value nobody
-- annotated; values are shared by several readers; the result is a value
-- or a pair, maybe under on_device or with the function's virtual_device.
-- Tensors are (r, 7) or (r, 1) float32 (28 r or 4 r bytes). Devices:
-- meta[VirtualDevice][0] (cpu) and [1] (cuda), the default device type
-- either; with opts.devices = 3 also [4] (opencl, fuzz/props.lua's META).
--
-- The problem (planner.md): every value (parameter, call, copy) is made on
-- one device; the places planner.md's capture can put a copy are the
-- arguments of operator calls and the step from a plain on_device's body
-- to its result; everything else is one device (a tuple and its fields, a
-- device_copy's argument and its source, an on_device's body and its
-- device, a fixed on_device's result and its device, the function's body
-- and its result, which phase 0 fixes when it is an on_device). A value
-- costs its bytes once per other device where it is read (one copy per
-- value and destination device, as ShareCopies leaves a plan); the result
-- of @main is read nowhere. A plain on_device's result is read anywhere:
-- its readers read the value it annotates.
local M = {}

local function rng_of(seed)
  local s = seed
  local r = {}
  function r.int(lo, hi)
    s = (s * 1103515245 + 12345) % 2147483648
    return lo + (s // 65536) % (hi - lo + 1)
  end
  function r.chance(p) return r.int(1, 10000) <= p * 10000 end
  function r.pick(t) return t[r.int(1, #t)] end
  return r
end

-- meta[VirtualDevice][i] of the conformance palette (devplan.testing.META)
-- and of fuzz/props.lua's (M.META: [4] is opencl)
local DEV = {"meta[VirtualDevice][0]", "meta[VirtualDevice][1]", "meta[VirtualDevice][4]"}

local function ty(shape) return ("Tensor[(%d, %d), float32]"):format(shape[1], shape[2]) end
local function bytes(shape) return shape[1] * shape[2] * 4 end

-- The problem as classes (union-find) with fixed devices, and reads.
local Problem = {}
Problem.__index = Problem

local function new_problem()
  return setmetatable({parent = {}, fixed = {}, reads = {}, bad = false, n = 0}, Problem)
end

function Problem:class(dev)
  self.n = self.n + 1
  self.parent[self.n] = self.n
  if dev then self.fixed[self.n] = dev end
  return self.n
end

function Problem:find(c)
  while self.parent[c] ~= c do c = self.parent[c] end
  return c
end

-- a and b are one device
function Problem:same(a, b)
  a, b = self:find(a), self:find(b)
  if a == b then return end
  local fa, fb = self.fixed[a], self.fixed[b]
  if fa and fb and fa ~= fb then self.bad = true end
  self.parent[b] = a
  self.fixed[a] = fa or fb
end

function Problem:fix(c, dev) self:same(c, self:class(dev)) end

-- value v (bytes, as it is in class `from`) is read in class `at`
function Problem:read(v, from, at)
  self.reads[#self.reads + 1] = {value = v.id or v, bytes = v.bytes, from = from, at = at}
end

-- ------------------------------------------------------------ the generator

function M.program(seed, opts)
  opts = opts or {}
  local r = rng_of(seed * 2654435761 % 2147483648 + 1)
  local ndev = opts.devices or 2
  local P = new_problem()
  local vals, lines, params, copies = {}, {}, {}, {}
  local default = r.int(1, 2)
  -- a value: {name, shape, class (where it is made), plain = annotation's result class or nil,
  -- annot = "plain" | "fixed" | nil, used}
  for i = 1, r.int(1, 3) do
    local shape = {r.int(1, 5), r.chance(0.8) and 7 or 1}
    local dev = r.chance(0.3) and r.int(1, ndev) or nil
    local c = P:class(dev)
    local v = {name = "%p" .. i, shape = shape, bytes = bytes(shape), class = c, param = true}
    params[#params + 1] = v.name .. (dev and (" {virtual_device=" .. DEV[dev] .. "}") or "") .. ": " .. ty(shape)
    vals[#vals + 1] = v
  end

  -- The text of value v read as an operator argument in class c (copies
  -- allowed), maybe through a plain on_device of its own.
  local function arg_at(v, c)
    v.used = true
    if not v.annot and not v.copy and r.chance(0.12) then
      local d = r.int(1, ndev)
      P:fix(v.class, d)          -- the body is on d
      P:read(v, v.class, c)      -- its result read here
      return "on_device(" .. v.name .. ", virtual_device=" .. DEV[d] .. ")"
    end
    P:read(v, v.class, c)
    return v.name
  end
  -- The text of value v where the expression's class must be c (a tuple
  -- field, a copy's argument, the body): no copy, unless through a plain
  -- on_device (its result read anywhere).
  local function exact_at(v, c, inline_ok)
    v.used = true
    if v.annot == "plain" then
      P:read(v, v.class, c)
    elseif v.annot == "fixed" then
      P:same(v.class, c)
    elseif inline_ok and not v.copy and r.chance(0.15) then
      local d = r.int(1, ndev)
      P:fix(v.class, d)
      P:read(v, v.class, c)
      return "on_device(" .. v.name .. ", virtual_device=" .. DEV[d] .. ")"
    else
      P:same(v.class, c)
    end
    return v.name
  end

  local function bind(expr, shape, class, extra)
    local v = {name = "%" .. #lines, shape = shape, bytes = bytes(shape), class = class}
    for k, x in pairs(extra or {}) do v[k] = x end
    local roll = r.int(1, 100)
    if not v.copy and roll <= 25 then
      local d = r.int(1, ndev)
      P:fix(class, d)
      v.annot = "plain"
      expr = "on_device(" .. expr .. ", virtual_device=" .. DEV[d] .. ")"
    elseif not v.copy and roll <= 33 then
      local d = r.int(1, ndev)
      P:fix(class, d)
      v.annot = "fixed"
      expr = "on_device(" .. expr .. ", virtual_device=" .. DEV[d] .. ", constrain_result=True)"
    end
    lines[#lines + 1] = "  " .. v.name .. " = " .. expr .. ";\n"
    vals[#vals + 1] = v
    return v
  end

  local function compatible(a, b)
    return a.shape[2] == b.shape[2] and (a.shape[1] == b.shape[1] or a.shape[1] == 1 or b.shape[1] == 1)
  end

  for _ = 1, r.int(2, opts.max_calls or 7) do
    local x = r.pick(vals)
    local kind = r.int(1, 100)
    local c = P:class()
    if kind <= 10 and x.shape[2] == 7 then
      bind("sum(" .. arg_at(x, c) .. ", axis=[1], keepdims=True)", {x.shape[1], 1}, c)
    elseif kind <= 25 then
      bind(r.pick{"nn.relu", "tanh", "negative"} .. "(" .. arg_at(x, c) .. ")", x.shape, c)
    elseif kind <= 35 then -- the user's copy: its argument on src, itself on dst
      local s, t = r.int(1, ndev), r.int(1, ndev)
      local src = P:class(s)
      P:fix(c, t)
      local a = exact_at(x, src, false)
      P:read(x, src, c) -- the copy's own bytes (none when src is dst)
      -- the same value, on dst (a copy from a device to itself is none; two
      -- copies of one value between the same devices are one, as
      -- ShareCopies leaves them)
      local xid = x.id or x
      copies[xid] = copies[xid] or {}
      copies[xid][s * 8 + t] = copies[xid][s * 8 + t] or {}
      bind("device_copy(" .. a .. ", src_virtual_device=" .. DEV[s] .. ", dst_virtual_device=" .. DEV[t] .. ")",
           x.shape, s == t and src or c, {copy = true, id = s == t and xid or copies[xid][s * 8 + t]})
    elseif kind <= 45 then -- concatenate: a tuple (one class with its fields) read by the call
      local y
      for _ = 1, 4 do
        local cand = r.pick(vals)
        if cand.shape[2] == x.shape[2] then y = cand break end
      end
      y = y or x
      local t = P:class()
      local f1, f2 = exact_at(x, t, true), exact_at(y, t, true)
      P:read({bytes = bytes(x.shape) + bytes(y.shape)}, t, c)
      bind("concatenate((" .. f1 .. ", " .. f2 .. "), axis=0)", {x.shape[1] + y.shape[1], x.shape[2]}, c)
    else
      local y
      for _ = 1, 4 do
        local cand = r.pick(vals)
        if compatible(x, cand) then y = cand break end
      end
      y = y or x
      local shape = {math.max(x.shape[1], y.shape[1]), x.shape[2]}
      bind(r.pick{"add", "multiply"} .. "(" .. arg_at(x, c) .. ", " .. arg_at(y, c) .. ")", shape, c)
    end
  end
  -- every value used: the unused ones (parameters aside) added into the
  -- result where shapes allow, else fields of it
  local last, fields = vals[#vals], {}
  for _, v in ipairs(vals) do
    if not v.used and not v.param and v ~= last then
      if compatible(last, v) then
        local c = P:class()
        last = bind("add(" .. arg_at(last, c) .. ", " .. arg_at(v, c) .. ")",
                    {math.max(last.shape[1], v.shape[1]), last.shape[2]}, c)
      else
        fields[#fields + 1] = v
      end
    end
  end
  -- the body: the last value, maybe a tuple; maybe under on_device (phase 0
  -- fixes it) or with the function's virtual_device
  local fres = P:class()
  local fdev, wrap = "", nil
  if r.chance(0.2) then
    local d = r.int(1, ndev)
    P:fix(fres, d)
    fdev = ", virtual_device=" .. DEV[d]
  elseif r.chance(0.15) then
    wrap = r.int(1, ndev)
    P:fix(fres, wrap)
  end
  local body
  if #fields == 0 and r.chance(0.15) and #vals > 1 then fields[1] = r.pick(vals) end
  if #fields > 0 then
    local parts = {exact_at(last, fres, true)}
    for i, v in ipairs(fields) do parts[i + 1] = exact_at(v, fres, true) end
    body = "(" .. table.concat(parts, ", ") .. ")"
  else
    body = exact_at(last, fres, false)
    -- phase 0 fixes an on_device at the body's top: its result is where it puts it
    if last.annot == "plain" and not wrap then P:same(last.class, fres) end
  end
  if wrap then body = "on_device(" .. body .. ", virtual_device=" .. DEV[wrap] .. ")" end
  local text = "#[version = \"0.0.5\"]\ndef @main(" .. table.concat(params, ", ") .. fdev .. ") {\n"
    .. table.concat(lines) .. "  " .. body .. "\n}\n"
  return {text = text, default = default, problem = P, seed = seed, devices = ndev}
end

-- ------------------------------------------------------------ brute force

-- The least bytes over every placement of the free classes (each on one of
-- the program's devices), or nil when the fixed devices contradict each
-- other; and the number of free classes.
function M.brute(prog)
  local P = prog.problem
  if P.bad then return nil end
  local roots, free, dev = {}, {}, {}
  for c = 1, P.n do
    local root = P:find(c)
    if not roots[root] then
      roots[root] = true
      if P.fixed[root] then dev[root] = P.fixed[root] else free[#free + 1] = root end
    end
  end
  local reads = {}
  for i, rd in ipairs(P.reads) do
    reads[i] = {value = rd.value, bytes = rd.bytes, from = P:find(rd.from), at = P:find(rd.at)}
  end
  -- a copy per value, device it is copied from and device it is copied to
  local best, nd = math.huge, prog.devices or 2
  for mask = 0, nd ^ #free - 1 do
    local m = math.tointeger(mask)
    for _, root in ipairs(free) do dev[root] = m % nd + 1; m = m // nd end
    local cost, seen = 0, {}
    for _, rd in ipairs(reads) do
      local a, b = dev[rd.from], dev[rd.at]
      if a ~= b then
        local per = seen[rd.value] or {}
        seen[rd.value] = per
        if not per[a * 8 + b] then per[a * 8 + b] = true; cost = cost + rd.bytes end
      end
    end
    if cost < best then best = cost end
  end
  return best, #free
end

return M
