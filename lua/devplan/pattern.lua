-- dp.pattern: the dataflow pattern language (TVM's, with the feel of LPeg).
--
-- A pattern is a small value built in Lua and composed with operators and
-- methods; the first match compiles it to a C program (src/pattern), and
-- matching runs in C with explicit stacks. Where a pattern is expected, a
-- string is the operator of that name and a function a predicate on any
-- expression, as LPeg coerces its operands: P.call("nn.relu", {x}),
-- conv + "nn.dense". Not to be confused with the
-- match-clause patterns of dp.pat (ADTs, `match` expressions).
--
--   local P = dp.pattern
--   local conv = P.op("nn.conv2d")(P.wild(), P.const())
--   local p = P.op("nn.relu")(conv:optional(function(x) return P.op("nn.bias_add")(x, P.wild()) end))
--   tostring(p)   --> nn.relu(nn.conv2d(_, const) + nn.bias_add(nn.conv2d(_, const), _))
--   local m = p:match(e)       -- nil, or pattern -> the expression it matched
--
-- Semantics are TVM's (../shared/conformance/patterns/README.md): a pattern
-- value used twice is one node and matches one expression; add and
-- multiply are commutative; attributes compare with operator defaults; a
-- match is at the root of the expression. Errors in a pattern (a wrong
-- argument) are raised when it is built.
local core = require "devplan.core"
local ir = require "devplan.ir"
local parser = require "devplan.parser"

local C = core.pattern
local error, getmetatable, ipairs, pairs, pcall, rawequal = error, getmetatable, ipairs, pairs, pcall, rawequal
local setmetatable, tostring, type = setmetatable, tostring, type
local math, table = math, table
_ENV = nil -- no global is read or written below this line

local M = {}

local Pattern = {__name = "devplan.DFPattern"}
local methods = {}
Pattern.__index = methods

local function is_pattern(v) return getmetatable(v) == Pattern end
M.is_pattern = is_pattern

local function new(t) return setmetatable(t, Pattern) end

-- v as a pattern, coerced as LPeg coerces an operand: a string is the
-- operator of that name (P.op), a function a predicate on any expression
-- (P.wild():where(f)).
local function check_pattern(v, who, what, level)
  if type(v) == "string" then
    local ok, p = pcall(M.op, v)
    if not ok then error(("%s: %s: %s"):format(who, what, tostring(p)), level + 1) end
    return p
  end
  if type(v) == "function" then return M.wild():where(v) end
  if not is_pattern(v) then
    error(("%s: %s must be a pattern (dp.pattern), got %s"):format(who, what, type(v)), level + 1)
  end
  return v
end

-- A list of patterns, or nil (any number).
local function check_list(list, who, what, level)
  if list == nil then return nil end
  if type(list) ~= "table" or is_pattern(list) then
    error(("%s: %s must be a list of patterns or nil, got %s"):format(who, what, type(list)), level + 1)
  end
  local out = {}
  for i = 1, #list do out[i] = check_pattern(list[i], who, what .. "[" .. i .. "]", level + 1) end
  return out
end

---------------------------------------------------------------------------------------
-- Leaves
---------------------------------------------------------------------------------------

-- Anything; one wildcard value used twice matches one expression.
function M.wild() return new{kind = "wild"} end

-- A local variable: any, or the one named `name` (without the %).
function M.var(name)
  if name ~= nil and (type(name) ~= "string" or name == "" or name:sub(1, 1) == "%") then
    error("dp.pattern.var: the name must be a non-empty string without '%'", 2)
  end
  return new{kind = "var", name = name}
end

-- A constant (scalar literal or tensor constant).
function M.const() return new{kind = "const"} end

-- An expression structurally equal to e (a variable: that very variable).
function M.expr(e)
  if not ir.is_expr(e) then error("dp.pattern.expr: an expression expected, got " .. type(e), 2) end
  return new{kind = "expr", expr = e}
end

-- The operator itself (as a callee): P.op("add")(x, y) is a call of it.
function M.op(name)
  if type(name) ~= "string" then error("dp.pattern.op: an operator name expected, got " .. type(name), 2) end
  return new{kind = "op", name = name, op = core.op.get(name)} -- unknown names raise
end

local KINDS = {elemwise = 0, broadcast = 1, injective = 2, comm_reduce = 3,
               out_elemwise_fusable = 4, tuple = 7, opaque = 8}

-- Any operator of one of these pattern kinds (TVM's TOpPattern):
-- P.op_kind("elemwise")(x) is a call of any elementwise operator.
function M.op_kind(...)
  local kinds = table.pack(...)
  if kinds.n == 0 then error("dp.pattern.op_kind: at least one operator pattern kind expected", 2) end
  for i = 1, kinds.n do
    local k = kinds[i]
    if k == nil or KINDS[k] == nil then
      error(("dp.pattern.op_kind: argument %d: unknown operator pattern kind %s (elemwise, broadcast, "
        .. "injective, comm_reduce, out_elemwise_fusable, tuple, opaque)"):format(i, tostring(k)), 2)
    end
  end
  kinds.n = nil
  return new{kind = "opkind", kinds = kinds}
end

---------------------------------------------------------------------------------------
-- Structure
---------------------------------------------------------------------------------------

-- A call of callee with exactly these arguments (args nil: any number).
function M.call(callee, args)
  callee = check_pattern(callee, "dp.pattern.call", "the callee", 2)
  return new{kind = "call", callee = callee, args = check_list(args, "dp.pattern.call", "args", 2)}
end

-- p(a, b): a call of p with exactly these arguments.
function Pattern.__call(p, ...)
  local args = table.pack(...)
  for i = 1, args.n do args[i] = check_pattern(args[i], "calling a pattern", "argument " .. i, 2) end
  args.n = nil
  return new{kind = "call", callee = p, args = args}
end

-- A tuple of exactly these fields (nil: any tuple).
function M.tuple(fields)
  return new{kind = "tuple", fields = check_list(fields, "dp.pattern.tuple", "fields", 2)}
end

-- A projection t.i of a tuple matching p (i from 0; nil: any index).
function M.proj(p, index)
  p = check_pattern(p, "dp.pattern.proj", "the tuple", 2)
  if index ~= nil and (math.type(index) ~= "integer" or index < 0) then
    error("dp.pattern.proj: the index must be an integer >= 0 or nil", 2)
  end
  return new{kind = "proj", tuple = p, index = index}
end

-- A function literal with exactly these parameters (nil: any) and body.
function M.fn(params, body)
  params = check_list(params, "dp.pattern.fn", "params", 2)
  return new{kind = "fn", params = params, body = check_pattern(body, "dp.pattern.fn", "the body", 2)}
end

function M.if_(c, t, e)
  return new{kind = "if", cond = check_pattern(c, "dp.pattern.if_", "the condition", 2),
             then_ = check_pattern(t, "dp.pattern.if_", "the then branch", 2),
             else_ = check_pattern(e, "dp.pattern.if_", "the else branch", 2)}
end

function M.let(v, value, body)
  return new{kind = "let", var = check_pattern(v, "dp.pattern.let", "the variable", 2),
             value = check_pattern(value, "dp.pattern.let", "the value", 2),
             body = check_pattern(body, "dp.pattern.let", "the body", 2)}
end

-- Matches e when child matches e, every path from e back toward its
-- inputs goes through nodes matching path until it meets one node matching
-- parent, and e post-dominates that node (TVM's DominatorPattern).
function M.dominates(parent, path, child)
  return new{kind = "dominates",
             parent = check_pattern(parent, "dp.pattern.dominates", "the parent", 2),
             path = check_pattern(path, "dp.pattern.dominates", "the path", 2),
             child = check_pattern(child, "dp.pattern.dominates", "the child", 2)}
end

-- The sub-patterns of p that match the very expression p matches (the
-- others match its children, its inputs, or nodes before it).
local function same_expression(p)
  local k = p.kind
  if k == "alt" then return {p.left, p.right}
  elseif k == "attr" or k == "type" or k == "dtype" or k == "shape" or k == "where"
      or k == "capture" then
    return {p.pattern}
  elseif k == "dominates" then return {p.child}
  elseif k == "rec" then return {p.body}
  elseif k == "ref" then return {p.target}
  end
  return {}
end

-- Does r come back to itself at the same expression (left recursion, which
-- would make matching loop)? A walk with an explicit stack: a pattern may
-- be as deep as the user built it.
local function left_recursive(r)
  local seen, stack = {}, {r.body}
  while #stack > 0 do
    local q = table.remove(stack)
    if rawequal(q, r) then return true end
    if not seen[q] then
      seen[q] = true
      for _, kid in ipairs(same_expression(q)) do stack[#stack + 1] = kid end
    end
  end
  return false
end

-- A recursive pattern: f receives the pattern being defined and returns
-- its body; P.rec(function(self) return P.op("cast")(self + dense) end)
-- matches a chain of casts ending in a dense. As in LPeg, the body must
-- match a sub-expression before it refers to the pattern again: a left
-- recursive body (self, self + q, q + self, self:where(f), ...) could
-- never finish matching, and compiling it (its first match, find or
-- rewrite, or a pass given it) is a devplan.Error naming it.
function M.rec(f)
  if type(f) ~= "function" then error("dp.pattern.rec: a function(self) expected, got " .. type(f), 2) end
  local r = new{kind = "rec"}
  local ref = new{kind = "ref", target = r}
  r.ref = ref
  r.body = check_pattern(f(ref), "dp.pattern.rec", "the result of the function", 2)
  r.left_recursive = left_recursive(r)
  return r
end

---------------------------------------------------------------------------------------
-- Combinators and predicates
---------------------------------------------------------------------------------------

-- p1 + p2: p1, or else p2 (ordered, as in LPeg).
function Pattern.__add(a, b)
  a = check_pattern(a, "pattern + pattern", "the left side", 2)
  b = check_pattern(b, "pattern + pattern", "the right side", 2)
  return new{kind = "alt", left = a, right = b}
end

-- p + f(p): f builds the larger pattern from p (a pattern q stands for q(p)).
function methods.optional(p, f)
  local wrapper
  if type(f) == "string" then f = check_pattern(f, "pattern:optional", "the operator", 2) end
  if is_pattern(f) then wrapper = f(p)
  elseif type(f) == "function" then
    wrapper = check_pattern(f(p), "pattern:optional", "the result of the function", 2)
  else
    error("pattern:optional: a function(p) or a pattern expected, got " .. type(f), 2)
  end
  return p + wrapper
end

-- Attributes of the call (operator defaults included), of the operator
-- (TOpPattern), or of the function literal.
function methods.has_attr(p, attrs)
  if type(attrs) ~= "table" or is_pattern(attrs) then
    error("pattern:has_attr: a table of attributes expected, got " .. type(attrs), 2)
  end
  for k in pairs(attrs) do
    if type(k) ~= "string" then error("pattern:has_attr: attribute names must be strings", 2) end
  end
  local ok, why = pcall(C.check_attrs, attrs)
  if not ok then error("pattern:has_attr: " .. tostring(why), 2) end
  return new{kind = "attr", pattern = p, attrs = attrs}
end

-- The checked type is t (a Type or its text).
function methods.has_type(p, t)
  if type(t) == "string" then t = parser.parse_type(t) end
  if not ir.is_type(t) then error("pattern:has_type: a Type or its text expected, got " .. type(t), 2) end
  return new{kind = "type", pattern = p, type = t}
end

function methods.has_dtype(p, dtype)
  if type(dtype) ~= "string" or not pcall(core.type.scalar, dtype) then
    error("pattern:has_dtype: a dtype such as \"float32\" expected, got " .. tostring(dtype), 2)
  end
  return new{kind = "dtype", pattern = p, dtype = dtype}
end

function methods.has_shape(p, shape)
  if type(shape) ~= "table" then error("pattern:has_shape: a list of dimensions expected", 2) end
  local dims = {}
  for i = 1, #shape do
    if math.type(shape[i]) ~= "integer" then
      error("pattern:has_shape: dimensions must be integers (-1 for ?)", 2)
    end
    dims[i] = shape[i]
  end
  return new{kind = "shape", pattern = p, shape = dims}
end

-- p:dominates(parent, path?) is dp.pattern.dominates(parent, path or wild, p).
function methods.dominates(p, parent, path)
  return M.dominates(parent, path or M.wild(), p)
end

-- A Lua predicate on the matched expression, after p matched it.
function methods.where(p, f)
  if type(f) ~= "function" then error("pattern:where: a function(e) expected, got " .. type(f), 2) end
  return new{kind = "where", pattern = p, pred = f}
end

-- A named capture: the expression p matched, read as captures[name].
function methods.as(p, name)
  if type(name) ~= "string" or name == "" then error("pattern:as: a name (string) expected", 2) end
  return new{kind = "capture", pattern = p, name = name}
end

---------------------------------------------------------------------------------------
-- Printing
---------------------------------------------------------------------------------------

local function value_text(v)
  if type(v) == "string" then return ("%q"):format(v) end
  if type(v) == "table" and getmetatable(v) == nil then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = value_text(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return tostring(v)
end

local function attrs_text(attrs)
  local keys = {}
  for k in pairs(attrs) do keys[#keys + 1] = k end
  table.sort(keys)
  for i, k in ipairs(keys) do keys[i] = k .. "=" .. value_text(attrs[k]) end
  return "{" .. table.concat(keys, ", ") .. "}"
end

-- The pieces of p's text, in order: strings, and sub-patterns to print in
-- their place. names: the rec patterns named so far.
local function pieces(p, names)
  local k = p.kind
  local function list(items, out)
    for i, q in ipairs(items) do
      if i > 1 then out[#out + 1] = ", " end
      out[#out + 1] = q
    end
    return out
  end
  if k == "wild" then return {"_"}
  elseif k == "var" then return {p.name and ("%" .. p.name) or "var"}
  elseif k == "const" then return {"const"}
  elseif k == "expr" then return {(tostring(p.expr):gsub("%s*\n%s*", " "))}
  elseif k == "op" then return {p.name}
  elseif k == "opkind" then return {"<" .. table.concat(p.kinds, "|") .. ">"}
  elseif k == "call" then
    if not p.args then return {p.callee, "(...)"} end
    local out = list(p.args, {p.callee, "("})
    out[#out + 1] = ")"
    return out
  elseif k == "tuple" then
    if not p.fields then return {"(...)"} end
    local out = list(p.fields, {"("})
    out[#out + 1] = #p.fields == 1 and ",)" or ")"
    return out
  elseif k == "proj" then return {p.tuple, "." .. (p.index or "?")}
  elseif k == "fn" then
    local out = p.params and list(p.params, {"fn("}) or {"fn(..."}
    out[#out + 1] = ") { "
    out[#out + 1] = p.body
    out[#out + 1] = " }"
    return out
  elseif k == "if" then return {"if (", p.cond, ") { ", p.then_, " } else { ", p.else_, " }"}
  elseif k == "let" then return {"let ", p.var, " = ", p.value, "; ", p.body}
  elseif k == "alt" then
    if p.right.kind == "alt" then return {p.left, " + (", p.right, ")"} end
    return {p.left, " + ", p.right}
  elseif k == "attr" then return {p.pattern, ":has_attr" .. attrs_text(p.attrs)}
  elseif k == "type" then return {p.pattern, ":has_type(" .. tostring(p.type) .. ")"}
  elseif k == "dtype" then return {p.pattern, ":has_dtype(" .. p.dtype .. ")"}
  elseif k == "shape" then
    local dims = {}
    for i, d in ipairs(p.shape) do dims[i] = d < 0 and "?" or tostring(d) end
    return {p.pattern, ":has_shape{" .. table.concat(dims, ", ") .. "}"}
  elseif k == "dominates" then return {"dominates(", p.parent, ", ", p.path, ", ", p.child, ")"}
  elseif k == "where" then return {p.pattern, ":where(...)"}
  elseif k == "capture" then return {p.name .. "=", p.pattern}
  elseif k == "ref" then return {names[p.target] or "(enclosing rec)"}
  elseif k == "rec" then
    names.n = (names.n or 0) + 1
    names[p] = "R" .. names.n
    return {"rec " .. names[p] .. " = ", p.body}
  end
  return {"<" .. tostring(k) .. ">"}
end

-- p's text: pieces expanded with an explicit stack, in order, and joined
-- once (a chain of 100,000 alternatives prints in linear time, at any depth).
local function text(p)
  local out, names, stack = {}, {}, {p}
  while #stack > 0 do
    local item = stack[#stack]
    stack[#stack] = nil
    if type(item) == "string" then
      out[#out + 1] = item
    else
      local ps = pieces(item, names)
      for i = #ps, 1, -1 do stack[#stack + 1] = ps[i] end
    end
  end
  return table.concat(out)
end

function Pattern.__tostring(p) return text(p) end

---------------------------------------------------------------------------------------
-- Compiling
---------------------------------------------------------------------------------------

-- The sub-patterns of p, in the order the C program takes them.
local function kids_of(p)
  local k = p.kind
  if k == "call" then
    local out = {p.callee}
    for _, a in ipairs(p.args or {}) do out[#out + 1] = a end
    return out
  elseif k == "tuple" then return p.fields or {}
  elseif k == "proj" then return {p.tuple}
  elseif k == "fn" then
    local out = {}
    for _, q in ipairs(p.params or {}) do out[#out + 1] = q end
    out[#out + 1] = p.body
    return out
  elseif k == "if" then return {p.cond, p.then_, p.else_}
  elseif k == "let" then return {p.var, p.value, p.body}
  elseif k == "alt" then return {p.left, p.right}
  elseif k == "attr" or k == "type" or k == "dtype" or k == "shape" or k == "where"
      or k == "capture" then
    return {p.pattern}
  elseif k == "dominates" then return {p.parent, p.path, p.child}
  elseif k == "rec" then return {p.body}
  elseif k == "ref" then return {p.target}
  end
  return {}
end

local C_KIND = {wild = "wild", var = "var", const = "const", expr = "expr", op = "op",
  call = "call", tuple = "tuple", proj = "proj", fn = "fn", ["if"] = "if", let = "let",
  alt = "alt", attr = "attr", type = "type", dtype = "dtype", shape = "shape",
  dominates = "dominates", where = "where", capture = "use", rec = "use", ref = "use",
  opkind = "opkind"}

local compiled = setmetatable({}, {__mode = "k"})

-- The C program of p (compiled once; patterns never change).
local function compile(p)
  local prog = compiled[p]
  if prog then return prog end
  if not is_pattern(p) then error("dp.pattern.compile: a pattern expected, got " .. type(p), 2) end
  local index, order = {}, {}
  local stack = {p}
  index[p] = 1
  order[1] = p
  while #stack > 0 do
    local q = table.remove(stack)
    for _, kid in ipairs(kids_of(q)) do
      if not index[kid] then
        order[#order + 1] = kid
        index[kid] = #order
        stack[#stack + 1] = kid
      end
    end
  end
  for _, q in ipairs(order) do
    if q.kind == "rec" and q.left_recursive then
      local shown = tostring(q)
      if #shown > 200 then shown = shown:sub(1, 200) .. "..." end
      C.raise("value", ("dp.pattern: %s is left recursive: %s can come back to itself at the same "
        .. "expression before matching any sub-expression, so matching it would never end (refer to "
        .. "the pattern only inside a call, tuple, projection, function, if or let pattern)")
        :format(shown, shown:match("^rec (R%d+)") or "it"))
    end
  end
  local descs, values, names = {}, {}, {}
  for i, q in ipairs(order) do
    values[i] = q
    if q.kind == "capture" then names[i] = q.name end
    local kids = {}
    for j, kid in ipairs(kids_of(q)) do kids[j] = index[kid] end
    descs[i] = {kind = C_KIND[q.kind], kids = kids, any = false}
  end
  for i, q in ipairs(order) do
    local d = descs[i]
    local k = q.kind
    if k == "var" then d.name = q.name
    elseif k == "expr" then d.expr = q.expr
    elseif k == "op" then d.expr = q.op
    elseif k == "call" then d.any = q.args == nil
    elseif k == "tuple" then d.any = q.fields == nil
    elseif k == "fn" then d.any = q.params == nil
    elseif k == "proj" then d.index = q.index
    elseif k == "attr" then d.attrs = q.attrs
    elseif k == "type" then d.type = q.type
    elseif k == "dtype" then d.dtype = q.dtype
    elseif k == "shape" then d.shape = q.shape
    elseif k == "where" then d.pred = q.pred
    elseif k == "opkind" then
      d.kinds = 0
      for _, kind in ipairs(q.kinds) do d.kinds = d.kinds | (1 << KINDS[kind]) end
    end
  end
  prog = C.compile(descs, 1, {values = values, names = names})
  compiled[p] = prog
  return prog
end
M.compile = compile

---------------------------------------------------------------------------------------
-- Matching
---------------------------------------------------------------------------------------

-- Does p match e at its root? nil, or the captures: each pattern value ->
-- the expression it matched, each name of p:as(name) -> its expression.
function methods.match(p, e)
  if not ir.is_expr(e) then error("pattern:match: an expression expected, got " .. type(e), 2) end
  return compile(p):match(e)
end

-- Every match in x (an expression, or each function of a module), in
-- post order: a list of captures, each with its root at [p].
function methods.find(p, x)
  local prog = compile(p)
  if ir.is_expr(x) then return prog:find(x) end
  if not ir.is_module(x) then error("pattern:find: an expression or a module expected, got " .. type(x), 2) end
  local out = {}
  for _, f in ipairs(x:functions()) do
    for _, m in ipairs(prog:find(f[2])) do out[#out + 1] = m end
  end
  return out
end

---------------------------------------------------------------------------------------
-- Rewriting
---------------------------------------------------------------------------------------

local function rule_name(i, p) return ("rule %d (%s)"):format(i, tostring(p)) end

local function check_rules(rules, who)
  if type(rules) ~= "table" then error(who .. ": a list of {pattern, function} rules expected", 3) end
  local out = {}
  for i, r in ipairs(rules) do
    if type(r) ~= "table" then error(("%s: rule %d must be {pattern, function}"):format(who, i), 3) end
    local p, f = r[1], r[2]
    p = check_pattern(p, who, "the pattern of rule " .. i, 3)
    if type(f) ~= "function" then
      error(("%s: rule %d needs a function(captures) returning the replacement"):format(who, i), 3)
    end
    out[i] = {pattern = p, fn = f, prog = compile(p), what = who .. " " .. rule_name(i, p)}
  end
  return out
end

-- One pass of one rule over body: every group (TVM's grouping) replaced
-- by what the rule's function returns for its captures.
local function apply(rule, body)
  local groups = rule.prog:groups(body, nil, rule.what)
  if #groups == 0 then return body end
  local ok, r = pcall(groups.replace, groups, function(_, rebuilt, captures)
    return rule.fn(captures, rebuilt)
  end)
  if not ok then
    if core.is_error(r) and r.code == "memory" then error(r, 0) end -- the library's, not the rule's
    C.raise("callback", rule.what .. ": " .. tostring(r))
  end
  return r
end

local function rewrite_body(body, rules, opts, on_round)
  local rounds = 0
  repeat
    local last = body
    for _, rule in ipairs(rules) do
      body = apply(rule, body)
      body = on_round(body)
    end
    rounds = rounds + 1
    local same = rawequal(last, body) or core.structural_equal(last, body)
    if not same and not opts.once and rounds >= opts.max_rounds then
      C.raise("value", ("dp.pattern.rewrite: no fixed point after %d rounds (rules that undo each "
        .. "other?); pass {max_rounds = n} to allow more"):format(rounds))
    end
  until same or opts.once
  return body
end

-- dp.pattern.rewrite(x, {{pattern, function(captures, rebuilt) return e or nil end}, ...}, opts?)
-- x: an expression or a module. Applies the rules in order, again and
-- again, until nothing changes (TVM's rewrite). opts: once = true (one
-- round), max_rounds (default 100). A typed module is typed again after
-- each rule that changed it.
function M.rewrite(x, rules, opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("dp.pattern.rewrite: options must be a table", 2) end
  local o = {once = opts.once == true, max_rounds = opts.max_rounds or 100}
  if math.type(o.max_rounds) ~= "integer" or o.max_rounds < 1 then
    error("dp.pattern.rewrite: max_rounds must be an integer >= 1", 2)
  end
  local rs = check_rules(rules, "dp.pattern.rewrite")
  if ir.is_expr(x) then return rewrite_body(x, rs, o, function(b) return b end) end
  if not ir.is_module(x) then error("dp.pattern.rewrite: an expression or a module expected, got " .. type(x), 2) end
  local mod = x
  for _, f in ipairs(x:functions()) do
    local name = f[1]
    local typed = f[2].checked_type ~= nil
    local body = rewrite_body(f[2].body, rs, o, function(b)
      if rawequal(b, mod[name].body) then return b end
      mod = mod:with_function(name, C.with_body(mod[name], b))
      if typed then core.infer_expr(mod[name], mod) end
      return mod[name].body
    end)
    if not rawequal(body, mod[name].body) then mod = mod:with_function(name, C.with_body(mod[name], body)) end
  end
  return mod
end

return M
