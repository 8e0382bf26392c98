-- Relay text of the program trees fuzz/relaygen.lua makes (the tree is
-- described there), its items in any order.
local M = {}

local TENSOR = "Tensor[(5, 7), float32]"
local FN = "fn (" .. TENSOR .. ") -> " .. TENSOR

-- The text of each type key of the generator.
local TYPE_TEXT = {
  T = TENSOR,
  B = "bool",
  P = "(" .. TENSOR .. ", " .. TENSOR .. ")",
  P1 = "(" .. TENSOR .. ",)",
  P3 = "(" .. TENSOR .. ", " .. TENSOR .. ", " .. TENSOR .. ")",
  F = FN,
  L = "List[" .. TENSOR .. "]",
  O = "Opt[" .. FN .. "]",
  R = "ref(" .. TENSOR .. ")",
  M = "Storage[]",
  H = "Tensor[(2), int64]",
  I = "int64",
  U = "()",
  -- function types of relaygen_fn.lua: two parameters, and a function
  -- returning a function
  F2 = "fn (" .. TENSOR .. ", " .. TENSOR .. ") -> " .. TENSOR,
  FF = "fn (" .. TENSOR .. ") -> " .. FN,
}
M.TYPE_TEXT = TYPE_TEXT

-- The type key of a tuple of n tensors.
function M.tuple_type(n)
  return n == 2 and "P" or "P" .. n
end

local TYPEDEFS = "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\ntype Opt[A] {\n  Some(A),\n  Nothing,\n}\n"

local Printer = {}
Printer.__index = Printer

function Printer:list(exprs)
  local parts = {}
  for i, a in ipairs(exprs) do parts[i] = self:expr(a) end
  return parts
end

function Printer:pattern(p)
  if p.p == "wild" then return "_" end
  if p.p == "var" then return p.name end
  if #p.args == 0 then return p.name end
  local parts = {}
  for i, a in ipairs(p.args) do parts[i] = self:pattern(a) end
  return p.name .. "(" .. table.concat(parts, ", ") .. ")"
end

function Printer:match(e)
  local pad = ("  "):rep(self.indent + 1)
  local lines = {(e.partial and "match? (" or "match (") .. self:expr(e.data) .. ") {"}
  self.indent = self.indent + 1
  for _, c in ipairs(e.clauses) do
    local rhs = #c.body.stmts == 0 and self:expr(c.body.result) or self:block(c.body)
    lines[#lines + 1] = pad .. self:pattern(c.pat) .. " => " .. rhs .. ","
  end
  self.indent = self.indent - 1
  lines[#lines + 1] = ("  "):rep(self.indent + 1) .. "}"
  return table.concat(lines, "\n")
end

function Printer:expr(e)
  local k = e.k
  if k == "var" or k == "global" then return e.name end
  if k == "const" then return e.text end
  if k == "op" or k == "call" then
    local parts = self:list(e.args)
    if e.attrs then parts[#parts + 1] = e.attrs end
    local callee = k == "op" and e.op or self:expr(e.callee)
    if k == "call" and e.callee.k ~= "var" and e.callee.k ~= "global" then callee = "(" .. callee .. ")" end
    return callee .. "(" .. table.concat(parts, ", ") .. ")"
  end
  if k == "ctor" then
    if #e.args == 0 then return e.name end
    return e.name .. "(" .. table.concat(self:list(e.args), ", ") .. ")"
  end
  if k == "tuple" then
    return "(" .. table.concat(self:list(e.fields), ", ") .. (#e.fields == 1 and ",)" or ")")
  end
  if k == "proj" then
    local t = self:expr(e.tuple)
    if e.tuple.k ~= "var" then t = "(" .. t .. ")" end
    return t .. "." .. e.index
  end
  if k == "if" then
    return "if (" .. self:expr(e.cond) .. ") " .. self:block(e.then_) .. " else " .. self:block(e.else_)
  end
  if k == "fn" then
    return "fn (" .. self:params(e.params, nil, e.attrs) .. ") -> " .. (e.ret and TYPE_TEXT[e.ret] or TENSOR)
      .. " " .. self:block(e.body)
  end
  if k == "match" then return self:match(e) end
  error("relaygen: unknown expression kind " .. tostring(k))
end

function Printer:params(params, vd, attrs)
  local parts = {}
  for i, p in ipairs(params) do
    parts[i] = p.name .. (p.vd and (" {virtual_device=" .. p.vd .. "}") or "") .. ": " .. TYPE_TEXT[p.ty]
  end
  if vd then parts[#parts + 1] = "virtual_device=" .. vd end
  if attrs then parts[#parts + 1] = attrs end
  return table.concat(parts, ", ")
end

function Printer:block(b)
  self.indent = self.indent + 1
  local pad = ("  "):rep(self.indent)
  local lines = {"{"}
  for _, st in ipairs(b.stmts) do
    if st.kind == "seq" then
      lines[#lines + 1] = pad .. self:expr(st.expr) .. ";"
    else
      local lhs = st.name
      if st.kind == "let" then
        lhs = "let " .. st.name .. (st.annotated and (": " .. TYPE_TEXT[st.expr.ty]) or "")
      end
      lines[#lines + 1] = pad .. lhs .. " = " .. self:expr(st.expr) .. ";"
    end
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

local function buffer(scope)
  return TENSOR .. (scope ~= "" and (' scope="' .. scope .. '"') or "")
end

function Printer:primfn(pf)
  local parts = {}
  for i, s in ipairs(pf.scopes) do parts[i] = buffer(s) end
  return "primfn @" .. pf.name .. "(" .. table.concat(parts, ", ") .. ") -> " .. buffer(pf.ret) .. ";"
end

-- The program's items: its primfns, then its definitions.
local function items(prog)
  local out = {}
  for _, pf in ipairs(prog.primfns or {}) do out[#out + 1] = {primfn = pf} end
  for _, d in ipairs(prog.defs) do out[#out + 1] = {def = d} end
  return out
end

-- The program as Relay text; order (a list of item indices: primfns then
-- definitions) prints the items in another order (the program is the
-- same). Type definitions come first: a type is declared before its use.
function M.text(prog, order)
  local p = setmetatable({indent = 0}, Printer)
  local out, its = {}, items(prog)
  for i = 1, #its do
    local it = its[order and order[i] or i]
    out[i] = it.def and p:def(it.def) or p:primfn(it.primfn)
  end
  return (prog.adts and TYPEDEFS or "") .. table.concat(out, "\n") .. "\n"
end

-- The number of items (primfns and definitions) an order permutes.
function M.nitems(prog)
  return #items(prog)
end

return M
