-- The Relay text parser (../shared/docs/relay-text.md): an LPeg grammar over
-- the tokens of the C lexer, driving the C builder (src/parse/, parse.h).
--
-- The lexer turns the text into a string of token kinds, one byte per token
-- (dp._token_kinds names them), so that this grammar reads tokens, not
-- characters: no white space or comment rules, numbers and keywords already
-- told apart. The grammar is the one description of the syntax. It builds
-- nothing itself: it marks the tokens that matter with position captures
-- (`ev`), and hands each construct's marks to a builder action (`act`, a
-- match-time capture running C). The builder reads them with explicit
-- stacks (src/parse/reader.c says what each mark means), so an expression
-- nests as deep as its brackets do, and a value an action makes comes back
-- into the marks of the construct around it.
--
-- The hot path: simple statements (`%n = E;`, `let %x = E;`, `E;` over
-- calls, tuples, names, literals and operators) are read by a C reader
-- (src/parse/simple.c, dp._parse_simple) that makes the marks this grammar
-- would and hands them to the same action; it stops before any other
-- statement, which the grammar reads (errors included).
--
-- Order: the builder sees constructs in the order of the text, and every
-- scope before what it holds. Statements go to the builder in batches of up
-- to 64 (one call for all of them); a statement with a block inside it (a
-- `{`) goes alone, after the actions of its blocks, whose scopes open with
-- their own actions (a function's head, a clause's pattern, a block's `{`,
-- a let's head when its value holds a block: the variable is in scope in
-- its value). A batch's statements never hold a scope, so building them
-- later gives the same result.
--
-- Linear on any input: the grammar decides each choice on its first token
-- or two (a graph binding `%x =` against an expression statement `%x ...`),
-- and reads an expression once before deciding whether it ends a statement
-- or the block, so nothing is parsed twice and a failure unwinds at once.
-- Nesting depth costs LPeg's backtrack stack, sized below for the lexer's
-- bracket limit (dp._parse_max_nest); past the limit the lexer's error
-- token stops the parse with a positioned error.
--
-- Errors: when a match fails, the same grammar built in diagnostic mode
-- (tokens record what they expected at the farthest token) is matched
-- again, and the builder words "expected ..., found ..." there. Errors of
-- names, values and types come from the builder. Each is a devplan.Error
-- with the source, line, column, the line itself and a caret.
--
-- State: the parse's state is the builder (a C object passed as the
-- match's extra argument, Carg(1)) and, in diagnostic mode, a table passed
-- the same way; the module holds no state of its own.
local lpeg = require "lpeg"
local core = require "devplan.core"

local P, S, V, B = lpeg.P, lpeg.S, lpeg.V, lpeg.B
local Cp, Cc, Cmt, Carg = lpeg.Cp, lpeg.Cc, lpeg.Cmt, lpeg.Carg
local match = lpeg.match
local concat = table.concat
local error, getmetatable, pcall, pairs, ipairs, type, tostring = error, getmetatable, pcall, pairs, ipairs, type, tostring
local io_open, string_find = io.open, string.find

local _ENV = nil

local M = {}

-- ---------------------------------------------------------------------------
-- Diagnostics: the farthest token a token pattern failed at, and what it
-- wanted there (state: {far =, expected =}).

local function record(_, i, st, what)
  if i > st.far then
    st.far, st.expected = i, {what}
  elseif i == st.far then
    for _, w in ipairs(st.expected) do if w == what then return false end end
    st.expected[#st.expected + 1] = what
  end
  return false
end

local function expected_text(list)
  local n = #list
  if n <= 1 then return list[1] or "something else" end
  return concat(list, ", ", 1, n - 1) .. " or " .. list[n]
end

-- ---------------------------------------------------------------------------
-- The grammar, built twice: for parsing (K: token kinds, A: the builder's
-- actions) and for diagnostics (diag true: no captures, tokens record).

local function grammar(K, TEXT, A, SIMPLE, diag)
  local function T(name) return P(K[name]) end
  local function set(names)
    local s = {}
    for i, n in ipairs(names) do s[i] = K[n] end
    return S(concat(s))
  end
  -- what a diagnostic says was expected here (nothing when parsing)
  local function want(what)
    if diag then return Cmt(Carg(1) * Cc(what), record) * P(false) end
    return P(false)
  end
  -- a token that must come here
  local function tok(name, what) return T(name) + want(what or TEXT[name]) end
  -- a token the builder is told of: its index, as the position after it
  -- (the token is matched first, so that each choice starts with a test
  -- LPeg decides on at once)
  local function ev(p)
    if diag then return p end
    return p * Cp()
  end
  -- the end of a block, told as 0 (a final expression's terminator)
  local function ends(p)
    if diag then return p end
    return p * Cc(0)
  end
  -- a construct whose marks go to the builder action `name`
  local function act(p, name)
    if diag then return p end
    return Cmt(Carg(1) * p, A[name])
  end

  local binop = set {"STAR", "SLASH", "PLUS", "MINUS", "LT", "GT", "LE", "GE", "EQEQ", "NE"}
  local the_end = -P(1) + want("end of input")

  local g = {}

  -- expressions: operators and their precedence are the reader's (reader.c);
  -- an operand, a call's arguments (expressions, then attributes) are
  -- written out in place (no rule to call: the hot path, and each call costs
  -- LPeg stack work). A name and its `(` are one token (CALLEE), as are an
  -- attribute's key and its `=` (KEY).
  local attr = ev(T "KEY") * V "aval"
  local args = (V "expr" * (ev(tok "COMMA") * V "expr")^0 * (ev(tok "COMMA") * attr)^0
    + attr * (ev(tok "COMMA") * attr)^0)^-1 * ev(T "COMMA")^-1
  local call = args * ev(tok "RPAREN")
  local suffix = ev(T "LPAREN") * call + ev(T "DOT") * tok "INDEX"
  local primary = ev(T "VAR") + ev(T "CALLEE") * call + ev(T "IDENT") + ev(T "GLOBAL")
    + ev(T "NUMBER") + ev(T "TRUE") + ev(T "FALSE") + ev(T "META")
    + ev(T "LPAREN") * (V "expr" * (ev(T "COMMA") * V "expr")^0 * ev(T "COMMA")^-1)^-1
      * ev(tok "RPAREN")
    + V "fn" + V "if" + V "match" + V "ref" + V "constant" + V "pblock"
    + want("an expression")
  local operand = ev(T "MINUS")^0 * primary * suffix^0
  g.attr = attr
  g.expr = operand * (ev(binop) * operand)^0
  g.ref = ev(T "REF") * tok "LPAREN" * V "expr" * ev(tok "RPAREN")
    + ev(T "REF_READ") * tok "LPAREN" * V "expr" * ev(tok "RPAREN")
    + ev(T "REF_WRITE") * tok "LPAREN" * V "expr" * ev(tok "COMMA") * V "expr" * ev(tok "RPAREN")

  -- attribute values, VirtualDevice(...) and Constant(...)
  g.aval = ev(T "NUMBER") + ev(T "STRING") + ev(T "TRUE") + ev(T "FALSE") + ev(T "NONE")
    + ev(T "META")
    + ev(T "LBRACK") * (V "aval" * (tok "COMMA" * V "aval")^0)^-1 * T "COMMA"^-1 * ev(tok "RBRACK")
    + V "vdev" + V "constant"
    + want("an attribute value")
  g.vfield = ev(tok "KEY") * (ev(T "STRING") + ev(T "NUMBER") + ev(T "IDENT") + want("a value"))
  g.vdev = ev(T "VDEV") * tok "LPAREN" * (V "vfield" * (tok "COMMA" * V "vfield")^0)^-1
    * ev(tok "RPAREN")
  -- (the values are read by the builder from the `[` on)
  g.cval = T "NUMBER" + T "TRUE" + T "FALSE" + want("a value")
  g.constant = ev(T "CONSTANT") * tok "LPAREN" * V "type" * tok "COMMA" * ev(tok "LBRACK")
    * (V "cval" * (tok "COMMA" * V "cval")^0)^-1 * tok "RBRACK" * ev(tok "RPAREN")

  -- types: one action for the whole type; `fn (..) -> fn (..) -> T` is a loop.
  -- An annotation may be `_`, a type left to inference (no event: as if
  -- there were no annotation)
  g.type = act(V "tsyntax", "type")
  g.atype = T "UNDERSCORE" + V "type"
  -- a function type may have type parameters (`fn [A](A) -> A`); `_` inside a
  -- type is a part left to inference (TVM's IncompleteType)
  local ttparams = ev(T "LBRACK") * ev(tok "IDENT") * (tok "COMMA" * ev(tok "IDENT"))^0 * ev(tok "RBRACK")
  g.tsyntax = (ev(T "FN") * ttparams^-1 * tok "LPAREN" * (V "tsyntax" * (tok "COMMA" * V "tsyntax")^0)^-1
      * tok "RPAREN" * ev(tok "ARROW"))^0 * V "tprimary"
  g.dim = ev(T "NUMBER") + ev(T "QUESTION") + want("a dimension")
  g.tprimary = ev(T "TENSOR") * tok "LBRACK" * tok "LPAREN" * (V "dim" * (tok "COMMA" * V "dim")^0)^-1
      * T "COMMA"^-1 * tok "RPAREN" * tok "COMMA" * ev(tok("IDENT", "a dtype")) * tok "RBRACK"
    + ev(T "LPAREN") * (V "tsyntax" * (tok "COMMA" * V "tsyntax")^0 * ev(T "COMMA")^-1)^-1
      * ev(tok "RPAREN")
    + ev(T "STORAGE") * tok "LBRACK" * tok "RBRACK"
    + ev(T "UNDERSCORE")
    + ev(T "REF") * tok "LPAREN" * V "tsyntax" * ev(tok "RPAREN")
    + ev(T "IDENT") * (T "LBRACK" * V "tsyntax" * (tok "COMMA" * V "tsyntax")^0 * ev(tok "RBRACK"))^-1
    + want("a type")

  -- functions: parameters (with `{virtual_device=...}` and a type), then
  -- attributes; the head is an action (the parameters come into scope)
  g.param = ev(T "VAR")
    * (ev(T "LBRACE") * (V "attr" * (tok "COMMA" * V "attr")^0)^-1 * ev(tok "RBRACE"))^-1
    * (T "COLON" * V "atype")^-1
  g.params = (V "param" * (tok "COMMA" * V "param")^0 * (tok "COMMA" * V "attr")^0
    + V "attr" * (tok "COMMA" * V "attr")^0)^-1 * T "COMMA"^-1
  local result = (T "ARROW" * T "UNDERSCORE" + ev(T "ARROW") * V "type")^-1
  -- type parameters `[A, B]`: an action of their own, so that they are in
  -- scope in the parameters' types (read before the function's head is)
  g.tparams = act(T "LBRACK" * ev(tok "IDENT") * (tok "COMMA" * ev(tok "IDENT"))^0 * tok "RBRACK", "tparams")
  g.fn = act(ev(T "FN") * V "tparams"^-1 * tok "LPAREN" * V "params" * tok "RPAREN" * result
    * ev(tok "LBRACE"), "fn_open") * V "body" * act(tok "RBRACE", "fn_close")

  -- blocks: statements, then the final expression (the block's value)
  -- (`%x =` is one token, BIND; with a type, `%x: T =`)
  -- `free_var %x: T;` declares a free variable (as a parameter is written)
  -- (a let variable may carry `{virtual_device=...}` as a parameter does)
  local let_lhs = ev(T "LET") * (T "BIND" + tok "VAR"
    * (ev(T "LBRACE") * (V "attr" * (tok "COMMA" * V "attr")^0)^-1 * ev(tok "RBRACE"))^-1
    * (T "COLON" * V "atype")^-1 * tok "EQ")
  local stmt = let_lhs * V "expr" * ev(tok "SEMI")
    + ev(T "BIND") * V "expr" * ev(tok "SEMI")
    + ev(T "FREE_VAR") * V "param" * ev(tok "SEMI")
    -- (read once, then ended by `;`, or by the block's end as its final
    -- one: a `}`, the `)` of a parenthesised block, the end of the text)
    + V "expr" * (ev(tok "SEMI") + ends(#tok "RBRACE") + ends(#T "RPAREN") + ends(-P(1) + #T "METADATA"))
  -- a block ends after its final expression: not after a `;`, nor empty
  local block_end = -B(T "SEMI") * -B(T "LBRACE") * B(P(1)) + want("an expression")
  local opens = set {"LBRACE", "LPBLOCK"}
  if diag then
    g.body = stmt^0 * block_end
  else
    -- simple statements (`%n = E;`, `let %x = E;`, `E;` over calls, tuples,
    -- names, literals and operators: nearly all of a large model) are read
    -- by a C reader (src/parse/simple.c) as this grammar reads them, each
    -- run of them at once, and built; it stops before any other statement,
    -- which the rules below read.
    -- A statement with no block inside (no `{` before its end) holds no scope
    local simple = #((1 - set {"LBRACE", "LPBLOCK", "SEMI", "RBRACE"})^0 * -opens) * stmt
    g.body = (Cmt(P(1) * Carg(1), SIMPLE) + act(simple * simple^-63, "stmts")
      + act(let_lhs, "let_head") * act(V "expr" * ev(tok "SEMI"), "stmts")
      + act(stmt, "stmts"))^0 * block_end
  end
  local function block(lbrace)
    return act(ev(lbrace), "block_open") * V "body" * act(tok "RBRACE", "block_close")
  end
  g.block = block(tok "LBRACE")
  -- a block in parentheses, `(let %x = ...; %x)` (as TVM prints a let that
  -- is not a scope's result): the lexer marks a `(` before `let`, `%x =`
  -- or `free_var` as LPBLOCK
  g.pblock = act(ev(T "LPBLOCK"), "block_open") * V "body" * act(tok "RPAREN", "block_close")
  -- if (c) {...} else if (c2) {...} else {...}: a chain read in a loop
  local cond = ev(tok "LPAREN") * V "expr" * ev(tok "RPAREN") + V "pblock"
  g["if"] = ev(T "IF") * cond * V "block" * (tok "ELSE" * ev(T "IF") * cond * V "block")^0
    * tok "ELSE" * V "block"
  -- match (c) { pattern => rhs, ... }: a clause's pattern is an action (its
  -- variables come into scope), its right-hand side another
  local patterns = (V "pattern" * (tok "COMMA" * V "pattern")^0)^-1
  g.pattern = ev(T "UNDERSCORE") + ev(T "VAR") * (T "COLON" * V "atype")^-1
    + ev(T "LPAREN") * patterns * T "COMMA"^-1 * ev(tok "RPAREN")
    + ev(T "CALLEE") * patterns * ev(tok "RPAREN") + ev(T "IDENT")
    + want("a pattern")
  g.clause = act(V "pattern" * tok "FATARROW", "clause_open") * act(block(T "LBRACE") + V "expr", "clause_close")
  g.match = ev(T "MATCH") * T "QUESTION"^-1 * cond * tok "LBRACE"
    * (V "clause" * (tok "COMMA" * V "clause")^0 * T "COMMA"^-1)^-1 * ev(tok "RBRACE")

  -- module items
  g.def = act(ev(tok "DEF") * ev(tok "GLOBAL") * V "tparams"^-1 * tok "LPAREN" * V "params" * tok "RPAREN"
    * result * ev(tok "LBRACE"), "fn_open") * V "body" * act(tok "RBRACE", "def_close")
  local tvars = T "LBRACK" * ev(tok "IDENT") * (tok "COMMA" * ev(tok "IDENT"))^0 * tok "RBRACK"
  g.ctor = act(ev(T "CALLEE") * (V "type" * (tok "COMMA" * V "type")^0)^-1 * tok "RPAREN" + ev(T "IDENT"),
    "ctor")
  local tdhead = ev(tok "TYPE") * ev(tok("IDENT", "a type name")) * tvars^-1
  g.typedef = act(tdhead, "typedef_open")
    * (T "LBRACE" * (V "ctor" * (tok "COMMA" * V "ctor")^0 * T "COMMA"^-1)^-1 * tok "RBRACE" + T "SEMI"^-1)
    * act(P(true), "typedef_close")
    -- `extern type T[A]`: a type without constructors (as TVM)
    + T "EXTERN" * act(tdhead, "typedef_open") * T "SEMI"^-1 * act(P(true), "typedef_close")
  g.buffer = V "type" * (ev(T "KEY") * ev(tok "STRING"))^-1
  g.primfn = act(ev(tok "PRIMFN") * ev(tok "GLOBAL") * tok "LPAREN"
    * (V "buffer" * (tok "COMMA" * V "buffer")^0)^-1 * tok "RPAREN" * ev(tok "ARROW") * V "buffer"
    * tok "SEMI", "primfn")

  -- entry points: a module, an expression (a block over the whole text), a type
  -- a module's text may end with an expression, its @main (as TVM's
  -- IRModule.from_expr: a function, or one made of the free variables),
  -- after its type definitions and primfns, instead of defs
  local item = set {"DEF", "TYPE", "EXTERN", "PRIMFN", "METADATA"}
  g.main = #(1 - item) * act(P(true), "block_open") * V "body" * act(P(true), "main_close")
  g.module = T "HEADER"^-1 * (V "typedef" + V "primfn")^0 * (V "main" + (V "def" + V "typedef" + V "primfn")^0)
    * T "METADATA"^-1 * the_end
  g.expr_text = act(P(true), "block_open") * V "body" * the_end * act(P(true), "block_close")
  g.type_text = V "type" * the_end
  local entries = {}
  for _, name in ipairs {"module", "expr_text", "type_text"} do
    local t = {name}
    for k, v in pairs(g) do t[k] = v end
    entries[name] = P(t)
  end
  return entries
end

-- ---------------------------------------------------------------------------
-- Running a parse

local G, GD        -- the grammars: parsing and diagnostic, by entry (made below)

-- The parse of text from `entry`, then `finish` (the parser's module,
-- expr or type method) on its result. The parser is closed on every path.
local function run(entry, finish, text, metatable, opts)
  local source = opts and opts.source_name or "<string>"
  local p = core._parser(text, source, metatable)
  local subject = p:tokens()
  local ok, r = pcall(match, G[entry], subject, 1, p)
  if ok and r == nil then
    -- a syntax error: what the grammar expected at the farthest token
    local st = {far = 0, expected = {}}
    ok, r = pcall(match, GD[entry], subject, 1, st)
    if ok then ok, r = pcall(p.syntax_error, p, st.far > 0 and st.far or 1, expected_text(st.expected)) end
  end
  if not ok and type(r) == "string" then
    -- one of LPeg's own limits, positioned: a statement of more marks than
    -- Lua's stack holds, of more than 32,767 blocks (LPeg keeps the values
    -- of match-time captures in a short), a backtrack stack made smaller
    -- by someone else
    local what = (string_find(r, "captures", 1, true) or string_find(r, "match-time capture", 1, true))
      and "a statement too large to parse (too many values or blocks in it)"
      or string_find(r, "backtrack", 1, true) and "nested too deeply" or nil
    if what then ok, r = pcall(p.error_here, p, what) end
  end
  if ok then ok, r = pcall(finish, p, r) end
  p:close()
  if not ok then error(r, 0) end
  return r
end

-- The options every entry point takes (as the rest of the API: an unknown
-- key is an argument error naming the known ones).
local OPTIONS = {source_name = "string"}

local function check_opts(fname, i, opts, level)
  if opts == nil then return end
  if type(opts) ~= "table" then
    error(("bad argument #%d to '%s' (table expected, got %s)"):format(i, fname, type(opts)), level + 1)
  end
  for k, v in pairs(opts) do
    if not OPTIONS[k] then
      error(("bad argument #%d to '%s' (devplan.%s: unknown option '%s' (options: source_name))")
        :format(i, fname, fname, tostring(k)), level + 1)
    end
    if type(v) ~= OPTIONS[k] then
      error(("bad argument #%d to '%s' (option '%s' must be a %s, got %s)")
        :format(i, fname, k, OPTIONS[k], type(v)), level + 1)
    end
  end
end

local function check_args(fname, text, metatable, opts, nmeta)
  if type(text) ~= "string" then
    error(("bad argument #1 to '%s' (string expected, got %s)"):format(fname, type(text)), 3)
  end
  if nmeta and metatable ~= nil and type(metatable) ~= "table" then
    error(("bad argument #2 to '%s' (table expected, got %s)"):format(fname, type(metatable)), 3)
  end
  check_opts(fname, nmeta and 3 or 2, opts, 3)
end

function M.parse(text, metatable, opts)
  check_args("parse", text, metatable, opts, true)
  return run("module", function(p) return p:module() end, text, metatable, opts)
end

function M.parse_expr(text, metatable, opts)
  check_args("parse_expr", text, metatable, opts, true)
  return run("expr_text", function(p, h) return p:expr(h) end, text, metatable, opts)
end

function M.parse_type(text, opts)
  check_args("parse_type", text, nil, opts, false)
  return run("type_text", function(p, h) return p:type(h) end, text, nil, opts)
end

-- Whether a module's text ends with a metadata section (`#[metadata]`, as
-- TVM's printer writes with show_meta_data=True): the command line then
-- takes the devices from there, not from its palette. (The lexer decides:
-- a `#[metadata]` inside a comment or a string is none.)
function M.has_metadata(text)
  if type(text) ~= "string" or not text:find("metadata", 1, true) then
    return false
  end
  local p = core._parser(text, "<string>", nil)
  local kinds = p:tokens()
  p:close()
  return kinds:sub(-1) == core._token_kinds.METADATA
end

function M.parse_file(path, metatable, opts)
  if type(path) ~= "string" then
    error(("bad argument #1 to 'parse_file' (string expected, got %s)"):format(type(path)), 2)
  end
  check_opts("parse_file", 3, opts, 2)
  local f, why = io_open(path, "rb")
  if not f then error("devplan.parse_file: " .. why, 2) end
  local text, err = f:read("a")
  f:close()
  if not text then -- (a folder opens, but does not read)
    error("devplan.parse_file: cannot read " .. path .. ": " .. tostring(err), 2)
  end
  local o = {source_name = path}
  for k, v in pairs(opts or {}) do o[k] = v end
  return M.parse(text, metatable, o)
end

-- LPeg's backtrack stack grows with each level of nesting (a few entries
-- per bracket, more for a block): room for the lexer's limit. (A process-
-- wide setting of LPeg's: this only raises it.)
local STACK_PER_LEVEL = 24

-- The two grammars over the C lexer's token kinds, made once when the
-- module is loaded, and the backtrack stack they need.
do
  local K, TEXT = core._token_kinds, core._token_texts
  G, GD = grammar(K, TEXT, core._parse_actions, core._parse_simple, false), grammar(K, TEXT, nil, nil, true)
  lpeg.setmaxstack(STACK_PER_LEVEL * core._parse_max_nest)
end

return M
