-- The Relay text parser (../shared/docs/relay-text.md), written with LPeg.
--
-- The grammar is LPeg; the nodes are made by a C builder (src/lua/l_build.c)
-- that hands back small integer handles, so that a million-call program
-- never becomes a million Lua userdata. Expression captures are function
-- captures that call the builder when a statement's match succeeds.
--
-- Names in scope, and each block's pending lets, live in the builder too
-- (a C hash table with an undo log), so no Lua string or table is made per
-- variable. The simple statements that make up nearly all of a large
-- program go through a fast path (see make_run): one lpeg.match runs over
-- a whole series of them, and each is built in C from position captures.
--
-- Depth: statements are matched one after another (the fast path's
-- repetition, or the Lua loop of parse_block), never as one capture nest,
-- so a 1,000,000-binding body costs no stack. Only genuinely nested text
-- recurses: a block inside an expression (fn body, if branch, match
-- clause) is parsed by a match-time capture (Cmt) that runs the same loop.
--
-- Errors: when a match fails, the same grammar built in "diagnostic" mode
-- is matched again; its tokens record what they expected at the farthest
-- position, which becomes the message. Name errors come from the capture
-- functions and the builder. Every error is a devplan.Error with the
-- source, line, column, the line itself and a caret under the column.
local lpeg = require "lpeg"

local P, R, S, V = lpeg.P, lpeg.R, lpeg.S, lpeg.V
local C, Cc, Cp, Ct, Cg, Cf, Cmt, Cs, Carg = lpeg.C, lpeg.Cc, lpeg.Cp, lpeg.Ct, lpeg.Cg, lpeg.Cf,
  lpeg.Cmt, lpeg.Cs, lpeg.Carg
local match = lpeg.match
local unpack = table.unpack

local M = {}

-- ---------------------------------------------------------------------------
-- State of the parse in progress (saved and restored around each parse, so
-- that a parse started from inside another one's callback stays correct).

local B            -- the builder (it also holds the variable names in scope)
local BM           -- the builder's methods
local METATABLE    -- the caller's metatable, or nil
local META_CACHE   -- "kind\0index" -> handle
local CALLEES      -- identifier -> callee handle (operators, constructors)
local CTORS        -- constructor name -> {handle, adt}
local ADTS         -- type definition name -> true
local TENV         -- type variable name -> handle (inside a type definition)
local GLOBALS      -- global name -> handle
local GLOBAL_REFS  -- global name -> position of its first use
local DEFINED      -- global name -> position of its definition
local STMT_POS     -- start of the statement being parsed (for deep-nesting errors)

local function save_state()
  return {B, METATABLE, META_CACHE, CALLEES, CTORS, ADTS, TENV,
          GLOBALS, GLOBAL_REFS, DEFINED, STMT_POS}
end

local function restore_state(t)
  B, METATABLE, META_CACHE, CALLEES, CTORS, ADTS, TENV,
    GLOBALS, GLOBAL_REFS, DEFINED, STMT_POS = unpack(t, 1, 11)
end

local function begin_state(b, metatable)
  B = b
  METATABLE, META_CACHE, CALLEES, CTORS, ADTS, TENV = metatable, {}, {}, {}, {}, {}
  GLOBALS, GLOBAL_REFS, DEFINED, STMT_POS = {}, {}, {}, 1
end

local function fail(code, pos, msg)
  return BM.error(B, code, pos, msg)
end

-- Variables in scope live in the builder (a C hash table with an undo
-- log): bind, and undo back to a mark.
local function bind(name, h) BM.bind(B, name, h) end
local function mark() return BM.mark(B) end
local function unbind_to(m) BM.unbind(B, m) end

-- ---------------------------------------------------------------------------
-- Lexical pieces

local digit = R "09"
local alpha = R("az", "AZ") + P "_"
local alnum = alpha + digit
local nl = P "\n"
local space = S " \t\r\n\f\v"^0
-- `// to end of line` and `/* block */`; block comments nest, as in TVM's
-- lexer. (The pattern starts with the plain character `/`: LPeg guards the
-- loops below with a test of it, so white space without a comment costs
-- one span and one test.)
-- (Runs of other characters are one LPeg span each: a type comment costs
-- about as much as the white space it stands for.)
local comment = P "/" * (P "/" * (1 - nl)^0
  + P { "rest", rest = P "*" * ((1 - S "*/")^1 + P "/" * V "rest" + P "/" + P "*" * -P "/")^0
    * P "*/" })
-- white space and comments
local ws = space * (comment * space)^0

-- %name: letters, digits and _, with dotted parts that start with a letter
-- (so that %x.0 stays a projection).
local lname = alnum^1 * (P "." * alpha * alnum^0)^0
local ident = alpha * alnum^0 * (P "." * alpha * alnum^0)^0
local numtext = P "-"^-1 * digit^1 * (P "." * digit^1)^-1 * (S "eE" * S "+-"^-1 * digit^1)^-1
local suffix = S "fiu" * digit^0
local escapes = {n = "\n", t = "\t", r = "\r", ['"'] = '"', ["\\"] = "\\"}
local str = P '"' * Cs(((P "\\" * C(1)) / function(c) return escapes[c] or c end
  + (1 - S '"\\'))^0) * P '"'
local attr_head = ws * ident * ws * P "=" * -S "=>"
-- words that start types of their own (never type names)
local type_word = (P "Tensor" + P "Storage" + P "fn" + P "ref") * -alnum
-- words that start expressions of their own (never operator names)
local reserved = (P "fn" + P "if" + P "match" + P "ref_read" + P "ref_write" + P "ref" + P "meta"
  + P "Constant" + P "True" + P "False" + P "let" + P "None") * -alnum

-- ---------------------------------------------------------------------------
-- Diagnostics: the farthest position a token failed at, and what it wanted.

local FAR, EXPECTED

local function record(_, i, what)
  if i > FAR then
    FAR, EXPECTED = i, {what}
  elseif i == FAR then
    for _, w in ipairs(EXPECTED) do if w == what then return false end end
    EXPECTED[#EXPECTED + 1] = what
  end
  return false
end

local function found_at(s, i)
  if i > #s then return "end of input" end
  -- (white space skips every complete comment: one left is unterminated)
  if s:find("^/%*", i) then return "a comment that is never closed ('/*' with no '*/')" end
  local w = s:match("^[%%@]?[%w_%.]+", i) or s:match("^%p", i) or s:sub(i, i)
  return "'" .. w .. "'"
end

local function expected_text()
  local n = #EXPECTED
  if n == 1 then return EXPECTED[1] end
  return table.concat(EXPECTED, ", ", 1, n - 1) .. " or " .. EXPECTED[n]
end

-- ---------------------------------------------------------------------------
-- Values and name resolution (called from captures)

local DTYPE_OF_SUFFIX = {f = "float32", i = "int32", u = "uint32"}
local function suffix_dtype(sfx)
  if #sfx == 1 then return DTYPE_OF_SUFFIX[sfx] end
  local k = sfx:sub(1, 1)
  return (k == "f" and "float" or k == "i" and "int" or "uint") .. sfx:sub(2)
end

local function is_float_text(t) return t:find("[%.eE]") ~= nil end

local function num_value(text, sfx, pos)
  local v = tonumber(text)
  local float = sfx and sfx:sub(1, 1) == "f" or (not sfx and is_float_text(text))
  if float then return v + 0.0 end
  local i = math.tointeger(v)
  if not i then fail("syntax", pos, "an integer was expected, found '" .. text .. "'") end
  return i
end

local NONE = {"none"}

local function num_attr(pos, text, sfx)
  local v = num_value(text, sfx or nil, pos)
  if sfx then return {math.type(v) == "float" and "f" or "i", v, suffix_dtype(sfx)} end
  return v
end

local function num_expr(pos, text, sfx)
  local dtype
  if sfx then dtype = suffix_dtype(sfx)
  else dtype = is_float_text(text) and "float32" or "int32" end
  return BM.const(B, pos, dtype, num_value(text, sfx or nil, pos))
end

local function ref_var(pos, name)
  return BM.lookup(B, pos, name)
end

local function ref_global(pos, name)
  local h = GLOBALS[name]
  if not h then
    h = BM.global(B, pos, name)
    GLOBALS[name] = h
  end
  if not GLOBAL_REFS[name] then GLOBAL_REFS[name] = pos end
  return h
end

local function callee(pos, name)
  local h = CALLEES[name]
  if h then return h end
  local c = CTORS[name]
  if c then
    h = c[1]
  elseif name:find("^%u") and not name:find("%.") then
    return fail("name", pos, "unknown constructor '" .. name .. "'")
  else
    h = BM.op(B, pos, name)
  end
  CALLEES[name] = h
  BM.cache(B, name, h) -- for the fast path
  return h
end

-- (the callee is resolved by its own capture, before the arguments, so
-- that errors come in text order)
local function named_call(pos, h, ...)
  return BM.call(B, pos, h, ...)
end

local function meta_handle(pos, kind, index)
  local key = kind .. "\0" .. index
  local h = META_CACHE[key]
  if h then return h, META_CACHE[key .. "k"] end
  local list = METATABLE and METATABLE[kind]
  if list == nil then
    fail("name", pos, "meta[" .. kind .. "][" .. index .. "]: the metatable has no '" .. kind .. "' list")
  end
  local v = list[index + 1]
  if v == nil then
    fail("name", pos, "meta[" .. kind .. "][" .. index .. "] is out of range (the metatable has "
      .. #list .. " " .. kind .. " entr" .. (#list == 1 and "y" or "ies") .. ")")
  end
  local okind
  h, okind = BM.obj(B, v)
  local want = kind == "VirtualDevice" and "vdev" or kind == "relay.Constant" and "const" or nil
  if not want then fail("name", pos, "unknown meta kind '" .. kind .. "'") end
  if okind ~= want then
    fail("value", pos, "meta[" .. kind .. "][" .. index .. "] is not a "
      .. (want == "vdev" and "virtual device" or "constant"))
  end
  META_CACHE[key], META_CACHE[key .. "k"] = h, okind
  BM.cache(B, "\0" .. key, h) -- for the fast path
  return h, okind
end

local function meta_expr(pos, kind, index)
  local h, k = meta_handle(pos, kind, index)
  if k ~= "const" then fail("value", pos, "meta[" .. kind .. "] is not an expression") end
  return h
end

local function meta_attr(pos, kind, index)
  local h, k = meta_handle(pos, kind, index)
  return {k == "vdev" and "vdev" or "expr", h}
end

local VDEV_FIELDS = {device_type = 1, virtual_device_id = 2, target = 3, memory_scope = 4}

local function mk_vdev(pos, t)
  local f = {}
  for i = 1, #t, 3 do
    local k = VDEV_FIELDS[t[i + 1]]
    if not k then fail("name", t[i], "unknown VirtualDevice field '" .. t[i + 1] .. "'") end
    f[k] = t[i + 2]
  end
  return BM.vdev(B, pos, f[1], f[2], f[3], f[4])
end

local function type_name(pos, name)
  local h = TENV[name]
  if h then return h end
  if ADTS[name] then return BM.tadt(B, name) end
  return BM.ttensor(B, pos, name)
end

local function type_app(pos, name, args)
  if not ADTS[name] then fail("name", pos, "unknown type '" .. name .. "'") end
  return BM.tadt(B, name, unpack(args))
end

local function mk_paren(pos, list, trailing)
  if #list == 1 and not trailing then return list[1] end
  return BM.tuple(B, pos, unpack(list))
end

local function mk_tparen(list, trailing)
  if #list == 1 and not trailing then return list[1] end
  return BM.ttuple(B, unpack(list))
end

local CALL, PROJ = 1, 2
local function apply_suffix(h, pos, tag, ...)
  if tag == CALL then return BM.call(B, pos, h, ...) end
  return BM.proj(B, pos, h, ...)
end

-- ---------------------------------------------------------------------------
-- Blocks (forward declared: the grammar's match-time captures call them)

local parse_block, expect_tok, parse_clauses, syntax_error
local G, GD -- the fast and the diagnostic grammars (entry points by name)

-- Parameters: the list {pos, name, attrs|false, type|false, ...} -> handles,
-- defined in the block just opened (a name given twice is an error).
local function declare_params(list)
  local params = {}
  for i = 1, #list, 4 do
    local pos, name, attrs, ty = list[i], list[i + 1], list[i + 2], list[i + 3]
    local vdev = false
    if attrs then
      for j = 1, #attrs, 3 do
        local v = attrs[j + 2]
        if attrs[j + 1] ~= "virtual_device" then
          fail("name", attrs[j], "unknown parameter attribute '" .. attrs[j + 1] .. "'")
        end
        if type(v) ~= "table" or v[1] ~= "vdev" then
          fail("value", attrs[j], "virtual_device must be a virtual device")
        end
        vdev = v[2]
      end
    end
    local h = BM.var(B, pos, name, ty, vdev)
    BM.define(B, pos, name, h, true)
    params[#params + 1] = h
  end
  return params
end

local function fn_rest(s, i, pos, plist, fattrs, ret)
  BM.block_open(B)
  local params = declare_params(plist)
  local body, np = parse_block(s, i, "}", true)
  np = expect_tok(s, np, "}")
  return np, BM.fn(B, pos, body, ret, fattrs, unpack(params))
end

local function braced_block(s, i)
  i = expect_tok(s, i, "{")
  local h, np = parse_block(s, i, "}")
  return h, expect_tok(s, np, "}")
end

-- `if (c) {...} else {...}`, and chains `} else if (c2) {...} else ...`
-- (as TVM's parser reads them: an if nested in the else branch), read in a
-- loop and built from the last one.
local ELSE_IF = ws * P "if" * -alnum
local function if_rest(s, i, pos, cond)
  local chain = {}
  while true do
    local then_, np = parse_block(s, i, "}")
    np = expect_tok(s, np, "}")
    np = expect_tok(s, np, "else")
    chain[#chain + 1] = {pos, cond, then_}
    if not match(ELSE_IF, s, np) then
      local else_
      else_, np = braced_block(s, np)
      for k = #chain, 1, -1 do
        local c = chain[k]
        else_ = BM.if_(B, c[1], c[2], c[3], else_)
      end
      return np, else_
    end
    local p, c, ni = match(G.if_head, s, np)
    if not p then syntax_error("if_head", s, np) end
    pos, cond, i = p, c, ni
  end
end

local function match_rest(s, i, pos, complete, data)
  local np, items = parse_clauses(s, i)
  return np, BM.match(B, pos, data, complete, unpack(items))
end

-- ---------------------------------------------------------------------------
-- The grammar, built twice: fast, and diagnostic (tokens record expectations)

local function build(diag)
  local function expect(what) return Cmt(Cc(what), record) * P(false) end
  local function tok(p, what)
    if diag then return ws * (p + expect(what)) end
    return ws * p
  end
  local function sym(t) return tok(P(t), "'" .. t .. "'") end
  local function kw(w) return tok(P(w) * -alnum, "'" .. w .. "'") end
  local function opt(p) return p^-1 end

  local number = C(numtext) * (C(suffix) + Cc(false)) * -alnum
  local name_tok = tok(C(ident), "a name")
  local index_tok = tok(C(digit^1) / tonumber, "an index")
  local meta = P "meta" * -alnum * sym "[" * tok(C(ident), "a meta kind") * sym "]" * sym "["
    * index_tok * sym "]"
  local any_expr = diag and expect("an expression") or P(false)
  local any_type = diag and expect("a type") or P(false)
  local any_value = diag and expect("an attribute value") or P(false)
  local any_pattern = diag and expect("a pattern") or P(false)

  local g = {}

  -- types
  local dim = ws * (C(digit^1) / tonumber + P "?" * Cc(-1))
  g.type = ws * (
    Cp() * P "Tensor" * -alnum * sym "[" * sym "(" * Ct(opt(dim * (sym "," * dim)^0) * opt(sym ","))
      * sym ")" * sym "," * tok(C(ident), "a dtype") * sym "]"
      / function(pos, dims, dt) return BM.ttensor(B, pos, dt, unpack(dims)) end
    + P "(" * Ct(opt(V "type" * (sym "," * V "type")^0)) * (sym "," * Cc(true) + Cc(false))
      * sym ")" / mk_tparen
    + P "fn" * -alnum * sym "(" * Ct(opt(V "type" * (sym "," * V "type")^0)) * sym ")" * sym "->"
      * V "type" / function(args, ret) return BM.tfunc(B, 0, ret, unpack(args)) end
    + P "Storage" * -alnum * sym "[" * sym "]" / function() return BM.tstorage(B) end
    + P "ref" * -alnum * sym "(" * V "type" * sym ")" / function(t) return BM.tref(B, t) end
    + -type_word * Cp() * C(ident) * ws * P "[" * Ct(opt(V "type" * (sym "," * V "type")^0))
      * sym "]" / type_app
    + -type_word * Cp() * C(ident) / type_name
    + any_type)

  -- attribute values
  g.attr = ws * Cp() * C(ident) * sym "=" * V "aval"
  g.attrs = Ct(V "attr" * (sym "," * V "attr")^0)
  g.aval = ws * (
    P "None" * -alnum * Cc(NONE)
    + P "True" * -alnum * Cc(true)
    + P "False" * -alnum * Cc(false)
    + Cp() * number / num_attr
    + str
    + P "[" * Ct(Cc "list" * opt(V "aval" * (sym "," * V "aval")^0)) * opt(sym ",") * sym "]"
    + Cp() * meta / meta_attr
    + V "vdev" / function(h) return {"vdev", h} end
    + V "const_lit" / function(h) return {"expr", h} end
    + any_value)
  local vfield = ws * Cp() * C(ident) * sym "=" * ws
    * (str + C(P "-"^-1 * digit^1) / tonumber + C(ident) + any_value)
  g.vdev = Cp() * P "VirtualDevice" * -alnum * sym "("
    * Ct(opt(vfield * (sym "," * vfield)^0)) * sym ")" / mk_vdev
  local cval = ws * (C(numtext) * opt(suffix) / tonumber + P "True" * Cc(1) + P "False" * Cc(0)
    + any_value)
  g.const_lit = Cp() * P "Constant" * -alnum * sym "(" * V "type" * sym "," * sym "["
    * Ct(opt(cval * (sym "," * cval)^0)) * sym "]" * sym ")"
    / function(pos, t, vals) return BM.const_tensor(B, pos, t, vals) end

  -- call arguments: expressions, then key=value attributes (one table, last)
  g.args = opt(#attr_head * V "attrs"
    + V "expr" * (sym "," * -attr_head * V "expr")^0 * opt(sym "," * #attr_head * V "attrs"))
    * opt(sym ",")

  -- functions: parameters, then attributes
  g.param = ws * Cp() * P "%" * C(lname)
    * (sym "{" * (V "attrs" + Cc(false)) * sym "}" + Cc(false))
    * (sym ":" * V "type" + Cc(false))
  g.plist = Ct(opt(V "param" * (sym "," * -attr_head * V "param")^0))
  g.fattrs = (opt(sym ",") * #attr_head * V "attrs" + Cc(false)) * opt(sym ",")
  g.fn_head = Cp() * P "fn" * -alnum * sym "(" * V "plist" * V "fattrs" * sym ")"
    * (sym "->" * V "type" + Cc(false)) * sym "{"

  -- the frequent forms first: variables and operator calls
  g.primary = ws * (
    Cp() * P "%" * C(lname) / ref_var
    + -reserved * Cp() * (Cp() * C(ident) / callee) * ws * P "(" * V "args" * sym ")" / named_call
    + Cmt(V "fn_head", fn_rest)
    + Cmt(Cp() * P "if" * -alnum * sym "(" * V "expr" * sym ")" * sym "{", if_rest)
    + Cmt(Cp() * P "match" * -alnum * (P "?" * Cc(false) + Cc(true)) * sym "(" * V "expr"
      * sym ")" * sym "{", match_rest)
    + Cp() * P "ref_read" * -alnum * sym "(" * V "expr" * sym ")"
      / function(pos, r) return BM.ref_read(B, pos, r) end
    + Cp() * P "ref_write" * -alnum * sym "(" * V "expr" * sym "," * V "expr" * sym ")"
      / function(pos, r, v) return BM.ref_write(B, pos, r, v) end
    + Cp() * P "ref" * -alnum * sym "(" * V "expr" * sym ")"
      / function(pos, v) return BM.ref(B, pos, v) end
    + Cp() * P "(" * Ct(opt(V "expr" * (sym "," * V "expr")^0)) * (sym "," * Cc(true) + Cc(false))
      * sym ")" / mk_paren
    + Cp() * meta / meta_expr
    + V "const_lit"
    + Cp() * number / num_expr
    + Cp() * P "True" * -alnum / function(pos) return BM.const(B, pos, "bool", true) end
    + Cp() * P "False" * -alnum / function(pos) return BM.const(B, pos, "bool", false) end
    + Cp() * P "@" * C(lname) / ref_global
    + -reserved * Cp() * C(ident) / callee
    + any_expr)
  g.suffix = ws * (Cg(Cp() * P "(" * Cc(CALL) * V "args" * sym ")")
    + Cg(Cp() * P "." * Cc(PROJ) * index_tok))
  g.expr = Cf(V "primary" * V "suffix"^0, apply_suffix)

  -- patterns of match clauses; variables are collected for the clause
  g.pattern = ws * (
    Cp() * P "_" * -alnum / function(pos) return BM.pwild(B, pos) end
    + Cp() * P "%" * C(lname) * (sym ":" * V "type" + Cc(false)) / function(pos, name, ty)
      local v = BM.var(B, pos, name, ty, false)
      local pv = M._pending
      pv[#pv + 1] = name
      pv[#pv + 1] = v
      return BM.pvar(B, pos, v)
    end
    + Cp() * P "(" * Ct(opt(V "pattern" * (sym "," * V "pattern")^0)) * opt(sym ",") * sym ")"
      / function(pos, subs) return BM.ptuple(B, pos, unpack(subs)) end
    + Cp() * C(ident) * (ws * P "(" * Ct(opt(V "pattern" * (sym "," * V "pattern")^0)) * sym ")"
      + Ct(P(true))) / function(pos, name, subs)
        local c = CTORS[name]
        if not c then fail("name", pos, "unknown constructor '" .. name .. "'") end
        return BM.pctor(B, pos, c[1], unpack(subs))
      end
    + any_pattern)

  local function entry(start, tail)
    local t = {}
    for k, v in pairs(g) do t[k] = v end
    t[1] = "entry"
    t.entry = start * (tail or P(true))
    return P(t)
  end

  local e = {}
  -- a statement: pos, a, b, tag, next position; tags: 1 graph binding
  -- (name, value), 2 let (var, value), 3 `e;` (value), 4 final expression
  e.stmt = entry(ws * Cp() * (
    P "let" * -alnum * Cmt(ws * Cp() * P "%" * C(lname) * (sym ":" * V "type" + Cc(false)),
      function(_, i, pos, name, ty)
        local h = BM.var(B, pos, name, ty, false)
        bind(name, h)
        return i, h
      end) * sym "=" * V "expr" * sym ";" * Cc(2)
    + P "%" * C(lname) * ws * P "=" * -S "=>" * V "expr" * sym ";" * Cc(1)
    + V "expr" * Cc(false) * (sym ";" * Cc(3) + tok(#(P "}" + -P(1)), "'}'") * Cc(4))) * Cp())
  e.expr = entry(V "expr", Cp())
  e.if_head = entry(ws * Cp() * P "if" * -alnum * sym "(" * V "expr" * sym ")" * sym "{" * Cp())
  e.type = entry(V "type", Cp())
  e.pattern = entry(V "pattern", sym "=>" * Cp())
  e.def_head = entry(ws * Cp() * P "def" * -alnum * sym "@" * tok(C(lname), "a global name")
    * sym "(" * V "plist" * V "fattrs" * sym ")" * (sym "->" * V "type" + Cc(false)) * sym "{"
    * Cp())
  local buffer = V "type" * (kw "scope" * sym "=" * tok(str, "a string") + Cc(""))
  e.primfn = entry(ws * Cp() * P "primfn" * -alnum * sym "@" * tok(C(lname), "a global name")
    * sym "(" * Ct(opt(buffer * (sym "," * buffer)^0)) * sym ")" * sym "->" * buffer * sym ";"
    * Cp())
  e.type_head = entry(ws * Cp() * P "type" * -alnum * ws * Cp() * name_tok
    * (sym "[" * Ct(name_tok * (sym "," * name_tok)^0) * sym "]" + Ct(P(true))) * Cp())
  e.ctor = entry(ws * Cp() * C(ident) * (ws * P "(" * Ct(opt(V "type" * (sym "," * V "type")^0))
    * sym ")" + Ct(P(true))) * Cp())
  -- the module ends at the end of input, or at the metadata section that
  -- TVM's printer appends (`#[metadata]` and a JSON text): its entries are
  -- the caller's metatable here, so the section is skipped
  local the_end = (-P(1) + P "#[" * ws * P "metadata" * ws * P "]") * Cc(false)
  e.item = ws * Cp() * (C(P "def" + P "type" + P "primfn") * -alnum + the_end)
  if diag then
    e.item = ws * Cp() * (C(P "def" + P "type" + P "primfn") * -alnum + the_end
      + expect("'def'") + expect("'type'") + expect("'primfn'") + expect("end of input"))
  end
  e.version = ws * P "#[" * ws * P "version" * ws * P "=" * ws * (str / 0) * ws * P "]" * Cp()
  return e
end

-- ---------------------------------------------------------------------------
-- Error helpers

function syntax_error(name, s, i)
  FAR, EXPECTED = 0, {}
  local ok, err = pcall(match, GD[name], s, i)
  if not ok then error(err, 0) end
  if FAR == 0 then FAR, EXPECTED = i, {"a valid " .. name} end
  fail("syntax", FAR, "expected " .. expected_text() .. ", found " .. found_at(s, FAR))
end

local TOKENS = {}
function expect_tok(s, i, t)
  local p = TOKENS[t]
  if not p then
    p = ws * P(t) * (t:find("^%a") and -alnum or P(true)) * Cp()
    TOKENS[t] = p
  end
  local np = match(p, s, i)
  if np then return np end
  local at = match(ws * Cp(), s, i)
  return fail("syntax", at, "expected '" .. t .. "', found " .. found_at(s, at))
end

-- The fast path: the statements that make up nearly all of a large
-- program, `%n = E;` and `let %x = E;` where E is made of variables and
-- operator calls (attributes: meta entries only). One lpeg.match call runs
-- over a whole series of them: each statement's pattern ends in a
-- match-time capture that hands its position captures (no strings, no
-- tables) to the builder, which resolves the names in C, makes the nodes
-- and binds the result (b.fast_stmt in src/lua/l_build.c says what each
-- capture is). The builder declines a statement that uses an operator or
-- meta entry it has not seen yet; that statement, and any other form or
-- error, goes through the full grammar, which accepts the same text and
-- builds the same nodes. The run always matches; it gives the position
-- where the full grammar takes over.
local RUN

-- (Written for few LPeg instructions per statement: white space inside a
-- statement is plain space, and each alternative starts with a character
-- test. The one place where comments are taken is before the `;`, where
-- TVM's printer puts its `/* ty=... */`: that costs one character test per
-- statement; a comment elsewhere leaves the statement to the full grammar.
-- Reserved words need no check: the builder knows no callee of that name,
-- so it declines such a statement.)
local function make_run(fast_stmt)
  local sp = S " \t\r\n"^0
  local expr = P {
    "e",
    -- captures: the position after a variable's `%`, the first letter of a
    -- callee, the position of the `)` that ends its call
    e = P "%" * Cp() * lname + Cp() * ident * sp * P "(" * sp * V "args" * Cp() * P ")",
    attr = Cc(0) * Cp() * ident * sp * P "=" * sp * P "meta" * sp * P "[" * sp * Cp() * ident
      * sp * P "]" * sp * P "[" * sp * Cp() * digit^1 * sp * P "]" * sp,
    args = (V "e" * sp * (P "," * sp * V "e" * sp)^0 * (P "," * sp * V "attr")^0)^-1,
  }
  local stmt = Carg(1) * Cp() * (P "let" * -alnum * sp * Cp() + #P "%")
    * P "%" * lname * sp * P "=" * sp * expr * ws * P ";"
  return (ws * Cmt(stmt, fast_stmt))^0 * Cp()
end

local AT_CLOSE = ws * P "}"
local AT_END = ws * -P(1)
local WS_POS = ws * Cp()

-- ---------------------------------------------------------------------------
-- Blocks: statements in a loop, then the final expression; the bindings of
-- the block go out of scope at its end. The builder keeps the block's
-- names and lets; `opened` says the caller has opened the block already
-- (to define a function's parameters in it).

function parse_block(s, pos, closer, opened)
  if not opened then BM.block_open(B) end
  local stmt, run = G.stmt, RUN
  local body
  while true do
    STMT_POS = pos
    pos = match(run, s, pos, B)
    STMT_POS = pos
    local p, a, b, tag, np = match(stmt, s, pos)
    if not p then syntax_error("stmt", s, pos) end
    if tag == 4 then
      body, pos = a, np
      break
    elseif tag == 1 then
      BM.define(B, p, a, b)
    elseif tag == 2 then
      BM.push_let(B, p, a, b)
    else
      BM.push_let(B, p, false, a)
    end
    pos = np
  end
  if not match(closer == "}" and AT_CLOSE or AT_END, s, pos) then
    local at = match(WS_POS, s, pos)
    fail("syntax", at, "expected ';' or " .. (closer == "}" and "'}'" or "end of input")
      .. ", found " .. found_at(s, at))
  end
  return BM.block_close(B, body), pos
end

-- match clauses: `pattern => rhs` separated by commas, up to `}`
function parse_clauses(s, i)
  local items = {}
  while not match(AT_CLOSE, s, i) do
    local saved = M._pending
    M._pending = {}
    local pat, np = match(G.pattern, s, i)
    if not pat then syntax_error("pattern", s, i) end
    local pending = M._pending
    M._pending = saved
    local m = mark()
    for k = 1, #pending, 2 do bind(pending[k], pending[k + 1]) end
    local rhs
    if match(ws * P "{", s, np) then
      rhs, np = braced_block(s, np)
    else
      rhs, np = match(G.expr, s, np)
      if not rhs then syntax_error("expr", s, i) end
    end
    unbind_to(m)
    items[#items + 1] = pat
    items[#items + 1] = rhs
    i = match(ws * P "," * Cp(), s, np) or np
  end
  return expect_tok(s, i, "}"), items
end

-- ---------------------------------------------------------------------------
-- Module items

local function parse_def(s, i)
  local pos, name, plist, fattrs, ret, np = match(G.def_head, s, i)
  if not pos then syntax_error("def_head", s, i) end
  if DEFINED[name] then fail("name", pos, "duplicate definition of @" .. name) end
  BM.block_open(B)
  local params = declare_params(plist)
  local body
  body, np = parse_block(s, np, "}", true)
  np = expect_tok(s, np, "}")
  local f = BM.fn(B, pos, body, ret, fattrs, unpack(params))
  local g = GLOBALS[name] or BM.global(B, pos, name)
  GLOBALS[name] = g
  BM.add_func(B, pos, g, f)
  DEFINED[name] = pos
  return np
end

local function parse_primfn(s, i)
  local caps = {match(G.primfn, s, i)}
  if not caps[1] then syntax_error("primfn", s, i) end
  local pos, name, bufs, rt, rs, np = unpack(caps, 1, 6)
  if DEFINED[name] then fail("name", pos, "duplicate definition of @" .. name) end
  BM.primfn(B, pos, name, rt, rs, unpack(bufs))
  DEFINED[name] = pos
  return np
end

local function parse_typedef(s, i)
  local pos, npos, name, tvars, np = match(G.type_head, s, i)
  if not pos then syntax_error("type_head", s, i) end
  if ADTS[name] then fail("name", npos, "duplicate definition of type " .. name) end
  local tv = {}
  TENV = {}
  for k, v in ipairs(tvars) do
    tv[k] = BM.tvar(B, v)
    TENV[v] = tv[k]
  end
  ADTS[name] = true
  local ctors = {}
  local after = match(ws * P "{" * Cp(), s, np)
  if after then
    np = after
    while not match(AT_CLOSE, s, np) do
      local cpos, cname, inputs, cnp = match(G.ctor, s, np)
      if not cpos then syntax_error("ctor", s, np) end
      if CTORS[cname] then fail("name", cpos, "duplicate definition of constructor " .. cname) end
      local cargs = {cpos, cname, name, #ctors, #tv}
      for _, t in ipairs(tv) do cargs[#cargs + 1] = t end
      for _, t in ipairs(inputs) do cargs[#cargs + 1] = t end
      local h = BM.ctor(B, unpack(cargs))
      ctors[#ctors + 1] = h
      CTORS[cname] = {h, name}
      np = cnp
      local comma = match(ws * P "," * Cp(), s, np)
      if not comma then break end
      np = comma
    end
    np = expect_tok(s, np, "}")
  else
    np = match(ws * P ";" * Cp(), s, np) or np
  end
  TENV = {}
  local args = {pos, name, #tv}
  for _, h in ipairs(tv) do args[#args + 1] = h end
  for _, h in ipairs(ctors) do args[#args + 1] = h end
  BM.typedef(B, unpack(args))
  return np
end

local function check_globals()
  local first, fpos
  for name, pos in pairs(GLOBAL_REFS) do
    if not DEFINED[name] and (not fpos or pos < fpos) then first, fpos = name, pos end
  end
  if first then fail("name", fpos, "unknown global @" .. first) end
end

local function parse_module_text(s)
  local pos = match(G.version, s, 1) or 1
  while true do
    local p, kind = match(G.item, s, pos)
    if not p then syntax_error("item", s, pos) end
    if not kind then break end
    if kind == "def" then pos = parse_def(s, p)
    elseif kind == "type" then pos = parse_typedef(s, p)
    else pos = parse_primfn(s, p) end
  end
  check_globals()
  return BM.module(B)
end

-- ---------------------------------------------------------------------------
-- Running a parse: state, builder, error decoration

local core = require "devplan.core"

local function line_of(s, line)
  local n, start = 1, 1
  while n < line do
    local nl_at = s:find("\n", start, true)
    if not nl_at then return nil end
    start, n = nl_at + 1, n + 1
  end
  return s:match("^[^\n]*", start)
end

-- Add the offending line and a caret under the column to the error.
local function decorate(err, s, source)
  if type(err) ~= "table" or err.source ~= source or not err.line then return err end
  local text = line_of(s, err.line)
  if not text then return err end
  text = text:gsub("\r$", "")
  local col = err.col
  if #text > 120 then -- show a window of a long line around the column
    local from = math.max(1, col - 60)
    text = (from > 1 and "..." or "") .. text:sub(from, from + 119) .. (from + 119 < #text and "..." or "")
    col = col - from + 1 + (from > 1 and 3 or 0)
  end
  local caret = text:sub(1, col - 1):gsub("[^\t]", " ") .. "^"
  err.formatted = (err.formatted or err.message) .. "\n" .. text .. "\n" .. caret
  return err
end

local function as_error(s, source, pos, msg)
  local b = core._builder(s, source)
  local ok, err = pcall(b.error, b, "syntax", pos, msg)
  b:close()
  return ok and msg or err
end

local function run(text, metatable, opts, body)
  if type(text) ~= "string" then error("devplan.parse: text must be a string", 3) end
  if metatable ~= nil and type(metatable) ~= "table" then
    error("devplan.parse: the metatable must be a table", 3)
  end
  local source = opts and opts.source_name or "<string>"
  local saved = save_state()
  local saved_pending = M._pending
  local b = core._builder(text, source)
  begin_state(b, metatable)
  local ok, res = pcall(body, text, b)
  -- (the start of the statement being parsed: the fast path's last end
  -- when it is further on)
  local stmt_pos = math.max(STMT_POS, ok and 0 or BM.fast_end(b))
  restore_state(saved)
  M._pending = saved_pending
  if ok then return res end
  b:close()
  if type(res) == "string" and (res:find("stack overflow") or res:find("too complex")) then
    res = as_error(text, source, stmt_pos, "expression nested too deeply (" .. res:gsub("^.-:%d+: ", "") .. ")")
  end
  error(decorate(res, text, source), 0)
end

function M.parse(text, metatable, opts)
  return run(text, metatable, opts, parse_module_text)
end

function M.parse_expr(text, metatable, opts)
  return run(text, metatable, opts, function(s, b)
    local h = parse_block(s, 1, "eof")
    return BM.expr(b, h)
  end)
end

function M.parse_type(text, opts)
  return run(text, nil, opts, function(s, b)
    local h, np = match(G.type, s, 1)
    if not h then syntax_error("type", s, 1) end
    if not match(AT_END, s, np) then
      local at = match(WS_POS, s, np)
      fail("syntax", at, "expected end of input, found " .. found_at(s, at))
    end
    local t = BM.get(b, h)
    b:close()
    return t
  end)
end

function M.parse_file(path, metatable, opts)
  local f, why = io.open(path, "rb")
  if not f then error("devplan.parse_file: " .. tostring(why), 2) end
  local text = f:read("a")
  f:close()
  local o = {source_name = path}
  for k, v in pairs(opts or {}) do o[k] = v end
  return M.parse(text, metatable, o)
end

-- The builder's methods and the two grammars (normal and diagnostic), made
-- once when the module is loaded.
do
  local probe = core._builder("")
  BM = getmetatable(probe).__index
  probe:close()
  G, GD = build(false), build(true)
  RUN = make_run(BM.fast_stmt)
end

return M
