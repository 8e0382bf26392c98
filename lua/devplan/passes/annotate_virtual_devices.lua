-- AnnotateVirtualDevices: device rules per operator, per operator pattern
-- kind, per Composite function, per global function, or for every call.
-- Each call a rule applies to is wrapped in on_device(call,
-- virtual_device=vd); the planner then places everything else. The module
-- is walked once in C (src/pattern/annotate_calls.c): only the calls a
-- rule names reach Lua, and the annotated module keeps its types.
--
--   local annotate = dp.passes.AnnotateVirtualDevices{
--     ["nn.conv2d"] = function(call) return gpu end,      -- one operator
--     ["kind:elemwise"] = function(call) return gpu end,  -- any elementwise operator
--     ["Composite:dnnl.conv2d_relu"] = function(call) return npu end, -- MergeComposite's calls
--     ["@helper"] = function(call) return cpu end,         -- calls of a global function
--     ["*"] = function(call) return cpu end,              -- any other call
--   }
--   local annotated = annotate(mod)
--
-- The most specific rule decides: for an operator call its own rule, else
-- its kind's ("kind:" .. TOpPattern name: elemwise, broadcast, injective,
-- comm_reduce, out_elemwise_fusable, tuple, opaque); for a call of a
-- function literal with a Composite attribute "Composite:" .. its name; for
-- a call of a global "@" .. its name; then "*", for any call (of an
-- operator, a function literal, a local variable, a global) but those of
-- on_device and device_copy, which only their own rules name, and of
-- constructors (data, as tuples are). A rule gets the call as it is in the
-- module, type-checked (call.args[i].checked_type: TVM's FTVMAnnotateTarget
-- checkers read dtypes and shapes). Calls inside a Composite or Primitive
-- function are part of it and are never annotated on their own.
--
-- Annotations compose: a call whose device earlier annotations decided is
-- left alone, as the first pass that placed it decided (BYOC's target
-- priority): the body of an on_device with a device (constrain_body, the
-- default), and an operator call reading a value fixed on a device (an
-- on_device with constrain_result=True, a device_copy, another such call:
-- an operator runs where its arguments are; so are MergeAndAnnotate's
-- groups). "Annotate for A, then for B, then the rest on the host" is three
-- passes in a row, and a pass run twice changes nothing.
--
-- A rule returns:
--   nil                 leave the call alone;
--   a VirtualDevice     place the call there;
--   dp.soft(vd, w)      a soft annotation: on_device(call, virtual_device=vd, soft=w), a
--                       preference of weight w (seconds under the latency placement,
--                       bytes under min_bytes) that a placement by cost breaks only where
--                       that saves more than w; TVM's rules keep it as an annotation;
--   {vd1, vd2, ...}     candidates in order of preference (RFC 0038): the
--                       call goes to the first one the planner accepts
--                       without a conflict, given the other annotations
--                       (dp.planner.analyze of the module, then d:constrain
--                       of each call's candidates in program order). This
--                       needs the configuration: {config = cfg} as the
--                       pass's options, or ctx.config in the pass context.
-- annotate.resolve(mod, ctx?) returns the annotated module and the
-- decisions (one per call with candidates, in program order: {call =,
-- device =, index =, rejected = {{device =, why =}, ...}, text =});
-- annotate.explain(mod, call, ctx?) the decision about one call of mod (nil
-- when no rule gave it candidates), whose text says which candidate won
-- and why. annotate.capability(call, vd) reads the rules as a capability for
-- PlanDevices' placement = "min_bytes" (below).
local core = require "devplan.core"
local ir = require "devplan.ir"
local pass = require "devplan.pass"

local error, getmetatable, ipairs, pairs, pcall, rawequal, setmetatable =
  error, getmetatable, ipairs, pairs, pcall, rawequal, setmetatable
local tostring, type = tostring, type
local math, table = math, table
_ENV = nil -- no global is read or written below this line

local M = {}

-- dp.soft(vd, weight): what a rule returns for a soft annotation.
local Soft = {__name = "devplan.Soft"}
Soft.__index = Soft
function Soft.__tostring(s) return "soft(" .. tostring(s.device) .. ", " .. tostring(s.weight) .. ")" end

function M.soft(vd, weight)
  if not ir.is_virtual_device(vd) then
    error("devplan.soft: a VirtualDevice expected, got " .. type(vd), 2)
  end
  if type(weight) ~= "number" or not (weight >= 0) or weight == math.huge then
    error("devplan.soft: the weight must be a number >= 0 (seconds under the latency placement, "
      .. "bytes under min_bytes), got " .. tostring(weight), 2)
  end
  if vd.device_type == 0 then
    error("devplan.soft: a soft annotation names a device type", 2)
  end
  return setmetatable({device = vd, weight = weight}, Soft)
end

function M.is_soft(v) return getmetatable(v) == Soft end

local KINDS = {elemwise = true, broadcast = true, injective = true, comm_reduce = true,
               out_elemwise_fusable = true, tuple = true, opaque = true}

local function check_rules(rules, level)
  if type(rules) ~= "table" then
    error("AnnotateVirtualDevices: a table of operator name -> function expected, got " .. type(rules), level + 1)
  end
  for name, rule in pairs(rules) do
    if type(name) ~= "string" then
      error("AnnotateVirtualDevices: rule keys are operator names, \"kind:<kind>\", \"Composite:<name>\", "
        .. "\"@<global>\" or \"*\"", level + 1)
    end
    local kind = name:match("^kind:(.*)$")
    if name:match("^Composite:.") or name:match("^@.") then
      -- a Composite function's name or a global's: any name may appear later
    elseif kind then
      if not KINDS[kind] then
        error("AnnotateVirtualDevices: unknown operator pattern kind '" .. kind .. "' in rule '" .. name
          .. "' (elemwise, broadcast, injective, comm_reduce, out_elemwise_fusable, tuple, opaque)", level + 1)
      end
    elseif name ~= "*" then
      core.op.get(name) -- raises a "name" error for an unknown operator
    end
    if type(rule) ~= "function" then
      error("AnnotateVirtualDevices: the rule for '" .. name .. "' must be a function", level + 1)
    end
  end
end

local DEVICE_OPS = {on_device = true, device_copy = true}

-- The Composite attribute of a function literal, or nil.
local function composite_of(fn)
  local c = fn.attrs and fn.attrs.Composite
  return c ~= nil and tostring(c) or nil
end

-- The rule for a call (and its key), or nil.
local function rule_for(rules, call)
  local callee = call.callee
  local kind = callee.kind
  if kind == "op" then
    local own = rules[callee.name]
    if own then return own, callee.name end
    if DEVICE_OPS[callee.name] then return nil end
    local pk = callee.pattern and "kind:" .. callee.pattern
    if pk and rules[pk] then return rules[pk], pk end
  elseif kind == "fn" then
    local comp = composite_of(callee)
    local key = comp and "Composite:" .. comp
    if key and rules[key] then return rules[key], key end
  elseif kind == "global" then
    local key = "@" .. callee.name
    if rules[key] then return rules[key], key end
  elseif kind == "ctor" then
    return nil -- data, as a tuple
  end
  if rules["*"] then return rules["*"], "*" end
  return nil
end

-- What a call is, for messages: "add", "Composite:x", "@f", "a call of %f".
local function call_name(call)
  local c = call.callee
  if c.kind == "op" then return c.name end
  if c.kind == "global" then return "@" .. c.name end
  if c.kind == "fn" then
    local comp = composite_of(c)
    return comp and ("Composite:" .. comp) or "a call of a function"
  end
  if c.kind == "var" then return "a call of %" .. c.name end
  return "a call"
end

-- What a rule returned: a device, a list of candidates, or nil.
local function devices_of(r, key, call)
  if r == nil or ir.is_virtual_device(r) or getmetatable(r) == Soft then return r end
  if type(r) == "table" and getmetatable(r) == nil then
    for i, vd in ipairs(r) do
      if not ir.is_virtual_device(vd) then
        error(("AnnotateVirtualDevices: candidate %d of the rule '%s' (for %s) is not a VirtualDevice")
          :format(i, key, call_name(call)), 0)
      end
    end
    if #r == 0 then return nil end
    if #r == 1 then return r[1] end
    return r
  end
  error(("AnnotateVirtualDevices: the rule '%s' (for %s) must return a VirtualDevice, a list of them, "
    .. "dp.soft(vd, weight) or nil, got %s"):format(key, call_name(call), type(r)), 0)
end

local function where(call)
  local s = call.span
  return call_name(call) .. (s and (" at " .. s.line .. ":" .. s.col) or "")
end

local function first_line(err)
  local msg = type(err) == "table" and (err.message or err.formatted) or tostring(err)
  return (tostring(msg):match("^[^\n]*"))
end

-- The first candidate of each call the planner's analysis accepts, in
-- program order, each constraining the next.
local function weigh(mod, pending, cfg)
  local ok, d = pcall(core.planner.analyze, mod, cfg)
  if not ok then
    if core.is_error(d) and d.code == "memory" then error(d, 0) end -- not about the candidates
    core.pattern.raise("value", "AnnotateVirtualDevices: cannot weigh candidates, the annotated module "
      .. "does not plan: " .. first_line(d))
  end
  local decisions = {}
  for _, p in ipairs(pending) do
    local dec = {call = p.original, rejected = {}}
    for i, vd in ipairs(p.list) do
      local took, why = pcall(d.constrain, d, p.call, vd)
      if took then
        dec.device, dec.index = vd, i
        break
      end
      if core.is_error(why) and why.code == "memory" then error(why, 0) end -- not a conflict
      dec.rejected[#dec.rejected + 1] = {device = vd, why = first_line(why)}
    end
    local parts = {}
    for _, r in ipairs(dec.rejected) do
      parts[#parts + 1] = ("candidate %d (%s) conflicts: %s"):format(#parts + 1, tostring(r.device), r.why)
    end
    if dec.device then
      dec.text = ("%s runs on %s, candidate %d of %d"):format(where(p.call), tostring(dec.device),
        dec.index, #p.list)
      if #parts > 0 then dec.text = dec.text .. ": " .. table.concat(parts, "; ") end
    else
      dec.text = ("%s: no candidate fits (%s); left to the planner"):format(where(p.call),
        table.concat(parts, "; "))
    end
    decisions[#decisions + 1] = dec
  end
  return decisions
end

-- Has every function of mod its checked type?
local function typed(mod)
  for _, f in ipairs(mod:functions()) do
    if f[2].checked_type == nil then return false end
  end
  return true
end

-- A function literal that is one unit: its calls are not placed on their own.
local function is_unit(fn)
  return fn.attrs ~= nil and (fn.attrs.Composite ~= nil or fn.attrs.Primitive == 1)
end

-- The calls whose device earlier annotations decided already, as a set
-- (MergeAndAnnotate reads it; the pass finds the same calls in its C walk):
-- the body of an on_device that names a device and constrains its body (the
-- default); and an operator call reading a value whose device is fixed (an
-- on_device with constrain_result=True, a device_copy's result, another
-- such call): an operator runs where its arguments are, so planning puts it
-- there (MergeAndAnnotate's groups are read this way: their inputs are fixed
-- on the group's device, their calls read them and each other).
local function already_placed(mod)
  return core.annotate_placed(mod)
end

M.already_placed = already_placed

-- The pass for `rules`; opts: {config = CompilationConfig} for candidates.
function M.new(rules, opts)
  check_rules(rules, 2)
  if opts ~= nil and type(opts) ~= "table" then
    error("AnnotateVirtualDevices: options must be a table {config =}, got " .. type(opts), 2)
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "config" then error("AnnotateVirtualDevices: unknown option '" .. tostring(k) .. "'", 2) end
  end
  if opts.config ~= nil and not ir.is_config(opts.config) then
    error("AnnotateVirtualDevices: config must be a CompilationConfig, got " .. type(opts.config), 2)
  end

  local function resolve(mod, ctx)
    if not ir.is_module(mod) then
      error("AnnotateVirtualDevices: a module expected, got " .. type(mod), 0)
    end
    -- rules read the calls' types: the module as the rules see it is type-checked
    if not typed(mod) then mod = core.infer_type(mod) end
    -- one walk in C: the calls earlier annotations placed are skipped, an
    -- operator's rule is found there, and only calls with a rule reach Lua
    local pending = {}
    local function take(r, key, original)
      r = devices_of(r, key, original)
      if r == nil or ir.is_virtual_device(r) then return r end
      if getmetatable(r) == Soft then return r.device, r.weight + 0.0 end
      pending[#pending + 1] = {original = original, list = r}
      return true
    end
    local out, later, untyped = core.annotate_calls(mod, rules, rule_for, take, is_unit)
    for i, call in ipairs(later) do pending[i].call = call end
    -- rebuilt nodes keep their types: inference again only for a module
    -- whose nodes were not all typed
    if untyped then out = core.infer_type(out) end
    if #pending == 0 then return out, {} end
    local cfg = opts.config or (ctx and ir.is_config(ctx.config) and ctx.config)
    if not cfg then
      core.pattern.raise("value", "AnnotateVirtualDevices: a rule returned candidates; weighing them needs "
        .. "the configuration: AnnotateVirtualDevices(rules, {config = config})")
    end
    local decisions = weigh(out, pending, cfg)
    local chosen, made = {}, {}
    for i, dec in ipairs(decisions) do chosen[pending[i].call] = dec end
    out = core.infer_type(core.rewrite(out, {
      call = function(call, original)
        local dec = chosen[original]
        if dec and dec.device then
          local annotation = core.call("on_device", {call}, {virtual_device = dec.device})
          made[#made + 1] = {annotation, dec}
          return annotation
        end
      end,
    }))
    -- each annotation carries its decision: dp.planner.explain says which
    -- candidate won and why where the annotation decides a device
    for _, m in ipairs(made) do
      core.planner.reason(out, m[1], "AnnotateVirtualDevices chose it: " .. m[2].text)
    end
    return out, decisions
  end

  local p = pass.new("AnnotateVirtualDevices", function(mod, ctx) return (resolve(mod, ctx)) end)
  p.resolve = resolve
  -- The rules as a capability for placement by cost (PlanDevices' option
  -- capability, with placement = "min_bytes"): a call may run on vd when its
  -- rule names vd or a device vd refines (one of its candidates), or when no
  -- rule names a device for it. Planning the module without this pass, the
  -- optimiser chooses among the candidates by bytes instead of taking the
  -- first that fits.
  function p.capability(call, vd)
    if not (ir.is_expr(call) and call.kind == "call") then
      core.pattern.raise("value", "AnnotateVirtualDevices.capability: argument 1 must be a call, got "
        .. (ir.is_expr(call) and ("a " .. call.kind) or type(call)))
    end
    if not ir.is_virtual_device(vd) then
      core.pattern.raise("value", "AnnotateVirtualDevices.capability: argument 2 must be a VirtualDevice, got " .. type(vd))
    end
    local rule, key = rule_for(rules, call)
    local r = rule and devices_of(rule(call), key, call)
    if r == nil or getmetatable(r) == Soft then return true end -- (a preference restricts nothing)
    if ir.is_virtual_device(r) then r = {r} end
    for _, c in ipairs(r) do
      local j = c:join(vd)
      if j and tostring(j) == tostring(vd) then return true end
    end
    return false
  end
  function p.explain(mod, call, ctx)
    local _, decisions = resolve(mod, ctx)
    for _, dec in ipairs(decisions) do
      if rawequal(dec.call, call) then return dec end
    end
    return nil
  end
  return p
end

return M
